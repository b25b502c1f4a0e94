//! Parallel column passes: one typed field of a set cut into disjoint pieces of rows, each
//! piece written in place by exactly one task, the change tracking merged afterwards in the
//! order the caller gave the pieces.
//!
//! Invariant: the rows of a pass ascend strictly within each piece, and no two pieces share a
//! row nor interleave, so ordering the pieces by their first row, each owns the slices of the
//! column, the changed ticks and the dirty masks from its first row up to the next piece's
//! (split off with `split_at_mut`): no task can reach another's rows. Everything else a write
//! records (the change log, the dirty list, observer events, the store tick) is touched only
//! after every piece has finished: each piece hands back the rows it logged, dirtied and
//! changed, and these are appended piece by piece in the caller's order. Before any piece runs,
//! the dirty list is given room for every row of the pass and, as the serial column writers do
//! for a pass of that size, the change log is prepared for it (except for values a field may
//! refuse, which the serial writers' checked path logs row by row: the merge repeats that). So
//! the store ends as after the serial loop of `ColumnWriter::update_dense` over the pieces one
//! after another in the caller's order, whatever the runner, the number of threads and which
//! task finished first. Values a field may refuse (enum indexes) are all computed and checked
//! before the first is stored, so a refused pass changes nothing; every other value type was
//! checked against the field once, when the writer was made. Reference fields, whose writes keep
//! the reverse index, are written by one task through the store's column writer, in the same
//! order.

use std::ops::Range;
use std::sync::Arc;

use crate::column::Scalar;
use crate::def::{ComponentId, FieldId, InstalledDef};
use crate::error::StoreError;
use crate::set::{ChangeRecord, InstanceRef, Tick, Track};
use crate::store::{Store, StoreEvent};
use crate::view::ColumnWriter;

/// Runs one function over many inputs, possibly at once on several threads, and returns the
/// outputs in input order. The store needs no thread pool of its own: a caller passes a runner
/// over the pool it uses (a rayon one in `strata-query`), or [`InOrder`].
pub trait ChunkRunner {
    /// `f` of every input, in input order.
    fn run<I, O, F>(&self, inputs: Vec<I>, f: &F) -> Vec<O>
    where
        I: Send,
        O: Send,
        F: Fn(I) -> O + Sync;
}

/// A [`ChunkRunner`] that runs every input on the calling thread, one after another.
#[derive(Clone, Copy, Debug, Default)]
pub struct InOrder;

impl ChunkRunner for InOrder {
    fn run<I, O, F>(&self, inputs: Vec<I>, f: &F) -> Vec<O>
    where
        I: Send,
        O: Send,
        F: Fn(I) -> O + Sync,
    {
        inputs.into_iter().map(f).collect()
    }
}

/// The rows one task of a parallel pass writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece<'r> {
    /// Every row of a range.
    Rows(Range<usize>),
    /// The listed rows, strictly ascending.
    Listed(&'r [u32]),
}

impl Piece<'_> {
    /// How many rows the piece writes.
    pub fn len(&self) -> usize {
        match self {
            Piece::Rows(rows) => rows.len(),
            Piece::Listed(rows) => rows.len(),
        }
    }

    /// Whether the piece writes no row.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The first and last row, for a piece that writes any.
    fn span(&self) -> Option<(usize, usize)> {
        match self {
            Piece::Rows(rows) if !rows.is_empty() => Some((rows.start, rows.end - 1)),
            Piece::Rows(_) => None,
            Piece::Listed(rows) => Some((*rows.first()? as usize, *rows.last()? as usize)),
        }
    }

    /// The row at `index` within the piece.
    #[inline]
    fn row(&self, index: usize) -> usize {
        match self {
            Piece::Rows(rows) => rows.start + index,
            Piece::Listed(rows) => rows[index] as usize,
        }
    }
}

/// Writes one typed field of a set from several tasks at once (see [`Store::par_writer`]).
/// All the changes of one writer share one tick, taken at its first actual change, as with a
/// [`ColumnWriter`].
pub struct ParWriter<'a, T: Scalar> {
    target: ParTarget<'a, T>,
    def: Arc<InstalledDef>,
    component: ComponentId,
    field: FieldId,
    observed: bool,
    tick: Option<Tick>,
}

