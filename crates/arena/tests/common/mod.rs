//! Shared fixtures for the arena's integration tests.

#![allow(
    dead_code,
    reason = "each test binary uses a different subset of the fixtures"
)]

use strata_arena::{Arena, ClassId, InstanceId, Revisions};

/// A standard place: a `DataModel` root with a `Workspace` world under it.
pub struct Place {
    pub arena: Arena,
    pub game: InstanceId,
    pub workspace: InstanceId,
}

pub fn place() -> Place {
    let mut arena = Arena::standard();
    let game = arena.create(ClassId::DATA_MODEL, None).unwrap();
    let workspace = arena.create(ClassId::WORKSPACE, Some(game)).unwrap();
    arena.drain().unwrap();
    Place {
        arena,
        game,
        workspace,
    }
}

/// Everything a refused operation must leave untouched.
#[derive(Debug, PartialEq)]
pub struct Observable {
    pub revisions: Revisions,
    pub events: usize,
    pub part_head: u64,
    pub topology_head: u64,
    pub live: usize,
    pub tombstones: usize,
    pub next_id: u64,
}

pub fn observe(arena: &Arena) -> Observable {
    Observable {
        revisions: arena.revisions().clone(),
        events: arena.pending_events().len(),
        part_head: arena.part_log().head(),
        topology_head: arena.topology_journal().head(),
        live: arena.live_count(),
        tombstones: arena.tombstone_count(),
        next_id: arena.next_id(),
    }
}

/// Asserts that `op` was refused and left the arena exactly as it was.
#[track_caller]
pub fn assert_refused_unchanged<T: std::fmt::Debug, E: std::fmt::Debug>(
    arena: &mut Arena,
    op: impl FnOnce(&mut Arena) -> Result<T, E>,
) -> E {
    let before = observe(arena);
    let snapshot = arena.snapshot();
    let error = op(arena).expect_err("operation should be refused");
    assert_eq!(observe(arena), before, "a refused operation changed state");
    assert_eq!(
        arena.snapshot().diff(&snapshot),
        Default::default(),
        "a refused operation touched nodes"
    );
    error
}

pub fn children(arena: &Arena, id: InstanceId) -> Vec<InstanceId> {
    arena.children(id).collect()
}
