//! Bulk destruction: `destroy_many` validates every id first, destroys each subtree once and
//! announces the whole call with one event and one journal entry.

use crate::common::{assert_refused_unchanged, children};
use strata_arena::{Arena, ArenaError, ClassId, Doomed, Event, InstanceId, TopologyChange};

/// Two arenas built by the same steps from the same seed: a workspace with folders holding
/// parts, one folder holding a nested folder.
fn twin() -> (Arena, Vec<InstanceId>) {
    let mut arena = Arena::standard().with_seed(7);
    let game = arena.create(ClassId::DATA_MODEL, None).unwrap();
    let workspace = arena.create(ClassId::WORKSPACE, Some(game)).unwrap();
    let a = arena.create(ClassId::FOLDER, Some(workspace)).unwrap();
    let b = arena.create(ClassId::FOLDER, Some(workspace)).unwrap();
    let nested = arena.create(ClassId::FOLDER, Some(a)).unwrap();
    let p1 = arena.create(ClassId::PART, Some(a)).unwrap();
    let p2 = arena.create(ClassId::PART, Some(nested)).unwrap();
    let p3 = arena.create(ClassId::PART, Some(b)).unwrap();
    let loose = arena.create(ClassId::PART, None).unwrap();
    arena.add_tag(p3, "doomed").unwrap();
    arena.drain().unwrap();
    (arena, vec![workspace, a, b, nested, p1, p2, p3, loose])
}

#[test]
fn destroy_many_matches_the_equivalent_destroy_calls() {
    let (mut bulk, ids) = twin();
    let (mut single, _) = twin();
    let [workspace, a, b, nested, p1, _p2, p3, loose] = ids[..] else {
        unreachable!()
    };
    // p1 and nested lie inside a; p3 is listed twice.
    let listed = [p3, p1, a, loose, nested, p3];
    let destruction = bulk.destroy_many(&listed).unwrap();
    assert_eq!(destruction.roots, vec![p3, a, loose]);
    let mut doomed: Vec<Doomed> = Vec::new();
    for root in [p3, a, loose] {
        doomed.extend(single.destroy(root).unwrap().doomed.iter().copied());
    }
    assert_eq!(destruction.doomed, doomed);
    assert_eq!(children(&bulk, workspace), children(&single, workspace));
    assert_eq!(children(&bulk, workspace), vec![b]);
    assert_eq!(bulk.live_count(), single.live_count());
    assert_eq!(bulk.tombstone_count(), single.tombstone_count());
    assert_eq!(bulk.tag_count("doomed"), 0);
    assert_eq!(bulk.pending_reclamation(), single.pending_reclamation());
    for d in &doomed {
        assert!(!bulk.is_live(d.id));
        assert_eq!(
            bulk.slot_of(d.id),
            Some(d.slot),
            "a tombstone keeps its slot"
        );
    }
    // Two-drain reclamation, exactly as destroy.
    let (b1, s1) = (bulk.drain().unwrap(), single.drain().unwrap());
    assert_eq!(b1.reclaimable, s1.reclaimable);
    assert!(b1.reclaimed.is_empty());
    let name = bulk
        .with_lifecycle_scope(a, |view| view.get(nested).map(|n| n.name().to_owned()))
        .unwrap();
    assert_eq!(name.as_deref(), Some("Folder"));
    let (b2, s2) = (bulk.drain().unwrap(), single.drain().unwrap());
    assert_eq!(b2.reclaimed, s2.reclaimed);
    assert_eq!(b2.reclaimed, doomed);
    assert_eq!(bulk.tombstone_count(), 0);
}

#[test]
fn destroy_many_queues_one_event_and_one_journal_entry() {
    let (mut arena, ids) = twin();
    let [workspace, a, b, _nested, _p1, _p2, _p3, loose] = ids[..] else {
        unreachable!()
    };
    let cursor = arena.topology_journal().head();
    let destruction = arena.destroy_many(&[a, b, loose]).unwrap();
    let events = arena.drain().unwrap().events;
    let [Event::DestroyedMany(batch)] = events.as_slice() else {
        panic!("one event expected, got {events:?}");
    };
    assert_eq!(
        batch.roots,
        vec![(a, Some(workspace)), (b, Some(workspace)), (loose, None)]
    );
    let destroyed: Vec<_> = destruction.doomed.iter().map(|d| d.id).collect();
    assert_eq!(batch.destroyed, destroyed);
    let journal: Vec<_> = arena
        .topology_since(cursor)
        .unwrap()
        .map(|(_, c)| c.clone())
        .collect();
    assert_eq!(journal, vec![TopologyChange::DestroyedMany(batch.clone())]);
}

#[test]
fn destroy_many_validates_every_id_before_destroying_any() {
    let (mut arena, ids) = twin();
    let [workspace, a, b, _nested, p1, _p2, _p3, _loose] = ids[..] else {
        unreachable!()
    };
    let unknown = InstanceId::new(9_999).unwrap();
    let locked_folder = arena.create(ClassId::FOLDER, Some(workspace)).unwrap();
    let locked_child = arena.create(ClassId::PART, Some(locked_folder)).unwrap();
    arena.set_parent_locked(locked_child, true).unwrap();
    let gone = arena.create(ClassId::PART, Some(b)).unwrap();
    arena.destroy(gone).unwrap();
    arena.drain().unwrap();
    let cases = [
        (vec![a, unknown], ArenaError::UnknownInstance(unknown)),
        (vec![a, p1, gone], ArenaError::DestroyedInstance(gone)),
        (
            vec![b, workspace],
            ArenaError::ParentLocked {
                id: workspace,
                service: Some("Workspace".into()),
            },
        ),
        (
            vec![a, locked_folder],
            ArenaError::LockedDescendant {
                root: locked_folder,
                locked: locked_child,
                service: None,
            },
        ),
    ];
    for (listed, expected) in cases {
        let error = assert_refused_unchanged(&mut arena, |arena| arena.destroy_many(&listed));
        assert_eq!(error, expected);
        assert!(arena.is_live(a) && arena.is_live(b));
    }
    let checkpoint = arena.checkpoint();
    assert!(matches!(
        arena.destroy_many(&[a]).unwrap_err(),
        ArenaError::BatchInProgress(_)
    ));
    arena.commit(checkpoint).unwrap();
    assert!(arena.is_live(a));
}

#[test]
fn destroy_many_of_nothing_changes_nothing() {
    let (mut arena, _) = twin();
    let before = crate::common::observe(&arena);
    let destruction = arena.destroy_many(&[]).unwrap();
    assert!(destruction.roots.is_empty() && destruction.doomed.is_empty());
    assert_eq!(crate::common::observe(&arena), before);
}
