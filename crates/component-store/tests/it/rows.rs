//! Sparse membership, dense rows, swap-removal, typed and dynamic access, field types.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::common::World;
use strata_arena::{ClassId, InstanceId, Transform, Vec3};
use strata_component_store::{
    ComponentDef, FieldDef, FieldType, FormerNameConflict, InstanceRef, ListValue, MapKey,
    StoreError, StructField, Value,
};

fn scores() -> ComponentDef {
    ComponentDef::new("Score")
        .field(FieldDef::integer("points", 0))
        .field(FieldDef::text("label", "none"))
}

#[test]
fn removing_the_last_row_leaves_its_slot_absent() {
    let mut w = World::new();
    let score = w.install(scores());
    let a = w.spawn(ClassId::ENTITY);
    let b = w.spawn(ClassId::ENTITY);
    w.store.add(a, ClassId::ENTITY, score, []).unwrap();
    w.store.add(b, ClassId::ENTITY, score, []).unwrap();
    assert_eq!(w.store.row(b, score).unwrap(), 1);
    assert!(w.store.remove(b, score).unwrap());
    assert!(!w.store.has(b, score));
    assert_eq!(
        w.store.row(b, score).unwrap_err(),
        StoreError::MissingMembership {
            id: b.id,
            component: score,
            component_name: "Score".into(),
        }
    );
    assert_eq!(w.store.row(a, score).unwrap(), 0);
    // Removing the only row as well.
    assert!(w.store.remove(a, score).unwrap());
    assert!(w.store.set(score).unwrap().is_empty());
    assert!(!w.store.has(a, score));
    assert!(!w.store.remove(a, score).unwrap(), "absent is not an error");
}

#[test]
fn swap_remove_moves_the_last_row_and_repairs_its_sparse_entry() {
    let mut w = World::new();
    let score = w.install(scores());
    let points = w.field(score, "points");
    let members: Vec<InstanceRef> = (0..5).map(|_| w.spawn(ClassId::ENTITY)).collect();
    for (i, m) in members.iter().enumerate() {
        w.store
            .add(
                *m,
                ClassId::ENTITY,
                score,
                [(points, Value::Integer(i as i64))],
            )
            .unwrap();
    }
    w.store.remove(members[1], score).unwrap();
    let set = w.store.set(score).unwrap();
    assert_eq!(
        set.ids(),
        &[members[0].id, members[4].id, members[2].id, members[3].id]
    );
    assert_eq!(
        set.row_of(members[4]),
        Some(1),
        "the moved row is found at its new position"
    );
    assert_eq!(*w.store.get::<i64>(members[4], score, points).unwrap(), 4);
    for (i, m) in members.iter().enumerate().filter(|(i, _)| *i != 1) {
        assert_eq!(*w.store.get::<i64>(*m, score, points).unwrap(), i as i64);
    }
}

#[test]
fn a_reused_slot_never_resolves_to_the_previous_instance_s_row() {
    let mut w = World::new();
    let score = w.install(scores());
    let old = w.spawn(ClassId::ENTITY);
    w.store.add(old, ClassId::ENTITY, score, []).unwrap();
    // Simulate an owner that never reported the destruction: the row stays behind.
    w.arena.destroy(old.id).unwrap();
    w.arena.drain().unwrap();
    w.arena.drain().unwrap();
    let new = w.spawn(ClassId::ENTITY);
    assert_eq!(new.slot, old.slot);
    assert!(
        !w.store.has(new, score),
        "the old row belongs to the old id"
    );
    // Adding refuses to evict the stale row; the arena's owner evicts it explicitly.
    assert_eq!(
        w.store.add(new, ClassId::ENTITY, score, []),
        Err(StoreError::SlotOccupied {
            slot: new.slot,
            holder: old.id,
            component: score,
            component_name: "Score".into(),
        })
    );
    assert!(w.store.has(old, score), "the refused add changed nothing");
    assert_eq!(w.store.evict_stale(new), vec![(old.id, score)]);
    w.store.add(new, ClassId::ENTITY, score, []).unwrap();
    assert!(w.store.has(new, score));
    assert!(!w.store.has(old, score));
    assert_eq!(w.store.set(score).unwrap().len(), 1);
}

