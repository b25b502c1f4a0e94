//! Adding and removing rows of a [`Store`]: one instance at a time (`add`, `insert`, `remove`),
//! many of one class at once (`insert_many`), stale rows (`evict_stale`), and the checks every
//! add runs first; with the writers that fill new rows ([`RowInit`], [`BulkInit`]).
//!
//! Invariant: every check runs before anything is stored, so a refused add changes nothing; an
//! add never evicts another instance's row (an occupied slot is `SlotOccupied`); each add or
//! removal is one tick, a removal record, an event when the component is observed, and a
//! structural change the frame counts; a removal takes every component that requires the
//! removed one with it (transitively).

use std::sync::Arc;

use strata_arena::{ClassId, InstanceId};

use super::{Store, StoreEvent};
use crate::column::Scalar;
use crate::def::{ComponentId, FieldId, InstalledDef};
use crate::error::StoreError;
use crate::observe::Observers;
use crate::set::{ComponentSet, InstanceRef};
use crate::shared::SharedSet;
use crate::value::Value;

/// The most values `Store::add` keeps room for between calls.
const ADD_SCRATCH_KEPT: usize = 64;

impl Store {
    /// Adds a component to an instance of `class`: fields take the given values, the rest their
    /// defaults. Every value is checked before anything is stored.
    ///
    /// # Errors
    ///
    /// Refused, changing nothing, when the instance already holds the component
    /// ([`StoreError::AlreadyPresent`]), the class is not allowed
    /// ([`StoreError::ClassNotAllowed`]), another instance holds a row at the slot
    /// ([`StoreError::SlotOccupied`]: a mismatched pair, or a destruction never reported, see
    /// [`Store::evict_stale`]), or the slot is past what the reference may address
    /// ([`StoreError::SlotOutOfRange`], see [`InstanceRef`]).
    pub fn add(
        &mut self,
        at: InstanceRef,
        class: ClassId,
        component: ComponentId,
        values: impl IntoIterator<Item = (FieldId, Value)>,
    ) -> Result<usize, StoreError> {
        let mut given = std::mem::take(&mut self.add_scratch);
        let added = self.add_given(at, class, component, values, &mut given);
        given.clear();
        // Kept for the next add unless an unusually long list of values grew it.
        if given.capacity() <= ADD_SCRATCH_KEPT {
            self.add_scratch = given;
        }
        added
    }

    /// [`Store::add`] with `given` (empty) to hold the checked values until the row is added.
    fn add_given(
        &mut self,
        at: InstanceRef,
        class: ClassId,
        component: ComponentId,
        values: impl IntoIterator<Item = (FieldId, Value)>,
        given: &mut Vec<(FieldId, Value)>,
    ) -> Result<usize, StoreError> {
        let def = self.set(component)?.def();
        for (field, value) in values {
            def.check_value(field, &value)?;
            given.push((field, value));
        }
        let whole_row = def.has_factories() || !def.reference_fields().is_empty();
        let (set, row, observers) = if whole_row {
            // Factories make the fields not given, and the reference index reads the row as it
            // is pushed: both need the row's values whole before it is added.
            let mut row_values: Vec<Value> =
                def.fields().iter().map(|f| f.default.clone()).collect();
            let mut fields = Vec::with_capacity(given.len());
            for (field, value) in given.drain(..) {
                // In range: `check_value` found the field, and there is one value per field.
                if let Some(slot) = row_values.get_mut(field.index()) {
                    *slot = value;
                    fields.push(field);
                }
            }
            self.add_row(at, class, component, Some(row_values), &fields)?
        } else {
            // A row of defaults copied from the typed default columns, then the given values
            // stored into it, before anything reads it.
            let (set, row, observers) = self.add_row(at, class, component, None, &[])?;
            set.fill_new_row(row, given.drain(..));
            (set, row, observers)
        };
        if observers.watches(component) {
            observers.added(component, set, row..=row);
        }
        Ok(row)
    }

