//! The `strata` command: runs a place headlessly, or checks it.
//!
//! ```text
//! strata run PLACE [--frames N] [--threads N] [--json] [--save FILE] [--load FILE]
//!                  [--watch] [--trace FILE]
//! strata check PLACE
//! strata types [PLACE]
//! strata completions SHELL
//! ```
//!
//! `run` builds the place's world (or loads a save of it), steps it frame by frame, writes
//! what scripts print as the frames run, then a statistics table per system and a summary of
//! the world; `--json` writes the same as one JSON document instead. A progress bar goes to
//! standard error once a run has taken a second. `--watch` runs the place in real time and
//! reloads its files as they change (see `live`). `--trace FILE` records the run's frames,
//! phases, systems, overlay commits, definition syncs, saves and restores as a Chrome
//! trace-event file (see `trace`). `check` validates the place without running
//! it. `types` writes the Luau type definitions of the game API, or of a place's components.
//! `completions` writes a shell completion script. Every command takes `--help`.
//!
//! The command line is parsed by clap from the types below (`Cli`, `Command`, `RunOptions`),
//! so `--flag=value` works, a misspelt flag gets a suggestion, and clap's
//! usage errors keep this command's exit code 2.
//!
//! The binary is a thin shell over [`main_with`], which tests and embedders call with
//! their own writers:
//!
//! ```
//! let mut out = Vec::new();
//! let mut err = Vec::new();
//! // The game API's Luau type definitions, without a place.
//! let code = strata_cli::main_with(vec!["types".into()], &mut out, &mut err);
//! assert_eq!(code, 0);
//! assert!(String::from_utf8(out)?.contains("declare"));
//!
//! // A wrong command line: a message naming the mistake, and exit code 2.
//! let mut out = Vec::new();
//! let code = strata_cli::main_with(vec!["run".into(), "--frams".into()], &mut out, &mut err);
//! assert_eq!(code, 2);
//! assert!(String::from_utf8(err)?.contains("--frames"));
//! # Ok::<(), std::string::FromUtf8Error>(())
//! ```
//!
//! Invariant: every user mistake (a missing folder, a bad `place.toml`, a script error, a
//! damaged save, a wrong flag) ends with a message on standard error naming the file and, for
//! scripts, the line, and a non-zero exit code; never a panic. Exit codes: 0 done (also
//! `--help` and `--version`, which write to standard output), 1 the place or a run failed
//! (including systems that failed during the run), 2 the command line is wrong.

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::json;
use strata::prelude::*;
use strata_script::{Place, PlaceError};

mod live;
mod serve;
mod trace;

/// The `strata` command line.
#[derive(Debug, PartialEq, clap::Parser)]
#[command(
    name = "strata",
    version,
    about = "Runs a Strata place headlessly, checks it, or writes its Luau types.",
    // The doc comment above is for readers of this file, not for --help.
    long_about = None,
    // No arguments is a mistake like any other, named as one rather than answered with the
    // whole help.
    arg_required_else_help = false
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// What the command line asks for.
#[derive(Debug, PartialEq, clap::Subcommand)]
enum Command {
    /// Runs a place: steps its world, then reports per-system statistics and the world.
    ///
    /// Builds the place's world (or loads --load FILE), steps it, prints what scripts print,
    /// then per-system statistics and a summary of the world. Exit code 0 when every system
    /// ran, 1 when the place or any system run failed, 2 when the command line is wrong.
    Run(RunOptions),
    /// Validates a place without running it.
    ///
    /// Evaluates every schema, runs every system and group script far enough to read its
    /// declaration, compiles setup.luau without running it, checks the component files' names
    /// and the systems' order, and reports every problem with its file and line. Exit code 0
    /// when there is none, 1 otherwise.
    Check {
        /// The place: a folder holding place.toml.
        #[arg(value_name = "PLACE")]
        place: PathBuf,
    },
    /// Writes the Luau type definitions of the game API, or of a place's components.
    ///
    /// Without PLACE, the .d.luau definitions of the game API; with PLACE, those of the
    /// place's components (what its types.d.luau holds).
    Types {
        /// The place whose components to describe.
        #[arg(value_name = "PLACE")]
        place: Option<PathBuf>,
    },
    /// Writes the shell completion script of `strata` to standard output.
    #[command(after_long_help = COMPLETIONS_EXAMPLES)]
    Completions {
        /// The shell to complete in.
        #[arg(value_name = "SHELL")]
        shell: clap_complete::Shell,
    },
}

