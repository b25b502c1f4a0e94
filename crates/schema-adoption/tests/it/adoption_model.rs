//! Adoption against a model: for random component definitions over every field kind (nested
//! up to three deep) and random rows, no value is lost by any round trip the sync makes:
//! removing the definition and adding it back, excluding a class for a while, or redefining it
//! with an identical schema. The model is simply the values written.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use proptest::prelude::*;
use strata_arena::{Arena, ClassId, InstanceId, Transform, Vec3};
use strata_component_store::{FieldType, InstanceRef, ListValue, MapKey, Store, Value};
use strata_schema_adoption::SchemaSync;

/// A field kind, as the schema writes it.
#[derive(Clone, Debug)]
enum Kind {
    Number,
    Integer,
    Boolean,
    Text,
    Enum(usize),
    Vector,
    Transform,
    Ref,
    Buffer,
    List(Box<Kind>),
    Map(Box<Kind>, Box<Kind>),
    Struct(Vec<Kind>),
    Optional(Box<Kind>),
}

impl Kind {
    /// The constructor expression.
    fn luau(&self) -> String {
        match self {
            Kind::Number => "number()".into(),
            Kind::Integer => "integer()".into(),
            Kind::Boolean => "boolean()".into(),
            Kind::Text => "text()".into(),
            Kind::Enum(n) => {
                let variants: Vec<String> = (0..*n).map(|i| format!("\"V{i}\"")).collect();
                format!("enum({{ {} }})", variants.join(", "))
            }
            Kind::Vector => "vector()".into(),
            Kind::Transform => "transform()".into(),
            Kind::Ref => "ref()".into(),
            Kind::Buffer => "buffer()".into(),
            Kind::List(e) => format!("list({})", e.luau()),
            Kind::Map(k, v) => format!("map({}, {})", k.luau(), v.luau()),
            Kind::Struct(members) => {
                let members: Vec<String> = members
                    .iter()
                    .enumerate()
                    .map(|(i, m)| format!("m{i} = {}", m.luau()))
                    .collect();
                format!("struct({{ {} }})", members.join(", "))
            }
            Kind::Optional(inner) => format!("optional({})", inner.luau()),
        }
    }
}

fn key_kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        Just(Kind::Text),
        Just(Kind::Integer),
        Just(Kind::Boolean),
        (1..4usize).prop_map(Kind::Enum),
    ]
}

fn kind() -> impl Strategy<Value = Kind> {
    let leaf = prop_oneof![
        Just(Kind::Number),
        Just(Kind::Integer),
        Just(Kind::Boolean),
        Just(Kind::Text),
        (1..4usize).prop_map(Kind::Enum),
        Just(Kind::Vector),
        Just(Kind::Transform),
        Just(Kind::Ref),
        Just(Kind::Buffer),
    ];
    leaf.prop_recursive(3, 24, 3, |inner| {
        prop_oneof![
            inner.clone().prop_map(|e| Kind::List(Box::new(e))),
            (key_kind(), inner.clone()).prop_map(|(k, v)| Kind::Map(Box::new(k), Box::new(v))),
            proptest::collection::vec(inner.clone(), 1..4).prop_map(Kind::Struct),
            inner.prop_map(|i| Kind::Optional(Box::new(i))),
        ]
    })
}

/// A small deterministic generator for values of a type, seeded by the test case.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn text(&mut self) -> Arc<str> {
        let len = self.below(4);
        (0..len)
            .map(|_| char::from(b'a' + self.below(26) as u8))
            .collect::<String>()
            .into()
    }

    fn value(&mut self, ty: &FieldType, targets: &[InstanceId]) -> Value {
        match ty {
            FieldType::Number => Value::Number(self.below(2000) as f64 / 8.0 - 100.0),
            FieldType::Integer => Value::Integer(self.next() as i64 >> 12),
            FieldType::Boolean => Value::Boolean(self.below(2) == 1),
            FieldType::Text => Value::Text(self.text()),
            FieldType::Enum(variants) => Value::Enum(self.below(variants.len() as u64) as u32),
            FieldType::Vector => Value::Vector(Vec3::new(
                self.below(100) as f32,
                -(self.below(100) as f32),
                0.5,
            )),
            FieldType::Transform => Value::Transform(Box::new(Transform::from_position(
                Vec3::new(self.below(10) as f32, 1.0, 2.0),
            ))),
            FieldType::Reference => {
                let i = self.below(targets.len() as u64 + 1) as usize;
                Value::Reference(targets.get(i).copied())
            }
            FieldType::Buffer => {
                let len = self.below(4);
                Value::Buffer((0..len).map(|_| self.below(256) as u8).collect())
            }
            FieldType::List(element) => {
                let len = self.below(3);
                Value::List(ListValue::from_vec(
                    (0..len).map(|_| self.value(element, targets)).collect(),
                ))
            }
            FieldType::Map(key, value) => {
                let mut map = BTreeMap::new();
                for _ in 0..self.below(3) {
                    let k = match self.value(key, targets) {
                        Value::Text(t) => MapKey::Text(t),
                        Value::Integer(i) => MapKey::Integer(i),
                        Value::Boolean(b) => MapKey::Boolean(b),
                        Value::Enum(e) => MapKey::Enum(e),
                        other => panic!("not a key: {other:?}"),
                    };
                    map.insert(k, self.value(value, targets));
                }
                Value::Map(Arc::new(map))
            }
            FieldType::Struct(members) => {
                Value::Struct(members.iter().map(|m| self.value(&m.ty, targets)).collect())
            }
            FieldType::Optional(inner) => {
                if self.below(3) == 0 {
                    Value::Optional(None)
                } else {
                    Value::Optional(Some(Box::new(self.value(inner, targets))))
                }
            }
        }
    }
}

