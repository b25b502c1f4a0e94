//! `ComponentSet`: the rows of one component.
//!
//! Invariant: `sparse[slot] == row` iff `slots[row] == slot`, and then `ids[row]` is the instance
//! holding that slot; every other sparse entry is `ABSENT`. `ids`, `slots`, `added`, `changed`,
//! every column, and `dirty` (in `dirty_words` units) have one entry per row. Removing a row
//! swaps the last row into its place in every array and repairs the moved instance's sparse
//! entry, writing the moved position before marking the removed slot absent, so removing the last
//! row (which moves onto itself) leaves its slot absent. A `Row` is a position valid until the
//! next removal, never an identity. `refs` lists, for every target, one entry per reference to it
//! held in this set's rows. `dirty_rows` lists every row whose dirty mask is not empty (plus
//! entries of rows removed since, which readers skip) and never holds more than
//! `dirty_bound(len)` entries: it is compacted when a push or a removal would break that. The
//! removal log's `timeline` is unique to this copy of the set once it diverges from another copy
//! (see `SharedSet::make_mut`), so a reader's cursor is never read against a log that does not
//! continue the records the reader saw.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use strata_arena::{BoundedJournal, InstanceId, Slot, Snapshot};

use crate::column::{Column, Scalar};
use crate::def::{ComponentId, FieldId, InstalledDef};
use crate::error::StoreError;
use crate::value::Value;

/// The sparse marker for "no row".
pub(crate) const ABSENT: u32 = u32::MAX;

/// How many removal records a set retains before dropping the older half.
pub const REMOVAL_LOG_CAPACITY: usize = 16_384;

/// A value of the store's mutation counter. `u64` never wraps in practice.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default)]
pub struct Tick(pub u64);

/// The sparse extent any reference may make a set grow to: `2^20` slots (4 MiB of sparse
/// entries per set). Beyond it a store grows geometrically: a slot is taken below twice the
/// longest sparse array of the store's sets or twice the rows the set will hold, whichever is
/// larger, or below the arena's slot count a checked reference ([`InstanceRef::of`]) carries.
/// So a forged slot never makes a store allocate more than twice what it already holds, while a
/// world of any size fills it through unchecked references in slot order or in bulk.
pub const UNCHECKED_SLOT_LIMIT: usize = 1 << 20;

/// An instance as the store addresses it: its id and the arena slot it occupies.
///
/// Make one with [`InstanceRef::of`], which asks the arena for the instance's slot. A
/// reference also remembers how many slots the arena had then, so the store may take any slot
/// below that. [`InstanceRef::new`] pairs an id and a slot without checking: it is for pairs the
/// caller got from the arena or the store itself (`Arena::create_many`, `ComponentSet::ids` and
/// `slots`, destruction reports). Without the arena's word, the store takes a slot only within
/// geometric growth of what it holds (see [`UNCHECKED_SLOT_LIMIT`]), so a forged slot never
/// makes it allocate far past its present size.
///
/// Equality and hashing look at the id and the slot only.
#[derive(Clone, Copy)]
pub struct InstanceRef {
    /// The instance id.
    pub id: InstanceId,
    /// The slot the arena keeps it in.
    pub slot: Slot,
    /// The arena's slot count when the pair was checked; zero when unchecked.
    bound: u32,
}

impl InstanceRef {
    /// Pairs an id with its slot, unchecked: for pairs the caller got from the arena or the
    /// store itself (see the type's documentation).
    pub const fn new(id: InstanceId, slot: Slot) -> Self {
        Self { id, slot, bound: 0 }
    }

    /// The instance `id` of `arena` (a snapshot, or a live `Arena` through its `Deref`), at the
    /// slot the arena keeps it in (live or destroyed and not yet reclaimed).
    /// [`StoreError::UnknownInstance`] when the arena has no slot for it.
    pub fn of(arena: &Snapshot, id: InstanceId) -> Result<Self, StoreError> {
        let slot = arena.slot_of(id).ok_or(StoreError::UnknownInstance(id))?;
        let bound = u32::try_from(arena.slot_capacity().max(slot.index() + 1)).unwrap_or(u32::MAX);
        Ok(Self { id, slot, bound })
    }

