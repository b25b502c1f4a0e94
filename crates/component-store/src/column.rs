//! Typed columns: one per field, all indexed by the same dense row.
//!
//! Invariant: every column of a set has exactly as many entries as the set has rows, and entry
//! `row` of every column belongs to the instance at `ids[row]`. Primitive field types get a
//! specialised `Vec` (so iterating a field is a plain slice walk); lists get a column of
//! copy-on-write list buffers; maps, structs, optionals and buffers get a column of whole values.

use std::sync::Arc;

use strata_arena::{InstanceId, Transform, Vec3};

use crate::def::FieldType;
use crate::value::{ListValue, Value};

/// The storage of one field.
#[derive(Debug)]
pub enum Column {
    /// Number field values.
    Number(Vec<f64>),
    /// Integer field values.
    Integer(Vec<i64>),
    /// Boolean field values.
    Boolean(Vec<bool>),
    /// Text field values.
    Text(Vec<Arc<str>>),
    /// Enum field values, as variant indexes.
    Enum(Vec<u32>),
    /// Vector field values.
    Vector(Vec<Vec3>),
    /// Transform field values.
    Transform(Vec<Transform>),
    /// Reference field values.
    Reference(Vec<Option<InstanceId>>),
    /// List field values: shared copy-on-write buffers.
    List(Vec<ListValue>),
    /// Whole values of compound fields (maps, structs, optionals, buffers).
    Value(Vec<Value>),
}

macro_rules! each_column {
    ($column:expr, $v:ident => $body:expr) => {
        match $column {
            Column::Number($v) => $body,
            Column::Integer($v) => $body,
            Column::Boolean($v) => $body,
            Column::Text($v) => $body,
            Column::Enum($v) => $body,
            Column::Vector($v) => $body,
            Column::Transform($v) => $body,
            Column::Reference($v) => $body,
            Column::List($v) => $body,
            Column::Value($v) => $body,
        }
    };
}

/// The same variant as `$column`, holding `$body` made from its values `$v`.
macro_rules! map_column {
    ($column:expr, $v:ident => $body:expr) => {
        match $column {
            Column::Number($v) => Column::Number($body),
            Column::Integer($v) => Column::Integer($body),
            Column::Boolean($v) => Column::Boolean($body),
            Column::Text($v) => Column::Text($body),
            Column::Enum($v) => Column::Enum($body),
            Column::Vector($v) => Column::Vector($body),
            Column::Transform($v) => Column::Transform($body),
            Column::Reference($v) => Column::Reference($body),
            Column::List($v) => Column::List($body),
            Column::Value($v) => Column::Value($body),
        }
    };
}

/// A copy of `values` with room for `extra` more, so the copy's first pushes do not move it.
pub(crate) fn with_room<T: Clone>(values: &[T], extra: usize) -> Vec<T> {
    let mut copy = Vec::with_capacity(values.len() + extra);
    copy.extend_from_slice(values);
    copy
}

impl Clone for Column {
    fn clone(&self) -> Self {
        self.clone_with_room(0)
    }

    /// Reuses this column's buffer when it holds the same type (a copy-on-write copy made into
    /// a spare).
    fn clone_from(&mut self, source: &Self) {
        match (self, source) {
            (Column::Number(v), Column::Number(s)) => v.clone_from(s),
            (Column::Integer(v), Column::Integer(s)) => v.clone_from(s),
            (Column::Boolean(v), Column::Boolean(s)) => v.clone_from(s),
            (Column::Text(v), Column::Text(s)) => v.clone_from(s),
            (Column::Enum(v), Column::Enum(s)) => v.clone_from(s),
            (Column::Vector(v), Column::Vector(s)) => v.clone_from(s),
            (Column::Transform(v), Column::Transform(s)) => v.clone_from(s),
            (Column::Reference(v), Column::Reference(s)) => v.clone_from(s),
            (Column::List(v), Column::List(s)) => v.clone_from(s),
            (Column::Value(v), Column::Value(s)) => v.clone_from(s),
            (this, source) => *this = source.clone(),
        }
    }
}

