//! Model-based property test: queries over random worlds, checked against a brute-force
//! evaluation of their specs after random operations.
//!
//! A world is a real arena (Folders, Models, Parts and Entities under random parents, reparented,
//! tagged, untagged and destroyed, with destruction reported to the store and two drains so slots
//! are reused) beside a component store with five components (adds, inserts, removals, single and
//! column-writer writes including equal ones, saves and loads, redefinitions, store replacement).
//! Several long-lived queries per case, some built before the first operation, are read at random
//! moments through `matches`, `refresh`, `run`, `for_each`, `iter` and update passes. Every third
//! query, and every twin (a second query of the same spec made at the same step), is uncached
//! (`Query::uncached`): read afresh each time, it must agree with the reference as the cached ones
//! do, and rebuild on every read.
//!
//! The reference evaluates every live instance term by term (membership, tags, class, nearest
//! ancestor holding the ancestor component), giving the id-sorted matches with each term's row.
//! Change windows come from an independent record of when each (instance, component) row was added
//! and last actually changed, itself compared with the store's tick arrays after every step; each
//! query keeps its own baseline in the model. The cache generation is predicted from the stamp
//! inputs the crate documents: store identity, the structural revisions of the named components,
//! the tag revision for tag terms and the topology revision for ancestry and class terms.

#![allow(
    clippy::unwrap_used,
    reason = "a test fails by panicking; an unexpected error is a failure"
)]

use std::collections::BTreeMap;

use proptest::option;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use strata_arena::{Arena, ClassId, InstanceId, Revision, Slot, Snapshot, Vec3};
use strata_component_store::{
    ComponentDef, ComponentId, FieldDef, FieldId, InstanceRef, SetSlot, Store, StoreError, StoreId,
    Tick, Value,
};
use strata_query::{ChangeWindow, Driver, MatchRef, Pass, Query, QueryError, QuerySpec};

// ----- Schema. -----

const NAMES: [&str; 5] = ["Alpha", "Beta", "Gamma", "Delta", "Epsilon"];
const TAGS: [&str; 3] = ["red", "green", "blue"];
const CLASSES: [ClassId; 4] = [
    ClassId::FOLDER,
    ClassId::MODEL,
    ClassId::PART,
    ClassId::ENTITY,
];
/// How likely (out of 256) a seeded instance holds each component: unequal sizes make driver
/// choice matter, and the biggest sets outgrow the change log's floor of 64 entries.
const DENSITY: [u8; 5] = [200, 160, 128, 96, 48];
const N: FieldId = FieldId::from_index(0);
const M: FieldId = FieldId::from_index(1);
const V: FieldId = FieldId::from_index(2);
const MAX_QUERIES: usize = 10;

fn def(c: usize) -> ComponentDef {
    ComponentDef::new(NAMES[c])
        .field(FieldDef::number("n", 0.0))
        .field(FieldDef::number("m", 1.0))
        .field(FieldDef::vector("v", Vec3::ZERO))
}

// ----- Specs. -----

/// A spec in the model's terms: component, tag and class indexes.
#[derive(Clone, Debug, Default, PartialEq)]
struct Spec {
    with: Vec<usize>,
    without: Vec<usize>,
    tags: Vec<usize>,
    not_tags: Vec<usize>,
    classes: Option<Vec<usize>>,
    ancestor: Option<usize>,
    added: Vec<usize>,
    changed: Vec<usize>,
}

fn dedup(list: Vec<usize>) -> Vec<usize> {
    let mut out = Vec::new();
    for x in list {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

impl Spec {
    fn build(&self, comps: &[ComponentId]) -> QuerySpec {
        let mut spec = QuerySpec::new();
        for &c in &self.with {
            spec = spec.with(comps[c]);
        }
        for &c in &self.without {
            spec = spec.without(comps[c]);
        }
        for &t in &self.tags {
            spec = spec.tagged(TAGS[t]);
        }
        for &t in &self.not_tags {
            spec = spec.not_tagged(TAGS[t]);
        }
        for &k in self.classes.iter().flatten() {
            spec = spec.class(CLASSES[k]);
        }
        if let Some(c) = self.ancestor {
            spec = spec.ancestor(comps[c]);
        }
        for &c in &self.added {
            spec = spec.added(comps[c]);
        }
        for &c in &self.changed {
            spec = spec.changed(comps[c]);
        }
        spec
    }

    fn filtered(&self) -> bool {
        !self.added.is_empty() || !self.changed.is_empty()
    }

    fn uses_tags(&self) -> bool {
        !self.tags.is_empty() || !self.not_tags.is_empty()
    }

    fn uses_topology(&self) -> bool {
        self.ancestor.is_some() || self.classes.is_some()
    }

    /// The components whose rows decide membership.
    fn structural(&self) -> impl Iterator<Item = usize> + '_ {
        self.with
            .iter()
            .chain(&self.without)
            .chain(self.ancestor.as_ref())
            .copied()
    }

    fn names(&self, c: usize) -> bool {
        self.structural().any(|x| x == c)
    }

    /// The refusals `Query::new` may answer the spec with (empty: it must accept it).
    fn refusals(&self, comps: &[ComponentId]) -> Vec<QueryError> {
        let mut out = Vec::new();
        if self.with.is_empty() && self.tags.is_empty() {
            out.push(QueryError::NoDriver);
        }
        for &c in self.added.iter().chain(&self.changed) {
            if !self.with.contains(&c) {
                out.push(QueryError::ChangeTermNotRequired(comps[c]));
            }
        }
        if self.with.iter().any(|c| self.without.contains(c))
            || self.tags.iter().any(|t| self.not_tags.contains(t))
        {
            out.push(QueryError::Contradiction(String::new()));
        }
        out
    }

    /// The nearest valid spec: change filters only on required components, nothing both
    /// required and excluded, and a driver.
    fn repaired(&self) -> Spec {
        let mut spec = self.clone();
        spec.without.retain(|c| !self.with.contains(c));
        spec.not_tags.retain(|t| !self.tags.contains(t));
        if spec.with.is_empty() && spec.tags.is_empty() {
            let c = (0..NAMES.len())
                .find(|c| !spec.without.contains(c))
                .unwrap();
            spec.with.push(c);
        }
        spec.added.retain(|c| spec.with.contains(c));
        spec.changed.retain(|c| spec.with.contains(c));
        spec
    }
}

fn same_refusal(actual: &QueryError, allowed: &QueryError) -> bool {
    match (actual, allowed) {
        (QueryError::Contradiction(_), QueryError::Contradiction(_)) => true,
        _ => actual == allowed,
    }
}

// ----- Reference evaluation. -----

/// One match as the reference computes it and as a query reports it.
#[derive(Clone, Debug, PartialEq)]
struct Hit {
    id: InstanceId,
    slot: Slot,
    rows: Vec<usize>,
    ancestor: Option<InstanceId>,
}

fn hit_of(m: &MatchRef<'_>, terms: usize) -> Hit {
    Hit {
        id: m.id(),
        slot: m.instance().slot,
        rows: (0..terms).map(|t| m.row(t).unwrap()).collect(),
        ancestor: m.ancestor(),
    }
}

/// Every live instance evaluated against the spec, sorted by id.
fn brute(arena: &Snapshot, store: &Store, comps: &[ComponentId], spec: &Spec) -> Vec<Hit> {
    let mut hits = Vec::new();
    for node in arena.iter() {
        let id = node.id();
        let slot = arena.slot_of(id).unwrap();
        let at = InstanceRef::new(id, slot);
        if !spec.with.iter().all(|&c| store.has(at, comps[c]))
            || spec.without.iter().any(|&c| store.has(at, comps[c]))
            || !spec.tags.iter().all(|&t| arena.has_tag(id, TAGS[t]))
            || spec.not_tags.iter().any(|&t| arena.has_tag(id, TAGS[t]))
        {
            continue;
        }
        if let Some(classes) = &spec.classes {
            let class = arena.class(id).unwrap();
            if !classes.iter().any(|&k| CLASSES[k] == class) {
                continue;
            }
        }
        let ancestor = match spec.ancestor {
            None => None,
            Some(c) => {
                let mut nearest = None;
                for a in arena.ancestors(id) {
                    let slot = arena.slot_of(a).unwrap();
                    if store.has(InstanceRef::new(a, slot), comps[c]) {
                        nearest = Some(a);
                        break;
                    }
                }
                match nearest {
                    Some(a) => Some(a),
                    None => continue,
                }
            }
        };
        let rows = spec
            .with
            .iter()
            .map(|&c| store.row(at, comps[c]).unwrap())
            .collect();
        hits.push(Hit {
            id,
            slot,
            rows,
            ancestor,
        });
    }
    hits.sort_by_key(|h| h.id);
    hits
}

/// What a query's cache stamp is built from, read through public APIs.
#[derive(Clone, Debug, PartialEq)]
struct Inputs {
    store: StoreId,
    structural: Vec<u64>,
    tags: Option<Revision>,
    topology: Option<Revision>,
}

fn inputs(arena: &Snapshot, store: &Store, comps: &[ComponentId], spec: &Spec) -> Inputs {
    Inputs {
        store: store.id(),
        structural: spec
            .structural()
            .map(|c| store.set(comps[c]).unwrap().structural_revision())
            .collect(),
        tags: spec.uses_tags().then(|| arena.revisions().tags()),
        topology: spec.uses_topology().then(|| arena.revisions().topology()),
    }
}

// ----- Operations. -----

#[derive(Clone, Debug)]
struct Seed {
    class: u8,
    parent: Option<u16>,
    comps: [u8; 5],
    tags: [u8; 3],
}

#[derive(Clone, Debug)]
struct QueryGen {
    spec: Spec,
    at: u8,
    twin: bool,
}

#[derive(Clone, Debug)]
enum Op {
    Create {
        class: u8,
        parent: Option<u16>,
        comps: u8,
        tag: Option<usize>,
    },
    Reparent {
        child: u16,
        parent: Option<u16>,
    },
    Destroy {
        who: u16,
        drain: bool,
    },
    Drain,
    Tag {
        who: u16,
        tag: usize,
        add: bool,
    },
    Add {
        who: u16,
        comp: usize,
        insert: bool,
        value: i8,
    },
    Remove {
        who: u16,
        comp: usize,
        member: bool,
    },
    Write {
        who: u16,
        comp: usize,
        field: u8,
        value: i8,
        equal: bool,
    },
    /// Writes most rows of a set at once (more than a quarter of it), through a column writer
    /// or one write at a time; some of the writes store equal values. With `aim`, the set is
    /// one a change filter names.
    Burst {
        comp: usize,
        writer: bool,
        skip: u8,
        equal: bool,
        aim: bool,
    },
    /// Edits a current match of a query in one of its terms: a write (changing or equal), or a
    /// removal and re-add of the row.
    Poke {
        query: u8,
        who: u16,
        term: u8,
        kind: u8,
        value: i8,
    },
    Save {
        comp: usize,
    },
    Load,
    /// Redefines a component with its current rows, less some: the saved component, one a
    /// change filter names, or `comp`, as `target` says.
    Redefine {
        comp: usize,
        drop: u8,
        target: u8,
    },
    SwapStore,
    /// Runs a query and writes through the pass.
    Update {
        query: u8,
        two: bool,
        terms: u8,
    },
    CloneQuery {
        query: u8,
    },
}

/// Whether an operation can only write fields (it adds, removes and moves nothing), so no
/// cache may be rebuilt on its account.
fn only_writes(op: &Op) -> bool {
    match *op {
        Op::Write { .. } | Op::Burst { .. } | Op::Save { .. } => true,
        Op::Update { terms, .. } => terms & 0x80 == 0,
        Op::Poke { kind, query, .. } => {
            kind % 6 != 4 && (query & 0x80 == 0 || !kind.is_multiple_of(3))
        }
        _ => false,
    }
}

/// How a step reads a query.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Read {
    Skip,
    Matches,
    Refresh,
    Run,
    ForEach,
    Iter,
}

