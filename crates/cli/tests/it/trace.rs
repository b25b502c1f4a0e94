//! `strata run --trace FILE`: the file parses as Chrome trace events, every system of the place
//! has its spans with their nesting on the thread that ran them, and a refused destination runs
//! nothing.

use crate::common::{example, scratch};
use std::path::Path;

use serde_json::Value;

/// Runs the binary (a trace takes the process's global recorder, so each run is a process of
/// its own) and returns its exit code and standard error.
fn strata(args: &[&str]) -> (Option<i32>, String) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// One span of the trace: its kind, name, thread, and begin and end in microseconds.
#[derive(Debug, Clone)]
struct Span {
    kind: String,
    name: String,
    thread: u64,
    begin: f64,
    end: f64,
    /// The spans open on the same thread when it began, outermost first, as (kind, name).
    within: Vec<(String, String)>,
}

/// The spans of a trace file, checking as it reads that the file is a JSON array of events and
/// that every thread's begins and ends nest.
fn spans(path: &Path) -> Vec<Span> {
    let text = std::fs::read_to_string(path).unwrap();
    let events: Vec<Value> = serde_json::from_str(&text).expect("a trace is a JSON array");
    let mut open: std::collections::HashMap<u64, Vec<Span>> = Default::default();
    let mut done = Vec::new();
    for event in &events {
        let phase = event["ph"].as_str().unwrap();
        let thread = event["tid"].as_u64().unwrap();
        let stack = open.entry(thread).or_default();
        match phase {
            "B" => {
                let within = stack
                    .iter()
                    .map(|s| (s.kind.clone(), s.name.clone()))
                    .collect();
                stack.push(Span {
                    kind: event["cat"].as_str().unwrap().to_owned(),
                    name: event["name"].as_str().unwrap().to_owned(),
                    thread,
                    begin: event["ts"].as_f64().unwrap(),
                    end: f64::NAN,
                    within,
                });
            }
            "E" => {
                let mut span = stack.pop().expect("an end closes a begun span");
                assert_eq!(
                    span.name,
                    event["name"].as_str().unwrap(),
                    "ends close the innermost span of their thread"
                );
                span.end = event["ts"].as_f64().unwrap();
                assert!(span.end >= span.begin, "{span:?}");
                done.push(span);
            }
            _ => {}
        }
    }
    assert!(
        open.values().all(Vec::is_empty),
        "every span ends: {open:?}"
    );
    done
}

fn of<'a>(spans: &'a [Span], kind: &str, name: &str) -> Vec<&'a Span> {
    spans
        .iter()
        .filter(|s| s.kind == kind && s.name == name)
        .collect()
}

#[test]
fn a_trace_holds_every_system_nested_in_its_frame_and_phase_on_the_thread_that_ran_it() {
    let dir = scratch("tour");
    let trace = dir.join("tour.json");
    let save = dir.join("tour.strata");
    let (code, err) = strata(&[
        "run",
        &example("tour"),
        "--frames",
        "40",
        "--threads",
        "2",
        "--trace",
        trace.to_str().unwrap(),
        "--save",
        save.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    let spans = spans(&trace);
    let frames: Vec<&Span> = spans.iter().filter(|s| s.kind == "world_frame").collect();
    assert_eq!(frames.len(), 40);
    assert_eq!(frames[0].name, "frame 0");
    let main = frames[0].thread;
    assert!(frames.iter().all(|f| f.thread == main));

    // Serial systems: on the main thread, inside a frame and the phase they belong to.
    for (system, stage, runs) in [
        ("lifetime", "Frame(PostUpdate)", 40),
        ("report", "Frame(Last)", 40),
        // Every half second of 40 frames at 60 a second: once.
        ("regen", "Frame(Update)", 1),
        // The fixed step, 30 a second, runs in the fixed block.
        ("gravity", "Fixed(Update)", 20),
    ] {
        let runs_seen = of(&spans, "system", system);
        assert_eq!(runs_seen.len(), runs, "{system}: {runs_seen:?}");
        for run in runs_seen {
            assert_eq!(run.thread, main, "{system} runs on the main thread");
            assert_eq!(run.within[0].0, "world_frame", "{system}: {run:?}");
            assert!(
                run.within
                    .iter()
                    .any(|(kind, name)| kind == "stage" && name == stage),
                "{system} is in {stage}: {run:?}"
            );
        }
    }
    // The parallel system: on a thread of the pool, inside a frame's time.
    let moves = of(&spans, "system", "move");
    assert_eq!(moves.len(), 40);
    for run in &moves {
        assert_ne!(
            run.thread, main,
            "a parallel system runs on the pool: {run:?}"
        );
        assert!(
            frames
                .iter()
                .any(|f| f.begin <= run.begin && run.end <= f.end),
            "{run:?}"
        );
    }
    // Its overlay commits, the definition syncs, the ends of frames and the save.
    assert!(spans.iter().any(|s| s.kind == "overlay_commit"));
    assert!(spans.iter().any(|s| s.kind == "definition_sync"));
    assert_eq!(spans.iter().filter(|s| s.kind == "frame_end").count(), 40);
    let saves: Vec<&Span> = spans.iter().filter(|s| s.kind == "save").collect();
    assert_eq!(saves.len(), 1);
    assert!(saves[0].begin >= frames[39].end, "the save follows the run");
    strata::World::load_from_path(&save).expect("the save loads");
}

#[test]
fn a_trace_puts_each_group_lane_on_a_pool_thread() {
    let dir = scratch("groups");
    let trace = dir.join("groups.json");
    let (code, err) = strata(&[
        "run",
        &example("groups"),
        "--frames",
        "3",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    let spans = spans(&trace);
    let main = spans
        .iter()
        .find(|s| s.kind == "world_frame")
        .unwrap()
        .thread;
    let runner = of(&spans, "system", "group:room");
    assert_eq!(runner.len(), 3);
    let lanes: Vec<&Span> = spans.iter().filter(|s| s.kind == "group").collect();
    // Four rooms, three frames.
    assert_eq!(lanes.len(), 12, "{lanes:?}");
    for lane in lanes {
        assert!(lane.name.starts_with("groups/room.luau #"), "{lane:?}");
        assert_ne!(lane.thread, main, "{lane:?}");
        assert!(
            runner
                .iter()
                .any(|r| r.begin <= lane.begin && lane.end <= r.end),
            "a lane runs inside its group system's span: {lane:?}"
        );
    }
}

#[test]
fn a_trace_destination_that_cannot_be_written_is_refused_before_the_run() {
    let dir = scratch("refused");
    std::fs::write(dir.join("file.txt"), "not a folder").unwrap();
    let tour = example("tour");
    for destination in [
        dir.join("missing/run.json"),
        dir.clone(),
        dir.join("file.txt/run.json"),
    ] {
        let (code, err) = strata(&["run", &tour, "--trace", destination.to_str().unwrap()]);
        assert_eq!(code, Some(2), "{}: {err}", destination.display());
        assert!(err.contains("--trace"), "{err}");
    }
    let same = dir.join("same");
    let (code, err) = strata(&[
        "run",
        &tour,
        "--trace",
        same.to_str().unwrap(),
        "--save",
        same.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("the same file"), "{err}");
    assert!(!same.exists(), "nothing ran");
}
