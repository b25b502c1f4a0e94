//! `BoundedJournal<T>`: a bounded history with absolute sequence numbers.
//!
//! Invariant: entries are kept oldest first with strictly increasing sequence numbers, all at
//! or above `floor` and below `head`; sequence numbers and `head` only grow, so a number is
//! never given to two entries. When the journal is full, the older half is dropped in one step
//! and the floor advances past it. A reader keeps a cursor (the `head` it last saw); a cursor
//! that cannot be served gets [`HistoryUnavailable`] rather than a silently incomplete or wrong
//! suffix: below the floor (dropped), above the head (never issued), or inside a retracted
//! stretch (the reader saw entries a construction rollback has since removed). The journal
//! remembers at most `capacity` retracted stretches; beyond, the older half is forgotten and the
//! floor moves past them, as it does past dropped entries.

use std::collections::VecDeque;
use std::collections::vec_deque;

/// A bounded, append-only history. One type serves the part-write log, the topology journal and
/// the component store's removal logs.
#[derive(Debug)]
pub struct BoundedJournal<T> {
    /// (sequence number, entry), oldest first.
    entries: VecDeque<(u64, T)>,
    capacity: usize,
    floor: u64,
    head: u64,
    /// Retracted stretches `(start, end)`, disjoint and sorted: cursors `c` with
    /// `start < c <= end` saw entries that were removed afterwards. Only stretches reaching the
    /// floor or above are kept, and at most `capacity` of them.
    retracted: Vec<(u64, u64)>,
}

impl<T: Clone> Clone for BoundedJournal<T> {
    fn clone(&self) -> Self {
        Self {
            entries: self.entries.clone(),
            capacity: self.capacity,
            floor: self.floor,
            head: self.head,
            retracted: self.retracted.clone(),
        }
    }

    /// Reuses this journal's buffers (a copy-on-write copy made into a spare).
    fn clone_from(&mut self, source: &Self) {
        self.entries.clone_from(&source.entries);
        self.capacity = source.capacity;
        self.floor = source.floor;
        self.head = source.head;
        self.retracted.clone_from(&source.retracted);
    }
}

/// A reader asked for entries the journal no longer (or never) held, or for a history a
/// construction rollback has rewritten since the reader's cursor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "history unavailable: cursor {requested} cannot be served (retained range {floor}..={head})"
)]
pub struct HistoryUnavailable {
    /// The cursor the reader supplied.
    pub requested: u64,
    /// The oldest cursor the journal can still serve (one past the last dropped entry).
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
            head: 0,
            retracted: Vec::new(),
        }
    }

    /// Appends an entry and returns its sequence number. Drops the older half first when full.
    pub fn push(&mut self, entry: T) -> u64 {
        if self.entries.len() == self.capacity {
            let dropped = self.capacity / 2;
            // The capacity is at least 2, so the journal holds the last dropped entry.
            if let Some(&(last, _)) = self.entries.get(dropped - 1) {
                self.floor = last + 1;
            }
            self.entries.drain(..dropped);
            let floor = self.floor;
            self.retracted.retain(|&(_, end)| end >= floor);
        }
        let seq = self.head;
        self.entries.push_back((seq, entry));
        self.head += 1;
        seq
    }

    /// Appends every entry of `entries` in order, leaving exactly what pushing them one by one
    /// leaves (the same retained entries, sequence numbers, floor and head), but writing only
    /// the entries that survive: a batch larger than the journal skips the ones a full journal
    /// would drop at once. Returns the sequence number of the first (the head before).
    pub fn extend<I>(&mut self, entries: I) -> u64
    where
        I: IntoIterator<Item = T>,
        I::IntoIter: ExactSizeIterator,
    {
        let first = self.head;
        let entries = entries.into_iter();
        let (held, added) = (self.entries.len(), entries.len());
        let (capacity, half) = (self.capacity, self.capacity / 2);
        // How many of the held and added entries single pushes would drop: none until the
        // journal is full, then `half` on the push that finds it full and on every `half`-th
        // push after.
        let dropped = match (held + added).checked_sub(capacity) {
            None | Some(0) => 0,
            Some(past) => past.div_ceil(half) * half,
        };
        if dropped > 0 {
            // The last entry dropped: a held one, or an added one (numbered from the head).
            let last = if dropped <= held {
                self.entries.get(dropped - 1).map(|(seq, _)| *seq)
            } else {
                Some(first + (dropped - held - 1) as u64)
            };
            if let Some(last) = last {
                self.floor = last + 1;
            }
            self.entries.drain(..dropped.min(held));
            let floor = self.floor;
            self.retracted.retain(|&(_, end)| end >= floor);
        }
        let skipped = dropped.saturating_sub(held);
        self.entries.extend(
            entries
                .enumerate()
                .skip(skipped)
                .map(|(k, entry)| (first + k as u64, entry)),
        );
        self.head = first + added as u64;
        first
    }

    /// The sequence number the next entry will get: the cursor a reader stores after reading.
    pub fn head(&self) -> u64 {
        self.head
    }

    /// The oldest cursor that can still be served: one past the last dropped entry.
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
    /// them were dropped, the cursor is not one this journal issued, or entries the cursor's
    /// reader saw were retracted since.
    ///
    /// # Errors
    ///
    /// [`HistoryUnavailable`] when entries after `cursor` were dropped, the cursor is not one this
    /// journal issued, or entries its reader saw were retracted since.
    pub fn read_since(&self, cursor: u64) -> Result<JournalRead<'_, T>, HistoryUnavailable> {
        // Stretches are disjoint and sorted: only the last one starting below the cursor can
        // hold it.
        let below = self.retracted.partition_point(|&(start, _)| start < cursor);
        let retracted = below > 0 && cursor <= self.retracted[below - 1].1;
        if cursor < self.floor || cursor > self.head || retracted {
            return Err(HistoryUnavailable {
                requested: cursor,
                floor: self.floor,
                head: self.head,
            });
        }
        let start = self.entries.partition_point(|(seq, _)| *seq < cursor);
        Ok(JournalRead {
            inner: self.entries.range(start..),
            head: self.head,
        })
    }

    /// Removes every entry at or after `mark` (a head this journal returned earlier) for a
    /// construction rollback, without reissuing their sequence numbers: the head moves one past
    /// the old head, and cursors that saw any removed entry (`mark < cursor <= old head`) are
    /// refused from now on. A reader at `mark` or earlier reads on as if the entries had never
    /// been written. Nothing happens when no entry was written since `mark`.
    pub(crate) fn retract_from(&mut self, mark: u64) {
        if mark >= self.head {
            return;
        }
        let keep = self.entries.partition_point(|(seq, _)| *seq < mark);
        self.entries.truncate(keep);
        let end = self.head;
        self.head += 1;
        if mark < self.floor {
            // Everything the batch left retained is gone, and so is everything before it.
            self.floor = self.head;
            self.retracted.clear();
        } else {
            self.retracted.retain(|&(start, _)| start < mark);
            if self.retracted.len() == self.capacity {
                // As many stretches as entries: forget the older half of them, and with them
                // the history up to the end of the last one forgotten (cursors there could not
                // tell a retracted entry from a kept one any more).
                let dropped = self.capacity / 2;
                let (_, last_end) = self.retracted[dropped - 1];
                self.retracted.drain(..dropped);
                self.floor = last_end + 1;
                let keep_from = self.entries.partition_point(|(seq, _)| *seq < self.floor);
                self.entries.drain(..keep_from);
            }
            self.retracted.push((mark, end));
        }
    }
}

