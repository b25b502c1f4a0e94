//! Counting allocations: [`CountingAllocator`], a global allocator over [`System`] that counts
//! allocation calls and requested bytes while counting is switched on, and [`count`], which
//! switches it on around one piece of work.
//!
//! A process opts in by installing the allocator (the `strata-bench` binary does):
//!
//! ```
//! use strata_bench::alloc::{self, CountingAllocator};
//!
//! #[global_allocator]
//! static ALLOCATOR: CountingAllocator = CountingAllocator;
//!
//! fn main() {
//!     let (len, allocations) = alloc::count(|| std::hint::black_box(vec![0_u8; 64]).len());
//!     assert_eq!(len, 64);
//!     assert_eq!(allocations.map(|a| (a.calls, a.bytes)), Some((1, 64)));
//! }
//! ```
//!
//! Every `alloc`, `alloc_zeroed` and `realloc` is one call; its bytes are the size it asks for
//! (the new size for `realloc`). Frees are not counted. The counters are process-wide: while
//! counting is on, the allocations of every thread count, so a parallel routine's pool threads
//! are included, and so is anything another thread happens to allocate meanwhile.
//!
//! Invariant: the counters move only while counting is switched on, and counting is switched on
//! only inside [`count`], which [`count`] does not nest; while it is off, the allocator adds one
//! relaxed load and a branch to each call and nothing else. [`is_installed`] is true exactly when
//! the allocator serves this process (a probe allocation moves the counters).

#![expect(
    unsafe_code,
    reason = "a global allocator is an unsafe trait; each method forwards to System unchanged"
)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::rss;

/// Whether allocations are being counted now.
static COUNTING: AtomicBool = AtomicBool::new(false);
/// The allocation calls counted since counting was last switched on.
static CALLS: AtomicU64 = AtomicU64::new(0);
/// The bytes those calls asked for.
static BYTES: AtomicU64 = AtomicU64::new(0);

/// A global allocator that forwards to [`System`] and, while [`count`] runs, counts the
/// allocation calls and requested bytes of the whole process.
#[derive(Debug, Clone, Copy, Default)]
pub struct CountingAllocator;

/// Counts one call asking for `bytes`, if counting is on.
#[inline]
fn record(bytes: usize) {
    if COUNTING.load(Ordering::Relaxed) {
        CALLS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(bytes as u64, Ordering::Relaxed);
    }
}

// SAFETY: every method forwards its arguments unchanged to `System`, which upholds the
// `GlobalAlloc` contract; counting only touches atomics and never allocates.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        record(layout.size());
        // SAFETY: the caller's guarantees for `layout` are passed on to `System` unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        record(layout.size());
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by this allocator, that is by `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        record(new_size);
        // SAFETY: `ptr` was allocated by `System` with `layout`; the caller's guarantees for
        // `new_size` are passed on unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// The allocations one piece of work made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Allocations {
    /// Calls to `alloc`, `alloc_zeroed` and `realloc`.
    pub calls: u64,
    /// The bytes those calls asked for (the new size for `realloc`).
    pub bytes: u64,
    /// The page faults the process took meanwhile (minor and major), where the platform
    /// reports them: memory touched for the first time, whoever allocated it.
    pub faults: Option<u64>,
}

impl Allocations {
    /// The counts of two pieces of work together (faults only where both have them).
    pub fn plus(self, other: Allocations) -> Allocations {
        Allocations {
            calls: self.calls + other.calls,
            bytes: self.bytes + other.bytes,
            faults: self.faults.zip(other.faults).map(|(a, b)| a + b),
        }
    }
}

/// Runs `work` with counting switched on and returns its output with the allocations the
/// process made meanwhile, and the page faults it took where the platform reports them; `None`
/// when [`CountingAllocator`] is not the process's global allocator (see [`is_installed`]).
///
/// Counting does not nest: an inner `count` runs its work uncounted and reports `None`, and the
/// outer one counts the inner work's allocations.
pub fn count<O>(work: impl FnOnce() -> O) -> (O, Option<Allocations>) {
    // Nested inside another count: nothing is read, so the outer count sees only `work`.
    if !is_installed() || COUNTING.load(Ordering::SeqCst) {
        return (work(), None);
    }
    // Read before counting is on (and after it is off): reading the fault counter allocates.
    let faults_before = rss::page_faults();
    if COUNTING.swap(true, Ordering::SeqCst) {
        return (work(), None);
    }
    CALLS.store(0, Ordering::SeqCst);
    BYTES.store(0, Ordering::SeqCst);
    let output = work();
    COUNTING.store(false, Ordering::SeqCst);
    let (calls, bytes) = (CALLS.load(Ordering::SeqCst), BYTES.load(Ordering::SeqCst));
    let faults = faults_before
        .zip(rss::page_faults())
        .map(|(before, after)| after.saturating_sub(before));
    let allocations = Allocations {
        calls,
        bytes,
        faults,
    };
    (output, Some(allocations))
}

/// Whether [`CountingAllocator`] is this process's global allocator: with counting switched
/// on, a probe allocation must move the counter. Probed once per process.
pub fn is_installed() -> bool {
    static INSTALLED: OnceLock<bool> = OnceLock::new();
    *INSTALLED.get_or_init(|| {
        if COUNTING.swap(true, Ordering::SeqCst) {
            // Only `count` switches counting on, and it probes before doing so.
            return true;
        }
        let before = CALLS.load(Ordering::SeqCst);
        drop(black_box(Box::new(black_box(0_u64))));
        let installed = CALLS.load(Ordering::SeqCst) != before;
        COUNTING.store(false, Ordering::SeqCst);
        installed
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The library's unit tests run on the default allocator, so nothing is counted.
    #[test]
    fn without_the_allocator_nothing_is_counted() {
        assert!(!is_installed());
        let (value, allocations) = count(|| vec![1_u8; 100].len());
        assert_eq!((value, allocations), (100, None));
    }
}
