//! `strata-bench`: Strata's benchmark harness and its registry of named workloads.
//!
//! A [`Workload`] names an operation, a size, the library measured and the mechanism it uses,
//! and a body that drives a [`Bencher`]: setup goes in a closure the bencher calls before
//! starting the clock, and the routine's output is dropped after stopping it. Each layer
//! registers its workloads in its own module (see [`arena`] and [`store`]); the workloads that
//! compare libraries are written once in [`head_to_head`], which Strata and, with the `peers`
//! feature, the peer libraries implement under the same names for the same work;
//! [`all_workloads`] gathers them, and the `strata-bench` binary runs each in a
//! child process of its own (see [`cli`]), so neither its timings nor its peak resident memory
//! carry another workload's allocator or cache state, and writes JSON, Markdown and SVG.
//!
//! Invariant: every registered workload has a unique [`WorkloadKey`] (library, name and size;
//! names alone are shared between libraries and sizes), so a key selects one workload for a
//! child process and a record in a results file identifies one workload; the binary refuses to
//! run otherwise. `cargo xtask bench` is the usual way in.
//!
//! ```
//! use strata_bench::{Bencher, Workload};
//!
//! let sum = Workload::new("vec_sum", 10_000, "slice iterator", |b: &mut Bencher| {
//!     b.iter_with_setup(
//!         || (0..10_000_u64).collect::<Vec<_>>(), // not timed
//!         |values| values.iter().sum::<u64>(),    // timed
//!     );
//! });
//! assert_eq!(sum.name(), "vec_sum");
//! ```
//!
//! # How a run is measured
//!
//! - The binary (`cli.rs`) is a parent by default: it runs each selected workload in a child
//!   process, the same executable started with `--run-one LIBRARY/NAME/SIZE`, which prints its
//!   record as one JSON line; the parent checks the record is the one it asked for. A child that
//!   fails, crashes or prints no record is reported by its key while the others still run, and
//!   the exit code says a workload failed. `--in-process` runs everything in one process, for
//!   profilers.
//! - Setup is never timed, and a workload measures its library through that library's public
//!   API. Every timed write changes the stored value on every run, for every library, so no
//!   equal-write check can skip work. `Bencher::iter_frames` times a frame loop on one state
//!   kept across samples, each frame's preparation untimed.
//! - Peak resident memory is the high-water mark (`VmHWM`) at the end of the warm-up run: in a
//!   child, the process's own few MiB plus the workload's setup, one run and its output. In one
//!   process the mark is reset as each workload starts (`rss.rs`).
//! - Allocations are counted by `alloc::CountingAllocator`, which the binary installs as the
//!   global allocator: after its samples, each `Bencher` method runs the routine once more with
//!   counting on over exactly the region the clock times, never setup, frame preparation or the
//!   drop of the output, and the record holds that run's calls and bytes. Counting is never on
//!   during a timed run, and costs a relaxed load and a branch otherwise. The counts are
//!   process-wide (a parallel routine's pool threads count too); without the allocator the
//!   fields are absent.
//! - The `peers` feature (off by default: the peers add minutes of compile time) registers the
//!   same work on bevy_ecs, hecs and shipyard, and the Luau workloads on jecs, under Strata's
//!   names and sizes, each through its own idiomatic paths and change detection, named in the
//!   record's `mechanism`. Work a library has no API for is listed as `Unsupported` with a
//!   reason, never as a number. CI compiles the crate with the feature, and `deny.toml` checks
//!   it with every feature on.

pub mod alloc;
pub mod arena;
pub mod cli;
pub mod data;
pub mod error;
pub mod facade;
pub mod harness;
pub mod head_to_head;
pub mod luau;
pub mod overlay;
#[cfg(feature = "peers")]
pub mod peers;
pub mod query;
pub mod report;
pub mod rollback;
mod rss;
pub mod scheduler;
pub mod schema;
pub mod store;
pub mod world;

