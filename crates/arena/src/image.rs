//! `ArenaImage`: an arena as plain data (its live instances, its identity source, and what waits
//! for its next drains: tombstones and queued events), and `Arena::from_image`, which rebuilds an
//! arena from one. Save files convert their own records to and from images at their edge, so the
//! file format never depends on the arena's layout.
//!
//! Invariant: an image lists every live instance exactly once, in pre-order (roots in id
//! order, each followed by its subtree, siblings in their order), with what identifies it (id,
//! GUID, persistent id) and what describes it (class name, parent, name, attributes, built-in
//! state, tags, parent lock); the arena's own id range with the next id its counter would
//! issue; the arena's identity source (its GUID seed and its creation and persistent-id
//! counters); every tombstone in its reclamation queue (awaiting the drain that reports it, or
//! the one that releases its slot), in queue order, described as a live instance is; and the
//! events queued since the last drain. `Arena::from_image` checks the whole image while it
//! builds a fresh arena, and refuses it with a typed error (nothing of the half-built arena
//! escapes): besides the live hierarchy, a tombstone's parent must be a tombstone of its own
//! queue listed before it, and the events must be ones an arena could have queued (every
//! instance they name live or awaiting its first drain, every destruction exactly a subtree of
//! such tombstones, each destroyed once, none left unnamed). An arena it returns has exactly the
//! image's instances and tombstones, with the image's ids, GUIDs and persistent ids, its counter
//! at or above the image's (so no id the imaged arena issued is ever issued again), its identity
//! source continued from the image's (so it hands out the GUIDs and persistent ids the imaged
//! arena would have, for the same calls), the tombstones in the same queues (readable in a
//! lifecycle scope until their slots are released two drains on, as after a destruction), and
//! the image's events queued as they were: its next drains return what the imaged arena's would.
//! Journals, revisions, slots and reservations are not imaged: the rebuilt arena's start afresh.

use std::sync::Arc;

use hashbrown::HashSet;

use crate::arena::Arena;
use crate::class::{ClassId, ClassRegistry};
use crate::error::ArenaError;
use crate::event::{Doomed, Event};
use crate::hierarchy::Membership;
use crate::id::{Guid, IdRange, InstanceId, PersistentId};
use crate::lifecycle::Reclamation;
use crate::node::Node;
use crate::state::NodeData;

/// An arena's live instances as plain data (see the module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct ArenaImage {
    /// The range the arena allocates its own ids from.
    pub own_range: IdRange,
    /// The next id the arena's own counter would issue: every id of its range below it was
    /// issued (and is never issued again).
    pub next_id: u64,
    /// Every live instance, in pre-order.
    pub nodes: Vec<ImageNode>,
    /// Where the arena's GUIDs and persistent ids go on from; `None` for an image that does
    /// not say (one read from a file of an older format), whose rebuilt arena draws a seed of
    /// its own as a new arena does.
    pub identity: Option<ImageIdentity>,
    /// The tombstones destroyed since the last drain, which the next drain reports (and makes
    /// reclaimable), in the order it lists them: each destruction's subtree in pre-order, root
    /// first. A tombstone's parent is the tombstone it was destroyed under; a destroyed root
    /// has none.
    pub doomed: Vec<ImageNode>,
    /// The tombstones the last drain reported, whose slots the next drain releases, in the
    /// order it releases them (as in `doomed`).
    pub reclaimable: Vec<ImageNode>,
    /// The events queued since the last drain, in order: what the next drain returns.
    pub events: Vec<Event>,
}

/// The state an arena draws new identities from: the seed GUIDs and persistent ids derive
/// from, and how far its two counters went. An arena rebuilt from an image carrying it hands
/// out, for the same calls, the GUIDs and persistent ids the imaged arena would have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageIdentity {
    /// The seed new GUIDs and persistent ids derive from.
    pub seed: u64,
    /// How many creation counters the arena took (every instance it ever placed took one; a
    /// GUID derives from the seed and its instance's counter).
    pub creations: u64,
    /// How many persistent-id counter values the arena took.
    pub persistent_ids: u64,
}

