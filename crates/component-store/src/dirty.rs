//! `DirtyBits`: which fields of which rows changed since the dirty state was last taken, kept
//! as one bitset per field over the rows, a bitset of the rows with any dirty field, and a
//! summary bitset of that one's non-zero words; `DirtyPart`, one task's share of a field's bits
//! in a parallel pass; and `FieldMask`, one row's dirty fields.
//!
//! Invariant: every bitset (each field's and `any`) holds exactly `rows.div_ceil(64)` words, and
//! no bit at or past `rows` is set. Bit `row` of `any` is set iff bit `row` of some field's
//! bitset is. Bit `w` of `summary` is set whenever word `w` of `any` is non-zero (it may also be
//! set for a zero word: readers skip it and clear it, but never for a word past `any`), and
//! `summary` holds `any.len().div_ceil(64)` words. Removing a row moves the last row's bits into its place, as
//! the set moves the last row's values, so bits always follow their rows. `dirty` is the number
//! of bits set in `any`. While a parallel pass holds shares of the bits (`split_field`, which
//! borrows them all, so nothing reads them meanwhile), the shares' words may gain bits that
//! `dirty` and `summary` do not count yet; `join` counts them (and marks the words two shares
//! had in common), or `recount` after a pass that unwound.

/// Which fields of a row changed since the dirty state was last taken.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct FieldMask {
    /// Fields 0 to 63.
    low: u64,
    /// Fields from 64 on, 64 to a word, with no trailing zero word (so equal masks compare
    /// equal, and a mask of a set with at most 64 fields never allocates).
    high: Vec<u64>,
}

impl FieldMask {
    /// Whether a field is in the mask.
    pub fn contains(&self, field: crate::def::FieldId) -> bool {
        let index = field.index();
        let word = match index / 64 {
            0 => self.low,
            w => self.high.get(w - 1).copied().unwrap_or(0),
        };
        word & (1 << (index % 64)) != 0
    }

    /// The fields in the mask, in order.
    pub fn fields(&self) -> impl Iterator<Item = crate::def::FieldId> + '_ {
        std::iter::once(self.low)
            .chain(self.high.iter().copied())
            .enumerate()
            .flat_map(|(w, word)| {
                (0..64u16)
                    .filter(move |bit| word & (1 << bit) != 0)
                    .map(move |bit| crate::def::FieldId(w as u16 * 64 + bit))
            })
    }

    /// Whether no field is in the mask.
    pub fn is_empty(&self) -> bool {
        self.low == 0 && self.high.is_empty()
    }

    /// Adds field `index` to the mask.
    fn insert(&mut self, index: usize) {
        match index / 64 {
            0 => self.low |= 1 << (index % 64),
            w => {
                if self.high.len() < w {
                    self.high.resize(w, 0);
                }
                self.high[w - 1] |= 1 << (index % 64);
            }
        }
    }
}

/// The dirty state of a set's rows (see the module invariant).
#[derive(Debug)]
pub(crate) struct DirtyBits {
    /// One bitset per field, indexed by row.
    fields: Box<[Vec<u64>]>,
    /// Rows with any dirty field.
    any: Vec<u64>,
    /// Words of `any` that may be non-zero.
    summary: Vec<u64>,
    rows: usize,
    /// How many rows have a dirty field.
    dirty: usize,
}

impl Clone for DirtyBits {
    fn clone(&self) -> Self {
        Self {
            fields: self.fields.clone(),
            any: self.any.clone(),
            summary: self.summary.clone(),
            rows: self.rows,
            dirty: self.dirty,
        }
    }

    /// Reuses this state's buffers (a copy-on-write copy made into a spare).
    fn clone_from(&mut self, source: &Self) {
        if self.fields.len() == source.fields.len() {
            for (bits, from) in self.fields.iter_mut().zip(&source.fields) {
                bits.clone_from(from);
            }
        } else {
            self.fields = source.fields.clone();
        }
        self.any.clone_from(&source.any);
        self.summary.clone_from(&source.summary);
        self.rows = source.rows;
        self.dirty = source.dirty;
    }
}

impl DirtyBits {
    /// No rows, for a set of `fields` fields.
    pub(crate) fn new(fields: usize) -> Self {
        Self {
            fields: vec![Vec::new(); fields].into_boxed_slice(),
            any: Vec::new(),
            summary: Vec::new(),
            rows: 0,
            dirty: 0,
        }
    }

