//! `cargo xtask soak [--cases N] [--minutes M]`: runs every model-based property test far past
//! its usual case count. Each test binary is built once in release mode and run again and
//! again, directly (cargo is not consulted between runs). proptest draws a fresh seed each run, so the runs add up to independent cases. A
//! model stops when it reaches `N` cases (default 100,000) or when its share of the time is
//! up (`M` minutes split evenly among the models; default: no limit). The task reports the
//! cases run and the failures of each model.
//!
//! Invariant: [`MODELS`] names every model test with the cases one run of it makes (the
//! count in its `proptest_config`); a test checks each named test exists in its file with
//! that count, so the report never counts cases that did not run.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

use crate::cargo;

/// A model test: package, its module in the package's one test binary (`tests/it`), test
/// name, cases per run.
#[derive(Debug)]
pub(crate) struct Model {
    package: &'static str,
    module: &'static str,
    test: &'static str,
    cases: u64,
}

/// Every model-based property test.
pub(crate) const MODELS: &[Model] = &[
    Model {
        package: "strata-arena",
        module: "model",
        test: "arena_agrees_with_reference_model",
        cases: 512,
    },
    Model {
        package: "strata-arena",
        module: "reservation_model",
        test: "reservations_and_bulk_destruction_agree_with_the_model",
        cases: 256,
    },
    Model {
        package: "strata-component-store",
        module: "model",
        test: "store_agrees_with_reference_model",
        cases: 500,
    },
    Model {
        package: "strata-component-store",
        module: "observer_model",
        test: "observers_dirt_and_counters_follow_the_model",
        cases: 128,
    },
    Model {
        package: "strata-component-store",
        module: "bulk_equals_scalar",
        test: "a_bulk_operation_equals_the_scalar_operations_it_stands_for",
        cases: 128,
    },
    Model {
        package: "strata-component-store",
        module: "stage_model",
        test: "staged_operations_follow_the_model",
        cases: 128,
    },
    Model {
        package: "strata-query",
        module: "model",
        test: "queries_agree_with_brute_force",
        cases: 256,
    },
    Model {
        package: "strata-parallel-overlay",
        module: "overlay",
        test: "the_committed_store_is_the_same_for_any_arrival_order_lane_count_and_finishing_order",
        cases: 64,
    },
    Model {
        package: "strata-scheduler",
        module: "model",
        test: "plans_agree_with_the_model",
        cases: 512,
    },
    Model {
        package: "strata",
        module: "model",
        test: "the_world_follows_the_model",
        cases: 96,
    },
    Model {
        package: "strata",
        module: "model",
        test: "a_loaded_world_steps_as_the_world_it_was_saved_from",
        cases: 64,
    },
    Model {
        package: "strata",
        module: "rollback",
        test: "a_restore_gives_back_everything_a_full_copy_kept",
        cases: 96,
    },
];

/// What `soak` was asked to do.
#[derive(Debug, PartialEq, clap::Args)]
pub(crate) struct Args {
    /// Stop a model once it has run N cases.
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    cases: u64,
    /// Stop a model once its share of M minutes (split evenly among the models) has passed
    /// (default: no limit).
    #[arg(long, value_name = "M")]
    minutes: Option<u64>,
    /// Soak only the models whose `package module::test` contains PATTERN (repeatable; any
    /// pattern may match). Every model when none is given.
    #[arg(long = "model", value_name = "PATTERN")]
    models: Vec<String>,
}

impl Model {
    /// How the model is named in filters and in the report: `package module::test`.
    fn name(&self) -> String {
        format!("{} {}::{}", self.package, self.module, self.test)
    }
}

/// The models `patterns` select (every model for none), in [`MODELS`] order; a pattern that
/// selects nothing is refused by name.
fn select(patterns: &[String]) -> anyhow::Result<Vec<&'static Model>> {
    if let Some(unmatched) = patterns
        .iter()
        .find(|p| !MODELS.iter().any(|m| m.name().contains(p.as_str())))
    {
        bail!(
            "--model {unmatched:?} names no model; the models are:\n{}",
            MODELS
                .iter()
                .map(Model::name)
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    Ok(MODELS
        .iter()
        .filter(|m| patterns.is_empty() || patterns.iter().any(|p| m.name().contains(p.as_str())))
        .collect())
}

/// The name of every package's one integration-test binary (`tests/it/main.rs`).
const TEST_BINARY: &str = "it";

/// Builds the test binary `model` lives in, in release mode, and returns its path, from
/// cargo's `compiler-artifact` message for the test target.
fn build(root: &Path, model: &Model) -> anyhow::Result<PathBuf> {
    let output = cargo()
        .args(["test", "--release", "--no-run", "--message-format=json"])
        .arg("--manifest-path")
        .arg(root.join("Cargo.toml"))
        .args(["--package", model.package, "--test", TEST_BINARY])
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("cannot build {}", model.package))?;
    if !output.status.success() {
        bail!("building the tests of {} failed", model.package);
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|message| {
            message["reason"] == "compiler-artifact"
                && message["target"]["name"] == TEST_BINARY
                && message["target"]["kind"][0] == "test"
        })
        .find_map(|message| message["executable"].as_str().map(PathBuf::from))
        .with_context(|| format!("cargo named no test binary for {}", model.package))
}

