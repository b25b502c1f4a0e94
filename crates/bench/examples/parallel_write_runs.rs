//! Runs `parallel_write`'s routine for a given library a given number of times, for an
//! instruction count under callgrind of the same work in Strata and in its peers. Run it with 0
//! runs and with N, and divide the difference by N × entities.
//!
//! ```text
//! cargo build --release -p strata-bench --features peers --example parallel_write_runs
//! valgrind --tool=callgrind --cache-sim=yes target/release/examples/parallel_write_runs strata 20 1000000
//! ```

use strata_bench::head_to_head::Library;
use strata_bench::peers::{bevy::Bevy, hecs::Hecs, shipyard::Shipyard};
use strata_bench::query::Strata;

/// The fixture, then `runs` runs writing the run's number into every `Heat`, as the workload
/// times them.
fn runs<L: Library>(runs: u32, n: u64) {
    let mut fixture = L::heated(n);
    for run in 1..=runs {
        drop(L::write_in_parallel(&mut fixture, f64::from(run)));
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let library = args.next().unwrap_or_else(|| "strata".to_owned());
    let count: u32 = args.next().and_then(|s| s.parse().ok()).unwrap_or(20);
    let n: u64 = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    match library.as_str() {
        "bevy" => runs::<Bevy>(count, n),
        "hecs" => runs::<Hecs>(count, n),
        "shipyard" => runs::<Shipyard>(count, n),
        _ => runs::<Strata>(count, n),
    }
}
