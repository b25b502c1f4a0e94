//! Building a plan: names and sets resolved into edges, cycles found and stopped, each stage
//! ordered, reachability recorded.
//!
//! Invariant: a [`Plan`] is a pure function of the systems it was built from. Every edge joins
//! two enabled systems of the same stage; every scheduled system comes after all its scheduled
//! predecessors, and among the systems ready at a step the one first in hierarchy order (then
//! registration order) goes first. A system is scheduled, stopped (a member of exactly one
//! reported [`Cycle`]) or disabled, never two of these; a system whose declared edge joins it to
//! a stopped one stays scheduled, placed as if that edge were absent, and every such declaration
//! is reported. Reachability holds exactly the paths of
//! declared edges between scheduled systems: hierarchy order alone never makes two systems
//! ordered.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::ops::Range;
use std::sync::Arc;

use hashbrown::hash_map::Entry as MapEntry;
use hashbrown::{HashMap, HashSet};
use petgraph::algo::tarjan_scc;
use petgraph::graph::{DiGraph, NodeIndex};
use strata_mix::Fnv1a;

use crate::diagnostics::{Cycle, Declaration, Diagnostic, ScheduleDiagnostics};
use crate::reach::Reach;
use crate::system::{AsSystemId, HierarchyKey, Relation, Stage, System, SystemId};

/// Where a build put a system.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SystemState {
    /// Scheduled at `position` in the frame's global order (see [`Plan::position`]).
    Scheduled {
        /// The scheduled position.
        position: u32,
    },
    /// Stopped because it is in the cycle at this index of [`Plan::cycles`].
    Stopped {
        /// The cycle's index.
        cycle: usize,
    },
    /// Disabled: not part of the graph.
    Disabled,
}

/// One declaration that produced an edge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EdgeReason {
    /// The system that declared it.
    pub declared_by: SystemId,
    /// Whether it said `before` or `after`.
    pub relation: Relation,
    /// The target as written.
    pub target: Arc<str>,
    /// Whether the target was a set (the edge joins the declarer to one member).
    pub via_set: bool,
}

/// A declared ordering between two enabled systems of one stage: `from` runs before `to`.
/// [`Plan::reasons`] lists the declarations behind it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edge {
    /// The system that runs first.
    pub from: SystemId,
    /// The system that runs second.
    pub to: SystemId,
    /// This edge's slice of the plan's reasons.
    reasons: Range<u32>,
}

/// What a plan keeps about one system.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedSystem {
    pub(crate) name: Arc<str>,
    pub(crate) stage: Stage,
    pub(crate) hierarchy: HierarchyKey,
    pub(crate) interval: Option<f64>,
    pub(crate) sets: Arc<[Arc<str>]>,
    pub(crate) state: SystemState,
}

impl PlannedSystem {
    /// The system's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its stage.
    pub fn stage(&self) -> Stage {
        self.stage
    }

    /// Its hierarchy position.
    pub fn hierarchy(&self) -> &HierarchyKey {
        &self.hierarchy
    }

    /// Its interval in seconds, if any.
    pub fn interval(&self) -> Option<f64> {
        self.interval
    }

    /// The sets it belongs to.
    pub fn sets(&self) -> &[Arc<str>] {
        &self.sets
    }

    /// Where the build put it.
    pub fn state(&self) -> SystemState {
        self.state
    }
}

/// The result of a build: each stage's order, the edges, the stopped cycles, reachability and
/// diagnostics.
///
/// The *scheduled position* of a system is its index in [`Plan::order`], the frame's global run
/// order: stages in [`Stage::ALL`] order (`First`, `PreUpdate`, the fixed block's `FixedFirst` to
/// `FixedLast`, `Update`, `PostUpdate`, `Last`), each stage in its topological order. Positions
/// are dense from 0 and change only when the schedule is rebuilt; the parallel overlay uses them
/// as writer ranks.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    pub(crate) systems: Vec<Option<PlannedSystem>>,
    pub(crate) order: Vec<SystemId>,
    /// `stage_starts[s]..stage_starts[s + 1]` is stage `s`'s slice of `order`.
    pub(crate) stage_starts: [u32; Stage::COUNT + 1],
    pub(crate) edges: Vec<Edge>,
    /// The declarations behind the edges, edge by edge.
    pub(crate) reasons: Vec<EdgeReason>,
    pub(crate) cycles: Vec<Cycle>,
    pub(crate) reach: Vec<Reach>,
    pub(crate) diagnostics: ScheduleDiagnostics,
}

