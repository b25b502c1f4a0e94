//! The bulk paths of a stage as consumers see them: observer calls for a spawn into an empty
//! set, a whole-set despawn and a multi-row removal (values readable), frame dirt, residue and
//! value counts after staged work; tickets naming instances (slots, recycled ones, raw ids);
//! edits staged on a spawn's instances; refusals that apply nothing; dependents removed only
//! from members that lost what they require; a dropped stage leaking nothing.

use std::sync::{Arc, Mutex};

use crate::common::World;
use strata_arena::{ClassId, InstanceId};
use strata_component_store::{
    ComponentDef, ComponentId, FieldDef, FieldId, FrameDirty, InstanceRef, Observer, SpawnRows,
    Stage, StoreError, Value,
};

struct Fixture {
    w: World,
    health: ComponentId,
    current: FieldId,
    shield: ComponentId,
}

/// `Health { current }` and `Shield { n }`, which requires `Health`.
fn fixture() -> Fixture {
    let mut w = World::new();
    let health = w.install(
        ComponentDef::new("Health")
            .field(FieldDef::number("current", 100.0))
            .observed(true),
    );
    let current = w.field(health, "current");
    let shield = w.install(
        ComponentDef::new("Shield")
            .field(FieldDef::integer("n", 1))
            .requires(&["Health"]),
    );
    w.arena.drain().unwrap();
    Fixture {
        w,
        health,
        current,
        shield,
    }
}

fn no_init(_: &mut SpawnRows<'_>) -> Result<(), StoreError> {
    Ok(())
}

/// Logs every observer call on `component` as text, reading removed values inside the call.
fn log_calls(f: &mut Fixture, component: ComponentId) -> Arc<Mutex<Vec<String>>> {
    let log = Arc::new(Mutex::new(Vec::new()));
    let (added, removed, moved, on, off) = (
        log.clone(),
        log.clone(),
        log.clone(),
        log.clone(),
        log.clone(),
    );
    let current = f.current;
    let health = f.health;
    f.w.store
        .observe(
            component,
            Observer::new()
                .on_added(move |_, rows| added.lock().unwrap().push(format!("added {rows:?}")))
                .on_removed(move |set, rows| {
                    let values: Vec<f64> = if component == health {
                        set.values::<f64>(current).unwrap()[rows.clone()].to_vec()
                    } else {
                        Vec::new()
                    };
                    removed
                        .lock()
                        .unwrap()
                        .push(format!("removed {rows:?} {values:?}"));
                })
                .on_moved(move |_, _, old, new| {
                    moved.lock().unwrap().push(format!("moved {old}->{new}"));
                })
                .on_activated(move |_| on.lock().unwrap().push("activated".into()))
                .on_deactivated(move |_| off.lock().unwrap().push("deactivated".into())),
        )
        .unwrap();
    log
}

fn take(log: &Arc<Mutex<Vec<String>>>) -> Vec<String> {
    std::mem::take(&mut *log.lock().unwrap())
}

fn spawn_health(f: &mut Fixture, n: usize) -> Vec<InstanceRef> {
    let (health, current) = (f.health, f.current);
    let mut stage = Stage::new(&f.w.arena, &f.w.store);
    let ticket = stage
        .spawn(
            &mut f.w.arena,
            n,
            ClassId::ENTITY,
            None,
            &[health],
            move |rows| {
                for (k, value) in rows
                    .column_mut::<f64>(health, current)?
                    .iter_mut()
                    .enumerate()
                {
                    *value = k as f64;
                }
                Ok::<(), StoreError>(())
            },
        )
        .unwrap();
    stage.commit(&mut f.w.arena, &mut f.w.store).unwrap();
    ticket.instances().collect()
}

#[test]
fn a_spawn_into_an_empty_set_activates_it_then_reports_one_range() {
    let mut f = fixture();
    let health = f.health;
    let log = log_calls(&mut f, health);
    spawn_health(&mut f, 4);
    assert_eq!(take(&log), ["activated", "added 0..=3"]);
}

#[test]
fn a_whole_set_despawn_reports_one_range_no_move_and_the_deactivation() {
    let mut f = fixture();
    let members = spawn_health(&mut f, 5);
    let health = f.health;
    let log = log_calls(&mut f, health);
    let mut stage = Stage::new(&f.w.arena, &f.w.store);
    stage.despawn(&members);
    let published = stage.commit(&mut f.w.arena, &mut f.w.store).unwrap();
    assert_eq!(published.despawned, 5);
    assert_eq!(
        take(&log),
        ["removed 0..=4 [0.0, 1.0, 2.0, 3.0, 4.0]", "deactivated"],
        "the set is truncated once: no row moves"
    );
    assert_eq!(
        f.w.store.frame_dirty(f.health).unwrap(),
        FrameDirty::Rows {
            rows: vec![],
            removed: true
        }
    );
}

