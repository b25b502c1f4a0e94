//! The `shipyard` side of the peer workloads: one sparse set per component type, views borrowed
//! per call, modification tracking switched on per storage, storages cloned by registration.
//!
//! shipyard stores no archetypes, so adding and removing a component touches one sparse set,
//! fragmentation does not split iteration, and a join walks the shorter storage. It has no
//! relationships, so `reference_cleanup` scans the holders.
//!
//! Invariant: every workload here uses shipyard's public API, builds its world outside the timed
//! routine, and writes tracked components through views so the tracking sees them.

use std::hint::black_box;

use rayon::prelude::*;
use shipyard::scheduler::IntoWorkloadSystem;
use shipyard::sparse_set::SparseSet;
use shipyard::{
    AllStoragesViewMut, EntitiesView, EntitiesViewMut, EntityId, Get, IntoIter, View, ViewMut,
    World, track,
};

use super::kinds::*;
use super::{
    ADDED_B, Big, CHANGED_STRIDE, Data, EMPTY_SYSTEMS, Heat, Position, Rotation, SMALL, Small,
    Spawn, TAGGED, Tagged, Transform, Velocity, a, big, body, for_each_kind, is_small, position,
    rayon_pool, rotation, schedule, tally, velocity, written_groups,
};
use crate::data::spawn_fragment_kind;
use crate::data::{ROLLBACK_CHURN, ROLLBACK_WINDOW, rollback_written, window_destroyed};
use crate::head_to_head::Mechanism::{self, Does};
use crate::head_to_head::{ChangedWork, Library, Work};

/// The library name of these records.
pub const LIBRARY: &str = "shipyard";

/// The reason for the `expect`s on view borrows: every workload borrows its views one set at
/// a time, outside any other borrow, and no storage here is `!Send` or `!Sync`.
const FREE_BORROW: &str = "nothing else borrows the world's storages";

/// `shipyard` in the head-to-head table.
pub struct Shipyard;

#[expect(
    refining_impl_trait,
    reason = "the routines name what they return, so the tests below can check it"
)]
impl Library for Shipyard {
    const NAME: &'static str = LIBRARY;

    fn mechanism(work: Work) -> Mechanism {
        match work {
            Work::Spawn => Does(
                "EntitiesViewMut::add_entity per entity into 4 sparse sets (views borrowed once)",
            ),
            Work::SpawnBatch => {
                Does("World::bulk_add_entity (sparse sets reserved from the size hint)")
            }
            Work::Iter2 => Does(
                "(&mut ViewMut<Position>, &View<Velocity>).iter(): dense walk of two sparse sets in the same order (untracked)",
            ),
            Work::FragIter => Does(
                "(&mut ViewMut<Data>).iter(): one dense sparse set, the 26 kinds do not split it",
            ),
            Work::AddRemove => Does(
                "EntitiesView::add_component then Delete::delete per entity on the B sparse set (no archetype move)",
            ),
            Work::SmallDriverJoin => Does(
                "(&View<Big>, &View<Small>).iter(): the shorter set (Small) drives, Big looked up by sparse index",
            ),
            Work::ChangedFilter => Does(
                "track_modification::<Position>, View::modified(): timestamp compare per row of the dense set; window reset with clear_all_modified",
            ),
            Work::ChangedFilterFrames => Does(
                "per frame: clear_all_modified, then another 1% written through a tracked ViewMut (untimed), then View::modified() (timed): timestamp compare per row of the dense set; world spawned one entity at a time",
            ),
            Work::DespawnRespawn => Does(
                "AllStorages::delete_entity per entity (every storage asked), then EntitiesViewMut::add_entity per entity reusing freed ids",
            ),
            Work::ReferenceCleanup => Does(
                "no reference tracking in shipyard: AllStorages::delete_entity per target, then a scan of the holders clearing references that Entities::is_alive rejects",
            ),
            Work::WorldClone => Does(
                "AllStorages::clone_storages_to: registered sparse sets and the entity list cloned whole",
            ),
            Work::WorldCloneThenWrite => Does(
                "the clone of world_clone (AllStorages::clone_storages_to), then (&mut ViewMut<Position>).iter() writing x += 1 in place over the clone's dense array (untracked)",
            ),
            Work::ParallelWrite => Does(
                "(&mut ViewMut<Heat>).par_iter() inside a 2-thread rayon pool's install: the dense array split by rayon's adaptive splitting (unindexed, not 4 fixed shares); writes in place, untracked storage",
            ),
            Work::BulkSpawn => Does(
                "World::bulk_add_entity into a fresh world: 4 sparse sets reserved from the size hint, ids allocated in one block",
            ),
            Work::BulkSet => Does(
                "(&View x4).iter().ids() collected, then SparseSet::reserve and EntitiesView::add_component per entity on the Tagged sparse set (no bulk add to existing entities in shipyard; no move of the other 4)",
            ),
            Work::BulkRemove => Does(
                "(&View x4).iter().ids() collected, then Delete::delete per entity on the Tagged sparse set (swap-remove from its dense array; ViewMut::clear would empty the whole set, not a query's members)",
            ),
            Work::BulkDespawn => Does(
                "(&View x4).iter().ids() collected, then AllStorages::delete_entity per entity (every storage asked, a swap-remove from each of the 4 sparse sets, id freed)",
            ),
            Work::RollbackFrame => Does(
                "no snapshot in shipyard: the world cloned whole at the frame's start (world_clone's AllStorages::clone_storages_to), the frame's work done (ViewMut::get writes, add_entity, delete_entity), the clone put back in its place and the worked-on world dropped",
            ),
            Work::RollbackWindow => Does(
                "8 frames, each after a whole clone of the world (world_clone's AllStorages::clone_storages_to) kept in the window, then the oldest clone put in the world's place",
            ),
            Work::Schedule => Does(
                "World::run_workload inside a 2-thread rayon pool's install: a workload of ab, cd and ce, each two ViewMut swapping in place (untracked storages); cd and ce both borrow C mutably, so the scheduler puts them in different batches",
            ),
            Work::FrameOverhead => Does(
                "World::run_workload inside a 2-thread rayon pool's install: a workload of 100 systems that do nothing",
            ),
        }
    }

