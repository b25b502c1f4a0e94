//! `Snapshot`: the readable state of an arena, shared copy-on-write between snapshots.
//!
//! Nodes live behind `Arc` in fixed-size pages that are themselves behind `Arc`. Taking a
//! snapshot clones the page vector (one pointer per 1,024 slots) and the persistent indexes
//! (`imbl` maps, O(1) to clone); the first write to a node afterwards copies its page's pointer
//! array and then the node, and nothing else.
//!
//! Invariant: a live id resolves either at slot `id - 1` (when the node stored there carries that
//! id) or through `id_map`; `id_map` holds exactly the ids (live or tombstone) whose slot is not
//! `id - 1`. `live + tombstones` equals the number of occupied slots. The tag and persistent-id
//! indexes list live instances only. A snapshot carries the `ArenaId` of the arena it came from.

use std::iter::FusedIterator;
use std::sync::{Arc, OnceLock};

use crate::class::{ClassDescriptor, ClassId, ClassRegistry, FamilyId};
use crate::error::ArenaError;
use crate::id::{ArenaId, InstanceId, PersistentId, Slot};
use crate::node::Node;
use crate::revision::{Revision, Revisions};

pub(crate) const PAGE_BITS: u32 = 10;
pub(crate) const PAGE_LEN: usize = 1 << PAGE_BITS;

pub(crate) type PMap<K, V> =
    imbl::GenericHashMap<K, V, hashbrown::DefaultHashBuilder, imbl::shared_ptr::DefaultSharedPtr>;
pub(crate) type PSet<T> = imbl::OrdSet<T>;

pub(crate) fn pmap<K, V>() -> PMap<K, V> {
    PMap::with_hasher(hashbrown::DefaultHashBuilder::default())
}

/// How many independently shared shards the id → slot index has.
const ID_SHARDS: usize = 64;

/// The id → slot map for ids not stored at slot `id - 1`, split into shards behind `Arc`:
/// cloning it copies 64 pointers, and a write after a snapshot copies one shard.
#[derive(Clone)]
pub(crate) struct IdIndex {
    shards: Vec<Arc<hashbrown::HashMap<InstanceId, Slot>>>,
    len: usize,
}

impl IdIndex {
    fn new() -> Self {
        Self {
            shards: (0..ID_SHARDS).map(|_| Arc::default()).collect(),
            len: 0,
        }
    }

    fn shard(id: InstanceId) -> usize {
        // Fibonacci hashing: ids are counter values, so multiply to spread them over shards.
        (id.get().wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58) as usize
    }

    fn get(&self, id: InstanceId) -> Option<Slot> {
        if self.len == 0 {
            return None;
        }
        self.shards[Self::shard(id)].get(&id).copied()
    }

    fn insert(&mut self, id: InstanceId, slot: Slot) {
        if Arc::make_mut(&mut self.shards[Self::shard(id)])
            .insert(id, slot)
            .is_none()
        {
            self.len += 1;
        }
    }

    fn remove(&mut self, id: InstanceId) {
        let shard = &mut self.shards[Self::shard(id)];
        if shard.contains_key(&id) && Arc::make_mut(shard).remove(&id).is_some() {
            self.len -= 1;
        }
    }
}

/// A fixed-size run of slots.
#[derive(Clone)]
pub(crate) struct Page {
    slots: Box<[Option<Arc<Node>>]>,
}

impl Page {
    fn new() -> Self {
        Self {
            slots: vec![None; PAGE_LEN].into_boxed_slice(),
        }
    }
}

fn split(slot: Slot) -> (usize, usize) {
    (slot.index() >> PAGE_BITS, slot.index() & (PAGE_LEN - 1))
}

/// An immutable view of arena state: nodes (live and tombstones), indexes and revisions.
///
/// `Arena::snapshot` returns one; the live `Arena` dereferences to its own current snapshot, so
/// every read method here works on both. A snapshot never changes after later writes to the arena
/// it came from, and carries no pending events or journals.
#[derive(Clone)]
pub struct Snapshot {
    /// The identity of the arena this state belongs to; snapshots keep it.
    arena_id: ArenaId,
    pub(crate) pages: Vec<Arc<Page>>,
    pub(crate) slot_len: u32,
    pub(crate) id_map: IdIndex,
    pub(crate) live: usize,
    pub(crate) tombstones: usize,
    pub(crate) classes: Arc<ClassRegistry>,
    pub(crate) revisions: Revisions,
    pub(crate) tag_index: PMap<Arc<str>, PSet<InstanceId>>,
    pub(crate) persistent_index: PMap<PersistentId, InstanceId>,
    pub(crate) layouts: PMap<InstanceId, Revision>,
    pub(crate) family_cache: Vec<OnceLock<Arc<[InstanceId]>>>,
    pub(crate) scope: Vec<InstanceId>,
}