impl Plan {
    /// Every scheduled system in run order (the index is the scheduled position).
    pub fn order(&self) -> &[SystemId] {
        &self.order
    }

    /// The scheduled systems of one stage, in run order.
    pub fn stage_order(&self, stage: Stage) -> &[SystemId] {
        let s = stage.index();
        &self.order[self.stage_starts[s] as usize..self.stage_starts[s + 1] as usize]
    }

    /// The system's scheduled position, or `None` when it is stopped, disabled or unknown.
    pub fn position(&self, id: impl AsSystemId) -> Option<u32> {
        match self.system(id)?.state {
            SystemState::Scheduled { position } => Some(position),
            SystemState::Stopped { .. } | SystemState::Disabled => None,
        }
    }

    /// The system scheduled at `position`.
    pub fn system_at(&self, position: u32) -> Option<SystemId> {
        self.order.get(position as usize).copied()
    }

    /// What the plan knows about a system, or `None` for an id it was not built with.
    pub fn system(&self, id: impl AsSystemId) -> Option<&PlannedSystem> {
        let id = id.as_system_id()?;
        self.systems.get(id.index() as usize)?.as_ref()
    }

    /// Where the build put a system.
    pub fn state(&self, id: impl AsSystemId) -> Option<SystemState> {
        self.system(id).map(|system| system.state)
    }

    /// Whether the schedule declares an order between `a` and `b`, in either direction: both are
    /// scheduled, they are different systems, and either they run in different stages (the stage
    /// order orders them) or a path of declared edges leads from one to the other.
    ///
    /// Two systems of one stage that no declaration connects are *not* ordered, even though
    /// hierarchy order places one first: hierarchy order only breaks ties, it declares nothing.
    /// Stopped, disabled and unknown systems are ordered with nothing. Answers in O(1).
    ///
    /// Takes [`SystemId`]s or their `u64` form, so a closure
    /// `|a: u64, b: u64| plan.is_ordered(a, b)` (or [`Plan::order_oracle`]) serves as an
    /// order oracle.
    pub fn is_ordered(&self, a: impl AsSystemId, b: impl AsSystemId) -> bool {
        let (Some(a), Some(b)) = (a.as_system_id(), b.as_system_id()) else {
            return false;
        };
        a != b && (self.precedes(a, b) || self.precedes(b, a))
    }

    /// Whether the schedule declares that `a` runs before `b`: a path of declared edges from `a`
    /// to `b` in one stage, or `a`'s stage runs before `b`'s. O(1).
    pub fn precedes(&self, a: impl AsSystemId, b: impl AsSystemId) -> bool {
        match (self.located(a), self.located(b)) {
            (Some((stage_a, at_a)), Some((stage_b, at_b))) => {
                if stage_a != stage_b {
                    return stage_a < stage_b;
                }
                self.reach[stage_a].reaches(at_a, at_b)
            }
            _ => false,
        }
    }

    /// [`Plan::is_ordered`] as a closure over plain ids, for layers that take an order oracle
    /// (the parallel overlay wraps it in its `SystemOrder`, which asks only about systems).
    pub fn order_oracle(&self) -> impl Fn(u64, u64) -> bool + '_ {
        move |a, b| self.is_ordered(a, b)
    }

    /// Every edge, in the order its first declaration was met (declaring system, then `before`
    /// targets, then `after` targets, as written).
    pub fn edges(&self) -> &[Edge] {
        &self.edges
    }

    /// The declarations behind an edge of this plan, in declaration order (at least one).
    pub fn reasons(&self, edge: &Edge) -> &[EdgeReason] {
        self.reasons
            .get(edge.reasons.start as usize..edge.reasons.end as usize)
            .unwrap_or(&[])
    }

    /// The cycles whose systems were stopped, by stage, then by their first member's hierarchy
    /// order.
    pub fn cycles(&self) -> &[Cycle] {
        &self.cycles
    }

    /// The stopped systems, cycle by cycle.
    pub fn stopped(&self) -> impl Iterator<Item = SystemId> + '_ {
        self.cycles
            .iter()
            .flat_map(|cycle| cycle.members.iter().copied())
    }

    /// What the build noticed.
    pub fn diagnostics(&self) -> &ScheduleDiagnostics {
        &self.diagnostics
    }

    /// The stage index and the position within the stage of a scheduled system.
    fn located(&self, id: impl AsSystemId) -> Option<(usize, usize)> {
        let system = self.system(id)?;
        let SystemState::Scheduled { position } = system.state else {
            return None;
        };
        let stage = system.stage.index();
        Some((stage, (position - self.stage_starts[stage]) as usize))
    }
}

