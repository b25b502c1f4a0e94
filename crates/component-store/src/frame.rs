//! Per-frame state for incremental consumers: what is dirty since the frame began, the
//! structural change counter with its bounded residue, and the opt-in value-write counters.
//!
//! Invariant: everything here is private to this module and describes the store since the last
//! `Store::end_frame` (the window). A row is dirty for the frame iff its added or changed tick
//! is after `tick` (the store tick when the window opened), or its instance was marked
//! (`mark_dirty`, or moved by a removal) while it held the row, or its set is marked whole;
//! the per-write routes therefore pay nothing here. `count` rises by one for each structural
//! event (a range of rows added, a range of rows removed, one row moved), never falls, and
//! `window_start` is its value when the window opened. The residue lists (`added`, `touched`)
//! hold `(count, id)` in count order and at most `RESIDUE_CAPACITY` entries each; an event that
//! would take either past that reopens the window at once (`window_start` becomes the count of
//! that event and both lists empty), so readers from before it are told they missed the window
//! and a reader that refreshed afterwards continues from the present count.
//! `described[c]` is the count of component `c`'s latest membership change in the window, 0
//! for none.

use std::ops::RangeInclusive;

use strata_arena::InstanceId;

use crate::def::{ComponentId, FieldId};
use crate::set::{ComponentSet, InstanceRef, Tick};

/// How many instances each list of the structural residue ([`StructuralResidue::added`],
/// [`StructuralResidue::touched`]) holds in one frame before it overflows, and how many
/// explicitly marked instances a component keeps before it counts as dirty as a whole.
pub const RESIDUE_CAPACITY: usize = 4096;

/// What a component's set has that is dirty since the frame began (see
/// [`Store::frame_dirty`](crate::Store::frame_dirty)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrameDirty {
    /// Nothing was placed, removed, moved, written or marked.
    Clean,
    /// The whole column counts as dirty (a [`Store::column_mut`](crate::Store::column_mut), a
    /// load or redefinition, or more marks than [`RESIDUE_CAPACITY`]).
    Whole,
    /// These rows are dirty (ascending, each once); `removed` tells whether rows were removed
    /// this frame (the set may have shrunk, so a consumer mirroring it by row trims its copy to
    /// the set's length).
    Rows {
        /// The dirty rows, ascending.
        rows: Vec<usize>,
        /// Whether rows were removed this frame.
        removed: bool,
    },
}

impl FrameDirty {
    /// Whether anything is dirty.
    pub fn is_dirty(&self) -> bool {
        !matches!(self, FrameDirty::Clean)
    }
}

/// A consumer's count predates the structural window, which opens at every
/// [`Store::end_frame`](crate::Store::end_frame) and again whenever the residue would grow past
/// [`RESIDUE_CAPACITY`] (or the count is from the future): refresh completely, then continue
/// from [`Store::structural_count`](crate::Store::structural_count).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the structural residue no longer reaches back to count {asked}: refresh completely")]
pub struct StructuralMissed {
    /// The count the consumer asked from.
    pub asked: u64,
}

/// The structural changes after a consumer's count, within the current window.
#[derive(Clone, Copy, Debug)]
pub struct StructuralResidue<'a> {
    count: u64,
    asked: u64,
    described: &'a [u64],
    added: &'a [(u64, InstanceId)],
    touched: &'a [(u64, InstanceId)],
}

impl<'a> StructuralResidue<'a> {
    /// The structural count now: the count to ask from next time.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Components whose membership changed after the count asked from, ascending.
    pub fn described(&self) -> impl Iterator<Item = ComponentId> + 'a {
        let asked = self.asked;
        self.described
            .iter()
            .enumerate()
            .filter(move |(_, at)| **at > asked)
            .map(|(index, _)| ComponentId(index as u32))
    }

    /// Instances that got a row after the count asked from (once per row added, in order).
    pub fn added(&self) -> impl Iterator<Item = InstanceId> + 'a {
        self.added.iter().map(|(_, id)| *id)
    }

    /// Instances that lost or moved a row after the count asked from (once per event, in
    /// order).
    pub fn touched(&self) -> impl Iterator<Item = InstanceId> + 'a {
        self.touched.iter().map(|(_, id)| *id)
    }
}

/// One component's marks for the frame.
#[derive(Clone, Debug, Default)]
struct Dirt {
    whole: bool,
    removed: bool,
    marked: Vec<InstanceRef>,
}

