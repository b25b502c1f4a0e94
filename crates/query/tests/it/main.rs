//! The integration tests of this crate, one module per behaviour, in one test binary.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly on purpose")]

mod capture;
mod common;
mod lineage;
mod model;
mod parallel;
mod queries;
mod term_column;
mod within;
