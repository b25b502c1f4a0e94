//! The typed add of the facade (`Scene::insert`, then `Insert::set`) stores what the dynamic
//! add (`Scene::add` with values) stores, reports it the same way, and refuses what it refuses,
//! changing nothing.

use strata::layers::store::StoreError;
use strata::prelude::*;

/// A world with `Body { position: vector, mass: number, tag: text }`, observed, and an
/// instance to give it to.
fn bodies() -> (World, ComponentId, [FieldId; 3], InstanceId) {
    let mut world = World::with_seed(1, 3).unwrap();
    let body = world
        .define(
            ComponentDef::new("Body")
                .field(FieldDef::vector("position", Vec3::default()))
                .field(FieldDef::number("mass", 1.0))
                .field(FieldDef::text("tag", "none"))
                .observed(true),
        )
        .unwrap();
    let fields = ["position", "mass", "tag"].map(|name| world.field(body, name).unwrap());
    let id = world.create(ClassId::PART, None).unwrap();
    (world, body, fields, id)
}

#[test]
fn a_typed_insert_stores_and_reports_what_a_dynamic_add_of_the_same_values_does() {
    let at = Vec3::new(1.0, -2.0, 3.5);
    let (mut added, body, [position, mass, _], id) = bodies();
    added
        .add(
            id,
            body,
            [(position, Value::Vector(at)), (mass, Value::Number(7.25))],
        )
        .unwrap();
    let (mut inserted, body_too, fields, id_too) = bodies();
    assert_eq!((body, id), (body_too, id_too));
    inserted
        .insert(id, body)
        .unwrap()
        .set(fields[0], at)
        .unwrap()
        .set(fields[1], 7.25)
        .unwrap();
    assert_eq!(inserted.get::<Vec3>(id, body, position).unwrap(), at);
    assert_eq!(inserted.get::<f64>(id, body, mass).unwrap(), 7.25);
    assert_eq!(
        inserted.get_value(id, body, fields[2]).unwrap(),
        Value::Text("none".into()),
        "a field not set keeps its default"
    );
    assert_eq!(inserted.state_hash(), added.state_hash());
    let events = added.step(1.0 / 60.0).unwrap().components.clone();
    assert_eq!(inserted.step(1.0 / 60.0).unwrap().components, events);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, StoreEvent::Added { id: i, component } if *i == id && *component == body)),
        "{events:?}"
    );
}

#[test]
fn a_refused_typed_insert_or_set_changes_nothing() {
    let (mut world, body, [position, mass, tag], id) = bodies();
    let dead = world.create(ClassId::PART, None).unwrap();
    world.destroy(dead).unwrap();
    let before = world.state_hash();
    assert!(matches!(
        world.insert(dead, body).err(),
        Some(WorldError::NotLive(i)) if i == dead
    ));
    assert_eq!(world.state_hash(), before, "a refused insert adds nothing");

    let mut row = world.insert(id, body).unwrap();
    // A number into a vector field, a field the component lacks: refused, nothing stored.
    assert!(row.set(position, 2.0).is_err());
    assert!(row.set(FieldId::from_index(9), 2.0).is_err());
    row.set(mass, 3.0).unwrap();
    drop(row);
    assert_eq!(
        world.get::<Vec3>(id, body, position).unwrap(),
        Vec3::default()
    );
    assert_eq!(world.get::<f64>(id, body, mass).unwrap(), 3.0);
    assert!(world.has(id, body));

    let held = world.state_hash();
    let again = world.insert(id, body).err();
    assert!(
        matches!(
            again,
            Some(WorldError::Store(StoreError::AlreadyPresent { .. }))
        ),
        "{again:?}"
    );
    assert_eq!(world.state_hash(), held, "a second insert changes nothing");
    assert_eq!(
        world.get_value(id, body, tag).unwrap(),
        Value::Text("none".into())
    );
}
