//! Runs `schedule`'s world for a given number of frames and prints the mean wall time of one,
//! for a profiler (`perf record`) or an instruction count (callgrind) of the frame loop's
//! parallel systems without the harness around them.
//!
//! ```text
//! cargo build --release -p strata-bench --example schedule_frames
//! perf record -g target/release/examples/schedule_frames 3000 10000
//! ```
//!
//! The arguments are the frames (default 1,000), the entities per group (default
//! `schedule::GROUP`, as the workload has them) and, built with `--features peers`, `bevy` to
//! run bevy_ecs's frame of the same workload instead, for the same counts of the peer.

use std::io::Write;

use strata_bench::data::schedule::GROUP;
use strata_bench::world::{frame, schedule_world};

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let frames: u32 = args.next().and_then(|s| s.parse().ok()).unwrap_or(1000);
    let group: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(GROUP);
    #[cfg(feature = "peers")]
    if args.next().as_deref() == Some("bevy") {
        use strata_bench::head_to_head::Library;
        use strata_bench::peers::bevy::Bevy;
        let mut fixture = Bevy::swapping(group);
        let started = std::time::Instant::now();
        for _ in 0..frames {
            Bevy::run_frame(&mut fixture);
        }
        let per_frame = started.elapsed() / frames.max(1);
        return writeln!(
            std::io::stdout(),
            "bevy_ecs: {frames} frames of {group} entities per group, {per_frame:?} per frame"
        );
    }
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
