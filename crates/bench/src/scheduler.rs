//! Workloads of the system scheduler (`strata-scheduler`): building a plan from many systems and
//! declarations, and running one frame of many small systems.
//!
//! Invariant: every workload creates its systems outside the timed routine and times only the
//! build or the frame its name describes; the build workload starts each sample from a schedule
//! that has never been built. Fixtures are checked once before timing (edge count, no
//! diagnostics, calls per frame), so a workload never measures a degenerate case by mistake.

use std::convert::Infallible;
use std::hint::black_box;

use strata_scheduler::{HierarchyKey, Phase, Schedule, System};

use crate::harness::Workload;

/// The scheduler workloads, in run order.
pub fn workloads() -> Vec<Workload> {
    vec![build(1_000, 3_000), frame(200)]
}

#[track_caller]
fn must<T, E: std::fmt::Display>(result: Result<T, E>) -> T {
    match result {
        Ok(value) => value,
        Err(error) => panic!("scheduler workload failed: {error}"),
    }
}

#[track_caller]
fn expect(what: &str, got: usize, want: usize) {
    if got != want {
        panic!("scheduler workload: {what} is {got}, expected {want}");
    }
}

/// A small deterministic generator (xorshift64*), so every run builds the same graph.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

/// `n_systems` systems in one phase with `n_edges` distinct `after` declarations, each from a
/// system to an earlier one (so the graph has no cycle), and shuffled hierarchy positions so
/// the tie-break has work to do.
fn declared(n_systems: usize, n_edges: usize) -> Vec<System<u32>> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut afters: Vec<Vec<usize>> = vec![Vec::new(); n_systems];
    let mut placed = 0;
    while placed < n_edges {
        let later = 1 + rng.below(n_systems as u64 - 1) as usize;
        let earlier = rng.below(later as u64) as usize;
        if !afters[later].contains(&earlier) {
            afters[later].push(earlier);
            placed += 1;
        }
    }
    afters
        .into_iter()
        .enumerate()
        .map(|(i, targets)| {
            let key = HierarchyKey::path([rng.below(16) as u32, rng.below(64) as u32]);
            let mut system = System::new(format!("system_{i}"), i as u32).with_hierarchy(key);
            for target in targets {
                system = system.after(format!("system_{target}"));
            }
            system
        })
        .collect()
}

fn fresh(systems: &[System<u32>]) -> Schedule<u32> {
    let mut schedule = Schedule::new();
    for system in systems {
        must(schedule.add(system.clone()));
    }
    schedule
}

fn build(n_systems: usize, n_edges: usize) -> Workload {
    Workload::new(
        "scheduler_build_1000_systems_3000_edges",
        n_systems as u64,
        "names to petgraph edges, tarjan_scc, hierarchy-keyed Kahn per stage, bitset reachability",
        move |b| {
            let systems = declared(n_systems, n_edges);
            let mut check = fresh(&systems);
            let plan = check.build();
            expect("edges", plan.edges().len(), n_edges);
            expect("scheduled systems", plan.order().len(), n_systems);
            expect("diagnostics", plan.diagnostics().len(), 0);
            b.iter_with_setup(
                || fresh(&systems),
                |schedule| schedule.build().order().len(),
            );
        },
    )
}

fn frame(n_systems: usize) -> Workload {
    Workload::new(
        "scheduler_frame_200_systems",
        n_systems as u64,
        "plan order per stage, one fixed step, interval bookkeeping, timed body calls with stats",
        move |b| {
            // Spread over the phases and the fixed block, with a chain of declarations in each
            // phase and a few interval systems.
            let mut schedule: Schedule<u64> = Schedule::new();
            for i in 0..n_systems {
                let phase = Phase::ALL[i % Phase::ALL.len()];
                let mut system = System::new(format!("system_{i}"), 0_u64)
                    .in_phase(phase)
                    .with_hierarchy(i as u32);
                if i >= Phase::ALL.len() {
                    system = system.after(format!("system_{}", i - Phase::ALL.len()));
                }
                if i % 10 == 3 {
                    system = system.in_fixed_block();
                }
                if i % 25 == 7 {
                    system = system.with_interval(0.05);
                }
                must(schedule.add(system));
            }
            let dt = 1.0 / 60.0;
            let report = must(schedule.run_frame(dt, |_, body, _| {
                *body += 1;
                Ok::<(), Infallible>(())
            }));
            expect("fixed steps", report.fixed_steps as usize, 1);
            b.iter(|| {
                let report = schedule.run_frame(black_box(dt), |_, body, ctx| {
                    *body += 1;
                    ctx.add_visited_rows(1);
                    Ok::<(), Infallible>(())
                });
                must(report).runs
            });
        },
    )
}
