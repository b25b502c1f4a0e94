//! Committing writers' overlays: one deterministic order, stale-row fallback, refusals and
//! conflicts.
//!
//! Invariant: writes apply in (tier, rank, writer id, sequence) order, so the store that results
//! depends only on the write sets, never on which thread ran which writer or which finished
//! first. A write whose row no longer holds its instance is applied through the instance's
//! present row, or refused if the instance no longer holds the component. Every write goes
//! through the store's own write path, so equal values change nothing and ticks, dirty masks,
//! change logs and events update as for any write.

use std::fmt;

use hashbrown::HashMap;
use strata_arena::InstanceId;
use strata_component_store::{ComponentId, FieldId, Store, StoreError};

use crate::overlay::{WriteSet, WriterRank};

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
    sets.sort_by_key(|s| s.rank);
    let mut report = CommitReport {
        writers: sets.len(),
        ..CommitReport::default()
    };
    report.conflicts = conflicts(&sets, oracle);
    for set in &sets {
        for entry in set.entries.iter().filter(|e| e.live) {
            let key = entry.key;
            let row = key.row as usize;
            let current = store
                .set(key.component)
                .ok()
                .and_then(|s| s.ids().get(row).copied());
            let outcome = if current == Some(entry.instance.id) {
                store.write_value_at(key.component, row, key.field, entry.value.clone())
            } else {
                report.relocated += 1;
                store.write_value(
                    entry.instance,
                    key.component,
                    key.field,
                    entry.value.clone(),
                )
            };
            match outcome {
                Ok(true) => report.applied += 1,
                Ok(false) => report.unchanged += 1,
                Err(error) => {
                    if current != Some(entry.instance.id) {
                        report.relocated -= 1;
                    }
                    report.refusals.push(Refusal {
                        writer: set.rank,
                        instance: entry.instance.id,
                        component: key.component,
                        field: key.field,
                        error,
                    });
                }
            }
        }
    }
    report
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
