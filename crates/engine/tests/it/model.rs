//! A model-based test of the world: random sequences of creations, moves, destructions, clones,
//! component adds, removals and writes, references (a component field and an attribute) to
//! live, destroyed and never-issued instances, frames (a system that changes every row) and
//! save-load round trips, checked after every step against a reference model of the hierarchy
//! (parents, children in order), of every instance's component value and references, and for
//! the property that every world the public API can reach saves to bytes that load.

use std::collections::BTreeMap;

use proptest::prelude::*;
use strata::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Create { parent: u16 },
    Move { what: u16, to: u16 },
    Destroy { what: u16 },
    Clone { what: u16 },
    Add { what: u16, value: i16 },
    Remove { what: u16 },
    Write { what: u16, value: i16 },
    Link { what: u16, target: Target },
    Aim { what: u16, target: Target },
    Step,
    SaveLoad,
}

/// Whom a reference names: a live folder, a destroyed one, or an id never issued.
#[derive(Clone, Copy, Debug)]
enum Target {
    Live(u16),
    Dead(u16),
    Never,
}

fn target() -> impl Strategy<Value = Target> {
    prop_oneof![
        3 => any::<u16>().prop_map(Target::Live),
        2 => any::<u16>().prop_map(Target::Dead),
        1 => Just(Target::Never),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => any::<u16>().prop_map(|parent| Op::Create { parent }),
        2 => (any::<u16>(), any::<u16>()).prop_map(|(what, to)| Op::Move { what, to }),
        2 => any::<u16>().prop_map(|what| Op::Destroy { what }),
        1 => any::<u16>().prop_map(|what| Op::Clone { what }),
        3 => (any::<u16>(), any::<i16>()).prop_map(|(what, value)| Op::Add { what, value }),
        1 => any::<u16>().prop_map(|what| Op::Remove { what }),
        2 => (any::<u16>(), any::<i16>()).prop_map(|(what, value)| Op::Write { what, value }),
        2 => (any::<u16>(), target()).prop_map(|(what, target)| Op::Link { what, target }),
        1 => (any::<u16>(), target()).prop_map(|(what, target)| Op::Aim { what, target }),
        2 => Just(Op::Step),
        1 => Just(Op::SaveLoad),
    ]
}

#[derive(Clone, Debug, Default)]
struct Inst {
    parent: Option<InstanceId>,
    children: Vec<InstanceId>,
    health: Option<f64>,
    /// `Link.to`, when it holds a `Link`.
    link: Option<Option<InstanceId>>,
    /// The `focus` attribute, when it has one.
    focus: Option<Option<InstanceId>>,
}

/// The hierarchy and values as the model keeps them; folders only, under the workspace or one
/// another, so every move and destruction the model allows the world allows too.
#[derive(Debug, Default)]
struct Model {
    insts: BTreeMap<InstanceId, Inst>,
    workspace: Option<InstanceId>,
    /// Instances destroyed so far.
    dead: Vec<InstanceId>,
}

impl Model {
    fn folders(&self) -> Vec<InstanceId> {
        self.insts.keys().copied().collect()
    }

    fn pick(&self, n: u16) -> Option<InstanceId> {
        let folders = self.folders();
        (!folders.is_empty()).then(|| folders[n as usize % folders.len()])
    }

    /// The instance a target names, and whether it is live.
    fn resolve(&self, target: Target) -> (InstanceId, bool) {
        match target {
            Target::Live(n) => match self.pick(n) {
                Some(id) => (id, true),
                None => (InstanceId::new(1_000_000).unwrap(), false),
            },
            Target::Dead(n) if !self.dead.is_empty() => {
                (self.dead[n as usize % self.dead.len()], false)
            }
            Target::Dead(_) | Target::Never => (InstanceId::new(1_000_000).unwrap(), false),
        }
    }

