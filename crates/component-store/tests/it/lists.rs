//! List fields: copy-on-write buffers under snapshots, the accessor, reference lists.

use crate::common::World;
use strata_arena::{ClassId, Vec3};
use strata_component_store::{
    ComponentDef, CopyPair, FieldDef, FieldType, RefPolicy, StoreError, Value,
};

fn path() -> ComponentDef {
    ComponentDef::new("Path")
        .field(FieldDef::list("waypoints", FieldType::Vector))
        .field(FieldDef::reference_list("followers", RefPolicy::Clear))
}

fn v(x: f32) -> Value {
    Value::Vector(Vec3::new(x, 0.0, 0.0))
}

#[test]
fn append_replace_and_clear_through_the_accessor() {
    let mut w = World::new();
    let path = w.install(path());
    let wp = w.field(path, "waypoints");
    let e = w.spawn(ClassId::ENTITY);
    w.store.add(e, ClassId::ENTITY, path, []).unwrap();
    let tick = w.store.tick();
    {
        let mut list = w.store.list_mut(e, path, wp).unwrap();
        list.push(v(1.0)).unwrap();
        list.push(v(2.0)).unwrap();
        assert_eq!(list.len().unwrap(), 2);
        assert!(matches!(
            list.push(Value::Integer(3)),
            Err(StoreError::TypeMismatch { .. })
        ));
        assert!(
            !list.replace(vec![v(1.0), v(2.0)]).unwrap(),
            "equal content changes nothing"
        );
        assert!(list.replace(vec![v(5.0)]).unwrap());
    }
    assert!(w.store.tick() > tick);
    assert_eq!(w.store.list(e, path, wp).unwrap(), &[v(5.0)]);
    let tick = w.store.tick();
    assert!(w.store.list_mut(e, path, wp).unwrap().clear().unwrap());
    assert!(!w.store.list_mut(e, path, wp).unwrap().clear().unwrap());
    assert!(w.store.list(e, path, wp).unwrap().is_empty());
    match w.store.get_value(e, path, wp).unwrap() {
        Value::List(list) => assert!(!list.has_buffer(), "a cleared list holds no buffer"),
        other => panic!("{other:?}"),
    }
    assert_eq!(w.store.tick().0, tick.0 + 1, "one clear, one tick");
}

#[test]
fn an_older_snapshot_keeps_the_list_it_saw() {
    let mut w = World::new();
    let path = w.install(path());
    let wp = w.field(path, "waypoints");
    let e = w.spawn(ClassId::ENTITY);
    w.store.add(e, ClassId::ENTITY, path, []).unwrap();
    w.store.list_mut(e, path, wp).unwrap().push(v(1.0)).unwrap();
    let before = w.store.snapshot();
    w.store.list_mut(e, path, wp).unwrap().push(v(2.0)).unwrap();
    let middle = w.store.snapshot();
    w.store
        .list_mut(e, path, wp)
        .unwrap()
        .replace(vec![v(9.0)])
        .unwrap();
    w.store.list_mut(e, path, wp).unwrap().clear().unwrap();
    assert_eq!(before.list(e, path, wp).unwrap(), &[v(1.0)]);
    assert_eq!(middle.list(e, path, wp).unwrap(), &[v(1.0), v(2.0)]);
    assert!(w.store.list(e, path, wp).unwrap().is_empty());
}

#[test]
fn reference_lists_are_indexed_and_cleared_by_policy() {
    let mut w = World::new();
    let path = w.install(path());
    let followers = w.field(path, "followers");
    let e = w.spawn(ClassId::ENTITY);
    let (a, b) = (w.spawn(ClassId::ENTITY), w.spawn(ClassId::ENTITY));
    w.store.add(e, ClassId::ENTITY, path, []).unwrap();
    {
        let mut list = w.store.list_mut(e, path, followers).unwrap();
        list.push(Value::Reference(Some(a.id))).unwrap();
        list.push(Value::Reference(Some(b.id))).unwrap();
        list.push(Value::Reference(Some(a.id))).unwrap();
    }
    assert_eq!(
        w.store.set(path).unwrap().references_to(a.id).len(),
        2,
        "one entry per occurrence"
    );
    let outcome = w.destroy(a.id);
    assert_eq!(
        outcome.cleared,
        vec![(e.id, path, followers)],
        "one field cleared once"
    );
    assert_eq!(
        w.store.list(e, path, followers).unwrap(),
        &[Value::Reference(Some(b.id))]
    );
    assert!(w.store.set(path).unwrap().references_to(a.id).is_empty());
    w.store
        .list_mut(e, path, followers)
        .unwrap()
        .clear()
        .unwrap();
    assert!(w.store.set(path).unwrap().references_to(b.id).is_empty());
}

#[test]
fn copying_rows_remaps_reference_lists() {
    let mut w = World::new();
    let path = w.install(path());
    let followers = w.field(path, "followers");
    let (leader, member, outsider) = (
        w.spawn(ClassId::ENTITY),
        w.spawn(ClassId::ENTITY),
        w.spawn(ClassId::ENTITY),
    );
    w.store.add(leader, ClassId::ENTITY, path, []).unwrap();
    {
        let mut list = w.store.list_mut(leader, path, followers).unwrap();
        list.push(Value::Reference(Some(member.id))).unwrap();
        list.push(Value::Reference(Some(outsider.id))).unwrap();
    }
    let (leader2, member2) = (w.spawn(ClassId::ENTITY), w.spawn(ClassId::ENTITY));
    let pairs = [
        CopyPair {
            source: leader,
            copy: leader2,
            class: ClassId::ENTITY,
        },
        CopyPair {
            source: member,
            copy: member2,
            class: ClassId::ENTITY,
        },
    ];
    let copied = w
        .store
        .copy_rows(&pairs, |t| {
            if t == member.id {
                Some(member2.id)
            } else {
                Some(t)
            }
        })
        .unwrap();
    assert_eq!(copied, 1);
    assert_eq!(
        w.store.list(leader2, path, followers).unwrap(),
        &[
            Value::Reference(Some(member2.id)),
            Value::Reference(Some(outsider.id))
        ]
    );
    assert_eq!(
        w.store.set(path).unwrap().references_to(member2.id).len(),
        1
    );
    assert_eq!(
        w.store.set(path).unwrap().references_to(outsider.id).len(),
        2
    );
    assert_eq!(
        w.store.list(leader, path, followers).unwrap(),
        &[
            Value::Reference(Some(member.id)),
            Value::Reference(Some(outsider.id))
        ],
        "the source is untouched"
    );
}

#[test]
fn edits_that_change_nothing_keep_the_set_shared_with_snapshots() {
    let mut w = World::new();
    let path = w.install(path());
    let wp = w.field(path, "waypoints");
    let e = w.spawn(ClassId::ENTITY);
    w.store.add(e, ClassId::ENTITY, path, []).unwrap();
    let snapshot = w.store.snapshot();
    assert!(!w.store.list_mut(e, path, wp).unwrap().clear().unwrap());
    assert!(
        !w.store
            .list_mut(e, path, wp)
            .unwrap()
            .replace(vec![])
            .unwrap()
    );
    assert!(
        w.store.shares_set_with(&snapshot, path),
        "no copy for a no-op"
    );
    w.store.list_mut(e, path, wp).unwrap().push(v(1.0)).unwrap();
    let snapshot = w.store.snapshot();
    assert!(
        !w.store
            .list_mut(e, path, wp)
            .unwrap()
            .replace(vec![v(1.0)])
            .unwrap()
    );
    assert!(w.store.shares_set_with(&snapshot, path));
}
