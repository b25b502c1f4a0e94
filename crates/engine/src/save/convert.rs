//! Conversion between the save records of `format.rs` and the layers' types.
//!
//! Invariant: saving then reading a record gives back exactly the value saved (bit for bit for
//! floating-point numbers). Reading checks what it builds: every id is a valid id, every value
//! nests at most `MAX_DEPTH` deep and consumes its nodes exactly, and a failure is a message
//! for `LoadError::Corrupt`, never a panic.

use std::collections::BTreeMap;
use std::sync::Arc;

use strata_arena::{
    AnimationState, AttrValue, Attributes, BuiltinState, CameraState, Color3, DestroyedBatch,
    Event, GuiElementState, GuiLayerState, Guid, IdRange, ImageNode, InstanceId, LightState,
    ModelState, MovedIds, NodeData, PartState, PersistentId, SoundState, Transform, UDim2, Vec3,
};
use strata_component_store::{FieldType, ListValue, MapKey, OrphanRecord, StructField, Value};

use super::format::{
    SavedAttr, SavedEvent, SavedInstance, SavedRecord, SavedState, TypeNode, ValueNode,
};

/// How deep a saved value or type may nest.
pub(crate) const MAX_DEPTH: usize = 64;

/// What went wrong reading a record.
pub(crate) type Corrupt = String;

pub(crate) fn id(raw: u64) -> Result<InstanceId, Corrupt> {
    InstanceId::new(raw)
        .filter(|id| id.get() < id.range().end())
        .ok_or_else(|| format!("{raw} is not an instance id"))
}

fn opt_id(raw: Option<u64>) -> Result<Option<InstanceId>, Corrupt> {
    raw.map(id).transpose()
}

fn raw(id: Option<InstanceId>) -> Option<u64> {
    id.map(InstanceId::get)
}

fn v3(v: Vec3) -> [f32; 3] {
    [v.x, v.y, v.z]
}

fn to_v3(a: [f32; 3]) -> Vec3 {
    Vec3::new(a[0], a[1], a[2])
}

fn c3(c: Color3) -> [f32; 3] {
    [c.r, c.g, c.b]
}

fn to_c3(a: [f32; 3]) -> Color3 {
    Color3 {
        r: a[0],
        g: a[1],
        b: a[2],
    }
}

fn udim(u: UDim2) -> [f32; 4] {
    [u.x_scale, u.x_offset, u.y_scale, u.y_offset]
}

fn to_udim(a: [f32; 4]) -> UDim2 {
    UDim2 {
        x_scale: a[0],
        x_offset: a[1],
        y_scale: a[2],
        y_offset: a[3],
    }
}

fn tf(t: &Transform) -> [[f32; 4]; 4] {
    t.rows
}

fn to_tf(rows: [[f32; 4]; 4]) -> Transform {
    Transform { rows }
}

// ----- Instances. -----
//
// Saves are written by `encode.rs`, from borrowed state; the owned writers below
// (`save_instance`, `save_record`, `save_value`, `save_type`) build the records of `format.rs`
// the long way, and the unit test in `mod.rs` checks that both write the same bytes.

#[cfg(test)]
pub(crate) fn save_instance(node: &ImageNode) -> SavedInstance {
    SavedInstance {
        id: node.id.get(),
        class: node.class.to_string(),
        parent: node.parent.map_or(0, InstanceId::get),
        guid: node.guid.0,
        persistent_id: node.persistent_id.map(|p| p.0.get()),
        name: node.data.name.to_string(),
        attributes: node
            .data
            .attributes
            .iter()
            .map(|(name, value)| (name.to_owned(), save_attr(value)))
            .collect(),
        state: save_state(&node.data.state),
        tags: node.tags.iter().map(|t| t.to_string()).collect(),
        parent_locked: node.parent_locked,
    }
}

