//! The command line of the `strata-bench` binary: argument parsing, workload filtering, the run
//! loop and writing the results.
//!
//! Invariant: progress and diagnostics go to standard error and only the Markdown table goes to
//! standard output. When workloads run, the results file is written even if none matched or some
//! failed, and the exit code is non-zero only for bad arguments, failed workloads or failed writes.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a benchmark tool reports on the terminal"
)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::SystemTime;

use crate::error::BenchError;
use crate::harness::{SampleConfig, Workload};
use crate::report::{self, Machine, Report};

/// The usage text printed by `--help` and after a bad argument.
pub const USAGE: &str = "\
usage: strata-bench [--quick] [--filter SUBSTR]... [--out FILE] [--markdown FILE] [--list]

  --quick            fewer samples and a shorter time budget per workload (rough numbers)
  --filter SUBSTR    run only workloads whose name contains SUBSTR; repeat the flag or
                     separate several with commas to run the workloads matching any of them
  --out FILE         write the results as JSON to FILE
  --markdown FILE    write the results table as Markdown to FILE
  --list             list the matching workloads and exit
  --help             print this text";

/// Which workloads to run, by substrings of their names.
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

    /// Whether a workload named `name` passes: no patterns, or a pattern contained in `name`.
    pub fn matches(&self, name: &str) -> bool {
        self.patterns.is_empty() || self.patterns.iter().any(|p| name.contains(p.as_str()))
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
    /// List the matching workloads instead of running them.
    pub list: bool,
    /// Print the usage text and exit.
    pub help: bool,
}

impl Options {
    /// Parses the arguments after the program name; `--flag VALUE` and `--flag=VALUE` both work.
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Options, BenchError> {
        let mut options = Options {
            quick: false,
            filter: Filter::everything(),
            out: None,
            markdown: None,
            list: false,
            help: false,
        };
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((flag, value)) if flag.starts_with("--") => (flag.to_owned(), Some(value)),
                _ => (arg.clone(), None),
            };
            let mut value = |flag: &str| match inline {
                Some(value) => Ok(value.to_owned()),
                None => args
                    .next()
                    .ok_or_else(|| BenchError::Usage(format!("`{flag}` needs a value"))),
            };
            match flag.as_str() {
                "--quick" if inline.is_none() => options.quick = true,
                "--list" if inline.is_none() => options.list = true,
                "--help" | "-h" if inline.is_none() => options.help = true,
                "--filter" => options.filter.add(&value("--filter")?),
                "--out" => options.out = Some(PathBuf::from(value("--out")?)),
                "--markdown" => options.markdown = Some(PathBuf::from(value("--markdown")?)),
                _ => return Err(BenchError::Usage(format!("unknown argument `{arg}`"))),
            }
        }
        Ok(options)
    }

    fn sample_config(&self) -> SampleConfig {
        if self.quick {
            SampleConfig::quick()
        } else {
            SampleConfig::standard()
        }
    }
}

/// Runs the binary on `args` (without the program name) over the registered `workloads`.
pub fn main_with(args: impl IntoIterator<Item = String>, workloads: Vec<Workload>) -> ExitCode {
    let options = match Options::parse(args) {
        Ok(options) => options,
        Err(err) => {
            eprintln!("strata-bench: {err}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if options.help {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    match run(&options, workloads) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(err) => {
            eprintln!("strata-bench: {err}");
            ExitCode::FAILURE
        }
    }
}

/// Runs or lists the workloads `options` select; returns whether every workload succeeded.
fn run(options: &Options, workloads: Vec<Workload>) -> Result<bool, BenchError> {
    let mut selected: Vec<Workload> = workloads
        .into_iter()
        .filter(|w| options.filter.matches(w.name()))
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
    let mut results = Vec::with_capacity(selected.len());
    let mut n_failed = 0;
    for workload in &mut selected {
        eprint!(
            "{} {} ({}) ... ",
            workload.library_name(),
            workload.name(),
            report::format_size(workload.size())
        );
        match workload.run(config) {
            Ok(record) => {
                eprintln!(
                    "median {}, {} per item, {} samples",
                    report::format_duration_ns(record.median_ns),
                    report::format_duration_ns(record.ns_per_item),
                    record.samples
                );
                results.push(record);
            }
            Err(err) => {
                eprintln!("failed: {err}");
                n_failed += 1;
            }
        }
    }
    let report = Report {
        machine: Machine::detect(),
        date,
        quick: options.quick,
        optimized,
        results,
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
    print!("{markdown}");
    if n_failed > 0 {
        eprintln!("strata-bench: {n_failed} workload(s) failed");
    }
    Ok(n_failed == 0)
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

    fn parse(args: &[&str]) -> Result<Options, BenchError> {
        Options::parse(args.iter().map(|a| (*a).to_owned()))
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
        assert!(options.quick && !options.list && !options.help);
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
            assert!(
                matches!(parse(args), Err(BenchError::Usage(_))),
                "{args:?} was accepted"
            );
        }
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
            "--quick",
            "--filter",
            "sum",
            "--out",
            json_path.to_str().expect("a UTF-8 temp path"),
            "--markdown",
            md_path.to_str().expect("a UTF-8 temp path"),
        ];
        let code = main_with(args.iter().map(|a| (*a).to_owned()), workloads);
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
        assert_eq!(main_with(args, workloads), ExitCode::SUCCESS);
        let json = fs::read_to_string(&json_path).expect("the results file was written");
        let report: Report = serde_json::from_str(&json).expect("the results file decodes");
        assert!(report.results.is_empty());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_failed_workload_fails_the_run() {
        let workloads = vec![Workload::new("broken", 1, "never measures", |_| {})];
        assert_eq!(main_with(Vec::new(), workloads), ExitCode::FAILURE);
    }
}
