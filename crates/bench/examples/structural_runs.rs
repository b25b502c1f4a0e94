//! Runs one structural workload's routine for a given library, for an instruction count
//! under callgrind of the same work in Strata and in its peers. Each run gets a fresh fixture,
//! as the workload's samples do. Run it once as it is and once with `fixture` last (the
//! fixtures only), and divide the difference by runs × entities.
//!
//! ```text
//! cargo build --release -p strata-bench --features peers --example structural_runs
//! valgrind --tool=callgrind target/release/examples/structural_runs strata despawn_respawn 3 100000
//! valgrind --tool=callgrind target/release/examples/structural_runs strata despawn_respawn 3 100000 fixture
//! ```
//!
//! Workloads: `spawn` (one at a time), `despawn_respawn`, `add_remove`, `bulk_despawn`,
//! `iter2`, `frag_iter` (its 520 entities whatever `n`), `small_driver_join` (`n` big, `n / 100`
//! small; these three make ten passes over one fixture per run),
//! `reference_cleanup`
//! (`n` holders, `n / 100` targets), `rollback_frame` and
//! `rollback_window` (ten of them on one fixture per run), and through `strata::World`
//! (whatever the library) `world_spawn`, `world_insert` and `world_despawn_respawn`.

use std::hint::black_box;

use strata_bench::facade;
use strata_bench::head_to_head::Library;
use strata_bench::peers::{bevy::Bevy, hecs::Hecs, shipyard::Shipyard};
use strata_bench::query::Strata;

/// The frames (or windows) each run of a rollback workload does on its fixture.
const ROLLBACK_FRAMES: u32 = 10;

/// The passes each run of `iter2`, `frag_iter` and `small_driver_join` makes over its fixture.
const KEPT_PASSES: u32 = 10;

/// `runs` fresh fixtures of `work`'s size `n`, each worked on once unless `fixture_only`.
fn runs<L: Library>(work: &str, runs: u32, n: u64, fixture_only: bool) {
    let work_too = !fixture_only;
    for _ in 0..runs {
        match work {
            "spawn" => {
                let mut world = L::empty();
                if work_too {
                    black_box(L::spawn_each(&mut world, n));
                }
            }
            // The facade's forms of the same work (Strata only).
            "world_spawn" => {
                let mut bodies = facade::body_world();
                if work_too {
                    black_box(facade::spawn_each(&mut bodies, n));
                }
            }
            "world_insert" => {
                let mut bodies = facade::body_world();
                if work_too {
                    black_box(facade::insert_each(&mut bodies, n));
                }
            }
            "world_despawn_respawn" => {
                let mut movers = facade::movers(n);
                if work_too {
                    black_box(facade::despawn_then_respawn(&mut movers));
                }
            }
            // One fixture per run, `frames` frames of rollback on it (none with `fixture`).
            "rollback_frame" | "rollback_window" => {
                let mut world = L::rollback_world(n);
                if work_too {
                    for _ in 0..ROLLBACK_FRAMES {
                        if work == "rollback_frame" {
                            black_box(L::rollback_once(&mut world));
                        } else {
                            black_box(L::rollback_window_once(&mut world));
                        }
                    }
                }
            }
            // `n` holders referring to `n / 100` targets, as the workload's 10k and 100.
            "reference_cleanup" => {
                let mut world = L::referencing(n, (n / 100).max(1));
                if work_too {
                    black_box(L::destroy_targets(&mut world));
                }
            }
            "add_remove" => {
                let mut world = L::with_a(n);
                if work_too {
                    black_box(L::add_then_remove(&mut world));
                }
            }
            // The kept-fixture workloads: the routine ten times on one fixture per run.
            "iter2" => {
                let mut bodies = L::bodies(n);
                if work_too {
                    for _ in 0..KEPT_PASSES {
                        black_box(L::advance_all(&mut bodies));
                    }
                }
            }
            "frag_iter" => {
                let mut world = L::fragmented();
                if work_too {
                    for _ in 0..KEPT_PASSES {
                        black_box(L::negate_all(&mut world));
                    }
                }
            }
            "small_driver_join" => {
                let mut world = L::joinable(n, (n / 100).max(1));
                if work_too {
                    for _ in 0..KEPT_PASSES {
                        black_box(L::join_sum(&mut world));
                    }
                }
            }
            "bulk_despawn" => {
                let mut world = L::bulk_bodies(n);
                if work_too {
                    black_box(L::despawn_all(&mut world));
                }
            }
            _ => {
                let mut world = L::movers(n);
                if work_too {
                    black_box(L::despawn_then_respawn(&mut world));
                }
            }
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let library = args.next().unwrap_or_else(|| "strata".to_owned());
    let work = args.next().unwrap_or_else(|| "despawn_respawn".to_owned());
    let count: u32 = args.next().and_then(|s| s.parse().ok()).unwrap_or(3);
    let n: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let fixture_only = args.next().is_some_and(|a| a == "fixture");
    match library.as_str() {
        "bevy" => runs::<Bevy>(&work, count, n, fixture_only),
        "hecs" => runs::<Hecs>(&work, count, n, fixture_only),
        "shipyard" => runs::<Shipyard>(&work, count, n, fixture_only),
        _ => runs::<Strata>(&work, count, n, fixture_only),
    }
}
