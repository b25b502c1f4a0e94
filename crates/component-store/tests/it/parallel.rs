//! Parallel column writers: pieces of rows written by separate tasks, their tracking recorded
//! in the order the pieces were given, refusals that change nothing.

use crate::common::World;
use proptest::prelude::{Strategy, any};
use strata_arena::{ClassId, InstanceId};
use strata_component_store::{
    ChunkRunner, ComponentDef, ComponentId, FieldDef, FieldId, InOrder, InstanceRef, ParWriter,
    Piece, RefPolicy, Scalar, Store, StoreError, StoreEvent, Tick,
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
    counted_as(n, true)
}

/// A world with `n` instances holding a number component, observed or not.
fn counted_as(n: usize, observed: bool) -> (World, ComponentId, FieldId, Vec<InstanceRef>) {
    let mut w = World::new();
    let c = w.install(
        ComponentDef::new("Count")
            .field(FieldDef::number("n", 0.0))
            .field(FieldDef::enumeration("mode", &["a", "b", "c"], "a"))
            .observed(observed),
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
        let changed_ticks: Vec<bool> = set.changed_ticks().iter().map(|t| t > tick).collect();
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
        // The dirty state is reported in row order, whatever order the rows changed in.
        let mut by_row = order.clone();
        by_row.sort_unstable();
        assert_eq!(dirty, ids(&ats, by_row.into_iter()));
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
        assert!(set.changed_ticks().iter().all(|t| t <= tick));
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
            move |_: &u32, i: usize| if piece * 10 + i == bad { 3 } else { 1 }
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
    assert_eq!(listed, ids(&ats, 0..150), "every row dirty, in row order");
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
    let logged: Vec<usize> = w
        .store
        .set(c)
        .unwrap()
        .changes_since(base)
        .unwrap()
        .rows()
        .collect();
    let expected: Vec<usize> = (10..20).chain(130..140).collect();
    assert_eq!(logged, expected);
}

/// One pass of the model test: which rows it writes, cut into pieces given in a shuffled
/// order, and which rows keep their value.
#[derive(Clone, Debug)]
struct PassPlan {
    /// Per row (as far as the set goes), whether the pass writes it.
    written: Vec<bool>,
    /// Per row, whether a new piece starts at it (when it is written).
    cut: Vec<bool>,
    /// A sort key per piece: the order the pieces are handed over in.
    keys: Vec<u8>,
    /// Per piece, whether it is given as a range when its rows are consecutive.
    ranges: Vec<bool>,
    /// Rows whose `(row * 7 + pass) % keep` is zero keep their value.
    keep: usize,
    /// A row the enum pass gives an index past the variants.
    refused: Option<usize>,
}

#[derive(Clone, Debug)]
struct Case {
    rows: usize,
    observed: bool,
    /// Instances whose rows are removed before the passes (moving others).
    removals: Vec<usize>,
    /// Single writes before the passes, filling the change log.
    writes: Vec<(usize, f64)>,
    take_dirty: bool,
    /// Whether a snapshot shares the set while the passes run.
    snapshot: bool,
    /// Whether the passes write the enum field (checked values) rather than the number.
    enumeration: bool,
    threads: bool,
    /// Whether the parallel passes hand over their values (`ParWriter::copy_from`) rather than
    /// functions (`ParWriter::update`).
    given: bool,
    passes: Vec<PassPlan>,
}

const MAX_ROWS: usize = 150;

fn pass_plan() -> impl Strategy<Value = PassPlan> {
    (
        proptest::collection::vec(proptest::bool::weighted(0.7), MAX_ROWS),
        proptest::collection::vec(proptest::bool::weighted(0.1), MAX_ROWS),
        proptest::collection::vec(any::<u8>(), MAX_ROWS),
        proptest::collection::vec(any::<bool>(), MAX_ROWS),
        1usize..6,
        proptest::option::weighted(0.2, 0..MAX_ROWS),
    )
        .prop_map(|(written, cut, keys, ranges, keep, refused)| PassPlan {
            written,
            cut,
            keys,
            ranges,
            keep,
            refused,
        })
}

fn case() -> impl Strategy<Value = Case> {
    (
        1usize..MAX_ROWS,
        any::<bool>(),
        proptest::collection::vec(0..MAX_ROWS, 0..20),
        proptest::collection::vec((0..MAX_ROWS, -5.0f64..5.0), 0..70),
        any::<bool>(),
        proptest::bool::weighted(0.3),
        proptest::bool::weighted(0.3),
        (any::<bool>(), any::<bool>()),
        proptest::collection::vec(pass_plan(), 1..4),
    )
        .prop_map(
            |(
                rows,
                observed,
                removals,
                writes,
                take_dirty,
                snapshot,
                enumeration,
                (threads, given),
                passes,
            )| {
                Case {
                    rows,
                    observed,
                    removals,
                    writes,
                    take_dirty,
                    snapshot,
                    enumeration,
                    threads,
                    given,
                    passes,
                }
            },
        )
}

/// A pass's pieces (rows, as ranges when consecutive and asked for) in the order handed over.
fn pieces_of(plan: &PassPlan, len: usize) -> Vec<(Vec<u32>, bool)> {
    let mut pieces: Vec<(u8, Vec<u32>, bool)> = Vec::new();
    for row in 0..len {
        if !plan.written[row] {
            continue;
        }
        if plan.cut[row] || pieces.is_empty() {
            let k = pieces.len();
            pieces.push((plan.keys[k], Vec::new(), plan.ranges[k]));
        }
        pieces.last_mut().unwrap().1.push(row as u32);
    }
    pieces.sort_by_key(|(key, _, _)| *key);
    pieces
        .into_iter()
        .map(|(_, rows, range)| {
            let consecutive = rows.windows(2).all(|pair| pair[1] == pair[0] + 1);
            (rows, range && consecutive)
        })
        .collect()
}

/// The new value of a number row in pass `pass`.
fn number(plan: &PassPlan, pass: usize, row: usize, current: f64) -> f64 {
    if (row * 7 + pass).is_multiple_of(plan.keep) {
        current
    } else {
        current + 1.0
    }
}

/// The new value of an enum row in pass `pass`.
fn variant(plan: &PassPlan, pass: usize, row: usize, current: u32) -> u32 {
    if plan.refused == Some(row) {
        5
    } else if (row * 7 + pass).is_multiple_of(plan.keep) {
        current
    } else {
        (current + 1) % 3
    }
}

/// Everything the store shows about the written set after the passes.
#[derive(Debug, PartialEq)]
struct ModelPrint {
    results: Vec<Result<usize, StoreError>>,
    tick: Tick,
    ids: Vec<InstanceId>,
    numbers: Vec<f64>,
    modes: Vec<u32>,
    added: Vec<Tick>,
    changed: Vec<Tick>,
    log: Vec<Option<Vec<usize>>>,
    logged: usize,
    pending_dirty: usize,
    dirty: Vec<(InstanceId, strata_component_store::FieldMask)>,
    events: Vec<StoreEvent>,
    still_shared: bool,
}

/// Builds the case's world and runs its passes, in parallel (`par`) or through one column
/// writer over the pieces' rows one piece after another.
fn run_case(case: &Case, par: bool) -> ModelPrint {
    let (mut w, c, n, ats) = counted_as(case.rows, case.observed);
    let mode = w.field(c, "mode");
    for &i in &case.removals {
        if i < ats.len() {
            let _ = w.store.remove(ats[i], c);
        }
    }
    for &(i, x) in &case.writes {
        if i < ats.len() {
            let _ = w.store.write(ats[i], c, n, x);
        }
    }
    if case.take_dirty {
        w.store.take_dirty(c).unwrap();
    }
    w.store.drain_events();
    let snapshot = case.snapshot.then(|| w.store.snapshot());
    let len = w.store.set(c).unwrap().len();
    let mut results = Vec::new();
    if case.enumeration {
        if par {
            let mut writer = w.store.par_writer::<u32>(c, mode).unwrap();
            for (pass, plan) in case.passes.iter().enumerate() {
                let pieces = pieces_of(plan, len);
                results.push(par_pass(&mut writer, case, &pieces, |row, current| {
                    variant(plan, pass, row, current)
                }));
            }
        } else {
            let mut writer = w.store.column_writer::<u32>(c, mode).unwrap();
            for (pass, plan) in case.passes.iter().enumerate() {
                let rows: Vec<u32> = pieces_of(plan, len).into_iter().flat_map(|p| p.0).collect();
                results.push(writer.update_indexed(
                    rows.len(),
                    |k| (rows[k] as usize, k),
                    |current, k| variant(plan, pass, rows[k] as usize, *current),
                ));
            }
        }
    } else if par {
        let mut writer = w.store.par_writer::<f64>(c, n).unwrap();
        for (pass, plan) in case.passes.iter().enumerate() {
            let pieces = pieces_of(plan, len);
            results.push(par_pass(&mut writer, case, &pieces, |row, current| {
                number(plan, pass, row, current)
            }));
        }
    } else {
        let mut writer = w.store.column_writer::<f64>(c, n).unwrap();
        for (pass, plan) in case.passes.iter().enumerate() {
            let rows: Vec<u32> = pieces_of(plan, len).into_iter().flat_map(|p| p.0).collect();
            results.push(writer.update_indexed(
                rows.len(),
                |k| (rows[k] as usize, k),
                |current, k| number(plan, pass, rows[k] as usize, *current),
            ));
        }
    }
    let still_shared = snapshot
        .as_ref()
        .is_some_and(|s| w.store.shares_set_with(s, c));
    let tick = w.store.tick();
    let set = w.store.set(c).unwrap();
    let print = ModelPrint {
        results,
        tick,
        ids: set.ids().to_vec(),
        numbers: set.values::<f64>(n).unwrap().to_vec(),
        modes: set.values::<u32>(mode).unwrap().to_vec(),
        added: set.added_ticks().to_vec(),
        changed: set.changed_ticks().to_vec(),
        log: (0..=tick.0)
            .map(|b| set.changes_since(Tick(b)).map(|ch| ch.rows().collect()))
            .collect(),
        logged: set.logged_changes(),
        pending_dirty: set.pending_dirty(),
        dirty: Vec::new(),
        events: Vec::new(),
        still_shared,
    };
    ModelPrint {
        dirty: w.store.take_dirty(c).unwrap(),
        events: w.store.drain_events(),
        ..print
    }
}

/// One parallel pass setting each row of `pieces` to `new(row, current)`: through functions
/// (`ParWriter::update`) or, when the case says so, through the values computed beforehand
/// from the values stored before the pass (`ParWriter::copy_from`; pieces share no row), on
/// the case's runner.
fn par_pass<T: Scalar + Copy + Send + Sync>(
    writer: &mut ParWriter<'_, T>,
    case: &Case,
    pieces: &[(Vec<u32>, bool)],
    new: impl Fn(usize, T) -> T + Sync,
) -> Result<usize, StoreError> {
    let given: Vec<Piece<'_>> = piece_list(pieces);
    let new = &new;
    let f = |p: usize| {
        let rows = &pieces[p].0;
        move |current: &T, i: usize| new(rows[i] as usize, *current)
    };
    if case.given {
        let stored = writer.values();
        let values: Vec<Vec<T>> = pieces
            .iter()
            .map(|(rows, _)| {
                rows.iter()
                    .map(|&row| new(row as usize, stored[row as usize]))
                    .collect()
            })
            .collect();
        let values: Vec<&[T]> = values.iter().map(Vec::as_slice).collect();
        if case.threads {
            writer.copy_from(&Threads, &given, &values)
        } else {
            writer.copy_from(&InOrder, &given, &values)
        }
    } else if case.threads {
        writer.update(&Threads, &given, f)
    } else {
        writer.update(&InOrder, &given, f)
    }
}

fn piece_list(pieces: &[(Vec<u32>, bool)]) -> Vec<Piece<'_>> {
    pieces
        .iter()
        .map(|(rows, range)| match (range, rows.first(), rows.last()) {
            (true, Some(first), Some(last)) => Piece::Rows(*first as usize..*last as usize + 1),
            _ => Piece::Listed(rows),
        })
        .collect()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    /// The contract of `ParWriter::update` and `ParWriter::copy_from`: the store ends as after
    /// `update_indexed` of one column writer over the pieces' rows, one piece after another in
    /// the order given, pass after pass, for any runner; a snapshot keeps sharing the set
    /// while nothing changes.
    #[test]
    fn a_parallel_writer_ends_as_the_serial_writer_over_its_pieces_in_order(case in case()) {
        let serial = run_case(&case, false);
        let parallel = run_case(&case, true);
        proptest::prop_assert_eq!(parallel, serial);
    }
}

