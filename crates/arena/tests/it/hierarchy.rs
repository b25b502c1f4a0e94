//! Reparenting: validation, no-op moves, link symmetry, events, world membership and GUI layout.

use std::sync::Arc;

use crate::common::{assert_refused_unchanged, children, observe, place};
use strata_arena::{
    ArenaError, ClassDescriptor, ClassId, Event, MovedIds, PartWrite, PartWriteKind, StateKind,
    TopologyChange,
};

#[test]
fn a_real_move_updates_both_directions_and_keeps_order() {
    let mut p = place();
    let a = p.arena.create(ClassId::FOLDER, Some(p.workspace)).unwrap();
    let b = p.arena.create(ClassId::FOLDER, Some(p.workspace)).unwrap();
    let kids: Vec<_> = (0..4)
        .map(|_| p.arena.create(ClassId::PART, Some(a)).unwrap())
        .collect();

    assert!(p.arena.set_parent(kids[1], Some(b)).unwrap());
    assert_eq!(children(&p.arena, a), vec![kids[0], kids[2], kids[3]]);
    assert_eq!(children(&p.arena, b), vec![kids[1]]);
    assert_eq!(p.arena.parent(kids[1]), Some(b));
    assert_eq!(p.arena.get(a).unwrap().child_count(), 3);

    // Removing the first and the last child keeps the list consistent.
    p.arena.set_parent(kids[0], Some(b)).unwrap();
    p.arena.set_parent(kids[3], Some(b)).unwrap();
    assert_eq!(children(&p.arena, a), vec![kids[2]]);
    assert_eq!(children(&p.arena, b), vec![kids[1], kids[0], kids[3]]);

    assert!(p.arena.set_parent(kids[2], None).unwrap());
    assert_eq!(children(&p.arena, a), vec![]);
    assert_eq!(p.arena.parent(kids[2]), None);
}

#[test]
fn a_no_op_move_produces_nothing() {
    let mut p = place();
    let folder = p.arena.create(ClassId::FOLDER, Some(p.workspace)).unwrap();
    let loose = p.arena.create(ClassId::FOLDER, None).unwrap();
    let before = observe(&p.arena);
    let snapshot = p.arena.snapshot();
    assert!(!p.arena.set_parent(folder, Some(p.workspace)).unwrap());
    assert!(!p.arena.set_parent(loose, None).unwrap());
    assert_eq!(observe(&p.arena), before);
    assert_eq!(p.arena.snapshot().diff(&snapshot), Default::default());
}

#[test]
fn cycles_are_rejected_with_state_unchanged() {
    let mut p = place();
    let a = p.arena.create(ClassId::FOLDER, Some(p.workspace)).unwrap();
    let b = p.arena.create(ClassId::FOLDER, Some(a)).unwrap();
    let c = p.arena.create(ClassId::FOLDER, Some(b)).unwrap();
    for (child, parent) in [(a, c), (a, b), (a, a)] {
        let error =
            assert_refused_unchanged(&mut p.arena, |arena| arena.set_parent(child, Some(parent)));
        assert_eq!(error, ArenaError::Cycle { child, parent });
    }
    assert_eq!(children(&p.arena, a), vec![b]);
}

