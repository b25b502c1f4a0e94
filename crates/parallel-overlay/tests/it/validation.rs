//! The overlay's writes meet the store's one validation path: a value the field cannot hold is
//! refused at commit with the store's typed error, and a type mismatch names the field.

use strata_arena::{Arena, ClassId};
use strata_component_store::{ComponentDef, FieldDef, InstanceRef, Store, StoreError, Value};
use strata_parallel_overlay::{NoOrder, Overlay, OverlayError, WriterRank, commit};

fn moods() -> (Store, InstanceRef) {
    let mut arena = Arena::standard();
    let mut store = Store::new();
    let mood = store
        .install(
            ComponentDef::new("Mood")
                .field(FieldDef::enumeration("mood", &["Calm", "Angry"], "Calm"))
                .field(FieldDef::integer("n", 0)),
            arena.classes(),
        )
        .unwrap();
    let id = arena.create(ClassId::ENTITY, None).unwrap();
    let at = InstanceRef::of(&arena, id).unwrap();
    store.add(at, ClassId::ENTITY, mood, []).unwrap();
    (store, at)
}

#[test]
fn an_enum_index_past_the_variants_is_refused_at_commit() {
    let (mut store, at) = moods();
    let mood = store.component("Mood").unwrap();
    let field = store.field(mood, "mood").unwrap();
    let tick = store.tick();
    let mut overlay = Overlay::new(WriterRank::system(0, 1), &store);
    overlay
        .column::<u32>(mood, field)
        .unwrap()
        .write(0, 7)
        .unwrap();
    let set = overlay.finish();
    let report = commit(&mut store, vec![set], &NoOrder);
    assert_eq!(*store.get::<u32>(at, mood, field).unwrap(), 0, "not stored");
    assert_eq!(store.tick(), tick, "nothing changed");
    assert_eq!(report.applied, 0);
    assert_eq!(report.refusals.len(), 1, "{report:?}");
    assert_eq!(
        report.refusals[0].error,
        StoreError::TypeMismatch {
            component: "Mood".into(),
            field: "mood".into(),
            expected: "enum(Calm|Angry)".into(),
            found: "enum variant 7".into(),
        }
    );
}

#[test]
fn a_typed_read_of_a_recorded_write_names_the_field_on_mismatch() {
    let (store, at) = moods();
    let mood = store.component("Mood").unwrap();
    let n = store.field(mood, "n").unwrap();
    let mut overlay = Overlay::new(WriterRank::system(0, 1), &store);
    overlay.write(at, mood, n, Value::Integer(3)).unwrap();
    assert_eq!(
        overlay.get::<f64>(at, mood, n),
        Err(OverlayError::Store(StoreError::TypeMismatch {
            component: "Mood".into(),
            field: "n".into(),
            expected: "integer".into(),
            found: "f64".into(),
        }))
    );
}

#[test]
fn a_refused_write_gets_the_store_s_own_error() {
    // Recording checks a value exactly as the store's dynamic write does, with the same error,
    // and records nothing.
    let (mut store, at) = moods();
    let mood = store.component("Mood").unwrap();
    let field = store.field(mood, "mood").unwrap();
    let n = store.field(mood, "n").unwrap();
    for (field, value) in [
        (field, Value::Enum(7)),
        (field, Value::Integer(1)),
        (n, Value::Number(1.5)),
    ] {
        let expected = store
            .write_value(at, mood, field, value.clone())
            .unwrap_err();
        let mut overlay = Overlay::new(WriterRank::system(0, 1), &store);
        assert_eq!(
            overlay.write(at, mood, field, value.clone()),
            Err(OverlayError::Store(expected.clone())),
            "{value:?}"
        );
        assert_eq!(
            overlay.write_row(mood, 0, field, value.clone()),
            Err(OverlayError::Store(expected)),
            "{value:?}"
        );
        assert!(overlay.is_empty());
    }
}

/// The commit compares numbers bit for bit, as the store's other write routes do: `-0.0` over
/// `0.0` is applied, a NaN over the same NaN is unchanged and takes no tick.
#[test]
fn the_commit_compares_numbers_bit_for_bit() {
    let mut arena = Arena::standard();
    let mut store = Store::new();
    let heat = store
        .install(
            ComponentDef::new("Heat").field(FieldDef::number("t", 0.0)),
            arena.classes(),
        )
        .unwrap();
    let t = store.field(heat, "t").unwrap();
    let id = arena.create(ClassId::ENTITY, None).unwrap();
    let at = InstanceRef::of(&arena, id).unwrap();
    store.add(at, ClassId::ENTITY, heat, []).unwrap();
    let write = |store: &mut Store, value: f64| {
        let mut overlay = Overlay::new(WriterRank::system(0, 1), store);
        overlay.set(at, heat, t, value).unwrap();
        let set = overlay.finish();
        commit(store, vec![set], &NoOrder)
    };
    let report = write(&mut store, -0.0);
    assert_eq!((report.applied, report.unchanged), (1, 0));
    assert!(store.get::<f64>(at, heat, t).unwrap().is_sign_negative());
    let report = write(&mut store, f64::NAN);
    assert_eq!((report.applied, report.unchanged), (1, 0));
    let tick = store.tick();
    let report = write(&mut store, f64::NAN);
    assert_eq!((report.applied, report.unchanged), (0, 1));
    assert_eq!(store.tick(), tick);
}
