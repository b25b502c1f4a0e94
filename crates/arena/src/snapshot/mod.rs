//! `Snapshot`: the readable state of an arena, shared copy-on-write between snapshots.
//!
//! Nodes are stored inline as records (`record.rs`) in fixed-size pages behind `Arc`
//! (`page.rs`); the data a node has moved away from its class's defaults hangs off its record
//! behind one more `Arc`. Taking a snapshot clones the page vector (one pointer per 1,024
//! slots) and the persistent indexes (`imbl` maps, O(1) to clone); the first write to a page
//! afterwards copies that page's records (and nothing behind them), and the first write to a
//! node's data copies that data. A restore keeps the pages the state copied since as spare
//! memory (`SparePages`, owned by this state alone), and the next page copies are made into it.
//!
//! Invariant: a live id resolves either at slot `id - 1` (when the record stored there carries
//! that id) or through `id_map`; `id_map` holds exactly the ids (live or tombstone) whose slot
//! is not `id - 1`. `live + tombstones` equals the number of occupied slots. Parent and child
//! links are symmetric: a record's parent lists it among its children, in the sibling order
//! the `prev`/`next` links give, and `child_count` counts them. The tag and persistent-id
//! indexes list exactly the live records carrying that tag or persistent id. A snapshot
//! carries the `ArenaId` of the arena it came from. Everything here that keeps these
//! invariants is private to this module: the arena changes records, links and indexes through
//! the methods below.

mod page;
mod record;

use std::iter::FusedIterator;
use std::sync::{Arc, OnceLock};

use self::page::{IdIndex, PAGE_LEN, Page, SparePages, split};
use self::record::Link;
pub(crate) use self::record::{Cold, Record};
use crate::class::{ClassDescriptor, ClassId, ClassRegistry, FamilyId};
use crate::error::ArenaError;
use crate::event::Doomed;
use crate::id::{ArenaId, Guid, GuidSeeds, InstanceId, PersistentId, Slot, fresh_seed};
use crate::node::Node;
use crate::revision::{Revision, Revisions};
use crate::state::NodeData;

pub(crate) type PMap<K, V> =
    imbl::GenericHashMap<K, V, hashbrown::DefaultHashBuilder, imbl::shared_ptr::DefaultSharedPtr>;
pub(crate) type PSet<T> = imbl::OrdSet<T>;

pub(crate) fn pmap<K, V>() -> PMap<K, V> {
    PMap::with_hasher(hashbrown::DefaultHashBuilder::default())
}

/// Tag → the live instances carrying it.
type TagIndex = PMap<Arc<str>, PSet<InstanceId>>;
/// Persistent id → the live instance holding it.
type PersistentIndex = PMap<PersistentId, InstanceId>;
/// GUI layer → the clock value of its latest layout invalidation.
type LayoutIndex = PMap<InstanceId, Revision>;

/// An immutable view of arena state: nodes (live and tombstones), indexes and revisions.
///
/// `Arena::snapshot` returns one; the live `Arena` dereferences to its own current snapshot, so
/// every read method here works on both. A snapshot never changes after later writes to the arena
/// it came from, and carries no pending events or journals.
#[derive(Clone)]
pub struct Snapshot {
    /// The identity of the arena this state belongs to; snapshots keep it.
    arena_id: ArenaId,
    pages: Vec<Arc<Page>>,
    /// Pages this state no longer holds (the copies a restore replaced), whose memory the next
    /// copy-on-write copies of pages reuse. Never shared: a clone starts with none.
    spare_pages: SparePages,
    slot_len: u32,
    id_map: IdIndex,
    live: usize,
    tombstones: usize,
    classes: Arc<ClassRegistry>,
    revisions: Revisions,
    guids: GuidSeeds,
    tag_index: TagIndex,
    persistent_index: PersistentIndex,
    layouts: LayoutIndex,
    family_cache: Vec<OnceLock<Arc<[InstanceId]>>>,
    /// Instances whose data may hold an instance reference (built-in state or attributes): a
    /// superset of the live ones that do, pruned whenever a destruction finds an entry that no
    /// longer holds one or is no longer live.
    referrers: PSet<InstanceId>,
    /// The open lifecycle scopes, innermost last: each subject with its token's serial.
    scope: Vec<(InstanceId, u64)>,
}

/// Page `index` of `pages` made private for writing: when another state shares it, copied into
/// a spare page's memory if there is one, else into a fresh page.
fn private_page<'a>(
    pages: &'a mut [Arc<Page>],
    spares: &mut SparePages,
    index: usize,
) -> &'a mut Page {
    let page = &mut pages[index];
    // Spares first: without them this is `Arc::make_mut` alone, one atomic check. Pages have
    // no weak references, so a strong count above one is what "shared" means (a plain load).
    if !spares.is_empty()
        && Arc::strong_count(page) > 1
        && let Some(mut copy) = spares.take()
    {
        copy.clone_from(page);
        *page = Arc::new(copy);
    }
    Arc::make_mut(page)
}

/// The indexes a construction batch puts back on rollback, as they were at its checkpoint
/// (persistent structures, so recording them is O(1)), with the slot high-water mark.
#[derive(Clone, Debug)]
pub(crate) struct IndexMark {
    slot_len: u32,
    tag_index: TagIndex,
    persistent_index: PersistentIndex,
    layouts: LayoutIndex,
    family_cache: Vec<OnceLock<Arc<[InstanceId]>>>,
}

impl IndexMark {
    /// The slot high-water mark at the checkpoint.
    pub(crate) fn slot_len(&self) -> u32 {
        self.slot_len
    }
}

