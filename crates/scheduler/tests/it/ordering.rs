//! How a build orders systems: sets, hierarchy ties, cross-phase and missing targets, cycles,
//! reachability, and the input it refuses.

use crate::common::{id, order, schedule, system};
use strata_scheduler::{
    Diagnostic, Phase, Relation, Schedule, ScheduleError, Severity, Stage, System, SystemId,
    SystemState,
};

#[test]
fn a_set_target_stands_for_every_member() {
    let mut s = schedule(
        "
        spawn h=1
        move set=physics h=2 after=spawn
        collide set=physics h=3 after=move
        render h=0 after=physics
        log h=4 before=physics
        ",
    );
    s.build();
    let plan = s.plan();
    assert_eq!(order(plan), ["spawn", "log", "move", "collide", "render"]);
    assert!(plan.diagnostics().is_empty(), "{}", plan.diagnostics());
    // `render after physics` is one declaration and two edges; `log before physics` likewise.
    let via_set = plan
        .edges()
        .iter()
        .filter(|edge| plan.reasons(edge).iter().all(|reason| reason.via_set))
        .count();
    assert_eq!(via_set, 4);
    insta::assert_snapshot!(plan.dump(), @r"
    Update
      0  spawn    @1  hierarchy order
      1  log      @4  hierarchy order
      2  move     @2  after spawn (move after spawn); after log (log before set physics)
      3  collide  @3  after log (log before set physics); after move (collide after move)
      4  render   @0  after move (render after set physics); after collide (render after set physics)
    ");
}

#[test]
fn a_system_ordered_against_its_own_set_is_ordered_against_the_others() {
    let mut s = schedule(
        "
        a set=s h=2 before=s
        b set=s h=1
        c set=s h=0
        ",
    );
    assert_eq!(order(s.build()), ["a", "c", "b"]);
    assert!(s.plan().diagnostics().is_empty());
}

#[test]
fn cross_phase_edges_are_ignored_with_a_note() {
    let mut s = schedule(
        "
        input phase=PreUpdate
        step fixed after=input
        move after=input after=step before=draw
        draw phase=Last
        ",
    );
    s.build();
    let plan = s.plan();
    assert!(plan.edges().is_empty());
    assert_eq!(order(plan), ["input", "step", "move", "draw"]);
    assert_eq!(plan.diagnostics().len(), 4);
    assert_eq!(plan.diagnostics().count(Severity::Info), 4);
    let Diagnostic::CrossStage {
        declaration,
        stage,
        other_stage,
        ..
    } = &plan.diagnostics().as_slice()[0]
    else {
        panic!("{}", plan.diagnostics());
    };
    assert_eq!(declaration.name, "step");
    assert_eq!(declaration.relation, Relation::After);
    assert_eq!(*stage, Stage::Fixed(Phase::Update));
    assert_eq!(*other_stage, Stage::Frame(Phase::PreUpdate));
    insta::assert_snapshot!(plan.diagnostics(), @r"
    info: step after input: input runs in PreUpdate, not FixedUpdate; the stage order applies and no edge is added
    info: move before draw: draw runs in Last, not Update; the stage order applies and no edge is added
    info: move after input: input runs in PreUpdate, not Update; the stage order applies and no edge is added
    info: move after step: step runs in FixedUpdate, not Update; the stage order applies and no edge is added
    ");
    // The stage order still orders them.
    assert!(plan.is_ordered(id(&s, "input"), id(&s, "move")));
    assert!(s.plan().precedes(id(&s, "step"), id(&s, "move")));
}

#[test]
fn a_missing_target_is_a_warning_and_adds_no_node() {
    let mut s = schedule(
        "
        a after=ghost
        b before=a
        ",
    );
    s.build();
    let plan = s.plan();
    assert_eq!(order(plan), ["b", "a"]);
    assert_eq!(plan.edges().len(), 1);
    assert!(plan.system(SystemId::from_index(2)).is_none());
    let [Diagnostic::MissingTarget { declaration }] = plan.diagnostics().as_slice() else {
        panic!("{}", plan.diagnostics());
    };
    assert_eq!(
        (declaration.name.as_str(), declaration.target.as_str()),
        ("a", "ghost")
    );
    assert_eq!(
        plan.diagnostics().to_string(),
        "warning: a after ghost: no system or set has that name\n"
    );
}

#[test]
fn disabled_and_self_targets_are_warnings() {
    let mut s = schedule(
        "
        old off set=legacy
        a after=old h=1
        b after=legacy h=2
        c before=c h=3
        ",
    );
    s.build();
    let plan = s.plan();
    assert_eq!(order(plan), ["a", "b", "c"]);
    assert_eq!(plan.state(id(&s, "old")), Some(SystemState::Disabled));
    insta::assert_snapshot!(plan.diagnostics(), @r"
    warning: a after old: the target is disabled; no edge is added
    warning: b after legacy: the target is disabled; no edge is added
    warning: c before c: a system cannot be ordered against itself
    ");
}

#[test]
fn a_cycle_of_three_is_stopped_and_an_unrelated_system_still_runs() {
    let mut s = schedule(
        "
        c after=b h=3
        a after=c h=1
        b after=a h=2
        bystander h=0
        after_cycle after=a h=4
        ",
    );
    s.build();
    let plan = s.plan();
    assert_eq!(order(plan), ["bystander", "after_cycle"]);
    let [cycle] = plan.cycles() else {
        panic!("{}", plan.diagnostics())
    };
    let chain: Vec<&str> = cycle
        .chain
        .iter()
        .map(|&m| cycle.name(m).unwrap())
        .collect();
    assert_eq!(chain, ["a", "b", "c"], "from the first in hierarchy order");
    assert_eq!(cycle.chain_text(), "a -> b -> c -> a");
    for name in ["a", "b", "c"] {
        assert_eq!(
            plan.state(id(&s, name)),
            Some(SystemState::Stopped { cycle: 0 })
        );
        assert_eq!(plan.position(id(&s, name)), None);
    }
    assert_eq!(plan.diagnostics().count(Severity::Error), 1);

    let mut ran = Vec::new();
    let report = s
        .run_frame(0.016, |_, body, _| {
            ran.push(body.clone());
            Ok::<(), ()>(())
        })
        .unwrap();
    assert_eq!(ran, ["bystander", "after_cycle"]);
    assert_eq!(report.runs, 2);
    assert_eq!(s.stats(id(&s, "a")).unwrap().runs, 0);
}

#[test]
fn a_cycle_inside_a_set_stops_only_its_members() {
    let mut s = schedule(
        "
        a set=s before=b h=1
        b set=s before=s h=2
        d set=s h=3
        c after=s h=0
        ",
    );
    s.build();
    let plan = s.plan();
    // b before s includes b before a: a and b wait on each other.
    let [cycle] = plan.cycles() else {
        panic!("{}", plan.diagnostics())
    };
    assert_eq!(cycle.chain_text(), "a -> b -> a");
    assert_eq!(order(plan), ["d", "c"]);
    insta::assert_snapshot!(plan.dump(), @r"
    Update
      0  d  @3  hierarchy order
      1  c  @0  after d (c after set s)
      -  a  @1  stopped: cycle a -> b -> a
      -  b  @2  stopped: cycle a -> b -> a
    diagnostics
      warning: b before s: b is stopped in a cycle; d runs without this order
      warning: c after s: a is stopped in a cycle; c runs without this order
      warning: c after s: b is stopped in a cycle; c runs without this order
      error: cycle in Update: a -> b -> a; stopped: a, b
    ");
}

#[test]
fn a_cycle_reports_every_member_even_off_the_chain() {
    // a -> b -> a and b -> c -> a: one component of three; the shortest way back from a is
    // through b only.
    let mut s = schedule(
        "
        a before=b h=1
        b before=a before=c h=2
        c before=a h=3
        ",
    );
    s.build();
    let plan = s.plan();
    let [cycle] = plan.cycles() else {
        panic!("{}", plan.diagnostics())
    };
    assert_eq!(cycle.chain_text(), "a -> b -> a");
    assert_eq!(cycle.members_text(), "a, b, c");
    assert_eq!(plan.stopped().count(), 3);
}

#[test]
fn unordered_systems_follow_hierarchy_order_then_registration_order() {
    let mut s = schedule(
        "
        e h=3
        a h=1.2
        b h=1
        c
        d h=1.10
        f h=1.2
        ",
    );
    assert_eq!(order(s.build()), ["c", "b", "a", "f", "d", "e"]);
    // An edge overrides hierarchy order, and the rest keep theirs.
    s.add(system("g h=0 after=e")).unwrap();
    assert_eq!(order(s.build()), ["c", "b", "a", "f", "d", "e", "g"]);
}

#[test]
fn hierarchy_ties_are_broken_at_every_step_not_just_the_first() {
    // z waits on y; once y runs, z (h=0) overtakes x (h=5) even though x was ready earlier.
    let mut s = schedule(
        "
        x h=5
        y h=1
        z h=0 after=y
        ",
    );
    assert_eq!(order(s.build()), ["y", "z", "x"]);
}

#[test]
fn reachability_answers_ordered_pairs_only_through_declared_edges() {
    let mut s = schedule(
        "
        a h=1
        b h=2 after=a
        c h=3 after=b
        d h=4
        e h=5 after=a
        late phase=Last
        loop1 after=loop2
        loop2 after=loop1
        off off
        ",
    );
    s.build();
    let [a, b, c, d, e, late, loop1, off] =
        ["a", "b", "c", "d", "e", "late", "loop1", "off"].map(|name| id(&s, name));
    let plan = s.plan();
    assert!(plan.is_ordered(a, b));
    assert!(plan.is_ordered(b, a), "either direction");
    assert!(plan.is_ordered(a, c), "transitive");
    assert!(plan.is_ordered(c, a));
    assert!(
        !plan.is_ordered(b, e),
        "siblings after a common predecessor"
    );
    assert!(!plan.is_ordered(c, d), "adjacent in hierarchy order only");
    assert!(!plan.is_ordered(d, e));
    assert!(
        !plan.is_ordered(a, a),
        "a system is not ordered with itself"
    );
    assert!(plan.is_ordered(d, late), "different phases");
    assert!(!plan.is_ordered(loop1, a), "stopped");
    assert!(!plan.is_ordered(off, a), "disabled");
    assert!(!plan.is_ordered(a, SystemId::from_index(99)), "unknown");
    assert!(plan.precedes(a, c) && !plan.precedes(c, a));
    assert!(plan.precedes(d, late) && !plan.precedes(late, d));

    // The u64 form, for layers that keep writer ids as numbers.
    assert!(plan.is_ordered(a.to_u64(), c.to_u64()));
    let oracle = plan.order_oracle();
    assert!(oracle(a.to_u64(), c.to_u64()));
    assert!(!oracle(c.to_u64(), d.to_u64()));
    assert!(!oracle(a.to_u64(), u64::MAX));
    assert!(s.is_ordered(a, c));

    // Scheduled positions are the indices of the global order, phases in order.
    let plan = s.plan();
    for (position, &system) in plan.order().iter().enumerate() {
        assert_eq!(plan.position(system), Some(position as u32));
        assert_eq!(plan.system_at(position as u32), Some(system));
    }
    assert_eq!(plan.position(late), Some(5));
}

#[test]
fn phases_and_the_fixed_block_run_in_documented_order() {
    let mut s = schedule(
        "
        last phase=Last
        post phase=PostUpdate
        update
        fixed_last fixed phase=Last
        fixed_first fixed phase=First
        fixed_update fixed
        pre phase=PreUpdate
        first phase=First
        ",
    );
    assert_eq!(
        order(s.build()),
        [
            "first",
            "pre",
            "fixed_first",
            "fixed_update",
            "fixed_last",
            "update",
            "post",
            "last"
        ]
    );
    let plan = s.plan();
    assert_eq!(
        plan.stage_order(Stage::Fixed(Phase::Update)),
        [id(&s, "fixed_update")]
    );
    assert!(plan.stage_order(Stage::Fixed(Phase::PreUpdate)).is_empty());
}

#[test]
fn enabling_and_disabling_rebuilds_the_plan() {
    let mut s = schedule(
        "
        a h=1
        b h=2 after=a
        ",
    );
    let [a, b] = ["a", "b"].map(|name| id(&s, name));
    assert!(s.build().is_ordered(a, b));
    s.set_enabled(a, false).unwrap();
    assert!(s.is_stale());
    assert_eq!(order(s.build()), ["b"]);
    assert!(!s.plan().is_ordered(a, b));
    s.set_enabled(a, true).unwrap();
    assert_eq!(order(s.build()), ["a", "b"]);

    // Removing a system frees its name but never its id.
    let removed = s.remove(a).unwrap();
    assert_eq!(removed.into_body(), "a");
    assert_eq!(s.remove(a).unwrap_err(), ScheduleError::UnknownSystem(a));
    let again = s.add(system("a")).unwrap();
    assert_ne!(again, a);
    assert_eq!(s.len(), 2);
    s.build();
    let plan = s.plan();
    assert_eq!(plan.system(a), None);
    assert!(plan.diagnostics().is_empty(), "b's target is the new a");
}

#[test]
fn bad_input_is_refused_and_changes_nothing() {
    let mut s = schedule(
        "
        a set=physics
        ",
    );
    let refused = [
        (system("a"), ScheduleError::DuplicateName("a".into())),
        (
            system("physics"),
            ScheduleError::NameConflict("physics".into()),
        ),
        (system("b set=a"), ScheduleError::NameConflict("a".into())),
        (system("c set=c"), ScheduleError::NameConflict("c".into())),
        (System::new("", String::new()), ScheduleError::EmptyName),
        (system("d set="), ScheduleError::EmptyName),
    ];
    for (system, error) in refused {
        assert_eq!(s.add(system).unwrap_err(), error);
    }
    for seconds in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            s.add(System::new("e", String::new()).with_interval(seconds)),
            Err(ScheduleError::InvalidInterval { .. })
        ));
    }
    assert_eq!(s.len(), 1);
    for dt in [-0.1, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            s.run_frame(dt, |_, _, _| Ok::<(), ()>(())),
            Err(ScheduleError::InvalidDelta(_))
        ));
    }
    assert_eq!(s.stats(id(&s, "a")).unwrap().runs, 0);
    let unknown = SystemId::from_index(7);
    assert_eq!(
        s.set_enabled(unknown, false).unwrap_err(),
        ScheduleError::UnknownSystem(unknown)
    );
    assert!(s.stats(unknown).is_err());
    assert!(s.body_mut(unknown).is_err());
    assert!(s.system(unknown).is_err());
    assert!(strata_scheduler::FixedStep::new(0.0, 4).is_err());
    assert!(strata_scheduler::FixedStep::new(0.1, 0).is_err());
    let empty: Schedule<()> = Schedule::new();
    assert!(empty.is_empty());
}
