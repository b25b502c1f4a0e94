//! Parallel passes: a pass's selected matches cut into disjoint contiguous chunks run on rayon,
//! each row written in place by exactly one task, change tracking merged in chunk order.
//!
//! Invariant: a parallel pass leaves the store as the serial pass over the same matches
//! (`Pass::update`, `Pass::update_each`) does, for any thread count and any chunking: the same
//! values, changed ticks, store tick, change log, events and dirty state. Chunks are runs of consecutive selected
//! matches; when their rows ascend with the matches (the written term's rows are the dense
//! sequence, or ascend anyway), each chunk owns a contiguous stretch of the column and writes it
//! in place through the store's `ParWriter`, which merges the chunks' tracking in chunk order,
//! that is in match order, as the serial pass records it. Otherwise the results are computed in
//! parallel, chunk by chunk, and stored in match order by one column writer. A pass the store
//! refuses (a value the field cannot hold, in any chunk) changes nothing.

use rayon::prelude::*;
use strata_component_store::{ChunkRunner, FieldId, Piece, Scalar, Store};

use crate::error::QueryError;
use crate::query::Pass;

/// How a parallel pass cuts its selected matches into chunks, each run by one task. The
/// result does not depend on it; only how the work spreads over threads does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Chunks {
    /// About four chunks per thread of the current rayon pool, of at least
    /// [`Chunks::AUTO_MIN_ROWS`] matches each.
    #[default]
    Auto,
    /// Chunks of this many matches (the last may be shorter). Zero is refused.
    Rows(usize),
    /// This many chunks of nearly equal length (fewer when there are fewer matches). Zero is
    /// refused.
    Count(usize),
}

impl Chunks {
    /// The fewest matches [`Chunks::Auto`] gives a chunk: below it, handing a chunk to
    /// another thread costs more than writing it.
    pub const AUTO_MIN_ROWS: usize = 4096;

    /// Matches per chunk for a pass of `n` matches.
    fn rows(self, n: usize) -> Result<usize, QueryError> {
        match self {
            Chunks::Auto => Ok(n
                .div_ceil(rayon::current_num_threads().saturating_mul(4))
                .max(Self::AUTO_MIN_ROWS)),
            Chunks::Rows(0) | Chunks::Count(0) => Err(QueryError::ZeroChunks),
            Chunks::Rows(rows) => Ok(rows),
            Chunks::Count(count) => Ok(n.div_ceil(count).max(1)),
        }
    }
}

/// Runs the chunks of a pass on the current rayon pool, handing back their outcomes in chunk
/// order.
struct Rayon;

impl ChunkRunner for Rayon {
    fn run<I, O, F>(&self, inputs: Vec<I>, f: &F) -> Vec<O>
    where
        I: Send,
        O: Send,
        F: Fn(I) -> O + Sync,
    {
        if inputs.len() <= 1 {
            return inputs.into_iter().map(f).collect();
        }
        inputs.into_par_iter().map(f).collect()
    }
}

