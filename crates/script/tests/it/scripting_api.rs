//! The game API, function by function: what each does to the world, and the script error (with
//! the script and the line) each mistake gives. The API tables of `strata_script::types` (what
//! the type definitions promise) are checked against what a script can reach.

use crate::common::{printed, script_error, scripted};
use strata::prelude::*;
use strata_script::prelude::*;
use strata_script::types;

#[test]
fn everything_the_type_definitions_promise_exists_at_run_time() {
    let mut world = scripted(1);
    let mut source = String::from("local inst = Instance.new('Part', world.workspace)\n");
    source.push_str("inst:AddComponent(Position)\nlocal missing = {}\n");
    for (name, _) in types::INSTANCE_PROPERTIES {
        source.push_str(&format!(
            "if inst.{name} == nil and '{name}' ~= 'Parent' then table.insert(missing, 'Instance.{name}') end\n"
        ));
    }
    for (name, _) in types::INSTANCE_METHODS {
        source.push_str(&format!(
            "if type(inst.{name}) ~= 'function' then table.insert(missing, 'Instance:{name}') end\n"
        ));
    }
    for (name, _) in types::WORLD_PROPERTIES {
        source.push_str(&format!(
            "if world.{name} == nil then table.insert(missing, 'world.{name}') end\n"
        ));
    }
    for (name, _) in types::WORLD_METHODS {
        source.push_str(&format!(
            "if type(world.{name}) ~= 'function' then table.insert(missing, 'world:{name}') end\n"
        ));
    }
    source.push_str("local q = world:query({ with = { Position } })\n");
    for (name, _) in types::QUERY_METHODS {
        source.push_str(&format!(
            "if type(q.{name}) ~= 'function' then table.insert(missing, 'query:{name}') end\n"
        ));
    }
    for (name, _) in types::GLOBALS {
        source.push_str(&format!(
            "if {name} == nil then table.insert(missing, '{name}') end\n"
        ));
    }
    source.push_str("print(#missing == 0 and 'all there' or table.concat(missing, ', '))\n");
    assert_eq!(printed(&mut world, &source), ["all there"]);
}

