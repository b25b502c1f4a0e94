//! Orphans: saved component records whose definition is not installed.
//!
//! Invariant: records are kept raw (component name, schema version, field name → value, and,
//! for records of typed rows, the type each field was stored under) and are never interpreted
//! as typed columns. At most one record per (instance, component name); an
//! index by component name reaches one component's records without visiting the others. Their
//! references stay visible (`references`, `rewrite_references`) so clone and graft can remap
//! them like typed rows.

use std::collections::BTreeSet;
use std::sync::Arc;

use hashbrown::HashMap;
use strata_arena::InstanceId;

use crate::def::FieldType;
use crate::set::{ComponentSet, InstanceRef};
use crate::value::Value;

/// The types a record's fields were stored under, by field name; shared by the records of one
/// component's rows.
pub type FieldTypes = Arc<[(Arc<str>, FieldType)]>;

/// One saved component record, kept raw.
#[derive(Clone, Debug, PartialEq)]
pub struct OrphanRecord {
    /// The component's name.
    pub component: Arc<str>,
    /// The schema version it was saved under.
    pub version: u32,
    /// Field name → saved value.
    pub fields: Vec<(Arc<str>, Value)>,
    /// The type each field was stored under, when the record comes from typed rows (a removed
    /// definition's rows, rows a definition left unadopted, migration input); `None` for values
    /// saved without their types. A struct value holds its members by position, and an enum
    /// its variant by index: the types name them, so a later definition can read structs by
    /// member name and enums by variant name, nested ones included.
    pub types: Option<FieldTypes>,
}

impl OrphanRecord {
    /// The field types of a component's rows, by name, for records of them (`types`).
    pub fn types_of(set: &ComponentSet) -> FieldTypes {
        set.def()
            .fields()
            .iter()
            .map(|f| (f.name.clone(), f.ty.clone()))
            .collect()
    }

    /// A record of a typed row (used when a definition goes away); `types` is
    /// `OrphanRecord::types_of(set)`.
    pub(crate) fn from_row(set: &ComponentSet, row: usize, types: &FieldTypes) -> Self {
        let def = set.def();
        Self {
            component: def.def().name.clone(),
            version: def.def().version,
            fields: def
                .fields()
                .iter()
                .zip(set.columns())
                .filter_map(|(f, c)| Some((f.name.clone(), c.get(row)?)))
                .collect(),
            types: Some(types.clone()),
        }
    }

    /// A saved field's value.
    pub fn field(&self, name: &str) -> Option<&Value> {
        self.fields
            .iter()
            .find(|(n, _)| **n == *name)
            .map(|(_, v)| v)
    }

    /// The type a saved field was stored under, when the record keeps it.
    pub fn field_type(&self, name: &str) -> Option<&FieldType> {
        self.types
            .as_deref()?
            .iter()
            .find(|(n, _)| **n == *name)
            .map(|(_, ty)| ty)
    }
}

/// The orphan records of a store, by instance, with an index by component name.
///
/// Invariant: `by_component[name]` holds exactly the instances with a record of `name` in
/// `by_instance`.
#[derive(Clone, Debug, Default)]
pub struct Orphans {
    by_instance: HashMap<InstanceId, (InstanceRef, Vec<OrphanRecord>)>,
    by_component: HashMap<Arc<str>, BTreeSet<InstanceId>>,
}

impl Orphans {
    pub(crate) fn insert(&mut self, at: InstanceRef, record: OrphanRecord) {
        let entry = self
            .by_instance
            .entry(at.id)
            .or_insert_with(|| (at, Vec::new()));
        entry.0 = at;
        self.by_component
            .entry(record.component.clone())
            .or_default()
            .insert(at.id);
        match entry.1.iter_mut().find(|r| r.component == record.component) {
            Some(existing) => *existing = record,
            None => entry.1.push(record),
        }
    }

    pub(crate) fn remove_instance(&mut self, id: InstanceId) {
        if let Some((_, records)) = self.by_instance.remove(&id) {
            for record in records {
                self.forget(&record.component, id);
            }
        }
    }

    fn forget(&mut self, component: &str, id: InstanceId) {
        if let Some(ids) = self.by_component.get_mut(component) {
            ids.remove(&id);
            if ids.is_empty() {
                self.by_component.remove(component);
            }
        }
    }

    pub(crate) fn take_component(&mut self, component: &str) -> Vec<(InstanceRef, OrphanRecord)> {
        let Some(ids) = self.by_component.remove(component) else {
            return Vec::new();
        };
        let mut taken = Vec::with_capacity(ids.len());
        for id in ids {
            let Some((at, records)) = self.by_instance.get_mut(&id) else {
                continue;
            };
            let at = *at;
            if let Some(i) = records.iter().position(|r| *r.component == *component) {
                taken.push((at, records.swap_remove(i)));
            }
            if records.is_empty() {
                self.by_instance.remove(&id);
            }
        }
        taken
    }

    /// Whether any record of a component is kept.
    pub fn has_component(&self, component: &str) -> bool {
        self.by_component.contains_key(component)
    }

    /// Whether no record is kept.
    pub fn is_empty(&self) -> bool {
        self.by_instance.is_empty()
    }

    /// How many records are kept.
    pub fn len(&self) -> usize {
        self.by_component.values().map(BTreeSet::len).sum()
    }

    /// The records of one instance.
    pub fn of(&self, id: InstanceId) -> &[OrphanRecord] {
        self.by_instance.get(&id).map_or(&[], |(_, r)| r.as_slice())
    }

    /// The records of one component with their instances, in id order; reaches only that
    /// component's records.
    pub fn of_component<'a>(
        &'a self,
        component: &'a str,
    ) -> impl Iterator<Item = (InstanceRef, &'a OrphanRecord)> + 'a {
        self.by_component
            .get(component)
            .into_iter()
            .flat_map(|ids| ids.iter())
            .filter_map(move |id| {
                let (at, records) = self.by_instance.get(id)?;
                let record = records.iter().find(|r| *r.component == *component)?;
                Some((*at, record))
            })
    }

    /// Every record with its instance, in (instance id, component name) order.
    pub fn iter(&self) -> impl Iterator<Item = (InstanceRef, &OrphanRecord)> + '_ {
        let mut all: Vec<_> = self
            .by_instance
            .values()
            .flat_map(|(at, records)| records.iter().map(move |r| (*at, r)))
            .collect();
        all.sort_unstable_by(|(a, ra), (b, rb)| {
            a.id.cmp(&b.id)
                .then_with(|| ra.component.cmp(&rb.component))
        });
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
