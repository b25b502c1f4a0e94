//! Differential test: a bulk operation does what the scalar operations it stands for do.
//!
//! Two worlds start alike. One applies each operation in bulk: a staged spawn, set, remove or
//! despawn published by `Stage::commit`, `Store::insert_many`, `Arena::create_many` or
//! `Arena::destroy_many`. The other applies the same operation one instance at a time through
//! `Arena::create`, `Store::add`, `Store::write`, `Store::remove` and a destroy per instance.
//! After every operation the two must agree, ids mapped between them, on:
//!
//! - state: the live instances with their parents, and every row's values;
//! - events: the store's events as a multiset, and the instances the arena's events report
//!   created and destroyed;
//! - observer calls: the instances each component's observer was told were added and removed
//!   (as multisets), its activations and deactivations, and a mirror of each set kept from
//!   those calls alone, which must also equal the set.
//!
//! Ticks and row positions are not compared: a bulk operation takes one tick and compacts
//! rows its own way, which is what makes it cheaper.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use proptest::prelude::*;
use strata_arena::{Arena, ClassId, Event, InstanceId, Vec3};
use strata_component_store::{
    ComponentDef, ComponentId, FieldDef, FieldId, InstanceRef, Observer, Stage, Store, StoreEvent,
    Value,
};

const N: FieldId = FieldId::from_index(0);
const V: FieldId = FieldId::from_index(1);

/// What one component's observer was told.
#[derive(Clone, Debug, Default, PartialEq)]
struct Calls {
    added: Vec<InstanceId>,
    removed: Vec<InstanceId>,
    activated: usize,
    deactivated: usize,
    /// The set's members, kept from the calls alone.
    mirror: BTreeSet<InstanceId>,
}

struct Side {
    arena: Arena,
    store: Store,
    components: [ComponentId; 2],
    calls: [Arc<Mutex<Calls>>; 2],
    /// The arena's reports since the last check: created and destroyed ids.
    created: Vec<InstanceId>,
    destroyed: Vec<InstanceId>,
}

fn observer(calls: &Arc<Mutex<Calls>>) -> Observer {
    let (added, removed, on, off) = (
        Arc::clone(calls),
        Arc::clone(calls),
        Arc::clone(calls),
        Arc::clone(calls),
    );
    Observer::new()
        .on_added(move |set, rows| {
            let mut calls = added.lock().unwrap();
            for row in rows {
                let id = set.ids()[row];
                calls.added.push(id);
                assert!(calls.mirror.insert(id), "{id} added twice");
            }
        })
        .on_removed(move |set, rows| {
            let mut calls = removed.lock().unwrap();
            for row in rows {
                let id = set.ids()[row];
                calls.removed.push(id);
                assert!(calls.mirror.remove(&id), "{id} removed while absent");
            }
        })
        .on_activated(move |_| on.lock().unwrap().activated += 1)
        .on_deactivated(move |_| off.lock().unwrap().deactivated += 1)
}

impl Side {
    fn new(seed: &Seed) -> Self {
        let mut arena = Arena::standard().with_seed(7);
        let mut store = Store::new();
        let def = |name: &str| {
            ComponentDef::new(name)
                .field(FieldDef::number("n", 0.0))
                .field(FieldDef::vector("v", Vec3::ONE))
                .observed(true)
        };
        let a = store.install(def("A"), arena.classes()).unwrap();
        let b = store.install(def("B"), arena.classes()).unwrap();
        let calls = [Arc::default(), Arc::default()];
        store.observe(a, observer(&calls[0])).unwrap();
        store.observe(b, observer(&calls[1])).unwrap();
        let mut ids = Vec::new();
        for (k, &(parent, holds, n)) in seed.instances.iter().enumerate() {
            let parent = (k > 0 && parent % 3 != 0).then(|| ids[usize::from(parent) % k]);
            let class = if k % 2 == 0 {
                ClassId::FOLDER
            } else {
                ClassId::PART
            };
            let id = arena.create(class, parent).unwrap();
            let at = InstanceRef::of(&arena, id).unwrap();
            for (bit, c) in [a, b].into_iter().enumerate() {
                if holds & (1 << bit) != 0 {
                    store.add(at, class, c, [(N, Value::Number(n))]).unwrap();
                }
            }
            ids.push(id);
        }
        let mut side = Side {
            arena,
            store,
            components: [a, b],
            calls,
            created: Vec::new(),
            destroyed: Vec::new(),
        };
        side.settle();
        side.store.drain_events();
        for calls in &side.calls {
            let mut calls = calls.lock().unwrap();
            calls.added.clear();
            calls.removed.clear();
        }
        side.created.clear();
        side.destroyed.clear();
        side
    }