/// Builds the plan of `systems`, indexed by id (`None` for removed ids), in steps: index names
/// and sets, turn declarations into edges, stop the cycles, order each stage, collect the
/// diagnostics and assemble the planned systems.
pub(crate) fn build<B>(systems: &[Option<&System<B>>], shuffle: Option<u64>) -> Plan {
    let Index {
        names,
        sets,
        enabled,
    } = index(systems);
    // Declarations into edges. Each declaration gets an ordinal in the documented diagnostic
    // order; what it produced is kept with it, so diagnostics found after the cycles (edges to a
    // stopped system) take their place among the others.
    let Declared {
        edges,
        links,
        noted,
    } = declare(systems, &names, &sets, &enabled);
    let (edges, reasons) = edges.finish();
    let successors = Rows::new(
        systems.len(),
        edges
            .iter()
            .map(|edge| (edge.from.index() as usize, edge.to.index() as usize)),
    );
    let Cycles { cycles, stopped } = find_cycles(systems, &enabled, &edges, &successors);
    let Ordered {
        order,
        position,
        stage_starts,
        reach,
    } = order_stages(systems, &enabled, &stopped, &edges, &successors, shuffle);
    let diagnostics = diagnose(systems, noted, &links, &stopped, &cycles);
    Plan {
        systems: planned_systems(systems, &enabled, &stopped, &position),
        order,
        stage_starts,
        edges,
        reasons,
        cycles,
        reach,
        diagnostics,
    }
}

/// The lookups a build resolves declarations with.
struct Index<'a> {
    /// Each live system's index, by name.
    names: HashMap<&'a str, usize>,
    /// Each set's live members, in index order, by set name.
    sets: HashMap<&'a str, Vec<usize>>,
    /// Whether the system at each index is live and enabled.
    enabled: Vec<bool>,
}

/// The indexing step: returns every live system's index by name, every set's members, and
/// which systems are enabled.
fn index<'a, B>(systems: &[Option<&'a System<B>>]) -> Index<'a> {
    let mut names: HashMap<&str, usize> = HashMap::with_capacity(systems.len());
    let mut sets: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, system) in systems.iter().enumerate() {
        let Some(system) = system else { continue };
        names.insert(&system.name, i);
        for set in &system.sets {
            sets.entry(set).or_default().push(i);
        }
    }
    let enabled = systems
        .iter()
        .map(|system| system.is_some_and(|system| system.enabled))
        .collect();
    Index {
        names,
        sets,
        enabled,
    }
}

/// The stage of the system at index `i`, or `None` for a removed id.
fn stage_of<B>(systems: &[Option<&System<B>>], i: usize) -> Option<Stage> {
    systems[i].map(System::stage)
}

/// The name of the system at index `i`, or an empty string for a removed id.
fn name_of<B>(systems: &[Option<&System<B>>], i: usize) -> String {
    systems[i].map_or_else(String::new, |s| s.name.to_string())
}

/// The tie-break key of the live system at index `i`: a shuffle rank (zero unless the schedule
/// shuffles), then its hierarchy position, then its index (registration order).
fn order_key<'s, B>(
    systems: &[Option<&'s System<B>>],
    i: usize,
    shuffle: Option<u64>,
) -> (u64, &'s HierarchyKey, usize) {
    let system = systems[i].expect("only live systems take part in the graph");
    let rank = shuffle.map_or(0, |seed| shuffle_rank(seed, &system.name));
    (rank, &system.hierarchy, i)
}

