//! The error type of `strata-bench`.
//!
//! Invariant: every failure the harness can report is a [`BenchError`] variant whose message
//! names the workload or file concerned, so the tool never has to panic on bad input.

use std::io;
use std::path::PathBuf;

/// Everything that can go wrong while parsing arguments, running workloads or writing results.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// The command line could not be understood.
    #[error("{0}")]
    Usage(String),
    /// A workload body returned without calling a [`crate::harness::Bencher`] method.
    #[error(
        "workload `{workload}` never called `Bencher::iter`, `iter_with_setup` or `iter_with_setup_owned`"
    )]
    NoMeasurement {
        /// The workload's name.
        workload: String,
    },
    /// A workload body called [`crate::harness::Bencher`] methods more than once.
    #[error(
        "workload `{workload}` measured more than once; its body must call one `Bencher` method once"
    )]
    RepeatedMeasurement {
        /// The workload's name.
        workload: String,
    },
    /// A results file could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file that was being written.
        path: PathBuf,
        /// What the operating system said.
        source: io::Error,
    },
    /// The results could not be encoded as JSON.
    #[error("cannot encode the results as JSON: {0}")]
    Json(#[from] serde_json::Error),
}
