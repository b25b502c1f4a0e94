//! The part-write log and the topology journal as bounded histories.

use crate::common::place;
use strata_arena::{
    ClassId, PART_LOG_CAPACITY, PartWrite, PartWriteKind, TOPOLOGY_LOG_CAPACITY, TopologyChange,
    Transform, Vec3,
};

#[test]
fn repeated_writes_repeat_entries() {
    let mut p = place();
    let part = p.arena.create(ClassId::PART, Some(p.workspace)).unwrap();
    let cursor = p.arena.part_log().head();
    for x in 0..3 {
        p.arena
            .set_part_transform(
                part,
                Transform::from_position(Vec3::new(x as f32 + 1.0, 0.0, 0.0)),
            )
            .unwrap();
    }
    let entries: Vec<PartWrite> = p
        .arena
        .part_writes_since(cursor)
        .unwrap()
        .map(|(_, w)| *w)
        .collect();
    assert_eq!(
        entries,
        vec![
            PartWrite {
                id: part,
                kind: PartWriteKind::State
            };
            3
        ]
    );
}

#[test]
fn a_reader_older_than_the_floor_gets_history_unavailable() {
    let mut p = place();
    let part = p.arena.create(ClassId::PART, Some(p.workspace)).unwrap();
    let stale = p.arena.part_log().head();
    let mut fresh = stale;
    for i in 0..(PART_LOG_CAPACITY + 10) {
        p.arena
            .set_part_transform(
                part,
                Transform::from_position(Vec3::new(i as f32, 1.0, 0.0)),
            )
            .unwrap();
        if i == PART_LOG_CAPACITY - 100 {
            fresh = p.arena.part_log().head();
        }
    }
    // One entry from the part entering the world, then CAPACITY + 10 writes, one half dropped.
    assert_eq!(p.arena.part_log().len(), PART_LOG_CAPACITY / 2 + 11);
    let error = p.arena.part_writes_since(stale).unwrap_err();
    assert_eq!(error.requested, stale);
    assert!(error.floor > stale);
    // A reader whose cursor is still retained reads everything since it.
    let read = p.arena.part_writes_since(fresh).unwrap();
    assert_eq!(read.len(), 109, "the writes after index CAPACITY - 100");
    // After the reader rebuilds, it continues from the head.
    let head = p.arena.part_log().head();
    assert_eq!(p.arena.part_writes_since(head).unwrap().count(), 0);
}

#[test]
fn the_revision_outlives_the_journal_detail() {
    let mut p = place();
    let topo = p.arena.revisions().topology();
    let stale = p.arena.topology_journal().head();
    for _ in 0..(TOPOLOGY_LOG_CAPACITY + 1) {
        p.arena.create(ClassId::ENTITY, None).unwrap();
    }
    assert!(p.arena.topology_since(stale).is_err());
    assert!(
        p.arena.revisions().topology() > topo,
        "the revision still says something changed"
    );
}

#[test]
fn parts_outside_the_world_are_not_logged() {
    let mut p = place();
    let part = p.arena.create(ClassId::PART, None).unwrap();
    let cursor = p.arena.part_log().head();
    p.arena.set_part_size(part, Vec3::ONE).unwrap();
    assert_eq!(p.arena.part_writes_since(cursor).unwrap().count(), 0);
}

#[test]
fn rollback_leaves_no_journal_entry_for_what_it_removed_even_after_an_overflow() {
    let mut p = place();
    let checkpoint = p.arena.checkpoint();
    // More parts in the world than either journal holds: both drop their older half inside
    // the batch, past the checkpoint.
    let made: Vec<_> = (0..(PART_LOG_CAPACITY.max(TOPOLOGY_LOG_CAPACITY) + 10))
        .map(|_| p.arena.create(ClassId::PART, Some(p.workspace)).unwrap())
        .collect();
    p.arena.rollback(checkpoint).unwrap();
    let removed: std::collections::HashSet<_> = made.into_iter().collect();

    let topology = p.arena.topology_journal();
    let named: Vec<_> = topology
        .read_since(topology.floor())
        .unwrap()
        .filter(|(_, change)| match change {
            TopologyChange::Created { id, .. } => removed.contains(id),
            _ => true,
        })
        .collect();
    assert!(named.is_empty(), "{} topology entries survive", named.len());
    let parts = p.arena.part_log();
    let named = parts
        .read_since(parts.floor())
        .unwrap()
        .filter(|(_, write)| removed.contains(&write.id))
        .count();
    assert_eq!(named, 0, "part-log entries survive");
}

