//! Head-to-head workloads of peer ECS libraries (the `peers` feature): `bevy_ecs`, `hecs` and
//! `shipyard`, one module each, doing the same work on the same data as Strata's workloads of
//! the same names.
//!
//! The names, sizes, data and value constructors the peers share with Strata's side are in
//! [`crate::data`], re-exported here.
//!
//! Work a library has no way to do is listed by [`unsupported`] instead of being registered.
//!
//! Invariant: every peer workload measures its library through that library's public API, in
//! the way its documentation recommends for the job, with the world built outside the timed
//! routine; the data comes from the constructors of [`crate::data`], so all libraries work on equal values.
//! Each workload's `mechanism` says what the library does.

pub mod bevy;
pub mod hecs;
pub mod jecs;
pub mod shipyard;

pub use crate::data::*;
use crate::harness::{Bencher, Workload};
use crate::report::Unsupported;

/// The entities, writers and pool threads of `parallel_write`, shared with Strata's side.
pub use crate::overlay::{PARALLEL_THREADS, PARALLEL_WRITE_SIZE, PARALLEL_WRITERS};

/// The workload names in run order; each library's workloads are sorted into it.
const ORDER: [&str; 24] = [
    "spawn",
    "spawn_batch",
    "iter2",
    "frag_iter",
    "add_remove",
    "small_driver_join",
    "changed_filter",
    "changed_filter_frames",
    "despawn_respawn",
    "reference_cleanup",
    "world_clone",
    "world_clone_then_write",
    "parallel_write",
    "bulk_spawn",
    "bulk_set",
    "bulk_remove",
    "bulk_despawn",
    "rollback_frame",
    "schedule",
    "frame_overhead",
    "luau_iter2",
    "luau_iter2_handles",
    "luau_spawn",
    "luau_changed",
];

/// The Luau workloads: compared with jecs, a Luau ECS, not with the Rust libraries.
const LUAU: [&str; 4] = [
    "luau_iter2",
    "luau_iter2_handles",
    "luau_spawn",
    "luau_changed",
];

/// Every peer workload, grouped by workload and size so the libraries of one comparison run
/// one after another (bevy_ecs, hecs, shipyard).
pub fn workloads() -> Vec<Workload> {
    let mut workloads = bevy::workloads();
    workloads.extend(hecs::workloads());
    workloads.extend(shipyard::workloads());
    workloads.extend(jecs::workloads());
    workloads.sort_by_key(|w| {
        let position = ORDER.iter().position(|name| *name == w.name());
        (position.unwrap_or(ORDER.len()), w.size())
    });
    workloads
}

/// The work a peer library cannot do, with the reason.
pub fn unsupported() -> Vec<Unsupported> {
    let no_world_copy = "bevy_ecs 0.20 has no way to clone a World or copy entities into \
                         another World (EntityCloner clones entities within one world); \
                         rebuilding a world entity by entity would measure something else";
    let no_scheduler = "hecs has no scheduler or system abstraction: running three functions one \
                        after another would measure something else";
    ["world_clone", "world_clone_then_write", "rollback_frame"]
        .into_iter()
        .map(|workload| Unsupported {
            library: bevy::LIBRARY.to_owned(),
            workload: workload.to_owned(),
            reason: no_world_copy.to_owned(),
        })
        .chain(["schedule", "frame_overhead"].map(|workload| Unsupported {
            library: hecs::LIBRARY.to_owned(),
            workload: workload.to_owned(),
            reason: no_scheduler.to_owned(),
        }))
        .chain(
            LUAU.iter()
                .filter(|_| jecs::source_path().is_none())
                .map(|workload| Unsupported {
                    library: jecs::LIBRARY.to_owned(),
                    workload: (*workload).to_owned(),
                    reason: "jecs was not fetched (`cargo xtask bench --peers` fetches it with \
                             `npm pack @rbxts/jecs` when npm is available)"
                        .to_owned(),
                }),
        )
        .collect()
}