    /// Whether a set whose sparse array has `sparse_len` entries, and which will hold
    /// `rows_after` rows, may take this reference's slot: below the arena's slot count the
    /// reference carries, [`UNCHECKED_SLOT_LIMIT`], or twice the larger of `rows_after` and
    /// the longest sparse array of the store (`store_extent`, asked only when the others do not
    /// suffice, and at least `sparse_len`).
    pub(crate) fn check_slot(
        &self,
        sparse_len: usize,
        rows_after: usize,
        store_extent: impl FnOnce() -> usize,
    ) -> Result<(), StoreError> {
        let slot = self.slot.index();
        let near = (self.bound as usize)
            .max(UNCHECKED_SLOT_LIMIT)
            .max(sparse_len.max(rows_after).saturating_mul(2));
        if slot < near {
            return Ok(());
        }
        let limit = near.max(store_extent().saturating_mul(2));
        if slot < limit {
            Ok(())
        } else {
            Err(StoreError::SlotOutOfRange {
                slot: self.slot,
                limit,
            })
        }
    }
}

impl PartialEq for InstanceRef {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id && self.slot == other.slot
    }
}

impl Eq for InstanceRef {}

impl std::hash::Hash for InstanceRef {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.id.hash(state);
        self.slot.hash(state);
    }
}

impl std::fmt::Debug for InstanceRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InstanceRef")
            .field("id", &self.id)
            .field("slot", &self.slot)
            .finish()
    }
}

/// An entry of a set's change log: the instance, and the row it held when logged (a hint:
/// rows move on removal, so readers check `ids[row]` and fall back to the sparse lookup).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ChangeRecord {
    /// The instance whose row changed.
    pub at: InstanceRef,
    /// Its row at the time.
    pub row: u32,
}

impl ChangeRecord {
    /// The instance's present row in `set`, using the hint when it still holds.
    #[inline]
    pub fn resolve(&self, set: &ComponentSet) -> Option<usize> {
        let hint = self.row as usize;
        if set.ids.get(hint) == Some(&self.at.id) {
            Some(hint)
        } else {
            set.row_of(self.at)
        }
    }
}

/// How many forks back a removal log remembers its history: a reader whose timeline is further
/// back is told it missed removals (it may not have; it must rebuild all the same).
const TIMELINE_MEMORY: usize = 64;

static NEXT_TIMELINE: AtomicU64 = AtomicU64::new(1);

/// Which history a set's removal log records. Every copy of a set (the first write after a
/// snapshot, a redefinition) forks a new timeline that remembers where it left its parent: the
/// records up to that head are the parent's, the ones after are its own. A reader's cursor is
/// valid on its own timeline, and on any timeline forked from it at or after the cursor.
#[derive(Clone, Debug)]
pub(crate) struct Timeline {
    id: u64,
    /// Ancestors, nearest first, each with the head of the log when this history left it.
    forks: Arc<[(u64, u64)]>,
}

impl Timeline {
    fn fresh() -> Self {
        Self {
            id: NEXT_TIMELINE.fetch_add(1, Ordering::Relaxed),
            forks: Arc::from(Vec::new()),
        }
    }

    /// This timeline's id.
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// A new timeline leaving this one at `head`.
    pub(crate) fn fork(&self, head: u64) -> Self {
        let forks: Vec<(u64, u64)> = std::iter::once((self.id, head))
            .chain(self.forks.iter().copied())
            .take(TIMELINE_MEMORY)
            .collect();
        Self {
            id: NEXT_TIMELINE.fetch_add(1, Ordering::Relaxed),
            forks: Arc::from(forks),
        }
    }

    /// Whether a cursor taken on timeline `timeline` is valid on this one: the same timeline,
    /// or an ancestor this one left at or after the cursor.
    pub(crate) fn continues(&self, timeline: u64, cursor: u64) -> bool {
        timeline == self.id
            || self
                .forks
                .iter()
                .any(|&(ancestor, head)| ancestor == timeline && cursor <= head)
    }
}

/// A removal record: which instance lost the component, at which tick.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Removal {
    /// The instance.
    pub id: InstanceId,
    /// The store tick of the removal.
    pub tick: Tick,
}

