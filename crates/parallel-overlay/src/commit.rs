//! Committing writers' overlays: one deterministic order, stale-row fallback, refusals and
//! conflicts.
//!
//! Invariant: write sets apply in (tier, rank, writer id) order, and within a set each column's
//! entries in sequence order, so the store that results depends only on the write sets, never
//! on which thread ran which writer or which finished first. A writer holds one entry per
//! (component, row, field), so writes to different fields are independent: the commit applies
//! column by column (columns in the order the first writer in commit order wrote them), each
//! column's writers in commit order. A column recorded against a definition the store has since
//! replaced (another allocation) is refused entry by entry and writes nothing, since its field id
//! may now name another field. While the store and the set's structure are the ones a log was
//! recorded against, every logged row still holds its instance and is written at its row;
//! otherwise a write whose row no longer holds its instance is applied through the instance's
//! present row, or refused if the instance no longer holds the component. Every write goes
//! through the store's own write paths, so equal values change nothing and ticks, dirty bits,
//! change logs and events update as for any write: a scalar column whose writers' rows ascend in
//! their sequence order and lie apart from one another's, all still in place, is written in one
//! parallel pass of the store's `ParWriter` (each writer's rows a piece, pieces in commit order);
//! otherwise each stretch of a writer's entries goes through a typed column writer, and
//! references, composites and refused values through the checked single-field setter.

use std::fmt;
use std::sync::Arc;

use hashbrown::HashMap;
use rayon::prelude::*;
use strata_arena::InstanceId;
use strata_component_store::{
    ChunkRunner, ComponentId, FieldId, InstanceRef, Piece, Scalar, Store, StoreError, Value,
};

use crate::log::{ColumnLog, Log, Logged};
use crate::overlay::{Overlay, SYSTEM_TIER, WriteSet, WriterRank, WrittenColumn};
use crate::spare::Spare;

/// Whether the schedule orders two writers (so a conflict between them is intended). A
/// scheduler's reachability test on system ids fits through [`SystemOrder`]; any closure over
/// two `WriterRank`s is an oracle too.
pub trait OrderOracle {
    /// Whether `a` and `b` have a declared ordering (in either direction).
    fn ordered(&self, a: WriterRank, b: WriterRank) -> bool;
}

impl<F: Fn(WriterRank, WriterRank) -> bool> OrderOracle for F {
    fn ordered(&self, a: WriterRank, b: WriterRank) -> bool {
        self(a, b)
    }
}

/// An oracle over system ids, such as `strata_scheduler::Plan::order_oracle()`: it is asked
/// only when both writers are systems (`SYSTEM_TIER`), since a group writer's id is an
/// instance id that a schedule does not know (and might mistake for a system's); a conflict
/// involving a group is never declared by the schedule.
#[derive(Clone, Copy, Debug)]
pub struct SystemOrder<F>(pub F);

impl<F: Fn(u64, u64) -> bool> OrderOracle for SystemOrder<F> {
    fn ordered(&self, a: WriterRank, b: WriterRank) -> bool {
        a.tier == SYSTEM_TIER && b.tier == SYSTEM_TIER && (self.0)(a.id, b.id)
    }
}

/// An oracle that knows no ordering at all.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoOrder;

impl OrderOracle for NoOrder {
    fn ordered(&self, _: WriterRank, _: WriterRank) -> bool {
        false
    }
}

/// Two writers wrote one field of one instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The component.
    pub component: ComponentId,
    /// The field.
    pub field: FieldId,
    /// The component's name, as defined at the commit.
    pub component_name: Arc<str>,
    /// The field's name, as defined at the commit.
    pub field_name: Arc<str>,
    /// The instance.
    pub instance: InstanceId,
    /// The writer whose value was overwritten (earlier in commit order).
    pub first: WriterRank,
    /// The writer whose value remained (later in commit order).
    pub second: WriterRank,
    /// Whether the schedule declares an order between the two writers.
    pub ordered: bool,
}

