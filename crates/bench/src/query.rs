//! Strata's side of the head-to-head workloads: [`Strata`] implements
//! [`crate::head_to_head::Library`] with the same names, data and work as the peer libraries'
//! (`peers/`), through the arena, the component store and queries here, and through the
//! fixtures of `crate::overlay` (`parallel_write`), `crate::world` (`schedule`,
//! `frame_overhead`) and `crate::rollback` (`rollback_frame`). `world_snapshot`, which only
//! Strata has, is registered here beside them.
//!
//! The four `bulk_` workloads go through the component store's [`Stage`]: staged work published
//! at one commit, over the members a query captures inside the timed region (as the peers
//! collect theirs).
//!
//! Invariant: every workload builds its world in setup from the values of [`crate::data`] and
//! times only the work its name describes; each sample starts from the same state, so its
//! figure is comparable with the peers' on the same run.

use std::convert::Infallible;
use std::hint::black_box;

use strata::{World, WorldSnapshot};
use strata_arena::{Arena, ClassId, InstanceId, Snapshot, Transform, Vec3};
use strata_component_store::{
    ComponentDef, ComponentId, DestroyOutcome, FieldDef, FieldId, InstanceRef, Published,
    RefPolicy, Scalar, Stage, Store, StoreError, Value,
};
use strata_query::{Query, QuerySpec};

use crate::data;
use crate::harness::{STRATA, Workload};
use crate::head_to_head::Mechanism::{self, Does, Instead};
use crate::head_to_head::{self, ChangedWork, Library, Work, entry, never_built};
use crate::overlay::{ParallelWorld, parallel_world, write_pass};
use crate::rollback::{Rollback, rollback_once, rollback_window_once, rollback_world};
use crate::world::{empty_world, frame, schedule_world};

/// Strata's head-to-head workloads, in the table's run order, then `world_snapshot`, which
/// only Strata has (it stands where the peers have `world_clone`).
pub fn workloads() -> Vec<Workload> {
    let (mut workloads, _) = head_to_head::register(&[entry::<Strata>]);
    workloads.push(world_snapshot(data::CLONE_SIZE));
    workloads
}

/// Strata in the head-to-head table: the arena, the component store and queries, the overlay
/// for `parallel_write` (`crate::overlay`), the engine's `World` for the frame loop
/// (`crate::world`) and for `rollback_frame` (`crate::rollback`).
pub struct Strata;

#[expect(
    refining_impl_trait,
    reason = "the routines name what they return, so the tests below can check it"
)]
impl Library for Strata {
    const NAME: &'static str = STRATA;

    fn mechanism(work: Work) -> Mechanism {
        match work {
            Work::Spawn => Does(
                "arena create (one 64-byte node record in a shared page; consecutive creations under one parent share one event) + 4 single inserts (typed default row, RowInit::set)",
            ),
            Work::SpawnBatch => Does(
                "Arena::create_many (consecutive ids, one event) + 4 Store::insert_many with typed fills",
            ),
            Work::Iter2 => Does(
                "cached query (stamp check), Pass::update writing Position from Velocity: dense slice walk, compare-before-write, changed tick, dirty bit and change-log position per changed row",
            ),
            Work::FragIter => Does(
                "Data's own sparse set is contiguous whatever the other 26 kinds: one dense update pass negating every row (compare-before-write, changed tick, dirty bit, change-log position)",
            ),
            Work::AddRemove => Does(
                "Store::insert of B per entity (sparse entry + column push), then Store::remove (swap-remove + removal log); a fresh world per sample",
            ),
            Work::SmallDriverJoin => Does(
                "cached query driven by the smaller set; sum Big's field over a term column bound for the pass (TermColumn::iter through the term's rows)",
            ),
            Work::ChangedFilter => Does(
                "changed pass reads the set's change log since the query's baseline (1% of rows written through Store::write per sample, untimed), finds each logged row's match, re-checks ticks; visit reads Position through a bound term column",
            ),
            Work::ChangedFilterFrames => Does(
                "per frame: another 1% of rows written through Store::write (untimed), then one changed pass (timed) reading the set's change log since the query's baseline; world spawned one entity at a time (arena create + Store::insert)",
            ),
            Work::DespawnRespawn => Does(
                "arena destroy (tombstone + events) + Store::on_destroyed_into (one outcome reused) per entity; two drains (on_reclaimed) so slots are reused; then create + 2 inserts per entity",
            ),
            Work::ReferenceCleanup => Does(
                "reverse reference index: destroying a target visits only its holders; Clear policy writes None",
            ),
            // Strata has no eager copy of a world: its copy-on-write snapshot is measured as
            // `world_snapshot`, and `world_clone_then_write` pays the copies a write defers.
            Work::WorldClone => Instead("world_snapshot"),
            Work::WorldCloneThenWrite => Does(
                "Arena::snapshot + Store::snapshot, then Position x += 1 for every entity of the copy through a ColumnWriter: the first write deep-copies the Position set (sparse, ids, slots, columns, ticks, dirty bitsets, change log); Rotation, Velocity and the arena's pages stay shared",
            ),
            Work::ParallelWrite => Does(
                "Pass::par_update_each of a cached query over Heat (stamp check) on a 2-thread rayon pool (ThreadPool::install): the matched rows cut into 4 contiguous chunks (Chunks::Count), each written in place by one task with compare-before-write, a u64 changed tick, a dirty bit and a change-log position per changed row, the chunks' change log, dirty list and events merged in chunk order",
            ),
            Work::BulkSpawn => Does(
                "Stage::spawn + commit into a fresh world: 1M consecutive ids reserved, 4 columns placed once with defaults and filled in place by the initializer; beyond the peers: 1M arena node records (64 bytes each) published with one batch event, added/changed ticks and dirty state per row, observer and structural-counter bookkeeping per batch",
            ),
            Work::BulkSet => Does(
                "Query::capture (members copied) + Stage::set + commit: the Tagged column grown once and filled, the other 4 sets untouched (no move); beyond the peers: added/changed ticks and dirty state per row, one observer range and one structural-counter entry per batch",
            ),
            Work::BulkRemove => Does(
                "Query::capture + Stage::remove + commit: one compaction pass over the Tagged set, the other 4 untouched; beyond the peers: a removal-log entry per row, dirty state and the structural counter, removed values readable by observers before they go",
            ),
            Work::BulkDespawn => Does(
                "Query::capture + Stage::despawn + commit: one arena destroy batch (one event), each of the 4 sets compacted in one pass; beyond the peers: 1M arena tombstones (ids never reused), removal-log entries per row, reverse-reference checks, dirty state and the structural counter",
            ),
            Work::RollbackFrame => Does(
                "World::snapshot (arena pages and store sets shared), the frame's work (1% of Positions written, 100 bodies spawned, 100 destroyed), World::restore (the shared pages and sets put back; the pages and sets the frame copied kept as spare memory for the next copies)",
            ),
            Work::RollbackWindow => Does(
                "8 frames, each after a World::snapshot kept in the window (each shares what nobody wrote since), then World::restore to the oldest; the pages and sets the last frame copied kept as spare memory",
            ),
            Work::Schedule => Does(
                "World::step of 3 parallel systems (SystemSpec::parallel, declared writes) on a 2-thread pool: ab, cd and ce run as one group on lanes, each swapping its two fields through its own overlay (ParCtx::update twice, both from the values established before the group), then one commit in scheduled order (cd and ce write C of different entities: no conflict); plus the frame loop's definition sync check, arena drain and store frame end",
            ),
            Work::FrameOverhead => Does(
                "World::step of 100 serial systems that do nothing: the plan walked stage by stage, each call timed into its statistics with a tracing span, the definition sync check, the arena drain and the store's frame end",
            ),
        }
    }

