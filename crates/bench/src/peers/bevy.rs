//! The `bevy_ecs` side of the peer workloads: archetypes of table-stored components, cached
//! `QueryState`s, change ticks kept on every write, relationships for references.
//!
//! bevy_ecs 0.20 cannot copy a world, so it has no `world_clone`, `world_clone_then_write` or
//! `rollback_frame`.
//!
//! Invariant: every workload here uses `bevy_ecs`'s public API without `unsafe`, builds its
//! world outside the timed routine, and writes components through `Mut` so bevy's change ticks
//! stay what a real game would see.

use std::convert::Infallible;
use std::hint::black_box;

use bevy_ecs::batching::BatchingStrategy;
use bevy_ecs::prelude::{Changed, Component, Entity, Query, QueryState, Schedule, With, World};
use bevy_ecs::schedule::{IntoScheduleConfigs, MultiThreadedExecutor};
use bevy_ecs::system::ScheduleSystem;
use bevy_ecs::system::SystemState;
use bevy_tasks::{ComputeTaskPool, TaskPoolBuilder};

use super::kinds::*;
use super::{
    ADDED_B, Big, CHANGED_STRIDE, Data, EMPTY_SYSTEMS, Heat, PARALLEL_THREADS, PARALLEL_WRITERS,
    Position, Rotation, SMALL, Small, Spawn, TAGGED, Tagged, Transform, Velocity, a, big, body,
    for_each_kind, is_small, position, schedule, tally, velocity, written_groups,
};
use crate::data::spawn_fragment_kind;
use crate::head_to_head::Mechanism::{self, Cannot, Does};
use crate::head_to_head::{ChangedWork, Library, Work, never_built};

/// The library name of these records.
pub const LIBRARY: &str = "bevy_ecs";

/// Why bevy_ecs has no `world_clone`, `world_clone_then_write` or `rollback_frame`.
const NO_WORLD_COPY: &str = "bevy_ecs 0.20 has no way to clone a World or copy entities into \
                             another World (EntityCloner clones entities within one world); \
                             rebuilding a world entity by entity would measure something else";

/// `bevy_ecs` in the head-to-head table.
pub struct Bevy;

#[expect(
    refining_impl_trait,
    reason = "the routines name what they return, so the tests below can check it"
)]
impl Library for Bevy {
    const NAME: &'static str = LIBRARY;

    fn mechanism(work: Work) -> Mechanism {
        match work {
            Work::Spawn => Does("World::spawn per entity into one table (4 components, ticks set)"),
            Work::SpawnBatch => Does("World::spawn_batch (table reserved from the size hint)"),
            Work::Iter2 => Does(
                "cached QueryState<(&mut Position, &Velocity)>::iter_mut, for_each over one table; Mut sets change ticks",
            ),
            Work::FragIter => Does("cached QueryState<&mut Data>::iter_mut over 26 tables of 20"),
            Work::AddRemove => Does(
                "EntityWorldMut::insert then remove per entity (table move each way, cached archetype edges)",
            ),
            Work::SmallDriverJoin => {
                Does("cached QueryState<(&Big, &Small)>: only the (Big, Small) table is visited")
            }
            Work::ChangedFilter => Does(
                "SystemState<Query<&Position, Changed<Position>>> (its last run is the window): tick compare per row of the table; writes through Mut in another system",
            ),
            Work::ChangedFilterFrames => Does(
                "per frame: the writer system writes another 1% through Mut (untimed), then SystemState<Query<&Position, Changed<Position>>> runs (timed): tick compare per row of the table; world spawned one entity at a time",
            ),
            Work::DespawnRespawn => Does(
                "World::despawn per entity (swap-remove from the table), then World::spawn per entity reusing freed ids",
            ),
            Work::ReferenceCleanup => Does(
                "relationship RefersTo/HeldBy: despawning a target removes RefersTo from its holders (hook + commands, a table move per holder)",
            ),
            Work::WorldClone
            | Work::WorldCloneThenWrite
            | Work::RollbackFrame
            | Work::RollbackWindow => Cannot(NO_WORLD_COPY),
            Work::ParallelWrite => Does(
                "cached QueryState<&mut Heat>::par_iter_mut (multi_threaded) on bevy's ComputeTaskPool of 2 threads (the calling thread helps), 4 fixed batches of a quarter; each write in place through Mut, which sets its change tick",
            ),
            Work::BulkSpawn => Does(
                "World::spawn_batch into a fresh world: one table of 4 columns reserved from the size hint, added/changed ticks set per row",
            ),
            Work::BulkSet => Does(
                "cached QueryState<Entity, With<4 components>> collected, then World::insert_batch: the archetype edge found once, a table move per entity (4 columns copied), ticks set",
            ),
            Work::BulkRemove => Does(
                "cached QueryState<Entity, With<4 components>> collected, then EntityWorldMut::remove::<Tagged> per entity (no batch remove in bevy_ecs): a table move per entity (4 columns copied), cached archetype edge",
            ),
            Work::BulkDespawn => Does(
                "cached QueryState<Entity, With<4 components>> collected, then World::despawn per entity (no batch despawn in bevy_ecs): a swap-remove from the table per entity, despawn hooks and observers checked",
            ),
            Work::Schedule => Does(
                "Schedule::run on the multi-threaded executor (ComputeTaskPool of 2 threads): ab, cd and ce, each a Query of two &mut components swapping in place through Mut (change ticks set); cd and ce both take &mut C, so the executor runs them one after the other",
            ),
            Work::FrameOverhead => Does(
                "Schedule::run on the multi-threaded executor (ComputeTaskPool of 2 threads) of 100 systems that do nothing",
            ),
        }
    }