/// A write that could not be applied.
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    /// The writer.
    pub writer: WriterRank,
    /// The instance written.
    pub instance: InstanceId,
    /// The component.
    pub component: ComponentId,
    /// The field.
    pub field: FieldId,
    /// The component's name, as defined at the commit (`?` when it is not installed).
    pub component_name: Arc<str>,
    /// The field's name, as defined at the commit (`?` when the definition has none there).
    pub field_name: Arc<str>,
    /// Why.
    pub error: StoreError,
}

/// What a commit did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CommitReport {
    /// Write sets committed.
    pub writers: usize,
    /// Writes that changed a field.
    pub applied: usize,
    /// Writes of a value equal to the stored one (no change, no tick).
    pub unchanged: usize,
    /// Writes whose row had moved, applied through the instance's present row.
    pub relocated: usize,
    /// Writes that could not be applied.
    pub refusals: Vec<Refusal>,
    /// Fields written by more than one writer, in commit order.
    pub conflicts: Vec<Conflict>,
}

impl fmt::Display for CommitReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} writers: {} applied, {} unchanged, {} relocated, {} refused",
            self.writers,
            self.applied,
            self.unchanged,
            self.relocated,
            self.refusals.len()
        )?;
        for c in &self.conflicts {
            writeln!(
                f,
                "conflict on {}.{} of {}: {} then {} ({})",
                c.component_name,
                c.field_name,
                c.instance,
                c.first,
                c.second,
                if c.ordered {
                    "ordered by the schedule"
                } else {
                    "NOT ordered by the schedule"
                }
            )?;
        }
        for r in &self.refusals {
            writeln!(
                f,
                "refused {}.{} of {} from {}: {}",
                r.component_name, r.field_name, r.instance, r.writer, r.error
            )?;
        }
        Ok(())
    }
}

/// Applies the write sets to the store in commit order and reports what happened.
///
/// The commit sorts the sets by [`WriterRank`] (tier, rank, id) itself, so the order they arrive
/// in (the order writers finished, or any other) does not change the result. A rank names one
/// writer: two sets under one rank have no order between them and apply in arrival order.
/// Columns whose writers' rows lie apart are written in one parallel pass on the current rayon
/// pool (call it inside `ThreadPool::install` to choose one); the result does not depend on the
/// pool.
pub fn commit(store: &mut Store, sets: Vec<WriteSet>, oracle: &impl OrderOracle) -> CommitReport {
    commit_on(store, sets, oracle, None, None)
}

/// [`commit`], handing each applied log's memory to `spare` for the next overlays.
pub fn commit_with_spare(
    store: &mut Store,
    sets: Vec<WriteSet>,
    oracle: &impl OrderOracle,
    spare: &Spare,
) -> CommitReport {
    commit_on(store, sets, oracle, Some(spare), None)
}

/// Lends `store` to `record`, which records writers' overlays over it (on any threads) and
/// returns them with anything else it made, then commits what they recorded as
/// [`commit_with_spare`] does, on `pool` when given (as inside its `ThreadPool::install`).
/// `with` is lent beside the store, for as long as the store is (so `record` may keep
/// references from it in what it records, as a wave keeps the hierarchy it reads).
///
/// Nothing can change the store between the recording and the commit, so an overlay over this
/// store is finished without a copy of the instances its rows hold, which
/// [`Overlay::finish`] makes for a commit that might meet moved rows or another store; an
/// overlay over any other store is finished with them, as by [`Overlay::finish`].
pub fn record_and_commit<C: ?Sized, T>(
    store: &mut Store,
    with: &C,
    oracle: &(impl OrderOracle + Sync),
    spare: &Spare,
    pool: Option<&rayon::ThreadPool>,
    record: impl for<'s> FnOnce(&'s Store, &'s C) -> (Vec<Overlay<'s>>, T),
) -> (CommitReport, T) {
    let lent: *const Store = store;
    let (overlays, made) = record(store, with);
    let sets: Vec<WriteSet> = overlays
        .into_iter()
        .map(|overlay| {
            if std::ptr::eq(overlay.store(), lent) {
                overlay.finish_in_place()
            } else {
                overlay.finish()
            }
        })
        .collect();
    let report = match pool {
        // Nothing to commit: the report of an empty commit, without waking the pool.
        _ if sets.is_empty() => CommitReport::default(),
        Some(pool) => pool.install(|| commit_with_spare(store, sets, oracle, spare)),
        None => commit_with_spare(store, sets, oracle, spare),
    };
    (report, made)
}

