//! Head-to-head workloads of peer ECS libraries (the `peers` feature): `bevy_ecs`, `hecs` and
//! `shipyard`, one module each implementing [`crate::head_to_head::Library`], so they do the
//! same work on the same data as Strata's workloads of the same names, registered by the
//! head-to-head table; and jecs, a Luau ECS, for the Luau workloads.
//!
//! The names, sizes, data and value constructors the peers share with Strata's side are in
//! [`crate::data`], re-exported here.
//!
//! Work a library has no way to do is listed by [`unsupported`] instead of being registered.
//!
//! Invariant: every peer workload measures its library through that library's public API, in
//! the way its documentation recommends for the job, with the world built outside the timed
//! routine; the data comes from the constructors of [`crate::data`], so all libraries work on
//! equal values. Each workload's `mechanism` says what the library does.

pub mod bevy;
pub mod hecs;
pub mod jecs;
pub mod shipyard;

pub use crate::data::*;
use crate::harness::Workload;
use crate::head_to_head::{self, Entrant, entry};
use crate::report::Unsupported;

/// The entities, writers and pool threads of `parallel_write`, shared with Strata's side.
pub use crate::overlay::{PARALLEL_THREADS, PARALLEL_WRITE_SIZE, PARALLEL_WRITERS};

/// The Rust peer libraries of the head-to-head table, in the order they run within one
/// workload and size.
pub const RUST_PEERS: [Entrant; 3] = [
    entry::<bevy::Bevy>,
    entry::<hecs::Hecs>,
    entry::<shipyard::Shipyard>,
];

/// The Luau workloads: compared with jecs, a Luau ECS, not with the Rust libraries.
const LUAU: [&str; 5] = [
    "luau_iter2",
    "luau_iter2_handles",
    "luau_spawn",
    "luau_spawn_bulk",
    "luau_changed",
];

/// Every peer workload: the head-to-head table's, grouped by workload and size so the
/// libraries of one comparison run one after another (bevy_ecs, hecs, shipyard), then jecs's
/// Luau workloads.
pub fn workloads() -> Vec<Workload> {
    let (mut workloads, _) = head_to_head::register(&RUST_PEERS);
    workloads.extend(jecs::workloads());
    workloads
}

/// The work a peer library cannot do, with the reason.
pub fn unsupported() -> Vec<Unsupported> {
    let (_, mut unsupported) = head_to_head::register(&RUST_PEERS);
    unsupported.extend(
        LUAU.iter()
            .filter(|_| jecs::source_path().is_none())
            .map(|workload| Unsupported {
                library: jecs::LIBRARY.to_owned(),
                workload: (*workload).to_owned(),
                reason: "jecs was not fetched (`cargo xtask bench --peers` fetches it with \
                         `npm pack @rbxts/jecs` when npm is available)"
                    .to_owned(),
            }),
    );
    unsupported
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Within one workload and size the libraries run one after another, in a fixed order.
    #[test]
    fn the_libraries_of_one_comparison_run_together() {
        let order: Vec<(String, u64, String)> = workloads()
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
