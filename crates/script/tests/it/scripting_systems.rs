//! Luau systems and execution groups: the `system{}` table and its placement (phases, the
//! fixed step, sets, order, intervals), what parallel Luau may not do, and groups running in
//! VMs of their own with writes committed in hierarchy order, alike on any thread count.

use crate::common::{script_error, scripted};
use strata::prelude::*;
use strata_script::prelude::*;

fn system(world: &mut World, name: &str, source: &str) -> Result<SystemId, strata_script::Error> {
    world.add_script_system(name, &format!("systems/{name}.luau"), source)
}

#[test]
fn every_malformed_system_table_is_refused_with_a_reason() {
    let cases = [
        "return 5",
        "return { run = function() end }",
        "return system { run = 3 }",
        "return system { phase = 'Sometime', run = function() end }",
        "return system { interval = -1, run = function() end }",
        "return system { parallel = 'yes', run = function() end }",
        "return system { writes = { Health = { 'nope' } }, run = function() end }",
        "return system { writes = { Nope = { 'x' } }, run = function() end }",
        "return system { sets = 3, run = function() end }",
        "return system { speed = 3, run = function() end }",
        "return system { [1] = 3, run = function() end }",
        "return system {",
    ];
    let mut lines = Vec::new();
    for case in cases {
        let mut world = scripted(1);
        let result = system(&mut world, "bad", case);
        assert!(result.is_err(), "{case} was accepted");
        let error = script_error(result);
        assert_eq!(error.script, "systems/bad.luau");
        assert!(world.stats().is_empty(), "{case}: nothing is added");
        lines.push(format!("{case}\n  -> {error}"));
    }
    insta::assert_snapshot!(lines.join("\n"));
}

#[test]
fn systems_run_by_phase_order_and_interval_with_the_fixed_step_in_its_block() {
    let mut world = scripted(1);
    world.set_fixed_step(0.05, 4).unwrap();
    let print_dt = |label: &str| {
        format!("return system {{ PLACE, run = function(world, dt) print('{label}', dt) end }}")
    };
    let add = |world: &mut World, name: &str, placement: &str| {
        let source = print_dt(name).replace("PLACE", placement);
        system(world, name, &source).unwrap();
    };
    add(&mut world, "last", "phase = 'Last'");
    add(&mut world, "late", "phase = 'Update', after = { 'early' }");
    add(&mut world, "early", "phase = 'Update', sets = { 'movers' }");
    add(&mut world, "first", "phase = 'First'");
    add(&mut world, "fixed", "phase = 'Fixed'");
    add(&mut world, "slow", "phase = 'PostUpdate', interval = 0.25");
    add(
        &mut world,
        "before",
        "phase = 'Update', before = { 'movers' }",
    );
    let mut frames = Vec::new();
    for _ in 0..3 {
        frames.push(world.step(0.1).unwrap().prints.join(" | "));
    }
    insta::assert_snapshot!(frames.join("\n"));
}

