//! Snapshot slots and removal readers belong to the store (and the history) they came from:
//! used on another store, or on a history that does not continue theirs, they say so rather than
//! replace columns of another kind or return a partial list.

use std::sync::Arc;

use crate::common::World;
use strata_arena::{ClassId, Vec3};
use strata_component_store::{
    ComponentDef, ComponentHandle, FieldDef, RemovalReader, Removals, SetSlot, StoreError,
    StoreEvent, Tick, Value,
};

#[test]
fn a_slot_saved_from_another_store_is_refused_and_changes_nothing() {
    let mut a = World::new();
    let position = a.install(ComponentDef::new("Position").field(FieldDef::vector("v", Vec3::ONE)));
    let e = a.spawn(ClassId::ENTITY);
    a.store.add(e, ClassId::ENTITY, position, []).unwrap();
    let mut slot = SetSlot::new();
    a.store.save_into(position, &mut slot).unwrap();

    // Another store, whose first component has the same id (ids are counters of each store).
    let mut b = World::new();
    let name = b.install(ComponentDef::new("Name").field(FieldDef::text("text", "x")));
    let text = b.field(name, "text");
    assert_eq!(name, position);
    assert_ne!(
        b.store.def(name).unwrap().allocation(),
        a.store.def(position).unwrap().allocation(),
        "allocations are not"
    );
    assert_ne!(b.store.lineage(), a.store.lineage());
    let handle = ComponentHandle::new(&a.store, e, position).unwrap();
    let f = b.spawn(ClassId::ENTITY);
    b.store.add(f, ClassId::ENTITY, name, []).unwrap();
    let tick = b.store.tick();
    let revision = b.store.set(name).unwrap().structural_revision();

    let got = b.store.load_from(name, &slot);
    assert!(
        matches!(got, Err(StoreError::SlotFromOtherStore { component, .. }) if component == name),
        "{got:?}"
    );
    assert_eq!(b.store.tick(), tick);
    assert_eq!(b.store.set(name).unwrap().structural_revision(), revision);
    assert_eq!(
        b.store.get::<Arc<str>>(f, name, text).unwrap().as_ref(),
        "x",
        "the set still holds its own rows and columns"
    );
    assert_eq!(
        b.store.get_value(f, name, text),
        Ok(Value::Text(Arc::from("x")))
    );
    // A handle is bound to its store's definition too; the error names the definition the
    // store holds now.
    assert_eq!(
        handle.get_value(&b.store, text),
        Err(StoreError::StaleDefinition {
            component: position,
            component_name: "Name".into(),
        })
    );
}

#[test]
fn a_slot_loads_into_the_store_it_came_from_and_into_its_snapshots() {
    let mut w = World::new();
    let position = w.install(ComponentDef::new("Position").field(FieldDef::vector("v", Vec3::ONE)));
    let v = w.field(position, "v");
    let e = w.spawn(ClassId::ENTITY);
    w.store.add(e, ClassId::ENTITY, position, []).unwrap();
    let mut slot = SetSlot::new();
    w.store.save_into(position, &mut slot).unwrap();
    assert_eq!(slot.lineage(), Some(w.store.lineage()));
    let mut snapshot = w.store.snapshot();
    assert_eq!(
        snapshot.lineage(),
        w.store.lineage(),
        "snapshots share the lineage"
    );
    assert_ne!(snapshot.id(), w.store.id(), "but not the identity");

    w.store.write(e, position, v, Vec3::ZERO).unwrap();
    snapshot
        .write(e, position, v, Vec3::new(2.0, 2.0, 2.0))
        .unwrap();
    w.store.load_from(position, &slot).unwrap();
    snapshot.load_from(position, &slot).unwrap();
    assert_eq!(*w.store.get::<Vec3>(e, position, v).unwrap(), Vec3::ONE);
    assert_eq!(*snapshot.get::<Vec3>(e, position, v).unwrap(), Vec3::ONE);

    // A redefinition makes the slot stale, even under the same name and fields.
    w.store
        .redefine(
            position,
            ComponentDef::new("Position").field(FieldDef::vector("v", Vec3::ONE)),
            w.arena.classes(),
            vec![],
        )
        .unwrap();
    assert_eq!(
        w.store.load_from(position, &slot),
        Err(StoreError::SlotMismatch {
            expected: position,
            found: Some(position),
            expected_name: "Position".into(),
        })
    );
}

