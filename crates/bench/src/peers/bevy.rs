//! The `bevy_ecs` side of the peer workloads: archetypes of table-stored components, cached
//! `QueryState`s, change ticks kept on every write, relationships for references.
//!
//! Invariant: every workload here uses `bevy_ecs`'s public API without `unsafe`, builds its
//! world outside the timed routine, and writes components through `Mut` so bevy's change ticks
//! stay what a real game would see.

use std::hint::black_box;

use bevy_ecs::batching::BatchingStrategy;
use bevy_ecs::prelude::{Changed, Component, Entity, Query, QueryState, Schedule, With, World};
use bevy_ecs::schedule::{IntoScheduleConfigs, MultiThreadedExecutor};
use bevy_ecs::system::ScheduleSystem;
use bevy_ecs::system::SystemState;
use bevy_tasks::{ComputeTaskPool, TaskPoolBuilder};

use super::kinds::*;
use super::{
    ADD_REMOVE_SIZE, ADDED_B, BULK_SIZE, Big, CHANGED_SIZE, CHANGED_STRIDE, ChangedWork,
    DESPAWN_SIZE, Data, EMPTY_SYSTEMS, ENTITY_SIZES, FRAG_KINDS, FRAG_PER_KIND, Heat, JOIN_SIZES,
    PARALLEL_THREADS, PARALLEL_WRITE_SIZE, PARALLEL_WRITERS, Position, REFERENCE_SIZES, Rotation,
    SMALL, Small, Spawn, TAGGED, Tagged, Transform, Velocity, a, big, body, for_each_kind,
    fragment, is_small, position, schedule, tally, time_parallel_writes, velocity, written_groups,
};
use crate::harness::Workload;

/// The library name of these records.
pub const LIBRARY: &str = "bevy_ecs";

/// The `bevy_ecs` workloads, in the order of [`super::ORDER`] (sorted there anyway).
pub fn workloads() -> Vec<Workload> {
    let mut workloads = Vec::new();
    for n in ENTITY_SIZES {
        workloads.push(spawn(n));
        workloads.push(spawn_batch(n));
        workloads.push(iter2(n));
    }
    workloads.push(frag_iter());
    workloads.push(add_remove(ADD_REMOVE_SIZE));
    for (n_big, n_small) in JOIN_SIZES {
        workloads.push(small_driver_join(n_big, n_small));
    }
    workloads.push(changed_filter(CHANGED_SIZE));
    workloads.push(changed_filter_frames(CHANGED_SIZE));
    workloads.push(despawn_respawn(DESPAWN_SIZE));
    workloads.push(reference_cleanup(REFERENCE_SIZES.0, REFERENCE_SIZES.1));
    workloads.push(parallel_write(PARALLEL_WRITE_SIZE));
    workloads.push(bulk_spawn(BULK_SIZE));
    workloads.push(bulk_set(BULK_SIZE));
    workloads.push(bulk_remove(BULK_SIZE));
    workloads.push(bulk_despawn(BULK_SIZE));
    workloads.push(schedule_workload());
    workloads.push(frame_overhead());
    workloads.into_iter().map(|w| w.library(LIBRARY)).collect()
}

fn spawn(n: u64) -> Workload {
    Workload::new(
        "spawn",
        n,
        "World::spawn per entity into one table (4 components, ticks set)",
        move |b| {
            b.iter_with_setup(World::new, |world| {
                for i in 0..n {
                    black_box(world.spawn(body(i)).id());
                }
            });
        },
    )
}

fn spawn_batch(n: u64) -> Workload {
    Workload::new(
        "spawn_batch",
        n,
        "World::spawn_batch (table reserved from the size hint)",
        move |b| {
            b.iter_with_setup(World::new, |world| {
                world.spawn_batch((0..n).map(body)).count()
            });
        },
    )
}

/// A world of `n` entities with the four components of `spawn`.
fn bodies(n: u64) -> World {
    let mut world = World::new();
    world.spawn_batch((0..n).map(body)).for_each(drop);
    world
}

