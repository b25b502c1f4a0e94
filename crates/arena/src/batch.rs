//! Construction batches: a checkpoint and a rollback that removes what a failed clone or graft
//! allocated.
//!
//! This is not a transaction. While a batch is open the arena refuses what it could not undo
//! (destruction, draining, inserting explicit ids, moving instances that predate the batch);
//! writes to pre-existing instances are allowed and are not undone.
//!
//! Invariant: every allocation made while a batch is open is in `alloc_log`, in allocation
//! order; rollback removes them newest first, which restores the free-slot list exactly, then
//! restores the id, GUID and persistent-id counters, the pending events and the topology journal
//! head. Revisions are not rewound: they only move forward, and rollback advances topology.

use crate::arena::Arena;
use crate::error::ArenaError;
use crate::id::{IdRange, InstanceId};

/// An open construction batch. Pass it to [`Arena::commit`] or [`Arena::rollback`].
#[derive(Debug, PartialEq, Eq)]
#[must_use = "an open batch restricts the arena until committed or rolled back"]
pub struct Checkpoint {
    depth: usize,
}

/// What a checkpoint recorded.
#[derive(Clone, Debug)]
pub(crate) struct BatchMark {
    next_server: u64,
    next_local: u64,
    guid_counter: u64,
    persistent_counter: u64,
    alloc_len: usize,
    events_len: usize,
    topology_head: u64,
    slot_len: u32,
}

impl BatchMark {
    /// Whether `id` was allocated after this mark (batches allocate from the arena's own range
    /// only, since explicit ids are refused inside them).
    pub(crate) fn created_in_batch(&self, id: InstanceId, own_range: IdRange) -> bool {
        let counter = match own_range {
            IdRange::Server => self.next_server,
            IdRange::ClientLocal => self.next_local,
        };
        id.range() == own_range && id.get() >= counter
    }
}

impl Arena {
    /// Opens a construction batch. Batches nest; each must be committed or rolled back
    /// innermost first.
    pub fn checkpoint(&mut self) -> Checkpoint {
        self.batches.push(BatchMark {
            next_server: self.next_server,
            next_local: self.next_local,
            guid_counter: self.guid_counter,
            persistent_counter: self.persistent_counter,
            alloc_len: self.alloc_log.len(),
            events_len: self.events.len(),
            topology_head: self.topology_log.head(),
            slot_len: self.state.slot_len,
        });
        Checkpoint {
            depth: self.batches.len() - 1,
        }
    }

    /// Whether a construction batch is open.
    pub fn in_batch(&self) -> bool {
        !self.batches.is_empty()
    }

    /// Keeps what the batch built.
    pub fn commit(&mut self, checkpoint: Checkpoint) -> Result<(), ArenaError> {
        self.close_batch(&checkpoint)?;
        if self.batches.is_empty() {
            self.alloc_log.clear();
        }
        Ok(())
    }

    /// Removes every instance allocated since the checkpoint, as if the batch never ran:
    /// ids and slots return to their previous counters and free list, links from pre-existing
    /// parents are undone, events and topology journal entries queued since are dropped.
    pub fn rollback(&mut self, checkpoint: Checkpoint) -> Result<(), ArenaError> {
        let mark = self.close_batch(&checkpoint)?;
        let rolled_back = self.alloc_log.split_off(mark.alloc_len);
        for doomed in rolled_back.iter().rev() {
            let Some(node) = self.state.node_at(doomed.slot) else {
                continue;
            };
            if node.id != doomed.id {
                continue;
            }
            let (has_parent, tags, pid, class) = (
                node.parent.is_some(),
                node.tags.clone(),
                node.persistent_id,
                node.class,
            );
            if has_parent {
                self.unlink(doomed.slot);
            }
            for tag in &tags {
                self.unindex_tag(doomed.id, tag);
            }
            if let Some(pid) = pid {
                self.state.persistent_index.remove(&pid);
            }
            for family in self.state.class_of(class).families().iter() {
                self.state.invalidate_family(family);
            }
            self.state.layouts.remove(&doomed.id);
            self.state.vacate(doomed.slot);
            self.state.live -= 1;
            if doomed.slot.0 < mark.slot_len {
                self.free_slots.push(doomed.slot);
            }
        }
        self.state.truncate_slots(mark.slot_len);
        self.next_server = mark.next_server;
        self.next_local = mark.next_local;
        self.guid_counter = mark.guid_counter;
        self.persistent_counter = mark.persistent_counter;
        self.events.truncate(mark.events_len);
        self.topology_log.truncate_to(mark.topology_head);
        let at = self.state.revisions.tick();
        self.state.revisions.topology = at;
        self.ancestry_epoch += 1;
        self.lineage_cache = None;
        if self.batches.is_empty() {
            self.alloc_log.clear();
        }
        Ok(())
    }

    fn close_batch(&mut self, checkpoint: &Checkpoint) -> Result<BatchMark, ArenaError> {
        if checkpoint.depth + 1 != self.batches.len() {
            return Err(ArenaError::StaleCheckpoint);
        }
        self.batches.pop().ok_or(ArenaError::StaleCheckpoint)
    }
}
