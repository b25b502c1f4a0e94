//! The identity of an arena: fresh for every arena, shared by its snapshots.

use strata_arena::Arena;

#[test]
fn every_arena_has_its_own_id_and_its_snapshots_share_it() {
    let first = Arena::standard();
    let second = Arena::standard();
    assert_ne!(first.arena_id(), second.arena_id());
    let snapshot = first.snapshot();
    assert_eq!(snapshot.arena_id(), first.arena_id());
    assert_eq!(snapshot.clone().arena_id(), first.arena_id());
}
