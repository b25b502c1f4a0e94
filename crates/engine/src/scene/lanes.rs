//! Lane shuffling: a test mode that varies how a parallel run meets the pool.
//!
//! A parallel run (a wave of parallel systems, or the execution groups of one group script)
//! hands its jobs to the pool, and its lanes hand their write sets to the commit as they
//! finish. Which lane takes which job, and which finishes first, depend on threads and timing.
//! Under a seed, [`LaneShuffle`] hands the jobs over in a permuted order and holds each job for
//! a pseudo-random while before it starts, so a test stepping a world under several seeds meets
//! many assignments and finishing orders.
//!
//! [`run_lanes`] is the one way a parallel run meets the pool: it returns the jobs' results in
//! job order, and the order the jobs finished in, which is the order their write sets go to the
//! commit.
//!
//! Invariant: a shuffle decides only the order jobs are handed to the pool and how long each
//! waits before it runs; never what a job reads, its writer rank, or the order its prints and
//! results are reported in. A world steps to exactly the same state under any seed as without
//! one; a difference is a defect in the parallel path.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use rayon::prelude::*;

/// A seed for shuffling lanes (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LaneShuffle {
    seed: u64,
}

/// The longest a job is held before it starts.
const LONGEST_STALL: Duration = Duration::from_micros(300);

/// One splitmix64 step: a well-mixed 64-bit value from any input.
fn mix(z: u64) -> u64 {
    strata_mix::splitmix64(z)
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

/// Runs every job through `work`, on `pool` (one after another without one), shuffled by
/// `shuffle` when given (`frame` and `run` pick the draw: `run` tells a frame's runs apart).
/// Returns the results in job order, and the jobs' indexes in the order they finished.
pub(crate) fn run_lanes<J: Send, R: Send>(
    pool: Option<&rayon::ThreadPool>,
    shuffle: Option<LaneShuffle>,
    frame: u64,
    run: u64,
    jobs: Vec<J>,
    work: impl Fn(J) -> R + Sync,
) -> (Vec<R>, Vec<usize>) {
    let count = jobs.len();
    let mut jobs: Vec<(usize, J)> = jobs.into_iter().enumerate().collect();
    if let Some(shuffle) = shuffle {
        let mut held: Vec<Option<(usize, J)>> = jobs.into_iter().map(Some).collect();
        jobs = shuffle
            .order(frame, run, count)
            .into_iter()
            .filter_map(|k| held[k].take())
            .collect();
    }
    let finished = Mutex::new(Vec::with_capacity(count));
    let one = |(k, job): (usize, J)| {
        if let Some(shuffle) = shuffle {
            shuffle.stall(frame, run, k);
        }
        let result = work(job);
        finished
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((k, result));
    };
    match pool {
        Some(pool) => pool.install(|| jobs.into_par_iter().for_each(one)),
        None => jobs.into_iter().for_each(one),
    }
    let mut done = finished
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    let arrival = done.iter().map(|(k, _)| *k).collect();
    done.sort_unstable_by_key(|(k, _)| *k);
    (
        done.into_iter().map(|(_, result)| result).collect(),
        arrival,
    )
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

    #[test]
    fn lanes_give_results_in_job_order_and_every_job_once_in_the_finishing_order() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        for shuffle in [None, Some(LaneShuffle::new(5))] {
            let jobs: Vec<u32> = (0..20).collect();
            let (results, arrival) = run_lanes(Some(&pool), shuffle, 1, 2, jobs, |job| job * 10);
            assert_eq!(results, (0..20).map(|j| j * 10).collect::<Vec<_>>());
            let mut sorted = arrival.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..20).collect::<Vec<_>>());
        }
        let (results, arrival) = run_lanes(None, None, 0, 0, vec!["a", "b"], str::len);
        assert_eq!((results, arrival), (vec![1, 1], vec![0, 1]));
    }
}