fn pulse() -> ComponentDef {
    ComponentDef::new("Pulse").field(FieldDef::integer("n", 0))
}

#[test]
fn a_reader_moved_to_an_older_snapshot_reports_missed_removals() {
    let mut w = World::new();
    let pulse = w.install(pulse());
    let members: Vec<_> = (0..6).map(|_| w.spawn(ClassId::ENTITY)).collect();
    for m in &members {
        w.store.add(*m, ClassId::ENTITY, pulse, []).unwrap();
    }
    let mut reader = RemovalReader::new(&w.store, pulse).unwrap();
    let mut older = w.store.snapshot();

    // The live timeline removes two; the reader follows it.
    w.store.remove(members[0], pulse).unwrap();
    w.store.remove(members[1], pulse).unwrap();
    assert_eq!(
        reader.read(&w.store),
        Ok(Removals::Ids(vec![members[0].id, members[1].id]))
    );

    // Rolled back to the older snapshot, which goes on differently: its log has as many
    // records and more, but they are not the reader's history.
    for m in &members[2..5] {
        older.remove(*m, pulse).unwrap();
    }
    assert!(matches!(
        reader.read(&older),
        Ok(Removals::Missed { cursor: 2, .. })
    ));
    // From there on it follows the snapshot's timeline.
    older.remove(members[5], pulse).unwrap();
    assert_eq!(reader.read(&older), Ok(Removals::Ids(vec![members[5].id])));
}

#[test]
fn a_reader_on_another_store_reports_missed_removals() {
    let mut a = World::new();
    let mut b = World::new();
    let pa = a.install(pulse());
    let pb = b.install(pulse());
    assert_eq!(pa, pb);
    let mut reader = RemovalReader::new(&a.store, pa).unwrap();
    let ea = a.spawn(ClassId::ENTITY);
    a.store.add(ea, ClassId::ENTITY, pa, []).unwrap();
    a.store.remove(ea, pa).unwrap();
    assert_eq!(reader.read(&a.store), Ok(Removals::Ids(vec![ea.id])));
    for _ in 0..3 {
        let eb = b.spawn(ClassId::ENTITY);
        b.store.add(eb, ClassId::ENTITY, pb, []).unwrap();
        b.store.remove(eb, pb).unwrap();
    }
    assert!(matches!(
        reader.read(&b.store),
        Ok(Removals::Missed { cursor: 1, .. })
    ));
}

#[test]
fn a_reader_continues_on_a_snapshot_that_continues_its_history() {
    let mut w = World::new();
    let pulse = w.install(pulse());
    let members: Vec<_> = (0..3).map(|_| w.spawn(ClassId::ENTITY)).collect();
    for m in &members {
        w.store.add(*m, ClassId::ENTITY, pulse, []).unwrap();
    }
    let mut reader = RemovalReader::new(&w.store, pulse).unwrap();
    w.store.remove(members[0], pulse).unwrap();
    let mut later = w.store.snapshot();
    // A snapshot taken after the reader's cursor, written after it: the reader's history is a
    // prefix of the snapshot's, so it reads on without loss.
    later.remove(members[1], pulse).unwrap();
    assert_eq!(
        reader.read(&later),
        Ok(Removals::Ids(vec![members[0].id, members[1].id]))
    );
    // Back on the live store, which never saw that removal: the reader has read past it.
    w.store.remove(members[2], pulse).unwrap();
    assert!(matches!(
        reader.read(&w.store),
        Ok(Removals::Missed { cursor: 2, .. })
    ));
    // A reader that read nothing of the divergent part goes on reading either side.
    let mut fresh = RemovalReader::new(&w.store, pulse).unwrap();
    let mut fork = w.store.snapshot();
    fork.add(members[2], ClassId::ENTITY, pulse, []).unwrap();
    fork.remove(members[2], pulse).unwrap();
    let mut twin = fresh.clone();
    assert_eq!(fresh.read(&fork), Ok(Removals::Ids(vec![members[2].id])));
    assert_eq!(twin.read(&w.store), Ok(Removals::Ids(Vec::new())));
}

