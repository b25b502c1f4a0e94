//! Parallel passes: a pass's matches cut into contiguous chunks on rayon, each row written in
//! place by one task, change tracking merged in chunk order.
//!
//! The property test builds the same world several times from one random recipe (removals that
//! leave rows out of id order, writes, a dirty take, a changed filter whose second pass selects
//! the rows written since the first) and runs one pass over it: serially through
//! `Pass::update`/`update_each`, and in parallel on pools of 1 to 8 threads with random chunking.
//! The parallel stores must be identical to one another and to the serial store in everything
//! the store shows: values, added and changed ticks, store tick, the change log (what
//! `changes_since` gives for every baseline, and its length), the dirty count and what
//! `take_dirty` returns, events.

use crate::common::Caching;

use std::sync::OnceLock;

use proptest::prelude::*;
use strata_arena::{Arena, ClassId, InstanceId, Vec3};
use strata_component_store::{
    ComponentDef, ComponentId, FieldDef, FieldId, FieldMask, InstanceRef, RefPolicy, Store,
    StoreError, StoreEvent, Tick, Value,
};
use strata_query::{Chunks, Pass, Query, QueryError, QuerySpec};

const X: FieldId = FieldId::from_index(0);
const E: FieldId = FieldId::from_index(1);
const V: FieldId = FieldId::from_index(2);
const Y: FieldId = FieldId::from_index(0);
const T: FieldId = FieldId::from_index(0);

/// Rayon pools of 1 to 8 threads, made once.
fn pool(threads: usize) -> &'static rayon::ThreadPool {
    static POOLS: OnceLock<Vec<rayon::ThreadPool>> = OnceLock::new();
    let pools = POOLS.get_or_init(|| {
        (1..=8)
            .map(|n| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(n)
                    .build()
                    .unwrap()
            })
            .collect()
    });
    &pools[threads - 1]
}

/// Which pass a case runs.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// `A.x` from itself; rows above 50 keep their value (equal writes).
    Number,
    /// `A.x` from itself, every row changing.
    Shift,
    /// `A.x += B.y` over the instances holding both (a second, filtering term).
    FromOther,
    /// `A.v` from `A.x` (another field of the written set).
    SameSet,
    /// `A.v` from `A.x`, rows whose `x` is above 50 keeping their value.
    SameSetSome,
    /// `A.e`, an enum, from itself (values are checked before any is stored).
    Enum,
    /// `R.t`, a reference (written by one task, keeping the reverse index).
    Reference,
}

#[derive(Clone, Debug)]
struct Recipe {
    /// Per instance, which of A, B and R it holds (bits 0, 1, 2).
    holds: Vec<u8>,
    observed: bool,
    /// (instance, component) removals: they move rows out of id order.
    removals: Vec<(usize, usize)>,
    /// `A.x` writes before the pass.
    writes: Vec<(usize, f64)>,
    take_dirty: bool,
    kind: Kind,
    /// Whether the query has a changed filter; its first pass runs before `later`.
    changed: bool,
    /// `A.x` writes (and `R.t` writes) between the filter's first pass and the measured one.
    later: Vec<(usize, f64)>,
}

fn recipe() -> impl Strategy<Value = Recipe> {
    (1usize..90).prop_flat_map(|n| {
        (
            proptest::collection::vec(0u8..8, n),
            any::<bool>(),
            proptest::collection::vec((0..n, 0usize..3), 0..30),
            proptest::collection::vec((0..n, 0.0f64..100.0), 0..40),
            any::<bool>(),
            prop_oneof![
                Just(Kind::Number),
                Just(Kind::Shift),
                Just(Kind::FromOther),
                Just(Kind::SameSet),
                Just(Kind::SameSetSome),
                Just(Kind::Enum),
                Just(Kind::Reference),
            ],
            any::<bool>(),
            proptest::collection::vec((0..n, 0.0f64..100.0), 0..20),
        )
            .prop_map(
                |(holds, observed, removals, writes, take_dirty, kind, changed, later)| Recipe {
                    holds,
                    observed,
                    removals,
                    writes,
                    take_dirty,
                    kind,
                    changed,
                    later,
                },
            )
    })
}

fn chunks() -> impl Strategy<Value = (usize, Chunks)> {
    (
        1usize..=8,
        prop_oneof![
            Just(Chunks::Auto),
            (1usize..40).prop_map(Chunks::Rows),
            (1usize..12).prop_map(Chunks::Count),
        ],
    )
}

