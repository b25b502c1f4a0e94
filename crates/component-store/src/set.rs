//! `ComponentSet`: the rows of one component.
//!
//! Invariant: `sparse[slot] == row` iff `slots[row] == slot`, and then `ids[row]` is the instance
//! holding that slot; every other sparse entry is `ABSENT`. `ids`, `slots`, every column, and
//! the change tracking (`track`, whose own invariant `track.rs` states) have one entry per row.
//! Removing a row swaps the last row into its place in every array and repairs the moved
//! instance's sparse entry, writing the moved position before marking the removed slot absent,
//! so removing the last row (which moves onto itself) leaves its slot absent. A row is a
//! position valid until the next removal, never an identity. `refs` lists, for every target,
//! one entry per reference to it held in this set's rows. The removal log's `timeline` is
//! unique to this copy of the set once it diverges from another copy (see
//! `SharedSet::make_mut`), so a reader's cursor is never read against a log that does not
//! continue the records the reader saw. Every field is private to this module: other modules
//! read through accessors and change rows through the methods here, which keep all of the
//! above.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use strata_arena::{BoundedJournal, ClassId, InstanceId, Slot, Snapshot};

use crate::changes::Changes;
use crate::column::{Column, Scalar, with_room};
use crate::def::{ComponentId, FieldId, InstalledDef};
use crate::dirty::FieldMask;
use crate::error::StoreError;
use crate::refs::RefIndex;
use crate::track::{Ticks, TrackMut, Tracking};
use crate::value::{ListValue, Value};

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
    ///
    /// # Errors
    ///
    /// [`StoreError::UnknownInstance`] when the arena has no slot for it.
    pub fn of(arena: &Snapshot, id: InstanceId) -> Result<Self, StoreError> {
        let slot = arena.slot_of(id).ok_or(StoreError::UnknownInstance(id))?;
        let bound = u32::try_from(arena.slot_capacity().max(slot.index() + 1)).unwrap_or(u32::MAX);
        Ok(Self { id, slot, bound })
    }

    /// The live instance `id` of `arena`, checked as [`InstanceRef::of`] checks it, with its
    /// class; `None` when it is not live. One look at the arena.
    pub fn of_live(arena: &Snapshot, id: InstanceId) -> Option<(Self, ClassId)> {
        let (slot, class) = arena.live_slot_class(id)?;
        let bound = u32::try_from(arena.slot_capacity().max(slot.index() + 1)).unwrap_or(u32::MAX);
        Some((Self { id, slot, bound }, class))
    }

    /// Whether the slot is below what [`InstanceRef::check_slot`] accepts without asking the
    /// store's extent: the arena's slot count the reference carries, [`UNCHECKED_SLOT_LIMIT`],
    /// or twice the larger of `sparse_len` and `rows_after`.
    #[inline]
    pub(crate) fn slot_near(&self, sparse_len: usize, rows_after: usize) -> bool {
        let slot = self.slot.index();
        slot < UNCHECKED_SLOT_LIMIT
            || slot < self.bound as usize
            || slot < sparse_len.max(rows_after).saturating_mul(2)
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
        if self.slot_near(sparse_len, rows_after) {
            return Ok(());
        }
        let slot = self.slot.index();
        let near = (self.bound as usize)
            .max(UNCHECKED_SLOT_LIMIT)
            .max(sparse_len.max(rows_after).saturating_mul(2));
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

/// The rows of one component: sparse slot → row, dense ids and slots, one column per field,
/// per-row change tracking, a removal log and a reverse reference index.
#[derive(Debug)]
pub struct ComponentSet {
    def: Arc<InstalledDef>,
    sparse: Vec<u32>,
    ids: Vec<InstanceId>,
    slots: Vec<Slot>,
    columns: Vec<Column>,
    track: Tracking,
    structural: u64,
    removals: BoundedJournal<Removal>,
    timeline: Timeline,
    refs: RefIndex,
}

impl ComponentSet {
    /// A copy for a holder about to write it (copy-on-write): the per-row arrays have room for
    /// an eighth more rows, so rows added soon after the copy do not move it again.
    pub(crate) fn clone_for_write(&self) -> ComponentSet {
        self.clone_with_room(self.len() / 8 + 16)
    }

    /// A copy whose per-row arrays have room for `extra` more rows.
    fn clone_with_room(&self, extra: usize) -> ComponentSet {
        Self {
            def: Arc::clone(&self.def),
            sparse: self.sparse.clone(),
            ids: with_room(&self.ids, extra),
            slots: with_room(&self.slots, extra),
            columns: self
                .columns
                .iter()
                .map(|c| c.clone_with_room(extra))
                .collect(),
            track: self.track.clone_with_room(extra),
            structural: self.structural,
            removals: self.removals.clone(),
            timeline: self.timeline.clone(),
            refs: self.refs.clone(),
        }
    }
}

impl Clone for ComponentSet {
    fn clone(&self) -> Self {
        self.clone_with_room(0)
    }

    /// Copies `source` into this set's buffers, growing none that already hold enough: a
    /// copy-on-write copy made into the spare a restore kept (see `SharedSet`).
    fn clone_from(&mut self, source: &Self) {
        self.def = Arc::clone(&source.def);
        self.sparse.clone_from(&source.sparse);
        self.ids.clone_from(&source.ids);
        self.slots.clone_from(&source.slots);
        self.columns.clone_from(&source.columns);
        self.track.clone_from(&source.track);
        self.structural = source.structural;
        self.removals.clone_from(&source.removals);
        self.timeline.clone_from(&source.timeline);
        self.refs.clone_from(&source.refs);
    }
}

/// The rows a snapshot slot saved, for [`ComponentSet::restore`].
pub(crate) struct SavedRows<'a> {
    pub(crate) ids: &'a [InstanceId],
    pub(crate) slots: &'a [Slot],
    pub(crate) added: &'a [Tick],
    pub(crate) columns: &'a [Column],
}

