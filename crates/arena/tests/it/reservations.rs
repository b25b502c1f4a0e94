//! Reservations: held ids and slots, publication at one barrier, release.

use std::collections::HashSet;

use crate::common::{assert_refused_unchanged, children, observe, place};
use strata_arena::{
    Arena, ArenaError, ClassId, Event, ExternalRefs, IdRange, InstanceId, Reservation, Slot,
    TopologyChange,
};

fn id(raw: u64) -> InstanceId {
    InstanceId::new(raw).unwrap()
}

/// Every slot held by a live or tombstone node of `arena`.
fn occupied_slots(arena: &Arena) -> HashSet<Slot> {
    (0..arena.slot_capacity() as u32)
        .map(Slot::from_index)
        .filter(|slot| arena.id_at(*slot).is_some())
        .collect()
}

fn reserved_slots(reservation: &Reservation) -> HashSet<Slot> {
    reservation.iter().map(|(_, slot)| slot).collect()
}

#[test]
fn nothing_reserved_is_live_findable_in_children_or_announced() {
    let mut p = place();
    let before = observe(&p.arena);
    let snapshot_before = p.arena.snapshot();
    let r = p.arena.reserve(4).unwrap();
    assert_eq!(r.len(), 4);
    assert_eq!(r.ids(), None);
    assert!(r.slots_contiguous());
    assert_eq!(p.arena.reserved_count(), 1);
    for (k, (rid, _)) in r.iter().enumerate() {
        assert_eq!(Some(rid), r.id(k));
        assert!(!p.arena.is_live(rid));
        assert!(p.arena.get(rid).is_none());
        assert_eq!(p.arena.slot_of(rid), None);
        assert!(matches!(
            p.arena.node(rid),
            Err(ArenaError::UnknownInstance(_))
        ));
    }
    assert!(children(&p.arena, p.workspace).is_empty());
    assert!(p.arena.pending_events().is_empty());
    let after = observe(&p.arena);
    assert_eq!(after.revisions, before.revisions);
    assert_eq!(after.topology_head, before.topology_head);
    assert_eq!(after.part_head, before.part_head);
    assert_eq!(after.live, before.live);
    assert_eq!(
        after.next_id,
        before.next_id + 4,
        "the ids are taken from the counter"
    );
    let snapshot = p.arena.snapshot();
    assert_eq!(snapshot.diff(&snapshot_before), Default::default());
    assert_eq!(snapshot.live_count(), snapshot_before.live_count());
    p.arena.release(r).unwrap();
}

#[test]
fn publishing_creates_the_run_under_the_parent_with_one_event_and_one_journal_entry() {
    let mut p = place();
    let cursor = p.arena.topology_journal().head();
    let r = p.arena.reserve(3).unwrap();
    let first = r.first().unwrap();
    let expected: Vec<_> = r.iter().collect();
    p.arena
        .publish(r, ClassId::PART, Some(p.workspace))
        .unwrap();
    assert_eq!(p.arena.reserved_count(), 0);
    let ids: Vec<_> = expected.iter().map(|(id, _)| *id).collect();
    assert_eq!(children(&p.arena, p.workspace), ids);
    for (rid, slot) in &expected {
        assert!(p.arena.is_live(*rid));
        assert_eq!(p.arena.slot_of(*rid), Some(*slot));
        assert_eq!(p.arena.parent(*rid), Some(p.workspace));
    }
    assert_eq!(
        p.arena.pending_events(),
        [Event::CreatedRange {
            first,
            count: 3,
            parent: Some(p.workspace)
        }]
    );
    let journal: Vec<_> = p
        .arena
        .topology_since(cursor)
        .unwrap()
        .map(|(_, c)| c.clone())
        .collect();
    assert_eq!(
        journal,
        [TopologyChange::CreatedRange {
            first,
            count: 3,
            parent: Some(p.workspace)
        }]
    );
}

