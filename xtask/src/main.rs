//! `cargo xtask`: Strata's developer tasks, run through the alias in `.cargo/config.toml`. The
//! command line is parsed by clap from `Cli` and `Task` (`cargo xtask --help`, and `--help` after
//! each task); a command line it refuses exits with code 2, a task that fails with 1.
//!
//! Invariant: xtask depends on no engine crate; it drives them by running cargo, so it builds
//! quickly and stays usable while an engine crate does not compile.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a developer tool reports on the terminal"
)]

mod bench;
mod ci;
mod codegen;
mod fuzz;
mod schema;
mod serve_cost;
mod soak;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context as _, bail};

/// The command line, as clap parses it (`cargo xtask --help`, `cargo xtask TASK --help`).
#[derive(Debug, PartialEq, clap::Parser)]
#[command(
    name = "xtask",
    bin_name = "cargo xtask",
    about = "Strata's developer tasks: benchmarks, CI steps, fuzzing, soaking, code generation \
             and schema checks.",
    // The doc comment above is for readers of this file, not for --help.
    long_about = None
)]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

/// The tasks.
#[derive(Debug, PartialEq, clap::Subcommand)]
enum Task {
    /// Builds strata-bench in release mode, runs its workloads and writes the results.
    ///
    /// Runs the workloads whose LIBRARY/NAME contains a PATTERN (all without --filter; with
    /// --peers also those of bevy_ecs, hecs and shipyard, and jecs's when npm can fetch it),
    /// prints the results and writes target/bench/results.json, results.md and results.svg.
    Bench(bench::Args),
    /// Runs the steps of .ci/run: formatting, clippy, tests, the bench crate with its peers,
    /// the supply-chain check.
    Ci,
    /// Runs the fuzz targets of fuzz/ with cargo-fuzz (nightly).
    ///
    /// Runs each TARGET (all when none is named) for S seconds, minimises any crash and keeps
    /// it under fuzz/regressions/TARGET/, which `cargo test` replays.
    Fuzz(fuzz::Args),
    /// Runs every model-based property test (built in release mode) again and again.
    ///
    /// Each model runs until it has run N cases or its share of M minutes has passed; the
    /// task reports the cases and failures of each.
    Soak(soak::Args),
    /// Measures what `strata run --serve` costs the stress place's frames.
    ///
    /// Runs the release strata on examples/places/stress with --realtime, with --serve and no
    /// client, and with --serve and one client polling once a second, ROUNDS times in turn,
    /// and prints each run's stepping time per frame against --realtime's.
    ServeCost(serve_cost::Args),
    /// Writes the Luau type definitions of the game API and of each example place.
    ///
    /// types/strata.d.luau (the game API) and examples/places/NAME/types.d.luau (each example
    /// place's components), from what `strata types` prints.
    Codegen,
    /// Builds strata-schema (strata-cli) in release mode and runs it on component
    /// schema files.
    ///
    /// Everything after `schema` goes to strata-schema unchanged (`check [--json]
    /// FILE.luau...`; `cargo xtask schema --help` is strata-schema's help). It prints each
    /// definition or error (--json: one JSON document) and exits 0 if all are valid, 1 if any
    /// is not, 2 on misuse.
    #[command(disable_help_flag = true)]
    Schema {
        /// The arguments of strata-schema, such as `check --json Health.luau`.
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_parser = clap::value_parser!(OsString)
        )]
        args: Vec<OsString>,
    },
}

/// Parses a command line given as one line of words, for the tasks' tests.
#[cfg(test)]
fn parse(line: &str) -> Result<Task, clap::Error> {
    let words = std::iter::once("xtask").chain(line.split_whitespace());
    <Cli as clap::Parser>::try_parse_from(words).map(|cli| cli.task)
}

