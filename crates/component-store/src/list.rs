//! List fields: append, replace and clear through an accessor, over copy-on-write buffers.
//!
//! Invariant: a list edit goes through `ComponentSet::edit_list` (in `set.rs`), which takes the field's
//! references out of the reverse index, edits the buffer (copying it first when a snapshot
//! shares it, so the snapshot keeps what it saw), drops the buffer when the list became empty,
//! and indexes the references again. Only an edit that changes the list takes a tick.

use crate::column::Column;
use crate::def::{ComponentId, FieldId, FieldType};
use crate::error::StoreError;
use crate::set::{ComponentSet, InstanceRef, Tick};
use crate::store::{Store, StoreEvent};
use crate::value::{ListValue, Value};

impl Store {
    /// A list field's elements.
    ///
    /// # Errors
    ///
    /// [`StoreError::UnknownComponent`] for a component not installed,
    /// [`StoreError::MissingMembership`] when the instance does not hold it,
    /// [`StoreError::FieldOutOfRange`] for a field it lacks, and [`StoreError::TypeMismatch`] when
    /// the field is not a list.
    pub fn list(
        &self,
        at: InstanceRef,
        component: ComponentId,
        field: FieldId,
    ) -> Result<&[Value], StoreError> {
        let set = self.set(component)?;
        let row = self.row(at, component)?;
        let lists = list_field(set, field)?;
        Ok(lists[row].as_slice())
    }

    /// An accessor for editing a list field of an instance's component.
    ///
    /// # Errors
    ///
    /// [`StoreError::UnknownComponent`] for a component not installed,
    /// [`StoreError::MissingMembership`] when the instance does not hold it,
    /// [`StoreError::FieldOutOfRange`] for a field it lacks, and [`StoreError::TypeMismatch`] when
    /// the field is not a list.
    pub fn list_mut(
        &mut self,
        at: InstanceRef,
        component: ComponentId,
        field: FieldId,
    ) -> Result<ListAccessor<'_>, StoreError> {
        let set = self.set(component)?;
        self.row(at, component)?;
        list_field(set, field)?;
        Ok(ListAccessor {
            store: self,
            at,
            component,
            field,
        })
    }

    fn edit_list(
        &mut self,
        at: InstanceRef,
        component: ComponentId,
        field: FieldId,
        edit: impl FnOnce(&mut ListValue) -> bool,
    ) -> Result<bool, StoreError> {
        let row = self.row(at, component)?;
        let observed = self.def(component)?.def().observed;
        let tick = Tick(self.tick().0 + 1);
        let changed = self.set_mut(component)?.edit_list(row, field, tick, edit);
        if changed {
            self.advance_tick_to(tick);
            if observed {
                self.push_event(StoreEvent::Changed {
                    id: at.id,
                    component,
                    field,
                });
            }
        }
        Ok(changed)
    }
}

/// Edits one list field of one instance's component. Every method re-resolves the row.
pub struct ListAccessor<'a> {
    store: &'a mut Store,
    at: InstanceRef,
    component: ComponentId,
    field: FieldId,
}

impl ListAccessor<'_> {
    /// The elements.
    ///
    /// # Errors
    ///
    /// As [`Store::list`]: the row is resolved again, so an instance that lost the component since
    /// is [`StoreError::MissingMembership`].
    pub fn as_slice(&self) -> Result<&[Value], StoreError> {
        self.store.list(self.at, self.component, self.field)
    }

    /// How many elements.
    ///
    /// # Errors
    ///
    /// As [`ListAccessor::as_slice`].
    pub fn len(&self) -> Result<usize, StoreError> {
        Ok(self.as_slice()?.len())
    }

    /// Whether the list is empty.
    ///
    /// # Errors
    ///
    /// As [`ListAccessor::as_slice`].
    pub fn is_empty(&self) -> Result<bool, StoreError> {
        Ok(self.as_slice()?.is_empty())
    }

    /// Appends an element.
    ///
    /// # Errors
    ///
    /// As [`ListAccessor::as_slice`], and [`StoreError::TypeMismatch`] for an element the list
    /// cannot hold.
    pub fn push(&mut self, element: Value) -> Result<(), StoreError> {
        self.check(&element)?;
        self.store
            .edit_list(self.at, self.component, self.field, |list| {
                list.push(element);
                true
            })?;
        Ok(())
    }

    /// Replaces the whole content with a fresh buffer (the old one is released; a snapshot
    /// sharing it keeps it). Returns `false`, changing nothing, for equal content.
    ///
    /// # Errors
    ///
    /// As [`ListAccessor::as_slice`], and [`StoreError::TypeMismatch`] for an element the list
    /// cannot hold; nothing is stored then.
    pub fn replace(&mut self, elements: Vec<Value>) -> Result<bool, StoreError> {
        for element in &elements {
            self.check(element)?;
        }
        // Decide before touching the set, so an equal replace leaves it shared with snapshots.
        let current = self.as_slice()?;
        if current.len() == elements.len()
            && current.iter().zip(&elements).all(|(a, b)| a.identical(b))
        {
            return Ok(false);
        }
        self.store
            .edit_list(self.at, self.component, self.field, |list| {
                *list = ListValue::from_vec(elements);
                true
            })
    }

    /// Empties the list; an empty list holds no buffer. Returns `false` when already empty.
    ///
    /// # Errors
    ///
    /// As [`ListAccessor::as_slice`].
    pub fn clear(&mut self) -> Result<bool, StoreError> {
        if self.as_slice()?.is_empty() {
            return Ok(false);
        }
        self.store
            .edit_list(self.at, self.component, self.field, |list| {
                *list = ListValue::EMPTY;
                true
            })
    }

    fn check(&self, element: &Value) -> Result<(), StoreError> {
        self.store
            .def(self.component)?
            .check_element(self.field, element)
            .map(|_| ())
    }
}

/// A list field's column, or why the field is not a list.
fn list_field(set: &ComponentSet, field: FieldId) -> Result<&[ListValue], StoreError> {
    let def = set.def();
    let field_def = def.checked_field(field)?;
    match (&field_def.ty, set.column(field)) {
        (FieldType::List(_), Some(Column::List(lists))) => Ok(lists),
        _ => Err(def.type_mismatch(field_def, "list")),
    }
}
