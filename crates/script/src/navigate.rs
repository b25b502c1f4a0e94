//! Finding one's way around the hierarchy from Luau: an instance's descendants, classes,
//! ancestors, attributes, tags and persistent id, an instance by id or by persistent id, and
//! the error for a member an instance, the world, a query or a component does not have.
//!
//! Invariant: everything here reads through [`access`], so it sees what the call's other API
//! calls see (the scene in a serial call, the established state in a parallel one) and changes
//! nothing, except `GetPersistentId` assigning an id in a serial call; a lookup of what is not
//! live answers nil, and a member that does not exist is an error naming it and what was asked.

use mlua::{AnyUserData, Lua, Table, Value as LuaValue};
use strata_arena::InstanceId;

use super::access::{Access, lua_error};
use super::api::{access, attribute_to_lua, instance_array, wrap_instance};
use super::args;
use super::convert::kind;
use super::errors::instance;
use super::types::{INSTANCE_METHODS, INSTANCE_PROPERTIES};
use strata::WorldError;

/// `inst:GetDescendants()`: every descendant, in pre-order (a child before its children).
pub(crate) fn descendants(lua: &Lua, id: InstanceId) -> mlua::Result<Table> {
    let ids: Vec<InstanceId> = access(lua, |_, a| {
        a.arena().node(id).map_err(lua_error)?;
        Ok(a.arena().descendants(id).collect())
    })?;
    instance_array(lua, &ids)
}

/// `inst:IsA(className)`: whether the instance is of that class (every instance is an
/// `Instance`); a name no class has is an error, so a typo is not a silent `false`.
pub(crate) fn is_a(lua: &Lua, id: InstanceId, class: &LuaValue) -> mlua::Result<bool> {
    let class = args::string(class, "IsA's class name")?;
    access(lua, |_, a| {
        let node = a.arena().node(id).map_err(lua_error)?;
        if class == "Instance" {
            return Ok(true);
        }
        match a.arena().classes().class_id(&class) {
            Some(asked) => Ok(node.class() == asked),
            None => Err(lua_error(WorldError::UnknownClass(class))),
        }
    })
}

/// `inst:FindFirstAncestor(name)`: the nearest ancestor named `name`, or nil.
pub(crate) fn find_first_ancestor(
    lua: &Lua,
    id: InstanceId,
    name: &LuaValue,
) -> mlua::Result<Option<AnyUserData>> {
    let name = args::string(name, "FindFirstAncestor's name")?;
    let found = access(lua, |_, a| {
        let arena = a.arena();
        arena.node(id).map_err(lua_error)?;
        Ok(arena
            .ancestors(id)
            .find(|ancestor| arena.get(*ancestor).is_some_and(|n| n.name() == name)))
    })?;
    found.map(|id| wrap_instance(lua, id)).transpose()
}

/// `inst:GetAttributes()`: a table of every attribute by name.
pub(crate) fn attributes(lua: &Lua, id: InstanceId) -> mlua::Result<Table> {
    access(lua, |lua, a| {
        let node = a.arena().node(id).map_err(lua_error)?;
        let table = lua.create_table()?;
        for (name, value) in node.attributes().iter() {
            table.raw_set(name, attribute_to_lua(lua, value)?)?;
        }
        Ok(table)
    })
}

/// `inst:GetTags()`: the instance's tags, sorted.
pub(crate) fn tags(lua: &Lua, id: InstanceId) -> mlua::Result<Table> {
    let mut tags: Vec<String> = access(lua, |_, a| {
        let node = a.arena().node(id).map_err(lua_error)?;
        Ok(node.tags().iter().map(|t| t.to_string()).collect())
    })?;
    tags.sort();
    lua.create_sequence_from(tags)
}

/// `inst:GetPersistentId()`: the instance's persistent id as 16 hexadecimal digits, assigned
/// first if it has none (which parallel code cannot do).
pub(crate) fn persistent_id(lua: &Lua, id: InstanceId) -> mlua::Result<String> {
    let pid = access(lua, |_, a| match a {
        Access::Serial(scene) => scene.ensure_persistent_id(id).map_err(lua_error),
        Access::Parallel(view) => {
            let node = view.arena.node(id).map_err(lua_error)?;
            node.persistent_id().ok_or_else(|| {
                mlua::Error::runtime(format!(
                    "{} has no persistent id yet, and assigning one is a change parallel code cannot make (ask for it once in a serial system or in setup)",
                    instance(view.arena, id)
                ))
            })
        }
    })?;
    Ok(args::persistent_id_text(pid))
}

/// `world:get(id)`: the live instance with that id, or nil.
pub(crate) fn by_id(lua: &Lua, id: &LuaValue) -> mlua::Result<Option<AnyUserData>> {
    let id = args::instance_id(id, "world:get's id")?;
    let live = access(lua, |_, a| Ok(a.arena().is_live(id)))?;
    live.then(|| wrap_instance(lua, id)).transpose()
}

/// `world:getByPersistentId(pid)`: the live instance holding that persistent id, or nil.
pub(crate) fn by_persistent_id(lua: &Lua, pid: &LuaValue) -> mlua::Result<Option<AnyUserData>> {
    let pid = args::persistent_id(pid, "world:getByPersistentId's id")?;
    let found = access(lua, |_, a| {
        Ok(a.arena()
            .by_persistent_id(pid)
            .filter(|id| a.arena().is_live(*id)))
    })?;
    found.map(|id| wrap_instance(lua, id)).transpose()
}

/// A member's name as messages show it.
pub(crate) fn member(key: &LuaValue) -> String {
    match key {
        LuaValue::String(s) => format!("`{}`", s.to_string_lossy()),
        other => kind(other).to_owned(),
    }
}

/// Reading a member an instance does not have.
pub(crate) fn no_instance_member(lua: &Lua, id: InstanceId, key: &LuaValue) -> mlua::Error {
    let what = access(lua, |_, a| Ok(instance(a.arena(), id)))
        .unwrap_or_else(|_| format!("instance {id}"));
    mlua::Error::runtime(format!("{what} has no property or method {}", member(key)))
}

/// Setting a member of an instance that cannot be set.
pub(crate) fn unsettable_instance_member(lua: &Lua, id: InstanceId, key: &LuaValue) -> mlua::Error {
    let name = match key {
        LuaValue::String(s) => Some(s.to_string_lossy()),
        _ => None,
    };
    let known = |list: &[(&str, &str)]| {
        name.as_deref()
            .is_some_and(|n| list.iter().any(|(entry, _)| *entry == n))
    };
    if known(INSTANCE_PROPERTIES) {
        return mlua::Error::runtime(format!(
            "{} of an instance cannot be set (Name and Parent can)",
            member(key)
        ));
    }
    if known(INSTANCE_METHODS) {
        return mlua::Error::runtime(format!(
            "{} is a method of an instance and cannot be set",
            member(key)
        ));
    }
    let what = access(lua, |_, a| Ok(instance(a.arena(), id)))
        .unwrap_or_else(|_| format!("instance {id}"));
    mlua::Error::runtime(format!(
        "{what} has no property {} to set (an instance's settable properties are Name and Parent; keep data in attributes or components)",
        member(key)
    ))
}

/// A member `world`, a query or a component does not have; `what` names the value and `has`
/// lists what it does have.
pub(crate) fn no_member(what: &str, key: &LuaValue, has: &str) -> mlua::Error {
    mlua::Error::runtime(format!("{what} has no member {} ({has})", member(key)))
}
