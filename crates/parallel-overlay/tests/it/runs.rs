//! Writers that sweep rows in order: their logs keep only values while the rows run on, the
//! commit writes disjoint sweeps of one column in one parallel pass, and everything the commit
//! promises (rank order, conflicts, stale-row fallback, refusals, determinism) still holds.

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;
use strata_arena::{Arena, ClassId, InstanceId};
use strata_component_store::{
    ComponentDef, ComponentId, FieldDef, FieldId, InstanceRef, Store, StoreError, StoreEvent, Tick,
    Value, run_start,
};
use strata_parallel_overlay::{
    NoOrder, Overlay, OverlayError, Spare, WriteSet, Writer, WriterRank, commit, run_parallel,
    run_parallel_with_spare,
};

struct World {
    store: Store,
    score: ComponentId,
    n: FieldId,
    members: Vec<InstanceRef>,
}

/// A store with `def` installed and held by `count` new entities (rows 0 to `count` − 1).
fn installed(def: ComponentDef, count: usize) -> (Store, ComponentId, Vec<InstanceRef>) {
    let mut arena = Arena::standard();
    let mut store = Store::new();
    let c = store.install(def, arena.classes()).unwrap();
    let members: Vec<InstanceRef> = arena
        .create_many(ClassId::ENTITY, None, count)
        .unwrap()
        .into_iter()
        .map(|(id, slot)| InstanceRef::new(id, slot))
        .collect();
    store.insert_many(&members, ClassId::ENTITY, c).unwrap();
    (store, c, members)
}

fn world(count: usize, observed: bool) -> World {
    let (mut store, score, members) = installed(
        ComponentDef::new("Score")
            .field(FieldDef::integer("n", 0))
            .observed(observed),
        count,
    );
    let n = store.field(score, "n").unwrap();
    store.drain_events();
    store.take_dirty(score).unwrap();
    World {
        store,
        score,
        n,
        members,
    }
}

fn n_at(w: &World, at: InstanceRef) -> i64 {
    *w.store.get::<i64>(at, w.score, w.n).unwrap()
}

/// One writer: its rank, the rows it sweeps in order with the value each gets, and writes
/// after the sweep (row, value) that may break the run.
#[derive(Clone, Debug)]
struct Sweep {
    rank: u64,
    rows: std::ops::Range<usize>,
    base: i64,
    after: Vec<(usize, i64)>,
    /// Whether the writer goes through the typed column handle (else `write_row`).
    typed: bool,
}

fn sweeps(rows: usize) -> impl Strategy<Value = Vec<Sweep>> {
    prop::collection::vec(
        (
            0u64..6,
            0..rows,
            0..rows,
            -100i64..100,
            prop::collection::vec((0..rows, -9i64..9), 0..3),
            any::<bool>(),
        )
            .prop_map(|(rank, a, b, base, after, typed)| Sweep {
                rank,
                rows: a.min(b)..a.max(b),
                base,
                after,
                typed,
            }),
        1..6,
    )
}

fn write(
    sweep: &Sweep,
    overlay: &mut Overlay<'_>,
    score: ComponentId,
    n: FieldId,
) -> Result<(), OverlayError> {
    let writes = sweep
        .rows
        .clone()
        .map(|row| (row, sweep.base + row as i64))
        .chain(sweep.after.iter().copied());
    if sweep.typed {
        let mut column = overlay.column::<i64>(score, n)?;
        for (row, value) in writes {
            column.write(row, value)?;
            assert_eq!(
                column.written(row),
                Some(&value),
                "a writer reads its own write"
            );
        }
    } else {
        for (row, value) in writes {
            overlay.write_row(score, row, n, Value::Integer(value))?;
        }
    }
    Ok(())
}

