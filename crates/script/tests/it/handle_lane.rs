//! The handle path's fast lane: inside a `for inst, a, b in world:query{...}` loop of a serial
//! call, the current match's handles read and write their number, integer and boolean fields
//! in columns of the pass instead of resolving the instance in the world at every access.
//! What a script sees must not change: every later read and every API call meets the world as
//! the handles left it, a handle whose instance lost the component is an error, a handle kept
//! after its loop reads the world, a write the field cannot hold is refused where it is made,
//! and a call's handle writes before a failure stand.
//!
//! The differential property draws loop bodies from a set of statements and runs each twice
//! on worlds alike: as written, and with an API call that reads component values (a query's
//! count) before every handle access, which keeps every access off the lane. Prints, errors and the
//! world's content must agree.

use proptest::prelude::*;
use strata::prelude::*;
use strata_script::prelude::*;

use crate::common::{content, printed, scripted};

/// `scripted` with a component of every kind a column holds, and one it does not.
fn world(threads: usize) -> World {
    let mut world = scripted(threads);
    world
        .define_luau(
            "Counter",
            r#"return component { fields = { n = integer(0), on = boolean(false), label = text("") } }"#,
            None,
        )
        .unwrap();
    let report = world.sync_definitions();
    assert!(report.diagnostics.is_empty(), "{:?}", report.diagnostics);
    world
}

/// Spawns `n` parts with Position `{x = i}`, Velocity `{x = 1, y = i}` and Counter `{n = i}`;
/// every third part has no Velocity.
fn spawn(world: &mut World, n: usize) {
    world
        .run_script(
            "spawn.luau",
            &format!(
                "for i = 1, {n} do
                    local p = Instance.new('Part', world.workspace)
                    p.Name = 'p' .. i
                    p:AddComponent(Position, {{ x = i }})
                    if i % 3 ~= 0 then p:AddComponent(Velocity, {{ x = 1, y = i }}) end
                    p:AddComponent(Counter, {{ n = i }})
                end"
            ),
        )
        .unwrap();
}

#[test]
fn a_handle_write_in_a_loop_is_what_every_later_read_and_api_call_sees() {
    let mut world = world(1);
    spawn(&mut world, 4);
    let out = printed(
        &mut world,
        r#"
        local prev
        for inst, p, c in world:query({ with = { Position, Counter } }) do
            p.x += 10
            c.n += 1
            c.on = true
            -- The same handle, and the same field read back through the instance.
            print(inst.Name, p.x, inst:GetComponent(Position).x, c.n, c.on)
            -- The previous match's handle (not the current match's) reads the world, which
            -- holds what it was given a step before.
            if prev then print("prev", prev.x) end
            prev = p
        end
        -- An API call meets the world as the loop left it.
        local changed = 0
        for _, p in world:query({ with = { Position } }) do
            if p.x > 10 then changed += 1 end
        end
        print("after", changed)
        "#,
    );
    assert_eq!(
        out,
        [
            "p1\t11\t11\t2\ttrue",
            "p2\t12\t12\t3\ttrue",
            "prev\t11",
            "p3\t13\t13\t4\ttrue",
            "prev\t12",
            "p4\t14\t14\t5\ttrue",
            "prev\t13",
            "after\t4",
        ]
    );
}

#[test]
fn a_handle_whose_instance_lost_the_component_mid_loop_is_an_error_not_a_column_read() {
    let mut world = world(1);
    spawn(&mut world, 3);
    let out = printed(
        &mut world,
        r#"
        for inst, p in world:query({ with = { Position } }) do
            p.x = 100
            inst:RemoveComponent(Position)
            local ok, err = pcall(function() return p.x end)
            print(ok, string.find(tostring(err), "Position", 1, true) ~= nil)
            local ok2 = pcall(function() p.x = 5 end)
            print(ok2)
        end
        "#,
    );
    assert_eq!(out, ["false\ttrue", "false"].repeat(3));
}

#[test]
fn a_handle_kept_after_its_loop_reads_the_world_in_a_later_call() {
    let mut world = world(1);
    spawn(&mut world, 2);
    world
        .add_script_system(
            "keep",
            "keep.luau",
            "local kept = {}
            return system { run = function(world)
                if next(kept) == nil then
                    for inst, p in world:query({ with = { Position } }) do
                        p.x += 1
                        kept[inst.Name] = p
                    end
                    return
                end
                print(kept.p1.x, kept.p2.x)
                -- A loop over another query arms the lane for its own matches only.
                for _, c in world:query({ with = { Counter } }) do
                    print(kept.p1.x)
                    break
                end
            end }",
        )
        .unwrap();
    world.step(0.1).unwrap();
    let part = world.children(world.workspace()).unwrap()[0];
    let (position, x) = world.field_named("Position", "x").unwrap();
    assert_eq!(world.get::<f64>(part, position, x).unwrap(), 2.0);
    world.write(part, position, x, 40.0).unwrap();
    let events = world.step(0.1).unwrap();
    assert_eq!(events.prints, ["40\t3", "40"]);
}