struct World {
    arena: Arena,
    store: Store,
    a: ComponentId,
    b: ComponentId,
    r: ComponentId,
    ats: Vec<InstanceRef>,
    query: Query,
}

impl World {
    fn build(recipe: &Recipe, mode: Caching) -> World {
        let mut arena = Arena::standard();
        let mut store = Store::new();
        let a = store
            .install(
                ComponentDef::new("A")
                    .field(FieldDef::number("x", 0.0))
                    .field(FieldDef::enumeration("e", &["p", "q", "r"], "p"))
                    .field(FieldDef::vector("v", Vec3::ZERO))
                    .observed(recipe.observed),
                arena.classes(),
            )
            .unwrap();
        let b = store
            .install(
                ComponentDef::new("B").field(FieldDef::number("y", 0.0)),
                arena.classes(),
            )
            .unwrap();
        let r = store
            .install(
                ComponentDef::new("R").field(FieldDef::reference("t", RefPolicy::Clear)),
                arena.classes(),
            )
            .unwrap();
        let mut ats = Vec::new();
        for (i, holds) in recipe.holds.iter().enumerate() {
            let id = arena.create(ClassId::ENTITY, None).unwrap();
            let at = InstanceRef::of(&arena, id).unwrap();
            ats.push(at);
            if holds & 1 != 0 {
                store.insert(at, ClassId::ENTITY, a).unwrap();
                store.write(at, a, X, i as f64).unwrap();
                store.write(at, a, E, (i % 3) as u32).unwrap();
            }
            if holds & 2 != 0 {
                store.insert(at, ClassId::ENTITY, b).unwrap();
                store.write(at, b, Y, ((i * 3) % 7) as f64).unwrap();
            }
            if holds & 4 != 0 {
                store.insert(at, ClassId::ENTITY, r).unwrap();
                if i % 2 == 0 {
                    store.write(at, r, T, Some(ats[i / 2].id)).unwrap();
                }
            }
        }
        for &(i, c) in &recipe.removals {
            let _ = store.remove(ats[i], [a, b, r][c]);
        }
        for &(i, x) in &recipe.writes {
            let _ = store.write(ats[i], a, X, x);
        }
        if recipe.take_dirty {
            store.take_dirty(a).unwrap();
        }
        let written = match recipe.kind {
            Kind::Reference => r,
            _ => a,
        };
        let mut spec = QuerySpec::new().with(written);
        if let Kind::FromOther = recipe.kind {
            spec = spec.with(b);
        }
        if recipe.changed {
            spec = spec.changed(written);
        }
        let mut query = mode.query(spec).unwrap();
        if recipe.changed {
            query.run(&arena, &store).unwrap();
            for &(i, x) in &recipe.later {
                let _ = store.write(ats[i], a, X, x);
                let _ = store.write(ats[i], r, T, Some(ats[(i + 1) % ats.len()].id));
            }
        }
        World {
            arena,
            store,
            a,
            b,
            r,
            ats,
            query,
        }
    }

    /// Runs the recipe's pass: serially when `par` is `None`, else on a pool of that many
    /// threads with that chunking.
    fn pass(&mut self, kind: Kind, par: Option<(usize, Chunks)>) -> Result<usize, QueryError> {
        let first = self.ats[0].id;
        let pass = self.query.run(&self.arena, &self.store)?;
        let store = &mut self.store;
        match par {
            None => serial(&pass, store, kind, first),
            Some((threads, chunks)) => {
                pool(threads).install(|| parallel(&pass, store, kind, chunks, first))
            }
        }
    }

    /// Everything the store shows about its three sets, taking the dirty state and the events.
    fn print(&mut self) -> Print {
        let mut sets = Vec::new();
        let mut dirty = Vec::new();
        for c in [self.a, self.b, self.r] {
            let set = self.store.set(c).unwrap();
            let fields = set.def().fields().len() as u16;
            sets.push(SetPrint {
                ids: set.ids().to_vec(),
                slots: set.slots().iter().map(|s| s.index()).collect(),
                added: set.added_ticks().to_vec(),
                changed: set.changed_ticks().to_vec(),
                values: (0..set.len())
                    .map(|row| {
                        (0..fields)
                            .map(|f| set.value(row, FieldId::from_index(f)))
                            .collect()
                    })
                    .collect(),
                log: (0..=self.store.tick().0)
                    .map(|baseline| {
                        set.changes_since(Tick(baseline))
                            .map(|changes| changes.rows().collect())
                    })
                    .collect(),
                logged: set.logged_changes(),
                pending_dirty: set.pending_dirty(),
            });
            dirty.push(self.store.take_dirty(c).unwrap());
        }
        Print {
            tick: self.store.tick(),
            sets,
            events: self.store.drain_events(),
            dirty,
        }
    }
}

