//! `strata-bench`: Strata's benchmark harness and its registry of named workloads.
//!
//! A [`Workload`] names an operation, a size, the library measured and the mechanism it uses,
//! and a body that drives a [`Bencher`]: setup goes in a closure the bencher calls before
//! starting the clock, and the routine's output is dropped after stopping it. Each layer
//! registers its workloads in its own module (see [`arena`] and [`store`]); [`all_workloads`]
//! gathers them, and the `strata-bench` binary runs each in a child process of its own (see
//! [`cli`]), so neither its timings nor its peak resident memory carry another workload's
//! allocator or cache state, and writes JSON and Markdown.
//!
//! Invariant: every registered workload has a unique name (whatever its library and size), so
//! a name selects one workload for a child process and a record in a results file identifies
//! one workload; the binary refuses to run otherwise. `cargo xtask bench` is the usual way in.
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

pub mod arena;
pub mod cli;
pub mod error;
pub mod harness;
pub mod report;
mod rss;
pub mod store;

pub use error::BenchError;
pub use harness::{Bencher, STRATA, SampleConfig, Summary, Workload, check_unique_names};
pub use report::{BenchRecord, Machine, Report};

/// Every registered workload, layer by layer, in run order.
pub fn all_workloads() -> Vec<Workload> {
    let mut workloads = arena::workloads();
    workloads.extend(store::workloads());
    workloads
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_workload_names_are_unique() {
        let workloads = all_workloads();
        assert!(!workloads.is_empty());
        if let Err(err) = check_unique_names(&workloads) {
            panic!("{err}");
        }
    }
}
