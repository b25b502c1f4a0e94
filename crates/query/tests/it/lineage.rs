//! Identity of what a query was built and windowed against: a change window taken against one
//! store is not applied to another (a rollback to an older snapshot, a replaced store), and a
//! cache built against one arena is not reused for another whose revisions happen to be equal.

use crate::common::Caching;

use strata_arena::{Arena, ClassId, InstanceId, Snapshot};
use strata_component_store::{ComponentDef, ComponentId, FieldDef, FieldId, InstanceRef, Store};
use strata_query::{Query, QuerySpec};

fn health(arena: &Arena, store: &mut Store) -> (ComponentId, FieldId) {
    let c = store
        .install(
            ComponentDef::new("Health").field(FieldDef::number("n", 0.0)),
            arena.classes(),
        )
        .unwrap();
    (c, store.field(c, "n").unwrap())
}

fn spawn(arena: &mut Arena, store: &mut Store, c: ComponentId) -> InstanceRef {
    let id = arena.create(ClassId::ENTITY, None).unwrap();
    let at = InstanceRef::new(id, arena.slot_of(id).unwrap());
    store.add(at, ClassId::ENTITY, c, []).unwrap();
    at
}

fn selected(q: &mut Query, arena: &Snapshot, store: &Store) -> Vec<InstanceId> {
    q.run(arena, store)
        .unwrap()
        .iter()
        .map(|m| m.id())
        .collect()
}

/// A rollback to an older snapshot brings back a store whose ticks are below the query's
/// baseline: comparing them would hide every later write. The window is unavailable instead, so
/// the pass yields every match once and says so; the next pass has a fresh baseline.
fn a_change_window_taken_against_another_store_selects_every_match_once(mode: Caching) {
    let mut arena = Arena::standard();
    let mut store = Store::new();
    let (c, n) = health(&arena, &mut store);
    let members: Vec<InstanceRef> = (0..3).map(|_| spawn(&mut arena, &mut store, c)).collect();
    let ids: Vec<InstanceId> = members.iter().map(|m| m.id).collect();
    let saved = store.snapshot();

    let mut changed = mode.query(QuerySpec::new().with(c).changed(c)).unwrap();
    assert_eq!(selected(&mut changed, &arena, &store), ids);
    // The live store moves on, well past the saved tick.
    for round in 1..4 {
        for m in &members {
            store.write::<f64>(*m, c, n, f64::from(round)).unwrap();
        }
    }
    assert_eq!(selected(&mut changed, &arena, &store), ids);
    assert!(store.tick() > saved.tick());

    // Roll back: the saved snapshot becomes the store, and one row is written in it.
    let mut store = saved;
    store.write::<f64>(members[1], c, n, 7.0).unwrap();
    assert!(store.tick() < changed.baseline().unwrap());
    let pass = changed.run(&arena, &store).unwrap();
    assert!(
        pass.window_unavailable(),
        "the baseline belongs to another store"
    );
    assert_eq!(pass.iter().map(|m| m.id()).collect::<Vec<_>>(), ids);

    // Once: the baseline now belongs to this store.
    let pass = changed.run(&arena, &store).unwrap();
    assert!(!pass.window_unavailable());
    assert!(pass.is_empty());
    store.write::<f64>(members[2], c, n, 8.0).unwrap();
    assert_eq!(selected(&mut changed, &arena, &store), vec![ids[2]]);
}

/// Two arenas that went through the same number of changes have equal revisions, yet different
/// tags and hierarchies. A cache built against one is not reused for the other; an arena and a
/// snapshot of it are one lineage, where equal revisions do mean equal state.
fn a_cache_built_against_one_arena_is_not_reused_for_another(mode: Caching) {
    let mut store = Store::new();
    let mut red = Arena::standard();
    let mut blue = Arena::standard();
    let (c, _) = health(&red, &mut store);
    // The same ids and slots in both arenas, tagged and parented differently.
    let (a, b) = (
        spawn(&mut red, &mut store, c),
        spawn(&mut red, &mut store, c),
    );
    for _ in 0..2 {
        blue.create(ClassId::ENTITY, None).unwrap();
    }
    red.add_tag(a.id, "hot").unwrap();
    blue.add_tag(b.id, "hot").unwrap();
    let (red_folder, blue_folder) = (
        red.create(ClassId::FOLDER, None).unwrap(),
        blue.create(ClassId::FOLDER, None).unwrap(),
    );
    red.set_parent(a.id, Some(red_folder)).unwrap();
    blue.set_parent(b.id, Some(blue_folder)).unwrap();
    let folder = store
        .install(ComponentDef::new("Zone"), red.classes())
        .unwrap();
    let at = InstanceRef::new(red_folder, red.slot_of(red_folder).unwrap());
    store.add(at, ClassId::FOLDER, folder, []).unwrap();
    assert_eq!(red.revisions(), blue.revisions());

    let mut hot = mode.query(QuerySpec::new().with(c).tagged("hot")).unwrap();
    assert_eq!(selected(&mut hot, &red, &store), vec![a.id]);
    assert_eq!(selected(&mut hot, &blue, &store), vec![b.id]);
    let mut zoned = mode
        .query(QuerySpec::new().with(c).ancestor(folder))
        .unwrap();
    assert_eq!(selected(&mut zoned, &red, &store), vec![a.id]);
    assert_eq!(selected(&mut zoned, &blue, &store), vec![b.id]);

    // One lineage: a snapshot of the arena reuses the cache built against the arena.
    let generation = hot.generation();
    let snapshot = blue.snapshot();
    assert_eq!(selected(&mut hot, &snapshot, &store), vec![b.id]);
    mode.after_read(&hot, generation, false);
}

/// A class filter reads the arena too: another arena whose instance of the same id and slot has
/// another class, at the same revisions, is not served the first arena's classes.
fn a_class_filter_built_against_one_arena_is_not_reused_for_another(mode: Caching) {
    let mut store = Store::new();
    let mut red = Arena::standard();
    let mut blue = Arena::standard();
    let (c, _) = health(&red, &mut store);
    let a = spawn(&mut red, &mut store, c);
    blue.create(ClassId::FOLDER, None).unwrap();
    assert_eq!(blue.slot_of(a.id), Some(a.slot));
    assert_eq!(red.revisions(), blue.revisions());

    let mut entities = mode
        .query(QuerySpec::new().with(c).class(ClassId::ENTITY))
        .unwrap();
    assert_eq!(selected(&mut entities, &red, &store), vec![a.id]);
    assert_eq!(
        selected(&mut entities, &blue, &store),
        Vec::<InstanceId>::new()
    );
    assert_eq!(selected(&mut entities, &red, &store), vec![a.id]);
}

crate::common::both_ways!(
    a_change_window_taken_against_another_store_selects_every_match_once,
    a_cache_built_against_one_arena_is_not_reused_for_another,
    a_class_filter_built_against_one_arena_is_not_reused_for_another,
);
