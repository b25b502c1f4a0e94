//! Snapshots and restores of a [`Store`]: copies that share every set until one side writes.
//!
//! Invariant: a snapshot has a new `StoreId`, the same `Lineage`, no pending events and no
//! observers; a restore gives the store a new identity and moves its name revision and
//! structural counter past both sides, so no cache built before it is taken for current, and
//! it refuses (changing nothing) a store of another lineage.

use super::{Store, StoreId};
use crate::def::ComponentId;
use crate::error::StoreError;
use crate::observe::Observers;
use crate::set::LoadScratch;
use crate::shared::SharedSet;

impl Store {
    /// A copy sharing every set; the first write to a set afterwards copies that set only.
    /// The copy has a new identity, the same lineage, and no pending events. It carries no
    /// observers (they live in the store that registered them, not in its sets). It carries the
    /// frame state at a cost independent of the frame's work: dirty state (a component with
    /// explicitly marked or moved rows counts as dirty whole there), the structural count and
    /// value counters as they are, and a structural window opened at the snapshot (a count
    /// from before it is [`StructuralMissed`](crate::StructuralMissed) there).
    pub fn snapshot(&self) -> Store {
        Store {
            id: StoreId::fresh(),
            lineage: self.lineage,
            sets: self
                .sets
                .iter()
                .map(|s| s.as_ref().map(SharedSet::share))
                .collect(),
            names: self.names.clone(),
            name_revision: self.name_revision,
            tick: self.tick,
            orphans: self.orphans.clone(),
            events: Vec::new(),
            dependents: self.dependents.clone(),
            migrations: self.migrations.clone(),
            load_scratch: LoadScratch::default(),
            add_scratch: Vec::new(),
            observers: Observers::default(),
            frame: self.frame.snapshot(),
        }
    }

    /// Makes this store what `saved` (a [`Store::snapshot`] of it or of a store of its
    /// lineage) holds: the same definitions and component ids, rows with their values, added
    /// and changed ticks and dirty fields, removal logs, reverse reference index, orphan
    /// records and migration records, and the mutation tick, sharing every set with `saved`
    /// (the first write to one copies it). The restored store takes a new identity, so every
    /// cache built against this store (query caches and change windows, which are keyed by
    /// store identity; views; handles' resolutions) sees another store and rebuilds, and no
    /// tick issued before the restore is ever compared with one issued after it. The name
    /// revision and the structural counter move on past both, so counts taken before the
    /// restore see a change. A removal reader that read removals made after `saved` was taken
    /// reports missed removals, since its log's history does not continue there. Pending events
    /// are dropped (they announced what the restore takes back); observers stay registered.
    ///
    /// # Errors
    ///
    /// Refused, changing nothing, for a store of another lineage
    /// ([`StoreError::SnapshotFromOtherStore`]).
    pub fn restore(&mut self, saved: &Store) -> Result<(), StoreError> {
        if saved.lineage != self.lineage {
            return Err(StoreError::SnapshotFromOtherStore);
        }
        self.id = StoreId::fresh();
        // The sets this store wrote since are replaced; their memory stays as the spares the
        // next copies reuse, so a rollback loop does not fault fresh memory in every frame.
        let mut replaced = std::mem::take(&mut self.sets).into_iter();
        self.sets = saved
            .sets
            .iter()
            .map(|s| {
                let old = replaced.next().flatten();
                s.as_ref().map(|saved| match old {
                    Some(old) => SharedSet::restored(saved, old),
                    None => saved.share(),
                })
            })
            .collect();
        if self.names != saved.names {
            self.names = saved.names.clone();
        }
        self.name_revision = self.name_revision.max(saved.name_revision) + 1;
        self.tick = saved.tick;
        self.orphans = saved.orphans.clone();
        self.events.clear();
        self.dependents = saved.dependents.clone();
        self.migrations = saved.migrations.clone();
        self.frame = self.frame.restored(&saved.frame);
        Ok(())
    }

    /// Whether the two stores share the set of `component` (neither has written it since one
    /// was snapshotted from the other).
    pub fn shares_set_with(&self, other: &Store, component: ComponentId) -> bool {
        match (self.slot_set(component), other.slot_set(component)) {
            (Some(a), Some(b)) => a.ptr_eq(b),
            _ => false,
        }
    }
}
