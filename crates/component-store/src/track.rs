//! `Tracking`: a set's change tracking: each row's added and changed ticks, its dirty fields,
//! and the change log; `TrackMut`, the tracking borrowed beside the rows' identities for
//! writers that hold a column at the same time; and `TrackPart`, one task's share of it in a
//! parallel pass (its rows' changed ticks and its share of one field's dirty bits), whose
//! changes `TrackMut::join` and `TrackMut::log_pass` complete (the log entries the shares'
//! changes call for are appended only then, in the pass's order).
//!
//! Invariant: `added`, `changed` and the dirty bits hold one entry per row of the set and move
//! with the rows (the set calls `swap_remove` before it moves the row itself). A row's changed
//! tick is at least its added tick. For every baseline at or above the log's base, every row
//! whose changed (or added) tick is after the baseline is found by one of two means: its
//! present position is logged after the baseline, or it is in the run of rows at the end of the
//! set whose added ticks are all after the baseline. So a write that raises a row's changed
//! tick logs the row's position (once per tick), an add logs nothing, and a removal that moves
//! into the hole a row changed after the log's base logs the row's new position at the
//! removal's tick. (A row added after a baseline that never moved is at or past the set's
//! shortest length since then, and every row there was added after the baseline; a row that
//! moved since its last change was logged where it went.)

use std::panic::{AssertUnwindSafe, catch_unwind};

use strata_arena::InstanceId;

use crate::changes::ChangeLog;
use crate::column::{Scalar, with_room};
use crate::def::FieldId;
use crate::dirty::{DirtyBits, DirtyDone, DirtyPart, FieldMask};
use crate::set::Tick;

/// What a caught panic carries, to resume it once the tracking is whole again.
pub(crate) type Panic = Box<dyn std::any::Any + Send>;

/// How far apart the ticks of one set's rows may be: they are kept as 32-bit offsets from the
/// set's base tick.
const TICK_SPAN: u64 = 1 << 32;

/// How far behind the tick being stored a rebase puts the base: half the span, so the next
/// rebase is at least that many ticks away.
const TICK_KEPT: u64 = 1 << 31;

/// A set's change tracking (see the module invariant).
///
/// The added and changed ticks are kept as offsets from `base` (4 bytes a row each instead of
/// 8). Storing a tick `TICK_SPAN` or more past the base first moves the base to `TICK_KEPT`
/// before that tick, and an offset that would fall below the new base becomes 0: a row whose
/// tick is that old reads as changed at the base. Ticks are the store's mutation counter, so a
/// rebase happens at most once per 2^31 mutations, and only a baseline older than that can see
/// a row as changed after it that was not (the same bound bevy_ecs keeps with its
/// `check_change_ticks`). `Tracking::offset` is the one way a tick is stored.
#[derive(Debug)]
pub(crate) struct Tracking {
    base: Tick,
    added: Vec<u32>,
    changed: Vec<u32>,
    dirty: DirtyBits,
    log: ChangeLog,
}

impl Tracking {
    /// A copy whose per-row ticks have room for `extra` more rows.
    pub(crate) fn clone_with_room(&self, extra: usize) -> Tracking {
        Self {
            base: self.base,
            added: with_room(&self.added, extra),
            changed: with_room(&self.changed, extra),
            dirty: self.dirty.clone(),
            log: self.log.clone(),
        }
    }
}

impl Clone for Tracking {
    fn clone(&self) -> Self {
        self.clone_with_room(0)
    }

    /// Reuses this tracking's buffers (a copy-on-write copy made into a spare).
    fn clone_from(&mut self, source: &Self) {
        self.base = source.base;
        self.added.clone_from(&source.added);
        self.changed.clone_from(&source.changed);
        self.dirty.clone_from(&source.dirty);
        self.log.clone_from(&source.log);
    }
}

impl Tracking {
    /// No rows, for a set of `fields` fields.
    pub(crate) fn new(fields: usize) -> Self {
        Self {
            base: Tick(0),
            added: Vec::new(),
            changed: Vec::new(),
            dirty: DirtyBits::new(fields),
            log: ChangeLog::default(),
        }
    }

