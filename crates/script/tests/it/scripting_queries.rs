//! Queries from Luau: the mirror of wrappers and handles (kept across passes, rebuilt when the
//! query's matches change, reusing what survives), change filters, removal readers, and the
//! column path (read marks nothing, write marks exactly the rows it changed, a column used
//! after a structural change is an error).
//!
//! Every test runs twice, as `cached::NAME` and `uncached::NAME`: the second with the world's
//! queries uncached (`Scene::set_query_caching(false)`), so every pass builds its matches afresh
//! and the mirror is rebuilt at every pass; what scripts see must not change.

use crate::common::{printed, script_error, scripted};
use strata::prelude::*;
use strata_script::prelude::*;

/// Spawns `n` parts under the workspace with Position `{x = i}` and Velocity `{x = 1}`.
fn spawn(world: &mut World, n: usize) {
    world
        .run_script(
            "spawn.luau",
            &format!(
                "for i = 1, {n} do
                    local p = Instance.new('Part', world.workspace)
                    p:AddComponent(Position, {{ x = i }})
                    p:AddComponent(Velocity, {{ x = 1 }})
                end"
            ),
        )
        .unwrap();
}

fn the_mirror_keeps_wrappers_and_handles_across_passes_and_reuses_them_after_a_rebuild(
    cached: bool,
) {
    let mut world = scripted(1);
    world.set_query_caching(cached);
    spawn(&mut world, 3);
    let out = printed(
        &mut world,
        r#"
        local q = world:query({ with = { Position, Velocity } })
        local seen = {}
        for inst, p, v in q do seen[inst.Id] = { inst, p, v } end
        local same = 0
        for inst, p, v in q do
            local s = seen[inst.Id]
            if rawequal(s[1], inst) and rawequal(s[2], p) and rawequal(s[3], v) then same += 1 end
        end
        print("unchanged pass", same)
        -- A new match moves the query's generation: the mirror is rebuilt and the three
        -- instances that survive keep their wrappers and handles.
        local extra = Instance.new("Part", world.workspace)
        extra:AddComponent(Position)
        extra:AddComponent(Velocity)
        local kept, count = 0, 0
        for inst, p, v in q do
            count += 1
            local s = seen[inst.Id]
            if s and rawequal(s[1], inst) and rawequal(s[2], p) then kept += 1 end
        end
        print("after a rebuild", count, kept)
        -- The wrapper the query hands out is the one the API gives elsewhere.
        print(rawequal(world.workspace:FindFirstChild(extra.Name), world.workspace:GetChildren()[1]))
        "#,
    );
    assert_eq!(out, ["unchanged pass\t3", "after a rebuild\t4\t3", "true"]);
}

fn the_iterators_for_one_two_three_and_four_terms_give_every_handle(cached: bool) {
    let mut world = scripted(1);
    world.set_query_caching(cached);
    world
        .run_script(
            "s.luau",
            "for i = 1, 2 do
                local p = Instance.new('Part', world.workspace)
                p:AddComponent(Position, { x = i })
                p:AddComponent(Velocity, { x = 10 * i })
                p:AddComponent(Health, { current = 100 * i })
                p:AddComponent(Target)
            end",
        )
        .unwrap();
    let out = printed(
        &mut world,
        r#"
        local sum = 0
        for _, p in world:query({ with = { Position } }) do sum += p.x end
        for _, p, v in world:query({ with = { Position, Velocity } }) do sum += p.x + v.x end
        for _, p, v, h in world:query({ with = { Position, Velocity, Health } }) do
            sum += p.x + v.x + h.current
        end
        for _, p, v, h, t in world:query({ with = { Position, Velocity, Health, Target } }) do
            sum += p.x + v.x + h.current + (t.of == nil and 1 or 0)
        end
        local n = 0
        for inst in world:query({ with = { Position } }):iter() do n += 1 end
        print(sum, n)
        "#,
    );
    // 3 + (3 + 30) + (3 + 30 + 300) + (3 + 30 + 300 + 2)
    assert_eq!(out, ["704\t2"]);
}

