//! `Evaluator`: schema evaluation cached by a stable fingerprint of the source.
//!
//! Invariant: a source with a given fingerprint is evaluated at most once per evaluator; its
//! outcome, failure included, is returned from the cache afterwards. The counters say exactly
//! how many evaluations ran and how many requests the cache answered.

use std::sync::Arc;

use hashbrown::HashMap;

use crate::error::SchemaError;
use crate::sandbox::{Budget, SchemaVm};
use crate::schema::Schema;

/// A stable 64-bit fingerprint of a source (FNV-1a): the same text gives the same value on
/// every platform and Rust version.
pub fn fingerprint(source: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in source.as_bytes() {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// A schema VM with a cache of outcomes by source fingerprint.
#[derive(Debug)]
pub struct Evaluator {
    vm: SchemaVm,
    cache: HashMap<u64, Result<Arc<Schema>, SchemaError>>,
    evaluations: u64,
    hits: u64,
}

impl Evaluator {
    /// An evaluator with the standard budget.
    pub fn new() -> Result<Self, SchemaError> {
        Self::with_budget(Budget::STANDARD)
    }

    /// An evaluator with a given budget.
    pub fn with_budget(budget: Budget) -> Result<Self, SchemaError> {
        Ok(Self {
            vm: SchemaVm::with_budget(budget)?,
            cache: HashMap::new(),
            evaluations: 0,
            hits: 0,
        })
    }

    /// The schema of a source, evaluating it only if this source was never seen.
    pub fn evaluate(&mut self, chunk_name: &str, source: &str) -> Result<Arc<Schema>, SchemaError> {
        let key = fingerprint(source);
        if let Some(outcome) = self.cache.get(&key) {
            self.hits += 1;
            return outcome.clone();
        }
        self.evaluations += 1;
        let outcome = self.vm.evaluate(chunk_name, source).map(Arc::new);
        self.cache.insert(key, outcome.clone());
        outcome
    }

    /// How many evaluations actually ran.
    pub fn evaluations(&self) -> u64 {
        self.evaluations
    }

    /// How many requests the cache answered.
    pub fn cache_hits(&self) -> u64 {
        self.hits
    }

    /// The VM (for evaluations that must bypass the cache).
    pub fn vm(&self) -> &SchemaVm {
        &self.vm
    }
}