impl Read {
    /// Skips about 7 reads in 16 and runs about 1 in 4, so change windows span several
    /// operations.
    fn of(how: u8) -> Self {
        match how % 16 {
            5..=8 => Read::Matches,
            9 => Read::Refresh,
            10 | 11 => Read::Run,
            12 => Read::ForEach,
            13 => Read::Iter,
            _ => Read::Skip,
        }
    }
}

#[derive(Clone, Debug)]
struct Step {
    ops: Vec<Op>,
    reads: Vec<u8>,
}

#[derive(Clone, Debug)]
struct Case {
    world: Vec<Seed>,
    queries: Vec<QueryGen>,
    steps: Vec<Step>,
}

// ----- Harness. -----

#[derive(Clone, Copy, Debug, PartialEq)]
struct RowTicks {
    added: u64,
    changed: u64,
}

struct Saved {
    comp: usize,
    slot: SetSlot,
    /// Members at the save with their added ticks and field values (as bits).
    members: Vec<(InstanceId, u64, [u64; 5])>,
    /// A redefinition since makes the slot unloadable.
    stale: bool,
}

struct Tracked {
    label: String,
    spec: Spec,
    /// Built with `Query::uncached` when false: it rebuilds on every read, with the results a
    /// cached query gives.
    query: Query,
    /// The stamp inputs at the last read (the cache was built or confirmed against them).
    seen: Option<Inputs>,
    /// The store tick of the previous pass (None before the first).
    baseline: Option<u64>,
    /// The store that tick belongs to: a pass against any other store has no window and
    /// yields every match.
    baseline_store: Option<StoreId>,
    /// A row of a component the spec names was added or removed, or the store replaced, since
    /// the last read.
    must_rebuild: bool,
    /// Something other than field writes happened since the last read.
    touched: bool,
}

