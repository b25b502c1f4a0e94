//! `BoundedJournal<T>`: a bounded history with absolute sequence numbers.
//!
//! Invariant: the entry at position `i` of `entries` has sequence number `floor + i`; sequence
//! numbers only grow. When the journal is full, the older half is dropped in one step and the
//! floor advances past it. A reader keeps a cursor (the `head` it last saw); a cursor below the
//! floor, or above the head, cannot be served and gets [`HistoryUnavailable`] rather than a
//! silently incomplete suffix.

use std::collections::VecDeque;
use std::collections::vec_deque;

/// A bounded, append-only history. One type serves the part-write log, the topology journal and
/// the component store's removal logs.
#[derive(Clone, Debug)]
pub struct BoundedJournal<T> {
    entries: VecDeque<T>,
    capacity: usize,
    floor: u64,
}

/// A reader asked for entries the journal no longer (or never) held.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("history unavailable: cursor {requested} is outside the retained range {floor}..={head}")]
pub struct HistoryUnavailable {
    /// The cursor the reader supplied.
    pub requested: u64,
    /// The sequence number of the oldest retained entry.
    pub floor: u64,
    /// The sequence number the next entry will get.
    pub head: u64,
}

impl<T> BoundedJournal<T> {
    /// Creates an empty journal holding at most `capacity` entries (at least 2).
    pub fn new(capacity: usize) -> Self {
        Self {
            entries: VecDeque::new(),
            capacity: capacity.max(2),
            floor: 0,
        }
    }

    /// Appends an entry and returns its sequence number. Drops the older half first when full.
    pub fn push(&mut self, entry: T) -> u64 {
        if self.entries.len() == self.capacity {
            let dropped = self.capacity / 2;
            self.entries.drain(..dropped);
            self.floor += dropped as u64;
        }
        self.entries.push_back(entry);
        self.head() - 1
    }

    /// The sequence number the next entry will get: the cursor a reader stores after reading.
    pub fn head(&self) -> u64 {
        self.floor + self.entries.len() as u64
    }

    /// The sequence number of the oldest retained entry.
    pub fn floor(&self) -> u64 {
        self.floor
    }

    /// How many entries are retained.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no entries are retained.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The most entries the journal retains.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The entries from `cursor` (inclusive) to the head, or `HistoryUnavailable` when some of
    /// them were dropped or the cursor is not one this journal issued.
    pub fn read_since(&self, cursor: u64) -> Result<JournalRead<'_, T>, HistoryUnavailable> {
        if cursor < self.floor || cursor > self.head() {
            return Err(HistoryUnavailable {
                requested: cursor,
                floor: self.floor,
                head: self.head(),
            });
        }
        let start = (cursor - self.floor) as usize;
        Ok(JournalRead {
            inner: self.entries.range(start..),
            next_seq: cursor,
            head: self.head(),
        })
    }

    /// Drops entries at or after `head`, restoring an earlier head (construction rollback).
    /// Does nothing when `head` is not inside the retained range.
    pub(crate) fn truncate_to(&mut self, head: u64) {
        if head >= self.floor && head <= self.head() {
            self.entries.truncate((head - self.floor) as usize);
        }
    }
}

/// The entries a reader has not seen yet, oldest first, with their sequence numbers.
#[derive(Clone, Debug)]
pub struct JournalRead<'a, T> {
    inner: vec_deque::Iter<'a, T>,
    next_seq: u64,
    head: u64,
}

impl<T> JournalRead<'_, T> {
    /// The cursor to store for the next read.
    pub fn head(&self) -> u64 {
        self.head
    }
}

impl<'a, T> Iterator for JournalRead<'a, T> {
    type Item = (u64, &'a T);

    fn next(&mut self) -> Option<Self::Item> {
        let entry = self.inner.next()?;
        let seq = self.next_seq;
        self.next_seq += 1;
        Some((seq, entry))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl<T> ExactSizeIterator for JournalRead<'_, T> {}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(read: JournalRead<'_, u32>) -> Vec<u32> {
        read.map(|(_, v)| *v).collect()
    }

    #[test]
    fn reads_everything_after_a_cursor() {
        let mut j = BoundedJournal::new(8);
        for v in 0..5 {
            j.push(v);
        }
        assert_eq!(values(j.read_since(0).unwrap()), vec![0, 1, 2, 3, 4]);
        assert_eq!(values(j.read_since(3).unwrap()), vec![3, 4]);
        assert!(j.read_since(5).unwrap().next().is_none());
        assert_eq!(j.read_since(5).unwrap().head(), 5);
    }

    #[test]
    fn full_journal_drops_older_half() {
        let mut j = BoundedJournal::new(8);
        for v in 0..9 {
            j.push(v);
        }
        assert_eq!(j.len(), 5);
        assert_eq!(j.floor(), 4);
        assert_eq!(j.head(), 9);
        let read = j.read_since(4).unwrap();
        let seqs: Vec<u64> = read.map(|(s, _)| s).collect();
        assert_eq!(seqs, vec![4, 5, 6, 7, 8]);
    }

    #[test]
    fn cursor_below_floor_is_history_unavailable() {
        let mut j = BoundedJournal::new(4);
        for v in 0..10 {
            j.push(v);
        }
        let err = j.read_since(1).unwrap_err();
        assert_eq!(err.requested, 1);
        assert_eq!(err.floor, j.floor());
        assert!(j.read_since(j.floor()).is_ok());
    }

    #[test]
    fn cursor_beyond_head_is_rejected() {
        let mut j = BoundedJournal::new(4);
        j.push(1u32);
        assert!(j.read_since(2).is_err());
    }

    #[test]
    fn repeated_entries_are_kept() {
        let mut j = BoundedJournal::new(16);
        j.push(7u32);
        j.push(7u32);
        assert_eq!(values(j.read_since(0).unwrap()), vec![7, 7]);
    }

    #[test]
    fn truncate_restores_an_earlier_head() {
        let mut j = BoundedJournal::new(16);
        j.push(1u32);
        let head = j.head();
        j.push(2);
        j.push(3);
        j.truncate_to(head);
        assert_eq!(j.head(), head);
        assert_eq!(values(j.read_since(0).unwrap()), vec![1]);
    }
}
