//! The schema environment's value operations: the small, named set of pure functions a schema
//! may call besides the field constructors, and the string metatable that routes method calls
//! on strings (`s:upper()`) to the same set.
//!
//! Invariant: every operation here is pure (the same arguments give the same result; none keeps
//! state, reads a clock or a random source, or shows an address: values without a printable
//! form print as their type name, and `pairs` walks keys in a fixed order) and bounded inside
//! one call, where Luau's interrupt cannot reach: no string an operation takes or makes is
//! longer than [`TEXT_CAP`] bytes, and no operation shifts, joins or walks more than
//! [`ITEM_CAP`] entries, so one call does work at most linear in those caps. An operation past
//! a cap fails with an error the sandbox reports as `SchemaError::SizeCap`. The tables are
//! read-only, so no evaluation can leave state behind in them.

use std::cell::Cell;
use std::cmp::Ordering;
use std::fmt;

use mlua::{Function, Lua, MultiValue, Table, Value as LuaValue};

use crate::scan;

/// The longest string a value operation takes or makes, in bytes (1 MiB).
pub const TEXT_CAP: usize = 1 << 20;

/// The most entries `table.insert` shifts, `table.concat` joins and `pairs` walks (65,536).
pub const ITEM_CAP: usize = 1 << 16;

/// The members of `math`: the exact operations among Luau's.
const MATH: [&str; 12] = [
    "abs", "ceil", "clamp", "floor", "fmod", "huge", "max", "min", "pi", "round", "sign", "sqrt",
];

/// An operation ran past a cap.
#[derive(Debug)]
pub(crate) struct CapExceeded(pub(crate) String);

impl fmt::Display for CapExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CapExceeded {}

fn cap(message: String) -> mlua::Error {
    mlua::Error::external(CapExceeded(message))
}

/// The length of a string argument, refused past `TEXT_CAP`. A number counts as the string
/// Luau turns it into (string operations take numbers as their decimal text); anything else
/// counts 0, and Luau reports it as a bad argument.
fn text_arg(lua: &Lua, operation: &str, value: Option<&LuaValue>) -> mlua::Result<usize> {
    let len = match value {
        Some(LuaValue::String(s)) => s.as_bytes().len(),
        Some(number @ (LuaValue::Integer(_) | LuaValue::Number(_))) => lua
            .coerce_string(number.clone())?
            .map_or(0, |s| s.as_bytes().len()),
        _ => 0,
    };
    if len > TEXT_CAP {
        Err(cap(format!(
            "{operation}: a string of {len} bytes is over the cap of {TEXT_CAP}"
        )))
    } else {
        Ok(len)
    }
}

fn result_cap(operation: &str, len: f64) -> mlua::Result<()> {
    if len > TEXT_CAP as f64 {
        Err(cap(format!(
            "{operation}: the result would be {len} bytes, over the cap of {TEXT_CAP}"
        )))
    } else {
        Ok(())
    }
}

/// A number argument as Luau reads it: a number, or a string Luau converts to one.
fn number(lua: &Lua, value: Option<&LuaValue>) -> mlua::Result<Option<f64>> {
    match value {
        Some(LuaValue::Integer(i)) => Ok(Some(*i as f64)),
        Some(LuaValue::Number(n)) => Ok(Some(*n)),
        Some(text @ LuaValue::String(_)) => lua.coerce_number(text.clone()),
        _ => Ok(None),
    }
}

/// A value that is a number, without conversion (for ordering keys).
fn plain_number(value: &LuaValue) -> Option<f64> {
    match value {
        LuaValue::Integer(i) => Some(*i as f64),
        LuaValue::Number(n) => Some(*n),
        _ => None,
    }
}

/// The message of an error value, without an address for values that have no printable form.
fn error_message(value: Option<&LuaValue>) -> Option<String> {
    match value {
        None | Some(LuaValue::Nil) => None,
        Some(LuaValue::String(s)) => Some(s.to_string_lossy()),
        Some(LuaValue::Integer(i)) => Some(i.to_string()),
        Some(LuaValue::Number(n)) => Some(LuaValue::Number(*n).to_string().unwrap_or_default()),
        Some(other) => Some(format!("(error object is a {} value)", other.type_name())),
    }
}

