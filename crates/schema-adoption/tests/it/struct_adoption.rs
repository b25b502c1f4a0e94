//! Rows survive every round trip through orphan records, for every field kind and nested ones:
//! a definition removed and added back, a row its class keeps out for a while, a redefinition.
//! Structs are read back by member name, enums by variant name, also inside lists, maps and
//! optionals.

use std::collections::BTreeMap;
use std::sync::Arc;

use strata_arena::{Arena, ClassId, InstanceId, Transform, Vec3};
use strata_component_store::{InstanceRef, ListValue, MapKey, Store, Value};
use strata_schema_adoption::SchemaSync;

/// Every field kind, with structs and enums nested in every container.
const RICH: &str = r#"
return component {
    classes = CLASSES,
    fields = {
        n = number(),
        i = integer(),
        b = boolean(),
        t = text(),
        e = enum({ "Calm", "Angry", "Sleepy" }),
        v = vector(),
        x = transform(),
        r = ref(),
        l = list(integer()),
        m = map(text(), number()),
        s = struct({ a = number(), mood = enum({ "Calm", "Angry" }), inner = struct({ z = text() }) }),
        o = optional(number()),
        buf = buffer(),
        ls = list(struct({ a = integer(), b = text() })),
        ms = map(enum({ "K1", "K2" }), struct({ a = integer(), b = boolean() })),
        os = optional(struct({ a = integer() })),
        le = list(enum({ "P", "Q" })),
    },
}
"#;

fn rich(classes: &str) -> String {
    RICH.replace("CLASSES", classes)
}

fn sv(values: Vec<Value>) -> Value {
    Value::Struct(values.into())
}

fn text(s: &str) -> Value {
    Value::Text(s.into())
}

/// Non-default values for every field of `RICH`, in field (name) order.
fn values(target: InstanceId) -> Vec<(&'static str, Value)> {
    vec![
        ("b", Value::Boolean(true)),
        ("buf", Value::Buffer(Arc::from(&[1_u8, 2, 3][..]))),
        ("e", Value::Enum(2)),
        ("i", Value::Integer(-42)),
        (
            "l",
            Value::List(ListValue::from_vec(vec![Value::Integer(5)])),
        ),
        (
            "le",
            Value::List(ListValue::from_vec(vec![Value::Enum(1), Value::Enum(0)])),
        ),
        (
            "ls",
            Value::List(ListValue::from_vec(vec![
                sv(vec![Value::Integer(1), text("one")]),
                sv(vec![Value::Integer(2), text("two")]),
            ])),
        ),
        (
            "m",
            Value::Map(Arc::new(BTreeMap::from([(
                MapKey::Text("k".into()),
                Value::Number(2.5),
            )]))),
        ),
        (
            "ms",
            Value::Map(Arc::new(BTreeMap::from([(
                MapKey::Enum(1),
                sv(vec![Value::Integer(9), Value::Boolean(true)]),
            )]))),
        ),
        ("n", Value::Number(1.5)),
        ("o", Value::Optional(Some(Box::new(Value::Number(3.0))))),
        (
            "os",
            Value::Optional(Some(Box::new(sv(vec![Value::Integer(4)])))),
        ),
        ("r", Value::Reference(Some(target))),
        (
            "s",
            // Members by name: a, inner, mood.
            sv(vec![
                Value::Number(7.0),
                sv(vec![text("deep")]),
                Value::Enum(1),
            ]),
        ),
        ("t", text("hello")),
        ("v", Value::Vector(Vec3::new(1.0, 2.0, 3.0))),
        (
            "x",
            Value::Transform(Box::new(Transform::from_position(Vec3::new(4.0, 5.0, 6.0)))),
        ),
    ]
}

struct World {
    arena: Arena,
    store: Store,
    sync: SchemaSync,
}

impl World {
    fn new() -> Self {
        Self {
            arena: Arena::standard(),
            store: Store::new(),
            sync: SchemaSync::new().unwrap(),
        }
    }

    fn spawn(&mut self, class: ClassId) -> InstanceRef {
        let id = self.arena.create(class, None).unwrap();
        InstanceRef::new(id, self.arena.slot_of(id).unwrap())
    }

    fn define(&mut self, name: &str, source: &str) -> InstanceId {
        let id = self
            .arena
            .create(ClassId::COMPONENT_DEFINITION, None)
            .unwrap();
        self.arena.set_name(id, name).unwrap();
        self.arena.set_definition_source(id, source).unwrap();
        id
    }

    fn sync(&mut self) -> String {
        self.sync.sync(&self.arena, &mut self.store).to_string()
    }

    /// Adds the rich row to `at` (class `class`).
    fn add(&mut self, at: InstanceRef, class: ClassId, target: InstanceId) {
        let c = self.store.component("Rich").unwrap();
        let row: Vec<_> = values(target)
            .into_iter()
            .map(|(name, value)| (self.store.field(c, name).unwrap(), value))
            .collect();
        self.store.add(at, class, c, row).unwrap();
    }