#[test]
fn missing_destroyed_and_locked_moves_are_rejected() {
    let mut p = place();
    let a = p.arena.create(ClassId::FOLDER, Some(p.workspace)).unwrap();
    let gone = p.arena.create(ClassId::FOLDER, Some(p.workspace)).unwrap();
    p.arena.destroy(gone).unwrap();
    let never = strata_arena::InstanceId::new(9_999).unwrap();

    let error = assert_refused_unchanged(&mut p.arena, |arena| arena.set_parent(a, Some(gone)));
    assert_eq!(error, ArenaError::DestroyedInstance(gone));
    let error = assert_refused_unchanged(&mut p.arena, |arena| arena.set_parent(a, Some(never)));
    assert_eq!(error, ArenaError::UnknownInstance(never));
    let error = assert_refused_unchanged(&mut p.arena, |arena| arena.set_parent(gone, Some(a)));
    assert_eq!(error, ArenaError::DestroyedInstance(gone));

    // Services are created with their parent locked.
    let error =
        assert_refused_unchanged(&mut p.arena, |arena| arena.set_parent(p.workspace, Some(a)));
    assert_eq!(
        error,
        ArenaError::ParentLocked {
            id: p.workspace,
            service: Some("Workspace".into())
        }
    );
    assert_eq!(
        error.to_string(),
        format!(
            "{} is the service `Workspace`, whose parent is locked",
            p.workspace
        )
    );
    p.arena.set_parent_locked(a, true).unwrap();
    let error = assert_refused_unchanged(&mut p.arena, |arena| arena.set_parent(a, None));
    assert_eq!(
        error,
        ArenaError::ParentLocked {
            id: a,
            service: None
        }
    );
    p.arena.set_parent_locked(a, false).unwrap();
    assert!(p.arena.set_parent(a, None).unwrap());
}

#[test]
fn class_containment_is_enforced() {
    let mut p = place();
    let folder = p.arena.create(ClassId::FOLDER, Some(p.workspace)).unwrap();
    let part = p.arena.create(ClassId::PART, Some(folder)).unwrap();
    let light = p.arena.create(ClassId::POINT_LIGHT, Some(part)).unwrap();

    let error =
        assert_refused_unchanged(&mut p.arena, |arena| arena.set_parent(light, Some(folder)));
    assert_eq!(
        error,
        ArenaError::Containment {
            child_class: "PointLight".into(),
            parent_class: "Folder".into()
        }
    );
    let error = assert_refused_unchanged(&mut p.arena, |arena| {
        arena.create(ClassId::WORKSPACE, Some(folder))
    });
    assert!(matches!(error, ArenaError::Containment { .. }));
    let error = assert_refused_unchanged(&mut p.arena, |arena| {
        arena.create(ClassId::DATA_MODEL, Some(folder))
    });
    assert!(matches!(error, ArenaError::Containment { .. }));

    // Integrator classes take part in the same rules.
    let turret = p
        .arena
        .register_class(ClassDescriptor::new("Turret", StateKind::Part).parents(&["Model"]))
        .unwrap();
    let error = assert_refused_unchanged(&mut p.arena, |arena| arena.create(turret, Some(folder)));
    assert!(matches!(error, ArenaError::Containment { .. }));
    let model = p.arena.create(ClassId::MODEL, Some(folder)).unwrap();
    p.arena.create(turret, Some(model)).unwrap();
}

#[test]
fn a_move_queues_five_event_kinds_sharing_one_moved_list() {
    let mut p = place();
    let from = p.arena.create(ClassId::FOLDER, Some(p.workspace)).unwrap();
    let to = p.arena.create(ClassId::FOLDER, Some(p.game)).unwrap();
    let root = p.arena.create(ClassId::MODEL, Some(from)).unwrap();
    let leaf = p.arena.create(ClassId::PART, Some(root)).unwrap();
    p.arena.drain().unwrap();

    p.arena.set_parent(root, Some(to)).unwrap();
    let events = p.arena.drain().unwrap().events;
    assert_eq!(events.len(), 5, "{events:#?}");
    let Event::DescendantRemoving {
        ancestors: old,
        moved: m1,
    } = &events[0]
    else {
        panic!("{:?}", events[0])
    };
    assert_eq!(&**old, &[from, p.workspace, p.game]);
    assert_eq!(
        events[1],
        Event::ChildRemoved {
            parent: from,
            child: root
        }
    );
    assert_eq!(
        events[2],
        Event::ChildAdded {
            parent: to,
            child: root
        }
    );
    let Event::AncestryChanged { moved: m2 } = &events[3] else {
        panic!("{:?}", events[3])
    };
    let Event::DescendantAdded {
        ancestors: new,
        moved: m3,
    } = &events[4]
    else {
        panic!("{:?}", events[4])
    };
    assert_eq!(&**new, &[to, p.game]);
    assert_eq!(m1.as_slice(), &[root, leaf]);
    let shared = |m: &MovedIds| match m {
        MovedIds::Many(ids) => ids.clone(),
        MovedIds::One(_) => panic!("a two-node subtree is a shared list"),
    };
    assert!(Arc::ptr_eq(&shared(m1), &shared(m2)));
    assert!(Arc::ptr_eq(&shared(m1), &shared(m3)));

    let journal: Vec<_> = p
        .arena
        .topology_journal()
        .read_since(p.arena.topology_journal().head() - 1)
        .unwrap()
        .map(|(_, e)| e.clone())
        .collect();
    assert_eq!(
        journal,
        vec![TopologyChange::Reparented {
            id: root,
            from: Some(from),
            to: Some(to)
        }]
    );
}

