//! Property test: random systems, sets and declarations, checked against a brute-force model.
//!
//! The model resolves every declaration itself (a system name, every other member of a set,
//! skipping disabled and other-stage targets), computes the transitive closure of the resulting
//! graph with Warshall's algorithm on a boolean matrix, and from it derives which systems lie on a
//! cycle and which pairs of scheduled systems are ordered. The plan must agree: the same edges;
//! stopped exactly the systems on a cycle, each in a reported cycle whose chain follows edges;
//! every edge between scheduled systems respected by the order; ties taken greedily in hierarchy
//! order; `is_ordered` equal to the model's answer for every pair; a frame calling the bodies in
//! exactly the plan's order; one warning per declaration and edge joining a scheduled system to a
//! stopped one; and one per set target whose only member is the declarer.

#![allow(
    clippy::unwrap_used,
    reason = "a test fails by panicking; an unexpected error is a failure"
)]

use std::collections::HashSet;

use proptest::prelude::*;
use strata_scheduler::{
    Diagnostic, FixedStep, HierarchyKey, Phase, Relation, Schedule, Stage, System, SystemId,
    SystemState,
};

const SETS: [&str; 3] = ["alpha", "beta", "gamma"];
const STAGES: [Stage; 3] = [
    Stage::Frame(Phase::Update),
    Stage::Frame(Phase::PreUpdate),
    Stage::Fixed(Phase::Update),
];

#[derive(Clone, Debug)]
enum Target {
    System(usize),
    Set(usize),
    Missing,
}

#[derive(Clone, Debug)]
struct Spec {
    stage: usize,
    key: Vec<u32>,
    sets: Vec<usize>,
    before: Vec<Target>,
    after: Vec<Target>,
    enabled: bool,
}

fn target() -> impl Strategy<Value = Target> {
    prop_oneof![
        6 => (0..32_usize).prop_map(Target::System),
        2 => (0..SETS.len()).prop_map(Target::Set),
        1 => Just(Target::Missing),
    ]
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        prop_oneof![6 => Just(0_usize), 1 => Just(1_usize), 1 => Just(2_usize)],
        prop::collection::vec(0..3_u32, 0..3),
        prop::collection::vec(0..SETS.len(), 0..2),
        prop::collection::vec(target(), 0..3),
        prop::collection::vec(target(), 0..3),
        prop::bool::weighted(0.9),
    )
        .prop_map(|(stage, key, sets, before, after, enabled)| Spec {
            stage,
            key,
            sets,
            before,
            after,
            enabled,
        })
}

fn name(i: usize) -> String {
    format!("s{i}")
}

fn target_name(target: &Target, n: usize) -> String {
    match target {
        Target::System(i) => name(i % n),
        Target::Set(s) => SETS[*s].to_owned(),
        Target::Missing => "ghost".to_owned(),
    }
}

/// The edges the model expects, as (from, to).
fn model_edges(specs: &[Spec]) -> HashSet<(usize, usize)> {
    let n = specs.len();
    let mut edges = HashSet::new();
    for (s, spec) in specs.iter().enumerate().filter(|(_, spec)| spec.enabled) {
        for (before, targets) in [(true, &spec.before), (false, &spec.after)] {
            for target in targets {
                let others: Vec<usize> = match target {
                    Target::System(i) => vec![i % n],
                    Target::Set(set) => (0..n).filter(|&t| specs[t].sets.contains(set)).collect(),
                    Target::Missing => Vec::new(),
                };
                for t in others {
                    if t != s && specs[t].enabled && specs[t].stage == spec.stage {
                        edges.insert(if before { (s, t) } else { (t, s) });
                    }
                }
            }
        }
    }
    edges
}

/// Reflexive-free transitive closure: `closure[a][b]` iff a path of one or more edges leads
/// from a to b.
fn closure(n: usize, edges: impl Iterator<Item = (usize, usize)>) -> Vec<Vec<bool>> {
    let mut reach = vec![vec![false; n]; n];
    for (a, b) in edges {
        reach[a][b] = true;
    }
    for k in 0..n {
        let through = reach[k].clone();
        for row in &mut reach {
            if row[k] {
                for (cell, &onward) in row.iter_mut().zip(&through) {
                    *cell |= onward;
                }
            }
        }
    }
    reach
}

fn build(specs: &[Spec]) -> Schedule<usize> {
    let n = specs.len();
    let mut schedule = Schedule::with_fixed_step(FixedStep::new(0.5, 1).unwrap());
    for (i, spec) in specs.iter().enumerate() {
        let mut system = System::new(name(i), i)
            .in_phase(STAGES[spec.stage].phase())
            .with_hierarchy(HierarchyKey::path(spec.key.clone()));
        if STAGES[spec.stage].is_fixed() {
            system = system.in_fixed_block();
        }
        for &set in &spec.sets {
            system = system.in_set(SETS[set]);
        }
        for target in &spec.before {
            system = system.before(target_name(target, n));
        }
        for target in &spec.after {
            system = system.after(target_name(target, n));
        }
        if !spec.enabled {
            system = system.disabled();
        }
        schedule.add(system).unwrap();
    }
    schedule
}

