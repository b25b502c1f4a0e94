//! The reverse reference index of one set: target → the references held to it.
//!
//! Invariant: for every target, the holders list counts each (holder, holder slot, field)
//! exactly as many times as that field of that holder's row references the target. Small lists
//! are vectors; a list that grows past `PROMOTE` entries becomes a counted map, so removing one
//! reference costs O(1) however popular the target is. Readers get entries sorted by holder and
//! field, whatever the representation, so policy order is deterministic.

use hashbrown::HashMap;
use strata_arena::InstanceId;

use crate::set::RefEntry;

/// Above this many references, a target's holders are kept in a counted map.
const PROMOTE: usize = 32;

#[derive(Clone, Debug)]
enum Holders {
    Few(Vec<RefEntry>),
    Many {
        counts: HashMap<RefEntry, u32>,
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
                entries.push(entry);
                if entries.len() > PROMOTE {
                    let mut counts = HashMap::with_capacity(entries.len());
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
                if let Some(i) = entries.iter().position(|e| *e == entry) {
                    entries.swap_remove(i);
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
        let mut out = match self.targets.get(&target) {
            None => return Vec::new(),
            Some(Holders::Few(entries)) => entries.clone(),
            Some(Holders::Many { counts, total }) => {
                let mut out = Vec::with_capacity(*total);
                for (entry, count) in counts {
                    out.extend(std::iter::repeat_n(*entry, *count as usize));
                }
                out
            }
        };
        out.sort_unstable_by_key(|e| (e.holder, e.field));
        out
    }

    /// Removes and returns every reference to `target`, sorted by holder then field.
    pub(crate) fn take(&mut self, target: InstanceId) -> Vec<RefEntry> {
        let entries = self.entries(target);
        self.targets.remove(&target);
        entries
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
        for h in 0..100u64 {
            index.insert(target, entry(100 - h, 0));
        }
        index.insert(target, entry(7, 0));
        let all = index.entries(target);
        assert_eq!(all.len(), 101);
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
        for h in 1..=100u64 {
            index.remove(target, entry(h, 0));
        }
        assert_eq!(index.targets(), 0);
        index.remove(target, entry(1, 0));
        assert_eq!(index.targets(), 0);
    }
}