#[test]
fn evicting_a_stale_row_on_request_is_a_full_removal() {
    let mut w = World::new();
    let base = w.install(ComponentDef::new("Base").observed(true));
    let extra = w.install(ComponentDef::new("Extra").requires(&["Base"]));
    let old = w.spawn(ClassId::ENTITY);
    w.store.add(old, ClassId::ENTITY, base, []).unwrap();
    w.store.add(old, ClassId::ENTITY, extra, []).unwrap();
    w.store.drain_events();
    // The destruction is never reported to the store.
    w.arena.destroy(old.id).unwrap();
    w.arena.drain().unwrap();
    w.arena.drain().unwrap();
    let new = w.spawn(ClassId::ENTITY);
    assert!(w.store.add(new, ClassId::ENTITY, base, []).is_err());
    assert!(
        w.store.drain_events().is_empty(),
        "a refused add changes nothing"
    );
    let mut evicted = w.store.evict_stale(new);
    evicted.sort();
    assert_eq!(evicted, vec![(old.id, base), (old.id, extra)]);
    assert!(
        !w.store.has(old, extra),
        "dependents of the evicted row go too"
    );
    assert!(w.store.evict_stale(new).is_empty(), "nothing left to evict");
    w.store.add(new, ClassId::ENTITY, base, []).unwrap();
    assert_eq!(
        w.store.drain_events(),
        vec![
            strata_component_store::StoreEvent::Removed {
                id: old.id,
                component: base
            },
            strata_component_store::StoreEvent::Added {
                id: new.id,
                component: base
            },
        ]
    );
}

#[test]
fn adds_validate_before_storing() {
    let mut w = World::new();
    let score = w.install(scores().classes(&["Part"]));
    let points = w.field(score, "points");
    let part = w.spawn(ClassId::PART);
    let entity = w.spawn(ClassId::ENTITY);
    let tick = w.store.tick();
    assert!(matches!(
        w.store.add(entity, ClassId::ENTITY, score, []),
        Err(StoreError::ClassNotAllowed { .. })
    ));
    assert!(matches!(
        w.store.add(
            part,
            ClassId::PART,
            score,
            [(points, Value::Text("x".into()))]
        ),
        Err(StoreError::TypeMismatch { .. })
    ));
    assert!(matches!(
        w.store.add(
            part,
            ClassId::PART,
            score,
            [(
                strata_component_store::FieldId::from_index(9),
                Value::Integer(1)
            )]
        ),
        Err(StoreError::FieldOutOfRange { .. })
    ));
    assert_eq!(w.store.tick(), tick);
    assert!(w.store.set(score).unwrap().is_empty());
    w.store.add(part, ClassId::PART, score, []).unwrap();
    assert!(matches!(
        w.store.add(part, ClassId::PART, score, []),
        Err(StoreError::AlreadyPresent { .. })
    ));
}