/// The entries a reader has not seen yet, oldest first, with their sequence numbers.
#[derive(Clone, Debug)]
pub struct JournalRead<'a, T> {
    inner: vec_deque::Iter<'a, (u64, T)>,
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
        self.inner.next().map(|(seq, entry)| (*seq, entry))
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
    fn retraction_removes_entries_without_reissuing_their_numbers() {
        let mut j = BoundedJournal::new(16);
        j.push(1u32);
        let mark = j.head();
        j.push(2);
        let inside = j.head();
        j.push(3);
        let end = j.head();
        j.retract_from(mark);
        assert_eq!(j.head(), end + 1, "the head moves forward");
        assert_eq!(values(j.read_since(0).unwrap()), vec![1]);
        assert_eq!(values(j.read_since(mark).unwrap()), Vec::<u32>::new());
        assert!(j.read_since(inside).is_err());
        assert!(j.read_since(end).is_err());
        let seq = j.push(4);
        assert_eq!(seq, end + 1);
        let read: Vec<(u64, u32)> = j.read_since(0).unwrap().map(|(s, v)| (s, *v)).collect();
        assert_eq!(read, vec![(0, 1), (seq, 4)]);
        assert_eq!(values(j.read_since(mark).unwrap()), vec![4]);
        assert!(
            j.read_since(end).is_err(),
            "a retracted cursor stays refused"
        );
        // Nothing written since the mark: nothing to retract.
        let head = j.head();
        j.retract_from(head);
        assert_eq!(j.head(), head);
    }

    #[test]
    fn retraction_past_the_floor_empties_the_journal() {
        let mut j = BoundedJournal::new(4);
        j.push(0u32);
        let mark = j.head();
        for v in 1..10 {
            j.push(v);
        }
        assert!(j.floor() > mark);
        j.retract_from(mark);
        assert!(j.is_empty());
        assert_eq!(j.floor(), j.head());
        assert!(
            j.read_since(mark).is_err(),
            "what preceded the mark was dropped"
        );
        let fresh = j.head();
        j.push(42);
        assert_eq!(values(j.read_since(fresh).unwrap()), vec![42]);
    }

    #[test]
    fn repeated_retractions_keep_the_journal_bounded() {
        // Rollbacks of batches that each wrote one entry, with nothing kept between them: the
        // entries never fill the journal, yet the retracted stretches must not pile up.
        let mut j = BoundedJournal::new(8);
        let reader = j.head();
        let mut last_mark = reader;
        for v in 0..1000u32 {
            last_mark = j.head();
            j.push(v);
            j.retract_from(last_mark);
            assert!(j.retracted.len() <= 8, "{} stretches", j.retracted.len());
        }
        assert!(
            j.read_since(reader).is_err(),
            "an old cursor missed history"
        );
        assert!(j.read_since(last_mark).is_ok(), "the last mark reads on");
        assert!(
            j.read_since(last_mark + 1).is_err(),
            "a retracted cursor is refused"
        );
        let seq = j.push(7);
        assert_eq!(values(j.read_since(j.floor()).unwrap()), vec![7]);
        assert_eq!(seq, j.head() - 1);
    }

    #[test]
    fn dropping_the_older_half_forgets_retractions_below_the_floor() {
        let mut j = BoundedJournal::new(4);
        j.push(0u32);
        let mark = j.head();
        j.push(1);
        j.retract_from(mark);
        assert!(j.read_since(mark + 1).is_err());
        for v in 2..12 {
            j.push(v);
        }
        assert!(j.floor() > mark + 2);
        assert!(j.read_since(mark + 1).is_err(), "now below the floor");
        assert_eq!(j.len(), 3);
        let floor = j.floor();
        assert_eq!(j.read_since(floor).unwrap().count(), 3);
    }
}