/// Runs the task.
pub(crate) fn run(root: &Path, args: &Args) -> anyhow::Result<()> {
    let started = Instant::now();
    let models = select(&args.models)?;
    // Every binary is built before any runs, so an edit made while the soak runs changes
    // nothing it tests.
    let binaries = models
        .iter()
        .map(|model| build(root, model))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let share = args
        .minutes
        .map(|m| Duration::from_secs(m * 60) / models.len() as u32);
    let mut failed = Vec::new();
    for (model, binary) in models.iter().zip(&binaries) {
        let model_started = Instant::now();
        let mut runs = 0_u64;
        let mut failures = 0_u64;
        while runs * model.cases < args.cases
            && share.is_none_or(|share| model_started.elapsed() < share)
        {
            let status = Command::new(binary)
                .args([
                    "--quiet",
                    "--exact",
                    &format!("{}::{}", model.module, model.test),
                ])
                .status()
                .with_context(|| format!("cannot run {}", model.test))?;
            runs += 1;
            if !status.success() {
                failures += 1;
                break;
            }
        }
        println!(
            "{}: {} cases in {runs} runs ({:.0} s), {failures} failed",
            model.name(),
            runs * model.cases,
            model_started.elapsed().as_secs_f64()
        );
        if failures > 0 {
            failed.push(model.test);
        }
    }
    println!("soak: {:.0} s", started.elapsed().as_secs_f64());
    if !failed.is_empty() {
        bail!("failed: {}", failed.join(", "));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<Args, clap::Error> {
        match crate::parse(&format!("soak {line}"))? {
            crate::Task::Soak(args) => Ok(args),
            other => panic!("{line} parsed as {other:?}"),
        }
    }

    #[test]
    fn flags_parse_and_mistakes_are_named() {
        assert_eq!(
            parse("--cases 500 --minutes=3").unwrap(),
            Args {
                cases: 500,
                minutes: Some(3),
                models: Vec::new(),
            }
        );
        assert_eq!(
            parse("").unwrap(),
            Args {
                cases: 100_000,
                minutes: None,
                models: Vec::new(),
            }
        );
        assert_eq!(
            parse("--model rollback --model=arena").unwrap().models,
            ["rollback", "arena"]
        );
        assert!(parse("--cases many").is_err());
        assert!(parse("--fast").is_err());
        let message = parse("--case 5").unwrap_err().render().to_string();
        assert!(
            message.contains("tip: a similar argument exists: '--cases'"),
            "{message}"
        );
    }

    #[test]
    fn model_patterns_select_by_package_module_and_test_and_an_unmatched_one_is_named() {
        assert_eq!(select(&[]).unwrap().len(), MODELS.len());
        let names: Vec<String> = select(&["rollback".to_owned(), "strata-arena ".to_owned()])
            .unwrap()
            .iter()
            .map(|m| m.name())
            .collect();
        assert_eq!(
            names,
            [
                "strata-arena model::arena_agrees_with_reference_model",
                "strata-arena reservation_model::reservations_and_bulk_destruction_agree_with_the_model",
                "strata rollback::a_restore_gives_back_everything_a_full_copy_kept",
            ]
        );
        let message = select(&["rollbak".to_owned()]).unwrap_err().to_string();
        assert!(message.contains("\"rollbak\" names no model"), "{message}");
        assert!(message.contains("strata rollback::"), "{message}");
    }

    #[test]
    fn every_model_named_exists_with_the_case_count_it_is_counted_at() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        for model in MODELS {
            let dir = if model.package == "strata" {
                "engine".to_owned()
            } else {
                model.package.trim_start_matches("strata-").to_owned()
            };
            let path = root
                .join("crates")
                .join(dir)
                .join("tests")
                .join(TEST_BINARY)
                .join(format!("{}.rs", model.module));
            let text = std::fs::read_to_string(&path).unwrap();
            let at = text
                .find(&format!("fn {}(", model.test))
                .unwrap_or_else(|| panic!("{} has no test {}", path.display(), model.test));
            let config = text[..at].rfind("proptest_config").unwrap();
            let config = &text[config..at];
            assert!(
                config.contains(&format!("cases: {}", model.cases))
                    || config.contains(&format!("with_cases({})", model.cases)),
                "{}: {} does not run {} cases a run",
                path.display(),
                model.test,
                model.cases
            );
        }
    }
}
