//! `Scene`: a world's instances and components (the arena, the component store and the sync
//! of Luau definitions) with every operation on them. A [`World`](crate::World) derefs to its
//! scene, and so does a serial system's [`Ctx`](crate::Ctx), so game code outside and inside
//! systems uses one API.
//!
//! Invariant: the arena and the store stay in step. Every instance the store holds a row for is
//! live in the arena or a tombstone awaiting reclamation: components are added only to live
//! instances through references made from the arena ([`InstanceRef::of`]); every destruction
//! goes through [`Scene::destroy`] (or a staged batch committed by [`Scene::commit`]), which hands
//! the store its removals, applies the reference policies and follows the destroy requests they
//! make until none is left; every reclamation is reported to the store by the frame loop. The
//! arena and the store are private to this crate: callers read them through [`Scene::arena`] and
//! [`Scene::store`] and change them only through the scene.

use std::cell::Cell;
use std::sync::Arc;

use strata_arena::{Arena, ClassId, InstanceId, Snapshot};
use strata_component_store::{InstanceRef, OrphanRecord, Store};
use strata_schema_adoption::{ComponentReport, SchemaSync, SyncReport};

use crate::error::WorldError;

/// A world's instances and components (see the module docs).
pub struct Scene {
    pub(crate) arena: Arena,
    pub(crate) store: Store,
    pub(crate) sync: SchemaSync,
    game: InstanceId,
    workspace: InstanceId,
    /// What a running system reports to its statistics.
    counts: Counts,
    /// Definition syncs made since the frame's events were last taken.
    pub(crate) syncs: Vec<SyncReport>,
    /// Adoptions of orphans onto components defined in Rust since then.
    pub(crate) adoptions: Vec<ComponentReport>,
    /// The world's thread pool, which parallel passes run on.
    pub(crate) pool: Option<Arc<rayon::ThreadPool>>,
    /// Migration input loaded from a save for rows whose component is not installed yet: the
    /// instance, the component's name and the values. Placed in the store when the component
    /// is installed (see [`Scene::place_waiting_migrations`]).
    pub(crate) waiting_migrations: Vec<(InstanceId, String, OrphanRecord)>,
    /// The game VM, made at the first script.
    pub(crate) scripts: Option<crate::script::Scripts>,
    /// The budget game VMs are made with.
    pub(crate) script_budget: crate::script::ScriptBudget,
    /// The memory the world's game VMs share.
    pub(crate) script_memory: Arc<crate::script::ScriptMemory>,
    /// What scripts printed, not yet taken.
    pub(crate) prints: Vec<String>,
    /// Commits of execution groups since the frame's events were last taken.
    pub(crate) group_commits: Vec<strata_parallel_overlay::CommitReport>,
    /// The seed parallel runs shuffle their lanes by, in the test mode that does.
    pub(crate) lane_shuffle: Option<crate::lanes::LaneShuffle>,
    /// Whether queries made from now on keep their matches (see `Scene::set_query_caching`).
    pub(crate) query_caching: bool,
    /// The frame and the simulated time, as the world's frame loop keeps them.
    pub(crate) clock: Clock,
}

/// Where a world is in its frames: the frame being run (or the next one to run, between
/// frames) and the simulated seconds before it began, the sum of every earlier frame's `dt`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Clock {
    pub(crate) frame: u64,
    pub(crate) time: f64,
}

/// What the scene's operations did, for the statistics of the system that asked.
#[derive(Debug, Default)]
pub(crate) struct Counts {
    pub(crate) reads: Cell<u64>,
    pub(crate) writes: Cell<u64>,
    pub(crate) rows: Cell<u64>,
}

impl Counts {
    /// Takes the counts (reads, writes, rows) and starts again from zero.
    pub(crate) fn take(&self) -> (u64, u64, u64) {
        (self.reads.take(), self.writes.take(), self.rows.take())
    }
}

impl std::fmt::Debug for Scene {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scene")
            .field("live", &self.arena.live_count())
            .field("store", &self.store.id())
            .finish_non_exhaustive()
    }
}

