//! Runtime ids, slots, explicit insertion, client-local ids, GUIDs and persistent ids.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly on purpose")]

mod common;

use common::{assert_refused_unchanged, place};
use strata_arena::{Arena, ArenaError, ClassId, IdRange, InstanceId, PersistentId, Slot};

fn id(raw: u64) -> InstanceId {
    InstanceId::new(raw).unwrap()
}

#[test]
fn ids_count_up_from_one_and_sit_at_id_minus_one() {
    let mut arena = Arena::standard();
    let a = arena.create(ClassId::FOLDER, None).unwrap();
    let b = arena.create(ClassId::FOLDER, Some(a)).unwrap();
    assert_eq!((a.get(), b.get()), (1, 2));
    assert_eq!(arena.slot_of(a), Some(Slot::from_index(0)));
    assert_eq!(arena.slot_of(b), Some(Slot::from_index(1)));
}

#[test]
fn stale_id_never_resolves_to_the_slot_s_new_occupant() {
    let mut arena = Arena::standard();
    let old = arena.create(ClassId::PART, None).unwrap();
    let old_slot = arena.slot_of(old).unwrap();
    arena.destroy(old).unwrap();
    arena.drain().unwrap();
    arena.drain().unwrap();

    let new = arena.create(ClassId::FOLDER, None).unwrap();
    assert_ne!(new, old, "ids are never reused");
    assert_eq!(arena.slot_of(new), Some(old_slot), "the slot is reused");
    assert!(arena.get(old).is_none());
    assert_eq!(
        arena.node(old).unwrap_err(),
        ArenaError::UnknownInstance(old)
    );
    assert_eq!(arena.slot_of(old), None);
    // The new occupant resolves through the id map, since its slot is not `id - 1`.
    assert_eq!(arena.get(new).unwrap().class(), ClassId::FOLDER);
    assert_eq!(
        arena.set_name(old, "x").unwrap_err(),
        ArenaError::UnknownInstance(old)
    );
}

#[test]
fn replicated_ids_are_inserted_as_given() {
    let mut client = Arena::client(Arena::standard().classes_shared().clone());
    let replicated = id(500);
    client
        .insert_with_id(replicated, ClassId::FOLDER, None)
        .unwrap();
    client
        .insert_with_id(id(7), ClassId::PART, Some(replicated))
        .unwrap();
    assert_eq!(client.get(id(7)).unwrap().parent(), Some(replicated));
    assert_eq!(client.children(replicated).collect::<Vec<_>>(), vec![id(7)]);

    let local = client.create(ClassId::FOLDER, None).unwrap();
    assert_eq!(local.get(), 1 << 52, "client-local ids start at 2^52");
    assert_eq!(local.range(), IdRange::ClientLocal);

    let error = assert_refused_unchanged(&mut client, |a| {
        a.insert_with_id(replicated, ClassId::FOLDER, None)
    });
    assert_eq!(error, ArenaError::IdInUse(replicated));
}

#[test]
fn own_range_insertion_moves_the_counter_and_refuses_issued_ids() {
    let mut arena = Arena::standard();
    let first = arena.create(ClassId::FOLDER, None).unwrap();
    arena.insert_with_id(id(10), ClassId::FOLDER, None).unwrap();
    assert_eq!(arena.create(ClassId::FOLDER, None).unwrap(), id(11));

    arena.destroy(first).unwrap();
    arena.drain().unwrap();
    arena.drain().unwrap();
    let error = assert_refused_unchanged(&mut arena, |a| {
        a.insert_with_id(first, ClassId::FOLDER, None)
    });
    assert_eq!(
        error,
        ArenaError::IdRetired(first),
        "a reclaimed id stays retired"
    );
    assert_eq!(
        assert_refused_unchanged(&mut arena, |a| a.insert_with_id(
            id(5),
            ClassId::FOLDER,
            None
        )),
        ArenaError::IdRetired(id(5))
    );
}