    fn subtree(&self, root: InstanceId) -> Vec<InstanceId> {
        let mut out = vec![root];
        let mut at = 0;
        while at < out.len() {
            let children = self.insts[&out[at]].children.clone();
            // Pre-order: children right after their parent, in order.
            let tail = out.split_off(at + 1);
            out.extend(children);
            out.extend(tail);
            at += 1;
        }
        out
    }

    fn detach(&mut self, id: InstanceId) {
        if let Some(parent) = self.insts[&id].parent
            && let Some(p) = self.insts.get_mut(&parent)
        {
            p.children.retain(|c| *c != id);
        }
    }
}

fn pre_order(world: &World, root: InstanceId) -> Vec<InstanceId> {
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(id) = stack.pop() {
        out.push(id);
        let mut children = world.children(id).unwrap();
        children.reverse();
        stack.extend(children);
    }
    out
}

struct Run {
    world: World,
    health: ComponentId,
    hp: FieldId,
    link: ComponentId,
    to: FieldId,
}

fn new_run(world: World) -> Run {
    let mut world = world;
    let health = world
        .define(ComponentDef::new("Health").field(FieldDef::number("hp", 0.0)))
        .unwrap();
    let hp = world.field(health, "hp").unwrap();
    let link = world
        .define(ComponentDef::new("Link").field(FieldDef::reference("to", RefPolicy::Clear)))
        .unwrap();
    let to = world.field(link, "to").unwrap();
    let mut all = world.query(QuerySpec::new().with(health)).unwrap();
    world
        .add_system(SystemSpec::new("tick", move |ctx: &mut Ctx<'_>| {
            ctx.update_each::<f64>(&mut all, (0, hp), |v| v + 1.0)?;
            Ok(())
        }))
        .unwrap();
    Run {
        world,
        health,
        hp,
        link,
        to,
    }
}

fn check(run: &Run, model: &Model) {
    let w = &run.world;
    let workspace = w.workspace();
    let mut live: Vec<InstanceId> = pre_order(w, workspace).into_iter().skip(1).collect();
    // Unparented folders (clones land unparented).
    let mut roots: Vec<InstanceId> = w
        .arena()
        .iter()
        .filter(|n| n.parent().is_none() && n.class() == ClassId::FOLDER)
        .map(|n| n.id())
        .collect();
    roots.sort_unstable();
    for root in roots {
        live.extend(pre_order(w, root));
    }
    live.sort_unstable();
    assert_eq!(live, model.folders(), "the live folders");
    for (id, inst) in &model.insts {
        let parent = w.parent(*id).unwrap();
        let expected = inst.parent.or(None);
        assert_eq!(parent, expected, "{id}'s parent");
        assert_eq!(w.children(*id).unwrap(), inst.children, "{id}'s children");
        let value = w.get::<f64>(*id, run.health, run.hp).ok();
        assert_eq!(value, inst.health, "{id}'s health");
    }
    assert_eq!(
        w.store().set(run.health).unwrap().len(),
        model.insts.values().filter(|i| i.health.is_some()).count()
    );
    for (id, inst) in &model.insts {
        let link = w.get_value(*id, run.link, run.to).ok();
        assert_eq!(link, inst.link.map(Value::Reference), "{id}'s link");
        let focus = w.attribute(*id, "focus").unwrap().cloned();
        assert_eq!(focus, inst.focus.map(AttrValue::Reference), "{id}'s focus");
    }
    // Whatever the operations did, the world saves to bytes that load.
    let mut file = Vec::new();
    w.save(&mut file).unwrap();
    World::load_with_threads(file.as_slice(), 1).expect("every reachable world loads");
}

