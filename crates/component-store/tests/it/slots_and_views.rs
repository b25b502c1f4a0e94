//! Snapshot slots (save and load), live views, raw columns, column writers, orphans and copies.

use crate::common::World;
use strata_arena::{ClassId, InstanceId};
use strata_component_store::{
    Column, ComponentDef, CopyPair, FieldDef, InstanceRef, OrphanRecord, RefPolicy, RemovalReader,
    Removals, SetSlot, StoreError, Value,
};

fn counter() -> ComponentDef {
    ComponentDef::new("Counter")
        .field(FieldDef::integer("n", 0))
        .field(FieldDef::reference("peer", RefPolicy::Clear))
}

#[test]
fn load_restores_after_the_set_shrank_and_after_it_grew() {
    let mut w = World::new();
    let counter = w.install(counter());
    let (n, peer) = (w.field(counter, "n"), w.field(counter, "peer"));
    let members: Vec<InstanceRef> = (0..6).map(|_| w.spawn(ClassId::ENTITY)).collect();
    for (i, m) in members.iter().take(4).enumerate() {
        w.store
            .add(
                *m,
                ClassId::ENTITY,
                counter,
                [
                    (n, Value::Integer(i as i64)),
                    (peer, Value::Reference(Some(members[5].id))),
                ],
            )
            .unwrap();
    }
    let mut slot = SetSlot::new();
    w.store.save_into(counter, &mut slot).unwrap();
    assert_eq!(slot.len(), 4);

    // Shrink: remove two (including the last row), change a value; then load.
    w.store.remove(members[3], counter).unwrap();
    w.store.remove(members[0], counter).unwrap();
    w.store.write(members[1], counter, n, 100i64).unwrap();
    let mut reader = RemovalReader::new(&w.store, counter).unwrap();
    w.store.load_from(counter, &slot).unwrap();
    for (i, m) in members.iter().take(4).enumerate() {
        assert_eq!(*w.store.get::<i64>(*m, counter, n).unwrap(), i as i64);
    }
    assert_eq!(
        w.store
            .set(counter)
            .unwrap()
            .references_to(members[5].id)
            .len(),
        4
    );

    // Grow: add two more, then load again; the extra rows must be gone, and their sparse
    // entries with them.
    w.store
        .add(members[4], ClassId::ENTITY, counter, [])
        .unwrap();
    w.store
        .add(members[5], ClassId::ENTITY, counter, [])
        .unwrap();
    w.store.load_from(counter, &slot).unwrap();
    assert_eq!(w.store.set(counter).unwrap().len(), 4);
    assert!(!w.store.has(members[4], counter));
    assert!(!w.store.has(members[5], counter));
    for (i, m) in members.iter().take(4).enumerate() {
        assert_eq!(
            w.store.row(*m, counter).unwrap(),
            i,
            "rows come back in saved order"
        );
    }
    assert_eq!(
        reader.read(&w.store).unwrap(),
        Removals::Ids(vec![members[4].id, members[5].id]),
        "a load that drops rows logs their removal"
    );
}

#[test]
fn saving_copies_only_live_rows_and_reuses_the_slot() {
    let mut w = World::new();
    let counter = w.install(counter());
    let members: Vec<InstanceRef> = (0..1000).map(|_| w.spawn(ClassId::ENTITY)).collect();
    for m in &members {
        w.store.add(*m, ClassId::ENTITY, counter, []).unwrap();
    }
    for m in &members[4..] {
        w.store.remove(*m, counter).unwrap();
    }
    let mut slot = SetSlot::new();
    w.store.save_into(counter, &mut slot).unwrap();
    assert_eq!(slot.len(), 4, "the history of 1,000 rows is not copied");
    assert!(slot.capacity() < 1000);
    let capacity = slot.capacity();
    w.store.save_into(counter, &mut slot).unwrap();
    assert_eq!(slot.capacity(), capacity, "the slot's buffers are reused");
}

#[test]
fn a_slot_loads_only_into_its_own_set() {
    let mut w = World::new();
    let a = w.install(counter());
    let b = w.install(ComponentDef::new("Other"));
    let mut slot = SetSlot::new();
    w.store.save_into(a, &mut slot).unwrap();
    assert!(matches!(
        w.store.load_from(b, &slot),
        Err(StoreError::SlotMismatch { .. })
    ));
    w.store
        .redefine(a, counter(), w.arena.classes(), vec![])
        .unwrap();
    assert!(
        matches!(
            w.store.load_from(a, &slot),
            Err(StoreError::SlotMismatch { .. })
        ),
        "redefined"
    );
}

