//! Ticks, dirty masks, events, structural revisions, handles, bindings, removal readers and
//! store snapshots.

use crate::common::World;
use strata_arena::{ClassId, Vec3};
use strata_component_store::{
    Binding, ComponentDef, ComponentHandle, FieldDef, REMOVAL_LOG_CAPACITY, RemovalReader,
    Removals, StoreError, StoreEvent, Tick, Value,
};

fn body() -> ComponentDef {
    ComponentDef::new("Body")
        .field(FieldDef::vector("position", Vec3::ZERO))
        .field(FieldDef::number("mass", 1.0))
        .observed(true)
}

#[test]
fn equal_writes_change_nothing_at_all() {
    let mut w = World::new();
    let body = w.install(body());
    let mass = w.field(body, "mass");
    let e = w.spawn(ClassId::ENTITY);
    w.store.add(e, ClassId::ENTITY, body, []).unwrap();
    w.store.drain_events();
    w.store.take_dirty(body).unwrap();
    let tick = w.store.tick();
    let changed = w.store.set(body).unwrap().changed_ticks().to_vec();

    assert!(!w.store.write(e, body, mass, 1.0).unwrap());
    assert!(
        !w.store
            .write_value(e, body, mass, Value::Number(1.0))
            .unwrap()
    );
    let handle = ComponentHandle::new(&w.store, e, body).unwrap();
    assert!(!handle.write(&mut w.store, mass, 1.0).unwrap());
    let mut writer = w.store.column_writer::<f64>(body, mass).unwrap();
    assert_eq!(writer.write(0, 1.0), Ok(false));

    assert_eq!(w.store.tick(), tick);
    assert_eq!(
        w.store.set(body).unwrap().changed_ticks(),
        changed.as_slice()
    );
    assert!(w.store.drain_events().is_empty());
    assert!(w.store.take_dirty(body).unwrap().is_empty());
}

#[test]
fn actual_changes_tick_mark_dirty_and_notify() {
    let mut w = World::new();
    let body = w.install(body());
    let (position, mass) = (w.field(body, "position"), w.field(body, "mass"));
    let a = w.spawn(ClassId::ENTITY);
    let b = w.spawn(ClassId::ENTITY);
    w.store.add(a, ClassId::ENTITY, body, []).unwrap();
    let added_at = w.store.tick();
    w.store.add(b, ClassId::ENTITY, body, []).unwrap();
    assert_eq!(
        w.store.drain_events(),
        vec![
            StoreEvent::Added {
                id: a.id,
                component: body
            },
            StoreEvent::Added {
                id: b.id,
                component: body
            }
        ]
    );
    let set = w.store.set(body).unwrap();
    assert_eq!(
        set.added_ticks().get(0).expect("a row of the set"),
        added_at
    );
    assert_eq!(
        set.changed_ticks().get(0).expect("a row of the set"),
        added_at,
        "an add counts as a change"
    );

    assert!(w.store.write(a, body, mass, 2.0).unwrap());
    let after_first = w.store.tick();
    assert!(after_first > added_at);
    assert!(w.store.write(a, body, position, Vec3::ONE).unwrap());
    assert!(w.store.tick() > after_first);
    let set = w.store.set(body).unwrap();
    assert_eq!(
        set.changed_ticks().get(0).expect("a row of the set"),
        w.store.tick()
    );
    assert_eq!(
        set.added_ticks().get(0).expect("a row of the set"),
        added_at,
        "added ticks never move"
    );
    assert_eq!(
        set.changed_ticks().get(1).expect("a row of the set"),
        set.added_ticks().get(1).expect("a row of the set"),
        "b untouched"
    );
    assert_eq!(
        w.store.drain_events(),
        vec![
            StoreEvent::Changed {
                id: a.id,
                component: body,
                field: mass
            },
            StoreEvent::Changed {
                id: a.id,
                component: body,
                field: position
            }
        ]
    );

    let dirty = w.store.take_dirty(body).unwrap();
    assert_eq!(dirty.len(), 1);
    assert_eq!(dirty[0].0, a.id);
    assert_eq!(
        dirty[0].1.fields().collect::<Vec<_>>(),
        vec![position, mass]
    );
    assert!(
        w.store.take_dirty(body).unwrap().is_empty(),
        "taking clears the masks"
    );
}