fn a_handle_always_reads_live_state_and_its_writes_are_checked_store_writes(cached: bool) {
    let mut world = scripted(1);
    world.set_query_caching(cached);
    spawn(&mut world, 1);
    let part = world.children(world.workspace()).unwrap()[0];
    let (position, x) = world.field_named("Position", "x").unwrap();
    world
        .add_script_system(
            "push",
            "push.luau",
            "return system { run = function(world)
                for _, p in world:query({ with = { Position } }) do p.x += 1 end
            end }",
        )
        .unwrap();
    world.step(0.1).unwrap();
    assert_eq!(world.get::<f64>(part, position, x).unwrap(), 2.0);
    // A write from Rust is what the handle reads next.
    world.write(part, position, x, 10.0).unwrap();
    world.step(0.1).unwrap();
    assert_eq!(world.get::<f64>(part, position, x).unwrap(), 11.0);
    let stats = world.stats();
    let (_, _, push) = stats.iter().find(|(_, n, _)| n == "push").unwrap();
    assert_eq!(push.field_writes, 2, "one checked write per run");
}

fn changed_and_added_filters_select_what_changed_since_the_systems_last_run(cached: bool) {
    let mut world = scripted(1);
    world.set_query_caching(cached);
    spawn(&mut world, 5);
    world
        .add_script_system(
            "watch",
            "watch.luau",
            r#"return system { phase = "Last", run = function(world)
                local added, changed = 0, {}
                for _ in world:query({ with = { Position }, added = { Position } }) do added += 1 end
                for inst, p in world:query({ with = { Position }, changed = { Position } }) do
                    table.insert(changed, p.x)
                end
                print(added, table.concat(changed, ","))
            end }"#,
        )
        .unwrap();
    let first = world.step(0.1).unwrap();
    assert_eq!(
        first.prints,
        ["5\t1,2,3,4,5"],
        "everything is new on the first run"
    );
    let second = world.step(0.1).unwrap();
    assert_eq!(second.prints, ["0\t"]);
    let parts = world.children(world.workspace()).unwrap();
    let (position, x) = world.field_named("Position", "x").unwrap();
    world.write(parts[3], position, x, 40.0).unwrap();
    let third = world.step(0.1).unwrap();
    assert_eq!(third.prints, ["0\t40"]);
}

fn a_removal_reader_that_fell_behind_the_log_says_it_missed_history(cached: bool) {
    let mut world = scripted(1);
    world.set_query_caching(cached);
    let n = strata::layers::store::REMOVAL_LOG_CAPACITY + 10;
    world
        .add_script_system(
            "reader",
            "reader.luau",
            r#"return system { run = function(world)
                local gone, why = world:removed(Position)
                print(gone and #gone or why)
            end }"#,
        )
        .unwrap();
    spawn(&mut world, n);
    assert_eq!(world.step(0.1).unwrap().prints, ["0"]);
    let position = world.component("Position").unwrap();
    for part in world.children(world.workspace()).unwrap() {
        world.remove(part, position).unwrap();
    }
    assert_eq!(world.step(0.1).unwrap().prints, ["missed"]);
    assert_eq!(
        world.step(0.1).unwrap().prints,
        ["0"],
        "and reads on from now"
    );
}

fn columns_read_and_write_a_chunk_and_only_changed_rows_are_marked(cached: bool) {
    let mut world = scripted(1);
    world.set_query_caching(cached);
    spawn(&mut world, 6);
    world
        .add_script_system(
            "columns",
            "columns.luau",
            r#"return system { run = function(world, dt)
                for chunk in world:query({ with = { Position, Velocity } }):chunks() do
                    local p = chunk:write(Position)
                    local v = chunk:read(Velocity)
                    local px, vx = p.x, v.x
                    for row = chunk.first, chunk.last do
                        -- Only even x values change.
                        if px[row] % 2 == 0 then px[row] += vx[row] end
                        vx[row] += 100 -- read access: never applied
                    end
                end
            end }"#,
        )
        .unwrap();
    world
        .add_script_system(
            "watch",
            "watch.luau",
            r#"return system { phase = "Last", run = function(world)
                local out = {}
                for _, p in world:query({ with = { Position }, changed = { Position } }) do
                    table.insert(out, p.x)
                end
                local v = {}
                for _, vel in world:query({ with = { Velocity }, changed = { Velocity } }) do
                    table.insert(v, vel.x)
                end
                print(table.concat(out, ","), #v)
            end }"#,
        )
        .unwrap();
    assert_eq!(
        world.step(0.1).unwrap().prints,
        ["1,3,3,5,5,7\t6"],
        "first run: all new"
    );
    // x: 1,3,3,5,5,7 has no even value left: nothing changes, nothing is marked.
    assert_eq!(world.step(0.1).unwrap().prints, ["\t0"]);
    let stats = world.stats();
    let (_, _, columns) = stats.iter().find(|(_, n, _)| n == "columns").unwrap();
    assert_eq!(
        columns.field_writes, 3,
        "three rows changed on the first frame, none after"
    );
}