/// The model: each writer's last value per row, writers in (rank, id) order, and the
/// conflicts (one per later writer of a row already written).
fn model(sweeps: &[Sweep], rows: usize) -> (Vec<i64>, usize, usize) {
    let mut order: Vec<usize> = (0..sweeps.len()).collect();
    order.sort_by_key(|&i| (sweeps[i].rank, i));
    let mut values = vec![0i64; rows];
    let mut writers_of = vec![0usize; rows];
    let mut live = 0;
    for i in order {
        let mut last = BTreeMap::new();
        for row in sweeps[i].rows.clone() {
            last.insert(row, sweeps[i].base + row as i64);
        }
        for &(row, value) in &sweeps[i].after {
            last.insert(row, value);
        }
        live += last.len();
        for (row, value) in last {
            values[row] = value;
            writers_of[row] += 1;
        }
    }
    let conflicts = writers_of.iter().map(|w| w.saturating_sub(1)).sum();
    (values, conflicts, live)
}

/// What a commit changed: each instance's value and changed tick, the store tick, the dirty
/// rows and the events.
type Print = (
    Vec<(InstanceId, i64, Tick)>,
    Tick,
    Vec<InstanceId>,
    Vec<StoreEvent>,
);

/// Everything a commit changes, the dirty state and the events taken.
fn print(w: &mut World) -> Print {
    let set = w.store.set(w.score).unwrap();
    let mut rows: Vec<(InstanceId, i64, Tick)> = (0..set.len())
        .map(|r| {
            (
                set.ids()[r],
                set.values::<i64>(w.n).unwrap()[r],
                set.changed_ticks().get(r).expect("a row of the set"),
            )
        })
        .collect();
    rows.sort();
    let dirty = w
        .store
        .take_dirty(w.score)
        .unwrap()
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    (rows, w.store.tick(), dirty, w.store.drain_events())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Writers sweeping ranges (some overlapping, some breaking their run afterwards) commit as
    /// a model applying their final writes in rank order, with one conflict per later writer of
    /// a row; and the store is the same whatever order the sets arrive in and whether
    /// `run_parallel` runs them on 1 to 8 lanes, with or without recycled memory.
    #[test]
    fn sweeping_writers_commit_as_the_model_for_any_arrival_order_and_lane_count(
        sweeps in sweeps(300),
        lanes in 1usize..=8,
        observed in any::<bool>(),
    ) {
        let (expected, conflicts, live) = model(&sweeps, 300);
        let record = |w: &World| -> Vec<WriteSet> {
            sweeps
                .iter()
                .enumerate()
                .map(|(id, sweep)| {
                    let mut overlay = Overlay::new(WriterRank::system(sweep.rank, id as u64), &w.store);
                    write(sweep, &mut overlay, w.score, w.n).unwrap();
                    overlay.finish()
                })
                .collect()
        };

        let mut ranked = world(300, observed);
        let mut sets = record(&ranked);
        sets.sort_by_key(WriteSet::rank);
        let report = commit(&mut ranked.store, sets, &NoOrder);
        prop_assert_eq!(report.conflicts.len(), conflicts);
        prop_assert!(report.refusals.is_empty());
        prop_assert_eq!(report.applied + report.unchanged, live);
        for (row, at) in ranked.members.clone().into_iter().enumerate() {
            prop_assert_eq!(n_at(&ranked, at), expected[row]);
        }
        let reference = print(&mut ranked);

        let mut reversed = world(300, observed);
        let mut sets = record(&reversed);
        sets.reverse();
        commit(&mut reversed.store, sets, &NoOrder);
        prop_assert_eq!(&print(&mut reversed), &reference);

        let pool = rayon::ThreadPoolBuilder::new().num_threads(lanes).build().unwrap();
        let writers: Vec<Writer<Sweep>> = sweeps
            .iter()
            .enumerate()
            .map(|(id, sweep)| Writer { rank: WriterRank::system(sweep.rank, id as u64), work: sweep.clone() })
            .collect();
        let spare = Spare::new();
        for recycled in [false, true] {
            let mut run = world(300, observed);
            let (score, n) = (run.score, run.n);
            let work = |sweep: &Sweep, overlay: &mut Overlay<'_>| write(sweep, overlay, score, n);
            let report = if recycled {
                // A first frame fills the spare pool; the second records into its memory.
                run_parallel_with_spare(&mut run.store, &pool, &writers, work, &NoOrder, &spare);
                run = world(300, observed);
                run_parallel_with_spare(&mut run.store, &pool, &writers, work, &NoOrder, &spare)
            } else {
                run_parallel(&mut run.store, &pool, &writers, work, &NoOrder)
            };
            prop_assert_eq!(report.commit.conflicts.len(), conflicts);
            prop_assert_eq!(&print(&mut run), &reference);
        }
    }

    /// Sweeps committed after removals moved rows: each write lands on its instance wherever
    /// its row went, and writes to instances that lost the component are refused, one each.
    #[test]
    fn sweeps_committed_after_rows_moved_go_by_instance(
        sweeps in sweeps(120),
        removed in prop::collection::btree_set(0usize..120, 0..12),
    ) {
        let (expected, _, live) = model(&sweeps, 120);
        let mut w = world(120, false);
        let sets: Vec<WriteSet> = sweeps
            .iter()
            .enumerate()
            .map(|(id, sweep)| {
                let mut overlay = Overlay::new(WriterRank::system(sweep.rank, id as u64), &w.store);
                write(sweep, &mut overlay, w.score, w.n).unwrap();
                overlay.finish()
            })
            .collect();
        for &row in &removed {
            w.store.remove(w.members[row], w.score).unwrap();
        }
        let refused: usize = sweeps
            .iter()
            .map(|sweep| {
                let mut rows: Vec<usize> = sweep.rows.clone().chain(sweep.after.iter().map(|(r, _)| *r)).collect();
                rows.sort_unstable();
                rows.dedup();
                rows.iter().filter(|row| removed.contains(row)).count()
            })
            .sum();
        let report = commit(&mut w.store, sets, &NoOrder);
        prop_assert_eq!(report.refusals.len(), refused);
        prop_assert_eq!(report.applied + report.unchanged + report.refusals.len(), live);
        for refusal in &report.refusals {
            let is_missing = matches!(refusal.error, StoreError::MissingMembership { .. });
            prop_assert!(is_missing, "{:?}", refusal.error);
        }
        for (row, at) in w.members.clone().into_iter().enumerate() {
            if !removed.contains(&row) {
                prop_assert_eq!(n_at(&w, at), expected[row]);
            }
        }
    }
}

