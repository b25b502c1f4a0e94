//! Workloads of the component store (`strata-component-store`): spawning with components,
//! adding and removing rows, despawning with slot reuse, field writes three ways, reference
//! cleanup on destruction, snapshots, and saving to and loading from a snapshot slot.
//!
//! Invariant: every workload here measures the store (and, where an entity's lifecycle is the
//! point, the arena beside it) through public APIs only, with its setup outside the timed
//! routine. A store call that fails panics, in the timed routine too, so a workload never
//! measures an error path by mistake.

use std::cell::RefCell;
use std::fmt::Display;
use std::hint::black_box;
use std::rc::Rc;

use strata_arena::{Arena, ClassId, ClassRegistry, InstanceId, Transform, Vec3};
use strata_component_store::{
    ComponentDef, ComponentId, FieldDef, FieldId, InstanceRef, RefPolicy, SetSlot, Store, Value,
};

use crate::harness::Workload;

const MILLION: u64 = 1_000_000;

/// The store's workloads, in run order.
pub fn workloads() -> Vec<Workload> {
    vec![
        spawn(10_000),
        spawn(MILLION),
        insert_4_components(MILLION),
        add_remove(10_000),
        despawn_respawn(100_000),
        write_typed(MILLION),
        write_value(MILLION),
        column_writer(MILLION),
        reference_cleanup("store_reference_cleanup", 10_000, 100),
        // The same 10k holders all pointing at one target: the cost per holder grows with the
        // number of holders sharing a target, which the spread-out case above hides.
        reference_cleanup("store_reference_cleanup_one_target", 10_000, 1),
        snapshot(100_000),
        first_write_after_snapshot(100_000),
        save_into(100_000),
        load_from(100_000),
    ]
}

/// `name` with a size suffix: `_10k`, `_1m`, or the plain number for other sizes.
fn sized(name: &str, n: u64) -> String {
    match n {
        n if n >= MILLION && n % MILLION == 0 => format!("{name}_{}m", n / MILLION),
        n if n >= 1_000 && n % 1_000 == 0 => format!("{name}_{}k", n / 1_000),
        n => format!("{name}_{n}"),
    }
}

/// Fixture and routine calls cannot fail on the standard classes and the definitions below; a
/// failure is a broken workload, so it stops the run.
#[track_caller]
fn must<T, E: Display>(result: Result<T, E>) -> T {
    match result {
        Ok(value) => value,
        Err(error) => panic!("store workload failed: {error}"),
    }
}

/// One field of one installed component.
#[derive(Clone, Copy)]
struct Field {
    component: ComponentId,
    field: FieldId,
}

/// Installs `def` and returns its field named `field`.
fn install(store: &mut Store, classes: &ClassRegistry, def: ComponentDef, field: &str) -> Field {
    let component = must(store.install(def, classes));
    let field = must(store.field(component, field));
    Field { component, field }
}

/// Creates a root `Entity` in the arena and returns it as the store addresses it.
fn entity(arena: &mut Arena) -> InstanceRef {
    let id = must(arena.create(ClassId::ENTITY, None));
    match arena.slot_of(id) {
        Some(slot) => InstanceRef::new(id, slot),
        None => panic!("a new instance has a slot"),
    }
}

fn entities(arena: &mut Arena, n: u64) -> Vec<InstanceRef> {
    (0..n).map(|_| entity(arena)).collect()
}

/// A float per index, so neighbouring rows hold different values.
fn float(i: u64) -> f32 {
    (i % 4_096) as f32
}

/// The four components of a spawned entity: a 4×4 transform and three vectors.
#[derive(Clone, Copy)]
struct Body {
    transform: Field,
    position: Field,
    rotation: Field,
    velocity: Field,
}

