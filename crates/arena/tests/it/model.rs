//! Model-based property test: random operation sequences run against the arena and against a
//! plain reference model (maps and vectors), comparing the two after every step.
//!
//! The model tracks, per id ever issued: class, name, parent, ordered children, tags, status
//! (live, destroyed, reclaimed), physical slot and the last observed node revision. It also
//! tracks the two reclamation queues, the free slots, the slot high-water mark and the expected
//! pending event stream. Every stored snapshot keeps the model copy taken with it and is
//! re-checked after every later operation.
//!
//! Construction batches are part of the run: while one is open the model expects destruction,
//! draining and writes to instances that predate it to be refused; a rollback restores the
//! model kept at its checkpoint, except that ids issued inside the batch stay retired (they
//! never resolve again), and the arena must have moved its clock, the revision domains the
//! batch touched and its journal heads forward. Checkpoints closed by closing an outer batch
//! are kept and tried again later: they must be refused as stale.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Debug;
use std::sync::Arc;

use proptest::prelude::*;
use strata_arena::{
    Arena, ArenaError, Checkpoint, ClassId, Drained, Event, FamilyId, InstanceId, PartWriteKind,
    Revision, Revisions, SavePoint, Slot, Snapshot, SnapshotDiff, TopologyChange,
};

const TAGS: [&str; 3] = ["red", "green", "blue"];
const NAMES: [&str; 5] = ["A", "B", "Folder", "Part", "Lamp"];
/// Classes a random create draws from (repeats weight the draw).
const CLASSES: [ClassId; 11] = [
    ClassId::FOLDER,
    ClassId::PART,
    ClassId::PART,
    ClassId::MODEL,
    ClassId::ENTITY,
    ClassId::POINT_LIGHT,
    ClassId::POINT_LIGHT,
    ClassId::FOLDER,
    ClassId::ANIMATION,
    ClassId::WORKSPACE,
    ClassId::DATA_MODEL,
];
/// How many snapshots the harness keeps re-checking (the first one is always kept).
const MAX_STORED: usize = 6;

// ----- Reference model. -----

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Live,
    Destroyed,
    Reclaimed,
}

