//! Staged bulk operations and the publication barrier: what is visible before and after a
//! commit, the order things happen in, cancellation, and what a failed commit leaves.

use std::cell::RefCell;
use std::rc::Rc;

use crate::common::World;
use strata_arena::{ClassId, Event, InstanceId};
use strata_component_store::{
    CommitFailure, ComponentDef, ComponentId, FieldDef, FieldId, InstanceRef, RefPolicy, Stage,
    StageError, StoreError, StoreEvent, Value,
};

fn health() -> ComponentDef {
    ComponentDef::new("Health")
        .field(FieldDef::number("current", 100.0))
        .observed(true)
}

fn tag() -> ComponentDef {
    ComponentDef::new("Tag").field(FieldDef::integer("n", 7))
}

struct Fixture {
    w: World,
    health: ComponentId,
    current: FieldId,
    tag: ComponentId,
    n: FieldId,
}

fn fixture() -> Fixture {
    let mut w = World::new();
    let health = w.install(health());
    let current = w.field(health, "current");
    let tag = w.install(tag());
    let n = w.field(tag, "n");
    w.arena.drain().unwrap();
    Fixture {
        w,
        health,
        current,
        tag,
        n,
    }
}

fn no_init(_: &mut strata_component_store::SpawnRows<'_>) -> Result<(), StoreError> {
    Ok(())
}

fn created_events(events: &[Event]) -> usize {
    events
        .iter()
        .filter(|e| {
            matches!(
                e,
                Event::Created { .. } | Event::CreatedRange { .. } | Event::CreatedList { .. }
            )
        })
        .count()
}

fn ids_of(ticket: &strata_component_store::SpawnTicket) -> Vec<InstanceId> {
    (0..ticket.len()).map(|k| ticket.id(k).unwrap()).collect()
}

#[test]
fn nothing_reserved_is_visible_before_the_commit() {
    let mut f = fixture();
    let mut stage = Stage::new(&f.w.arena, &f.w.store);
    let ticket = stage
        .spawn(
            &mut f.w.arena,
            5,
            ClassId::ENTITY,
            None,
            &[f.health],
            no_init,
        )
        .unwrap();
    assert_eq!(ticket.len(), 5);
    assert!(ticket.ids().is_none(), "fresh ids are one contiguous run");
    for id in ids_of(&ticket) {
        assert!(!f.w.arena.is_live(id), "not alive");
        assert!(f.w.arena.get(id).is_none(), "not findable");
    }
    assert!(f.w.store.set(f.health).unwrap().is_empty(), "no rows");
    assert!(f.w.store.drain_events().is_empty(), "no store event");
    assert_eq!(
        created_events(f.w.arena.pending_events()),
        0,
        "no arena event"
    );

    let tick = f.w.store.tick();
    let published = stage.commit(&mut f.w.arena, &mut f.w.store).unwrap();
    assert_eq!(published.spawned, 5);
    assert_eq!(published.applied.len(), 1);
    for id in ids_of(&ticket) {
        assert!(f.w.arena.is_live(id));
        let at = f.w.at(id);
        assert_eq!(
            *f.w.store.get::<f64>(at, f.health, f.current).unwrap(),
            100.0
        );
    }
    assert_eq!(f.w.store.tick().0, tick.0 + 1, "one tick for the batch");
    assert_eq!(
        created_events(f.w.arena.pending_events()),
        1,
        "one arena event for the batch"
    );
    let added =
        f.w.store
            .drain_events()
            .into_iter()
            .filter(|e| matches!(e, StoreEvent::Added { .. }))
            .count();
    assert_eq!(
        added, 5,
        "the observed component's events follow publication"
    );
}