    /// Adds a component with every field at its default (copied from typed default columns,
    /// without building values) and returns a writer for setting fields of the new row without
    /// further ticks: the fast path for spawning.
    ///
    /// # Errors
    ///
    /// As [`Store::add`].
    pub fn insert(
        &mut self,
        at: InstanceRef,
        class: ClassId,
        component: ComponentId,
    ) -> Result<RowInit<'_>, StoreError> {
        let (set, row, observers) = self.add_row(at, class, component, None, &[])?;
        let observers = observers
            .watches(component)
            .then_some((observers, component));
        Ok(RowInit {
            set,
            row,
            observers,
        })
    }

    /// Adds a row of checked values (or defaults) after [`Store::check_add`]; the fields'
    /// factories make the values of the fields not in `given`.
    #[inline]
    fn add_row(
        &mut self,
        at: InstanceRef,
        class: ClassId,
        component: ComponentId,
        values: Option<Vec<Value>>,
        given: &[FieldId],
    ) -> Result<(&mut ComponentSet, usize, &mut Observers), StoreError> {
        let set = self.set(component)?;
        self.check_add(set, at, class, set.len() + 1)?;
        let values = if set.def().has_factories() {
            let mut values = values.unwrap_or_else(|| {
                set.def()
                    .fields()
                    .iter()
                    .map(|f| f.default.clone())
                    .collect()
            });
            for (field, mut made) in set.def().make_defaults(&[at.id], given)? {
                if let (Some(slot), Some(value)) = (values.get_mut(field.index()), made.pop()) {
                    *slot = value;
                }
            }
            Some(values)
        } else {
            values
        };
        self.push_checked_row(at, component, values)
    }

    /// Adds a row of checked values (or defaults) for an instance [`Store::check_add`] already
    /// accepted: one tick, an `Added` event when the component is observed, and the row counted
    /// as a structural change. The caller reports the row to lifecycle observers (returned
    /// beside the set) once its values are final.
    #[inline]
    pub(crate) fn push_checked_row(
        &mut self,
        at: InstanceRef,
        component: ComponentId,
        values: Option<Vec<Value>>,
    ) -> Result<(&mut ComponentSet, usize, &mut Observers), StoreError> {
        let Some(set) = self
            .sets
            .get_mut(component.index())
            .and_then(Option::as_mut)
        else {
            return Err(StoreError::UnknownComponent(component));
        };
        let observed = set.def().def.observed;
        self.tick.0 += 1;
        let set = set.make_mut();
        let row = match values {
            Some(values) => set.push_row(at, values, self.tick),
            None => set.push_default_row(at, self.tick),
        };
        if observed {
            self.events.push(StoreEvent::Added {
                id: at.id,
                component,
            });
        }
        self.frame.added_one(component, at.id);
        Ok((set, row, &mut self.observers))
    }

    /// Adds a component with default values to many instances of one class in one step: one
    /// tick, each column extended once, defaults copied without building values. Returns a
    /// writer for filling the new rows' fields without further ticks.
    ///
    /// # Errors
    ///
    /// Refused, changing nothing, when one slot appears twice or any instance could not take the
    /// row alone (see [`Store::add`]). An empty `ats` changes nothing: no tick, no structural
    /// revision, and a set shared with a snapshot stays shared.
    pub fn insert_many(
        &mut self,
        ats: &[InstanceRef],
        class: ClassId,
        component: ComponentId,
    ) -> Result<BulkInit<'_>, StoreError> {
        // Every slot is checked against its bound before `check_distinct_slots` sizes its
        // bitmap by them.
        self.check_place(ats, class, component)?;
        if ats.is_empty() {
            // Nothing to add: no tick, no revision, and the set stays shared with snapshots.
            let set = self
                .sets
                .get_mut(component.index())
                .and_then(Option::as_mut)
                .ok_or(StoreError::UnknownComponent(component))?;
            return Ok(BulkInit {
                set,
                rows: 0..0,
                observers: None,
            });
        }
        check_distinct_slots(ats)?;
        let set = self.set(component)?;
        let made = if set.def().has_factories() {
            let ids: Vec<InstanceId> = ats.iter().map(|at| at.id).collect();
            set.def().make_defaults(&ids, &[])?
        } else {
            Vec::new()
        };
        let Some(set) = self
            .sets
            .get_mut(component.index())
            .and_then(Option::as_mut)
        else {
            return Err(StoreError::UnknownComponent(component));
        };
        self.tick.0 += 1;
        let observed = set.def().def.observed;
        let rows = set.make_mut().push_default_rows(ats, self.tick);
        set.make_mut().store_made(rows.start, made);
        if observed {
            self.events.extend(ats.iter().map(|at| StoreEvent::Added {
                id: at.id,
                component,
            }));
        }
        self.frame
            .added(component, set.get(), rows.start..=rows.end - 1);
        let observers = self
            .observers
            .watches(component)
            .then_some((&mut self.observers, component));
        Ok(BulkInit {
            set,
            rows,
            observers,
        })
    }

    /// Removes, in every component, a row held at `at`'s slot by another instance: one destroyed
    /// without the store being told, whose slot the arena has given to `at` since. Each
    /// eviction is a removal like any other (dependents, removal records and events included),
    /// and the evicted instances' orphan records go too. Returns the rows removed. This is the
    /// only way a row of one instance is removed on behalf of another: adds refuse an occupied
    /// slot ([`StoreError::SlotOccupied`]) rather than evict.
    pub fn evict_stale(&mut self, at: InstanceRef) -> Vec<(InstanceId, ComponentId)> {
        let mut removed = Vec::new();
        for index in 0..self.sets.len() {
            let holder = self.sets[index].as_ref().and_then(|s| s.holder_at(at.slot));
            if let Some(holder) = holder.filter(|h| *h != at.id) {
                let stale = InstanceRef::new(holder, at.slot);
                self.remove_with_dependents(stale, ComponentId(index as u32), &mut removed);
            }
        }
        if !self.orphans.is_empty() {
            let orphans = Arc::make_mut(&mut self.orphans);
            for (id, _) in &removed {
                orphans.remove_instance(*id);
            }
        }
        removed
    }

    /// Removes a component from an instance, together with every component of the instance
    /// that requires it (transitively). Returns `false` when the instance did not hold it.
    ///
    /// # Errors
    ///
    /// [`StoreError::UnknownComponent`] for a component not installed.
    pub fn remove(&mut self, at: InstanceRef, component: ComponentId) -> Result<bool, StoreError> {
        let Some(row) = self.set(component)?.row_of(at) else {
            return Ok(false);
        };
        self.remove_row(at.id, component, row);
        if !self.dependents[component.index()].is_empty() {
            let mut removed = Vec::new();
            self.remove_dependents(at, component, &mut removed);
        }
        Ok(true)
    }

    pub(super) fn remove_with_dependents(
        &mut self,
        at: InstanceRef,
        component: ComponentId,
        removed: &mut Vec<(InstanceId, ComponentId)>,
    ) {
        if !self.remove_one(at, component) {
            return;
        }
        removed.push((at.id, component));
        self.remove_dependents(at, component, removed);
    }

    /// Removes every component of an instance that requires `component` (transitively), after
    /// the instance lost `component`.
    pub(super) fn remove_dependents(
        &mut self,
        at: InstanceRef,
        component: ComponentId,
        removed: &mut Vec<(InstanceId, ComponentId)>,
    ) {
        if self.dependents[component.index()].is_empty() {
            return;
        }
        let mut pending = self.dependents[component.index()].clone();
        while let Some(current) = pending.pop() {
            if self.remove_one(at, current) {
                removed.push((at.id, current));
                pending.extend_from_slice(&self.dependents[current.index()]);
            }
        }
    }

    /// Removes one component's row of an instance; `false` when it had none.
    fn remove_one(&mut self, at: InstanceRef, component: ComponentId) -> bool {
        let Some(row) = self.slot_set(component).and_then(|set| set.row_of(at)) else {
            return false;
        };
        self.remove_row(at.id, component, row);
        true
    }

    /// Removes row `row` (held by `id`) of a component's set: one tick, a removal record, a
    /// `Removed` event when the component is observed, and the row's migration input. Lifecycle
    /// observers see `on_removed(row..=row)` before the row goes, then the move of the last row
    /// into the hole (when it was not the removed one), then the deactivation of a set left
    /// empty; the frame state counts each.
    pub(super) fn remove_row(&mut self, id: InstanceId, component: ComponentId, row: usize) {
        self.notify_removing(component, row..=row);
        let Some((set, tick, events)) = self.parts(component) else {
            return;
        };
        tick.0 += 1;
        let observed = set.def().def.observed;
        let set = set.make_mut();
        set.swap_remove_row(row, *tick);
        let last = set.len();
        let moved = set.ids().get(row).copied();
        if observed {
            events.push(StoreEvent::Removed { id, component });
        }
        if !self.migrations.is_empty() {
            Arc::make_mut(&mut self.migrations).remove(&(id, component));
        }
        if let Some(moved) = moved {
            self.notify_moved(component, moved, last, row);
        }
        self.notify_emptied_if(component);
    }

    /// Whether an instance of `class` may take a row in `set` (one of this store's sets, which
    /// will hold `rows_after` rows once the operation is done): the checks every add runs
    /// before it stores anything.
    #[inline]
    pub(crate) fn check_add(
        &self,
        set: &ComponentSet,
        at: InstanceRef,
        class: ClassId,
        rows_after: usize,
    ) -> Result<(), StoreError> {
        // The common case in a few compares; anything else is decided (and explained) below.
        if set.holder_at(at.slot).is_none()
            && at.slot_near(set.sparse_len(), rows_after)
            && set.def().allows_class(class)
        {
            return Ok(());
        }
        self.check_add_slow(set, at, class, rows_after)
    }

    /// [`Store::check_add`] in full.
    #[cold]
    #[inline(never)]
    pub(super) fn check_add_slow(
        &self,
        set: &ComponentSet,
        at: InstanceRef,
        class: ClassId,
        rows_after: usize,
    ) -> Result<(), StoreError> {
        match set.holder_at(at.slot) {
            Some(holder) if holder == at.id => {
                return Err(StoreError::AlreadyPresent {
                    id: at.id,
                    component: set.id(),
                    component_name: set.def().shared_name(),
                });
            }
            Some(holder) => {
                return Err(StoreError::SlotOccupied {
                    slot: at.slot,
                    holder,
                    component: set.id(),
                    component_name: set.def().shared_name(),
                });
            }
            None => {}
        }
        at.check_slot(set.sparse_len(), rows_after, || self.slot_extent())?;
        if !set.def().allows_class(class) {
            return Err(StoreError::ClassNotAllowed {
                component: set.def().name().to_owned(),
                class,
            });
        }
        Ok(())
    }

    /// The longest sparse array of the store's sets: how far its slots already reach.
    pub(super) fn slot_extent(&self) -> usize {
        self.components()
            .map(ComponentSet::sparse_len)
            .max()
            .unwrap_or(0)
    }
}

