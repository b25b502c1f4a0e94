//! Writes carry the definition they were recorded against: a redefinition between the join and
//! the commit refuses them rather than sending them to whatever field now has their position.

use strata_arena::{Arena, ClassId};
use strata_component_store::{
    ComponentDef, FieldDef, InstanceRef, RefPolicy, Store, StoreError, Value,
};
use strata_parallel_overlay::{NoOrder, Overlay, WriterRank, commit};

fn pair(order: [&str; 4]) -> ComponentDef {
    order
        .into_iter()
        .fold(ComponentDef::new("Pair"), |def, name| {
            def.field(match name {
                "x" | "y" => FieldDef::integer(name, 0),
                _ => FieldDef::reference(name, RefPolicy::Clear),
            })
        })
}

#[test]
fn writes_recorded_against_a_replaced_definition_are_refused_and_write_nothing() {
    let mut arena = Arena::standard();
    let mut store = Store::new();
    let c = store
        .install(pair(["x", "y", "p", "q"]), arena.classes())
        .unwrap();
    let spawn = |arena: &mut Arena| {
        let id = arena.create(ClassId::ENTITY, None).unwrap();
        InstanceRef::new(id, arena.slot_of(id).unwrap())
    };
    let (holder, target, other) = (spawn(&mut arena), spawn(&mut arena), spawn(&mut arena));
    store.add(holder, ClassId::ENTITY, c, []).unwrap();
    let x = store.field(c, "x").unwrap();
    let p = store.field(c, "p").unwrap();
    let untouched = store.field(c, "y").unwrap();
    store.write::<i64>(holder, c, untouched, 2).unwrap();

    // A writer records x = 10 and p = target, and an unrelated write to another component.
    let other_c = store
        .install(
            ComponentDef::new("Score").field(FieldDef::integer("n", 0)),
            arena.classes(),
        )
        .unwrap();
    store.add(other, ClassId::ENTITY, other_c, []).unwrap();
    let n = store.field(other_c, "n").unwrap();
    let mut writer = Overlay::new(WriterRank::system(0, 1), &store);
    writer.set(holder, c, x, 10i64).unwrap();
    writer
        .write(holder, c, p, Value::Reference(Some(target.id)))
        .unwrap();
    writer.set(other, other_c, n, 5i64).unwrap();
    let set = writer.finish();

    // Between the join and the commit, the definition is replaced with its fields reordered:
    // x's position now names y, p's names q (same types).
    store
        .redefine(
            c,
            pair(["y", "x", "q", "p"]),
            arena.classes(),
            vec![(
                holder,
                vec![
                    Value::Integer(2),
                    Value::Integer(0),
                    Value::Reference(None),
                    Value::Reference(None),
                ],
            )],
        )
        .unwrap();
    let tick = store.tick();
    let report = commit(&mut store, vec![set], &NoOrder);

    let stale = |component| StoreError::StaleDefinition {
        component,
        component_name: "Pair".into(),
    };
    let refused: Vec<_> = report
        .refusals
        .iter()
        .map(|r| (r.instance, r.component, r.field, r.error.clone()))
        .collect();
    assert_eq!(
        refused,
        vec![(holder.id, c, x, stale(c)), (holder.id, c, p, stale(c)),]
    );
    assert_eq!(
        report.applied, 1,
        "the other component's write still applies"
    );
    assert_eq!(*store.get::<i64>(other, other_c, n).unwrap(), 5);
    for name in ["x", "y"] {
        let field = store.field(c, name).unwrap();
        let expected = if name == "y" { 2 } else { 0 };
        assert_eq!(
            *store.get::<i64>(holder, c, field).unwrap(),
            expected,
            "{name}"
        );
    }
    for name in ["p", "q"] {
        let field = store.field(c, name).unwrap();
        assert_eq!(
            store.get_value(holder, c, field).unwrap(),
            Value::Reference(None),
            "{name}"
        );
    }
    assert_eq!(
        store.tick().0,
        tick.0 + 1,
        "one tick, for the other write only"
    );
}