    /// How many fields the bits cover.
    pub(crate) fn fields(&self) -> usize {
        self.fields.len()
    }

    /// Appends `n` clean rows.
    #[inline]
    pub(crate) fn push_rows(&mut self, n: usize) {
        self.rows += n;
        let words = self.rows.div_ceil(64);
        if words != self.any.len() {
            self.resize_words(words);
        }
    }

    /// Makes every bitset `words` long, new words clean.
    #[cold]
    fn resize_words(&mut self, words: usize) {
        for bits in self.fields.iter_mut() {
            bits.resize(words, 0);
        }
        self.any.resize(words, 0);
        self.summary.resize(words.div_ceil(64), 0);
        // No summary bit past the words there are.
        if let Some(last) = self.summary.last_mut()
            && !words.is_multiple_of(64)
        {
            *last &= (1 << (words % 64)) - 1;
        }
    }

    /// Marks field `field` of row `row` dirty.
    #[inline(always)]
    pub(crate) fn mark(&mut self, row: usize, field: usize) {
        let (word, bit) = (row / 64, 1u64 << (row % 64));
        self.fields[field][word] |= bit;
        self.dirty += usize::from(self.any[word] & bit == 0);
        self.any[word] |= bit;
        self.summary[word / 64] |= 1 << (word % 64);
    }

    /// Marks field `field` dirty in the rows of word `word` whose bits are set in `mask`.
    #[inline(always)]
    pub(crate) fn mark_word(&mut self, field: usize, word: usize, mask: u64) {
        if mask != 0 {
            self.fields[field][word] |= mask;
            self.dirty += (mask & !self.any[word]).count_ones() as usize;
            self.any[word] |= mask;
            self.summary[word / 64] |= 1 << (word % 64);
        }
    }

    /// Whether field `field` of row `row` is dirty.
    pub(crate) fn contains(&self, row: usize, field: usize) -> bool {
        self.fields
            .get(field)
            .and_then(|bits| bits.get(row / 64))
            .is_some_and(|word| word & (1 << (row % 64)) != 0)
    }

    /// The dirty fields of row `row` (empty past the rows).
    pub(crate) fn mask(&self, row: usize) -> FieldMask {
        let mut mask = FieldMask::default();
        if self
            .any
            .get(row / 64)
            .is_some_and(|w| w & (1 << (row % 64)) != 0)
        {
            for field in 0..self.fields.len() {
                if self.contains(row, field) {
                    mask.insert(field);
                }
            }
        }
        mask
    }

    /// How many rows have a dirty field.
    #[inline]
    pub(crate) fn count(&self) -> usize {
        self.dirty
    }

    /// Removes row `row`: the last row's bits move into its place and the last row goes.
    #[inline]
    pub(crate) fn swap_remove(&mut self, row: usize) {
        let last = self.rows - 1;
        let (last_word, last_bit) = (last / 64, 1u64 << (last % 64));
        let (word, bit) = (row / 64, 1u64 << (row % 64));
        // Neither row dirty (the common case): no field's bits to move.
        if (self.any[last_word] & last_bit) | (self.any[word] & bit) != 0 {
            self.move_bits(word, bit, last_word, last_bit);
        }
        self.rows = last;
        let words = last.div_ceil(64);
        if words != self.any.len() {
            self.resize_words(words);
        }
    }

    /// Moves row `from`'s bits into row `to` (a row being removed, whose dirty state goes),
    /// clearing them at `from`: a step of a compaction that truncates the rows afterwards.
    #[inline]
    pub(crate) fn move_row(&mut self, from: usize, to: usize) {
        let (from_word, from_bit) = (from / 64, 1u64 << (from % 64));
        let (word, bit) = (to / 64, 1u64 << (to % 64));
        if (self.any[from_word] & from_bit) | (self.any[word] & bit) != 0 {
            self.move_bits(word, bit, from_word, from_bit);
        }
    }

    /// Keeps the first `len` rows: the dirty state of the others goes with them.
    pub(crate) fn truncate_rows(&mut self, len: usize) {
        if len >= self.rows {
            return;
        }
        for row in len..self.rows {
            let (word, bit) = (row / 64, 1u64 << (row % 64));
            if self.any[word] & bit != 0 {
                self.dirty -= 1;
                for bits in self.fields.iter_mut().chain(std::iter::once(&mut self.any)) {
                    bits[word] &= !bit;
                }
            }
        }
        self.rows = len;
        let words = len.div_ceil(64);
        if words != self.any.len() {
            self.resize_words(words);
        }
    }