#[test]
fn disjoint_sweeps_of_a_column_commit_in_one_pass_in_rank_order() {
    let mut w = world(1_000, true);
    let tick = w.store.tick();
    // Writer k sweeps the k-th quarter from the end, so rank order is the reverse of row order.
    let sets: Vec<WriteSet> = (0..4u64)
        .map(|k| {
            let mut overlay = Overlay::new(WriterRank::system(k, k), &w.store);
            let mut column = overlay.column::<i64>(w.score, w.n).unwrap();
            let start = 750 - 250 * k as usize;
            for row in start..start + 250 {
                column.write(row, 7).unwrap();
            }
            overlay.finish()
        })
        .collect();
    let report = commit(&mut w.store, sets, &NoOrder);
    assert_eq!((report.applied, report.unchanged), (1_000, 0));
    assert!(report.conflicts.is_empty());
    assert_eq!(w.store.tick(), Tick(tick.0 + 1), "one pass, one tick");
    let set = w.store.set(w.score).unwrap();
    assert!(set.changed_ticks().iter().all(|t| t == w.store.tick()));
    let in_rank_order: Vec<InstanceId> = (0..4)
        .flat_map(|k| 750 - 250 * k..1_000 - 250 * k)
        .map(|row| w.members[row].id)
        .collect();
    let dirty: Vec<InstanceId> = w
        .store
        .take_dirty(w.score)
        .unwrap()
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    // The dirty state is reported in row order; events follow the commit order.
    let in_row_order: Vec<InstanceId> = w.members.iter().map(|at| at.id).collect();
    assert_eq!(dirty, in_row_order);
    let events: Vec<InstanceId> = w
        .store
        .drain_events()
        .into_iter()
        .map(|e| match e {
            StoreEvent::Changed { id, .. } => id,
            other => panic!("unexpected event {other:?}"),
        })
        .collect();
    assert_eq!(events, in_rank_order);
}

