//! Destruction through the world: the store hears of it (rows, removal records, events), the
//! reference policies act and their destroy requests are followed until none is left, references
//! to the destroyed are cleared wherever they are held, lifecycle listeners read the destroyed
//! subtree in a scope, and the frame loop reclaims slots two frames later.

use std::sync::{Arc, Mutex};

use crate::common::{fixture, parts};
use strata::prelude::*;

#[test]
fn destroying_hands_the_store_its_removals() {
    let mut f = fixture(1);
    let ids = parts(&mut f, 3);
    let mut reader = f.world.removal_reader(f.health).unwrap();
    f.world.step(0.0).unwrap();
    let report = f.world.destroy(ids[1]).unwrap();
    assert_eq!(report.destroyed, [ids[1]]);
    assert_eq!(report.removed, [(ids[1], f.health)]);
    assert!(!f.world.is_live(ids[1]));
    assert_eq!(f.world.store().set(f.health).unwrap().len(), 2);
    assert_eq!(
        f.world.removed(&mut reader).unwrap(),
        Removals::Ids(vec![ids[1]])
    );
    let events = f.world.step(0.0).unwrap();
    assert!(events.components.contains(&StoreEvent::Removed {
        id: ids[1],
        component: f.health
    }));
    assert!(
        events
            .lifecycle
            .iter()
            .any(|e| matches!(e, Event::Destroyed { subtree } if subtree.root() == ids[1]))
    );
}

#[test]
fn reference_policies_act_and_their_destroy_requests_are_followed() {
    let mut f = fixture(1);
    let w = &mut f.world;
    let aim = w
        .define(
            ComponentDef::new("Aim")
                .field(FieldDef::reference("target", RefPolicy::Clear))
                .observed(true),
        )
        .unwrap();
    let leash = w
        .define(
            ComponentDef::new("Leash").field(FieldDef::reference("to", RefPolicy::RemoveComponent)),
        )
        .unwrap();
    let collar = w
        .define(ComponentDef::new("Collar").requires(&["Leash"]))
        .unwrap();
    let bond = w
        .define(
            ComponentDef::new("Bond").field(FieldDef::reference("to", RefPolicy::DestroyHolder)),
        )
        .unwrap();
    let target = w.field(aim, "target").unwrap();
    let leash_to = w.field(leash, "to").unwrap();
    let bond_to = w.field(bond, "to").unwrap();
    let spawn = |w: &mut World| w.create(ClassId::ENTITY, None).unwrap();
    let (victim, hunter, dog, a, b, c) =
        (spawn(w), spawn(w), spawn(w), spawn(w), spawn(w), spawn(w));
    w.add(hunter, aim, [(target, Value::Reference(Some(victim)))])
        .unwrap();
    w.add(dog, leash, [(leash_to, Value::Reference(Some(victim)))])
        .unwrap();
    w.add(dog, collar, []).unwrap();
    // A chain: a bonds to the victim, b to a, c to b: destroying the victim takes all three.
    w.add(a, bond, [(bond_to, Value::Reference(Some(victim)))])
        .unwrap();
    w.add(b, bond, [(bond_to, Value::Reference(Some(a)))])
        .unwrap();
    w.add(c, bond, [(bond_to, Value::Reference(Some(b)))])
        .unwrap();
    w.step(0.0).unwrap();

    let report = w.destroy(victim).unwrap();
    assert_eq!(report.destroyed, [victim, a, b, c]);
    assert_eq!(
        w.get_value(hunter, aim, target).unwrap(),
        Value::Reference(None),
        "Clear"
    );
    assert!(report.cleared.contains(&(hunter, aim, target)));
    assert!(
        !w.has(dog, leash) && !w.has(dog, collar),
        "RemoveComponent with dependents"
    );
    assert!(w.is_live(dog) && w.is_live(hunter));
    let events = w.step(0.0).unwrap();
    assert!(
        events.components.contains(&StoreEvent::Changed {
            id: hunter,
            component: aim,
            field: target
        }),
        "a clear of an observed component is a change event"
    );
}