#[test]
fn a_bulk_removal_reports_moves_then_the_removed_rows_with_their_values() {
    let mut f = fixture();
    let members = spawn_health(&mut f, 6);
    let health = f.health;
    let log = log_calls(&mut f, health);
    f.w.store.end_frame();
    let before = f.w.store.structural_count();
    let mut stage = Stage::new(&f.w.arena, &f.w.store);
    // Rows 0 and 2 go: the last two rows (4 and 5) move into their places.
    stage.remove(&[members[0], members[2]], f.health);
    let published = stage.commit(&mut f.w.arena, &mut f.w.store).unwrap();
    assert_eq!(published.removed, 2);
    let calls = take(&log);
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert!(
        calls[..2].iter().all(|c| c.starts_with("moved ")),
        "{calls:?}"
    );
    let removed = &calls[2];
    assert!(removed.starts_with("removed 4..=5 "), "{removed}");
    let mut values: Vec<&str> = removed["removed 4..=5 ".len()..]
        .trim_matches(['[', ']'])
        .split(", ")
        .collect();
    values.sort_unstable();
    assert_eq!(values, ["0.0", "2.0"], "the removed rows' own values");
    // Two moves and one removed range: three structural counts, the movers dirty.
    assert_eq!(f.w.store.structural_count(), before + 3);
    let residue = f.w.store.structural_since(before).unwrap();
    assert_eq!(residue.added().count(), 0);
    let mut touched: Vec<InstanceId> = residue.touched().collect();
    touched.sort_unstable();
    let mut expected = vec![members[0].id, members[2].id, members[4].id, members[5].id];
    expected.sort_unstable();
    assert_eq!(touched, expected);
    let FrameDirty::Rows { rows, removed } = f.w.store.frame_dirty(f.health).unwrap() else {
        panic!("rows moved and were removed");
    };
    assert!(removed);
    let set = f.w.store.set(f.health).unwrap();
    let mut dirty: Vec<InstanceId> = rows.iter().map(|r| set.ids()[*r]).collect();
    dirty.sort_unstable();
    assert_eq!(
        dirty,
        [members[4].id, members[5].id],
        "moved rows are dirty"
    );
}

#[test]
fn staged_work_is_dirty_counted_and_in_the_residue() {
    let mut f = fixture();
    let members = spawn_health(&mut f, 4);
    f.w.store
        .track_value_count(f.health, f.current, true)
        .unwrap();
    f.w.store.end_frame();
    let (start, counted) = (f.w.store.structural_count(), f.w.store.value_count());
    assert_eq!(f.w.store.frame_dirty(f.health).unwrap(), FrameDirty::Clean);
    let mut stage = Stage::new(&f.w.arena, &f.w.store);
    // Rows 0..3 hold 0.0, 1.0, 2.0, 3.0: setting 2.0 changes three of them.
    stage.set(&members, f.health, vec![(f.current, Value::Number(2.0))]);
    stage.write(members[0], f.health, f.current, 9.0);
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
    stage.commit(&mut f.w.arena, &mut f.w.store).unwrap();
    assert_eq!(
        f.w.store.value_count(),
        counted + 4,
        "three set, one written"
    );
    let FrameDirty::Rows { rows, removed } = f.w.store.frame_dirty(f.health).unwrap() else {
        panic!("rows changed and were added");
    };
    assert!(!removed);
    let set = f.w.store.set(f.health).unwrap();
    let dirty: Vec<InstanceId> = rows.iter().map(|r| set.ids()[*r]).collect();
    let spawned: Vec<InstanceId> = ticket.instances().map(|at| at.id).collect();
    assert_eq!(
        dirty,
        [
            members[0].id,
            members[1].id,
            members[3].id,
            spawned[0],
            spawned[1]
        ],
        "the unchanged row (2.0 over 2.0) is not dirty"
    );
    let residue = f.w.store.structural_since(start).unwrap();
    assert_eq!(residue.added().collect::<Vec<_>>(), spawned);
    assert_eq!(f.w.store.structural_count(), start + 1, "one added range");
}

