//! Live views of a set's columns by field name, and column writers for tight loops.
//!
//! Invariant: a `View` borrows its set, so it always reads the set's current buffers; it can
//! never outlive a reallocation. A `ColumnWriter` keeps ticks, dirty bits, events and the
//! reverse index exactly as single writes do: every value passes the definition's check
//! (`InstalledDef::check_scalar_value`) before anything is stored, a write of an equal value
//! changes nothing (not even the set's sharing with snapshots: the set is made private at the
//! first actual change, unless the writer reads another field of its own set), and all the
//! changes of one writer share one tick, taken at its first actual change. A pass whose function
//! panics ends where it stopped: every row it stored is recorded (changed tick, change log,
//! dirty bit, event), and the writer's tick, the store's tick and the value-write counter are
//! brought up to date before the panic goes on, so no row is left changed after the store's
//! tick (which a changed filter would report at every later pass).

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Arc;

use strata_arena::InstanceId;

use crate::column::{Column, Scalar};
use crate::def::{ComponentId, FieldId, InstalledDef};
use crate::error::StoreError;
use crate::set::{ComponentSet, Tick};
use crate::shared::SharedSet;
use crate::store::{Store, StoreEvent};
use crate::track::{Panic, TrackMut};

/// A set's columns addressed by field name.
#[derive(Clone, Copy)]
pub struct View<'a> {
    set: &'a ComponentSet,
}

impl<'a> View<'a> {
    /// The number of rows.
    pub fn len(&self) -> usize {
        self.set.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    /// The instance of each row.
    pub fn ids(&self) -> &'a [InstanceId] {
        self.set.ids()
    }

    /// A field's column by name.
    pub fn column(&self, field: &str) -> Option<&'a Column> {
        self.set.column(self.set.def().field_id(field)?)
    }

    /// A field's values by name, typed.
    pub fn values<T: Scalar>(&self, field: &str) -> Option<&'a [T]> {
        let id = self.set.def().field_id(field)?;
        self.set.checked_values::<T>(id).ok()
    }
}

impl ComponentSet {
    /// A view of the columns by field name.
    pub fn view(&self) -> View<'_> {
        View { set: self }
    }
}

/// Writes one field of a set row by row, with full change tracking. The column is bound when
/// the writer is created; the set is made private (copied, if a snapshot shares it) at the
/// first write that changes a value. Each write then compares, stores, and records the change
/// (changed tick, change log, dirty bit, event) like a single write.
pub struct ColumnWriter<'a, T: Scalar> {
    target: Target<'a, T>,
    def: Arc<InstalledDef>,
    store_tick: &'a mut Tick,
    events: &'a mut Vec<StoreEvent>,
    component: ComponentId,
    field: FieldId,
    observed: bool,
    tick: Option<Tick>,
    /// The store's value-write counter, when this column's writes are counted
    /// (`Store::track_value_count`); the public write methods add the rows they changed.
    counter: Option<&'a mut u64>,
}

