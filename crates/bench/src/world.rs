//! Strata's fixtures of the frame-loop workloads, through the engine facade (`strata::World`):
//! `schedule` (three systems swapping fields, on a 2-thread pool) and `frame_overhead` (a frame
//! of 100 systems that do nothing), registered through [`crate::head_to_head`] by
//! `query::Strata`.

use strata::prelude::*;

use crate::data::{EMPTY_SYSTEMS, schedule};
use crate::overlay::PARALLEL_THREADS;

/// The frame length both workloads step.
const DT: f64 = 1.0 / 60.0;

/// A world of the four groups of `schedule`, with its three systems: each is parallel and
/// swaps its two fields through its overlay (both written from the values established before
/// the frame's group of systems began).
pub fn schedule_world(group: u64) -> World {
    let mut world = match World::with_seed(PARALLEL_THREADS, 7) {
        Ok(world) => world,
        Err(error) => panic!("benchmark fixture: {error}"),
    };
    let fixture = |r: Result<ComponentId, WorldError>| match r {
        Ok(c) => c,
        Err(error) => panic!("benchmark fixture: {error}"),
    };
    let components = ["A", "B", "C", "D", "E"].map(|name| {
        fixture(world.define(ComponentDef::new(name).field(FieldDef::number("v", 0.0))))
    });
    let v = FieldId::from_index(0);
    let groups: [&[usize]; 4] = [&[0, 1], &[0, 1, 2], &[0, 1, 2, 3], &[0, 1, 2, 4]];
    let mut i = 0;
    for group_of in groups {
        for _ in 0..group {
            let id = world
                .create(ClassId::ENTITY, None)
                .unwrap_or_else(|e| panic!("{e}"));
            for &k in group_of {
                world
                    .add(
                        id,
                        components[k],
                        [(v, Value::Number(schedule::value(i, k as u64)))],
                    )
                    .unwrap_or_else(|e| panic!("{e}"));
            }
            i += 1;
        }
    }
    let swap = |world: &mut World, name: &str, x: usize, y: usize| {
        let (cx, cy) = (components[x], components[y]);
        let mut both = match world.query(QuerySpec::new().with(cx).with(cy)) {
            Ok(q) => q,
            Err(error) => panic!("benchmark fixture: {error}"),
        };
        let spec = SystemSpec::parallel(name, move |ctx: &mut ParCtx<'_>| {
            ctx.update::<f64, f64>(&mut both, (0, v), (1, v), |_, other| *other)?;
            ctx.update::<f64, f64>(&mut both, (1, v), (0, v), |_, other| *other)?;
            Ok(())
        })
        .writes(cx, v)
        .writes(cy, v);
        if let Err(error) = world.add_system(spec) {
            panic!("benchmark fixture: {error}");
        }
    };
    swap(&mut world, "ab", 0, 1);
    swap(&mut world, "cd", 2, 3);
    swap(&mut world, "ce", 2, 4);
    world
}

/// One frame of a world; panics on a system error (a benchmark that fails measures nothing).
pub fn frame(world: &mut World) -> usize {
    match world.step(DT) {
        Ok(events) => {
            assert!(events.errors.is_empty(), "{:?}", events.errors);
            events.commits.iter().map(|c| c.applied).sum()
        }
        Err(error) => panic!("benchmark frame: {error}"),
    }
}

/// A world of [`EMPTY_SYSTEMS`] serial systems that do nothing.
pub fn empty_world() -> World {
    let mut world = match World::with_seed(PARALLEL_THREADS, 7) {
        Ok(world) => world,
        Err(error) => panic!("benchmark fixture: {error}"),
    };
    for k in 0..EMPTY_SYSTEMS {
        let spec = SystemSpec::new(&format!("empty{k}"), |_: &mut Ctx<'_>| Ok(()));
        if let Err(error) = world.add_system(spec) {
            panic!("benchmark fixture: {error}");
        }
    }
    world
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schedule_frame_swaps_every_pair() {
        let mut world = schedule_world(100);
        let v = FieldId::from_index(0);
        let [a, b, c, d, e] = ["A", "B", "C", "D", "E"].map(|name| world.component(name).unwrap());
        let read = |world: &World, id: InstanceId, comp: ComponentId| -> Option<f64> {
            world.get::<f64>(id, comp, v).ok()
        };
        let ids: Vec<InstanceId> = world.store().set(a).unwrap().ids().to_vec();
        let before: Vec<[Option<f64>; 5]> = ids
            .iter()
            .map(|id| [a, b, c, d, e].map(|comp| read(&world, *id, comp)))
            .collect();
        let applied = frame(&mut world);
        assert_eq!(
            applied,
            4 * 100 * 2 + 2 * 100 * 2,
            "ab over all, cd and ce over a group each"
        );
        let conflicts: usize = world
            .events()
            .commits
            .iter()
            .map(|c| c.conflicts.len())
            .sum();
        assert_eq!(conflicts, 0, "cd and ce write C of different entities");
        for (id, [a0, b0, c0, d0, e0]) in ids.iter().zip(before) {
            let after = [a, b, c, d, e].map(|comp| read(&world, *id, comp));
            let c1 = match (d0, e0) {
                (Some(_), _) => d0,
                (_, Some(_)) => e0,
                _ => c0,
            };
            let d1 = d0.and(c0);
            let e1 = e0.and(c0);
            assert_eq!(after, [b0, a0, c1, d1, e1], "{id}");
        }
        // A second frame swaps everything back.
        frame(&mut world);
        assert_eq!(read(&world, ids[0], a), Some(schedule::value(0, 0)));
    }

    #[test]
    fn an_empty_frame_runs_every_system_once() {
        let mut world = empty_world();
        frame(&mut world);
        let stats = world.stats();
        assert_eq!(stats.len() as u64, EMPTY_SYSTEMS);
        assert!(stats.iter().all(|(_, _, s)| s.runs == 1));
    }
}
