//! The measurement harness: workload descriptions, the [`Bencher`] a workload body drives, the
//! sampling loop and the statistics it reports.
//!
//! Invariant: only the routine runs between two clock reads that time it (one pair per sample,
//! or one per frame for [`Bencher::iter_frames`], whose sample is the sum of its frames). Setup
//! and the drop of the routine's output always happen outside the timed region, and so does the
//! drop of its input, except that [`Bencher::iter_with_setup_owned`] gives the input away and a
//! routine that drops it is timed doing so. A [`Summary`] is only ever built from at least one timed sample.
//! A workload is identified by its [`WorkloadKey`] (library, name and size), never by its name
//! alone, since peer libraries register the same names as Strata for the same work.
//!
//! Allocations are counted in one extra run after the samples, never in a timed one: only where
//! the process runs on [`crate::alloc::CountingAllocator`], each measuring method runs the routine
//! once more (with a fresh setup, or one more sample of frames for [`Bencher::iter_frames`]),
//! counting exactly what the timed region would hold (the routine, not its setup, its
//! preparation or the drop of its output), and that count is the record's allocations per run.
//! The counted run's time is not a sample.

use std::fmt;
use std::hint::black_box;
use std::time::{Duration, Instant};

use crate::alloc::{self, Allocations};
use crate::error::BenchError;
use crate::report::BenchRecord;
use crate::rss;

/// The library name every Strata workload reports; peer libraries use their crate names.
pub const STRATA: &str = "strata";

/// The most runs one batched sample of [`Bencher::iter`] may hold.
///
/// It bounds the memory spent keeping outputs alive until the clock has stopped.
const MAX_RUNS_PER_SAMPLE: usize = 1 << 20;

/// How long and how often each workload is sampled.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SampleConfig {
    /// Sampling goes on until at least this many samples were taken...
    pub min_samples: usize,
    /// ...and at least this much wall time (setup included) was spent sampling.
    pub budget: Duration,
    /// Sampling stops here even if the budget is not spent, which bounds very fast routines.
    pub max_samples: usize,
}

impl SampleConfig {
    /// The settings of a full run: at least 10 samples and 1.5 s per workload.
    pub fn standard() -> SampleConfig {
        SampleConfig {
            min_samples: 10,
            budget: Duration::from_millis(1500),
            max_samples: 10_000,
        }
    }

    /// The settings of `--quick`: at least 3 samples and 0.2 s per workload.
    pub fn quick() -> SampleConfig {
        SampleConfig {
            min_samples: 3,
            budget: Duration::from_millis(200),
            max_samples: 1_000,
        }
    }

    /// How long one batched sample of [`Bencher::iter`] should last.
    ///
    /// A hundredth of the budget leaves room for about a hundred samples, and keeps very short
    /// routines far above the clock's resolution.
    fn sample_target(&self) -> Duration {
        self.budget / 100
    }

    /// Whether a sampling loop that has taken `n_samples` samples over `elapsed` may stop.
    ///
    /// At least one sample is always taken, whatever the limits say, so a summary exists.
    fn is_done(&self, n_samples: usize, elapsed: Duration) -> bool {
        n_samples >= 1
            && (n_samples >= self.max_samples
                || (n_samples >= self.min_samples && elapsed >= self.budget))
    }
}

/// The body of a workload: it prepares whatever it needs once, then calls exactly one of the
/// [`Bencher`] methods exactly once.
type Body = Box<dyn FnMut(&mut Bencher)>;

/// One named benchmark: what it measures, for which library, and how.
pub struct Workload {
    name: String,
    size: u64,
    items: u64,
    library: String,
    mechanism: String,
    body: Body,
}

impl Workload {
    /// Describes a Strata workload named `name` (an operation, such as `arena_create`) working on
    /// `size` items, whose `body` drives a [`Bencher`].
    ///
    /// `mechanism` says in a few words how the library does the work (for example
    /// "typed column walk"), so a comparison between libraries can be read. One run is taken to
    /// process `size` items; use [`Workload::items`] when it processes a different number.
    pub fn new(
        name: impl Into<String>,
        size: u64,
        mechanism: impl Into<String>,
        body: impl FnMut(&mut Bencher) + 'static,
    ) -> Workload {
        Workload {
            name: name.into(),
            size,
            items: size.max(1),
            library: STRATA.to_owned(),
            mechanism: mechanism.into(),
            body: Box::new(body),
        }
    }