fn check(specs: &[Spec]) -> Result<(), TestCaseError> {
    let n = specs.len();
    let mut schedule = build(specs);
    schedule.build();
    let plan = schedule.plan();
    let id = |i: usize| SystemId::from_index(i as u32);
    let sort_key = |i: usize| (HierarchyKey::path(specs[i].key.clone()), i);

    // The same edges.
    let want = model_edges(specs);
    let got: HashSet<(usize, usize)> = plan
        .edges()
        .iter()
        .map(|edge| (edge.from.index() as usize, edge.to.index() as usize))
        .collect();
    prop_assert_eq!(&got, &want);
    prop_assert_eq!(got.len(), plan.edges().len(), "one edge per ordered pair");
    for edge in plan.edges() {
        let reasons = plan.reasons(edge);
        prop_assert!(!reasons.is_empty());
        for reason in reasons {
            let declarer = match reason.relation {
                Relation::Before => edge.from,
                Relation::After => edge.to,
            };
            prop_assert_eq!(reason.declared_by, declarer);
        }
    }

    // Stopped exactly the systems on a cycle; each in a reported cycle whose chain follows
    // edges and whose members are mutually reachable.
    let all = closure(n, want.iter().copied());
    let on_cycle = |v: usize| all[v][v];
    let mut in_reported = vec![false; n];
    for (c, cycle) in plan.cycles().iter().enumerate() {
        prop_assert!(cycle.members.len() > 1);
        for &member in &cycle.members {
            let m = member.index() as usize;
            prop_assert!(!in_reported[m], "{} is in two cycles", m);
            in_reported[m] = true;
            prop_assert_eq!(plan.state(member), Some(SystemState::Stopped { cycle: c }));
            for &other in &cycle.members {
                let o = other.index() as usize;
                prop_assert!(m == o || (all[m][o] && all[o][m]));
            }
        }
        prop_assert_eq!(
            cycle.chain[0],
            cycle.members[0],
            "the chain starts at the first member"
        );
        for (k, &from) in cycle.chain.iter().enumerate() {
            let to = cycle.chain[(k + 1) % cycle.chain.len()];
            prop_assert!(want.contains(&(from.index() as usize, to.index() as usize)));
        }
    }
    for (i, spec) in specs.iter().enumerate() {
        let state = plan.state(id(i)).unwrap();
        match state {
            SystemState::Disabled => prop_assert!(!spec.enabled),
            SystemState::Stopped { .. } => {
                prop_assert!(spec.enabled && on_cycle(i) && in_reported[i]);
            }
            SystemState::Scheduled { .. } => prop_assert!(spec.enabled && !on_cycle(i)),
        }
    }
    let cycle_errors = plan
        .diagnostics()
        .iter()
        .filter(|diagnostic| matches!(diagnostic, Diagnostic::Cycle(_)))
        .count();
    prop_assert_eq!(cycle_errors, plan.cycles().len());

    // Declarations whose edge joins a scheduled system to a stopped one, and set targets whose
    // only member is the declarer, each reported once per declaration (and stopped member).
    let (mut want_stopped, mut want_self_only) = (Vec::new(), Vec::new());
    for (s, spec) in specs.iter().enumerate().filter(|(_, spec)| spec.enabled) {
        for (relation, targets) in [
            (Relation::Before, &spec.before),
            (Relation::After, &spec.after),
        ] {
            for target in targets {
                let text = target_name(target, n);
                let others: Vec<usize> = match target {
                    Target::System(i) => vec![i % n],
                    Target::Set(set) => {
                        let members: Vec<usize> =
                            (0..n).filter(|&t| specs[t].sets.contains(set)).collect();
                        if members == [s] {
                            want_self_only.push((s, relation, text.clone()));
                        }
                        members
                    }
                    Target::Missing => Vec::new(),
                };
                for t in others {
                    if t == s || !specs[t].enabled || specs[t].stage != spec.stage {
                        continue;
                    }
                    match (on_cycle(s), on_cycle(t)) {
                        (true, false) => want_stopped.push((s, relation, text.clone(), s, t)),
                        (false, true) => want_stopped.push((s, relation, text.clone(), t, s)),
                        _ => {}
                    }
                }
            }
        }
    }
    let (mut got_stopped, mut got_self_only) = (Vec::new(), Vec::new());
    for diagnostic in plan.diagnostics() {
        match diagnostic {
            Diagnostic::StoppedNeighbour {
                declaration,
                stopped,
                cycle,
                running,
                ..
            } => {
                prop_assert_eq!(
                    plan.state(*stopped),
                    Some(SystemState::Stopped { cycle: *cycle })
                );
                got_stopped.push((
                    declaration.system.index() as usize,
                    declaration.relation,
                    declaration.target.clone(),
                    stopped.index() as usize,
                    running.index() as usize,
                ));
            }
            Diagnostic::SelfOnlySet { declaration } => got_self_only.push((
                declaration.system.index() as usize,
                declaration.relation,
                declaration.target.clone(),
            )),
            _ => {}
        }
    }
    // Both lists come in declaration order, by declaring system.
    prop_assert_eq!(got_stopped, want_stopped);
    prop_assert_eq!(got_self_only, want_self_only);

    // Every edge between scheduled systems is respected, and stages run in order.
    let position = |i: usize| plan.position(id(i));
    for &(from, to) in &want {
        if let (Some(a), Some(b)) = (position(from), position(to)) {
            prop_assert!(a < b, "s{} at {} must precede s{} at {}", from, a, to, b);
        }
    }
    for pair in plan.order().windows(2) {
        let stage = |system: SystemId| plan.system(system).unwrap().stage().index();
        prop_assert!(stage(pair[0]) <= stage(pair[1]));
    }

    // Greedy ties: a system placed before one that comes first in hierarchy order was placed
    // while that one still waited on a predecessor not yet placed.
    let scheduled: Vec<usize> = plan.order().iter().map(|s| s.index() as usize).collect();
    for (px, &x) in scheduled.iter().enumerate() {
        for &y in &scheduled[px + 1..] {
            if specs[x].stage != specs[y].stage || sort_key(y) > sort_key(x) {
                continue;
            }
            let held_back = want
                .iter()
                .any(|&(p, to)| to == y && position(p).is_some_and(|pp| pp as usize >= px));
            prop_assert!(held_back, "s{} ran before s{} without a reason", x, y);
        }
    }

    // Reachability over scheduled systems only, in O(1) per query.
    let scheduled_set: HashSet<usize> = scheduled.iter().copied().collect();
    let live = closure(
        n,
        want.iter()
            .copied()
            .filter(|(a, b)| scheduled_set.contains(a) && scheduled_set.contains(b)),
    );
    for a in 0..n {
        for b in 0..n {
            let expected = a != b
                && scheduled_set.contains(&a)
                && scheduled_set.contains(&b)
                && (specs[a].stage != specs[b].stage || live[a][b] || live[b][a]);
            prop_assert_eq!(plan.is_ordered(id(a), id(b)), expected, "s{} s{}", a, b);
            prop_assert_eq!(plan.is_ordered(a as u64, b as u64), expected);
        }
    }

    // A frame that runs one fixed step calls the bodies in exactly the plan's order.
    let order: Vec<usize> = scheduled.clone();
    let mut calls = Vec::new();
    schedule
        .run_frame(0.5, |_, body, _| {
            calls.push(*body);
            Ok::<(), ()>(())
        })
        .unwrap();
    prop_assert_eq!(calls, order);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn plans_agree_with_the_model(specs in prop::collection::vec(spec(), 1..24)) {
        check(&specs)?;
    }
}

