//! Definition sync and adoption: orphans adopted when their definition appears, renames via
//! former names, resets and drops, class exclusion, redefinition, removal and re-adding,
//! renamed definitions (also when the store refuses the rename or the new source fails),
//! duplicates taking over, failures reported until resolved, caching and skipped syncs,
//! migration input, and syncing or adopting into other stores (a fresh one, a loaded snapshot).

use strata_arena::{Arena, ClassId, InstanceId};
use strata_component_store::{InstanceRef, OrphanRecord, Store, Value};
use strata_schema_adoption::{SchemaError, SchemaSync, SyncDiagnostic};

struct World {
    arena: Arena,
    store: Store,
    sync: SchemaSync,
    definitions: InstanceId,
}

impl World {
    fn new() -> Self {
        let mut arena = Arena::standard();
        let definitions = arena.create(ClassId::FOLDER, None).unwrap();
        Self {
            arena,
            store: Store::new(),
            sync: SchemaSync::new().unwrap(),
            definitions,
        }
    }

    fn define(&mut self, name: &str, source: &str) -> InstanceId {
        let id = self
            .arena
            .create(ClassId::COMPONENT_DEFINITION, Some(self.definitions))
            .unwrap();
        self.arena.set_name(id, name).unwrap();
        self.arena.set_definition_source(id, source).unwrap();
        id
    }

    fn spawn(&mut self, class: ClassId) -> InstanceRef {
        let id = self.arena.create(class, None).unwrap();
        InstanceRef::new(id, self.arena.slot_of(id).unwrap())
    }

    fn sync(&mut self) -> String {
        self.sync.sync(&self.arena, &mut self.store).to_string()
    }

    fn get(&self, at: InstanceRef, component: &str, field: &str) -> Value {
        let c = self.store.component(component).unwrap();
        self.store
            .get_value(at, c, self.store.field(c, field).unwrap())
            .unwrap()
    }
}

fn orphan(component: &str, version: u32, fields: &[(&str, Value)]) -> OrphanRecord {
    OrphanRecord {
        component: component.into(),
        version,
        fields: fields
            .iter()
            .map(|(n, v)| (std::sync::Arc::from(*n), v.clone()))
            .collect(),
        types: None,
    }
}

const HEALTH_V2: &str = r#"
return component {
    version = 2,
    classes = { "Model", "Entity" },
    fields = {
        current = number(100),
        max = number(100, { formerNames = { "maximum" } }),
        regen = integer(0),
        label = text(""),
    },
}
"#;