#[test]
fn a_sweep_broken_by_a_repeat_or_a_jump_reads_back_and_commits_its_last_writes() {
    let mut w = world(20, true);
    let mut overlay = Overlay::new(WriterRank::system(0, 0), &w.store);
    {
        let mut column = overlay.column::<i64>(w.score, w.n).unwrap();
        for row in 3..8 {
            column.write(row, row as i64).unwrap();
        }
        column.write(5, 50).unwrap();
        column.write(12, 120).unwrap();
        column.write(8, 80).unwrap();
        for (row, expected) in [
            (2, None),
            (3, Some(3)),
            (5, Some(50)),
            (7, Some(7)),
            (8, Some(80)),
            (9, None),
            (12, Some(120)),
        ] {
            assert_eq!(column.written(row).copied(), expected, "row {row}");
        }
    }
    assert_eq!(overlay.len(), 7);
    let set = overlay.finish();
    assert_eq!((set.len(), set.writes()), (7, 8));
    let report = commit(&mut w.store, vec![set], &NoOrder);
    assert_eq!(report.applied, 7);
    // The commit follows the writes' order: the sweep, then the repeat, then the jumps.
    let events: Vec<InstanceId> = w
        .store
        .drain_events()
        .into_iter()
        .map(|e| match e {
            StoreEvent::Changed { id, .. } => id,
            other => panic!("unexpected event {other:?}"),
        })
        .collect();
    let in_write_order: Vec<InstanceId> = [3, 4, 6, 7, 5, 12, 8]
        .into_iter()
        .map(|row| w.members[row].id)
        .collect();
    assert_eq!(events, in_write_order);
    for (row, at) in w.members.clone().into_iter().enumerate() {
        let expected = match row {
            5 => 50,
            8 => 80,
            12 => 120,
            3..8 => row as i64,
            _ => 0,
        };
        assert_eq!(n_at(&w, at), expected, "row {row}");
    }
}

#[test]
fn a_sweep_committed_into_a_snapshot_goes_by_instance() {
    let w = world(10, false);
    let mut overlay = Overlay::new(WriterRank::system(0, 0), &w.store);
    {
        let mut column = overlay.column::<i64>(w.score, w.n).unwrap();
        for row in 0..10 {
            column.write(row, 1 + row as i64).unwrap();
        }
    }
    let set = overlay.finish();
    let mut copy = w.store.snapshot();
    // The snapshot's rows move; the original store is another store now.
    copy.remove(w.members[0], w.score).unwrap();
    let report = commit(&mut copy, vec![set], &NoOrder);
    assert_eq!(report.refusals.len(), 1);
    assert_eq!(report.refusals[0].instance, w.members[0].id);
    assert_eq!(
        report.relocated, 1,
        "the last row moved into the removed one's place"
    );
    for (row, at) in w.members.iter().enumerate().skip(1) {
        assert_eq!(copy.get::<i64>(*at, w.score, w.n), Ok(&(1 + row as i64)));
    }
    assert_eq!(w.store.get::<i64>(w.members[3], w.score, w.n), Ok(&0));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// `OverlayColumn::write_run` records exactly what writing its values one by one does,
    /// whatever came before (a run it continues, one it breaks, scattered writes).
    #[test]
    fn a_written_run_records_what_its_writes_one_by_one_do(
        ops in prop::collection::vec((any::<bool>(), 0usize..60, 0usize..25, -50i64..50), 0..12),
    ) {
        let w = world(90, false);
        let one_by_one = {
            let mut overlay = Overlay::new(WriterRank::system(0, 0), &w.store);
            let mut column = overlay.column::<i64>(w.score, w.n).unwrap();
            for &(run, start, len, base) in &ops {
                let len = if run { len } else { 1 };
                for row in start..start + len {
                    column.write(row, base + row as i64).unwrap();
                }
            }
            overlay.finish()
        };
        let mut overlay = Overlay::new(WriterRank::system(0, 0), &w.store);
        {
            let mut column = overlay.column::<i64>(w.score, w.n).unwrap();
            for &(run, start, len, base) in &ops {
                if run {
                    column.write_run(start, (start..start + len).map(|row| base + row as i64)).unwrap();
                } else {
                    column.write(start, base + start as i64).unwrap();
                }
            }
            for row in 0..90 {
                let expected = ops
                    .iter()
                    .rev()
                    .find(|&&(run, start, len, _)| (start..start + if run { len } else { 1 }).contains(&row))
                    .map(|&(_, _, _, base)| base + row as i64);
                prop_assert_eq!(column.written(row).copied(), expected);
            }
        }
        prop_assert_eq!(overlay.finish(), one_by_one);
    }
}

