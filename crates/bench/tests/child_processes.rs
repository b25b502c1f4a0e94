//! The `strata-bench` binary itself: a child run by `--run-one`, and a parent that runs each
//! workload in a child of its own.
//!
//! These run the real arena workloads with `--quick`, choosing cheap ones except where memory
//! isolation is the point.

use std::path::PathBuf;
use std::process::{Command, Output};

use strata_bench::{BenchRecord, Report};

fn bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata-bench"))
        .args(args)
        .output()
        .expect("the strata-bench binary starts")
}

fn text(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).expect("UTF-8 output")
}

#[test]
fn run_one_prints_one_json_record() {
    let output = bench(&["--run-one", "strata/arena_reparent/10000", "--quick"]);
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{stderr}");
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    let record: BenchRecord = serde_json::from_str(stdout).expect("one JSON record");
    assert_eq!(
        (record.workload.as_str(), record.size),
        ("arena_reparent", 10_000)
    );
    assert!(record.median_ns > 0.0);
    assert!(
        stderr.contains("arena_reparent (10k) ... median"),
        "{stderr}"
    );
}

#[test]
fn run_one_wants_an_exact_key() {
    // The right name under the wrong library or size is as unknown as a wrong name.
    for near_miss in [
        "strata/arena_reparen/10000",
        "strata/arena_reparent/1000",
        "hecs/arena_reparent/10000",
    ] {
        let output = bench(&["--run-one", near_miss, "--quick"]);
        assert_eq!(output.status.code(), Some(2), "{near_miss}");
        assert!(output.stdout.is_empty());
        let stderr = text(&output.stderr);
        assert!(
            stderr.contains(&format!("no workload is exactly `{near_miss}`")),
            "{stderr}"
        );
    }
    // A bare name is not a key.
    let output = bench(&["--run-one", "arena_reparent", "--quick"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("LIBRARY/NAME/SIZE"));
}

/// A 1M-node workload followed by a 10k-node one: in a shared process the second would report
/// the first one's resident memory, in a child of its own it reports a few MiB. A million
/// 64-byte node records alone take 61 MiB, so the first must report more than 48 MiB.
#[test]
fn each_workload_runs_in_its_own_process() {
    let dir: PathBuf =
        std::env::temp_dir().join(format!("strata-bench-isolation-{}", std::process::id()));
    let json_path = dir.join("results.json");
    let output = bench(&[
        "--quick",
        "--filter",
        "arena_snapshot,arena_clone_subtree",
        "--out",
        json_path.to_str().expect("a UTF-8 temp path"),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let json = std::fs::read_to_string(&json_path).expect("the results file was written");
    let report: Report = serde_json::from_str(&json).expect("the results file decodes");
    let names: Vec<&str> = report.results.iter().map(|r| r.workload.as_str()).collect();
    assert_eq!(
        names,
        [
            "arena_snapshot",
            "arena_snapshot_diff",
            "arena_clone_subtree"
        ]
    );
    // The binary runs on the counting allocator, so every record counts one run's allocations.
    assert!(
        report
            .results
            .iter()
            .all(|r| r.alloc_calls.is_some() && r.alloc_bytes.is_some()),
        "{:?}",
        report.results
    );
    if cfg!(target_os = "linux") {
        let peak = |index: usize| {
            report.results[index]
                .peak_rss_bytes
                .expect("Linux reports peak memory")
        };
        let (big, small) = (peak(0), peak(2));
        assert!(big > 48 << 20, "1M nodes took only {big} bytes");
        assert!(
            small < 32 << 20,
            "10k nodes after 1M reported {small} bytes"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
