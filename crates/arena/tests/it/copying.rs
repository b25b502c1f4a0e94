//! Clone, graft, and the construction batches behind them.

use crate::common::{assert_refused_unchanged, children, observe, place};
use strata_arena::{
    Arena, ArenaError, AttrValue, BuiltinState, CameraState, ClassDescriptor, ClassId, Event,
    ExternalRefs, FamilyId, InstanceId, ModelState, SnapshotDiff, StateKind, Transform,
};

/// A model with two parts, a camera, internal references (primary part, an attribute) and
/// external ones (camera subject, an attribute pointing outside).
struct Fixture {
    p: crate::common::Place,
    outside: InstanceId,
    model: InstanceId,
    body: InstanceId,
    wheel: InstanceId,
    camera: InstanceId,
}

fn fixture() -> Fixture {
    let mut p = place();
    let outside = p.arena.create(ClassId::PART, Some(p.workspace)).unwrap();
    let model = p.arena.create(ClassId::MODEL, Some(p.workspace)).unwrap();
    let body = p.arena.create(ClassId::PART, Some(model)).unwrap();
    let wheel = p.arena.create(ClassId::PART, Some(body)).unwrap();
    let camera = p.arena.create(ClassId::CAMERA, Some(model)).unwrap();
    p.arena.set_name(body, "Body").unwrap();
    p.arena.set_name(wheel, "Wheel").unwrap();
    p.arena
        .set_state(
            model,
            BuiltinState::Model(Box::new(ModelState {
                primary_part: Some(body),
                pivot: Transform::IDENTITY,
            })),
        )
        .unwrap();
    p.arena
        .set_state(
            camera,
            BuiltinState::Camera(Box::new(CameraState {
                subject: Some(outside),
                ..CameraState::default()
            })),
        )
        .unwrap();
    p.arena
        .set_attribute(wheel, "axle", Some(AttrValue::Reference(Some(body))))
        .unwrap();
    p.arena
        .set_attribute(wheel, "road", Some(AttrValue::Reference(Some(outside))))
        .unwrap();
    p.arena.add_tag(wheel, "Spinning").unwrap();
    p.arena.ensure_persistent_id(outside).unwrap();
    p.arena.ensure_persistent_id(body).unwrap();
    p.arena.drain().unwrap();
    Fixture {
        p,
        outside,
        model,
        body,
        wheel,
        camera,
    }
}

fn primary_part(arena: &Arena, model: InstanceId) -> Option<InstanceId> {
    match arena.get(model).unwrap().state() {
        BuiltinState::Model(m) => m.primary_part,
        other => panic!("{other:?}"),
    }
}

fn subject(arena: &Arena, camera: InstanceId) -> Option<InstanceId> {
    match arena.get(camera).unwrap().state() {
        BuiltinState::Camera(c) => c.subject,
        other => panic!("{other:?}"),
    }
}

fn reference(arena: &Arena, id: InstanceId, name: &str) -> Option<InstanceId> {
    match arena.get(id).unwrap().attributes().get(name) {
        Some(AttrValue::Reference(target)) => *target,
        other => panic!("{other:?}"),
    }
}

