//! `cargo xtask bench`: builds `strata-bench` in release mode, runs it, and leaves
//! `results.json`, `results.md`, `results.svg` and (written by `strata-bench` beside the chart)
//! `ratios.svg` in `<target dir>/bench/`; the Markdown (with,
//! under `--peers`, the comparison of each workload and size across libraries) is also printed.
//!
//! Invariant: the results always go to the target directory cargo itself uses (as reported by
//! `cargo metadata`, which honours `CARGO_TARGET_DIR` and cargo configuration), and `--peers`
//! builds `strata-bench` with its `peers` feature, refused unless the package declares it, and
//! fetches jecs (the Luau peer) with `npm pack @rbxts/jecs` into `target/jecs/` when npm is
//! available, skipping it with a note when not.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};
use serde_json::Value;

use crate::{cargo, run_command};

/// The package that holds the workloads.
const BENCH_PACKAGE: &str = "strata-bench";

/// The feature of [`BENCH_PACKAGE`] that adds the peer libraries' workloads.
const PEERS_FEATURE: &str = "peers";

/// The arguments of `cargo xtask bench`.
#[derive(Debug, PartialEq, Eq, clap::Args)]
pub(crate) struct Args {
    /// Fewer samples and a shorter time budget per workload (rough numbers).
    #[arg(long)]
    quick: bool,
    /// Run only the workloads whose LIBRARY/NAME contains PATTERN (`arena`, `hecs/`,
    /// `/spawn`); repeat the flag, or separate patterns with commas, for several.
    #[arg(long = "filter", value_name = "PATTERN")]
    filters: Vec<String>,
    /// Also run the peer libraries' workloads (bevy_ecs, hecs, shipyard; jecs through npm).
    #[arg(long)]
    peers: bool,
}

impl Args {
    /// The arguments handed to the `strata-bench` binary.
    fn bench_args(&self, outputs: &Outputs) -> Vec<String> {
        let mut out = vec![
            "--out".to_owned(),
            outputs.json.display().to_string(),
            "--markdown".to_owned(),
            outputs.markdown.display().to_string(),
            "--svg".to_owned(),
            outputs.svg.display().to_string(),
        ];
        if self.quick {
            out.push("--quick".to_owned());
        }
        for filter in &self.filters {
            out.push("--filter".to_owned());
            out.push(filter.clone());
        }
        out
    }
}

/// The files a run writes.
struct Outputs {
    json: PathBuf,
    markdown: PathBuf,
    svg: PathBuf,
}

impl Outputs {
    /// `results.json`, `results.md` and `results.svg` in `dir`.
    fn in_dir(dir: &Path) -> Outputs {
        Outputs {
            json: dir.join("results.json"),
            markdown: dir.join("results.md"),
            svg: dir.join("results.svg"),
        }
    }
}

/// Runs the benchmarks as `args` asks, from the workspace at `root`.
pub(crate) fn run(root: &Path, args: &Args) -> anyhow::Result<()> {
    let metadata = cargo_metadata(root)?;
    if args.peers && !has_feature(&metadata, BENCH_PACKAGE, PEERS_FEATURE) {
        bail!(
            "strata-bench declares no `{PEERS_FEATURE}` feature, so no peer libraries can be measured"
        );
    }
    let outputs = Outputs::in_dir(&target_directory(&metadata)?.join("bench"));
    let mut command = cargo();
    command
        .current_dir(root)
        .args(["run", "--release", "--package", BENCH_PACKAGE]);
    if args.peers {
        command.args(["--features", PEERS_FEATURE]);
        match fetch_jecs(&target_directory(&metadata)?) {
            Ok(path) => {
                command.env("STRATA_JECS", path);
            }
            Err(why) => eprintln!("xtask: skipping the Luau peer (jecs): {why:#}"),
        }
    }
    command.arg("--").args(args.bench_args(&outputs));
    run_command(&mut command)?;
    eprintln!(
        "wrote {}, {}, {} and {}",
        outputs.json.display(),
        outputs.markdown.display(),
        outputs.svg.display(),
        outputs.svg.with_file_name("ratios.svg").display()
    );
    Ok(())
}

/// The npm package of jecs, the Luau peer.
const JECS_PACKAGE: &str = "@rbxts/jecs";