    type Empty = (Arena, Store, Body);
    /// A fresh world with the four components of `spawn` installed and no entity yet.
    fn empty() -> Self::Empty {
        let arena = Arena::standard();
        let mut store = Store::new();
        let body = Body::install(&arena, &mut store);
        (arena, store, body)
    }
    fn spawn_each((arena, store, body): &mut Self::Empty, n: u64) {
        for i in 0..n {
            black_box(body.spawn(arena, store, i));
        }
    }
    fn spawn_in_batch((arena, store, body): &mut Self::Empty, n: u64) -> Vec<InstanceRef> {
        body.spawn_batch(arena, store, n)
    }
    fn spawn_in_bulk((arena, store, body): &mut Self::Empty, n: u64) -> usize {
        stage_bodies(arena, store, *body, n).spawned
    }

    type Bodies = Bodies;
    fn bodies(n: u64) -> Bodies {
        let (mut arena, mut store, body) = Self::empty();
        body.spawn_batch(&mut arena, &mut store, n);
        let mut query = must(Query::new(
            QuerySpec::new().with(body.position).with(body.velocity),
        ));
        must(query.refresh(&arena, &store));
        Bodies {
            arena,
            store,
            query,
        }
    }
    /// The routine of `iter2`: `Position += Velocity` over every match; returns the rows changed.
    ///
    /// Every run changes every row: `x` grows by 1 from at most a million, exact in f32 until
    /// 2^24, which would take over 15 million runs.
    fn advance_all(world: &mut Bodies) -> usize {
        let pass = must(world.query.run(&world.arena, &world.store));
        must(pass.update::<Vec3, Vec3>(&mut world.store, (0, FIRST), (1, FIRST), add))
    }

    type Fragmented = Fragmented;
    fn fragmented() -> Fragmented {
        let mut arena = Arena::standard();
        let mut store = Store::new();
        let data = number_component(&arena, &mut store, "Data");
        let mut kinds = Vec::new();
        macro_rules! name_kind {
            ($kind:ident, $kinds:expr) => {
                $kinds.push(stringify!($kind));
            };
        }
        data::for_each_kind!(name_kind, kinds);
        for name in kinds {
            let kind = number_component(&arena, &mut store, name);
            let ats = create_many(&mut arena, data::FRAG_PER_KIND);
            let values = || (0..data::FRAG_PER_KIND).map(data::fragment);
            must(insert_many_with(
                &mut store,
                &ats,
                kind,
                values().map(|(v, _)| v),
            ));
            must(insert_many_with(
                &mut store,
                &ats,
                data,
                values().map(|(_, d)| d.0),
            ));
        }
        let mut query = must(Query::new(QuerySpec::new().with(data)));
        must(query.refresh(&arena, &store));
        Fragmented {
            arena,
            store,
            query,
        }
    }
    /// The routine of `frag_iter`: one update pass negating every `Data` (as
    /// [`data::Data::negate`] does for the peers, so every run changes every row); returns the
    /// rows it changed.
    fn negate_all(world: &mut Fragmented) -> usize {
        let pass = must(world.query.run(&world.arena, &world.store));
        must(pass.update_each::<f64>(&mut world.store, (0, FIRST), |v| -v))
    }

