//! Reading and writing fields of a [`Store`]'s rows, typed and in dynamic form.
//!
//! Invariant: every value is checked against its field's type before it is stored; a write of
//! a value bit-identical to the stored one changes nothing (no tick, no event, no dirty state)
//! and returns `false`; a write to a reference field goes through `write_row`, which keeps the
//! reverse reference index exact.

use super::{Store, StoreEvent, member_row};
use crate::column::Scalar;
use crate::def::{ComponentId, FieldId};
use crate::error::StoreError;
use crate::set::{InstanceRef, Tick};
use crate::value::Value;

impl Store {
    /// A field's value, typed (no boxing).
    ///
    /// # Errors
    ///
    /// [`StoreError::UnknownComponent`] for a component not installed,
    /// [`StoreError::MissingMembership`] when the instance does not hold it,
    /// [`StoreError::FieldOutOfRange`] for a field it lacks, and [`StoreError::TypeMismatch`] for a
    /// field whose column does not hold `T`.
    pub fn get<T: Scalar>(
        &self,
        at: InstanceRef,
        component: ComponentId,
        field: FieldId,
    ) -> Result<&T, StoreError> {
        let set = self.set(component)?;
        let row = member_row(set, at)?;
        let values = set.checked_values::<T>(field)?;
        Ok(&values[row])
    }

    /// A field's value in dynamic form.
    ///
    /// # Errors
    ///
    /// [`StoreError::UnknownComponent`] for a component not installed,
    /// [`StoreError::MissingMembership`] when the instance does not hold it, and
    /// [`StoreError::FieldOutOfRange`] for a field it lacks.
    pub fn get_value(
        &self,
        at: InstanceRef,
        component: ComponentId,
        field: FieldId,
    ) -> Result<Value, StoreError> {
        let set = self.set(component)?;
        let row = member_row(set, at)?;
        set.def().checked_field(field)?;
        // The field exists and the row is present, so the column holds a value there.
        set.value(row, field)
            .ok_or_else(|| StoreError::RowOutOfRange {
                component: set.def().name().to_owned(),
                row,
            })
    }

    /// Writes a field, typed. An equal value changes nothing and returns `false`.
    ///
    /// # Errors
    ///
    /// [`StoreError::UnknownComponent`] for a component not installed,
    /// [`StoreError::MissingMembership`] when the instance does not hold it,
    /// [`StoreError::FieldOutOfRange`] for a field it lacks, [`StoreError::TypeMismatch`] for a
    /// field whose column does not hold `T`, and [`StoreError::TypeMismatch`] for an enum index
    /// past the variants; nothing changes then.
    pub fn write<T: Scalar>(
        &mut self,
        at: InstanceRef,
        component: ComponentId,
        field: FieldId,
        value: T,
    ) -> Result<bool, StoreError> {
        let Some((set, tick, events)) = self.parts(component) else {
            return Err(StoreError::UnknownComponent(component));
        };
        let row = member_row(set, at)?;
        let def = set.def();
        let field_def = def.check_scalar_value(field, &value)?;
        let Some(values) = set.values::<T>(field) else {
            return Err(def.type_mismatch(field_def, std::any::type_name::<T>()));
        };
        if values[row].identical(&value) {
            return Ok(false);
        }
        if def.reference_fields.contains(&field) {
            let changed = self.write_row(component, row, field, value.into_value())?;
            self.frame
                .count_values(component, field, u64::from(changed));
            return Ok(changed);
        }
        let observed = def.def.observed;
        tick.0 += 1;
        set.make_mut().write_typed(row, field, value, *tick);
        if observed {
            events.push(StoreEvent::Changed {
                id: at.id,
                component,
                field,
            });
        }
        self.frame.count_values(component, field, 1);
        Ok(true)
    }

    /// Writes a field in dynamic form. An equal value changes nothing and returns `false`.
    ///
    /// # Errors
    ///
    /// [`StoreError::UnknownComponent`] for a component not installed,
    /// [`StoreError::MissingMembership`] when the instance does not hold it,
    /// [`StoreError::FieldOutOfRange`] for a field it lacks, and [`StoreError::TypeMismatch`] for a
    /// value the field cannot hold; nothing changes then.
    pub fn write_value(
        &mut self,
        at: InstanceRef,
        component: ComponentId,
        field: FieldId,
        value: Value,
    ) -> Result<bool, StoreError> {
        let set = self.set(component)?;
        let row = member_row(set, at)?;
        set.def().check_value(field, &value)?;
        if set.value(row, field).is_some_and(|v| v.identical(&value)) {
            return Ok(false);
        }
        let changed = self.write_row(component, row, field, value)?;
        self.frame
            .count_values(component, field, u64::from(changed));
        Ok(changed)
    }

    /// Writes a field at a row in dynamic form: the value is checked against the field's type;
    /// an equal value changes nothing and returns `false`. The caller is responsible for the row
    /// still holding the instance it means (see `ComponentSet::ids`).
    ///
    /// # Errors
    ///
    /// [`StoreError::UnknownComponent`] for a component not installed,
    /// [`StoreError::FieldOutOfRange`] for a field it lacks, [`StoreError::TypeMismatch`] for a
    /// value the field cannot hold, and [`StoreError::RowOutOfRange`] for a row past the set's
    /// rows; nothing changes then.
    pub fn write_value_at(
        &mut self,
        component: ComponentId,
        row: usize,
        field: FieldId,
        value: Value,
    ) -> Result<bool, StoreError> {
        let set = self.set(component)?;
        set.def().check_value(field, &value)?;
        if row >= set.len() {
            return Err(StoreError::RowOutOfRange {
                component: set.def().name().to_owned(),
                row,
            });
        }
        if set.value(row, field).is_some_and(|v| v.identical(&value)) {
            return Ok(false);
        }
        let changed = self.write_row(component, row, field, value)?;
        self.frame
            .count_values(component, field, u64::from(changed));
        Ok(changed)
    }

    /// Writes a checked, different value at a row.
    pub(crate) fn write_row(
        &mut self,
        component: ComponentId,
        row: usize,
        field: FieldId,
        value: Value,
    ) -> Result<bool, StoreError> {
        let tick = Tick(self.tick.0 + 1);
        let set = self.set_mut(component)?;
        let id = set.ids()[row];
        let observed = set.def().def.observed;
        if !set.write(row, field, value, tick) {
            return Ok(false);
        }
        self.tick = tick;
        if observed {
            self.events.push(StoreEvent::Changed {
                id,
                component,
                field,
            });
        }
        Ok(true)
    }
}