/// Buffers a load reuses from one load to the next: each restored row's predecessor, and
/// tracking arrays to build the restored rows' tracking in beside the set's.
#[derive(Debug)]
pub(crate) struct LoadScratch {
    before: Vec<u32>,
    tracking: Tracking,
}

impl Default for LoadScratch {
    fn default() -> Self {
        Self {
            before: Vec::new(),
            tracking: Tracking::new(0),
        }
    }
}

/// The high bit of a sparse entry, during a load: "held before this load, at the row in the
/// low bits". Rows stay below it (a set never holds 2^31 rows: its sparse entries are `u32`).
const MARKED: u32 = 1 << 31;

/// A restored row with no predecessor.
const NO_ROW: u32 = u32::MAX;

impl ComponentSet {
    pub(crate) fn new(def: Arc<InstalledDef>) -> Self {
        let columns = def
            .fields()
            .iter()
            .map(|f| Column::for_type(&f.ty))
            .collect();
        let track = Tracking::new(def.fields().len());
        Self {
            def,
            sparse: Vec::new(),
            ids: Vec::new(),
            slots: Vec::new(),
            columns,
            track,
            structural: 0,
            removals: BoundedJournal::new(REMOVAL_LOG_CAPACITY),
            timeline: Timeline::fresh(),
            refs: RefIndex::default(),
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

    /// The installed definition, shared.
    pub(crate) fn def_arc(&self) -> &Arc<InstalledDef> {
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
    #[inline]
    pub fn row_of(&self, at: InstanceRef) -> Option<usize> {
        let row = *self.sparse.get(at.slot.index())? as usize;
        (self.ids.get(row) == Some(&at.id)).then_some(row)
    }

    /// Whether an instance holds the component.
    #[inline]
    pub fn contains(&self, at: InstanceRef) -> bool {
        self.row_of(at).is_some()
    }

    /// The instance holding a row at `slot`, if any (whatever instance a caller pairs with the
    /// slot).
    #[inline]
    pub fn holder_at(&self, slot: Slot) -> Option<InstanceId> {
        let row = *self.sparse.get(slot.index())?;
        self.ids.get(row as usize).copied()
    }

    /// How many slots the sparse array covers.
    pub(crate) fn sparse_len(&self) -> usize {
        self.sparse.len()
    }

    /// The instances holding the component, by row.
    pub fn ids(&self) -> &[InstanceId] {
        &self.ids
    }

    /// Their slots, by row.
    pub fn slots(&self) -> &[Slot] {
        &self.slots
    }

    /// The instance at a row, as the store addresses it.
    pub(crate) fn at(&self, row: usize) -> InstanceRef {
        InstanceRef::new(self.ids[row], self.slots[row])
    }

    /// The tick each row was added at.
    pub fn added_ticks(&self) -> Ticks<'_> {
        self.track.added()
    }

    /// The tick each row last changed at (its add counts as a change).
    pub fn changed_ticks(&self) -> Ticks<'_> {
        self.track.changed()
    }

    /// The set's structural revision: advances on every add, remove and replacement of rows.
    pub fn structural_revision(&self) -> u64 {
        self.structural
    }

    /// A field's column (raw access for tight loops).
    pub fn column(&self, field: FieldId) -> Option<&Column> {
        self.columns.get(field.index())
    }

    /// Every field's column, in field order.
    pub(crate) fn columns(&self) -> &[Column] {
        &self.columns
    }

    /// A field's values as a typed slice, indexed by row.
    #[inline]
    pub fn values<T: Scalar>(&self, field: FieldId) -> Option<&[T]> {
        T::slice(self.column(field)?)
    }

    /// A field's values as a typed slice, or why not: [`StoreError::FieldOutOfRange`], or
    /// [`StoreError::TypeMismatch`] when the field's column does not hold `T`
    /// (see [`InstalledDef::check_scalar`]).
    ///
    /// # Errors
    ///
    /// [`StoreError::FieldOutOfRange`], or [`StoreError::TypeMismatch`] when the field's column
    /// does not hold `T`.
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
        self.track.dirty_mask(row)
    }

