//! Component definitions in a [`Store`]: installing, redefining (schema adoption) and
//! uninstalling, and the table of which components require which.
//!
//! Invariant: a component id is assigned once, at install, and never reused; a refused
//! definition changes nothing; after every definition change `dependents` lists, for each
//! component, exactly the installed components whose definitions require it by name, and the
//! name map holds exactly the installed components' names.

use std::sync::Arc;

use hashbrown::HashSet;
use strata_arena::ClassRegistry;

use super::{Store, StoreEvent};
use crate::def::{ComponentDef, ComponentId, FieldId, InstalledDef};
use crate::error::StoreError;
use crate::orphan::OrphanRecord;
use crate::set::{ComponentSet, InstanceRef, Tick};
use crate::shared::SharedSet;
use crate::value::Value;

impl Store {
    /// Installs a definition; class names are resolved against `classes`.
    ///
    /// # Errors
    ///
    /// [`StoreError::DuplicateComponent`] when a component of that name is installed,
    /// [`StoreError::InvalidDefinition`] for a malformed definition (a field declared twice, a
    /// default or factory that does not fit, an unknown class), and [`StoreError::FormerNames`] for
    /// ambiguous former names; nothing is installed then.
    pub fn install(
        &mut self,
        def: ComponentDef,
        classes: &ClassRegistry,
    ) -> Result<ComponentId, StoreError> {
        if self.names.contains_key(&*def.name) {
            return Err(StoreError::DuplicateComponent(def.name.to_string()));
        }
        let id = ComponentId(u32::try_from(self.sets.len()).map_err(|_| {
            StoreError::InvalidDefinition {
                component: def.name.to_string(),
                reason: "too many components".into(),
            }
        })?);
        let installed = InstalledDef::validate(def, id, classes)?;
        self.names.insert(installed.def.name.clone(), id);
        self.name_revision += 1;
        self.sets
            .push(Some(SharedSet::new(ComponentSet::new(Arc::new(installed)))));
        self.rebuild_dependents();
        Ok(id)
    }

    /// Replaces a component's definition, keeping its id: the set is rebuilt from `rows` (values
    /// in the new definition's field order, for instances whose class it allows), its
    /// structural revision advances, and its removal log carries over. Used by schema adoption.
    ///
    /// A row of an instance that had one before keeps its added tick; its fields are matched to
    /// the old definition's by name, then by the new field's former names, and a field whose
    /// type and value (bit for bit) are unchanged keeps its pending dirty state, while any other
    /// field counts as changed now (dirty, and the row's changed tick moves). A row of an
    /// instance that had none is added now (an `Added` event when the new definition is
    /// observed). An instance that had a row and has none now loses the component like any
    /// removal: a removal record, a `Removed` event when the old definition was observed, and
    /// the removal of every component of the instance that requires this one.
    ///
    /// # Errors
    ///
    /// Refused, changing nothing, for an invalid definition, a name another component holds, two
    /// rows for one slot, a row whose values do not fit, and a row whose slot holds another
    /// instance's row or lies past what its reference may address, as for [`Store::add`].
    pub fn redefine(
        &mut self,
        component: ComponentId,
        def: ComponentDef,
        classes: &ClassRegistry,
        rows: Vec<(InstanceRef, Vec<Value>)>,
    ) -> Result<(), StoreError> {
        let old = self
            .slot_set(component)
            .map(SharedSet::get)
            .ok_or(StoreError::UnknownComponent(component))?;
        let renamed = *old.def().def.name != *def.name;
        if renamed && self.names.contains_key(&*def.name) {
            return Err(StoreError::DuplicateComponent(def.name.to_string()));
        }
        let installed = InstalledDef::validate(def, component, classes)?;
        self.check_redefined_rows(old, &installed, &rows)?;
        let counterparts = counterparts(old.def(), &installed);
        let (old_observed, new_observed) = (old.def().def.observed, installed.def.observed);
        let old_name = old.def().def.name.clone();
        let tick = Tick(self.tick.0 + 1);
        // Observers see the old rows go (readable in the old set), then the new rows come.
        self.notify_replaced(component, true);
        let Some(old) = self.slot_set(component).map(SharedSet::get) else {
            return Err(StoreError::UnknownComponent(component));
        };
        let (set, lost, added) =
            ComponentSet::redefined(Arc::new(installed), old, rows, &counterparts, tick);

        self.tick = tick;
        if renamed {
            self.names.remove(&old_name);
            self.names.insert(set.def().def.name.clone(), component);
            self.name_revision += 1;
        }
        self.sets[component.index()] = Some(SharedSet::new(set));
        self.notify_replaced(component, false);
        self.rebuild_dependents();
        if old_observed {
            self.events
                .extend(lost.iter().map(|at| StoreEvent::Removed {
                    id: at.id,
                    component,
                }));
        }
        if new_observed {
            self.events.extend(
                added
                    .into_iter()
                    .map(|id| StoreEvent::Added { id, component }),
            );
        }
        let mut removed = Vec::new();
        for at in lost {
            if !self.migrations.is_empty() {
                Arc::make_mut(&mut self.migrations).remove(&(at.id, component));
            }
            self.remove_dependents(at, component, &mut removed);
        }
        Ok(())
    }