    /// Sets the number of items one run processes, which divides the median into ns per item.
    ///
    /// Zero is taken as one, so the per-item figure is always finite.
    pub fn items(mut self, items: u64) -> Workload {
        self.items = items.max(1);
        self
    }

    /// Sets the library the workload measures (default [`STRATA`]); peer workloads use this.
    pub fn library(mut self, library: impl Into<String>) -> Workload {
        self.library = library.into();
        self
    }

    /// The workload's name, which `--filter` matches against.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The number of items the workload works on.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The library the workload measures.
    pub fn library_name(&self) -> &str {
        &self.library
    }

    /// How the library does the work, in a few words.
    pub fn mechanism(&self) -> &str {
        &self.mechanism
    }

    /// The number of items one run processes (see [`Workload::items`]).
    pub fn items_per_run(&self) -> u64 {
        self.items
    }

    /// What identifies the workload among all registered ones: library, name and size.
    pub fn key(&self) -> WorkloadKey {
        WorkloadKey {
            library: self.library.clone(),
            name: self.name.clone(),
            size: self.size,
        }
    }

    /// Whether the workload is the one `key` identifies.
    pub fn has_key(&self, key: &WorkloadKey) -> bool {
        self.library == key.library && self.name == key.name && self.size == key.size
    }

    /// Runs the body under `config` and summarises the timed runs.
    pub fn measure(&mut self, config: SampleConfig) -> Result<Summary, BenchError> {
        self.measure_with_peak(config, PeakScope::Off)
            .map(|measured| measured.summary)
    }

    /// Runs the body under `config`; unless `scope` is [`PeakScope::Off`], also returns the
    /// peak resident memory through the body's first (warm-up) run, and the allocations of one
    /// run where they are counted.
    fn measure_with_peak(
        &mut self,
        config: SampleConfig,
        scope: PeakScope,
    ) -> Result<Measured, BenchError> {
        let mut bencher = Bencher {
            config,
            outcome: Outcome::NotRun,
            track_peak: scope.tracks_peak(),
            peak_rss_bytes: None,
            allocations: None,
        };
        (self.body)(&mut bencher);
        let peak_rss_bytes = bencher.peak_rss_bytes;
        let allocations = bencher.allocations;
        let summary = match bencher.outcome {
            Outcome::NotRun => Err(BenchError::NoMeasurement {
                workload: self.name.clone(),
            }),
            Outcome::Repeated => Err(BenchError::RepeatedMeasurement {
                workload: self.name.clone(),
            }),
            Outcome::Measured(samples) => {
                Summary::from_samples(&samples).ok_or_else(|| BenchError::NoMeasurement {
                    workload: self.name.clone(),
                })
            }
        }?;
        Ok(Measured {
            summary,
            peak_rss_bytes,
            allocations,
        })
    }

    /// Measures the workload and its peak resident memory in a process that may already have
    /// run other workloads, and turns both into a record (the `--in-process` way).
    ///
    /// The peak is the process's resident high-water mark from the start of the body through
    /// the warm-up run: whatever the body prepares, one setup, one run and its output. Later
    /// runs are left out, so outputs a batch keeps alive until the clock stops do not inflate
    /// it. The reset only lowers the mark to the current resident size, so memory that earlier
    /// workloads freed but the allocator kept counts too: compare peaks across one run with
    /// care. The peak is `None` where the platform cannot reset or report it.
    pub fn run(&mut self, config: SampleConfig) -> Result<BenchRecord, BenchError> {
        self.record(config, PeakScope::SinceReset)
    }

    /// Measures the workload in a process that runs nothing else, and turns the figures into a
    /// record (what a child process of the `strata-bench` binary does).
    ///
    /// The peak is the process's resident high-water mark at the end of the warm-up run: the
    /// process's own baseline (the runtime and the binary, a few MiB), whatever the body
    /// prepares, one setup, one run and its output. No earlier workload can inflate it. The mark
    /// is still reset before the body starts where the platform allows, which changes nothing
    /// in a fresh process; the peak is `None` only where the platform cannot report it.
    pub fn run_alone(&mut self, config: SampleConfig) -> Result<BenchRecord, BenchError> {
        self.record(config, PeakScope::WholeProcess)
    }

