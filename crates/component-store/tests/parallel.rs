//! Parallel column writers: pieces of rows written by separate tasks, their tracking recorded
//! in the order the pieces were given, refusals that change nothing.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly on purpose")]

mod common;

use common::World;
use strata_arena::{ClassId, InstanceId};
use strata_component_store::{
    ChunkRunner, ComponentDef, ComponentId, FieldDef, FieldId, InOrder, InstanceRef, Piece,
    RefPolicy, Store, StoreError, StoreEvent, Tick,
};

/// A runner that gives every input a thread of its own and starts them in reverse, so the
/// outputs come back in input order only because the runner orders them.
struct Threads;

impl ChunkRunner for Threads {
    fn run<I, O, F>(&self, inputs: Vec<I>, f: &F) -> Vec<O>
    where
        I: Send,
        O: Send,
        F: Fn(I) -> O + Sync,
    {
        std::thread::scope(|scope| {
            let handles: Vec<_> = inputs
                .into_iter()
                .rev()
                .map(|input| scope.spawn(move || f(input)))
                .collect();
            let mut outputs: Vec<O> = handles.into_iter().map(|h| h.join().unwrap()).collect();
            outputs.reverse();
            outputs
        })
    }
}

/// A world with `n` instances holding an observed number component.
fn counted(n: usize) -> (World, ComponentId, FieldId, Vec<InstanceRef>) {
    let mut w = World::new();
    let c = w.install(
        ComponentDef::new("Count")
            .field(FieldDef::number("n", 0.0))
            .field(FieldDef::enumeration("mode", &["a", "b"], "a"))
            .observed(true),
    );
    let n_field = w.field(c, "n");
    let ats: Vec<InstanceRef> = (0..n)
        .map(|_| {
            let at = w.spawn(ClassId::ENTITY);
            w.store.insert(at, ClassId::ENTITY, c).unwrap();
            at
        })
        .collect();
    w.store.drain_events();
    w.store.take_dirty(c).unwrap();
    (w, c, n_field, ats)
}

fn ids(ats: &[InstanceRef], rows: impl Iterator<Item = usize>) -> Vec<InstanceId> {
    rows.map(|row| ats[row].id).collect()
}

#[test]
fn pieces_record_their_changes_in_the_order_given_whatever_the_runner() {
    let listed = [11u32, 13, 17];
    let pieces = [
        Piece::Rows(5..10),
        Piece::Listed(&listed),
        Piece::Rows(0..5),
        Piece::Rows(10..10),
    ];
    let order: Vec<usize> = (5..10).chain([11, 13, 17]).chain(0..5).collect();
    let mut prints = Vec::new();
    for threads in [false, true] {
        let (mut w, c, n, ats) = counted(20);
        let tick = w.store.tick();
        let mut writer = w.store.par_writer::<f64>(c, n).unwrap();
        let f = |piece: usize| move |value: &f64, i: usize| value + (piece * 100 + i) as f64 + 1.0;
        let changed = if threads {
            writer.update(&Threads, &pieces, f).unwrap()
        } else {
            writer.update(&InOrder, &pieces, f).unwrap()
        };
        assert_eq!(changed, order.len());
        assert_eq!(w.store.tick(), Tick(tick.0 + 1), "one tick for the pass");
        let set = w.store.set(c).unwrap();
        let values = set.values::<f64>(n).unwrap().to_vec();
        assert_eq!(values[5], 1.0);
        assert_eq!(values[13], 102.0);
        assert_eq!(values[0], 201.0);
        assert_eq!(values[10], 0.0, "row 10 is in no piece");
        let changed_ticks: Vec<bool> = set.changed_ticks().iter().map(|t| *t > tick).collect();
        let expected: Vec<bool> = (0..20).map(|row| order.contains(&row)).collect();
        assert_eq!(changed_ticks, expected);
        let events: Vec<InstanceId> = w
            .store
            .drain_events()
            .into_iter()
            .map(|e| match e {
                StoreEvent::Changed { id, .. } => id,
                other => panic!("unexpected event {other:?}"),
            })
            .collect();
        assert_eq!(events, ids(&ats, order.iter().copied()));
        let dirty: Vec<InstanceId> = w
            .store
            .take_dirty(c)
            .unwrap()
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        assert_eq!(dirty, ids(&ats, order.iter().copied()));
        prints.push((values, w.store.set(c).unwrap().changed_ticks().to_vec()));
    }
    assert_eq!(prints[0], prints[1]);
}

