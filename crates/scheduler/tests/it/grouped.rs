//! Grouped frames: consecutive systems a caller runs together are handed over as one group, in
//! scheduled order, with the same stage order, fixed block, intervals and statistics as a plain
//! frame.

use std::time::Duration;

use strata_scheduler::{FixedStep, Phase, Schedule, System};

/// A body: its label, and whether the caller runs it together with its neighbours.
#[derive(Clone, Debug)]
struct Body(&'static str, bool);

fn schedule() -> Schedule<Body> {
    let mut s = Schedule::with_fixed_step(FixedStep::new(0.5, 4).unwrap());
    let add = |s: &mut Schedule<Body>, system: System<Body>| {
        s.add(system).unwrap();
    };
    add(&mut s, System::new("a", Body("a", true)).with_hierarchy(0));
    add(&mut s, System::new("b", Body("b", true)).with_hierarchy(1));
    add(&mut s, System::new("c", Body("c", false)).with_hierarchy(2));
    add(&mut s, System::new("d", Body("d", true)).with_hierarchy(3));
    add(
        &mut s,
        System::new("e", Body("e", true))
            .with_hierarchy(4)
            .with_interval(1.0),
    );
    add(
        &mut s,
        System::new("f", Body("f", true)).in_phase(Phase::Last),
    );
    add(
        &mut s,
        System::new("g", Body("g", true))
            .in_phase(Phase::Update)
            .in_fixed_block(),
    );
    s
}

#[test]
fn consecutive_systems_run_together_in_scheduled_order() {
    let mut s = schedule();
    let mut groups: Vec<Vec<&'static str>> = Vec::new();
    let report = s
        .run_frame_grouped(
            0.5,
            |body| body.1,
            |group| {
                groups.push(group.iter_mut().map(|due| due.parts().0.0).collect());
                group.iter().map(|_| Ok::<(), ()>(())).collect::<Vec<_>>()
            },
        )
        .unwrap();
    // The fixed block (one step of 0.5) runs before Update; `e` is not due yet.
    assert_eq!(
        groups,
        vec![vec!["g"], vec!["a", "b"], vec!["c"], vec!["d"], vec!["f"]]
    );
    assert_eq!((report.runs, report.fixed_steps), (6, 1));
    groups.clear();
    s.run_frame_grouped(
        0.5,
        |body| body.1,
        |group| {
            groups.push(group.iter_mut().map(|due| due.parts().0.0).collect());
            vec![Ok::<(), ()>(()); group.len()]
        },
    )
    .unwrap();
    assert_eq!(
        groups[3],
        ["d", "e"],
        "a due interval system joins its neighbours"
    );
    let e = s.id("e").unwrap();
    assert_eq!(s.stats(e).unwrap().runs, 1);
}

#[test]
fn each_system_of_a_group_keeps_its_own_statistics_and_errors() {
    let mut s = schedule();
    let report = s
        .run_frame_grouped(
            0.5,
            |body| body.1,
            |group| {
                group
                    .iter_mut()
                    .map(|due| {
                        let (body, ctx) = due.parts();
                        ctx.add_visited_rows(10);
                        ctx.add_field_writes(2);
                        let failed = body.0 == "b";
                        due.set_duration(Duration::from_millis(if failed { 7 } else { 3 }));
                        if failed { Err("b failed") } else { Ok(()) }
                    })
                    .collect::<Vec<_>>()
            },
        )
        .unwrap();
    let b = s.id("b").unwrap();
    assert_eq!(report.errors, [(b, "b failed")]);
    let stats = s.stats(b).unwrap();
    assert_eq!(
        (
            stats.runs,
            stats.errors,
            stats.visited_rows,
            stats.field_writes
        ),
        (1, 1, 10, 2)
    );
    assert_eq!(stats.last_duration, Duration::from_millis(7));
    assert_eq!(stats.max_duration, Duration::from_millis(7));
    let a = s.id("a").unwrap();
    assert_eq!(
        s.stats(a).unwrap().mean_duration(),
        Duration::from_millis(3)
    );
    assert_eq!(s.stats(a).unwrap().errors, 0);
}

#[test]
fn a_grouped_frame_refuses_a_bad_delta_and_changes_nothing() {
    let mut s = schedule();
    let mut called = false;
    let refused = s.run_frame_grouped(
        f64::NAN,
        |_| true,
        |group| {
            called = true;
            vec![Ok::<(), ()>(()); group.len()]
        },
    );
    assert!(refused.is_err());
    assert!(!called);
    assert_eq!(s.fixed_carried(), 0.0);
}
