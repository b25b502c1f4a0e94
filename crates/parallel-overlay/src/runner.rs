//! Running writers in parallel on rayon, then committing.
//!
//! Invariant: every writer gets its own overlay over the same shared, unchanging view of the
//! store; nothing is written to the store until all writers have finished, and the commit order
//! is the writers' ranks, so the result is the same for any thread count. The store stays
//! borrowed from the first overlay to the end of the commit, so the commit meets exactly the
//! rows the writers recorded (their runs' instances are not copied), and its parallel column
//! passes run on the writers' pool.

use rayon::prelude::*;
use strata_component_store::Store;

use crate::commit::{CommitReport, OrderOracle, commit_on};
use crate::error::OverlayError;
use crate::overlay::{Overlay, WriterRank};
use crate::spare::Spare;

/// One writer to run: its rank and its work.
pub struct Writer<W> {
    /// Where its writes go in the commit order.
    pub rank: WriterRank,
    /// The work, handed to `run` with the writer's overlay.
    pub work: W,
}

/// What a parallel run did.
#[derive(Debug, Default, PartialEq)]
pub struct RunReport {
    /// The commit.
    pub commit: CommitReport,
    /// Writers whose work failed (their writes up to the failure are still committed).
    pub errors: Vec<(WriterRank, OverlayError)>,
    /// Per writer: reads and writes made (for system statistics).
    pub counts: Vec<(WriterRank, u64, u64)>,
}

/// Runs every writer on `pool`, each with its own overlay over `store`, then commits their
/// writes in rank order.
pub fn run_parallel<W: Sync>(
    store: &mut Store,
    pool: &rayon::ThreadPool,
    writers: &[Writer<W>],
    run: impl Fn(&W, &mut Overlay<'_>) -> Result<(), OverlayError> + Sync,
    oracle: &impl OrderOracle,
) -> RunReport {
    run_inner(store, pool, writers, run, oracle, None)
}

/// [`run_parallel`] with overlays that record into memory from `spare` and a commit that hands
/// it back, for writers that run every frame.
pub fn run_parallel_with_spare<W: Sync>(
    store: &mut Store,
    pool: &rayon::ThreadPool,
    writers: &[Writer<W>],
    run: impl Fn(&W, &mut Overlay<'_>) -> Result<(), OverlayError> + Sync,
    oracle: &impl OrderOracle,
    spare: &Spare,
) -> RunReport {
    run_inner(store, pool, writers, run, oracle, Some(spare))
}

fn run_inner<W: Sync>(
    store: &mut Store,
    pool: &rayon::ThreadPool,
    writers: &[Writer<W>],
    run: impl Fn(&W, &mut Overlay<'_>) -> Result<(), OverlayError> + Sync,
    oracle: &impl OrderOracle,
    spare: Option<&Spare>,
) -> RunReport {
    let _run = tracing::debug_span!("overlay_run", writers = writers.len()).entered();
    let shared: &Store = store;
    let outcomes: Vec<_> = pool.install(|| {
        writers
            .par_iter()
            .map(|writer| {
                let mut overlay = match spare {
                    Some(spare) => Overlay::with_spare(writer.rank, shared, spare),
                    None => Overlay::new(writer.rank, shared),
                };
                let outcome = run(&writer.work, &mut overlay);
                // The commit below runs on this very store, unchanged since: see
                // `Overlay::finish_in_place`.
                (overlay.finish_in_place(), outcome)
            })
            .collect()
    });
    let mut report = RunReport::default();
    let mut sets = Vec::with_capacity(outcomes.len());
    for (set, outcome) in outcomes {
        report.counts.push((set.rank(), set.reads(), set.writes()));
        if let Err(error) = outcome {
            report.errors.push((set.rank(), error));
        }
        sets.push(set);
    }
    // The commit's parallel column passes run on the writers' pool.
    report.commit = commit_on(store, sets, oracle, spare, Some(pool));
    report
}
