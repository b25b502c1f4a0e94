//! `ChangeLog`: the rows of a set whose changed tick rose, in tick order, so a changed filter
//! reads only what changed after its baseline; and `Changes`, what a reader gets from it.
//!
//! Invariant: entries are sorted by tick (each is appended at the tick of the change it records,
//! and ticks only grow), and every tick in the log is above `base`; `base` only grows. The log
//! holds at most `bound(rows)` entries after a push: when full, its older half is dropped and
//! `base` moves to the tick of the last entry dropped, so the entries after `base` are still all
//! there. What the entries must cover (every change after `base` not visible otherwise) is the
//! change tracking's invariant (see `track.rs`).

use strata_arena::{InstanceId, Slot};

use crate::set::{ComponentSet, InstanceRef, Tick};

/// The fewest entries a log may hold before it drops its older half.
const MIN_BOUND: usize = 64;

/// The most entries the log of a set of `rows` rows holds: a quarter of the rows (at least
/// [`MIN_BOUND`]). A reader whose baseline predates the log scans the set instead, which costs
/// no more than four times reading a full log.
#[inline(always)]
pub(crate) const fn bound(rows: usize) -> usize {
    let quarter = rows / 4;
    if quarter > MIN_BOUND {
        quarter
    } else {
        MIN_BOUND
    }
}

/// One logged change: the instance, its row then (a hint: rows move on removal), and the tick.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry {
    tick: Tick,
    id: InstanceId,
    slot: Slot,
    row: u32,
}

impl Entry {
    /// The row of `id` (at `slot`) changed, or moved to `row`, at `tick`.
    #[inline(always)]
    pub(crate) fn new(tick: Tick, id: InstanceId, slot: Slot, row: usize) -> Self {
        Self {
            tick,
            id,
            slot,
            row: row as u32,
        }
    }

    /// The instance's present row in `set`, using the hint when it still holds.
    #[inline]
    fn resolve(&self, set: &ComponentSet) -> Option<usize> {
        let hint = self.row as usize;
        if set.ids().get(hint) == Some(&self.id) {
            Some(hint)
        } else {
            set.row_of(InstanceRef::new(self.id, self.slot))
        }
    }
}

/// A set's change log (see the module invariant).
#[derive(Clone, Debug, Default)]
pub(crate) struct ChangeLog {
    entries: Vec<Entry>,
    base: Tick,
}

impl ChangeLog {
    /// The tick at or before which the log knows nothing.
    #[inline(always)]
    pub(crate) fn base(&self) -> Tick {
        self.base
    }

    /// How many entries the log holds.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Appends an entry (whose tick is at least every logged tick and above the base) to the
    /// log of a set of `rows` rows, dropping the older half first when the log is full.
    #[inline]
    pub(crate) fn push(&mut self, entry: Entry, rows: usize) {
        debug_assert!(entry.tick > self.base, "logged ticks are above the base");
        if self.entries.len() >= bound(rows) {
            self.drop_older_half();
        }
        self.entries.push(entry);
    }

    #[cold]
    fn drop_older_half(&mut self) {
        let cut = self.entries.len().div_ceil(2);
        if let Some(last) = self.entries.get(cut.wrapping_sub(1)) {
            self.base = self.base.max(last.tick);
        }
        self.entries.drain(..cut);
    }

    /// Forgets every entry: the log then knows nothing at or before `tick`.
    pub(crate) fn reset(&mut self, tick: Tick) {
        self.entries.clear();
        self.base = self.base.max(tick);
    }

    /// Prepares for a pass that may log up to `n` entries at `tick` in a set of `rows` rows:
    /// when they might not fit, forgets the log now (its base moves to `tick`) rather than
    /// filling and dropping it part-way. Returns whether the pass's changes must be logged
    /// (`false` once the base is at `tick`).
    #[inline]
    pub(crate) fn prepare(&mut self, n: usize, rows: usize, tick: Tick) -> bool {
        if tick <= self.base {
            return false;
        }
        if self.entries.len() + n > bound(rows) {
            self.reset(tick);
            return false;
        }
        true
    }

    /// The entries logged after `baseline`, or `None` when the log knows nothing of part of
    /// that time (`baseline` is before its base).
    pub(crate) fn since(&self, baseline: Tick) -> Option<&[Entry]> {
        if baseline < self.base {
            return None;
        }
        let start = self.entries.partition_point(|e| e.tick <= baseline);
        Some(&self.entries[start..])
    }
}

/// The rows of a set that may have changed (or been added) after a baseline: the rows its change
/// log recorded since, and the rows added since at the end of the set. Every row whose changed
/// or added tick is after the baseline is among them; some may not be (a row logged since whose
/// add was before the baseline, when only its added tick matters), and a row may come twice, so
/// a reader re-checks each row's ticks and removes duplicates.
#[derive(Clone, Copy, Debug)]
pub struct Changes<'a> {
    set: &'a ComponentSet,
    logged: &'a [Entry],
    added_from: usize,
}

impl<'a> Changes<'a> {
    pub(crate) fn new(set: &'a ComponentSet, logged: &'a [Entry], added_from: usize) -> Self {
        Self {
            set,
            logged,
            added_from,
        }
    }

    /// How many rows (duplicates included) the reader will visit: the cost of reading them.
    pub fn len(&self) -> usize {
        self.logged.len() + (self.set.len() - self.added_from)
    }

    /// Whether there is no row to visit.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The rows to visit, present ones only: first the logged rows in the order logged, then the
    /// rows added since, in row order.
    pub fn rows(&self) -> impl Iterator<Item = usize> + 'a {
        let set = self.set;
        self.logged
            .iter()
            .filter_map(move |entry| entry.resolve(set))
            .chain(self.added_from..set.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(tick: u64) -> Entry {
        Entry::new(
            Tick(tick),
            InstanceId::new(tick + 1).expect("non-zero"),
            Slot::from_index(0),
            0,
        )
    }

    #[test]
    fn a_full_log_drops_its_older_half_and_raises_its_base() {
        let mut log = ChangeLog::default();
        for tick in 1..=64 {
            log.push(entry(tick), 0);
        }
        assert_eq!(log.base(), Tick(0));
        log.push(entry(65), 0);
        assert_eq!(log.base(), Tick(32));
        assert_eq!(log.len(), 33);
        assert!(log.since(Tick(31)).is_none());
        assert_eq!(log.since(Tick(32)).map(<[Entry]>::len), Some(33));
        assert_eq!(log.since(Tick(60)).map(<[Entry]>::len), Some(5));
    }
}