pub(crate) fn load_instance(saved: &SavedInstance) -> Result<ImageNode, Corrupt> {
    let mut attributes = Attributes::default();
    for (name, value) in &saved.attributes {
        if attributes.get(name).is_some() {
            return Err(format!(
                "instance {} has attribute `{name}` twice",
                saved.id
            ));
        }
        attributes.set(name, Some(load_attr(value)?));
    }
    Ok(ImageNode {
        id: id(saved.id)?,
        class: Arc::from(saved.class.as_str()),
        parent: if saved.parent == 0 {
            None
        } else {
            Some(id(saved.parent)?)
        },
        guid: Guid(saved.guid),
        persistent_id: match saved.persistent_id {
            None => None,
            Some(raw) => Some(PersistentId(
                std::num::NonZeroU64::new(raw).ok_or("a persistent id of zero")?,
            )),
        },
        data: NodeData {
            name: Arc::from(saved.name.as_str()),
            attributes,
            state: load_state(&saved.state)?,
        },
        tags: saved.tags.iter().map(|t| Arc::from(t.as_str())).collect(),
        parent_locked: saved.parent_locked,
    })
}

/// The ids an instance's attributes and state refer to.
pub(crate) fn instance_references(node: &ImageNode) -> impl Iterator<Item = InstanceId> + '_ {
    node.data.reference_targets()
}

pub(crate) fn save_attr(value: &AttrValue) -> SavedAttr {
    match value {
        AttrValue::Bool(b) => SavedAttr::Bool(*b),
        AttrValue::Number(n) => SavedAttr::Number(*n),
        AttrValue::Integer(i) => SavedAttr::Integer(*i),
        AttrValue::Text(t) => SavedAttr::Text(t.to_string()),
        AttrValue::Vector(v) => SavedAttr::Vector(v3(*v)),
        AttrValue::Color(c) => SavedAttr::Color(c3(*c)),
        AttrValue::Transform(t) => SavedAttr::Transform(tf(t)),
        AttrValue::Reference(r) => SavedAttr::Reference(raw(*r)),
    }
}

fn load_attr(value: &SavedAttr) -> Result<AttrValue, Corrupt> {
    Ok(match value {
        SavedAttr::Bool(b) => AttrValue::Bool(*b),
        SavedAttr::Number(n) => AttrValue::Number(*n),
        SavedAttr::Integer(i) => AttrValue::Integer(*i),
        SavedAttr::Text(t) => AttrValue::Text(Arc::from(t.as_str())),
        SavedAttr::Vector(v) => AttrValue::Vector(to_v3(*v)),
        SavedAttr::Color(c) => AttrValue::Color(to_c3(*c)),
        SavedAttr::Transform(t) => AttrValue::Transform(to_tf(*t)),
        SavedAttr::Reference(r) => AttrValue::Reference(opt_id(*r)?),
    })
}

pub(crate) fn save_state(state: &BuiltinState) -> SavedState {
    match state {
        BuiltinState::Plain => SavedState::Plain,
        BuiltinState::Part(p) => SavedState::Part {
            transform: tf(&p.transform),
            size: v3(p.size),
            anchored: p.anchored,
            can_collide: p.can_collide,
            color: c3(p.color),
            transparency: p.transparency,
        },
        BuiltinState::Model(m) => SavedState::Model {
            primary_part: raw(m.primary_part),
            pivot: tf(&m.pivot),
        },
        BuiltinState::Light(l) => SavedState::Light {
            brightness: l.brightness,
            range: l.range,
            color: c3(l.color),
            enabled: l.enabled,
        },
        BuiltinState::Sound(s) => SavedState::Sound {
            sound_id: s.sound_id.to_string(),
            volume: s.volume,
            playing: s.playing,
            looped: s.looped,
        },
        BuiltinState::Camera(c) => SavedState::Camera {
            transform: tf(&c.transform),
            field_of_view: c.field_of_view,
            subject: raw(c.subject),
        },
        BuiltinState::GuiLayer(g) => SavedState::GuiLayer {
            enabled: g.enabled,
            display_order: g.display_order,
        },
        BuiltinState::GuiElement(g) => SavedState::GuiElement {
            position: udim(g.position),
            size: udim(g.size),
            visible: g.visible,
            z_index: g.z_index,
        },
        BuiltinState::ComponentDefinition { source } => SavedState::ComponentDefinition {
            source: source.to_string(),
        },
        BuiltinState::Animation(a) => SavedState::Animation {
            animation_id: a.animation_id.to_string(),
            looped: a.looped,
            speed: a.speed,
        },
    }
}

