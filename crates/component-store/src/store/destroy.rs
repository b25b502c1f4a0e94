//! Destruction and reclamation in a [`Store`]: the hooks the arena's owner calls when instances
//! are destroyed or their slots released, and the reference policies (`Clear`,
//! `RemoveComponent`, `DestroyHolder`) that run for references to the destroyed.
//!
//! Invariant: after `on_destroyed` no row of a destroyed instance is left and no reference to
//! one stays (each is cleared, its holder's component removed, or the holder listed for the
//! arena's owner to destroy); each policy action first checks its holder still holds the
//! component, since an earlier action may have removed it; the reverse reference index stays
//! exact throughout.

use std::sync::Arc;

use hashbrown::HashSet;
use strata_arena::{Doomed, InstanceId};

use super::{Store, StoreEvent};
use crate::def::{ComponentId, FieldId, RefPolicy};
use crate::set::{InstanceRef, Tick};
use crate::value::Value;

/// What the store did when told of a destruction.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DestroyOutcome {
    /// Rows removed: the destroyed instances' own, then those removed by `RemoveComponent`
    /// policies and their dependents.
    pub removed: Vec<(InstanceId, ComponentId)>,
    /// References cleared by `Clear` policies: holder, component, field.
    pub cleared: Vec<(InstanceId, ComponentId, FieldId)>,
    /// Holders a `DestroyHolder` policy asks the arena's owner to destroy (not already being
    /// destroyed), in the order found, without duplicates.
    pub destroy: Vec<InstanceId>,
}

impl DestroyOutcome {
    /// Empties the lists, keeping their memory for the next [`Store::on_destroyed_into`].
    pub fn clear(&mut self) {
        self.removed.clear();
        self.cleared.clear();
        self.destroy.clear();
    }
}

impl Store {
    /// The arena destroyed these instances: remove their rows and orphans, then apply the
    /// destruction policies of every reference to them. Each policy action first checks that
    /// its holder still holds the component, since an earlier action may have removed it.
    /// Clears of direct reference fields come first for each target and set, in holder order;
    /// the other policies follow, in holder then field order.
    pub fn on_destroyed(&mut self, doomed: &[Doomed]) -> DestroyOutcome {
        let mut outcome = DestroyOutcome::default();
        self.on_destroyed_into(doomed, &mut outcome);
        outcome
    }

    /// [`Store::on_destroyed`], appending what it did to `outcome` (whose lists a caller
    /// reporting one destruction after another can clear and reuse, so reporting allocates
    /// nothing once they have grown).
    pub fn on_destroyed_into(&mut self, doomed: &[Doomed], outcome: &mut DestroyOutcome) {
        for d in doomed {
            let at = InstanceRef::new(d.id, d.slot);
            for index in 0..self.sets.len() {
                let component = ComponentId(index as u32);
                let Some(row) = self.slot_set(component).and_then(|s| s.row_of(at)) else {
                    continue;
                };
                self.remove_row(at.id, component, row);
                outcome.removed.push((at.id, component));
                self.remove_dependents(at, component, &mut outcome.removed);
            }
        }
        self.after_destroyed(doomed, outcome);
    }

    /// What follows the removal of destroyed instances' rows: their orphan records go, and
    /// every reference to them is cleared or acted on by its field's policy.
    fn after_destroyed(&mut self, doomed: &[Doomed], outcome: &mut DestroyOutcome) {
        if !self.orphans.is_empty() {
            let orphans = Arc::make_mut(&mut self.orphans);
            for d in doomed {
                orphans.remove_instance(d.id);
            }
        }
        // Built only when some reference to a destroyed instance needs more than a clear.
        let mut doomed_ids: Option<HashSet<InstanceId>> = None;
        let mut destroy_seen = HashSet::new();
        // Only sets whose reverse index holds a target can reference a destroyed instance.
        let referencing: Vec<usize> = (0..self.sets.len())
            .filter(|&index| {
                self.sets[index]
                    .as_ref()
                    .is_some_and(|s| s.referenced_targets() > 0)
            })
            .collect();
        if referencing.is_empty() {
            return;
        }
        for d in doomed {
            for &index in &referencing {
                let component = ComponentId(index as u32);
                let referenced = self.sets[index]
                    .as_ref()
                    .is_some_and(|s| s.references(d.id));
                if !referenced {
                    continue;
                }
                // Take the target's entries out in one step, so the actions below never
                // search its holder list again. Clears of direct reference fields run in one
                // pass over them; the other policies act on what is left, and the entries of
                // holders that still reference the target afterwards (destroy requests) go
                // back, keeping the index exact.
                let Some((shared, tick, events)) = self.parts(component) else {
                    continue;
                };
                let set = shared.make_mut();
                let observed = set.def().def.observed;
                let entries = set.take_references(d.id);
                outcome.cleared.reserve(entries.len());
                let rest = set.clear_direct_references(d.id, entries, tick, |entry| {
                    outcome.cleared.push((entry.holder, component, entry.field));
                    if observed {
                        events.push(StoreEvent::Changed {
                            id: entry.holder,
                            component,
                            field: entry.field,
                        });
                    }
                });
                if rest.is_empty() {
                    continue;
                }
                let doomed_ids =
                    doomed_ids.get_or_insert_with(|| doomed.iter().map(|d| d.id).collect());
                for entry in &rest {
                    self.apply_policy(
                        component,
                        *entry,
                        d.id,
                        doomed_ids,
                        &mut destroy_seen,
                        outcome,
                    );
                }
                if let Ok(set) = self.set_mut(component) {
                    set.keep_references(d.id, &rest);
                }
            }
        }
    }