/// Where the completion scripts go, after `strata completions --help`.
const COMPLETIONS_EXAMPLES: &str = "\
Examples:
  strata completions bash > ~/.local/share/bash-completion/completions/strata
  strata completions zsh > ~/.zfunc/_strata      (with ~/.zfunc in $fpath)
  strata completions fish > ~/.config/fish/completions/strata.fish";

/// What `run` was asked to do.
#[derive(Debug, Default, PartialEq, clap::Args)]
struct RunOptions {
    /// The place: a folder holding place.toml.
    #[arg(value_name = "PLACE")]
    place: PathBuf,
    /// Frames to step (default: place.toml's `frames`).
    // A negative count is a wrong value, named as one, not an unknown flag.
    #[arg(long, value_name = "N", value_parser = frame_count, allow_negative_numbers = true)]
    frames: Option<u64>,
    /// Threads for parallel systems and groups, 1 to 256 (default: place.toml's, or the
    /// machine's).
    #[arg(long, value_name = "N", value_parser = thread_count, allow_negative_numbers = true)]
    threads: Option<usize>,
    /// Write statistics and the summary as one JSON document (script output included).
    #[arg(long)]
    json: bool,
    /// Save the world to FILE after the run.
    #[arg(long, value_name = "FILE")]
    save: Option<PathBuf>,
    /// Start from the world saved in FILE instead of running setup.luau.
    #[arg(long, value_name = "FILE")]
    load: Option<PathBuf>,
    /// Run in real time: one frame every 1/frame_rate seconds of place.toml (--watch and --serve
    /// do too); without --frames, run until Ctrl-C.
    #[arg(long)]
    realtime: bool,
    /// Run in real time (place.toml's frame_rate) and reload the place's component, system and
    /// group files between frames as they change; without --frames, run until Ctrl-C.
    #[arg(long)]
    watch: bool,
    /// Run in real time and serve the explorer (a web page and a JSON API) at ADDR
    /// (127.0.0.1:7878 when none is given); without --frames, run until Ctrl-C.
    #[arg(
        long,
        value_name = "ADDR",
        num_args = 0..=1,
        default_missing_value = "127.0.0.1:7878"
    )]
    serve: Option<std::net::SocketAddr>,
    /// Write a timeline of the run to FILE: frames, phases, each system on the thread that ran
    /// it, overlay commits, definition syncs, saves and loads, as Chrome trace events (open it
    /// in ui.perfetto.dev or chrome://tracing).
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
}

/// The value of `--frames`.
fn frame_count(text: &str) -> Result<u64, String> {
    text.parse()
        .map_err(|_| "not a whole number of frames".to_owned())
}

/// The value of `--threads`: a whole number from 1 to [`strata::MAX_THREADS`].
fn thread_count(text: &str) -> Result<usize, String> {
    let bounds = format!("between 1 and {}", strata::MAX_THREADS);
    let threads: usize = text
        .parse()
        .map_err(|_| format!("not a whole number; the count must be {bounds}"))?;
    if !(1..=strata::MAX_THREADS).contains(&threads) {
        return Err(format!("the count must be {bounds}"));
    }
    Ok(threads)
}

/// Parses the command line `args` (without the program name). `--help` and `--version` come
/// back as errors too, of the kinds clap gives them, to be written to standard output.
fn parse(args: Vec<String>) -> Result<Command, clap::Error> {
    <Cli as clap::Parser>::try_parse_from(std::iter::once("strata".to_owned()).chain(args))
        .map(|cli| cli.command)
}

