//! `Evaluator`: schema evaluation cached by source text, within a bound.
//!
//! Invariant: an outcome, failure included, is found by the exact source text that produced
//! it (the map's keys are the sources themselves, so two sources that merely hash alike are
//! never confused). While a source stays cached it is evaluated at most once. The cache never
//! holds more than `CacheLimit::entries` outcomes nor more than `CacheLimit::bytes` bytes of
//! sources and outcomes together; to make room it forgets the least recently used source. The
//! counters say exactly how many evaluations ran, how many requests the cache answered and how
//! many outcomes it forgot.

use std::collections::BTreeMap;
use std::sync::Arc;

use hashbrown::HashMap;
use strata_component_store::{FieldType, Value};

use crate::error::SchemaError;
use crate::sandbox::{Budget, SchemaVm};
use crate::schema::Schema;

/// How much an evaluator's cache may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheLimit {
    /// Outcomes kept at most.
    pub entries: usize,
    /// Bytes kept at most: the sources' text plus an estimate of their outcomes' size.
    pub bytes: usize,
}

impl CacheLimit {
    /// The standard limit: 1,024 outcomes, 32 MiB.
    pub const STANDARD: CacheLimit = CacheLimit {
        entries: 1024,
        bytes: 32 * 1024 * 1024,
    };
}

/// One cached outcome.
#[derive(Debug)]
struct Entry {
    outcome: Result<Arc<Schema>, SchemaError>,
    /// The use stamp under which `by_use` lists the source.
    used: u64,
    /// What the entry counts against `CacheLimit::bytes`.
    bytes: usize,
}

/// A schema VM with a bounded cache of outcomes by source text.
#[derive(Debug)]
pub struct Evaluator {
    vm: SchemaVm,
    limit: CacheLimit,
    cache: HashMap<Arc<str>, Entry>,
    /// Use stamp → source, oldest first; holds exactly the cached sources.
    by_use: BTreeMap<u64, Arc<str>>,
    next_use: u64,
    bytes: usize,
    evaluations: u64,
    hits: u64,
    evictions: u64,
}

impl Evaluator {
    /// An evaluator with the standard budget and cache limit.
    ///
    /// # Errors
    ///
    /// [`SchemaError::Vm`] when the Luau VM cannot be set up.
    pub fn new() -> Result<Self, SchemaError> {
        Self::with_budget(Budget::STANDARD)
    }

    /// An evaluator with a given budget and the standard cache limit.
    ///
    /// # Errors
    ///
    /// [`SchemaError::Vm`] when the Luau VM cannot be set up.
    pub fn with_budget(budget: Budget) -> Result<Self, SchemaError> {
        Self::with_limits(budget, CacheLimit::STANDARD)
    }

    /// An evaluator with a given budget and cache limit.
    ///
    /// # Errors
    ///
    /// [`SchemaError::Vm`] when the Luau VM cannot be set up.
    pub fn with_limits(budget: Budget, limit: CacheLimit) -> Result<Self, SchemaError> {
        Ok(Self {
            vm: SchemaVm::with_budget(budget)?,
            limit,
            cache: HashMap::new(),
            by_use: BTreeMap::new(),
            next_use: 0,
            bytes: 0,
            evaluations: 0,
            hits: 0,
            evictions: 0,
        })
    }

    /// The schema of a source, evaluating it only if its outcome is not cached.
    ///
    /// # Errors
    ///
    /// The source's [`SchemaError`], as [`SchemaVm::evaluate`](crate::SchemaVm::evaluate) gives it
    /// (a cached failure is returned again without evaluating).
    pub fn evaluate(&mut self, chunk_name: &str, source: &str) -> Result<Arc<Schema>, SchemaError> {
        let stamp = self.next_use;
        self.next_use += 1;
        if let Some(entry) = self.cache.get_mut(source) {
            self.hits += 1;
            if let Some(key) = self.by_use.remove(&entry.used) {
                self.by_use.insert(stamp, key);
            }
            entry.used = stamp;
            return entry.outcome.clone();
        }
        self.evaluations += 1;
        let outcome = self.vm.evaluate(chunk_name, source).map(Arc::new);
        let bytes = source.len().saturating_add(outcome_bytes(&outcome));
        if bytes <= self.limit.bytes && self.limit.entries > 0 {
            while self.cache.len() >= self.limit.entries || self.bytes + bytes > self.limit.bytes {
                if !self.evict_oldest() {
                    break;
                }
            }
            let key: Arc<str> = Arc::from(source);
            self.by_use.insert(stamp, key.clone());
            self.bytes += bytes;
            self.cache.insert(
                key,
                Entry {
                    outcome: outcome.clone(),
                    used: stamp,
                    bytes,
                },
            );
        }
        outcome
    }

