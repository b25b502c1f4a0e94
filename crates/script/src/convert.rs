//! Component values between the store and Luau.
//!
//! Invariant: a value read into Luau and written back unchanged is the same value (numbers,
//! booleans, text, enum variants by name, vectors, transforms as 16 numbers row by row,
//! references as instance wrappers, lists, maps, structs by member name, optionals as the value
//! or nil, buffers); a Luau value is turned into a field's value only when it fits the field's
//! type, and otherwise refused with the field, the type and what was given.

use std::collections::BTreeMap;
use std::sync::Arc;

use mlua::{Lua, Table, Value as LuaValue};
use strata_arena::{Transform, Vec3};
use strata_component_store::{FieldDef, FieldType, ListValue, MapKey, Value};

use super::api::{instance_id, wrap_instance};

/// How deeply a Luau value may nest when it becomes a field value (a table can contain itself).
const MAX_DEPTH: usize = 32;

/// A store value as a Luau value.
pub(crate) fn to_lua(lua: &Lua, value: &Value, ty: &FieldType) -> mlua::Result<LuaValue> {
    Ok(match value {
        Value::Number(n) => LuaValue::Number(*n),
        Value::Integer(i) => LuaValue::Number(*i as f64),
        Value::Boolean(b) => LuaValue::Boolean(*b),
        Value::Text(t) => LuaValue::String(lua.create_string(t.as_bytes())?),
        Value::Enum(index) => match ty {
            FieldType::Enum(variants) => match variants.get(*index as usize) {
                Some(name) => LuaValue::String(lua.create_string(name.as_bytes())?),
                None => LuaValue::Nil,
            },
            _ => LuaValue::Number(f64::from(*index)),
        },
        Value::Vector(v) => LuaValue::Vector(mlua::Vector::new(v.x, v.y, v.z)),
        Value::Transform(t) => {
            let table = lua.create_table_with_capacity(16, 0)?;
            for (k, x) in t.rows.iter().flatten().enumerate() {
                table.raw_set(k + 1, f64::from(*x))?;
            }
            LuaValue::Table(table)
        }
        Value::Reference(None) => LuaValue::Nil,
        Value::Reference(Some(id)) => LuaValue::UserData(wrap_instance(lua, *id)?),
        Value::List(list) => {
            let element = match ty {
                FieldType::List(element) => element.as_ref(),
                _ => &FieldType::Number,
            };
            let table = lua.create_table_with_capacity(list.len(), 0)?;
            for (k, item) in list.as_slice().iter().enumerate() {
                table.raw_set(k + 1, to_lua(lua, item, element)?)?;
            }
            LuaValue::Table(table)
        }
        Value::Map(map) => {
            let (key_ty, value_ty) = match ty {
                FieldType::Map(k, v) => (k.as_ref(), v.as_ref()),
                _ => (&FieldType::Text, &FieldType::Number),
            };
            let table = lua.create_table_with_capacity(0, map.len())?;
            for (key, item) in map.iter() {
                table.raw_set(
                    to_lua(lua, &key.to_value(), key_ty)?,
                    to_lua(lua, item, value_ty)?,
                )?;
            }
            LuaValue::Table(table)
        }
        Value::Struct(members) => {
            let table = lua.create_table()?;
            if let FieldType::Struct(fields) = ty {
                for (field, item) in fields.iter().zip(members.iter()) {
                    table.raw_set(field.name.as_ref(), to_lua(lua, item, &field.ty)?)?;
                }
            }
            LuaValue::Table(table)
        }
        Value::Optional(None) => LuaValue::Nil,
        Value::Optional(Some(inner)) => {
            let inner_ty = match ty {
                FieldType::Optional(inner) => inner.as_ref(),
                _ => &FieldType::Number,
            };
            to_lua(lua, inner, inner_ty)?
        }
        Value::Buffer(bytes) => LuaValue::Buffer(lua.create_buffer(bytes.as_ref())?),
    })
}

