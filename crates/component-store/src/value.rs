//! `Value`: the dynamic form of every field value, and `ListValue`, the copy-on-write list buffer.
//!
//! Invariant: a `Value` stored in a column always conforms to its field's `FieldType`
//! (`Value::conforms`); the store checks before storing. A `ListValue` with no elements holds no
//! buffer, and its buffer is shared between snapshots until one of them writes it. "The same
//! value" for the store is `Value::identical` (bit for bit), never IEEE `==`.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use strata_arena::{InstanceId, Transform, Vec3};

use crate::column::Scalar;
use crate::def::FieldType;

/// A field value of any type.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A double-precision number.
    Number(f64),
    /// A signed integer.
    Integer(i64),
    /// A boolean.
    Boolean(bool),
    /// Text.
    Text(Arc<str>),
    /// The index of an enum variant.
    Enum(u32),
    /// A single-precision 3-vector.
    Vector(Vec3),
    /// A 4×4 affine transform (boxed: it is the largest value).
    Transform(Box<Transform>),
    /// An optional reference to an instance.
    Reference(Option<InstanceId>),
    /// A list of element values.
    List(ListValue),
    /// A map from keys to values, in key order.
    Map(Arc<BTreeMap<MapKey, Value>>),
    /// A struct's field values, in declaration order.
    Struct(Arc<[Value]>),
    /// An optional value.
    Optional(Option<Box<Value>>),
    /// Raw bytes.
    Buffer(Arc<[u8]>),
}

/// A map key: the field types that have a total order.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MapKey {
    /// A text key.
    Text(Arc<str>),
    /// An integer key.
    Integer(i64),
    /// A boolean key.
    Boolean(bool),
    /// An enum variant key.
    Enum(u32),
}

impl MapKey {
    /// The key as a value of its type.
    pub fn to_value(&self) -> Value {
        match self {
            MapKey::Text(t) => Value::Text(t.clone()),
            MapKey::Integer(i) => Value::Integer(*i),
            MapKey::Boolean(b) => Value::Boolean(*b),
            MapKey::Enum(e) => Value::Enum(*e),
        }
    }
}

/// A list's elements in a buffer shared copy-on-write between snapshots. An empty list holds no
/// buffer at all.
#[derive(Clone, Default, PartialEq)]
pub struct ListValue(Option<Arc<Vec<Value>>>);

impl ListValue {
    /// The empty list (no buffer).
    pub const EMPTY: Self = Self(None);

    /// A list of the given elements.
    pub fn from_vec(elements: Vec<Value>) -> Self {
        if elements.is_empty() {
            Self(None)
        } else {
            Self(Some(Arc::new(elements)))
        }
    }

    /// The elements.
    pub fn as_slice(&self) -> &[Value] {
        self.0.as_deref().map_or(&[], Vec::as_slice)
    }

    /// How many elements.
    pub fn len(&self) -> usize {
        self.as_slice().len()
    }

    /// Whether the list is empty (and so holds no buffer).
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// Whether the list holds a buffer.
    pub fn has_buffer(&self) -> bool {
        self.0.is_some()
    }

    /// Whether two lists hold the same elements bit for bit (see [`Value::identical`]).
    pub fn identical(&self, other: &ListValue) -> bool {
        self.shares_buffer_with(other)
            || (self.len() == other.len()
                && self
                    .as_slice()
                    .iter()
                    .zip(other.as_slice())
                    .all(|(a, b)| a.identical(b)))
    }

    /// Whether two lists share one buffer (both empty counts as sharing nothing).
    pub fn shares_buffer_with(&self, other: &ListValue) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }

    /// Appends an element, copying the buffer first if a snapshot shares it.
    pub(crate) fn push(&mut self, element: Value) {
        match &mut self.0 {
            Some(buffer) => Arc::make_mut(buffer).push(element),
            None => self.0 = Some(Arc::new(vec![element])),
        }
    }

    /// Mutable access to the elements, copying the buffer first if a snapshot shares it.
    pub(crate) fn elements_mut(&mut self) -> Option<&mut Vec<Value>> {
        self.0.as_mut().map(Arc::make_mut)
    }

    /// Drops the buffer when the last element went.
    pub(crate) fn normalise(&mut self) {
        if self.0.as_ref().is_some_and(|b| b.is_empty()) {
            self.0 = None;
        }
    }
}

