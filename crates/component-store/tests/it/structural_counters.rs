//! Structural counters for incremental consumers: the count, the residue since a count, the
//! missed window, and opt-in value-write counters.

use crate::common::World;
use strata_arena::{ClassId, InstanceId};
use strata_component_store::{
    ComponentDef, FieldDef, InstanceRef, RESIDUE_CAPACITY, StructuralMissed, Value,
};

#[test]
fn the_count_rises_for_each_added_range_removed_range_and_move() {
    let mut w = World::new();
    let c = w.install(ComponentDef::new("A"));
    let start = w.store.structural_count();
    let ats: Vec<InstanceRef> = (0..3).map(|_| w.spawn(ClassId::ENTITY)).collect();
    w.store.insert_many(&ats, ClassId::ENTITY, c).unwrap();
    assert_eq!(w.store.structural_count(), start + 1, "one bulk add");
    w.store.remove(ats[0], c).unwrap();
    assert_eq!(
        w.store.structural_count(),
        start + 3,
        "a removal and a move"
    );
    w.store.remove(ats[1], c).unwrap();
    assert_eq!(
        w.store.structural_count(),
        start + 4,
        "the last row moves nothing"
    );
}

#[test]
fn the_residue_lists_what_changed_after_the_count_asked_from() {
    let mut w = World::new();
    let a = w.install(ComponentDef::new("A"));
    let b = w.install(ComponentDef::new("B"));
    let x = w.spawn(ClassId::ENTITY);
    let y = w.spawn(ClassId::ENTITY);
    w.store.add(x, ClassId::ENTITY, a, []).unwrap();
    let seen = w.store.structural_count();
    w.store.add(y, ClassId::ENTITY, a, []).unwrap();
    w.store.add(y, ClassId::ENTITY, b, []).unwrap();
    w.store.remove(x, a).unwrap();
    let residue = w.store.structural_since(seen).unwrap();
    assert_eq!(residue.count(), w.store.structural_count());
    assert_eq!(residue.described().collect::<Vec<_>>(), [a, b]);
    assert_eq!(residue.added().collect::<Vec<_>>(), [y.id, y.id]);
    assert_eq!(residue.touched().collect::<Vec<InstanceId>>(), [x.id, y.id]);
    let now = w
        .store
        .structural_since(w.store.structural_count())
        .unwrap();
    assert_eq!(now.added().count() + now.touched().count(), 0);
}

#[test]
fn a_count_before_the_window_or_after_an_overflow_is_missed() {
    let mut w = World::new();
    let c = w.install(ComponentDef::new("A"));
    let old = w.store.structural_count();
    let x = w.spawn(ClassId::ENTITY);
    w.store.add(x, ClassId::ENTITY, c, []).unwrap();
    w.store.end_frame();
    assert_eq!(
        w.store.structural_since(old).unwrap_err(),
        StructuralMissed { asked: old }
    );
    let fresh = w.store.structural_count();
    assert!(w.store.structural_since(fresh).is_ok());
    assert!(
        w.store.structural_since(fresh + 1).is_err(),
        "a count from the future"
    );
    let many: Vec<InstanceRef> = (0..=RESIDUE_CAPACITY)
        .map(|_| w.spawn(ClassId::ENTITY))
        .collect();
    w.store.insert_many(&many, ClassId::ENTITY, c).unwrap();
    assert!(
        w.store.structural_since(fresh).is_err(),
        "overflowed residue"
    );
    w.store.end_frame();
    assert!(w.store.structural_since(w.store.structural_count()).is_ok());
}