fn body() -> ComponentDef {
    ComponentDef::new("Body")
        .field(FieldDef::number("mass", 1.0))
        .field(FieldDef::integer("level", 0))
        .observed(true)
}

#[test]
fn a_load_marks_what_it_changed_dirty_and_keeps_pending_dirty_state() {
    let mut w = World::new();
    let body = w.install(body());
    let (mass, level) = (w.field(body, "mass"), w.field(body, "level"));
    let a = w.spawn(ClassId::ENTITY);
    let b = w.spawn(ClassId::ENTITY);
    w.store.add(a, ClassId::ENTITY, body, []).unwrap();
    w.store.add(b, ClassId::ENTITY, body, []).unwrap();
    let mut slot = SetSlot::new();
    w.store.save_into(body, &mut slot).unwrap();

    // After the save: `a`'s mass changes (the load will put it back), `b`'s level changes
    // and is still pending for outgoing processing when the load puts it back too; `b`'s
    // mass is written and taken, then left as it is.
    w.store.write(a, body, mass, 5.0).unwrap();
    w.store.take_dirty(body).unwrap();
    w.store.write(b, body, level, 3_i64).unwrap();
    let b_changed = w
        .store
        .set(body)
        .unwrap()
        .changed_ticks()
        .get(1)
        .expect("a row of the set");

    w.store.load_from(body, &slot).unwrap();
    let load_tick = w.store.tick();
    let set = w.store.set(body).unwrap();
    assert_eq!(*w.store.get::<f64>(a, body, mass).unwrap(), 1.0);
    assert_eq!(
        set.changed_ticks()
            .get(w.store.row(a, body).unwrap())
            .expect("a row of the set"),
        load_tick
    );
    assert_eq!(
        set.changed_ticks()
            .get(w.store.row(b, body).unwrap())
            .expect("a row of the set"),
        load_tick
    );
    let mut dirty = w.store.take_dirty(body).unwrap();
    dirty.sort_by_key(|(id, _)| *id);
    let fields = |i: usize| dirty[i].1.fields().collect::<Vec<_>>();
    assert_eq!(dirty.len(), 2, "{dirty:?}");
    assert_eq!(
        (dirty[0].0, fields(0)),
        (a.id, vec![mass]),
        "the load changed a's mass"
    );
    assert_eq!(
        (dirty[1].0, fields(1)),
        (b.id, vec![level]),
        "b's level, changed twice"
    );
    assert!(b_changed < load_tick);

    // A load that restores what the set holds already changes no row.
    w.store.save_into(body, &mut slot).unwrap();
    let before: Vec<_> = w.store.set(body).unwrap().changed_ticks().to_vec();
    w.store.load_from(body, &slot).unwrap();
    assert_eq!(
        w.store.set(body).unwrap().changed_ticks(),
        before.as_slice()
    );
    assert!(w.store.take_dirty(body).unwrap().is_empty());
}

