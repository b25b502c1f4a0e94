//! Clone within an arena and graft from another arena.
//!
//! Both run as a construction batch: they first allocate an id for every source instance (the
//! source → copy map), then build the copies with every reference rewritten through that map,
//! then, if a parent was given, move the finished subtree under it as one announced move. Any
//! failure rolls the batch back, leaving no allocation behind.
//!
//! Invariant: a reference between two instances of the copied subtree points, in the copy, to
//! the corresponding copies. A reference leaving the subtree keeps its target on clone; on
//! graft it is cleared or resolved by persistent id, as the caller's policy says, because the
//! source arena's ids mean nothing in the destination.

use std::sync::Arc;

use hashbrown::HashMap;

use crate::arena::Arena;
use crate::class::ClassId;
use crate::error::ArenaError;
use crate::id::{InstanceId, PersistentId, Slot};
use crate::snapshot::Snapshot;
use crate::state::NodeData;

/// The mapping from source instances to their copies, in source pre-order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CloneMap {
    pairs: Vec<(InstanceId, InstanceId)>,
    index: HashMap<InstanceId, InstanceId>,
}

impl CloneMap {
    fn with_capacity(n: usize) -> Self {
        Self {
            pairs: Vec::with_capacity(n),
            index: HashMap::with_capacity(n),
        }
    }

    fn insert(&mut self, source: InstanceId, copy: InstanceId) {
        self.pairs.push((source, copy));
        self.index.insert(source, copy);
    }

    /// The copy of a source instance.
    pub fn get(&self, source: InstanceId) -> Option<InstanceId> {
        self.index.get(&source).copied()
    }

    /// The copy of the subtree root.
    pub fn root(&self) -> Option<InstanceId> {
        self.pairs.first().map(|(_, copy)| *copy)
    }

    /// (source, copy) pairs in source pre-order.
    pub fn iter(&self) -> impl Iterator<Item = (InstanceId, InstanceId)> + '_ {
        self.pairs.iter().copied()
    }

    /// How many instances were copied.
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    /// Whether nothing was copied.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }
}

/// What a graft does with a reference that leaves the grafted subtree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExternalRefs {
    /// Clear it.
    Clear,
    /// Point it at the destination instance holding the same persistent id as the source
    /// target; clear it when there is none.
    ResolveByPersistentId,
}

/// The outcome of a graft.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Graft {
    /// Source instance → copy in this arena.
    pub map: CloneMap,
    /// External references that were cleared.
    pub cleared: usize,
    /// External references resolved by persistent id.
    pub resolved: usize,
    /// Source persistent ids carried over to the copies.
    pub persistent_ids_kept: usize,
    /// Source persistent ids not carried over because the destination already used them.
    pub persistent_ids_dropped: usize,
}

/// One source instance, read out before construction starts.
struct SourceNode {
    id: InstanceId,
    class: ClassId,
    parent: Option<InstanceId>,
    data: NodeData,
    tags: Box<[Arc<str>]>,
    persistent_id: Option<PersistentId>,
}

fn collect_source(source: &Snapshot, root: InstanceId) -> Result<Vec<SourceNode>, ArenaError> {
    source.live_node(root)?;
    std::iter::once(root)
        .chain(source.descendants(root))
        .map(|id| {
            let node = source.live_node(id)?;
            Ok(SourceNode {
                id,
                class: node.class,
                parent: if id == root { None } else { node.parent },
                data: node.data.clone(),
                tags: node.tags.clone(),
                persistent_id: node.persistent_id,
            })
        })
        .collect()
}

/// Refuses subtrees containing services: they are singletons of their place.
fn refuse_services(nodes: &[SourceNode], classes: &crate::ClassRegistry) -> Result<(), ArenaError> {
    match nodes
        .iter()
        .find(|n| classes.get(n.class).is_some_and(|c| c.is_service()))
    {
        Some(service) => Err(ArenaError::NotCloneable(service.id)),
        None => Ok(()),
    }
}

/// Counters a copy reports.
#[derive(Default)]
struct CopyCounts {
    external_kept: usize,
    external_cleared: usize,
    persistent_kept: usize,
    persistent_dropped: usize,
}

impl Arena {
    /// Copies the subtree of `source`, with new ids, GUIDs and no persistent ids, and places the
    /// copy under `parent` (or leaves it unparented). References inside the subtree are
    /// remapped to the copies; references leaving it keep their targets. Tags are copied.
    ///
    /// Refused, changing nothing, for unknown or destroyed sources and destinations, containment
    /// violations, and subtrees containing services. If allocation fails part-way the batch is
    /// rolled back.
    pub fn clone_subtree(
        &mut self,
        source: InstanceId,
        parent: Option<InstanceId>,
    ) -> Result<CloneMap, ArenaError> {
        let nodes = collect_source(&self.state, source)?;
        refuse_services(&nodes, &self.state.classes)?;
        let parent = self.check_new_child(nodes[0].class, parent)?;
        let (map, _) = self.build_copy(
            &nodes,
            parent,
            |_, node| Ok(node.class),
            |_, target| Some(target),
            false,
        )?;
        Ok(map)
    }