#[test]
fn the_initializer_sees_placed_defaults_and_runs_before_any_publication() {
    let mut f = fixture();
    let seen = Rc::new(RefCell::new(Vec::new()));
    let (health, current, tag, n) = (f.health, f.current, f.tag, f.n);
    let record = seen.clone();
    let mut stage = Stage::new(&f.w.arena, &f.w.store);
    let ticket = stage
        .spawn(
            &mut f.w.arena,
            3,
            ClassId::ENTITY,
            None,
            &[health, tag],
            move |rows| {
                let range = rows.rows(health)?;
                assert_eq!(range, 0..=2, "one contiguous range per component");
                let values = rows.column_mut::<f64>(health, current)?;
                record.borrow_mut().extend(values.iter().copied());
                for (k, v) in values.iter_mut().enumerate() {
                    *v = k as f64;
                }
                rows.column_mut::<i64>(tag, n)?.fill(3);
                Ok::<(), StoreError>(())
            },
        )
        .unwrap();
    assert!(
        seen.borrow().is_empty(),
        "the initializer waits for the commit"
    );
    stage.commit(&mut f.w.arena, &mut f.w.store).unwrap();
    assert_eq!(*seen.borrow(), vec![100.0; 3], "defaults placed first");
    for (k, id) in ids_of(&ticket).into_iter().enumerate() {
        let at = f.w.at(id);
        assert_eq!(
            *f.w.store.get::<f64>(at, health, current).unwrap(),
            k as f64
        );
        assert_eq!(*f.w.store.get::<i64>(at, tag, n).unwrap(), 3);
    }
    let set = f.w.store.set(health).unwrap();
    assert_eq!(set.pending_dirty(), 0, "initialising marks nothing dirty");
    assert!(set.changed_ticks().iter().all(|t| t == f.w.store.tick()));
}

#[test]
fn a_failing_initializer_publishes_nothing_of_its_spawn() {
    let mut f = fixture();
    let mut stage = Stage::new(&f.w.arena, &f.w.store);
    let ticket = stage
        .spawn(
            &mut f.w.arena,
            4,
            ClassId::ENTITY,
            None,
            &[f.health],
            |_| Err::<(), _>("no"),
        )
        .unwrap();
    let tick = f.w.store.tick();
    let error = stage.commit(&mut f.w.arena, &mut f.w.store).unwrap_err();
    assert!(matches!(error.cause, CommitFailure::Init(ref e) if e.to_string() == "no"));
    assert_eq!(error.failed, Some(ticket.op()));
    assert_eq!(error.released, [ticket.op()]);
    assert!(error.dropped.is_empty() && !error.kept);
    assert_eq!(f.w.store.tick(), tick, "no tick");
    assert!(
        f.w.store.set(f.health).unwrap().is_empty(),
        "rows taken back"
    );
    assert!(f.w.store.drain_events().is_empty(), "no observer event");
    assert_eq!(
        created_events(f.w.arena.pending_events()),
        0,
        "no arena event"
    );
    for id in ids_of(&ticket) {
        assert!(!f.w.arena.is_live(id));
    }
}

#[test]
fn query_batches_capture_membership_when_staged_and_never_a_later_spawn() {
    let mut f = fixture();
    let old = f.w.spawn(ClassId::ENTITY);
    f.w.store.add(old, ClassId::ENTITY, f.health, []).unwrap();
    let mut stage = Stage::new(&f.w.arena, &f.w.store);
    let ticket = stage
        .spawn(
            &mut f.w.arena,
            2,
            ClassId::ENTITY,
            None,
            &[f.health],
            no_init,
        )
        .unwrap();
    // The committed membership of "holds Health" now: only `old`.
    let members: Vec<InstanceRef> = {
        let set = f.w.store.set(f.health).unwrap();
        set.ids()
            .iter()
            .zip(set.slots())
            .map(|(id, slot)| InstanceRef::new(*id, *slot))
            .collect()
    };
    stage.set(&members, f.tag, vec![(f.n, Value::Integer(1))]);
    stage.commit(&mut f.w.arena, &mut f.w.store).unwrap();
    assert_eq!(*f.w.store.get::<i64>(old, f.tag, f.n).unwrap(), 1);
    for id in ids_of(&ticket) {
        assert!(
            !f.w.store.has(f.w.at(id), f.tag),
            "the spawn is not a member"
        );
    }
}

#[test]
fn a_batch_and_later_scalar_edits_apply_in_issue_order() {
    let mut f = fixture();
    let a = f.w.spawn(ClassId::ENTITY);
    let b = f.w.spawn(ClassId::ENTITY);
    let mut stage = Stage::new(&f.w.arena, &f.w.store);
    stage.set(&[a, b], f.health, vec![(f.current, Value::Number(50.0))]);
    stage.write(a, f.health, f.current, 75.0);
    stage.commit(&mut f.w.arena, &mut f.w.store).unwrap();
    assert_eq!(*f.w.store.get::<f64>(a, f.health, f.current).unwrap(), 75.0);
    assert_eq!(*f.w.store.get::<f64>(b, f.health, f.current).unwrap(), 50.0);

    stage.write(a, f.health, f.current, 10.0);
    stage.set(&[a, b], f.health, vec![(f.current, Value::Number(20.0))]);
    stage.remove_one(b, f.health);
    let published = stage.commit(&mut f.w.arena, &mut f.w.store).unwrap();
    assert_eq!(published.edits, 2);
    assert_eq!(published.replaced, 2);
    assert_eq!(*f.w.store.get::<f64>(a, f.health, f.current).unwrap(), 20.0);
    assert!(!f.w.store.has(b, f.health));
}

