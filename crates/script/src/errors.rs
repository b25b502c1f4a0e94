//! What a game script, and its author, are told when something fails: the message of an API
//! refusal in the author's terms, where in the script it happened, and the error values a
//! script's `pcall` and `xpcall` catch.
//!
//! Invariant: no message a script or its author reads names an internal of the engine or of
//! mlua: components, fields and instances are named as the author wrote them (never
//! `ComponentId(0)`), argument mistakes say which argument and what was given (never "error
//! converting Lua nil to String"), and an API error caught by `pcall`/`xpcall` is a string
//! `script:LINE: message`, like the errors Luau raises itself (never a userdata whose text
//! carries a traceback through the engine's own chunks); so is one ending a coroutine, as
//! `coroutine.resume` and `coroutine.close` return it.

use mlua::{Lua, Table, Value as LuaValue};
use strata_arena::{InstanceId, Snapshot};
use strata_component_store::{ComponentId, FieldId, Store, StoreError};
use strata_parallel_overlay::OverlayError;
use strata_query::QueryError;

use strata::WorldError;

/// The `pcall`, `xpcall` and `coroutine` library of the game environment: the standard ones,
/// with an API error caught (or ending a coroutine) turned into its message (see [`caught`]).
/// Written in Luau so a `pcall` stays yieldable and costs one Luau call more than the
/// standard one.
const PCALL_SOURCE: &str = r#"
local rawpcall, rawxpcall, caught, library = ...
local function after(ok, ...)
    if ok then return true, ... end
    return false, caught((...))
end
local function pcall(f, ...)
    return after(rawpcall(f, ...))
end
local function xpcall(f, handler, ...)
    if type(handler) ~= "function" then return rawxpcall(f, handler, ...) end
    return rawxpcall(f, function(e) return handler(caught(e)) end, ...)
end
local coroutine = table.clone(library)
local rawresume, rawclose = library.resume, library.close
function coroutine.resume(thread, ...) return after(rawresume(thread, ...)) end
function coroutine.close(thread) return after(rawclose(thread)) end
return pcall, xpcall, table.freeze(coroutine)
"#;

/// Replaces a VM's raw `pcall`, `xpcall` and `coroutine` with the game environment's, before
/// the sandbox makes the globals read-only. They go in the globals, not in the scripts' base
/// environment, because Luau resolves a chunk's standard names against the globals when it
/// loads it (see `vm::environment`): the globals and the environment must agree on every name
/// both hold.
pub(crate) fn install(lua: &Lua, globals: &Table) -> mlua::Result<()> {
    let make = lua.load(PCALL_SOURCE).set_name("=strata").into_function()?;
    let (pcall, xpcall, coroutine): (mlua::Function, mlua::Function, Table) = make.call((
        globals.raw_get::<mlua::Function>("pcall")?,
        globals.raw_get::<mlua::Function>("xpcall")?,
        lua.create_function(caught)?,
        globals.raw_get::<Table>("coroutine")?,
    ))?;
    globals.raw_set("pcall", pcall)?;
    globals.raw_set("xpcall", xpcall)?;
    globals.raw_set("coroutine", coroutine)?;
    Ok(())
}

/// An error value a script caught: an API error becomes the string `script:LINE: message`
/// (the line of the script's call that failed); any other value is the script's own and is
/// left as it is.
fn caught(lua: &Lua, value: LuaValue) -> mlua::Result<LuaValue> {
    let LuaValue::Error(error) = &value else {
        return Ok(value);
    };
    let message = describe(error);
    let text = match tracebacks(error).into_iter().find_map(location) {
        Some((source, line)) => format!("{source}:{line}: {message}"),
        None => message,
    };
    Ok(LuaValue::String(lua.create_string(&text)?))
}

/// The tracebacks an error carries, innermost first.
fn tracebacks(error: &mlua::Error) -> Vec<&str> {
    match error {
        mlua::Error::CallbackError { traceback, cause } => {
            let mut inner = tracebacks(cause);
            inner.push(traceback);
            inner
        }
        mlua::Error::WithContext { cause, .. } => tracebacks(cause),
        _ => Vec::new(),
    }
}

/// The first frame of a traceback that is in a script (not in Rust, in the engine's Luau
/// helpers or in mlua's): its chunk name and line.
pub(crate) fn location(traceback: &str) -> Option<(String, u32)> {
    traceback.lines().find_map(|frame| {
        let frame = frame.trim();
        let (source, rest) = frame.split_once(':')?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let line = digits.parse().ok()?;
        let internal = source.is_empty()
            || source.starts_with('[')
            || source == "strata"
            || source.starts_with("__mlua");
        (!internal).then(|| (source.to_owned(), line))
    })
}

