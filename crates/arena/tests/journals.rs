//! The part-write log and the topology journal as bounded histories.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly on purpose")]

mod common;

use common::place;
use strata_arena::{
    ClassId, PART_LOG_CAPACITY, PartWrite, PartWriteKind, TOPOLOGY_LOG_CAPACITY, Transform, Vec3,
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
