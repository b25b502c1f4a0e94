//! The runnable version of `docs/guides/saving.md`: a world saved and loaded byte for byte,
//! Rust-defined rows waiting as orphans until their definition is given again, a Luau schema
//! changed between save and load with the old values kept as migration input, and damaged
//! files refused with typed errors.
//!
//! `cargo run -p strata --example saving` runs it; `cargo test -p strata` runs it as a test.

#![allow(clippy::print_stdout, reason = "an example prints what it shows")]

use strata::prelude::*;

const SCORE_V1: &str = r#"return component {
    version = 1,
    fields = { points = integer(0) },
}"#;

const SCORE_V2: &str = r#"return component {
    version = 2,
    fields = {
        total = number(0, { formerNames = { "points" } }),
        streak = integer(0),
    },
}"#;

fn position_def() -> ComponentDef {
    ComponentDef::new("Position").field(FieldDef::vector("p", Vec3::ZERO))
}

/// A world with a Rust component, a Luau component and a few instances, stepped twice.
fn world() -> Result<(World, InstanceId, InstanceId), Box<dyn std::error::Error>> {
    let mut world = World::with_seed(1, 9)?;
    let position = world.define(position_def())?;
    let p = world.field(position, "p")?;
    let score_def = world.define_luau("Score", SCORE_V1, None)?;
    world.sync_definitions();
    let (score, points) = world.field_named("Score", "points")?;

    let workspace = world.workspace();
    let player = world.create(ClassId::PART, Some(workspace))?;
    world.set_name(player, "Player")?;
    world.ensure_persistent_id(player)?;
    world.tag(player, "hero")?;
    world.set_attribute(player, "Level", Some(AttrValue::Integer(3)))?;
    world.add(
        player,
        position,
        [(p, Value::Vector(Vec3::new(1.0, 2.0, 3.0)))],
    )?;
    world.add(player, score, [(points, Value::Integer(40))])?;
    world.step(1.0 / 60.0)?;
    world.step(1.0 / 60.0)?;
    Ok((world, player, score_def))
}

fn tour() -> Result<(), Box<dyn std::error::Error>> {
    let (world, player, score_def) = world()?;

    // Save to any writer; a file is `save_to_path`.
    let mut file = Vec::new();
    let written = world.save(&mut file)?;
    assert_eq!(written, file.len() as u64);
    assert_eq!(&file[..8], &strata::MAGIC);

    // Load into a new world: everything but systems and listeners comes back.
    let mut loaded = World::load_with_threads(file.as_slice(), 1)?;
    assert_eq!(loaded.frame(), 2);
    assert_eq!(loaded.name(player)?, "Player");
    assert!(loaded.has_tag(player, "hero"));
    assert_eq!(
        loaded.attribute(player, "Level")?,
        Some(&AttrValue::Integer(3))
    );
    assert_eq!(loaded.persistent_id(player)?, world.persistent_id(player)?);

    // The Luau component came back with its definition; the Rust one waits as an orphan.
    let (score, points) = loaded.field_named("Score", "points")?;
    assert_eq!(loaded.get::<i64>(player, score, points)?, 40);
    assert!(loaded.component("Position").is_err());
    assert_eq!(loaded.store().orphans().of(player).len(), 1);

    // Defining it again adopts the saved row; the world then saves to the same bytes.
    let position = loaded.define(position_def())?;
    let p = loaded.field(position, "p")?;
    assert_eq!(
        loaded.get::<Vec3>(player, position, p)?,
        Vec3::new(1.0, 2.0, 3.0)
    );
    let mut again = Vec::new();
    loaded.save(&mut again)?;
    assert_eq!(file, again, "save, load, save: the same bytes");

    // A schema changed after the save: the next sync converts the rows (points becomes total)
    // and keeps the values saved under version 1 as migration input.
    loaded.set_definition_source(score_def, SCORE_V2)?;
    let events = loaded.step(1.0 / 60.0)?;
    assert_eq!(events.definitions[0].changed, ["Score"]);
    let (score, total) = loaded.field_named("Score", "total")?;
    assert_eq!(loaded.get::<f64>(player, score, total)?, 40.0);
    let input = loaded
        .migration_input(player, score)
        .ok_or("migration input")?;
    assert_eq!(input.version, 1);
    assert_eq!(input.field("points"), Some(&Value::Integer(40)));
    loaded.take_migration_input(player, score);

    // Damaged files are typed errors, never a panic; nothing is built from them.
    assert!(matches!(
        World::load(&b"not a save"[..]),
        Err(LoadError::NotASave | LoadError::Truncated(_))
    ));
    let cut = &file[..file.len() - 1];
    assert!(matches!(World::load(cut), Err(LoadError::Truncated(_))));
    let mut flipped = file.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 0x40;
    assert!(matches!(
        World::load(flipped.as_slice()),
        Err(LoadError::Checksum { .. })
    ));
    println!(
        "saved {} bytes, loaded, saved the same bytes again",
        file.len()
    );
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    tour()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_saving_tour_runs() {
        super::tour().unwrap();
    }
}
