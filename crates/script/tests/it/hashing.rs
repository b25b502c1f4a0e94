//! World hashes of places: run straight, or saved and loaded half way, places hash alike when
//! they save alike.

use std::path::PathBuf;

use strata::prelude::*;
use strata_script::prelude::*;

fn save(world: &World) -> Vec<u8> {
    let mut file = Vec::new();
    world.save(&mut file).unwrap();
    file
}

/// What a world saves and hashes at one moment, by a name for the messages.
struct Seen {
    name: String,
    file: Vec<u8>,
    hash: u64,
}

/// Every folder of `examples/places`.
fn places() -> Vec<(String, Place)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/places");
    let mut names: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|entry| entry.unwrap())
        .filter(|entry| entry.file_type().unwrap().is_dir())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let place = Place::open(root.join(&name)).unwrap();
            (name, place)
        })
        .collect()
}

fn run(world: &mut World, place: &Place, frames: u64) {
    for _ in 0..frames {
        let events = world.step(place.dt()).unwrap();
        assert!(events.errors.is_empty(), "{:?}", events.errors);
    }
}

fn seen(name: impl Into<String>, world: &World) -> Seen {
    Seen {
        name: name.into(),
        file: save(world),
        hash: world.hash(),
    }
}

/// Checks both directions over every pair: equal save bytes, equal hashes; other save bytes,
/// other hashes.
#[track_caller]
fn check_hash_follows_save(seen: &[Seen]) {
    for a in seen {
        for b in seen {
            let same_bytes = a.file == b.file;
            let same_hash = a.hash == b.hash;
            assert_eq!(
                same_hash,
                same_bytes,
                "{} and {}: saves {}, hashes {}",
                a.name,
                b.name,
                if same_bytes { "equal" } else { "differ" },
                if same_hash { "equal" } else { "differ" },
            );
        }
    }
}

#[test]
fn a_place_run_straight_and_one_saved_and_loaded_half_way_hash_alike_when_they_save_alike() {
    for (name, place) in places() {
        // The stress place's 100,000 entities make a debug build's frame slow: fewer frames.
        let (half, rest) = if name == "stress" { (3, 2) } else { (31, 29) };
        let mut world = place.build(Some(1)).unwrap();
        run(&mut world, &place, half);
        let saved = seen(format!("{name} at frame {half}"), &world);
        let (mut loaded, _) = place.load(saved.file.as_slice(), Some(1)).unwrap();
        assert_eq!(
            loaded.hash(),
            saved.hash,
            "{name}: a load hashes as what it loaded"
        );
        run(&mut loaded, &place, rest);
        // Saving changes nothing: the world saved half-way goes on as one run straight.
        run(&mut world, &place, rest);
        let straight = seen(format!("{name} run straight"), &world);
        let after_load = seen(format!("{name} loaded at frame {half}"), &loaded);
        if name == "saveload" || name == "tour" {
            assert_eq!(
                after_load.file, straight.file,
                "{name} goes on after a load"
            );
        }
        run(&mut world, &place, 1);
        let later = seen(format!("{name} a frame later"), &world);
        check_hash_follows_save(&[saved, straight, after_load, later]);
    }
}
