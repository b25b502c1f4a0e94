//! Save points and whole-arena restore, beside the model test's random runs: refusals, ids never
//! issued twice, journals, events and tombstones as saved.

use strata_arena::{Arena, ArenaError, ClassId, Event};

fn arena() -> (Arena, strata_arena::InstanceId) {
    let mut arena = Arena::standard();
    let game = arena.create(ClassId::DATA_MODEL, None).unwrap();
    let folder = arena.create(ClassId::FOLDER, Some(game)).unwrap();
    (arena, folder)
}

#[test]
fn a_restore_brings_back_the_hierarchy_and_never_reissues_an_id() {
    let (mut arena, folder) = arena();
    let kept = arena.create(ClassId::PART, Some(folder)).unwrap();
    arena.drain().unwrap();
    let point = arena.save_point().unwrap();
    let image = arena.image();
    let made = arena.create(ClassId::PART, Some(folder)).unwrap();
    arena.set_name(kept, "Renamed").unwrap();
    arena.destroy(kept).unwrap();
    arena.restore(&point).unwrap();
    assert_eq!(arena.image().nodes, image.nodes);
    assert_eq!(
        arena.image().next_id,
        image.next_id + 1,
        "the id made since stays issued"
    );
    assert!(arena.is_live(kept) && !arena.is_live(made));
    assert_eq!(arena.get(kept).unwrap().name(), "Part");
    let next = arena.create(ClassId::PART, Some(folder)).unwrap();
    assert!(
        next.get() > made.get(),
        "{next} after {made}: ids only move forward"
    );
    assert_eq!(
        arena.insert_with_id(made, ClassId::PART, Some(folder)),
        Err(ArenaError::IdRetired(made))
    );
}

#[test]
fn tombstones_and_pending_events_come_back_as_saved() {
    let (mut arena, folder) = arena();
    let part = arena.create(ClassId::PART, Some(folder)).unwrap();
    arena.drain().unwrap();
    arena.destroy(part).unwrap();
    let pending = arena.pending_events().to_vec();
    let point = arena.save_point().unwrap();
    let first = arena.drain().unwrap();
    assert!(
        first
            .events
            .iter()
            .any(|e| matches!(e, Event::Destroyed { .. }))
    );
    arena.drain().unwrap();
    arena.restore(&point).unwrap();
    assert_eq!(arena.pending_events(), pending.as_slice());
    assert_eq!(
        arena.pending_reclamation(),
        1,
        "the tombstone awaits its drains again"
    );
    let again = arena.drain().unwrap();
    assert_eq!(again.events, first.events);
}

#[test]
fn journal_readers_from_the_save_point_read_on_and_later_ones_rebuild() {
    let (mut arena, folder) = arena();
    let at_save = arena.topology_journal().head();
    let point = arena.save_point().unwrap();
    arena.create(ClassId::PART, Some(folder)).unwrap();
    let after = arena.topology_journal().head();
    arena.restore(&point).unwrap();
    assert_eq!(arena.topology_since(at_save).map(|r| r.count()), Ok(0));
    assert!(
        arena.topology_since(after).is_err(),
        "it saw an entry the restore took back"
    );
    assert!(
        arena.topology_journal().head() > after,
        "heads never go back"
    );
}

#[test]
fn the_revision_clock_moves_on_through_a_restore() {
    let (mut arena, folder) = arena();
    let point = arena.save_point().unwrap();
    arena.create(ClassId::PART, Some(folder)).unwrap();
    let before = arena.revisions().clone();
    arena.restore(&point).unwrap();
    let now = arena.revisions();
    assert!(now.clock() > before.clock());
    assert!(
        now.topology() > before.topology(),
        "the topology differs: a fresh tick"
    );
    assert_eq!(now.tags(), before.tags(), "tags never changed");
}

#[test]
fn another_arenas_save_point_is_refused_and_changes_nothing() {
    let (mut arena, _) = arena();
    let (other, _) = self::arena();
    let point = other.save_point().unwrap();
    let image = arena.image();
    assert_eq!(arena.restore(&point), Err(ArenaError::ForeignToken));
    assert_eq!(arena.image(), image);
}

#[test]
fn save_points_wait_for_open_batches_and_held_reservations() {
    let (mut arena, folder) = arena();
    let point = arena.save_point().unwrap();
    let checkpoint = arena.checkpoint();
    assert!(matches!(
        arena.save_point(),
        Err(ArenaError::BatchInProgress(_))
    ));
    assert!(matches!(
        arena.restore(&point),
        Err(ArenaError::BatchInProgress(_))
    ));
    arena.commit(checkpoint).unwrap();
    let reservation = arena.reserve(2).unwrap();
    assert_eq!(
        arena.save_point().map(|_| ()),
        Err(ArenaError::ReservationHeld)
    );
    assert_eq!(arena.restore(&point), Err(ArenaError::ReservationHeld));
    arena.release(reservation).unwrap();
    arena.restore(&point).unwrap();
    assert!(arena.children(folder).next().is_none());
}

/// A reservation whose token was dropped holds nothing a caller can publish: a save point is
/// taken over it as if the arena had released it (as its next drain would), and a restore to
/// that point finds its slots free.
#[test]
fn a_save_point_is_taken_over_a_dropped_reservation() {
    let (mut arena, folder) = arena();
    let slots_before = arena.slot_capacity();
    drop(arena.reserve(3).unwrap());
    assert_eq!(arena.reserved_count(), 0);
    let point = arena.save_point().unwrap();
    arena.restore(&point).unwrap();
    let made = arena.create_many(ClassId::PART, Some(folder), 3).unwrap();
    assert_eq!(
        arena.slot_capacity(),
        slots_before + 3,
        "the three slots the dropped token held are reused, none is lost"
    );
    assert_eq!(made.len(), 3);
    // A reservation still held by its token keeps refusing.
    let held = arena.reserve(1).unwrap();
    assert_eq!(
        arena.save_point().map(|_| ()),
        Err(ArenaError::ReservationHeld)
    );
    arena.release(held).unwrap();
}

#[test]
fn pages_copied_into_the_memory_a_restore_kept_hold_only_the_saved_records() {
    let (mut arena, folder) = arena();
    // Three pages and more of instances, each named for its place.
    let ids: Vec<_> = (0..3_000)
        .map(|k| {
            let id = arena.create(ClassId::PART, Some(folder)).unwrap();
            arena.set_name(id, &format!("p{k}")).unwrap();
            id
        })
        .collect();
    arena.drain().unwrap();
    let point = arena.save_point().unwrap();
    let image = arena.image();
    // Every page written and some instances destroyed: the copies become the kept memory.
    for (k, id) in ids.iter().enumerate().step_by(7) {
        arena.set_name(*id, &format!("changed{k}")).unwrap();
    }
    for id in ids.iter().skip(3).step_by(97) {
        arena.destroy(*id).unwrap();
    }
    arena.restore(&point).unwrap();
    assert_eq!(arena.image().nodes, image.nodes);
    // Writes after the restore copy pages into that memory; nothing of the discarded copies
    // shows, and the save point keeps its own records.
    for round in 0..3 {
        let again = arena.save_point().unwrap();
        let target = ids[(round * 1_111) % ids.len()];
        arena.set_name(target, "again").unwrap();
        for (k, id) in ids.iter().enumerate() {
            let want = if *id == target {
                "again".to_owned()
            } else {
                format!("p{k}")
            };
            assert_eq!(arena.get(*id).unwrap().name(), want, "round {round}");
        }
        arena.restore(&again).unwrap();
        assert_eq!(arena.image().nodes, image.nodes, "round {round}");
    }
}
