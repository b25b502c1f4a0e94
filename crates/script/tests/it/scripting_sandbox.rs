//! The game VM's sandbox and budgets: what a script cannot reach, what it cannot leak to
//! another script, and what happens when a callback runs out of instructions, time or memory
//! (an error counted in the system's stats; the VM and the frame go on).

use std::time::Duration;

use crate::common::{printed, script_error, scripted};
use strata::prelude::*;
use strata_script::prelude::*;

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

#[test]
fn a_script_that_assigns_a_standard_name_sees_its_own_value() {
    // Standard libraries are resolved once when a chunk loads; a name the script assigns is its
    // own, in every function of the script.
    let mut world = scripted(1);
    world
        .run_script(
            "shadow.luau",
            r#"
            local function floor(x) return math.floor(x) end
            math = { floor = function() return "mine" end }
            buffer = "mine too"
            print(floor(1.5), math.floor(2.5), buffer)
            "#,
        )
        .unwrap();
    world
        .run_script("other.luau", "print(math.floor(1.5), type(buffer.readf64))")
        .unwrap();
    assert_eq!(world.take_prints(), ["mine\tmine\tmine too", "1\tfunction"]);
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
        if frame == 3 {
            assert!(
                events.errors.is_empty(),
                "a runaway is stopped after its trip"
            );
            continue;
        }
        assert_eq!(events.errors.len(), 1);
        let (system, error) = &events.errors[0];
        assert_eq!(system, "spin");
        let text = error.to_string();
        assert!(
            text.contains("instruction budget") && text.contains("spin.luau"),
            "{text}"
        );
    }
    assert_eq!(stats_of(&world, "spin").errors, 1);
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

/// Runs `f` on a thread of its own; fails the test if it has not finished within `limit` (a
/// script that holds the engine hostage would otherwise hang the test run).
fn within<R: Send + 'static>(limit: Duration, f: impl FnOnce() -> R + Send + 'static) -> R {
    let (done, result) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(f());
    });
    result
        .recv_timeout(limit)
        .unwrap_or_else(|_| panic!("still running after {limit:?}: the budget did not end it"))
}

/// Loops that catch a budget trip (in `pcall`, in `xpcall`'s handler, in coroutines) and try
/// again, as a system's, a setup script's or a group's callback body.
const CATCHERS: [&str; 5] = [
    "while true do pcall(function() while true do end end) end",
    "for _ = 1, 20 do pcall(function() while true do end end) end",
    "while true do xpcall(function() while true do end end, function() while true do end end) end",
    "while true do coroutine.resume(coroutine.create(function() while true do end end)) end",
    "while true do pcall(coroutine.wrap(function() while true do end end)) end",
];

/// The two ways a budget ends a callback: instructions, or time with the instruction budget
/// left at its standard size.
fn tight_budgets() -> [ScriptBudget; 2] {
    [
        ScriptBudget {
            instructions: 200_000,
            ..ScriptBudget::STANDARD
        },
        ScriptBudget {
            time: Duration::from_millis(100),
            setup_time: Duration::from_millis(100),
            ..ScriptBudget::STANDARD
        },
    ]
}

#[test]
fn a_caught_budget_trip_still_ends_a_systems_callback_and_counts_an_error() {
    for budget in tight_budgets() {
        for body in CATCHERS {
            let (errors, message) = within(Duration::from_secs(60), move || {
                let mut world = budgeted(budget);
                let source = format!("return system {{ run = function() {body} end }}");
                world
                    .add_script_system("catcher", "catcher.luau", &source)
                    .unwrap();
                let events = world.step(0.1).unwrap();
                let message = events.errors.first().map(|(_, e)| e.to_string());
                (stats_of(&world, "catcher").errors, message)
            });
            assert_eq!(errors, 1, "{body} under {budget:?}");
            let message = message.unwrap_or_default();
            assert!(message.contains("budget"), "{body}: {message}");
        }
    }
}

