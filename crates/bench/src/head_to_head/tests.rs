//! The checks of the work done that every library shares, written once over [`Library`], and
//! the table's own properties. Each library's module checks what only its API can show (the
//! ticks it sets, the archetypes it keeps, what its world holds afterwards).

use std::time::Duration;

use super::*;
use crate::data::{ROLLBACK_CHURN, ROLLBACK_WINDOW, big, is_small, is_written, position, tally};
use crate::harness::SampleConfig;
use crate::query::Strata;

/// A configuration that finishes at once: the warm-up and one sample.
fn tiny() -> SampleConfig {
    SampleConfig {
        min_samples: 1,
        budget: Duration::ZERO,
        max_samples: 1,
    }
}

/// What a changed visit over a world of `n` positions (`position(i)`) returns right after
/// frame `frame` nudged its rows: those rows, and the sum of their new `x`.
pub(crate) fn written_tally(n: u64, frame: u64) -> (u64, f32) {
    tally((0..n).filter(|&i| is_written(i, frame)).map(|i| {
        let mut p = position(i);
        p.nudge();
        p.x
    }))
}

/// Whether `L` does `work`, so its fixture may be built.
fn does<L: Library>(work: Work) -> bool {
    matches!(L::mechanism(work), Mechanism::Does(_))
}

/// When the change window of a library's `changed_filter` closes, which decides what a
/// second visit right after a first sees.
#[derive(Clone, Copy)]
#[cfg_attr(
    not(feature = "peers"),
    expect(dead_code, reason = "only shipyard's window closes on a write")
)]
enum Window {
    /// A visit closes it: a second visit sees nothing (bevy_ecs, hecs, Strata).
    ClosedByVisit,
    /// Only the next write does: a second visit sees the same rows again (shipyard, whose
    /// window runs from the last `clear_all_modified`).
    ClosedByWrite,
}

/// Every workload `L` takes part in runs at its small size, through the timed region the table
/// gives it, and the work whose result every library reports alike is right.
fn does_the_work<L: Library>(window: Window) {
    for work in Work::ALL {
        if let Entry::Measured(mut workload) = entry::<L>(work, work.small()) {
            let measured = workload.measure(tiny());
            assert!(
                measured.is_ok(),
                "{} {}: {measured:?}",
                L::NAME,
                work.name()
            );
        }
    }
    let (n_big, n_small) = (2_000, 20);
    if does::<L>(Work::SmallDriverJoin) {
        let expected: f64 = (0..n_big)
            .filter(|&i| is_small(i, n_big, n_small))
            .map(|i| big(i).0)
            .sum();
        let mut world = L::joinable(n_big, n_small);
        assert_eq!(L::join_sum(&mut world), expected, "{}", L::NAME);
    }
    let n = 2_000;
    if does::<L>(Work::ChangedFilter) && does::<L>(Work::ChangedFilterFrames) {
        // Every visit sees exactly the rows written since the window opened.
        for spawn in [Spawn::Batch, Spawn::OneByOne] {
            let mut changed = L::changed(n, spawn);
            assert_eq!(changed.visit().0, 0, "{}", L::NAME);
            for frame in 0..3 {
                changed.write(frame);
                let written = written_tally(n, frame);
                assert_eq!(changed.visit(), written, "{}", L::NAME);
                let again = match window {
                    Window::ClosedByVisit => (0, 0.0),
                    Window::ClosedByWrite => written,
                };
                assert_eq!(changed.visit(), again, "{}", L::NAME);
            }
        }
    }
    if does::<L>(Work::DespawnRespawn) {
        let mut world = L::movers(n);
        assert_eq!(L::despawn_then_respawn(&mut world), n / 2, "{}", L::NAME);
    }
    if does::<L>(Work::RollbackFrame) {
        let mut world = L::rollback_world(n);
        // The same frame every time: the world is put back after each.
        for _ in 0..2 {
            let done = (n / 100, ROLLBACK_CHURN, ROLLBACK_CHURN);
            assert_eq!(L::rollback_once(&mut world), done, "{}", L::NAME);
        }
    }
    if does::<L>(Work::RollbackWindow) {
        // Bodies 200 apart, as the workload's are 1,000 apart: frames that destroyed bodies at
        // the written stride (as a window starting at half the spacing did) would fail here.
        let n = 20_000;
        let mut world = L::rollback_world(n);
        // The same window every time: the world is put back as it was at the oldest save.
        let w = ROLLBACK_WINDOW;
        for _ in 0..2 {
            let done = (w * (n / 100), w * ROLLBACK_CHURN, w * ROLLBACK_CHURN);
            assert_eq!(L::rollback_window_once(&mut world).0, done, "{}", L::NAME);
        }
        // And it is the world the frame started from: a frame after it does the same work.
        let done = (n / 100, ROLLBACK_CHURN, ROLLBACK_CHURN);
        assert_eq!(L::rollback_once(&mut world), done, "{}", L::NAME);
    }
}

