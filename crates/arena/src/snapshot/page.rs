//! The storage under a snapshot: fixed-size pages of inline records, and the sharded index of
//! ids that do not sit at slot `id - 1`.
//!
//! Invariant: every page but the last holds `PAGE_LEN` entries; the last holds the slots below
//! the high-water mark that fall in it, so a fresh slot is always appended at the end of the
//! last page. A vacant slot is `None`. Pages and index shards are shared between snapshots
//! behind `Arc` and copied whole on the first write after a snapshot took them. A page holds
//! 128 slots: the unit a scattered write copies.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::record::Record;
use crate::id::{InstanceId, Slot};

pub(super) const PAGE_BITS: u32 = 7;
pub(super) const PAGE_LEN: usize = 1 << PAGE_BITS;

/// The page and the index inside it of a slot.
pub(super) fn split(slot: Slot) -> (usize, usize) {
    (slot.index() >> PAGE_BITS, slot.index() & (PAGE_LEN - 1))
}

/// A run of `PAGE_LEN` slots, the unit of copy-on-write for records. The records sit inline,
/// so a page behind its `Arc` is one allocation and a lookup one pointer away from the table.
/// Invariant: `len` is at most `PAGE_LEN`, and every slot from `len` on is `None`.
#[derive(Clone, Debug)]
pub(super) struct Page {
    /// How many slots the page holds (the last page may hold fewer than `PAGE_LEN`).
    len: usize,
    slots: [Option<Record>; PAGE_LEN],
}

impl Page {
    pub(super) fn new() -> Self {
        Self {
            len: 0,
            slots: std::array::from_fn(|_| None),
        }
    }

    pub(super) fn get(&self, index: usize) -> Option<&Record> {
        self.entries().get(index)?.as_ref()
    }

    pub(super) fn get_mut(&mut self, index: usize) -> Option<&mut Record> {
        self.slots[..self.len].get_mut(index)?.as_mut()
    }

    pub(super) fn entries(&self) -> &[Option<Record>] {
        &self.slots[..self.len]
    }

    /// Stores `record` at `index`, which is either vacant or the page's next fresh slot.
    pub(super) fn put(&mut self, index: usize, record: Record) {
        if index == self.len {
            self.slots[index] = Some(record);
            self.len += 1;
        } else {
            let slot = &mut self.slots[..self.len][index];
            debug_assert!(slot.is_none(), "records go to vacant slots");
            *slot = Some(record);
        }
    }

    /// Holds vacant slots up to `len` entries (fresh slots held by a reservation).
    pub(super) fn extend_vacant(&mut self, len: usize) {
        self.len = len.clamp(self.len, PAGE_LEN);
    }

    pub(super) fn take(&mut self, index: usize) -> Option<Record> {
        self.slots[..self.len].get_mut(index)?.take()
    }

    /// Keeps the first `len` slots only (construction rollback of appended slots).
    pub(super) fn truncate(&mut self, len: usize) {
        if len < self.len {
            self.slots[len..self.len].fill_with(|| None);
            self.len = len;
        }
    }
}

/// The table of pages, shared between snapshots behind one `Arc`, which remembers when its
/// holder has made it private, so writes after the first skip the atomic uniqueness check.
///
/// Invariant: `private` is true only while `arc` has a strong count of one and no weak
/// references (none are ever made). `make_mut` sets it after making the table unique; `clone`,
/// the only way a second strong reference is made, clears it first. Every write goes through
/// `make_mut`, which takes `&mut self`, so no `clone` runs at the same time.
#[derive(Debug)]
pub(super) struct PageTable {
    arc: Arc<Vec<Arc<Page>>>,
    private: AtomicBool,
}

impl PageTable {
    pub(super) fn new() -> Self {
        Self {
            arc: Arc::new(Vec::new()),
            private: AtomicBool::new(true),
        }
    }

    /// The table for writing: its pointers copied first if a snapshot shares it, and without
    /// any atomic operation once this holder made it private.
    #[inline(always)]
    #[expect(
        unsafe_code,
        reason = "skips Arc::make_mut's atomic check on a private page table"
    )]
    pub(super) fn make_mut(&mut self) -> &mut Vec<Arc<Page>> {
        if !*self.private.get_mut() {
            Arc::make_mut(&mut self.arc);
            *self.private.get_mut() = true;
        }
        debug_assert_eq!(
            Arc::strong_count(&self.arc),
            1,
            "a private table is unshared"
        );
        // SAFETY: `private` is true (set just above if it was not), so by the invariant this
        // `Arc` is the only strong reference and no weak reference exists; `&mut self` excludes
        // every other borrow of it. The table is reachable only through this handle, and
        // handing out `&mut` to it for the duration of the borrow is sound.
        unsafe { &mut *Arc::as_ptr(&self.arc).cast_mut() }
    }
}

impl Clone for PageTable {
    /// A second handle on the same table (a snapshot): both copy before their next write.
    fn clone(&self) -> Self {
        self.private.store(false, Ordering::Relaxed);
        Self {
            arc: Arc::clone(&self.arc),
            private: AtomicBool::new(false),
        }
    }
}

impl std::ops::Deref for PageTable {
    type Target = Vec<Arc<Page>>;

    #[inline]
    fn deref(&self) -> &Vec<Arc<Page>> {
        &self.arc
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