/// The name of a Luau value's kind, for messages.
pub(crate) fn kind(value: &LuaValue) -> &'static str {
    match value {
        LuaValue::Nil => "nil",
        LuaValue::Boolean(_) => "a boolean",
        LuaValue::Integer(_) | LuaValue::Number(_) => "a number",
        LuaValue::Vector(_) => "a vector",
        LuaValue::String(_) => "a string",
        LuaValue::Table(_) => "a table",
        LuaValue::Function(_) => "a function",
        LuaValue::Thread(_) => "a thread",
        LuaValue::UserData(ud) => {
            if instance_id(ud).is_some() {
                "an instance"
            } else {
                "a userdata"
            }
        }
        LuaValue::Buffer(_) => "a buffer",
        _ => "a value",
    }
}

/// A field type's name, for messages.
pub(crate) fn type_name(ty: &FieldType) -> String {
    match ty {
        FieldType::Number => "a number".into(),
        FieldType::Integer => "an integer".into(),
        FieldType::Boolean => "a boolean".into(),
        FieldType::Text => "a string".into(),
        FieldType::Enum(variants) => {
            let names: Vec<&str> = variants.iter().map(|v| v.as_ref()).collect();
            format!("one of {}", names.join(", "))
        }
        FieldType::Vector => "a vector".into(),
        FieldType::Transform => "a transform (16 numbers)".into(),
        FieldType::Reference => "an instance or nil".into(),
        FieldType::List(element) => format!("a list of {}", type_name(element)),
        FieldType::Map(k, v) => format!("a map from {} to {}", type_name(k), type_name(v)),
        FieldType::Struct(_) => "a table of the struct's members".into(),
        FieldType::Optional(inner) => format!("{} or nil", type_name(inner)),
        FieldType::Buffer => "a buffer or a string".into(),
    }
}

/// A Luau number (a double) as a component of a vector or a transform, which hold single
/// precision: rounded to the nearest single, and refused when it is finite but beyond the
/// largest single (it would become infinity).
pub(crate) fn single(x: f64) -> mlua::Result<f32> {
    let rounded = x as f32;
    if x.is_finite() && !rounded.is_finite() {
        return Err(mlua::Error::runtime(format!(
            "{x:e} does not fit single precision, which vectors and transforms hold (at most ±{:e})",
            f32::MAX
        )));
    }
    Ok(rounded)
}

/// `Vector3.new(x?, y?, z?)`: a vector of single-precision components (missing ones 0).
pub(crate) fn vector3_new(
    _: &Lua,
    (x, y, z): (LuaValue, LuaValue, LuaValue),
) -> mlua::Result<mlua::Vector> {
    let component = |value: &LuaValue, axis: &str| match value {
        LuaValue::Nil => Ok(0.0),
        LuaValue::Number(_) | LuaValue::Integer(_) => single(number(value).unwrap_or_default())
            .map_err(|e| {
                mlua::Error::runtime(format!(
                    "Vector3.new's {axis}: {}",
                    super::errors::describe(&e)
                ))
            }),
        other => Err(mlua::Error::runtime(format!(
            "Vector3.new's {axis} must be a number, not {}",
            kind(other)
        ))),
    };
    Ok(mlua::Vector::new(
        component(&x, "x")?,
        component(&y, "y")?,
        component(&z, "z")?,
    ))
}

fn number(value: &LuaValue) -> Option<f64> {
    match value {
        LuaValue::Number(n) => Some(*n),
        LuaValue::Integer(i) => Some(*i as f64),
        _ => None,
    }
}

/// A Luau value as a value of a field of type `ty`; `None` when it does not fit.
pub(crate) fn from_lua(value: &LuaValue, ty: &FieldType) -> mlua::Result<Option<Value>> {
    from_lua_at(value, ty, 0)
}

fn from_lua_at(value: &LuaValue, ty: &FieldType, depth: usize) -> mlua::Result<Option<Value>> {
    if depth > MAX_DEPTH {
        return Err(mlua::Error::runtime(format!(
            "a value nests deeper than {MAX_DEPTH} levels"
        )));
    }
    match ty {
        FieldType::List(_) | FieldType::Map(..) | FieldType::Struct(_) | FieldType::Optional(_) => {
            container_from_lua(value, ty, depth)
        }
        _ => scalar_from_lua(value, ty),
    }
}