impl Column {
    /// An empty column for a field type.
    pub fn for_type(ty: &FieldType) -> Self {
        match ty {
            FieldType::Number => Column::Number(Vec::new()),
            FieldType::Integer => Column::Integer(Vec::new()),
            FieldType::Boolean => Column::Boolean(Vec::new()),
            FieldType::Text => Column::Text(Vec::new()),
            FieldType::Enum(_) => Column::Enum(Vec::new()),
            FieldType::Vector => Column::Vector(Vec::new()),
            FieldType::Transform => Column::Transform(Vec::new()),
            FieldType::Reference => Column::Reference(Vec::new()),
            FieldType::List(_) => Column::List(Vec::new()),
            FieldType::Map(..)
            | FieldType::Struct(_)
            | FieldType::Optional(_)
            | FieldType::Buffer => Column::Value(Vec::new()),
        }
    }

    /// A copy with room for `extra` more rows (see [`with_room`]).
    pub(crate) fn clone_with_room(&self, extra: usize) -> Column {
        map_column!(self, v => with_room(v, extra))
    }

    /// How many rows the column holds.
    pub fn len(&self) -> usize {
        each_column!(self, v => v.len())
    }

    /// Whether the column is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many rows fit before the column reallocates.
    pub fn capacity(&self) -> usize {
        each_column!(self, v => v.capacity())
    }

    /// Appends a conforming value. The caller has checked conformance.
    pub(crate) fn push(&mut self, value: Value) {
        match (self, value) {
            (Column::Number(c), Value::Number(v)) => c.push(v),
            (Column::Integer(c), Value::Integer(v)) => c.push(v),
            (Column::Boolean(c), Value::Boolean(v)) => c.push(v),
            (Column::Text(c), Value::Text(v)) => c.push(v),
            (Column::Enum(c), Value::Enum(v)) => c.push(v),
            (Column::Vector(c), Value::Vector(v)) => c.push(v),
            (Column::Transform(c), Value::Transform(v)) => c.push(*v),
            (Column::Reference(c), Value::Reference(v)) => c.push(v),
            (Column::List(c), Value::List(v)) => c.push(v),
            (Column::Value(c), v) => c.push(v),
            (column, value) => unreachable!(
                "column {:?} was given a non-conforming {} value",
                column.kind(),
                value.kind_name()
            ),
        }
    }

    /// The value at a row.
    pub fn get(&self, row: usize) -> Option<Value> {
        Some(match self {
            Column::Number(c) => Value::Number(*c.get(row)?),
            Column::Integer(c) => Value::Integer(*c.get(row)?),
            Column::Boolean(c) => Value::Boolean(*c.get(row)?),
            Column::Text(c) => Value::Text(c.get(row)?.clone()),
            Column::Enum(c) => Value::Enum(*c.get(row)?),
            Column::Vector(c) => Value::Vector(*c.get(row)?),
            Column::Transform(c) => Value::Transform(Box::new(*c.get(row)?)),
            Column::Reference(c) => Value::Reference(*c.get(row)?),
            Column::List(c) => Value::List(c.get(row)?.clone()),
            Column::Value(c) => c.get(row)?.clone(),
        })
    }

    /// Replaces the value at a row with a conforming value; returns whether it differed bit
    /// for bit (see [`Value::identical`]).
    pub(crate) fn replace(&mut self, row: usize, value: Value) -> bool {
        fn put<T>(slot: &mut T, v: T, same: impl Fn(&T, &T) -> bool) -> bool {
            if same(slot, &v) {
                false
            } else {
                *slot = v;
                true
            }
        }
        match (self, value) {
            (Column::Number(c), Value::Number(v)) => put(&mut c[row], v, Scalar::identical),
            (Column::Integer(c), Value::Integer(v)) => put(&mut c[row], v, Scalar::identical),
            (Column::Boolean(c), Value::Boolean(v)) => put(&mut c[row], v, Scalar::identical),
            (Column::Text(c), Value::Text(v)) => put(&mut c[row], v, Scalar::identical),
            (Column::Enum(c), Value::Enum(v)) => put(&mut c[row], v, Scalar::identical),
            (Column::Vector(c), Value::Vector(v)) => put(&mut c[row], v, Scalar::identical),
            (Column::Transform(c), Value::Transform(v)) => put(&mut c[row], *v, Scalar::identical),
            (Column::Reference(c), Value::Reference(v)) => put(&mut c[row], v, Scalar::identical),
            (Column::List(c), Value::List(v)) => put(&mut c[row], v, ListValue::identical),
            (Column::Value(c), v) => put(&mut c[row], v, Value::identical),
            (column, value) => unreachable!(
                "column {:?} was given a non-conforming {} value",
                column.kind(),
                value.kind_name()
            ),
        }
    }

