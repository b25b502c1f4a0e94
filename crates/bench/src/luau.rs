//! Strata's side of the Luau workloads, through the game environment: `luau_iter2` (the column
//! path) and `luau_iter2_handles` (the mirror of wrappers and handles), `luau_spawn` and
//! `luau_changed`. The same work in jecs, a pure-Luau ECS, is `peers::jecs`.

use strata::prelude::*;
use strata_script::prelude::*;

use crate::data::luau::{
    CHANGED_SIZE, CHANGED_STRIDE, DT, FRAME_MEMORY, FRAME_SIZE, FRAME_THREADS, ITER_SIZE,
    SPAWN_SIZE, position, velocity,
};
use crate::harness::Workload;

/// Strata's Luau workloads.
pub fn workloads() -> Vec<Workload> {
    vec![
        iter2_columns(),
        iter2_handles(),
        frame_1m(),
        frame_1m_groups(),
        spawn(),
        spawn_bulk(),
        changed(),
    ]
}

/// The components, in Luau, with three number fields each.
const POSITION: &str =
    "return component { fields = { x = number(0), y = number(0), z = number(0) } }";
const VELOCITY: &str =
    "return component { fields = { x = number(0), y = number(0), z = number(0) } }";

/// A world on one thread with `Position` and `Velocity` installed.
pub fn empty_world() -> World {
    empty_world_on(1)
}

/// A world on `threads` threads with `Position` and `Velocity` installed.
fn empty_world_on(threads: usize) -> World {
    let mut world =
        World::with_seed(threads, 5).unwrap_or_else(|e| panic!("benchmark fixture: {e}"));
    let fixture =
        |r: Result<InstanceId, WorldError>| r.unwrap_or_else(|e| panic!("benchmark fixture: {e}"));
    fixture(world.define_luau("Position", POSITION, None));
    fixture(world.define_luau("Velocity", VELOCITY, None));
    world.sync_definitions();
    world
}

/// [`empty_world`] with its game VM made, so a timed script pays for compiling and running
/// itself and not for the VM (jecs's VM is made outside its timed region too).
pub fn scripted_world() -> World {
    let mut world = empty_world();
    world
        .run_script("start.luau", "")
        .unwrap_or_else(|e| panic!("benchmark fixture: {e}"));
    world
}

/// `n` entities with the values of [`position`] and [`velocity`], made from Rust.
pub fn movers(n: u64) -> (World, Vec<InstanceId>) {
    movers_on(1, n)
}

/// [`movers`] in a world on `threads` threads.
fn movers_on(threads: usize, n: u64) -> (World, Vec<InstanceId>) {
    let (world, ids, _) = movers_in(threads, n, 0);
    (world, ids)
}

/// [`movers`] in a world on `threads` threads, split in `folders` equal blocks under as many
/// folders in the workspace (returned) when `folders` is not 0.
fn movers_in(threads: usize, n: u64, folders: u64) -> (World, Vec<InstanceId>, Vec<InstanceId>) {
    let mut world = empty_world_on(threads);
    let workspace = world.workspace();
    let roots: Vec<InstanceId> = (0..folders)
        .map(|_| {
            world
                .create(ClassId::FOLDER, Some(workspace))
                .unwrap_or_else(|e| panic!("{e}"))
        })
        .collect();
    let (p, px) = world
        .field_named("Position", "x")
        .unwrap_or_else(|e| panic!("{e}"));
    let (v, vx) = world
        .field_named("Velocity", "x")
        .unwrap_or_else(|e| panic!("{e}"));
    let (py, pz) = (
        FieldId::from_index(px.index() as u16 + 1),
        FieldId::from_index(px.index() as u16 + 2),
    );
    let (vy, vz) = (
        FieldId::from_index(vx.index() as u16 + 1),
        FieldId::from_index(vx.index() as u16 + 2),
    );
    let mut ids = Vec::with_capacity(n as usize);
    for i in 0..n {
        let parent = (folders > 0).then(|| roots[(i * folders / n) as usize]);
        let id = world
            .create(ClassId::ENTITY, parent)
            .unwrap_or_else(|e| panic!("{e}"));
        let [x, y, z] = position(i);
        world
            .add(
                id,
                p,
                [
                    (px, Value::Number(x)),
                    (py, Value::Number(y)),
                    (pz, Value::Number(z)),
                ],
            )
            .unwrap_or_else(|e| panic!("{e}"));
        let [x, y, z] = velocity(i);
        world
            .add(
                id,
                v,
                [
                    (vx, Value::Number(x)),
                    (vy, Value::Number(y)),
                    (vz, Value::Number(z)),
                ],
            )
            .unwrap_or_else(|e| panic!("{e}"));
        ids.push(id);
    }
    (world, ids, roots)
}