/// The field and type checks other layers share with the store: the same errors the store's
/// own typed and dynamic accessors return.
#[test]
fn definitions_check_fields_values_and_scalar_types() {
    let mut w = World::new();
    let score = w.install(scores());
    let points = w.field(score, "points");
    let missing = strata_component_store::FieldId::from_index(9);
    let def = w.store.def(score).unwrap();

    assert_eq!(def.checked_field(points).unwrap().name.as_ref(), "points");
    let out_of_range = StoreError::FieldOutOfRange {
        component: "Score".into(),
        field: missing,
    };
    assert_eq!(def.checked_field(missing).unwrap_err(), out_of_range);
    assert_eq!(
        def.check_value(missing, &Value::Integer(1)).unwrap_err(),
        out_of_range
    );
    assert_eq!(def.check_scalar::<i64>(missing).unwrap_err(), out_of_range);

    assert!(def.check_value(points, &Value::Integer(3)).is_ok());
    let text_in_points = def.check_value(points, &Value::Text("x".into()));
    assert_eq!(
        text_in_points.unwrap_err(),
        StoreError::TypeMismatch {
            component: "Score".into(),
            field: "points".into(),
            expected: "integer".into(),
            found: "text".into(),
        }
    );

    assert!(def.check_scalar::<i64>(points).is_ok());
    assert_eq!(
        def.check_scalar::<f64>(points).unwrap_err(),
        StoreError::TypeMismatch {
            component: "Score".into(),
            field: "points".into(),
            expected: "integer".into(),
            found: "f64".into(),
        }
    );

    // The set's typed slice and the store's typed accessors refuse with the same errors.
    let e = w.spawn(ClassId::ENTITY);
    w.store.add(e, ClassId::ENTITY, score, []).unwrap();
    let set = w.store.set(score).unwrap();
    assert_eq!(set.checked_values::<i64>(points).unwrap(), &[0]);
    let def = w.store.def(score).unwrap();
    assert_eq!(
        set.checked_values::<f64>(points).unwrap_err(),
        def.check_scalar::<f64>(points).unwrap_err()
    );
    assert_eq!(
        w.store.get::<f64>(e, score, points).unwrap_err(),
        def.check_scalar::<f64>(points).unwrap_err()
    );
    assert_eq!(
        w.store.get_value(e, score, missing).unwrap_err(),
        out_of_range
    );
}

#[test]
fn every_field_type_has_a_column_and_a_default() {
    let mut w = World::new();
    let kitchen = w.install(
        ComponentDef::new("Kitchen")
            .field(FieldDef::number("n", 1.5))
            .field(FieldDef::integer("i", -3))
            .field(FieldDef::boolean("b", true))
            .field(FieldDef::text("t", "hi"))
            .field(FieldDef::enumeration("e", &["Calm", "Angry"], "Angry"))
            .field(FieldDef::vector("v", Vec3::new(1.0, 2.0, 3.0)))
            .field(FieldDef::transform(
                "x",
                Transform::from_position(Vec3::ONE),
            ))
            .field(FieldDef::reference("r", Default::default()))
            .field(FieldDef::list("l", FieldType::Vector))
            .field(FieldDef::map("m", FieldType::Text, FieldType::Integer))
            .field(FieldDef::structure(
                "s",
                vec![StructField {
                    name: "a".into(),
                    ty: FieldType::Number,
                    default: Value::Number(2.0),
                }],
            ))
            .field(FieldDef::optional("o", FieldType::Number))
            .field(FieldDef::buffer("buf")),
    );
    let e = w.spawn(ClassId::ENTITY);
    w.store.add(e, ClassId::ENTITY, kitchen, []).unwrap();
    let get = |name: &str| {
        w.store
            .get_value(e, kitchen, w.field(kitchen, name))
            .unwrap()
    };
    assert_eq!(get("n"), Value::Number(1.5));
    assert_eq!(get("i"), Value::Integer(-3));
    assert_eq!(get("b"), Value::Boolean(true));
    assert_eq!(get("t"), Value::Text("hi".into()));
    assert_eq!(get("e"), Value::Enum(1));
    assert_eq!(get("v"), Value::Vector(Vec3::new(1.0, 2.0, 3.0)));
    assert_eq!(
        get("x"),
        Value::Transform(Box::new(Transform::from_position(Vec3::ONE)))
    );
    assert_eq!(get("r"), Value::Reference(None));
    assert_eq!(get("l"), Value::List(ListValue::EMPTY));
    assert_eq!(get("m"), Value::Map(Arc::default()));
    assert_eq!(get("s"), Value::Struct(vec![Value::Number(2.0)].into()));
    assert_eq!(get("o"), Value::Optional(None));
    assert_eq!(get("buf"), Value::Buffer(Arc::from(Vec::new())));

    // Typed access without boxing for the primitive kinds.
    assert_eq!(
        *w.store
            .get::<f64>(e, kitchen, w.field(kitchen, "n"))
            .unwrap(),
        1.5
    );
    assert_eq!(
        *w.store
            .get::<u32>(e, kitchen, w.field(kitchen, "e"))
            .unwrap(),
        1
    );
    assert_eq!(
        w.store
            .get::<Vec3>(e, kitchen, w.field(kitchen, "v"))
            .unwrap()
            .z,
        3.0
    );
    assert!(matches!(
        w.store.get::<i64>(e, kitchen, w.field(kitchen, "n")),
        Err(StoreError::TypeMismatch { .. })
    ));

    // Compound values are checked deeply.
    let map_field = w.field(kitchen, "m");
    let good: BTreeMap<MapKey, Value> = [(MapKey::Text("a".into()), Value::Integer(1))].into();
    assert!(
        w.store
            .write_value(e, kitchen, map_field, Value::Map(Arc::new(good)))
            .unwrap()
    );
    let bad: BTreeMap<MapKey, Value> = [(MapKey::Integer(1), Value::Integer(1))].into();
    assert!(matches!(
        w.store
            .write_value(e, kitchen, map_field, Value::Map(Arc::new(bad))),
        Err(StoreError::TypeMismatch { .. })
    ));
    let enum_field = w.field(kitchen, "e");
    assert!(
        w.store
            .write_value(e, kitchen, enum_field, Value::Enum(2))
            .is_err(),
        "no third variant"
    );
}