/// Where a writer stores: the set as it is (nothing written yet, so it may still be shared), a
/// bound typed column, or (for reference fields, whose writes must keep the reverse index
/// exact) the private set itself.
enum Target<'a, T: Scalar> {
    Shared(&'a mut SharedSet),
    Bound {
        values: &'a mut [T],
        track: TrackMut<'a>,
    },
    Set(&'a mut ComponentSet),
    /// Only while `make_private` swaps one target for the next.
    Moving,
}

impl Store {
    /// A writer for one typed field of every row of a component.
    ///
    /// # Errors
    ///
    /// [`StoreError::UnknownComponent`] for a component not installed,
    /// [`StoreError::FieldOutOfRange`] for a field it lacks, and [`StoreError::TypeMismatch`] for a
    /// field whose column does not hold `T`.
    pub fn column_writer<T: Scalar>(
        &mut self,
        component: ComponentId,
        field: FieldId,
    ) -> Result<ColumnWriter<'_, T>, StoreError> {
        Ok(self.update_columns::<T, T>(component, field, None)?.0)
    }

    /// A writer for one typed field of a component and a typed read-only view of another field
    /// (of the same or another component), borrowed together: the shape of a system that
    /// writes one column from another. Indexes are rows of each field's own set. A read of
    /// another field of the written set makes that set private at once (the read borrows it).
    ///
    /// # Errors
    ///
    /// [`StoreError::UnknownComponent`] for a component not installed (written or read),
    /// [`StoreError::FieldOutOfRange`] for a field it lacks, [`StoreError::TypeMismatch`] for a
    /// field whose column does not hold `T` or `R`, and [`StoreError::AliasedColumns`] when the
    /// read is the written column, or another field of a written reference field's set.
    pub fn update_columns<W: Scalar, R: Scalar>(
        &mut self,
        component: ComponentId,
        field: FieldId,
        read: Option<(ComponentId, FieldId)>,
    ) -> Result<(ColumnWriter<'_, W>, &[R]), StoreError> {
        let write_set = self.set(component)?;
        write_set.checked_values::<W>(field)?;
        let references = write_set.def().reference_fields().contains(&field);
        if let Some((rc, rf)) = read {
            self.set(rc)?.checked_values::<R>(rf)?;
            if rc == component && (rf == field || references) {
                return Err(StoreError::AliasedColumns {
                    component,
                    field,
                    component_name: write_set.def().shared_name(),
                    field_name: write_set.def().shared_field_name(field),
                });
            }
        }
        let (shared, other, store_tick, events, frame) =
            self.parts_split(component, read.map(|r| r.0))?;
        let def = Arc::clone(shared.def_arc());
        let observed = def.def().observed;
        let counter = frame.counter(component, field);
        let same_set_read = read.filter(|(rc, _)| *rc == component).map(|(_, rf)| rf);
        let other_values = match (read, other) {
            (Some((_, rf)), Some(other)) => other.values::<R>(rf).unwrap_or(&[]),
            _ => &[],
        };
        let (target, read_values): (Target<'_, W>, &[R]) = match same_set_read {
            // Reading another field of the written set: bind both now.
            Some(rf) => {
                let (values, same, track) = shared
                    .make_mut()
                    .split_write::<W>(field, Some(rf))
                    .ok_or(StoreError::UnknownComponent(component))?;
                let read_values = same.and_then(R::slice).unwrap_or(&[]);
                (Target::Bound { values, track }, read_values)
            }
            None => (Target::Shared(shared), other_values),
        };
        Ok((
            ColumnWriter {
                target,
                def,
                store_tick,
                events,
                component,
                field,
                observed,
                tick: None,
                counter,
            },
            read_values,
        ))
    }
}