    /// Moves bit `last_bit` of word `last_word` into bit `bit` of word `word` in every bitset,
    /// clearing it where it was.
    #[cold]
    fn move_bits(&mut self, word: usize, bit: u64, last_word: usize, last_bit: u64) {
        let moves = (word, bit) != (last_word, last_bit);
        // The removed row's dirty state goes with it.
        self.dirty -= usize::from(self.any[word] & bit != 0);
        for bits in self.fields.iter_mut().chain(std::iter::once(&mut self.any)) {
            if moves {
                if bits[last_word] & last_bit != 0 {
                    bits[word] |= bit;
                } else {
                    bits[word] &= !bit;
                }
            }
            bits[last_word] &= !last_bit;
        }
        if self.any[word] & bit != 0 {
            self.summary[word / 64] |= 1 << (word % 64);
        }
    }

    /// Every row with a dirty field, in row order, with its dirty fields; leaves every row
    /// clean.
    pub(crate) fn take(&mut self) -> Vec<(usize, FieldMask)> {
        let mut out = Vec::with_capacity(self.dirty);
        self.dirty = 0;
        for s in 0..self.summary.len() {
            let mut summary = std::mem::take(&mut self.summary[s]);
            while summary != 0 {
                let word = s * 64 + summary.trailing_zeros() as usize;
                summary &= summary - 1;
                let mut any = std::mem::take(&mut self.any[word]);
                while any != 0 {
                    let bit = any.trailing_zeros() as usize;
                    any &= any - 1;
                    let mut mask = FieldMask::default();
                    for (field, bits) in self.fields.iter().enumerate() {
                        if bits[word] & (1 << bit) != 0 {
                            mask.insert(field);
                        }
                    }
                    out.push((word * 64 + bit, mask));
                }
                for bits in self.fields.iter_mut() {
                    bits[word] = 0;
                }
            }
        }
        out
    }

    /// Removes every row, keeping the buffers.
    pub(crate) fn truncate(&mut self) {
        self.rows = 0;
        self.dirty = 0;
        self.resize_words(0);
    }

    /// Field `field`'s bits cut into one share per stretch of rows, for the tasks of a parallel
    /// pass: stretch `k` runs from `starts[k]` (ascending, distinct, below the rows) to
    /// `starts[k + 1]`, the last to the end of the rows. Share `k` holds the words of the
    /// field's bitset and of `any` that start in its stretch; the bits of the word its stretch
    /// starts in, when that word starts before it, are kept aside for [`DirtyBits::join`], as
    /// are the count and the summary, which the shares leave untouched until then.
    pub(crate) fn split_field(&mut self, field: usize, starts: &[usize]) -> Vec<DirtyPart<'_>> {
        let mut parts = Vec::with_capacity(starts.len());
        let first = starts.first().map_or(0, |start| start.div_ceil(64));
        let (_, mut bits) = self.fields[field].split_at_mut(first);
        let (_, mut any) = self.any.split_at_mut(first);
        let mut at = first;
        for (k, &start) in starts.iter().enumerate() {
            let end = starts
                .get(k + 1)
                .map_or(self.rows.div_ceil(64), |next| next.div_ceil(64));
            let (own_bits, rest_bits) = std::mem::take(&mut bits).split_at_mut(end - at);
            let (own_any, rest_any) = std::mem::take(&mut any).split_at_mut(end - at);
            bits = rest_bits;
            any = rest_any;
            parts.push(DirtyPart {
                first_word: at,
                bits: own_bits,
                any: own_any,
                head_word: start / 64,
                head: 0,
                newly: 0,
                summary: Vec::new(),
            });
            at = end;
        }
        parts
    }

    /// Completes a parallel pass over field `field` with what its shares did
    /// ([`DirtyPart::done`]): the bits of the words shares kept aside, the count and the
    /// summary.
    pub(crate) fn join(&mut self, field: usize, done: impl IntoIterator<Item = DirtyDone>) {
        for part in done {
            self.dirty += part.newly;
            for (word, bits) in part.summary {
                self.summary[word] |= bits;
            }
            self.mark_word(field, part.head_word, part.head);
        }
    }

    /// Recomputes the count and the summary from the bits: after a parallel pass unwound
    /// before [`DirtyBits::join`], whatever its shares had marked.
    #[cold]
    pub(crate) fn recount(&mut self) {
        self.dirty = self.any.iter().map(|word| word.count_ones() as usize).sum();
        self.summary.fill(0);
        for (word, bits) in self.any.iter().enumerate() {
            if *bits != 0 {
                self.summary[word / 64] |= 1 << (word % 64);
            }
        }
    }
}

