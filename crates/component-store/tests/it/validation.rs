//! One validation path for every write route: a value the field cannot hold is refused with a
//! typed error naming the field, and nothing changes.

use crate::common::World;
use strata_arena::ClassId;
use strata_component_store::{
    ComponentDef, ComponentHandle, FieldDef, FieldType, StoreError, Value,
};

fn mood() -> ComponentDef {
    ComponentDef::new("Mood")
        .field(FieldDef::enumeration("mood", &["Calm", "Angry"], "Calm"))
        .field(FieldDef::list(
            "moods",
            FieldType::Enum(["Calm".into(), "Angry".into()].into()),
        ))
        .observed(true)
}

fn out_of_range(found: &str) -> StoreError {
    StoreError::TypeMismatch {
        component: "Mood".into(),
        field: "mood".into(),
        expected: "enum(Calm|Angry)".into(),
        found: found.into(),
    }
}

#[test]
fn typed_writes_to_an_enum_field_check_the_variant_range() {
    let mut w = World::new();
    let c = w.install(mood());
    let mood = w.field(c, "mood");
    let e = w.spawn(ClassId::ENTITY);
    w.store.add(e, ClassId::ENTITY, c, []).unwrap();
    w.store.drain_events();
    let tick = w.store.tick();

    assert_eq!(
        w.store.write(e, c, mood, 2_u32),
        Err(out_of_range("enum variant 2")),
        "Store::write"
    );
    let handle = ComponentHandle::new(&w.store, e, c).unwrap();
    assert_eq!(
        handle.write(&mut w.store, mood, 9_u32),
        Err(out_of_range("enum variant 9")),
        "ComponentHandle::write"
    );
    {
        let mut writer = w.store.column_writer::<u32>(c, mood).unwrap();
        assert_eq!(
            writer.check(&2),
            Err(out_of_range("enum variant 2")),
            "ColumnWriter::check"
        );
        assert_eq!(writer.check(&1), Ok(()));
        assert_eq!(
            writer.write(0, 2),
            Err(out_of_range("enum variant 2")),
            "ColumnWriter::write"
        );
        // A pass whose results include one bad value stores none of them.
        assert_eq!(
            writer.update_indexed(2, |k| (0, k), |_, k| [1, 5][k]),
            Err(out_of_range("enum variant 5")),
            "ColumnWriter::update_indexed"
        );
        assert_eq!(
            writer.update_dense(&[()], |_, ()| u32::MAX),
            Err(out_of_range(&format!("enum variant {}", u32::MAX))),
            "ColumnWriter::update_dense"
        );
    }
    assert_eq!(*w.store.get::<u32>(e, c, mood).unwrap(), 0);
    assert_eq!(w.store.tick(), tick, "nothing changed");
    assert!(w.store.drain_events().is_empty());
    assert!(w.store.take_dirty(c).unwrap().is_empty());
    // The dynamic routes refuse it with the same error.
    assert_eq!(
        w.store.write_value(e, c, mood, Value::Enum(2)),
        Err(out_of_range("enum variant 2"))
    );
    assert_eq!(
        w.store.write_value_at(c, 0, mood, Value::Enum(2)),
        Err(out_of_range("enum variant 2"))
    );
    let other = w.spawn(ClassId::ENTITY);
    assert_eq!(
        w.store
            .add(other, ClassId::ENTITY, c, [(mood, Value::Enum(2))]),
        Err(out_of_range("enum variant 2"))
    );
}

#[test]
fn list_elements_are_checked_by_the_same_path_and_name_the_field() {
    let mut w = World::new();
    let c = w.install(mood());
    let moods = w.field(c, "moods");
    let e = w.spawn(ClassId::ENTITY);
    w.store.add(e, ClassId::ENTITY, c, []).unwrap();
    let mismatch = |found: &str| StoreError::TypeMismatch {
        component: "Mood".into(),
        field: "moods".into(),
        expected: "list(enum(Calm|Angry))".into(),
        found: found.into(),
    };
    let mut list = w.store.list_mut(e, c, moods).unwrap();
    assert_eq!(
        list.push(Value::Enum(2)),
        Err(mismatch("a list element of enum variant 2"))
    );
    assert_eq!(
        list.replace(vec![Value::Enum(0), Value::Boolean(true)]),
        Err(mismatch("a list element of boolean"))
    );
    assert_eq!(list.as_slice(), Ok(&[][..]));
}

#[test]
fn initialisers_check_the_variant_range_before_the_row_is_visible() {
    let mut w = World::new();
    let c = w.install(mood());
    let mood = w.field(c, "mood");
    let a = w.spawn(ClassId::ENTITY);
    let b = w.spawn(ClassId::ENTITY);

    let mut init = w.store.insert(a, ClassId::ENTITY, c).unwrap();
    assert_eq!(
        init.set(mood, 3_u32).err(),
        Some(out_of_range("enum variant 3")),
        "RowInit::set"
    );
    // The writer reports its row to observers when dropped, so it holds the store till then.
    drop(init);
    assert_eq!(*w.store.get::<u32>(a, c, mood).unwrap(), 0);

    let b2 = w.spawn(ClassId::ENTITY);
    let mut bulk = w.store.insert_many(&[b, b2], ClassId::ENTITY, c).unwrap();
    assert_eq!(
        bulk.fill::<u32>(mood, [1, 7]).err(),
        Some(out_of_range("enum variant 7")),
        "BulkInit::fill"
    );
    drop(bulk);
    assert_eq!(
        *w.store.get::<u32>(b, c, mood).unwrap(),
        0,
        "nothing filled"
    );
    assert_eq!(*w.store.get::<u32>(b2, c, mood).unwrap(), 0);
}

#[test]
fn refusals_name_components_and_fields_as_defined() {
    let mut w = World::new();
    let health = w.install(
        ComponentDef::new("Health")
            .field(FieldDef::number("current", 100.0))
            .field(FieldDef::reference(
                "attacker",
                strata_component_store::RefPolicy::Clear,
            )),
    );
    let attacker = w.field(health, "attacker");
    let hero = w.spawn(ClassId::ENTITY);
    let other = w.spawn(ClassId::ENTITY);
    w.store.add(hero, ClassId::ENTITY, health, []).unwrap();
    let messages = [
        w.store.row(other, health).unwrap_err(),
        w.store.add(hero, ClassId::ENTITY, health, []).unwrap_err(),
        w.store
            .column_mut::<Option<strata_arena::InstanceId>>(health, attacker)
            .err()
            .unwrap(),
        w.store
            .get_value(hero, health, strata_component_store::FieldId::from_index(7))
            .unwrap_err(),
        w.store
            .track_value_count(health, strata_component_store::FieldId::from_index(7), true)
            .unwrap_err(),
    ]
    .map(|error| {
        error
            .to_string()
            .replace(&other.id.to_string(), "OTHER")
            .replace(&hero.id.to_string(), "HERO")
    });
    assert_eq!(
        messages,
        [
            "instance OTHER does not hold component `Health`",
            "instance HERO already holds component `Health`",
            "field `Health.attacker` needs checked writes: use a column writer",
            "component `Health` has no field at position 7",
            "component `Health` has no field at position 7",
        ]
    );
}