fn load_state(state: &SavedState) -> Result<BuiltinState, Corrupt> {
    Ok(match state {
        SavedState::Plain => BuiltinState::Plain,
        SavedState::Part {
            transform,
            size,
            anchored,
            can_collide,
            color,
            transparency,
        } => BuiltinState::Part(Box::new(PartState {
            transform: to_tf(*transform),
            size: to_v3(*size),
            anchored: *anchored,
            can_collide: *can_collide,
            color: to_c3(*color),
            transparency: *transparency,
        })),
        SavedState::Model {
            primary_part,
            pivot,
        } => BuiltinState::Model(Box::new(ModelState {
            primary_part: opt_id(*primary_part)?,
            pivot: to_tf(*pivot),
        })),
        SavedState::Light {
            brightness,
            range,
            color,
            enabled,
        } => BuiltinState::Light(LightState {
            brightness: *brightness,
            range: *range,
            color: to_c3(*color),
            enabled: *enabled,
        }),
        SavedState::Sound {
            sound_id,
            volume,
            playing,
            looped,
        } => BuiltinState::Sound(SoundState {
            sound_id: Arc::from(sound_id.as_str()),
            volume: *volume,
            playing: *playing,
            looped: *looped,
        }),
        SavedState::Camera {
            transform,
            field_of_view,
            subject,
        } => BuiltinState::Camera(Box::new(CameraState {
            transform: to_tf(*transform),
            field_of_view: *field_of_view,
            subject: opt_id(*subject)?,
        })),
        SavedState::GuiLayer {
            enabled,
            display_order,
        } => BuiltinState::GuiLayer(GuiLayerState {
            enabled: *enabled,
            display_order: *display_order,
        }),
        SavedState::GuiElement {
            position,
            size,
            visible,
            z_index,
        } => BuiltinState::GuiElement(Box::new(GuiElementState {
            position: to_udim(*position),
            size: to_udim(*size),
            visible: *visible,
            z_index: *z_index,
        })),
        SavedState::ComponentDefinition { source } => BuiltinState::ComponentDefinition {
            source: Arc::from(source.as_str()),
        },
        SavedState::Animation {
            animation_id,
            looped,
            speed,
        } => BuiltinState::Animation(AnimationState {
            animation_id: Arc::from(animation_id.as_str()),
            looped: *looped,
            speed: *speed,
        }),
    })
}

pub(crate) fn range_code(range: IdRange) -> u8 {
    match range {
        IdRange::Server => 0,
        IdRange::ClientLocal => 1,
    }
}

pub(crate) fn range_of(code: u8) -> Result<IdRange, Corrupt> {
    match code {
        0 => Ok(IdRange::Server),
        1 => Ok(IdRange::ClientLocal),
        other => Err(format!("{other} names no id range")),
    }
}

// ----- Events. -----

/// A parent as saved: 0 for none.
fn parent_code(parent: Option<InstanceId>) -> u64 {
    parent.map_or(0, InstanceId::get)
}

fn parent_of(raw: u64) -> Result<Option<InstanceId>, Corrupt> {
    if raw == 0 {
        Ok(None)
    } else {
        id(raw).map(Some)
    }
}

fn raws(ids: &[InstanceId]) -> Vec<u64> {
    ids.iter().map(|id| id.get()).collect()
}

fn ids_of(raws: &[u64]) -> Result<Vec<InstanceId>, Corrupt> {
    raws.iter().map(|raw| id(*raw)).collect()
}

