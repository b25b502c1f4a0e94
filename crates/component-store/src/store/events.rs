//! What changed in a [`Store`], for its readers: the queued [`StoreEvent`]s of observed
//! components, per-row dirty fields, the frame's dirty state, structural counters and value
//! counters.
//!
//! Invariant: reading marks nothing; only actual changes (and explicit marks) make a component
//! dirty; the structural count and the value count never fall; `end_frame` clears the frame's
//! dirty state and reopens its structural window, and touches neither per-row dirty fields nor
//! change ticks.

use std::ops::RangeInclusive;

use strata_arena::InstanceId;

use super::Store;
use crate::def::{ComponentId, FieldId};
use crate::dirty::FieldMask;
use crate::error::StoreError;
use crate::frame::{FrameDirty, StructuralMissed, StructuralResidue};
use crate::set::{InstanceRef, Tick};

/// A change queued for an observed component.
#[derive(Clone, Debug, PartialEq)]
pub enum StoreEvent {
    /// The instance gained the component.
    Added {
        /// The instance.
        id: InstanceId,
        /// The component.
        component: ComponentId,
    },
    /// The instance lost the component.
    Removed {
        /// The instance.
        id: InstanceId,
        /// The component.
        component: ComponentId,
    },
    /// A field changed value.
    Changed {
        /// The instance.
        id: InstanceId,
        /// The component.
        component: ComponentId,
        /// The field.
        field: FieldId,
    },
}

impl Store {
    /// The events queued for observed components since the last call.
    pub fn drain_events(&mut self) -> Vec<StoreEvent> {
        std::mem::take(&mut self.events)
    }

    /// The rows of a component whose fields changed since the last call, in row order, with
    /// the changed fields; cleans them. Rows removed since are not reported. Costs nothing when
    /// no row is dirty, and otherwise follows the words of rows holding dirty ones.
    ///
    /// # Errors
    ///
    /// [`StoreError::UnknownComponent`] for a component not installed.
    pub fn take_dirty(
        &mut self,
        component: ComponentId,
    ) -> Result<Vec<(InstanceId, FieldMask)>, StoreError> {
        if self.set(component)?.pending_dirty() == 0 {
            return Ok(Vec::new());
        }
        Ok(self.set_mut(component)?.take_dirty())
    }

    /// Whether anything of a component is dirty since the last [`Store::end_frame`]: a row
    /// added, removed, moved or written (an actual change: an equal write is no write), a
    /// [`Store::column_mut`], or a mark ([`Store::mark_dirty`], [`Store::mark_rows_dirty`]).
    /// Reading marks nothing.
    ///
    /// # Errors
    ///
    /// Refused for a component not installed.
    pub fn is_dirty(&self, component: ComponentId) -> Result<bool, StoreError> {
        let set = self.set(component)?;
        Ok(self.frame.is_dirty(component, set))
    }

    /// What of a component is dirty since the last [`Store::end_frame`]: clean, the whole
    /// column, or the dirty rows (see [`FrameDirty`]).
    ///
    /// # Errors
    ///
    /// Refused for a component not installed.
    pub fn frame_dirty(&self, component: ComponentId) -> Result<FrameDirty, StoreError> {
        let set = self.set(component)?;
        Ok(self.frame.dirty(component, set))
    }

    /// Marks an instance's row of a component dirty for the frame, after a write the store
    /// could not see (through a value read out and written back elsewhere, say). Changes no
    /// tick and no value.
    ///
    /// # Errors
    ///
    /// Refused, changing nothing, for a component not installed or an instance without the
    /// component ([`StoreError::MissingMembership`]).
    pub fn mark_dirty(
        &mut self,
        at: InstanceRef,
        component: ComponentId,
    ) -> Result<(), StoreError> {
        self.row(at, component)?;
        self.frame.mark(component, at);
        Ok(())
    }

    /// Marks rows `rows` of a component dirty for the frame (see [`Store::mark_dirty`]).
    ///
    /// # Errors
    ///
    /// Refused, changing nothing, for a component not installed or a range past the set's rows
    /// ([`StoreError::RowOutOfRange`]).
    pub fn mark_rows_dirty(
        &mut self,
        component: ComponentId,
        rows: RangeInclusive<usize>,
    ) -> Result<(), StoreError> {
        let set = self.set(component)?;
        if rows.is_empty() {
            return Ok(());
        }
        if *rows.end() >= set.len() {
            return Err(StoreError::RowOutOfRange {
                component: set.def().name().to_owned(),
                row: *rows.end(),
            });
        }
        if rows.clone().count() > crate::frame::RESIDUE_CAPACITY {
            self.frame.mark_whole(component);
            return Ok(());
        }
        let Some(set) = self.sets.get(component.index()).and_then(Option::as_ref) else {
            return Ok(());
        };
        for row in rows {
            self.frame.mark(component, set.at(row));
        }
        Ok(())
    }

    /// Ends the frame: dirty state clears for every component, and the structural window
    /// reopens at the present [`Store::structural_count`] with no residue. The engine calls it
    /// once per frame, after every consumer has read. Per-row dirty fields
    /// ([`Store::take_dirty`]) and change ticks are not touched.
    pub fn end_frame(&mut self) {
        self.frame.end(self.tick);
    }

    /// The store tick when the frame began (at the last [`Store::end_frame`], or when the store
    /// was made or restored): every change of the frame so far has a later tick. With
    /// [`RemovalReader::since`](crate::RemovalReader::since), a reader of the frame's removals.
    pub fn frame_tick(&self) -> Tick {
        self.frame.tick()
    }

    /// The structural change count: it rises by one for every range of rows added, every range
    /// of rows removed and every row a removal moved, in any component, and never falls.
    pub fn structural_count(&self) -> u64 {
        self.frame.count()
    }

    /// The structural changes after `count` (a value of [`Store::structural_count`] read
    /// earlier in this window): the components whose membership changed, the instances that got
    /// a row, and those that lost or moved one.
    ///
    /// # Errors
    ///
    /// [`StructuralMissed`] when `count` predates the window or is past the present count: the
    /// window opens at every [`Store::end_frame`], and again at any event that would take the
    /// residue past its bound ([`RESIDUE_CAPACITY`](crate::RESIDUE_CAPACITY) instances per list).
    /// Then refresh completely and continue from the present count, in the same frame.
    pub fn structural_since(&self, count: u64) -> Result<StructuralResidue<'_>, StructuralMissed> {
        self.frame.since(count)
    }

    /// Turns on (or off) the counting of explicit writes to one column (checked setters such
    /// as [`Store::write`], column writers, parallel passes, bulk sets, [`Store::column_mut`]):
    /// [`Store::value_count`] adds each write that
    /// changes a value of it from now on (an equal write is no write).
    ///
    /// # Errors
    ///
    /// Refused, changing nothing, for a component not installed or a field it lacks.
    pub fn track_value_count(
        &mut self,
        component: ComponentId,
        field: FieldId,
        on: bool,
    ) -> Result<(), StoreError> {
        self.set(component)?.def().checked_field(field)?;
        self.frame.track_value_count(component, field, on);
        Ok(())
    }

    /// The number of explicit value writes to tracked columns (see
    /// [`Store::track_value_count`]) since tracking began, over all of them. Never falls.
    pub fn value_count(&self) -> u64 {
        self.frame.value_count()
    }
}