/// A system's rank under a shuffle seed: a mix of the seed and the system's name, so a seed
/// gives the same order in every process and for every registration order.
///
/// The name is folded in with FNV-1a from a basis of the seed xor [`strata_mix::GAMMA`], then
/// finished with one round of MurmurHash3's `fmix64` (one multiplication, not its two). Seeded
/// orders are pinned by tests and replays, so the finish stays as it is.
fn shuffle_rank(seed: u64, name: &str) -> u64 {
    let mut hash = Fnv1a::with_basis(seed ^ strata_mix::GAMMA);
    hash.bytes(name.as_bytes());
    let mut h = hash.finish();
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^ (h >> 33)
}

/// The systems stopped in cycles.
struct Cycles {
    /// The cycles, by stage, then by their first member's hierarchy order.
    cycles: Vec<Cycle>,
    /// For each index, the cycle that stopped the system, if any.
    stopped: Vec<Option<usize>>,
}

/// The cycle step: finds the strongly connected components of more than one enabled system
/// (self edges are never added, so a single system is never a cycle) and returns them as
/// [`Cycle`] records in report order, with the cycle index of every stopped system.
fn find_cycles<B>(
    systems: &[Option<&System<B>>],
    enabled: &[bool],
    edges: &[Edge],
    successors: &Rows,
) -> Cycles {
    let n = systems.len();
    let mut graph: DiGraph<usize, ()> = DiGraph::with_capacity(n, edges.len());
    let mut node_of: Vec<Option<NodeIndex>> = vec![None; n];
    for i in (0..n).filter(|&i| enabled[i]) {
        node_of[i] = Some(graph.add_node(i));
    }
    for edge in edges {
        let (from, to) = (edge.from.index() as usize, edge.to.index() as usize);
        if let (Some(a), Some(b)) = (node_of[from], node_of[to]) {
            graph.add_edge(a, b, ());
        }
    }
    // Cycles are reported in hierarchy order, shuffled or not.
    let key = |i: usize| {
        let (_, hierarchy, index) = order_key(systems, i, None);
        (hierarchy, index)
    };
    let mut components: Vec<Vec<usize>> = tarjan_scc(&graph)
        .into_iter()
        .filter(|component| component.len() > 1)
        .map(|component| {
            let mut members: Vec<usize> = component.into_iter().map(|node| graph[node]).collect();
            members.sort_by_key(|&i| key(i));
            members
        })
        .collect();
    components.sort_by_key(|members| {
        let first = members[0];
        (stage_of(systems, first).map(Stage::index), key(first))
    });
    let mut stopped: Vec<Option<usize>> = vec![None; n];
    let mut cycles = Vec::with_capacity(components.len());
    for (c, members) in components.iter().enumerate() {
        for &i in members {
            stopped[i] = Some(c);
        }
        let chain = cycle_chain(members, successors, &key);
        cycles.push(Cycle {
            stage: stage_of(systems, members[0]).unwrap_or(Stage::Frame(crate::Phase::Update)),
            chain: chain.into_iter().map(id).collect(),
            members: members.iter().copied().map(id).collect(),
            names: members.iter().map(|&i| name_of(systems, i)).collect(),
        });
    }
    Cycles { cycles, stopped }
}

/// The scheduled systems in run order, stage by stage, with each stage's reachability.
struct Ordered {
    /// Every scheduled system in run order.
    order: Vec<SystemId>,
    /// For each index, the system's scheduled position, if it is scheduled.
    position: Vec<Option<u32>>,
    /// `stage_starts[s]..stage_starts[s + 1]` is stage `s`'s slice of `order`.
    stage_starts: [u32; Stage::COUNT + 1],
    /// Each stage's reachability, over positions within the stage.
    reach: Vec<Reach>,
}

