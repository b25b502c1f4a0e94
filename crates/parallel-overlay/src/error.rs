//! `OverlayError`: why a writer's operation was refused.
//!
//! Invariant: a refused overlay operation records nothing.

use strata_component_store::StoreError;

/// Why an overlay operation was refused.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum OverlayError {
    /// Adding or removing components (or anything else that moves rows) is not allowed while
    /// writers run in parallel: rows must stay where the writers found them.
    #[error("structural operations are refused while parallel writers are active: {0}")]
    StructuralRefused(&'static str),
    /// The store refused the access (unknown component, missing membership, type mismatch).
    #[error(transparent)]
    Store(#[from] StoreError),
}
