//! `ArenaImage`: an arena's live instances as plain data, and `Arena::from_image`, which
//! rebuilds an arena from one. Save files convert their own records to and from images at
//! their edge, so the file format never depends on the arena's layout.
//!
//! Invariant: an image lists every live instance exactly once, in pre-order (roots in id
//! order, each followed by its subtree, siblings in their order), with what identifies it (id,
//! GUID, persistent id) and what describes it (class name, parent, name, attributes, built-in
//! state, tags, parent lock), and the arena's own id range with the next id its counter would
//! issue. `Arena::from_image` checks the whole image while it builds a fresh arena, and refuses
//! it with a typed error (nothing of the half-built arena escapes); an arena it returns has
//! exactly the image's instances, with the image's ids, GUIDs and persistent ids, its counter
//! at or above the image's (so no id the imaged arena issued is ever issued again), and no
//! pending events.

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
}

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
        }
    }

    /// Rebuilds an arena from an image, with `classes` (classes are matched by name). The
    /// image is checked as the arena is built, and refused with a typed error: an id outside
    /// every range or listed twice, a class this registry lacks, a parent that is not listed
    /// before its child or does not allow it, a state of another kind than the class's, a
    /// persistent id or a GUID held twice ([`ArenaError::InvalidImage`] for what no other
    /// error names). New GUIDs and persistent ids of the rebuilt arena come from a seed of its
    /// own; the imaged ones are kept as they were.
    pub fn from_image(
        classes: Arc<ClassRegistry>,
        image: &ArenaImage,
    ) -> Result<Arena, ArenaError> {
        let mut arena = match image.own_range {
            IdRange::Server => Arena::new(classes),
            IdRange::ClientLocal => Arena::client(classes),
        };
        let invalid = |reason: String| ArenaError::InvalidImage { reason };
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
        arena.outbox.take_events();
        Ok(arena)
    }

    /// Gives a freshly inserted instance the data, tags, identities of its image node.
    fn restore_data(&mut self, node: &ImageNode) -> Result<(), ArenaError> {
        let id = node.id;
        self.set_name(id, &node.data.name)?;
        for (name, value) in node.data.attributes.iter() {
            self.put_attribute(id, name, Some(value.clone()))?;
        }
        self.put_state(id, node.data.state.clone())?;
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
