//! Allocation of identities and slots: the arena's own id range and counter, the creation and
//! persistent-id counters, and the pool of free slots.
//!
//! Invariant: the id counter, the creation counter and the persistent-id counter only grow, so
//! an id of the arena's own range below the counter was handed out (or retired) for good, and a
//! creation counter (which, with the seed, gives a GUID) is never given twice. Ids are taken
//! only after the whole run was checked to fit the range. A slot is in the free pool at most
//! once, only after the slot was emptied, and leaves it when a creation or a reservation takes
//! it. Fresh slots are always taken at the state's high-water mark (`slot_len`): a reservation
//! that takes fresh slots raises that mark over vacant entries at once (`Arena::reserve`), so
//! every slot below the mark is occupied, in the free pool, or held by exactly one reservation,
//! and no creation can take a reserved slot. A released reservation gives its slots back here.

use crate::error::ArenaError;
use crate::id::{IdRange, InstanceId, Slot};

/// The id, creation and persistent-id counters of one arena.
#[derive(Clone, Debug)]
pub(crate) struct IdAllocator {
    own_range: IdRange,
    /// The next id of `own_range` to allocate. Ids of the other range only arrive through
    /// `insert_with_id`, which never moves this counter for them.
    next_id: u64,
    /// How many nodes were created: the counter each new node's GUID derives from.
    created: u64,
    persistent: u64,
}

impl IdAllocator {
    pub(crate) fn new(own_range: IdRange) -> Self {
        Self {
            own_range,
            next_id: own_range.start(),
            created: 0,
            persistent: 0,
        }
    }

    pub(crate) fn own_range(&self) -> IdRange {
        self.own_range
    }

    pub(crate) fn next_id(&self) -> u64 {
        self.next_id
    }

    /// Whether `id` lies in this arena's own range below its counter: handed out already.
    pub(crate) fn is_retired(&self, id: InstanceId) -> bool {
        id.range() == self.own_range && id.get() < self.next_id
    }

    /// Whether `id` is of this arena's own range and at or above `mark`, an earlier value of
    /// the counter: allocated since.
    pub(crate) fn allocated_since(&self, mark: u64, id: InstanceId) -> bool {
        id.range() == self.own_range && id.get() >= mark
    }

    /// Checks that the next `count` (at least one) ids of the own range exist, then `room`
    /// (the slots), and only then takes the ids. Returns the first; refused, taking nothing,
    /// when either check fails.
    pub(crate) fn reserve(
        &mut self,
        count: u32,
        room: impl FnOnce() -> Result<(), ArenaError>,
    ) -> Result<InstanceId, ArenaError> {
        let exhausted = || ArenaError::IdSpaceExhausted(self.own_range);
        let first = self.next_id;
        let end = first
            .checked_add(u64::from(count.max(1)))
            .filter(|end| *end <= self.own_range.end())
            .ok_or_else(exhausted)?;
        room()?;
        // Ranges start at 1, so the counter is never zero.
        let first_id = InstanceId::new(first).ok_or_else(exhausted)?;
        self.next_id = end;
        Ok(first_id)
    }

    /// Records that `id`, checked to be neither retired nor in use, was inserted: an id of the
    /// own range moves the counter past it.
    pub(crate) fn inserted(&mut self, id: InstanceId) {
        if id.range() == self.own_range {
            self.next_id = self.next_id.max(id.get() + 1);
        }
    }

    /// Records that every id of the own range below `next` was issued (an arena rebuilt from
    /// an image continues above everything the imaged arena issued).
    pub(crate) fn inserted_below(&mut self, next: u64) {
        let end = self.own_range.end();
        self.next_id = self.next_id.max(next.min(end));
    }

    /// Takes `count` creation counters and returns the first.
    pub(crate) fn creations(&mut self, count: u32) -> u64 {
        let first = self.created + 1;
        self.created += u64::from(count);
        first
    }

    /// The creation counter the next node will get.
    pub(crate) fn next_creation(&self) -> u64 {
        self.created + 1
    }

    /// How many creation counters were taken.
    pub(crate) fn creations_taken(&self) -> u64 {
        self.created
    }

    /// How many persistent-id counter values were taken.
    pub(crate) fn persistent_taken(&self) -> u64 {
        self.persistent
    }

    /// Continues the creation and persistent-id counters of another arena (rebuilt from its
    /// image): each moves up to the other's, never down.
    pub(crate) fn continue_counters(&mut self, created: u64, persistent: u64) {
        self.created = self.created.max(created);
        self.persistent = self.persistent.max(persistent);
    }

    /// The next persistent-id counter value.
    pub(crate) fn next_persistent(&mut self) -> u64 {
        self.persistent += 1;
        self.persistent
    }
}

/// The slots emptied by reclamation or rollback, ready for reuse.
#[derive(Clone, Debug, Default)]
pub(crate) struct SlotPool {
    free: Vec<Slot>,
}

impl SlotPool {
    /// Refuses when `count` more instances would not fit, given the high-water mark
    /// `slot_len` (free slots first, then fresh ones up to `u32::MAX`).
    pub(crate) fn check_room(&self, count: u32, slot_len: u32) -> Result<(), ArenaError> {
        let fresh_needed = u64::from(count).saturating_sub(self.free.len() as u64);
        if u64::from(slot_len) + fresh_needed > u64::from(u32::MAX) {
            return Err(ArenaError::SlotsExhausted);
        }
        Ok(())
    }

    /// A free slot (the most recently freed), or the fresh one at `slot_len`. Callers check
    /// room first.
    pub(crate) fn take(&mut self, slot_len: u32) -> Slot {
        self.free.pop().unwrap_or_else(|| {
            debug_assert!(slot_len < u32::MAX, "slot room is checked first");
            Slot(slot_len)
        })
    }

    /// Appends `count` slots to `slots` as `count` calls of [`SlotPool::take`] would take
    /// them: free ones first (most recently freed first), then fresh ones from `slot_len` on.
    pub(crate) fn take_many(&mut self, count: u32, slot_len: u32, slots: &mut Vec<Slot>) {
        let count = count as usize;
        let reused = count.min(self.free.len());
        let from = self.free.len() - reused;
        slots.extend(self.free.drain(from..).rev());
        debug_assert!(
            u64::from(slot_len) + (count - reused) as u64 <= u64::from(u32::MAX),
            "slot room is checked first"
        );
        slots.extend((0..(count - reused) as u32).map(|k| Slot(slot_len + k)));
    }

    /// How many free slots the pool holds.
    pub(crate) fn free_len(&self) -> usize {
        self.free.len()
    }

    /// Returns an emptied slot to the pool.
    pub(crate) fn release(&mut self, slot: Slot) {
        self.free.push(slot);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_reservation_takes_nothing() {
        let mut ids = IdAllocator::new(IdRange::Server);
        let refused = ids.reserve(3, || Err(ArenaError::SlotsExhausted));
        assert_eq!(refused, Err(ArenaError::SlotsExhausted));
        assert_eq!(ids.next_id(), 1);
        assert_eq!(ids.reserve(3, || Ok(())).map(InstanceId::get), Ok(1));
        assert_eq!(ids.next_id(), 4);
    }

    #[test]
    fn slots_come_back_most_recent_first() {
        let mut pool = SlotPool::default();
        pool.release(Slot(4));
        pool.release(Slot(9));
        let mut many = Vec::new();
        pool.take_many(3, 20, &mut many);
        assert_eq!(many, vec![Slot(9), Slot(4), Slot(20)]);
        assert_eq!(pool.take(21), Slot(21));
    }
}