impl Snapshot {
    /// The empty state of a new arena, under a fresh [`ArenaId`] and its own GUID seed.
    pub(crate) fn new(classes: Arc<ClassRegistry>) -> Self {
        let families = classes.family_count();
        let arena_id = ArenaId::fresh();
        Self {
            arena_id,
            pages: Vec::new(),
            spare_pages: SparePages::default(),
            slot_len: 0,
            id_map: IdIndex::new(),
            live: 0,
            tombstones: 0,
            classes,
            revisions: Revisions::default(),
            guids: GuidSeeds::new(fresh_seed(arena_id)),
            tag_index: pmap(),
            persistent_index: pmap(),
            layouts: pmap(),
            family_cache: (0..families).map(|_| OnceLock::new()).collect(),
            referrers: PSet::new(),
            scope: Vec::new(),
        }
    }

    /// A copy sharing everything, without the lifecycle scopes (which belong to the arena).
    pub(crate) fn without_scopes(&self) -> Self {
        let mut snapshot = self.clone();
        snapshot.scope.clear();
        snapshot
    }

    /// Becomes the state `saved` holds (a state of this arena, taken earlier), keeping what
    /// only grows: the class registry and the GUID seeds stay this state's, the revision clock
    /// continues (see [`Revisions::restored`]), and every GUI layer whose layout revision
    /// differs between the two takes the fresh tick. Lifecycle scopes stay this state's (the
    /// arena restores only with none open).
    pub(crate) fn restore_from(&mut self, saved: &Snapshot) {
        let (revisions, at) = self.revisions.restored(&saved.revisions);
        let mut layouts = saved.layouts.clone();
        for (layer, revision) in self.layouts.iter() {
            if saved.layouts.get(layer) != Some(revision) && saved.find(*layer).is_some() {
                layouts.insert(*layer, at);
            }
        }
        for (layer, revision) in saved.layouts.iter() {
            if self.layouts.get(layer) != Some(revision) {
                layouts.insert(*layer, at);
            }
        }
        let classes = self.classes.clone();
        let guids = self.guids.clone();
        let scope = std::mem::take(&mut self.scope);
        let mut spare_pages = std::mem::take(&mut self.spare_pages);
        // The pages this state copied since are dropped by the restore: their memory is kept
        // for the copies the next writes make.
        for page in std::mem::take(&mut self.pages) {
            if let Ok(page) = Arc::try_unwrap(page) {
                spare_pages.keep(page);
            }
        }
        *self = saved.clone();
        self.spare_pages = spare_pages;
        self.classes = classes;
        self.guids = guids;
        self.scope = scope;
        self.revisions = revisions;
        self.layouts = layouts;
        self.sync_family_cache();
    }

    // ----- Classes, seeds and revisions. -----

    /// Registers a class on this state's registry (snapshots keep theirs).
    pub(crate) fn register_class(
        &mut self,
        descriptor: ClassDescriptor,
    ) -> Result<ClassId, ArenaError> {
        let class = Arc::make_mut(&mut self.classes).register(descriptor)?;
        self.sync_family_cache();
        Ok(class)
    }

    /// Registers a family on this state's registry.
    pub(crate) fn register_family(&mut self, name: &str) -> Result<FamilyId, ArenaError> {
        let family = Arc::make_mut(&mut self.classes).register_family(name)?;
        self.sync_family_cache();
        Ok(family)
    }

    pub(crate) fn class_of(&self, class: ClassId) -> &ClassDescriptor {
        self.classes
            .get(class)
            .expect("nodes only carry classes of their arena's registry")
    }

    pub(crate) fn revisions_mut(&mut self) -> &mut Revisions {
        &mut self.revisions
    }

    /// The seed new GUIDs and persistent ids derive from.
    pub(crate) fn seed(&self) -> u64 {
        self.guids.current()
    }

    /// Derives GUIDs from `next_counter` on from `seed`; earlier nodes keep theirs.
    pub(crate) fn reseed(&mut self, seed: u64, next_counter: u64) {
        self.guids.reseed(seed, next_counter);
    }

    /// The GUID of the node created with `counter`.
    pub(crate) fn guid_of(&self, counter: u64) -> Guid {
        self.guids.guid(counter)
    }

    // ----- Raw slot access (tombstones included). -----

    pub(crate) fn record_at(&self, slot: Slot) -> Option<&Record> {
        let (page, index) = split(slot);
        self.pages.get(page)?.get(index)
    }

    /// Resolves an id to its slot and record, tombstones included.
    pub(crate) fn find(&self, id: InstanceId) -> Option<(Slot, &Record)> {
        let guess = id.get() - 1;
        if guess < u64::from(self.slot_len) {
            let slot = Slot(guess as u32);
            if let Some(record) = self.record_at(slot)
                && record.id() == id
            {
                return Some((slot, record));
            }
        }
        let slot = self.id_map.get(id)?;
        let record = self.record_at(slot)?;
        (record.id() == id).then_some((slot, record))
    }

    /// Resolves a live id to its slot, with the reason when it is not live.
    pub(crate) fn live_slot(&self, id: InstanceId) -> Result<Slot, ArenaError> {
        match self.find(id) {
            Some((slot, record)) if !record.is_destroyed() => Ok(slot),
            Some(_) => Err(ArenaError::DestroyedInstance(id)),
            None => Err(ArenaError::UnknownInstance(id)),
        }
    }

    /// The record of a live instance, with the reason when it is not live.
    pub(crate) fn live_record(&self, id: InstanceId) -> Result<&Record, ArenaError> {
        match self.find(id) {
            Some((_, record)) if !record.is_destroyed() => Ok(record),
            Some(_) => Err(ArenaError::DestroyedInstance(id)),
            None => Err(ArenaError::UnknownInstance(id)),
        }
    }

