//! Lane shuffling: a test mode that varies how a parallel run meets the pool.
//!
//! A parallel run (a wave of parallel systems, or the execution groups of one group script)
//! hands its jobs to the pool, and its lanes hand their write sets to the commit as they
//! finish. Which lane takes which job, and which finishes first, depend on threads and timing.
//! Under a seed, [`LaneShuffle`] hands the jobs over in a permuted order and holds each job for
//! a pseudo-random while before it starts, so a test stepping a world under several seeds meets
//! many assignments and finishing orders.
//!
//! Invariant: a shuffle decides only the order jobs are handed to the pool and how long each
//! waits before it runs; never what a job reads, its writer rank, or the order its prints and
//! results are reported in. A world steps to exactly the same state under any seed as without
//! one; a difference is a defect in the parallel path.

use std::time::{Duration, Instant};

/// A seed for shuffling lanes (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LaneShuffle {
    seed: u64,
}

/// The longest a job is held before it starts.
const LONGEST_STALL: Duration = Duration::from_micros(300);

/// splitmix64's finaliser: a well-mixed 64-bit value from any input.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl LaneShuffle {
    pub(crate) fn new(seed: u64) -> Self {
        Self { seed }
    }

    /// A value for job `job` of the run `run` (any number telling a frame's runs apart) in
    /// frame `frame`.
    fn draw(self, frame: u64, run: u64, job: u64) -> u64 {
        mix(mix(mix(mix(self.seed) ^ frame) ^ run) ^ job)
    }

    /// The order to hand `jobs` jobs of a run to the pool: a permutation of `0..jobs`.
    pub(crate) fn order(self, frame: u64, run: u64, jobs: usize) -> Vec<usize> {
        let mut order: Vec<usize> = (0..jobs).collect();
        // Fisher–Yates, drawing from the seed.
        for i in (1..jobs).rev() {
            let j = (self.draw(frame, run, i as u64) % (i as u64 + 1)) as usize;
            order.swap(i, j);
        }
        order
    }

    /// Holds the calling lane before job `job` starts: a quarter of jobs start at once, the
    /// rest after yielding or spinning up to [`LONGEST_STALL`].
    pub(crate) fn stall(self, frame: u64, run: u64, job: usize) {
        let draw = self.draw(frame, run ^ 0x5717, job as u64);
        match draw % 4 {
            0 => {}
            1 => std::thread::yield_now(),
            _ => {
                let wait = Duration::from_nanos((draw >> 8) % LONGEST_STALL.as_nanos() as u64);
                let started = Instant::now();
                while started.elapsed() < wait {
                    std::hint::spin_loop();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_are_permutations_that_vary_with_the_seed_frame_and_run() {
        let mut seen = std::collections::HashSet::new();
        for seed in 0..4 {
            for frame in 0..4 {
                for run in 0..4 {
                    let order = LaneShuffle::new(seed).order(frame, run, 6);
                    let mut sorted = order.clone();
                    sorted.sort_unstable();
                    assert_eq!(sorted, (0..6).collect::<Vec<_>>());
                    assert_eq!(order, LaneShuffle::new(seed).order(frame, run, 6));
                    seen.insert(order);
                }
            }
        }
        assert!(seen.len() > 32, "only {} distinct orders", seen.len());
        assert_eq!(LaneShuffle::new(1).order(0, 0, 0), Vec::<usize>::new());
    }
}
