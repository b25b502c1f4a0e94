//! Clone and graft with components: the arena copies the subtree (built-in and attribute
//! references remapped), the store copies the rows and orphan records of every copied
//! instance with their references remapped the same way.
//!
//! Invariant: a copy is whole or absent. Every reference between two instances of the copied
//! subtree points, in the copy, to the corresponding copies (typed rows, lists of references and
//! orphan records included); a reference leaving the subtree keeps its target on clone, and on
//! graft is cleared or resolved by persistent id as the caller's policy says. The arena copy runs
//! inside a construction batch: if the store refuses the rows, the batch is rolled back and
//! nothing of the copy remains.

use strata_arena::{ExternalRefs, InstanceId, Snapshot};
use strata_component_store::{CopyPair, OrphanRecord, Store};

use crate::error::WorldError;
use crate::scene::Scene;

impl Scene {
    /// Copies the subtree of `source` with its components under `parent` (or unparented).
    /// Returns the copy of `source`. References inside the subtree point to the copies;
    /// references leaving it keep their targets.
    pub fn clone_subtree(
        &mut self,
        source: InstanceId,
        parent: Option<InstanceId>,
    ) -> Result<InstanceId, WorldError> {
        let checkpoint = self.arena.checkpoint();
        let map = match self.arena.clone_subtree(source, parent) {
            Ok(map) => map,
            Err(error) => {
                self.arena.rollback(checkpoint)?;
                return Err(error.into());
            }
        };
        let pairs = match self.copy_pairs(map.iter()) {
            Ok(pairs) => pairs,
            Err(error) => {
                self.arena.rollback(checkpoint)?;
                return Err(error);
            }
        };
        let copied = self
            .store
            .copy_rows(&pairs, |target| Some(map.get(target).unwrap_or(target)));
        if let Err(error) = copied {
            self.arena.rollback(checkpoint)?;
            return Err(error.into());
        }
        self.arena.commit(checkpoint)?;
        self.count_writes(pairs.len() as u64);
        map.root().ok_or(WorldError::NotLive(source))
    }

    /// Copies the subtree of `root` from another scene (another world, a loaded one) under
    /// `parent` in this one, with its components: each source row comes over as a raw record
    /// and is adopted onto this scene's component of the same name (by field name, then former
    /// names, with the report's conversions); a record whose component is not installed here
    /// stays an orphan until it is, as do the source's own orphan records. References leaving
    /// the subtree follow `policy`. Returns the copy of `root`.
    pub fn graft_from(
        &mut self,
        source: &Scene,
        root: InstanceId,
        parent: Option<InstanceId>,
        policy: ExternalRefs,
    ) -> Result<InstanceId, WorldError> {
        self.graft(&source.arena, &source.store, root, parent, policy)
    }

    /// [`Scene::graft_from`] from an arena snapshot and the store beside it.
    pub fn graft(
        &mut self,
        arena: &Snapshot,
        store: &Store,
        root: InstanceId,
        parent: Option<InstanceId>,
        policy: ExternalRefs,
    ) -> Result<InstanceId, WorldError> {
        // Every source record is read before anything is built, so nothing can fail after the
        // arena has built the copy.
        let mut records: Vec<(InstanceId, OrphanRecord)> = Vec::new();
        for source in std::iter::once(root).chain(arena.descendants(root)) {
            let at = strata_component_store::InstanceRef::of(arena, source)?;
            for set in store.components() {
                if set.contains(at) {
                    records.push((source, store.record(at, set.id())?));
                }
            }
            records.extend(
                store
                    .orphans()
                    .of(source)
                    .iter()
                    .map(|record| (source, record.clone())),
            );
        }
        let graft = self.arena.graft(arena, root, parent, policy)?;
        let map = &graft.map;
        for (source, mut record) in records {
            let Some(copy) = map.get(source) else {
                continue;
            };
            for (_, value) in &mut record.fields {
                value.rewrite_references(&mut |target| match map.get(target) {
                    Some(internal) => Some(internal),
                    None => match policy {
                        ExternalRefs::Clear => None,
                        ExternalRefs::ResolveByPersistentId => arena
                            .get(target)
                            .and_then(|node| node.persistent_id())
                            .and_then(|pid| self.arena.by_persistent_id(pid)),
                    },
                });
            }
            let at = self.instance_ref(copy)?;
            self.store.add_orphan(at, record);
        }
        self.adopt_pending_orphans();
        map.root().ok_or(WorldError::NotLive(root))
    }

    /// The store's copy pairs of a clone map (source and copy, with the copy's class).
    fn copy_pairs(
        &self,
        map: impl Iterator<Item = (InstanceId, InstanceId)>,
    ) -> Result<Vec<CopyPair>, WorldError> {
        map.map(|(source, copy)| {
            Ok(CopyPair {
                source: self.instance_ref(source)?,
                copy: self.instance_ref(copy)?,
                class: self.arena.node(copy)?.class(),
            })
        })
        .collect()
    }
}