/// The commit, handing logs to `spare` when given, its parallel column passes on `pool` (the
/// current rayon pool when `None`).
pub(crate) fn commit_on(
    store: &mut Store,
    mut sets: Vec<WriteSet>,
    oracle: &impl OrderOracle,
    spare: Option<&Spare>,
    pool: Option<&rayon::ThreadPool>,
) -> CommitReport {
    let _commit = tracing::debug_span!("overlay_commit", writers = sets.len()).entered();
    sets.sort_by_key(|s| s.rank);
    let mut report = CommitReport {
        writers: sets.len(),
        ..CommitReport::default()
    };
    report.conflicts = conflicts(store, &sets, oracle);
    let runner = Rayon(pool);
    for group in by_column(sets) {
        apply_column(store, &mut report, group, spare, &runner);
    }
    for conflict in report.conflicts.iter().filter(|c| !c.ordered) {
        tracing::debug!(
            first = %conflict.first,
            second = %conflict.second,
            instance = ?conflict.instance,
            "two writers the schedule does not order wrote one field"
        );
    }
    if !report.refusals.is_empty() {
        tracing::debug!(
            refused = report.refusals.len(),
            "overlay writes refused at commit"
        );
    }
    report
}

/// The columns of write sets already in commit order, grouped by (component, field): groups in
/// the order the first writer in commit order wrote them, each group's writers in commit order.
fn by_column(sets: Vec<WriteSet>) -> Vec<Vec<(WriterRank, WrittenColumn)>> {
    let mut groups: Vec<Vec<(WriterRank, WrittenColumn)>> = Vec::new();
    let mut group_of: HashMap<(ComponentId, FieldId), usize> = HashMap::new();
    for set in sets {
        let writer = set.rank;
        for column in set.columns {
            let key = (column.component, column.field);
            let at = *group_of.entry(key).or_insert_with(|| {
                groups.push(Vec::new());
                groups.len() - 1
            });
            groups[at].push((writer, column));
        }
    }
    groups
}

/// Applies every writer's log of one column, in commit order, and hands the logs to `spare`.
fn apply_column(
    store: &mut Store,
    report: &mut CommitReport,
    group: Vec<(WriterRank, WrittenColumn)>,
    spare: Option<&Spare>,
    runner: &Rayon<'_>,
) {
    let mut current = Vec::with_capacity(group.len());
    for (writer, column) in group {
        match current_definition(store, column.component, column.allocation) {
            Ok(()) => current.push((writer, column)),
            Err(error) => {
                let (component_name, field_name) = names(store, column.component, column.field);
                column.log.for_each_in_order(|_, instance| {
                    report.refusals.push(Refusal {
                        writer,
                        instance: instance
                            .expect("a set recorded against another definition was finished by Overlay::finish, which keeps its instances")
                            .id,
                        component: column.component,
                        field: column.field,
                        component_name: component_name.clone(),
                        field_name: field_name.clone(),
                        error: error.clone(),
                    });
                });
                if let Some(spare) = spare {
                    spare.give_log(column.log);
                }
            }
        }
    }
    let applied_together = match current.first().map(|(_, c)| &c.log) {
        Some(ColumnLog::Number(_)) => together::<f64>(store, report, &current, runner),
        Some(ColumnLog::Integer(_)) => together::<i64>(store, report, &current, runner),
        Some(ColumnLog::Boolean(_)) => together::<bool>(store, report, &current, runner),
        Some(ColumnLog::Text(_)) => {
            together::<std::sync::Arc<str>>(store, report, &current, runner)
        }
        Some(ColumnLog::Vector(_)) => {
            together::<strata_arena::Vec3>(store, report, &current, runner)
        }
        Some(ColumnLog::Transform(_)) => {
            together::<strata_arena::Transform>(store, report, &current, runner)
        }
        // Enum indexes may be refused one by one; references and composites keep indexes.
        Some(ColumnLog::Enum(_) | ColumnLog::Value(_)) | None => false,
    };
    for (writer, column) in current {
        if !applied_together {
            let unmoved = column.rows.hold(store, column.component);
            let mut apply = Apply {
                store: &mut *store,
                report: &mut *report,
                writer,
                component: column.component,
                field: column.field,
                unmoved,
            };
            let mut log = column.log;
            match &mut log {
                ColumnLog::Number(log) => apply.typed(log),
                ColumnLog::Integer(log) => apply.typed(log),
                ColumnLog::Boolean(log) => apply.typed(log),
                ColumnLog::Text(log) => apply.typed(log),
                ColumnLog::Enum(log) => apply.typed(log),
                ColumnLog::Vector(log) => apply.typed(log),
                ColumnLog::Transform(log) => apply.typed(log),
                ColumnLog::Value(log) => apply.values(log),
            }
            if let Some(spare) = spare {
                spare.give_log(log);
            }
        } else if let Some(spare) = spare {
            spare.give_log(column.log);
        }
    }
}