#[test]
fn clone_remaps_internal_references_and_keeps_external_ones() {
    let mut f = fixture();
    let folder =
        f.p.arena
            .create(ClassId::FOLDER, Some(f.p.workspace))
            .unwrap();
    f.p.arena.drain().unwrap();
    let map = f.p.arena.clone_subtree(f.model, Some(folder)).unwrap();
    let get = |id| map.get(id).unwrap();
    let (model, body, wheel, camera) = (get(f.model), get(f.body), get(f.wheel), get(f.camera));
    assert_eq!(map.root(), Some(model));
    assert_eq!(map.len(), 4);
    let arena = &f.p.arena;

    assert_eq!(
        primary_part(arena, model),
        Some(body),
        "internal: to the copy"
    );
    assert_eq!(reference(arena, wheel, "axle"), Some(body));
    assert_eq!(
        subject(arena, camera),
        Some(f.outside),
        "external: same target"
    );
    assert_eq!(reference(arena, wheel, "road"), Some(f.outside));
    // The source is untouched.
    assert_eq!(primary_part(arena, f.model), Some(f.body));
    assert_eq!(reference(arena, f.wheel, "axle"), Some(f.body));

    assert_eq!(children(arena, folder), vec![model]);
    assert_eq!(
        children(arena, model),
        vec![body, camera],
        "child order kept"
    );
    assert_eq!(children(arena, body), vec![wheel]);
    assert_eq!(arena.get(wheel).unwrap().name(), "Wheel");
    assert!(arena.get(wheel).unwrap().is_in_world());
    assert!(arena.has_tag(wheel, "Spinning"));
    assert_ne!(
        arena.get(body).unwrap().guid(),
        arena.get(f.body).unwrap().guid()
    );
    assert_eq!(
        arena.get(body).unwrap().persistent_id(),
        None,
        "identity is not copied"
    );

    let events = f.p.arena.drain().unwrap().events;
    let created: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::Created { id, .. } => Some(*id),
            _ => None,
        })
        .collect();
    assert_eq!(created, vec![model, body, wheel, camera]);
    assert!(events.contains(&Event::ChildAdded {
        parent: folder,
        child: model
    }));
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::ChildAdded { parent, .. } if *parent != folder)),
        "only the finished subtree is announced"
    );
}

#[test]
fn clone_without_parent_is_unparented_and_outside_the_world() {
    let mut f = fixture();
    let map = f.p.arena.clone_subtree(f.body, None).unwrap();
    let body = map.root().unwrap();
    assert_eq!(f.p.arena.parent(body), None);
    assert!(!f.p.arena.get(body).unwrap().is_in_world());
    assert!(
        !f.p.arena
            .get(map.get(f.wheel).unwrap())
            .unwrap()
            .is_in_world()
    );
}

#[test]
fn clone_refusals_change_nothing() {
    let mut f = fixture();
    let ws = f.p.workspace;
    let error = assert_refused_unchanged(&mut f.p.arena, |a| a.clone_subtree(ws, None));
    assert_eq!(
        error,
        ArenaError::NotCloneable {
            id: ws,
            service: "Workspace".into()
        }
    );
    let light =
        f.p.arena
            .create(ClassId::POINT_LIGHT, Some(f.body))
            .unwrap();
    let error = assert_refused_unchanged(&mut f.p.arena, |a| a.clone_subtree(light, Some(ws)));
    assert!(matches!(error, ArenaError::Containment { .. }));
}

#[test]
fn a_clone_the_id_range_cannot_hold_changes_nothing() {
    let mut f = fixture();
    // Leave room for only two more ids: the four-node clone runs out part-way.
    f.p.arena
        .insert_with_id(
            InstanceId::new((1 << 52) - 3).unwrap(),
            ClassId::FOLDER,
            None,
        )
        .unwrap();
    f.p.arena.drain().unwrap();
    let ws = f.p.workspace;
    let model = f.model;
    let error = assert_refused_unchanged(&mut f.p.arena, |a| a.clone_subtree(model, Some(ws)));
    assert_eq!(
        error,
        ArenaError::IdSpaceExhausted(strata_arena::IdRange::Server)
    );
    assert!(!f.p.arena.in_batch());
}