#[test]
fn exhausting_the_id_range_is_an_error() {
    let mut arena = Arena::standard();
    arena
        .insert_with_id(id((1 << 52) - 1), ClassId::FOLDER, None)
        .unwrap();
    let error = assert_refused_unchanged(&mut arena, |a| a.create(ClassId::FOLDER, None));
    assert_eq!(error, ArenaError::IdSpaceExhausted(IdRange::Server));
}

#[test]
fn guids_are_unique_and_reproducible_per_seed() {
    let build = |seed| {
        let mut arena = Arena::standard().with_seed(seed);
        (0..100)
            .map(|_| {
                let id = arena.create(ClassId::ENTITY, None).unwrap();
                arena.get(id).unwrap().guid()
            })
            .collect::<Vec<_>>()
    };
    let a = build(1);
    let mut unique = a.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 100);
    assert_eq!(a, build(1));
    assert_ne!(a, build(2));
}

#[test]
fn persistent_ids_are_assigned_on_demand_and_unique() {
    let mut p = place();
    let a = p.arena.create(ClassId::PART, Some(p.workspace)).unwrap();
    let b = p.arena.create(ClassId::PART, Some(p.workspace)).unwrap();
    assert_eq!(p.arena.get(a).unwrap().persistent_id(), None);
    let pid = p.arena.ensure_persistent_id(a).unwrap();
    assert_eq!(
        p.arena.ensure_persistent_id(a).unwrap(),
        pid,
        "assigned once"
    );
    assert_eq!(p.arena.by_persistent_id(pid), Some(a));

    let error =
        assert_refused_unchanged(&mut p.arena, |arena| arena.set_persistent_id(b, Some(pid)));
    assert_eq!(error, ArenaError::PersistentIdInUse { pid, holder: a });

    let loaded = PersistentId::new(42).unwrap();
    assert!(p.arena.set_persistent_id(b, Some(loaded)).unwrap());
    assert!(!p.arena.set_persistent_id(b, Some(loaded)).unwrap());
    assert_eq!(p.arena.by_persistent_id(loaded), Some(b));

    p.arena.destroy(a).unwrap();
    assert_eq!(
        p.arena.by_persistent_id(pid),
        None,
        "destruction drops the index entry"
    );
}

#[test]
fn names_are_neither_unique_nor_identity() {
    let mut p = place();
    let a = p.arena.create(ClassId::PART, Some(p.workspace)).unwrap();
    let b = p.arena.create(ClassId::PART, Some(p.workspace)).unwrap();
    p.arena.set_name(a, "Crate").unwrap();
    p.arena.set_name(b, "Crate").unwrap();
    assert_eq!(p.arena.find_first_child(p.workspace, "Crate"), Some(a));
    assert_ne!(
        p.arena.get(a).unwrap().guid(),
        p.arena.get(b).unwrap().guid()
    );
}

#[test]
fn the_largest_id_is_refused_with_a_typed_error() {
    // No range holds u64::MAX: the client range ends one before it, so accepting it would
    // leave the counter nowhere to go.
    let classes = Arena::standard().classes_shared().clone();
    for mut arena in [Arena::client(classes.clone()), Arena::new(classes)] {
        let largest = id(u64::MAX);
        let error = assert_refused_unchanged(&mut arena, |a| {
            a.insert_with_id(largest, ClassId::FOLDER, None)
        });
        assert_eq!(error, ArenaError::IdOutOfRange(largest));
    }
    // The last id of the client range is accepted and exhausts it.
    let mut client = Arena::client(Arena::standard().classes_shared().clone());
    client
        .insert_with_id(id(u64::MAX - 1), ClassId::FOLDER, None)
        .unwrap();
    let error = assert_refused_unchanged(&mut client, |a| a.create(ClassId::FOLDER, None));
    assert_eq!(error, ArenaError::IdSpaceExhausted(IdRange::ClientLocal));
}
