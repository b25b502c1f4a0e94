//! Workloads of component schemas (`strata-schema-adoption`): evaluating a schema cold and
//! from the cache, a sync with nothing to do, adopting saved rows when a definition appears,
//! and redefining a component that already holds rows.
//!
//! Invariant: every workload builds its world (arena, store, orphans, typed rows, evaluator)
//! outside the timed routine and times only the evaluation or sync its name describes; each
//! sample starts from the same state. A call that fails, or a sync that does not do what the
//! workload expects, panics, so a workload never measures an error path by mistake.

use std::fmt::{Debug, Display};
use std::sync::Arc;

use strata_arena::{Arena, ClassId, InstanceId, Snapshot};
use strata_component_store::{InstanceRef, OrphanRecord, Store, Value};
use strata_schema_adoption::{Evaluator, SchemaSync, SchemaVm, SyncReport};

use crate::harness::Workload;

/// The schema workloads, in run order.
pub fn workloads() -> Vec<Workload> {
    vec![
        eval_cold(),
        eval_cached(),
        sync_unchanged(200),
        adopt_orphans(100_000),
        redefine(100_000),
        // The same number of orphans spread over many components appearing at once: the cost
        // per orphan grows with the number of components, which the case above hides.
        adopt_orphans_spread(100_000, 100),
    ]
}

/// Fixture and routine calls cannot fail on the schemas below; a failure is a broken
/// workload, so it stops the run.
#[track_caller]
fn must<T, E: Display>(result: Result<T, E>) -> T {
    match result {
        Ok(value) => value,
        Err(error) => panic!("schema workload failed: {error}"),
    }
}

/// Stops the run when a sync did not do what the workload measures.
#[track_caller]
fn expect<T: PartialEq + Debug>(what: &str, got: T, want: T) {
    if got != want {
        panic!("schema workload: {what} is {got:?}, expected {want:?}");
    }
}

/// Stops the run when a sync's list of component names is not `want`.
#[track_caller]
fn expect_names(what: &str, got: &[String], want: &[&str]) {
    if got.iter().map(String::as_str).ne(want.iter().copied()) {
        panic!("schema workload: {what} are {got:?}, expected {want:?}");
    }
}

/// A 20-field schema using every kind of constructor, options included.
const SCHEMA_20_FIELDS: &str = r#"
return component {
    version = 3,
    classes = { "Entity", "Model" },
    requires = { "Transform" },
    observed = true,
    fields = {
        current = number(100),
        max = number(100, { formerNames = { "maximum" } }),
        regen = number(0.5),
        level = integer(1),
        xp = integer(0, { formerNames = { "experience" } }),
        alive = boolean(true),
        invulnerable = boolean(false),
        title = text("recruit"),
        team = text(""),
        state = enum({ "idle", "moving", "attacking", "dead" }, "idle"),
        stance = enum({ "standing", "crouching", "prone" }),
        home = vector(0, 5, 0),
        aim = vector(),
        pose = transform(),
        target = ref({ onDestroy = "clear" }),
        owner = ref({ onDestroy = "destroyHolder" }),
        squad = list(ref(), { onDestroy = "removeComponent" }),
        resist = map(text(), number()),
        shield = struct({ amount = number(25), kind = enum({ "none", "energy", "plate" }) }),
        note = optional(text()),
    },
}
"#;

fn eval_cold() -> Workload {
    Workload::new(
        "schema_eval_20_fields_cold",
        20,
        "SchemaVm::evaluate on a new VM (created in setup): Luau compiles the chunk, a fresh \
         sandbox environment with the 13 constructors and `component`, the chunk runs, the 20 \
         marked field tables are read back into FieldDefs, then a full GC",
        |b| {
            b.iter_with_setup(
                || must(SchemaVm::new()),
                |vm| {
                    let schema = must(vm.evaluate("Bench", SCHEMA_20_FIELDS));
                    expect("the field count", schema.fields.len(), 20);
                    schema
                },
            );
        },
    )
    .items(1)
}

fn eval_cached() -> Workload {
    Workload::new(
        "schema_eval_20_fields_cached",
        20,
        "Evaluator::evaluate cache hit: hashbrown lookup by the source text (hashed, then \
         compared in full), use-order update, clone of the cached Result<Arc<Schema>>",
        |b| {
            let mut evaluator = must(Evaluator::new());
            must(evaluator.evaluate("Bench", SCHEMA_20_FIELDS));
            must(evaluator.evaluate("Bench", SCHEMA_20_FIELDS));
            expect("the evaluations", evaluator.evaluations(), 1);
            expect("the cache hits", evaluator.cache_hits(), 1);
            b.iter(move || evaluator.evaluate("Bench", SCHEMA_20_FIELDS));
        },
    )
    .items(1)
}