#[test]
fn a_graft_with_an_unknown_class_changes_nothing() {
    // The source arena knows a class the destination does not; the graft is refused before it
    // builds the nodes that come before it in pre-order.
    let mut source = Arena::standard();
    let turret = source
        .register_class(ClassDescriptor::new("Turret", StateKind::Part))
        .unwrap();
    let root = source.create(ClassId::MODEL, None).unwrap();
    source.create(ClassId::PART, Some(root)).unwrap();
    source.create(ClassId::FOLDER, Some(root)).unwrap();
    source.create(turret, Some(root)).unwrap();

    let mut p = place();
    // Give the destination free slots to reuse, so a half-built graft would show in the free list.
    let spare: Vec<_> = (0..3)
        .map(|_| p.arena.create(ClassId::ENTITY, None).unwrap())
        .collect();
    for id in &spare {
        p.arena.destroy(*id).unwrap();
    }
    p.arena.drain().unwrap();
    p.arena.drain().unwrap();
    let free_order_probe = p.arena.snapshot();
    let workspace = p.workspace;
    let snapshot = source.snapshot();
    let error = assert_refused_unchanged(&mut p.arena, |a| {
        a.graft(&snapshot, root, Some(workspace), ExternalRefs::Clear)
    });
    assert_eq!(error, ArenaError::UnknownClass("Turret".into()));
    assert!(!p.arena.in_batch());
    assert_eq!(children(&p.arena, workspace), vec![]);

    // Slot reuse after the refusal follows the same order as without the failed graft.
    let mut fresh = place();
    for id in 0..3 {
        let _ = id;
        let e = fresh.arena.create(ClassId::ENTITY, None).unwrap();
        fresh.arena.destroy(e).unwrap();
    }
    fresh.arena.drain().unwrap();
    fresh.arena.drain().unwrap();
    for _ in 0..3 {
        let a = p.arena.create(ClassId::FOLDER, None).unwrap();
        let b = fresh.arena.create(ClassId::FOLDER, None).unwrap();
        assert_eq!(a, b);
        assert_eq!(p.arena.slot_of(a), fresh.arena.slot_of(b));
    }
    drop(free_order_probe);
}

#[test]
fn graft_clears_external_references_under_the_clear_policy() {
    let f = fixture();
    let mut dest = place();
    let g = dest
        .arena
        .graft(
            &f.p.arena.snapshot(),
            f.model,
            Some(dest.workspace),
            ExternalRefs::Clear,
        )
        .unwrap();
    let get = |id| g.map.get(id).unwrap();
    assert_eq!(primary_part(&dest.arena, get(f.model)), Some(get(f.body)));
    assert_eq!(
        reference(&dest.arena, get(f.wheel), "axle"),
        Some(get(f.body))
    );
    assert_eq!(subject(&dest.arena, get(f.camera)), None);
    assert_eq!(reference(&dest.arena, get(f.wheel), "road"), None);
    assert_eq!((g.cleared, g.resolved), (2, 0));
    assert_eq!(g.persistent_ids_kept, 1, "the body's persistent id travels");
    assert_eq!(
        dest.arena.get(get(f.body)).unwrap().persistent_id(),
        f.p.arena.get(f.body).unwrap().persistent_id()
    );
    assert!(dest.arena.has_tag(get(f.wheel), "Spinning"));
    assert!(dest.arena.get(get(f.wheel)).unwrap().is_in_world());
}

#[test]
fn graft_resolves_external_references_by_persistent_id() {
    let f = fixture();
    let mut dest = place();
    let road = dest
        .arena
        .create(ClassId::PART, Some(dest.workspace))
        .unwrap();
    let pid = f.p.arena.get(f.outside).unwrap().persistent_id().unwrap();
    dest.arena.set_persistent_id(road, Some(pid)).unwrap();
    // The destination already uses the body's persistent id: the copy cannot take it.
    let taken = dest.arena.create(ClassId::FOLDER, None).unwrap();
    let body_pid = f.p.arena.get(f.body).unwrap().persistent_id().unwrap();
    dest.arena.set_persistent_id(taken, Some(body_pid)).unwrap();

    let g = dest
        .arena
        .graft(
            &f.p.arena.snapshot(),
            f.model,
            None,
            ExternalRefs::ResolveByPersistentId,
        )
        .unwrap();
    let get = |id| g.map.get(id).unwrap();
    assert_eq!(subject(&dest.arena, get(f.camera)), Some(road));
    assert_eq!(reference(&dest.arena, get(f.wheel), "road"), Some(road));
    assert_eq!((g.cleared, g.resolved), (0, 2));
    assert_eq!((g.persistent_ids_kept, g.persistent_ids_dropped), (0, 1));
    assert_eq!(dest.arena.by_persistent_id(body_pid), Some(taken));
    assert_eq!(dest.arena.get(get(f.body)).unwrap().persistent_id(), None);
}