/// A runner that runs every input and then panics, as a broken runner might.
struct Broken;

impl ChunkRunner for Broken {
    fn run<I, O, F>(&self, inputs: Vec<I>, f: &F) -> Vec<O>
    where
        I: Send,
        O: Send,
        F: Fn(I) -> O + Sync,
    {
        let outputs: Vec<O> = inputs.into_iter().map(f).collect();
        drop(outputs);
        panic!("a runner that fails after its tasks ran");
    }
}

/// The rows whose `n` a pass that then unwound stored (all rows held 0.0 before): each is
/// tracked in full (changed tick within the store's, dirty and counted, listed to a reader from
/// before or that reader told to scan, one event each when `observed`) and no other row is.
/// Returns them.
#[track_caller]
fn check_tracked_after_unwinding(
    w: &mut World,
    c: ComponentId,
    n: FieldId,
    ats: &[InstanceRef],
    before: Tick,
    observed: bool,
) -> Vec<usize> {
    let set = w.store.set(c).unwrap();
    let values = set.values::<f64>(n).unwrap();
    let stored: Vec<usize> = (0..ats.len()).filter(|&row| values[row] != 0.0).collect();
    let changed: Vec<usize> = (0..ats.len())
        .filter(|&row| set.changed_ticks().get(row).expect("a row of the set") > before)
        .collect();
    assert_eq!(changed, stored);
    assert!(set.changed_ticks().iter().all(|t| t <= w.store.tick()));
    if let Some(listed) = set.changes_since(before) {
        let listed: Vec<usize> = listed.rows().collect();
        assert!(stored.iter().all(|row| listed.contains(row)));
    }
    assert_eq!(set.pending_dirty(), stored.len());
    let dirty = w.store.take_dirty(c).unwrap();
    assert_eq!(
        dirty.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
        ids(ats, stored.iter().copied())
    );
    assert_eq!(w.store.set(c).unwrap().pending_dirty(), 0);
    let mut events: Vec<InstanceId> = w
        .store
        .drain_events()
        .into_iter()
        .map(|e| match e {
            StoreEvent::Changed { id, .. } => id,
            other => panic!("unexpected event {other:?}"),
        })
        .collect();
    events.sort_unstable();
    let expected = if observed {
        ids(ats, stored.iter().copied())
    } else {
        Vec::new()
    };
    assert_eq!(events, expected, "one event per stored row, when observed");
    stored
}