impl Body {
    fn install(store: &mut Store, classes: &ClassRegistry) -> Body {
        let vector = |store: &mut Store, name: &str| {
            let def = ComponentDef::new(name).field(FieldDef::vector("vector", Vec3::ZERO));
            install(store, classes, def, "vector")
        };
        let def = ComponentDef::new("Transform")
            .field(FieldDef::transform("transform", Transform::IDENTITY));
        Body {
            transform: install(store, classes, def, "transform"),
            position: vector(store, "Position"),
            rotation: vector(store, "Rotation"),
            velocity: vector(store, "Velocity"),
        }
    }

    /// Adds the four components to `at` through the insert fast path, one typed set each.
    fn insert(&self, store: &mut Store, at: InstanceRef, i: u64) {
        let v = Vec3::new(float(i), 1.0, 2.0);
        let fields = [self.position, self.rotation, self.velocity];
        must(
            must(store.insert(at, ClassId::ENTITY, self.transform.component))
                .set(self.transform.field, Transform::from_position(v)),
        );
        for f in fields {
            must(must(store.insert(at, ClassId::ENTITY, f.component)).set(f.field, v));
        }
    }
}

fn spawn(n: u64) -> Workload {
    Workload::new(
        sized("store_spawn", n),
        n,
        "arena create + slot lookup, then 4 inserts (typed default rows copied column by \
         column) each with one typed RowInit::set",
        move |b| {
            let classes = ClassRegistry::standard();
            b.iter_with_setup(
                || {
                    let mut store = Store::new();
                    let body = Body::install(&mut store, &classes);
                    (Arena::standard(), store, body)
                },
                |(arena, store, body)| {
                    for i in 0..n {
                        let at = entity(arena);
                        body.insert(store, at, i);
                    }
                },
            );
        },
    )
}

fn insert_4_components(n: u64) -> Workload {
    Workload::new(
        sized("store_insert_4_components", n),
        n,
        "4 inserts per existing instance (typed default rows copied column by \
         column) each with one typed RowInit::set",
        move |b| {
            let classes = ClassRegistry::standard();
            let mut arena = Arena::standard();
            let instances = entities(&mut arena, n);
            b.iter_with_setup(
                || {
                    let mut store = Store::new();
                    let body = Body::install(&mut store, &classes);
                    (store, body)
                },
                |(store, body)| {
                    for (i, at) in (0..n).zip(&instances) {
                        body.insert(store, *at, i);
                    }
                },
            );
        },
    )
}

fn add_remove(n: u64) -> Workload {
    Workload::new(
        sized("store_add_remove", n),
        n,
        "insert B (sparse entry, column push), then remove B (swap-remove, removal-log record, \
         precomputed dependents); A stays",
        move |b| {
            let classes = ClassRegistry::standard();
            let mut arena = Arena::standard();
            let mut store = Store::new();
            let a = install(
                &mut store,
                &classes,
                ComponentDef::new("A").field(FieldDef::number("value", 0.0)),
                "value",
            );
            let with_b = install(
                &mut store,
                &classes,
                ComponentDef::new("B").field(FieldDef::number("value", 0.0)),
                "value",
            );
            let instances = entities(&mut arena, n);
            for at in &instances {
                must(store.insert(*at, ClassId::ENTITY, a.component));
            }
            // Adding B to all then removing it from all leaves the store as it was, so every run
            // starts from the same state and needs no setup.
            b.iter(move || {
                for at in &instances {
                    must(store.insert(*at, ClassId::ENTITY, with_b.component));
                }
                let mut removed = 0_usize;
                for at in &instances {
                    removed += usize::from(must(store.remove(*at, with_b.component)));
                }
                removed
            });
        },
    )
}

/// Position and velocity, each one vector.
fn install_motion(store: &mut Store, classes: &ClassRegistry) -> (Field, Field) {
    let vector = |store: &mut Store, name: &str| {
        let def = ComponentDef::new(name).field(FieldDef::vector("vector", Vec3::ZERO));
        install(store, classes, def, "vector")
    };
    (vector(store, "Position"), vector(store, "Velocity"))
}

