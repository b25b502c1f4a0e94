//! Instance references: made checked from the arena, and never trusted to evict another live
//! instance's row or to size the store's arrays by a forged slot.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly on purpose")]

mod common;

use common::World;
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
