//! The `strata` command: runs a place headlessly, or checks it.
//!
//! ```text
//! strata run PLACE [--frames N] [--threads N] [--json] [--save FILE] [--load FILE]
//! strata check PLACE
//! strata types [PLACE]
//! ```
//!
//! `run` builds the place's world (or loads a save of it), steps it frame by frame, writes
//! what scripts print as the frames run, then a statistics table per system and a summary of
//! the world; `--json` writes the same as one JSON document instead. A progress bar goes to
//! standard error once a run has taken a second. `check` validates the place without running
//! it. `types` writes the Luau type definitions of the game API, or of a place's components.
//!
//! Invariant: every user mistake (a missing folder, a bad `place.toml`, a script error, a
//! damaged save, a wrong flag) ends with a message on standard error naming the file and, for
//! scripts, the line, and a non-zero exit code; never a panic. Exit codes: 0 done, 1 the place
//! or a run failed (including systems that failed during the run), 2 the command line is
//! wrong.

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::json;
use strata::prelude::*;
use strata_script::{Place, PlaceError};

/// The usage text.
pub const USAGE: &str = "\
usage: strata run PLACE [--frames N] [--threads N] [--json] [--save FILE] [--load FILE]
       strata check PLACE
       strata types [PLACE]

  run      builds the place's world (or loads --load FILE), steps it, prints what scripts
           print, then per-system statistics and a summary of the world
  check    validates the place (schemas, systems, groups, setup) without running it
  types    writes the Luau type definitions (.d.luau) of the game API, or with PLACE of
           the place's components

  --frames N    frames to step (default: place.toml's `frames`)
  --threads N   threads for parallel systems and groups (default: place.toml's, or the machine's)
  --json        write statistics and the summary as JSON (script output included)
  --save FILE   save the world to FILE after the run
  --load FILE   start from the world saved in FILE instead of running setup.luau
";

/// What `run` was asked to do.
#[derive(Debug, Default, PartialEq)]
struct RunOptions {
    place: PathBuf,
    frames: Option<u64>,
    threads: Option<usize>,
    json: bool,
    save: Option<PathBuf>,
    load: Option<PathBuf>,
}

#[derive(Debug, PartialEq)]
enum Command {
    Run(RunOptions),
    Check(PathBuf),
    Types(Option<PathBuf>),
    Help,
    Version,
}

fn number<T: std::str::FromStr>(flag: &str, value: Option<String>) -> Result<T, String> {
    let value = value.ok_or_else(|| format!("{flag} needs a value"))?;
    value
        .parse()
        .map_err(|_| format!("{flag} takes a whole number, not `{value}`"))
}

fn parse(args: Vec<String>) -> Result<Command, String> {
    let mut args = args.into_iter();
    let Some(command) = args.next() else {
        return Err("no command given".into());
    };
    match command.as_str() {
        "-h" | "--help" | "help" => Ok(Command::Help),
        "-V" | "--version" => Ok(Command::Version),
        "check" => {
            let place = args.next().ok_or("check needs a PLACE folder")?;
            if let Some(extra) = args.next() {
                return Err(format!("unexpected argument `{extra}`"));
            }
            Ok(Command::Check(place.into()))
        }
        "types" => {
            let place = args.next().map(PathBuf::from);
            if let Some(extra) = args.next() {
                return Err(format!("unexpected argument `{extra}`"));
            }
            Ok(Command::Types(place))
        }
        "run" => {
            let mut options = RunOptions::default();
            let mut place = None;
            while let Some(arg) = args.next() {
                match arg.as_str() {
                    "--frames" => options.frames = Some(number("--frames", args.next())?),
                    "--threads" => {
                        let threads: usize = number("--threads", args.next())?;
                        if !(1..=strata::MAX_THREADS).contains(&threads) {
                            return Err(format!(
                                "--threads must be between 1 and {}, not {threads}",
                                strata::MAX_THREADS
                            ));
                        }
                        options.threads = Some(threads);
                    }
                    "--json" => options.json = true,
                    "--save" => {
                        options.save = Some(args.next().ok_or("--save needs a FILE")?.into());
                    }
                    "--load" => {
                        options.load = Some(args.next().ok_or("--load needs a FILE")?.into());
                    }
                    flag if flag.starts_with('-') => {
                        return Err(format!("unknown flag `{flag}`"));
                    }
                    _ if place.is_none() => place = Some(arg),
                    _ => return Err(format!("unexpected argument `{arg}`")),
                }
            }
            options.place = place.ok_or("run needs a PLACE folder")?.into();
            Ok(Command::Run(options))
        }
        other => Err(format!("unknown command `{other}`")),
    }
}

/// Runs the command line `args` (without the program name), writing to `out` and `err`, and
/// returns the exit code.
pub fn main_with(args: Vec<String>, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let command = match parse(args) {
        Ok(command) => command,
        Err(message) => {
            let _ = writeln!(err, "strata: {message}\n\n{USAGE}");
            return 2;
        }
    };
    let result = match command {
        Command::Help => {
            let _ = write!(out, "{USAGE}");
            return 0;
        }
        Command::Version => {
            let _ = writeln!(out, "strata {}", env!("CARGO_PKG_VERSION"));
            return 0;
        }
        Command::Check(place) => check(&place, out),
        Command::Types(place) => types(place.as_deref(), out),
        Command::Run(options) => {
            if let Some(path) = &options.save
                && let Err(message) = check_destination(path)
            {
                let _ = writeln!(err, "strata: --save {}: {message}", path.display());
                return 2;
            }
            run(&options, out, err)
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

fn run(options: &RunOptions, out: &mut dyn Write, err: &mut dyn Write) -> Result<i32, String> {
    let place = Place::open(&options.place).map_err(|e| e.to_string())?;
    let (mut world, definitions) = match &options.load {
        Some(path) => {
            let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let (world, report) = place
                .load(std::io::BufReader::new(file), options.threads)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            // What syncing the place's components onto the saved ones did, when it did
            // anything.
            let did = !(report.added.is_empty()
                && report.changed.is_empty()
                && report.renamed.is_empty()
                && report.removed.is_empty());
            (world, did.then(|| report.to_string()))
        }
        None => (
            place.build(options.threads).map_err(|e: PlaceError| {
                // What setup printed before it failed is script output like any other (on
                // standard error with --json, whose standard output is one document).
                let sink: &mut dyn Write = if options.json { &mut *err } else { &mut *out };
                for line in e.printed() {
                    let _ = writeln!(sink, "{line}");
                }
                e.to_string()
            })?,
            None,
        ),
    };
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
    let frames = options.frames.unwrap_or(place.config.frames);
    let dt = place.dt();
    let started = Instant::now();
    let bar = indicatif::ProgressBar::hidden();
    bar.set_length(frames);
    let mut shown = false;
    let mut failures = Failures::default();
    for _ in 0..frames {
        let events = world.step(dt).map_err(|e| e.to_string())?;
        let frame = events.frame;
        for (system, error) in &events.errors {
            failures.count += 1;
            if !failures.first.iter().any(|(s, _, _)| s == system) {
                failures
                    .first
                    .push((system.clone(), frame, error.to_string()));
            }
        }
        if options.json {
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
    }
    bar.finish_and_clear();
    let wall = started.elapsed();
    // A failed save is reported after the run's report, which is printed whatever happens.
    let saved = options
        .save
        .as_ref()
        .map(|path| (path, world.save_to_path(path)));
    if options.json {
        let mut document = report_json(&place, &world, frames, wall, &failures, prints);
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
        code = 1;
    }
    Ok(code)
}

/// Checks, before a run starts, that a save could be written to `path`: not a folder, in a
/// folder that exists and takes new files. Says what is wrong otherwise.
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
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn flags_parse_and_mistakes_are_named() {
        assert_eq!(
            parse(args(
                "run p --frames 5 --threads 2 --json --save a --load b"
            )),
            Ok(Command::Run(RunOptions {
                place: "p".into(),
                frames: Some(5),
                threads: Some(2),
                json: true,
                save: Some("a".into()),
                load: Some("b".into()),
            }))
        );
        assert_eq!(parse(args("check p")), Ok(Command::Check("p".into())));
        assert_eq!(parse(args("types")), Ok(Command::Types(None)));
        assert_eq!(parse(args("types p")), Ok(Command::Types(Some("p".into()))));
        assert_eq!(
            parse(args("types p q")),
            Err("unexpected argument `q`".into())
        );
        assert_eq!(
            parse(args("run p --frames x")),
            Err("--frames takes a whole number, not `x`".into())
        );
        assert_eq!(
            parse(args("run p --threads 0")),
            Err("--threads must be between 1 and 256, not 0".into())
        );
        assert_eq!(parse(args("run")), Err("run needs a PLACE folder".into()));
        assert_eq!(
            parse(args("run p --fast")),
            Err("unknown flag `--fast`".into())
        );
        assert_eq!(parse(args("fly")), Err("unknown command `fly`".into()));
        assert_eq!(parse(Vec::new()), Err("no command given".into()));
    }
}