/// Creates a `ComponentDefinition` named `name` with `source`.
fn definition(arena: &mut Arena, name: &str, source: &str) -> InstanceId {
    let id = must(arena.create(ClassId::COMPONENT_DEFINITION, None));
    must(arena.set_name(id, name));
    must(arena.set_definition_source(id, source));
    id
}

fn sync_unchanged(n: usize) -> Workload {
    Workload::new(
        "schema_sync_200_unchanged",
        n as u64,
        "SchemaSync::sync when the arena's topology and definition-family revisions are the \
         ones it last saw: two revision reads and a compare, no definition looked at",
        move |b| {
            let mut arena = Arena::standard();
            for i in 0..n {
                let source = format!(
                    "return component {{ fields = {{ value = number({i}), count = integer() }} }}"
                );
                definition(&mut arena, &format!("Component{i:03}"), &source);
            }
            let mut store = Store::new();
            let mut sync = must(SchemaSync::new());
            let first = sync.sync(&arena, &mut store);
            expect("the components added", first.added.len(), n);
            expect("the diagnostics", first.diagnostics.len(), 0);
            expect(
                "a second sync skipped",
                sync.sync(&arena, &mut store).skipped,
                true,
            );
            b.iter(move || sync.sync(&arena, &mut store));
        },
    )
    .items(1)
}

/// The schema of `Health` that meets saved rows: `state` is an enum the saved text converts to
/// by variant name.
const HEALTH: &str = r#"
return component {
    fields = {
        current = number(100),
        max = number(100),
        state = enum({ "alive", "downed", "dead" }),
    },
}
"#;

/// An arena holding `n` entities and a definition named `name` with `source`, with the
/// entities and the definition.
fn world(n: usize, name: &str, source: &str) -> (Arena, Vec<InstanceRef>, InstanceId) {
    let mut arena = Arena::standard();
    let entities = must(arena.create_many(ClassId::ENTITY, None, n))
        .into_iter()
        .map(|(id, slot)| InstanceRef::new(id, slot))
        .collect();
    let definition = definition(&mut arena, name, source);
    (arena, entities, definition)
}

/// A sync whose evaluator already holds `sources`, so a timed sync evaluates nothing.
fn warm_sync(sources: &[&str]) -> SchemaSync {
    let mut evaluator = must(Evaluator::new());
    for source in sources {
        must(evaluator.evaluate("Health", source));
    }
    SchemaSync::with_evaluator(evaluator)
}

/// Checks the one component a sync (re)defined adopted every row.
#[track_caller]
fn expect_adopted_all(report: &SyncReport, n: usize) {
    expect("the adoption reports", report.adoption.len(), 1);
    expect("the rows adopted", report.adoption[0].adopted.count, n);
    expect("the rows unadopted", report.adoption[0].unadopted.count, 0);
}

fn adopt_orphans(n: usize) -> Workload {
    Workload::new(
        "schema_adopt_100k_orphans",
        n as u64,
        "SchemaSync::sync meeting a new definition (its source already in the evaluator \
         cache): Store::install, then every orphan record collected and sorted by instance, \
         filtered by component, adopted by field name (text -> enum by variant name, class and \
         liveness checked per row), the set rebuilt from the adopted rows, the orphans taken",
        move |b| {
            let (arena, entities, _) = world(n, "Health", HEALTH);
            let component: Arc<str> = Arc::from("Health");
            let names: [Arc<str>; 3] = ["current", "max", "state"].map(Arc::from);
            let alive: Arc<str> = Arc::from("alive");
            b.iter_with_setup(
                || {
                    let mut store = Store::new();
                    for (i, at) in entities.iter().enumerate() {
                        store.add_orphan(
                            *at,
                            OrphanRecord {
                                component: component.clone(),
                                version: 1,
                                fields: vec![
                                    (names[0].clone(), Value::Number((i % 100) as f64)),
                                    (names[1].clone(), Value::Number(100.0)),
                                    (names[2].clone(), Value::Text(alive.clone())),
                                ],
                                types: None,
                            },
                        );
                    }
                    (store, warm_sync(&[HEALTH]))
                },
                |(store, sync)| {
                    let report = sync.sync(&arena, store);
                    expect_names("the components added", &report.added, &["Health"]);
                    expect_adopted_all(&report, n);
                    report
                },
            );
        },
    )
}

