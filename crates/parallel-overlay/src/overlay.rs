//! `Overlay`: one writer's recorded field writes over a shared, read-only view of the store.
//!
//! Invariant: a writer's entries form an append-only log in write order; a repeated write to a
//! (component, row, field) supersedes the earlier entry (marked dead) with a new sequence, so
//! the live entries, in log order, are exactly the writer's final writes in sequence order. A
//! writer reads its own latest write; every other read goes to the store, which no writer
//! changes until commit, so no writer ever sees another's uncommitted writes, whatever lane or
//! order they ran in.

use std::fmt;

use hashbrown::HashMap;
use strata_arena::ClassId;
use strata_component_store::{ComponentId, FieldId, InstanceRef, Scalar, Store, StoreError, Value};

use crate::error::OverlayError;

/// The tier of writers that run first at commit: execution groups, ranked by hierarchy order.
pub const GROUP_TIER: u32 = 0;
/// The tier of writers that commit after every group: systems, ranked by schedule position.
pub const SYSTEM_TIER: u32 = 1;

/// Who a writer is and where its writes go in the commit order.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct WriterRank {
    /// Commit tier: lower tiers apply first.
    pub tier: u32,
    /// Rank within the tier: lower ranks apply first (hierarchy order for groups, scheduled
    /// position for systems).
    pub rank: u64,
    /// The writer's identity for reports and the order oracle (a system id, a group's
    /// instance id).
    pub id: u64,
}

impl WriterRank {
    /// An execution group's writer: first tier, ranked by its hierarchy order.
    pub fn group(hierarchy_order: u64, id: u64) -> Self {
        Self {
            tier: GROUP_TIER,
            rank: hierarchy_order,
            id,
        }
    }

    /// A system's writer: later tier, ranked by its scheduled position.
    pub fn system(scheduled_position: u64, id: u64) -> Self {
        Self {
            tier: SYSTEM_TIER,
            rank: scheduled_position,
            id,
        }
    }
}

impl fmt::Display for WriterRank {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tier = match self.tier {
            GROUP_TIER => "group",
            SYSTEM_TIER => "system",
            _ => "writer",
        };
        write!(f, "{tier} {} (rank {})", self.id, self.rank)
    }
}

/// The key of a recorded write.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) struct WriteKey {
    pub(crate) component: ComponentId,
    pub(crate) row: u32,
    pub(crate) field: FieldId,
}

/// One recorded write.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Entry {
    pub(crate) key: WriteKey,
    pub(crate) instance: InstanceRef,
    pub(crate) value: Value,
    pub(crate) sequence: u64,
    pub(crate) live: bool,
}

/// Where a writer's latest write to each row of one column sits in its log.
///
/// Invariant: `rows` maps a row to the log position of the live entry for (component, row,
/// field); it starts as a hash map and becomes a row-indexed array once the writer has touched
/// an eighth of the set's rows, so a writer sweeping a column pays an array store per write
/// rather than a hash probe, while a writer touching a handful of rows of a large set pays
/// memory only for those.
struct ColumnIndex {
    component: ComponentId,
    field: FieldId,
    rows: RowIndex,
    /// Rows of the set (fixed while the overlay borrows the store).
    set_len: usize,
}

enum RowIndex {
    Sparse(HashMap<u32, usize>),
    /// `NONE` marks a row without a write.
    Dense(Vec<usize>),
}

const NONE: usize = usize::MAX;

impl ColumnIndex {
    fn get(&self, row: u32) -> Option<usize> {
        match &self.rows {
            RowIndex::Sparse(map) => map.get(&row).copied(),
            RowIndex::Dense(rows) => rows.get(row as usize).copied().filter(|&i| i != NONE),
        }
    }

    /// Points `row` at log position `at`; returns the position it pointed at before.
    fn insert(&mut self, row: u32, at: usize) -> Option<usize> {
        match &mut self.rows {
            RowIndex::Sparse(map) => {
                let previous = map.insert(row, at);
                if previous.is_none() && map.len() > 64 && map.len() > self.set_len / 8 {
                    let len = map
                        .keys()
                        .map(|&r| r as usize + 1)
                        .fold(self.set_len, usize::max);
                    let mut dense = vec![NONE; len];
                    for (&r, &i) in map.iter() {
                        dense[r as usize] = i;
                    }
                    self.rows = RowIndex::Dense(dense);
                }
                previous
            }
            RowIndex::Dense(rows) => {
                let row = row as usize;
                if row >= rows.len() {
                    rows.resize(row + 1, NONE);
                }
                let previous = std::mem::replace(&mut rows[row], at);
                (previous != NONE).then_some(previous)
            }
        }
    }
}