/// One reference held in a set: the holder and the field holding it.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash, PartialOrd, Ord)]
pub struct RefEntry {
    /// The instance holding the reference.
    pub holder: InstanceId,
    /// The holder's slot.
    pub holder_slot: Slot,
    /// The field holding it.
    pub field: FieldId,
}

/// Which fields of a row changed since the dirty state was last taken.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct FieldMask(Vec<u64>);

impl FieldMask {
    /// Whether a field is in the mask.
    pub fn contains(&self, field: FieldId) -> bool {
        self.0
            .get(field.index() / 64)
            .is_some_and(|w| w & (1 << (field.index() % 64)) != 0)
    }

    /// The fields in the mask, in order.
    pub fn fields(&self) -> impl Iterator<Item = FieldId> + '_ {
        self.0.iter().enumerate().flat_map(|(w, word)| {
            (0..64u16)
                .filter(move |bit| word & (1 << bit) != 0)
                .map(move |bit| FieldId(w as u16 * 64 + bit))
        })
    }

    /// Whether no field is in the mask.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|w| *w == 0)
    }
}

/// The rows of one component: sparse slot → row, dense ids and slots, one column per field,
/// per-row ticks and dirty masks, a removal log and a reverse reference index.
#[derive(Clone, Debug)]
pub struct ComponentSet {
    pub(crate) def: Arc<InstalledDef>,
    pub(crate) sparse: Vec<u32>,
    pub(crate) ids: Vec<InstanceId>,
    pub(crate) slots: Vec<Slot>,
    pub(crate) columns: Vec<Column>,
    pub(crate) added: Vec<Tick>,
    pub(crate) changed: Vec<Tick>,
    pub(crate) dirty: Vec<u64>,
    pub(crate) dirty_words: usize,
    pub(crate) dirty_rows: Vec<InstanceRef>,
    pub(crate) structural: u64,
    pub(crate) removals: BoundedJournal<Removal>,
    pub(crate) timeline: Timeline,
    pub(crate) refs: crate::refs::RefIndex,
    /// Rows whose changed tick rose above `log_base`, each logged once (stale entries allowed:
    /// readers resolve and re-check them).
    pub(crate) change_log: Vec<ChangeRecord>,
    /// Every row whose changed tick is above this is in `change_log`.
    pub(crate) log_base: Tick,
}

impl ComponentSet {
    pub(crate) fn new(def: Arc<InstalledDef>) -> Self {
        let columns = def
            .fields()
            .iter()
            .map(|f| Column::for_type(&f.ty))
            .collect();
        let dirty_words = def.fields().len().div_ceil(64);
        Self {
            def,
            sparse: Vec::new(),
            ids: Vec::new(),
            slots: Vec::new(),
            columns,
            added: Vec::new(),
            changed: Vec::new(),
            dirty: Vec::new(),
            dirty_words,
            dirty_rows: Vec::new(),
            structural: 0,
            removals: BoundedJournal::new(REMOVAL_LOG_CAPACITY),
            timeline: Timeline::fresh(),
            refs: crate::refs::RefIndex::default(),
            change_log: Vec::new(),
            log_base: Tick(0),
        }
    }

    /// The component's id.
    pub fn id(&self) -> ComponentId {
        self.def.id
    }

    /// The installed definition.
    pub fn def(&self) -> &InstalledDef {
        &self.def
    }

    /// How many rows.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether the set has no rows.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The row of an instance, if it holds the component. The row's id is checked, so an
    /// instance that took over a reused slot never resolves to its predecessor's row.
    pub fn row_of(&self, at: InstanceRef) -> Option<usize> {
        let row = *self.sparse.get(at.slot.index())?;
        if row == ABSENT {
            return None;
        }
        let row = row as usize;
        (self.ids.get(row) == Some(&at.id)).then_some(row)
    }

    /// Whether an instance holds the component.
    pub fn contains(&self, at: InstanceRef) -> bool {
        self.row_of(at).is_some()
    }

    /// The instance holding a row at `slot`, if any (whatever instance a caller pairs with the
    /// slot).
    pub fn holder_at(&self, slot: Slot) -> Option<InstanceId> {
        let row = *self.sparse.get(slot.index())?;
        self.ids.get(row as usize).copied()
    }

    /// The instances holding the component, by row.
    pub fn ids(&self) -> &[InstanceId] {
        &self.ids
    }

