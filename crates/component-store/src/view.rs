//! Live views of a set's columns by field name, and column writers for tight loops.
//!
//! Invariant: a `View` borrows its set, so it always reads the set's current buffers; it can
//! never outlive a reallocation. A `ColumnWriter` keeps ticks, dirty masks, events and the
//! reverse index exactly as single writes do: a write of an equal value changes nothing, and
//! all the changes of one writer share one tick, taken at its first actual change.

use strata_arena::InstanceId;

use crate::column::{Column, Scalar};
use crate::def::{ComponentId, FieldId};
use crate::error::StoreError;
use crate::set::{ComponentSet, Tick};
use crate::store::{Store, StoreEvent, typed_column};

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
        typed_column::<T>(self.set, id).ok()
    }
}

impl ComponentSet {
    /// A view of the columns by field name.
    pub fn view(&self) -> View<'_> {
        View { set: self }
    }
}

/// Writes one field of a set row by row, with full change tracking. The set is made private
/// once, when the writer is created.
pub struct ColumnWriter<'a, T: Scalar> {
    set: &'a mut ComponentSet,
    store_tick: &'a mut Tick,
    events: &'a mut Vec<StoreEvent>,
    component: ComponentId,
    field: FieldId,
    observed: bool,
    references: bool,
    tick: Option<Tick>,
    _marker: std::marker::PhantomData<T>,
}

impl Store {
    /// A writer for one typed field of every row of a component.
    pub fn column_writer<T: Scalar>(
        &mut self,
        component: ComponentId,
        field: FieldId,
    ) -> Result<ColumnWriter<'_, T>, StoreError> {
        typed_column::<T>(self.set(component)?, field)?;
        let (set, store_tick, events) = self.parts_mut(component)?;
        let observed = set.def().def().observed;
        let references = set.def.reference_fields.contains(&field);
        Ok(ColumnWriter {
            set,
            store_tick,
            events,
            component,
            field,
            observed,
            references,
            tick: None,
            _marker: std::marker::PhantomData,
        })
    }
}

impl<T: Scalar> ColumnWriter<'_, T> {
    /// The current values, by row.
    pub fn values(&self) -> &[T] {
        self.set.values::<T>(self.field).unwrap_or(&[])
    }

    /// The instance of each row.
    pub fn ids(&self) -> &[InstanceId] {
        self.set.ids()
    }

    /// Writes row `row`; returns `false`, changing nothing, for an equal value or a row out of
    /// range.
    pub fn write(&mut self, row: usize, value: T) -> bool {
        if self.values().get(row).is_none_or(|v| *v == value) {
            return false;
        }
        let tick = *self.tick.get_or_insert(Tick(self.store_tick.0 + 1));
        let changed = if self.references {
            self.set.write(row, self.field, value.into_value(), tick)
        } else {
            if let Some(values) = self.set.typed_mut::<T>(self.field) {
                values[row] = value;
            }
            self.set.mark_changed(row, self.field, tick);
            true
        };
        if changed {
            *self.store_tick = (*self.store_tick).max(tick);
            if self.observed {
                self.events.push(StoreEvent::Changed {
                    id: self.set.ids[row],
                    component: self.component,
                    field: self.field,
                });
            }
        }
        changed
    }
}
