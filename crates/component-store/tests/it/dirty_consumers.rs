//! Dirty state for incremental consumers: reads mark nothing, writes mark what they change,
//! `column_mut` marks the whole column, placement, removal and moves keep it, explicit marks
//! add to it, and `end_frame` clears it.

use crate::common::World;
use strata_arena::ClassId;
use strata_component_store::{
    ComponentDef, ComponentId, FieldDef, FieldId, FrameDirty, InstanceRef, StoreError, Value,
};

fn setup(n: usize) -> (World, ComponentId, FieldId, Vec<InstanceRef>) {
    let mut w = World::new();
    let c = w.install(
        ComponentDef::new("Speed")
            .field(FieldDef::number("value", 0.0))
            .field(FieldDef::reference(
                "target",
                strata_component_store::RefPolicy::Clear,
            )),
    );
    let f = w.field(c, "value");
    let ats: Vec<InstanceRef> = (0..n).map(|_| w.spawn(ClassId::ENTITY)).collect();
    for at in &ats {
        w.store.add(*at, ClassId::ENTITY, c, []).unwrap();
    }
    (w, c, f, ats)
}

fn rows(w: &World, c: ComponentId) -> FrameDirty {
    w.store.frame_dirty(c).unwrap()
}

#[test]
fn placement_makes_rows_dirty_and_end_frame_clears_them() {
    let (mut w, c, _, _) = setup(3);
    assert!(w.store.is_dirty(c).unwrap());
    assert_eq!(
        rows(&w, c),
        FrameDirty::Rows {
            rows: vec![0, 1, 2],
            removed: false
        }
    );
    w.store.end_frame();
    assert!(!w.store.is_dirty(c).unwrap());
    assert_eq!(rows(&w, c), FrameDirty::Clean);
}

#[test]
fn read_access_marks_nothing() {
    let (mut w, c, f, ats) = setup(3);
    w.store.end_frame();
    let _ = w.store.set(c).unwrap().values::<f64>(f).unwrap().to_vec();
    let _ = w.store.set(c).unwrap().view().values::<f64>("value");
    let _ = w.store.get::<f64>(ats[0], c, f).unwrap();
    let writer = w.store.column_writer::<f64>(c, f).unwrap();
    let _ = writer.values().to_vec();
    drop(writer);
    assert!(!w.store.is_dirty(c).unwrap());
}

#[test]
fn checked_setters_and_writers_mark_the_rows_they_change() {
    let (mut w, c, f, ats) = setup(4);
    w.store.end_frame();
    w.store.write(ats[1], c, f, 2.0).unwrap();
    w.store
        .write_value(ats[3], c, f, Value::Number(3.0))
        .unwrap();
    assert_eq!(
        rows(&w, c),
        FrameDirty::Rows {
            rows: vec![1, 3],
            removed: false
        }
    );
    w.store.end_frame();
    let mut writer = w.store.column_writer::<f64>(c, f).unwrap();
    writer.write(2, 5.0).unwrap();
    writer.write(0, 0.0).unwrap();
    drop(writer);
    assert_eq!(
        rows(&w, c),
        FrameDirty::Rows {
            rows: vec![2],
            removed: false
        },
        "an equal write is no write"
    );
}

#[test]
fn column_mut_marks_the_whole_column_even_unwritten_and_keeps_ticks_honest() {
    let (mut w, c, f, ats) = setup(3);
    w.store.end_frame();
    let tick = w.store.tick();
    drop(w.store.column_mut::<f64>(c, f).unwrap());
    assert_eq!(rows(&w, c), FrameDirty::Whole);
    assert_eq!(w.store.tick(), tick, "nothing written: no tick");
    w.store.end_frame();
    {
        let mut column = w.store.column_mut::<f64>(c, f).unwrap();
        column[1] = 7.0;
        column[2] = 0.0;
    }
    let changed = w.store.set(c).unwrap().changed_ticks().to_vec();
    assert!(changed[1] > tick);
    assert!(changed[0] <= tick && changed[2] <= tick);
    assert_eq!(*w.store.get::<f64>(ats[1], c, f).unwrap(), 7.0);
    let target = w.field(c, "target");
    assert!(matches!(
        w.store
            .column_mut::<Option<strata_arena::InstanceId>>(c, target),
        Err(StoreError::UncheckedColumn { .. })
    ));
}

#[test]
fn a_removal_leaves_the_component_dirty_and_marks_the_moved_row() {
    let (mut w, c, _, ats) = setup(3);
    w.store.end_frame();
    w.store.remove(ats[0], c).unwrap();
    assert!(w.store.is_dirty(c).unwrap());
    assert_eq!(
        rows(&w, c),
        FrameDirty::Rows {
            rows: vec![0],
            removed: true
        }
    );
    w.store.end_frame();
    w.store.remove(ats[1], c).unwrap();
    w.store.remove(ats[2], c).unwrap();
    assert_eq!(
        rows(&w, c),
        FrameDirty::Rows {
            rows: vec![],
            removed: true
        },
        "an emptied set is still dirty"
    );
}

#[test]
fn explicit_marks_make_rows_dirty_without_a_tick() {
    let (mut w, c, _, ats) = setup(5);
    w.store.end_frame();
    let tick = w.store.tick();
    w.store.mark_dirty(ats[3], c).unwrap();
    w.store.mark_rows_dirty(c, 0..=1).unwrap();
    assert_eq!(w.store.tick(), tick);
    assert_eq!(
        rows(&w, c),
        FrameDirty::Rows {
            rows: vec![0, 1, 3],
            removed: false
        }
    );
    assert!(matches!(
        w.store.mark_rows_dirty(c, 4..=5),
        Err(StoreError::RowOutOfRange { .. })
    ));
    let stranger = w.spawn(ClassId::ENTITY);
    assert!(matches!(
        w.store.mark_dirty(stranger, c),
        Err(StoreError::MissingMembership { .. })
    ));
    w.store.end_frame();
    assert_eq!(rows(&w, c), FrameDirty::Clean);
}

#[test]
fn take_dirty_and_frame_dirt_are_independent() {
    let (mut w, c, f, ats) = setup(2);
    w.store.end_frame();
    w.store.write(ats[0], c, f, 1.0).unwrap();
    w.store.take_dirty(c).unwrap();
    assert!(
        w.store.is_dirty(c).unwrap(),
        "take_dirty does not end the frame"
    );
    w.store.end_frame();
    w.store.write(ats[1], c, f, 1.0).unwrap();
    assert_eq!(
        w.store.take_dirty(c).unwrap().len(),
        1,
        "end_frame leaves field masks"
    );
}
