//! The integration tests of this crate, one module per behaviour, in one test binary.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly on purpose")]

mod common;
mod copying;
mod definitions;
mod destruction;
mod determinism;
mod frame_loop;
mod hashing;
mod inserting;
mod metamorphic;
mod model;
mod references;
mod rollback;
mod saving;
mod shuffle;
mod staging;
mod systems;