    /// The tick each row was added at.
    pub(crate) fn added(&self) -> Ticks<'_> {
        Ticks {
            base: self.base,
            offsets: &self.added,
        }
    }

    /// The tick each row last changed at.
    pub(crate) fn changed(&self) -> Ticks<'_> {
        Ticks {
            base: self.base,
            offsets: &self.changed,
        }
    }

    /// Row `row`'s added tick.
    pub(crate) fn added_at(&self, row: usize) -> Tick {
        self.tick_of(self.added[row])
    }

    /// Row `row`'s changed tick.
    pub(crate) fn changed_at(&self, row: usize) -> Tick {
        self.tick_of(self.changed[row])
    }

    /// `tick` as an offset from the base, after moving the base forward if `tick` is too far
    /// past it (see the type's documentation); a tick before the base is stored as the base.
    #[inline(always)]
    fn offset(&mut self, tick: Tick) -> u32 {
        match tick.0.checked_sub(self.base.0) {
            Some(ahead) if ahead < TICK_SPAN => ahead as u32,
            Some(_) => {
                self.rebase(Tick(tick.0 - TICK_KEPT));
                (tick.0 - self.base.0) as u32
            }
            None => 0,
        }
    }

    /// The tick an offset stands for.
    #[inline(always)]
    fn tick_of(&self, offset: u32) -> Tick {
        Tick(self.base.0 + u64::from(offset))
    }

    /// Moves the base forward to `base`: every offset shrinks by the distance, and one that
    /// would fall below the new base becomes 0.
    #[cold]
    fn rebase(&mut self, base: Tick) {
        let shift = base.0.saturating_sub(self.base.0);
        for offset in self.added.iter_mut().chain(self.changed.iter_mut()) {
            *offset = u64::from(*offset).saturating_sub(shift) as u32;
        }
        self.base = Tick(self.base.0 + shift);
    }

    /// The tracking of a row appended at `tick`: added and changed then, nothing dirty, not
    /// logged (it is at the end of the set).
    #[inline]
    pub(crate) fn push_row(&mut self, tick: Tick) {
        let tick = self.offset(tick);
        self.added.push(tick);
        self.changed.push(tick);
        self.dirty.push_rows(1);
    }

    /// The tracking of `n` rows appended at `tick`.
    pub(crate) fn push_rows(&mut self, n: usize, tick: Tick) {
        let tick = self.offset(tick);
        let len = self.added.len() + n;
        self.added.resize(len, tick);
        self.changed.resize(len, tick);
        self.dirty.push_rows(n);
    }

    /// Removes row `row` at `tick`, before the set moves its last row into its place: logs
    /// the moved row's new position if it changed after the log's base.
    #[inline]
    pub(crate) fn swap_remove(&mut self, row: usize, tick: Tick) {
        let last = self.added.len() - 1;
        if row != last
            && self.tick_of(self.changed[last]) > self.log.base()
            && tick > self.log.base()
        {
            self.log.push(tick, row, last);
        }
        self.added.swap_remove(row);
        self.changed.swap_remove(row);
        self.dirty.swap_remove(row);
    }

    /// Moves row `from`'s tracking into row `to` (a row being removed, `to < from`) at
    /// `tick`, for a compaction that truncates the rows from some point on afterwards: logs
    /// the moved row's new position if it changed after the log's base, as a swap-removal does.
    #[inline]
    pub(crate) fn move_row(&mut self, from: usize, to: usize, tick: Tick) {
        if self.tick_of(self.changed[from]) > self.log.base() && tick > self.log.base() {
            self.log.push(tick, to, self.added.len());
        }
        self.added[to] = self.added[from];
        self.changed[to] = self.changed[from];
        self.dirty.move_row(from, to);
    }

    /// Keeps the first `len` rows' tracking (the rows after them were removed, or never
    /// published). Positions logged past `len` stay in the log: readers re-check what they
    /// find, and skip rows past the end.
    pub(crate) fn truncate(&mut self, len: usize) {
        self.added.truncate(len);
        self.changed.truncate(len);
        self.dirty.truncate_rows(len);
    }

    /// The changes after `baseline`: the entries logged since and where the run of rows added
    /// since starts, or `None` when the log's base is after `baseline`.
    pub(crate) fn since(&self, baseline: Tick) -> Option<(&[u32], usize)> {
        let logged = self.log.since(baseline)?;
        let added_from = self
            .added
            .iter()
            .rposition(|offset| self.tick_of(*offset) <= baseline)
            .map_or(0, |row| row + 1);
        Some((logged, added_from))
    }

    /// Forgets the change log: readers whose baseline is before `tick` scan.
    pub(crate) fn reset_log(&mut self, tick: Tick) {
        self.log.reset(tick);
    }

    /// How many entries the change log holds.
    pub(crate) fn logged(&self) -> usize {
        self.log.len()
    }

    /// The dirty fields of a row.
    pub(crate) fn dirty_mask(&self, row: usize) -> FieldMask {
        self.dirty.mask(row)
    }

    /// How many rows have a dirty field.
    pub(crate) fn dirty_rows(&self) -> usize {
        self.dirty.count()
    }

    /// Every row with a dirty field, in row order, with its dirty fields; cleans them all.
    pub(crate) fn take_dirty(&mut self) -> Vec<(usize, FieldMask)> {
        self.dirty.take()
    }

    /// Whether field `field` of row `row` is dirty.
    pub(crate) fn dirty_contains(&self, row: usize, field: usize) -> bool {
        self.dirty.contains(row, field)
    }

    /// Gives row `row` (just pushed) the tracking of a row it takes over from another set (the
    /// one a redefinition or a load replaces): added at `added`; for each field `f`,
    /// `fields(f)` says whether its value changed and whether it was dirty, and it is dirty if
    /// either; changed at `tick` if any field's value changed, else at `changed`. The change
    /// log is the caller's to reset.
    pub(crate) fn carry(
        &mut self,
        row: usize,
        added: Tick,
        changed: Tick,
        tick: Tick,
        fields: impl Fn(usize) -> (bool, bool),
    ) {
        // The new tick first: storing it may move the base, which the older ticks then follow.
        let tick = self.offset(tick);
        let (added, changed) = (self.offset(added), self.offset(changed));
        let mut any = false;
        for field in 0..self.dirty.fields() {
            let (value_changed, was_dirty) = fields(field);
            any |= value_changed;
            if value_changed || was_dirty {
                self.dirty.mark(row, field);
            }
        }
        self.added[row] = added;
        self.changed[row] = if any { tick } else { changed };
    }

    /// Empties this tracking (keeping its buffers) for rows of a set of `fields` fields.
    pub(crate) fn recycle(&mut self, fields: usize) {
        self.added.clear();
        self.changed.clear();
        if self.dirty.fields() == fields {
            self.dirty.truncate();
        } else {
            self.dirty = DirtyBits::new(fields);
        }
    }

    /// Takes `other`'s rows' tracking (added and changed ticks, dirty bits) in place of this
    /// one's, which `other` gets back, and forgets the change log at `tick`: for a load, which
    /// builds the restored rows' tracking beside the set's.
    pub(crate) fn replace_rows(&mut self, other: &mut Tracking, tick: Tick) {
        std::mem::swap(&mut self.base, &mut other.base);
        std::mem::swap(&mut self.added, &mut other.added);
        std::mem::swap(&mut self.changed, &mut other.changed);
        std::mem::swap(&mut self.dirty, &mut other.dirty);
        self.log.reset(tick);
    }

    /// The tracking borrowed beside the rows' identities.
    pub(crate) fn borrow<'a>(&'a mut self, ids: &'a [InstanceId]) -> TrackMut<'a> {
        TrackMut { track: self, ids }
    }
}