#[test]
fn structural_revision_counts_adds_removes_and_replacements() {
    let mut w = World::new();
    let body = w.install(body());
    let mass = w.field(body, "mass");
    let rev = |w: &World| w.store.set(body).unwrap().structural_revision();
    let e = w.spawn(ClassId::ENTITY);
    let r0 = rev(&w);
    w.store.add(e, ClassId::ENTITY, body, []).unwrap();
    let r1 = rev(&w);
    assert!(r1 > r0);
    w.store.write(e, body, mass, 5.0).unwrap();
    assert_eq!(rev(&w), r1, "field writes are not structural");
    w.store.remove(e, body).unwrap();
    let r2 = rev(&w);
    assert!(r2 > r1);
    w.store
        .redefine(
            body,
            self::body().field(FieldDef::boolean("asleep", false)),
            w.arena.classes(),
            vec![],
        )
        .unwrap();
    assert!(rev(&w) > r2, "a replacement is structural");
}

#[test]
fn handles_resolve_the_present_row_and_never_another_instance() {
    let mut w = World::new();
    let body = w.install(body());
    let mass = w.field(body, "mass");
    let a = w.spawn(ClassId::ENTITY);
    let b = w.spawn(ClassId::ENTITY);
    w.store
        .add(a, ClassId::ENTITY, body, [(mass, Value::Number(10.0))])
        .unwrap();
    w.store
        .add(b, ClassId::ENTITY, body, [(mass, Value::Number(20.0))])
        .unwrap();
    let ha = ComponentHandle::new(&w.store, a, body).unwrap();
    let hb = ComponentHandle::new(&w.store, b, body).unwrap();

    // Removing a swaps b into row 0; b's handle follows, a's handle reports the removal.
    w.store.remove(a, body).unwrap();
    assert_eq!(*hb.get::<f64>(&w.store, mass).unwrap(), 20.0);
    assert_eq!(hb.row(&w.store).unwrap(), 0);
    assert_eq!(
        ha.get::<f64>(&w.store, mass).unwrap_err(),
        StoreError::MissingMembership {
            id: a.id,
            component: body,
            component_name: "Body".into(),
        }
    );

    // After b is destroyed and its slot reused by a new instance with the component, b's
    // handle still reports missing, never the newcomer's data.
    w.destroy(b.id);
    w.settle();
    let c = w.spawn(ClassId::ENTITY);
    assert_eq!(c.slot, b.slot);
    w.store
        .add(c, ClassId::ENTITY, body, [(mass, Value::Number(30.0))])
        .unwrap();
    assert!(matches!(
        hb.get::<f64>(&w.store, mass),
        Err(StoreError::MissingMembership { .. })
    ));
    assert!(!hb.is_present(&w.store));

    // A redefinition makes old handles stale rather than reading reshaped rows.
    let hc = ComponentHandle::new(&w.store, c, body).unwrap();
    w.store
        .redefine(
            body,
            self::body(),
            w.arena.classes(),
            vec![(c, vec![Value::Vector(Vec3::ZERO), Value::Number(30.0)])],
        )
        .unwrap();
    assert_eq!(
        hc.row(&w.store).unwrap_err(),
        StoreError::StaleDefinition {
            component: body,
            component_name: "Body".into(),
        }
    );
    assert!(
        ComponentHandle::new(&w.store, c, body)
            .unwrap()
            .is_present(&w.store)
    );
}

#[test]
fn bindings_refresh_on_identity_name_revision_and_allocation() {
    let mut w = World::new();
    let body = w.install(body());
    let mut binding = Binding::new("Body");
    assert_eq!(
        binding.field(&w.store, "mass").unwrap(),
        (body, w.field(body, "mass"))
    );
    assert_eq!(binding.component(&w.store).unwrap(), body);
    assert_eq!(
        binding.resolutions(),
        1,
        "one resolution serves repeated lookups"
    );

    // Another store value (a snapshot) has another identity.
    let snapshot = w.store.snapshot();
    binding.component(&snapshot).unwrap();
    assert_eq!(binding.resolutions(), 2);
    binding.component(&w.store).unwrap();
    assert_eq!(binding.resolutions(), 3);

    // A name change elsewhere in the store.
    w.install(ComponentDef::new("Other"));
    binding.component(&w.store).unwrap();
    assert_eq!(binding.resolutions(), 4);
    binding.field(&w.store, "mass").unwrap();
    assert_eq!(binding.resolutions(), 4);

    // A redefinition under the same name and id: a new allocation, fields re-resolved.
    let name_revision = w.store.name_revision();
    w.store
        .redefine(
            body,
            ComponentDef::new("Body").field(FieldDef::number("mass", 1.0)),
            w.arena.classes(),
            vec![],
        )
        .unwrap();
    assert_eq!(w.store.name_revision(), name_revision, "same name");
    assert_eq!(
        binding.field(&w.store, "mass").unwrap(),
        (body, strata_component_store::FieldId::from_index(0))
    );
    assert_eq!(binding.resolutions(), 5);
    assert!(matches!(
        binding.field(&w.store, "position"),
        Err(StoreError::UnknownField { .. })
    ));
}

