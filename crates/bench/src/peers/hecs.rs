//! The `hecs` side of the peer workloads: archetypes of column-stored components, queries
//! borrowed per call, no change ticks and no reference tracking.
//!
//! hecs has no change detection built into storage; its `ChangeTracker` keeps a shadow copy of
//! each tracked component and compares, which is what `changed_filter` measures. It has no
//! relationships either, so `reference_cleanup` scans the holders, and no `World::clone`, so
//! `world_clone` copies each archetype's columns into a `ColumnBatch` spawned at the same
//! handles, the route hecs documents for cloning a world. It has no scheduler, so it has no
//! `schedule` or `frame_overhead`.
//!
//! Invariant: every workload here uses hecs's public API without `unsafe`, and builds its world
//! outside the timed routine.

use std::any::TypeId;
use std::convert::Infallible;
use std::hint::black_box;

use hecs::{
    Archetype, ChangeTracker, ColumnBatchBuilder, ColumnBatchType, Component, Entity, TypeInfo,
    World,
};
use rayon::prelude::*;

use super::kinds::*;
use super::{
    ADDED_B, Big, CHANGED_STRIDE, Data, Heat, PARALLEL_WRITERS, Position, Rotation, SMALL, Small,
    Spawn, TAGGED, Tagged, Transform, Velocity, a, big, body, for_each_kind, is_small, position,
    rayon_pool, rotation, tally, velocity, written_groups,
};
use crate::data::spawn_fragment_kind;
use crate::data::{ROLLBACK_CHURN, ROLLBACK_WINDOW, rollback_written, window_destroyed};
use crate::head_to_head::Mechanism::{self, Cannot, Does};
use crate::head_to_head::{ChangedWork, Library, Work, never_built};

/// The library name of these records.
pub const LIBRARY: &str = "hecs";

/// Why hecs has no `schedule` or `frame_overhead`.
const NO_SCHEDULER: &str = "hecs has no scheduler or system abstraction: running three functions \
                            one after another would measure something else";

/// `hecs` in the head-to-head table.
pub struct Hecs;

#[expect(
    refining_impl_trait,
    reason = "the routines name what they return, so the tests below can check it"
)]
impl Library for Hecs {
    const NAME: &'static str = LIBRARY;

    fn mechanism(work: Work) -> Mechanism {
        match work {
            Work::Spawn => Does("World::spawn per entity into one archetype (4 columns)"),
            Work::SpawnBatch => Does("World::spawn_batch (archetype reserved from the size hint)"),
            Work::Iter2 => {
                Does("World::query_mut::<(&mut Position, &Velocity)>, for_each over one archetype")
            }
            Work::FragIter => Does("World::query_mut::<&mut Data> over 26 archetypes of 20"),
            Work::AddRemove => Does(
                "World::insert_one then remove_one per entity (archetype move each way, cached edges)",
            ),
            Work::SmallDriverJoin => Does(
                "World::query_mut::<(&Big, &Small)>: only the (Big, Small) archetype is visited",
            ),
            Work::ChangedFilter => Does(
                "no change ticks in hecs: ChangeTracker<Position> compares every row with a shadow copy (PartialEq) and refreshes the changed ones",
            ),
            Work::ChangedFilterFrames => Does(
                "per frame: another 1% written through query_one_mut (untimed), then one ChangeTracker<Position>::track (timed) comparing every row with its shadow copy; world spawned one entity at a time",
            ),
            Work::DespawnRespawn => Does(
                "World::despawn per entity (swap-remove from the archetype), then World::spawn per entity reusing freed ids",
            ),
            Work::ReferenceCleanup => Does(
                "no reference tracking in hecs: World::despawn per target, then a scan of the holders clearing references that World::contains rejects",
            ),
            Work::WorldClone => Does(
                "no World::clone in hecs: per-archetype column clone into a ColumnBatch spawned at the same handles, free list copied",
            ),
            Work::WorldCloneThenWrite => Does(
                "the clone of world_clone (per-archetype column clone into a ColumnBatch), then World::query_mut::<&mut Position> writing x += 1 in place over the clone's archetype",
            ),
            Work::ParallelWrite => Does(
                "World::query_mut::<&mut Heat>().into_iter_batched(a quarter): 4 batches (Send) of the one archetype's column run on a 2-thread rayon pool; writes in place, no change tracking",
            ),
            Work::BulkSpawn => Does(
                "World::spawn_batch into a fresh world: one archetype of 4 columns reserved from the size hint, ids allocated per entity",
            ),
            Work::BulkSet => Does(
                "query_mut::<With<Entity, 4 components>> collected, then World::insert_one per entity (no batch insert in hecs): an archetype move per entity (4 columns copied), cached edge",
            ),
            Work::BulkRemove => Does(
                "query_mut::<With<Entity, 4 components>> collected, then World::remove_one::<Tagged> per entity (no batch remove in hecs): an archetype move per entity (4 columns copied), cached edge",
            ),
            Work::BulkDespawn => Does(
                "query_mut::<With<Entity, 4 components>> collected, then World::despawn per entity (no batch despawn in hecs; World::clear would not be a query's members): a swap-remove from the archetype per entity, id freed",
            ),
            Work::RollbackFrame => Does(
                "no snapshot in hecs: the world copied whole at the frame's start (world_clone's per-archetype ColumnBatch clone), the frame's work done (World::get writes, spawn, despawn), the copy put back in its place and the worked-on world dropped",
            ),
            Work::RollbackWindow => Does(
                "8 frames, each after a whole copy of the world (world_clone's per-archetype ColumnBatch clone) kept in the window, then the oldest copy put in the world's place",
            ),
            Work::Schedule | Work::FrameOverhead => Cannot(NO_SCHEDULER),
        }
    }

