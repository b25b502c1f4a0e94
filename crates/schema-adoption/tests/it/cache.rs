//! The evaluator's cache: an outcome is found by the source text itself (never by a hash alone),
//! and the cache is bounded, forgetting the least recently used sources first.

use strata_arena::{Arena, ClassId};
use strata_component_store::{FieldDef, Store};
use strata_schema_adoption::{Budget, CacheLimit, Evaluator, SchemaSync};

/// Two sources with the same 64-bit FNV-1a hash (found by a distinguished-point search over the
/// eleven characters between the quotes), which evaluate to different schemas.
const COLLIDING: [&str; 2] = [
    "return component { fields = { f = text(\"JtX3b_27LdF\") } }",
    "return component { fields = { f = text(\"WQ6qyw281gN\") } }",
];

fn fnv1a(source: &str) -> u64 {
    strata_mix::Fnv1a::hash(source.as_bytes())
}

#[test]
fn sources_with_one_64_bit_hash_are_told_apart() {
    assert_eq!(
        fnv1a(COLLIDING[0]),
        fnv1a(COLLIDING[1]),
        "the pair collides"
    );
    let mut evaluator = Evaluator::new().unwrap();
    for source in COLLIDING {
        let default = &source[source.find('"').unwrap() + 1..source.rfind('"').unwrap()];
        let schema = evaluator.evaluate("Probe", source).unwrap();
        assert_eq!(
            schema.fields,
            vec![FieldDef::text("f", default)],
            "{source}"
        );
    }
    assert_eq!(evaluator.evaluations(), 2);
    assert_eq!(evaluator.cache_hits(), 0);
    // Both are cached, each under its own text.
    for source in COLLIDING {
        evaluator.evaluate("Probe", source).unwrap();
    }
    assert_eq!((evaluator.evaluations(), evaluator.cache_hits()), (2, 2));
}

fn distinct(i: usize) -> String {
    format!("return component {{ fields = {{ f = number({i}) }} }}")
}

#[test]
fn the_cache_forgets_the_least_recently_used_source_beyond_its_entry_bound() {
    let mut evaluator = Evaluator::new().unwrap();
    let n = 1100;
    for i in 0..n {
        evaluator.evaluate("Probe", &distinct(i)).unwrap();
    }
    assert_eq!(evaluator.evaluations(), n as u64);
    // The most recent sources are still cached.
    evaluator.evaluate("Probe", &distinct(n - 1)).unwrap();
    assert_eq!(evaluator.evaluations(), n as u64);
    // The first one was forgotten, and evaluates again.
    evaluator.evaluate("Probe", &distinct(0)).unwrap();
    assert_eq!(evaluator.evaluations(), n as u64 + 1);
}

#[test]
fn the_cache_stays_within_its_entry_and_byte_limits() {
    let limit = CacheLimit {
        entries: 4,
        bytes: 1 << 20,
    };
    let mut evaluator = Evaluator::with_limits(Budget::STANDARD, limit).unwrap();
    assert_eq!(evaluator.limit(), limit);
    for i in 0..10 {
        evaluator.evaluate("Probe", &distinct(i)).unwrap();
        assert!(evaluator.cached() <= 4);
    }
    assert_eq!((evaluator.cached(), evaluator.evictions()), (4, 6));
    // Using a source makes it the most recent: 6 survives the next two misses, 7 does not.
    evaluator.evaluate("Probe", &distinct(6)).unwrap();
    evaluator.evaluate("Probe", &distinct(10)).unwrap();
    evaluator.evaluate("Probe", &distinct(11)).unwrap();
    let before = evaluator.evaluations();
    evaluator.evaluate("Probe", &distinct(6)).unwrap();
    assert_eq!(evaluator.evaluations(), before, "6 was still cached");
    evaluator.evaluate("Probe", &distinct(7)).unwrap();
    assert_eq!(evaluator.evaluations(), before + 1, "7 was forgotten");

    // Large sources count by their bytes: three of 150 KiB fit in 512 KiB, a fourth does not.
    let padded = |i: usize| format!("{}\n--{}", distinct(i), "x".repeat(150 * 1024));
    let mut evaluator = Evaluator::with_limits(
        Budget::STANDARD,
        CacheLimit {
            entries: 100,
            bytes: 512 * 1024,
        },
    )
    .unwrap();
    for i in 0..3 {
        evaluator.evaluate("Probe", &padded(i)).unwrap();
    }
    assert_eq!((evaluator.cached(), evaluator.evictions()), (3, 0));
    assert!(evaluator.cached_bytes() <= 512 * 1024);
    evaluator.evaluate("Probe", &padded(3)).unwrap();
    assert_eq!((evaluator.cached(), evaluator.evictions()), (3, 1));
    assert!(evaluator.cached_bytes() <= 512 * 1024);
    // A source larger than the whole limit is evaluated but not kept.
    let huge = format!("{}\n--{}", distinct(99), "x".repeat(600 * 1024));
    evaluator.evaluate("Probe", &huge).unwrap();
    evaluator.evaluate("Probe", &huge).unwrap();
    assert_eq!(evaluator.cache_hits(), 0);
    assert_eq!(evaluator.cached(), 3);
}

#[test]
fn a_sync_notices_a_changed_source_whose_64_bit_hash_is_unchanged() {
    let mut arena = Arena::standard();
    let def = arena.create(ClassId::COMPONENT_DEFINITION, None).unwrap();
    arena.set_name(def, "Probe").unwrap();
    arena.set_definition_source(def, COLLIDING[0]).unwrap();
    let mut store = Store::new();
    let mut sync = SchemaSync::new().unwrap();
    sync.sync(&arena, &mut store);
    arena.set_definition_source(def, COLLIDING[1]).unwrap();
    let report = sync.sync(&arena, &mut store);
    assert_eq!(report.changed, vec!["Probe".to_string()], "{report}");
    let probe = store.component("Probe").unwrap();
    assert_eq!(
        store.def(probe).unwrap().fields()[0].default,
        strata_component_store::Value::Text("WQ6qyw281gN".into())
    );
}
