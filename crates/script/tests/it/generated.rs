//! Determinism over generated worlds, and replay.
//!
//! A generator draws a world from a seed: rooms of nested parts holding observed components,
//! some rooms marked as execution groups running a Luau group script, Rust parallel systems
//! whose writes conflict (some ordered, some not), a Luau parallel system, a serial system that
//! spawns, destroys, reparents and removes by frame number, a fixed-step system and an interval
//! system. Each world steps 200 frames on 1, 2 and 8 threads, and under shuffled lane
//! assignment and finishing order (`World::set_lane_shuffle`), and with its queries uncached
//! (`Scene::set_query_caching`); the state hash (`World::state_hash`: everything a save holds,
//! and the change ticks and dirty fields), the prints and the errors must agree after every
//! frame.
//!
//! The replay test records a run's inputs (each frame's measured `dt` and the edits made from
//! outside between frames, drawn from the clock), writes them out as text, reads them back and
//! replays them into a fresh world on another thread count under a lane shuffle: every frame
//! must state-hash as it did when recorded.

use std::time::Instant;

use strata::prelude::*;
use strata_script::prelude::*;

/// splitmix64: the generator's draws.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn number(&mut self) -> f64 {
        (self.next() % 10_000) as f64 / 100.0
    }
}

/// The generated world's components and fields.
#[derive(Clone, Copy)]
struct Kinds {
    heat: ComponentId,
    t: FieldId,
    flow: FieldId,
    mass: ComponentId,
    m: FieldId,
    charge: ComponentId,
    q: FieldId,
}

/// The group script every marked room runs: it walks its room, cools each part towards its
/// mass and charges the room, and every group writes the shared instance (the last room in
/// hierarchy order wins).
const CELL: &str = r#"
local frames = 0
local function walk(inst, visit)
    for _, child in inst:GetChildren() do
        visit(child)
        walk(child, visit)
    end
end
return system {
    phase = "Update",
    run = function(world, dt, root)
        frames += 1
        local total = 0
        walk(root, function(part)
            local heat = part:GetComponent(Heat)
            if heat then
                local mass = part:GetComponent(Mass)
                local m = if mass then mass.m else 1
                heat.t = (heat.t * 0.9 + m + frames) % 500
                total += heat.t
            end
        end)
        local charge = root:GetComponent(Charge)
        if charge then
            charge.q = (charge.q + total) % 1000
        end
        local shared = world.workspace:FindFirstChild("Shared")
        if shared then
            shared:GetComponent(Heat).t = total % 100
        end
        if frames % 50 == 0 then
            print(string.format("%s %d %.3f", root.Name, frames, total))
        end
    end,
}
"#;

/// A Luau parallel system reading heat and writing mass.
const SETTLE: &str = r#"
return system {
    phase = "PostUpdate",
    parallel = true,
    writes = { Mass = { "m" } },
    run = function(world, dt)
        for part, heat, mass in world:query { with = { Heat, Mass } } do
            mass.m = (mass.m + heat.t * 0.01) % 50
        end
    end,
}
"#;

fn define(world: &mut World) -> Kinds {
    let heat = world
        .define(
            ComponentDef::new("Heat")
                .field(FieldDef::number("t", 20.0))
                .field(FieldDef::vector("flow", Vec3::ZERO))
                .observed(true),
        )
        .unwrap();
    let mass = world
        .define(ComponentDef::new("Mass").field(FieldDef::number("m", 1.0)))
        .unwrap();
    let charge = world
        .define(
            ComponentDef::new("Charge")
                .field(FieldDef::number("q", 0.0))
                .observed(true),
        )
        .unwrap();
    Kinds {
        heat,
        t: world.field(heat, "t").unwrap(),
        flow: world.field(heat, "flow").unwrap(),
        mass,
        m: world.field(mass, "m").unwrap(),
        charge,
        q: world.field(charge, "q").unwrap(),
    }
}

