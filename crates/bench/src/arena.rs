//! Workloads of the instance arena (`strata-arena`): creation, lookup, reparenting, snapshots,
//! destruction with reclamation, and cloning.
//!
//! Invariant: every workload here measures `strata-arena` through its public API only, with its
//! setup (building the arena it works on) outside the timed routine.

use std::cell::RefCell;
use std::hint::black_box;
use std::rc::Rc;

use strata_arena::{Arena, ClassId, InstanceId};

use crate::harness::Workload;

const MILLION: u64 = 1_000_000;

/// The arena's workloads, in run order.
pub fn workloads() -> Vec<Workload> {
    vec![
        create(MILLION),
        lookup_hit(MILLION),
        lookup_remapped(MILLION),
        lookup_stale(MILLION),
        reparent(10_000),
        snapshot(MILLION),
        first_write_after_snapshot(MILLION),
        snapshot_diff(MILLION, 1_000),
        destroy_and_drain(100_000),
        clone_subtree(10_000),
    ]
}

/// An arena with one `Folder` root and `n` `Entity` children under it.
fn flat(n: u64) -> (Arena, InstanceId, Vec<InstanceId>) {
    let mut arena = Arena::standard();
    let root = create_or_die(&mut arena, ClassId::FOLDER, None);
    let children = (0..n)
        .map(|_| create_or_die(&mut arena, ClassId::ENTITY, Some(root)))
        .collect();
    (arena, root, children)
}

/// Creation in a benchmark fixture cannot fail: classes and parents are the standard ones.
fn create_or_die(arena: &mut Arena, class: ClassId, parent: Option<InstanceId>) -> InstanceId {
    match arena.create(class, parent) {
        Ok(id) => id,
        Err(error) => panic!("benchmark fixture could not create an instance: {error}"),
    }
}

/// A deterministic shuffle (a linear congruential generator), so lookups do not walk memory in
/// order.
fn shuffled(mut ids: Vec<InstanceId>) -> Vec<InstanceId> {
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    for i in (1..ids.len()).rev() {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ids.swap(i, (state >> 33) as usize % (i + 1));
    }
    ids
}

fn create(n: u64) -> Workload {
    Workload::new(
        "arena_create",
        n,
        "one node per create under one parent, events queued",
        move |b| {
            b.iter_with_setup(
                || {
                    let mut arena = Arena::standard();
                    let root = create_or_die(&mut arena, ClassId::FOLDER, None);
                    (arena, root)
                },
                |(arena, root)| {
                    for _ in 0..n {
                        black_box(arena.create(ClassId::ENTITY, Some(*root)).ok());
                    }
                },
            );
        },
    )
}

fn lookup_hit(n: u64) -> Workload {
    Workload::new(
        "arena_lookup_hit",
        n,
        "slot id - 1 with id check, shuffled ids",
        move |b| {
            let (arena, _, children) = flat(n);
            let ids = shuffled(children);
            b.iter(|| ids.iter().filter(|id| arena.get(**id).is_some()).count());
        },
    )
}

/// Half the nodes are destroyed and reclaimed, then as many created again: the new ones sit in
/// reused slots and resolve through the id map.
fn churned(n: u64) -> (Arena, Vec<InstanceId>, Vec<InstanceId>) {
    let (mut arena, root, children) = flat(n);
    let mut stale = Vec::new();
    for id in children.iter().step_by(2) {
        if arena.destroy(*id).is_ok() {
            stale.push(*id);
        }
    }
    for _ in 0..2 {
        if let Err(error) = arena.drain() {
            panic!("benchmark fixture could not drain: {error}");
        }
    }
    let remapped = (0..stale.len())
        .map(|_| create_or_die(&mut arena, ClassId::ENTITY, Some(root)))
        .collect();
    (arena, shuffled(remapped), shuffled(stale))
}

fn lookup_remapped(n: u64) -> Workload {
    Workload::new(
        "arena_lookup_remapped",
        n / 2,
        "slot id - 1 misses, id map hit (reused slots)",
        move |b| {
            let (arena, remapped, _) = churned(n);
            b.iter(|| {
                remapped
                    .iter()
                    .filter(|id| arena.get(**id).is_some())
                    .count()
            });
        },
    )
}

