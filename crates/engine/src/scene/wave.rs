//! Waves: parallel work over a scene's established state, written through overlays and
//! committed in writer-rank order. A wave of parallel systems and an execution-group script's
//! groups both run as waves: [`Scene::wave`] lends the established state and the pool
//! ([`Wave::run`] hands jobs to lanes, [`Wave::overlay`] gives a job its overlay), and
//! [`Scene::run_wave`] is the one path that commits what lanes wrote.
//!
//! Invariant: nothing changes the scene while a wave runs (a [`Wave`] borrows it); every lane's
//! writes reach the store through [`Scene::run_wave`], which lends the established state to
//! the overlays and commits them before the scene can change, in writer-rank order whatever
//! order the lanes finished in (the order it is given, which a lane shuffle varies), hands the
//! overlays' memory back for the next wave, and keeps the commit's report for the frame's
//! events. So a wave's result depends on the established state and the ranks
//! only, never on threads or timing.

use strata_arena::Snapshot;
use strata_component_store::Store;
use strata_parallel_overlay::{
    CommitReport, OrderOracle, Overlay, Spare, WriterRank, record_and_commit,
};

use super::Scene;
use super::lanes::{LaneShuffle, run_lanes};

/// A scene's established state lent to a wave of parallel work (see the module docs). It is
/// shared by the wave's lanes.
pub struct Wave<'s> {
    store: &'s Store,
    lent: Lent<'s>,
}

/// What a wave borrows from its scene beside the store (see [`Scene::run_wave`], which lends
/// the store apart from the rest).
#[derive(Clone, Copy)]
struct Lent<'s> {
    arena: &'s Snapshot,
    spare: &'s Spare,
    pool: Option<&'s rayon::ThreadPool>,
    shuffle: Option<LaneShuffle>,
    frame: u64,
}

impl<'s> Wave<'s> {
    /// The hierarchy as the wave reads it.
    pub fn arena(&self) -> &'s Snapshot {
        self.lent.arena
    }

    /// The store as the wave reads it.
    pub fn store(&self) -> &'s Store {
        self.store
    }

    /// An overlay of writer rank `rank` over the established store, recording into memory
    /// earlier waves handed back: a job's writes.
    pub fn overlay(&self, rank: WriterRank) -> Overlay<'s> {
        Overlay::with_spare(rank, self.store, self.lent.spare)
    }

    /// Runs every job through `work` on the scene's pool (one after another without one):
    /// returns the results in job order, and the jobs' indexes in the order they finished,
    /// which is the order their overlays go to [`Scene::run_wave`]'s commit. `run` tells the
    /// frame's waves apart for a lane shuffle (any number, the same for the same wave in every
    /// frame).
    pub fn run<J: Send, R: Send>(
        &self,
        run: u64,
        jobs: Vec<J>,
        work: impl Fn(J) -> R + Sync,
    ) -> (Vec<R>, Vec<usize>) {
        let Lent {
            pool,
            shuffle,
            frame,
            ..
        } = self.lent;
        run_lanes(pool, shuffle, frame, run, jobs, work)
    }
}

impl Scene {
    /// The established state, lent to a wave of parallel work (see the module docs).
    pub fn wave(&self) -> Wave<'_> {
        Wave {
            store: &self.store,
            lent: self.lent(),
        }
    }

    /// Everything a wave borrows but the store.
    fn lent(&self) -> Lent<'_> {
        Lent {
            arena: &self.arena,
            spare: &self.spare,
            pool: self.pool.as_deref(),
            shuffle: self.lane_shuffle,
            frame: self.clock.frame,
        }
    }

    /// Lends the established state to `work`, a wave whose jobs record into overlays
    /// ([`Wave::overlay`]), and commits the overlays it returns, given in the order its lanes
    /// finished, in writer-rank order (conflicts judged by `oracle`), on the scene's pool; keeps
    /// the report for the frame's events (when the wave wrote, conflicted or was refused
    /// anything). The overlays commit without the copy of the instances their rows hold that a
    /// write set detached from the store keeps (see
    /// `strata_parallel_overlay::record_and_commit`). Returns how many writes the commit
    /// applied, and what `work` made besides.
    pub fn run_wave<T>(
        &mut self,
        oracle: &(impl OrderOracle + Sync),
        work: impl for<'w> FnOnce(&Wave<'w>) -> (Vec<Overlay<'w>>, T),
    ) -> (usize, T) {
        // The store is lent apart from the rest: `record_and_commit` writes it after the wave.
        let lent = Lent {
            arena: &self.arena,
            spare: &self.spare,
            pool: self.pool.as_deref(),
            shuffle: self.lane_shuffle,
            frame: self.clock.frame,
        };
        let (report, made) = record_and_commit(
            &mut self.store,
            &lent,
            oracle,
            lent.spare,
            lent.pool,
            |store, lent| work(&Wave { store, lent: *lent }),
        );
        (self.keep_report(report), made)
    }

    /// Keeps a commit's report for the frame's events when the wave wrote, conflicted or was
    /// refused anything; returns how many writes it applied.
    fn keep_report(&mut self, report: CommitReport) -> usize {
        let applied = report.applied;
        if !report.conflicts.is_empty() || !report.refusals.is_empty() || report.writers > 0 {
            self.commits.push(report);
        }
        applied
    }
}
