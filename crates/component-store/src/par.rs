//! Parallel column passes: one typed field of a set cut into disjoint pieces of rows, each
//! piece written in place by exactly one task, the change tracking completed afterwards in the
//! order the caller gave the pieces.
//!
//! Invariant: the rows of a pass ascend strictly within each piece, and no two pieces share a
//! row nor interleave, so, ordering the pieces by their first row, each task owns the values
//! and changed ticks of the rows from its piece's first row up to the next piece's, and the
//! words of the field's dirty bits that start there (`TrackMut::split`, `DirtyBits::split_field`):
//! no task can reach another's rows or words. Everything else a write records (the dirty
//! bits of a word two tasks share, the dirty count and summary, the change log, observer events,
//! the store tick) is touched only after every task has finished, piece by piece in the caller's
//! order. A pass is logged as every serial pass is (`ColumnWriter::update_indexed` over the
//! pieces' rows one piece after another in the caller's order): at its first change, the change
//! log is prepared for the positions from that one to the end, and, if it still logs the pass,
//! gets every row changed in it whose changed tick was below the pass's, in that order. So the
//! store ends as after that serial loop, whatever the runner, the number of threads and which
//! task finished first. Values a field may refuse (enum indexes) are all computed and checked
//! before the first is stored, so a refused pass changes nothing; every other value type was
//! checked against the field once, when the writer was made. A set a snapshot shares is copied
//! only once a task has found a row that changes. Reference fields, whose writes keep the
//! reverse index, are written by one task through the store's column writer, in the same order.
//! A piece's function that panics is caught by its task, which hands back what it stored (every
//! row of it recorded: a task computes a word's new values before it stores any of them); the
//! merge runs as usual and the panic resumes after it. A runner that panics itself (or hands back too
//! few outputs) is repaired after: every row at the pass's tick takes the field's dirty bit, the
//! dirty count and summary are recounted, and the change log is forgotten.

use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Arc;

use crate::column::Scalar;
use crate::def::{ComponentId, FieldId, InstalledDef};
use crate::error::StoreError;
use crate::set::Tick;
use crate::shared::SharedSet;
use crate::store::{Store, StoreEvent};
use crate::track::{PartDone, TrackMut, TrackPart};
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

