//! Runs `schedule`'s world for a given number of frames and prints the mean wall time of one,
//! for a profiler (`perf record`) or an instruction count (callgrind) of the frame loop's
//! parallel systems without the harness around them.
//!
//! ```text
//! cargo build --release -p strata-bench --example schedule_frames
//! perf record -g target/release/examples/schedule_frames 3000 10000
//! ```
//!
//! The arguments are the frames (default 1,000) and the entities per group (default
//! `schedule::GROUP`, as the workload has them).

use std::io::Write;

use strata_bench::data::schedule::GROUP;
use strata_bench::world::{frame, schedule_world};

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let frames: u32 = args.next().and_then(|s| s.parse().ok()).unwrap_or(1000);
    let group: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(GROUP);
    let mut world = schedule_world(group);
    let started = std::time::Instant::now();
    let mut applied = 0;
    for _ in 0..frames {
        applied += frame(&mut world);
    }
    let per_frame = started.elapsed() / frames.max(1);
    writeln!(
        std::io::stdout(),
        "{frames} frames of {group} entities per group: {applied} writes applied, {per_frame:?} per frame"
    )
}
