//! The command line of the `strata-bench` binary: argument parsing (clap, derived on `Cli`),
//! workload filtering, the run loop and writing the results.
//!
//! By default the binary is a parent: it selects the workloads, then runs each one in a child
//! process of its own, which is the same executable started again with the hidden arguments
//! `--run-one LIBRARY/NAME/SIZE [--quick]`. A child runs exactly the workload with that
//! [`WorkloadKey`] (names alone are shared between libraries and sizes), reports its progress on
//! standard error and prints its record as one line of JSON on standard output; the parent reads
//! that line back, checks it is the record of the workload it asked for, and writes the results
//! as if it had measured them itself. So no workload inherits another's allocator state, caches
//! or resident memory. `--in-process` runs all of them one after another in the parent instead,
//! which suits profilers.
//!
//! Invariant: progress and diagnostics go to standard error; standard output carries only the
//! Markdown table (or the help `--help` asks for), or in a child only the record's JSON line. When workloads run, the results
//! file is written even if none matched or some failed, and the exit code is non-zero only for
//! bad arguments, duplicate workload keys, failed workloads (a child that exits non-zero,
//! crashes or prints no record counts as one) or failed writes.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a benchmark tool reports on the terminal"
)]

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::SystemTime;

use crate::error::BenchError;
use crate::harness::{self, SampleConfig, Workload, WorkloadKey};
use crate::report::{self, BenchRecord, Machine, Report, Unsupported};

/// The hidden flag that makes the binary a child running one workload.
const RUN_ONE: &str = "--run-one";

/// The command line as clap parses it (`--help` shows it); [`Options`] is what it asks for.
///
/// The `--run-one` mode the parent uses to start its children is hidden from the help on
/// purpose.
#[derive(Debug, clap::Parser)]
#[command(
    name = "strata-bench",
    about = "Runs Strata's benchmark workloads, each in a child process of its own, and reports \
             their medians as a Markdown table (and JSON and SVG files on request).",
    // The doc comment above is for readers of this file, not for --help.
    long_about = None
)]
struct Cli {
    /// Fewer samples and a shorter time budget per workload (rough numbers).
    #[arg(long)]
    quick: bool,
    /// Run only workloads whose LIBRARY/NAME contains SUBSTR (`arena`, `hecs/`, `/spawn`);
    /// repeat the flag or separate several with commas to run the workloads matching any of
    /// them.
    #[arg(long = "filter", value_name = "SUBSTR")]
    filters: Vec<String>,
    /// Write the results as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Write the results table as Markdown to FILE.
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// Write a chart of time per item (log scale) as SVG to FILE, and one of Strata ÷ the
    /// fastest peer per workload beside it as ratios.svg.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// List the matching workloads and exit.
    #[arg(long)]
    list: bool,
    /// Run every workload in this process instead of one child process each (for profilers;
    /// peak RSS then includes what earlier workloads left).
    #[arg(long)]
    in_process: bool,
    /// Run only the workload with exactly this key and print its record as one JSON line (how
    /// the parent starts a child); takes no other option but `--quick`.
    #[arg(
        long = "run-one",
        value_name = "LIBRARY/NAME/SIZE",
        value_parser = workload_key,
        hide = true,
        conflicts_with_all = ["filters", "out", "markdown", "svg", "list", "in_process"]
    )]
    run_one: Option<WorkloadKey>,
}

/// The value of `--run-one`.
fn workload_key(text: &str) -> Result<WorkloadKey, String> {
    WorkloadKey::parse(text)
        .ok_or_else(|| "wants LIBRARY/NAME/SIZE, such as `strata/arena_create/1000000`".to_owned())
}

/// Which workloads to run, by substrings of `library/name` (whatever their size), so a pattern
/// may name a workload (`arena_create`), a library (`hecs/`) or a name's start (`/spawn`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    patterns: Vec<String>,
}

impl Filter {
    /// A filter that lets every workload through.
    pub fn everything() -> Filter {
        Filter {
            patterns: Vec::new(),
        }
    }

    /// Adds the comma-separated substrings of one `--filter` value; empty pieces are ignored.
    pub fn add(&mut self, value: &str) {
        self.patterns.extend(
            value
                .split(',')
                .map(str::trim)
                .filter(|piece| !piece.is_empty())
                .map(str::to_owned),
        );
    }

    /// Whether `text` passes: no patterns, or a pattern contained in `text`.
    pub fn matches(&self, text: &str) -> bool {
        self.patterns.is_empty() || self.patterns.iter().any(|p| text.contains(p.as_str()))
    }

    /// Whether the workload `name` of `library` passes, matched as `library/name`.
    pub fn matches_workload(&self, library: &str, name: &str) -> bool {
        self.matches(&format!("{library}/{name}"))
    }

    /// Whether the filter lets everything through.
    pub fn is_everything(&self) -> bool {
        self.patterns.is_empty()
    }

    /// The patterns, for messages.
    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }
}

/// Where the selected workloads run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// Each workload in a child process of its own (the default).
    Children,
    /// Every workload one after another in this process (`--in-process`).
    InProcess,
    /// Only the workload with exactly this key, its record printed as one JSON line on
    /// standard output (`--run-one LIBRARY/NAME/SIZE`, how the parent starts a child).
    RunOne(WorkloadKey),
}