    fn record(
        &mut self,
        config: SampleConfig,
        scope: PeakScope,
    ) -> Result<BenchRecord, BenchError> {
        let Measured {
            summary,
            peak_rss_bytes,
            allocations,
        } = self.measure_with_peak(config, scope)?;
        Ok(BenchRecord {
            library: self.library.clone(),
            workload: self.name.clone(),
            size: self.size,
            items: self.items,
            median_ns: summary.median_ns,
            min_ns: summary.min_ns,
            ns_per_item: summary.median_ns / self.items as f64,
            peak_rss_bytes,
            mechanism: self.mechanism.clone(),
            samples: summary.samples,
            alloc_calls: allocations.map(|a| a.calls),
            alloc_bytes: allocations.map(|a| a.bytes),
            page_faults: allocations.and_then(|a| a.faults),
        })
    }
}

/// What one measurement of a workload found.
struct Measured {
    summary: Summary,
    peak_rss_bytes: Option<u64>,
    /// The allocations of the one counted run, where they were counted.
    allocations: Option<Allocations>,
}

/// What identifies one workload: the library it measures, its name and its size.
///
/// Names alone are not unique: a peer library registers the same name as Strata for the same
/// work (`spawn`, `iter2`), and one name may come in several sizes. Its text form, used on the
/// command line of a child process, is `library/name/size`, such as `hecs/spawn/10000`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WorkloadKey {
    /// The library measured, such as `strata` or `hecs`.
    pub library: String,
    /// The workload's name, such as `spawn`.
    pub name: String,
    /// The number of items the workload works on.
    pub size: u64,
}

impl WorkloadKey {
    /// Reads the text form `library/name/size`; `None` when it has another shape.
    ///
    /// The library ends at the first slash and the size starts after the last one, so a name
    /// may itself hold slashes; library and name must not be empty.
    pub fn parse(text: &str) -> Option<WorkloadKey> {
        let (library, rest) = text.split_once('/')?;
        let (name, size) = rest.rsplit_once('/')?;
        if library.is_empty() || name.is_empty() {
            return None;
        }
        Some(WorkloadKey {
            library: library.to_owned(),
            name: name.to_owned(),
            size: size.parse().ok()?,
        })
    }
}

impl fmt::Display for WorkloadKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.library, self.name, self.size)
    }
}

/// Fails with [`BenchError::DuplicateWorkload`] when two of `workloads` share a [`WorkloadKey`]
/// (library, name and size).
///
/// The same name may be registered for several libraries and sizes, but a key must select one
/// workload, because a child process of the `strata-bench` binary is told which workload to run
/// by its key, and a record in a results file is identified by it.
pub fn check_unique_keys(workloads: &[Workload]) -> Result<(), BenchError> {
    let mut keys: Vec<WorkloadKey> = workloads.iter().map(Workload::key).collect();
    keys.sort_unstable();
    match keys.windows(2).find(|pair| pair[0] == pair[1]) {
        Some(pair) => Err(BenchError::DuplicateWorkload {
            workload: pair[0].to_string(),
        }),
        None => Ok(()),
    }
}

/// Which peak resident memory a measurement reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PeakScope {
    /// None at all.
    Off,
    /// The high-water mark since a reset at the start of the body; nothing if the reset fails,
    /// since the mark would then include earlier workloads' peaks.
    SinceReset,
    /// The process runs only this workload, so its high-water mark is the workload's whether
    /// or not the reset (still attempted) works.
    WholeProcess,
}

impl PeakScope {
    /// Resets the high-water mark where the scope asks for it and says whether to read it after
    /// the warm-up.
    fn tracks_peak(self) -> bool {
        match self {
            PeakScope::Off => false,
            PeakScope::SinceReset => rss::reset_peak(),
            PeakScope::WholeProcess => {
                // In a fresh process the reset barely lowers the mark; it only keeps both
                // scopes measuring from the same point where it works.
                rss::reset_peak();
                true
            }
        }
    }
}

/// What a workload body did with its [`Bencher`].
enum Outcome {
    NotRun,
    /// The nanoseconds of one run, one entry per sample.
    Measured(Vec<f64>),
    /// The body called a measuring method more than once, which is a bug in the workload.
    Repeated,
}

/// The timer handed to a workload body; the body calls exactly one of its methods exactly once.
///
/// Each method does one untimed warm-up run first, then samples until the [`SampleConfig`] is
/// satisfied, then, where allocations can be counted, one counted run (see the module doc). Inputs and outputs pass through [`black_box`], so the optimiser can neither drop
/// the routine nor compute it ahead of time.
pub struct Bencher {
    config: SampleConfig,
    outcome: Outcome,
    /// Whether the peak was reset before the body started, so reading it means something.
    track_peak: bool,
    /// The peak read right after the warm-up run.
    peak_rss_bytes: Option<u64>,
    /// The allocations of the counted run after the samples, where they were counted.
    allocations: Option<Allocations>,
}

