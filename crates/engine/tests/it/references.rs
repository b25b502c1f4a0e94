//! References name live instances: every way a reference enters a world (component values
//! added, written, set in bulk or recorded by a parallel system; attributes; built-in state;
//! scripts) refuses one to an instance that is not live, changing nothing, and a destruction
//! never leaves one behind, so a world always saves to bytes that load.

use strata::layers::arena::StateMut;
use strata::layers::store::{ListValue, StoreError};
use strata::prelude::*;

/// A world with `Link { to = ref, many = list of refs }`, a live instance, a destroyed one and
/// an id never issued.
struct Links {
    world: World,
    link: ComponentId,
    to: FieldId,
    many: FieldId,
    live: InstanceId,
    dead: InstanceId,
    never: InstanceId,
}

fn links() -> Links {
    let mut world = World::with_seed(1, 5).unwrap();
    let link = world
        .define(
            ComponentDef::new("Link")
                .field(FieldDef::reference("to", RefPolicy::Clear))
                .field(FieldDef::reference_list("many", RefPolicy::Clear)),
        )
        .unwrap();
    let to = world.field(link, "to").unwrap();
    let many = world.field(link, "many").unwrap();
    let workspace = world.workspace();
    let live = world.create(ClassId::PART, Some(workspace)).unwrap();
    let dead = world.create(ClassId::PART, Some(workspace)).unwrap();
    world.destroy(dead).unwrap();
    Links {
        world,
        link,
        to,
        many,
        live,
        dead,
        never: InstanceId::new(123_456).unwrap(),
    }
}

/// The world's save, which must load.
fn saved(world: &World) -> Vec<u8> {
    let mut bytes = Vec::new();
    world.save(&mut bytes).unwrap();
    World::load(bytes.as_slice()).expect("every world saves to bytes that load");
    bytes
}

fn list(ids: &[InstanceId]) -> Value {
    Value::List(ListValue::from_vec(
        ids.iter().map(|id| Value::Reference(Some(*id))).collect(),
    ))
}

/// Asserts a refusal names the target that is not live.
#[track_caller]
fn refused_naming(result: Result<impl std::fmt::Debug, WorldError>, target: InstanceId) {
    let error = result.expect_err("a reference to an instance that is not live is refused");
    let text = error.to_string();
    assert!(text.contains(&target.to_string()), "{text}");
    assert!(text.contains("not live"), "{text}");
}

#[test]
fn adding_or_writing_a_reference_to_an_instance_that_is_not_live_is_refused() {
    let mut l = links();
    let holder = l.world.create(ClassId::PART, None).unwrap();
    for target in [l.dead, l.never] {
        let before = saved(&l.world);
        refused_naming(
            l.world
                .add(holder, l.link, [(l.to, Value::Reference(Some(target)))]),
            target,
        );
        refused_naming(
            l.world
                .add(holder, l.link, [(l.many, list(&[l.live, target]))]),
            target,
        );
        refused_naming(
            l.world
                .add_named(holder, "Link", &[("to", Value::Reference(Some(target)))]),
            target,
        );
        assert_eq!(saved(&l.world), before, "a refusal changes nothing");
    }
    l.world.add(holder, l.link, []).unwrap();
    for target in [l.dead, l.never] {
        let before = saved(&l.world);
        refused_naming(
            l.world
                .write_value(holder, l.link, l.to, Value::Reference(Some(target))),
            target,
        );
        refused_naming(
            l.world
                .write::<Option<InstanceId>>(holder, l.link, l.to, Some(target)),
            target,
        );
        refused_naming(
            l.world
                .write_value(holder, l.link, l.many, list(&[l.live, target])),
            target,
        );
        refused_naming(
            l.world
                .write_named(holder, "Link", "to", Value::Reference(Some(target))),
            target,
        );
        assert_eq!(saved(&l.world), before);
    }
    // Live targets (and none) are taken.
    l.world
        .write_value(holder, l.link, l.many, list(&[l.live]))
        .unwrap();
    l.world
        .write_value(holder, l.link, l.to, Value::Reference(None))
        .unwrap();
    saved(&l.world);
}