#[derive(Debug, PartialEq)]
struct SetPrint {
    ids: Vec<InstanceId>,
    slots: Vec<usize>,
    added: Vec<Tick>,
    changed: Vec<Tick>,
    values: Vec<Vec<Option<Value>>>,
    /// For every baseline up to the store tick, the rows the change log hands a reader.
    log: Vec<Option<Vec<usize>>>,
    logged: usize,
    pending_dirty: usize,
}

#[derive(Debug, PartialEq)]
struct Print {
    tick: Tick,
    sets: Vec<SetPrint>,
    events: Vec<StoreEvent>,
    dirty: Vec<Vec<(InstanceId, FieldMask)>>,
}

fn number(x: &f64) -> f64 {
    if *x > 50.0 { *x } else { x * 2.0 + 1.0 }
}

fn vector(v: &Vec3, x: &f64) -> Vec3 {
    if *x > 50.0 {
        *v
    } else {
        Vec3::new(*x as f32, v.y + 1.0, v.z)
    }
}

fn enumeration(e: &u32) -> u32 {
    if *e == 2 { 2 } else { e + 1 }
}

fn reference(t: &Option<InstanceId>, first: InstanceId) -> Option<InstanceId> {
    match t {
        Some(_) => None,
        None => Some(first),
    }
}

fn serial(
    pass: &Pass<'_>,
    store: &mut Store,
    kind: Kind,
    first: InstanceId,
) -> Result<usize, QueryError> {
    match kind {
        Kind::Number => pass.update_each::<f64>(store, (0, X), number),
        Kind::Shift => pass.update_each::<f64>(store, (0, X), |x| x + 1.0),
        Kind::FromOther => pass.update::<f64, f64>(store, (0, X), (1, Y), |x, y| x + y),
        Kind::SameSet => pass.update::<Vec3, f64>(store, (0, V), (0, X), |v, x| {
            Vec3::new(*x as f32, v.y + 1.0, v.z)
        }),
        Kind::SameSetSome => pass.update::<Vec3, f64>(store, (0, V), (0, X), vector),
        Kind::Enum => pass.update_each::<u32>(store, (0, E), enumeration),
        Kind::Reference => {
            pass.update_each::<Option<InstanceId>>(store, (0, T), |t| reference(t, first))
        }
    }
}