/// Fetches jecs with `npm pack` into `target/jecs/` (once) and returns its `src/jecs.luau`.
fn fetch_jecs(target: &Path) -> anyhow::Result<PathBuf> {
    let dir = target.join("jecs");
    let source = dir.join("package").join("src").join("jecs.luau");
    if source.is_file() {
        return Ok(source);
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let packed = Command::new("npm")
        .current_dir(&dir)
        .args(["pack", JECS_PACKAGE, "--silent"])
        .output()
        .context("npm is not available")?;
    if !packed.status.success() {
        bail!(
            "`npm pack {JECS_PACKAGE}` failed: {}",
            String::from_utf8_lossy(&packed.stderr).trim()
        );
    }
    let tarball = String::from_utf8_lossy(&packed.stdout).trim().to_owned();
    let tarball = tarball.lines().last().unwrap_or_default().to_owned();
    run_command(
        Command::new("tar")
            .current_dir(&dir)
            .args(["xzf", &tarball]),
    )?;
    if !source.is_file() {
        bail!("{} holds no package/src/jecs.luau", dir.display());
    }
    eprintln!(
        "xtask: fetched {JECS_PACKAGE} ({tarball}) into {}",
        dir.display()
    );
    Ok(source)
}

/// The workspace's `cargo metadata`, without dependencies.
fn cargo_metadata(root: &Path) -> anyhow::Result<Value> {
    let output = cargo()
        .current_dir(root)
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .output()
        .context("cannot run `cargo metadata`")?;
    if !output.status.success() {
        bail!(
            "`cargo metadata` failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    serde_json::from_slice(&output.stdout).context("`cargo metadata` printed invalid JSON")
}

/// The target directory named in `cargo metadata` output.
fn target_directory(metadata: &Value) -> anyhow::Result<PathBuf> {
    metadata["target_directory"]
        .as_str()
        .map(PathBuf::from)
        .context("`cargo metadata` named no target directory")
}

/// Whether the workspace package `package` declares the cargo feature `feature`.
fn has_feature(metadata: &Value, package: &str, feature: &str) -> bool {
    metadata["packages"].as_array().is_some_and(|packages| {
        packages
            .iter()
            .filter(|p| p["name"] == package)
            .any(|p| p["features"].get(feature).is_some())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<Args, clap::Error> {
        match crate::parse(&format!("bench {line}"))? {
            crate::Task::Bench(args) => Ok(args),
            other => panic!("{line} parsed as {other:?}"),
        }
    }

    #[test]
    fn parses_bench_arguments() {
        let args =
            parse("--quick --filter arena --filter=query,spawn --peers").expect("valid arguments");
        assert_eq!(
            args,
            Args {
                quick: true,
                filters: vec!["arena".to_owned(), "query,spawn".to_owned()],
                peers: true,
            }
        );
        assert_eq!(
            args.bench_args(&Outputs::in_dir(Path::new("t"))),
            [
                "--out",
                "t/results.json",
                "--markdown",
                "t/results.md",
                "--svg",
                "t/results.svg",
                "--quick",
                "--filter",
                "arena",
                "--filter",
                "query,spawn"
            ]
        );
        assert_eq!(
            parse("").expect("no arguments are valid"),
            Args {
                quick: false,
                filters: Vec::new(),
                peers: false,
            }
        );
        assert!(parse("--filter").is_err());
        assert!(parse("--fast").is_err());
        // A misspelt flag gets the one it most likely meant.
        let message = parse("--peer").expect_err("misspelt").render().to_string();
        assert!(
            message.contains("tip: a similar argument exists: '--peers'"),
            "{message}"
        );
    }

    #[test]
    fn reads_metadata() {
        let metadata: Value = serde_json::from_str(
            r#"{
                "target_directory": "/w/target",
                "packages": [
                    {"name": "strata-arena", "features": {"peers": []}},
                    {"name": "strata-bench", "features": {"default": []}}
                ]
            }"#,
        )
        .expect("valid JSON");
        assert_eq!(
            target_directory(&metadata).expect("a target directory"),
            PathBuf::from("/w/target")
        );
        assert!(!has_feature(&metadata, BENCH_PACKAGE, PEERS_FEATURE));
        assert!(has_feature(&metadata, "strata-arena", PEERS_FEATURE));
        assert!(target_directory(&Value::Null).is_err());
        assert!(!has_feature(&Value::Null, BENCH_PACKAGE, PEERS_FEATURE));
    }

    /// `--peers` builds with this feature, so the bench package must declare it.
    #[test]
    fn bench_package_declares_the_peers_feature() {
        let metadata = cargo_metadata(&crate::project_root()).expect("cargo metadata runs");
        assert!(has_feature(&metadata, BENCH_PACKAGE, PEERS_FEATURE));
        assert!(target_directory(&metadata).is_ok());
    }
}