#[test]
fn a_run_past_the_rows_is_refused_and_records_nothing() {
    let w = world(10, false);
    let mut overlay = Overlay::new(WriterRank::system(0, 0), &w.store);
    let mut column = overlay.column::<i64>(w.score, w.n).unwrap();
    column.write_run(0, [1, 2, 3]).unwrap();
    let refused = column.write_run(8, [4, 5, 6]);
    assert!(matches!(
        refused,
        Err(OverlayError::Store(StoreError::RowOutOfRange {
            row: 10,
            ..
        }))
    ));
    assert_eq!(column.written(8), None);
    column.write_run(3, [4, 5]).unwrap();
    let set = overlay.finish();
    assert_eq!((set.len(), set.writes()), (5, 5));
}

/// A pass whose function panics part-way keeps exactly the values written before the panic,
/// for a value type with a destructor as for a plain one, over rows that follow one another or
/// not: the log reads them back, they count as the writer's writes (so later writes come after
/// them), the commit applies them, and every other row keeps its value.
#[test]
fn a_pass_whose_function_panics_keeps_the_values_written_before_it() {
    let (mut store, label, members) = installed(
        ComponentDef::new("Label")
            .field(FieldDef::text("s", "none"))
            .field(FieldDef::integer("n", 0)),
        10,
    );
    let (s, n) = (
        store.field(label, "s").unwrap(),
        store.field(label, "n").unwrap(),
    );
    let mut overlay = Overlay::new(WriterRank::system(0, 0), &store);
    let mut texts = overlay.column::<Arc<str>>(label, s).unwrap();
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        texts.update_run(2, 6, |k, _| {
            assert!(k < 4, "the pass stops at its fifth row");
            Some(Arc::from(format!("row {k}")))
        })
    }));
    assert!(panicked.is_err());
    for row in 0..10 {
        let expected = (2..6).contains(&row).then(|| format!("row {}", row - 2));
        assert_eq!(texts.written(row).map(|v| v.to_string()), expected);
    }
    let mut numbers = overlay.column::<i64>(label, n).unwrap();
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        numbers.update_run(0, 10, |k, _| {
            assert!(k != 7, "the pass stops at its eighth row");
            Some(k as i64 + 1)
        })
    }));
    assert!(panicked.is_err());
    // A pass over rows that do not follow one another, stopped the same way, and a write after.
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        numbers.update_rows(&[9, 8, 3], None, |k, _| {
            assert!(k != 2, "the pass stops at its third row");
            Some(90 - 10 * k as i64)
        })
    }));
    assert!(panicked.is_err());
    numbers.write(3, 300).unwrap();
    let set = overlay.finish();
    assert_eq!(set.writes(), 4 + 7 + 2 + 1);
    let report = commit(&mut store, vec![set], &NoOrder);
    assert_eq!(report.applied, 4 + 9);
    for (row, member) in members.iter().enumerate() {
        let text = store
            .get::<Arc<str>>(*member, label, s)
            .unwrap()
            .to_string();
        let expected = if (2..6).contains(&row) {
            format!("row {}", row - 2)
        } else {
            "none".to_owned()
        };
        assert_eq!(text, expected);
        let number = *store.get::<i64>(*member, label, n).unwrap();
        let expected = match row {
            3 => 300,
            8 => 80,
            9 => 90,
            _ if row < 7 => row as i64 + 1,
            _ => 0,
        };
        assert_eq!(number, expected);
    }
}