/// Runs the pieces of a parallel column pass on a rayon pool (the current one when `None`).
struct Rayon<'p>(Option<&'p rayon::ThreadPool>);

impl ChunkRunner for Rayon<'_> {
    fn run<I, O, F>(&self, inputs: Vec<I>, f: &F) -> Vec<O>
    where
        I: Send,
        O: Send,
        F: Fn(I) -> O + Sync,
    {
        if inputs.len() <= 1 {
            return inputs.into_iter().map(f).collect();
        }
        let all = || inputs.into_par_iter().map(f).collect();
        match self.0 {
            Some(pool) => pool.install(all),
            None => all(),
        }
    }
}

/// Rows per piece of a parallel column pass at most, when a writer's rows are cut further so
/// that one writer's log can spread over several threads.
const PIECE_ROWS: usize = 1 << 16;

/// Writes every writer's log of one scalar column in one parallel pass of the store's
/// `ParWriter`, when that gives what applying them one after another would: every log's rows
/// still hold their instances, ascend in its sequence order, and lie apart from every other
/// log's rows. Each log is a piece (cut into pieces of at most [`PIECE_ROWS`] rows), pieces in
/// commit order, so the change log and events record the writes in commit order.
/// Returns whether it did; otherwise nothing was written.
fn together<T: Logged + Sync>(
    store: &mut Store,
    report: &mut CommitReport,
    columns: &[(WriterRank, WrittenColumn)],
    runner: &Rayon<'_>,
) -> bool {
    let Some((_, first)) = columns.first() else {
        return false;
    };
    let (component, field) = (first.component, first.field);
    let mut logs: Vec<&Log<T>> = Vec::with_capacity(columns.len());
    let mut spans: Vec<(u32, u32)> = Vec::with_capacity(columns.len());
    for (_, column) in columns {
        let Some(log) = T::log_ref(&column.log) else {
            return false;
        };
        if !column.rows.hold(store, component) || !log.ascending() {
            return false;
        }
        if let Some(span) = column.log.row_span() {
            spans.push(span);
        }
        logs.push(log);
    }
    spans.sort_unstable();
    if spans.windows(2).any(|pair| pair[0].1 >= pair[1].0) {
        return false;
    }
    let mut pieces: Vec<Piece<'_>> = Vec::new();
    let mut sources: Vec<&[T]> = Vec::new();
    for log in &logs {
        let values = log.values.as_slice();
        for (at, chunk) in values.chunks(PIECE_ROWS).enumerate() {
            let from = at * PIECE_ROWS;
            pieces.push(match log.run_start() {
                Some(start) => {
                    let start = start as usize + from;
                    Piece::Rows(start..start + chunk.len())
                }
                None => Piece::Listed(&log.rows[from..from + chunk.len()]),
            });
            sources.push(chunk);
        }
    }
    let total: usize = sources.iter().map(|s| s.len()).sum();
    let Ok(mut writer) = store.par_writer::<T>(component, field) else {
        return false;
    };
    let sources = &sources;
    match writer.copy_from(runner, &pieces, sources) {
        Ok(changed) => {
            report.applied += changed;
            report.unchanged += total - changed;
            true
        }
        // The pieces were checked above and the values when recorded, so the store refuses
        // nothing here; if it did, nothing was written and the writers go one by one.
        Err(_) => false,
    }
}

