//! Rollback with scripts: Luau queries see a restored world, and a place rolled back and run
//! again gives the same hashes.

use std::path::Path;

use crate::common::scripted;
use strata_script::prelude::*;

fn place(name: &str) -> Place {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/places")
        .join(name);
    Place::open(root).unwrap()
}

#[test]
fn luau_queries_see_the_restored_world() {
    let mut world = scripted(1);
    world
        .run_script(
            "setup.luau",
            "for i = 1, 3 do Instance.new('Part', world.workspace):AddComponent(Position, { x = i }) end",
        )
        .unwrap();
    let count = "local n, sum = 0, 0
        for _, p in world:query({ with = { Position } }) do n += 1; sum += p.x end
        for chunk in world:query({ with = { Position } }):chunks() do
            local x = chunk:read(Position).x
            for row = chunk.first, chunk.last do sum += x[row] end
        end
        print(n, sum)";
    assert_eq!(crate::common::printed(&mut world, count), ["3\t12"]);
    let snapshot = world.snapshot().unwrap();
    world
        .run_script(
            "more.luau",
            "Instance.new('Part', world.workspace):AddComponent(Position, { x = 10 })
            for _, p in world:query({ with = { Position } }) do p.x += 1 end",
        )
        .unwrap();
    assert_eq!(crate::common::printed(&mut world, count), ["4\t40"]);
    world.restore(&snapshot).unwrap();
    // The mirror and the columns were built against the store before the restore: both are
    // rebuilt, never read stale.
    assert_eq!(crate::common::printed(&mut world, count), ["3\t12"]);
}

#[test]
fn a_place_rolled_back_ten_frames_and_run_again_gives_the_same_hashes() {
    for name in ["tour", "groups"] {
        let place = place(name);
        let mut world = place.build(Some(2)).unwrap();
        let mut hashes = Vec::new();
        let mut snapshots = Vec::new();
        for _ in 0..100 {
            snapshots.push(world.snapshot().unwrap());
            world.step(place.dt()).unwrap();
            hashes.push(world.state_hash());
        }
        world.restore(&snapshots[90]).unwrap();
        assert_eq!(world.frame(), 90);
        assert_eq!(
            world.state_hash(),
            hashes[89],
            "{name}: the restored world is frame 90's"
        );
        for (frame, hash) in hashes.iter().enumerate().skip(90) {
            let events = world.step(place.dt()).unwrap();
            assert!(events.errors.is_empty(), "{name}: {:?}", events.errors);
            assert_eq!(world.state_hash(), *hash, "{name}: frame {frame} again");
        }
    }
}
