//! The storage under a snapshot: fixed-size pages of inline records, and the sharded index of
//! ids that do not sit at slot `id - 1`.
//!
//! Invariant: every page but the last holds `PAGE_LEN` entries; the last holds the slots below
//! the high-water mark that fall in it, so a fresh slot is always appended at the end of the
//! last page. A vacant slot is `None`. Pages and index shards are shared between snapshots
//! behind `Arc` and copied whole on the first write after a snapshot took them.

use std::sync::Arc;

use super::record::{Cold, Record};
use crate::id::{InstanceId, Slot};
use crate::state::NodeData;

pub(super) const PAGE_BITS: u32 = 10;
pub(super) const PAGE_LEN: usize = 1 << PAGE_BITS;

/// The page and the index inside it of a slot.
pub(super) fn split(slot: Slot) -> (usize, usize) {
    (slot.index() >> PAGE_BITS, slot.index() & (PAGE_LEN - 1))
}

/// A run of `PAGE_LEN` slots, the unit of copy-on-write for records.
///
/// Invariant: `colds` is no longer than `slots`, and a slot's record is flagged as having cold
/// data (`Record::has_cold`) exactly when `colds` holds some at its index. A page whose records
/// are all at their class defaults has no `colds` at all, so copying it copies the records as
/// one block and nothing else.
#[derive(Debug)]
pub(super) struct Page {
    slots: Vec<Option<Record>>,
    /// Name, attributes, state, tags and persistent id of the slots that moved any of them
    /// away from their class defaults, by index.
    colds: Vec<Option<Arc<Cold>>>,
}

impl Page {
    pub(super) fn new() -> Self {
        Self {
            slots: Vec::with_capacity(PAGE_LEN),
            colds: Vec::new(),
        }
    }

    /// The cold data of the slot at `index`, if it has any.
    pub(super) fn cold(&self, index: usize) -> Option<&Cold> {
        self.colds.get(index)?.as_deref()
    }

    /// Whether the slot at `index` holds the very same cold data here as in `older` (a write
    /// to cold data shared with a snapshot copies it, so the two differ once either side was
    /// written).
    pub(super) fn same_cold(&self, older: &Page, index: usize) -> bool {
        match (self.colds.get(index), older.colds.get(index)) {
            (Some(Some(a)), Some(Some(b))) => Arc::ptr_eq(a, b),
            (Some(Some(_)), _) | (_, Some(Some(_))) => false,
            _ => true,
        }
    }

    /// The cold data of the occupied slot at `index` for writing: made private to this page
    /// (copied if a snapshot shares it), and made from `defaults` first if the record had none.
    pub(super) fn cold_mut(&mut self, index: usize, defaults: &NodeData) -> &mut Cold {
        if let Some(record) = self.slots.get_mut(index).and_then(Option::as_mut) {
            record.set_has_cold(true);
        }
        if self.colds.len() <= index {
            self.colds.resize(index + 1, None);
        }
        Arc::make_mut(
            self.colds[index].get_or_insert_with(|| Arc::new(Cold::new(defaults.clone()))),
        )
    }

    /// The record at `index` for writing, beside its cold data for reading.
    pub(super) fn record_and_cold(&mut self, index: usize) -> Option<(&mut Record, Option<&Cold>)> {
        let record = self.slots.get_mut(index)?.as_mut()?;
        let cold = self.colds.get(index).and_then(Option::as_deref);
        Some((record, cold))
    }

    pub(super) fn get(&self, index: usize) -> Option<&Record> {
        self.slots.get(index)?.as_ref()
    }

    pub(super) fn get_mut(&mut self, index: usize) -> Option<&mut Record> {
        self.slots.get_mut(index)?.as_mut()
    }

    pub(super) fn entries(&self) -> &[Option<Record>] {
        &self.slots
    }

