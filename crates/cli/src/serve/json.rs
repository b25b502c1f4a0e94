//! Component values as the API writes and reads them, guided by the field's type:
//!
//! | type | JSON |
//! |---|---|
//! | number, integer, boolean, text | a number, a whole number, `true`/`false`, a string |
//! | enum | the variant's name |
//! | vector | `{"x": .., "y": .., "z": ..}` |
//! | transform | `{"rows": [[4 numbers] x 4]}` |
//! | ref | an instance id, or `null` |
//! | list | an array |
//! | map | an array of `[key, value]` pairs, in key order |
//! | struct | an object by field name |
//! | optional | `null`, or the value |
//! | buffer | an array of bytes (0 to 255) |
//!
//! Invariant: [`value_from_json`] gives only values that conform to the type it was given, or
//! an error naming what was expected and what came; it never guesses a conversion.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value as JsonValue, json};
use strata::prelude::*;
use strata_component_store::{ListValue, MapKey};

/// A value as JSON (see the module table); `ty` names enum variants.
pub(crate) fn value_to_json(value: &Value, ty: &FieldType) -> JsonValue {
    match (value, ty) {
        (Value::Number(n), _) => number(*n),
        (Value::Integer(n), _) => json!(n),
        (Value::Boolean(b), _) => json!(b),
        (Value::Text(t), _) => json!(&**t),
        (Value::Enum(index), FieldType::Enum(variants)) => variants
            .get(*index as usize)
            .map_or_else(|| json!(index), |name| json!(&**name)),
        (Value::Enum(index), _) => json!(index),
        (Value::Vector(v), _) => vector(*v),
        (Value::Transform(t), _) => {
            json!({ "rows": t.rows.map(|row| row.map(|x| number(f64::from(x)))) })
        }
        (Value::Reference(target), _) => target.map_or(JsonValue::Null, |id| json!(id.get())),
        (Value::List(list), FieldType::List(element)) => JsonValue::Array(
            list.as_slice()
                .iter()
                .map(|v| value_to_json(v, element))
                .collect(),
        ),
        (Value::Map(map), FieldType::Map(key, item)) => JsonValue::Array(
            map.iter()
                .map(|(k, v)| json!([value_to_json(&k.to_value(), key), value_to_json(v, item)]))
                .collect(),
        ),
        (Value::Struct(values), FieldType::Struct(fields)) => JsonValue::Object(
            fields
                .iter()
                .zip(values.iter())
                .map(|(field, v)| (field.name.to_string(), value_to_json(v, &field.ty)))
                .collect(),
        ),
        (Value::Optional(inner), FieldType::Optional(ty)) => inner
            .as_deref()
            .map_or(JsonValue::Null, |v| value_to_json(v, ty)),
        (Value::Buffer(bytes), _) => json!(&**bytes),
        // A stored value conforms to its field's type, so a compound value always meets its
        // own type above; nothing else is written for one that does not.
        (Value::List(_) | Value::Map(_) | Value::Struct(_) | Value::Optional(_), _) => {
            JsonValue::Null
        }
    }
}

/// An attribute's value as JSON.
pub(crate) fn attribute_to_json(value: &AttrValue) -> JsonValue {
    match value {
        AttrValue::Bool(b) => json!(b),
        AttrValue::Number(n) => number(*n),
        AttrValue::Integer(n) => json!(n),
        AttrValue::Text(t) => json!(&**t),
        AttrValue::Vector(v) => vector(*v),
        AttrValue::Color(c) => json!({ "r": c.r, "g": c.g, "b": c.b }),
        AttrValue::Transform(t) => json!({ "rows": t.rows }),
        AttrValue::Reference(target) => target.map_or(JsonValue::Null, |id| json!(id.get())),
    }
}

/// A number as JSON: non-finite numbers, which JSON cannot hold, as strings.
fn number(n: f64) -> JsonValue {
    serde_json::Number::from_f64(n).map_or_else(|| json!(n.to_string()), JsonValue::Number)
}