/// The parsed command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Use [`SampleConfig::quick`] instead of [`SampleConfig::standard`].
    pub quick: bool,
    /// Which workloads to run.
    pub filter: Filter,
    /// Where to write the JSON results, if anywhere.
    pub out: Option<PathBuf>,
    /// Where to write the Markdown table, if anywhere.
    pub markdown: Option<PathBuf>,
    /// Where to write the SVG chart, if anywhere.
    pub svg: Option<PathBuf>,
    /// List the matching workloads instead of running them.
    pub list: bool,
    /// Where the workloads run.
    pub mode: Mode,
}

impl Options {
    /// Parses the arguments after the program name with clap: `--flag VALUE` and
    /// `--flag=VALUE` both work, a misspelt flag gets a suggestion.
    ///
    /// `--run-one LIBRARY/NAME/SIZE` may be combined with `--quick` only.
    ///
    /// # Errors
    ///
    /// clap's error for a command line it refuses (exit code 2, for standard error), and for
    /// `--help`, whose text the error carries (exit code 0, for standard output).
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Options, clap::Error> {
        let args = std::iter::once("strata-bench".to_owned()).chain(args);
        let cli = <Cli as clap::Parser>::try_parse_from(args)?;
        let mut filter = Filter::everything();
        for value in &cli.filters {
            filter.add(value);
        }
        let mode = match cli.run_one {
            Some(key) => Mode::RunOne(key),
            None if cli.in_process => Mode::InProcess,
            None => Mode::Children,
        };
        Ok(Options {
            quick: cli.quick,
            filter,
            out: cli.out,
            markdown: cli.markdown,
            svg: cli.svg,
            list: cli.list,
            mode,
        })
    }

    fn sample_config(&self) -> SampleConfig {
        if self.quick {
            SampleConfig::quick()
        } else {
            SampleConfig::standard()
        }
    }
}

/// Builds the command that runs the workload with key `key` in a child process.
///
/// A test can hand [`main_with_launcher`] another one, such as a shell that prints a record.
type Launcher<'a> = &'a dyn Fn(&WorkloadKey, bool) -> io::Result<Command>;

/// The arguments that make a child run the workload `key`, understood by [`Options::parse`].
fn child_args(key: &WorkloadKey, quick: bool) -> Vec<String> {
    let mut args = vec![RUN_ONE.to_owned(), key.to_string()];
    if quick {
        args.push("--quick".to_owned());
    }
    args
}

/// This executable started again with [`child_args`].
fn own_child_command(key: &WorkloadKey, quick: bool) -> io::Result<Command> {
    let mut command = Command::new(std::env::current_exe()?);
    command.args(child_args(key, quick));
    Ok(command)
}

/// Runs the binary on `args` (without the program name) over the registered `workloads`;
/// `unsupported` lists the work some library cannot do, which the reports show as such.
pub fn main_with(
    args: impl IntoIterator<Item = String>,
    workloads: Vec<Workload>,
    unsupported: Vec<Unsupported>,
) -> ExitCode {
    main_with_launcher(args, workloads, unsupported, &own_child_command)
}

/// [`main_with`], starting child processes with `launch`.
fn main_with_launcher(
    args: impl IntoIterator<Item = String>,
    workloads: Vec<Workload>,
    unsupported: Vec<Unsupported>,
    launch: Launcher<'_>,
) -> ExitCode {
    let options = match Options::parse(args) {
        Ok(options) => options,
        Err(err) => {
            // A refused command line on standard error with exit code 2, `--help` on standard
            // output with 0, as clap decides.
            let _ = err.print();
            return ExitCode::from(u8::try_from(err.exit_code()).unwrap_or(2));
        }
    };
    if let Err(err) = harness::check_unique_keys(&workloads) {
        eprintln!("strata-bench: {err}");
        return ExitCode::FAILURE;
    }
    let outcome = match &options.mode {
        Mode::RunOne(key) => match run_one(key, options.sample_config(), workloads) {
            Err(err @ BenchError::UnknownWorkload { .. }) => {
                eprintln!("strata-bench: {err}");
                return ExitCode::from(2);
            }
            outcome => outcome,
        },
        Mode::Children | Mode::InProcess => run(&options, workloads, unsupported, launch),
    };
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(err) => {
            eprintln!("strata-bench: {err}");
            ExitCode::FAILURE
        }
    }
}