impl Snapshot {
    /// The empty state of a new arena, under a fresh [`ArenaId`].
    pub(crate) fn new(classes: Arc<ClassRegistry>) -> Self {
        let families = classes.family_count();
        Self {
            arena_id: ArenaId::fresh(),
            pages: Vec::new(),
            slot_len: 0,
            id_map: IdIndex::new(),
            live: 0,
            tombstones: 0,
            classes,
            revisions: Revisions::default(),
            tag_index: pmap(),
            persistent_index: pmap(),
            layouts: pmap(),
            family_cache: (0..families).map(|_| OnceLock::new()).collect(),
            scope: Vec::new(),
        }
    }

    // ----- Raw slot access (tombstones included). -----

    pub(crate) fn node_at(&self, slot: Slot) -> Option<&Node> {
        let (page, index) = split(slot);
        self.pages.get(page)?.slots[index].as_deref()
    }

    /// Resolves an id to its slot and node, tombstones included.
    pub(crate) fn find(&self, id: InstanceId) -> Option<(Slot, &Node)> {
        let guess = id.get() - 1;
        if guess < u64::from(self.slot_len) {
            let slot = Slot(guess as u32);
            if let Some(node) = self.node_at(slot)
                && node.id == id
            {
                return Some((slot, node));
            }
        }
        let slot = self.id_map.get(id)?;
        let node = self.node_at(slot)?;
        (node.id == id).then_some((slot, node))
    }

    /// Resolves a live id to its slot, with the reason when it is not live.
    pub(crate) fn live_slot(&self, id: InstanceId) -> Result<Slot, ArenaError> {
        match self.find(id) {
            Some((slot, node)) if !node.is_destroyed() => Ok(slot),
            Some(_) => Err(ArenaError::DestroyedInstance(id)),
            None => Err(ArenaError::UnknownInstance(id)),
        }
    }

    pub(crate) fn live_node(&self, id: InstanceId) -> Result<&Node, ArenaError> {
        let slot = self.live_slot(id)?;
        Ok(self
            .node_at(slot)
            .expect("live_slot returned an occupied slot"))
    }

    /// Makes the node at `slot` private to this snapshot and returns it for writing.
    pub(crate) fn write_at(&mut self, slot: Slot) -> &mut Node {
        let (page, index) = split(slot);
        let page = Arc::make_mut(&mut self.pages[page]);
        let node = page.slots[index]
            .as_mut()
            .expect("write_at is only called on occupied slots");
        Arc::make_mut(node)
    }

    pub(crate) fn place(&mut self, slot: Slot, node: Node) {
        let (page, index) = split(slot);
        while self.pages.len() <= page {
            self.pages.push(Arc::new(Page::new()));
        }
        if slot.0 + 1 > self.slot_len {
            self.slot_len = slot.0 + 1;
        }
        if u64::from(slot.0) + 1 != node.id.get() {
            self.id_map.insert(node.id, slot);
        }
        Arc::make_mut(&mut self.pages[page]).slots[index] = Some(Arc::new(node));
    }

    /// Empties a slot and forgets its id. Returns the node that was there.
    pub(crate) fn vacate(&mut self, slot: Slot) -> Option<Arc<Node>> {
        let (page, index) = split(slot);
        let page = Arc::make_mut(self.pages.get_mut(page)?);
        let node = page.slots[index].take()?;
        if u64::from(slot.0) + 1 != node.id.get() {
            self.id_map.remove(node.id);
        }
        Some(node)
    }

    /// Shrinks the slot high-water mark (construction rollback of appended slots).
    pub(crate) fn truncate_slots(&mut self, slot_len: u32) {
        self.slot_len = slot_len;
        let pages = (slot_len as usize).div_ceil(PAGE_LEN);
        self.pages.truncate(pages);
    }

    pub(crate) fn class_of(&self, class: ClassId) -> &ClassDescriptor {
        self.classes
            .get(class)
            .expect("nodes only carry classes of their arena's registry")
    }

    /// Gives every registered family a cache cell (after the registry grew).
    pub(crate) fn sync_family_cache(&mut self) {
        let families = self.classes.family_count();
        self.family_cache.resize_with(families, OnceLock::new);
    }

    pub(crate) fn invalidate_family(&mut self, family: FamilyId) {
        if let Some(cell) = self.family_cache.get_mut(family.index()) {
            cell.take();
        }
    }

    // ----- Public reads. -----

    /// The node of a live instance, or of a tombstone inside an open lifecycle scope.
    pub fn get(&self, id: InstanceId) -> Option<&Node> {
        let (_, node) = self.find(id)?;
        if !node.is_destroyed() || self.in_scope(node) {
            Some(node)
        } else {
            None
        }
    }

    /// Like [`Snapshot::get`], with the reason when the node is not readable.
    pub fn node(&self, id: InstanceId) -> Result<&Node, ArenaError> {
        match self.find(id) {
            Some((_, node)) if !node.is_destroyed() || self.in_scope(node) => Ok(node),
            Some(_) => Err(ArenaError::DestroyedInstance(id)),
            None => Err(ArenaError::UnknownInstance(id)),
        }
    }

    /// Whether the id names a live (not destroyed) instance.
    pub fn is_live(&self, id: InstanceId) -> bool {
        matches!(self.find(id), Some((_, node)) if !node.is_destroyed())
    }