#[test]
fn attributes_and_built_in_state_refuse_instances_that_are_not_live() {
    let mut l = links();
    let workspace = l.world.workspace();
    let model = l.world.create(ClassId::MODEL, None).unwrap();
    let before = saved(&l.world);
    for target in [l.dead, l.never] {
        refused_naming(
            l.world
                .set_attribute(workspace, "focus", Some(AttrValue::Reference(Some(target)))),
            target,
        );
        let edited = l.world.edit(model, |node| {
            if let StateMut::Model(m) = node.state_mut() {
                m.primary_part = Some(target);
            }
        });
        refused_naming(edited, target);
        let mut state = l.world.arena().get(model).unwrap().data().state.clone();
        if let BuiltinState::Model(m) = &mut state {
            m.primary_part = Some(target);
        }
        refused_naming(l.world.set_state(model, state), target);
        assert_eq!(saved(&l.world), before, "a refusal changes nothing");
    }
    let BuiltinState::Model(state) = &l.world.arena().get(model).unwrap().data().state else {
        panic!("a model keeps its state");
    };
    assert_eq!(state.primary_part, None);
    assert_eq!(l.world.attribute(workspace, "focus").unwrap(), None);
}

#[test]
fn a_parallel_system_cannot_record_a_reference_to_an_instance_that_is_not_live() {
    let mut l = links();
    let holder = l.world.create(ClassId::PART, None).unwrap();
    l.world.add(holder, l.link, []).unwrap();
    let (link, to, dead) = (l.link, l.to, l.dead);
    l.world
        .add_system(
            SystemSpec::parallel("aim", move |ctx: &mut ParCtx<'_>| {
                ctx.write_value(holder, link, to, Value::Reference(Some(dead)))?;
                Ok(())
            })
            .writes(link, to),
        )
        .unwrap();
    let events = l.world.step(0.1).unwrap();
    assert_eq!(events.errors.len(), 1);
    assert!(
        events.errors[0].1.to_string().contains("not live"),
        "{}",
        events.errors[0].1
    );
    assert_eq!(
        l.world.get_value(holder, l.link, l.to).unwrap(),
        Value::Reference(None)
    );
    saved(&l.world);
}

#[test]
fn a_staged_reference_to_an_instance_that_is_not_live_is_refused() {
    let mut l = links();
    let holder = l.world.create(ClassId::PART, None).unwrap();
    let at = l.world.instance_ref(holder).unwrap();
    let mut stage = l.world.stage();
    stage.set(&[at], l.link, vec![(l.to, Value::Reference(Some(l.dead)))]);
    let error = l.world.commit(&mut stage).unwrap_err();
    assert!(error.to_string().contains("not live"), "{error}");
    assert!(!l.world.has(holder, l.link));
    let (link, to, dead) = (l.link, l.to, l.dead);
    let mut stage = l.world.stage();
    l.world
        .stage_spawn(&mut stage, 2, ClassId::PART, None, &[link], move |rows| {
            rows.set_value(link, 1, to, Value::Reference(Some(dead)))?;
            Ok(())
        })
        .unwrap();
    let error = l.world.commit(&mut stage).unwrap_err();
    assert!(error.to_string().contains("not live"), "{error}");
    // A spawned row may refer to another row of the same spawn.
    let mut stage = l.world.stage();
    let ticket = l
        .world
        .stage_spawn(&mut stage, 2, ClassId::PART, None, &[link], move |rows| {
            let first = rows.id(0);
            rows.set_value(link, 1, to, Value::Reference(first))?;
            Ok(())
        })
        .unwrap();
    l.world.commit(&mut stage).unwrap();
    let second = InstanceId::new(ticket.first().get() + 1).unwrap();
    assert_eq!(
        l.world.get_value(second, link, to).unwrap(),
        Value::Reference(Some(ticket.first()))
    );
    saved(&l.world);
}