#[test]
fn manual_batches_roll_back_construction() {
    let mut p = place();
    let folder = p.arena.create(ClassId::FOLDER, Some(p.workspace)).unwrap();
    p.arena.drain().unwrap();
    let before = observe(&p.arena);
    let snapshot = p.arena.snapshot();

    let checkpoint = p.arena.checkpoint();
    let a = p.arena.create(ClassId::MODEL, Some(folder)).unwrap();
    let b = p.arena.create(ClassId::PART, Some(a)).unwrap();
    p.arena.add_tag(b, "Temp").unwrap();
    p.arena.ensure_persistent_id(b).unwrap();
    p.arena.set_parent(b, Some(folder)).unwrap();
    // What a batch cannot undo is refused while it is open.
    assert!(matches!(
        p.arena.destroy(a),
        Err(ArenaError::BatchInProgress(_))
    ));
    assert!(matches!(
        p.arena.drain(),
        Err(ArenaError::BatchInProgress(_))
    ));
    assert!(matches!(
        p.arena.set_parent(folder, None),
        Err(ArenaError::BatchInProgress(_))
    ));
    assert!(matches!(
        p.arena
            .insert_with_id(InstanceId::new(999).unwrap(), ClassId::FOLDER, None),
        Err(ArenaError::BatchInProgress(_))
    ));
    for refused in [
        p.arena.set_name(folder, "x").map(|_| ()),
        p.arena.add_tag(folder, "x").map(|_| ()),
        p.arena.node_mut(folder).map(|_| ()),
    ] {
        assert!(matches!(refused, Err(ArenaError::BatchInProgress(_))));
    }
    let inner = p.arena.checkpoint();
    let c = p.arena.create(ClassId::FOLDER, Some(a)).unwrap();
    // Rolling back the outer batch also undoes the nested one, whose checkpoint goes stale.
    p.arena.rollback(checkpoint).unwrap();
    assert_eq!(
        p.arena.commit(inner).unwrap_err(),
        ArenaError::StaleCheckpoint
    );

    for gone in [a, b, c] {
        assert!(p.arena.get(gone).is_none());
        assert_eq!(p.arena.slot_of(gone), None);
    }
    assert_eq!(children(&p.arena, folder), vec![]);
    assert_eq!(p.arena.tag_count("Temp"), 0);
    // The hierarchy and the events are as at the checkpoint; counters, revisions and journal
    // heads moved forward.
    crate::common::assert_rolled_back(&p.arena, &before);
    let after = p.arena.revisions();
    assert_eq!(
        after.tags(),
        after.clock(),
        "the batch tagged: tags take the rollback's tick"
    );
    assert_eq!(
        after.mutation(),
        before.revisions.mutation(),
        "nothing was written"
    );
    // Only the pre-existing parent's links were written, and they are back as they were: its
    // record equals the checkpoint's and its data was never copied, so nothing differs.
    let diff = p.arena.snapshot().diff(&snapshot);
    assert_eq!(diff, SnapshotDiff::default());
    assert_eq!(children(&p.arena, folder), vec![]);
    let next = p.arena.create(ClassId::FOLDER, None).unwrap();
    assert!(
        next.get() > c.get(),
        "ids handed out in a rolled-back batch stay retired"
    );
}

#[test]
fn persistent_ids_assigned_inside_a_rolled_back_batch_are_released() {
    let mut p = place();
    let checkpoint = p.arena.checkpoint();
    let x = p.arena.create(ClassId::PART, None).unwrap();
    let pid = p.arena.ensure_persistent_id(x).unwrap();
    p.arena.rollback(checkpoint).unwrap();
    assert_eq!(p.arena.by_persistent_id(pid), None);
    let y = p.arena.create(ClassId::PART, None).unwrap();
    p.arena.set_persistent_id(y, Some(pid)).unwrap();
    assert_eq!(p.arena.by_persistent_id(pid), Some(y));
}

#[test]
fn committing_an_outer_batch_commits_the_nested_ones() {
    let mut p = place();
    let outer = p.arena.checkpoint();
    let a = p.arena.create(ClassId::FOLDER, None).unwrap();
    let inner = p.arena.checkpoint();
    let b = p.arena.create(ClassId::FOLDER, Some(a)).unwrap();
    p.arena.commit(outer).unwrap();
    assert!(!p.arena.in_batch());
    assert_eq!(
        p.arena.rollback(inner).unwrap_err(),
        ArenaError::StaleCheckpoint
    );
    assert!(p.arena.is_live(a) && p.arena.is_live(b));
    p.arena.destroy(a).unwrap();
}