    /// The cold data of a record of this snapshot, if it has any (it sits in the record's page).
    pub(crate) fn cold_of(&self, record: &Record) -> Option<&Cold> {
        if !record.has_cold() {
            return None;
        }
        let (slot, _) = self.find(record.id)?;
        let (page, index) = split(slot);
        self.pages.get(page)?.cold(index)
    }

    /// The tags of a record of this snapshot.
    pub(crate) fn tags_of(&self, record: &Record) -> &[Arc<str>] {
        self.cold_of(record).map_or(&[], |cold| &cold.tags)
    }

    /// The persistent id of a record of this snapshot.
    pub(crate) fn persistent_id_of(&self, record: &Record) -> Option<PersistentId> {
        self.cold_of(record).and_then(|cold| cold.persistent_id)
    }

    /// The GUID a record of this snapshot keeps from an image, if it was rebuilt from one.
    pub(crate) fn kept_guid_of(&self, record: &Record) -> Option<Guid> {
        self.cold_of(record).and_then(|cold| cold.guid)
    }

    /// The name, attributes and state of a record: its own, or its class's defaults.
    pub(crate) fn data_of<'a>(&'a self, record: &'a Record) -> &'a NodeData {
        match self.cold_of(record) {
            Some(cold) => &cold.data,
            None => self.class_of(record.class()).default_data(),
        }
    }

    /// Makes the record at `slot` private to this snapshot and returns it for writing.
    pub(crate) fn write_at(&mut self, slot: Slot) -> &mut Record {
        let (page, index) = split(slot);
        private_page(&mut self.pages, &mut self.spare_pages, page)
            .get_mut(index)
            .expect("write_at is only called on occupied slots")
    }

    /// The name, attributes and state of the node at `slot`, made private for writing.
    pub(crate) fn data_mut(&mut self, slot: Slot) -> &mut NodeData {
        &mut self.cold_mut(slot).data
    }

    /// The cold data of the node at `slot`, made private for writing (created from its class's
    /// defaults if the node had none).
    fn cold_mut(&mut self, slot: Slot) -> &mut Cold {
        let (page, index) = split(slot);
        let class = self
            .record_at(slot)
            .expect("cold data is only written on occupied slots")
            .class();
        let defaults = self
            .classes
            .get(class)
            .expect("nodes only carry classes of their arena's registry")
            .default_data();
        private_page(&mut self.pages, &mut self.spare_pages, page).cold_mut(index, defaults)
    }

    // ----- Placing and removing records. -----

    /// Places a new, unlinked, live record at the vacant `slot` (a free slot or the high-water
    /// mark), as the last child of the node at `parent` when one is given.
    pub(crate) fn place(
        &mut self,
        slot: Slot,
        mut record: Record,
        cold: Option<Arc<Cold>>,
        parent: Option<Slot>,
    ) {
        let id = record.id;
        let previous = parent.and_then(|p| self.record_at(p)?.last_child.get());
        record.parent = Link::from(parent);
        record.prev_sibling = Link::from(previous);
        let (page, index) = split(slot);
        while self.pages.len() <= page {
            self.pages.push(Arc::new(Page::new()));
        }
        if slot.0 >= self.slot_len {
            self.slot_len = slot.0 + 1;
        }
        if u64::from(slot.0) + 1 != id.get() {
            self.id_map.insert(id, slot);
        }
        let records = private_page(&mut self.pages, &mut self.spare_pages, page);
        records.put(index, record, cold);
        self.live += 1;
        let Some(parent) = parent else { return };
        // The previous sibling usually shares the new record's page: link it through the same
        // borrow rather than making the page private a second time.
        match previous {
            Some(prev) if split(prev).0 == page => {
                if let Some(sibling) = records.get_mut(split(prev).1) {
                    sibling.next_sibling = Link::to(slot);
                }
            }
            Some(prev) => self.write_at(prev).next_sibling = Link::to(slot),
            None => {}
        }
        let parent = self.write_at(parent);
        if previous.is_none() {
            parent.first_child = Link::to(slot);
        }
        parent.last_child = Link::to(slot);
        parent.child_count += 1;
    }

    /// Places new, live records at the vacant `slots` (free slots, or fresh ones from the
    /// high-water mark on, in increasing order), appended in that order to the children of the
    /// node at `parent` when one is given. `record(i)` builds the unlinked record for
    /// `slots[i]`. Each page is made private once per run of consecutive slots in it, and the
    /// parent once.
    pub(crate) fn place_run(
        &mut self,
        slots: &[Slot],
        parent: Option<Slot>,
        cold: Option<&Arc<Cold>>,
        mut record: impl FnMut(usize) -> Record,
    ) {
        let (Some(&first), Some(&last), Some(&highest)) =
            (slots.first(), slots.last(), slots.iter().max())
        else {
            return;
        };
        while self.pages.len() <= split(highest).0 {
            self.pages.push(Arc::new(Page::new()));
        }
        if highest.0 >= self.slot_len {
            self.slot_len = highest.0 + 1;
        }
        let previous = parent.and_then(|p| self.record_at(p)?.last_child.get());
        let mut prev = previous;
        let mut offset = 0;
        for group in page_runs(slots) {
            let page_index = split(group[0]).0;
            // A previous sibling in another page is linked before this page is borrowed.
            if parent.is_some()
                && let Some(p) = prev
                && split(p).0 != page_index
            {
                self.write_at(p).next_sibling = Link::to(group[0]);
            }
            let page = private_page(&mut self.pages, &mut self.spare_pages, page_index);
            for &slot in group {
                let mut new = record(offset);
                offset += 1;
                if parent.is_some() {
                    new.parent = Link::from(parent);
                    new.prev_sibling = Link::from(prev);
                    if let Some(p) = prev
                        && split(p).0 == page_index
                        && let Some(sibling) = page.get_mut(split(p).1)
                    {
                        sibling.next_sibling = Link::to(slot);
                    }
                }
                if u64::from(slot.0) + 1 != new.id.get() {
                    self.id_map.insert(new.id, slot);
                }
                page.put(split(slot).1, new, cold.cloned());
                prev = Some(slot);
            }
        }
        self.live += slots.len();
        if let Some(parent) = parent {
            let parent = self.write_at(parent);
            if previous.is_none() {
                parent.first_child = Link::to(first);
            }
            parent.last_child = Link::to(last);
            parent.child_count += u32::try_from(slots.len()).expect("slot room is checked first");
        }
    }

