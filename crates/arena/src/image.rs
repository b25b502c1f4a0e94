//! `ArenaImage`: an arena's live instances as plain data, and `Arena::from_image`, which
//! rebuilds an arena from one. Save files convert their own records to and from images at
//! their edge, so the file format never depends on the arena's layout.
//!
//! Invariant: an image lists every live instance exactly once, in pre-order (roots in id
//! order, each followed by its subtree, siblings in their order), with what identifies it (id,
//! GUID, persistent id) and what describes it (class name, parent, name, attributes, built-in
//! state, tags, parent lock), and the arena's own id range with the next id its counter would
//! issue, and the arena's identity source (its GUID seed and its creation and persistent-id
//! counters). `Arena::from_image` checks the whole image while it builds a fresh arena, and
//! refuses it with a typed error (nothing of the half-built arena escapes); an arena it returns
//! has exactly the image's instances, with the image's ids, GUIDs and persistent ids, its
//! counter at or above the image's (so no id the imaged arena issued is ever issued again), its
//! identity source continued from the image's (so it hands out the GUIDs and persistent ids the
//! imaged arena would have, for the same calls), and no pending events.

use std::sync::Arc;

use hashbrown::HashSet;

use crate::arena::Arena;
use crate::class::ClassRegistry;
use crate::error::ArenaError;
use crate::id::{Guid, IdRange, InstanceId, PersistentId};
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

/// One live instance of an [`ArenaImage`].
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
    /// The image of this arena's live instances (tombstones, reservations, pending events and
    /// journals are not part of it).
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
                nodes.push(ImageNode {
                    id,
                    class: Arc::from(self.state.class_of(node.class()).name()),
                    parent: node.parent(),
                    guid: node.guid(),
                    persistent_id: node.persistent_id(),
                    data: node.data().clone(),
                    tags: node.tags().to_vec(),
                    parent_locked: node.is_parent_locked(),
                });
                let first = stack.len();
                stack.extend(self.state.children(id));
                stack[first..].reverse();
            }
        }
        ArenaImage {
            own_range: self.ids.own_range(),
            next_id: self.ids.next_id(),
            nodes,
            identity: Some(ImageIdentity {
                seed: self.state.seed(),
                creations: self.ids.creations_taken(),
                persistent_ids: self.ids.persistent_taken(),
            }),
        }
    }

    /// Rebuilds an arena from an image, with `classes` (classes are matched by name). The
    /// image is checked as the arena is built, and refused with a typed error: an id outside
    /// every range or listed twice, a class this registry lacks, a parent that is not listed
    /// before its child or does not allow it, a state of another kind than the class's, a
    /// persistent id or a GUID held twice, identity counters out of range or below the
    /// instances the image holds ([`ArenaError::InvalidImage`] for what no other error names).
    /// The imaged GUIDs and persistent ids are kept as they were; new ones continue the
    /// image's identity (its seed and counters), so two arenas rebuilt from one image, and the
    /// imaged arena itself, hand out the same identities for the same calls. Without an
    /// identity the rebuilt arena draws a seed of its own.
    pub fn from_image(
        classes: Arc<ClassRegistry>,
        image: &ArenaImage,
    ) -> Result<Arena, ArenaError> {
        let mut arena = match image.own_range {
            IdRange::Server => Arena::new(classes),
            IdRange::ClientLocal => Arena::client(classes),
        };
        let invalid = |reason: String| ArenaError::InvalidImage { reason };
        if let Some(identity) = image.identity {
            if identity.creations > COUNTER_LIMIT || identity.persistent_ids > COUNTER_LIMIT {
                return Err(invalid(format!(
                    "identity counters {} and {} are past {COUNTER_LIMIT}",
                    identity.creations, identity.persistent_ids
                )));
            }
            if identity.creations < image.nodes.len() as u64 {
                return Err(invalid(format!(
                    "{} creations cannot have made the {} instances the image holds",
                    identity.creations,
                    image.nodes.len()
                )));
            }
            // Nothing was created yet, so the seed serves every counter.
            arena.state.reseed(identity.seed, arena.ids.next_creation());
        }
        let mut listed: HashSet<InstanceId> = HashSet::with_capacity(image.nodes.len());
        let mut guids: HashSet<Guid> = HashSet::with_capacity(image.nodes.len());
        // In the image's order, which is pre-order: each parent is in place before its
        // children, and siblings are appended in their order.
        for node in &image.nodes {
            let class = arena
                .state
                .classes()
                .class_id(&node.class)
                .ok_or_else(|| ArenaError::UnknownClass(node.class.to_string()))?;
            if let Some(parent) = node.parent
                && !listed.contains(&parent)
            {
                return Err(invalid(format!(
                    "{} is listed before its parent {}",
                    node.id, parent
                )));
            }
            if !listed.insert(node.id) {
                return Err(ArenaError::IdInUse(node.id));
            }
            if !guids.insert(node.guid) {
                return Err(invalid(format!("GUID {} is held twice", node.guid)));
            }
            arena.insert_imaged(node.id, class, node.parent)?;
            arena.restore_data(node)?;
        }
        for node in &image.nodes {
            if node.parent_locked {
                arena.set_parent_locked(node.id, true)?;
            }
        }
        arena.ids.inserted_below(image.next_id);
        if let Some(identity) = image.identity {
            arena
                .ids
                .continue_counters(identity.creations, identity.persistent_ids);
        }
        arena.outbox.take_events();
        Ok(arena)
    }

    /// Gives a freshly inserted instance the data, tags, identities of its image node.
    fn restore_data(&mut self, node: &ImageNode) -> Result<(), ArenaError> {
        let id = node.id;
        self.set_name(id, &node.data.name)?;
        for (name, value) in node.data.attributes.iter() {
            self.set_attribute(id, name, Some(value.clone()))?;
        }
        self.set_state(id, node.data.state.clone())?;
        for tag in &node.tags {
            self.add_tag(id, tag)?;
        }
        if node.persistent_id.is_some() {
            self.set_persistent_id(id, node.persistent_id)?;
        }
        let slot = self.state.live_slot(id)?;
        self.state.set_guid(slot, node.guid);
        Ok(())
    }
}