#[derive(Clone, Debug)]
struct MNode {
    class: ClassId,
    name: String,
    parent: Option<InstanceId>,
    children: Vec<InstanceId>,
    tags: BTreeSet<&'static str>,
    status: Status,
    slot: Slot,
    revision: Revision,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Ev {
    Created(InstanceId, Option<InstanceId>),
    DescendantRemoving(Vec<InstanceId>, Vec<InstanceId>),
    ChildRemoved(InstanceId, InstanceId),
    ChildAdded(InstanceId, InstanceId),
    AncestryChanged(Vec<InstanceId>),
    DescendantAdded(Vec<InstanceId>, Vec<InstanceId>),
    Destroyed(Vec<InstanceId>),
}

/// Events as the model lists them: one `Created` per instance, whether the arena announced a
/// creation alone or in a range (consecutive creations under one parent share one event).
fn norm_events(events: &[Event]) -> Vec<Ev> {
    events
        .iter()
        .flat_map(|event| match event {
            Event::Created { id, parent } => vec![Ev::Created(*id, *parent)],
            Event::CreatedRange {
                first,
                count,
                parent,
            } => (0..u64::from(*count))
                .map(|k| {
                    let id = InstanceId::new(first.get() + k).expect("ids of a range are non-zero");
                    Ev::Created(id, *parent)
                })
                .collect(),
            Event::CreatedList { ids, parent } => {
                ids.iter().map(|id| Ev::Created(*id, *parent)).collect()
            }
            other => vec![norm_event(other)],
        })
        .collect()
}

fn norm_event(event: &Event) -> Ev {
    match event {
        Event::Created { .. } | Event::CreatedRange { .. } | Event::CreatedList { .. } => {
            unreachable!("creations are expanded by norm_events")
        }
        Event::DescendantRemoving { ancestors, moved } => {
            Ev::DescendantRemoving(ancestors.to_vec(), moved.as_slice().to_vec())
        }
        Event::ChildRemoved { parent, child } => Ev::ChildRemoved(*parent, *child),
        Event::ChildAdded { parent, child } => Ev::ChildAdded(*parent, *child),
        Event::AncestryChanged { moved } => Ev::AncestryChanged(moved.as_slice().to_vec()),
        Event::DescendantAdded { ancestors, moved } => {
            Ev::DescendantAdded(ancestors.to_vec(), moved.as_slice().to_vec())
        }
        Event::Destroyed { subtree } => Ev::Destroyed(subtree.as_slice().to_vec()),
        Event::DestroyedMany(batch) => Ev::Destroyed(batch.destroyed.clone()),
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Topo {
    Created(InstanceId, Option<InstanceId>),
    CreatedRange(InstanceId, u32, Option<InstanceId>),
    Reparented(InstanceId, Option<InstanceId>, Option<InstanceId>),
    Destroyed(Vec<InstanceId>),
    CreatedList(Vec<InstanceId>, Option<InstanceId>),
}

fn norm_topology(change: &TopologyChange) -> Topo {
    match change {
        TopologyChange::Created { id, parent } => Topo::Created(*id, *parent),
        TopologyChange::CreatedRange {
            first,
            count,
            parent,
        } => Topo::CreatedRange(*first, *count, *parent),
        TopologyChange::Reparented { id, from, to } => Topo::Reparented(*id, *from, *to),
        TopologyChange::Destroyed { subtree } => Topo::Destroyed(subtree.as_slice().to_vec()),
        TopologyChange::CreatedList { ids, parent } => Topo::CreatedList(ids.to_vec(), *parent),
        TopologyChange::DestroyedMany(batch) => Topo::Destroyed(batch.destroyed.clone()),
    }
}

fn kind_rank(kind: PartWriteKind) -> u8 {
    match kind {
        PartWriteKind::State => 0,
        PartWriteKind::EnteredWorld => 1,
        PartWriteKind::LeftWorld => 2,
    }
}

fn class_name(class: ClassId) -> &'static str {
    match class {
        ClassId::DATA_MODEL => "DataModel",
        ClassId::WORKSPACE => "Workspace",
        ClassId::FOLDER => "Folder",
        ClassId::MODEL => "Model",
        ClassId::PART => "Part",
        ClassId::POINT_LIGHT => "PointLight",
        ClassId::ENTITY => "Entity",
        ClassId::ANIMATION => "Animation",
        other => panic!("class {other:?} is not used by this test"),
    }
}

/// Whether an instance of `child` may be placed under an instance of `parent`.
fn allowed(child: ClassId, parent: ClassId) -> bool {
    match child {
        ClassId::DATA_MODEL => false,
        ClassId::WORKSPACE => parent == ClassId::DATA_MODEL,
        ClassId::POINT_LIGHT => parent == ClassId::PART,
        _ => true,
    }
}

fn containment_error(child: ClassId, parent: ClassId) -> Option<ArenaError> {
    (!allowed(child, parent)).then(|| ArenaError::Containment {
        child_class: class_name(child).to_owned(),
        parent_class: class_name(parent).to_owned(),
    })
}

/// Services: created with their parent locked.
fn locked(class: ClassId) -> bool {
    class == ClassId::DATA_MODEL || class == ClassId::WORKSPACE
}

/// The refusal to move or destroy an instance of a `locked` class: a service, named.
fn service_locked(id: InstanceId, class: ClassId) -> ArenaError {
    let service = if class == ClassId::DATA_MODEL {
        "DataModel"
    } else {
        "Workspace"
    };
    ArenaError::ParentLocked {
        id,
        service: Some(service.to_owned()),
    }
}

/// Whether a class belongs to a family.
type MemberOf = fn(ClassId) -> bool;

fn is_light(class: ClassId) -> bool {
    class == ClassId::POINT_LIGHT
}

/// Classes whose creation, destruction, moves and state writes advance the animation revision.
fn is_animation(class: ClassId) -> bool {
    class == ClassId::ANIMATION
}

/// Classes recorded in the part-write log while in the world.
fn logs_parts(class: ClassId) -> bool {
    class == ClassId::PART || class == ClassId::MODEL
}

#[derive(Clone, Debug, Default)]
struct Model {
    nodes: HashMap<InstanceId, MNode>,
    /// Every id ever issued, in creation order.
    order: Vec<InstanceId>,
    /// Destroyed since the last drain.
    first_drain: Vec<InstanceId>,
    /// Reported by the last drain; released by the next one.
    second_drain: Vec<InstanceId>,
    free_slots: BTreeSet<Slot>,
    slot_len: usize,
    events: Vec<Ev>,
}

impl Model {
    fn node(&self, id: InstanceId) -> &MNode {
        &self.nodes[&id]
    }

    fn node_mut(&mut self, id: InstanceId) -> &mut MNode {
        self.nodes.get_mut(&id).expect("model id")
    }

    fn status(&self, id: InstanceId) -> Option<Status> {
        self.nodes.get(&id).map(|n| n.status)
    }

    fn is_live(&self, id: InstanceId) -> bool {
        self.status(id) == Some(Status::Live)
    }

    fn with_status(&self, status: Status) -> Vec<InstanceId> {
        self.order
            .iter()
            .copied()
            .filter(|id| self.node(*id).status == status)
            .collect()
    }

    /// The error an operation on a non-live id must return.
    fn stale_error(&self, id: InstanceId) -> Option<ArenaError> {
        match self.status(id) {
            Some(Status::Live) => None,
            Some(Status::Destroyed) => Some(ArenaError::DestroyedInstance(id)),
            Some(Status::Reclaimed) | None => Some(ArenaError::UnknownInstance(id)),
        }
    }

    /// `start` and its ancestors, nearest first.
    fn lineage(&self, start: Option<InstanceId>) -> Vec<InstanceId> {
        let mut chain = Vec::new();
        let mut next = start;
        while let Some(id) = next {
            assert!(chain.len() <= self.nodes.len(), "model cycle");
            chain.push(id);
            next = self.node(id).parent;
        }
        chain
    }

    fn is_ancestor(&self, ancestor: InstanceId, id: InstanceId) -> bool {
        self.lineage(self.node(id).parent).contains(&ancestor)
    }

    fn in_world(&self, id: InstanceId) -> bool {
        self.lineage(self.node(id).parent)
            .iter()
            .any(|a| self.node(*a).class == ClassId::WORKSPACE)
    }

    fn preorder(&self, root: InstanceId) -> Vec<InstanceId> {
        let mut out = Vec::new();
        let mut stack = vec![root];
        while let Some(id) = stack.pop() {
            out.push(id);
            stack.extend(self.node(id).children.iter().rev().copied());
        }
        out
    }

    /// Whether the tombstone `id` is readable while a lifecycle scope on `subject` is open.
    fn readable_in_scope(&self, id: InstanceId, subject: InstanceId) -> bool {
        let mut current = id;
        loop {
            if current == subject {
                return true;
            }
            match self.node(current).parent {
                Some(p) if self.node(p).status == Status::Destroyed => current = p,
                _ => return false,
            }
        }
    }

    fn live_sorted_where(&self, keep: impl Fn(&MNode) -> bool) -> Vec<InstanceId> {
        let mut ids: Vec<InstanceId> = self
            .nodes
            .iter()
            .filter(|(_, n)| n.status == Status::Live && keep(n))
            .map(|(id, _)| *id)
            .collect();
        ids.sort_unstable();
        ids
    }

    fn detach(&mut self, id: InstanceId) {
        if let Some(parent) = self.node(id).parent {
            self.node_mut(parent).children.retain(|c| *c != id);
        }
        self.node_mut(id).parent = None;
    }
}

// ----- Checks that work on any view (the arena or a stored snapshot). -----

/// Compares a view with a model. `later` lists ids issued after the view was taken (they must
/// not resolve in it); `exact_revisions` also compares per-node revisions.
fn check_view(view: &Snapshot, m: &Model, later: &[InstanceId], exact_revisions: bool, ctx: &str) {
    let mut live = 0;
    let mut tombstones = 0;
    let mut occupied: HashMap<Slot, InstanceId> = HashMap::new();
    for &id in &m.order {
        let n = m.node(id);
        match n.status {
            Status::Live => {
                live += 1;
                assert!(view.is_live(id), "{ctx}: {id} should be live");
                let node = view
                    .get(id)
                    .unwrap_or_else(|| panic!("{ctx}: live {id} does not resolve"));
                assert_eq!(node.id(), id, "{ctx}: lookup of {id} found another node");
                assert_eq!(node.class(), n.class, "{ctx}: class of {id}");
                assert_eq!(node.name(), n.name, "{ctx}: name of {id}");
                assert_eq!(node.parent(), n.parent, "{ctx}: parent of {id}");
                assert!(!node.is_destroyed(), "{ctx}: live {id} flagged destroyed");
                assert_eq!(
                    node.is_parent_locked(),
                    locked(n.class),
                    "{ctx}: parent lock of {id}"
                );
                assert_eq!(
                    node.is_in_world(),
                    m.in_world(id),
                    "{ctx}: world membership of {id}"
                );
                let children: Vec<InstanceId> = view.children(id).take(m.order.len() + 1).collect();
                assert_eq!(children, n.children, "{ctx}: children of {id}");
                assert_eq!(
                    node.child_count(),
                    n.children.len(),
                    "{ctx}: child_count of {id}"
                );
                for child in &children {
                    assert_eq!(
                        view.parent(*child),
                        Some(id),
                        "{ctx}: child {child} of {id} does not point back"
                    );
                }
                if let Some(parent) = n.parent {
                    assert!(
                        view.children(parent).any(|c| c == id),
                        "{ctx}: {id} missing from its parent's children"
                    );
                }
                let descendants: Vec<InstanceId> =
                    view.descendants(id).take(m.order.len() + 1).collect();
                assert_eq!(
                    descendants,
                    m.preorder(id)[1..],
                    "{ctx}: descendants of {id}"
                );
                let ancestors: Vec<InstanceId> =
                    view.ancestors(id).take(m.order.len() + 1).collect();
                assert!(!ancestors.contains(&id), "{ctx}: {id} is its own ancestor");
                assert_eq!(ancestors, m.lineage(n.parent), "{ctx}: ancestors of {id}");
                assert_eq!(view.slot_of(id), Some(n.slot), "{ctx}: slot of {id}");
                assert!(
                    occupied.insert(n.slot, id).is_none(),
                    "{ctx}: slot {:?} held twice",
                    n.slot
                );
                for tag in TAGS {
                    assert_eq!(
                        view.has_tag(id, tag),
                        n.tags.contains(tag),
                        "{ctx}: tag {tag} on {id}"
                    );
                }
                if exact_revisions {
                    assert_eq!(node.revision(), n.revision, "{ctx}: revision of {id}");
                }
            }
            Status::Destroyed => {
                tombstones += 1;
                assert!(!view.is_live(id), "{ctx}: destroyed {id} is live");
                assert!(view.get(id).is_none(), "{ctx}: tombstone {id} readable");
                assert_eq!(
                    view.node(id).map(|_| ()),
                    Err(ArenaError::DestroyedInstance(id)),
                    "{ctx}: node() of tombstone {id}"
                );
                assert_eq!(view.slot_of(id), Some(n.slot), "{ctx}: tombstone slot {id}");
                assert_eq!(view.children(id).count(), 0, "{ctx}: tombstone children");
                assert_eq!(view.parent(id), None, "{ctx}: tombstone parent");
                for tag in TAGS {
                    assert!(!view.has_tag(id, tag), "{ctx}: tombstone {id} tagged");
                }
                assert!(
                    occupied.insert(n.slot, id).is_none(),
                    "{ctx}: slot {:?} held twice",
                    n.slot
                );
            }
            Status::Reclaimed => {
                assert!(!view.is_live(id), "{ctx}: reclaimed {id} is live");
                assert!(view.get(id).is_none(), "{ctx}: reclaimed {id} resolves");
                assert_eq!(view.slot_of(id), None, "{ctx}: reclaimed {id} has a slot");
                assert_eq!(
                    view.node(id).map(|_| ()),
                    Err(ArenaError::UnknownInstance(id)),
                    "{ctx}: node() of reclaimed {id}"
                );
                assert_eq!(view.children(id).count(), 0, "{ctx}: reclaimed children");
            }
        }
    }
    for &id in later {
        assert!(!view.is_live(id), "{ctx}: later id {id} live in old view");
        assert!(view.get(id).is_none(), "{ctx}: later id {id} resolves");
        assert_eq!(view.slot_of(id), None, "{ctx}: later id {id} has a slot");
    }
    assert_eq!(view.live_count(), live, "{ctx}: live_count");
    assert_eq!(view.tombstone_count(), tombstones, "{ctx}: tombstone_count");
    assert_eq!(view.slot_capacity(), m.slot_len, "{ctx}: slot capacity");
    for index in 0..m.slot_len {
        let slot = Slot::from_index(u32::try_from(index).expect("small slot"));
        assert_eq!(
            view.id_at(slot),
            occupied.get(&slot).copied(),
            "{ctx}: occupant of slot {index}"
        );
    }
    let mut iterated: Vec<InstanceId> = view.iter().map(|n| n.id()).collect();
    iterated.sort_unstable();
    let unique = iterated.len();
    iterated.dedup();
    assert_eq!(iterated.len(), unique, "{ctx}: duplicate ids in iter()");
    assert_eq!(iterated, m.live_sorted_where(|_| true), "{ctx}: live ids");
    for tag in TAGS {
        let holders: Vec<InstanceId> = view.tagged(tag).collect();
        assert_eq!(
            holders,
            m.live_sorted_where(|n| n.tags.contains(tag)),
            "{ctx}: tagged({tag})"
        );
        assert_eq!(
            view.tag_count(tag),
            holders.len(),
            "{ctx}: tag_count({tag})"
        );
    }
    assert_eq!(
        view.family_members(FamilyId::PARTS).to_vec(),
        m.live_sorted_where(|n| logs_parts(n.class)),
        "{ctx}: parts family"
    );
    assert_eq!(
        view.family_members(FamilyId::LIGHTS).to_vec(),
        m.live_sorted_where(|n| n.class == ClassId::POINT_LIGHT),
        "{ctx}: lights family"
    );
    assert_eq!(
        view.family_members(FamilyId::ANIMATIONS).to_vec(),
        m.live_sorted_where(|n| is_animation(n.class)),
        "{ctx}: animations family"
    );
}

/// Expects the refusal an open construction batch gives (its message is not compared).
fn expect_batch_refusal<T: Debug>(result: Result<T, ArenaError>, ctx: &str) {
    match result {
        Err(ArenaError::BatchInProgress(_)) => {}
        other => panic!("{ctx}: expected BatchInProgress, got {other:?}"),
    }
}

fn expect_refusal<T: Debug>(result: Result<T, ArenaError>, allowed: &[ArenaError], ctx: &str) {
    match result {
        Ok(value) => panic!("{ctx}: expected one of {allowed:?}, got Ok({value:?})"),
        Err(error) => assert!(
            allowed.contains(&error),
            "{ctx}: got {error:?}, expected one of {allowed:?}"
        ),
    }
}

// ----- Operations. -----

/// How an operation picks its target from the model's current state.
#[derive(Clone, Copy, Debug)]
enum Pick {
    /// The n-th live id (modulo), or an unknown id when none is live.
    Live(usize),
    /// The n-th id ever issued, whatever its status.
    Any(usize),
    /// The n-th destroyed-not-reclaimed id (falls back to `Any`).
    Tomb(usize),
    /// An id never issued.
    Unknown,
}

#[derive(Clone, Debug)]
enum Op {
    Create {
        class: usize,
        parent: Option<Pick>,
    },
    Reparent {
        child: Pick,
        parent: Option<Pick>,
    },
    Destroy(Pick),
    Drain,
    Snapshot,
    SetName(Pick, usize),
    NodeMut(Pick, Option<usize>),
    AddTag(Pick, usize),
    RemoveTag(Pick, usize),
    Scope(Pick),
    /// Opens a construction batch.
    Checkpoint,
    /// Commits or rolls back the n-th open batch, or tries the n-th stale checkpoint.
    Close {
        pick: usize,
        rollback: bool,
    },
    /// Takes a save point (refused inside a batch).
    Save,
    /// Restores the n-th save point taken (refused inside a batch).
    Restore(usize),
}

/// The observable arena state before an operation.
struct Before {
    revisions: Revisions,
    events: usize,
    topology_head: u64,
    part_head: u64,
    next_id: u64,
    pending: usize,
    snapshot: Snapshot,
}

struct Stored {
    snapshot: Snapshot,
    model: Model,
    revisions: Revisions,
}

/// An open construction batch: its checkpoint, and the model and arena state at it.
struct OpenBatch {
    checkpoint: Checkpoint,
    model: Model,
    at: Before,
}

struct Harness {
    arena: Arena,
    model: Model,
    stored: Vec<Stored>,
    /// Creations that landed in a reclaimed slot.
    reused_slots: usize,
    /// Ids whose slot a drain released.
    reclaimed: usize,
    /// Run the full comparison after every n-th operation (1: after each).
    check_every: usize,
    /// Open construction batches, outermost first.
    batches: Vec<OpenBatch>,
    /// Checkpoints whose batch an outer close already closed.
    stale: Vec<Checkpoint>,
    /// Rollbacks of batches that had changed something.
    rollbacks: usize,
    /// Stale checkpoints refused.
    stale_refused: usize,
    /// Save points taken, with the model and the arena state at each.
    saves: Vec<(SavePoint, Model, Before)>,
    /// Restores that succeeded.
    restores: usize,
    /// The lists every other drain goes into (`Arena::drain_into`), reused from one to the
    /// next; the others return fresh lists (`Arena::drain`).
    kept: Drained,
    /// Drains made, refused ones included.
    drains: usize,
}

impl Harness {
    fn new() -> Self {
        let mut harness = Self {
            arena: Arena::standard(),
            model: Model::default(),
            stored: Vec::new(),
            reused_slots: 0,
            reclaimed: 0,
            check_every: 1,
            batches: Vec::new(),
            stale: Vec::new(),
            rollbacks: 0,
            stale_refused: 0,
            saves: Vec::new(),
            restores: 0,
            kept: Drained::default(),
            drains: 0,
        };
        let game = harness.create(ClassId::DATA_MODEL, None, "setup");
        let workspace = harness.create(ClassId::WORKSPACE, game, "setup");
        assert!(game.is_some() && workspace.is_some());
        harness.check_all("setup");
        harness
    }

    fn in_batch(&self) -> bool {
        !self.batches.is_empty()
    }

    /// Whether an open batch refuses writes to `id`: it predates the innermost batch.
    fn predates_batch(&self, id: InstanceId) -> bool {
        self.batches
            .last()
            .is_some_and(|batch| id.get() < batch.at.next_id)
    }

    fn unknown_id(&self) -> InstanceId {
        InstanceId::new(self.arena.next_id() + 1_000).expect("nonzero")
    }

    fn resolve(&self, pick: Pick) -> InstanceId {
        let from = |ids: &[InstanceId], i: usize| {
            if ids.is_empty() {
                self.unknown_id()
            } else {
                ids[i % ids.len()]
            }
        };
        match pick {
            Pick::Live(i) => from(&self.model.with_status(Status::Live), i),
            Pick::Any(i) => from(&self.model.order, i),
            Pick::Tomb(i) => {
                let tombs = self.model.with_status(Status::Destroyed);
                if tombs.is_empty() {
                    from(&self.model.order, i)
                } else {
                    from(&tombs, i)
                }
            }
            Pick::Unknown => self.unknown_id(),
        }
    }

    fn capture(&self) -> Before {
        Before {
            revisions: self.arena.revisions().clone(),
            events: self.arena.pending_events().len(),
            topology_head: self.arena.topology_journal().head(),
            part_head: self.arena.part_log().head(),
            next_id: self.arena.next_id(),
            pending: self.arena.pending_reclamation(),
            snapshot: self.arena.snapshot(),
        }
    }

    /// A refused or no-op operation: nothing observable changed.
    fn assert_unchanged(&self, b: &Before, ctx: &str) {
        assert_eq!(
            self.arena.revisions(),
            &b.revisions,
            "{ctx}: revisions moved"
        );
        assert_eq!(
            self.arena.pending_events().len(),
            b.events,
            "{ctx}: events queued"
        );
        assert_eq!(
            self.arena.topology_journal().head(),
            b.topology_head,
            "{ctx}: topology journal moved"
        );
        assert_eq!(
            self.arena.part_log().head(),
            b.part_head,
            "{ctx}: part log moved"
        );
        assert_eq!(self.arena.next_id(), b.next_id, "{ctx}: id consumed");
        assert_eq!(
            self.arena.pending_reclamation(),
            b.pending,
            "{ctx}: reclamation queue changed"
        );
        assert_eq!(
            self.arena.snapshot().diff(&b.snapshot),
            SnapshotDiff::default(),
            "{ctx}: nodes changed"
        );
        assert_eq!(self.arena.live_count(), b.snapshot.live_count(), "{ctx}");
        assert_eq!(
            self.arena.tombstone_count(),
            b.snapshot.tombstone_count(),
            "{ctx}"
        );
        assert_eq!(
            self.arena.slot_capacity(),
            b.snapshot.slot_capacity(),
            "{ctx}"
        );
    }

    fn assert_monotonic(&self, b: &Before, ctx: &str) {
        let (old, new) = (&b.revisions, self.arena.revisions());
        let pairs = [
            ("clock", old.clock(), new.clock()),
            ("topology", old.topology(), new.topology()),
            ("mutation", old.mutation(), new.mutation()),
            ("tags", old.tags(), new.tags()),
            ("collision", old.collision(), new.collision()),
            ("animation", old.animation(), new.animation()),
            ("layout", old.layout(), new.layout()),
            (
                "parts family",
                old.family(FamilyId::PARTS),
                new.family(FamilyId::PARTS),
            ),
            (
                "lights family",
                old.family(FamilyId::LIGHTS),
                new.family(FamilyId::LIGHTS),
            ),
        ];
        for (domain, before, after) in pairs {
            assert!(after >= before, "{ctx}: {domain} went back");
            assert!(after <= new.clock(), "{ctx}: {domain} ahead of clock");
        }
    }

    /// After a successful change: the clock advanced once.
    fn assert_ticked(&self, b: &Before, ctx: &str) -> Revision {
        let clock = self.arena.revisions().clock();
        assert_eq!(
            clock.get(),
            b.revisions.clock().get() + 1,
            "{ctx}: clock should advance once"
        );
        clock
    }

    /// After a successful structural change: topology advanced to the clock and the journal
    /// holds exactly the expected entry.
    fn assert_structural(&self, b: &Before, expected: Topo, ctx: &str) {
        let clock = self.assert_ticked(b, ctx);
        let revisions = self.arena.revisions();
        assert_eq!(revisions.topology(), clock, "{ctx}: topology not advanced");
        assert_eq!(
            revisions.mutation(),
            b.revisions.mutation(),
            "{ctx}: mutation moved on a structural change"
        );
        assert_eq!(
            self.arena.topology_journal().head(),
            b.topology_head + 1,
            "{ctx}: topology journal head"
        );
        let entries: Vec<Topo> = self
            .arena
            .topology_since(b.topology_head)
            .expect("journal retains recent history")
            .map(|(_, c)| norm_topology(c))
            .collect();
        assert_eq!(entries, vec![expected], "{ctx}: topology journal entry");
    }

    /// After a successful non-structural change.
    fn assert_not_structural(&self, b: &Before, ctx: &str) {
        assert_eq!(
            self.arena.revisions().topology(),
            b.revisions.topology(),
            "{ctx}: topology moved"
        );
        assert_eq!(
            self.arena.topology_journal().head(),
            b.topology_head,
            "{ctx}: topology journal moved"
        );
    }

    fn assert_part_writes(
        &self,
        b: &Before,
        mut expected: Vec<(InstanceId, PartWriteKind)>,
        ctx: &str,
    ) {
        let mut actual: Vec<(InstanceId, PartWriteKind)> = self
            .arena
            .part_writes_since(b.part_head)
            .expect("part log retains recent history")
            .map(|(_, w)| (w.id, w.kind))
            .collect();
        actual.sort_by_key(|(id, kind)| (*id, kind_rank(*kind)));
        expected.sort_by_key(|(id, kind)| (*id, kind_rank(*kind)));
        assert_eq!(actual, expected, "{ctx}: part-write log entries");
    }

    /// Family, collision and animation revisions after a change. A family must advance when
    /// `strict` and one of `touched` belongs to it, and must stay put when none does.
    /// `collision`: whether the collision revision must advance (`Some(true)`), stay
    /// (`Some(false)`), or is free. `animation`: whether the animation revision must advance.
    fn assert_side_domains(
        &self,
        b: &Before,
        touched: &[InstanceId],
        strict: bool,
        collision: Option<bool>,
        animation: bool,
        ctx: &str,
    ) {
        let (old, new) = (&b.revisions, self.arena.revisions());
        let families = [
            (FamilyId::PARTS, logs_parts as MemberOf),
            (FamilyId::LIGHTS, is_light),
            (FamilyId::ANIMATIONS, is_animation),
        ];
        for (family, member) in families {
            let hit = touched.iter().any(|id| member(self.model.node(*id).class));
            if !hit {
                assert_eq!(
                    new.family(family),
                    old.family(family),
                    "{ctx}: {family:?} revision moved without a member involved"
                );
            } else if strict {
                assert_eq!(
                    new.family(family),
                    new.clock(),
                    "{ctx}: {family:?} revision not advanced"
                );
            }
        }
        match collision {
            Some(true) => assert_eq!(new.collision(), new.clock(), "{ctx}: collision revision"),
            Some(false) => assert_eq!(new.collision(), old.collision(), "{ctx}: collision moved"),
            None => {}
        }
        if animation {
            assert_eq!(new.animation(), new.clock(), "{ctx}: animation revision");
        } else {
            assert_eq!(new.animation(), old.animation(), "{ctx}: animation moved");
        }
        assert_eq!(new.layout(), old.layout(), "{ctx}: layout moved");
    }

    fn diff_since(&self, b: &Before) -> SnapshotDiff {
        self.arena.snapshot().diff(&b.snapshot)
    }

    fn assert_changed_live(&self, diff: &SnapshotDiff, ctx: &str) {
        for id in &diff.changed {
            assert!(self.model.is_live(*id), "{ctx}: diff reports non-live {id}");
        }
    }

    // ----- Individual operations. -----

    fn create(
        &mut self,
        class: ClassId,
        parent: Option<InstanceId>,
        ctx: &str,
    ) -> Option<InstanceId> {
        let b = self.capture();
        let mut refusals = Vec::new();
        if let Some(p) = parent {
            refusals.extend(self.model.stale_error(p));
            if matches!(self.model.status(p), Some(Status::Live | Status::Destroyed)) {
                refusals.extend(containment_error(class, self.model.node(p).class));
            }
        }
        let result = self.arena.create(class, parent);
        if !refusals.is_empty() {
            expect_refusal(result, &refusals, ctx);
            self.assert_unchanged(&b, ctx);
            return None;
        }
        let id = result.unwrap_or_else(|e| panic!("{ctx}: create refused: {e:?}"));
        assert_eq!(id.get(), b.next_id, "{ctx}: ids come from the counter");
        assert_eq!(self.arena.next_id(), b.next_id + 1, "{ctx}: counter");
        let slot = self
            .arena
            .slot_of(id)
            .unwrap_or_else(|| panic!("{ctx}: new {id} has no slot"));
        if self.model.free_slots.remove(&slot) {
            self.reused_slots += 1;
        } else {
            assert_eq!(
                slot.index(),
                self.model.slot_len,
                "{ctx}: new slot is neither reclaimed nor fresh"
            );
            self.model.slot_len += 1;
        }
        let clock = self.arena.revisions().clock();
        self.model.nodes.insert(
            id,
            MNode {
                class,
                name: class_name(class).to_owned(),
                parent,
                children: Vec::new(),
                tags: BTreeSet::new(),
                status: Status::Live,
                slot,
                revision: clock,
            },
        );
        self.model.order.push(id);
        // One creation event, naming the parent; it stands for the attach events.
        self.model.events.push(Ev::Created(id, parent));
        if let Some(p) = parent {
            self.model.node_mut(p).children.push(id);
        }
        self.assert_structural(&b, Topo::Created(id, parent), ctx);
        let node = self.arena.get(id).expect("new node resolves");
        assert_eq!(node.revision(), clock, "{ctx}: new node revision");
        assert_eq!(self.arena.revisions().tags(), b.revisions.tags(), "{ctx}");
        let mut writes = Vec::new();
        if logs_parts(class) && self.model.in_world(id) {
            writes.push((id, PartWriteKind::EnteredWorld));
        }
        self.assert_part_writes(&b, writes, ctx);
        let collides = class == ClassId::PART && self.model.in_world(id);
        self.assert_side_domains(&b, &[id], true, Some(collides), is_animation(class), ctx);
        let diff = self.diff_since(&b);
        assert_eq!(diff.added, vec![id], "{ctx}: diff added");
        assert!(diff.removed.is_empty(), "{ctx}: diff removed");
        self.assert_changed_live(&diff, ctx);
        Some(id)
    }

    fn reparent(&mut self, child: InstanceId, parent: Option<InstanceId>, ctx: &str) {
        let b = self.capture();
        let result = self.arena.set_parent(child, parent);
        if self.model.is_live(child) && self.predates_batch(child) {
            expect_batch_refusal(result, ctx);
            self.assert_unchanged(&b, ctx);
            return;
        }
        if self.model.is_live(child) && self.model.node(child).parent == parent {
            assert_eq!(result, Ok(false), "{ctx}: no-op move");
            self.assert_unchanged(&b, ctx);
            return;
        }
        let mut refusals = Vec::new();
        refusals.extend(self.model.stale_error(child));
        let child_class = self
            .model
            .nodes
            .get(&child)
            .filter(|n| n.status != Status::Reclaimed)
            .map(|n| n.class);
        if self.model.is_live(child) && locked(self.model.node(child).class) {
            refusals.push(service_locked(child, self.model.node(child).class));
        }
        if let Some(p) = parent {
            refusals.extend(self.model.stale_error(p));
            if let Some(child_class) = child_class
                && matches!(self.model.status(p), Some(Status::Live | Status::Destroyed))
            {
                refusals.extend(containment_error(child_class, self.model.node(p).class));
            }
            if self.model.is_live(p)
                && self.model.is_live(child)
                && (p == child || self.model.is_ancestor(child, p))
            {
                refusals.push(ArenaError::Cycle { child, parent: p });
            }
        }
        if !refusals.is_empty() {
            expect_refusal(result, &refusals, ctx);
            self.assert_unchanged(&b, ctx);
            return;
        }
        assert_eq!(result, Ok(true), "{ctx}: valid move");
        let from = self.model.node(child).parent;
        let moved = self.model.preorder(child);
        let was_in_world = self.model.in_world(child);
        if let Some(old) = from {
            let lineage = self.model.lineage(Some(old));
            self.model
                .events
                .push(Ev::DescendantRemoving(lineage, moved.clone()));
            self.model.events.push(Ev::ChildRemoved(old, child));
        }
        self.model.detach(child);
        self.model.node_mut(child).parent = parent;
        if let Some(p) = parent {
            self.model.node_mut(p).children.push(child);
            self.model.events.push(Ev::ChildAdded(p, child));
        }
        self.model.events.push(Ev::AncestryChanged(moved.clone()));
        if let Some(p) = parent {
            let lineage = self.model.lineage(Some(p));
            self.model
                .events
                .push(Ev::DescendantAdded(lineage, moved.clone()));
        }
        self.assert_structural(&b, Topo::Reparented(child, from, parent), ctx);
        let now_in_world = self.model.in_world(child);
        let has_part = moved
            .iter()
            .any(|d| self.model.node(*d).class == ClassId::PART);
        let collides = was_in_world != now_in_world && has_part;
        let animated = moved
            .iter()
            .any(|d| is_animation(self.model.node(*d).class));
        self.assert_side_domains(&b, &moved, false, Some(collides), animated, ctx);
        let mut writes = Vec::new();
        if was_in_world != now_in_world {
            let kind = if now_in_world {
                PartWriteKind::EnteredWorld
            } else {
                PartWriteKind::LeftWorld
            };
            for id in &moved {
                if logs_parts(self.model.node(*id).class) {
                    writes.push((*id, kind));
                }
            }
        }
        self.assert_part_writes(&b, writes, ctx);
        let diff = self.diff_since(&b);
        assert!(diff.added.is_empty() && diff.removed.is_empty(), "{ctx}");
        assert!(diff.changed.contains(&child), "{ctx}: moved node unchanged");
        self.assert_changed_live(&diff, ctx);
    }

    fn destroy(&mut self, id: InstanceId, ctx: &str) {
        let b = self.capture();
        let result = self.arena.destroy(id);
        if self.in_batch() {
            expect_batch_refusal(result, ctx);
            self.assert_unchanged(&b, ctx);
            return;
        }
        let mut refusals = Vec::new();
        refusals.extend(self.model.stale_error(id));
        if self.model.is_live(id) && locked(self.model.node(id).class) {
            refusals.push(service_locked(id, self.model.node(id).class));
        }
        if !refusals.is_empty() {
            expect_refusal(result, &refusals, ctx);
            self.assert_unchanged(&b, ctx);
            return;
        }
        let destruction = result.unwrap_or_else(|e| panic!("{ctx}: destroy refused: {e:?}"));
        let moved = self.model.preorder(id);
        assert_eq!(destruction.root, id, "{ctx}: destruction root");
        let doomed: Vec<(InstanceId, Slot)> = moved
            .iter()
            .map(|d| (*d, self.model.node(*d).slot))
            .collect();
        let reported: Vec<(InstanceId, Slot)> =
            destruction.doomed.iter().map(|d| (d.id, d.slot)).collect();
        assert_eq!(reported, doomed, "{ctx}: doomed subtree");
        let was_in_world = self.model.in_world(id);
        let had_tags = moved.iter().any(|d| !self.model.node(*d).tags.is_empty());
        if let Some(parent) = self.model.node(id).parent {
            let lineage = self.model.lineage(Some(parent));
            self.model
                .events
                .push(Ev::DescendantRemoving(lineage, moved.clone()));
            self.model.events.push(Ev::ChildRemoved(parent, id));
        }
        self.model.events.push(Ev::Destroyed(moved.clone()));
        self.model.detach(id);
        for d in &moved {
            self.model.node_mut(*d).status = Status::Destroyed;
        }
        self.model.first_drain.extend(moved.iter().copied());
        self.assert_structural(&b, Topo::Destroyed(moved.clone()), ctx);
        let revisions = self.arena.revisions();
        if had_tags {
            assert_eq!(revisions.tags(), revisions.clock(), "{ctx}: tags revision");
        } else {
            assert_eq!(revisions.tags(), b.revisions.tags(), "{ctx}: tags moved");
        }
        let has_part = moved
            .iter()
            .any(|d| self.model.node(*d).class == ClassId::PART);
        let animated = moved
            .iter()
            .any(|d| is_animation(self.model.node(*d).class));
        let collides = was_in_world && has_part;
        self.assert_side_domains(&b, &moved, true, Some(collides), animated, ctx);
        let mut writes = Vec::new();
        if was_in_world {
            for d in &moved {
                if logs_parts(self.model.node(*d).class) {
                    writes.push((*d, PartWriteKind::LeftWorld));
                }
            }
        }
        self.assert_part_writes(&b, writes, ctx);
        let diff = self.diff_since(&b);
        let mut removed = moved;
        removed.sort_unstable();
        assert_eq!(diff.removed, removed, "{ctx}: diff removed");
        assert!(diff.added.is_empty(), "{ctx}: diff added");
        self.assert_changed_live(&diff, ctx);
    }

    fn drain(&mut self, ctx: &str) {
        let b = self.capture();
        self.drains += 1;
        let into = self.drains.is_multiple_of(2);
        if self.in_batch() {
            if into {
                let kept = self.kept.clone();
                expect_batch_refusal(self.arena.drain_into(&mut self.kept), ctx);
                assert_eq!(
                    self.kept, kept,
                    "{ctx}: a refused drain_into left its lists"
                );
            } else {
                expect_batch_refusal(self.arena.drain(), ctx);
            }
            self.assert_unchanged(&b, ctx);
            return;
        }
        let drained = if into {
            self.arena
                .drain_into(&mut self.kept)
                .unwrap_or_else(|e| panic!("{ctx}: drain_into refused: {e:?}"));
            self.kept.clone()
        } else {
            self.arena
                .drain()
                .unwrap_or_else(|e| panic!("{ctx}: drain refused: {e:?}"))
        };
        let events = norm_events(&drained.events);
        assert_eq!(events, self.model.events, "{ctx}: drained events");
        let with_slots = |ids: &[InstanceId]| -> Vec<(InstanceId, Slot)> {
            ids.iter().map(|d| (*d, self.model.node(*d).slot)).collect()
        };
        let reclaimable: Vec<(InstanceId, Slot)> =
            drained.reclaimable.iter().map(|d| (d.id, d.slot)).collect();
        let reclaimed: Vec<(InstanceId, Slot)> =
            drained.reclaimed.iter().map(|d| (d.id, d.slot)).collect();
        assert_eq!(
            reclaimable,
            with_slots(&self.model.first_drain),
            "{ctx}: reclaimable"
        );
        assert_eq!(
            reclaimed,
            with_slots(&self.model.second_drain),
            "{ctx}: reclaimed"
        );
        for id in std::mem::take(&mut self.model.second_drain) {
            let slot = self.model.node(id).slot;
            self.model.node_mut(id).status = Status::Reclaimed;
            assert!(
                self.model.free_slots.insert(slot),
                "{ctx}: slot freed twice"
            );
            self.reclaimed += 1;
        }
        self.model.second_drain = std::mem::take(&mut self.model.first_drain);
        self.model.events.clear();
        assert!(self.arena.pending_events().is_empty(), "{ctx}: events left");
        self.assert_monotonic(&b, ctx);
        self.assert_not_structural(&b, ctx);
        self.assert_side_domains(&b, &[], true, Some(false), false, ctx);
        assert_eq!(
            self.arena.next_id(),
            b.next_id,
            "{ctx}: drain consumed an id"
        );
        assert_eq!(
            self.diff_since(&b),
            SnapshotDiff::default(),
            "{ctx}: drain changed live nodes"
        );
    }

    fn take_snapshot(&mut self, ctx: &str) {
        self.sync_revisions(ctx);
        let b = self.capture();
        let snapshot = self.arena.snapshot();
        self.assert_unchanged(&b, ctx);
        if self.stored.len() >= MAX_STORED {
            self.stored.remove(1);
        }
        self.stored.push(Stored {
            revisions: snapshot.revisions().clone(),
            snapshot,
            model: self.model.clone(),
        });
    }

    fn set_name(&mut self, id: InstanceId, name: &str, ctx: &str) {
        let b = self.capture();
        let result = self.arena.set_name(id, name);
        if let Some(error) = self.model.stale_error(id) {
            expect_refusal(result, &[error], ctx);
            self.assert_unchanged(&b, ctx);
            return;
        }
        if self.predates_batch(id) {
            expect_batch_refusal(result, ctx);
            self.assert_unchanged(&b, ctx);
            return;
        }
        if self.model.node(id).name == name {
            assert_eq!(result, Ok(false), "{ctx}: equal name");
            self.assert_unchanged(&b, ctx);
            return;
        }
        assert_eq!(result, Ok(true), "{ctx}: rename");
        self.model.node_mut(id).name = name.to_owned();
        self.assert_written(&b, id, Vec::new(), ctx);
        self.assert_side_domains(&b, &[id], false, None, false, ctx);
    }

    fn node_mut(&mut self, id: InstanceId, name: Option<&str>, ctx: &str) {
        let b = self.capture();
        if let Some(error) = self.model.stale_error(id) {
            expect_refusal(self.arena.node_mut(id), &[error], ctx);
            self.assert_unchanged(&b, ctx);
            return;
        }
        if self.predates_batch(id) {
            expect_batch_refusal(self.arena.node_mut(id), ctx);
            self.assert_unchanged(&b, ctx);
            return;
        }
        match self.arena.node_mut(id) {
            Ok(mut data) => {
                if let Some(name) = name {
                    *data.name_mut() = Arc::from(name);
                }
            }
            Err(e) => panic!("{ctx}: node_mut refused: {e:?}"),
        }
        if let Some(name) = name {
            self.model.node_mut(id).name = name.to_owned();
        }
        let mut writes = Vec::new();
        if logs_parts(self.model.node(id).class) && self.model.in_world(id) {
            writes.push((id, PartWriteKind::State));
        }
        self.assert_written(&b, id, writes, ctx);
        let collides = self.model.node(id).class == ClassId::PART && self.model.in_world(id);
        let animated = is_animation(self.model.node(id).class);
        self.assert_side_domains(&b, &[id], true, Some(collides), animated, ctx);
    }

    /// After a write to one node's state through `set_name` or `node_mut`.
    fn assert_written(
        &mut self,
        b: &Before,
        id: InstanceId,
        writes: Vec<(InstanceId, PartWriteKind)>,
        ctx: &str,
    ) {
        let clock = self.assert_ticked(b, ctx);
        self.assert_not_structural(b, ctx);
        let revisions = self.arena.revisions();
        assert_eq!(revisions.mutation(), clock, "{ctx}: mutation revision");
        assert_eq!(revisions.tags(), b.revisions.tags(), "{ctx}: tags moved");
        let node = self.arena.get(id).expect("written node resolves");
        assert_eq!(node.revision(), clock, "{ctx}: node revision");
        assert!(node.revision() > self.model.node(id).revision, "{ctx}");
        self.model.node_mut(id).revision = clock;
        assert_eq!(
            self.arena.pending_events().len(),
            b.events,
            "{ctx}: a write queued events"
        );
        self.assert_part_writes(b, writes, ctx);
        let diff = self.diff_since(b);
        assert_eq!(
            diff,
            SnapshotDiff {
                changed: vec![id],
                ..SnapshotDiff::default()
            },
            "{ctx}: only the written node is privatised"
        );
    }

    fn tag(&mut self, id: InstanceId, tag: &'static str, add: bool, ctx: &str) {
        let b = self.capture();
        let result = if add {
            self.arena.add_tag(id, tag)
        } else {
            self.arena.remove_tag(id, tag)
        };
        if let Some(error) = self.model.stale_error(id) {
            expect_refusal(result, &[error], ctx);
            self.assert_unchanged(&b, ctx);
            return;
        }
        if self.predates_batch(id) {
            expect_batch_refusal(result, ctx);
            self.assert_unchanged(&b, ctx);
            return;
        }
        let has = self.model.node(id).tags.contains(tag);
        if has == add {
            assert_eq!(result, Ok(false), "{ctx}: tag already in that state");
            self.assert_unchanged(&b, ctx);
            return;
        }
        assert_eq!(result, Ok(true), "{ctx}: tag change");
        let tags = &mut self.model.node_mut(id).tags;
        if add {
            tags.insert(tag);
        } else {
            tags.remove(tag);
        }
        let clock = self.assert_ticked(&b, ctx);
        self.assert_not_structural(&b, ctx);
        assert_eq!(self.arena.revisions().tags(), clock, "{ctx}: tags revision");
        assert_eq!(
            self.arena.revisions().mutation(),
            b.revisions.mutation(),
            "{ctx}"
        );
        assert_eq!(self.arena.pending_events().len(), b.events, "{ctx}");
        self.assert_part_writes(&b, Vec::new(), ctx);
        self.assert_side_domains(&b, &[], true, Some(false), false, ctx);
        let diff = self.diff_since(&b);
        assert!(diff.added.is_empty() && diff.removed.is_empty(), "{ctx}");
        assert!(
            diff.changed.iter().all(|c| *c == id),
            "{ctx}: tagging privatised other nodes: {diff:?}"
        );
    }

    /// Opens a lifecycle scope on `subject` and checks what becomes readable.
    /// Checks what is readable while lifecycle scopes on `subjects` are open (none: no scope).
    fn assert_scoped_view(&self, subjects: &[InstanceId], ctx: &str) {
        for &id in &self.model.order {
            let n = self.model.node(id);
            match n.status {
                Status::Live => assert!(self.arena.get(id).is_some(), "{ctx}: live {id}"),
                Status::Reclaimed => assert!(self.arena.get(id).is_none(), "{ctx}: {id}"),
                Status::Destroyed => {
                    let readable = subjects
                        .iter()
                        .any(|s| self.model.readable_in_scope(id, *s));
                    let node = self.arena.get(id);
                    assert_eq!(
                        node.is_some(),
                        readable,
                        "{ctx}: readability of tombstone {id} with scopes on {subjects:?}"
                    );
                    assert!(!self.arena.is_live(id), "{ctx}: scoped {id} live");
                    if let Some(node) = node {
                        assert_eq!(node.class(), n.class, "{ctx}: scoped class {id}");
                        assert_eq!(node.name(), n.name, "{ctx}: scoped name {id}");
                        assert_eq!(node.parent(), n.parent, "{ctx}: scoped parent {id}");
                        assert!(node.is_destroyed(), "{ctx}: scoped {id} not destroyed");
                        assert!(!node.is_in_world(), "{ctx}: scoped {id} in world");
                        let children: Vec<InstanceId> = self.arena.children(id).collect();
                        assert_eq!(children, n.children, "{ctx}: scoped children {id}");
                    }
                }
            }
        }
    }

    /// Opens a lifecycle scope on `subject` (and, when another tombstone exists, a nested one
    /// on it) and checks what becomes readable, what stays refused, and that closing restores
    /// the previous view.
    fn scope(&mut self, subject: InstanceId, ctx: &str) {
        let b = self.capture();
        if self.model.status(subject) != Some(Status::Destroyed) {
            expect_refusal(
                self.arena.enter_lifecycle_scope(subject),
                &[ArenaError::NotATombstone(subject)],
                ctx,
            );
            self.assert_unchanged(&b, ctx);
            return;
        }
        let outer = self
            .arena
            .enter_lifecycle_scope(subject)
            .unwrap_or_else(|e| panic!("{ctx}: scope refused: {e:?}"));
        self.assert_scoped_view(&[subject], ctx);
        assert!(
            self.arena.snapshot().get(subject).is_none(),
            "{ctx}: a snapshot taken in a scope exposes the tombstone"
        );
        expect_refusal(
            self.arena.set_name(subject, "Revived"),
            &[ArenaError::DestroyedInstance(subject)],
            ctx,
        );
        expect_refusal(
            self.arena.node_mut(subject),
            &[ArenaError::DestroyedInstance(subject)],
            ctx,
        );
        expect_refusal(
            self.arena.set_parent(subject, None),
            &[ArenaError::DestroyedInstance(subject)],
            ctx,
        );
        if self.in_batch() {
            expect_batch_refusal(self.arena.drain(), ctx);
        } else {
            expect_refusal(self.arena.drain(), &[ArenaError::ScopeOpen], ctx);
        }

        let others = self.model.with_status(Status::Destroyed);
        let other = others[subject.get() as usize % others.len()];
        let inner = self
            .arena
            .enter_lifecycle_scope(other)
            .unwrap_or_else(|e| panic!("{ctx}: nested scope on {other} refused: {e:?}"));
        self.assert_scoped_view(&[subject, other], ctx);
        if subject.get().is_multiple_of(2) {
            // Closing the inner scope restores the outer view.
            self.arena
                .exit_lifecycle_scope(inner)
                .unwrap_or_else(|e| panic!("{ctx}: inner exit refused: {e:?}"));
            self.assert_scoped_view(&[subject], ctx);
            self.arena
                .exit_lifecycle_scope(outer)
                .unwrap_or_else(|e| panic!("{ctx}: outer exit refused: {e:?}"));
        } else {
            // Closing the outer scope closes the inner one too.
            self.arena
                .exit_lifecycle_scope(outer)
                .unwrap_or_else(|e| panic!("{ctx}: outer exit refused: {e:?}"));
            expect_refusal(
                self.arena.exit_lifecycle_scope(inner),
                &[ArenaError::ScopeNotOpen],
                ctx,
            );
        }
        self.assert_scoped_view(&[], ctx);
        self.assert_unchanged(&b, ctx);
    }

    // ----- Construction batches. -----

    fn checkpoint(&mut self, ctx: &str) {
        let at = self.capture();
        let checkpoint = self.arena.checkpoint();
        self.assert_unchanged(&at, ctx);
        assert!(self.arena.in_batch(), "{ctx}: batch not open");
        self.batches.push(OpenBatch {
            checkpoint,
            model: self.model.clone(),
            at,
        });
    }

    /// Closes the `pick`-th open batch (and those opened inside it), or tries a stale
    /// checkpoint, which must be refused and change nothing.
    fn close(&mut self, pick: usize, rollback: bool, ctx: &str) {
        let (open, total) = (self.batches.len(), self.batches.len() + self.stale.len());
        if total == 0 {
            return;
        }
        let b = self.capture();
        let index = pick % total;
        let close = |arena: &mut Arena, checkpoint| {
            if rollback {
                arena.rollback(checkpoint)
            } else {
                arena.commit(checkpoint)
            }
        };
        if index >= open {
            let checkpoint = self.stale.remove(index - open);
            expect_refusal(
                close(&mut self.arena, checkpoint),
                &[ArenaError::StaleCheckpoint],
                ctx,
            );
            self.assert_unchanged(&b, ctx);
            self.stale_refused += 1;
            return;
        }
        let mut closed = self.batches.split_off(index);
        let batch = closed.remove(0);
        self.stale
            .extend(closed.into_iter().map(|inner| inner.checkpoint));
        close(&mut self.arena, batch.checkpoint)
            .unwrap_or_else(|e| panic!("{ctx}: closing an open batch refused: {e:?}"));
        if !rollback {
            self.assert_unchanged(&b, ctx);
            return;
        }
        self.rolled_back(batch.model, &batch.at, &b, ctx);
    }

    /// After a rollback to the checkpoint taken at `at` (with `mark` the model then), from the
    /// state `b` just before it.
    fn rolled_back(&mut self, mark: Model, at: &Before, b: &Before, ctx: &str) {
        // The model as at the checkpoint, with the batch's ids retired for good.
        self.model = self.retired_since(mark);

        assert_eq!(
            self.arena.next_id(),
            b.next_id,
            "{ctx}: ids must never go back"
        );
        let diff = self.arena.snapshot().diff(&at.snapshot);
        assert!(
            diff.added.is_empty() && diff.removed.is_empty(),
            "{ctx}: the hierarchy is not as at the checkpoint: {diff:?}"
        );
        self.assert_changed_live(&diff, ctx);
        let touched = b.revisions.clock() > at.revisions.clock();
        if !touched {
            // An empty batch: nothing to undo, nothing to announce.
            self.assert_unchanged(b, ctx);
            return;
        }
        self.rollbacks += 1;
        let (inside, now) = (&b.revisions, self.arena.revisions());
        let clock = self.assert_ticked(b, ctx);
        let mark = at.revisions.clock();
        let domains = [
            (
                "topology",
                at.revisions.topology(),
                inside.topology(),
                now.topology(),
            ),
            (
                "mutation",
                at.revisions.mutation(),
                inside.mutation(),
                now.mutation(),
            ),
            ("tags", at.revisions.tags(), inside.tags(), now.tags()),
            (
                "collision",
                at.revisions.collision(),
                inside.collision(),
                now.collision(),
            ),
            (
                "animation",
                at.revisions.animation(),
                inside.animation(),
                now.animation(),
            ),
            (
                "layout",
                at.revisions.layout(),
                inside.layout(),
                now.layout(),
            ),
            (
                "parts family",
                at.revisions.family(FamilyId::PARTS),
                inside.family(FamilyId::PARTS),
                now.family(FamilyId::PARTS),
            ),
            (
                "lights family",
                at.revisions.family(FamilyId::LIGHTS),
                inside.family(FamilyId::LIGHTS),
                now.family(FamilyId::LIGHTS),
            ),
        ];
        for (domain, before_batch, in_batch, after) in domains {
            if in_batch > mark {
                assert_eq!(after, clock, "{ctx}: {domain} touched by the batch");
            } else {
                assert_eq!(
                    after, before_batch,
                    "{ctx}: {domain} not touched by the batch"
                );
            }
        }
        // Journals: nothing new for a reader from the checkpoint; a reader from inside the
        // batch must rebuild; heads never go back.
        let journals = [
            (
                "topology journal",
                at.topology_head,
                b.topology_head,
                self.arena.topology_journal().head(),
                self.arena
                    .topology_since(at.topology_head)
                    .map(|r| r.count()),
                self.arena
                    .topology_since(b.topology_head)
                    .map(|r| r.count()),
            ),
            (
                "part log",
                at.part_head,
                b.part_head,
                self.arena.part_log().head(),
                self.arena
                    .part_writes_since(at.part_head)
                    .map(|r| r.count()),
                self.arena.part_writes_since(b.part_head).map(|r| r.count()),
            ),
        ];
        for (journal, at_head, inside_head, head, from_mark, from_inside) in journals {
            assert_eq!(from_mark, Ok(0), "{ctx}: {journal} from the checkpoint");
            if inside_head > at_head {
                assert_eq!(head, inside_head + 1, "{ctx}: {journal} head");
                assert!(
                    from_inside.is_err(),
                    "{ctx}: {journal} cursor from the batch"
                );
            } else {
                assert_eq!(head, inside_head, "{ctx}: {journal} head moved");
            }
        }
    }

    /// `mark` (a model kept earlier) with every id issued since retired for good.
    fn retired_since(&self, mark: Model) -> Model {
        let mut restored = mark;
        for &id in &self.model.order {
            if restored.nodes.contains_key(&id) {
                continue;
            }
            let mut node = self.model.node(id).clone();
            node.status = Status::Reclaimed;
            node.parent = None;
            node.children.clear();
            node.tags.clear();
            restored.nodes.insert(id, node);
            restored.order.push(id);
        }
        restored
    }

    fn save(&mut self, ctx: &str) {
        let b = self.capture();
        let result = self.arena.save_point();
        if self.in_batch() {
            expect_batch_refusal(result, ctx);
            self.assert_unchanged(&b, ctx);
            return;
        }
        let point = result.unwrap_or_else(|e| panic!("{ctx}: save point refused: {e:?}"));
        self.assert_unchanged(&b, ctx);
        self.sync_revisions(ctx);
        if self.saves.len() >= 4 {
            self.saves.remove(0);
        }
        self.saves.push((point, self.model.clone(), self.capture()));
    }

    fn restore(&mut self, pick: usize, ctx: &str) {
        if self.saves.is_empty() {
            return;
        }
        let index = pick % self.saves.len();
        let b = self.capture();
        let result = self.arena.restore(&self.saves[index].0);
        if self.in_batch() {
            expect_batch_refusal(result, ctx);
            self.assert_unchanged(&b, ctx);
            return;
        }
        result.unwrap_or_else(|e| panic!("{ctx}: restore refused: {e:?}"));
        self.restores += 1;
        let (_, mark, at) = &self.saves[index];
        let (mark, at_revisions) = (mark.clone(), at.revisions.clone());
        let (at_topology, at_part) = (at.topology_head, at.part_head);
        let at_snapshot = at.snapshot.clone();
        self.model = self.retired_since(mark);
        assert_eq!(
            self.arena.next_id(),
            b.next_id,
            "{ctx}: ids must never go back"
        );
        let diff = self.arena.snapshot().diff(&at_snapshot);
        assert!(
            diff.added.is_empty() && diff.removed.is_empty(),
            "{ctx}: the hierarchy is not as at the save point: {diff:?}"
        );
        // The clock moves on; a domain that differs takes the new tick, the others keep theirs.
        let now = self.arena.revisions().clone();
        let clock = self.assert_ticked(&b, ctx);
        let domains = [
            (
                "topology",
                at_revisions.topology(),
                b.revisions.topology(),
                now.topology(),
            ),
            (
                "mutation",
                at_revisions.mutation(),
                b.revisions.mutation(),
                now.mutation(),
            ),
            ("tags", at_revisions.tags(), b.revisions.tags(), now.tags()),
            (
                "collision",
                at_revisions.collision(),
                b.revisions.collision(),
                now.collision(),
            ),
            (
                "animation",
                at_revisions.animation(),
                b.revisions.animation(),
                now.animation(),
            ),
            (
                "layout",
                at_revisions.layout(),
                b.revisions.layout(),
                now.layout(),
            ),
            (
                "parts family",
                at_revisions.family(FamilyId::PARTS),
                b.revisions.family(FamilyId::PARTS),
                now.family(FamilyId::PARTS),
            ),
        ];
        for (domain, saved, before, after) in domains {
            if saved == before {
                assert_eq!(after, saved, "{ctx}: {domain} did not differ");
            } else {
                assert_eq!(after, clock, "{ctx}: {domain} differed");
            }
        }
        // Journals: a reader from the save point reads nothing new; one that read entries
        // written since must rebuild; heads never go back.
        let journals = [
            (
                "topology journal",
                at_topology,
                b.topology_head,
                self.arena.topology_journal().head(),
                self.arena.topology_since(at_topology).map(|r| r.count()),
                self.arena
                    .topology_since(b.topology_head)
                    .map(|r| r.count()),
            ),
            (
                "part log",
                at_part,
                b.part_head,
                self.arena.part_log().head(),
                self.arena.part_writes_since(at_part).map(|r| r.count()),
                self.arena.part_writes_since(b.part_head).map(|r| r.count()),
            ),
        ];
        for (journal, saved_head, before_head, head, from_save, from_before) in journals {
            if before_head > saved_head {
                assert!(head > before_head, "{ctx}: {journal} head");
                assert!(
                    from_before.is_err(),
                    "{ctx}: {journal} cursor from after the save"
                );
                // Entries older than the save may have been dropped since: then the reader
                // from the save point must rebuild too.
                assert!(
                    from_save == Ok(0) || from_save.is_err(),
                    "{ctx}: {journal} from the save point read {from_save:?}"
                );
            } else {
                assert_eq!(head, before_head, "{ctx}: {journal} head moved");
                assert_eq!(from_save, Ok(0), "{ctx}: {journal} from the save point");
            }
        }
    }

    /// Closes every open batch by rolling back the outermost one.
    fn close_all(&mut self, step: usize) {
        if self.in_batch() {
            self.apply(
                &Op::Close {
                    pick: 0,
                    rollback: true,
                },
                step,
            );
        }
    }

    // ----- Driver. -----

    fn apply(&mut self, op: &Op, step: usize) {
        let ctx = format!("step {step} {op:?}");
        let b = self.capture();
        match *op {
            Op::Create { class, parent } => {
                let parent = parent.map(|p| self.resolve(p));
                let class = CLASSES[class % CLASSES.len()];
                let ctx = format!("{ctx} -> create {class:?} under {parent:?}");
                self.create(class, parent, &ctx);
            }
            Op::Reparent { child, parent } => {
                let child = self.resolve(child);
                let parent = parent.map(|p| self.resolve(p));
                let ctx = format!("{ctx} -> set_parent({child}, {parent:?})");
                self.reparent(child, parent, &ctx);
            }
            Op::Destroy(pick) => {
                let id = self.resolve(pick);
                self.destroy(id, &format!("{ctx} -> destroy({id})"));
            }
            Op::Drain => self.drain(&ctx),
            Op::Snapshot => self.take_snapshot(&ctx),
            Op::SetName(pick, name) => {
                let id = self.resolve(pick);
                let name = NAMES[name % NAMES.len()];
                self.set_name(id, name, &format!("{ctx} -> set_name({id}, {name})"));
            }
            Op::NodeMut(pick, name) => {
                let id = self.resolve(pick);
                let name = name.map(|n| NAMES[n % NAMES.len()]);
                self.node_mut(id, name, &format!("{ctx} -> node_mut({id})"));
            }
            Op::AddTag(pick, tag) => {
                let id = self.resolve(pick);
                let tag = TAGS[tag % TAGS.len()];
                self.tag(id, tag, true, &format!("{ctx} -> add_tag({id}, {tag})"));
            }
            Op::RemoveTag(pick, tag) => {
                let id = self.resolve(pick);
                let tag = TAGS[tag % TAGS.len()];
                self.tag(id, tag, false, &format!("{ctx} -> remove_tag({id}, {tag})"));
            }
            Op::Scope(pick) => {
                let id = self.resolve(pick);
                self.scope(id, &format!("{ctx} -> scope({id})"));
            }
            Op::Checkpoint => self.checkpoint(&ctx),
            Op::Close { pick, rollback } => self.close(pick, rollback, &ctx),
            Op::Save => self.save(&ctx),
            Op::Restore(pick) => self.restore(pick, &ctx),
        }
        self.assert_monotonic(&b, &ctx);
        if step.is_multiple_of(self.check_every) {
            self.check_all(&ctx);
        }
    }

    /// Records the current node revisions in the model, checking none went back.
    fn sync_revisions(&mut self, ctx: &str) {
        for id in self.model.with_status(Status::Live) {
            let revision = self.arena.get(id).expect("live").revision();
            let recorded = &mut self.model.node_mut(id).revision;
            assert!(
                revision >= *recorded,
                "{ctx}: node revision of {id} went back"
            );
            *recorded = revision;
        }
    }

    fn check_all(&mut self, ctx: &str) {
        check_view(&self.arena, &self.model, &[], false, ctx);
        assert_eq!(self.arena.in_batch(), self.in_batch(), "{ctx}: batch open");
        let events = norm_events(self.arena.pending_events());
        assert_eq!(events, self.model.events, "{ctx}: pending events");
        assert_eq!(
            self.arena.pending_reclamation(),
            self.model.first_drain.len() + self.model.second_drain.len(),
            "{ctx}: pending reclamation"
        );
        self.sync_revisions(ctx);
        for (index, stored) in self.stored.iter().enumerate() {
            let later: Vec<InstanceId> = self
                .model
                .order
                .iter()
                .copied()
                .filter(|id| !stored.model.nodes.contains_key(id))
                .collect();
            let ctx = format!("{ctx} [stored snapshot {index}]");
            check_view(&stored.snapshot, &stored.model, &later, true, &ctx);
            assert_eq!(
                stored.snapshot.revisions(),
                &stored.revisions,
                "{ctx}: revisions"
            );
        }
    }
}

// ----- Strategies. -----

fn pick() -> impl Strategy<Value = Pick> {
    prop_oneof![
        8 => any::<u16>().prop_map(|i| Pick::Live(usize::from(i))),
        2 => any::<u16>().prop_map(|i| Pick::Any(usize::from(i))),
        1 => any::<u16>().prop_map(|i| Pick::Tomb(usize::from(i))),
        1 => Just(Pick::Unknown),
    ]
}

fn tomb_pick() -> impl Strategy<Value = Pick> {
    prop_oneof![
        3 => any::<u16>().prop_map(|i| Pick::Tomb(usize::from(i))),
        1 => pick(),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let name = 0..NAMES.len();
    let tag = 0..TAGS.len();
    prop_oneof![
        10 => (0..CLASSES.len(), prop::option::weighted(0.85, pick()))
            .prop_map(|(class, parent)| Op::Create { class, parent }),
        6 => (pick(), prop::option::weighted(0.8, pick()))
            .prop_map(|(child, parent)| Op::Reparent { child, parent }),
        2 => pick().prop_map(Op::Destroy),
        2 => Just(Op::Drain),
        1 => Just(Op::Snapshot),
        2 => (pick(), name.clone()).prop_map(|(p, n)| Op::SetName(p, n)),
        1 => (pick(), prop::option::of(name)).prop_map(|(p, n)| Op::NodeMut(p, n)),
        2 => (pick(), tag.clone()).prop_map(|(p, t)| Op::AddTag(p, t)),
        1 => (pick(), tag).prop_map(|(p, t)| Op::RemoveTag(p, t)),
        1 => tomb_pick().prop_map(Op::Scope),
        1 => Just(Op::Checkpoint),
        3 => (any::<u16>(), any::<bool>())
            .prop_map(|(pick, rollback)| Op::Close { pick: usize::from(pick), rollback }),
        1 => Just(Op::Save),
        1 => any::<u8>().prop_map(|pick| Op::Restore(usize::from(pick))),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn arena_agrees_with_reference_model(ops in prop::collection::vec(op(), 1..=120)) {
        let mut harness = Harness::new();
        for (step, op) in ops.iter().enumerate() {
            harness.apply(op, step);
        }
        harness.close_all(ops.len());
        // Release everything still queued and check the final state once more.
        harness.apply(&Op::Drain, ops.len());
        harness.apply(&Op::Drain, ops.len() + 1);
    }
}

// ----- Deterministic long run. -----

/// A small linear congruential generator, so the long run is reproducible without proptest.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next()).expect("31-bit value") % n
    }

    fn pick(&mut self) -> Pick {
        let i = self.below(1 << 16);
        match self.below(12) {
            0..=7 => Pick::Live(i),
            8 | 9 => Pick::Any(i),
            10 => Pick::Tomb(i),
            _ => Pick::Unknown,
        }
    }

    fn op(&mut self) -> Op {
        match self.below(34) {
            0..=9 => Op::Create {
                class: self.below(CLASSES.len()),
                parent: (self.below(7) != 0).then(|| self.pick()),
            },
            10..=15 => Op::Reparent {
                child: self.pick(),
                parent: (self.below(5) != 0).then(|| self.pick()),
            },
            16 | 17 => Op::Destroy(self.pick()),
            18 | 19 => Op::Drain,
            20 => Op::Snapshot,
            21 | 22 => Op::SetName(self.pick(), self.below(NAMES.len())),
            23 => Op::NodeMut(
                self.pick(),
                (self.below(2) == 0).then(|| self.below(NAMES.len())),
            ),
            24 | 25 => Op::AddTag(self.pick(), self.below(TAGS.len())),
            26 => Op::RemoveTag(self.pick(), self.below(TAGS.len())),
            27 => Op::Scope(Pick::Tomb(self.below(1 << 16))),
            28 => Op::Checkpoint,
            32 => Op::Save,
            33 => Op::Restore(self.below(8)),
            _ => Op::Close {
                pick: self.below(1 << 16),
                rollback: self.below(2) == 0,
            },
        }
    }
}

#[test]
fn snapshot_is_unaffected_by_a_thousand_later_operations() {
    let mut harness = Harness::new();
    let mut rng = Lcg(0x00c0_ffee_5eed_1234);
    let mut step = 0;
    // Some content first, so the pinned snapshot holds a real tree.
    while harness.model.with_status(Status::Live).len() < 25 {
        let op = Op::Create {
            class: rng.below(CLASSES.len()),
            parent: Some(Pick::Live(rng.below(1 << 16))),
        };
        harness.apply(&op, step);
        step += 1;
    }
    for _ in 0..3 {
        harness.apply(&Op::AddTag(Pick::Live(rng.below(1 << 16)), 0), step);
        step += 1;
    }
    let pinned = harness.arena.snapshot();
    let pinned_copy = pinned.clone();
    let pinned_model = harness.model.clone();
    let pinned_revisions = pinned.revisions().clone();

    for _ in 0..1_000 {
        let op = rng.op();
        harness.apply(&op, step);
        step += 1;
    }

    let later: Vec<InstanceId> = harness
        .model
        .order
        .iter()
        .copied()
        .filter(|id| !pinned_model.nodes.contains_key(id))
        .collect();
    check_view(&pinned, &pinned_model, &later, true, "pinned snapshot");
    assert_eq!(pinned.revisions(), &pinned_revisions);
    assert_eq!(pinned.diff(&pinned_copy), SnapshotDiff::default());
    assert_ne!(
        harness.arena.snapshot().diff(&pinned),
        SnapshotDiff::default(),
        "the run should have changed the arena"
    );
    assert!(harness.reclaimed > 0, "the run should reclaim slots");
    assert!(harness.reused_slots > 0, "the run should reuse slots");
    assert!(harness.rollbacks > 0, "the run should roll back batches");
    assert!(
        harness.stale_refused > 0,
        "the run should try stale checkpoints"
    );
    assert!(harness.restores > 0, "the run should restore save points");
}

#[test]
fn several_pages_of_slots_with_reuse() {
    let mut harness = Harness::new();
    harness.check_every = 100;
    let mut rng = Lcg(0x0bad_cafe_0000_0042);
    let mut step = 0;
    // Well past one 1,024-slot page, in a bushy tree.
    while harness.model.slot_len < 2_300 {
        let recent = harness.model.order.len().saturating_sub(1 + rng.below(40));
        let parent = harness.model.order[recent];
        let op = Op::Create {
            class: rng.below(CLASSES.len() - 2),
            parent: Some(if harness.model.is_live(parent) && rng.below(4) != 0 {
                Pick::Any(recent)
            } else {
                Pick::Live(rng.below(1 << 16))
            }),
        };
        harness.apply(&op, step);
        step += 1;
    }
    harness.apply(&Op::Snapshot, 0);
    // Destroy subtrees spread over every page, release them, and refill the freed slots.
    for round in 0..3 {
        // Destruction and draining need every batch the random operations opened closed.
        harness.close_all(step);
        for _ in 0..25 {
            harness.apply(&Op::Destroy(Pick::Live(rng.below(1 << 16))), step);
            step += 1;
        }
        harness.apply(&Op::Drain, 0);
        harness.apply(&Op::Drain, 0);
        for _ in 0..300 {
            let op = if rng.below(3) == 0 {
                rng.op()
            } else {
                Op::Create {
                    class: rng.below(CLASSES.len() - 2),
                    parent: Some(Pick::Live(rng.below(1 << 16))),
                }
            };
            harness.apply(&op, step);
            step += 1;
        }
        harness.check_all(&format!("after round {round}"));
    }
    assert!(harness.reused_slots > 100, "freed slots should be refilled");
    assert!(harness.arena.slot_capacity() > 2_048);
}