/// The per-frame state of a store (see the module invariant).
#[derive(Clone, Debug, Default)]
pub(crate) struct Frame {
    tick: Tick,
    count: u64,
    window_start: u64,
    described: Vec<u64>,
    added: Vec<(u64, InstanceId)>,
    touched: Vec<(u64, InstanceId)>,
    dirt: Vec<Dirt>,
    tracked: Vec<(ComponentId, FieldId)>,
    value_count: u64,
}

impl Frame {
    fn dirt_mut(&mut self, component: ComponentId) -> &mut Dirt {
        if self.dirt.len() <= component.index() {
            self.dirt.resize_with(component.index() + 1, Dirt::default);
        }
        &mut self.dirt[component.index()]
    }

    fn describe(&mut self, component: ComponentId) {
        self.count += 1;
        if self.described.len() <= component.index() {
            self.described.resize(component.index() + 1, 0);
        }
        self.described[component.index()] = self.count;
    }

    /// Opens the residue window at the present count: readers from before it missed it.
    fn reopen(&mut self) {
        self.window_start = self.count;
        self.added.clear();
        self.touched.clear();
    }

    /// Rows `rows` of `set` were added.
    pub(crate) fn added(
        &mut self,
        component: ComponentId,
        set: &ComponentSet,
        rows: RangeInclusive<usize>,
    ) {
        self.added_ids(component, set.ids().get(rows).unwrap_or(&[]));
    }

    /// One row was added to `component`'s set, for `id`: [`Frame::added`] without reading the
    /// set.
    #[inline]
    pub(crate) fn added_one(&mut self, component: ComponentId, id: InstanceId) {
        self.added_ids(component, std::slice::from_ref(&id));
    }

    /// Rows of `component` were added for `ids`, in order.
    #[inline]
    fn added_ids(&mut self, component: ComponentId, ids: &[InstanceId]) {
        self.describe(component);
        if self.added.len() + ids.len() > RESIDUE_CAPACITY {
            self.reopen();
            return;
        }
        let count = self.count;
        self.added.extend(ids.iter().map(|id| (count, *id)));
    }

    /// Rows `rows` of `set` are being removed.
    pub(crate) fn removing(
        &mut self,
        component: ComponentId,
        set: &ComponentSet,
        rows: RangeInclusive<usize>,
    ) {
        self.describe(component);
        self.dirt_mut(component).removed = true;
        let ids = set.ids().get(rows).unwrap_or(&[]);
        if self.touched.len() + ids.len() > RESIDUE_CAPACITY {
            self.reopen();
            return;
        }
        let count = self.count;
        self.touched.extend(ids.iter().map(|id| (count, *id)));
    }

    /// A removal moved `at` to another row.
    pub(crate) fn moved(&mut self, component: ComponentId, at: InstanceRef) {
        self.describe(component);
        if self.touched.len() < RESIDUE_CAPACITY {
            self.touched.push((self.count, at.id));
        } else {
            self.reopen();
        }
        self.mark(component, at);
    }

    /// Marks `at`'s row of `component` dirty for the frame.
    pub(crate) fn mark(&mut self, component: ComponentId, at: InstanceRef) {
        let dirt = self.dirt_mut(component);
        if dirt.whole {
            return;
        }
        if dirt.marked.len() < RESIDUE_CAPACITY {
            dirt.marked.push(at);
        } else {
            dirt.marked = Vec::new();
            dirt.whole = true;
        }
    }

    /// Marks the whole set of `component` dirty for the frame.
    pub(crate) fn mark_whole(&mut self, component: ComponentId) {
        let dirt = self.dirt_mut(component);
        dirt.whole = true;
        dirt.marked = Vec::new();
    }

    /// Whether `set` (of `component`) has anything dirty for the frame.
    pub(crate) fn is_dirty(&self, component: ComponentId, set: &ComponentSet) -> bool {
        if let Some(dirt) = self.dirt.get(component.index())
            && (dirt.whole || dirt.removed || dirt.marked.iter().any(|at| set.contains(*at)))
        {
            return true;
        }
        let tick = self.tick;
        let (added, changed) = (
            set.added_ticks().after(tick),
            set.changed_ticks().after(tick),
        );
        let fresh = |row: usize| added.row(row) || changed.row(row);
        match set.changes_since(tick) {
            Some(changes) => changes.rows().any(fresh),
            None => (0..set.len()).any(fresh),
        }
    }

