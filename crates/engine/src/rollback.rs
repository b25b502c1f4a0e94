//! Whole-world rollback: [`World::snapshot`] keeps what a world holds, [`World::restore`]
//! makes the world that again, as rollback netcode does every frame.
//!
//! Invariant: a [`WorldSnapshot`] holds the arena's save point (sharing every page), a store
//! snapshot (sharing every set), the migration records waiting for their component, the frame
//! counter, the simulated time, the fixed-step block's cadence and carry and every interval system's wait; taking
//! one costs the pages' and sets' pointers plus what is queued, and restoring one costs the
//! same plus the journal entries written since, never the world's size. A restore validates
//! everything before it changes anything: an arena in a construction batch or a reservation
//! still held by its token, or a snapshot of another world, is refused with the world
//! untouched (reservations of dropped tokens count as released, as at a drain). What only
//! moves forward keeps moving (ids, revision clock, store tick; see `Arena::restore` and
//! `Store::restore`), and the restored store is a new identity, so queries, removal readers,
//! handles and Luau mirrors built before the restore rebuild instead of answering from stale
//! state. Code is not part of a snapshot: systems, listeners and the Luau VMs' own state stay
//! as they are.

use strata_component_store::Store;
use strata_scheduler::FixedStep;

use crate::error::WorldError;
use crate::scene::SceneSnapshot;
use crate::world::World;

/// The frame counter and the schedule's timing, as a snapshot keeps them.
#[derive(Clone, Debug)]
pub(crate) struct Timing {
    pub(crate) frame: u64,
    /// The simulated seconds stepped.
    pub(crate) time: f64,
    pub(crate) fixed: FixedStep,
    pub(crate) carried: f64,
    /// Interval systems' accumulated waits, by system name.
    pub(crate) intervals: Vec<(String, f64)>,
    /// Waits kept for systems the world did not have (loaded from a save, their systems not
    /// added yet), by system name.
    pub(crate) waiting: Vec<(String, f64)>,
}

/// What a world held at one moment ([`World::snapshot`]), to make it that again
/// ([`World::restore`]). Immutable and cheap to keep: it shares its pages and sets with the
/// world until the world writes them.
/// Cloning one gives another snapshot of the same moment, sharing everything with it.
#[derive(Clone, Debug)]
pub struct WorldSnapshot {
    scene: SceneSnapshot,
    timing: Timing,
}

impl WorldSnapshot {
    /// The frame number the world was at.
    pub fn frame(&self) -> u64 {
        self.timing.frame
    }

    /// The arena's state, to read.
    pub fn arena(&self) -> &strata_arena::Snapshot {
        self.scene.arena.snapshot()
    }

    /// The store's state, to read.
    pub fn store(&self) -> &Store {
        &self.scene.store
    }
}

impl World {
    /// A snapshot of everything the world holds but code: instances, components, definitions,
    /// pending drains and events, the frame counter and the fixed-step and interval timing.
    /// Refused inside a construction batch and while a reservation is held by its token (a
    /// spawn staged in a live [`Stage`](crate::prelude::Stage)); the reservations of a dropped
    /// stage count as released.
    pub fn snapshot(&self) -> Result<WorldSnapshot, WorldError> {
        let _span = tracing::debug_span!("snapshot").entered();
        Ok(WorldSnapshot {
            scene: self.scene().snapshot()?,
            timing: self.timing(),
        })
    }

    /// Makes the world what it was when `snapshot` was taken (see the module docs): the same
    /// instances, hierarchy, tombstones, pending drains and events, component rows with their
    /// ticks, removal logs, reference index and orphans, the same frame number and timing.
    /// Ids issued since are never issued again; ticks and revisions move on.
    ///
    /// Refused, changing nothing, for a snapshot of another world, inside a construction batch
    /// and while a reservation is held.
    pub fn restore(&mut self, snapshot: &WorldSnapshot) -> Result<(), WorldError> {
        let _span = tracing::info_span!("restore").entered();
        self.scene_mut().restore(&snapshot.scene)?;
        self.set_timing(&snapshot.timing);
        Ok(())
    }
}
