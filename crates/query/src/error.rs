//! `QueryError`: why a query spec was refused or a pass could not run.
//!
//! Invariant: a refused spec never becomes a `Query`, and a failed pass leaves the query's cache
//! and baseline as they were. A spec is checked without a store (`Query::new`), so the spec's
//! own refusals name a component by its id, the only thing a spec holds; everything refused
//! against a store is the store's error, which names components and fields as defined.

use strata_component_store::{ComponentId, StoreError};

/// Why a query could not be built or run.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// The spec has no required component and no required tag: there is nothing to drive
    /// candidate enumeration, and Strata never scans every instance implicitly.
    #[error("a query needs at least one required component or required tag to drive it")]
    NoDriver,
    /// An added or changed filter names a component the query does not require.
    #[error("change filters must name required components; component id {} is not required", .0.index())]
    ChangeTermNotRequired(ComponentId),
    /// A component is both required and excluded, or a tag both required and excluded: the
    /// term, as `component id 3` or ``tag `Enemy` ``.
    #[error("the spec both requires and excludes {0}")]
    Contradiction(String),
    /// A term index outside the spec's required terms.
    #[error("the query has no required term {0}")]
    NoSuchTerm(usize),
    /// A pass was used with a store it was not built against, or after the structure of one
    /// of its components changed: run the query again.
    #[error("the pass's matches are stale for this store: run the query again")]
    StaleMatches,
    /// A parallel pass was asked for chunks of no rows, or for no chunks.
    #[error("a parallel pass needs at least one row per chunk and at least one chunk")]
    ZeroChunks,
    /// The store refused an access the query made.
    #[error(transparent)]
    Store(#[from] StoreError),
}
