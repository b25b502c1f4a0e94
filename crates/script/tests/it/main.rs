//! The integration tests of this crate, one module per behaviour, in one test binary.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly on purpose")]

mod common;
mod generated;
mod handle_lane;
mod hashing;
mod references;
mod reload;
mod rollback;
mod scripting_api;
mod scripting_queries;
mod scripting_sandbox;
mod scripting_systems;
mod shuffle;
