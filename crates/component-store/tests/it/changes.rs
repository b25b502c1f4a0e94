//! What a changed reader gets from a set's change log (`ComponentSet::changes_since`), how
//! many rows the dirty state reports, and when a column writer leaves a set shared.

use std::collections::HashSet;

use crate::common::World;
use strata_arena::ClassId;
use strata_component_store::{ComponentDef, ComponentId, FieldDef, InstanceRef, Tick};

fn health() -> ComponentDef {
    ComponentDef::new("Health").field(FieldDef::number("current", 0.0))
}

/// `n` instances given `component` one at a time.
fn spawn_each(w: &mut World, component: ComponentId, n: usize) -> Vec<InstanceRef> {
    (0..n)
        .map(|_| {
            let at = w.spawn(ClassId::ENTITY);
            w.store.insert(at, ClassId::ENTITY, component).unwrap();
            at
        })
        .collect()
}

/// The rows a reader with `baseline` visits, or `None` when it must scan.
fn listed(w: &World, component: ComponentId, baseline: Tick) -> Option<HashSet<usize>> {
    let set = w.store.set(component).unwrap();
    set.changes_since(baseline)
        .map(|changes| changes.rows().collect())
}

#[test]
fn a_changed_reader_visits_only_what_changed_since_its_baseline() {
    let mut w = World::new();
    let health = w.install(health());
    let current = w.field(health, "current");
    // Built one instance at a time, then frames that each write 10 different rows.
    let all = spawn_each(&mut w, health, 1_000);
    let mut baseline = w.store.tick();
    for frame in 0..60 {
        for k in 0..10 {
            let at = all[(frame * 10 + k) % all.len()];
            assert!(
                w.store
                    .write(at, health, current, frame as f64 + 1.0)
                    .unwrap()
            );
        }
        let set = w.store.set(health).unwrap();
        let visits = set.changes_since(baseline).map(|changes| changes.len());
        assert_eq!(
            visits,
            Some(10),
            "frame {frame}: the reader visits the 10 rows written"
        );
        baseline = w.store.tick();
    }
}

#[test]
fn rows_added_after_a_baseline_are_listed_wherever_removals_moved_them() {
    let mut w = World::new();
    let health = w.install(health());
    let old = spawn_each(&mut w, health, 10);
    let baseline = w.store.tick();
    let new = spawn_each(&mut w, health, 5);
    let late: Vec<InstanceRef> = (0..3).map(|_| w.spawn(ClassId::ENTITY)).collect();
    w.store.insert_many(&late, ClassId::ENTITY, health).unwrap();
    // Each removal moves the last row (a new one) into a hole among the old rows.
    for at in &old[..4] {
        assert!(w.store.remove(*at, health).unwrap());
    }
    let rows = listed(&w, health, baseline).expect("the log covers the baseline");
    let set = w.store.set(health).unwrap();
    for at in new.iter().chain(&late) {
        let row = set.row_of(*at).unwrap();
        assert!(rows.contains(&row), "{at:?} at row {row} is listed");
    }
    // A reader whose baseline is after the adds visits nothing.
    assert_eq!(
        set.changes_since(w.store.tick())
            .map(|changes| changes.len()),
        Some(0)
    );
}

#[test]
fn pending_dirty_counts_each_dirty_row_once() {
    let mut w = World::new();
    let health = w.install(health());
    let current = w.field(health, "current");
    let all = spawn_each(&mut w, health, 3);
    w.store.write(all[0], health, current, 1.0).unwrap();
    w.store.write(all[0], health, current, 2.0).unwrap();
    w.store.write(all[1], health, current, 1.0).unwrap();
    assert_eq!(w.store.set(health).unwrap().pending_dirty(), 2);
    w.store.remove(all[0], health).unwrap();
    assert_eq!(
        w.store.set(health).unwrap().pending_dirty(),
        1,
        "a removed row is no longer pending"
    );
    let taken = w.store.take_dirty(health).unwrap();
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].0, all[1].id);
    assert_eq!(w.store.set(health).unwrap().pending_dirty(), 0);
}