/// How often each path was reached, by name.
#[derive(Clone, Debug, Default)]
struct Stats(BTreeMap<&'static str, usize>);

impl Stats {
    fn add(&mut self, path: &'static str, n: usize) {
        *self.0.entry(path).or_default() += n;
    }

    fn get(&self, path: &str) -> usize {
        self.0.get(path).copied().unwrap_or(0)
    }
}

struct Harness {
    arena: Arena,
    store: Store,
    comps: Vec<ComponentId>,
    ticks: BTreeMap<(InstanceId, usize), RowTicks>,
    slot_owners: BTreeMap<Slot, InstanceId>,
    saved: Option<Saved>,
    queries: Vec<Tracked>,
    step: usize,
    stats: Stats,
}

/// The initial `m` of an instance's rows: it varies between instances, so passes reading it
/// notice row mix-ups.
fn m_of(id: InstanceId) -> f64 {
    f64::from(u8::try_from(id.get() % 4).unwrap())
}

fn pick<T: Copy>(list: &[T], p: u16) -> Option<T> {
    (!list.is_empty()).then(|| list[usize::from(p) % list.len()])
}

impl Harness {
    fn new() -> Self {
        let arena = Arena::standard();
        let mut store = Store::new();
        let comps: Vec<ComponentId> = (0..NAMES.len())
            .map(|c| store.install(def(c), arena.classes()).unwrap())
            .collect();
        for &c in &comps {
            assert_eq!(store.field(c, "n").unwrap(), N);
            assert_eq!(store.field(c, "m").unwrap(), M);
            assert_eq!(store.field(c, "v").unwrap(), V);
        }
        Self {
            arena,
            store,
            comps,
            ticks: BTreeMap::new(),
            slot_owners: BTreeMap::new(),
            saved: None,
            queries: Vec::new(),
            step: 0,
            stats: Stats::default(),
        }
    }

    fn live(&self) -> Vec<InstanceId> {
        let mut ids: Vec<InstanceId> = self.arena.iter().map(|n| n.id()).collect();
        ids.sort_unstable();
        ids
    }

    fn at(&self, id: InstanceId) -> InstanceRef {
        InstanceRef::new(id, self.arena.slot_of(id).unwrap())
    }

    fn members(&self, c: usize) -> Vec<InstanceId> {
        self.ticks
            .keys()
            .filter(|(_, k)| *k == c)
            .map(|(id, _)| *id)
            .collect()
    }

    /// The components the queries' change filters name (with repeats).
    fn filter_comps(&self) -> Vec<usize> {
        self.queries
            .iter()
            .flat_map(|t| t.spec.added.iter().chain(&t.spec.changed))
            .copied()
            .collect()
    }

    fn tick(&self) -> u64 {
        self.store.tick().0
    }

    /// Marks every query naming `c` as owing a rebuild.
    fn structural_change(&mut self, c: usize) {
        for t in &mut self.queries {
            if t.spec.names(c) {
                t.must_rebuild = true;
            }
        }
    }

    fn touch(&mut self) {
        for t in &mut self.queries {
            t.touched = true;
        }
    }

    // ----- World edits. -----

    fn create(&mut self, class: ClassId, parent: Option<InstanceId>) -> InstanceId {
        let id = self.arena.create(class, parent).unwrap();
        let slot = self.arena.slot_of(id).unwrap();
        if let Some(previous) = self.slot_owners.insert(slot, id) {
            assert_ne!(previous, id);
            self.stats.add("slot_reuses", 1);
        }
        id
    }

    fn add(&mut self, id: InstanceId, c: usize, insert: bool, value: f64) {
        let at = self.at(id);
        let class = self.arena.class(id).unwrap();
        let before = self.tick();
        let present = self.ticks.contains_key(&(id, c));
        let m = m_of(id);
        let result = if insert {
            self.store
                .insert(at, class, self.comps[c])
                .and_then(|mut row| row.set(N, value)?.set(M, m).map(|_| ()))
        } else {
            self.store
                .add(
                    at,
                    class,
                    self.comps[c],
                    [(N, Value::Number(value)), (M, Value::Number(m))],
                )
                .map(|_| ())
        };
        if present {
            assert!(
                matches!(result, Err(StoreError::AlreadyPresent { .. })),
                "adding {} twice to {id:?}: {result:?}",
                NAMES[c]
            );
            assert_eq!(self.tick(), before);
            self.stats.add("already_present", 1);
            return;
        }
        result.unwrap();
        assert_eq!(self.tick(), before + 1, "an add takes one tick");
        assert_eq!(*self.store.get::<f64>(at, self.comps[c], N).unwrap(), value);
        assert_eq!(*self.store.get::<f64>(at, self.comps[c], M).unwrap(), m);
        let t = self.tick();
        self.ticks.insert(
            (id, c),
            RowTicks {
                added: t,
                changed: t,
            },
        );
        self.structural_change(c);
    }

    fn forget(&mut self, ids: &[InstanceId]) {
        for &id in ids {
            for c in 0..NAMES.len() {
                if self.ticks.remove(&(id, c)).is_some() {
                    self.structural_change(c);
                }
            }
        }
    }

    fn drain(&mut self) {
        let drained = self.arena.drain().unwrap();
        self.store.on_reclaimed(&drained.reclaimed);
    }

    /// Records an actual change of one row at the current tick.
    fn changed(&mut self, id: InstanceId, c: usize) {
        let t = self.tick();
        self.ticks.get_mut(&(id, c)).unwrap().changed = t;
    }

    fn write(&mut self, id: InstanceId, c: usize, field: u8, value: i8, equal: bool) {
        let at = self.at(id);
        let comp = self.comps[c];
        let before = self.tick();
        let changed = match field % 4 {
            0 | 1 => {
                let f = if field.is_multiple_of(4) { N } else { M };
                let old = *self.store.get::<f64>(at, comp, f).unwrap();
                let new = if equal { old } else { f64::from(value) };
                let changed = self.store.write(at, comp, f, new).unwrap();
                assert_eq!(changed, new != old, "write of {new} over {old}");
                changed
            }
            2 => {
                let old = *self.store.get::<Vec3>(at, comp, V).unwrap();
                let new = if equal {
                    old
                } else {
                    Vec3::new(f32::from(value), 0.0, 1.0)
                };
                let changed = self.store.write(at, comp, V, new).unwrap();
                assert_eq!(changed, new != old, "write of {new:?} over {old:?}");
                changed
            }
            _ => {
                let old = self.store.get_value(at, comp, N).unwrap();
                let new = if equal {
                    old.clone()
                } else {
                    Value::Number(f64::from(value))
                };
                let changed = self.store.write_value(at, comp, N, new.clone()).unwrap();
                assert_eq!(changed, new != old, "write of {new:?} over {old:?}");
                changed
            }
        };
        if changed {
            assert_eq!(self.tick(), before + 1, "a changing write takes one tick");
            self.changed(id, c);
            self.stats.add("changing_writes", 1);
        } else {
            assert_eq!(self.tick(), before, "an equal write takes no tick");
            self.stats.add("equal_writes", 1);
        }
    }

    /// Half the pokes aim at a query with change filters and at one of its filtered terms, or
    /// (one in three of those) at all of them.
    fn poke(&mut self, query: u8, who: u16, term: u8, kind: u8, value: i8) {
        let filtered: Vec<usize> = (0..self.queries.len())
            .filter(|&i| self.queries[i].spec.filtered())
            .collect();
        let aimed = query & 0x80 != 0 && !filtered.is_empty();
        let qi = if aimed {
            filtered[usize::from(query) % filtered.len()]
        } else if self.queries.is_empty() {
            return;
        } else {
            usize::from(query) % self.queries.len()
        };
        let spec = self.queries[qi].spec.clone();
        let terms: Vec<usize> = if aimed {
            spec.added.iter().chain(&spec.changed).copied().collect()
        } else {
            spec.with.clone()
        };
        let hits: Vec<InstanceId> = brute(&self.arena, &self.store, &self.comps, &spec)
            .iter()
            .map(|h| h.id)
            .collect();
        let Some(id) = pick(&hits, who).filter(|_| !terms.is_empty()) else {
            return;
        };
        let c = terms[usize::from(term) % terms.len()];
        match kind % 6 {
            _ if aimed && kind.is_multiple_of(3) => {
                // Every filtered term of the match: a re-add for added terms, a changing write
                // for changed ones, so the match belongs in the query's next window.
                for &c in &spec.added {
                    self.re_add(id, c, value);
                }
                for &c in &spec.changed {
                    if !spec.added.contains(&c) {
                        let old = *self
                            .store
                            .get::<f64>(self.at(id), self.comps[c], N)
                            .unwrap();
                        assert!(
                            self.store
                                .write(self.at(id), self.comps[c], N, old + 1.0)
                                .unwrap()
                        );
                        self.changed(id, c);
                    }
                }
                self.stats.add("full_pokes", 1);
            }
            0..=2 => self.write(id, c, kind % 2, value, false),
            3 => self.write(id, c, 0, value, true),
            4 => self.re_add(id, c, value),
            _ => self.write(id, c, 2, value, false),
        }
        self.stats.add("pokes", 1);
    }

    fn re_add(&mut self, id: InstanceId, c: usize, value: i8) {
        let at = self.at(id);
        assert!(self.store.remove(at, self.comps[c]).unwrap());
        self.ticks.remove(&(id, c));
        self.structural_change(c);
        self.add(id, c, value % 2 == 0, f64::from(value));
        self.stats.add("re_adds", 1);
    }

    fn burst(&mut self, c: usize, writer: bool, skip: u8, equal: bool) {
        let comp = self.comps[c];
        let ids = self.store.set(comp).unwrap().ids().to_vec();
        let chosen = |row: usize| skip == 0 || !row.is_multiple_of(usize::from(skip) + 1);
        let target = |row: usize, old: f64| {
            if equal && row % 3 == 1 {
                old
            } else {
                old + 1.0
            }
        };
        let before = self.tick();
        let mut changed_ids = Vec::new();
        if writer {
            {
                let mut w = self.store.column_writer::<f64>(comp, N).unwrap();
                assert_eq!(w.ids(), ids.as_slice());
                for (row, &id) in ids.iter().enumerate() {
                    if !chosen(row) {
                        continue;
                    }
                    let old = w.values()[row];
                    let new = target(row, old);
                    assert_eq!(w.write(row, new), Ok(new != old));
                    if new != old {
                        changed_ids.push(id);
                    }
                }
            }
            assert_eq!(
                self.tick(),
                before + u64::from(!changed_ids.is_empty()),
                "one writer's changes share one tick"
            );
            for &id in &changed_ids {
                self.changed(id, c);
            }
            self.stats.add("column_writer_bursts", 1);
        } else {
            for (row, &id) in ids.iter().enumerate() {
                if !chosen(row) {
                    continue;
                }
                let at = self.at(id);
                let old = *self.store.get::<f64>(at, comp, N).unwrap();
                let new = target(row, old);
                let changed = self.store.write(at, comp, N, new).unwrap();
                assert_eq!(changed, new != old);
                if changed {
                    self.changed(id, c);
                    changed_ids.push(id);
                }
            }
            assert_eq!(self.tick(), before + changed_ids.len() as u64);
        }
        self.stats.add("bursts", 1);
    }

    fn load(&mut self) {
        let Some(saved) = &self.saved else { return };
        let c = saved.comp;
        if !saved.members.iter().all(|(id, ..)| self.arena.is_live(*id)) {
            return;
        }
        // The values before the load, for the members held now: a load changes a row (and its
        // changed tick) only where it changes a value.
        let current: BTreeMap<InstanceId, [u64; 5]> = saved
            .members
            .iter()
            .filter(|(id, ..)| self.ticks.contains_key(&(*id, c)))
            .map(|(id, ..)| (*id, self.bits(*id, c)))
            .collect();
        let before = self.tick();
        let result = self.store.load_from(self.comps[c], &saved.slot);
        if saved.stale {
            assert!(
                matches!(result, Err(StoreError::SlotMismatch { .. })),
                "a slot saved before a redefinition must be refused: {result:?}"
            );
            assert_eq!(self.tick(), before);
            self.stats.add("stale_loads", 1);
            return;
        }
        result.unwrap();
        let t = self.tick();
        assert_eq!(t, before + 1, "a load takes one tick");
        let members = saved.members.clone();
        let mut next = BTreeMap::new();
        for (id, added, bits) in members {
            let ticks = match (self.ticks.get(&(id, c)), current.get(&id)) {
                (Some(held), Some(now)) => RowTicks {
                    added,
                    changed: if *now == bits { held.changed } else { t },
                },
                _ => RowTicks {
                    added: t,
                    changed: t,
                },
            };
            next.insert(id, ticks);
        }
        self.ticks.retain(|(_, k), _| *k != c);
        for (id, ticks) in next {
            self.ticks.insert((id, c), ticks);
        }
        self.structural_change(c);
        self.stats.add("loads", 1);
    }

    /// The bits of an instance's field values in component `c`.
    fn bits(&self, id: InstanceId, c: usize) -> [u64; 5] {
        let (at, comp) = (self.at(id), self.comps[c]);
        let number = |f| self.store.get::<f64>(at, comp, f).unwrap().to_bits();
        let v = self.store.get::<Vec3>(at, comp, V).unwrap();
        [
            number(N),
            number(M),
            u64::from(v.x.to_bits()),
            u64::from(v.y.to_bits()),
            u64::from(v.z.to_bits()),
        ]
    }

    fn redefine(&mut self, c: usize, drop: u8) {
        let comp = self.comps[c];
        let set = self.store.set(comp).unwrap();
        let mut rows = Vec::new();
        for (row, (&id, &slot)) in set.ids().iter().zip(set.slots()).enumerate() {
            if drop != 0 && row.is_multiple_of(usize::from(drop) + 2) {
                continue;
            }
            let values = [N, M, V]
                .iter()
                .map(|&f| set.value(row, f).unwrap())
                .collect();
            rows.push((InstanceRef::new(id, slot), values));
        }
        let kept: Vec<InstanceId> = rows
            .iter()
            .map(|(at, _): &(InstanceRef, _)| at.id)
            .collect();
        let before = self.tick();
        self.store
            .redefine(comp, def(c), self.arena.classes(), rows)
            .unwrap();
        let t = self.tick();
        assert_eq!(t, before + 1, "a redefinition takes one tick");
        // Kept rows keep their values, so their ticks too; dropped rows are gone.
        self.ticks.retain(|(id, k), _| *k != c || kept.contains(id));
        if let Some(saved) = &mut self.saved
            && saved.comp == c
        {
            saved.stale = true;
        }
        self.structural_change(c);
        self.stats.add("redefines", 1);
    }

    fn apply(&mut self, op: &Op) {
        let live = self.live();
        let pure = only_writes(op);
        if !pure {
            self.touch();
        }
        match *op {
            Op::Create {
                class,
                parent,
                comps,
                tag,
            } => {
                let parent = parent.and_then(|p| pick(&live, p));
                let id = self.create(CLASSES[usize::from(class) % CLASSES.len()], parent);
                for c in 0..NAMES.len() {
                    if comps & (1 << c) != 0 {
                        self.add(id, c, comps & 0x80 != 0, f64::from(comps >> 5));
                    }
                }
                if let Some(t) = tag {
                    assert!(self.arena.add_tag(id, TAGS[t]).unwrap());
                }
            }
            Op::Reparent { child, parent } => {
                let Some(child) = pick(&live, child) else {
                    return;
                };
                let parent = parent.and_then(|p| pick(&live, p));
                if self.arena.set_parent(child, parent).is_ok() {
                    self.stats.add("reparented", 1);
                    assert_eq!(self.arena.parent(child), parent);
                }
            }
            Op::Destroy { who, drain } => {
                let Some(id) = pick(&live, who) else { return };
                let destruction = self.arena.destroy(id).unwrap();
                self.store.on_destroyed(&destruction.doomed);
                let doomed: Vec<InstanceId> = destruction.doomed.iter().map(|d| d.id).collect();
                self.stats.add("destroyed", doomed.len());
                self.forget(&doomed);
                if drain {
                    self.drain();
                    self.drain();
                }
            }
            Op::Drain => self.drain(),
            Op::Tag { who, tag, add } => {
                let Some(id) = pick(&live, who) else { return };
                let had = self.arena.has_tag(id, TAGS[tag]);
                if add {
                    assert_eq!(self.arena.add_tag(id, TAGS[tag]).unwrap(), !had);
                } else {
                    assert_eq!(self.arena.remove_tag(id, TAGS[tag]).unwrap(), had);
                }
            }
            Op::Add {
                who,
                comp,
                insert,
                value,
            } => {
                let Some(id) = pick(&live, who) else { return };
                self.add(id, comp, insert, f64::from(value));
            }
            Op::Remove { who, comp, member } => {
                let candidates = if member { self.members(comp) } else { live };
                let Some(id) = pick(&candidates, who) else {
                    return;
                };
                let at = self.at(id);
                let before = self.tick();
                let held = self.ticks.remove(&(id, comp)).is_some();
                assert_eq!(self.store.remove(at, self.comps[comp]).unwrap(), held);
                assert_eq!(self.tick(), before + u64::from(held));
                if held {
                    self.structural_change(comp);
                }
            }
            Op::Write {
                who,
                comp,
                field,
                value,
                equal,
            } => {
                let Some(id) = pick(&self.members(comp), who) else {
                    return;
                };
                self.write(id, comp, field, value, equal);
            }
            Op::Burst {
                comp,
                writer,
                skip,
                equal,
                aim,
            } => {
                let comp = match pick(&self.filter_comps(), u16::try_from(comp).unwrap()) {
                    Some(c) if aim => c,
                    _ => comp,
                };
                self.burst(comp, writer, skip, equal);
            }
            Op::Poke {
                query,
                who,
                term,
                kind,
                value,
            } => self.poke(query, who, term, kind, value),
            Op::Save { comp } => {
                let mut slot = SetSlot::new();
                self.store.save_into(self.comps[comp], &mut slot).unwrap();
                let members = self
                    .ticks
                    .iter()
                    .filter(|((_, k), _)| *k == comp)
                    .map(|((id, _), ticks)| (*id, ticks.added, self.bits(*id, comp)))
                    .collect();
                self.saved = Some(Saved {
                    comp,
                    slot,
                    members,
                    stale: false,
                });
            }
            Op::Load => self.load(),
            Op::Redefine { comp, drop, target } => {
                let filtered = pick(&self.filter_comps(), u16::try_from(comp).unwrap());
                let comp = match (target % 3, &self.saved, filtered) {
                    (0, Some(s), _) => s.comp,
                    (1, _, Some(c)) => c,
                    _ => comp,
                };
                self.redefine(comp, drop);
            }
            Op::SwapStore => {
                self.store = self.store.snapshot();
                for t in &mut self.queries {
                    t.must_rebuild = true;
                }
                self.stats.add("store_swaps", 1);
            }
            Op::Update { query, two, terms } => self.update(query, two, terms),
            Op::CloneQuery { query } => {
                if self.queries.is_empty() || self.queries.len() >= MAX_QUERIES {
                    return;
                }
                let i = usize::from(query) % self.queries.len();
                let original = &self.queries[i];
                let copy = Tracked {
                    label: format!("clone of {}", original.label),
                    spec: original.spec.clone(),
                    query: original.query.clone(),
                    seen: original.seen.clone(),
                    baseline: original.baseline,
                    baseline_store: original.baseline_store,
                    must_rebuild: original.must_rebuild,
                    touched: original.touched,
                };
                self.queries.push(copy);
                self.stats.add("clones", 1);
            }
        }
    }

    // ----- Model checks. -----

    /// The store's membership and tick arrays agree with the model (so a disagreement found
    /// later is the query's own).
    fn check_store(&self) {
        for (c, &comp) in self.comps.iter().enumerate() {
            let set = self.store.set(comp).unwrap();
            let expected = self.ticks.keys().filter(|(_, k)| *k == c).count();
            assert_eq!(
                set.len(),
                expected,
                "rows of {} (step {})",
                NAMES[c],
                self.step
            );
            for row in 0..set.len() {
                let id = set.ids()[row];
                assert!(
                    self.arena.is_live(id),
                    "{id:?} holds {} after death",
                    NAMES[c]
                );
                assert_eq!(Some(set.slots()[row]), self.arena.slot_of(id));
                let ticks = self.ticks.get(&(id, c)).unwrap_or_else(|| {
                    panic!("{id:?} holds {} in the store only", NAMES[c]);
                });
                assert_eq!(
                    (
                        set.added_ticks().get(row).expect("a row of the set").0,
                        set.changed_ticks().get(row).expect("a row of the set").0
                    ),
                    (ticks.added, ticks.changed),
                    "store ticks (added, changed) of {id:?} in {} at step {}",
                    NAMES[c],
                    self.step
                );
            }
        }
    }

    /// Spawns a query for `spec`: uncached when `cached` is false.
    fn spawn_query(&mut self, spec: &Spec, label: String, cached: bool) {
        if self.queries.len() >= MAX_QUERIES {
            return;
        }
        let refusals = spec.refusals(&self.comps);
        match Query::new(spec.build(&self.comps)) {
            Ok(_) => assert!(
                refusals.is_empty(),
                "{spec:?} accepted despite {refusals:?}"
            ),
            Err(e) => {
                assert!(
                    refusals.iter().any(|r| same_refusal(&e, r)),
                    "{spec:?} refused with {e:?}, expected one of {refusals:?}"
                );
                self.stats.add("refusals", 1);
                match e {
                    QueryError::NoDriver => self.stats.add("no_driver", 1),
                    QueryError::ChangeTermNotRequired(_) => {
                        self.stats.add("change_term_refused", 1)
                    }
                    _ => self.stats.add("contradictions", 1),
                }
            }
        }
        let spec = spec.repaired();
        assert!(spec.refusals(&self.comps).is_empty());
        let query = if cached {
            Query::new(spec.build(&self.comps)).unwrap()
        } else {
            Query::uncached(spec.build(&self.comps)).unwrap()
        };
        assert_eq!(query.is_cached(), cached);
        let s = query.spec();
        let required: Vec<ComponentId> = spec.with.iter().map(|&c| self.comps[c]).collect();
        assert_eq!(s.required(), required.as_slice());
        for (t, &c) in required.iter().enumerate() {
            assert_eq!(s.term(c), Some(t));
        }
        assert_eq!(s.has_change_filters(), spec.filtered());
        assert_eq!(s.uses_tags(), spec.uses_tags());
        assert_eq!(s.uses_topology(), spec.uses_topology());
        assert_eq!(query.generation(), 0);
        assert_eq!(query.driver(), None);
        assert_eq!(query.baseline(), None);
        self.queries.push(Tracked {
            label,
            spec,
            query,
            seen: None,
            baseline: None,
            baseline_store: None,
            must_rebuild: true,
            touched: true,
        });
    }

    /// The reference for one read of query `qi`: the full matches, the selection a pass must
    /// yield, and whether the read must rebuild the cache.
    fn expect(&self, qi: usize) -> (Vec<Hit>, Vec<Hit>, Inputs, bool) {
        let t = &self.queries[qi];
        let full = brute(&self.arena, &self.store, &self.comps, &t.spec);
        let counts = |terms: &[usize], added: bool, hit: &Hit| {
            terms.iter().all(|&c| {
                let ticks = self.ticks[&(hit.id, c)];
                let tick = if added { ticks.added } else { ticks.changed };
                t.baseline.is_none_or(|b| tick > b)
            })
        };
        let selected = if t.spec.filtered() && !self.window_unavailable(qi) {
            full.iter()
                .filter(|h| counts(&t.spec.added, true, h) && counts(&t.spec.changed, false, h))
                .cloned()
                .collect()
        } else {
            full.clone()
        };
        let now = inputs(&self.arena, &self.store, &self.comps, &t.spec);
        let rebuild = !t.query.is_cached() || t.seen.as_ref() != Some(&now);
        (full, selected, now, rebuild)
    }

    /// Whether query `qi`'s baseline was taken against another store than the present one.
    fn window_unavailable(&self, qi: usize) -> bool {
        let t = &self.queries[qi];
        t.spec.filtered() && t.baseline_store.is_some_and(|s| s != self.store.id())
    }

    /// Bookkeeping after a read: generation, driver, the owed and forbidden rebuilds.
    fn after_read(&mut self, qi: usize, generation: u64, now: Inputs, rebuild: bool) {
        let step = self.step;
        let t = &mut self.queries[qi];
        let label = &t.label;
        if t.query.is_cached() {
            assert_eq!(
                t.query.generation(),
                generation + u64::from(rebuild),
                "{label}: generation must advance exactly when the stamp inputs changed (step {step})"
            );
        } else {
            // A read may refresh more than once (a pass, then its matches); each rebuilds.
            assert!(
                t.query.generation() > generation,
                "{label}: an uncached query rebuilds at every read (step {step})"
            );
        }
        if t.must_rebuild {
            assert!(
                rebuild,
                "{label}: rows of a named component moved, yet the cache was kept (step {step})"
            );
        }
        if !t.query.is_cached() {
            self.stats.add("uncached_reads", 1);
        } else if !t.touched && t.seen.is_some() {
            assert!(
                !rebuild,
                "{label}: only field writes happened, yet the cache was rebuilt (step {step})"
            );
            self.stats.add("write_only_reuses", 1);
        }
        t.seen = Some(now);
        t.must_rebuild = false;
        t.touched = false;
        if rebuild {
            self.stats.add("rebuilds", 1);
        } else {
            self.stats.add("reuses", 1);
        }
        self.stats.add("reads", 1);

        // The driver is a smallest required set or tag.
        let spec = &t.spec;
        let sizes = spec
            .with
            .iter()
            .map(|&c| self.store.set(self.comps[c]).unwrap().len())
            .chain(spec.tags.iter().map(|&g| self.arena.tag_count(TAGS[g])));
        let smallest = sizes.min().unwrap();
        match t.query.driver().unwrap() {
            Driver::Component(c) => {
                assert!(spec.with.iter().any(|&k| self.comps[k] == *c), "{label}");
                assert_eq!(
                    self.store.set(*c).unwrap().len(),
                    smallest,
                    "{label}: driver {c:?} is not a smallest candidate set (step {step})"
                );
                self.stats.add("component_drivers", 1);
            }
            Driver::Tag(g) => {
                assert!(spec.tags.iter().any(|&k| TAGS[k] == &**g), "{label}");
                assert_eq!(
                    self.arena.tag_count(g),
                    smallest,
                    "{label}: driver tag {g} is not a smallest candidate set (step {step})"
                );
                self.stats.add("tag_drivers", 1);
            }
        }
    }

    fn count_hits(&mut self, spec_has_ancestor: bool, spec_has_class: bool, full: &[Hit]) {
        if spec_has_ancestor {
            self.stats.add("ancestor_hits", full.len());
        }
        if spec_has_class {
            self.stats.add("class_filtered_hits", full.len());
        }
    }

    /// Records which path a filtered pass will take (change log or scan).
    fn count_run(&mut self, qi: usize, full: &[Hit], selected: &[Hit]) {
        let t = &self.queries[qi];
        if !t.spec.filtered() {
            return;
        }
        self.stats.add("filtered_runs", 1);
        match t.baseline {
            None => self.stats.add("first_runs", 1),
            Some(_) if self.window_unavailable(qi) => self.stats.add("unavailable_windows", 1),
            Some(b) => {
                let logged = t.spec.added.iter().chain(&t.spec.changed).any(|&c| {
                    self.store
                        .set(self.comps[c])
                        .unwrap()
                        .changes_since(Tick(b))
                        .is_some()
                });
                if logged {
                    self.stats.add("logged_runs", 1);
                } else {
                    self.stats.add("scanned_runs", 1);
                    if !selected.is_empty() {
                        self.stats.add("scanned_selections", 1);
                    }
                }
            }
        }
        if selected.is_empty() {
            self.stats.add("empty_selections", 1);
        } else if selected.len() < full.len() {
            self.stats.add("partial_selections", 1);
        } else {
            self.stats.add("whole_selections", 1);
        }
    }

    /// One read of query `qi` through the entry point `how`, against the arena or a snapshot of
    /// it.
    fn read(&mut self, qi: usize, how: Read, through_snapshot: bool) {
        if how == Read::Skip {
            return;
        }
        let snapshot = through_snapshot.then(|| self.arena.snapshot());
        let (full, selected, now, rebuild) = self.expect(qi);
        let generation = self.queries[qi].query.generation();
        let step = self.step;
        let running = matches!(how, Read::Run | Read::ForEach | Read::Iter);
        if running {
            self.count_run(qi, &full, &selected);
        }
        let (has_ancestor, has_class) = {
            let s = &self.queries[qi].spec;
            (s.ancestor.is_some(), s.classes.is_some())
        };
        self.count_hits(has_ancestor, has_class, &full);
        let run_tick = self.tick();
        let unavailable = self.window_unavailable(qi);
        {
            let Self {
                arena,
                store,
                queries,
                comps,
                stats,
                ..
            } = self;
            let view: &Snapshot = snapshot.as_ref().unwrap_or(&**arena);
            let t = &mut queries[qi];
            let terms = t.spec.with.len();
            let label = t.label.clone();
            match how {
                Read::Skip => {}
                Read::Matches | Read::Refresh => {
                    if how == Read::Refresh {
                        assert_eq!(
                            t.query.refresh(view, store).unwrap(),
                            rebuild,
                            "{label}: refresh must report a rebuild exactly when the stamp moved \
                             (step {step})"
                        );
                    }
                    let m = t.query.matches(view, store).unwrap();
                    check_matches(&m, &full, store, comps, &t.spec, stats, &label, step);
                }
                Read::Run => {
                    let pass = t.query.run(view, store).unwrap();
                    check_pass(
                        &pass,
                        &full,
                        &selected,
                        unavailable,
                        store,
                        comps,
                        &t.spec,
                        &label,
                        step,
                    );
                }
                Read::ForEach => {
                    let mut got = Vec::new();
                    t.query
                        .for_each(view, store, |m| got.push(hit_of(&m, terms)))
                        .unwrap();
                    assert_eq!(got, selected, "{label}: for_each (step {step})");
                }
                Read::Iter => {
                    let iter = t.query.iter(view, store).unwrap();
                    assert_eq!(iter.len(), selected.len(), "{label}: iter length");
                    let got: Vec<Hit> = iter.map(|m| hit_of(&m, terms)).collect();
                    assert_eq!(got, selected, "{label}: iter (step {step})");
                }
            }
            if running && t.spec.filtered() {
                t.baseline = Some(run_tick);
                t.baseline_store = Some(store.id());
            }
            let expected_baseline = t.baseline.map(Tick);
            assert_eq!(
                t.query.baseline(),
                expected_baseline,
                "{label}: baseline (step {step})"
            );
        }
        self.after_read(qi, generation, now, rebuild);
    }

    /// Runs a query and writes through the pass: `update_each` on one term, or `update` from
    /// another term's (or the same term's other) field.
    fn update(&mut self, query: u8, two: bool, terms_pick: u8) {
        if self.queries.is_empty() {
            return;
        }
        let qi = usize::from(query) % self.queries.len();
        let terms = self.queries[qi].spec.with.len();
        if terms == 0 {
            return;
        }
        let (full, selected, now, rebuild) = self.expect(qi);
        let generation = self.queries[qi].query.generation();
        let step = self.step;
        self.count_run(qi, &full, &selected);
        let run_tick = self.tick();
        let wt = usize::from(terms_pick) % terms;
        let rt = usize::from(terms_pick / 4) % terms;
        let wc = self.comps[self.queries[qi].spec.with[wt]];
        let rc = self.comps[self.queries[qi].spec.with[rt]];
        let dense = |t: usize| full.iter().enumerate().all(|(i, h)| h.rows[t] == i);
        if !self.queries[qi].spec.filtered() && dense(wt) && dense(rt) && !full.is_empty() {
            self.stats.add(
                if two {
                    "dense_updates"
                } else {
                    "dense_each_updates"
                },
                1,
            );
        }
        // The values each selected match should end with.
        let plan: Vec<(InstanceId, f64, f64)> = selected
            .iter()
            .map(|h| {
                let at = InstanceRef::new(h.id, h.slot);
                let old = *self.store.get::<f64>(at, wc, N).unwrap();
                let new = if two {
                    let r = *self.store.get::<f64>(at, rc, M).unwrap();
                    if old < 3.0 { old + r } else { old }
                } else if old < 3.0 {
                    old + 1.0
                } else {
                    old
                };
                (h.id, old, new)
            })
            .collect();
        // With the high bit, a row of the written component is removed and added back between
        // the run and the write: the pass is stale and must refuse to read or write.
        let stale = (terms_pick & 0x80 != 0).then(|| full.first()).flatten();
        let unavailable = self.window_unavailable(qi);
        let (changed, readded) = {
            let Self {
                arena,
                store,
                queries,
                comps,
                ..
            } = self;
            let t = &mut queries[qi];
            let label = t.label.clone();
            let pass = t.query.run(arena, store).unwrap();
            check_pass(
                &pass,
                &full,
                &selected,
                unavailable,
                store,
                comps,
                &t.spec,
                &label,
                step,
            );
            let other = store.snapshot();
            assert!(
                matches!(
                    pass.column::<f64>(&other, wt, N),
                    Err(QueryError::StaleMatches)
                ),
                "{label}: a pass must refuse a store it was not built against"
            );
            let result = if let Some(h) = stale {
                let at = InstanceRef::new(h.id, h.slot);
                let class = arena.class(h.id).unwrap();
                assert!(store.remove(at, wc).unwrap());
                store
                    .add(
                        at,
                        class,
                        wc,
                        [(N, Value::Number(0.0)), (M, Value::Number(m_of(h.id)))],
                    )
                    .unwrap();
                let tick = store.tick();
                assert!(matches!(
                    pass.column::<f64>(store, wt, N),
                    Err(QueryError::StaleMatches)
                ));
                assert!(matches!(
                    pass.update_each::<f64>(store, (wt, N), |w| w + 1.0),
                    Err(QueryError::StaleMatches)
                ));
                assert!(matches!(
                    pass.update::<f64, f64>(store, (wt, N), (rt, M), |w, r| w + r),
                    Err(QueryError::StaleMatches)
                ));
                assert_eq!(store.tick(), tick, "{label}: a refused pass writes nothing");
                (0, Some(h.id))
            } else if two {
                let changed =
                    pass.update::<f64, f64>(store, (wt, N), (rt, M), |w, r| {
                        if *w < 3.0 { w + r } else { *w }
                    })
                    .unwrap();
                (changed, None)
            } else {
                let changed = pass
                    .update_each::<f64>(store, (wt, N), |w| if *w < 3.0 { w + 1.0 } else { *w })
                    .unwrap();
                (changed, None)
            };
            if t.spec.filtered() {
                t.baseline = Some(run_tick);
                t.baseline_store = Some(store.id());
            }
            assert_eq!(
                t.query.baseline(),
                t.baseline.map(Tick),
                "{label}: baseline"
            );
            result
        };
        self.after_read(qi, generation, now, rebuild);
        let c = self.queries[qi].spec.with[wt];
        if let Some(id) = readded {
            let t = self.tick();
            assert_eq!(t, run_tick + 2, "a removal and an add take a tick each");
            self.ticks.insert(
                (id, c),
                RowTicks {
                    added: t,
                    changed: t,
                },
            );
            self.structural_change(c);
            self.touch();
            self.stats.add("stale_passes", 1);
            return;
        }
        let expected: Vec<InstanceId> = plan
            .iter()
            .filter(|(_, old, new)| old != new)
            .map(|(id, _, _)| *id)
            .collect();
        assert_eq!(changed, expected.len(), "rows an update pass changed");
        assert_eq!(self.tick(), run_tick + u64::from(!expected.is_empty()));
        for (id, _, new) in &plan {
            let at = self.at(*id);
            assert_eq!(*self.store.get::<f64>(at, wc, N).unwrap(), *new);
        }
        for id in expected {
            self.changed(id, c);
        }
        self.stats.add("update_passes", 1);
        self.stats.add("update_changes", changed);
    }

    fn run_case(&mut self, case: &Case) {
        for seed in &case.world {
            let live = self.live();
            let parent = seed.parent.and_then(|p| pick(&live, p));
            let id = self.create(CLASSES[usize::from(seed.class) % CLASSES.len()], parent);
            for (c, &roll) in seed.comps.iter().enumerate() {
                if roll < DENSITY[c] {
                    self.add(id, c, roll.is_multiple_of(2), f64::from(roll % 5));
                }
            }
            for (g, &roll) in seed.tags.iter().enumerate() {
                if roll < 80 {
                    assert!(self.arena.add_tag(id, TAGS[g]).unwrap());
                }
            }
        }
        self.check_store();
        for (s, step) in case.steps.iter().enumerate() {
            self.step = s;
            for (i, q) in case.queries.iter().enumerate() {
                if usize::from(q.at) == s {
                    // Every third query is uncached, and every twin: the same spec read
                    // through the cache and afresh, each against the reference.
                    self.spawn_query(&q.spec, format!("query {i}"), i % 3 != 2);
                    if q.twin {
                        self.spawn_query(&q.spec, format!("uncached twin of query {i}"), false);
                        self.stats.add("twins", 1);
                    }
                }
            }
            for op in &step.ops {
                self.apply(op);
                self.check_store();
            }
            for qi in 0..self.queries.len() {
                let how = step.reads.get(qi).copied().unwrap_or(0);
                self.read(qi, Read::of(how), how & 16 != 0);
            }
        }
        // A last full read and pass of every query.
        self.step = case.steps.len();
        for qi in 0..self.queries.len() {
            self.read(qi, Read::Matches, false);
            self.read(qi, Read::Run, false);
        }
    }
}

#[allow(
    clippy::too_many_arguments,
    reason = "the reference, the store and the labels a failure message needs"
)]
fn check_matches(
    m: &strata_query::Matches<'_>,
    full: &[Hit],
    store: &Store,
    comps: &[ComponentId],
    spec: &Spec,
    stats: &mut Stats,
    label: &str,
    step: usize,
) {
    let terms = spec.with.len();
    let ids: Vec<InstanceId> = full.iter().map(|h| h.id).collect();
    assert_eq!(
        m.ids(),
        ids.as_slice(),
        "{label}: matching ids (step {step})"
    );
    assert_eq!(m.len(), full.len());
    assert_eq!(m.is_empty(), full.is_empty());
    let slots: Vec<Slot> = full.iter().map(|h| h.slot).collect();
    assert_eq!(m.slots(), slots.as_slice(), "{label}: slots (step {step})");
    for t in 0..terms {
        let rows: Vec<usize> = m.rows(t).unwrap().iter().map(|&r| r as usize).collect();
        let expected: Vec<usize> = full.iter().map(|h| h.rows[t]).collect();
        assert_eq!(rows, expected, "{label}: rows of term {t} (step {step})");
        let dense = rows.iter().enumerate().all(|(i, &r)| i == r);
        assert_eq!(m.is_dense(t), dense, "{label}: density of term {t}");
        let run = rows
            .first()
            .filter(|&&first| rows.iter().enumerate().all(|(i, &r)| r == first + i))
            .map(|&first| first as u32);
        assert_eq!(m.run_start(t), run, "{label}: run of term {t}");
        if run.is_some_and(|first| first > 0) {
            stats.add("offset_runs", 1);
        }
        if dense {
            stats.add("dense_terms", 1);
        } else {
            stats.add("sparse_terms", 1);
        }
    }
    assert!(matches!(m.rows(terms), Err(QueryError::NoSuchTerm(_))));
    if spec.ancestor.is_some() {
        let ancestors: Vec<InstanceId> = full.iter().map(|h| h.ancestor.unwrap()).collect();
        assert_eq!(
            m.ancestors(),
            ancestors.as_slice(),
            "{label}: nearest ancestors"
        );
    } else {
        assert!(m.ancestors().is_empty());
    }
    for (i, h) in full.iter().enumerate() {
        let r = m.get(i).unwrap();
        assert_eq!(r.index(), i);
        assert_eq!(hit_of(&r, terms), *h, "{label}: match {i} (step {step})");
        for t in 0..terms {
            let at = InstanceRef::new(h.id, h.slot);
            let c = comps[spec.with[t]];
            assert_eq!(
                r.get::<f64>(store, t, N).unwrap(),
                store.get::<f64>(at, c, N).unwrap()
            );
            assert_eq!(r.handle(store, t).unwrap().row(store).unwrap(), h.rows[t]);
        }
    }
    assert!(m.get(full.len()).is_none());
}

