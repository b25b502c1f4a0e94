//! Model-based test of staged bulk operations and the publication barrier.
//!
//! Random interleavings of bulk spawns (some with failing or panicking initializers, some at
//! given ids), bulk sets, removes and despawns, scalar edits (writes, adds, removals and
//! destructions, some naming the instances of a spawn staged before them), cancellations of
//! spawns and of any operation, operations the store refuses outright, frame ends and commits,
//! checked after every commit against a reference model:
//!
//! - membership and values of both components, ids never issued twice, reserved ids never
//!   alive before their commit, instances gone staying gone;
//! - what a failed commit reports: the operations applied, the failing one, the spawns whose
//!   reservations were released and the operations dropped, or that nothing was applied and
//!   the stage kept everything;
//! - the arena's events (one per published spawn batch, one per despawn batch);
//! - observer calls: a mirror of each set kept only from its observer's calls (added ranges,
//!   moves, removed ranges, activation and deactivation) must equal the set after every commit,
//!   removed values read inside the callback are the values the model holds at removal, and one
//!   added call covers a whole batch;
//! - the store's events for the observed component, as a multiset per commit;
//! - frame dirt (the rows added, moved or changed in the frame, and whether rows were removed),
//!   the structural count (one per range and move reported) and its residue since the frame
//!   began, and the value-write counter of the tracked column.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use proptest::prelude::*;
use strata_arena::{Arena, ClassId, Event, InstanceId};
use strata_component_store::{
    ComponentDef, ComponentId, FieldDef, FieldId, FrameDirty, InstanceRef, Observer, OpId,
    SpawnTicket, Stage, Store, StoreError, StoreEvent, Value,
};

#[derive(Clone, Debug)]
enum Step {
    /// A spawn of `count` instances with `A` (and `B` when `with_b`), `x` set to `value` by the
    /// initializer; `outcome` 0 fails, 1 panics, 2 spawns at explicit ids, else a plain spawn.
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
    /// A write of `A.x`: to a live instance, or (`pending`) to one of a staged spawn.
    Write {
        member: usize,
        value: i8,
        pending: bool,
    },
    /// Adds `B` to an instance (refused at the commit when it holds `B` then).
    AddB {
        member: usize,
        value: i8,
    },
    RemoveOne {
        member: usize,
    },
    Destroy {
        member: usize,
    },
    /// A write the store refuses whatever the state: text into a number field.
    Bad,
    CancelSpawn {
        which: usize,
    },
    CancelOp {
        which: usize,
    },
    EndFrame,
    Commit,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (1usize..6, any::<bool>(), -3i8..4, 0u8..10).prop_map(|(count, with_b, value, outcome)| {
            Step::Spawn { count, with_b, value, outcome }
        }),
        2 => (any::<u32>(), -3i8..4).prop_map(|(mask, value)| Step::Set { mask, value }),
        2 => (any::<u32>(), any::<bool>()).prop_map(|(mask, b)| Step::Remove { mask, b }),
        1 => any::<u32>().prop_map(|mask| Step::Despawn { mask }),
        3 => (0usize..32, -3i8..4, any::<bool>()).prop_map(|(member, value, pending)| {
            Step::Write { member, value, pending }
        }),
        1 => (0usize..32, -3i8..4).prop_map(|(member, value)| Step::AddB { member, value }),
        1 => (0usize..32).prop_map(|member| Step::RemoveOne { member }),
        1 => (0usize..32).prop_map(|member| Step::Destroy { member }),
        1 => Just(Step::Bad),
        1 => (0usize..4).prop_map(|which| Step::CancelSpawn { which }),
        1 => (0usize..8).prop_map(|which| Step::CancelOp { which }),
        1 => Just(Step::EndFrame),
        3 => Just(Step::Commit),
    ]
}

/// One live instance as the model holds it: `A.x` and `B.n` when it holds them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Inst {
    a: Option<f64>,
    b: Option<i64>,
}

/// A staged operation as the model sees it, under the id the stage gave it.
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
    AddB {
        member: InstanceId,
        value: i64,
    },
    RemoveOne {
        member: InstanceId,
    },
    Destroy {
        member: InstanceId,
    },
    Bad,
}