/// Gives `id` each component with its chance, at drawn values.
fn furnish(world: &mut World, kinds: Kinds, rng: &mut Rng, id: InstanceId) {
    if rng.chance(80) {
        world
            .add(id, kinds.heat, [(kinds.t, Value::Number(rng.number()))])
            .unwrap();
    }
    if rng.chance(50) {
        world
            .add(id, kinds.mass, [(kinds.m, Value::Number(rng.number()))])
            .unwrap();
    }
    if rng.chance(30) {
        world
            .add(id, kinds.charge, [(kinds.q, Value::Number(rng.number()))])
            .unwrap();
    }
}

/// Every instance under the workspace, in pre-order.
fn descendants(world: &World) -> Vec<InstanceId> {
    let mut out = Vec::new();
    let mut stack = vec![world.workspace()];
    while let Some(at) = stack.pop() {
        let children = world.children(at).unwrap();
        for child in children.iter().rev() {
            stack.push(*child);
        }
        if at != world.workspace() {
            out.push(at);
        }
    }
    out
}

/// The world `seed` draws, on `threads` threads, its queries cached or not.
fn generate(seed: u64, threads: usize, cached: bool) -> World {
    let mut rng = Rng(seed);
    let mut world = World::with_seed(threads, seed).unwrap();
    world.set_query_caching(cached);
    world.set_fixed_step(1.0 / 30.0, 3).unwrap();
    let kinds = define(&mut world);
    let workspace = world.workspace();
    let shared = world.create(ClassId::PART, Some(workspace)).unwrap();
    world.set_name(shared, "Shared").unwrap();
    world.add(shared, kinds.heat, []).unwrap();

    let rooms = 3 + rng.below(5);
    let mut marked = 0;
    for r in 0..rooms {
        let room = world.create(ClassId::MODEL, Some(workspace)).unwrap();
        world.set_name(room, &format!("Room{r}")).unwrap();
        furnish(&mut world, kinds, &mut rng, room);
        let mut parents = vec![room];
        for _ in 0..4 + rng.below(20) {
            let parent = parents[rng.below(parents.len())];
            let part = world.create(ClassId::PART, Some(parent)).unwrap();
            furnish(&mut world, kinds, &mut rng, part);
            if rng.chance(40) {
                parents.push(part);
            }
        }
        if rng.chance(70) || (r + 1 == rooms && marked < 2) {
            world.set_execution_group(room, Some("cell")).unwrap();
            marked += 1;
        }
    }
    for _ in 0..rng.below(10) {
        let loose = world.create(ClassId::PART, Some(workspace)).unwrap();
        furnish(&mut world, kinds, &mut rng, loose);
    }
    world
        .add_group_script("cell", "groups/cell.luau", CELL)
        .unwrap();
    world
        .add_script_system("settle", "systems/settle.luau", SETTLE)
        .unwrap();

    // Parallel writers: each writes heat or charge from a drawn formula; the heat writers
    // conflict, and some are ordered after an earlier one.
    let writers = 2 + rng.below(4);
    for w in 0..writers {
        let factor = 0.5 + rng.number() / 100.0;
        let offset = rng.number();
        let name = format!("writer{w}");
        let mut spec = if rng.chance(60) {
            let mut all = world.query(QuerySpec::new().with(kinds.heat)).unwrap();
            let t = kinds.t;
            SystemSpec::parallel(&name, move |ctx: &mut ParCtx<'_>| {
                let frame = ctx.frame() as f64;
                ctx.update_each::<f64>(&mut all, (0, t), |v| {
                    (v * factor + offset + frame) % 900.0
                })?;
                Ok(())
            })
            .writes(kinds.heat, kinds.t)
        } else {
            let mut both = world
                .query(QuerySpec::new().with(kinds.charge).with(kinds.heat))
                .unwrap();
            let (q, t) = (kinds.q, kinds.t);
            SystemSpec::parallel(&name, move |ctx: &mut ParCtx<'_>| {
                ctx.update::<f64, f64>(&mut both, (0, q), (1, t), |q, t| (q * factor + t) % 700.0)?;
                Ok(())
            })
            .writes(kinds.charge, kinds.q)
            .reads(kinds.heat)
        };
        spec = spec.with_hierarchy(rng.below(8) as u32);
        if w > 0 && rng.chance(30) {
            spec = spec.after(&format!("writer{}", rng.below(w)));
        }
        world.add_system(spec).unwrap();
    }
    let mut flows = world.query(QuerySpec::new().with(kinds.heat)).unwrap();
    let (flow, t) = (kinds.flow, kinds.t);
    world
        .add_system(
            SystemSpec::parallel("flow", move |ctx: &mut ParCtx<'_>| {
                ctx.update::<Vec3, f64>(&mut flows, (0, flow), (0, t), |f, t| {
                    Vec3::new((f.x + *t as f32) % 1000.0, f.y + 1.0, f.z - 1.0)
                })?;
                Ok(())
            })
            .writes(kinds.heat, kinds.flow)
            .with_hierarchy(rng.below(8) as u32),
        )
        .unwrap();

    // Structure changes by frame number, in a serial system.
    let stride = 3 + rng.below(7);
    world
        .add_system(
            SystemSpec::new("churn", move |ctx: &mut Ctx<'_>| {
                let frame = ctx.frame() as usize;
                let workspace = ctx.workspace();
                let rooms: Vec<InstanceId> = ctx
                    .children(workspace)?
                    .into_iter()
                    .filter(|id| ctx.execution_group(*id).is_some())
                    .collect();
                let Some(&room) = rooms.get(frame % rooms.len().max(1)) else {
                    return Ok(());
                };
                let part = ctx.create(ClassId::PART, Some(room))?;
                ctx.add(part, kinds.heat, [(kinds.t, Value::Number(frame as f64))])?;
                if frame.is_multiple_of(2) {
                    ctx.add(part, kinds.mass, [(kinds.m, Value::Number(2.0))])?;
                }
                let children = ctx.children(room)?;
                if frame.is_multiple_of(stride) && children.len() > 2 {
                    ctx.destroy(children[frame % children.len()])?;
                }
                let children = ctx.children(room)?;
                if frame % 5 == 1 && children.len() > 1 {
                    let mover = children[(frame / 5) % children.len()];
                    let target = rooms[(frame / 3) % rooms.len()];
                    if mover != target {
                        ctx.set_parent(mover, Some(target))?;
                    }
                }
                if frame % 7 == 3 {
                    let first = ctx.children(room)?[0];
                    ctx.remove(first, kinds.mass)?;
                }
                Ok(())
            })
            .in_phase(Phase::PostUpdate),
        )
        .unwrap();
    let mut fixed = world.query(QuerySpec::new().with(kinds.mass)).unwrap();
    let m = kinds.m;
    world
        .add_system(
            SystemSpec::new("fixed", move |ctx: &mut Ctx<'_>| {
                ctx.update_each::<f64>(&mut fixed, (0, m), |v| (v + 0.25) % 60.0)?;
                Ok(())
            })
            .in_fixed_block(),
        )
        .unwrap();
    let mut charged = world.query(QuerySpec::new().with(kinds.charge)).unwrap();
    let q = kinds.q;
    world
        .add_system(
            SystemSpec::parallel("discharge", move |ctx: &mut ParCtx<'_>| {
                ctx.update_each::<f64>(&mut charged, (0, q), |v| v * 0.5)?;
                Ok(())
            })
            .writes(kinds.charge, kinds.q)
            .with_interval(0.1),
        )
        .unwrap();
    world
}