fn parallel(
    pass: &Pass<'_>,
    store: &mut Store,
    kind: Kind,
    chunks: Chunks,
    first: InstanceId,
) -> Result<usize, QueryError> {
    match kind {
        Kind::Number => pass.par_update_each::<f64>(store, (0, X), chunks, number),
        Kind::Shift => pass.par_update_each::<f64>(store, (0, X), chunks, |x| x + 1.0),
        Kind::FromOther => pass.par_update::<f64, f64>(store, (0, X), (1, Y), chunks, |x, y| x + y),
        Kind::SameSet => pass.par_update::<Vec3, f64>(store, (0, V), (0, X), chunks, |v, x| {
            Vec3::new(*x as f32, v.y + 1.0, v.z)
        }),
        Kind::SameSetSome => pass.par_update::<Vec3, f64>(store, (0, V), (0, X), chunks, vector),
        Kind::Enum => pass.par_update_each::<u32>(store, (0, E), chunks, enumeration),
        Kind::Reference => pass
            .par_update_each::<Option<InstanceId>>(store, (0, T), chunks, |t| reference(t, first)),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_parallel_pass_is_the_same_for_any_thread_count_and_chunking_and_as_the_serial_pass(
        recipe in recipe(),
        runs in proptest::collection::vec(chunks(), 3),
    ) {
        // Two passes: the second meets rows the first changed at the change log's base.
        let mut serial = World::build(&recipe, Caching::Cached);
        let serial_changed = [
            serial.pass(recipe.kind, None).unwrap(),
            serial.pass(recipe.kind, None).unwrap(),
        ];
        let serial_print = serial.print();
        let mut first: Option<Print> = None;
        // The runs alternate between cached and uncached queries.
        for (k, (threads, chunks)) in runs.into_iter().enumerate() {
            let mode = if k % 2 == 0 { Caching::Uncached } else { Caching::Cached };
            let par = Some((threads, chunks));
            let mut world = World::build(&recipe, mode);
            let changed = [
                world.pass(recipe.kind, par).unwrap(),
                world.pass(recipe.kind, par).unwrap(),
            ];
            prop_assert_eq!(changed, serial_changed, "{} threads, {:?}", threads, chunks);
            let exact = world.print();
            match &first {
                None => first = Some(exact),
                Some(first) => prop_assert_eq!(&exact, first, "{} threads, {:?}", threads, chunks),
            }
            let mut again = World::build(&recipe, mode);
            again.pass(recipe.kind, par).unwrap();
            again.pass(recipe.kind, par).unwrap();
            prop_assert_eq!(&again.print(), &serial_print, "{} threads, {:?}", threads, chunks);
        }
    }
}

/// A world of `n` instances holding one number component.
fn heated(n: usize) -> (Arena, Store, ComponentId, Vec<InstanceRef>) {
    let mut arena = Arena::standard();
    let mut store = Store::new();
    let heat = store
        .install(
            ComponentDef::new("Heat")
                .field(FieldDef::number("t", 0.0))
                .field(FieldDef::enumeration("mode", &["off", "on"], "off")),
            arena.classes(),
        )
        .unwrap();
    let made = arena.create_many(ClassId::ENTITY, None, n).unwrap();
    let ats: Vec<InstanceRef> = made
        .into_iter()
        .map(|(id, slot)| InstanceRef::new(id, slot))
        .collect();
    store.insert_many(&ats, ClassId::ENTITY, heat).unwrap();
    (arena, store, heat, ats)
}

fn a_parallel_pass_writes_every_matched_row_in_place_with_change_tracking(mode: Caching) {
    let (arena, mut store, heat, ats) = heated(10_000);
    let mut all = mode.query(QuerySpec::new().with(heat)).unwrap();
    let mut changed = mode
        .query(QuerySpec::new().with(heat).changed(heat))
        .unwrap();
    changed.run(&arena, &store).unwrap();
    store.take_dirty(heat).unwrap();
    let before = store.tick();
    for threads in [1, 2, 8] {
        let value = threads as f64;
        let written = pool(threads)
            .install(|| {
                all.run(&arena, &store).unwrap().par_update_each::<f64>(
                    &mut store,
                    (0, X),
                    Chunks::Count(4),
                    |_| value,
                )
            })
            .unwrap();
        assert_eq!(written, ats.len());
        let set = store.set(heat).unwrap();
        assert!(set.values::<f64>(X).unwrap().iter().all(|t| *t == value));
        assert!(set.changed_ticks().iter().all(|t| t == store.tick()));
        assert_eq!(changed.run(&arena, &store).unwrap().len(), ats.len());
        let dirty = store.take_dirty(heat).unwrap();
        assert_eq!(dirty.len(), ats.len());
        assert!(
            dirty
                .iter()
                .all(|(_, mask)| mask.contains(X) && !mask.contains(E))
        );
    }
    assert_eq!(store.tick(), Tick(before.0 + 3), "one tick per pass");
    // Writing the same values again changes nothing.
    let again = pool(2)
        .install(|| {
            all.run(&arena, &store).unwrap().par_update_each::<f64>(
                &mut store,
                (0, X),
                Chunks::Auto,
                |t| *t,
            )
        })
        .unwrap();
    assert_eq!(again, 0);
    assert_eq!(store.tick(), Tick(before.0 + 3));
    assert_eq!(changed.run(&arena, &store).unwrap().len(), 0);
}

fn a_value_refused_in_any_chunk_changes_nothing(mode: Caching) {
    const MODE: FieldId = FieldId::from_index(1);
    let (arena, mut store, heat, ats) = heated(1_000);
    let mut all = mode.query(QuerySpec::new().with(heat)).unwrap();
    for (threads, chunks) in [
        (1, Chunks::Auto),
        (4, Chunks::Rows(7)),
        (8, Chunks::Count(8)),
    ] {
        for bad in [0, 500, ats.len() - 1] {
            store.write(ats[bad], heat, X, 99.0).unwrap();
            let before = store.tick();
            let changed_before = store.set(heat).unwrap().changed_ticks().to_vec();
            // Every row turns on, except that one gets an index past the variants.
            let result = pool(threads).install(|| {
                all.run(&arena, &store).unwrap().par_update::<u32, f64>(
                    &mut store,
                    (0, MODE),
                    (0, X),
                    chunks,
                    |_, x| if *x == 99.0 { 7 } else { 1 },
                )
            });
            assert!(
                matches!(
                    result,
                    Err(QueryError::Store(StoreError::TypeMismatch { .. }))
                ),
                "{result:?}"
            );
            let set = store.set(heat).unwrap();
            assert!(set.values::<u32>(MODE).unwrap().iter().all(|m| *m == 0));
            assert_eq!(set.changed_ticks(), changed_before);
            assert_eq!(store.tick(), before);
            store.write(ats[bad], heat, X, 0.0).unwrap();
        }
    }
}

fn zero_rows_per_chunk_or_zero_chunks_are_refused(mode: Caching) {
    let (arena, mut store, heat, _) = heated(10);
    let mut all = mode.query(QuerySpec::new().with(heat)).unwrap();
    for chunks in [Chunks::Rows(0), Chunks::Count(0)] {
        let pass = all.run(&arena, &store).unwrap();
        assert_eq!(
            pass.par_update_each::<f64>(&mut store, (0, X), chunks, |t| t + 1.0),
            Err(QueryError::ZeroChunks)
        );
    }
    assert!(
        store
            .set(heat)
            .unwrap()
            .values::<f64>(X)
            .unwrap()
            .iter()
            .all(|t| *t == 0.0)
    );
}

fn a_parallel_pass_over_a_changed_structure_is_refused(mode: Caching) {
    let (arena, mut store, heat, ats) = heated(10);
    let mut all = mode.query(QuerySpec::new().with(heat)).unwrap();
    let pass = all.run(&arena, &store).unwrap();
    store.remove(ats[3], heat).unwrap();
    assert_eq!(
        pass.par_update_each::<f64>(&mut store, (0, X), Chunks::Auto, |t| t + 1.0),
        Err(QueryError::StaleMatches)
    );
    assert_eq!(
        pass.par_update_each::<f64>(&mut store, (3, X), Chunks::Auto, |t| t + 1.0),
        Err(QueryError::StaleMatches)
    );
    let pass = all.run(&arena, &store).unwrap();
    assert_eq!(
        pass.par_update_each::<f64>(&mut store, (3, X), Chunks::Auto, |t| t + 1.0),
        Err(QueryError::NoSuchTerm(3))
    );
    assert!(matches!(
        pass.par_update_each::<i64>(&mut store, (0, X), Chunks::Auto, |t| t + 1),
        Err(QueryError::Store(StoreError::TypeMismatch { .. }))
    ));
    assert!(matches!(
        pass.par_update::<f64, f64>(&mut store, (0, X), (0, X), Chunks::Auto, |t, _| t + 1.0),
        Err(QueryError::Store(StoreError::AliasedColumns { .. }))
    ));
}

fn a_parallel_pass_over_rows_out_of_id_order_computes_in_parallel_and_stores_in_match_order(
    mode: Caching,
) {
    let (arena, mut store, heat, ats) = heated(5_000);
    // Removing early rows swaps late instances into them: rows no longer follow ids.
    for at in ats.iter().step_by(7) {
        store.remove(*at, heat).unwrap();
    }
    let mut all = mode.query(QuerySpec::new().with(heat)).unwrap();
    let mut serial_store = store.snapshot();
    let mut serial_query = mode.query(QuerySpec::new().with(heat)).unwrap();
    let f = |t: &f64| t + 2.5;
    let pass = all.run(&arena, &store).unwrap();
    assert!(!pass.matches().is_dense(0));
    let changed = pool(3)
        .install(|| pass.par_update_each::<f64>(&mut store, (0, X), Chunks::Rows(333), f))
        .unwrap();
    let serial = serial_query
        .run(&arena, &serial_store)
        .unwrap()
        .update_each::<f64>(&mut serial_store, (0, X), f)
        .unwrap();
    assert_eq!(changed, serial);
    let (a, b) = (store.set(heat).unwrap(), serial_store.set(heat).unwrap());
    assert_eq!(a.values::<f64>(X), b.values::<f64>(X));
    assert_eq!(a.changed_ticks(), b.changed_ticks());
    assert_eq!(
        store.take_dirty(heat).unwrap(),
        serial_store.take_dirty(heat).unwrap()
    );
}

fn a_parallel_pass_of_a_reference_field_keeps_the_reverse_index(mode: Caching) {
    let mut arena = Arena::standard();
    let mut store = Store::new();
    let r = store
        .install(
            ComponentDef::new("R").field(FieldDef::reference("t", RefPolicy::Clear)),
            arena.classes(),
        )
        .unwrap();
    let target = arena.create(ClassId::ENTITY, None).unwrap();
    let mut holders = Vec::new();
    for _ in 0..100 {
        let id = arena.create(ClassId::ENTITY, None).unwrap();
        let at = InstanceRef::of(&arena, id).unwrap();
        store.insert(at, ClassId::ENTITY, r).unwrap();
        holders.push(id);
    }
    let mut all = mode.query(QuerySpec::new().with(r)).unwrap();
    let written = pool(2)
        .install(|| {
            all.run(&arena, &store)
                .unwrap()
                .par_update_each::<Option<InstanceId>>(&mut store, (0, T), Chunks::Rows(9), |_| {
                    Some(target)
                })
        })
        .unwrap();
    assert_eq!(written, 100);
    let held: Vec<InstanceId> = store
        .set(r)
        .unwrap()
        .references_to(target)
        .iter()
        .map(|e| e.holder)
        .collect();
    assert_eq!(held, holders);
}

fn an_observed_component_gets_one_event_per_changed_row_in_match_order(mode: Caching) {
    let mut arena = Arena::standard();
    let mut store = Store::new();
    let c = store
        .install(
            ComponentDef::new("Seen")
                .field(FieldDef::number("n", 0.0))
                .observed(true),
            arena.classes(),
        )
        .unwrap();
    let mut ids = Vec::new();
    for _ in 0..50 {
        let id = arena.create(ClassId::ENTITY, None).unwrap();
        store
            .insert(InstanceRef::of(&arena, id).unwrap(), ClassId::ENTITY, c)
            .unwrap();
        ids.push(id);
    }
    store.drain_events();
    let mut all = mode.query(QuerySpec::new().with(c)).unwrap();
    pool(4)
        .install(|| {
            all.run(&arena, &store).unwrap().par_update_each::<f64>(
                &mut store,
                (0, X),
                Chunks::Rows(3),
                |n| n + 1.0,
            )
        })
        .unwrap();
    let events = store.drain_events();
    let expected: Vec<StoreEvent> = ids
        .iter()
        .map(|id| StoreEvent::Changed {
            id: *id,
            component: c,
            field: X,
        })
        .collect();
    assert_eq!(events, expected);
}

/// A parallel pass tells values apart bit for bit, as every other write route does: `-0.0`
/// over `0.0` is a change, and a NaN over the same NaN is none.
fn a_parallel_pass_compares_numbers_bit_for_bit(mode: Caching) {
    let (arena, mut store, heat, ats) = heated(1_000);
    let mut all = mode.query(QuerySpec::new().with(heat)).unwrap();
    let mut pass = |store: &mut Store, value: f64| {
        pool(2)
            .install(|| {
                all.run(&arena, store).unwrap().par_update_each::<f64>(
                    store,
                    (0, X),
                    Chunks::Count(4),
                    |_| value,
                )
            })
            .unwrap()
    };
    assert_eq!(pass(&mut store, -0.0), ats.len(), "the sign is a change");
    let set = store.set(heat).unwrap();
    assert!(
        set.values::<f64>(X)
            .unwrap()
            .iter()
            .all(|t| t.is_sign_negative())
    );
    assert_eq!(pass(&mut store, f64::NAN), ats.len());
    let tick = store.tick();
    assert_eq!(pass(&mut store, f64::NAN), 0, "the same NaN is no change");
    assert_eq!(store.tick(), tick);
}

crate::common::both_ways!(
    a_parallel_pass_writes_every_matched_row_in_place_with_change_tracking,
    a_value_refused_in_any_chunk_changes_nothing,
    zero_rows_per_chunk_or_zero_chunks_are_refused,
    a_parallel_pass_over_a_changed_structure_is_refused,
    a_parallel_pass_over_rows_out_of_id_order_computes_in_parallel_and_stores_in_match_order,
    a_parallel_pass_of_a_reference_field_keeps_the_reverse_index,
    an_observed_component_gets_one_event_per_changed_row_in_match_order,
    a_parallel_pass_compares_numbers_bit_for_bit,
);