fn adopt_orphans_spread(n: usize, components: usize) -> Workload {
    Workload::new(
        format!("schema_adopt_100k_orphans_{components}_components"),
        n as u64,
        format!(
            "SchemaSync::sync meeting {components} new definitions at once (sources already in \
             the evaluator cache), {} orphan records each: per definition, Store::install, then \
             every orphan record left in the store (of every component) collected, sorted and \
             filtered, that component's rows adopted by field name and the set rebuilt, and its \
             orphans taken by a pass over every instance holding orphans",
            n / components
        ),
        move |b| {
            let mut arena = Arena::standard();
            let entities: Vec<InstanceRef> = must(arena.create_many(ClassId::ENTITY, None, n))
                .into_iter()
                .map(|(id, slot)| InstanceRef::new(id, slot))
                .collect();
            let names: Vec<Arc<str>> = (0..components)
                .map(|c| Arc::from(format!("Component{c:03}")))
                .collect();
            let sources: Vec<String> = (0..components)
                .map(|c| {
                    format!(
                        "return component {{ fields = {{ current = number({c}), \
                         max = number(100) }} }}"
                    )
                })
                .collect();
            for (name, source) in names.iter().zip(&sources) {
                definition(&mut arena, name, source);
            }
            let fields: [Arc<str>; 2] = ["current", "max"].map(Arc::from);
            b.iter_with_setup(
                || {
                    let mut store = Store::new();
                    for (i, at) in entities.iter().enumerate() {
                        store.add_orphan(
                            *at,
                            OrphanRecord {
                                component: names[i % components].clone(),
                                version: 1,
                                fields: vec![
                                    (fields[0].clone(), Value::Number((i % 100) as f64)),
                                    (fields[1].clone(), Value::Number(100.0)),
                                ],
                                types: None,
                            },
                        );
                    }
                    let sources: Vec<&str> = sources.iter().map(String::as_str).collect();
                    (store, warm_sync(&sources))
                },
                |(store, sync)| {
                    let report = sync.sync(&arena, store);
                    expect("the components added", report.added.len(), components);
                    let adopted: usize = report.adoption.iter().map(|r| r.adopted.count).sum();
                    expect("the rows adopted", adopted, n);
                    report
                },
            );
        },
    )
}

/// `Health` before the change: `max` is an integer.
const HEALTH_V1: &str = r#"
return component {
    fields = {
        current = number(100),
        max = integer(100),
        regen = number(0),
    },
}
"#;

/// `Health` after the change: `max` is now `maxHealth`, a number.
const HEALTH_V2: &str = r#"
return component {
    fields = {
        current = number(100),
        maxHealth = number(100, { formerNames = { "max" } }),
        regen = number(0),
    },
}
"#;

fn redefine(n: usize) -> Workload {
    Workload::new(
        "schema_redefine_100k",
        n as u64,
        "SchemaSync::sync after a definition's source changed (both sources already in the \
         evaluator cache): every typed row read back as Values, adopted onto the new definition \
         (one field renamed through formerNames, integer -> number), the store's orphan records \
         scanned (none here), the set rebuilt from the adopted rows; version unchanged, so no \
         migration input",
        move |b| {
            let (mut arena, entities, health) = world(n, "Health", HEALTH_V1);
            let before: Snapshot = arena.snapshot();
            must(arena.set_definition_source(health, HEALTH_V2));
            b.iter_with_setup(
                || {
                    let mut store = Store::new();
                    let mut sync = warm_sync(&[HEALTH_V1, HEALTH_V2]);
                    let installed = sync.sync(&before, &mut store);
                    expect("the components added", installed.added.len(), 1);
                    let health = must(store.component("Health").ok_or("Health is not installed"));
                    let current = must(store.field(health, "current"));
                    let max = must(store.field(health, "max"));
                    let mut rows = must(store.insert_many(&entities, ClassId::ENTITY, health));
                    must(rows.fill(current, (0..n).map(|i| (i % 100) as f64)));
                    must(rows.fill(max, (0..n).map(|i| 100 + (i % 7) as i64)));
                    // The insert handle reports its rows to observers when dropped; drop it before moving the store.
                    drop(rows);
                    (store, sync)
                },
                |(store, sync)| {
                    let report = sync.sync(&arena, store);
                    expect_names("the components changed", &report.changed, &["Health"]);
                    expect_adopted_all(&report, n);
                    report
                },
            );
        },
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::harness::SampleConfig;

    /// Each workload, on small sizes, runs its checks through a warm-up and one sample.
    #[test]
    fn workloads_run_and_check_their_syncs() {
        let once = SampleConfig {
            min_samples: 1,
            budget: Duration::ZERO,
            max_samples: 1,
        };
        for mut workload in [
            eval_cold(),
            eval_cached(),
            sync_unchanged(20),
            adopt_orphans(300),
            redefine(300),
            adopt_orphans_spread(300, 10),
        ] {
            let summary = workload.measure(once);
            assert!(summary.is_ok(), "{}: {summary:?}", workload.name());
        }
    }

    #[test]
    fn names_match_sizes() {
        for workload in workloads() {
            let size = workload.size().to_string();
            let short = format!("{}k", workload.size() / 1_000);
            assert!(
                workload.name().contains(&size) || workload.name().contains(&short),
                "{}",
                workload.name()
            );
        }
    }
}
