//! `cargo xtask codegen`: writes the Luau type definitions Strata commits, by running
//! `strata types` (crate `strata-cli`): `types/strata.d.luau` for the game API and
//! `examples/places/NAME/types.d.luau` for each example place's components.
//!
//! Invariant: the files are exactly what `strata types` prints, which comes from the tables
//! the runtime uses (`strata_script::types`); `crates/cli/tests/it/codegen.rs` fails when a
//! committed file differs from what this task would write.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

use crate::cargo;

/// The files to write: where each goes and the place it describes (none: the game API).
fn targets(root: &Path) -> anyhow::Result<Vec<(PathBuf, Option<PathBuf>)>> {
    let mut targets = vec![(root.join("types/strata.d.luau"), None)];
    let places = root.join("examples/places");
    let mut folders: Vec<PathBuf> = std::fs::read_dir(&places)
        .with_context(|| format!("cannot read {}", places.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.join("place.toml").is_file())
        .collect();
    folders.sort();
    for folder in folders {
        targets.push((folder.join("types.d.luau"), Some(folder)));
    }
    Ok(targets)
}

/// Runs the task.
pub(crate) fn run(root: &Path) -> anyhow::Result<()> {
    for (file, place) in targets(root)? {
        let mut command = cargo();
        command.args([
            "run",
            "--quiet",
            "--package",
            "strata-cli",
            "--manifest-path",
        ]);
        command.arg(root.join("Cargo.toml"));
        command.args(["--", "types"]);
        if let Some(place) = &place {
            command.arg(OsString::from(place));
        }
        let shown = format!("{command:?}");
        let output = command
            .output()
            .with_context(|| format!("cannot start {shown}"))?;
        if !output.status.success() {
            bail!(
                "{shown} failed with {}:\n{}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            );
        }
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        let unchanged = std::fs::read(&file).is_ok_and(|old| old == output.stdout);
        if !unchanged {
            std::fs::write(&file, &output.stdout)
                .with_context(|| format!("cannot write {}", file.display()))?;
        }
        let shown_path = file.strip_prefix(root).unwrap_or(&file);
        println!(
            "{} {}",
            if unchanged { "unchanged" } else { "wrote" },
            shown_path.display()
        );
    }
    Ok(())
}
