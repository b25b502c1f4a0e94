//! What the test modules share: the example places, and scratch folders of their own.

use std::path::{Path, PathBuf};

/// The path of the example place `name`.
pub fn example(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/places")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// A scratch folder of this test's own, empty (`test` names it; each test uses another name).
pub fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("strata-cli-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