#[test]
fn edits_staged_on_a_spawns_instances_apply_after_it_in_issue_order() {
    let mut f = fixture();
    let (health, current, shield) = (f.health, f.current, f.shield);
    let mut stage = Stage::new(&f.w.arena, &f.w.store);
    let ticket = stage
        .spawn(
            &mut f.w.arena,
            3,
            ClassId::ENTITY,
            None,
            &[health],
            move |rows| {
                rows.column_mut::<f64>(health, current)?.fill(1.0);
                Ok::<(), StoreError>(())
            },
        )
        .unwrap();
    let first = ticket.instance(0).unwrap();
    let last = ticket.instance(2).unwrap();
    assert_eq!(ticket.slots(), None, "fresh slots in one run");
    assert_eq!(
        ticket.slot(1).unwrap().index(),
        ticket.slot(0).unwrap().index() + 1
    );
    stage.write(first, health, current, 5.0);
    stage.add(last, ClassId::ENTITY, shield, vec![]);
    stage.remove_one(ticket.instance(1).unwrap(), health);
    stage.commit(&mut f.w.arena, &mut f.w.store).unwrap();
    assert_eq!(*f.w.store.get::<f64>(first, health, current).unwrap(), 5.0);
    assert!(f.w.store.has(last, shield));
    assert!(!f.w.store.has(ticket.instance(1).unwrap(), health));
    assert_eq!(f.w.store.set(health).unwrap().len(), 2);
}

#[test]
fn a_spawn_into_recycled_slots_lists_them_and_keeps_its_ids_in_one_run() {
    let mut f = fixture();
    let old = spawn_health(&mut f, 3);
    for at in &old {
        f.w.destroy(at.id);
    }
    f.w.settle();
    let mut stage = Stage::new(&f.w.arena, &f.w.store);
    let ticket = stage
        .spawn(
            &mut f.w.arena,
            4,
            ClassId::ENTITY,
            None,
            &[f.health],
            no_init,
        )
        .unwrap();
    assert_eq!(
        ticket.ids(),
        None,
        "ids are never reused, so they stay one run"
    );
    let slots = ticket
        .slots()
        .expect("recycled slots come as a list")
        .to_vec();
    assert_eq!(slots.len(), 4);
    let recycled: Vec<_> = old.iter().map(|at| at.slot).collect();
    assert!(recycled.iter().all(|slot| slots.contains(slot)));
    stage.commit(&mut f.w.arena, &mut f.w.store).unwrap();
    for (k, at) in ticket.instances().enumerate() {
        assert_eq!(f.w.arena.slot_of(at.id), Some(slots[k]));
        assert_eq!(
            *f.w.store.get::<f64>(at, f.health, f.current).unwrap(),
            100.0
        );
        assert!(old.iter().all(|gone| gone.id != at.id));
    }
}

#[test]
fn a_spawn_at_raw_ids_publishes_them_with_their_values() {
    let mut f = fixture();
    let (health, current) = (f.health, f.current);
    let raw = [(1u64 << 52) + 40, (1u64 << 52) + 41, (1u64 << 52) + 42];
    let mut stage = Stage::new(&f.w.arena, &f.w.store);
    let ticket = stage
        .spawn_at_raw(
            &mut f.w.arena,
            &raw,
            ClassId::ENTITY,
            None,
            &[health],
            move |rows| {
                for (k, value) in rows
                    .column_mut::<f64>(health, current)?
                    .iter_mut()
                    .enumerate()
                {
                    *value = 10.0 * k as f64;
                }
                Ok::<(), StoreError>(())
            },
        )
        .unwrap();
    assert_eq!(ticket.ids(), None, "consecutive raw ids are a run");
    assert_eq!(ticket.first().get(), raw[0]);
    stage.commit(&mut f.w.arena, &mut f.w.store).unwrap();
    for (k, raw) in raw.iter().enumerate() {
        let id = InstanceId::new(*raw).unwrap();
        let at = f.w.at(id);
        assert_eq!(
            *f.w.store.get::<f64>(at, health, current).unwrap(),
            10.0 * k as f64
        );
    }
}