    /// How many rows the next [`Store::take_dirty`] will report: each row with a field changed
    /// since the last take.
    ///
    /// [`Store::take_dirty`]: crate::Store::take_dirty
    pub fn pending_dirty(&self) -> usize {
        self.track.dirty_rows()
    }

    /// How many entries the change log holds (at most a quarter of the rows, or 64).
    pub fn logged_changes(&self) -> usize {
        self.track.logged()
    }

    /// The removal log.
    pub fn removal_log(&self) -> &BoundedJournal<Removal> {
        &self.removals
    }

    /// The history the removal log records.
    pub(crate) fn timeline(&self) -> &Timeline {
        &self.timeline
    }

    /// Takes this set onto a timeline of its own, leaving the current one at the log's head:
    /// done to every copy that stops sharing its history with the set it was copied from.
    pub(crate) fn fork_timeline(&mut self) {
        self.timeline = self.timeline.fork(self.removals.head());
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

    /// Whether any row of this set references `target`.
    #[inline]
    pub(crate) fn references(&self, target: InstanceId) -> bool {
        !self.refs.is_empty() && self.refs.contains(target)
    }

    /// Takes every reference to `target` out of the reverse index, sorted by holder and field,
    /// for the destruction policies to act on (see [`ComponentSet::keep_references`]).
    pub(crate) fn take_references(&mut self, target: InstanceId) -> Vec<RefEntry> {
        self.refs.take(target)
    }

    /// Puts back into the reverse index, after destruction policies took `target`'s entries
    /// out and acted on them, the entries of holders whose field still references `target`.
    pub(crate) fn keep_references(&mut self, target: InstanceId, entries: &[RefEntry]) {
        for entry in entries {
            let holder = InstanceRef::new(entry.holder, entry.holder_slot);
            let still = self
                .row_of(holder)
                .is_some_and(|row| self.holds_reference(row, entry.field, target));
            if still {
                self.refs.insert(target, *entry);
            }
        }
    }

    /// The rows whose changed or added tick may be after `baseline`, when the change log covers
    /// it: every such row is among them (with rows that are not, to re-check, and repeats).
    /// `None` when the log was reset or trimmed after `baseline`: scan instead. The cost of
    /// reading them follows the changes after `baseline`, however long ago others were logged.
    pub fn changes_since(&self, baseline: Tick) -> Option<Changes<'_>> {
        let (logged, added_from) = self.track.since(baseline)?;
        Some(Changes::new(self, logged, added_from))
    }

    // ----- Structural edits (called by the store, which keeps ticks and events). -----