/// A set's tracking borrowed beside its rows' identities, apart from its columns, so a writer
/// can hold a column and record changes at once.
pub(crate) struct TrackMut<'a> {
    track: &'a mut Tracking,
    ids: &'a [InstanceId],
}

impl TrackMut<'_> {
    /// The instance at a row.
    #[inline(always)]
    pub(crate) fn id(&self, row: usize) -> InstanceId {
        self.ids[row]
    }

    /// The instance of each row.
    pub(crate) fn ids(&self) -> &[InstanceId] {
        self.ids
    }

    /// Records a change of field `field` of row `row` at `tick`: the changed tick, a log entry
    /// when the row's changed tick rises (and the log's base is below `tick`), the dirty bit.
    #[inline(always)]
    pub(crate) fn mark(&mut self, row: usize, field: FieldId, tick: Tick) {
        let track = &mut *self.track;
        let at = track.offset(tick);
        let previous = std::mem::replace(&mut track.changed[row], at);
        if previous < at && tick > track.log.base() {
            track.log.push(tick, row, self.ids.len());
        }
        track.dirty.mark(row, field.index());
    }

    /// Prepares for a pass that may change up to `n` rows at `tick` (see
    /// `ChangeLog::prepare`).
    #[inline]
    pub(crate) fn prepare(&mut self, n: usize, tick: Tick) {
        self.track.log.prepare(n, self.ids.len(), tick);
    }

    /// Writes `f(value, read)` into field `field` of rows `start..n` (`n` the shorter of
    /// `values` and `reads`), where `values` is that field's column: each result that differs
    /// bit for bit is stored and recorded at `tick` like [`TrackMut::mark`], one word of dirty
    /// bits at a time, the change log prepared at the first change for the rows from it on (as
    /// every pass does). Returns how many rows changed, and the panic of `f` if it panicked:
    /// then every row stored before the panic is recorded (changed tick, log entry when the log
    /// takes the pass, dirty bit) and the caller completes the pass before it resumes the panic.
    #[inline]
    // Long: one hot loop whose word state (`word`, `stored`) the panic recovery below reads;
    // split into calls, that state would cross a call in the innermost loop.
    pub(crate) fn dense<T: Scalar, R>(
        &mut self,
        field: FieldId,
        values: &mut [T],
        reads: &[R],
        start: usize,
        tick: Tick,
        mut f: impl FnMut(&T, &R) -> T,
    ) -> (usize, Option<Panic>) {
        let n = values.len().min(reads.len()).min(self.ids.len());
        let len = self.ids.len();
        let track = &mut *self.track;
        let at = track.offset(tick);
        let field = field.index();
        let mut count = 0;
        // The word being written and the bits of its rows stored but not yet recorded in the
        // dirty bits (nor, in the plain loop, in the changed ticks): what a panic of `f`
        // leaves to record.
        let mut word = 0;
        let mut stored = 0u64;
        // The plain loop's flags (1 for a row it changed) for the word in progress, with the
        // word's first bit while it runs: packed into `stored` once the word is done, or by
        // the panic recovery.
        let mut flags = [0u8; 64];
        let mut flags_from: Option<usize> = None;
        let run = catch_unwind(AssertUnwindSafe(|| {
            let mut row = start;
            // Nothing is prepared before the first change.
            loop {
                if row >= n {
                    return;
                }
                let next = f(&values[row], &reads[row]);
                if !values[row].identical(&next) {
                    values[row] = next;
                    break;
                }
                row += 1;
            }
            let logging = track.log.prepare(n - row, len, tick);
            if logging && track.changed[row] < at {
                track.log.push(tick, row, len);
            }
            track.changed[row] = at;
            track.dirty.mark(row, field);
            count = 1;
            row += 1;
            while row < n {
                word = row / 64;
                let end = ((word + 1) * 64).min(n);
                if logging {
                    let rows = values[row..end]
                        .iter_mut()
                        .zip(&reads[row..end])
                        .zip(&mut track.changed[row..end]);
                    for (r, ((value, read), changed)) in (row..end).zip(rows) {
                        let next = f(value, read);
                        if !value.identical(&next) {
                            *value = next;
                            if *changed < at {
                                track.log.push(tick, r, len);
                            }
                            *changed = at;
                            stored |= 1 << (r % 64);
                        }
                    }
                } else if !std::mem::needs_drop::<T>() {
                    // Plain values: every result is stored (storing the same bits changes
                    // nothing), so the loop has no branch; each row's flag is a byte, packed
                    // into the word's mask afterwards, and the word's ticks follow the mask.
                    let first_bit = row % 64;
                    flags = [0; 64];
                    flags_from = Some(first_bit);
                    let (word_values, word_reads) = (&mut values[row..end], &reads[row..end]);
                    let word_flags = &mut flags[..word_values.len()];
                    for j in 0..word_values
                        .len()
                        .min(word_reads.len())
                        .min(word_flags.len())
                    {
                        let next = f(&word_values[j], &word_reads[j]);
                        word_flags[j] = u8::from(!word_values[j].identical(&next));
                        word_values[j] = next;
                    }
                    stored = pack_flags(&flags) << first_bit;
                    flags_from = None;
                    let width = end - row;
                    let full = if width == 64 {
                        u64::MAX
                    } else {
                        ((1u64 << width) - 1) << first_bit
                    };
                    let changed = &mut track.changed[row..end];
                    if stored == full {
                        changed.fill(at);
                    } else {
                        let mut rest = stored;
                        while rest != 0 {
                            changed[rest.trailing_zeros() as usize - first_bit] = at;
                            rest &= rest - 1;
                        }
                    }
                } else {
                    let rows = values[row..end]
                        .iter_mut()
                        .zip(&reads[row..end])
                        .zip(&mut track.changed[row..end]);
                    for (bit, ((value, read), changed)) in (row % 64..).zip(rows) {
                        let next = f(value, read);
                        if !value.identical(&next) {
                            *value = next;
                            *changed = at;
                            stored |= 1 << bit;
                        }
                    }
                }
                track.dirty.mark_word(field, word, stored);
                count += stored.count_ones() as usize;
                stored = 0;
                row = end;
            }
        }));
        match run {
            Ok(()) => (count, None),
            Err(panic) => {
                // The rows of the word in progress that were stored before the panic: their
                // ticks (set already, except by the plain loop) and dirty bits. Their log
                // entries were pushed as they were stored, and the plain loop runs only when
                // the log does not take the pass; its flags are packed here when it was cut off.
                if let Some(first_bit) = flags_from {
                    stored = pack_flags(&flags) << first_bit;
                }
                let mut rest = stored;
                while rest != 0 {
                    track.changed[word * 64 + rest.trailing_zeros() as usize] = at;
                    rest &= rest - 1;
                }
                track.dirty.mark_word(field, word, stored);
                count += stored.count_ones() as usize;
                (count, Some(panic))
            }
        }
    }

    /// The tracking of field `field` cut into one share per stretch of rows, for the tasks of
    /// a parallel pass at `tick`: stretch `k` runs from `starts[k]` (ascending, distinct,
    /// below the rows) to `starts[k + 1]`, the last to the end of the rows (see
    /// `DirtyBits::split_field` for the dirty bits). With `collect`, each share lists the rows
    /// it records whose changed tick was below `tick` (the change log's candidates), up to
    /// `room` of them and one more; without, the pass must log through
    /// [`TrackMut::log_pass`] with `now_only`. The shares touch nothing but their rows' changed
    /// ticks and their own dirty words: [`TrackMut::join`] completes the pass.
    pub(crate) fn split(
        &mut self,
        field: FieldId,
        starts: &[usize],
        tick: Tick,
        collect: bool,
    ) -> Vec<TrackPart<'_>> {
        let room = self.track.log.room(self.ids.len(), tick);
        let now = self.track.offset(tick);
        let dirty = self.track.dirty.split_field(field.index(), starts);
        let first = starts.first().copied().unwrap_or(0);
        let (_, mut changed) = self.track.changed.split_at_mut(first);
        let mut at = first;
        let mut parts = Vec::with_capacity(starts.len());
        for (k, dirty) in dirty.into_iter().enumerate() {
            let end = starts.get(k + 1).copied().unwrap_or(self.ids.len());
            let (own, rest) = std::mem::take(&mut changed).split_at_mut(end - at);
            changed = rest;
            parts.push(TrackPart {
                lo: at,
                changed: own,
                dirty,
                tick: now,
                logged: collect.then(Vec::new),
                room,
            });
            at = end;
        }
        parts
    }

    /// Completes a parallel pass over field `field` with what its shares did: their dirty
    /// state, in any order.
    pub(crate) fn join(&mut self, field: FieldId, done: impl IntoIterator<Item = DirtyDone>) {
        self.track.dirty.join(field.index(), done);
    }

    /// Logs a pass at `tick` whose first change was `remaining` rows before its end, as the
    /// serial writers do: the log is prepared for `remaining` entries (see
    /// `ChangeLog::prepare`) and, if it still logs the pass, gets each of `rows` in turn, with
    /// `now_only` only those whose changed tick is `tick` (a writer's first pass, where every
    /// row it changed was below `tick` before, and no other row is at it).
    pub(crate) fn log_pass(
        &mut self,
        remaining: usize,
        tick: Tick,
        rows: impl IntoIterator<Item = usize>,
        now_only: bool,
    ) {
        let len = self.ids.len();
        let track = &mut *self.track;
        if !track.log.prepare(remaining, len, tick) {
            return;
        }
        let at = track.offset(tick);
        for row in rows {
            if !now_only || track.changed[row] == at {
                track.log.push(tick, row, len);
            }
        }
    }

    /// Restores the invariants after a parallel pass over field `field` at `tick` was cut off
    /// between its split and its join (its runner panicked): every row at `tick` (each changed
    /// by this pass or, for a writer's later pass, by its earlier ones) gets the field's dirty
    /// bit, the dirty count and summary are recomputed from the bits, and the change log is
    /// forgotten (readers from before `tick` scan), since rows may have changed unlogged.
    #[cold]
    pub(crate) fn repair(&mut self, field: FieldId, tick: Tick) {
        let track = &mut *self.track;
        let at = track.offset(tick);
        for (row, changed) in track.changed.iter().enumerate() {
            if *changed == at {
                track.dirty.mark(row, field.index());
            }
        }
        track.dirty.recount();
        track.log.reset(tick);
    }
}