/// A run of a value type with a destructor records what it writes: the rows before the first
/// unchanged one as a run, the rest one by one, and each value is dropped once (the log and the
/// store end holding exactly the values written).
#[test]
fn a_run_of_text_records_its_changed_rows_around_an_unchanged_one() {
    let (mut store, label, members) = installed(
        ComponentDef::new("Label").field(FieldDef::text("s", "none")),
        8,
    );
    let s = store.field(label, "s").unwrap();
    let mut overlay = Overlay::new(WriterRank::system(0, 0), &store);
    let mut texts = overlay.column::<Arc<str>>(label, s).unwrap();
    // Row 3 keeps its value; row 5 is skipped.
    let recorded = texts
        .update_run(1, 6, |k, current| match k {
            2 => Some(current.clone()),
            4 => None,
            _ => Some(Arc::from(format!("row {}", k + 1))),
        })
        .unwrap();
    assert_eq!(recorded, 4);
    let written: Vec<Option<String>> = (0..8)
        .map(|row| texts.written(row).map(|v| v.to_string()))
        .collect();
    let expected: Vec<Option<String>> =
        [None, Some(1), Some(2), None, Some(4), None, Some(6), None]
            .into_iter()
            .map(|row| row.map(|r| format!("row {r}")))
            .collect();
    assert_eq!(written, expected);
    let set = overlay.finish();
    let report = commit(&mut store, vec![set], &NoOrder);
    assert_eq!(report.applied, 4);
    for (row, member) in members.iter().enumerate() {
        let text = store
            .get::<Arc<str>>(*member, label, s)
            .unwrap()
            .to_string();
        assert_eq!(
            Some(text),
            expected[row].clone().or(Some("none".to_owned()))
        );
    }
}

