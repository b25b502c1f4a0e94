//! Declarations that a build cannot honour without a word: edges joining a running system to one
//! stopped in a cycle, and a set target whose only member is the declaring system.

use crate::common::{id, order, schedule};
use strata_scheduler::{Severity, SystemState};

/// The seed keeps every schedulable system available when a cycle is stopped, so a system
/// ordered against a stopped one still runs, placed as if that declaration were absent; each
/// such declaration (made by either side, directly or through a set) is a warning naming the
/// stopped system and the one that runs without the order.
#[test]
fn a_system_ordered_against_a_stopped_one_still_runs_and_its_declaration_is_reported() {
    let mut s = schedule(
        "
        a set=loop after=b h=1
        b after=a before=g h=2
        d after=a h=3
        e before=b h=4
        f after=loop h=5
        g h=6
        ",
    );
    s.build();
    let plan = s.plan();
    assert_eq!(order(plan), ["d", "e", "f", "g"]);
    for name in ["a", "b"] {
        assert_eq!(
            plan.state(id(&s, name)),
            Some(SystemState::Stopped { cycle: 0 })
        );
    }
    assert_eq!(plan.diagnostics().count(Severity::Warning), 4);
    insta::assert_snapshot!(plan.diagnostics(), @r"
    warning: b before g: b is stopped in a cycle; g runs without this order
    warning: d after a: a is stopped in a cycle; d runs without this order
    warning: e before b: b is stopped in a cycle; e runs without this order
    warning: f after loop: a is stopped in a cycle; f runs without this order
    error: cycle in Update: a -> b -> a; stopped: a, b
    ");

    let mut ran = Vec::new();
    s.run_frame(0.016, |_, body, _| {
        ran.push(body.clone());
        Ok::<(), ()>(())
    })
    .unwrap();
    assert_eq!(ran, ["d", "e", "f", "g"]);
}

/// `before`/`after` a set stands for its other members; when the declarer is the only member
/// there is nothing to order against, and the declaration says so instead of vanishing.
#[test]
fn a_set_target_whose_only_member_is_the_declarer_is_a_warning() {
    let mut s = schedule(
        "
        a set=solo before=solo h=1
        b set=pair after=pair h=2
        c set=pair h=3
        ",
    );
    s.build();
    let plan = s.plan();
    assert_eq!(order(plan), ["a", "c", "b"]);
    insta::assert_snapshot!(plan.diagnostics(), @"warning: a before solo: the set's only member is a itself; no edge is added");
}
