//! Copy-on-write snapshots, diffs, family indexes and revision domains.

use std::sync::Arc;

use crate::common::place;
use strata_arena::{
    AttrValue, BuiltinState, ClassId, FamilyId, LightState, Revision, StateMut, Transform, Vec3,
};

#[test]
fn a_snapshot_never_changes_after_later_writes() {
    let mut p = place();
    let part = p.arena.create(ClassId::PART, Some(p.workspace)).unwrap();
    let folder = p.arena.create(ClassId::FOLDER, Some(p.workspace)).unwrap();
    p.arena.set_name(part, "Before").unwrap();
    let snapshot = p.arena.snapshot();
    let revisions = snapshot.revisions().clone();

    p.arena.set_name(part, "After").unwrap();
    p.arena
        .set_part_size(part, Vec3::new(9.0, 9.0, 9.0))
        .unwrap();
    p.arena.set_parent(part, Some(folder)).unwrap();
    p.arena.destroy(folder).unwrap();
    let late = p.arena.create(ClassId::FOLDER, Some(p.workspace)).unwrap();
    p.arena.drain().unwrap();
    p.arena.drain().unwrap();

    let node = snapshot.get(part).unwrap();
    assert_eq!(node.name(), "Before");
    assert_eq!(node.parent(), Some(p.workspace));
    assert!(matches!(node.state(), BuiltinState::Part(s) if s.size != Vec3::new(9.0, 9.0, 9.0)));
    assert!(snapshot.is_live(folder));
    assert!(snapshot.get(late).is_none());
    assert_eq!(snapshot.revisions(), &revisions);
    assert_eq!(
        snapshot.children(p.workspace).collect::<Vec<_>>(),
        vec![part, folder]
    );
}

#[test]
fn a_write_privatises_only_the_written_node() {
    let mut p = place();
    let parts: Vec<_> = (0..3000)
        .map(|_| p.arena.create(ClassId::PART, None).unwrap())
        .collect();
    p.arena.set_name(parts[0], "Named").unwrap();
    let before = p.arena.snapshot();
    p.arena.set_name(parts[1500], "Edited").unwrap();
    let diff = p.arena.snapshot().diff(&before);
    assert_eq!(diff.changed, vec![parts[1500]]);
    assert!(diff.added.is_empty() && diff.removed.is_empty());

    // Restoring the old value still counts as a possible change: identity, not equality.
    p.arena.set_name(parts[1500], "Part").unwrap();
    assert_eq!(p.arena.snapshot().diff(&before).changed, vec![parts[1500]]);

    // The data of unwritten nodes is literally the same allocation in both; the written
    // node's was copied.
    let data = |s: &strata_arena::Snapshot, id| std::ptr::from_ref(s.get(id).unwrap().data());
    assert_eq!(data(&before, parts[0]), data(&p.arena, parts[0]));
    assert_ne!(data(&before, parts[1500]), data(&p.arena, parts[1500]));
}

/// A diff lists a node whatever reached it, including writes that leave its state revision
/// alone (links, the parent lock, tags, persistent ids), and only that node.
#[test]
fn diff_reports_every_node_a_write_reached() {
    #[track_caller]
    fn check(
        p: &mut crate::common::Place,
        write: impl FnOnce(&mut strata_arena::Arena),
        expected: &[strata_arena::InstanceId],
    ) {
        let before = p.arena.snapshot();
        write(&mut p.arena);
        let diff = p.arena.snapshot().diff(&before);
        assert_eq!(diff.changed, expected);
    }
    let mut p = place();
    let folder = p.arena.create(ClassId::FOLDER, None).unwrap();
    let first = p.arena.create(ClassId::ENTITY, Some(folder)).unwrap();
    let loose = p.arena.create(ClassId::ENTITY, None).unwrap();
    check(
        &mut p,
        |a| {
            a.set_parent_locked(loose, true).unwrap();
        },
        &[loose],
    );
    check(
        &mut p,
        |a| {
            a.add_tag(loose, "Marked").unwrap();
        },
        &[loose],
    );
    check(
        &mut p,
        |a| {
            a.remove_tag(loose, "Marked").unwrap();
        },
        &[loose],
    );
    check(
        &mut p,
        |a| {
            a.ensure_persistent_id(first).unwrap();
        },
        &[first],
    );
    check(
        &mut p,
        |a| {
            a.set_persistent_id(first, None).unwrap();
        },
        &[first],
    );
    // A new last child rewrites its parent's and its previous sibling's links.
    let mut second = None;
    check(
        &mut p,
        |a| {
            second = Some(a.create(ClassId::ENTITY, Some(folder)).unwrap());
        },
        &[folder, first],
    );
    check(
        &mut p,
        |a| {
            a.set_parent(second.unwrap(), None).unwrap();
        },
        &[folder, first, second.unwrap()],
    );
}