impl Bencher {
    /// Times `routine`, which needs no fresh input per run.
    ///
    /// Runs are batched so that one sample lasts about a hundredth of the budget, and a sample's
    /// time is divided by its run count. The outputs of a batch are kept until the clock has
    /// stopped and dropped afterwards, so their drop is never timed. Batches are sized on wall
    /// time, drops included, so a cheap routine with a costly output cannot stretch a sample.
    pub fn iter<O>(&mut self, mut routine: impl FnMut() -> O) {
        if !self.begin() {
            return;
        }
        let target = self.config.sample_target();
        // The warm-up doubles the batch until a batch lasts the sample target, which also
        // estimates the wall cost of one run.
        let mut runs = 1;
        let wall_per_run = loop {
            let batch = time_batch(&mut routine, runs);
            if runs == 1 {
                self.record_peak();
            }
            if batch.wall >= target || runs >= MAX_RUNS_PER_SAMPLE {
                break batch.wall.as_secs_f64() / runs as f64;
            }
            runs *= 2;
        };
        let runs = runs_per_sample(target.as_secs_f64(), wall_per_run);
        let mut samples = Vec::new();
        let started = Instant::now();
        while !self.config.is_done(samples.len(), started.elapsed()) {
            let batch = time_batch(&mut routine, runs);
            samples.push(nanos(batch.timed) / runs as f64);
        }
        self.outcome = Outcome::Measured(samples);
        if alloc::is_installed() {
            let (output, allocations) = alloc::count(|| black_box(routine()));
            drop(output);
            self.allocations = allocations;
        }
    }

    /// Times `routine` on a fresh input from `setup` per run, lent to it mutably.
    ///
    /// `setup` runs before the clock starts, and both the input and the routine's output are
    /// dropped after it stops. Use this when the routine edits or reads a prepared value, such as
    /// reparenting nodes inside an arena built by `setup`.
    pub fn iter_with_setup<S, O>(
        &mut self,
        mut setup: impl FnMut() -> S,
        mut routine: impl FnMut(&mut S) -> O,
    ) {
        self.sample_each(move |counted| {
            let mut input = setup();
            let (output, elapsed, allocations) =
                run_routine(counted, || routine(black_box(&mut input)));
            drop(output);
            drop(input);
            (elapsed, allocations)
        });
    }

    /// Times `routine` on a fresh input from `setup` per run, handed over by value.
    ///
    /// `setup` runs before the clock starts and the routine's output is dropped after it stops,
    /// but an input the routine drops is dropped inside the timed region. Return the input (or
    /// whatever still owns it) unless timing its drop is the point, as when measuring teardown.
    pub fn iter_with_setup_owned<S, O>(
        &mut self,
        mut setup: impl FnMut() -> S,
        mut routine: impl FnMut(S) -> O,
    ) {
        self.sample_each(move |counted| {
            let input = setup();
            let (output, elapsed, allocations) = run_routine(counted, || routine(black_box(input)));
            drop(output);
            (elapsed, allocations)
        });
    }

    /// Times `frames` frames per sample on one `state` kept across all samples, as a game loop
    /// keeps its world: each frame runs `prepare(state, frame)` untimed, then `routine(state)`
    /// timed, and a sample's time is the sum of its frames' routines.
    ///
    /// Frames are numbered from 0 across the whole measurement, the warm-up sample's included,
    /// so `prepare` can vary the work from frame to frame. The routine's outputs are dropped
    /// after the sample's last frame. Give the workload `frames` as its items (see
    /// [`Workload::items`]) so the figure per item is the mean per frame.
    pub fn iter_frames<S, O>(
        &mut self,
        frames: u64,
        mut state: S,
        mut prepare: impl FnMut(&mut S, u64),
        mut routine: impl FnMut(&mut S) -> O,
    ) {
        let mut frame = 0;
        self.sample_each(move |counted| {
            let mut outputs = Vec::with_capacity(frames as usize);
            let mut timed = Duration::ZERO;
            let mut allocations = counted.then(Allocations::default);
            for _ in 0..frames {
                prepare(&mut state, frame);
                frame += 1;
                let (output, elapsed, counts) =
                    run_routine(counted, || routine(black_box(&mut state)));
                timed += elapsed;
                allocations = match (allocations, counts) {
                    (Some(sum), Some(counts)) => Some(sum.plus(counts)),
                    _ => None,
                };
                outputs.push(output);
            }
            drop(outputs);
            (timed, allocations)
        });
    }