    type Empty = World;
    fn empty() -> World {
        World::new()
    }
    fn spawn_each(world: &mut World, n: u64) {
        for i in 0..n {
            black_box(world.spawn(body(i)));
        }
    }
    fn spawn_in_batch(world: &mut World, n: u64) -> usize {
        world.spawn_batch((0..n).map(body)).count()
    }
    type Bodies = World;
    fn bodies(n: u64) -> World {
        let mut world = World::new();
        world.spawn_batch((0..n).map(body)).for_each(drop);
        world
    }
    fn advance_all(world: &mut World) {
        world
            .query_mut::<(&mut Position, &Velocity)>()
            .into_iter()
            .for_each(|(position, velocity)| position.advance(velocity));
    }

    type Fragmented = World;
    fn fragmented() -> World {
        let mut world = World::new();
        for_each_kind!(spawn_fragment_kind, world, spawn_batch);
        world
    }
    fn negate_all(world: &mut World) {
        world
            .query_mut::<&mut Data>()
            .into_iter()
            .for_each(Data::negate);
    }

    type WithA = (World, Vec<Entity>);
    /// The world and the entities' ids.
    fn with_a(n: u64) -> Self::WithA {
        let mut world = World::new();
        let ids = world.spawn_batch((0..n).map(|i| (a(i),))).collect();
        (world, ids)
    }
    /// Returns the moves that succeeded, both ways.
    fn add_then_remove((world, ids): &mut Self::WithA) -> u64 {
        let mut n_moved = 0;
        for &id in ids.iter() {
            n_moved += u64::from(world.insert_one(id, ADDED_B).is_ok());
        }
        for &id in ids.iter() {
            n_moved += u64::from(world.remove_one::<B>(id).is_ok());
        }
        n_moved
    }

    type Joinable = World;
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
    fn join_sum(world: &mut World) -> f64 {
        world
            .query_mut::<(&Big, &Small)>()
            .into_iter()
            .fold(0.0, |sum, (big, _small)| sum + big.0)
    }

