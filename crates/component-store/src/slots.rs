//! Snapshot slots: reusable buffers a set is saved into and loaded back from (rollback netcode
//! saves every frame).
//!
//! Invariant: saving copies exactly the live rows, reusing the slot's allocations, so its cost
//! is bounded by the live count, never by the set's capacity or history. A slot loads only into
//! a store of the lineage it was saved from, into the component it was saved from, under the
//! same definition (allocation number), so its columns always have the set's kinds. Loading first deals with
//! the sparse entries of the rows live now, while the dense slots still say which they are
//! (marking them, then clearing them), then overwrites the dense arrays, then rebuilds sparse
//! and the reverse index from the restored dense arrays: overwriting dense first would lose
//! track of the old entries and leave stale positions that resolve to the wrong row.

use strata_arena::{InstanceId, Slot};

use crate::column::Column;
use crate::def::ComponentId;
use crate::error::StoreError;
use crate::set::{ABSENT, InstanceRef, Removal, Tick};

/// The high bit of a sparse entry marks "held before this load, at the row in the low bits".
const MARKED: u32 = 1 << 31;
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
    changed: Vec<Tick>,
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
    pub fn save_into(&self, component: ComponentId, slot: &mut SetSlot) -> Result<(), StoreError> {
        let set = self.set(component)?;
        let len = set.len();
        slot.lineage = Some(self.lineage());
        slot.component = Some(component);
        slot.allocation = set.def().allocation();
        slot.ids.clear();
        slot.ids.extend_from_slice(&set.ids);
        slot.slots.clear();
        slot.slots.extend_from_slice(&set.slots);
        slot.added.clear();
        slot.added.extend_from_slice(&set.added);
        slot.changed.clear();
        slot.changed.extend_from_slice(&set.changed);
        if slot.columns.len() != set.columns.len() {
            slot.columns = set
                .columns
                .iter()
                .map(|c| {
                    let mut empty = c.clone();
                    empty.truncate(0);
                    empty
                })
                .collect();
        }
        for (dest, source) in slot.columns.iter_mut().zip(&set.columns) {
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
    /// Refused, changing nothing: [`StoreError::SlotFromOtherStore`] for a slot saved from a
    /// store of another [`Lineage`], and [`StoreError::SlotMismatch`] for a slot never saved,
    /// saved from another component, or saved under a definition replaced since.
    pub fn load_from(&mut self, component: ComponentId, slot: &SetSlot) -> Result<(), StoreError> {
        let set = self.set(component)?;
        if slot.component.is_some() && slot.lineage != Some(self.lineage()) {
            return Err(StoreError::SlotFromOtherStore { component });
        }
        if slot.component != Some(component) || slot.allocation != set.def().allocation() {
            return Err(StoreError::SlotMismatch {
                expected: component,
                found: slot.component,
            });
        }
        let tick = Tick(self.tick().0 + 1);
        let (set, _, _) = self.parts_mut(component)?;
        // Mark the sparse entries of the rows live now with their old row, while the dense slots
        // still name them; restored rows find their predecessor through the mark.
        for (row, slot_of_row) in set.slots.iter().enumerate() {
            set.sparse[slot_of_row.index()] = MARKED | row as u32;
        }
        // The restored rows' tracking, from their predecessors while the columns still hold
        // the values from before: a row of an instance that held the component keeps its dirty
        // fields and adds those the load changes, and its changed tick moves only if the load
        // changes a field; a row of an instance that did not counts as added now.
        let n = slot.ids.len();
        let w = set.dirty_words;
        let mut added = Vec::with_capacity(n);
        let mut changed = Vec::with_capacity(n);
        let mut dirty = vec![0u64; n * w];
        for row in 0..n {
            let entry = set
                .sparse
                .get(slot.slots[row].index())
                .copied()
                .unwrap_or(ABSENT);
            let before = (entry != ABSENT && entry & MARKED != 0)
                .then_some((entry & !MARKED) as usize)
                .filter(|&before| set.ids.get(before) == Some(&slot.ids[row]));
            let Some(before) = before else {
                added.push(tick);
                changed.push(tick);
                continue;
            };
            added.push(slot.added[row]);
            let mask = &mut dirty[row * w..(row + 1) * w];
            mask.copy_from_slice(&set.dirty[before * w..(before + 1) * w]);
            let mut any = false;
            for (f, (restored, current)) in slot.columns.iter().zip(&set.columns).enumerate() {
                if !restored.same_cell(row, current, before) {
                    mask[f / 64] |= 1 << (f % 64);
                    any = true;
                }
            }
            changed.push(if any { tick } else { set.changed[before] });
        }
        let before_ids = std::mem::take(&mut set.ids);
        let before_slots = std::mem::take(&mut set.slots);
        set.ids.clone_from(&slot.ids);
        set.slots.clone_from(&slot.slots);
        for (dest, source) in set.columns.iter_mut().zip(&slot.columns) {
            dest.copy_from(source, n);
        }
        set.added = added;
        set.changed = changed;
        set.dirty = dirty;
        set.rebuild_dirty_rows();
        // Clear the marks; rebuilding then points every restored slot at its row.
        for slot_of_row in &before_slots {
            set.sparse[slot_of_row.index()] = ABSENT;
        }
        set.rebuild_indexes();
        // Instances that held the component and hold no restored row lost it.
        for (id, slot_of_row) in before_ids.into_iter().zip(before_slots) {
            if set.row_of(InstanceRef::new(id, slot_of_row)).is_none() {
                set.removals.push(Removal { id, tick });
            }
        }
        set.reset_change_log(tick);
        set.structural += 1;
        self.advance_tick_to(tick);
        Ok(())
    }
}