#[test]
fn creation_queues_one_event_naming_the_parent() {
    let mut p = place();
    let folder = p.arena.create(ClassId::FOLDER, Some(p.workspace)).unwrap();
    let loose = p.arena.create(ClassId::FOLDER, None).unwrap();
    assert_eq!(
        p.arena.drain().unwrap().events,
        vec![
            Event::Created {
                id: folder,
                parent: Some(p.workspace)
            },
            Event::Created {
                id: loose,
                parent: None
            },
        ]
    );
    assert_eq!(children(&p.arena, p.workspace), vec![folder]);
}

#[test]
fn parts_entering_and_leaving_the_world_are_logged() {
    let mut p = place();
    let storage = p.arena.create(ClassId::FOLDER, Some(p.game)).unwrap();
    let model = p.arena.create(ClassId::MODEL, Some(storage)).unwrap();
    let part = p.arena.create(ClassId::PART, Some(model)).unwrap();
    let folder = p.arena.create(ClassId::FOLDER, Some(model)).unwrap();
    assert!(!p.arena.get(part).unwrap().is_in_world());

    let cursor = p.arena.part_log().head();
    let collision = p.arena.revisions().collision();
    p.arena.set_parent(model, Some(p.workspace)).unwrap();
    assert!(p.arena.get(part).unwrap().is_in_world());
    assert!(p.arena.get(folder).unwrap().is_in_world());
    assert!(p.arena.revisions().collision() > collision);
    let entered: Vec<PartWrite> = p
        .arena
        .part_writes_since(cursor)
        .unwrap()
        .map(|(_, w)| *w)
        .collect();
    assert_eq!(
        entered,
        vec![
            PartWrite {
                id: model,
                kind: PartWriteKind::EnteredWorld
            },
            PartWrite {
                id: part,
                kind: PartWriteKind::EnteredWorld
            },
        ]
    );

    // Moving within the world changes no membership.
    let inner = p.arena.create(ClassId::FOLDER, Some(p.workspace)).unwrap();
    let cursor = p.arena.part_log().head();
    p.arena.set_parent(model, Some(inner)).unwrap();
    assert_eq!(p.arena.part_writes_since(cursor).unwrap().count(), 0);

    p.arena.set_parent(model, Some(storage)).unwrap();
    let left: Vec<PartWrite> = p
        .arena
        .part_writes_since(cursor)
        .unwrap()
        .map(|(_, w)| *w)
        .collect();
    assert_eq!(
        left,
        vec![
            PartWrite {
                id: model,
                kind: PartWriteKind::LeftWorld
            },
            PartWrite {
                id: part,
                kind: PartWriteKind::LeftWorld
            },
        ]
    );
    assert!(!p.arena.get(part).unwrap().is_in_world());
}