/// One writer's overlay over a store it only reads.
pub struct Overlay<'s> {
    rank: WriterRank,
    store: &'s Store,
    /// One index per (component, field) the writer has written.
    columns: Vec<ColumnIndex>,
    /// The column the last write or read used, checked before searching `columns`.
    last_column: usize,
    /// Distinct (component, row, field) written.
    distinct: usize,
    entries: Vec<Entry>,
    sequence: u64,
    reads: u64,
}

impl<'s> Overlay<'s> {
    /// An empty overlay for a writer over `store`.
    pub fn new(rank: WriterRank, store: &'s Store) -> Self {
        Self {
            rank,
            store,
            columns: Vec::new(),
            last_column: 0,
            distinct: 0,
            entries: Vec::new(),
            sequence: 0,
            reads: 0,
        }
    }

    /// The writer.
    pub fn rank(&self) -> WriterRank {
        self.rank
    }

    /// The established state every writer reads.
    pub fn store(&self) -> &'s Store {
        self.store
    }

    /// Reads a field: this writer's latest write if it made one, the established value
    /// otherwise.
    pub fn read(
        &mut self,
        at: InstanceRef,
        component: ComponentId,
        field: FieldId,
    ) -> Result<Value, OverlayError> {
        self.reads += 1;
        let row = self.store.row(at, component)?;
        if let Some(i) = self.latest(component, row, field) {
            return Ok(self.entries[i].value.clone());
        }
        Ok(self.store.get_value(at, component, field)?)
    }

    /// Reads a field, typed (see [`Overlay::read`]).
    pub fn get<T: Scalar>(
        &mut self,
        at: InstanceRef,
        component: ComponentId,
        field: FieldId,
    ) -> Result<T, OverlayError> {
        self.reads += 1;
        let row = self.store.row(at, component)?;
        if let Some(i) = self.latest(component, row, field) {
            let value = self.entries[i].value.clone();
            return T::from_value(value).ok_or_else(|| mismatch(self.store, component, field));
        }
        Ok(self.store.get::<T>(at, component, field)?.clone())
    }

    /// Records a write of a field of an instance's component. The value is checked against the
    /// field's type now; it reaches the store only at commit. A repeated write replaces this
    /// writer's previous value and takes a new sequence number.
    pub fn write(
        &mut self,
        at: InstanceRef,
        component: ComponentId,
        field: FieldId,
        value: Value,
    ) -> Result<(), OverlayError> {
        let row = self.store.row(at, component)?;
        self.checked_record(component, row, at, field, value)
    }

    /// Records a typed write (see [`Overlay::write`]).
    pub fn set<T: Scalar>(
        &mut self,
        at: InstanceRef,
        component: ComponentId,
        field: FieldId,
        value: T,
    ) -> Result<(), OverlayError> {
        self.write(at, component, field, value.into_value())
    }

    /// Records a write addressed by row (a query's row), for tight loops: the row's instance is
    /// read from the store now and checked again at commit.
    pub fn write_row(
        &mut self,
        component: ComponentId,
        row: usize,
        field: FieldId,
        value: Value,
    ) -> Result<(), OverlayError> {
        let set = self.store.set(component)?;
        let (Some(&id), Some(&slot)) = (set.ids().get(row), set.slots().get(row)) else {
            return Err(StoreError::RowOutOfRange {
                component: set.def().name().to_owned(),
                row,
            }
            .into());
        };
        self.checked_record(component, row, InstanceRef::new(id, slot), field, value)
    }

    /// The log position of this writer's latest write to (component, row, field).
    fn latest(&mut self, component: ComponentId, row: usize, field: FieldId) -> Option<usize> {
        let row = u32::try_from(row).ok()?;
        let hit = self.find_column(component, field)?;
        self.columns[hit].get(row)
    }

    fn find_column(&mut self, component: ComponentId, field: FieldId) -> Option<usize> {
        let matches = |c: &ColumnIndex| c.component == component && c.field == field;
        if self.columns.get(self.last_column).is_some_and(matches) {
            return Some(self.last_column);
        }
        let hit = self.columns.iter().position(matches)?;
        self.last_column = hit;
        Some(hit)
    }

    /// Checks the value against the field's type, then records it.
    fn checked_record(
        &mut self,
        component: ComponentId,
        row: usize,
        instance: InstanceRef,
        field: FieldId,
        value: Value,
    ) -> Result<(), OverlayError> {
        let set = self.store.set(component)?;
        let def = set.def();
        let field_def = def
            .field(field)
            .ok_or_else(|| StoreError::FieldOutOfRange {
                component: def.name().to_owned(),
                field,
            })?;
        if !value.conforms(&field_def.ty) {
            return Err(StoreError::TypeMismatch {
                component: def.name().to_owned(),
                field: field_def.name.to_string(),
                expected: field_def.ty.name(),
                found: value.kind_name().to_owned(),
            }
            .into());
        }
        let key_row = u32::try_from(row).map_err(|_| StoreError::RowOutOfRange {
            component: def.name().to_owned(),
            row,
        })?;
        let set_len = set.len();
        let column = match self.find_column(component, field) {
            Some(hit) => hit,
            None => {
                self.columns.push(ColumnIndex {
                    component,
                    field,
                    rows: RowIndex::Sparse(HashMap::new()),
                    set_len,
                });
                self.last_column = self.columns.len() - 1;
                self.last_column
            }
        };
        self.sequence += 1;
        match self.columns[column].insert(key_row, self.entries.len()) {
            Some(previous) => self.entries[previous].live = false,
            None => self.distinct += 1,
        }
        self.entries.push(Entry {
            key: WriteKey {
                component,
                row: key_row,
                field,
            },
            instance,
            value,
            sequence: self.sequence,
            live: true,
        });
        Ok(())
    }

    /// Adding a component is a structural operation: always refused while writers run.
    pub fn add_component(
        &mut self,
        _at: InstanceRef,
        _class: ClassId,
        _component: ComponentId,
    ) -> Result<(), OverlayError> {
        Err(OverlayError::StructuralRefused("adding a component"))
    }

    /// Removing a component is a structural operation: always refused while writers run.
    pub fn remove_component(
        &mut self,
        _at: InstanceRef,
        _component: ComponentId,
    ) -> Result<(), OverlayError> {
        Err(OverlayError::StructuralRefused("removing a component"))
    }

    /// How many distinct fields this writer has written.
    pub fn len(&self) -> usize {
        self.distinct
    }

    /// Whether this writer has written nothing.
    pub fn is_empty(&self) -> bool {
        self.distinct == 0
    }

    /// How many reads the writer made (for system statistics).
    pub fn reads(&self) -> u64 {
        self.reads
    }

    /// Ends the writer's run: its writes, detached from the store borrow, ready to commit.
    pub fn finish(self) -> WriteSet {
        WriteSet {
            rank: self.rank,
            entries: self.entries,
            writes: self.sequence,
            reads: self.reads,
        }
    }
}

/// A finished writer's writes, in sequence order (superseded ones marked dead).
#[derive(Clone, Debug, PartialEq)]
pub struct WriteSet {
    pub(crate) rank: WriterRank,
    pub(crate) entries: Vec<Entry>,
    writes: u64,
    reads: u64,
}

impl WriteSet {
    /// The writer.
    pub fn rank(&self) -> WriterRank {
        self.rank
    }

    /// How many writes the writer made, repeats included (for system statistics).
    pub fn writes(&self) -> u64 {
        self.writes
    }

    /// How many reads the writer made.
    pub fn reads(&self) -> u64 {
        self.reads
    }

    /// How many distinct fields the set will write.
    pub fn len(&self) -> usize {
        self.entries.iter().filter(|e| e.live).count()
    }

    /// Whether the set writes nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn mismatch(store: &Store, component: ComponentId, field: FieldId) -> OverlayError {
    let name = store
        .def(component)
        .map(|d| d.name().to_owned())
        .unwrap_or_default();
    OverlayError::Store(StoreError::TypeMismatch {
        component: name,
        field: format!("{field:?}"),
        expected: "the field's type".into(),
        found: "another type".into(),
    })
}