#[test]
fn orphans_saved_before_their_definition_are_adopted_when_it_appears() {
    let mut w = World::new();
    let a = w.spawn(ClassId::ENTITY);
    let b = w.spawn(ClassId::ENTITY);
    let part = w.spawn(ClassId::PART);
    w.store.add_orphan(
        a,
        orphan(
            "Health",
            2,
            &[
                ("current", Value::Number(40.0)),
                ("maximum", Value::Number(80.0)),
            ],
        ),
    );
    w.store.add_orphan(
        b,
        orphan(
            "Health",
            2,
            &[
                ("current", Value::Text("lots".into())),
                ("regen", Value::Number(2.0)),
                ("mana", Value::Integer(9)),
            ],
        ),
    );
    w.store.add_orphan(
        part,
        orphan("Health", 2, &[("current", Value::Number(1.0))]),
    );
    assert!(w.store.component("Health").is_none());

    w.define("Health", HEALTH_V2);
    insta::assert_snapshot!(w.sync(), @r"
    added: Health
    changed: -
    renamed: -
    removed: -
    unchanged: 0
    component Health (version 2)
      adopted: 2 (e.g. #2, #3)
      unadopted: 1 (e.g. #4)
      field current: kept 1 (e.g. #2); reset 1 (e.g. #3)
      field label: defaulted 2 (e.g. #2, #3)
      field max: renamed from maximum 1 (e.g. #2); defaulted 1 (e.g. #3)
      field regen: kept 1 (e.g. #3); defaulted 1 (e.g. #2)
      dropped mana: 1 (e.g. #3)
    ");
    assert_eq!(w.get(a, "Health", "current"), Value::Number(40.0));
    assert_eq!(w.get(a, "Health", "max"), Value::Number(80.0));
    assert_eq!(
        w.get(b, "Health", "current"),
        Value::Number(100.0),
        "reset to the default"
    );
    assert_eq!(w.get(b, "Health", "regen"), Value::Integer(2));
    // The part's class is excluded: its row stays a raw orphan, nothing lost.
    let health = w.store.component("Health").unwrap();
    assert!(!w.store.has(part, health));
    assert_eq!(w.store.orphans().of(part.id).len(), 1);
    assert!(!w.store.orphans().has_component("Health") || w.store.orphans().of(a.id).is_empty());
}

#[test]
fn redefinition_twice_in_a_row_converts_typed_rows() {
    let mut w = World::new();
    let def = w.define("Stats", "return component { fields = { speed = integer(3), mood = enum({ \"Calm\", \"Angry\" }, \"Angry\") } }");
    w.sync();
    let e = w.spawn(ClassId::ENTITY);
    let stats = w.store.component("Stats").unwrap();
    w.store.add(e, ClassId::ENTITY, stats, []).unwrap();
    w.store
        .write(e, stats, w.store.field(stats, "speed").unwrap(), 5i64)
        .unwrap();

    // Integer to number (exact), enum reordered (by name).
    w.arena
        .set_definition_source(def, "return component { fields = { speed = number(1), mood = enum({ \"Angry\", \"Calm\" }) } }")
        .unwrap();
    insta::assert_snapshot!(w.sync(), @r"
    added: -
    changed: Stats
    renamed: -
    removed: -
    unchanged: 0
    component Stats (version 1)
      adopted: 1 (e.g. #3)
      unadopted: 0
      field mood: kept 1 (e.g. #3)
      field speed: kept 1 (e.g. #3)
    ");
    assert_eq!(w.get(e, "Stats", "speed"), Value::Number(5.0));
    assert_eq!(
        w.get(e, "Stats", "mood"),
        Value::Enum(0),
        "Angry, at its new index"
    );

    // Renamed field through former names, and a field whose type no longer fits.
    w.arena
        .set_definition_source(def, "return component { fields = { velocity = number(0, { formerNames = { \"speed\" } }), mood = boolean(false) } }")
        .unwrap();
    insta::assert_snapshot!(w.sync(), @r"
    added: -
    changed: Stats
    renamed: -
    removed: -
    unchanged: 0
    component Stats (version 1)
      adopted: 1 (e.g. #3)
      unadopted: 0
      field mood: reset 1 (e.g. #3)
      field velocity: renamed from speed 1 (e.g. #3)
    ");
    assert_eq!(w.get(e, "Stats", "velocity"), Value::Number(5.0));
    assert_eq!(w.get(e, "Stats", "mood"), Value::Boolean(false));
    assert_eq!(
        w.store.component("Stats"),
        Some(stats),
        "the component keeps its id"
    );
}

#[test]
fn removing_and_re_adding_a_definition_loses_nothing() {
    let mut w = World::new();
    let def = w.define("Tag", "return component { fields = { note = text(\"\") } }");
    w.sync();
    let e = w.spawn(ClassId::ENTITY);
    let tag = w.store.component("Tag").unwrap();
    w.store
        .add(
            e,
            ClassId::ENTITY,
            tag,
            [(
                w.store.field(tag, "note").unwrap(),
                Value::Text("keep me".into()),
            )],
        )
        .unwrap();

    w.arena.set_parent(def, None).unwrap();
    w.arena.destroy(def).unwrap();
    insta::assert_snapshot!(w.sync(), @r"
    added: -
    changed: -
    renamed: -
    removed: Tag
    unchanged: 0
    ");
    assert!(w.store.component("Tag").is_none());
    assert_eq!(
        w.store.orphans().of(e.id)[0].field("note"),
        Some(&Value::Text("keep me".into()))
    );

    w.define("Tag", "return component { fields = { note = text(\"\") } }");
    w.sync();
    assert_eq!(w.get(e, "Tag", "note"), Value::Text("keep me".into()));
    assert!(w.store.orphans().is_empty());
}

#[test]
fn a_renamed_definition_carries_its_rows_and_keeps_its_component() {
    let mut w = World::new();
    let def = w.define("Hp", "return component { fields = { value = number(1) } }");
    w.sync();
    let hp = w.store.component("Hp").unwrap();
    let e = w.spawn(ClassId::ENTITY);
    w.store
        .add(
            e,
            ClassId::ENTITY,
            hp,
            [(w.store.field(hp, "value").unwrap(), Value::Number(7.0))],
        )
        .unwrap();
    w.arena.set_name(def, "Health").unwrap();
    let report = w.sync.sync(&w.arena, &mut w.store);
    assert_eq!(
        report.renamed,
        vec![("Hp".to_string(), "Health".to_string())]
    );
    assert!(report.added.is_empty() && report.removed.is_empty());
    assert_eq!(w.store.component("Health"), Some(hp));
    assert!(w.store.component("Hp").is_none());
    assert_eq!(w.get(e, "Health", "value"), Value::Number(7.0));
}

#[test]
fn duplicate_names_are_a_diagnostic_with_a_deterministic_choice() {
    let mut w = World::new();
    let first = w.define("Dup", "return component { fields = { a = number(1) } }");
    let second = w.define("Dup", "return component { fields = { b = number(2) } }");
    let report = w.sync.sync(&w.arena, &mut w.store);
    assert_eq!(
        report.diagnostics,
        vec![SyncDiagnostic::DuplicateName {
            name: "Dup".into(),
            chosen: first,
            ignored: vec![second]
        }]
    );
    let dup = w.store.component("Dup").unwrap();
    assert!(w.store.field(dup, "a").is_ok(), "the lowest id wins");
}

#[test]
fn a_failing_change_keeps_the_previous_definition_and_is_cached() {
    let mut w = World::new();
    let def = w.define("Good", "return component { fields = { a = number(1) } }");
    let broken = w.define(
        "Broken",
        "return component { fields = { a = number(\"x\") } }",
    );
    let report = w.sync.sync(&w.arena, &mut w.store);
    assert!(matches!(
        &report.diagnostics[..],
        [SyncDiagnostic::Failed { name, definition, error: SchemaError::Invalid { .. } }] if name == "Broken" && *definition == broken
    ));
    assert!(w.store.component("Broken").is_none());

    w.arena
        .set_definition_source(def, "return component { fields = { a = }")
        .unwrap();
    let report = w.sync.sync(&w.arena, &mut w.store);
    // Both definitions fail now: Broken (still) and Good (its new source).
    assert_eq!(report.diagnostics.len(), 2, "{report}");
    assert!(report.diagnostics.iter().any(|d| matches!(
        d,
        SyncDiagnostic::Failed { name, error: SchemaError::Syntax { .. }, .. } if name == "Good"
    )));
    let good = w.store.component("Good").unwrap();
    assert!(
        w.store.field(good, "a").is_ok(),
        "the last good definition stays"
    );

    // Another topology change forces a sync: unchanged sources, failures included, come from
    // the cache.
    let evaluations = w.sync.evaluator().evaluations();
    let hits = w.sync.evaluator().cache_hits();
    w.spawn(ClassId::ENTITY);
    let report = w.sync.sync(&w.arena, &mut w.store);
    assert!(!report.skipped);
    assert_eq!(
        w.sync.evaluator().evaluations(),
        evaluations,
        "nothing re-ran"
    );
    assert_eq!(
        w.sync.evaluator().cache_hits(),
        hits + 2,
        "both failing sources were cache hits"
    );
}

#[test]
fn a_sync_with_unchanged_revisions_does_no_work() {
    let mut w = World::new();
    for i in 0..20 {
        w.define(
            &format!("C{i}"),
            "return component { fields = { a = number(1) } }",
        );
    }
    let first = w.sync.sync(&w.arena, &mut w.store);
    assert_eq!(first.added.len(), 20);
    assert_eq!(
        w.sync.evaluator().evaluations(),
        1,
        "one distinct source, evaluated once"
    );
    let (runs, hits) = (w.sync.runs(), w.sync.evaluator().cache_hits());
    for _ in 0..3 {
        assert!(w.sync.sync(&w.arena, &mut w.store).skipped);
    }
    assert_eq!(w.sync.runs(), runs);
    assert_eq!(w.sync.skips(), 3);
    assert_eq!(
        w.sync.evaluator().cache_hits(),
        hits,
        "the cache was not even asked"
    );
    // A write unrelated to definitions (a part's name) changes neither revision either.
    let part = w.spawn(ClassId::PART);
    w.sync.sync(&w.arena, &mut w.store);
    w.arena.set_name(part.id, "Renamed").unwrap();
    assert!(w.sync.sync(&w.arena, &mut w.store).skipped);
}

#[test]
fn rows_saved_under_an_older_version_keep_migration_input() {
    let mut w = World::new();
    let e = w.spawn(ClassId::ENTITY);
    w.store.add_orphan(
        e,
        orphan(
            "Health",
            1,
            &[
                ("maximum", Value::Number(50.0)),
                ("old", Value::Boolean(true)),
            ],
        ),
    );
    w.define("Health", HEALTH_V2);
    w.sync();
    let health = w.store.component("Health").unwrap();
    let input = w.store.migration_input(e.id, health).unwrap();
    assert_eq!(input.version, 1);
    assert_eq!(input.field("old"), Some(&Value::Boolean(true)));
    assert_eq!(
        w.get(e, "Health", "max"),
        Value::Number(50.0),
        "default adoption still ran"
    );
    // Game code consumes it.
    assert!(w.store.take_migration_input(e.id, health).is_some());
    assert_eq!(w.store.pending_migrations(), 0);
}

#[test]
fn the_schema_cannot_name_itself() {
    let mut w = World::new();
    w.define("Real", "return component { name = \"Other\", fields = {} }");
    let report = w.sync.sync(&w.arena, &mut w.store);
    assert!(matches!(
        &report.diagnostics[..],
        [SyncDiagnostic::Failed { error: SchemaError::Invalid { message, .. }, .. }] if message.contains("cannot name itself")
    ));
    assert!(w.store.component("Other").is_none());
}

const HP: &str = "return component { fields = { value = number(1) } }";

/// The store's name for a component id, if any.
fn store_name(store: &Store, name: &str) -> bool {
    store.component(name).is_some()
}

#[test]
fn a_rename_whose_redefinition_fails_keeps_the_old_name_until_it_succeeds() {
    let mut w = World::new();
    let def = w.define("Hp", HP);
    w.sync();
    let hp = w.store.component("Hp").unwrap();
    let e = w.spawn(ClassId::ENTITY);
    let value = w.store.field(hp, "value").unwrap();
    w.store
        .add(e, ClassId::ENTITY, hp, [(value, Value::Number(7.0))])
        .unwrap();

    // Renamed and broken in one step: the store refuses nothing, the source fails.
    w.arena.set_name(def, "Health").unwrap();
    w.arena
        .set_definition_source(def, "return component { fields = { value = }")
        .unwrap();
    let report = w.sync.sync(&w.arena, &mut w.store);
    assert!(report.renamed.is_empty(), "{report}");
    assert!(report.removed.is_empty(), "{report}");
    assert!(matches!(
        &report.diagnostics[..],
        [SyncDiagnostic::Failed { name, error: SchemaError::Syntax { .. }, .. }] if name == "Health"
    ));
    assert!(store_name(&w.store, "Hp") && !store_name(&w.store, "Health"));
    assert_eq!(
        w.sync.component("Hp"),
        Some(hp),
        "the sync agrees with the store"
    );
    assert_eq!(w.sync.component("Health"), None);
    assert_eq!(w.get(e, "Hp", "value"), Value::Number(7.0));

    // The failure is reported again by every later sync, skipped or not.
    for _ in 0..2 {
        let report = w.sync.sync(&w.arena, &mut w.store);
        assert_eq!(report.diagnostics.len(), 1, "{report}");
    }

    // The old source comes back under the new name: the rename happens now.
    w.arena.set_definition_source(def, HP).unwrap();
    let report = w.sync.sync(&w.arena, &mut w.store);
    assert_eq!(
        report.renamed,
        vec![("Hp".to_string(), "Health".to_string())],
        "{report}"
    );
    assert!(report.diagnostics.is_empty(), "{report}");
    assert_eq!(w.store.component("Health"), Some(hp));
    assert!(!store_name(&w.store, "Hp"));
    assert_eq!(w.sync.component("Health"), Some(hp));
    assert_eq!(w.get(e, "Health", "value"), Value::Number(7.0));
    assert!(w.store.orphans().is_empty());
}

#[test]
fn a_rename_the_store_refuses_is_retried_once_the_name_is_free() {
    let mut w = World::new();
    let def = w.define("Hp", HP);
    w.sync();
    let hp = w.store.component("Hp").unwrap();
    // Another part of the game installs a component named Health directly.
    let squatter = w
        .store
        .install(
            strata_component_store::ComponentDef::new("Health"),
            &strata_arena::ClassRegistry::standard(),
        )
        .unwrap();
    w.arena.set_name(def, "Health").unwrap();
    let report = w.sync.sync(&w.arena, &mut w.store);
    assert!(
        report.renamed.is_empty() && report.removed.is_empty(),
        "{report}"
    );
    assert_eq!(report.diagnostics.len(), 1, "{report}");
    assert_eq!(w.sync.component("Hp"), Some(hp));
    assert_eq!(w.store.component("Hp"), Some(hp));

    // The name is freed: the next sync renames, although the arena did not change.
    w.store.uninstall(squatter).unwrap();
    let report = w.sync.sync(&w.arena, &mut w.store);
    assert_eq!(
        report.renamed,
        vec![("Hp".to_string(), "Health".to_string())],
        "{report}"
    );
    assert_eq!(w.store.component("Health"), Some(hp));
}

#[test]
fn the_definition_behind_a_name_is_followed_when_a_duplicate_takes_over() {
    let mut w = World::new();
    let first = w.define("X", HP);
    let second = w.define("X", HP);
    w.sync();
    let x = w.store.component("X").unwrap();
    let e = w.spawn(ClassId::ENTITY);
    let value = w.store.field(x, "value").unwrap();
    w.store
        .add(e, ClassId::ENTITY, x, [(value, Value::Number(7.0))])
        .unwrap();

    // The chosen definition goes; its duplicate, with the same source, takes over unchanged.
    w.arena.destroy(first).unwrap();
    let report = w.sync.sync(&w.arena, &mut w.store);
    assert_eq!(report.unchanged, 1, "{report}");
    assert!(
        report.removed.is_empty() && report.added.is_empty(),
        "{report}"
    );

    // Renaming the definition now backing X renames the component and keeps its rows.
    w.arena.set_name(second, "Y").unwrap();
    let report = w.sync.sync(&w.arena, &mut w.store);
    assert_eq!(
        report.renamed,
        vec![("X".to_string(), "Y".to_string())],
        "{report}"
    );
    assert!(
        report.removed.is_empty() && report.added.is_empty(),
        "{report}"
    );
    assert_eq!(w.store.component("Y"), Some(x));
    assert_eq!(w.get(e, "Y", "value"), Value::Number(7.0));
    assert!(w.store.orphans().is_empty());
}

#[test]
fn a_sync_of_another_store_brings_that_store_in_step() {
    let mut w = World::new();
    w.define("Hp", HP);
    w.sync();
    // A store the sync never saw, with the arena unchanged.
    let mut other = Store::new();
    let report = w.sync.sync(&w.arena, &mut other);
    assert!(!report.skipped, "{report}");
    assert_eq!(report.added, vec!["Hp".to_string()]);
    assert!(other.component("Hp").is_some());
    // And the first store again: in step already, so nothing changes.
    let report = w.sync.sync(&w.arena, &mut w.store);
    assert!(!report.skipped);
    assert!(
        report.added.is_empty() && report.changed.is_empty(),
        "{report}"
    );
    assert_eq!(report.unchanged, 1);
}

#[test]
fn a_loaded_snapshot_follows_the_definitions_changed_since() {
    let mut w = World::new();
    let def = w.define("Hp", HP);
    let gone = w.define("Gone", HP);
    w.sync();
    let hp = w.store.component("Hp").unwrap();
    let e = w.spawn(ClassId::ENTITY);
    let value = w.store.field(hp, "value").unwrap();
    w.store
        .add(e, ClassId::ENTITY, hp, [(value, Value::Number(7.0))])
        .unwrap();
    let saved = w.store.snapshot();

    // The world moves on: a rename, a new field, a removed definition.
    w.arena.set_name(def, "Health").unwrap();
    w.arena
        .set_definition_source(
            def,
            "return component { fields = { value = number(1), extra = integer(3) } }",
        )
        .unwrap();
    w.arena.destroy(gone).unwrap();
    w.sync();

    // The snapshot is loaded back: it gets the same changes, and keeps its rows.
    let mut loaded = saved;
    let report = w.sync.sync(&w.arena, &mut loaded);
    assert_eq!(
        report.renamed,
        vec![("Hp".to_string(), "Health".to_string())],
        "{report}"
    );
    assert_eq!(report.removed, vec!["Gone".to_string()], "{report}");
    let health = loaded.component("Health").unwrap();
    let get = |field: &str| {
        loaded
            .get_value(e, health, loaded.field(health, field).unwrap())
            .unwrap()
    };
    assert_eq!(get("value"), Value::Number(7.0));
    assert_eq!(get("extra"), Value::Integer(3));
    assert!(loaded.component("Gone").is_none());
}

#[test]
fn adopt_orphans_uses_the_components_of_the_store_it_is_given() {
    let mut w = World::new();
    w.define("Hp", HP);
    w.sync();
    // Another store where Hp has another id: something else was installed first.
    let classes = strata_arena::ClassRegistry::standard();
    let mut other = Store::new();
    let first = other
        .install(
            strata_component_store::ComponentDef::new("Other")
                .field(strata_component_store::FieldDef::number("value", 0.0)),
            &classes,
        )
        .unwrap();
    w.sync.sync(&w.arena, &mut other);
    let hp = other.component("Hp").unwrap();
    assert_ne!(Some(hp), w.store.component("Hp"), "the ids differ");

    let e = w.spawn(ClassId::ENTITY);
    other.add_orphan(e, orphan("Hp", 1, &[("value", Value::Number(5.0))]));
    let reports = w.sync.adopt_orphans(&w.arena, &mut other);
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].component, "Hp");
    assert_eq!(
        other.get_value(e, hp, other.field(hp, "value").unwrap()),
        Ok(Value::Number(5.0))
    );
    assert!(!other.has(e, first), "the other component is untouched");
    assert!(other.orphans().is_empty());

    // Without a sync of this store first, adopt_orphans still looks names up in it.
    let mut third = Store::new();
    third
        .install(
            strata_component_store::ComponentDef::new("Hp")
                .field(strata_component_store::FieldDef::number("value", 0.0)),
            &classes,
        )
        .unwrap();
    third.add_orphan(e, orphan("Hp", 1, &[("value", Value::Number(6.0))]));
    let reports = w.sync.adopt_orphans(&w.arena, &mut third);
    assert_eq!(reports.len(), 1);
    let hp = third.component("Hp").unwrap();
    assert_eq!(
        third.get_value(e, hp, third.field(hp, "value").unwrap()),
        Ok(Value::Number(6.0))
    );
}
