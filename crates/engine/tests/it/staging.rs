//! Bulk work through the facade: a stage made by the world, a spawn staged with
//! `Scene::stage_spawn`, published by `Scene::commit`; refusals reserve and change nothing.

use strata::layers::store::{InitError, StageError};
use strata::prelude::*;

fn heated() -> (World, ComponentId, FieldId) {
    let mut world = World::with_seed(1, 9).unwrap();
    let heat = world
        .define(
            ComponentDef::new("Heat")
                .field(FieldDef::number("t", 1.0))
                .observed(true),
        )
        .unwrap();
    let t = world.field(heat, "t").unwrap();
    (world, heat, t)
}

fn fill(
    heat: ComponentId,
    t: FieldId,
) -> impl FnMut(&mut strata::layers::store::SpawnRows<'_>) -> Result<(), InitError> {
    move |rows| {
        for k in 0..rows.len() {
            rows.set_value(heat, k, t, Value::Number(10.0 + k as f64))?;
        }
        Ok(())
    }
}

#[test]
fn a_staged_spawn_set_and_despawn_publish_at_the_commit_and_reach_the_frame_events() {
    let (mut world, heat, t) = heated();
    let workspace = world.workspace();
    let mut stage = world.stage();
    let ticket = world
        .stage_spawn(
            &mut stage,
            4,
            ClassId::PART,
            Some(workspace),
            &[heat],
            fill(heat, t),
        )
        .unwrap();
    assert!(!world.is_live(ticket.first()), "reserved, not alive");
    let (published, _) = world.commit(&mut stage).unwrap();
    assert_eq!(published.spawned, 4);
    let spawned: Vec<InstanceId> = world.children(workspace).unwrap();
    assert_eq!(spawned.len(), 4);
    for (k, id) in spawned.iter().enumerate() {
        assert_eq!(world.get::<f64>(*id, heat, t).unwrap(), 10.0 + k as f64);
    }

    // A set over two of them and a despawn of another, in one stage.
    let members: Vec<InstanceRef> = spawned[..2]
        .iter()
        .map(|id| InstanceRef::of(world.arena(), *id).unwrap())
        .collect();
    let doomed = [InstanceRef::of(world.arena(), spawned[3]).unwrap()];
    let mut stage = world.stage();
    stage.set(&members, heat, vec![(t, Value::Number(99.0))]);
    stage.despawn(&doomed);
    world.commit(&mut stage).unwrap();
    assert_eq!(world.get::<f64>(spawned[0], heat, t).unwrap(), 99.0);
    assert!(!world.is_live(spawned[3]));

    let events = world.step(1.0 / 60.0).unwrap();
    let changed = events
        .components
        .iter()
        .filter(|e| matches!(e, StoreEvent::Changed { .. }))
        .count();
    assert_eq!(changed, 2, "{:?}", events.components);
    assert!(
        events
            .lifecycle
            .iter()
            .any(|e| matches!(e, Event::CreatedRange { .. }))
    );
}

#[test]
fn a_refused_staged_spawn_reserves_and_changes_nothing() {
    let (mut world, heat, t) = heated();
    let (other, _, _) = heated();
    let workspace = world.workspace();
    let before = world.state_hash();

    // A stage made by another world.
    let mut foreign = other.stage();
    let error = world
        .stage_spawn(
            &mut foreign,
            2,
            ClassId::PART,
            Some(workspace),
            &[heat],
            fill(heat, t),
        )
        .unwrap_err();
    assert!(
        matches!(error, WorldError::Stage(StageError::ForeignArena)),
        "{error}"
    );
    assert!(foreign.is_empty());

    // A parent that is gone.
    let parent = world.create(ClassId::FOLDER, Some(workspace)).unwrap();
    world.destroy(parent).unwrap();
    let after_destroy = world.state_hash();
    let mut stage = world.stage();
    assert!(
        world
            .stage_spawn(
                &mut stage,
                2,
                ClassId::PART,
                Some(parent),
                &[heat],
                fill(heat, t)
            )
            .is_err()
    );
    assert!(stage.is_empty());
    assert_eq!(world.state_hash(), after_destroy);
    world.commit(&mut stage).unwrap();
    assert_eq!(
        world.state_hash(),
        after_destroy,
        "an empty commit changes nothing"
    );
    assert_ne!(before, after_destroy);
}

/// Helpers that make queries and systems while the world is borrowed for changing need no
/// annotations and no borrow of the world for a query; the initializer of a staged spawn ends
/// in a plain `Ok(())`.
#[test]
fn the_facade_needs_no_annotations_and_no_world_borrow_to_make_a_query() {
    let mut world = World::with_threads(1).unwrap();
    let heat = world
        .define(ComponentDef::new("Heat").field(FieldDef::number("t", 0.0)))
        .unwrap();
    let t = world.field(heat, "t").unwrap();
    let mut stage = world.stage();
    world
        .stage_spawn(&mut stage, 3, ClassId::PART, None, &[heat], move |rows| {
            for k in 0..rows.len() {
                rows.set_value(heat, k, t, Value::Number(k as f64))?;
            }
            Ok(())
        })
        .unwrap();
    world.commit(&mut stage).unwrap();
    // A helper holding a query maker while it adds systems to the world it was handed.
    let query = |spec: QuerySpec| Query::new(spec);
    let add_warmer = |world: &mut World, name: &str| {
        let mut all = query(QuerySpec::new().with(heat)).unwrap();
        world
            .add_system(SystemSpec::new(name, move |ctx: &mut Ctx<'_>| {
                ctx.update_each::<f64>(&mut all, (0, t), |v| v + 1.0)?;
                Ok(())
            }))
            .unwrap();
    };
    add_warmer(&mut world, "warm");
    add_warmer(&mut world, "warm more");
    // The world's caching mode reaches queries made without it.
    world.set_query_caching(false);
    world.step(0.1).unwrap();
    let mut all = query(QuerySpec::new().with(heat)).unwrap();
    let ids = world.matches(&mut all).unwrap();
    assert!(!all.is_cached());
    // `get` gives the value, as a parallel context's does.
    let values: Vec<f64> = ids
        .iter()
        .map(|id| world.get::<f64>(*id, heat, t).unwrap())
        .collect();
    assert_eq!(values, [2.0, 3.0, 4.0]);
}
