//! Writing a save: the records of `format.rs` encoded from the world's state as it is, borrowing
//! names, texts and values instead of copying them into owned records first, so a save (and
//! `World::hash`, which feeds the same bytes to a hash) costs the encoding and little else.
//!
//! Invariant: every type here encodes, under postcard, byte for byte as its owned twin in
//! `format.rs` (`WorldOut` as `SavedWorld`, `InstanceOut` as `SavedInstance`, `RecordOut` as
//! `SavedRecord`, `MigrationOut` as `SavedMigration`, a value's nodes as `Vec<ValueNode>`, a
//! type's nodes as `Vec<TypeNode>`): the same fields in the same order, the same variants at
//! the same indexes, a borrowed `str` or slice where the twin owns a `String` or `Vec`. The unit
//! test in `mod.rs` compares the bytes of both over a world holding every kind of value and type.

use std::sync::Arc;

use serde::Serialize;
use serde::ser::{SerializeSeq, Serializer};
use strata_arena::{ImageNode, InstanceId};
use strata_component_store::{FieldType, MapKey, OrphanRecord, Value};

use super::convert;
use super::format::{SavedAttr, SavedEvent, SavedIdentity, SavedInterval, SavedState};

/// `SavedWorld`, borrowed.
#[derive(Serialize)]
pub(crate) struct WorldOut<'a> {
    pub(crate) own_range: u8,
    pub(crate) next_id: u64,
    pub(crate) frame: u64,
    pub(crate) time: f64,
    pub(crate) fixed_step: (f64, u32),
    pub(crate) fixed_carried: f64,
    pub(crate) game: u64,
    pub(crate) workspace: u64,
    pub(crate) instances: Vec<InstanceOut<'a>>,
    pub(crate) records: Vec<RecordOut<'a>>,
    pub(crate) migrations: Vec<MigrationOut<'a>>,
    pub(crate) intervals: Vec<SavedInterval>,
    pub(crate) identity: Option<SavedIdentity>,
    pub(crate) doomed: Vec<InstanceOut<'a>>,
    pub(crate) reclaimable: Vec<InstanceOut<'a>>,
    pub(crate) events: Vec<SavedEvent>,
}

/// `SavedInstance`, borrowed.
#[derive(Serialize)]
pub(crate) struct InstanceOut<'a> {
    id: u64,
    class: &'a str,
    parent: u64,
    guid: u128,
    persistent_id: Option<u64>,
    name: &'a str,
    attributes: Vec<(&'a str, SavedAttr)>,
    state: SavedState,
    tags: Vec<&'a str>,
    parent_locked: bool,
}

impl<'a> InstanceOut<'a> {
    pub(crate) fn of(node: &'a ImageNode) -> Self {
        Self {
            id: node.id.get(),
            class: &node.class,
            parent: node.parent.map_or(0, InstanceId::get),
            guid: node.guid.0,
            persistent_id: node.persistent_id.map(|p| p.0.get()),
            name: &node.data.name,
            attributes: node
                .data
                .attributes
                .iter()
                .map(|(name, value)| (name, convert::save_attr(value)))
                .collect(),
            state: convert::save_state(&node.data.state),
            tags: node.tags.iter().map(|t| &**t).collect(),
            parent_locked: node.parent_locked,
        }
    }
}

/// `SavedMigration`, borrowed.
#[derive(Serialize)]
pub(crate) struct MigrationOut<'a> {
    pub(crate) component: &'a str,
    pub(crate) record: RecordOut<'a>,
}

/// `SavedRecord`, borrowed.
#[derive(Serialize)]
pub(crate) struct RecordOut<'a> {
    instance: u64,
    component: &'a str,
    version: u32,
    fields: Fields<'a>,
    types: Option<Types<'a>>,
}

impl<'a> RecordOut<'a> {
    pub(crate) fn of(instance: InstanceId, record: &'a OrphanRecord) -> Self {
        Self {
            instance: instance.get(),
            component: &record.component,
            version: record.version,
            fields: Fields(&record.fields),
            types: record.types.as_deref().map(Types),
        }
    }
}

/// A record's fields, as `Vec<(String, Vec<ValueNode>)>`.
struct Fields<'a>(&'a [(Arc<str>, Value)]);

impl Serialize for Fields<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|(name, value)| (&**name, Nodes(value))))
    }
}

/// The types a record keeps, as `Vec<(String, Vec<TypeNode>)>`.
struct Types<'a>(&'a [(Arc<str>, FieldType)]);

impl Serialize for Types<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|(name, ty)| (&**name, TypeNodes(ty))))
    }
}

/// `ValueNode`, borrowed: the same variants in the same order.
#[derive(Serialize)]
enum NodeOut<'a> {
    Number(f64),
    Integer(i64),
    Boolean(bool),
    Text(&'a str),
    Enum(u32),
    Vector([f32; 3]),
    Transform([[f32; 4]; 4]),
    Reference(Option<u64>),
    List(u32),
    Map(u32),
    Struct(u32),
    Some,
    None,
    Buffer(&'a [u8]),
}

/// A value as its nodes in pre-order (`Vec<ValueNode>`; see `format::ValueNode`), written as
/// they are walked.
struct Nodes<'a>(&'a Value);

impl Serialize for Nodes<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(node_count(self.0)))?;
        write_nodes(self.0, &mut seq)?;
        seq.end()
    }
}

