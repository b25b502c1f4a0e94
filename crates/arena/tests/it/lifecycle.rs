//! Destruction, tombstones, lifecycle scopes and two-drain reclamation.

use crate::common::{assert_refused_unchanged, children, place};
use strata_arena::{ArenaError, ClassId, Doomed, Event, MovedIds, PersistentId, TopologyChange};

#[test]
fn destruction_detaches_marks_and_unindexes_the_subtree() {
    let mut p = place();
    let model = p.arena.create(ClassId::MODEL, Some(p.workspace)).unwrap();
    let part = p.arena.create(ClassId::PART, Some(model)).unwrap();
    let sibling = p.arena.create(ClassId::PART, Some(p.workspace)).unwrap();
    p.arena.add_tag(part, "Enemy").unwrap();
    p.arena.add_tag(sibling, "Enemy").unwrap();
    let pid = PersistentId::new(77).unwrap();
    p.arena.set_persistent_id(part, Some(pid)).unwrap();
    p.arena.drain().unwrap();

    let tags_before = p.arena.revisions().tags();
    let destruction = p.arena.destroy(model).unwrap();
    assert_eq!(destruction.root, model);
    let doomed: Vec<_> = destruction.doomed.iter().map(|d| d.id).collect();
    assert_eq!(doomed, vec![model, part]);
    for d in &destruction.doomed {
        assert_eq!(
            p.arena.slot_of(d.id),
            Some(d.slot),
            "tombstones keep their slot"
        );
        assert!(!p.arena.is_live(d.id));
        assert!(
            p.arena.get(d.id).is_none(),
            "no reads outside a lifecycle scope"
        );
    }
    assert_eq!(children(&p.arena, p.workspace), vec![sibling]);
    assert_eq!(p.arena.tagged("Enemy").collect::<Vec<_>>(), vec![sibling]);
    assert!(p.arena.revisions().tags() > tags_before);
    assert_eq!(p.arena.by_persistent_id(pid), None);
    assert_eq!(p.arena.tombstone_count(), 2);

    let events = p.arena.pending_events().to_vec();
    assert!(
        matches!(&events[0], Event::DescendantRemoving { moved, .. } if moved.as_slice() == [model, part])
    );
    assert_eq!(
        events[1],
        Event::ChildRemoved {
            parent: p.workspace,
            child: model
        }
    );
    assert!(
        matches!(&events[2], Event::Destroyed { subtree } if subtree.as_slice() == [model, part])
    );
    let last = p.arena.topology_journal().head() - 1;
    let entry = p
        .arena
        .topology_journal()
        .read_since(last)
        .unwrap()
        .next()
        .unwrap()
        .1
        .clone();
    assert!(matches!(entry, TopologyChange::Destroyed { subtree } if subtree.root() == model));
}

#[test]
fn destroyed_instances_refuse_every_write() {
    let mut p = place();
    let part = p.arena.create(ClassId::PART, Some(p.workspace)).unwrap();
    p.arena.destroy(part).unwrap();
    let gone = ArenaError::DestroyedInstance(part);
    assert_eq!(
        assert_refused_unchanged(&mut p.arena, |a| a.set_name(part, "x")),
        gone
    );
    assert_eq!(
        assert_refused_unchanged(&mut p.arena, |a| a.node_mut(part).map(|_| ())),
        gone
    );
    assert_eq!(
        assert_refused_unchanged(&mut p.arena, |a| a.add_tag(part, "t")),
        gone
    );
    assert_eq!(
        assert_refused_unchanged(&mut p.arena, |a| a.destroy(part)),
        gone
    );
    assert_eq!(
        assert_refused_unchanged(&mut p.arena, |a| a.clone_subtree(part, None)),
        gone
    );
    assert_eq!(
        assert_refused_unchanged(&mut p.arena, |a| a.create(ClassId::FOLDER, Some(part))),
        gone
    );
}

#[test]
fn services_cannot_be_destroyed() {
    let mut p = place();
    let workspace = p.workspace;
    let error = assert_refused_unchanged(&mut p.arena, |a| a.destroy(workspace));
    assert_eq!(
        error,
        ArenaError::ParentLocked {
            id: workspace,
            service: Some("Workspace".into())
        }
    );
}

