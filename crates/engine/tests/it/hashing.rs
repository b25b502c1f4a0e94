//! What the world hashes cover: `World::hash` is a hash of exactly what a save holds (the same
//! save bytes, the same hash, and other bytes, another hash), checked on every example place
//! and on worlds that differ in one saved thing at a time; `World::state_hash` also covers the
//! change tracking a save leaves out.

use strata::prelude::*;

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

const LEVEL_V1: &str = "return component { version = 1, fields = { n = integer(1) } }";
const LEVEL_V2: &str = r#"return component {
    version = 2,
    fields = { m = integer(1, { formerNames = { "n" } }) },
}"#;

/// A world of a Rust component on one part and an interval system, for changing one saved
/// thing at a time.
fn base() -> World {
    let mut world = World::with_seed(1, 21).unwrap();
    world.set_fixed_step(0.1, 4).unwrap();
    let score = world
        .define(ComponentDef::new("Score").field(FieldDef::integer("points", 0)))
        .unwrap();
    let workspace = world.workspace();
    let part = world.create(ClassId::PART, Some(workspace)).unwrap();
    world.add(part, score, []).unwrap();
    world
        .add_system(SystemSpec::new("slow", |_: &mut Ctx<'_>| Ok(())).with_interval(1.0))
        .unwrap();
    world.step(0.25).unwrap();
    world
}

#[test]
fn worlds_that_save_differently_hash_differently() {
    let same = base();
    let mut cadence = base();
    cadence.set_fixed_step(0.2, 4).unwrap();
    let mut carried = base();
    carried.step(0.0).unwrap();
    let mut waited = World::with_seed(1, 21).unwrap();
    {
        // The same world with the interval system a quarter second further on.
        waited.set_fixed_step(0.1, 4).unwrap();
        let score = waited
            .define(ComponentDef::new("Score").field(FieldDef::integer("points", 0)))
            .unwrap();
        let workspace = waited.workspace();
        let part = waited.create(ClassId::PART, Some(workspace)).unwrap();
        waited.add(part, score, []).unwrap();
        waited
            .add_system(SystemSpec::new("slow", |_: &mut Ctx<'_>| Ok(())).with_interval(1.0))
            .unwrap();
        waited.step(0.5).unwrap();
    }
    let mut pending = base();
    let gone = pending.create(ClassId::FOLDER, None).unwrap();
    pending.destroy(gone).unwrap();
    // A schema changed after a load: the rows saved under version 1 keep their old values as
    // migration input, which a save holds until a migration takes it.
    let (with_input, taken) = {
        let mut world = base();
        let definition = world.define_luau("Level", LEVEL_V1, None).unwrap();
        world.sync_definitions();
        let (level, _) = world.field_named("Level", "n").unwrap();
        let part = world.children(world.workspace()).unwrap()[0];
        world.add(part, level, []).unwrap();
        let file = save(&world);
        let migrated = |take: bool| {
            let mut loaded = World::load_with_threads(file.as_slice(), 1).unwrap();
            loaded.set_definition_source(definition, LEVEL_V2).unwrap();
            loaded.sync_definitions();
            let (level, _) = loaded.field_named("Level", "m").unwrap();
            assert!(loaded.migration_input(part, level).is_some());
            if take {
                loaded.take_migration_input(part, level);
            }
            loaded
        };
        (migrated(false), migrated(true))
    };
    let file = save(&base());
    let loaded = World::load_with_threads(file.as_slice(), 1).unwrap();
    check_hash_follows_save(&[
        seen("base", &same),
        seen("another cadence", &cadence),
        seen("an empty frame later", &carried),
        seen("an interval further on", &waited),
        seen("a destruction pending", &pending),
        seen("migration input waiting", &with_input),
        seen("migration input taken", &taken),
        seen("base loaded", &loaded),
    ]);
    assert_eq!(
        loaded.hash(),
        same.hash(),
        "a load hashes as the world it loaded"
    );
}

#[test]
fn the_state_hash_also_covers_change_tracking() {
    // The same values, written back or never written: one save, two states.
    let quiet = base();
    let mut busy = base();
    let (score, points) = busy.field_named("Score", "points").unwrap();
    let part = busy.children(busy.workspace()).unwrap()[0];
    busy.write::<i64>(part, score, points, 5).unwrap();
    busy.write::<i64>(part, score, points, 0).unwrap();
    assert_eq!(save(&busy), save(&quiet));
    assert_eq!(busy.hash(), quiet.hash());
    assert_ne!(busy.state_hash(), quiet.state_hash());
    assert_eq!(
        base().state_hash(),
        quiet.state_hash(),
        "equal runs, equal states"
    );
    // What changes the save changes the state hash.
    let mut other = base();
    other.set_fixed_step(0.2, 4).unwrap();
    assert_ne!(other.state_hash(), quiet.state_hash());
}