    /// Their slots, by row.
    pub fn slots(&self) -> &[Slot] {
        &self.slots
    }

    /// The tick each row was added at.
    pub fn added_ticks(&self) -> &[Tick] {
        &self.added
    }

    /// The tick each row last changed at (its add counts as a change).
    pub fn changed_ticks(&self) -> &[Tick] {
        &self.changed
    }

    /// The set's structural revision: advances on every add, remove and replacement of rows.
    pub fn structural_revision(&self) -> u64 {
        self.structural
    }

    /// A field's column (raw access for tight loops).
    pub fn column(&self, field: FieldId) -> Option<&Column> {
        self.columns.get(field.index())
    }

    /// A field's values as a typed slice, indexed by row.
    pub fn values<T: Scalar>(&self, field: FieldId) -> Option<&[T]> {
        T::slice(self.column(field)?)
    }

    /// A field's values as a typed slice, or why not: [`StoreError::FieldOutOfRange`], or
    /// [`StoreError::TypeMismatch`] when the field's column does not hold `T`
    /// (see [`InstalledDef::check_scalar`]).
    pub fn checked_values<T: Scalar>(&self, field: FieldId) -> Result<&[T], StoreError> {
        let field_def = self.def.check_scalar::<T>(field)?;
        self.values::<T>(field).ok_or_else(|| {
            self.def
                .type_mismatch(field_def, std::any::type_name::<T>())
        })
    }

    /// The value of one field at one row.
    pub fn value(&self, row: usize, field: FieldId) -> Option<Value> {
        self.column(field)?.get(row)
    }

    /// The fields of a row changed since the dirty state was last taken.
    pub fn dirty_mask(&self, row: usize) -> FieldMask {
        let start = row * self.dirty_words;
        FieldMask(
            self.dirty
                .get(start..start + self.dirty_words)
                .map(<[u64]>::to_vec)
                .unwrap_or_default(),
        )
    }

    /// How many entries the list of rows for the next [`Store::take_dirty`] holds: each row
    /// dirtied since the last take, plus entries of rows removed since (skipped by the take).
    ///
    /// [`Store::take_dirty`]: crate::Store::take_dirty
    pub fn pending_dirty(&self) -> usize {
        self.dirty_rows.len()
    }

    /// The removal log.
    pub fn removal_log(&self) -> &BoundedJournal<Removal> {
        &self.removals
    }

    /// Takes this set onto a timeline of its own, leaving the current one at the log's head:
    /// done to every copy that stops sharing its history with the set it was copied from.
    pub(crate) fn fork_timeline(&mut self) {
        self.timeline = self.timeline.fork(self.removals.head());
    }

    /// Continues `old`'s removal log in this set, which replaces it (a redefinition), on a
    /// timeline of its own: a snapshot may still hold `old` and record other removals.
    pub(crate) fn continue_removals(&mut self, old: &ComponentSet) {
        self.removals = old.removals.clone();
        self.timeline = old.timeline.fork(old.removals.head());
    }

    /// The references this set holds to `target`, one entry per reference, sorted by holder
    /// and field.
    pub fn references_to(&self, target: InstanceId) -> Vec<RefEntry> {
        self.refs.entries(target)
    }

    /// How many distinct targets this set references.
    pub fn referenced_targets(&self) -> usize {
        self.refs.targets()
    }

    // ----- Structural edits (called by the store, which keeps ticks and events). -----

    /// Appends a row of validated values for an instance whose slot holds no row.
    pub(crate) fn push_row(&mut self, at: InstanceRef, values: Vec<Value>, tick: Tick) -> usize {
        for (column, value) in self.columns.iter_mut().zip(values) {
            column.push(value);
        }
        self.push_tracking(at, tick)
    }

    /// Appends a row of default values for an instance whose slot holds no row.
    pub(crate) fn push_default_row(&mut self, at: InstanceRef, tick: Tick) -> usize {
        for (column, default) in self.columns.iter_mut().zip(&self.def.defaults) {
            column.push_from(default, 0);
        }
        self.push_tracking(at, tick)
    }