    /// Empties a slot and forgets its id; the record was live (construction rollback) or a
    /// tombstone (reclamation). Returns the record that was there.
    pub(crate) fn vacate(&mut self, slot: Slot) -> Option<Record> {
        let (page, index) = split(slot);
        if page >= self.pages.len() {
            return None;
        }
        let record = private_page(&mut self.pages, &mut self.spare_pages, page).take(index)?;
        self.forget(slot, &record);
        Some(record)
    }

    /// Empties the slots of the tombstones `doomed` names (a slot holding another id is left
    /// alone) and hands each emptied slot to `freed`, in order. Each page is made private once
    /// per run of consecutive slots in it.
    pub(crate) fn reclaim(&mut self, doomed: &[Doomed], mut freed: impl FnMut(Slot)) {
        for group in doomed.chunk_by(|a, b| split(a.slot).0 == split(b.slot).0) {
            let index = split(group[0].slot).0;
            if index >= self.pages.len() {
                continue;
            }
            let page = private_page(&mut self.pages, &mut self.spare_pages, index);
            for d in group {
                let index = split(d.slot).1;
                if page.get(index).is_none_or(|r| r.id != d.id) {
                    continue;
                }
                if let Some(record) = page.take(index) {
                    forget_record(
                        (&mut self.id_map, &mut self.layouts),
                        (&mut self.live, &mut self.tombstones),
                        d.slot,
                        &record,
                    );
                    freed(d.slot);
                }
            }
        }
    }

    /// Drops what the snapshot knows of the record just taken out of `slot`.
    fn forget(&mut self, slot: Slot, record: &Record) {
        forget_record(
            (&mut self.id_map, &mut self.layouts),
            (&mut self.live, &mut self.tombstones),
            slot,
            record,
        );
    }

    /// Turns the live records at `slots` into tombstones: destroyed and locked, counted as
    /// tombstones, and out of the tag and persistent-id indexes. Each page is made private once
    /// per run of consecutive slots in it. Returns whether any of them carried tags.
    pub(crate) fn entomb(&mut self, slots: &[Slot]) -> bool {
        let mut untagged = false;
        for group in page_runs(slots) {
            let page = private_page(&mut self.pages, &mut self.spare_pages, split(group[0]).0);
            for &slot in group {
                if let Some((record, cold)) = page.record_and_cold(split(slot).1) {
                    untagged |= entomb_record(
                        record,
                        cold,
                        (&mut self.tag_index, &mut self.persistent_index),
                    );
                }
            }
        }
        self.live -= slots.len();
        self.tombstones += slots.len();
        untagged
    }

    /// Raises the slot high-water mark to `slot_len` over vacant slots (a reservation holding
    /// fresh slots), so no creation takes them; the records come later, through `place` or
    /// `place_run`.
    pub(crate) fn extend_vacant(&mut self, slot_len: u32) {
        if slot_len <= self.slot_len {
            return;
        }
        let pages = (slot_len as usize).div_ceil(PAGE_LEN);
        while self.pages.len() < pages {
            self.pages.push(Arc::new(Page::new()));
        }
        for page in (self.slot_len as usize / PAGE_LEN)..pages {
            let len = (slot_len as usize - page * PAGE_LEN).min(PAGE_LEN);
            if self.pages[page].entries().len() < len {
                private_page(&mut self.pages, &mut self.spare_pages, page).extend_vacant(len);
            }
        }
        self.slot_len = slot_len;
    }

    /// Shrinks the slot high-water mark (construction rollback of appended slots, already
    /// vacated).
    pub(crate) fn truncate_slots(&mut self, slot_len: u32) {
        self.slot_len = slot_len;
        let pages = (slot_len as usize).div_ceil(PAGE_LEN);
        self.pages.truncate(pages);
        let in_last = slot_len as usize - pages.saturating_sub(1) * PAGE_LEN;
        if let Some(last) = self.pages.last_mut()
            && last.entries().len() > in_last
        {
            Arc::make_mut(last).truncate(in_last);
        }
    }

    // ----- Hierarchy links. -----

    /// Appends the node at `child` (its own side already linked, with `previous` as its
    /// previous sibling) to the children of the node at `parent`: the parent's side and the old
    /// last child's next link.
    fn append_child(&mut self, parent: Slot, previous: Option<Slot>, child: Slot) {
        match previous {
            Some(previous) => self.write_at(previous).next_sibling = Link::to(child),
            None => self.write_at(parent).first_child = Link::to(child),
        }
        let parent = self.write_at(parent);
        parent.last_child = Link::to(child);
        parent.child_count += 1;
    }

    /// Appends the detached node at `child` to the children of the node at `parent`.
    pub(crate) fn link_last(&mut self, child: Slot, parent: Slot) {
        let previous = self.record_at(parent).and_then(|p| p.last_child.get());
        let record = self.write_at(child);
        record.parent = Link::to(parent);
        record.prev_sibling = Link::from(previous);
        record.next_sibling = Link::NONE;
        self.append_child(parent, previous, child);
    }

