//! Overlays and commits: read-your-writes, commit order, determinism whatever the arrival order,
//! lane count and finishing order, conflicts, stale rows, refusals, structural refusal through
//! the runner, equal writes and ticks.

use proptest::prelude::*;
use strata_arena::{Arena, ClassId};
use strata_component_store::{
    ComponentDef, ComponentId, FieldDef, FieldId, InstanceRef, Store, StoreError, Tick, Value,
};
use strata_parallel_overlay::{
    NoOrder, Overlay, OverlayError, WriteSet, Writer, WriterRank, commit, run_parallel,
};

struct World {
    arena: Arena,
    store: Store,
    score: ComponentId,
    n: FieldId,
    members: Vec<InstanceRef>,
}

fn world(count: usize) -> World {
    world_of(
        ComponentDef::new("Score").field(FieldDef::integer("n", 0)),
        count,
    )
}

/// A world whose `Score` is observed, so every change is also an event.
fn observed_world(count: usize) -> World {
    world_of(
        ComponentDef::new("Score")
            .field(FieldDef::integer("n", 0))
            .observed(true),
        count,
    )
}

fn world_of(score: ComponentDef, count: usize) -> World {
    let mut arena = Arena::standard();
    let mut store = Store::new();
    let score = store.install(score, arena.classes()).unwrap();
    let n = store.field(score, "n").unwrap();
    let members: Vec<InstanceRef> = (0..count)
        .map(|_| {
            let id = arena.create(ClassId::ENTITY, None).unwrap();
            InstanceRef::new(id, arena.slot_of(id).unwrap())
        })
        .collect();
    for m in &members {
        store.add(*m, ClassId::ENTITY, score, []).unwrap();
    }
    World {
        arena,
        store,
        score,
        n,
        members,
    }
}

fn n_of_link(w: &World, at: InstanceRef, link: ComponentId, hp: FieldId) -> i64 {
    *w.store.get::<i64>(at, link, hp).unwrap()
}

fn n_of(w: &World, at: InstanceRef) -> i64 {
    *w.store.get::<i64>(at, w.score, w.n).unwrap()
}

#[test]
fn a_writer_reads_its_own_writes_and_never_another_writers() {
    let w = world(2);
    let at = w.members[0];
    let mut first = Overlay::new(WriterRank::system(0, 1), &w.store);
    let mut second = Overlay::new(WriterRank::system(1, 2), &w.store);
    // Run one after the other on this one thread: still isolated.
    first.set(at, w.score, w.n, 5i64).unwrap();
    assert_eq!(first.get::<i64>(at, w.score, w.n).unwrap(), 5);
    assert_eq!(
        second.get::<i64>(at, w.score, w.n).unwrap(),
        0,
        "established state, not first's write"
    );
    second.set(at, w.score, w.n, 9i64).unwrap();
    assert_eq!(first.read(at, w.score, w.n).unwrap(), Value::Integer(5));
    assert_eq!(second.read(at, w.score, w.n).unwrap(), Value::Integer(9));
    assert_eq!(n_of(&w, at), 0, "nothing reaches the store before commit");
}

