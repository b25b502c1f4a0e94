//! The frame loop: phases in order with the fixed-step block between PreUpdate and Update,
//! its accumulator and cap, interval systems, systems stopped in a cycle never run, and refused
//! deltas that change nothing.

use std::sync::{Arc, Mutex};

use strata::prelude::*;

type Log = Arc<Mutex<Vec<(String, f64)>>>;

fn logger(log: &Log, name: &str) -> SystemSpec {
    let (log, label) = (log.clone(), name.to_owned());
    SystemSpec::new(name, move |ctx: &mut Ctx<'_>| {
        log.lock().unwrap().push((label.clone(), ctx.dt()));
        Ok(())
    })
}

fn names(log: &Log) -> Vec<String> {
    log.lock().unwrap().drain(..).map(|(n, _)| n).collect()
}

#[test]
fn phases_run_in_order_with_the_fixed_block_before_update() {
    let mut world = World::with_threads(1).unwrap();
    world.set_fixed_step(0.25, 8).unwrap();
    let log = Log::default();
    for (name, phase) in [
        ("last", Phase::Last),
        ("update", Phase::Update),
        ("first", Phase::First),
        ("post", Phase::PostUpdate),
        ("pre", Phase::PreUpdate),
    ] {
        world
            .add_system(logger(&log, name).in_phase(phase))
            .unwrap();
    }
    world
        .add_system(
            logger(&log, "fixed")
                .in_phase(Phase::Update)
                .in_fixed_block(),
        )
        .unwrap();
    let events = world.step(0.6).unwrap();
    assert_eq!(events.fixed_steps, 2);
    assert_eq!(
        names(&log),
        ["first", "pre", "fixed", "fixed", "update", "post", "last"]
    );
    assert!(
        (world.fixed_carried() - 0.1).abs() < 1e-9,
        "the rest is carried"
    );
    world.step(0.15).unwrap();
    assert_eq!(names(&log).iter().filter(|n| *n == "fixed").count(), 1);
}

#[test]
fn a_long_frame_runs_at_most_the_cap_of_fixed_steps() {
    let mut world = World::with_threads(1).unwrap();
    world.set_fixed_step(0.1, 3).unwrap();
    let log = Log::default();
    world
        .add_system(logger(&log, "fixed").in_fixed_block())
        .unwrap();
    let events = world.step(10.0).unwrap();
    assert_eq!((events.fixed_steps, events.fixed_steps_dropped), (3, 97));
    let steps = log.lock().unwrap().clone();
    assert_eq!(steps.len(), 3);
    assert!(
        steps.iter().all(|(_, dt)| (*dt - 0.1).abs() < 1e-12),
        "each step is one step long"
    );
}

#[test]
fn an_interval_system_runs_once_with_the_time_it_waited() {
    let mut world = World::with_threads(1).unwrap();
    let log = Log::default();
    world
        .add_system(logger(&log, "slow").with_interval(0.5))
        .unwrap();
    for _ in 0..2 {
        world.step(0.2).unwrap();
    }
    assert!(log.lock().unwrap().is_empty());
    world.step(0.2).unwrap();
    world.step(5.0).unwrap();
    let runs = log.lock().unwrap().clone();
    assert_eq!(runs.len(), 2, "a long frame runs it once");
    assert!((runs[0].1 - 0.6).abs() < 1e-9);
    assert!((runs[1].1 - 5.0).abs() < 1e-9);
}

#[test]
fn systems_stopped_in_a_cycle_never_run_and_the_others_do() {
    let mut world = World::with_threads(1).unwrap();
    let log = Log::default();
    world.add_system(logger(&log, "a").after("b")).unwrap();
    world.add_system(logger(&log, "b").after("a")).unwrap();
    world.add_system(logger(&log, "c")).unwrap();
    world.step(0.1).unwrap();
    world.step(0.1).unwrap();
    assert_eq!(names(&log), ["c", "c"]);
    assert_eq!(world.plan().cycles().len(), 1);
    let a = world.system_id("a").unwrap();
    assert_eq!(
        world
            .stats()
            .iter()
            .find(|(id, ..)| *id == a)
            .unwrap()
            .2
            .runs,
        0
    );
}

#[test]
fn a_refused_delta_changes_nothing() {
    let mut world = World::with_threads(1).unwrap();
    let log = Log::default();
    world.add_system(logger(&log, "a")).unwrap();
    let hash = world.state_hash();
    for dt in [-1.0, f64::NAN, f64::INFINITY] {
        assert!(world.step(dt).is_err());
    }
    assert_eq!((world.frame(), world.state_hash()), (0, hash));
    assert!(log.lock().unwrap().is_empty());
}