    /// Appends a row of validated values for an instance whose slot holds no row.
    pub(crate) fn push_row(&mut self, at: InstanceRef, values: Vec<Value>, tick: Tick) -> usize {
        for (column, value) in self.columns.iter_mut().zip(values) {
            column.push(value);
        }
        self.push_identity(at, tick)
    }

    /// Appends a row of default values for an instance whose slot holds no row.
    #[inline]
    pub(crate) fn push_default_row(&mut self, at: InstanceRef, tick: Tick) -> usize {
        for (column, default) in self.columns.iter_mut().zip(&self.def.defaults) {
            column.push_from(default, 0);
        }
        self.push_identity(at, tick)
    }

    /// Appends the identity and tracking of a row whose column values were just pushed, and
    /// indexes its references.
    #[inline]
    fn push_identity(&mut self, at: InstanceRef, tick: Tick) -> usize {
        let row = self.ids.len();
        let slot = at.slot.index();
        let len = self.sparse.len();
        if slot < len {
            self.sparse[slot] = row as u32;
        } else if slot == len {
            // A world filled in slot order takes the next slot: one push.
            self.sparse.push(row as u32);
        } else {
            self.grow_sparse(slot + 1);
            self.sparse[slot] = row as u32;
        }
        self.ids.push(at.id);
        self.slots.push(at.slot);
        self.track.push_row(tick);
        if !self.def.reference_fields.is_empty() {
            self.index_row(row);
        }
        self.structural += 1;
        row
    }

    /// Stores checked values into row `row`, just pushed with defaults, before anything reads
    /// it; a field given twice keeps its last value. Only for definitions without reference
    /// fields: the reverse index is untouched.
    pub(crate) fn fill_new_row(
        &mut self,
        row: usize,
        values: impl Iterator<Item = (FieldId, Value)>,
    ) {
        debug_assert!(self.def.reference_fields.is_empty());
        for (field, value) in values {
            if let Some(column) = self.columns.get_mut(field.index()) {
                column.replace(row, value);
            }
        }
    }

    /// Stores values a definition's factories made (see `InstalledDef::make_defaults`) into
    /// the new rows from `start`, before anything reads them. Factory fields hold no
    /// references, so the reverse index is untouched.
    pub(crate) fn store_made(&mut self, start: usize, made: Vec<(FieldId, Vec<Value>)>) {
        for (field, values) in made {
            let column = &mut self.columns[field.index()];
            for (k, value) in values.into_iter().enumerate() {
                column.replace(start + k, value);
            }
        }
    }

    /// Makes the sparse array cover `len` slots.
    #[cold]
    fn grow_sparse(&mut self, len: usize) {
        self.sparse.resize(len, ABSENT);
    }

    /// Appends default rows for many instances whose slots hold no row (checked by the
    /// caller), all at one tick. Returns the new rows.
    pub(crate) fn push_default_rows(
        &mut self,
        ats: &[InstanceRef],
        tick: Tick,
    ) -> std::ops::Range<usize> {
        let def = self.def.clone();
        self.push_rows_from(&def.defaults, ats, tick)
    }

    /// Appends rows for many instances whose slots hold no row (checked by the caller), all
    /// at one tick, every field a copy of `template`'s row 0 (one one-row column per field, of
    /// this set's kinds, values checked): each column extended once. Returns the new rows.
    pub(crate) fn push_rows_from(
        &mut self,
        template: &[Column],
        ats: &[InstanceRef],
        tick: Tick,
    ) -> std::ops::Range<usize> {
        let start = self.ids.len();
        let n = ats.len();
        for (column, default) in self.columns.iter_mut().zip(template) {
            column.extend_from(default, 0, n);
        }
        if let Some(max) = ats.iter().map(|at| at.slot.index()).max()
            && self.sparse.len() <= max
        {
            self.grow_sparse(max + 1);
        }
        for (i, at) in ats.iter().enumerate() {
            self.sparse[at.slot.index()] = (start + i) as u32;
        }
        self.ids.extend(ats.iter().map(|at| at.id));
        self.slots.extend(ats.iter().map(|at| at.slot));
        self.track.push_rows(n, tick);
        if !self.def.reference_fields.is_empty() {
            for row in start..start + n {
                self.index_row(row);
            }
        }
        self.structural += 1;
        start..start + n
    }