#[test]
fn publishing_matches_create_many() {
    let mut a = place();
    let mut b = place();
    let r = a.arena.reserve(5).unwrap();
    a.arena
        .publish(r, ClassId::PART, Some(a.workspace))
        .unwrap();
    b.arena
        .create_many(ClassId::PART, Some(b.workspace), 5)
        .unwrap();
    assert_eq!(a.arena.revisions(), b.arena.revisions());
    assert_eq!(a.arena.pending_events(), b.arena.pending_events());
    assert_eq!(a.arena.part_log().head(), b.arena.part_log().head());
    assert_eq!(
        children(&a.arena, a.workspace),
        children(&b.arena, b.workspace)
    );
    assert_eq!(
        a.arena.family_members(strata_arena::FamilyId::PARTS).len(),
        5
    );
}

#[test]
fn reserved_slots_are_never_taken_by_other_creations() {
    let mut p = place();
    // Put recycled slots in the pool so the reservation takes recycled and fresh ones.
    let doomed = p
        .arena
        .create_many(ClassId::PART, Some(p.workspace), 3)
        .unwrap();
    for (d, _) in &doomed {
        p.arena.destroy(*d).unwrap();
    }
    p.arena.drain().unwrap();
    p.arena.drain().unwrap();
    let r = p.arena.reserve(5).unwrap();
    assert!(!r.slots_contiguous(), "recycled slots come first");
    let held = reserved_slots(&r);
    assert_eq!(held.len(), 5);

    let folder = p.arena.create(ClassId::FOLDER, Some(p.workspace)).unwrap();
    let many = p.arena.create_many(ClassId::PART, Some(folder), 4).unwrap();
    let other = InstanceId::new(InstanceId::CLIENT_RANGE_START + 7).unwrap();
    p.arena
        .insert_with_id(other, ClassId::PART, Some(folder))
        .unwrap();
    let clone = p.arena.clone_subtree(folder, Some(p.workspace)).unwrap();
    let source = p.arena.snapshot();
    let graft = p
        .arena
        .graft(&source, folder, Some(p.workspace), ExternalRefs::Clear)
        .unwrap();
    let r2 = p.arena.reserve(2).unwrap();
    let mut taken = HashSet::new();
    taken.insert(p.arena.slot_of(folder).unwrap());
    taken.extend(many.iter().map(|(_, slot)| *slot));
    taken.insert(p.arena.slot_of(other).unwrap());
    for (_, copy) in clone.iter() {
        taken.insert(p.arena.slot_of(copy).unwrap());
    }
    for (_, copy) in graft.map.iter() {
        taken.insert(p.arena.slot_of(copy).unwrap());
    }
    assert!(taken.is_disjoint(&held), "a creation took a reserved slot");
    assert!(reserved_slots(&r2).is_disjoint(&held));
    assert!(occupied_slots(&p.arena).is_disjoint(&held));
    let ids: HashSet<_> = r.iter().map(|(i, _)| i).collect();
    assert!(!ids.contains(&folder));
    p.arena
        .publish(r, ClassId::PART, Some(p.workspace))
        .unwrap();
    p.arena
        .publish(r2, ClassId::PART, Some(p.workspace))
        .unwrap();
    assert_eq!(p.arena.reserved_count(), 0);
}

#[test]
fn release_retires_the_ids_and_frees_the_slots() {
    let mut p = place();
    let r = p.arena.reserve(3).unwrap();
    let ids: Vec<_> = r.iter().map(|(i, _)| i).collect();
    let slots = reserved_slots(&r);
    let events = p.arena.pending_events().len();
    p.arena.release(r).unwrap();
    assert_eq!(p.arena.reserved_count(), 0);
    assert_eq!(
        p.arena.pending_events().len(),
        events,
        "a release announces nothing"
    );
    // Later creations never issue the released ids, but do reuse the slots.
    let made = p
        .arena
        .create_many(ClassId::PART, Some(p.workspace), 3)
        .unwrap();
    assert!(made.iter().all(|(i, _)| !ids.contains(i)));
    let reused: HashSet<_> = made.iter().map(|(_, s)| *s).collect();
    assert_eq!(reused, slots);
    let again = p.arena.reserve(2).unwrap();
    assert!(again.iter().all(|(i, _)| !ids.contains(&i)));
    for released in &ids {
        assert_eq!(
            p.arena
                .insert_with_id(*released, ClassId::PART, None)
                .unwrap_err(),
            ArenaError::IdRetired(*released)
        );
        assert_eq!(
            p.arena.reserve_at(&[*released]).unwrap_err(),
            ArenaError::IdRetired(*released)
        );
    }
    p.arena.release(again).unwrap();
}

