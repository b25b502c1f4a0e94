//! Lifecycle observers: registration, added and removed ranges, moves, activation, the order of
//! callbacks for one removal, unregistration, and what snapshots, loads, redefinitions and
//! uninstalls show an observer.

use std::sync::{Arc, Mutex};

use crate::common::World;
use strata_arena::ClassId;
use strata_component_store::{
    ComponentDef, ComponentId, CopyPair, FieldDef, FieldId, InstanceRef, Observer, SetSlot,
    StoreError, Value,
};

type Log = Arc<Mutex<Vec<String>>>;

fn points() -> ComponentDef {
    ComponentDef::new("Points").field(FieldDef::integer("value", 0))
}

/// An observer recording every call, with the `value` field of the rows it is told about.
fn recorder(field: FieldId) -> (Observer, Log) {
    let log: Log = Arc::default();
    let (a, r, m, on, off) = (
        log.clone(),
        log.clone(),
        log.clone(),
        log.clone(),
        log.clone(),
    );
    let observer = Observer::new()
        .on_added(move |set, rows| {
            let values: Vec<i64> = set.values::<i64>(field).unwrap()[rows.clone()].to_vec();
            a.lock().unwrap().push(format!("added {rows:?} {values:?}"));
        })
        .on_removed(move |set, rows| {
            let values: Vec<i64> = set.values::<i64>(field).unwrap()[rows.clone()].to_vec();
            r.lock()
                .unwrap()
                .push(format!("removed {rows:?} {values:?}"));
        })
        .on_moved(move |set, id, old, new| {
            assert_eq!(
                set.ids()[new],
                id,
                "the set shows the moved instance at its new row"
            );
            let value = set.values::<i64>(field).unwrap()[new];
            m.lock()
                .unwrap()
                .push(format!("moved {old}->{new} {value}"));
        })
        .on_activated(move |set| on.lock().unwrap().push(format!("activated {}", set.len())))
        .on_deactivated(move |set| {
            off.lock()
                .unwrap()
                .push(format!("deactivated {}", set.len()))
        });
    (observer, log)
}

fn take(log: &Log) -> Vec<String> {
    std::mem::take(&mut *log.lock().unwrap())
}

fn setup() -> (World, ComponentId, FieldId) {
    let mut w = World::new();
    let c = w.install(points());
    let f = w.field(c, "value");
    (w, c, f)
}

fn add(w: &mut World, c: ComponentId, f: FieldId, value: i64) -> InstanceRef {
    let at = w.spawn(ClassId::ENTITY);
    w.store
        .add(at, ClassId::ENTITY, c, [(f, Value::Integer(value))])
        .unwrap();
    at
}

#[test]
fn registration_replays_no_existing_rows() {
    let (mut w, c, f) = setup();
    add(&mut w, c, f, 1);
    add(&mut w, c, f, 2);
    let (observer, log) = recorder(f);
    w.store.observe(c, observer).unwrap();
    assert!(take(&log).is_empty());
    add(&mut w, c, f, 3);
    assert_eq!(take(&log), ["added 2..=2 [3]"]);
}

#[test]
fn the_first_row_activates_the_set_before_it_is_reported_added() {
    let (mut w, c, f) = setup();
    let (observer, log) = recorder(f);
    w.store.observe(c, observer).unwrap();
    add(&mut w, c, f, 7);
    add(&mut w, c, f, 8);
    assert_eq!(
        take(&log),
        ["activated 1", "added 0..=0 [7]", "added 1..=1 [8]"]
    );
}

#[test]
fn an_inserted_row_is_reported_with_the_values_its_writer_set() {
    let (mut w, c, f) = setup();
    let (observer, log) = recorder(f);
    w.store.observe(c, observer).unwrap();
    let at = w.spawn(ClassId::ENTITY);
    w.store
        .insert(at, ClassId::ENTITY, c)
        .unwrap()
        .set(f, 42i64)
        .unwrap();
    assert_eq!(take(&log), ["activated 1", "added 0..=0 [42]"]);
}

#[test]
fn insert_many_reports_its_whole_range_in_one_call_after_the_fill() {
    let (mut w, c, f) = setup();
    add(&mut w, c, f, 1);
    let (observer, log) = recorder(f);
    w.store.observe(c, observer).unwrap();
    let ats: Vec<InstanceRef> = (0..3).map(|_| w.spawn(ClassId::ENTITY)).collect();
    w.store
        .insert_many(&ats, ClassId::ENTITY, c)
        .unwrap()
        .fill(f, [10i64, 11, 12])
        .unwrap();
    assert_eq!(take(&log), ["added 1..=3 [10, 11, 12]"]);
    w.store.insert_many(&[], ClassId::ENTITY, c).unwrap();
    assert!(take(&log).is_empty(), "an empty bulk add reports nothing");
}

#[test]
fn a_removal_reports_removed_values_then_the_move_then_deactivation() {
    let (mut w, c, f) = setup();
    let a = add(&mut w, c, f, 1);
    let b = add(&mut w, c, f, 2);
    let d = add(&mut w, c, f, 3);
    let (observer, log) = recorder(f);
    w.store.observe(c, observer).unwrap();
    w.store.remove(a, c).unwrap();
    assert_eq!(take(&log), ["removed 0..=0 [1]", "moved 2->0 3"]);
    // Removing the last row moves nothing.
    w.store.remove(b, c).unwrap();
    assert_eq!(take(&log), ["removed 1..=1 [2]"]);
    w.store.remove(d, c).unwrap();
    assert_eq!(take(&log), ["removed 0..=0 [3]", "deactivated 0"]);
}