    /// Takes back rows `len..` appended since the set had `len` rows, which were never
    /// published (a staged spawn that failed): their slots become absent and their references
    /// leave the index. Nothing is logged: as far as any reader knows, the rows never were.
    pub(crate) fn truncate_unpublished(&mut self, len: usize) {
        if len >= self.ids.len() {
            return;
        }
        for row in len..self.ids.len() {
            if !self.def.reference_fields.is_empty() {
                self.unindex_row(row);
            }
            self.sparse[self.slots[row].index()] = ABSENT;
        }
        for column in &mut self.columns {
            column.truncate(len);
        }
        self.ids.truncate(len);
        self.slots.truncate(len);
        self.track.truncate(len);
        self.structural += 1;
    }

    /// Moves the rows in `rows` (rows of this set, repeats allowed) to the end of the set at
    /// `tick`, each kept row that must make room swapped into a removed row's place, in every
    /// column, and reported to `moved` (its instance, old row, new row). Returns the length
    /// the set will have once [`ComponentSet::truncate_removed`] drops them: the removed rows'
    /// values stay readable at the end until then. The caller calls that next, with no other
    /// change between.
    pub(crate) fn gather_to_tail(
        &mut self,
        rows: &[usize],
        tick: Tick,
        mut moved: impl FnMut(InstanceId, usize, usize),
    ) -> usize {
        let n = self.ids.len();
        let mut marked = vec![0u64; n.div_ceil(64)];
        let mut count = 0;
        for &row in rows {
            let (word, bit) = (row / 64, 1u64 << (row % 64));
            if marked[word] & bit == 0 {
                marked[word] |= bit;
                count += 1;
            }
        }
        let new_len = n - count;
        if count == n || count == 0 {
            return new_len;
        }
        let is_marked = |row: usize| marked[row / 64] & (1 << (row % 64)) != 0;
        // Holes: removed rows before the new end; keepers: kept rows after it. There are as
        // many of each.
        let mut keeper = new_len;
        for hole in 0..new_len {
            if !is_marked(hole) {
                continue;
            }
            while is_marked(keeper) {
                keeper += 1;
            }
            for column in &mut self.columns {
                column.swap_rows(hole, keeper);
            }
            self.ids.swap(hole, keeper);
            self.slots.swap(hole, keeper);
            self.sparse[self.slots[hole].index()] = hole as u32;
            self.sparse[self.slots[keeper].index()] = keeper as u32;
            self.track.move_row(keeper, hole, tick);
            moved(self.ids[hole], keeper, hole);
            keeper += 1;
        }
        new_len
    }

    /// Drops rows `len..` at `tick` after [`ComponentSet::gather_to_tail`]: a removal record
    /// each, their slots absent, their references out of the index, every column truncated
    /// once.
    pub(crate) fn truncate_removed(&mut self, len: usize, tick: Tick) {
        let n = self.ids.len();
        if len >= n {
            return;
        }
        let references = !self.def.reference_fields.is_empty();
        for row in len..n {
            if references {
                self.unindex_row(row);
            }
            self.sparse[self.slots[row].index()] = ABSENT;
        }
        // One append: a batch larger than the log writes only the records it keeps.
        self.removals
            .extend(self.ids[len..n].iter().map(|&id| Removal { id, tick }));
        for column in &mut self.columns {
            column.truncate(len);
        }
        self.ids.truncate(len);
        self.slots.truncate(len);
        self.track.truncate(len);
        self.structural += 1;
    }

    /// Stores `template`'s row 0 (a one-row column of this field's kind, value checked) in
    /// field `field` of each row of `rows` where it differs bit for bit, keeping the reverse
    /// index exact and recording each change at `tick`; `changed` hears of each changed row.
    pub(crate) fn assign_rows(
        &mut self,
        rows: &[usize],
        field: FieldId,
        template: &Column,
        tick: Tick,
        mut changed: impl FnMut(usize),
    ) {
        let references = self.def.reference_fields.contains(&field);
        for &row in rows {
            if self.columns[field.index()].same_cell(row, template, 0) {
                continue;
            }
            if references {
                self.unindex_field(row, field);
            }
            self.columns[field.index()].assign_from(row, template, 0);
            if references {
                self.index_field(row, field);
            }
            self.mark_changed(row, field, tick);
            changed(row);
        }
    }