    /// Stores `record` at `index`, which is either vacant or the page's next fresh slot, with
    /// its cold data (`None` for a node at its class's defaults).
    pub(super) fn put(&mut self, index: usize, mut record: Record, cold: Option<Arc<Cold>>) {
        record.set_has_cold(cold.is_some());
        match cold {
            Some(cold) => {
                if self.colds.len() <= index {
                    self.colds.resize(index + 1, None);
                }
                self.colds[index] = Some(cold);
            }
            None => {
                if let Some(slot) = self.colds.get_mut(index) {
                    *slot = None;
                }
            }
        }
        if index == self.slots.len() {
            self.slots.push(Some(record));
        } else {
            debug_assert!(self.slots[index].is_none(), "records go to vacant slots");
            self.slots[index] = Some(record);
        }
    }

    /// Appends vacant slots until the page holds `len` entries (fresh slots held by a
    /// reservation).
    pub(super) fn extend_vacant(&mut self, len: usize) {
        self.slots.resize_with(len.max(self.slots.len()), || None);
    }

    /// Empties the slot at `index`, with its cold data, and returns its record.
    pub(super) fn take(&mut self, index: usize) -> Option<Record> {
        if let Some(cold) = self.colds.get_mut(index) {
            *cold = None;
        }
        self.slots.get_mut(index)?.take()
    }

    /// Keeps the first `len` slots only (construction rollback of appended slots).
    pub(super) fn truncate(&mut self, len: usize) {
        self.slots.truncate(len);
        self.colds.truncate(len);
    }
}

impl Clone for Page {
    /// A copy with room for a whole page, so the last page keeps growing in place.
    fn clone(&self) -> Self {
        let mut slots = Vec::with_capacity(PAGE_LEN.max(self.slots.len()));
        slots.extend_from_slice(&self.slots);
        Self {
            slots,
            colds: self.colds.clone(),
        }
    }

    /// Copies `source` into this page's memory (a spare page): the records as one block.
    fn clone_from(&mut self, source: &Self) {
        self.slots.clone_from(&source.slots);
        self.colds.clone_from(&source.colds);
    }
}

/// The most pages a state keeps spare: 64 MiB of records.
const SPARE_PAGES: usize = 1_024;

/// Pages whose memory the next copy-on-write copies reuse (see `Snapshot::restore_from`).
/// Owned by one state: a clone starts with none.
#[derive(Debug, Default)]
pub(super) struct SparePages(Vec<Page>);

impl SparePages {
    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(super) fn take(&mut self) -> Option<Page> {
        self.0.pop()
    }

    /// Keeps `page`'s memory, up to [`SPARE_PAGES`] pages.
    pub(super) fn keep(&mut self, page: Page) {
        if self.0.len() < SPARE_PAGES {
            self.0.push(page);
        }
    }
}

impl Clone for SparePages {
    fn clone(&self) -> Self {
        Self::default()
    }
}

/// How many independently shared shards the id → slot index has.
const ID_SHARDS: usize = 64;

/// The id → slot map for ids not stored at slot `id - 1`, split into shards behind `Arc`:
/// cloning it copies 64 pointers, and a write after a snapshot copies one shard.
#[derive(Clone, Debug)]
pub(super) struct IdIndex {
    shards: Vec<Arc<hashbrown::HashMap<InstanceId, Slot>>>,
    len: usize,
}

impl IdIndex {
    pub(super) fn new() -> Self {
        Self {
            shards: (0..ID_SHARDS).map(|_| Arc::default()).collect(),
            len: 0,
        }
    }

    fn shard(id: InstanceId) -> usize {
        // Fibonacci hashing: ids are counter values, so multiply to spread them over shards.
        (id.get().wrapping_mul(strata_mix::GAMMA) >> 58) as usize
    }

    pub(super) fn get(&self, id: InstanceId) -> Option<Slot> {
        if self.len == 0 {
            return None;
        }
        self.shards[Self::shard(id)].get(&id).copied()
    }

    pub(super) fn insert(&mut self, id: InstanceId, slot: Slot) {
        if Arc::make_mut(&mut self.shards[Self::shard(id)])
            .insert(id, slot)
            .is_none()
        {
            self.len += 1;
        }
    }

    pub(super) fn remove(&mut self, id: InstanceId) {
        let shard = &mut self.shards[Self::shard(id)];
        if shard.contains_key(&id) && Arc::make_mut(shard).remove(&id).is_some() {
            self.len -= 1;
        }
    }
}