/// The ordering step: puts each stage in topological order, ties broken by hierarchy order
/// (Kahn's algorithm over a priority queue), and records each stage's reachability. Only edges
/// between scheduled systems (enabled and not stopped) count. Returns the run order, every
/// system's position, where each stage starts, and the reachability of each stage.
fn order_stages<B>(
    systems: &[Option<&System<B>>],
    enabled: &[bool],
    stopped: &[Option<usize>],
    edges: &[Edge],
    successors: &Rows,
    shuffle: Option<u64>,
) -> Ordered {
    let n = systems.len();
    let key = |i: usize| order_key(systems, i, shuffle);
    let scheduled = |i: usize| enabled[i] && stopped[i].is_none();
    let mut waiting_on = vec![0_usize; n];
    for edge in edges {
        let (from, to) = (edge.from.index() as usize, edge.to.index() as usize);
        if scheduled(from) && scheduled(to) {
            waiting_on[to] += 1;
        }
    }
    let mut by_stage: Vec<Vec<usize>> = vec![Vec::new(); Stage::COUNT];
    for i in (0..n).filter(|&i| scheduled(i)) {
        if let Some(stage) = stage_of(systems, i) {
            by_stage[stage.index()].push(i);
        }
    }
    let mut order: Vec<SystemId> = Vec::with_capacity(n);
    let mut position: Vec<Option<u32>> = vec![None; n];
    let mut stage_starts = [0_u32; Stage::COUNT + 1];
    let mut reach = Vec::with_capacity(Stage::COUNT);
    let mut ready: BinaryHeap<Reverse<(u64, &HierarchyKey, usize)>> = BinaryHeap::new();
    let mut rows = StageRows::default();
    for (s, members) in by_stage.iter().enumerate() {
        let start = order.len();
        stage_starts[s] = start as u32;
        ready.extend(
            members
                .iter()
                .filter(|&&i| waiting_on[i] == 0)
                .map(|&i| Reverse(key(i))),
        );
        while let Some(Reverse((_, _, i))) = ready.pop() {
            position[i] = Some(order.len() as u32);
            order.push(id(i));
            for &next in successors.of(i) {
                if scheduled(next) {
                    waiting_on[next] -= 1;
                    if waiting_on[next] == 0 {
                        ready.push(Reverse(key(next)));
                    }
                }
            }
        }
        debug_assert_eq!(order.len() - start, members.len(), "cycles were removed");
        reach.push(rows.stage_reach(&order[start..], start, &position, successors));
    }
    stage_starts[Stage::COUNT] = order.len() as u32;
    Ordered {
        order,
        position,
        stage_starts,
        reach,
    }
}

/// Buffers for one stage's edges in local positions, reused from stage to stage.
#[derive(Default)]
struct StageRows {
    offsets: Vec<usize>,
    targets: Vec<usize>,
}

impl StageRows {
    /// The reachability step of one ordered stage: `stage_order` is the stage's slice of the
    /// run order, starting at position `start`. Returns the [`Reach`] of the stage's edges in
    /// positions local to the stage (edges to systems that are not scheduled are left out).
    fn stage_reach(
        &mut self,
        stage_order: &[SystemId],
        start: usize,
        position: &[Option<u32>],
        successors: &Rows,
    ) -> Reach {
        self.offsets.clear();
        self.targets.clear();
        self.offsets.push(0);
        for system in stage_order {
            let i = system.index() as usize;
            self.targets.extend(
                successors
                    .of(i)
                    .iter()
                    .filter_map(|&next| position[next].map(|p| p as usize - start)),
            );
            self.offsets.push(self.targets.len());
        }
        Reach::from_rows(stage_order.len(), &self.offsets, &self.targets)
    }
}

