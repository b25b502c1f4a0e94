//! Reparenting, and the structural steps moves, destruction and creation share: collecting a
//! subtree, detaching it, world membership, GUI layout invalidation and family membership.
//!
//! Invariant: a move validates everything (cycles, locks on the root and below it,
//! containment) before it changes anything. Every node's world membership follows from its own
//! ancestry after any structural change; only nodes whose membership changed are logged, and
//! the collision revision advances only when a collision class changed membership.

use std::sync::Arc;

use crate::arena::Arena;
use crate::class::{FamilySet, StateKind};
use crate::error::ArenaError;
use crate::event::{Event, Lineage, MovedIds, PartWrite, PartWriteKind, TopologyChange};
use crate::id::{InstanceId, Slot};
use crate::revision::{Domain, Revision};
use crate::snapshot::Record;

/// The facts about a class that structural changes need, copied out of its descriptor.
#[derive(Clone, Copy, Default)]
pub(crate) struct ClassTraits {
    pub(crate) families: FamilySet,
    pub(crate) part_log: bool,
    pub(crate) collision: bool,
    pub(crate) animation: bool,
    /// `Some(true)` for a GUI layer, `Some(false)` for a GUI element.
    pub(crate) gui: Option<bool>,
}

impl ClassTraits {
    pub(crate) fn of(descriptor: &crate::ClassDescriptor) -> Self {
        Self {
            families: descriptor.families(),
            part_log: descriptor.logs_part_writes(),
            collision: descriptor.affects_collision(),
            animation: descriptor.affects_animation(),
            gui: match descriptor.state_kind() {
                StateKind::GuiLayer => Some(true),
                StateKind::GuiElement => Some(false),
                _ => None,
            },
        }
    }
}

/// What the classes of a subtree have in common, gathered in the walk that collects it, so a
/// structural change looks each node's class up once.
#[derive(Clone, Copy, Default)]
pub(crate) struct SubtreeInfo {
    pub(crate) families: FamilySet,
    pub(crate) animation: bool,
    pub(crate) has_gui: bool,
    pub(crate) has_layer: bool,
    /// The first node below the root (pre-order) whose parent is locked.
    pub(crate) locked_below: Option<InstanceId>,
}

impl SubtreeInfo {
    pub(crate) fn single(traits: ClassTraits) -> Self {
        let mut info = Self::default();
        info.add(traits);
        info
    }

    fn add(&mut self, traits: ClassTraits) {
        self.families = self.families.union(traits.families);
        self.animation |= traits.animation;
        self.has_gui |= traits.gui.is_some();
        self.has_layer |= traits.gui == Some(true);
    }

    /// The nearest layer above `root`, looked up only when the subtree holds GUI content.
    pub(crate) fn gui_layer_context(&self, arena: &Arena, root: InstanceId) -> Option<InstanceId> {
        if self.has_gui {
            arena.nearest_layer(root)
        } else {
            None
        }
    }
}

/// A subtree collected in pre-order, root first: its ids (the list every event of the change
/// shares), their slots in the same order, and what its classes have in common.
pub(crate) struct Subtree {
    moved: MovedIds,
    /// The root's slot alone when `moved` is one id, else one slot per id.
    slots: Vec<Slot>,
    root_slot: Slot,
    info: SubtreeInfo,
}

impl Subtree {
    /// The subtree's instances with their slots, root first, in pre-order.
    pub(crate) fn members(&self) -> impl Iterator<Item = (InstanceId, Slot)> + '_ {
        self.moved
            .as_slice()
            .iter()
            .copied()
            .zip(self.slots().iter().copied())
    }

    /// The subtree's ids, as every event of the change shares them.
    pub(crate) fn moved(&self) -> &MovedIds {
        &self.moved
    }

    /// The ids, for the last event of the change.
    pub(crate) fn into_moved(self) -> MovedIds {
        self.moved
    }

    /// What the subtree's classes have in common.
    pub(crate) fn info(&self) -> SubtreeInfo {
        self.info
    }

    pub(crate) fn root(&self) -> (InstanceId, Slot) {
        (self.moved.root(), self.root_slot)
    }

    /// The slots of the subtree's instances, root first, in pre-order.
    pub(crate) fn slots(&self) -> &[Slot] {
        if self.slots.is_empty() {
            std::slice::from_ref(&self.root_slot)
        } else {
            &self.slots
        }
    }
}