    type WithA = WithA;
    fn with_a(n: u64) -> WithA {
        let mut arena = Arena::standard();
        let mut store = Store::new();
        let a = number_component(&arena, &mut store, "A");
        let b = number_component(&arena, &mut store, "B");
        let ats = create_many(&mut arena, n);
        must(insert_many_with(
            &mut store,
            &ats,
            a,
            (0..n).map(|i| data::a(i).0),
        ));
        WithA { store, ats, b }
    }
    /// The routine of `add_remove`: `B` added to every entity, then removed from every one;
    /// returns how many were removed.
    fn add_then_remove(world: &mut WithA) -> usize {
        for at in &world.ats {
            must(insert_with(&mut world.store, *at, world.b, data::ADDED_B.0));
        }
        let mut removed = 0;
        for at in &world.ats {
            removed += usize::from(must(world.store.remove(*at, world.b)));
        }
        removed
    }

    type Joinable = Joinable;
    fn joinable(n_big: u64, n_small: u64) -> Joinable {
        let mut arena = Arena::standard();
        let mut store = Store::new();
        let big = number_component(&arena, &mut store, "Big");
        let small = number_component(&arena, &mut store, "Small");
        let ats = create_many(&mut arena, n_big);
        let bigs = (0..n_big).map(|i| data::big(i).0);
        must(insert_many_with(&mut store, &ats, big, bigs));
        let chosen: Vec<InstanceRef> = (0..n_big)
            .filter(|&i| data::is_small(i, n_big, n_small))
            .map(|i| ats[i as usize])
            .collect();
        let smalls = std::iter::repeat_n(data::SMALL.0, chosen.len());
        must(insert_many_with(&mut store, &chosen, small, smalls));
        let mut query = must(Query::new(QuerySpec::new().with(big).with(small)));
        must(query.refresh(&arena, &store));
        Joinable {
            arena,
            store,
            query,
        }
    }
    /// The routine of `small_driver_join`: the sum of `Big` over the entities with both.
    fn join_sum(world: &mut Joinable) -> f64 {
        let pass = must(world.query.run(&world.arena, &world.store));
        let column = must(pass.column::<f64>(&world.store, 0, FIRST));
        column.iter().sum::<f64>()
    }

    type Changed = ChangedFixture;
    fn changed(n: u64, spawn: data::Spawn) -> ChangedFixture {
        let mut arena = Arena::standard();
        let mut store = Store::new();
        let position = vector_component(&arena, &mut store, "Position");
        let ats = match spawn {
            data::Spawn::Batch => {
                let ats = create_many(&mut arena, n);
                let positions = (0..n).map(|i| Vec3::from(data::position(i)));
                must(insert_many_with(&mut store, &ats, position, positions));
                ats
            }
            data::Spawn::OneByOne => (0..n)
                .map(|i| {
                    let at = create(&mut arena);
                    must(insert_with(
                        &mut store,
                        at,
                        position,
                        Vec3::from(data::position(i)),
                    ));
                    at
                })
                .collect(),
        };
        let written = data::written_groups(&ats);
        let mut query = must(Query::new(
            QuerySpec::new().with(position).changed(position),
        ));
        // The first pass sees every row as changed; it is setup, not a sample.
        must(query.run(&arena, &store).map(|_| ()));
        ChangedFixture {
            arena,
            store,
            position,
            query,
            written,
        }
    }

    type Movers = Movers;
    fn movers(n: u64) -> Movers {
        let mut arena = Arena::standard();
        let mut store = Store::new();
        let position = vector_component(&arena, &mut store, "Position");
        let velocity = vector_component(&arena, &mut store, "Velocity");
        let ats = create_many(&mut arena, n);
        let positions = (0..n).map(|i| Vec3::from(data::position(i)));
        must(insert_many_with(&mut store, &ats, position, positions));
        let velocities = (0..n).map(|i| Vec3::from(data::velocity(i)));
        must(insert_many_with(&mut store, &ats, velocity, velocities));
        must(arena.drain().map(|_| ()));
        Movers {
            arena,
            store,
            ats,
            position,
            velocity,
        }
    }
    /// The routine of `despawn_respawn`: every other entity destroyed (two drains, so their slots
    /// are reused), then as many created, the `i`-th with the peers' `i`-th values; returns how
    /// many were destroyed.
    fn despawn_then_respawn(world: &mut Movers) -> u64 {
        let Movers {
            arena,
            store,
            ats,
            position,
            velocity,
        } = world;
        let mut n_despawned = 0;
        let mut outcome = DestroyOutcome::default();
        for at in ats.iter().step_by(2) {
            let destruction = must(arena.destroy(at.id));
            outcome.clear();
            store.on_destroyed_into(&destruction.doomed, &mut outcome);
            black_box(&outcome);
            n_despawned += 1;
        }
        for _ in 0..2 {
            let drained = must(arena.drain());
            store.on_reclaimed(&drained.reclaimed);
        }
        for i in 0..n_despawned {
            let at = create(arena);
            must(insert_with(
                store,
                at,
                *position,
                Vec3::from(data::position(i)),
            ));
            must(insert_with(
                store,
                at,
                *velocity,
                Vec3::from(data::velocity(i)),
            ));
        }
        n_despawned
    }