impl fmt::Debug for ListValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl Value {
    /// Whether the value can be stored in a field of type `ty`.
    pub fn conforms(&self, ty: &FieldType) -> bool {
        match (self, ty) {
            (Value::Number(_), FieldType::Number)
            | (Value::Integer(_), FieldType::Integer)
            | (Value::Boolean(_), FieldType::Boolean)
            | (Value::Text(_), FieldType::Text)
            | (Value::Vector(_), FieldType::Vector)
            | (Value::Transform(_), FieldType::Transform)
            | (Value::Reference(_), FieldType::Reference)
            | (Value::Buffer(_), FieldType::Buffer) => true,
            (Value::Enum(index), FieldType::Enum(variants)) => (*index as usize) < variants.len(),
            (Value::List(list), FieldType::List(element)) => {
                list.as_slice().iter().all(|e| e.conforms(element))
            }
            (Value::Map(map), FieldType::Map(key, value)) => map
                .iter()
                .all(|(k, v)| k.to_value().conforms(key) && v.conforms(value)),
            (Value::Struct(values), FieldType::Struct(fields)) => {
                values.len() == fields.len()
                    && values
                        .iter()
                        .zip(fields.iter())
                        .all(|(v, f)| v.conforms(&f.ty))
            }
            (Value::Optional(inner), FieldType::Optional(ty)) => {
                inner.as_deref().is_none_or(|v| v.conforms(ty))
            }
            _ => false,
        }
    }

    /// Whether two values are the same bit for bit, nested values included: the store's notion
    /// of an equal write, which changes nothing. It differs from `==` only for floating values
    /// (numbers, vectors, transforms, anywhere inside the value): `-0.0` is not the same as
    /// `0.0`, since storing it would change the sign, and a NaN is the same as a NaN with the
    /// same bits, since storing it would change nothing.
    pub fn identical(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Number(a), Value::Number(b)) => a.identical(b),
            (Value::Vector(a), Value::Vector(b)) => a.identical(b),
            (Value::Transform(a), Value::Transform(b)) => a.identical(b),
            (Value::List(a), Value::List(b)) => a.identical(b),
            (Value::Map(a), Value::Map(b)) => {
                Arc::ptr_eq(a, b)
                    || (a.len() == b.len()
                        && a.iter()
                            .zip(b.iter())
                            .all(|((ka, va), (kb, vb))| ka == kb && va.identical(vb)))
            }
            (Value::Struct(a), Value::Struct(b)) => {
                Arc::ptr_eq(a, b)
                    || (a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| x.identical(y)))
            }
            (Value::Optional(a), Value::Optional(b)) => match (a, b) {
                (Some(a), Some(b)) => a.identical(b),
                (None, None) => true,
                _ => false,
            },
            (a, b) => a == b,
        }
    }

    /// A short name of the value's kind, for error messages.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Value::Number(_) => "number",
            Value::Integer(_) => "integer",
            Value::Boolean(_) => "boolean",
            Value::Text(_) => "text",
            Value::Enum(_) => "enum",
            Value::Vector(_) => "vector",
            Value::Transform(_) => "transform",
            Value::Reference(_) => "reference",
            Value::List(_) => "list",
            Value::Map(_) => "map",
            Value::Struct(_) => "struct",
            Value::Optional(_) => "optional",
            Value::Buffer(_) => "buffer",
        }
    }

    /// Visits every instance reference inside the value, nested ones included.
    pub fn for_each_reference(&self, f: &mut impl FnMut(InstanceId)) {
        match self {
            Value::Reference(Some(target)) => f(*target),
            Value::List(list) => list.as_slice().iter().for_each(|v| v.for_each_reference(f)),
            Value::Map(map) => map.values().for_each(|v| v.for_each_reference(f)),
            Value::Struct(values) => values.iter().for_each(|v| v.for_each_reference(f)),
            Value::Optional(Some(inner)) => inner.for_each_reference(f),
            _ => {}
        }
    }

    /// Rewrites every instance reference inside the value; `map` returns the new target, or
    /// `None` to clear it. Returns whether anything changed.
    pub fn rewrite_references(
        &mut self,
        map: &mut impl FnMut(InstanceId) -> Option<InstanceId>,
    ) -> bool {
        match self {
            Value::Reference(target) => match *target {
                Some(old) => {
                    let new = map(old);
                    *target = new;
                    new != Some(old)
                }
                None => false,
            },
            Value::List(list) => {
                let needs = list.as_slice().iter().any(Value::has_reference);
                if !needs {
                    return false;
                }
                let mut changed = false;
                if let Some(elements) = list.elements_mut() {
                    for element in elements {
                        changed |= element.rewrite_references(map);
                    }
                }
                changed
            }
            Value::Map(map_value) => {
                if !map_value.values().any(Value::has_reference) {
                    return false;
                }
                let mut changed = false;
                for v in Arc::make_mut(map_value).values_mut() {
                    changed |= v.rewrite_references(map);
                }
                changed
            }
            Value::Struct(values) => {
                if !values.iter().any(Value::has_reference) {
                    return false;
                }
                let mut owned: Vec<Value> = values.to_vec();
                let mut changed = false;
                for v in &mut owned {
                    changed |= v.rewrite_references(map);
                }
                *values = owned.into();
                changed
            }
            Value::Optional(Some(inner)) => inner.rewrite_references(map),
            _ => false,
        }
    }

    /// Whether the value holds any instance reference.
    pub fn has_reference(&self) -> bool {
        let mut found = false;
        self.for_each_reference(&mut |_| found = true);
        found
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Number(v)
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Integer(v)
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::Boolean(v)
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Text(Arc::from(v))
    }
}