#[test]
fn malformed_definitions_are_refused() {
    let mut w = World::new();
    let classes = w.arena.classes().clone();
    let refuse = |def: ComponentDef| {
        let mut store = strata_component_store::Store::new();
        match store.install(def, &classes) {
            Err(StoreError::InvalidDefinition { reason, .. }) => reason,
            Err(StoreError::FormerNames { conflict, .. }) => conflict.to_string(),
            other => panic!("expected a refusal, got {other:?}"),
        }
    };
    insta::assert_snapshot!(
        [
            refuse(ComponentDef::new("A").field(FieldDef::number("x", 0.0)).field(FieldDef::integer("x", 0))),
            refuse(ComponentDef::new("A").field(FieldDef::new("x", FieldType::Number, Value::Integer(1)))),
            refuse(ComponentDef::new("A").field(FieldDef::enumeration("e", &["A"], "B"))),
            refuse(ComponentDef::new("A").field(FieldDef::map("m", FieldType::Vector, FieldType::Number))),
            refuse(ComponentDef::new("A").field(FieldDef::number("x", 0.0).on_destroy(strata_component_store::RefPolicy::DestroyHolder))),
            refuse(ComponentDef::new("A").field(FieldDef::number("x", 0.0).former_names(&["y"])).field(FieldDef::number("y", 0.0))),
            refuse(ComponentDef::new("A").classes(&["Spaceship"])),
        ]
        .join("\n"),
        @r"
    field `x` is declared twice
    field `x`: default integer does not fit type number
    field `e`: default enum does not fit type enum(A)
    field `m`: vector cannot be a map key
    field `x`: a destruction policy needs a reference field
    field `x` names `y` as a former name, but `y` is a current field; its saved value belongs to `y`
    unknown class `Spaceship`
    "
    );
    let ok = w.install(scores());
    assert!(matches!(
        w.store.install(scores(), w.arena.classes()),
        Err(StoreError::DuplicateComponent(_))
    ));
    assert_eq!(w.store.component("Score"), Some(ok));
}

#[test]
fn stale_instance_refs_are_missing_not_someone_else() {
    let mut w = World::new();
    let score = w.install(scores());
    let a = w.spawn(ClassId::ENTITY);
    w.store.add(a, ClassId::ENTITY, score, []).unwrap();
    let forged = InstanceRef::new(InstanceId::new(999).unwrap(), a.slot);
    assert!(!w.store.has(forged, score));
    assert!(matches!(
        w.store.get_value(forged, score, w.field(score, "points")),
        Err(StoreError::MissingMembership { .. })
    ));
}

