//! `Record`: one node as a page stores it, inline, and `Cold`, the node data most instances
//! never move away from their class's defaults.
//!
//! A record holds what every node has and what structural changes touch: identity, class,
//! hierarchy links (as slots of the same snapshot, so walking the tree never looks an id up),
//! flags, the revision of its latest state write, and the creation counter its GUID derives
//! from. Name, attributes, built-in state, tags and persistent id live in `Cold`,
//! behind one shared pointer that stays empty while they are all at their defaults (the class
//! name, no attributes, the class's default state, no tags, no persistent id), so an instance
//! nobody has written costs its record and nothing else.
//!
//! Invariant: the hierarchy links and the flags that other state depends on (destroyed: the
//! live and tombstone counts; tags and persistent id: the snapshot's indexes) are written only
//! inside the `snapshot` module, which keeps the links symmetric and the indexes in step;
//! the rest of the crate reads them through getters and writes only the world and lock flags,
//! the revision and the node data.

use std::sync::Arc;

use crate::class::ClassId;
use crate::id::{Guid, InstanceId, PersistentId, Slot};
use crate::revision::Revision;
use crate::state::NodeData;

const DESTROYED: u8 = 1;
const PARENT_LOCKED: u8 = 1 << 1;
const IN_WORLD: u8 = 1 << 2;
/// The record's page holds cold data for it (see `Page`).
const HAS_COLD: u8 = 1 << 3;

/// A link to the node at another slot of the same snapshot, or to none.
///
/// A link never outlives the node it points to: links between live nodes are rewritten by every
/// structural change, a destroyed subtree is detached from the live tree and reclaimed as a
/// whole, and a rollback unlinks what it removes, so a linked slot is never vacant or reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Link(u32);

impl Link {
    /// No node. `u32::MAX` is never a slot: the arena refuses to grow past `u32::MAX` slots.
    pub(super) const NONE: Self = Self(u32::MAX);

    pub(super) fn to(slot: Slot) -> Self {
        Self(slot.0)
    }

    pub(super) fn from(slot: Option<Slot>) -> Self {
        slot.map_or(Self::NONE, Self::to)
    }

    pub(super) fn get(self) -> Option<Slot> {
        (self != Self::NONE).then_some(Slot(self.0))
    }
}

/// The data of a node that has left its class's defaults, shared between snapshots until
/// written.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Cold {
    pub(crate) data: NodeData,
    pub(super) tags: Box<[Arc<str>]>,
    pub(super) persistent_id: Option<PersistentId>,
    /// The GUID of an instance rebuilt from an image, which keeps the GUID it had; `None` for
    /// every instance this arena created, whose GUID derives from its creation counter.
    pub(super) guid: Option<Guid>,
}

impl Cold {
    /// Cold data holding `data`, with no tags, no persistent id and a derived GUID.
    pub(crate) fn new(data: NodeData) -> Self {
        Self {
            data,
            tags: Box::default(),
            persistent_id: None,
            guid: None,
        }
    }
}

/// One node, stored inline in its page. Plain data: its cold data, when it has any, sits beside
/// it in its page (flagged here), so a page of records copies as one block.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Record {
    pub(super) id: InstanceId,
    pub(super) revision: Revision,
    /// The creation counter the GUID derives from (`Snapshot::guid_of`).
    pub(super) guid_counter: u64,
    pub(super) parent: Link,
    pub(super) first_child: Link,
    pub(super) last_child: Link,
    pub(super) prev_sibling: Link,
    pub(super) next_sibling: Link,
    pub(super) child_count: u32,
    pub(super) class: ClassId,
    pub(super) flags: u8,
}

impl Record {
    /// An unlinked, live record, without cold data (its page gives it any when it is placed).
    pub(crate) fn new(
        id: InstanceId,
        class: ClassId,
        guid_counter: u64,
        revision: Revision,
    ) -> Self {
        Self {
            id,
            revision,
            guid_counter,
            parent: Link::NONE,
            first_child: Link::NONE,
            last_child: Link::NONE,
            prev_sibling: Link::NONE,
            next_sibling: Link::NONE,
            child_count: 0,
            class,
            flags: 0,
        }
    }

    pub(crate) fn id(&self) -> InstanceId {
        self.id
    }

    pub(crate) fn class(&self) -> ClassId {
        self.class
    }

    pub(crate) fn revision(&self) -> Revision {
        self.revision
    }

    pub(crate) fn guid_counter(&self) -> u64 {
        self.guid_counter
    }

    /// Whether the record's page holds cold data for it.
    pub(crate) fn has_cold(&self) -> bool {
        self.flags & HAS_COLD != 0
    }

    pub(super) fn set_has_cold(&mut self, on: bool) {
        self.set_flag(HAS_COLD, on);
    }

    /// The slot of the parent.
    pub(crate) fn parent(&self) -> Option<Slot> {
        self.parent.get()
    }

    /// The slot of the first child.
    pub(crate) fn first_child(&self) -> Option<Slot> {
        self.first_child.get()
    }

    /// The slot of the next sibling.
    pub(crate) fn next_sibling(&self) -> Option<Slot> {
        self.next_sibling.get()
    }

    pub(crate) fn child_count(&self) -> u32 {
        self.child_count
    }

    pub(crate) fn is_destroyed(&self) -> bool {
        self.flags & DESTROYED != 0
    }

    pub(crate) fn is_parent_locked(&self) -> bool {
        self.flags & PARENT_LOCKED != 0
    }

    pub(crate) fn is_in_world(&self) -> bool {
        self.flags & IN_WORLD != 0
    }

    pub(crate) fn set_in_world(&mut self, on: bool) {
        self.set_flag(IN_WORLD, on);
    }

    pub(crate) fn set_parent_locked(&mut self, on: bool) {
        self.set_flag(PARENT_LOCKED, on);
    }

    /// Records a state write at `at`.
    pub(crate) fn set_revision(&mut self, at: Revision) {
        self.revision = at;
    }

    /// Marks the record destroyed (and its parent locked: a tombstone never moves).
    pub(super) fn set_destroyed(&mut self) {
        self.set_flag(DESTROYED | PARENT_LOCKED, true);
    }

    fn set_flag(&mut self, bits: u8, on: bool) {
        if on {
            self.flags |= bits;
        } else {
            self.flags &= !bits;
        }
    }

    /// Whether two records of one slot in two snapshots hold equal fields (the caller compares
    /// their cold data, see `Page::same_cold`).
    pub(super) fn unchanged_from(&self, older: &Record) -> bool {
        self.id == older.id
            && self.revision == older.revision
            && self.guid_counter == older.guid_counter
            && self.parent == older.parent
            && self.first_child == older.first_child
            && self.last_child == older.last_child
            && self.prev_sibling == older.prev_sibling
            && self.next_sibling == older.next_sibling
            && self.child_count == older.child_count
            && self.class == older.class
            && self.flags == older.flags
    }
}