/// Runs the command line `args` (without the program name), writing to `out` and `err`, and
/// returns the exit code.
pub fn main_with(args: Vec<String>, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let command = match parse(args) {
        Ok(command) => command,
        Err(error) => {
            // A usage mistake goes to standard error with exit code 2; `--help` and `--version`
            // to standard output with 0, as clap decides.
            let sink: &mut dyn Write = if error.use_stderr() {
                &mut *err
            } else {
                &mut *out
            };
            let _ = write!(sink, "{}", error.render());
            return error.exit_code();
        }
    };
    let result = match command {
        Command::Completions { shell } => {
            // Generated into memory first: clap_complete panics when its writer fails (a
            // closed pipe), and this command never panics.
            let mut script = Vec::new();
            clap_complete::generate(
                shell,
                &mut <Cli as clap::CommandFactory>::command(),
                "strata",
                &mut script,
            );
            let _ = out.write_all(&script);
            return 0;
        }
        Command::Check { place } => check(&place, out),
        Command::Types { place } => types(place.as_deref(), out),
        Command::Run(options) => {
            for (flag, path) in [("--save", &options.save), ("--trace", &options.trace)] {
                if let Some(path) = path
                    && let Err(message) = check_destination(path)
                {
                    let _ = writeln!(err, "error: {flag} {}: {message}", path.display());
                    return 2;
                }
            }
            if options.trace.is_some() && options.trace == options.save {
                let _ = writeln!(err, "error: --trace and --save name the same file");
                return 2;
            }
            match &options.trace {
                None => run(&options, out, err),
                Some(path) => trace::Recording::start(path).and_then(|recording| {
                    // The trace is completed whatever the run's outcome: it shows where the
                    // run went wrong too.
                    let ran = run(&options, out, err);
                    let finished = recording
                        .finish()
                        .map_err(|message| format!("--trace {message}"));
                    match (ran, finished) {
                        (Err(message), _) => Err(message),
                        (Ok(code), Ok(())) => Ok(code),
                        (Ok(_), Err(message)) => Err(message),
                    }
                }),
            }
        }
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            let _ = writeln!(err, "error: {message}");
            1
        }
    }
}

fn types(place: Option<&std::path::Path>, out: &mut dyn Write) -> Result<i32, String> {
    let text = match place {
        None => strata_script::types::api_definitions(),
        Some(place) => {
            let place = Place::open(place).map_err(|e| e.to_string())?;
            place.type_definitions().map_err(|e| e.to_string())?
        }
    };
    let _ = write!(out, "{text}");
    Ok(0)
}

fn check(place: &std::path::Path, out: &mut dyn Write) -> Result<i32, String> {
    let place = Place::open(place).map_err(|e| e.to_string())?;
    let problems = place.check();
    if problems.is_empty() {
        let _ = writeln!(
            out,
            "{}: ok ({} components, {} systems, {} groups{})",
            place.name(),
            place.components.len(),
            place.systems.len(),
            place.groups.len(),
            if place.setup.is_some() { ", setup" } else { "" }
        );
        return Ok(0);
    }
    let mut text = String::new();
    for problem in &problems {
        text.push_str(&format!("\n  {problem}"));
    }
    Err(format!(
        "{} has {} problem{}:{text}",
        place.name(),
        problems.len(),
        if problems.len() == 1 { "" } else { "s" }
    ))
}

/// The first failure of each system in a run, and how many runs failed.
#[derive(Default)]
struct Failures {
    first: Vec<(String, u64, String)>,
    count: u64,
}

/// How long the frames of a run took to step (`World::step`, without a live run's waits).
#[derive(Default)]
struct FrameTimes {
    total: Duration,
    max: Duration,
    /// Each frame's time in microseconds, for the median: the first [`FrameTimes::KEPT`].
    kept: Vec<u32>,
}

impl FrameTimes {
    /// Frames whose times are kept for the median (a day at 60 frames a second would be 5
    /// million; the mean and the maximum go on past it).
    const KEPT: usize = 1 << 20;

    fn record(&mut self, took: Duration) {
        self.total += took;
        self.max = self.max.max(took);
        if self.kept.len() < Self::KEPT {
            self.kept
                .push(u32::try_from(took.as_micros()).unwrap_or(u32::MAX));
        }
    }

    fn json(&self, frames: u64) -> serde_json::Value {
        let mut kept = self.kept.clone();
        kept.sort_unstable();
        let median = kept
            .get(kept.len() / 2)
            .map_or(0.0, |us| f64::from(*us) / 1e3);
        let mean = if frames == 0 {
            0.0
        } else {
            self.total.as_secs_f64() * 1e3 / frames as f64
        };
        json!({
            "mean_ms": mean,
            "median_ms": median,
            "max_ms": self.max.as_secs_f64() * 1e3,
        })
    }
}