pub use error::BenchError;
pub use harness::{
    Bencher, STRATA, SampleConfig, Summary, Workload, WorkloadKey, check_unique_keys,
};
pub use report::{BenchRecord, Machine, Report, Unsupported};

/// Every registered workload, layer by layer, in run order; with the `peers` feature the peer
/// libraries' workloads follow Strata's.
pub fn all_workloads() -> Vec<Workload> {
    let mut workloads = arena::workloads();
    workloads.extend(store::workloads());
    workloads.extend(query::workloads());
    workloads.extend(facade::workloads());
    workloads.extend(schema::workloads());
    workloads.extend(scheduler::workloads());
    workloads.extend(overlay::workloads());
    workloads.extend(luau::workloads());
    #[cfg(feature = "peers")]
    workloads.extend(peers::workloads());
    workloads
}

/// The work a registered library cannot do, which the reports show as unsupported rather than
/// missing; empty without the `peers` feature.
pub fn all_unsupported() -> Vec<Unsupported> {
    #[cfg(feature = "peers")]
    let unsupported = peers::unsupported();
    #[cfg(not(feature = "peers"))]
    let unsupported = Vec::new();
    unsupported
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_workload_keys_are_unique() {
        let workloads = all_workloads();
        assert!(!workloads.is_empty());
        if let Err(err) = check_unique_keys(&workloads) {
            panic!("{err}");
        }
    }

    /// The registered workloads of the libraries `keep` accepts, one `library/name/size
    /// items=N` line each, sorted by key: what a change of structure must leave alone.
    fn listing(keep: impl Fn(&str) -> bool) -> String {
        let mut lines: Vec<(WorkloadKey, u64)> = all_workloads()
            .iter()
            .filter(|w| keep(w.library_name()))
            .map(|w| (w.key(), w.items_per_run()))
            .collect();
        lines.sort();
        let mut out = String::new();
        for (key, items) in lines {
            out.push_str(&format!("{key} items={items}\n"));
        }
        out
    }

    /// Strata's workloads: names, sizes and items as registered before the head-to-head
    /// workloads were gathered into one table.
    #[test]
    fn strata_registers_the_same_workloads() {
        insta::assert_snapshot!(listing(|library| library == STRATA));
    }

    /// The peer libraries' workloads and the work they cannot do, as before the head-to-head
    /// table; jecs registers its four Luau workloads only where it was fetched, so it is
    /// checked apart.
    #[cfg(feature = "peers")]
    #[test]
    fn peers_register_the_same_workloads() {
        let rust_peer = |library: &str| library != STRATA && library != peers::jecs::LIBRARY;
        let mut unsupported: Vec<String> = all_unsupported()
            .into_iter()
            .filter(|u| rust_peer(&u.library))
            .map(|u| format!("{}/{} unsupported\n", u.library, u.workload))
            .collect();
        unsupported.sort();
        insta::assert_snapshot!(listing(rust_peer) + &unsupported.concat());
        let jecs: Vec<String> = all_workloads()
            .iter()
            .filter(|w| w.library_name() == peers::jecs::LIBRARY)
            .map(|w| w.key().to_string())
            .collect();
        let fetched = [
            "jecs/luau_iter2/100000",
            "jecs/luau_iter2_handles/100000",
            "jecs/luau_frame_1m/1000000",
            "jecs/luau_frame_1m_groups/1000000",
            "jecs/luau_spawn/10000",
            "jecs/luau_spawn_bulk/10000",
            "jecs/luau_changed/100000",
        ];
        assert!(jecs.is_empty() || jecs == fetched, "{jecs:?}");
    }

    /// Unsupported work names a registered workload name and a library that registers nothing
    /// under it.
    #[test]
    fn unsupported_work_is_never_registered() {
        let workloads = all_workloads();
        for u in all_unsupported() {
            assert!(
                workloads.iter().any(|w| w.name() == u.workload),
                "{u:?} names no registered workload"
            );
            assert!(
                !workloads
                    .iter()
                    .any(|w| w.name() == u.workload && w.library_name() == u.library),
                "{u:?} is registered after all"
            );
        }
    }
}
