//! Running frames: interval systems, the fixed-step block, statistics and errors.

use crate::common::{id, order, schedule};
use strata_scheduler::{FixedStep, Phase, Schedule, ScheduleError, Stage, System, SystemId};

/// Runs frames of the given lengths and returns, per frame, `(body, dt)` for every call.
fn run(s: &mut Schedule<String>, frames: &[f64]) -> Vec<Vec<(String, f64)>> {
    frames
        .iter()
        .map(|&dt| {
            let mut calls = Vec::new();
            s.run_frame(dt, |_, body, ctx| {
                calls.push((body.clone(), ctx.dt()));
                Ok::<(), ()>(())
            })
            .unwrap();
            calls
        })
        .collect()
}

/// The calls of one system, as (frame index, dt).
fn calls_of(frames: &[Vec<(String, f64)>], name: &str) -> Vec<(usize, f64)> {
    frames
        .iter()
        .enumerate()
        .flat_map(|(frame, calls)| {
            calls
                .iter()
                .filter(move |(body, _)| body == name)
                .map(move |(_, dt)| (frame, *dt))
        })
        .collect()
}

#[track_caller]
fn assert_calls(got: &[(usize, f64)], want: &[(usize, f64)]) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert_eq!(g.0, w.0, "{got:?} vs {want:?}");
        assert!((g.1 - w.1).abs() < 1e-9, "{got:?} vs {want:?}");
    }
}

#[test]
fn an_interval_system_runs_once_with_the_accumulated_time_and_never_catches_up() {
    let mut s = schedule(
        "
        every_frame
        half every=0.5
        ",
    );
    let frames = [0.1, 0.3, 0.2, 0.1, 2.0, 0.1, 0.4, 0.0];
    let calls = run(&mut s, &frames);
    // 0.1 + 0.3 + 0.2 = 0.6 is due in frame 2; the 2.0 s frame (after 0.1 waited) runs it once
    // with 2.1, not four times; 0.1 + 0.4 reaches 0.5 exactly in frame 6.
    assert_calls(&calls_of(&calls, "half"), &[(2, 0.6), (4, 2.1), (6, 0.5)]);
    assert_eq!(calls_of(&calls, "every_frame").len(), frames.len());
    let half = id(&s, "half");
    assert_eq!(s.stats(half).unwrap().runs, 3);
    assert_eq!(s.interval_waited(half).unwrap(), 0.0);
    run(&mut s, &[0.25]);
    assert!((s.interval_waited(half).unwrap() - 0.25).abs() < 1e-12);
}

#[test]
fn a_disabled_interval_system_keeps_what_it_waited() {
    let mut s = schedule("half every=0.5");
    let half = id(&s, "half");
    run(&mut s, &[0.3]);
    s.set_enabled(half, false).unwrap();
    assert!(calls_of(&run(&mut s, &[1.0, 1.0]), "half").is_empty());
    s.set_enabled(half, true).unwrap();
    assert_calls(&calls_of(&run(&mut s, &[0.2]), "half"), &[(0, 0.5)]);
}

#[test]
fn the_fixed_block_runs_whole_steps_up_to_the_limit_and_carries_the_remainder() {
    let mut s = schedule(
        "
        pre phase=PreUpdate
        tick fixed
        tock fixed phase=Last
        update
        ",
    );
    s.set_fixed_step(FixedStep::new(0.1, 3).unwrap());
    let mut steps = Vec::new();
    let mut dropped = Vec::new();
    let mut calls = Vec::new();
    for dt in [0.05, 0.05, 0.25, 1.0, 0.05] {
        let mut frame = Vec::new();
        let report = s
            .run_frame(dt, |_, body, ctx| {
                frame.push((body.clone(), ctx.dt()));
                Ok::<(), ()>(())
            })
            .unwrap();
        steps.push(report.fixed_steps);
        dropped.push(report.fixed_steps_dropped);
        calls.push(frame);
    }
    // 0.05 carried; 0.10 is one step; 0.25 is two, 0.05 carried; 1.05 owes ten, runs three,
    // drops seven and carries 0.05; then 0.10 is one.
    assert_eq!(steps, [0, 1, 2, 3, 1]);
    assert_eq!(dropped, [0, 0, 0, 7, 0]);
    assert!(s.fixed_carried().abs() < 1e-9);

    // Each step runs the fixed phases in order, between PreUpdate and Update, with the step
    // length as dt.
    let names: Vec<&str> = calls[2].iter().map(|(body, _)| body.as_str()).collect();
    assert_eq!(names, ["pre", "tick", "tock", "tick", "tock", "update"]);
    for (body, dt) in &calls[2] {
        let want = if body.starts_with('t') { 0.1 } else { 0.25 };
        assert!((dt - want).abs() < 1e-12, "{body} got {dt}");
    }
    assert_eq!(s.stats(id(&s, "tick")).unwrap().runs, 7);
    assert_eq!(s.stats(id(&s, "update")).unwrap().runs, 5);
}