#[test]
fn a_caught_budget_trip_still_ends_a_setup_script() {
    for budget in tight_budgets() {
        for body in CATCHERS {
            let error = within(Duration::from_secs(60), move || {
                let mut world = budgeted(budget);
                world
                    .run_script("setup.luau", body)
                    .err()
                    .map(|e| e.to_string())
            });
            let error = error.unwrap_or_else(|| panic!("{body}: the setup script succeeded"));
            assert!(error.contains("budget"), "{body}: {error}");
        }
    }
}

#[test]
fn a_caught_budget_trip_still_ends_a_groups_callback() {
    for budget in tight_budgets() {
        for body in CATCHERS {
            let message = within(Duration::from_secs(60), move || {
                let mut world = budgeted(budget);
                let workspace = world.workspace();
                let room = world.create(ClassId::FOLDER, Some(workspace)).unwrap();
                world.set_execution_group(room, Some("spin")).unwrap();
                let source = format!("return system {{ run = function() {body} end }}");
                world
                    .add_group_script("spin", "groups/spin.luau", &source)
                    .unwrap();
                let events = world.step(0.1).unwrap();
                events.errors.first().map(|(_, e)| e.to_string())
            });
            let message = message.unwrap_or_else(|| panic!("{body}: the group succeeded"));
            assert!(message.contains("budget"), "{body}: {message}");
        }
    }
}

#[test]
fn a_runaway_system_is_stopped_after_its_trip_and_the_frames_go_on() {
    let mut world = spinning(ScriptBudget {
        time: Duration::from_millis(100),
        ..ScriptBudget::STANDARD
    });
    world.step(0.1).unwrap();
    let events = world.step(0.1).unwrap();
    assert_eq!(events.errors.len(), 1);
    assert_eq!(events.stopped.len(), 1, "the trip stops the system");
    assert_eq!(events.stopped[0].system, "spin");
    for frame in 3..=30 {
        let events = world.step(0.1).unwrap();
        assert!(
            events.errors.is_empty(),
            "frame {frame}: {:?}",
            events.errors
        );
        assert_eq!(
            events.prints,
            [frame.to_string()],
            "the other system still runs"
        );
    }
    assert_eq!(
        stats_of(&world, "spin").runs,
        2,
        "stopped systems are not called"
    );
    let stopped = world.stopped_systems();
    assert_eq!(stopped.len(), 1);
    assert_eq!(stopped[0].system, "spin");
    assert_eq!(stopped[0].frame, 1);
    assert!(
        stopped[0].reason.contains("time budget"),
        "{}",
        stopped[0].reason
    );
    assert!(
        world.stats_table().contains("stopped"),
        "{}",
        world.stats_table()
    );
    // Enabling it again resumes it (and it runs away again).
    let spin = world.system_id("spin").unwrap();
    world.set_system_enabled(spin, true).unwrap();
    assert!(world.stopped_systems().is_empty());
    assert_eq!(world.step(0.1).unwrap().errors.len(), 1);
    assert_eq!(world.stopped_systems().len(), 1);
}