    type Empty = World;
    fn empty() -> World {
        World::new()
    }
    /// Through views borrowed once.
    fn spawn_each(world: &mut World, n: u64) {
        let (mut entities, mut transforms, mut positions, mut rotations, mut velocities) = world
            .borrow::<(
                EntitiesViewMut<'_>,
                ViewMut<'_, Transform>,
                ViewMut<'_, Position>,
                ViewMut<'_, Rotation>,
                ViewMut<'_, Velocity>,
            )>()
            .expect(FREE_BORROW);
        for i in 0..n {
            black_box(entities.add_entity(
                (
                    &mut transforms,
                    &mut positions,
                    &mut rotations,
                    &mut velocities,
                ),
                body(i),
            ));
        }
    }
    fn spawn_in_batch(world: &mut World, n: u64) -> usize {
        world.bulk_add_entity((0..n).map(body)).count()
    }
    type Bodies = World;
    fn bodies(n: u64) -> World {
        let mut world = World::new();
        world.bulk_add_entity((0..n).map(body)).for_each(drop);
        world
    }
    fn advance_all(world: &mut World) {
        let (mut positions, velocities) = world
            .borrow::<(ViewMut<'_, Position>, View<'_, Velocity>)>()
            .expect(FREE_BORROW);
        (&mut positions, &velocities)
            .iter()
            .for_each(|(position, velocity)| position.advance(velocity));
    }

    type Fragmented = World;
    fn fragmented() -> World {
        let mut world = World::new();
        for_each_kind!(spawn_fragment_kind, world, bulk_add_entity);
        world
    }
    fn negate_all(world: &mut World) {
        let mut data = world.borrow::<ViewMut<'_, Data>>().expect(FREE_BORROW);
        (&mut data).iter().for_each(Data::negate);
    }

    type WithA = (World, Vec<EntityId>);
    /// The world and the entities' ids.
    fn with_a(n: u64) -> Self::WithA {
        let mut world = World::new();
        let ids = world.bulk_add_entity((0..n).map(a)).collect();
        (world, ids)
    }
    /// Returns how many lost `B`.
    fn add_then_remove((world, ids): &mut Self::WithA) -> u64 {
        let (entities, mut bs) = world
            .borrow::<(EntitiesView<'_>, ViewMut<'_, B>)>()
            .expect(FREE_BORROW);
        for &id in ids.iter() {
            entities.add_component(id, &mut bs, ADDED_B);
        }
        let mut n_removed = 0;
        for &id in ids.iter() {
            n_removed += u64::from(shipyard::Delete::delete(&mut bs, id));
        }
        n_removed
    }

