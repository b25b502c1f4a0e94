//! The game VM's sandbox and budgets: what a script cannot reach, what it cannot leak to
//! another script, and what happens when a callback runs out of instructions, time or memory
//! (an error counted in the system's stats; the VM and the frame go on).

use std::time::Duration;

use crate::common::{printed, script_error, scripted};
use strata::prelude::*;

#[test]
fn the_game_environment_offers_none_of_the_unsafe_globals() {
    let mut world = scripted(1);
    let out = printed(
        &mut world,
        r#"
        local present = {}
        for _, name in { "os", "io", "require", "loadstring", "getfenv", "setfenv", "debug",
                         "collectgarbage", "gcinfo", "newproxy", "load", "dofile", "loadfile" } do
            if _G[name] ~= nil or getmetatable(_G) ~= nil and rawget(_G, name) ~= nil then
                table.insert(present, name)
            end
        end
        local ok = pcall(function() return os.time() end)
        print(#present == 0 and "none" or table.concat(present, ","), ok)
        "#,
    );
    assert_eq!(out, ["none\tfalse"]);
}

#[test]
fn the_libraries_and_the_game_api_are_read_only() {
    for attempt in [
        "string.rep = nil",
        "math.floor = function() return 0 end",
        "table.insert = print",
        "Instance.new = nil",
    ] {
        let mut world = scripted(1);
        let error = script_error(world.run_script("poke.luau", attempt));
        assert_eq!(error.line, Some(1), "{attempt}: {error}");
        assert!(error.message.contains("readonly"), "{attempt}: {error}");
    }
}

#[test]
fn one_scripts_globals_never_reach_another() {
    let mut world = scripted(1);
    world
        .run_script("a.luau", "shared = 42\nprint(shared)")
        .unwrap();
    world.run_script("b.luau", "print(shared)").unwrap();
    world
        .add_script_system(
            "c",
            "c.luau",
            "leaked = 'from c'\nreturn system { run = function() print(leaked) end }",
        )
        .unwrap();
    world
        .add_script_system(
            "d",
            "d.luau",
            "return system { after = { 'c' }, run = function() print(leaked) end }",
        )
        .unwrap();
    assert_eq!(world.take_prints(), ["42", "nil"]);
    assert_eq!(world.step(0.1).unwrap().prints, ["from c", "nil"]);
}

fn budgeted(budget: ScriptBudget) -> World {
    let mut world = scripted(1);
    world.set_script_budget(budget);
    world
}

/// A world whose system `spin` loops forever on frames after the first, and whose system
/// `count` prints the frame; both in Update, `count` after `spin`.
fn spinning(budget: ScriptBudget) -> World {
    let mut world = budgeted(budget);
    world
        .add_script_system(
            "spin",
            "spin.luau",
            "local runs = 0
            return system { run = function()
                runs += 1
                if runs >= 2 then
                    while true do end
                end
            end }",
        )
        .unwrap();
    world
        .add_script_system(
            "count",
            "count.luau",
            "local n = 0\nreturn system { after = { 'spin' }, run = function() n += 1; print(n) end }",
        )
        .unwrap();
    world
}

fn stats_of(world: &World, name: &str) -> SystemStats {
    world
        .stats()
        .into_iter()
        .find(|(_, n, _)| n == name)
        .map(|(_, _, s)| s)
        .unwrap()
}

#[test]
fn running_out_of_instructions_fails_the_callback_and_the_frame_goes_on() {
    let mut world = spinning(ScriptBudget {
        instructions: 100_000,
        ..ScriptBudget::STANDARD
    });
    assert!(world.step(0.1).unwrap().errors.is_empty());
    for frame in 2..=3 {
        let events = world.step(0.1).unwrap();
        assert_eq!(
            events.prints,
            [frame.to_string()],
            "the other system still runs"
        );
        assert_eq!(events.errors.len(), 1);
        let (system, error) = &events.errors[0];
        assert_eq!(system, "spin");
        let text = error.to_string();
        assert!(
            text.contains("instruction budget") && text.contains("spin.luau"),
            "{text}"
        );
    }
    assert_eq!(stats_of(&world, "spin").errors, 2);
    assert_eq!(stats_of(&world, "count").errors, 0);
    // The VM is usable after the budget error.
    assert_eq!(printed(&mut world, "print('still here')"), ["still here"]);
}

#[test]
fn running_out_of_time_fails_the_callback_and_the_vm_stays_usable() {
    let mut world = spinning(ScriptBudget {
        time: Duration::from_millis(50),
        ..ScriptBudget::STANDARD
    });
    world.step(0.1).unwrap();
    let events = world.step(0.1).unwrap();
    assert_eq!(events.errors.len(), 1);
    let text = events.errors[0].1.to_string();
    assert!(text.contains("time budget"), "{text}");
    assert_eq!(printed(&mut world, "print(1 + 1)"), ["2"]);
}

#[test]
fn running_out_of_memory_fails_the_callback_and_the_vm_stays_usable() {
    let mut world = budgeted(ScriptBudget {
        memory: 16 * 1024 * 1024,
        ..ScriptBudget::STANDARD
    });
    let error = script_error(world.run_script(
        "hog.luau",
        "local t = {}\nfor i = 1, 1e8 do t[i] = { i } end",
    ));
    assert!(error.message.contains("memory"), "{error}");
    assert_eq!(printed(&mut world, "print('after')"), ["after"]);
}

#[test]
fn a_setup_script_is_bounded_by_the_same_budget() {
    let mut world = budgeted(ScriptBudget {
        instructions: 10_000,
        ..ScriptBudget::STANDARD
    });
    let error =
        script_error(world.run_script("setup.luau", "local x = 0\nwhile true do x += 1 end"));
    assert_eq!(error.script, "setup.luau");
    assert!(error.message.contains("instruction budget"), "{error}");
}

#[test]
fn an_error_inside_a_pcall_is_the_scripts_to_handle() {
    let mut world = scripted(1);
    let out = printed(
        &mut world,
        "local ok, why = pcall(function() Instance.new('Nope') end)\nprint(ok, why ~= nil)",
    );
    assert_eq!(out, ["false\ttrue"]);
}

/// Found by fuzzing the schema evaluator (`fuzz/regressions/schema_source/`), and true of game
/// scripts alike: a source beginning with a Luau bytecode version byte was loaded as bytecode,
/// which Luau does not verify (the process died). Every script is compiled as text.
#[test]
fn a_script_that_begins_like_bytecode_is_compiled_as_text() {
    for source in ["\u{3}\u{0}r", "\u{6}return 1", "\u{4}"] {
        let mut world = scripted(1);
        let error = script_error(world.check_script("bytes.luau", source));
        assert_eq!(error.script, "bytes.luau");
        let error = script_error(world.run_script("bytes.luau", source));
        assert!(
            error.message.contains("binary chunk"),
            "{source:?}: {error}"
        );
        let error = script_error(world.add_script_system("s", "systems/s.luau", source));
        assert_eq!(error.script, "systems/s.luau", "{error}");
    }
}

#[test]
fn a_component_named_like_a_global_or_not_as_an_identifier_never_replaces_a_global() {
    let mut world = scripted(1);
    for name in ["print", "math", "world", "my comp", "end", "1bad"] {
        world
            .define(ComponentDef::new(name).field(FieldDef::number("n", 0.0)))
            .unwrap();
    }
    let out = printed(
        &mut world,
        "print(math.floor(2.5), world.workspace ~= nil, Position ~= nil)",
    );
    assert_eq!(out, ["2\ttrue\ttrue"]);
    // Nor do the type definitions declare them (which would be invalid Luau, or shadow the
    // global for the type checker).
    let types = strata::script::types::component_definitions(world.store());
    for bad in [
        "declare print:",
        "declare math:",
        "declare world:",
        "my comp:",
        "type end ",
        "type 1bad ",
    ] {
        assert!(!types.contains(bad), "{bad}:\n{types}");
    }
    assert!(
        types.contains("declare Position: Component<Position>"),
        "{types}"
    );
}

#[test]
fn the_names_a_component_may_not_take_cover_every_global_of_the_environment() {
    let mut world = scripted(1);
    let out = printed(
        &mut world,
        "local names = {}
        for name in pairs(_G) do table.insert(names, tostring(name)) end
        table.sort(names)
        print(table.concat(names, ' '))",
    );
    let names: Vec<&str> = out[0].split(' ').collect();
    assert!(
        names.contains(&"math") && names.contains(&"print"),
        "{names:?}"
    );
    for name in names {
        assert!(
            strata::script::names::component_name_problem(name).is_some(),
            "`{name}` is a global a component could hide"
        );
    }
}