/// The step of `iter2`: `Position += Velocity` over every match, through `Mut` (change ticks set).
fn advance_all(world: &mut World, query: &mut QueryState<(&mut Position, &Velocity)>) {
    query
        .iter_mut(world)
        .for_each(|(mut position, velocity)| position.advance(velocity));
}

fn iter2(n: u64) -> Workload {
    Workload::new(
        "iter2",
        n,
        "cached QueryState<(&mut Position, &Velocity)>::iter_mut, for_each over one table; Mut sets change ticks",
        move |b| {
            let mut world = bodies(n);
            let mut query = world.query::<(&mut Position, &Velocity)>();
            b.iter(|| advance_all(&mut world, &mut query));
        },
    )
}

/// The world of `frag_iter`: 20 entities of each kind `A`..`Z`, each also with [`Data`].
fn fragmented() -> World {
    let mut world = World::new();
    macro_rules! spawn_kind {
        ($kind:ident, $world:expr) => {
            $world
                .spawn_batch((0..FRAG_PER_KIND).map(|i| {
                    let (value, data) = fragment(i);
                    ($kind(value), data)
                }))
                .for_each(drop);
        };
    }
    for_each_kind!(spawn_kind, world);
    world
}

/// The step of `frag_iter`: every [`Data`] negated through `Mut` (change ticks set).
fn negate_all(world: &mut World, query: &mut QueryState<&mut Data>) {
    query.iter_mut(world).for_each(|mut data| data.negate());
}

fn frag_iter() -> Workload {
    let n = FRAG_KINDS * FRAG_PER_KIND;
    Workload::new(
        "frag_iter",
        n,
        "cached QueryState<&mut Data>::iter_mut over 26 tables of 20",
        move |b| {
            let mut world = fragmented();
            let mut query = world.query::<&mut Data>();
            b.iter(|| negate_all(&mut world, &mut query));
        },
    )
}

/// A world of `n` entities with [`A`], and their ids.
fn with_a(n: u64) -> (World, Vec<Entity>) {
    let mut world = World::new();
    let ids = world.spawn_batch((0..n).map(a)).collect();
    (world, ids)
}

/// The routine of `add_remove`: [`B`] added to every entity, then removed from every one.
fn add_then_remove(world: &mut World, ids: &[Entity]) {
    for &id in ids {
        world.entity_mut(id).insert(ADDED_B);
    }
    for &id in ids {
        world.entity_mut(id).remove::<B>();
    }
}

fn add_remove(n: u64) -> Workload {
    Workload::new(
        "add_remove",
        n,
        "EntityWorldMut::insert then remove per entity (table move each way, cached archetype edges)",
        move |b| {
            b.iter_with_setup(|| with_a(n), |(world, ids)| add_then_remove(world, ids));
        },
    )
}

/// The world of `small_driver_join`: `n_big` entities with [`Big`], `n_small` of them with
/// [`Small`] too.
fn joinable(n_big: u64, n_small: u64) -> World {
    let mut world = World::new();
    for i in 0..n_big {
        if is_small(i, n_big, n_small) {
            world.spawn((big(i), SMALL));
        } else {
            world.spawn(big(i));
        }
    }
    world
}

/// The routine of `small_driver_join`: the sum of [`Big`] over the entities with both.
fn join_sum(world: &World, query: &mut QueryState<(&Big, &Small)>) -> f64 {
    query
        .iter(world)
        .fold(0.0, |sum, (big, _small)| sum + big.0)
}

fn small_driver_join(n_big: u64, n_small: u64) -> Workload {
    Workload::new(
        "small_driver_join",
        n_big,
        "cached QueryState<(&Big, &Small)>: only the (Big, Small) table is visited",
        move |b| {
            let world = joinable(n_big, n_small);
            let mut query = world
                .try_query::<(&Big, &Small)>()
                .expect("both components are registered by the spawns");
            b.iter(|| join_sum(&world, &mut query));
        },
    )
    .items(n_small)
}