    fn apply_policy(
        &mut self,
        component: ComponentId,
        entry: crate::set::RefEntry,
        target: InstanceId,
        doomed: &HashSet<InstanceId>,
        destroy_seen: &mut HashSet<InstanceId>,
        outcome: &mut DestroyOutcome,
    ) {
        let Ok(set) = self.set(component) else { return };
        let holder = InstanceRef::new(entry.holder, entry.holder_slot);
        let Some(row) = set.row_of(holder) else {
            return;
        };
        let Some(policy) = set.def().field(entry.field).map(|f| f.on_destroy) else {
            return;
        };
        match policy {
            RefPolicy::Clear => {
                let direct = matches!(
                    set.column(entry.field),
                    Some(crate::column::Column::Reference(_))
                );
                let observed = set.def().def.observed;
                let cleared = if direct {
                    let Some((set, tick, events)) = self.parts(component) else {
                        return;
                    };
                    let next = Tick(tick.0 + 1);
                    let cleared =
                        set.make_mut()
                            .clear_direct_reference(row, entry.field, target, next);
                    if cleared {
                        *tick = next;
                        if observed {
                            events.push(StoreEvent::Changed {
                                id: entry.holder,
                                component,
                                field: entry.field,
                            });
                        }
                    }
                    cleared
                } else {
                    let Some(mut value) = set.value(row, entry.field) else {
                        return;
                    };
                    clear_target(&mut value, target)
                        && self
                            .write_row(component, row, entry.field, value)
                            .unwrap_or(false)
                };
                if cleared {
                    outcome.cleared.push((entry.holder, component, entry.field));
                }
            }
            RefPolicy::RemoveComponent => {
                self.remove_with_dependents(holder, component, &mut outcome.removed);
            }
            RefPolicy::DestroyHolder => {
                if !doomed.contains(&entry.holder) && destroy_seen.insert(entry.holder) {
                    outcome.destroy.push(entry.holder);
                }
            }
        }
    }

    /// Clears every reference `holder` holds to one of `targets` (a reference field set to
    /// none, list elements dropped, references inside other values cleared), as a `Clear`
    /// policy would: the fallback for a `DestroyHolder` policy whose holder cannot be
    /// destroyed, so no reference to a destroyed instance stays behind. Returns each field
    /// cleared once, in component and field order.
    pub fn clear_references_to(
        &mut self,
        holder: InstanceRef,
        targets: &[InstanceId],
    ) -> Vec<(ComponentId, FieldId)> {
        let mut cleared = Vec::new();
        for index in 0..self.sets.len() {
            let component = ComponentId(index as u32);
            let Some(set) = self.slot_set(component) else {
                continue;
            };
            let Some(row) = set.row_of(holder) else {
                continue;
            };
            let fields: Vec<FieldId> = set
                .def()
                .fields()
                .iter()
                .enumerate()
                .filter(|(_, f)| f.ty.can_reference())
                .map(|(k, _)| FieldId(k as u16))
                .collect();
            for field in fields {
                let Some(mut value) = self.slot_set(component).and_then(|s| s.value(row, field))
                else {
                    continue;
                };
                let mut changed = false;
                for target in targets {
                    changed |= clear_target(&mut value, *target);
                }
                if changed
                    && self
                        .write_row(component, row, field, value)
                        .unwrap_or(false)
                {
                    cleared.push((component, field));
                }
            }
        }
        cleared
    }

    /// The arena released these slots. Rows still recorded for them (which only happens when a
    /// destruction was not reported) are evicted, and their orphans dropped.
    pub fn on_reclaimed(&mut self, reclaimed: &[Doomed]) {
        let mut removed = Vec::new();
        for d in reclaimed {
            let at = InstanceRef::new(d.id, d.slot);
            for index in 0..self.sets.len() {
                let component = ComponentId(index as u32);
                let Some(row) = self.slot_set(component).and_then(|s| s.row_of(at)) else {
                    continue;
                };
                self.remove_row(at.id, component, row);
                self.remove_dependents(at, component, &mut removed);
            }
        }
        if !self.orphans.is_empty() {
            let orphans = Arc::make_mut(&mut self.orphans);
            for d in reclaimed {
                orphans.remove_instance(d.id);
            }
        }
    }

    /// [`Store::on_destroyed_into`] with the destroyed instances' own rows removed set by set
    /// in one compaction pass each (a set all of whose rows go is truncated once), before the
    /// reference policies run as there. `outcome.removed` lists those rows component by
    /// component rather than instance by instance.
    pub(crate) fn on_destroyed_bulk(&mut self, doomed: &[Doomed], outcome: &mut DestroyOutcome) {
        let mut rows = Vec::new();
        for index in 0..self.sets.len() {
            let component = ComponentId(index as u32);
            let Some(set) = self.slot_set(component) else {
                continue;
            };
            rows.clear();
            if set.is_empty() {
                continue;
            }
            rows.extend(
                doomed
                    .iter()
                    .filter_map(|d| set.row_of(InstanceRef::new(d.id, d.slot))),
            );
            self.remove_rows_bulk(component, &rows, &mut outcome.removed);
        }
        // Every row of the doomed instances is gone: what is left is what follows removal.
        self.after_destroyed(doomed, outcome);
    }
}

/// Removes every reference to `target` from a value: list elements that are references to it
/// are dropped, any other reference to it (nested ones included) becomes `None`. Returns whether
/// the value changed.
fn clear_target(value: &mut Value, target: InstanceId) -> bool {
    let mut changed = false;
    if let Value::List(list) = value {
        let before = list.len();
        if let Some(elements) = list.elements_mut() {
            elements.retain(|e| !matches!(e, Value::Reference(Some(t)) if *t == target));
        }
        list.normalise();
        changed |= list.len() != before;
    }
    changed |= value.rewrite_references(&mut |t| (t != target).then_some(t));
    changed
}