    type Joinable = World;
    fn joinable(n_big: u64, n_small: u64) -> World {
        let mut world = World::new();
        for i in 0..n_big {
            if is_small(i, n_big, n_small) {
                world.add_entity((big(i), SMALL));
            } else {
                world.add_entity(big(i));
            }
        }
        world
    }
    fn join_sum(world: &mut World) -> f64 {
        let (bigs, smalls) = world
            .borrow::<(View<'_, Big>, View<'_, Small>)>()
            .expect(FREE_BORROW);
        (&bigs, &smalls)
            .iter()
            .fold(0.0, |sum, (big, _small)| sum + big.0)
    }

    type Changed = ChangedFixture;
    fn changed(n: u64, spawn: Spawn) -> ChangedFixture {
        let mut world = World::new();
        world.track_modification::<Position>();
        let ids: Vec<EntityId> = match spawn {
            Spawn::Batch => world.bulk_add_entity((0..n).map(position)).collect(),
            Spawn::OneByOne => (0..n).map(|i| world.add_entity(position(i))).collect(),
        };
        let written = written_groups(&ids);
        ChangedFixture { world, written }
    }

    type Movers = (World, Vec<EntityId>);
    /// The world and the entities' ids.
    fn movers(n: u64) -> Self::Movers {
        let mut world = World::new();
        let ids = world
            .bulk_add_entity((0..n).map(|i| (position(i), velocity(i))))
            .collect();
        (world, ids)
    }
    /// Every other entity deleted, then as many added.
    fn despawn_then_respawn((world, ids): &mut Self::Movers) -> u64 {
        let mut n_deleted = 0;
        {
            let mut all_storages = world.borrow::<AllStoragesViewMut<'_>>().expect(FREE_BORROW);
            for &id in ids.iter().step_by(2) {
                n_deleted += u64::from(all_storages.delete_entity(id));
            }
        }
        let (mut entities, mut positions, mut velocities) = world
            .borrow::<(
                EntitiesViewMut<'_>,
                ViewMut<'_, Position>,
                ViewMut<'_, Velocity>,
            )>()
            .expect(FREE_BORROW);
        for i in 0..n_deleted {
            black_box(entities.add_entity(
                (&mut positions, &mut velocities),
                (position(i), velocity(i)),
            ));
        }
        n_deleted
    }

    type Referencing = (World, Vec<EntityId>);
    /// The world and the targets.
    fn referencing(n_holders: u64, n_targets: u64) -> Self::Referencing {
        let mut world = World::new();
        let targets: Vec<EntityId> = world
            .bulk_add_entity((0..n_targets).map(|_| Target))
            .collect();
        world
            .bulk_add_entity((0..n_holders).map(|i| Holder {
                target: Some(targets[(i % n_targets) as usize]),
            }))
            .for_each(drop);
        (world, targets)
    }
    /// The targets deleted, then every holder scanned and its reference cleared where the
    /// target is gone; returns the references cleared.
    fn destroy_targets((world, targets): &mut Self::Referencing) -> u64 {
        {
            let mut all_storages = world.borrow::<AllStoragesViewMut<'_>>().expect(FREE_BORROW);
            for &target in targets.iter() {
                all_storages.delete_entity(target);
            }
        }
        let (entities, mut holders) = world
            .borrow::<(EntitiesView<'_>, ViewMut<'_, Holder>)>()
            .expect(FREE_BORROW);
        let mut n_cleared = 0;
        for holder in (&mut holders).iter() {
            if holder
                .target
                .is_some_and(|target| !entities.is_alive(target))
            {
                holder.target = None;
                n_cleared += 1;
            }
        }
        n_cleared
    }

    type Cloneable = World;
    fn cloneable(n: u64) -> World {
        clone_source(n)
    }
    fn clone_world(world: &mut World) -> World {
        clone_world(world)
    }

    type Copyable = World;
    fn copyable(n: u64) -> World {
        clone_source(n)
    }
    /// Returns the clone, so its drop is not timed.
    fn clone_then_write(world: &mut World) -> World {
        let cloned = clone_world(world);
        {
            let mut positions = cloned.borrow::<ViewMut<'_, Position>>().expect(FREE_BORROW);
            (&mut positions).iter().for_each(Position::nudge);
        }
        cloned
    }

