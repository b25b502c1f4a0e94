//! A first run of the game environment: a setup script, a handle-path system, a column-path system.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly on purpose")]
use strata::prelude::*;

const HEALTH: &str =
    r#"return component { fields = { current = number(100), max = number(100) } }"#;

#[test]
fn smoke() {
    let mut world = World::with_threads(2).unwrap();
    world.define_luau("Health", HEALTH, None).unwrap();
    world.sync_definitions();
    world
        .run_script(
            "setup.luau",
            r#"
            for i = 1, 3 do
                local p = Instance.new("Part", world.workspace)
                p.Name = "P" .. i
                local hp = p:AddComponent(Health, { current = 10 * i })
                print(p.Name, hp.current, p.Parent.Name)
            end
            "#,
        )
        .unwrap();
    assert_eq!(
        world.take_prints(),
        [
            "P1\t10\tWorkspace",
            "P2\t20\tWorkspace",
            "P3\t30\tWorkspace"
        ]
    );
    world
        .add_script_system(
            "regen",
            "systems/regen.luau",
            r#"
            return system {
                run = function(world, dt)
                    for inst, hp in world:query({ with = { Health } }) do
                        hp.current = math.min(hp.max, hp.current + 10)
                    end
                end,
            }
            "#,
        )
        .unwrap();
    world
        .add_script_system(
            "columns",
            "systems/columns.luau",
            r#"
            return system {
                phase = "PostUpdate",
                parallel = true,
                writes = { Health = { "current" } },
                run = function(world, dt)
                    for chunk in world:query({ with = { Health } }):chunks() do
                        local hp = chunk:write(Health)
                        local cur = hp.current
                        for row = chunk.first, chunk.last do
                            cur[row] = cur[row] + 1
                        end
                    end
                end,
            }
            "#,
        )
        .unwrap();
    let events = world.step(0.1).unwrap();
    assert!(events.errors.is_empty(), "{:?}", events.errors);
    let (health, current) = world.field_named("Health", "current").unwrap();
    let parts = world.children(world.workspace()).unwrap();
    let values: Vec<f64> = parts
        .iter()
        .map(|p| *world.get::<f64>(*p, health, current).unwrap())
        .collect();
    assert_eq!(values, [21.0, 31.0, 41.0]);
    world.step(0.1).unwrap();
    let values: Vec<f64> = parts
        .iter()
        .map(|p| *world.get::<f64>(*p, health, current).unwrap())
        .collect();
    assert_eq!(values, [32.0, 42.0, 52.0]);
}
