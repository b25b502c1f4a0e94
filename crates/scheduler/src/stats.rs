//! Per-system statistics, recorded from the runs that actually happened.
//!
//! Invariant: a system's counters change only when its body is called: a stopped, disabled or
//! not-yet-due system's statistics stay as they were. Access counts are what the body reported
//! through its [`RunCtx`](crate::RunCtx); nothing is inferred.

use std::time::Duration;

/// What one system has done since it was added or its statistics were last reset.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SystemStats {
    /// How many times its body was called.
    pub runs: u64,
    /// Wall time of the most recent call.
    pub last_duration: Duration,
    /// Wall time of all calls together.
    pub total_duration: Duration,
    /// Component reads its body reported.
    pub component_reads: u64,
    /// Field writes its body reported.
    pub field_writes: u64,
    /// Rows its body reported visiting.
    pub visited_rows: u64,
    /// Calls that returned an error.
    pub errors: u64,
}
