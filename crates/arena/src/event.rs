//! Queued instance events and journal entries.
//!
//! Invariant: every event describing a subtree shares one collected id list (`MovedIds`) and
//! one ancestor chain (`Lineage`) instead of copying them per event; lists are ordered pre-order
//! from the subtree root, and lineages nearest ancestor first.

use std::sync::Arc;

use crate::id::{InstanceId, Slot};

/// A list of ancestors, nearest first, shared between events.
pub type Lineage = Arc<[InstanceId]>;

/// The instances a structural change affected, pre-order from the subtree root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MovedIds {
    /// A single instance without descendants (no allocation).
    One(InstanceId),
    /// A subtree, shared by every event of the change.
    Many(Arc<[InstanceId]>),
}

impl MovedIds {
    /// The ids, subtree root first.
    pub fn as_slice(&self) -> &[InstanceId] {
        match self {
            MovedIds::One(id) => std::slice::from_ref(id),
            MovedIds::Many(ids) => ids,
        }
    }

    /// The root of the affected subtree.
    pub fn root(&self) -> InstanceId {
        self.as_slice()[0]
    }

    /// How many instances were affected.
    pub fn len(&self) -> usize {
        self.as_slice().len()
    }

    /// Always false: a change affects at least its root.
    pub fn is_empty(&self) -> bool {
        false
    }

    pub(crate) fn from_vec(ids: Vec<InstanceId>) -> Self {
        if ids.len() == 1 {
            MovedIds::One(ids[0])
        } else {
            MovedIds::Many(ids.into())
        }
    }
}

/// An event queued by the arena and returned by `Arena::drain`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// An instance was created (or inserted with a given id), as the last child of `parent`.
    /// Creation queues no separate attach events: this one implies them.
    Created {
        /// The new instance.
        id: InstanceId,
        /// Its parent at creation.
        parent: Option<InstanceId>,
    },
    /// `count` instances with consecutive ids from `first` were created, appended in id order
    /// under `parent`: by `Arena::create_many`, or by single creations that followed one
    /// another with nothing else queued between them.
    CreatedRange {
        /// The first new id.
        first: InstanceId,
        /// How many.
        count: u32,
        /// Their parent at creation.
        parent: Option<InstanceId>,
    },
    /// The instances of one reservation that is not a contiguous run of ids were published
    /// (`Arena::publish`), appended in list order under `parent`. A published contiguous run is
    /// announced as a `CreatedRange`.
    CreatedList {
        /// The new ids, in child order.
        ids: Arc<[InstanceId]>,
        /// Their parent at creation.
        parent: Option<InstanceId>,
    },
    /// A subtree is leaving the descendants of every listed ancestor.
    DescendantRemoving {
        /// The old ancestors, nearest first.
        ancestors: Lineage,
        /// The subtree that moved.
        moved: MovedIds,
    },
    /// A child left its parent.
    ChildRemoved {
        /// The old parent.
        parent: InstanceId,
        /// The child that left.
        child: InstanceId,
    },
    /// A child joined a parent.
    ChildAdded {
        /// The new parent.
        parent: InstanceId,
        /// The child that joined.
        child: InstanceId,
    },
    /// The ancestry of every listed instance changed.
    AncestryChanged {
        /// The subtree that moved.
        moved: MovedIds,
    },
    /// A subtree joined the descendants of every listed ancestor.
    DescendantAdded {
        /// The new ancestors, nearest first.
        ancestors: Lineage,
        /// The subtree that moved.
        moved: MovedIds,
    },
    /// A subtree was destroyed. Its nodes stay readable as tombstones, through a lifecycle
    /// scope, until the drain after the one that returned this event.
    Destroyed {
        /// The subtree, root first.
        subtree: MovedIds,
    },
    /// Several subtrees were destroyed in one step (`Arena::destroy_many`). This one event
    /// stands for everything `destroy` would have queued for each root: its removal from its
    /// parent (`DescendantRemoving`, `ChildRemoved`) and its `Destroyed`. The nodes stay
    /// readable as tombstones until the drain after the one that returned this event.
    DestroyedMany(Arc<DestroyedBatch>),
}

/// An entry of the topology journal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TopologyChange {
    /// An instance was allocated.
    Created {
        /// The new instance.
        id: InstanceId,
        /// Its parent at creation.
        parent: Option<InstanceId>,
    },
    /// Instances with consecutive ids were allocated together.
    CreatedRange {
        /// The first new id.
        first: InstanceId,
        /// How many.
        count: u32,
        /// Their parent at creation.
        parent: Option<InstanceId>,
    },
    /// An instance moved, with its subtree.
    Reparented {
        /// The moved root.
        id: InstanceId,
        /// The old parent.
        from: Option<InstanceId>,
        /// The new parent.
        to: Option<InstanceId>,
    },
    /// A subtree was destroyed.
    Destroyed {
        /// The subtree, root first.
        subtree: MovedIds,
    },
    /// The instances of one published reservation that is not a contiguous run of ids were
    /// allocated together (a contiguous run is journaled as `CreatedRange`).
    CreatedList {
        /// The new ids, in child order.
        ids: Arc<[InstanceId]>,
        /// Their parent at creation.
        parent: Option<InstanceId>,
    },
    /// Several subtrees were destroyed in one step; it shares its description with the
    /// `Event::DestroyedMany` of the same change.
    DestroyedMany(Arc<DestroyedBatch>),
}

/// What one `Arena::destroy_many` destroyed, shared by its event and its journal entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DestroyedBatch {
    /// Each destroyed subtree root with the parent it left (`None` for a root without one), in
    /// the order `destroy_many` documents.
    pub roots: Vec<(InstanceId, Option<InstanceId>)>,
    /// Every destroyed instance: each root's subtree in pre-order, root first, roots in order.
    pub destroyed: Vec<InstanceId>,
}

/// Why an instance appears in the part-write log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PartWriteKind {
    /// Its state was (or may have been) written while it was in the world.
    State,
    /// It entered the world.
    EnteredWorld,
    /// It left the world (moved out, or destroyed).
    LeftWorld,
}

/// An entry of the part-write log. The same instance can appear many times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PartWrite {
    /// The part or model.
    pub id: InstanceId,
    /// What happened to it.
    pub kind: PartWriteKind,
}

/// One instance handed to hook consumers (the component store) on destruction and reclamation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Doomed {
    /// The destroyed instance.
    pub id: InstanceId,
    /// The slot it occupies until reclamation.
    pub slot: Slot,
}