fn a_chunk_gives_its_range_count_and_instances(cached: bool) {
    let mut world = scripted(1);
    world.set_query_caching(cached);
    spawn(&mut world, 4);
    let out = printed(
        &mut world,
        r#"
        local rows, names = 0, 0
        for chunk in world:query({ with = { Position } }):chunks() do
            rows += chunk.count
            assert(chunk.last - chunk.first + 1 == chunk.count)
            for row = chunk.first, chunk.last do
                if chunk.instances[row]:IsAlive() then names += 1 end
            end
        end
        print(rows, names)
        "#,
    );
    assert_eq!(out, ["4\t4"]);
}

fn a_column_used_after_a_structural_change_is_an_error_not_a_wrong_read(cached: bool) {
    for change in [
        "Instance.new('Part', world.workspace):AddComponent(Position)",
        "world.workspace:GetChildren()[1]:Destroy()",
        "world.workspace:GetChildren()[1]:RemoveComponent(Velocity)",
        "world.workspace:GetChildren()[1]:Clone()",
    ] {
        let mut world = scripted(1);
        world.set_query_caching(cached);
        spawn(&mut world, 3);
        let source = format!(
            "local x
            for chunk in world:query({{ with = {{ Position }} }}):chunks() do
                x = chunk:read(Position).x
            end
            {change}
            print(x[1])"
        );
        let error = script_error(world.run_script("stale.luau", &source));
        assert_eq!(error.line, Some(6), "{change}: {error}");
        assert!(error.message.contains("stale"), "{change}: {error}");
    }
}