#[allow(
    clippy::too_many_arguments,
    reason = "the reference, the store and the labels a failure message needs"
)]
fn check_pass(
    pass: &Pass<'_>,
    full: &[Hit],
    selected: &[Hit],
    unavailable: bool,
    store: &Store,
    comps: &[ComponentId],
    spec: &Spec,
    label: &str,
    step: usize,
) {
    let terms = spec.with.len();
    let ids: Vec<InstanceId> = full.iter().map(|h| h.id).collect();
    assert_eq!(
        pass.matches().ids(),
        ids.as_slice(),
        "{label}: pass matches (step {step})"
    );
    let got: Vec<Hit> = pass.iter().map(|m| hit_of(&m, terms)).collect();
    assert_eq!(
        got, selected,
        "{label}: the pass must yield exactly the matches whose filtered rows moved past the \
         baseline, in id order (step {step})"
    );
    assert_eq!(pass.len(), selected.len());
    assert_eq!(pass.is_empty(), selected.is_empty());
    assert_eq!(pass.iter().len(), selected.len());
    assert_eq!(
        pass.window_unavailable(),
        unavailable,
        "{label}: the window is unavailable exactly when the baseline came from another store \
         (step {step})"
    );
    match pass.window() {
        ChangeWindow::Unfiltered => assert!(!spec.filtered(), "{label}: window of a filter"),
        ChangeWindow::Since(_) => assert!(spec.filtered() && !unavailable, "{label}: window"),
        ChangeWindow::Unavailable => assert!(spec.filtered() && unavailable, "{label}: window"),
        _ => panic!("{label}: an unknown window"),
    }
    match pass.selection() {
        None => assert!(
            !spec.filtered() || unavailable,
            "{label}: a filtered pass with a window must select"
        ),
        Some(selection) => {
            assert!(
                spec.filtered(),
                "{label}: an unfiltered pass yields every match"
            );
            let positions: Vec<u32> = selected
                .iter()
                .map(|h| u32::try_from(ids.binary_search(&h.id).unwrap()).unwrap())
                .collect();
            assert_eq!(
                selection,
                positions.as_slice(),
                "{label}: selection indexes"
            );
        }
    }
    for t in 0..terms {
        let c = comps[spec.with[t]];
        let numbers = pass.column::<f64>(store, t, N).unwrap();
        let vectors = pass.column::<Vec3>(store, t, V).unwrap();
        for (i, h) in full.iter().enumerate() {
            let at = InstanceRef::new(h.id, h.slot);
            assert_eq!(
                numbers.get(i),
                Some(store.get::<f64>(at, c, N).unwrap()),
                "{label}: term column {t} at match {i} (step {step})"
            );
            assert_eq!(vectors.get(i), Some(store.get::<Vec3>(at, c, V).unwrap()));
        }
    }
    assert!(matches!(
        pass.column::<f64>(store, terms, N),
        Err(QueryError::NoSuchTerm(_))
    ));
}

