//! Component definitions in Luau: synced into the store at the start of every frame and on
//! demand, with the adoption report in the frame's events; redefinitions convert rows; rows
//! saved under an older version keep their migration input.

use strata::prelude::*;

const HEALTH_V1: &str = r#"return component {
    version = 1,
    fields = { current = number(100), regen = integer(0) },
}"#;

const HEALTH_V2: &str = r#"return component {
    version = 2,
    fields = {
        hp = number(100, { formerNames = { "current" } }),
        regen = number(0),
        alive = boolean(true),
    },
}"#;

#[test]
fn definitions_anywhere_in_the_hierarchy_are_synced_at_the_start_of_a_frame() {
    let mut world = World::with_threads(1).unwrap();
    let folder = world.create(ClassId::FOLDER, None).unwrap();
    let definition = world
        .define_luau("Health", HEALTH_V1, Some(folder))
        .unwrap();
    assert!(world.component("Health").is_err(), "not before a sync");
    let events = world.step(0.0).unwrap();
    assert_eq!(events.definitions.len(), 1);
    assert_eq!(events.definitions[0].added, ["Health"]);
    let (health, current) = world.field_named("Health", "current").unwrap();
    let part = world.create(ClassId::PART, None).unwrap();
    world
        .add(part, health, [(current, Value::Number(40.0))])
        .unwrap();
    // Unchanged definitions cost nothing and report nothing.
    assert!(world.step(0.0).unwrap().definitions.is_empty());
    // A changed source is a redefinition: rows converted, `current` renamed to `hp`.
    world.set_definition_source(definition, HEALTH_V2).unwrap();
    let events = world.step(0.0).unwrap();
    assert_eq!(events.definitions[0].changed, ["Health"]);
    let report = &events.definitions[0].adoption[0];
    assert_eq!(report.adopted.count, 1);
    let (health, hp) = world.field_named("Health", "hp").unwrap();
    assert_eq!(world.get::<f64>(part, health, hp).unwrap(), 40.0);
    let (_, alive) = world.field_named("Health", "alive").unwrap();
    assert!(world.get::<bool>(part, health, alive).unwrap());
    // Destroying the definition turns the rows back into orphans.
    world.destroy(definition).unwrap();
    let events = world.step(0.0).unwrap();
    assert_eq!(events.definitions[0].removed, ["Health"]);
    assert!(world.component("Health").is_err());
    assert_eq!(world.store().orphans().of(part).len(), 1);
}

#[test]
fn a_sync_on_demand_reports_failures_and_keeps_the_previous_definition() {
    let mut world = World::with_threads(1).unwrap();
    let definition = world.define_luau("Health", HEALTH_V1, None).unwrap();
    let report = world.sync_definitions();
    assert_eq!(report.added, ["Health"]);
    world
        .set_definition_source(definition, "return component {")
        .unwrap();
    let report = world.sync_definitions();
    assert_eq!(report.diagnostics.len(), 1, "{report}");
    assert!(
        world.field_named("Health", "current").is_ok(),
        "the previous one stays"
    );
}

#[test]
fn rows_saved_under_an_older_version_keep_their_migration_input() {
    let mut world = World::with_threads(1).unwrap();
    let definition = world.define_luau("Health", HEALTH_V1, None).unwrap();
    world.sync_definitions();
    let (health, current) = world.field_named("Health", "current").unwrap();
    let part = world.create(ClassId::PART, None).unwrap();
    world
        .add(part, health, [(current, Value::Number(12.0))])
        .unwrap();
    let mut file = Vec::new();
    world.save(&mut file).unwrap();
    // The save holds version 1 rows; the loaded world's definition is version 2.
    let mut loaded = World::load_with_threads(file.as_slice(), 1).unwrap();
    loaded.set_definition_source(definition, HEALTH_V2).unwrap();
    loaded.step(0.0).unwrap();
    let (health, hp) = loaded.field_named("Health", "hp").unwrap();
    assert_eq!(loaded.get::<f64>(part, health, hp).unwrap(), 12.0);
    let input = loaded
        .migration_input(part, health)
        .expect("older version kept");
    assert_eq!(input.version, 1);
    assert_eq!(input.field("current"), Some(&Value::Number(12.0)));
    assert!(loaded.take_migration_input(part, health).is_some());
    assert!(loaded.migration_input(part, health).is_none());
}

#[test]
fn pending_migration_input_survives_a_save_and_a_load() {
    let mut world = World::with_threads(1).unwrap();
    let definition = world.define_luau("Health", HEALTH_V1, None).unwrap();
    world.sync_definitions();
    let (health, current) = world.field_named("Health", "current").unwrap();
    let part = world.create(ClassId::PART, None).unwrap();
    world
        .add(part, health, [(current, Value::Number(12.0))])
        .unwrap();
    let mut file = Vec::new();
    world.save(&mut file).unwrap();
    let mut loaded = World::load_with_threads(file.as_slice(), 1).unwrap();
    loaded.set_definition_source(definition, HEALTH_V2).unwrap();
    loaded.step(0.0).unwrap();
    let health = loaded.component("Health").unwrap();
    assert!(loaded.migration_input(part, health).is_some());
    // Saved while the input is still pending, loaded again: the input is still there, and the
    // second world saves to the same bytes.
    let mut second = Vec::new();
    loaded.save(&mut second).unwrap();
    let again = World::load_with_threads(second.as_slice(), 1).unwrap();
    let health = again.component("Health").unwrap();
    let input = again
        .migration_input(part, health)
        .expect("pending input saved");
    assert_eq!(input.version, 1);
    assert_eq!(input.field("current"), Some(&Value::Number(12.0)));
    let mut third = Vec::new();
    again.save(&mut third).unwrap();
    assert_eq!(second, third);
}

#[test]
fn pending_migration_input_of_a_rust_component_waits_for_its_definition() {
    let v1 = || {
        ComponentDef::new("Mana")
            .version(1)
            .field(FieldDef::number("points", 5.0))
    };
    let v2 = || {
        ComponentDef::new("Mana")
            .version(2)
            .field(FieldDef::number("total", 5.0).former_names(&["points"]))
    };
    let mut world = World::with_threads(1).unwrap();
    let mana = world.define(v1()).unwrap();
    let points = world.field(mana, "points").unwrap();
    let part = world.create(ClassId::PART, None).unwrap();
    world
        .add(part, mana, [(points, Value::Number(8.0))])
        .unwrap();
    let mut file = Vec::new();
    world.save(&mut file).unwrap();
    let mut loaded = World::load_with_threads(file.as_slice(), 1).unwrap();
    let mana = loaded.define(v2()).unwrap();
    assert!(loaded.migration_input(part, mana).is_some());
    let mut second = Vec::new();
    loaded.save(&mut second).unwrap();
    // Before the definition is given, the input waits with the orphaned row.
    let mut again = World::load_with_threads(second.as_slice(), 1).unwrap();
    let mut third = Vec::new();
    again.save(&mut third).unwrap();
    assert_eq!(second, third, "saved again while waiting");
    let mana = again.define(v2()).unwrap();
    let input = again.migration_input(part, mana).expect("placed on define");
    assert_eq!(input.version, 1);
    assert_eq!(input.field("points"), Some(&Value::Number(8.0)));
}
