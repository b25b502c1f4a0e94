//! The `hecs` side of the peer workloads: archetypes of column-stored components, queries
//! borrowed per call, no change ticks and no reference tracking.
//!
//! hecs has no change detection built into storage; its `ChangeTracker` keeps a shadow copy of
//! each tracked component and compares, which is what `changed_filter` measures. It has no
//! relationships either, so `reference_cleanup` scans the holders, and no `World::clone`, so
//! `world_clone` copies each archetype's columns into a `ColumnBatch` spawned at the same
//! handles, the route hecs documents for cloning a world.
//!
//! Invariant: every workload here uses hecs's public API without `unsafe`, and builds its world
//! outside the timed routine.

use std::any::TypeId;
use std::hint::black_box;

use hecs::{
    Archetype, ChangeTracker, ColumnBatchBuilder, ColumnBatchType, Component, Entity, TypeInfo,
    World,
};
use rayon::prelude::*;

use super::kinds::*;
use super::{
    ADD_REMOVE_SIZE, ADDED_B, BULK_SIZE, Big, CHANGED_SIZE, CHANGED_STRIDE, CLONE_SIZE,
    ChangedWork, DESPAWN_SIZE, Data, ENTITY_SIZES, FRAG_KINDS, FRAG_PER_KIND, Heat, JOIN_SIZES,
    PARALLEL_WRITE_SIZE, PARALLEL_WRITERS, Position, REFERENCE_SIZES, Rotation, SMALL, Small,
    Spawn, TAGGED, Tagged, Transform, Velocity, a, big, body, for_each_kind, fragment, is_small,
    position, rayon_pool, rotation, tally, time_parallel_writes, velocity, written_groups,
};
use crate::data::{ROLLBACK_CHURN, ROLLBACK_SIZE, rollback_destroyed, rollback_written};
use crate::harness::Workload;

/// The library name of these records.
pub const LIBRARY: &str = "hecs";

/// The `hecs` workloads.
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
    workloads.push(world_clone(CLONE_SIZE));
    workloads.push(world_clone_then_write(CLONE_SIZE));
    workloads.push(parallel_write(PARALLEL_WRITE_SIZE));
    workloads.push(bulk_spawn(BULK_SIZE));
    workloads.push(bulk_set(BULK_SIZE));
    workloads.push(bulk_remove(BULK_SIZE));
    workloads.push(bulk_despawn(BULK_SIZE));
    workloads.push(rollback_frame(ROLLBACK_SIZE));
    workloads.into_iter().map(|w| w.library(LIBRARY)).collect()
}

fn spawn(n: u64) -> Workload {
    Workload::new(
        "spawn",
        n,
        "World::spawn per entity into one archetype (4 columns)",
        move |b| {
            b.iter_with_setup(World::new, |world| {
                for i in 0..n {
                    black_box(world.spawn(body(i)));
                }
            });
        },
    )
}

