//! Construction batches: a checkpoint and a rollback that removes what the batch built.
//!
//! This is not a transaction: a batch may only construct. While one is open the arena refuses
//! everything else (destruction, draining, inserting explicit ids, moving or writing instances
//! that predate the innermost open batch, including those an outer batch built); linking new
//! instances under pre-existing parents is allowed and is undone.
//!
//! Invariant: every allocation made while a batch is open is in the batch log, in allocation
//! order, and the log holds none while no batch is open; only this module opens and closes
//! batches. Because nothing else changed, rollback restores the hierarchy exactly: it unlinks
//! the batch's instances, then removes them newest first (which restores the free-slot list
//! and the links of pre-existing parents), and puts back the tag and persistent-id indexes and
//! family caches (persistent structures, so recording them at the checkpoint is O(1)) and the
//! pending events, which no one can have drained inside the batch. What a reader may have
//! observed inside the batch only moves forward: ids, GUIDs and persistent ids handed out in it
//! are never handed out again; the clock ticks once more and every revision domain and layer
//! layout the batch touched takes that tick, so any cache that looked before or inside the
//! batch sees a change; journal entries of the batch are retracted without reissuing their
//! sequence numbers, so a cursor taken inside the batch is refused rather than served a
//! different history.

use crate::arena::Arena;
use crate::error::ArenaError;
use crate::event::Doomed;
use crate::id::{ArenaId, InstanceId};
use crate::outbox::OutboxMark;
use crate::revision::Revision;
use crate::snapshot::IndexMark;

/// An open construction batch. Pass it to [`Arena::commit`] or [`Arena::rollback`].
///
/// A checkpoint names its arena and carries a serial no other token of that arena has, so a
/// checkpoint whose batch is already closed, or one from another arena, is refused
/// ([`ArenaError::StaleCheckpoint`], [`ArenaError::ForeignToken`]) and closes nothing. Copies
/// are therefore harmless: the first use closes the batch, later ones are stale.
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use = "an open batch restricts the arena until committed or rolled back"]
pub struct Checkpoint {
    arena: ArenaId,
    serial: u64,
}

/// What a checkpoint recorded.
#[derive(Clone, Debug)]
struct BatchMark {
    /// The serial of the checkpoint that opened the batch.
    serial: u64,
    /// The id counter: ids of the own range from here on were allocated inside the batch.
    next_id: u64,
    /// The clock: revisions above it were issued inside the batch.
    clock: Revision,
    /// How many allocations the log held.
    allocations: usize,
    /// The events and journal heads.
    outbox: OutboxMark,
    /// The slot high-water mark and the indexes rollback puts back.
    indexes: IndexMark,
}

/// The open construction batches, innermost last, and what they allocated.
#[derive(Debug, Default)]
pub(crate) struct BatchLog {
    marks: Vec<BatchMark>,
    /// Every allocation made while a batch is open, in allocation order.
    allocations: Vec<Doomed>,
}

impl BatchLog {
    /// Whether a construction batch is open.
    pub(crate) fn is_open(&self) -> bool {
        !self.marks.is_empty()
    }

    /// Logs an allocation made while a batch is open.
    pub(crate) fn record(&mut self, allocation: Doomed) {
        debug_assert!(self.is_open(), "allocations are logged inside batches only");
        self.allocations.push(allocation);
    }

    /// The id counter at the innermost open batch's checkpoint.
    fn innermost_next_id(&self) -> Option<u64> {
        self.marks.last().map(|mark| mark.next_id)
    }

    /// Closes the batch opened under `serial` and every batch opened inside it, returning its
    /// mark. `None`, closing nothing, when no open batch has that serial.
    fn close(&mut self, serial: u64) -> Option<BatchMark> {
        let depth = self.marks.iter().position(|mark| mark.serial == serial)?;
        self.marks.drain(depth..).next()
    }

    /// Takes the allocations logged from `from` on (a rollback removes them).
    fn take_since(&mut self, from: usize) -> Vec<Doomed> {
        self.allocations.split_off(from)
    }

    /// Forgets the allocations once no batch is open: they are kept for good.
    fn settle(&mut self) {
        if self.marks.is_empty() {
            self.allocations.clear();
        }
    }
}

