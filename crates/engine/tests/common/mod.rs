//! Fixtures shared by the facade's integration tests.

#![allow(
    dead_code,
    reason = "each test binary uses a different subset of the fixtures"
)]

use strata::prelude::*;

/// A world on `threads` threads with `Health { current: number(100) }` (observed) and
/// `Velocity { v: vector }`.
pub struct Fixture {
    pub world: World,
    pub health: ComponentId,
    pub current: FieldId,
    pub velocity: ComponentId,
    pub v: FieldId,
}

pub fn fixture(threads: usize) -> Fixture {
    let mut world = World::with_threads(threads).unwrap();
    let health = world
        .define(
            ComponentDef::new("Health")
                .field(FieldDef::number("current", 100.0))
                .observed(true),
        )
        .unwrap();
    let current = world.field(health, "current").unwrap();
    let velocity = world
        .define(ComponentDef::new("Velocity").field(FieldDef::vector("v", Vec3::ZERO)))
        .unwrap();
    let v = world.field(velocity, "v").unwrap();
    Fixture {
        world,
        health,
        current,
        velocity,
        v,
    }
}

/// `n` parts in the workspace, each with `Health` at `100 + k`.
pub fn parts(f: &mut Fixture, n: usize) -> Vec<InstanceId> {
    let workspace = f.world.workspace();
    (0..n)
        .map(|k| {
            let id = f.world.create(ClassId::PART, Some(workspace)).unwrap();
            f.world
                .add(id, f.health, [(f.current, Value::Number(100.0 + k as f64))])
                .unwrap();
            id
        })
        .collect()
}