/// A Luau value as a value of a field type that holds no other value; `None` when it does
/// not fit.
fn scalar_from_lua(value: &LuaValue, ty: &FieldType) -> mlua::Result<Option<Value>> {
    Ok(match (ty, value) {
        (FieldType::Number, _) => number(value).map(Value::Number),
        (FieldType::Integer, _) => number(value)
            .filter(|n| n.fract() == 0.0 && n.abs() <= 9_007_199_254_740_992.0)
            .map(|n| Value::Integer(n as i64)),
        (FieldType::Boolean, LuaValue::Boolean(b)) => Some(Value::Boolean(*b)),
        (FieldType::Text, LuaValue::String(s)) => {
            s.to_str().ok().map(|s| Value::Text(Arc::from(&*s)))
        }
        (FieldType::Enum(variants), LuaValue::String(s)) => {
            let name = s.to_str().ok();
            name.and_then(|name| variants.iter().position(|v| v.as_ref() == &*name))
                .map(|index| Value::Enum(index as u32))
        }
        (FieldType::Vector, LuaValue::Vector(v)) => {
            Some(Value::Vector(Vec3::new(v.x(), v.y(), v.z())))
        }
        (FieldType::Vector, LuaValue::Table(t)) => {
            let c = |k: &str| t.raw_get::<Option<f64>>(k).ok().flatten();
            match (c("x"), c("y"), c("z")) {
                (Some(x), Some(y), Some(z)) => {
                    Some(Value::Vector(Vec3::new(single(x)?, single(y)?, single(z)?)))
                }
                _ => None,
            }
        }
        (FieldType::Transform, LuaValue::Table(t)) if t.raw_len() == 16 => {
            let mut rows = [[0f32; 4]; 4];
            for (k, cell) in rows.iter_mut().flatten().enumerate() {
                match t.raw_get::<Option<f64>>(k + 1)? {
                    Some(x) => *cell = single(x)?,
                    None => return Ok(None),
                }
            }
            Some(Value::Transform(Box::new(Transform { rows })))
        }
        (FieldType::Reference, LuaValue::Nil) => Some(Value::Reference(None)),
        (FieldType::Reference, LuaValue::UserData(ud)) => {
            instance_id(ud).map(|id| Value::Reference(Some(id)))
        }
        (FieldType::Buffer, LuaValue::Buffer(b)) => Some(Value::Buffer(b.to_vec().into())),
        (FieldType::Buffer, LuaValue::String(s)) => {
            Some(Value::Buffer(s.as_bytes().to_vec().into()))
        }
        _ => None,
    })
}

/// A Luau value as a value of a field type that holds others (a list, a map, a struct, an
/// optional), each converted a level deeper; `None` when it, or any it holds, does not fit.
fn container_from_lua(
    value: &LuaValue,
    ty: &FieldType,
    depth: usize,
) -> mlua::Result<Option<Value>> {
    Ok(match (ty, value) {
        (FieldType::List(element), LuaValue::Table(t)) => {
            let mut items = Vec::with_capacity(t.raw_len());
            for item in t.clone().sequence_values::<LuaValue>() {
                match from_lua_at(&item?, element, depth + 1)? {
                    Some(v) => items.push(v),
                    None => return Ok(None),
                }
            }
            Some(Value::List(ListValue::from_vec(items)))
        }
        (FieldType::Map(key_ty, value_ty), LuaValue::Table(t)) => {
            let mut map = BTreeMap::new();
            for pair in t.clone().pairs::<LuaValue, LuaValue>() {
                let (k, v) = pair?;
                let key = match from_lua_at(&k, key_ty, depth + 1)? {
                    Some(Value::Text(t)) => MapKey::Text(t),
                    Some(Value::Integer(i)) => MapKey::Integer(i),
                    Some(Value::Boolean(b)) => MapKey::Boolean(b),
                    Some(Value::Enum(e)) => MapKey::Enum(e),
                    _ => return Ok(None),
                };
                match from_lua_at(&v, value_ty, depth + 1)? {
                    Some(v) => {
                        map.insert(key, v);
                    }
                    None => return Ok(None),
                }
            }
            Some(Value::Map(Arc::new(map)))
        }
        (FieldType::Struct(fields), LuaValue::Table(t)) => {
            let mut members = Vec::with_capacity(fields.len());
            for field in fields.iter() {
                let given: LuaValue = t.raw_get(field.name.as_ref())?;
                if given.is_nil() {
                    members.push(field.default.clone());
                    continue;
                }
                match from_lua_at(&given, &field.ty, depth + 1)? {
                    Some(v) => members.push(v),
                    None => return Ok(None),
                }
            }
            Some(Value::Struct(members.into()))
        }
        (FieldType::Optional(_), LuaValue::Nil) => Some(Value::Optional(None)),
        (FieldType::Optional(inner), other) => {
            from_lua_at(other, inner, depth + 1)?.map(|v| Value::Optional(Some(Box::new(v))))
        }
        _ => None,
    })
}

