//! Copying rows to new instances, for clone and graft.
//!
//! Invariant: a copy rewrites every reference in the copied values (typed rows and orphan
//! records alike) through the caller's map before storing them, so the reverse index sees the
//! final targets; sources are never modified.

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
    /// of rows copied. Refused, changing nothing, when a copy already holds one of the
    /// components or its class is not allowed.
    pub fn copy_rows(
        &mut self,
        pairs: &[CopyPair],
        mut remap: impl FnMut(InstanceId) -> Option<InstanceId>,
    ) -> Result<usize, StoreError> {
        let components: Vec<ComponentId> = self.components().map(|s| s.id()).collect();
        let mut planned: Vec<(CopyPair, ComponentId, Vec<Value>)> = Vec::new();
        for pair in pairs {
            for &component in &components {
                let set = self.set(component)?;
                let Some(row) = set.row_of(pair.source) else {
                    continue;
                };
                if set.contains(pair.copy) {
                    return Err(StoreError::AlreadyPresent {
                        id: pair.copy.id,
                        component,
                    });
                }
                if !set.def().allows_class(pair.class) {
                    return Err(StoreError::ClassNotAllowed {
                        component: set.def().name().to_owned(),
                        class: pair.class,
                    });
                }
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
            let fields = values
                .into_iter()
                .enumerate()
                .map(|(i, v)| (crate::def::FieldId(i as u16), v));
            self.add(pair.copy, pair.class, component, fields)?;
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