fn a_chunks_instances_are_made_when_first_read_and_go_stale_with_its_columns(cached: bool) {
    let mut world = scripted(1);
    world.set_query_caching(cached);
    spawn(&mut world, 3);
    let out = printed(
        &mut world,
        r#"
        local q = world:query({ with = { Position } })
        for chunk in q:chunks() do
            local list = chunk.instances
            print(#list, list == chunk.instances, list[2]:GetComponent(Position).x)
        end
        local kept
        for chunk in q:chunks() do kept = chunk end
        Instance.new('Part', world.workspace):AddComponent(Position)
        print(pcall(function() return kept.instances end))
        "#,
    );
    assert_eq!(out.len(), 2, "{out:?}");
    assert_eq!(out[0], "3	true	2");
    assert!(
        out[1].starts_with("false	") && out[1].contains("stale"),
        "{}",
        out[1]
    );
}

fn column_writes_are_applied_before_the_next_api_call_sees_the_world(cached: bool) {
    let mut world = scripted(1);
    world.set_query_caching(cached);
    spawn(&mut world, 2);
    let out = printed(
        &mut world,
        r#"
        for chunk in world:query({ with = { Position } }):chunks() do
            local x = chunk:write(Position).x
            for row = chunk.first, chunk.last do x[row] = 50 + row end
            -- A handle read inside the loop sees the column writes already.
            print(chunk.instances[chunk.first]:GetComponent(Position).x)
        end
        "#,
    );
    assert_eq!(out, ["51"]);
}

/// Taking a column of one component applies the pending column writes of that component
/// (from any query) first, and leaves another component's pending until a call that may read
/// them: every write lands once, whatever order the columns were taken and written in.
fn a_column_taken_sees_its_components_pending_writes_and_every_write_lands(cached: bool) {
    let mut world = scripted(1);
    world.set_query_caching(cached);
    spawn(&mut world, 3);
    let out = printed(
        &mut world,
        r#"
        local others = {}
        for other in world:query({ with = { Position } }):chunks() do
            table.insert(others, other)
        end
        for chunk in world:query({ with = { Position, Velocity } }):chunks() do
            local px = chunk:write(Position).x
            for row = chunk.first, chunk.last do px[row] += 10 end
            -- Velocity's column: Position's writes stay pending, and keep being written.
            local vx = chunk:write(Velocity).x
            for row = chunk.first, chunk.last do
                px[row] += vx[row]
                vx[row] = px[row] * 2
            end
            -- Another query's Position column, taken with nothing else reaching the world in
            -- between, sees this one's writes.
            local other = others[1]
            local x = other:read(Position).x
            local seen = {}
            for row = other.first, other.last do table.insert(seen, x[row]) end
            print(table.concat(seen, " "))
        end
        "#,
    );
    assert_eq!(out, ["12 13 14"]);
    let (position, x) = world.field_named("Position", "x").unwrap();
    let (velocity, vx) = world.field_named("Velocity", "x").unwrap();
    for (k, part) in world
        .children(world.workspace())
        .unwrap()
        .iter()
        .enumerate()
    {
        let moved = k as f64 + 1.0 + 11.0;
        assert_eq!(world.get::<f64>(*part, position, x).unwrap(), moved);
        assert_eq!(world.get::<f64>(*part, velocity, vx).unwrap(), moved * 2.0);
    }
}

fn a_column_of_a_field_that_is_not_a_number_integer_or_boolean_is_an_error(cached: bool) {
    let mut world = scripted(1);
    world.set_query_caching(cached);
    world
        .run_script(
            "s.luau",
            "Instance.new('Part', world.workspace):AddComponent(Target)",
        )
        .unwrap();
    let error = script_error(world.run_script(
        "bad.luau",
        "for chunk in world:query({ with = { Target } }):chunks() do\n local t = chunk:read(Target).of\nend",
    ));
    assert_eq!(error.line, Some(2), "{error}");
    // Named: the cached and the uncached run compare with the one snapshot.
    insta::assert_snapshot!(
        "a_column_of_a_field_that_is_not_a_number_integer_or_boolean_is_an_error",
        error.to_string()
    );
}

fn a_bad_value_in_a_write_column_is_reported_once_naming_the_column_row_and_loop(cached: bool) {
    let mut world = scripted(1);
    world.set_query_caching(cached);
    spawn(&mut world, 3);
    // Caught by a pcall: one clean message, at the chunk loop, naming the column, the row and
    // the line that took the column; nothing of the loop's writes is applied, and nothing is
    // raised again afterwards.
    let out = printed(
        &mut world,
        r#"local ok, message = pcall(function()
    for chunk in world:query({ with = { Position } }):chunks() do
        local x = chunk:write(Position).x
        x[1] = 10
        x[2] = "oops"
    end
end)
print(ok, message)
local xs = {}
for _, p in world:query({ with = { Position } }) do table.insert(xs, p.x) end
print(table.concat(xs, ","))"#,
    );
    assert_eq!(out.len(), 2, "{out:?}");
    let message = out[0].strip_prefix("false\t").unwrap_or(&out[0]);
    assert!(message.starts_with("test.luau:2: "), "{message}");
    for part in ["`Position.x`", "row 2", "a string", "line 3"] {
        assert!(message.contains(part), "{part}: {message}");
    }
    assert!(
        !message.contains("strata:") && !message.contains("traceback"),
        "{message}"
    );
    assert_eq!(out[1], "1,2,3");
    // Uncaught, in a system: the run fails at the loop's line; the next run, which writes
    // nothing, does not fail again on the value the column was left holding.
    world
        .add_script_system(
            "writer",
            "systems/writer.luau",
            r#"local runs = 0
return system { run = function(world)
    runs += 1
    for chunk in world:query({ with = { Position } }):chunks() do
        local x = chunk:write(Position).x
        if runs == 1 then x[1] = true end
    end
end }"#,
        )
        .unwrap();
    let events = world.step(0.1).unwrap();
    assert_eq!(events.errors.len(), 1, "{:?}", events.errors);
    let text = events.errors[0].1.to_string();
    assert!(
        text.starts_with("systems/writer.luau:4: ") && text.contains("`Position.x`"),
        "{text}"
    );
    assert!(
        text.contains("row 1") && text.contains("a boolean"),
        "{text}"
    );
    let events = world.step(0.1).unwrap();
    assert!(events.errors.is_empty(), "{:?}", events.errors);
}