/// Refuses a list naming one slot twice ([`StoreError::DuplicateSlot`], the first repeat). The
/// slots must be in range (checked): a bitmap up to the largest is allocated.
fn check_distinct_slots(ats: &[InstanceRef]) -> Result<(), StoreError> {
    let max_slot = ats.iter().map(|at| at.slot.index()).max().unwrap_or(0);
    let mut seen = vec![0u64; max_slot / 64 + 1];
    for at in ats {
        let (word, bit) = (at.slot.index() / 64, 1u64 << (at.slot.index() % 64));
        if seen[word] & bit != 0 {
            return Err(StoreError::DuplicateSlot(at.slot));
        }
        seen[word] |= bit;
    }
    Ok(())
}

/// A writer for the fields of a row just added by [`Store::insert`]; its writes are part of the
/// add and take no ticks of their own.
///
/// Lifecycle observers of the component see the row (`on_added`) when this writer is dropped,
/// with the values it set.
pub struct RowInit<'a> {
    set: &'a mut ComponentSet,
    row: usize,
    /// The store's observers, when the component has some: told of the row on drop.
    observers: Option<(&'a mut Observers, ComponentId)>,
}

impl Drop for RowInit<'_> {
    fn drop(&mut self) {
        if let Some((observers, component)) = self.observers.take() {
            observers.added(component, self.set, self.row..=self.row);
        }
    }
}

