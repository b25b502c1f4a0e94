//! Committing writers' overlays: one deterministic order, stale-row fallback, refusals and
//! conflicts.
//!
//! Invariant: writes apply in (tier, rank, writer id, sequence) order, so the store that results
//! depends only on the write sets, never on which thread ran which writer or which finished
//! first. A write whose row no longer holds its instance is applied through the instance's
//! present row, or refused if the instance no longer holds the component. Every write goes
//! through the store's own write paths (a typed column writer for each writer's run of writes to
//! one scalar column, the checked single-field setter otherwise), so equal values change
//! nothing and ticks, dirty masks, change logs and events update as for any write.

use std::fmt;

use std::iter::Peekable;
use std::sync::Arc;

use hashbrown::HashMap;
use strata_arena::{InstanceId, Transform, Vec3};
use strata_component_store::{ComponentId, FieldId, FieldType, Scalar, Store, StoreError};

use crate::overlay::{Entry, WriteSet, WriterRank};

/// Whether the schedule orders two writers (so a conflict between them is intended). The
/// scheduler's `is_ordered` fits through the blanket implementation for closures:
/// `&|a: WriterRank, b: WriterRank| schedule.is_ordered(a.id, b.id)`.
pub trait OrderOracle {
    /// Whether `a` and `b` have a declared ordering (in either direction).
    fn ordered(&self, a: WriterRank, b: WriterRank) -> bool;
}