    type Heated = (rayon::ThreadPool, World);
    /// The pool of [`super::PARALLEL_THREADS`] threads, and `n` entities with [`Heat`] 0 (an
    /// untracked storage).
    fn heated(n: u64) -> Self::Heated {
        let pool = rayon_pool();
        let mut world = World::new();
        world
            .bulk_add_entity((0..n).map(|_| Heat(0.0)))
            .for_each(drop);
        (pool, world)
    }
    /// `value` written into every [`Heat`] in place by shipyard's parallel iterator, which
    /// rayon splits over the pool as it sees fit (shipyard's iterator is unindexed, so the
    /// split cannot be fixed to the writers' shares).
    fn write_in_parallel((pool, world): &mut Self::Heated, value: f64) {
        let mut heats = world.borrow::<ViewMut<'_, Heat>>().expect(FREE_BORROW);
        pool.install(|| {
            (&mut heats).par_iter().for_each(|heat| heat.0 = value);
        });
    }

    type Bulk = World;
    fn bulk_bodies(n: u64) -> World {
        Self::bodies(n)
    }
    fn tagged_bodies(n: u64) -> World {
        let mut world = World::new();
        world
            .bulk_add_entity((0..n).map(|i| {
                let (t, p, r, v) = body(i);
                (t, p, r, v, TAGGED)
            }))
            .for_each(drop);
        world
    }
    /// The members collected, the [`Tagged`] sparse set reserved for them, then [`Tagged`]
    /// added to each ([`TAGGED`]); returns how many were tagged.
    fn tag_all(world: &mut World) -> usize {
        let members = body_members(world);
        let (entities, mut tags) = world
            .borrow::<(EntitiesView<'_>, ViewMut<'_, Tagged>)>()
            .expect(FREE_BORROW);
        tags.reserve(members.len());
        for &id in &members {
            entities.add_component(id, &mut tags, TAGGED);
        }
        members.len()
    }
    /// Returns how many lost [`Tagged`].
    fn untag_all(world: &mut World) -> u64 {
        let members = body_members(world);
        let mut tags = world.borrow::<ViewMut<'_, Tagged>>().expect(FREE_BORROW);
        let mut n_untagged = 0;
        for &id in &members {
            n_untagged += u64::from(shipyard::Delete::delete(&mut tags, id));
        }
        n_untagged
    }
    /// Each member deleted with all its components; returns how many were deleted.
    fn despawn_all(world: &mut World) -> u64 {
        let members = body_members(world);
        let mut all_storages = world.borrow::<AllStoragesViewMut<'_>>().expect(FREE_BORROW);
        let mut n_deleted = 0;
        for &id in &members {
            n_deleted += u64::from(all_storages.delete_entity(id));
        }
        n_deleted
    }

    type Rollback = (World, Vec<EntityId>);
    /// The world, its storages registered for cloning, and its bodies.
    fn rollback_world(n: u64) -> Self::Rollback {
        let mut world = World::new();
        let ids: Vec<EntityId> = world
            .bulk_add_entity((0..n).map(|i| (position(i), rotation(i), velocity(i))))
            .collect();
        register_body_clones(&mut world);
        (world, ids)
    }
    /// The world cloned whole, the frame's work on it, the clone put in its place (the
    /// worked-on world dropped).
    fn rollback_once((world, ids): &mut Self::Rollback) -> (u64, u64, u64) {
        // The clone's storages are registered for the next frame's clone.
        let mut saved = clone_world(world);
        register_body_clones(&mut saved);
        let done = rollback_work(world, ids, 0);
        *world = saved;
        done
    }
    /// Each frame after a clone of the world kept in the window; then the oldest clone put in
    /// the world's place (the worked-on world and the other clones returned, to drop untimed).
    fn rollback_window_once(
        (world, ids): &mut Self::Rollback,
    ) -> ((u64, u64, u64), (World, Vec<World>)) {
        let mut window = Vec::with_capacity(ROLLBACK_WINDOW as usize);
        let mut done = (0, 0, 0);
        for frame in 0..ROLLBACK_WINDOW {
            let mut saved = clone_world(world);
            register_body_clones(&mut saved);
            window.push(saved);
            let (written, spawned, deleted) = rollback_work(world, ids, frame);
            done = (done.0 + written, done.1 + spawned, done.2 + deleted);
        }
        let oldest = window.remove(0);
        (done, (std::mem::replace(world, oldest), window))
    }