impl RowInit<'_> {
    /// The new row.
    pub fn row(&self) -> usize {
        self.row
    }

    /// The definition of the row's component.
    pub fn def(&self) -> &InstalledDef {
        self.set.def()
    }

    /// Sets a field, typed.
    ///
    /// # Errors
    ///
    /// [`StoreError::FieldOutOfRange`] for a field it lacks, [`StoreError::TypeMismatch`] for a
    /// field whose column does not hold `T`, and [`StoreError::TypeMismatch`] for an enum index
    /// past the variants; nothing is stored then.
    pub fn set<T: Scalar>(&mut self, field: FieldId, value: T) -> Result<&mut Self, StoreError> {
        self.set.def().check_scalar_value(field, &value)?;
        self.set.init_typed(self.row..self.row + 1, field, [value]);
        Ok(self)
    }

    /// Sets a field in dynamic form.
    ///
    /// # Errors
    ///
    /// [`StoreError::FieldOutOfRange`] for a field it lacks, and [`StoreError::TypeMismatch`] for a
    /// value the field cannot hold; nothing is stored then.
    pub fn set_value(&mut self, field: FieldId, value: Value) -> Result<&mut Self, StoreError> {
        self.set.def().check_value(field, &value)?;
        self.set.init_field(self.row, field, value);
        Ok(self)
    }
}