#[test]
fn cancelling_a_spawn_suppresses_its_initializer_and_events_and_retires_its_ids() {
    let mut f = fixture();
    let ran = Rc::new(RefCell::new(false));
    let flag = ran.clone();
    let mut stage = Stage::new(&f.w.arena, &f.w.store);
    let ticket = stage
        .spawn(
            &mut f.w.arena,
            3,
            ClassId::ENTITY,
            None,
            &[f.health],
            move |_| {
                *flag.borrow_mut() = true;
                Ok::<(), StoreError>(())
            },
        )
        .unwrap();
    stage.cancel(&mut f.w.arena, &ticket).unwrap();
    assert!(matches!(
        stage.cancel(&mut f.w.arena, &ticket),
        Err(StageError::UnknownTicket)
    ));
    let published = stage.commit(&mut f.w.arena, &mut f.w.store).unwrap();
    assert!(published.applied.is_empty());
    assert!(!*ran.borrow(), "the initializer never ran");
    assert_eq!(created_events(f.w.arena.pending_events()), 0);
    assert!(f.w.store.drain_events().is_empty());
    let next = f.w.arena.create(ClassId::ENTITY, None).unwrap();
    assert!(
        !ids_of(&ticket).contains(&next),
        "a cancelled reservation's ids are never issued again"
    );
}

#[test]
fn a_failed_commit_keeps_what_was_published_and_releases_the_rest() {
    let mut f = fixture();
    let mut stage = Stage::new(&f.w.arena, &f.w.store);
    let first = stage
        .spawn(
            &mut f.w.arena,
            2,
            ClassId::ENTITY,
            None,
            &[f.health],
            no_init,
        )
        .unwrap();
    let x = f.w.spawn(ClassId::ENTITY);
    let set = stage.set(&[x], f.tag, vec![]);
    let failing = stage
        .spawn(
            &mut f.w.arena,
            2,
            ClassId::ENTITY,
            None,
            &[f.health],
            |_| -> Result<(), StoreError> { panic!("broken initializer") },
        )
        .unwrap();
    let write = stage.write(x, f.tag, f.n, 9_i64);
    let later = stage
        .spawn(&mut f.w.arena, 2, ClassId::ENTITY, None, &[f.tag], no_init)
        .unwrap();

    let error = stage.commit(&mut f.w.arena, &mut f.w.store).unwrap_err();
    assert!(matches!(error.cause, CommitFailure::Panic(ref m) if m == "broken initializer"));
    assert_eq!(error.failed, Some(failing.op()));
    assert_eq!(error.published.applied, [first.op(), set]);
    assert_eq!(error.published.spawned, 2);
    assert_eq!(error.published.added, 1);
    assert_eq!(
        error.released,
        [failing.op(), later.op()],
        "the failing spawn's and the later one's"
    );
    assert_eq!(error.dropped, [write, later.op()]);
    assert!(!error.kept);
    assert!(stage.is_empty());

    for id in ids_of(&first) {
        assert!(f.w.store.has(f.w.at(id), f.health), "published rows stay");
    }
    assert_eq!(
        *f.w.store.get::<i64>(x, f.tag, f.n).unwrap(),
        7,
        "the write was dropped"
    );
    for id in ids_of(&failing).into_iter().chain(ids_of(&later)) {
        assert!(!f.w.arena.is_live(id));
    }
    assert_eq!(f.w.store.set(f.health).unwrap().len(), 2);
    assert_eq!(f.w.store.set(f.tag).unwrap().len(), 1);
    assert_eq!(
        created_events(f.w.arena.pending_events()),
        2,
        "x and the first batch"
    );
}

#[test]
fn a_refused_operation_fails_the_commit_and_changes_nothing_of_its_own() {
    let mut f = fixture();
    let a = f.w.spawn(ClassId::ENTITY);
    let mut stage = Stage::new(&f.w.arena, &f.w.store);
    stage.set(&[a], f.tag, vec![(f.n, Value::Number(1.0))]);
    let error = stage.commit(&mut f.w.arena, &mut f.w.store).unwrap_err();
    assert!(matches!(
        error.cause,
        CommitFailure::Store(StoreError::TypeMismatch { .. })
    ));
    assert!(!f.w.store.has(a, f.tag));
}