    /// Appends default rows for many instances whose slots hold no row (checked by the
    /// caller), all at one tick. Returns the new rows.
    pub(crate) fn push_default_rows(
        &mut self,
        ats: &[InstanceRef],
        tick: Tick,
    ) -> std::ops::Range<usize> {
        let start = self.ids.len();
        let n = ats.len();
        for (column, default) in self.columns.iter_mut().zip(&self.def.defaults) {
            column.extend_from(default, 0, n);
        }
        if let Some(max) = ats.iter().map(|at| at.slot.index()).max()
            && self.sparse.len() <= max
        {
            self.sparse.resize(max + 1, ABSENT);
        }
        for (i, at) in ats.iter().enumerate() {
            self.sparse[at.slot.index()] = (start + i) as u32;
        }
        self.ids.extend(ats.iter().map(|at| at.id));
        self.slots.extend(ats.iter().map(|at| at.slot));
        self.added.resize(start + n, tick);
        self.changed.resize(start + n, tick);
        self.dirty.resize((start + n) * self.dirty_words, 0);
        if tick > self.log_base {
            if self.change_log.len() + n > (self.ids.len() / 4).max(64) {
                self.change_log.clear();
                self.log_base = tick;
            } else {
                self.change_log
                    .extend(ats.iter().enumerate().map(|(i, at)| ChangeRecord {
                        at: *at,
                        row: (start + i) as u32,
                    }));
            }
        }
        if !self.def.reference_fields.is_empty() {
            for row in start..start + n {
                self.index_row(row);
            }
        }
        self.structural += 1;
        start..start + n
    }

    /// Appends the tracking entries of a row whose column values were just pushed.
    fn push_tracking(&mut self, at: InstanceRef, tick: Tick) -> usize {
        let row = self.ids.len();
        let slot = at.slot.index();
        if self.sparse.len() <= slot {
            self.sparse.resize(slot + 1, ABSENT);
        }
        self.sparse[slot] = row as u32;
        self.ids.push(at.id);
        self.slots.push(at.slot);
        self.log_change(
            ChangeRecord {
                at,
                row: row as u32,
            },
            tick,
        );
        self.added.push(tick);
        self.changed.push(tick);
        self.dirty.resize(self.dirty.len() + self.dirty_words, 0);
        self.index_row(row);
        self.structural += 1;
        row
    }

    /// Gives a row just pushed for an instance that held `before` in `old` (the set under the
    /// previous definition) that row's tracking: its added tick, its changed tick and dirty
    /// fields where a field kept its value (`counterparts[f]` is new field `f`'s field in
    /// `old`), and a change at `tick` for every field that did not. The dirty list is left to
    /// [`ComponentSet::rebuild_dirty_rows`].
    pub(crate) fn carry_tracking(
        &mut self,
        row: usize,
        old: &ComponentSet,
        before: usize,
        counterparts: &[Option<FieldId>],
        tick: Tick,
    ) {
        self.added[row] = old.added[before];
        let old_mask = old.dirty_mask(before);
        let w = self.dirty_words;
        let mut changed = false;
        for (f, counterpart) in counterparts.iter().enumerate() {
            let same = counterpart
                .is_some_and(|g| self.columns[f].same_cell(row, &old.columns[g.index()], before));
            let dirty = if same {
                counterpart.is_some_and(|g| old_mask.contains(g))
            } else {
                changed = true;
                true
            };
            if dirty {
                self.dirty[row * w + f / 64] |= 1 << (f % 64);
            }
        }
        self.changed[row] = if changed { tick } else { old.changed[before] };
    }

    /// Rebuilds the dirty list from the dirty masks (after rows were given masks directly).
    pub(crate) fn rebuild_dirty_rows(&mut self) {
        compact_dirty_rows(
            &mut self.dirty_rows,
            &self.dirty,
            self.dirty_words,
            &self.ids,
            &self.slots,
        );
    }