/// The bits of 64 one-byte flags, each 0 or 1: flag `i` becomes bit `i`. Each group of eight
/// is packed by one multiplication, which moves flag `i`'s bit to bit `56 + i` with no two
/// partial products meeting (so nothing carries).
#[inline(always)]
fn pack_flags(flags: &[u8; 64]) -> u64 {
    let mut bits = 0;
    for (k, group) in flags.chunks_exact(8).enumerate() {
        let mut eight = [0u8; 8];
        eight.copy_from_slice(group);
        let x = u64::from_le_bytes(eight);
        bits |= (x.wrapping_mul(0x0102_0408_1020_4080) >> 56) << (8 * k);
    }
    bits
}

/// One task's share of a set's tracking in a parallel pass (see [`TrackMut::split`]): the
/// changed ticks of its stretch of rows and its share of one field's dirty bits.
pub(crate) struct TrackPart<'a> {
    /// The first row of the stretch.
    lo: usize,
    changed: &'a mut [u32],
    dirty: DirtyPart<'a>,
    /// The pass's tick, as an offset from the set's base.
    tick: u32,
    /// The rows recorded whose changed tick was below `tick`, when collected.
    logged: Option<Vec<u32>>,
    /// How many entries the change log has room for: a share past it stops collecting.
    room: usize,
}

