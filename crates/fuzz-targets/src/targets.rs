//! The targets (see the crate docs).

use std::time::Duration;

use strata::WorldSnapshot;
use strata::layers::schema::{Budget, Evaluator};
use strata::prelude::*;
use strata_script::prelude::*;

use crate::bytes::Bytes;

/// The longest input a target reads: longer inputs take the fuzzer's time, not more paths.
const MAX_INPUT: usize = 64 * 1024;

/// The classes instances are made of.
const CLASSES: [ClassId; 4] = [
    ClassId::PART,
    ClassId::FOLDER,
    ClassId::MODEL,
    ClassId::ENTITY,
];

/// The tags instances may carry.
const TAGS: [&str; 2] = ["red", "blue"];

fn clip(data: &[u8]) -> &[u8] {
    &data[..data.len().min(MAX_INPUT)]
}

fn save(world: &World) -> Vec<u8> {
    let mut file = Vec::new();
    world
        .save(&mut file)
        .unwrap_or_else(|e| panic!("a live world failed to save: {e}"));
    file
}

/// A save loads back into a world that saves to the same bytes.
fn check_round_trip(world: &World) {
    let file = save(world);
    let loaded =
        World::load(file.as_slice()).unwrap_or_else(|e| panic!("a save failed to load: {e}"));
    assert!(save(&loaded) == file, "save, load, save changed the bytes");
}

/// Loading arbitrary bytes as a save file: refused with a typed error, or a world that saves
/// and loads back to the same bytes.
pub fn save_file(data: &[u8]) {
    if let Ok(world) = World::load(clip(data)) {
        check_round_trip(&world);
    }
}

/// Evaluating arbitrary text as a component schema, under a small budget.
pub fn schema_source(data: &[u8]) {
    let Ok(source) = std::str::from_utf8(clip(data)) else {
        return;
    };
    let budget = Budget {
        instructions: 200_000,
        time: Duration::from_millis(200),
        memory: 4 * 1024 * 1024,
        source: MAX_INPUT,
    };
    let mut evaluator = Evaluator::with_budget(budget)
        .unwrap_or_else(|e| panic!("an evaluator could not be made: {e}"));
    let first = evaluator.evaluate("fuzz.luau", source);
    // The same source gives the same outcome (the evaluator caches it; a fresh one agrees).
    let mut fresh = Evaluator::with_budget(budget)
        .unwrap_or_else(|e| panic!("an evaluator could not be made: {e}"));
    let again = fresh.evaluate("fuzz.luau", source);
    assert_eq!(
        first.as_ref().map(|s| format!("{s:?}")).ok(),
        again.as_ref().map(|s| format!("{s:?}")).ok(),
        "one source, two outcomes"
    );
}

/// Parsing arbitrary text as a `place.toml`.
pub fn place_toml(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(clip(data)) else {
        return;
    };
    if let Ok(config) = PlaceConfig::parse(text) {
        assert!(config.frame_rate.is_finite() && config.frame_rate > 0.0);
        assert!(config.fixed_rate.is_finite() && config.fixed_rate > 0.0);
        assert_ne!(config.threads, Some(0));
    }
}

/// A small world for scripts: two Luau components and a few parts.
fn scripted_world() -> World {
    let mut world =
        World::with_seed(1, 1).unwrap_or_else(|e| panic!("a world could not be made: {e}"));
    let xyz = "return component { fields = { x = number(0), y = number(0), z = number(0) } }";
    for name in ["Position", "Velocity"] {
        world
            .define_luau(name, xyz, None)
            .unwrap_or_else(|e| panic!("a fixed definition failed: {e}"));
    }
    world.sync_definitions();
    world.set_script_budget(ScriptBudget {
        instructions: 200_000,
        time: Duration::from_millis(200),
        setup_time: Duration::from_millis(200),
        memory: 16 * 1024 * 1024,
    });
    world
        .run_script(
            "setup.luau",
            "for i = 1, 3 do
                local p = Instance.new('Part', world.workspace)
                p:AddComponent(Position, { x = i })
                p:AddComponent(Velocity, { x = 1 })
            end",
        )
        .unwrap_or_else(|e| panic!("the fixed setup failed: {e}"));
    world
}

