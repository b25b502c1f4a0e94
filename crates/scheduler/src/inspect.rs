//! Reading a plan: a text dump of every stage's order with the reason for each place, and a
//! Graphviz DOT export.
//!
//! Invariant: both renderings are functions of the plan alone and list systems and edges in the
//! plan's own stable orders, so equal plans render to equal text.

use std::fmt::Write as _;

use crate::plan::{Edge, Plan, PlannedSystem, SystemState};
use crate::system::{Stage, SystemId};

impl Plan {
    /// A text dump: for each stage with systems, the scheduled systems in run order (scheduled
    /// position, name, hierarchy key, and why it is there: hierarchy order when nothing it
    /// waits on is declared, otherwise each scheduled predecessor with the declaration behind
    /// the edge), then its stopped and disabled systems; then the diagnostics.
    pub fn dump(&self) -> String {
        let name_width = self.all().map(|(_, s)| s.name.len()).max().unwrap_or(0);
        let key_width = self
            .all()
            .map(|(_, s)| s.hierarchy.to_string().len())
            .max()
            .unwrap_or(0);
        let position_width = self.order.len().saturating_sub(1).to_string().len();
        let mut out = String::new();
        for stage in Stage::ALL {
            let mut lines = Vec::new();
            for &id in self.stage_order(stage) {
                let Some(system) = self.system(id) else {
                    continue;
                };
                let position = self.position(id).map_or("-".to_owned(), |p| p.to_string());
                lines.push((position, system, self.why_here(id)));
            }
            let mut idle: Vec<(SystemId, &PlannedSystem)> = self
                .all()
                .filter(|(_, s)| {
                    s.stage == stage && !matches!(s.state, SystemState::Scheduled { .. })
                })
                .collect();
            idle.sort_by(|a, b| {
                let rank = |s: &PlannedSystem| matches!(s.state, SystemState::Disabled);
                (rank(a.1), &a.1.hierarchy, a.0).cmp(&(rank(b.1), &b.1.hierarchy, b.0))
            });
            for (_, system) in idle {
                let why = match system.state {
                    SystemState::Stopped { cycle } => match self.cycles.get(cycle) {
                        Some(cycle) => format!("stopped: cycle {}", cycle.chain_text()),
                        None => "stopped".to_owned(),
                    },
                    _ => "disabled".to_owned(),
                };
                lines.push(("-".to_owned(), system, why));
            }
            if lines.is_empty() {
                continue;
            }
            let _ = writeln!(out, "{stage}");
            for (position, system, why) in lines {
                let _ = writeln!(
                    out,
                    "  {position:>position_width$}  {name:<name_width$}  @{key:<key_width$}  {why}",
                    name = system.name,
                    key = system.hierarchy.to_string(),
                );
            }
        }
        if !self.diagnostics.is_empty() {
            let _ = writeln!(out, "diagnostics");
            for diagnostic in &self.diagnostics {
                let _ = writeln!(out, "  {diagnostic}");
            }
        }
        out
    }

    /// The plan as a Graphviz `digraph`: one cluster per stage with systems, nodes labelled with
    /// scheduled position and name (stopped systems red and dashed, disabled ones grey and
    /// dotted), and one arrow per edge (red inside a cycle).
    pub fn to_dot(&self) -> String {
        let mut out = String::from("digraph schedule {\n  rankdir=LR;\n  node [shape=box];\n");
        for stage in Stage::ALL {
            let mut members: Vec<(SystemId, &PlannedSystem)> =
                self.all().filter(|(_, s)| s.stage == stage).collect();
            if members.is_empty() {
                continue;
            }
            // As in the dump: scheduled in order, then stopped, then disabled, each by hierarchy.
            members.sort_by_key(|&(id, s)| {
                let disabled = matches!(s.state, SystemState::Disabled);
                (
                    self.position(id).unwrap_or(u32::MAX),
                    disabled,
                    &s.hierarchy,
                    id,
                )
            });
            let _ = writeln!(
                out,
                "  subgraph cluster_{} {{\n    label=\"{stage}\";",
                stage.index()
            );
            for (id, system) in members {
                dot_node(&mut out, id, system);
            }
            out.push_str("  }\n");
        }
        for edge in &self.edges {
            let in_cycle = matches!(
                (self.state(edge.from), self.state(edge.to)),
                (Some(SystemState::Stopped { cycle: a }), Some(SystemState::Stopped { cycle: b })) if a == b
            );
            let style = if in_cycle { " [color=red]" } else { "" };
            let _ = writeln!(
                out,
                "  s{} -> s{}{style};",
                edge.from.index(),
                edge.to.index()
            );
        }
        out.push_str("}\n");
        out
    }

    /// Every system the plan was built with, by id.
    fn all(&self) -> impl Iterator<Item = (SystemId, &PlannedSystem)> {
        self.systems.iter().enumerate().filter_map(|(i, system)| {
            system
                .as_ref()
                .map(|system| (SystemId::from_index(i as u32), system))
        })
    }

    /// Why a scheduled system is where it is.
    fn why_here(&self, id: SystemId) -> String {
        let incoming: Vec<&Edge> = self
            .edges
            .iter()
            .filter(|edge| edge.to == id && self.position(edge.from).is_some())
            .collect();
        if incoming.is_empty() {
            return "hierarchy order".to_owned();
        }
        let mut parts: Vec<(u32, String)> = incoming
            .iter()
            .map(|edge| {
                let reasons: Vec<String> = self
                    .reasons(edge)
                    .iter()
                    .map(|reason| {
                        let declarer = self.system(reason.declared_by).map_or("?", |s| s.name());
                        let set = if reason.via_set { "set " } else { "" };
                        format!("{declarer} {} {set}{}", reason.relation, reason.target)
                    })
                    .collect();
                let from = self.system(edge.from).map_or("?", |s| s.name());
                (
                    self.position(edge.from).unwrap_or(u32::MAX),
                    format!("after {from} ({})", reasons.join(", ")),
                )
            })
            .collect();
        parts.sort();
        parts
            .into_iter()
            .map(|(_, part)| part)
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// One system's DOT node: its scheduled position and name, or its name styled as stopped or
/// disabled.
fn dot_node(out: &mut String, id: SystemId, system: &PlannedSystem) {
    let name = escape(&system.name);
    let _ = match system.state {
        SystemState::Scheduled { position } => {
            writeln!(out, "    s{} [label=\"{position} {name}\"];", id.index())
        }
        SystemState::Stopped { .. } => writeln!(
            out,
            "    s{} [label=\"{name}\", color=red, style=dashed];",
            id.index()
        ),
        SystemState::Disabled => writeln!(
            out,
            "    s{} [label=\"{name}\", color=grey, fontcolor=grey, style=dotted];",
            id.index()
        ),
    };
}

/// A name inside a DOT double-quoted string.
fn escape(name: &str) -> String {
    name.replace('\\', "\\\\").replace('"', "\\\"")
}