fn insert_motion(store: &mut Store, motion: (Field, Field), at: InstanceRef, i: u64) {
    let v = Vec3::new(float(i), 0.0, 0.0);
    for f in [motion.0, motion.1] {
        must(must(store.insert(at, ClassId::ENTITY, f.component)).set(f.field, v));
    }
}

fn despawn_respawn(n: u64) -> Workload {
    Workload::new(
        sized("store_despawn_respawn", n),
        n,
        "per despawned entity: arena destroy + on_destroyed (row removal per component); two \
         drains + on_reclaimed; per respawned entity: create in a reused slot + 2 inserts; \
         one item = one despawn and one respawn",
        move |b| {
            let classes = ClassRegistry::standard();
            b.iter_with_setup(
                || {
                    let mut arena = Arena::standard();
                    let mut store = Store::new();
                    let motion = install_motion(&mut store, &classes);
                    let instances = entities(&mut arena, n);
                    for (i, at) in (0..n).zip(&instances) {
                        insert_motion(&mut store, motion, *at, i);
                    }
                    // The creation events go now, so the timed drains carry only destruction.
                    black_box(must(arena.drain()));
                    (arena, store, motion, instances)
                },
                |(arena, store, motion, instances)| {
                    let mut removed = 0;
                    for at in instances.iter().step_by(2) {
                        let destruction = must(arena.destroy(at.id));
                        removed += store.on_destroyed(&destruction.doomed).removed.len();
                    }
                    let mut drains = Vec::with_capacity(2);
                    for _ in 0..2 {
                        let drained = must(arena.drain());
                        store.on_reclaimed(&drained.reclaimed);
                        drains.push(drained);
                    }
                    for i in 0..n.div_ceil(2) {
                        let at = entity(arena);
                        insert_motion(store, *motion, at, i);
                    }
                    (removed, drains)
                },
            );
        },
    )
    .items(n.div_ceil(2))
}

/// A store whose component `Health` has one number field, held by `n` instances.
fn numbers(n: u64) -> (Store, Field, Vec<InstanceRef>) {
    let classes = ClassRegistry::standard();
    let mut arena = Arena::standard();
    let mut store = Store::new();
    let health = install(
        &mut store,
        &classes,
        ComponentDef::new("Health").field(FieldDef::number("current", 0.0)),
        "current",
    );
    let instances = entities(&mut arena, n);
    for at in &instances {
        must(store.insert(*at, ClassId::ENTITY, health.component));
    }
    (store, health, instances)
}

/// Times `write` over a store of `n` number rows. Before each run the dirty state is taken, as
/// a system consuming changes once a frame would, so every run also records each written row
/// as dirty again; `round` makes each run's values differ from the previous run's.
fn write_every_row(
    b: &mut crate::Bencher,
    n: u64,
    mut write: impl FnMut(&mut Store, Field, &[InstanceRef], f64) -> usize + 'static,
) {
    let (store, health, instances) = numbers(n);
    let store = Rc::new(RefCell::new(store));
    let for_setup = Rc::clone(&store);
    let mut round = 0.0;
    b.iter_with_setup(
        move || must(for_setup.borrow_mut().take_dirty(health.component)),
        move |_taken| {
            round += 1.0;
            write(&mut store.borrow_mut(), health, &instances, round)
        },
    );
}

fn write_typed(n: u64) -> Workload {
    Workload::new(
        sized("store_write_typed", n),
        n,
        "Store::write::<f64>: sparse lookup with id check, typed compare, reference-field check, \
         Arc::make_mut on the set, tick, dirty bit and change-log position",
        move |b| {
            write_every_row(b, n, |store, health, instances, round| {
                let mut changed = 0;
                for (i, at) in instances.iter().enumerate() {
                    let value = round + i as f64;
                    changed += usize::from(must(store.write(
                        *at,
                        health.component,
                        health.field,
                        value,
                    )));
                }
                changed
            });
        },
    )
}