/// Where a parallel writer stores: the bound column beside the set's tracking, or (for
/// reference fields, whose writes must keep the reverse index exact) a serial column writer.
enum ParTarget<'a, T: Scalar> {
    Bound {
        values: &'a mut [T],
        track: Track<'a>,
        store_tick: &'a mut Tick,
        events: &'a mut Vec<StoreEvent>,
    },
    Serial(ColumnWriter<'a, T>),
}

impl Store {
    /// A writer for one typed field of a component whose rows several tasks write at once,
    /// each its own rows (see [`ParWriter::update`]).
    pub fn par_writer<T: Scalar + Send + Sync>(
        &mut self,
        component: ComponentId,
        field: FieldId,
    ) -> Result<ParWriter<'_, T>, StoreError> {
        Ok(self.par_update_columns::<T, T>(component, field, None)?.0)
    }

    /// A parallel writer for one typed field of a component and a typed read-only view of
    /// another field (of the same or another component), borrowed together, as
    /// [`Store::update_columns`] gives them to a serial pass, and refused for the same reasons.
    pub fn par_update_columns<W: Scalar + Send + Sync, R: Scalar>(
        &mut self,
        component: ComponentId,
        field: FieldId,
        read: Option<(ComponentId, FieldId)>,
    ) -> Result<(ParWriter<'_, W>, &[R]), StoreError> {
        let write_set = self.set(component)?;
        write_set.checked_values::<W>(field)?;
        let def = Arc::clone(&write_set.def);
        let observed = def.def().observed;
        if def.reference_fields.contains(&field) {
            let (writer, reads) = self.update_columns::<W, R>(component, field, read)?;
            let writer = ParWriter {
                target: ParTarget::Serial(writer),
                def,
                component,
                field,
                observed,
                tick: None,
            };
            return Ok((writer, reads));
        }
        if let Some((rc, rf)) = read {
            self.set(rc)?.checked_values::<R>(rf)?;
            if rc == component && rf == field {
                return Err(StoreError::AliasedColumns { component, field });
            }
        }
        let (set, other, store_tick, events) = self.parts_split(component, read.map(|r| r.0))?;
        let same_set_read = read.filter(|(rc, _)| *rc == component).map(|(_, rf)| rf);
        let (values, same, track) = set
            .split_write::<W>(field, same_set_read)
            .ok_or(StoreError::UnknownComponent(component))?;
        let reads = match (read, same, other) {
            (Some(_), Some(column), _) => R::slice(column).unwrap_or(&[]),
            (Some((_, rf)), None, Some(other)) => other.values::<R>(rf).unwrap_or(&[]),
            _ => &[],
        };
        let writer = ParWriter {
            target: ParTarget::Bound {
                values,
                track,
                store_tick,
                events,
            },
            def,
            component,
            field,
            observed,
            tick: None,
        };
        Ok((writer, reads))
    }
}

/// What the pass records per changed row, fixed for all its pieces.
#[derive(Clone, Copy)]
struct Marks {
    tick: Tick,
    /// The change log's base after it was prepared for the pass.
    base: Tick,
    /// Whether rows changed at `tick` are logged at all (`tick` above the base).
    log_open: bool,
    /// Dirty words per row, the field's word and bit.
    words: usize,
    word: usize,
    bit: u64,
    observed: bool,
}

/// One piece's slices of the set, for the task that writes it.
struct Chunk<'c, 'r, T> {
    /// The piece's position in the caller's order.
    piece: usize,
    rows: Piece<'r>,
    /// The first row the slices hold.
    lo: usize,
    values: &'c mut [T],
    changed: &'c mut [Tick],
    dirty: &'c mut [u64],
}

/// What one piece changed, for the merge.
#[derive(Default)]
struct PieceOut {
    changed: usize,
    /// Rows whose change goes into the change log, in the piece's order.
    logged: Vec<u32>,
    /// Rows whose dirty mask went from empty to non-empty.
    dirtied: Vec<u32>,
    /// Every changed row, when the component is observed (one event each).
    touched: Vec<u32>,
}