#[test]
fn gui_moves_invalidate_the_affected_layers() {
    let mut p = place();
    let gui_root = p.arena.create(ClassId::FOLDER, Some(p.game)).unwrap();
    let hud = p.arena.create(ClassId::SCREEN_GUI, Some(gui_root)).unwrap();
    let menu = p.arena.create(ClassId::SCREEN_GUI, Some(gui_root)).unwrap();
    let other = p.arena.create(ClassId::SCREEN_GUI, Some(gui_root)).unwrap();
    let frame = p.arena.create(ClassId::FRAME, Some(hud)).unwrap();
    let button = p.arena.create(ClassId::FRAME, Some(frame)).unwrap();

    let (hud_rev, menu_rev, other_rev) = (
        p.arena.layout_revision(hud),
        p.arena.layout_revision(menu),
        p.arena.layout_revision(other),
    );
    let memo = p.arena.revisions().layout();
    p.arena.set_parent(frame, Some(menu)).unwrap();
    assert!(
        p.arena.layout_revision(hud) > hud_rev,
        "old layer invalidated"
    );
    assert!(
        p.arena.layout_revision(menu) > menu_rev,
        "new layer invalidated"
    );
    assert_eq!(
        p.arena.layout_revision(other),
        other_rev,
        "unrelated layer kept"
    );
    assert_eq!(
        p.arena.revisions().layout(),
        memo,
        "element moves keep the broad memo"
    );

    // Writing an element invalidates its own layer only.
    let menu_rev = p.arena.layout_revision(menu);
    let hud_rev = p.arena.layout_revision(hud);
    p.arena.node_mut(button).unwrap();
    assert!(p.arena.layout_revision(menu) > menu_rev);
    assert_eq!(p.arena.layout_revision(hud), hud_rev);

    // Moving a whole layer invalidates the broad layout memo.
    p.arena.set_parent(menu, Some(p.workspace)).unwrap();
    assert!(p.arena.revisions().layout() > memo);
}

#[test]
fn descendants_and_ancestors_walk_the_tree() {
    let mut p = place();
    let a = p.arena.create(ClassId::FOLDER, Some(p.workspace)).unwrap();
    let b = p.arena.create(ClassId::FOLDER, Some(a)).unwrap();
    let c = p.arena.create(ClassId::FOLDER, Some(b)).unwrap();
    let d = p.arena.create(ClassId::FOLDER, Some(a)).unwrap();
    let e = p.arena.create(ClassId::FOLDER, Some(p.workspace)).unwrap();
    assert_eq!(p.arena.descendants(a).collect::<Vec<_>>(), vec![b, c, d]);
    assert_eq!(
        p.arena.descendants(p.game).collect::<Vec<_>>(),
        vec![p.workspace, a, b, c, d, e]
    );
    assert_eq!(
        p.arena.ancestors(c).collect::<Vec<_>>(),
        vec![b, a, p.workspace, p.game]
    );
    assert!(p.arena.is_ancestor_of(a, c));
    assert!(!p.arena.is_ancestor_of(c, a));
}

#[test]
fn create_many_matches_creating_one_at_a_time() {
    let mut p = place();
    let folder = p.arena.create(ClassId::FOLDER, Some(p.workspace)).unwrap();
    let first = p.arena.create(ClassId::PART, Some(folder)).unwrap();
    p.arena.drain().unwrap();
    let topology = p.arena.revisions().topology();
    let cursor = p.arena.part_log().head();
    let made = p.arena.create_many(ClassId::PART, Some(folder), 5).unwrap();
    let ids: Vec<_> = made.iter().map(|(id, _)| *id).collect();
    assert!(
        ids.windows(2).all(|w| w[1].get() == w[0].get() + 1),
        "consecutive ids"
    );
    for (id, slot) in &made {
        assert_eq!(p.arena.slot_of(*id), Some(*slot));
        assert_eq!(p.arena.parent(*id), Some(folder));
        assert!(p.arena.get(*id).unwrap().is_in_world());
    }
    let mut expected = vec![first];
    expected.extend(&ids);
    assert_eq!(children(&p.arena, folder), expected);
    assert_eq!(p.arena.get(folder).unwrap().child_count(), 6);
    assert!(p.arena.revisions().topology() > topology);
    assert_eq!(
        p.arena.part_writes_since(cursor).unwrap().count(),
        5,
        "each part entered the world"
    );
    assert_eq!(
        p.arena.drain().unwrap().events,
        vec![Event::CreatedRange {
            first: ids[0],
            count: 5,
            parent: Some(folder)
        }]
    );
    // Unparented batches, and an empty one.
    let loose = p.arena.create_many(ClassId::ENTITY, None, 3).unwrap();
    assert!(loose.iter().all(|(id, _)| p.arena.parent(*id).is_none()));
    assert!(
        p.arena
            .create_many(ClassId::ENTITY, None, 0)
            .unwrap()
            .is_empty()
    );
    // Refusals change nothing.
    let light_error = crate::common::assert_refused_unchanged(&mut p.arena, |a| {
        a.create_many(ClassId::POINT_LIGHT, Some(folder), 2)
    });
    assert!(matches!(light_error, ArenaError::Containment { .. }));
}