#[test]
fn commit_applies_by_tier_then_rank_then_sequence() {
    let mut w = world(3);
    let (a, b, c) = (w.members[0], w.members[1], w.members[2]);
    let store = &w.store;
    let mut late_system = Overlay::new(WriterRank::system(5, 50), store);
    let mut early_system = Overlay::new(WriterRank::system(1, 10), store);
    let mut group = Overlay::new(WriterRank::group(99, 7), store);
    late_system.set(a, w.score, w.n, 3i64).unwrap();
    early_system.set(a, w.score, w.n, 2i64).unwrap();
    group.set(a, w.score, w.n, 1i64).unwrap();
    // Within one writer, the later write wins.
    group.set(b, w.score, w.n, 1i64).unwrap();
    group.set(b, w.score, w.n, 2i64).unwrap();
    early_system.set(c, w.score, w.n, 4i64).unwrap();
    group.set(c, w.score, w.n, 8i64).unwrap();
    let sets = vec![early_system.finish(), group.finish(), late_system.finish()];
    let report = commit(&mut w.store, sets, &NoOrder);
    assert_eq!(n_of(&w, a), 3, "systems after groups; later rank last");
    assert_eq!(n_of(&w, b), 2, "a writer's last write");
    assert_eq!(
        n_of(&w, c),
        4,
        "a system after a group, whatever the ranks' values"
    );
    insta::assert_snapshot!(report.to_string(), @r"
    3 writers: 6 applied, 0 unchanged, 0 relocated, 0 refused
    conflict on Score.n of #1: group 7 (rank 99) then system 10 (rank 1) (NOT ordered by the schedule)
    conflict on Score.n of #3: group 7 (rank 99) then system 10 (rank 1) (NOT ordered by the schedule)
    conflict on Score.n of #1: system 10 (rank 1) then system 50 (rank 5) (NOT ordered by the schedule)
    ");
}

#[test]
fn conflicts_say_whether_the_schedule_orders_the_writers() {
    let mut w = world(1);
    let at = w.members[0];
    let mut x = Overlay::new(WriterRank::system(1, 100), &w.store);
    let mut y = Overlay::new(WriterRank::system(2, 200), &w.store);
    x.set(at, w.score, w.n, 1i64).unwrap();
    y.set(at, w.score, w.n, 2i64).unwrap();
    let sets = vec![x.finish(), y.finish()];
    let declared =
        |a: WriterRank, b: WriterRank| (a.id, b.id) == (100, 200) || (a.id, b.id) == (200, 100);
    let report = commit(&mut w.store.snapshot(), sets.clone(), &declared);
    assert_eq!(report.conflicts.len(), 1);
    assert!(report.conflicts[0].ordered);
    assert_eq!(
        (report.conflicts[0].first.id, report.conflicts[0].second.id),
        (100, 200)
    );
    let report = commit(&mut w.store, sets, &NoOrder);
    assert!(!report.conflicts[0].ordered);
    assert_eq!(n_of(&w, at), 2);
}

#[test]
fn a_stale_row_falls_back_to_the_instance_and_a_removed_component_is_refused() {
    let mut w = world(3);
    let (a, b, c) = (w.members[0], w.members[1], w.members[2]);
    let mut writer = Overlay::new(WriterRank::system(0, 1), &w.store);
    writer.set(c, w.score, w.n, 30i64).unwrap();
    writer.set(b, w.score, w.n, 20i64).unwrap();
    let set = writer.finish();
    // After the writers joined but before commit: a removal swaps c into a's row, and b loses
    // the component.
    w.store.remove(a, w.score).unwrap();
    w.store.remove(b, w.score).unwrap();
    let report = commit(&mut w.store, vec![set], &NoOrder);
    assert_eq!(n_of(&w, c), 30, "applied through c's present row");
    assert_eq!(report.relocated, 1);
    assert_eq!(report.refusals.len(), 1);
    assert_eq!(report.refusals[0].instance, b.id);
    assert!(matches!(
        report.refusals[0].error,
        StoreError::MissingMembership { .. }
    ));
}

/// While writers run, the store is borrowed (by `run_parallel`, and shared by every overlay),
/// so the only structural route a running writer has is its overlay's, which refuses; the
/// store's own structural methods cannot be reached at all (`tests/it/compile_fail.rs` holds
/// programs that try, and the borrow errors they fail with). Through the real runner: each
/// writer's structural request is reported as its error, its field writes made before it
/// still commit, and the committed store's structure is exactly as before (members, slots,
/// structural revision, removal log).
#[test]
fn a_writer_asking_its_overlay_for_a_structural_change_is_refused_and_keeps_its_earlier_writes() {
    let mut w = world(3);
    let (a, b) = (w.members[0], w.members[1]);
    let loner = {
        let id = w.arena.create(ClassId::ENTITY, None).unwrap();
        InstanceRef::new(id, w.arena.slot_of(id).unwrap())
    };
    let before = w.store.set(w.score).unwrap().clone();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let (score, n) = (w.score, w.n);
    // One writer asks to add the component to an instance without it, one to remove it from a
    // member; each first writes a field.
    let writers = [
        Writer {
            rank: WriterRank::system(0, 1),
            work: true,
        },
        Writer {
            rank: WriterRank::system(1, 2),
            work: false,
        },
    ];
    let report = run_parallel(
        &mut w.store,
        &pool,
        &writers,
        |adds, overlay| {
            if *adds {
                overlay.set(a, score, n, 1i64)?;
                overlay.add_component(loner, ClassId::ENTITY, score)?;
                overlay.set(a, score, n, 99i64)?;
            } else {
                overlay.set(b, score, n, 2i64)?;
                overlay.remove_component(a, score)?;
            }
            Ok(())
        },
        &NoOrder,
    );
    assert_eq!(
        report.errors,
        vec![
            (
                WriterRank::system(0, 1),
                OverlayError::StructuralRefused("adding a component")
            ),
            (
                WriterRank::system(1, 2),
                OverlayError::StructuralRefused("removing a component")
            ),
        ]
    );
    assert_eq!(
        (n_of(&w, a), n_of(&w, b)),
        (1, 2),
        "writes before the refusal"
    );
    assert!(!w.store.has(loner, w.score));
    let after = w.store.set(w.score).unwrap();
    assert_eq!(after.ids(), before.ids());
    assert_eq!(after.slots(), before.slots());
    assert_eq!(after.structural_revision(), before.structural_revision());
    assert_eq!(after.removal_log().head(), before.removal_log().head());
    // Writes are checked when recorded, too.
    let mut writer = Overlay::new(WriterRank::system(0, 1), &w.store);
    assert!(matches!(
        writer.write(a, w.score, w.n, Value::Text("x".into())),
        Err(OverlayError::Store(StoreError::TypeMismatch { .. }))
    ));
    assert!(writer.is_empty());
}

#[test]
fn equal_writes_at_commit_do_not_tick_and_real_ones_track_like_ordinary_writes() {
    let mut w = world(2);
    let (a, b) = (w.members[0], w.members[1]);
    w.store.take_dirty(w.score).unwrap();
    let tick = w.store.tick();
    let mut writer = Overlay::new(WriterRank::system(0, 1), &w.store);
    writer.set(a, w.score, w.n, 0i64).unwrap();
    writer.set(b, w.score, w.n, 6i64).unwrap();
    let sets = vec![writer.finish()];
    let report = commit(&mut w.store, sets, &NoOrder);
    assert_eq!((report.applied, report.unchanged), (1, 1));
    assert_eq!(w.store.tick().0, tick.0 + 1, "one real change, one tick");
    let set = w.store.set(w.score).unwrap();
    assert_eq!(
        set.changed_ticks()
            .get(w.store.row(b, w.score).unwrap())
            .expect("a row of the set"),
        w.store.tick()
    );
    assert!(
        set.changed_ticks()
            .get(w.store.row(a, w.score).unwrap())
            .expect("a row of the set")
            < w.store.tick()
    );
    let dirty = w.store.take_dirty(w.score).unwrap();
    assert_eq!(
        dirty.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
        vec![b.id]
    );
}

/// A hash of everything a commit can change: values, ticks, the store tick.
/// Everything a commit leaves behind in `Score`: each row's id, value, added and changed ticks
/// and dirty fields (in id order), the rows the change log lists (as ids, in its order), the
/// store tick, and the events the commit queued (drained).
fn fingerprint(store: &mut Store, score: ComponentId, n: FieldId) -> String {
    let events = store.drain_events();
    let set = store.set(score).unwrap();
    let mut rows: Vec<_> = (0..set.len())
        .map(|r| {
            (
                set.ids()[r],
                set.values::<i64>(n).unwrap()[r],
                set.added_ticks().get(r).expect("a row of the set"),
                set.changed_ticks().get(r).expect("a row of the set"),
                set.dirty_mask(r),
            )
        })
        .collect();
    rows.sort_by_key(|row| row.0);
    let logged: Option<Vec<_>> = set
        .changes_since(Tick(0))
        .map(|changes| changes.rows().map(|r| set.ids()[r]).collect());
    format!("{rows:?} {logged:?} {:?} {events:?}", store.tick())
}

/// One writer of the arrival-order test: group (else system) tier, rank within the tier, its
/// read-modify-writes (member, delta), and how many times it yields before handing its set in.
type Plan = (bool, u64, Vec<(usize, i64)>, u8);

/// The writer's rank: its index in the plans is its id, so ranks are distinct.
fn rank_of(id: usize, plan: &Plan) -> WriterRank {
    if plan.0 {
        WriterRank::group(plan.1, id as u64)
    } else {
        WriterRank::system(plan.1, id as u64)
    }
}

/// Runs one writer over `w`'s store: a read-modify-write of each member it names, through the
/// instance setter for even deltas and the typed column handle for odd ones.
fn record(w: &World, id: usize, plan: &Plan) -> Result<WriteSet, OverlayError> {
    let mut overlay = Overlay::new(rank_of(id, plan), &w.store);
    for &(i, delta) in &plan.2 {
        let at = w.members[i];
        if delta % 2 == 0 {
            let current = overlay.get::<i64>(at, w.score, w.n)?;
            overlay.set(at, w.score, w.n, current + delta)?;
        } else {
            let row = w.store.row(at, w.score)?;
            let mut column = overlay.column::<i64>(w.score, w.n)?;
            let current = column.get(row).copied().unwrap_or_default();
            column.write(row, current + delta)?;
        }
    }
    Ok(overlay.finish())
}

/// Runs every writer on its own task of a `lanes`-thread pool; each hands its set in when it
/// finishes (after dawdling as its plan says), and the sets then arrive at the commit in that
/// finishing order further shuffled by `keys`.
fn arrivals(w: &World, plans: &[Plan], lanes: usize, keys: &[u32]) -> Vec<WriteSet> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(lanes)
        .build()
        .unwrap();
    let finished = std::sync::Mutex::new(Vec::new());
    pool.scope(|scope| {
        for (id, plan) in plans.iter().enumerate() {
            let finished = &finished;
            scope.spawn(move |_| {
                let set = record(w, id, plan).unwrap();
                for _ in 0..plan.3 {
                    std::thread::yield_now();
                }
                finished.lock().unwrap().push(set);
            });
        }
    });
    let mut keyed: Vec<(u32, usize, WriteSet)> = finished
        .into_inner()
        .unwrap()
        .into_iter()
        .enumerate()
        .map(|(at, set)| (keys[at % keys.len()], at, set))
        .collect();
    keyed.sort_by_key(|(key, at, _)| (*key, *at));
    keyed.into_iter().map(|(_, _, set)| set).collect()
}

