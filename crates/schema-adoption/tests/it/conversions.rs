//! Every cell of the conversion table in the crate docs, plus the conditional edges.

use std::collections::BTreeMap;
use std::sync::Arc;

use strata_arena::{InstanceId, Transform, Vec3};
use strata_component_store::{FieldType, ListValue, MapKey, StructField, Value};
use strata_schema_adoption::convert;

fn variants(names: &[&str]) -> FieldType {
    FieldType::Enum(names.iter().map(|n| Arc::from(*n)).collect())
}

fn member(name: &str, ty: FieldType, default: Value) -> StructField {
    StructField {
        name: name.into(),
        ty,
        default,
    }
}

fn text(s: &str) -> Value {
    Value::Text(s.into())
}

/// One sample per source type: (row label, the type it is stored under, the value).
fn sources() -> Vec<(&'static str, FieldType, Value)> {
    vec![
        ("number", FieldType::Number, Value::Number(3.0)),
        ("integer", FieldType::Integer, Value::Integer(7)),
        ("boolean", FieldType::Boolean, Value::Boolean(true)),
        ("text", FieldType::Text, text("Calm")),
        ("enum", variants(&["Calm", "Angry"]), Value::Enum(1)),
        ("vector", FieldType::Vector, Value::Vector(Vec3::ONE)),
        (
            "transform",
            FieldType::Transform,
            Value::Transform(Box::new(Transform::IDENTITY)),
        ),
        (
            "ref",
            FieldType::Reference,
            Value::Reference(InstanceId::new(9)),
        ),
        (
            "list",
            FieldType::List(Box::new(FieldType::Integer)),
            Value::List(ListValue::from_vec(vec![
                Value::Integer(1),
                Value::Integer(2),
            ])),
        ),
        (
            "map",
            FieldType::Map(Box::new(FieldType::Text), Box::new(FieldType::Integer)),
            Value::Map(Arc::new(BTreeMap::from([(
                MapKey::Text("a".into()),
                Value::Integer(1),
            )]))),
        ),
        (
            "struct",
            FieldType::Struct(vec![member("a", FieldType::Number, Value::Number(0.0))].into()),
            Value::Struct(vec![Value::Number(1.0)].into()),
        ),
        (
            "optional",
            FieldType::Optional(Box::new(FieldType::Number)),
            Value::Optional(Some(Box::new(Value::Number(1.0)))),
        ),
        (
            "buffer",
            FieldType::Buffer,
            Value::Buffer(Arc::from(&b"hi"[..])),
        ),
    ]
}

/// One target per column.
fn targets() -> Vec<(&'static str, FieldType)> {
    vec![
        ("number", FieldType::Number),
        ("integer", FieldType::Integer),
        ("boolean", FieldType::Boolean),
        ("text", FieldType::Text),
        ("enum", variants(&["Angry", "Calm"])),
        ("vector", FieldType::Vector),
        ("transform", FieldType::Transform),
        ("ref", FieldType::Reference),
        ("list", FieldType::List(Box::new(FieldType::Number))),
        (
            "map",
            FieldType::Map(Box::new(FieldType::Text), Box::new(FieldType::Number)),
        ),
        (
            "struct",
            FieldType::Struct(
                vec![
                    member("a", FieldType::Number, Value::Number(0.0)),
                    member("b", FieldType::Integer, Value::Integer(5)),
                ]
                .into(),
            ),
        ),
        ("optional", FieldType::Optional(Box::new(FieldType::Number))),
        ("buffer", FieldType::Buffer),
    ]
}

/// The expected result of every cell for the samples above; `None` where the table says no.
fn expected(from: &str, to: &str) -> Option<Value> {
    let some = |v: Value| Some(Value::Optional(Some(Box::new(v))));
    match (from, to) {
        ("number", "number") => Some(Value::Number(3.0)),
        ("number", "integer") => Some(Value::Integer(3)),
        ("number", "optional") => some(Value::Number(3.0)),
        ("integer", "number") => Some(Value::Number(7.0)),
        ("integer", "integer") => Some(Value::Integer(7)),
        ("integer", "optional") => some(Value::Number(7.0)),
        ("boolean", "boolean") => Some(Value::Boolean(true)),
        ("text", "text") => Some(text("Calm")),
        ("text", "enum") => Some(Value::Enum(1)),
        ("text", "buffer") => Some(Value::Buffer(Arc::from(&b"Calm"[..]))),
        ("enum", "text") => Some(text("Angry")),
        ("enum", "enum") => Some(Value::Enum(0)),
        ("vector", "vector") => Some(Value::Vector(Vec3::ONE)),
        ("transform", "transform") => Some(Value::Transform(Box::new(Transform::IDENTITY))),
        ("ref", "ref") => Some(Value::Reference(InstanceId::new(9))),
        ("list", "list") => Some(Value::List(ListValue::from_vec(vec![
            Value::Number(1.0),
            Value::Number(2.0),
        ]))),
        ("map", "map") => Some(Value::Map(Arc::new(BTreeMap::from([(
            MapKey::Text("a".into()),
            Value::Number(1.0),
        )])))),
        ("struct", "struct") => Some(Value::Struct(
            vec![Value::Number(1.0), Value::Integer(5)].into(),
        )),
        ("optional", "number") => Some(Value::Number(1.0)),
        ("optional", "integer") => Some(Value::Integer(1)),
        ("optional", "optional") => some(Value::Number(1.0)),
        ("buffer", "text") => Some(text("hi")),
        ("buffer", "buffer") => Some(Value::Buffer(Arc::from(&b"hi"[..]))),
        _ => None,
    }
}

