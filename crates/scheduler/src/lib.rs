//! Strata's system scheduler: systems and named sets in fixed phases, a dependency graph built
//! from `before`/`after` declarations, cycles stopped and reported, a hierarchy-ordered plan
//! with reachability, interval systems, a fixed-step block and per-system statistics.
//!
//! The crate depends on no other Strata crate but the internal `strata-mix` (for shuffle ranks).
//! A [`Schedule<B>`](Schedule) holds [`System`]s
//! whose bodies are of any type `B`; it never calls a body itself, so the layer that runs
//! systems (the engine's Luau scripts, plain Rust closures) stays outside.
//!
//! Building a [`Plan`] resolves each declaration's target, a system or every member of a set,
//! into edges of a graph of the enabled systems. Targets in another stage are already ordered
//! by the stage order and only noted; missing and disabled targets are diagnostics, never
//! invented nodes, and so is a set target whose only member is the declarer. Systems in a
//! strongly connected component of more than one are stopped and the cycle is reported; every
//! other system is scheduled, including one ordered against a stopped system: it keeps its place
//! as if that declaration were absent, and the declaration is reported with the stopped system's
//! name ([`Diagnostic::StoppedNeighbour`]). Each stage is ordered by Kahn's
//! algorithm, taking among the ready systems the first in hierarchy order ([`HierarchyKey`]),
//! and reachability is recorded so that [`Plan::is_ordered`] answers in constant time whether
//! declarations order two systems. A system's scheduled position ([`Plan::position`]) is its
//! index in the frame's run order.
//!
//! [`Schedule::run_frame`] runs the stages in order ([`Stage::ALL`]; the fixed-step block sits
//! between `PreUpdate` and `Update`), handing each due body to the caller's closure with a
//! [`RunCtx`] through which it reports component reads, field writes and visited rows.
//!
//! # Example
//!
//! ```
//! use std::convert::Infallible;
//! use strata_scheduler::{Phase, Schedule, Severity, System};
//!
//! // Bodies here are labels; an engine would store script handles or closures.
//! let mut schedule: Schedule<&str> = Schedule::new();
//! let input = schedule.add(System::new("input", "read input").in_phase(Phase::PreUpdate))?;
//! let integrate = schedule.add(System::new("integrate", "move").in_set("physics").with_hierarchy(2))?;
//! let collide = schedule.add(System::new("collide", "collide").in_set("physics").with_hierarchy(1).after("integrate"))?;
//! let sound = schedule.add(System::new("sound", "play").with_hierarchy(0))?;
//! let hud = schedule.add(System::new("hud", "draw").after("physics").after("input").with_interval(0.5))?;
//!
//! let plan = schedule.build();
//! let names: Vec<&str> = plan.order().iter().map(|&id| plan.system(id).unwrap().name()).collect();
//! assert_eq!(names, ["input", "sound", "integrate", "collide", "hud"]);
//! assert!(plan.is_ordered(integrate, hud), "declared through the set");
//! assert!(plan.is_ordered(input, hud), "different phases");
//! assert!(!plan.is_ordered(sound, collide), "only hierarchy order separates them");
//! assert_eq!(plan.position(collide), Some(3));
//! // `hud` after `input` crosses phases: noted, and no edge is needed.
//! assert_eq!(plan.diagnostics().count(Severity::Info), 1);
//!
//! let mut ran = Vec::new();
//! for _ in 0..3 {
//!     schedule.run_frame(0.25, |_, body: &mut &str, ctx| {
//!         ran.push((*body, ctx.dt()));
//!         ctx.add_visited_rows(10);
//!         Ok::<(), Infallible>(())
//!     })?;
//! }
//! // `draw` ran once, in the second frame, with the half second it waited.
//! assert_eq!(ran.iter().filter(|(body, _)| *body == "draw").collect::<Vec<_>>(), [&("draw", 0.5)]);
//! assert_eq!(schedule.stats(hud)?.runs, 1);
//! assert_eq!(schedule.stats(sound)?.visited_rows, 30);
//! # Ok::<(), strata_scheduler::ScheduleError>(())
//! ```
//!
//! # Rules the plan keeps
//!
//! - A build never fails and never invents a node: an edge joins two enabled systems of one
//!   stage; every enabled system is either scheduled or stopped as a member of exactly one
//!   reported cycle. A declaration joined to a stopped system, in either direction, is a
//!   `StoppedNeighbour` warning naming the stopped system, its cycle and the system that runs
//!   without the order (one per stopped member of a set target). Orderings through a stopped or
//!   disabled system are not kept between its neighbours. Diagnostics come in declaration order
//!   (declaring system, `before` then `after` targets as written), then the cycles.
//! - Within a stage a system runs after every scheduled predecessor, and among the ready systems
//!   the first by `HierarchyKey`, then by `SystemId`, goes first. A system's scheduled position
//!   runs through the frame: `First`, `PreUpdate`, the fixed block (`FixedFirst` to `FixedLast`,
//!   one stage per phase, so fixed systems are ordered within a step as frame systems are),
//!   `Update`, `PostUpdate`, `Last`. The parallel overlay ranks system writers by it.
//! - `Plan::is_ordered(a, b)` is true exactly when a and b are distinct scheduled systems in
//!   different stages, or a path of declared edges joins them; hierarchy order alone never
//!   counts. It answers from the stage's bit matrix (`reach.rs`).
//! - An interval system adds its stage's time (the frame's, or the fixed step's) to its wait and
//!   runs once with all of it when that reaches its interval; a long frame never causes
//!   catch-up runs. The fixed block runs `min(floor((carried + dt) / step), max_steps)` steps,
//!   carries the fraction left over, and drops and reports whole steps beyond the limit, so one
//!   slow frame cannot make every later frame run at the limit. Statistics change only when a
//!   body is called; a system's duration is timed from the previous call's end, one clock read
//!   per call.
//! - `Schedule::set_shuffle` ranks systems by a mix of a seed and their names before hierarchy
//!   order: it reorders what no declaration orders and keeps every declared order, for tests.
//!
//! petgraph (`tarjan_scc`) is linked by this crate only, and no petgraph type appears in its
//! API. Start reading at `plan.rs` (`build`: targets resolved, cycles found, Kahn's algorithm per
//! stage over a priority queue), then `Schedule::run_frame` in `schedule.rs`; `inspect.rs` holds
//! `Plan::dump` and `Plan::to_dot`.

#![warn(clippy::missing_errors_doc, clippy::missing_panics_doc)]

mod diagnostics;
mod error;
mod inspect;
mod plan;
mod reach;
mod schedule;
mod stats;
mod system;

pub use crate::diagnostics::{Cycle, Declaration, Diagnostic, ScheduleDiagnostics, Severity};
pub use crate::error::ScheduleError;
pub use crate::plan::{Edge, EdgeReason, Plan, PlannedSystem, SystemState};
pub use crate::schedule::{Due, FixedStep, FrameReport, RunCtx, Schedule};
pub use crate::stats::SystemStats;
pub use crate::system::{AsSystemId, HierarchyKey, Phase, Relation, Stage, System, SystemId};
