//! The integration tests of this crate, one module per behaviour, in one test binary.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly on purpose")]

mod arena_id;
mod bulk_destroy;
mod common;
mod copying;
mod creation;
mod hierarchy;
mod identity;
mod image;
mod journals;
mod lifecycle;
mod model;
mod reservation_model;
mod reservations;
mod restore;
mod snapshots;