fn plans() -> impl Strategy<Value = Vec<Plan>> {
    prop::collection::vec(
        (
            prop::bool::weighted(0.3),
            0u64..4,
            prop::collection::vec((0usize..12, -3i64..4), 0..30),
            0u8..6,
        ),
        2..8,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    /// The commit orders write sets itself: whatever order they arrive in (finishing order on
    /// 1 to 8 lanes, then shuffled), the store ends identical (values, added and change ticks,
    /// dirty fields, the change log, the store tick and the events queued) to one that received
    /// them in (tier, rank, id) order, and so does `run_parallel` on any number of lanes.
    #[test]
    fn the_committed_store_is_the_same_for_any_arrival_order_lane_count_and_finishing_order(
        plans in plans(),
        lanes in 1usize..=8,
        keys in prop::collection::vec(any::<u32>(), 8),
    ) {
        let mut reference = observed_world(12);
        reference.store.drain_events();
        let mut sets: Vec<WriteSet> = plans
            .iter()
            .enumerate()
            .map(|(id, plan)| record(&reference, id, plan).unwrap())
            .collect();
        sets.sort_by_key(WriteSet::rank);
        commit(&mut reference.store, sets, &NoOrder);
        let expected = fingerprint(&mut reference.store, reference.score, reference.n);

        let mut arrived = observed_world(12);
        arrived.store.drain_events();
        let sets = arrivals(&arrived, &plans, lanes, &keys);
        commit(&mut arrived.store, sets, &NoOrder);
        prop_assert_eq!(&fingerprint(&mut arrived.store, arrived.score, arrived.n), &expected);

        let mut run = observed_world(12);
        run.store.drain_events();
        let writers: Vec<Writer<(usize, Plan)>> = plans
            .iter()
            .enumerate()
            .map(|(id, plan)| Writer { rank: rank_of(id, plan), work: (id, plan.clone()) })
            .collect();
        let pool = rayon::ThreadPoolBuilder::new().num_threads(lanes).build().unwrap();
        let members = run.members.clone();
        let (score, n) = (run.score, run.n);
        run_parallel(
            &mut run.store,
            &pool,
            &writers,
            |(_, plan), overlay| {
                for &(i, delta) in &plan.2 {
                    let current = overlay.get::<i64>(members[i], score, n)?;
                    overlay.set(members[i], score, n, current + delta)?;
                }
                Ok(())
            },
            &NoOrder,
        );
        prop_assert_eq!(fingerprint(&mut run.store, run.score, run.n), expected);
    }
}

#[test]
fn writer_errors_are_reported_and_earlier_writes_kept() {
    let mut w = world(2);
    let (a, b) = (w.members[0], w.members[1]);
    w.store.remove(b, w.score).unwrap();
    let writers = [Writer {
        rank: WriterRank::system(0, 1),
        work: (),
    }];
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let (score, n) = (w.score, w.n);
    let report = run_parallel(
        &mut w.store,
        &pool,
        &writers,
        |_, overlay| {
            overlay.set(a, score, n, 4i64)?;
            overlay.set(b, score, n, 5i64)?;
            Ok(())
        },
        &NoOrder,
    );
    assert_eq!(report.errors.len(), 1);
    assert!(matches!(
        report.errors[0].1,
        OverlayError::Store(StoreError::MissingMembership { .. })
    ));
    assert_eq!(n_of(&w, a), 4);
    assert_eq!(report.counts, vec![(WriterRank::system(0, 1), 0, 1)]);
    let _ = &w.arena;
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// A writer's log against a map model, across the switch from a sparse to a row-indexed
    /// index (the sets here are large enough that long runs cross it mid-sequence).
    #[test]
    fn one_writer_matches_a_last_write_wins_model(
        ops in prop::collection::vec((0usize..300, -50i64..50, 0u8..3), 0..500),
    ) {
        let mut w = world(300);
        let mut model = std::collections::HashMap::new();
        let mut overlay = Overlay::new(WriterRank::system(0, 0), &w.store);
        for (row, value, how) in ops {
            let at = w.members[row];
            match how {
                0 => overlay.write_row(w.score, row, w.n, Value::Integer(value)).unwrap(),
                1 => overlay.set(at, w.score, w.n, value).unwrap(),
                _ => {
                    let mut column = overlay.column::<i64>(w.score, w.n).unwrap();
                    column.write(row, value).unwrap();
                    prop_assert_eq!(column.get(row), Some(&value));
                }
            }
            model.insert(row, value);
            prop_assert_eq!(overlay.get::<i64>(at, w.score, w.n).unwrap(), value);
            prop_assert_eq!(overlay.len(), model.len());
        }
        for (row, at) in w.members.iter().enumerate() {
            let expected = model.get(&row).copied().unwrap_or(0);
            prop_assert_eq!(overlay.get::<i64>(*at, w.score, w.n).unwrap(), expected);
        }
        let set = overlay.finish();
        prop_assert_eq!(set.len(), model.len());
        let report = commit(&mut w.store, vec![set], &NoOrder);
        prop_assert!(report.refusals.is_empty());
        for (row, at) in w.members.clone().into_iter().enumerate() {
            prop_assert_eq!(n_of(&w, at), model.get(&row).copied().unwrap_or(0));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Several writers, then removals that move rows before the commit: the committed store
    /// equals a model that applies each writer's final writes, in rank order, by instance, and
    /// every live write is counted once as applied, unchanged or refused.
    #[test]
    fn commit_matches_a_model_applied_by_instance_in_rank_order(
        writers in prop::collection::vec(
            (0u64..8, prop::collection::vec((0usize..40, -3i64..3), 0..60)),
            1..5,
        ),
        removed in prop::collection::btree_set(0usize..40, 0..10),
    ) {
        let mut w = world(40);
        let sets: Vec<_> = writers
            .iter()
            .enumerate()
            .map(|(id, (rank, writes))| {
                let mut overlay = Overlay::new(WriterRank::system(*rank, id as u64), &w.store);
                for &(row, value) in writes {
                    overlay.write_row(w.score, row, w.n, Value::Integer(value)).unwrap();
                }
                overlay.finish()
            })
            .collect();
        // The model: last write per member per writer, writers in (rank, id) order.
        let mut order: Vec<usize> = (0..writers.len()).collect();
        order.sort_by_key(|&i| (writers[i].0, i));
        let mut model = vec![0i64; 40];
        let mut live_writes = 0;
        let mut refused = 0;
        for i in order {
            let mut last = std::collections::BTreeMap::new();
            for &(row, value) in &writers[i].1 {
                last.insert(row, value);
            }
            live_writes += last.len();
            for (row, value) in last {
                if removed.contains(&row) {
                    refused += 1;
                } else {
                    model[row] = value;
                }
            }
        }
        for &row in &removed {
            w.store.remove(w.members[row], w.score).unwrap();
        }
        let report = commit(&mut w.store, sets, &NoOrder);
        prop_assert_eq!(report.refusals.len(), refused);
        prop_assert_eq!(report.applied + report.unchanged + report.refusals.len(), live_writes);
        for (row, at) in w.members.clone().into_iter().enumerate() {
            if removed.contains(&row) {
                prop_assert!(w.store.row(at, w.score).is_err());
            } else {
                prop_assert_eq!(n_of(&w, at), model[row]);
            }
        }
    }
}

#[test]
fn commit_emits_events_for_observed_components_and_keeps_the_reverse_index() {
    let mut w = world(3);
    let (a, b, c) = (w.members[0], w.members[1], w.members[2]);
    let link = w
        .store
        .install(
            ComponentDef::new("Link")
                .field(FieldDef::integer("hp", 0))
                .field(FieldDef::reference(
                    "target",
                    strata_component_store::RefPolicy::Clear,
                ))
                .observed(true),
            w.arena.classes(),
        )
        .unwrap();
    let (hp, target) = (
        w.store.field(link, "hp").unwrap(),
        w.store.field(link, "target").unwrap(),
    );
    for at in [a, b] {
        w.store.add(at, ClassId::ENTITY, link, []).unwrap();
    }
    w.store.drain_events();
    let mut writer = Overlay::new(WriterRank::system(0, 1), &w.store);
    // `hp` of b, `hp` of a, a reference, then `hp` of b again (replacing its first write with
    // a later sequence number).
    writer.set(b, link, hp, 5i64).unwrap();
    writer.set(a, link, hp, 7i64).unwrap();
    writer
        .write(a, link, target, Value::Reference(Some(c.id)))
        .unwrap();
    writer.set(b, link, hp, 9i64).unwrap();
    let set = writer.finish();
    let report = commit(&mut w.store, vec![set], &NoOrder);
    assert_eq!((report.applied, report.unchanged), (3, 0));
    let changed: Vec<_> = w
        .store
        .drain_events()
        .into_iter()
        .filter_map(|e| match e {
            strata_component_store::StoreEvent::Changed { id, field, .. } => Some((id, field)),
            _ => None,
        })
        .collect();
    // Column by column in first-written order, each column in sequence order: b's `hp` now
    // comes after a's.
    assert_eq!(changed, vec![(a.id, hp), (b.id, hp), (a.id, target)]);
    assert_eq!(n_of_link(&w, b, link, hp), 9);
    // The reference went in through the indexed path: destroying its target clears it.
    let destruction = w.arena.destroy(c.id).unwrap();
    w.store.on_destroyed(&destruction.doomed);
    assert_eq!(
        w.store.get_value(a, link, target).unwrap(),
        Value::Reference(None)
    );
}

#[test]
fn every_field_type_records_reads_back_and_commits() {
    use std::sync::Arc;
    use strata_arena::{Transform, Vec3};
    use strata_component_store::{FieldType, ListValue};

    let mut w = world(2);
    let (a, b) = (w.members[0], w.members[1]);
    let all = w
        .store
        .install(
            ComponentDef::new("All")
                .field(FieldDef::number("num", 0.0))
                .field(FieldDef::integer("int", 0))
                .field(FieldDef::boolean("flag", false))
                .field(FieldDef::text("name", ""))
                .field(FieldDef::enumeration("mood", &["calm", "angry"], "calm"))
                .field(FieldDef::vector("at", Vec3::new(0.0, 0.0, 0.0)))
                .field(FieldDef::transform("pose", Transform::IDENTITY))
                .field(FieldDef::list("tags", FieldType::Integer)),
            w.arena.classes(),
        )
        .unwrap();
    for at in [a, b] {
        w.store.add(at, ClassId::ENTITY, all, []).unwrap();
    }
    let fields: Vec<(String, FieldId)> =
        ["num", "int", "flag", "name", "mood", "at", "pose", "tags"]
            .iter()
            .map(|name| (name.to_string(), w.store.field(all, name).unwrap()))
            .collect();
    let field = |name: &str| fields.iter().find(|(n, _)| n == name).unwrap().1;
    let pose = Transform::from_position(Vec3::new(1.0, 2.0, 3.0));
    let writes = [
        ("num", Value::Number(1.5)),
        ("int", Value::Integer(-4)),
        ("flag", Value::Boolean(true)),
        ("name", Value::Text(Arc::from("ada"))),
        ("mood", Value::Enum(1)),
        ("at", Value::Vector(Vec3::new(4.0, 5.0, 6.0))),
        ("pose", Value::Transform(Box::new(pose))),
        (
            "tags",
            Value::List(ListValue::from_vec(vec![
                Value::Integer(1),
                Value::Integer(2),
            ])),
        ),
    ];
    let mut writer = Overlay::new(WriterRank::system(0, 1), &w.store);
    for (name, value) in &writes {
        writer.write(a, all, field(name), value.clone()).unwrap();
        assert_eq!(&writer.read(a, all, field(name)).unwrap(), value, "{name}");
    }
    // The same fields of b through the typed handles.
    writer
        .column::<f64>(all, field("num"))
        .unwrap()
        .write(1, 1.5)
        .unwrap();
    writer
        .column::<Arc<str>>(all, field("name"))
        .unwrap()
        .write(1, Arc::from("ada"))
        .unwrap();
    writer
        .column::<Transform>(all, field("pose"))
        .unwrap()
        .write(1, pose)
        .unwrap();
    assert_eq!(writer.get::<f64>(b, all, field("num")).unwrap(), 1.5);
    // A wrong value type is refused at record time and records nothing.
    let before = writer.len();
    assert!(matches!(
        writer.write(a, all, field("int"), Value::Number(1.0)),
        Err(OverlayError::Store(StoreError::TypeMismatch { .. }))
    ));
    assert_eq!(writer.len(), before);
    let set = writer.finish();
    assert_eq!(set.len(), writes.len() + 3);
    let report = commit(&mut w.store, vec![set], &NoOrder);
    assert_eq!(report.applied, writes.len() + 3);
    assert!(report.refusals.is_empty());
    for (name, value) in &writes {
        assert_eq!(
            &w.store.get_value(a, all, field(name)).unwrap(),
            value,
            "{name}"
        );
    }
    assert_eq!(w.store.get::<f64>(b, all, field("num")).unwrap(), &1.5);
    assert_eq!(
        w.store.get::<Transform>(b, all, field("pose")).unwrap(),
        &pose
    );
}

#[test]
fn a_typed_column_handle_checks_its_type_and_rows() {
    let w = world(3);
    let mut writer = Overlay::new(WriterRank::system(0, 1), &w.store);
    assert!(matches!(
        writer.column::<f64>(w.score, w.n),
        Err(OverlayError::Store(StoreError::TypeMismatch { .. }))
    ));
    assert!(matches!(
        writer.column::<i64>(w.score, FieldId::from_index(7)),
        Err(OverlayError::Store(StoreError::FieldOutOfRange { .. }))
    ));
    let mut column = writer.column::<i64>(w.score, w.n).unwrap();
    assert_eq!(column.len(), 3);
    assert_eq!(column.instance(2), Some(w.members[2]));
    assert!(matches!(
        column.write(3, 1),
        Err(OverlayError::Store(StoreError::RowOutOfRange {
            row: 3,
            ..
        }))
    ));
    assert_eq!(column.get(1), Some(&0), "the established value");
    column.write(1, 8).unwrap();
    column.write(1, 9).unwrap();
    assert_eq!(column.get(1), Some(&9));
    assert_eq!(column.written(0), None);
    assert_eq!(writer.len(), 1);
    assert_eq!(writer.get::<i64>(w.members[1], w.score, w.n).unwrap(), 9);
    let set = writer.finish();
    assert_eq!((set.len(), set.writes()), (1, 2));
}

/// Runs the same writers for `frames` frames on 2 threads, with or without a spare pool;
/// returns the fingerprint and the spare's size after each frame.
fn run_frames(
    writes: &[Vec<(usize, i64)>],
    instances: usize,
    frames: usize,
    spare: Option<&strata_parallel_overlay::Spare>,
) -> (String, Vec<usize>) {
    let mut w = world(instances);
    let writers: Vec<Writer<Vec<(usize, i64)>>> = writes
        .iter()
        .enumerate()
        .map(|(i, ws)| Writer {
            rank: WriterRank::system((i * 7 % 5) as u64, i as u64),
            work: ws.clone(),
        })
        .collect();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let members = w.members.clone();
    let (score, n) = (w.score, w.n);
    let run = |work: &Vec<(usize, i64)>, overlay: &mut Overlay<'_>| {
        for (i, value) in work {
            if *value % 2 == 0 {
                let current = overlay.get::<i64>(members[*i], score, n)?;
                overlay.set(members[*i], score, n, current + *value)?;
            } else {
                let mut column = overlay.column::<i64>(score, n)?;
                let row = column.len() - 1 - *i;
                let current = *column.get(row).unwrap();
                column.write(row, current + *value)?;
            }
        }
        Ok(())
    };
    let mut sizes = Vec::new();
    for _ in 0..frames {
        match spare {
            Some(spare) => {
                strata_parallel_overlay::run_parallel_with_spare(
                    &mut w.store,
                    &pool,
                    &writers,
                    run,
                    &NoOrder,
                    spare,
                );
                sizes.push(spare.len());
            }
            None => {
                run_parallel(&mut w.store, &pool, &writers, run, &NoOrder);
            }
        }
    }
    (fingerprint(&mut w.store, w.score, w.n), sizes)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    /// Frames that record into a spare pool's memory commit exactly what fresh overlays do,
    /// and the pool never holds more than one frame's overlays used (here, one log and at most
    /// one row array per writer; how many exactly depends on which writers overlapped).
    #[test]
    fn recycled_memory_commits_the_same_as_fresh(
        writes in prop::collection::vec(prop::collection::vec((0usize..200, -3i64..4), 0..150), 1..6),
    ) {
        let spare = strata_parallel_overlay::Spare::new();
        let (fresh, _) = run_frames(&writes, 200, 3, None);
        let (recycled, sizes) = run_frames(&writes, 200, 3, Some(&spare));
        prop_assert_eq!(fresh, recycled);
        for size in sizes {
            prop_assert!(size <= 2 * writes.len(), "{} held for {} writers", size, writes.len());
        }
    }
}

#[test]
fn a_spare_pool_reuses_logs_and_row_arrays_and_can_be_cleared() {
    let spare = strata_parallel_overlay::Spare::new();
    let writes = vec![(0..150).map(|i| (i, 1)).collect::<Vec<_>>()];
    let (_, sizes) = run_frames(&writes, 200, 2, Some(&spare));
    // One log (the integer column) and one row array (150 rows turned the index dense).
    assert_eq!(sizes, [2, 2]);
    assert!(spare.bytes() >= 150 * (4 + 16 + 8 + 8) + 200 * 4);
    spare.clear();
    assert!(spare.is_empty());
    assert_eq!(spare.bytes(), 0);
}

/// The scheduler's reachability is the oracle: writers ranked by their scheduled positions,
/// conflicts marked ordered exactly when the plan declares an order between two systems, and
/// never for a group writer, whose id is not a system's.
#[test]
fn a_real_schedule_orders_conflicts_between_systems_only() {
    use strata_parallel_overlay::SystemOrder;
    use strata_scheduler::{Schedule, System};

    let mut schedule: Schedule<()> = Schedule::new();
    let first = schedule
        .add(System::new("first", ()).before("second"))
        .unwrap();
    let second = schedule.add(System::new("second", ())).unwrap();
    let loose = schedule.add(System::new("loose", ())).unwrap();
    let plan = schedule.build();
    let rank = |id: strata_scheduler::SystemId| {
        WriterRank::system(u64::from(plan.position(id).unwrap()), id.to_u64())
    };
    let mut w = world(3);
    let (a, b) = (w.members[0], w.members[1]);
    let mut sets = Vec::new();
    for (writer, value) in [(rank(first), 1i64), (rank(second), 2), (rank(loose), 3)] {
        let mut overlay = Overlay::new(writer, &w.store);
        overlay.set(a, w.score, w.n, value).unwrap();
        sets.push(overlay.finish());
    }
    // A group whose instance id equals `second`'s system id writes b, as does `first`.
    let mut group = Overlay::new(WriterRank::group(0, second.to_u64()), &w.store);
    group.set(b, w.score, w.n, 5i64).unwrap();
    sets.push(group.finish());
    let mut overlay = Overlay::new(rank(first), &w.store);
    overlay.set(b, w.score, w.n, 6i64).unwrap();
    sets.push(overlay.finish());

    let report = commit(&mut w.store, sets, &SystemOrder(plan.order_oracle()));
    let verdicts: Vec<_> = report
        .conflicts
        .iter()
        .map(|c| (c.instance, c.first.id, c.second.id, c.ordered))
        .collect();
    let mut expected = vec![
        (b.id, second.to_u64(), first.to_u64(), false),
        (a.id, first.to_u64(), second.to_u64(), true),
        (a.id, second.to_u64(), loose.to_u64(), false),
    ];
    let mut got = verdicts.clone();
    expected.sort();
    got.sort();
    assert_eq!(got, expected, "{verdicts:?}");
    // The last scheduled system wins a; the system commits after the group on b.
    assert_eq!(n_of(&w, a), 3);
    assert_eq!(n_of(&w, b), 6);
}

/// A row that was emptied by a destruction and refilled by another instance before the commit
/// no longer identifies the written instance: the write is refused, the newcomer untouched.
#[test]
fn a_write_to_an_instance_destroyed_before_commit_is_refused() {
    let mut w = world(2);
    let (a, b) = (w.members[0], w.members[1]);
    let mut writer = Overlay::new(WriterRank::system(0, 1), &w.store);
    writer.set(a, w.score, w.n, 7i64).unwrap();
    let set = writer.finish();
    let destruction = w.arena.destroy(a.id).unwrap();
    w.store.on_destroyed(&destruction.doomed);
    let id = w.arena.create(ClassId::ENTITY, None).unwrap();
    let newcomer = InstanceRef::new(id, w.arena.slot_of(id).unwrap());
    w.store.add(newcomer, ClassId::ENTITY, w.score, []).unwrap();
    let report = commit(&mut w.store, vec![set], &NoOrder);
    assert_eq!(report.applied, 0);
    assert_eq!(report.refusals.len(), 1);
    assert_eq!(report.refusals[0].instance, a.id);
    assert_eq!(n_of(&w, newcomer), 0);
    assert_eq!(n_of(&w, b), 0);
}