    /// Every live instance, in id order.
    fn live(&self) -> Vec<InstanceId> {
        let mut ids: Vec<InstanceId> = self
            .arena
            .image()
            .nodes
            .iter()
            .map(|node| node.id)
            .collect();
        ids.sort();
        ids
    }

    fn at(&self, id: InstanceId) -> InstanceRef {
        InstanceRef::of(&self.arena, id).unwrap()
    }

    /// Destroys `id` (when still live) and tells the store, as the engine does.
    fn destroy(&mut self, id: InstanceId) {
        if !self.arena.is_live(id) {
            return;
        }
        let destruction = self.arena.destroy(id).unwrap();
        self.store.on_destroyed(&destruction.doomed);
    }

    /// Drains the arena twice (reclaiming slots), keeping what its events report.
    fn settle(&mut self) {
        for _ in 0..2 {
            let drained = self.arena.drain().unwrap();
            for event in &drained.events {
                match event {
                    Event::Created { id, .. } => self.created.push(*id),
                    Event::CreatedRange { first, count, .. } => {
                        let first = first.get();
                        for k in 0..u64::from(*count) {
                            self.created.push(InstanceId::new(first + k).unwrap());
                        }
                    }
                    Event::CreatedList { ids, .. } => self.created.extend(ids.iter().copied()),
                    Event::Destroyed { subtree } => {
                        self.destroyed.extend(subtree.as_slice().iter().copied());
                    }
                    Event::DestroyedMany(batch) => {
                        self.destroyed.extend(batch.destroyed.iter().copied());
                    }
                    _ => {}
                }
            }
            self.store.on_reclaimed(&drained.reclaimed);
        }
    }
}

/// An operation, with instances picked by position among the live ones.
#[derive(Clone, Debug)]
enum Op {
    Spawn {
        count: usize,
        parent: Option<u16>,
        holds: u8,
        n: f64,
    },
    Set {
        pick: Vec<u16>,
        b: bool,
        n: f64,
    },
    Remove {
        pick: Vec<u16>,
        b: bool,
    },
    Despawn {
        pick: Vec<u16>,
    },
    InsertMany {
        pick: Vec<u16>,
        b: bool,
        n: f64,
    },
    CreateMany {
        count: usize,
        parent: Option<u16>,
    },
    DestroyMany {
        pick: Vec<u16>,
    },
}

#[derive(Clone, Debug)]
struct Seed {
    /// Per instance: parent pick, which components it holds (bits), a value.
    instances: Vec<(u16, u8, f64)>,
}

fn value() -> impl Strategy<Value = f64> {
    // Few distinct values, so equal writes (which change nothing) are common.
    (0..6u8).prop_map(f64::from)
}

fn op() -> impl Strategy<Value = Op> {
    let pick = || proptest::collection::vec(any::<u16>(), 0..12);
    prop_oneof![
        (
            1usize..12,
            proptest::option::of(any::<u16>()),
            0u8..4,
            value()
        )
            .prop_map(|(count, parent, holds, n)| Op::Spawn {
                count,
                parent,
                holds,
                n
            }),
        (pick(), any::<bool>(), value()).prop_map(|(pick, b, n)| Op::Set { pick, b, n }),
        (pick(), any::<bool>()).prop_map(|(pick, b)| Op::Remove { pick, b }),
        pick().prop_map(|pick| Op::Despawn { pick }),
        (pick(), any::<bool>(), value()).prop_map(|(pick, b, n)| Op::InsertMany { pick, b, n }),
        (1usize..10, proptest::option::of(any::<u16>()))
            .prop_map(|(count, parent)| Op::CreateMany { count, parent }),
        pick().prop_map(|pick| Op::DestroyMany { pick }),
    ]
}

fn seed() -> impl Strategy<Value = Seed> {
    proptest::collection::vec((any::<u16>(), 0u8..4, value()), 1..30)
        .prop_map(|instances| Seed { instances })
}

/// Both worlds, and the map from the bulk world's ids to the scalar world's.
struct Pair {
    bulk: Side,
    scalar: Side,
    ids: BTreeMap<InstanceId, InstanceId>,
    /// How often each kind of report was compared non-empty, by name.
    reached: BTreeMap<&'static str, usize>,
}

impl Pair {
    fn new(seed: &Seed) -> Self {
        let bulk = Side::new(seed);
        let scalar = Side::new(seed);
        let ids = bulk.live().into_iter().zip(scalar.live()).collect();
        Pair {
            bulk,
            scalar,
            ids,
            reached: BTreeMap::new(),
        }
    }