#[test]
fn diff_reports_instances_live_in_only_one_snapshot() {
    let mut p = place();
    let kept = p.arena.create(ClassId::FOLDER, None).unwrap();
    let doomed = p.arena.create(ClassId::FOLDER, None).unwrap();
    let before = p.arena.snapshot();
    p.arena.destroy(doomed).unwrap();
    let born = p.arena.create(ClassId::FOLDER, None).unwrap();
    let diff = p.arena.snapshot().diff(&before);
    assert_eq!(diff.added, vec![born]);
    assert_eq!(diff.removed, vec![doomed]);
    assert!(!diff.changed.contains(&kept));
}

#[test]
fn generic_access_marks_written_even_without_a_change() {
    let mut p = place();
    let part = p.arena.create(ClassId::PART, Some(p.workspace)).unwrap();
    let node_rev = p.arena.get(part).unwrap().revision();
    let mutation = p.arena.revisions().mutation();
    let cursor = p.arena.part_log().head();
    let _ = p.arena.node_mut(part).unwrap();
    assert!(p.arena.get(part).unwrap().revision() > node_rev);
    assert!(p.arena.revisions().mutation() > mutation);
    assert_eq!(p.arena.part_writes_since(cursor).unwrap().count(), 1);
}

#[test]
fn specialised_setters_skip_equal_writes() {
    let mut p = place();
    let part = p.arena.create(ClassId::PART, Some(p.workspace)).unwrap();
    let light = p.arena.create(ClassId::POINT_LIGHT, Some(part)).unwrap();
    let def = p.arena.create(ClassId::COMPONENT_DEFINITION, None).unwrap();
    p.arena.set_name(part, "P").unwrap();
    p.arena
        .set_attribute(part, "hp", Some(AttrValue::Number(5.0)))
        .unwrap();
    p.arena
        .set_part_transform(part, Transform::from_position(Vec3::ONE))
        .unwrap();
    p.arena.set_light_brightness(light, 3.0).unwrap();
    p.arena
        .set_definition_source(def, "return component {}")
        .unwrap();
    let state = p.arena.get(light).unwrap().state().clone();

    let revisions = p.arena.revisions().clone();
    let snapshot = p.arena.snapshot();
    let part_head = p.arena.part_log().head();
    assert!(!p.arena.set_name(part, "P").unwrap());
    assert!(
        !p.arena
            .set_attribute(part, "hp", Some(AttrValue::Number(5.0)))
            .unwrap()
    );
    assert!(!p.arena.set_attribute(part, "missing", None).unwrap());
    assert!(
        !p.arena
            .set_part_transform(part, Transform::from_position(Vec3::ONE))
            .unwrap()
    );
    assert!(!p.arena.set_light_brightness(light, 3.0).unwrap());
    assert!(
        !p.arena
            .set_definition_source(def, "return component {}")
            .unwrap()
    );
    assert!(!p.arena.set_state(light, state).unwrap());
    assert_eq!(p.arena.revisions(), &revisions);
    assert_eq!(p.arena.part_log().head(), part_head);
    assert_eq!(p.arena.snapshot().diff(&snapshot), Default::default());
}

#[test]
fn state_kind_is_checked() {
    let mut p = place();
    let folder = p.arena.create(ClassId::FOLDER, None).unwrap();
    let error = crate::common::assert_refused_unchanged(&mut p.arena, |a| {
        a.set_part_transform(folder, Transform::IDENTITY)
    });
    assert!(matches!(error, strata_arena::ArenaError::WrongState { .. }));
    let error = crate::common::assert_refused_unchanged(&mut p.arena, |a| {
        a.set_state(folder, BuiltinState::Light(LightState::default()))
    });
    assert!(matches!(error, strata_arena::ArenaError::WrongState { .. }));
}

#[test]
fn revision_domains_move_independently() {
    let mut p = place();
    let part = p.arena.create(ClassId::PART, Some(p.workspace)).unwrap();
    let stored = p.arena.create(ClassId::PART, None).unwrap();
    let light = p.arena.create(ClassId::POINT_LIGHT, Some(part)).unwrap();
    let anim = p.arena.create(ClassId::ANIMATION, None).unwrap();
    let r = |p: &crate::common::Place| p.arena.revisions().clone();

    let before = r(&p);
    p.arena.set_name(part, "Renamed").unwrap();
    let after = r(&p);
    assert!(after.mutation() > before.mutation());
    assert_eq!(after.topology(), before.topology());
    assert_eq!(
        after.collision(),
        before.collision(),
        "names do not touch collision"
    );
    assert!(after.family(FamilyId::PARTS) > before.family(FamilyId::PARTS));
    assert_eq!(
        after.family(FamilyId::LIGHTS),
        before.family(FamilyId::LIGHTS)
    );

    let before = r(&p);
    p.arena.set_light_brightness(light, 2.0).unwrap();
    let after = r(&p);
    assert!(after.family(FamilyId::LIGHTS) > before.family(FamilyId::LIGHTS));
    assert_eq!(
        after.family(FamilyId::SOUNDS),
        before.family(FamilyId::SOUNDS)
    );
    assert_eq!(after.collision(), before.collision());

    let before = r(&p);
    p.arena.set_part_size(part, Vec3::ONE).unwrap();
    assert!(
        r(&p).collision() > before.collision(),
        "a part in the world"
    );
    let before = r(&p);
    p.arena.set_part_size(stored, Vec3::ONE).unwrap();
    assert_eq!(
        r(&p).collision(),
        before.collision(),
        "a part outside the world"
    );

    let before = r(&p);
    let _ = p.arena.node_mut(anim).unwrap();
    assert!(r(&p).animation() > before.animation());

    let before = r(&p);
    p.arena.add_tag(part, "Hot").unwrap();
    let after = r(&p);
    assert!(after.tags() > before.tags());
    assert_eq!(after.mutation(), before.mutation());

    let before = r(&p);
    p.arena.create(ClassId::FOLDER, None).unwrap();
    let after = r(&p);
    assert!(after.topology() > before.topology());
    assert_eq!(after.mutation(), before.mutation());
    assert!(after.clock() >= after.topology() && after.clock() > Revision::ZERO);
}

