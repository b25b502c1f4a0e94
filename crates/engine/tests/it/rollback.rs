//! Whole-world rollback: `World::snapshot` and `World::restore` against a reference that keeps
//! a full copy of everything observable at each snapshot, the caches that must rebuild after a
//! restore, refusals, and a place rolled back and re-run to the same hashes.

use crate::common::{Fixture, fixture};
use proptest::prelude::*;
use strata::WorldSnapshot;
use strata::prelude::*;

/// Everything a world shows that a restore must put back, in a comparable form. (Counters that
/// only move forward, the next id and the revision clock, are left out on purpose.)
#[derive(Debug, PartialEq)]
struct Observed {
    nodes: String,
    events: String,
    pending: usize,
    tick: u64,
    rows: Vec<String>,
    removals: Vec<Vec<u64>>,
    orphans: usize,
    frame: u64,
    carried: u64,
}

fn observe(world: &World) -> Observed {
    let image = world.arena_image();
    let mut rows = Vec::new();
    let mut removals = Vec::new();
    for set in world.store().components() {
        let mut ids: Vec<usize> = (0..set.len()).collect();
        ids.sort_by_key(|row| set.ids()[*row]);
        for row in ids {
            let values: Vec<String> = (0..set.def().fields().len())
                .map(|f| format!("{:?}", set.value(row, FieldId::from_index(f as u16))))
                .collect();
            rows.push(format!(
                "{} {} {} {} {:?} {:?}",
                set.def().name(),
                set.ids()[row],
                set.added_ticks().get(row).expect("a row of the set").0,
                set.changed_ticks().get(row).expect("a row of the set").0,
                values,
                set.dirty_mask(row)
            ));
        }
        let log = set.removal_log();
        removals.push(
            log.read_since(log.floor())
                .map(|read| read.map(|(_, r)| r.id.get()).collect())
                .unwrap_or_default(),
        );
    }
    Observed {
        nodes: format!("{:?}", image.nodes),
        events: format!("{:?}", world.pending_events()),
        pending: world.pending_reclamation(),
        tick: world.store().tick().0,
        rows,
        removals,
        orphans: world.store().orphans().len(),
        frame: world.frame(),
        carried: world.fixed_carried().to_bits(),
    }
}

#[derive(Clone, Debug)]
enum Op {
    Create(u16),
    Destroy(u16),
    AddVelocity(u16),
    RemoveHealth(u16),
    Write(u16, i16),
    Step,
    Drain,
    Snapshot,
    Restore(u8),
    /// A save, loaded back into a world of its own, which must hash as this one.
    SaveLoad,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => any::<u16>().prop_map(Op::Create),
        2 => any::<u16>().prop_map(Op::Destroy),
        2 => any::<u16>().prop_map(Op::AddVelocity),
        1 => any::<u16>().prop_map(Op::RemoveHealth),
        3 => (any::<u16>(), any::<i16>()).prop_map(|(p, v)| Op::Write(p, v)),
        2 => Just(Op::Step),
        1 => Just(Op::Drain),
        2 => Just(Op::Snapshot),
        2 => any::<u8>().prop_map(Op::Restore),
        1 => Just(Op::SaveLoad),
    ]
}

struct Harness {
    f: Fixture,
    saved: Vec<(WorldSnapshot, Observed)>,
    /// A query kept across everything, and one with a change filter.
    all: Query,
    changed: Query,
    reader: RemovalReader,
    /// The whole removal log of `Health` as of the reader's last read: the history it has
    /// read up to.
    read_up_to: Vec<u64>,
    restores: usize,
}

/// The whole removal log of a component, oldest first.
fn log_of(world: &World, component: ComponentId) -> Vec<u64> {
    let log = world.store().set(component).unwrap().removal_log();
    log.read_since(log.floor())
        .map(|read| read.map(|(_, r)| r.id.get()).collect())
        .unwrap()
}