/// Arbitrary text as a game script, run once and then as a system for two frames, under a
/// small budget; the world must stay whole (it saves and loads back to the same bytes).
pub fn game_script(data: &[u8]) {
    let Ok(source) = std::str::from_utf8(clip(data)) else {
        return;
    };
    let mut world = scripted_world();
    let _ = world.run_script("fuzz.luau", source);
    if world
        .add_script_system("fuzz", "systems/fuzz.luau", source)
        .is_ok()
    {
        for _ in 0..2 {
            world
                .step(1.0 / 60.0)
                .unwrap_or_else(|e| panic!("a frame failed as a whole: {e}"));
        }
    }
    let _ = world.take_prints();
    check_round_trip(&world);
}

/// A world of two Rust components built from the input: `n` instances, each with some of the
/// components and tags.
fn built_world(bytes: &mut Bytes<'_>) -> (World, [ComponentId; 2]) {
    let mut world =
        World::with_seed(1, 2).unwrap_or_else(|e| panic!("a world could not be made: {e}"));
    let components = ["A", "B"].map(|name| {
        world
            .define(ComponentDef::new(name).field(FieldDef::number("v", 0.0)))
            .unwrap_or_else(|e| panic!("a fixed definition failed: {e}"))
    });
    let n = bytes.below(24);
    let workspace = world.workspace();
    for _ in 0..n {
        let class = CLASSES[bytes.below(CLASSES.len())];
        let Ok(id) = world.create(class, Some(workspace)) else {
            continue;
        };
        let mask = bytes.byte();
        for (k, c) in components.iter().enumerate() {
            if mask & (1 << k) != 0 {
                let _ = world.add(id, *c, []);
            }
        }
        for (k, tag) in TAGS.iter().enumerate() {
            if mask & (4 << k) != 0 {
                let _ = world.tag(id, tag);
            }
        }
    }
    (world, components)
}

/// A spec from the input, and whether it filters by class (which the brute-force check below
/// does not model).
fn built_spec(terms: u8, bytes: &mut Bytes<'_>, components: [ComponentId; 2]) -> (QuerySpec, bool) {
    let mut spec = QuerySpec::new();
    let mut by_class = false;
    for (k, c) in components.iter().enumerate() {
        match (terms >> (2 * k)) & 3 {
            1 => spec = spec.with(*c),
            2 => spec = spec.without(*c),
            3 => spec = spec.with(*c).changed(*c),
            _ => {}
        }
    }
    for (k, tag) in TAGS.iter().enumerate() {
        match (terms >> (4 + 2 * k)) & 3 {
            1 => spec = spec.tagged(tag),
            2 => spec = spec.not_tagged(tag),
            _ => {}
        }
    }
    if bytes.byte().is_multiple_of(4) {
        spec = spec.class(CLASSES[bytes.below(CLASSES.len())]);
        by_class = true;
    }
    (spec, by_class)
}

/// What a spec of `with`/`without`/tag terms matches, worked out instance by instance.
fn brute_force(world: &World, terms: u8, components: [ComponentId; 2]) -> Vec<InstanceId> {
    let mut out = Vec::new();
    for node in world.arena_image().nodes {
        let id = node.id;
        if !world.is_live(id) {
            continue;
        }
        let mut ok = true;
        let mut any_with = false;
        for (k, c) in components.iter().enumerate() {
            match (terms >> (2 * k)) & 3 {
                1 | 3 => {
                    any_with = true;
                    ok &= world.has(id, *c);
                }
                2 => ok &= !world.has(id, *c),
                _ => {}
            }
        }
        for (k, tag) in TAGS.iter().enumerate() {
            let has = node.tags.iter().any(|t| &**t == *tag);
            match (terms >> (4 + 2 * k)) & 3 {
                1 => {
                    any_with = true;
                    ok &= has;
                }
                2 => ok &= !has,
                _ => {}
            }
        }
        if ok && any_with {
            out.push(id);
        }
    }
    out.sort_unstable();
    out
}