#[test]
fn a_pass_whose_function_panics_records_every_row_it_stored() {
    let listed: Vec<u32> = (100..200).collect();
    for pieces in [
        vec![Piece::Rows(0..100), Piece::Rows(100..200)],
        vec![Piece::Rows(100..200), Piece::Rows(0..100)],
        vec![Piece::Listed(&listed), Piece::Rows(0..100)],
    ] {
        let (mut w, c, n, ats) = counted(200);
        let before = w.store.tick();
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut writer = w.store.par_writer::<f64>(c, n).unwrap();
            writer.update(&Threads, &pieces, |piece| {
                let late = pieces[piece].len() == 100 && pieces[piece] != Piece::Rows(0..100);
                move |value: &f64, i: usize| {
                    assert!(!late || i < 50, "a function that fails part-way");
                    value + 1.0
                }
            })
        }));
        assert!(unwound.is_err());
        let stored = check_tracked_after_unwinding(&mut w, c, n, &ats, before, true);
        // The other piece finished; the failing one stored at most the rows before the panic.
        assert!((0..100).all(|row| stored.contains(&row)), "{stored:?}");
        assert!(stored.iter().all(|row| *row < 150), "{stored:?}");
    }
}

#[test]
fn a_pass_whose_runner_panics_leaves_the_tracking_whole() {
    let (mut w, c, n, ats) = counted_as(300, false);
    let before = w.store.tick();
    // Few enough rows for the change log, which a reader from before would read.
    let pieces = [Piece::Rows(0..10), Piece::Rows(70..75)];
    let bump = |_| |value: &f64, _: usize| value + 1.0;
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut writer = w.store.par_writer::<f64>(c, n).unwrap();
        // A first pass binds the set (a runner is asked to run only once it is private).
        assert_eq!(
            writer.update(&InOrder, &[Piece::Rows(200..201)], bump),
            Ok(1)
        );
        writer.update(&Broken, &pieces, bump)
    }));
    assert!(unwound.is_err());
    let rows: Vec<usize> = (0..10).chain(70..75).chain([200]).collect();
    let set = w.store.set(c).unwrap();
    assert!(set.changed_ticks().iter().all(|t| t <= w.store.tick()));
    if let Some(listed) = set.changes_since(before) {
        let listed: Vec<usize> = listed.rows().collect();
        assert!(rows.iter().all(|row| listed.contains(row)));
    }
    assert_eq!(set.pending_dirty(), rows.len());
    let dirty: Vec<InstanceId> = w
        .store
        .take_dirty(c)
        .unwrap()
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert_eq!(dirty, ids(&ats, rows.into_iter()));
}

