//! Runtime ids, slots, explicit insertion, client-local ids, GUIDs and persistent ids.

use crate::common::{assert_refused_unchanged, place};
use proptest::prelude::*;
use strata_arena::{
    Arena, ArenaError, AttrValue, ClassId, ExternalRefs, IdRange, InstanceId, PersistentId, Slot,
};

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
fn a_guid_stays_what_creation_gave_it_after_reseeding() {
    let mut arena = Arena::standard().with_seed(1);
    let early: Vec<InstanceId> = (0..3)
        .map(|_| arena.create(ClassId::ENTITY, None).unwrap())
        .collect();
    let given: Vec<_> = early
        .iter()
        .map(|id| arena.get(*id).unwrap().guid())
        .collect();
    let before = arena.snapshot();
    let mut arena = arena.with_seed(2);
    let late = arena.create(ClassId::ENTITY, None).unwrap();
    let kept: Vec<_> = early
        .iter()
        .map(|id| arena.get(*id).unwrap().guid())
        .collect();
    assert_eq!(kept, given, "reseeding changed GUIDs handed out before it");
    assert_eq!(
        early
            .iter()
            .map(|id| before.get(*id).unwrap().guid())
            .collect::<Vec<_>>(),
        given
    );
    let late_guid = arena.get(late).unwrap().guid();
    assert!(!given.contains(&late_guid));
    // The same history under the same seeds gives the same GUIDs.
    let mut replay = Arena::standard().with_seed(1);
    for _ in 0..3 {
        replay.create(ClassId::ENTITY, None).unwrap();
    }
    let mut replay = replay.with_seed(2);
    let again = replay.create(ClassId::ENTITY, None).unwrap();
    assert_eq!(replay.get(again).unwrap().guid(), late_guid);
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

/// The GUIDs and persistent ids an arena hands out for `n` new instances.
fn identities(arena: &mut Arena, n: usize) -> (Vec<u128>, Vec<u64>) {
    let mut guids = Vec::with_capacity(n);
    let mut pids = Vec::with_capacity(n);
    for _ in 0..n {
        let id = arena.create(ClassId::ENTITY, None).unwrap();
        guids.push(arena.get(id).unwrap().guid().0);
        pids.push(arena.ensure_persistent_id(id).unwrap().get());
    }
    (guids, pids)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn two_independently_made_arenas_never_share_a_guid_or_persistent_id(
        n_a in 1..40usize,
        n_b in 1..40usize,
        client_a in any::<bool>(),
        client_b in any::<bool>(),
    ) {
        let classes = Arena::standard().classes_shared().clone();
        let make = |client: bool| {
            if client { Arena::client(classes.clone()) } else { Arena::new(classes.clone()) }
        };
        let (mut a, mut b) = (make(client_a), make(client_b));
        let (guids_a, pids_a) = identities(&mut a, n_a);
        let (guids_b, pids_b) = identities(&mut b, n_b);
        for guid in &guids_a {
            prop_assert!(!guids_b.contains(guid), "GUID {guid:x} issued by both arenas");
        }
        for pid in &pids_a {
            prop_assert!(!pids_b.contains(pid), "persistent id {pid} issued by both arenas");
        }
    }
}

#[test]
fn graft_never_binds_an_external_reference_to_an_unrelated_instance() {
    // Two places built independently, each giving its first instance a persistent id.
    let mut source = place();
    let road = source
        .arena
        .create(ClassId::PART, Some(source.workspace))
        .unwrap();
    source.arena.ensure_persistent_id(road).unwrap();
    let camera = source.arena.create(ClassId::CAMERA, None).unwrap();
    source
        .arena
        .set_attribute(camera, "follows", Some(AttrValue::Reference(Some(road))))
        .unwrap();

    let mut dest = place();
    let unrelated = dest
        .arena
        .create(ClassId::PART, Some(dest.workspace))
        .unwrap();
    dest.arena.ensure_persistent_id(unrelated).unwrap();

    let graft = dest
        .arena
        .graft(
            &source.arena.snapshot(),
            camera,
            None,
            ExternalRefs::ResolveByPersistentId,
        )
        .unwrap();
    let copy = graft.map.root().unwrap();
    assert_eq!(
        dest.arena.get(copy).unwrap().attributes().get("follows"),
        Some(&AttrValue::Reference(None)),
        "the source's road has no counterpart here"
    );
    assert_eq!((graft.resolved, graft.cleared), (0, 1));
}

#[test]
fn a_seed_reproduces_identities_for_replays() {
    let classes = Arena::standard().classes_shared().clone();
    let mut a = Arena::new(classes.clone()).with_seed(7);
    let mut b = Arena::new(classes).with_seed(7);
    assert_eq!(identities(&mut a, 20), identities(&mut b, 20));
}