/// What the model expects a commit to do.
#[derive(Debug, Default)]
struct Expected {
    applied: Vec<OpId>,
    /// The failing operation, and whether the failure applied nothing (a static refusal).
    failed: Option<(OpId, bool)>,
    released: Vec<OpId>,
    dropped: Vec<OpId>,
    spawn_batches: usize,
    despawn_batches: usize,
    destroys: usize,
    /// Store events for `A`, as `(kind, id)`: 0 added, 1 removed, 2 changed.
    events: Vec<(u8, InstanceId)>,
    /// `(component, id, value)` read when each row was removed.
    removed_values: Vec<(usize, InstanceId, f64)>,
    /// Instances whose `A.x` or `B.n` changed value (component index, id).
    changed: Vec<(usize, InstanceId)>,
    /// Writes that changed `A.x` (the tracked column).
    counted: u64,
    /// Added calls each component's observer hears: one per batch.
    added_calls: [usize; 2],
}

type Model = BTreeMap<InstanceId, Inst>;

/// Applies the staged operations to the model in order, predicting what the commit reports.
fn predict(model: &mut Model, staged: &[(OpId, Staged)]) -> Expected {
    let mut out = Expected::default();
    if let Some((id, _)) = staged.iter().find(|(_, s)| matches!(s, Staged::Bad)) {
        out.failed = Some((*id, true));
        return out;
    }
    for (at, (id, op)) in staged.iter().enumerate() {
        if !apply_one(model, op, &mut out) {
            out.failed = Some((*id, false));
            for (later, op) in &staged[at..] {
                if matches!(op, Staged::Spawn { .. }) {
                    out.released.push(*later);
                }
            }
            out.dropped = staged[at + 1..].iter().map(|(id, _)| *id).collect();
            return out;
        }
        out.applied.push(*id);
    }
    out
}

/// One operation on the model; `false` when the commit stops at it (nothing of it applied).
fn apply_one(model: &mut Model, op: &Staged, out: &mut Expected) -> bool {
    match op {
        Staged::Spawn {
            ids,
            with_b,
            value,
            fails,
        } => {
            if *fails {
                return false;
            }
            out.spawn_batches += 1;
            out.added_calls[0] += 1;
            out.added_calls[1] += usize::from(*with_b);
            for id in ids {
                model.insert(
                    *id,
                    Inst {
                        a: Some(*value),
                        b: with_b.then_some(7),
                    },
                );
                out.events.push((0, *id));
            }
        }
        Staged::Set { members, value } => {
            let newcomers = members
                .iter()
                .any(|id| model.get(id).is_some_and(|inst| inst.a.is_none()));
            out.added_calls[0] += usize::from(newcomers);
            for id in members {
                let Some(inst) = model.get_mut(id) else {
                    continue;
                };
                match inst.a {
                    None => out.events.push((0, *id)),
                    Some(old) if old.to_bits() != value.to_bits() => {
                        out.events.push((2, *id));
                        out.changed.push((0, *id));
                        out.counted += 1;
                    }
                    Some(_) => {}
                }
                inst.a = Some(*value);
            }
        }
        Staged::Remove { members, b } => {
            for id in members {
                let Some(inst) = model.get_mut(id) else {
                    continue;
                };
                let mut removed_a = false;
                if !*b && let Some(x) = inst.a.take() {
                    out.events.push((1, *id));
                    out.removed_values.push((0, *id, x));
                    removed_a = true;
                }
                // B requires A: it goes with A, or alone.
                if (*b || removed_a)
                    && let Some(n) = inst.b.take()
                {
                    out.removed_values.push((1, *id, n as f64));
                }
            }
        }
        Staged::Despawn { members } => {
            let live: Vec<_> = members.iter().filter(|id| model.contains_key(id)).collect();
            if !live.is_empty() {
                out.despawn_batches += 1;
            }
            for id in live {
                destroy(model, *id, out);
            }
        }
        Staged::Write { member, value } => match model.get_mut(member) {
            Some(Inst { a: Some(x), .. }) => {
                if x.to_bits() != value.to_bits() {
                    out.events.push((2, *member));
                    out.changed.push((0, *member));
                    out.counted += 1;
                }
                *x = *value;
            }
            _ => return false,
        },
        Staged::AddB { member, value } => match model.get_mut(member) {
            Some(inst) if inst.b.is_none() => {
                inst.b = Some(*value);
                out.added_calls[1] += 1;
            }
            _ => return false,
        },
        Staged::RemoveOne { member } => {
            // An instance not holding the component (a dead one included) is no failure.
            let Some(inst) = model.get_mut(member) else {
                return true;
            };
            if let Some(x) = inst.a.take() {
                out.events.push((1, *member));
                out.removed_values.push((0, *member, x));
                if let Some(n) = inst.b.take() {
                    out.removed_values.push((1, *member, n as f64));
                }
            }
        }
        Staged::Destroy { member } => {
            if !model.contains_key(member) {
                return false;
            }
            out.destroys += 1;
            destroy(model, *member, out);
        }
        Staged::Bad => unreachable!("a refused operation stops the commit before it applies"),
    }
    true
}