/// A source arena whose registry says `Turret` goes anywhere and `Gadget` carries part state,
/// with a folder holding one of each under a model.
fn lenient_source() -> (Arena, InstanceId, InstanceId, InstanceId) {
    let mut source = Arena::standard();
    let turret = source
        .register_class(ClassDescriptor::new("Turret", StateKind::Plain))
        .unwrap();
    let gadget = source
        .register_class(ClassDescriptor::new("Gadget", StateKind::Part))
        .unwrap();
    let root = source.create(ClassId::MODEL, None).unwrap();
    let folder = source.create(ClassId::FOLDER, Some(root)).unwrap();
    let placed = source.create(turret, Some(folder)).unwrap();
    let tool = source.create(gadget, Some(folder)).unwrap();
    (source, root, placed, tool)
}

#[test]
fn graft_checks_every_copied_node_against_the_destination_classes() {
    let (source, root, _, _) = lenient_source();
    let snapshot = source.snapshot();

    // Here a turret may only sit under a model; the grafted one sits under a folder.
    let mut strict = place();
    strict
        .arena
        .register_class(ClassDescriptor::new("Turret", StateKind::Plain).parents(&["Model"]))
        .unwrap();
    strict
        .arena
        .register_class(ClassDescriptor::new("Gadget", StateKind::Part))
        .unwrap();
    let workspace = strict.workspace;
    let error = assert_refused_unchanged(&mut strict.arena, |a| {
        a.graft(&snapshot, root, Some(workspace), ExternalRefs::Clear)
    });
    assert_eq!(
        error,
        ArenaError::Containment {
            child_class: "Turret".into(),
            parent_class: "Folder".into()
        }
    );

    // Here a gadget carries no state: the source's part state has nowhere to go.
    let mut plain = place();
    plain
        .arena
        .register_class(ClassDescriptor::new("Turret", StateKind::Plain))
        .unwrap();
    plain
        .arena
        .register_class(ClassDescriptor::new("Gadget", StateKind::Plain))
        .unwrap();
    let workspace = plain.workspace;
    let error = assert_refused_unchanged(&mut plain.arena, |a| {
        a.graft(&snapshot, root, Some(workspace), ExternalRefs::Clear)
    });
    assert_eq!(
        error,
        ArenaError::StateKindMismatch {
            class: "Gadget".into(),
            source_kind: StateKind::Part,
            destination_kind: StateKind::Plain,
        }
    );

    // Here a gadget is a service, which no copy may make.
    let mut services = place();
    services
        .arena
        .register_class(ClassDescriptor::new("Turret", StateKind::Plain))
        .unwrap();
    services
        .arena
        .register_class(ClassDescriptor::new("Gadget", StateKind::Part).service())
        .unwrap();
    let workspace = services.workspace;
    let error = assert_refused_unchanged(&mut services.arena, |a| {
        a.graft(&snapshot, root, Some(workspace), ExternalRefs::Clear)
    });
    assert!(
        matches!(error, ArenaError::NotCloneable { .. }),
        "{error:?}"
    );

    // Where the registries agree, the graft goes through and keeps every state kind.
    let mut agreeing = place();
    agreeing
        .arena
        .register_class(ClassDescriptor::new("Turret", StateKind::Plain).parents(&["Folder"]))
        .unwrap();
    agreeing
        .arena
        .register_class(ClassDescriptor::new("Gadget", StateKind::Part))
        .unwrap();
    let workspace = agreeing.workspace;
    let graft = agreeing
        .arena
        .graft(&snapshot, root, Some(workspace), ExternalRefs::Clear)
        .unwrap();
    for (_, copy) in graft.map.iter() {
        let node = agreeing.arena.get(copy).unwrap();
        let kind = agreeing
            .arena
            .descriptor(node.class())
            .unwrap()
            .state_kind();
        assert_eq!(node.state().kind(), kind);
    }
}

