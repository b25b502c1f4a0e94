//! A frame's result does not depend on the thread count: the same world and systems stepped
//! 100 frames on 1, 2 and 8 threads hash alike after every frame (`World::state_hash`, which
//! covers change ticks too), with parallel systems whose writes conflict, serial systems that
//! spawn and destroy, the fixed-step block and an interval system.

use strata::prelude::*;

fn world(threads: usize) -> World {
    let mut world = World::with_seed(threads, 0x5eed).unwrap();
    world.set_fixed_step(1.0 / 30.0, 4).unwrap();
    let heat = world
        .define(
            ComponentDef::new("Heat")
                .field(FieldDef::number("t", 20.0))
                .field(FieldDef::vector("flow", Vec3::ZERO))
                .observed(true),
        )
        .unwrap();
    let t = world.field(heat, "t").unwrap();
    let flow = world.field(heat, "flow").unwrap();
    let workspace = world.workspace();
    for k in 0..200 {
        let id = world.create(ClassId::PART, Some(workspace)).unwrap();
        world
            .add(id, heat, [(t, Value::Number(f64::from(k)))])
            .unwrap();
    }
    // Three parallel writers over the same rows: two write `t` (a conflict, ordered by hierarchy
    // only), one reads `t` and writes `flow`.
    for (name, factor, rank) in [("warm", 1.5, 0u32), ("cool", 0.75, 1), ("mix", 0.5, 2)] {
        let mut all = world.query(QuerySpec::new().with(heat)).unwrap();
        world
            .add_system(
                SystemSpec::parallel(name, move |ctx: &mut ParCtx<'_>| {
                    let frame = ctx.frame() as f64;
                    ctx.update_each::<f64>(&mut all, (0, t), |v| (v * factor + frame) % 1000.0)?;
                    Ok(())
                })
                .writes(heat, t)
                .with_hierarchy(rank),
            )
            .unwrap();
    }
    let mut flows = world.query(QuerySpec::new().with(heat)).unwrap();
    world
        .add_system(
            SystemSpec::parallel("flow", move |ctx: &mut ParCtx<'_>| {
                ctx.update::<Vec3, f64>(&mut flows, (0, flow), (0, t), |f, t| {
                    Vec3::new(f.x + *t as f32, f.y, f.z - 1.0)
                })?;
                Ok(())
            })
            .writes(heat, flow)
            .with_hierarchy(3),
        )
        .unwrap();
    // A serial system spawning and destroying by frame number.
    world
        .add_system(
            SystemSpec::new("churn", move |ctx: &mut Ctx<'_>| {
                let frame = ctx.frame();
                let workspace = ctx.workspace();
                let id = ctx.create(ClassId::PART, Some(workspace))?;
                ctx.add(id, heat, [(t, Value::Number(frame as f64))])?;
                let children = ctx.children(workspace)?;
                let victim = children[(frame as usize * 7) % children.len()];
                ctx.destroy(victim)?;
                Ok(())
            })
            .in_phase(Phase::PostUpdate),
        )
        .unwrap();
    let mut fixed = world.query(QuerySpec::new().with(heat)).unwrap();
    world
        .add_system(
            SystemSpec::new("fixed", move |ctx: &mut Ctx<'_>| {
                ctx.update_each::<f64>(&mut fixed, (0, t), |v| v + 0.25)?;
                Ok(())
            })
            .in_fixed_block(),
        )
        .unwrap();
    world
        .add_system(SystemSpec::parallel("slow", |_: &mut ParCtx<'_>| Ok(())).with_interval(0.1))
        .unwrap();
    world
}

#[test]
fn a_hundred_frames_hash_alike_on_one_two_and_eight_threads() {
    let mut worlds: Vec<World> = [1, 2, 8].into_iter().map(world).collect();
    let dts = [1.0 / 60.0, 1.0 / 30.0, 0.05, 1.0 / 144.0];
    for frame in 0..100 {
        let dt = dts[frame % dts.len()];
        let mut hashes = Vec::new();
        let mut conflicts = Vec::new();
        for world in &mut worlds {
            let events = world.step(dt).unwrap();
            assert!(events.errors.is_empty(), "{:?}", events.errors);
            conflicts.push(
                events
                    .commits
                    .iter()
                    .map(|c| c.conflicts.len())
                    .sum::<usize>(),
            );
            hashes.push(world.state_hash());
        }
        assert!(
            hashes.windows(2).all(|w| w[0] == w[1]),
            "frame {frame}: {hashes:?}"
        );
        assert!(conflicts.windows(2).all(|w| w[0] == w[1]));
        assert!(conflicts[0] > 0, "the writers do conflict");
    }
    let saves: Vec<Vec<u8>> = worlds
        .iter()
        .map(|w| {
            let mut file = Vec::new();
            w.save(&mut file).unwrap();
            file
        })
        .collect();
    assert!(saves.windows(2).all(|w| w[0] == w[1]));
}