fn destroy(model: &mut Model, id: InstanceId, out: &mut Expected) {
    let inst = model.remove(&id).expect("destroyed while live");
    if let Some(x) = inst.a {
        out.events.push((1, id));
        out.removed_values.push((0, id, x));
    }
    if let Some(n) = inst.b {
        out.removed_values.push((1, id, n as f64));
    }
}

/// What an observer reported, in order.
#[derive(Clone, Debug)]
enum Call {
    Added(usize, Vec<InstanceId>),
    Removed(usize, Vec<InstanceId>, Vec<f64>),
    Moved(InstanceId, usize, usize),
    Activated,
    Deactivated,
}

/// Every observer call of both components, in the order they came, tagged by component.
type Log = Arc<Mutex<Vec<(usize, Call)>>>;

/// An observer that logs every call, reading the set as the callback sees it.
fn logging(
    log: &Log,
    k: usize,
    read: fn(&strata_component_store::ComponentSet, usize) -> f64,
) -> Observer {
    let (added, removed, moved, on, off) = (
        log.clone(),
        log.clone(),
        log.clone(),
        log.clone(),
        log.clone(),
    );
    Observer::new()
        .on_added(move |set, rows| {
            let ids = set.ids()[rows.clone()].to_vec();
            added
                .lock()
                .unwrap()
                .push((k, Call::Added(*rows.start(), ids)));
        })
        .on_removed(move |set, rows| {
            let ids = set.ids()[rows.clone()].to_vec();
            let values = rows.clone().map(|row| read(set, row)).collect();
            removed
                .lock()
                .unwrap()
                .push((k, Call::Removed(*rows.start(), ids, values)));
        })
        .on_moved(move |_, id, old, new| {
            moved.lock().unwrap().push((k, Call::Moved(id, old, new)));
        })
        .on_activated(move |_| on.lock().unwrap().push((k, Call::Activated)))
        .on_deactivated(move |_| off.lock().unwrap().push((k, Call::Deactivated)))
}

/// A set as its observer's calls describe it: rows, and rows reported removed that have not
/// reached the end yet.
#[derive(Debug, Default)]
struct Mirror {
    rows: Vec<InstanceId>,
    doomed: BTreeSet<InstanceId>,
    active: bool,
}

impl Mirror {
    fn settle(&mut self) {
        while self.rows.last().is_some_and(|id| self.doomed.remove(id)) {
            self.rows.pop();
        }
    }