#[test]
fn every_cell_of_the_table() {
    let mut checked = 0;
    for (from_name, from_ty, value) in sources() {
        for (to_name, to_ty) in targets() {
            let got = convert(&value, Some(&from_ty), &to_ty);
            assert_eq!(
                got,
                expected(from_name, to_name),
                "{from_name} -> {to_name}"
            );
            if let Some(converted) = &got {
                assert!(
                    converted.conforms(&to_ty),
                    "{from_name} -> {to_name} conforms"
                );
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 13 * 13);
}

#[test]
fn conditional_cells_fail_exactly_where_the_table_says() {
    let int = FieldType::Integer;
    let num = FieldType::Number;
    let check =
        |value: Value, from: Option<&FieldType>, to: &FieldType, expected: Option<Value>| {
            assert_eq!(
                convert(&value, from, to),
                expected,
                "{value:?} -> {}",
                to.name()
            );
        };
    check(Value::Number(2.5), Some(&num), &int, None);
    check(
        Value::Number(-4.0),
        Some(&num),
        &int,
        Some(Value::Integer(-4)),
    );
    check(Value::Number(1e300), Some(&num), &int, None);
    check(Value::Integer(1 << 60), Some(&int), &num, None);
    check(Value::Integer(i64::MIN), Some(&int), &num, None);
    check(
        Value::Integer(-(1 << 53)),
        Some(&int),
        &num,
        Some(Value::Number(-(2f64.powi(53)))),
    );
    check(
        text("Furious"),
        Some(&FieldType::Text),
        &variants(&["Calm"]),
        None,
    );
    // Raw saved enums carry no names: they keep their index when it fits, and never become text.
    check(
        Value::Enum(1),
        None,
        &variants(&["A", "B"]),
        Some(Value::Enum(1)),
    );
    check(Value::Enum(5), None, &variants(&["A", "B"]), None);
    check(Value::Enum(0), None, &FieldType::Text, None);
    // A typed enum whose variant disappeared does not convert.
    check(
        Value::Enum(1),
        Some(&variants(&["Calm", "Angry"])),
        &variants(&["Calm"]),
        None,
    );
    check(
        Value::Buffer(Arc::from(&[0xff, 0xfe][..])),
        Some(&FieldType::Buffer),
        &FieldType::Text,
        None,
    );
    // A list or map converts only whole.
    let mixed = Value::List(ListValue::from_vec(vec![
        Value::Number(1.0),
        Value::Number(1.5),
    ]));
    check(
        mixed,
        Some(&FieldType::List(Box::new(num.clone()))),
        &FieldType::List(Box::new(int.clone())),
        None,
    );
    // Structs: a dropped member loses data, and raw structs carry no member names.
    let two = FieldType::Struct(
        vec![
            member("a", num.clone(), Value::Number(0.0)),
            member("z", num.clone(), Value::Number(0.0)),
        ]
        .into(),
    );
    let only_a = FieldType::Struct(vec![member("a", num.clone(), Value::Number(0.0))].into());
    check(
        Value::Struct(vec![Value::Number(1.0), Value::Number(2.0)].into()),
        Some(&two),
        &only_a,
        None,
    );
    check(
        Value::Struct(vec![Value::Number(1.0)].into()),
        None,
        &only_a,
        None,
    );
    // Optionals: unset converts only to an optional.
    let opt = FieldType::Optional(Box::new(num.clone()));
    check(Value::Optional(None), Some(&opt), &num, None);
    check(
        Value::Optional(None),
        Some(&opt),
        &FieldType::Optional(Box::new(int.clone())),
        Some(Value::Optional(None)),
    );
    check(
        Value::Number(2.0),
        Some(&num),
        &FieldType::Optional(Box::new(int)),
        Some(Value::Optional(Some(Box::new(Value::Integer(2))))),
    );
}
