//! Orphans: saved component records whose definition is not installed.
//!
//! Invariant: records are kept raw (component name, schema version, field name → value) and are
//! never interpreted as typed columns. At most one record per (instance, component name). Their
//! references stay visible (`references`, `rewrite_references`) so clone and graft can remap
//! them like typed rows.

use std::sync::Arc;

use hashbrown::HashMap;
use strata_arena::InstanceId;

use crate::set::{ComponentSet, InstanceRef};
use crate::value::Value;

/// One saved component record, kept raw.
#[derive(Clone, Debug, PartialEq)]
pub struct OrphanRecord {
    /// The component's name.
    pub component: Arc<str>,
    /// The schema version it was saved under.
    pub version: u32,
    /// Field name → saved value.
    pub fields: Vec<(Arc<str>, Value)>,
}

impl OrphanRecord {
    /// A record of a typed row (used when a definition goes away).
    pub(crate) fn from_row(set: &ComponentSet, row: usize) -> Self {
        let def = set.def();
        Self {
            component: def.def().name.clone(),
            version: def.def().version,
            fields: def
                .fields()
                .iter()
                .zip(&set.columns)
                .filter_map(|(f, c)| Some((f.name.clone(), c.get(row)?)))
                .collect(),
        }
    }

    /// A saved field's value.
    pub fn field(&self, name: &str) -> Option<&Value> {
        self.fields
            .iter()
            .find(|(n, _)| **n == *name)
            .map(|(_, v)| v)
    }
}

/// The orphan records of a store, by instance.
#[derive(Clone, Debug, Default)]
pub struct Orphans {
    by_instance: HashMap<InstanceId, (InstanceRef, Vec<OrphanRecord>)>,
    per_component: HashMap<Arc<str>, usize>,
}

impl Orphans {
    pub(crate) fn insert(&mut self, at: InstanceRef, record: OrphanRecord) {
        let entry = self
            .by_instance
            .entry(at.id)
            .or_insert_with(|| (at, Vec::new()));
        entry.0 = at;
        match entry.1.iter_mut().find(|r| r.component == record.component) {
            Some(existing) => *existing = record,
            None => {
                *self
                    .per_component
                    .entry(record.component.clone())
                    .or_default() += 1;
                entry.1.push(record);
            }
        }
    }

    pub(crate) fn remove_instance(&mut self, id: InstanceId) {
        if let Some((_, records)) = self.by_instance.remove(&id) {
            for record in records {
                self.forget(&record.component);
            }
        }
    }

    fn forget(&mut self, component: &str) {
        if let Some(count) = self.per_component.get_mut(component) {
            *count -= 1;
            if *count == 0 {
                self.per_component.remove(component);
            }
        }
    }

    pub(crate) fn take_component(&mut self, component: &str) -> Vec<(InstanceRef, OrphanRecord)> {
        let mut taken = Vec::new();
        self.by_instance.retain(|_, (at, records)| {
            if let Some(i) = records.iter().position(|r| *r.component == *component) {
                taken.push((*at, records.swap_remove(i)));
            }
            !records.is_empty()
        });
        self.per_component.remove(component);
        taken.sort_by_key(|(at, _)| at.id);
        taken
    }

    /// Whether any record of a component is kept.
    pub fn has_component(&self, component: &str) -> bool {
        self.per_component.contains_key(component)
    }

    /// Whether no record is kept.
    pub fn is_empty(&self) -> bool {
        self.by_instance.is_empty()
    }

    /// How many records are kept.
    pub fn len(&self) -> usize {
        self.per_component.values().sum()
    }

    /// The records of one instance.
    pub fn of(&self, id: InstanceId) -> &[OrphanRecord] {
        self.by_instance.get(&id).map_or(&[], |(_, r)| r.as_slice())
    }

    /// Every record with its instance, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (InstanceRef, &OrphanRecord)> + '_ {
        let mut all: Vec<_> = self
            .by_instance
            .values()
            .flat_map(|(at, records)| records.iter().map(move |r| (*at, r)))
            .collect();
        all.sort_by_key(|(at, r)| (at.id, r.component.clone()));
        all.into_iter()
    }

    /// Every (holder, target) reference held in orphan records.
    pub fn references(&self) -> Vec<(InstanceId, InstanceId)> {
        let mut out = Vec::new();
        for (holder, record) in self.iter() {
            for (_, value) in &record.fields {
                value.for_each_reference(&mut |t| out.push((holder.id, t)));
            }
        }
        out
    }

    /// Rewrites the references held in orphan records; `map` returns the new target or `None`
    /// to clear it.
    pub fn rewrite_references(&mut self, mut map: impl FnMut(InstanceId) -> Option<InstanceId>) {
        for (_, records) in self.by_instance.values_mut() {
            for record in records {
                for (_, value) in &mut record.fields {
                    value.rewrite_references(&mut map);
                }
            }
        }
    }
}
