//! Fixtures shared by the facade's integration tests.

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

/// What a world holds, change ticks, counters and GUIDs aside: every live instance (id, class,
/// parent, data, tags) and every row's values, in id order. Two runs that did the same things
/// in another order (so with other ticks), or in worlds of other seeds, compare equal by it.
pub fn content(world: &World) -> String {
    let mut out = String::new();
    for node in world.arena_image().nodes {
        out.push_str(&format!(
            "{} {} {:?} {:?} {:?}\n",
            node.id, node.class, node.parent, node.data, node.tags
        ));
    }
    for set in world.store().components() {
        let mut rows: Vec<usize> = (0..set.len()).collect();
        rows.sort_by_key(|row| set.ids()[*row]);
        for row in rows {
            let values: Vec<String> = (0..set.def().fields().len())
                .map(|f| format!("{:?}", set.value(row, FieldId::from_index(f as u16))))
                .collect();
            out.push_str(&format!(
                "{} {} {values:?}\n",
                set.def().name(),
                set.ids()[row]
            ));
        }
    }
    out
}