fn apply(run: &mut Run, model: &mut Model, op: Op) {
    let workspace = run.world.workspace();
    model.workspace = Some(workspace);
    match op {
        Op::Create { parent } => {
            let parent = model.pick(parent).unwrap_or(workspace);
            let parent = if parent.get().is_multiple_of(3) {
                workspace
            } else {
                parent
            };
            let id = run.world.create(ClassId::FOLDER, Some(parent)).unwrap();
            model.insts.insert(
                id,
                Inst {
                    parent: Some(parent),
                    ..Inst::default()
                },
            );
            if let Some(p) = model.insts.get_mut(&parent) {
                p.children.push(id);
            }
        }
        Op::Move { what, to } => {
            let Some(what) = model.pick(what) else { return };
            let to = model.pick(to).unwrap_or(workspace);
            let cycle = model.subtree(what).contains(&to);
            let moved = run.world.set_parent(what, Some(to));
            if cycle {
                assert!(moved.is_err());
                return;
            }
            let moved = moved.unwrap();
            if model.insts[&what].parent == Some(to) {
                assert!(!moved, "a move to where it is changes nothing");
                return;
            }
            model.detach(what);
            model.insts.get_mut(&what).unwrap().parent = Some(to);
            if let Some(p) = model.insts.get_mut(&to) {
                p.children.push(what);
            }
        }
        Op::Destroy { what } => {
            let Some(what) = model.pick(what) else { return };
            let report = run.world.destroy(what).unwrap();
            let doomed = model.subtree(what);
            assert_eq!(report.destroyed, doomed, "the subtree, in pre-order");
            model.detach(what);
            for id in &doomed {
                model.insts.remove(id);
            }
            // References to the destroyed are cleared.
            for inst in model.insts.values_mut() {
                for reference in [&mut inst.link, &mut inst.focus].into_iter().flatten() {
                    if reference.is_some_and(|t| doomed.contains(&t)) {
                        *reference = None;
                    }
                }
            }
            model.dead.extend(doomed);
        }
        Op::Clone { what } => {
            let Some(what) = model.pick(what) else { return };
            let copy = run.world.clone_subtree(what, None).unwrap();
            let sources = model.subtree(what);
            let copies = pre_order(&run.world, copy);
            assert_eq!(sources.len(), copies.len());
            let map: BTreeMap<InstanceId, InstanceId> = sources
                .iter()
                .copied()
                .zip(copies.iter().copied())
                .collect();
            for (source, copy) in &map {
                let original = model.insts[source].clone();
                model.insts.insert(
                    *copy,
                    Inst {
                        parent: if source == &what {
                            None
                        } else {
                            original.parent.map(|p| map[&p])
                        },
                        children: original.children.iter().map(|c| map[c]).collect(),
                        health: original.health,
                        // References inside the copied subtree follow the copy.
                        link: original
                            .link
                            .map(|l| l.map(|t| map.get(&t).copied().unwrap_or(t))),
                        focus: original
                            .focus
                            .map(|f| f.map(|t| map.get(&t).copied().unwrap_or(t))),
                    },
                );
            }
        }
        Op::Add { what, value } => {
            let Some(what) = model.pick(what) else { return };
            let added = run.world.add(
                what,
                run.health,
                [(run.hp, Value::Number(f64::from(value)))],
            );
            let inst = model.insts.get_mut(&what).unwrap();
            if inst.health.is_some() {
                assert!(added.is_err(), "already present");
            } else {
                added.unwrap();
                inst.health = Some(f64::from(value));
            }
        }
        Op::Remove { what } => {
            let Some(what) = model.pick(what) else { return };
            let removed = run.world.remove(what, run.health).unwrap();
            let inst = model.insts.get_mut(&what).unwrap();
            assert_eq!(removed, inst.health.is_some());
            inst.health = None;
        }
        Op::Write { what, value } => {
            let Some(what) = model.pick(what) else { return };
            let written = run.world.write(what, run.health, run.hp, f64::from(value));
            let inst = model.insts.get_mut(&what).unwrap();
            match inst.health {
                Some(_) => {
                    written.unwrap();
                    inst.health = Some(f64::from(value));
                }
                None => assert!(written.is_err()),
            }
        }
        Op::Link { what, target } => {
            let Some(what) = model.pick(what) else { return };
            let (target, live) = model.resolve(target);
            let value = Value::Reference(Some(target));
            let inst = model.insts.get_mut(&what).unwrap();
            let result = match inst.link {
                Some(_) => run
                    .world
                    .write_value(what, run.link, run.to, value)
                    .map(|_| ()),
                None => run.world.add(what, run.link, [(run.to, value)]),
            };
            assert_eq!(result.is_ok(), live, "{result:?}");
            if live {
                inst.link = Some(Some(target));
            }
        }
        Op::Aim { what, target } => {
            let Some(what) = model.pick(what) else { return };
            let (target, live) = model.resolve(target);
            let result =
                run.world
                    .set_attribute(what, "focus", Some(AttrValue::Reference(Some(target))));
            assert_eq!(result.is_ok(), live, "{result:?}");
            if live {
                model.insts.get_mut(&what).unwrap().focus = Some(Some(target));
            }
        }
        Op::Step => {
            run.world.step(0.1).unwrap();
            for inst in model.insts.values_mut() {
                if let Some(h) = &mut inst.health {
                    *h += 1.0;
                }
            }
        }
        Op::SaveLoad => {
            let mut file = Vec::new();
            run.world.save(&mut file).unwrap();
            let loaded = World::load_with_threads(file.as_slice(), 1).unwrap();
            *run = new_run(loaded);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn the_world_follows_the_model(ops in prop::collection::vec(op(), 1..60)) {
        let mut run = new_run(World::with_threads(1).unwrap());
        let mut model = Model::default();
        for op in ops {
            apply(&mut run, &mut model, op);
            check(&run, &model);
        }
    }
}

/// Listens to a world's lifecycle events: each event, and what the listener reads of a
/// destroyed subtree in its scope.
fn listen(world: &mut World) -> std::sync::Arc<std::sync::Mutex<Vec<String>>> {
    let heard = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = heard.clone();
    world.on_lifecycle(move |event, view| {
        let ids: Vec<InstanceId> = match event {
            Event::Destroyed { subtree } => subtree.as_slice().to_vec(),
            Event::DestroyedMany(batch) => batch.destroyed.clone(),
            _ => Vec::new(),
        };
        let read: Vec<Option<(String, Option<InstanceId>)>> = ids
            .iter()
            .map(|id| view.get(*id).map(|n| (n.name().to_owned(), n.parent())))
            .collect();
        log.lock().unwrap().push(format!("{event:?} {read:?}"));
    });
    heard
}

fn saved(world: &World) -> Vec<u8> {
    let mut file = Vec::new();
    world.save(&mut file).unwrap();
    file
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A world saved at any point, between frames or inside one (after destructions, moves and
    /// creations whose events wait for the frame's end), and loaded, steps as the world it was
    /// saved from: the same lifecycle events, the same destroyed subtrees read by listeners,
    /// and the same world after each frame.
    #[test]
    fn a_loaded_world_steps_as_the_world_it_was_saved_from(ops in prop::collection::vec(op(), 1..60)) {
        let mut run = new_run(World::with_threads(1).unwrap());
        let mut model = Model::default();
        for op in ops {
            if !matches!(op, Op::SaveLoad) {
                apply(&mut run, &mut model, op);
            }
        }
        let file = saved(&run.world);
        let mut twin = new_run(World::load_with_threads(file.as_slice(), 1).unwrap());
        prop_assert_eq!(saved(&twin.world), file);
        let heard = listen(&mut run.world);
        let twin_heard = listen(&mut twin.world);
        for frame in 0..3 {
            let events = format!("{:?}", run.world.step(0.1).unwrap().lifecycle);
            let twin_events = format!("{:?}", twin.world.step(0.1).unwrap().lifecycle);
            prop_assert_eq!(twin_events, events, "frame {}", frame);
            prop_assert_eq!(std::mem::take(&mut *twin_heard.lock().unwrap()), std::mem::take(&mut *heard.lock().unwrap()), "frame {}", frame);
            prop_assert_eq!(saved(&twin.world), saved(&run.world), "frame {}", frame);
        }
    }
}