    /// Swap-removes a row, logging the removal. Returns the instance that held it.
    pub(crate) fn swap_remove_row(&mut self, row: usize, tick: Tick) -> InstanceId {
        self.unindex_row(row);
        let id = self.ids[row];
        let slot = self.slots[row];
        let last = self.ids.len() - 1;
        for column in &mut self.columns {
            column.swap_remove(row);
        }
        self.ids.swap_remove(row);
        self.slots.swap_remove(row);
        self.added.swap_remove(row);
        self.changed.swap_remove(row);
        let w = self.dirty_words;
        if w > 0 {
            self.dirty.copy_within(last * w..(last + 1) * w, row * w);
            self.dirty.truncate(last * w);
        }
        // The moved row's position first, then the removed slot's absence: when the removed row
        // was the last, both writes hit the same entry and it must end absent.
        if row < self.slots.len() {
            self.sparse[self.slots[row].index()] = row as u32;
        }
        self.sparse[slot.index()] = ABSENT;
        self.removals.push(Removal { id, tick });
        self.structural += 1;
        if self.dirty_rows.len() > dirty_bound(self.ids.len()) {
            self.rebuild_dirty_rows();
        }
        id
    }

    /// Writes a conforming value, keeping the reverse index exact. Returns whether it changed.
    pub(crate) fn write(&mut self, row: usize, field: FieldId, value: Value, tick: Tick) -> bool {
        let references = self.def.reference_fields.contains(&field);
        if references {
            self.unindex_field(row, field);
        }
        let changed = self.columns[field.index()].replace(row, value);
        if references {
            self.index_field(row, field);
        }
        if changed {
            self.mark_changed(row, field, tick);
        }
        changed
    }

    /// Clears a direct reference field of a row that points at `target`, whose index entry the
    /// caller already removed. Returns whether it changed.
    pub(crate) fn clear_direct_reference(
        &mut self,
        row: usize,
        field: FieldId,
        target: InstanceId,
        tick: Tick,
    ) -> bool {
        let cleared = match self.columns.get_mut(field.index()) {
            Some(Column::Reference(values)) if values.get(row) == Some(&Some(target)) => {
                values[row] = None;
                true
            }
            _ => false,
        };
        if cleared {
            self.mark_changed(row, field, tick);
        }
        cleared
    }

    /// Whether a field of a row still references `target` (directly or nested).
    pub(crate) fn holds_reference(&self, row: usize, field: FieldId, target: InstanceId) -> bool {
        let mut found = false;
        if let Some(column) = self.columns.get(field.index()) {
            for_each_reference(column, row, |t| found |= t == target);
        }
        found
    }

    /// Stores a conforming value in a row being initialised: keeps the reverse index exact,
    /// takes no tick and marks nothing dirty.
    pub(crate) fn init_field(&mut self, row: usize, field: FieldId, value: Value) {
        let references = self.def.reference_fields.contains(&field);
        if references {
            self.unindex_field(row, field);
        }
        self.columns[field.index()].replace(row, value);
        if references {
            self.index_field(row, field);
        }
    }

    /// Records a change of one field of a row.
    pub(crate) fn mark_changed(&mut self, row: usize, field: FieldId, tick: Tick) {
        self.track().mark(row, field, tick);
    }

