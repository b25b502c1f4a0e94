//! Defaults of staged spawns: every new row starts from the definition's default values, and
//! no row shares mutable state with another (Strata's defaults are values, not factories; a
//! list default is a copy-on-write buffer, so each row's list is its own once written).

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly on purpose")]

mod common;

use common::World;
use strata_arena::{ClassId, Vec3};
use strata_component_store::{
    ComponentDef, FieldDef, FieldType, InstanceRef, ListValue, Stage, StoreError, Value,
};

fn v(x: f32) -> Value {
    Value::Vector(Vec3::new(x, 0.0, 0.0))
}

#[test]
fn each_spawned_row_owns_its_default_list() {
    let mut w = World::new();
    let path = w.install(
        ComponentDef::new("Path")
            .field(FieldDef::list("waypoints", FieldType::Vector))
            .field(FieldDef::number("speed", 3.0)),
    );
    let waypoints = w.field(path, "waypoints");
    let speed = w.field(path, "speed");
    let mut stage = Stage::new(&w.arena, &w.store);
    let ticket = stage
        .spawn(
            &mut w.arena,
            3,
            ClassId::ENTITY,
            None,
            &[path],
            move |rows| {
                // The initializer sees every row at its default before it writes.
                assert!(
                    rows.column_mut::<f64>(path, speed)?
                        .iter()
                        .all(|s| *s == 3.0)
                );
                rows.set_value(
                    path,
                    1,
                    waypoints,
                    Value::List(ListValue::from_vec(vec![v(9.0)])),
                )?;
                Ok::<(), StoreError>(())
            },
        )
        .unwrap();
    stage.commit(&mut w.arena, &mut w.store).unwrap();
    let at = |k: usize| InstanceRef::of(&w.arena, ticket.id(k).unwrap()).unwrap();
    let (a, b, c) = (at(0), at(1), at(2));
    w.store
        .list_mut(a, path, waypoints)
        .unwrap()
        .push(v(1.0))
        .unwrap();
    assert_eq!(w.store.list(a, path, waypoints).unwrap(), &[v(1.0)]);
    assert_eq!(w.store.list(b, path, waypoints).unwrap(), &[v(9.0)]);
    assert!(w.store.list(c, path, waypoints).unwrap().is_empty());
    for at in [a, b, c] {
        assert_eq!(*w.store.get::<f64>(at, path, speed).unwrap(), 3.0);
    }
}