/// What a frame left that must agree between runs: the state hash, the prints, the errors.
type Frame = (u64, Vec<String>, Vec<String>);

fn observe(world: &mut World, dt: f64) -> Frame {
    let events = world.step(dt).unwrap();
    let prints = events.prints.clone();
    let errors = events
        .errors
        .iter()
        .map(|(name, error)| format!("{name}: {error}"))
        .collect();
    (world.state_hash(), prints, errors)
}

const DTS: [f64; 5] = [1.0 / 60.0, 1.0 / 30.0, 0.05, 1.0 / 144.0, 0.1];

/// Runs world `seed` on `threads` threads for `frames` frames, lanes shuffled by `lanes`, its
/// queries (Rust and Luau) cached or not.
fn run(seed: u64, threads: usize, lanes: Option<u64>, cached: bool, frames: usize) -> Vec<Frame> {
    let mut world = generate(seed, threads, cached);
    world.set_lane_shuffle(lanes);
    (0..frames)
        .map(|frame| observe(&mut world, DTS[frame % DTS.len()]))
        .collect()
}

fn agree(seed: u64, reference: &[Frame], other: &[Frame], what: &str) {
    for (frame, (a, b)) in reference.iter().zip(other).enumerate() {
        assert_eq!(a, b, "world {seed}, {what}: frame {frame} differs");
    }
    assert_eq!(reference.len(), other.len());
}