/// A rayon pool of [`PARALLEL_THREADS`] threads, for the `parallel_write` of the libraries
/// that run on rayon.
pub(crate) fn rayon_pool() -> rayon::ThreadPool {
    match rayon::ThreadPoolBuilder::new()
        .num_threads(PARALLEL_THREADS)
        .build()
    {
        Ok(pool) => pool,
        Err(error) => panic!("benchmark fixture: {error}"),
    }
}

/// Times `write_all` for `parallel_write`, handing it the run's number (1, 2, 3, ...) as the
/// value to write: every write then changes the stored value without the world being reset
/// between runs.
pub(crate) fn time_parallel_writes(b: &mut Bencher, mut write_all: impl FnMut(f64)) {
    let mut run = 0.0;
    b.iter(|| {
        run += 1.0;
        write_all(run);
    });
}

/// What a changed visit over a world of `n` positions (`position(i)`) returns right after
/// frame `frame` nudged its rows: those rows, and the sum of their new `x`.
#[cfg(test)]
pub(crate) fn written_tally(n: u64, frame: u64) -> (u64, f32) {
    tally((0..n).filter(|&i| is_written(i, frame)).map(|i| {
        let mut p = position(i);
        p.nudge();
        p.x
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::check_unique_keys;

    #[test]
    fn every_library_registers_every_workload_but_the_unsupported() {
        let workloads = workloads();
        check_unique_keys(&workloads).expect("peer keys are unique");
        let unsupported = unsupported();
        for library in [bevy::LIBRARY, hecs::LIBRARY, shipyard::LIBRARY] {
            for name in ORDER.iter().filter(|n| !LUAU.contains(n)) {
                let name = *name;
                let sizes: Vec<u64> = workloads
                    .iter()
                    .filter(|w| w.library_name() == library && w.name() == name)
                    .map(Workload::size)
                    .collect();
                let expected: &[u64] = match name {
                    "spawn" | "spawn_batch" | "iter2" => &ENTITY_SIZES,
                    "frag_iter" => &[FRAG_KINDS * FRAG_PER_KIND],
                    "add_remove" => &[ADD_REMOVE_SIZE],
                    "small_driver_join" => &[JOIN_SIZES[0].0, JOIN_SIZES[1].0],
                    "changed_filter" | "changed_filter_frames" => &[CHANGED_SIZE],
                    "despawn_respawn" => &[DESPAWN_SIZE],
                    "reference_cleanup" => &[REFERENCE_SIZES.0],
                    "world_clone" | "world_clone_then_write" => &[CLONE_SIZE],
                    "parallel_write" => &[PARALLEL_WRITE_SIZE],
                    "bulk_spawn" | "bulk_set" | "bulk_remove" | "bulk_despawn" => &[BULK_SIZE],
                    "schedule" => &[4 * schedule::GROUP],
                    "frame_overhead" => &[EMPTY_SYSTEMS],
                    "rollback_frame" => &[crate::data::ROLLBACK_SIZE],
                    _ => unreachable!(),
                };
                let is_unsupported = unsupported
                    .iter()
                    .any(|u| u.library == library && u.workload == name);
                let expected = if is_unsupported { &[][..] } else { expected };
                assert_eq!(sizes, expected, "{library} {name}");
            }
        }
        // Grouped by workload and size, libraries in a fixed order within a group.
        let order: Vec<(String, u64, String)> = workloads
            .iter()
            .map(|w| (w.name().to_owned(), w.size(), w.library_name().to_owned()))
            .collect();
        assert_eq!(
            order[..4],
            [
                ("spawn".to_owned(), 10_000, "bevy_ecs".to_owned()),
                ("spawn".to_owned(), 10_000, "hecs".to_owned()),
                ("spawn".to_owned(), 10_000, "shipyard".to_owned()),
                ("spawn".to_owned(), 1_000_000, "bevy_ecs".to_owned()),
            ]
        );
    }
}