    /// The physical slot of a live instance or tombstone; `None` once reclaimed.
    pub fn slot_of(&self, id: InstanceId) -> Option<Slot> {
        self.find(id).map(|(slot, _)| slot)
    }

    /// The id held at a slot (live or tombstone).
    pub fn id_at(&self, slot: Slot) -> Option<InstanceId> {
        self.node_at(slot).map(Node::id)
    }

    /// The parent of a readable instance.
    pub fn parent(&self, id: InstanceId) -> Option<InstanceId> {
        self.get(id)?.parent
    }

    /// The class of a readable instance.
    pub fn class(&self, id: InstanceId) -> Option<ClassId> {
        self.get(id).map(Node::class)
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
            next: self.get(id).and_then(|n| n.first_child),
        }
    }

    /// The descendants of a readable instance in pre-order, excluding the instance itself.
    pub fn descendants(&self, id: InstanceId) -> Descendants<'_> {
        Descendants {
            snapshot: self,
            root: id,
            next: self.get(id).and_then(|n| n.first_child),
        }
    }

    /// The ancestors of a readable instance, nearest first.
    pub fn ancestors(&self, id: InstanceId) -> Ancestors<'_> {
        Ancestors {
            snapshot: self,
            next: self.get(id).and_then(|n| n.parent),
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
    pub fn iter(&self) -> impl Iterator<Item = &Node> + '_ {
        self.pages
            .iter()
            .flat_map(|page| page.slots.iter())
            .filter_map(|slot| slot.as_deref())
            .filter(|node| !node.is_destroyed())
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
            .iter()
            .filter(|node| self.class_of(node.class).families().contains(family))
            .map(Node::id)
            .collect();
        members.sort_unstable();
        members.into()
    }

    /// Compares two snapshots of the same arena by node identity. A node whose pointer differs
    /// is reported as changed even if its values were later restored; pages shared by both
    /// snapshots are skipped without looking at their nodes.
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
                fn live(page: Option<&Arc<Page>>, index: usize) -> Option<&Arc<Node>> {
                    page.and_then(|p| p.slots[index].as_ref())
                        .filter(|n| !n.is_destroyed())
                }
                match (live(new_page, index), live(old_page, index)) {
                    (Some(a), Some(b)) if a.id == b.id => {
                        if !Arc::ptr_eq(a, b) {
                            diff.changed.push(a.id);
                        }
                    }
                    (a, b) => {
                        if let Some(a) = a {
                            diff.added.push(a.id);
                        }
                        if let Some(b) = b {
                            diff.removed.push(b.id);
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
    fn in_scope(&self, node: &Node) -> bool {
        if self.scope.is_empty() {
            return false;
        }
        let mut current = node;
        loop {
            if self.scope.contains(&current.id) {
                return true;
            }
            match current.parent.and_then(|p| self.find(p)) {
                Some((_, parent)) if parent.is_destroyed() => current = parent,
                _ => return false,
            }
        }
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
    /// Live in both, with different node pointers: possibly changed.
    pub changed: Vec<InstanceId>,
    /// Live only in the newer snapshot.
    pub added: Vec<InstanceId>,
    /// Live only in the older snapshot.
    pub removed: Vec<InstanceId>,
}

/// The children of an instance, in order.
pub struct Children<'a> {
    snapshot: &'a Snapshot,
    next: Option<InstanceId>,
}

impl Iterator for Children<'_> {
    type Item = InstanceId;

    fn next(&mut self) -> Option<InstanceId> {
        let id = self.next?;
        self.next = self.snapshot.find(id).and_then(|(_, n)| n.next_sibling);
        Some(id)
    }
}

impl FusedIterator for Children<'_> {}

/// The descendants of an instance in pre-order, walked through the sibling links without a stack.
pub struct Descendants<'a> {
    snapshot: &'a Snapshot,
    root: InstanceId,
    next: Option<InstanceId>,
}

impl Iterator for Descendants<'_> {
    type Item = InstanceId;

    fn next(&mut self) -> Option<InstanceId> {
        let id = self.next?;
        self.next = successor(self.snapshot, self.root, id);
        Some(id)
    }
}

impl FusedIterator for Descendants<'_> {}

/// The pre-order successor of `id` inside the subtree of `root`.
pub(crate) fn successor(
    snapshot: &Snapshot,
    root: InstanceId,
    id: InstanceId,
) -> Option<InstanceId> {
    let (_, node) = snapshot.find(id)?;
    if let Some(child) = node.first_child {
        return Some(child);
    }
    let mut current = node;
    loop {
        if current.id == root {
            return None;
        }
        if let Some(sibling) = current.next_sibling {
            return Some(sibling);
        }
        current = snapshot.find(current.parent?)?.1;
    }
}

/// The ancestors of an instance, nearest first.
pub struct Ancestors<'a> {
    snapshot: &'a Snapshot,
    next: Option<InstanceId>,
}

impl Iterator for Ancestors<'_> {
    type Item = InstanceId;

    fn next(&mut self) -> Option<InstanceId> {
        let id = self.next?;
        self.next = self.snapshot.find(id).and_then(|(_, n)| n.parent);
        Some(id)
    }
}

impl FusedIterator for Ancestors<'_> {}
