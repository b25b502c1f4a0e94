//! Model-based test of staged bulk operations: random interleavings of bulk spawns (some with
//! failing or panicking initializers), bulk sets, removes and despawns, scalar writes, cancels
//! and commits, checked after every commit against a reference model of membership and values,
//! issued ids (never reused), arena events (one per published spawn batch) and observer calls.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly on purpose")]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use proptest::prelude::*;
use strata_arena::{Arena, ClassId, Event, InstanceId};
use strata_component_store::{
    ComponentDef, FieldDef, InstanceRef, Observer, SpawnTicket, Stage, Store, StoreError, Value,
};

#[derive(Clone, Debug)]
enum Step {
    Spawn {
        count: usize,
        with_b: bool,
        value: i8,
        outcome: u8,
    },
    Set {
        mask: u32,
        value: i8,
    },
    Remove {
        mask: u32,
        b: bool,
    },
    Despawn {
        mask: u32,
    },
    Write {
        member: usize,
        value: i8,
    },
    Cancel {
        which: usize,
    },
    Commit,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (1usize..6, any::<bool>(), any::<i8>(), 0u8..8).prop_map(|(count, with_b, value, outcome)| {
            Step::Spawn { count, with_b, value, outcome }
        }),
        2 => (any::<u32>(), any::<i8>()).prop_map(|(mask, value)| Step::Set { mask, value }),
        2 => (any::<u32>(), any::<bool>()).prop_map(|(mask, b)| Step::Remove { mask, b }),
        1 => any::<u32>().prop_map(|mask| Step::Despawn { mask }),
        2 => (0usize..32, any::<i8>()).prop_map(|(member, value)| Step::Write { member, value }),
        1 => (0usize..4).prop_map(|which| Step::Cancel { which }),
        3 => Just(Step::Commit),
    ]
}

/// A staged operation as the model sees it.
#[derive(Clone, Debug)]
enum Staged {
    Spawn {
        ids: Vec<InstanceId>,
        with_b: bool,
        value: f64,
        fails: bool,
    },
    Set {
        members: Vec<InstanceId>,
        value: f64,
    },
    Remove {
        members: Vec<InstanceId>,
        b: bool,
    },
    Despawn {
        members: Vec<InstanceId>,
    },
    Write {
        member: InstanceId,
        value: f64,
    },
}

/// Per live instance: its `A.x` and `B.n`, if it holds them.
type Model = BTreeMap<InstanceId, (Option<f64>, Option<i64>)>;

fn pick(model: &Model, mask: u32) -> Vec<InstanceId> {
    model
        .keys()
        .enumerate()
        .filter(|(i, _)| mask & (1 << (i % 32)) != 0)
        .map(|(_, id)| *id)
        .collect()
}

/// Applies the staged operations to the model in order; returns whether all applied, and how
/// many spawns, added A rows and removed A rows were published.
fn apply(model: &mut Model, staged: &[Staged]) -> (bool, usize, usize, usize) {
    let (mut spawns, mut added, mut removed) = (0, 0, 0);
    for op in staged {
        match op {
            Staged::Spawn {
                ids,
                with_b,
                value,
                fails,
            } => {
                if *fails {
                    return (false, spawns, added, removed);
                }
                spawns += 1;
                added += ids.len();
                for id in ids {
                    model.insert(*id, (Some(*value), with_b.then_some(7)));
                }
            }
            Staged::Set { members, value } => {
                for id in members {
                    if let Some(entry) = model.get_mut(id) {
                        added += usize::from(entry.0.is_none());
                        entry.0 = Some(*value);
                    }
                }
            }
            Staged::Remove { members, b } => {
                for id in members {
                    if let Some(entry) = model.get_mut(id) {
                        if *b {
                            entry.1 = None;
                        } else {
                            removed += usize::from(entry.0.is_some());
                            entry.0 = None;
                        }
                    }
                }
            }
            Staged::Despawn { members } => {
                for id in members {
                    if let Some(entry) = model.remove(id) {
                        removed += usize::from(entry.0.is_some());
                    }
                }
            }
            Staged::Write { member, value } => match model.get_mut(member) {
                Some((Some(x), _)) => *x = *value,
                _ => return (false, spawns, added, removed),
            },
        }
    }
    (true, spawns, added, removed)
}