#[test]
fn thread_counts_past_the_bound_are_refused_and_change_nothing() {
    assert!(World::with_threads(strata::MAX_THREADS).is_ok());
    for threads in [0, strata::MAX_THREADS + 1, 10_000] {
        let error = World::with_threads(threads).unwrap_err();
        assert!(
            matches!(error, WorldError::Threads { threads: t, .. } if t == threads),
            "{error}"
        );
    }
    let mut world = World::with_threads(2).unwrap();
    assert!(world.set_threads(100_000).is_err());
    assert_eq!(world.threads(), 2);
}

#[test]
fn a_panicking_lifecycle_listener_is_reported_and_later_frames_and_snapshots_go_on() {
    let mut world = World::with_threads(1).unwrap();
    let heard = Arc::new(Mutex::new(Vec::new()));
    world.on_lifecycle(|event, _| {
        if matches!(event, Event::Destroyed { .. }) {
            panic!("listener boom");
        }
    });
    let log = heard.clone();
    world.on_lifecycle(move |event, view| {
        if let Event::Destroyed { subtree } = event {
            // The destroyed subtree is readable while listeners run.
            let name = view.get(subtree.root()).map(|n| n.name().to_owned());
            log.lock().unwrap().push(name);
        }
    });
    let folder = world.create(ClassId::FOLDER, None).unwrap();
    world.set_name(folder, "Gone").unwrap();
    world.step(0.1).unwrap();
    world.destroy(folder).unwrap();
    let events = world.step(0.1).unwrap();
    let errors: Vec<(String, String)> = events
        .errors
        .iter()
        .map(|(name, error)| (name.clone(), error.to_string()))
        .collect();
    assert_eq!(
        errors,
        [(
            "lifecycle listener #0".to_owned(),
            "a lifecycle listener panicked: listener boom".to_owned()
        )]
    );
    assert!(
        events
            .lifecycle
            .iter()
            .any(|e| matches!(e, Event::Destroyed { .. })),
        "the frame still reports every event"
    );
    assert_eq!(*heard.lock().unwrap(), [Some("Gone".to_owned())]);
    // The scope the panic left is closed: frames and snapshots go on.
    world.snapshot().unwrap();
    let events = world.step(0.1).unwrap();
    assert!(events.errors.is_empty(), "{:?}", events.errors);
    world.snapshot().unwrap();
}

/// A world moves between threads (a server's worker, a loading thread), listeners and all.
#[test]
fn a_world_is_send() {
    fn send<T: Send>(_: &T) {}
    let mut world = World::with_threads(1).unwrap();
    world.on_lifecycle(|_, _| {});
    send(&world);
    let moved = std::thread::spawn(move || {
        world.step(0.1).unwrap();
        world
    })
    .join()
    .unwrap();
    assert_eq!(moved.frame(), 1);
}

/// Each frame reports the lifecycle events of its own frame only (a drain reuses the memory of
/// the list two frames back, never its events), the last frame's stay readable through
/// `World::events` until the next step, and a refused step leaves them as they were.
#[test]
fn each_frame_reports_only_its_own_lifecycle_events_and_a_refused_step_keeps_the_last() {
    let mut world = World::new().unwrap();
    // The world's own instances are announced by the first frame.
    world.step(0.1).unwrap();
    let destroyed = |events: &FrameEvents| -> Vec<InstanceId> {
        events
            .lifecycle
            .iter()
            .filter_map(|e| match e {
                Event::Destroyed { subtree } => Some(subtree.root()),
                _ => None,
            })
            .collect()
    };
    let mut made = Vec::new();
    for frame in 0..6 {
        let a = world.create(ClassId::FOLDER, None).unwrap();
        let b = world.create(ClassId::FOLDER, None).unwrap();
        made.push((a, b));
        let gone: Vec<InstanceId> = if frame > 0 {
            let (a, b) = made[frame - 1];
            world.destroy(a).unwrap();
            world.destroy(b).unwrap();
            vec![a, b]
        } else {
            Vec::new()
        };
        let events = world.step(0.1).unwrap();
        assert_eq!(destroyed(events), gone, "frame {frame}");
        let created = events
            .lifecycle
            .iter()
            .filter(|e| matches!(e, Event::Created { .. } | Event::CreatedRange { .. }))
            .count();
        assert_eq!(created, 1, "frame {frame}: one run of two creations");
        assert_eq!(
            destroyed(world.events()),
            gone,
            "frame {frame}: kept until the next step"
        );
    }
    let last = format!("{:?}", world.events());
    assert!(world.step(f64::NAN).is_err());
    assert_eq!(format!("{:?}", world.events()), last);
}