#[test]
fn strata_does_the_work() {
    does_the_work::<Strata>(Window::ClosedByVisit);
}

#[cfg(feature = "peers")]
#[test]
fn bevy_ecs_does_the_work() {
    does_the_work::<crate::peers::bevy::Bevy>(Window::ClosedByVisit);
}

#[cfg(feature = "peers")]
#[test]
fn hecs_does_the_work() {
    does_the_work::<crate::peers::hecs::Hecs>(Window::ClosedByVisit);
}

#[cfg(feature = "peers")]
#[test]
fn shipyard_does_the_work() {
    does_the_work::<crate::peers::shipyard::Shipyard>(Window::ClosedByWrite);
}

/// The libraries of the table in this build.
fn entrants() -> Vec<(&'static str, Entrant)> {
    #[cfg_attr(
        not(feature = "peers"),
        expect(unused_mut, reason = "peers add theirs")
    )]
    let mut entrants: Vec<(&'static str, Entrant)> = vec![(Strata::NAME, entry::<Strata>)];
    #[cfg(feature = "peers")]
    entrants.extend([
        (crate::peers::bevy::LIBRARY, crate::peers::RUST_PEERS[0]),
        (crate::peers::hecs::LIBRARY, crate::peers::RUST_PEERS[1]),
        (crate::peers::shipyard::LIBRARY, crate::peers::RUST_PEERS[2]),
    ]);
    entrants
}

/// Every library registers every workload at every size of the table, or says why it cannot,
/// or names the workload it measures instead, which it registers.
#[test]
fn every_library_registers_every_workload_or_says_why_not() {
    let all = crate::all_workloads();
    for (library, entrant) in entrants() {
        for work in Work::ALL {
            for scale in work.scales() {
                match entrant(work, scale) {
                    Entry::Measured(w) => {
                        assert_eq!((w.library_name(), w.name()), (library, work.name()));
                        assert_eq!(w.size(), scale.n);
                        assert!(!w.mechanism().is_empty());
                    }
                    Entry::Cannot(u) => assert!(!u.reason.is_empty(), "{u:?}"),
                    Entry::Instead => {}
                }
            }
        }
    }
    let Mechanism::Instead(instead) = Strata::mechanism(Work::WorldClone) else {
        panic!("Strata measures its snapshot instead of an eager copy");
    };
    assert!(
        all.iter()
            .any(|w| w.library_name() == Strata::NAME && w.name() == instead)
    );
}

/// Names are unique, and the run order groups the libraries of one workload and size.
#[test]
fn the_table_runs_each_comparison_together() {
    let mut names: Vec<&str> = Work::ALL.iter().map(|w| w.name()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), Work::ALL.len());
    let libraries: Vec<Entrant> = entrants().into_iter().map(|(_, e)| e).collect();
    let (workloads, _) = register(&libraries);
    let keys: Vec<(&str, u64)> = workloads.iter().map(|w| (w.name(), w.size())).collect();
    for (i, key) in keys.iter().enumerate() {
        // Once a comparison is over, it never comes back.
        assert!(
            keys[..i].last() == Some(key) || !keys[..i].contains(key),
            "{key:?}"
        );
    }
}
