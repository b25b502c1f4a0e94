//! `Node`: a read-only view of one instance in a snapshot.
//!
//! Invariant: a `Node` borrows the snapshot it was read from and the record stored there, so it
//! shows exactly that snapshot's state. Data the record does not hold itself (name, attributes
//! and state of a node still at its class's defaults, and the GUID, derived from the creation
//! counter and the arena's seed) is read through the snapshot, never copied into the record.

use std::fmt;
use std::sync::Arc;

use crate::class::ClassId;
use crate::id::{Guid, InstanceId, PersistentId};
use crate::revision::Revision;
use crate::snapshot::{Record, Snapshot};
use crate::state::{Attributes, BuiltinState, NodeData};

/// One instance of the hierarchy as a snapshot (or the arena) holds it.
///
/// A `Node` is a small copyable view; the references its methods return live as long as the
/// snapshot it came from.
#[derive(Clone, Copy)]
pub struct Node<'a> {
    snapshot: &'a Snapshot,
    record: &'a Record,
}

impl<'a> Node<'a> {
    pub(crate) fn new(snapshot: &'a Snapshot, record: &'a Record) -> Self {
        Self { snapshot, record }
    }

    /// The runtime id.
    pub fn id(self) -> InstanceId {
        self.record.id()
    }

    /// The class.
    pub fn class(self) -> ClassId {
        self.record.class()
    }

    /// The GUID given at creation.
    pub fn guid(self) -> Guid {
        self.snapshot
            .kept_guid_of(self.record)
            .unwrap_or_else(|| self.snapshot.guid_of(self.record.guid_counter()))
    }

    /// The persistent id, if one was assigned.
    pub fn persistent_id(self) -> Option<PersistentId> {
        self.snapshot.persistent_id_of(self.record)
    }

    /// The parent. `None` for roots, unparented instances and destroyed subtree roots.
    pub fn parent(self) -> Option<InstanceId> {
        self.snapshot.parent_of(self.record)
    }

    /// How many children the node has.
    pub fn child_count(self) -> usize {
        self.record.child_count() as usize
    }

    /// The clock value of the latest write to this node's state.
    pub fn revision(self) -> Revision {
        self.record.revision()
    }

    /// Whether the node has been destroyed (it is then a tombstone).
    pub fn is_destroyed(self) -> bool {
        self.record.is_destroyed()
    }

    /// Whether the node's parent is locked: it cannot be reparented or destroyed.
    pub fn is_parent_locked(self) -> bool {
        self.record.is_parent_locked()
    }

    /// Whether the node is inside a world container.
    pub fn is_in_world(self) -> bool {
        self.record.is_in_world()
    }

    /// The display name.
    pub fn name(self) -> &'a str {
        &self.data().name
    }

    /// The attributes.
    pub fn attributes(self) -> &'a Attributes {
        &self.data().attributes
    }

    /// The built-in state.
    pub fn state(self) -> &'a BuiltinState {
        &self.data().state
    }

    /// Name, attributes and state together.
    pub fn data(self) -> &'a NodeData {
        self.snapshot.data_of(self.record)
    }

    /// The node's tags, in the order they were added.
    pub fn tags(self) -> &'a [Arc<str>] {
        self.snapshot.tags_of(self.record)
    }
}

impl fmt::Debug for Node<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Node")
            .field("id", &self.id())
            .field("class", &self.class())
            .field("parent", &self.parent())
            .field("child_count", &self.child_count())
            .field("revision", &self.revision())
            .field("destroyed", &self.is_destroyed())
            .field("in_world", &self.is_in_world())
            .field("data", self.data())
            .finish_non_exhaustive()
    }
}
