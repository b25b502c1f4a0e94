//! A writer's recorded writes to one column (one field of one component), typed by the field.
//!
//! Invariant: a log holds at most one entry per row: the writer's latest value for that row,
//! with the instance the row held when it was written and the sequence number of that latest
//! write. A repeated write replaces the entry's value and sequence in place. `in_order` is true
//! while the entries' sequences ascend with their positions; once a replacement breaks that,
//! [`Log::order`] sorts positions by sequence. The row index (present only while the writer
//! runs) maps a row to its entry: a hash map while the writer has touched few rows, a zeroed
//! array indexed by row (whose untouched pages cost nothing) once it has touched more.

use std::sync::Arc;

use hashbrown::HashMap;
use strata_arena::{Transform, Vec3};
use strata_component_store::{FieldType, InstanceRef, Scalar, Value};

use crate::spare::Spare;

/// A log's row index turns dense once the writer has written more than one row in this many of
/// the set (and more than 64): about one row per page of the zeroed array, so the array's
/// resident size stays within a small factor of the hash map's it replaces.
const DENSE_EVERY: usize = 1024;

/// Row → entry position, for one writer's log of one column.
#[derive(Clone, Debug)]
pub struct RowIndex {
    rows: Rows,
    /// Rows of the set (fixed while the overlay borrows the store).
    set_len: usize,
}

#[derive(Clone, Debug)]
enum Rows {
    Sparse(HashMap<u32, u32>),
    /// Position + 1 per row, 0 for none: the array starts zeroed, so the allocator can hand
    /// out untouched pages and a writer pays only for the part of the set it writes.
    Dense(Vec<u32>),
}

impl RowIndex {
    /// An empty index over a set of `set_len` rows.
    pub(crate) fn new(set_len: usize) -> Self {
        Self {
            rows: Rows::Sparse(HashMap::new()),
            set_len,
        }
    }

    fn get(&self, row: u32) -> Option<u32> {
        match &self.rows {
            Rows::Sparse(map) => map.get(&row).copied(),
            Rows::Dense(rows) => rows.get(row as usize).and_then(|&p| p.checked_sub(1)),
        }
    }

    /// Points `row` at `position` (a row without an entry yet).
    fn insert(&mut self, row: u32, position: u32, spare: Option<&Spare>) {
        match &mut self.rows {
            Rows::Sparse(map) => {
                map.insert(row, position);
                if map.len() > 64 && map.len() > self.set_len / DENSE_EVERY {
                    let len = map
                        .keys()
                        .map(|&r| r as usize + 1)
                        .fold(self.set_len, usize::max);
                    let mut dense = match spare {
                        Some(spare) => spare.take_index(len),
                        None => vec![0; len],
                    };
                    for (&r, &p) in map.iter() {
                        dense[r as usize] = p + 1;
                    }
                    self.rows = Rows::Dense(dense);
                }
            }
            Rows::Dense(rows) => {
                let row = row as usize;
                if row >= rows.len() {
                    rows.resize(row + 1, 0);
                }
                rows[row] = position + 1;
            }
        }
    }

    /// Hands a dense row array to `spare`; a sparse map is simply dropped.
    pub(crate) fn give_to(self, spare: &Spare) {
        if let Rows::Dense(rows) = self.rows {
            spare.give_index(rows);
        }
    }
}

/// One writer's entries for one column, as parallel arrays.
#[derive(Clone, Debug, PartialEq)]
pub struct Log<T> {
    pub(crate) rows: Vec<u32>,
    pub(crate) instances: Vec<InstanceRef>,
    pub(crate) values: Vec<T>,
    pub(crate) sequences: Vec<u64>,
    in_order: bool,
}

impl<T> Default for Log<T> {
    fn default() -> Self {
        Self {
            rows: Vec::new(),
            instances: Vec::new(),
            values: Vec::new(),
            sequences: Vec::new(),
            in_order: true,
        }
    }
}