/// The diagnostics step: adds a warning for each declaration joining a running system to a
/// stopped one (the running one was ordered as if it were absent, so it says which order does
/// not hold) to the diagnostics `declare` noted, and returns them all in declaration order,
/// followed by the cycles.
fn diagnose<B>(
    systems: &[Option<&System<B>>],
    mut noted: Vec<(usize, Diagnostic)>,
    links: &[Link<'_>],
    stopped: &[Option<usize>],
    cycles: &[Cycle],
) -> ScheduleDiagnostics {
    noted.extend(links.iter().filter_map(|link| {
        link.stopped_neighbour(stopped, |i| name_of(systems, i))
            .map(|diagnostic| (link.ordinal, diagnostic))
    }));
    // A stable sort: within one declaration, the order the diagnostics were found.
    noted.sort_by_key(|(ordinal, _)| *ordinal);
    let mut diagnostics = ScheduleDiagnostics::default();
    for (_, diagnostic) in noted {
        diagnostics.push(diagnostic);
    }
    for cycle in cycles {
        diagnostics.push(Diagnostic::Cycle(cycle.clone()));
    }
    diagnostics
}

/// The assembly step: returns what the plan keeps about each system, indexed by id (`None` for
/// removed ids), with the state the build gave it.
fn planned_systems<B>(
    systems: &[Option<&System<B>>],
    enabled: &[bool],
    stopped: &[Option<usize>],
    position: &[Option<u32>],
) -> Vec<Option<PlannedSystem>> {
    systems
        .iter()
        .enumerate()
        .map(|(i, system)| {
            system.map(|system| PlannedSystem {
                name: Arc::clone(&system.name),
                stage: system.stage(),
                hierarchy: system.hierarchy.clone(),
                interval: system.interval,
                sets: system.sets.iter().cloned().collect(),
                state: match (enabled[i], stopped[i], position[i]) {
                    (false, _, _) => SystemState::Disabled,
                    (true, Some(cycle), _) => SystemState::Stopped { cycle },
                    (true, None, Some(position)) => SystemState::Scheduled { position },
                    (true, None, None) => unreachable!("every enabled acyclic system is ordered"),
                },
            })
        })
        .collect()
}

/// What the declarations of the enabled systems produced: the edges, each edge's declaration
/// (to report it if one end is stopped), and the diagnostics, each with its declaration's
/// ordinal in the documented diagnostic order.
#[derive(Default)]
struct Declared<'a> {
    edges: Edges,
    links: Vec<Link<'a>>,
    noted: Vec<(usize, Diagnostic)>,
}

/// One declaration being resolved: `declarer` said `relation` `target`.
struct Site<'a> {
    /// The declaration's place in the diagnostic order.
    ordinal: usize,
    declarer: usize,
    name: &'a Arc<str>,
    stage: Stage,
    relation: Relation,
    target: &'a Arc<str>,
}

impl Site<'_> {
    /// The declaration as diagnostics report it.
    fn declaration(&self) -> Declaration {
        Declaration {
            system: id(self.declarer),
            name: self.name.to_string(),
            relation: self.relation,
            target: self.target.to_string(),
        }
    }

    /// The diagnostic for a target `other` in another stage than the declarer's.
    fn cross_stage<B>(&self, systems: &[Option<&System<B>>], other: usize) -> Diagnostic {
        Diagnostic::CrossStage {
            declaration: self.declaration(),
            stage: self.stage,
            other: id(other),
            other_name: name_of(systems, other),
            other_stage: stage_of(systems, other).unwrap_or(self.stage),
        }
    }
}

impl<'a> Declared<'a> {
    /// Notes a diagnostic about the declaration at `site`.
    fn note(&mut self, site: &Site<'a>, diagnostic: Diagnostic) {
        self.noted.push((site.ordinal, diagnostic));
    }

    /// Adds the edge the declaration at `site` makes with `other`, and keeps the declaration.
    fn edge(&mut self, site: &Site<'a>, other: usize, via_set: bool) {
        self.edges
            .add(site.declarer, other, site.relation, site.target, via_set);
        self.links.push(Link {
            ordinal: site.ordinal,
            declarer: site.declarer,
            other,
            relation: site.relation,
            target: site.target,
        });
    }
}

/// Resolves every declaration's target to systems or set members and turns it into edges and
/// diagnostics. Edges join two enabled systems of one stage; everything else is noted.
fn declare<'a, B>(
    systems: &'a [Option<&System<B>>],
    names: &HashMap<&str, usize>,
    sets: &HashMap<&str, Vec<usize>>,
    enabled: &[bool],
) -> Declared<'a> {
    let mut declared = Declared::default();
    let mut ordinal = 0_usize;
    for (i, system) in systems.iter().enumerate() {
        let Some(system) = system.filter(|system| system.enabled) else {
            continue;
        };
        let declarations = [
            (Relation::Before, &system.before),
            (Relation::After, &system.after),
        ];
        for (relation, targets) in declarations {
            for target in targets {
                let site = Site {
                    ordinal,
                    declarer: i,
                    name: &system.name,
                    stage: system.stage(),
                    relation,
                    target,
                };
                ordinal += 1;
                if let Some(&other) = names.get(&**target) {
                    declare_on_system(&mut declared, &site, systems, enabled, other);
                } else if let Some(members) = sets.get(&**target) {
                    declare_on_set(&mut declared, &site, systems, enabled, members);
                } else {
                    declared.note(
                        &site,
                        Diagnostic::MissingTarget {
                            declaration: site.declaration(),
                        },
                    );
                }
            }
        }
    }
    declared
}