/// How far an image's identity counters may have gone: past it, the counters of a rebuilt
/// arena could overflow. No arena counts that far (one creation a nanosecond for 290 years).
const COUNTER_LIMIT: u64 = 1 << 63;

/// One instance of an [`ArenaImage`]: live, or a tombstone (in `doomed` or `reclaimable`,
/// always locked to its parent).
#[derive(Clone, Debug, PartialEq)]
pub struct ImageNode {
    /// Its id.
    pub id: InstanceId,
    /// Its class, by name (registries of two processes need not number classes alike).
    pub class: Arc<str>,
    /// Its parent, which comes before it in the image.
    pub parent: Option<InstanceId>,
    /// Its GUID.
    pub guid: Guid,
    /// Its persistent id, if it has one.
    pub persistent_id: Option<PersistentId>,
    /// Its name, attributes and built-in state.
    pub data: NodeData,
    /// Its tags, in the order it got them.
    pub tags: Vec<Arc<str>>,
    /// Whether it is locked to its parent.
    pub parent_locked: bool,
}

impl Arena {
    /// The image of this arena: its live instances, its identity source, its tombstones
    /// awaiting reclamation and the events queued since the last drain (reservations, journals
    /// and revisions are not part of it).
    pub fn image(&self) -> ArenaImage {
        let mut roots: Vec<InstanceId> = self
            .state
            .iter()
            .filter(|node| node.parent().is_none())
            .map(|node| node.id())
            .collect();
        roots.sort_unstable();
        let mut nodes = Vec::with_capacity(self.state.live_count());
        for root in roots {
            let mut stack = vec![root];
            while let Some(id) = stack.pop() {
                let Some(node) = self.state.get(id) else {
                    continue;
                };
                nodes.push(self.image_node(node));
                let first = stack.len();
                stack.extend(self.state.children(id));
                stack[first..].reverse();
            }
        }
        let (doomed, reclaimable) = self.reclamation.queues();
        ArenaImage {
            own_range: self.ids.own_range(),
            next_id: self.ids.next_id(),
            nodes,
            identity: Some(ImageIdentity {
                seed: self.state.seed(),
                creations: self.ids.creations_taken(),
                persistent_ids: self.ids.persistent_taken(),
            }),
            doomed: self.image_tombstones(doomed),
            reclaimable: self.image_tombstones(reclaimable),
            events: self.outbox.events().to_vec(),
        }
    }

    fn image_node(&self, node: Node<'_>) -> ImageNode {
        ImageNode {
            id: node.id(),
            class: Arc::from(self.state.class_of(node.class()).name()),
            parent: node.parent(),
            guid: node.guid(),
            persistent_id: node.persistent_id(),
            data: node.data().clone(),
            tags: node.tags().to_vec(),
            parent_locked: node.is_parent_locked(),
        }
    }

    /// The tombstones of one reclamation queue, in its order.
    fn image_tombstones(&self, queue: &[Doomed]) -> Vec<ImageNode> {
        queue
            .iter()
            .filter_map(|doomed| {
                let record = self
                    .state
                    .record_at(doomed.slot)
                    .filter(|record| record.id() == doomed.id && record.is_destroyed())?;
                Some(self.image_node(Node::new(&self.state, record)))
            })
            .collect()
    }