impl<T> Log<T> {
    /// Records `value` for `row`, replacing this log's earlier entry for the row if it has one.
    #[inline]
    pub(crate) fn record(
        &mut self,
        index: &mut RowIndex,
        spare: Option<&Spare>,
        row: u32,
        instance: InstanceRef,
        value: T,
        sequence: u64,
    ) {
        if let Some(position) = index.get(row) {
            let position = position as usize;
            self.values[position] = value;
            self.sequences[position] = sequence;
            self.in_order &= position + 1 == self.values.len();
            return;
        }
        // A log has at most one entry per row and rows are `u32` below `u32::MAX`, so positions
        // (and positions + 1) fit.
        index.insert(row, self.rows.len() as u32, spare);
        self.rows.push(row);
        self.instances.push(instance);
        self.values.push(value);
        self.sequences.push(sequence);
    }

    /// The latest value recorded for `row`.
    pub(crate) fn get(&self, index: &RowIndex, row: u32) -> Option<&T> {
        index
            .get(row)
            .and_then(|position| self.values.get(position as usize))
    }

    /// Entries.
    pub(crate) fn len(&self) -> usize {
        self.rows.len()
    }

    /// Entry positions in sequence order.
    pub(crate) fn order(&self) -> Order {
        if self.in_order {
            return Order::Positions(self.len());
        }
        let mut order: Vec<usize> = (0..self.len()).collect();
        order.sort_unstable_by_key(|&p| self.sequences[p]);
        Order::Sorted(order)
    }

    /// Empties the log, keeping its memory.
    fn clear(&mut self) {
        self.rows.clear();
        self.instances.clear();
        self.values.clear();
        self.sequences.clear();
        self.in_order = true;
    }

    /// Bytes of capacity held.
    fn capacity_bytes(&self) -> usize {
        self.rows.capacity() * size_of::<u32>()
            + self.instances.capacity() * size_of::<InstanceRef>()
            + self.values.capacity() * size_of::<T>()
            + self.sequences.capacity() * size_of::<u64>()
    }
}

/// The positions of a log's entries in sequence order.
pub(crate) enum Order {
    /// Positions `0..n` are already in order.
    Positions(usize),
    /// Positions sorted by sequence.
    Sorted(Vec<usize>),
}

impl Order {
    pub(crate) fn len(&self) -> usize {
        match self {
            Order::Positions(n) => *n,
            Order::Sorted(order) => order.len(),
        }
    }

    /// The position of the `k`th entry in sequence order.
    #[inline]
    pub(crate) fn at(&self, k: usize) -> usize {
        match self {
            Order::Positions(_) => k,
            Order::Sorted(order) => order[k],
        }
    }
}

/// A column's log, typed by the field: the scalar types the store keeps in typed columns, and
/// [`Value`] for the rest (references, lists, maps, structs, optionals, buffers).
#[derive(Clone, Debug, PartialEq)]
pub enum ColumnLog {
    Number(Log<f64>),
    Integer(Log<i64>),
    Boolean(Log<bool>),
    Text(Log<Arc<str>>),
    Enum(Log<u32>),
    Vector(Log<Vec3>),
    Transform(Log<Transform>),
    Value(Log<Value>),
}

/// Runs `$body` with `$log` bound to the typed log, whatever its type; with a second body,
/// the first serves the scalar logs (whose type is a `Scalar`) and the second the `Value` log.
macro_rules! each_log {
    ($column:expr, $log:ident => $body:expr) => {
        each_log!($column, $log => $body, $log => $body)
    };
    ($column:expr, $log:ident => $scalar:expr, $value_log:ident => $value:expr) => {
        match $column {
            ColumnLog::Number($log) => $scalar,
            ColumnLog::Integer($log) => $scalar,
            ColumnLog::Boolean($log) => $scalar,
            ColumnLog::Text($log) => $scalar,
            ColumnLog::Enum($log) => $scalar,
            ColumnLog::Vector($log) => $scalar,
            ColumnLog::Transform($log) => $scalar,
            ColumnLog::Value($value_log) => $value,
        }
    };
}

