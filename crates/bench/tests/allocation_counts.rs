//! Allocation counting on a process that runs on the counting allocator, as the `strata-bench`
//! binary does: a record holds the allocations of exactly one routine run, never those of its
//! setup, its frame preparation or the drop of its output.
//!
//! Everything is checked in one test, so no other test of this binary allocates while a run is
//! being counted (the counters are process-wide).

use std::hint::black_box;
use std::time::Duration;

use strata_bench::alloc::{self, CountingAllocator};
use strata_bench::{SampleConfig, Workload};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// A configuration that finishes at once.
fn tiny() -> SampleConfig {
    SampleConfig {
        min_samples: 3,
        budget: Duration::ZERO,
        max_samples: 3,
    }
}

/// The (calls, bytes) of one run of `workload`, from its record.
fn counted(mut workload: Workload) -> (Option<u64>, Option<u64>) {
    let record = workload.run(tiny()).expect("the body measures once");
    (record.alloc_calls, record.alloc_bytes)
}

#[test]
fn a_record_counts_the_allocations_of_one_routine_run_only() {
    assert!(alloc::is_installed());

    // `count` itself: allocations, reallocations and their requested bytes.
    let (_, allocations) = alloc::count(|| {
        let mut grown: Vec<u8> = Vec::with_capacity(10);
        grown.reserve_exact(30);
        black_box(grown)
    });
    assert_eq!(allocations.map(|a| (a.calls, a.bytes)), Some((2, 40)));
    // Memory touched for the first time inside the count shows as page faults.
    let (_, touched) = alloc::count(|| {
        let mut fresh = vec![0_u8; 16 << 20];
        for page in fresh.chunks_mut(4096) {
            page[0] = 1;
        }
        black_box(fresh)
    });
    assert!(
        touched.and_then(|a| a.faults).is_some_and(|n| n > 0),
        "{touched:?}"
    );
    // Counting does not nest: the inner one reports nothing, the outer one counts it all.
    let ((_, inner), outer) = alloc::count(|| alloc::count(|| black_box(vec![0_u8; 8])));
    assert_eq!(inner, None);
    assert_eq!(outer.map(|a| a.calls), Some(1));

    // Setup allocates a megabyte and the input is dropped after the clock stops: neither counts.
    let with_setup = Workload::new("three_vecs", 3, "vec!", |b| {
        b.iter_with_setup(
            || vec![1_u8; 1 << 20],
            |_input| {
                (0..3)
                    .map(|_| black_box(vec![0_u8; 1000]))
                    .collect::<Vec<_>>()
            },
        );
    });
    // Three vectors of 1000 bytes and the vector of 3 holding them (3 × 24 bytes).
    assert_eq!(counted(with_setup), (Some(4), Some(3072)));

    // An owned input the routine drops: its free is not an allocation.
    let owned = Workload::new("drop_input", 1, "drop", |b| {
        b.iter_with_setup_owned(|| vec![1_u8; 4096], drop);
    });
    assert_eq!(counted(owned), (Some(0), Some(0)));

    // Batched runs: one run's allocations, not one batch's.
    let batched = Workload::new("one_vec", 1, "vec!", |b| {
        b.iter(|| black_box(vec![0_u8; 100]));
    });
    assert_eq!(counted(batched), (Some(1), Some(100)));

    // Frames: the sum over one sample's frames, their preparation left out.
    let frames = Workload::new("frames", 4, "vec!", |b| {
        b.iter_frames(
            4,
            Vec::new(),
            |kept: &mut Vec<Vec<u8>>, _frame| kept.push(vec![0_u8; 1 << 16]),
            |_| black_box(vec![0_u8; 10]),
        );
    })
    .items(4);
    assert_eq!(counted(frames), (Some(4), Some(40)));

    // Timing is unchanged by counting: the record still holds its samples.
    let mut nothing = Workload::new("nothing", 1, "no allocation", |b| b.iter(|| 1_u64));
    let record = nothing.run(tiny()).expect("the body measures once");
    assert_eq!(record.samples, 3);
    assert_eq!((record.alloc_calls, record.alloc_bytes), (Some(0), Some(0)));
}
