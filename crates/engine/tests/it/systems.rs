//! Systems written in Rust: serial systems with the whole scene, parallel systems on lanes
//! writing through overlays committed in scheduled order, declared writes, conflicts reported
//! with whether the schedule orders the writers, refusals, statistics from what ran, and errors
//! and panics counted while the frame goes on.

use crate::common::{fixture, parts};
use strata::prelude::*;

#[test]
fn a_serial_system_changes_structure_and_its_work_is_counted() {
    let mut f = fixture(1);
    let (health, current) = (f.health, f.current);
    let ids = parts(&mut f, 3);
    let mut all = f.world.query(QuerySpec::new().with(health)).unwrap();
    f.world
        .add_system(SystemSpec::new("spawner", move |ctx: &mut Ctx<'_>| {
            let workspace = ctx.workspace();
            let id = ctx.create(ClassId::PART, Some(workspace))?;
            ctx.add(id, health, [])?;
            ctx.update_each::<f64>(&mut all, (0, current), |hp| hp - 1.0)?;
            let hp = ctx.get::<f64>(id, health, current)?;
            assert_eq!(hp, 99.0, "the pass saw the new row");
            Ok(())
        }))
        .unwrap();
    f.world.step(0.1).unwrap();
    assert_eq!(f.world.store().set(health).unwrap().len(), 4);
    assert_eq!(f.world.get::<f64>(ids[0], health, current).unwrap(), 99.0);
    let stats = f.world.stats();
    let (_, name, s) = &stats[0];
    assert_eq!(name, "spawner");
    assert_eq!((s.runs, s.component_reads, s.visited_rows), (1, 1, 4));
    assert_eq!(s.field_writes, 1 + 4, "one add, four field changes");
    let table = f.world.stats_table();
    assert!(table.starts_with("system"), "{table}");
    assert!(table.contains("spawner"), "{table}");
}

#[test]
fn errors_and_panics_are_counted_and_the_frame_goes_on() {
    let mut f = fixture(1);
    f.world
        .add_system(SystemSpec::new("fails", |_: &mut Ctx<'_>| {
            Err(SystemError::failed("no fuel"))
        }))
        .unwrap();
    f.world
        .add_system(SystemSpec::new(
            "panics",
            |_: &mut Ctx<'_>| -> SystemResult { panic!("boom") },
        ))
        .unwrap();
    f.world
        .add_system(SystemSpec::parallel(
            "lane_panics",
            |_: &mut ParCtx<'_>| -> SystemResult { panic!("lane boom") },
        ))
        .unwrap();
    let ran = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let seen = ran.clone();
    f.world
        .add_system(
            SystemSpec::new("after", move |_: &mut Ctx<'_>| {
                seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Ok(())
            })
            .in_phase(Phase::Last),
        )
        .unwrap();
    let events = f.world.step(0.1).unwrap();
    let errors: Vec<(String, String)> = events
        .errors
        .iter()
        .map(|(name, e)| (name.clone(), e.to_string()))
        .collect();
    assert_eq!(
        errors,
        [
            ("fails".to_owned(), "no fuel".to_owned()),
            ("panics".to_owned(), "the system panicked: boom".to_owned()),
            (
                "lane_panics".to_owned(),
                "the system panicked: lane boom".to_owned()
            ),
        ]
    );
    assert_eq!(ran.load(std::sync::atomic::Ordering::Relaxed), 1);
    for (_, name, stats) in f.world.stats() {
        let expected = u64::from(name != "after");
        assert_eq!((stats.runs, stats.errors), (1, expected), "{name}");
    }
}