impl ColumnLog {
    /// An empty log for a field of type `ty`.
    pub(crate) fn for_type(ty: &FieldType) -> Self {
        match ty {
            FieldType::Number => ColumnLog::Number(Log::default()),
            FieldType::Integer => ColumnLog::Integer(Log::default()),
            FieldType::Boolean => ColumnLog::Boolean(Log::default()),
            FieldType::Text => ColumnLog::Text(Log::default()),
            FieldType::Enum(_) => ColumnLog::Enum(Log::default()),
            FieldType::Vector => ColumnLog::Vector(Log::default()),
            FieldType::Transform => ColumnLog::Transform(Log::default()),
            _ => ColumnLog::Value(Log::default()),
        }
    }

    /// Records a value already checked against the field's type. A value not of the log's type
    /// is handed back untouched (its kind named) and nothing is recorded.
    pub(crate) fn record_value(
        &mut self,
        index: &mut RowIndex,
        spare: Option<&Spare>,
        row: u32,
        instance: InstanceRef,
        value: Value,
        sequence: u64,
    ) -> Result<(), &'static str> {
        let kind = value.kind_name();
        each_log!(self,
        log => {
            let value = Scalar::from_value(value).ok_or(kind)?;
            log.record(index, spare, row, instance, value, sequence);
            Ok(())
        },
        log => {
            log.record(index, spare, row, instance, value, sequence);
            Ok(())
        })
    }

    /// The latest value recorded for `row`, in dynamic form.
    pub(crate) fn value_at(&self, index: &RowIndex, row: u32) -> Option<Value> {
        each_log!(self,
            log => log.get(index, row).cloned().map(Scalar::into_value),
            log => log.get(index, row).cloned())
    }

    /// Entries.
    pub(crate) fn len(&self) -> usize {
        each_log!(self, log => log.len())
    }

    /// Empties the log, keeping its memory.
    pub(crate) fn clear(&mut self) {
        each_log!(self, log => log.clear())
    }

    /// Bytes of capacity held.
    pub(crate) fn capacity_bytes(&self) -> usize {
        each_log!(self, log => log.capacity_bytes())
    }

    /// Visits the rows and instances of the entries in sequence order.
    pub(crate) fn for_each_in_order(&self, mut f: impl FnMut(u32, InstanceRef)) {
        each_log!(self, log => {
            let order = log.order();
            for k in 0..order.len() {
                let p = order.at(k);
                f(log.rows[p], log.instances[p]);
            }
        })
    }

    /// The lowest and highest row written, if any.
    pub(crate) fn row_span(&self) -> Option<(u32, u32)> {
        each_log!(self, log => log.rows.iter().fold(None, |span, &row| match span {
            None => Some((row, row)),
            Some((min, max)) => Some((row.min(min), row.max(max))),
        }))
    }
}

/// The field types an [`OverlayColumn`](crate::OverlayColumn) writes: the scalar types the
/// store keeps in typed columns (`f64`, `i64`, `bool`, `Arc<str>`, `u32` for enums, `Vec3`,
/// `Transform`). Implemented for exactly those; it cannot be implemented elsewhere.
pub trait Logged: Scalar + Send {
    /// The typed log, when the column log holds this type.
    #[doc(hidden)]
    fn log_mut(column: &mut ColumnLog) -> Option<&mut Log<Self>>;
}

macro_rules! logged {
    ($t:ty, $variant:ident) => {
        impl Logged for $t {
            fn log_mut(column: &mut ColumnLog) -> Option<&mut Log<Self>> {
                match column {
                    ColumnLog::$variant(log) => Some(log),
                    _ => None,
                }
            }
        }
    };
}

logged!(f64, Number);
logged!(i64, Integer);
logged!(bool, Boolean);
logged!(Arc<str>, Text);
logged!(u32, Enum);
logged!(Vec3, Vector);
logged!(Transform, Transform);