/// A list of moved or destroyed instances, which names one at least.
fn moved_of(raws: &[u64]) -> Result<MovedIds, Corrupt> {
    match ids_of(raws)?.as_slice() {
        [] => Err("an event names an empty list of instances".to_owned()),
        [one] => Ok(MovedIds::One(*one)),
        many => Ok(MovedIds::Many(many.into())),
    }
}

pub(crate) fn save_event(event: &Event) -> SavedEvent {
    match event {
        Event::Created { id, parent } => SavedEvent::Created {
            id: id.get(),
            parent: parent_code(*parent),
        },
        Event::CreatedRange {
            first,
            count,
            parent,
        } => SavedEvent::CreatedRange {
            first: first.get(),
            count: *count,
            parent: parent_code(*parent),
        },
        Event::CreatedList { ids, parent } => SavedEvent::CreatedList {
            ids: raws(ids),
            parent: parent_code(*parent),
        },
        Event::DescendantRemoving { ancestors, moved } => SavedEvent::DescendantRemoving {
            ancestors: raws(ancestors),
            moved: raws(moved.as_slice()),
        },
        Event::ChildRemoved { parent, child } => SavedEvent::ChildRemoved {
            parent: parent.get(),
            child: child.get(),
        },
        Event::ChildAdded { parent, child } => SavedEvent::ChildAdded {
            parent: parent.get(),
            child: child.get(),
        },
        Event::AncestryChanged { moved } => SavedEvent::AncestryChanged {
            moved: raws(moved.as_slice()),
        },
        Event::DescendantAdded { ancestors, moved } => SavedEvent::DescendantAdded {
            ancestors: raws(ancestors),
            moved: raws(moved.as_slice()),
        },
        Event::Destroyed { subtree } => SavedEvent::Destroyed {
            subtree: raws(subtree.as_slice()),
        },
        Event::DestroyedMany(batch) => SavedEvent::DestroyedMany {
            roots: batch
                .roots
                .iter()
                .map(|(root, parent)| (root.get(), parent_code(*parent)))
                .collect(),
            destroyed: raws(&batch.destroyed),
        },
    }
}

/// An event from its record, every id a valid id and every list of moved or destroyed
/// instances non-empty (the arena checks the rest against the instances it rebuilt).
pub(crate) fn load_event(saved: &SavedEvent) -> Result<Event, Corrupt> {
    Ok(match saved {
        SavedEvent::Created { id: raw, parent } => Event::Created {
            id: id(*raw)?,
            parent: parent_of(*parent)?,
        },
        SavedEvent::CreatedRange {
            first,
            count,
            parent,
        } => Event::CreatedRange {
            first: id(*first)?,
            count: *count,
            parent: parent_of(*parent)?,
        },
        SavedEvent::CreatedList { ids, parent } => Event::CreatedList {
            ids: ids_of(ids)?.into(),
            parent: parent_of(*parent)?,
        },
        SavedEvent::DescendantRemoving { ancestors, moved } => Event::DescendantRemoving {
            ancestors: ids_of(ancestors)?.into(),
            moved: moved_of(moved)?,
        },
        SavedEvent::ChildRemoved { parent, child } => Event::ChildRemoved {
            parent: id(*parent)?,
            child: id(*child)?,
        },
        SavedEvent::ChildAdded { parent, child } => Event::ChildAdded {
            parent: id(*parent)?,
            child: id(*child)?,
        },
        SavedEvent::AncestryChanged { moved } => Event::AncestryChanged {
            moved: moved_of(moved)?,
        },
        SavedEvent::DescendantAdded { ancestors, moved } => Event::DescendantAdded {
            ancestors: ids_of(ancestors)?.into(),
            moved: moved_of(moved)?,
        },
        SavedEvent::Destroyed { subtree } => Event::Destroyed {
            subtree: moved_of(subtree)?,
        },
        SavedEvent::DestroyedMany { roots, destroyed } => {
            Event::DestroyedMany(Arc::new(DestroyedBatch {
                roots: roots
                    .iter()
                    .map(|(root, parent)| Ok((id(*root)?, parent_of(*parent)?)))
                    .collect::<Result<_, Corrupt>>()?,
                destroyed: ids_of(destroyed)?,
            }))
        }
    })
}