#[test]
fn sixty_hertz_frames_run_one_step_each() {
    let mut s = schedule("tick fixed");
    assert_eq!(s.fixed_step(), FixedStep::HZ_60);
    for _ in 0..600 {
        let report = s.run_frame(1.0 / 60.0, |_, _, _| Ok::<(), ()>(())).unwrap();
        assert_eq!(report.fixed_steps, 1);
    }
    assert_eq!(s.stats(id(&s, "tick")).unwrap().runs, 600);
}

#[test]
fn an_interval_system_in_the_fixed_block_counts_fixed_time() {
    let mut s = schedule("slow fixed every=0.3");
    s.set_fixed_step(FixedStep::new(0.1, 10).unwrap());
    // One frame of 0.75 s: seven steps; the system is due after the third and the sixth.
    let calls = run(&mut s, &[0.75]);
    assert_calls(&calls_of(&calls, "slow"), &[(0, 0.3), (0, 0.3)]);
    assert!((s.interval_waited(id(&s, "slow")).unwrap() - 0.1).abs() < 1e-9);
}

#[test]
fn stats_count_what_ran_and_errors_do_not_stop_the_frame() {
    let mut s = schedule(
        "
        reader h=1
        failing h=2
        writer h=3
        loop_a after=loop_b
        loop_b after=loop_a
        off off
        ",
    );
    let [reader, failing, writer, loop_a, off] =
        ["reader", "failing", "writer", "loop_a", "off"].map(|name| id(&s, name));
    let mut errors: Vec<(SystemId, String)> = Vec::new();
    for frame in 0..4_u64 {
        let report = s
            .run_frame(0.01, |system, body, ctx| {
                assert_eq!(ctx.system(), system);
                assert_eq!(ctx.stage(), Stage::Frame(Phase::Update));
                match body.as_str() {
                    "reader" => {
                        ctx.add_component_reads(2);
                        ctx.add_visited_rows(100 + frame);
                        Ok(())
                    }
                    "failing" if frame % 2 == 0 => {
                        ctx.add_visited_rows(1);
                        Err(format!("frame {frame}"))
                    }
                    "writer" => {
                        ctx.add_field_writes(5);
                        ctx.add_component_reads(1);
                        Ok(())
                    }
                    _ => Ok(()),
                }
            })
            .unwrap();
        assert_eq!(report.runs, 3);
        errors.extend(report.errors);
    }
    assert_eq!(
        errors,
        [
            (failing, "frame 0".to_owned()),
            (failing, "frame 2".to_owned())
        ]
    );
    let stats = *s.stats(reader).unwrap();
    assert_eq!(
        (
            stats.runs,
            stats.component_reads,
            stats.field_writes,
            stats.visited_rows,
            stats.errors
        ),
        (4, 8, 0, 406, 0)
    );
    assert!(stats.total_duration >= stats.last_duration);
    let stats = *s.stats(failing).unwrap();
    assert_eq!((stats.runs, stats.errors, stats.visited_rows), (4, 2, 2));
    let stats = *s.stats(writer).unwrap();
    assert_eq!(
        (stats.runs, stats.field_writes, stats.component_reads),
        (4, 20, 4)
    );
    assert_eq!(s.stats(loop_a).unwrap().runs, 0, "stopped");
    assert_eq!(s.stats(off).unwrap().runs, 0, "disabled");

    s.reset_stats();
    assert_eq!(s.stats(reader).unwrap().runs, 0);
}