fn write_value(n: u64) -> Workload {
    Workload::new(
        sized("store_write_value", n),
        n,
        "Store::write_value(Value::Number): sparse lookup with id check, type check, compare \
         against the current value read as a Value, Arc::make_mut on the set, Column::replace, \
         tick, dirty bit and change-log position",
        move |b| {
            write_every_row(b, n, |store, health, instances, round| {
                let mut changed = 0;
                for (i, at) in instances.iter().enumerate() {
                    let value = Value::Number(round + i as f64);
                    changed += usize::from(must(store.write_value(
                        *at,
                        health.component,
                        health.field,
                        value,
                    )));
                }
                changed
            });
        },
    )
}

fn column_writer(n: u64) -> Workload {
    Workload::new(
        sized("store_column_writer", n),
        n,
        "ColumnWriter::<f64> by row: typed compare, the set made private once per writer, one \
         tick shared by the writer, dirty bit and change-log position",
        move |b| {
            write_every_row(b, n, |store, health, instances, round| {
                let mut writer = must(store.column_writer::<f64>(health.component, health.field));
                let mut changed = 0;
                for row in 0..instances.len() {
                    changed += usize::from(must(writer.write(row, round + row as f64)));
                }
                changed
            });
        },
    )
}

/// An arena with `targets` entities and `holders` entities whose `Follow.target` (a
/// `RefPolicy::Clear` reference) points at target `i % targets`.
fn followers(
    classes: &ClassRegistry,
    holders: u64,
    targets: u64,
) -> (Arena, Store, Vec<InstanceId>) {
    let mut arena = Arena::standard();
    let mut store = Store::new();
    let follow = install(
        &mut store,
        classes,
        ComponentDef::new("Follow").field(FieldDef::reference("target", RefPolicy::Clear)),
        "target",
    );
    let target_ids: Vec<InstanceId> = (0..targets).map(|_| entity(&mut arena).id).collect();
    for i in 0..holders {
        let at = entity(&mut arena);
        let target = target_ids[(i % targets) as usize];
        must(
            must(store.insert(at, ClassId::ENTITY, follow.component))
                .set(follow.field, Some(target)),
        );
    }
    (arena, store, target_ids)
}

/// `holders` holders spread over `targets` targets; one item is one holder whose reference is
/// cleared.
fn reference_cleanup(name: &str, holders: u64, targets: u64) -> Workload {
    Workload::new(
        name,
        holders,
        "per target: arena destroy + on_destroyed; the target's entries taken from the reverse \
         index (a sorted list, a counted map past 128 holders), then one pass per set in which \
         the Clear policy writes None into each holder's field with its tick, dirty bit and log entry",
        move |b| {
            let classes = ClassRegistry::standard();
            b.iter_with_setup(
                || followers(&classes, holders, targets),
                |(arena, store, target_ids)| {
                    let mut cleared = 0;
                    for target in target_ids.iter() {
                        let destruction = must(arena.destroy(*target));
                        cleared += store.on_destroyed(&destruction.doomed).cleared.len();
                    }
                    cleared
                },
            );
        },
    )
}

/// A store of `n` instances holding `Position`, `Velocity` and `Health`.
fn three_components(n: u64) -> (Store, Field, Vec<InstanceRef>) {
    let classes = ClassRegistry::standard();
    let mut arena = Arena::standard();
    let mut store = Store::new();
    let motion = install_motion(&mut store, &classes);
    let health = install(
        &mut store,
        &classes,
        ComponentDef::new("Health").field(FieldDef::number("current", 100.0)),
        "current",
    );
    let instances = entities(&mut arena, n);
    for (i, at) in (0..n).zip(&instances) {
        insert_motion(&mut store, motion, *at, i);
        must(store.insert(*at, ClassId::ENTITY, health.component));
    }
    (store, health, instances)
}

fn snapshot(n: u64) -> Workload {
    Workload::new(
        sized("store_snapshot", n),
        n,
        "clone the Vec of per-set Arcs, the name map and the orphans Arc; rows are shared",
        move |b| {
            let (store, _, _) = three_components(n);
            b.iter(|| store.snapshot());
        },
    )
    .items(1)
}