    /// Runs `one_run` once as a warm-up, then samples it one run per sample, then, where
    /// allocations can be counted, runs it once more counting them (`one_run(true)`; the
    /// others get `false`).
    fn sample_each(&mut self, mut one_run: impl FnMut(bool) -> (Duration, Option<Allocations>)) {
        if !self.begin() {
            return;
        }
        one_run(false);
        self.record_peak();
        let mut samples = Vec::new();
        let started = Instant::now();
        while !self.config.is_done(samples.len(), started.elapsed()) {
            samples.push(nanos(one_run(false).0));
        }
        self.outcome = Outcome::Measured(samples);
        if alloc::is_installed() {
            self.allocations = one_run(true).1;
        }
    }

    /// Reads the peak resident memory once the warm-up run is over.
    fn record_peak(&mut self) {
        if self.track_peak {
            self.peak_rss_bytes = rss::peak_bytes();
        }
    }

    /// Claims the bencher for one measurement; a second claim marks the workload as broken.
    fn begin(&mut self) -> bool {
        match self.outcome {
            Outcome::NotRun => true,
            Outcome::Measured(_) | Outcome::Repeated => {
                self.outcome = Outcome::Repeated;
                false
            }
        }
    }
}

/// Runs `routine` once between two clock reads and returns its output and time; when
/// `counted`, the same region also counts allocations (`None` where they cannot be counted).
fn run_routine<O>(
    counted: bool,
    routine: impl FnOnce() -> O,
) -> (O, Duration, Option<Allocations>) {
    let timed = || {
        let start = Instant::now();
        let output = black_box(routine());
        (output, start.elapsed())
    };
    if counted {
        let ((output, elapsed), allocations) = alloc::count(timed);
        (output, elapsed, allocations)
    } else {
        let (output, elapsed) = timed();
        (output, elapsed, None)
    }
}

/// The clock readings of one batch of runs.
struct Batch {
    /// The time of the runs alone.
    timed: Duration,
    /// The time of the runs plus dropping their outputs.
    wall: Duration,
}

/// Times `runs` calls of `routine` as one batch and drops their outputs after the clock stops.
fn time_batch<O>(routine: &mut impl FnMut() -> O, runs: usize) -> Batch {
    let mut outputs = Vec::with_capacity(runs);
    let start = Instant::now();
    for _ in 0..runs {
        outputs.push(black_box(routine()));
    }
    let timed = start.elapsed();
    drop(outputs);
    Batch {
        timed,
        wall: start.elapsed(),
    }
}

/// How many runs fill one sample of `target_secs` when one run takes `per_run_secs`.
fn runs_per_sample(target_secs: f64, per_run_secs: f64) -> usize {
    if per_run_secs <= 0.0 {
        return MAX_RUNS_PER_SAMPLE;
    }
    let runs = (target_secs / per_run_secs).ceil();
    // The float-to-integer cast saturates, and the clamp keeps at least one run per sample.
    (runs as usize).clamp(1, MAX_RUNS_PER_SAMPLE)
}

fn nanos(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e9
}

/// The statistics of one workload's samples, each sample being the time of one run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// The median time of one run, in nanoseconds; the mean of the middle two for an even count.
    pub median_ns: f64,
    /// The fastest run, in nanoseconds.
    pub min_ns: f64,
    /// How many samples were taken.
    pub samples: usize,
}