#[test]
fn a_redefinition_keeps_rows_as_they_were_and_removes_lost_rows_fully() {
    let mut w = World::new();
    let body = w.install(body());
    let tag = w.install(ComponentDef::new("Tag").requires(&["Body"]).observed(true));
    let (mass, level) = (w.field(body, "mass"), w.field(body, "level"));
    let kept = w.spawn(ClassId::ENTITY);
    let lost = w.spawn(ClassId::ENTITY);
    let newcomer = w.spawn(ClassId::ENTITY);
    for at in [kept, lost] {
        w.store.add(at, ClassId::ENTITY, body, []).unwrap();
        w.store.add(at, ClassId::ENTITY, tag, []).unwrap();
    }
    w.store.write(kept, body, level, 4_i64).unwrap();
    let added = w
        .store
        .set(body)
        .unwrap()
        .added_ticks()
        .get(0)
        .expect("a row of the set");
    let changed = w
        .store
        .set(body)
        .unwrap()
        .changed_ticks()
        .get(0)
        .expect("a row of the set");
    w.store.drain_events();
    let mut reader = RemovalReader::new(&w.store, tag).unwrap();

    // Same fields, `mass` renamed to `weight` with its old name recorded; `kept` keeps its
    // values, `lost` has no row in the new definition, `newcomer` gets one.
    let redefined = ComponentDef::new("Body")
        .field(FieldDef::number("weight", 1.0).former_names(&["mass"]))
        .field(FieldDef::integer("level", 0))
        .observed(true);
    let rows = vec![
        (kept, vec![Value::Number(1.0), Value::Integer(4)]),
        (newcomer, vec![Value::Number(2.0), Value::Integer(0)]),
    ];
    let tick = Tick(w.store.tick().0 + 1);
    w.store
        .redefine(body, redefined, w.arena.classes(), rows)
        .unwrap();
    assert!(
        w.store.tick() > tick,
        "the dependents' removals follow the redefinition"
    );
    let set = w.store.set(body).unwrap();
    let row = w.store.row(kept, body).unwrap();
    assert_eq!(
        set.added_ticks().get(row).expect("a row of the set"),
        added,
        "a kept row is not new"
    );
    assert_eq!(
        set.changed_ticks().get(row).expect("a row of the set"),
        changed,
        "nor changed: its values are the same"
    );
    let new_row = w.store.row(newcomer, body).unwrap();
    assert_eq!(
        set.added_ticks().get(new_row).expect("a row of the set"),
        tick,
        "an adopted row is new"
    );
    assert_eq!(
        set.changed_ticks().get(new_row).expect("a row of the set"),
        tick
    );

    // The kept row's pending dirty state carries over.
    let dirty = w.store.take_dirty(body).unwrap();
    assert_eq!(dirty.len(), 1, "{dirty:?}");
    assert_eq!(dirty[0].0, kept.id);
    assert_eq!(dirty[0].1.fields().collect::<Vec<_>>(), vec![level]);
    let _ = mass;

    // The lost row is removed like any removal: an event, and its dependents go too.
    assert!(!w.store.has(lost, tag), "Tag requires Body");
    assert!(w.store.has(kept, tag));
    let mut events = w.store.drain_events();
    events.sort_by_key(|e| format!("{e:?}"));
    assert_eq!(
        events,
        vec![
            StoreEvent::Added {
                id: newcomer.id,
                component: body
            },
            StoreEvent::Removed {
                id: lost.id,
                component: body
            },
            StoreEvent::Removed {
                id: lost.id,
                component: tag
            },
        ]
    );
    assert_eq!(reader.read(&w.store), Ok(Removals::Ids(vec![lost.id])));
}

