//! Per-system statistics, recorded from the runs that actually happened.
//!
//! Invariant: a system's counters change only when its body is called: a stopped, disabled or
//! not-yet-due system's statistics stay as they were. Access counts are what the body reported
//! through its [`RunCtx`](crate::RunCtx); nothing is inferred.

use std::time::Duration;

/// What one system has done since it was added or its statistics were last reset.
///
/// The mean duration is `total_duration / runs` ([`SystemStats::mean_duration`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SystemStats {
    /// How many times its body was called.
    pub runs: u64,
    /// Wall time of the most recent call.
    pub last_duration: Duration,
    /// Wall time of all calls together.
    pub total_duration: Duration,
    /// Wall time of the longest call.
    pub max_duration: Duration,
    /// Component reads its body reported.
    pub component_reads: u64,
    /// Field writes its body reported.
    pub field_writes: u64,
    /// Rows its body reported visiting.
    pub visited_rows: u64,
    /// Calls that returned an error.
    pub errors: u64,
}

impl SystemStats {
    /// The mean wall time of a call; zero before the first.
    pub fn mean_duration(&self) -> Duration {
        match u32::try_from(self.runs) {
            Ok(0) => Duration::ZERO,
            Ok(runs) => self.total_duration / runs,
            Err(_) => Duration::from_secs_f64(self.total_duration.as_secs_f64() / self.runs as f64),
        }
    }

    /// Records one call that took `took` and reported what `ctx` holds.
    pub(crate) fn record(
        &mut self,
        took: Duration,
        reads: u64,
        writes: u64,
        rows: u64,
        failed: bool,
    ) {
        self.runs += 1;
        self.last_duration = took;
        self.total_duration += took;
        self.max_duration = self.max_duration.max(took);
        self.component_reads += reads;
        self.field_writes += writes;
        self.visited_rows += rows;
        self.errors += u64::from(failed);
    }
}