    /// The world, its workload's name, and the pool the workload runs in.
    type Frame = (rayon::ThreadPool, World, &'static str);
    fn swapping(group: u64) -> Self::Frame {
        let pool = rayon_pool();
        let world = schedule_groups(group);
        add_swapping(&world);
        (pool, world, "schedule")
    }
    fn idle() -> Self::Frame {
        let pool = rayon_pool();
        let world = World::new();
        add_repeated(&world, empty);
        (pool, world, "empty")
    }
    fn run_frame((pool, world, name): &mut Self::Frame) {
        pool.install(|| world.run_workload(*name))
            .expect(FREE_BORROW);
    }
}

/// A view of the positions with modification tracking.
type TrackedPositions<'a> = ViewMut<'a, Position, track::Modification>;

/// The world of `changed_filter` and `changed_filter_frames`, with modification tracking
/// switched on for [`Position`].
pub struct ChangedFixture {
    world: World,
    /// The entities each frame writes, by `frame % CHANGED_STRIDE`: 1% of them, spread evenly.
    written: Vec<Vec<EntityId>>,
}

impl ChangedWork for ChangedFixture {
    /// Restarts the modification window (outside a workload it runs from the last
    /// `clear_all_modified`), then writes the frame's 1% of the rows.
    fn write(&mut self, frame: u64) {
        let positions = self
            .world
            .borrow::<TrackedPositions<'_>>()
            .expect(FREE_BORROW);
        positions.clear_all_modified();
        let mut positions = self
            .world
            .borrow::<TrackedPositions<'_>>()
            .expect(FREE_BORROW);
        for &id in &self.written[(frame % CHANGED_STRIDE) as usize] {
            positions[id].nudge();
        }
    }