    /// What `set` (of `component`) has dirty for the frame.
    pub(crate) fn dirty(&self, component: ComponentId, set: &ComponentSet) -> FrameDirty {
        let dirt = self.dirt.get(component.index());
        if dirt.is_some_and(|d| d.whole) {
            return FrameDirty::Whole;
        }
        let tick = self.tick;
        let (added, changed) = (
            set.added_ticks().after(tick),
            set.changed_ticks().after(tick),
        );
        let fresh = |row: &usize| added.row(*row) || changed.row(*row);
        let mut rows: Vec<usize> = match set.changes_since(tick) {
            Some(changes) => changes.rows().filter(fresh).collect(),
            None => (0..set.len()).filter(fresh).collect(),
        };
        let removed = dirt.is_some_and(|d| d.removed);
        if let Some(dirt) = dirt {
            rows.extend(dirt.marked.iter().filter_map(|at| set.row_of(*at)));
        }
        rows.sort_unstable();
        rows.dedup();
        if rows.is_empty() && !removed {
            FrameDirty::Clean
        } else {
            FrameDirty::Rows { rows, removed }
        }
    }

    /// The frame state a store snapshot carries, at a cost that does not grow with the frame's
    /// work: the dirty window and counters as they are, the structural window opened at the
    /// present count (the residue lists stay here, so a count from before is missed there), and
    /// every component with marked rows counted as dirty whole (a superset of what it had).
    pub(crate) fn snapshot(&self) -> Self {
        let dirt = self
            .dirt
            .iter()
            .map(|dirt| Dirt {
                whole: dirt.whole || !dirt.marked.is_empty(),
                removed: dirt.removed,
                marked: Vec::new(),
            })
            .collect();
        Self {
            tick: self.tick,
            count: self.count,
            window_start: self.count,
            described: self.described.clone(),
            added: Vec::new(),
            touched: Vec::new(),
            dirt,
            tracked: self.tracked.clone(),
            value_count: self.value_count,
        }
    }

    /// The frame state after a store restores `saved` over this one: what the saved state's
    /// snapshot carries, with the structural counter moved past both and every component
    /// described at it, so any count taken before the restore sees a change (or is missed).
    pub(crate) fn restored(&self, saved: &Frame) -> Self {
        let mut out = saved.snapshot();
        out.count = self.count.max(saved.count) + 1;
        out.window_start = out.count;
        let components = self.described.len().max(saved.described.len());
        out.described = vec![out.count; components];
        out.value_count = self.value_count.max(saved.value_count);
        out
    }

    /// Closes the window at store tick `tick`: dirty state and residue clear.
    pub(crate) fn end(&mut self, tick: Tick) {
        self.tick = tick;
        self.reopen();
        self.described.clear();
        for dirt in &mut self.dirt {
            dirt.whole = false;
            dirt.removed = false;
            dirt.marked.clear();
        }
    }

    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    /// The store tick when the window opened.
    pub(crate) fn tick(&self) -> Tick {
        self.tick
    }

    pub(crate) fn since(&self, asked: u64) -> Result<StructuralResidue<'_>, StructuralMissed> {
        if asked < self.window_start || asked > self.count {
            return Err(StructuralMissed { asked });
        }
        let from = |list: &'_ [(u64, InstanceId)]| list.partition_point(|(at, _)| *at <= asked);
        Ok(StructuralResidue {
            count: self.count,
            asked,
            described: &self.described,
            added: &self.added[from(&self.added)..],
            touched: &self.touched[from(&self.touched)..],
        })
    }

    /// Turns the value-write counter of a column on or off.
    pub(crate) fn track_value_count(&mut self, component: ComponentId, field: FieldId, on: bool) {
        let at = self.tracked.iter().position(|t| *t == (component, field));
        match (at, on) {
            (None, true) => self.tracked.push((component, field)),
            (Some(at), false) => {
                self.tracked.swap_remove(at);
            }
            _ => {}
        }
    }

    /// Counts `n` explicit writes to a column, if it is tracked.
    #[inline]
    pub(crate) fn count_values(&mut self, component: ComponentId, field: FieldId, n: u64) {
        if !self.tracked.is_empty() && self.tracked.contains(&(component, field)) {
            self.value_count += n;
        }
    }

    /// The value-write counter, when a column's writes are counted.
    #[inline]
    pub(crate) fn counter(&mut self, component: ComponentId, field: FieldId) -> Option<&mut u64> {
        (!self.tracked.is_empty() && self.tracked.contains(&(component, field)))
            .then_some(&mut self.value_count)
    }

    pub(crate) fn value_count(&self) -> u64 {
        self.value_count
    }

    /// Forgets an uninstalled component's value tracking.
    pub(crate) fn forget(&mut self, component: ComponentId) {
        self.tracked.retain(|(c, _)| *c != component);
        if let Some(dirt) = self.dirt.get_mut(component.index()) {
            *dirt = Dirt::default();
        }
    }
}
