//! Live views of a set's columns by field name, and column writers for tight loops.
//!
//! Invariant: a `View` borrows its set, so it always reads the set's current buffers; it can
//! never outlive a reallocation. A `ColumnWriter` keeps ticks, dirty masks, events and the
//! reverse index exactly as single writes do: every value passes the definition's check
//! (`InstalledDef::check_scalar_value`) before anything is stored, a write of an equal value
//! changes nothing, and all the changes of one writer share one tick, taken at its first actual
//! change.

use std::sync::Arc;

use strata_arena::InstanceId;

use crate::column::{Column, Scalar};
use crate::def::{ComponentId, FieldId, InstalledDef};
use crate::error::StoreError;
use crate::set::{ComponentSet, Tick, Track};
use crate::store::{Store, StoreEvent};

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

/// Writes one field of a set row by row, with full change tracking. The set is made private and
/// the column bound once, when the writer is created; each write then compares, stores, and
/// records the change (changed tick, change log, dirty mask, event) like a single write.
pub struct ColumnWriter<'a, T: Scalar> {
    target: Target<'a, T>,
    def: Arc<InstalledDef>,
    store_tick: &'a mut Tick,
    events: &'a mut Vec<StoreEvent>,
    component: ComponentId,
    field: FieldId,
    observed: bool,
    tick: Option<Tick>,
}

/// Where a writer stores: a bound typed column, or (for reference fields, whose writes must
/// keep the reverse index exact) the set itself.
enum Target<'a, T: Scalar> {
    Bound {
        values: &'a mut [T],
        track: Track<'a>,
    },
    Set(&'a mut ComponentSet),
}

impl Store {
    /// A writer for one typed field of every row of a component.
    pub fn column_writer<T: Scalar>(
        &mut self,
        component: ComponentId,
        field: FieldId,
    ) -> Result<ColumnWriter<'_, T>, StoreError> {
        Ok(self.update_columns::<T, T>(component, field, None)?.0)
    }

    /// A writer for one typed field of a component and a typed read-only view of another field
    /// (of the same or another component), borrowed together: the shape of a system that
    /// writes one column from another. Indexes are rows of each field's own set.
    pub fn update_columns<W: Scalar, R: Scalar>(
        &mut self,
        component: ComponentId,
        field: FieldId,
        read: Option<(ComponentId, FieldId)>,
    ) -> Result<(ColumnWriter<'_, W>, &[R]), StoreError> {
        let write_set = self.set(component)?;
        write_set.checked_values::<W>(field)?;
        let references = write_set.def.reference_fields.contains(&field);
        if let Some((rc, rf)) = read {
            self.set(rc)?.checked_values::<R>(rf)?;
            if rc == component && (rf == field || references) {
                return Err(StoreError::AliasedColumns { component, field });
            }
        }
        let (set, other, store_tick, events) = self.parts_split(component, read.map(|r| r.0))?;
        let def = Arc::clone(&set.def);
        let observed = def.def().observed;
        let same_set_read = read.filter(|(rc, _)| *rc == component).map(|(_, rf)| rf);
        let (target, read_values): (Target<'_, W>, &[R]) = if references {
            let values = match (read, other) {
                (Some((_, rf)), Some(other)) => other.values::<R>(rf).unwrap_or(&[]),
                _ => &[],
            };
            (Target::Set(set), values)
        } else {
            let (values, same, track) = set
                .split_write::<W>(field, same_set_read)
                .ok_or(StoreError::UnknownComponent(component))?;
            let read_values = match (read, same, other) {
                (Some(_), Some(column), _) => R::slice(column).unwrap_or(&[]),
                (Some((_, rf)), None, Some(other)) => other.values::<R>(rf).unwrap_or(&[]),
                _ => &[],
            };
            (Target::Bound { values, track }, read_values)
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
            },
            read_values,
        ))
    }
}