/// The run function of `luau_iter2`'s and `luau_frame_1m`'s systems: `Position += Velocity *
/// dt` over every mover on the column path.
macro_rules! move_run {
    () => {
        r#"
    run = function(world, dt)
        for chunk in world:query({ with = { Position, Velocity } }):chunks() do
            local p, v = chunk:write(Position), chunk:read(Velocity)
            local px, py, pz = p.x, p.y, p.z
            local vx, vy, vz = v.x, v.y, v.z
            for row = chunk.first, chunk.last do
                px[row] += vx[row] * dt
                py[row] += vy[row] * dt
                pz[row] += vz[row] * dt
            end
        end
    end,
"#
    };
}

/// The column-path system of `luau_iter2`.
pub const ITER_COLUMNS: &str = concat!("return system {", move_run!(), "}\n");

/// The handle-path system of `luau_iter2_handles`.
pub const ITER_HANDLES: &str = r#"
return system {
    run = function(world, dt)
        for _, p, v in world:query({ with = { Position, Velocity } }) do
            p.x += v.x * dt
            p.y += v.y * dt
            p.z += v.z * dt
        end
    end,
}
"#;

/// The move system of `luau_frame_1m`: [`ITER_COLUMNS`]'s loop as a parallel system (the
/// stress place runs the same loop in execution groups).
pub const MOVE: &str = concat!(
    "return system {\n    phase = \"Update\",\n    parallel = true,\n    writes = { Position = { \"x\", \"y\", \"z\" } },",
    move_run!(),
    "}\n"
);

/// The game VM's budget in `luau_frame_1m`: the standard one with jecs's memory limit there.
const FRAME_BUDGET: ScriptBudget = ScriptBudget {
    memory: FRAME_MEMORY,
    ..ScriptBudget::STANDARD
};

/// The move group script of `luau_frame_1m_groups`: the stress place's `groups/move.luau`,
/// `Position += Velocity * dt` over the group's own subtree on the column path.
pub const GROUP_MOVE: &str = include_str!("../../../examples/places/stress/groups/move.luau");

/// The groups `luau_frame_1m_groups` splits its movers into: one per thread of the pool.
pub const FRAME_GROUPS: u64 = FRAME_THREADS as u64;

/// A world of `size` movers in [`FRAME_GROUPS`] folders, each an execution group running
/// [`GROUP_MOVE`], on [`FRAME_THREADS`] threads, stepped once (as [`iter_world`]).
pub fn frame_groups_world(size: u64) -> (World, Vec<InstanceId>) {
    let (mut world, ids, roots) = movers_in(FRAME_THREADS, size, FRAME_GROUPS);
    world.set_script_budget(FRAME_BUDGET);
    world
        .add_group_script("move", "groups/move.luau", GROUP_MOVE)
        .unwrap_or_else(|e| panic!("benchmark fixture: {e}"));
    for root in roots {
        world
            .set_execution_group(root, Some("move"))
            .unwrap_or_else(|e| panic!("benchmark fixture: {e}"));
    }
    frame(&mut world);
    (world, ids)
}