/// A component's and a field's names in the store's present definition, for reports (`?` for
/// what it does not define).
fn names(store: &Store, component: ComponentId, field: FieldId) -> (Arc<str>, Arc<str>) {
    match store.def(component) {
        Ok(def) => (
            Arc::from(def.name()),
            def.field(field)
                .map_or_else(|| Arc::from("?"), |f| f.name.clone()),
        ),
        Err(_) => (Arc::from("?"), Arc::from("?")),
    }
}

/// Whether the store's definition of `component` is still the one of `allocation`: the
/// store's own error when it has none, `StaleDefinition` when it was replaced.
fn current_definition(
    store: &Store,
    component: ComponentId,
    allocation: u64,
) -> Result<(), StoreError> {
    let def = store.def(component)?;
    if def.allocation() == allocation {
        Ok(())
    } else {
        Err(StoreError::StaleDefinition {
            component,
            component_name: Arc::from(def.name()),
        })
    }
}

/// One writer's log of one column, being applied.
struct Apply<'a> {
    store: &'a mut Store,
    report: &'a mut CommitReport,
    writer: WriterRank,
    component: ComponentId,
    field: FieldId,
    /// Whether the store and the set's structure are the ones the log was recorded against, so
    /// every logged row still holds the instance it held then.
    unmoved: bool,
}

impl Apply<'_> {
    /// Applies a scalar column's entries in sequence order: each stretch of entries whose rows
    /// still hold their instances in one pass of a typed column writer, each stale entry
    /// through [`Apply::one`] between stretches.
    fn typed<T: Scalar>(&mut self, log: &Log<T>) {
        let order = log.order();
        let mut next = 0;
        while next < order.len() {
            // Without a column writer (the column is gone or changed type since the writer
            // ran), every entry goes to the checked setter below, which says why.
            if let Ok(mut column) = self.store.column_writer::<T>(self.component, self.field) {
                let start = next;
                while next < order.len() {
                    let p = order.at(next);
                    let row = log.row(p) as usize;
                    let holds = self.unmoved
                        || log
                            .instance(p)
                            .is_some_and(|i| column.instance_at(row) == Some(i.id));
                    // A value the field cannot hold goes to the checked setter, which refuses it.
                    if !holds || column.check(&log.values[p]).is_err() {
                        break;
                    }
                    next += 1;
                }
                let changed = column
                    .update_indexed(
                        next - start,
                        |k| (log.row(order.at(start + k)) as usize, k),
                        |_, k| log.values[order.at(start + k)].clone(),
                    )
                    .expect("every value of the stretch passed the writer's check");
                self.report.applied += changed;
                self.report.unchanged += next - start - changed;
            }
            if next < order.len() {
                let p = order.at(next);
                let instance = self.instance(log.instance(p), log.row(p));
                self.one(log.row(p), instance, log.values[p].clone().into_value());
                next += 1;
            }
        }
    }

    /// Applies a dynamic column's entries (references, composites) one by one, in sequence
    /// order.
    fn values(&mut self, log: &mut Log<Value>) {
        let order = log.order();
        let mut values: Vec<Option<Value>> = std::mem::take(&mut log.values)
            .into_iter()
            .map(Some)
            .collect();
        for k in 0..order.len() {
            let p = order.at(k);
            if let Some(value) = values[p].take() {
                let instance = self.instance(log.instance(p), log.row(p));
                self.one(log.row(p), instance, value);
            }
        }
    }

    /// The instance a logged row held when written: kept by the log, or, while the rows are the
    /// ones the log was recorded against, the row's holder now.
    fn instance(&self, kept: Option<InstanceRef>, row: u32) -> InstanceRef {
        if let Some(instance) = kept {
            return instance;
        }
        let set = self.store.set(self.component).ok().filter(|_| self.unmoved);
        set.and_then(|set| {
            let row = row as usize;
            Some(InstanceRef::new(*set.ids().get(row)?, *set.slots().get(row)?))
        })
        .expect("a log without its instances was recorded by run_parallel and is committed by it to the same store, whose rows cannot move in between")
    }

    /// Applies one write through the store's checked path: at its row while the row still holds
    /// the instance, through the instance otherwise.
    fn one(&mut self, row: u32, instance: InstanceRef, value: Value) {
        let (component, field) = (self.component, self.field);
        let row = row as usize;
        let current = self
            .store
            .set(component)
            .ok()
            .and_then(|s| s.ids().get(row).copied());
        let relocated = current != Some(instance.id);
        let outcome = if relocated {
            self.store.write_value(instance, component, field, value)
        } else {
            self.store.write_value_at(component, row, field, value)
        };
        match outcome {
            Ok(changed) => {
                self.report.relocated += usize::from(relocated);
                if changed {
                    self.report.applied += 1;
                } else {
                    self.report.unchanged += 1;
                }
            }
            Err(error) => {
                let (component_name, field_name) = names(self.store, component, field);
                self.report.refusals.push(Refusal {
                    writer: self.writer,
                    instance: instance.id,
                    component,
                    field,
                    component_name,
                    field_name,
                    error,
                });
            }
        }
    }
}

