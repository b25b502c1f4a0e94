//! Every example place, run through the library the `strata` command uses.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly on purpose")]

use std::path::PathBuf;

use strata::Place;

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
    let mut second = saveload.load(file.as_slice(), None).unwrap();
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

/// Runs a place on `threads` threads for `frames` frames; the world hash after every frame.
fn hashes(name: &str, threads: usize, frames: u64) -> (Vec<u64>, Vec<String>) {
    let place = place(name);
    let mut world = place.build(Some(threads)).unwrap();
    let mut prints = world.take_prints();
    let mut hashes = Vec::new();
    for _ in 0..frames {
        let events = world.step(place.dt()).unwrap();
        assert!(events.errors.is_empty(), "{:?}", events.errors);
        prints.extend(events.prints.iter().cloned());
        hashes.push(world.hash());
    }
    (hashes, prints)
}

#[test]
fn the_tour_runs_every_frame_without_an_error_and_prints_what_it_shows() {
    let tour = place("tour");
    let (one, prints) = hashes("tour", 1, tour.config.frames);
    insta::assert_snapshot!(prints.join("\n"));
    let (two, again) = hashes("tour", 2, tour.config.frames);
    assert_eq!(one, two, "one thread or two, the same world every frame");
    assert_eq!(prints, again);
}

#[test]
fn the_groups_place_is_the_same_world_every_frame_on_one_two_and_eight_threads() {
    let (one, prints) = hashes("groups", 1, 120);
    insta::assert_snapshot!(prints.join("\n"));
    for threads in [2, 8] {
        let (other, other_prints) = hashes("groups", threads, 120);
        assert_eq!(one, other, "{threads} threads");
        assert_eq!(prints, other_prints, "{threads} threads");
    }
}

#[test]
fn the_stress_place_moves_every_entity_alike_on_one_and_two_threads() {
    let (one, prints) = hashes("stress", 1, 8);
    let (two, _) = hashes("stress", 2, 8);
    assert_eq!(one, two);
    assert!(prints.iter().any(|p| p.contains("100000")), "{prints:?}");
}

#[test]
fn the_tour_and_saveload_places_are_the_same_world_every_frame_on_one_two_and_eight_threads() {
    for name in ["tour", "saveload"] {
        let frames = place(name).config.frames;
        let (one, prints) = hashes(name, 1, frames);
        for threads in [2, 8] {
            let (other, other_prints) = hashes(name, threads, frames);
            assert_eq!(one, other, "{name} on {threads} threads");
            assert_eq!(prints, other_prints, "{name} on {threads} threads");
        }
    }
}