/// The line of the innermost script frame on the stack: for a Rust function the API runs,
/// the line of the script's call.
pub(crate) fn caller_line(lua: &Lua) -> Option<u32> {
    (0..32).find_map(|level| {
        lua.inspect_stack(level, |frame| {
            let source = frame.source();
            let name = source.short_src.as_deref().unwrap_or("[C]");
            let internal = name.starts_with('[') || name == "strata" || name.starts_with("__mlua");
            if internal {
                return None;
            }
            frame.current_line().and_then(|l| u32::try_from(l).ok())
        })
        .flatten()
    })
}

/// The line of `script` the first frame of a traceback in it names: for an error Luau raised
/// with a value that is not a string (`error({})`), whose text mlua follows with the traceback.
pub(crate) fn line_in_traceback(script: &str, text: &str) -> Option<u32> {
    text.lines()
        .skip(1)
        .find_map(|frame| location(frame).filter(|(source, _)| source == script))
        .map(|(_, line)| line)
}

/// The message of an error raised with a value that is not a string, when its text is only
/// the value's address (`table: 0x7f...`): what was raised instead.
pub(crate) fn opaque_value(message: String) -> String {
    let opaque = ["table", "userdata", "function", "thread", "buffer"]
        .into_iter()
        .find(|kind| {
            message.strip_prefix(kind).is_some_and(|rest| {
                rest.strip_prefix(": 0x").is_some_and(|hex| {
                    !hex.is_empty() && hex.chars().all(|c| c.is_ascii_hexdigit())
                })
            })
        });
    match opaque {
        Some(kind) => format!(
            "the script raised an error whose value is a {kind}, not a message (give `error` a string, or a table with `__tostring`)"
        ),
        None => message,
    }
}

/// An error's message in the author's terms (see the module docs).
pub(crate) fn describe(error: &mlua::Error) -> String {
    match error {
        mlua::Error::CallbackError { cause, .. } | mlua::Error::WithContext { cause, .. } => {
            describe(cause)
        }
        mlua::Error::RuntimeError(message) | mlua::Error::SyntaxError { message, .. } => {
            message.clone()
        }
        mlua::Error::MemoryError(message) => format!("out of memory: {message}"),
        mlua::Error::BadArgument { to, pos, cause, .. } => bad_argument(to.as_deref(), *pos, cause),
        mlua::Error::FromLuaConversionError { from, to, .. } => {
            format!("expected {}, not {}", luau_kind(to), given(from))
        }
        other => other.to_string(),
    }
}

/// How the API's userdata types read in messages: the Rust type's name, what a script calls
/// a value of it, and the variable a method call is shown on.
const TYPES: [(&str, &str); 5] = [
    ("Inst", "instance"),
    ("WorldApi", "world"),
    ("QueryUd", "query"),
    ("Handle", "handle"),
    ("ComponentType", "Component"),
];

/// A bad argument to an API function or method (mlua numbers a method's `self` as argument 1).
fn bad_argument(to: Option<&str>, pos: usize, cause: &mlua::Error) -> String {
    let method = to.and_then(|to| {
        let (ty, name) = to.split_once('.')?;
        let (_, var) = TYPES.iter().find(|(rust, _)| *rust == ty)?;
        Some((*var, name))
    });
    match method {
        Some((var, name)) if pos <= 1 => {
            format!("`{name}` is a method: call it with a colon, as `{var}:{name}(...)`")
        }
        Some((_, name)) => format!("argument {} of `{name}`: {}", pos - 1, describe(cause)),
        None => format!("argument {pos}: {}", describe(cause)),
    }
}

/// A conversion target (a Rust type name in mlua's errors) as a Luau kind.
fn luau_kind(to: &str) -> &'static str {
    match to {
        "String" | "string" | "str" | "BString" => "a string",
        "f32" | "f64" | "i8" | "i16" | "i32" | "i64" | "u8" | "u16" | "u32" | "u64" | "usize"
        | "isize" | "number" | "integer" => "a number",
        "bool" | "boolean" => "a boolean",
        "table" | "Table" => "a table",
        "function" | "Function" => "a function",
        "userdata" | "AnyUserData" => "an API object (an instance, a component, a query)",
        _ => "another kind of value",
    }
}

/// A Luau type name as what was given.
fn given(from: &str) -> String {
    match from {
        "nil" => "nil".to_owned(),
        "integer" => "an integer".to_owned(),
        other => format!("a {other}"),
    }
}

/// A layer's error crossing into Luau: kept typed, so the API's entry point, which still
/// holds the world, can name what it refers to ([`name_ids`]).
pub(crate) fn world_error(error: impl Into<WorldError>) -> mlua::Error {
    mlua::Error::external(error.into())
}

