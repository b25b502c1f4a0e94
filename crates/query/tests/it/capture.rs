//! `Query::capture`: a query's committed membership copied for a staged batch, which never
//! gains an instance spawned afterwards, whether the spawn was staged before or after it.

use crate::common::Caching;

use strata_arena::{Arena, ClassId};
use strata_component_store::{
    ComponentDef, FieldDef, InstanceRef, Stage, Store, StoreError, Value,
};
use strata_query::QuerySpec;

fn a_captured_membership_never_picks_up_a_later_spawn(mode: Caching) {
    let mut arena = Arena::standard();
    let mut store = Store::new();
    let health = store
        .install(
            ComponentDef::new("Health").field(FieldDef::number("current", 100.0)),
            arena.classes(),
        )
        .unwrap();
    let current = store.field(health, "current").unwrap();
    let made = arena.create_many(ClassId::ENTITY, None, 3).unwrap();
    let existing: Vec<InstanceRef> = made
        .iter()
        .map(|(id, slot)| InstanceRef::new(*id, *slot))
        .collect();
    store
        .insert_many(&existing, ClassId::ENTITY, health)
        .unwrap();
    let mut query = mode.query(QuerySpec::new().with(health)).unwrap();

    let mut stage = Stage::new(&arena, &store);
    let no_init = |_: &mut strata_component_store::SpawnRows<'_>| Ok::<(), StoreError>(());
    let before = stage
        .spawn(&mut arena, 2, ClassId::ENTITY, None, &[health], no_init)
        .unwrap();
    let members = query.capture(&arena, &store).unwrap();
    assert_eq!(members, existing, "the committed membership, in id order");
    stage.set(&members, health, vec![(current, Value::Number(1.0))]);
    let after = stage
        .spawn(&mut arena, 2, ClassId::ENTITY, None, &[health], no_init)
        .unwrap();
    stage.remove(&members, health);
    let published = stage.commit(&mut arena, &mut store).unwrap();
    assert_eq!((published.replaced, published.removed), (3, 3));

    // Only the four spawned instances remain, at their defaults: neither batch touched them.
    let left: Vec<InstanceRef> = query.capture(&arena, &store).unwrap();
    let spawned: Vec<InstanceRef> = before.instances().chain(after.instances()).collect();
    assert_eq!(left, spawned);
    for at in spawned {
        assert_eq!(*store.get::<f64>(at, health, current).unwrap(), 100.0);
    }
}

crate::common::both_ways!(a_captured_membership_never_picks_up_a_later_spawn,);