/// A subtree just detached from its parent, as `Arena::detach` leaves it.
pub(crate) struct Detached {
    pub(crate) subtree: Subtree,
    pub(crate) old_parent: Option<InstanceId>,
    /// The clock value of the change.
    pub(crate) at: Revision,
}

/// How a structural change sets the world membership of the subtree it affected.
#[derive(Clone, Copy)]
pub(crate) enum Membership {
    /// A move: the root's membership is given, every other node follows from its ancestry.
    Derived { root_in_world: bool },
    /// A destruction: every node leaves the world.
    Cleared,
}

impl Arena {
    /// Moves `child` (with its subtree) under `parent`, or unparents it with `None`. Returns
    /// `false` for a no-op move, which produces no event, journal entry or revision.
    ///
    /// # Errors
    ///
    /// Refused, leaving everything unchanged: unknown or destroyed child or destination, a locked
    /// child parent, a destination inside the child's own subtree, a destination class the child's
    /// class may not be placed in, and a subtree holding a locked instance below the child
    /// ([`ArenaError::LockedDescendant`]: it would move with it).
    pub fn set_parent(
        &mut self,
        child: InstanceId,
        parent: Option<InstanceId>,
    ) -> Result<bool, ArenaError> {
        let child_slot = self.state.live_slot(child)?;
        self.guard_batch_write(child)?;
        let record = self
            .state
            .record_at(child_slot)
            .ok_or(ArenaError::UnknownInstance(child))?;
        if self.state.parent_of(record) == parent {
            return Ok(false);
        }
        if record.is_parent_locked() {
            return Err(self.parent_locked(child));
        }
        let parent = self.check_new_child(record.class(), parent)?;
        if let Some((parent_id, _)) = parent
            && (parent_id == child || self.state.is_ancestor_of(child, parent_id))
        {
            return Err(ArenaError::Cycle {
                child,
                parent: parent_id,
            });
        }
        let subtree = self.collect_subtree(child_slot);
        if let Some(locked) = subtree.info.locked_below {
            return Err(self.locked_descendant(child, locked));
        }
        self.move_subtree(subtree, parent);
        Ok(true)
    }

    /// [`ArenaError::ParentLocked`] for `id`, naming the service its class makes it, if any.
    pub(crate) fn parent_locked(&self, id: InstanceId) -> ArenaError {
        ArenaError::ParentLocked {
            id,
            service: self.service_class(id),
        }
    }

    /// [`ArenaError::LockedDescendant`] for `locked` below `root`, naming the service `locked`'s
    /// class makes it, if any.
    pub(crate) fn locked_descendant(&self, root: InstanceId, locked: InstanceId) -> ArenaError {
        ArenaError::LockedDescendant {
            root,
            locked,
            service: self.service_class(locked),
        }
    }

    /// The name of `id`'s class when that class is a service.
    fn service_class(&self, id: InstanceId) -> Option<String> {
        let record = self.state.record_at(self.state.slot_of(id)?)?;
        let class = self.state.class_of(record.class());
        class.is_service().then(|| class.name().to_owned())
    }