    /// Forgets the least recently used outcome; false when nothing is cached.
    fn evict_oldest(&mut self) -> bool {
        let Some((_, key)) = self.by_use.pop_first() else {
            return false;
        };
        if let Some(entry) = self.cache.remove(&key) {
            self.bytes -= entry.bytes;
            self.evictions += 1;
        }
        true
    }

    /// How many evaluations actually ran.
    pub fn evaluations(&self) -> u64 {
        self.evaluations
    }

    /// How many requests the cache answered.
    pub fn cache_hits(&self) -> u64 {
        self.hits
    }

    /// How many outcomes the cache forgot to stay within its limit.
    pub fn evictions(&self) -> u64 {
        self.evictions
    }

    /// How many outcomes are cached.
    pub fn cached(&self) -> usize {
        self.cache.len()
    }

    /// How many bytes the cached outcomes count against the limit.
    pub fn cached_bytes(&self) -> usize {
        self.bytes
    }

    /// The cache limit.
    pub fn limit(&self) -> CacheLimit {
        self.limit
    }

    /// The VM (for evaluations that must bypass the cache).
    pub fn vm(&self) -> &SchemaVm {
        &self.vm
    }
}

/// Host bytes charged per field, type node or value node of a cached schema, besides its text.
const NODE_BYTES: usize = 64;

/// An estimate of the host memory an outcome holds.
fn outcome_bytes(outcome: &Result<Arc<Schema>, SchemaError>) -> usize {
    match outcome {
        Ok(schema) => {
            let names = |names: &[Arc<str>]| -> usize {
                names.iter().map(|n| NODE_BYTES + n.len()).sum::<usize>()
            };
            NODE_BYTES
                + schema.classes.as_deref().map_or(0, names)
                + names(&schema.requires)
                + schema
                    .fields
                    .iter()
                    .map(|f| {
                        NODE_BYTES
                            + f.name.len()
                            + names(&f.former_names)
                            + type_bytes(&f.ty)
                            + value_bytes(&f.default)
                    })
                    .sum::<usize>()
        }
        Err(error) => NODE_BYTES + error.to_string().len(),
    }
}

fn type_bytes(ty: &FieldType) -> usize {
    NODE_BYTES
        + match ty {
            FieldType::Enum(variants) => variants.iter().map(|v| NODE_BYTES + v.len()).sum(),
            FieldType::List(inner) | FieldType::Optional(inner) => type_bytes(inner),
            FieldType::Map(key, value) => type_bytes(key) + type_bytes(value),
            FieldType::Struct(members) => members
                .iter()
                .map(|m| m.name.len() + type_bytes(&m.ty) + value_bytes(&m.default))
                .sum(),
            _ => 0,
        }
}

fn value_bytes(value: &Value) -> usize {
    NODE_BYTES
        + match value {
            Value::Text(text) => text.len(),
            Value::Buffer(bytes) => bytes.len(),
            Value::List(list) => list.as_slice().iter().map(value_bytes).sum(),
            Value::Map(map) => map
                .iter()
                .map(|(key, v)| value_bytes(&key.to_value()) + value_bytes(v))
                .sum(),
            Value::Struct(values) => values.iter().map(value_bytes).sum(),
            Value::Optional(Some(inner)) => value_bytes(inner),
            _ => 0,
        }
}
