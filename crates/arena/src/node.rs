//! One instance: its identity, hierarchy links, flags, tags and data.
//!
//! Invariant: the hierarchy is stored twice and kept symmetric by the arena: `parent` on the
//! child, and an ordered, doubly linked sibling list hanging off the parent (`first_child`,
//! `last_child`, `prev_sibling`, `next_sibling`, `child_count`). Only the arena changes links and
//! flags; generic mutable access (`NodeMut`) reaches the name, the attributes and the fields of
//! the built-in state struct alone.

use std::sync::Arc;

use crate::class::ClassId;
use crate::id::{Guid, InstanceId, PersistentId};
use crate::revision::Revision;
use crate::state::{Attributes, BuiltinState, NodeData};

const DESTROYED: u8 = 1;
const PARENT_LOCKED: u8 = 1 << 1;
const IN_WORLD: u8 = 1 << 2;

/// One instance of the hierarchy, shared between snapshots until written.
#[derive(Clone, Debug)]
pub struct Node {
    pub(crate) id: InstanceId,
    pub(crate) class: ClassId,
    pub(crate) guid: Guid,
    pub(crate) persistent_id: Option<PersistentId>,
    pub(crate) parent: Option<InstanceId>,
    pub(crate) first_child: Option<InstanceId>,
    pub(crate) last_child: Option<InstanceId>,
    pub(crate) prev_sibling: Option<InstanceId>,
    pub(crate) next_sibling: Option<InstanceId>,
    pub(crate) child_count: u32,
    pub(crate) flags: u8,
    pub(crate) revision: Revision,
    pub(crate) tags: Box<[Arc<str>]>,
    pub(crate) data: NodeData,
}

impl Node {
    pub(crate) fn new(
        id: InstanceId,
        class: ClassId,
        guid: Guid,
        data: NodeData,
        revision: Revision,
    ) -> Self {
        Self {
            id,
            class,
            guid,
            persistent_id: None,
            parent: None,
            first_child: None,
            last_child: None,
            prev_sibling: None,
            next_sibling: None,
            child_count: 0,
            flags: 0,
            revision,
            tags: Box::default(),
            data,
        }
    }

    /// The runtime id.
    pub fn id(&self) -> InstanceId {
        self.id
    }

    /// The class.
    pub fn class(&self) -> ClassId {
        self.class
    }

    /// The GUID given at creation.
    pub fn guid(&self) -> Guid {
        self.guid
    }

    /// The persistent id, if one was assigned.
    pub fn persistent_id(&self) -> Option<PersistentId> {
        self.persistent_id
    }

    /// The parent. `None` for roots, unparented instances and destroyed subtree roots.
    pub fn parent(&self) -> Option<InstanceId> {
        self.parent
    }

    /// How many children the node has.
    pub fn child_count(&self) -> usize {
        self.child_count as usize
    }

    /// The clock value of the latest write to this node's state.
    pub fn revision(&self) -> Revision {
        self.revision
    }

    /// Whether the node has been destroyed (it is then a tombstone).
    pub fn is_destroyed(&self) -> bool {
        self.flags & DESTROYED != 0
    }

    /// Whether the node's parent is locked: it cannot be reparented or destroyed.
    pub fn is_parent_locked(&self) -> bool {
        self.flags & PARENT_LOCKED != 0
    }

    /// Whether the node is inside a world container.
    pub fn is_in_world(&self) -> bool {
        self.flags & IN_WORLD != 0
    }

    /// The display name.
    pub fn name(&self) -> &str {
        &self.data.name
    }

    /// The attributes.
    pub fn attributes(&self) -> &Attributes {
        &self.data.attributes
    }

    /// The built-in state.
    pub fn state(&self) -> &BuiltinState {
        &self.data.state
    }

    /// Name, attributes and state together.
    pub fn data(&self) -> &NodeData {
        &self.data
    }

    /// The node's tags, in the order they were added.
    pub fn tags(&self) -> &[Arc<str>] {
        &self.tags
    }

    pub(crate) fn set_flag(&mut self, flag: NodeFlag, on: bool) {
        let bit = flag as u8;
        if on {
            self.flags |= bit;
        } else {
            self.flags &= !bit;
        }
    }
}

/// The flags only the arena may change.
#[derive(Clone, Copy, Debug)]
#[repr(u8)]
pub(crate) enum NodeFlag {
    Destroyed = DESTROYED,
    ParentLocked = PARENT_LOCKED,
    InWorld = IN_WORLD,
}
