//! The runnable version of `docs/guides/world.md`: a world with components in Rust and Luau,
//! instances, destruction through reference policies, a copy, serial and parallel systems,
//! frames and what they report, and the world hash across thread counts.
//!
//! `cargo run -p strata --example world` runs it; `cargo test -p strata` runs it as a test.

#![allow(clippy::print_stdout, reason = "an example prints what it shows")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use strata::prelude::*;

const VELOCITY: &str = r#"return component {
    version = 1,
    fields = { v = vector(0, 0, 0) },
}"#;

/// The components the tour defines in Rust.
struct Ids {
    health: ComponentId,
    hp: FieldId,
    target: ComponentId,
    of: FieldId,
}

fn define(world: &mut World) -> Result<Ids, WorldError> {
    let health = world.define(
        ComponentDef::new("Health")
            .field(FieldDef::number("hp", 100.0))
            .observed(true),
    )?;
    let target = world.define(
        ComponentDef::new("Target").field(FieldDef::reference("of", RefPolicy::RemoveComponent)),
    )?;
    Ok(Ids {
        health,
        hp: world.field(health, "hp")?,
        target,
        of: world.field(target, "of")?,
    })
}

/// Instances, components, a reference policy and a copy.
fn scene(world: &mut World, ids: &Ids) -> Result<Vec<InstanceId>, Box<dyn std::error::Error>> {
    let workspace = world.workspace();
    let mut parts = Vec::new();
    for k in 0..4 {
        let part = world.create(ClassId::PART, Some(workspace))?;
        world.set_name(part, &format!("Part{k}"))?;
        world.add(part, ids.health, [(ids.hp, Value::Number(50.0 + k as f64))])?;
        world.tag(part, "enemy")?;
        parts.push(part);
    }
    // A hunter aims at Part0 through a reference field.
    let hunter = world.create_named("Part", Some(workspace))?;
    world.add(
        hunter,
        ids.target,
        [(ids.of, Value::Reference(Some(parts[0])))],
    )?;

    // Destroying Part0 reaches the store: its rows go, and the hunter's Target goes with it
    // (RemoveComponent).
    let report = world.destroy(parts[0])?;
    assert_eq!(report.destroyed, [parts[0]]);
    assert!(report.removed.contains(&(hunter, ids.target)));
    assert!(!world.has(hunter, ids.target));
    parts.remove(0);

    // A copy brings its component rows along.
    let copy = world.clone_subtree(parts[0], Some(workspace))?;
    assert_eq!(world.get::<f64>(copy, ids.health, ids.hp)?, 51.0);
    parts.push(copy);
    Ok(parts)
}

/// Systems: a Luau-defined component, a serial system, two parallel ones.
fn systems(world: &mut World, ids: &Ids) -> Result<Arc<AtomicUsize>, Box<dyn std::error::Error>> {
    // A Luau definition anywhere in the hierarchy is installed at the next sync.
    world.define_luau("Velocity", VELOCITY, None)?;
    world.sync_definitions();
    let (velocity, v) = world.field_named("Velocity", "v")?;

    // Serial: the whole scene, structure included.
    let mut bare = world.query(QuerySpec::new().with(ids.health).without(velocity))?;
    world.add_system(
        SystemSpec::new("give_velocity", move |ctx: &mut Ctx<'_>| {
            for id in ctx.matches(&mut bare)? {
                ctx.add(id, velocity, [(v, Value::Vector(Vec3::new(1.0, 0.0, 0.0)))])?;
            }
            Ok(())
        })
        .in_phase(Phase::PreUpdate),
    )?;

    // Parallel: both run together on the pool, each through its own overlay; they read what
    // was established before their group began and may write only what they declared.
    let health = ids.health;
    let hp = ids.hp;
    let mut living = world.query(QuerySpec::new().with(health))?;
    world.add_system(
        SystemSpec::parallel("regenerate", move |ctx: &mut ParCtx<'_>| {
            let dt = ctx.dt();
            ctx.update_each::<f64>(&mut living, (0, hp), |hp| (hp + 10.0 * dt).min(100.0))?;
            Ok(())
        })
        .writes(health, hp),
    )?;
    let mut moving = world.query(QuerySpec::new().with(velocity).with(health))?;
    world.add_system(
        SystemSpec::parallel("slow_the_hurt", move |ctx: &mut ParCtx<'_>| {
            ctx.update::<Vec3, f64>(&mut moving, (0, v), (1, hp), |v, hp| {
                let k = (*hp / 100.0) as f32;
                Vec3::new(v.x * k, v.y * k, v.z * k)
            })?;
            Ok(())
        })
        .writes(velocity, v)
        .reads(health),
    )?;

    // A fixed-step system: 0.1 s per step, at most 4 steps a frame.
    world.set_fixed_step(0.1, 4)?;
    let ticks = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&ticks);
    world.add_system(
        SystemSpec::new("tick", move |_: &mut Ctx<'_>| {
            counter.fetch_add(1, Ordering::Relaxed);
            Ok(())
        })
        .in_fixed_block(),
    )?;
    Ok(ticks)
}

/// The whole tour on a world of `threads` threads; returns the world's hash after it.
fn tour(threads: usize) -> Result<u64, Box<dyn std::error::Error>> {
    let mut world = World::with_seed(threads, 42)?;
    let ids = define(&mut world)?;
    let parts = scene(&mut world, &ids)?;
    let ticks = systems(&mut world, &ids)?;

    let destroyed = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&destroyed);
    world.on_lifecycle(move |event, _view| {
        if matches!(event, Event::Destroyed { .. } | Event::DestroyedMany(_)) {
            seen.fetch_add(1, Ordering::Relaxed);
        }
    });

    // Frame 0: the serial system adds Velocity in PreUpdate; the parallel pair runs in Update.
    let events = world.step(0.25)?;
    assert!(events.errors.is_empty());
    assert_eq!(events.fixed_steps, 2, "0.25 s holds two 0.1 s steps");
    assert_eq!(events.commits.len(), 1, "one group of parallel systems");
    assert!(events.commits[0].conflicts.is_empty());
    assert!((world.fixed_carried() - 0.05).abs() < 1e-9);
    assert_eq!(ticks.load(Ordering::Relaxed), 2);
    // Part1 had 51 hp: regenerate wrote 53.5, and slow_the_hurt read the 51 established
    // before the group.
    assert_eq!(world.get::<f64>(parts[0], ids.health, ids.hp)?, 53.5);
    let (velocity, v) = world.field_named("Velocity", "v")?;
    assert_eq!(world.get::<Vec3>(parts[0], velocity, v)?.x, 0.51);

    // The destruction in `scene` was announced at the end of frame 0.
    assert_eq!(destroyed.load(Ordering::Relaxed), 1);

    for _ in 0..3 {
        world.step(0.25)?;
    }
    println!("{}", world.stats_table());
    Ok(world.state_hash())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let one = tour(1)?;
    let two = tour(2)?;
    assert_eq!(one, two, "the same world for any thread count");
    println!("world hash {one:016x} on 1 and 2 threads");
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_tour_runs_and_gives_one_world_for_any_thread_count() {
        let hashes: Vec<u64> = [1, 2, 4].map(|t| super::tour(t).unwrap()).to_vec();
        assert!(hashes.windows(2).all(|w| w[0] == w[1]), "{hashes:?}");
    }
}
