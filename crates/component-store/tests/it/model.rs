//! Model-based property test: random operation sequences run against the component store, beside
//! a real arena, and against a plain reference model built from hash maps, comparing the two
//! after every step.
//!
//! The model keeps, per component, each member's slot, field values, added and changed ticks
//! and dirty fields, the structural revision and the whole removal history, plus the store's
//! mutation tick and the events observed components must queue. `requires` cascades, destruction
//! policies, reclamation, snapshot slots, bulk adds and the explicit eviction of rows left by
//! unreported destructions are simulated independently of the store's code; equal writes are
//! bit-identical ones, every set counts exactly the rows with dirty fields, and every set's
//! change log lists every row changed or added after each baseline it answers for.
//! Instances come from an `Arena`, so destroyed instances' slots really are reused. Every stored
//! store snapshot keeps the model copy taken with it and is re-checked after every later step.

#![allow(
    clippy::unwrap_used,
    reason = "a test fails by panicking; an unexpected error is a failure"
)]

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::fmt::Debug;
use std::sync::Arc;

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use strata_arena::{Arena, ClassId, Doomed, InstanceId, SavePoint, Slot, Vec3};
use strata_component_store::{
    ComponentDef, ComponentHandle, ComponentId, FieldDef, FieldId, FieldType, InstanceRef,
    ListValue, REMOVAL_LOG_CAPACITY, RefPolicy, RemovalReader, Removals, SetSlot, Store,
    StoreError, StoreEvent, Tick, Value,
};

// ----- Schema. -----

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Number,
    Integer,
    Boolean,
    Text,
    Vector,
    Ref,
    RefList,
    IntList,
}

impl Kind {
    fn holds_refs(self) -> bool {
        matches!(self, Kind::Ref | Kind::RefList)
    }
}

#[derive(Clone, Copy, Debug)]
enum Init {
    Num(f64),
    Int(i64),
    Bool(bool),
    Text(&'static str),
    Vector(f32, f32, f32),
    Empty,
}

struct FieldSpec {
    name: &'static str,
    kind: Kind,
    policy: RefPolicy,
    default: Init,
}

const fn plain(name: &'static str, kind: Kind, default: Init) -> FieldSpec {
    FieldSpec {
        name,
        kind,
        policy: RefPolicy::Clear,
        default,
    }
}

const fn refs(name: &'static str, kind: Kind, policy: RefPolicy) -> FieldSpec {
    FieldSpec {
        name,
        kind,
        policy,
        default: Init::Empty,
    }
}

struct CompSpec {
    name: &'static str,
    fields: &'static [FieldSpec],
    requires: Option<usize>,
    observed: bool,
    classes: Option<&'static [&'static str]>,
}

const BODY: usize = 0;
const LINK: usize = 1;
const TETHER: usize = 2;
const MARK: usize = 3;

/// The installed components. `Link` mixes `Clear` and `RemoveComponent` fields: when one holder
/// refers to a destroyed target through both, the clear may come before the removal or be
/// skipped because the holder is gone; the model accepts either and checks everything else.
const SPECS: [CompSpec; 4] = [
    CompSpec {
        name: "Body",
        fields: &[
            plain("mass", Kind::Number, Init::Num(1.0)),
            plain("level", Kind::Integer, Init::Int(0)),
            plain("alive", Kind::Boolean, Init::Bool(true)),
            plain("label", Kind::Text, Init::Text("body")),
            plain("pos", Kind::Vector, Init::Vector(0.0, 1.0, 0.0)),
            refs("target", Kind::Ref, RefPolicy::Clear),
            refs("friends", Kind::RefList, RefPolicy::Clear),
            plain("scores", Kind::IntList, Init::Empty),
        ],
        requires: None,
        observed: true,
        classes: None,
    },
    CompSpec {
        name: "Link",
        fields: &[
            refs("anchor", Kind::Ref, RefPolicy::RemoveComponent),
            refs("chain", Kind::RefList, RefPolicy::RemoveComponent),
            plain("weight", Kind::Number, Init::Num(0.5)),
            refs("hint", Kind::Ref, RefPolicy::Clear),
        ],
        requires: Some(BODY),
        observed: false,
        classes: None,
    },
    CompSpec {
        name: "Tether",
        fields: &[
            refs("owner", Kind::Ref, RefPolicy::DestroyHolder),
            refs("guards", Kind::RefList, RefPolicy::DestroyHolder),
            plain("count", Kind::Integer, Init::Int(0)),
            plain("note", Kind::Text, Init::Text("")),
        ],
        requires: None,
        observed: false,
        classes: Some(&["Part", "Folder"]),
    },
    CompSpec {
        name: "Mark",
        fields: &[
            plain("hits", Kind::Integer, Init::Int(0)),
            refs("ping", Kind::Ref, RefPolicy::Clear),
            plain("tag", Kind::Text, Init::Text("m")),
        ],
        requires: Some(LINK),
        observed: false,
        classes: None,
    },
];

/// The list fields, as (component, field).
const LIST_FIELDS: [(usize, usize); 4] = [(BODY, 6), (BODY, 7), (LINK, 1), (TETHER, 1)];

/// Classes a random create draws from (repeats weight the draw).
const CLASSES: [ClassId; 5] = [
    ClassId::ENTITY,
    ClassId::ENTITY,
    ClassId::ENTITY,
    ClassId::PART,
    ClassId::FOLDER,
];

/// Numbers, with both zeros and a NaN: equal writes are bit-identical ones.
const NUMBERS: [f64; 7] = [0.0, -0.0, 1.0, 2.5, -3.0, 1.0e9, f64::NAN];
const INTEGERS: [i64; 5] = [0, 1, -1, 7, i64::MAX];
const TEXTS: [&str; 4] = ["", "a", "body", "zz"];
const VECTORS: [Vec3; 5] = [
    Vec3::ZERO,
    Vec3::ONE,
    Vec3::new(1.0, -2.0, 0.5),
    Vec3::new(0.0, -0.0, 0.0),
    Vec3::new(f32::NAN, 0.0, 1.0),
];
/// An id the arena never issues in these tests: a reference to an instance that never existed.
const STRANGER: u64 = 1 << 40;

const MAX_SNAPSHOTS: usize = 4;
const MAX_HANDLES: usize = 8;
const SET_SLOTS: usize = 3;

fn field_def(spec: &FieldSpec) -> FieldDef {
    match (spec.kind, spec.default) {
        (Kind::Number, Init::Num(x)) => FieldDef::number(spec.name, x),
        (Kind::Integer, Init::Int(x)) => FieldDef::integer(spec.name, x),
        (Kind::Boolean, Init::Bool(x)) => FieldDef::boolean(spec.name, x),
        (Kind::Text, Init::Text(x)) => FieldDef::text(spec.name, x),
        (Kind::Vector, Init::Vector(x, y, z)) => FieldDef::vector(spec.name, Vec3::new(x, y, z)),
        (Kind::Ref, _) => FieldDef::reference(spec.name, spec.policy),
        (Kind::RefList, _) => FieldDef::reference_list(spec.name, spec.policy),
        (Kind::IntList, _) => FieldDef::list(spec.name, FieldType::Integer),
        (kind, default) => panic!("no default {default:?} for a {kind:?} field"),
    }
}

fn component_def(spec: &CompSpec) -> ComponentDef {
    let mut def = ComponentDef::new(spec.name).observed(spec.observed);
    for field in spec.fields {
        def = def.field(field_def(field));
    }
    if let Some(required) = spec.requires {
        def = def.requires(&[SPECS[required].name]);
    }
    if let Some(classes) = spec.classes {
        def = def.classes(classes);
    }
    def
}

fn class_name(class: ClassId) -> &'static str {
    match class {
        ClassId::ENTITY => "Entity",
        ClassId::PART => "Part",
        ClassId::FOLDER => "Folder",
        _ => "other",
    }
}

fn allows(c: usize, class: ClassId) -> bool {
    SPECS[c]
        .classes
        .is_none_or(|names| names.contains(&class_name(class)))
}

fn fid(f: usize) -> FieldId {
    FieldId::from_index(u16::try_from(f).unwrap())
}

// ----- Reference model. -----

/// What the model knows of a row's changed tick: exact, or (after a destruction whose changes
/// the store orders internally) somewhere in a range, fixed at the next check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Changed {
    At(u64),
    Within(u64, u64),
}

#[derive(Clone, Debug)]
struct MRow {
    slot: Slot,
    values: Vec<Value>,
    added: u64,
    changed: Changed,
    dirty: BTreeSet<usize>,
}

#[derive(Clone, Debug, Default)]
struct MSet {
    rows: HashMap<InstanceId, MRow>,
    structural: u64,
    /// Every instance that lost the component, in order, since the store was made.
    removals: Vec<InstanceId>,
}

/// A saved copy of one set: slot, values and added tick per member.
type Saved = HashMap<InstanceId, (Slot, Vec<Value>, u64)>;

/// An event in comparable form: kind (0 added, 1 removed, 2 changed), instance, component, field.
type Ev = (u8, InstanceId, usize, usize);

#[derive(Clone, Debug)]
struct Model {
    tick: u64,
    sets: Vec<MSet>,
    events: Vec<Ev>,
    floats: FloatWrites,
}

/// Number writes whose equality differs between IEEE `==` and bit identity.
#[derive(Clone, Copy, Debug, Default)]
struct FloatWrites {
    /// A NaN written over a NaN: no change.
    nan_over_nan: usize,
    /// One zero written over the other: a change.
    zero_sign_changes: usize,
}

/// What a destruction report should do.
#[derive(Debug, Default)]
struct Expected {
    removed: Vec<(InstanceId, usize)>,
    cleared: Vec<(InstanceId, usize, usize)>,
    /// Clears that happen only if the store visits them before the same holder's removal.
    optional: Vec<(InstanceId, usize, usize)>,
    destroy: BTreeSet<InstanceId>,
    /// Rows cleared (their changed tick is only known as a range) and the tick before.
    touched: Vec<(usize, InstanceId)>,
    before: u64,
}

impl Model {
    fn new() -> Self {
        Self {
            tick: 0,
            sets: vec![MSet::default(); SPECS.len()],
            events: Vec::new(),
            floats: FloatWrites::default(),
        }
    }

    fn member(&self, c: usize, at: InstanceRef) -> bool {
        self.sets[c]
            .rows
            .get(&at.id)
            .is_some_and(|r| r.slot == at.slot)
    }

    fn value(&self, c: usize, id: InstanceId, f: usize) -> &Value {
        &self.sets[c].rows[&id].values[f]
    }

    /// The instance other than `at` holding a row of `c` at `at`'s slot (one whose destruction
    /// was never reported).
    fn occupant(&self, c: usize, at: InstanceRef) -> Option<InstanceId> {
        self.sets[c]
            .rows
            .iter()
            .find(|(id, row)| row.slot == at.slot && **id != at.id)
            .map(|(id, _)| *id)
    }

