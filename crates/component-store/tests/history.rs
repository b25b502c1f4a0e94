//! Snapshot slots and removal readers belong to the store (and the history) they came from:
//! used on another store, or on a history that does not continue theirs, they say so rather than
//! replace columns of another kind or return a partial list.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly on purpose")]

mod common;

use std::sync::Arc;

use common::World;
use strata_arena::{ClassId, Vec3};
use strata_component_store::{ComponentDef, ComponentHandle, FieldDef, SetSlot, StoreError, Value};

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
        matches!(got, Err(StoreError::SlotFromOtherStore { component }) if component == name),
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
    // A handle is bound to its store's definition too.
    assert_eq!(
        handle.get_value(&b.store, text),
        Err(StoreError::StaleDefinition(position))
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
            found: Some(position)
        })
    );
}