#[test]
fn destruction_dependents_eviction_and_reclamation_report_removals() {
    let mut w = World::new();
    let base = w.install(points());
    let dependent = w.install(
        ComponentDef::new("Dependent")
            .field(FieldDef::integer("value", 5))
            .requires(&["Points"]),
    );
    let f = w.field(base, "value");
    let g = w.field(dependent, "value");
    let a = add(&mut w, base, f, 1);
    w.store.add(a, ClassId::ENTITY, dependent, []).unwrap();
    let (base_obs, base_log) = recorder(f);
    let (dep_obs, dep_log) = recorder(g);
    w.store.observe(base, base_obs).unwrap();
    w.store.observe(dependent, dep_obs).unwrap();
    w.store.remove(a, base).unwrap();
    assert_eq!(take(&base_log), ["removed 0..=0 [1]", "deactivated 0"]);
    assert_eq!(take(&dep_log), ["removed 0..=0 [5]", "deactivated 0"]);

    let b = add(&mut w, base, f, 2);
    assert_eq!(take(&base_log), ["activated 1", "added 0..=0 [2]"]);
    w.destroy(b.id);
    assert_eq!(take(&base_log), ["removed 0..=0 [2]", "deactivated 0"]);
}

#[test]
fn copied_rows_are_reported_added() {
    let (mut w, c, f) = setup();
    let a = add(&mut w, c, f, 9);
    let (observer, log) = recorder(f);
    w.store.observe(c, observer).unwrap();
    let copy = w.spawn(ClassId::ENTITY);
    w.store
        .copy_rows(
            &[CopyPair {
                source: a,
                copy,
                class: ClassId::ENTITY,
            }],
            Some,
        )
        .unwrap();
    assert_eq!(take(&log), ["added 1..=1 [9]"]);
}

#[test]
fn unobserve_stops_callbacks_and_refuses_a_stale_or_foreign_id() {
    let (mut w, c, f) = setup();
    let (observer, log) = recorder(f);
    let id = w.store.observe(c, observer).unwrap();
    let mut other = w.store.snapshot();
    assert_eq!(
        other.unobserve(id).unwrap_err(),
        StoreError::UnknownObserver(id),
        "a snapshot carries no observers"
    );
    w.store.unobserve(id).unwrap();
    assert_eq!(
        w.store.unobserve(id).unwrap_err(),
        StoreError::UnknownObserver(id)
    );
    add(&mut w, c, f, 1);
    assert!(take(&log).is_empty());
    let gone = w.install(ComponentDef::new("Gone"));
    w.store.uninstall(gone).unwrap();
    assert_eq!(
        w.store.observe(gone, Observer::new()).unwrap_err(),
        StoreError::UnknownComponent(gone)
    );
}

#[test]
fn a_snapshot_carries_no_observers() {
    let (mut w, c, f) = setup();
    let (observer, log) = recorder(f);
    w.store.observe(c, observer).unwrap();
    let mut snapshot = w.store.snapshot();
    let at = w.spawn(ClassId::ENTITY);
    snapshot.add(at, ClassId::ENTITY, c, []).unwrap();
    assert!(take(&log).is_empty());
}

#[test]
fn observers_of_one_component_run_in_registration_order() {
    let (mut w, c, _) = setup();
    let log: Log = Arc::default();
    for name in ["first", "second"] {
        let log = log.clone();
        w.store
            .observe(
                c,
                Observer::new().on_added(move |_, _| log.lock().unwrap().push(name.to_owned())),
            )
            .unwrap();
    }
    let at = w.spawn(ClassId::ENTITY);
    w.store.add(at, ClassId::ENTITY, c, []).unwrap();
    assert_eq!(take(&log), ["first", "second"]);
}

#[test]
fn a_load_reports_every_present_row_removed_then_every_restored_row_added() {
    let (mut w, c, f) = setup();
    add(&mut w, c, f, 1);
    add(&mut w, c, f, 2);
    let mut slot = SetSlot::new();
    w.store.save_into(c, &mut slot).unwrap();
    add(&mut w, c, f, 3);
    let (observer, log) = recorder(f);
    w.store.observe(c, observer).unwrap();
    w.store.load_from(c, &slot).unwrap();
    assert_eq!(
        take(&log),
        [
            "removed 0..=2 [1, 2, 3]",
            "deactivated 3",
            "activated 2",
            "added 0..=1 [1, 2]"
        ]
    );
}

#[test]
fn a_redefinition_reports_the_old_rows_removed_and_the_new_rows_added() {
    let (mut w, c, f) = setup();
    let a = add(&mut w, c, f, 4);
    let (observer, log) = recorder(f);
    w.store.observe(c, observer).unwrap();
    w.store
        .redefine(
            c,
            points().field(FieldDef::integer("extra", 0)),
            w.arena.classes(),
            vec![(a, vec![Value::Integer(6), Value::Integer(0)])],
        )
        .unwrap();
    assert_eq!(
        take(&log),
        [
            "removed 0..=0 [4]",
            "deactivated 1",
            "activated 1",
            "added 0..=0 [6]"
        ]
    );
}

#[test]
fn an_uninstall_reports_every_row_removed_and_drops_the_observers() {
    let (mut w, c, f) = setup();
    add(&mut w, c, f, 4);
    add(&mut w, c, f, 5);
    let (observer, log) = recorder(f);
    let id = w.store.observe(c, observer).unwrap();
    w.store.uninstall(c).unwrap();
    assert_eq!(take(&log), ["removed 0..=1 [4, 5]", "deactivated 2"]);
    assert_eq!(
        w.store.unobserve(id).unwrap_err(),
        StoreError::UnknownObserver(id)
    );
}