#[test]
fn an_enum_index_past_the_variants_from_an_initializer_fails_the_spawn() {
    let mut w = World::new();
    let mood = w.install(ComponentDef::new("Mood").field(FieldDef::enumeration(
        "m",
        &["calm", "angry"],
        "calm",
    )));
    let m = w.field(mood, "m");
    let mut stage = Stage::new(&w.arena, &w.store);
    stage
        .spawn(
            &mut w.arena,
            2,
            ClassId::ENTITY,
            None,
            &[mood],
            move |rows| {
                rows.column_mut::<u32>(mood, m)?[1] = 2;
                Ok::<(), StoreError>(())
            },
        )
        .unwrap();
    let error = stage.commit(&mut w.arena, &mut w.store).unwrap_err();
    assert!(matches!(error.cause, CommitFailure::Init(_)));
    assert!(w.store.set(mood).unwrap().is_empty());
}

#[test]
fn references_go_through_the_checked_setter_and_keep_the_reverse_index() {
    let mut w = World::new();
    let target =
        w.install(ComponentDef::new("Target").field(FieldDef::reference("who", RefPolicy::Clear)));
    let who = w.field(target, "who");
    let enemy = w.spawn(ClassId::ENTITY);
    let mut stage = Stage::new(&w.arena, &w.store);
    let enemy_id = enemy.id;
    stage
        .spawn(
            &mut w.arena,
            2,
            ClassId::ENTITY,
            None,
            &[target],
            move |rows| {
                assert!(matches!(
                    rows.column_mut::<Option<InstanceId>>(target, who),
                    Err(StoreError::CheckedFieldOnly { .. })
                ));
                assert!(matches!(
                    rows.set_reference(target, 2, who, Some(enemy_id)),
                    Err(StoreError::SpawnIndexOutOfRange { .. })
                ));
                rows.set_reference(target, 0, who, Some(enemy_id))?;
                rows.set_reference(target, 1, who, Some(enemy_id))
            },
        )
        .unwrap();
    stage.commit(&mut w.arena, &mut w.store).unwrap();
    assert_eq!(
        w.store.set(target).unwrap().references_to(enemy.id).len(),
        2
    );
    w.destroy(enemy.id);
    assert_eq!(w.store.set(target).unwrap().referenced_targets(), 0);
}

#[test]
fn a_stage_refuses_another_arena_or_store_and_changes_nothing() {
    let mut f = fixture();
    let mut other = World::new();
    let mut stage = Stage::new(&f.w.arena, &f.w.store);
    assert!(matches!(
        stage.spawn(&mut other.arena, 1, ClassId::ENTITY, None, &[], no_init),
        Err(StageError::ForeignArena)
    ));
    stage
        .spawn(
            &mut f.w.arena,
            1,
            ClassId::ENTITY,
            None,
            &[f.health],
            no_init,
        )
        .unwrap();
    let error = stage.commit(&mut other.arena, &mut f.w.store).unwrap_err();
    assert!(matches!(error.cause, CommitFailure::ForeignArena));
    let mut snapshot = f.w.store.snapshot();
    let error = stage.commit(&mut f.w.arena, &mut snapshot).unwrap_err();
    assert!(matches!(error.cause, CommitFailure::ForeignStore));
    assert_eq!(stage.len(), 1, "the stage keeps its operations");
    assert_eq!(
        stage
            .commit(&mut f.w.arena, &mut f.w.store)
            .unwrap()
            .spawned,
        1
    );
}

#[test]
fn spawning_at_given_ids_refuses_ids_already_alive() {
    let mut f = fixture();
    let alive = f.w.spawn(ClassId::ENTITY);
    let mut stage = Stage::new(&f.w.arena, &f.w.store);
    let reserved = f.w.arena.reserved_count();
    assert!(matches!(
        stage.spawn_at(
            &mut f.w.arena,
            &[alive.id],
            ClassId::ENTITY,
            None,
            &[],
            no_init
        ),
        Err(StageError::Arena(_))
    ));
    assert!(matches!(
        stage.spawn_at_raw(
            &mut f.w.arena,
            &[alive.id.get()],
            ClassId::ENTITY,
            None,
            &[],
            no_init
        ),
        Err(StageError::Arena(_))
    ));
    assert_eq!(f.w.arena.reserved_count(), reserved, "nothing reserved");
    assert!(stage.is_empty());
}

