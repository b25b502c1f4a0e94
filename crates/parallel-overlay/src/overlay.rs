//! `Overlay`: one writer's recorded field writes over a shared, read-only view of the store.
//!
//! Invariant: a writer keeps one log per (component, field) it writes, holding at most one
//! entry per row (the latest value, the instance the row held, and the sequence number of that
//! write); a repeated write replaces the entry's value and sequence. Each log records the
//! allocation of the component's definition its field id was resolved against, and the store
//! and set structural revision its rows are rows of (all fixed while the overlay borrows the
//! store). A finished write set keeps the instance of every logged row (`Overlay::finish`
//! copies those a run left to the store), except one finished for `run_parallel`, whose commit
//! meets the very rows it recorded. A writer reads its own
//! latest write; every other read goes to the store, which no writer changes until commit, so
//! no writer ever sees another's uncommitted writes, whatever lane or order they ran in.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use strata_arena::ClassId;
use strata_component_store::{
    ComponentId, ComponentSet, FieldId, FieldType, InstanceRef, Scalar, Store, StoreError, StoreId,
    Value, run_start,
};

use crate::error::OverlayError;
use crate::log::{ColumnLog, Holders, Log, Logged, RowIndex};
use crate::spare::Spare;

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

/// One column a writer has written: its log and, while the writer runs, the row index.
struct ColumnState {
    component: ComponentId,
    field: FieldId,
    /// The allocation of the definition `field` belongs to.
    allocation: u64,
    /// The rows the log's rows are rows of (see [`Rows`]).
    rows: Rows,
    index: RowIndex,
    log: ColumnLog,
}

/// Which rows a log was recorded against: the store and the set's structural revision. While
/// both are the same at commit, every logged row still holds the instance it held when written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rows {
    pub(crate) store: StoreId,
    pub(crate) structure: u64,
}

impl Rows {
    /// Whether `store` still has the rows this was taken from, for `component`.
    pub(crate) fn hold(&self, store: &Store, component: ComponentId) -> bool {
        self.store == store.id()
            && store
                .set(component)
                .is_ok_and(|set| set.structural_revision() == self.structure)
    }
}

/// One writer's overlay over a store it only reads.
pub struct Overlay<'s> {
    rank: WriterRank,
    store: &'s Store,
    spare: Option<&'s Spare>,
    /// One per (component, field) the writer has written, in the order first written.
    columns: Vec<ColumnState>,
    /// The column the last access used, checked before searching `columns`.
    last_column: usize,
    /// Writes made, repeats included; also the last sequence number handed out.
    sequence: u64,
    reads: u64,
}

impl<'s> Overlay<'s> {
    /// An empty overlay for a writer over `store`.
    pub fn new(rank: WriterRank, store: &'s Store) -> Self {
        Self {
            rank,
            store,
            spare: None,
            columns: Vec::new(),
            last_column: 0,
            sequence: 0,
            reads: 0,
        }
    }

