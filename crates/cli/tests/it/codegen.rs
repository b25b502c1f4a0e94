//! The committed Luau type definitions are what `cargo xtask codegen` would write now: the
//! game API's from the runtime's own tables, and each example place's from its components.
//! When this fails, run `cargo xtask codegen` and commit the files.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn committed(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}; run `cargo xtask codegen`", path.display()))
}

#[test]
fn the_game_api_definitions_are_fresh() {
    let path = root().join("types/strata.d.luau");
    assert!(
        committed(&path) == strata_script::types::api_definitions(),
        "{} is stale: run `cargo xtask codegen`",
        path.display()
    );
}

#[test]
fn every_example_place_has_fresh_component_definitions() {
    let places = root().join("examples/places");
    let mut seen = 0;
    for entry in std::fs::read_dir(&places).unwrap() {
        let folder = entry.unwrap().path();
        if !folder.join("place.toml").is_file() {
            continue;
        }
        seen += 1;
        let place = strata_script::Place::open(&folder).unwrap();
        let path = folder.join("types.d.luau");
        assert!(
            committed(&path) == place.type_definitions().unwrap(),
            "{} is stale: run `cargo xtask codegen`",
            path.display()
        );
    }
    assert_eq!(seen, 4, "the tour, stress, groups and saveload places");
}

#[test]
fn the_strata_command_writes_the_same_definitions() {
    let mut out = Vec::new();
    let mut err = Vec::new();
    let code = strata_cli::main_with(vec!["types".into()], &mut out, &mut err);
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&err));
    assert_eq!(
        String::from_utf8(out).unwrap(),
        strata_script::types::api_definitions()
    );
}
