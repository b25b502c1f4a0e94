//! Raw records of a [`Store`]: rows as records (for grafts and saves), orphan records whose
//! definition is not installed, and migration input kept from an older schema version.
//!
//! Invariant: orphans and migration input are shared with snapshots behind `Arc` and copied on
//! their first change; a row's migration input goes when the row goes, and an instance's
//! orphans go when it is destroyed or its slot is reclaimed.

use std::sync::Arc;

use strata_arena::InstanceId;

use super::{Store, member_row};
use crate::def::ComponentId;
use crate::error::StoreError;
use crate::orphan::{OrphanRecord, Orphans};
use crate::set::InstanceRef;

impl Store {
    /// A row of `component` as a raw record: field name → value, with the types the values
    /// are stored under (as a removed definition leaves its rows). For moving rows to another
    /// store (a graft, a save file), where adoption reads them under that store's definition.
    ///
    /// # Errors
    ///
    /// [`StoreError::UnknownComponent`] for a component not installed, and
    /// [`StoreError::MissingMembership`] when the instance does not hold it.
    pub fn record(
        &self,
        at: InstanceRef,
        component: ComponentId,
    ) -> Result<OrphanRecord, StoreError> {
        let set = self.set(component)?;
        let row = member_row(set, at)?;
        Ok(OrphanRecord::from_row(
            set,
            row,
            &OrphanRecord::types_of(set),
        ))
    }

    /// Every row of `component` as a raw record (see [`Store::record`]), in row order, the
    /// types shared by all of them.
    ///
    /// # Errors
    ///
    /// [`StoreError::UnknownComponent`] for a component not installed.
    pub fn records(
        &self,
        component: ComponentId,
    ) -> Result<Vec<(InstanceRef, OrphanRecord)>, StoreError> {
        let set = self.set(component)?;
        let types = OrphanRecord::types_of(set);
        Ok((0..set.len())
            .map(|row| {
                let at = InstanceRef::new(set.ids()[row], set.slots()[row]);
                (at, OrphanRecord::from_row(set, row, &types))
            })
            .collect())
    }

    /// Keeps a saved record whose definition is not installed, for the instance `at`. A record
    /// for the same component replaces the previous one.
    pub fn add_orphan(&mut self, at: InstanceRef, record: OrphanRecord) {
        Arc::make_mut(&mut self.orphans).insert(at, record);
    }

    /// The orphan records.
    pub fn orphans(&self) -> &Orphans {
        &self.orphans
    }

    /// Rewrites the references held in orphan records (clone and graft remapping); `map`
    /// returns the new target, or `None` to clear it.
    pub fn rewrite_orphan_references(&mut self, map: impl FnMut(InstanceId) -> Option<InstanceId>) {
        if !self.orphans.is_empty() {
            Arc::make_mut(&mut self.orphans).rewrite_references(map);
        }
    }

    /// Removes and returns every orphan record of a component (adoption takes them).
    pub fn take_orphans(&mut self, component: &str) -> Vec<(InstanceRef, OrphanRecord)> {
        if !self.orphans.has_component(component) {
            return Vec::new();
        }
        Arc::make_mut(&mut self.orphans).take_component(component)
    }

    /// Keeps the values a row held under an older schema version, for game code to migrate
    /// from. Dropped when the row goes.
    pub fn set_migration_input(
        &mut self,
        at: InstanceRef,
        component: ComponentId,
        record: OrphanRecord,
    ) {
        Arc::make_mut(&mut self.migrations).insert((at.id, component), record);
    }

    /// The migration input of an instance's component, if any.
    pub fn migration_input(&self, id: InstanceId, component: ComponentId) -> Option<&OrphanRecord> {
        self.migrations.get(&(id, component))
    }

    /// Removes and returns the migration input of an instance's component (a migration that
    /// has run).
    pub fn take_migration_input(
        &mut self,
        id: InstanceId,
        component: ComponentId,
    ) -> Option<OrphanRecord> {
        if !self.migrations.contains_key(&(id, component)) {
            return None;
        }
        Arc::make_mut(&mut self.migrations).remove(&(id, component))
    }

    /// Every pending migration input: the instance, the component whose row it belongs to,
    /// and the values, in no particular order.
    pub fn migration_inputs(
        &self,
    ) -> impl Iterator<Item = (InstanceId, ComponentId, &OrphanRecord)> + '_ {
        self.migrations
            .iter()
            .map(|((id, component), record)| (*id, *component, record))
    }

    /// How many rows have pending migration input.
    pub fn pending_migrations(&self) -> usize {
        self.migrations.len()
    }
}