    type Referencing = Referencing;
    /// Holder `i` refers to target `i % n_targets`, as for the peers.
    fn referencing(n_holders: u64, n_targets: u64) -> Referencing {
        let mut arena = Arena::standard();
        let mut store = Store::new();
        let aim = must(store.install(
            ComponentDef::new("Aim").field(FieldDef::reference("target", RefPolicy::Clear)),
            arena.classes(),
        ));
        let targets: Vec<InstanceId> = create_many(&mut arena, n_targets)
            .into_iter()
            .map(|at| at.id)
            .collect();
        let holders = create_many(&mut arena, n_holders);
        let aims = (0..holders.len()).map(|i| Some(targets[i % targets.len()]));
        must(insert_many_with(&mut store, &holders, aim, aims));
        Referencing {
            arena,
            store,
            targets,
        }
    }
    /// The routine of `reference_cleanup`: every target destroyed; returns the references the
    /// store cleared.
    fn destroy_targets(world: &mut Referencing) -> usize {
        let mut cleared = 0;
        let mut outcome = DestroyOutcome::default();
        for t in &world.targets {
            let destruction = must(world.arena.destroy(*t));
            outcome.clear();
            world
                .store
                .on_destroyed_into(&destruction.doomed, &mut outcome);
            cleared += outcome.cleared.len();
        }
        cleared
    }

    type Cloneable = Infallible;
    fn cloneable(_: u64) -> Infallible {
        never_built()
    }
    fn clone_world(never: &mut Infallible) {
        match *never {}
    }

    type Copyable = Cloneable;
    fn copyable(n: u64) -> Cloneable {
        let mut arena = Arena::standard();
        let mut store = Store::new();
        let ats = create_many(&mut arena, n);
        let position = vector_component(&arena, &mut store, "Position");
        let positions = (0..n).map(|i| Vec3::from(data::position(i)));
        must(insert_many_with(&mut store, &ats, position, positions));
        let rotation = vector_component(&arena, &mut store, "Rotation");
        let rotations = (0..n).map(|i| Vec3::from(data::rotation(i)));
        must(insert_many_with(&mut store, &ats, rotation, rotations));
        let velocity = vector_component(&arena, &mut store, "Velocity");
        let velocities = (0..n).map(|i| Vec3::from(data::velocity(i)));
        must(insert_many_with(&mut store, &ats, velocity, velocities));
        Cloneable {
            arena,
            store,
            position,
        }
    }
    /// The routine of `world_clone_then_write`: a copy of the world (arena and store snapshots),
    /// then `x += 1` on the Position of every entity of the copy through a column writer, which
    /// first makes the copy's Position set private (a deep copy of that set). Returns the copy,
    /// so its drop is not timed, and the number of rows written.
    fn clone_then_write(world: &mut Cloneable) -> (Snapshot, Store, usize) {
        let arena = world.arena.snapshot();
        let mut store = world.store.snapshot();
        let mut writer = must(store.column_writer::<Vec3>(world.position, FIRST));
        let n = writer.values().len();
        let written =
            must(writer.update_indexed(n, |row| (row, row), |p, _| Vec3::new(p.x + 1.0, p.y, p.z)));
        (arena, store, written)
    }

    type Heated = ParallelWorld;
    fn heated(n: u64) -> ParallelWorld {
        parallel_world(n)
    }
    fn write_in_parallel(world: &mut ParallelWorld, value: f64) -> usize {
        let ParallelWorld {
            arena,
            store,
            field,
            pool,
            query,
        } = world;
        write_pass(query, arena, store, pool, *field, value)
    }

    type Bulk = BulkWorld;
    fn bulk_bodies(n: u64) -> BulkWorld {
        bulk_world(n, false)
    }
    fn tagged_bodies(n: u64) -> BulkWorld {
        bulk_world(n, true)
    }
    /// The routine of `bulk_set`: every member gets `Tagged` = [`data::TAGGED`].
    fn tag_all(world: &mut BulkWorld) -> Published {
        over_members(world, |stage, members, tagged| {
            stage.set(
                members,
                tagged,
                vec![(FIRST, Value::Number(data::TAGGED.0))],
            );
        })
    }

    /// The routine of `bulk_remove`: `Tagged` removed from every member.
    fn untag_all(world: &mut BulkWorld) -> Published {
        over_members(world, |stage, members, tagged| {
            stage.remove(members, tagged);
        })
    }

    /// The routine of `bulk_despawn`: every member destroyed.
    fn despawn_all(world: &mut BulkWorld) -> Published {
        over_members(world, |stage, members, _| {
            stage.despawn(members);
        })
    }

    type Rollback = Rollback;
    fn rollback_world(n: u64) -> Rollback {
        rollback_world(n)
    }
    fn rollback_once(world: &mut Rollback) -> (u64, u64, u64) {
        rollback_once(world)
    }
    fn rollback_window_once(world: &mut Rollback) -> ((u64, u64, u64), Vec<WorldSnapshot>) {
        rollback_window_once(world)
    }

    type Frame = World;
    fn swapping(group: u64) -> World {
        schedule_world(group)
    }
    fn idle() -> World {
        empty_world()
    }
    fn run_frame(world: &mut World) -> usize {
        frame(world)
    }
}

/// Every field here is the first of its one-field component.
const FIRST: FieldId = FieldId::from_index(0);

/// The four components of the spawn and iteration workloads: Transform (16 f32), Position,
/// Rotation and Velocity (3 f32 each), each a single field.
#[derive(Clone, Copy)]
pub struct Body {
    transform: ComponentId,
    position: ComponentId,
    rotation: ComponentId,
    velocity: ComponentId,
}

impl Body {
    fn install(arena: &Arena, store: &mut Store) -> Body {
        let mut one = |name: &str, field: FieldDef| {
            must(store.install(ComponentDef::new(name).field(field), arena.classes()))
        };
        Body {
            transform: one("Transform", FieldDef::transform("m", Transform::IDENTITY)),
            position: one("Position", FieldDef::vector("v", Vec3::ZERO)),
            rotation: one("Rotation", FieldDef::vector("v", Vec3::ZERO)),
            velocity: one("Velocity", FieldDef::vector("v", Vec3::ZERO)),
        }
    }