/// The matches of `cached` (a query kept across changes), checked equal to a fresh query's of
/// the same spec; sorted.
fn cached_matches(
    world: &World,
    cached: &mut Query,
    spec: &QuerySpec,
    at: &str,
) -> Vec<InstanceId> {
    let mut matches = world
        .matches(cached)
        .unwrap_or_else(|e| panic!("a valid query failed: {e}"));
    matches.sort_unstable();
    let mut fresh = world
        .query(spec.clone())
        .unwrap_or_else(|e| panic!("a spec valid once is valid again: {e}"));
    let mut again = world
        .matches(&mut fresh)
        .unwrap_or_else(|e| panic!("a valid query failed: {e}"));
    again.sort_unstable();
    assert_eq!(
        matches, again,
        "{at}: the cache disagrees with a fresh query"
    );
    matches
}

/// A query from a fuzzed spec over a fuzzed world: its cached matches always equal a fresh
/// query's, before and after the world changes, and (for specs without a class filter) equal
/// what a walk over every instance finds.
pub fn query(data: &[u8]) {
    let mut bytes = Bytes::new(clip(data));
    let (mut world, components) = built_world(&mut bytes);
    let terms = bytes.byte();
    let (spec, by_class) = built_spec(terms, &mut bytes, components);
    let Ok(mut cached) = world.query(spec.clone()) else {
        return;
    };
    for round in 0..4 {
        let matches = cached_matches(&world, &mut cached, &spec, &format!("round {round}"));
        if !by_class {
            assert_eq!(
                matches,
                brute_force(&world, terms, components),
                "round {round}: the query disagrees with a walk over every instance"
            );
        }
        // Change the world between rounds.
        mutate(&mut world, &mut bytes, components);
    }
}

/// The live instances below the workspace, in id order.
fn live(world: &World) -> Vec<InstanceId> {
    let mut ids: Vec<InstanceId> = world
        .arena_image()
        .nodes
        .iter()
        .map(|n| n.id)
        .filter(|id| *id != world.game() && *id != world.workspace())
        .collect();
    ids.sort_unstable();
    ids
}

/// One structural or value change chosen by the input; refusals are fine.
fn mutate(world: &mut World, bytes: &mut Bytes<'_>, components: [ComponentId; 2]) {
    let ids = live(world);
    let pick = |bytes: &mut Bytes<'_>| (!ids.is_empty()).then(|| ids[bytes.below(ids.len())]);
    let workspace = world.workspace();
    let v = FieldId::from_index(0);
    match bytes.below(11) {
        0 => {
            let parent = pick(bytes).unwrap_or(workspace);
            let _ = world.create(CLASSES[bytes.below(CLASSES.len())], Some(parent));
        }
        1 => {
            if let Some(id) = pick(bytes) {
                let _ = world.destroy(id);
            }
        }
        2 => {
            if let (Some(child), parent) = (pick(bytes), pick(bytes)) {
                let _ = world.set_parent(child, Some(parent.unwrap_or(workspace)));
            }
        }
        3 => {
            if let Some(id) = pick(bytes) {
                let _ = world.add(id, components[bytes.below(2)], []);
            }
        }
        4 => {
            if let Some(id) = pick(bytes) {
                let _ = world.remove(id, components[bytes.below(2)]);
            }
        }
        5 => {
            if let Some(id) = pick(bytes) {
                let value = bytes.small();
                let _ = world.write(id, components[bytes.below(2)], v, value);
            }
        }
        6 => {
            if let Some(id) = pick(bytes) {
                let parent = world.arena().get(id).and_then(|n| n.parent());
                let _ = world.clone_subtree(id, parent);
            }
        }
        7 => {
            if let Some(id) = pick(bytes) {
                let _ = world.tag(id, TAGS[bytes.below(TAGS.len())]);
            }
        }
        8 => {
            // A graft of a subtree from a copy of the world taken now.
            if let (Some(root), parent) = (pick(bytes), pick(bytes)) {
                let arena = world.arena().clone();
                let store = world.store().snapshot();
                let policy = if bytes.below(2) == 0 {
                    ExternalRefs::Clear
                } else {
                    ExternalRefs::ResolveByPersistentId
                };
                let _ = world.graft(
                    &arena,
                    &store,
                    root,
                    Some(parent.unwrap_or(workspace)),
                    policy,
                );
            }
        }
        9 => staged(world, bytes, &ids, components),
        _ => {
            world
                .step(1.0 / 60.0)
                .unwrap_or_else(|e| panic!("a frame failed as a whole: {e}"));
        }
    }
}

