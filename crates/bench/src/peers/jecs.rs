//! jecs (a pure-Luau ECS, `@rbxts/jecs` on the npm registry, MIT) doing the Luau workloads,
//! loaded into a game VM made exactly as Strata's (`strata_script::Scripts::new` with the standard
//! budget: sandboxed, memory-limited, the budget interrupt installed, native code generation
//! as Strata's VM has it). The game VM has no `newproxy`; jecs's one use of it (a sentinel) is
//! given a frozen empty table instead.
//!
//! `cargo xtask bench --peers` fetches the package with `npm pack @rbxts/jecs` into
//! `target/jecs/` and points `STRATA_JECS` at `src/jecs.luau`; without it the jecs workloads
//! are listed as unsupported.

use mlua::{Function, Lua, Table};

use super::luau::{
    CHANGED_SIZE, CHANGED_STRIDE, DT, FRAME_MEMORY, FRAME_SIZE, ITER_SIZE, SPAWN_SIZE, position,
    velocity,
};
use crate::harness::Workload;

/// The library name in reports.
pub const LIBRARY: &str = "jecs";

/// Where the jecs source is, when it was fetched.
pub fn source_path() -> Option<std::path::PathBuf> {
    let path = std::path::PathBuf::from(std::env::var_os("STRATA_JECS")?);
    path.is_file().then_some(path)
}

/// A Strata game VM with jecs loaded as the global `jecs`.
pub fn vm() -> Lua {
    vm_with(strata_script::ScriptBudget::STANDARD)
}

/// [`vm`] with `budget`.
fn vm_with(budget: strata_script::ScriptBudget) -> Lua {
    let Some(path) = source_path() else {
        panic!("benchmark fixture: STRATA_JECS does not name jecs.luau");
    };
    let source =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let scripts =
        strata_script::Scripts::new(budget).unwrap_or_else(|e| panic!("benchmark fixture: {e}"));
    let lua = scripts.vm().clone();
    // jecs makes its one sentinel with `newproxy`, which the game VM removes; a frozen empty
    // table is as unique a sentinel.
    let sentinel: Function = lua
        .load("return function() return table.freeze({}) end")
        .eval()
        .unwrap_or_else(|e| panic!("benchmark fixture: {e}"));
    lua.globals()
        .set("newproxy", sentinel)
        .unwrap_or_else(|e| panic!("benchmark fixture: {e}"));
    let jecs: Table = lua
        .load(&source)
        .set_name("=jecs")
        .eval()
        .unwrap_or_else(|e| panic!("benchmark fixture: jecs: {e}"));
    lua.globals()
        .set("jecs", jecs)
        .unwrap_or_else(|e| panic!("benchmark fixture: {e}"));
    // The VM stays alive with `lua` (the Scripts handle only shares it).
    drop(scripts);
    lua
}

/// The positions and velocities of the shared data, as Luau tables of `{x, y, z}`.
fn data(lua: &Lua, n: u64) -> (Table, Table) {
    let make = |f: fn(u64) -> [f64; 3]| {
        let list = lua
            .create_table_with_capacity(n as usize, 0)
            .unwrap_or_else(|e| panic!("{e}"));
        for i in 0..n {
            let [x, y, z] = f(i);
            let t = lua.create_table().unwrap_or_else(|e| panic!("{e}"));
            t.raw_set("x", x).unwrap_or_else(|e| panic!("{e}"));
            t.raw_set("y", y).unwrap_or_else(|e| panic!("{e}"));
            t.raw_set("z", z).unwrap_or_else(|e| panic!("{e}"));
            list.raw_set(i + 1, t).unwrap_or_else(|e| panic!("{e}"));
        }
        list
    };
    (make(position), make(velocity))
}

/// A world of `n` movers and a function stepping `Position += Velocity * dt` once.
const ITER: &str = r#"
local positions, velocities = ...
local world = jecs.world()
local Position = world:component()
local Velocity = world:component()
local entities = {}
for i, p in positions do
    local e = world:entity()
    world:set(e, Position, p)
    world:set(e, Velocity, velocities[i])
    entities[i] = e
end
local function step(dt)
    for _, p, v in world:query(Position, Velocity) do
        p.x += v.x * dt
        p.y += v.y * dt
        p.z += v.z * dt
    end
end
local function read(i)
    return world:get(entities[i], Position).x
end
return step, read
"#;

