//! The `strata-bench` binary: runs the registered workloads; see [`strata_bench::cli::USAGE`].
//!
//! Invariant: all behaviour lives in the library, so this file only hands over the arguments.

use std::process::ExitCode;

fn main() -> ExitCode {
    strata_bench::cli::main_with(
        std::env::args().skip(1),
        strata_bench::all_workloads(),
        strata_bench::all_unsupported(),
    )
}
