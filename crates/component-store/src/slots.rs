//! Snapshot slots: reusable buffers a set is saved into and loaded back from (rollback netcode
//! saves every frame).
//!
//! Invariant: saving copies exactly the live rows (ids, slots, added ticks, columns), reusing the
//! slot's allocations, so its cost is bounded by the live count, never by the set's capacity or
//! history. A slot loads only into a store of the lineage it was saved from, into the component
//! it was saved from, under the same definition (allocation number), so its columns always have
//! the set's kinds; the set does the restoring itself (`ComponentSet::restore`), with buffers
//! the store keeps from one load to the next.

use strata_arena::{InstanceId, Slot};

use crate::column::Column;
use crate::def::ComponentId;
use crate::error::StoreError;
use crate::set::{SavedRows, Tick};
use crate::store::{Lineage, Store};

/// A reusable copy of one set's rows, bound to the store lineage, the component and the
/// definition it was saved from.
#[derive(Clone, Debug, Default)]
pub struct SetSlot {
    lineage: Option<Lineage>,
    component: Option<ComponentId>,
    allocation: u64,
    ids: Vec<InstanceId>,
    slots: Vec<Slot>,
    columns: Vec<Column>,
    added: Vec<Tick>,
}

impl SetSlot {
    /// An empty slot.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many rows the slot holds.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether the slot holds no rows.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The component the slot was saved from.
    pub fn component(&self) -> Option<ComponentId> {
        self.component
    }

    /// The lineage of the store the slot was saved from.
    pub fn lineage(&self) -> Option<Lineage> {
        self.lineage
    }

    /// The capacity the slot's buffers have grown to (rows).
    pub fn capacity(&self) -> usize {
        self.ids.capacity()
    }
}

impl Store {
    /// Copies a set's live rows into `slot`, growing it if it is short and reusing its buffers
    /// otherwise. The set itself is not touched.
    ///
    /// # Errors
    ///
    /// [`StoreError::UnknownComponent`] for a component not installed.
    pub fn save_into(&self, component: ComponentId, slot: &mut SetSlot) -> Result<(), StoreError> {
        let set = self.set(component)?;
        let len = set.len();
        slot.lineage = Some(self.lineage());
        slot.component = Some(component);
        slot.allocation = set.def().allocation();
        slot.ids.clear();
        slot.ids.extend_from_slice(set.ids());
        slot.slots.clear();
        slot.slots.extend_from_slice(set.slots());
        slot.added.clear();
        slot.added.extend(set.added_ticks().iter());
        let columns = set.columns();
        if slot.columns.len() != columns.len() {
            slot.columns = columns
                .iter()
                .map(|c| {
                    let mut empty = c.clone();
                    empty.truncate(0);
                    empty
                })
                .collect();
        }
        for (dest, source) in slot.columns.iter_mut().zip(columns) {
            dest.copy_from(source, len);
        }
        Ok(())
    }

    /// Puts a set back to what `slot` saved, as one change at one tick. Instances that held the
    /// component and do not in the slot are logged as removals. A restored row of an instance
    /// that held the component keeps its pending dirty fields and takes as dirty every field
    /// the load changes (bit for bit); its changed tick moves only when the load changes one of
    /// its fields, and its added tick is the one saved. A row of an instance that did not hold
    /// the component counts as added now. A load restores one set as saved: it queues no events
    /// and removes no dependents in other sets (restore those from their own slots).
    ///
    /// # Errors
    ///
    /// Refused, changing nothing: [`StoreError::SlotFromOtherStore`] for a slot saved from a store
    /// of another [`Lineage`], and [`StoreError::SlotMismatch`] for a slot never saved, saved from
    /// another component, or saved under a definition replaced since.
    pub fn load_from(&mut self, component: ComponentId, slot: &SetSlot) -> Result<(), StoreError> {
        let set = self.set(component)?;
        if slot.component.is_some() && slot.lineage != Some(self.lineage()) {
            return Err(StoreError::SlotFromOtherStore {
                component,
                component_name: set.def().shared_name(),
            });
        }
        if slot.component != Some(component) || slot.allocation != set.def().allocation() {
            return Err(StoreError::SlotMismatch {
                expected: component,
                found: slot.component,
                expected_name: set.def().shared_name(),
            });
        }
        let tick = Tick(self.tick().0 + 1);
        // Observers see every present row go, then every restored row come (see above).
        self.notify_replaced(component, true);
        let (set, scratch) = self.load_parts(component)?;
        let saved = SavedRows {
            ids: &slot.ids,
            slots: &slot.slots,
            added: &slot.added,
            columns: &slot.columns,
        };
        set.restore(saved, tick, scratch);
        self.advance_tick_to(tick);
        self.notify_replaced(component, false);
        Ok(())
    }
}