#[test]
fn restoring_at_given_ids_publishes_them_with_their_values() {
    let mut source = fixture();
    let mut stage = Stage::new(&source.w.arena, &source.w.store);
    let ticket = stage
        .spawn(&mut source.w.arena, 3, ClassId::ENTITY, None, &[], no_init)
        .unwrap();
    stage
        .commit(&mut source.w.arena, &mut source.w.store)
        .unwrap();
    let ids = ids_of(&ticket);

    let mut f = fixture();
    let (health, current) = (f.health, f.current);
    let scattered = vec![ids[2], ids[0]];
    let mut stage = Stage::new(&f.w.arena, &f.w.store);
    let restored = stage
        .spawn_at(
            &mut f.w.arena,
            &scattered,
            ClassId::ENTITY,
            None,
            &[health],
            move |rows| {
                rows.column_mut::<f64>(health, current)?
                    .copy_from_slice(&[1.0, 2.0]);
                Ok::<(), StoreError>(())
            },
        )
        .unwrap();
    assert_eq!(
        restored.ids(),
        Some(scattered.as_slice()),
        "an explicit list"
    );
    stage.commit(&mut f.w.arena, &mut f.w.store).unwrap();
    let at = f.w.at(ids[2]);
    assert_eq!(*f.w.store.get::<f64>(at, health, current).unwrap(), 1.0);
    let at = f.w.at(ids[0]);
    assert_eq!(*f.w.store.get::<f64>(at, health, current).unwrap(), 2.0);
}

#[test]
fn bulk_remove_and_despawn_skip_and_count_members_gone_by_then() {
    let mut f = fixture();
    let mut stage = Stage::new(&f.w.arena, &f.w.store);
    let ticket = stage
        .spawn(
            &mut f.w.arena,
            6,
            ClassId::ENTITY,
            None,
            &[f.health, f.tag],
            no_init,
        )
        .unwrap();
    stage.commit(&mut f.w.arena, &mut f.w.store).unwrap();
    let members: Vec<InstanceRef> = ids_of(&ticket).iter().map(|id| f.w.at(*id)).collect();
    f.w.destroy(members[0].id);
    f.w.store.drain_events();
    f.w.arena.drain().unwrap();

    stage.remove(&members[..3], f.health);
    stage.remove(&members[..3], f.health);
    let published = stage.commit(&mut f.w.arena, &mut f.w.store).unwrap();
    assert_eq!(published.removed, 2);
    assert_eq!(
        published.skipped,
        1 + 3,
        "one gone, then three no longer holding it"
    );
    let set = f.w.store.set(f.health).unwrap();
    assert_eq!(set.len(), 3);
    for at in &members[3..] {
        let row = set.row_of(*at).unwrap();
        assert_eq!(set.ids()[row], at.id, "moved rows stay found");
    }

    stage.despawn(&members);
    let published = stage.commit(&mut f.w.arena, &mut f.w.store).unwrap();
    assert_eq!(published.despawned, 5);
    assert_eq!(published.skipped, 1);
    assert!(f.w.store.set(f.health).unwrap().is_empty());
    assert!(f.w.store.set(f.tag).unwrap().is_empty());
    let destroyed =
        f.w.arena
            .pending_events()
            .iter()
            .filter(|e| matches!(e, Event::Destroyed { .. } | Event::DestroyedMany(_)))
            .count();
    assert_eq!(destroyed, 1, "one arena event for the batch");
}

#[test]
fn discarding_releases_every_reservation() {
    let mut f = fixture();
    let mut stage = Stage::new(&f.w.arena, &f.w.store);
    let ticket = stage
        .spawn(
            &mut f.w.arena,
            2,
            ClassId::ENTITY,
            None,
            &[f.health],
            no_init,
        )
        .unwrap();
    let a = f.w.spawn(ClassId::ENTITY);
    stage.write(a, f.health, f.current, 1.0);
    assert_eq!(f.w.arena.reserved_count(), 1);
    stage.discard(&mut f.w.arena).unwrap();
    assert_eq!(f.w.arena.reserved_count(), 0);
    assert!(stage.is_empty());
    assert!(
        stage
            .commit(&mut f.w.arena, &mut f.w.store)
            .unwrap()
            .applied
            .is_empty()
    );
    for id in ids_of(&ticket) {
        assert!(!f.w.arena.is_live(id));
    }
}

