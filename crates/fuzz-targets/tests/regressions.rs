//! Replays every input committed under `fuzz/regressions/TARGET/` (what a fuzzer found, kept
//! so it stays fixed) and `fuzz/corpus/TARGET/` (the seed inputs the fuzzers start from)
//! through its target, on the stable toolchain. Also runs each target over a few hand-made
//! inputs, so a target that panics on the simplest input fails here first.

use std::path::Path;

use strata_fuzz_targets::TARGETS;

#[test]
fn every_committed_input_passes_its_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut replayed = 0;
    for (name, target) in TARGETS {
        for folder in ["regressions", "corpus"].map(|kind| root.join(kind).join(name)) {
            let Ok(entries) = std::fs::read_dir(&folder) else {
                continue;
            };
            for entry in entries {
                let path = entry.expect("a readable folder").path();
                if path.is_file() {
                    let data = std::fs::read(&path).expect("a readable input");
                    target(&data);
                    replayed += 1;
                }
            }
        }
    }
    assert!(replayed > 0, "no input under {}", root.display());
}

#[test]
fn every_target_takes_empty_short_and_patterned_inputs() {
    let inputs: Vec<Vec<u8>> = vec![
        Vec::new(),
        vec![0],
        vec![255; 64],
        (0..=255).collect(),
        b"return component { fields = { x = number(1) } }".to_vec(),
        b"frames = 3\nthreads = 2\n[budget]\ninstructions = 10\n".to_vec(),
        b"for i = 1, 10 do Instance.new('Part', world.workspace) end".to_vec(),
    ];
    for (name, target) in TARGETS {
        for input in &inputs {
            let _ = name;
            target(input);
        }
    }
}

/// The seed saves that a build of this version wrote (every `STRATASV` file of the
/// `save_file` corpus with a valid checksum) load: a fuzzer starting from seeds the loader
/// refuses would explore nothing past the header.
#[test]
fn the_seed_saves_with_valid_checksums_load() {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/save_file");
    let mut loaded = 0;
    for entry in std::fs::read_dir(&folder).expect("the save_file corpus") {
        let path = entry.expect("a readable folder").path();
        let data = std::fs::read(&path).expect("a readable input");
        match strata::World::load(data.as_slice()) {
            Ok(_) => loaded += 1,
            Err(strata::LoadError::Checksum { .. } | strata::LoadError::Truncated(_)) => {}
            Err(strata::LoadError::NotASave) if !data.starts_with(b"STRATASV") => {}
            Err(error) => {
                // Damaged on purpose past its checksum: a seed of the loader's refusals.
                let name = path.file_name().unwrap_or_default().to_string_lossy();
                assert!(
                    !name.ends_with(".strata"),
                    "{name}: a whole save the loader refuses: {error}"
                );
            }
        }
    }
    assert!(loaded >= 6, "{loaded} seed saves loaded");
}