fn vector(v: Vec3) -> JsonValue {
    json!({ "x": number(f64::from(v.x)), "y": number(f64::from(v.y)), "z": number(f64::from(v.z)) })
}

/// The value `json` stands for as a value of type `ty`, or what is wrong with it.
pub(crate) fn value_from_json(json: &JsonValue, ty: &FieldType) -> Result<Value, String> {
    let wrong = || format!("expected {}, got {}", ty.name(), shown(json));
    Ok(match ty {
        FieldType::Number => Value::Number(json.as_f64().ok_or_else(wrong)?),
        FieldType::Integer => Value::Integer(json.as_i64().ok_or_else(wrong)?),
        FieldType::Boolean => Value::Boolean(json.as_bool().ok_or_else(wrong)?),
        FieldType::Text => Value::Text(Arc::from(json.as_str().ok_or_else(wrong)?)),
        FieldType::Enum(variants) => {
            let name = json.as_str().ok_or_else(wrong)?;
            let index = variants
                .iter()
                .position(|v| &**v == name)
                .ok_or_else(wrong)?;
            Value::Enum(u32::try_from(index).map_err(|_| wrong())?)
        }
        FieldType::Vector => Value::Vector(vector_from(json).ok_or_else(wrong)?),
        FieldType::Transform => {
            let rows = json
                .get("rows")
                .and_then(JsonValue::as_array)
                .ok_or_else(wrong)?;
            if rows.len() != 4 {
                return Err(wrong());
            }
            let mut transform = Transform::IDENTITY;
            for (r, row) in rows.iter().enumerate() {
                let row = row
                    .as_array()
                    .filter(|row| row.len() == 4)
                    .ok_or_else(wrong)?;
                for (c, x) in row.iter().enumerate() {
                    transform.rows[r][c] = x.as_f64().ok_or_else(wrong)? as f32;
                }
            }
            Value::Transform(Box::new(transform))
        }
        FieldType::Reference => match json {
            JsonValue::Null => Value::Reference(None),
            _ => Value::Reference(Some(
                json.as_u64().and_then(InstanceId::new).ok_or_else(wrong)?,
            )),
        },
        FieldType::List(element) => {
            let items = json.as_array().ok_or_else(wrong)?;
            let values = items
                .iter()
                .map(|item| value_from_json(item, element))
                .collect::<Result<Vec<_>, _>>()?;
            Value::List(ListValue::from_vec(values))
        }
        FieldType::Map(key, item) => {
            let pairs = json.as_array().ok_or_else(wrong)?;
            let mut map = BTreeMap::new();
            for pair in pairs {
                let pair = pair.as_array().filter(|p| p.len() == 2).ok_or_else(wrong)?;
                let k = map_key(&value_from_json(&pair[0], key)?).ok_or_else(wrong)?;
                map.insert(k, value_from_json(&pair[1], item)?);
            }
            Value::Map(Arc::new(map))
        }
        FieldType::Struct(fields) => {
            let object: &Map<String, JsonValue> = json.as_object().ok_or_else(wrong)?;
            if let Some(unknown) = object
                .keys()
                .find(|k| !fields.iter().any(|f| &*f.name == k.as_str()))
            {
                return Err(format!("{} has no field {unknown:?}", ty.name()));
            }
            let values = fields
                .iter()
                .map(|field| match object.get(&*field.name) {
                    Some(v) => value_from_json(v, &field.ty),
                    None => Ok(field.default.clone()),
                })
                .collect::<Result<Vec<_>, _>>()?;
            Value::Struct(Arc::from(values))
        }
        FieldType::Optional(inner) => match json {
            JsonValue::Null => Value::Optional(None),
            _ => Value::Optional(Some(Box::new(value_from_json(json, inner)?))),
        },
        FieldType::Buffer => {
            let items = json.as_array().ok_or_else(wrong)?;
            let bytes = items
                .iter()
                .map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
                .collect::<Option<Vec<u8>>>()
                .ok_or_else(wrong)?;
            Value::Buffer(Arc::from(bytes))
        }
    })
}