    /// Rebuilds an arena from an image, with `classes` (classes are matched by name). The
    /// image is checked as the arena is built, and refused with a typed error: an id outside
    /// every range or listed twice, a class this registry lacks, a parent that is not listed
    /// before its child or does not allow it, a state of another kind than the class's, a
    /// persistent id of two live instances or a GUID held twice, identity counters out of
    /// range or below the instances the image holds, a tombstone whose parent is not a
    /// tombstone of its own queue listed before it, and queued events an arena could not have
    /// queued: one naming an instance neither live nor awaiting its first drain, an empty list
    /// of instances or range, a destruction whose instances are not exactly a subtree of
    /// tombstones awaiting their first drain in pre-order, or such a tombstone no destruction
    /// names ([`ArenaError::InvalidImage`] for what no other error names).
    ///
    /// The imaged GUIDs and persistent ids are kept as they were; new ones continue the
    /// image's identity (its seed and counters), so two arenas rebuilt from one image, and the
    /// imaged arena itself, hand out the same identities for the same calls. Without an
    /// identity the rebuilt arena draws a seed of its own. The tombstones wait for the same
    /// drains as they did (readable in a lifecycle scope meanwhile), and the next drain returns
    /// the imaged events.
    ///
    /// # Errors
    ///
    /// [`ArenaError::InvalidImage`] for an image inconsistent in itself (a child listed before its
    /// parent, a GUID held twice, events naming instances it lacks), and the refusals of creating
    /// its instances as listed (a class this registry lacks, ids in use or listed twice,
    /// containment).
    // Long: the rebuild's steps in their required order (tombstones, live instances, identity,
    // events), each short, with the comments saying why that order.
    pub fn from_image(
        classes: Arc<ClassRegistry>,
        image: &ArenaImage,
    ) -> Result<Arena, ArenaError> {
        let mut arena = match image.own_range {
            IdRange::Server => Arena::new(classes),
            IdRange::ClientLocal => Arena::client(classes),
        };
        let held = image.nodes.len() + image.doomed.len() + image.reclaimable.len();
        if let Some(identity) = image.identity {
            if identity.creations > COUNTER_LIMIT || identity.persistent_ids > COUNTER_LIMIT {
                return Err(invalid(format!(
                    "identity counters {} and {} are past {COUNTER_LIMIT}",
                    identity.creations, identity.persistent_ids
                )));
            }
            // Nothing was created yet, so the seed serves every counter.
            arena.state.reseed(identity.seed, arena.ids.next_creation());
        }
        let mut listed: HashSet<InstanceId> = HashSet::with_capacity(held);
        let mut guids: HashSet<Guid> = HashSet::with_capacity(held);
        // Tombstones first, live while they are placed and entombed before any live instance
        // is: a persistent id a tombstone kept may be held again by a live instance or by
        // another tombstone, and is in no index.
        let doomed = arena.insert_tombstones(&image.doomed, &mut listed, &mut guids)?;
        let reclaimable = arena.insert_tombstones(&image.reclaimable, &mut listed, &mut guids)?;
        // In the image's order, which is pre-order: each parent is in place before its
        // children, and siblings are appended in their order.
        for node in &image.nodes {
            let class = arena.imaged_class(node)?;
            if let Some(parent) = node.parent
                && !(listed.contains(&parent) && arena.state.is_live(parent))
            {
                return Err(invalid(format!(
                    "{} is listed before its parent {}, or under a tombstone",
                    node.id, parent
                )));
            }
            arena.insert_imaged_node(node, class, &mut listed, &mut guids)?;
            arena.restore_data(node, true)?;
        }
        for node in &image.nodes {
            if node.parent_locked {
                arena.set_parent_locked(node.id, true)?;
            }
            // Every instance is in: each reference must name one of them.
            let attributes = node
                .data
                .attributes
                .iter()
                .filter_map(|(name, value)| match value {
                    crate::state::AttrValue::Reference(Some(target)) => {
                        Some((format!("attribute `{name}`"), *target))
                    }
                    _ => None,
                });
            let state = node
                .data
                .state
                .references()
                .into_iter()
                .filter_map(|(what, target)| Some((what.to_owned(), target?)));
            for (what, target) in attributes.chain(state) {
                if !listed.contains(&target) {
                    return Err(ArenaError::NotLiveReference {
                        holder: node.id,
                        what,
                        target,
                    });
                }
            }
        }
        arena.ids.inserted_below(image.next_id);
        if let Some(identity) = image.identity {
            if identity.creations < held as u64 {
                return Err(invalid(format!(
                    "{} creations cannot have made the {held} instances the image holds",
                    identity.creations
                )));
            }
            arena
                .ids
                .continue_counters(identity.creations, identity.persistent_ids);
        }
        arena.reclamation = Reclamation::imaged(doomed, reclaimable);
        arena.check_imaged_events(&image.events)?;
        arena.outbox.take_events();
        arena.outbox.queue_imaged(&image.events);
        Ok(arena)
    }

    /// The class of an image node, by name.
    fn imaged_class(&self, node: &ImageNode) -> Result<ClassId, ArenaError> {
        self.state
            .classes()
            .class_id(&node.class)
            .ok_or_else(|| ArenaError::UnknownClass(node.class.to_string()))
    }