#[test]
fn a_value_a_field_cannot_hold_is_refused_at_the_write_and_changes_nothing() {
    let mut world = world(1);
    spawn(&mut world, 1);
    let out = printed(
        &mut world,
        r#"
        for _, p, c in world:query({ with = { Position, Counter } }) do
            for _, write in {
                function() p.x = "far" end,
                function() c.n = 1.5 end,
                function() c.on = 1 end,
                function() c.label = 3 end,
                function() p.w = 1 end,
                function() p[1] = 1 end,
            } do
                local ok, err = pcall(write)
                print(ok, (string.gsub(tostring(err), "^.-:%d+: ", "")))
            end
            c.label = "ok"
            print(p.x, c.n, c.on, c.label)
        end
        "#,
    );
    insta::assert_snapshot!(out.join("\n"));
}

#[test]
fn a_calls_handle_writes_before_it_fails_stand() {
    let mut world = world(1);
    spawn(&mut world, 3);
    let result = world.run_script(
        "fail.luau",
        "for _, p in world:query({ with = { Position } }) do p.x = -1 end
        error('late failure')",
    );
    assert!(result.is_err());
    let out = printed(
        &mut world,
        "for inst, p in world:query({ with = { Position } }) do print(inst.Name, p.x) end",
    );
    assert_eq!(out, ["p1\t-1", "p2\t-1", "p3\t-1"]);
}

#[test]
fn a_system_that_writes_through_handles_marks_changed_rows_for_the_next_system() {
    let mut world = world(1);
    spawn(&mut world, 4);
    world
        .add_script_system(
            "push",
            "push.luau",
            "return system { run = function(world)
                for inst, p in world:query({ with = { Position } }) do
                    -- Parts below 3 move up; the others are written their own value.
                    if p.x < 3 then p.x += 1 else p.x = p.x end
                end
            end }",
        )
        .unwrap();
    world
        .add_script_system(
            "watch",
            "watch.luau",
            "return system { after = { 'push' }, run = function(world)
                local names = {}
                for inst in world:query({ with = { Position }, changed = { Position } }) do
                    table.insert(names, inst.Name)
                end
                print(world.frame, table.concat(names, ' '))
            end }",
        )
        .unwrap();
    // The first run of `watch` sees every part as changed (they were all added since).
    world.step(0.1).unwrap();
    // Frame 1 left 2, 3, 3, 4: in frame 2 only p1 moves (2 to 3); in frame 3 none does.
    let second = world.step(0.1).unwrap().prints.clone();
    let third = world.step(0.1).unwrap().prints.clone();
    assert_eq!(second.len(), 1);
    assert!(second[0].ends_with("\tp1"), "{second:?}");
    assert_eq!(third.len(), 1);
    assert!(third[0].ends_with('\t'), "{third:?}");
}

#[test]
fn a_loop_over_the_changed_matches_reads_and_writes_each_ones_current_values() {
    let mut world = world(1);
    spawn(&mut world, 8);
    world
        .add_script_system(
            "watch",
            "watch.luau",
            "return system { run = function(world)
                -- Names are read after the loop: a call that reaches the world ends the lane.
                local seen = {}
                for inst, p, v in world:query({ with = { Position, Velocity }, changed = { Position } }) do
                    v.y = p.x * 2
                    table.insert(seen, { inst, p.x })
                end
                for _, s in seen do print(s[1].Name, s[2]) end
            end }",
        )
        .unwrap();
    let first = world.step(0.1).unwrap().prints.clone();
    assert_eq!(
        first.len(),
        6,
        "every part with Velocity, as all were added: {first:?}"
    );
    let parts = world.children(world.workspace()).unwrap();
    let (position, x) = world.field_named("Position", "x").unwrap();
    let (velocity, y) = world.field_named("Velocity", "y").unwrap();
    for (k, value) in [(1, 20.0), (4, 50.0)] {
        world.write(parts[k], position, x, value).unwrap();
    }
    assert_eq!(world.step(0.1).unwrap().prints, ["p2\t20", "p5\t50"]);
    world.write(parts[0], position, x, 30.0).unwrap();
    world.write(parts[2], position, x, 99.0).unwrap();
    // parts[2] (p3) has no Velocity: only p1 matches.
    assert_eq!(world.step(0.1).unwrap().prints, ["p1\t30"]);
    let ys: Vec<f64> = [0, 1, 3, 4]
        .iter()
        .map(|k| world.get::<f64>(parts[*k], velocity, y).unwrap())
        .collect();
    assert_eq!(ys, [60.0, 40.0, 8.0, 100.0]);
}