/// What a [`TrackPart`] leaves: its dirty state for [`TrackMut::join`], and the rows it
/// collected for the change log.
pub(crate) struct PartDone {
    pub(crate) dirty: DirtyDone,
    pub(crate) logged: Option<Vec<u32>>,
}

impl TrackPart<'_> {
    /// Records a change at the part's tick of each row of word `word` whose bit is set in
    /// `mask` (rows of this part's stretch, in words that ascend from one call to the next):
    /// its changed tick, its dirty bit, and, when collected, the row if its changed tick was
    /// below the tick. A word of 64 changed rows within the stretch takes its ticks in bulk.
    #[inline(always)]
    pub(crate) fn record_word(&mut self, word: usize, mask: u64) {
        let first = word * 64;
        if let Some(logged) = &mut self.logged
            && logged.len() <= self.room
        {
            let mut rest = mask;
            while rest != 0 {
                let row = first + rest.trailing_zeros() as usize;
                rest &= rest - 1;
                if self.changed[row - self.lo] < self.tick {
                    logged.push(row as u32);
                }
            }
        }
        match first.checked_sub(self.lo) {
            Some(at) if mask == u64::MAX => self.changed[at..at + 64].fill(self.tick),
            _ => {
                let mut rest = mask;
                while rest != 0 {
                    let row = first + rest.trailing_zeros() as usize;
                    rest &= rest - 1;
                    debug_assert!(
                        self.logged.is_some() || self.changed[row - self.lo] < self.tick,
                        "a writer's first pass finds every changed tick below its own"
                    );
                    self.changed[row - self.lo] = self.tick;
                }
            }
        }
        self.dirty.mark_word(word, mask);
    }

    /// What the part leaves.
    pub(crate) fn done(self) -> PartDone {
        PartDone {
            dirty: self.dirty.done(),
            logged: self.logged,
        }
    }
}