/// A world of `size` movers on [`FRAME_THREADS`] threads with the parallel system [`MOVE`],
/// stepped once (as [`iter_world`]).
pub fn frame_world(size: u64) -> (World, Vec<InstanceId>) {
    let (mut world, ids) = movers_on(FRAME_THREADS, size);
    world.set_script_budget(FRAME_BUDGET);
    world
        .add_script_system("move", "move.luau", MOVE)
        .unwrap_or_else(|e| panic!("benchmark fixture: {e}"));
    frame(&mut world);
    (world, ids)
}

/// A world of [`ITER_SIZE`] movers and the system `source`, stepped once so the query's mirror
/// and columns exist before the samples (as in a running game).
pub fn iter_world(size: u64, source: &str) -> World {
    let (mut world, _) = movers(size);
    world
        .add_script_system("iter", "iter.luau", source)
        .unwrap_or_else(|e| panic!("benchmark fixture: {e}"));
    frame(&mut world);
    world
}

/// One frame; panics on a system error (a benchmark that fails measures nothing).
pub fn frame(world: &mut World) {
    match world.step(DT) {
        Ok(events) => assert!(events.errors.is_empty(), "{:?}", events.errors),
        Err(error) => panic!("benchmark frame: {error}"),
    }
}

fn iter2_columns() -> Workload {
    Workload::new(
        "luau_iter2",
        ITER_SIZE,
        "a Luau system on the column path: q:chunks(), chunk:write(Position) and chunk:read(Velocity) as number tables refreshed where the store changed, a numeric loop over the rows, then the changed rows written back as checked column writes (ticks, dirty bits); World::step with the game VM's interrupt budget on",
        move |b| {
            let mut world = iter_world(ITER_SIZE, ITER_COLUMNS);
            b.iter(|| frame(&mut world));
        },
    )
}

fn iter2_handles() -> Workload {
    Workload::new(
        "luau_iter2_handles",
        ITER_SIZE,
        "a Luau system on the mirror: for inst, p, v in world:query{...}, the query's wrappers and handles kept in VM tables; each field read and write is a handle access resolved against the store (a checked write, with change ticks); World::step with the game VM's interrupt budget on",
        move |b| {
            let mut world = iter_world(ITER_SIZE, ITER_HANDLES);
            b.iter(|| frame(&mut world));
        },
    )
}

fn frame_1m() -> Workload {
    Workload::new(
        "luau_frame_1m",
        FRAME_SIZE,
        "one frame of a move system (luau::MOVE: parallel = true, q:chunks(), chunk:write(Position) and chunk:read(Velocity), a numeric loop, the changed rows recorded through the system's overlay and committed after the wave) over 1M movers; World::step on a 2-thread pool with the game VM's interrupt budget on",
        move |b| {
            let (mut world, _) = frame_world(FRAME_SIZE);
            b.iter(|| frame(&mut world));
        },
    )
}

fn frame_1m_groups() -> Workload {
    Workload::new(
        "luau_frame_1m_groups",
        FRAME_SIZE,
        "one frame of the stress place's move group script (examples/places/stress/groups/move.luau: world:query{ with = {Position, Velocity}, within = root }:chunks(), chunk:write(Position) and chunk:read(Velocity), a numeric loop) over 1M movers split in two folders of 500k, each an execution group with a Luau VM of its own; the groups run side by side on a 2-thread pool, each recording its changed rows into its overlay on its lane, and the overlays commit after the wave; World::step with the game VM's interrupt budget on",
        move |b| {
            let (mut world, _) = frame_groups_world(FRAME_SIZE);
            b.iter(|| frame(&mut world));
        },
    )
}

/// The spawning script of `luau_spawn`.
pub const SPAWN: &str = r#"
for i = 0, 9999 do
    local e = Instance.new("Entity")
    e:AddComponent(Position, { x = i, y = i * 0.5, z = -i })
    e:AddComponent(Velocity, { x = 1, y = 0.25, z = i % 7 })
end
"#;

fn spawn() -> Workload {
    Workload::new(
        "luau_spawn",
        SPAWN_SIZE,
        "a Luau script compiled and run: 10k entities, Instance.new(\"Entity\") then AddComponent twice with a table of three values each (each a checked store insert), in a fresh world (components installed and the game VM made, in setup)",
        move |b| {
            b.iter_with_setup(scripted_world, |world| {
                world
                    .run_script("spawn.luau", SPAWN)
                    .unwrap_or_else(|e| panic!("benchmark: {e}"));
            });
        },
    )
}

