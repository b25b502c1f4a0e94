//! Workloads of parallel field writes: Strata's fixture and routine of the head-to-head
//! `parallel_write` (a parallel query pass, `Pass::par_update_each`, registered through
//! [`crate::head_to_head`] by `query::Strata`), and the parallel overlay
//! (`strata-parallel-overlay`): `overlay_parallel_write`, the same writes from four overlay
//! writers, then recording and committing a million field writes from several writers, against
//! writing them directly.
//!
//! Invariant: the two `parallel_write` workloads keep one store across samples, as the peers
//! keep one world, and every run writes a value no earlier run wrote, so every write is a
//! change; every other workload starts each sample from a private copy of the same store (the
//! copy is made and touched in setup), so no timed region pays for a copy-on-write of the set.

use std::hint::black_box;
use std::ops::Range;

use strata_arena::{Arena, ClassId};
use strata_component_store::{
    ComponentDef, ComponentId, FieldDef, FieldId, InstanceRef, Store, Value,
};
use strata_parallel_overlay::{
    NoOrder, Overlay, OverlayError, RunReport, Spare, Writer, WriterRank, commit, run_parallel,
    run_parallel_with_spare,
};
use strata_query::{Chunks, Query, QuerySpec};

use crate::harness::Workload;
use crate::head_to_head::time_parallel_writes;

const MILLION: usize = 1_000_000;

/// The entities of `parallel_write`, for Strata and every peer (and of
/// `overlay_parallel_write`).
pub const PARALLEL_WRITE_SIZE: u64 = 1_000_000;
/// The writers of `parallel_write` (Strata's chunks), each owning a contiguous range of the
/// rows; also the overlay writers of `overlay_parallel_write`.
pub const PARALLEL_WRITERS: u64 = 4;
/// The threads of the pool `parallel_write` runs on.
pub const PARALLEL_THREADS: usize = 2;

/// The rows writer `writer` of `writers` owns among `n`: a contiguous share, the shares in
/// writer order and together covering `0..n` once.
pub fn writer_rows(writer: u64, writers: u64, n: u64) -> Range<u64> {
    let share = |w: u64| n * w / writers.max(1);
    share(writer)..share(writer + 1)
}

/// The workloads, in run order.
pub fn workloads() -> Vec<Workload> {
    vec![
        record_only(),
        commit_only(4),
        commit_only(1),
        run_and_commit(4, Path::Typed, Memory::Spare),
        run_and_commit(1, Path::Typed, Memory::Spare),
        run_and_commit(4, Path::Typed, Memory::Fresh),
        run_and_commit(4, Path::Dynamic, Memory::Spare),
        direct_writes(),
        overlay_parallel_write(),
    ]
}

/// A store with `n` rows of a one-field number component.
fn base(n: usize) -> (Store, ComponentId, FieldId, Vec<InstanceRef>) {
    let (_, store, component, field, ats) = world(n);
    (store, component, field, ats)
}

/// [`base`] with its arena.
fn world(n: usize) -> (Arena, Store, ComponentId, FieldId, Vec<InstanceRef>) {
    let mut arena = Arena::standard();
    let mut store = Store::new();
    let component = match store.install(
        ComponentDef::new("Heat").field(FieldDef::number("t", 0.0)),
        arena.classes(),
    ) {
        Ok(c) => c,
        Err(error) => panic!("benchmark fixture: {error}"),
    };
    let made = match arena.create_many(ClassId::ENTITY, None, n) {
        Ok(made) => made,
        Err(error) => panic!("benchmark fixture: {error}"),
    };
    let ats: Vec<InstanceRef> = made
        .into_iter()
        .map(|(id, slot)| InstanceRef::new(id, slot))
        .collect();
    if let Err(error) = store
        .insert_many(&ats, ClassId::ENTITY, component)
        .map(|_| ())
    {
        panic!("benchmark fixture: {error}");
    }
    (arena, store, component, FieldId::from_index(0), ats)
}

/// A private copy of the base store: snapshot, then one write so the set is copied now.
fn private_copy(base: &Store, component: ComponentId, field: FieldId, first: InstanceRef) -> Store {
    let mut store = base.snapshot();
    let _ = store.write(first, component, field, -1.0);
    store
}

