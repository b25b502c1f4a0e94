//! The game API, function by function: what each does to the world, and the script error (with
//! the script and the line) each mistake gives. The API tables of `strata::script::types` (what
//! the type definitions promise) are checked against what a script can reach.

use crate::common::{printed, script_error, scripted};
use strata::script::types;

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
    "world:removed('Health')",
    "world:tag(5, 'x')",
    "world:setGroup(world.workspace, 5)",
    "local t = Instance.new('Part', world.workspace):AddComponent(Target); t.of = 5",
    "error('my own failure')",
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