    /// The change-tracking arrays, borrowed apart from the columns.
    pub(crate) fn track(&mut self) -> Track<'_> {
        Track {
            changed: &mut self.changed,
            dirty: &mut self.dirty,
            dirty_words: self.dirty_words,
            dirty_rows: &mut self.dirty_rows,
            ids: &self.ids,
            slots: &self.slots,
            change_log: &mut self.change_log,
            log_base: &mut self.log_base,
        }
    }

    /// One typed column for writing, optionally another column of the same set for reading,
    /// and the change-tracking arrays: all borrowed apart, so a loop can write one field while
    /// reading another without going back through the set.
    pub(crate) fn split_write<T: Scalar>(
        &mut self,
        field: FieldId,
        read: Option<FieldId>,
    ) -> Option<(&mut [T], Option<&Column>, Track<'_>)> {
        let track = Track {
            changed: &mut self.changed,
            dirty: &mut self.dirty,
            dirty_words: self.dirty_words,
            dirty_rows: &mut self.dirty_rows,
            ids: &self.ids,
            slots: &self.slots,
            change_log: &mut self.change_log,
            log_base: &mut self.log_base,
        };
        match read {
            Some(read) if read != field => {
                let [w, r] = self
                    .columns
                    .get_disjoint_mut([field.index(), read.index()])
                    .ok()?;
                Some((T::slice_mut(w)?, Some(&*r), track))
            }
            _ => Some((
                T::slice_mut(self.columns.get_mut(field.index())?)?,
                None,
                track,
            )),
        }
    }

    /// Logs a row whose changed tick just rose above the log base (see [`Track::log`]).
    pub(crate) fn log_change(&mut self, record: ChangeRecord, tick: Tick) {
        self.track().log(record, tick);
    }

    /// Forgets the change log: every row counts as changed at or before `tick`.
    pub(crate) fn reset_change_log(&mut self, tick: Tick) {
        self.change_log.clear();
        self.log_base = self.log_base.max(tick);
    }

    /// The rows whose changed tick may exceed `baseline`, when the change log covers it:
    /// every row changed after `baseline` is in the list (which may also hold rows changed
    /// earlier, and instances no longer holding the component; resolve and re-check ticks).
    /// `None` when the log was reset after `baseline`: scan instead.
    pub fn changes_since(&self, baseline: Tick) -> Option<&[ChangeRecord]> {
        (baseline >= self.log_base).then_some(self.change_log.as_slice())
    }

    /// Typed mutable column access for the store's typed writer.
    pub(crate) fn typed_mut<T: Scalar>(&mut self, field: FieldId) -> Option<&mut [T]> {
        T::slice_mut(self.columns.get_mut(field.index())?)
    }

    pub(crate) fn index_row(&mut self, row: usize) {
        for i in 0..self.def.reference_fields.len() {
            let field = self.def.reference_fields[i];
            self.index_field(row, field);
        }
    }

    pub(crate) fn unindex_row(&mut self, row: usize) {
        for i in 0..self.def.reference_fields.len() {
            let field = self.def.reference_fields[i];
            self.unindex_field(row, field);
        }
    }

    pub(crate) fn index_row_field(&mut self, row: usize, field: FieldId) {
        self.index_field(row, field);
    }

    pub(crate) fn unindex_row_field(&mut self, row: usize, field: FieldId) {
        self.unindex_field(row, field);
    }

    fn index_field(&mut self, row: usize, field: FieldId) {
        let entry = RefEntry {
            holder: self.ids[row],
            holder_slot: self.slots[row],
            field,
        };
        let refs = &mut self.refs;
        for_each_reference(&self.columns[field.index()], row, |target| {
            refs.insert(target, entry);
        });
    }

    fn unindex_field(&mut self, row: usize, field: FieldId) {
        let entry = RefEntry {
            holder: self.ids[row],
            holder_slot: self.slots[row],
            field,
        };
        let refs = &mut self.refs;
        for_each_reference(&self.columns[field.index()], row, |target| {
            refs.remove(target, entry);
        });
    }

    /// Rebuilds the sparse array and reverse index from the dense arrays.
    pub(crate) fn rebuild_indexes(&mut self) {
        self.refs.clear();
        for row in 0..self.ids.len() {
            let slot = self.slots[row].index();
            if self.sparse.len() <= slot {
                self.sparse.resize(slot + 1, ABSENT);
            }
            self.sparse[slot] = row as u32;
            self.index_row(row);
        }
    }
}

/// The change-tracking arrays of a set, borrowed apart from its columns.
pub(crate) struct Track<'a> {
    pub(crate) changed: &'a mut [Tick],
    pub(crate) dirty: &'a mut [u64],
    pub(crate) dirty_words: usize,
    pub(crate) dirty_rows: &'a mut Vec<InstanceRef>,
    pub(crate) ids: &'a [InstanceId],
    pub(crate) slots: &'a [Slot],
    pub(crate) change_log: &'a mut Vec<ChangeRecord>,
    pub(crate) log_base: &'a mut Tick,
}