// ----- Strategies. -----

fn indexes(below: usize, most: usize) -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0..below, 0..=most).prop_map(dedup)
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        indexes(NAMES.len(), 3),
        indexes(NAMES.len(), 2),
        indexes(TAGS.len(), 1),
        indexes(TAGS.len(), 1),
        option::weighted(
            0.3,
            prop::collection::vec(0..CLASSES.len(), 1..=2).prop_map(dedup),
        ),
        option::weighted(0.3, 0..NAMES.len()),
        indexes(NAMES.len(), 2),
        indexes(NAMES.len(), 2),
    )
        .prop_map(
            |(with, without, tags, not_tags, classes, ancestor, added, changed)| Spec {
                with,
                without,
                tags,
                not_tags,
                classes,
                ancestor,
                added,
                changed,
            },
        )
}

fn query_gen(steps: u8) -> impl Strategy<Value = QueryGen> {
    (
        prop_oneof![
            3 => spec(),
            // One plain term: its rows often are the whole set in id order (a dense walk).
            1 => (0..NAMES.len()).prop_map(|c| Spec {
                with: vec![c],
                ..Spec::default()
            }),
        ],
        prop_oneof![Just(0u8), 0..steps],
        prop::bool::weighted(0.3),
    )
        .prop_map(|(spec, at, twin)| QueryGen { spec, at, twin })
}