#[test]
fn insert_many_adds_rows_in_bulk_with_one_tick() {
    let mut w = World::new();
    let score = w.install(
        scores()
            .field(FieldDef::reference("rival", Default::default()))
            .observed(true),
    );
    let (points, rival) = (w.field(score, "points"), w.field(score, "rival"));
    let made = w.arena.create_many(ClassId::ENTITY, None, 100).unwrap();
    let ats: Vec<InstanceRef> = made
        .iter()
        .map(|(id, slot)| InstanceRef::new(*id, *slot))
        .collect();
    let tick = w.store.tick();
    let target = ats[0].id;
    {
        let mut init = w.store.insert_many(&ats, ClassId::ENTITY, score).unwrap();
        assert_eq!(init.rows(), 0..100);
        init.fill(points, 0..100i64).unwrap();
        init.fill(rival, std::iter::repeat_n(Some(target), 100))
            .unwrap();
    }
    assert_eq!(w.store.tick().0, tick.0 + 1);
    for (i, at) in ats.iter().enumerate() {
        assert_eq!(*w.store.get::<i64>(*at, score, points).unwrap(), i as i64);
        assert_eq!(
            w.store
                .get_value(*at, score, w.field(score, "label"))
                .unwrap(),
            Value::Text("none".into())
        );
    }
    assert_eq!(w.store.set(score).unwrap().references_to(target).len(), 100);
    assert_eq!(w.store.drain_events().len(), 100, "one Added per row");

    // Refusals change nothing.
    let more = w.arena.create_many(ClassId::ENTITY, None, 2).unwrap();
    let twice = [
        InstanceRef::new(more[0].0, more[0].1),
        InstanceRef::new(more[0].0, more[0].1),
    ];
    assert!(matches!(
        w.store.insert_many(&twice, ClassId::ENTITY, score),
        Err(StoreError::DuplicateSlot(_))
    ));
    assert!(matches!(
        w.store.insert_many(
            &[InstanceRef::new(more[1].0, more[1].1), ats[5]],
            ClassId::ENTITY,
            score
        ),
        Err(StoreError::AlreadyPresent { .. })
    ));
    assert_eq!(w.store.set(score).unwrap().len(), 100);
    assert_eq!(w.store.tick().0, tick.0 + 1);
}

#[test]
fn a_definition_whose_fields_share_a_former_name_is_refused() {
    // A saved value of `old` could go to either field: the definition is ambiguous, whether it
    // comes from a schema or is built in Rust, and neither install nor redefine takes it.
    let mut w = World::new();
    let shared = || {
        ComponentDef::new("Stats")
            .field(FieldDef::number("a", 0.0).former_names(&["old"]))
            .field(FieldDef::number("b", 0.0).former_names(&["x", "old"]))
    };
    let refusal = Err(StoreError::FormerNames {
        component: "Stats".into(),
        conflict: FormerNameConflict::Shared {
            first: "a".into(),
            second: "b".into(),
            former: "old".into(),
        },
    });
    let message = "fields `a` and `b` both name `old` as a former name; a saved value can go to one field only";
    let source = refusal
        .as_ref()
        .err()
        .and_then(|e| std::error::Error::source(e))
        .map(ToString::to_string);
    assert_eq!(
        source.as_deref(),
        Some(message),
        "the conflict is the refusal's source"
    );
    assert_eq!(w.store.install(shared(), w.arena.classes()), refusal);
    let stats = w.install(ComponentDef::new("Stats").field(FieldDef::number("old", 0.0)));
    let revision = w.store.name_revision();
    assert_eq!(
        w.store
            .redefine(stats, shared(), w.arena.classes(), Vec::new()),
        refusal.map(|_| ())
    );
    assert_eq!(w.store.name_revision(), revision);
    assert!(w.store.field(stats, "old").is_ok(), "the definition stays");
}
