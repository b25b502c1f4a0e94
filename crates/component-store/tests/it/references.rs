//! The reverse reference index and the destruction policies.

use crate::common::World;
use strata_arena::ClassId;
use strata_component_store::{ComponentDef, FieldDef, RefEntry, RefPolicy, StoreEvent, Value};

#[test]
fn the_reverse_index_follows_every_write_add_and_remove() {
    let mut w = World::new();
    let aim =
        w.install(ComponentDef::new("Aim").field(FieldDef::reference("target", RefPolicy::Clear)));
    let target = w.field(aim, "target");
    let holder = w.spawn(ClassId::ENTITY);
    let (t1, t2) = (w.spawn(ClassId::ENTITY), w.spawn(ClassId::ENTITY));
    let refs = |w: &World, t: strata_arena::InstanceId| {
        w.store.set(aim).unwrap().references_to(t).to_vec()
    };
    let entry = RefEntry {
        holder: holder.id,
        holder_slot: holder.slot,
        field: target,
    };

    w.store
        .add(
            holder,
            ClassId::ENTITY,
            aim,
            [(target, Value::Reference(Some(t1.id)))],
        )
        .unwrap();
    assert_eq!(refs(&w, t1.id), vec![entry]);

    // Replacing a reference moves its entry.
    w.store.write(holder, aim, target, Some(t2.id)).unwrap();
    assert!(refs(&w, t1.id).is_empty());
    assert_eq!(refs(&w, t2.id), vec![entry]);
    w.store
        .write_value(holder, aim, target, Value::Reference(None))
        .unwrap();
    assert!(refs(&w, t2.id).is_empty());
    assert_eq!(w.store.set(aim).unwrap().referenced_targets(), 0);

    w.store.write(holder, aim, target, Some(t1.id)).unwrap();
    w.store.remove(holder, aim).unwrap();
    assert!(
        refs(&w, t1.id).is_empty(),
        "removal drops the holder's entries"
    );
}

#[test]
fn clear_policy_clears_and_notifies_observers() {
    let mut w = World::new();
    let aim = w.install(
        ComponentDef::new("Aim")
            .field(FieldDef::reference("target", RefPolicy::Clear))
            .observed(true),
    );
    let target = w.field(aim, "target");
    let (holder, victim) = (w.spawn(ClassId::ENTITY), w.spawn(ClassId::ENTITY));
    w.store
        .insert(holder, ClassId::ENTITY, aim)
        .unwrap()
        .set(target, Some(victim.id))
        .unwrap();
    w.store.drain_events();
    let outcome = w.destroy(victim.id);
    assert_eq!(outcome.cleared, vec![(holder.id, aim, target)]);
    assert_eq!(
        *w.store.get::<Option<_>>(holder, aim, target).unwrap(),
        None
    );
    assert_eq!(
        w.store.drain_events(),
        vec![StoreEvent::Changed {
            id: holder.id,
            component: aim,
            field: target
        }]
    );
    assert!(
        w.store
            .set(aim)
            .unwrap()
            .references_to(victim.id)
            .is_empty()
    );
}

#[test]
fn remove_component_policy_removes_dependents_too() {
    let mut w = World::new();
    let leash = w.install(
        ComponentDef::new("Leash").field(FieldDef::reference("owner", RefPolicy::RemoveComponent)),
    );
    let walk = w.install(ComponentDef::new("Walk").requires(&["Leash"]));
    let trick = w.install(ComponentDef::new("Trick").requires(&["Walk"]));
    let unrelated = w.install(ComponentDef::new("Collar"));
    let owner_field = w.field(leash, "owner");
    let (dog, owner) = (w.spawn(ClassId::ENTITY), w.spawn(ClassId::ENTITY));
    w.store
        .add(
            dog,
            ClassId::ENTITY,
            leash,
            [(owner_field, Value::Reference(Some(owner.id)))],
        )
        .unwrap();
    for c in [walk, trick, unrelated] {
        w.store.add(dog, ClassId::ENTITY, c, []).unwrap();
    }
    let outcome = w.destroy(owner.id);
    assert_eq!(
        outcome.removed,
        vec![(dog.id, leash), (dog.id, walk), (dog.id, trick)]
    );
    assert!(!w.store.has(dog, leash) && !w.store.has(dog, walk) && !w.store.has(dog, trick));
    assert!(w.store.has(dog, unrelated));
    assert!(w.arena.is_live(dog.id));
}