/// Resolves a declaration whose target names the system `other`: an edge when `other` is
/// another enabled system of the declarer's stage, a diagnostic otherwise.
fn declare_on_system<'a, B>(
    declared: &mut Declared<'a>,
    site: &Site<'a>,
    systems: &[Option<&System<B>>],
    enabled: &[bool],
    other: usize,
) {
    if other == site.declarer {
        declared.note(
            site,
            Diagnostic::SelfTarget {
                declaration: site.declaration(),
            },
        );
    } else if !enabled[other] {
        declared.note(
            site,
            Diagnostic::DisabledTarget {
                declaration: site.declaration(),
            },
        );
    } else if stage_of(systems, other) != Some(site.stage) {
        declared.note(site, site.cross_stage(systems, other));
    } else {
        declared.edge(site, other, false);
    }
}

/// Resolves a declaration whose target names a set: an edge to every other enabled member of
/// the declarer's stage, a diagnostic for each member in another stage, and one when no other
/// member is enabled.
fn declare_on_set<'a, B>(
    declared: &mut Declared<'a>,
    site: &Site<'a>,
    systems: &[Option<&System<B>>],
    enabled: &[bool],
    members: &[usize],
) {
    let (mut any_enabled, mut any_disabled) = (false, false);
    for &other in members.iter().filter(|&&other| other != site.declarer) {
        if !enabled[other] {
            any_disabled = true;
            continue;
        }
        any_enabled = true;
        if stage_of(systems, other) != Some(site.stage) {
            declared.note(site, site.cross_stage(systems, other));
        } else {
            declared.edge(site, other, true);
        }
    }
    if any_disabled && !any_enabled {
        declared.note(
            site,
            Diagnostic::DisabledTarget {
                declaration: site.declaration(),
            },
        );
    } else if !any_disabled && !any_enabled {
        // Sets exist only through their members, so the declarer is the only one.
        declared.note(
            site,
            Diagnostic::SelfOnlySet {
                declaration: site.declaration(),
            },
        );
    }
}

/// A declaration that produced an edge, kept to report it if one end is stopped.
struct Link<'a> {
    /// The declaration's place in the diagnostic order.
    ordinal: usize,
    declarer: usize,
    other: usize,
    relation: Relation,
    target: &'a Arc<str>,
}

impl Link<'_> {
    /// The warning for this declaration when it joins a running system to one stopped in a
    /// cycle; `None` when both run, or both are stopped (edges inside a cycle are reported with
    /// the cycle).
    fn stopped_neighbour(
        &self,
        stopped: &[Option<usize>],
        name_of: impl Fn(usize) -> String,
    ) -> Option<Diagnostic> {
        let (stopped_at, cycle, running) = match (stopped[self.declarer], stopped[self.other]) {
            (Some(cycle), None) => (self.declarer, cycle, self.other),
            (None, Some(cycle)) => (self.other, cycle, self.declarer),
            _ => return None,
        };
        Some(Diagnostic::StoppedNeighbour {
            declaration: Declaration {
                system: id(self.declarer),
                name: name_of(self.declarer),
                relation: self.relation,
                target: self.target.to_string(),
            },
            stopped: id(stopped_at),
            stopped_name: name_of(stopped_at),
            cycle,
            running: id(running),
            running_name: name_of(running),
        })
    }
}

/// The id of the system at index `i` (indices come from a `Vec` of at most `u32::MAX` systems).
fn id(i: usize) -> SystemId {
    SystemId::from_index(i as u32)
}

/// Edges being collected, one per ordered pair, with all the declarations behind each.
#[derive(Default)]
struct Edges {
    pairs: Vec<(usize, usize)>,
    at: HashMap<(usize, usize), u32>,
    /// Each reason with the index of its edge.
    reasons: Vec<(u32, EdgeReason)>,
}