#[test]
fn a_script_cannot_reach_the_lanes_functions_or_state_through_a_handle() {
    let mut world = world(1);
    spawn(&mut world, 2);
    let out = printed(
        &mut world,
        r#"
        for _, p in world:query({ with = { Position } }) do
            print(getmetatable(p), typeof(p), type(p))
            print(pcall(function() return rawget(p, "x") end))
            break
        end
        "#,
    );
    insta::assert_snapshot!(out.join("\n"));
}

#[test]
fn a_runaway_loop_on_the_lane_is_stopped_by_the_budget_and_its_writes_stand() {
    let mut world = world(1);
    world.set_script_budget(ScriptBudget {
        instructions: 100_000,
        ..ScriptBudget::STANDARD
    });
    spawn(&mut world, 3);
    world
        .add_script_system(
            "spin",
            "spin.luau",
            "return system { run = function(world)
                for _, p in world:query({ with = { Position } }) do
                    -- The trip raises again in the pcall's handler and after it: the loop
                    -- cannot catch its way past the budget.
                    while true do pcall(function() p.x += 1 end) end
                end
            end }",
        )
        .unwrap();
    let events = world.step(0.1).unwrap();
    assert_eq!(events.errors.len(), 1);
    let text = events.errors[0].1.to_string();
    assert!(text.contains("instruction budget"), "{text}");
    // The first part's writes made before the trip landed, as writes resolved in the world
    // would have; the loop never reached the others.
    let parts = world.children(world.workspace()).unwrap();
    let (position, x) = world.field_named("Position", "x").unwrap();
    let xs: Vec<f64> = parts
        .iter()
        .map(|p| world.get::<f64>(*p, position, x).unwrap())
        .collect();
    assert!(xs[0] > 1.0, "{xs:?}");
    assert_eq!(xs[1..], [2.0, 3.0]);
}