impl<F: Fn(WriterRank, WriterRank) -> bool> OrderOracle for F {
    fn ordered(&self, a: WriterRank, b: WriterRank) -> bool {
        self(a, b)
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
pub fn commit(
    store: &mut Store,
    mut sets: Vec<WriteSet>,
    oracle: &impl OrderOracle,
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
        let mut live = set.entries.into_iter().filter(|e| e.live).peekable();
        while let Some(first) = live.peek() {
            let (component, field) = (first.key.component, first.key.field);
            let kind = store
                .def(component)
                .ok()
                .and_then(|def| def.field(field))
                .map(|f| ColumnKind::of(&f.ty));
            let mut run = Run {
                store: &mut *store,
                report: &mut report,
                writer,
                component,
                field,
            };
            match kind {
                Some(ColumnKind::Number) => run.typed::<f64>(&mut live),
                Some(ColumnKind::Integer) => run.typed::<i64>(&mut live),
                Some(ColumnKind::Boolean) => run.typed::<bool>(&mut live),
                Some(ColumnKind::Text) => run.typed::<Arc<str>>(&mut live),
                Some(ColumnKind::Enum) => run.typed::<u32>(&mut live),
                Some(ColumnKind::Vector) => run.typed::<Vec3>(&mut live),
                Some(ColumnKind::Transform) => run.typed::<Transform>(&mut live),
                Some(ColumnKind::Other) | None => {
                    if let Some(entry) = live.next() {
                        run.one(entry);
                    }
                }
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

/// The column shapes with a typed writer; the rest (references, whose writes keep the reverse
/// index, and composite values) apply one write at a time.
enum ColumnKind {
    Number,
    Integer,
    Boolean,
    Text,
    Enum,
    Vector,
    Transform,
    Other,
}

impl ColumnKind {
    fn of(ty: &FieldType) -> Self {
        match ty {
            FieldType::Number => Self::Number,
            FieldType::Integer => Self::Integer,
            FieldType::Boolean => Self::Boolean,
            FieldType::Text => Self::Text,
            FieldType::Enum(_) => Self::Enum,
            FieldType::Vector => Self::Vector,
            FieldType::Transform => Self::Transform,
            _ => Self::Other,
        }
    }
}

/// One writer's consecutive writes to one column, applied together.
struct Run<'a> {
    store: &'a mut Store,
    report: &'a mut CommitReport,
    writer: WriterRank,
    component: ComponentId,
    field: FieldId,
}

impl Run<'_> {
    /// Applies the run's leading writes through one typed column writer (one bound column, one
    /// tick), stopping at the first stale row, which goes through [`Run::one`].
    fn typed<T: Scalar>(&mut self, live: &mut Peekable<impl Iterator<Item = Entry>>) {
        let (component, field) = (self.component, self.field);
        let in_run = |e: &Entry| e.key.component == component && e.key.field == field;
        // Named now: the column writer holds the store until the run ends.
        let name = self
            .store
            .def(component)
            .map(|d| d.name().to_owned())
            .unwrap_or_default();
        let stale = {
            let Ok(mut column) = self.store.column_writer::<T>(component, field) else {
                if let Some(entry) = live.next() {
                    self.one(entry);
                }
                return;
            };
            let mut stale = None;
            while let Some(entry) = live.next_if(in_run) {
                let row = entry.key.row as usize;
                if column.instance_at(row) != Some(entry.instance.id) {
                    stale = Some(entry);
                    break;
                }
                let found = entry.value.kind_name();
                match T::from_value(entry.value) {
                    Some(value) => {
                        if column.write(row, value) {
                            self.report.applied += 1;
                        } else {
                            self.report.unchanged += 1;
                        }
                    }
                    None => self.report.refusals.push(Refusal {
                        writer: self.writer,
                        instance: entry.instance.id,
                        component,
                        field,
                        error: mismatch(name.clone(), field, found),
                    }),
                }
            }
            stale
        };
        if let Some(entry) = stale {
            self.one(entry);
        }
    }

    /// Applies one write through the store's checked path: at its row while the row still holds
    /// the instance, through the instance otherwise.
    fn one(&mut self, entry: Entry) {
        let key = entry.key;
        let row = key.row as usize;
        let current = self
            .store
            .set(key.component)
            .ok()
            .and_then(|s| s.ids().get(row).copied());
        let relocated = current != Some(entry.instance.id);
        let outcome = if relocated {
            self.store
                .write_value(entry.instance, key.component, key.field, entry.value)
        } else {
            self.store
                .write_value_at(key.component, row, key.field, entry.value)
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
                instance: entry.instance.id,
                component: key.component,
                field: key.field,
                error,
            }),
        }
    }
}

fn mismatch(component: String, field: FieldId, found: &'static str) -> StoreError {
    StoreError::TypeMismatch {
        component,
        field: format!("{field:?}"),
        expected: "the field's type".into(),
        found: found.to_owned(),
    }
}

/// Fields written by more than one writer. Columns only one writer touched are skipped
/// without looking at their rows.
fn conflicts(sets: &[WriteSet], oracle: &impl OrderOracle) -> Vec<Conflict> {
    let mut writers_per_column: HashMap<(ComponentId, FieldId), Vec<usize>> = HashMap::new();
    for (w, set) in sets.iter().enumerate() {
        for entry in set.entries.iter().filter(|e| e.live) {
            let column = writers_per_column
                .entry((entry.key.component, entry.key.field))
                .or_default();
            if column.last() != Some(&w) {
                column.push(w);
            }
        }
    }
    let mut found = Vec::new();
    let mut contested: Vec<_> = writers_per_column
        .into_iter()
        .filter(|(_, writers)| writers.len() > 1)
        .collect();
    contested.sort_by_key(|((c, f), _)| (*c, *f));
    for ((component, field), writers) in contested {
        // Rows do not move while writers run, so the last writer per row is a plain array.
        let rows = writers
            .iter()
            .flat_map(|w| sets[*w].entries.iter())
            .filter(|e| e.live && e.key.component == component && e.key.field == field)
            .map(|e| e.key.row as usize + 1)
            .max()
            .unwrap_or(0);
        let mut owner = vec![usize::MAX; rows];
        for w in writers {
            for entry in sets[w]
                .entries
                .iter()
                .filter(|e| e.live && e.key.component == component && e.key.field == field)
            {
                let slot = &mut owner[entry.key.row as usize];
                if *slot != usize::MAX {
                    let (first, second) = (sets[*slot].rank, sets[w].rank);
                    found.push(Conflict {
                        component,
                        field,
                        instance: entry.instance.id,
                        first,
                        second,
                        ordered: oracle.ordered(first, second),
                    });
                }
                *slot = w;
            }
        }
    }
    found
}
