//! Whole-arena restore: [`Arena::save_point`] keeps what the arena holds, [`Arena::restore`]
//! makes the arena that again (rollback netcode, editor undo, search that tries a move and
//! takes it back).
//!
//! Invariant: a save point holds the arena's state as a [`Snapshot`] (sharing every page), the
//! free slots, the two reclamation queues, the queued events and the journal heads; taking one
//! costs the pages' pointers plus what is queued, and restoring one costs the same plus the
//! journal entries written since, never the arena's size. Restoring puts back exactly the
//! hierarchy, nodes, indexes, slots, tombstones, pending drains and events, and keeps what only
//! moves forward moving forward: the id, GUID and persistent-id counters and the class registry
//! stay where they are now (an id issued after the save point is never issued again), the
//! revision clock continues and every domain that differs takes a fresh tick, and journal
//! entries written since are retracted without their numbers being reissued (a reader that saw
//! one is refused). Both refuse, changing nothing, inside a construction batch or a lifecycle
//! scope and while a token holds a reservation; restore also refuses another arena's save point.
//! A reservation whose token was dropped counts as released, as the next drain releases it: a
//! save point holds its slots as free, and a restore releases it before it puts the state back.

use crate::allocator::SlotPool;
use crate::arena::Arena;
use crate::error::ArenaError;
use crate::event::Event;
use crate::id::ArenaId;
use crate::lifecycle::Reclamation;
use crate::snapshot::Snapshot;

/// What an arena held at one moment, to restore it later ([`Arena::restore`]). Cheap to take
/// and to keep: it shares every page with the arena until one of them is written.
#[derive(Clone, Debug)]
pub struct SavePoint {
    arena: ArenaId,
    state: Snapshot,
    slots: SlotPool,
    reclamation: Reclamation,
    events: Vec<Event>,
    topology_head: u64,
    part_head: u64,
}

impl SavePoint {
    /// The state saved, as a snapshot to read.
    pub fn snapshot(&self) -> &Snapshot {
        &self.state
    }

    /// The arena the save point was taken from.
    pub fn arena_id(&self) -> ArenaId {
        self.arena
    }
}

impl Arena {
    /// Everything needed to make this arena what it is now again: see [`Arena::restore`].
    ///
    /// # Errors
    ///
    /// Refused inside a construction batch ([`ArenaError::BatchInProgress`]), inside a lifecycle
    /// scope ([`ArenaError::ScopeOpen`]) and while a token holds a reservation
    /// ([`ArenaError::ReservationHeld`]), where a later restore could not be exact. A reservation
    /// whose token was dropped is taken as released, as the next drain or restore releases it: the
    /// save point's free slots include the slots it held.
    pub fn save_point(&self) -> Result<SavePoint, ArenaError> {
        self.check_between_batches()?;
        let abandoned = self
            .reservations
            .abandoned_slots()
            .ok_or(ArenaError::ReservationHeld)?;
        let mut slots = self.slots.clone();
        for slot in abandoned {
            slots.release(slot);
        }
        Ok(SavePoint {
            arena: self.arena_id(),
            state: self.state.without_scopes(),
            slots,
            reclamation: self.reclamation.clone(),
            events: self.outbox.events().to_vec(),
            topology_head: self.outbox.topology_log().head(),
            part_head: self.outbox.part_log().head(),
        })
    }

    /// Makes the arena what it was when `point` was taken: the same instances with the same
    /// ids, slots, links, names, state, attributes and tags, the same tombstones awaiting the
    /// same drains, the same queued events. Ids, GUIDs and persistent ids issued since stay
    /// retired (the counters keep their place), classes registered since stay registered, the
    /// revision clock moves on (every domain that differs from the saved one takes one fresh
    /// tick, so a cache keyed by a revision sees a change), and journal entries written since
    /// are retracted: a reader that saw one is refused, one that had not reads on.
    ///
    /// # Errors
    ///
    /// Refused, changing nothing, for another arena's save point ([`ArenaError::ForeignToken`]) and
    /// where [`Arena::save_point`] is.
    pub fn restore(&mut self, point: &SavePoint) -> Result<(), ArenaError> {
        if point.arena != self.arena_id() {
            return Err(ArenaError::ForeignToken);
        }
        self.check_between_batches()?;
        if self.reservations.len() > 0 {
            return Err(ArenaError::ReservationHeld);
        }
        // What dropped reservation tokens left is given back (to the pool the restore
        // replaces): nothing of theirs outlives the restore.
        self.sweep_abandoned();
        self.state.restore_from(&point.state);
        self.slots = point.slots.clone();
        self.reclamation = point.reclamation.clone();
        self.outbox
            .restore(&point.events, point.topology_head, point.part_head);
        Ok(())
    }

    fn check_between_batches(&self) -> Result<(), ArenaError> {
        if self.batches.is_open() {
            return Err(ArenaError::BatchInProgress(
                "a save point is taken and restored between batches",
            ));
        }
        if self.state.scope_open() {
            return Err(ArenaError::ScopeOpen);
        }
        Ok(())
    }
}
