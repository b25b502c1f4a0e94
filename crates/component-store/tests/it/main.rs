//! The integration tests of this crate, one module per behaviour, in one test binary.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly on purpose")]

mod bulk;
mod bulk_equals_scalar;
mod changes;
mod common;
mod dirty_consumers;
mod equality;
mod history;
mod instance_refs;
mod lists;
mod model;
mod observer_model;
mod observers;
mod parallel;
mod references;
mod restore;
mod rows;
mod slots_and_views;
mod stage;
mod stage_defaults;
mod stage_model;
mod stage_paths;
mod structural_counters;
mod tracking;
mod validation;