    /// Places an image node, live, under its parent (checked already), its id and GUID not
    /// held by another node of the image.
    fn insert_imaged_node(
        &mut self,
        node: &ImageNode,
        class: ClassId,
        listed: &mut HashSet<InstanceId>,
        guids: &mut HashSet<Guid>,
    ) -> Result<(), ArenaError> {
        if !listed.insert(node.id) {
            return Err(ArenaError::IdInUse(node.id));
        }
        if !guids.insert(node.guid) {
            return Err(invalid(format!("GUID {} is held twice", node.guid)));
        }
        self.insert_imaged(node.id, class, node.parent)
    }

    /// Places the tombstones of one reclamation queue: each subtree live first (so containment
    /// is checked as for any creation), then entombed as a destruction leaves it (out of the
    /// world, the tag index and the live count; locked), without announcing anything. A
    /// tombstone's parent is a tombstone of the same queue listed before it (one destroyed
    /// with it), or it has none (the root of what one destruction took). Returns the queue.
    fn insert_tombstones(
        &mut self,
        queue: &[ImageNode],
        listed: &mut HashSet<InstanceId>,
        guids: &mut HashSet<Guid>,
    ) -> Result<Vec<Doomed>, ArenaError> {
        let mut own: HashSet<InstanceId> = HashSet::with_capacity(queue.len());
        let mut roots = Vec::new();
        for node in queue {
            let class = self.imaged_class(node)?;
            match node.parent {
                Some(parent) if !own.contains(&parent) => {
                    return Err(invalid(format!(
                        "tombstone {} is listed before its parent {}, or under an instance \
                         not destroyed with it",
                        node.id, parent
                    )));
                }
                Some(_) => {}
                None => roots.push(node.id),
            }
            if !node.parent_locked {
                return Err(invalid(format!(
                    "tombstone {} is not locked to its parent, as every tombstone is",
                    node.id
                )));
            }
            self.insert_imaged_node(node, class, listed, guids)?;
            own.insert(node.id);
            self.restore_data(node, false)?;
        }
        let at = self.state.revisions_mut().tick();
        for root in roots {
            let slot = self.state.live_slot(root)?;
            let subtree = self.collect_subtree(slot);
            self.update_world_membership(&subtree, Membership::Cleared, at);
            self.membership_changed(subtree.info().families, at);
            self.state.entomb(subtree.slots());
        }
        queue
            .iter()
            .map(|node| {
                let slot = self
                    .state
                    .slot_of(node.id)
                    .ok_or(ArenaError::UnknownInstance(node.id))?;
                Ok(Doomed { id: node.id, slot })
            })
            .collect()
    }

    /// Gives a freshly inserted instance the data, tags, identities of its image node; its
    /// persistent id into the index when `indexed` (a live instance), kept on the node alone
    /// otherwise (a tombstone, about to leave the index).
    fn restore_data(&mut self, node: &ImageNode, indexed: bool) -> Result<(), ArenaError> {
        let id = node.id;
        self.set_name(id, &node.data.name)?;
        for (name, value) in node.data.attributes.iter() {
            self.put_attribute(id, name, Some(value.clone()))?;
        }
        self.put_state(id, node.data.state.clone())?;
        for tag in &node.tags {
            self.add_tag(id, tag)?;
        }
        let slot = self.state.live_slot(id)?;
        if indexed {
            if node.persistent_id.is_some() {
                self.set_persistent_id(id, node.persistent_id)?;
            }
        } else {
            self.state.keep_persistent_id(slot, node.persistent_id);
        }
        self.state.set_guid(slot, node.guid);
        Ok(())
    }

