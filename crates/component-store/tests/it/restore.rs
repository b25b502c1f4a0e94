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

/// Everything a set shows, row by row in id order: id, added and changed ticks, dirty mask and
/// values, then its removal log.
fn contents(store: &Store, c: strata_component_store::ComponentId) -> Vec<String> {
    let set = store.set(c).unwrap();
    let mut rows: Vec<usize> = (0..set.len()).collect();
    rows.sort_by_key(|row| set.ids()[*row]);
    let mut out: Vec<String> = rows
        .into_iter()
        .map(|row| {
            let values: Vec<_> = (0..set.def().fields().len())
                .map(|f| set.value(row, strata_component_store::FieldId::from_index(f as u16)))
                .collect();
            format!(
                "{} {:?} {:?} {:?} {values:?}",
                set.ids()[row],
                set.added_ticks().get(row).expect("a row of the set"),
                set.changed_ticks().get(row).expect("a row of the set"),
                set.dirty_mask(row)
            )
        })
        .collect();
    let log = set.removal_log();
    out.push(format!(
        "{:?}",
        log.read_since(log.floor())
            .map(|read| read.map(|(_, r)| r.id).collect::<Vec<_>>())
    ));
    out
}

#[test]
fn a_copy_made_into_the_memory_a_restore_kept_is_the_snapshot_exactly() {
    let (mut w, c, hp) = world();
    let first: Vec<_> = (0..10).map(|_| w.spawn(ClassId::PART)).collect();
    for at in &first {
        w.store.add(*at, ClassId::PART, c, []).unwrap();
    }
    w.store.remove(first[3], c).unwrap();
    w.store.write(first[5], c, hp, 55.0).unwrap();
    let saved = w.store.snapshot();
    let expected = contents(&saved, c);
    // The world's own copy moves away from the snapshot in every part (its first rows'
    // values, ticks and dirty fields, a removal among them) and grows far past it; it becomes
    // the memory the restore keeps.
    for (k, at) in first.iter().enumerate().filter(|(k, _)| *k != 3) {
        w.store.write(*at, c, hp, -(k as f64)).unwrap();
    }
    w.store.remove(first[1], c).unwrap();
    let more: Vec<_> = (0..1_000).map(|_| w.spawn(ClassId::PART)).collect();
    for (k, at) in more.iter().enumerate() {
        w.store.add(*at, ClassId::PART, c, []).unwrap();
        w.store.write(*at, c, hp, k as f64).unwrap();
    }
    for at in more.iter().step_by(3) {
        w.store.remove(*at, c).unwrap();
    }
    w.store.restore(&saved).unwrap();
    assert_eq!(contents(&w.store, c), expected);
    // Each write after a snapshot copies into the kept memory: no trace of the larger set.
    for round in 0..3 {
        let again = w.store.snapshot();
        w.store.write(first[0], c, hp, f64::from(round)).unwrap();
        assert!(!w.store.shares_set_with(&again, c));
        assert_eq!(contents(&again, c), expected, "the snapshot never changes");
        // The copy is the snapshot's set but for the one row written.
        let written = contents(&w.store, c);
        assert_eq!(written.len(), expected.len());
        let differing: Vec<&String> = written
            .iter()
            .zip(&expected)
            .filter(|(a, b)| a != b)
            .map(|(a, _)| a)
            .collect();
        assert_eq!(differing.len(), 1, "round {round}: {differing:?}");
        assert!(differing[0].starts_with(&format!("{} ", first[0].id)));
        assert!(differing[0].contains(&format!("Number({}.0)", round)));
        // Lookups by instance go through the copy's sparse entries: none is left over from
        // the larger set.
        for at in first.iter().skip(1).chain(&more) {
            assert_eq!(
                w.store.get::<f64>(*at, c, hp).ok(),
                again.get::<f64>(*at, c, hp).ok(),
                "round {round}"
            );
        }
        w.store.restore(&again).unwrap();
        assert_eq!(contents(&w.store, c), expected, "round {round}");
    }
}