impl Harness {
    fn new() -> Self {
        let mut f = fixture(2);
        f.world.set_fixed_step(0.04, 4).unwrap();
        let health = f.health;
        let current = f.current;
        let mut living = f.world.query(QuerySpec::new().with(health)).unwrap();
        f.world
            .add_system(
                SystemSpec::parallel("decay", move |ctx: &mut ParCtx<'_>| {
                    ctx.update_each::<f64>(&mut living, (0, current), |hp| hp - 1.0)?;
                    Ok(())
                })
                .writes(health, current),
            )
            .unwrap();
        crate::common::parts(&mut f, 5);
        let all = f.world.query(QuerySpec::new().with(health)).unwrap();
        let changed = f
            .world
            .query(QuerySpec::new().with(health).changed(health))
            .unwrap();
        let reader = f.world.removal_reader(health).unwrap();
        Self {
            f,
            saved: Vec::new(),
            all,
            changed,
            reader,
            read_up_to: Vec::new(),
            restores: 0,
        }
    }

    fn pick(&self, n: u16) -> Option<InstanceId> {
        let mut live: Vec<InstanceId> = self
            .f
            .world
            .arena_image()
            .nodes
            .iter()
            .map(|n| n.id)
            .filter(|id| *id != self.f.world.game() && *id != self.f.world.workspace())
            .collect();
        live.sort();
        (!live.is_empty()).then(|| live[usize::from(n) % live.len()])
    }

    fn apply(&mut self, op: &Op) {
        let world = &mut self.f.world;
        match *op {
            Op::Create(n) => {
                let parent = self.pick(n).unwrap_or(self.f.world.workspace());
                let world = &mut self.f.world;
                if let Ok(id) = world.create(ClassId::PART, Some(parent)) {
                    world.add(id, self.f.health, []).unwrap();
                }
            }
            Op::Destroy(n) => {
                if let Some(id) = self.pick(n) {
                    let _ = self.f.world.destroy(id);
                }
            }
            Op::AddVelocity(n) => {
                if let Some(id) = self.pick(n) {
                    let _ = self.f.world.add(id, self.f.velocity, []);
                }
            }
            Op::RemoveHealth(n) => {
                if let Some(id) = self.pick(n) {
                    let _ = self.f.world.remove(id, self.f.health);
                }
            }
            Op::Write(n, v) => {
                if let Some(id) = self.pick(n) {
                    let _ = self
                        .f
                        .world
                        .write(id, self.f.health, self.f.current, f64::from(v));
                }
            }
            Op::Step => {
                world.step(0.05).unwrap();
            }
            Op::Drain => {
                world.step(0.0).unwrap();
            }
            Op::Snapshot => {
                let snapshot = world.snapshot().unwrap();
                if self.saved.len() == 4 {
                    self.saved.remove(0);
                }
                self.saved.push((snapshot, observe(world)));
            }
            Op::SaveLoad => {
                let before = observe(world);
                let mut file = Vec::new();
                world.save(&mut file).unwrap();
                let loaded = World::load(file.as_slice()).unwrap();
                assert_eq!(loaded.hash(), world.hash(), "the save loads as the world");
                assert_eq!(observe(world), before, "a save changes nothing");
            }
            Op::Restore(k) => {
                if self.saved.is_empty() {
                    return;
                }
                let k = usize::from(k) % self.saved.len();
                let (snapshot, expected) = &self.saved[k];
                let next_id = world.next_id();
                world.restore(snapshot).unwrap();
                assert_eq!(&observe(world), expected, "the world is as it was");
                assert_eq!(world.next_id(), next_id, "ids never go back");
                // The changed query cannot trust its window: it selects every match once.
                let pass = world.pass(&mut self.changed).unwrap();
                assert!(pass.window_unavailable());
                let selected = pass.selection().map_or(pass.matches().len(), <[u32]>::len);
                assert_eq!(selected, pass.matches().len());
                // A reader whose history the restored log continues reads what it has not seen
                // (or, conservatively, says it missed removals); one that read removals the
                // restore took back must say it missed them.
                let log = log_of(world, self.f.health);
                let read = world.removed(&mut self.reader).unwrap();
                if log.starts_with(&self.read_up_to) {
                    if let Removals::Ids(ids) = &read {
                        let mut unseen: Vec<u64> = log[self.read_up_to.len()..].to_vec();
                        unseen.sort_unstable();
                        unseen.dedup();
                        let ids: Vec<u64> = ids.iter().map(|id| id.get()).collect();
                        assert_eq!(ids, unseen);
                    }
                } else {
                    assert!(matches!(read, Removals::Missed { .. }), "{read:?}");
                }
                self.read_up_to = log;
                self.restores += 1;
            }
        }
        // The long-lived query always agrees with a fresh one.
        let world = &mut self.f.world;
        let cached = world.matches(&mut self.all).unwrap();
        let mut fresh = world.query(QuerySpec::new().with(self.f.health)).unwrap();
        assert_eq!(cached, world.matches(&mut fresh).unwrap(), "{op:?}");
        world.pass(&mut self.changed).unwrap();
        let log = log_of(world, self.f.health);
        match world.removed(&mut self.reader).unwrap() {
            Removals::Ids(ids) => {
                let mut unseen: Vec<u64> = log[self.read_up_to.len()..].to_vec();
                unseen.sort_unstable();
                unseen.dedup();
                let ids: Vec<u64> = ids.iter().map(|id| id.get()).collect();
                assert_eq!(ids, unseen, "{op:?}");
            }
            Removals::Missed { .. } => panic!("{op:?}: no removal was missed"),
        }
        self.read_up_to = log;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn a_restore_gives_back_everything_a_full_copy_kept(ops in prop::collection::vec(op(), 1..60)) {
        let mut harness = Harness::new();
        for op in &ops {
            harness.apply(op);
        }
    }
}