/// The added or changed ticks of a set's rows, in row order (see
/// [`ComponentSet::added_ticks`](crate::ComponentSet::added_ticks)). The set keeps them as
/// 32-bit offsets from a base tick of its own; each tick read here is the base plus its row's
/// offset. Storing a tick 2^32 or more past the base first moves the base to 2^31 before that
/// tick, and a row older than the new base then reads as the base: a baseline more than 2^31
/// mutations old may see a row as changed after it that was not, never the reverse.
#[derive(Clone, Copy, Debug)]
pub struct Ticks<'a> {
    base: Tick,
    offsets: &'a [u32],
}

impl<'a> Ticks<'a> {
    /// How many rows.
    pub fn len(&self) -> usize {
        self.offsets.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.offsets.is_empty()
    }

    /// Row `row`'s tick, `None` past the last row.
    #[inline(always)]
    pub fn get(&self, row: usize) -> Option<Tick> {
        self.offsets
            .get(row)
            .map(|offset| Tick(self.base.0 + u64::from(*offset)))
    }

    /// The test of these rows' ticks against `baseline`, prepared once for many rows: a row is
    /// after the baseline when its offset is at least the baseline's distance past the base,
    /// plus one.
    #[inline]
    pub fn after(&self, baseline: Tick) -> TicksAfter<'a> {
        TicksAfter {
            offsets: self.offsets,
            cut: baseline.0.saturating_add(1).saturating_sub(self.base.0),
        }
    }

    /// Each row's tick, in row order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Tick> + DoubleEndedIterator + 'a {
        let base = self.base.0;
        self.offsets
            .iter()
            .map(move |offset| Tick(base + u64::from(*offset)))
    }

    /// Each row's tick, in row order, as a list.
    pub fn to_vec(&self) -> Vec<Tick> {
        self.iter().collect()
    }
}