/// A token dropped without publication or release gives back what it held at the arena's
/// next drain, as a release would: the ids stay retired, the slots return to the pool, and a
/// stage dropped with spawns in it leaks nothing.
#[test]
fn a_dropped_reservation_is_released_at_the_next_drain() {
    let mut p = place();
    let r = p.arena.reserve(3).unwrap();
    let ids: Vec<_> = r.iter().map(|(i, _)| i).collect();
    let slots = reserved_slots(&r);
    let (far, near) = (id((1 << 52) + 9), id((1 << 52) + 7));
    let listed = p.arena.reserve_at(&[far, near]).unwrap();
    let slots: HashSet<Slot> = slots.union(&reserved_slots(&listed)).copied().collect();
    assert_eq!(p.arena.reserved_count(), 2);
    drop(r);
    drop(listed);
    assert_eq!(p.arena.reserved_count(), 0, "no token holds them");
    let events = p.arena.pending_events().len();
    let drained = p.arena.drain().unwrap();
    assert_eq!(drained.events.len(), events, "nothing is announced");
    let made = p
        .arena
        .create_many(ClassId::PART, Some(p.workspace), 5)
        .unwrap();
    assert!(made.iter().all(|(i, _)| !ids.contains(i)));
    let reused: HashSet<_> = made.iter().map(|(_, s)| *s).collect();
    assert_eq!(reused, slots, "every slot the two held is back in the pool");
    for released in &ids {
        assert_eq!(
            p.arena.reserve_at(&[*released]).unwrap_err(),
            ArenaError::IdRetired(*released)
        );
    }
    // The explicit ids of the other range are held no longer: they can be reserved again.
    let again = p.arena.reserve_at(&[near, far]).unwrap();
    p.arena.release(again).unwrap();
    assert_eq!(p.arena.reserved_count(), 0);
}

#[test]
fn a_refused_publish_changes_nothing_and_keeps_the_reservation_usable() {
    let mut p = place();
    let part = p.arena.create(ClassId::PART, Some(p.workspace)).unwrap();
    let gone = p.arena.create(ClassId::FOLDER, Some(p.workspace)).unwrap();
    p.arena.destroy(gone).unwrap();
    p.arena.drain().unwrap();
    let mut r = p.arena.reserve(2).unwrap();
    let cases: Vec<(ClassId, Option<InstanceId>, ArenaError)> = vec![
        (
            ClassId::PART,
            Some(id(9999)),
            ArenaError::UnknownInstance(id(9999)),
        ),
        (
            ClassId::PART,
            Some(gone),
            ArenaError::DestroyedInstance(gone),
        ),
        (
            ClassId::WORKSPACE,
            Some(part),
            ArenaError::Containment {
                child_class: "Workspace".into(),
                parent_class: "Part".into(),
            },
        ),
    ];
    for (class, parent, expected) in cases {
        assert_eq!(
            p.arena.check_publish(&r, class, parent),
            Err(expected.clone())
        );
        let (back, error) =
            assert_refused_unchanged(&mut p.arena, |arena| arena.publish(r, class, parent));
        assert_eq!(error, expected);
        assert_eq!(p.arena.reserved_count(), 1);
        r = back;
    }
    // Inside a construction batch.
    let checkpoint = p.arena.checkpoint();
    let (back, error) = p.arena.publish(r, ClassId::PART, None).unwrap_err();
    assert!(matches!(error, ArenaError::BatchInProgress(_)));
    assert!(matches!(
        p.arena.reserve(1).unwrap_err(),
        ArenaError::BatchInProgress(_)
    ));
    assert!(matches!(
        p.arena.reserve_at(&[id(500)]).unwrap_err(),
        ArenaError::BatchInProgress(_)
    ));
    p.arena.commit(checkpoint).unwrap();
    let first = back.first().unwrap();
    p.arena
        .publish(back, ClassId::PART, Some(p.workspace))
        .unwrap();
    assert!(p.arena.is_live(first));
}

