//! Defaults of new rows: every new row starts from the definition's default values, and no row
//! shares mutable state with another (a list default is a copy-on-write buffer, so each row's
//! list is its own once written); a field with a default factory gets a value made for each new
//! row, once per row, in row order, on every path that creates rows, before an initializer runs.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use crate::common::World;
use strata_arena::{ClassId, InstanceId, Vec3};
use strata_component_store::{
    ComponentDef, FieldDef, FieldType, InstanceRef, ListValue, Stage, StoreError, Value,
};

fn v(x: f32) -> Value {
    Value::Vector(Vec3::new(x, 0.0, 0.0))
}

#[test]
fn each_spawned_row_owns_its_default_list() {
    let mut w = World::new();
    let path = w.install(
        ComponentDef::new("Path")
            .field(FieldDef::list("waypoints", FieldType::Vector))
            .field(FieldDef::number("speed", 3.0)),
    );
    let waypoints = w.field(path, "waypoints");
    let speed = w.field(path, "speed");
    let mut stage = Stage::new(&w.arena, &w.store);
    let ticket = stage
        .spawn(
            &mut w.arena,
            3,
            ClassId::ENTITY,
            None,
            &[path],
            move |rows| {
                // The initializer sees every row at its default before it writes.
                assert!(
                    rows.column_mut::<f64>(path, speed)?
                        .iter()
                        .all(|s| *s == 3.0)
                );
                rows.set_value(
                    path,
                    1,
                    waypoints,
                    Value::List(ListValue::from_vec(vec![v(9.0)])),
                )?;
                Ok::<(), StoreError>(())
            },
        )
        .unwrap();
    stage.commit(&mut w.arena, &mut w.store).unwrap();
    let at = |k: usize| InstanceRef::of(&w.arena, ticket.id(k).unwrap()).unwrap();
    let (a, b, c) = (at(0), at(1), at(2));
    w.store
        .list_mut(a, path, waypoints)
        .unwrap()
        .push(v(1.0))
        .unwrap();
    assert_eq!(w.store.list(a, path, waypoints).unwrap(), &[v(1.0)]);
    assert_eq!(w.store.list(b, path, waypoints).unwrap(), &[v(9.0)]);
    assert!(w.store.list(c, path, waypoints).unwrap().is_empty());
    for at in [a, b, c] {
        assert_eq!(*w.store.get::<f64>(at, path, speed).unwrap(), 3.0);
    }
}

/// A factory counting the rows it made values for: the value of the `k`-th call is `k`.
fn counting() -> (
    Arc<AtomicI64>,
    impl Fn(InstanceId) -> Value + Send + Sync + 'static,
) {
    let calls = Arc::new(AtomicI64::new(0));
    let seen = calls.clone();
    (calls, move |_| {
        Value::Integer(seen.fetch_add(1, Ordering::Relaxed))
    })
}

fn serials(w: &World, c: strata_component_store::ComponentId) -> Vec<i64> {
    let serial = w.field(c, "serial");
    w.store
        .set(c)
        .unwrap()
        .values::<i64>(serial)
        .unwrap()
        .to_vec()
}