/// Fields written by more than one writer. Columns only one writer touched are skipped
/// without looking at their rows.
fn conflicts(store: &Store, sets: &[WriteSet], oracle: &impl OrderOracle) -> Vec<Conflict> {
    let mut writers_per_column: HashMap<(ComponentId, FieldId), Vec<(usize, usize)>> =
        HashMap::new();
    for (w, set) in sets.iter().enumerate() {
        for (c, column) in set.columns.iter().enumerate() {
            if column.log.len() > 0 {
                writers_per_column
                    .entry((column.component, column.field))
                    .or_default()
                    .push((w, c));
            }
        }
    }
    let mut contested: Vec<_> = writers_per_column
        .into_iter()
        .filter(|(_, writers)| writers.len() > 1)
        .collect();
    contested.sort_by_key(|((c, f), _)| (*c, *f));
    let mut found = Vec::new();
    for ((component, field), writers) in contested {
        // Writers over disjoint row spans (say, each its own range of a query) cannot conflict.
        let mut spans: Vec<(u32, u32)> = writers
            .iter()
            .filter_map(|&(w, c)| sets[w].columns[c].log.row_span())
            .collect();
        spans.sort_unstable();
        if spans.windows(2).all(|pair| pair[0].1 < pair[1].0) {
            continue;
        }
        // Rows do not move while writers run, so the last writer per row is a plain array.
        let rows = spans
            .iter()
            .map(|&(_, max)| max as usize + 1)
            .max()
            .unwrap_or(0);
        let mut owner = vec![usize::MAX; rows];
        for &(w, c) in &writers {
            let column = &sets[w].columns[c];
            // A log that kept no instances has its rows as recorded (see `Apply::instance`).
            let holders = store
                .set(component)
                .ok()
                .filter(|_| column.rows.hold(store, component));
            let (component_name, field_name) = names(store, component, field);
            column.log.for_each_in_order(|row, instance| {
                let slot = &mut owner[row as usize];
                if *slot != usize::MAX {
                    let (first, second) = (sets[*slot].rank, sets[w].rank);
                    let instance = instance
                        .map(|i| i.id)
                        .or_else(|| holders.and_then(|set| set.ids().get(row as usize).copied()))
                        .expect("a log without its instances was recorded by run_parallel and is committed by it to the same store, whose rows cannot move in between");
                    found.push(Conflict {
                        component,
                        field,
                        component_name: component_name.clone(),
                        field_name: field_name.clone(),
                        instance,
                        first,
                        second,
                        ordered: oracle.ordered(first, second),
                    });
                }
                *slot = w;
            });
        }
    }
    found
}
