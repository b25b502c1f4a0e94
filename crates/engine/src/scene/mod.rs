//! `Scene`: a world's instances and components (the arena, the component store and the sync
//! of Luau definitions) with every operation on them. A [`World`](crate::World) derefs to its
//! scene, and so does a serial system's [`Ctx`](crate::Ctx), so game code outside and inside
//! systems uses one API. The operations live in this module's children: `instances.rs`
//! (creation, hierarchy, attributes, destruction), `components.rs` (definitions, rows, reads
//! and writes, queries, staged bulk work), `copy.rs` (clones and grafts), `definitions.rs`
//! (Luau definitions and their sync), `wave.rs` (waves of parallel work and their one commit
//! path) and `lanes.rs` (how a wave meets the pool).
//!
//! Invariant: the arena and the store stay in step. Every instance the store holds a row for is
//! live in the arena or a tombstone awaiting reclamation: components are added only to live
//! instances through references made from the arena ([`InstanceRef::of`]); every destruction
//! goes through [`Scene::destroy`] (or a staged batch committed by [`Scene::commit`]), which hands
//! the store its removals, applies the reference policies and follows the destroy requests they
//! make until none is left; every reclamation reaches the store in the same call that drains it
//! from the arena ([`Scene::drain_arena`]); every reference a value, an attribute or a built-in
//! property holds names a live instance. The arena and the store are private to this module and
//! its children: everything else reads them through [`Scene::arena`] and [`Scene::store`] and
//! changes them only through the scene's methods.

use std::any::{Any, TypeId};
use std::cell::Cell;
use std::sync::Arc;

use hashbrown::HashMap;
use strata_arena::{Arena, ClassId, Drained, InstanceId, SavePoint, Snapshot};
use strata_component_store::{InstanceRef, OrphanRecord, Store};
use strata_parallel_overlay::{CommitReport, Spare};
use strata_schema_adoption::{ComponentReport, SchemaSync, SyncReport};

use crate::error::WorldError;

mod components;
mod copy;
mod definitions;
mod instances;
pub(crate) mod lanes;
mod wave;

pub use components::Insert;
pub use instances::DestroyReport;
pub use wave::Wave;

/// A world's instances and components (see the module docs).
pub struct Scene {
    arena: Arena,
    store: Store,
    sync: SchemaSync,
    game: InstanceId,
    workspace: InstanceId,
    /// What a running system reports to its statistics.
    counts: Counts,
    /// Definition syncs made since the frame's events were last taken.
    syncs: Vec<SyncReport>,
    /// Adoptions of orphans onto components defined in Rust since then.
    adoptions: Vec<ComponentReport>,
    /// The world's thread pool, which parallel passes and waves run on.
    pool: Option<Arc<rayon::ThreadPool>>,
    /// Overlay memory handed from one wave's commit to the next wave's overlays.
    spare: Spare,
    /// The lists of the arena's last drain, kept so the next drain reuses their memory.
    drained: Drained,
    /// Migration input loaded from a save for rows whose component is not installed yet: the
    /// instance, the component's name and the values. Placed in the store when the component
    /// is installed (see [`Scene::place_waiting_migrations`]).
    waiting_migrations: Vec<(InstanceId, String, OrphanRecord)>,
    /// What code printed (scripts, through their layer), not yet taken.
    prints: Vec<String>,
    /// The commits of waves since the frame's events were last taken.
    commits: Vec<CommitReport>,
    /// The seed parallel runs shuffle their lanes by, in the test mode that does.
    lane_shuffle: Option<lanes::LaneShuffle>,
    /// Whether queries made from now on keep their matches (see `Scene::set_query_caching`).
    query_caching: bool,
    /// The frame and the simulated time, as the world's frame loop keeps them.
    clock: Clock,
    /// What other layers keep with the scene (a scripting layer's VMs, say), one value a type.
    extensions: HashMap<TypeId, Box<dyn Any + Send>>,
}

/// Where a world is in its frames: the frame being run (or the next one to run, between
/// frames) and the simulated seconds before it began, the sum of every earlier frame's `dt`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Clock {
    /// The frame.
    pub frame: u64,
    /// The simulated seconds before it began.
    pub time: f64,
}