// ----- Records. -----

#[cfg(test)]
pub(crate) fn save_record(instance: InstanceId, record: &OrphanRecord) -> SavedRecord {
    SavedRecord {
        instance: instance.get(),
        component: record.component.to_string(),
        version: record.version,
        fields: record
            .fields
            .iter()
            .map(|(name, value)| {
                let mut nodes = Vec::new();
                save_value(value, &mut nodes);
                (name.to_string(), nodes)
            })
            .collect(),
        types: record.types.as_deref().map(|types| {
            types
                .iter()
                .map(|(name, ty)| {
                    let mut nodes = Vec::new();
                    save_type(ty, &mut nodes);
                    (name.to_string(), nodes)
                })
                .collect()
        }),
    }
}

/// A saved record as the store keeps it, with the references it holds.
pub(crate) fn load_record(saved: &SavedRecord) -> Result<OrphanRecord, Corrupt> {
    if saved.component.is_empty() {
        return Err(format!(
            "a record of instance {} names no component",
            saved.instance
        ));
    }
    let mut fields = Vec::with_capacity(saved.fields.len());
    for (name, nodes) in &saved.fields {
        if fields
            .iter()
            .any(|(n, _): &(Arc<str>, Value)| **n == **name)
        {
            return Err(format!(
                "component `{}` has field `{name}` twice",
                saved.component
            ));
        }
        fields.push((Arc::from(name.as_str()), value_of(nodes)?));
    }
    let types = match &saved.types {
        None => None,
        Some(types) => Some(
            types
                .iter()
                .map(|(name, nodes)| Ok((Arc::from(name.as_str()), type_of(nodes)?)))
                .collect::<Result<Vec<_>, Corrupt>>()?
                .into(),
        ),
    };
    Ok(OrphanRecord {
        component: Arc::from(saved.component.as_str()),
        version: saved.version,
        fields,
        types,
    })
}

#[cfg(test)]
fn save_value(value: &Value, out: &mut Vec<ValueNode>) {
    match value {
        Value::Number(n) => out.push(ValueNode::Number(*n)),
        Value::Integer(i) => out.push(ValueNode::Integer(*i)),
        Value::Boolean(b) => out.push(ValueNode::Boolean(*b)),
        Value::Text(t) => out.push(ValueNode::Text(t.to_string())),
        Value::Enum(e) => out.push(ValueNode::Enum(*e)),
        Value::Vector(v) => out.push(ValueNode::Vector(v3(*v))),
        Value::Transform(t) => out.push(ValueNode::Transform(tf(t))),
        Value::Reference(r) => out.push(ValueNode::Reference(raw(*r))),
        Value::List(list) => {
            out.push(ValueNode::List(count(list.len())));
            for element in list.as_slice() {
                save_value(element, out);
            }
        }
        Value::Map(map) => {
            out.push(ValueNode::Map(count(map.len())));
            for (key, value) in map.iter() {
                out.push(match key {
                    MapKey::Text(t) => ValueNode::Text(t.to_string()),
                    MapKey::Integer(i) => ValueNode::Integer(*i),
                    MapKey::Boolean(b) => ValueNode::Boolean(*b),
                    MapKey::Enum(e) => ValueNode::Enum(*e),
                });
                save_value(value, out);
            }
        }
        Value::Struct(members) => {
            out.push(ValueNode::Struct(count(members.len())));
            for member in members.iter() {
                save_value(member, out);
            }
        }
        Value::Optional(None) => out.push(ValueNode::None),
        Value::Optional(Some(inner)) => {
            out.push(ValueNode::Some);
            save_value(inner, out);
        }
        Value::Buffer(bytes) => out.push(ValueNode::Buffer(bytes.to_vec())),
    }
}