fn seed() -> impl Strategy<Value = Seed> {
    (
        any::<u8>(),
        option::weighted(0.8, any::<u16>()),
        any::<[u8; 5]>(),
        any::<[u8; 3]>(),
    )
        .prop_map(|(class, parent, comps, tags)| Seed {
            class,
            parent,
            comps,
            tags,
        })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (any::<u8>(), option::of(any::<u16>()), any::<u8>(), option::of(0..TAGS.len()))
            .prop_map(|(class, parent, comps, tag)| Op::Create { class, parent, comps, tag }),
        3 => (any::<u16>(), option::weighted(0.8, any::<u16>()))
            .prop_map(|(child, parent)| Op::Reparent { child, parent }),
        2 => (any::<u16>(), any::<bool>()).prop_map(|(who, drain)| Op::Destroy { who, drain }),
        1 => Just(Op::Drain),
        3 => (any::<u16>(), 0..TAGS.len(), any::<bool>())
            .prop_map(|(who, tag, add)| Op::Tag { who, tag, add }),
        5 => (any::<u16>(), 0..NAMES.len(), any::<bool>(), -2i8..4)
            .prop_map(|(who, comp, insert, value)| Op::Add { who, comp, insert, value }),
        4 => (any::<u16>(), 0..NAMES.len(), prop::bool::weighted(0.8))
            .prop_map(|(who, comp, member)| Op::Remove { who, comp, member }),
        12 => (any::<u16>(), 0..NAMES.len(), any::<u8>(), -2i8..4, prop::bool::weighted(0.3))
            .prop_map(|(who, comp, field, value, equal)| Op::Write { who, comp, field, value, equal }),
        3 => (0..NAMES.len(), any::<bool>(), 0u8..4, any::<bool>(), any::<bool>())
            .prop_map(|(comp, writer, skip, equal, aim)| Op::Burst { comp, writer, skip, equal, aim }),
        16 => (any::<u8>(), any::<u16>(), any::<u8>(), any::<u8>(), -2i8..4)
            .prop_map(|(query, who, term, kind, value)| Op::Poke { query, who, term, kind, value }),
        1 => (0..NAMES.len()).prop_map(|comp| Op::Save { comp }),
        2 => Just(Op::Load),
        2 => (0..NAMES.len(), 0u8..4, any::<u8>())
            .prop_map(|(comp, drop, target)| Op::Redefine { comp, drop, target }),
        1 => Just(Op::SwapStore),
        4 => (any::<u8>(), any::<bool>(), any::<u8>())
            .prop_map(|(query, two, terms)| Op::Update { query, two, terms }),
        1 => any::<u8>().prop_map(|query| Op::CloneQuery { query }),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    (
        prop::collection::vec(op(), 1..=3),
        prop::collection::vec(any::<u8>(), MAX_QUERIES),
    )
        .prop_map(|(ops, reads)| Step { ops, reads })
}