    /// Creates the `i`-th entity and adds the four components with the values of
    /// [`data::body`], one at a time.
    fn spawn(&self, arena: &mut Arena, store: &mut Store, i: u64) -> InstanceRef {
        let at = create(arena);
        let (transform, position, rotation, velocity) = data::body(i);
        must(insert_with(
            store,
            at,
            self.transform,
            Transform::from(transform),
        ));
        must(insert_with(store, at, self.position, Vec3::from(position)));
        must(insert_with(store, at, self.rotation, Vec3::from(rotation)));
        must(insert_with(store, at, self.velocity, Vec3::from(velocity)));
        at
    }

    /// Creates `n` entities with the four components through the bulk paths, the `i`-th with
    /// the values of [`data::body`].
    fn spawn_batch(&self, arena: &mut Arena, store: &mut Store, n: u64) -> Vec<InstanceRef> {
        let ats = create_many(arena, n);
        let transforms = (0..n).map(|i| Transform::from(data::transform(i)));
        must(insert_many_with(store, &ats, self.transform, transforms));
        let positions = (0..n).map(|i| Vec3::from(data::position(i)));
        must(insert_many_with(store, &ats, self.position, positions));
        let rotations = (0..n).map(|i| Vec3::from(data::rotation(i)));
        must(insert_many_with(store, &ats, self.rotation, rotations));
        let velocities = (0..n).map(|i| Vec3::from(data::velocity(i)));
        must(insert_many_with(store, &ats, self.velocity, velocities));
        ats
    }
}

/// Fixture code cannot fail: definitions and instances are built from known-good values.
fn must<T, E: std::fmt::Display>(result: Result<T, E>) -> T {
    match result {
        Ok(value) => value,
        Err(error) => fail(&error.to_string()),
    }
}

fn fail(why: &str) -> ! {
    panic!("benchmark fixture failed: {why}")
}

/// Creates one entity and pairs it with its slot.
fn create(arena: &mut Arena) -> InstanceRef {
    let id = must(arena.create(ClassId::ENTITY, None));
    let slot = arena
        .slot_of(id)
        .unwrap_or_else(|| fail("a new instance has a slot"));
    InstanceRef::new(id, slot)
}

/// Creates `n` entities in one step (consecutive ids), each paired with its slot.
fn create_many(arena: &mut Arena, n: u64) -> Vec<InstanceRef> {
    must(arena.create_many(ClassId::ENTITY, None, n as usize))
        .into_iter()
        .map(|(id, slot)| InstanceRef::new(id, slot))
        .collect()
}

/// Adds `component` to `at` with its one field set to `value`.
fn insert_with<T: Scalar>(
    store: &mut Store,
    at: InstanceRef,
    component: ComponentId,
    value: T,
) -> Result<(), StoreError> {
    store
        .insert(at, ClassId::ENTITY, component)?
        .set(FIRST, value)
        .map(|_| ())
}

/// Adds `component` to every one of `ats` in one step, the `i`-th row's one field set to the
/// `i`-th of `values`.
fn insert_many_with<T: Scalar>(
    store: &mut Store,
    ats: &[InstanceRef],
    component: ComponentId,
    values: impl IntoIterator<Item = T>,
) -> Result<(), StoreError> {
    store
        .insert_many(ats, ClassId::ENTITY, component)?
        .fill(FIRST, values)
        .map(|_| ())
}

/// Installs a one-field number component (an f64, as the peers' one-number components).
fn number_component(arena: &Arena, store: &mut Store, name: &str) -> ComponentId {
    must(store.install(
        ComponentDef::new(name).field(FieldDef::number("x", 0.0)),
        arena.classes(),
    ))
}

/// Installs a one-field vector component (three f32, as the peers' vector components).
fn vector_component(arena: &Arena, store: &mut Store, name: &str) -> ComponentId {
    must(store.install(
        ComponentDef::new(name).field(FieldDef::vector("v", Vec3::ZERO)),
        arena.classes(),
    ))
}

/// The step of `iter2`, as [`data::Position::advance`].
fn add(a: &Vec3, b: &Vec3) -> Vec3 {
    Vec3::new(a.x + b.x, a.y + b.y, a.z + b.z)
}

/// The world of `iter2`: `n` entities with the four components, and the cached query over
/// (Position, Velocity).
pub struct Bodies {
    arena: Arena,
    store: Store,
    query: Query,
}

/// The world of `frag_iter`: 26 kinds `A`..`Z` of 20 entities each, every one also with
/// `Data`, and the cached query over `Data`.
pub struct Fragmented {
    arena: Arena,
    store: Store,
    query: Query,
}

/// The world of `add_remove`: `n` entities with `A`, none with `B` yet.
pub struct WithA {
    store: Store,
    ats: Vec<InstanceRef>,
    b: ComponentId,
}

/// The world of `small_driver_join`: `n_big` entities with `Big`, `n_small` of them with
/// `Small` too, and the cached query over (Big, Small).
pub struct Joinable {
    arena: Arena,
    store: Store,
    query: Query,
}

/// The world of `changed_filter` and `changed_filter_frames`: `n` entities with `Position`, a
/// query with a changed filter on it that has run once, and the rows each frame writes.
pub struct ChangedFixture {
    arena: Arena,
    store: Store,
    position: ComponentId,
    query: Query,
    /// The entities each frame writes, by `frame % CHANGED_STRIDE`: 1% of them, spread evenly.
    written: Vec<Vec<InstanceRef>>,
}