    /// Detaches the node at `child` from its parent's children (nothing for a root).
    pub(crate) fn unlink(&mut self, child: Slot) {
        let Some(record) = self.record_at(child) else {
            return;
        };
        let (prev, next) = (record.prev_sibling.get(), record.next_sibling.get());
        let Some(parent) = record.parent() else {
            return;
        };
        match prev {
            Some(prev_slot) => self.write_at(prev_slot).next_sibling = Link::from(next),
            None => self.write_at(parent).first_child = Link::from(next),
        }
        match next {
            Some(next_slot) => self.write_at(next_slot).prev_sibling = Link::from(prev),
            None => self.write_at(parent).last_child = Link::from(prev),
        }
        self.write_at(parent).child_count -= 1;
        let record = self.write_at(child);
        record.parent = Link::NONE;
        record.prev_sibling = Link::NONE;
        record.next_sibling = Link::NONE;
    }

    // ----- Tags, persistent ids, layouts, family caches. -----

    /// Adds `tag`, which the live node at `slot` does not carry yet, to it and to the index.
    pub(crate) fn add_tag(&mut self, slot: Slot, tag: &str) {
        let key: Arc<str> = self
            .tag_index
            .get_key_value(tag)
            .map_or_else(|| Arc::from(tag), |(k, _)| k.clone());
        let Some(id) = self.id_at(slot) else { return };
        let cold = self.cold_mut(slot);
        cold.tags = cold.tags.iter().cloned().chain([key.clone()]).collect();
        self.tag_index.entry(key).or_default().insert(id);
    }

    /// Removes `tag`, which the live node at `slot` carries, from it and from the index.
    pub(crate) fn remove_tag(&mut self, slot: Slot, tag: &str) {
        let Some(id) = self.id_at(slot) else { return };
        let cold = self.cold_mut(slot);
        cold.tags = cold.tags.iter().filter(|t| ***t != *tag).cloned().collect();
        unindex_tag(&mut self.tag_index, id, tag);
    }

    /// Gives the live node at `slot` the GUID it had in an image.
    pub(crate) fn set_guid(&mut self, slot: Slot, guid: Guid) {
        self.cold_mut(slot).guid = Some(guid);
    }

    /// Gives the node at `slot` the persistent id `pid` without indexing it: a tombstone rebuilt
    /// from an image keeps the persistent id it had, which no index lists (it is about to be
    /// entombed, before any live node of the image is placed).
    pub(crate) fn keep_persistent_id(&mut self, slot: Slot, pid: Option<PersistentId>) {
        self.cold_mut(slot).persistent_id = pid;
    }

    /// Gives the live node at `slot` the persistent id `pid` (which no other live node holds)
    /// or none, keeping the index in step.
    pub(crate) fn set_persistent_id(&mut self, slot: Slot, pid: Option<PersistentId>) {
        let Some(id) = self.id_at(slot) else { return };
        let old = std::mem::replace(&mut self.cold_mut(slot).persistent_id, pid);
        if let Some(old) = old {
            self.persistent_index.remove(&old);
        }
        if let Some(pid) = pid {
            self.persistent_index.insert(pid, id);
        }
    }

    /// Records that the layout of the GUI layer `layer` was invalidated at `at`.
    pub(crate) fn invalidate_layout(&mut self, layer: InstanceId, at: Revision) {
        self.layouts.insert(layer, at);
    }

    /// Gives every registered family a cache cell (after the registry grew).
    fn sync_family_cache(&mut self) {
        let families = self.classes.family_count();
        self.family_cache.resize_with(families, OnceLock::new);
    }

    pub(crate) fn invalidate_family(&mut self, family: FamilyId) {
        if let Some(cell) = self.family_cache.get_mut(family.index()) {
            cell.take();
        }
    }

    /// The indexes a construction batch restores on rollback.
    pub(crate) fn index_mark(&self) -> IndexMark {
        IndexMark {
            slot_len: self.slot_len,
            tag_index: self.tag_index.clone(),
            persistent_index: self.persistent_index.clone(),
            layouts: self.layouts.clone(),
            family_cache: self.family_cache.clone(),
        }
    }

    /// Puts back the indexes of a checkpoint after its batch's records were removed. When the
    /// batch changed anything, `restamp` holds the clock at the checkpoint and the tick of the
    /// rollback: layers the batch invalidated keep an invalidation, at that newer tick.
    pub(crate) fn restore_indexes(
        &mut self,
        mark: IndexMark,
        restamp: Option<(Revision, Revision)>,
    ) {
        self.tag_index = mark.tag_index;
        self.persistent_index = mark.persistent_index;
        // Classes and families registered inside the batch stay: registries only grow.
        self.family_cache = mark.family_cache;
        self.sync_family_cache();
        let mut layouts = mark.layouts;
        if let Some((clock, at)) = restamp {
            for (layer, revision) in self.layouts.iter() {
                if *revision > clock && self.find(*layer).is_some() {
                    layouts.insert(*layer, at);
                }
            }
        }
        self.layouts = layouts;
    }

    // ----- References held in node data. -----

    /// Notes that `id`'s data may hold an instance reference (it is kept in `referrers`).
    pub(crate) fn note_referrer(&mut self, id: InstanceId) {
        if !self.referrers.contains(&id) {
            self.referrers.insert(id);
        }
    }

    /// The live instances whose built-in state or attributes reference an instance that is no
    /// longer live, with the dead targets each holds. Entries of `referrers` that are no
    /// longer live or hold no reference at all leave it.
    pub(crate) fn dangling_references(&mut self) -> Vec<(Slot, Vec<InstanceId>)> {
        let mut dangling = Vec::new();
        if self.referrers.is_empty() {
            // Most worlds hold no instance references at all; skip the set's iterator.
            return dangling;
        }
        let mut prune = Vec::new();
        for &id in &self.referrers {
            let Some(slot) = self.live_slot(id).ok() else {
                prune.push(id);
                continue;
            };
            let Some(record) = self.record_at(slot) else {
                prune.push(id);
                continue;
            };
            let data = self.data_of(record);
            let mut any = false;
            let mut dead = Vec::new();
            for target in data.reference_targets() {
                any = true;
                if !self.is_live(target) && !dead.contains(&target) {
                    dead.push(target);
                }
            }
            if !any {
                prune.push(id);
            } else if !dead.is_empty() {
                dangling.push((slot, dead));
            }
        }
        for id in prune {
            self.referrers.remove(&id);
        }
        dangling
    }

