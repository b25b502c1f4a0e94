//! Clone and graft with components: rows copied with the instances, references inside the
//! copied subtree remapped to the copies (in typed fields, lists of references and orphan
//! records alike), references leaving it kept (clone) or cleared or resolved (graft), rows
//! adopted onto the destination's own definitions, and a refused copy leaving nothing.

use crate::common::fixture;
use strata::layers::store::OrphanRecord;
use strata::prelude::*;

struct Linked {
    f: crate::common::Fixture,
    link: ComponentId,
    to: FieldId,
    all: FieldId,
    root: InstanceId,
    child: InstanceId,
    outside: InstanceId,
}

/// A folder with a child, both holding `Health` and `Link` (a reference and a list of
/// references, pointing inside and outside the subtree), and an instance outside.
fn linked() -> Linked {
    let mut f = fixture(1);
    let w = &mut f.world;
    let link = w
        .define(
            ComponentDef::new("Link")
                .field(FieldDef::reference("to", RefPolicy::Clear))
                .field(FieldDef::reference_list("all", RefPolicy::Clear)),
        )
        .unwrap();
    let to = w.field(link, "to").unwrap();
    let all = w.field(link, "all").unwrap();
    let root = w.create(ClassId::FOLDER, None).unwrap();
    let child = w.create(ClassId::FOLDER, Some(root)).unwrap();
    let outside = w.create(ClassId::FOLDER, None).unwrap();
    let refs = |ids: &[InstanceId]| {
        Value::List(strata::layers::store::ListValue::from_vec(
            ids.iter().map(|id| Value::Reference(Some(*id))).collect(),
        ))
    };
    w.add(root, f.health, [(f.current, Value::Number(7.0))])
        .unwrap();
    w.add(
        root,
        link,
        [
            (to, Value::Reference(Some(child))),
            (all, refs(&[child, outside])),
        ],
    )
    .unwrap();
    w.add(
        child,
        link,
        [(to, Value::Reference(Some(outside))), (all, refs(&[root]))],
    )
    .unwrap();
    Linked {
        f,
        link,
        to,
        all,
        root,
        child,
        outside,
    }
}