impl ChangedWork for ChangedFixture {
    /// Writes the frame's 1% of the rows (`x += 1`, as the peers do) through `Store::write`.
    fn write(&mut self, frame: u64) {
        let group = &self.written[(frame % data::CHANGED_STRIDE) as usize];
        for at in group {
            let mut p = *must(self.store.get::<Vec3>(*at, self.position, FIRST));
            p.x += 1.0;
            must(self.store.write(*at, self.position, FIRST, p));
        }
    }

    /// One changed pass: the number of rows visited and the sum of their `x`.
    fn visit(&mut self) -> (u64, f32) {
        let pass = must(self.query.run(&self.arena, &self.store));
        let column = must(pass.column::<Vec3>(&self.store, 0, FIRST));
        data::tally(column.iter().map(|p| p.x))
    }
}

/// The world of `despawn_respawn`: `n` entities with Position and Velocity.
pub struct Movers {
    arena: Arena,
    store: Store,
    ats: Vec<InstanceRef>,
    position: ComponentId,
    velocity: ComponentId,
}

/// The world of `reference_cleanup`: targets, and holders whose `Aim` refers to one each.
pub struct Referencing {
    arena: Arena,
    store: Store,
    targets: Vec<InstanceId>,
}

/// The world of `world_snapshot` and `world_clone_then_write`: `n` entities with Position,
/// Rotation and Velocity.
pub struct Cloneable {
    arena: Arena,
    store: Store,
    position: ComponentId,
}

fn world_snapshot(n: u64) -> Workload {
    Workload::new(
        "world_snapshot",
        n,
        "Arena::snapshot + Store::snapshot: copy-on-write, arena pages of inline node records and store sets shared behind Arc; nothing is copied until written (no peer has this operation)",
        move |b| {
            let world = Strata::copyable(n);
            b.iter(|| (world.arena.snapshot(), world.store.snapshot()));
        },
    )
}

/// The routine of `bulk_spawn`: one staged spawn of `n` bodies with the four components, the
/// initializer filling each column in place over the spawn's rows with the values of
/// [`data::body`], published at one commit; returns what the commit published.
fn stage_bodies(arena: &mut Arena, store: &mut Store, body: Body, n: u64) -> Published {
    let mut stage = Stage::new(arena, store);
    let components = [body.transform, body.position, body.rotation, body.velocity];
    must(stage.spawn(
        arena,
        n as usize,
        ClassId::ENTITY,
        None,
        &components,
        move |rows| {
            let fill = |column: &mut [Vec3], value: fn(u64) -> Vec3| {
                for (k, cell) in column.iter_mut().enumerate() {
                    *cell = value(k as u64);
                }
            };
            for (k, cell) in rows
                .column_mut::<Transform>(body.transform, FIRST)?
                .iter_mut()
                .enumerate()
            {
                *cell = data::transform(k as u64).into();
            }
            fill(rows.column_mut::<Vec3>(body.position, FIRST)?, |k| {
                data::position(k).into()
            });
            fill(rows.column_mut::<Vec3>(body.rotation, FIRST)?, |k| {
                data::rotation(k).into()
            });
            fill(rows.column_mut::<Vec3>(body.velocity, FIRST)?, |k| {
                data::velocity(k).into()
            });
            Ok::<(), StoreError>(())
        },
    ));
    must(stage.commit(arena, store))
}

/// The world of `bulk_set`, `bulk_remove` and `bulk_despawn`: `n` bodies (with [`data::TAGGED`]
/// too when `tagged`), the `Tagged` component, and the query over the four body components.
pub struct BulkWorld {
    arena: Arena,
    store: Store,
    tagged: ComponentId,
    query: Query,
}

fn bulk_world(n: u64, tagged: bool) -> BulkWorld {
    let (mut arena, mut store, body) = Strata::empty();
    let tagged_component = number_component(&arena, &mut store, "Tagged");
    let ats = body.spawn_batch(&mut arena, &mut store, n);
    if tagged {
        let values = (0..n).map(|_| data::TAGGED.0);
        must(insert_many_with(&mut store, &ats, tagged_component, values));
    }
    let mut query = must(Query::new(
        QuerySpec::new()
            .with(body.transform)
            .with(body.position)
            .with(body.rotation)
            .with(body.velocity),
    ));
    must(query.refresh(&arena, &store));
    BulkWorld {
        arena,
        store,
        tagged: tagged_component,
        query,
    }
}

