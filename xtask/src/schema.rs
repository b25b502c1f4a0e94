//! `cargo xtask schema check [--json] FILE.luau...`: runs the `strata-schema` binary of
//! `strata-cli` (built in release mode) on schema files and returns its exit code.
//!
//! Invariant: the arguments after `schema` reach the binary unchanged and in order, and the
//! binary runs in the caller's working directory (the workspace is named by its manifest path),
//! so relative file paths mean what they meant to the caller. The binary's exit code (0 all
//! valid, 1 any invalid, 2 usage error; 101 when cargo cannot build it) becomes xtask's.

use std::ffi::OsString;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;

use crate::cargo;

/// The package that holds the binary.
const PACKAGE: &str = "strata-cli";

/// The binary that checks schema files.
const BINARY: &str = "strata-schema";

/// The arguments of the `cargo` command that builds and runs the binary with `args`.
fn cargo_args(root: &Path, args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut out: Vec<OsString> = ["run", "--quiet", "--release", "--manifest-path"]
        .into_iter()
        .map(OsString::from)
        .collect();
    out.push(root.join("Cargo.toml").into_os_string());
    out.extend(
        ["--package", PACKAGE, "--bin", BINARY, "--"]
            .into_iter()
            .map(OsString::from),
    );
    out.extend(args);
    out
}

/// Runs the binary with `args` (everything after `schema`) and returns its exit code.
pub(crate) fn run(
    root: &Path,
    args: impl IntoIterator<Item = OsString>,
) -> anyhow::Result<ExitCode> {
    let mut command = cargo();
    command.args(cargo_args(root, args));
    let shown = format!("{command:?}");
    let status = command
        .status()
        .with_context(|| format!("cannot start {shown}"))?;
    Ok(match status.code() {
        Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        // Killed by a signal: no code to pass on.
        None => {
            eprintln!("xtask: {shown} ended with {status}");
            ExitCode::FAILURE
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_pass_through_unchanged() {
        let args = ["check", "--json", "a b.luau", "--", "-odd.luau"].map(OsString::from);
        let built = cargo_args(Path::new("/w"), args.clone());
        let expected_prefix = [
            "run",
            "--quiet",
            "--release",
            "--manifest-path",
            "/w/Cargo.toml",
            "--package",
            PACKAGE,
            "--bin",
            BINARY,
            "--",
        ]
        .map(OsString::from);
        assert_eq!(built[..expected_prefix.len()], expected_prefix);
        assert_eq!(built[expected_prefix.len()..], args);
    }

    /// The package must declare the binary this task runs.
    #[test]
    fn the_package_declares_the_binary() {
        let output = cargo()
            .current_dir(crate::project_root())
            .args(["metadata", "--format-version", "1", "--no-deps"])
            .output()
            .expect("cargo metadata runs");
        assert!(output.status.success());
        let metadata: serde_json::Value =
            serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON");
        let declared = metadata["packages"].as_array().is_some_and(|packages| {
            packages
                .iter()
                .filter(|p| p["name"] == PACKAGE)
                .filter_map(|p| p["targets"].as_array())
                .flatten()
                .any(|t| t["name"] == BINARY && t["kind"] == serde_json::json!(["bin"]))
        });
        assert!(declared, "{PACKAGE} declares no binary {BINARY}");
    }
}