impl<T: Scalar> ColumnWriter<'_, T> {
    /// The instance at a row, or `None` past the end (for checking a remembered row still
    /// holds the instance it was taken for).
    pub fn instance_at(&self, row: usize) -> Option<InstanceId> {
        match &self.target {
            Target::Bound { track, .. } => track.ids().get(row).copied(),
            Target::Set(set) => set.ids.get(row).copied(),
        }
    }

    /// The current values, by row.
    pub fn values(&self) -> &[T] {
        match &self.target {
            Target::Bound { values, .. } => values,
            Target::Set(set) => set.values::<T>(self.field).unwrap_or(&[]),
        }
    }

    /// Checks that the field can hold `value` (an enum index must name a variant), as every
    /// write of this writer does before storing anything; see
    /// [`InstalledDef::check_scalar_value`].
    #[inline]
    pub fn check(&self, value: &T) -> Result<(), StoreError> {
        if T::RANGED {
            self.def.check_scalar_value(self.field, value)?;
        }
        Ok(())
    }

    /// Writes `f(current, read)` into rows `0..n` (`n` the shorter of the column and `reads`),
    /// where row `i` reads `reads[i]`: the tight loop for a dense pass. Equal results change
    /// nothing. Returns how many rows changed; refused, changing nothing, when a result is a
    /// value the field cannot hold (see [`ColumnWriter::check`]).
    pub fn update_dense<R>(
        &mut self,
        reads: &[R],
        mut f: impl FnMut(&T, &R) -> T,
    ) -> Result<usize, StoreError> {
        let tick = self.tick.unwrap_or(Tick(self.store_tick.0 + 1));
        let field = self.field;
        match &mut self.target {
            // The common shape (one dirty word per row, no observer events, no value that can
            // fall outside the field): a loop over zipped slices, with the change-log check
            // against a hoisted base.
            Target::Bound { values, track }
                if track.dirty_words == 1 && !self.observed && !T::RANGED =>
            {
                track.prepare_bulk(values.len().min(reads.len()), tick);
                track.reserve_dirty(values.len().min(reads.len()));
                let bit = 1u64 << (field.index() % 64);
                let mut base = *track.log_base;
                let mut changed = 0;
                let n = values.len().min(reads.len()).min(track.changed.len());
                let rows = values[..n]
                    .iter_mut()
                    .zip(&reads[..n])
                    .zip(track.changed[..n].iter_mut().zip(&mut track.dirty[..n]));
                for (row, ((value, read), (changed_tick, mask))) in rows.enumerate() {
                    let next = f(value, read);
                    if value.identical(&next) {
                        continue;
                    }
                    *value = next;
                    changed += 1;
                    let previous = std::mem::replace(changed_tick, tick);
                    if previous <= base && tick > base {
                        let at = crate::set::ChangeRecord {
                            at: crate::set::InstanceRef::new(track.ids[row], track.slots[row]),
                            row: row as u32,
                        };
                        Track::log_into(
                            track.change_log,
                            track.log_base,
                            track.ids.len(),
                            at,
                            tick,
                        );
                        base = *track.log_base;
                    }
                    if *mask == 0 {
                        track.dirty_rows.push(crate::set::InstanceRef::new(
                            track.ids[row],
                            track.slots[row],
                        ));
                    }
                    *mask |= bit;
                }
                if changed > 0 {
                    self.tick = Some(tick);
                    *self.store_tick = (*self.store_tick).max(tick);
                }
                Ok(changed)
            }
            _ => self.update_indexed(reads.len(), |i| (i, i), |current, i| f(current, &reads[i])),
        }
    }

    /// Writes `f(current, k)` into row `rows(k).0` for `k` in `0..n`; the generic tight loop
    /// behind dense and indexed passes (`rows(k).1` is handed back to `f` as its read index).
    /// Rows past the end are skipped; equal results change nothing. Returns how many rows
    /// changed; refused, changing nothing, when a result is a value the field cannot hold
    /// (see [`ColumnWriter::check`]).
    pub fn update_indexed(
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
                planned.push((row, next));
            }
            let mut changed = 0;
            for (row, next) in planned {
                changed += usize::from(self.store(row, next)?);
            }
            return Ok(changed);
        }
        let tick = match self.tick {
            Some(tick) => tick,
            None => Tick(self.store_tick.0 + 1),
        };
        let mut changed = 0;
        match &mut self.target {
            Target::Bound { values, track } => {
                track.prepare_bulk(n, tick);
                for k in 0..n {
                    let (row, read) = rows(k);
                    let Some(current) = values.get_mut(row) else {
                        continue;
                    };
                    let next = f(current, read);
                    if !current.identical(&next) {
                        *current = next;
                        track.mark(row, self.field, tick);
                        changed += 1;
                        if self.observed {
                            self.events.push(StoreEvent::Changed {
                                id: track.id(row),
                                component: self.component,
                                field: self.field,
                            });
                        }
                    }
                }
            }
            Target::Set(_) => {
                for k in 0..n {
                    let (row, read) = rows(k);
                    let Some(current) = self.values().get(row).cloned() else {
                        continue;
                    };
                    let next = f(&current, read);
                    changed += usize::from(self.write(row, next)?);
                }
                return Ok(changed);
            }
        }
        if changed > 0 {
            self.tick = Some(tick);
            *self.store_tick = (*self.store_tick).max(tick);
        }
        Ok(changed)
    }

    /// The instance of each row.
    pub fn ids(&self) -> &[InstanceId] {
        match &self.target {
            Target::Bound { track, .. } => track.ids(),
            Target::Set(set) => set.ids(),
        }
    }

    /// Writes row `row`; returns `false`, changing nothing, for an equal value. Refused,
    /// changing nothing, for a row out of range ([`StoreError::RowOutOfRange`]) or a value the
    /// field cannot hold (see [`ColumnWriter::check`]).
    #[inline]
    pub fn write(&mut self, row: usize, value: T) -> Result<bool, StoreError> {
        self.check(&value)?;
        self.store(row, value)
    }

    /// [`ColumnWriter::write`] of a value already checked.
    #[inline]
    fn store(&mut self, row: usize, value: T) -> Result<bool, StoreError> {
        let tick = match self.tick {
            Some(tick) => tick,
            None => Tick(self.store_tick.0 + 1),
        };
        let out_of_range = || StoreError::RowOutOfRange {
            component: self.def.name().to_owned(),
            row,
        };
        let id = match &mut self.target {
            Target::Bound { values, track } => {
                let Some(slot) = values.get_mut(row) else {
                    return Err(out_of_range());
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
                    None => return Err(out_of_range()),
                    Some(current) if current.identical(&value) => return Ok(false),
                    Some(_) => {}
                }
                if !set.write(row, self.field, value.into_value(), tick) {
                    return Ok(false);
                }
                set.ids[row]
            }
        };
        self.tick = Some(tick);
        *self.store_tick = (*self.store_tick).max(tick);
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