/// The serial column writer's passes keep the same promise as the parallel ones: a function
/// that panics part-way leaves every row it stored tracked in full, the store's tick past their
/// changed ticks, and the value-write counter counting them, whichever loop the pass took
/// (dense or indexed, a change log that takes the pass or not, observed or not).
#[test]
fn a_serial_pass_whose_function_panics_records_every_row_it_stored() {
    for (len, stop) in [(40, 20), (200, 100), (200, 130), (200, 0)] {
        for observed in [false, true] {
            for indexed in [false, true] {
                let (mut w, c, n, ats) = counted_as(len, observed);
                w.store.track_value_count(c, n, true).unwrap();
                let before = w.store.tick();
                let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    let mut writer = w.store.column_writer::<f64>(c, n).unwrap();
                    let mut calls = 0;
                    let mut bump = move |value: &f64| {
                        assert!(calls != stop, "a function that fails part-way");
                        calls += 1;
                        value + 1.0
                    };
                    if indexed {
                        writer.update_indexed(len, |k| (k, k), |value, _| bump(value))
                    } else {
                        writer.update_dense(&vec![(); len], |value, ()| bump(value))
                    }
                }));
                assert!(unwound.is_err());
                let stored = check_tracked_after_unwinding(&mut w, c, n, &ats, before, observed);
                let case =
                    format!("{len} rows, stop {stop}, observed {observed}, indexed {indexed}");
                assert_eq!(stored, (0..stop).collect::<Vec<_>>(), "{case}");
                assert_eq!(w.store.value_count(), stop as u64, "{case}: counted");
                let tick = w.store.tick();
                assert_eq!(
                    tick.0,
                    before.0 + u64::from(stop > 0),
                    "{case}: one tick for the pass"
                );
            }
        }
    }
}

#[test]
fn values_not_one_per_row_of_each_piece_are_refused_and_change_nothing() {
    let (mut w, c, n, _) = counted(10);
    let tick = w.store.tick();
    let mut writer = w.store.par_writer::<f64>(c, n).unwrap();
    let pieces = [Piece::Rows(0..3), Piece::Rows(5..7)];
    let (three, two, one) = ([1.0, 2.0, 3.0], [4.0, 5.0], [6.0]);
    for values in [
        &[&three[..], &one[..]][..],
        &[&three[..]],
        &[&three, &two, &one],
    ] {
        let refused = writer.copy_from(&InOrder, &pieces, values);
        assert!(
            matches!(refused, Err(StoreError::RowOutOfRange { .. })),
            "{refused:?}"
        );
    }
    assert_eq!(writer.copy_from(&InOrder, &pieces, &[&three, &two]), Ok(5));
    drop(writer);
    assert_eq!(w.store.tick(), Tick(tick.0 + 1));
    let values = w.store.set(c).unwrap().values::<f64>(n).unwrap().to_vec();
    assert_eq!(values[..7], [1.0, 2.0, 3.0, 0.0, 0.0, 4.0, 5.0]);
}