impl Summary {
    /// Summarises per-run times in nanoseconds, or returns `None` when there are none.
    ///
    /// A NaN sample (which a clock never produces) sorts last rather than panicking.
    pub fn from_samples(samples: &[f64]) -> Option<Summary> {
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n_samples = sorted.len();
        let min_ns = *sorted.first()?;
        let mid = n_samples / 2;
        let median_ns = if n_samples % 2 == 1 {
            sorted[mid]
        } else {
            (sorted[mid - 1] + sorted[mid]) / 2.0
        };
        Some(Summary {
            median_ns,
            min_ns,
            samples: n_samples,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::rc::Rc;

    use super::*;

    /// A configuration that finishes at once, so tests stay fast.
    fn tiny() -> SampleConfig {
        SampleConfig {
            min_samples: 5,
            budget: Duration::ZERO,
            max_samples: 5,
        }
    }

    #[track_caller]
    fn check_summary(samples: &[f64], expect: Option<(f64, f64, usize)>) {
        let got = Summary::from_samples(samples).map(|s| (s.median_ns, s.min_ns, s.samples));
        assert_eq!(got, expect);
    }

    #[test]
    fn summary_of_samples() {
        check_summary(&[], None);
        check_summary(&[7.0], Some((7.0, 7.0, 1)));
        check_summary(&[30.0, 10.0, 20.0], Some((20.0, 10.0, 3)));
        check_summary(&[4.0, 1.0, 3.0, 2.0], Some((2.5, 1.0, 4)));
        check_summary(&[5.0, 100.0, 5.0, 6.0, 1000.0], Some((6.0, 5.0, 5)));
    }

    #[test]
    fn sampling_stops_on_both_minimum_and_budget() {
        let config = SampleConfig {
            min_samples: 3,
            budget: Duration::from_millis(10),
            max_samples: 100,
        };
        assert!(!config.is_done(2, Duration::from_secs(1)));
        assert!(!config.is_done(3, Duration::from_millis(9)));
        assert!(config.is_done(3, Duration::from_millis(10)));
        assert!(config.is_done(100, Duration::ZERO));
        let zero = SampleConfig {
            min_samples: 0,
            budget: Duration::ZERO,
            max_samples: 0,
        };
        assert!(!zero.is_done(0, Duration::from_secs(1)));
        assert!(zero.is_done(1, Duration::ZERO));
    }

    #[test]
    fn runs_per_sample_is_at_least_one_and_bounded() {
        assert_eq!(runs_per_sample(0.01, 0.001), 10);
        assert_eq!(runs_per_sample(0.01, 1.0), 1);
        assert_eq!(runs_per_sample(0.01, 0.0), MAX_RUNS_PER_SAMPLE);
        assert_eq!(runs_per_sample(1.0, 1e-12), MAX_RUNS_PER_SAMPLE);
    }

    #[test]
    fn setup_runs_once_per_timed_run_plus_warm_up() {
        let setups = Rc::new(Cell::new(0));
        let runs = Rc::new(Cell::new(0));
        let (s, r) = (Rc::clone(&setups), Rc::clone(&runs));
        let mut workload = Workload::new("count", 10, "counting", move |b| {
            let (s, r) = (Rc::clone(&s), Rc::clone(&r));
            b.iter_with_setup(move || s.set(s.get() + 1), move |_| r.set(r.get() + 1));
        });
        let summary = workload.measure(tiny()).expect("the body measures once");
        assert_eq!(summary.samples, 5);
        assert_eq!(setups.get(), 6);
        assert_eq!(runs.get(), 6);
    }

    /// Sleeps in setup and in the drop of the input and output; none of it may be timed.
    #[test]
    fn setup_and_drops_are_outside_the_timed_region() {
        struct SlowDrop;
        impl Drop for SlowDrop {
            fn drop(&mut self) {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let mut by_ref = Workload::new("slow_edges", 1, "sleeping", |b| {
            b.iter_with_setup(
                || {
                    std::thread::sleep(Duration::from_millis(20));
                    SlowDrop
                },
                |_input| SlowDrop,
            );
        });
        let summary = by_ref.measure(tiny()).expect("the body measures once");
        assert!(summary.median_ns < 10e6, "{summary:?}");

        let mut owned = Workload::new("slow_edges_owned", 1, "sleeping", |b| {
            b.iter_with_setup_owned(|| SlowDrop, |input| (input, SlowDrop));
        });
        let summary = owned.measure(tiny()).expect("the body measures once");
        assert!(summary.median_ns < 10e6, "{summary:?}");
    }

    /// Frames are numbered across samples, the warm-up's included; each frame prepares once
    /// and runs once, on the one state.
    #[test]
    fn iter_frames_numbers_frames_across_samples_on_one_state() {
        let seen = Rc::new(std::cell::RefCell::new(Vec::new()));
        let s = Rc::clone(&seen);
        let mut workload = Workload::new("frames", 10, "counting", move |b| {
            let s = Rc::clone(&s);
            b.iter_frames(
                3,
                0_u64,
                move |runs: &mut u64, frame| s.borrow_mut().push((frame, *runs)),
                |runs| *runs += 1,
            );
        })
        .items(3);
        let summary = workload.measure(tiny()).expect("the body measures once");
        assert_eq!(summary.samples, 5);
        // Warm-up and 5 samples of 3 frames: frame k is prepared after k routine runs.
        let expected: Vec<(u64, u64)> = (0..18).map(|k| (k, k)).collect();
        assert_eq!(*seen.borrow(), expected);
    }

    /// Sleeps in each frame's preparation and in the drop of each output; none of it may be
    /// timed.
    #[test]
    fn iter_frames_times_only_the_routines() {
        struct SlowDrop;
        impl Drop for SlowDrop {
            fn drop(&mut self) {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let mut workload = Workload::new("slow_frames", 1, "sleeping", |b| {
            b.iter_frames(
                2,
                (),
                |_, _| std::thread::sleep(Duration::from_millis(20)),
                |_| SlowDrop,
            );
        });
        let summary = workload.measure(tiny()).expect("the body measures once");
        assert!(summary.median_ns < 10e6, "{summary:?}");
    }

    #[test]
    fn iter_drops_outputs_outside_the_timed_region() {
        struct SlowDrop;
        impl Drop for SlowDrop {
            fn drop(&mut self) {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        // One run takes about 1 ms, longer than the 10 µs sample target, so every batch holds a
        // single run; the 20 ms drop after it must not show in the figure.
        let mut workload = Workload::new("slow_output", 1, "sleeping", |b| {
            b.iter(|| {
                std::thread::sleep(Duration::from_millis(1));
                SlowDrop
            });
        });
        let config = SampleConfig {
            min_samples: 3,
            budget: Duration::from_millis(1),
            max_samples: 3,
        };
        let summary = workload.measure(config).expect("the body measures once");
        assert!((1e6..10e6).contains(&summary.median_ns), "{summary:?}");
    }

    #[test]
    fn costly_drops_keep_batches_small() {
        struct SlowDrop;
        impl Drop for SlowDrop {
            fn drop(&mut self) {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        let mut workload = Workload::new("cheap_run_slow_drop", 1, "sleeping", |b| {
            b.iter(|| SlowDrop);
        });
        let config = SampleConfig {
            min_samples: 3,
            budget: Duration::from_millis(100),
            max_samples: 3,
        };
        // Sized on timed cost alone, a batch would hold about a million runs and take over a
        // quarter of an hour to drop.
        let started = Instant::now();
        let summary = workload.measure(config).expect("the body measures once");
        assert!(started.elapsed() < Duration::from_secs(2), "{summary:?}");
        assert!(summary.median_ns < 1e6, "{summary:?}");
    }

    #[test]
    fn iter_times_each_run_not_each_batch() {
        let mut workload = Workload::new("sleep", 1, "sleeping", |b| {
            b.iter(|| std::thread::sleep(Duration::from_micros(100)));
        });
        // The sample target is 10 ms, so each sample batches dozens of 100 µs runs; the per-run
        // figure must stay near one sleep, far from one batch.
        let config = SampleConfig {
            min_samples: 3,
            budget: Duration::from_secs(1),
            max_samples: 3,
        };
        let summary = workload.measure(config).expect("the body measures once");
        assert!((1e5..2e6).contains(&summary.median_ns), "{summary:?}");
        assert_eq!(summary.samples, 3);
    }

    #[test]
    fn a_body_must_measure_exactly_once() {
        let mut none = Workload::new("none", 1, "nothing", |_| {});
        assert!(matches!(
            none.measure(tiny()),
            Err(BenchError::NoMeasurement { workload }) if workload == "none"
        ));
        let mut twice = Workload::new("twice", 1, "twice", |b| {
            b.iter(|| 1);
            b.iter(|| 2);
        });
        assert!(matches!(
            twice.measure(tiny()),
            Err(BenchError::RepeatedMeasurement { workload }) if workload == "twice"
        ));
    }

    #[test]
    fn record_divides_the_median_by_items() {
        let mut workload = Workload::new("sleep", 1000, "sleeping", |b| {
            b.iter_with_setup(|| (), |_| std::thread::sleep(Duration::from_millis(1)));
        })
        .items(500)
        .library("peer");
        let record = workload.run(tiny()).expect("the body measures once");
        assert_eq!(record.library, "peer");
        assert_eq!(record.workload, "sleep");
        assert_eq!((record.size, record.items, record.samples), (1000, 500, 5));
        assert_eq!(record.ns_per_item, record.median_ns / 500.0);
        // Unit tests run on the default allocator: no counted run, no counts.
        assert_eq!((record.alloc_calls, record.alloc_bytes), (None, None));
        assert!(record.min_ns <= record.median_ns);
        if cfg!(target_os = "linux") {
            assert!(record.peak_rss_bytes.is_some_and(|bytes| bytes > 0));
        }
    }

    /// A routine whose outputs hold 1 MiB each: a batch keeps hundreds alive, one run only one.
    #[test]
    fn peak_memory_comes_from_one_run_not_a_batch() {
        if !cfg!(target_os = "linux") {
            return;
        }
        let mut workload = Workload::new("alloc_1mib", 1, "vec of ones", |b| {
            b.iter(|| vec![1_u8; 1 << 20]);
        });
        // A 30 ms sample target makes a batch hold well over a hundred outputs.
        let config = SampleConfig {
            min_samples: 1,
            budget: Duration::from_secs(3),
            max_samples: 1,
        };
        let baseline = rss::reset_peak().then(rss::peak_bytes).flatten();
        let record = workload.run(config).expect("the body measures once");
        let (Some(baseline), Some(peak)) = (baseline, record.peak_rss_bytes) else {
            panic!("Linux reports peak memory");
        };
        // Tests run in parallel threads, so allow other tests some memory, but far less than
        // the batch of 1 MiB outputs holds.
        assert!(peak < baseline + (24 << 20), "{baseline} -> {peak}");
    }

    #[test]
    fn duplicate_keys_are_refused_shared_names_are_not() {
        let workload = |name: &str, size: u64, library: &str| {
            Workload::new(name, size, "nothing", |b| b.iter(|| ())).library(library)
        };
        assert!(check_unique_keys(&[]).is_ok());
        assert!(check_unique_keys(&[workload("a", 1, STRATA), workload("b", 1, STRATA)]).is_ok());
        // One name for several libraries and sizes is how peers line up with Strata.
        let shared = [
            workload("spawn", 10, STRATA),
            workload("spawn", 1_000, STRATA),
            workload("spawn", 10, "hecs"),
            workload("spawn", 1_000, "hecs"),
        ];
        assert!(check_unique_keys(&shared).is_ok());
        let clash = [
            workload("spawn", 10, STRATA),
            workload("other", 10, STRATA),
            workload("spawn", 1_000, "hecs"),
            workload("spawn", 1_000, "hecs"),
        ];
        assert!(matches!(
            check_unique_keys(&clash),
            Err(BenchError::DuplicateWorkload { workload }) if workload == "hecs/spawn/1000"
        ));
    }

    #[track_caller]
    fn check_key(text: &str, expect: Option<(&str, &str, u64)>) {
        let parsed = WorkloadKey::parse(text);
        let got = parsed
            .as_ref()
            .map(|key| (key.library.as_str(), key.name.as_str(), key.size));
        assert_eq!(got, expect, "{text}");
        if let Some(key) = parsed {
            assert_eq!(key.to_string(), text);
        }
    }

    #[test]
    fn keys_read_back_their_text_form() {
        check_key("hecs/spawn/10000", Some(("hecs", "spawn", 10_000)));
        check_key(
            "strata/arena_create/1000000",
            Some(("strata", "arena_create", 1_000_000)),
        );
        check_key("peer/a/b/7", Some(("peer", "a/b", 7)));
        check_key("spawn", None);
        check_key("hecs/spawn", None);
        check_key("hecs/spawn/10k", None);
        check_key("/spawn/10", None);
        check_key("hecs//10", None);
        check_key("hecs/spawn/-1", None);
        let workload = Workload::new("iter2", 1_000, "x", |b| b.iter(|| ())).library("hecs");
        let key = workload.key();
        assert_eq!(key.to_string(), "hecs/iter2/1000");
        assert!(workload.has_key(&key));
        let other_size = WorkloadKey { size: 10, ..key };
        assert!(!workload.has_key(&other_size));
    }

    #[test]
    fn run_alone_reports_the_process_peak() {
        let mut workload = Workload::new("alloc_4mib", 1, "vec of ones", |b| {
            b.iter_with_setup(|| (), |_| vec![1_u8; 4 << 20]);
        });
        let record = workload.run_alone(tiny()).expect("the body measures once");
        assert_eq!(
            (record.workload.as_str(), record.samples),
            ("alloc_4mib", 5)
        );
        if cfg!(target_os = "linux") {
            // The warm-up's 4 MiB output was alive when the mark was read.
            assert!(
                record.peak_rss_bytes.is_some_and(|bytes| bytes >= 4 << 20),
                "{record:?}"
            );
        }
        assert!(!PeakScope::Off.tracks_peak());
        assert!(PeakScope::WholeProcess.tracks_peak());
    }

    #[test]
    fn zero_items_count_as_one() {
        let workload = Workload::new("empty", 0, "nothing", |b| b.iter(|| ()));
        assert_eq!(workload.items, 1);
        assert_eq!(workload.items(0).items, 1);
    }
}