    /// The picked live instances of both worlds (distinct, in pick order).
    fn picked(&self, pick: &[u16]) -> Vec<(InstanceId, InstanceId)> {
        let live = self.bulk.live();
        let mut out: Vec<(InstanceId, InstanceId)> = Vec::new();
        if live.is_empty() {
            return out;
        }
        for p in pick {
            let id = live[usize::from(*p) % live.len()];
            if !out.iter().any(|(b, _)| *b == id) {
                out.push((id, self.ids[&id]));
            }
        }
        out
    }

    fn parent(&self, parent: Option<u16>) -> Option<(InstanceId, InstanceId)> {
        let live = self.bulk.live();
        let p = parent?;
        let id = *live.get(usize::from(p) % live.len().max(1))?;
        // Only folders take children of every class the test spawns.
        (self.bulk.arena.class(id).unwrap() == ClassId::FOLDER).then(|| (id, self.ids[&id]))
    }

    fn apply(&mut self, op: &Op) {
        match op {
            Op::Spawn {
                count,
                parent,
                holds,
                n,
            } => self.spawn(*count, *parent, *holds, *n),
            Op::Set { pick, b, n } => {
                let (cb, cs) = self.component(*b);
                let picked = self.staged(pick, |stage, members| {
                    stage.set(members, cb, vec![(N, Value::Number(*n))]);
                });
                for (_, id) in picked {
                    let at = self.scalar.at(id);
                    if self.scalar.store.has(at, cs) {
                        self.scalar.store.write(at, cs, N, *n).unwrap();
                    } else {
                        let class = self.scalar.arena.class(id).unwrap();
                        self.scalar
                            .store
                            .add(at, class, cs, [(N, Value::Number(*n))])
                            .unwrap();
                    }
                }
            }
            Op::Remove { pick, b } => {
                let (cb, cs) = self.component(*b);
                let picked = self.staged(pick, |stage, members| {
                    stage.remove(members, cb);
                });
                for (_, id) in picked {
                    let at = self.scalar.at(id);
                    if self.scalar.store.has(at, cs) {
                        self.scalar.store.remove(at, cs).unwrap();
                    }
                }
            }
            Op::Despawn { pick } => {
                let picked = self.staged(pick, |stage, members| {
                    stage.despawn(members);
                });
                for (_, id) in picked {
                    self.scalar.destroy(id);
                }
            }
            Op::InsertMany { pick, b, n } => {
                // One class per call: the picked parts that lack the component.
                let (cb, cs) = self.component(*b);
                let picked: Vec<(InstanceId, InstanceId)> = self
                    .picked(pick)
                    .into_iter()
                    .filter(|(id, _)| {
                        self.bulk.arena.class(*id).unwrap() == ClassId::PART
                            && !self.bulk.store.has(self.bulk.at(*id), cb)
                    })
                    .collect();
                let ats: Vec<InstanceRef> =
                    picked.iter().map(|(id, _)| self.bulk.at(*id)).collect();
                self.bulk
                    .store
                    .insert_many(&ats, ClassId::PART, cb)
                    .unwrap()
                    .fill(N, (0..ats.len()).map(|k| n + k as f64))
                    .unwrap();
                for (k, (_, id)) in picked.iter().enumerate() {
                    let at = self.scalar.at(*id);
                    self.scalar
                        .store
                        .add(at, ClassId::PART, cs, [(N, Value::Number(n + k as f64))])
                        .unwrap();
                }
            }
            Op::CreateMany { count, parent } => {
                let parent = self.parent(*parent);
                let made = self
                    .bulk
                    .arena
                    .create_many(ClassId::PART, parent.map(|p| p.0), *count)
                    .unwrap();
                for (id, _) in made {
                    let twin = self
                        .scalar
                        .arena
                        .create(ClassId::PART, parent.map(|p| p.1))
                        .unwrap();
                    self.ids.insert(id, twin);
                }
            }
            Op::DestroyMany { pick } => {
                let picked = self.picked(pick);
                let ids: Vec<InstanceId> = picked.iter().map(|(id, _)| *id).collect();
                let destruction = self.bulk.arena.destroy_many(&ids).unwrap();
                self.bulk.store.on_destroyed(&destruction.doomed);
                for (_, id) in picked {
                    self.scalar.destroy(id);
                }
            }
        }
    }

