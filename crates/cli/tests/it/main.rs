//! The integration tests of this crate, one module per behaviour, in one test binary.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly on purpose")]

mod browser;
mod cli;
mod codegen;
mod common;
mod guides;
mod places;
mod schema_cli;
mod serve;
mod trace;
mod watch;
