//! Clone within an arena and graft from another arena.
//!
//! Both first check every source instance against this arena's registry (class, state kind,
//! services, containment under its copied parent) and the room for the copy, so a refused copy
//! writes nothing. Then they reserve an id for every source instance (the source → copy map),
//! build the copies with every reference rewritten through that map, and, if a parent was
//! given, move the finished subtree under it as one announced move.
//!
//! Invariant: a reference between two instances of the copied subtree points, in the copy, to
//! the corresponding copies. A reference leaving the subtree keeps its target on clone; on
//! graft it is cleared or resolved by persistent id, as the caller's policy says, because the
//! source arena's ids mean nothing in the destination.

use std::sync::Arc;

use hashbrown::HashMap;

use crate::arena::Arena;
use crate::class::{ClassId, ClassRegistry};
use crate::error::ArenaError;
use crate::id::{InstanceId, PersistentId, Slot};
use crate::snapshot::{Cold, Snapshot};
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

/// One source instance, read out and checked before construction starts.
struct SourceNode {
    id: InstanceId,
    /// The class of the copy, in this arena's registry.
    class: ClassId,
    parent: Option<InstanceId>,
    /// Name, attributes and state, or `None` when they are the class's defaults (which hold
    /// no references).
    data: Option<NodeData>,
    tags: Box<[Arc<str>]>,
    persistent_id: Option<PersistentId>,
}

/// The subtree of `root` in pre-order, each node with its class in the source registry.
fn collect_source(source: &Snapshot, root: InstanceId) -> Result<Vec<SourceNode>, ArenaError> {
    source.live_record(root)?;
    std::iter::once(root)
        .chain(source.descendants(root))
        .map(|id| {
            let record = source.live_record(id)?;
            Ok(SourceNode {
                id,
                class: record.class(),
                parent: if id == root {
                    None
                } else {
                    source.parent_of(record)
                },
                data: source.cold_of(record).map(|cold| cold.data.clone()),
                tags: source.tags_of(record).into(),
                persistent_id: source.persistent_id_of(record),
            })
        })
        .collect()
}

/// Whether a copy carries the source's persistent ids over.
#[derive(Clone, Copy, PartialEq, Eq)]
enum PersistentIds {
    /// A clone: the copies are new objects and get none.
    Drop,
    /// A graft: the copies are the source's objects arriving here, and keep theirs where this
    /// arena does not use them already.
    Carry,
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
    /// # Errors
    ///
    /// Refused, changing nothing, for unknown or destroyed sources and destinations, containment
    /// violations, subtrees containing services, and an id range or slot table that cannot hold the
    /// copy. Everything is checked before the first write, so a copy never stops half-way.
    pub fn clone_subtree(
        &mut self,
        source: InstanceId,
        parent: Option<InstanceId>,
    ) -> Result<CloneMap, ArenaError> {
        let mut nodes = collect_source(&self.state, source)?;
        let parent = self.check_copy(self.state.classes(), &mut nodes, parent, |_, class| {
            Ok(class)
        })?;
        let (map, _) = self.copy_nodes(
            &nodes,
            parent,
            |_, target| Some(target),
            PersistentIds::Drop,
        )?;
        Ok(map)
    }