#[test]
fn tombstones_are_readable_only_inside_a_lifecycle_scope() {
    let mut p = place();
    let model = p.arena.create(ClassId::MODEL, Some(p.workspace)).unwrap();
    let part = p.arena.create(ClassId::PART, Some(model)).unwrap();
    let other = p.arena.create(ClassId::FOLDER, Some(p.workspace)).unwrap();
    p.arena.set_name(part, "Wheel").unwrap();
    p.arena.destroy(model).unwrap();
    p.arena.destroy(other).unwrap();
    p.arena.drain().unwrap();

    let scope = p.arena.enter_lifecycle_scope(model).unwrap();
    assert_eq!(
        p.arena.get(model).unwrap().parent(),
        None,
        "the root was detached"
    );
    assert_eq!(p.arena.get(part).unwrap().name(), "Wheel");
    assert_eq!(
        children(&p.arena, model),
        vec![part],
        "the destroyed subtree is walkable"
    );
    assert!(p.arena.get(part).unwrap().is_destroyed());
    assert!(!p.arena.is_live(part), "readable is not live");
    assert!(p.arena.get(other).is_none(), "other tombstones stay hidden");
    assert_eq!(
        p.arena.set_name(part, "x").unwrap_err(),
        ArenaError::DestroyedInstance(part),
        "readable is not writable"
    );

    // A nested scope widens the view; exiting it restores the preceding one.
    let inner = p.arena.enter_lifecycle_scope(other).unwrap();
    assert!(p.arena.get(other).is_some());
    assert!(p.arena.get(part).is_some());
    p.arena.exit_lifecycle_scope(inner).unwrap();
    assert!(p.arena.get(other).is_none());
    assert!(p.arena.get(part).is_some());

    p.arena.exit_lifecycle_scope(scope).unwrap();
    assert!(p.arena.get(part).is_none());
    assert!(p.arena.get(model).is_none());

    // Scopes open only on tombstones; snapshots never carry an open scope.
    assert_eq!(
        p.arena.enter_lifecycle_scope(p.workspace).unwrap_err(),
        ArenaError::NotATombstone(p.workspace)
    );
    let scope = p.arena.enter_lifecycle_scope(model).unwrap();
    assert!(p.arena.snapshot().get(model).is_none());
    assert_eq!(p.arena.drain().unwrap_err(), ArenaError::ScopeOpen);
    p.arena.exit_lifecycle_scope(scope).unwrap();
}

#[test]
fn slots_return_to_the_pool_only_after_the_second_drain() {
    let mut p = place();
    let doomed = p.arena.create(ClassId::PART, Some(p.workspace)).unwrap();
    let slot = p.arena.slot_of(doomed).unwrap();
    let destruction = p.arena.destroy(doomed).unwrap();

    let filler = p.arena.create(ClassId::FOLDER, None).unwrap();
    assert_ne!(
        p.arena.slot_of(filler),
        Some(slot),
        "no reuse before any drain"
    );

    let first = p.arena.drain().unwrap();
    assert!(first.events.contains(&Event::Destroyed {
        subtree: MovedIds::One(doomed)
    }));
    assert_eq!(first.reclaimable, vec![Doomed { id: doomed, slot }]);
    assert!(first.reclaimed.is_empty());
    let filler = p.arena.create(ClassId::FOLDER, None).unwrap();
    assert_ne!(
        p.arena.slot_of(filler),
        Some(slot),
        "no reuse after the first drain"
    );
    assert_eq!(
        p.arena
            .with_lifecycle_scope(doomed, |view| view.get(doomed).map(|n| n.class()))
            .unwrap(),
        Some(ClassId::PART),
        "the first batch's consumers can still inspect the tombstone"
    );

    let second = p.arena.drain().unwrap();
    assert_eq!(second.reclaimed, destruction.doomed);
    assert_eq!(p.arena.tombstone_count(), 0);
    assert_eq!(
        p.arena.enter_lifecycle_scope(doomed).unwrap_err(),
        ArenaError::NotATombstone(doomed)
    );
    let reuse = p.arena.create(ClassId::FOLDER, None).unwrap();
    assert_eq!(
        p.arena.slot_of(reuse),
        Some(slot),
        "reused after the second drain"
    );
    assert!(p.arena.get(doomed).is_none());
}

#[test]
fn destruction_between_drains_waits_for_its_own_second_drain() {
    let mut p = place();
    let a = p.arena.create(ClassId::FOLDER, None).unwrap();
    let b = p.arena.create(ClassId::FOLDER, None).unwrap();
    p.arena.destroy(a).unwrap();
    p.arena.drain().unwrap();
    p.arena.destroy(b).unwrap();
    let second = p.arena.drain().unwrap();
    assert_eq!(
        second.reclaimed.iter().map(|d| d.id).collect::<Vec<_>>(),
        vec![a]
    );
    assert_eq!(
        second.reclaimable.iter().map(|d| d.id).collect::<Vec<_>>(),
        vec![b]
    );
    assert_eq!(p.arena.pending_reclamation(), 1);
    let third = p.arena.drain().unwrap();
    assert_eq!(
        third.reclaimed.iter().map(|d| d.id).collect::<Vec<_>>(),
        vec![b]
    );
    assert_eq!(p.arena.pending_reclamation(), 0);
}