    type Empty = World;
    fn empty() -> World {
        World::new()
    }
    fn spawn_each(world: &mut World, n: u64) {
        for i in 0..n {
            black_box(world.spawn(body(i)).id());
        }
    }
    fn spawn_in_batch(world: &mut World, n: u64) -> usize {
        world.spawn_batch((0..n).map(body)).count()
    }
    type Bodies = (
        World,
        QueryState<(&'static mut Position, &'static Velocity)>,
    );
    fn bodies(n: u64) -> Self::Bodies {
        let mut world = body_world(n);
        let query = world.query::<(&mut Position, &Velocity)>();
        (world, query)
    }
    /// Through `Mut`, which sets change ticks.
    fn advance_all((world, query): &mut Self::Bodies) {
        query
            .iter_mut(world)
            .for_each(|(mut position, velocity)| position.advance(velocity));
    }

    type Fragmented = (World, QueryState<&'static mut Data>);
    fn fragmented() -> Self::Fragmented {
        let mut world = World::new();
        for_each_kind!(spawn_fragment_kind, world, spawn_batch);
        let query = world.query::<&mut Data>();
        (world, query)
    }
    /// Through `Mut`, which sets change ticks.
    fn negate_all((world, query): &mut Self::Fragmented) {
        query.iter_mut(world).for_each(|mut data| data.negate());
    }

    type WithA = (World, Vec<Entity>);
    /// The world and the entities' ids.
    fn with_a(n: u64) -> Self::WithA {
        let mut world = World::new();
        let ids = world.spawn_batch((0..n).map(a)).collect();
        (world, ids)
    }
    fn add_then_remove((world, ids): &mut Self::WithA) {
        for &id in ids.iter() {
            world.entity_mut(id).insert(ADDED_B);
        }
        for &id in ids.iter() {
            world.entity_mut(id).remove::<B>();
        }
    }

    type Joinable = (World, QueryState<(&'static Big, &'static Small)>);
    fn joinable(n_big: u64, n_small: u64) -> Self::Joinable {
        let mut world = World::new();
        for i in 0..n_big {
            if is_small(i, n_big, n_small) {
                world.spawn((big(i), SMALL));
            } else {
                world.spawn(big(i));
            }
        }
        let query = world
            .try_query::<(&Big, &Small)>()
            .expect("both components are registered by the spawns");
        (world, query)
    }
    fn join_sum((world, query): &mut Self::Joinable) -> f64 {
        query
            .iter(world)
            .fold(0.0, |sum, (big, _small)| sum + big.0)
    }

    type Changed = ChangedFixture;
    fn changed(n: u64, spawn: Spawn) -> ChangedFixture {
        let mut world = World::new();
        let ids: Vec<Entity> = match spawn {
            Spawn::Batch => world.spawn_batch((0..n).map(position)).collect(),
            Spawn::OneByOne => (0..n).map(|i| world.spawn(position(i)).id()).collect(),
        };
        let written = written_groups(&ids);
        let writer = SystemState::new(&mut world);
        let mut reader = SystemState::new(&mut world);
        // A new system sees every row as changed once; that first visit is not a sample.
        visit_changed(&world, &mut reader);
        ChangedFixture {
            world,
            written,
            writer,
            reader,
        }
    }

    type Movers = (World, Vec<Entity>);
    /// The world and the entities' ids.
    fn movers(n: u64) -> Self::Movers {
        let mut world = World::new();
        let ids = world
            .spawn_batch((0..n).map(|i| (position(i), velocity(i))))
            .collect();
        (world, ids)
    }
    fn despawn_then_respawn((world, ids): &mut Self::Movers) -> u64 {
        let mut n_despawned = 0;
        for &id in ids.iter().step_by(2) {
            n_despawned += u64::from(world.despawn(id));
        }
        for i in 0..n_despawned {
            black_box(world.spawn((position(i), velocity(i))).id());
        }
        n_despawned
    }

    type Referencing = (World, Vec<Entity>, Vec<Entity>);
    /// The world, the targets and the holders.
    fn referencing(n_holders: u64, n_targets: u64) -> Self::Referencing {
        let mut world = World::new();
        let targets: Vec<Entity> = (0..n_targets).map(|_| world.spawn_empty().id()).collect();
        let holders = world
            .spawn_batch((0..n_holders).map(|i| RefersTo(targets[(i % n_targets) as usize])))
            .collect();
        (world, targets, holders)
    }
    /// Each target despawned; bevy's relationship hook then removes `RefersTo` from its
    /// holders (queued commands, applied when the despawn flushes). Returns the targets
    /// despawned.
    fn destroy_targets((world, targets, _holders): &mut Self::Referencing) -> u64 {
        let mut n_despawned = 0;
        for &target in targets.iter() {
            n_despawned += u64::from(world.despawn(target));
        }
        n_despawned
    }

    type Cloneable = Infallible;
    fn cloneable(_: u64) -> Infallible {
        never_built()
    }
    fn clone_world(never: &mut Infallible) {
        match *never {}
    }

    type Copyable = Infallible;
    fn copyable(_: u64) -> Infallible {
        never_built()
    }
    fn clone_then_write(never: &mut Infallible) {
        match *never {}
    }

    type Heated = (World, QueryState<&'static mut Heat>, BatchingStrategy);
    /// The world, its cached query, and the batching of `writer_batches`; bevy's
    /// `ComputeTaskPool` set up first.
    fn heated(n: u64) -> Self::Heated {
        compute_pool();
        let mut world = World::new();
        world.spawn_batch((0..n).map(|_| Heat(0.0))).for_each(drop);
        let query = world.query::<&mut Heat>();
        (world, query, writer_batches(n))
    }
    /// Through `Mut` (which sets its change tick), in parallel on bevy's `ComputeTaskPool`,
    /// batched by the fixture's batching.
    fn write_in_parallel((world, query, batching): &mut Self::Heated, value: f64) {
        query
            .par_iter_mut(world)
            .batching_strategy(batching.clone())
            .for_each(|mut heat| heat.0 = value);
    }

    type Bulk = (World, BodyQuery);
    fn bulk_bodies(n: u64) -> Self::Bulk {
        let mut world = body_world(n);
        let query = world.query_filtered();
        (world, query)
    }
    fn tagged_bodies(n: u64) -> Self::Bulk {
        let mut world = World::new();
        world
            .spawn_batch((0..n).map(|i| {
                let (t, p, r, v) = body(i);
                (t, p, r, v, TAGGED)
            }))
            .for_each(drop);
        let query = world.query_filtered();
        (world, query)
    }
    /// The members collected, then one `World::insert_batch` giving each [`TAGGED`]; returns
    /// how many were tagged.
    fn tag_all((world, query): &mut Self::Bulk) -> usize {
        let members: Vec<Entity> = query.iter(world).collect();
        let n_tagged = members.len();
        world.insert_batch(members.into_iter().map(|id| (id, TAGGED)));
        n_tagged
    }
    /// Returns how many were visited.
    fn untag_all((world, query): &mut Self::Bulk) -> usize {
        let members: Vec<Entity> = query.iter(world).collect();
        for &id in &members {
            world.entity_mut(id).remove::<Tagged>();
        }
        members.len()
    }
    /// Returns how many were despawned.
    fn despawn_all((world, query): &mut Self::Bulk) -> u64 {
        let members: Vec<Entity> = query.iter(world).collect();
        let mut n_despawned = 0;
        for &id in &members {
            n_despawned += u64::from(world.despawn(id));
        }
        n_despawned
    }

    type Rollback = Infallible;
    fn rollback_world(_: u64) -> Infallible {
        never_built()
    }
    fn rollback_once(never: &mut Infallible) -> (u64, u64, u64) {
        match *never {}
    }
    fn rollback_window_once(never: &mut Infallible) -> ((u64, u64, u64), Infallible) {
        match *never {}
    }

    type Frame = (World, Schedule);
    fn swapping(group: u64) -> Self::Frame {
        (schedule_groups(group), swapping_schedule())
    }
    fn idle() -> Self::Frame {
        (World::new(), repeated(empty))
    }
    fn run_frame((world, schedule): &mut Self::Frame) {
        schedule.run(world);
    }
}

/// A world of `n` bodies ([`body`]).
fn body_world(n: u64) -> World {
    let mut world = World::new();
    world.spawn_batch((0..n).map(body)).for_each(drop);
    world
}

/// The world of `changed_filter` and `changed_filter_frames` with its writer and reader
/// systems' state.
pub struct ChangedFixture {
    world: World,
    /// The entities each frame writes, by `frame % CHANGED_STRIDE`: 1% of them, spread evenly.
    written: Vec<Vec<Entity>>,
    writer: SystemState<Query<'static, 'static, &'static mut Position>>,
    reader: SystemState<Query<'static, 'static, &'static Position, Changed<Position>>>,
}

impl ChangedWork for ChangedFixture {
    /// The writer system writes the frame's 1% of the rows through `Mut`.
    fn write(&mut self, frame: u64) {
        let mut positions = self
            .writer
            .get_mut(&mut self.world)
            .expect("a Query parameter is always valid");
        for &id in &self.written[(frame % CHANGED_STRIDE) as usize] {
            if let Ok(mut position) = positions.get_mut(id) {
                position.nudge();
            }
        }
    }

    /// The reader system visits the rows changed since its last run.
    fn visit(&mut self) -> (u64, f32) {
        visit_changed(&self.world, &mut self.reader)
    }
}

/// Runs the reader once: the number of changed rows it visits and the sum of their `x`.
fn visit_changed(
    world: &World,
    reader: &mut SystemState<Query<'static, 'static, &'static Position, Changed<Position>>>,
) -> (u64, f32) {
    tally(
        reader
            .get(world)
            .expect("a Query parameter is always valid")
            .iter()
            .map(|p| p.x),
    )
}

/// A holder's reference to a target: a bevy relationship, so the target keeps the list of
/// its holders in [`HeldBy`].
#[derive(Component, Debug, Clone, Copy, PartialEq)]
#[relationship(relationship_target = HeldBy)]
struct RefersTo(Entity);

/// The holders of a target, kept by bevy's relationship hooks.
#[derive(Component, Debug)]
#[relationship_target(relationship = RefersTo)]
struct HeldBy(Vec<Entity>);

/// bevy's global `ComputeTaskPool`, which parallel queries run on, with [`PARALLEL_THREADS`]
/// worker threads; the first call in a process sets it up.
///
/// Panics if the pool was set up earlier with another thread count, since the workload would
/// then measure something else.
fn compute_pool() -> &'static ComputeTaskPool {
    let pool = ComputeTaskPool::get_or_init(|| {
        TaskPoolBuilder::new().num_threads(PARALLEL_THREADS).build()
    });
    assert_eq!(
        pool.thread_num(),
        PARALLEL_THREADS,
        "bevy's ComputeTaskPool was set up with another thread count"
    );
    pool
}

/// The batching of `parallel_write` over `n` rows: [`PARALLEL_WRITERS`] batches, each one
/// contiguous share of the table.
fn writer_batches(n: u64) -> BatchingStrategy {
    BatchingStrategy::fixed(n.div_ceil(PARALLEL_WRITERS).max(1) as usize)
}

/// The query of the `bulk_` workloads: the entities carrying all four components of `spawn`.
type BodyQuery = QueryState<
    Entity,
    (
        With<Transform>,
        With<Position>,
        With<Rotation>,
        With<Velocity>,
    ),
>;

fn ab(mut q: Query<'_, '_, (&mut schedule::A, &mut schedule::B)>) {
    for (mut a, mut b) in &mut q {
        std::mem::swap(&mut a.0, &mut b.0);
    }
}

fn cd(mut q: Query<'_, '_, (&mut schedule::C, &mut schedule::D)>) {
    for (mut c, mut d) in &mut q {
        std::mem::swap(&mut c.0, &mut d.0);
    }
}

fn ce(mut q: Query<'_, '_, (&mut schedule::C, &mut schedule::E)>) {
    for (mut c, mut e) in &mut q {
        std::mem::swap(&mut c.0, &mut e.0);
    }
}

/// The four groups of `schedule`, `group` entities each.
fn schedule_groups(group: u64) -> World {
    use schedule::{A, B, C, D, E, value};
    let mut world = World::new();
    let mut i = 0;
    let mut next = || {
        i += 1;
        i - 1
    };
    for _ in 0..group {
        let i = next();
        world.spawn((A(value(i, 0)), B(value(i, 1))));
    }
    for _ in 0..group {
        let i = next();
        world.spawn((A(value(i, 0)), B(value(i, 1)), C(value(i, 2))));
    }
    for _ in 0..group {
        let i = next();
        world.spawn((
            A(value(i, 0)),
            B(value(i, 1)),
            C(value(i, 2)),
            D(value(i, 3)),
        ));
    }
    for _ in 0..group {
        let i = next();
        world.spawn((
            A(value(i, 0)),
            B(value(i, 1)),
            C(value(i, 2)),
            E(value(i, 4)),
        ));
    }
    world
}

/// A schedule on the multi-threaded executor (bevy's ComputeTaskPool of 2 threads).
fn threaded_schedule() -> Schedule {
    compute_pool();
    let mut schedule = Schedule::default();
    schedule.set_executor(MultiThreadedExecutor::new());
    schedule
}

/// The three systems of `schedule`.
fn swapping_schedule() -> Schedule {
    let mut schedule = threaded_schedule();
    schedule.add_systems((ab, cd, ce));
    schedule
}

fn empty() {}

/// A schedule of [`EMPTY_SYSTEMS`] instances of `system`.
fn repeated<M>(system: impl IntoScheduleConfigs<ScheduleSystem, M> + Copy) -> Schedule {
    let mut schedule = threaded_schedule();
    for _ in 0..EMPTY_SYSTEMS {
        schedule.add_systems(system);
    }
    schedule
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iter2_advances_every_position_and_sets_ticks() {
        let mut world = body_world(100);
        let query = world.query::<(&mut Position, &Velocity)>();
        let mut changed = world.query_filtered::<&Position, Changed<Position>>();
        world.clear_trackers();
        assert_eq!(changed.iter(&world).count(), 0);
        let mut fixture = (world, query);
        Bevy::advance_all(&mut fixture);
        let (world, _) = &mut fixture;
        assert_eq!(changed.iter(world).count(), 100);
        let mut expected = position(7);
        expected.advance(&velocity(7));
        let positions: Vec<Position> = world.query::<&Position>().iter(world).copied().collect();
        assert_eq!(positions[7], expected);
    }

    #[test]
    fn frag_iter_negates_all_520_on_every_run() {
        let mut fixture = Bevy::fragmented();
        let mut changed = fixture.0.query_filtered::<&Data, Changed<Data>>();
        for run in 1..=3 {
            fixture.0.clear_trackers();
            Bevy::negate_all(&mut fixture);
            let world = &mut fixture.0;
            assert_eq!(changed.iter(world).count(), 520);
            let expected = if run % 2 == 1 { -1.0 } else { 1.0 };
            let values: Vec<_> = world.query::<&Data>().iter(world).map(|d| d.0).collect();
            assert_eq!(values.len(), 520);
            assert!(values.iter().all(|v| *v == expected), "run {run}");
        }
        assert!(fixture.0.archetypes().len() >= 26);
    }

    #[test]
    fn add_remove_leaves_no_b() {
        let mut fixture = Bevy::with_a(1000);
        Bevy::add_then_remove(&mut fixture);
        let (world, _) = &mut fixture;
        assert_eq!(world.query::<&B>().iter(world).count(), 0);
        assert_eq!(world.query::<&A>().iter(world).count(), 1000);
    }

    #[test]
    fn join_visits_only_the_small_set() {
        let mut fixture = Bevy::joinable(20_000, 200);
        assert_eq!(fixture.1.iter(&fixture.0).count(), 200);
        let expected: f64 = (0..20_000_u64)
            .filter(|&i| is_small(i, 20_000, 200))
            .map(|i| big(i).0)
            .sum();
        assert_eq!(Bevy::join_sum(&mut fixture), expected);
    }

    #[test]
    fn despawn_respawn_keeps_the_count() {
        let mut fixture = Bevy::movers(1000);
        assert_eq!(Bevy::despawn_then_respawn(&mut fixture), 500);
        let (world, _) = &mut fixture;
        assert_eq!(world.query::<&Position>().iter(world).count(), 1000);
    }

    #[test]
    fn reference_cleanup_clears_every_reference() {
        let mut fixture = Bevy::referencing(1000, 10);
        let world = &mut fixture.0;
        assert_eq!(world.query::<&RefersTo>().iter(world).count(), 1000);
        assert_eq!(Bevy::destroy_targets(&mut fixture), 10);
        let (world, targets, holders) = &mut fixture;
        assert_eq!(world.query::<&RefersTo>().iter(world).count(), 0);
        assert!(targets.iter().all(|t| world.get_entity(*t).is_err()));
        assert!(holders.iter().all(|h| world.get_entity(*h).is_ok()));
    }

    #[test]
    fn parallel_write_writes_every_heat_and_sets_ticks() {
        assert_eq!(compute_pool().thread_num(), PARALLEL_THREADS);
        let mut fixture = Bevy::heated(10_000);
        let world = &mut fixture.0;
        let mut changed = world.query_filtered::<&Heat, Changed<Heat>>();
        world.clear_trackers();
        assert_eq!(changed.iter(world).count(), 0);
        Bevy::write_in_parallel(&mut fixture, 1.0);
        let world = &mut fixture.0;
        assert_eq!(changed.iter(world).count(), 10_000);
        let heats: Vec<f64> = world.query::<&Heat>().iter(world).map(|h| h.0).collect();
        assert_eq!(heats.len(), 10_000);
        assert!(heats.iter().all(|h| *h == 1.0));
    }

    #[test]
    fn bulk_spawn_spawns_every_body() {
        let mut world = World::new();
        assert_eq!(world.spawn_batch((0..1000).map(body)).count(), 1000);
        let mut query: BodyQuery = world.query_filtered();
        assert_eq!(query.iter(&world).count(), 1000);
        let positions: Vec<Position> = world.query::<&Position>().iter(&world).copied().collect();
        assert_eq!(positions[7], position(7));
    }

    #[test]
    fn bulk_set_tags_every_body_with_its_value() {
        let mut fixture = Bevy::bulk_bodies(1000);
        assert_eq!(Bevy::tag_all(&mut fixture), 1000);
        let (world, query) = &mut fixture;
        let tags: Vec<(Position, Tagged)> = world
            .query::<(&Position, &Tagged)>()
            .iter(world)
            .map(|(p, t)| (*p, *t))
            .collect();
        assert_eq!(tags.len(), 1000);
        assert!(tags.iter().all(|(_, t)| *t == TAGGED));
        assert_eq!(query.iter(world).count(), 1000);
    }

    #[test]
    fn bulk_remove_untags_every_body_and_keeps_it() {
        let mut fixture = Bevy::tagged_bodies(1000);
        let world = &mut fixture.0;
        assert_eq!(world.query::<&Tagged>().iter(world).count(), 1000);
        assert_eq!(Bevy::untag_all(&mut fixture), 1000);
        let (world, query) = &mut fixture;
        assert_eq!(world.query::<&Tagged>().iter(world).count(), 0);
        assert_eq!(query.iter(world).count(), 1000);
    }

    #[test]
    fn bulk_despawn_empties_the_world() {
        let mut fixture = Bevy::bulk_bodies(1000);
        let (world, query) = &mut fixture;
        let members: Vec<Entity> = query.iter(world).collect();
        // bevy_ecs keeps entities of its own (such as the one holding its resources).
        let spawned_before = world.entities().count_spawned();
        assert_eq!(Bevy::despawn_all(&mut fixture), 1000);
        let (world, query) = &mut fixture;
        assert_eq!(query.iter(world).count(), 0);
        assert!(members.iter().all(|id| world.get_entity(*id).is_err()));
        assert_eq!(world.entities().count_spawned(), spawned_before - 1000);
        assert_eq!(world.query::<&Position>().iter(world).count(), 0);
    }

    #[test]
    fn a_schedule_run_swaps_every_pair() {
        use schedule::{A, B, C, D, E, value};
        let mut world = schedule_groups(100);
        let mut schedule = swapping_schedule();
        schedule.run(&mut world);
        let mut seen = 0;
        let mut rows = world.query::<(&A, &B, Option<&C>, Option<&D>, Option<&E>)>();
        for (a, b, c, d, e) in rows.iter(&world) {
            // The entity's index, from the smaller of its A and B values (its A before the run).
            let i = ((a.0.min(b.0) - 0.5) as u64) / 5;
            assert_eq!((a.0, b.0), (value(i, 1), value(i, 0)));
            match (c, d, e) {
                (Some(c), Some(d), None) => assert_eq!((c.0, d.0), (value(i, 3), value(i, 2))),
                (Some(c), None, Some(e)) => assert_eq!((c.0, e.0), (value(i, 4), value(i, 2))),
                (Some(c), None, None) => assert_eq!(c.0, value(i, 2)),
                (None, None, None) => {}
                other => panic!("unexpected row {other:?}"),
            }
            seen += 1;
        }
        assert_eq!(seen, 400);
        schedule.run(&mut world);
        let restored = rows.iter(&world).filter(|(a, b, ..)| a.0 < b.0).count();
        assert_eq!(restored, 400, "a second run swaps everything back");
    }

    #[derive(bevy_ecs::prelude::Resource, Default)]
    struct Calls(u64);

    fn counted(mut calls: bevy_ecs::prelude::ResMut<'_, Calls>) {
        calls.0 += 1;
    }

    #[test]
    fn a_repeated_schedule_runs_every_instance() {
        let mut world = World::new();
        world.init_resource::<Calls>();
        let mut schedule = repeated(counted);
        schedule.run(&mut world);
        assert_eq!(world.resource::<Calls>().0, EMPTY_SYSTEMS);
    }
}
