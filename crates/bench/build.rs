//! Build script of `strata-bench`: records the version of the compiler that builds the harness.
//!
//! Invariant: `STRATA_BENCH_RUSTC` is always set for the crate, to the trimmed output of
//! `$RUSTC --version`, or to the empty string when that cannot be run; it never fails the build.

#![allow(
    clippy::print_stdout,
    reason = "a build script talks to Cargo through standard output"
)]

use std::process::Command;

fn main() {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .filter(|output| output.status.success())
        .and_then(|output| String::from_utf8(output.stdout).ok())
        .map(|text| text.trim().to_owned())
        .unwrap_or_default();
    println!("cargo::rustc-env=STRATA_BENCH_RUSTC={version}");
    // Cargo already rebuilds everything when the compiler changes, so nothing else can make
    // the recorded version stale.
    println!("cargo::rerun-if-changed=build.rs");
}
