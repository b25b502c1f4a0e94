//! Strata's structural workloads written through the facade, `strata::World`, as an integrator
//! writes them: `world_spawn` is the work of `spawn` (`World::create`, then `World::add` of the
//! four body components with their values), and `world_despawn_respawn` the work of
//! `despawn_respawn` (`World::destroy` of every other mover, a `World::step` that reclaims
//! them, then `World::create` and `World::add` of Position and Velocity for as many). They have
//! no peer: their figures are read against Strata's layer-level workloads of the same names
//! without `world_`, which the targets bound at 1.2×. `world_insert` is `world_spawn`'s
//! work through the facade's typed add (`World::insert`, then `Insert::set`), the form for code
//! that knows its field types.
//!
//! Invariant: each sample starts from a fresh world built in setup from the values of
//! [`crate::data`], so the figures compare with the layer-level workloads' on the same run.

use std::hint::black_box;

use strata::prelude::*;

use crate::data::{self, DESPAWN_SIZE, ENTITY_SIZES};
use crate::harness::Workload;

/// Every field here is the first of its one-field component.
const FIRST: FieldId = FieldId::from_index(0);

/// The facade workloads, `world_spawn` and `world_insert` at the sizes of `spawn`, then
/// `world_despawn_respawn`.
pub fn workloads() -> Vec<Workload> {
    let mut workloads: Vec<Workload> = ENTITY_SIZES.into_iter().map(world_spawn).collect();
    workloads.extend(ENTITY_SIZES.into_iter().map(world_insert));
    workloads.push(world_despawn_respawn(DESPAWN_SIZE));
    workloads
}

fn must<T>(result: Result<T, WorldError>) -> T {
    result.unwrap_or_else(|error| panic!("benchmark fixture: {error}"))
}

/// A world with the four body components of `spawn` defined (Transform, Position, Rotation,
/// Velocity, one field each), and nothing in it.
pub struct Bodies {
    /// The world.
    pub world: World,
    /// Transform, Position, Rotation, Velocity.
    pub components: [ComponentId; 4],
}

/// An empty world of the four body components, on one thread.
pub fn body_world() -> Bodies {
    let mut world = must(World::with_seed(1, 3));
    let transform = must(world.define(
        ComponentDef::new("Transform").field(FieldDef::transform("m", Transform::IDENTITY)),
    ));
    let [position, rotation, velocity] = ["Position", "Rotation", "Velocity"].map(|name| {
        must(world.define(ComponentDef::new(name).field(FieldDef::vector("v", Vec3::ZERO))))
    });
    Bodies {
        world,
        components: [transform, position, rotation, velocity],
    }
}

/// Creates `n` bodies one at a time, each given its four components by `give` (with the
/// components, the new body and the `i`-th values of [`data::body`]); returns the last one.
fn each_body(
    bodies: &mut Bodies,
    n: u64,
    mut give: impl FnMut(
        &mut World,
        [ComponentId; 4],
        InstanceId,
        (
            data::Transform,
            data::Position,
            data::Rotation,
            data::Velocity,
        ),
    ),
) -> Option<InstanceId> {
    let Bodies { world, components } = bodies;
    let mut last = None;
    for i in 0..n {
        let id = must(world.create(ClassId::ENTITY, None));
        give(world, *components, id, data::body(i));
        last = Some(black_box(id));
    }
    last
}

/// The routine of `world_spawn`: `n` bodies, one at a time, each created and given its four
/// components with the values of [`data::body`]; returns the last one.
pub fn spawn_each(bodies: &mut Bodies, n: u64) -> Option<InstanceId> {
    each_body(
        bodies,
        n,
        |world, [transform, position, rotation, velocity], id, (t, p, r, v)| {
            let t = Value::Transform(Box::new(Transform::from(t)));
            must(world.add(id, transform, [(FIRST, t)]));
            must(world.add(id, position, [(FIRST, Value::Vector(Vec3::from(p)))]));
            must(world.add(id, rotation, [(FIRST, Value::Vector(Vec3::from(r)))]));
            must(world.add(id, velocity, [(FIRST, Value::Vector(Vec3::from(v)))]));
        },
    )
}

fn world_spawn(n: u64) -> Workload {
    Workload::new(
        "world_spawn",
        n,
        "the work of spawn through strata::World: World::create, then World::add of each of the 4 components with its value (Value::Vector, Value::Transform); a fresh world per sample",
        move |b| b.iter_with_setup(body_world, move |bodies| spawn_each(bodies, n)),
    )
}

/// The routine of `world_insert`: the work of [`spawn_each`] through the typed add, each
/// component inserted and its one field set to the value of [`data::body`]; returns the last
/// body.
pub fn insert_each(bodies: &mut Bodies, n: u64) -> Option<InstanceId> {
    fn set<T: Scalar>(world: &mut World, id: InstanceId, component: ComponentId, value: T) {
        must(
            must(world.insert(id, component))
                .set(FIRST, value)
                .map(drop),
        );
    }
    each_body(
        bodies,
        n,
        |world, [transform, position, rotation, velocity], id, (t, p, r, v)| {
            set(world, id, transform, Transform::from(t));
            set(world, id, position, Vec3::from(p));
            set(world, id, rotation, Vec3::from(r));
            set(world, id, velocity, Vec3::from(v));
        },
    )
}