/// A statement of a generated loop body (`inst`, `p` (Position), `c` (Counter) and `prev`
/// (the previous match's Position handle, or nil) in scope; `acc` accumulates reads).
#[derive(Clone, Debug)]
enum Statement {
    Read(&'static str),
    Write(&'static str, i32),
    Add(&'static str, i32),
    ReadPrev,
    WritePrev(i32),
    Attribute(i32),
    Count,
    Name,
    GetAttribute,
    Through,
    BadWrite,
    Remove,
    Spawn,
}

/// The Luau of a statement; with `slow`, an API call precedes every handle access.
fn lua(statement: &Statement, slow: bool) -> String {
    let api = if slow {
        "local _ = world:query({ with = { Counter } }):count(); "
    } else {
        ""
    };
    let guard = |body: String| {
        format!(
            "do local ok, err = pcall(function() {body} end); if not ok then print('error', (string.gsub(tostring(err), '^.-:%d+: ', ''))) end end"
        )
    };
    match statement {
        Statement::Read(field) => guard(format!("{api}acc += {field}")),
        Statement::Write(field, k) => guard(format!("{api}{field} = {}", value(field, *k))),
        Statement::Add(field, k) => guard(format!(
            "{api}local now = {field}; {api}{field} = {}",
            add(field, *k)
        )),
        Statement::ReadPrev => guard(format!("if prev then {api}acc += prev.x end")),
        Statement::WritePrev(k) => guard(format!("if prev then {api}prev.y = {k} end")),
        Statement::Attribute(k) => format!("inst:SetAttribute('a', {k})"),
        Statement::Count => "acc += world:query({ with = { Counter } }):count()".to_owned(),
        Statement::Name => "acc += #inst.Name + world.frame".to_owned(),
        Statement::GetAttribute => "acc += inst:GetAttribute('a') or 0".to_owned(),
        Statement::Through => guard(format!(
            "{api}local h = inst:GetComponent(Position); {api}h.z = acc % 5; {api}acc += h.z"
        )),
        Statement::BadWrite => guard(format!("{api}p.x = 'far'")),
        Statement::Remove => "if c_n_odd(c) then inst:RemoveComponent(Counter) end".to_owned(),
        Statement::Spawn => {
            "if acc % 7 == 0 then local q = Instance.new('Part', world.workspace); q:AddComponent(Position, { x = acc }); q:AddComponent(Counter) end".to_owned()
        }
    }
}

/// A value for `field` from `k`.
fn value(field: &str, k: i32) -> String {
    match field {
        "c.on" => (k % 2 == 0).to_string(),
        _ => k.to_string(),
    }
}

/// `field` changed by `k`, from its value `now`.
fn add(field: &str, k: i32) -> String {
    match field {
        "c.on" => "not now".to_owned(),
        _ => format!("now + {k}"),
    }
}

/// A statement; with `changes`, also those that change attributes or structure (refused in
/// parallel code, where a call that makes one fails).
fn statement(changes: bool) -> impl Strategy<Value = Statement> {
    let field = prop::sample::select(vec!["p.x", "p.y", "c.n", "c.on"]);
    prop_oneof![
        4 => field.clone().prop_map(Statement::Read),
        4 => (field.clone(), -5..5i32).prop_map(|(f, k)| Statement::Write(f, k)),
        4 => (field, -5..5i32).prop_map(|(f, k)| Statement::Add(f, k)),
        2 => Just(Statement::ReadPrev),
        2 => (-5..5i32).prop_map(Statement::WritePrev),
        1 => (-5..5i32).prop_map(Statement::Attribute),
        1 => Just(Statement::Count),
        1 => Just(Statement::Name),
        1 => Just(Statement::GetAttribute),
        2 => Just(Statement::Through),
        1 => Just(Statement::BadWrite),
        1 => Just(Statement::Remove),
        1 => Just(Statement::Spawn),
    ]
    .prop_filter("a change parallel code may not make", move |s| {
        changes
            || !matches!(
                s,
                Statement::Attribute(_) | Statement::Remove | Statement::Spawn
            )
    })
}

/// The script of a generated body: one loop over Position and Counter, then a print of what
/// it read and of every part's fields.
fn script(body: &[Statement], slow: bool) -> String {
    let statements: Vec<String> = body.iter().map(|s| lua(s, slow)).collect();
    format!(
        "local function c_n_odd(c) local ok, n = pcall(function() return c.n end); return ok and n % 2 == 1 end
        local acc, prev = 0, nil
        for inst, p, c in world:query({{ with = {{ Position, Counter }} }}) do
            {}
            prev = p
        end
        print('acc', acc)",
        statements.join("\n            ")
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn the_lane_gives_what_resolving_every_access_in_the_world_gives(
        parts in 1usize..8,
        body in prop::collection::vec(statement(true), 1..10),
    ) {
        let run = |slow: bool| {
            let mut world = world(1);
            spawn(&mut world, parts);
            let result = world.run_script("body.luau", &script(&body, slow));
            let prints = world.take_prints();
            (result.map_err(|e| e.to_string()), prints, content(&world))
        };
        let (fast, slow) = (run(false), run(true));
        prop_assert_eq!(&fast.0, &slow.0);
        prop_assert_eq!(&fast.1, &slow.1);
        prop_assert_eq!(&fast.2, &slow.2);
    }

    /// The same inside a parallel system declaring writes of every field the bodies write:
    /// its handles read the established state and its own writes, lane or not, and what it
    /// writes commits after its wave.
    #[test]
    fn the_lane_of_a_parallel_system_gives_what_its_write_log_gives(
        parts in 1usize..8,
        body in prop::collection::vec(statement(false), 1..10),
        threads in 1usize..3,
    ) {
        let run = |slow: bool| {
            let mut world = world(threads);
            spawn(&mut world, parts);
            let source = format!(
                "return system {{ parallel = true,
                    writes = {{ Position = {{ 'x', 'y', 'z' }}, Counter = {{ 'n', 'on' }} }},
                    run = function(world)
                        {}
                    end }}",
                script(&body, slow)
            );
            world.add_script_system("body", "body.luau", &source).unwrap();
            let events = world.step(0.1).unwrap();
            let errors: Vec<String> =
                events.errors.iter().map(|(name, e)| format!("{name}: {e}")).collect();
            (errors, events.prints.clone(), content(&world))
        };
        let (fast, slow) = (run(false), run(true));
        prop_assert_eq!(&fast.0, &slow.0);
        prop_assert_eq!(&fast.1, &slow.1);
        prop_assert_eq!(&fast.2, &slow.2);
    }
}