#[test]
fn generated_worlds_hash_alike_every_frame_on_any_threads_and_lane_shuffle() {
    for seed in [1, 2, 3] {
        let reference = run(seed, 1, None, true, 200);
        assert!(
            reference.iter().all(|(_, _, errors)| errors.is_empty()),
            "world {seed}: {:?}",
            reference.iter().find(|(_, _, e)| !e.is_empty())
        );
        assert!(
            reference.iter().any(|(_, prints, _)| !prints.is_empty()),
            "world {seed}: the groups printed"
        );
        for (threads, lanes, cached) in [
            (2, None, true),
            (8, None, true),
            (2, Some(seed), true),
            (8, Some(seed + 100), true),
            (2, None, false),
        ] {
            let other = run(seed, threads, lanes, cached, 200);
            agree(
                seed,
                &reference,
                &other,
                &format!("{threads} threads, lane shuffle {lanes:?}, cached queries {cached}"),
            );
        }
    }
}

#[test]
fn generated_worlds_do_run_groups_writers_and_churn() {
    let mut world = generate(2, 2, true);
    let before = descendants(&world).len();
    let mut conflicts = 0;
    let mut group_writes = 0;
    for frame in 0..60 {
        let events = world.step(DTS[frame % DTS.len()]).unwrap();
        assert!(events.errors.is_empty(), "{:?}", events.errors);
        conflicts += events
            .commits
            .iter()
            .map(|c| c.conflicts.len())
            .sum::<usize>();
        group_writes += events.commits.iter().map(|c| c.applied).sum::<usize>();
    }
    assert!(conflicts > 0, "the writers and the groups conflict");
    assert!(group_writes > 0);
    assert_ne!(descendants(&world).len(), before, "churn changed structure");
    let stats = world.stats_table();
    for name in [
        "group:cell",
        "settle",
        "writer0",
        "flow",
        "churn",
        "fixed",
        "discharge",
    ] {
        assert!(stats.contains(name), "{name} ran:\n{stats}");
    }
}

/// An edit made from outside between frames, by position in the pre-order walk.
#[derive(Clone, Debug, PartialEq)]
enum Edit {
    Spawn { under: usize, t: f64 },
    Destroy { at: usize },
    Write { at: usize, t: f64 },
    Move { at: usize, under: usize },
}

/// A recorded frame: its edits, then a step of `dt`.
#[derive(Clone, Debug, PartialEq)]
struct Input {
    edits: Vec<Edit>,
    dt: f64,
}

fn apply(world: &mut World, kinds: (ComponentId, FieldId), edit: &Edit) {
    let mut all = descendants(world);
    // Edits may destroy every descendant of the workspace: the workspace stands in then.
    if all.is_empty() {
        all.push(world.workspace());
    }
    let pick = |at: usize| all[at % all.len()];
    match *edit {
        Edit::Spawn { under, t } => {
            let part = world.create(ClassId::PART, Some(pick(under))).unwrap();
            world
                .add(part, kinds.0, [(kinds.1, Value::Number(t))])
                .unwrap();
        }
        Edit::Destroy { at } => {
            let id = pick(at);
            if id != world.workspace() && world.name(id).unwrap() != "Shared" {
                world.destroy(id).unwrap();
            }
        }
        Edit::Write { at, t } => {
            let id = pick(at);
            if world.has(id, kinds.0) {
                world.write(id, kinds.0, kinds.1, t).unwrap();
            }
        }
        Edit::Move { at, under } => {
            let (id, parent) = (pick(at), pick(under));
            // Refused when `parent` is `id` or below it; a refusal changes nothing.
            let _ = world.set_parent(id, Some(parent));
        }
    }
}