fn commit_only(writers: usize) -> Workload {
    Workload::new(
        format!("overlay_commit_1m_{writers}_writers"),
        MILLION as u64,
        "sort write sets by rank, conflict scan of the shared column (row-owner array), then each writer's log in stretches through a typed column writer (rows checked against their instances)",
        move |b| {
            let (base, component, field, ats) = base(MILLION);
            b.iter_with_setup(
                || {
                    let store = private_copy(&base, component, field, ats[0]);
                    let sets: Vec<_> = (0..writers)
                        .map(|w| {
                            let mut overlay =
                                Overlay::new(WriterRank::system(w as u64, w as u64), &store);
                            let rows = (w..MILLION).step_by(writers);
                            if let Err(error) = record(&mut overlay, component, field, rows) {
                                panic!("benchmark fixture: {error}");
                            }
                            overlay.finish()
                        })
                        .collect();
                    (store, Some(sets))
                },
                |(store, sets)| commit(store, sets.take().unwrap_or_default(), &NoOrder),
            );
        },
    )
}

fn record_only() -> Workload {
    Workload::new(
        "overlay_record_1m_1_writer",
        MILLION as u64,
        "one writer records a million rows through a typed column handle into its overlay (row index, log arrays); the write set is dropped outside the timed region",
        move |b| {
            let (store, component, field, _) = base(MILLION);
            b.iter(|| {
                let mut overlay = Overlay::new(WriterRank::system(0, 0), &store);
                if let Err(error) = record(&mut overlay, component, field, 0..MILLION) {
                    panic!("benchmark fixture: {error}");
                }
                overlay.finish()
            });
        },
    )
}

/// How a workload's writers record.
#[derive(Clone, Copy)]
enum Path {
    /// Through a typed column handle (`Overlay::column`).
    Typed,
    /// Through `Overlay::write_row` with dynamic values.
    Dynamic,
}

/// Where a workload's overlays get their memory.
#[derive(Clone, Copy)]
enum Memory {
    /// From a `Spare` kept across samples, as an engine keeps one across frames.
    Spare,
    /// Freshly allocated every sample.
    Fresh,
}

/// Records `row as f64` for each of `rows` through a typed column handle.
fn record(
    overlay: &mut Overlay<'_>,
    component: ComponentId,
    field: FieldId,
    rows: impl Iterator<Item = usize>,
) -> Result<(), OverlayError> {
    let mut column = overlay.column::<f64>(component, field)?;
    for row in rows {
        column.write(row, row as f64)?;
    }
    Ok(())
}

/// Records `row as f64` for each of `rows` through `write_row`.
fn record_dynamic(
    overlay: &mut Overlay<'_>,
    component: ComponentId,
    field: FieldId,
    rows: impl Iterator<Item = usize>,
) -> Result<(), OverlayError> {
    for row in rows {
        overlay.write_row(component, row, field, Value::Number(row as f64))?;
    }
    Ok(())
}

fn run_and_commit(writers: usize, path: Path, memory: Memory) -> Workload {
    let (name, mechanism) = match (path, memory) {
        (Path::Typed, Memory::Spare) => (
            format!("overlay_run_commit_1m_{writers}_writers"),
            "writers (rows strided by writer) record through a typed column handle into overlays on a 2-thread rayon pool, then commit; log memory recycled across samples through a Spare, as across frames",
        ),
        (Path::Typed, Memory::Fresh) => (
            format!("overlay_run_commit_1m_{writers}_writers_cold"),
            "as overlay_run_commit, but every sample's overlays allocate (and page-fault) fresh memory",
        ),
        (Path::Dynamic, _) => (
            format!("overlay_run_commit_1m_{writers}_writers_dynamic"),
            "as overlay_run_commit, but each write through Overlay::write_row with a dynamic Value (set, field and type checked per write)",
        ),
    };
    Workload::new(name, MILLION as u64, mechanism, move |b| {
        let (base, component, field, ats) = base(MILLION);
        let pool = pool(2);
        let spare = Spare::new();
        let work: Vec<Writer<usize>> = (0..writers)
            .map(|w| Writer {
                rank: WriterRank::system(w as u64, w as u64),
                work: w,
            })
            .collect();
        let run = move |w: &usize, overlay: &mut Overlay<'_>| {
            let rows = (*w..MILLION).step_by(writers);
            match path {
                Path::Typed => record(overlay, component, field, rows),
                Path::Dynamic => record_dynamic(overlay, component, field, rows),
            }
        };
        b.iter_with_setup(
            || private_copy(&base, component, field, ats[0]),
            |store| {
                let report = match memory {
                    Memory::Spare => {
                        run_parallel_with_spare(store, &pool, &work, run, &NoOrder, &spare)
                    }
                    Memory::Fresh => run_parallel(store, &pool, &work, run, &NoOrder),
                };
                report.commit.applied
            },
        );
    })
}

