//! Strata's fuzz targets, as functions over arbitrary bytes. `fuzz/` (cargo-fuzz, on the
//! nightly toolchain) calls them with libFuzzer's inputs; `tests/regressions.rs` replays the
//! inputs committed under `fuzz/regressions/TARGET/` on the stable toolchain, so what a fuzzer
//! once found stays fixed.
//!
//! Invariant: a target returns normally for every input. It panics only when Strata broke a
//! promise: a panic inside Strata on bad input, or an invariant check below failing (a cached
//! query disagreeing with a fresh one, a save that does not load back to the same bytes, a
//! restore that does not give back what was saved). Every target bounds its own work (input
//! length, script budgets), so one input never runs for long.
//!
//! Any bytes may go to any target; a reproducer is a call:
//!
//! ```
//! use strata_fuzz_targets::{TARGETS, save_file, world_ops};
//!
//! // A damaged save is refused, not a panic.
//! save_file(b"STRATA\0\0 not a save");
//! // Bytes read as a list of world operations, each checked as it runs.
//! world_ops(&[0, 1, 2, 3, 255, 7]);
//! // Every target takes anything, the empty input too.
//! for (_, target) in TARGETS {
//!     target(&[]);
//! }
//! ```

mod bytes;
mod targets;

pub use targets::{game_script, place_toml, query, save_file, schema_source, world_ops};

/// A target: its name (the file stem under `fuzz/fuzz_targets/` and the folder under
/// `fuzz/regressions/`) and its function.
pub type Target = (&'static str, fn(&[u8]));

/// Every target.
pub const TARGETS: &[Target] = &[
    ("save_file", save_file),
    ("schema_source", schema_source),
    ("place_toml", place_toml),
    ("game_script", game_script),
    ("query", query),
    ("world_ops", world_ops),
];