fn source(kinds: &[Kind], classes: &str, comment: &str) -> String {
    let mut fields = String::new();
    for (i, kind) in kinds.iter().enumerate() {
        write!(fields, "f{i} = {}, ", kind.luau()).unwrap();
    }
    format!("-- {comment}\nreturn component {{ classes = {classes}, fields = {{ {fields} }} }}")
}

struct World {
    arena: Arena,
    store: Store,
    sync: SchemaSync,
}

impl World {
    fn spawn(&mut self, class: ClassId) -> InstanceRef {
        let id = self.arena.create(class, None).unwrap();
        InstanceRef::new(id, self.arena.slot_of(id).unwrap())
    }

    fn sync(&mut self) -> String {
        self.sync.sync(&self.arena, &mut self.store).to_string()
    }

    /// Every row's values, by instance, in field order.
    fn rows(&self, at: &[InstanceRef]) -> Vec<Option<Vec<Value>>> {
        let Some(c) = self.store.component("Model") else {
            return vec![None; at.len()];
        };
        let n = self.store.def(c).unwrap().fields().len();
        at.iter()
            .map(|at| {
                self.store.has(*at, c).then(|| {
                    (0..n)
                        .map(|f| {
                            self.store
                                .get_value(
                                    *at,
                                    c,
                                    strata_component_store::FieldId::from_index(f as u16),
                                )
                                .unwrap()
                        })
                        .collect()
                })
            })
            .collect()
    }
}

const BOTH: &str = r#"{ "Entity", "Part" }"#;
const ENTITY: &str = r#"{ "Entity" }"#;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn no_round_trip_through_orphans_loses_a_value(
        kinds in proptest::collection::vec(kind(), 1..5),
        seed in 1..u64::MAX,
        n_entities in 1..4usize,
        n_parts in 0..3usize,
    ) {
        let mut w = World {
            arena: Arena::standard(),
            store: Store::new(),
            sync: SchemaSync::new().unwrap(),
        };
        let def = w.arena.create(ClassId::COMPONENT_DEFINITION, None).unwrap();
        w.arena.set_name(def, "Model").unwrap();
        w.arena.set_definition_source(def, &source(&kinds, BOTH, "first")).unwrap();
        w.sync();
        let c = w.store.component("Model").unwrap();
        let types: Vec<FieldType> =
            w.store.def(c).unwrap().fields().iter().map(|f| f.ty.clone()).collect();

        let targets: Vec<InstanceId> = (0..3).map(|_| w.spawn(ClassId::MODEL).id).collect();
        let mut values = Gen(seed);
        let mut at = Vec::new();
        for i in 0..n_entities + n_parts {
            let class = if i < n_entities { ClassId::ENTITY } else { ClassId::PART };
            let instance = w.spawn(class);
            let row: Vec<_> = types
                .iter()
                .enumerate()
                .map(|(f, ty)| {
                    (strata_component_store::FieldId::from_index(f as u16), values.value(ty, &targets))
                })
                .collect();
            w.store.add(instance, class, c, row).unwrap();
            at.push(instance);
        }
        let model = w.rows(&at);
        prop_assert!(model.iter().all(Option::is_some));

        // Removed and added back, identical.
        w.arena.destroy(def).unwrap();
        w.sync();
        prop_assert!(w.store.component("Model").is_none());
        prop_assert_eq!(w.store.orphans().len(), at.len());
        let def = w.arena.create(ClassId::COMPONENT_DEFINITION, None).unwrap();
        w.arena.set_name(def, "Model").unwrap();
        w.arena.set_definition_source(def, &source(&kinds, BOTH, "second")).unwrap();
        let report = w.sync();
        prop_assert_eq!(&w.rows(&at), &model, "{}", report);
        prop_assert!(w.store.orphans().is_empty());

        // Parts excluded for a while, then allowed again.
        w.arena.set_definition_source(def, &source(&kinds, ENTITY, "third")).unwrap();
        w.sync();
        prop_assert_eq!(w.store.orphans().len(), n_parts);
        w.arena.set_definition_source(def, &source(&kinds, BOTH, "fourth")).unwrap();
        let report = w.sync();
        prop_assert_eq!(&w.rows(&at), &model, "{}", report);

        // Redefined with an identical schema (the source differs only in its comment).
        w.arena.set_definition_source(def, &source(&kinds, BOTH, "fifth")).unwrap();
        let report = w.sync();
        prop_assert_eq!(&w.rows(&at), &model, "{}", report);
        prop_assert!(w.store.orphans().is_empty());
    }
}