#[test]
fn another_arenas_reservation_is_refused() {
    let mut a = place();
    let mut b = place();
    let r = b.arena.reserve(1).unwrap();
    let held = r.slot(0);
    assert_eq!(r.arena(), b.arena.arena_id());
    assert_eq!(
        a.arena.check_publish(&r, ClassId::PART, None),
        Err(ArenaError::ForeignToken)
    );
    let (r, error) =
        assert_refused_unchanged(&mut a.arena, |arena| arena.publish(r, ClassId::PART, None));
    assert_eq!(error, ArenaError::ForeignToken);
    let before = observe(&a.arena);
    assert_eq!(a.arena.release(r).unwrap_err(), ArenaError::ForeignToken);
    assert_eq!(observe(&a.arena), before);
    // The refused release consumed the token, so no token holds the reservation any more:
    // its own arena takes it back at its next drain.
    assert_eq!(b.arena.reserved_count(), 0);
    b.arena.drain().unwrap();
    let made = b.arena.create(ClassId::PART, None).unwrap();
    assert_eq!(
        b.arena.slot_of(made),
        held,
        "the slot it held is free again"
    );
}

#[test]
fn reserve_at_refuses_each_bad_id_and_takes_nothing() {
    let mut p = place();
    let tomb = p.arena.create(ClassId::PART, Some(p.workspace)).unwrap();
    p.arena.destroy(tomb).unwrap();
    let held = p.arena.reserve_at(&[id(900)]).unwrap();
    let free = id(1000);
    let out_of_range = id(u64::MAX);
    let cases = [
        (
            vec![free, out_of_range],
            ArenaError::IdOutOfRange(out_of_range),
        ),
        (vec![free, id(1001), free], ArenaError::DuplicateId(free)),
        (vec![free, p.workspace], ArenaError::IdInUse(p.workspace)),
        (vec![free, tomb], ArenaError::IdInUse(tomb)),
        (vec![free, id(900)], ArenaError::IdReserved(id(900))),
    ];
    for (ids, expected) in cases {
        let reserved = p.arena.reserved_count();
        let error = assert_refused_unchanged(&mut p.arena, |arena| arena.reserve_at(&ids));
        assert_eq!(error, expected);
        assert_eq!(p.arena.reserved_count(), reserved);
    }
    // An id of the own range below the counter, never held: retired.
    let mut fresh = place();
    let r = fresh.arena.reserve(2).unwrap();
    let second = r.id(1).unwrap();
    fresh.arena.release(r).unwrap();
    let error = assert_refused_unchanged(&mut fresh.arena, |arena| {
        arena.reserve_at(&[id(5000), second])
    });
    assert_eq!(error, ArenaError::IdRetired(second));
    // Raw values.
    for raw in [0, u64::MAX] {
        let error =
            assert_refused_unchanged(&mut p.arena, |arena| arena.reserve_at_raw(&[1000, raw]));
        assert_eq!(error, ArenaError::InvalidRawId(raw));
    }
    p.arena.release(held).unwrap();
    // A released explicit id of the own range stays retired.
    assert_eq!(
        p.arena.reserve_at(&[id(900)]).unwrap_err(),
        ArenaError::IdRetired(id(900))
    );
}