    /// Adds a row to an instance whose slot holds none.
    fn add(&mut self, c: usize, at: InstanceRef, values: Vec<Value>) {
        self.tick += 1;
        let set = &mut self.sets[c];
        set.rows.insert(
            at.id,
            MRow {
                slot: at.slot,
                values,
                added: self.tick,
                changed: Changed::At(self.tick),
                dirty: BTreeSet::new(),
            },
        );
        set.structural += 1;
        if SPECS[c].observed {
            self.events.push((0, at.id, c, 0));
        }
    }

    /// Adds default rows to many instances at one tick.
    fn add_many(&mut self, c: usize, ats: &[InstanceRef], defaults: &[Value]) {
        self.tick += 1;
        let set = &mut self.sets[c];
        for at in ats {
            set.rows.insert(
                at.id,
                MRow {
                    slot: at.slot,
                    values: defaults.to_vec(),
                    added: self.tick,
                    changed: Changed::At(self.tick),
                    dirty: BTreeSet::new(),
                },
            );
            if SPECS[c].observed {
                self.events.push((0, at.id, c, 0));
            }
        }
        set.structural += 1;
    }

    /// Removes, in every component, the row another instance holds at `at`'s slot, as a removal
    /// with its cascade.
    fn evict_stale(&mut self, at: InstanceRef) -> Vec<(InstanceId, usize)> {
        let mut removed = Vec::new();
        for c in 0..SPECS.len() {
            if let Some(stale) = self.occupant(c, at) {
                self.remove_cascade(InstanceRef::new(stale, at.slot), c, &mut removed);
            }
        }
        removed
    }

    /// Removes a component and, transitively, every component of the instance requiring it.
    fn remove_cascade(
        &mut self,
        at: InstanceRef,
        c: usize,
        removed: &mut Vec<(InstanceId, usize)>,
    ) {
        let mut pending = vec![c];
        while let Some(current) = pending.pop() {
            if !self.member(current, at) {
                continue;
            }
            self.tick += 1;
            let set = &mut self.sets[current];
            set.rows.remove(&at.id);
            set.removals.push(at.id);
            set.structural += 1;
            removed.push((at.id, current));
            if SPECS[current].observed {
                self.events.push((1, at.id, current, 0));
            }
            for (dependent, spec) in SPECS.iter().enumerate() {
                if spec.requires == Some(current) && self.member(dependent, at) {
                    pending.push(dependent);
                }
            }
        }
    }

    /// Stores a value at a given tick; `false`, changing nothing, when it is equal.
    fn set_value(&mut self, c: usize, id: InstanceId, f: usize, value: Value, tick: u64) -> bool {
        let row = self.sets[c].rows.get_mut(&id).unwrap();
        if let (Value::Number(old), Value::Number(new)) = (&row.values[f], &value) {
            self.floats.nan_over_nan += usize::from(old.is_nan() && new.is_nan());
            self.floats.zero_sign_changes +=
                usize::from(*old == 0.0 && *new == 0.0 && old.to_bits() != new.to_bits());
        }
        if same(&row.values[f], &value) {
            return false;
        }
        row.values[f] = value;
        row.changed = Changed::At(tick);
        row.dirty.insert(f);
        if SPECS[c].observed {
            self.events.push((2, id, c, f));
        }
        true
    }

    /// A single write: takes the next tick when the value differs.
    fn write(&mut self, c: usize, id: InstanceId, f: usize, value: Value) -> bool {
        let tick = self.tick + 1;
        let changed = self.set_value(c, id, f, value, tick);
        if changed {
            self.tick = tick;
        }
        changed
    }

    /// Every (holder, holder slot, field) reference to `target` in a set, one per reference.
    fn refs_to(&self, c: usize, target: InstanceId) -> Vec<(InstanceId, Slot, usize)> {
        let mut out = Vec::new();
        for (holder, row) in &self.sets[c].rows {
            for (f, spec) in SPECS[c].fields.iter().enumerate() {
                if spec.kind.holds_refs() {
                    for t in references(&row.values[f]) {
                        if t == target {
                            out.push((*holder, row.slot, f));
                        }
                    }
                }
            }
        }
        out.sort();
        out
    }

    fn on_destroyed(&mut self, doomed: &[Doomed]) -> Expected {
        let before = self.tick;
        let mut expected = Expected::default();
        let doomed_ids: HashSet<InstanceId> = doomed.iter().map(|d| d.id).collect();
        for d in doomed {
            let at = InstanceRef::new(d.id, d.slot);
            for c in 0..SPECS.len() {
                if self.member(c, at) {
                    self.remove_cascade(at, c, &mut expected.removed);
                }
            }
        }
        // One target at a time, one component at a time; within those, each holder's actions
        // touch only that holder, so holders are independent of one another.
        for d in doomed {
            for (c, spec) in SPECS.iter().enumerate() {
                let entries = self.refs_to(c, d.id);
                let holders: BTreeSet<(InstanceId, Slot)> =
                    entries.iter().map(|(h, s, _)| (*h, *s)).collect();
                for (holder, slot) in holders {
                    let at = InstanceRef::new(holder, slot);
                    if !self.member(c, at) {
                        continue;
                    }
                    let fields: BTreeSet<usize> = entries
                        .iter()
                        .filter(|(h, _, _)| *h == holder)
                        .map(|(_, _, f)| *f)
                        .collect();
                    let policy = |f: usize| spec.fields[f].policy;
                    let removes = fields
                        .iter()
                        .any(|f| policy(*f) == RefPolicy::RemoveComponent);
                    for &f in &fields {
                        match policy(f) {
                            RefPolicy::Clear if removes => expected.optional.push((holder, c, f)),
                            RefPolicy::Clear => {
                                let value = self.value(c, holder, f).clone();
                                let cleared = without_target(&value, d.id).unwrap();
                                assert!(self.write(c, holder, f, cleared));
                                expected.cleared.push((holder, c, f));
                                expected.touched.push((c, holder));
                            }
                            RefPolicy::RemoveComponent => {}
                            RefPolicy::DestroyHolder => {
                                if !doomed_ids.contains(&holder) {
                                    expected.destroy.insert(holder);
                                }
                            }
                        }
                    }
                    if removes {
                        self.remove_cascade(at, c, &mut expected.removed);
                    }
                }
            }
        }
        expected.before = before;
        expected
    }

    /// Completes a destruction once the store's outcome says how many optional clears it made
    /// (each took a tick): rows cleared get a changed tick somewhere in the destruction's range.
    fn settle(&mut self, touched: &[(usize, InstanceId)], before: u64, optional_clears: usize) {
        self.tick += optional_clears as u64;
        for (c, holder) in touched {
            if let Some(row) = self.sets[*c].rows.get_mut(holder) {
                row.changed = Changed::Within(before, self.tick);
            }
        }
    }

    fn on_reclaimed(&mut self, reclaimed: &[Doomed]) -> usize {
        let mut removed = Vec::new();
        for d in reclaimed {
            let at = InstanceRef::new(d.id, d.slot);
            for c in 0..SPECS.len() {
                if self.member(c, at) {
                    self.remove_cascade(at, c, &mut removed);
                }
            }
        }
        removed.len()
    }

    fn save(&self, c: usize) -> Saved {
        self.sets[c]
            .rows
            .iter()
            .map(|(id, row)| (*id, (row.slot, row.values.clone(), row.added)))
            .collect()
    }

    fn load(&mut self, c: usize, saved: &Saved) {
        self.tick += 1;
        let tick = self.tick;
        let set = &mut self.sets[c];
        // A row of an instance that held the component keeps its dirty fields and adds those
        // the load changes; its changed tick moves only if the load changes a field. Any other
        // restored row is added now.
        let rows: HashMap<InstanceId, MRow> = saved
            .iter()
            .map(|(id, (slot, values, added))| {
                let row = match set.rows.get(id).filter(|r| r.slot == *slot) {
                    Some(before) => {
                        let mut dirty = before.dirty.clone();
                        let differing: Vec<usize> = (0..values.len())
                            .filter(|&f| !same(&values[f], &before.values[f]))
                            .collect();
                        dirty.extend(&differing);
                        MRow {
                            slot: *slot,
                            values: values.clone(),
                            added: *added,
                            changed: if differing.is_empty() {
                                before.changed
                            } else {
                                Changed::At(tick)
                            },
                            dirty,
                        }
                    }
                    None => MRow {
                        slot: *slot,
                        values: values.clone(),
                        added: tick,
                        changed: Changed::At(tick),
                        dirty: BTreeSet::new(),
                    },
                };
                (*id, row)
            })
            .collect();
        let mut lost: Vec<InstanceId> = set
            .rows
            .keys()
            .filter(|id| !rows.contains_key(*id))
            .copied()
            .collect();
        lost.sort();
        set.removals.extend(lost);
        set.rows = rows;
        set.structural += 1;
    }
}

