//! `SchemaError`: why a component definition could not be evaluated or installed.
//!
//! Invariant: every failure of evaluation (syntax, runtime, budget, shape) is a value of this
//! type, never a panic, and is cloneable so failures can be cached like successes.

use strata_component_store::{FormerNameConflict, StoreError};

/// Why a schema was refused.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// The source does not parse.
    #[error("syntax error{}: {message}", line_suffix(*line))]
    Syntax {
        /// Luau's message.
        message: String,
        /// The line, when Luau gives it.
        line: Option<u32>,
    },
    /// The source raised an error while running (including reaching for something the sandbox
    /// does not provide, such as `game`, `require` or `os`).
    #[error("runtime error{}: {message}", line_suffix(*line))]
    Runtime {
        /// Luau's message.
        message: String,
        /// The line, when Luau gives it.
        line: Option<u32>,
    },
    /// The evaluation ran past its instruction budget (an endless loop, for example).
    #[error("the schema ran past its instruction budget ({0} interrupts)")]
    InstructionBudget(u64),
    /// The evaluation ran past its time budget.
    #[error("the schema ran past its time budget ({0} ms)")]
    TimeBudget(u64),
    /// The evaluation tried to allocate past its memory budget, in Luau or in the schema the
    /// returned tables describe.
    #[error("the schema ran past its memory budget ({0} bytes)")]
    MemoryBudget(usize),
    /// A value operation was asked for more than its cap allows (a string over
    /// `TEXT_CAP` bytes, a list or table over `ITEM_CAP` entries).
    #[error("a value operation ran past its cap{}: {message}", line_suffix(*line))]
    SizeCap {
        /// Which operation, and by how much.
        message: String,
        /// The line, when known.
        line: Option<u32>,
    },
    /// The source is longer than the budget allows; it was not compiled.
    #[error("the source is {length} bytes, over the limit of {limit}")]
    SourceTooLong {
        /// The source's length in bytes.
        length: usize,
        /// The budget's limit in bytes.
        limit: usize,
    },
    /// The evaluation recursed too deeply.
    #[error("the schema overflowed the stack")]
    StackOverflow,
    /// The source returned something other than one `component { ... }` table.
    #[error("a schema must return one component {{ ... }} table, not {found}")]
    NotAComponent {
        /// What it returned.
        found: String,
    },
    /// The component table is malformed (an unknown key, a bad default, a field not built with
    /// a constructor, a name in the schema, ...).
    #[error("invalid schema{}: {message}", line_suffix(*line))]
    Invalid {
        /// What is wrong.
        message: String,
        /// The line, when known.
        line: Option<u32>,
    },
    /// The schema's former names are ambiguous (see `check_former_names`).
    #[error(transparent)]
    FormerNames(#[from] FormerNameConflict),
    /// The store refused the definition.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The Luau VM itself failed (being set up, or having its limits set or lifted), not the
    /// schema.
    #[error(transparent)]
    Vm(#[from] VmError),
}

/// A failure of the Luau VM itself, with Luau's error as its source.
///
/// Cloneable like every [`SchemaError`]; two are equal when they say the same (what failed and
/// Luau's message), since Luau's errors have no equality of their own.
#[derive(Clone, Debug, thiserror::Error)]
#[error("the Luau VM failed while {what}")]
pub struct VmError {
    what: &'static str,
    #[source]
    source: mlua::Error,
}

impl VmError {
    pub(crate) fn new(what: &'static str, source: mlua::Error) -> Self {
        Self { what, source }
    }
}

impl PartialEq for VmError {
    fn eq(&self, other: &Self) -> bool {
        self.what == other.what && self.source.to_string() == other.source.to_string()
    }
}

fn line_suffix(line: Option<u32>) -> String {
    line.map(|l| format!(" on line {l}")).unwrap_or_default()
}