#[test]
fn removal_readers_are_independent_sorted_and_deduplicated() {
    let mut w = World::new();
    let body = w.install(body());
    let mut early = RemovalReader::new(&w.store, body).unwrap();
    let members: Vec<_> = (0..4).map(|_| w.spawn(ClassId::ENTITY)).collect();
    for m in &members {
        w.store.add(*m, ClassId::ENTITY, body, []).unwrap();
    }
    w.store.remove(members[2], body).unwrap();
    w.store.remove(members[0], body).unwrap();
    // members[0] gains and loses the component again: two records, one id.
    w.store.add(members[0], ClassId::ENTITY, body, []).unwrap();
    w.store.remove(members[0], body).unwrap();
    let mut late = RemovalReader::new(&w.store, body).unwrap();
    w.store.remove(members[3], body).unwrap();

    assert_eq!(
        early.read(&w.store).unwrap(),
        Removals::Ids(vec![members[0].id, members[2].id, members[3].id])
    );
    assert_eq!(
        late.read(&w.store).unwrap(),
        Removals::Ids(vec![members[3].id])
    );
    assert_eq!(
        early.read(&w.store).unwrap(),
        Removals::Ids(vec![]),
        "nothing new"
    );
}

#[test]
fn an_overflowed_removal_log_says_missed_then_reads_from_the_head() {
    let mut w = World::new();
    let body = w.install(body());
    let e = w.spawn(ClassId::ENTITY);
    let mut reader = RemovalReader::new(&w.store, body).unwrap();
    for _ in 0..=REMOVAL_LOG_CAPACITY {
        w.store.add(e, ClassId::ENTITY, body, []).unwrap();
        w.store.remove(e, body).unwrap();
    }
    assert!(w.store.set(body).unwrap().removal_log().len() <= REMOVAL_LOG_CAPACITY);
    assert!(matches!(
        reader.read(&w.store).unwrap(),
        Removals::Missed { cursor: 0, .. }
    ));
    w.store.add(e, ClassId::ENTITY, body, []).unwrap();
    w.store.remove(e, body).unwrap();
    assert_eq!(
        reader.read(&w.store).unwrap(),
        Removals::Ids(vec![e.id]),
        "the fresh cursor works"
    );
}

#[test]
fn snapshots_share_unmodified_sets_and_never_change() {
    let mut w = World::new();
    let body = w.install(body());
    let other = w.install(ComponentDef::new("Tag"));
    let mass = w.field(body, "mass");
    let e = w.spawn(ClassId::ENTITY);
    w.store.add(e, ClassId::ENTITY, body, []).unwrap();
    w.store.add(e, ClassId::ENTITY, other, []).unwrap();
    let snapshot = w.store.snapshot();
    assert_ne!(snapshot.id(), w.store.id());
    assert!(w.store.shares_set_with(&snapshot, body));

    w.store.write(e, body, mass, 99.0).unwrap();
    assert!(
        !w.store.shares_set_with(&snapshot, body),
        "the written set was copied"
    );
    assert!(
        w.store.shares_set_with(&snapshot, other),
        "the other set is still shared"
    );
    assert_eq!(*snapshot.get::<f64>(e, body, mass).unwrap(), 1.0);
    w.store.remove(e, other).unwrap();
    assert!(snapshot.has(e, other));
    assert_eq!(snapshot.tick(), Tick(2));
}

#[test]
fn the_dirty_list_stays_bounded_without_a_consumer() {
    let mut w = World::new();
    let body = w.install(body());
    let mass = w.field(body, "mass");
    let keeper = w.spawn(ClassId::ENTITY);
    w.store.add(keeper, ClassId::ENTITY, body, []).unwrap();
    let e = w.spawn(ClassId::ENTITY);
    for k in 0..10_000 {
        w.store.add(e, ClassId::ENTITY, body, []).unwrap();
        w.store.write(e, body, mass, f64::from(k) + 2.0).unwrap();
        w.store.remove(e, body).unwrap();
        w.store.drain_events();
    }
    w.store.write(keeper, body, mass, 7.0).unwrap();
    let set = w.store.set(body).unwrap();
    assert!(
        set.pending_dirty() <= 2 * set.len() + 64,
        "{} entries for {} rows",
        set.pending_dirty(),
        set.len()
    );
    let dirty = w.store.take_dirty(body).unwrap();
    assert_eq!(dirty.len(), 1, "the keeper's change is still reported");
    assert_eq!(dirty[0].0, keeper.id);
    assert!(dirty[0].1.contains(mass));
}
