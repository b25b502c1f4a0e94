//! What a build found wrong with the ordering declarations, and the cycles it stopped.
//!
//! Invariant: a diagnostic never stops a build; the plan it comes with schedules every enabled
//! system that is not in a cycle, including one whose declarations join it to a stopped system
//! (each such declaration is reported). Diagnostics are listed in a stable order (by declaring
//! system, then `before` targets before `after` targets in the order written, then cycles in
//! stage and hierarchy order), so their text can be compared across runs.

use std::fmt;

use crate::system::{Relation, Stage, SystemId};

/// How much a diagnostic matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Nothing to fix: the declaration was redundant.
    Info,
    /// A declaration had no effect, so an intended order may be missing.
    Warning,
    /// Systems were stopped.
    Error,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        })
    }
}

/// One `before` or `after` declaration, as written by its system.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Declaration {
    /// The declaring system.
    pub system: SystemId,
    /// The declaring system's name.
    pub name: String,
    /// Which way it orders itself.
    pub relation: Relation,
    /// The target as written: a system or a set name.
    pub target: String,
}

impl fmt::Display for Declaration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.name, self.relation, self.target)
    }
}

/// A dependency cycle: systems that each wait, through declared edges, on the others.
///
/// All its members are stopped: they are not scheduled and do not run until the cycle is broken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cycle {
    /// The stage the members belong to (edges never cross stages).
    pub stage: Stage,
    /// A closed walk through the cycle: each system has an edge to the next and the last has an
    /// edge to the first. It starts at the member first in hierarchy order and takes the
    /// shortest way back to it, preferring successors first in hierarchy order.
    pub chain: Vec<SystemId>,
    /// Every member (the strongly connected component), in hierarchy order; members the chain
    /// does not pass through are stopped too.
    pub members: Vec<SystemId>,
    pub(crate) names: Vec<String>,
}

impl Cycle {
    /// The name of a member.
    pub fn name(&self, id: SystemId) -> Option<&str> {
        let at = self.members.iter().position(|&member| member == id)?;
        self.names.get(at).map(String::as_str)
    }

    /// The chain as names, closed: `a -> b -> c -> a`.
    pub fn chain_text(&self) -> String {
        let mut text = String::new();
        for &id in self.chain.iter().chain(self.chain.first()) {
            if !text.is_empty() {
                text.push_str(" -> ");
            }
            text.push_str(self.name(id).unwrap_or("?"));
        }
        text
    }

    /// The members' names joined by commas.
    pub fn members_text(&self) -> String {
        self.names.join(", ")
    }
}

/// Something a build noticed about the declarations.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Diagnostic {
    /// The target runs in another stage; the stage order already orders the two, so no edge was
    /// added. With a set target there is one per member in another stage.
    CrossStage {
        /// The declaration.
        declaration: Declaration,
        /// The declaring system's stage.
        stage: Stage,
        /// The target system in another stage.
        other: SystemId,
        /// Its name.
        other_name: String,
        /// Its stage.
        other_stage: Stage,
    },
    /// No system or set has the target's name; no edge (and no node) was added.
    MissingTarget {
        /// The declaration.
        declaration: Declaration,
    },
    /// The target is a disabled system, or a set whose only other members are disabled; no edge
    /// was added, and an order that went through it does not hold.
    DisabledTarget {
        /// The declaration.
        declaration: Declaration,
    },
    /// A system named itself as a target; ignored.
    SelfTarget {
        /// The declaration.
        declaration: Declaration,
    },
    /// The target is a set whose only member is the declaring system: there is no other system
    /// to order against, so no edge was added.
    SelfOnlySet {
        /// The declaration.
        declaration: Declaration,
    },
    /// The declaration joins a system that runs to one stopped in a cycle (either may be the
    /// declarer). The running system keeps its place as if the declaration were absent, so the
    /// order it states does not hold. With a set target there is one per stopped member.
    StoppedNeighbour {
        /// The declaration.
        declaration: Declaration,
        /// The system stopped in a cycle.
        stopped: SystemId,
        /// Its name.
        stopped_name: String,
        /// Its cycle's index in [`Plan::cycles`](crate::Plan::cycles).
        cycle: usize,
        /// The system that runs without the order.
        running: SystemId,
        /// Its name.
        running_name: String,
    },
    /// A cycle whose members were stopped.
    Cycle(Cycle),
}

impl Diagnostic {
    /// How much it matters.
    pub fn severity(&self) -> Severity {
        match self {
            Diagnostic::CrossStage { .. } => Severity::Info,
            Diagnostic::MissingTarget { .. }
            | Diagnostic::DisabledTarget { .. }
            | Diagnostic::SelfTarget { .. }
            | Diagnostic::SelfOnlySet { .. }
            | Diagnostic::StoppedNeighbour { .. } => Severity::Warning,
            Diagnostic::Cycle(_) => Severity::Error,
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.severity())?;
        match self {
            Diagnostic::CrossStage {
                declaration,
                stage,
                other_name,
                other_stage,
                ..
            } => write!(
                f,
                "{declaration}: {other_name} runs in {other_stage}, not {stage}; the stage order applies and no edge is added"
            ),
            Diagnostic::MissingTarget { declaration } => {
                write!(f, "{declaration}: no system or set has that name")
            }
            Diagnostic::DisabledTarget { declaration } => {
                write!(f, "{declaration}: the target is disabled; no edge is added")
            }
            Diagnostic::SelfTarget { declaration } => {
                write!(
                    f,
                    "{declaration}: a system cannot be ordered against itself"
                )
            }
            Diagnostic::SelfOnlySet { declaration } => write!(
                f,
                "{declaration}: the set's only member is {} itself; no edge is added",
                declaration.name
            ),
            Diagnostic::StoppedNeighbour {
                declaration,
                stopped_name,
                running_name,
                ..
            } => write!(
                f,
                "{declaration}: {stopped_name} is stopped in a cycle; {running_name} runs without this order"
            ),
            Diagnostic::Cycle(cycle) => write!(
                f,
                "cycle in {}: {}; stopped: {}",
                cycle.stage,
                cycle.chain_text(),
                cycle.members_text()
            ),
        }
    }
}

/// Every diagnostic of one build, in a stable order; displayed one per line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScheduleDiagnostics {
    items: Vec<Diagnostic>,
}

impl ScheduleDiagnostics {
    pub(crate) fn push(&mut self, diagnostic: Diagnostic) {
        self.items.push(diagnostic);
    }

    /// The diagnostics.
    pub fn iter(&self) -> std::slice::Iter<'_, Diagnostic> {
        self.items.iter()
    }

    /// The diagnostics as a slice.
    pub fn as_slice(&self) -> &[Diagnostic] {
        &self.items
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// How many have `severity`.
    pub fn count(&self, severity: Severity) -> usize {
        self.items
            .iter()
            .filter(|diagnostic| diagnostic.severity() == severity)
            .count()
    }
}

impl<'a> IntoIterator for &'a ScheduleDiagnostics {
    type Item = &'a Diagnostic;
    type IntoIter = std::slice::Iter<'a, Diagnostic>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}

impl fmt::Display for ScheduleDiagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for diagnostic in &self.items {
            writeln!(f, "{diagnostic}")?;
        }
        Ok(())
    }
}
