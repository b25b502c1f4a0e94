//! Strata's fixture and routine of `rollback_frame` (registered through
//! [`crate::head_to_head`] by `query::Strata`): the frame of rollback netcode, a snapshot of the
//! whole world, the frame's work, and a restore to the snapshot.
//!
//! Each sample: `World::snapshot` (the arena's pages and the store's sets shared), then 1% of
//! the Positions written ([`data::ROLLBACK_WRITE_STRIDE`]), [`data::ROLLBACK_CHURN`] bodies
//! spawned and as many destroyed, then `World::restore` (the pages and sets the frame copied
//! dropped, the shared ones put back). The deferred cost of copy-on-write is inside the sample:
//! the frame's first write to each page and set copies it.

use std::hint::black_box;

use strata::prelude::*;

use crate::data::{self, ROLLBACK_CHURN, ROLLBACK_WINDOW};

const FIRST: FieldId = FieldId::from_index(0);

/// A world of `n` bodies with Position, Rotation and Velocity, and their ids.
pub struct Rollback {
    /// The world.
    pub world: World,
    /// The bodies, in creation order.
    pub ids: Vec<InstanceId>,
    /// The components: Position, Rotation, Velocity.
    pub components: [ComponentId; 3],
}

fn must<T>(result: Result<T, WorldError>) -> T {
    result.unwrap_or_else(|error| panic!("benchmark fixture: {error}"))
}

/// Spawns the `i`-th body.
fn spawn(world: &mut World, components: [ComponentId; 3], i: u64) -> InstanceId {
    let id = must(world.create(ClassId::ENTITY, None));
    let values = [
        Vec3::from(data::position(i)),
        Vec3::from(data::rotation(i)),
        Vec3::from(data::velocity(i)),
    ];
    for (c, v) in components.into_iter().zip(values) {
        must(world.add(id, c, [(FIRST, Value::Vector(v))]));
    }
    id
}

/// The world of `rollback_frame`.
pub fn rollback_world(n: u64) -> Rollback {
    let mut world = must(World::with_seed(1, 5));
    let components = ["Position", "Rotation", "Velocity"].map(|name| {
        must(world.define(ComponentDef::new(name).field(FieldDef::vector("v", Vec3::ZERO))))
    });
    let ids = (0..n).map(|i| spawn(&mut world, components, i)).collect();
    // Settle the frame's bookkeeping (drains) so every sample starts from a quiet world.
    must(world.step(0.0));
    Rollback {
        world,
        ids,
        components,
    }
}

/// The frame's work: every [`data::ROLLBACK_WRITE_STRIDE`]-th Position nudged, [`ROLLBACK_CHURN`]
/// bodies spawned and as many destroyed (those of [`data::window_destroyed`] for `frame`).
/// Returns (positions changed, spawned, destroyed).
pub fn frame_work(r: &mut Rollback, frame: u64) -> (u64, u64, u64) {
    let [position, _, _] = r.components;
    let mut changed = 0;
    for &id in data::rollback_written(&r.ids) {
        let p = must(r.world.get::<Vec3>(id, position, FIRST));
        changed += u64::from(must(r.world.write(
            id,
            position,
            FIRST,
            Vec3::new(p.x + 1.0, p.y, p.z),
        )));
    }
    let n = r.ids.len() as u64;
    for k in 0..ROLLBACK_CHURN {
        black_box(spawn(&mut r.world, r.components, n + k));
    }
    let mut destroyed = 0;
    for &id in data::window_destroyed(&r.ids, frame) {
        must(r.world.destroy(id));
        destroyed += 1;
    }
    (changed, ROLLBACK_CHURN, destroyed)
}

/// One sample: snapshot, the frame's work, restore.
pub fn rollback_once(r: &mut Rollback) -> (u64, u64, u64) {
    let snapshot = must(r.world.snapshot());
    let done = frame_work(r, 0);
    must(r.world.restore(&snapshot));
    done
}

/// The routine of `rollback_window`: [`ROLLBACK_WINDOW`] frames, each after a snapshot that is
/// kept, then `World::restore` to the oldest. Returns the work done over the frames and the
/// snapshots (dropped after the clock stops).
pub fn rollback_window_once(r: &mut Rollback) -> ((u64, u64, u64), Vec<WorldSnapshot>) {
    let mut window = Vec::with_capacity(ROLLBACK_WINDOW as usize);
    let mut done = (0, 0, 0);
    for frame in 0..ROLLBACK_WINDOW {
        window.push(must(r.world.snapshot()));
        let (changed, spawned, destroyed) = frame_work(r, frame);
        done = (done.0 + changed, done.1 + spawned, done.2 + destroyed);
    }
    must(r.world.restore(&window[0]));
    (done, window)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the world holds, but the counters that only move forward (the next id).
    fn content(world: &World) -> String {
        let mut out = format!(
            "{:?}\n{:?}\n",
            world.arena_image().nodes,
            world.store().tick()
        );
        for set in world.store().components() {
            let mut rows: Vec<usize> = (0..set.len()).collect();
            rows.sort_by_key(|row| set.ids()[*row]);
            for row in rows {
                out.push_str(&format!(
                    "{} {:?} {:?} {:?}\n",
                    set.ids()[row],
                    set.value(row, FIRST),
                    set.added_ticks().get(row).expect("a row of the set"),
                    set.changed_ticks().get(row).expect("a row of the set")
                ));
            }
        }
        out
    }

    #[test]
    fn a_rollback_frame_does_the_work_then_puts_the_world_back() {
        let mut r = rollback_world(2_000);
        let before = content(&r.world);
        let live = r.world.arena().live_count();
        let snapshot = r.world.snapshot().unwrap();
        let done = frame_work(&mut r, 0);
        assert_eq!(done, (20, ROLLBACK_CHURN, ROLLBACK_CHURN));
        assert_eq!(r.world.arena().live_count(), live);
        r.world.restore(&snapshot).unwrap();
        assert_eq!(content(&r.world), before);
        // And again: every sample does the same work on the same world.
        assert_eq!(rollback_once(&mut r), done);
        assert_eq!(content(&r.world), before);
    }
}