/// What a scene held at one moment, for a world's snapshot: the arena's save point, a store
/// snapshot and the migration input waiting for its component.
#[derive(Debug)]
pub(crate) struct SceneSnapshot {
    pub(crate) arena: SavePoint,
    pub(crate) store: Store,
    pub(crate) waiting_migrations: Vec<(InstanceId, String, OrphanRecord)>,
}

impl Clone for SceneSnapshot {
    fn clone(&self) -> Self {
        Self {
            arena: self.arena.clone(),
            store: self.store.snapshot(),
            waiting_migrations: self.waiting_migrations.clone(),
        }
    }
}

/// What draining a frame's end took from the scene: the arena's events, and what the frame
/// collected for its events besides.
pub(crate) struct FrameTake {
    pub(crate) lifecycle: Vec<strata_arena::Event>,
    pub(crate) prints: Vec<String>,
    pub(crate) commits: Vec<CommitReport>,
    pub(crate) components: Vec<strata_component_store::StoreEvent>,
    pub(crate) definitions: Vec<SyncReport>,
    pub(crate) adoptions: Vec<ComponentReport>,
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
            spare: Spare::new(),
            drained: Drained::default(),
            waiting_migrations: Vec::new(),
            prints: Vec::new(),
            commits: Vec::new(),
            lane_shuffle: None,
            query_caching: true,
            clock: Clock::default(),
            extensions: HashMap::new(),
        })
    }

    /// Runs parallel passes and waves on `pool` from now on.
    pub(crate) fn set_pool(&mut self, pool: Arc<rayon::ThreadPool>) {
        self.pool = Some(pool);
    }

    /// Shuffles how waves meet the pool by `seed`, or stops (see `World::set_lane_shuffle`).
    pub(crate) fn set_lane_shuffle(&mut self, seed: Option<u64>) {
        self.lane_shuffle = seed.map(lanes::LaneShuffle::new);
    }

    /// Where the world is in its frames.
    pub fn clock(&self) -> Clock {
        self.clock
    }

    pub(crate) fn set_clock(&mut self, clock: Clock) {
        self.clock = clock;
    }

    /// Whether queries the scene makes and runs keep their matches (see
    /// [`Scene::set_query_caching`]).
    pub fn query_caching(&self) -> bool {
        self.query_caching
    }

    /// Whether the queries made from now on, and every query the scene runs, keep their
    /// matches (`true`, the default) or build them afresh at every pass (`Query::uncached`).
    /// Results are the same either way; a test runs both to check the cache's reuse against
    /// fresh builds. Layers that run queries of their own (a scripting layer's) read it with
    /// [`Scene::query_caching`].
    pub fn set_query_caching(&mut self, cached: bool) {
        self.query_caching = cached;
    }

    /// Keeps lines code printed (a script's, through its layer) for the frame's events, in
    /// the order given.
    pub fn add_prints(&mut self, lines: impl IntoIterator<Item = String>) {
        self.prints.extend(lines);
    }

    /// Takes what code printed since the last time (in the order printed).
    pub fn take_prints(&mut self) -> Vec<String> {
        std::mem::take(&mut self.prints)
    }

    /// The value of type `T` another layer keeps with the scene, if it keeps one.
    pub fn extension<T: Any + Send>(&self) -> Option<&T> {
        self.extensions
            .get(&TypeId::of::<T>())
            .and_then(|value| value.downcast_ref())
    }

    /// The value of type `T` another layer keeps with the scene, for changing.
    pub fn extension_mut<T: Any + Send>(&mut self) -> Option<&mut T> {
        self.extensions
            .get_mut(&TypeId::of::<T>())
            .and_then(|value| value.downcast_mut())
    }

    /// Keeps `value` with the scene, in place of the value of its type kept before (returned).
    /// Other layers keep their per-world state so (a scripting layer's VMs, say): it lives as
    /// long as the scene, and is no part of a snapshot, a save or a hash.
    pub fn insert_extension<T: Any + Send>(&mut self, value: T) -> Option<T> {
        self.extensions
            .insert(TypeId::of::<T>(), Box::new(value))
            .and_then(|old| old.downcast().ok().map(|old| *old))
    }

    /// A snapshot of the instances and components (see `World::snapshot`).
    pub(crate) fn snapshot(&self) -> Result<SceneSnapshot, WorldError> {
        Ok(SceneSnapshot {
            arena: self.arena.save_point()?,
            store: self.store.snapshot(),
            waiting_migrations: self.waiting_migrations.clone(),
        })
    }

    /// Makes the instances and components what `snapshot` held (see `World::restore`):
    /// refused, changing nothing, for another world's snapshot.
    pub(crate) fn restore(&mut self, snapshot: &SceneSnapshot) -> Result<(), WorldError> {
        if snapshot.store.lineage() != self.store.lineage() {
            return Err(strata_component_store::StoreError::SnapshotFromOtherStore.into());
        }
        self.arena.restore(&snapshot.arena)?;
        self.store.restore(&snapshot.store)?;
        self.waiting_migrations
            .clone_from(&snapshot.waiting_migrations);
        Ok(())
    }

    /// The migration input waiting for its component (see `waiting_migrations`).
    pub(crate) fn waiting_migrations(&self) -> &[(InstanceId, String, OrphanRecord)] {
        &self.waiting_migrations
    }

    /// A loaded scene's waiting migration input, and its definitions synced without the sync
    /// being reported (a load is no change).
    pub(crate) fn settle_loaded(&mut self, waiting: Vec<(InstanceId, String, OrphanRecord)>) {
        self.waiting_migrations = waiting;
        self.sync_definitions();
        self.syncs.clear();
    }

    /// Drains the arena at a frame's end (its events returned, destroyed slots reclaimed) and
    /// reports the reclaimed slots to the store at once, keeping the two in step. The drain goes
    /// into lists the scene keeps, so its memory is reused from one frame to the next (see
    /// [`Scene::recycle_events`]).
    pub(crate) fn drain_arena(&mut self) -> Result<Vec<strata_arena::Event>, WorldError> {
        self.arena.drain_into(&mut self.drained)?;
        self.store.on_reclaimed(&self.drained.reclaimed);
        Ok(std::mem::take(&mut self.drained.events))
    }

    /// Takes back a list of events a drain returned, once nobody reads it (a frame's events,
    /// when the next frame's have replaced them): emptied, its memory becomes the arena's event
    /// queue at the next drain.
    pub(crate) fn recycle_events(&mut self, mut events: Vec<strata_arena::Event>) {
        events.clear();
        self.drained.events = events;
    }

    /// Runs `read` with the hierarchy in a lifecycle scope on `root`, a destroyed subtree's
    /// root: its tombstones are readable (never writable) while `read` runs.
    pub(crate) fn with_lifecycle_scope(
        &mut self,
        root: InstanceId,
        read: impl FnMut(&Snapshot),
    ) -> Result<(), WorldError> {
        self.arena.with_lifecycle_scope(root, read)?;
        Ok(())
    }

    /// Takes what the frame collected for its events (after [`Scene::drain_arena`]) and clears
    /// the store's frame state.
    pub(crate) fn take_frame(&mut self, lifecycle: Vec<strata_arena::Event>) -> FrameTake {
        let take = FrameTake {
            lifecycle,
            prints: std::mem::take(&mut self.prints),
            commits: std::mem::take(&mut self.commits),
            components: self.store.drain_events(),
            definitions: std::mem::take(&mut self.syncs),
            adoptions: std::mem::take(&mut self.adoptions),
        };
        self.store.end_frame();
        take
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
        Ok(self.live_instance(id)?.0)
    }

    /// A live instance as the store addresses it, with its class: one look at the arena.
    pub(crate) fn live_instance(
        &self,
        id: InstanceId,
    ) -> Result<(InstanceRef, ClassId), WorldError> {
        InstanceRef::of_live(&self.arena, id).ok_or_else(|| WorldError::NotLive(id))
    }

    /// Takes what the scene's operations counted for the running system (reads, writes,
    /// rows) and starts again from zero.
    pub(crate) fn take_counts(&self) -> (u64, u64, u64) {
        self.counts.take()
    }

    pub(crate) fn count_reads(&self, n: u64) {
        self.counts.reads.set(self.counts.reads.get() + n);
    }

    /// Counts `n` field writes towards the running system's statistics: for layers that
    /// write through paths of their own (a scripting layer's columns).
    #[doc(hidden)]
    pub fn count_writes(&self, n: u64) {
        self.counts.writes.set(self.counts.writes.get() + n);
    }

    /// Counts `n` visited rows towards the running system's statistics: for layers that visit
    /// rows through paths of their own (a scripting layer's queries).
    #[doc(hidden)]
    pub fn count_rows(&self, n: u64) {
        self.counts.rows.set(self.counts.rows.get() + n);
    }
}