/// Which rows' ticks are after a baseline (see [`Ticks::after`]).
#[derive(Clone, Copy, Debug)]
pub struct TicksAfter<'a> {
    offsets: &'a [u32],
    /// The least offset after the baseline.
    cut: u64,
}

impl TicksAfter<'_> {
    /// Whether row `row`'s tick is after the baseline; `false` past the last row.
    #[inline(always)]
    pub fn row(&self, row: usize) -> bool {
        self.offsets
            .get(row)
            .is_some_and(|offset| u64::from(*offset) >= self.cut)
    }
}

impl PartialEq for Ticks<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for Ticks<'_> {}

impl PartialEq<[Tick]> for Ticks<'_> {
    fn eq(&self, other: &[Tick]) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter().copied())
    }
}

impl PartialEq<&[Tick]> for Ticks<'_> {
    fn eq(&self, other: &&[Tick]) -> bool {
        *self == **other
    }
}

impl PartialEq<Vec<Tick>> for Ticks<'_> {
    fn eq(&self, other: &Vec<Tick>) -> bool {
        *self == **other
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// What the model does to the tracking.
    #[derive(Clone, Debug)]
    enum Op {
        /// Append a row at the present tick plus `step`.
        Push(u64),
        /// Write row `row % len` at the present tick plus `step`.
        Write(usize, u64),
        /// Remove row `row % len` at the present tick plus `step`.
        Remove(usize, u64),
    }

    /// Steps that are small, about half the span, or past the span.
    fn step() -> impl Strategy<Value = u64> {
        prop_oneof![
            4 => 0..4u64,
            1 => (TICK_KEPT - 2)..(TICK_KEPT + 2),
            1 => (TICK_SPAN - 2)..(TICK_SPAN + 3),
            1 => (3 * TICK_SPAN)..(3 * TICK_SPAN + 1),
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (step()).prop_map(Op::Push),
            (any::<usize>(), step()).prop_map(|(r, s)| Op::Write(r, s)),
            (any::<usize>(), step()).prop_map(|(r, s)| Op::Remove(r, s)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Packing flags gives the bit of each flag that is set, and no other.
        #[test]
        fn packed_flags_hold_a_bit_for_each_set_flag(set in any::<u64>()) {
            let mut flags = [0u8; 64];
            for (i, flag) in flags.iter_mut().enumerate() {
                *flag = u8::from(set >> i & 1 == 1);
            }
            prop_assert_eq!(pack_flags(&flags), set);
        }

        /// Each row reads the tick it was stored at, or the base when that is older; the base
        /// only moves forward; and against any
        /// baseline at or after the base, a row reads as after it exactly when it is.
        #[test]
        fn ticks_read_as_stored_within_the_span_and_as_the_base_before_it(
            ops in proptest::collection::vec(op(), 1..60),
        ) {
            let mut track = Tracking::new(1);
            let mut ids: Vec<InstanceId> = Vec::new();
            // The real added and changed tick of each row.
            let mut model: Vec<(u64, u64)> = Vec::new();
            let mut now = 1u64;
            let mut next_id = 1u64;
            for op in ops {
                let base_before = track.base;
                match op {
                    Op::Push(step) => {
                        now += step;
                        track.push_row(Tick(now));
                        ids.push(InstanceId::new(next_id).expect("ids start at 1"));
                        next_id += 1;
                        model.push((now, now));
                    }
                    Op::Write(row, step) if !model.is_empty() => {
                        now += step;
                        let row = row % model.len();
                        track.borrow(&ids).mark(row, FieldId(0), Tick(now));
                        model[row].1 = now;
                    }
                    Op::Remove(row, step) if !model.is_empty() => {
                        now += step;
                        let row = row % model.len();
                        track.swap_remove(row, Tick(now));
                        ids.swap_remove(row);
                        model.swap_remove(row);
                    }
                    _ => {}
                }
                prop_assert!(track.base >= base_before);
                let base = track.base.0;
                prop_assert_eq!(track.added().len(), model.len());
                for (row, (added, changed)) in model.iter().enumerate() {
                    prop_assert_eq!(track.added_at(row), Tick((*added).max(base)));
                    prop_assert_eq!(track.changed_at(row), Tick((*changed).max(base)));
                    for baseline in [base, base + 1, now.saturating_sub(1), now] {
                        let read = track.changed().get(row).expect("a row");
                        prop_assert_eq!(read > Tick(baseline), *changed > baseline);
                    }
                    // Against any baseline, the prepared test reads as the ticks do.
                    for baseline in [0, base.saturating_sub(1), base, *changed, now, u64::MAX] {
                        prop_assert_eq!(
                            track.changed().after(Tick(baseline)).row(row),
                            Tick((*changed).max(base)) > Tick(baseline)
                        );
                    }
                    prop_assert!(!track.changed().after(Tick(0)).row(model.len()));
                }
            }
        }
    }
}