#[test]
fn create_many_rolls_back_with_its_batch() {
    let mut p = place();
    let before = crate::common::observe(&p.arena);
    let checkpoint = p.arena.checkpoint();
    p.arena
        .create_many(ClassId::PART, Some(p.workspace), 50)
        .unwrap();
    p.arena.rollback(checkpoint).unwrap();
    crate::common::assert_rolled_back(&p.arena, &before);
    assert!(
        p.arena.next_id() >= before.next_id + 50,
        "the 50 ids stay retired"
    );
    assert!(children(&p.arena, p.workspace).is_empty());
    assert_eq!(
        p.arena.family_members(strata_arena::FamilyId::PARTS).len(),
        0
    );
}

#[test]
fn create_many_invalidates_the_layouts_create_does() {
    for many in [false, true] {
        let mut p = place();
        let hud = p.arena.create(ClassId::SCREEN_GUI, Some(p.game)).unwrap();
        let frame = p.arena.create(ClassId::FRAME, Some(hud)).unwrap();
        for class in [ClassId::FRAME, ClassId::SCREEN_GUI] {
            let ctx = format!("{class:?}, create_many: {many}");
            let (layer_rev, memo) = (p.arena.layout_revision(hud), p.arena.revisions().layout());
            let made: Vec<_> = if many {
                let made = p.arena.create_many(class, Some(frame), 2).unwrap();
                made.into_iter().map(|(id, _)| id).collect()
            } else {
                vec![p.arena.create(class, Some(frame)).unwrap()]
            };
            assert!(
                p.arena.layout_revision(hud) > layer_rev,
                "{ctx}: the enclosing layer is invalidated"
            );
            let is_layer = class == ClassId::SCREEN_GUI;
            assert_eq!(
                p.arena.revisions().layout() > memo,
                is_layer,
                "{ctx}: only new layers touch the broad memo"
            );
            for id in made {
                assert_eq!(
                    p.arena.layout_revision(id) > memo,
                    is_layer,
                    "{ctx}: a new layer's own layout"
                );
            }
        }
    }
}

/// The part-write log entries since `cursor`.
fn part_writes(arena: &strata_arena::Arena, cursor: u64) -> Vec<PartWrite> {
    arena
        .part_writes_since(cursor)
        .unwrap()
        .map(|(_, w)| *w)
        .collect()
}

