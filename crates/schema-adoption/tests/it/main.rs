//! The integration tests of this crate, one module per behaviour, in one test binary.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly on purpose")]

mod adoption_model;
mod cache;
mod constructors;
mod conversions;
mod former_names;
mod hostile;
mod purity;
mod struct_adoption;
mod sync;
