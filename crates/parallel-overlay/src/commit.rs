//! Committing writers' overlays: one deterministic order, stale-row fallback, refusals and
//! conflicts.
//!
//! Invariant: write sets apply in (tier, rank, writer id) order, and within a set each column's
//! entries in sequence order, so the store that results depends only on the write sets, never
//! on which thread ran which writer or which finished first. A writer holds one entry per
//! (component, row, field), so its writes to different fields are independent and apply column
//! by column. A column recorded against a definition the store has since replaced (another
//! allocation) is refused entry by entry and writes nothing, since its field id may now name
//! another field. A write whose row no longer holds its instance is applied through the
//! instance's present row, or refused if the instance no longer holds the component. Every write goes
//! through the store's own write paths (a typed column writer over each stretch of a scalar
//! column's entries, the checked single-field setter otherwise), so equal values change
//! nothing and ticks, dirty masks, change logs and events update as for any write.

use std::fmt;

use hashbrown::HashMap;
use strata_arena::InstanceId;
use strata_component_store::{ComponentId, FieldId, InstanceRef, Scalar, Store, StoreError, Value};

use crate::log::{ColumnLog, Log};
use crate::overlay::{SYSTEM_TIER, WriteSet, WriterRank};
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
                "conflict on {:?}.{:?} of {}: {} then {} ({})",
                c.component,
                c.field,
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
                "refused {:?}.{:?} of {} from {}: {}",
                r.component, r.field, r.instance, r.writer, r.error
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
pub fn commit(store: &mut Store, sets: Vec<WriteSet>, oracle: &impl OrderOracle) -> CommitReport {
    commit_inner(store, sets, oracle, None)
}

/// [`commit`], handing each applied log's memory to `spare` for the next overlays.
pub fn commit_with_spare(
    store: &mut Store,
    sets: Vec<WriteSet>,
    oracle: &impl OrderOracle,
    spare: &Spare,
) -> CommitReport {
    commit_inner(store, sets, oracle, Some(spare))
}

fn commit_inner(
    store: &mut Store,
    mut sets: Vec<WriteSet>,
    oracle: &impl OrderOracle,
    spare: Option<&Spare>,
) -> CommitReport {
    let _commit = tracing::debug_span!("overlay_commit", writers = sets.len()).entered();
    sets.sort_by_key(|s| s.rank);
    let mut report = CommitReport {
        writers: sets.len(),
        ..CommitReport::default()
    };
    report.conflicts = conflicts(&sets, oracle);
    for set in sets {
        let writer = set.rank;
        for column in set.columns {
            if let Err(error) = current_definition(store, column.component, column.allocation) {
                column.log.for_each_in_order(|_, instance| {
                    report.refusals.push(Refusal {
                        writer,
                        instance: instance.id,
                        component: column.component,
                        field: column.field,
                        error: error.clone(),
                    });
                });
                if let Some(spare) = spare {
                    spare.give_log(column.log);
                }
                continue;
            }
            let mut apply = Apply {
                store: &mut *store,
                report: &mut report,
                writer,
                component: column.component,
                field: column.field,
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
        }
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

/// Whether the store's definition of `component` is still the one of `allocation`: the
/// store's own error when it has none, `StaleDefinition` when it was replaced.
fn current_definition(
    store: &Store,
    component: ComponentId,
    allocation: u64,
) -> Result<(), StoreError> {
    if store.def(component)?.allocation() == allocation {
        Ok(())
    } else {
        Err(StoreError::StaleDefinition(component))
    }
}

/// One writer's log of one column, being applied.
struct Apply<'a> {
    store: &'a mut Store,
    report: &'a mut CommitReport,
    writer: WriterRank,
    component: ComponentId,
    field: FieldId,
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
                    // A value the field cannot hold goes to the checked setter, which refuses it.
                    if column.instance_at(log.rows[p] as usize) != Some(log.instances[p].id)
                        || column.check(&log.values[p]).is_err()
                    {
                        break;
                    }
                    next += 1;
                }
                let changed = column
                    .update_indexed(
                        next - start,
                        |k| (log.rows[order.at(start + k)] as usize, k),
                        |_, k| log.values[order.at(start + k)].clone(),
                    )
                    .expect("every value of the stretch passed the writer's check");
                self.report.applied += changed;
                self.report.unchanged += next - start - changed;
            }
            if next < order.len() {
                let p = order.at(next);
                self.one(
                    log.rows[p],
                    log.instances[p],
                    log.values[p].clone().into_value(),
                );
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
                self.one(log.rows[p], log.instances[p], value);
            }
        }
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
            Err(error) => self.report.refusals.push(Refusal {
                writer: self.writer,
                instance: instance.id,
                component,
                field,
                error,
            }),
        }
    }
}

/// Fields written by more than one writer. Columns only one writer touched are skipped
/// without looking at their rows.
fn conflicts(sets: &[WriteSet], oracle: &impl OrderOracle) -> Vec<Conflict> {
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
            sets[w].columns[c].log.for_each_in_order(|row, instance| {
                let slot = &mut owner[row as usize];
                if *slot != usize::MAX {
                    let (first, second) = (sets[*slot].rank, sets[w].rank);
                    found.push(Conflict {
                        component,
                        field,
                        instance: instance.id,
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