/// What stepping the frames gave: how many ran, the failures, the frames' times.
struct Ran {
    frames: u64,
    failures: Failures,
    times: FrameTimes,
}

fn run(options: &RunOptions, out: &mut dyn Write, err: &mut dyn Write) -> Result<i32, String> {
    let mut place = Place::open(&options.place).map_err(|e| e.to_string())?;
    let (mut world, definitions) = open_world(&place, options, out, err)?;
    if let Some(report) = &definitions
        && !options.json
    {
        let _ = writeln!(out, "definitions synced onto the save:");
        for line in report.lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
    for warning in place.order_warnings(&mut world) {
        let _ = writeln!(err, "warning: {warning}");
    }
    let mut prints: Vec<String> = world.take_prints();
    if !options.json {
        for line in prints.drain(..) {
            let _ = writeln!(out, "{line}");
        }
    }
    // A live run goes on until Ctrl-C unless --frames bounds it.
    let (limit, mut live) = if options.realtime || options.watch || options.serve.is_some() {
        let live = live::Live::start(
            place.config.frame_rate,
            &place.root,
            options.watch,
            options.serve,
            err,
        )?;
        (options.frames, Some(live))
    } else {
        (Some(options.frames.unwrap_or(place.config.frames)), None)
    };
    let started = Instant::now();
    let Ran {
        frames,
        failures,
        times,
    } = step_frames(
        &mut world,
        limit,
        place.dt(),
        live.as_mut().map(|live| (live, &mut place)),
        Output {
            json: options.json,
            out,
            err,
            prints: &mut prints,
        },
    )?;
    let wall = started.elapsed();
    // A failed save is reported after the run's report, which is printed whatever happens.
    let saved = options
        .save
        .as_ref()
        .map(|path| (path, world.save_to_path(path)));
    if options.json {
        let mut document = report_json(&place, &world, frames, wall, &failures, prints);
        document["frame_time"] = times.json(frames);
        if let Some(explorer) = live.as_ref().and_then(live::Live::explorer_time) {
            // The explorer's work between frames, per frame stepped.
            document["frame_time"]["explorer_ms"] =
                json!(explorer.as_secs_f64() * 1e3 / frames.max(1) as f64);
        }
        document["definitions"] = definitions.map_or(serde_json::Value::Null, Into::into);
        document["save"] = match &saved {
            None => serde_json::Value::Null,
            Some((path, Ok(bytes))) => {
                json!({ "path": path.display().to_string(), "bytes": bytes })
            }
            Some((path, Err(e))) => {
                json!({ "path": path.display().to_string(), "error": e.to_string() })
            }
        };
        let _ = writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&document).unwrap_or_default()
        );
    } else {
        let _ = writeln!(out, "\n{}", world.stats_table());
        let _ = writeln!(out, "{}", summary(&place, &world, frames, wall));
    }
    warn_stopped(&world, err);
    let mut code = 0;
    if let Some((path, Err(e))) = &saved {
        let _ = writeln!(
            err,
            "error: {}: {e} (a file that was there is left as it was)",
            path.display()
        );
        code = 1;
    }
    if failures.count > 0 {
        report_failures(&failures, err);
        code = 1;
    }
    Ok(code)
}

/// The place's world: built from its scripts, or loaded from `--load` with the place's
/// definitions synced onto the save (and what the sync did, when it did anything).
fn open_world(
    place: &Place,
    options: &RunOptions,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(World, Option<String>), String> {
    let Some(path) = &options.load else {
        let world = place.build(options.threads).map_err(|e: PlaceError| {
            // What setup printed before it failed is script output like any other (on
            // standard error with --json, whose standard output is one document).
            let sink: &mut dyn Write = if options.json { &mut *err } else { &mut *out };
            for line in e.printed() {
                let _ = writeln!(sink, "{line}");
            }
            e.to_string()
        })?;
        return Ok((world, None));
    };
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let (world, report) = place
        .load(std::io::BufReader::new(file), options.threads)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let did = !(report.added.is_empty()
        && report.changed.is_empty()
        && report.renamed.is_empty()
        && report.removed.is_empty());
    Ok((world, did.then(|| report.to_string())))
}

/// Where a run's output goes: script output to `out` as it comes, or into `prints` for a JSON
/// document (`json`); messages to `err`.
struct Output<'a> {
    json: bool,
    out: &'a mut dyn Write,
    err: &'a mut dyn Write,
    prints: &'a mut Vec<String>,
}