#[test]
fn membership_of_every_moved_node_follows_its_own_ancestry() {
    let mut p = place();
    // A world container that is not a service, so it can be moved around.
    let stage_class = p
        .arena
        .register_class(ClassDescriptor::new("Stage", StateKind::Plain).world_container())
        .unwrap();
    let storage = p.arena.create(ClassId::FOLDER, Some(p.game)).unwrap();
    let bundle = p.arena.create(ClassId::FOLDER, Some(storage)).unwrap();
    let stage = p.arena.create(stage_class, Some(bundle)).unwrap();
    let staged = p.arena.create(ClassId::PART, Some(stage)).unwrap();
    let model = p.arena.create(ClassId::MODEL, Some(bundle)).unwrap();
    let loose = p.arena.create(ClassId::PART, Some(model)).unwrap();
    let in_world = |p: &crate::common::Place, id| p.arena.get(id).unwrap().is_in_world();
    assert!(in_world(&p, staged), "under a world container");
    assert!(!in_world(&p, stage) && !in_world(&p, loose));

    // Into the world: only what was outside it enters.
    let cursor = p.arena.part_log().head();
    p.arena.set_parent(bundle, Some(p.workspace)).unwrap();
    assert!(in_world(&p, staged) && in_world(&p, stage) && in_world(&p, loose));
    let entered = |id| PartWrite {
        id,
        kind: PartWriteKind::EnteredWorld,
    };
    assert_eq!(
        part_writes(&p.arena, cursor),
        vec![entered(model), entered(loose)]
    );

    // Back out: the staged part stays in the world and logs nothing.
    let cursor = p.arena.part_log().head();
    p.arena.set_parent(bundle, Some(storage)).unwrap();
    assert!(in_world(&p, staged), "still under its world container");
    assert!(!in_world(&p, stage) && !in_world(&p, loose));
    let left = |id| PartWrite {
        id,
        kind: PartWriteKind::LeftWorld,
    };
    assert_eq!(
        part_writes(&p.arena, cursor),
        vec![left(model), left(loose)]
    );

    // Moving the staged part out of its container takes it out of the world.
    let cursor = p.arena.part_log().head();
    p.arena.set_parent(staged, Some(storage)).unwrap();
    assert!(!in_world(&p, staged));
    assert_eq!(part_writes(&p.arena, cursor), vec![left(staged)]);
    p.arena.set_parent(staged, Some(stage)).unwrap();
    assert!(in_world(&p, staged));

    // Destruction takes every in-world node out, wherever the root was.
    let cursor = p.arena.part_log().head();
    let collision = p.arena.revisions().collision();
    let destruction = p.arena.destroy(bundle).unwrap();
    assert_eq!(part_writes(&p.arena, cursor), vec![left(staged)]);
    assert!(p.arena.revisions().collision() > collision);
    p.arena.drain().unwrap();
    for doomed in destruction.doomed {
        let flag = p
            .arena
            .with_lifecycle_scope(bundle, |view| view.get(doomed.id).unwrap().is_in_world())
            .unwrap();
        assert!(!flag, "tombstone {} in world", doomed.id);
    }
}

#[test]
fn creating_moving_and_destroying_animations_advances_the_animation_revision() {
    let mut p = place();
    let rig = p.arena.create(ClassId::MODEL, Some(p.workspace)).unwrap();
    let other = p.arena.create(ClassId::FOLDER, Some(p.game)).unwrap();
    let animation = |p: &crate::common::Place| p.arena.revisions().animation();

    let before = animation(&p);
    let walk = p.arena.create(ClassId::ANIMATION, Some(rig)).unwrap();
    assert!(animation(&p) > before, "creation");

    let before = animation(&p);
    p.arena.set_parent(walk, Some(other)).unwrap();
    assert!(animation(&p) > before, "reparenting the animation");

    let before = animation(&p);
    p.arena.set_parent(other, Some(p.workspace)).unwrap();
    assert_eq!(
        animation(&p),
        p.arena.revisions().clock(),
        "moving a subtree holding an animation"
    );
    assert!(animation(&p) > before);

    let before = animation(&p);
    p.arena
        .create_many(ClassId::ANIMATION, Some(rig), 3)
        .unwrap();
    assert!(animation(&p) > before, "bulk creation");

    let before = animation(&p);
    p.arena.destroy(other).unwrap();
    assert!(animation(&p) > before, "destroying a subtree holding one");

    // Structure without animations leaves the domain alone.
    let before = animation(&p);
    let folder = p.arena.create(ClassId::FOLDER, Some(p.workspace)).unwrap();
    let part = p.arena.create(ClassId::PART, Some(folder)).unwrap();
    p.arena.set_parent(folder, Some(p.game)).unwrap();
    p.arena.destroy(part).unwrap();
    assert_eq!(animation(&p), before);
}