#[test]
fn a_column_writer_that_changes_nothing_leaves_the_set_shared() {
    let mut w = World::new();
    let health = w.install(health());
    let current = w.field(health, "current");
    let other = w.install(ComponentDef::new("Other").field(FieldDef::number("value", 2.0)));
    let value = w.field(other, "value");
    let all = spawn_each(&mut w, health, 4);
    for at in &all {
        w.store.insert(*at, ClassId::ENTITY, other).unwrap();
    }
    let snapshot = w.store.snapshot();
    {
        let mut writer = w.store.column_writer::<f64>(health, current).unwrap();
        assert_eq!(writer.write(1, 0.0), Ok(false));
        assert_eq!(writer.update_indexed(4, |k| (k, k), |v, _| *v), Ok(0));
    }
    {
        let (mut writer, reads) = w
            .store
            .update_columns::<f64, f64>(health, current, Some((other, value)))
            .unwrap();
        assert_eq!(writer.update_dense(reads, |v, _| *v), Ok(0));
    }
    assert!(
        w.store.shares_set_with(&snapshot, health),
        "no write changed a value, so the set was not copied"
    );
    let tick = w.store.tick();
    {
        let (mut writer, reads) = w
            .store
            .update_columns::<f64, f64>(health, current, Some((other, value)))
            .unwrap();
        assert_eq!(
            writer.update_dense(reads, |v, r| if *v > 0.0 { *v } else { *r }),
            Ok(4)
        );
    }
    assert!(!w.store.shares_set_with(&snapshot, health));
    assert_eq!(*w.store.get::<f64>(all[3], health, current).unwrap(), 2.0);
    assert_eq!(*snapshot.get::<f64>(all[3], health, current).unwrap(), 0.0);
    assert_eq!(w.store.tick(), Tick(tick.0 + 1));
}

/// The rows `row >= from` of a two-field set of 256 rows written by a pass of each kind (a
/// dense pass reading another field of its set, an indexed pass of a writer already bound, a
/// parallel pass): the change log is prepared at each pass's first change for the rows from
/// there on, so 56 changes at the end of 256 rows fit in its 64 entries and are listed, however
/// many unchanged rows come first.
#[test]
fn a_pass_logs_its_changes_when_they_fit_from_its_first_change_on() {
    let from = 200;
    for kind in 0..3 {
        let mut w = World::new();
        let health = w.install(
            ComponentDef::new("Health")
                .field(FieldDef::number("current", 0.0))
                .field(FieldDef::number("max", 0.0)),
        );
        let (current, max) = (w.field(health, "current"), w.field(health, "max"));
        let ats: Vec<InstanceRef> = (0..256).map(|_| w.spawn(ClassId::ENTITY)).collect();
        w.store.insert_many(&ats, ClassId::ENTITY, health).unwrap();
        let before = w.store.tick();
        let bump = |row: usize, value: &f64| if row >= from { value + 1.0 } else { *value };
        match kind {
            0 => {
                let (mut writer, reads) = w
                    .store
                    .update_columns::<f64, f64>(health, current, Some((health, max)))
                    .unwrap();
                let rows: Vec<usize> = (0..reads.len()).collect();
                let changed = writer.update_dense(&rows, |value, row| bump(*row, value));
                assert_eq!(changed, Ok(256 - from));
            }
            1 => {
                let mut writer = w.store.column_writer::<f64>(health, current).unwrap();
                // Row 255 first: the writer is bound (and the row logged) before the pass.
                assert_eq!(writer.write(255, 5.0), Ok(true));
                let changed = writer.update_indexed(
                    256,
                    |k| (k, k),
                    |value, row| {
                        if row == 255 { *value } else { bump(row, value) }
                    },
                );
                assert_eq!(changed, Ok(256 - from - 1));
            }
            _ => {
                let mut writer = w.store.par_writer::<f64>(health, current).unwrap();
                let pieces = [
                    strata_component_store::Piece::Rows(0..128),
                    strata_component_store::Piece::Rows(128..256),
                ];
                let changed = writer.update(&strata_component_store::InOrder, &pieces, |p| {
                    move |value: &f64, i: usize| bump(p * 128 + i, value)
                });
                assert_eq!(changed, Ok(256 - from));
            }
        }
        let expected: HashSet<usize> = (from..256).collect();
        assert_eq!(
            listed(&w, health, before),
            Some(expected),
            "pass kind {kind}"
        );
        assert_eq!(
            w.store.set(health).unwrap().logged_changes(),
            256 - from,
            "pass kind {kind}"
        );
    }
}