fn lookup_stale(n: u64) -> Workload {
    Workload::new(
        "arena_lookup_stale",
        n / 2,
        "reclaimed ids whose slots hold new instances: id check then map miss",
        move |b| {
            let (arena, _, stale) = churned(n);
            b.iter(|| stale.iter().filter(|id| arena.get(**id).is_some()).count());
        },
    )
}

fn reparent(n: u64) -> Workload {
    Workload::new(
        "arena_reparent",
        n,
        "validate, unlink, link, five events with a shared moved list",
        move |b| {
            b.iter_with_setup(
                || {
                    let (mut arena, root, children) = flat(n);
                    let target = create_or_die(&mut arena, ClassId::FOLDER, Some(root));
                    (arena, target, children)
                },
                |(arena, target, children)| {
                    for child in children.iter() {
                        black_box(arena.set_parent(*child, Some(*target)).ok());
                    }
                },
            );
        },
    )
}

fn snapshot(n: u64) -> Workload {
    Workload::new(
        "arena_snapshot",
        n,
        "clone one pointer per 1,024-slot page plus persistent indexes",
        move |b| {
            let (arena, _, _) = flat(n);
            b.iter(|| arena.snapshot());
        },
    )
    .items(1)
}

fn first_write_after_snapshot(n: u64) -> Workload {
    Workload::new(
        "arena_first_write_after_snapshot",
        n,
        "privatise one page of pointers and one node",
        move |b| {
            let (arena, _, children) = flat(n);
            let target = children[children.len() / 2];
            let arena = Rc::new(RefCell::new(arena));
            let names = ["A", "B"];
            let mut flip = 0;
            let for_setup = Rc::clone(&arena);
            b.iter_with_setup(
                move || for_setup.borrow().snapshot(),
                move |_snapshot| {
                    flip ^= 1;
                    arena.borrow_mut().set_name(target, names[flip]).ok()
                },
            );
        },
    )
    .items(1)
}

fn snapshot_diff(n: u64, written: u64) -> Workload {
    Workload::new(
        "arena_snapshot_diff",
        n,
        "pages shared by both snapshots skipped by pointer comparison; the written pages compared record by record",
        move |b| {
            let (mut arena, _, children) = flat(n);
            let before = arena.snapshot();
            let stride = (n / written).max(1) as usize;
            for id in children.iter().step_by(stride) {
                black_box(arena.set_name(*id, "Written").ok());
            }
            let after = arena.snapshot();
            b.iter(|| after.diff(&before));
        },
    )
}

fn destroy_and_drain(n: u64) -> Workload {
    Workload::new(
        "arena_destroy_subtree_drain2",
        n,
        "mark tombstones, queue events, two drains release slots",
        move |b| {
            b.iter_with_setup(
                || {
                    let mut arena = Arena::standard();
                    let game = create_or_die(&mut arena, ClassId::FOLDER, None);
                    let root = create_or_die(&mut arena, ClassId::FOLDER, Some(game));
                    // A tree a hundred wide and a thousand deep in total: 100 folders of 999.
                    let per_branch = n / 100 - 1;
                    for _ in 0..100 {
                        let branch = create_or_die(&mut arena, ClassId::FOLDER, Some(root));
                        for _ in 0..per_branch {
                            create_or_die(&mut arena, ClassId::ENTITY, Some(branch));
                        }
                    }
                    (arena, root)
                },
                |(arena, root)| {
                    let destroyed = arena.destroy(*root).ok();
                    let first = arena.drain().ok();
                    let second = arena.drain().ok();
                    (destroyed, first, second)
                },
            );
        },
    )
}

fn clone_subtree(n: u64) -> Workload {
    Workload::new(
        "arena_clone_subtree",
        n,
        "id map first, then copies with references rewritten, one announced attach",
        move |b| {
            b.iter_with_setup(
                || {
                    let mut arena = Arena::standard();
                    let game = create_or_die(&mut arena, ClassId::FOLDER, None);
                    let model = create_or_die(&mut arena, ClassId::MODEL, Some(game));
                    let per_group = n / 100 - 1;
                    for _ in 0..100 {
                        let group = create_or_die(&mut arena, ClassId::FOLDER, Some(model));
                        for _ in 0..per_group {
                            create_or_die(&mut arena, ClassId::PART, Some(group));
                        }
                    }
                    (arena, game, model)
                },
                |(arena, game, model)| arena.clone_subtree(*model, Some(*game)).ok(),
            );
        },
    )
}