/// Steps frames of the place's `dt`, `limit` of them (or, live, until Ctrl-C): what scripts
/// print is written as it comes (or kept for a JSON document; see [`Output`]), failed system runs
/// are counted, and a progress bar shows on standard error once a bounded run has taken a
/// second. A live run waits for each frame's time and reloads the place between frames.
/// Returns the frames stepped, the failures and the frames' times.
fn step_frames(
    world: &mut World,
    limit: Option<u64>,
    dt: f64,
    mut live: Option<(&mut live::Live, &mut Place)>,
    output: Output<'_>,
) -> Result<Ran, String> {
    let Output {
        json,
        out,
        err,
        prints,
    } = output;
    let started = Instant::now();
    let bar = indicatif::ProgressBar::hidden();
    bar.set_length(limit.unwrap_or(0));
    let mut shown = live.is_some();
    let mut failures = Failures::default();
    let mut times = FrameTimes::default();
    let mut frames = 0;
    while limit.is_none_or(|limit| frames < limit) {
        if let Some((live, place)) = &mut live {
            if live.stopped() {
                break;
            }
            if !live.gap(place, world, json, out, err) {
                continue;
            }
        }
        let frame_started = Instant::now();
        let events = world.step(dt).map_err(|e| e.to_string())?;
        let took = frame_started.elapsed();
        times.record(took);
        for (system, error) in &events.errors {
            failures.count += 1;
            if !failures.first.iter().any(|(s, _, _)| s == system) {
                failures
                    .first
                    .push((system.clone(), events.frame, error.to_string()));
            }
        }
        if json {
            prints.extend(events.prints.iter().cloned());
        } else {
            for line in &events.prints {
                let _ = writeln!(out, "{line}");
            }
        }
        if !shown && started.elapsed() > Duration::from_secs(1) {
            bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            shown = true;
        }
        bar.inc(1);
        frames += 1;
        if let Some((live, _)) = &mut live {
            live.frame_done(world, took);
        }
    }
    bar.finish_and_clear();
    Ok(Ran {
        frames,
        failures,
        times,
    })
}

/// A warning per system that ran away and was stopped.
fn warn_stopped(world: &World, err: &mut dyn Write) {
    for stop in world.stopped_systems() {
        let part = stop
            .part
            .as_ref()
            .map(|p| format!(" (root {p})"))
            .unwrap_or_default();
        let _ = writeln!(
            err,
            "warning: system `{}`{part} ran away at frame {} and was stopped: {}",
            stop.system, stop.frame, stop.reason
        );
    }
}

/// Each failing system's first failure, then how many runs failed.
fn report_failures(failures: &Failures, err: &mut dyn Write) {
    for (system, frame, message) in &failures.first {
        let _ = writeln!(
            err,
            "error: system `{system}` failed at frame {frame}: {message}"
        );
    }
    let _ = writeln!(
        err,
        "error: {} system run{} failed",
        failures.count,
        if failures.count == 1 { "" } else { "s" }
    );
}

/// Checks, before a run starts, that a file (a save, a trace) could be written to `path`: not
/// a folder, in a folder that exists and takes new files. Says what is wrong otherwise.
fn check_destination(path: &std::path::Path) -> Result<(), String> {
    if path.is_dir() {
        return Err("is a folder, not a file".into());
    }
    let folder = match path.parent() {
        Some(folder) if !folder.as_os_str().is_empty() => folder,
        _ => std::path::Path::new("."),
    };
    if !folder.is_dir() {
        return Err(format!("{} is not a folder", folder.display()));
    }
    tempfile::tempfile_in(folder)
        .map(drop)
        .map_err(|e| format!("cannot write in {}: {e}", folder.display()))
}

/// Rows per component, by name.
fn component_rows(world: &World) -> Vec<(String, usize)> {
    let mut rows: Vec<(String, usize)> = world
        .store()
        .components()
        .map(|set| (set.def().name().to_owned(), set.len()))
        .collect();
    rows.sort();
    rows
}