#[test]
fn family_indexes_are_shared_until_membership_changes() {
    let mut p = place();
    let a = p.arena.create(ClassId::PART, Some(p.workspace)).unwrap();
    let light = p.arena.create(ClassId::POINT_LIGHT, Some(a)).unwrap();
    let parts = p.arena.family_members(FamilyId::PARTS);
    assert_eq!(&*parts, &[a]);
    assert_eq!(&*p.arena.family_members(FamilyId::LIGHTS), &[light]);
    assert!(
        Arc::ptr_eq(&parts, &p.arena.family_members(FamilyId::PARTS)),
        "shared"
    );

    // Writes and moves keep the list; a snapshot shares it too.
    p.arena.set_part_size(a, Vec3::ONE).unwrap();
    p.arena.set_parent(a, None).unwrap();
    assert!(Arc::ptr_eq(
        &parts,
        &p.arena.family_members(FamilyId::PARTS)
    ));
    assert!(Arc::ptr_eq(
        &parts,
        &p.arena.snapshot().family_members(FamilyId::PARTS)
    ));

    let b = p.arena.create(ClassId::MODEL, None).unwrap();
    let rebuilt = p.arena.family_members(FamilyId::PARTS);
    assert_eq!(&*rebuilt, &[a, b]);
    assert_eq!(&*parts, &[a], "readers holding the old list keep it");
    p.arena.destroy(a).unwrap();
    assert_eq!(&*p.arena.family_members(FamilyId::PARTS), &[b]);
    assert_eq!(
        &*p.arena.family_members(FamilyId::LIGHTS),
        &[] as &[strata_arena::InstanceId]
    );
}

#[test]
fn tags_have_their_own_index_and_revision() {
    let mut p = place();
    let a = p.arena.create(ClassId::ENTITY, None).unwrap();
    let b = p.arena.create(ClassId::ENTITY, None).unwrap();
    assert!(p.arena.add_tag(b, "Enemy").unwrap());
    assert!(p.arena.add_tag(a, "Enemy").unwrap());
    assert!(!p.arena.add_tag(a, "Enemy").unwrap());
    assert_eq!(p.arena.tagged("Enemy").collect::<Vec<_>>(), vec![a, b]);
    assert_eq!(p.arena.tag_count("Enemy"), 2);
    let snapshot = p.arena.snapshot();
    let rev = p.arena.revisions().tags();
    assert!(p.arena.remove_tag(a, "Enemy").unwrap());
    assert!(!p.arena.remove_tag(a, "Enemy").unwrap());
    assert!(p.arena.revisions().tags() > rev);
    assert_eq!(p.arena.tagged("Enemy").collect::<Vec<_>>(), vec![b]);
    assert_eq!(
        snapshot.tag_count("Enemy"),
        2,
        "snapshots keep their tag sets"
    );
    assert_eq!(p.arena.get(b).unwrap().tags().len(), 1);
}

#[test]
fn generic_access_keeps_the_state_kind_of_the_class() {
    let mut p = place();
    let part = p.arena.create(ClassId::PART, Some(p.workspace)).unwrap();
    let folder = p.arena.create(ClassId::FOLDER, None).unwrap();
    // Generic access writes the fields of the struct the class carries, never the variant.
    match p.arena.node_mut(part).unwrap().state_mut() {
        StateMut::Part(state) => state.anchored = true,
        other => panic!("a part offers {other:?}"),
    }
    let mut generic = p.arena.node_mut(folder).unwrap();
    assert!(matches!(generic.state_mut(), StateMut::Plain));
    *generic.name_mut() = Arc::from("Renamed");
    for (id, class) in [(part, ClassId::PART), (folder, ClassId::FOLDER)] {
        let kind = p.arena.classes().get(class).unwrap().state_kind();
        assert_eq!(p.arena.get(id).unwrap().state().kind(), kind);
    }
    // A specialised setter that reports a change has made it.
    let moved = Transform::from_position(Vec3::new(0.0, 9.0, 0.0));
    assert!(p.arena.set_part_transform(part, moved).unwrap());
    match p.arena.get(part).unwrap().state() {
        BuiltinState::Part(state) => assert_eq!(state.transform, moved),
        other => panic!("a part carries {other:?}"),
    }
}
