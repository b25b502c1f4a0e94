//! Runs a Luau workload's fixture and then a given number of frames, with nothing else, for an
//! instruction count under callgrind (which, unlike a timer, does not move with the machine's
//! noise). Run it twice, with 0 frames and with N, and divide the difference by N × entities:
//! that is the work of one frame per entity, the fixture's setup cancelled out.
//!
//! ```text
//! cargo build --release -p strata-bench --features peers --example luau_frames
//! valgrind --tool=callgrind --smc-check=all target/release/examples/luau_frames frame 0 20000
//! valgrind --tool=callgrind --smc-check=all target/release/examples/luau_frames frame 5 20000
//! ```
//!
//! `--smc-check=all` lets valgrind see the native code Luau generates. jecs needs
//! `STRATA_JECS` (see `peers::jecs`). Keep the entity count small for `handles`: under callgrind
//! its first frame must finish within the game VM's 5-second time budget.

use clap::{Parser, ValueEnum};
use strata::prelude::ClassId;
use strata_bench::data::luau::{CHANGED_SIZE, CHANGED_STRIDE, DT};
use strata_bench::luau;
use strata_bench::peers::jecs;
use strata_script::prelude::*;

/// The work to repeat.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum Work {
    /// `luau_frame_1m`'s world: the parallel `move` system on 2 threads.
    Frame,
    /// `luau_frame_1m_groups`'s world: the stress place's move group script in two groups on
    /// 2 threads.
    Groups,
    /// `luau_iter2`'s world: the column path on one thread.
    Columns,
    /// `luau_iter2_handles`'s world: the handle path on one thread.
    Handles,
    /// [`Work::Handles`] with one more mover (`Position` and `Velocity`) added before each
    /// frame, so the query's mirror of wrappers and handles is made again every frame.
    HandlesGrowing,
    /// jecs's step of `luau_iter2` and `luau_frame_1m`.
    Jecs,
    /// `luau_changed`: 1% of the rows written from Rust, then a frame of the visiting system
    /// (`entities` is ignored: the workload's size).
    Changed,
    /// `luau_changed`'s writes alone, to subtract from [`Work::Changed`].
    ChangedWrites,
    /// jecs's `luau_changed`: the writes (with the `Changed` tag), then the visit.
    JecsChanged,
    /// jecs's `luau_changed` writes alone.
    JecsChangedWrites,
    /// `luau_spawn`'s script, run in a fresh world once per frame (`entities` is ignored:
    /// the script's count).
    Spawn,
    /// `luau_spawn_bulk`'s script, run in a fresh world once per frame (`entities` is ignored:
    /// the script's count).
    SpawnBulk,
}

/// Runs a Luau workload's fixture, then `frames` frames.
#[derive(Debug, Parser)]
struct Args {
    /// The work.
    work: Work,
    /// Frames after the fixture.
    frames: u32,
    /// Entities.
    entities: u64,
}

fn main() {
    let args = Args::parse();
    match args.work {
        Work::Frame => {
            let (mut world, _) = luau::frame_world(args.entities);
            (0..args.frames).for_each(|_| luau::frame(&mut world));
        }
        Work::Groups => {
            let (mut world, _) = luau::frame_groups_world(args.entities);
            (0..args.frames).for_each(|_| luau::frame(&mut world));
        }
        Work::HandlesGrowing => {
            let mut world = luau::iter_world(args.entities, luau::ITER_HANDLES);
            let components = ["Position", "Velocity"]
                .map(|name| world.component(name).unwrap_or_else(|e| panic!("{e}")));
            for _ in 0..args.frames {
                let id = world
                    .create(ClassId::ENTITY, None)
                    .unwrap_or_else(|e| panic!("{e}"));
                for c in components {
                    world.add(id, c, []).unwrap_or_else(|e| panic!("{e}"));
                }
                luau::frame(&mut world);
            }
        }
        Work::Columns | Work::Handles => {
            let source = match args.work {
                Work::Columns => luau::ITER_COLUMNS,
                _ => luau::ITER_HANDLES,
            };
            let mut world = luau::iter_world(args.entities, source);
            (0..args.frames).for_each(|_| luau::frame(&mut world));
        }
        Work::Changed | Work::ChangedWrites => {
            // Under callgrind the first frame visits every row (all were added) far slower than
            // the standard 5-second run budget allows; the budget is not part of the work.
            let (mut world, ids) = luau::changed_world_under(ScriptBudget {
                time: std::time::Duration::from_secs(600),
                ..ScriptBudget::STANDARD
            });
            for frame in 0..args.frames {
                luau::write_one_percent(&mut world, &ids, u64::from(frame));
                if matches!(args.work, Work::Changed) {
                    luau::frame(&mut world);
                }
            }
        }
        Work::JecsChanged | Work::JecsChangedWrites => {
            let lua = jecs::vm();
            let (write, visit) = jecs::changed_world(&lua, CHANGED_SIZE);
            for frame in 0..args.frames {
                write
                    .call::<()>((CHANGED_STRIDE, f64::from(frame) + 0.5))
                    .unwrap_or_else(|e| panic!("jecs write: {e}"));
                if matches!(args.work, Work::JecsChanged) {
                    visit
                        .call::<u64>(())
                        .unwrap_or_else(|e| panic!("jecs visit: {e}"));
                }
            }
        }
        Work::Spawn | Work::SpawnBulk => {
            let source = match args.work {
                Work::Spawn => luau::SPAWN,
                _ => luau::SPAWN_BULK,
            };
            for _ in 0..args.frames {
                luau::scripted_world()
                    .run_script("spawn.luau", source)
                    .unwrap_or_else(|e| panic!("spawn: {e}"));
            }
        }
        Work::Jecs => {
            let (_lua, step, _) = jecs::iter_world(args.entities);
            for _ in 0..args.frames {
                step.call::<()>(DT)
                    .unwrap_or_else(|e| panic!("jecs step: {e}"));
            }
        }
    }
}
