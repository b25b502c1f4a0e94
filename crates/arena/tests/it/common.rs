//! Shared fixtures for the arena's integration tests.

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

/// Asserts what a rollback promises against `before`, observed at the checkpoint of a batch
/// that changed something: the same live instances, tombstones and pending events; counters,
/// revisions and journal heads only moved forward; every revision domain either kept its value
/// or took the rollback's clock tick; and readers from the checkpoint find nothing new in the
/// journals.
#[track_caller]
pub fn assert_rolled_back(arena: &Arena, before: &Observable) {
    let now = observe(arena);
    assert_eq!(
        (now.live, now.tombstones, now.events),
        (before.live, before.tombstones, before.events)
    );
    assert!(now.next_id >= before.next_id, "the id counter went back");
    let (old, new) = (&before.revisions, &now.revisions);
    assert!(
        new.clock() > old.clock(),
        "the rollback takes a tick of its own"
    );
    let domains = [
        (old.topology(), new.topology()),
        (old.mutation(), new.mutation()),
        (old.tags(), new.tags()),
        (old.collision(), new.collision()),
        (old.animation(), new.animation()),
        (old.layout(), new.layout()),
    ];
    for (index, (old, newer)) in domains.into_iter().enumerate() {
        assert!(
            newer == old || newer == new.clock(),
            "domain {index}: {old:?} became {newer:?}, neither kept nor the rollback's tick"
        );
    }
    assert!(now.topology_head > before.topology_head);
    assert_eq!(
        arena.topology_since(before.topology_head).unwrap().count(),
        0
    );
    assert!(now.part_head >= before.part_head);
    assert_eq!(
        arena.part_writes_since(before.part_head).unwrap().count(),
        0
    );
}
