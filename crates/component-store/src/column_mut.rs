//! `ColumnMut`: a whole typed column handed out as `&mut [T]` for loops the store cannot
//! watch write by write (seed 002's write-intent column access).
//!
//! Invariant: taking one marks the component dirty as a whole for the frame at once, written
//! or not; and when it is dropped, every row whose value differs (by `Scalar::identical`) from
//! the copy taken at access is recorded as changed at one new tick, exactly as a column writer
//! records it (changed tick, change log, dirty bit, event, value counter), so equal-write
//! detection and change ticks stay honest: a row written with its own value is no change.
//! Only columns whose every value is valid (no references, which the reverse index must see,
//! and no enum indexes, which must name a variant) are handed out.

use std::ops::{Deref, DerefMut};

use crate::column::Scalar;
use crate::def::{ComponentId, FieldId};
use crate::error::StoreError;
use crate::set::Tick;
use crate::store::{Store, StoreEvent};
use crate::track::TrackMut;

/// A component's typed column for writing in place, from [`Store::column_mut`]. Dereferences
/// to `[T]`, one value per row. Changes are recorded when it is dropped (leaking it with
/// `std::mem::forget` loses their records, not the values).
pub struct ColumnMut<'a, T: Scalar> {
    values: &'a mut [T],
    track: TrackMut<'a>,
    before: Vec<T>,
    store_tick: &'a mut Tick,
    events: &'a mut Vec<StoreEvent>,
    counter: Option<&'a mut u64>,
    component: ComponentId,
    field: FieldId,
    observed: bool,
}

impl<T: Scalar> Deref for ColumnMut<'_, T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        self.values
    }
}

impl<T: Scalar> DerefMut for ColumnMut<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.values
    }
}

impl<T: Scalar> Drop for ColumnMut<'_, T> {
    fn drop(&mut self) {
        let tick = Tick(self.store_tick.0 + 1);
        let len = self.values.len();
        let mut changed = 0u64;
        for row in 0..len {
            if self.values[row].identical(&self.before[row]) {
                continue;
            }
            if changed == 0 {
                self.track.prepare(len - row, tick);
            }
            changed += 1;
            self.track.mark(row, self.field, tick);
            if self.observed {
                self.events.push(StoreEvent::Changed {
                    id: self.track.id(row),
                    component: self.component,
                    field: self.field,
                });
            }
        }
        if changed > 0 {
            *self.store_tick = tick;
            if let Some(counter) = &mut self.counter {
                **counter += changed;
            }
        }
    }
}

impl Store {
    /// A component's typed column for writing in place: the whole `&mut [T]`, one value per
    /// row. Taking it marks the component dirty as a whole for the frame
    /// ([`FrameDirty::Whole`](crate::FrameDirty::Whole)) even if nothing is written: take it
    /// only for loops that write, and read through [`ComponentSet::values`](crate::ComponentSet::values)
    /// otherwise. The set is made private at once (copied when a snapshot shares it). When
    /// the column is dropped, each row whose value changed (bit identity) is recorded as a
    /// change at one new tick, like a [`ColumnWriter`](crate::ColumnWriter) pass; an equal
    /// write is no change. Costs a copy of the column at access and a comparison at drop.
    ///
    /// Refused, changing nothing: a component not installed, a field it lacks or whose column
    /// does not hold `T` ([`StoreError::TypeMismatch`]), and a reference or enum field, whose
    /// every write the store must check ([`StoreError::UncheckedColumn`]).
    ///
    /// ```
    /// use strata_arena::{Arena, ClassId};
    /// use strata_component_store::{ComponentDef, FieldDef, FrameDirty, InstanceRef, Store};
    ///
    /// let mut arena = Arena::standard();
    /// let mut store = Store::new();
    /// let speed = store.install(
    ///     ComponentDef::new("Speed").field(FieldDef::number("value", 1.0)),
    ///     arena.classes(),
    /// )?;
    /// let value = store.field(speed, "value")?;
    /// let a = arena.create(ClassId::ENTITY, None)?;
    /// let a = InstanceRef::of(&arena, a)?;
    /// store.add(a, ClassId::ENTITY, speed, [])?;
    /// store.end_frame();
    /// assert_eq!(store.frame_dirty(speed)?, FrameDirty::Clean);
    ///
    /// let before = store.tick();
    /// for v in store.column_mut::<f64>(speed, value)?.iter_mut() {
    ///     *v *= 2.0;
    /// }
    /// assert_eq!(store.frame_dirty(speed)?, FrameDirty::Whole);
    /// assert!(store.tick() > before, "the changed row took a tick");
    /// assert_eq!(*store.get::<f64>(a, speed, value)?, 2.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`StoreError::UnknownComponent`] for a component not installed,
    /// [`StoreError::FieldOutOfRange`] for a field it lacks, [`StoreError::TypeMismatch`] for a
    /// field whose column does not hold `T`, and [`StoreError::UncheckedColumn`] for a reference,
    /// enum or other ranged field, whose values only checked writes may store.
    pub fn column_mut<T: Scalar>(
        &mut self,
        component: ComponentId,
        field: FieldId,
    ) -> Result<ColumnMut<'_, T>, StoreError> {
        let set = self.set(component)?;
        set.checked_values::<T>(field)?;
        if T::RANGED || set.def().reference_fields().contains(&field) {
            return Err(StoreError::UncheckedColumn {
                component,
                field,
                component_name: set.def().shared_name(),
                field_name: set.def().shared_field_name(field),
            });
        }
        let (shared, _, store_tick, events, frame) = self.parts_split(component, None)?;
        frame.mark_whole(component);
        let counter = frame.counter(component, field);
        let set = shared.make_mut();
        let observed = set.def().def.observed;
        let (values, _, track) = set
            .split_write::<T>(field, None)
            .ok_or(StoreError::UnknownComponent(component))?;
        let before = values.to_vec();
        Ok(ColumnMut {
            values,
            track,
            before,
            store_tick,
            events,
            counter,
            component,
            field,
            observed,
        })
    }
}
