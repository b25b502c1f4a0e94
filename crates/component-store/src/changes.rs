//! `ChangeLog`: the positions of a set's rows whose changed tick rose, in tick order, so a
//! changed filter reads only what changed after its baseline; and `Changes`, what a reader gets
//! from it.
//!
//! Invariant: `ticks` and `rows` have one entry per logged change; entries are sorted by tick
//! (each is appended at the tick of the change it records, and ticks only grow), and every
//! tick in the log is above `base`; `base` only grows. The log holds at most `bound(rows)`
//! entries after a push: when full, its older half is dropped and `base` moves to the tick of
//! the last entry dropped, so the entries after `base` are still all there. What the entries
//! must cover (every change after `base` not visible otherwise) is the change tracking's
//! invariant (see `track.rs`).

use crate::set::{ComponentSet, Tick};

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

/// A set's change log (see the module invariant): for each change, its tick and the position
/// of the row it changed (or moved a changed row to).
#[derive(Debug, Default)]
pub(crate) struct ChangeLog {
    ticks: Vec<Tick>,
    rows: Vec<u32>,
    base: Tick,
}

impl Clone for ChangeLog {
    fn clone(&self) -> Self {
        Self {
            ticks: self.ticks.clone(),
            rows: self.rows.clone(),
            base: self.base,
        }
    }

    /// Reuses this log's buffers (a copy-on-write copy made into a spare).
    fn clone_from(&mut self, source: &Self) {
        self.ticks.clone_from(&source.ticks);
        self.rows.clone_from(&source.rows);
        self.base = source.base;
    }
}

impl ChangeLog {
    /// The tick at or before which the log knows nothing.
    #[inline(always)]
    pub(crate) fn base(&self) -> Tick {
        self.base
    }

    /// How many entries the log holds.
    pub(crate) fn len(&self) -> usize {
        self.ticks.len()
    }

    /// Appends that row `row` changed at `tick` (at least every logged tick, and above the
    /// base) to the log of a set of `rows` rows, dropping the older half first when the log is
    /// full.
    #[inline]
    pub(crate) fn push(&mut self, tick: Tick, row: usize, rows: usize) {
        debug_assert!(tick > self.base, "logged ticks are above the base");
        if self.ticks.len() >= bound(rows) {
            self.drop_older_half();
        }
        self.ticks.push(tick);
        self.rows.push(row as u32);
    }

    #[cold]
    fn drop_older_half(&mut self) {
        let cut = self.ticks.len().div_ceil(2);
        if let Some(last) = self.ticks.get(cut.wrapping_sub(1)) {
            self.base = self.base.max(*last);
        }
        self.ticks.drain(..cut);
        self.rows.drain(..cut);
    }

    /// Forgets every entry: the log then knows nothing at or before `tick`.
    pub(crate) fn reset(&mut self, tick: Tick) {
        self.ticks.clear();
        self.rows.clear();
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
        if self.ticks.len() + n > bound(rows) {
            self.reset(tick);
            return false;
        }
        true
    }

    /// How many entries a pass at `tick` in a set of `rows` rows may log before
    /// [`ChangeLog::prepare`] would forget the log instead: none when `tick` is at or below the
    /// base.
    pub(crate) fn room(&self, rows: usize, tick: Tick) -> usize {
        if tick <= self.base {
            return 0;
        }
        bound(rows).saturating_sub(self.ticks.len())
    }

    /// The rows logged after `baseline`, or `None` when the log knows nothing of part of that
    /// time (`baseline` is before its base).
    pub(crate) fn since(&self, baseline: Tick) -> Option<&[u32]> {
        if baseline < self.base {
            return None;
        }
        let start = self.ticks.partition_point(|tick| *tick <= baseline);
        Some(&self.rows[start..])
    }
}

/// The rows of a set that may have changed (or been added) after a baseline: the positions its
/// change log recorded since, and the rows added since at the end of the set. Every row whose
/// changed or added tick is after the baseline is among them; others may be (a position whose
/// row changed and then went, a row logged since whose add was before the baseline when only
/// its added tick matters), and a row may come twice, so a reader re-checks each row's ticks
/// and removes duplicates.
#[derive(Clone, Copy, Debug)]
pub struct Changes<'a> {
    len: usize,
    logged: &'a [u32],
    added_from: usize,
}

impl<'a> Changes<'a> {
    pub(crate) fn new(set: &'a ComponentSet, logged: &'a [u32], added_from: usize) -> Self {
        Self {
            len: set.len(),
            logged,
            added_from,
        }
    }

    /// How many rows (duplicates included) the reader will visit: the cost of reading them.
    pub fn len(&self) -> usize {
        self.logged.len() + (self.len - self.added_from)
    }

    /// Whether there is no row to visit.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The rows to visit, all below the set's length: first the logged positions in the order
    /// logged, then the rows added since, in row order.
    pub fn rows(&self) -> impl Iterator<Item = usize> + 'a {
        let len = self.len;
        self.logged
            .iter()
            .map(|row| *row as usize)
            .filter(move |row| *row < len)
            .chain(self.added_from..len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_log_drops_its_older_half_and_raises_its_base() {
        let mut log = ChangeLog::default();
        for tick in 1..=64 {
            log.push(Tick(tick), 0, 0);
        }
        assert_eq!(log.base(), Tick(0));
        log.push(Tick(65), 0, 0);
        assert_eq!(log.base(), Tick(32));
        assert_eq!(log.len(), 33);
        assert!(log.since(Tick(31)).is_none());
        assert_eq!(log.since(Tick(32)).map(<[u32]>::len), Some(33));
        assert_eq!(log.since(Tick(60)).map(<[u32]>::len), Some(5));
    }
}