#[test]
fn parallel_systems_read_the_established_state_and_commit_in_scheduled_order() {
    let mut f = fixture(2);
    let (health, current, velocity, v) = (f.health, f.current, f.velocity, f.v);
    let ids = parts(&mut f, 4);
    for id in &ids {
        f.world.add(*id, velocity, []).unwrap();
    }
    let mut healers = f.world.query(QuerySpec::new().with(health)).unwrap();
    let mut movers = f
        .world
        .query(QuerySpec::new().with(health).with(velocity))
        .unwrap();
    f.world
        .add_system(
            SystemSpec::parallel("heal", move |ctx: &mut ParCtx<'_>| {
                ctx.update_each::<f64>(&mut healers, (0, current), |hp| hp + 10.0)?;
                Ok(())
            })
            .writes(health, current),
        )
        .unwrap();
    // Reads Health while `heal` writes it: sees the values established before the group.
    f.world
        .add_system(
            SystemSpec::parallel("drift", move |ctx: &mut ParCtx<'_>| {
                ctx.update::<Vec3, f64>(&mut movers, (1, v), (0, current), |p, hp| {
                    Vec3::new(p.x + *hp as f32, p.y, p.z)
                })?;
                Ok(())
            })
            .writes(velocity, v)
            .reads(health),
        )
        .unwrap();
    let events = f.world.step(0.1).unwrap();
    assert_eq!(events.commits.len(), 1, "one group");
    assert_eq!(events.commits[0].writers, 2);
    assert!(events.commits[0].conflicts.is_empty());
    for (k, id) in ids.iter().enumerate() {
        assert_eq!(
            f.world.get::<f64>(*id, health, current).unwrap(),
            110.0 + k as f64
        );
        let pushed = f.world.get::<Vec3>(*id, velocity, v).unwrap().x;
        assert_eq!(pushed, 100.0 + k as f32, "read before heal committed");
    }
    let stats = f.world.stats();
    assert!(
        stats
            .iter()
            .all(|(_, _, s)| s.runs == 1 && s.field_writes == 4),
        "{stats:?}"
    );
}

#[test]
fn unordered_parallel_writes_to_one_field_conflict_and_ordered_ones_take_turns() {
    let run = |ordered: bool| {
        let mut f = fixture(2);
        let (health, current) = (f.health, f.current);
        let ids = parts(&mut f, 2);
        let writer = |name: &str, value: f64| {
            let target = ids[0];
            SystemSpec::parallel(name, move |ctx: &mut ParCtx<'_>| {
                ctx.write(target, health, current, value)?;
                Ok(())
            })
            .writes(health, current)
        };
        f.world
            .add_system(writer("a", 1.0).with_hierarchy(1))
            .unwrap();
        let b = writer("b", 2.0).with_hierarchy(0);
        let b = if ordered { b.after("a") } else { b };
        f.world.add_system(b).unwrap();
        let events = f.world.step(0.1).unwrap();
        let commits = events.commits.len();
        let conflicts: Vec<Conflict> = events
            .commits
            .iter()
            .flat_map(|c| c.conflicts.clone())
            .collect();
        (
            commits,
            conflicts,
            f.world.get::<f64>(ids[0], health, current).unwrap(),
        )
    };
    let (commits, conflicts, value) = run(false);
    assert_eq!(commits, 1, "one wave");
    assert_eq!(conflicts.len(), 1);
    assert!(!conflicts[0].ordered);
    assert_eq!(
        value, 1.0,
        "hierarchy order puts b first: a's write lands last"
    );
    // b after a: a's wave commits before b runs, so nothing conflicts and b's write stands.
    let (commits, conflicts, value) = run(true);
    assert_eq!(commits, 2, "two waves");
    assert!(conflicts.is_empty());
    assert_eq!(value, 2.0);
}

#[test]
fn a_parallel_system_writes_only_what_it_declared_and_values_that_fit() {
    let mut f = fixture(2);
    let (health, current, velocity, v) = (f.health, f.current, f.velocity, f.v);
    let ids = parts(&mut f, 1);
    let mood = f
        .world
        .define(ComponentDef::new("Mood").field(FieldDef::enumeration(
            "m",
            &["calm", "angry"],
            "calm",
        )))
        .unwrap();
    let m = f.world.field(mood, "m").unwrap();
    f.world.add(ids[0], mood, []).unwrap();
    f.world.add(ids[0], velocity, []).unwrap();
    let target = ids[0];
    f.world
        .add_system(
            SystemSpec::parallel("sneaky", move |ctx: &mut ParCtx<'_>| {
                ctx.write(target, velocity, v, Vec3::ONE)?;
                Ok(())
            })
            .writes(health, current),
        )
        .unwrap();
    f.world
        .add_system(
            SystemSpec::parallel("wild", move |ctx: &mut ParCtx<'_>| {
                ctx.write(target, mood, m, 7u32)?;
                Ok(())
            })
            .writes(mood, m),
        )
        .unwrap();
    let events = f.world.step(0.1).unwrap();
    assert!(matches!(
        &events.errors[0],
        (name, SystemError::World(WorldError::UndeclaredWrite { .. })) if name == "sneaky"
    ));
    // A value the field cannot hold is refused when recorded, with the store's error.
    assert!(
        matches!(
            &events.errors[1],
            (name, SystemError::World(WorldError::Overlay(_))) if name == "wild"
        ),
        "{:?}",
        events.errors
    );
    assert!(events.commits[0].refusals.is_empty());
    assert_eq!(f.world.get::<u32>(target, mood, m).unwrap(), 0);
    assert_eq!(
        f.world.get::<Vec3>(target, velocity, v).unwrap(),
        Vec3::ZERO
    );
}