#[test]
fn parallel_luau_cannot_change_structure_and_writes_only_what_it_declares() {
    let cases = [
        (
            "writes = { Position = { 'x' } }",
            "Instance.new('Part', world.workspace)",
        ),
        (
            "writes = { Position = { 'x' } }",
            "world.workspace:GetChildren()[1]:Destroy()",
        ),
        (
            "writes = { Position = { 'x' } }",
            "world.workspace:GetChildren()[1]:AddComponent(Health)",
        ),
        (
            "writes = { Position = { 'x' } }",
            "world:tag(world.workspace, 'x')",
        ),
        (
            "writes = { Position = { 'x' } }",
            "world.workspace.Name = 'W'",
        ),
        (
            "writes = { Position = { 'x' } }",
            "world.workspace:GetChildren()[1]:GetComponent(Position).y = 1",
        ),
        (
            "writes = { Position = { 'x' } }",
            "for c in world:query({ with = { Position } }):chunks() do c:write(Position).y[1] = 5 end",
        ),
        (
            "writes = { Position = { 'x' } }",
            "world.workspace:GetChildren()[1]:GetPersistentId()",
        ),
    ];
    let mut lines = Vec::new();
    for (writes, body) in cases {
        let mut world = scripted(2);
        world
            .run_script(
                "setup.luau",
                "Instance.new('Part', world.workspace):AddComponent(Position)",
            )
            .unwrap();
        let before = world.state_hash();
        let source = format!(
            "return system {{ parallel = true, {writes},\n run = function(world)\n {body}\n end }}"
        );
        system(&mut world, "par", &source).unwrap();
        let events = world.step(0.1).unwrap();
        assert_eq!(events.errors.len(), 1, "{body}");
        let (_, error) = &events.errors[0];
        let text = error.to_string();
        assert!(text.contains("systems/par.luau:3"), "{body}: {text}");
        lines.push(format!("{body}\n  -> {text}"));
        let _ = before;
        let children = world.children(world.workspace()).unwrap();
        assert_eq!(children.len(), 1, "{body}: no structure changed");
        let (position, y) = world.field_named("Position", "y").unwrap();
        assert_eq!(world.get::<f64>(children[0], position, y).unwrap(), 0.0);
    }
    insta::assert_snapshot!(lines.join("\n"));
}

#[test]
fn parallel_luau_reads_only_what_it_declares_or_writes() {
    let setup = "for i = 1, 3 do
        local p = Instance.new('Part', world.workspace)
        p:AddComponent(Position, { x = i })
        p:AddComponent(Velocity, { x = 10 * i })
        p:AddComponent(Health)
    end";
    let refused = [
        "local _ = world.workspace:GetChildren()[1]:GetComponent(Velocity).x",
        "for _ in world:query({ with = { Position, Velocity } }) do end",
        "for c in world:query({ with = { Position, Velocity } }):chunks() do local _ = c:read(Velocity) end",
        "for _ in world:query({ with = { Position }, changed = { Position }, without = { Health } }) do end for _ in world:query({ with = { Velocity } }) do end",
    ];
    for body in refused {
        let mut world = scripted(2);
        world.run_script("setup.luau", setup).unwrap();
        let source = format!(
            "return system {{ parallel = true, writes = {{ Position = {{ 'x' }} }}, reads = {{ 'Health' }},\n run = function(world)\n {body}\n end }}"
        );
        system(&mut world, "par", &source).unwrap();
        let events = world.step(0.1).unwrap();
        assert_eq!(events.errors.len(), 1, "{body}");
        let text = events.errors[0].1.to_string();
        assert!(
            text.contains("systems/par.luau:3")
                && text.contains("did not declare reads of `Velocity`"),
            "{body}: {text}"
        );
    }
    // Declared, every read works: handles, passes, chunks, change filters, `without` terms;
    // the component a system writes needs no mention.
    let mut world = scripted(2);
    world.run_script("setup.luau", setup).unwrap();
    system(
        &mut world,
        "par",
        "return system { parallel = true, writes = { Position = { 'x' } }, reads = { 'Velocity' },
            run = function(world)
                for c in world:query({ with = { Position, Velocity } }):chunks() do
                    local p, v = c:write(Position), c:read(Velocity)
                    for row = c.first, c.last do p.x[row] += v.x[row] end
                end
                for _, h in world:query({ with = { Velocity }, without = { Target } }) do
                    assert(h.x > 0)
                end
            end }",
    )
    .unwrap();
    let events = world.step(0.1).unwrap();
    assert!(events.errors.is_empty(), "{:?}", events.errors);
    let (position, x) = world.field_named("Position", "x").unwrap();
    let xs: Vec<f64> = world
        .children(world.workspace())
        .unwrap()
        .iter()
        .map(|id| world.get::<f64>(*id, position, x).unwrap())
        .collect();
    assert_eq!(xs, [11.0, 22.0, 33.0]);
    // A `reads` naming no component is refused when the system is added.
    let mut world = scripted(1);
    let error = script_error(system(
        &mut world,
        "bad",
        "return system { parallel = true, reads = { 'Nope' }, run = function() end }",
    ));
    assert!(error.message.contains("Nope"), "{error}");
    let error = script_error(system(
        &mut world,
        "bad",
        "return system { parallel = true, reads = 3, run = function() end }",
    ));
    assert!(
        error.message.contains("`reads` must be a list of names"),
        "{error}"
    );
}