impl Pass<'_> {
    /// [`Pass::update`] with the selected matches cut into `chunks` run on the current rayon
    /// pool (call it inside `ThreadPool::install` to choose one): one field of a term written
    /// from its current value and a field of another term (or another field of the same term),
    /// each row in place by exactly one task, with full change tracking and compare-before-write.
    /// The store ends exactly as after the serial [`Pass::update`], whatever the thread count
    /// and the chunking. Returns how many rows changed; refused, changing nothing, as the
    /// serial pass is, and for zero chunks or rows per chunk ([`QueryError::ZeroChunks`]).
    ///
    /// # Errors
    ///
    /// As [`Pass::update`], and [`QueryError::ZeroChunks`] for chunks of no rows or no chunks.
    pub fn par_update<W, R>(
        &self,
        store: &mut Store,
        write: (usize, FieldId),
        read: (usize, FieldId),
        chunks: Chunks,
        f: impl Fn(&W, &R) -> W + Sync,
    ) -> Result<usize, QueryError>
    where
        W: Scalar + Send + Sync,
        R: Scalar + Sync,
    {
        self.par_write::<W, R>(store, write, Some(read), chunks, move |w, r| match r {
            Some(r) => f(w, r),
            None => w.clone(),
        })
    }

    /// [`Pass::update_each`] in parallel, as [`Pass::par_update`]: one field of a term written
    /// from its current value, for every selected match.
    ///
    /// # Errors
    ///
    /// As [`Pass::update_each`], and [`QueryError::ZeroChunks`] for chunks of no rows or no chunks.
    pub fn par_update_each<W>(
        &self,
        store: &mut Store,
        write: (usize, FieldId),
        chunks: Chunks,
        f: impl Fn(&W) -> W + Sync,
    ) -> Result<usize, QueryError>
    where
        W: Scalar + Send + Sync,
    {
        self.par_write::<W, W>(store, write, None, chunks, move |w, _| f(w))
    }

    /// The body of both parallel passes; `f` is handed the read term's value when there is one.
    fn par_write<W, R>(
        &self,
        store: &mut Store,
        write: (usize, FieldId),
        read: Option<(usize, FieldId)>,
        chunks: Chunks,
        f: impl Fn(&W, Option<&R>) -> W + Sync,
    ) -> Result<usize, QueryError>
    where
        W: Scalar + Send + Sync,
        R: Scalar + Sync,
    {
        self.check(store)?;
        let (wt, wf) = write;
        let wc = self.term_component(wt)?;
        let read = match read {
            Some((rt, rf)) => Some((rt, self.term_component(rt)?, rf)),
            None => None,
        };
        let matches = self.matches();
        let selection = self.selection();
        let n = selection.map_or(matches.len(), <[u32]>::len);
        let chunk = chunks.rows(n)?;
        let write_rows = matches.rows(wt)?;
        let write_dense = matches.is_dense(wt);
        let (read_rows, read_dense) = match read {
            Some((rt, ..)) => (matches.rows(rt)?, matches.is_dense(rt)),
            None => (&[][..], true),
        };
        // Position k of the pass → match index → row of the read term.
        let index = |k: usize| selection.map_or(k, |s| s[k] as usize);
        let read_row = |k: usize| {
            let i = index(k);
            if read_dense { i } else { read_rows[i] as usize }
        };

        // The written rows by position, when they are not simply the match indexes.
        let listed: Option<Vec<u32>> =
            (!write_dense).then(|| (0..n).map(|k| write_rows[index(k)]).collect());
        let ascending = listed
            .as_ref()
            .is_none_or(|rows| rows.windows(2).all(|pair| pair[0] < pair[1]));
        let store_read = read.map(|(_, rc, rf)| (rc, rf));
        if !ascending {
            let rows = listed.as_deref().unwrap_or_default();
            return self.compute_then_store(
                store,
                (wc, wf),
                store_read,
                rows,
                chunk,
                |w, k, reads| f(w, read.map(|_| &reads[read_row(k)])),
            );
        }
        let pieces: Vec<Piece<'_>> = match (&listed, selection) {
            (Some(rows), _) => rows.chunks(chunk).map(Piece::Listed).collect(),
            // A dense term's rows are the match indexes, so the selection lists them.
            (None, Some(selection)) => selection.chunks(chunk).map(Piece::Listed).collect(),
            (None, None) => (0..n)
                .step_by(chunk)
                .map(|start| Piece::Rows(start..(start + chunk).min(n)))
                .collect(),
        };
        let (mut writer, reads) = store.par_update_columns::<W, R>(wc, wf, store_read)?;
        let f = &f;
        let changed = if read.is_some() {
            let read_row = &read_row;
            writer.update(&Rayon, &pieces, |piece| {
                let first = piece * chunk;
                move |current: &W, i: usize| f(current, Some(&reads[read_row(first + i)]))
            })?
        } else {
            writer.update(&Rayon, &pieces, |_| {
                move |current: &W, _: usize| f(current, None)
            })?
        };
        Ok(changed)
    }

    /// The pass for written rows that do not ascend with the matches: every result computed in
    /// parallel (`chunk` positions per task) from the current values, then stored in match
    /// order through one column writer, as the serial pass stores them.
    fn compute_then_store<W, R>(
        &self,
        store: &mut Store,
        write: (strata_component_store::ComponentId, FieldId),
        read: Option<(strata_component_store::ComponentId, FieldId)>,
        rows: &[u32],
        chunk: usize,
        f: impl Fn(&W, usize, &[R]) -> W + Sync,
    ) -> Result<usize, QueryError>
    where
        W: Scalar + Send + Sync,
        R: Scalar + Sync,
    {
        let (mut writer, reads) = store.update_columns::<W, R>(write.0, write.1, read)?;
        let current = writer.values();
        // A row past the column is skipped by the writer, as in the serial pass; its result is
        // never stored, so any value stands in for it.
        let results: Vec<Option<W>> = (0..rows.len())
            .into_par_iter()
            .with_min_len(chunk)
            .map(|k| current.get(rows[k] as usize).map(|w| f(w, k, reads)))
            .collect();
        let changed = writer.update_indexed(
            rows.len(),
            |k| (rows[k] as usize, k),
            |current, k| results[k].clone().unwrap_or_else(|| current.clone()),
        )?;
        Ok(changed)
    }
}