impl Arena {
    /// Opens a construction batch. Batches nest: committing or rolling back a checkpoint also
    /// closes every batch opened after it (a rollback then removes their allocations too), and
    /// their checkpoints become stale.
    pub fn checkpoint(&mut self) -> Checkpoint {
        let serial = self.next_token();
        self.batches.marks.push(BatchMark {
            serial,
            next_id: self.ids.next_id(),
            clock: self.state.revisions().clock(),
            allocations: self.batches.allocations.len(),
            outbox: self.outbox.mark(),
            indexes: self.state.index_mark(),
        });
        Checkpoint {
            arena: self.arena_id(),
            serial,
        }
    }

    /// Whether a construction batch is open.
    pub fn in_batch(&self) -> bool {
        self.batches.is_open()
    }

    /// Keeps what the batch built.
    ///
    /// # Errors
    ///
    /// [`ArenaError::ForeignToken`] for another arena's checkpoint, and
    /// [`ArenaError::StaleCheckpoint`] when its batch is already closed.
    pub fn commit(&mut self, checkpoint: Checkpoint) -> Result<(), ArenaError> {
        self.close_batch(&checkpoint)?;
        self.batches.settle();
        Ok(())
    }

    /// Removes every instance allocated since the checkpoint (and closes the batches opened
    /// inside it): the hierarchy, the links of pre-existing parents, slots and the free list, the
    /// tag and persistent-id indexes, family member lists and pending events are as they were
    /// at the checkpoint.
    ///
    /// Counters only move forward, so nothing observed inside the batch is ever reissued for
    /// something else: ids, GUIDs and persistent ids it handed out stay retired; when the batch
    /// changed anything, the clock ticks once more and every revision domain, family revision
    /// and layer layout revision the batch touched takes that tick (a cache that looked before
    /// or inside the batch sees a change); journal entries written inside the batch are
    /// retracted, the journal heads move forward, and a cursor taken inside the batch reads
    /// `HistoryUnavailable`.
    ///
    /// # Errors
    ///
    /// [`ArenaError::ForeignToken`] for another arena's checkpoint, and
    /// [`ArenaError::StaleCheckpoint`] when its batch is already closed; nothing is rolled back
    /// then.
    pub fn rollback(&mut self, checkpoint: Checkpoint) -> Result<(), ArenaError> {
        let mark = self.close_batch(&checkpoint)?;
        let rolled_back = self.batches.take_since(mark.allocations);
        self.batches.settle();
        let slot_len = mark.indexes.slot_len();
        // Unlink everything first, then vacate: a node built in the batch may have been moved
        // under one built after it, and links must never name a vacant slot.
        for doomed in rolled_back.iter().rev() {
            if self.state.id_at(doomed.slot) == Some(doomed.id) {
                self.state.unlink(doomed.slot);
            }
        }
        for doomed in rolled_back.iter().rev() {
            if self.state.id_at(doomed.slot) != Some(doomed.id) {
                continue;
            }
            self.state.vacate(doomed.slot);
            if doomed.slot.0 < slot_len {
                self.slots.release(doomed.slot);
            }
        }
        self.state.truncate_slots(slot_len);
        self.outbox.rewind(mark.outbox);
        let touched = self.state.revisions().clock() > mark.clock;
        let restamp = touched.then(|| {
            let at = self.state.revisions_mut().tick();
            self.state.revisions_mut().restamp_since(mark.clock, at);
            // Layers the batch invalidated keep an invalidation, newer than the batch's.
            (mark.clock, at)
        });
        self.state.restore_indexes(mark.indexes, restamp);
        Ok(())
    }

    /// Refuses writes to instances that predate the innermost open batch, which its rollback
    /// could not undo (an inner batch may not change what an outer one built either). Batches
    /// allocate from the arena's own range only, since explicit ids are refused inside them.
    pub(crate) fn guard_batch_write(&self, id: InstanceId) -> Result<(), ArenaError> {
        match self.batches.innermost_next_id() {
            Some(mark) if !self.ids.allocated_since(mark, id) => Err(ArenaError::BatchInProgress(
                "instances that predate the batch cannot be changed inside it",
            )),
            _ => Ok(()),
        }
    }

    /// Closes the batch `checkpoint` opened, and every batch opened inside it. Refused,
    /// closing nothing, for another arena's checkpoint or one whose batch is already closed.
    fn close_batch(&mut self, checkpoint: &Checkpoint) -> Result<BatchMark, ArenaError> {
        if checkpoint.arena != self.arena_id() {
            return Err(ArenaError::ForeignToken);
        }
        self.batches
            .close(checkpoint.serial)
            .ok_or(ArenaError::StaleCheckpoint)
    }
}