fn direct_writes() -> Workload {
    Workload::new(
        "overlay_baseline_direct_1m",
        MILLION as u64,
        "the same million writes straight into the store through a ColumnWriter (no overlay)",
        move |b| {
            let (base, component, field, ats) = base(MILLION);
            b.iter_with_setup(
                || private_copy(&base, component, field, ats[0]),
                |store| {
                    let mut writer = match store.column_writer::<f64>(component, field) {
                        Ok(writer) => writer,
                        Err(error) => panic!("benchmark fixture: {error}"),
                    };
                    let mut changed = 0;
                    for row in 0..MILLION {
                        changed += usize::from(match writer.write(row, row as f64) {
                            Ok(changed) => changed,
                            Err(error) => panic!("benchmark fixture: {error}"),
                        });
                    }
                    black_box(changed)
                },
            );
        },
    )
}

/// A rayon pool of `threads` threads, for the parallel workloads.
fn pool(threads: usize) -> rayon::ThreadPool {
    match rayon::ThreadPoolBuilder::new().num_threads(threads).build() {
        Ok(pool) => pool,
        Err(error) => panic!("benchmark fixture: {error}"),
    }
}

/// Strata's world of `parallel_write`: `n` rows of `Heat`, the pool the passes run on and the
/// cached query over `Heat`.
pub struct ParallelWorld {
    /// The arena of the rows.
    pub arena: Arena,
    /// The store of the rows.
    pub store: Store,
    /// `Heat`'s one field.
    pub field: FieldId,
    /// The pool of [`PARALLEL_THREADS`] threads.
    pub pool: rayon::ThreadPool,
    /// The cached query over `Heat`.
    pub query: Query,
}

/// The world of `parallel_write` over `n` rows.
pub fn parallel_world(n: u64) -> ParallelWorld {
    let (arena, store, component, field, _) = world(n as usize);
    let pool = pool(PARALLEL_THREADS);
    let query = match Query::new(QuerySpec::new().with(component)) {
        Ok(query) => query,
        Err(error) => panic!("benchmark fixture: {error}"),
    };
    ParallelWorld {
        arena,
        store,
        field,
        pool,
        query,
    }
}

/// One run of `parallel_write`: a pass of the cached query over `Heat` writes `value` into
/// every row, its matches cut into [`PARALLEL_WRITERS`] chunks on `pool`. Returns the rows
/// changed.
pub fn write_pass(
    query: &mut Query,
    arena: &Arena,
    store: &mut Store,
    pool: &rayon::ThreadPool,
    field: FieldId,
    value: f64,
) -> usize {
    let written = pool.install(|| {
        let pass = query.run(arena, store)?;
        pass.par_update_each::<f64>(
            store,
            (0, field),
            Chunks::Count(PARALLEL_WRITERS as usize),
            move |_| value,
        )
    });
    match written {
        Ok(written) => written,
        Err(error) => panic!("benchmark fixture: {error}"),
    }
}

/// The overlay writers of `overlay_parallel_write` over `n` rows: writer `w` has rank
/// `system(w, w)` and owns the rows [`writer_rows`] gives it.
fn range_writers(n: u64) -> Vec<Writer<Range<usize>>> {
    (0..PARALLEL_WRITERS)
        .map(|w| {
            let rows = writer_rows(w, PARALLEL_WRITERS, n);
            Writer {
                rank: WriterRank::system(w, w),
                work: rows.start as usize..rows.end as usize,
            }
        })
        .collect()
}