/// The world of `changed_filter` and `changed_filter_frames` with its writer and reader
/// systems' state.
struct ChangedFixture {
    world: World,
    /// The entities each frame writes, by `frame % CHANGED_STRIDE`: 1% of them, spread evenly.
    written: Vec<Vec<Entity>>,
    writer: SystemState<Query<'static, 'static, &'static mut Position>>,
    reader: SystemState<Query<'static, 'static, &'static Position, Changed<Position>>>,
}

impl ChangedFixture {
    fn new(n: u64, spawn: Spawn) -> ChangedFixture {
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

fn changed_filter(n: u64) -> Workload {
    super::changed_filter(
        n,
        "SystemState<Query<&Position, Changed<Position>>> (its last run is the window): tick compare per row of the table; writes through Mut in another system",
        ChangedFixture::new,
    )
}

fn changed_filter_frames(n: u64) -> Workload {
    super::changed_filter_frames(
        n,
        "per frame: the writer system writes another 1% through Mut (untimed), then SystemState<Query<&Position, Changed<Position>>> runs (timed): tick compare per row of the table; world spawned one entity at a time",
        ChangedFixture::new,
    )
}

/// A world of `n` entities with [`Position`] and [`Velocity`], and their ids.
fn movers(n: u64) -> (World, Vec<Entity>) {
    let mut world = World::new();
    let ids = world
        .spawn_batch((0..n).map(|i| (position(i), velocity(i))))
        .collect();
    (world, ids)
}

/// The routine of `despawn_respawn`: every other entity despawned, then as many spawned.
fn despawn_then_respawn(world: &mut World, ids: &[Entity]) -> u64 {
    let mut n_despawned = 0;
    for &id in ids.iter().step_by(2) {
        n_despawned += u64::from(world.despawn(id));
    }
    for i in 0..n_despawned {
        black_box(world.spawn((position(i), velocity(i))).id());
    }
    n_despawned
}

fn despawn_respawn(n: u64) -> Workload {
    Workload::new(
        "despawn_respawn",
        n,
        "World::despawn per entity (swap-remove from the table), then World::spawn per entity reusing freed ids",
        move |b| {
            b.iter_with_setup(
                || movers(n),
                |(world, ids)| despawn_then_respawn(world, ids),
            );
        },
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

/// The world of `reference_cleanup`: `n_targets` targets and `n_holders` holders, holder `i`
/// referring to target `i % n_targets`; returns the world, the targets and the holders.
fn referencing(n_holders: u64, n_targets: u64) -> (World, Vec<Entity>, Vec<Entity>) {
    let mut world = World::new();
    let targets: Vec<Entity> = (0..n_targets).map(|_| world.spawn_empty().id()).collect();
    let holders = world
        .spawn_batch((0..n_holders).map(|i| RefersTo(targets[(i % n_targets) as usize])))
        .collect();
    (world, targets, holders)
}

/// The routine of `reference_cleanup`: each target despawned; bevy's relationship hook then
/// removes `RefersTo` from its holders (queued commands, applied when the despawn flushes).
fn destroy_targets(world: &mut World, targets: &[Entity]) -> u64 {
    let mut n_despawned = 0;
    for &target in targets {
        n_despawned += u64::from(world.despawn(target));
    }
    n_despawned
}

fn reference_cleanup(n_holders: u64, n_targets: u64) -> Workload {
    Workload::new(
        "reference_cleanup",
        n_holders,
        "relationship RefersTo/HeldBy: despawning a target removes RefersTo from its holders (hook + commands, a table move per holder)",
        move |b| {
            b.iter_with_setup(
                || referencing(n_holders, n_targets),
                |(world, targets, _holders)| destroy_targets(world, targets),
            );
        },
    )
}

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

/// A world of `n` entities with [`Heat`] 0, and its cached query.
fn heated(n: u64) -> (World, QueryState<&'static mut Heat>) {
    let mut world = World::new();
    world.spawn_batch((0..n).map(|_| Heat(0.0))).for_each(drop);
    let query = world.query::<&mut Heat>();
    (world, query)
}

/// The batching of `parallel_write` over `n` rows: [`PARALLEL_WRITERS`] batches, each one
/// contiguous share of the table.
fn writer_batches(n: u64) -> BatchingStrategy {
    BatchingStrategy::fixed(n.div_ceil(PARALLEL_WRITERS).max(1) as usize)
}

/// The routine of `parallel_write`: `value` written into every [`Heat`] through `Mut` (which
/// sets its change tick), in parallel on bevy's `ComputeTaskPool`, batched by `batching`.
fn write_in_parallel(
    world: &mut World,
    query: &mut QueryState<&'static mut Heat>,
    batching: &BatchingStrategy,
    value: f64,
) {
    query
        .par_iter_mut(world)
        .batching_strategy(batching.clone())
        .for_each(|mut heat| heat.0 = value);
}

fn parallel_write(n: u64) -> Workload {
    Workload::new(
        "parallel_write",
        n,
        "cached QueryState<&mut Heat>::par_iter_mut (multi_threaded) on bevy's ComputeTaskPool of 2 threads (the calling thread helps), 4 fixed batches of a quarter; each write in place through Mut, which sets its change tick",
        move |b| {
            compute_pool();
            let (mut world, mut query) = heated(n);
            let batching = writer_batches(n);
            time_parallel_writes(b, |value| {
                write_in_parallel(&mut world, &mut query, &batching, value);
            });
        },
    )
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

/// A world of `n` bodies and its cached [`BodyQuery`].
fn queried_bodies(n: u64) -> (World, BodyQuery) {
    let mut world = bodies(n);
    let query = world.query_filtered();
    (world, query)
}

fn bulk_spawn(n: u64) -> Workload {
    Workload::new(
        "bulk_spawn",
        n,
        "World::spawn_batch into a fresh world: one table of 4 columns reserved from the size hint, added/changed ticks set per row",
        move |b| {
            b.iter_with_setup(World::new, |world| {
                world.spawn_batch((0..n).map(body)).count()
            });
        },
    )
}

/// The routine of `bulk_set`: the query's members collected, then one `World::insert_batch`
/// giving each [`TAGGED`]; returns how many were tagged.
fn tag_all(world: &mut World, query: &mut BodyQuery) -> usize {
    let members: Vec<Entity> = query.iter(world).collect();
    let n_tagged = members.len();
    world.insert_batch(members.into_iter().map(|id| (id, TAGGED)));
    n_tagged
}

fn bulk_set(n: u64) -> Workload {
    Workload::new(
        "bulk_set",
        n,
        "cached QueryState<Entity, With<4 components>> collected, then World::insert_batch: the archetype edge found once, a table move per entity (4 columns copied), ticks set",
        move |b| {
            b.iter_with_setup(|| queried_bodies(n), |(world, query)| tag_all(world, query));
        },
    )
}

/// A world of `n` bodies that all carry [`Tagged`] too ([`TAGGED`]), and its
/// cached [`BodyQuery`].
fn tagged_bodies(n: u64) -> (World, BodyQuery) {
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

/// The routine of `bulk_remove`: the query's members collected, then [`Tagged`] removed from
/// each; returns how many were visited.
fn untag_all(world: &mut World, query: &mut BodyQuery) -> usize {
    let members: Vec<Entity> = query.iter(world).collect();
    for &id in &members {
        world.entity_mut(id).remove::<Tagged>();
    }
    members.len()
}

fn bulk_remove(n: u64) -> Workload {
    Workload::new(
        "bulk_remove",
        n,
        "cached QueryState<Entity, With<4 components>> collected, then EntityWorldMut::remove::<Tagged> per entity (no batch remove in bevy_ecs): a table move per entity (4 columns copied), cached archetype edge",
        move |b| {
            b.iter_with_setup(
                || tagged_bodies(n),
                |(world, query)| untag_all(world, query),
            );
        },
    )
}

/// The routine of `bulk_despawn`: the query's members collected, then each despawned; returns
/// how many were despawned.
fn despawn_all(world: &mut World, query: &mut BodyQuery) -> u64 {
    let members: Vec<Entity> = query.iter(world).collect();
    let mut n_despawned = 0;
    for &id in &members {
        n_despawned += u64::from(world.despawn(id));
    }
    n_despawned
}

fn bulk_despawn(n: u64) -> Workload {
    Workload::new(
        "bulk_despawn",
        n,
        "cached QueryState<Entity, With<4 components>> collected, then World::despawn per entity (no batch despawn in bevy_ecs): a swap-remove from the table per entity, despawn hooks and observers checked",
        move |b| {
            b.iter_with_setup(
                || queried_bodies(n),
                |(world, query)| despawn_all(world, query),
            );
        },
    )
}

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

fn schedule_workload() -> Workload {
    let group = schedule::GROUP;
    Workload::new(
        "schedule",
        4 * group,
        "Schedule::run on the multi-threaded executor (ComputeTaskPool of 2 threads): ab, cd and ce, each a Query of two &mut components swapping in place through Mut (change ticks set); cd and ce both take &mut C, so the executor runs them one after the other",
        move |b| {
            let mut world = schedule_groups(group);
            let mut schedule = swapping_schedule();
            b.iter(|| schedule.run(&mut world));
        },
    )
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

fn frame_overhead() -> Workload {
    Workload::new(
        "frame_overhead",
        EMPTY_SYSTEMS,
        "Schedule::run on the multi-threaded executor (ComputeTaskPool of 2 threads) of 100 systems that do nothing",
        move |b| {
            let mut world = World::new();
            let mut schedule = repeated(empty);
            b.iter(|| schedule.run(&mut world));
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::written_tally;

    #[test]
    fn iter2_advances_every_position_and_sets_ticks() {
        let mut world = bodies(100);
        let mut query = world.query::<(&mut Position, &Velocity)>();
        let mut changed = world.query_filtered::<&Position, Changed<Position>>();
        world.clear_trackers();
        assert_eq!(changed.iter(&world).count(), 0);
        advance_all(&mut world, &mut query);
        assert_eq!(changed.iter(&world).count(), 100);
        let mut expected = position(7);
        expected.advance(&velocity(7));
        let positions: Vec<Position> = world.query::<&Position>().iter(&world).copied().collect();
        assert_eq!(positions[7], expected);
    }

    #[test]
    fn frag_iter_negates_all_520_on_every_run() {
        let mut world = fragmented();
        let mut query = world.query::<&mut Data>();
        let mut changed = world.query_filtered::<&Data, Changed<Data>>();
        for run in 1..=3 {
            world.clear_trackers();
            negate_all(&mut world, &mut query);
            assert_eq!(changed.iter(&world).count(), 520);
            let expected = if run % 2 == 1 { -1.0 } else { 1.0 };
            let values: Vec<_> = world.query::<&Data>().iter(&world).map(|d| d.0).collect();
            assert_eq!(values.len(), 520);
            assert!(values.iter().all(|v| *v == expected), "run {run}");
        }
        assert!(world.archetypes().len() >= 26);
    }

    #[test]
    fn add_remove_leaves_no_b() {
        let (mut world, ids) = with_a(1000);
        add_then_remove(&mut world, &ids);
        assert_eq!(world.query::<&B>().iter(&world).count(), 0);
        assert_eq!(world.query::<&A>().iter(&world).count(), 1000);
    }

    #[test]
    fn join_visits_only_the_small_set() {
        let world = joinable(20_000, 200);
        let mut query = world.try_query::<(&Big, &Small)>().expect("registered");
        assert_eq!(query.iter(&world).count(), 200);
        let expected: f64 = (0..20_000_u64)
            .filter(|&i| is_small(i, 20_000, 200))
            .map(|i| big(i).0)
            .sum();
        assert_eq!(join_sum(&world, &mut query), expected);
    }

    /// Every sample sees exactly the rows written since the previous one.
    #[test]
    fn changed_filter_sees_exactly_the_writes_of_each_sample() {
        for spawn in [Spawn::Batch, Spawn::OneByOne] {
            let mut fixture = ChangedFixture::new(10_000, spawn);
            assert_eq!(fixture.visit().0, 0);
            for frame in 0..3 {
                fixture.write(frame);
                assert_eq!(fixture.visit(), written_tally(10_000, frame));
                assert_eq!(fixture.visit().0, 0);
            }
        }
    }

    #[test]
    fn despawn_respawn_keeps_the_count() {
        let (mut world, ids) = movers(1000);
        assert_eq!(despawn_then_respawn(&mut world, &ids), 500);
        assert_eq!(world.query::<&Position>().iter(&world).count(), 1000);
    }

    #[test]
    fn reference_cleanup_clears_every_reference() {
        let (mut world, targets, holders) = referencing(1000, 10);
        assert_eq!(world.query::<&RefersTo>().iter(&world).count(), 1000);
        assert_eq!(destroy_targets(&mut world, &targets), 10);
        assert_eq!(world.query::<&RefersTo>().iter(&world).count(), 0);
        assert!(targets.iter().all(|t| world.get_entity(*t).is_err()));
        assert!(holders.iter().all(|h| world.get_entity(*h).is_ok()));
    }

    #[test]
    fn parallel_write_writes_every_heat_and_sets_ticks() {
        assert_eq!(compute_pool().thread_num(), PARALLEL_THREADS);
        let (mut world, mut query) = heated(10_000);
        let mut changed = world.query_filtered::<&Heat, Changed<Heat>>();
        world.clear_trackers();
        assert_eq!(changed.iter(&world).count(), 0);
        write_in_parallel(&mut world, &mut query, &writer_batches(10_000), 1.0);
        assert_eq!(changed.iter(&world).count(), 10_000);
        let heats: Vec<f64> = world.query::<&Heat>().iter(&world).map(|h| h.0).collect();
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
        let (mut world, mut query) = queried_bodies(1000);
        assert_eq!(tag_all(&mut world, &mut query), 1000);
        let tags: Vec<(Position, Tagged)> = world
            .query::<(&Position, &Tagged)>()
            .iter(&world)
            .map(|(p, t)| (*p, *t))
            .collect();
        assert_eq!(tags.len(), 1000);
        assert!(tags.iter().all(|(_, t)| *t == TAGGED));
        assert_eq!(query.iter(&world).count(), 1000);
    }

    #[test]
    fn bulk_remove_untags_every_body_and_keeps_it() {
        let (mut world, mut query) = tagged_bodies(1000);
        assert_eq!(world.query::<&Tagged>().iter(&world).count(), 1000);
        assert_eq!(untag_all(&mut world, &mut query), 1000);
        assert_eq!(world.query::<&Tagged>().iter(&world).count(), 0);
        assert_eq!(query.iter(&world).count(), 1000);
    }

    #[test]
    fn bulk_despawn_empties_the_world() {
        let (mut world, mut query) = queried_bodies(1000);
        let members: Vec<Entity> = query.iter(&world).collect();
        // bevy_ecs keeps entities of its own (such as the one holding its resources).
        let spawned_before = world.entities().count_spawned();
        assert_eq!(despawn_all(&mut world, &mut query), 1000);
        assert_eq!(query.iter(&world).count(), 0);
        assert!(members.iter().all(|id| world.get_entity(*id).is_err()));
        assert_eq!(world.entities().count_spawned(), spawned_before - 1000);
        assert_eq!(world.query::<&Position>().iter(&world).count(), 0);
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