#[test]
fn parallel_luau_systems_of_one_wave_read_what_was_established_before_it() {
    for threads in [1, 2, 8] {
        let mut world = scripted(threads);
        world
            .run_script(
                "setup.luau",
                "for i = 1, 50 do
                    local p = Instance.new('Part', world.workspace)
                    p:AddComponent(Position, { x = i })
                    p:AddComponent(Velocity, { x = i })
                end",
            )
            .unwrap();
        system(
            &mut world,
            "move",
            "return system { parallel = true, writes = { Position = { 'x' } }, run = function(world)
                for _, p, v in world:query({ with = { Position, Velocity } }) do p.x += v.x end
            end }",
        )
        .unwrap();
        system(
            &mut world,
            "speed",
            "return system { parallel = true, writes = { Velocity = { 'x' } }, run = function(world)
                for _, p, v in world:query({ with = { Position, Velocity } }) do v.x = p.x end
            end }",
        )
        .unwrap();
        world.step(0.1).unwrap();
        let (position, x) = world.field_named("Position", "x").unwrap();
        let (velocity, vx) = world.field_named("Velocity", "x").unwrap();
        for (k, part) in world
            .children(world.workspace())
            .unwrap()
            .into_iter()
            .enumerate()
        {
            let i = (k + 1) as f64;
            assert_eq!(world.get::<f64>(part, position, x).unwrap(), 2.0 * i);
            // `speed` read the established x (i), not `move`'s write.
            assert_eq!(
                world.get::<f64>(part, velocity, vx).unwrap(),
                i,
                "{threads} threads"
            );
        }
    }
}

const ROOM: &str = r#"
local visits = 0
return system {
    run = function(world, dt, root)
        visits += 1
        local shared = world.workspace:FindFirstChild("Shared"):GetComponent(Health)
        -- Every group writes the shared row; the one latest in hierarchy order wins.
        shared.current = root:GetComponent(Health).current
        for _, child in root:GetChildren() do
            local p = child:GetComponent(Position)
            p.x += root:GetComponent(Health).current * dt
        end
        print(root.Name .. " " .. visits)
    end,
}
"#;

fn rooms(threads: usize, rooms: usize) -> World {
    let mut world = scripted(threads);
    world
        .add_group_script("room", "groups/room.luau", ROOM)
        .unwrap();
    world
        .run_script(
            "setup.luau",
            &format!(
                "Instance.new('Part', world.workspace).Name = 'Shared'
                world.workspace:FindFirstChild('Shared'):AddComponent(Health)
                for r = 1, {rooms} do
                    local room = Instance.new('Model', world.workspace)
                    room.Name = 'Room' .. r
                    room:AddComponent(Health, {{ current = r }})
                    for b = 1, 3 do Instance.new('Part', room):AddComponent(Position, {{ x = b }}) end
                    world:setGroup(room, 'room')
                end"
            ),
        )
        .unwrap();
    world
}

