//! `cargo xtask serve-cost`: what `strata run --serve` costs a running place's frames.
//!
//! Runs the release `strata` on the stress place (100,000 entities) three ways, each paced at
//! the place's frame rate for the same number of frames: `--realtime` (no server), `--serve`
//! with no client, and `--serve` with one client that reads the world and the first page of the
//! workspace's children once a second (what an open explorer tree does). Each run's `--json`
//! report gives its frames' stepping times (`frame_time`: `World::step` alone, without the
//! waits between frames); the task prints them and each mode's median against `--realtime`'s.
//! The modes run in turn, `rounds` times over, so a drift of the machine shows as a spread
//! between rounds rather than as a cost of one mode.
//!
//! Invariant: every mode steps the same place for the same frames on the same threads, paced
//! the same way; only the server and its client differ.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context as _, bail};
use serde_json::Value;

use crate::{cargo, run_command};

/// What `cargo xtask serve-cost` was asked to do.
#[derive(Debug, PartialEq, clap::Args)]
pub(crate) struct Args {
    /// Frames each run steps (at the place's 60 a second).
    #[arg(long, default_value_t = 900)]
    frames: u64,
    /// Times the three modes run, in turn.
    #[arg(long, default_value_t = 4)]
    rounds: u32,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Realtime,
    Served,
    Polled,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Realtime => "--realtime (no server)",
            Mode::Served => "--serve, no client",
            Mode::Polled => "--serve, one client polling each second",
        }
    }
}

/// One run's frame times, in milliseconds, and the explorer's work between frames per frame.
struct Times {
    mean: f64,
    median: f64,
    max: f64,
    explorer: Option<f64>,
}

pub(crate) fn run(root: &Path, args: &Args) -> anyhow::Result<()> {
    if args.frames == 0 || args.rounds == 0 {
        bail!("--frames and --rounds must be at least 1");
    }
    run_command(cargo().current_dir(root).args([
        "build",
        "--release",
        "-p",
        "strata-cli",
        "--bin",
        "strata",
    ]))?;
    let binary = root.join("target/release/strata");
    let place = root.join("examples/places/stress");
    let mut results: Vec<(Mode, u32, Times)> = Vec::new();
    for round in 1..=args.rounds {
        for mode in [Mode::Realtime, Mode::Served, Mode::Polled] {
            eprintln!("round {round}: {}", mode.name());
            let times = measure(&binary, &place, args.frames, mode)?;
            results.push((mode, round, times));
        }
    }
    println!(
        "stress place, {} frames a run, stepping time per frame (World::step):",
        args.frames
    );
    println!();
    println!(
        "| mode | round | median | mean | max | median vs --realtime | explorer's work per frame |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (mode, round, times) in &results {
        let baseline = results
            .iter()
            .find(|(m, r, _)| *m == Mode::Realtime && r == round)
            .map_or(f64::NAN, |(_, _, t)| t.median);
        let explorer = times.explorer.map_or_else(
            || "—".to_owned(),
            |ms| {
                format!(
                    "{:.1} µs ({:.2}% of the median)",
                    ms * 1e3,
                    100.0 * ms / times.median
                )
            },
        );
        println!(
            "| {} | {round} | {:.2} ms | {:.2} ms | {:.2} ms | {:.3}× | {explorer} |",
            mode.name(),
            times.median,
            times.mean,
            times.max,
            times.median / baseline
        );
    }
    Ok(())
}

/// Runs the place once in `mode` and reads its frames' times from its report.
fn measure(binary: &Path, place: &Path, frames: u64, mode: Mode) -> anyhow::Result<Times> {
    let mut command = Command::new(binary);
    command
        .arg("run")
        .arg(place)
        .args(["--frames", &frames.to_string(), "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    match mode {
        Mode::Realtime => command.arg("--realtime"),
        Mode::Served | Mode::Polled => command.args(["--serve", "127.0.0.1:0"]),
    };
    let mut child = command
        .spawn()
        .with_context(|| format!("cannot start {}", binary.display()))?;
    let stderr = child.stderr.take().context("no standard error")?;
    let mut lines = BufReader::new(stderr);
    let mut address = None;
    if mode != Mode::Realtime {
        let mut line = String::new();
        while lines.read_line(&mut line)? > 0 {
            if let Some(rest) = line.trim().strip_prefix("explorer: http://") {
                address = Some(rest.trim_end_matches('/').to_owned());
                break;
            }
            line.clear();
        }
    }
    // Standard error drains on its own, so the run never blocks on it.
    let drain = std::thread::spawn(move || {
        let _ = std::io::copy(&mut lines, &mut std::io::sink());
    });
    let done = Arc::new(AtomicBool::new(false));
    let client = match (mode, address) {
        (Mode::Polled, Some(address)) => {
            let done = Arc::clone(&done);
            Some(std::thread::spawn(move || poll(&address, &done)))
        }
        (Mode::Polled, None) => bail!("the served run printed no address"),
        _ => None,
    };
    let mut report = String::new();
    child
        .stdout
        .take()
        .context("no standard output")?
        .read_to_string(&mut report)?;
    let status = child.wait()?;
    done.store(true, Ordering::SeqCst);
    if let Some(client) = client {
        let polls = client
            .join()
            .map_err(|_| anyhow::anyhow!("the client panicked"))?;
        eprintln!("  the client made {polls} polls");
    }
    let _ = drain.join();
    if !status.success() {
        bail!("the run ended with {status}");
    }
    let report: Value = serde_json::from_str(&report).context("the run's report is not JSON")?;
    let time = &report["frame_time"];
    let number = |key: &str| time[key].as_f64().context("no frame_time in the report");
    Ok(Times {
        mean: number("mean_ms")?,
        median: number("median_ms")?,
        max: number("max_ms")?,
        explorer: time["explorer_ms"].as_f64(),
    })
}

/// Once a second until `done`: the world, then the first page of the workspace's children, as
/// an explorer's tree refreshes them. Returns how many polls it made.
fn poll(address: &str, done: &AtomicBool) -> u64 {
    let mut polls = 0;
    let game = get(address, "/api/v1/instances").and_then(|roots| roots["items"][0]["id"].as_u64());
    let workspace = game
        .and_then(|game| get(address, &format!("/api/v1/instances?parent={game}")))
        .and_then(|children| {
            children["items"]
                .as_array()?
                .iter()
                .find(|c| c["class"] == "Workspace")
                .and_then(|c| c["id"].as_u64())
        });
    while !done.load(Ordering::SeqCst) {
        let _ = get(address, "/api/v1/world");
        if let Some(workspace) = workspace {
            let _ = get(
                address,
                &format!("/api/v1/instances?parent={workspace}&limit=100"),
            );
        }
        polls += 1;
        for _ in 0..10 {
            if done.load(Ordering::SeqCst) {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    polls
}

/// One GET, its body as JSON; `None` when the run has gone or the answer is not JSON.
fn get(address: &str, path: &str) -> Option<Value> {
    let mut stream = TcpStream::connect(address).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (_, body) = response.split_once("\r\n\r\n")?;
    serde_json::from_str(body).ok()
}