    /// Copies the subtree of `root` from another arena's snapshot into this arena under
    /// `parent`. Classes are matched by name; references leaving the subtree follow `policy`;
    /// source persistent ids are kept where this arena does not already use them; tags are
    /// kept.
    ///
    /// # Errors
    ///
    /// Every copied node is checked against this arena's registry before the first write: its class
    /// name must be registered here ([`ArenaError::UnknownClass`]) with the same state kind
    /// ([`ArenaError::StateKindMismatch`]), be a service in neither registry
    /// ([`ArenaError::NotCloneable`]), and be allowed under its copied parent
    /// ([`ArenaError::Containment`]); the id range and slots must hold the copy. A refused graft
    /// changes nothing.
    pub fn graft(
        &mut self,
        source: &Snapshot,
        root: InstanceId,
        parent: Option<InstanceId>,
        policy: ExternalRefs,
    ) -> Result<Graft, ArenaError> {
        let mut nodes = collect_source(source, root)?;
        let parent = self.check_copy(source.classes(), &mut nodes, parent, |arena, class| {
            arena.graft_class(source, class)
        })?;
        let (map, counts) = self.copy_nodes(
            &nodes,
            parent,
            |arena, target| match policy {
                ExternalRefs::Clear => None,
                ExternalRefs::ResolveByPersistentId => source
                    .get(target)
                    .and_then(|n| n.persistent_id())
                    .and_then(|pid| arena.state.by_persistent_id(pid)),
            },
            PersistentIds::Carry,
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
            .classes()
            .class_id(name)
            .ok_or_else(|| ArenaError::UnknownClass(name.to_owned()))
    }

    /// Checks every node of a copy before anything is written, and rewrites each node's class
    /// from the source registry (`source_classes`) to this arena's (through `resolve`): no
    /// service in either registry, the same state kind in both, the root allowed under
    /// `parent` and every other node under its copied parent. Returns the validated parent.
    fn check_copy(
        &self,
        source_classes: &ClassRegistry,
        nodes: &mut [SourceNode],
        parent: Option<InstanceId>,
        resolve: impl Fn(&Arena, ClassId) -> Result<ClassId, ArenaError>,
    ) -> Result<Option<(InstanceId, Slot)>, ArenaError> {
        let mut copied: HashMap<InstanceId, ClassId> = HashMap::with_capacity(nodes.len());
        let mut checked_parent = None;
        for (index, node) in nodes.iter_mut().enumerate() {
            let source_descriptor = source_classes
                .get(node.class)
                .ok_or(ArenaError::UnknownClassId(node.class.0))?;
            let class = resolve(self, node.class)?;
            let descriptor = self.state.class_of(class);
            if source_descriptor.is_service() || descriptor.is_service() {
                return Err(ArenaError::NotCloneable {
                    id: node.id,
                    service: descriptor.name().to_owned(),
                });
            }
            if source_descriptor.state_kind() != descriptor.state_kind() {
                return Err(ArenaError::StateKindMismatch {
                    class: descriptor.name().to_owned(),
                    source_kind: source_descriptor.state_kind(),
                    destination_kind: descriptor.state_kind(),
                });
            }
            if index == 0 {
                checked_parent = self.check_new_child(class, parent)?;
            } else if let Some(parent_class) = node.parent.and_then(|p| copied.get(&p).copied())
                && !descriptor.allows_parent(parent_class)
            {
                return Err(ArenaError::Containment {
                    child_class: descriptor.name().to_owned(),
                    parent_class: self.state.class_of(parent_class).name().to_owned(),
                });
            }
            node.class = class;
            copied.insert(node.id, class);
        }
        Ok(checked_parent)
    }

    /// Builds a checked copy: reserves an id for every node (the source → copy map, so
    /// references to later nodes can be rewritten), creates the copies with their references
    /// remapped and their tags (and, when carried, persistent ids), then moves the finished
    /// subtree under `parent` as one announced move. Only the id reservation can refuse, and it
    /// does so before writing anything.
    fn copy_nodes(
        &mut self,
        nodes: &[SourceNode],
        parent: Option<(InstanceId, Slot)>,
        mut external: impl FnMut(&Arena, InstanceId) -> Option<InstanceId>,
        persistent_ids: PersistentIds,
    ) -> Result<(CloneMap, CopyCounts), ArenaError> {
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
            let mut refers = false;
            let cold = node.data.as_ref().map(|data| {
                let mut data = data.clone();
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
                    refers |= reference.is_some();
                });
                Arc::new(Cold::new(data))
            });
            if refers {
                self.state.note_referrer(copy);
            }
            let link = node
                .parent
                .and_then(|p| map.get(p))
                .and_then(|p| self.state.slot_of(p).map(|slot| (p, slot)));
            let mut placed = None;
            self.place_run(copy, 1, node.class, cold, link, |_, slot| {
                placed = Some(slot)
            });
            self.announce_created(copy, link);
            let slot = placed.expect("a run of one places one node");
            for tag in &node.tags {
                self.insert_tag(slot, tag);
            }
            if let (PersistentIds::Carry, Some(pid)) = (persistent_ids, node.persistent_id) {
                if self.state.by_persistent_id(pid).is_none() {
                    self.state.set_persistent_id(slot, Some(pid));
                    counts.persistent_kept += 1;
                } else {
                    counts.persistent_dropped += 1;
                }
            }
            root_slot.get_or_insert(slot);
        }
        if let (Some(parent), Some(root_slot)) = (parent, root_slot) {
            let subtree = self.collect_subtree(root_slot);
            self.move_subtree(subtree, Some(parent));
        }
        Ok((map, counts))
    }
}