#[test]
fn groups_run_in_vms_of_their_own_and_commit_in_hierarchy_order() {
    let mut world = rooms(2, 5);
    let events = world.step(0.5).unwrap();
    assert!(events.errors.is_empty(), "{:?}", events.errors);
    // Prints come in hierarchy order; each VM counts its own visits.
    assert_eq!(
        events.prints,
        ["Room1 1", "Room2 1", "Room3 1", "Room4 1", "Room5 1"]
    );
    let events = world.step(0.5).unwrap();
    assert_eq!(events.prints[4], "Room5 2");
    let (health, current) = world.field_named("Health", "current").unwrap();
    let shared = world.children(world.workspace()).unwrap()[0];
    assert_eq!(
        world.get::<f64>(shared, health, current).unwrap(),
        5.0,
        "the last room wins"
    );
    // Rooms 1-4 moved into a folder after Room5: Room4 is now the last writer.
    let workspace = world.workspace();
    let folder = world.create(ClassId::FOLDER, Some(workspace)).unwrap();
    let children = world.children(workspace).unwrap();
    for child in &children[1..5] {
        world.set_parent(*child, Some(folder)).unwrap();
    }
    world.step(0.5).unwrap();
    assert_eq!(world.get::<f64>(shared, health, current).unwrap(), 4.0);
}

#[test]
fn groups_give_the_same_world_every_frame_on_one_two_and_eight_threads() {
    let run = |threads| {
        let mut world = rooms(threads, 12);
        (0..30)
            .map(|_| {
                let events = world.step(1.0 / 60.0).unwrap();
                assert!(events.errors.is_empty());
                let prints = events.prints.clone();
                (world.state_hash(), prints)
            })
            .collect::<Vec<_>>()
    };
    let one = run(1);
    assert_eq!(one, run(2));
    assert_eq!(one, run(8));
}

#[test]
fn a_group_may_not_change_structure_and_an_unmarked_root_stops_running() {
    let mut world = scripted(2);
    world
        .add_group_script(
            "builder",
            "groups/builder.luau",
            "return system { run = function(world, dt, root)\n print(root.Name)\n Instance.new('Part', root)\n end }",
        )
        .unwrap();
    world
        .run_script(
            "setup.luau",
            "local room = Instance.new('Model', world.workspace)
            room.Name = 'Room'
            world:setGroup(room, 'builder')",
        )
        .unwrap();
    let events = world.step(0.1).unwrap();
    assert_eq!(events.errors.len(), 1);
    let text = events.errors[0].1.to_string();
    assert!(
        text.contains("groups/builder.luau:3") && text.contains("structural"),
        "{text}"
    );
    let room = world.children(world.workspace()).unwrap()[0];
    assert!(world.children(room).unwrap().is_empty());
    assert_eq!(world.execution_group(room).as_deref(), Some("builder"));
    assert!(world.set_execution_group(room, None).unwrap());
    let events = world.step(0.1).unwrap();
    assert!(events.errors.is_empty() && events.prints.is_empty());
}

#[test]
fn a_broken_group_script_is_refused_when_added() {
    let mut world = scripted(1);
    let error = script_error(world.add_group_script("g", "groups/g.luau", "return 3"));
    assert_eq!(error.script, "groups/g.luau");
    assert!(error.message.contains("system{"), "{error}");
}

#[test]
fn a_failing_group_names_the_root_it_ran_for() {
    let mut world = scripted(2);
    world
        .run_script(
            "setup.luau",
            "for r = 1, 3 do
                local room = Instance.new('Model', world.workspace)
                room.Name = 'Room' .. r
            end",
        )
        .unwrap();
    world
        .add_group_script(
            "fragile",
            "groups/fragile.luau",
            "return system { run = function(world, dt, root)\n if root.Name == 'Room2' then\n error('the floor gave way')\n end\n end }",
        )
        .unwrap();
    world
        .run_script(
            "setup.luau",
            "for _, room in world.workspace:GetChildren() do world:setGroup(room, 'fragile') end",
        )
        .unwrap();
    let events = world.step(0.1).unwrap();
    assert_eq!(events.errors.len(), 1, "{:?}", events.errors);
    let text = events.errors[0].1.to_string();
    assert!(
        text.starts_with("groups/fragile.luau:3: the floor gave way"),
        "{text}"
    );
    assert!(text.contains("`Room2`") && text.contains("Model"), "{text}");
}