    /// Clears, in the live node at `slot`, every reference to one of `dead`.
    pub(crate) fn clear_references(&mut self, slot: Slot, dead: &[InstanceId]) {
        self.data_mut(slot).for_each_reference_mut(|target| {
            if target.is_some_and(|t| dead.contains(&t)) {
                *target = None;
            }
        });
    }

    // ----- Lifecycle scopes. -----

    /// Opens a lifecycle scope on `subject` under the token serial `serial`.
    pub(crate) fn open_scope(&mut self, subject: InstanceId, serial: u64) {
        self.scope.push((subject, serial));
    }

    /// Closes the scope opened under `serial` and every scope opened inside it; `false`, closing
    /// nothing, when no open scope has that serial.
    pub(crate) fn close_scope(&mut self, serial: u64) -> bool {
        match self.scope.iter().position(|(_, s)| *s == serial) {
            Some(depth) => {
                self.scope.truncate(depth);
                true
            }
            None => false,
        }
    }

    /// Whether a lifecycle scope is open.
    pub(crate) fn scope_open(&self) -> bool {
        !self.scope.is_empty()
    }

    // ----- Public reads. -----

    /// The record of a live instance, or of a tombstone inside an open lifecycle scope.
    fn readable(&self, id: InstanceId) -> Option<&Record> {
        self.readable_at(id).map(|(_, record)| record)
    }

    /// Like [`Snapshot::readable`], with the slot.
    fn readable_at(&self, id: InstanceId) -> Option<(Slot, &Record)> {
        let (slot, record) = self.find(id)?;
        (!record.is_destroyed() || self.in_scope(record)).then_some((slot, record))
    }

