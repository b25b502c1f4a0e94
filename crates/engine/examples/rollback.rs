//! The runnable version of `docs/guides/rollback.md`: a rollback loop (snapshot every frame,
//! roll back when a late input arrives, re-simulate to the present), a "try it and take it
//! back" search, and what caches do across a restore.
//!
//! `cargo run -p strata --example rollback` runs it; `cargo test -p strata` runs it as a test.

#![allow(clippy::print_stdout, reason = "an example prints what it shows")]

use std::collections::VecDeque;

use strata::prelude::*;

/// How many frames the loop can roll back.
const WINDOW: usize = 8;
const DT: f64 = 1.0 / 60.0;

/// A world with one player whose `Speed` the inputs set and a system that moves it.
fn game() -> Result<(World, InstanceId, ComponentId, FieldId), Box<dyn std::error::Error>> {
    let mut world = World::with_seed(1, 3)?;
    let body = world.define(
        ComponentDef::new("Body")
            .field(FieldDef::number("x", 0.0))
            .field(FieldDef::number("speed", 0.0)),
    )?;
    let x = world.field(body, "x")?;
    let speed = world.field(body, "speed")?;
    let workspace = world.workspace();
    let player = world.create(ClassId::PART, Some(workspace))?;
    world.add(player, body, [])?;
    let mut moving = world.query(QuerySpec::new().with(body))?;
    world.add_system(SystemSpec::new("move", move |ctx: &mut Ctx<'_>| {
        let dt = ctx.dt();
        ctx.update::<f64, f64>(&mut moving, (0, x), (0, speed), |x, speed| x + speed * dt)?;
        Ok(())
    }))?;
    Ok((world, player, body, speed))
}

/// One frame: apply the frame's input (a speed), then step.
fn simulate(
    world: &mut World,
    player: InstanceId,
    body: ComponentId,
    speed: FieldId,
    input: f64,
) -> Result<(), Box<dyn std::error::Error>> {
    world.write(player, body, speed, input)?;
    world.step(DT)?;
    Ok(())
}

fn rollback_loop() -> Result<(), Box<dyn std::error::Error>> {
    let (mut world, player, body, speed) = game()?;
    let (_, x) = world.field_named("Body", "x")?;
    // The inputs the game believed, frame by frame, and a snapshot taken before each frame.
    let mut inputs: Vec<f64> = Vec::new();
    let mut history: VecDeque<(u64, WorldSnapshot)> = VecDeque::new();
    for frame in 0..20u64 {
        if history.len() == WINDOW {
            history.pop_front();
        }
        history.push_back((world.frame(), world.snapshot()?));
        // The game predicts the remote input: the same as the last one.
        let predicted = inputs.last().copied().unwrap_or(1.0);
        inputs.push(predicted);
        simulate(&mut world, player, body, speed, predicted)?;

        // At frame 12 the real input of frame 9 arrives: it was 3, not the predicted 1.
        if frame == 12 {
            let late_frame = 9;
            inputs[late_frame] = 3.0;
            let (_, snapshot) = history
                .iter()
                .find(|(at, _)| *at == late_frame as u64)
                .ok_or("the late frame is outside the rollback window")?;
            world.restore(snapshot)?;
            for &input in &inputs[late_frame..] {
                simulate(&mut world, player, body, speed, input)?;
            }
            println!(
                "rolled back to frame {late_frame} and re-ran {} frames: x = {:.4}",
                frame + 1 - late_frame as u64,
                world.get::<f64>(player, body, x)?
            );
        }
    }
    // The same inputs from the start, without any rollback, give the same world.
    let (mut straight, player2, body2, speed2) = game()?;
    for input in &inputs {
        simulate(&mut straight, player2, body2, speed2, *input)?;
    }
    assert_eq!(
        world.get::<f64>(player, body, x)?,
        straight.get::<f64>(player2, body2, x)?
    );
    assert_eq!(
        world.state_hash(),
        straight.state_hash(),
        "rollback and a straight run agree"
    );
    println!(
        "after 20 frames both runs are at x = {:.4}",
        world.get::<f64>(player, body, x)?
    );
    Ok(())
}

/// Tries each of three moves on the live world and takes it back, keeping the best.
fn try_and_take_back() -> Result<(), Box<dyn std::error::Error>> {
    let (mut world, player, body, speed) = game()?;
    let (_, x) = world.field_named("Body", "x")?;
    let before = world.snapshot()?;
    let mut best = (f64::MIN, 0.0);
    for candidate in [0.5, 2.0, -1.0] {
        for _ in 0..10 {
            simulate(&mut world, player, body, speed, candidate)?;
        }
        let reached = world.get::<f64>(player, body, x)?;
        if reached > best.0 {
            best = (reached, candidate);
        }
        world.restore(&before)?;
    }
    assert_eq!(world.frame(), 0, "every try was taken back");
    println!(
        "the best speed is {} (x = {:.4} after 10 frames)",
        best.1, best.0
    );
    Ok(())
}

/// Caches across a restore: a query rebuilds, a removal reader says it missed history, and ids
/// issued after the snapshot are never issued again.
fn caches() -> Result<(), Box<dyn std::error::Error>> {
    let (mut world, _, body, _) = game()?;
    let workspace = world.workspace();
    let mut bodies = world.query(QuerySpec::new().with(body))?;
    let mut removed = world.removal_reader(body)?;
    let snapshot = world.snapshot()?;
    let extra = world.create(ClassId::PART, Some(workspace))?;
    world.add(extra, body, [])?;
    world.remove(extra, body)?;
    assert!(matches!(world.removed(&mut removed)?, Removals::Ids(ids) if ids == [extra]));
    world.restore(&snapshot)?;
    assert_eq!(
        world.matches(&mut bodies)?.len(),
        1,
        "the query sees the restored world"
    );
    assert!(matches!(
        world.removed(&mut removed)?,
        Removals::Missed { .. }
    ));
    let next = world.create(ClassId::PART, Some(workspace))?;
    assert!(next.get() > extra.get(), "ids only move forward");
    println!("after the restore: 1 body, the reader missed history, the next id is {next}");
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    rollback_loop()?;
    try_and_take_back()?;
    caches()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_guide_runs() {
        super::main().unwrap();
    }
}