    /// Detaches a live subtree root from its parent, given its collected subtree: advances
    /// topology, unlinks, invalidates the old GUI layout and queues the removal events. Moves
    /// and destruction both start here.
    pub(crate) fn detach(&mut self, subtree: Subtree) -> Detached {
        let (root, root_slot) = subtree.root();
        let old_parent = self
            .state
            .record_at(root_slot)
            .and_then(|r| self.state.parent_of(r));
        let old_lineage = old_parent.map(|p| self.lineage(p));
        let old_layer = subtree.info.gui_layer_context(self, root);
        let at = self.state.revisions_mut().tick();
        self.state.revisions_mut().record(Domain::Topology, at);
        if let (Some(parent), Some(ancestors)) = (old_parent, old_lineage) {
            self.state.unlink(root_slot);
            self.outbox.event(Event::DescendantRemoving {
                ancestors,
                moved: subtree.moved.clone(),
            });
            self.outbox.event(Event::ChildRemoved {
                parent,
                child: root,
            });
        }
        self.invalidate_gui(&subtree.moved, subtree.info, old_layer, at);
        Detached {
            subtree,
            old_parent,
            at,
        }
    }

    /// Performs a validated move of a collected subtree under `parent` (or out of the tree) and
    /// queues its events.
    pub(crate) fn move_subtree(&mut self, subtree: Subtree, parent: Option<(InstanceId, Slot)>) {
        let Detached {
            subtree,
            old_parent,
            at,
        } = self.detach(subtree);
        let (child, child_slot) = subtree.root();
        let in_world = match parent {
            Some((_, parent_slot)) => {
                self.state.link_last(child_slot, parent_slot);
                self.inherits_world(parent_slot)
            }
            None => false,
        };
        self.update_world_membership(
            &subtree,
            Membership::Derived {
                root_in_world: in_world,
            },
            at,
        );
        let info = subtree.info;
        let new_layer = info.gui_layer_context(self, child);
        self.invalidate_gui(&subtree.moved, info, new_layer, at);
        for family in info.families.iter() {
            self.state.revisions_mut().bump_family(family, at);
        }
        if info.animation {
            self.state.revisions_mut().record(Domain::Animation, at);
        }
        self.outbox.topology(TopologyChange::Reparented {
            id: child,
            from: old_parent,
            to: parent.map(|(p, _)| p),
        });
        if let Some((parent, _)) = parent {
            self.outbox.event(Event::ChildAdded { parent, child });
        }
        let moved = subtree.moved;
        self.outbox.event(Event::AncestryChanged {
            moved: moved.clone(),
        });
        if let Some((parent, _)) = parent {
            let lineage = self.lineage(parent);
            self.outbox.event(Event::DescendantAdded {
                ancestors: lineage,
                moved,
            });
        }
    }

    /// Whether a child placed under the node at `parent` is in the world.
    pub(crate) fn inherits_world(&self, parent: Slot) -> bool {
        self.state
            .record_at(parent)
            .is_some_and(|p| p.is_in_world() || self.state.class_of(p.class()).is_world_container())
    }

    /// Brings the world flag of every node of a moved or destroyed subtree up to date, logging
    /// the parts that enter or leave and advancing the collision revision when a collision
    /// class changed membership. Each node's membership follows from its own ancestry (some
    /// ancestor is a world container), so a node under a world container inside the subtree
    /// keeps its membership whatever happens to the root.
    pub(crate) fn update_world_membership(
        &mut self,
        subtree: &Subtree,
        membership: Membership,
        at: Revision,
    ) {
        if let Membership::Derived { root_in_world } = membership {
            let root_was = self
                .state
                .record_at(subtree.root_slot)
                .is_some_and(Record::is_in_world);
            if root_was == root_in_world {
                // The rest of the subtree derives from the root and the subtree's own classes.
                return;
            }
        }
        let mut collision = false;
        for (index, (id, slot)) in subtree.members().enumerate() {
            let Some(record) = self.state.record_at(slot) else {
                continue;
            };
            let was = record.is_in_world();
            let now = match membership {
                Membership::Cleared => false,
                Membership::Derived { root_in_world } if index == 0 => root_in_world,
                // Pre-order: the parent's flag is already up to date.
                Membership::Derived { .. } => record
                    .parent()
                    .is_some_and(|parent| self.inherits_world(parent)),
            };
            if was == now {
                continue;
            }
            let descriptor = self.state.class_of(record.class());
            let (logs, collides) = (
                descriptor.logs_part_writes(),
                descriptor.affects_collision(),
            );
            self.state.write_at(slot).set_in_world(now);
            if logs {
                let kind = if now {
                    PartWriteKind::EnteredWorld
                } else {
                    PartWriteKind::LeftWorld
                };
                self.outbox.part(PartWrite { id, kind });
            }
            collision |= collides;
        }
        if collision {
            self.state.revisions_mut().record(Domain::Collision, at);
        }
    }