#[test]
fn a_parallel_system_reads_only_what_it_declared_or_writes() {
    let mut f = fixture(2);
    let (health, current, velocity, v) = (f.health, f.current, f.velocity, f.v);
    let ids = parts(&mut f, 2);
    for id in &ids {
        f.world.add(*id, velocity, []).unwrap();
    }
    let target = ids[0];
    // Each way of reading velocity, from systems that declared only writes to health.
    type Read = fn(&mut ParCtx<'_>, InstanceId, ComponentId, FieldId, &mut Query) -> SystemResult;
    let reads: [(&str, Read); 4] = [
        ("get", |ctx, id, c, f, _| {
            ctx.get::<Vec3>(id, c, f).map(drop).map_err(Into::into)
        }),
        ("get_value", |ctx, id, c, f, _| {
            ctx.get_value(id, c, f).map(drop).map_err(Into::into)
        }),
        ("pass", |ctx, _, _, _, q| {
            ctx.pass(q).map(drop).map_err(Into::into)
        }),
        ("update", |ctx, _, _, _, q| {
            ctx.update::<f64, Vec3>(
                q,
                (0, FieldId::from_index(0)),
                (1, FieldId::from_index(0)),
                |h, _| h + 1.0,
            )
            .map(drop)
            .map_err(Into::into)
        }),
    ];
    for (name, read) in reads {
        let mut q = f
            .world
            .query(QuerySpec::new().with(health).with(velocity))
            .unwrap();
        f.world
            .add_system(
                SystemSpec::parallel(name, move |ctx: &mut ParCtx<'_>| {
                    read(ctx, target, velocity, v, &mut q)
                })
                .writes(health, current),
            )
            .unwrap();
    }
    let events = f.world.step(0.1).unwrap();
    let refused: Vec<&str> = events
        .errors
        .iter()
        .filter_map(|(name, e)| match e {
            SystemError::World(WorldError::UndeclaredRead { component })
                if component == "Velocity" =>
            {
                Some(name.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(refused.len(), 4, "{:?}", events.errors);
    assert!(
        events.errors[0]
            .1
            .to_string()
            .contains("did not declare reads of `Velocity`"),
        "{}",
        events.errors[0].1
    );
    // The refused systems recorded nothing.
    for (k, id) in ids.iter().enumerate() {
        assert_eq!(
            f.world.get::<f64>(*id, health, current).unwrap(),
            100.0 + k as f64
        );
    }

    // Declared, the same reads work; a written component is readable without a declaration,
    // and a `without` term needs none.
    let mut g = fixture(2);
    let (health, current, velocity, v) = (g.health, g.current, g.velocity, g.v);
    let ids = parts(&mut g, 2);
    g.world
        .add(ids[0], velocity, [(v, Value::Vector(Vec3::ONE))])
        .unwrap();
    let target = ids[0];
    let mut with_both = g
        .world
        .query(QuerySpec::new().with(health).with(velocity))
        .unwrap();
    let mut only_health = g
        .world
        .query(QuerySpec::new().with(health).without(velocity))
        .unwrap();
    g.world
        .add_system(
            SystemSpec::parallel("declared", move |ctx: &mut ParCtx<'_>| {
                let seen = ctx.get::<Vec3>(target, velocity, v)?;
                assert_eq!(seen, Vec3::ONE);
                let _ = ctx.get::<f64>(target, health, current)?;
                ctx.update::<f64, Vec3>(&mut with_both, (0, current), (1, v), |h, v| {
                    h + f64::from(v.x)
                })?;
                ctx.update_each::<f64>(&mut only_health, (0, current), |h| h - 1.0)?;
                Ok(())
            })
            .writes(health, current)
            .reads(velocity),
        )
        .unwrap();
    let events = g.world.step(0.1).unwrap();
    assert!(events.errors.is_empty(), "{:?}", events.errors);
    assert_eq!(g.world.get::<f64>(ids[0], health, current).unwrap(), 101.0);
    assert_eq!(g.world.get::<f64>(ids[1], health, current).unwrap(), 100.0);
}

#[test]
fn a_parallel_pass_with_a_change_filter_updates_only_the_rows_changed_since_its_last_pass() {
    let mut f = fixture(2);
    let (health, current, velocity, v) = (f.health, f.current, f.velocity, f.v);
    let ids = parts(&mut f, 4);
    for id in &ids {
        f.world.add(*id, velocity, []).unwrap();
    }
    let mut changed = f
        .world
        .query(QuerySpec::new().with(velocity).with(health).changed(health))
        .unwrap();
    let mut plain = f.world.query(QuerySpec::new().with(health)).unwrap();
    f.world
        .add_system(
            SystemSpec::parallel("follow", move |ctx: &mut ParCtx<'_>| {
                ctx.update::<Vec3, f64>(&mut changed, (0, v), (1, current), |p, hp| {
                    Vec3::new(p.x + *hp as f32, p.y, p.z)
                })?;
                Ok(())
            })
            .writes(velocity, v)
            .reads(health),
        )
        .unwrap();
    f.world
        .add_system(
            SystemSpec::parallel("count", move |ctx: &mut ParCtx<'_>| {
                ctx.update_each::<f64>(&mut plain, (0, current), |hp| *hp)?;
                Ok(())
            })
            .writes(health, current),
        )
        .unwrap();
    // The first pass sees every row; only the two written after it are seen by the second.
    f.world.step(0.1).unwrap();
    f.world.write::<f64>(ids[1], health, current, 1.0).unwrap();
    f.world.write::<f64>(ids[3], health, current, 3.0).unwrap();
    f.world.step(0.1).unwrap();
    let xs: Vec<f32> = ids
        .iter()
        .map(|id| f.world.get::<Vec3>(*id, velocity, v).unwrap().x)
        .collect();
    assert_eq!(xs, [100.0, 102.0, 102.0, 106.0]);
    let stats = f.world.stats();
    let follow = stats.iter().find(|(_, n, _)| n == "follow").unwrap();
    assert_eq!(follow.2.field_writes, 4 + 2);
    let count = stats.iter().find(|(_, n, _)| n == "count").unwrap();
    assert_eq!(count.2.field_writes, 0, "identical values are not recorded");
}

#[test]
fn a_parallel_system_declared_after_another_sees_its_writes() {
    let mut f = fixture(2);
    let (health, current) = (f.health, f.current);
    let ids = parts(&mut f, 2);
    let mut all = f.world.query(QuerySpec::new().with(health)).unwrap();
    f.world
        .add_system(
            SystemSpec::parallel("double", move |ctx: &mut ParCtx<'_>| {
                ctx.update_each::<f64>(&mut all, (0, current), |hp| hp * 2.0)?;
                Ok(())
            })
            .writes(health, current),
        )
        .unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let first = ids[0];
    f.world
        .add_system(
            SystemSpec::parallel("read", move |ctx: &mut ParCtx<'_>| {
                log.lock()
                    .unwrap()
                    .push(ctx.get::<f64>(first, health, current)?);
                Ok(())
            })
            .reads(health)
            .after("double"),
        )
        .unwrap();
    // Unordered with `double`: runs beside it, reading what was established before.
    let log = seen.clone();
    f.world
        .add_system(
            SystemSpec::parallel("beside", move |ctx: &mut ParCtx<'_>| {
                log.lock()
                    .unwrap()
                    .push(-ctx.get::<f64>(first, health, current)?);
                Ok(())
            })
            .reads(health)
            .before("read"),
        )
        .unwrap();
    let events = f.world.step(0.1).unwrap();
    assert_eq!(events.commits.len(), 2, "two waves: {:?}", events.commits);
    let mut seen = seen.lock().unwrap().clone();
    seen.sort_by(f64::total_cmp);
    assert_eq!(seen, [-100.0, 200.0]);
}

