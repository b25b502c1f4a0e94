//! References from Luau: a reference field written from a script (a component added with
//! values, a handle written) refuses an instance that is not live, as the facade does, so a
//! world scripts built always saves to bytes that load.

use crate::common::{script_error, scripted};
use strata::prelude::*;
use strata_script::prelude::*;

/// The world's save, which must load.
fn saved(world: &World) -> Vec<u8> {
    let mut bytes = Vec::new();
    world.save(&mut bytes).unwrap();
    World::load(bytes.as_slice()).expect("every world saves to bytes that load");
    bytes
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
fn luau_defined_reference_fields_refuse_instances_that_are_not_live() {
    let mut world = scripted(1);
    let workspace = world.workspace();
    let holder = world.create(ClassId::PART, Some(workspace)).unwrap();
    let dead = world.create(ClassId::PART, Some(workspace)).unwrap();
    world.destroy(dead).unwrap();
    refused_naming(
        world.add_named(holder, "Target", &[("of", Value::Reference(Some(dead)))]),
        dead,
    );
    // From Luau: AddComponent with a dead instance, and a handle write of one.
    let error = script_error(world.run_script(
        "refs.luau",
        "local gone = Instance.new('Part', world.workspace)
        gone:Destroy()
        local holder = Instance.new('Part', world.workspace)
        holder:AddComponent(Target, { of = gone })",
    ));
    assert_eq!(error.line, Some(4), "{error}");
    assert!(error.message.contains("not live"), "{error}");
    let error = script_error(world.run_script(
        "refs.luau",
        "local gone = Instance.new('Part', world.workspace)
        local holder = Instance.new('Part', world.workspace)
        local t = holder:AddComponent(Target, { of = gone })
        gone:Destroy()
        t.of = gone",
    ));
    assert_eq!(error.line, Some(5), "{error}");
    assert!(error.message.contains("not live"), "{error}");
    saved(&world);
}