/// The generator is worth trusting only if it produces the cases the properties are about.
#[test]
fn the_generator_produces_cycles_ties_and_every_diagnostic() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    let mut runner = TestRunner::deterministic();
    let (mut cycles, mut edges, mut cross, mut missing, mut disabled) = (0, 0, 0, 0, 0);
    let (mut stopped, mut self_only) = (0, 0);
    for _ in 0..256 {
        let specs = prop::collection::vec(spec(), 1..24)
            .new_tree(&mut runner)
            .unwrap()
            .current();
        let mut schedule = build(&specs);
        let plan = schedule.build();
        cycles += plan.cycles().len();
        edges += plan.edges().len();
        for diagnostic in plan.diagnostics() {
            match diagnostic {
                Diagnostic::CrossStage { .. } => cross += 1,
                Diagnostic::MissingTarget { .. } => missing += 1,
                Diagnostic::DisabledTarget { .. } => disabled += 1,
                Diagnostic::StoppedNeighbour { .. } => stopped += 1,
                Diagnostic::SelfOnlySet { .. } => self_only += 1,
                _ => {}
            }
        }
    }
    for (what, count) in [
        ("cycles", cycles),
        ("edges", edges),
        ("cross-stage notes", cross),
        ("missing targets", missing),
        ("disabled targets", disabled),
        ("declarations against stopped systems", stopped),
        ("sets of the declarer alone", self_only),
    ] {
        assert!(count >= 20, "only {count} {what} in 256 cases");
    }
}