/// The ways a serial system writes a column through a query.
#[derive(Clone, Copy, Debug)]
enum PassKind {
    Each,
    Update,
    ParEach,
    ParUpdate,
}

/// A world of `n` parts holding `Heat { t, w }` (`t` the part's index), every other part also
/// `Rate { r = 1000 }`, and a system whose pass adds 1000 to `t` over the query (`Heat` alone,
/// reading `w` if it reads, or `Heat` and `Rate`, reading `r`, when `sparse`, whose heat rows
/// are then not `0..len`) and
/// panics at the row holding `stop`. Afterwards the world must be as if the system wrote
/// the rows it reached and stopped: a changed filter yields exactly the rows whose value
/// changed, once; exactly those rows are dirty; an observed component reported exactly them.
#[track_caller]
fn check_a_panicking_pass(kind: PassKind, n: usize, stop: usize, observed: bool, sparse: bool) {
    let case =
        format!("{kind:?} over {n} rows stopping at {stop}, observed {observed}, sparse {sparse}");
    let mut world = World::with_threads(2).unwrap();
    let heat = world
        .define(
            ComponentDef::new("Heat")
                .field(FieldDef::number("t", 0.0))
                .field(FieldDef::number("w", 1.0))
                .observed(observed),
        )
        .unwrap();
    let t = world.field(heat, "t").unwrap();
    let w = world.field(heat, "w").unwrap();
    let rate = world
        .define(ComponentDef::new("Rate").field(FieldDef::number("r", 1000.0)))
        .unwrap();
    let r = world.field(rate, "r").unwrap();
    let workspace = world.workspace();
    let ids: Vec<InstanceId> = (0..n)
        .map(|k| {
            let id = world.create(ClassId::PART, Some(workspace)).unwrap();
            world.add(id, heat, [(t, Value::Number(k as f64))]).unwrap();
            if k % 2 == 0 {
                world.add(id, rate, []).unwrap();
            }
            id
        })
        .collect();
    let spec = if sparse {
        QuerySpec::new().with(heat).with(rate)
    } else {
        QuerySpec::new().with(heat)
    };
    let mut pass = world.query(spec).unwrap();
    let mut watcher = world
        .query(QuerySpec::new().with(heat).changed(heat))
        .unwrap();
    world.step(0.1).unwrap();
    world.pass(&mut watcher).unwrap();
    let burn = move |v: &f64| {
        assert!(*v as usize != stop, "stops at {stop}");
        v + 1000.0
    };
    world
        .add_system(SystemSpec::new("burn", move |ctx: &mut Ctx<'_>| {
            let chunks = Chunks::Rows(16);
            match (kind, sparse) {
                (PassKind::Each, _) => ctx.update_each::<f64>(&mut pass, (0, t), burn)?,
                (PassKind::ParEach, _) => {
                    ctx.par_update_each::<f64>(&mut pass, (0, t), chunks, burn)?
                }
                (PassKind::Update, true) => {
                    ctx.update::<f64, f64>(&mut pass, (0, t), (1, r), move |v, _| burn(v))?
                }
                (PassKind::ParUpdate, true) => {
                    ctx.par_update::<f64, f64>(&mut pass, (0, t), (1, r), chunks, move |v, _| {
                        burn(v)
                    })?
                }
                // Without a second term, the pass reads another field of its own row.
                (PassKind::Update, false) => {
                    ctx.update::<f64, f64>(&mut pass, (0, t), (0, w), move |v, _| burn(v))?
                }
                (PassKind::ParUpdate, false) => {
                    ctx.par_update::<f64, f64>(&mut pass, (0, t), (0, w), chunks, move |v, _| {
                        burn(v)
                    })?
                }
            };
            Ok(())
        }))
        .unwrap();
    let events = world.step(0.1).unwrap();
    assert_eq!(events.errors.len(), 1, "{case}: {:?}", events.errors);
    let mut reported: Vec<InstanceId> = events
        .components
        .iter()
        .filter_map(|e| match e {
            StoreEvent::Changed { id, .. } => Some(*id),
            _ => None,
        })
        .collect();
    reported.sort_unstable();
    let changed: Vec<InstanceId> = ids
        .iter()
        .enumerate()
        .filter(|(k, id)| world.get::<f64>(**id, heat, t).unwrap() != *k as f64)
        .map(|(_, id)| *id)
        .collect();
    assert!(
        !changed.is_empty(),
        "{case}: the pass wrote rows before it stopped"
    );
    assert!(changed.len() < n, "{case}: and stopped");
    if observed {
        assert_eq!(
            reported, changed,
            "{case}: the events name the written rows"
        );
    }
    let set = world.store().set(heat).unwrap();
    let mut dirty: Vec<InstanceId> = (0..set.len())
        .filter(|row| !set.dirty_mask(*row).is_empty())
        .map(|row| set.ids()[row])
        .collect();
    dirty.sort_unstable();
    assert_eq!(
        dirty, changed,
        "{case}: the written rows are dirty, and only they"
    );
    let burn = world.system_id("burn").unwrap();
    world.remove_system(burn).unwrap();
    let mut seen: Vec<InstanceId> = world
        .pass(&mut watcher)
        .unwrap()
        .iter()
        .map(|m| m.id())
        .collect();
    seen.sort_unstable();
    assert_eq!(
        seen, changed,
        "{case}: a changed filter sees the written rows"
    );
    world.step(0.1).unwrap();
    let again = world.pass(&mut watcher).unwrap().len();
    assert_eq!(again, 0, "{case}: and only once");
}