    /// The rows modified inside the window.
    fn visit(&mut self) -> (u64, f32) {
        let positions = self
            .world
            .borrow::<View<'_, Position, track::Modification>>()
            .expect(FREE_BORROW);
        tally(positions.modified().iter().map(|p| p.x))
    }
}

/// A holder's reference to a target, cleared when the target is gone.
#[derive(Debug, Clone, Copy, PartialEq, shipyard::Component)]
struct Holder {
    target: Option<EntityId>,
}

/// A target of `reference_cleanup`.
#[derive(Debug, Clone, Copy, PartialEq, shipyard::Component)]
struct Target;

/// The world of `world_clone`: `n` entities with [`Position`], [`Rotation`] and [`Velocity`],
/// their storages registered for cloning.
fn clone_source(n: u64) -> World {
    let mut world = World::new();
    world
        .bulk_add_entity((0..n).map(|i| (position(i), rotation(i), velocity(i))))
        .for_each(drop);
    register_body_clones(&mut world);
    world
}

/// The routine of `world_clone`: every storage with a registered clone function, and the
/// entities, cloned into a new world.
fn clone_world(world: &World) -> World {
    let cloned = World::new();
    {
        let source = world.all_storages().expect(FREE_BORROW);
        let mut target = cloned.all_storages_mut().expect(FREE_BORROW);
        source.clone_storages_to(&mut target);
    }
    cloned
}

/// Registers the storages of the bodies of `world_clone` and `rollback_frame` for cloning.
fn register_body_clones(world: &mut World) {
    world.register_clone::<(
        SparseSet<Position>,
        SparseSet<Rotation>,
        SparseSet<Velocity>,
    )>();
}

/// The frame of `rollback_frame` on `world`, whose first bodies are `ids`: every written
/// Position nudged, [`ROLLBACK_CHURN`] bodies spawned and as many deleted. Returns (written,
/// spawned, deleted).
fn rollback_work(world: &mut World, ids: &[EntityId], frame: u64) -> (u64, u64, u64) {
    let mut written = 0;
    {
        let mut positions = world.borrow::<ViewMut<'_, Position>>().expect(FREE_BORROW);
        for &id in rollback_written(ids) {
            if let Ok(mut p) = (&mut positions).get(id) {
                p.nudge();
                written += 1;
            }
        }
    }
    let n = ids.len() as u64;
    for k in 0..ROLLBACK_CHURN {
        let i = n + k;
        black_box(world.add_entity((position(i), rotation(i), velocity(i))));
    }
    let mut deleted = 0;
    for &id in window_destroyed(ids, frame) {
        deleted += u64::from(world.delete_entity(id));
    }
    (written, ROLLBACK_CHURN, deleted)
}

/// The members of the query of the `bulk_` workloads: the entities carrying all four
/// components of `spawn`, in the query's order.
fn body_members(world: &World) -> Vec<EntityId> {
    let (transforms, positions, rotations, velocities) = world
        .borrow::<(
            View<'_, Transform>,
            View<'_, Position>,
            View<'_, Rotation>,
            View<'_, Velocity>,
        )>()
        .expect(FREE_BORROW);
    (&transforms, &positions, &rotations, &velocities)
        .iter()
        .ids()
        .collect()
}

fn ab(mut a: ViewMut<'_, schedule::A>, mut b: ViewMut<'_, schedule::B>) {
    for (a, b) in (&mut a, &mut b).iter() {
        std::mem::swap(&mut a.0, &mut b.0);
    }
}

fn cd(mut c: ViewMut<'_, schedule::C>, mut d: ViewMut<'_, schedule::D>) {
    for (c, d) in (&mut c, &mut d).iter() {
        std::mem::swap(&mut c.0, &mut d.0);
    }
}

fn ce(mut c: ViewMut<'_, schedule::C>, mut e: ViewMut<'_, schedule::E>) {
    for (c, e) in (&mut c, &mut e).iter() {
        std::mem::swap(&mut c.0, &mut e.0);
    }
}

/// The four groups of `schedule`, `group` entities each.
fn schedule_groups(group: u64) -> World {
    use schedule::{A, B, C, D, E, value};
    let mut world = World::new();
    let mut i = 0;
    for k in 0..4 {
        for _ in 0..group {
            let (a, b) = (A(value(i, 0)), B(value(i, 1)));
            match k {
                0 => world.add_entity((a, b)),
                1 => world.add_entity((a, b, C(value(i, 2)))),
                2 => world.add_entity((a, b, C(value(i, 2)), D(value(i, 3)))),
                _ => world.add_entity((a, b, C(value(i, 2)), E(value(i, 4)))),
            };
            i += 1;
        }
    }
    world
}

/// Adds the workload of `schedule`'s three systems to `world`, as "schedule".
fn add_swapping(world: &World) {
    if let Err(error) = shipyard::Workload::new("schedule")
        .with_system(ab)
        .with_system(cd)
        .with_system(ce)
        .add_to_world(world)
    {
        panic!("benchmark fixture: {error:?}");
    }
}

fn empty() {}

/// Adds a workload of [`EMPTY_SYSTEMS`] instances of `system` to `world`, as "empty".
fn add_repeated<B, R>(world: &World, system: impl IntoWorkloadSystem<B, R> + Copy + 'static) {
    let mut workload = shipyard::Workload::new("empty");
    for _ in 0..EMPTY_SYSTEMS {
        workload = workload.with_system(system);
    }
    if let Err(error) = workload.add_to_world(world) {
        panic!("benchmark fixture: {error:?}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rollback_frame_does_the_work_then_puts_the_world_back() {
        let mut world = World::new();
        let ids: Vec<EntityId> = world
            .bulk_add_entity((0..2_000).map(|i| (position(i), rotation(i), velocity(i))))
            .collect();
        register_body_clones(&mut world);
        let mut fixture = (world, ids);
        for _ in 0..2 {
            assert_eq!(Shipyard::rollback_once(&mut fixture), (20, 100, 100));
            let (world, ids) = &fixture;
            let positions = world.borrow::<View<'_, Position>>().expect(FREE_BORROW);
            assert_eq!(positions.len(), 2_000);
            assert_eq!(*positions.get(ids[0]).unwrap(), position(0));
            assert!(positions.get(ids[10]).is_ok());
        }
    }

    #[test]
    fn spawn_each_spawns_every_entity() {
        let mut world = World::new();
        Shipyard::spawn_each(&mut world, 100);
        let positions = world.borrow::<View<'_, Position>>().expect(FREE_BORROW);
        assert_eq!(positions.len(), 100);
    }

    #[test]
    fn iter2_advances_every_position() {
        let mut world = Shipyard::bodies(100);
        Shipyard::advance_all(&mut world);
        let mut expected = position(7);
        expected.advance(&velocity(7));
        let positions = world.borrow::<View<'_, Position>>().expect(FREE_BORROW);
        let positions: Vec<Position> = positions.iter().copied().collect();
        assert_eq!(positions[7], expected);
    }

    #[test]
    fn frag_iter_has_520_data() {
        let mut world = Shipyard::fragmented();
        for run in 1..=3 {
            Shipyard::negate_all(&mut world);
            let expected = if run % 2 == 1 { -1.0 } else { 1.0 };
            let data = world.borrow::<View<'_, Data>>().expect(FREE_BORROW);
            assert!(data.iter().all(|d| d.0 == expected), "run {run}");
        }
        let data = world.borrow::<View<'_, Data>>().expect(FREE_BORROW);
        assert_eq!(data.len(), 520);
    }

    #[test]
    fn add_remove_leaves_no_b() {
        let mut fixture = Shipyard::with_a(1000);
        assert_eq!(Shipyard::add_then_remove(&mut fixture), 1000);
        let (world, _) = &fixture;
        let (a, b) = world
            .borrow::<(View<'_, A>, View<'_, B>)>()
            .expect(FREE_BORROW);
        assert_eq!((a.len(), b.len()), (1000, 0));
    }

    #[test]
    fn join_visits_only_the_small_set() {
        let mut world = Shipyard::joinable(20_000, 200);
        let expected: f64 = (0..20_000_u64)
            .filter(|&i| is_small(i, 20_000, 200))
            .map(|i| big(i).0)
            .sum();
        assert_eq!(Shipyard::join_sum(&mut world), expected);
    }

    #[test]
    fn despawn_respawn_keeps_the_count() {
        let mut fixture = Shipyard::movers(1000);
        assert_eq!(Shipyard::despawn_then_respawn(&mut fixture), 500);
        let (world, _) = &fixture;
        let positions = world.borrow::<View<'_, Position>>().expect(FREE_BORROW);
        assert_eq!(positions.len(), 1000);
    }

    #[test]
    fn reference_cleanup_clears_every_reference() {
        let mut fixture = Shipyard::referencing(1000, 10);
        assert_eq!(Shipyard::destroy_targets(&mut fixture), 1000);
        let (world, targets) = &fixture;
        let (entities, holders) = world
            .borrow::<(EntitiesView<'_>, View<'_, Holder>)>()
            .expect(FREE_BORROW);
        assert!(targets.iter().all(|t| !entities.is_alive(*t)));
        assert_eq!(holders.len(), 1000);
        assert!(holders.iter().all(|h| h.target.is_none()));
    }

    #[test]
    fn world_clone_keeps_ids_and_values() {
        let world = clone_source(1000);
        let cloned = clone_world(&world);
        let (entities, positions, rotations, velocities) = world
            .borrow::<(
                EntitiesView<'_>,
                View<'_, Position>,
                View<'_, Rotation>,
                View<'_, Velocity>,
            )>()
            .expect(FREE_BORROW);
        let (cloned_entities, cloned_positions, cloned_rotations, cloned_velocities) = cloned
            .borrow::<(
                EntitiesView<'_>,
                View<'_, Position>,
                View<'_, Rotation>,
                View<'_, Velocity>,
            )>()
            .expect(FREE_BORROW);
        assert_eq!(cloned_positions.len(), 1000);
        for (id, (p, r, v)) in (&positions, &rotations, &velocities).iter().with_id() {
            assert!(entities.is_alive(id) && cloned_entities.is_alive(id));
            assert_eq!(cloned_positions[id], *p);
            assert_eq!(cloned_rotations[id], *r);
            assert_eq!(cloned_velocities[id], *v);
        }
    }

    #[test]
    fn world_clone_then_write_writes_every_position_of_the_clone_only() {
        let mut world = clone_source(1000);
        let cloned = Shipyard::clone_then_write(&mut world);
        let (positions, rotations) = world
            .borrow::<(View<'_, Position>, View<'_, Rotation>)>()
            .expect(FREE_BORROW);
        let (cloned_positions, cloned_rotations) = cloned
            .borrow::<(View<'_, Position>, View<'_, Rotation>)>()
            .expect(FREE_BORROW);
        assert_eq!(cloned_positions.len(), 1000);
        for (i, (id, p)) in positions.iter().with_id().enumerate() {
            assert_eq!(*p, position(i as u64), "the original is untouched");
            let mut expected = *p;
            expected.nudge();
            assert_eq!(cloned_positions[id], expected);
            assert_eq!(cloned_rotations[id], rotations[id]);
        }
    }

    #[test]
    fn parallel_write_writes_every_heat() {
        let mut fixture = Shipyard::heated(10_000);
        Shipyard::write_in_parallel(&mut fixture, 1.0);
        let (_, world) = &fixture;
        let heats = world.borrow::<View<'_, Heat>>().expect(FREE_BORROW);
        assert_eq!(heats.len(), 10_000);
        assert!(heats.iter().all(|h| h.0 == 1.0));
    }

    #[test]
    fn bulk_spawn_spawns_every_body() {
        let mut world = World::new();
        assert_eq!(world.bulk_add_entity((0..1000).map(body)).count(), 1000);
        assert_eq!(body_members(&world).len(), 1000);
        let positions = world.borrow::<View<'_, Position>>().expect(FREE_BORROW);
        let positions: Vec<Position> = positions.iter().copied().collect();
        assert_eq!(positions[7], position(7));
    }

    #[test]
    fn bulk_set_tags_every_body_with_its_value() {
        let mut world = Shipyard::bodies(1000);
        assert_eq!(Shipyard::tag_all(&mut world), 1000);
        let (positions, tags) = world
            .borrow::<(View<'_, Position>, View<'_, Tagged>)>()
            .expect(FREE_BORROW);
        assert_eq!(tags.len(), 1000);
        let pairs: Vec<(Position, Tagged)> =
            (&positions, &tags).iter().map(|(p, t)| (*p, *t)).collect();
        assert_eq!(pairs.len(), 1000);
        assert!(pairs.iter().all(|(_, t)| *t == TAGGED));
    }

    #[test]
    fn bulk_remove_untags_every_body_and_keeps_it() {
        let mut world = Shipyard::tagged_bodies(1000);
        assert_eq!(Shipyard::untag_all(&mut world), 1000);
        let tags = world.borrow::<View<'_, Tagged>>().expect(FREE_BORROW);
        assert!(tags.is_empty());
        drop(tags);
        assert_eq!(body_members(&world).len(), 1000);
    }

    #[test]
    fn bulk_despawn_empties_the_world() {
        let mut world = Shipyard::bodies(1000);
        let members = body_members(&world);
        assert_eq!(Shipyard::despawn_all(&mut world), 1000);
        assert!(body_members(&world).is_empty());
        let entities = world.borrow::<EntitiesView<'_>>().expect(FREE_BORROW);
        assert!(members.iter().all(|id| !entities.is_alive(*id)));
        assert_eq!(entities.iter().count(), 0);
    }

    #[test]
    fn a_schedule_run_swaps_every_pair() {
        use schedule::{A, B, C, D, E, value};
        use shipyard::Get;
        let world = schedule_groups(100);
        add_swapping(&world);
        world.run_workload("schedule").expect(FREE_BORROW);
        let (a, b, c, d, e) = world
            .borrow::<(
                View<'_, A>,
                View<'_, B>,
                View<'_, C>,
                View<'_, D>,
                View<'_, E>,
            )>()
            .expect(FREE_BORROW);
        let mut seen = 0;
        for (id, (a, b)) in (&a, &b).iter().with_id() {
            let i = ((a.0.min(b.0) - 0.5) as u64) / 5;
            assert_eq!((a.0, b.0), (value(i, 1), value(i, 0)));
            match ((&c).get(id).ok(), (&d).get(id).ok(), (&e).get(id).ok()) {
                (Some(c), Some(d), None) => assert_eq!((c.0, d.0), (value(i, 3), value(i, 2))),
                (Some(c), None, Some(e)) => assert_eq!((c.0, e.0), (value(i, 4), value(i, 2))),
                (Some(c), None, None) => assert_eq!(c.0, value(i, 2)),
                (None, None, None) => {}
                other => panic!("unexpected row {other:?}"),
            }
            seen += 1;
        }
        assert_eq!(seen, 400);
    }

    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

    fn counted() {
        CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    #[test]
    fn a_repeated_workload_runs_every_instance() {
        let world = World::new();
        add_repeated(&world, counted);
        world.run_workload("empty").expect(FREE_BORROW);
        assert_eq!(
            CALLS.load(std::sync::atomic::Ordering::Relaxed),
            EMPTY_SYSTEMS
        );
    }
}