/// A stage of up to four fuzzed bulk operations (spawn, set, remove, despawn over picked
/// members), committed. A commit refused before applying anything must change nothing.
fn staged(
    world: &mut World,
    bytes: &mut Bytes<'_>,
    ids: &[InstanceId],
    components: [ComponentId; 2],
) {
    fn members(world: &World, bytes: &mut Bytes<'_>, ids: &[InstanceId]) -> Vec<InstanceRef> {
        let n = if ids.is_empty() { 0 } else { bytes.below(6) };
        (0..n)
            .filter_map(|_| InstanceRef::of(world.arena(), ids[bytes.below(ids.len())]).ok())
            .collect()
    }
    let mut stage = world.stage();
    let v = FieldId::from_index(0);
    for _ in 0..=bytes.below(4) {
        let component = components[bytes.below(2)];
        match bytes.below(4) {
            0 => {
                let parent = (!ids.is_empty()).then(|| ids[bytes.below(ids.len())]);
                let count = 1 + bytes.below(8);
                let class = CLASSES[bytes.below(CLASSES.len())];
                let value = bytes.small();
                let workspace = world.workspace();
                let _ = world.stage_spawn(
                    &mut stage,
                    count,
                    class,
                    parent.or(Some(workspace)),
                    &[component],
                    move |rows| {
                        for k in 0..rows.len() {
                            rows.set_value(component, k, v, Value::Number(value))?;
                        }
                        Ok(())
                    },
                );
            }
            1 => {
                let value = bytes.small();
                let picked = members(world, bytes, ids);
                stage.set(&picked, component, vec![(v, Value::Number(value))]);
            }
            2 => {
                let picked = members(world, bytes, ids);
                stage.remove(&picked, component);
            }
            _ => {
                let picked = members(world, bytes, ids);
                stage.despawn(&picked);
            }
        }
    }
    let before = world.state_hash();
    if let Err(error) = world.commit(&mut stage) {
        assert!(
            !error.kept || world.state_hash() == before,
            "a commit refused before applying anything changed the world: {error:?}"
        );
    }
}

/// A fuzzed sequence of world operations (create, destroy, reparent, add, remove, write, clone,
/// graft, tag, staged bulk operations, step, save and load, snapshot and restore), with the invariants checked as it goes: a
/// cached query agrees with a fresh one after every step, a save loads back to the same bytes,
/// and a restore gives back exactly what its snapshot saw.
pub fn world_ops(data: &[u8]) {
    let mut bytes = Bytes::new(clip(data));
    let (mut world, components) = built_world(&mut bytes);
    let spec = QuerySpec::new().with(components[0]);
    let Ok(mut cached) = world.query(spec.clone()) else {
        panic!("a one-component query is valid");
    };
    let mut saved: Vec<(WorldSnapshot, Vec<u8>)> = Vec::new();
    let mut steps = 0;
    while bytes.more() && steps < 256 {
        steps += 1;
        match bytes.below(12) {
            0 => check_round_trip(&world),
            1 => {
                if let Ok(snapshot) = world.snapshot() {
                    saved.push((snapshot, save(&world)));
                    if saved.len() > 3 {
                        saved.remove(0);
                    }
                }
            }
            2 if !saved.is_empty() => {
                let (snapshot, file) = &saved[bytes.below(saved.len())];
                world
                    .restore(snapshot)
                    .unwrap_or_else(|e| panic!("a snapshot of this world was refused: {e}"));
                // A save holds the id counter, which a restore keeps: compare the rest.
                let now = save(&world);
                let restored = World::load(now.as_slice()).unwrap_or_else(|e| panic!("{e}"));
                let then = World::load(file.as_slice()).unwrap_or_else(|e| panic!("{e}"));
                assert!(
                    format!("{:?}", restored.arena_image().nodes)
                        == format!("{:?}", then.arena_image().nodes),
                    "a restore did not give back the hierarchy"
                );
            }
            _ => mutate(&mut world, &mut bytes, components),
        }
        cached_matches(&world, &mut cached, &spec, &format!("step {steps}"));
    }
    check_round_trip(&world);
}