fn a_new_removal_reader_sees_the_removals_of_the_frame_it_first_runs_in(cached: bool) {
    let mut world = scripted(1);
    world.set_query_caching(cached);
    world
        .run_script(
            "setup.luau",
            "for i = 1, 4 do
                local p = Instance.new('Part', world.workspace)
                p.Name = 'P' .. i
                p:AddComponent(Health)
            end",
        )
        .unwrap();
    // Each frame, a system early in the frame removes Health from the next part.
    world
        .add_script_system(
            "remover",
            "systems/remover.luau",
            "local n = 0
            return system { phase = 'First', run = function(world)
                n += 1
                world.workspace:FindFirstChild('P' .. n):RemoveComponent(Health)
            end }",
        )
        .unwrap();
    let watcher = |label: &str| {
        format!(
            "return system {{ phase = 'Last', run = function(world)
                local names = {{}}
                for _, inst in world:removed(Health) do table.insert(names, inst.Name) end
                print('{label}: ' .. table.concat(names, ','))
            end }}"
        )
    };
    world
        .add_script_system("early", "systems/early.luau", &watcher("early"))
        .unwrap();
    let events = world.step(0.1).unwrap();
    assert_eq!(events.prints, ["early: P1"]);
    world.step(0.1).unwrap();
    // A reader made in the third frame: the second frame's removal is history it never had.
    world
        .add_script_system("late", "systems/late.luau", &watcher("late"))
        .unwrap();
    let events = world.step(0.1).unwrap();
    assert_eq!(events.prints, ["early: P3", "late: P3"]);
}

fn the_column_writes_of_a_failed_call_are_dropped_and_never_applied_later(cached: bool) {
    let mut world = scripted(1);
    world.set_query_caching(cached);
    spawn(&mut world, 2);
    world
        .add_script_system(
            "flaky",
            "systems/flaky.luau",
            r#"local runs = 0
return system { run = function(world)
    runs += 1
    for chunk in world:query({ with = { Position } }):chunks() do
        local x = chunk:write(Position).x
        if runs == 1 then
            x[1] = 99
            error("gave up")
        end
    end
end }"#,
        )
        .unwrap();
    let events = world.step(0.1).unwrap();
    assert_eq!(events.errors.len(), 1, "{:?}", events.errors);
    let events = world.step(0.1).unwrap();
    assert!(events.errors.is_empty(), "{:?}", events.errors);
    let out = printed(
        &mut world,
        "local xs = {}\nfor _, p in world:query({ with = { Position } }) do table.insert(xs, p.x) end\nprint(table.concat(xs, ','))",
    );
    assert_eq!(out, ["1,2"], "the failed run's write never lands");
}

fn a_column_taken_again_holds_the_stored_values_however_many_rows_changed(cached: bool) {
    let mut world = scripted(1);
    world.set_query_caching(cached);
    spawn(&mut world, 40);
    // The column is taken, then rows are written through handles (one row, then every row),
    // and the column taken again must hold what the store holds, row by row.
    let out = printed(
        &mut world,
        r#"
        local q = world:query({ with = { Position } })
        local function column()
            for chunk in q:chunks() do return chunk:read(Position).x end
        end
        local function check(label)
            local x, n, bad = column(), 0, 0
            for inst, p in q do
                n += 1
                if x[n] ~= p.x then bad += 1 end
            end
            print(label, n, bad, x[1], x[n])
        end
        check("first")
        local first = true
        for _, p in q do
            if first then p.x = -1; first = false end
        end
        check("one row")
        for _, p in q do p.x = p.x * 10 end
        check("every row")
        "#,
    );
    assert_eq!(
        out,
        [
            "first	40	0	1	40",
            "one row	40	0	-1	40",
            "every row	40	0	-10	400"
        ]
    );
}

fn a_column_taken_again_after_some_rows_changed_from_rust_holds_every_stored_value(cached: bool) {
    let mut world = scripted(1);
    world.set_query_caching(cached);
    spawn(&mut world, 200);
    let sum = "local total = 0
        for chunk in world:query({ with = { Position } }):chunks() do
            local x = chunk:read(Position).x
            for row = chunk.first, chunk.last do total += x[row] * row end
        end
        print(total)";
    let parts = world.children(world.workspace()).unwrap();
    let (position, x) = world.field_named("Position", "x").unwrap();
    let expected = |world: &World| -> f64 {
        parts
            .iter()
            .enumerate()
            .map(|(k, id)| world.get::<f64>(*id, position, x).unwrap() * (k + 1) as f64)
            .sum()
    };
    let mut seen = Vec::new();
    // None, one, a few (set row by row in one Luau loop), and most rows (refilled) changed.
    for changed in [0usize, 1, 8, 150] {
        for id in parts.iter().step_by(200 / changed.max(1)).take(changed) {
            let now = world.get::<f64>(*id, position, x).unwrap();
            world.write(*id, position, x, now + 1000.0).unwrap();
        }
        let out = printed(&mut world, sum);
        seen.push((out[0].parse::<f64>().unwrap(), expected(&world)));
    }
    for (got, want) in seen {
        assert_eq!(got, want);
    }
}