    /// Replays calls, checking each against the mirror, and gathers what a frame consumer
    /// learns from them: ids added and moved, removed values, the number of structural calls.
    fn replay<'c>(&mut self, calls: impl Iterator<Item = &'c Call>, seen: &mut Seen) {
        for call in calls {
            match call {
                Call::Activated => {
                    self.settle();
                    assert!(
                        !self.active && self.rows.is_empty(),
                        "activated while active"
                    );
                    self.active = true;
                }
                Call::Deactivated => {
                    self.settle();
                    assert!(
                        self.active && self.rows.is_empty(),
                        "deactivated while rows left"
                    );
                    assert!(self.doomed.is_empty());
                    self.active = false;
                }
                Call::Added(start, ids) => {
                    self.settle();
                    assert!(self.active, "added before activation");
                    assert_eq!(*start, self.rows.len(), "rows are added at the end");
                    self.rows.extend(ids);
                    seen.added.extend(ids);
                    seen.calls += 1;
                    seen.added_calls += 1;
                }
                Call::Removed(start, ids, values) => {
                    assert_eq!(
                        &self.rows[*start..*start + ids.len()],
                        ids.as_slice(),
                        "the removed range is where the mirror has those rows"
                    );
                    self.doomed.extend(ids);
                    seen.removed
                        .extend(ids.iter().zip(values).map(|(id, v)| (*id, *v)));
                    seen.calls += 1;
                }
                Call::Moved(id, old, new) => {
                    assert_eq!(self.rows[*old], *id, "a move names the row's instance");
                    self.rows.swap(*old, *new);
                    seen.moved.push(*id);
                    seen.calls += 1;
                }
            }
        }
        self.settle();
    }
}

#[derive(Debug, Default)]
struct Seen {
    added: Vec<InstanceId>,
    moved: Vec<InstanceId>,
    removed: Vec<(InstanceId, f64)>,
    calls: u64,
    added_calls: usize,
}

struct Fixture {
    arena: Arena,
    store: Store,
    comps: [ComponentId; 2],
    x: FieldId,
    n: FieldId,
    log: Log,
    mirrors: [Mirror; 2],
}

impl Fixture {
    fn new() -> Self {
        let mut arena = Arena::standard();
        let mut store = Store::new();
        let a = store
            .install(
                ComponentDef::new("A")
                    .field(FieldDef::number("x", 0.0))
                    .observed(true),
                arena.classes(),
            )
            .unwrap();
        let b = store
            .install(
                ComponentDef::new("B")
                    .field(FieldDef::integer("n", 7))
                    .requires(&["A"]),
                arena.classes(),
            )
            .unwrap();
        let x = store.field(a, "x").unwrap();
        let n = store.field(b, "n").unwrap();
        store.track_value_count(a, x, true).unwrap();
        let log = Log::default();
        let first = FieldId::from_index(0);
        store
            .observe(
                a,
                logging(&log, 0, |set, row| {
                    set.values::<f64>(FieldId::from_index(0)).unwrap()[row]
                }),
            )
            .unwrap();
        store
            .observe(
                b,
                logging(&log, 1, |set, row| {
                    set.values::<i64>(FieldId::from_index(0)).unwrap()[row] as f64
                }),
            )
            .unwrap();
        assert_eq!((x, n), (first, first));
        arena.drain().unwrap();
        Self {
            arena,
            store,
            comps: [a, b],
            x,
            n,
            log,
            mirrors: [Mirror::default(), Mirror::default()],
        }
    }

    fn at(&self, id: InstanceId) -> InstanceRef {
        InstanceRef::of(&self.arena, id).unwrap()
    }
}

/// The frame so far, as the test follows it.
#[derive(Debug, Default)]
struct Frame {
    start: u64,
    added: [BTreeSet<InstanceId>; 2],
    moved: [BTreeSet<InstanceId>; 2],
    changed: [BTreeSet<InstanceId>; 2],
    removed: [bool; 2],
    residue_added: Vec<InstanceId>,
    residue_touched: Vec<InstanceId>,
}

fn pick(model: &Model, mask: u32) -> Vec<InstanceId> {
    model
        .keys()
        .enumerate()
        .filter(|(i, _)| mask & (1 << (i % 32)) != 0)
        .map(|(_, id)| *id)
        .collect()
}

/// Which paths a run reached, for the fixed-seed run that checks the generator reaches them.
#[derive(Debug, Default)]
struct Reached {
    commits: usize,
    kept: usize,
    failed_spawns: usize,
    failed_edits: usize,
    released: usize,
    dropped: usize,
    pending_writes: usize,
    explicit_spawns: usize,
    moves: usize,
    removals: usize,
    despawns: usize,
    cancels: usize,
    frames: usize,
    dirty_rows: usize,
}