fn summary(place: &Place, world: &World, frames: u64, wall: Duration) -> String {
    let components: Vec<String> = component_rows(world)
        .into_iter()
        .map(|(name, rows)| format!("{name} {rows}"))
        .collect();
    format!(
        "{}: {} frames ({:.3} s simulated, {:.3} s wall) on {} thread{}; {} instances; components: {}; orphan records: {}; world hash {:016x}",
        place.name(),
        frames,
        frames as f64 * place.dt(),
        wall.as_secs_f64(),
        world.threads(),
        if world.threads() == 1 { "" } else { "s" },
        world.arena().live_count(),
        if components.is_empty() {
            "none".to_owned()
        } else {
            components.join(", ")
        },
        world.store().orphans().len(),
        world.hash()
    )
}

fn report_json(
    place: &Place,
    world: &World,
    frames: u64,
    wall: Duration,
    failures: &Failures,
    prints: Vec<String>,
) -> serde_json::Value {
    let systems: Vec<serde_json::Value> = world
        .stats()
        .into_iter()
        .map(|(_, name, s)| {
            json!({
                "name": name,
                "runs": s.runs,
                "mean_ns": s.mean_duration().as_nanos() as u64,
                "max_ns": s.max_duration.as_nanos() as u64,
                "total_ns": s.total_duration.as_nanos() as u64,
                "component_reads": s.component_reads,
                "field_writes": s.field_writes,
                "visited_rows": s.visited_rows,
                "errors": s.errors,
            })
        })
        .collect();
    let stopped: Vec<serde_json::Value> = world
        .stopped_systems()
        .iter()
        .map(
            |s| json!({ "system": s.system, "part": s.part, "frame": s.frame, "reason": s.reason }),
        )
        .collect();
    let errors: Vec<serde_json::Value> = failures
        .first
        .iter()
        .map(|(system, frame, message)| json!({ "system": system, "frame": frame, "message": message }))
        .collect();
    let components: Vec<serde_json::Value> = component_rows(world)
        .into_iter()
        .map(|(name, rows)| json!({ "name": name, "rows": rows }))
        .collect();
    json!({
        "place": place.name(),
        "frames": frames,
        "dt": place.dt(),
        "threads": world.threads(),
        "wall_seconds": wall.as_secs_f64(),
        "systems": systems,
        "failed_runs": failures.count,
        "errors": errors,
        "stopped": stopped,
        "world": {
            "frame": world.frame(),
            "instances": world.arena().live_count(),
            "components": components,
            "orphan_records": world.store().orphans().len(),
            "hash": format!("{:016x}", world.hash()),
        },
        "prints": prints,
    })
}

