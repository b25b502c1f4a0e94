//! Instance references: made checked from the arena, and never trusted to evict another live
//! instance's row or to size the store's arrays by a forged slot.

use crate::common::World;
use strata_arena::{ClassId, InstanceId, Slot};
use strata_component_store::{
    ComponentDef, CopyPair, FieldDef, InstanceRef, StoreError, UNCHECKED_SLOT_LIMIT, Value,
};

fn score() -> ComponentDef {
    ComponentDef::new("Score")
        .field(FieldDef::integer("points", 0))
        .observed(true)
}

#[test]
fn a_mismatched_pair_never_evicts_another_live_instance() {
    let mut w = World::new();
    let score = w.install(score());
    let points = w.field(score, "points");
    let a = w.spawn(ClassId::ENTITY);
    let c = w.spawn(ClassId::ENTITY);
    w.store
        .add(a, ClassId::ENTITY, score, [(points, Value::Integer(5))])
        .unwrap();
    w.store.drain_events();
    let tick = w.store.tick();
    // `c`'s id with `a`'s slot: `a` is alive and holds the component.
    let forged = InstanceRef::new(c.id, a.slot);
    let occupied = StoreError::SlotOccupied {
        slot: a.slot,
        holder: a.id,
        component: score,
        component_name: "Score".into(),
    };
    assert_eq!(
        w.store.add(forged, ClassId::ENTITY, score, []),
        Err(occupied.clone())
    );
    assert_eq!(
        w.store.insert(forged, ClassId::ENTITY, score).err(),
        Some(occupied.clone())
    );
    assert_eq!(
        w.store
            .insert_many(&[c, forged], ClassId::ENTITY, score)
            .err(),
        Some(occupied.clone()),
        "refused whole, c included"
    );
    assert!(!w.store.has(c, score));
    let pair = CopyPair {
        source: a,
        copy: forged,
        class: ClassId::ENTITY,
    };
    assert_eq!(w.store.copy_rows(&[pair], Some), Err(occupied));
    assert_eq!(
        *w.store.get::<i64>(a, score, points).unwrap(),
        5,
        "a keeps its row"
    );
    assert_eq!(w.store.tick(), tick);
    assert!(w.store.drain_events().is_empty());
}

#[test]
fn a_slot_far_past_the_arena_is_refused() {
    let mut w = World::new();
    let score = w.install(score());
    let e = w.spawn(ClassId::ENTITY);
    let source = w.spawn(ClassId::ENTITY);
    w.store.add(source, ClassId::ENTITY, score, []).unwrap();
    let tick = w.store.tick();
    for slot in [1 << 26, u32::MAX - 1, u32::MAX] {
        let slot = Slot::from_index(slot);
        let forged = InstanceRef::new(e.id, slot);
        let refused = StoreError::SlotOutOfRange {
            slot,
            limit: UNCHECKED_SLOT_LIMIT,
        };
        assert_eq!(
            w.store.add(forged, ClassId::ENTITY, score, []),
            Err(refused.clone())
        );
        assert_eq!(
            w.store.insert(forged, ClassId::ENTITY, score).err(),
            Some(refused.clone())
        );
        assert_eq!(
            w.store.insert_many(&[forged], ClassId::ENTITY, score).err(),
            Some(refused.clone())
        );
        let pair = CopyPair {
            source,
            copy: forged,
            class: ClassId::ENTITY,
        };
        assert_eq!(w.store.copy_rows(&[pair], Some), Err(refused.clone()));
        assert_eq!(
            w.store.redefine(
                score,
                self::score(),
                w.arena.classes(),
                vec![(forged, vec![Value::Integer(0)])]
            ),
            Err(refused)
        );
    }
    // A checked reference carries the arena's slot count: a slot changed past it is refused
    // too, and one inside it is not.
    let mut checked = InstanceRef::of(&w.arena, e.id).unwrap();
    checked.slot = Slot::from_index(u32::MAX - 1);
    assert!(matches!(
        w.store.add(checked, ClassId::ENTITY, score, []),
        Err(StoreError::SlotOutOfRange { .. })
    ));
    assert_eq!(w.store.tick(), tick, "nothing changed");
    assert_eq!(w.store.set(score).unwrap().len(), 1);
}

#[test]
fn instance_refs_made_from_the_arena_pair_the_id_with_its_slot() {
    let mut w = World::new();
    let e = w.arena.create(ClassId::ENTITY, None).unwrap();
    let at = InstanceRef::of(&w.arena, e).unwrap();
    assert_eq!(at.id, e);
    assert_eq!(Some(at.slot), w.arena.slot_of(e));
    assert_eq!(at, InstanceRef::new(e, at.slot), "equality is id and slot");
    // A snapshot of the arena answers the same.
    let snapshot = w.arena.snapshot();
    assert_eq!(InstanceRef::of(&snapshot, e), Ok(at));
    // An id the arena never gave out, or one reclaimed since, has no slot.
    let stranger = InstanceId::new(1 << 40).unwrap();
    assert_eq!(
        InstanceRef::of(&w.arena, stranger),
        Err(StoreError::UnknownInstance(stranger))
    );
    w.arena.destroy(e).unwrap();
    assert_eq!(
        InstanceRef::of(&w.arena, e),
        Ok(at),
        "destroyed, not yet reclaimed"
    );
    w.settle();
    assert_eq!(
        InstanceRef::of(&w.arena, e),
        Err(StoreError::UnknownInstance(e))
    );
}