fn list_of(value: Value) -> Vec<Option<InstanceId>> {
    match value {
        Value::List(list) => list
            .as_slice()
            .iter()
            .map(|v| match v {
                Value::Reference(r) => *r,
                other => panic!("{other:?}"),
            })
            .collect(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_clone_copies_rows_and_remaps_references_inside_the_subtree() {
    let mut l = linked();
    let w = &mut l.f.world;
    let copy = w.clone_subtree(l.root, None).unwrap();
    let copy_child = w.children(copy).unwrap()[0];
    assert_eq!(w.get::<f64>(copy, l.f.health, l.f.current).unwrap(), 7.0);
    assert_eq!(
        w.get_value(copy, l.link, l.to).unwrap(),
        Value::Reference(Some(copy_child)),
        "inside: to the copy"
    );
    assert_eq!(
        list_of(w.get_value(copy, l.link, l.all).unwrap()),
        [Some(copy_child), Some(l.outside)],
        "a list: inside remapped, outside kept"
    );
    assert_eq!(
        w.get_value(copy_child, l.link, l.to).unwrap(),
        Value::Reference(Some(l.outside)),
        "outside: kept on clone"
    );
    assert_eq!(
        list_of(w.get_value(copy_child, l.link, l.all).unwrap()),
        [Some(copy)]
    );
    // The originals are untouched.
    assert_eq!(
        w.get_value(l.root, l.link, l.to).unwrap(),
        Value::Reference(Some(l.child))
    );
    // Destroying the clone's target clears the clone's reference, through the index.
    w.destroy(copy_child).unwrap();
    assert_eq!(
        w.get_value(copy, l.link, l.to).unwrap(),
        Value::Reference(None)
    );
    assert_eq!(
        w.get_value(l.root, l.link, l.to).unwrap(),
        Value::Reference(Some(l.child))
    );
}

#[test]
fn a_clone_copies_orphan_records_with_their_references() {
    let mut l = linked();
    let w = &mut l.f.world;
    // Save and load the world without defining `Link`: its rows come back as orphans.
    let mut file = Vec::new();
    w.save(&mut file).unwrap();
    let mut loaded = World::load_with_threads(file.as_slice(), 1).unwrap();
    assert!(loaded.component("Link").is_err());
    let copy = loaded.clone_subtree(l.root, None).unwrap();
    let copy_child = loaded.children(copy).unwrap()[0];
    let records: Vec<&OrphanRecord> = loaded
        .store()
        .orphans()
        .of(copy)
        .iter()
        .filter(|r| &*r.component == "Link")
        .collect();
    assert_eq!(records.len(), 1);
    assert_eq!(
        records[0].field("to"),
        Some(&Value::Reference(Some(copy_child)))
    );
    // Defining the component adopts the copies' records too, references remapped.
    let link = loaded
        .define(
            ComponentDef::new("Link")
                .field(FieldDef::reference("to", RefPolicy::Clear))
                .field(FieldDef::reference_list("all", RefPolicy::Clear)),
        )
        .unwrap();
    let to = loaded.field(link, "to").unwrap();
    assert_eq!(
        loaded.get_value(copy, link, to).unwrap(),
        Value::Reference(Some(copy_child))
    );
    assert_eq!(
        loaded.get_value(l.root, link, to).unwrap(),
        Value::Reference(Some(l.child))
    );
}

#[test]
fn a_graft_brings_rows_onto_the_destinations_definitions() {
    let l = linked();
    let mut dest = World::with_threads(1).unwrap();
    // The destination defines Health with another default and an extra field; no Link.
    let health = dest
        .define(
            ComponentDef::new("Health")
                .field(FieldDef::number("current", 1.0))
                .field(FieldDef::integer("armor", 3)),
        )
        .unwrap();
    let current = dest.field(health, "current").unwrap();
    let armor = dest.field(health, "armor").unwrap();
    let game = dest.game();
    let copy = dest
        .graft_from(l.f.world.scene(), l.root, Some(game), ExternalRefs::Clear)
        .unwrap();
    assert_eq!(
        dest.get::<f64>(copy, health, current).unwrap(),
        7.0,
        "adopted by name"
    );
    assert_eq!(
        dest.get::<i64>(copy, health, armor).unwrap(),
        3,
        "missing field defaulted"
    );
    // Link is not defined here: its rows wait as orphans, references remapped or cleared.
    let copy_child = dest.children(copy).unwrap()[0];
    let records = dest.store().orphans().of(copy_child);
    assert_eq!(
        records[0].field("to"),
        Some(&Value::Reference(None)),
        "external: cleared"
    );
    let link = dest
        .define(
            ComponentDef::new("Link")
                .field(FieldDef::reference("to", RefPolicy::Clear))
                .field(FieldDef::reference_list("all", RefPolicy::Clear)),
        )
        .unwrap();
    let all = dest.field(link, "all").unwrap();
    assert_eq!(
        list_of(dest.get_value(copy, link, all).unwrap()),
        [Some(copy_child), None]
    );
}

#[test]
fn a_graft_resolves_external_references_by_persistent_id() {
    let mut l = linked();
    let source = &mut l.f.world;
    let pid = source.ensure_persistent_id(l.outside).unwrap();
    let mut dest = World::with_threads(1).unwrap();
    let mirror = dest.create(ClassId::FOLDER, None).unwrap();
    dest.set_persistent_id(mirror, Some(pid)).unwrap();
    let copy = dest
        .graft_from(
            source.scene(),
            l.child,
            None,
            ExternalRefs::ResolveByPersistentId,
        )
        .unwrap();
    let record = &dest.store().orphans().of(copy)[0];
    assert_eq!(record.field("to"), Some(&Value::Reference(Some(mirror))));
}

#[test]
fn a_refused_copy_leaves_nothing() {
    let mut l = linked();
    let w = &mut l.f.world;
    let hash = w.state_hash();
    let live = w.arena().live_count();
    let workspace = w.workspace();
    // A copy under a class that refuses folders? Copying a service is refused.
    assert!(w.clone_subtree(workspace, None).is_err());
    assert!(
        w.clone_subtree(InstanceId::new(999_999).unwrap(), None)
            .is_err()
    );
    assert_eq!(w.arena().live_count(), live);
    assert_eq!(w.state_hash(), hash);
}