    /// Whether row `row` of this column and row `other_row` of `other` hold the same value bit
    /// for bit (see [`Value::identical`]); `false` for columns of different kinds.
    pub(crate) fn same_cell(&self, row: usize, other: &Column, other_row: usize) -> bool {
        fn same<T>(a: &[T], i: usize, b: &[T], j: usize, eq: impl Fn(&T, &T) -> bool) -> bool {
            matches!((a.get(i), b.get(j)), (Some(x), Some(y)) if eq(x, y))
        }
        match (self, other) {
            (Column::Number(a), Column::Number(b)) => same(a, row, b, other_row, Scalar::identical),
            (Column::Integer(a), Column::Integer(b)) => {
                same(a, row, b, other_row, Scalar::identical)
            }
            (Column::Boolean(a), Column::Boolean(b)) => {
                same(a, row, b, other_row, Scalar::identical)
            }
            (Column::Text(a), Column::Text(b)) => same(a, row, b, other_row, Scalar::identical),
            (Column::Enum(a), Column::Enum(b)) => same(a, row, b, other_row, Scalar::identical),
            (Column::Vector(a), Column::Vector(b)) => same(a, row, b, other_row, Scalar::identical),
            (Column::Transform(a), Column::Transform(b)) => {
                same(a, row, b, other_row, Scalar::identical)
            }
            (Column::Reference(a), Column::Reference(b)) => {
                same(a, row, b, other_row, Scalar::identical)
            }
            (Column::List(a), Column::List(b)) => same(a, row, b, other_row, ListValue::identical),
            (Column::Value(a), Column::Value(b)) => same(a, row, b, other_row, Value::identical),
            _ => false,
        }
    }

    /// Moves the last row into `row` and shortens the column by one.
    #[inline]
    pub(crate) fn swap_remove(&mut self, row: usize) {
        each_column!(self, v => { v.swap_remove(row); });
    }

    /// Exchanges two rows.
    #[inline]
    pub(crate) fn swap_rows(&mut self, a: usize, b: usize) {
        each_column!(self, v => v.swap(a, b))
    }

    /// Stores a copy of `source`'s row `source_row` (same kind of column) at `row`.
    pub(crate) fn assign_from(&mut self, row: usize, source: &Column, source_row: usize) {
        match (self, source) {
            (Column::Number(d), Column::Number(s)) => d[row] = s[source_row],
            (Column::Integer(d), Column::Integer(s)) => d[row] = s[source_row],
            (Column::Boolean(d), Column::Boolean(s)) => d[row] = s[source_row],
            (Column::Text(d), Column::Text(s)) => d[row] = s[source_row].clone(),
            (Column::Enum(d), Column::Enum(s)) => d[row] = s[source_row],
            (Column::Vector(d), Column::Vector(s)) => d[row] = s[source_row],
            (Column::Transform(d), Column::Transform(s)) => d[row] = s[source_row],
            (Column::Reference(d), Column::Reference(s)) => d[row] = s[source_row],
            (Column::List(d), Column::List(s)) => d[row] = s[source_row].clone(),
            (Column::Value(d), Column::Value(s)) => d[row] = s[source_row].clone(),
            (dest, source) => unreachable!(
                "columns of one field have one kind ({} vs {})",
                dest.kind(),
                source.kind()
            ),
        }
    }

    /// Appends a copy of `source`'s row `row` (same kind of column).
    #[inline]
    pub(crate) fn push_from(&mut self, source: &Column, row: usize) {
        match (self, source) {
            (Column::Number(d), Column::Number(s)) => d.push(s[row]),
            (Column::Integer(d), Column::Integer(s)) => d.push(s[row]),
            (Column::Boolean(d), Column::Boolean(s)) => d.push(s[row]),
            (Column::Text(d), Column::Text(s)) => d.push(s[row].clone()),
            (Column::Enum(d), Column::Enum(s)) => d.push(s[row]),
            (Column::Vector(d), Column::Vector(s)) => d.push(s[row]),
            (Column::Transform(d), Column::Transform(s)) => d.push(s[row]),
            (Column::Reference(d), Column::Reference(s)) => d.push(s[row]),
            (Column::List(d), Column::List(s)) => d.push(s[row].clone()),
            (Column::Value(d), Column::Value(s)) => d.push(s[row].clone()),
            (dest, source) => unreachable!(
                "columns of one field have one kind ({} vs {})",
                dest.kind(),
                source.kind()
            ),
        }
    }