/// The spawning script of `luau_spawn_bulk`: the same entities and values as [`SPAWN`], the
/// values gathered into number columns (Luau buffers of `f64`s) and spawned in one
/// `world:spawn`.
pub const SPAWN_BULK: &str = r#"
local n = 10000
local px, py, pz, vz = buffer.create(n * 8), buffer.create(n * 8), buffer.create(n * 8), buffer.create(n * 8)
for i = 0, n - 1 do
    local at = i * 8
    buffer.writef64(px, at, i)
    buffer.writef64(py, at, i * 0.5)
    buffer.writef64(pz, at, -i)
    buffer.writef64(vz, at, i % 7)
end
world:spawn(n, {
    Position = { x = px, y = py, z = pz },
    Velocity = { x = 1, y = 0.25, z = vz },
})
"#;

fn spawn_bulk() -> Workload {
    Workload::new(
        "luau_spawn_bulk",
        SPAWN_SIZE,
        "the entities and values of luau_spawn from one Luau script, compiled and run: the values written into f64 buffers (buffer.writef64) in a Luau loop, then one world:spawn (a staged bulk spawn: the buffers read as number columns, the values checked, the ids reserved, the rows filled by column and published at one commit; the 10k new instances returned), in a fresh world (components installed and the game VM made, in setup)",
        move |b| {
            b.iter_with_setup(scripted_world, |world| {
                world
                    .run_script("spawn.luau", SPAWN_BULK)
                    .unwrap_or_else(|e| panic!("benchmark: {e}"));
            });
        },
    )
}

/// The visiting system of `luau_changed`: counts and reads the rows changed since its last
/// pass.
pub const CHANGED: &str = r#"
seen = 0
return system {
    run = function(world, dt)
        local n, sum = 0, 0
        for _, p in world:query({ with = { Position }, changed = { Position } }) do
            n += 1
            sum += p.x
        end
        seen = n
    end,
}
"#;

/// A world of [`CHANGED_SIZE`] movers with the visiting system, stepped once (its first pass
/// sees every row).
pub fn changed_world() -> (World, Vec<InstanceId>) {
    changed_world_under(ScriptBudget::STANDARD)
}

/// [`changed_world`] with the game VM's budget `budget` (a profiler that slows the first
/// frame's visit of every row past the standard time budget needs a longer one).
pub fn changed_world_under(budget: ScriptBudget) -> (World, Vec<InstanceId>) {
    let (mut world, ids) = movers(CHANGED_SIZE);
    world.set_script_budget(budget);
    world
        .add_script_system("changed", "changed.luau", CHANGED)
        .unwrap_or_else(|e| panic!("benchmark fixture: {e}"));
    frame(&mut world);
    (world, ids)
}

/// Writes `Position.x` of every [`CHANGED_STRIDE`]-th entity (1%), a new value each frame.
pub fn write_one_percent(world: &mut World, ids: &[InstanceId], frame: u64) {
    let (p, px) = world
        .field_named("Position", "x")
        .unwrap_or_else(|e| panic!("{e}"));
    for id in ids.iter().step_by(CHANGED_STRIDE as usize) {
        world
            .write::<f64>(*id, p, px, frame as f64 + 0.5)
            .unwrap_or_else(|e| panic!("{e}"));
    }
}

