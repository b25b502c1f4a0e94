//! Every example place, run through the library the `strata` command uses.

use std::path::PathBuf;

use strata_script::Place;

fn place(name: &str) -> Place {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/places")
        .join(name);
    Place::open(root).unwrap()
}

fn run(world: &mut strata::World, place: &Place, frames: u64) -> Vec<String> {
    let mut prints = world.take_prints();
    for _ in 0..frames {
        let events = world.step(place.dt()).unwrap();
        assert!(events.errors.is_empty(), "{:?}", events.errors);
        prints.extend(events.prints.iter().cloned());
    }
    prints
}

#[test]
fn a_saved_place_goes_on_after_loading_as_if_it_never_stopped() {
    let saveload = place("saveload");
    let mut straight = saveload.build(None).unwrap();
    let straight_prints = run(&mut straight, &saveload, 60);

    let mut first = saveload.build(None).unwrap();
    let mut prints = run(&mut first, &saveload, 30);
    let file = save(&first);
    let (mut second, _) = saveload.load(file.as_slice(), None).unwrap();
    prints.extend(run(&mut second, &saveload, 30));
    assert_eq!(prints, straight_prints);
    // A save holds everything but change ticks (rows load as added at the load), so two
    // worlds that hold the same things save to the same bytes.
    assert_eq!(save(&second), save(&straight));
    assert_eq!(second.frame(), 60);
}

fn save(world: &strata::World) -> Vec<u8> {
    let mut file = Vec::new();
    world.save(&mut file).unwrap();
    file
}

/// Runs a place on `threads` threads, lanes shuffled by `lanes` when given, for `frames`
/// frames; the world's state hash (`World::state_hash`: what a save holds and the change
/// tracking) after every frame, and what it printed.
fn hashes(name: &str, threads: usize, lanes: Option<u64>, frames: u64) -> (Vec<u64>, Vec<String>) {
    hashes_with(name, threads, lanes, true, frames)
}

/// [`hashes`] with the world's queries cached or not (the place's scripts make theirs as they
/// run, so the setting made after the build covers them).
fn hashes_with(
    name: &str,
    threads: usize,
    lanes: Option<u64>,
    cached: bool,
    frames: u64,
) -> (Vec<u64>, Vec<String>) {
    let place = place(name);
    let mut world = place.build(Some(threads)).unwrap();
    world.set_lane_shuffle(lanes);
    world.set_query_caching(cached);
    let mut prints = world.take_prints();
    let mut hashes = Vec::new();
    for _ in 0..frames {
        let events = world.step(place.dt()).unwrap();
        assert!(events.errors.is_empty(), "{:?}", events.errors);
        prints.extend(events.prints.iter().cloned());
        hashes.push(world.state_hash());
    }
    (hashes, prints)
}

#[test]
fn the_tour_runs_every_frame_without_an_error_and_prints_what_it_shows() {
    let tour = place("tour");
    let (_, prints) = hashes("tour", 1, None, tour.config.frames);
    insta::assert_snapshot!(prints.join("\n"));
}

#[test]
fn the_groups_place_prints_its_rooms_in_hierarchy_order() {
    let (_, prints) = hashes("groups", 1, None, 120);
    insta::assert_snapshot!(prints.join("\n"));
}

/// Every folder of `examples/places`.
fn every_place() -> Vec<String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/places");
    let mut names: Vec<String> = std::fs::read_dir(root)
        .unwrap()
        .map(|entry| entry.unwrap())
        .filter(|entry| entry.file_type().unwrap().is_dir())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn every_example_place_is_the_same_world_every_frame_on_any_threads_lanes_and_caching() {
    let names = every_place();
    assert_eq!(names, ["groups", "saveload", "stress", "tour"]);
    for name in &names {
        // The stress place moves 100,000 entities a frame: ten frames in a test build.
        let frames = if name == "stress" { 10 } else { 200 };
        let (one, prints) = hashes(name, 1, None, frames);
        for (threads, lanes, cached) in [
            (2, None, true),
            (8, None, true),
            (2, Some(1), true),
            (8, Some(2), true),
            (2, None, false),
        ] {
            let (other, other_prints) = hashes_with(name, threads, lanes, cached, frames);
            let what =
                format!("{name} on {threads} threads, lane shuffle {lanes:?}, cached {cached}");
            for (frame, (a, b)) in one.iter().zip(&other).enumerate() {
                assert_eq!(a, b, "{what}: frame {frame} differs");
            }
            assert_eq!(prints, other_prints, "{what}");
        }
        if name == "stress" {
            assert!(prints.iter().any(|p| p.contains("100000")), "{prints:?}");
        }
    }
}