fn first_write_after_snapshot(n: u64) -> Workload {
    Workload::new(
        sized("store_first_write_after_snapshot", n),
        n,
        "Arc::make_mut deep-copies the written set (sparse, ids, slots, columns, ticks, dirty \
         masks, removal log, reverse index), then one typed write",
        move |b| {
            let (store, health, instances) = three_components(n);
            let target = instances[instances.len() / 2];
            let store = Rc::new(RefCell::new(store));
            let for_setup = Rc::clone(&store);
            let values = [50.0, 75.0];
            let mut flip = 0;
            b.iter_with_setup(
                move || for_setup.borrow().snapshot(),
                move |_snapshot| {
                    flip ^= 1;
                    must(store.borrow_mut().write(
                        target,
                        health.component,
                        health.field,
                        values[flip],
                    ))
                },
            );
        },
    )
    .items(1)
}

/// One component with four primitive fields, held by `n` instances, plus `extra` instances of
/// the same arena that do not hold it.
struct Players {
    store: Store,
    player: ComponentId,
    health: FieldId,
    instances: Vec<InstanceRef>,
    extra: Vec<InstanceRef>,
}

fn players(n: u64, extra: u64) -> Players {
    let classes = ClassRegistry::standard();
    let mut arena = Arena::standard();
    let mut store = Store::new();
    let def = ComponentDef::new("Player")
        .field(FieldDef::number("health", 100.0))
        .field(FieldDef::integer("ammo", 30))
        .field(FieldDef::vector("velocity", Vec3::ZERO))
        .field(FieldDef::boolean("grounded", true));
    let player = must(store.install(def, &classes));
    let health = must(store.field(player, "health"));
    let ammo = must(store.field(player, "ammo"));
    let velocity = must(store.field(player, "velocity"));
    let instances = entities(&mut arena, n);
    for (i, at) in (0..n).zip(&instances) {
        let mut row = must(store.insert(*at, ClassId::ENTITY, player));
        must(row.set(health, f64::from(float(i))));
        must(row.set(ammo, (i % 64) as i64));
        must(row.set(velocity, Vec3::new(float(i), 0.0, 1.0)));
    }
    let extra = entities(&mut arena, extra);
    Players {
        store,
        player,
        health,
        instances,
        extra,
    }
}

fn save_into(n: u64) -> Workload {
    Workload::new(
        sized("store_save_into", n),
        n,
        "clear + extend_from_slice of ids, slots, two tick arrays and 4 typed columns into the \
         slot's reused buffers",
        move |b| {
            let Players { store, player, .. } = players(n, 0);
            let mut slot = SetSlot::new();
            must(store.save_into(player, &mut slot));
            b.iter(move || {
                must(store.save_into(player, &mut slot));
                slot.len()
            });
        },
    )
}