/// A writer for the fields of rows just added by [`Store::insert_many`]; its writes are part
/// of the add and take no ticks of their own. With no new rows it checks field types and
/// changes nothing (the set is not even made private).
///
/// Lifecycle observers of the component see the new rows (one `on_added` for the whole range)
/// when this writer is dropped, with the values it filled.
pub struct BulkInit<'a> {
    set: &'a mut SharedSet,
    rows: std::ops::Range<usize>,
    /// The store's observers, when the component has some: told of the rows on drop.
    observers: Option<(&'a mut Observers, ComponentId)>,
}

impl Drop for BulkInit<'_> {
    fn drop(&mut self) {
        if let Some((observers, component)) = self.observers.take()
            && !self.rows.is_empty()
        {
            observers.added(
                component,
                self.set.get(),
                self.rows.start..=self.rows.end - 1,
            );
        }
    }
}

impl BulkInit<'_> {
    /// The new rows, in the order of the instances given.
    pub fn rows(&self) -> std::ops::Range<usize> {
        self.rows.clone()
    }

    /// Sets a field of every new row from `values` (in row order; missing values leave the
    /// default, extra ones are ignored). Every value is checked before the first is stored.
    ///
    /// # Errors
    ///
    /// [`StoreError::FieldOutOfRange`] for a field it lacks, [`StoreError::TypeMismatch`] for a
    /// field whose column does not hold `T`, and [`StoreError::TypeMismatch`] for a value it cannot
    /// hold (an enum index past the variants); nothing is stored then.
    pub fn fill<T: Scalar>(
        &mut self,
        field: FieldId,
        values: impl IntoIterator<Item = T>,
    ) -> Result<&mut Self, StoreError> {
        self.set.def().check_scalar::<T>(field)?;
        if self.rows.is_empty() {
            return Ok(self);
        }
        if T::RANGED {
            let values: Vec<T> = values.into_iter().take(self.rows.len()).collect();
            for value in &values {
                self.set.def().check_scalar_value(field, value)?;
            }
            return Ok(self.fill_checked(field, values));
        }
        Ok(self.fill_checked(field, values))
    }

    /// [`BulkInit::fill`] with values already checked.
    fn fill_checked<T: Scalar>(
        &mut self,
        field: FieldId,
        values: impl IntoIterator<Item = T>,
    ) -> &mut Self {
        self.set
            .make_mut()
            .init_typed(self.rows.clone(), field, values);
        self
    }
}
