//! Copying rows to new instances, for clone and graft.
//!
//! Invariant: a copy rewrites every reference in the copied values (typed rows and orphan
//! records alike) through the caller's map before storing them, so the reverse index sees the
//! final targets; sources are never modified. Every pair is checked before the first row is
//! stored, so a refused copy changes nothing.

use hashbrown::HashSet;
use strata_arena::{ClassId, InstanceId};

use crate::def::ComponentId;
use crate::error::StoreError;
use crate::set::InstanceRef;
use crate::store::Store;
use crate::value::Value;

/// One instance to copy: its source, its copy, and the copy's class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyPair {
    /// The instance copied from.
    pub source: InstanceRef,
    /// The new instance.
    pub copy: InstanceRef,
    /// The new instance's class.
    pub class: ClassId,
}

impl Store {
    /// Copies every component row and orphan record of each source to its copy. `remap` gives
    /// each referenced instance's new target (the copy for instances inside the copied set, the
    /// old target or `None` for those outside, as the caller's policy says). Returns the number
    /// of rows copied. Every pair is checked before anything is stored.
    ///
    /// # Errors
    ///
    /// Refused, changing nothing, when two pairs name one copy slot
    /// ([`StoreError::DuplicateSlot`]), or a copy could not take one of the rows for any reason
    /// [`Store::add`] refuses.
    pub fn copy_rows(
        &mut self,
        pairs: &[CopyPair],
        mut remap: impl FnMut(InstanceId) -> Option<InstanceId>,
    ) -> Result<usize, StoreError> {
        let mut copies = HashSet::with_capacity(pairs.len());
        if let Some(pair) = pairs.iter().find(|p| !copies.insert(p.copy.slot)) {
            return Err(StoreError::DuplicateSlot(pair.copy.slot));
        }
        let components: Vec<ComponentId> = self.components().map(|s| s.id()).collect();
        let mut planned: Vec<(CopyPair, ComponentId, Vec<Value>)> = Vec::new();
        for pair in pairs {
            for &component in &components {
                let set = self.set(component)?;
                let Some(row) = set.row_of(pair.source) else {
                    continue;
                };
                self.check_add(set, pair.copy, pair.class, set.len() + pairs.len())?;
                let mut values: Vec<Value> = (0..set.def().fields().len())
                    .filter_map(|f| set.value(row, crate::def::FieldId(f as u16)))
                    .collect();
                for value in &mut values {
                    value.rewrite_references(&mut remap);
                }
                planned.push((*pair, component, values));
            }
        }
        let copied = planned.len();
        for (pair, component, values) in planned {
            // Checked above for the rows the sets will hold, and the copies are distinct
            // slots: stored without checking again.
            let (set, row, observers) =
                self.push_checked_row(pair.copy, component, Some(values))?;
            if observers.watches(component) {
                observers.added(component, set, row..=row);
            }
        }
        for pair in pairs {
            let records: Vec<_> = self.orphans().of(pair.source.id).to_vec();
            for mut record in records {
                for (_, value) in &mut record.fields {
                    value.rewrite_references(&mut remap);
                }
                self.add_orphan(pair.copy, record);
            }
        }
        Ok(copied)
    }
}