#[test]
fn destroy_holder_policy_asks_for_the_holder() {
    let mut w = World::new();
    let tether = w.install(
        ComponentDef::new("Tether").field(FieldDef::reference("anchor", RefPolicy::DestroyHolder)),
    );
    let anchor_field = w.field(tether, "anchor");
    let (balloon, anchor) = (w.spawn(ClassId::ENTITY), w.spawn(ClassId::ENTITY));
    w.store
        .add(
            balloon,
            ClassId::ENTITY,
            tether,
            [(anchor_field, Value::Reference(Some(anchor.id)))],
        )
        .unwrap();
    let destruction = w.arena.destroy(anchor.id).unwrap();
    let outcome = w.store.on_destroyed(&destruction.doomed);
    assert_eq!(outcome.destroy, vec![balloon.id]);
    // Until the holder is destroyed it still holds the reference, and the index says so.
    assert_eq!(
        w.store.set(tether).unwrap().references_to(anchor.id).len(),
        1,
        "the index stays exact for holders awaiting destruction"
    );
    // The fixture follows the request, as the engine does.
    let mut w2 = World::new();
    let tether = w2.install(
        ComponentDef::new("Tether").field(FieldDef::reference("anchor", RefPolicy::DestroyHolder)),
    );
    let (balloon, anchor) = (w2.spawn(ClassId::ENTITY), w2.spawn(ClassId::ENTITY));
    w2.store
        .add(
            balloon,
            ClassId::ENTITY,
            tether,
            [(anchor_field, Value::Reference(Some(anchor.id)))],
        )
        .unwrap();
    w2.destroy(anchor.id);
    assert!(!w2.arena.is_live(balloon.id));
    assert!(!w2.store.has(balloon, tether));
}

#[test]
fn policies_skip_holders_an_earlier_action_already_removed() {
    let mut w = World::new();
    // Two references from one holder to one target: the first (RemoveComponent) removes the
    // component, so the second (Clear on the same component) must find no holder and do nothing.
    let pair = w.install(
        ComponentDef::new("Pair")
            .field(FieldDef::reference("first", RefPolicy::RemoveComponent))
            .field(FieldDef::reference("second", RefPolicy::Clear)),
    );
    let (first, second) = (w.field(pair, "first"), w.field(pair, "second"));
    let (holder, target) = (w.spawn(ClassId::ENTITY), w.spawn(ClassId::ENTITY));
    w.store
        .add(
            holder,
            ClassId::ENTITY,
            pair,
            [
                (first, Value::Reference(Some(target.id))),
                (second, Value::Reference(Some(target.id))),
            ],
        )
        .unwrap();
    let outcome = w.destroy(target.id);
    assert_eq!(outcome.removed, vec![(holder.id, pair)]);
    assert!(
        outcome.cleared.is_empty(),
        "no action on a holder that is gone"
    );

    // A holder destroyed in the same destruction is skipped by every policy.
    let keep = w.install(
        ComponentDef::new("Keep").field(FieldDef::reference("other", RefPolicy::DestroyHolder)),
    );
    let other = w.field(keep, "other");
    let parent = w.arena.create(ClassId::FOLDER, None).unwrap();
    let child = w.arena.create(ClassId::FOLDER, Some(parent)).unwrap();
    let child_ref = w.at(child);
    w.store
        .add(
            child_ref,
            ClassId::FOLDER,
            keep,
            [(other, Value::Reference(Some(parent)))],
        )
        .unwrap();
    let outcome = w.destroy(parent);
    assert!(
        outcome.destroy.is_empty(),
        "the holder was destroyed with its target"
    );
    assert_eq!(outcome.removed, vec![(child, keep)]);
}

#[test]
fn explicit_removal_cascades_to_dependents() {
    let mut w = World::new();
    let team = w.install(ComponentDef::new("Team"));
    let health = w.install(ComponentDef::new("Health").requires(&["Team"]));
    let e = w.spawn(ClassId::ENTITY);
    w.store.add(e, ClassId::ENTITY, team, []).unwrap();
    w.store.add(e, ClassId::ENTITY, health, []).unwrap();
    assert!(w.store.remove(e, team).unwrap());
    assert!(!w.store.has(e, health));
}

#[test]
fn a_destroyed_holder_loses_its_rows_and_index_entries() {
    let mut w = World::new();
    let aim =
        w.install(ComponentDef::new("Aim").field(FieldDef::reference("target", RefPolicy::Clear)));
    let target = w.field(aim, "target");
    let (holder, t) = (w.spawn(ClassId::ENTITY), w.spawn(ClassId::ENTITY));
    w.store
        .add(
            holder,
            ClassId::ENTITY,
            aim,
            [(target, Value::Reference(Some(t.id)))],
        )
        .unwrap();
    let outcome = w.destroy(holder.id);
    assert_eq!(outcome.removed, vec![(holder.id, aim)]);
    assert!(w.store.set(aim).unwrap().references_to(t.id).is_empty());
}