#[test]
fn destroying_parts_in_the_world_logs_them_leaving() {
    let mut p = place();
    let part = p.arena.create(ClassId::PART, Some(p.workspace)).unwrap();
    let cursor = p.arena.part_log().head();
    p.arena.destroy(part).unwrap();
    let entries: Vec<_> = p
        .arena
        .part_writes_since(cursor)
        .unwrap()
        .map(|(_, w)| w.kind)
        .collect();
    assert_eq!(entries, vec![strata_arena::PartWriteKind::LeftWorld]);
}

#[test]
fn a_stale_scope_token_cannot_close_a_newer_scope() {
    let mut p = place();
    let a = p.arena.create(ClassId::FOLDER, Some(p.workspace)).unwrap();
    let b = p.arena.create(ClassId::FOLDER, Some(p.workspace)).unwrap();
    p.arena.destroy(a).unwrap();
    p.arena.destroy(b).unwrap();
    let outer = p.arena.enter_lifecycle_scope(a).unwrap();
    let inner = p.arena.enter_lifecycle_scope(b).unwrap();
    // Closing the outer scope closes the inner one: its token is stale from now on.
    p.arena.exit_lifecycle_scope(outer).unwrap();
    // Two fresh scopes: the second sits where the stale one did.
    let fresh = p.arena.enter_lifecycle_scope(a).unwrap();
    let nested = p.arena.enter_lifecycle_scope(b).unwrap();
    let error = assert_refused_unchanged(&mut p.arena, |arena| arena.exit_lifecycle_scope(inner));
    assert_eq!(error, ArenaError::ScopeNotOpen);
    assert!(p.arena.get(b).is_some(), "the nested scope stays open");
    p.arena.exit_lifecycle_scope(nested).unwrap();
    assert!(p.arena.get(b).is_none() && p.arena.get(a).is_some());
    p.arena.exit_lifecycle_scope(fresh).unwrap();
    assert!(p.arena.get(a).is_none());
}

#[test]
fn a_scope_token_from_another_arena_is_refused() {
    let mut here = place();
    let mut there = place();
    let mine = here.arena.create(ClassId::FOLDER, None).unwrap();
    let theirs = there.arena.create(ClassId::FOLDER, None).unwrap();
    here.arena.destroy(mine).unwrap();
    there.arena.destroy(theirs).unwrap();
    let foreign = there.arena.enter_lifecycle_scope(theirs).unwrap();
    let own = here.arena.enter_lifecycle_scope(mine).unwrap();
    let error = assert_refused_unchanged(&mut here.arena, |arena| {
        arena.exit_lifecycle_scope(foreign.clone())
    });
    assert_eq!(error, ArenaError::ForeignToken);
    assert!(here.arena.get(mine).is_some(), "our scope stays open");
    here.arena.exit_lifecycle_scope(own).unwrap();
    assert!(there.arena.get(theirs).is_some(), "theirs is untouched");
    there.arena.exit_lifecycle_scope(foreign).unwrap();
    assert!(there.arena.get(theirs).is_none());
}

/// The doomed list reads the same for a leaf (held inline) and a subtree: as a slice, by
/// reference, by value, and against the reclaimed list of the second drain.
#[test]
fn a_destruction_lists_its_instances_whatever_their_number() {
    let mut p = place();
    let leaf = p.arena.create(ClassId::ENTITY, None).unwrap();
    let root = p.arena.create(ClassId::FOLDER, None).unwrap();
    let child = p.arena.create(ClassId::ENTITY, Some(root)).unwrap();
    let slot = |p: &crate::common::Place, id| p.arena.slot_of(id).unwrap();
    let expect_leaf = vec![Doomed {
        id: leaf,
        slot: slot(&p, leaf),
    }];
    let expect_tree = vec![
        Doomed {
            id: root,
            slot: slot(&p, root),
        },
        Doomed {
            id: child,
            slot: slot(&p, child),
        },
    ];
    let one = p.arena.destroy(leaf).unwrap().doomed;
    let two = p.arena.destroy(root).unwrap().doomed;
    for (list, expected) in [(&one, &expect_leaf), (&two, &expect_tree)] {
        assert_eq!(list.len(), expected.len());
        assert_eq!(list.as_slice(), expected.as_slice());
        assert_eq!(list, expected);
        assert_eq!(expected, list);
        assert_eq!(list.iter().copied().collect::<Vec<_>>(), *expected);
        let slice: &[Doomed] = list;
        assert_eq!(slice.first(), expected.first());
        assert_eq!(list.clone().into_iter().collect::<Vec<_>>(), *expected);
        assert_eq!(list.to_vec(), *expected);
    }
    p.arena.drain().unwrap();
    let reclaimed = p.arena.drain().unwrap().reclaimed;
    let all: Vec<Doomed> = one.into_iter().chain(two).collect();
    assert_eq!(reclaimed, all);
}