    /// Copies the subtree of `root` from another arena's snapshot into this arena under
    /// `parent`. Classes are matched by name; references leaving the subtree follow `policy`;
    /// source persistent ids are kept where this arena does not already use them; tags are
    /// kept.
    ///
    /// An unknown class name or an exhausted id range fails the graft, rolling back every
    /// instance it had built.
    pub fn graft(
        &mut self,
        source: &Snapshot,
        root: InstanceId,
        parent: Option<InstanceId>,
        policy: ExternalRefs,
    ) -> Result<Graft, ArenaError> {
        let nodes = collect_source(source, root)?;
        refuse_services(&nodes, source.classes())?;
        let root_class = self.graft_class(source, nodes[0].class)?;
        let parent = self.check_new_child(root_class, parent)?;
        let (map, counts) = self.build_copy(
            &nodes,
            parent,
            |arena, node| arena.graft_class(source, node.class),
            |arena, target| match policy {
                ExternalRefs::Clear => None,
                ExternalRefs::ResolveByPersistentId => source
                    .get(target)
                    .and_then(|n| n.persistent_id)
                    .and_then(|pid| arena.state.by_persistent_id(pid)),
            },
            true,
        )?;
        Ok(Graft {
            map,
            cleared: counts.external_cleared,
            resolved: counts.external_kept,
            persistent_ids_kept: counts.persistent_kept,
            persistent_ids_dropped: counts.persistent_dropped,
        })
    }

    fn graft_class(&self, source: &Snapshot, class: ClassId) -> Result<ClassId, ArenaError> {
        let name = source
            .classes()
            .get(class)
            .map(|c| c.name())
            .ok_or(ArenaError::UnknownClassId(class.0))?;
        self.state
            .classes
            .class_id(name)
            .ok_or_else(|| ArenaError::UnknownClass(name.to_owned()))
    }

    /// Runs a copy as a construction batch: commits on success, rolls back on failure.
    fn build_copy(
        &mut self,
        nodes: &[SourceNode],
        parent: Option<(InstanceId, Slot)>,
        class_of: impl FnMut(&Arena, &SourceNode) -> Result<ClassId, ArenaError>,
        external: impl FnMut(&Arena, InstanceId) -> Option<InstanceId>,
        carry_persistent_ids: bool,
    ) -> Result<(CloneMap, CopyCounts), ArenaError> {
        let checkpoint = self.checkpoint();
        match self.copy_nodes(nodes, parent, class_of, external, carry_persistent_ids) {
            Ok(outcome) => {
                self.commit(checkpoint)?;
                Ok(outcome)
            }
            Err(error) => {
                self.rollback(checkpoint)?;
                Err(error)
            }
        }
    }

    fn copy_nodes(
        &mut self,
        nodes: &[SourceNode],
        parent: Option<(InstanceId, Slot)>,
        mut class_of: impl FnMut(&Arena, &SourceNode) -> Result<ClassId, ArenaError>,
        mut external: impl FnMut(&Arena, InstanceId) -> Option<InstanceId>,
        carry_persistent_ids: bool,
    ) -> Result<(CloneMap, CopyCounts), ArenaError> {
        // First the whole id mapping, so references to later nodes can be rewritten.
        let mut map = CloneMap::with_capacity(nodes.len());
        let count = u32::try_from(nodes.len()).map_err(|_| ArenaError::SlotsExhausted)?;
        let first = self.reserve_ids(count)?;
        for (offset, node) in (0..).zip(nodes) {
            let id = InstanceId::new(first.get() + offset).expect("reserved ids are non-zero");
            map.insert(node.id, id);
        }
        let mut counts = CopyCounts::default();
        let mut root_slot = None;
        for (node, &(_, copy)) in nodes.iter().zip(&map.pairs) {
            let class = class_of(self, node)?;
            let mut data = node.data.clone();
            data.for_each_reference_mut(|reference| {
                let Some(target) = *reference else { return };
                *reference = match map.get(target) {
                    Some(internal) => Some(internal),
                    None => {
                        let resolved = external(self, target);
                        if resolved.is_some() {
                            counts.external_kept += 1;
                        } else {
                            counts.external_cleared += 1;
                        }
                        resolved
                    }
                };
            });
            let link = node
                .parent
                .and_then(|p| map.get(p))
                .and_then(|p| self.state.slot_of(p).map(|slot| (p, slot)));
            let mut slot = None;
            self.place_run(copy, 1, class, data, link, |_, placed| slot = Some(placed));
            self.announce_created(copy, link);
            let slot = slot.expect("a run of one places one node");
            for tag in &node.tags {
                self.add_tag(copy, tag)?;
            }
            if let (true, Some(pid)) = (carry_persistent_ids, node.persistent_id) {
                if self.state.by_persistent_id(pid).is_none() {
                    self.set_persistent_id(copy, Some(pid))?;
                    counts.persistent_kept += 1;
                } else {
                    counts.persistent_dropped += 1;
                }
            }
            root_slot.get_or_insert(slot);
        }
        if let (Some(parent), Some(root), Some(root_slot)) = (parent, map.root(), root_slot) {
            let subtree = self.collect_subtree(root);
            self.move_subtree(root, root_slot, Some(parent), subtree);
        }
        Ok((map, counts))
    }
}