    /// Invalidates GUI layouts affected by a subtree that moved relative to `layer` (the nearest
    /// layer above its root before or after the move). Moving a layer invalidates the broad
    /// layout memo and the layer's own layout.
    pub(crate) fn invalidate_gui(
        &mut self,
        moved: &MovedIds,
        info: SubtreeInfo,
        layer: Option<InstanceId>,
        at: Revision,
    ) {
        if !info.has_gui {
            return;
        }
        if info.has_layer {
            self.state.revisions_mut().record(Domain::Layout, at);
            for &id in moved.as_slice() {
                if self.is_layer(id) {
                    self.state.invalidate_layout(id, at);
                }
            }
        }
        if let Some(layer) = layer {
            self.state.invalidate_layout(layer, at);
        }
    }

    /// The nearest proper ancestor that is a GUI layer.
    pub(crate) fn nearest_layer(&self, id: InstanceId) -> Option<InstanceId> {
        self.state.ancestors(id).find(|a| self.is_layer(*a))
    }

    fn is_layer(&self, id: InstanceId) -> bool {
        self.state.find(id).is_some_and(|(_, r)| {
            self.state.class_of(r.class()).state_kind() == StateKind::GuiLayer
        })
    }

    /// Invalidates the layouts that newly created GUI instances of one class, just linked under
    /// a parent, affect: the same rule as for a move into that place.
    pub(crate) fn invalidate_created_gui(
        &mut self,
        traits: ClassTraits,
        created: &MovedIds,
        at: Revision,
    ) {
        let info = SubtreeInfo::single(traits);
        let layer = info.gui_layer_context(self, created.root());
        self.invalidate_gui(created, info, layer, at);
    }

    /// The membership of these families changed: their cached member lists are dropped and
    /// their revisions advance.
    pub(crate) fn membership_changed(&mut self, families: FamilySet, at: Revision) {
        for family in families.iter() {
            self.state.invalidate_family(family);
            self.state.revisions_mut().bump_family(family, at);
        }
    }

    /// The subtree of the node at `root` in pre-order, root first, with what its classes have
    /// in common and the first locked node below the root.
    pub(crate) fn collect_subtree(&self, root: Slot) -> Subtree {
        let record = self
            .state
            .record_at(root)
            .expect("subtrees are collected from occupied slots");
        let root_id = record.id();
        let mut info = SubtreeInfo::single(ClassTraits::of(self.state.class_of(record.class())));
        let single = |info| Subtree {
            moved: MovedIds::One(root_id),
            slots: Vec::new(),
            root_slot: root,
            info,
        };
        if record.first_child().is_none() {
            return single(info);
        }
        let (mut ids, mut slots) = (vec![root_id], vec![root]);
        let mut next = record.first_child();
        while let Some(slot) = next {
            if let Some(record) = self.state.record_at(slot) {
                ids.push(record.id());
                slots.push(slot);
                info.add(ClassTraits::of(self.state.class_of(record.class())));
                if record.is_parent_locked() && info.locked_below.is_none() {
                    info.locked_below = Some(record.id());
                }
            }
            next = self.state.successor(root, slot);
        }
        Subtree {
            moved: MovedIds::from_vec(ids),
            slots,
            root_slot: root,
            info,
        }
    }

    /// `parent` and its ancestors, nearest first, as one shared list.
    pub(crate) fn lineage(&mut self, parent: InstanceId) -> Lineage {
        let ancestors = &mut self.scratch.ancestors;
        ancestors.clear();
        ancestors.push(parent);
        ancestors.extend(self.state.ancestors(parent));
        Arc::from(&ancestors[..])
    }
}