#[test]
fn live_class_at_names_only_a_live_instance_at_its_own_slot() {
    let mut arena = strata_arena::Arena::standard();
    let a = arena.create(ClassId::ENTITY, None).unwrap();
    let b = arena.create(ClassId::ENTITY, None).unwrap();
    let (sa, sb) = (arena.slot_of(a).unwrap(), arena.slot_of(b).unwrap());
    assert_eq!(arena.live_class_at(a, sa), Some(ClassId::ENTITY));
    assert_eq!(arena.live_class_at(a, sb), None, "another instance's slot");
    arena.destroy(a).unwrap();
    assert_eq!(arena.live_class_at(a, sa), None, "a tombstone");
    assert_eq!(arena.live_class_at(b, sb), Some(ClassId::ENTITY));
}

/// Destroying an instance clears every built-in and attribute reference a live instance holds
/// to it (or to anything in its subtree), as a write of the holder; references to live
/// instances stay.
#[test]
fn destruction_clears_built_in_and_attribute_references_to_the_destroyed() {
    use strata_arena::{AttrValue, BuiltinState, ModelState};
    let mut p = place();
    let arena = &mut p.arena;
    let model = arena.create(ClassId::MODEL, Some(p.workspace)).unwrap();
    let part = arena.create(ClassId::PART, Some(model)).unwrap();
    let other = arena.create(ClassId::PART, Some(p.workspace)).unwrap();
    let holder = arena.create(ClassId::FOLDER, None).unwrap();
    let state = BuiltinState::Model(Box::new(ModelState {
        primary_part: Some(part),
        ..ModelState::default()
    }));
    arena.set_state(model, state).unwrap();
    arena
        .set_attribute(holder, "target", Some(AttrValue::Reference(Some(part))))
        .unwrap();
    arena
        .set_attribute(holder, "keep", Some(AttrValue::Reference(Some(other))))
        .unwrap();
    {
        let mut node = arena.node_mut(other).unwrap();
        node.attributes_mut()
            .set("back", Some(AttrValue::Reference(Some(holder))));
    }
    let before = arena.get(holder).unwrap().revision();
    arena.destroy(part).unwrap();
    let data = arena.get(holder).unwrap().data();
    assert_eq!(
        data.attributes.get("target"),
        Some(&AttrValue::Reference(None))
    );
    assert_eq!(
        data.attributes.get("keep"),
        Some(&AttrValue::Reference(Some(other))),
        "a reference to a live instance stays"
    );
    assert!(
        arena.get(holder).unwrap().revision() > before,
        "the holder was written"
    );
    let BuiltinState::Model(model_state) = &arena.get(model).unwrap().data().state else {
        panic!("a model keeps its state kind");
    };
    assert_eq!(model_state.primary_part, None);
    // Destroying a subtree clears references into any of it; written through generic access.
    arena.destroy(holder).unwrap();
    assert_eq!(
        arena.get(other).unwrap().data().attributes.get("back"),
        Some(&AttrValue::Reference(None))
    );
}

#[test]
fn a_read_that_panics_inside_a_lifecycle_scope_still_closes_it() {
    let mut p = place();
    let folder = p.arena.create(ClassId::FOLDER, None).unwrap();
    p.arena.destroy(folder).unwrap();
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = p
            .arena
            .with_lifecycle_scope(folder, |_| panic!("a reader fails"));
    }));
    assert!(panicked.is_err(), "the panic reaches the caller");
    // The scope is closed: the tombstone is unreadable again, and drains and save points work.
    assert!(p.arena.get(folder).is_none());
    p.arena.save_point().unwrap();
    p.arena.drain().unwrap();
}