impl<T: Scalar> ColumnWriter<'_, T> {
    /// The instance at a row, or `None` past the end (for checking a remembered row still
    /// holds the instance it was taken for).
    pub fn instance_at(&self, row: usize) -> Option<InstanceId> {
        self.ids().get(row).copied()
    }

    /// The current values, by row.
    pub fn values(&self) -> &[T] {
        match &self.target {
            Target::Shared(set) => set.values::<T>(self.field).unwrap_or(&[]),
            Target::Bound { values, .. } => values,
            Target::Set(set) => set.values::<T>(self.field).unwrap_or(&[]),
            Target::Moving => &[],
        }
    }

    /// The instance of each row.
    pub fn ids(&self) -> &[InstanceId] {
        match &self.target {
            Target::Shared(set) => set.ids(),
            Target::Bound { track, .. } => track.ids(),
            Target::Set(set) => set.ids(),
            Target::Moving => &[],
        }
    }

    /// Makes the set private and binds the column for writing, if not done yet.
    fn make_private(&mut self) {
        if !matches!(self.target, Target::Shared(_)) {
            return;
        }
        let Target::Shared(shared) = std::mem::replace(&mut self.target, Target::Moving) else {
            return;
        };
        let set = shared.make_mut();
        self.target = if set.def().reference_fields().contains(&self.field) {
            Target::Set(set)
        } else {
            let (values, _, track) = set
                .split_write::<T>(self.field, None)
                .expect("the field's column holds T: update_columns checked it");
            Target::Bound { values, track }
        };
    }

    /// Checks that the field can hold `value` (an enum index must name a variant), as every
    /// write of this writer does before storing anything; see
    /// [`InstalledDef::check_scalar_value`].
    ///
    /// # Errors
    ///
    /// [`StoreError::TypeMismatch`] for an enum index past the variants.
    #[inline]
    pub fn check(&self, value: &T) -> Result<(), StoreError> {
        if T::RANGED {
            self.def.check_scalar_value(self.field, value)?;
        }
        Ok(())
    }

    /// The tick this writer's changes take.
    #[inline]
    fn tick(&self) -> Tick {
        self.tick.unwrap_or(Tick(self.store_tick.0 + 1))
    }

    /// Notes that this writer changed something at `tick`.
    #[inline]
    fn changed_at(&mut self, tick: Tick) {
        self.tick = Some(tick);
        *self.store_tick = (*self.store_tick).max(tick);
    }

    /// Writes `f(current, read)` into rows `0..n` (`n` the shorter of the column and `reads`),
    /// where row `i` reads `reads[i]`: the tight loop for a dense pass. Equal results change
    /// nothing. Returns how many rows changed.
    ///
    /// A panic of `f` stops the pass: the rows it stored before are recorded as changed (ticks,
    /// change log, dirty bits, events, the store's tick, the value-write counter), as if the
    /// pass had ended there, and the panic goes on to the caller.
    ///
    /// # Errors
    ///
    /// Refused, changing nothing, when a result is a value the field cannot hold (see
    /// [`ColumnWriter::check`]).
    pub fn update_dense<R>(
        &mut self,
        reads: &[R],
        f: impl FnMut(&T, &R) -> T,
    ) -> Result<usize, StoreError> {
        self.dense_pass(reads, f)
    }

    /// Adds `changed` writes to the value-write counter, when this column is counted.
    #[inline]
    fn count(&mut self, changed: usize) {
        if let Some(counter) = &mut self.counter {
            **counter += changed as u64;
        }
    }

    /// Completes a pass that changed `changed` rows at `tick`, each already recorded in the
    /// set's tracking: the writer's tick, the store's, and the value-write counter. Then
    /// resumes the panic of the pass's function, if it panicked, so a pass cut short by a panic
    /// leaves the store as if it had ended at its last stored row.
    fn end_pass(&mut self, changed: usize, tick: Tick, panic: Option<Panic>) -> usize {
        if changed > 0 {
            self.changed_at(tick);
        }
        self.count(changed);
        if let Some(panic) = panic {
            resume_unwind(panic);
        }
        changed
    }

    /// [`ColumnWriter::update_dense`].
    fn dense_pass<R>(
        &mut self,
        reads: &[R],
        mut f: impl FnMut(&T, &R) -> T,
    ) -> Result<usize, StoreError> {
        // A reference field is written through the set (which keeps the reverse index), and its
        // writer's target only becomes the set at the first change: ask the definition.
        if self.observed || T::RANGED || self.def.reference_fields().contains(&self.field) {
            return self.indexed_pass(reads.len(), |i| (i, i), |current, i| f(current, &reads[i]));
        }
        let tick = self.tick();
        let field = self.field;
        // While the set may be shared, compute without storing until a result differs.
        let mut start = 0;
        let mut first = None;
        if let Target::Shared(set) = &self.target {
            let values = set.values::<T>(field).unwrap_or(&[]);
            let n = values.len().min(reads.len());
            for (row, (value, read)) in values[..n].iter().zip(&reads[..n]).enumerate() {
                let next = f(value, read);
                if !value.identical(&next) {
                    first = Some((row, next));
                    break;
                }
            }
            let Some((row, _)) = first else {
                return Ok(0);
            };
            start = row + 1;
            self.make_private();
        }
        let Target::Bound { values, track } = &mut self.target else {
            return Ok(0);
        };
        let mut changed = 0;
        if let Some((row, next)) = first {
            track.prepare(values.len().min(reads.len()) - row, tick);
            values[row] = next;
            track.mark(row, field, tick);
            changed += 1;
        }
        let (more, panic) = track.dense(field, values, reads, start, tick, f);
        Ok(self.end_pass(changed + more, tick, panic))
    }

    /// Writes `f(current, k)` into row `rows(k).0` for `k` in `0..n`; the generic tight loop
    /// behind dense and indexed passes (`rows(k).1` is handed back to `f` as its read index).
    /// Rows past the end are skipped; equal results change nothing. Returns how many rows
    /// changed.
    ///
    /// # Errors
    ///
    /// Refused, changing nothing, when a result is a value the field cannot hold (see
    /// [`ColumnWriter::check`]). A panic of `f` stops the pass as it does
    /// [`ColumnWriter::update_dense`]: what was stored before it is recorded.
    pub fn update_indexed(
        &mut self,
        n: usize,
        rows: impl FnMut(usize) -> (usize, usize),
        f: impl FnMut(&T, usize) -> T,
    ) -> Result<usize, StoreError> {
        self.indexed_pass(n, rows, f)
    }

    /// [`ColumnWriter::update_indexed`].
    // Long: the checked (ranged) and plain passes side by side, recording changes alike.
    fn indexed_pass(
        &mut self,
        n: usize,
        mut rows: impl FnMut(usize) -> (usize, usize),
        mut f: impl FnMut(&T, usize) -> T,
    ) -> Result<usize, StoreError> {
        if T::RANGED {
            // Every result is checked before the first is stored.
            let mut planned = Vec::with_capacity(n);
            for k in 0..n {
                let (row, read) = rows(k);
                let Some(current) = self.values().get(row) else {
                    continue;
                };
                let next = f(current, read);
                self.check(&next)?;
                planned.push((k, row, next));
            }
            let mut changed = 0;
            let mut prepared = false;
            for (k, row, next) in planned {
                if !prepared && self.values().get(row).is_some_and(|v| !v.identical(&next)) {
                    self.prepare_at_first_change(n - k);
                    prepared = true;
                }
                changed += usize::from(self.store(row, next)?);
            }
            let tick = self.tick();
            return Ok(self.end_pass(changed, tick, None));
        }
        // While the set may be shared, compute without storing until a result differs.
        let mut k = 0;
        let mut first = None;
        if let Target::Shared(set) = &self.target {
            let values = set.values::<T>(self.field).unwrap_or(&[]);
            while k < n && first.is_none() {
                let (row, read) = rows(k);
                k += 1;
                if let Some(current) = values.get(row) {
                    let next = f(current, read);
                    if !current.identical(&next) {
                        first = Some((row, next));
                    }
                }
            }
            if first.is_none() {
                return Ok(0);
            }
        }
        let mut changed = 0;
        let mut prepared = false;
        if let Some((row, next)) = first {
            self.prepare_at_first_change(n - (k - 1));
            prepared = true;
            changed += usize::from(self.store(row, next)?);
        }
        let tick = self.tick();
        // Every row is recorded as it is stored, so a panic of `f` leaves only the writer's
        // and the store's ticks and the counter to complete (`end_pass`).
        let mut refused = None;
        let run = match &mut self.target {
            Target::Bound { values, track } => {
                let (field, observed, component) = (self.field, self.observed, self.component);
                let events = &mut *self.events;
                let changed = &mut changed;
                catch_unwind(AssertUnwindSafe(|| {
                    for k in k..n {
                        let (row, read) = rows(k);
                        let Some(current) = values.get_mut(row) else {
                            continue;
                        };
                        let next = f(current, read);
                        if !current.identical(&next) {
                            *current = next;
                            if !prepared {
                                track.prepare(n - k, tick);
                                prepared = true;
                            }
                            track.mark(row, field, tick);
                            *changed += 1;
                            if observed {
                                events.push(StoreEvent::Changed {
                                    id: track.id(row),
                                    component,
                                    field,
                                });
                            }
                        }
                    }
                }))
            }
            Target::Set(_) | Target::Shared(_) | Target::Moving => {
                catch_unwind(AssertUnwindSafe(|| {
                    for k in k..n {
                        let (row, read) = rows(k);
                        let Some(current) = self.values().get(row).cloned() else {
                            continue;
                        };
                        let next = f(&current, read);
                        let stored = self.check(&next).and_then(|()| self.store(row, next));
                        match stored {
                            Ok(stored) => changed += usize::from(stored),
                            Err(error) => {
                                refused = Some(error);
                                return;
                            }
                        }
                    }
                }))
            }
        };
        let changed = self.end_pass(changed, tick, run.err());
        match refused {
            Some(error) => Err(error),
            None => Ok(changed),
        }
    }

    /// Prepares the change log at a pass's first change for the `remaining` positions from it
    /// to the pass's end (see `ChangeLog::prepare`), the set made private first; as every pass
    /// does, serial or parallel, so they log alike. Writes through the set itself (reference
    /// fields) log row by row instead.
    fn prepare_at_first_change(&mut self, remaining: usize) {
        self.make_private();
        let tick = self.tick();
        if let Target::Bound { track, .. } = &mut self.target {
            track.prepare(remaining, tick);
        }
    }

    /// Writes row `row`; returns `false`, changing nothing, for an equal value.
    ///
    /// # Errors
    ///
    /// Refused, changing nothing, for a row out of range ([`StoreError::RowOutOfRange`]) or a value
    /// the field cannot hold (see [`ColumnWriter::check`]).
    #[inline]
    pub fn write(&mut self, row: usize, value: T) -> Result<bool, StoreError> {
        self.check(&value)?;
        let changed = self.store(row, value)?;
        self.count(usize::from(changed));
        Ok(changed)
    }

    /// [`ColumnWriter::write`] of a value already checked.
    #[inline]
    fn store(&mut self, row: usize, value: T) -> Result<bool, StoreError> {
        let tick = self.tick();
        if matches!(self.target, Target::Shared(_)) {
            match self.values().get(row) {
                None => return Err(out_of_range(&self.def, row)),
                Some(current) if current.identical(&value) => return Ok(false),
                Some(_) => self.make_private(),
            }
        }
        let id = match &mut self.target {
            Target::Bound { values, track } => {
                let Some(slot) = values.get_mut(row) else {
                    return Err(out_of_range(&self.def, row));
                };
                if slot.identical(&value) {
                    return Ok(false);
                }
                *slot = value;
                track.mark(row, self.field, tick);
                track.id(row)
            }
            Target::Set(set) => {
                match set.values::<T>(self.field).and_then(|v| v.get(row)) {
                    None => return Err(out_of_range(&self.def, row)),
                    Some(current) if current.identical(&value) => return Ok(false),
                    Some(_) => {}
                }
                if !set.write(row, self.field, value.into_value(), tick) {
                    return Ok(false);
                }
                set.ids()[row]
            }
            Target::Shared(_) | Target::Moving => return Ok(false),
        };
        self.changed_at(tick);
        if self.observed {
            self.events.push(StoreEvent::Changed {
                id,
                component: self.component,
                field: self.field,
            });
        }
        Ok(true)
    }
}

/// The refusal of a row past the end of `def`'s set.
#[cold]
fn out_of_range(def: &InstalledDef, row: usize) -> StoreError {
    StoreError::RowOutOfRange {
        component: def.name().to_owned(),
        row,
    }
}
