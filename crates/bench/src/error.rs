//! The error type of `strata-bench`.
//!
//! Invariant: every failure the harness can report is a [`BenchError`] variant whose message
//! names the workload or file concerned, so the tool never has to panic on bad input.

use std::io;
use std::path::PathBuf;
use std::process::ExitStatus;

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
    /// Two registered workloads share a library, name and size, so that key no longer selects
    /// one workload.
    #[error(
        "workload `{workload}` (library/name/size) is registered more than once; keys must be unique because a child process selects its workload by key"
    )]
    DuplicateWorkload {
        /// The key registered twice, as `library/name/size`.
        workload: String,
    },
    /// `--run-one` named no registered workload.
    #[error("no workload is exactly `{workload}` (library/name/size; see `--list`)")]
    UnknownWorkload {
        /// The key asked for, as given.
        workload: String,
    },
    /// The child process of a workload could not be started.
    #[error("cannot start the child process for workload `{workload}`: {source}")]
    Spawn {
        /// The workload's name.
        workload: String,
        /// What the operating system said.
        source: io::Error,
    },
    /// The child process of a workload failed or crashed; its own messages went to standard error.
    #[error("workload `{workload}` failed in its child process ({status})")]
    ChildFailed {
        /// The workload's name.
        workload: String,
        /// How the child ended: a non-zero exit code or a signal.
        status: ExitStatus,
    },
    /// The child process of a workload succeeded but did not print its record.
    #[error("the child process of workload `{workload}` printed no usable record: {reason}")]
    ChildOutput {
        /// The workload's name.
        workload: String,
        /// What was wrong with its standard output.
        reason: String,
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