/// Captures the query's members, stages `work` over them and commits; returns what the commit
/// published.
fn over_members(
    world: &mut BulkWorld,
    work: impl FnOnce(&mut Stage, &[InstanceRef], ComponentId),
) -> Published {
    let members = must(world.query.capture(&world.arena, &world.store));
    let mut stage = Stage::new(&world.arena, &world.store);
    work(&mut stage, &members, world.tagged);
    must(stage.commit(&mut world.arena, &mut world.store))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{
        ADDED_B, FRAG_KINDS, FRAG_PER_KIND, SMALL, a, big, body, fragment, is_small, position,
        velocity,
    };

    /// The component installed under `name`.
    fn named(store: &Store, name: &str) -> ComponentId {
        store.component(name).expect("the fixture installs it")
    }

    /// The value of the one field of `component` at `at`.
    fn value<T: Scalar + Clone>(store: &Store, at: InstanceRef, component: ComponentId) -> T {
        store
            .get::<T>(at, component, FIRST)
            .expect("the fixture holds the row")
            .clone()
    }

    /// Checks that each entity of `ats` holds the four values of [`body`].
    fn check_bodies(store: &Store, components: &Body, ats: &[InstanceRef]) {
        for (i, at) in ats.iter().enumerate() {
            let (t, p, r, v) = body(i as u64);
            assert_eq!(
                value::<Transform>(store, *at, components.transform),
                t.into()
            );
            assert_eq!(value::<Vec3>(store, *at, components.position), p.into());
            assert_eq!(value::<Vec3>(store, *at, components.rotation), r.into());
            assert_eq!(value::<Vec3>(store, *at, components.velocity), v.into());
        }
    }

    #[test]
    fn spawn_creates_every_entity_with_the_shared_values() {
        let (mut arena, mut store, body) = Strata::empty();
        let ats: Vec<InstanceRef> = (0..100)
            .map(|i| body.spawn(&mut arena, &mut store, i))
            .collect();
        for c in [body.transform, body.position, body.rotation, body.velocity] {
            assert_eq!(store.set(c).map(|s| s.len()), Ok(100));
        }
        check_bodies(&store, &body, &ats);
    }

    #[test]
    fn spawn_batch_creates_every_entity_with_the_shared_values() {
        let (mut arena, mut store, body) = Strata::empty();
        let ats = body.spawn_batch(&mut arena, &mut store, 100);
        assert_eq!(ats.len(), 100);
        for c in [body.transform, body.position, body.rotation, body.velocity] {
            assert_eq!(store.set(c).map(|s| s.len()), Ok(100));
        }
        check_bodies(&store, &body, &ats);
    }

    #[test]
    fn iter2_advances_every_position_and_sets_ticks() {
        let mut world = Strata::bodies(100);
        let mut changed = Query::new(
            QuerySpec::new()
                .with(named(&world.store, "Position"))
                .changed(named(&world.store, "Position")),
        )
        .expect("a valid spec");
        assert_eq!(
            changed.run(&world.arena, &world.store).map(|p| p.len()),
            Ok(100)
        );
        assert_eq!(
            changed.run(&world.arena, &world.store).map(|p| p.len()),
            Ok(0)
        );
        for _ in 0..2 {
            assert_eq!(Strata::advance_all(&mut world), 100);
            assert_eq!(
                changed.run(&world.arena, &world.store).map(|p| p.len()),
                Ok(100)
            );
        }
        let ids = world
            .query
            .matches(&world.arena, &world.store)
            .expect("the query runs")
            .get(7)
            .expect("100 matches")
            .instance();
        let mut expected = position(7);
        expected.advance(&velocity(7));
        expected.advance(&velocity(7));
        assert_eq!(
            value::<Vec3>(&world.store, ids, named(&world.store, "Position")),
            expected.into()
        );
    }

    /// Every run of the pass writes a new value into every row, however many runs came
    /// before: the equal-write check never lets a run skip a row.
    #[test]
    fn frag_iter_pass_changes_all_520_rows_on_every_run() {
        let mut world = Strata::fragmented();
        let set = world
            .store
            .set(named(&world.store, "Data"))
            .expect("installed");
        assert_eq!(set.len() as u64, FRAG_KINDS * FRAG_PER_KIND);
        let start: Vec<f64> = set.values::<f64>(FIRST).expect("a number field").to_vec();
        let shared: Vec<f64> = (0..FRAG_KINDS)
            .flat_map(|_| (0..FRAG_PER_KIND).map(|i| fragment(i).1.0))
            .collect();
        assert_eq!(start, shared);
        for run in 0..1_100 {
            assert_eq!(Strata::negate_all(&mut world), 520, "run {run}");
        }
    }

    #[test]
    fn add_remove_leaves_no_b() {
        let mut world = Strata::with_a(1000);
        assert_eq!(Strata::add_then_remove(&mut world), 1000);
        assert_eq!(world.store.set(world.b).map(|s| s.len()), Ok(0));
        assert_eq!(
            world.store.set(named(&world.store, "A")).map(|s| s.len()),
            Ok(1000)
        );
        for (i, at) in world.ats.iter().enumerate() {
            assert_eq!(
                value::<f64>(&world.store, *at, named(&world.store, "A")),
                a(i as u64).0
            );
        }
        // What B holds while present: the shared added value.
        must(insert_with(
            &mut world.store,
            world.ats[3],
            world.b,
            ADDED_B.0,
        ));
        assert_eq!(value::<f64>(&world.store, world.ats[3], world.b), ADDED_B.0);
    }

    #[test]
    fn join_visits_only_the_small_set() {
        let mut world = Strata::joinable(20_000, 200);
        let pass_len = world.query.run(&world.arena, &world.store).map(|p| p.len());
        assert_eq!(pass_len, Ok(200));
        let expected: f64 = (0..20_000_u64)
            .filter(|&i| is_small(i, 20_000, 200))
            .map(|i| big(i).0)
            .sum();
        assert_eq!(Strata::join_sum(&mut world), expected);
        let smalls = world
            .store
            .set(world.query.spec().required()[1])
            .expect("installed");
        let shared = SMALL.0;
        assert!(
            smalls
                .values::<f64>(FIRST)
                .expect("numbers")
                .iter()
                .all(|v| *v == shared)
        );
    }

    #[test]
    fn despawn_respawn_keeps_the_count_and_the_shared_values() {
        let mut world = Strata::movers(1000);
        for (i, at) in world.ats.iter().enumerate() {
            assert_eq!(
                value::<Vec3>(&world.store, *at, world.position),
                position(i as u64).into()
            );
            assert_eq!(
                value::<Vec3>(&world.store, *at, world.velocity),
                velocity(i as u64).into()
            );
        }
        assert_eq!(Strata::despawn_then_respawn(&mut world), 500);
        assert_eq!(world.store.set(world.position).map(|s| s.len()), Ok(1000));
        assert_eq!(world.store.set(world.velocity).map(|s| s.len()), Ok(1000));
        assert!(
            world
                .ats
                .iter()
                .step_by(2)
                .all(|at| !world.store.has(*at, world.position))
        );
        // The survivors keep their values and the respawned entities hold the values the
        // peers respawn with: position(i) for the i-th respawn.
        let bits = |p: &Vec3| (p.x.to_bits(), p.y.to_bits(), p.z.to_bits());
        let mut held: Vec<_> = world
            .store
            .set(world.position)
            .expect("installed")
            .values::<Vec3>(FIRST)
            .expect("vectors")
            .iter()
            .map(bits)
            .collect();
        let mut expected: Vec<_> = (1..1000)
            .step_by(2)
            .chain(0..500)
            .map(|i| bits(&position(i).into()))
            .collect();
        held.sort_unstable();
        expected.sort_unstable();
        assert_eq!(held, expected);
    }

    #[test]
    fn reference_cleanup_clears_every_reference() {
        let mut world = Strata::referencing(1000, 10);
        assert_eq!(Strata::destroy_targets(&mut world), 1000);
        assert!(world.targets.iter().all(|t| !world.arena.is_live(*t)));
        let aims = world
            .store
            .set(named(&world.store, "Aim"))
            .expect("installed");
        assert_eq!(aims.len(), 1000);
        let references = aims
            .values::<Option<InstanceId>>(FIRST)
            .expect("references");
        assert!(references.iter().all(Option::is_none));
    }

    /// A snapshot is registered under its own name; the copy the peers' `world_clone` makes
    /// is matched by a copy that is then written, which pays the deferred copies.
    #[test]
    fn the_snapshot_is_not_reported_as_a_clone() {
        let names: Vec<String> = workloads().iter().map(|w| w.name().to_owned()).collect();
        assert!(names.iter().any(|n| n == "world_snapshot"));
        assert!(names.iter().any(|n| n == "world_clone_then_write"));
        assert!(!names.iter().any(|n| n == "world_clone"));
    }

    #[test]
    fn world_clone_then_write_writes_every_position_of_the_copy_only() {
        let mut world = Strata::copyable(1000);
        let (arena, copy, written) = Strata::clone_then_write(&mut world);
        assert_eq!(written, 1000);
        assert_eq!(arena.live_count(), world.arena.live_count());
        let original = world.store.set(world.position).expect("installed");
        let copied = copy.set(world.position).expect("installed");
        assert_eq!(copied.ids(), original.ids());
        let before = original.values::<Vec3>(FIRST).expect("vectors");
        let after = copied.values::<Vec3>(FIRST).expect("vectors");
        for (i, (b, a)) in before.iter().zip(after).enumerate() {
            assert_eq!(*b, position(i as u64).into(), "the original is untouched");
            assert_eq!(*a, Vec3::new(b.x + 1.0, b.y, b.z));
        }
        for name in ["Rotation", "Velocity"] {
            let c = named(&world.store, name);
            assert_eq!(
                copy.set(c).expect("installed").values::<Vec3>(FIRST),
                world.store.set(c).expect("installed").values::<Vec3>(FIRST)
            );
        }
    }

    #[test]
    fn bulk_spawn_publishes_every_body_with_the_shared_values() {
        let (mut arena, mut store, body) = Strata::empty();
        let published = stage_bodies(&mut arena, &mut store, body, 1000);
        assert_eq!(published.spawned, 1000);
        let set = store.set(body.position).expect("installed");
        let ats: Vec<InstanceRef> = set
            .ids()
            .iter()
            .zip(set.slots())
            .map(|(id, slot)| InstanceRef::new(*id, *slot))
            .collect();
        assert_eq!(ats.len(), 1000);
        assert!(ats.iter().all(|at| arena.is_live(at.id)));
        check_bodies(&store, &body, &ats);
    }

    #[test]
    fn bulk_set_tags_every_body() {
        let mut world = bulk_world(1000, false);
        let members = world
            .query
            .capture(&world.arena, &world.store)
            .expect("the query runs");
        assert_eq!(members.len(), 1000);
        assert_eq!(Strata::tag_all(&mut world).added, 1000);
        for at in &members {
            assert_eq!(
                value::<f64>(&world.store, *at, world.tagged),
                data::TAGGED.0
            );
        }
    }

    #[test]
    fn bulk_remove_untags_every_body_and_keeps_it() {
        let mut world = bulk_world(1000, true);
        assert_eq!(
            world.store.set(world.tagged).expect("installed").len(),
            1000
        );
        assert_eq!(Strata::untag_all(&mut world).removed, 1000);
        assert!(world.store.set(world.tagged).expect("installed").is_empty());
        let members = world
            .query
            .capture(&world.arena, &world.store)
            .expect("the query runs");
        assert_eq!(members.len(), 1000);
    }

    #[test]
    fn bulk_despawn_empties_the_world() {
        let mut world = bulk_world(1000, false);
        let members = world
            .query
            .capture(&world.arena, &world.store)
            .expect("the query runs");
        assert_eq!(Strata::despawn_all(&mut world).despawned, 1000);
        assert!(members.iter().all(|at| !world.arena.is_live(at.id)));
        let left = world
            .query
            .capture(&world.arena, &world.store)
            .expect("the query runs");
        assert!(left.is_empty());
        let position = named(&world.store, "Position");
        assert!(world.store.set(position).expect("installed").is_empty());
    }
}
