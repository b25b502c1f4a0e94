//! `cargo xtask fuzz [TARGET] [--time S]`: runs Strata's fuzz targets (`fuzz/`) with
//! cargo-fuzz on the nightly toolchain, each for `S` seconds (default 60), from the seed corpus
//! in `fuzz/corpus/TARGET/`. A crash is minimised (`cargo fuzz tmin`) and the minimised input
//! copied to `fuzz/regressions/TARGET/`, where `cargo test` replays it on stable.
//!
//! Invariant: the task never writes outside `fuzz/`, and it reports each target's outcome
//! (executions and coverage as libFuzzer printed them last, or the crash and where its
//! minimised input went); it fails if any target crashed, after running all of them.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};

/// The targets, in the order they run.
pub(crate) const TARGETS: [&str; 6] = [
    "save_file",
    "schema_source",
    "place_toml",
    "game_script",
    "query",
    "world_ops",
];

/// What `fuzz` was asked to do.
#[derive(Debug, PartialEq, clap::Args)]
pub(crate) struct Args {
    /// The targets to run, in this order (all when none is named).
    #[arg(
        value_name = "TARGET",
        value_parser = clap::builder::PossibleValuesParser::new(TARGETS)
    )]
    targets: Vec<String>,
    /// Seconds to fuzz each target for.
    #[arg(long = "time", value_name = "S", default_value_t = 60)]
    seconds: u64,
}

impl Args {
    /// The targets to run: those named, or all of [`TARGETS`].
    fn targets(&self) -> Vec<&str> {
        if self.targets.is_empty() {
            TARGETS.to_vec()
        } else {
            self.targets.iter().map(String::as_str).collect()
        }
    }
}

/// `cargo +nightly fuzz`, run from the workspace root, with LeakSanitizer reading the
/// suppressions in `fuzz/lsan.supp` (thread-exit bookkeeping of glibc's, not ours).
fn cargo_fuzz(fuzz_dir: &Path) -> Command {
    let mut command = Command::new("cargo");
    command
        .arg("+nightly")
        .arg("fuzz")
        .env(
            "LSAN_OPTIONS",
            format!(
                "suppressions={}:print_suppressions=0",
                fuzz_dir.join("lsan.supp").display()
            ),
        )
        .current_dir(fuzz_dir.parent().unwrap_or(fuzz_dir));
    command
}

/// The last libFuzzer status line (`#N ... cov: ... exec/s: ...`) of an output.
fn last_status(output: &str) -> Option<&str> {
    output
        .lines()
        .rev()
        .find(|line| line.starts_with('#') && line.contains("cov:"))
}

/// The sanitizer's or libFuzzer's error report in an output: from its first `ERROR` line
/// through its `SUMMARY` line, at most 40 lines.
fn error_section(output: &str) -> impl Iterator<Item = &str> {
    output
        .lines()
        .skip_while(|line| !line.contains("ERROR"))
        .take(40)
        .scan(false, |done, line| {
            if *done {
                return None;
            }
            *done = line.starts_with("SUMMARY");
            Some(line)
        })
}

/// The crash input libFuzzer reported writing, if any.
fn crash_artifact(output: &str) -> Option<PathBuf> {
    output.lines().find_map(|line| {
        let at = line.find("Test unit written to ")?;
        Some(PathBuf::from(
            line[at + "Test unit written to ".len()..].trim(),
        ))
    })
}