#[test]
fn a_pass_that_panics_leaves_the_rows_it_wrote_changed_once_and_dirty() {
    let kinds = [
        PassKind::Each,
        PassKind::Update,
        PassKind::ParEach,
        PassKind::ParUpdate,
    ];
    for kind in kinds {
        for (n, stop) in [(40, 20), (200, 100), (200, 130)] {
            for observed in [false, true] {
                for sparse in [false, true] {
                    check_a_panicking_pass(kind, n, stop, observed, sparse);
                }
            }
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(32))]

    /// A parallel pass reads each match's input from the match's own instance, whether the
    /// read term's rows follow one another like the written term's or lie in another order
    /// (the second component added in another order, to some instances only, after instances
    /// that hold it alone): each
    /// instance's health ends as its own value plus its own velocity's x, after two frames.
    #[test]
    fn a_parallel_update_reads_each_matchs_input_from_its_own_instance(
        n in 1usize..90,
        order in proptest::sample::subsequence((0..90usize).collect::<Vec<_>>(), 0..90),
        shuffle in proptest::prelude::any::<bool>(),
        others in 0usize..4,
    ) {
        let mut f = fixture(2);
        let (health, current, velocity, v) = (f.health, f.current, f.velocity, f.v);
        // Instances with a velocity and no health take the velocity set's first rows.
        let workspace = f.world.workspace();
        for _ in 0..others {
            let other = f.world.create(ClassId::PART, Some(workspace)).unwrap();
            f.world.add(other, velocity, []).unwrap();
        }
        let ids = parts(&mut f, n);
        let mut movers: Vec<usize> = order.into_iter().filter(|&k| k < n).collect();
        if shuffle {
            movers.reverse();
        } else {
            movers = (0..movers.len()).collect();
        }
        for &k in &movers {
            f.world
                .add(ids[k], velocity, [(v, Value::Vector(Vec3::new(k as f32 + 0.5, 0.0, 0.0)))])
                .unwrap();
        }
        let mut both = f
            .world
            .query(QuerySpec::new().with(health).with(velocity))
            .unwrap();
        f.world
            .add_system(
                SystemSpec::parallel("push", move |ctx: &mut ParCtx<'_>| {
                    ctx.update::<f64, Vec3>(&mut both, (0, current), (1, v), |hp, p| {
                        hp + f64::from(p.x)
                    })?;
                    Ok(())
                })
                .writes(health, current)
                .reads(velocity),
            )
            .unwrap();
        let before: Vec<f64> = ids
            .iter()
            .map(|id| f.world.get::<f64>(*id, health, current).unwrap())
            .collect();
        f.world.step(0.1).unwrap();
        f.world.step(0.1).unwrap();
        for (k, id) in ids.iter().enumerate() {
            let pushed = if movers.contains(&k) { 2.0 * (k as f64 + 0.5) } else { 0.0 };
            proptest::prop_assert_eq!(
                f.world.get::<f64>(*id, health, current).unwrap(),
                before[k] + pushed
            );
        }
    }
}