#[test]
fn a_stale_checkpoint_cannot_close_a_newer_batch() {
    let mut p = place();
    let outer = p.arena.checkpoint();
    let inner = p.arena.checkpoint();
    // Closing the outer batch closes the inner one: its checkpoint is stale from now on.
    p.arena.rollback(outer).unwrap();
    // Two fresh batches: the second sits where the stale one did.
    let fresh = p.arena.checkpoint();
    let nested = p.arena.checkpoint();
    let built = p.arena.create(ClassId::FOLDER, None).unwrap();
    let error = assert_refused_unchanged(&mut p.arena, |a| a.rollback(inner));
    assert_eq!(error, ArenaError::StaleCheckpoint);
    assert!(
        p.arena.is_live(built),
        "the nested batch keeps what it built"
    );
    p.arena.commit(nested).unwrap();
    assert!(p.arena.in_batch(), "the fresh batch stays open");
    p.arena.commit(fresh).unwrap();
    assert!(!p.arena.in_batch());
}

#[test]
fn a_checkpoint_from_another_arena_is_refused() {
    let mut here = place();
    let mut there = place();
    let theirs = there.arena.checkpoint();
    let ours = here.arena.checkpoint();
    let built = here.arena.create(ClassId::FOLDER, None).unwrap();
    let error = assert_refused_unchanged(&mut here.arena, |a| a.rollback(theirs.clone()));
    assert_eq!(error, ArenaError::ForeignToken);
    assert!(here.arena.in_batch() && here.arena.is_live(built));
    here.arena.commit(ours).unwrap();
    assert!(
        there.arena.in_batch(),
        "the other arena's batch is untouched"
    );
    there.arena.commit(theirs).unwrap();
    assert!(!there.arena.in_batch());
}

#[test]
fn rollback_moves_counters_forward_and_never_reissues_identities() {
    let mut p = place();
    let folder = p.arena.create(ClassId::FOLDER, Some(p.workspace)).unwrap();
    p.arena.drain().unwrap();
    let before = p.arena.revisions().clone();
    let checkpoint = p.arena.checkpoint();
    let x = p.arena.create(ClassId::PART, Some(folder)).unwrap();
    let x_guid = p.arena.get(x).unwrap().guid();
    let x_pid = p.arena.ensure_persistent_id(x).unwrap();
    let inside = p.arena.revisions().clone();
    p.arena.rollback(checkpoint).unwrap();

    // What the batch built is gone, and its id stays retired.
    assert_eq!(p.arena.node(x).unwrap_err(), ArenaError::UnknownInstance(x));
    assert_eq!(
        p.arena
            .insert_with_id(x, ClassId::FOLDER, None)
            .unwrap_err(),
        ArenaError::IdRetired(x)
    );
    assert_eq!(children(&p.arena, folder), vec![]);
    // Every revision the batch touched is newer than anything issued inside it, so a cache
    // that looked before or during the batch sees a change; untouched domains stay.
    let after = p.arena.revisions().clone();
    assert_eq!(after.clock().get(), inside.clock().get() + 1);
    for (domain, old, inner, new) in [
        (
            "topology",
            before.topology(),
            inside.topology(),
            after.topology(),
        ),
        (
            "collision",
            before.collision(),
            inside.collision(),
            after.collision(),
        ),
        (
            "parts family",
            before.family(FamilyId::PARTS),
            inside.family(FamilyId::PARTS),
            after.family(FamilyId::PARTS),
        ),
    ] {
        assert!(inner > old, "{domain} moved inside the batch");
        assert!(new > inner, "{domain} after the rollback");
    }
    assert_eq!(after.tags(), before.tags(), "tags were not touched");
    assert_eq!(after.mutation(), before.mutation(), "nothing was written");

    // Later creations get new ids, GUIDs and persistent ids.
    let y = p.arena.create(ClassId::PART, Some(folder)).unwrap();
    assert!(y.get() > x.get());
    assert_ne!(p.arena.get(y).unwrap().guid(), x_guid);
    assert_ne!(p.arena.ensure_persistent_id(y).unwrap(), x_pid);
    assert!(p.arena.get(y).unwrap().revision() > inside.clock());
}