#[test]
fn a_refusal_of_the_store_applies_nothing_and_the_stage_keeps_its_operations() {
    let mut f = fixture();
    let members = spawn_health(&mut f, 2);
    let (tick, count) = (f.w.store.tick(), f.w.store.structural_count());
    let mut stage = Stage::new(&f.w.arena, &f.w.store);
    let spawn = stage
        .spawn(
            &mut f.w.arena,
            2,
            ClassId::ENTITY,
            None,
            &[f.health],
            no_init,
        )
        .unwrap();
    let good = stage.write(members[0], f.health, f.current, 3.0);
    let bad = stage.write_value(members[1], f.health, f.current, Value::Text("x".into()));
    let error = stage.commit(&mut f.w.arena, &mut f.w.store).unwrap_err();
    assert!(error.kept);
    assert_eq!(error.failed, Some(bad));
    assert!(matches!(
        error.cause,
        strata_component_store::CommitFailure::Store(StoreError::TypeMismatch { .. })
    ));
    assert!(error.published.applied.is_empty());
    assert_eq!(stage.ops().collect::<Vec<_>>(), [spawn.op(), good, bad]);
    assert_eq!(
        (f.w.store.tick(), f.w.store.structural_count()),
        (tick, count)
    );
    assert!(!f.w.arena.is_live(spawn.first()));
    assert_eq!(
        *f.w.store
            .get::<f64>(members[0], f.health, f.current)
            .unwrap(),
        0.0
    );
    // Cancelling the refused operation lets the rest commit.
    stage.cancel_op(&mut f.w.arena, bad).unwrap();
    let published = stage.commit(&mut f.w.arena, &mut f.w.store).unwrap();
    assert_eq!(published.applied, [spawn.op(), good]);
    assert_eq!(
        *f.w.store
            .get::<f64>(members[0], f.health, f.current)
            .unwrap(),
        3.0
    );
    // An add whose class the definition refuses is refused the same way.
    let picky = f.w.install(ComponentDef::new("Picky").classes(&["Part"]));
    let add = stage.add(members[0], ClassId::ENTITY, picky, vec![]);
    let error = stage.commit(&mut f.w.arena, &mut f.w.store).unwrap_err();
    assert_eq!((error.failed, error.kept), (Some(add), true));
}

#[test]
fn an_add_to_an_instance_destroyed_earlier_in_the_commit_is_refused() {
    let mut f = fixture();
    let members = spawn_health(&mut f, 1);
    let mut stage = Stage::new(&f.w.arena, &f.w.store);
    stage.destroy(members[0].id);
    let add = stage.add(members[0], ClassId::ENTITY, f.shield, vec![]);
    let error = stage.commit(&mut f.w.arena, &mut f.w.store).unwrap_err();
    assert_eq!((error.failed, error.kept), (Some(add), false));
    assert!(
        f.w.store.set(f.shield).unwrap().is_empty(),
        "no row for a dead instance"
    );
}

/// Removing a component removes the components requiring it from the instances that lost it,
/// in a batch as for one instance: a member holding the dependent but not the component keeps
/// the dependent.
#[test]
fn a_bulk_removal_removes_dependents_only_from_members_that_lost_the_component() {
    let mut f = fixture();
    let with = spawn_health(&mut f, 1)[0];
    let without = f.w.spawn(ClassId::ENTITY);
    f.w.store.add(with, ClassId::ENTITY, f.shield, []).unwrap();
    f.w.store
        .add(without, ClassId::ENTITY, f.shield, [])
        .unwrap();
    let mut stage = Stage::new(&f.w.arena, &f.w.store);
    stage.remove(&[with, without], f.health);
    stage.commit(&mut f.w.arena, &mut f.w.store).unwrap();
    assert!(
        !f.w.store.has(with, f.shield),
        "it lost Health, so Shield goes"
    );
    assert!(
        f.w.store.has(without, f.shield),
        "it held no Health to lose"
    );
    // The same as removing from each one alone.
    let lone = f.w.spawn(ClassId::ENTITY);
    f.w.store.add(lone, ClassId::ENTITY, f.shield, []).unwrap();
    assert!(!f.w.store.remove(lone, f.health).unwrap());
    assert!(f.w.store.has(lone, f.shield));
}

#[test]
fn a_dropped_stage_leaks_no_reservation() {
    let mut f = fixture();
    let mut stage = Stage::new(&f.w.arena, &f.w.store);
    let ticket = stage
        .spawn(
            &mut f.w.arena,
            3,
            ClassId::ENTITY,
            None,
            &[f.health],
            no_init,
        )
        .unwrap();
    assert_eq!(f.w.arena.reserved_count(), 1);
    drop(stage);
    assert_eq!(f.w.arena.reserved_count(), 0);
    f.w.arena.drain().unwrap();
    let next = f.w.arena.create(ClassId::ENTITY, None).unwrap();
    let reserved: Vec<_> = ticket.instances().map(|at| at.slot).collect();
    assert!(
        reserved.contains(&f.w.arena.slot_of(next).unwrap()),
        "the reserved slots are back in the pool"
    );
    assert!(ticket.instances().all(|at| at.id != next));
}