impl From<Vec3> for Value {
    fn from(v: Vec3) -> Self {
        Value::Vector(v)
    }
}

impl From<Transform> for Value {
    fn from(v: Transform) -> Self {
        Value::Transform(Box::new(v))
    }
}

impl From<Option<InstanceId>> for Value {
    fn from(v: Option<InstanceId>) -> Self {
        Value::Reference(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_lists_hold_no_buffer() {
        assert!(!ListValue::from_vec(Vec::new()).has_buffer());
        let mut list = ListValue::from_vec(vec![Value::Integer(1)]);
        assert!(list.has_buffer());
        if let Some(elements) = list.elements_mut() {
            elements.clear();
        }
        list.normalise();
        assert!(!list.has_buffer());
    }

    #[test]
    fn list_buffers_are_copied_on_write() {
        let mut a = ListValue::from_vec(vec![Value::Integer(1)]);
        let b = a.clone();
        assert!(a.shares_buffer_with(&b));
        a.push(Value::Integer(2));
        assert!(!a.shares_buffer_with(&b));
        assert_eq!(b.len(), 1);
        assert_eq!(a.len(), 2);
    }

    #[test]
    fn references_are_found_and_rewritten_at_any_depth() {
        let id = |n| InstanceId::new(n);
        let mut value = Value::Struct(Arc::from(vec![
            Value::Reference(id(1)),
            Value::List(ListValue::from_vec(vec![
                Value::Reference(id(2)),
                Value::Integer(0),
            ])),
            Value::Optional(Some(Box::new(Value::Reference(id(3))))),
        ]));
        let mut seen = Vec::new();
        value.for_each_reference(&mut |r| seen.push(r.get()));
        assert_eq!(seen, vec![1, 2, 3]);
        let changed = value.rewrite_references(&mut |r| {
            (r.get() != 2).then(|| InstanceId::new(r.get() + 10).unwrap())
        });
        assert!(changed);
        let mut seen = Vec::new();
        value.for_each_reference(&mut |r| seen.push(r.get()));
        assert_eq!(seen, vec![11, 13]);
    }
}