/// One task's share of a field's dirty bits in a parallel pass (see
/// [`DirtyBits::split_field`]): the words of the field's bitset and of `any` that start in its
/// stretch of rows. It marks those words in place; the bits of the word its stretch starts in
/// (when that word starts before it and so belongs to the share before), how many rows became
/// dirty and which summary bits to set wait in the share for [`DirtyBits::join`].
pub(crate) struct DirtyPart<'a> {
    /// The index of the first word held.
    first_word: usize,
    bits: &'a mut [u64],
    any: &'a mut [u64],
    /// The word the stretch starts in, and the bits marked in it while it is not held.
    head_word: usize,
    head: u64,
    /// How many rows of the held words became dirty.
    newly: usize,
    /// Summary words (index, bits) of held words that became non-zero, ascending.
    summary: Vec<(usize, u64)>,
}

/// What a [`DirtyPart`] leaves for [`DirtyBits::join`].
pub(crate) struct DirtyDone {
    head_word: usize,
    head: u64,
    newly: usize,
    summary: Vec<(usize, u64)>,
}

impl DirtyPart<'_> {
    /// Marks the field dirty in the rows of word `word` whose bits are set in `mask`: rows of
    /// this share's stretch, in words that ascend from one call to the next.
    #[inline(always)]
    pub(crate) fn mark_word(&mut self, word: usize, mask: u64) {
        let Some(at) = word.checked_sub(self.first_word) else {
            debug_assert_eq!(word, self.head_word, "a share marks only its own rows");
            self.head |= mask;
            return;
        };
        let before = self.any[at];
        self.bits[at] |= mask;
        self.any[at] = before | mask;
        let new = mask & !before;
        if new != 0 {
            self.newly += new.count_ones() as usize;
            if before == 0 {
                self.note_summary(word);
            }
        }
    }

    /// Notes that word `word` became non-zero.
    #[inline]
    fn note_summary(&mut self, word: usize) {
        let (index, bit) = (word / 64, 1u64 << (word % 64));
        match self.summary.last_mut() {
            Some((last, bits)) if *last == index => *bits |= bit,
            _ => self.summary.push((index, bit)),
        }
    }

    /// What the share leaves for [`DirtyBits::join`].
    pub(crate) fn done(self) -> DirtyDone {
        DirtyDone {
            head_word: self.head_word,
            head: self.head,
            newly: self.newly,
            summary: self.summary,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_follow_rows_through_removals() {
        let mut dirty = DirtyBits::new(2);
        dirty.push_rows(130);
        dirty.mark(129, 1);
        dirty.mark(129, 0);
        dirty.mark(3, 0);
        dirty.mark(7, 1);
        assert_eq!(dirty.count(), 3);
        // Row 129 moves to 7, taking both its bits; 7's own go.
        dirty.swap_remove(7);
        assert_eq!(dirty.count(), 2, "a removed dirty row no longer counts");
        assert!(dirty.contains(7, 0) && dirty.contains(7, 1));
        assert_eq!(dirty.any.len(), 3);
        // Row 128 (clean) moves to 3; the third word goes with the last row in it.
        dirty.swap_remove(3);
        assert_eq!(dirty.count(), 1);
        assert!(!dirty.contains(3, 0) && !dirty.contains(3, 1));
        assert_eq!(dirty.any.len(), 2);
        let counted: usize = dirty.any.iter().map(|w| w.count_ones() as usize).sum();
        assert_eq!(dirty.count(), counted);
        let taken = dirty.take();
        assert_eq!(taken.len(), 1);
        assert_eq!(taken[0].0, 7);
        assert!(taken[0].1.contains(crate::def::FieldId(0)));
        assert!(taken[0].1.contains(crate::def::FieldId(1)));
        assert_eq!(dirty.count(), 0);
        assert!(dirty.take().is_empty());
    }
}