fn spawn_batch(n: u64) -> Workload {
    Workload::new(
        "spawn_batch",
        n,
        "World::spawn_batch (archetype reserved from the size hint)",
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

/// The step of `iter2`: `Position += Velocity` over every match.
fn advance_all(world: &mut World) {
    world
        .query_mut::<(&mut Position, &Velocity)>()
        .into_iter()
        .for_each(|(position, velocity)| position.advance(velocity));
}

fn iter2(n: u64) -> Workload {
    Workload::new(
        "iter2",
        n,
        "World::query_mut::<(&mut Position, &Velocity)>, for_each over one archetype",
        move |b| {
            let mut world = bodies(n);
            b.iter(|| advance_all(&mut world));
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

/// The step of `frag_iter`: every [`Data`] negated.
fn negate_all(world: &mut World) {
    world
        .query_mut::<&mut Data>()
        .into_iter()
        .for_each(Data::negate);
}

fn frag_iter() -> Workload {
    let n = FRAG_KINDS * FRAG_PER_KIND;
    Workload::new(
        "frag_iter",
        n,
        "World::query_mut::<&mut Data> over 26 archetypes of 20",
        move |b| {
            let mut world = fragmented();
            b.iter(|| negate_all(&mut world));
        },
    )
}

/// A world of `n` entities with [`A`], and their ids.
fn with_a(n: u64) -> (World, Vec<Entity>) {
    let mut world = World::new();
    let ids = world.spawn_batch((0..n).map(|i| (a(i),))).collect();
    (world, ids)
}

/// The routine of `add_remove`: [`B`] added to every entity, then removed from every one.
fn add_then_remove(world: &mut World, ids: &[Entity]) -> u64 {
    let mut n_moved = 0;
    for &id in ids {
        n_moved += u64::from(world.insert_one(id, ADDED_B).is_ok());
    }
    for &id in ids {
        n_moved += u64::from(world.remove_one::<B>(id).is_ok());
    }
    n_moved
}

fn add_remove(n: u64) -> Workload {
    Workload::new(
        "add_remove",
        n,
        "World::insert_one then remove_one per entity (archetype move each way, cached edges)",
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
            world.spawn((big(i),));
        }
    }
    world
}

/// The routine of `small_driver_join`: the sum of [`Big`] over the entities with both.
fn join_sum(world: &mut World) -> f64 {
    world
        .query_mut::<(&Big, &Small)>()
        .into_iter()
        .fold(0.0, |sum, (big, _small)| sum + big.0)
}

fn small_driver_join(n_big: u64, n_small: u64) -> Workload {
    Workload::new(
        "small_driver_join",
        n_big,
        "World::query_mut::<(&Big, &Small)>: only the (Big, Small) archetype is visited",
        move |b| {
            let mut world = joinable(n_big, n_small);
            b.iter(|| join_sum(&mut world));
        },
    )
    .items(n_small)
}

/// The world of `changed_filter` and `changed_filter_frames` and its change tracker.
struct ChangedFixture {
    world: World,
    tracker: ChangeTracker<Position>,
    /// The entities each frame writes, by `frame % CHANGED_STRIDE`: 1% of them, spread evenly.
    written: Vec<Vec<Entity>>,
}

impl ChangedFixture {
    fn new(n: u64, spawn: Spawn) -> ChangedFixture {
        let mut world = World::new();
        let ids: Vec<Entity> = match spawn {
            Spawn::Batch => world.spawn_batch((0..n).map(|i| (position(i),))).collect(),
            Spawn::OneByOne => (0..n).map(|i| world.spawn((position(i),))).collect(),
        };
        let written = written_groups(&ids);
        let mut tracker = ChangeTracker::new();
        // The first track sees every row as added and gives each its shadow copy; that is
        // setup, not a sample.
        drop(tracker.track(&mut world));
        ChangedFixture {
            world,
            tracker,
            written,
        }
    }
}

impl ChangedWork for ChangedFixture {
    /// Writes the frame's 1% of the rows (to a different value, which is what the tracker
    /// compares).
    fn write(&mut self, frame: u64) {
        for &id in &self.written[(frame % CHANGED_STRIDE) as usize] {
            if let Ok(position) = self.world.query_one_mut::<&mut Position>(id) {
                position.nudge();
            }
        }
    }

    /// One track, visiting the rows that differ from their shadow copies.
    fn visit(&mut self) -> (u64, f32) {
        let mut changes = self.tracker.track(&mut self.world);
        tally(changes.changed().map(|(_id, _old, new)| new.x))
    }
}

fn changed_filter(n: u64) -> Workload {
    super::changed_filter(
        n,
        "no change ticks in hecs: ChangeTracker<Position> compares every row with a shadow copy (PartialEq) and refreshes the changed ones",
        ChangedFixture::new,
    )
}

fn changed_filter_frames(n: u64) -> Workload {
    super::changed_filter_frames(
        n,
        "per frame: another 1% written through query_one_mut (untimed), then one ChangeTracker<Position>::track (timed) comparing every row with its shadow copy; world spawned one entity at a time",
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
        n_despawned += u64::from(world.despawn(id).is_ok());
    }
    for i in 0..n_despawned {
        black_box(world.spawn((position(i), velocity(i))));
    }
    n_despawned
}

fn despawn_respawn(n: u64) -> Workload {
    Workload::new(
        "despawn_respawn",
        n,
        "World::despawn per entity (swap-remove from the archetype), then World::spawn per entity reusing freed ids",
        move |b| {
            b.iter_with_setup(
                || movers(n),
                |(world, ids)| despawn_then_respawn(world, ids),
            );
        },
    )
}

/// A holder's reference to a target, cleared when the target is gone.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Holder {
    target: Option<Entity>,
}

/// A target of `reference_cleanup`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Target;

/// The world of `reference_cleanup`: `n_targets` targets and `n_holders` holders, holder `i`
/// referring to target `i % n_targets`; returns the world and the targets.
fn referencing(n_holders: u64, n_targets: u64) -> (World, Vec<Entity>) {
    let mut world = World::new();
    let targets: Vec<Entity> = world
        .spawn_batch((0..n_targets).map(|_| (Target,)))
        .collect();
    world
        .spawn_batch((0..n_holders).map(|i| {
            (Holder {
                target: Some(targets[(i % n_targets) as usize]),
            },)
        }))
        .for_each(drop);
    (world, targets)
}

/// The routine of `reference_cleanup`: the targets despawned, then every holder scanned and
/// its reference cleared where the target is gone; returns the references cleared.
fn destroy_targets(world: &mut World, targets: &[Entity]) -> u64 {
    for &target in targets {
        // Every target exists: the fixture made them.
        let _ = world.despawn(target);
    }
    let mut holders = world.query::<&mut Holder>();
    let mut n_cleared = 0;
    for holder in holders.iter() {
        if holder.target.is_some_and(|target| !world.contains(target)) {
            holder.target = None;
            n_cleared += 1;
        }
    }
    n_cleared
}

fn reference_cleanup(n_holders: u64, n_targets: u64) -> Workload {
    Workload::new(
        "reference_cleanup",
        n_holders,
        "no reference tracking in hecs: World::despawn per target, then a scan of the holders clearing references that World::contains rejects",
        move |b| {
            b.iter_with_setup(
                || referencing(n_holders, n_targets),
                |(world, targets)| destroy_targets(world, targets),
            );
        },
    )
}

/// Copies worlds component by component, for the component types registered with it.
///
/// hecs has no `World::clone`; this follows its documented route (the `cloning` example of the
/// hecs repository): each archetype's registered columns are cloned into a `ColumnBatch`, which
/// is spawned in the new world at the same handles, and the free list is copied, so ids and
/// future allocations match the original.
struct WorldCloner {
    columns: Vec<ColumnCloner>,
}

/// How to clone one component type's column.
struct ColumnCloner {
    type_id: TypeId,
    type_info: TypeInfo,
    clone_into: fn(&Archetype, &ColumnBatchBuilder),
}

impl WorldCloner {
    fn new() -> WorldCloner {
        WorldCloner {
            columns: Vec::new(),
        }
    }

    fn register<T: Component + Clone>(&mut self) {
        self.columns.push(ColumnCloner {
            type_id: TypeId::of::<T>(),
            type_info: TypeInfo::of::<T>(),
            clone_into: clone_column::<T>,
        });
    }

    fn clone_world(&self, world: &World) -> World {
        let mut cloned = World::new();
        // `World::iter` walks the archetypes in order and each one's rows in order, which
        // gives every archetype's handles in turn.
        let mut handles = world.iter().map(|entity| entity.entity());
        for archetype in world.archetypes() {
            let n_rows = archetype.len();
            if n_rows == 0 {
                continue;
            }
            let present: Vec<&ColumnCloner> = self
                .columns
                .iter()
                .filter(|column| archetype.has_dynamic(column.type_id))
                .collect();
            let mut batch_type = ColumnBatchType::new();
            for column in &present {
                batch_type.add_dynamic(column.type_info);
            }
            let builder = batch_type.into_batch(n_rows);
            for column in &present {
                (column.clone_into)(archetype, &builder);
            }
            let batch = builder
                .build()
                .expect("every registered column was filled to the archetype's length");
            let ids: Vec<Entity> = handles.by_ref().take(n_rows as usize).collect();
            cloned.spawn_column_batch_at(&ids, batch);
        }
        let freelist: Vec<Entity> = world.freelist().collect();
        cloned.set_freelist(&freelist);
        cloned
    }
}

/// Clones the `T` column of `source` into the batch being built.
fn clone_column<T: Component + Clone>(source: &Archetype, batch: &ColumnBatchBuilder) {
    if let (Some(column), Some(mut writer)) = (source.get::<&T>(), batch.writer::<T>()) {
        for value in column.iter() {
            // The batch holds exactly as many rows as the archetype, so it never overflows.
            let _ = writer.push(value.clone());
        }
    }
}

/// The world of `world_clone`: `n` entities with [`Position`], [`Rotation`] and [`Velocity`].
fn cloneable(n: u64) -> World {
    let mut world = World::new();
    world
        .spawn_batch((0..n).map(|i| (position(i), rotation(i), velocity(i))))
        .for_each(drop);
    world
}

/// The cloner of `world_clone`, for the three components of [`cloneable`].
fn body_cloner() -> WorldCloner {
    let mut cloner = WorldCloner::new();
    cloner.register::<Position>();
    cloner.register::<Rotation>();
    cloner.register::<Velocity>();
    cloner
}

fn world_clone(n: u64) -> Workload {
    Workload::new(
        "world_clone",
        n,
        "no World::clone in hecs: per-archetype column clone into a ColumnBatch spawned at the same handles, free list copied",
        move |b| {
            let world = cloneable(n);
            let cloner = body_cloner();
            b.iter(|| cloner.clone_world(&world));
        },
    )
}

/// The routine of `world_clone_then_write`: a clone of `world`, then every Position of the
/// clone nudged; returns the clone, so its drop is not timed.
fn clone_then_write(cloner: &WorldCloner, world: &World) -> World {
    let mut cloned = cloner.clone_world(world);
    cloned
        .query_mut::<&mut Position>()
        .into_iter()
        .for_each(Position::nudge);
    cloned
}

fn world_clone_then_write(n: u64) -> Workload {
    Workload::new(
        "world_clone_then_write",
        n,
        "the clone of world_clone (per-archetype column clone into a ColumnBatch), then World::query_mut::<&mut Position> writing x += 1 in place over the clone's archetype",
        move |b| {
            let world = cloneable(n);
            let cloner = body_cloner();
            b.iter(|| clone_then_write(&cloner, &world));
        },
    )
}

/// The frame of `rollback_frame` on `world`, whose first bodies are `ids`: every written
/// Position nudged, [`ROLLBACK_CHURN`] bodies spawned and as many despawned. Returns (written,
/// spawned, despawned).
fn rollback_work(world: &mut World, ids: &[Entity]) -> (u64, u64, u64) {
    let mut written = 0;
    for &id in rollback_written(ids) {
        if let Ok(mut p) = world.get::<&mut Position>(id) {
            p.nudge();
            written += 1;
        }
    }
    let n = ids.len() as u64;
    for k in 0..ROLLBACK_CHURN {
        let i = n + k;
        black_box(world.spawn((position(i), rotation(i), velocity(i))));
    }
    let mut despawned = 0;
    for &id in rollback_destroyed(ids) {
        despawned += u64::from(world.despawn(id).is_ok());
    }
    (written, ROLLBACK_CHURN, despawned)
}

/// One sample of `rollback_frame`: the world copied whole, the frame's work on it, the copy
/// put in its place (the worked-on world dropped).
fn rollback_once(cloner: &WorldCloner, world: &mut World, ids: &[Entity]) -> (u64, u64, u64) {
    let saved = cloner.clone_world(world);
    let done = rollback_work(world, ids);
    *world = saved;
    done
}

fn rollback_frame(n: u64) -> Workload {
    Workload::new(
        "rollback_frame",
        n,
        "no snapshot in hecs: the world copied whole at the frame's start (world_clone's per-archetype ColumnBatch clone), the frame's work done (World::get writes, spawn, despawn), the copy put back in its place and the worked-on world dropped",
        move |b| {
            let mut world = World::new();
            let ids: Vec<Entity> = world
                .spawn_batch((0..n).map(|i| (position(i), rotation(i), velocity(i))))
                .collect();
            let cloner = body_cloner();
            b.iter(|| rollback_once(&cloner, &mut world, &ids));
        },
    )
}

/// A world of `n` entities with [`Heat`] 0.
fn heated(n: u64) -> World {
    let mut world = World::new();
    world
        .spawn_batch((0..n).map(|_| (Heat(0.0),)))
        .for_each(drop);
    world
}

/// The routine of `parallel_write`: `value` written into every [`Heat`] in place, the query's
/// rows cut into [`PARALLEL_WRITERS`] batches (contiguous shares of the one archetype) that
/// `pool` runs in parallel.
fn write_in_parallel(world: &mut World, pool: &rayon::ThreadPool, value: f64) {
    let batch = world.len().div_ceil(PARALLEL_WRITERS as u32).max(1);
    let batches: Vec<_> = world
        .query_mut::<&mut Heat>()
        .into_iter_batched(batch)
        .collect();
    pool.install(|| {
        batches
            .into_par_iter()
            .for_each(|batch| batch.for_each(|heat| heat.0 = value));
    });
}

fn parallel_write(n: u64) -> Workload {
    Workload::new(
        "parallel_write",
        n,
        "World::query_mut::<&mut Heat>().into_iter_batched(a quarter): 4 batches (Send) of the one archetype's column run on a 2-thread rayon pool; writes in place, no change tracking",
        move |b| {
            let pool = rayon_pool();
            let mut world = heated(n);
            time_parallel_writes(b, |value| write_in_parallel(&mut world, &pool, value));
        },
    )
}

/// The query of the `bulk_` workloads: the entities carrying all four components of `spawn`.
type BodyQuery<'a> = hecs::With<Entity, (&'a Transform, &'a Position, &'a Rotation, &'a Velocity)>;

/// The members of [`BodyQuery`], in the query's order.
fn body_members(world: &mut World) -> Vec<Entity> {
    world.query_mut::<BodyQuery<'_>>().into_iter().collect()
}

fn bulk_spawn(n: u64) -> Workload {
    Workload::new(
        "bulk_spawn",
        n,
        "World::spawn_batch into a fresh world: one archetype of 4 columns reserved from the size hint, ids allocated per entity",
        move |b| {
            b.iter_with_setup(World::new, |world| {
                world.spawn_batch((0..n).map(body)).count()
            });
        },
    )
}

/// The routine of `bulk_set`: the query's members collected, then [`Tagged`] inserted into
/// each ([`TAGGED`]); returns how many were tagged.
fn tag_all(world: &mut World) -> u64 {
    let members = body_members(world);
    let mut n_tagged = 0;
    for &id in &members {
        n_tagged += u64::from(world.insert_one(id, TAGGED).is_ok());
    }
    n_tagged
}

fn bulk_set(n: u64) -> Workload {
    Workload::new(
        "bulk_set",
        n,
        "query_mut::<With<Entity, 4 components>> collected, then World::insert_one per entity (no batch insert in hecs): an archetype move per entity (4 columns copied), cached edge",
        move |b| {
            b.iter_with_setup(|| bodies(n), tag_all);
        },
    )
}

/// A world of `n` bodies that all carry [`Tagged`] too ([`TAGGED`]).
fn tagged_bodies(n: u64) -> World {
    let mut world = World::new();
    world
        .spawn_batch((0..n).map(|i| {
            let (t, p, r, v) = body(i);
            (t, p, r, v, TAGGED)
        }))
        .for_each(drop);
    world
}

/// The routine of `bulk_remove`: the query's members collected, then [`Tagged`] removed from
/// each; returns how many lost it.
fn untag_all(world: &mut World) -> u64 {
    let members = body_members(world);
    let mut n_untagged = 0;
    for &id in &members {
        n_untagged += u64::from(world.remove_one::<Tagged>(id).is_ok());
    }
    n_untagged
}

fn bulk_remove(n: u64) -> Workload {
    Workload::new(
        "bulk_remove",
        n,
        "query_mut::<With<Entity, 4 components>> collected, then World::remove_one::<Tagged> per entity (no batch remove in hecs): an archetype move per entity (4 columns copied), cached edge",
        move |b| {
            b.iter_with_setup(|| tagged_bodies(n), untag_all);
        },
    )
}

/// The routine of `bulk_despawn`: the query's members collected, then each despawned; returns
/// how many were despawned.
fn despawn_all(world: &mut World) -> u64 {
    let members = body_members(world);
    let mut n_despawned = 0;
    for &id in &members {
        n_despawned += u64::from(world.despawn(id).is_ok());
    }
    n_despawned
}

fn bulk_despawn(n: u64) -> Workload {
    Workload::new(
        "bulk_despawn",
        n,
        "query_mut::<With<Entity, 4 components>> collected, then World::despawn per entity (no batch despawn in hecs; World::clear would not be a query's members): a swap-remove from the archetype per entity, id freed",
        move |b| {
            b.iter_with_setup(|| bodies(n), despawn_all);
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::written_tally;

    #[test]
    fn a_rollback_frame_does_the_work_then_puts_the_world_back() {
        let mut world = World::new();
        let ids: Vec<Entity> = world
            .spawn_batch((0..2_000).map(|i| (position(i), rotation(i), velocity(i))))
            .collect();
        let cloner = body_cloner();
        for _ in 0..2 {
            assert_eq!(rollback_once(&cloner, &mut world, &ids), (20, 100, 100));
            assert_eq!(world.len(), 2_000);
            assert_eq!(*world.get::<&Position>(ids[0]).unwrap(), position(0));
            assert!(world.contains(ids[10]));
        }
    }

    #[test]
    fn iter2_advances_every_position() {
        let mut world = bodies(100);
        advance_all(&mut world);
        let mut expected = position(7);
        expected.advance(&velocity(7));
        let positions = world.query_mut::<&Position>();
        let positions: Vec<Position> = positions.into_iter().copied().collect();
        assert_eq!(positions[7], expected);
    }

    #[test]
    fn frag_iter_covers_26_archetypes() {
        let mut world = fragmented();
        for run in 1..=3 {
            negate_all(&mut world);
            let expected = if run % 2 == 1 { -1.0 } else { 1.0 };
            let all = world
                .query_mut::<&Data>()
                .into_iter()
                .all(|d| d.0 == expected);
            assert!(all, "run {run}");
        }
        let n_data = world.query_mut::<&Data>().into_iter().count();
        assert_eq!(n_data, 520);
        let n_archetypes = world.archetypes().filter(|a| a.len() == 20).count();
        assert_eq!(n_archetypes, 26);
    }

    #[test]
    fn add_remove_leaves_no_b() {
        let (mut world, ids) = with_a(1000);
        assert_eq!(add_then_remove(&mut world, &ids), 2000);
        assert_eq!(world.query_mut::<&B>().into_iter().count(), 0);
        assert_eq!(world.query_mut::<&A>().into_iter().count(), 1000);
    }

    #[test]
    fn join_visits_only_the_small_set() {
        let mut world = joinable(20_000, 200);
        assert_eq!(world.query_mut::<(&Big, &Small)>().into_iter().count(), 200);
        let expected: f64 = (0..20_000_u64)
            .filter(|&i| is_small(i, 20_000, 200))
            .map(|i| big(i).0)
            .sum();
        assert_eq!(join_sum(&mut world), expected);
    }

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
        assert_eq!(world.len(), 1000);
    }

    #[test]
    fn reference_cleanup_clears_every_reference() {
        let (mut world, targets) = referencing(1000, 10);
        assert_eq!(destroy_targets(&mut world, &targets), 1000);
        assert!(targets.iter().all(|t| !world.contains(*t)));
        let holders: Vec<Holder> = world.query_mut::<&Holder>().into_iter().copied().collect();
        assert_eq!(holders.len(), 1000);
        assert!(holders.iter().all(|h| h.target.is_none()));
    }

    #[test]
    fn world_clone_keeps_ids_values_and_allocation() {
        let mut world = cloneable(1000);
        // A hole in the ids, so the free list matters.
        let gone = world
            .iter()
            .map(|e| e.entity())
            .nth(10)
            .expect("1000 entities");
        world.despawn(gone).expect("it exists");
        let mut cloned = body_cloner().clone_world(&world);
        assert_eq!(cloned.len(), world.len());
        let entities: Vec<Entity> = world.iter().map(|e| e.entity()).collect();
        for entity in entities {
            let original = world
                .query_one_mut::<(&Position, &Rotation, &Velocity)>(entity)
                .map(|(p, r, v)| (*p, *r, *v))
                .expect("original row");
            let copy = cloned
                .query_one_mut::<(&Position, &Rotation, &Velocity)>(entity)
                .map(|(p, r, v)| (*p, *r, *v))
                .expect("the clone has the same handle");
            assert_eq!(original, copy);
        }
        assert!(!cloned.contains(gone));
        assert_eq!(world.spawn((Target,)), cloned.spawn((Target,)));
    }

    #[test]
    fn world_clone_then_write_writes_every_position_of_the_clone_only() {
        let mut world = cloneable(1000);
        let mut cloned = clone_then_write(&body_cloner(), &world);
        assert_eq!(cloned.len(), 1000);
        let entities: Vec<Entity> = world.iter().map(|e| e.entity()).collect();
        for (i, entity) in entities.into_iter().enumerate() {
            let original = *world
                .query_one_mut::<&Position>(entity)
                .expect("original row");
            assert_eq!(original, position(i as u64), "the original is untouched");
            let (p, r) = cloned
                .query_one_mut::<(&Position, &Rotation)>(entity)
                .map(|(p, r)| (*p, *r))
                .expect("the clone has the same handle");
            let mut expected = original;
            expected.nudge();
            assert_eq!(p, expected);
            assert_eq!(r, rotation(i as u64));
        }
    }

    #[test]
    fn parallel_write_writes_every_heat() {
        let mut world = heated(10_000);
        let pool = rayon_pool();
        write_in_parallel(&mut world, &pool, 1.0);
        let heats: Vec<f64> = world
            .query_mut::<&Heat>()
            .into_iter()
            .map(|h| h.0)
            .collect();
        assert_eq!(heats.len(), 10_000);
        assert!(heats.iter().all(|h| *h == 1.0));
        assert_eq!(
            world
                .query_mut::<&mut Heat>()
                .into_iter_batched(10_000_u32.div_ceil(PARALLEL_WRITERS as u32))
                .count(),
            PARALLEL_WRITERS as usize
        );
    }

    #[test]
    fn bulk_spawn_spawns_every_body() {
        let mut world = World::new();
        assert_eq!(world.spawn_batch((0..1000).map(body)).count(), 1000);
        assert_eq!(body_members(&mut world).len(), 1000);
        let positions: Vec<Position> = world
            .query_mut::<&Position>()
            .into_iter()
            .copied()
            .collect();
        assert_eq!(positions[7], position(7));
    }

    #[test]
    fn bulk_set_tags_every_body_with_its_value() {
        let mut world = bodies(1000);
        assert_eq!(tag_all(&mut world), 1000);
        let tags: Vec<(Position, Tagged)> = world
            .query_mut::<(&Position, &Tagged)>()
            .into_iter()
            .map(|(p, t)| (*p, *t))
            .collect();
        assert_eq!(tags.len(), 1000);
        assert!(tags.iter().all(|(_, t)| *t == TAGGED));
        assert_eq!(body_members(&mut world).len(), 1000);
    }

    #[test]
    fn bulk_remove_untags_every_body_and_keeps_it() {
        let mut world = tagged_bodies(1000);
        assert_eq!(world.query_mut::<&Tagged>().into_iter().count(), 1000);
        assert_eq!(untag_all(&mut world), 1000);
        assert_eq!(world.query_mut::<&Tagged>().into_iter().count(), 0);
        assert_eq!(body_members(&mut world).len(), 1000);
    }

    #[test]
    fn bulk_despawn_empties_the_world() {
        let mut world = bodies(1000);
        assert_eq!(despawn_all(&mut world), 1000);
        assert!(world.is_empty());
        assert!(body_members(&mut world).is_empty());
    }
}