#[test]
fn a_long_run_restores_often() {
    let mut harness = Harness::new();
    let mut seed = 0x5eed_u64;
    let mut next = || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as u16
    };
    let ops = [
        Op::Create(0),
        Op::Destroy(0),
        Op::AddVelocity(0),
        Op::RemoveHealth(0),
        Op::Write(0, 0),
        Op::Step,
        Op::Drain,
        Op::Snapshot,
        Op::Restore(0),
        Op::SaveLoad,
    ];
    for _ in 0..600 {
        let op = match ops[usize::from(next()) % ops.len()] {
            Op::Create(_) => Op::Create(next()),
            Op::Destroy(_) => Op::Destroy(next()),
            Op::AddVelocity(_) => Op::AddVelocity(next()),
            Op::RemoveHealth(_) => Op::RemoveHealth(next()),
            Op::Write(..) => Op::Write(next(), next() as i16),
            Op::Restore(_) => Op::Restore(next() as u8),
            ref other => other.clone(),
        };
        harness.apply(&op);
    }
    assert!(harness.restores > 20, "{} restores", harness.restores);
}

#[test]
fn a_snapshot_of_another_world_is_refused_and_changes_nothing() {
    let mut a = fixture(1);
    crate::common::parts(&mut a, 3);
    let b = fixture(1);
    let snapshot = b.world.snapshot().unwrap();
    let before = a.world.state_hash();
    assert!(matches!(
        a.world.restore(&snapshot),
        Err(WorldError::Store(
            strata::layers::store::StoreError::SnapshotFromOtherStore
        ))
    ));
    assert_eq!(a.world.state_hash(), before);
}

#[test]
fn a_dropped_stage_does_not_block_a_snapshot() {
    let mut f = fixture(1);
    let workspace = f.world.workspace();
    let mut stage = f.world.stage();
    let health = f.health;
    f.world
        .stage_spawn(
            &mut stage,
            3,
            ClassId::PART,
            Some(workspace),
            &[health],
            |_| Ok(()),
        )
        .unwrap();
    drop(stage);
    let snapshot = f.world.snapshot().unwrap();
    let made = f.world.create(ClassId::PART, Some(workspace)).unwrap();
    f.world.restore(&snapshot).unwrap();
    assert!(!f.world.is_live(made));
    f.world.step(0.1).unwrap();
    assert_eq!(
        f.world.children(workspace).unwrap(),
        Vec::<InstanceId>::new()
    );
}
