//! `cargo xtask`: Strata's developer tasks, run through the alias in `.cargo/config.toml`.
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
mod soak;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context as _, bail};

const USAGE: &str = "\
usage: cargo xtask <task>

tasks:
  bench [--quick] [--filter PATTERN]... [--peers]
        build strata-bench in release mode, run its workloads (those whose
        LIBRARY/NAME contains a PATTERN; with --peers also bevy_ecs, hecs and
        shipyard), print the results and write target/bench/results.json,
        results.md and results.svg
  ci    run the steps of .ci/run: formatting, clippy, tests, supply-chain check
  fuzz [TARGET]... [--time S]
        run the fuzz targets of fuzz/ with cargo-fuzz (nightly) for S seconds each
        (default 60; all targets when none is named), minimise any crash and keep it
        under fuzz/regressions/TARGET/, which `cargo test` replays
  soak [--cases N] [--minutes M]
        run every model-based property test (built in release mode) again and again
        until it has run N cases (default 100,000) or its share of M minutes has
        passed, and report the cases and failures of each
  codegen
        write the Luau type definitions: types/strata.d.luau (the game API) and
        examples/places/NAME/types.d.luau (each example place's components)
  schema check [--json] FILE.luau...
        build strata-schema (strata-schema-adoption) in release mode and check
        component schema files: print each definition or error (--json: one
        JSON document); exits 0 if all are valid, 1 if any is not, 2 on misuse";

/// A command line as the words a task's `Args::parse` takes, for the tasks' tests.
#[cfg(test)]
fn words(line: &str) -> Vec<String> {
    line.split_whitespace().map(str::to_owned).collect()
}

fn main() -> ExitCode {
    match run_task() {
        Ok(code) => code,
        Err(err) => {
            // Printed by hand: anyhow's `Termination` output would add a backtrace whenever
            // RUST_BACKTRACE is set, which buries a usage message.
            eprintln!("xtask: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the task the command line names and returns the exit code it asks for.
fn run_task() -> anyhow::Result<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    let root = project_root();
    let task = args.next();
    let task = match task.as_deref().map(|t| t.to_str()) {
        None => None,
        Some(Some(task)) => Some(task),
        Some(None) => bail!("the task name is not valid UTF-8\n\n{USAGE}"),
    };
    match task {
        // Schema file paths go through as they are, UTF-8 or not.
        Some("schema") => schema::run(&root, args),
        Some("bench") => {
            bench::run(&root, &bench::Args::parse(utf8_args(args)?)?)?;
            Ok(ExitCode::SUCCESS)
        }
        Some("ci") => {
            if let Some(extra) = args.next() {
                bail!(
                    "`ci` takes no arguments, got `{}`\n\n{USAGE}",
                    extra.to_string_lossy()
                );
            }
            ci::run(&root)?;
            Ok(ExitCode::SUCCESS)
        }
        Some("fuzz") => {
            fuzz::run(&root, &fuzz::Args::parse(utf8_args(args)?)?)?;
            Ok(ExitCode::SUCCESS)
        }
        Some("soak") => {
            soak::run(&root, &soak::Args::parse(utf8_args(args)?)?)?;
            Ok(ExitCode::SUCCESS)
        }
        Some("codegen") => {
            if let Some(extra) = args.next() {
                bail!(
                    "`codegen` takes no arguments, got `{}`\n\n{USAGE}",
                    extra.to_string_lossy()
                );
            }
            codegen::run(&root)?;
            Ok(ExitCode::SUCCESS)
        }
        Some("help" | "--help" | "-h") | None => {
            println!("{USAGE}");
            Ok(ExitCode::SUCCESS)
        }
        Some(other) => bail!("unknown task `{other}`\n\n{USAGE}"),
    }
}

/// The arguments as UTF-8 strings, or the first that is not.
fn utf8_args(args: impl IntoIterator<Item = OsString>) -> anyhow::Result<Vec<String>> {
    args.into_iter()
        .map(|arg| {
            arg.into_string().map_err(|arg| {
                anyhow::anyhow!("argument `{}` is not valid UTF-8", arg.to_string_lossy())
            })
        })
        .collect()
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
