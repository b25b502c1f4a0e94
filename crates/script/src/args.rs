//! The arguments of API calls, checked one by one: a string, an instance id, a persistent id,
//! a table, each taken from whatever Luau value a script passed.
//!
//! Invariant: an argument that is not what the call takes is refused with an error naming the
//! call, the argument and the kind (or value) given; nothing is converted behind the script's
//! back (a number is not a name, a string is not an id).

use mlua::{AnyUserData, Table, Value as LuaValue};
use strata::WorldError;
use strata_arena::{InstanceId, PersistentId};
use strata_component_store::{ComponentId, Store};

use super::access::lua_error;
use super::convert::kind;

/// A component global (`Health`): the component's name. Its Luau side is in `api.rs`.
#[derive(Clone, Debug)]
pub(crate) struct ComponentType(pub(crate) std::sync::Arc<str>);

/// The name of a component argument.
pub(crate) fn component_name(ud: &AnyUserData) -> mlua::Result<std::sync::Arc<str>> {
    ud.borrow::<ComponentType>()
        .map(|c| c.0.clone())
        .map_err(|_| mlua::Error::runtime("expected a component (such as `Health`)"))
}

/// The component of a component argument, in a store.
pub(crate) fn component_in(store: &Store, value: &LuaValue) -> mlua::Result<ComponentId> {
    let LuaValue::UserData(ud) = value else {
        return Err(mlua::Error::runtime(format!(
            "expected a component (such as `Health`), not {}",
            kind(value)
        )));
    };
    let name = component_name(ud)?;
    store
        .component(&name)
        .ok_or_else(|| lua_error(WorldError::UnknownComponent(name.to_string())))
}

/// The largest integer a Luau number holds exactly.
const EXACT: f64 = 9_007_199_254_740_992.0;

/// A string argument: `what` names it (`"FindFirstChild's name"`).
pub(crate) fn string(value: &LuaValue, what: &str) -> mlua::Result<String> {
    match value {
        LuaValue::String(s) => Ok(s.to_str()?.to_string()),
        other => Err(mlua::Error::runtime(format!(
            "{what} must be a string, not {}",
            kind(other)
        ))),
    }
}

/// A table argument, or nil.
pub(crate) fn optional_table(value: &LuaValue, what: &str) -> mlua::Result<Option<Table>> {
    match value {
        LuaValue::Nil => Ok(None),
        LuaValue::Table(t) => Ok(Some(t.clone())),
        other => Err(mlua::Error::runtime(format!(
            "{what} must be a table, not {}",
            kind(other)
        ))),
    }
}

/// A table argument.
pub(crate) fn table(value: &LuaValue, what: &str) -> mlua::Result<Table> {
    match value {
        LuaValue::Table(t) => Ok(t.clone()),
        other => Err(mlua::Error::runtime(format!(
            "{what} must be a table, not {}",
            kind(other)
        ))),
    }
}

/// An instance id (`inst.Id`): a whole number from 1 up.
pub(crate) fn instance_id(value: &LuaValue, what: &str) -> mlua::Result<InstanceId> {
    let number = match value {
        LuaValue::Integer(i) => *i as f64,
        LuaValue::Number(n) => *n,
        other => {
            return Err(mlua::Error::runtime(format!(
                "{what} must be an instance id (a whole number, as `inst.Id`), not {}",
                kind(other)
            )));
        }
    };
    let id = (number.fract() == 0.0 && (1.0..=EXACT).contains(&number))
        .then(|| InstanceId::new(number as u64))
        .flatten();
    id.ok_or_else(|| {
        mlua::Error::runtime(format!(
            "{what} must be an instance id (a whole number from 1, as `inst.Id`), not {number}"
        ))
    })
}

/// A persistent id as scripts hold it: the 16 hexadecimal digits `GetPersistentId` gives.
pub(crate) fn persistent_id(value: &LuaValue, what: &str) -> mlua::Result<PersistentId> {
    let text = match value {
        LuaValue::String(s) => s.to_str()?.to_string(),
        other => {
            return Err(mlua::Error::runtime(format!(
                "{what} must be a persistent id (the string `GetPersistentId` gives), not {}",
                kind(other)
            )));
        }
    };
    let raw = (text.len() == 16 && text.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| u64::from_str_radix(&text, 16).ok())
        .flatten();
    raw.and_then(PersistentId::new).ok_or_else(|| {
        mlua::Error::runtime(format!(
            "{what} must be a persistent id (16 hexadecimal digits, as `GetPersistentId` gives), not \"{text}\""
        ))
    })
}

/// A persistent id as scripts hold it.
pub(crate) fn persistent_id_text(pid: PersistentId) -> String {
    format!("{:016x}", pid.get())
}