fn run(steps: Vec<Step>) {
    let mut arena = Arena::standard();
    let mut store = Store::new();
    let a = store
        .install(
            ComponentDef::new("A").field(FieldDef::number("x", 0.0)),
            arena.classes(),
        )
        .unwrap();
    let b = store
        .install(
            ComponentDef::new("B").field(FieldDef::integer("n", 7)),
            arena.classes(),
        )
        .unwrap();
    let x = store.field(a, "x").unwrap();
    let calls = Arc::new(Mutex::new((0usize, 0usize, 0usize)));
    let (on_add, on_remove) = (calls.clone(), calls.clone());
    store
        .observe(
            a,
            Observer::new()
                .on_added(move |_, rows| {
                    let mut c = on_add.lock().unwrap();
                    c.0 += 1;
                    c.1 += rows.count();
                })
                .on_removed(move |_, rows| on_remove.lock().unwrap().2 += rows.count()),
        )
        .unwrap();
    arena.drain().unwrap();

    let mut model = Model::new();
    let mut stage = Stage::new(&arena, &store);
    let mut staged: Vec<Staged> = Vec::new();
    let mut tickets: Vec<(SpawnTicket, usize)> = Vec::new();
    let mut issued = BTreeSet::new();
    let mut gone = BTreeSet::new();
    let refs = |arena: &Arena, ids: &[InstanceId]| -> Vec<InstanceRef> {
        ids.iter()
            .map(|id| InstanceRef::of(arena, *id).unwrap())
            .collect()
    };

    for step in steps {
        match step {
            Step::Spawn {
                count,
                with_b,
                value,
                outcome,
            } => {
                let value = f64::from(value);
                let comps = if with_b { vec![a, b] } else { vec![a] };
                let ticket = stage
                    .spawn(
                        &mut arena,
                        count,
                        ClassId::ENTITY,
                        None,
                        &comps,
                        move |rows| {
                            rows.column_mut::<f64>(a, x)?.fill(value);
                            match outcome {
                                0 => Err(StoreError::UnknownComponent(a)),
                                1 => panic!("initializer panics"),
                                _ => Ok(()),
                            }
                        },
                    )
                    .unwrap();
                let ids: Vec<InstanceId> = (0..count).map(|k| ticket.id(k).unwrap()).collect();
                for id in &ids {
                    assert!(issued.insert(*id), "an id is never issued twice");
                    assert!(!arena.is_live(*id), "reserved is not alive");
                }
                tickets.push((ticket, staged.len()));
                staged.push(Staged::Spawn {
                    ids,
                    with_b,
                    value,
                    fails: outcome < 2,
                });
            }
            Step::Set { mask, value } => {
                let members = pick(&model, mask);
                let value = f64::from(value);
                stage.set(&refs(&arena, &members), a, vec![(x, Value::Number(value))]);
                staged.push(Staged::Set { members, value });
            }
            Step::Remove { mask, b: on_b } => {
                let members = pick(&model, mask);
                stage.remove(&refs(&arena, &members), if on_b { b } else { a });
                staged.push(Staged::Remove { members, b: on_b });
            }
            Step::Despawn { mask } => {
                let members = pick(&model, mask);
                stage.despawn(&refs(&arena, &members));
                staged.push(Staged::Despawn { members });
            }
            Step::Write { member, value } => {
                let Some(id) = model.keys().nth(member).copied() else {
                    continue;
                };
                let value = f64::from(value);
                stage.write(InstanceRef::of(&arena, id).unwrap(), a, x, value);
                staged.push(Staged::Write { member: id, value });
            }
            Step::Cancel { which } => {
                if tickets.is_empty() {
                    continue;
                }
                let (ticket, index) = tickets.remove(which % tickets.len());
                stage.cancel(&mut arena, &ticket).unwrap();
                if let Staged::Spawn { ids, .. } = staged.remove(index) {
                    gone.extend(ids);
                }
                for (_, i) in tickets.iter_mut() {
                    if *i > index {
                        *i -= 1;
                    }
                }
            }
            Step::Commit => {
                let before = model.clone();
                *calls.lock().unwrap() = (0, 0, 0);
                let (ok, spawns, added, removed) = apply(&mut model, &staged);
                let result = stage.commit(&mut arena, &mut store);
                assert_eq!(result.is_ok(), ok, "{result:?}");
                if let Err(error) = &result {
                    let expected: usize = staged
                        .iter()
                        .skip(error.failed)
                        .filter(|s| matches!(s, Staged::Spawn { .. }))
                        .count();
                    assert_eq!(error.released, expected, "every unpublished spawn released");
                    assert_eq!(error.published.ops, error.failed);
                    for s in &staged[error.failed..] {
                        if let Staged::Spawn { ids, .. } = s {
                            gone.extend(ids.iter().copied());
                        }
                    }
                }
                for id in before.keys() {
                    if !model.contains_key(id) {
                        gone.insert(*id);
                    }
                }
                staged.clear();
                tickets.clear();
                // One arena event per published spawn batch.
                let drained = arena.drain().unwrap();
                let created = drained
                    .events
                    .iter()
                    .filter(|e| {
                        matches!(
                            e,
                            Event::CreatedRange { .. }
                                | Event::CreatedList { .. }
                                | Event::Created { .. }
                        )
                    })
                    .count();
                assert_eq!(created, spawns);
                store.on_reclaimed(&drained.reclaimed);
                let seen = *calls.lock().unwrap();
                assert_eq!(seen.1, added, "observer added rows");
                assert_eq!(seen.2, removed, "observer removed rows");
                assert!(seen.0 <= spawns + 64, "one added call per batch at most");
                // Membership and values.
                assert_eq!(
                    store.set(a).unwrap().len(),
                    model.values().filter(|v| v.0.is_some()).count()
                );
                assert_eq!(
                    store.set(b).unwrap().len(),
                    model.values().filter(|v| v.1.is_some()).count()
                );
                for (id, (va, vb)) in &model {
                    assert!(arena.is_live(*id));
                    let at = InstanceRef::of(&arena, *id).unwrap();
                    assert_eq!(store.get::<f64>(at, a, x).ok().copied(), *va);
                    let n = store.field(b, "n").unwrap();
                    assert_eq!(store.get::<i64>(at, b, n).ok().copied(), *vb);
                }
                for id in &gone {
                    assert!(!arena.is_live(*id), "{id:?} stays gone");
                }
            }
        }
    }
    stage.discard(&mut arena).unwrap();
    assert_eq!(arena.reserved_count(), 0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn staged_operations_follow_the_model(steps in proptest::collection::vec(step(), 1..60)) {
        run(steps);
    }
}