/// A consumer told it missed the residue refreshes, then continues from the count it was
/// told to: the window reopens at the overflow, not only at the end of the frame.
#[test]
fn a_consumer_that_refreshed_after_an_overflow_continues_in_the_same_frame() {
    let mut w = World::new();
    let c = w.install(ComponentDef::new("A"));
    let seen = w.store.structural_count();
    let many: Vec<InstanceRef> = (0..=RESIDUE_CAPACITY)
        .map(|_| w.spawn(ClassId::ENTITY))
        .collect();
    w.store.insert_many(&many, ClassId::ENTITY, c).unwrap();
    assert_eq!(
        w.store.structural_since(seen).unwrap_err(),
        StructuralMissed { asked: seen }
    );
    // The consumer refreshes from the store, then asks from the present count.
    let refreshed = w.store.structural_count();
    assert!(w.store.structural_since(refreshed).is_ok());
    let late = w.spawn(ClassId::ENTITY);
    w.store.add(late, ClassId::ENTITY, c, []).unwrap();
    w.store.remove(many[0], c).unwrap();
    let residue = w.store.structural_since(refreshed).unwrap();
    assert_eq!(residue.added().collect::<Vec<_>>(), [late.id]);
    assert_eq!(
        residue.touched().collect::<Vec<InstanceId>>(),
        [many[0].id, late.id],
        "the removed instance, then the last row moved into its place"
    );
    // A single event past the capacity reopens the window too: readers from before it miss.
    let before = w.store.structural_count();
    let mut moved = 0;
    for at in &many[1..] {
        w.store.remove(*at, c).unwrap();
        moved += 1;
        if w.store.structural_since(before).is_err() {
            break;
        }
    }
    assert!(moved <= RESIDUE_CAPACITY);
    assert!(w.store.structural_since(w.store.structural_count()).is_ok());
}

#[test]
fn value_counts_follow_explicit_writes_to_tracked_columns_only() {
    let mut w = World::new();
    let c = w.install(
        ComponentDef::new("A")
            .field(FieldDef::number("x", 0.0))
            .field(FieldDef::number("y", 0.0)),
    );
    let (fx, fy) = (w.field(c, "x"), w.field(c, "y"));
    let at = w.spawn(ClassId::ENTITY);
    w.store.add(at, ClassId::ENTITY, c, []).unwrap();
    w.store.write(at, c, fx, 1.0).unwrap();
    assert_eq!(w.store.value_count(), 0, "not tracked yet");
    w.store.track_value_count(c, fx, true).unwrap();
    w.store.write(at, c, fx, 2.0).unwrap();
    w.store.write(at, c, fx, 2.0).unwrap();
    w.store.write(at, c, fy, 2.0).unwrap();
    w.store.write_value(at, c, fx, Value::Number(3.0)).unwrap();
    assert_eq!(
        w.store.value_count(),
        2,
        "equal writes and untracked columns do not count"
    );
    let mut writer = w.store.column_writer::<f64>(c, fx).unwrap();
    writer.update_dense(&[()], |v, _| v + 1.0).unwrap();
    writer.write(0, 10.0).unwrap();
    drop(writer);
    w.store.column_mut::<f64>(c, fx).unwrap()[0] = 11.0;
    assert_eq!(w.store.value_count(), 5);
    w.store.track_value_count(c, fx, false).unwrap();
    w.store.write(at, c, fx, 12.0).unwrap();
    assert_eq!(w.store.value_count(), 5);
}

/// A snapshot costs the same whatever the frame did: it takes no copy of the residue. Its own
/// structural window opens at the snapshot, and rows marked in the frame count as dirty whole
/// there, so no consumer of the snapshot misses a change.
#[test]
fn a_snapshot_opens_its_structural_window_and_keeps_every_dirty_row_dirty() {
    let mut w = World::new();
    let c = w.install(ComponentDef::new("A"));
    let start = w.store.structural_count();
    let ats: Vec<InstanceRef> = (0..3).map(|_| w.spawn(ClassId::ENTITY)).collect();
    for at in &ats {
        w.store.add(*at, ClassId::ENTITY, c, []).unwrap();
    }
    w.store.end_frame();
    let marked = w.store.structural_count();
    w.store.mark_dirty(ats[1], c).unwrap();
    let snapshot = w.store.snapshot();
    assert_eq!(snapshot.structural_count(), w.store.structural_count());
    assert!(snapshot.structural_since(start).is_err());
    assert!(snapshot.structural_since(marked).is_ok());
    assert!(
        w.store.structural_since(marked).is_ok(),
        "the store keeps its residue"
    );
    assert_eq!(
        snapshot.frame_dirty(c).unwrap(),
        strata_component_store::FrameDirty::Whole,
        "the marked row's component is dirty whole in the snapshot"
    );
    assert!(matches!(
        w.store.frame_dirty(c).unwrap(),
        strata_component_store::FrameDirty::Rows { ref rows, .. } if rows.len() == 1
    ));
}