fn a_query_within_a_root_matches_the_root_and_its_descendants_as_they_move(cached: bool) {
    let mut world = scripted(1);
    world.set_query_caching(cached);
    let out = printed(
        &mut world,
        r#"
        local a = Instance.new("Folder", world.workspace)
        local b = Instance.new("Folder", world.workspace)
        a:AddComponent(Position, { x = 100 })
        for i = 1, 3 do
            Instance.new("Part", a):AddComponent(Position, { x = i })
            Instance.new("Part", b):AddComponent(Position, { x = 10 * i })
        end
        local function sum(root)
            local total = 0
            for chunk in world:query({ with = { Position }, within = root }):chunks() do
                local x = chunk:read(Position).x
                for row = chunk.first, chunk.last do total += x[row] end
            end
            return total
        end
        print(sum(a), sum(b))
        -- A part moved from b to a leaves b's matches and joins a's.
        b:GetChildren()[1].Parent = a
        print(sum(a), sum(b))
        "#,
    );
    assert_eq!(out, ["106\t60", "116\t50"]);
}

/// `cached::NAME` and `uncached::NAME` tests of each listed `fn NAME(cached: bool)`.
macro_rules! cached_and_uncached {
    ($($name:ident),* $(,)?) => {
        mod cached {
            $(
                #[test]
                fn $name() {
                    super::$name(true);
                }
            )*
        }
        mod uncached {
            $(
                #[test]
                fn $name() {
                    super::$name(false);
                }
            )*
        }
    };
}

cached_and_uncached!(
    the_mirror_keeps_wrappers_and_handles_across_passes_and_reuses_them_after_a_rebuild,
    the_iterators_for_one_two_three_and_four_terms_give_every_handle,
    a_handle_always_reads_live_state_and_its_writes_are_checked_store_writes,
    changed_and_added_filters_select_what_changed_since_the_systems_last_run,
    a_removal_reader_that_fell_behind_the_log_says_it_missed_history,
    columns_read_and_write_a_chunk_and_only_changed_rows_are_marked,
    a_chunk_gives_its_range_count_and_instances,
    a_column_used_after_a_structural_change_is_an_error_not_a_wrong_read,
    column_writes_are_applied_before_the_next_api_call_sees_the_world,
    a_column_taken_sees_its_components_pending_writes_and_every_write_lands,
    a_column_of_a_field_that_is_not_a_number_integer_or_boolean_is_an_error,
    a_bad_value_in_a_write_column_is_reported_once_naming_the_column_row_and_loop,
    a_new_removal_reader_sees_the_removals_of_the_frame_it_first_runs_in,
    the_column_writes_of_a_failed_call_are_dropped_and_never_applied_later,
    a_column_taken_again_holds_the_stored_values_however_many_rows_changed,
    a_chunks_instances_are_made_when_first_read_and_go_stale_with_its_columns,
    a_query_within_a_root_matches_the_root_and_its_descendants_as_they_move,
    a_column_taken_again_after_some_rows_changed_from_rust_holds_every_stored_value,
);

#[test]
fn every_test_runs_cached_and_uncached() {
    let source = include_str!("scripting_queries.rs");
    let attribute = concat!("#[", "test]");
    let tests = source.lines().filter(|line| *line == attribute).count();
    assert_eq!(tests, 1, "only this check is a test of its own");
    for line in source.lines() {
        if let Some(rest) = line.strip_prefix("fn ")
            && let Some((name, args)) = rest.split_once('(')
            && args.starts_with("cached: bool)")
        {
            let listed = format!("    {name},");
            assert!(
                source.lines().any(|l| l == listed),
                "{name} runs one way only"
            );
        }
    }
}