impl Edges {
    fn add(
        &mut self,
        declarer: usize,
        other: usize,
        relation: Relation,
        target: &Arc<str>,
        via_set: bool,
    ) {
        let (from, to) = match relation {
            Relation::Before => (declarer, other),
            Relation::After => (other, declarer),
        };
        let edge = match self.at.entry((from, to)) {
            MapEntry::Occupied(at) => *at.get(),
            MapEntry::Vacant(at) => {
                let edge = self.pairs.len() as u32;
                at.insert(edge);
                self.pairs.push((from, to));
                edge
            }
        };
        self.reasons.push((
            edge,
            EdgeReason {
                declared_by: id(declarer),
                relation,
                target: Arc::clone(target),
                via_set,
            },
        ));
    }

    /// The edges, and their reasons grouped edge by edge in declaration order.
    fn finish(mut self) -> (Vec<Edge>, Vec<EdgeReason>) {
        // A stable sort keeps each edge's reasons in declaration order.
        self.reasons.sort_by_key(|&(edge, _)| edge);
        let mut edges: Vec<Edge> = self
            .pairs
            .iter()
            .map(|&(from, to)| Edge {
                from: id(from),
                to: id(to),
                reasons: 0..0,
            })
            .collect();
        for (at, (edge, _)) in self.reasons.iter().enumerate() {
            let range = &mut edges[*edge as usize].reasons;
            if range.start == range.end {
                range.start = at as u32;
            }
            range.end = at as u32 + 1;
        }
        let reasons = self.reasons.into_iter().map(|(_, reason)| reason).collect();
        (edges, reasons)
    }
}

/// Adjacency in compressed rows: the successors of system `i` are
/// `targets[offsets[i]..offsets[i + 1]]`.
struct Rows {
    offsets: Vec<usize>,
    targets: Vec<usize>,
}

impl Rows {
    fn new(n: usize, pairs: impl Iterator<Item = (usize, usize)> + Clone) -> Rows {
        let mut offsets = vec![0_usize; n + 1];
        for (from, _) in pairs.clone() {
            offsets[from + 1] += 1;
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        let mut fill = offsets.clone();
        let mut targets = vec![0_usize; offsets[n]];
        for (from, to) in pairs {
            targets[fill[from]] = to;
            fill[from] += 1;
        }
        Rows { offsets, targets }
    }

    fn of(&self, i: usize) -> &[usize] {
        &self.targets[self.offsets[i]..self.offsets[i + 1]]
    }
}

/// A closed walk through a strongly connected component: from its first member in hierarchy
/// order, the shortest way back (breadth first, successors in hierarchy order).
fn cycle_chain<'k>(
    members: &[usize],
    successors: &Rows,
    key: &impl Fn(usize) -> (&'k HierarchyKey, usize),
) -> Vec<usize> {
    let inside: HashSet<usize> = members.iter().copied().collect();
    let start = members[0];
    let mut came_from: HashMap<usize, usize> = HashMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(at) = queue.pop_front() {
        let mut next: Vec<usize> = successors
            .of(at)
            .iter()
            .copied()
            .filter(|next| inside.contains(next))
            .collect();
        next.sort_by_key(|&i| key(i));
        for next in next {
            if next == start {
                let mut chain = vec![at];
                let mut back = at;
                while back != start {
                    back = came_from[&back];
                    chain.push(back);
                }
                chain.reverse();
                return chain;
            }
            if let MapEntry::Vacant(seen) = came_from.entry(next) {
                seen.insert(at);
                queue.push_back(next);
            }
        }
    }
    // A strongly connected component always leads back to its start; keep the members if a
    // future change ever broke that.
    members.to_vec()
}

#[cfg(test)]
mod tests {
    use super::shuffle_rank;

    /// Shuffle ranks are pinned: seeded orders must not change when the hashing moves between
    /// crates (values computed with the formula as it stood before `strata-mix`).
    #[test]
    fn shuffle_ranks_are_pinned() {
        assert_eq!(shuffle_rank(0, ""), 0x9341_ca26_3702_a9e6);
        assert_eq!(shuffle_rank(1, "physics"), 0x536b_dafa_3bcd_983f);
        assert_eq!(
            shuffle_rank(0xdead_beef, "Render/Sprites"),
            0x7587_bbe6_b965_ba13
        );
    }
}