    type Changed = ChangedFixture;
    fn changed(n: u64, spawn: Spawn) -> ChangedFixture {
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
            n_despawned += u64::from(world.despawn(id).is_ok());
        }
        for i in 0..n_despawned {
            black_box(world.spawn((position(i), velocity(i))));
        }
        n_despawned
    }

    type Referencing = (World, Vec<Entity>);
    /// The world and the targets.
    fn referencing(n_holders: u64, n_targets: u64) -> Self::Referencing {
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
    /// The targets despawned, then every holder scanned and its reference cleared where the
    /// target is gone; returns the references cleared.
    fn destroy_targets((world, targets): &mut Self::Referencing) -> u64 {
        for &target in targets.iter() {
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

    type Cloneable = (World, WorldCloner);
    fn cloneable(n: u64) -> Self::Cloneable {
        (clone_source(n), body_cloner())
    }
    fn clone_world((world, cloner): &mut Self::Cloneable) -> World {
        cloner.clone_world(world)
    }

    type Copyable = (World, WorldCloner);
    fn copyable(n: u64) -> Self::Copyable {
        (clone_source(n), body_cloner())
    }
    fn clone_then_write((world, cloner): &mut Self::Copyable) -> World {
        let mut cloned = cloner.clone_world(world);
        cloned
            .query_mut::<&mut Position>()
            .into_iter()
            .for_each(Position::nudge);
        cloned
    }

    type Heated = (rayon::ThreadPool, World);
    /// The pool of [`super::PARALLEL_THREADS`] threads, and `n` entities with [`Heat`] 0.
    fn heated(n: u64) -> Self::Heated {
        let pool = rayon_pool();
        let mut world = World::new();
        world
            .spawn_batch((0..n).map(|_| (Heat(0.0),)))
            .for_each(drop);
        (pool, world)
    }
    /// `value` written into every [`Heat`] in place, the query's rows cut into
    /// [`PARALLEL_WRITERS`] batches (contiguous shares of the one archetype) that the pool runs
    /// in parallel.
    fn write_in_parallel((pool, world): &mut Self::Heated, value: f64) {
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

    type Bulk = World;
    fn bulk_bodies(n: u64) -> World {
        Self::bodies(n)
    }
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
    /// Returns how many were tagged.
    fn tag_all(world: &mut World) -> u64 {
        let members = body_members(world);
        let mut n_tagged = 0;
        for &id in &members {
            n_tagged += u64::from(world.insert_one(id, TAGGED).is_ok());
        }
        n_tagged
    }
    /// Returns how many lost it.
    fn untag_all(world: &mut World) -> u64 {
        let members = body_members(world);
        let mut n_untagged = 0;
        for &id in &members {
            n_untagged += u64::from(world.remove_one::<Tagged>(id).is_ok());
        }
        n_untagged
    }
    /// Returns how many were despawned.
    fn despawn_all(world: &mut World) -> u64 {
        let members = body_members(world);
        let mut n_despawned = 0;
        for &id in &members {
            n_despawned += u64::from(world.despawn(id).is_ok());
        }
        n_despawned
    }

    type Rollback = (World, Vec<Entity>, WorldCloner);
    /// The world, its bodies, and the cloner of its three components.
    fn rollback_world(n: u64) -> Self::Rollback {
        let mut world = World::new();
        let ids: Vec<Entity> = world
            .spawn_batch((0..n).map(|i| (position(i), rotation(i), velocity(i))))
            .collect();
        (world, ids, body_cloner())
    }
    /// The world copied whole, the frame's work on it, the copy put in its place (the
    /// worked-on world dropped).
    fn rollback_once((world, ids, cloner): &mut Self::Rollback) -> (u64, u64, u64) {
        let saved = cloner.clone_world(world);
        let done = rollback_work(world, ids, 0);
        *world = saved;
        done
    }
    /// Each frame after a copy of the world kept in the window; then the oldest copy put in
    /// the world's place (the worked-on world and the other copies returned, to drop untimed).
    fn rollback_window_once(
        (world, ids, cloner): &mut Self::Rollback,
    ) -> ((u64, u64, u64), (World, Vec<World>)) {
        let mut window = Vec::with_capacity(ROLLBACK_WINDOW as usize);
        let mut done = (0, 0, 0);
        for frame in 0..ROLLBACK_WINDOW {
            window.push(cloner.clone_world(world));
            let (written, spawned, despawned) = rollback_work(world, ids, frame);
            done = (done.0 + written, done.1 + spawned, done.2 + despawned);
        }
        let oldest = window.remove(0);
        (done, (std::mem::replace(world, oldest), window))
    }

    type Frame = Infallible;
    fn swapping(_: u64) -> Infallible {
        never_built()
    }
    fn idle() -> Infallible {
        never_built()
    }
    fn run_frame(never: &mut Infallible) {
        match *never {}
    }
}

/// The world of `changed_filter` and `changed_filter_frames` and its change tracker.
pub struct ChangedFixture {
    world: World,
    tracker: ChangeTracker<Position>,
    /// The entities each frame writes, by `frame % CHANGED_STRIDE`: 1% of them, spread evenly.
    written: Vec<Vec<Entity>>,
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

/// A holder's reference to a target, cleared when the target is gone.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Holder {
    target: Option<Entity>,
}

/// A target of `reference_cleanup`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Target;

/// Copies worlds component by component, for the component types registered with it.
///
/// hecs has no `World::clone`; this follows its documented route (the `cloning` example of the
/// hecs repository): each archetype's registered columns are cloned into a `ColumnBatch`, which
/// is spawned in the new world at the same handles, and the free list is copied, so ids and
/// future allocations match the original.
pub struct WorldCloner {
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
fn clone_source(n: u64) -> World {
    let mut world = World::new();
    world
        .spawn_batch((0..n).map(|i| (position(i), rotation(i), velocity(i))))
        .for_each(drop);
    world
}

/// The cloner of `world_clone`, for the three components of [`clone_source`].
fn body_cloner() -> WorldCloner {
    let mut cloner = WorldCloner::new();
    cloner.register::<Position>();
    cloner.register::<Rotation>();
    cloner.register::<Velocity>();
    cloner
}

/// The frame of `rollback_frame` on `world`, whose first bodies are `ids`: every written
/// Position nudged, [`ROLLBACK_CHURN`] bodies spawned and as many despawned. Returns (written,
/// spawned, despawned).
fn rollback_work(world: &mut World, ids: &[Entity], frame: u64) -> (u64, u64, u64) {
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
    for &id in window_destroyed(ids, frame) {
        despawned += u64::from(world.despawn(id).is_ok());
    }
    (written, ROLLBACK_CHURN, despawned)
}

/// The query of the `bulk_` workloads: the entities carrying all four components of `spawn`.
type BodyQuery<'a> = hecs::With<Entity, (&'a Transform, &'a Position, &'a Rotation, &'a Velocity)>;

/// The members of [`BodyQuery`], in the query's order.
fn body_members(world: &mut World) -> Vec<Entity> {
    world.query_mut::<BodyQuery<'_>>().into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rollback_frame_does_the_work_then_puts_the_world_back() {
        let mut world = World::new();
        let ids: Vec<Entity> = world
            .spawn_batch((0..2_000).map(|i| (position(i), rotation(i), velocity(i))))
            .collect();
        let mut fixture = (world, ids, body_cloner());
        for _ in 0..2 {
            assert_eq!(Hecs::rollback_once(&mut fixture), (20, 100, 100));
            let (world, ids, _) = &fixture;
            assert_eq!(world.len(), 2_000);
            assert_eq!(*world.get::<&Position>(ids[0]).unwrap(), position(0));
            assert!(world.contains(ids[10]));
        }
    }

    #[test]
    fn iter2_advances_every_position() {
        let mut world = Hecs::bodies(100);
        Hecs::advance_all(&mut world);
        let mut expected = position(7);
        expected.advance(&velocity(7));
        let positions = world.query_mut::<&Position>();
        let positions: Vec<Position> = positions.into_iter().copied().collect();
        assert_eq!(positions[7], expected);
    }

    #[test]
    fn frag_iter_covers_26_archetypes() {
        let mut world = Hecs::fragmented();
        for run in 1..=3 {
            Hecs::negate_all(&mut world);
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
        let mut fixture = Hecs::with_a(1000);
        assert_eq!(Hecs::add_then_remove(&mut fixture), 2000);
        let (world, _) = &mut fixture;
        assert_eq!(world.query_mut::<&B>().into_iter().count(), 0);
        assert_eq!(world.query_mut::<&A>().into_iter().count(), 1000);
    }

    #[test]
    fn join_visits_only_the_small_set() {
        let mut world = Hecs::joinable(20_000, 200);
        assert_eq!(world.query_mut::<(&Big, &Small)>().into_iter().count(), 200);
        let expected: f64 = (0..20_000_u64)
            .filter(|&i| is_small(i, 20_000, 200))
            .map(|i| big(i).0)
            .sum();
        assert_eq!(Hecs::join_sum(&mut world), expected);
    }

    #[test]
    fn despawn_respawn_keeps_the_count() {
        let mut fixture = Hecs::movers(1000);
        assert_eq!(Hecs::despawn_then_respawn(&mut fixture), 500);
        assert_eq!(fixture.0.len(), 1000);
    }

    #[test]
    fn reference_cleanup_clears_every_reference() {
        let mut fixture = Hecs::referencing(1000, 10);
        assert_eq!(Hecs::destroy_targets(&mut fixture), 1000);
        let (world, targets) = &mut fixture;
        assert!(targets.iter().all(|t| !world.contains(*t)));
        let holders: Vec<Holder> = world.query_mut::<&Holder>().into_iter().copied().collect();
        assert_eq!(holders.len(), 1000);
        assert!(holders.iter().all(|h| h.target.is_none()));
    }

    #[test]
    fn world_clone_keeps_ids_values_and_allocation() {
        let mut world = clone_source(1000);
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
        let mut fixture = Hecs::copyable(1000);
        let mut cloned = Hecs::clone_then_write(&mut fixture);
        let world = &mut fixture.0;
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
        let mut fixture = Hecs::heated(10_000);
        Hecs::write_in_parallel(&mut fixture, 1.0);
        let world = &mut fixture.1;
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
        let mut world = Hecs::bodies(1000);
        assert_eq!(Hecs::tag_all(&mut world), 1000);
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
        let mut world = Hecs::tagged_bodies(1000);
        assert_eq!(world.query_mut::<&Tagged>().into_iter().count(), 1000);
        assert_eq!(Hecs::untag_all(&mut world), 1000);
        assert_eq!(world.query_mut::<&Tagged>().into_iter().count(), 0);
        assert_eq!(body_members(&mut world).len(), 1000);
    }

    #[test]
    fn bulk_despawn_empties_the_world() {
        let mut world = Hecs::bodies(1000);
        assert_eq!(Hecs::despawn_all(&mut world), 1000);
        assert!(world.is_empty());
        assert!(body_members(&mut world).is_empty());
    }
}