fn run(steps: Vec<Step>) -> Reached {
    let mut reached = Reached::default();
    let mut f = Fixture::new();
    let [a, b] = f.comps;
    let x = f.x;
    let mut model = Model::new();
    let mut stage = Stage::new(&f.arena, &f.store);
    let mut staged: Vec<(OpId, Staged)> = Vec::new();
    let mut tickets: Vec<SpawnTicket> = Vec::new();
    let mut issued = BTreeSet::new();
    let mut gone = BTreeSet::new();
    let mut frame = Frame {
        start: f.store.structural_count(),
        ..Frame::default()
    };
    let mut counted = f.store.value_count();
    // Explicit ids come from the range this (server) arena never issues itself.
    let mut next_explicit = 1u64 << 52;

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
                let init = move |rows: &mut strata_component_store::SpawnRows<'_>| {
                    rows.column_mut::<f64>(a, x)?.fill(value);
                    match outcome {
                        0 => Err(StoreError::UnknownComponent(a)),
                        1 => panic!("initializer panics"),
                        _ => Ok(()),
                    }
                };
                reached.explicit_spawns += usize::from(outcome == 2);
                let ticket = if outcome == 2 {
                    // Explicit, scattered ids (a restoration): the ticket lists them.
                    let ids: Vec<InstanceId> = (0..count)
                        .map(|k| InstanceId::new(next_explicit + 3 * (count - k) as u64).unwrap())
                        .collect();
                    next_explicit += 3 * count as u64 + 3;
                    let ticket = stage
                        .spawn_at(&mut f.arena, &ids, ClassId::ENTITY, None, &comps, init)
                        .unwrap();
                    assert_eq!(ticket.ids().map(<[_]>::len), (count > 1).then_some(count));
                    ticket
                } else {
                    stage
                        .spawn(&mut f.arena, count, ClassId::ENTITY, None, &comps, init)
                        .unwrap()
                };
                let ids: Vec<InstanceId> = (0..count).map(|k| ticket.id(k).unwrap()).collect();
                for id in &ids {
                    assert!(issued.insert(*id), "an id is never issued twice");
                    assert!(!f.arena.is_live(*id), "reserved is not alive");
                }
                staged.push((
                    ticket.op(),
                    Staged::Spawn {
                        ids,
                        with_b,
                        value,
                        fails: outcome < 2,
                    },
                ));
                tickets.push(ticket);
            }
            Step::Set { mask, value } => {
                let members = pick(&model, mask);
                let value = f64::from(value);
                let refs: Vec<_> = members.iter().map(|id| f.at(*id)).collect();
                let op = stage.set(&refs, a, vec![(x, Value::Number(value))]);
                staged.push((op, Staged::Set { members, value }));
            }
            Step::Remove { mask, b: on_b } => {
                let members = pick(&model, mask);
                let refs: Vec<_> = members.iter().map(|id| f.at(*id)).collect();
                let op = stage.remove(&refs, if on_b { b } else { a });
                staged.push((op, Staged::Remove { members, b: on_b }));
            }
            Step::Despawn { mask } => {
                let members = pick(&model, mask);
                let refs: Vec<_> = members.iter().map(|id| f.at(*id)).collect();
                let op = stage.despawn(&refs);
                staged.push((op, Staged::Despawn { members }));
            }
            Step::Write {
                member,
                value,
                pending,
            } => {
                let value = f64::from(value);
                let target = if pending {
                    // An instance of a spawn staged before: it exists once that spawn applies.
                    let Some(ticket) = tickets.get(member % tickets.len().max(1)) else {
                        continue;
                    };
                    ticket.instance(member % ticket.len())
                } else {
                    model.keys().nth(member).map(|id| f.at(*id))
                };
                let Some(at) = target else {
                    continue;
                };
                reached.pending_writes += usize::from(pending);
                let op = stage.write(at, a, x, value);
                staged.push((
                    op,
                    Staged::Write {
                        member: at.id,
                        value,
                    },
                ));
            }
            Step::AddB { member, value } => {
                let Some(id) = model.keys().nth(member).copied() else {
                    continue;
                };
                let op = stage.add(
                    f.at(id),
                    ClassId::ENTITY,
                    b,
                    vec![(f.n, Value::Integer(i64::from(value)))],
                );
                staged.push((
                    op,
                    Staged::AddB {
                        member: id,
                        value: i64::from(value),
                    },
                ));
            }
            Step::RemoveOne { member } => {
                let Some(id) = model.keys().nth(member).copied() else {
                    continue;
                };
                let op = stage.remove_one(f.at(id), a);
                staged.push((op, Staged::RemoveOne { member: id }));
            }
            Step::Destroy { member } => {
                let Some(id) = model.keys().nth(member).copied() else {
                    continue;
                };
                let op = stage.destroy(id);
                staged.push((op, Staged::Destroy { member: id }));
            }
            Step::Bad => {
                let Some(id) = model.keys().next().copied() else {
                    continue;
                };
                let op = stage.write_value(f.at(id), a, x, Value::Text("no".into()));
                staged.push((op, Staged::Bad));
            }
            Step::CancelSpawn { which } => {
                if tickets.is_empty() {
                    continue;
                }
                let ticket = tickets.remove(which % tickets.len());
                stage.cancel(&mut f.arena, &ticket).unwrap();
                reached.cancels += 1;
                assert!(
                    matches!(
                        stage.cancel(&mut f.arena, &ticket),
                        Err(strata_component_store::StageError::UnknownTicket)
                    ),
                    "a ticket cancels once"
                );
                let at = staged
                    .iter()
                    .position(|(id, _)| *id == ticket.op())
                    .unwrap();
                if let (_, Staged::Spawn { ids, .. }) = staged.remove(at) {
                    gone.extend(ids);
                }
            }
            Step::CancelOp { which } => {
                if staged.is_empty() {
                    continue;
                }
                let (op, removed) = staged.remove(which % staged.len());
                stage.cancel_op(&mut f.arena, op).unwrap();
                reached.cancels += 1;
                if let Staged::Spawn { ids, .. } = removed {
                    gone.extend(ids);
                    tickets.retain(|t| t.op() != op);
                }
            }
            Step::EndFrame => {
                reached.frames += 1;
                f.store.end_frame();
                frame = Frame {
                    start: f.store.structural_count(),
                    ..Frame::default()
                };
                for (k, component) in f.comps.iter().enumerate() {
                    assert_eq!(
                        f.store.frame_dirty(*component).unwrap(),
                        FrameDirty::Clean,
                        "{k}"
                    );
                }
            }
            Step::Commit => {
                commit(
                    &mut f,
                    &mut stage,
                    &mut model,
                    &mut staged,
                    &mut tickets,
                    &mut gone,
                    &mut frame,
                    &mut counted,
                    &mut reached,
                );
            }
        }
    }
    stage.discard(&mut f.arena).unwrap();
    f.arena.drain().unwrap();
    assert_eq!(f.arena.reserved_count(), 0);
    reached
}