#[test]
fn views_address_columns_by_name_and_follow_growth() {
    let mut w = World::new();
    let counter = w.install(counter());
    let n = w.field(counter, "n");
    let first = w.spawn(ClassId::ENTITY);
    w.store
        .add(first, ClassId::ENTITY, counter, [(n, Value::Integer(7))])
        .unwrap();
    {
        let view = w.store.set(counter).unwrap().view();
        assert_eq!(view.values::<i64>("n"), Some(&[7i64][..]));
        assert!(
            view.values::<f64>("n").is_none(),
            "typed by the field's type"
        );
        assert!(view.column("missing").is_none());
    }
    for i in 0..100 {
        let e = w.spawn(ClassId::ENTITY);
        w.store
            .add(e, ClassId::ENTITY, counter, [(n, Value::Integer(i))])
            .unwrap();
    }
    let view = w.store.set(counter).unwrap().view();
    assert_eq!(view.len(), 101);
    match view.column("n").unwrap() {
        Column::Integer(values) => assert_eq!(values.iter().sum::<i64>(), 7 + 4950),
        other => panic!("{other:?}"),
    }
}

#[test]
fn column_writers_track_changes_like_single_writes() {
    let mut w = World::new();
    let counter = w.install(counter());
    let (n, peer) = (w.field(counter, "n"), w.field(counter, "peer"));
    let members: Vec<InstanceRef> = (0..3).map(|_| w.spawn(ClassId::ENTITY)).collect();
    for m in &members {
        w.store.add(*m, ClassId::ENTITY, counter, []).unwrap();
    }
    let before = w.store.tick();
    {
        let mut writer = w.store.column_writer::<i64>(counter, n).unwrap();
        assert_eq!(writer.write(0, 5), Ok(true));
        assert_eq!(writer.write(1, 0), Ok(false), "equal");
        assert_eq!(writer.write(2, 6), Ok(true));
        assert_eq!(
            writer.write(9, 1),
            Err(StoreError::RowOutOfRange {
                component: "Counter".into(),
                row: 9
            }),
            "out of range"
        );
    }
    assert_eq!(w.store.tick().0, before.0 + 1, "one writer pass, one tick");
    let set = w.store.set(counter).unwrap();
    assert_eq!(
        set.changed_ticks().get(0).expect("a row of the set"),
        w.store.tick()
    );
    assert_eq!(
        set.changed_ticks().get(1).expect("a row of the set"),
        set.added_ticks().get(1).expect("a row of the set")
    );
    {
        let mut refs = w
            .store
            .column_writer::<Option<InstanceId>>(counter, peer)
            .unwrap();
        assert_eq!(refs.write(0, Some(members[1].id)), Ok(true));
    }
    assert_eq!(
        w.store
            .set(counter)
            .unwrap()
            .references_to(members[1].id)
            .len(),
        1
    );
}

#[test]
fn orphans_are_kept_raw_with_visible_references_and_copied_with_rows() {
    let mut w = World::new();
    let counter = w.install(counter());
    let (holder, target, other) = (
        w.spawn(ClassId::ENTITY),
        w.spawn(ClassId::ENTITY),
        w.spawn(ClassId::ENTITY),
    );
    let record = OrphanRecord {
        component: "Legacy".into(),
        version: 3,
        fields: vec![
            ("hp".into(), Value::Number(5.0)),
            ("foe".into(), Value::Reference(Some(target.id))),
        ],
        types: None,
    };
    w.store.add_orphan(holder, record.clone());
    assert_eq!(
        w.store.orphans().of(holder.id),
        std::slice::from_ref(&record)
    );
    assert_eq!(w.store.orphans().references(), vec![(holder.id, target.id)]);
    assert!(w.store.orphans().has_component("Legacy"));

    // Copies carry orphans along, with references remapped.
    w.store.add(holder, ClassId::ENTITY, counter, []).unwrap();
    let copy = w.spawn(ClassId::ENTITY);
    w.store
        .copy_rows(
            &[CopyPair {
                source: holder,
                copy,
                class: ClassId::ENTITY,
            }],
            |t| Some(if t == target.id { other.id } else { t }),
        )
        .unwrap();
    assert!(w.store.has(copy, counter));
    assert_eq!(
        w.store.orphans().of(copy.id)[0].field("foe"),
        Some(&Value::Reference(Some(other.id)))
    );
    assert_eq!(
        w.store.orphans().of(holder.id)[0].field("foe"),
        Some(&Value::Reference(Some(target.id)))
    );

    // Reference rewriting reaches orphan records too.
    w.store
        .rewrite_orphan_references(|t| (t != other.id).then_some(t));
    assert_eq!(
        w.store.orphans().of(copy.id)[0].field("foe"),
        Some(&Value::Reference(None))
    );

    // Adoption takes them; destruction drops them.
    let taken = w.store.take_orphans("Legacy");
    assert_eq!(taken.len(), 2);
    assert!(!w.store.orphans().has_component("Legacy"));
    w.store.add_orphan(holder, record);
    w.destroy(holder.id);
    assert!(w.store.orphans().is_empty());
}

#[test]
fn uninstalling_returns_rows_as_records() {
    let mut w = World::new();
    let counter = w.install(counter());
    let n = w.field(counter, "n");
    let e = w.spawn(ClassId::ENTITY);
    w.store
        .add(e, ClassId::ENTITY, counter, [(n, Value::Integer(4))])
        .unwrap();
    let name_revision = w.store.name_revision();
    let rows = w.store.uninstall(counter).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].0, e);
    assert_eq!(rows[0].1.field("n"), Some(&Value::Integer(4)));
    assert_eq!(rows[0].1.version, 1);
    assert!(w.store.name_revision() > name_revision);
    assert_eq!(w.store.component("Counter"), None);
    assert_eq!(
        w.store.set(counter).unwrap_err(),
        StoreError::UnknownComponent(counter)
    );
    let again = w.install(self::counter());
    assert_ne!(again, counter, "ids are not reused");
}

