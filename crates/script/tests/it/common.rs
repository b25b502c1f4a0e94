//! Fixtures shared by the scripting layer's integration tests.

use strata::prelude::*;
use strata_script::prelude::*;

/// A world on `threads` threads with Luau components `Position {x, y, z}`,
/// `Velocity {x, y, z}`, `Health {current = 100, max = 100}` and `Target {of = ref}` (removed
/// with its target), ready for game scripts. Its identities come from a fixed seed, so two
/// such worlds that do the same things hash alike.
pub fn scripted(threads: usize) -> World {
    let mut world = World::with_seed(threads, 1).unwrap();
    let xyz = "return component { fields = { x = number(0), y = number(0), z = number(0) } }";
    world.define_luau("Position", xyz, None).unwrap();
    world.define_luau("Velocity", xyz, None).unwrap();
    world
        .define_luau(
            "Health",
            "return component { fields = { current = number(100), max = number(100) } }",
            None,
        )
        .unwrap();
    world
        .define_luau(
            "Target",
            r#"return component { fields = { of = ref({ onDestroy = "removeComponent" }) } }"#,
            None,
        )
        .unwrap();
    let report = world.sync_definitions();
    assert!(report.diagnostics.is_empty(), "{:?}", report.diagnostics);
    world
}

/// The script error a failing script gave, or a panic naming what it did instead.
pub fn script_error(result: Result<impl std::fmt::Debug, strata_script::Error>) -> ScriptError {
    match result {
        Err(strata_script::Error::Script(error)) => error,
        other => panic!("expected a script error, got {other:?}"),
    }
}

/// Runs `source` as `test.luau` and returns what it printed.
pub fn printed(world: &mut World, source: &str) -> Vec<String> {
    world.run_script("test.luau", source).unwrap();
    world.take_prints()
}

/// What a world holds, change ticks, counters and GUIDs aside: every live instance (id, class,
/// parent, data, tags) and every row's values, in id order. Two runs that did the same things
/// in another order (so with other ticks), or in worlds of other seeds, compare equal by it.
pub fn content(world: &World) -> String {
    let mut out = String::new();
    for node in world.arena_image().nodes {
        out.push_str(&format!(
            "{} {} {:?} {:?} {:?}\n",
            node.id, node.class, node.parent, node.data, node.tags
        ));
    }
    for set in world.store().components() {
        let mut rows: Vec<usize> = (0..set.len()).collect();
        rows.sort_by_key(|row| set.ids()[*row]);
        for row in rows {
            let values: Vec<String> = (0..set.def().fields().len())
                .map(|f| format!("{:?}", set.value(row, FieldId::from_index(f as u16))))
                .collect();
            out.push_str(&format!(
                "{} {} {values:?}\n",
                set.def().name(),
                set.ids()[row]
            ));
        }
    }
    out
}