/// `n` unchecked references to consecutive slots from `first`, with ids `slot + 1` (as a
/// freshly made arena pairs them).
fn run(first: u32, n: u32) -> Vec<InstanceRef> {
    (first..first + n)
        .map(|s| {
            InstanceRef::new(
                InstanceId::new(u64::from(s) + 1).unwrap(),
                Slot::from_index(s),
            )
        })
        .collect()
}

#[test]
fn a_world_past_the_unchecked_base_grows_with_unchecked_references() {
    // The pairs `Arena::create_many` hands out for a world of more than 2^20 instances, taken
    // without asking the arena again: the store takes them in bulk and one by one.
    let classes = strata_arena::ClassRegistry::standard();
    let mut store = strata_component_store::Store::new();
    let score = store.install(score(), &classes).unwrap();
    let label = store
        .install(
            ComponentDef::new("Label").field(FieldDef::integer("n", 0)),
            &classes,
        )
        .unwrap();
    let base = UNCHECKED_SLOT_LIMIT as u32;
    let world = run(0, base + 64);
    store.insert_many(&world, ClassId::ENTITY, score).unwrap();
    assert_eq!(store.set(score).unwrap().len(), world.len());
    // One more instance past the end, spawned alone.
    let next = run(base + 64, 1)[0];
    store.add(next, ClassId::ENTITY, score, []).unwrap();
    // A component on a few instances near the end of the world, in a set that had no rows.
    let late = run(base + 32, 1)[0];
    store.add(late, ClassId::ENTITY, label, []).unwrap();
    assert!(store.has(late, label) && store.has(next, score));
    // A slot far past everything the store holds is still refused, changing nothing.
    let tick = store.tick();
    let forged = InstanceRef::new(InstanceId::new(7).unwrap(), Slot::from_index(1 << 26));
    assert!(matches!(
        store.add(forged, ClassId::ENTITY, label, []),
        Err(StoreError::SlotOutOfRange { .. })
    ));
    assert_eq!(store.tick(), tick);
    assert_eq!(store.set(label).unwrap().len(), 1);
}

#[test]
fn a_redefinition_never_gives_a_live_instance_s_slot_to_another() {
    // Rows handed to `redefine` pair ids and slots like any add: one that names `a`'s slot for
    // another instance would silently remove `a`'s row (with its event and dependents).
    let mut w = World::new();
    let score = w.install(score());
    let points = w.field(score, "points");
    let a = w.spawn(ClassId::ENTITY);
    let c = w.spawn(ClassId::ENTITY);
    w.store
        .add(a, ClassId::ENTITY, score, [(points, Value::Integer(5))])
        .unwrap();
    w.store.drain_events();
    let tick = w.store.tick();
    let forged = InstanceRef::new(c.id, a.slot);
    assert_eq!(
        w.store.redefine(
            score,
            self::score(),
            w.arena.classes(),
            vec![(forged, vec![Value::Integer(1)])]
        ),
        Err(StoreError::SlotOccupied {
            slot: a.slot,
            holder: a.id,
            component: score,
            component_name: "Score".into(),
        })
    );
    assert_eq!(*w.store.get::<i64>(a, score, points).unwrap(), 5);
    assert_eq!(w.store.tick(), tick);
    assert!(w.store.drain_events().is_empty());
    // The explicit call still clears the way when `a` really is gone.
    w.store.evict_stale(forged);
    w.store
        .redefine(
            score,
            self::score(),
            w.arena.classes(),
            vec![(forged, vec![Value::Integer(1)])],
        )
        .unwrap();
    assert_eq!(*w.store.get::<i64>(forged, score, points).unwrap(), 1);
}

#[test]
fn a_copy_checked_whole_stores_every_row() {
    // `copy_rows` checks every pair, for the rows the set will hold after the copy, before it
    // stores the first: storing may not then refuse a pair part-way. Here one source is copied
    // to many instances, one of them at a slot past the unchecked base that the set's size
    // after the copy allows.
    let classes = strata_arena::ClassRegistry::standard();
    let mut store = strata_component_store::Store::new();
    let score = store.install(score(), &classes).unwrap();
    let source = run(0, 1)[0];
    store.add(source, ClassId::ENTITY, score, []).unwrap();
    let n = (UNCHECKED_SLOT_LIMIT / 2 + 1024) as u32;
    let far = UNCHECKED_SLOT_LIMIT as u32 + 8;
    let mut copies = run(1, n - 1);
    copies.insert(1, run(far, 1)[0]);
    let pairs: Vec<CopyPair> = copies
        .iter()
        .map(|&copy| CopyPair {
            source,
            copy,
            class: ClassId::ENTITY,
        })
        .collect();
    assert_eq!(store.copy_rows(&pairs, Some), Ok(pairs.len()));
    assert_eq!(store.set(score).unwrap().len(), pairs.len() + 1);
}