#[test]
fn instances_are_made_named_moved_and_destroyed() {
    let mut world = scripted(1);
    let out = printed(
        &mut world,
        r#"
        local folder = Instance.new("Folder", world.workspace)
        folder.Name = "Box"
        local part = Instance.new("Part")
        print(part.Parent == nil, part.ClassName, folder.Parent == world.workspace)
        part.Parent = folder
        part.Name = "Lid"
        print(folder:FindFirstChild("Lid") == part, #folder:GetChildren(), folder:FindFirstChild("None"))
        print(part.Id > 0, tostring(part) == "Lid (#" .. part.Id .. ")")
        part:Destroy()
        print(part:IsAlive(), #folder:GetChildren(), folder:IsAlive())
        "#,
    );
    assert_eq!(
        out,
        [
            "true\tPart\ttrue",
            "true\t1\tnil",
            "true\ttrue",
            "false\t0\ttrue"
        ]
    );
    let boxes: Vec<_> = world
        .children(world.workspace())
        .unwrap()
        .into_iter()
        .filter(|id| world.arena().node(*id).unwrap().name() == "Box")
        .collect();
    assert_eq!(boxes.len(), 1);
}

#[test]
fn a_clone_copies_the_subtree_with_its_components_tags_and_attributes() {
    let mut world = scripted(1);
    let out = printed(
        &mut world,
        r#"
        local a = Instance.new("Model", world.workspace)
        a.Name = "A"
        a:SetAttribute("speed", 3)
        a:AddComponent(Health, { current = 42 })
        world:tag(a, "enemy")
        Instance.new("Part", a).Name = "Child"
        local b = a:Clone()
        print(b ~= a, b.Name, b.Parent == a.Parent, b:GetAttribute("speed"))
        print(b:GetComponent(Health).current, world:hasTag(b, "enemy"), b:FindFirstChild("Child") ~= nil)
        b:GetComponent(Health).current = 1
        print(a:GetComponent(Health).current)
        "#,
    );
    assert_eq!(out, ["true\tA\ttrue\t3", "42\ttrue\ttrue", "42"]);
}

#[test]
fn components_are_added_read_written_and_removed_through_handles() {
    let mut world = scripted(1);
    let out = printed(
        &mut world,
        r#"
        local e = Instance.new("Part", world.workspace)
        print(e:HasComponent(Health), e:GetComponent(Health))
        local hp = e:AddComponent(Health, { current = 30 })
        print(e:HasComponent(Health), hp.current, hp.max)
        hp.current += 5
        print(e:GetComponent(Health).current, e:GetComponent(Health) == hp)
        print(e:RemoveComponent(Health), e:RemoveComponent(Health), e:HasComponent(Health))
        "#,
    );
    assert_eq!(
        out,
        [
            "false\tnil",
            "true\t30\t100",
            "35\ttrue",
            "true\tfalse\tfalse"
        ]
    );
}

#[test]
fn references_hold_instances_and_their_policy_removes_the_component() {
    let mut world = scripted(1);
    let out = printed(
        &mut world,
        r#"
        local prey = Instance.new("Part", world.workspace)
        prey.Name = "Prey"
        local hunter = Instance.new("Part", world.workspace)
        local t = hunter:AddComponent(Target, { of = prey })
        print(t.of == prey, t.of.Name)
        prey:Destroy()
        print(hunter:HasComponent(Target))
        "#,
    );
    assert_eq!(out, ["true\tPrey", "false"]);
}

#[test]
fn attributes_hold_numbers_strings_booleans_and_vectors() {
    let mut world = scripted(1);
    let out = printed(
        &mut world,
        r#"
        local e = Instance.new("Part", world.workspace)
        e:SetAttribute("n", 1.5)
        e:SetAttribute("s", "hi")
        e:SetAttribute("b", true)
        e:SetAttribute("v", Vector3.new(1, 2, 3))
        local v = e:GetAttribute("v")
        print(e:GetAttribute("n"), e:GetAttribute("s"), e:GetAttribute("b"), v.x + v.y + v.z)
        e:SetAttribute("n", nil)
        print(e:GetAttribute("n"), e:GetAttribute("never"))
        "#,
    );
    assert_eq!(out, ["1.5\thi\ttrue\t6", "nil\tnil"]);
}

#[test]
fn tags_are_added_tested_listed_and_removed() {
    let mut world = scripted(1);
    let out = printed(
        &mut world,
        r#"
        local a = Instance.new("Part", world.workspace)
        local b = Instance.new("Part", world.workspace)
        print(world:tag(a, "red"), world:tag(a, "red"), world:tag(b, "red"))
        print(world:hasTag(a, "red"), #world:tagged("red"), #world:tagged("blue"))
        print(world:untag(a, "red"), world:untag(a, "red"), world:hasTag(a, "red"))
        print(world:tagged("red")[1] == b)
        for _ in world:query({ tags = { "red" } }) do print("tagged row") end
        "#,
    );
    assert_eq!(
        out,
        [
            "true\tfalse\ttrue",
            "true\t2\t0",
            "true\tfalse\tfalse",
            "true",
            "tagged row"
        ]
    );
}

#[test]
fn queries_filter_by_components_tags_class_and_ancestors() {
    let mut world = scripted(1);
    let out = printed(
        &mut world,
        r#"
        local home = Instance.new("Model", world.workspace)
        home:AddComponent(Health)
        for i = 1, 4 do
            local p = Instance.new(i % 2 == 0 and "Part" or "Folder", home)
            p.Name = "P" .. i
            p:AddComponent(Position, { x = i })
            if i <= 2 then p:AddComponent(Velocity) end
            if i == 4 then world:tag(p, "last") end
        end
        local function names(spec)
            local out = {}
            for inst in world:query(spec) do table.insert(out, inst.Name) end
            table.sort(out)
            return table.concat(out, ",")
        end
        print(names({ with = { Position } }))
        print(names({ with = { Position, Velocity } }))
        print(names({ with = { Position }, without = { Velocity } }))
        print(names({ with = { Position }, tags = { "last" } }))
        print(names({ with = { Position }, withoutTags = { "last" } }))
        print(names({ with = { Position }, class = "Part" }))
        print(names({ with = { Position }, ancestor = Health }))
        for inst, p, v in world:query({ with = { Position, Velocity } }) do
            assert(p.x >= 1 and v.x == 0)
        end
        "#,
    );
    assert_eq!(
        out,
        [
            "P1,P2,P3,P4",
            "P1,P2",
            "P3,P4",
            "P4",
            "P1,P2,P3",
            "P2,P4",
            "P1,P2,P3,P4"
        ]
    );
}

#[test]
fn the_removed_reader_reports_each_removal_once() {
    let mut world = scripted(1);
    world
        .add_script_system(
            "reader",
            "systems/reader.luau",
            r#"
            return system {
                phase = "Last",
                run = function(world)
                    local gone = world:removed(Health)
                    local names = {}
                    for _, inst in gone do table.insert(names, tostring(inst.Id)) end
                    print("removed: " .. table.concat(names, ","))
                end,
            }
            "#,
        )
        .unwrap();
    world
        .run_script(
            "setup.luau",
            "for i = 1, 3 do Instance.new('Part', world.workspace):AddComponent(Health) end",
        )
        .unwrap();
    let events = world.step(0.1).unwrap();
    assert_eq!(events.prints, ["removed: "]);
    let parts = world.children(world.workspace()).unwrap();
    let health = world.component("Health").unwrap();
    world.remove(parts[0], health).unwrap();
    world.remove(parts[2], health).unwrap();
    let events = world.step(0.1).unwrap();
    assert_eq!(
        events.prints,
        [format!("removed: {},{}", parts[0].get(), parts[2].get())]
    );
    let events = world.step(0.1).unwrap();
    assert_eq!(events.prints, ["removed: "]);
}

#[test]
fn print_joins_its_arguments_with_tabs_in_order() {
    let mut world = scripted(1);
    let out = printed(
        &mut world,
        "print(1, 'two', true, nil, 2.5)\nprint()\nprint(Position)",
    );
    assert_eq!(out, ["1\ttwo\ttrue\tnil\t2.5", "", "Position"]);
}

/// Each mistake a script can make with the API, run as `bad.luau` with the mistake on line 2.
const MISTAKES: &[&str] = &[
    "Instance.new('NoSuchClass')",
    "Instance.new('Part', 5)",
    "Instance.new('Part', world.workspace):AddComponent(Health, { nope = 1 })",
    "Instance.new('Part', world.workspace):AddComponent(Health, { current = 'high' })",
    "Instance.new('Part', world.workspace):AddComponent(Health):AddComponent(Health)",
    "Instance.new('Part', world.workspace):AddComponent({})",
    "local h = Instance.new('Part', world.workspace):AddComponent(Health); local _ = h.nope",
    "local h = Instance.new('Part', world.workspace):AddComponent(Health); h.current = 'x'",
    "local h = Instance.new('Part', world.workspace):AddComponent(Health); h.nope = 1",
    "local p = Instance.new('Part', world.workspace); local h = p:AddComponent(Health); p:Destroy(); local _ = h.current",
    "local p = Instance.new('Part', world.workspace); p:Destroy(); p.Name = 'x'",
    "local p = Instance.new('Part', world.workspace); p:Destroy(); p:Destroy()",
    "local p = Instance.new('Part', world.workspace); p.Parent = p",
    "local p = Instance.new('Part', world.workspace); local c = Instance.new('Part', p); p.Parent = c",
    "world:query({ with = { Position }, nope = true })",
    "world:query({ with = { 'Position' } })",
    "world:query({ ancestor = 3 })",
    "world:query({ with = { Position }, within = Position })",
    "world:removed('Health')",
    "world:tag(5, 'x')",
    "world:setGroup(world.workspace, 5)",
    "local t = Instance.new('Part', world.workspace):AddComponent(Target); t.of = 5",
    "error('my own failure')",
    "error({})",
    "local _ = world.workspace.Nope",
    "world.workspace.Nope = 1",
    "world.workspace.Id = 5",
    "world.workspace:Nope()",
    "world.workspace.GetChildren()",
    "local _ = world.nope",
    "world:nope()",
    "world:query({ with = { Position } }):nope()",
    "local _ = Health.nope",
    "world:setGroup(world.workspace, 'nosuch')",
    "world:query({ with = Health })",
    "world:query({ with = { Position }, changed = { Health } })",
    "world:query({ with = { Position }, without = { Position } })",
    "world.workspace:FindFirstChild()",
    "world:tag(world.workspace)",
    "Instance.new()",
    "local p = Instance.new('Part', world.workspace); local h = p:AddComponent(Health); p:RemoveComponent(Health); h.current = 3",
    "local p = Instance.new('Part', world.workspace); p:AddComponent(Health); p:AddComponent(Health)",
    "Vector3.new(1e39, 0, 0)",
    "Vector3.new('a')",
    "world.workspace:IsA(5)",
    "world.workspace:IsA('Nope')",
    "world.workspace:FindFirstAncestor()",
    "world:get('x')",
    "world:get(1.5)",
    "world:getByPersistentId(5)",
    "world:getByPersistentId('zz')",
];

#[test]
fn every_api_mistake_is_a_script_error_naming_the_script_and_line() {
    let mut lines = Vec::new();
    for mistake in MISTAKES {
        let mut world = scripted(1);
        let source = format!("local first = 1\n{mistake}\n");
        let result = world.run_script("bad.luau", &source);
        assert!(result.is_err(), "{mistake} was accepted");
        let error = script_error(result);
        assert_eq!(error.script, "bad.luau", "{mistake}");
        assert_eq!(error.line, Some(2), "{mistake}: {error}");
        lines.push(format!("{mistake}\n  -> {error}"));
    }
    insta::assert_snapshot!(lines.join("\n"));
}

#[test]
fn a_failed_script_leaves_the_world_usable() {
    let mut world = scripted(1);
    let error = script_error(world.run_script(
        "bad.luau",
        "Instance.new('Part', world.workspace).Name = 'Kept'\nerror('stop here')",
    ));
    assert_eq!(error.line, Some(2));
    // What ran before the error stays done; the VM goes on working.
    let out = printed(
        &mut world,
        "print(world.workspace:FindFirstChild('Kept') ~= nil)",
    );
    assert_eq!(out, ["true"]);
}

#[test]
fn a_syntax_error_names_the_script_and_line_and_check_script_finds_it_without_running() {
    let mut world = scripted(1);
    let error = script_error(world.check_script("s.luau", "print('a')\nlocal = 3\n"));
    assert_eq!((error.script.as_str(), error.line), ("s.luau", Some(2)));
    world
        .check_script("ok.luau", "Instance.new('Part', world.workspace)")
        .unwrap();
    assert!(
        world.children(world.workspace()).unwrap().is_empty(),
        "check runs nothing"
    );
}

#[test]
fn an_api_error_caught_by_pcall_is_a_message_with_the_scripts_line() {
    let mut world = scripted(1);
    let out = printed(
        &mut world,
        r#"local p = Instance.new("Part", world.workspace)
local h = p:AddComponent(Health)
local attempts = {
    function() return world.workspace:FindFirstChild({}) end,
    function() Instance.new("NoSuchClass") end,
    function() h.nope = 1 end,
    function() p:RemoveComponent(Health); return h.current end,
    function() return world.workspace.Nope end,
}
for _, attempt in attempts do
    local ok, message = pcall(attempt)
    print(ok, typeof(message), message)
end
print(xpcall(function() Instance.new("NoSuchClass") end, function(m) return "handled: " .. m end))
print(coroutine.resume(coroutine.create(function() Instance.new("NoSuchClass") end)))"#,
    );
    assert_eq!(out.len(), 7, "{out:?}");
    for (k, line) in out[..5].iter().enumerate() {
        let expected = format!("false\tstring\ttest.luau:{}: ", k + 4);
        assert!(line.starts_with(&expected), "{line}");
        for internal in [
            "runtime error",
            "traceback",
            "strata:",
            "__mlua",
            "ComponentId",
        ] {
            assert!(!line.contains(internal), "{internal}: {line}");
        }
    }
    assert!(
        out[5].starts_with("false\thandled: test.luau:14: no class is named `NoSuchClass`"),
        "{}",
        out[5]
    );
    assert_eq!(
        out[6],
        "false\ttest.luau:15: no class is named `NoSuchClass`"
    );
}

#[test]
fn instances_give_descendants_ancestors_classes_attributes_tags_and_persistent_ids() {
    let mut world = scripted(1);
    let out = printed(
        &mut world,
        r#"
        local root = Instance.new("Model", world.workspace)
        root.Name = "Root"
        local a = Instance.new("Folder", root)
        a.Name = "A"
        local b = Instance.new("Part", a)
        b.Name = "B"
        Instance.new("Part", root).Name = "C"
        local names = {}
        for _, d in root:GetDescendants() do table.insert(names, d.Name) end
        print(table.concat(names, ","), #b:GetDescendants())
        print(b:IsA("Part"), b:IsA("Instance"), b:IsA("Model"))
        print(b:FindFirstAncestor("Root") == root, b:FindFirstAncestor("A") == a, b:FindFirstAncestor("B"))
        b:SetAttribute("speed", 3)
        b:SetAttribute("label", "fast")
        local attributes = b:GetAttributes()
        print(attributes.speed, attributes.label, next(a:GetAttributes()))
        world:tag(b, "red")
        world:tag(b, "blue")
        print(table.concat(b:GetTags(), ","), #a:GetTags())
        local pid = b:GetPersistentId()
        print(type(pid), #pid, b:GetPersistentId() == pid)
        print(world:getByPersistentId(pid) == b, world:get(b.Id) == b, world:get(root.Id) == root)
        local id = b.Id
        b:Destroy()
        print(world:getByPersistentId(pid), world:get(id), world:get(123456))
        "#,
    );
    assert_eq!(
        out,
        [
            "A,B,C\t0",
            "true\ttrue\tfalse",
            "true\ttrue\tnil",
            "3\tfast\tnil",
            "blue,red\t0",
            "string\t16\ttrue",
            "true\ttrue\ttrue",
            "nil\tnil\tnil",
        ]
    );
}

#[test]
fn a_query_counts_its_matches_without_taking_its_change_window() {
    let mut world = scripted(1);
    let out = printed(
        &mut world,
        r#"
        for i = 1, 3 do
            local p = Instance.new("Part", world.workspace)
            p:AddComponent(Position)
            if i == 1 then p:AddComponent(Velocity) end
        end
        local changed = world:query({ with = { Position }, changed = { Position } })
        print(world:query({ with = { Position } }):count(), world:query({ with = { Position, Velocity } }):count())
        print(changed:count(), changed:count())
        local n = 0
        for _ in changed do n += 1 end
        print(n)
        "#,
    );
    assert_eq!(out, ["3\t1", "3\t3", "3"]);
}

#[test]
fn the_world_gives_its_frame_and_time_in_setup_systems_parallel_systems_and_groups() {
    let mut world = scripted(2);
    let report = |label: &str| {
        format!(
            "return system {{ {{PLACE}}, run = function(world, dt, root)
                local room = world.workspace:FindFirstChild('Room')
                local part = world:get(room:GetChildren()[1].Id)
                local pid = part:GetAttribute('pid')
                print('{label}', world.frame, world.time, world:query({{ with = {{ Position }} }}):count(),
                    #room:GetDescendants(), part:IsA('Part'), part:FindFirstAncestor('Room') == room,
                    part:GetTags()[1], part:GetAttributes().pid == pid,
                    part:GetPersistentId() == pid and world:getByPersistentId(pid) == part)
            end }}"
        )
    };
    world
        .add_script_system(
            "serial",
            "systems/serial.luau",
            &report("serial").replace("{PLACE}", "phase = 'First'"),
        )
        .unwrap();
    world
        .add_script_system(
            "par",
            "systems/par.luau",
            &report("parallel").replace(
                "{PLACE}",
                "phase = 'Update', parallel = true, writes = { Position = { 'x' } }",
            ),
        )
        .unwrap();
    world
        .add_group_script(
            "room",
            "groups/room.luau",
            &report("group").replace("{PLACE}", "phase = 'Last'"),
        )
        .unwrap();
    world
        .run_script(
            "setup.luau",
            "print('setup', world.frame, world.time)
            local room = Instance.new('Model', world.workspace)
            room.Name = 'Room'
            local part = Instance.new('Part', room)
            part:AddComponent(Position)
            world:tag(part, 'crate')
            part:SetAttribute('pid', part:GetPersistentId())
            world:setGroup(room, 'room')",
        )
        .unwrap();
    assert_eq!(world.take_prints(), ["setup\t0\t0"]);
    let mut prints = Vec::new();
    for _ in 0..2 {
        let events = world.step(0.25).unwrap();
        assert!(events.errors.is_empty(), "{:?}", events.errors);
        prints.extend(events.prints.iter().cloned());
    }
    assert_eq!(
        prints,
        [
            "serial\t0\t0\t1\t1\ttrue\ttrue\tcrate\ttrue\ttrue",
            "parallel\t0\t0\t1\t1\ttrue\ttrue\tcrate\ttrue\ttrue",
            "group\t0\t0\t1\t1\ttrue\ttrue\tcrate\ttrue\ttrue",
            "serial\t1\t0.25\t1\t1\ttrue\ttrue\tcrate\ttrue\ttrue",
            "parallel\t1\t0.25\t1\t1\ttrue\ttrue\tcrate\ttrue\ttrue",
            "group\t1\t0.25\t1\t1\ttrue\ttrue\tcrate\ttrue\ttrue",
        ]
    );
    let clock = "print(world.frame, world.time)";
    assert_eq!(printed(&mut world, clock), ["2\t0.5"]);
    assert_eq!((world.frame(), world.time()), (2, 0.5));
    // The time goes with the world into a save and a snapshot.
    let mut file = Vec::new();
    world.save(&mut file).unwrap();
    let mut loaded = World::load(file.as_slice()).unwrap();
    assert_eq!(printed(&mut loaded, clock), ["2\t0.5"]);
    let snapshot = world.snapshot().unwrap();
    world.step(0.25).unwrap();
    world.restore(&snapshot).unwrap();
    assert_eq!(printed(&mut world, clock), ["2\t0.5"]);
}

#[test]
fn vectors_are_single_precision_and_a_number_that_does_not_fit_is_refused() {
    let mut world = scripted(1);
    world
        .define_luau(
            "Body",
            "return component { fields = { at = vector(0, 0, 0), pose = transform() } }",
            None,
        )
        .unwrap();
    world.sync_definitions();
    let out = printed(
        &mut world,
        r#"
        local v = Vector3.new(0.1, 3.4e38, -3.4e38)
        print(v.x == 0.1, v.x - 0.1 < 1e-8, v.y > 3e38)
        local b = Instance.new("Part", world.workspace):AddComponent(Body)
        b.at = { x = 1, y = 2, z = 3 }
        print(b.at.x + b.at.y + b.at.z)
        "#,
    );
    assert_eq!(out, ["false\ttrue\ttrue", "6"]);
    let refused = [
        "Vector3.new(1e39, 0, 0)",
        "Vector3.new(0, -1e39, 0)",
        "Instance.new('Part', world.workspace):AddComponent(Body, { at = { x = 0, y = 0, z = 1e40 } })",
        "Instance.new('Part', world.workspace):AddComponent(Body).at = { x = 1e39, y = 0, z = 0 }",
        "local t = table.create(16, 0); t[7] = 1e39; Instance.new('Part', world.workspace):AddComponent(Body).pose = t",
    ];
    for source in refused {
        let error = script_error(world.run_script("big.luau", source));
        assert_eq!(error.line, Some(1), "{source}: {error}");
        assert!(
            error.message.contains("single precision"),
            "{source}: {error}"
        );
    }
}

#[test]
fn a_bulk_spawn_creates_every_instance_with_its_columns_and_values() {
    let mut world = scripted(2);
    world
        .define_luau(
            "Flags",
            "return component { fields = { n = integer(0), on = boolean(false), label = text(\"\") } }",
            None,
        )
        .unwrap();
    assert!(world.sync_definitions().diagnostics.is_empty());
    let printed = printed(
        &mut world,
        "local xs, ns, ons = {}, {}, {}
        for i = 1, 4 do xs[i] = i * 1.5; ns[i] = -i; ons[i] = i % 2 == 0 end
        local target = Instance.new('Part', world.workspace)
        local spawned = world:spawn(4, {
            Position = { x = xs, z = -2 },
            [Flags] = { n = ns, on = ons, label = 'swarm' },
            Target = { of = target },
        }, { class = 'Part', parent = world.workspace })
        for k, inst in spawned do
            local p, f = inst:GetComponent(Position), inst:GetComponent(Flags)
            print(k, inst.ClassName, inst.Parent == world.workspace, p.x, p.y, p.z, f.n, f.on, f.label,
                inst:GetComponent(Target).of == target)
        end
        print(#world:spawn(0, { Velocity = {} }), world:spawn(1, {})[1].ClassName)
        local zs = buffer.create(16)
        buffer.writef64(zs, 0, 0.25)
        buffer.writef64(zs, 8, -7)
        local two = world:spawn(2, { Velocity = { z = zs } })
        print(two[1]:GetComponent(Velocity).z, two[2]:GetComponent(Velocity).z)",
    );
    assert_eq!(
        printed,
        [
            "1\tPart\ttrue\t1.5\t0\t-2\t-1\tfalse\tswarm\ttrue",
            "2\tPart\ttrue\t3\t0\t-2\t-2\ttrue\tswarm\ttrue",
            "3\tPart\ttrue\t4.5\t0\t-2\t-3\tfalse\tswarm\ttrue",
            "4\tPart\ttrue\t6\t0\t-2\t-4\ttrue\tswarm\ttrue",
            "0\tEntity",
            "0.25\t-7",
        ]
    );
    // The spawned rows are ordinary rows: a query finds them, and their ids count up.
    let position = world.component("Position").unwrap();
    assert_eq!(world.store().set(position).unwrap().len(), 4);
    let velocity = world.component("Velocity").unwrap();
    assert_eq!(world.store().set(velocity).unwrap().len(), 2);
}

#[test]
fn a_refused_bulk_spawn_names_the_mistake_and_changes_nothing() {
    let cases = [
        "world:spawn(-1, {})",
        "world:spawn(1.5, {})",
        "world:spawn(1e12, {})",
        "world:spawn('3', {})",
        "world:spawn(2, 5)",
        "world:spawn(2, { Nope = {} })",
        "world:spawn(2, { Position = { w = 1 } })",
        "world:spawn(2, { Position = { x = 'far' } })",
        "world:spawn(2, { Position = { x = { 1, 2, 3 } } })",
        "world:spawn(2, { Position = { x = { 1, 'two' } } })",
        "world:spawn(2, { Position = { x = buffer.create(8) } })",
        "world:spawn(2, { Position = {}, [Position] = {} })",
        "world:spawn(2, { [1] = {} })",
        "world:spawn(2, {}, { class = 'Nope' })",
        "world:spawn(2, {}, { colour = 'red' })",
        "world:spawn(2, {}, { parent = 5 })",
        "local gone = Instance.new('Part'); gone:Destroy(); world:spawn(2, { Target = { of = gone } })",
    ];
    let mut lines = Vec::new();
    for case in cases {
        let mut world = scripted(1);
        let before = world.state_hash();
        let result = world.run_script("spawn.luau", case);
        let error = script_error(result);
        assert_eq!(error.line, Some(1), "{case}: {error}");
        if !case.starts_with("local gone") {
            assert_eq!(world.state_hash(), before, "{case}: nothing changed");
        } else {
            let target = world.component("Target").unwrap();
            assert_eq!(world.store().set(target).unwrap().len(), 0, "{case}");
        }
        lines.push(format!("{case}\n  -> {}", error.message));
    }
    insta::assert_snapshot!(lines.join("\n"));
    // Parallel code cannot spawn.
    let mut world = scripted(2);
    world
        .add_script_system(
            "par",
            "systems/par.luau",
            "return system { parallel = true, run = function(world) world:spawn(1, {}) end }",
        )
        .unwrap();
    let events = world.step(0.1).unwrap();
    assert_eq!(events.errors.len(), 1);
    assert!(
        events.errors[0].1.to_string().contains("structural change"),
        "{}",
        events.errors[0].1
    );
}

/// A value table's keys are field names, whatever the component's fields are called: a number
/// key is refused even where a field's name reads as that number, a key of another type or
/// naming no field is refused, and a refused table adds nothing.
#[test]
fn add_component_reads_only_field_names_as_keys() {
    let mut world = scripted(1);
    world
        .define(
            ComponentDef::new("Odd")
                .field(FieldDef::number("1", 0.0))
                .field(FieldDef::number("x", 0.0)),
        )
        .unwrap();
    let out = printed(
        &mut world,
        r#"local e = Instance.new("Part", world.workspace)
print(pcall(function() e:AddComponent(Odd, { [1] = 5 }) end))
print(e:HasComponent(Odd))
local h = e:AddComponent(Odd, { ["1"] = 5, x = 2 })
print(h["1"], h.x)
local f = Instance.new("Part", world.workspace)
print(pcall(function() f:AddComponent(Position, { x = 1, [true] = 2 }) end))
print(pcall(function() f:AddComponent(Position, { x = 1, w = 2 }) end))
print(pcall(function() f:AddComponent(Position, { x = 1, [2] = 2 }) end))
print(f:HasComponent(Position))
local g = f:AddComponent(Position, { z = 3, x = 1 })
print(g.x, g.y, g.z)"#,
    );
    insta::assert_snapshot!(out.join("\n"));
}

/// The instances a bulk spawn returns are their instances' wrappers from then on, however many
/// it spawns: the same objects the hierarchy and a query hand out later, in spawn order.
#[test]
fn bulk_spawned_instances_keep_the_wrappers_the_spawn_returned() {
    let mut world = scripted(1);
    let printed = printed(
        &mut world,
        "local folder = Instance.new('Folder', world.workspace)
        local spawned = world:spawn(2500, { Velocity = { z = 1 } }, { parent = folder })
        local same, count = 0, 0
        for k, child in folder:GetChildren() do
            if rawequal(child, spawned[k]) then same += 1 end
            count += 1
        end
        local seen = {}
        for inst in world:query({ with = { Velocity } }) do seen[inst] = true end
        local found = 0
        for _, inst in spawned do if seen[inst] then found += 1 end end
        print(#spawned, count, same, found)",
    );
    assert_eq!(printed, ["2500\t2500\t2500\t2500"]);
}

/// A query's handles over many instances, some of which already have one: each instance's
/// handle is the one it had, or a new one of its own, whichever batch it falls in.
#[test]
fn a_query_hands_out_each_instances_own_handle_where_some_were_made_before() {
    let mut world = scripted(1);
    let printed = printed(
        &mut world,
        "local n = 2500
        local zs = buffer.create(n * 8)
        for i = 0, n - 1 do buffer.writef64(zs, i * 8, i + 1) end
        local spawned = world:spawn(n, { Velocity = { z = zs } })
        local index, early, made = {}, {}, 0
        for k, inst in spawned do index[inst] = k end
        for k = 1, n, 7 do
            early[spawned[k]] = spawned[k]:GetComponent(Velocity)
            made += 1
        end
        local count, same, right, seen = 0, 0, 0, {}
        for inst, v in world:query({ with = { Velocity } }) do
            count += 1
            if rawequal(early[inst], v) then same += 1 end
            if v.z == index[inst] and rawequal(inst:GetComponent(Velocity), v) then right += 1 end
            seen[v] = true
        end
        local distinct = 0
        for _ in seen do distinct += 1 end
        print(count, made, same, right, distinct)",
    );
    assert_eq!(printed, ["2500\t358\t358\t2500\t2500"]);
}