/// The operations, built once per VM: the global functions, and the read-only `math`, `string`
/// and `table` tables.
pub(crate) struct Library {
    /// Name → value, for every global besides the constructors.
    pub(crate) globals: Vec<(&'static str, LuaValue)>,
}

impl Library {
    /// Builds the operations from the VM's own libraries and routes string methods to them.
    /// Must run before the VM is sandboxed, while its globals are still the libraries.
    pub(crate) fn new(lua: &Lua) -> mlua::Result<Self> {
        let globals = lua.globals();
        let native_string: Table = globals.get("string")?;
        let native_table: Table = globals.get("table")?;
        let native_math: Table = globals.get("math")?;

        let math = lua.create_table()?;
        for name in MATH {
            math.raw_set(name, native_math.get::<LuaValue>(name)?)?;
        }
        math.set_readonly(true);

        let string = string_library(lua, &native_string)?;
        let table = table_library(lua, &native_table)?;

        // Method calls on strings look up the string metatable's `__index`.
        let metatable = lua.create_table()?;
        metatable.raw_set("__index", string.clone())?;
        metatable.set_readonly(true);
        lua.set_type_metatable::<mlua::LuaString>(Some(metatable));

        let mut out: Vec<(&'static str, LuaValue)> = vec![
            ("math", LuaValue::Table(math)),
            ("string", LuaValue::Table(string)),
            ("table", LuaValue::Table(table)),
        ];
        for name in ["ipairs", "select", "type", "typeof"] {
            out.push((name, globals.get::<LuaValue>(name)?));
        }
        out.push(("assert", LuaValue::Function(assert_function(lua)?)));
        out.push(("error", LuaValue::Function(error_function(lua)?)));
        out.push(("pairs", LuaValue::Function(pairs_function(lua)?)));
        out.push((scan::ITERATE, LuaValue::Function(iterate_function(lua)?)));
        out.push((
            "tostring",
            LuaValue::Function(tostring_function(lua, globals.get("tostring")?)?),
        ));
        out.push((
            "tonumber",
            LuaValue::Function(tonumber_function(lua, globals.get("tonumber")?)?),
        ));
        Ok(Self { globals: out })
    }
}

/// A wrapper that checks its arguments, then calls the VM's own function.
fn checked(
    lua: &Lua,
    native: Function,
    check: impl Fn(&Lua, &MultiValue) -> mlua::Result<()> + Send + 'static,
) -> mlua::Result<Function> {
    lua.create_function(move |lua, args: MultiValue| {
        check(lua, &args)?;
        native.call::<MultiValue>(args)
    })
}

fn string_library(lua: &Lua, native: &Table) -> mlua::Result<Table> {
    let string = lua.create_table()?;
    for name in ["len", "lower", "sub", "upper"] {
        let operation = format!("string.{name}");
        string.raw_set(
            name,
            checked(lua, native.get(name)?, move |lua, args| {
                text_arg(lua, &operation, args.front()).map(drop)
            })?,
        )?;
    }
    string.raw_set(
        "rep",
        checked(lua, native.get("rep")?, |lua, args| {
            let len = text_arg(lua, "string.rep", args.front())?;
            let separator = text_arg(lua, "string.rep", args.get(2))?;
            let count = number(lua, args.get(1))?.unwrap_or(0.0).floor();
            if count > 0.0 {
                result_cap(
                    "string.rep",
                    count * len as f64 + (count - 1.0) * separator as f64,
                )?;
            }
            Ok(())
        })?,
    )?;
    string.raw_set(
        "format",
        checked(lua, native.get("format")?, |lua, args| {
            let mut args = args.iter();
            let format = match args.next() {
                Some(LuaValue::String(s)) => s.as_bytes().to_vec(),
                _ => return Ok(()), // Luau reports the bad argument.
            };
            if format.len() > TEXT_CAP {
                return Err(cap(format!(
                    "string.format: a format of {} bytes is over the cap of {TEXT_CAP}",
                    format.len()
                )));
            }
            let args: Vec<&LuaValue> = args.collect();
            for value in &args {
                match value {
                    LuaValue::Nil
                    | LuaValue::Boolean(_)
                    | LuaValue::Integer(_)
                    | LuaValue::Number(_) => {}
                    LuaValue::String(_) => {
                        text_arg(lua, "string.format", Some(value))?;
                    }
                    other => {
                        return Err(mlua::Error::runtime(format!(
                            "string.format formats only nil, booleans, numbers and strings, not a {} value",
                            other.type_name()
                        )));
                    }
                }
            }
            result_cap("string.format", format_bound(&format, &args) as f64)
        })?,
    )?;
    string.set_readonly(true);
    Ok(string)
}

/// An upper bound of the length `string.format` can produce: literal bytes count once, `%s`
/// and `%*` their argument plus the widest padding, `%q` four bytes per argument byte (escapes),
/// every other conversion Luau's 512-byte item limit.
fn format_bound(format: &[u8], args: &[&LuaValue]) -> usize {
    const ITEM: usize = 512;
    let text = |i: usize| -> usize {
        match args.get(i) {
            Some(LuaValue::String(s)) => s.as_bytes().len(),
            _ => 64,
        }
    };
    let mut bound = 0usize;
    let mut arg = 0usize;
    let mut at = 0usize;
    while at < format.len() {
        if format[at] != b'%' {
            bound += 1;
            at += 1;
            continue;
        }
        at += 1;
        match format.get(at) {
            Some(b'%') => {
                bound += 1;
                at += 1;
            }
            Some(b'*') => {
                bound += text(arg);
                arg += 1;
                at += 1;
            }
            _ => {
                while at < format.len() && b"-+ #0.123456789".contains(&format[at]) {
                    at += 1;
                }
                bound += match format.get(at) {
                    Some(b's') => text(arg) + 100,
                    Some(b'q') => 4 * text(arg) + 2,
                    _ => ITEM,
                };
                arg += 1;
                at += 1;
            }
        }
    }
    bound
}

fn table_library(lua: &Lua, native: &Table) -> mlua::Result<Table> {
    let table = lua.create_table()?;
    table.raw_set(
        "insert",
        checked(lua, native.get("insert")?, |_, args| {
            if let (3, Some(LuaValue::Table(list))) = (args.len(), args.front()) {
                let len = list.raw_len();
                if len > ITEM_CAP {
                    return Err(cap(format!(
                        "table.insert: inserting into a list of {len} elements is over the cap of {ITEM_CAP}"
                    )));
                }
            }
            Ok(())
        })?,
    )?;
    table.raw_set(
        "concat",
        checked(lua, native.get("concat")?, |lua, args| {
            let Some(LuaValue::Table(list)) = args.front() else {
                return Ok(()); // Luau reports the bad argument.
            };
            let separator = text_arg(lua, "table.concat", args.get(1))?;
            let first = number(lua, args.get(2))?.unwrap_or(1.0);
            let last = number(lua, args.get(3))?.unwrap_or(list.raw_len() as f64);
            if last < first {
                return Ok(());
            }
            let count = last - first + 1.0;
            if count > ITEM_CAP as f64 {
                return Err(cap(format!(
                    "table.concat: joining {count} elements is over the cap of {ITEM_CAP}"
                )));
            }
            let mut len = separator as f64 * (count - 1.0);
            let mut index = first;
            while index <= last {
                len +=
                    text_arg(lua, "table.concat", Some(&list.raw_get::<LuaValue>(index)?))? as f64;
                index += 1.0;
            }
            result_cap("table.concat", len)
        })?,
    )?;
    table.set_readonly(true);
    Ok(table)
}

fn tostring_function(lua: &Lua, native: Function) -> mlua::Result<Function> {
    lua.create_function(move |lua, args: MultiValue| {
        let value = args.front().cloned().unwrap_or(LuaValue::Nil);
        match value {
            LuaValue::Nil
            | LuaValue::Boolean(_)
            | LuaValue::Integer(_)
            | LuaValue::Number(_)
            | LuaValue::String(_) => {
                text_arg(lua, "tostring", Some(&value))?;
                native.call::<LuaValue>(value)
            }
            other => Ok(LuaValue::String(lua.create_string(other.type_name())?)),
        }
    })
}

fn tonumber_function(lua: &Lua, native: Function) -> mlua::Result<Function> {
    checked(lua, native, |lua, args| {
        text_arg(lua, "tonumber", args.front()).map(drop)
    })
}

fn error_function(lua: &Lua) -> mlua::Result<Function> {
    lua.create_function(|_, args: MultiValue| -> mlua::Result<()> {
        Err(mlua::Error::RuntimeError(
            error_message(args.front()).unwrap_or_else(|| "nil".to_owned()),
        ))
    })
}

fn assert_function(lua: &Lua) -> mlua::Result<Function> {
    lua.create_function(|_, args: MultiValue| {
        match args.front() {
            None | Some(LuaValue::Nil | LuaValue::Boolean(false)) => {}
            Some(_) => return Ok(args),
        }
        Err(mlua::Error::RuntimeError(
            error_message(args.get(1)).unwrap_or_else(|| "assertion failed!".to_owned()),
        ))
    })
}

/// The order `pairs` walks keys in: booleans (false first), numbers ascending, strings by their
/// bytes. `pairs` refuses every other kind of key before sorting.
fn key_order(a: &LuaValue, b: &LuaValue) -> Ordering {
    fn rank(v: &LuaValue) -> u8 {
        match v {
            LuaValue::Boolean(_) => 0,
            LuaValue::Integer(_) | LuaValue::Number(_) => 1,
            _ => 2,
        }
    }
    match (a, b) {
        (LuaValue::Boolean(x), LuaValue::Boolean(y)) => x.cmp(y),
        (LuaValue::String(x), LuaValue::String(y)) => x.as_bytes().cmp(&y.as_bytes()),
        _ => match (plain_number(a), plain_number(b)) {
            (Some(x), Some(y)) => x.total_cmp(&y),
            _ => rank(a).cmp(&rank(b)),
        },
    }
}

fn pairs_function(lua: &Lua) -> mlua::Result<Function> {
    lua.create_function(|lua, args: MultiValue| {
        let Some(LuaValue::Table(table)) = args.front() else {
            return Err(mlua::Error::runtime(format!(
                "pairs expects a table, not {}",
                args.front().map_or("nothing", LuaValue::type_name)
            )));
        };
        let mut entries: Vec<(LuaValue, LuaValue)> = Vec::new();
        for pair in table.pairs::<LuaValue, LuaValue>() {
            let (key, value) = pair?;
            match key {
                LuaValue::Boolean(_)
                | LuaValue::Integer(_)
                | LuaValue::Number(_)
                | LuaValue::String(_) => {}
                other => {
                    return Err(mlua::Error::runtime(format!(
                        "pairs walks tables keyed by booleans, numbers and strings, in a fixed order; this one has a {} key, whose order would depend on memory addresses",
                        other.type_name()
                    )));
                }
            }
            if entries.len() == ITEM_CAP {
                return Err(cap(format!(
                    "pairs: a table of more than {ITEM_CAP} entries is over the cap"
                )));
            }
            entries.push((key, value));
        }
        entries.sort_by(|a, b| key_order(&a.0, &b.0));
        let next = Cell::new(0usize);
        lua.create_function(move |_, _: MultiValue| {
            let at = next.get();
            next.set(at + 1);
            Ok(match entries.get(at) {
                Some((key, value)) => (key.clone(), value.clone()),
                None => (LuaValue::Nil, LuaValue::Nil),
            })
        })
    })
}

/// The check `scan.rs` wraps around every generic `for` head: the loop must iterate a function
/// (what `pairs` and `ipairs` return), never a table, whose built-in walk follows an order that
/// can depend on memory addresses.
fn iterate_function(lua: &Lua) -> mlua::Result<Function> {
    lua.create_function(|_, args: MultiValue| match args.front() {
        Some(LuaValue::Function(_)) => Ok(args),
        other => Err(mlua::Error::runtime(format!(
            "a for loop iterates pairs(t), ipairs(t) or another function, not a {} value: walking a table directly follows an order that can depend on memory addresses",
            other.map_or("nil", LuaValue::type_name)
        ))),
    })
}
