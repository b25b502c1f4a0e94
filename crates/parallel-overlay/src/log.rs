//! A writer's recorded writes to one column (one field of one component), typed by the field.
//!
//! Invariant: a log holds at most one entry per row: the writer's latest value for that row,
//! with the instance the row held when it was written and the sequence number of that latest
//! write. A log starts as a run: while every write lands on the row after the previous one, entry
//! `i` is row `start + i`, the entries are in sequence order, and only the values are kept (rows
//! and sequences follow from the positions; instances are the store's and are copied only when
//! the overlay finishes for a commit that may meet another store or a changed structure). The
//! first write off the run spills it into parallel arrays of rows, instances, values and
//! sequences (the run's sequences numbered from zero, below every later write's), and the log
//! stays so. There, a repeated write replaces the entry's value and sequence in place;
//! `in_order` is true while the entries' sequences ascend with their positions, and once a
//! replacement breaks that, [`Log::order`] sorts positions by sequence. The row index (present
//! only while the writer runs, and only once the run spilled) maps a row to its entry: a hash
//! map while the writer has touched few rows, a zeroed array indexed by row (whose untouched
//! pages cost nothing) once it has touched more.

use std::sync::Arc;

use hashbrown::HashMap;
use strata_arena::{InstanceId, Slot, Transform, Vec3};
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

/// The instances at the rows of a set, as the store holds them while a writer runs.
#[derive(Clone, Copy)]
pub(crate) struct Holders<'s> {
    pub(crate) ids: &'s [InstanceId],
    pub(crate) slots: &'s [Slot],
}

impl Holders<'_> {
    /// The instance at a row of the set (rows a log holds are rows of the set).
    fn at(&self, row: u32) -> InstanceRef {
        let row = row as usize;
        InstanceRef::new(self.ids[row], self.slots[row])
    }
}

/// One writer's entries for one column: a run of values, or parallel arrays.
#[derive(Clone, Debug, PartialEq)]
pub struct Log<T> {
    /// While `Some`, the log is a run starting at this row: entry `i` is row `start + i`, in
    /// sequence order, and `rows` and `sequences` are empty (`instances` too, until captured).
    run: Option<u32>,
    pub(crate) rows: Vec<u32>,
    pub(crate) instances: Vec<InstanceRef>,
    pub(crate) values: Vec<T>,
    pub(crate) sequences: Vec<u64>,
    in_order: bool,
}