    /// Appends `n` copies of `source`'s row `row` (same kind of column).
    pub(crate) fn extend_from(&mut self, source: &Column, row: usize, n: usize) {
        use std::iter::repeat_n;
        match (self, source) {
            (Column::Number(d), Column::Number(s)) => d.extend(repeat_n(s[row], n)),
            (Column::Integer(d), Column::Integer(s)) => d.extend(repeat_n(s[row], n)),
            (Column::Boolean(d), Column::Boolean(s)) => d.extend(repeat_n(s[row], n)),
            (Column::Text(d), Column::Text(s)) => d.extend(repeat_n(s[row].clone(), n)),
            (Column::Enum(d), Column::Enum(s)) => d.extend(repeat_n(s[row], n)),
            (Column::Vector(d), Column::Vector(s)) => d.extend(repeat_n(s[row], n)),
            (Column::Transform(d), Column::Transform(s)) => d.extend(repeat_n(s[row], n)),
            (Column::Reference(d), Column::Reference(s)) => d.extend(repeat_n(s[row], n)),
            (Column::List(d), Column::List(s)) => d.extend(repeat_n(s[row].clone(), n)),
            (Column::Value(d), Column::Value(s)) => d.extend(repeat_n(s[row].clone(), n)),
            (dest, source) => unreachable!(
                "columns of one field have one kind ({} vs {})",
                dest.kind(),
                source.kind()
            ),
        }
    }

    /// Shortens the column to `len` rows.
    pub(crate) fn truncate(&mut self, len: usize) {
        each_column!(self, v => v.truncate(len))
    }

    /// Replaces this column's rows with the first `len` rows of `source` (same kind), reusing
    /// this column's allocation.
    pub(crate) fn copy_from(&mut self, source: &Column, len: usize) {
        match (self, source) {
            (Column::Number(d), Column::Number(s)) => copy_prefix(d, s, len),
            (Column::Integer(d), Column::Integer(s)) => copy_prefix(d, s, len),
            (Column::Boolean(d), Column::Boolean(s)) => copy_prefix(d, s, len),
            (Column::Text(d), Column::Text(s)) => copy_prefix(d, s, len),
            (Column::Enum(d), Column::Enum(s)) => copy_prefix(d, s, len),
            (Column::Vector(d), Column::Vector(s)) => copy_prefix(d, s, len),
            (Column::Transform(d), Column::Transform(s)) => copy_prefix(d, s, len),
            (Column::Reference(d), Column::Reference(s)) => copy_prefix(d, s, len),
            (Column::List(d), Column::List(s)) => copy_prefix(d, s, len),
            (Column::Value(d), Column::Value(s)) => copy_prefix(d, s, len),
            (dest, source) => {
                *dest = {
                    let mut fresh = source.clone();
                    fresh.truncate(len);
                    fresh
                }
            }
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Column::Number(_) => "number",
            Column::Integer(_) => "integer",
            Column::Boolean(_) => "boolean",
            Column::Text(_) => "text",
            Column::Enum(_) => "enum",
            Column::Vector(_) => "vector",
            Column::Transform(_) => "transform",
            Column::Reference(_) => "reference",
            Column::List(_) => "list",
            Column::Value(_) => "value",
        }
    }
}

fn copy_prefix<T: Clone>(dest: &mut Vec<T>, source: &[T], len: usize) {
    dest.clear();
    dest.extend_from_slice(&source[..len]);
}