#[allow(clippy::too_many_arguments, reason = "the test's state, passed whole")]
fn commit(
    f: &mut Fixture,
    stage: &mut Stage,
    model: &mut Model,
    staged: &mut Vec<(OpId, Staged)>,
    tickets: &mut Vec<SpawnTicket>,
    gone: &mut BTreeSet<InstanceId>,
    frame: &mut Frame,
    counted: &mut u64,
    reached: &mut Reached,
) {
    reached.commits += 1;
    let [a, b] = f.comps;
    let before = model.clone();
    let count_before = f.store.structural_count();
    let expected = predict(model, staged);
    let result = stage.commit(&mut f.arena, &mut f.store);
    match (&result, expected.failed) {
        (Ok(published), None) => assert_eq!(published.applied, expected.applied),
        (Err(error), Some((failed, kept))) => {
            assert_eq!(error.failed, Some(failed), "{error}");
            assert_eq!(error.kept, kept, "{error}");
            assert_eq!(error.published.applied, expected.applied);
            assert_eq!(error.released, expected.released);
            assert_eq!(error.dropped, expected.dropped);
        }
        (result, failed) => panic!("expected failure {failed:?}, got {result:?}"),
    }
    if let Some((op, kept)) = expected.failed {
        reached.kept += usize::from(kept);
        let spawn = staged
            .iter()
            .any(|(id, s)| *id == op && matches!(s, Staged::Spawn { .. }));
        reached.failed_spawns += usize::from(!kept && spawn);
        reached.failed_edits += usize::from(!kept && !spawn);
        reached.released += expected.released.len();
        reached.dropped += expected.dropped.len();
    }
    reached.despawns += expected.despawn_batches + expected.destroys;
    if expected.failed.is_some_and(|(_, kept)| kept) {
        // Nothing applied: the stage keeps everything; cancel the refused operation.
        assert_eq!(stage.len(), staged.len());
        assert_eq!(
            stage.ops().collect::<Vec<_>>(),
            staged.iter().map(|(id, _)| *id).collect::<Vec<_>>()
        );
        let (op, _) = expected.failed.unwrap();
        stage.cancel_op(&mut f.arena, op).unwrap();
        staged.retain(|(id, _)| *id != op);
        assert_eq!(f.store.structural_count(), count_before);
        assert!(f.store.drain_events().is_empty());
        return;
    }
    assert!(stage.is_empty(), "a commit empties the stage");
    for (op, s) in staged.iter() {
        if let Staged::Spawn { ids, .. } = s
            && !expected.applied.contains(op)
        {
            gone.extend(ids.iter().copied());
        }
    }
    for id in before.keys() {
        if !model.contains_key(id) {
            gone.insert(*id);
        }
    }
    staged.clear();
    tickets.clear();

    // The arena: one event per published spawn batch and per despawn batch.
    let drained = f.arena.drain().unwrap();
    let created = drained
        .events
        .iter()
        .filter(|e| matches!(e, Event::CreatedRange { .. } | Event::CreatedList { .. }))
        .count();
    assert_eq!(created, expected.spawn_batches);
    let bulk = drained
        .events
        .iter()
        .filter(|e| matches!(e, Event::DestroyedMany { .. }))
        .count();
    assert_eq!(bulk, expected.despawn_batches);
    f.store.on_reclaimed(&drained.reclaimed);

    // Observers: mirrors kept from their calls equal the sets.
    let calls = std::mem::take(&mut *f.log.lock().unwrap());
    let mut structural_calls = 0;
    for k in 0..2 {
        let mut seen = Seen::default();
        let own = calls.iter().filter(|(c, _)| *c == k).map(|(_, call)| call);
        f.mirrors[k].replay(own, &mut seen);
        let set = f.store.set(f.comps[k]).unwrap();
        assert_eq!(
            f.mirrors[k].rows,
            set.ids(),
            "component {k}: the mirror is the set"
        );
        assert_eq!(f.mirrors[k].active, !set.is_empty());
        assert_eq!(
            seen.added_calls, expected.added_calls[k],
            "component {k}: one added call per batch"
        );
        structural_calls += seen.calls;
        let mut removed: Vec<(InstanceId, u64)> = seen
            .removed
            .iter()
            .map(|(id, v)| (*id, v.to_bits()))
            .collect();
        let mut predicted: Vec<(InstanceId, u64)> = expected
            .removed_values
            .iter()
            .filter(|(c, _, _)| *c == k)
            .map(|(_, id, v)| (*id, v.to_bits()))
            .collect();
        removed.sort_unstable();
        predicted.sort_unstable();
        assert_eq!(
            removed, predicted,
            "component {k}: values read while removed"
        );
        reached.moves += seen.moved.len();
        reached.removals += seen.removed.len();
        frame.added[k].extend(seen.added.iter().copied());
        frame.moved[k].extend(seen.moved.iter().copied());
        frame.removed[k] |= !seen.removed.is_empty();
    }
    // The residue lists every added range's ids, and every removed range's and moved row's,
    // in the order they came.
    for (_, call) in &calls {
        match call {
            Call::Added(_, ids) => frame.residue_added.extend(ids),
            Call::Removed(_, ids, _) => frame.residue_touched.extend(ids),
            Call::Moved(id, _, _) => frame.residue_touched.push(*id),
            Call::Activated | Call::Deactivated => {}
        }
    }
    for (k, id) in &expected.changed {
        frame.changed[*k].insert(*id);
    }
    assert_eq!(
        f.store.structural_count() - count_before,
        structural_calls,
        "one count per range and move"
    );

    // Store events of the observed component.
    let mut events: Vec<(u8, InstanceId)> = f
        .store
        .drain_events()
        .into_iter()
        .filter_map(|e| match e {
            StoreEvent::Added { id, component } if component == a => Some((0, id)),
            StoreEvent::Removed { id, component } if component == a => Some((1, id)),
            StoreEvent::Changed { id, component, .. } if component == a => Some((2, id)),
            _ => None,
        })
        .collect();
    let mut predicted = expected.events.clone();
    events.sort_unstable();
    predicted.sort_unstable();
    assert_eq!(events, predicted, "store events");

    // The value-write counter of A.x.
    *counted += expected.counted;
    assert_eq!(f.store.value_count(), *counted);

    // Frame dirt, the structural residue since the frame began.
    for k in 0..2 {
        let set = f.store.set(f.comps[k]).unwrap();
        let held: BTreeSet<InstanceId> = set.ids().iter().copied().collect();
        let dirty: BTreeSet<InstanceId> = frame.added[k]
            .iter()
            .chain(&frame.moved[k])
            .chain(&frame.changed[k])
            .filter(|id| held.contains(id))
            .copied()
            .collect();
        let shown = f.store.frame_dirty(f.comps[k]).unwrap();
        match &shown {
            FrameDirty::Clean => assert!(dirty.is_empty() && !frame.removed[k], "{k}"),
            FrameDirty::Rows { rows, removed } => {
                reached.dirty_rows += rows.len();
                let ids: BTreeSet<InstanceId> = rows.iter().map(|r| set.ids()[*r]).collect();
                assert_eq!(ids, dirty, "component {k}: dirty rows");
                assert_eq!(
                    *removed, frame.removed[k],
                    "component {k}: removed this frame"
                );
            }
            FrameDirty::Whole => panic!("nothing marks a whole column here"),
        }
        assert_eq!(f.store.is_dirty(f.comps[k]).unwrap(), shown.is_dirty());
    }
    let residue = f.store.structural_since(frame.start).unwrap();
    assert_eq!(residue.added().collect::<Vec<_>>(), frame.residue_added);
    assert_eq!(residue.touched().collect::<Vec<_>>(), frame.residue_touched);

    // Membership and values.
    assert_eq!(
        f.store.set(a).unwrap().len(),
        model.values().filter(|v| v.a.is_some()).count()
    );
    assert_eq!(
        f.store.set(b).unwrap().len(),
        model.values().filter(|v| v.b.is_some()).count()
    );
    for (id, inst) in model.iter() {
        assert!(f.arena.is_live(*id));
        let at = f.at(*id);
        let held = Inst {
            a: f.store.get::<f64>(at, a, f.x).ok().copied(),
            b: f.store.get::<i64>(at, b, f.n).ok().copied(),
        };
        assert_eq!(held, *inst, "{id:?}");
    }
    for id in gone.iter() {
        assert!(!f.arena.is_live(*id), "{id:?} stays gone");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn staged_operations_follow_the_model(steps in proptest::collection::vec(step(), 1..60)) {
        run(steps);
    }
}

/// A fixed-seed run of long sequences reaches every path the model checks.
#[test]
fn the_generator_reaches_every_path() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    let mut total = Reached::default();
    for _ in 0..40 {
        let steps = proptest::collection::vec(step(), 150)
            .new_tree(&mut runner)
            .unwrap()
            .current();
        let r = run(steps);
        total.commits += r.commits;
        total.kept += r.kept;
        total.failed_spawns += r.failed_spawns;
        total.failed_edits += r.failed_edits;
        total.released += r.released;
        total.dropped += r.dropped;
        total.pending_writes += r.pending_writes;
        total.explicit_spawns += r.explicit_spawns;
        total.moves += r.moves;
        total.removals += r.removals;
        total.despawns += r.despawns;
        total.cancels += r.cancels;
        total.frames += r.frames;
        total.dirty_rows += r.dirty_rows;
    }
    let shown = format!("{total:?}");
    for count in [
        total.commits,
        total.kept,
        total.failed_spawns,
        total.failed_edits,
        total.released,
        total.dropped,
        total.pending_writes,
        total.explicit_spawns,
        total.moves,
        total.removals,
        total.despawns,
        total.cancels,
        total.frames,
        total.dirty_rows,
    ] {
        assert!(count > 0, "a path was never reached: {shown}");
    }
}
