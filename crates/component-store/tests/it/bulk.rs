//! Bulk operations: an empty call changes nothing, and a refused call changes nothing either.

use crate::common::World;
use strata_arena::ClassId;
use strata_component_store::{ComponentDef, FieldDef, StoreError};

fn score() -> ComponentDef {
    ComponentDef::new("Score")
        .field(FieldDef::integer("points", 0))
        .observed(true)
}

#[test]
fn an_empty_insert_many_changes_nothing() {
    let mut w = World::new();
    let score = w.install(score());
    let points = w.field(score, "points");
    let e = w.spawn(ClassId::ENTITY);
    w.store.add(e, ClassId::ENTITY, score, []).unwrap();
    w.store.drain_events();
    let snapshot = w.store.snapshot();
    let tick = w.store.tick();
    let revision = w.store.set(score).unwrap().structural_revision();

    let mut init = w.store.insert_many(&[], ClassId::ENTITY, score).unwrap();
    assert!(init.rows().is_empty());
    init.fill::<i64>(points, [5]).unwrap();
    assert!(
        matches!(
            init.fill::<f64>(points, []),
            Err(StoreError::TypeMismatch { .. })
        ),
        "an empty fill still checks the field's type"
    );
    // The writer reports its rows to observers when dropped, so it holds the store till then.
    drop(init);

    assert_eq!(w.store.tick(), tick, "no tick");
    assert_eq!(
        w.store.set(score).unwrap().structural_revision(),
        revision,
        "no structural change"
    );
    assert!(
        w.store.shares_set_with(&snapshot, score),
        "the set stays shared with the snapshot"
    );
    assert!(w.store.drain_events().is_empty());
    assert_eq!(w.store.set(score).unwrap().len(), 1);
}

#[test]
fn a_copy_naming_one_target_twice_is_refused_before_any_row_is_stored() {
    let mut w = World::new();
    let score = w.install(score());
    let points = w.field(score, "points");
    let a = w.spawn(ClassId::ENTITY);
    let b = w.spawn(ClassId::ENTITY);
    let copy = w.spawn(ClassId::ENTITY);
    for (at, n) in [(a, 1), (b, 2)] {
        w.store
            .add(
                at,
                ClassId::ENTITY,
                score,
                [(points, strata_component_store::Value::Integer(n))],
            )
            .unwrap();
    }
    w.store.drain_events();
    let tick = w.store.tick();
    let pair = |source| strata_component_store::CopyPair {
        source,
        copy,
        class: ClassId::ENTITY,
    };
    let got = w.store.copy_rows(&[pair(a), pair(b)], Some);
    assert_eq!(got, Err(StoreError::DuplicateSlot(copy.slot)));
    assert!(!w.store.has(copy, score), "no row was stored for the copy");
    assert_eq!(w.store.tick(), tick);
    assert!(w.store.drain_events().is_empty());
    assert_eq!(w.store.set(score).unwrap().len(), 2);
}
