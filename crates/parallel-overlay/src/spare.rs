//! `Spare`: the memory of finished overlays, kept for the next writers.
//!
//! Invariant: every log in the pool is empty and every row array is empty (its capacity kept),
//! so taking one is the same as allocating a new one, minus the allocation and the first-touch
//! page faults that dominate recording a large write set.

use std::sync::{Mutex, PoisonError};

use strata_component_store::FieldType;

use crate::log::ColumnLog;

/// Memory handed back by commits for later overlays to reuse: column logs and row-index
/// arrays. Engines that run the same parallel writers every frame keep one `Spare` and pass it
/// to [`Overlay::with_spare`](crate::Overlay::with_spare) and
/// [`commit_with_spare`](crate::commit_with_spare) (or
/// [`run_parallel_with_spare`](crate::run_parallel_with_spare)); after the first frame the
/// writers record into memory that is already resident. What it holds never exceeds what the
/// largest set of overlays alive at once used; [`Spare::clear`] gives it back to the allocator.
#[derive(Debug, Default)]
pub struct Spare {
    logs: Mutex<Vec<ColumnLog>>,
    indexes: Mutex<Vec<Vec<u32>>>,
}

impl Spare {
    /// An empty pool.
    pub fn new() -> Self {
        Self::default()
    }

    /// Column logs and row arrays held.
    pub fn len(&self) -> usize {
        lock(&self.logs).len() + lock(&self.indexes).len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of capacity held.
    pub fn bytes(&self) -> usize {
        let logs: usize = lock(&self.logs).iter().map(ColumnLog::capacity_bytes).sum();
        let indexes: usize = lock(&self.indexes)
            .iter()
            .map(|v| v.capacity() * size_of::<u32>())
            .sum();
        logs + indexes
    }

    /// Releases everything held.
    pub fn clear(&self) {
        lock(&self.logs).clear();
        lock(&self.indexes).clear();
    }

    /// An empty log for a field of type `ty`, reused when one of that type is held.
    pub(crate) fn take_log(&self, ty: &FieldType) -> ColumnLog {
        let fresh = ColumnLog::for_type(ty);
        let mut logs = lock(&self.logs);
        let kind = std::mem::discriminant(&fresh);
        match logs
            .iter()
            .position(|log| std::mem::discriminant(log) == kind)
        {
            Some(at) => logs.swap_remove(at),
            None => fresh,
        }
    }

    /// Keeps a log's memory (emptied first).
    pub(crate) fn give_log(&self, mut log: ColumnLog) {
        log.clear();
        if log.capacity_bytes() > 0 {
            lock(&self.logs).push(log);
        }
    }

    /// A zeroed row array of `len` entries, reusing a held one when there is one.
    pub(crate) fn take_index(&self, len: usize) -> Vec<u32> {
        let mut indexes = lock(&self.indexes);
        let best = indexes
            .iter()
            .position(|v| v.capacity() >= len)
            .or_else(|| indexes.len().checked_sub(1));
        let mut index = match best {
            Some(at) => indexes.swap_remove(at),
            None => return vec![0; len],
        };
        drop(indexes);
        index.resize(len, 0);
        index
    }

    /// Keeps a row array's memory (emptied first).
    pub(crate) fn give_index(&self, mut index: Vec<u32>) {
        index.clear();
        if index.capacity() > 0 {
            lock(&self.indexes).push(index);
        }
    }
}

/// The pool's lists stay valid whatever a panicking holder left undone (each push or pop is
/// whole), so a poisoned lock is simply taken over.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
