//! Metamorphic properties of a world: pairs of runs that must end alike. Operations on
//! distinct instances commute; an add then a remove leaves no residue but ticks; a clone then
//! the clone's destruction leaves the original untouched; save, load, save writes the same
//! bytes; a snapshot then a restore is the identity; a cached query answers as a fresh one.

use crate::common::{Fixture, content, fixture, parts};
use proptest::prelude::*;
use strata::prelude::*;

fn save(world: &World) -> Vec<u8> {
    let mut file = Vec::new();
    world.save(&mut file).unwrap();
    file
}

/// An operation on one instance.
#[derive(Clone, Debug)]
enum Op {
    Write(i16),
    AddVelocity,
    RemoveHealth,
    Rename(u8),
    Tag,
}

fn apply(f: &mut Fixture, id: InstanceId, op: &Op) {
    match op {
        Op::Write(v) => {
            let _ = f.world.write(id, f.health, f.current, f64::from(*v));
        }
        Op::AddVelocity => {
            let _ = f.world.add(id, f.velocity, []);
        }
        Op::RemoveHealth => {
            let _ = f.world.remove(id, f.health);
        }
        Op::Rename(n) => {
            let _ = f.world.set_name(id, &format!("N{n}"));
        }
        Op::Tag => {
            let _ = f.world.tag(id, "t");
        }
    }
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        any::<i16>().prop_map(Op::Write),
        Just(Op::AddVelocity),
        Just(Op::RemoveHealth),
        any::<u8>().prop_map(Op::Rename),
        Just(Op::Tag),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn operations_on_distinct_instances_commute(a in prop::collection::vec(op(), 0..6), b in prop::collection::vec(op(), 0..6)) {
        let run = |a_first: bool| {
            let mut f = fixture(1);
            let ids = parts(&mut f, 2);
            let (first, second) = if a_first { ((ids[0], &a), (ids[1], &b)) } else { ((ids[1], &b), (ids[0], &a)) };
            for op in first.1 { apply(&mut f, first.0, op); }
            for op in second.1 { apply(&mut f, second.0, op); }
            content(&f.world)
        };
        prop_assert_eq!(run(true), run(false));
    }

    #[test]
    fn a_snapshot_then_a_restore_is_the_identity(ops in prop::collection::vec(op(), 0..12), picks in prop::collection::vec(0usize..3, 12)) {
        let mut f = fixture(1);
        let ids = parts(&mut f, 3);
        let before = (content(&f.world), save(&f.world));
        let snapshot = f.world.snapshot().unwrap();
        for (op, pick) in ops.iter().zip(&picks) {
            apply(&mut f, ids[*pick], op);
        }
        f.world.restore(&snapshot).unwrap();
        prop_assert_eq!(content(&f.world), before.0);
        prop_assert_eq!(save(&f.world), before.1);
    }
}

#[test]
fn an_add_then_a_remove_leaves_nothing_but_ticks() {
    let mut f = fixture(1);
    let ids = parts(&mut f, 2);
    let before = content(&f.world);
    f.world.add(ids[0], f.velocity, []).unwrap();
    assert!(f.world.remove(ids[0], f.velocity).unwrap());
    assert_eq!(content(&f.world), before);
    assert!(f.world.store().orphans().is_empty());
}

#[test]
fn a_clone_then_its_destruction_leaves_the_original_untouched() {
    let mut f = fixture(1);
    let ids = parts(&mut f, 3);
    let workspace = f.world.workspace();
    f.world.set_parent(ids[1], Some(ids[0])).unwrap();
    f.world.add(ids[0], f.velocity, []).unwrap();
    f.world.step(0.1).unwrap();
    let before = content(&f.world);
    let copy = f.world.clone_subtree(ids[0], Some(workspace)).unwrap();
    assert_ne!(content(&f.world), before);
    f.world.destroy(copy).unwrap();
    f.world.step(0.0).unwrap();
    f.world.step(0.0).unwrap();
    assert_eq!(content(&f.world), before);
}

#[test]
fn save_load_save_writes_the_same_bytes_after_frames() {
    let mut f = fixture(2);
    parts(&mut f, 5);
    for _ in 0..3 {
        f.world.step(0.1).unwrap();
    }
    let file = save(&f.world);
    let mut loaded = World::load(file.as_slice()).unwrap();
    // Rust components wait as orphans until defined again; define them, then compare.
    loaded
        .define(
            ComponentDef::new("Health")
                .field(FieldDef::number("current", 100.0))
                .observed(true),
        )
        .unwrap();
    loaded
        .define(ComponentDef::new("Velocity").field(FieldDef::vector("v", Vec3::ZERO)))
        .unwrap();
    assert_eq!(save(&loaded), file);
}