const STEPS: u8 = 60;

fn case() -> impl Strategy<Value = Case> {
    (
        // Small worlds, and worlds whose biggest sets outgrow the change log's floor.
        prop_oneof![
            1 => prop::collection::vec(seed(), 4..=40),
            2 => prop::collection::vec(seed(), 64..=200),
        ],
        prop::collection::vec(query_gen(STEPS), 2..=6),
        prop::collection::vec(step(), 1..=usize::from(STEPS)),
    )
        .prop_map(|(world, queries, steps)| Case {
            world,
            queries,
            steps,
        })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn queries_agree_with_brute_force(case in case()) {
        Harness::new().run_case(&case);
    }
}

// ----- Deterministic runs. -----

/// Cases drawn from a fixed seed must reach every path the property test checks, so it is not
/// vacuous.
#[test]
fn fixed_cases_reach_every_path() {
    let mut runner = TestRunner::deterministic();
    let strategy = case();
    let mut total = Stats::default();
    for _ in 0..48 {
        let case = strategy.new_tree(&mut runner).unwrap().current();
        let mut harness = Harness::new();
        harness.run_case(&case);
        for (path, n) in harness.stats.0 {
            total.add(path, n);
        }
    }
    for path in [
        "rebuilds",
        "reuses",
        "write_only_reuses",
        "uncached_reads",
        "component_drivers",
        "tag_drivers",
        "ancestor_hits",
        "class_filtered_hits",
        "dense_terms",
        "sparse_terms",
        "offset_runs",
        "first_runs",
        "unavailable_windows",
        "logged_runs",
        "scanned_runs",
        "scanned_selections",
        "pokes",
        "full_pokes",
        "re_adds",
        "partial_selections",
        "whole_selections",
        "empty_selections",
        "no_driver",
        "change_term_refused",
        "contradictions",
        "twins",
        "clones",
        "slot_reuses",
        "destroyed",
        "reparented",
        "equal_writes",
        "changing_writes",
        "column_writer_bursts",
        "bursts",
        "loads",
        "stale_loads",
        "redefines",
        "store_swaps",
        "update_passes",
        "stale_passes",
        "dense_updates",
        "update_changes",
        "already_present",
    ] {
        assert!(
            total.get(path) > 0,
            "the runs never reached `{path}`: {total:?}"
        );
    }
}