impl Track<'_> {
    /// The instance at a row.
    #[inline(always)]
    pub(crate) fn id(&self, row: usize) -> InstanceId {
        self.ids[row]
    }

    /// The instance of each row.
    pub(crate) fn ids(&self) -> &[InstanceId] {
        self.ids
    }

    /// Records a change of one field of a row: changed tick, change log, dirty mask.
    #[inline(always)]
    pub(crate) fn mark(&mut self, row: usize, field: FieldId, tick: Tick) {
        let previous = std::mem::replace(&mut self.changed[row], tick);
        if previous <= *self.log_base && tick > *self.log_base {
            let at = InstanceRef::new(self.ids[row], self.slots[row]);
            self.log(
                ChangeRecord {
                    at,
                    row: row as u32,
                },
                tick,
            );
        }
        let (word, bit) = (field.index() / 64, 1u64 << (field.index() % 64));
        if self.dirty_words == 1 {
            if self.dirty[row] == 0 {
                self.note_dirty(row);
            }
            self.dirty[row] |= bit;
            return;
        }
        let w = self.dirty_words;
        if self.dirty[row * w..(row + 1) * w].iter().all(|x| *x == 0) {
            self.note_dirty(row);
        }
        self.dirty[row * w + word] |= bit;
    }

    /// Lists a row whose dirty mask is about to go from empty to non-empty, compacting the
    /// list first when it is full.
    #[inline(always)]
    fn note_dirty(&mut self, row: usize) {
        self.reserve_dirty(1);
        self.dirty_rows
            .push(InstanceRef::new(self.ids[row], self.slots[row]));
    }

    /// Makes room in the dirty list for up to `rows` more rows (one entry each), so a loop can
    /// push them without checking: compacts the list when they might not fit under its bound.
    #[inline(always)]
    pub(crate) fn reserve_dirty(&mut self, rows: usize) {
        if self.dirty_rows.len() + rows > dirty_bound(self.ids.len()) {
            compact_dirty_rows(
                self.dirty_rows,
                self.dirty,
                self.dirty_words,
                self.ids,
                self.slots,
            );
        }
    }

    /// Logs a row whose changed tick just rose above the log base. When the log would outgrow a
    /// quarter of the set, it is dropped instead and the base moves to `tick`: readers whose
    /// baseline predates it scan, which then costs no more than reading the log would.
    #[cold]
    pub(crate) fn log(&mut self, record: ChangeRecord, tick: Tick) {
        if tick > *self.log_base {
            Self::log_into(self.change_log, self.log_base, self.ids.len(), record, tick);
        }
    }

    /// Prepares for a pass that may change up to `rows` rows at `tick`: when they could not all
    /// fit in the change log, drops the log now (moving its base to `tick`) rather than filling
    /// it row by row and dropping it part-way.
    pub(crate) fn prepare_bulk(&mut self, rows: usize, tick: Tick) {
        if tick > *self.log_base && self.change_log.len() + rows > (self.ids.len() / 4).max(64) {
            self.change_log.clear();
            *self.log_base = tick;
        }
    }

    /// The body of [`Track::log`] over the two fields it touches, for loops that hold the
    /// other tracking arrays borrowed.
    #[cold]
    pub(crate) fn log_into(
        log: &mut Vec<ChangeRecord>,
        base: &mut Tick,
        rows: usize,
        record: ChangeRecord,
        tick: Tick,
    ) {
        if log.len() >= (rows / 4).max(64) {
            log.clear();
            *base = tick;
        } else {
            log.push(record);
        }
    }
}

/// The most entries a set's dirty list holds (see [`compact_dirty_rows`]).
#[inline(always)]
pub(crate) const fn dirty_bound(rows: usize) -> usize {
    2 * rows + 64
}

/// Rebuilds a dirty list from the rows whose dirty mask is not empty, in row order. Entries of
/// rows removed since they were listed pile up otherwise (removal does not search the list), so
/// the list is compacted whenever it reaches [`dirty_bound`]; afterwards it holds at most one
/// entry per row.
#[cold]
pub(crate) fn compact_dirty_rows(
    list: &mut Vec<InstanceRef>,
    dirty: &[u64],
    dirty_words: usize,
    ids: &[InstanceId],
    slots: &[Slot],
) {
    list.clear();
    if dirty_words == 0 {
        return;
    }
    for (row, mask) in dirty.chunks_exact(dirty_words).enumerate() {
        if mask.iter().any(|w| *w != 0) {
            list.push(InstanceRef::new(ids[row], slots[row]));
        }
    }
}

/// Visits the references one field of one row holds.
fn for_each_reference(column: &Column, row: usize, mut f: impl FnMut(InstanceId)) {
    match column {
        Column::Reference(values) => {
            if let Some(target) = values[row] {
                f(target);
            }
        }
        Column::List(values) => {
            for element in values[row].as_slice() {
                element.for_each_reference(&mut f);
            }
        }
        Column::Value(values) => values[row].for_each_reference(&mut f),
        _ => {}
    }
}