    #[track_caller]
    fn assert_values(&self, at: InstanceRef, target: InstanceId) {
        let c = self.store.component("Rich").unwrap();
        for (name, value) in values(target) {
            assert_eq!(
                self.store
                    .get_value(at, c, self.store.field(c, name).unwrap())
                    .unwrap(),
                value,
                "field {name}"
            );
        }
    }
}

#[test]
fn removing_and_re_adding_a_definition_keeps_every_kind_of_value() {
    let mut w = World::new();
    let source = rich("nil");
    let def = w.define("Rich", &source);
    w.sync();
    let target = w.spawn(ClassId::PART).id;
    let e = w.spawn(ClassId::ENTITY);
    w.add(e, ClassId::ENTITY, target);
    w.assert_values(e, target);

    w.arena.destroy(def).unwrap();
    w.sync();
    assert!(w.store.component("Rich").is_none());
    assert_eq!(w.store.orphans().len(), 1);

    // The identical definition comes back: every value, nested ones included, is kept.
    w.define("Rich", &source);
    let report = w.sync();
    assert!(!report.contains("reset"), "{report}");
    w.assert_values(e, target);
    assert!(w.store.orphans().is_empty());
}

#[test]
fn a_row_its_class_keeps_out_for_a_while_keeps_every_kind_of_value() {
    let mut w = World::new();
    let def = w.define("Rich", &rich(r#"{ "Entity", "Part" }"#));
    w.sync();
    let target = w.spawn(ClassId::MODEL).id;
    let part = w.spawn(ClassId::PART);
    w.add(part, ClassId::PART, target);

    // Parts are excluded: the typed row becomes an orphan record.
    w.arena
        .set_definition_source(def, &rich(r#"{ "Entity" }"#))
        .unwrap();
    let report = w.sync();
    assert!(report.contains("unadopted: 1"), "{report}");
    let rich_id = w.store.component("Rich").unwrap();
    assert!(!w.store.has(part, rich_id));

    // Parts are allowed again: the record is adopted with all its values.
    w.arena
        .set_definition_source(def, &rich(r#"{ "Entity", "Part" }"#))
        .unwrap();
    let report = w.sync();
    assert!(!report.contains("reset"), "{report}");
    w.assert_values(part, target);
}

#[test]
fn struct_members_and_enum_variants_are_matched_by_name_from_orphans() {
    let mut w = World::new();
    let def = w.define(
        "Shape",
        r#"return component { fields = {
            s = struct({ a = number(), b = enum({ "X", "Y" }) }),
        } }"#,
    );
    w.sync();
    let e = w.spawn(ClassId::ENTITY);
    let shape = w.store.component("Shape").unwrap();
    let s = w.store.field(shape, "s").unwrap();
    w.store
        .add(
            e,
            ClassId::ENTITY,
            shape,
            [(s, sv(vec![Value::Number(2.0), Value::Enum(1)]))],
        )
        .unwrap();
    w.arena.destroy(def).unwrap();
    w.sync();

    // Back with a member added before the others and the variants reordered.
    w.define(
        "Shape",
        r#"return component { fields = {
            s = struct({ _first = integer(9), a = number(), b = enum({ "Y", "X" }) }),
        } }"#,
    );
    let report = w.sync();
    assert!(!report.contains("reset"), "{report}");
    let shape = w.store.component("Shape").unwrap();
    let s = w.store.field(shape, "s").unwrap();
    assert_eq!(
        w.store.get_value(e, shape, s).unwrap(),
        sv(vec![Value::Integer(9), Value::Number(2.0), Value::Enum(0)]),
        "the new member takes its default, `a` and `b` (Y, now first) carry over"
    );
}

#[test]
fn migration_input_keeps_the_types_its_values_were_stored_under() {
    let mut w = World::new();
    let def = w.define(
        "Shape",
        "return component { fields = { s = struct({ a = number(), b = enum({ \"X\", \"Y\" }) }) } }",
    );
    w.sync();
    let e = w.spawn(ClassId::ENTITY);
    let shape = w.store.component("Shape").unwrap();
    let s = w.store.field(shape, "s").unwrap();
    let old_value = sv(vec![Value::Number(2.0), Value::Enum(1)]);
    w.store
        .add(e, ClassId::ENTITY, shape, [(s, old_value.clone())])
        .unwrap();
    let old_type = w.store.def(shape).unwrap().fields()[0].ty.clone();

    w.arena
        .set_definition_source(
            def,
            "return component { version = 2, fields = { s = struct({ a = number() }) } }",
        )
        .unwrap();
    w.sync();
    let input = w.store.migration_input(e.id, shape).unwrap();
    assert_eq!(input.version, 1);
    assert_eq!(input.field("s"), Some(&old_value));
    assert_eq!(
        input.field_type("s"),
        Some(&old_type),
        "members and variants by name"
    );
}