#[test]
fn a_destroy_holder_reference_whose_holder_cannot_be_destroyed_is_cleared_and_reported() {
    let mut l = links();
    let bond = l
        .world
        .define(
            ComponentDef::new("Bond")
                .field(FieldDef::reference("to", RefPolicy::DestroyHolder))
                .field(FieldDef::reference_list("all", RefPolicy::DestroyHolder)),
        )
        .unwrap();
    let to = l.world.field(bond, "to").unwrap();
    let all = l.world.field(bond, "all").unwrap();
    let workspace = l.world.workspace();
    let locked_parent = l.world.create(ClassId::FOLDER, Some(workspace)).unwrap();
    let locked = l.world.create(ClassId::PART, Some(locked_parent)).unwrap();
    l.world.set_parent_locked(locked, true).unwrap();
    let keeper = l.world.create(ClassId::FOLDER, Some(workspace)).unwrap();
    let pinned_child = l.world.create(ClassId::PART, Some(keeper)).unwrap();
    l.world.set_parent_locked(pinned_child, true).unwrap();
    // Holders the arena will not destroy: a service, a locked instance, and the root of a
    // subtree holding a locked instance.
    for holder in [workspace, locked, keeper] {
        let victim = l.world.create(ClassId::PART, None).unwrap();
        let other = l.world.create(ClassId::PART, None).unwrap();
        l.world
            .add(
                holder,
                bond,
                [
                    (to, Value::Reference(Some(victim))),
                    (all, list(&[victim, other, victim])),
                ],
            )
            .unwrap();
        let report = l.world.destroy(victim).unwrap();
        assert!(l.world.is_live(holder));
        assert_eq!(
            l.world.get_value(holder, bond, to).unwrap(),
            Value::Reference(None),
            "the reference is cleared"
        );
        assert_eq!(
            l.world.get_value(holder, bond, all).unwrap(),
            list(&[other])
        );
        assert_eq!(
            report.cleared,
            [(holder, bond, to), (holder, bond, all)],
            "each field cleared is reported once"
        );
        saved(&l.world);
        l.world.remove(holder, bond).unwrap();
    }
}

#[test]
fn a_refused_write_names_the_component_and_field() {
    let mut l = links();
    let holder = l.world.create(ClassId::PART, None).unwrap();
    let error = l
        .world
        .add(holder, l.link, [(l.to, Value::Reference(Some(l.dead)))])
        .unwrap_err();
    assert!(
        matches!(
            &error,
            WorldError::Store(StoreError::NotLiveReference { .. })
        ),
        "{error:?}"
    );
    let text = error.to_string();
    assert!(text.contains("Link.to"), "{text}");
}

#[test]
fn a_typed_insert_refuses_a_reference_to_an_instance_that_is_not_live_and_keeps_the_default() {
    let mut l = links();
    let holder = l.world.create(ClassId::PART, None).unwrap();
    for target in [l.dead, l.never] {
        let other = l.world.create(ClassId::PART, None).unwrap();
        let mut row = l.world.insert(other, l.link).unwrap();
        refused_naming(row.set::<Option<InstanceId>>(l.to, Some(target)), target);
        drop(row);
        assert_eq!(
            l.world
                .get::<Option<InstanceId>>(other, l.link, l.to)
                .unwrap(),
            None,
            "the refused reference was not stored"
        );
        saved(&l.world);
    }
    l.world
        .insert(holder, l.link)
        .unwrap()
        .set::<Option<InstanceId>>(l.to, Some(l.live))
        .unwrap();
    assert_eq!(
        l.world
            .get::<Option<InstanceId>>(holder, l.link, l.to)
            .unwrap(),
        Some(l.live)
    );
    // The reverse index took the reference: destroying its target clears it.
    l.world.destroy(l.live).unwrap();
    assert_eq!(
        l.world
            .get::<Option<InstanceId>>(holder, l.link, l.to)
            .unwrap(),
        None
    );
    saved(&l.world);
}