    /// The node of a live instance, or of a tombstone inside an open lifecycle scope.
    pub fn get(&self, id: InstanceId) -> Option<Node<'_>> {
        self.readable(id).map(|record| Node::new(self, record))
    }

    /// Like [`Snapshot::get`], with the reason when the node is not readable.
    ///
    /// # Errors
    ///
    /// [`ArenaError::DestroyedInstance`] for a tombstone outside a lifecycle scope open on it, and
    /// [`ArenaError::UnknownInstance`] for an id this arena does not hold.
    pub fn node(&self, id: InstanceId) -> Result<Node<'_>, ArenaError> {
        match self.find(id) {
            Some((_, record)) if !record.is_destroyed() || self.in_scope(record) => {
                Ok(Node::new(self, record))
            }
            Some(_) => Err(ArenaError::DestroyedInstance(id)),
            None => Err(ArenaError::UnknownInstance(id)),
        }
    }

    /// Whether the id names a live (not destroyed) instance.
    pub fn is_live(&self, id: InstanceId) -> bool {
        matches!(self.find(id), Some((_, record)) if !record.is_destroyed())
    }

    /// The slot and class of `id` when it is live: one lookup where [`Snapshot::is_live`],
    /// [`Snapshot::slot_of`] and [`Snapshot::node`] would each look again.
    #[inline]
    pub fn live_slot_class(&self, id: InstanceId) -> Option<(Slot, ClassId)> {
        match self.find(id) {
            Some((slot, record)) if !record.is_destroyed() => Some((slot, record.class())),
            _ => None,
        }
    }

    /// The class of `id` when it is live and held at `slot` (a checked instance reference
    /// still names it): one look at the slot's record, no id lookup.
    #[inline]
    pub fn live_class_at(&self, id: InstanceId, slot: Slot) -> Option<ClassId> {
        self.record_at(slot)
            .filter(|record| record.id() == id && !record.is_destroyed())
            .map(Record::class)
    }

    /// The physical slot of a live instance or tombstone; `None` once reclaimed.
    pub fn slot_of(&self, id: InstanceId) -> Option<Slot> {
        self.find(id).map(|(slot, _)| slot)
    }

    /// The id held at a slot (live or tombstone).
    pub fn id_at(&self, slot: Slot) -> Option<InstanceId> {
        self.record_at(slot).map(Record::id)
    }

    /// The parent of a readable instance.
    pub fn parent(&self, id: InstanceId) -> Option<InstanceId> {
        self.parent_of(self.readable(id)?)
    }

    /// The id of a record's parent.
    pub(crate) fn parent_of(&self, record: &Record) -> Option<InstanceId> {
        self.id_at(record.parent()?)
    }

    /// The class of a readable instance.
    pub fn class(&self, id: InstanceId) -> Option<ClassId> {
        self.readable(id).map(Record::class)
    }

    /// The registry this arena uses.
    pub fn classes(&self) -> &ClassRegistry {
        &self.classes
    }

    /// The shared registry, for building another arena with the same classes.
    pub fn classes_shared(&self) -> &Arc<ClassRegistry> {
        &self.classes
    }

    /// The descriptor of a class in this arena's registry.
    pub fn descriptor(&self, class: ClassId) -> Option<&ClassDescriptor> {
        self.classes.get(class)
    }

    /// The children of a readable instance, in order (empty for unknown ids).
    pub fn children(&self, id: InstanceId) -> Children<'_> {
        Children {
            snapshot: self,
            next: self.readable(id).and_then(Record::first_child),
        }
    }

    /// The descendants of a readable instance in pre-order, excluding the instance itself.
    pub fn descendants(&self, id: InstanceId) -> Descendants<'_> {
        let readable = self.readable_at(id);
        Descendants {
            snapshot: self,
            root: readable.map(|(slot, _)| slot),
            next: readable.and_then(|(_, record)| record.first_child()),
        }
    }

    /// The ancestors of a readable instance, nearest first.
    pub fn ancestors(&self, id: InstanceId) -> Ancestors<'_> {
        Ancestors {
            snapshot: self,
            next: self.readable(id).and_then(Record::parent),
        }
    }

    /// Whether `ancestor` is a proper ancestor of `id`.
    pub fn is_ancestor_of(&self, ancestor: InstanceId, id: InstanceId) -> bool {
        self.ancestors(id).any(|a| a == ancestor)
    }

    /// The first child of `parent` with the given name.
    pub fn find_first_child(&self, parent: InstanceId, name: &str) -> Option<InstanceId> {
        self.children(parent)
            .find(|child| self.get(*child).is_some_and(|n| n.name() == name))
    }

    /// The slot high-water mark as a slot index.
    pub(crate) fn slot_len(&self) -> u32 {
        self.slot_len
    }

    /// How many instances are live.
    pub fn live_count(&self) -> usize {
        self.live
    }

    /// How many destroyed instances still hold their slot.
    pub fn tombstone_count(&self) -> usize {
        self.tombstones
    }

    /// The slot high-water mark: every slot below it has been used at least once.
    pub fn slot_capacity(&self) -> usize {
        self.slot_len as usize
    }

    /// The live instances in slot order.
    pub fn iter(&self) -> impl Iterator<Item = Node<'_>> + '_ {
        self.records()
            .filter(|record| !record.is_destroyed())
            .map(|record| Node::new(self, record))
    }

    /// Every occupied slot's record (tombstones included), in slot order.
    fn records(&self) -> impl Iterator<Item = &Record> + '_ {
        self.pages
            .iter()
            .flat_map(|page| page.entries().iter())
            .filter_map(Option::as_ref)
    }

    /// The revision domains.
    pub fn revisions(&self) -> &Revisions {
        &self.revisions
    }

    /// The identity of the arena this state belongs to: the arena's own, shared by every
    /// snapshot taken from it. Revisions are comparable only between states with one id.
    pub fn arena_id(&self) -> ArenaId {
        self.arena_id
    }

    /// Whether a live instance carries a tag.
    pub fn has_tag(&self, id: InstanceId, tag: &str) -> bool {
        self.tag_index.get(tag).is_some_and(|set| set.contains(&id))
    }

    /// The live instances carrying a tag, in id order.
    pub fn tagged(&self, tag: &str) -> impl Iterator<Item = InstanceId> + '_ {
        self.tag_index
            .get(tag)
            .into_iter()
            .flat_map(|set| set.iter().copied())
    }

    /// How many live instances carry a tag.
    pub fn tag_count(&self, tag: &str) -> usize {
        self.tag_index.get(tag).map_or(0, PSet::len)
    }

    /// The tags in use, in no particular order.
    pub fn tag_names(&self) -> impl Iterator<Item = &str> + '_ {
        self.tag_index.keys().map(|k| &**k)
    }

    /// The live instance holding a persistent id.
    pub fn by_persistent_id(&self, pid: PersistentId) -> Option<InstanceId> {
        self.persistent_index.get(&pid).copied()
    }

    /// The layout revision of a GUI layer: the clock value at which its layout was last
    /// invalidated (`Revision::ZERO` if never). Combine with [`Revisions::layout`] for the broad
    /// layout memo.
    pub fn layout_revision(&self, layer: InstanceId) -> Revision {
        self.layouts.get(&layer).copied().unwrap_or(Revision::ZERO)
    }

    /// The live members of a family, sorted by id. The list is rebuilt only after the family's
    /// membership changed (creation or destruction of a member) and is shared by every reader
    /// and snapshot until then.
    pub fn family_members(&self, family: FamilyId) -> Arc<[InstanceId]> {
        match self.family_cache.get(family.index()) {
            Some(cell) => cell.get_or_init(|| self.scan_family(family)).clone(),
            None => self.scan_family(family),
        }
    }

    fn scan_family(&self, family: FamilyId) -> Arc<[InstanceId]> {
        let mut members: Vec<InstanceId> = self
            .records()
            .filter(|record| {
                !record.is_destroyed() && self.class_of(record.class()).families().contains(family)
            })
            .map(Record::id)
            .collect();
        members.sort_unstable();
        members.into()
    }

    /// Compares two snapshots of the same arena node by node. A node is reported as changed
    /// when its record differs (links, flags, the revision of its latest state write) or its
    /// data is not the very same shared data (any write to name, attributes, state, tags or
    /// persistent id after the older snapshot copies it), so it may have been written back to
    /// equal values since; pages shared by both snapshots are skipped without looking at
    /// their nodes.
    pub fn diff(&self, older: &Snapshot) -> SnapshotDiff {
        let mut diff = SnapshotDiff::default();
        let pages = self.pages.len().max(older.pages.len());
        for page in 0..pages {
            let (new_page, old_page) = (self.pages.get(page), older.pages.get(page));
            if let (Some(a), Some(b)) = (new_page, old_page)
                && Arc::ptr_eq(a, b)
            {
                continue;
            }
            for index in 0..PAGE_LEN {
                fn live(page: Option<&Arc<Page>>, index: usize) -> Option<&Record> {
                    page.and_then(|p| p.get(index))
                        .filter(|record| !record.is_destroyed())
                }
                match (live(new_page, index), live(old_page, index)) {
                    (Some(a), Some(b)) if a.id() == b.id() => {
                        let same_cold = match (new_page, old_page) {
                            (Some(new), Some(old)) => new.same_cold(old, index),
                            _ => false,
                        };
                        if !(same_cold && a.unchanged_from(b)) {
                            diff.changed.push(a.id());
                        }
                    }
                    (a, b) => {
                        if let Some(a) = a {
                            diff.added.push(a.id());
                        }
                        if let Some(b) = b {
                            diff.removed.push(b.id());
                        }
                    }
                }
            }
        }
        diff.changed.sort_unstable();
        diff.added.sort_unstable();
        diff.removed.sort_unstable();
        diff
    }

    /// Whether a tombstone is readable through an open lifecycle scope: it is a scope subject or
    /// lies in a subject's destroyed subtree.
    fn in_scope(&self, record: &Record) -> bool {
        if self.scope.is_empty() {
            return false;
        }
        let mut current = record;
        loop {
            if self
                .scope
                .iter()
                .any(|(subject, _)| *subject == current.id())
            {
                return true;
            }
            match current.parent().and_then(|p| self.record_at(p)) {
                Some(parent) if parent.is_destroyed() => current = parent,
                _ => return false,
            }
        }
    }

    /// The pre-order successor of the node at `slot` inside the subtree of the node at `root`.
    pub(crate) fn successor(&self, root: Slot, slot: Slot) -> Option<Slot> {
        let record = self.record_at(slot)?;
        if let Some(child) = record.first_child() {
            return Some(child);
        }
        let (mut current, mut current_slot) = (record, slot);
        loop {
            if current_slot == root {
                return None;
            }
            if let Some(sibling) = current.next_sibling() {
                return Some(sibling);
            }
            current_slot = current.parent()?;
            current = self.record_at(current_slot)?;
        }
    }
}