#[test]
fn destroying_a_popular_target_clears_every_holder_in_holder_order() {
    let mut w = World::new();
    let aim = w.install(
        ComponentDef::new("Aim")
            .field(FieldDef::reference("target", RefPolicy::Clear))
            .observed(true),
    );
    let target = w.field(aim, "target");
    let victim = w.spawn(ClassId::ENTITY);
    // More holders than a small holder list keeps, added in shuffled order.
    let mut holders: Vec<_> = (0..50).map(|_| w.spawn(ClassId::ENTITY)).collect();
    let mut order: Vec<usize> = (0..holders.len()).collect();
    order.sort_by_key(|i| (i * 37) % holders.len());
    for &i in &order {
        w.store.insert(holders[i], ClassId::ENTITY, aim).unwrap();
        w.store
            .write(holders[i], aim, target, Some(victim.id))
            .unwrap();
    }
    w.store.drain_events();
    let before = w.store.tick();
    let outcome = w.destroy(victim.id);

    holders.sort_by_key(|h| h.id);
    let expected: Vec<_> = holders.iter().map(|h| (h.id, aim, target)).collect();
    assert_eq!(outcome.cleared, expected, "every holder, in holder order");
    let set = w.store.set(aim).unwrap();
    assert!(set.references_to(victim.id).is_empty());
    assert_eq!(set.referenced_targets(), 0);
    let ticks: Vec<_> = holders
        .iter()
        .map(|h| {
            set.changed_ticks()
                .get(set.row_of(*h).unwrap())
                .expect("a row of the set")
        })
        .collect();
    assert!(
        ticks.windows(2).all(|t| t[0] < t[1]),
        "a tick per clear, in order"
    );
    assert!(ticks[0] > before);
    assert_eq!(w.store.tick(), ticks[ticks.len() - 1]);
    for h in &holders {
        assert_eq!(*w.store.get::<Option<_>>(*h, aim, target).unwrap(), None);
    }
    let events = w.store.drain_events();
    let changed: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            StoreEvent::Changed { id, .. } => Some(*id),
            _ => None,
        })
        .collect();
    assert_eq!(changed, holders.iter().map(|h| h.id).collect::<Vec<_>>());
    let dirty = w.store.take_dirty(aim).unwrap();
    assert_eq!(dirty.len(), holders.len());
}

#[test]
fn a_reused_outcome_collects_each_destruction_in_turn() {
    let mut w = World::new();
    let aim =
        w.install(ComponentDef::new("Aim").field(FieldDef::reference("target", RefPolicy::Clear)));
    let target = w.field(aim, "target");
    let (a, b) = (w.spawn(ClassId::ENTITY), w.spawn(ClassId::ENTITY));
    let holders: Vec<_> = (0..4).map(|_| w.spawn(ClassId::ENTITY)).collect();
    for (i, h) in holders.iter().enumerate() {
        let t = if i % 2 == 0 { a.id } else { b.id };
        w.store
            .add(
                *h,
                ClassId::ENTITY,
                aim,
                [(target, Value::Reference(Some(t)))],
            )
            .unwrap();
    }
    w.store.insert(a, ClassId::ENTITY, aim).unwrap();
    let mut outcome = strata_component_store::DestroyOutcome::default();
    let doomed_a = w.arena.destroy(a.id).unwrap().doomed;
    w.store.on_destroyed_into(&doomed_a, &mut outcome);
    assert_eq!(outcome.removed, vec![(a.id, aim)]);
    assert_eq!(
        outcome.cleared,
        vec![(holders[0].id, aim, target), (holders[2].id, aim, target)]
    );
    outcome.removed.clear();
    outcome.cleared.clear();
    let doomed_b = w.arena.destroy(b.id).unwrap().doomed;
    w.store.on_destroyed_into(&doomed_b, &mut outcome);
    assert!(outcome.removed.is_empty());
    assert_eq!(
        outcome.cleared,
        vec![(holders[1].id, aim, target), (holders[3].id, aim, target)]
    );
    assert!(outcome.destroy.is_empty());
    for h in &holders {
        assert_eq!(*w.store.get::<Option<_>>(*h, aim, target).unwrap(), None);
    }
}

#[test]
fn a_dense_column_pass_over_a_reference_field_writes_every_row_and_indexes_it() {
    let mut w = World::new();
    let aim =
        w.install(ComponentDef::new("Aim").field(FieldDef::reference("target", RefPolicy::Clear)));
    let target = w.field(aim, "target");
    let goal = w.spawn(ClassId::ENTITY);
    let holders: Vec<_> = (0..5)
        .map(|_| {
            let at = w.spawn(ClassId::ENTITY);
            w.store.insert(at, ClassId::ENTITY, aim).unwrap();
            at
        })
        .collect();
    let tick = w.store.tick();
    let mut writer = w
        .store
        .column_writer::<Option<strata_arena::InstanceId>>(aim, target)
        .unwrap();
    let changed = writer
        .update_dense(&[(); 5], |_, ()| Some(goal.id))
        .unwrap();
    assert_eq!(changed, 5);
    let set = w.store.set(aim).unwrap();
    assert_eq!(
        set.values::<Option<strata_arena::InstanceId>>(target)
            .unwrap(),
        &[Some(goal.id); 5]
    );
    assert!(set.changed_ticks().iter().all(|t| t > tick));
    let held: Vec<_> = set
        .references_to(goal.id)
        .iter()
        .map(|e| e.holder)
        .collect();
    assert_eq!(held, holders.iter().map(|at| at.id).collect::<Vec<_>>());
}