/// An error converting a value for field `field` of `component`, with the field named.
pub(crate) fn in_field(error: &mlua::Error, field: &str, component: &str) -> mlua::Error {
    mlua::Error::runtime(format!(
        "field `{field}` of `{component}`: {}",
        super::errors::describe(error)
    ))
}

/// The entries of a table keyed by field name (`{ current = 5 }`), each with the index of the
/// field of `fields` it names: a key that is not a string or names no field is an error.
pub(crate) fn keyed_fields(
    table: &Table,
    component: &str,
    fields: &[FieldDef],
) -> mlua::Result<Vec<(usize, LuaValue)>> {
    let mut out = Vec::with_capacity(fields.len());
    // First a walk that reads each key as a Rust string, which takes no reference to it. A key
    // that is not a string stops the walk (a number would read as its text, which can name no
    // field when no field's name reads as a number), and the walk below says what is wrong.
    if fields.iter().all(|f| f.name.parse::<f64>().is_err()) {
        let walked = table.for_each::<String, LuaValue>(|key, given| {
            let index = fields
                .iter()
                .position(|f| *f.name == *key)
                .ok_or_else(|| mlua::Error::runtime("not a field"))?;
            out.push((index, given));
            Ok(())
        });
        if walked.is_ok() {
            return Ok(out);
        }
        out.clear();
    }
    // `for_each` walks the table with Luau's raw iterator, without a protected call per entry.
    table.for_each::<LuaValue, LuaValue>(|key, given| {
        let LuaValue::String(key) = key else {
            return Err(mlua::Error::runtime(format!(
                "the values for `{component}` are keyed by field name, not {}",
                kind(&key)
            )));
        };
        let key = key.to_str()?;
        let Some(index) = fields.iter().position(|f| *f.name == *key) else {
            return Err(mlua::Error::runtime(format!(
                "`{component}` has no field `{}`",
                &*key
            )));
        };
        out.push((index, given));
        Ok(())
    })?;
    Ok(out)
}

/// The values of a table given to `AddComponent`, checked against the component's fields by
/// name: every key must name a field and every value must fit it.
pub(crate) fn field_values(
    table: &Table,
    component: &str,
    fields: &[FieldDef],
) -> mlua::Result<Vec<(usize, Value)>> {
    let mut out = Vec::with_capacity(fields.len());
    for (index, given) in keyed_fields(table, component, fields)? {
        let FieldDef { name: key, ty, .. } = &fields[index];
        match from_lua(&given, ty).map_err(|e| in_field(&e, key, component))? {
            Some(value) => out.push((index, value)),
            None => {
                return Err(mlua::Error::runtime(format!(
                    "field `{key}` of `{component}` takes {}, not {}",
                    type_name(ty),
                    kind(&given)
                )));
            }
        }
    }
    out.sort_by_key(|(index, _)| *index);
    Ok(out)
}
