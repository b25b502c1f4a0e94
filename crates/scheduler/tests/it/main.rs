//! The integration tests of this crate, one module per behaviour, in one test binary.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly on purpose")]

mod common;
mod dump;
mod grouped;
mod model;
mod ordering;
mod running;
mod stopped;
mod tracing;