/// Container lengths fit `u32` (a store never holds more elements in one value than a `u32`
/// counts: saves are bounded well below that).
pub(crate) fn count(len: usize) -> u32 {
    u32::try_from(len).unwrap_or(u32::MAX)
}

/// A value from its nodes, which must be exactly one value.
pub(crate) fn value_of(nodes: &[ValueNode]) -> Result<Value, Corrupt> {
    let mut at = 0;
    let value = read_value(nodes, &mut at, 0)?;
    if at != nodes.len() {
        return Err(format!("{} nodes follow a value", nodes.len() - at));
    }
    Ok(value)
}

fn next<'n>(nodes: &'n [ValueNode], at: &mut usize) -> Result<&'n ValueNode, Corrupt> {
    let node = nodes.get(*at).ok_or("a value ends early")?;
    *at += 1;
    Ok(node)
}

fn read_value(nodes: &[ValueNode], at: &mut usize, depth: usize) -> Result<Value, Corrupt> {
    if depth > MAX_DEPTH {
        return Err(format!("a value nests deeper than {MAX_DEPTH}"));
    }
    // A container's length cannot exceed the nodes left, each element taking one at least.
    let room = |n: u32, at: usize| -> Result<usize, Corrupt> {
        let n = n as usize;
        if n > nodes.len() - at {
            Err(format!(
                "a container claims {n} elements, with {} nodes left",
                nodes.len() - at
            ))
        } else {
            Ok(n)
        }
    };
    Ok(match next(nodes, at)? {
        ValueNode::Number(n) => Value::Number(*n),
        ValueNode::Integer(i) => Value::Integer(*i),
        ValueNode::Boolean(b) => Value::Boolean(*b),
        ValueNode::Text(t) => Value::Text(Arc::from(t.as_str())),
        ValueNode::Enum(e) => Value::Enum(*e),
        ValueNode::Vector(v) => Value::Vector(to_v3(*v)),
        ValueNode::Transform(t) => Value::Transform(Box::new(to_tf(*t))),
        ValueNode::Reference(r) => Value::Reference(opt_id(*r)?),
        ValueNode::List(n) => {
            let n = room(*n, *at)?;
            let mut elements = Vec::with_capacity(n);
            for _ in 0..n {
                elements.push(read_value(nodes, at, depth + 1)?);
            }
            Value::List(ListValue::from_vec(elements))
        }
        ValueNode::Map(n) => {
            let n = room(*n, *at)?;
            let mut map = BTreeMap::new();
            for _ in 0..n {
                let key = match next(nodes, at)? {
                    ValueNode::Text(t) => MapKey::Text(Arc::from(t.as_str())),
                    ValueNode::Integer(i) => MapKey::Integer(*i),
                    ValueNode::Boolean(b) => MapKey::Boolean(*b),
                    ValueNode::Enum(e) => MapKey::Enum(*e),
                    other => return Err(format!("{other:?} is no map key")),
                };
                let value = read_value(nodes, at, depth + 1)?;
                if map.insert(key, value).is_some() {
                    return Err("a map holds one key twice".to_owned());
                }
            }
            Value::Map(Arc::new(map))
        }
        ValueNode::Struct(n) => {
            let n = room(*n, *at)?;
            let mut members = Vec::with_capacity(n);
            for _ in 0..n {
                members.push(read_value(nodes, at, depth + 1)?);
            }
            Value::Struct(members.into())
        }
        ValueNode::None => Value::Optional(None),
        ValueNode::Some => Value::Optional(Some(Box::new(read_value(nodes, at, depth + 1)?))),
        ValueNode::Buffer(bytes) => Value::Buffer(bytes.as_slice().into()),
    })
}