/// Runs or lists the workloads `options` select; returns whether every workload succeeded.
fn run(
    options: &Options,
    workloads: Vec<Workload>,
    unsupported: Vec<Unsupported>,
    launch: Launcher<'_>,
) -> Result<bool, BenchError> {
    let mut selected: Vec<Workload> = workloads
        .into_iter()
        .filter(|w| options.filter.matches_workload(w.library_name(), w.name()))
        .collect();
    let unsupported: Vec<Unsupported> = unsupported
        .into_iter()
        .filter(|u| options.filter.matches_workload(&u.library, &u.workload))
        .collect();
    if options.list {
        for w in &selected {
            println!(
                "{}\t{}\t{}\t{}",
                w.name(),
                w.size(),
                w.library_name(),
                w.mechanism()
            );
        }
        for u in &unsupported {
            println!(
                "{}\t-\t{}\tunsupported: {}",
                u.workload, u.library, u.reason
            );
        }
        return Ok(true);
    }
    if selected.is_empty() {
        if options.filter.is_everything() {
            eprintln!("strata-bench: no workloads matched: none are registered yet");
        } else {
            eprintln!(
                "strata-bench: no workloads matched the filter {}",
                options.filter.patterns().join(", ")
            );
        }
    }
    let optimized = !cfg!(debug_assertions);
    if !optimized {
        eprintln!("strata-bench: warning: built without optimisations; run it with --release");
    }
    let date = report::rfc3339_utc(SystemTime::now());
    let config = options.sample_config();
    let (results, n_failed) = match options.mode {
        Mode::InProcess => run_in_process(&mut selected, config),
        Mode::Children | Mode::RunOne(_) => run_in_children(&selected, options.quick, launch),
    };
    let report = Report {
        machine: Machine::detect(),
        date,
        quick: options.quick,
        optimized,
        results,
        unsupported,
    };
    let markdown = report::render_markdown(&report);
    if let Some(path) = &options.out {
        let mut json = serde_json::to_string_pretty(&report)?;
        json.push('\n');
        write_file(path, &json)?;
    }
    if let Some(path) = &options.markdown {
        write_file(path, &markdown)?;
    }
    if let Some(path) = &options.svg {
        let ratios = report::ratio_chart_path(path);
        write_file(path, &report::render_svg(&report))?;
        write_file(&ratios, &report::render_ratio_svg(&report))?;
    }
    print!("{markdown}");
    if n_failed > 0 {
        eprintln!("strata-bench: {n_failed} workload(s) failed");
    }
    Ok(n_failed == 0)
}

/// Runs `workloads` one after another in this process; returns their records and the number
/// that failed.
fn run_in_process(workloads: &mut [Workload], config: SampleConfig) -> (Vec<BenchRecord>, usize) {
    let mut results = Vec::with_capacity(workloads.len());
    let mut n_failed = 0;
    for workload in workloads {
        match run_with_progress(workload, config, Workload::run) {
            Ok(record) => results.push(record),
            Err(_) => n_failed += 1,
        }
    }
    (results, n_failed)
}

/// Runs each of `workloads` in a child process started by `launch`, one at a time and in order;
/// returns the records read back and the number of workloads that failed.
///
/// A failure is reported on standard error, naming the workload, and the next workload runs.
fn run_in_children(
    workloads: &[Workload],
    quick: bool,
    launch: Launcher<'_>,
) -> (Vec<BenchRecord>, usize) {
    let mut results = Vec::with_capacity(workloads.len());
    let mut n_failed = 0;
    for workload in workloads {
        let key = workload.key();
        let outcome = launch(&key, quick)
            .map_err(|source| BenchError::Spawn {
                workload: key.to_string(),
                source,
            })
            .and_then(|mut command| run_child(&key, &mut command));
        match outcome {
            Ok(record) => results.push(record),
            Err(err) => {
                if let BenchError::ChildFailed { status, .. } = &err
                    && status.code().is_none()
                {
                    // Killed by a signal, the child most likely left its progress line open.
                    eprintln!();
                }
                eprintln!("strata-bench: {err}");
                n_failed += 1;
            }
        }
    }
    (results, n_failed)
}

/// Runs `command`, a child that should print the record of the workload `key`, and reads the
/// record back. The child's standard error goes straight to this process's.
fn run_child(key: &WorkloadKey, command: &mut Command) -> Result<BenchRecord, BenchError> {
    let output = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|source| BenchError::Spawn {
            workload: key.to_string(),
            source,
        })?;
    if !output.status.success() {
        return Err(BenchError::ChildFailed {
            workload: key.to_string(),
            status: output.status,
        });
    }
    parse_child_record(key, &output.stdout)
}

/// Reads the record of the workload `key` from a child's standard output: the last non-blank
/// line, which must be a JSON [`BenchRecord`] for that very workload (same library, name and
/// size). Earlier lines are ignored.
fn parse_child_record(key: &WorkloadKey, stdout: &[u8]) -> Result<BenchRecord, BenchError> {
    let bad = |reason: String| BenchError::ChildOutput {
        workload: key.to_string(),
        reason,
    };
    let text = std::str::from_utf8(stdout).map_err(|err| bad(format!("not UTF-8: {err}")))?;
    let line = text
        .lines()
        .rev()
        .find(|line| !line.trim().is_empty())
        .ok_or_else(|| bad("its standard output was empty".to_owned()))?;
    let record: BenchRecord =
        serde_json::from_str(line).map_err(|err| bad(format!("{err} in `{line}`")))?;
    let reported = record.key();
    if reported != *key {
        return Err(bad(format!("it reported workload `{reported}` instead")));
    }
    Ok(record)
}