#[test]
fn observers_hear_a_batch_once_per_component_after_the_initializer() {
    use std::sync::{Arc, Mutex};
    use strata_component_store::Observer;
    let mut f = fixture();
    let calls = Arc::new(Mutex::new(Vec::new()));
    let (added, removed, moved) = (calls.clone(), calls.clone(), calls.clone());
    let current = f.current;
    f.w.store
        .observe(
            f.health,
            Observer::new()
                .on_added(move |set, rows| {
                    let values = set.values::<f64>(current).unwrap()[rows.clone()].to_vec();
                    added
                        .lock()
                        .unwrap()
                        .push(format!("added {rows:?} {values:?}"));
                })
                .on_removed(move |set, rows| {
                    let ids = set.ids()[rows.clone()].len();
                    removed
                        .lock()
                        .unwrap()
                        .push(format!("removed {rows:?} ({ids} readable)"));
                })
                .on_moved(move |_, _, old, new| {
                    moved.lock().unwrap().push(format!("moved {old}->{new}"));
                }),
        )
        .unwrap();
    let (health, current) = (f.health, f.current);
    let mut stage = Stage::new(&f.w.arena, &f.w.store);
    let ticket = stage
        .spawn(
            &mut f.w.arena,
            3,
            ClassId::ENTITY,
            None,
            &[health],
            move |rows| {
                rows.column_mut::<f64>(health, current)?.fill(5.0);
                Ok::<(), StoreError>(())
            },
        )
        .unwrap();
    assert!(
        calls.lock().unwrap().is_empty(),
        "nothing observable before the commit"
    );
    stage.commit(&mut f.w.arena, &mut f.w.store).unwrap();
    let members: Vec<InstanceRef> = ids_of(&ticket).iter().map(|id| f.w.at(*id)).collect();
    stage.remove(&members[..1], health);
    stage.commit(&mut f.w.arena, &mut f.w.store).unwrap();
    assert_eq!(
        *calls.lock().unwrap(),
        vec![
            "added 0..=2 [5.0, 5.0, 5.0]".to_owned(),
            "moved 2->0".to_owned(),
            "removed 2..=2 (1 readable)".to_owned(),
        ]
    );
}

#[test]
fn a_spawn_refused_for_its_class_or_parent_reserves_no_ids() {
    let mut f = fixture();
    let gone = f.w.arena.create(ClassId::FOLDER, None).unwrap();
    f.w.destroy(gone);
    let part = f.w.arena.create(ClassId::PART, None).unwrap();
    let mut stage = Stage::new(&f.w.arena, &f.w.store);
    // A destroyed parent, and a parent that may not hold the class.
    for (class, parent) in [
        (ClassId::PART, Some(gone)),
        (ClassId::WORKSPACE, Some(part)),
    ] {
        assert!(
            stage
                .spawn(&mut f.w.arena, 3, class, parent, &[f.health], no_init)
                .is_err(),
            "{class:?} under {parent:?}"
        );
    }
    assert!(stage.is_empty());
    // The next id is the one after `part`: the refusals took none.
    let next = f.w.arena.create(ClassId::PART, None).unwrap();
    assert_eq!(next.get(), part.get() + 1);
}

#[test]
fn a_spawn_at_given_ids_refused_for_its_parent_leaves_the_ids_free_to_spawn_at_again() {
    let mut f = fixture();
    let gone = f.w.arena.create(ClassId::FOLDER, None).unwrap();
    f.w.destroy(gone);
    // Ids past the arena's next one, as a save being restored names them.
    let next = f.w.arena.create(ClassId::PART, None).unwrap().get();
    let ids: Vec<InstanceId> = (next + 10..next + 13)
        .map(|raw| InstanceId::new(raw).unwrap())
        .collect();
    let mut stage = Stage::new(&f.w.arena, &f.w.store);
    assert!(
        stage
            .spawn_at(
                &mut f.w.arena,
                &ids,
                ClassId::PART,
                Some(gone),
                &[f.health],
                no_init
            )
            .is_err()
    );
    assert!(stage.is_empty());
    let ticket = stage
        .spawn_at(
            &mut f.w.arena,
            &ids,
            ClassId::PART,
            None,
            &[f.health],
            no_init,
        )
        .unwrap();
    stage.commit(&mut f.w.arena, &mut f.w.store).unwrap();
    assert!(f.w.arena.is_live(ticket.first()));
    assert_eq!(ticket.first(), ids[0]);
}