#[test]
fn reserve_at_keeps_the_ids_moves_the_counter_and_publishes_a_list() {
    let mut p = place();
    let ids = [id(40), id(12), id(30)];
    let r = p.arena.reserve_at(&ids).unwrap();
    assert_eq!(r.ids(), Some(&ids[..]));
    assert_eq!(r.first(), Some(id(40)));
    assert_eq!(
        p.arena.next_id(),
        41,
        "an own-range id moves the counter past it"
    );
    // Neither creation nor insert_with_id takes a reserved id.
    assert_eq!(
        p.arena
            .insert_with_id(id(12), ClassId::PART, None)
            .unwrap_err(),
        ArenaError::IdReserved(id(12))
    );
    let made = p.arena.create(ClassId::FOLDER, Some(p.workspace)).unwrap();
    assert_eq!(made, id(41));
    p.arena.drain().unwrap();
    let cursor = p.arena.topology_journal().head();
    p.arena
        .publish(r, ClassId::PART, Some(p.workspace))
        .unwrap();
    assert_eq!(
        children(&p.arena, p.workspace),
        vec![made, id(40), id(12), id(30)]
    );
    let Event::CreatedList {
        ids: listed,
        parent,
    } = &p.arena.pending_events()[0]
    else {
        panic!(
            "a list publishes as CreatedList: {:?}",
            p.arena.pending_events()
        );
    };
    assert_eq!(p.arena.pending_events().len(), 1);
    assert_eq!(&listed[..], &ids[..]);
    assert_eq!(*parent, Some(p.workspace));
    assert_eq!(p.arena.topology_since(cursor).unwrap().count(), 1);

    // Consecutive ascending ids make a run; the raw path gives the same.
    let run = p.arena.reserve_at_raw(&[100, 101, 102]).unwrap();
    assert_eq!(run.ids(), None);
    assert_eq!(run.first(), Some(id(100)));
    assert_eq!(run.len(), 3);
    p.arena.publish(run, ClassId::PART, None).unwrap();
    assert!(p.arena.is_live(id(102)));
}

#[test]
fn a_client_arena_reserves_server_ids_without_moving_its_counter() {
    let mut arena = Arena::client(std::sync::Arc::new(strata_arena::ClassRegistry::standard()));
    assert_eq!(arena.own_range(), IdRange::ClientLocal);
    let next = arena.next_id();
    let r = arena.reserve_at(&[id(7), id(3)]).unwrap();
    assert_eq!(arena.next_id(), next);
    assert_eq!(
        arena.reserve_at(&[id(3)]).unwrap_err(),
        ArenaError::IdReserved(id(3))
    );
    arena.release(r).unwrap();
    // Not this arena's range: after release the id is simply no longer held.
    let again = arena.reserve_at(&[id(3)]).unwrap();
    arena.publish(again, ClassId::FOLDER, None).unwrap();
    assert!(arena.is_live(id(3)));
}

#[test]
fn an_empty_reservation_takes_nothing_and_publishes_nothing() {
    let mut p = place();
    let before = observe(&p.arena);
    let r = p.arena.reserve(0).unwrap();
    assert!(r.is_empty());
    assert_eq!(r.first(), None);
    assert!(r.slots_contiguous());
    assert_eq!(r.iter().len(), 0);
    p.arena.publish(r, ClassId::PART, None).unwrap();
    assert_eq!(observe(&p.arena), before);
    let empty = p.arena.reserve_at(&[]).unwrap();
    p.arena.release(empty).unwrap();
    assert_eq!(observe(&p.arena), before);
    assert_eq!(p.arena.reserved_count(), 0);
}

#[test]
fn a_snapshot_taken_while_reserved_shows_none_of_it_after_publication() {
    let mut p = place();
    let r = p.arena.reserve(2).unwrap();
    let first = r.first().unwrap();
    let snapshot = p.arena.snapshot();
    p.arena
        .publish(r, ClassId::PART, Some(p.workspace))
        .unwrap();
    assert!(!snapshot.is_live(first));
    assert_eq!(snapshot.children(p.workspace).count(), 0);
    let diff = p.arena.snapshot().diff(&snapshot);
    assert_eq!(diff.added, vec![first, id(first.get() + 1)]);
}

#[test]
fn released_slots_held_over_a_rolled_back_batch_stay_usable() {
    let mut p = place();
    let r = p.arena.reserve(3).unwrap();
    let slots = reserved_slots(&r);
    let checkpoint = p.arena.checkpoint();
    p.arena.release(r).unwrap();
    let made = p
        .arena
        .create_many(ClassId::PART, Some(p.workspace), 3)
        .unwrap();
    assert!(made.iter().all(|(_, s)| slots.contains(s)));
    p.arena.rollback(checkpoint).unwrap();
    let again = p
        .arena
        .create_many(ClassId::PART, Some(p.workspace), 3)
        .unwrap();
    let reused: HashSet<_> = again.iter().map(|(_, s)| *s).collect();
    assert_eq!(
        reused, slots,
        "rollback gives the released slots back to the pool"
    );
}