#[test]
fn rows_named_twice_out_of_order_or_past_the_set_are_refused_and_change_nothing() {
    let (mut w, c, n, _) = counted(10);
    let tick = w.store.tick();
    let backwards = [4u32, 2];
    let repeated = [3u32, 3];
    let apart = [1u32, 6];
    let between = [3u32];
    let far = [10u32];
    let cases: Vec<(Vec<Piece<'_>>, StoreError)> = vec![
        (
            vec![Piece::Listed(&backwards)],
            StoreError::OverlappingRows {
                component: "Count".into(),
                row: 2,
            },
        ),
        (
            vec![Piece::Listed(&repeated)],
            StoreError::OverlappingRows {
                component: "Count".into(),
                row: 3,
            },
        ),
        (
            vec![Piece::Rows(0..5), Piece::Rows(4..6)],
            StoreError::OverlappingRows {
                component: "Count".into(),
                row: 4,
            },
        ),
        (
            vec![Piece::Listed(&apart), Piece::Listed(&between)],
            StoreError::OverlappingRows {
                component: "Count".into(),
                row: 3,
            },
        ),
        (
            vec![Piece::Rows(5..11)],
            StoreError::RowOutOfRange {
                component: "Count".into(),
                row: 10,
            },
        ),
        (
            vec![Piece::Rows(0..2), Piece::Listed(&far)],
            StoreError::RowOutOfRange {
                component: "Count".into(),
                row: 10,
            },
        ),
    ];
    for (pieces, error) in cases {
        let mut writer = w.store.par_writer::<f64>(c, n).unwrap();
        assert_eq!(
            writer.update(&Threads, &pieces, |_| |v: &f64, _: usize| v + 1.0),
            Err(error)
        );
        let set = w.store.set(c).unwrap();
        assert!(set.values::<f64>(n).unwrap().iter().all(|v| *v == 0.0));
        assert!(set.changed_ticks().iter().all(|t| *t <= tick));
        assert_eq!(w.store.tick(), tick);
        assert!(w.store.drain_events().is_empty());
        assert!(w.store.take_dirty(c).unwrap().is_empty());
    }
}

#[test]
fn a_value_the_field_refuses_in_any_piece_changes_nothing() {
    let (mut w, c, _, _) = counted(30);
    let mode = w.field(c, "mode");
    let tick = w.store.tick();
    for bad in [0usize, 14, 29] {
        let mut writer = w.store.par_writer::<u32>(c, mode).unwrap();
        let pieces = [Piece::Rows(0..10), Piece::Rows(10..20), Piece::Rows(20..30)];
        let result = writer.update(&Threads, &pieces, |piece| {
            move |_: &u32, i: usize| if piece * 10 + i == bad { 2 } else { 1 }
        });
        assert!(
            matches!(result, Err(StoreError::TypeMismatch { .. })),
            "{result:?}"
        );
        let set = w.store.set(c).unwrap();
        assert!(set.values::<u32>(mode).unwrap().iter().all(|m| *m == 0));
        assert_eq!(w.store.tick(), tick);
        assert!(w.store.drain_events().is_empty());
    }
    // The same pass without the bad value goes through.
    let mut writer = w.store.par_writer::<u32>(c, mode).unwrap();
    let changed = writer
        .update(&Threads, &[Piece::Rows(0..15), Piece::Rows(15..30)], |_| {
            |_: &u32, _: usize| 1
        })
        .unwrap();
    assert_eq!(changed, 30);
}

#[test]
fn a_pass_that_changes_nothing_takes_no_tick() {
    let (mut w, c, n, _) = counted(10);
    let tick = w.store.tick();
    let mut writer = w.store.par_writer::<f64>(c, n).unwrap();
    assert_eq!(
        writer.update(&InOrder, &[], |_| |v: &f64, _: usize| v + 1.0),
        Ok(0)
    );
    assert_eq!(
        writer.update(&InOrder, &[Piece::Rows(0..10)], |_| |v: &f64, _: usize| *v),
        Ok(0)
    );
    // Bit identity: -0.0 over 0.0 is a change.
    assert_eq!(
        writer.update(&InOrder, &[Piece::Rows(0..1)], |_| |_: &f64, _: usize| -0.0),
        Ok(1)
    );
    assert_eq!(w.store.tick(), Tick(tick.0 + 1));
}