/// Runs the workload with exactly the key `key` on its own, as a child does, and prints its
/// record as one JSON line; returns whether it succeeded.
fn run_one(
    key: &WorkloadKey,
    config: SampleConfig,
    workloads: Vec<Workload>,
) -> Result<bool, BenchError> {
    let Some(mut workload) = workloads.into_iter().find(|w| w.has_key(key)) else {
        return Err(BenchError::UnknownWorkload {
            workload: key.to_string(),
        });
    };
    match run_with_progress(&mut workload, config, Workload::run_alone) {
        Ok(record) => {
            println!("{}", serde_json::to_string(&record)?);
            Ok(true)
        }
        Err(_) => Ok(false),
    }
}

/// Measures `workload` with `measure`, reporting progress and the outcome on standard error.
fn run_with_progress(
    workload: &mut Workload,
    config: SampleConfig,
    measure: fn(&mut Workload, SampleConfig) -> Result<BenchRecord, BenchError>,
) -> Result<BenchRecord, BenchError> {
    eprint!(
        "{} {} ({}) ... ",
        workload.library_name(),
        workload.name(),
        report::format_size(workload.size())
    );
    let outcome = measure(workload, config);
    match &outcome {
        Ok(record) => eprintln!(
            "median {}, {} per item, {} samples, allocations per run {}, page faults per run {}",
            report::format_duration_ns(record.median_ns),
            report::format_duration_ns(record.ns_per_item),
            record.samples,
            report::format_allocations(record.alloc_calls, record.alloc_bytes),
            report::format_faults(record.page_faults)
        ),
        Err(err) => eprintln!("failed: {err}"),
    }
    outcome
}

