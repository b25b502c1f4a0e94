//! The `strata-bench` binary: runs the registered workloads; see [`strata_bench::cli`]
//! (`strata-bench --help` for the flags).
//!
//! Invariant: all behaviour lives in the library, so this file only hands over the arguments.

use std::process::ExitCode;

/// Counts the allocations of one run of each workload (see `strata_bench::alloc`); outside
/// that counted run it only checks a flag per allocation.
#[global_allocator]
static ALLOCATOR: strata_bench::alloc::CountingAllocator = strata_bench::alloc::CountingAllocator;

fn main() -> ExitCode {
    strata_bench::cli::main_with(
        std::env::args().skip(1),
        strata_bench::all_workloads(),
        strata_bench::all_unsupported(),
    )
}
