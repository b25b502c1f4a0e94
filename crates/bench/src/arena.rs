//! Workloads of the instance arena (`strata-arena`): creation, lookup, reparenting, snapshots,
//! destruction with reclamation, and cloning.
//!
//! Invariant: every workload here measures `strata-arena` through its public API only, with its
//! setup (building the arena it works on) outside the timed routine.

use crate::harness::Workload;

/// The arena's workloads, in run order.
///
/// Arena workloads are registered here, one [`Workload::new`] per operation and size, such as
/// `arena_create` at 1,000,000 nodes. None are registered yet.
pub fn workloads() -> Vec<Workload> {
    Vec::new()
}
