//! A driver for profilers (`perf record`, `valgrind --tool=callgrind`): runs one arena workload
//! of a given size once, so the instruction count or the profile belongs to that workload alone.
//!
//! Invariant: every workload runs through the public API only and prints nothing but a one-line
//! summary, so two builds can be compared by instruction counts.
//!
//! Usage: `arena_profile WORKLOAD N`, with WORKLOAD one of `create` (single creates under one
//! parent), `create_root` (single unparented creates), `create_many`, `churn` (create N
//! unparented entities in bulk, destroy every other one, drain twice, create as many again),
//! `destroy_subtree` (a hundred branches, destroyed as one subtree, drained twice), `snapshot`
//! (N entities, a snapshot, a write to every thousandth, and a timed diff), `snapshot_write` (N entities, then a
//! thousand rounds of a snapshot and one write to a node, timed per round).

use std::hint::black_box;
use std::io::Write;
use std::process::ExitCode;

use strata_arena::{Arena, ArenaError, ClassId, InstanceId};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(workload), Some(n)) = (
        args.get(1),
        args.get(2).and_then(|n| n.parse::<usize>().ok()),
    ) else {
        let _ = writeln!(std::io::stderr(), "usage: arena_profile WORKLOAD N");
        return ExitCode::FAILURE;
    };
    match run(workload, n) {
        Ok(summary) => {
            let _ = writeln!(std::io::stdout(), "{workload} {n}: {summary}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            let _ = writeln!(std::io::stderr(), "{workload} {n}: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run(workload: &str, n: usize) -> Result<String, ArenaError> {
    let mut arena = Arena::standard();
    match workload {
        "create" => {
            let root = arena.create(ClassId::FOLDER, None)?;
            for _ in 0..n {
                black_box(arena.create(ClassId::ENTITY, Some(root))?);
            }
        }
        "create_root" => {
            for _ in 0..n {
                black_box(arena.create(ClassId::ENTITY, None)?);
            }
        }
        "create_many" => {
            black_box(arena.create_many(ClassId::ENTITY, None, n)?);
        }
        "churn" => {
            let made = arena.create_many(ClassId::ENTITY, None, n)?;
            arena.drain()?;
            for (id, _) in made.iter().step_by(2) {
                black_box(arena.destroy(*id)?);
            }
            for _ in 0..2 {
                black_box(arena.drain()?);
            }
            for _ in 0..n / 2 {
                black_box(arena.create(ClassId::ENTITY, None)?);
            }
        }
        "destroy_subtree" => {
            let game = arena.create(ClassId::FOLDER, None)?;
            let root = arena.create(ClassId::FOLDER, Some(game))?;
            for _ in 0..100 {
                let branch = arena.create(ClassId::FOLDER, Some(root))?;
                for _ in 0..(n / 100).saturating_sub(1) {
                    arena.create(ClassId::ENTITY, Some(branch))?;
                }
            }
            black_box(arena.destroy(root)?);
            black_box(arena.drain()?);
            black_box(arena.drain()?);
        }
        "snapshot" => {
            let made = arena.create_many(ClassId::ENTITY, None, n)?;
            let before = arena.snapshot();
            let ids: Vec<InstanceId> = made.iter().map(|(id, _)| *id).collect();
            for id in ids.iter().step_by(1000) {
                arena.set_name(*id, "Written")?;
            }
            let after = arena.snapshot();
            let start = std::time::Instant::now();
            let diff = after.diff(&before);
            let took = start.elapsed();
            return Ok(format!(
                "{} changed, diff took {took:?}",
                diff.changed.len()
            ));
        }
        "snapshot_write" => {
            let made = arena.create_many(ClassId::ENTITY, None, n)?;
            let target = made[made.len() / 2].0;
            let rounds = 1000;
            let start = std::time::Instant::now();
            for round in 0..rounds {
                let snapshot = arena.snapshot();
                arena.set_name(target, if round % 2 == 0 { "A" } else { "B" })?;
                black_box(snapshot);
            }
            let per_round = start.elapsed() / rounds;
            return Ok(format!("{per_round:?} per snapshot and first write"));
        }
        other => return Ok(format!("unknown workload {other}")),
    }
    Ok(format!(
        "{} live, {} slots, {} events pending",
        arena.live_count(),
        arena.slot_capacity(),
        arena.pending_events().len()
    ))
}
