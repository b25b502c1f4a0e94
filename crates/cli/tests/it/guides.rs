//! The guides' examples, run: every `luau` block of `docs/guides/scripting.md` in order in one
//! world (each block's first line names its file: a component, a system, a group script or a
//! setup script), every `toml` block of `docs/guides/places.md` opened as a place, and its
//! table of `strata run` flags checked against `strata run --help`.

use std::path::{Path, PathBuf};

use strata::World;
use strata_script::{ScriptScene, ScriptWorld};

fn guide(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/guides")
        .join(name);
    std::fs::read_to_string(path).unwrap()
}

/// The fenced blocks of `language` in a Markdown text.
fn blocks(text: &str, language: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        match &mut current {
            None if line.trim_start() == format!("```{language}") => current = Some(String::new()),
            Some(block) if line.trim_start() == "```" => {
                out.push(std::mem::take(block));
                current = None;
            }
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
            None => {}
        }
    }
    out
}

#[test]
fn every_scripting_guide_example_runs() {
    let mut world = World::with_seed(2, 1).unwrap();
    let blocks = blocks(&guide("scripting.md"), "luau");
    assert!(blocks.len() >= 10, "{} blocks", blocks.len());
    for block in &blocks {
        let first = block.lines().next().unwrap();
        let file = first
            .strip_prefix("-- ")
            .unwrap_or_else(|| panic!("unnamed block: {first}"));
        let stem = Path::new(file).file_stem().unwrap().to_str().unwrap();
        let result = match file.split('/').next().unwrap() {
            "components" => world
                .define_luau(stem, block, None)
                .map(|_| {
                    let report = world.sync_definitions();
                    assert!(
                        report.diagnostics.is_empty(),
                        "{file}: {:?}",
                        report.diagnostics
                    );
                })
                .map_err(strata_script::Error::from),
            "systems" => world.add_script_system(stem, file, block).map(|_| ()),
            "groups" => world.add_group_script(stem, file, block).map(|_| ()),
            _ => world.run_script(file, block),
        };
        if let Err(e) = result {
            panic!("{file} failed: {e}\n{block}");
        }
    }
    let mut prints = world.take_prints();
    for _ in 0..3 {
        let events = world.step(1.0 / 60.0).unwrap();
        assert!(events.errors.is_empty(), "{:?}", events.errors);
        prints.extend(events.prints.iter().cloned());
    }
    assert_eq!(prints[0], "setup done");
    assert!(
        prints.iter().any(|p| p.starts_with("frame 3: ")),
        "{prints:?}"
    );
    // The removal reader started at its first run: a removal after it is reported.
    world
        .run_script(
            "later.luau",
            "local prey = Instance.new('Part', world.workspace)
            world.workspace:FindFirstChild('Hunter'):AddComponent(Target, { of = prey })
            prey:Destroy()",
        )
        .unwrap();
    let events = world.step(1.0 / 60.0).unwrap();
    assert!(events.errors.is_empty(), "{:?}", events.errors);
    assert_eq!(events.prints, ["Hunter lost its target"]);
}

#[test]
fn every_place_guide_configuration_opens() {
    let blocks = blocks(&guide("places.md"), "toml");
    assert!(!blocks.is_empty());
    for (k, block) in blocks.iter().enumerate() {
        let root: PathBuf =
            std::env::temp_dir().join(format!("strata-guide-{}-{k}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("place.toml"), block).unwrap();
        let place = strata_script::Place::open(&root);
        let _ = std::fs::remove_dir_all(&root);
        place.unwrap_or_else(|e| panic!("{e}\n{block}"));
    }
}

/// The places guide's flags table names every flag `strata run --help` lists, so the two stay
/// in step.
#[test]
fn the_places_guide_lists_every_flag_of_run() {
    let mut out = Vec::new();
    let mut err = Vec::new();
    let code = strata_cli::main_with(vec!["run".into(), "--help".into()], &mut out, &mut err);
    assert_eq!(code, 0);
    let help = String::from_utf8(out).unwrap();
    // The option lines: `      --frames <N>`, `  -h, --help`.
    let flags: Vec<&str> = help
        .lines()
        .filter(|line| line.trim_start().starts_with('-'))
        .flat_map(|line| line.split([' ', ',']))
        .filter_map(|word| word.strip_prefix("--"))
        .collect();
    assert!(flags.len() >= 6, "{help}");
    let guide = guide("places.md");
    for flag in flags {
        assert!(
            guide.contains(&format!("| `--{flag}")),
            "docs/guides/places.md has no row for --{flag}"
        );
    }
}