fn world_insert(n: u64) -> Workload {
    Workload::new(
        "world_insert",
        n,
        "the work of spawn through strata::World's typed add: World::create, then World::insert of each of the 4 components and Insert::set of its field; a fresh world per sample",
        move |b| b.iter_with_setup(body_world, move |bodies| insert_each(bodies, n)),
    )
}

/// A world of `n` movers (Position and Velocity), with their ids in creation order.
pub struct Movers {
    /// The world.
    pub world: World,
    /// The movers, in creation order.
    pub ids: Vec<InstanceId>,
    /// Position, Velocity.
    pub components: [ComponentId; 2],
}

/// Creates the `i`-th mover.
fn spawn_mover(world: &mut World, [position, velocity]: [ComponentId; 2], i: u64) -> InstanceId {
    let id = must(world.create(ClassId::ENTITY, None));
    let p = Value::Vector(Vec3::from(data::position(i)));
    let v = Value::Vector(Vec3::from(data::velocity(i)));
    must(world.add(id, position, [(FIRST, p)]));
    must(world.add(id, velocity, [(FIRST, v)]));
    id
}

/// The world of `world_despawn_respawn`: `n` movers, its bookkeeping settled by one step.
pub fn movers(n: u64) -> Movers {
    let mut world = must(World::with_seed(1, 3));
    let components = ["Position", "Velocity"].map(|name| {
        must(world.define(ComponentDef::new(name).field(FieldDef::vector("v", Vec3::ZERO))))
    });
    let ids = (0..n)
        .map(|i| spawn_mover(&mut world, components, i))
        .collect();
    must(world.step(0.0));
    Movers {
        world,
        ids,
        components,
    }
}

/// The routine of `world_despawn_respawn`: every other mover destroyed, one step that reclaims
/// them, then as many movers created with the values of the first; returns how many were
/// destroyed.
pub fn despawn_then_respawn(movers: &mut Movers) -> u64 {
    let Movers {
        world,
        ids,
        components,
    } = movers;
    let mut destroyed = 0;
    for id in ids.iter().step_by(2) {
        black_box(must(world.destroy(*id)));
        destroyed += 1;
    }
    must(world.step(0.0));
    for i in 0..destroyed {
        black_box(spawn_mover(world, *components, i));
    }
    destroyed
}

fn world_despawn_respawn(n: u64) -> Workload {
    Workload::new(
        "world_despawn_respawn",
        n,
        "the work of despawn_respawn through strata::World: World::destroy of every other mover, one World::step (the drain reclaims them), then World::create + World::add of Position and Velocity for as many; a fresh world per sample",
        move |b| b.iter_with_setup(move || movers(n), despawn_then_respawn),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn world_spawn_and_world_insert_give_every_body_its_four_values() {
        for routine in [spawn_each, insert_each] {
            let mut bodies = body_world();
            let last = routine(&mut bodies, 50);
            every_body_has_its_values(&bodies, last);
        }
    }

    fn every_body_has_its_values(bodies: &Bodies, last: Option<InstanceId>) {
        let Bodies { world, components } = bodies;
        let mut query = must(
            world.query(
                components
                    .iter()
                    .fold(QuerySpec::new(), |spec, c| spec.with(*c)),
            ),
        );
        let matched = must(world.matches(&mut query));
        assert_eq!(matched.len(), 50);
        assert_eq!(matched.last().copied(), last);
        for (i, id) in matched.iter().enumerate() {
            let (t, p, r, v) = data::body(i as u64);
            assert_eq!(
                must(world.get::<Transform>(*id, components[0], FIRST)),
                Transform::from(t)
            );
            for (c, want) in components[1..].iter().zip([p.into(), r.into(), v.into()]) {
                assert_eq!(must(world.get::<Vec3>(*id, *c, FIRST)), want);
            }
        }
    }

    #[test]
    fn world_despawn_respawn_replaces_every_other_mover() {
        let mut movers = movers(10);
        let before = movers.ids.clone();
        assert_eq!(despawn_then_respawn(&mut movers), 5);
        let Movers {
            world, components, ..
        } = &movers;
        for (k, id) in before.iter().enumerate() {
            assert_eq!(world.is_live(*id), k % 2 == 1, "mover {k}");
        }
        let mut query = must(world.query(QuerySpec::new().with(components[0]).with(components[1])));
        let matched = must(world.matches(&mut query));
        assert_eq!(matched.len(), 10);
        let fresh: Vec<InstanceId> = matched
            .into_iter()
            .filter(|id| !before.contains(id))
            .collect();
        assert_eq!(fresh.len(), 5);
        let mut positions: Vec<Vec3> = fresh
            .iter()
            .map(|id| must(world.get::<Vec3>(*id, components[0], FIRST)))
            .collect();
        positions.sort_by(|a, b| a.x.total_cmp(&b.x));
        let want: Vec<Vec3> = (0..5).map(|i| Vec3::from(data::position(i))).collect();
        assert_eq!(positions, want);
    }
}
