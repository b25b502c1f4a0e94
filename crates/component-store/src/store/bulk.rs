//! Bulk row operations behind [`crate::Stage`]: placing rows unpublished and publishing them,
//! setting a component on many instances, and removing it from many, each touching every
//! affected column once per batch, at one tick per batch.
//!
//! Invariant: every check runs before the first row changes, so a refused batch changes
//! nothing; rows placed unpublished carry their tick but advance neither the store's tick nor
//! its events until `publish_placed`, and `take_back_unpublished` removes them without a trace.

use std::sync::Arc;

use strata_arena::{ClassId, InstanceId};

use super::{Store, StoreEvent};
use crate::def::{ComponentId, FieldId};
use crate::error::StoreError;
use crate::set::{ComponentSet, InstanceRef, Tick};
use crate::value::Value;

impl Store {
    /// Checks that every instance of `ats` (of class `class`) may take a default row of
    /// `component` (see [`Store::insert_many`]), changing nothing: the class is allowed, then
    /// each slot is free and in range (decided by `check_add_slow` in full where the quick test
    /// fails). Slots named twice are not checked here.
    pub(crate) fn check_place(
        &self,
        ats: &[InstanceRef],
        class: ClassId,
        component: ComponentId,
    ) -> Result<(), StoreError> {
        let set = self.set(component)?;
        if !set.def().allows_class(class) {
            return Err(StoreError::ClassNotAllowed {
                component: set.def().name().to_owned(),
                class,
            });
        }
        let rows_after = set.len() + ats.len();
        let sparse_len = set.sparse_len();
        for at in ats {
            if set.holder_at(at.slot).is_some() || !at.slot_near(sparse_len, rows_after) {
                self.check_add_slow(set, *at, class, rows_after)?;
            }
        }
        Ok(())
    }

    /// Appends default rows of `component` for `ats` (checked by [`Store::check_place`], slots
    /// distinct) at `tick`, without advancing the store's tick or queueing events: rows not
    /// yet published. Returns the set's length before and the new rows.
    pub(crate) fn place_unpublished(
        &mut self,
        ats: &[InstanceRef],
        component: ComponentId,
        tick: Tick,
    ) -> Result<std::ops::Range<usize>, StoreError> {
        let def = self.def(component)?;
        let made = if def.has_factories() {
            let ids: Vec<InstanceId> = ats.iter().map(|at| at.id).collect();
            def.make_defaults(&ids, &[])?
        } else {
            Vec::new()
        };
        let set = self.set_mut(component)?;
        let rows = set.push_default_rows(ats, tick);
        set.store_made(rows.start, made);
        Ok(rows)
    }

    /// Takes back rows of `component` placed by [`Store::place_unpublished`] (the set had
    /// `len` rows before).
    pub(crate) fn take_back_unpublished(&mut self, component: ComponentId, len: usize) {
        if let Ok(set) = self.set_mut(component) {
            set.truncate_unpublished(len);
        }
    }

    /// Publishes rows placed by [`Store::place_unpublished`] (`placed`: each component with
    /// its new rows) at `tick`: the store's tick moves there, each component's observers hear
    /// of the whole range in one call, then observed components queue an `Added` event per
    /// instance.
    pub(crate) fn publish_placed(
        &mut self,
        placed: &[(ComponentId, std::ops::Range<usize>)],
        ats: &[InstanceRef],
        tick: Tick,
    ) {
        self.advance_tick_to(tick);
        for (component, rows) in placed {
            if !rows.is_empty() {
                self.notify_added(*component, rows.start..=rows.end - 1);
            }
        }
        for &(component, _) in placed {
            let observed = self
                .slot_set(component)
                .is_some_and(|s| s.def().def.observed);
            if observed {
                self.events.extend(ats.iter().map(|at| StoreEvent::Added {
                    id: at.id,
                    component,
                }));
            }
        }
    }

    /// The one-row columns of a row of `component` holding `values` (checked against the
    /// definition here) and defaults elsewhere.
    pub(crate) fn template_row(
        &self,
        component: ComponentId,
        values: &[(FieldId, Value)],
    ) -> Result<Vec<crate::column::Column>, StoreError> {
        let def = self.def(component)?;
        for (field, value) in values {
            def.check_value(*field, value)?;
        }
        let mut template = def.defaults.clone();
        for (field, value) in values {
            template[field.index()].replace(0, value.clone());
        }
        Ok(template)
    }