/// A parallel system whose pass panics part way through its rows commits what it wrote before
/// the panic and nothing after: the rows from the panicking one on keep their values and are
/// not in its write set (no unchanged entries reach the commit), and the panic is reported.
#[test]
fn a_parallel_pass_that_panics_commits_the_rows_before_the_panic_only() {
    for stop in [0usize, 1, 7, 19] {
        let mut f = fixture(2);
        let (health, current) = (f.health, f.current);
        let ids = parts(&mut f, 20);
        let mut all = f.world.query(QuerySpec::new().with(health)).unwrap();
        f.world
            .add_system(
                SystemSpec::parallel("burn", move |ctx: &mut ParCtx<'_>| {
                    ctx.update_each::<f64>(&mut all, (0, current), |hp| {
                        assert!(*hp != 100.0 + stop as f64, "stops at {stop}");
                        hp + 1000.0
                    })?;
                    Ok(())
                })
                .writes(health, current),
            )
            .unwrap();
        let events = f.world.step(0.1).unwrap();
        assert_eq!(events.errors.len(), 1, "stop {stop}: {:?}", events.errors);
        let (applied, unchanged) = events
            .commits
            .iter()
            .fold((0, 0), |(a, u), c| (a + c.applied, u + c.unchanged));
        assert_eq!((applied, unchanged), (stop, 0), "stop {stop}");
        for (k, id) in ids.iter().enumerate() {
            let expected = 100.0 + k as f64 + if k < stop { 1000.0 } else { 0.0 };
            assert_eq!(
                f.world.get::<f64>(*id, health, current).unwrap(),
                expected,
                "stop {stop}, row {k}"
            );
        }
    }
}

