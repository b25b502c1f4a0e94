//! Strata's side of the head-to-head workloads: the same names, data and work as the peer
//! libraries' (`peers/`), through the arena, the component store and queries.
//!
//! Invariant: every workload builds its world in setup and times only the work its name
//! describes; each sample starts from the same state, so its figure is comparable with the
//! peers' on the same run.

use std::hint::black_box;

use strata_arena::{Arena, ClassId, InstanceId, Transform, Vec3};
use strata_component_store::{
    ComponentDef, ComponentId, FieldDef, FieldId, InstanceRef, RefPolicy, Store,
};
use strata_query::{Query, QuerySpec};

use crate::harness::Workload;

/// The workloads, in run order.
pub fn workloads() -> Vec<Workload> {
    vec![
        spawn(10_000),
        spawn(1_000_000),
        spawn_batch(10_000),
        spawn_batch(1_000_000),
        iter2(10_000),
        iter2(1_000_000),
        frag_iter(),
        add_remove(10_000),
        small_driver_join(20_000, 200),
        small_driver_join(1_000_000, 1_000),
        changed_filter(100_000),
        despawn_respawn(100_000),
        reference_cleanup(10_000, 100),
        world_clone(100_000),
    ]
}

/// The four components of the spawn and iteration workloads: Transform (16 f32), Position,
/// Rotation and Velocity (3 f32 each), each a single field.
#[derive(Clone, Copy)]
struct Body {
    transform: (ComponentId, FieldId),
    position: (ComponentId, FieldId),
    rotation: (ComponentId, FieldId),
    velocity: (ComponentId, FieldId),
}

impl Body {
    fn install(arena: &Arena, store: &mut Store) -> Body {
        let mut one = |name: &str, field: FieldDef| {
            let c = must(store.install(ComponentDef::new(name).field(field), arena.classes()));
            (c, FieldId::from_index(0))
        };
        Body {
            transform: one("Transform", FieldDef::transform("m", Transform::IDENTITY)),
            position: one("Position", FieldDef::vector("v", Vec3::ZERO)),
            rotation: one("Rotation", FieldDef::vector("v", Vec3::ZERO)),
            velocity: one("Velocity", FieldDef::vector("v", Vec3::ZERO)),
        }
    }

    /// Creates one entity and adds the four components, one at a time.
    fn spawn(&self, arena: &mut Arena, store: &mut Store, i: u64) -> InstanceRef {
        let id = must(arena.create(ClassId::ENTITY, None));
        let at = InstanceRef::new(
            id,
            arena
                .slot_of(id)
                .unwrap_or_else(|| fail("a new instance has a slot")),
        );
        let f = i as f32;
        must(
            must(store.insert(at, ClassId::ENTITY, self.transform.0))
                .set(
                    self.transform.1,
                    Transform::from_position(Vec3::new(f, 0.0, 0.0)),
                )
                .map(|_| ()),
        );
        must(
            must(store.insert(at, ClassId::ENTITY, self.position.0))
                .set(self.position.1, Vec3::new(f, f, f))
                .map(|_| ()),
        );
        must(
            must(store.insert(at, ClassId::ENTITY, self.rotation.0))
                .set(self.rotation.1, Vec3::new(0.0, f, 0.0))
                .map(|_| ()),
        );
        must(
            must(store.insert(at, ClassId::ENTITY, self.velocity.0))
                .set(self.velocity.1, Vec3::new(1.0, 0.5, 0.25))
                .map(|_| ()),
        );
        at
    }