/// A primitive field type with its own column, for typed access without boxing.
pub trait Scalar: Clone + PartialEq + Sized + 'static {
    /// Whether a value of this type can fall outside a field whose column holds the type (only
    /// enum indexes can: they must name a variant), so writes must check [`Scalar::fits`].
    const RANGED: bool = false;

    /// The field types whose column holds this Rust type.
    fn matches(ty: &FieldType) -> bool;

    /// Whether this value can be stored in a field of type `ty`, given that
    /// [`Scalar::matches`] holds for `ty`.
    fn fits(&self, ty: &FieldType) -> bool {
        let _ = ty;
        true
    }

    /// Whether two values are the same bit for bit: the store's notion of an equal write.
    /// Floating values differ from IEEE `==` here: `-0.0` is not `0.0`, and a NaN is the same
    /// as a NaN with the same bits.
    fn identical(&self, other: &Self) -> bool {
        self == other
    }
    /// The column's values, when the column holds this type.
    fn slice(column: &Column) -> Option<&[Self]>;
    /// The column's values for writing, when the column holds this type.
    fn slice_mut(column: &mut Column) -> Option<&mut [Self]>;
    /// The value in dynamic form.
    fn into_value(self) -> Value;
    /// The typed value of a dynamic value of this type.
    fn from_value(value: Value) -> Option<Self>;
}

macro_rules! scalar {
    (
        $t:ty, $variant:ident, $pattern:pat, |$v:ident| $wrap:expr, |$u:ident| $unwrap:expr
        $(, { $($extra:item)* })?
    ) => {
        impl Scalar for $t {
            $($($extra)*)?

            fn matches(ty: &FieldType) -> bool {
                matches!(ty, $pattern)
            }
            fn slice(column: &Column) -> Option<&[Self]> {
                match column {
                    Column::$variant(values) => Some(values),
                    _ => None,
                }
            }
            fn slice_mut(column: &mut Column) -> Option<&mut [Self]> {
                match column {
                    Column::$variant(values) => Some(values),
                    _ => None,
                }
            }
            fn into_value(self) -> Value {
                let $v = self;
                $wrap
            }
            fn from_value(value: Value) -> Option<Self> {
                match value {
                    Value::$variant($u) => Some($unwrap),
                    _ => None,
                }
            }
        }
    };
}

scalar!(
    f64,
    Number,
    FieldType::Number,
    |v| Value::Number(v),
    |u| u,
    {
        fn identical(&self, other: &Self) -> bool {
            self.to_bits() == other.to_bits()
        }
    }
);
scalar!(
    i64,
    Integer,
    FieldType::Integer,
    |v| Value::Integer(v),
    |u| u
);
scalar!(
    bool,
    Boolean,
    FieldType::Boolean,
    |v| Value::Boolean(v),
    |u| u
);
scalar!(Arc<str>, Text, FieldType::Text, |v| Value::Text(v), |u| u);
scalar!(u32, Enum, FieldType::Enum(_), |v| Value::Enum(v), |u| u, {
    const RANGED: bool = true;

    fn fits(&self, ty: &FieldType) -> bool {
        matches!(ty, FieldType::Enum(variants) if (*self as usize) < variants.len())
    }
});
scalar!(
    Vec3,
    Vector,
    FieldType::Vector,
    |v| Value::Vector(v),
    |u| u,
    {
        fn identical(&self, other: &Self) -> bool {
            same_vector(self, other)
        }
    }
);
scalar!(
    Transform,
    Transform,
    FieldType::Transform,
    |v| Value::Transform(Box::new(v)),
    |u| *u,
    {
        fn identical(&self, other: &Self) -> bool {
            same_transform(self, other)
        }
    }
);

/// Whether two vectors are the same bit for bit (every component compared, without a branch,
/// so passes over vector columns can vectorise).
#[inline(always)]
pub(crate) fn same_vector(a: &Vec3, b: &Vec3) -> bool {
    ((a.x.to_bits() ^ b.x.to_bits())
        | (a.y.to_bits() ^ b.y.to_bits())
        | (a.z.to_bits() ^ b.z.to_bits()))
        == 0
}

/// Whether two transforms are the same bit for bit (every element compared, without a
/// branch).
#[inline(always)]
pub(crate) fn same_transform(a: &Transform, b: &Transform) -> bool {
    a.rows
        .iter()
        .flatten()
        .zip(b.rows.iter().flatten())
        .fold(0u32, |differ, (x, y)| differ | (x.to_bits() ^ y.to_bits()))
        == 0
}
scalar!(
    Option<InstanceId>,
    Reference,
    FieldType::Reference,
    |v| Value::Reference(v),
    |u| u
);