#[test]
fn a_replaced_system_keeps_its_id_and_statistics_and_runs_its_new_body_from_the_next_frame() {
    let mut f = fixture(1);
    let said = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let say = |word: &'static str| {
        let said = std::sync::Arc::clone(&said);
        move |_: &mut Ctx<'_>| {
            said.lock().unwrap().push(word);
            Ok(())
        }
    };
    let id = f
        .world
        .add_system(SystemSpec::new("say", say("old")))
        .unwrap();
    f.world
        .add_system(SystemSpec::new("other", say("other")))
        .unwrap();
    f.world.step(0.1).unwrap();
    // The new version runs after `other`, where the old one ran before it.
    f.world
        .replace_system(id, SystemSpec::new("say", say("new")).after("other"))
        .unwrap();
    f.world.step(0.1).unwrap();
    assert_eq!(*said.lock().unwrap(), ["old", "other", "other", "new"]);
    assert_eq!(f.world.system_id("say"), Some(id));
    let runs = |world: &World| {
        world
            .stats()
            .into_iter()
            .find(|(_, name, _)| name == "say")
            .map(|(_, _, stats)| stats.runs)
    };
    assert_eq!(runs(&f.world), Some(2), "the statistics go on");
    // Refused, changing nothing: another name, a set named like a system.
    let hash = f.world.state_hash();
    assert!(
        f.world
            .replace_system(id, SystemSpec::new("speak", say("x")))
            .is_err()
    );
    assert!(
        f.world
            .replace_system(id, SystemSpec::new("say", say("x")).in_set("other"))
            .is_err()
    );
    assert_eq!(f.world.state_hash(), hash);
    f.world.step(0.1).unwrap();
    assert_eq!(said.lock().unwrap().last(), Some(&"new"));
}