impl Scene {
    /// A scene with the standard classes: a `DataModel` (the game) with a `Workspace` under it;
    /// GUIDs and persistent ids from `seed` when given, from a seed of the arena's own otherwise.
    pub(crate) fn new(seed: Option<u64>) -> Result<Self, WorldError> {
        let mut arena = match seed {
            Some(seed) => Arena::standard().with_seed(seed),
            None => Arena::standard(),
        };
        let game = arena.create(ClassId::DATA_MODEL, None)?;
        let workspace = arena.create(ClassId::WORKSPACE, Some(game))?;
        Self::from_parts(arena, Store::new(), game, workspace)
    }

    /// A scene over an arena and a store that are in step.
    pub(crate) fn from_parts(
        arena: Arena,
        store: Store,
        game: InstanceId,
        workspace: InstanceId,
    ) -> Result<Self, WorldError> {
        Ok(Self {
            arena,
            store,
            sync: SchemaSync::new()?,
            game,
            workspace,
            counts: Counts::default(),
            syncs: Vec::new(),
            adoptions: Vec::new(),
            pool: None,
            waiting_migrations: Vec::new(),
            scripts: None,
            script_budget: crate::script::ScriptBudget::STANDARD,
            script_memory: Arc::new(crate::script::ScriptMemory::new(
                crate::script::ScriptBudget::STANDARD.memory,
            )),
            prints: Vec::new(),
            group_commits: Vec::new(),
            lane_shuffle: None,
            query_caching: true,
            clock: Clock::default(),
        })
    }

    /// Hands the store the waiting migration input of every component now installed: kept
    /// for a live instance holding the component (unless the row already has input of its
    /// own, which is newer), dropped otherwise. Input of a component still missing waits while
    /// its instance lives.
    pub(crate) fn place_waiting_migrations(&mut self) {
        if self.waiting_migrations.is_empty() {
            return;
        }
        let waiting = std::mem::take(&mut self.waiting_migrations);
        for (id, component_name, record) in waiting {
            let Ok(at) = self.instance_ref(id) else {
                continue;
            };
            let Some(component) = self.store.component(&component_name) else {
                self.waiting_migrations.push((id, component_name, record));
                continue;
            };
            if self.store.has(at, component) && self.store.migration_input(id, component).is_none()
            {
                self.store.set_migration_input(at, component, record);
            }
        }
    }

    /// The root of the hierarchy (a `DataModel`).
    pub fn game(&self) -> InstanceId {
        self.game
    }

    /// The world container (a `Workspace` under the game): parts under it are in the world.
    pub fn workspace(&self) -> InstanceId {
        self.workspace
    }

    /// The hierarchy, for reading: classes, parents and children, names, attributes, built-in
    /// state, tags, revisions and journals.
    pub fn arena(&self) -> &Snapshot {
        &self.arena
    }

    /// Every live instance as plain records (ids, GUIDs, classes, parents, data, tags), in
    /// hierarchy order: what a save holds of the hierarchy.
    pub fn arena_image(&self) -> strata_arena::ArenaImage {
        self.arena.image()
    }

    /// The arena's events queued since the last drain (the frame's end drains them).
    pub fn pending_events(&self) -> &[strata_arena::Event] {
        self.arena.pending_events()
    }

    /// Destroyed instances whose slots are not reclaimed yet.
    pub fn pending_reclamation(&self) -> usize {
        self.arena.pending_reclamation()
    }

    /// The id the next creation gets (ids only move forward, rollback included).
    pub fn next_id(&self) -> u64 {
        self.arena.next_id()
    }

    /// The component store, for reading: sets, columns, ticks, dirty state, removal logs.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// A checked reference to a live instance, as the store addresses it.
    pub fn instance_ref(&self, id: InstanceId) -> Result<InstanceRef, WorldError> {
        if !self.arena.is_live(id) {
            return Err(WorldError::NotLive(id));
        }
        Ok(InstanceRef::of(&self.arena, id)?)
    }

    pub(crate) fn counts(&self) -> &Counts {
        &self.counts
    }

    pub(crate) fn count_reads(&self, n: u64) {
        self.counts.reads.set(self.counts.reads.get() + n);
    }

    pub(crate) fn count_writes(&self, n: u64) {
        self.counts.writes.set(self.counts.writes.get() + n);
    }

    pub(crate) fn count_rows(&self, n: u64) {
        self.counts.rows.set(self.counts.rows.get() + n);
    }
}