fn main() -> ExitCode {
    // A command line clap refuses exits here with code 2 (and `--help` with 0).
    let cli = <Cli as clap::Parser>::parse();
    match run_task(cli.task) {
        Ok(code) => code,
        Err(err) => {
            // Printed by hand: anyhow's `Termination` output would add a backtrace whenever
            // RUST_BACKTRACE is set, which buries the message.
            eprintln!("xtask: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// Runs `task` and returns the exit code it asks for.
fn run_task(task: Task) -> anyhow::Result<ExitCode> {
    let root = project_root();
    match task {
        // Schema file paths go through as they are, UTF-8 or not.
        Task::Schema { args } => schema::run(&root, args),
        Task::Bench(args) => bench::run(&root, &args).map(|()| ExitCode::SUCCESS),
        Task::Ci => ci::run(&root).map(|()| ExitCode::SUCCESS),
        Task::Fuzz(args) => fuzz::run(&root, &args).map(|()| ExitCode::SUCCESS),
        Task::Soak(args) => soak::run(&root, &args).map(|()| ExitCode::SUCCESS),
        Task::ServeCost(args) => serve_cost::run(&root, &args).map(|()| ExitCode::SUCCESS),
        Task::Codegen => codegen::run(&root).map(|()| ExitCode::SUCCESS),
    }
}

/// The workspace root: xtask's manifest folder is one level below it.
fn project_root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.parent().unwrap_or(manifest_dir).to_path_buf()
}

/// A `cargo` command using the cargo that runs xtask, so the toolchain stays the same.
fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo")))
}

/// Runs `command` with inherited standard streams and fails unless it exits successfully.
fn run_command(command: &mut Command) -> anyhow::Result<()> {
    let shown = format!("{command:?}");
    let status = command
        .status()
        .with_context(|| format!("cannot start {shown}"))?;
    if !status.success() {
        bail!("{shown} failed with {status}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::error::ErrorKind;

    use super::*;

    #[test]
    fn tasks_parse_and_mistakes_are_named() {
        assert_eq!(parse("ci").unwrap(), Task::Ci);
        assert_eq!(parse("codegen").unwrap(), Task::Codegen);
        for (line, kind) in [
            ("ci extra", ErrorKind::UnknownArgument),
            ("codegen --check", ErrorKind::UnknownArgument),
            ("benhc", ErrorKind::InvalidSubcommand),
            ("", ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand),
        ] {
            let err = parse(line).expect_err(line);
            assert_eq!(err.kind(), kind, "{line}");
            assert_eq!(err.exit_code(), 2, "{line}");
        }
        let message = parse("benhc").unwrap_err().render().to_string();
        assert!(
            message.contains("tip: a similar subcommand exists: 'bench'"),
            "{message}"
        );
        // Every task has its help, on standard output with exit code 0; `schema`'s is
        // strata-schema's own.
        for line in [
            "--help",
            "help",
            "bench --help",
            "ci --help",
            "fuzz -h",
            "soak --help",
            "serve-cost --help",
            "codegen --help",
            "help schema",
        ] {
            let err = parse(line).expect_err(line);
            assert_eq!(err.kind(), ErrorKind::DisplayHelp, "{line}");
            assert!(!err.use_stderr() && err.exit_code() == 0, "{line}");
        }
        let help = parse("bench --help").unwrap_err().render().to_string();
        assert!(
            help.contains("Usage: cargo xtask bench [OPTIONS]")
                && help.contains("--filter <PATTERN>"),
            "{help}"
        );
    }

    /// Whatever follows `schema` reaches strata-schema as it is, flags and `--help` included.
    #[test]
    fn schema_arguments_pass_through() {
        for line in [
            "check --json a.luau -- -odd.luau",
            "--help",
            "check -h",
            "--json check",
            "lint",
            "",
        ] {
            let expected: Vec<OsString> = line.split_whitespace().map(OsString::from).collect();
            assert_eq!(
                parse(&format!("schema {line}")).unwrap(),
                Task::Schema { args: expected },
                "{line}"
            );
        }
    }
}