#[test]
fn uninstalling_leaves_snapshots_their_set_and_refuses_a_second_time() {
    let mut w = World::new();
    let counter = w.install(counter());
    let n = w.field(counter, "n");
    let e = w.spawn(ClassId::ENTITY);
    w.store
        .add(e, ClassId::ENTITY, counter, [(n, Value::Integer(4))])
        .unwrap();
    let snapshot = w.store.snapshot();
    assert_eq!(w.store.uninstall(counter).unwrap().len(), 1);
    assert_eq!(*snapshot.get::<i64>(e, counter, n).unwrap(), 4);
    let name_revision = w.store.name_revision();
    assert_eq!(
        w.store.uninstall(counter).unwrap_err(),
        StoreError::UnknownComponent(counter)
    );
    assert_eq!(
        w.store.name_revision(),
        name_revision,
        "refused, nothing changed"
    );
}

#[test]
fn update_columns_write_one_field_while_reading_another() {
    let mut w = World::new();
    let motion = w.install(
        ComponentDef::new("Motion")
            .field(FieldDef::number("x", 0.0))
            .field(FieldDef::number("dx", 1.0))
            .field(FieldDef::reference("follow", RefPolicy::Clear)),
    );
    let boost = w.install(ComponentDef::new("Boost").field(FieldDef::number("k", 2.0)));
    let (x, dx, follow, k) = (
        w.field(motion, "x"),
        w.field(motion, "dx"),
        w.field(motion, "follow"),
        w.field(boost, "k"),
    );
    let e = w.spawn(ClassId::ENTITY);
    w.store.add(e, ClassId::ENTITY, motion, []).unwrap();
    w.store.add(e, ClassId::ENTITY, boost, []).unwrap();
    {
        let (mut xs, dxs) = w
            .store
            .update_columns::<f64, f64>(motion, x, Some((motion, dx)))
            .unwrap();
        let next = xs.values()[0] + dxs[0];
        assert_eq!(xs.write(0, next), Ok(true));
    }
    {
        let (mut xs, ks) = w
            .store
            .update_columns::<f64, f64>(motion, x, Some((boost, k)))
            .unwrap();
        let next = xs.values()[0] * ks[0];
        assert_eq!(xs.write(0, next), Ok(true));
    }
    assert_eq!(*w.store.get::<f64>(e, motion, x).unwrap(), 2.0);
    assert!(matches!(
        w.store
            .update_columns::<f64, f64>(motion, x, Some((motion, x))),
        Err(StoreError::AliasedColumns { .. })
    ));
    assert!(matches!(
        w.store
            .update_columns::<Option<InstanceId>, f64>(motion, follow, Some((motion, dx))),
        Err(StoreError::AliasedColumns { .. })
    ));
    assert!(matches!(
        w.store
            .update_columns::<f64, i64>(motion, x, Some((boost, k))),
        Err(StoreError::TypeMismatch { .. })
    ));
}

#[test]
fn indexed_passes_skip_rows_past_the_set_and_write_the_rest() {
    // `update_indexed` is handed rows by its caller (a query's cache, a commit's checked log),
    // which are inside the set; one past the end is skipped, on every kind of column, and the
    // rows inside are written as usual.
    let mut w = World::new();
    let c = w.install(
        ComponentDef::new("Mixed")
            .field(FieldDef::number("x", 0.0))
            .field(FieldDef::reference("r", RefPolicy::Clear))
            .field(FieldDef::enumeration("e", &["A", "B"], "A")),
    );
    let (x, r, e) = (w.field(c, "x"), w.field(c, "r"), w.field(c, "e"));
    let a = w.spawn(ClassId::ENTITY);
    w.store.add(a, ClassId::ENTITY, c, []).unwrap();
    let rows = |k: usize| ([0, 7][k], k);
    let mut writer = w.store.column_writer::<f64>(c, x).unwrap();
    assert_eq!(writer.update_indexed(2, rows, |_, _| 1.0), Ok(1));
    let mut writer = w.store.column_writer::<Option<InstanceId>>(c, r).unwrap();
    assert_eq!(writer.update_indexed(2, rows, |_, _| Some(a.id)), Ok(1));
    let mut writer = w.store.column_writer::<u32>(c, e).unwrap();
    assert_eq!(writer.update_indexed(2, rows, |_, _| 1), Ok(1));
    assert_eq!(*w.store.get::<f64>(a, c, x).unwrap(), 1.0);
    assert_eq!(
        *w.store.get::<Option<InstanceId>>(a, c, r).unwrap(),
        Some(a.id)
    );
    assert_eq!(*w.store.get::<u32>(a, c, e).unwrap(), 1);
}