#[test]
fn bodies_are_the_callers_and_can_be_changed_between_frames() {
    let mut s: Schedule<u32> = Schedule::new();
    let counter = s.add(strata_scheduler::System::new("count", 0)).unwrap();
    for _ in 0..3 {
        s.run_frame(0.1, |_, body, _| {
            *body += 1;
            Ok::<(), ()>(())
        })
        .unwrap();
    }
    assert_eq!(*s.system(counter).unwrap().body(), 3);
    *s.body_mut(counter).unwrap() = 10;
    s.run_frame(0.1, |_, body, _| {
        *body += 1;
        Ok::<(), ()>(())
    })
    .unwrap();
    assert_eq!(*s.system(counter).unwrap().body(), 11);
}

#[test]
fn a_replaced_system_keeps_its_id_statistics_and_wait_and_takes_its_own_order() {
    let mut s = schedule(
        "
        a
        b after=a set=late
        half every=0.5 set=slow
        c set=slow
        ",
    );
    run(&mut s, &[0.1, 0.1]);
    let b = id(&s, "b");
    let half = id(&s, "half");
    // The new version of `b` runs before `a`, in another set.
    let old = s
        .replace(
            b,
            System::new("b", "b2".to_owned())
                .before("a")
                .in_set("early"),
        )
        .unwrap();
    assert_eq!(old.body(), "b");
    assert_eq!(s.id("b"), Some(b), "the id stays");
    // `half` keeps the 0.2 s it waited: due after 0.3 more.
    s.replace(
        half,
        System::new("half", "half2".to_owned()).with_interval(0.5),
    )
    .unwrap();
    let frames = run(&mut s, &[0.1, 0.2]);
    let names: Vec<&str> = frames[0].iter().map(|(body, _)| body.as_str()).collect();
    assert_eq!(names, ["b2", "a", "c"]);
    assert_calls(&calls_of(&frames, "half2"), &[(1, 0.5)]);
    assert_eq!(s.stats(b).unwrap().runs, 4, "statistics go on");
    assert_eq!(s.stats(half).unwrap().runs, 1);
    // The sets follow: `late` is gone, `early` names the new `b`, `slow` still holds `c`.
    assert!(s.add(System::new("late", "late".to_owned())).is_ok());
    assert!(matches!(
        s.add(System::new("early", "early".to_owned())),
        Err(ScheduleError::NameConflict(_))
    ));
    assert!(matches!(
        s.add(System::new("slow", "slow".to_owned())),
        Err(ScheduleError::NameConflict(_))
    ));
}

#[test]
fn a_refused_replacement_changes_nothing() {
    let mut s = schedule(
        "
        a
        b after=a set=late
        ",
    );
    run(&mut s, &[0.1]);
    let b = id(&s, "b");
    let order_before: Vec<String> = order(s.build()).into_iter().map(str::to_owned).collect();
    for (replacement, why) in [
        (System::new("c", "c".to_owned()), "another name"),
        (
            System::new("b", "b2".to_owned()).in_set(""),
            "an empty set name",
        ),
        (
            System::new("b", "b2".to_owned()).in_set("a"),
            "a set named like a system",
        ),
        (
            System::new("b", "b2".to_owned()).in_set("b"),
            "a set named like itself",
        ),
        (
            System::new("b", "b2".to_owned()).with_interval(-1.0),
            "a negative interval",
        ),
        (
            System::new("b", "b2".to_owned()).with_interval(f64::NAN),
            "no interval",
        ),
    ] {
        assert!(s.replace(b, replacement).is_err(), "{why}");
        assert!(!s.is_stale(), "{why}: the plan stands");
        assert_eq!(s.system(b).unwrap().body(), "b", "{why}");
    }
    assert!(matches!(
        s.replace(SystemId::from_index(9), System::new("b", "b2".to_owned())),
        Err(ScheduleError::UnknownSystem(_))
    ));
    let order_after: Vec<String> = order(s.build()).into_iter().map(str::to_owned).collect();
    assert_eq!(order_after, order_before);
    assert_eq!(s.stats(b).unwrap().runs, 1);
    // `late` still names `b`.
    assert!(matches!(
        s.add(System::new("late", "late".to_owned())),
        Err(ScheduleError::NameConflict(_))
    ));
}