#[test]
fn rollback_keeps_the_layout_invalidations_the_batch_made_newer() {
    let mut p = place();
    let hud = p.arena.create(ClassId::SCREEN_GUI, Some(p.game)).unwrap();
    let untouched = p.arena.create(ClassId::SCREEN_GUI, Some(p.game)).unwrap();
    let kept = p.arena.layout_revision(untouched);
    let checkpoint = p.arena.checkpoint();
    p.arena.create(ClassId::FRAME, Some(hud)).unwrap();
    let menu = p.arena.create(ClassId::SCREEN_GUI, Some(p.game)).unwrap();
    let inside = p.arena.layout_revision(hud);
    let memo_inside = p.arena.revisions().layout();
    p.arena.rollback(checkpoint).unwrap();
    assert!(
        p.arena.layout_revision(hud) > inside,
        "a layout cache that looked inside the batch must rebuild"
    );
    assert!(p.arena.revisions().layout() > memo_inside);
    assert_eq!(p.arena.layout_revision(untouched), kept);
    assert_eq!(p.arena.layout_revision(menu), strata_arena::Revision::ZERO);
}

#[test]
fn an_inner_batch_cannot_change_what_an_outer_batch_built() {
    let mut p = place();
    let outer = p.arena.checkpoint();
    let a = p.arena.create(ClassId::FOLDER, None).unwrap();
    let b = p.arena.create(ClassId::FOLDER, None).unwrap();
    let inner = p.arena.checkpoint();
    // The inner batch's rollback could not undo these, so they are refused inside it.
    assert!(matches!(
        p.arena.set_parent(b, Some(a)),
        Err(ArenaError::BatchInProgress(_))
    ));
    assert!(matches!(
        p.arena.set_name(a, "Renamed"),
        Err(ArenaError::BatchInProgress(_))
    ));
    // Building under them is construction, and the inner rollback undoes it.
    let c = p.arena.create(ClassId::FOLDER, Some(a)).unwrap();
    p.arena.rollback(inner).unwrap();
    assert_eq!(p.arena.parent(b), None);
    assert_eq!(children(&p.arena, a), vec![]);
    assert!(!p.arena.is_live(c));
    // Back in the outer batch, its own instances are writable again.
    assert!(p.arena.set_parent(b, Some(a)).unwrap());
    p.arena.rollback(outer).unwrap();
    assert!(!p.arena.is_live(a) && !p.arena.is_live(b));
}

#[test]
fn rollback_removes_an_instance_moved_under_one_built_after_it() {
    let mut p = place();
    let folder = p.arena.create(ClassId::FOLDER, Some(p.workspace)).unwrap();
    p.arena.drain().unwrap();
    let before = observe(&p.arena);
    let snapshot = p.arena.snapshot();
    let checkpoint = p.arena.checkpoint();
    let early = p.arena.create(ClassId::FOLDER, Some(folder)).unwrap();
    let sibling = p.arena.create(ClassId::FOLDER, Some(folder)).unwrap();
    let late = p.arena.create(ClassId::FOLDER, Some(folder)).unwrap();
    let leaf = p.arena.create(ClassId::ENTITY, Some(early)).unwrap();
    // The earlier instance (with its own child) now hangs under the later one.
    p.arena.set_parent(early, Some(late)).unwrap();
    p.arena.set_parent(sibling, Some(late)).unwrap();
    p.arena.rollback(checkpoint).unwrap();
    for gone in [early, sibling, late, leaf] {
        assert!(p.arena.get(gone).is_none());
        assert_eq!(p.arena.slot_of(gone), None);
    }
    assert_eq!(children(&p.arena, folder), vec![]);
    assert_eq!(p.arena.get(folder).unwrap().child_count(), 0);
    crate::common::assert_rolled_back(&p.arena, &before);
    assert_eq!(p.arena.snapshot().diff(&snapshot), SnapshotDiff::default());
    // The slots come back for reuse and the tree stays sound.
    let again = p.arena.create(ClassId::FOLDER, Some(folder)).unwrap();
    assert_eq!(children(&p.arena, folder), vec![again]);
}