/// Runs the task.
pub(crate) fn run(root: &Path, args: &Args) -> anyhow::Result<()> {
    let fuzz_dir = root.join("fuzz");
    let mut crashed = Vec::new();
    for target in args.targets() {
        let corpus = fuzz_dir.join("corpus").join(target);
        std::fs::create_dir_all(&corpus)
            .with_context(|| format!("cannot create {}", corpus.display()))?;
        println!("fuzz {target}: {} s", args.seconds);
        let output = cargo_fuzz(&fuzz_dir)
            .args(["run", target])
            .arg(&corpus)
            .arg("--")
            .arg(format!("-max_total_time={}", args.seconds))
            .arg("-rss_limit_mb=4096")
            .output()
            .context("cannot start `cargo +nightly fuzz` (install it with `cargo +nightly install cargo-fuzz`)")?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        if let Some(status) = last_status(&text) {
            println!("  {status}");
        }
        if output.status.success() {
            continue;
        }
        let Some(artifact) = crash_artifact(&text) else {
            bail!("fuzzing {target} failed without a crash input:\n{text}");
        };
        // The whole report beside the artifact, and its error section on the terminal.
        let report = artifact.with_extension("report");
        std::fs::write(&report, &text)
            .with_context(|| format!("cannot write {}", report.display()))?;
        for line in error_section(&text) {
            println!("  | {line}");
        }
        println!("  the whole report: {}", report.display());
        if std::fs::metadata(&artifact).map_or(true, |m| m.len() == 0) {
            bail!(
                "{target}'s crash input {} is empty or missing (a full disk?); nothing kept",
                artifact.display()
            );
        }
        let regressions = fuzz_dir.join("regressions").join(target);
        std::fs::create_dir_all(&regressions)?;
        let minimised = cargo_fuzz(&fuzz_dir)
            .args(["tmin", target])
            .arg(&artifact)
            .output()
            .context("cannot start `cargo +nightly fuzz tmin`")?;
        let text_min = String::from_utf8_lossy(&minimised.stderr).into_owned();
        let smallest = text_min
            .lines()
            .find_map(|line| {
                let at = line.find("CRASH_MIN: failed to minimize beyond ")?;
                Some(PathBuf::from(
                    line[at + "CRASH_MIN: failed to minimize beyond ".len()..]
                        .split_whitespace()
                        .next()?,
                ))
            })
            .unwrap_or(artifact.clone());
        let name = smallest
            .file_name()
            .map_or_else(|| "crash".into(), |n| n.to_string_lossy().into_owned());
        let kept = regressions.join(&name);
        std::fs::copy(&smallest, &kept)
            .with_context(|| format!("cannot copy {} to {}", smallest.display(), kept.display()))?;
        println!("  CRASH: minimised input kept as {}", kept.display());
        crashed.push(target);
    }
    if !crashed.is_empty() {
        bail!(
            "crashed: {} (inputs under fuzz/regressions/)",
            crashed.join(", ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<Args, clap::Error> {
        match crate::parse(&format!("fuzz {line}"))? {
            crate::Task::Fuzz(args) => Ok(args),
            other => panic!("{line} parsed as {other:?}"),
        }
    }

    #[test]
    fn the_error_section_runs_from_the_error_to_the_summary() {
        let output = "#1 INITED\n==7==ERROR: LeakSanitizer: detected memory leaks\n  #0 malloc\nSUMMARY: 8 byte(s) leaked\nafter\n";
        assert_eq!(
            error_section(output).collect::<Vec<_>>(),
            [
                "==7==ERROR: LeakSanitizer: detected memory leaks",
                "  #0 malloc",
                "SUMMARY: 8 byte(s) leaked"
            ]
        );
    }

    #[test]
    fn targets_and_time_parse_and_mistakes_are_named() {
        let args = parse("query --time 5").unwrap();
        assert_eq!((args.targets(), args.seconds), (vec!["query"], 5));
        let args = parse("--time=7 save_file query").unwrap();
        assert_eq!(
            (args.targets(), args.seconds),
            (vec!["save_file", "query"], 7)
        );
        let args = parse("").unwrap();
        assert_eq!((args.targets(), args.seconds), (TARGETS.to_vec(), 60));
        // An unknown target is named, with the targets there are.
        let message = parse("nope").unwrap_err().render().to_string();
        assert!(
            message.contains("invalid value 'nope' for '[TARGET]...'")
                && message.contains(&TARGETS.join(", ")),
            "{message}"
        );
        assert!(parse("--time x").is_err());
        assert!(parse("--time").is_err());
    }

    #[test]
    fn the_targets_are_the_fuzz_crates_binaries() {
        let manifest = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/Cargo.toml"),
        )
        .unwrap();
        for target in TARGETS {
            assert!(
                manifest.contains(&format!("name = \"{target}\"")),
                "{target}"
            );
        }
    }

    #[test]
    fn libfuzzer_output_is_read() {
        let out = "#1024 pulse cov: 10 ft: 12 corp: 3/4b exec/s: 512\n#2048 DONE cov: 11 ft: 13 corp: 3/4b exec/s: 600\n";
        assert_eq!(
            last_status(out),
            Some("#2048 DONE cov: 11 ft: 13 corp: 3/4b exec/s: 600")
        );
        let crash = "==1== ERROR\nartifact_prefix='x/'; Test unit written to fuzz/artifacts/query/crash-abc\n";
        assert_eq!(
            crash_artifact(crash),
            Some(PathBuf::from("fuzz/artifacts/query/crash-abc"))
        );
    }
}