    /// Creates `n` entities with the four components through the bulk paths.
    fn spawn_batch(&self, arena: &mut Arena, store: &mut Store, n: u64) -> Vec<InstanceRef> {
        let made = must(arena.create_many(ClassId::ENTITY, None, n as usize));
        let ats: Vec<InstanceRef> = made
            .into_iter()
            .map(|(id, slot)| InstanceRef::new(id, slot))
            .collect();
        let f = |i: usize| i as f32;
        must(
            must(store.insert_many(&ats, ClassId::ENTITY, self.transform.0))
                .fill(
                    self.transform.1,
                    (0..ats.len()).map(|i| Transform::from_position(Vec3::new(f(i), 0.0, 0.0))),
                )
                .map(|_| ()),
        );
        must(
            must(store.insert_many(&ats, ClassId::ENTITY, self.position.0))
                .fill(
                    self.position.1,
                    (0..ats.len()).map(|i| Vec3::new(f(i), f(i), f(i))),
                )
                .map(|_| ()),
        );
        must(
            must(store.insert_many(&ats, ClassId::ENTITY, self.rotation.0))
                .fill(
                    self.rotation.1,
                    (0..ats.len()).map(|i| Vec3::new(0.0, f(i), 0.0)),
                )
                .map(|_| ()),
        );
        must(
            must(store.insert_many(&ats, ClassId::ENTITY, self.velocity.0))
                .fill(
                    self.velocity.1,
                    std::iter::repeat_n(Vec3::new(1.0, 0.5, 0.25), ats.len()),
                )
                .map(|_| ()),
        );
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

fn add(a: &Vec3, b: &Vec3) -> Vec3 {
    Vec3::new(a.x + b.x, a.y + b.y, a.z + b.z)
}

fn spawn(n: u64) -> Workload {
    Workload::new(
        "spawn",
        n,
        "arena create (one Arc'd node, queued event) + 4 single inserts (typed default row, RowInit::set)",
        move |b| {
            b.iter_with_setup(
                || {
                    let arena = Arena::standard();
                    let mut store = Store::new();
                    let body = Body::install(&arena, &mut store);
                    (arena, store, body)
                },
                |(arena, store, body)| {
                    for i in 0..n {
                        black_box(body.spawn(arena, store, i));
                    }
                },
            );
        },
    )
}

fn spawn_batch(n: u64) -> Workload {
    Workload::new(
        "spawn_batch",
        n,
        "Arena::create_many (consecutive ids, one event) + 4 Store::insert_many with typed fills",
        move |b| {
            b.iter_with_setup(
                || {
                    let arena = Arena::standard();
                    let mut store = Store::new();
                    let body = Body::install(&arena, &mut store);
                    (arena, store, body)
                },
                |(arena, store, body)| body.spawn_batch(arena, store, n),
            );
        },
    )
}

fn iter2(n: u64) -> Workload {
    Workload::new(
        "iter2",
        n,
        "cached query (stamp check), Pass::update writing Position from Velocity: dense slice walk, compare-before-write, changed tick + change log + dirty mask per row",
        move |b| {
            let mut arena = Arena::standard();
            let mut store = Store::new();
            let body = Body::install(&arena, &mut store);
            body.spawn_batch(&mut arena, &mut store, n);
            let mut query = must(Query::new(
                QuerySpec::new().with(body.position.0).with(body.velocity.0),
            ));
            must(query.refresh(&arena, &store));
            b.iter(|| {
                let pass = must(query.run(&arena, &store));
                must(pass.update::<Vec3, Vec3>(
                    &mut store,
                    (0, body.position.1),
                    (1, body.velocity.1),
                    add,
                ))
            });
        },
    )
}

/// The world of `frag_iter`: 26 kinds `A`..`Z` of 20 entities each, every one also with
/// `Data`, and the cached query over `Data`.
struct Fragmented {
    arena: Arena,
    store: Store,
    query: Query,
    x: FieldId,
}

fn fragmented() -> Fragmented {
    let mut arena = Arena::standard();
    let mut store = Store::new();
    let data = must(store.install(
        ComponentDef::new("Data").field(FieldDef::number("x", 1.0)),
        arena.classes(),
    ));
    let x = FieldId::from_index(0);
    for letter in b'A'..=b'Z' {
        let name = (letter as char).to_string();
        let kind = must(store.install(
            ComponentDef::new(&name).field(FieldDef::number("v", 0.0)),
            arena.classes(),
        ));
        let made = must(arena.create_many(ClassId::ENTITY, None, 20));
        let ats: Vec<InstanceRef> = made
            .into_iter()
            .map(|(id, slot)| InstanceRef::new(id, slot))
            .collect();
        must(store.insert_many(&ats, ClassId::ENTITY, kind).map(|_| ()));
        must(store.insert_many(&ats, ClassId::ENTITY, data).map(|_| ()));
    }
    let mut query = must(Query::new(QuerySpec::new().with(data)));
    must(query.refresh(&arena, &store));
    Fragmented {
        arena,
        store,
        query,
        x,
    }
}

/// The routine of `frag_iter`: one update pass negating every `Data` (as
/// [`Data::negate`](crate::data::Data::negate) does for the peers, so every run changes every
/// row); returns the rows it changed.
fn frag_pass(world: &mut Fragmented) -> usize {
    let pass = must(world.query.run(&world.arena, &world.store));
    must(pass.update_each::<f64>(&mut world.store, (0, world.x), |v| -v))
}

fn frag_iter() -> Workload {
    Workload::new(
        "frag_iter",
        520,
        "Data's own sparse set is contiguous whatever the other 26 kinds: one dense update pass negating every row (compare-before-write, changed tick, dirty mask)",
        move |b| {
            let mut world = fragmented();
            b.iter(|| frag_pass(&mut world));
        },
    )
}

fn add_remove(n: u64) -> Workload {
    Workload::new(
        "add_remove",
        n,
        "Store::insert of B per entity (sparse entry + column push), then Store::remove (swap-remove + removal log)",
        move |b| {
            let mut arena = Arena::standard();
            let mut store = Store::new();
            let a = must(store.install(
                ComponentDef::new("A").field(FieldDef::number("x", 0.0)),
                arena.classes(),
            ));
            let bc = must(store.install(
                ComponentDef::new("B").field(FieldDef::number("x", 0.0)),
                arena.classes(),
            ));
            let made = must(arena.create_many(ClassId::ENTITY, None, n as usize));
            let ats: Vec<InstanceRef> = made
                .into_iter()
                .map(|(id, slot)| InstanceRef::new(id, slot))
                .collect();
            must(store.insert_many(&ats, ClassId::ENTITY, a).map(|_| ()));
            b.iter(|| {
                for at in &ats {
                    must(store.insert(*at, ClassId::ENTITY, bc).map(|_| ()));
                }
                for at in &ats {
                    black_box(must(store.remove(*at, bc)));
                }
            });
        },
    )
}

fn small_driver_join(n: u64, small: u64) -> Workload {
    Workload::new(
        "small_driver_join",
        n,
        "cached query driven by the smaller set; sum Big's field through a bound term column",
        move |b| {
            let mut arena = Arena::standard();
            let mut store = Store::new();
            let big = must(store.install(
                ComponentDef::new("Big").field(FieldDef::number("x", 1.0)),
                arena.classes(),
            ));
            let sm = must(store.install(
                ComponentDef::new("Small").field(FieldDef::number("y", 2.0)),
                arena.classes(),
            ));
            let made = must(arena.create_many(ClassId::ENTITY, None, n as usize));
            let ats: Vec<InstanceRef> = made
                .into_iter()
                .map(|(id, slot)| InstanceRef::new(id, slot))
                .collect();
            must(store.insert_many(&ats, ClassId::ENTITY, big).map(|_| ()));
            let step = (n / small) as usize;
            let chosen: Vec<InstanceRef> = ats.iter().step_by(step).copied().collect();
            must(store.insert_many(&chosen, ClassId::ENTITY, sm).map(|_| ()));
            let mut query = must(Query::new(QuerySpec::new().with(big).with(sm)));
            must(query.refresh(&arena, &store));
            let x = FieldId::from_index(0);
            b.iter(|| {
                let pass = must(query.run(&arena, &store));
                let column = must(pass.column::<f64>(&store, 0, x));
                (0..pass.len()).filter_map(|i| column.get(i)).sum::<f64>()
            });
        },
    )
    .items(small)
}

fn changed_filter(n: u64) -> Workload {
    Workload::new(
        "changed_filter",
        n,
        "changed pass reads the set's change log (1% of rows), binary-searches the id-sorted matches, re-checks ticks; visit reads Position",
        move |b| {
            b.iter_with_setup(
                || {
                    let mut arena = Arena::standard();
                    let mut store = Store::new();
                    let position = must(store.install(
                        ComponentDef::new("Position").field(FieldDef::vector("v", Vec3::ZERO)),
                        arena.classes(),
                    ));
                    let v = FieldId::from_index(0);
                    let made = must(arena.create_many(ClassId::ENTITY, None, n as usize));
                    let ats: Vec<InstanceRef> = made
                        .into_iter()
                        .map(|(id, slot)| InstanceRef::new(id, slot))
                        .collect();
                    must(
                        store
                            .insert_many(&ats, ClassId::ENTITY, position)
                            .map(|_| ()),
                    );
                    let mut query = must(Query::new(
                        QuerySpec::new().with(position).changed(position),
                    ));
                    must(query.run(&arena, &store).map(|_| ()));
                    {
                        let mut writer = must(store.column_writer::<Vec3>(position, v));
                        for row in (0..n as usize).step_by(100) {
                            must(writer.write(row, Vec3::new(1.0, 2.0, 3.0)));
                        }
                    }
                    (arena, store, query, v)
                },
                |(arena, store, query, v)| {
                    let pass = must(query.run(arena, store));
                    let column = must(pass.column::<Vec3>(store, 0, *v));
                    let mut visited = 0usize;
                    let mut sum = 0.0f32;
                    for m in pass.iter() {
                        sum += column.get(m.index()).map_or(0.0, |p| p.x);
                        visited += 1;
                    }
                    (visited, sum)
                },
            );
        },
    )
}

fn despawn_respawn(n: u64) -> Workload {
    Workload::new(
        "despawn_respawn",
        n,
        "arena destroy (tombstone + events) + Store::on_destroyed per entity; two drains (on_reclaimed) so slots are reused; then create + 2 inserts per entity",
        move |b| {
            b.iter_with_setup(
                || {
                    let mut arena = Arena::standard();
                    let mut store = Store::new();
                    let p = must(store.install(
                        ComponentDef::new("Position").field(FieldDef::vector("v", Vec3::ZERO)),
                        arena.classes(),
                    ));
                    let v = must(store.install(
                        ComponentDef::new("Velocity").field(FieldDef::vector("v", Vec3::ZERO)),
                        arena.classes(),
                    ));
                    let made = must(arena.create_many(ClassId::ENTITY, None, n as usize));
                    let ats: Vec<InstanceRef> = made
                        .into_iter()
                        .map(|(id, slot)| InstanceRef::new(id, slot))
                        .collect();
                    must(store.insert_many(&ats, ClassId::ENTITY, p).map(|_| ()));
                    must(store.insert_many(&ats, ClassId::ENTITY, v).map(|_| ()));
                    must(arena.drain().map(|_| ()));
                    (arena, store, ats, p, v)
                },
                |(arena, store, ats, p, v)| {
                    for at in ats.iter().step_by(2) {
                        let destruction = must(arena.destroy(at.id));
                        black_box(store.on_destroyed(&destruction.doomed));
                    }
                    for _ in 0..2 {
                        let drained = must(arena.drain());
                        store.on_reclaimed(&drained.reclaimed);
                    }
                    for _ in 0..ats.len() / 2 {
                        let id = must(arena.create(ClassId::ENTITY, None));
                        let at = InstanceRef::new(
                            id,
                            arena
                                .slot_of(id)
                                .unwrap_or_else(|| fail("a new instance has a slot")),
                        );
                        must(store.insert(at, ClassId::ENTITY, *p).map(|_| ()));
                        must(store.insert(at, ClassId::ENTITY, *v).map(|_| ()));
                    }
                },
            );
        },
    )
}

fn reference_cleanup(holders: u64, targets: u64) -> Workload {
    Workload::new(
        "reference_cleanup",
        holders,
        "reverse reference index: destroying a target visits only its holders; Clear policy writes None",
        move |b| {
            b.iter_with_setup(
                || {
                    let mut arena = Arena::standard();
                    let mut store = Store::new();
                    let aim = must(
                        store.install(
                            ComponentDef::new("Aim")
                                .field(FieldDef::reference("target", RefPolicy::Clear)),
                            arena.classes(),
                        ),
                    );
                    let target_ids: Vec<InstanceId> =
                        must(arena.create_many(ClassId::ENTITY, None, targets as usize))
                            .into_iter()
                            .map(|(id, _)| id)
                            .collect();
                    let made = must(arena.create_many(ClassId::ENTITY, None, holders as usize));
                    let ats: Vec<InstanceRef> = made
                        .into_iter()
                        .map(|(id, slot)| InstanceRef::new(id, slot))
                        .collect();
                    let field = FieldId::from_index(0);
                    must(
                        must(store.insert_many(&ats, ClassId::ENTITY, aim))
                            .fill(
                                field,
                                (0..ats.len()).map(|i| Some(target_ids[i % target_ids.len()])),
                            )
                            .map(|_| ()),
                    );
                    (arena, store, target_ids)
                },
                |(arena, store, target_ids)| {
                    let mut cleared = 0;
                    for t in target_ids.iter() {
                        let destruction = must(arena.destroy(*t));
                        cleared += store.on_destroyed(&destruction.doomed).cleared.len();
                    }
                    cleared
                },
            );
        },
    )
}

fn world_clone(n: u64) -> Workload {
    Workload::new(
        "world_clone",
        n,
        "copy-on-write snapshots: arena pages of Arc'd nodes and store sets behind Arc; nothing is copied until written",
        move |b| {
            let mut arena = Arena::standard();
            let mut store = Store::new();
            let made = must(arena.create_many(ClassId::ENTITY, None, n as usize));
            let ats: Vec<InstanceRef> = made
                .into_iter()
                .map(|(id, slot)| InstanceRef::new(id, slot))
                .collect();
            for name in ["Position", "Rotation", "Velocity"] {
                let c = must(store.install(
                    ComponentDef::new(name).field(FieldDef::vector("v", Vec3::ZERO)),
                    arena.classes(),
                ));
                must(store.insert_many(&ats, ClassId::ENTITY, c).map(|_| ()));
            }
            b.iter(|| (arena.snapshot(), store.snapshot()));
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every run of the pass writes a new value into every row, however many runs came
    /// before: the equal-write check never lets a run skip a row.
    #[test]
    fn frag_iter_pass_changes_all_520_rows_on_every_run() {
        let mut world = fragmented();
        for run in 0..1_100 {
            assert_eq!(frag_pass(&mut world), 520, "run {run}");
        }
    }
}