    /// A field's values as a mutable typed slice over `rows`, for filling rows being
    /// initialised (no tick, nothing marked): `None` when the column does not hold `T`.
    pub(crate) fn init_slice<T: Scalar>(
        &mut self,
        field: FieldId,
        rows: std::ops::Range<usize>,
    ) -> Option<&mut [T]> {
        T::slice_mut(self.columns.get_mut(field.index())?)?.get_mut(rows)
    }

    /// Swap-removes a row at `tick`, logging the removal. Returns the instance that held it.
    pub(crate) fn swap_remove_row(&mut self, row: usize, tick: Tick) -> InstanceId {
        if !self.def.reference_fields.is_empty() {
            self.unindex_row(row);
        }
        let id = self.ids[row];
        let slot = self.slots[row];
        self.track.swap_remove(row, tick);
        for column in &mut self.columns {
            column.swap_remove(row);
        }
        self.ids.swap_remove(row);
        self.slots.swap_remove(row);
        // The moved row's position first, then the removed slot's absence: when the removed row
        // was the last, both writes hit the same entry and it must end absent.
        if let Some(moved) = self.slots.get(row) {
            self.sparse[moved.index()] = row as u32;
        }
        self.sparse[slot.index()] = ABSENT;
        self.removals.push(Removal { id, tick });
        self.structural += 1;
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

    /// Stores a typed value that differs from the one at `row` in a field holding no
    /// references, and records the change at `tick`.
    #[inline]
    pub(crate) fn write_typed<T: Scalar>(
        &mut self,
        row: usize,
        field: FieldId,
        value: T,
        tick: Tick,
    ) {
        debug_assert!(!self.def.reference_fields.contains(&field));
        if let Some(values) = self.columns.get_mut(field.index()).and_then(T::slice_mut) {
            values[row] = value;
            self.mark_changed(row, field, tick);
        }
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

    /// Applies the `Clear` policy of direct reference fields to `entries` (the references to
    /// `target`, just taken out of the index, sorted by holder): for each holder all of whose
    /// entries are such clears, each field, if the holder is still present, becomes `None` at
    /// a tick of its own (`tick` advances once per clear), and `cleared` hears of it. Returns
    /// the other entries (holders with another policy or a nested reference), in order, for the
    /// caller to act on in that order and keep.
    pub(crate) fn clear_direct_references(
        &mut self,
        target: InstanceId,
        mut entries: Vec<RefEntry>,
        tick: &mut Tick,
        mut cleared: impl FnMut(&RefEntry),
    ) -> Vec<RefEntry> {
        // Borrowed apart: the loop reads the definition and the rows' identities while it
        // writes the reference columns and the tracking.
        let Self {
            def,
            sparse,
            ids,
            columns,
            track,
            ..
        } = self;
        let direct = |entry: &RefEntry| {
            def.direct_clears
                .get(entry.field.index())
                .copied()
                .unwrap_or(false)
        };
        let mut track = track.borrow(ids);
        let n = entries.len();
        let mut kept = 0;
        let mut start = 0;
        while start < n {
            let first = entries[start];
            let mut only_clears = direct(&first);
            let mut end = start + 1;
            while end < n && entries[end].holder == first.holder {
                only_clears &= direct(&entries[end]);
                end += 1;
            }
            if !only_clears {
                for i in start..end {
                    entries.swap(kept, i);
                    kept += 1;
                }
                start = end;
                continue;
            }
            // A holder gone since took its references with it; a direct field holds one
            // reference, so once cleared (or found cleared) none to `target` is left there.
            let row = sparse
                .get(first.holder_slot.index())
                .map(|&row| row as usize)
                .filter(|&row| ids.get(row) == Some(&first.holder));
            if let Some(row) = row {
                for entry in &entries[start..end] {
                    let Some(Column::Reference(values)) = columns.get_mut(entry.field.index())
                    else {
                        continue;
                    };
                    if values.get(row) == Some(&Some(target)) {
                        values[row] = None;
                        let next = Tick(tick.0 + 1);
                        track.mark(row, entry.field, next);
                        *tick = next;
                        cleared(entry);
                    }
                }
            }
            start = end;
        }
        entries.truncate(kept);
        entries
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

    /// Stores checked typed values in rows being initialised (`rows`, in order, as far as
    /// `values` goes): keeps the reverse index exact, takes no tick and marks nothing dirty.
    pub(crate) fn init_typed<T: Scalar>(
        &mut self,
        rows: std::ops::Range<usize>,
        field: FieldId,
        values: impl IntoIterator<Item = T>,
    ) {
        // Of the columns a typed value fits, only a reference column holds references.
        match self.columns.get_mut(field.index()) {
            Some(Column::Reference(_)) => {
                for (row, value) in rows.zip(values) {
                    self.init_field(row, field, value.into_value());
                }
            }
            Some(column) => {
                if let Some(column) = T::slice_mut(column) {
                    for (slot, value) in column[rows].iter_mut().zip(values) {
                        *slot = value;
                    }
                }
            }
            None => {}
        }
    }

    /// Records a change of one field of a row.
    #[inline]
    pub(crate) fn mark_changed(&mut self, row: usize, field: FieldId, tick: Tick) {
        self.track.borrow(&self.ids).mark(row, field, tick);
    }

    /// One typed column for writing, optionally another column of the same set for reading,
    /// and the change tracking: all borrowed apart, so a loop can write one field while
    /// reading another without going back through the set.
    pub(crate) fn split_write<T: Scalar>(
        &mut self,
        field: FieldId,
        read: Option<FieldId>,
    ) -> Option<(&mut [T], Option<&Column>, TrackMut<'_>)> {
        let track = self.track.borrow(&self.ids);
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

    /// Every row with a dirty field, in row order, with its dirty fields; cleans them all.
    pub(crate) fn take_dirty(&mut self) -> Vec<(InstanceId, FieldMask)> {
        let ids = &self.ids;
        self.track
            .take_dirty()
            .into_iter()
            .map(|(row, mask)| (ids[row], mask))
            .collect()
    }

    /// Applies `edit` to a list field's buffer, keeping the reverse index exact; returns
    /// whether the list changed (and then marks the row changed at `tick`).
    pub(crate) fn edit_list(
        &mut self,
        row: usize,
        field: FieldId,
        tick: Tick,
        edit: impl FnOnce(&mut ListValue) -> bool,
    ) -> bool {
        let references = self.def.reference_fields.contains(&field);
        if references {
            self.unindex_field(row, field);
        }
        let changed = match &mut self.columns[field.index()] {
            Column::List(lists) => {
                let list = &mut lists[row];
                let changed = edit(list);
                list.normalise();
                changed
            }
            _ => false,
        };
        if references {
            self.index_field(row, field);
        }
        if changed {
            self.mark_changed(row, field, tick);
        }
        changed
    }

    // ----- Whole-set replacements. -----

    /// The set of a redefinition: `def`'s rows are `rows` (values checked against it, slots
    /// distinct and free of other instances' rows in `old`), replacing `old`, all at `tick`.
    /// A row of an instance that held one in `old` keeps that row's added tick, and its changed
    /// tick and dirty fields where a field kept its value (`counterparts[f]` is new field `f`'s
    /// field in `old`); every other field of it counts as changed now. The removal log goes on
    /// from `old`'s (each instance that held a row and holds none now logged at `tick`), on a
    /// timeline of its own. Returns the set, the instances that lost their row, and those
    /// that gained one.
    pub(crate) fn redefined(
        def: Arc<InstalledDef>,
        old: &ComponentSet,
        rows: Vec<(InstanceRef, Vec<Value>)>,
        counterparts: &[Option<FieldId>],
        tick: Tick,
    ) -> (ComponentSet, Vec<InstanceRef>, Vec<InstanceId>) {
        let mut set = ComponentSet::new(def);
        set.removals = old.removals.clone();
        set.timeline = old.timeline.fork(old.removals.head());
        let kept: hashbrown::HashSet<InstanceRef> = rows.iter().map(|(at, _)| *at).collect();
        let lost: Vec<InstanceRef> = (0..old.len())
            .map(|row| old.at(row))
            .filter(|at| !kept.contains(at))
            .collect();
        for at in &lost {
            set.removals.push(Removal { id: at.id, tick });
        }
        let mut added = Vec::new();
        for (at, values) in rows {
            let row = set.push_row(at, values, tick);
            let Some(before) = old.row_of(at) else {
                added.push(at.id);
                continue;
            };
            let columns = &set.columns;
            set.track.carry(
                row,
                old.track.added_at(before),
                old.track.changed_at(before),
                tick,
                |f| match counterparts.get(f).copied().flatten() {
                    Some(g) if columns[f].same_cell(row, &old.columns[g.index()], before) => {
                        (false, old.track.dirty_contains(before, g.index()))
                    }
                    _ => (true, true),
                },
            );
        }
        set.track.reset_log(tick);
        set.structural = old.structural + 1;
        (set, lost, added)
    }

    /// Puts the set back to `saved` as one change at `tick` (see `Store::load_from`): restored
    /// rows of instances that held one keep its pending dirty fields and take as dirty those
    /// the load changes, moving their changed tick only then; their added tick is the saved
    /// one. Other restored rows count as added now. Instances that held a row and have none
    /// now are logged as removals. `saved` holds distinct slots, columns of this set's kinds,
    /// and one entry per row in each array; `scratch` lends the buffers, and keeps the
    /// replaced ones for the next load.
    pub(crate) fn restore(&mut self, saved: SavedRows<'_>, tick: Tick, scratch: &mut LoadScratch) {
        let n = saved.ids.len();
        // Mark the sparse entries of the rows live now with their row, while the dense slots
        // still name them; restored rows find their predecessor through the mark, and unmark
        // it, so the entries still marked afterwards are the rows that went.
        for (row, slot) in self.slots.iter().enumerate() {
            self.sparse[slot.index()] = MARKED | row as u32;
        }
        let before = &mut scratch.before;
        before.clear();
        for (id, slot) in saved.ids.iter().zip(saved.slots) {
            let entry = self.sparse.get(slot.index()).copied().unwrap_or(ABSENT);
            let row = entry & !MARKED;
            if entry != ABSENT && entry & MARKED != 0 && self.ids.get(row as usize) == Some(id) {
                self.sparse[slot.index()] = ABSENT;
                before.push(row);
            } else {
                before.push(NO_ROW);
            }
        }
        for (id, slot) in self.ids.iter().zip(&self.slots) {
            let entry = &mut self.sparse[slot.index()];
            if *entry != ABSENT {
                *entry = ABSENT;
                self.removals.push(Removal { id: *id, tick });
            }
        }
        // The restored rows' tracking, from their predecessors while the columns still hold
        // the values from before.
        let track = &mut scratch.tracking;
        track.recycle(self.columns.len());
        for (row, &b) in before.iter().enumerate() {
            track.push_row(tick);
            if b == NO_ROW {
                continue;
            }
            let b = b as usize;
            let (columns, old) = (&self.columns, &self.track);
            track.carry(row, saved.added[row], old.changed_at(b), tick, |f| {
                let same = saved.columns[f].same_cell(row, &columns[f], b);
                (!same, old.dirty_contains(b, f))
            });
        }
        self.track.replace_rows(track, tick);
        self.ids.clear();
        self.ids.extend_from_slice(saved.ids);
        self.slots.clear();
        self.slots.extend_from_slice(saved.slots);
        for (dest, source) in self.columns.iter_mut().zip(saved.columns) {
            dest.copy_from(source, n);
        }
        if let Some(max) = self.slots.iter().map(|s| s.index()).max()
            && self.sparse.len() <= max
        {
            self.grow_sparse(max + 1);
        }
        for (row, slot) in self.slots.iter().enumerate() {
            self.sparse[slot.index()] = row as u32;
        }
        self.refs.clear();
        if !self.def.reference_fields.is_empty() {
            for row in 0..n {
                self.index_row(row);
            }
        }
        self.structural += 1;
    }

    // ----- The reverse index. -----

    fn index_row(&mut self, row: usize) {
        for i in 0..self.def.reference_fields.len() {
            let field = self.def.reference_fields[i];
            self.index_field(row, field);
        }
    }

    fn unindex_row(&mut self, row: usize) {
        for i in 0..self.def.reference_fields.len() {
            let field = self.def.reference_fields[i];
            self.unindex_field(row, field);
        }
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