    /// The checks [`Store::redefine`] runs on the rows it is given, before anything changes:
    /// no row's slot holds another instance's row of `old` or lies past what its reference may
    /// address, every row's values fit `installed`, and no slot has two rows.
    fn check_redefined_rows(
        &self,
        old: &ComponentSet,
        installed: &InstalledDef,
        rows: &[(InstanceRef, Vec<Value>)],
    ) -> Result<(), StoreError> {
        for (at, values) in rows {
            if let Some(holder) = old.holder_at(at.slot).filter(|holder| *holder != at.id) {
                return Err(StoreError::SlotOccupied {
                    slot: at.slot,
                    holder,
                    component: old.id(),
                    component_name: old.def().shared_name(),
                });
            }
            at.check_slot(old.sparse_len(), rows.len(), || self.slot_extent())?;
            check_row(installed, values)?;
        }
        let mut seen = HashSet::with_capacity(rows.len());
        if rows.iter().any(|(at, _)| !seen.insert(at.slot)) {
            return Err(StoreError::InvalidDefinition {
                component: installed.def.name.to_string(),
                reason: "two rows for one slot".into(),
            });
        }
        Ok(())
    }

    /// Removes a component's definition and returns its rows with named field values and the
    /// types they were stored under (for the caller to keep as orphans). The id is never reused.
    ///
    /// # Errors
    ///
    /// [`StoreError::UnknownComponent`] for a component not installed.
    pub fn uninstall(
        &mut self,
        component: ComponentId,
    ) -> Result<Vec<(InstanceRef, OrphanRecord)>, StoreError> {
        self.set(component)?;
        // Observers see every row go (still readable) and the set deactivate, then are
        // dropped with the component.
        self.notify_replaced(component, true);
        self.observers.forget(component);
        self.frame.forget(component);
        let set = self
            .sets
            .get_mut(component.index())
            .and_then(Option::take)
            .ok_or(StoreError::UnknownComponent(component))?;
        let types = OrphanRecord::types_of(&set);
        let records = (0..set.len())
            .map(|row| (set.at(row), OrphanRecord::from_row(&set, row, &types)))
            .collect();
        self.names.remove(&*set.def().def.name);
        self.name_revision += 1;
        self.rebuild_dependents();
        Ok(records)
    }

    /// Recomputes, for every component, which installed components require it.
    fn rebuild_dependents(&mut self) {
        let mut dependents = vec![Vec::new(); self.sets.len()];
        for dependent in self.components() {
            for required in &dependent.def().def.requires {
                if let Some(&id) = self.names.get(required) {
                    dependents[id.index()].push(dependent.id());
                }
            }
        }
        self.dependents = dependents;
    }
}

/// Each field of `new`'s counterpart in `old`: the field of the same name, else of one of its
/// former names, when its type is the same.
fn counterparts(old: &InstalledDef, new: &InstalledDef) -> Vec<Option<FieldId>> {
    new.fields()
        .iter()
        .map(|field| {
            std::iter::once(&field.name)
                .chain(&field.former_names)
                .find_map(|name| old.field_id(name))
                .filter(|g| old.field(*g).is_some_and(|o| o.ty == field.ty))
        })
        .collect()
}

/// Checks a whole row of values against a definition.
fn check_row(def: &InstalledDef, values: &[Value]) -> Result<(), StoreError> {
    if values.len() != def.fields().len() {
        return Err(StoreError::InvalidDefinition {
            component: def.name().to_owned(),
            reason: format!(
                "a row has {} values for {} fields",
                values.len(),
                def.fields().len()
            ),
        });
    }
    for (i, value) in values.iter().enumerate() {
        def.check_value(FieldId(i as u16), value)?;
    }
    Ok(())
}