    /// An empty overlay that takes its logs and row arrays from `spare` and hands its row
    /// arrays back when it finishes (the logs go back at commit, through
    /// [`commit_with_spare`](crate::commit_with_spare)).
    pub fn with_spare(rank: WriterRank, store: &'s Store, spare: &'s Spare) -> Self {
        Self {
            spare: Some(spare),
            ..Self::new(rank, store)
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
    ///
    /// # Errors
    ///
    /// [`OverlayError::Store`] with the store's refusal: a component not installed, an instance
    /// without it, a field it lacks.
    pub fn read(
        &mut self,
        at: InstanceRef,
        component: ComponentId,
        field: FieldId,
    ) -> Result<Value, OverlayError> {
        self.reads += 1;
        let row = self.store.row(at, component)?;
        if let Some(value) = self.latest(component, row, field) {
            return Ok(value);
        }
        Ok(self.store.get_value(at, component, field)?)
    }

    /// Reads a field, typed (see [`Overlay::read`]).
    ///
    /// # Errors
    ///
    /// [`OverlayError::Store`] with the store's refusal: a component not installed, an instance
    /// without it, a field it lacks, or a field that does not hold `T`.
    pub fn get<T: Scalar>(
        &mut self,
        at: InstanceRef,
        component: ComponentId,
        field: FieldId,
    ) -> Result<T, OverlayError> {
        self.reads += 1;
        let row = self.store.row(at, component)?;
        if let Some(value) = self.latest(component, row, field) {
            let def = self.store.def(component)?;
            let field_def = def.check_scalar::<T>(field)?;
            return T::from_value(value).ok_or_else(|| {
                def.type_mismatch(field_def, std::any::type_name::<T>())
                    .into()
            });
        }
        Ok(self.store.get::<T>(at, component, field)?.clone())
    }

    /// Records a write of a field of an instance's component. The value is checked against the
    /// field's type now; it reaches the store only at commit. A repeated write replaces this
    /// writer's previous value and takes a new sequence number.
    ///
    /// # Errors
    ///
    /// [`OverlayError::Store`] with the store's refusal: a component not installed, an instance
    /// without it, a field it lacks, or a value the field cannot hold (a reference to an instance
    /// that is not live included).
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
    ///
    /// # Errors
    ///
    /// As [`Overlay::write`], and a field that does not hold `T`.
    pub fn set<T: Scalar>(
        &mut self,
        at: InstanceRef,
        component: ComponentId,
        field: FieldId,
        value: T,
    ) -> Result<(), OverlayError> {
        self.write(at, component, field, value.into_value())
    }

    /// Records a write addressed by row (a query's row): the row's instance is read from the
    /// store now and checked again at commit. For loops over many rows of one field,
    /// [`Overlay::column`] skips the per-write lookups.
    ///
    /// # Errors
    ///
    /// As [`Overlay::write`], and
    /// [`StoreError::RowOutOfRange`](strata_component_store::StoreError::RowOutOfRange) for a row
    /// past the set's rows.
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

    /// A typed handle on one field of a component, for writing many rows: the set, the field
    /// and this writer's log are looked up once, and each write is a bounds check and an
    /// append (or an in-place replacement of the row's earlier write).
    ///
    /// # Errors
    ///
    /// [`OverlayError::Store`] with the store's refusal: a component not installed, a field it
    /// lacks, or a field that does not hold `T`.
    pub fn column<T: Logged>(
        &mut self,
        component: ComponentId,
        field: FieldId,
    ) -> Result<OverlayColumn<'_, 's, T>, OverlayError> {
        let store = self.store;
        let set = store.set(component)?;
        let def = set.def();
        let field_def = def.check_scalar::<T>(field)?;
        let mismatch = || def.type_mismatch(field_def, std::any::type_name::<T>());
        let established = set.values::<T>(field).ok_or_else(mismatch)?;
        let hit = self.column_state(component, field, &field_def.ty, set);
        let Overlay {
            columns,
            sequence,
            reads,
            spare,
            ..
        } = self;
        let ColumnState { index, log, .. } = &mut columns[hit];
        let log = T::log_mut(log).ok_or_else(mismatch)?;
        Ok(OverlayColumn {
            log,
            index,
            holders: Holders {
                ids: set.ids(),
                slots: set.slots(),
            },
            established,
            spare: *spare,
            sequence,
            reads,
            component: def.name(),
        })
    }

    /// This writer's latest write to (component, row, field).
    fn latest(&mut self, component: ComponentId, row: usize, field: FieldId) -> Option<Value> {
        let row = u32::try_from(row).ok()?;
        let hit = self.find_column(component, field)?;
        let column = &self.columns[hit];
        column.log.value_at(&column.index, row)
    }

    fn find_column(&mut self, component: ComponentId, field: FieldId) -> Option<usize> {
        let matches = |c: &ColumnState| c.component == component && c.field == field;
        if self.columns.get(self.last_column).is_some_and(matches) {
            return Some(self.last_column);
        }
        let hit = self.columns.iter().position(matches)?;
        self.last_column = hit;
        Some(hit)
    }

    /// The position of the column's state, created (empty, typed by the field's type `ty`, over
    /// the rows of `set` and under its definition's allocation) if this writer has not written
    /// it yet.
    fn column_state(
        &mut self,
        component: ComponentId,
        field: FieldId,
        ty: &FieldType,
        set: &ComponentSet,
    ) -> usize {
        if let Some(hit) = self.find_column(component, field) {
            return hit;
        }
        let log = match self.spare {
            Some(spare) => spare.take_log(ty),
            None => ColumnLog::for_type(ty),
        };
        self.columns.push(ColumnState {
            component,
            field,
            allocation: set.def().allocation(),
            rows: Rows {
                store: self.store.id(),
                structure: set.structural_revision(),
            },
            index: RowIndex::new(set.len()),
            log,
        });
        self.last_column = self.columns.len() - 1;
        self.last_column
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
        let field_def = def.check_value(field, &value)?;
        let row = u32::try_from(row).map_err(|_| StoreError::RowOutOfRange {
            component: def.name().to_owned(),
            row,
        })?;
        debug_assert_eq!(
            set.ids().get(row as usize),
            Some(&instance.id),
            "a recorded row holds the instance it was written for"
        );
        let hit = self.column_state(component, field, &field_def.ty, set);
        let column = &mut self.columns[hit];
        let sequence = self.sequence + 1;
        let holders = Holders {
            ids: set.ids(),
            slots: set.slots(),
        };
        column
            .log
            .record_value(&mut column.index, self.spare, holders, row, value, sequence)
            .map_err(|found| def.type_mismatch(field_def, found))?;
        self.sequence = sequence;
        Ok(())
    }

    /// Adding a component is a structural operation: always refused while writers run.
    ///
    /// # Errors
    ///
    /// Always [`OverlayError::StructuralRefused`].
    pub fn add_component(
        &mut self,
        _at: InstanceRef,
        _class: ClassId,
        _component: ComponentId,
    ) -> Result<(), OverlayError> {
        Err(OverlayError::StructuralRefused("adding a component"))
    }

    /// Removing a component is a structural operation: always refused while writers run.
    ///
    /// # Errors
    ///
    /// Always [`OverlayError::StructuralRefused`].
    pub fn remove_component(
        &mut self,
        _at: InstanceRef,
        _component: ComponentId,
    ) -> Result<(), OverlayError> {
        Err(OverlayError::StructuralRefused("removing a component"))
    }

    /// How many distinct fields this writer has written.
    pub fn len(&self) -> usize {
        self.columns.iter().map(|c| c.log.len()).sum()
    }

    /// Whether this writer has written nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many reads the writer made (for system statistics).
    pub fn reads(&self) -> u64 {
        self.reads
    }

    /// How many writes the writer made, repeats included (for system statistics).
    pub fn writes(&self) -> u64 {
        self.sequence
    }

    /// Ends the writer's run: its writes, detached from the store borrow, ready to commit. The
    /// row indexes are dropped here; the commit needs only the logs, and the instances their
    /// rows held, which are copied now for logs that kept only values (a commit into another
    /// store, or after rows moved, goes by instance).
    pub fn finish(self) -> WriteSet {
        let store = self.store;
        self.finish_with(|component, log| {
            if let Ok(set) = store.set(component) {
                log.capture(Holders {
                    ids: set.ids(),
                    slots: set.slots(),
                });
            }
        })
    }

    /// [`Overlay::finish`] for a commit into the store this overlay reads, before anything
    /// else changes its structure (as `run_parallel` commits): the logs' rows still hold their
    /// instances then, so a run's are not copied.
    pub(crate) fn finish_in_place(self) -> WriteSet {
        self.finish_with(|_, _| {})
    }

    fn finish_with(self, mut capture: impl FnMut(ComponentId, &mut ColumnLog)) -> WriteSet {
        let spare = self.spare;
        WriteSet {
            rank: self.rank,
            columns: self
                .columns
                .into_iter()
                .map(|mut c| {
                    if let Some(spare) = spare {
                        c.index.give_to(spare);
                    }
                    capture(c.component, &mut c.log);
                    WrittenColumn {
                        component: c.component,
                        field: c.field,
                        allocation: c.allocation,
                        rows: c.rows,
                        log: c.log,
                    }
                })
                .collect(),
            writes: self.sequence,
            reads: self.reads,
        }
    }
}

/// A typed handle on one field of a component inside a writer's overlay (see
/// [`Overlay::column`]). Rows are the set's rows, as a query or [`Store::set`] gives them.
pub struct OverlayColumn<'o, 's, T: Logged> {
    log: &'o mut Log<T>,
    index: &'o mut RowIndex,
    holders: Holders<'s>,
    established: &'s [T],
    spare: Option<&'s Spare>,
    sequence: &'o mut u64,
    reads: &'o mut u64,
    component: &'s str,
}

impl<T: Logged> OverlayColumn<'_, '_, T> {
    /// Rows of the set.
    pub fn len(&self) -> usize {
        self.holders.ids.len()
    }

    /// Whether the set has no rows.
    pub fn is_empty(&self) -> bool {
        self.holders.ids.is_empty()
    }

    /// The instance at a row.
    pub fn instance(&self, row: usize) -> Option<InstanceRef> {
        Some(InstanceRef::new(
            *self.holders.ids.get(row)?,
            *self.holders.slots.get(row)?,
        ))
    }

    /// Records a write of `value` at `row`; a repeated write replaces this writer's earlier
    /// value and takes a new sequence number.
    ///
    /// # Errors
    ///
    /// [`StoreError::RowOutOfRange`](strata_component_store::StoreError::RowOutOfRange) (as
    /// [`OverlayError::Store`]) for a row past the set's rows, and the store's refusal of a value
    /// the field cannot hold.
    #[inline]
    pub fn write(&mut self, row: usize, value: T) -> Result<(), OverlayError> {
        let (true, Ok(key)) = (row < self.holders.ids.len(), u32::try_from(row)) else {
            return Err(StoreError::RowOutOfRange {
                component: self.component.to_owned(),
                row,
            }
            .into());
        };
        *self.sequence += 1;
        self.log.record(
            self.index,
            self.spare,
            self.holders,
            key,
            value,
            *self.sequence,
        );
        Ok(())
    }

    /// Records `values` at rows `start`, `start + 1`, ... in that order: the same as writing
    /// each with [`OverlayColumn::write`], in one step while this writer's writes to the column
    /// have swept the rows up to `start` in order.
    ///
    /// # Errors
    ///
    /// Refused, recording nothing, when the rows run past the set's.
    pub fn write_run<I>(&mut self, start: usize, values: I) -> Result<(), OverlayError>
    where
        I: IntoIterator<Item = T>,
        I::IntoIter: ExactSizeIterator,
    {
        let values = values.into_iter();
        let rows = self.holders.ids.len();
        let end = start.checked_add(values.len());
        let (Some(end), Ok(first)) = (end.filter(|&end| end <= rows), u32::try_from(start)) else {
            return Err(StoreError::RowOutOfRange {
                component: self.component.to_owned(),
                row: start.max(rows),
            }
            .into());
        };
        let sequence = *self.sequence + 1;
        *self.sequence += (end - start) as u64;
        self.log.record_run(
            self.index,
            self.spare,
            self.holders,
            first,
            values,
            sequence,
        );
        Ok(())
    }

    /// Records `values[i]` at row `rows[i]` for every `i`, in that order: the same as a
    /// [`OverlayColumn::write`] of each, in one loop with the rows checked once.
    ///
    /// # Errors
    ///
    /// [`StoreError::RowOutOfRange`](strata_component_store::StoreError::RowOutOfRange) (as
    /// [`OverlayError::Store`]) when a row is past the set's rows, found before anything is
    /// recorded; a value without a row, or a row without a value, is refused the same way.
    pub fn write_rows<I>(&mut self, rows: &[u32], values: I) -> Result<(), OverlayError>
    where
        I: IntoIterator<Item = T>,
        I::IntoIter: ExactSizeIterator,
    {
        let values = values.into_iter();
        let len = self.holders.ids.len();
        let top = rows.iter().fold(0, |top, &row| top.max(row)) as usize;
        if values.len() != rows.len() || (!rows.is_empty() && top >= len) {
            return Err(StoreError::RowOutOfRange {
                component: self.component.to_owned(),
                row: if rows.is_empty() { len } else { top.max(len) },
            }
            .into());
        }
        if let Some(start) = run_start(rows) {
            // Rows that follow one another: appended at once when they continue the log's run.
            let first = *self.sequence + 1;
            *self.sequence += rows.len() as u64;
            self.log
                .record_run(self.index, self.spare, self.holders, start, values, first);
            return Ok(());
        }
        for (&row, value) in rows.iter().zip(values) {
            *self.sequence += 1;
            self.log.record(
                self.index,
                self.spare,
                self.holders,
                row,
                value,
                *self.sequence,
            );
        }
        Ok(())
    }

    /// A pass of writes over `rows` (rows of the set, a query's for one of its terms): for each
    /// index `k` visited (every index of `selection` when given, in its order, otherwise every
    /// index of `rows`), `f(k, current)` with the value row `rows[k]` holds as this writer sees
    /// it, and a write of what `f` returns unless that is `None` or identical to `current`.
    /// The same as a [`OverlayColumn::get`] and a [`OverlayColumn::write`] per visited row, in
    /// one loop with the rows checked once. Returns how many writes it recorded.
    ///
    /// # Errors
    ///
    /// [`StoreError::RowOutOfRange`](strata_component_store::StoreError::RowOutOfRange) (as
    /// [`OverlayError::Store`]) when a visited row is past the set's rows (or an index past
    /// `rows`), found before anything is recorded.
    #[inline]
    pub fn update_rows<F>(
        &mut self,
        rows: &[u32],
        selection: Option<&[u32]>,
        mut f: F,
    ) -> Result<usize, OverlayError>
    where
        F: FnMut(usize, &T) -> Option<T>,
    {
        let len = self.holders.ids.len().min(self.established.len());
        let past = match selection {
            Some(selected) => selected
                .iter()
                .find(|&&k| rows.get(k as usize).is_none_or(|&row| row as usize >= len))
                .map(|&k| rows.get(k as usize).map_or(usize::MAX, |&row| row as usize)),
            // A maximum vectorises where a search for the first row past the end does not.
            None => Some(rows.iter().fold(0, |top, &row| top.max(row)) as usize)
                .filter(|&top| !rows.is_empty() && top >= len),
        };
        if let Some(row) = past {
            return Err(StoreError::RowOutOfRange {
                component: self.component.to_owned(),
                row,
            }
            .into());
        }
        let (recorded, visited) = match selection {
            Some(selected) => (
                self.update_indexes::<false, _>(
                    |k| rows[k],
                    selected.iter().map(|&k| k as usize),
                    &mut f,
                ),
                selected.len(),
            ),
            // Before this writer's first write to the column, rows that ascend strictly are
            // each visited once with nothing of its own to read back: every current value is
            // the established one.
            None if self.log.len() == 0 && rows.windows(2).all(|pair| pair[0] < pair[1]) => (
                self.update_indexes::<true, _>(|k| rows[k], 0..rows.len(), &mut f),
                rows.len(),
            ),
            None => (
                self.update_indexes::<false, _>(|k| rows[k], 0..rows.len(), &mut f),
                rows.len(),
            ),
        };
        *self.reads += visited as u64;
        Ok(recorded)
    }

    /// [`OverlayColumn::update_rows`] over the rows `start..start + len` (a query's term whose
    /// rows follow one another, which the query knows without looking at them): `f(k,
    /// current)` for row `start + k`.
    ///
    /// # Errors
    ///
    /// [`StoreError::RowOutOfRange`](strata_component_store::StoreError::RowOutOfRange) (as
    /// [`OverlayError::Store`]) when the rows reach past the set's, found before anything is
    /// recorded.
    pub fn update_run<F>(
        &mut self,
        start: usize,
        len: usize,
        mut f: F,
    ) -> Result<usize, OverlayError>
    where
        F: FnMut(usize, &T) -> Option<T>,
    {
        let rows = self.holders.ids.len().min(self.established.len());
        let end = start.checked_add(len).filter(|&end| end <= rows);
        let (Some(_), Ok(first)) = (end, u32::try_from(start)) else {
            return Err(StoreError::RowOutOfRange {
                component: self.component.to_owned(),
                row: start.saturating_add(len).saturating_sub(1).max(rows),
            }
            .into());
        };
        let recorded = if len == 0 {
            0
        } else {
            self.update_consecutive(first, len, &mut f)
        };
        *self.reads += len as u64;
        Ok(recorded)
    }

    /// The pass over rows `start..start + len` (within the set, `len` > 0). Before the
    /// writer's first write to the column, the values it records go straight onto the end of
    /// its log (a run) until the first row whose value does not change, and the rest through
    /// the general loop, which records the same entries.
    fn update_consecutive<F>(&mut self, start: u32, len: usize, f: &mut F) -> usize
    where
        F: FnMut(usize, &T) -> Option<T>,
    {
        let row_of = |k: usize| start + k as u32;
        let Some(values) = self.log.open_run(start) else {
            return self.update_indexes::<false, _>(row_of, 0..len, f);
        };
        let established = &self.established[start as usize..start as usize + len];
        // The run's values are written straight into the log's spare room, so no length is
        // stored and loaded again per value, and the log is touched once per value.
        values.reserve(len);
        let room = &mut values.spare_capacity_mut()[..len];
        // The values written so far: the first `written` slots of `room` hold values.
        let mut written = 0;
        // The first row whose value does not change, if one does not.
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            for (k, (slot, current)) in room.iter_mut().zip(established).enumerate() {
                match f(k, current) {
                    Some(next) if !next.identical(current) => {
                        slot.write(next);
                        written = k + 1;
                    }
                    _ => return Some(k),
                }
            }
            None
        }));
        #[expect(
            unsafe_code,
            reason = "a run's values are written into the log's spare room without a length store per value"
        )]
        // SAFETY: `values` was empty when the run opened (`Log::open_run`), `reserve` made room
        // for `len` values past it, and the loop above initialised the first `written` slots of
        // that room (each slot is written before `written` passes it); a panic of `f` leaves
        // `written` at the slots written before it.
        unsafe {
            values.set_len(written);
        }
        let unchanged = match outcome {
            Ok(unchanged) => unchanged,
            Err(panic) => {
                // The values written before the panic are the writer's writes, counted.
                *self.sequence += written as u64;
                self.log.close_run();
                resume_unwind(panic);
            }
        };
        let recorded = values.len();
        self.log.close_run();
        *self.sequence += recorded as u64;
        // The rows after the first unchanged one ascend and none has been written yet.
        let visited = unchanged.map_or(len, |k| k + 1);
        recorded + self.update_indexes::<true, _>(row_of, visited..len, f)
    }

    /// The loop of [`OverlayColumn::update_rows`] over indexes already checked. `FRESH`: the
    /// rows are strictly ascending and none is written by this writer yet, so the current value
    /// of each is the established one and its own writes need no lookup.
    #[inline(always)]
    fn update_indexes<const FRESH: bool, F>(
        &mut self,
        row_of: impl Fn(usize) -> u32,
        indexes: impl Iterator<Item = usize>,
        f: &mut F,
    ) -> usize
    where
        F: FnMut(usize, &T) -> Option<T>,
    {
        // The sequence kept in a register, not stored through its reference at every write;
        // stored when the loop ends, or when `f` panics, so the writes before the panic count.
        let first = *self.sequence;
        let mut sequence = Counted {
            to: &mut *self.sequence,
            now: first,
        };
        for k in indexes {
            let row = row_of(k);
            let next = {
                let own = if FRESH {
                    None
                } else {
                    self.log.get(self.index, row)
                };
                let current = own.unwrap_or(&self.established[row as usize]);
                match f(k, current) {
                    Some(next) if !next.identical(current) => next,
                    _ => continue,
                }
            };
            sequence.now += 1;
            self.log.record(
                self.index,
                self.spare,
                self.holders,
                row,
                next,
                sequence.now,
            );
        }
        (sequence.now - first) as usize
    }

    /// The value at `row` as this writer sees it: its own latest write, or the established
    /// value.
    pub fn get(&mut self, row: usize) -> Option<&T> {
        *self.reads += 1;
        let key = u32::try_from(row).ok()?;
        match self.log.get(self.index, key) {
            Some(value) => Some(value),
            None => self.established.get(row),
        }
    }

    /// This writer's latest write at `row`, if it made one.
    pub fn written(&self, row: usize) -> Option<&T> {
        self.log.get(self.index, u32::try_from(row).ok()?)
    }
}

/// A writer's sequence counted in a local, stored back into the writer's when dropped: at the
/// end of a loop, or while a function the loop called unwinds.
struct Counted<'s> {
    to: &'s mut u64,
    now: u64,
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        *self.to = self.now;
    }
}

/// One column of a finished writer's writes.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct WrittenColumn {
    pub(crate) component: ComponentId,
    pub(crate) field: FieldId,
    /// The allocation of the definition `field` was resolved against: the commit refuses the
    /// column's writes when the store's definition is another one.
    pub(crate) allocation: u64,
    /// The rows the log's rows are rows of.
    pub(crate) rows: Rows,
    pub(crate) log: ColumnLog,
}

/// A finished writer's writes: per column, the latest value of each row written.
#[derive(Clone, Debug, PartialEq)]
pub struct WriteSet {
    pub(crate) rank: WriterRank,
    pub(crate) columns: Vec<WrittenColumn>,
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
        self.columns.iter().map(|c| c.log.len()).sum()
    }

    /// Whether the set writes nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
