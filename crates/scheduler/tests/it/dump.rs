//! The schedule as people read it: the text dump (order, reasons, stopped and disabled systems,
//! diagnostics) and the Graphviz export.

use crate::common::schedule;

/// A game-like schedule with every kind of entry a dump shows.
const GAME: &str = "
    input phase=PreUpdate h=0
    physics_step fixed set=physics h=1
    collide fixed set=physics after=physics_step h=1.1
    ai set=gameplay h=2 after=input
    move set=gameplay h=3 after=ai
    regen set=gameplay h=4 every=0.5
    camera h=5 after=gameplay before=missing
    audio h=6 after=old
    old h=7 off
    spin_a h=8 after=spin_b
    spin_b h=9 after=spin_a
    render phase=Last h=10 after=camera
";

#[test]
fn dump_shows_each_stage_with_the_reason_for_every_place() {
    let mut s = schedule(GAME);
    insta::assert_snapshot!(s.build().dump(), @r"
    PreUpdate
      0  input         @0    hierarchy order
    FixedUpdate
      1  physics_step  @1    hierarchy order
      2  collide       @1.1  after physics_step (collide after physics_step)
    Update
      3  ai            @2    hierarchy order
      4  move          @3    after ai (move after ai)
      5  regen         @4    hierarchy order
      6  camera        @5    after ai (camera after set gameplay); after move (camera after set gameplay); after regen (camera after set gameplay)
      7  audio         @6    hierarchy order
      -  spin_a        @8    stopped: cycle spin_a -> spin_b -> spin_a
      -  spin_b        @9    stopped: cycle spin_a -> spin_b -> spin_a
      -  old           @7    disabled
    Last
      8  render        @10   hierarchy order
    diagnostics
      info: ai after input: input runs in PreUpdate, not Update; the stage order applies and no edge is added
      warning: camera before missing: no system or set has that name
      warning: audio after old: the target is disabled; no edge is added
      info: render after camera: camera runs in Update, not Last; the stage order applies and no edge is added
      error: cycle in Update: spin_a -> spin_b -> spin_a; stopped: spin_a, spin_b
    ");
}

#[test]
fn an_empty_schedule_dumps_nothing() {
    let mut s = schedule("");
    assert_eq!(s.build().dump(), "");
}

#[test]
fn dot_export_draws_stages_as_clusters() {
    let mut s = schedule(
        "
        input phase=PreUpdate
        a h=1 after=b
        b h=2 after=a
        c h=3 after=a
        say\"hi h=4 before=c
        old off
        ",
    );
    insta::assert_snapshot!(s.build().to_dot(), @r#"
    digraph schedule {
      rankdir=LR;
      node [shape=box];
      subgraph cluster_1 {
        label="PreUpdate";
        s0 [label="0 input"];
      }
      subgraph cluster_7 {
        label="Update";
        s4 [label="1 say\"hi"];
        s3 [label="2 c"];
        s1 [label="a", color=red, style=dashed];
        s2 [label="b", color=red, style=dashed];
        s5 [label="old", color=grey, fontcolor=grey, style=dotted];
      }
      s2 -> s1 [color=red];
      s1 -> s2 [color=red];
      s1 -> s3;
      s4 -> s3;
    }
    "#);
}