/// The slots split into runs of consecutive entries that lie in one page.
fn page_runs(slots: &[Slot]) -> impl Iterator<Item = &[Slot]> {
    slots.chunk_by(|a, b| split(*a).0 == split(*b).0)
}

/// Marks a live record destroyed (and locked) and takes it out of the tag and persistent-id
/// indexes. Returns whether it carried tags.
fn entomb_record(
    record: &mut Record,
    cold: Option<&Cold>,
    (tag_index, persistent_index): (&mut TagIndex, &mut PersistentIndex),
) -> bool {
    record.set_destroyed();
    let Some(cold) = cold else {
        return false;
    };
    for tag in &cold.tags {
        unindex_tag(tag_index, record.id, tag);
    }
    if let Some(pid) = cold.persistent_id {
        persistent_index.remove(&pid);
    }
    !cold.tags.is_empty()
}

/// Removes `id` from the index entry of `tag`, and the entry once it is empty.
fn unindex_tag(index: &mut TagIndex, id: InstanceId, tag: &str) {
    let emptied = match index.get_mut(tag) {
        Some(set) => {
            set.remove(&id);
            set.is_empty()
        }
        None => false,
    };
    if emptied {
        index.remove(tag);
    }
}

/// Drops what a snapshot knows of a record just taken out of `slot`: its id-index entry, its
/// layout revision, and its place in the live or tombstone count.
fn forget_record(
    (id_map, layouts): (&mut IdIndex, &mut LayoutIndex),
    (live, tombstones): (&mut usize, &mut usize),
    slot: Slot,
    record: &Record,
) {
    if u64::from(slot.0) + 1 != record.id.get() {
        id_map.remove(record.id);
    }
    if record.is_destroyed() {
        *tombstones -= 1;
    } else {
        *live -= 1;
    }
    if !layouts.is_empty() {
        layouts.remove(&record.id);
    }
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("live", &self.live)
            .field("tombstones", &self.tombstones)
            .field("slots", &self.slot_len)
            .field("revisions", &self.revisions)
            .finish_non_exhaustive()
    }
}

/// What differs between two snapshots, each list sorted by id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SnapshotDiff {
    /// Live in both, and written in between (possibly back to equal values).
    pub changed: Vec<InstanceId>,
    /// Live only in the newer snapshot.
    pub added: Vec<InstanceId>,
    /// Live only in the older snapshot.
    pub removed: Vec<InstanceId>,
}

/// The children of an instance, in order.
pub struct Children<'a> {
    snapshot: &'a Snapshot,
    next: Option<Slot>,
}

impl Iterator for Children<'_> {
    type Item = InstanceId;

    fn next(&mut self) -> Option<InstanceId> {
        let record = self.snapshot.record_at(self.next?)?;
        self.next = record.next_sibling();
        Some(record.id())
    }
}

impl FusedIterator for Children<'_> {}

/// The descendants of an instance in pre-order, walked through the sibling links without a stack.
pub struct Descendants<'a> {
    snapshot: &'a Snapshot,
    /// The slot of the instance whose descendants these are; `None` when it is not readable
    /// (and `next` is then `None` too).
    root: Option<Slot>,
    next: Option<Slot>,
}

impl Iterator for Descendants<'_> {
    type Item = InstanceId;

    fn next(&mut self) -> Option<InstanceId> {
        let slot = self.next?;
        self.next = self
            .root
            .and_then(|root| self.snapshot.successor(root, slot));
        self.snapshot.id_at(slot)
    }
}

impl FusedIterator for Descendants<'_> {}

/// The ancestors of an instance, nearest first.
pub struct Ancestors<'a> {
    snapshot: &'a Snapshot,
    next: Option<Slot>,
}

impl Iterator for Ancestors<'_> {
    type Item = InstanceId;

    fn next(&mut self) -> Option<InstanceId> {
        let record = self.snapshot.record_at(self.next?)?;
        self.next = record.parent();
        Some(record.id())
    }
}

impl FusedIterator for Ancestors<'_> {}