    /// Checks the imaged events against the rebuilt arena (see [`Arena::from_image`]): every
    /// instance they name is live or a tombstone awaiting its first drain, no list or range is
    /// empty, and the destructions name exactly those tombstones, each once, each destruction
    /// a whole subtree of them in pre-order from a root without a parent.
    // Long: one check per kind of imaged event, against one set of tombstones.
    fn check_imaged_events(&self, events: &[Event]) -> Result<(), ArenaError> {
        let doomed: HashSet<InstanceId> =
            self.reclamation.queues().0.iter().map(|d| d.id).collect();
        let held = |id: InstanceId| -> Result<(), ArenaError> {
            if self.state.is_live(id) || doomed.contains(&id) {
                Ok(())
            } else {
                Err(invalid(format!(
                    "a queued event names {id}, neither live nor awaiting its first drain"
                )))
            }
        };
        let all = |ids: &[InstanceId]| -> Result<(), ArenaError> {
            if ids.is_empty() {
                return Err(invalid("a queued event names an empty list".into()));
            }
            ids.iter().try_for_each(|id| held(*id))
        };
        let mut named: HashSet<InstanceId> = HashSet::with_capacity(doomed.len());
        let mut destroyed = |root: InstanceId, out: &mut Vec<InstanceId>| {
            let slot = self.state.slot_of(root).filter(|_| doomed.contains(&root));
            let Some(slot) = slot else {
                return Err(invalid(format!(
                    "a queued destruction names {root}, not a tombstone awaiting its first drain"
                )));
            };
            if self
                .state
                .record_at(slot)
                .and_then(|r| r.parent())
                .is_some()
            {
                return Err(invalid(format!(
                    "a queued destruction names {root}, a tombstone inside another's subtree"
                )));
            }
            for id in self.collect_subtree(slot).moved().as_slice() {
                if !named.insert(*id) {
                    return Err(invalid(format!("tombstone {id} is destroyed twice")));
                }
                out.push(*id);
            }
            Ok(())
        };
        for event in events {
            match event {
                Event::Created { id, parent } => {
                    held(*id)?;
                    parent.map_or(Ok(()), held)?;
                }
                Event::CreatedRange {
                    first,
                    count,
                    parent,
                } => {
                    if *count == 0 || *count as usize > self.state.live_count() + doomed.len() {
                        return Err(invalid(format!(
                            "a queued creation of {count} instances from {first}"
                        )));
                    }
                    for k in 0..u64::from(*count) {
                        let id = first
                            .get()
                            .checked_add(k)
                            .and_then(InstanceId::new)
                            .ok_or_else(|| {
                                invalid(format!("a creation past the ids from {first}"))
                            })?;
                        held(id)?;
                    }
                    parent.map_or(Ok(()), held)?;
                }
                Event::CreatedList { ids, parent } => {
                    all(ids)?;
                    parent.map_or(Ok(()), held)?;
                }
                Event::DescendantRemoving { ancestors, moved }
                | Event::DescendantAdded { ancestors, moved } => {
                    all(moved.as_slice())?;
                    ancestors.iter().try_for_each(|id| held(*id))?;
                }
                Event::ChildRemoved { parent, child } | Event::ChildAdded { parent, child } => {
                    held(*parent)?;
                    held(*child)?;
                }
                Event::AncestryChanged { moved } => all(moved.as_slice())?,
                Event::Destroyed { subtree } => {
                    all(subtree.as_slice())?;
                    let mut ids = Vec::with_capacity(subtree.len());
                    destroyed(subtree.root(), &mut ids)?;
                    if ids != subtree.as_slice() {
                        return Err(invalid(format!(
                            "the queued destruction of {} does not list its subtree in pre-order",
                            subtree.root()
                        )));
                    }
                }
                Event::DestroyedMany(batch) => {
                    if batch.roots.is_empty() {
                        return Err(invalid("a queued bulk destruction of nothing".into()));
                    }
                    let mut ids = Vec::with_capacity(batch.destroyed.len());
                    for (root, parent) in &batch.roots {
                        destroyed(*root, &mut ids)?;
                        parent.map_or(Ok(()), held)?;
                    }
                    if ids != batch.destroyed {
                        return Err(invalid(
                            "a queued bulk destruction does not list its subtrees in pre-order"
                                .into(),
                        ));
                    }
                }
            }
        }
        if let Some(unnamed) = doomed.iter().find(|id| !named.contains(*id)) {
            return Err(invalid(format!(
                "tombstone {unnamed} awaits its first drain, but no queued event destroys it"
            )));
        }
        Ok(())
    }
}

fn invalid(reason: String) -> ArenaError {
    ArenaError::InvalidImage { reason }
}
