//! Workloads of the parallel overlay (`strata-parallel-overlay`): recording and committing a
//! million field writes from several writers, against writing them directly.
//!
//! Invariant: each sample starts from a private copy of the same store (the copy is made and
//! touched in setup), so no timed region pays for a copy-on-write of the set.

use std::hint::black_box;

use strata_arena::{Arena, ClassId};
use strata_component_store::{
    ComponentDef, ComponentId, FieldDef, FieldId, InstanceRef, Store, Value,
};
use strata_parallel_overlay::{NoOrder, Overlay, Writer, WriterRank, commit, run_parallel};

use crate::harness::Workload;

const MILLION: usize = 1_000_000;

/// The workloads, in run order.
pub fn workloads() -> Vec<Workload> {
    vec![
        commit_only(4),
        commit_only(1),
        run_and_commit(4),
        run_and_commit(1),
        direct_writes(),
    ]
}

/// A store with `n` rows of a one-field number component.
fn base(n: usize) -> (Store, ComponentId, FieldId, Vec<InstanceRef>) {
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
    (store, component, FieldId::from_index(0), ats)
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
        "sort write sets by rank, conflict scan of the shared column (row-owner array), then each live write through the store's checked row write",
        move |b| {
            let (base, component, field, ats) = base(MILLION);
            b.iter_with_setup(
                || {
                    let store = private_copy(&base, component, field, ats[0]);
                    let sets: Vec<_> = (0..writers)
                        .map(|w| {
                            let mut overlay =
                                Overlay::new(WriterRank::system(w as u64, w as u64), &store);
                            for row in (w..MILLION).step_by(writers) {
                                let _ = overlay.write_row(
                                    component,
                                    row,
                                    field,
                                    Value::Number(row as f64),
                                );
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

fn run_and_commit(writers: usize) -> Workload {
    Workload::new(
        format!("overlay_run_commit_1m_{writers}_writers"),
        MILLION as u64,
        "writers record into their overlays on a 2-thread rayon pool (row-indexed log once a column is swept), then commit",
        move |b| {
            let (base, component, field, ats) = base(MILLION);
            let pool = match rayon::ThreadPoolBuilder::new().num_threads(2).build() {
                Ok(pool) => pool,
                Err(error) => panic!("benchmark fixture: {error}"),
            };
            let work: Vec<Writer<usize>> = (0..writers)
                .map(|w| Writer {
                    rank: WriterRank::system(w as u64, w as u64),
                    work: w,
                })
                .collect();
            b.iter_with_setup(
                || private_copy(&base, component, field, ats[0]),
                |store| {
                    run_parallel(
                        store,
                        &pool,
                        &work,
                        |w, overlay| {
                            for row in (*w..MILLION).step_by(writers) {
                                overlay.write_row(
                                    component,
                                    row,
                                    field,
                                    Value::Number(row as f64),
                                )?;
                            }
                            Ok(())
                        },
                        &NoOrder,
                    )
                    .commit
                    .applied
                },
            );
        },
    )
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
                        changed += usize::from(writer.write(row, row as f64));
                    }
                    black_box(changed)
                },
            );
        },
    )
}