impl<T: Scalar + Send + Sync> ParWriter<'_, T> {
    /// The current values, by row.
    pub fn values(&self) -> &[T] {
        match &self.target {
            ParTarget::Bound { values, .. } => values,
            ParTarget::Serial(writer) => writer.values(),
        }
    }

    /// Writes every row of every piece, the pieces on `runner` (each by exactly one task):
    /// `f(piece)` gives the function of the rows of `pieces[piece]`, called with each row's
    /// current value and its position in the piece, in the piece's order, and returning the
    /// row's new value. Equal results change nothing. The rows must ascend strictly within each piece, and no piece
    /// may name a row another names nor one between two of another's rows; pieces may come in
    /// any order, which is the order their changes are recorded in (change log, dirty list,
    /// events), so the store ends the same for any runner and any thread count.
    ///
    /// Returns how many rows changed. Refused, changing nothing, with
    /// [`StoreError::RowOutOfRange`] for a row past the set's, [`StoreError::OverlappingRows`]
    /// for rows out of order or named twice, and for a result the field cannot hold (see
    /// [`InstalledDef::check_scalar_value`]).
    pub fn update<F, G>(
        &mut self,
        runner: &impl ChunkRunner,
        pieces: &[Piece<'_>],
        f: F,
    ) -> Result<usize, StoreError>
    where
        F: Fn(usize) -> G + Sync,
        G: FnMut(&T, usize) -> T,
    {
        let order = self.check_pieces(pieces)?;
        let total: usize = pieces.iter().map(Piece::len).sum();
        if total == 0 {
            return Ok(0);
        }
        let planned = match &self.target {
            ParTarget::Bound { .. } if T::RANGED => Some(self.plan(runner, pieces, &f)?),
            _ => None,
        };
        let (component, field, observed) = (self.component, self.field, self.observed);
        let (track, store_tick, events, values) = match &mut self.target {
            ParTarget::Serial(writer) => {
                // One task, through the checked path that keeps the reverse index.
                let flat: Vec<(usize, usize)> = pieces
                    .iter()
                    .enumerate()
                    .flat_map(|(p, piece)| (0..piece.len()).map(move |i| (p, i)))
                    .collect();
                let mut each: Vec<G> = (0..pieces.len()).map(&f).collect();
                return writer.update_indexed(
                    flat.len(),
                    |k| (pieces[flat[k].0].row(flat[k].1), k),
                    |current, k| each[flat[k].0](current, flat[k].1),
                );
            }
            ParTarget::Bound {
                values,
                track,
                store_tick,
                events,
            } => (track, store_tick, events, values),
        };
        let tick = self.tick.unwrap_or(Tick(store_tick.0 + 1));
        if !T::RANGED {
            // As the serial writers do for a pass of this many rows; their checked path (for
            // values a field may refuse) logs row by row instead, which the merge repeats.
            track.prepare_bulk(total, tick);
        }
        track.reserve_dirty(total);
        let base = *track.log_base;
        let words = track.dirty_words;
        let marks = Marks {
            tick,
            base,
            log_open: tick > base,
            words,
            word: field.index() / 64,
            bit: 1 << (field.index() % 64),
            observed,
        };
        let chunks = split(
            pieces,
            &order,
            &mut values[..],
            &mut track.changed[..],
            &mut track.dirty[..],
            words,
        );
        let outs: Vec<(usize, PieceOut)> = match &planned {
            Some(planned) => runner.run(chunks, &|chunk: Chunk<'_, '_, T>| {
                let values = planned[chunk.piece].as_slice();
                (
                    chunk.piece,
                    apply(chunk, &marks, |_: &T, i: usize| values[i].clone()),
                )
            }),
            None => runner.run(chunks, &|chunk: Chunk<'_, '_, T>| {
                let piece = chunk.piece;
                (piece, apply(chunk, &marks, f(piece)))
            }),
        };
        // The merge follows the caller's order of the pieces, whatever order they ran in.
        let mut by_piece: Vec<Option<PieceOut>> = (0..pieces.len()).map(|_| None).collect();
        for (piece, out) in outs {
            by_piece[piece] = Some(out);
        }
        let mut changed = 0;
        for out in by_piece.iter().flatten() {
            changed += out.changed;
            merge(track, events, out, tick, component, field);
        }
        if changed > 0 {
            **store_tick = (**store_tick).max(tick);
            self.tick = Some(tick);
        }
        Ok(changed)
    }

    /// Checks the pieces against the set and each other. Returns the positions of the
    /// non-empty pieces, ordered by their first row.
    fn check_pieces(&self, pieces: &[Piece<'_>]) -> Result<Vec<usize>, StoreError> {
        let len = self.values().len();
        let name = || self.def.name().to_owned();
        let mut order = Vec::with_capacity(pieces.len());
        for (p, piece) in pieces.iter().enumerate() {
            let Some((first, last)) = piece.span() else {
                continue;
            };
            if let Piece::Listed(rows) = piece
                && let Some(pair) = rows.windows(2).find(|pair| pair[0] >= pair[1])
            {
                return Err(StoreError::OverlappingRows {
                    component: name(),
                    row: pair[1] as usize,
                });
            }
            if last >= len {
                return Err(StoreError::RowOutOfRange {
                    component: name(),
                    row: last,
                });
            }
            order.push((first, last, p));
        }
        order.sort_unstable();
        if let Some(pair) = order.windows(2).find(|pair| pair[0].1 >= pair[1].0) {
            return Err(StoreError::OverlappingRows {
                component: name(),
                row: pair[1].0,
            });
        }
        Ok(order.into_iter().map(|(_, _, p)| p).collect())
    }

    /// Computes every result of a pass over a field that may refuse values, checking each,
    /// before anything is stored: per piece, its results in row order.
    fn plan<F, G>(
        &self,
        runner: &impl ChunkRunner,
        pieces: &[Piece<'_>],
        f: &F,
    ) -> Result<Vec<Vec<T>>, StoreError>
    where
        F: Fn(usize) -> G + Sync,
        G: FnMut(&T, usize) -> T,
    {
        let values = self.values();
        let (def, field) = (&*self.def, self.field);
        let inputs: Vec<(usize, &Piece<'_>)> = pieces.iter().enumerate().collect();
        runner
            .run(inputs, &|(p, piece): (usize, &Piece<'_>)| {
                let mut g = f(p);
                (0..piece.len())
                    .map(|i| {
                        let next = g(&values[piece.row(i)], i);
                        def.check_scalar_value(field, &next)?;
                        Ok(next)
                    })
                    .collect::<Result<Vec<T>, StoreError>>()
            })
            .into_iter()
            .collect()
    }
}

/// Cuts the column, changed ticks and dirty masks into one chunk per non-empty piece, `order`
/// being those pieces by first row: each chunk holds the rows from its piece's first row up to
/// the next piece's first row (the set's end for the last).
fn split<'c, 'r, T>(
    pieces: &[Piece<'r>],
    order: &[usize],
    values: &'c mut [T],
    changed: &'c mut [Tick],
    dirty: &'c mut [u64],
    words: usize,
) -> Vec<Chunk<'c, 'r, T>> {
    let mut chunks = Vec::with_capacity(order.len());
    let (mut values, mut changed, mut dirty) = (values, changed, dirty);
    let mut at = 0;
    for (k, &p) in order.iter().enumerate() {
        let first = pieces[p].span().map_or(at, |(first, _)| first);
        let end = order
            .get(k + 1)
            .and_then(|&next| pieces[next].span())
            .map_or(at + values.len(), |(next_first, _)| next_first);
        // Skip the rows before this piece, then take the piece's own.
        let skip = first - at;
        let take = end - first;
        let (_, rest) = std::mem::take(&mut values).split_at_mut(skip);
        let (own, rest) = rest.split_at_mut(take);
        values = rest;
        let (_, rest) = std::mem::take(&mut changed).split_at_mut(skip);
        let (own_changed, rest) = rest.split_at_mut(take);
        changed = rest;
        let (_, rest) = std::mem::take(&mut dirty).split_at_mut(skip * words);
        let (own_dirty, rest) = rest.split_at_mut(take * words);
        dirty = rest;
        chunks.push(Chunk {
            piece: p,
            rows: pieces[p].clone(),
            lo: first,
            values: own,
            changed: own_changed,
            dirty: own_dirty,
        });
        at = end;
    }
    chunks
}

/// Writes one piece's rows in place: compare, store, changed tick, dirty mask; the rows to
/// log, list as dirty and report are collected for the merge.
fn apply<T: Scalar>(
    chunk: Chunk<'_, '_, T>,
    marks: &Marks,
    mut f: impl FnMut(&T, usize) -> T,
) -> PieceOut {
    let Chunk {
        piece: _,
        rows,
        lo,
        values,
        changed,
        dirty,
    } = chunk;
    let mut out = PieceOut::default();
    if let (Piece::Rows(range), 1, false) = (&rows, marks.words, marks.observed) {
        // The common shape (a run of rows, one dirty word per row, no events), in blocks: the
        // values first, then each block's ticks and masks, in bulk when every row changed.
        let n = range.len();
        let mut start = 0;
        while start < n {
            let end = (start + BLOCK).min(n);
            let mut diffs = 0u64;
            for (j, value) in values[start..end].iter_mut().enumerate() {
                let next = f(value, start + j);
                if !value.identical(&next) {
                    *value = next;
                    diffs |= 1 << j;
                }
            }
            if diffs != 0 {
                record_block(
                    diffs,
                    &mut changed[start..end],
                    &mut dirty[start..end],
                    lo + start,
                    marks,
                    &mut out,
                );
            }
            start = end;
        }
        return out;
    }
    for index in 0..rows.len() {
        let row = rows.row(index);
        let at = row - lo;
        let value = &mut values[at];
        let next = f(value, index);
        if value.identical(&next) {
            continue;
        }
        *value = next;
        out.changed += 1;
        let previous = std::mem::replace(&mut changed[at], marks.tick);
        if marks.log_open && previous <= marks.base {
            out.logged.push(row as u32);
        }
        let mask = &mut dirty[at * marks.words..(at + 1) * marks.words];
        if mask[marks.word] & marks.bit == 0 {
            if mask.iter().all(|w| *w == 0) {
                out.dirtied.push(row as u32);
            }
            mask[marks.word] |= marks.bit;
        }
        if marks.observed {
            out.touched.push(row as u32);
        }
    }
    out
}

/// Rows per block of the common shape: one bit each in a `u64`.
const BLOCK: usize = 64;

/// Records the changes of one block of consecutive rows (`diffs` has bit `j` set when row
/// `first + j` changed): the rows to log (changed tick at or below the base), changed ticks,
/// dirty masks and the rows whose mask was empty, one dirty word per row. A block where every
/// row changed fills its ticks and, when every mask already holds the field, leaves the masks.
#[inline(always)]
fn record_block(
    diffs: u64,
    changed: &mut [Tick],
    dirty: &mut [u64],
    first: usize,
    marks: &Marks,
    out: &mut PieceOut,
) {
    let full = diffs == u64::MAX >> (64 - changed.len());
    let rows = |diffs: u64| {
        let mut rest = diffs;
        std::iter::from_fn(move || {
            (rest != 0).then(|| {
                let j = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                j
            })
        })
    };
    if marks.log_open {
        for j in rows(diffs) {
            if changed[j] <= marks.base {
                out.logged.push((first + j) as u32);
            }
        }
    }
    out.changed += diffs.count_ones() as usize;
    if full {
        changed.fill(marks.tick);
        if dirty.iter().fold(u64::MAX, |all, mask| all & mask) & marks.bit != 0 {
            return;
        }
    } else {
        for j in rows(diffs) {
            changed[j] = marks.tick;
        }
    }
    for j in rows(diffs) {
        let mask = &mut dirty[j];
        if *mask & marks.bit == 0 {
            if *mask == 0 {
                out.dirtied.push((first + j) as u32);
            }
            *mask |= marks.bit;
        }
    }
}

/// Appends one piece's records: change-log entries (as [`Track::log`] would), dirty-list
/// entries and change events.
fn merge(
    track: &mut Track<'_>,
    events: &mut Vec<StoreEvent>,
    out: &PieceOut,
    tick: Tick,
    component: ComponentId,
    field: FieldId,
) {
    let at = |track: &Track<'_>, row: u32| {
        InstanceRef::new(track.ids[row as usize], track.slots[row as usize])
    };
    for &row in &out.logged {
        if tick > *track.log_base {
            let record = ChangeRecord {
                at: at(track, row),
                row,
            };
            Track::log_into(
                track.change_log,
                track.log_base,
                track.ids.len(),
                record,
                tick,
            );
        }
    }
    for &row in &out.dirtied {
        let entry = at(track, row);
        track.dirty_rows.push(entry);
    }
    for &row in &out.touched {
        events.push(StoreEvent::Changed {
            id: track.ids[row as usize],
            component,
            field,
        });
    }
}
