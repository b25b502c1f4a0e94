//! Converting a saved or previously typed value to a field's (possibly new) type.
//!
//! Invariant: a conversion either preserves the value exactly or fails; there is no lossy or
//! partial conversion. A failed conversion makes adoption reset the field to its default. The
//! table of what converts to what is in the crate docs.

use std::collections::BTreeMap;
use std::sync::Arc;

use strata_component_store::{FieldType, ListValue, MapKey, StructField, Value};

/// The inner type of an optional source type (or the type itself).
fn unwrap_optional(from: Option<&FieldType>) -> Option<&FieldType> {
    match from {
        Some(FieldType::Optional(inner)) => Some(inner),
        other => other,
    }
}

/// The largest integer magnitude an `f64` holds exactly.
const EXACT_F64: i64 = 1 << 53;

/// Converts `value` to `to`. `from` is the type the value was stored under when known (typed
/// rows, and orphan records that keep their types): enums then convert by variant name and
/// structs by member name. Without it, enums keep their index when it is in range, and structs
/// do not convert.
pub fn convert(value: &Value, from: Option<&FieldType>, to: &FieldType) -> Option<Value> {
    match (value, to) {
        (Value::Number(n), FieldType::Number) => Some(Value::Number(*n)),
        (Value::Number(n), FieldType::Integer) => {
            (n.fract() == 0.0 && n.abs() <= EXACT_F64 as f64).then_some(Value::Integer(*n as i64))
        }
        (Value::Integer(i), FieldType::Integer) => Some(Value::Integer(*i)),
        (Value::Integer(i), FieldType::Number) => {
            (i.unsigned_abs() <= EXACT_F64 as u64).then_some(Value::Number(*i as f64))
        }
        (Value::Boolean(b), FieldType::Boolean) => Some(Value::Boolean(*b)),
        (Value::Text(t), FieldType::Text) => Some(Value::Text(t.clone())),
        (Value::Text(t), FieldType::Enum(variants)) => variants
            .iter()
            .position(|v| **v == **t)
            .map(|i| Value::Enum(i as u32)),
        (Value::Enum(i), FieldType::Enum(variants)) => convert_enum(*i, from, variants),
        (Value::Enum(i), FieldType::Text) => match from {
            Some(FieldType::Enum(old)) => {
                old.get(*i as usize).map(|name| Value::Text(name.clone()))
            }
            _ => None,
        },
        (Value::Vector(v), FieldType::Vector) => Some(Value::Vector(*v)),
        (Value::Transform(t), FieldType::Transform) => Some(Value::Transform(t.clone())),
        (Value::Reference(r), FieldType::Reference) => Some(Value::Reference(*r)),
        (Value::Buffer(b), FieldType::Buffer) => Some(Value::Buffer(b.clone())),
        (Value::Text(t), FieldType::Buffer) => Some(Value::Buffer(Arc::from(t.as_bytes()))),
        (Value::Buffer(b), FieldType::Text) => {
            std::str::from_utf8(b).ok().map(|s| Value::Text(s.into()))
        }
        (Value::List(list), FieldType::List(element)) => convert_list(list, from, element),
        (Value::Map(map), FieldType::Map(key, value_ty)) => convert_map(map, from, key, value_ty),
        (Value::Struct(values), FieldType::Struct(members)) => {
            convert_struct(values, from, members)
        }
        (Value::Optional(inner), FieldType::Optional(ty)) => match inner {
            None => Some(Value::Optional(None)),
            Some(v) => {
                convert(v, unwrap_optional(from), ty).map(|v| Value::Optional(Some(Box::new(v))))
            }
        },
        (Value::Optional(Some(inner)), ty) => convert(inner, unwrap_optional(from), ty),
        (value, FieldType::Optional(ty)) => {
            convert(value, from, ty).map(|v| Value::Optional(Some(Box::new(v))))
        }
        _ => None,
    }
}

/// Converts the enum index `i` to the enum `variants`: by variant name when `from` is the enum
/// it was stored under, else by index when the index is in range. Returns `None` when the
/// variant is missing.
fn convert_enum(i: u32, from: Option<&FieldType>, variants: &[Arc<str>]) -> Option<Value> {
    match from {
        Some(FieldType::Enum(old)) => {
            let name = old.get(i as usize)?;
            variants
                .iter()
                .position(|v| v == name)
                .map(|i| Value::Enum(i as u32))
        }
        _ => ((i as usize) < variants.len()).then_some(Value::Enum(i)),
    }
}

/// Converts every element of `list` to `element`, the old element type taken from `from`
/// when it is a list. Returns `None` when any element does not convert.
fn convert_list(list: &ListValue, from: Option<&FieldType>, element: &FieldType) -> Option<Value> {
    let old_element = match from {
        Some(FieldType::List(e)) => Some(&**e),
        _ => None,
    };
    let converted: Option<Vec<Value>> = list
        .as_slice()
        .iter()
        .map(|e| convert(e, old_element, element))
        .collect();
    converted.map(|c| Value::List(ListValue::from_vec(c)))
}

/// Converts every key of `map` to `key` and every value to `value_ty`, the old types taken from
/// `from` when it is a map. Returns `None` when any key or value does not convert, or a key
/// converts to a value that cannot be a key.
fn convert_map(
    map: &BTreeMap<MapKey, Value>,
    from: Option<&FieldType>,
    key: &FieldType,
    value_ty: &FieldType,
) -> Option<Value> {
    let (old_key, old_value) = match from {
        Some(FieldType::Map(k, v)) => (Some(&**k), Some(&**v)),
        _ => (None, None),
    };
    let mut out = BTreeMap::new();
    for (k, v) in map.iter() {
        let k = match convert(&k.to_value(), old_key, key)? {
            Value::Text(t) => MapKey::Text(t),
            Value::Integer(i) => MapKey::Integer(i),
            Value::Boolean(b) => MapKey::Boolean(b),
            Value::Enum(e) => MapKey::Enum(e),
            _ => return None,
        };
        out.insert(k, convert(v, old_value, value_ty)?);
    }
    Some(Value::Map(Arc::new(out)))
}

/// Converts the struct `values` to `members` by member name, which needs `from`, the struct
/// they were stored under. Returns `None` without it, when an old member has no new member of
/// its name (its value would be lost), or when a member's value does not convert; new members
/// take their defaults.
fn convert_struct(
    values: &[Value],
    from: Option<&FieldType>,
    members: &[StructField],
) -> Option<Value> {
    let Some(FieldType::Struct(old)) = from else {
        return None;
    };
    // Every old member must carry over (a dropped member would lose data); members the
    // old struct lacked take their defaults.
    if old
        .iter()
        .any(|o| !members.iter().any(|m| m.name == o.name))
    {
        return None;
    }
    let converted: Option<Vec<Value>> = members
        .iter()
        .map(|m| match old.iter().position(|o| o.name == m.name) {
            Some(i) => convert(values.get(i)?, Some(&old[i].ty), &m.ty),
            None => Some(m.default.clone()),
        })
        .collect();
    converted.map(|c| Value::Struct(c.into()))
}