#[cfg(test)]
fn save_type(ty: &FieldType, out: &mut Vec<TypeNode>) {
    match ty {
        FieldType::Number => out.push(TypeNode::Number),
        FieldType::Integer => out.push(TypeNode::Integer),
        FieldType::Boolean => out.push(TypeNode::Boolean),
        FieldType::Text => out.push(TypeNode::Text),
        FieldType::Enum(variants) => out.push(TypeNode::Enum(
            variants.iter().map(|v| v.to_string()).collect(),
        )),
        FieldType::Vector => out.push(TypeNode::Vector),
        FieldType::Transform => out.push(TypeNode::Transform),
        FieldType::Reference => out.push(TypeNode::Reference),
        FieldType::List(element) => {
            out.push(TypeNode::List);
            save_type(element, out);
        }
        FieldType::Map(key, value) => {
            out.push(TypeNode::Map);
            save_type(key, out);
            save_type(value, out);
        }
        FieldType::Struct(members) => {
            out.push(TypeNode::Struct(count(members.len())));
            for member in members.iter() {
                let mut default = Vec::new();
                save_value(&member.default, &mut default);
                out.push(TypeNode::Member {
                    name: member.name.to_string(),
                    default,
                });
                save_type(&member.ty, out);
            }
        }
        FieldType::Optional(inner) => {
            out.push(TypeNode::Optional);
            save_type(inner, out);
        }
        FieldType::Buffer => out.push(TypeNode::Buffer),
    }
}

/// A type from its nodes, which must be exactly one type.
pub(crate) fn type_of(nodes: &[TypeNode]) -> Result<FieldType, Corrupt> {
    let mut at = 0;
    let ty = read_type(nodes, &mut at, 0)?;
    if at != nodes.len() {
        return Err(format!("{} nodes follow a type", nodes.len() - at));
    }
    Ok(ty)
}

fn read_type(nodes: &[TypeNode], at: &mut usize, depth: usize) -> Result<FieldType, Corrupt> {
    if depth > MAX_DEPTH {
        return Err(format!("a type nests deeper than {MAX_DEPTH}"));
    }
    let node = nodes.get(*at).ok_or("a type ends early")?;
    *at += 1;
    Ok(match node {
        TypeNode::Number => FieldType::Number,
        TypeNode::Integer => FieldType::Integer,
        TypeNode::Boolean => FieldType::Boolean,
        TypeNode::Text => FieldType::Text,
        TypeNode::Enum(variants) => {
            FieldType::Enum(variants.iter().map(|v| Arc::from(v.as_str())).collect())
        }
        TypeNode::Vector => FieldType::Vector,
        TypeNode::Transform => FieldType::Transform,
        TypeNode::Reference => FieldType::Reference,
        TypeNode::List => FieldType::List(Box::new(read_type(nodes, at, depth + 1)?)),
        TypeNode::Map => {
            let key = read_type(nodes, at, depth + 1)?;
            let value = read_type(nodes, at, depth + 1)?;
            FieldType::Map(Box::new(key), Box::new(value))
        }
        TypeNode::Struct(n) => {
            let n = *n as usize;
            if n > nodes.len() - *at {
                return Err(format!("a struct claims {n} members"));
            }
            let mut members = Vec::with_capacity(n);
            for _ in 0..n {
                let Some(TypeNode::Member { name, default }) = nodes.get(*at) else {
                    return Err("a struct member is missing".to_owned());
                };
                *at += 1;
                let ty = read_type(nodes, at, depth + 1)?;
                members.push(StructField {
                    name: Arc::from(name.as_str()),
                    ty,
                    default: value_of(default)?,
                });
            }
            FieldType::Struct(members.into())
        }
        TypeNode::Member { .. } => return Err("a struct member outside a struct".to_owned()),
        TypeNode::Optional => FieldType::Optional(Box::new(read_type(nodes, at, depth + 1)?)),
        TypeNode::Buffer => FieldType::Buffer,
    })
}

/// The ids a record's values refer to.
pub(crate) fn record_references(record: &OrphanRecord) -> Vec<InstanceId> {
    let mut targets = Vec::new();
    for (_, value) in &record.fields {
        value.for_each_reference(&mut |target| targets.push(target));
    }
    targets
}