/// An error leaving the API: a layer's error, named in the author's terms against the world
/// the call ran on (components and fields by name, instances by class and name).
pub(crate) fn name_ids(error: mlua::Error, arena: &Snapshot, store: &Store) -> mlua::Error {
    let mlua::Error::ExternalError(inner) = &error else {
        return error;
    };
    match inner.downcast_ref::<WorldError>() {
        Some(world) => mlua::Error::runtime(world_message(world, arena, store)),
        None => error,
    }
}

/// A world error's message with ids named.
pub(crate) fn world_message(error: &WorldError, arena: &Snapshot, store: &Store) -> String {
    let names = Names { arena, store };
    match error {
        WorldError::Store(e)
        | WorldError::Query(QueryError::Store(e))
        | WorldError::Overlay(OverlayError::Store(e)) => names.store_message(e),
        WorldError::Query(QueryError::ChangeTermNotRequired(c)) => format!(
            "`added` and `changed` may name only components the query lists in `with`, and `{}` is not there",
            names.component(*c)
        ),
        WorldError::UndeclaredWrite { component, field } => format!(
            "the system did not declare writes to `{}` (list it in the system's `writes`)",
            names.field(*component, *field)
        ),
        other => other.to_string(),
    }
}

/// Names of what ids refer to, in one world.
struct Names<'a> {
    arena: &'a Snapshot,
    store: &'a Store,
}

impl Names<'_> {
    fn component(&self, c: ComponentId) -> String {
        self.store.def(c).map_or_else(
            |_| "a component no longer installed".to_owned(),
            |d| d.name().to_owned(),
        )
    }

    fn field(&self, c: ComponentId, f: FieldId) -> String {
        match self.store.def(c) {
            Ok(def) => match def.fields().get(f.index()) {
                Some(field) => format!("{}.{}", def.name(), field.name),
                None => format!("{} (a field it no longer has)", def.name()),
            },
            Err(_) => "a field of a component no longer installed".to_owned(),
        }
    }

    fn store_message(&self, error: &StoreError) -> String {
        match error {
            StoreError::UnknownComponent(c) => {
                format!("`{}` is not installed any more", self.component(*c))
            }
            StoreError::MissingMembership { id, component, .. } => format!(
                "{} does not hold `{}`",
                instance(self.arena, *id),
                self.component(*component)
            ),
            StoreError::AlreadyPresent { id, component, .. } => format!(
                "{} already holds `{}`",
                instance(self.arena, *id),
                self.component(*component)
            ),
            StoreError::ClassNotAllowed { component, class } => {
                let class = self
                    .arena
                    .classes()
                    .get(*class)
                    .map_or("of this class", |d| d.name());
                format!("`{component}` does not allow instances of class {class}")
            }
            StoreError::FieldOutOfRange { component, .. } => {
                format!("`{component}` was redefined without a field this refers to: take it again")
            }
            StoreError::StaleDefinition { component: c, .. } => format!(
                "`{}` was redefined since this was made: take it again",
                self.component(*c)
            ),
            StoreError::AliasedColumns {
                component, field, ..
            } => format!(
                "`{}` cannot be read while it is being written",
                self.field(*component, *field)
            ),
            StoreError::CheckedFieldOnly {
                component, field, ..
            }
            | StoreError::UncheckedColumn {
                component, field, ..
            } => format!(
                "`{}` takes its values through checked writes only",
                self.field(*component, *field)
            ),
            other => other.to_string(),
        }
    }
}

/// An instance as messages name it: its class, its name and its id (`Part \`Drone1\` (#7)`),
/// or its id alone when it cannot be read.
pub(crate) fn instance(arena: &Snapshot, id: InstanceId) -> String {
    match arena.get(id) {
        Some(node) => {
            let class = arena
                .classes()
                .get(node.class())
                .map_or("instance", |d| d.name());
            format!("{class} `{}` ({id})", node.name())
        }
        None => format!("instance {id}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_script_frame_of_a_traceback_is_its_location() {
        let traceback = "stack traceback:\n\t[C]: in ?\n\tstrata:99: in function <strata:98>\n\t__mlua_index:12: in ?\n\tsystems/a.luau:7: in function <systems/a.luau:2>";
        assert_eq!(location(traceback), Some(("systems/a.luau".to_owned(), 7)));
        assert_eq!(location("stack traceback:\n\t[C]: in ?"), None);
    }

    #[test]
    fn an_address_alone_is_named_as_the_kind_raised() {
        assert!(opaque_value("table: 0x00007f3e101493c0".into()).contains("a table"));
        assert_eq!(opaque_value("my own".into()), "my own");
        assert_eq!(
            opaque_value("table: of contents".into()),
            "table: of contents"
        );
    }
}