#[test]
fn a_subtree_holding_a_locked_instance_is_neither_moved_nor_destroyed() {
    let mut p = place();
    // A service that may sit anywhere: created with its parent locked.
    let lighting = p
        .arena
        .register_class(ClassDescriptor::new("Lighting", StateKind::Plain).service())
        .unwrap();
    let folder = p.arena.create(ClassId::FOLDER, Some(p.workspace)).unwrap();
    let holder = p.arena.create(ClassId::MODEL, Some(folder)).unwrap();
    let service = p.arena.create(lighting, Some(holder)).unwrap();
    let elsewhere = p.arena.create(ClassId::FOLDER, Some(p.game)).unwrap();
    p.arena.drain().unwrap();

    let locked = ArenaError::LockedDescendant {
        root: folder,
        locked: service,
        service: Some("Lighting".into()),
    };
    let error = assert_refused_unchanged(&mut p.arena, |a| a.set_parent(folder, Some(elsewhere)));
    assert_eq!(error, locked);
    let error = assert_refused_unchanged(&mut p.arena, |a| a.set_parent(folder, None));
    assert_eq!(error, locked);
    let error = assert_refused_unchanged(&mut p.arena, |a| a.destroy(folder));
    assert_eq!(error, locked);
    assert_eq!(p.arena.parent(service), Some(holder));

    // An instance locked by hand counts the same.
    let crate_ = p.arena.create(ClassId::PART, Some(elsewhere)).unwrap();
    let lid = p.arena.create(ClassId::FOLDER, Some(crate_)).unwrap();
    p.arena.set_parent_locked(lid, true).unwrap();
    let error = assert_refused_unchanged(&mut p.arena, |a| a.destroy(elsewhere));
    assert_eq!(
        error,
        ArenaError::LockedDescendant {
            root: elsewhere,
            locked: lid,
            service: None,
        }
    );
    // Unlocked, the subtree moves and is destroyed as before.
    p.arena.set_parent_locked(lid, false).unwrap();
    assert!(p.arena.set_parent(crate_, Some(p.workspace)).unwrap());
    p.arena.destroy(elsewhere).unwrap();
    // The locked instance itself can still be left where it is while its siblings move.
    let sibling = p.arena.create(ClassId::PART, Some(holder)).unwrap();
    assert!(p.arena.set_parent(sibling, Some(p.workspace)).unwrap());
}

#[test]
fn consecutive_creations_under_one_parent_share_one_event() {
    let mut p = place();
    p.arena.drain().unwrap();
    let head = p.arena.topology_journal().head();
    let a = p.arena.create(ClassId::FOLDER, Some(p.workspace)).unwrap();
    let b = p.arena.create(ClassId::FOLDER, Some(p.workspace)).unwrap();
    let c = p.arena.create(ClassId::FOLDER, Some(p.workspace)).unwrap();
    let lone = p.arena.create(ClassId::PART, Some(a)).unwrap();
    let after = p.arena.create(ClassId::PART, Some(p.workspace)).unwrap();
    assert_eq!(
        p.arena.pending_events(),
        &[
            Event::CreatedRange {
                first: a,
                count: 3,
                parent: Some(p.workspace)
            },
            Event::Created {
                id: lone,
                parent: Some(a)
            },
            Event::Created {
                id: after,
                parent: Some(p.workspace)
            },
        ]
    );
    assert_eq!((b.get(), c.get()), (a.get() + 1, a.get() + 2));
    // The journal keeps one entry per creation: its readers hold cursors into it.
    assert_eq!(p.arena.topology_journal().head() - head, 5);
}

#[test]
fn a_rollback_shrinks_a_creation_event_the_batch_extended() {
    let mut p = place();
    p.arena.drain().unwrap();
    let a = p.arena.create(ClassId::FOLDER, Some(p.workspace)).unwrap();
    let checkpoint = p.arena.checkpoint();
    p.arena.create(ClassId::FOLDER, Some(p.workspace)).unwrap();
    p.arena.create(ClassId::FOLDER, Some(p.workspace)).unwrap();
    assert_eq!(p.arena.pending_events().len(), 1);
    p.arena.rollback(checkpoint).unwrap();
    assert_eq!(
        p.arena.pending_events(),
        &[Event::Created {
            id: a,
            parent: Some(p.workspace)
        }]
    );
}