    /// Adds `component` to every instance of `members` lacking it, and stores `values` in the
    /// given fields of every member holding it, at one tick (none when nothing changes).
    /// Members are `(instance, class)`; repeated ones count once. Refused, changing nothing,
    /// as [`Store::add`] refuses any one of the adds. Returns how many rows were added and
    /// how many members already held the component.
    pub(crate) fn set_many(
        &mut self,
        members: &[(InstanceRef, ClassId)],
        component: ComponentId,
        values: &[(FieldId, Value)],
    ) -> Result<(usize, usize), StoreError> {
        let template = self.template_row(component, values)?;
        let set = self.set(component)?;
        let (holders, newcomers) = partition_members(set, members);
        if !newcomers.is_empty() {
            let rows_after = set.len() + newcomers.len();
            for (at, class) in members {
                if set.row_of(*at).is_none() {
                    self.check_add(set, *at, *class, rows_after)?;
                }
            }
        }
        let made = if set.def().has_factories() && !newcomers.is_empty() {
            let ids: Vec<InstanceId> = newcomers.iter().map(|at| at.id).collect();
            let given: Vec<FieldId> = values.iter().map(|(field, _)| *field).collect();
            set.def().make_defaults(&ids, &given)?
        } else {
            Vec::new()
        };
        let tick = Tick(self.tick.0 + 1);
        let Some((shared, store_tick, events)) = self.parts(component) else {
            return Err(StoreError::UnknownComponent(component));
        };
        let observed = shared.def().def.observed;
        if newcomers.is_empty() && values.is_empty() {
            return Ok((0, holders.len()));
        }
        let set = shared.make_mut();
        let mut any = false;
        let mut added = 0..0;
        if !newcomers.is_empty() {
            added = set.push_rows_from(&template, &newcomers, tick);
            set.store_made(added.start, made);
            any = true;
            if observed {
                events.extend(newcomers.iter().map(|at| StoreEvent::Added {
                    id: at.id,
                    component,
                }));
            }
        }
        let mut changed = Vec::new();
        let mut written = Vec::with_capacity(values.len());
        for (field, _) in values {
            changed.clear();
            let mut count = 0u64;
            set.assign_rows(&holders, *field, &template[field.index()], tick, |row| {
                any = true;
                count += 1;
                if observed {
                    changed.push(row);
                }
            });
            written.push((*field, count));
            events.extend(changed.iter().map(|row| StoreEvent::Changed {
                id: set.ids()[*row],
                component,
                field: *field,
            }));
        }
        if any {
            *store_tick = tick;
        }
        if !added.is_empty() {
            self.notify_added(component, added.start..=added.end - 1);
        }
        for (field, count) in written {
            self.frame.count_values(component, field, count);
        }
        Ok((newcomers.len(), holders.len()))
    }

    /// Removes `component` from every instance of `ats` holding it, in one compaction pass at
    /// one tick (rows to remove gathered at the end, each column truncated once), then, the
    /// same way, every component that requires it (transitively) from the instances that lost
    /// it. Records
    /// what it removed in `removed`; returns how many rows of `component` went.
    pub(crate) fn remove_many(
        &mut self,
        ats: &[InstanceRef],
        component: ComponentId,
        removed: &mut Vec<(InstanceId, ComponentId)>,
    ) -> Result<usize, StoreError> {
        let set = self.set(component)?;
        let rows: Vec<usize> = ats.iter().filter_map(|at| set.row_of(*at)).collect();
        // Dependents go from the instances that lose the component, as for one instance.
        let lost: Vec<InstanceRef> = if self.dependents[component.index()].is_empty() {
            Vec::new()
        } else {
            rows.iter()
                .map(|&row| InstanceRef::new(set.ids()[row], set.slots()[row]))
                .collect()
        };
        let count = self.remove_rows_bulk(component, &rows, removed);
        if count > 0 && !lost.is_empty() {
            for dependent in self.dependents[component.index()].clone() {
                self.remove_many(&lost, dependent, removed)?;
            }
        }
        Ok(count)
    }

    /// Removes rows `rows` (repeats allowed) of a component's set at one new tick: removal
    /// records, `Removed` events when observed, migration input dropped. Returns how many.
    pub(super) fn remove_rows_bulk(
        &mut self,
        component: ComponentId,
        rows: &[usize],
        removed: &mut Vec<(InstanceId, ComponentId)>,
    ) -> usize {
        if rows.is_empty() {
            return 0;
        }
        let tick = Tick(self.tick.0 + 1);
        let Some((shared, store_tick, _)) = self.parts(component) else {
            return 0;
        };
        *store_tick = tick;
        let observed = shared.def().def.observed;
        let set = shared.make_mut();
        let mut moves = Vec::new();
        let len = set.gather_to_tail(rows, tick, |id, old, new| moves.push((id, old, new)));
        let end = set.len();
        for (id, old, new) in moves {
            self.notify_moved(component, id, old, new);
        }
        self.notify_removing(component, len..=end - 1);
        let Some((shared, _, events)) = self.parts(component) else {
            return 0;
        };
        let set = shared.make_mut();
        let gone = &set.ids()[len..];
        let first = removed.len();
        removed.extend(gone.iter().map(|id| (*id, component)));
        if observed {
            events.extend(
                gone.iter()
                    .map(|id| StoreEvent::Removed { id: *id, component }),
            );
        }
        set.truncate_removed(len, tick);
        self.notify_emptied_if(component);
        if !self.migrations.is_empty() {
            let migrations = Arc::make_mut(&mut self.migrations);
            for key in &removed[first..] {
                migrations.remove(key);
            }
        }
        removed.len() - first
    }
}

/// The members of `members` that hold a row of `set` (their rows) and those that do not, each
/// slot counted once, in the order given.
fn partition_members(
    set: &ComponentSet,
    members: &[(InstanceRef, ClassId)],
) -> (Vec<usize>, Vec<InstanceRef>) {
    let mut holders = Vec::new();
    let mut newcomers = Vec::new();
    let max_slot = members
        .iter()
        .map(|(at, _)| at.slot.index())
        .max()
        .unwrap_or(0);
    let mut seen = vec![0u64; max_slot / 64 + 1];
    for (at, _) in members {
        let (word, bit) = (at.slot.index() / 64, 1u64 << (at.slot.index() % 64));
        if seen[word] & bit != 0 {
            continue;
        }
        seen[word] |= bit;
        match set.row_of(*at) {
            Some(row) => holders.push(row),
            None => newcomers.push(*at),
        }
    }
    (holders, newcomers)
}