#[test]
fn a_stateful_default_factory_runs_once_per_new_row_on_every_path() {
    let mut w = World::new();
    let (calls, make) = counting();
    let c = w.install(
        ComponentDef::new("Ticket")
            .field(FieldDef::integer("serial", -1).with_factory(make))
            .field(FieldDef::number("price", 1.0)),
    );
    let serial = w.field(c, "serial");
    let price = w.field(c, "price");
    // One add, one insert, a bulk insert of three.
    let a = w.spawn(ClassId::ENTITY);
    w.store.add(a, ClassId::ENTITY, c, []).unwrap();
    let b = w.spawn(ClassId::ENTITY);
    drop(w.store.insert(b, ClassId::ENTITY, c).unwrap());
    let bulk: Vec<InstanceRef> = (0..3).map(|_| w.spawn(ClassId::ENTITY)).collect();
    drop(w.store.insert_many(&bulk, ClassId::ENTITY, c).unwrap());
    assert_eq!(serials(&w, c), [0, 1, 2, 3, 4]);
    // A value given explicitly is used instead, and the factory is not called for it.
    let given = w.spawn(ClassId::ENTITY);
    w.store
        .add(given, ClassId::ENTITY, c, [(serial, Value::Integer(99))])
        .unwrap();
    assert_eq!(calls.load(Ordering::Relaxed), 5);
    // A staged spawn: the factory runs at placement, before the initializer, which sees its
    // values; then a bulk set's new rows.
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let into = seen.clone();
    let mut stage = Stage::new(&w.arena, &w.store);
    stage
        .spawn(&mut w.arena, 2, ClassId::ENTITY, None, &[c], move |rows| {
            into.lock()
                .unwrap()
                .extend_from_slice(rows.column_mut::<i64>(c, serial)?);
            Ok::<(), StoreError>(())
        })
        .unwrap();
    let newcomers: Vec<InstanceRef> = (0..2).map(|_| w.spawn(ClassId::ENTITY)).collect();
    stage.set(&newcomers, c, vec![(price, Value::Number(2.0))]);
    stage.set(&[a], c, vec![(serial, Value::Integer(50))]);
    stage.commit(&mut w.arena, &mut w.store).unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [5, 6],
        "the initializer sees the made values"
    );
    assert_eq!(serials(&w, c), [50, 1, 2, 3, 4, 99, 5, 6, 7, 8]);
    assert_eq!(
        calls.load(Ordering::Relaxed),
        9,
        "once per new row, never for a holder"
    );
    // A cancelled spawn never places rows, so the factory never runs for it.
    let mut stage = Stage::new(&w.arena, &w.store);
    let ticket = stage
        .spawn(&mut w.arena, 4, ClassId::ENTITY, None, &[c], |_| {
            Ok::<(), StoreError>(())
        })
        .unwrap();
    stage.cancel(&mut w.arena, &ticket).unwrap();
    stage.commit(&mut w.arena, &mut w.store).unwrap();
    assert_eq!(calls.load(Ordering::Relaxed), 9);
}

#[test]
fn a_factory_value_that_does_not_fit_refuses_the_add_and_adds_nothing() {
    let mut w = World::new();
    let c = w.install(
        ComponentDef::new("Odd")
            .field(FieldDef::integer("serial", 0).with_factory(|_| Value::Text("no".into()))),
    );
    let tick = w.store.tick();
    let a = w.spawn(ClassId::ENTITY);
    assert!(matches!(
        w.store.add(a, ClassId::ENTITY, c, []),
        Err(StoreError::TypeMismatch { ref field, .. }) if &**field == "serial"
    ));
    let many: Vec<InstanceRef> = (0..3).map(|_| w.spawn(ClassId::ENTITY)).collect();
    assert!(w.store.insert_many(&many, ClassId::ENTITY, c).is_err());
    let mut stage = Stage::new(&w.arena, &w.store);
    let ticket = stage
        .spawn(&mut w.arena, 2, ClassId::ENTITY, None, &[c], |_| {
            Ok::<(), StoreError>(())
        })
        .unwrap();
    let error = stage.commit(&mut w.arena, &mut w.store).unwrap_err();
    assert_eq!(error.failed, Some(ticket.op()));
    assert!(!w.arena.is_live(ticket.first()));
    assert!(w.store.set(c).unwrap().is_empty());
    assert_eq!(w.store.tick(), tick);
}

#[test]
fn a_factory_may_not_make_references() {
    let mut w = World::new();
    let refused = w.store.install(
        ComponentDef::new("Aim").field(
            FieldDef::reference("target", strata_component_store::RefPolicy::Clear)
                .with_factory(|_| Value::Reference(None)),
        ),
        w.arena.classes(),
    );
    assert!(matches!(refused, Err(StoreError::InvalidDefinition { .. })));
}