    /// Stages one bulk operation over the picked instances of the bulk world (`stage_op`,
    /// given the stage and the members) and commits it; returns the picked pairs, for the
    /// scalar side to follow.
    fn staged(
        &mut self,
        pick: &[u16],
        stage_op: impl FnOnce(&mut Stage, &[InstanceRef]),
    ) -> Vec<(InstanceId, InstanceId)> {
        let picked = self.picked(pick);
        let members: Vec<InstanceRef> = picked.iter().map(|(id, _)| self.bulk.at(*id)).collect();
        let mut stage = Stage::new(&self.bulk.arena, &self.bulk.store);
        stage_op(&mut stage, &members);
        stage
            .commit(&mut self.bulk.arena, &mut self.bulk.store)
            .unwrap();
        picked
    }

    fn component(&self, b: bool) -> (ComponentId, ComponentId) {
        let k = usize::from(b);
        (self.bulk.components[k], self.scalar.components[k])
    }

    fn spawn(&mut self, count: usize, parent: Option<u16>, holds: u8, n: f64) {
        let parent = self.parent(parent);
        let with: Vec<usize> = (0..2).filter(|bit| holds & (1 << bit) != 0).collect();
        let bulk_components: Vec<ComponentId> =
            with.iter().map(|&k| self.bulk.components[k]).collect();
        let mut stage = Stage::new(&self.bulk.arena, &self.bulk.store);
        let first = bulk_components.first().copied();
        let ticket = stage
            .spawn(
                &mut self.bulk.arena,
                count,
                ClassId::PART,
                parent.map(|p| p.0),
                &bulk_components,
                move |rows| {
                    if let Some(c) = first {
                        for k in 0..rows.len() {
                            rows.set_value(c, k, N, Value::Number(n + k as f64))?;
                        }
                    }
                    Ok::<(), strata_component_store::StoreError>(())
                },
            )
            .unwrap();
        stage
            .commit(&mut self.bulk.arena, &mut self.bulk.store)
            .unwrap();
        for k in 0..count {
            let id = self
                .scalar
                .arena
                .create(ClassId::PART, parent.map(|p| p.1))
                .unwrap();
            let at = self.scalar.at(id);
            for (j, &c) in with.iter().enumerate() {
                let values = if j == 0 {
                    vec![(N, Value::Number(n + k as f64))]
                } else {
                    Vec::new()
                };
                self.scalar
                    .store
                    .add(at, ClassId::PART, self.scalar.components[c], values)
                    .unwrap();
            }
            self.ids.insert(ticket.id(k).unwrap(), id);
        }
    }

    fn map(&self, id: InstanceId) -> InstanceId {
        *self
            .ids
            .get(&id)
            .unwrap_or_else(|| panic!("{id} has no twin"))
    }

    fn sorted(&self, ids: &[InstanceId], mapped: bool) -> Vec<InstanceId> {
        let mut ids: Vec<InstanceId> = ids
            .iter()
            .map(|id| if mapped { self.map(*id) } else { *id })
            .collect();
        ids.sort();
        ids
    }