#[test]
fn loads_of_sets_of_other_shapes_one_after_another_restore_each_exactly() {
    let mut w = World::new();
    let body = w.install(body());
    let (mass, level) = (w.field(body, "mass"), w.field(body, "level"));
    let tag = w.install(ComponentDef::new("Tag").field(FieldDef::number("weight", 0.0)));
    let weight = w.field(tag, "weight");
    let few: Vec<_> = (0..3).map(|_| w.spawn(ClassId::ENTITY)).collect();
    let many: Vec<_> = (0..200).map(|_| w.spawn(ClassId::ENTITY)).collect();
    for at in &few {
        w.store.add(*at, ClassId::ENTITY, body, []).unwrap();
    }
    for at in &many {
        w.store.add(*at, ClassId::ENTITY, tag, []).unwrap();
    }
    let (mut body_slot, mut tag_slot) = (SetSlot::new(), SetSlot::new());
    w.store.save_into(body, &mut body_slot).unwrap();
    w.store.save_into(tag, &mut tag_slot).unwrap();
    w.store.take_dirty(body).unwrap();
    w.store.take_dirty(tag).unwrap();

    for round in 1..=3 {
        // Change both sets (a removal, writes), then load them back alternately: the load of
        // one set reuses what the load of the other left.
        let value = f64::from(round) + 10.0;
        w.store.write(few[0], body, mass, value).unwrap();
        w.store
            .write(few[1], body, level, i64::from(round))
            .unwrap();
        w.store.remove(few[2], body).unwrap();
        for at in &many[..50] {
            w.store.write(*at, tag, weight, value).unwrap();
        }
        w.store.remove(many[199], tag).unwrap();
        w.store.load_from(body, &body_slot).unwrap();
        let load_tick = w.store.tick();
        w.store.load_from(tag, &tag_slot).unwrap();

        let bodies = w.store.set(body).unwrap();
        assert_eq!(bodies.len(), 3, "round {round}");
        assert_eq!(*w.store.get::<f64>(few[0], body, mass).unwrap(), 1.0);
        assert_eq!(*w.store.get::<i64>(few[1], body, level).unwrap(), 0);
        let row2 = w.store.row(few[2], body).unwrap();
        assert_eq!(
            bodies.added_ticks().get(row2).expect("a row of the set"),
            load_tick,
            "a restored newcomer is new"
        );
        let tags = w.store.set(tag).unwrap();
        assert_eq!(tags.len(), 200);
        assert!(
            many.iter()
                .all(|at| *w.store.get::<f64>(*at, tag, weight).unwrap() == 0.0)
        );
        // Rows the loads changed are dirty (the written rows' fields, back to what was saved,
        // and the newcomers' none); nothing else is.
        let mut dirty = w.store.take_dirty(body).unwrap();
        dirty.sort_by_key(|(id, _)| *id);
        let fields: Vec<_> = dirty
            .iter()
            .map(|(id, m)| (*id, m.fields().collect::<Vec<_>>()))
            .collect();
        assert_eq!(
            fields,
            vec![(few[0].id, vec![mass]), (few[1].id, vec![level])],
            "round {round}"
        );
        assert_eq!(w.store.take_dirty(tag).unwrap().len(), 50, "round {round}");
    }
}

#[test]
fn a_reader_since_a_tick_lists_the_removals_after_it_and_says_when_they_were_dropped() {
    let mut w = World::new();
    let pulse = w.install(pulse());
    let members: Vec<_> = (0..4).map(|_| w.spawn(ClassId::ENTITY)).collect();
    for m in &members {
        w.store.add(*m, ClassId::ENTITY, pulse, []).unwrap();
    }
    w.store.remove(members[0], pulse).unwrap();
    w.store.end_frame();
    assert_eq!(w.store.frame_tick(), w.store.tick());
    w.store.remove(members[2], pulse).unwrap();
    w.store.remove(members[1], pulse).unwrap();
    // Made after the frame's removals, it still lists them (not the earlier frame's).
    let mut reader = RemovalReader::since(&w.store, pulse, w.store.frame_tick()).unwrap();
    let mut fresh = RemovalReader::new(&w.store, pulse).unwrap();
    assert_eq!(
        reader.read(&w.store),
        Ok(Removals::Ids(vec![members[1].id, members[2].id]))
    );
    assert_eq!(fresh.read(&w.store), Ok(Removals::Ids(vec![])));
    w.store.remove(members[3], pulse).unwrap();
    assert_eq!(
        reader.read(&w.store),
        Ok(Removals::Ids(vec![members[3].id]))
    );
    // A frame whose removals overflowed the log: a reader since its start cannot list them.
    w.store.end_frame();
    let many: Vec<_> = (0..20_000).map(|_| w.spawn(ClassId::ENTITY)).collect();
    for m in &many {
        w.store.add(*m, ClassId::ENTITY, pulse, []).unwrap();
    }
    for m in &many {
        w.store.remove(*m, pulse).unwrap();
    }
    let mut late = RemovalReader::since(&w.store, pulse, w.store.frame_tick()).unwrap();
    assert!(matches!(late.read(&w.store), Ok(Removals::Missed { .. })));
    // Since a tick inside what the log still holds, it lists exactly what followed.
    let tick = w.store.tick();
    w.store.add(many[0], ClassId::ENTITY, pulse, []).unwrap();
    w.store.remove(many[0], pulse).unwrap();
    let mut recent = RemovalReader::since(&w.store, pulse, tick).unwrap();
    assert_eq!(recent.read(&w.store), Ok(Removals::Ids(vec![many[0].id])));
}