#[test]
fn the_memory_limit_bounds_all_of_a_worlds_scripts_together() {
    let limit = 24 * 1024 * 1024;
    let mut world = budgeted(ScriptBudget {
        memory: limit,
        ..ScriptBudget::STANDARD
    });
    let workspace = world.workspace();
    for _ in 0..8 {
        let room = world.create(ClassId::FOLDER, Some(workspace)).unwrap();
        world.set_execution_group(room, Some("hoard")).unwrap();
    }
    // Each group keeps 4 MiB more every frame: eight of them want far more than the limit.
    world
        .add_group_script(
            "hoard",
            "groups/hoard.luau",
            "local kept = {}
            return system { run = function() table.insert(kept, string.rep('x', 4 * 1024 * 1024) .. #kept) end }",
        )
        .unwrap();
    let mut failures = 0;
    for _ in 0..4 {
        let events = world.step(0.1).unwrap();
        failures += events.errors.len();
        assert!(
            world.script_memory() <= limit,
            "the world's scripts hold {} bytes, over their limit of {limit}",
            world.script_memory()
        );
    }
    assert!(failures > 0, "eight hoarding groups never ran out");
}

#[test]
fn the_system_holding_the_memory_is_the_one_reported() {
    let mut world = budgeted(ScriptBudget {
        memory: 24 * 1024 * 1024,
        ..ScriptBudget::STANDARD
    });
    // `hog` keeps 1 MiB more every frame; `small` only makes garbage it drops.
    world
        .add_script_system(
            "hog",
            "systems/hog.luau",
            "local kept = {}
            return system { run = function() table.insert(kept, string.rep('x', 1024 * 1024) .. #kept) end }",
        )
        .unwrap();
    world
        .add_script_system(
            "small",
            "systems/small.luau",
            "return system { after = { 'hog' }, run = function()
                local t = {}
                for i = 1, 2000 do t[i] = { i } end
            end }",
        )
        .unwrap();
    let mut blamed = Vec::new();
    for _ in 0..60 {
        let events = world.step(0.1).unwrap();
        for (system, error) in &events.errors {
            blamed.push((system.clone(), error.to_string()));
        }
    }
    assert!(!blamed.is_empty(), "hog never ran out");
    for (system, message) in &blamed {
        assert_eq!(system, "hog", "{message}");
        assert!(message.contains("hog"), "{message}");
    }
    assert_eq!(stats_of(&world, "small").errors, 0);
    let stopped = world.stopped_systems();
    assert_eq!(stopped.len(), 1);
    assert_eq!(stopped[0].system, "hog");
    // With `hog` stopped and its memory released, `small` goes on.
    for _ in 0..10 {
        assert!(world.step(0.1).unwrap().errors.is_empty());
    }
    assert!(
        world.script_memory() < 8 * 1024 * 1024,
        "{}",
        world.script_memory()
    );
}

#[test]
fn print_through_the_global_table_is_collected_like_print() {
    let mut world = scripted(1);
    let out = printed(
        &mut world,
        "_G.print('through _G')\nprint(print == _G.print, rawequal(print, _G.print))",
    );
    assert_eq!(out, ["through _G", "true\ttrue"]);
}

/// What a script prints when it draws random numbers in setup and in a system each frame.
fn draws(world: &mut World, frames: usize) -> Vec<String> {
    let mut out = printed(
        world,
        "print(math.random(), math.random(1, 6), math.random(1000000))",
    );
    if world.system_id("dice").is_none() {
        world
            .add_script_system(
                "dice",
                "systems/dice.luau",
                "return system { parallel = true, run = function() print(math.random(1, 1000000)) end }",
            )
            .unwrap();
    }
    for _ in 0..frames {
        out.extend(world.step(0.1).unwrap().prints.clone());
    }
    out
}

#[test]
fn random_numbers_come_from_the_worlds_seed() {
    let run = |seed: u64, threads: usize, shuffle: Option<u64>| {
        let mut world = World::with_seed(threads, seed).unwrap();
        world.set_lane_shuffle(shuffle);
        draws(&mut world, 5)
    };
    let first = run(42, 1, None);
    assert_eq!(first.len(), 6);
    assert_eq!(
        run(42, 1, None),
        first,
        "the same seed draws the same numbers"
    );
    assert_eq!(run(42, 2, None), first, "on any thread count");
    assert_eq!(run(42, 8, Some(3)), first, "under a lane shuffle");
    assert_ne!(run(43, 1, None), first, "another seed draws others");
    let frames: std::collections::HashSet<&String> = first[1..].iter().collect();
    assert!(frames.len() > 1, "every frame draws anew: {first:?}");
}

#[test]
fn random_numbers_go_on_across_a_save_and_a_load() {
    let mut straight = World::with_seed(1, 7).unwrap();
    let expected = draws(&mut straight, 6);
    let mut first = World::with_seed(1, 7).unwrap();
    let before = draws(&mut first, 3);
    let mut file = Vec::new();
    first.save(&mut file).unwrap();
    let mut loaded = World::load_with_threads(file.as_slice(), 1).unwrap();
    loaded
        .add_script_system(
            "dice",
            "systems/dice.luau",
            "return system { parallel = true, run = function() print(math.random(1, 1000000)) end }",
        )
        .unwrap();
    let mut after = Vec::new();
    for _ in 0..3 {
        after.extend(loaded.step(0.1).unwrap().prints.clone());
    }
    assert_eq!([before, after].concat(), expected);
}

#[test]
fn math_random_refuses_an_empty_or_fractional_interval_and_a_reseed() {
    let mut world = scripted(1);
    for (call, expected) in [
        ("math.random(5, 1)", "empty"),
        ("math.random(0)", "empty"),
        ("math.random(1.5)", "whole"),
        ("math.randomseed(1)", "seed"),
    ] {
        let error = script_error(world.run_script("dice.luau", call));
        assert!(error.message.contains(expected), "{call}: {error}");
        assert_eq!(error.line, Some(1), "{call}: {error}");
    }
}

#[test]
fn an_innocent_system_that_runs_out_of_memory_another_holds_is_not_blamed() {
    let mut world = budgeted(ScriptBudget {
        memory: 24 * 1024 * 1024,
        ..ScriptBudget::STANDARD
    });
    // `hoarder` keeps 20 MiB once; `worker` needs 8 MiB for a moment every frame.
    world
        .add_script_system(
            "hoarder",
            "systems/hoarder.luau",
            "local kept = {}
            return system { run = function()
                if #kept == 0 then
                    for i = 1, 5 do kept[i] = buffer.create(4 * 1024 * 1024) end
                end
            end }",
        )
        .unwrap();
    world
        .add_script_system(
            "worker",
            "systems/worker.luau",
            "local n = 0
            return system { after = { 'hoarder' }, run = function()
                n += 1
                local scratch = buffer.create(8 * 1024 * 1024)
                print(buffer.len(scratch) > n)
            end }",
        )
        .unwrap();
    let events = world.step(0.1).unwrap();
    assert_eq!(events.errors.len(), 1, "{:?}", events.errors);
    let (system, error) = &events.errors[0];
    assert_eq!(system, "hoarder");
    let message = error.to_string();
    assert!(
        message.contains("`hoarder` holds") && message.contains("while `worker` ran"),
        "{message}"
    );
    assert_eq!(events.stopped.len(), 1);
    assert_eq!(events.stopped[0].system, "hoarder");
    assert_eq!(
        stats_of(&world, "worker").errors,
        0,
        "the worker takes no blame"
    );
    for _ in 0..3 {
        let events = world.step(0.1).unwrap();
        assert!(events.errors.is_empty(), "{:?}", events.errors);
        assert_eq!(events.prints, ["true"]);
    }
}

#[test]
fn a_budget_error_names_the_line_it_stopped_at() {
    for budget in tight_budgets() {
        let mut world = budgeted(budget);
        let error = script_error(world.run_script(
            "setup.luau",
            "local x = 0\nlocal function spin()\n    while true do x += 1 end\nend\nspin()",
        ));
        assert!(error.message.contains("budget"), "{error}");
        assert_eq!(error.line, Some(3), "{error}");
        world
            .add_script_system(
                "spin",
                "systems/spin.luau",
                "return system { run = function()\n    while true do end\nend }",
            )
            .unwrap();
        let events = world.step(0.1).unwrap();
        let text = events.errors[0].1.to_string();
        assert!(text.starts_with("systems/spin.luau:2: "), "{text}");
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
    let types = strata_script::types::component_definitions(world.store());
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
            strata_script::names::component_name_problem(name).is_some(),
            "`{name}` is a global a component could hide"
        );
    }
}

#[test]
fn printing_in_a_loop_keeps_a_bounded_amount_of_text_and_says_what_it_dropped() {
    let mut world = scripted(1);
    let lines = printed(
        &mut world,
        "local line = string.rep('x', 100000)
        for i = 1, 100 do print(line) end
        print('done')",
    );
    let kept: usize = lines.iter().map(String::len).sum();
    assert!(kept <= 4 * 1024 * 1024 + 200, "{kept} bytes kept");
    assert_eq!(lines.len(), 42, "41 lines of 100 kB fit, then the note");
    assert_eq!(
        lines.last().map(String::as_str),
        Some("[60 more printed lines dropped: a call keeps at most 4 MiB of printed text]")
    );
    // The next call starts afresh.
    assert_eq!(printed(&mut world, "print('again')"), ["again"]);
}