fn vector_from(json: &JsonValue) -> Option<Vec3> {
    let part = |name: &str| json.get(name).and_then(JsonValue::as_f64).map(|x| x as f32);
    Some(Vec3::new(part("x")?, part("y")?, part("z")?))
}

fn map_key(value: &Value) -> Option<MapKey> {
    Some(match value {
        Value::Text(t) => MapKey::Text(Arc::clone(t)),
        Value::Integer(n) => MapKey::Integer(*n),
        Value::Boolean(b) => MapKey::Boolean(*b),
        Value::Enum(i) => MapKey::Enum(*i),
        _ => return None,
    })
}

/// A short rendering of what came, for an error.
fn shown(json: &JsonValue) -> String {
    let text = json.to_string();
    if text.len() > 40 {
        format!("{}...", &text[..text.floor_char_boundary(40)])
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_component_store::StructField;

    fn types() -> Vec<(FieldType, JsonValue)> {
        let point: Arc<[StructField]> = Arc::from(vec![
            StructField {
                name: "a".into(),
                ty: FieldType::Integer,
                default: Value::Integer(0),
            },
            StructField {
                name: "b".into(),
                ty: FieldType::Text,
                default: Value::Text("".into()),
            },
        ]);
        vec![
            (FieldType::Number, json!(2.5)),
            (FieldType::Integer, json!(-7)),
            (FieldType::Boolean, json!(true)),
            (FieldType::Text, json!("hi")),
            (
                FieldType::Enum(Arc::from(vec![Arc::from("red"), Arc::from("blue")])),
                json!("blue"),
            ),
            (FieldType::Vector, json!({ "x": 1.0, "y": 2.0, "z": 3.0 })),
            (
                FieldType::Transform,
                json!({ "rows": [[1.0, 0.0, 0.0, 2.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]] }),
            ),
            (FieldType::Reference, json!(12)),
            (FieldType::Reference, JsonValue::Null),
            (
                FieldType::List(Box::new(FieldType::Integer)),
                json!([1, 2, 3]),
            ),
            (
                FieldType::Map(Box::new(FieldType::Text), Box::new(FieldType::Number)),
                json!([["a", 1.0], ["b", 2.0]]),
            ),
            (FieldType::Struct(point), json!({ "a": 4, "b": "x" })),
            (
                FieldType::Optional(Box::new(FieldType::Number)),
                JsonValue::Null,
            ),
            (FieldType::Optional(Box::new(FieldType::Number)), json!(1.5)),
            (FieldType::Buffer, json!([0, 255, 7])),
        ]
    }

    #[test]
    fn every_type_reads_back_as_it_was_written() {
        for (ty, json) in types() {
            let value = value_from_json(&json, &ty).unwrap_or_else(|e| panic!("{ty:?}: {e}"));
            assert!(value.conforms(&ty), "{ty:?}");
            assert_eq!(value_to_json(&value, &ty), json, "{ty:?}");
        }
    }

    #[test]
    fn a_value_of_the_wrong_shape_is_refused_naming_the_type() {
        for (ty, _) in types() {
            let error = value_from_json(&json!({ "nothing": "like it" }), &ty);
            if let FieldType::Optional(_) = ty {
                continue;
            }
            let error = error.expect_err(&ty.name());
            assert!(
                error.contains(&ty.name()) || error.contains("no field"),
                "{error}"
            );
        }
        assert!(value_from_json(&json!(1.5), &FieldType::Integer).is_err());
        assert!(value_from_json(&json!(256), &FieldType::Buffer).is_err());
        assert!(
            value_from_json(
                &json!("green"),
                &FieldType::Enum(Arc::from(vec![Arc::from("red")]))
            )
            .is_err()
        );
        assert!(
            value_from_json(&json!(0), &FieldType::Reference).is_err(),
            "no instance 0"
        );
    }
}