impl<T> Default for Log<T> {
    fn default() -> Self {
        Self {
            run: None,
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
    /// `holders` gives the instance at a row of the set.
    #[inline(always)]
    pub(crate) fn record(
        &mut self,
        index: &mut RowIndex,
        spare: Option<&Spare>,
        holders: Holders<'_>,
        row: u32,
        value: T,
        sequence: u64,
    ) {
        // The common case, a run going on, inline; the rest out of line.
        if let Some(start) = self.run
            && row as usize == start as usize + self.values.len()
        {
            self.values.push(value);
            return;
        }
        self.record_off_run(index, spare, holders, row, value, sequence);
    }

    /// [`Log::record`] of a write that does not continue a run.
    #[inline(never)]
    fn record_off_run(
        &mut self,
        index: &mut RowIndex,
        spare: Option<&Spare>,
        holders: Holders<'_>,
        row: u32,
        value: T,
        sequence: u64,
    ) {
        match self.run {
            None if self.values.is_empty() => {
                self.run = Some(row);
                self.values.push(value);
                return;
            }
            Some(start) => self.spill(index, spare, holders, start),
            None => {}
        }
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
        self.instances.push(holders.at(row));
        self.values.push(value);
        self.sequences.push(sequence);
    }

    /// Records `values` at rows `start`, `start + 1`, ... with sequences from `first`, as that
    /// many calls of [`Log::record`] would: appended at once while the log is a run ending at
    /// `start` (or empty).
    pub(crate) fn record_run(
        &mut self,
        index: &mut RowIndex,
        spare: Option<&Spare>,
        holders: Holders<'_>,
        start: u32,
        values: impl ExactSizeIterator<Item = T>,
        first: u64,
    ) {
        if values.len() == 0 {
            return;
        }
        match self.run {
            Some(run) if start as usize == run as usize + self.values.len() => {
                self.values.extend(values);
            }
            None if self.values.is_empty() => {
                self.run = Some(start);
                self.values.extend(values);
            }
            _ => {
                for (i, value) in values.enumerate() {
                    self.record(
                        index,
                        spare,
                        holders,
                        start + i as u32,
                        value,
                        first + i as u64,
                    );
                }
            }
        }
    }

    /// The values of a run starting at `start`, to append the writer's first writes to in
    /// row order, as that many [`Log::record`] calls would: `None` unless the log is empty.
    /// The caller closes it with [`Log::close_run`].
    pub(crate) fn open_run(&mut self, start: u32) -> Option<&mut Vec<T>> {
        if self.run.is_some() || !self.values.is_empty() {
            return None;
        }
        self.run = Some(start);
        Some(&mut self.values)
    }

    /// Ends what [`Log::open_run`] began: a run that received no value leaves the log empty.
    pub(crate) fn close_run(&mut self) {
        if self.values.is_empty() {
            self.run = None;
        }
    }

    /// Turns a run into parallel arrays: its rows, their instances, sequences from zero (below
    /// every later write's, since the writer has made at least that many writes), indexed.
    #[cold]
    fn spill(
        &mut self,
        index: &mut RowIndex,
        spare: Option<&Spare>,
        holders: Holders<'_>,
        start: u32,
    ) {
        self.run = None;
        let n = self.values.len() as u32;
        self.rows.extend(start..start + n);
        self.instances.truncate(0);
        self.instances
            .extend((start..start + n).map(|row| holders.at(row)));
        self.sequences.extend(0..u64::from(n));
        for (position, row) in (start..start + n).enumerate() {
            index.insert(row, position as u32, spare);
        }
    }

    /// The latest value recorded for `row`.
    pub(crate) fn get(&self, index: &RowIndex, row: u32) -> Option<&T> {
        match self.run {
            Some(start) => self.values.get(row.checked_sub(start)? as usize),
            None => index
                .get(row)
                .and_then(|position| self.values.get(position as usize)),
        }
    }

    /// Entries.
    pub(crate) fn len(&self) -> usize {
        self.values.len()
    }

    /// The first row, while the log is a run.
    pub(crate) fn run_start(&self) -> Option<u32> {
        self.run
    }

    /// The row of the entry at `position`.
    #[inline]
    pub(crate) fn row(&self, position: usize) -> u32 {
        match self.run {
            Some(start) => start + position as u32,
            None => self.rows[position],
        }
    }

    /// The instance the row of the entry at `position` held when it was written, if the log
    /// keeps it (a run keeps its instances only once captured).
    #[inline]
    pub(crate) fn instance(&self, position: usize) -> Option<InstanceRef> {
        self.instances.get(position).copied()
    }

    /// Copies the instances of a run's rows from the set, for a commit that may need them.
    pub(crate) fn capture(&mut self, holders: Holders<'_>) {
        if let Some(start) = self.run
            && self.instances.len() < self.values.len()
        {
            let rows = start as usize..start as usize + self.values.len();
            self.instances.clear();
            self.instances.extend(
                holders.ids[rows.clone()]
                    .iter()
                    .zip(&holders.slots[rows])
                    .map(|(&id, &slot)| InstanceRef::new(id, slot)),
            );
        }
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

    /// Whether the entries' rows ascend strictly in sequence order (a run, or arrays written so).
    pub(crate) fn ascending(&self) -> bool {
        self.run.is_some() || (self.in_order && self.rows.windows(2).all(|pair| pair[0] < pair[1]))
    }

    /// Empties the log, keeping its memory.
    fn clear(&mut self) {
        self.run = None;
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
        holders: Holders<'_>,
        row: u32,
        value: Value,
        sequence: u64,
    ) -> Result<(), &'static str> {
        let kind = value.kind_name();
        each_log!(self,
        log => {
            let value = Scalar::from_value(value).ok_or(kind)?;
            log.record(index, spare, holders, row, value, sequence);
            Ok(())
        },
        log => {
            log.record(index, spare, holders, row, value, sequence);
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

    /// Visits the rows of the entries in sequence order, with the instance each row held when
    /// it was written, when the log keeps it (see [`Log::instance`]).
    pub(crate) fn for_each_in_order(&self, mut f: impl FnMut(u32, Option<InstanceRef>)) {
        each_log!(self, log => {
            let order = log.order();
            for k in 0..order.len() {
                let p = order.at(k);
                f(log.row(p), log.instance(p));
            }
        })
    }

    /// The lowest and highest row written, if any.
    pub(crate) fn row_span(&self) -> Option<(u32, u32)> {
        each_log!(self, log => match log.run_start() {
            Some(start) => Some((start, start + (log.len() as u32).checked_sub(1)?)),
            None => log.rows.iter().fold(None, |span, &row| match span {
                None => Some((row, row)),
                Some((min, max)) => Some((row.min(min), row.max(max))),
            }),
        })
    }

    /// Copies the instances of a run's rows (see [`Log::capture`]).
    pub(crate) fn capture(&mut self, holders: Holders<'_>) {
        each_log!(self, log => log.capture(holders))
    }
}

/// The field types an [`OverlayColumn`](crate::OverlayColumn) writes: the scalar types the
/// store keeps in typed columns (`f64`, `i64`, `bool`, `Arc<str>`, `u32` for enums, `Vec3`,
/// `Transform`). Implemented for exactly those; it cannot be implemented elsewhere.
pub trait Logged: Scalar + Send {
    /// The typed log, when the column log holds this type.
    #[doc(hidden)]
    fn log_mut(column: &mut ColumnLog) -> Option<&mut Log<Self>>;
    /// The typed log, when the column log holds this type.
    #[doc(hidden)]
    fn log_ref(column: &ColumnLog) -> Option<&Log<Self>>;
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
            fn log_ref(column: &ColumnLog) -> Option<&Log<Self>> {
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