/// One run of `overlay_parallel_write`: every writer records `value` for each row it owns into
/// its overlay through a typed column handle (one `OverlayColumn::write_run` over its rows), on
/// `pool`, then `run_parallel_with_spare` commits the write sets in rank order.
fn write_through_overlays(
    store: &mut Store,
    pool: &rayon::ThreadPool,
    writers: &[Writer<Range<usize>>],
    component: ComponentId,
    field: FieldId,
    value: f64,
    spare: &Spare,
) -> RunReport {
    run_parallel_with_spare(
        store,
        pool,
        writers,
        |rows, overlay| {
            let mut column = overlay.column::<f64>(component, field)?;
            column.write_run(rows.start, rows.clone().map(|_| value))
        },
        &NoOrder,
        spare,
    )
}

fn overlay_parallel_write() -> Workload {
    Workload::new(
        "overlay_parallel_write",
        PARALLEL_WRITE_SIZE,
        "the writes of parallel_write through the overlay path for writers whose rows may overlap: 4 writers on a 2-thread rayon pool, each recording its contiguous quarter of the rows into its own overlay over the shared store as one run of values (Overlay::column, OverlayColumn::write_run; run_parallel_with_spare: log memory recycled across runs, as across frames); then the commit in rank order: the writers' runs lie apart and their rows have not moved, so one parallel pass of the store's ParWriter writes them in place (a piece per 64k rows of a writer, compare-before-write, changed tick, dirty bit; change log, dirty list and events merged in rank order)",
        move |b| {
            let n = PARALLEL_WRITE_SIZE as usize;
            let (_, mut store, component, field, _) = world(n);
            let pool = pool(PARALLEL_THREADS);
            let writers = range_writers(PARALLEL_WRITE_SIZE);
            let spare = Spare::new();
            time_parallel_writes(b, |value| {
                write_through_overlays(&mut store, &pool, &writers, component, field, value, &spare)
                    .commit
                    .applied
            });
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writer_rows_split_contiguously_and_cover_every_row() {
        let ranges: Vec<Range<u64>> = (0..4).map(|w| writer_rows(w, 4, 1_000_000)).collect();
        assert_eq!(
            ranges,
            [
                0..250_000,
                250_000..500_000,
                500_000..750_000,
                750_000..1_000_000
            ]
        );
        let uneven: Vec<Range<u64>> = (0..4).map(|w| writer_rows(w, 4, 10)).collect();
        assert_eq!(uneven, [0..2, 2..5, 5..7, 7..10]);
    }

    /// Runs of `parallel_write` change every row to the run's value, with change tracking.
    #[test]
    fn parallel_write_changes_every_row_with_tracking() {
        let n = 10_000;
        let (arena, mut store, component, field, ats) = world(n);
        let pool = pool(PARALLEL_THREADS);
        let mut query = Query::new(QuerySpec::new().with(component)).expect("a valid spec");
        let mut changed =
            Query::new(QuerySpec::new().with(component).changed(component)).expect("a valid spec");
        changed.run(&arena, &store).expect("the query runs");
        for value in [1.0, 2.0] {
            let tick = store.tick();
            let written = write_pass(&mut query, &arena, &mut store, &pool, field, value);
            assert_eq!(written, n);
            assert_eq!(store.tick().0, tick.0 + 1);
            for at in &ats {
                assert_eq!(store.get::<f64>(*at, component, field), Ok(&value));
            }
            assert_eq!(changed.run(&arena, &store).map(|pass| pass.len()), Ok(n));
            assert_eq!(store.take_dirty(component).map(|dirty| dirty.len()), Ok(n));
        }
    }

    /// Runs of `overlay_parallel_write` change every row to the run's value, and nothing
    /// conflicts.
    #[test]
    fn overlay_parallel_write_changes_every_row() {
        let n = 10_000;
        let (_, mut store, component, field, ats) = world(n);
        let spare = Spare::new();
        // The second run records into the memory the first handed back.
        for value in [1.0, 2.0] {
            let report = write_through_overlays(
                &mut store,
                &pool(PARALLEL_THREADS),
                &range_writers(n as u64),
                component,
                field,
                value,
                &spare,
            );
            assert!(report.errors.is_empty(), "{:?}", report.errors);
            assert_eq!(report.commit.writers, 4);
            assert_eq!(report.commit.applied, n);
            assert_eq!(report.commit.unchanged, 0);
            assert!(report.commit.conflicts.is_empty());
            assert!(report.commit.refusals.is_empty());
            for at in &ats {
                assert_eq!(store.get::<f64>(*at, component, field), Ok(&value));
            }
            assert!(!spare.is_empty());
        }
    }
}