/// How many nodes `value` is written as.
fn node_count(value: &Value) -> usize {
    match value {
        Value::List(list) => 1 + list.as_slice().iter().map(node_count).sum::<usize>(),
        Value::Map(map) => 1 + map.values().map(|v| 1 + node_count(v)).sum::<usize>(),
        Value::Struct(members) => 1 + members.iter().map(node_count).sum::<usize>(),
        Value::Optional(Some(inner)) => 1 + node_count(inner),
        _ => 1,
    }
}

fn write_nodes<S: SerializeSeq>(value: &Value, seq: &mut S) -> Result<(), S::Error> {
    match value {
        Value::Number(n) => seq.serialize_element(&NodeOut::Number(*n)),
        Value::Integer(i) => seq.serialize_element(&NodeOut::Integer(*i)),
        Value::Boolean(b) => seq.serialize_element(&NodeOut::Boolean(*b)),
        Value::Text(t) => seq.serialize_element(&NodeOut::Text(t)),
        Value::Enum(e) => seq.serialize_element(&NodeOut::Enum(*e)),
        Value::Vector(v) => seq.serialize_element(&NodeOut::Vector([v.x, v.y, v.z])),
        Value::Transform(t) => seq.serialize_element(&NodeOut::Transform(t.rows)),
        Value::Reference(r) => seq.serialize_element(&NodeOut::Reference(r.map(InstanceId::get))),
        Value::List(list) => {
            seq.serialize_element(&NodeOut::List(convert::count(list.len())))?;
            list.as_slice()
                .iter()
                .try_for_each(|element| write_nodes(element, seq))
        }
        Value::Map(map) => {
            seq.serialize_element(&NodeOut::Map(convert::count(map.len())))?;
            for (key, value) in map.iter() {
                seq.serialize_element(&match key {
                    MapKey::Text(t) => NodeOut::Text(t),
                    MapKey::Integer(i) => NodeOut::Integer(*i),
                    MapKey::Boolean(b) => NodeOut::Boolean(*b),
                    MapKey::Enum(e) => NodeOut::Enum(*e),
                })?;
                write_nodes(value, seq)?;
            }
            Ok(())
        }
        Value::Struct(members) => {
            seq.serialize_element(&NodeOut::Struct(convert::count(members.len())))?;
            members
                .iter()
                .try_for_each(|member| write_nodes(member, seq))
        }
        Value::Optional(None) => seq.serialize_element(&NodeOut::None),
        Value::Optional(Some(inner)) => {
            seq.serialize_element(&NodeOut::Some)?;
            write_nodes(inner, seq)
        }
        Value::Buffer(bytes) => seq.serialize_element(&NodeOut::Buffer(&bytes[..])),
    }
}

/// `TypeNode`, borrowed: the same variants in the same order.
#[derive(Serialize)]
enum TypeOut<'a> {
    Number,
    Integer,
    Boolean,
    Text,
    Enum(Vec<&'a str>),
    Vector,
    Transform,
    Reference,
    List,
    Map,
    Struct(u32),
    Member { name: &'a str, default: Nodes<'a> },
    Optional,
    Buffer,
}

/// A field type as its nodes in pre-order (`Vec<TypeNode>`; see `format::TypeNode`).
struct TypeNodes<'a>(&'a FieldType);

impl Serialize for TypeNodes<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(type_node_count(self.0)))?;
        write_type_nodes(self.0, &mut seq)?;
        seq.end()
    }
}

fn type_node_count(ty: &FieldType) -> usize {
    match ty {
        FieldType::List(element) | FieldType::Optional(element) => 1 + type_node_count(element),
        FieldType::Map(key, value) => 1 + type_node_count(key) + type_node_count(value),
        FieldType::Struct(members) => {
            1 + members
                .iter()
                .map(|m| 1 + type_node_count(&m.ty))
                .sum::<usize>()
        }
        _ => 1,
    }
}

fn write_type_nodes<S: SerializeSeq>(ty: &FieldType, seq: &mut S) -> Result<(), S::Error> {
    match ty {
        FieldType::Number => seq.serialize_element(&TypeOut::Number),
        FieldType::Integer => seq.serialize_element(&TypeOut::Integer),
        FieldType::Boolean => seq.serialize_element(&TypeOut::Boolean),
        FieldType::Text => seq.serialize_element(&TypeOut::Text),
        FieldType::Enum(variants) => {
            seq.serialize_element(&TypeOut::Enum(variants.iter().map(|v| &**v).collect()))
        }
        FieldType::Vector => seq.serialize_element(&TypeOut::Vector),
        FieldType::Transform => seq.serialize_element(&TypeOut::Transform),
        FieldType::Reference => seq.serialize_element(&TypeOut::Reference),
        FieldType::List(element) => {
            seq.serialize_element(&TypeOut::List)?;
            write_type_nodes(element, seq)
        }
        FieldType::Map(key, value) => {
            seq.serialize_element(&TypeOut::Map)?;
            write_type_nodes(key, seq)?;
            write_type_nodes(value, seq)
        }
        FieldType::Struct(members) => {
            seq.serialize_element(&TypeOut::Struct(convert::count(members.len())))?;
            for member in members.iter() {
                seq.serialize_element(&TypeOut::Member {
                    name: &member.name,
                    default: Nodes(&member.default),
                })?;
                write_type_nodes(&member.ty, seq)?;
            }
            Ok(())
        }
        FieldType::Optional(inner) => {
            seq.serialize_element(&TypeOut::Optional)?;
            write_type_nodes(inner, seq)
        }
        FieldType::Buffer => seq.serialize_element(&TypeOut::Buffer),
    }
}