#[test]
fn a_destroy_request_for_an_instance_the_arena_refuses_keeps_what_was_done() {
    let mut f = fixture(1);
    let w = &mut f.world;
    let bond = w
        .define(
            ComponentDef::new("Bond").field(FieldDef::reference("to", RefPolicy::DestroyHolder)),
        )
        .unwrap();
    let to = w.field(bond, "to").unwrap();
    let victim = w.create(ClassId::ENTITY, None).unwrap();
    let workspace = w.workspace();
    // The workspace is a service: the arena will not destroy it.
    w.add(workspace, bond, [(to, Value::Reference(Some(victim)))])
        .unwrap();
    let report = w.destroy(victim).unwrap();
    assert_eq!(report.destroyed, [victim]);
    assert!(w.is_live(workspace));
}

#[test]
fn built_in_and_attribute_references_to_the_destroyed_are_cleared() {
    let mut f = fixture(1);
    let w = &mut f.world;
    let workspace = w.workspace();
    let model = w.create(ClassId::MODEL, Some(workspace)).unwrap();
    let part = w.create(ClassId::PART, Some(model)).unwrap();
    w.edit(model, |node| {
        if let strata::layers::arena::StateMut::Model(m) = node.state_mut() {
            m.primary_part = Some(part);
        }
    })
    .unwrap();
    w.set_attribute(workspace, "focus", Some(AttrValue::Reference(Some(part))))
        .unwrap();
    w.destroy(part).unwrap();
    assert_eq!(
        w.attribute(workspace, "focus").unwrap(),
        Some(&AttrValue::Reference(None))
    );
    let BuiltinState::Model(state) = &w.arena().get(model).unwrap().data().state else {
        panic!("a model keeps its state");
    };
    assert_eq!(state.primary_part, None);
}

#[test]
fn lifecycle_listeners_read_the_destroyed_subtree_in_a_scope() {
    let mut f = fixture(1);
    let w = &mut f.world;
    let folder = w.create(ClassId::FOLDER, None).unwrap();
    w.set_name(folder, "Crate").unwrap();
    let inner = w.create(ClassId::FOLDER, Some(folder)).unwrap();
    w.set_name(inner, "Lid").unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let into = seen.clone();
    w.on_lifecycle(move |event, view| {
        if let Event::Destroyed { subtree } = event {
            for id in subtree.as_slice() {
                let node = view.get(*id).expect("readable in the scope");
                into.lock()
                    .unwrap()
                    .push((node.name().to_owned(), view.is_live(*id)));
            }
        }
    });
    w.destroy(folder).unwrap();
    assert!(
        seen.lock().unwrap().is_empty(),
        "delivered at the end of the frame"
    );
    w.step(0.0).unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [("Crate".to_owned(), false), ("Lid".to_owned(), false)]
    );
    assert!(
        w.arena().get(folder).is_none(),
        "not readable outside the scope"
    );
}

#[test]
fn the_frame_loop_reclaims_slots_two_frames_after_a_destruction() {
    let mut f = fixture(1);
    let ids = parts(&mut f, 1);
    let slot = f.world.arena().slot_of(ids[0]).unwrap();
    f.world.destroy(ids[0]).unwrap();
    f.world.step(0.0).unwrap();
    let workspace = f.world.workspace();
    let next = f.world.create(ClassId::PART, Some(workspace)).unwrap();
    assert_ne!(
        f.world.arena().slot_of(next),
        Some(slot),
        "not yet reclaimed"
    );
    f.world.step(0.0).unwrap();
    let again = f.world.create(ClassId::PART, Some(workspace)).unwrap();
    assert_eq!(
        f.world.arena().slot_of(again),
        Some(slot),
        "reclaimed, and reused"
    );
    assert_ne!(again, ids[0], "never the same id");
    f.world.add(again, f.health, []).unwrap();
    assert_eq!(
        f.world.get::<f64>(again, f.health, f.current).unwrap(),
        100.0,
        "no stale row in the reused slot"
    );
}

#[test]
fn refused_destructions_change_nothing() {
    let mut f = fixture(1);
    let hash = f.world.state_hash();
    let workspace = f.world.workspace();
    assert!(matches!(
        f.world.destroy(workspace),
        Err(WorldError::Arena(_))
    ));
    let gone = f.world.create(ClassId::FOLDER, None).unwrap();
    f.world.destroy(gone).unwrap();
    let hash_after = f.world.state_hash();
    assert_ne!(hash, hash_after);
    assert!(matches!(f.world.destroy(gone), Err(WorldError::Arena(_))));
    assert_eq!(f.world.state_hash(), hash_after);
}
