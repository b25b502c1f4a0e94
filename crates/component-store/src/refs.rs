//! The reverse reference index of one set: target → the references held to it.
//!
//! Invariant: for every target, the holders list counts each (holder, holder slot, field)
//! exactly as many times as that field of that holder's row references the target, and keeps
//! them sorted by holder, then slot, then field. Small lists are sorted vectors; a list that
//! grows past `PROMOTE` entries becomes an ordered counted map, so adding or removing one
//! reference costs O(log n) however popular the target is. Either way readers get the entries
//! in that order without sorting, so policy order is deterministic, and taking a target's
//! entries (on its destruction) hashes nothing per holder.

use std::collections::BTreeMap;

use hashbrown::HashMap;
use strata_arena::InstanceId;

use crate::set::RefEntry;

/// Above this many references, a target's holders are kept in an ordered counted map. Below
/// it, an insert or removal moves at most 3 KiB of entries, about what a map insert costs in
/// node searches and allocations, and a destruction takes the list as it is.
const PROMOTE: usize = 128;

#[derive(Clone, Debug)]
enum Holders {
    /// Sorted; a reference held twice is there twice.
    Few(Vec<RefEntry>),
    Many {
        counts: BTreeMap<RefEntry, u32>,
        total: usize,
    },
}

/// Target → references held to it.
#[derive(Clone, Debug, Default)]
pub(crate) struct RefIndex {
    targets: HashMap<InstanceId, Holders>,
}

impl RefIndex {
    pub(crate) fn insert(&mut self, target: InstanceId, entry: RefEntry) {
        let holders = self
            .targets
            .entry(target)
            .or_insert_with(|| Holders::Few(Vec::new()));
        match holders {
            Holders::Few(entries) => {
                let at = entries.partition_point(|e| *e <= entry);
                entries.insert(at, entry);
                if entries.len() > PROMOTE {
                    let mut counts = BTreeMap::new();
                    for e in entries.drain(..) {
                        *counts.entry(e).or_insert(0) += 1;
                    }
                    *holders = Holders::Many {
                        counts,
                        total: PROMOTE + 1,
                    };
                }
            }
            Holders::Many { counts, total } => {
                *counts.entry(entry).or_insert(0) += 1;
                *total += 1;
            }
        }
    }

    pub(crate) fn remove(&mut self, target: InstanceId, entry: RefEntry) {
        let Some(holders) = self.targets.get_mut(&target) else {
            return;
        };
        let now_empty = match holders {
            Holders::Few(entries) => {
                if let Ok(i) = entries.binary_search(&entry) {
                    entries.remove(i);
                }
                entries.is_empty()
            }
            Holders::Many { counts, total } => {
                if let Some(count) = counts.get_mut(&entry) {
                    *count -= 1;
                    *total -= 1;
                    if *count == 0 {
                        counts.remove(&entry);
                    }
                }
                *total == 0
            }
        };
        if now_empty {
            self.targets.remove(&target);
        }
    }

    /// The references to `target`, one entry per reference, sorted by holder then field.
    pub(crate) fn entries(&self, target: InstanceId) -> Vec<RefEntry> {
        match self.targets.get(&target) {
            None => Vec::new(),
            Some(Holders::Few(entries)) => entries.clone(),
            Some(Holders::Many { counts, total }) => expand(counts, *total),
        }
    }

    /// Removes and returns every reference to `target`, sorted by holder then field.
    pub(crate) fn take(&mut self, target: InstanceId) -> Vec<RefEntry> {
        match self.targets.remove(&target) {
            None => Vec::new(),
            Some(Holders::Few(entries)) => entries,
            // Read in place, then dropped whole: cheaper than taking the map apart entry by
            // entry.
            Some(Holders::Many { counts, total }) => expand(&counts, total),
        }
    }

    /// Whether any reference to `target` is held.
    pub(crate) fn contains(&self, target: InstanceId) -> bool {
        self.targets.contains_key(&target)
    }

    /// Whether no reference is held.
    pub(crate) fn is_empty(&self) -> bool {
        self.targets.is_empty()
    }

    pub(crate) fn targets(&self) -> usize {
        self.targets.len()
    }

    pub(crate) fn clear(&mut self) {
        self.targets.clear();
    }
}

/// The entries of a counted map, each repeated as often as counted, in order.
fn expand(counts: &BTreeMap<RefEntry, u32>, total: usize) -> Vec<RefEntry> {
    let mut out = Vec::with_capacity(total);
    for (entry, &count) in counts {
        if count == 1 {
            out.push(*entry);
        } else {
            out.extend(std::iter::repeat_n(*entry, count as usize));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::def::FieldId;
    use strata_arena::Slot;

    fn entry(holder: u64, field: u16) -> RefEntry {
        RefEntry {
            holder: InstanceId::new(holder).unwrap(),
            holder_slot: Slot::from_index(holder as u32),
            field: FieldId::from_index(field),
        }
    }

    #[test]
    fn counts_survive_promotion_and_removal() {
        let target = InstanceId::new(1).unwrap();
        let mut index = RefIndex::default();
        let n = PROMOTE as u64 * 3;
        for h in 0..n {
            index.insert(target, entry(n - h, 0));
        }
        index.insert(target, entry(7, 0));
        let all = index.entries(target);
        assert_eq!(all.len(), PROMOTE * 3 + 1);
        assert!(all.windows(2).all(|w| w[0].holder <= w[1].holder), "sorted");
        index.remove(target, entry(7, 0));
        assert_eq!(
            index
                .entries(target)
                .iter()
                .filter(|e| e.holder.get() == 7)
                .count(),
            1
        );
        for h in 1..=n {
            index.remove(target, entry(h, 0));
        }
        assert_eq!(index.targets(), 0);
        index.remove(target, entry(1, 0));
        assert_eq!(index.targets(), 0);
    }
}