#[test]
fn journal_cursors_from_inside_a_rolled_back_batch_are_refused() {
    let mut p = place();
    let topology_before = p.arena.topology_journal().head();
    let parts_before = p.arena.part_log().head();
    let checkpoint = p.arena.checkpoint();
    p.arena.create(ClassId::PART, Some(p.workspace)).unwrap();
    let topology_inside = p.arena.topology_journal().head();
    let parts_inside = p.arena.part_log().head();
    p.arena.rollback(checkpoint).unwrap();

    // A reader that saw the batch's entries must rebuild; one from before it reads on.
    assert!(p.arena.topology_since(topology_inside).is_err());
    assert!(p.arena.part_writes_since(parts_inside).is_err());
    assert_eq!(p.arena.topology_since(topology_before).unwrap().count(), 0);
    assert_eq!(p.arena.part_writes_since(parts_before).unwrap().count(), 0);
    // Heads never go back: a sequence number is never reissued for a different entry.
    assert!(p.arena.topology_journal().head() > topology_inside);
    assert!(p.arena.part_log().head() > parts_inside);

    let part = p.arena.create(ClassId::PART, Some(p.workspace)).unwrap();
    let after: Vec<_> = p
        .arena
        .part_writes_since(parts_before)
        .unwrap()
        .map(|(_, w)| *w)
        .collect();
    assert_eq!(
        after,
        vec![PartWrite {
            id: part,
            kind: PartWriteKind::EnteredWorld
        }]
    );
    assert!(p.arena.part_writes_since(parts_inside).is_err());
    let fresh = p.arena.part_log().head();
    assert_eq!(p.arena.part_writes_since(fresh).unwrap().count(), 0);
}

mod bulk_append {
    use proptest::prelude::*;
    use strata_arena::BoundedJournal;

    /// What `read_since` gives for one cursor: the (sequence number, entry) pairs, or nothing
    /// when the cursor cannot be served.
    type Read = Option<Vec<(u64, u32)>>;

    /// Everything a reader can observe of a journal: its bounds and, for every cursor from
    /// zero to past the head, what `read_since` gives.
    fn observe(journal: &BoundedJournal<u32>) -> (u64, u64, usize, Vec<Read>) {
        let reads = (0..=journal.head() + 1)
            .map(|cursor| {
                journal
                    .read_since(cursor)
                    .ok()
                    .map(|read| read.map(|(seq, entry)| (seq, *entry)).collect())
            })
            .collect();
        (journal.floor(), journal.head(), journal.len(), reads)
    }

    proptest! {
        /// `extend` leaves exactly what pushing the same entries one by one leaves, whatever
        /// the capacity, what the journal held before and how large the batch is.
        #[test]
        fn extending_a_journal_equals_pushing_each_entry(
            capacity in 2usize..12,
            batches in proptest::collection::vec(0usize..40, 1..6),
        ) {
            let mut pushed = BoundedJournal::new(capacity);
            let mut extended = BoundedJournal::new(capacity);
            let mut next = 0u32;
            for batch in batches {
                let entries: Vec<u32> = (next..next + batch as u32).collect();
                next += batch as u32;
                let head = pushed.head();
                for entry in &entries {
                    pushed.push(*entry);
                }
                prop_assert_eq!(extended.extend(entries), head);
                prop_assert_eq!(observe(&extended), observe(&pushed));
            }
        }
    }
}