/// The references a value holds, in order.
fn references(value: &Value) -> Vec<InstanceId> {
    match value {
        Value::Reference(Some(t)) => vec![*t],
        Value::List(list) => list
            .as_slice()
            .iter()
            .filter_map(|e| match e {
                Value::Reference(Some(t)) => Some(*t),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The value with every reference to `target` cleared (list elements dropped), or `None` when
/// it holds none.
fn without_target(value: &Value, target: InstanceId) -> Option<Value> {
    match value {
        Value::Reference(Some(t)) if *t == target => Some(Value::Reference(None)),
        Value::List(list) => {
            let kept: Vec<Value> = list
                .as_slice()
                .iter()
                .filter(|e| **e != Value::Reference(Some(target)))
                .cloned()
                .collect();
            (kept.len() != list.len()).then(|| Value::List(ListValue::from_vec(kept)))
        }
        _ => None,
    }
}

fn list_elements(value: &Value) -> Vec<Value> {
    match value {
        Value::List(list) => list.as_slice().to_vec(),
        other => panic!("not a list: {other:?}"),
    }
}

/// Whether two values are the same bit for bit (floating values by their bits, so `-0.0` and
/// `0.0` differ and a NaN matches itself): the model's notion of an equal write.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.to_bits() == y.to_bits(),
        (Value::Vector(x), Value::Vector(y)) => {
            [x.x, x.y, x.z].map(f32::to_bits) == [y.x, y.y, y.z].map(f32::to_bits)
        }
        (Value::List(x), Value::List(y)) => {
            x.len() == y.len()
                && x.as_slice()
                    .iter()
                    .zip(y.as_slice())
                    .all(|(p, q)| same(p, q))
        }
        _ => a == b,
    }
}

/// Asserts a read gave the model's value, bit for bit.
#[track_caller]
fn assert_same(got: Result<Value, StoreError>, want: &Value, what: &str) {
    match got {
        Ok(got) => assert!(same(&got, want), "{what}: {got:?}, not {want:?}"),
        Err(error) => panic!("{what}: {error:?}, not {want:?}"),
    }
}

// ----- Comparison of a store with a model. -----

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Live,
    Destroyed { reported: bool },
    Reclaimed,
}

#[derive(Clone, Debug)]
struct Inst {
    id: InstanceId,
    slot: Slot,
    class: ClassId,
    status: Status,
}

fn check_typed(store: &Store, at: InstanceRef, cid: ComponentId, f: usize, kind: Kind, v: &Value) {
    let field = fid(f);
    match (kind, v) {
        (Kind::Number, Value::Number(x)) => {
            assert_eq!(
                store.get::<f64>(at, cid, field).map(|y| y.to_bits()),
                Ok(x.to_bits())
            );
        }
        (Kind::Integer, Value::Integer(x)) => assert_eq!(store.get::<i64>(at, cid, field), Ok(x)),
        (Kind::Boolean, Value::Boolean(x)) => assert_eq!(store.get::<bool>(at, cid, field), Ok(x)),
        (Kind::Text, Value::Text(x)) => assert_eq!(store.get::<Arc<str>>(at, cid, field), Ok(x)),
        (Kind::Vector, Value::Vector(x)) => {
            let got = store.get::<Vec3>(at, cid, field).unwrap();
            assert!(same(&Value::Vector(*got), v), "{got:?}, not {x:?}");
        }
        (Kind::Ref, Value::Reference(x)) => {
            assert_eq!(store.get::<Option<InstanceId>>(at, cid, field), Ok(x));
        }
        (Kind::RefList | Kind::IntList, Value::List(list)) => {
            assert_eq!(store.list(at, cid, field), Ok(list.as_slice()));
            assert_eq!(list.has_buffer(), !list.is_empty());
        }
        (kind, value) => panic!("model holds {value:?} in a {kind:?} field"),
    }
}

/// Compares a store (live or snapshot) with its model in full. Changed ticks the model knows
/// only as a range are checked against it and then fixed to the store's value.
fn check_store(store: &Store, model: &mut Model, ids: &[ComponentId], world: &[Inst], ctx: &str) {
    assert_eq!(store.tick(), Tick(model.tick), "{ctx}: mutation tick");
    for (c, &cid) in ids.iter().enumerate() {
        let name = SPECS[c].name;
        let set = store.set(cid).unwrap();
        let ms = &mut model.sets[c];
        let len = set.len();
        assert_eq!(len, ms.rows.len(), "{ctx}: {name}: row count");
        assert_eq!(
            set.pending_dirty(),
            ms.rows.values().filter(|row| !row.dirty.is_empty()).count(),
            "{ctx}: {name}: rows with dirty fields"
        );
        assert_eq!(set.slots().len(), len, "{ctx}: {name}: slots");
        assert_eq!(set.added_ticks().len(), len, "{ctx}: {name}: added ticks");
        // The change log covers every baseline it answers for: each row changed or added
        // after the baseline is listed.
        for baseline in [0, model.tick / 2, model.tick.saturating_sub(3), model.tick] {
            if let Some(listed) = set.changes_since(Tick(baseline)) {
                let rows: HashSet<usize> = listed.rows().collect();
                assert!(
                    rows.iter().all(|row| *row < len),
                    "{ctx}: {name}: rows listed"
                );
                for row in 0..len {
                    let changed =
                        set.changed_ticks().get(row).expect("a row of the set").0 > baseline;
                    let added = set.added_ticks().get(row).expect("a row of the set").0 > baseline;
                    assert!(
                        !(changed || added) || rows.contains(&row),
                        "{ctx}: {name}: changes since {baseline} miss row {row}"
                    );
                }
            }
        }
        assert_eq!(
            set.changed_ticks().len(),
            len,
            "{ctx}: {name}: changed ticks"
        );
        let mut seen = HashSet::new();
        for row in 0..len {
            let (id, slot) = (set.ids()[row], set.slots()[row]);
            assert!(seen.insert(id), "{ctx}: {name}: {id:?} holds two rows");
            let at = InstanceRef::new(id, slot);
            let Some(m) = ms.rows.get_mut(&id) else {
                panic!("{ctx}: {name}: row {row} holds {id:?}, which the model says lacks it");
            };
            assert_eq!(m.slot, slot, "{ctx}: {name}: slot of {id:?}");
            assert_eq!(set.row_of(at), Some(row), "{ctx}: {name}: row of {id:?}");
            assert_eq!(
                store.row(at, cid),
                Ok(row),
                "{ctx}: {name}: store row of {id:?}"
            );
            assert!(store.has(at, cid), "{ctx}: {name}: has {id:?}");
            assert_eq!(
                set.added_ticks().get(row).expect("a row of the set"),
                Tick(m.added),
                "{ctx}: {name}: added tick of {id:?}"
            );
            let changed = set.changed_ticks().get(row).expect("a row of the set");
            match m.changed {
                Changed::At(t) => {
                    assert_eq!(changed, Tick(t), "{ctx}: {name}: changed tick of {id:?}");
                }
                Changed::Within(lo, hi) => {
                    assert!(
                        Tick(lo) < changed && changed <= Tick(hi),
                        "{ctx}: {name}: changed tick of {id:?} is {changed:?}, not in {lo}..={hi}"
                    );
                    m.changed = Changed::At(changed.0);
                }
            }
            for (f, spec) in SPECS[c].fields.iter().enumerate() {
                let expected = &m.values[f];
                let what = format!("{ctx}: {name}.{} of {id:?}", spec.name);
                assert_same(
                    set.value(row, fid(f)).ok_or(missing(at, cid)),
                    expected,
                    &what,
                );
                assert_same(store.get_value(at, cid, fid(f)), expected, &what);
                check_typed(store, at, cid, f, spec.kind, expected);
            }
            let dirty: BTreeSet<usize> = set.dirty_mask(row).fields().map(FieldId::index).collect();
            assert_eq!(dirty, m.dirty, "{ctx}: {name}: dirty fields of {id:?}");
        }
        // Sparse lookups: every (id, slot) pair ever issued resolves exactly when it is a member,
        // including the stale pairs of reclaimed instances whose slot now holds another one.
        for inst in world {
            let at = InstanceRef::new(inst.id, inst.slot);
            let member = ms.rows.get(&inst.id).is_some_and(|r| r.slot == inst.slot);
            assert_eq!(
                set.row_of(at).is_some(),
                member,
                "{ctx}: {name}: row_of {:?} at {:?}",
                inst.id,
                inst.slot
            );
            if !member {
                assert_eq!(
                    store.get_value(at, cid, fid(0)),
                    Err(StoreError::MissingMembership {
                        id: inst.id,
                        component: cid,
                        component_name: name_of(cid),
                    }),
                    "{ctx}: {name}: read of non-member {:?}",
                    inst.id
                );
            }
        }
        if len >= 2 {
            let crossed = InstanceRef::new(set.ids()[0], set.slots()[1]);
            assert_eq!(set.row_of(crossed), None, "{ctx}: {name}: crossed pair");
        }
        if let Some(&id) = set.ids().first() {
            let far = InstanceRef::new(id, Slot::from_index(1 << 20));
            assert_eq!(set.row_of(far), None, "{ctx}: {name}: slot past the end");
        }
        assert_eq!(
            set.structural_revision(),
            ms.structural,
            "{ctx}: {name}: structural revision"
        );
        assert_eq!(
            set.removal_log().head(),
            ms.removals.len() as u64,
            "{ctx}: {name}: removal log head"
        );
        // Reverse index: exact, as a multiset, for every target.
        let mut by_target: HashMap<InstanceId, Vec<(InstanceId, Slot, usize)>> = HashMap::new();
        for (holder, row) in &ms.rows {
            for (f, spec) in SPECS[c].fields.iter().enumerate() {
                if spec.kind.holds_refs() {
                    for t in references(&row.values[f]) {
                        by_target.entry(t).or_default().push((*holder, row.slot, f));
                    }
                }
            }
        }
        assert_eq!(
            set.referenced_targets(),
            by_target.len(),
            "{ctx}: {name}: referenced targets"
        );
        let stranger = InstanceId::new(STRANGER).unwrap();
        let targets = world.iter().map(|i| i.id).chain([stranger]);
        for target in targets {
            let got: Vec<(InstanceId, Slot, usize)> = set
                .references_to(target)
                .iter()
                .map(|e| (e.holder, e.holder_slot, e.field.index()))
                .collect();
            assert!(
                got.windows(2).all(|w| (w[0].0, w[0].2) <= (w[1].0, w[1].2)),
                "{ctx}: {name}: references to {target:?} not sorted by holder and field: {got:?}"
            );
            let mut want = by_target.remove(&target).unwrap_or_default();
            want.sort();
            assert_eq!(got, want, "{ctx}: {name}: references to {target:?}");
        }
        assert!(
            by_target.is_empty(),
            "{ctx}: {name}: model references unknown targets {by_target:?}"
        );
    }
}

// ----- Operations. -----

/// A value drawn lazily: `pick` chooses scalars and single references, `items` list contents.
#[derive(Clone, Debug)]
struct Val {
    pick: u16,
    items: Vec<u16>,
}

#[derive(Clone, Debug)]
enum ListEdit {
    Push(u16),
    Replace(Vec<u16>),
    ReplaceSame,
    Clear,
    PushWrong,
    /// 20 to 49 copies of one element: dozens of references to one target from one holder.
    Flood(u16, u8),
}

#[derive(Clone, Debug)]
enum Op {
    Create {
        class: u8,
        parent: Option<u16>,
    },
    Add {
        inst: u16,
        present: bool,
        comp: u8,
        values: Vec<(u8, Val)>,
        insert: bool,
        bad: bool,
    },
    Remove {
        inst: u16,
        member: bool,
        comp: u8,
    },
    Write {
        inst: u16,
        member: bool,
        comp: u8,
        field: u8,
        val: Val,
        typed: bool,
    },
    WriteSame {
        inst: u16,
        comp: u8,
        field: u8,
        typed: bool,
    },
    WriteWrong {
        inst: u16,
        member: bool,
        comp: u8,
        field: u8,
        typed: bool,
    },
    /// Writes to a member's number field whose equality is not IEEE `==`: a NaN twice, then
    /// each zero twice.
    FloatBits {
        inst: u16,
        typed: bool,
    },
    List {
        inst: u16,
        member: bool,
        which: u8,
        edit: ListEdit,
    },
    /// One holder's every reference field (lists by a push) set to one target.
    SameTarget {
        inst: u16,
        comp: u8,
        target: u16,
    },
    Column {
        mark: bool,
        writes: Vec<(u16, Val)>,
    },
    Destroy {
        inst: u16,
        report: bool,
    },
    Drain {
        report: bool,
    },
    Snapshot,
    /// Takes a save point of the arena with a snapshot of the store.
    SaveWorld,
    /// Restores the arena and the store to the n-th pair saved.
    RestoreWorld(u8),
    Save {
        slot: u8,
        comp: u8,
    },
    Load {
        slot: u8,
        comp: u8,
    },
    /// A bulk add of default rows to live instances (none, or some twice, at times).
    InsertMany {
        picks: Vec<u16>,
        comp: u8,
    },
    /// An add to a live instance whose slot holds another instance's stale row, when there is
    /// one: refused, then the arena's owner evicts the stale rows and adds again.
    AddOverStale {
        inst: u16,
        comp: u8,
    },
    /// The arena's owner evicts rows another instance left at a live instance's slot.
    EvictStale {
        inst: u16,
    },
    /// An add at a slot far past anything the arena gave out.
    FarSlot {
        inst: u16,
        comp: u8,
        slot: u32,
    },
    MakeHandle {
        inst: u16,
        member: bool,
        comp: u8,
    },
    UseHandle {
        handle: u16,
        write: Option<(u8, Val)>,
    },
    ReadRemovals {
        comp: u8,
        reader: bool,
    },
    TakeDirty {
        comp: u8,
    },
}

/// How often the interesting paths were taken (the deterministic run checks they all were).
#[derive(Debug, Default)]
struct Stats {
    restores: usize,
    missed_after_restore: usize,
    slot_reuses: usize,
    adds: usize,
    already_present: usize,
    class_refused: usize,
    cascaded: usize,
    equal_writes: usize,
    changing_writes: usize,
    list_edits: usize,
    crowded_targets: usize,
    column_writes: usize,
    cleared: usize,
    policy_removed: usize,
    destroy_requests: usize,
    evicted_on_reclaim: usize,
    stale_evicted: usize,
    slot_occupied: usize,
    far_slots: usize,
    bulk_adds: usize,
    empty_bulk: usize,
    bulk_refused: usize,
    optional_clears_offered: usize,
    optional_clears_made: usize,
    loads: usize,
    mismatched_loads: usize,
    stale_handle_reads: usize,
    reused_slot_handle_reads: usize,
    removals_read: usize,
    dirty_taken: usize,
}

struct Harness {
    arena: Arena,
    store: Store,
    ids: Vec<ComponentId>,
    defaults: Vec<Vec<Value>>,
    world: Vec<Inst>,
    index: HashMap<InstanceId, usize>,
    used_slots: HashSet<Slot>,
    model: Model,
    snapshots: Vec<(Store, Model)>,
    slots: Vec<SetSlot>,
    saved: Vec<Option<(usize, Saved)>>,
    handles: Vec<(ComponentHandle, usize)>,
    readers: Vec<Vec<(RemovalReader, usize)>>,
    /// Readers that may report missed removals once (a restore took back what they read, or
    /// moved their log onto another history).
    unsure: HashSet<(usize, usize)>,
    /// Save points of the arena with a store snapshot and the harness state at each.
    restore_points: Vec<RestorePoint>,
    stats: Stats,
    step: usize,
}

/// A save point with what the harness knew then.
struct RestorePoint {
    arena: SavePoint,
    store: Store,
    model: Model,
    world: Vec<Inst>,
    used_slots: HashSet<Slot>,
}

impl Harness {
    fn new() -> Self {
        let arena = Arena::standard();
        let mut store = Store::new();
        let mut ids = Vec::new();
        let mut defaults = Vec::new();
        for spec in &SPECS {
            let def = component_def(spec);
            defaults.push(def.fields.iter().map(|f| f.default.clone()).collect());
            let cid = store.install(def, arena.classes()).unwrap();
            assert_eq!(cid.index(), ids.len(), "ids follow SPECS (see `name_of`)");
            for (f, field) in spec.fields.iter().enumerate() {
                assert_eq!(store.field(cid, field.name), Ok(fid(f)));
            }
            ids.push(cid);
        }
        let readers = ids
            .iter()
            .map(|&cid| {
                (0..2)
                    .map(|_| (RemovalReader::new(&store, cid).unwrap(), 0))
                    .collect()
            })
            .collect();
        let mut harness = Self {
            arena,
            store,
            ids,
            defaults,
            world: Vec::new(),
            index: HashMap::new(),
            used_slots: HashSet::new(),
            model: Model::new(),
            snapshots: Vec::new(),
            slots: vec![SetSlot::new(); SET_SLOTS],
            saved: vec![None; SET_SLOTS],
            handles: Vec::new(),
            readers,
            unsure: HashSet::new(),
            restore_points: Vec::new(),
            stats: Stats::default(),
            step: 0,
        };
        // A small world: entities (one under another), parts (one under a folder), a folder.
        let e0 = harness.create(ClassId::ENTITY, None);
        harness.create(ClassId::ENTITY, None);
        harness.create(ClassId::ENTITY, Some(e0));
        let folder = harness.create(ClassId::FOLDER, None);
        harness.create(ClassId::PART, None);
        harness.create(ClassId::PART, Some(folder));
        harness.check("initial");
        harness
    }

    fn comp_index(&self, cid: ComponentId) -> usize {
        self.ids.iter().position(|c| *c == cid).unwrap()
    }

    fn at(&self, i: usize) -> InstanceRef {
        InstanceRef::new(self.world[i].id, self.world[i].slot)
    }

    fn create(&mut self, class: ClassId, parent: Option<InstanceId>) -> InstanceId {
        let id = self.arena.create(class, parent).unwrap();
        let slot = self.arena.slot_of(id).unwrap();
        if !self.used_slots.insert(slot) {
            self.stats.slot_reuses += 1;
        }
        self.index.insert(id, self.world.len());
        self.world.push(Inst {
            id,
            slot,
            class,
            status: Status::Live,
        });
        id
    }

    // ----- Picking instances and values. -----

    fn pick_any(&self, n: u16) -> Option<usize> {
        (!self.world.is_empty()).then(|| usize::from(n) % self.world.len())
    }

    fn pick_live(&self, n: u16) -> Option<usize> {
        let live: Vec<usize> = (0..self.world.len())
            .filter(|&i| self.world[i].status == Status::Live)
            .collect();
        (!live.is_empty()).then(|| live[usize::from(n) % live.len()])
    }

    fn pick_member(&self, c: usize, n: u16) -> Option<usize> {
        let mut members: Vec<InstanceId> = self.model.sets[c].rows.keys().copied().collect();
        members.sort();
        (!members.is_empty()).then(|| self.index[&members[usize::from(n) % members.len()]])
    }

    /// A member when asked and there is one, otherwise any instance ever created.
    fn pick(&self, c: usize, member: bool, n: u16) -> Option<usize> {
        if member {
            self.pick_member(c, n).or_else(|| self.pick_any(n))
        } else {
            self.pick_any(n)
        }
    }

    /// A reference target: mostly a live instance, often one of the oldest three (so holders
    /// share targets and refer to one through several fields), sometimes any instance ever
    /// created (destroyed and reclaimed ones too), an id never issued, or nothing.
    fn target(&self, n: u16) -> Option<InstanceId> {
        let live: Vec<usize> = (0..self.world.len())
            .filter(|&i| self.world[i].status == Status::Live)
            .collect();
        let k = usize::from(n / 8);
        let picked = match n % 8 {
            0 => return None,
            1 => return InstanceId::new(STRANGER),
            2 => self.pick_any(n / 8),
            _ if live.is_empty() => self.pick_any(n / 8),
            3..=5 => Some(live[k % live.len().min(3)]),
            _ => Some(live[k % live.len()]),
        };
        picked.map(|i| self.world[i].id)
    }

    fn element(&self, kind: Kind, n: u16) -> Value {
        match kind {
            Kind::RefList => Value::Reference(self.target(n)),
            _ => Value::Integer(INTEGERS[usize::from(n) % INTEGERS.len()]),
        }
    }

    fn elements(&self, kind: Kind, items: &[u16]) -> Vec<Value> {
        items.iter().map(|n| self.element(kind, *n)).collect()
    }

    fn value(&self, kind: Kind, val: &Val) -> Value {
        let n = usize::from(val.pick);
        match kind {
            Kind::Number => Value::Number(NUMBERS[n % NUMBERS.len()]),
            Kind::Integer => Value::Integer(INTEGERS[n % INTEGERS.len()]),
            Kind::Boolean => Value::Boolean(n % 2 == 0),
            Kind::Text => Value::Text(Arc::from(TEXTS[n % TEXTS.len()])),
            Kind::Vector => Value::Vector(VECTORS[n % VECTORS.len()]),
            Kind::Ref => Value::Reference(self.target(val.pick)),
            Kind::RefList | Kind::IntList => {
                Value::List(ListValue::from_vec(self.elements(kind, &val.items)))
            }
        }
    }

    // ----- Applying operations. -----

    fn apply(&mut self, op: &Op) {
        self.step += 1;
        let ctx = format!("step {} ({op:?})", self.step);
        match op {
            Op::Create { class, parent } => {
                let class = CLASSES[usize::from(*class) % CLASSES.len()];
                let parent = parent
                    .and_then(|p| self.pick_live(p))
                    .map(|i| self.world[i].id);
                self.create(class, parent);
            }
            Op::Add { .. } => self.add(op, &ctx),
            Op::Remove { inst, member, comp } => {
                let c = usize::from(*comp) % SPECS.len();
                let Some(i) = self.pick(c, *member, *inst) else {
                    return;
                };
                let at = self.at(i);
                let expected = self.model.member(c, at);
                assert_eq!(self.store.remove(at, self.ids[c]), Ok(expected), "{ctx}");
                if expected {
                    let mut removed = Vec::new();
                    self.model.remove_cascade(at, c, &mut removed);
                    self.stats.cascaded += removed.len() - 1;
                }
            }
            Op::Write {
                inst,
                member,
                comp,
                field,
                val,
                typed,
            } => {
                let c = usize::from(*comp) % SPECS.len();
                let f = usize::from(*field) % SPECS[c].fields.len();
                let Some(i) = self.pick(c, *member, *inst) else {
                    return;
                };
                let value = self.value(SPECS[c].fields[f].kind, val);
                self.write(i, c, f, value, *typed, &ctx);
            }
            Op::WriteSame {
                inst,
                comp,
                field,
                typed,
            } => {
                let c = usize::from(*comp) % SPECS.len();
                let f = usize::from(*field) % SPECS[c].fields.len();
                let Some(i) = self.pick_member(c, *inst) else {
                    return;
                };
                // A fresh value equal to the stored one (lists get a buffer of their own).
                let value = match self.model.value(c, self.world[i].id, f) {
                    Value::List(list) => Value::List(ListValue::from_vec(list.as_slice().to_vec())),
                    other => other.clone(),
                };
                self.write(i, c, f, value, *typed, &ctx);
            }
            Op::WriteWrong {
                inst,
                member,
                comp,
                field,
                typed,
            } => {
                let c = usize::from(*comp) % SPECS.len();
                let f = usize::from(*field) % SPECS[c].fields.len();
                let Some(i) = self.pick(c, *member, *inst) else {
                    return;
                };
                let at = self.at(i);
                let cid = self.ids[c];
                let got = if !*typed {
                    self.store
                        .write_value(at, cid, fid(f), Value::Buffer(Arc::from(&[1_u8][..])))
                } else if SPECS[c].fields[f].kind == Kind::Number {
                    self.store.write(at, cid, fid(f), 1_i64)
                } else {
                    self.store.write(at, cid, fid(f), 1.0_f64)
                };
                if self.model.member(c, at) {
                    assert!(
                        matches!(got, Err(StoreError::TypeMismatch { .. })),
                        "{ctx}: {got:?}"
                    );
                } else {
                    assert_eq!(got, Err(missing(at, cid)), "{ctx}");
                }
            }
            Op::FloatBits { inst, typed } => {
                let Some(i) = self.pick_member(BODY, *inst) else {
                    return;
                };
                for x in [f64::NAN, f64::NAN, 0.0, 0.0, -0.0, -0.0] {
                    self.write(i, BODY, 0, Value::Number(x), *typed, &ctx);
                }
            }
            Op::List {
                inst,
                member,
                which,
                edit,
            } => self.list(*inst, *member, *which, edit, &ctx),
            Op::SameTarget { inst, comp, target } => {
                let c = usize::from(*comp) % SPECS.len();
                let Some(i) = self.pick_member(c, *inst) else {
                    return;
                };
                let Some(t) = self.target(*target | 7) else {
                    return;
                };
                let at = self.at(i);
                // Either field order, so the store's index sees either first.
                let mut fields: Vec<usize> = (0..SPECS[c].fields.len()).collect();
                if target & 8 != 0 {
                    fields.reverse();
                }
                for f in fields {
                    match SPECS[c].fields[f].kind {
                        Kind::Ref => self.write(i, c, f, Value::Reference(Some(t)), true, &ctx),
                        Kind::RefList => {
                            let mut grown = list_elements(self.model.value(c, at.id, f));
                            grown.push(Value::Reference(Some(t)));
                            let mut accessor =
                                self.store.list_mut(at, self.ids[c], fid(f)).unwrap();
                            assert_eq!(accessor.push(Value::Reference(Some(t))), Ok(()), "{ctx}");
                            let list = Value::List(ListValue::from_vec(grown));
                            assert!(self.model.write(c, at.id, f, list), "{ctx}");
                        }
                        _ => {}
                    }
                }
            }
            Op::Column { mark, writes } => self.column(*mark, writes, &ctx),
            Op::Destroy { inst, report } => {
                let Some(i) = self.pick_live(*inst) else {
                    return;
                };
                let id = self.world[i].id;
                self.destroy(id, *report, &ctx);
            }
            Op::Drain { report } => self.drain(*report, &ctx),
            Op::SaveWorld => {
                let arena = self.arena.save_point().unwrap();
                let point = RestorePoint {
                    arena,
                    store: self.store.snapshot(),
                    model: self.model.clone(),
                    world: self.world.clone(),
                    used_slots: self.used_slots.clone(),
                };
                if self.restore_points.len() >= 3 {
                    self.restore_points.remove(0);
                }
                self.restore_points.push(point);
            }
            Op::RestoreWorld(pick) => self.restore_world(usize::from(*pick), &ctx),
            Op::Snapshot => {
                let snapshot = self.store.snapshot();
                assert_ne!(snapshot.id(), self.store.id(), "{ctx}: snapshot identity");
                for &cid in &self.ids {
                    assert!(self.store.shares_set_with(&snapshot, cid), "{ctx}");
                }
                let entry = (snapshot, self.model.clone());
                if self.snapshots.len() < MAX_SNAPSHOTS {
                    self.snapshots.push(entry);
                } else {
                    // The first snapshot is kept for the whole run.
                    self.snapshots[1 + self.step % (MAX_SNAPSHOTS - 1)] = entry;
                }
            }
            Op::Save { slot, comp } => {
                let s = usize::from(*slot) % SET_SLOTS;
                let c = usize::from(*comp) % SPECS.len();
                self.store
                    .save_into(self.ids[c], &mut self.slots[s])
                    .unwrap();
                assert_eq!(self.slots[s].component(), Some(self.ids[c]), "{ctx}");
                assert_eq!(self.slots[s].len(), self.model.sets[c].rows.len(), "{ctx}");
                self.saved[s] = Some((c, self.model.save(c)));
            }
            Op::Load { slot, comp } => self.load(
                usize::from(*slot) % SET_SLOTS,
                usize::from(*comp) % SPECS.len(),
                &ctx,
            ),
            Op::MakeHandle { inst, member, comp } => {
                let c = usize::from(*comp) % SPECS.len();
                let Some(i) = self.pick(c, *member, *inst) else {
                    return;
                };
                let at = self.at(i);
                let cid = self.ids[c];
                let handle = ComponentHandle::new(&self.store, at, cid);
                if self.model.member(c, at) {
                    let handle = handle.unwrap();
                    assert_eq!(handle.instance(), at, "{ctx}");
                    assert_eq!(handle.component(), cid, "{ctx}");
                    if self.handles.len() < MAX_HANDLES {
                        self.handles.push((handle, c));
                    } else {
                        self.handles[self.step % MAX_HANDLES] = (handle, c);
                    }
                } else {
                    assert_eq!(handle, Err(missing(at, cid)), "{ctx}");
                }
            }
            Op::UseHandle { handle, write } => self.use_handle(*handle, write.as_ref(), &ctx),
            Op::InsertMany { picks, comp } => self.insert_many(picks, *comp, &ctx),
            Op::AddOverStale { inst, comp } => {
                let c = usize::from(*comp) % SPECS.len();
                let over: Vec<usize> = (0..self.world.len())
                    .filter(|&i| self.world[i].status == Status::Live)
                    .filter(|&i| self.model.occupant(c, self.at(i)).is_some())
                    .collect();
                if over.is_empty() {
                    return;
                }
                let i = over[usize::from(*inst) % over.len()];
                let (at, class) = (self.at(i), self.world[i].class);
                let cid = self.ids[c];
                let holder = self.model.occupant(c, at).unwrap();
                assert_eq!(
                    self.store.add(at, class, cid, []),
                    Err(StoreError::SlotOccupied {
                        slot: at.slot,
                        holder,
                        component: cid,
                        component_name: name_of(cid),
                    }),
                    "{ctx}"
                );
                self.stats.slot_occupied += 1;
                self.evict_stale(i, &ctx);
                let expected = if allows(c, class) {
                    self.model.add(c, at, self.defaults[c].clone());
                    Ok(self.model.sets[c].rows.len() - 1)
                } else {
                    Err(StoreError::ClassNotAllowed {
                        component: SPECS[c].name.to_owned(),
                        class,
                    })
                };
                assert_eq!(self.store.add(at, class, cid, []), expected, "{ctx}");
            }
            Op::EvictStale { inst } => {
                let Some(i) = self.pick_live(*inst) else {
                    return;
                };
                self.evict_stale(i, &ctx);
            }
            Op::FarSlot { inst, comp, slot } => {
                let c = usize::from(*comp) % SPECS.len();
                let Some(i) = self.pick_live(*inst) else {
                    return;
                };
                let slot = Slot::from_index(u32::MAX - slot % 1024);
                let at = InstanceRef::new(self.world[i].id, slot);
                let refused = Err(StoreError::SlotOutOfRange {
                    slot,
                    limit: strata_component_store::UNCHECKED_SLOT_LIMIT,
                });
                let class = self.world[i].class;
                let cid = self.ids[c];
                assert_eq!(self.store.add(at, class, cid, []), refused, "{ctx}");
                assert_eq!(
                    self.store.insert(at, class, cid).map(|init| init.row()),
                    refused,
                    "{ctx}"
                );
                // A bulk add checks the class once, first.
                if allows(c, class) {
                    assert_eq!(
                        self.store
                            .insert_many(&[at, self.at(i)], class, cid)
                            .map(|init| init.rows().len()),
                        refused,
                        "{ctx}: refused whole"
                    );
                }
                self.stats.far_slots += 1;
            }
            Op::ReadRemovals { comp, reader } => {
                let c = usize::from(*comp) % SPECS.len();
                let log = &self.model.sets[c].removals;
                let r = usize::from(*reader);
                let unsure = self.unsure.remove(&(c, r));
                let (reader, cursor) = &mut self.readers[c][r];
                let got = reader.read(&self.store);
                if unsure && matches!(got, Ok(Removals::Missed { .. })) {
                    *cursor = log.len();
                    self.stats.missed_after_restore += 1;
                } else {
                    // A reader past this history's end must have said it missed removals.
                    let mut expected: Vec<InstanceId> = log
                        .get(*cursor..)
                        .unwrap_or_else(|| panic!("{ctx}: a reader past the log read {got:?}"))
                        .to_vec();
                    expected.sort();
                    expected.dedup();
                    *cursor = log.len();
                    self.stats.removals_read += expected.len();
                    assert_eq!(got, Ok(Removals::Ids(expected)), "{ctx}");
                }
            }
            Op::TakeDirty { comp } => {
                let c = usize::from(*comp) % SPECS.len();
                let mut got: Vec<(InstanceId, BTreeSet<usize>)> = self
                    .store
                    .take_dirty(self.ids[c])
                    .unwrap()
                    .into_iter()
                    .map(|(id, mask)| (id, mask.fields().map(FieldId::index).collect()))
                    .collect();
                got.sort();
                let mut expected: Vec<(InstanceId, BTreeSet<usize>)> = Vec::new();
                for (id, row) in &mut self.model.sets[c].rows {
                    if !row.dirty.is_empty() {
                        expected.push((*id, std::mem::take(&mut row.dirty)));
                    }
                }
                expected.sort();
                self.stats.dirty_taken += expected.len();
                assert_eq!(got, expected, "{ctx}: dirty rows");
            }
        }
        self.check(&ctx);
    }

    fn add(&mut self, op: &Op, ctx: &str) {
        let &Op::Add {
            inst,
            present,
            comp,
            ref values,
            insert,
            bad,
        } = op
        else {
            unreachable!("an add operation")
        };
        let c = usize::from(comp) % SPECS.len();
        let picked = if present {
            self.pick_member(c, inst).or_else(|| self.pick_live(inst))
        } else {
            self.pick_live(inst)
        };
        let Some(i) = picked else { return };
        let (at, class) = (self.at(i), self.world[i].class);
        let cid = self.ids[c];
        let values: Vec<(usize, Value)> = values
            .iter()
            .map(|(f, val)| {
                let f = usize::from(*f) % SPECS[c].fields.len();
                (f, self.value(SPECS[c].fields[f].kind, val))
            })
            .collect();
        let mut row_values = self.defaults[c].clone();
        for (f, value) in &values {
            row_values[*f] = value.clone();
        }
        let expected = if bad {
            None
        } else if self.model.member(c, at) {
            self.stats.already_present += 1;
            Some(Err(StoreError::AlreadyPresent {
                id: at.id,
                component: cid,
                component_name: name_of(cid),
            }))
        } else if let Some(holder) = self.model.occupant(c, at) {
            self.stats.slot_occupied += 1;
            Some(Err(StoreError::SlotOccupied {
                slot: at.slot,
                holder,
                component: cid,
                component_name: name_of(cid),
            }))
        } else if !allows(c, class) {
            self.stats.class_refused += 1;
            Some(Err(StoreError::ClassNotAllowed {
                component: SPECS[c].name.to_owned(),
                class,
            }))
        } else {
            Some(Ok(()))
        };
        let got: Result<usize, StoreError> = if bad {
            let mut with_bad = values.clone();
            with_bad.push((0, Value::Buffer(Arc::from(&[7_u8][..]))));
            self.store.add(
                at,
                class,
                cid,
                with_bad.into_iter().map(|(f, v)| (fid(f), v)),
            )
        } else if insert {
            match self.store.insert(at, class, cid) {
                Ok(mut init) => {
                    for (f, value) in &values {
                        let field = fid(*f);
                        match value {
                            Value::Number(x) => init.set(field, *x),
                            Value::Integer(x) => init.set(field, *x),
                            Value::Boolean(x) => init.set(field, *x),
                            Value::Text(x) => init.set(field, x.clone()),
                            Value::Vector(x) => init.set(field, *x),
                            Value::Reference(x) => init.set(field, *x),
                            other => init.set_value(field, other.clone()),
                        }
                        .unwrap();
                    }
                    Ok(init.row())
                }
                Err(e) => Err(e),
            }
        } else {
            self.store
                .add(at, class, cid, values.into_iter().map(|(f, v)| (fid(f), v)))
        };
        match expected {
            None => assert!(
                matches!(got, Err(StoreError::TypeMismatch { .. })),
                "{ctx}: {got:?}"
            ),
            Some(Err(e)) => assert_eq!(got, Err(e), "{ctx}"),
            Some(Ok(())) => {
                let row = got.unwrap();
                assert_eq!(self.store.set(cid).unwrap().row_of(at), Some(row), "{ctx}");
                self.model.add(c, at, row_values);
                self.stats.adds += 1;
            }
        }
    }

    fn insert_many(&mut self, picks: &[u16], comp: u8, ctx: &str) {
        let c = usize::from(comp) % SPECS.len();
        let cid = self.ids[c];
        let picked: Vec<usize> = picks.iter().filter_map(|p| self.pick_live(*p)).collect();
        let class = picked
            .first()
            .map_or(ClassId::ENTITY, |&i| self.world[i].class);
        // One class per call: instances of another class are left out.
        let ats: Vec<InstanceRef> = picked
            .iter()
            .filter(|&&i| self.world[i].class == class)
            .map(|&i| self.at(i))
            .collect();
        let shared: Vec<bool> = self
            .snapshots
            .iter()
            .map(|(s, _)| self.store.shares_set_with(s, cid))
            .collect();
        let tick = self.store.tick();
        let revision = self.store.set(cid).unwrap().structural_revision();
        // Refused, as a whole, when the class is not allowed, any instance holds the component
        // or has its slot held by a stale row, or a slot comes twice.
        let mut seen = HashSet::new();
        let refused = !allows(c, class)
            || ats
                .iter()
                .any(|at| self.model.member(c, *at) || self.model.occupant(c, *at).is_some())
            || ats.iter().any(|at| !seen.insert(at.slot));
        let got = self
            .store
            .insert_many(&ats, class, cid)
            .map(|init| init.rows().len());
        if ats.is_empty() {
            let copied = self.store.copy_rows(&[], Some);
            assert_eq!(copied, Ok(0), "{ctx}: an empty copy");
        }
        let unchanged = |h: &Self| {
            assert_eq!(h.store.tick(), tick, "{ctx}: no tick");
            assert_eq!(
                h.store.set(cid).unwrap().structural_revision(),
                revision,
                "{ctx}: no structural change"
            );
            for ((s, _), was) in h.snapshots.iter().zip(&shared) {
                assert_eq!(h.store.shares_set_with(s, cid), *was, "{ctx}: sharing");
            }
        };
        if refused {
            assert!(
                matches!(
                    got,
                    Err(StoreError::ClassNotAllowed { .. }
                        | StoreError::AlreadyPresent { .. }
                        | StoreError::SlotOccupied { .. }
                        | StoreError::DuplicateSlot(_))
                ),
                "{ctx}: {got:?}"
            );
            unchanged(self);
            self.stats.bulk_refused += 1;
        } else if ats.is_empty() {
            assert_eq!(got, Ok(0), "{ctx}");
            unchanged(self);
            self.stats.empty_bulk += 1;
        } else {
            assert_eq!(got, Ok(ats.len()), "{ctx}");
            self.model.add_many(c, &ats, &self.defaults[c]);
            self.stats.bulk_adds += 1;
        }
    }

    fn evict_stale(&mut self, i: usize, ctx: &str) {
        let at = self.at(i);
        let mut got: Vec<(InstanceId, usize)> = self
            .store
            .evict_stale(at)
            .into_iter()
            .map(|(id, cid)| (id, self.comp_index(cid)))
            .collect();
        got.sort();
        let mut expected = self.model.evict_stale(at);
        expected.sort();
        self.stats.stale_evicted += expected.len();
        assert_eq!(got, expected, "{ctx}: evicted rows");
    }

    fn write(&mut self, i: usize, c: usize, f: usize, value: Value, typed: bool, ctx: &str) {
        let at = self.at(i);
        let cid = self.ids[c];
        let field = fid(f);
        let store = &mut self.store;
        let got = if typed {
            match &value {
                Value::Number(x) => store.write(at, cid, field, *x),
                Value::Integer(x) => store.write(at, cid, field, *x),
                Value::Boolean(x) => store.write(at, cid, field, *x),
                Value::Text(x) => store.write(at, cid, field, x.clone()),
                Value::Vector(x) => store.write(at, cid, field, *x),
                Value::Reference(x) => store.write(at, cid, field, *x),
                other => store.write_value(at, cid, field, other.clone()),
            }
        } else {
            store.write_value(at, cid, field, value.clone())
        };
        if self.model.member(c, at) {
            let changed = self.model.write(c, at.id, f, value);
            if changed {
                self.stats.changing_writes += 1;
            } else {
                self.stats.equal_writes += 1;
            }
            assert_eq!(got, Ok(changed), "{ctx}");
        } else {
            assert_eq!(got, Err(missing(at, cid)), "{ctx}");
        }
    }

    fn list(&mut self, inst: u16, member: bool, which: u8, edit: &ListEdit, ctx: &str) {
        let (c, f) = LIST_FIELDS[usize::from(which) % LIST_FIELDS.len()];
        let kind = SPECS[c].fields[f].kind;
        let Some(i) = self.pick(c, member, inst) else {
            return;
        };
        let at = self.at(i);
        let cid = self.ids[c];
        if !self.model.member(c, at) {
            assert!(
                matches!(self.store.list_mut(at, cid, fid(f)), Err(e) if e == missing(at, cid)),
                "{ctx}"
            );
            return;
        }
        let current = list_elements(self.model.value(c, at.id, f));
        let new_elements = match edit {
            ListEdit::Push(n) => {
                let mut grown = current.clone();
                grown.push(self.element(kind, *n));
                Some(grown)
            }
            ListEdit::Replace(items) => Some(self.elements(kind, items)),
            ListEdit::ReplaceSame => Some(current.clone()),
            ListEdit::Clear => Some(Vec::new()),
            ListEdit::PushWrong => None,
            ListEdit::Flood(n, count) => {
                Some(vec![self.element(kind, *n); 20 + usize::from(*count) % 30])
            }
        };
        let pushed = match edit {
            ListEdit::Push(n) => Some(self.element(kind, *n)),
            ListEdit::PushWrong if kind == Kind::RefList => Some(Value::Boolean(true)),
            ListEdit::PushWrong => Some(Value::Reference(None)),
            _ => None,
        };
        let mut accessor = self.store.list_mut(at, cid, fid(f)).unwrap();
        assert_eq!(accessor.as_slice(), Ok(current.as_slice()), "{ctx}");
        let got = match (edit, pushed) {
            (_, Some(element)) => accessor.push(element).map(|()| true),
            (ListEdit::Clear, None) => accessor.clear(),
            (_, None) => accessor.replace(new_elements.clone().unwrap()),
        };
        if let (ListEdit::Flood(..), Some(Value::Reference(Some(_)))) =
            (edit, new_elements.as_ref().and_then(|e| e.first()))
        {
            self.stats.crowded_targets += 1;
        }
        match new_elements {
            Some(elements) => {
                let value = Value::List(ListValue::from_vec(elements));
                let changed = self.model.write(c, at.id, f, value);
                assert_eq!(got, Ok(changed), "{ctx}");
                self.stats.list_edits += usize::from(changed);
            }
            None => assert!(
                matches!(got, Err(StoreError::TypeMismatch { .. })),
                "{ctx}: {got:?}"
            ),
        }
    }

    fn column(&mut self, mark: bool, writes: &[(u16, Val)], ctx: &str) {
        let (c, f) = if mark { (MARK, 1) } else { (BODY, 0) };
        let cid = self.ids[c];
        let ids: Vec<InstanceId> = self.store.set(cid).unwrap().ids().to_vec();
        if ids.is_empty() {
            return;
        }
        let tick = self.model.tick + 1;
        let mut any = false;
        let planned: Vec<(usize, Value)> = writes
            .iter()
            .map(|(row, val)| {
                let row = usize::from(*row) % ids.len();
                (row, self.value(SPECS[c].fields[f].kind, val))
            })
            .collect();
        let mut got = Vec::new();
        if mark {
            let mut writer = self
                .store
                .column_writer::<Option<InstanceId>>(cid, fid(f))
                .unwrap();
            assert_eq!(writer.ids(), ids.as_slice(), "{ctx}");
            for (row, value) in &planned {
                let Value::Reference(target) = value else {
                    unreachable!()
                };
                got.push(writer.write(*row, *target).unwrap());
            }
        } else {
            let mut writer = self.store.column_writer::<f64>(cid, fid(f)).unwrap();
            for (row, value) in &planned {
                let Value::Number(x) = value else {
                    unreachable!()
                };
                got.push(writer.write(*row, *x).unwrap());
            }
        }
        let mut expected = Vec::new();
        for (row, value) in planned {
            let changed = self.model.set_value(c, ids[row], f, value, tick);
            any |= changed;
            expected.push(changed);
        }
        if any {
            self.model.tick = tick;
            self.stats.column_writes += 1;
        }
        assert_eq!(got, expected, "{ctx}: column writes");
    }

    fn destroy(&mut self, first: InstanceId, report: bool, ctx: &str) {
        let mut queue = VecDeque::from([first]);
        while let Some(id) = queue.pop_front() {
            let live = self.arena.is_live(id);
            assert_eq!(
                live,
                self.world[self.index[&id]].status == Status::Live,
                "{ctx}: liveness of {id:?}"
            );
            if !live {
                continue;
            }
            let destruction = self.arena.destroy(id).unwrap();
            for d in &destruction.doomed {
                let inst = &mut self.world[self.index[&d.id]];
                assert_eq!(inst.slot, d.slot, "{ctx}");
                assert_eq!(inst.status, Status::Live, "{ctx}");
                inst.status = Status::Destroyed { reported: report };
            }
            if !report {
                continue;
            }
            let outcome = self.store.on_destroyed(&destruction.doomed);
            let expected = self.model.on_destroyed(&destruction.doomed);
            let doomed: HashSet<InstanceId> = destruction.doomed.iter().map(|d| d.id).collect();

            let mut removed: Vec<(InstanceId, usize)> = outcome
                .removed
                .iter()
                .map(|(id, cid)| (*id, self.comp_index(*cid)))
                .collect();
            removed.sort();
            let mut want_removed = expected.removed;
            want_removed.sort();
            assert_eq!(removed, want_removed, "{ctx}: rows removed by destruction");

            // Every certain clear, plus some of the optional ones (each at most once).
            let mut cleared: Vec<(InstanceId, usize, usize)> = outcome
                .cleared
                .iter()
                .map(|(id, cid, f)| (*id, self.comp_index(*cid), f.index()))
                .collect();
            cleared.sort();
            let mut extra = cleared.clone();
            for certain in &expected.cleared {
                let Some(i) = extra.iter().position(|e| e == certain) else {
                    panic!("{ctx}: {certain:?} was not cleared: {cleared:?}");
                };
                extra.remove(i);
            }
            let mut optional = expected.optional.clone();
            for made in &extra {
                let Some(i) = optional.iter().position(|e| e == made) else {
                    panic!("{ctx}: unexpected clear {made:?}: {:?}", expected.optional);
                };
                optional.remove(i);
            }
            self.model
                .settle(&expected.touched, expected.before, extra.len());
            self.stats.optional_clears_offered += expected.optional.len();
            self.stats.optional_clears_made += extra.len();

            let mut destroy = outcome.destroy.clone();
            destroy.sort();
            destroy.dedup();
            assert_eq!(
                destroy.len(),
                outcome.destroy.len(),
                "{ctx}: duplicate requests"
            );
            let want_destroy: Vec<InstanceId> = expected.destroy.into_iter().collect();
            assert_eq!(destroy, want_destroy, "{ctx}: holders to destroy");

            self.stats.cleared += cleared.len() - extra.len();
            self.stats.policy_removed += removed
                .iter()
                .filter(|(id, _)| !doomed.contains(id))
                .count();
            self.stats.destroy_requests += destroy.len();
            queue.extend(outcome.destroy.iter().copied());
        }
    }

    fn drain(&mut self, report: bool, ctx: &str) {
        let drained = self.arena.drain().unwrap();
        for d in &drained.reclaimed {
            let inst = &mut self.world[self.index[&d.id]];
            assert!(matches!(inst.status, Status::Destroyed { .. }), "{ctx}");
            assert_eq!(inst.slot, d.slot, "{ctx}");
            inst.status = Status::Reclaimed;
        }
        if report {
            self.store.on_reclaimed(&drained.reclaimed);
            self.stats.evicted_on_reclaim += self.model.on_reclaimed(&drained.reclaimed);
        }
    }

    fn load(&mut self, s: usize, c: usize, ctx: &str) {
        let cid = self.ids[c];
        match &self.saved[s] {
            None => {
                assert_eq!(
                    self.store.load_from(cid, &self.slots[s]),
                    Err(StoreError::SlotMismatch {
                        expected: cid,
                        found: None,
                        expected_name: name_of(cid),
                    }),
                    "{ctx}"
                );
                self.stats.mismatched_loads += 1;
            }
            Some((saved_c, _)) if *saved_c != c => {
                assert_eq!(
                    self.store.load_from(cid, &self.slots[s]),
                    Err(StoreError::SlotMismatch {
                        expected: cid,
                        found: Some(self.ids[*saved_c]),
                        expected_name: name_of(cid),
                    }),
                    "{ctx}"
                );
                self.stats.mismatched_loads += 1;
            }
            Some((_, saved)) => {
                // A rollback that keeps the arena restores rows of instances still alive only.
                let all_live = saved
                    .keys()
                    .all(|id| self.world[self.index[id]].status == Status::Live);
                if !all_live {
                    return;
                }
                let saved = saved.clone();
                self.store.load_from(cid, &self.slots[s]).unwrap();
                self.model.load(c, &saved);
                self.stats.loads += 1;
            }
        }
    }

    fn use_handle(&mut self, n: u16, write: Option<&(u8, Val)>, ctx: &str) {
        if self.handles.is_empty() {
            return;
        }
        let (handle, c) = self.handles[usize::from(n) % self.handles.len()];
        let at = handle.instance();
        let cid = self.ids[c];
        let present = self.model.member(c, at);
        assert_eq!(
            handle.is_present(&self.store),
            present,
            "{ctx}: handle presence"
        );
        if present {
            assert_eq!(handle.row(&self.store), self.store.row(at, cid), "{ctx}");
            for f in 0..SPECS[c].fields.len() {
                assert_same(
                    handle.get_value(&self.store, fid(f)),
                    self.model.value(c, at.id, f),
                    &format!("{ctx}: handle read"),
                );
            }
        } else {
            assert_eq!(handle.row(&self.store), Err(missing(at, cid)), "{ctx}");
            for f in 0..SPECS[c].fields.len() {
                assert_eq!(
                    handle.get_value(&self.store, fid(f)),
                    Err(missing(at, cid)),
                    "{ctx}: stale handle read"
                );
            }
            self.stats.stale_handle_reads += 1;
            let reused = self.world.iter().any(|other| {
                other.id != at.id
                    && other.slot == at.slot
                    && self.model.member(c, InstanceRef::new(other.id, other.slot))
            });
            self.stats.reused_slot_handle_reads += usize::from(reused);
        }
        // The handle reads the snapshots too, each as of its own time.
        for (snapshot, model) in &self.snapshots {
            let got = handle.get_value(snapshot, fid(0));
            if model.member(c, at) {
                assert_same(
                    got,
                    model.value(c, at.id, 0),
                    &format!("{ctx}: snapshot read"),
                );
            } else {
                assert_eq!(got, Err(missing(at, cid)), "{ctx}: snapshot read");
            }
        }
        if let Some((field, val)) = write {
            let f = usize::from(*field) % SPECS[c].fields.len();
            let value = self.value(SPECS[c].fields[f].kind, val);
            let got = handle.write_value(&mut self.store, fid(f), value.clone());
            if present {
                let changed = self.model.write(c, at.id, f, value);
                assert_eq!(got, Ok(changed), "{ctx}: handle write");
            } else {
                assert_eq!(got, Err(missing(at, cid)), "{ctx}: stale handle write");
            }
        }
    }

    /// Restores the arena and the store to a pair saved together, and the harness with them.
    fn restore_world(&mut self, pick: usize, ctx: &str) {
        if self.restore_points.is_empty() {
            return;
        }
        let point = &self.restore_points[pick % self.restore_points.len()];
        let old_id = self.store.id();
        self.arena.restore(&point.arena).unwrap();
        self.store.restore(&point.store).unwrap();
        assert_ne!(
            self.store.id(),
            old_id,
            "{ctx}: a restored store is another identity"
        );
        assert_eq!(
            self.store.tick(),
            point.store.tick(),
            "{ctx}: the saved tick"
        );
        for &cid in &self.ids {
            assert!(
                self.store.shares_set_with(&point.store, cid),
                "{ctx}: sets are shared"
            );
        }
        // What was pending was taken back with the changes it announced.
        self.model = point.model.clone();
        self.model.events.clear();
        // Instances made since the save point are gone for good: their ids never come back.
        let made_since: Vec<Inst> = self.world[point.world.len()..].to_vec();
        self.world = point.world.clone();
        for mut inst in made_since {
            inst.status = Status::Reclaimed;
            self.world.push(inst);
        }
        self.used_slots = point.used_slots.clone();
        // Slots saved since hold rows of that history: start them afresh.
        self.slots = vec![SetSlot::new(); SET_SLOTS];
        self.saved.iter_mut().for_each(|s| *s = None);
        // A reader keeps its place in the history it read; where that history is not this
        // one's, it must say it missed removals (and may say so when it is).
        for (c, readers) in self.readers.iter().enumerate() {
            for r in 0..readers.len() {
                self.unsure.insert((c, r));
            }
        }
        self.stats.restores += 1;
    }

    fn check(&mut self, ctx: &str) {
        let mut events: Vec<Ev> = self
            .store
            .drain_events()
            .iter()
            .map(|e| match e {
                StoreEvent::Added { id, component } => (0, *id, self.comp_index(*component), 0),
                StoreEvent::Removed { id, component } => (1, *id, self.comp_index(*component), 0),
                StoreEvent::Changed {
                    id,
                    component,
                    field,
                } => (2, *id, self.comp_index(*component), field.index()),
            })
            .collect();
        events.sort();
        let mut expected = std::mem::take(&mut self.model.events);
        expected.sort();
        assert_eq!(events, expected, "{ctx}: events");
        check_store(&self.store, &mut self.model, &self.ids, &self.world, ctx);
        for (index, (snapshot, model)) in self.snapshots.iter_mut().enumerate() {
            let ctx = format!("{ctx} [snapshot {index}]");
            check_store(snapshot, model, &self.ids, &self.world, &ctx);
        }
    }
}

fn missing(at: InstanceRef, component: ComponentId) -> StoreError {
    StoreError::MissingMembership {
        id: at.id,
        component,
        component_name: name_of(component),
    }
}

/// A component's name: the model installs `SPECS` in order, so an id's index is its spec's.
fn name_of(component: ComponentId) -> Arc<str> {
    SPECS[component.index()].name.into()
}

// ----- Strategies. -----

fn val() -> impl Strategy<Value = Val> {
    (any::<u16>(), prop::collection::vec(any::<u16>(), 0..4))
        .prop_map(|(pick, items)| Val { pick, items })
}

fn list_edit() -> impl Strategy<Value = ListEdit> {
    prop_oneof![
        4 => any::<u16>().prop_map(ListEdit::Push),
        2 => prop::collection::vec(any::<u16>(), 0..4).prop_map(ListEdit::Replace),
        1 => Just(ListEdit::ReplaceSame),
        2 => Just(ListEdit::Clear),
        1 => Just(ListEdit::PushWrong),
        1 => (any::<u16>(), any::<u8>()).prop_map(|(n, count)| ListEdit::Flood(n, count)),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (any::<u8>(), prop::option::weighted(0.4, any::<u16>()))
            .prop_map(|(class, parent)| Op::Create { class, parent }),
        10 => (
            any::<u16>(),
            prop::bool::weighted(0.15),
            any::<u8>(),
            prop::collection::vec((any::<u8>(), val()), 0..3),
            any::<bool>(),
            prop::bool::weighted(0.04),
        )
            .prop_map(|(inst, present, comp, values, insert, bad)| Op::Add {
                inst,
                present,
                comp,
                values,
                insert,
                bad,
            }),
        4 => (any::<u16>(), prop::bool::weighted(0.8), any::<u8>())
            .prop_map(|(inst, member, comp)| Op::Remove { inst, member, comp }),
        10 => (
            any::<u16>(),
            prop::bool::weighted(0.85),
            any::<u8>(),
            any::<u8>(),
            val(),
            any::<bool>(),
        )
            .prop_map(|(inst, member, comp, field, val, typed)| Op::Write {
                inst,
                member,
                comp,
                field,
                val,
                typed,
            }),
        3 => (any::<u16>(), any::<u8>(), any::<u8>(), any::<bool>())
            .prop_map(|(inst, comp, field, typed)| Op::WriteSame { inst, comp, field, typed }),
        1 => (any::<u16>(), any::<bool>(), any::<u8>(), any::<u8>(), any::<bool>()).prop_map(
            |(inst, member, comp, field, typed)| Op::WriteWrong {
                inst,
                member,
                comp,
                field,
                typed,
            }
        ),
        1 => (any::<u16>(), any::<bool>()).prop_map(|(inst, typed)| Op::FloatBits { inst, typed }),
        7 => (any::<u16>(), prop::bool::weighted(0.85), any::<u8>(), list_edit())
            .prop_map(|(inst, member, which, edit)| Op::List { inst, member, which, edit }),
        2 => (any::<u16>(), any::<u8>(), any::<u16>())
            .prop_map(|(inst, comp, target)| Op::SameTarget { inst, comp, target }),
        1 => (any::<bool>(), prop::collection::vec((any::<u16>(), val()), 1..4))
            .prop_map(|(mark, writes)| Op::Column { mark, writes }),
        3 => (any::<u16>(), prop::bool::weighted(0.8))
            .prop_map(|(inst, report)| Op::Destroy { inst, report }),
        3 => prop::bool::weighted(0.75).prop_map(|report| Op::Drain { report }),
        1 => Just(Op::Snapshot),
        1 => Just(Op::SaveWorld),
        1 => any::<u8>().prop_map(Op::RestoreWorld),
        2 => (any::<u8>(), any::<u8>()).prop_map(|(slot, comp)| Op::Save { slot, comp }),
        2 => (any::<u8>(), any::<u8>()).prop_map(|(slot, comp)| Op::Load { slot, comp }),
        2 => (any::<u16>(), prop::bool::weighted(0.85), any::<u8>())
            .prop_map(|(inst, member, comp)| Op::MakeHandle { inst, member, comp }),
        3 => (any::<u16>(), prop::option::weighted(0.3, (any::<u8>(), val())))
            .prop_map(|(handle, write)| Op::UseHandle { handle, write }),
        2 => (any::<u16>(), any::<u8>()).prop_map(|(inst, comp)| Op::AddOverStale { inst, comp }),
        2 => (prop::collection::vec(any::<u16>(), 0..4), any::<u8>())
            .prop_map(|(picks, comp)| Op::InsertMany { picks, comp }),
        1 => any::<u16>().prop_map(|inst| Op::EvictStale { inst }),
        1 => (any::<u16>(), any::<u8>(), any::<u32>())
            .prop_map(|(inst, comp, slot)| Op::FarSlot { inst, comp, slot }),
        3 => (any::<u8>(), any::<bool>())
            .prop_map(|(comp, reader)| Op::ReadRemovals { comp, reader }),
        2 => any::<u8>().prop_map(|comp| Op::TakeDirty { comp }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 500,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn store_agrees_with_reference_model(ops in prop::collection::vec(op(), 1..=80)) {
        let mut harness = Harness::new();
        for op in &ops {
            harness.apply(op);
        }
        // Release everything still queued, then read every removal reader once more.
        harness.apply(&Op::Drain { report: true });
        harness.apply(&Op::Drain { report: true });
        for comp in 0..SPECS.len() {
            for reader in [false, true] {
                let comp = u8::try_from(comp).unwrap();
                harness.apply(&Op::ReadRemovals { comp, reader });
            }
        }
    }
}

// ----- Deterministic runs. -----

fn assert_all_positive(stats: &impl Debug, counts: &[(&str, usize)]) {
    for (name, count) in counts {
        assert!(*count > 0, "the run never reached `{name}`: {stats:?}");
    }
}

/// A long run of the same random operations from a fixed seed, which must reach every path the
/// model checks (so the property test above is not vacuous).
#[test]
fn a_long_run_reaches_every_path() {
    let mut runner = TestRunner::deterministic();
    let strategy = op();
    let mut harness = Harness::new();
    for _ in 0..4_000 {
        let op = strategy.new_tree(&mut runner).unwrap().current();
        harness.apply(&op);
    }
    let s = &harness.stats;
    let floats = harness.model.floats;
    assert_all_positive(
        &(s, floats),
        &[
            ("slot reuse", s.slot_reuses),
            ("restore", s.restores),
            ("missed removals after a restore", s.missed_after_restore),
            ("add", s.adds),
            ("AlreadyPresent", s.already_present),
            ("ClassNotAllowed", s.class_refused),
            ("requires cascade", s.cascaded),
            ("equal write", s.equal_writes),
            ("changing write", s.changing_writes),
            ("NaN written over the same NaN", floats.nan_over_nan),
            ("zero written over the other zero", floats.zero_sign_changes),
            ("list edit", s.list_edits),
            ("crowded target", s.crowded_targets),
            ("column writer", s.column_writes),
            ("Clear policy", s.cleared),
            ("RemoveComponent policy", s.policy_removed),
            ("DestroyHolder policy", s.destroy_requests),
            ("eviction on reclaim", s.evicted_on_reclaim),
            ("stale row evicted on request", s.stale_evicted),
            (
                "add refused at a slot another instance holds",
                s.slot_occupied,
            ),
            ("add refused at a slot far past the arena", s.far_slots),
            ("bulk add", s.bulk_adds),
            ("empty bulk add", s.empty_bulk),
            ("refused bulk add", s.bulk_refused),
            ("one holder's clear and removal", s.optional_clears_offered),
            ("load", s.loads),
            ("mismatched load", s.mismatched_loads),
            ("stale handle read", s.stale_handle_reads),
            ("handle read after slot reuse", s.reused_slot_handle_reads),
            ("removal read", s.removals_read),
            ("dirty taken", s.dirty_taken),
        ],
    );
}

/// Destructions that both clear a field of a holder and remove the holder's component: the model
/// accepts the clear having happened first or not at all, and checks the rest exactly.
#[test]
fn a_clear_and_a_removal_of_one_holder() {
    let mut harness = Harness::new();
    let add = |inst: u16, comp: u8| Op::Add {
        inst,
        present: false,
        comp,
        values: Vec::new(),
        insert: false,
        bad: false,
    };
    // Two entities with Body and Link.
    for op in [add(0, 0), add(0, 1), add(1, 0), add(1, 1)] {
        harness.apply(&op);
    }
    assert_eq!(harness.model.sets[LINK].rows.len(), 2);
    // Every reference field of each Link at one target, written in field order for the first
    // and in reverse for the second. A target pick `8k + 7` is the live instance `k`; odd `k`
    // reverses the order.
    harness.apply(&Op::SameTarget {
        inst: 0,
        comp: 1,
        target: 8 * 4 + 7,
    });
    harness.apply(&Op::SameTarget {
        inst: 1,
        comp: 1,
        target: 8 * 3 + 7,
    });
    let part = harness.world[4].id;
    let folder = harness.world[3].id;
    for (holder, target) in [(0, part), (1, folder)] {
        let id = harness.world[holder].id;
        for f in [0, 3] {
            assert_eq!(
                harness.model.value(LINK, id, f),
                &Value::Reference(Some(target))
            );
        }
    }
    harness.apply(&Op::Destroy {
        inst: 4,
        report: true,
    });
    assert_eq!(
        harness.world[4].status,
        Status::Destroyed { reported: true }
    );
    harness.apply(&Op::Destroy {
        inst: 3,
        report: true,
    });
    assert_eq!(
        harness.world[3].status,
        Status::Destroyed { reported: true }
    );
    assert_eq!(harness.stats.optional_clears_offered, 2);
    assert!(harness.model.sets[LINK].rows.is_empty());
}

/// More than `REMOVAL_LOG_CAPACITY` removals: a reader left behind gets `Missed` once, then reads
/// from the head; a reader that kept up still gets an exact list.
#[test]
fn removal_log_overflow_reports_missed_then_reads_from_the_head() {
    let mut arena = Arena::standard();
    let mut store = Store::new();
    let pulse = store
        .install(
            ComponentDef::new("Pulse").field(FieldDef::integer("n", 0)),
            arena.classes(),
        )
        .unwrap();
    let mut instances: Vec<InstanceRef> = (0..3)
        .map(|_| {
            let id = arena.create(ClassId::ENTITY, None).unwrap();
            InstanceRef::of(&arena, id).unwrap()
        })
        .collect();
    instances.sort_by_key(|at| at.id);
    let all: Vec<InstanceId> = instances.iter().map(|at| at.id).collect();
    let cycle = |store: &mut Store, at: InstanceRef| {
        store.add(at, ClassId::ENTITY, pulse, []).unwrap();
        assert_eq!(store.remove(at, pulse), Ok(true));
    };

    let mut behind = RemovalReader::new(&store, pulse).unwrap();
    let mut keeping_up = RemovalReader::new(&store, pulse).unwrap();
    for k in 0..REMOVAL_LOG_CAPACITY {
        cycle(&mut store, instances[k % 3]);
        if k == 10_000 {
            assert_eq!(keeping_up.read(&store), Ok(Removals::Ids(all.clone())));
        }
    }
    // Exactly full: nothing dropped yet, so a reader from the start still gets everything.
    let log = store.set(pulse).unwrap().removal_log();
    assert_eq!(log.len(), REMOVAL_LOG_CAPACITY);
    assert_eq!(log.floor(), 0);
    let mut at_capacity = behind.clone();
    assert_eq!(at_capacity.read(&store), Ok(Removals::Ids(all.clone())));

    // One more drops the older half.
    cycle(&mut store, instances[0]);
    let floor = (REMOVAL_LOG_CAPACITY / 2) as u64;
    assert_eq!(store.set(pulse).unwrap().removal_log().floor(), floor);
    assert_eq!(
        behind.read(&store),
        Ok(Removals::Missed { cursor: 0, floor })
    );
    assert_eq!(behind.read(&store), Ok(Removals::Ids(Vec::new())));
    assert_eq!(keeping_up.read(&store), Ok(Removals::Ids(all.clone())));
    assert_eq!(at_capacity.read(&store), Ok(Removals::Ids(vec![all[0]])));

    // After the missed read the reader follows the head like any other.
    cycle(&mut store, instances[1]);
    cycle(&mut store, instances[1]);
    assert_eq!(
        behind.read(&store),
        Ok(Removals::Ids(vec![instances[1].id]))
    );
    let late = RemovalReader::new(&store, pulse).unwrap();
    let mut late_copy = late.clone();
    assert_eq!(late_copy.read(&store), Ok(Removals::Ids(Vec::new())));
}