/// What a pass computes from the row's position in the pass and the value it sees: `None` (skip)
/// for one position in every `period`, the value itself (an identical write) for another, a new
/// value for the rest (so long periods make long stretches of changed rows).
fn pass_value(period: usize) -> impl Fn(usize, &i64) -> Option<i64> + Copy {
    move |k, current| match k % period {
        0 if k > 0 => None,
        1 if k > 1 => Some(*current),
        _ => Some(current * 3 + k as i64),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A pass of `update_rows` (rows repeated or out of order, strictly ascending, or each the
    /// one before plus one; through a selection or not; after earlier writes of the writer or
    /// before any) records exactly what a `get` and a `write` per visited row record: the same
    /// log, sequence and read counts, and the same number of writes returned.
    #[test]
    fn a_pass_of_update_rows_records_what_a_get_and_a_write_per_row_record(
        earlier in prop::collection::vec((0usize..60, -50i64..50), 0..20),
        rows in prop::collection::vec(0u32..60, 0..80),
        selection in prop::option::of(prop::collection::vec(any::<prop::sample::Index>(), 0..40)),
        shape in 0..4u8,
        period in 2usize..80,
    ) {
        // Fresh passes (the writer's first writes to the column, rows strictly ascending) and
        // passes over consecutive rows (with earlier writes or without) as often as others.
        let consecutive = |rows: &[u32]| -> Vec<u32> {
            let start = rows.first().copied().unwrap_or(0);
            (start..start + rows.len().min(60 - start as usize) as u32).collect()
        };
        let (earlier, rows) = match shape {
            0 => (earlier, rows),
            1 => {
                let mut rows = rows;
                rows.sort_unstable();
                rows.dedup();
                (Vec::new(), rows)
            }
            2 => (Vec::new(), consecutive(&rows)),
            _ => (earlier, consecutive(&rows)),
        };
        let w = world(60, false);
        let selection: Option<Vec<u32>> = selection.map(|picks| {
            picks.iter().filter(|_| !rows.is_empty()).map(|i| i.index(rows.len()) as u32).collect()
        });
        let pass = pass_value(period);
        // Per row (the reference), through `update_rows`, and, over consecutive rows without a
        // selection, through `update_run`.
        #[derive(Clone, Copy, PartialEq)]
        enum Way { PerRow, Rows, Run(u32) }
        let record = |way: Way| -> (WriteSet, usize) {
            let mut overlay = Overlay::new(WriterRank::system(0, 0), &w.store);
            let mut column = overlay.column::<i64>(w.score, w.n).unwrap();
            for &(row, value) in &earlier {
                column.write(row, value).unwrap();
            }
            let recorded = if let Way::Run(start) = way {
                column.update_run(start as usize, rows.len(), pass).unwrap()
            } else if way == Way::PerRow {
                let visits: Vec<usize> = match &selection {
                    Some(selected) => selected.iter().map(|&k| k as usize).collect(),
                    None => (0..rows.len()).collect(),
                };
                let mut recorded = 0;
                for k in visits {
                    let row = rows[k] as usize;
                    let current = *column.get(row).unwrap();
                    if let Some(next) = pass(k, &current).filter(|&next| next != current) {
                        column.write(row, next).unwrap();
                        recorded += 1;
                    }
                }
                recorded
            } else {
                column.update_rows(&rows, selection.as_deref(), pass).unwrap()
            };
            (overlay.finish(), recorded)
        };
        let reference = record(Way::PerRow);
        prop_assert_eq!(&record(Way::Rows), &reference);
        if let (None, Some(start)) = (&selection, run_start(&rows)) {
            prop_assert_eq!(&record(Way::Run(start)), &reference);
        }
    }
}

#[test]
fn a_pass_over_a_row_past_the_set_is_refused_and_records_nothing() {
    let w = world(10, false);
    let mut overlay = Overlay::new(WriterRank::system(0, 0), &w.store);
    let mut column = overlay.column::<i64>(w.score, w.n).unwrap();
    let bump = |_: usize, current: &i64| Some(current + 1);
    let mut refusals = Vec::new();
    for (rows, selection) in [
        (&[1u32, 2, 12][..], None),
        (&[8, 9, 10, 11][..], None),
        (&[1, 2, 12][..], Some(&[0u32, 2][..])),
        (&[1, 2][..], Some(&[0, 5][..])),
    ] {
        refusals.push(column.update_rows(rows, selection, bump));
    }
    for (start, len) in [(8, 3), (10, 1), (usize::MAX, 2)] {
        refusals.push(column.update_run(start, len, bump));
    }
    for refused in refusals {
        assert!(
            matches!(
                refused,
                Err(OverlayError::Store(StoreError::RowOutOfRange { .. }))
            ),
            "{refused:?}"
        );
    }
    assert_eq!(column.update_run(10, 0, bump).unwrap(), 0);
    assert_eq!(column.update_rows(&[3, 4], Some(&[1]), bump).unwrap(), 1);
    let set = overlay.finish();
    assert_eq!((set.len(), set.writes(), set.reads()), (1, 1, 1));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// `write_rows` (rows repeated, out of order, each the one before plus one, after earlier
    /// writes or none) records what a `write` of each pair in turn records; rows past the set,
    /// or rows and values of different lengths, are refused with nothing recorded.
    #[test]
    fn written_rows_record_what_their_writes_one_by_one_do(
        earlier in prop::collection::vec((0usize..60, -50i64..50), 0..20),
        pairs in prop::collection::vec((0u32..61, -50i64..50), 0..40),
        short in prop::bool::weighted(0.2),
        consecutive in any::<bool>(),
        fresh in any::<bool>(),
    ) {
        let w = world(60, false);
        let earlier = if fresh { Vec::new() } else { earlier };
        let mut rows: Vec<u32> = pairs.iter().map(|&(row, _)| row).collect();
        if consecutive {
            let start = rows.first().copied().unwrap_or(0);
            rows = (start..start + rows.len() as u32).collect();
        }
        let mut values: Vec<i64> = pairs.iter().map(|&(_, value)| value).collect();
        if short {
            values.pop();
        }
        let refused = values.len() != rows.len() || rows.iter().any(|&row| row >= 60);
        let record = |one_by_one: bool| -> WriteSet {
            let mut overlay = Overlay::new(WriterRank::system(0, 0), &w.store);
            let mut column = overlay.column::<i64>(w.score, w.n).unwrap();
            for &(row, value) in &earlier {
                column.write(row, value).unwrap();
            }
            if one_by_one {
                if !refused {
                    for (&row, &value) in rows.iter().zip(&values) {
                        column.write(row as usize, value).unwrap();
                    }
                }
            } else {
                let result = column.write_rows(&rows, values.iter().copied());
                assert_eq!(result.is_err(), refused, "{result:?}");
            }
            overlay.finish()
        };
        prop_assert_eq!(record(false), record(true));
    }
}

/// `record_and_commit` commits an overlay over the store it lends without its instances and
/// one over another store (the original, committed into its snapshot whose rows moved) with
/// them, so each write lands on its instance, as detached write sets through `commit` do.
#[test]
fn record_and_commit_places_overlays_over_the_lent_store_and_over_another_alike() {
    let w = world(10, false);
    // Rank 0 sweeps rows 5..10 of the original; rank 1 rows 0..4 of the store it is given.
    fn sweep<'s>(w: &World, store: &'s Store, rank: u64) -> Overlay<'s> {
        let mut overlay = Overlay::new(WriterRank::system(rank, rank), store);
        let mut column = overlay.column::<i64>(w.score, w.n).unwrap();
        let (rows, base) = if rank == 0 { (5..10, 10) } else { (0..4, 100) };
        column
            .write_run(rows.start, rows.map(|row| base + row as i64))
            .unwrap();
        overlay
    }
    let moved = || {
        let mut copy = w.store.snapshot();
        // The last row moves into the removed one's place.
        copy.remove(w.members[0], w.score).unwrap();
        copy
    };
    let spare = Spare::new();
    let mut lent = moved();
    // The original goes in beside the lent store, so its overlay may live as long as the lent
    // store's.
    let (report, made) = strata_parallel_overlay::record_and_commit(
        &mut lent,
        &w.store,
        &NoOrder,
        &spare,
        None,
        |store, original| (vec![sweep(&w, store, 1), sweep(&w, original, 0)], 7),
    );
    assert_eq!(made, 7);
    let mut detached = moved();
    let sets = vec![
        sweep(&w, &detached, 1).finish(),
        sweep(&w, &w.store, 0).finish(),
    ];
    assert_eq!(report, commit(&mut detached, sets, &NoOrder));
    let n = |store: &Store, k: usize| *store.get::<i64>(w.members[k], w.score, w.n).unwrap();
    // Row 1 of the lent store, the original's row 5, and the moved instance (rank 1 last).
    assert_eq!((n(&lent, 1), n(&lent, 5), n(&lent, 9)), (101, 15, 100));
    for k in 1..10 {
        assert_eq!(n(&lent, k), n(&detached, k), "instance {k}");
    }
}