/// Writes `contents` to `path`, creating its parent folders.
fn write_file(path: &Path, contents: &str) -> Result<(), BenchError> {
    let write_err = |source| BenchError::Write {
        path: path.to_owned(),
        source,
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(write_err)?;
    }
    fs::write(path, contents).map_err(write_err)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Options, clap::Error> {
        Options::parse(args.iter().map(|a| (*a).to_owned()))
    }

    /// Whether `args` are refused as a usage error: exit code 2, on standard error.
    fn refused(args: &[&str]) -> bool {
        parse(args).is_err_and(|err| err.use_stderr() && err.exit_code() == 2)
    }

    #[track_caller]
    fn check_filter(values: &[&str], name: &str, expect: bool) {
        let mut filter = Filter::everything();
        for value in values {
            filter.add(value);
        }
        assert_eq!(filter.matches(name), expect, "{values:?} on {name}");
    }

    #[test]
    fn filter_matching() {
        check_filter(&[], "arena_create", true);
        check_filter(&["arena"], "arena_create", true);
        check_filter(&["create"], "arena_create", true);
        check_filter(&["query"], "arena_create", false);
        check_filter(&["query", "create"], "arena_create", true);
        check_filter(&["query,create"], "arena_create", true);
        check_filter(&["query, snapshot"], "arena_create", false);
        check_filter(&["Arena"], "arena_create", false);
        // Empty pieces neither match everything nor count as patterns.
        check_filter(&[",", ""], "arena_create", true);
        check_filter(&["query,,"], "arena_create", false);
        let keyed = |values: &[&str], library: &str, name: &str| {
            let mut filter = Filter::everything();
            for value in values {
                filter.add(value);
            }
            filter.matches_workload(library, name)
        };
        assert!(keyed(&["arena"], "strata", "arena_create"));
        assert!(keyed(&["hecs/"], "hecs", "spawn"));
        assert!(!keyed(&["hecs/"], "strata", "spawn"));
        assert!(keyed(&["/spawn"], "bevy_ecs", "spawn_batch"));
        assert!(!keyed(&["/spawn"], "strata", "store_spawn_10k"));
        assert!(keyed(&["hecs/spawn"], "hecs", "spawn"));
        assert!(!keyed(&["hecs/spawn"], "shipyard", "spawn"));
    }

    #[test]
    fn parses_flags() {
        let options = parse(&[
            "--quick",
            "--filter",
            "arena,query",
            "--filter=spawn",
            "--out",
            "r.json",
            "--markdown=r.md",
        ])
        .expect("valid arguments");
        assert!(options.quick && !options.list);
        assert_eq!(options.filter.patterns(), ["arena", "query", "spawn"]);
        assert_eq!(options.out, Some(PathBuf::from("r.json")));
        assert_eq!(options.markdown, Some(PathBuf::from("r.md")));
        assert_eq!(options.sample_config(), SampleConfig::quick());

        let defaults = parse(&[]).expect("no arguments are valid");
        assert!(!defaults.quick && defaults.filter.is_everything() && defaults.out.is_none());
        assert_eq!(defaults.sample_config(), SampleConfig::standard());
        assert!(parse(&["--list"]).expect("valid").list);
    }

    #[test]
    fn rejects_bad_arguments() {
        for args in [
            &["--filter"][..],
            &["--out"],
            &["--fast"],
            &["arena"],
            &["--quick=yes"],
        ] {
            assert!(refused(args), "{args:?} was accepted");
        }
        // A misspelt flag gets the one it most likely meant.
        let err = parse(&["--filtre", "arena"]).expect_err("a misspelt flag");
        let message = err.render().to_string();
        assert!(
            message.contains("unexpected argument '--filtre'")
                && message.contains("tip: a similar argument exists: '--filter'"),
            "{message}"
        );
    }

    #[test]
    fn help_is_asked_for_not_refused() {
        for args in [&["--help"][..], &["-h"], &["--quick", "--help"]] {
            let err = parse(args).expect_err("help is an error to clap");
            assert_eq!(err.kind(), clap::error::ErrorKind::DisplayHelp, "{args:?}");
            assert!(!err.use_stderr() && err.exit_code() == 0, "{args:?}");
        }
        let help = <Cli as clap::CommandFactory>::command()
            .render_long_help()
            .to_string();
        for flag in [
            "--quick",
            "--filter <SUBSTR>",
            "--out <FILE>",
            "--svg <FILE>",
            "--in-process",
        ] {
            assert!(help.contains(flag), "{flag}: {help}");
        }
        assert!(!help.contains(RUN_ONE), "{help}");
    }

    /// Runs the whole binary path on a temporary workload and reads back what it wrote.
    #[test]
    fn end_to_end_writes_json_and_markdown() {
        let dir = std::env::temp_dir().join(format!("strata-bench-e2e-{}", std::process::id()));
        let json_path = dir.join("nested/results.json");
        let md_path = dir.join("results.md");
        let workloads = vec![
            Workload::new("sum_10k", 10_000, "iterator sum", |b| {
                b.iter_with_setup(
                    || (0..10_000_u64).collect::<Vec<_>>(),
                    |values| values.iter().sum::<u64>(),
                );
            }),
            Workload::new("other", 1, "never runs", |b| b.iter(|| ())),
        ];
        let args = [
            "--in-process",
            "--quick",
            "--filter",
            "sum",
            "--out",
            json_path.to_str().expect("a UTF-8 temp path"),
            "--markdown",
            md_path.to_str().expect("a UTF-8 temp path"),
        ];
        let code = main_with(args.iter().map(|a| (*a).to_owned()), workloads, Vec::new());
        assert_eq!(code, ExitCode::SUCCESS);
        let json = fs::read_to_string(&json_path).expect("the results file was written");
        let report: Report = serde_json::from_str(&json).expect("the results file decodes");
        assert!(report.quick);
        assert_eq!(report.results.len(), 1);
        let record = &report.results[0];
        assert_eq!(
            (record.library.as_str(), record.workload.as_str()),
            ("strata", "sum_10k")
        );
        assert!(record.samples >= SampleConfig::quick().min_samples);
        assert!(record.median_ns > 0.0 && record.min_ns <= record.median_ns);
        let markdown = fs::read_to_string(&md_path).expect("the Markdown file was written");
        assert!(
            markdown.contains("| sum_10k | 10k | strata |"),
            "{markdown}"
        );
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn no_match_still_writes_an_empty_results_file() {
        let dir = std::env::temp_dir().join(format!("strata-bench-empty-{}", std::process::id()));
        let json_path = dir.join("results.json");
        let args = [
            "--quick".to_owned(),
            "--filter".to_owned(),
            "nothing".to_owned(),
            format!("--out={}", json_path.display()),
        ];
        let workloads = vec![Workload::new("sum", 1, "x", |b| b.iter(|| ()))];
        assert_eq!(main_with(args, workloads, Vec::new()), ExitCode::SUCCESS);
        let json = fs::read_to_string(&json_path).expect("the results file was written");
        let report: Report = serde_json::from_str(&json).expect("the results file decodes");
        assert!(report.results.is_empty());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_failed_workload_fails_the_run() {
        let workloads = vec![Workload::new("broken", 1, "never measures", |_| {})];
        let args = ["--in-process".to_owned()];
        assert_eq!(main_with(args, workloads, Vec::new()), ExitCode::FAILURE);
    }

    #[test]
    fn parses_modes() {
        assert_eq!(parse(&[]).expect("valid").mode, Mode::Children);
        assert_eq!(
            parse(&["--in-process", "--filter", "arena"])
                .expect("valid")
                .mode,
            Mode::InProcess
        );
        let arena_create = WorkloadKey {
            library: "strata".to_owned(),
            name: "arena_create".to_owned(),
            size: 1_000_000,
        };
        let child = parse(&["--run-one", "strata/arena_create/1000000", "--quick"]).expect("valid");
        assert_eq!(child.mode, Mode::RunOne(arena_create.clone()));
        assert!(child.quick);
        assert_eq!(
            parse(&["--run-one=strata/arena_create/1000000"])
                .expect("valid")
                .mode,
            Mode::RunOne(arena_create)
        );
        for args in [
            &["--run-one"][..],
            &["--run-one", "arena_create"],
            &["--run-one", "strata/arena_create"],
            &["--run-one", "strata/arena_create/1M"],
            &["--run-one", "s/a/1", "--run-one", "s/b/1"],
            &["--run-one", "s/a/1", "--in-process"],
            &["--run-one", "s/a/1", "--filter", "a"],
            &["--run-one", "s/a/1", "--list"],
            &["--run-one", "s/a/1", "--out", "r.json"],
            &["--run-one", "s/a/1", "--markdown", "r.md"],
            &["--run-one", "s/a/1", "--svg", "r.svg"],
            &["--in-process=yes"],
        ] {
            assert!(refused(args), "{args:?} was accepted");
        }
        let err = parse(&["--run-one", "arena_create"]).expect_err("not a key");
        assert!(
            err.render().to_string().contains(
                "invalid value 'arena_create' for '--run-one <LIBRARY/NAME/SIZE>': wants LIBRARY/NAME/SIZE"
            ),
            "{err}"
        );
    }

    /// The key of a Strata workload of size 1000, as [`record_of`] describes.
    fn key_of(name: &str) -> WorkloadKey {
        WorkloadKey {
            library: "strata".to_owned(),
            name: name.to_owned(),
            size: 1000,
        }
    }

    /// What the parent asks of a child is what the child understands.
    #[test]
    fn child_arguments_parse_back() {
        let keys = [
            key_of("arena_lookup_hit"),
            WorkloadKey {
                library: "bevy_ecs".to_owned(),
                name: "spawn".to_owned(),
                size: 10_000,
            },
        ];
        for key in keys {
            for quick in [false, true] {
                let options = Options::parse(child_args(&key, quick)).expect("valid");
                assert_eq!(options.mode, Mode::RunOne(key.clone()));
                assert_eq!(options.quick, quick);
            }
        }
        let command =
            own_child_command(&key_of("arena_create"), true).expect("this executable has a path");
        let args: Vec<_> = command.get_args().collect();
        assert_eq!(args, ["--run-one", "strata/arena_create/1000", "--quick"]);
    }

    fn record_of(name: &str) -> BenchRecord {
        record_for(&key_of(name))
    }

    /// A record of the workload `key`, with made-up figures.
    fn record_for(key: &WorkloadKey) -> BenchRecord {
        BenchRecord {
            library: key.library.clone(),
            workload: key.name.clone(),
            size: key.size,
            items: 1000,
            median_ns: 2000.0,
            min_ns: 1500.0,
            ns_per_item: 2.0,
            peak_rss_bytes: Some(4 << 20),
            mechanism: "a way".to_owned(),
            samples: 3,
            alloc_calls: Some(12),
            alloc_bytes: Some(4096),
            page_faults: Some(3),
        }
    }

    fn json_line_of(name: &str) -> String {
        json_line_for(&key_of(name))
    }

    fn json_line_for(key: &WorkloadKey) -> String {
        serde_json::to_string(&record_for(key)).expect("a record encodes")
    }

    #[test]
    fn parses_the_child_record_line() {
        let line = json_line_of("w");
        assert!(!line.contains('\n'));
        let parsed = |stdout: &str| parse_child_record(&key_of("w"), stdout.as_bytes());
        let other_library = json_line_for(&WorkloadKey {
            library: "hecs".to_owned(),
            ..key_of("w")
        });
        let other_size = json_line_for(&WorkloadKey {
            size: 10,
            ..key_of("w")
        });
        assert_eq!(parsed(&format!("{line}\n")).expect("valid"), record_of("w"));
        // Stray lines before the record and blank lines after it are skipped.
        assert_eq!(
            parsed(&format!("noise\n{line}\n\n  \n")).expect("valid"),
            record_of("w")
        );
        for (stdout, reason) in [
            (String::new(), "empty"),
            ("\n \n".to_owned(), "empty"),
            ("median 3 ms\n".to_owned(), "median 3 ms"),
            (format!("{line}\ntrailing words\n"), "trailing words"),
            (json_line_of("other"), "`strata/other/1000` instead"),
            (other_library, "`hecs/w/1000` instead"),
            (other_size, "`strata/w/10` instead"),
        ] {
            match parsed(&stdout) {
                Err(err @ BenchError::ChildOutput { .. }) => {
                    let message = err.to_string();
                    assert!(message.contains("workload `strata/w/1000`"), "{message}");
                    assert!(message.contains(reason), "{message}");
                }
                other => panic!("{stdout:?} gave {other:?}"),
            }
        }
        assert!(matches!(
            parse_child_record(&key_of("w"), &[0xff, b'\n']),
            Err(BenchError::ChildOutput { .. })
        ));
    }

    /// A configuration that finishes at once.
    fn tiny() -> SampleConfig {
        SampleConfig {
            min_samples: 2,
            budget: std::time::Duration::ZERO,
            max_samples: 2,
        }
    }

    #[test]
    fn run_one_selects_by_exact_key() {
        use std::cell::Cell;
        use std::rc::Rc;

        let runs = Rc::new([Cell::new(0), Cell::new(0), Cell::new(0), Cell::new(0)]);
        let counting = |library: &str, name: &str, size: u64, index: usize| {
            let runs = Rc::clone(&runs);
            Workload::new(name, size, "counting", move |b| {
                let runs = Rc::clone(&runs);
                b.iter_with_setup(|| (), move |_| runs[index].set(runs[index].get() + 1));
            })
            .library(library)
        };
        // One name for two libraries and two sizes, as peer workloads register it.
        let workloads = || {
            vec![
                counting("strata", "sum", 10, 0),
                counting("strata", "sum", 1_000, 1),
                counting("hecs", "sum", 10, 2),
                counting("strata", "sum_10k", 10, 3),
            ]
        };
        let counts = || runs.iter().map(Cell::get).collect::<Vec<_>>();
        let key = |text: &str| WorkloadKey::parse(text).expect("a valid key");
        assert!(run_one(&key("hecs/sum/10"), tiny(), workloads()).expect("it exists"));
        assert_eq!(counts(), [0, 0, 3, 0]);
        assert!(run_one(&key("strata/sum/1000"), tiny(), workloads()).expect("it exists"));
        assert_eq!(counts(), [0, 3, 3, 0]);
        for near_miss in [
            "strata/su/10",
            "strata/sum_1/10",
            "strata/Sum/10",
            "strata/sum /10",
            "strata/sum/100",
            "hecs/sum/1000",
            "bevy_ecs/sum/10",
        ] {
            assert!(
                matches!(
                    run_one(&key(near_miss), tiny(), workloads()),
                    Err(BenchError::UnknownWorkload { workload }) if workload == near_miss
                ),
                "{near_miss}"
            );
        }
        assert_eq!(counts(), [0, 3, 3, 0]);
        // A workload that fails in the child makes the child fail.
        let broken = vec![Workload::new("broken", 1, "never measures", |_| {})];
        assert!(!run_one(&key("strata/broken/1"), tiny(), broken).expect("`broken` exists"));
    }

    #[test]
    fn exit_codes_of_the_child_mode() {
        let workloads = || vec![Workload::new("sum", 1, "x", |b| b.iter(|| ()))];
        let run = |args: &[&str], workloads| {
            main_with_launcher(
                args.iter().map(|a| (*a).to_owned()),
                workloads,
                Vec::new(),
                &|_, _| panic!("a child must not start children"),
            )
        };
        assert_eq!(
            run(&["--run-one", "strata/sum/1", "--quick"], workloads()),
            ExitCode::SUCCESS
        );
        for unknown in ["strata/nothing/1", "strata/sum/2", "hecs/sum/1", "sum"] {
            assert_eq!(
                run(&["--run-one", unknown], workloads()),
                ExitCode::from(2),
                "{unknown}"
            );
        }
        assert_eq!(
            run(
                &["--run-one", "strata/sum/1", "--filter", "sum"],
                workloads()
            ),
            ExitCode::from(2)
        );
    }

    #[test]
    fn duplicate_keys_stop_every_mode() {
        let workloads = || {
            vec![
                Workload::new("twin", 1, "x", |b| b.iter(|| ())).library("peer"),
                Workload::new("twin", 2, "x", |b| b.iter(|| ())).library("peer"),
                Workload::new("twin", 1, "y", |b| b.iter(|| ())).library("peer"),
            ]
        };
        let launch: Launcher<'_> = &|_, _| panic!("nothing may run");
        for args in [
            &["--in-process"][..],
            &[],
            &["--run-one", "peer/twin/2"],
            &["--list"],
        ] {
            let args = args.iter().map(|a| (*a).to_owned());
            assert_eq!(
                main_with_launcher(args, workloads(), Vec::new(), launch),
                ExitCode::FAILURE
            );
        }
    }

    #[test]
    fn a_launcher_error_names_the_workload() {
        let workloads = [Workload::new("w", 1, "x", |b| b.iter(|| ()))];
        let (results, n_failed) = run_in_children(&workloads, false, &|_, _| {
            Err(io::Error::new(io::ErrorKind::NotFound, "no such program"))
        });
        assert!(results.is_empty());
        assert_eq!(n_failed, 1);
        let mut missing = Command::new("/nonexistent/strata-bench");
        match run_child(&key_of("w"), &mut missing) {
            Err(err @ BenchError::Spawn { .. }) => {
                assert!(
                    err.to_string().contains("workload `strata/w/1000`"),
                    "{err}"
                );
            }
            other => panic!("{other:?}"),
        }
    }

    /// Child processes faked with `sh`, so the collection logic runs on real processes.
    #[cfg(unix)]
    mod fake_children {
        use super::*;

        /// A shell that runs `script` with the record of `key` as `$1`.
        fn shell(script: &str, key: &WorkloadKey) -> Command {
            let mut command = Command::new("sh");
            command.args(["-c", script, "sh"]).arg(json_line_for(key));
            command
        }

        /// A launcher whose child prints the right record, except for names starting with
        /// `exit` (exit code 3), `killed` (SIGKILL) and `silent` (exit 0, no output).
        fn launch(key: &WorkloadKey, quick: bool) -> io::Result<Command> {
            assert!(quick);
            let name = key.name.as_str();
            let script = if name.starts_with("exit") {
                "exit 3"
            } else if name.starts_with("killed") {
                "kill -9 $$"
            } else if name.starts_with("silent") {
                "exit 0"
            } else {
                "printf '%s\n' \"$1\""
            };
            Ok(shell(script, key))
        }

        #[test]
        fn a_child_record_is_read_back() {
            let key = key_of("w");
            let record = run_child(&key, &mut shell("printf '%s\n' \"$1\"", &key))
                .expect("the child prints a record");
            assert_eq!(record, record_of("w"));
        }

        #[test]
        fn a_failing_child_is_an_error_naming_its_workload() {
            let arena_create = key_of("arena_create");
            match run_child(&arena_create, &mut shell("exit 3", &arena_create)) {
                Err(err @ BenchError::ChildFailed { .. }) => {
                    let BenchError::ChildFailed { status, .. } = &err else {
                        unreachable!()
                    };
                    assert_eq!(status.code(), Some(3));
                    let message = err.to_string();
                    assert!(
                        message.contains("workload `strata/arena_create/1000`"),
                        "{message}"
                    );
                    assert!(message.contains('3'), "{message}");
                }
                other => panic!("{other:?}"),
            }
            let w = key_of("w");
            // A record printed before a non-zero exit does not count.
            let printed_then_failed = "printf '%s\n' \"$1\"; exit 1";
            assert!(matches!(
                run_child(&w, &mut shell(printed_then_failed, &w)),
                Err(BenchError::ChildFailed { .. })
            ));
            match run_child(&w, &mut shell("kill -9 $$", &w)) {
                Err(BenchError::ChildFailed { status, workload }) => {
                    assert_eq!((status.code(), workload.as_str()), (None, "strata/w/1000"));
                }
                other => panic!("{other:?}"),
            }
            assert!(matches!(
                run_child(&w, &mut shell("exit 0", &w)),
                Err(BenchError::ChildOutput { .. })
            ));
        }

        #[test]
        fn the_parent_goes_on_after_a_failed_child() {
            let names = ["first", "exit_early", "killed_hard", "silent_one", "last"];
            let workloads: Vec<Workload> = names
                .iter()
                .map(|name| Workload::new(*name, 1, "x", |_| panic!("runs in the child")))
                .collect();
            let (results, n_failed) = run_in_children(&workloads, true, &launch);
            let collected: Vec<&str> = results.iter().map(|r| r.workload.as_str()).collect();
            assert_eq!(collected, ["first", "last"]);
            assert_eq!(n_failed, 3);
        }

        /// Workloads sharing a name for several libraries and sizes each get their own child
        /// and their own record.
        #[test]
        fn shared_names_run_one_child_each() {
            let keys = ["strata/spawn/10", "hecs/spawn/10", "hecs/spawn/1000"]
                .map(|text| WorkloadKey::parse(text).expect("a valid key"));
            let workloads: Vec<Workload> = keys
                .iter()
                .map(|key| {
                    Workload::new(key.name.clone(), key.size, "x", |_| {
                        panic!("runs in the child")
                    })
                    .library(key.library.clone())
                })
                .collect();
            let (results, n_failed) = run_in_children(&workloads, true, &launch);
            assert_eq!(n_failed, 0);
            let collected: Vec<WorkloadKey> = results.iter().map(BenchRecord::key).collect();
            assert_eq!(collected, keys);
        }

        /// The whole parent path with faked children: every record in the results file, in
        /// order, and a failing exit code because one child failed.
        #[test]
        fn end_to_end_with_children() {
            let dir =
                std::env::temp_dir().join(format!("strata-bench-children-{}", std::process::id()));
            let json_path = dir.join("results.json");
            let md_path = dir.join("results.md");
            let svg_path = dir.join("results.svg");
            let workloads = || -> Vec<Workload> {
                ["b_second", "a_first", "exit_here", "skipped"]
                    .iter()
                    .map(|name| Workload::new(*name, 1000, "x", |_| panic!("runs in the child")))
                    .collect()
            };
            let unsupported = || {
                vec![
                    Unsupported {
                        library: "peer".to_owned(),
                        workload: "a_first".to_owned(),
                        reason: "no such API".to_owned(),
                    },
                    Unsupported {
                        library: "peer".to_owned(),
                        workload: "skipped".to_owned(),
                        reason: "filtered out".to_owned(),
                    },
                ]
            };
            let args = [
                "--quick".to_owned(),
                "--filter=b_,a_,exit".to_owned(),
                format!("--out={}", json_path.display()),
                format!("--markdown={}", md_path.display()),
                format!("--svg={}", svg_path.display()),
            ];
            assert_eq!(
                main_with_launcher(args.clone(), workloads(), unsupported(), &launch),
                ExitCode::FAILURE
            );
            let json = fs::read_to_string(&json_path).expect("the results file was written");
            let report: Report = serde_json::from_str(&json).expect("the results file decodes");
            assert!(report.quick);
            assert_eq!(
                report.results,
                [record_of("b_second"), record_of("a_first")]
            );
            // Only the unsupported work the filter selects is reported.
            assert_eq!(report.unsupported, unsupported()[..1]);
            let markdown = fs::read_to_string(&md_path).expect("the Markdown file was written");
            assert!(
                markdown.contains("| b_second | 1k | strata | 2.00 µs |"),
                "{markdown}"
            );
            let svg = fs::read_to_string(&svg_path).expect("the SVG file was written");
            assert!(svg.starts_with("<svg ") && svg.trim_end().ends_with("</svg>"));
            let ratios = fs::read_to_string(dir.join("ratios.svg")).expect("the ratio chart");
            assert!(ratios.starts_with("<svg ") && ratios.trim_end().ends_with("</svg>"));

            // Without the failing workload the same run succeeds.
            let all_good = ["--quick".to_owned(), "--filter=b_,a_".to_owned()];
            assert_eq!(
                main_with_launcher(all_good, workloads(), Vec::new(), &launch),
                ExitCode::SUCCESS
            );
            let _ = fs::remove_dir_all(&dir);
        }
    }
}
