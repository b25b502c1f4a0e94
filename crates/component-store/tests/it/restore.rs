//! `Store::restore`: a store made what a snapshot of it holds, with its identity renewed and
//! its tick moving on, beside the model test's random runs.

use crate::common::World;
use strata_arena::ClassId;
use strata_component_store::{
    ComponentDef, FieldDef, RemovalReader, Removals, Store, StoreError, Tick,
};

fn world() -> (
    World,
    strata_component_store::ComponentId,
    strata_component_store::FieldId,
) {
    let mut world = World::new();
    let c = world.install(ComponentDef::new("Health").field(FieldDef::number("hp", 100.0)));
    let hp = world.field(c, "hp");
    (world, c, hp)
}

#[test]
fn a_restore_puts_back_rows_and_ticks_under_a_new_identity() {
    let (mut w, c, hp) = world();
    let a = w.spawn(ClassId::PART);
    let b = w.spawn(ClassId::PART);
    w.store.add(a, ClassId::PART, c, []).unwrap();
    w.store.add(b, ClassId::PART, c, []).unwrap();
    let saved = w.store.snapshot();
    let changed_a = w.store.set(c).unwrap().changed_ticks().to_vec();
    w.store.write(a, c, hp, 5.0).unwrap();
    w.store.remove(b, c).unwrap();
    let id = w.store.id();
    w.store.restore(&saved).unwrap();
    assert_ne!(w.store.id(), id, "a restored store is another identity");
    assert_eq!(w.store.tick(), saved.tick(), "the tick is the saved one");
    assert!(w.store.has(b, c));
    assert_eq!(*w.store.get::<f64>(a, c, hp).unwrap(), 100.0);
    assert_eq!(
        w.store.set(c).unwrap().changed_ticks(),
        changed_a.as_slice()
    );
    assert!(w.store.shares_set_with(&saved, c));
    w.store.write(a, c, hp, 7.0).unwrap();
    assert!(w.store.tick() > saved.tick());
    assert_eq!(
        *saved.get::<f64>(a, c, hp).unwrap(),
        100.0,
        "the snapshot never changes"
    );
}

#[test]
fn a_reader_that_saw_removals_the_restore_took_back_reports_missed() {
    let (mut w, c, _) = world();
    let a = w.spawn(ClassId::PART);
    let b = w.spawn(ClassId::PART);
    w.store.add(a, ClassId::PART, c, []).unwrap();
    w.store.add(b, ClassId::PART, c, []).unwrap();
    let mut early = RemovalReader::new(&w.store, c).unwrap();
    let saved = w.store.snapshot();
    w.store.remove(a, c).unwrap();
    let mut late = RemovalReader::new(&w.store, c).unwrap();
    let mut reader = RemovalReader::new(&w.store, c).unwrap();
    w.store.remove(b, c).unwrap();
    assert_eq!(reader.read(&w.store), Ok(Removals::Ids(vec![b.id])));
    w.store.restore(&saved).unwrap();
    assert!(matches!(reader.read(&w.store), Ok(Removals::Missed { .. })));
    assert!(matches!(late.read(&w.store), Ok(Removals::Missed { .. })));
    // A reader that read nothing since the snapshot may go on; either way it never gets a
    // wrong list.
    match early.read(&w.store).unwrap() {
        Removals::Ids(ids) => assert!(ids.is_empty()),
        Removals::Missed { .. } => {}
    }
    w.store.remove(a, c).unwrap();
    assert_eq!(reader.read(&w.store), Ok(Removals::Ids(vec![a.id])));
}

#[test]
fn a_snapshot_of_another_store_is_refused_and_changes_nothing() {
    let (mut w, c, _) = world();
    let a = w.spawn(ClassId::PART);
    w.store.add(a, ClassId::PART, c, []).unwrap();
    let other = Store::new();
    let (id, tick) = (w.store.id(), w.store.tick());
    assert_eq!(
        w.store.restore(&other),
        Err(StoreError::SnapshotFromOtherStore)
    );
    assert_eq!((w.store.id(), w.store.tick()), (id, tick));
    assert!(w.store.has(a, c));
    assert!(w.store.tick() > Tick(0));
}