/// Inputs as text, one frame a line: the dt's bits, then the edits.
fn write_log(inputs: &[Input]) -> String {
    let mut out = String::new();
    for input in inputs {
        out.push_str(&format!("{:x}", input.dt.to_bits()));
        for edit in &input.edits {
            out.push_str(&match edit {
                Edit::Spawn { under, t } => format!(" s{under}:{:x}", t.to_bits()),
                Edit::Destroy { at } => format!(" d{at}"),
                Edit::Write { at, t } => format!(" w{at}:{:x}", t.to_bits()),
                Edit::Move { at, under } => format!(" m{at}:{under}"),
            });
        }
        out.push('\n');
    }
    out
}

fn read_log(text: &str) -> Vec<Input> {
    let bits = |s: &str| f64::from_bits(u64::from_str_radix(s, 16).unwrap());
    fn pair(s: &str) -> (usize, &str) {
        let (a, b) = s.split_once(':').unwrap();
        (a.parse::<usize>().unwrap(), b)
    }
    text.lines()
        .map(|line| {
            let mut words = line.split(' ');
            let dt = bits(words.next().unwrap());
            let edits = words
                .map(|word| {
                    let (kind, rest) = word.split_at(1);
                    match kind {
                        "s" => {
                            let (under, t) = pair(rest);
                            Edit::Spawn { under, t: bits(t) }
                        }
                        "d" => Edit::Destroy {
                            at: rest.parse().unwrap(),
                        },
                        "w" => {
                            let (at, t) = pair(rest);
                            Edit::Write { at, t: bits(t) }
                        }
                        "m" => {
                            let (at, under) = pair(rest);
                            Edit::Move {
                                at,
                                under: under.parse().unwrap(),
                            }
                        }
                        other => panic!("unknown edit {other}"),
                    }
                })
                .collect();
            Input { edits, dt }
        })
        .collect()
}

fn heat_of(world: &World) -> (ComponentId, FieldId) {
    world.field_named("Heat", "t").unwrap()
}

#[test]
fn a_recorded_run_replays_to_the_same_hash_every_frame() {
    // The recording: edits and dts drawn from the clock, so no two recordings are alike.
    let clock = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    let mut rng = Rng(clock.as_nanos() as u64);
    let mut world = generate(5, 2, true);
    let heat = heat_of(&world);
    let mut inputs = Vec::new();
    let mut hashes = Vec::new();
    let mut last = Instant::now();
    for _ in 0..120 {
        let mut edits = Vec::new();
        for _ in 0..rng.below(4) {
            let (a, b) = (rng.below(1000), rng.below(1000));
            edits.push(match rng.below(4) {
                0 => Edit::Spawn {
                    under: a,
                    t: rng.number(),
                },
                1 => Edit::Destroy { at: a },
                2 => Edit::Write {
                    at: a,
                    t: rng.number(),
                },
                _ => Edit::Move { at: a, under: b },
            });
        }
        for edit in &edits {
            apply(&mut world, heat, edit);
        }
        let now = Instant::now();
        let dt = (now - last).as_secs_f64().clamp(1e-4, 0.25);
        last = now;
        let (hash, _, errors) = observe(&mut world, dt);
        assert!(errors.is_empty(), "{errors:?}");
        hashes.push(hash);
        inputs.push(Input { edits, dt });
    }
    let log = write_log(&inputs);
    let replayed_inputs = read_log(&log);
    assert_eq!(replayed_inputs, inputs, "the log reads back as written");

    // The replay: another thread count, lanes shuffled, queries uncached.
    let mut replay = generate(5, 8, false);
    replay.set_lane_shuffle(Some(9));
    for (frame, input) in replayed_inputs.iter().enumerate() {
        for edit in &input.edits {
            apply(&mut replay, heat, edit);
        }
        let (hash, _, _) = observe(&mut replay, input.dt);
        assert_eq!(hash, hashes[frame], "frame {frame} replays differently");
    }
}