fn changed() -> Workload {
    Workload::new(
        "luau_changed",
        CHANGED_SIZE,
        "a Luau system iterating world:query{ with = {Position}, changed = {Position} }: the query's change window selects the 1% of rows written since its last pass (from its change log), the mirror hands each one's handle, and the loop reads x; the writes happen in Rust between frames, untimed",
        move |b| {
            let (world, ids) = changed_world();
            b.iter_frames(
                1,
                (world, ids),
                |(world, ids), frame| write_one_percent(world, ids, frame),
                |(world, _)| frame(world),
            );
        },
    )
    .items(CHANGED_SIZE / CHANGED_STRIDE)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn positions(world: &World, ids: &[InstanceId]) -> Vec<f64> {
        let (p, px) = world.field_named("Position", "x").unwrap();
        ids.iter()
            .map(|id| world.get::<f64>(*id, p, px).unwrap())
            .collect()
    }

    #[test]
    fn both_iter2_paths_move_every_entity_by_its_velocity() {
        for source in [ITER_COLUMNS, ITER_HANDLES] {
            let (mut world, ids) = movers(1000);
            world
                .add_script_system("iter", "iter.luau", source)
                .unwrap();
            frame(&mut world);
            frame(&mut world);
            let xs = positions(&world, &ids);
            for (i, x) in xs.iter().enumerate() {
                let expected = position(i as u64)[0] + 2.0 * velocity(i as u64)[0] * DT;
                assert!((x - expected).abs() < 1e-9, "{i}: {x} vs {expected}");
            }
            let stats = world.stats();
            assert!(stats[0].2.field_writes > 0);
        }
    }

    /// `luau_frame_1m`'s world (a parallel system) and `luau_frame_1m_groups`'s (two groups).
    #[test]
    fn both_frames_move_every_entity_by_its_velocity_on_two_threads() {
        for (mut world, ids) in [frame_world(2_000), frame_groups_world(2_000)] {
            frame(&mut world);
            let xs = positions(&world, &ids);
            for (i, x) in xs.iter().enumerate() {
                let expected = position(i as u64)[0] + 2.0 * velocity(i as u64)[0] * DT;
                assert!((x - expected).abs() < 1e-9, "{i}: {x} vs {expected}");
            }
            assert_eq!(world.threads(), FRAME_THREADS);
        }
    }

    #[test]
    fn spawn_makes_every_entity_with_both_components() {
        let mut world = empty_world();
        world.run_script("spawn.luau", SPAWN).unwrap();
        let p = world.component("Position").unwrap();
        let v = world.component("Velocity").unwrap();
        assert_eq!(world.store().set(p).unwrap().len() as u64, SPAWN_SIZE);
        assert_eq!(world.store().set(v).unwrap().len() as u64, SPAWN_SIZE);
    }

    #[test]
    fn a_bulk_spawn_makes_the_same_entities_as_one_at_a_time() {
        let mut single = empty_world();
        single.run_script("spawn.luau", SPAWN).unwrap();
        let mut bulk = empty_world();
        bulk.run_script("spawn.luau", SPAWN_BULK).unwrap();
        for world in [&single, &bulk] {
            let p = world.component("Position").unwrap();
            assert_eq!(world.store().set(p).unwrap().len() as u64, SPAWN_SIZE);
        }
        // Every entity holds the same values, entity by entity in creation order.
        let values = |world: &World| -> Vec<[f64; 6]> {
            let (p, v) = (
                world.component("Position").unwrap(),
                world.component("Velocity").unwrap(),
            );
            let ids = world.store().set(p).unwrap().ids().to_vec();
            ids.iter()
                .map(|id| {
                    let f = |c: ComponentId, k: u16| {
                        world.get::<f64>(*id, c, FieldId::from_index(k)).unwrap()
                    };
                    [f(p, 0), f(p, 1), f(p, 2), f(v, 0), f(v, 1), f(v, 2)]
                })
                .collect()
        };
        assert_eq!(values(&single), values(&bulk));
        assert_eq!(
            values(&bulk)[9_999],
            [9_999.0, 4_999.5, -9_999.0, 1.0, 0.25, 3.0]
        );
    }

    #[test]
    fn the_changed_pass_sees_exactly_the_written_rows() {
        let (mut world, ids) = movers(10_000);
        world
            .add_script_system("changed", "changed.luau", CHANGED)
            .unwrap();
        frame(&mut world);
        write_one_percent(&mut world, &ids, 1);
        frame(&mut world);
        let stats = world.stats();
        assert_eq!(stats[0].2.visited_rows, 10_000 + 100);
    }
}