/// The first of `rows` when each row is the one before plus one (rows a [`Piece::Rows`] can
/// name), and there are any. (Rows past the end of `u32` cannot pass: a run starting there
/// reaches past every set's rows.)
pub fn run_start(rows: &[u32]) -> Option<u32> {
    let (&first, &last) = (rows.first()?, rows.last()?);
    if last.wrapping_sub(first) as usize != rows.len() - 1 {
        return None;
    }
    // A fold without an early exit, in the rows' own width, vectorises.
    rows.iter()
        .zip(0u32..)
        .fold(true, |run, (&row, k)| run & (row.wrapping_sub(first) == k))
        .then_some(first)
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

/// Where a parallel writer stores: the set beside the store's tick and events, or (for
/// reference fields, whose writes must keep the reverse index exact) a serial column writer.
enum ParTarget<'a, T: Scalar> {
    Own {
        set: OwnSet<'a, T>,
        store_tick: &'a mut Tick,
        events: &'a mut Vec<StoreEvent>,
        /// The store's value-write counter, when this column's writes are counted.
        counter: Option<&'a mut u64>,
    },
    Serial(ColumnWriter<'a, T>),
}

/// The set a parallel writer writes in place: as it is (nothing written yet, so a snapshot may
/// still share it), or private with the column bound beside its tracking.
enum OwnSet<'a, T: Scalar> {
    Shared(&'a mut SharedSet),
    Bound {
        values: &'a mut [T],
        track: TrackMut<'a>,
    },
    /// Only while `bind` swaps one for the other.
    Moving,
}

impl Store {
    /// A writer for one typed field of a component whose rows several tasks write at once,
    /// each its own rows (see [`ParWriter::update`]).
    ///
    /// # Errors
    ///
    /// As [`Store::column_writer`].
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
    /// A read of another field of the written set makes that set private at once (the read
    /// borrows it).
    ///
    /// # Errors
    ///
    /// As [`Store::update_columns`].
    pub fn par_update_columns<W: Scalar + Send + Sync, R: Scalar>(
        &mut self,
        component: ComponentId,
        field: FieldId,
        read: Option<(ComponentId, FieldId)>,
    ) -> Result<(ParWriter<'_, W>, &[R]), StoreError> {
        let write_set = self.set(component)?;
        write_set.checked_values::<W>(field)?;
        let def = Arc::clone(write_set.def_arc());
        let observed = def.def().observed;
        if def.reference_fields().contains(&field) {
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
                let def = self.def(component)?;
                return Err(StoreError::AliasedColumns {
                    component,
                    field,
                    component_name: def.shared_name(),
                    field_name: def.shared_field_name(field),
                });
            }
        }
        let (shared, other, store_tick, events, frame) =
            self.parts_split(component, read.map(|r| r.0))?;
        let counter = frame.counter(component, field);
        let same_set_read = read.filter(|(rc, _)| *rc == component).map(|(_, rf)| rf);
        let other_values = match (read, other) {
            (Some((_, rf)), Some(other)) => other.values::<R>(rf).unwrap_or(&[]),
            _ => &[],
        };
        let (set, reads): (OwnSet<'_, W>, &[R]) = match same_set_read {
            // Reading another field of the written set: bind both now.
            Some(rf) => {
                let (values, same, track) = shared
                    .make_mut()
                    .split_write::<W>(field, Some(rf))
                    .ok_or(StoreError::UnknownComponent(component))?;
                let reads = same.and_then(R::slice).unwrap_or(&[]);
                (OwnSet::Bound { values, track }, reads)
            }
            None => (OwnSet::Shared(shared), other_values),
        };
        let writer = ParWriter {
            target: ParTarget::Own {
                set,
                store_tick,
                events,
                counter,
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

/// The pass a merge records.
struct PassOf {
    component: ComponentId,
    field: FieldId,
    tick: Tick,
    collect: bool,
}

/// Records what every piece of a pass did, in the caller's piece order, whatever order the
/// runner finished them in: dirty words joined, the pass's rows from its first change handed to
/// the change log, a `Changed` event per changed row of an observed component. Returns how many
/// rows changed (`None` when none did) and the first panic a piece's function raised.
fn merge(
    outs: Vec<ChunkOut>,
    pieces: &[Piece<'_>],
    track: &mut TrackMut<'_>,
    events: &mut Vec<StoreEvent>,
    pass: &PassOf,
) -> (Option<usize>, Option<Box<dyn std::any::Any + Send>>) {
    let mut by_piece: Vec<Option<Written>> = (0..pieces.len()).map(|_| None).collect();
    let mut dirty = Vec::with_capacity(outs.len());
    let mut logged = Vec::new();
    for out in outs {
        dirty.push(out.done.dirty);
        logged.push((out.piece, out.done.logged));
        by_piece[out.piece] = Some(out.written);
    }
    track.join(pass.field, dirty);
    // The first change in the caller's order, as a position of the whole pass.
    let total: usize = pieces.iter().map(Piece::len).sum();
    let mut offset = 0;
    let mut first = None;
    for (p, piece) in pieces.iter().enumerate() {
        if let Some(at) = by_piece[p].as_ref().and_then(|out| out.first) {
            first = Some(offset + at);
            break;
        }
        offset += piece.len();
    }
    let Some(first) = first else {
        let panic = by_piece
            .iter_mut()
            .flatten()
            .find_map(|out| out.panic.take());
        return (None, panic);
    };
    if pass.collect {
        // A second pass of this writer: rows it changed before are at the tick already.
        logged.sort_unstable_by_key(|(piece, _)| *piece);
        let rows = logged
            .iter()
            .flat_map(|(_, rows)| rows.iter().flatten().map(|row| *row as usize));
        track.log_pass(total - first, pass.tick, rows, false);
    } else {
        let rows = pieces.iter().zip(&by_piece).flat_map(|(piece, out)| {
            let from = out
                .as_ref()
                .and_then(|out| out.first)
                .unwrap_or(piece.len());
            (from..piece.len()).map(|i| piece.row(i))
        });
        track.log_pass(total - first, pass.tick, rows, true);
    }
    let mut changed = 0;
    let mut panic = None;
    for out in by_piece.iter_mut().flatten() {
        changed += out.changed;
        for &row in &out.touched {
            events.push(StoreEvent::Changed {
                id: track.id(row as usize),
                component: pass.component,
                field: pass.field,
            });
        }
        panic = panic.or(out.panic.take());
    }
    (Some(changed), panic)
}

/// One piece's rows of the set, for the task that writes it.
struct Chunk<'c, 'r, T> {
    /// The piece's position in the caller's order.
    piece: usize,
    rows: Piece<'r>,
    /// The position within the piece to start from (rows before it do not change).
    start: usize,
    /// The first row `values` holds.
    lo: usize,
    values: &'c mut [T],
    track: TrackPart<'c>,
}

/// What one piece changed, for the merge.
struct ChunkOut {
    piece: usize,
    written: Written,
    done: PartDone,
}

/// How one piece went.
struct Written {
    changed: usize,
    /// The position within the piece of its first change.
    first: Option<usize>,
    /// Every changed row, when the component is observed (one event each).
    touched: Vec<u32>,
    /// What the piece's function panicked with, if it did.
    panic: Option<Box<dyn std::any::Any + Send>>,
}

impl<T: Scalar + Send + Sync> ParWriter<'_, T> {
    /// The current values, by row.
    pub fn values(&self) -> &[T] {
        match &self.target {
            ParTarget::Own { set, .. } => match set {
                OwnSet::Shared(set) => set.values::<T>(self.field).unwrap_or(&[]),
                OwnSet::Bound { values, .. } => values,
                OwnSet::Moving => &[],
            },
            ParTarget::Serial(writer) => writer.values(),
        }
    }

    /// Writes every row of every piece, the pieces on `runner` (each by exactly one task):
    /// `f(piece)` gives the function of the rows of `pieces[piece]`, called with each row's
    /// current value and its position in the piece, in the piece's order, and returning the
    /// row's new value. Equal results change nothing. The rows must ascend strictly within each
    /// piece, and no piece may name a row another names nor one between two of another's rows;
    /// pieces may come in any order, which is the order their changes are recorded in (change
    /// log, events), so the store ends the same for any runner and any thread count: as after
    /// [`ColumnWriter::update_indexed`] over the pieces' rows, one piece after another.
    ///
    /// While a snapshot shares the set, each piece is first read up to its first change, and
    /// the set is copied only if some piece has one; so a piece's function may be called twice
    /// for a row and must give the same result for the same value and position.
    ///
    /// Returns how many rows changed. Refused, changing nothing, with
    /// [`StoreError::RowOutOfRange`] for a row past the set's, [`StoreError::OverlappingRows`]
    /// for rows out of order or named twice, and for a result the field cannot hold (see
    /// [`InstalledDef::check_scalar_value`]).
    ///
    /// # Errors
    ///
    /// [`StoreError::OverlappingRows`] for a row named twice or out of order within a piece, and
    /// [`StoreError::TypeMismatch`] for a result the field cannot hold (an enum index past the
    /// variants); nothing is written then.
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
        if order.is_empty() {
            return Ok(0);
        }
        if let ParTarget::Serial(writer) = &mut self.target {
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
        if T::RANGED {
            let planned = self.plan(runner, pieces, &f)?;
            let planned = &planned;
            return self.write(
                runner,
                pieces,
                &order,
                |p| {
                    let values = planned[p].as_slice();
                    move |_: &T, i: usize| values[i].clone()
                },
                None,
            );
        }
        self.write(runner, pieces, &order, f, None)
    }

    /// [`ParWriter::update`] with each piece's new values given: `values[piece]` holds one
    /// value for each row of `pieces[piece]`, in the piece's order. The store ends as after
    /// `update` with functions returning them, and the same is refused; a piece of consecutive
    /// rows is compared and stored a word of 64 rows at a time straight from its slice.
    ///
    /// # Errors
    ///
    /// As [`ParWriter::update`], and [`StoreError::RowOutOfRange`] (the piece's row count) for
    /// values not one per piece, or a piece not given one value per row; nothing is written
    /// then.
    pub fn copy_from(
        &mut self,
        runner: &impl ChunkRunner,
        pieces: &[Piece<'_>],
        values: &[&[T]],
    ) -> Result<usize, StoreError>
    where
        T: Sync,
    {
        if let Some(piece) = (0..pieces.len().max(values.len()))
            .find(|&p| pieces.get(p).map(Piece::len) != values.get(p).map(|v| v.len()))
        {
            return Err(StoreError::RowOutOfRange {
                component: self.def.name().to_owned(),
                row: pieces.get(piece).map_or(0, Piece::len),
            });
        }
        let given = |p: usize| {
            let values = values[p];
            move |_: &T, i: usize| values[i].clone()
        };
        if T::RANGED || matches!(self.target, ParTarget::Serial(_)) {
            return self.update(runner, pieces, given);
        }
        let order = self.check_pieces(pieces)?;
        if order.is_empty() {
            return Ok(0);
        }
        self.write(runner, pieces, &order, given, Some(values))
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
    /// before anything is stored: per piece, its results in the piece's order.
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

    /// Where each piece may first change: position 0 of every piece once the set is private;
    /// while a snapshot shares it, each piece's first change found by reading (the piece's
    /// length when it has none), or `None` when no piece changes anything.
    fn first_changes<F, G>(
        &mut self,
        runner: &impl ChunkRunner,
        pieces: &[Piece<'_>],
        order: &[usize],
        f: &F,
    ) -> Option<Vec<usize>>
    where
        F: Fn(usize) -> G + Sync,
        G: FnMut(&T, usize) -> T,
    {
        let mut starts = vec![0; pieces.len()];
        let ParTarget::Own {
            set: OwnSet::Shared(set),
            ..
        } = &mut self.target
        else {
            return Some(starts);
        };
        if set.is_private() {
            // No snapshot shares it: nothing to keep shared.
            return Some(starts);
        }
        let values = set.values::<T>(self.field).unwrap_or(&[]);
        let firsts = runner.run(order.to_vec(), &|p: usize| {
            let (piece, mut g) = (&pieces[p], f(p));
            (0..piece.len()).find(|&i| {
                let current = &values[piece.row(i)];
                !current.identical(&g(current, i))
            })
        });
        let mut any = false;
        for (&p, first) in order.iter().zip(firsts) {
            any |= first.is_some();
            starts[p] = first.unwrap_or(pieces[p].len());
        }
        any.then_some(starts)
    }

    /// Makes the set private and binds the column beside the tracking, if not done yet.
    fn bind(&mut self) {
        let ParTarget::Own { set, .. } = &mut self.target else {
            return;
        };
        if !matches!(set, OwnSet::Shared(_)) {
            return;
        }
        let OwnSet::Shared(shared) = std::mem::replace(set, OwnSet::Moving) else {
            return;
        };
        let (values, _, track) = shared
            .make_mut()
            .split_write::<T>(self.field, None)
            .expect("the field's column holds T: par_update_columns checked it");
        *set = OwnSet::Bound { values, track };
    }

    /// The pass itself, for pieces already checked (`order` being the non-empty ones by first
    /// row) and values that need no check. `given`: each piece's new values, which `f` returns
    /// too, for a piece of consecutive rows to store straight from.
    fn write<F, G>(
        &mut self,
        runner: &impl ChunkRunner,
        pieces: &[Piece<'_>],
        order: &[usize],
        f: F,
        given: Option<&[&[T]]>,
    ) -> Result<usize, StoreError>
    where
        T: Sync,
        F: Fn(usize) -> G + Sync,
        G: FnMut(&T, usize) -> T,
    {
        let Some(starts) = self.first_changes(runner, pieces, order, &f) else {
            return Ok(0);
        };
        self.bind();
        let (field, observed, collect) = (self.field, self.observed, self.tick.is_some());
        let ParTarget::Own {
            set: OwnSet::Bound { values, track },
            store_tick,
            events,
            counter,
        } = &mut self.target
        else {
            return Ok(0);
        };
        let tick = self.tick.unwrap_or(Tick(store_tick.0 + 1));
        let bounds: Vec<usize> = order.iter().map(|&p| pieces[p].row(0)).collect();
        let parts = track.split(field, &bounds, tick, collect);
        let chunks = split_values(pieces, order, &bounds, &starts, values, parts);
        let f = &f;
        let work = move |chunk: Chunk<'_, '_, T>| {
            let g = f(chunk.piece);
            let given = given.map(|values| values[chunk.piece]);
            write_chunk(chunk, g, given, observed)
        };
        let n_chunks = chunks.len();
        // The tasks catch their functions' panics; this catches a runner's own.
        let outs = match catch_unwind(AssertUnwindSafe(|| runner.run(chunks, &work))) {
            Ok(outs) if outs.len() == n_chunks => outs,
            unwound => {
                // Tasks may have stored rows whose dirty bits are uncounted or kept aside, and
                // whose changes are unlogged.
                track.repair(field, tick);
                **store_tick = (**store_tick).max(tick);
                self.tick = Some(tick);
                match unwound {
                    Err(panic) => resume_unwind(panic),
                    Ok(_) => panic!("a ChunkRunner must hand back one output per input"),
                }
            }
        };
        let pass = PassOf {
            component: self.component,
            field,
            tick,
            collect,
        };
        let (changed, panic) = merge(outs, pieces, track, events, &pass);
        let Some(changed) = changed else {
            if let Some(panic) = panic {
                resume_unwind(panic);
            }
            return Ok(0);
        };
        **store_tick = (**store_tick).max(tick);
        self.tick = Some(tick);
        if let Some(counter) = counter {
            **counter += changed as u64;
        }
        if let Some(panic) = panic {
            // Every row stored before a function panicked is recorded: pass the panic on.
            resume_unwind(panic);
        }
        Ok(changed)
    }
}

/// Cuts the column into one chunk per non-empty piece (`order`, by first row; `bounds`, their
/// first rows), beside the piece's share of the tracking: each chunk holds the rows from its
/// piece's first row up to the next piece's first row (the set's end for the last).
fn split_values<'c, 'r, T>(
    pieces: &[Piece<'r>],
    order: &[usize],
    bounds: &[usize],
    starts: &[usize],
    values: &'c mut [T],
    parts: Vec<TrackPart<'c>>,
) -> Vec<Chunk<'c, 'r, T>> {
    let mut chunks = Vec::with_capacity(order.len());
    let first = bounds.first().copied().unwrap_or(0);
    let (_, mut rest) = values.split_at_mut(first);
    let mut at = first;
    for ((k, &p), track) in order.iter().enumerate().zip(parts) {
        let end = bounds.get(k + 1).copied().unwrap_or(at + rest.len());
        let (own, after) = std::mem::take(&mut rest).split_at_mut(end - at);
        rest = after;
        chunks.push(Chunk {
            piece: p,
            rows: pieces[p].clone(),
            start: starts[p],
            lo: at,
            values: own,
            track,
        });
        at = end;
    }
    chunks
}

/// Writes one piece's rows in place from its start position, a word of 64 rows at a time:
/// the word's new values computed into a buffer first (so a panic of the piece's function
/// stores nothing of the word it was computing), then compared with the old and stored, then
/// the word's changed ticks and dirty bits recorded through the piece's share of the tracking.
/// A panic of the piece's function is caught and handed back with what the piece stored until
/// then, all of it recorded.
// Long: the word-at-a-time write loop and its panic recovery share the word's buffer and
// mask (as `TrackMut::dense` does).
fn write_chunk<T: Scalar>(
    chunk: Chunk<'_, '_, T>,
    mut g: impl FnMut(&T, usize) -> T,
    given: Option<&[T]>,
    observed: bool,
) -> ChunkOut {
    let Chunk {
        piece,
        rows,
        start,
        lo,
        values,
        mut track,
    } = chunk;
    let mut written = Written {
        changed: 0,
        first: None,
        touched: Vec::new(),
        panic: None,
    };
    let mut buffer: Vec<T> = Vec::with_capacity(64);
    let mut record = |word: usize, mask: u64, first: usize, written: &mut Written| {
        if mask == 0 {
            return;
        }
        written.first.get_or_insert(first);
        track.record_word(word, mask);
        written.changed += mask.count_ones() as usize;
        if observed {
            let mut rest = mask;
            while rest != 0 {
                let row = word * 64 + rest.trailing_zeros() as usize;
                written.touched.push(row as u32);
                rest &= rest - 1;
            }
        }
    };
    let run = catch_unwind(AssertUnwindSafe(|| match &rows {
        Piece::Rows(range) => {
            let mut row = range.start + start;
            while row < range.end {
                let word = row / 64;
                let end = ((word + 1) * 64).min(range.end);
                let position = row - range.start;
                let word_values = &mut values[row - lo..end - lo];
                let mask = match given {
                    Some(given) => copy_word(word_values, &given[position..position + (end - row)]),
                    None => store_word(word_values, &mut buffer, |j, current| {
                        g(current, position + j)
                    }),
                } << (row % 64);
                let first = word * 64 + mask.trailing_zeros() as usize - range.start;
                record(word, mask, first, &mut written);
                row = end;
            }
        }
        Piece::Listed(listed) => {
            let mut i = start;
            while i < listed.len() {
                let word = listed[i] as usize / 64;
                let end = i + listed[i..]
                    .iter()
                    .take_while(|row| **row as usize / 64 == word)
                    .count();
                let group = &listed[i..end];
                buffer.clear();
                buffer.extend(
                    group
                        .iter()
                        .enumerate()
                        .map(|(k, row)| g(&values[*row as usize - lo], i + k)),
                );
                let mut mask = 0u64;
                let mut first = None;
                for (k, (row, next)) in group.iter().zip(buffer.drain(..)).enumerate() {
                    let current = &mut values[*row as usize - lo];
                    if !current.identical(&next) {
                        *current = next;
                        mask |= 1 << (row % 64);
                        first.get_or_insert(i + k);
                    }
                }
                record(word, mask, first.unwrap_or(i), &mut written);
                i = end;
            }
        }
    }));
    if let Err(panic) = run {
        written.panic = Some(panic);
    }
    ChunkOut {
        piece,
        written,
        done: track.done(),
    }
}

/// Stores `given[j]` into `values[j]` for every `j` (at most 64 rows) where it differs, bit
/// for bit, from the current value; returns the mask of the rows that changed (bit `j` for
/// `values[j]`). Cloning a scalar cannot panic, so nothing is stored half way.
#[inline(always)]
fn copy_word<T: Scalar>(values: &mut [T], given: &[T]) -> u64 {
    let changed = values
        .iter()
        .zip(given)
        .filter(|(current, next)| !current.identical(next))
        .count();
    if changed == 0 {
        return 0;
    }
    if changed == values.len() {
        // Every row changed (the common case of a pass that writes new values): one copy.
        values.clone_from_slice(given);
        return u64::MAX >> (64 - values.len());
    }
    let mut mask = 0u64;
    for (j, (current, next)) in values.iter_mut().zip(given).enumerate() {
        if !current.identical(next) {
            current.clone_from(next);
            mask |= 1 << j;
        }
    }
    mask
}

/// [`copy_word`] of `next(j, current)` for every `j`: every new value is computed into `buffer`
/// before any is stored (the piece's function may panic).
#[inline(always)]
fn store_word<T: Scalar>(
    values: &mut [T],
    buffer: &mut Vec<T>,
    mut next: impl FnMut(usize, &T) -> T,
) -> u64 {
    buffer.clear();
    buffer.extend(
        values
            .iter()
            .enumerate()
            .map(|(j, current)| next(j, current)),
    );
    copy_word(values, buffer)
}