/// The iteration world; returns its step and a reader of the `i`-th entity's `x`.
pub fn iter_world(n: u64) -> (Lua, Function, Function) {
    iter_world_in(vm(), n)
}

/// [`iter_world`] in `lua`.
fn iter_world_in(lua: Lua, n: u64) -> (Lua, Function, Function) {
    let (positions, velocities) = data(&lua, n);
    let (step, read): (Function, Function) = lua
        .load(ITER)
        .set_name("=iter")
        .call((positions, velocities))
        .unwrap_or_else(|e| panic!("benchmark fixture: {e}"));
    (lua, step, read)
}

fn iter2(name: &str) -> Workload {
    Workload::new(
        name,
        ITER_SIZE,
        "jecs world:query(Position, Velocity) iterated in Luau, each component a table {x, y, z} updated in place (jecs's own archetype columns), in a VM made as Strata's game VM (sandbox, memory limit, budget interrupt, native code generation)",
        move |b| {
            let (_lua, step, _) = iter_world(ITER_SIZE);
            b.iter(|| {
                step.call::<()>(DT)
                    .unwrap_or_else(|e| panic!("benchmark: {e}"))
            });
        },
    )
}

/// `luau_frame_1m`: the `luau_iter2` step over [`FRAME_SIZE`] entities, in a VM that may hold
/// [`FRAME_MEMORY`] (as Strata's game VM may there).
fn frame_1m() -> Workload {
    frame_1m_named("luau_frame_1m")
}

/// `luau_frame_1m_groups`: jecs has no parallel iteration, so its side is `luau_frame_1m`'s
/// step, the same work on one thread.
fn frame_1m_groups() -> Workload {
    frame_1m_named("luau_frame_1m_groups")
}

fn frame_1m_named(name: &'static str) -> Workload {
    Workload::new(
        name,
        FRAME_SIZE,
        "jecs world:query(Position, Velocity) over 1M entities iterated in Luau, each component a table {x, y, z} updated in place, on the VM's one thread (jecs has no parallel iteration), in a VM made as Strata's game VM with a 4 GiB memory limit",
        move |b| {
            let budget = strata_script::ScriptBudget {
                memory: FRAME_MEMORY,
                ..strata_script::ScriptBudget::STANDARD
            };
            let (_lua, step, _) = iter_world_in(vm_with(budget), FRAME_SIZE);
            b.iter(|| {
                step.call::<()>(DT)
                    .unwrap_or_else(|e| panic!("benchmark: {e}"))
            });
        },
    )
}

/// A fresh jecs world with its two components: `(world, Position, Velocity)`.
const SPAWN_WORLD: &str = r#"
local world = jecs.world()
return world, world:component(), world:component()
"#;

/// The spawning script, given a world and its components: [`SPAWN_SIZE`] entities with the
/// values of Strata's `luau_spawn`. Compiled inside the timed region, as Strata's script is.
const SPAWN: &str = r#"
local world, Position, Velocity = ...
for i = 0, 9999 do
    local e = world:entity()
    world:set(e, Position, { x = i, y = i * 0.5, z = -i })
    world:set(e, Velocity, { x = 1, y = 0.25, z = i % 7 })
end
return world
"#;

/// A fresh world and its components, made after a full collection so no earlier sample's
/// garbage is collected during the next.
fn spawn_world(lua: &Lua) -> (Table, mlua::Value, mlua::Value) {
    lua.gc_collect()
        .unwrap_or_else(|e| panic!("benchmark fixture: {e}"));
    lua.load(SPAWN_WORLD)
        .set_name("=world")
        .call(())
        .unwrap_or_else(|e| panic!("benchmark fixture: {e}"))
}

/// Compiles and runs the spawning script in `world`: the world, spawned.
fn spawn_in(lua: &Lua, world: &(Table, mlua::Value, mlua::Value)) -> Table {
    lua.load(SPAWN)
        .set_name("=spawn")
        .call(world.clone())
        .unwrap_or_else(|e| panic!("benchmark: {e}"))
}

/// `luau_spawn`, and `luau_spawn_bulk` (jecs has no bulk spawn, so the same work one entity
/// at a time is what it offers for it).
fn spawn(name: &'static str) -> Workload {
    Workload::new(
        name,
        SPAWN_SIZE,
        "the spawning script compiled and run: jecs world:entity() then world:set twice with a table {x, y, z} each, 10k times (jecs has no bulk spawn), in a fresh jecs world made in setup after a full collection",
        move |b| {
            let lua = vm();
            b.iter_with_setup(|| spawn_world(&lua), |world| spawn_in(&lua, world));
        },
    )
}