fn load_from(n: u64) -> Workload {
    Workload::new(
        sized("store_load_from", n),
        n,
        "mark the live sparse entries, copy ids, slots, ticks and 4 columns back, find previous \
         holders through the marks, rebuild sparse and reverse index, log the rows that went",
        move |b| {
            let Players {
                store,
                player,
                health,
                instances,
                extra,
            } = players(n, n / 100);
            let mut slot = SetSlot::new();
            must(store.save_into(player, &mut slot));
            let store = Rc::new(RefCell::new(store));
            let for_setup = Rc::clone(&store);
            let mut round = 0.0;
            // A frame since the save: every row's health written, 1% of the rows removed and as
            // many added for other instances. Loading puts all of it back, so the next frame
            // starts from the saved state again.
            b.iter_with_setup(
                move || {
                    let mut store = for_setup.borrow_mut();
                    round += 1.0;
                    {
                        let mut writer = must(store.column_writer::<f64>(player, health));
                        for row in 0..instances.len() {
                            must(writer.write(row, -round - row as f64));
                        }
                    }
                    for at in instances.iter().step_by(100) {
                        must(store.remove(*at, player));
                    }
                    for at in &extra {
                        must(store.insert(*at, ClassId::ENTITY, player));
                    }
                },
                move |()| must(store.borrow_mut().load_from(player, &slot)),
            );
        },
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::harness::SampleConfig;

    fn tiny() -> SampleConfig {
        SampleConfig {
            min_samples: 2,
            budget: Duration::ZERO,
            max_samples: 2,
        }
    }

    #[test]
    fn names_carry_their_size() {
        assert_eq!(sized("store_spawn", 10_000), "store_spawn_10k");
        assert_eq!(sized("store_spawn", MILLION), "store_spawn_1m");
        assert_eq!(sized("store_spawn", 100_000), "store_spawn_100k");
        assert_eq!(sized("store_spawn", 250), "store_spawn_250");
        let names: Vec<String> = workloads().iter().map(|w| w.name().to_owned()).collect();
        assert!(
            names.iter().all(|name| name.starts_with("store_")),
            "{names:?}"
        );
    }

    /// Every workload, at a small size, measures without a failing store call.
    #[test]
    fn small_workloads_run() {
        let mut small = vec![
            spawn(200),
            insert_4_components(200),
            add_remove(200),
            despawn_respawn(200),
            write_typed(200),
            write_value(200),
            column_writer(200),
            reference_cleanup("small", 200, 10),
            snapshot(200),
            first_write_after_snapshot(200),
            save_into(200),
            load_from(200),
        ];
        for workload in &mut small {
            let name = workload.name().to_owned();
            let summary = workload.measure(tiny());
            assert!(summary.is_ok(), "{name}: {summary:?}");
        }
    }

    #[test]
    fn spawn_adds_four_rows_per_entity() {
        let classes = ClassRegistry::standard();
        let mut arena = Arena::standard();
        let mut store = Store::new();
        let body = Body::install(&mut store, &classes);
        let at = entity(&mut arena);
        body.insert(&mut store, at, 7);
        for f in [body.transform, body.position, body.rotation, body.velocity] {
            assert!(store.has(at, f.component));
        }
        let expect = Transform::from_position(Vec3::new(7.0, 1.0, 2.0));
        let got = store.get::<Transform>(at, body.transform.component, body.transform.field);
        assert_eq!(got.ok(), Some(&expect));
    }

    #[test]
    fn reference_cleanup_clears_every_holder() {
        let classes = ClassRegistry::standard();
        let (mut arena, mut store, targets) = followers(&classes, 300, 7);
        let mut cleared = 0;
        for target in &targets {
            let destruction = must(arena.destroy(*target));
            cleared += store.on_destroyed(&destruction.doomed).cleared.len();
        }
        assert_eq!(cleared, 300);
        let follow = store.component("Follow").map(|c| store.set(c));
        assert!(matches!(follow, Some(Ok(set)) if set.referenced_targets() == 0));
    }

    #[test]
    fn every_write_changes_its_row() {
        let (mut store, health, instances) = numbers(50);
        for round in [1.0, 2.0] {
            let mut changed = 0;
            for (i, at) in instances.iter().enumerate() {
                let value = round + i as f64;
                changed += usize::from(must(store.write(
                    *at,
                    health.component,
                    health.field,
                    value,
                )));
            }
            assert_eq!(changed, 50);
        }
    }

    #[test]
    fn load_restores_the_saved_rows() {
        let Players {
            mut store,
            player,
            health,
            instances,
            extra,
        } = players(300, 3);
        let mut slot = SetSlot::new();
        must(store.save_into(player, &mut slot));
        must(store.write(instances[0], player, health, -1.0));
        must(store.remove(instances[1], player));
        must(store.insert(extra[0], ClassId::ENTITY, player));
        must(store.load_from(player, &slot));
        assert_eq!(
            store.get::<f64>(instances[0], player, health).ok(),
            Some(&0.0)
        );
        assert!(store.has(instances[1], player));
        assert!(!store.has(extra[0], player));
        assert_eq!(must(store.set(player)).len(), 300);
    }
}