    /// Everything the two worlds must agree on, compared; the reports since the last check
    /// are taken.
    fn check(&mut self, step: usize) {
        self.bulk.settle();
        self.scalar.settle();
        let context = format!("step {step}");

        // State.
        let live: Vec<InstanceId> = self.sorted(&self.bulk.live(), true);
        assert_eq!(live, self.scalar.live(), "{context}: live instances");
        for id in self.bulk.live() {
            let parent = self.bulk.arena.parent(id).map(|p| self.map(p));
            assert_eq!(
                parent,
                self.scalar.arena.parent(self.map(id)),
                "{context}: parent of {id}"
            );
        }
        for k in 0..2 {
            let rows = |side: &Side, mapped: bool| {
                let set = side.store.set(side.components[k]).unwrap();
                let mut rows: Vec<(InstanceId, Value, Value)> = (0..set.len())
                    .map(|row| {
                        let id = set.ids()[row];
                        let id = if mapped { self.map(id) } else { id };
                        (id, set.value(row, N).unwrap(), set.value(row, V).unwrap())
                    })
                    .collect();
                rows.sort_by_key(|row| row.0);
                rows
            };
            assert_eq!(
                rows(&self.bulk, true),
                rows(&self.scalar, false),
                "{context}: rows of component {k}"
            );
        }

        // Events.
        let events = |side: &mut Side, pair_ids: Option<&BTreeMap<InstanceId, InstanceId>>| {
            let mut events: Vec<String> = side
                .store
                .drain_events()
                .into_iter()
                .map(|event| {
                    let (kind, id, component, field) = match event {
                        StoreEvent::Added { id, component } => ("added", id, component, None),
                        StoreEvent::Removed { id, component } => ("removed", id, component, None),
                        StoreEvent::Changed {
                            id,
                            component,
                            field,
                        } => ("changed", id, component, Some(field)),
                    };
                    let id = pair_ids.map_or(id, |ids| ids[&id]);
                    let k = side.components.iter().position(|c| *c == component);
                    format!("{kind} {id} {k:?} {field:?}")
                })
                .collect();
            events.sort();
            events
        };
        let bulk_events = events(&mut self.bulk, Some(&self.ids));
        for kind in ["added", "removed", "changed"] {
            if bulk_events.iter().any(|e| e.starts_with(kind)) {
                *self.reached.entry(kind).or_default() += 1;
            }
        }
        assert_eq!(
            bulk_events,
            events(&mut self.scalar, None),
            "{context}: store events"
        );
        let reports = (
            std::mem::take(&mut self.bulk.created),
            std::mem::take(&mut self.scalar.created),
            std::mem::take(&mut self.bulk.destroyed),
            std::mem::take(&mut self.scalar.destroyed),
        );
        for (name, report) in [("created", &reports.0), ("destroyed", &reports.2)] {
            if !report.is_empty() {
                *self.reached.entry(name).or_default() += 1;
            }
        }
        assert_eq!(
            self.sorted(&reports.0, true),
            self.sorted(&reports.1, false),
            "{context}: created"
        );
        assert_eq!(
            self.sorted(&reports.2, true),
            self.sorted(&reports.3, false),
            "{context}: destroyed"
        );

        // Observer calls.
        for k in 0..2 {
            let mut bulk = self.bulk.calls[k].lock().unwrap();
            let mut scalar = self.scalar.calls[k].lock().unwrap();
            let set = |side: &Side| -> BTreeSet<InstanceId> {
                side.store
                    .set(side.components[k])
                    .unwrap()
                    .ids()
                    .iter()
                    .copied()
                    .collect()
            };
            assert_eq!(bulk.mirror, set(&self.bulk), "{context}: bulk mirror {k}");
            assert_eq!(
                scalar.mirror,
                set(&self.scalar),
                "{context}: scalar mirror {k}"
            );
            let map = |ids: &[InstanceId]| self.sorted(ids, true);
            let same = |ids: &[InstanceId]| self.sorted(ids, false);
            assert_eq!(
                map(&bulk.added),
                same(&scalar.added),
                "{context}: added calls {k}"
            );
            assert_eq!(
                map(&bulk.removed),
                same(&scalar.removed),
                "{context}: removed calls {k}"
            );
            assert_eq!(
                (bulk.activated, bulk.deactivated),
                (scalar.activated, scalar.deactivated),
                "{context}: activations of {k}"
            );
            for (name, reached) in [
                ("added calls", !bulk.added.is_empty()),
                ("removed calls", !bulk.removed.is_empty()),
                ("activations", bulk.activated > 0),
                ("deactivations", bulk.deactivated > 0),
            ] {
                if reached {
                    *self.reached.entry(name).or_default() += 1;
                }
            }
            for calls in [&mut *bulk, &mut *scalar] {
                calls.added.clear();
                calls.removed.clear();
            }
        }
    }
}

fn run(seed: &Seed, ops: &[Op]) -> BTreeMap<&'static str, usize> {
    let mut pair = Pair::new(seed);
    pair.check(0);
    for (step, op) in ops.iter().enumerate() {
        pair.apply(op);
        pair.check(step + 1);
    }
    pair.reached
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn a_bulk_operation_equals_the_scalar_operations_it_stands_for(
        seed in seed(),
        ops in proptest::collection::vec(op(), 1..16),
    ) {
        run(&seed, &ops);
    }
}

/// Cases drawn from a fixed seed compare every kind of report non-empty, so the property is
/// not vacuous.
#[test]
fn fixed_cases_compare_every_kind_of_report() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = (seed(), proptest::collection::vec(op(), 1..16));
    let mut total: BTreeMap<&'static str, usize> = BTreeMap::new();
    for _ in 0..64 {
        let (seed, ops) = strategy.new_tree(&mut runner).unwrap().current();
        for (name, n) in run(&seed, &ops) {
            *total.entry(name).or_default() += n;
        }
    }
    for name in [
        "added",
        "removed",
        "changed",
        "created",
        "destroyed",
        "added calls",
        "removed calls",
        "activations",
        "deactivations",
    ] {
        assert!(
            total.get(name).copied().unwrap_or(0) > 0,
            "never compared {name}: {total:?}"
        );
    }
}