/// A world of [`CHANGED_SIZE`] entities and two functions: one writing 1% of the positions
/// the way a jecs game marks them (the write and a `Changed` tag), one visiting the marked
/// rows (reading x) and clearing their tags.
const CHANGED: &str = r#"
local positions = ...
local world = jecs.world()
local Position = world:component()
local Changed = world:component()
local entities = {}
for i, p in positions do
    local e = world:entity()
    world:set(e, Position, p)
    entities[i] = e
end
local function write(stride, value)
    for i = 1, #entities, stride do
        local e = entities[i]
        local p = world:get(e, Position)
        p.x = value
        world:add(e, Changed)
    end
end
local function visit()
    local n, sum = 0, 0
    local seen = {}
    for e, p in world:query(Position, Changed) do
        n += 1
        sum += p.x
        seen[n] = e
    end
    for i = 1, n do
        world:remove(seen[i], Changed)
    end
    return n
end
return write, visit
"#;

/// The changed world's writer and visitor.
pub fn changed_world(lua: &Lua, n: u64) -> (Function, Function) {
    let (positions, _) = data(lua, n);
    lua.load(CHANGED)
        .set_name("=changed")
        .call(positions)
        .unwrap_or_else(|e| panic!("benchmark fixture: {e}"))
}

fn changed() -> Workload {
    Workload::new(
        "luau_changed",
        CHANGED_SIZE,
        "jecs has no change detection: the writes (untimed) also add a Changed tag, and the visit iterates world:query(Position, Changed) reading x, then removes the tags (archetype moves) so the next visit sees only new writes",
        move |b| {
            let lua = vm();
            let (write, visit) = changed_world(&lua, CHANGED_SIZE);
            b.iter_frames(
                1,
                (write, visit),
                |(write, _), frame| {
                    write
                        .call::<()>((CHANGED_STRIDE, frame as f64 + 0.5))
                        .unwrap_or_else(|e| panic!("benchmark: {e}"));
                },
                |(_, visit)| {
                    visit
                        .call::<u64>(())
                        .unwrap_or_else(|e| panic!("benchmark: {e}"))
                },
            );
        },
    )
    .items(CHANGED_SIZE / CHANGED_STRIDE)
}

/// jecs's workloads, when the jecs source was fetched.
pub fn workloads() -> Vec<Workload> {
    if source_path().is_none() {
        return Vec::new();
    }
    let workloads = vec![
        iter2("luau_iter2"),
        iter2("luau_iter2_handles"),
        frame_1m(),
        frame_1m_groups(),
        spawn("luau_spawn"),
        spawn("luau_spawn_bulk"),
        changed(),
    ];
    workloads.into_iter().map(|w| w.library(LIBRARY)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// These run only where jecs was fetched (`STRATA_JECS`).
    #[test]
    fn jecs_does_the_same_work() {
        if source_path().is_none() {
            return;
        }
        let (_lua, step, read) = iter_world(100);
        step.call::<()>(DT).unwrap();
        let x: f64 = read.call(8).unwrap();
        assert_eq!(x, position(7)[0] + velocity(7)[0] * DT);
        let lua = vm();
        let (write, visit) = changed_world(&lua, 1000);
        write.call::<()>((10, 2.5)).unwrap();
        assert_eq!(visit.call::<u64>(()).unwrap(), 100);
        assert_eq!(visit.call::<u64>(()).unwrap(), 0);
        // The spawn makes SPAWN_SIZE entities holding Strata's values.
        let world = spawn_world(&lua);
        let (position, velocity) = (world.1.clone(), world.2.clone());
        let world = spawn_in(&lua, &world);
        let check: Function = lua
            .load(
                "local world, P, V = ...
                local n, last = 0, nil
                for e, p, v in world:query(P, V) do
                    n += 1
                    if p.x == 9999 then last = { p.x, p.y, p.z, v.x, v.y, v.z } end
                end
                return n, last",
            )
            .into_function()
            .unwrap();
        let (n, last): (u64, Vec<f64>) = check.call((world, position, velocity)).unwrap();
        assert_eq!(n, SPAWN_SIZE);
        assert_eq!(last, [9_999.0, 4_999.5, -9_999.0, 1.0, 0.25, 3.0]);
    }
}