#[cfg(test)]
mod tests {
    use clap::error::ErrorKind;

    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_owned).collect()
    }

    /// The kind of a refused command line and clap's message, up to the usage line.
    #[track_caller]
    fn refused(line: &str) -> (ErrorKind, String) {
        let error = parse(args(line)).expect_err(line);
        let message = error.render().to_string();
        let message = message
            .lines()
            .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
            .filter(|l| !l.trim().is_empty())
            .collect::<Vec<_>>()
            .join("\n");
        (error.kind(), message)
    }

    #[test]
    fn flags_parse_and_mistakes_are_named() {
        let all = RunOptions {
            place: "p".into(),
            frames: Some(5),
            threads: Some(2),
            json: true,
            save: Some("a".into()),
            load: Some("b".into()),
            trace: Some("t".into()),
            watch: true,
            serve: Some("127.0.0.1:9".parse().unwrap()),
            realtime: true,
        };
        assert_eq!(
            parse(args(
                "run p --frames 5 --threads 2 --json --save a --load b --trace t --watch --serve 127.0.0.1:9 --realtime"
            ))
            .unwrap(),
            Command::Run(all)
        );
        // `--flag=value` too, flags before the place, and the bounds themselves.
        assert_eq!(
            parse(args("run --frames=0 --threads=256 p")).unwrap(),
            Command::Run(RunOptions {
                place: "p".into(),
                frames: Some(0),
                threads: Some(strata::MAX_THREADS),
                ..RunOptions::default()
            })
        );
        assert_eq!(
            parse(args("check p")).unwrap(),
            Command::Check { place: "p".into() }
        );
        assert_eq!(
            parse(args("types")).unwrap(),
            Command::Types { place: None }
        );
        assert_eq!(
            parse(args("types p")).unwrap(),
            Command::Types {
                place: Some("p".into())
            }
        );
        assert_eq!(
            parse(args("completions zsh")).unwrap(),
            Command::Completions {
                shell: clap_complete::Shell::Zsh
            }
        );
        assert_eq!(
            refused("types p q"),
            (
                ErrorKind::UnknownArgument,
                "error: unexpected argument 'q' found".into()
            )
        );
        assert_eq!(
            refused("run p --frames x"),
            (
                ErrorKind::ValueValidation,
                "error: invalid value 'x' for '--frames <N>': not a whole number of frames".into()
            )
        );
        assert_eq!(
            refused("run p --threads 0"),
            (
                ErrorKind::ValueValidation,
                "error: invalid value '0' for '--threads <N>': the count must be between 1 and 256"
                    .into()
            )
        );
        assert_eq!(
            refused("run p --threads 10000"),
            (
                ErrorKind::ValueValidation,
                "error: invalid value '10000' for '--threads <N>': the count must be between 1 and 256"
                    .into()
            )
        );
        assert_eq!(
            refused("run p --frames -1"),
            (
                ErrorKind::ValueValidation,
                "error: invalid value '-1' for '--frames <N>': not a whole number of frames".into()
            )
        );
        assert_eq!(
            refused("run p --threads=-2"),
            (
                ErrorKind::ValueValidation,
                "error: invalid value '-2' for '--threads <N>': not a whole number; the count must be between 1 and 256".into()
            )
        );
        assert_eq!(
            refused("run"),
            (
                ErrorKind::MissingRequiredArgument,
                "error: the following required arguments were not provided:\n  <PLACE>".into()
            )
        );
        assert_eq!(
            refused("run p --fast"),
            (
                ErrorKind::UnknownArgument,
                "error: unexpected argument '--fast' found\n  tip: to pass '--fast' as a value, use '-- --fast'".into()
            )
        );
        // A misspelt flag gets the one it most likely meant.
        assert_eq!(
            refused("run p --thread 2"),
            (
                ErrorKind::UnknownArgument,
                "error: unexpected argument '--thread' found\n  tip: a similar argument exists: '--threads'".into()
            )
        );
        assert_eq!(
            refused("run p --json=yes"),
            (
                ErrorKind::TooManyValues,
                "error: unexpected value 'yes' for '--json' found; no more were expected".into()
            )
        );
        assert_eq!(
            refused("fly"),
            (
                ErrorKind::InvalidSubcommand,
                "error: unrecognized subcommand 'fly'".into()
            )
        );
        assert_eq!(
            refused(""),
            (
                ErrorKind::MissingSubcommand,
                "error: 'strata' requires a subcommand but one was not provided\n  [subcommands: run, check, types, completions, help]".into()
            )
        );
        assert_eq!(
            refused("completions tcsh"),
            (
                ErrorKind::InvalidValue,
                "error: invalid value 'tcsh' for '<SHELL>'\n  [possible values: bash, elvish, fish, powershell, zsh]\n  tip: a similar value exists: 'zsh'".into()
            )
        );
        // What is asked for rather than refused: help and the version, on standard output.
        for line in ["--help", "-h", "help", "run --help", "help run", "check -h"] {
            let error = parse(args(line)).expect_err(line);
            assert_eq!(error.kind(), ErrorKind::DisplayHelp, "{line}");
            assert!(!error.use_stderr() && error.exit_code() == 0, "{line}");
        }
        assert_eq!(refused("-V").0, ErrorKind::DisplayVersion);
    }

    /// The bound the help states is the one `--threads` checks.
    #[test]
    fn the_run_help_names_the_thread_bound() {
        let help = <Cli as clap::CommandFactory>::command()
            .find_subcommand_mut("run")
            .expect("run is a command")
            .render_long_help()
            .to_string();
        assert!(
            help.contains(&format!("1 to {}", strata::MAX_THREADS)),
            "{help}"
        );
    }
}