#[test]
fn a_parallel_writer_of_a_reference_field_keeps_the_reverse_index() {
    let mut w = World::new();
    let c = w.install(ComponentDef::new("Link").field(FieldDef::reference("to", RefPolicy::Clear)));
    let to = w.field(c, "to");
    let target = w.spawn(ClassId::ENTITY).id;
    let ats: Vec<InstanceRef> = (0..12)
        .map(|_| {
            let at = w.spawn(ClassId::ENTITY);
            w.store.insert(at, ClassId::ENTITY, c).unwrap();
            at
        })
        .collect();
    let mut writer = w.store.par_writer::<Option<InstanceId>>(c, to).unwrap();
    let changed = writer
        .update(&Threads, &[Piece::Rows(6..12), Piece::Rows(0..6)], |_| {
            move |_: &Option<InstanceId>, _: usize| Some(target)
        })
        .unwrap();
    assert_eq!(changed, 12);
    let holders: Vec<InstanceId> = w
        .store
        .set(c)
        .unwrap()
        .references_to(target)
        .iter()
        .map(|e| e.holder)
        .collect();
    assert_eq!(holders, ids(&ats, 0..12));
    let outcome = w.destroy(target);
    assert_eq!(outcome.cleared.len(), 12);
}

#[test]
fn a_parallel_writer_is_refused_for_a_field_it_cannot_write() {
    let (mut w, c, n, _) = counted(3);
    let mut other = Store::new();
    assert!(matches!(
        w.store.par_writer::<i64>(c, n),
        Err(StoreError::TypeMismatch { .. })
    ));
    assert!(matches!(
        w.store.par_writer::<f64>(c, FieldId::from_index(9)),
        Err(StoreError::FieldOutOfRange { .. })
    ));
    assert!(matches!(
        other.par_writer::<f64>(c, n),
        Err(StoreError::UnknownComponent(_))
    ));
    assert!(matches!(
        w.store.par_update_columns::<f64, f64>(c, n, Some((c, n))),
        Err(StoreError::AliasedColumns { .. })
    ));
}

#[test]
fn blocks_of_rows_keep_each_rows_dirty_state_and_log_the_rows_changed_at_the_base() {
    let mut w = World::new();
    let c = w.install(
        ComponentDef::new("Plain")
            .field(FieldDef::number("n", 0.0))
            .field(FieldDef::number("m", 0.0)),
    );
    let (n, m) = (w.field(c, "n"), w.field(c, "m"));
    let ats: Vec<InstanceRef> = (0..150)
        .map(|_| {
            let at = w.spawn(ClassId::ENTITY);
            w.store.insert(at, ClassId::ENTITY, c).unwrap();
            at
        })
        .collect();
    w.store.take_dirty(c).unwrap();
    // Rows 3 and 70 already have `n` dirty, row 5 only `m`: blocks of 64 mix the three.
    for (row, field) in [(3, n), (70, n), (5, m)] {
        w.store.write(ats[row], c, field, 9.0).unwrap();
    }
    let pieces = [Piece::Rows(0..100), Piece::Rows(100..150)];
    let mut writer = w.store.par_writer::<f64>(c, n).unwrap();
    assert_eq!(
        writer.update(&Threads, &pieces, |_| |v: &f64, _: usize| v + 1.0),
        Ok(150)
    );
    let dirty = w.store.take_dirty(c).unwrap();
    let listed: Vec<InstanceId> = dirty.iter().map(|(id, _)| *id).collect();
    let expected: Vec<InstanceId> = [3, 70, 5]
        .into_iter()
        .chain((0..150).filter(|row| ![3, 70, 5].contains(row)))
        .map(|row| ats[row].id)
        .collect();
    assert_eq!(listed, expected);
    for (id, mask) in &dirty {
        assert!(mask.contains(n), "{id}");
        assert_eq!(mask.contains(m), *id == ats[5].id, "{id}");
    }

    // That pass outgrew the change log, which now starts at its tick: every row's changed tick
    // equals the base. A pass small enough for the log logs each row it changes again.
    let base = w.store.tick();
    assert!(
        w.store
            .set(c)
            .unwrap()
            .changes_since(base)
            .unwrap()
            .is_empty()
    );
    let some = [Piece::Rows(10..20), Piece::Rows(130..140)];
    let mut writer = w.store.par_writer::<f64>(c, n).unwrap();
    assert_eq!(
        writer.update(&Threads, &some, |_| |v: &f64, _: usize| v + 1.0),
        Ok(20)
    );
    let logged: Vec<u32> = w
        .store
        .set(c)
        .unwrap()
        .changes_since(base)
        .unwrap()
        .iter()
        .map(|record| record.row)
        .collect();
    let expected: Vec<u32> = (10..20).chain(130..140).collect();
    assert_eq!(logged, expected);
}