/// The rows a parallel column-path system changes each frame: every row, one, none, then every
/// row again, so its write-back grows, shrinks and grows again in memory kept from the frames
/// before; a write from Rust between frames stays where the next write-back does not touch it.
/// The `bump` script of [`check_bump_frames`]: a system table opening with `head` (up to its
/// run function's parameters), whose run takes `Position.x` columns from the query `spec`.
fn bump(head: &str, spec: &str) -> String {
    format!(
        "local runs = 0
        return system {{ {head}
            runs += 1
            local frame = runs
            for chunk in world:query({spec}):chunks() do
                local px = chunk:write(Position).x
                for row = chunk.first, chunk.last do
                    if frame ~= 3 and (frame ~= 2 or px[row] == 104) then
                        px[row] += 100
                    end
                end
            end
        end }}"
    )
}

/// Steps four frames of a `bump` script over `parts` (Position.x 1 to 40): frames 1 and 4 add
/// 100 to every row, frame 2 only to the row that held 104, frame 3 to none; between frames 1
/// and 2 a write from Rust to the tenth part, which frame 2's write-back must leave alone. Each
/// frame's write-back writes only the rows that frame changed (the systems' field writes).
fn check_bump_frames(world: &mut World, parts: &[InstanceId], threads: usize) {
    let (position, x) = world.field_named("Position", "x").unwrap();
    let mut expected: Vec<f64> = (1..=40).map(f64::from).collect();
    let writes =
        |world: &World| -> u64 { world.stats().iter().map(|(_, _, s)| s.field_writes).sum() };
    for (frame, written) in (1..=4).zip([40, 1, 0, 40]) {
        let before = writes(world);
        world.step(0.1).unwrap();
        assert_eq!(
            writes(world) - before,
            written,
            "field writes of frame {frame} on {threads} threads"
        );
        for value in &mut expected {
            if frame != 3 && (frame != 2 || *value == 104.0) {
                *value += 100.0;
            }
        }
        let values: Vec<f64> = parts
            .iter()
            .map(|&part| world.get::<f64>(part, position, x).unwrap())
            .collect();
        assert_eq!(values, expected, "frame {frame} on {threads} threads");
        if frame == 1 {
            world.write::<f64>(parts[9], position, x, -5.0).unwrap();
            expected[9] = -5.0;
        }
    }
}

#[test]
fn a_groups_column_write_back_lands_whatever_the_rows_it_changed_the_frame_before() {
    for threads in [1, 2] {
        let mut world = scripted(threads);
        world
            .run_script(
                "setup.luau",
                "for r = 1, 2 do
                    local room = Instance.new('Folder', world.workspace)
                    for i = 1, 20 do
                        Instance.new('Part', room):AddComponent(Position, { x = (r - 1) * 20 + i })
                    end
                end",
            )
            .unwrap();
        world
            .add_group_script(
                "bump",
                "groups/bump.luau",
                &bump(
                    "run = function(world, dt, root)",
                    "{ with = { Position }, within = root }",
                ),
            )
            .unwrap();
        let rooms = world.children(world.workspace()).unwrap();
        for room in &rooms {
            world.set_execution_group(*room, Some("bump")).unwrap();
        }
        let parts: Vec<InstanceId> = rooms
            .iter()
            .flat_map(|room| world.children(*room).unwrap())
            .collect();
        check_bump_frames(&mut world, &parts, threads);
    }
}

#[test]
fn a_parallel_column_write_back_lands_whatever_the_rows_it_changed_the_frame_before() {
    for threads in [1, 2] {
        let mut world = scripted(threads);
        world
            .run_script(
                "setup.luau",
                "for i = 1, 40 do
                    local p = Instance.new('Part', world.workspace)
                    p:AddComponent(Position, { x = i })
                end",
            )
            .unwrap();
        system(
            &mut world,
            "bump",
            &bump(
                "parallel = true, writes = { Position = { 'x' } }, run = function(world)",
                "{ with = { Position } }",
            ),
        )
        .unwrap();
        let parts = world.children(world.workspace()).unwrap();
        check_bump_frames(&mut world, &parts, threads);
    }
}
