//! Save files: what a save holds, byte-identical round trips (a property over random worlds),
//! orphans adopted when their definition appears, and every damaged or hostile file refused
//! with a typed error, never a panic, never an allocation sized by an unchecked length.

use proptest::prelude::*;
use strata::prelude::*;

const TEAM: &str = r#"return component {
    fields = {
        name = text("red"),
        score = integer(0),
        spawn = vector(1, 2, 3),
        members = list(ref()),
        ranks = map(text(), integer(0)),
        flag = struct({ color = text("white"), raised = boolean(false) }),
        motto = optional(text("")),
        data = buffer(),
    },
}"#;

/// A world with every kind of thing a save holds.
fn world() -> World {
    let mut world = World::with_threads(1).unwrap();
    world.set_fixed_step(0.2, 5).unwrap();
    world.define_luau("Team", TEAM, None).unwrap();
    let health = world
        .define(ComponentDef::new("Health").field(FieldDef::number("current", 100.0)))
        .unwrap();
    let current = world.field(health, "current").unwrap();
    world.sync_definitions();
    let workspace = world.workspace();
    let model = world.create(ClassId::MODEL, Some(workspace)).unwrap();
    let part = world.create(ClassId::PART, Some(model)).unwrap();
    world.set_name(part, "Wheel").unwrap();
    world.tag(part, "round").unwrap();
    world.ensure_persistent_id(part).unwrap();
    world
        .set_attribute(model, "owner", Some(AttrValue::Reference(Some(part))))
        .unwrap();
    world
        .add(part, health, [(current, Value::Number(-0.0))])
        .unwrap();
    let (team, members) = world.field_named("Team", "members").unwrap();
    world
        .add(
            model,
            team,
            [(
                members,
                Value::List(strata::layers::store::ListValue::from_vec(vec![
                    Value::Reference(Some(part)),
                ])),
            )],
        )
        .unwrap();
    let gone = world.create(ClassId::FOLDER, None).unwrap();
    world.destroy(gone).unwrap();
    world.step(0.3).unwrap();
    world
}

fn save(world: &World) -> Vec<u8> {
    let mut file = Vec::new();
    world.save(&mut file).unwrap();
    file
}

fn load(file: &[u8]) -> Result<World, LoadError> {
    World::load_with_threads(file, 1)
}

/// Puts `payload` behind a valid header of the current version with its checksum.
fn wrap(payload: &[u8]) -> Vec<u8> {
    let mut file = b"STRATASV".to_vec();
    file.extend_from_slice(&2u32.to_le_bytes());
    file.extend_from_slice(&5u16.to_le_bytes());
    file.extend_from_slice(b"0.1.0");
    file.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    file.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    file.extend_from_slice(payload);
    file
}

/// The payload of a save (after its header).
fn payload(file: &[u8]) -> &[u8] {
    let version_len = u16::from_le_bytes([file[12], file[13]]) as usize;
    &file[14 + version_len + 12..]
}

#[test]
fn a_loaded_world_is_the_saved_world_and_saves_to_the_same_bytes() {
    let world = world();
    let file = save(&world);
    assert_eq!(save(&world), file, "saving twice writes the same bytes");
    let mut loaded = load(&file).unwrap();
    assert_eq!(loaded.frame(), world.frame());
    assert_eq!(loaded.time(), world.time());
    assert_eq!(loaded.fixed_step(), world.fixed_step());
    assert!((loaded.fixed_carried() - world.fixed_carried()).abs() < 1e-12);
    for node in world.arena().iter() {
        let other = loaded.arena().get(node.id()).expect("every instance");
        assert_eq!(other.guid(), node.guid());
        assert_eq!(other.persistent_id(), node.persistent_id());
        assert_eq!(other.data(), node.data());
        assert_eq!(other.tags(), node.tags());
        assert_eq!(other.parent(), node.parent());
    }
    assert_eq!(loaded.arena().live_count(), world.arena().live_count());
    // Luau components are back at once; the Rust one waits as orphans for its definition.
    let (team, score) = loaded.field_named("Team", "score").unwrap();
    let model = loaded.children(loaded.workspace()).unwrap()[0];
    assert_eq!(loaded.get::<i64>(model, team, score).unwrap(), 0);
    assert!(loaded.component("Health").is_err());
    let health = loaded
        .define(ComponentDef::new("Health").field(FieldDef::number("current", 100.0)))
        .unwrap();
    let current = loaded.field(health, "current").unwrap();
    let part = loaded.children(model).unwrap()[0];
    assert!(
        loaded
            .get::<f64>(part, health, current)
            .unwrap()
            .is_sign_negative()
    );
    assert_eq!(save(&loaded), file, "save, load, save: the same bytes");
    // The id counter goes on above everything the saved world issued.
    let next = loaded.create(ClassId::FOLDER, None).unwrap();
    assert!(next.get() >= world.arena().iter().map(|n| n.id().get()).max().unwrap() + 2);
}

#[test]
fn a_file_that_is_not_a_save_of_this_version_is_refused() {
    let file = save(&world());
    assert!(matches!(load(b"hello, world"), Err(LoadError::NotASave)));
    let mut other = file.clone();
    other[8] = 9;
    assert!(matches!(
        load(&other),
        Err(LoadError::UnsupportedVersion {
            found: 9,
            supported: 2
        })
    ));
    let mut flipped = file.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    assert!(matches!(load(&flipped), Err(LoadError::Checksum { .. })));
    let mut longer = file.clone();
    longer.push(0);
    assert!(matches!(load(&longer), Err(LoadError::Corrupt(_))));
}

#[test]
fn every_truncation_is_refused() {
    let file = save(&world());
    for len in 0..file.len() {
        match load(&file[..len]) {
            Err(LoadError::Truncated(_)) => {}
            other => panic!("a save cut at {len} bytes: {:?}", other.map(|_| ())),
        }
    }
}

#[test]
fn a_declared_length_is_never_trusted() {
    // A header declaring 16 GiB with a few bytes behind it: refused, without allocating it.
    let mut file = b"STRATASV".to_vec();
    file.extend_from_slice(&2u32.to_le_bytes());
    file.extend_from_slice(&0u16.to_le_bytes());
    file.extend_from_slice(&(16u64 << 30).to_le_bytes());
    file.extend_from_slice(&0u32.to_le_bytes());
    file.extend_from_slice(&[0; 16]);
    assert!(matches!(load(&file), Err(LoadError::Truncated(_))));
    // A payload whose lists claim billions of elements, behind a valid checksum.
    let hostile = [0x00, 0x01, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x05, 0x01, 0x02];
    // A payload that does not decode keeps the decoder's error as its source.
    let error = load(&wrap(&hostile)).expect_err("refused");
    assert!(matches!(error, LoadError::Decode(_)), "{error:?}");
    assert!(std::error::Error::source(&error).is_some());
    let mut deep = vec![0u8; 40];
    deep.extend(std::iter::repeat_n(0x08, 100_000));
    assert!(load(&wrap(&deep)).is_err());
}

#[test]
fn every_damaged_payload_behind_a_valid_checksum_is_refused_or_loads_a_valid_world() {
    let file = save(&world());
    let body = payload(&file).to_vec();
    for at in 0..body.len() {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut damaged = body.clone();
            damaged[at] ^= flip;
            // A payload that still decodes and checks out describes a world: it must load
            // whole, and save again.
            if let Ok(loaded) = load(&wrap(&damaged)) {
                let again = save(&loaded);
                assert!(load(&again).is_ok(), "byte {at} ^ {flip:#x}");
            }
        }
    }
}

#[test]
fn a_save_describing_an_impossible_world_is_refused_with_the_reason() {
    // References to instances the save does not hold are refused whatever holds them. (A
    // fixed seed: the identity source's bytes are then known not to hold the pattern below.)
    let mut world = World::with_seed(1, 11).unwrap();
    let folder = world.create(ClassId::FOLDER, None).unwrap();
    world
        .set_attribute(folder, "to", Some(AttrValue::Reference(Some(folder))))
        .unwrap();
    let file = save(&world);
    let body = payload(&file).to_vec();
    // Find the folder's own id as the attribute's target (`SavedAttr::Reference`, variant 7,
    // holding `Some`) and point it elsewhere.
    let id = folder.get() as u8;
    let position = body
        .windows(3)
        .rposition(|w| w == [0x07, 0x01, id])
        .unwrap();
    let mut damaged = body.clone();
    damaged[position + 2] = 0x7f;
    match load(&wrap(&damaged)) {
        Err(LoadError::Corrupt(reason)) => assert!(reason.contains("refers to"), "{reason}"),
        other => panic!("{:?}", other.map(|_| ())),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Random worlds (instances under random parents, names, tags, attributes, components with
    /// random values, destructions, frames) save, load and save to the same bytes.
    #[test]
    fn random_worlds_round_trip_byte_for_byte(
        ops in prop::collection::vec((0u8..6, any::<u16>(), any::<i32>()), 1..60),
    ) {
        let mut world = World::with_threads(1).unwrap();
        world.define_luau("Team", TEAM, None).unwrap();
        world.sync_definitions();
        let (team, score) = world.field_named("Team", "score").unwrap();
        let (_, spawn) = world.field_named("Team", "spawn").unwrap();
        let mut live = vec![world.workspace()];
        for (kind, pick, value) in ops {
            let at = live[pick as usize % live.len()];
            match kind {
                0 => {
                    if let Ok(id) = world.create(ClassId::FOLDER, Some(at)) {
                        live.push(id);
                    }
                }
                1 => {
                    let _ = world.set_name(at, &format!("n{value}"));
                    let _ = world.tag(at, &format!("t{}", value % 3));
                }
                2 => {
                    let _ = world.set_attribute(at, "v", Some(AttrValue::Number(f64::from(value) / 7.0)));
                }
                3 => {
                    if !world.has(at, team) {
                        let _ = world.add(at, team, [(score, Value::Integer(i64::from(value)))]);
                    } else {
                        let _ = world.write(at, team, spawn, Vec3::new(value as f32, 0.5, -0.0));
                    }
                }
                4 => {
                    if at != world.workspace() && world.destroy(at).is_ok() {
                        live.retain(|id| world.is_live(*id));
                    }
                }
                _ => {
                    world.step(0.05).unwrap();
                }
            }
        }
        let file = save(&world);
        let loaded = load(&file).unwrap();
        prop_assert_eq!(save(&loaded), file);
    }
}

/// A world whose system `slow` runs every second, recording the frames it ran in.
fn interval_world(ran: &std::sync::Arc<std::sync::Mutex<Vec<u64>>>) -> World {
    let mut world = World::with_seed(1, 3).unwrap();
    add_slow(&mut world, ran);
    world
}

fn add_slow(world: &mut World, ran: &std::sync::Arc<std::sync::Mutex<Vec<u64>>>) {
    let ran = ran.clone();
    world
        .add_system(
            SystemSpec::new("slow", move |ctx: &mut Ctx<'_>| {
                ran.lock().unwrap().push(ctx.frame());
                Ok(())
            })
            .with_interval(1.0),
        )
        .unwrap();
}

#[test]
fn an_interval_system_goes_on_after_a_load_as_if_it_had_never_stopped() {
    let dt = 0.125;
    let straight_ran = Default::default();
    let mut straight = interval_world(&straight_ran);
    for _ in 0..16 {
        straight.step(dt).unwrap();
    }
    assert_eq!(*straight_ran.lock().unwrap(), [7, 15]);

    let ran = Default::default();
    let mut first = interval_world(&ran);
    for _ in 0..5 {
        first.step(dt).unwrap();
    }
    let file = save(&first);
    let mut loaded = load(&file).unwrap();
    // Systems are code: the loaded world keeps the saved wait until `slow` is added again,
    // and saves it meanwhile.
    assert_eq!(save(&loaded), file);
    add_slow(&mut loaded, &ran);
    assert_eq!(save(&loaded), file);
    for _ in 5..16 {
        loaded.step(dt).unwrap();
    }
    assert_eq!(*ran.lock().unwrap(), [7, 15]);
    assert_eq!(save(&loaded), save(&straight));
}

/// A save of [`world`] written by format version 1, before intervals, identities and pending
/// events were saved. Committed saves and fuzz corpora are of that version.
const VERSION_1: &[u8] = include_bytes!("data/world-v1.save");

#[test]
fn a_version_1_file_still_loads_and_saves_as_the_current_version() {
    assert_eq!(u32::from_le_bytes(VERSION_1[8..12].try_into().unwrap()), 1);
    let mut loaded = load(VERSION_1).unwrap();
    assert_eq!(loaded.frame(), 1);
    assert_eq!(loaded.fixed_step().seconds(), 0.2);
    let model = loaded.children(loaded.workspace()).unwrap()[0];
    let part = loaded.children(model).unwrap()[0];
    assert_eq!(loaded.arena().get(part).unwrap().name(), "Wheel");
    assert!(loaded.arena().get(part).unwrap().persistent_id().is_some());
    let (team, members) = loaded.field_named("Team", "members").unwrap();
    assert_eq!(
        loaded.get_value(model, team, members).unwrap(),
        Value::List(strata::layers::store::ListValue::from_vec(vec![
            Value::Reference(Some(part))
        ]))
    );
    let health = loaded
        .define(ComponentDef::new("Health").field(FieldDef::number("current", 100.0)))
        .unwrap();
    let current = loaded.field(health, "current").unwrap();
    assert!(
        loaded
            .get::<f64>(part, health, current)
            .unwrap()
            .is_sign_negative()
    );
    // It saves as the current version, which loads back to the same bytes; and it goes on.
    let file = save(&loaded);
    assert!(u32::from_le_bytes(file[8..12].try_into().unwrap()) > 1);
    assert_eq!(save(&load(&file).unwrap()), file);
    loaded.step(0.1).unwrap();
    loaded.create(ClassId::FOLDER, None).unwrap();
}

/// The GUIDs and persistent id a world hands out for two creations.
fn identities_drawn(world: &mut World) -> Vec<String> {
    let workspace = world.workspace();
    let a = world.create(ClassId::PART, Some(workspace)).unwrap();
    let b = world.create(ClassId::FOLDER, None).unwrap();
    let pid = world.ensure_persistent_id(b).unwrap();
    vec![
        format!("{a} {}", world.arena().get(a).unwrap().guid()),
        format!("{b} {} {pid:?}", world.arena().get(b).unwrap().guid()),
    ]
}

#[test]
fn loads_of_one_save_continue_its_identities_alike() {
    // The world's own seed, drawn from entropy: only the save can carry it.
    let mut world = world();
    let file = save(&world);
    let mut first = load(&file).unwrap();
    let mut second = load(&file).unwrap();
    let drawn = identities_drawn(&mut first);
    assert_eq!(identities_drawn(&mut second), drawn, "two loads agree");
    assert_eq!(
        identities_drawn(&mut world),
        drawn,
        "and go on as the saved world"
    );
    assert_eq!(save(&first), save(&second));
    assert_eq!(save(&first), save(&world));
}

/// Listens to a world's lifecycle events: each event, and for a destruction the names of the
/// destroyed subtree as the listener reads them in its lifecycle scope.
fn listen(world: &mut World) -> std::sync::Arc<std::sync::Mutex<Vec<String>>> {
    let heard: std::sync::Arc<std::sync::Mutex<Vec<String>>> = Default::default();
    let log = heard.clone();
    world.on_lifecycle(move |event, view| {
        let ids: Vec<InstanceId> = match event {
            Event::Destroyed { subtree } => subtree.as_slice().to_vec(),
            Event::DestroyedMany(batch) => batch.destroyed.clone(),
            _ => Vec::new(),
        };
        let read: Vec<String> = ids
            .iter()
            .map(|id| {
                view.get(*id).map_or("unreadable".to_owned(), |n| {
                    format!("{} {} {:?} {:?}", n.name(), n.guid(), n.parent(), n.tags())
                })
            })
            .collect();
        log.lock().unwrap().push(format!("{event:?} {read:?}"));
    });
    heard
}

/// What a frame showed: its lifecycle events and what the listener heard, and the world after.
fn stepped(
    world: &mut World,
    heard: &std::sync::Mutex<Vec<String>>,
) -> (String, Vec<String>, Vec<u8>, usize) {
    let events = world.step(0.1).unwrap();
    assert!(events.errors.is_empty(), "{:?}", events.errors);
    let lifecycle = format!("{:?}", events.lifecycle);
    let heard = std::mem::take(&mut *heard.lock().unwrap());
    (lifecycle, heard, save(world), world.pending_reclamation())
}

#[test]
fn a_save_between_a_destruction_and_the_frames_end_delivers_its_events_after_a_load() {
    let mut world = World::with_threads(1).unwrap();
    let workspace = world.workspace();
    let model = world.create(ClassId::MODEL, Some(workspace)).unwrap();
    let wheels: Vec<InstanceId> = (0..3)
        .map(|k| {
            let wheel = world.create(ClassId::PART, Some(model)).unwrap();
            world.set_name(wheel, &format!("Wheel{k}")).unwrap();
            world.tag(wheel, "round").unwrap();
            wheel
        })
        .collect();
    let crates: Vec<InstanceId> = (0..4)
        .map(|_| world.create(ClassId::PART, Some(workspace)).unwrap())
        .collect();
    let old = world.create(ClassId::FOLDER, None).unwrap();
    world.set_name(old, "LastFrame").unwrap();
    world.step(0.1).unwrap();
    // Destroyed a frame ago: reported already, its slot released by the next frame's end.
    world.destroy(old).unwrap();
    world.step(0.1).unwrap();
    // This frame, before its end: creations, a move, a destruction of a subtree, a bulk one.
    let late = world.create(ClassId::FOLDER, Some(workspace)).unwrap();
    world.create(ClassId::FOLDER, Some(late)).unwrap();
    world.set_parent(wheels[2], Some(workspace)).unwrap();
    world.destroy(model).unwrap();
    let mut stage = world.stage();
    let doomed: Vec<InstanceRef> = crates[..2]
        .iter()
        .map(|id| world.instance_ref(*id).unwrap())
        .collect();
    stage.despawn(&doomed);
    world.commit(&mut stage).unwrap();
    let events = world.pending_events().len();
    assert!(events >= 4, "{events} events wait for the frame's end");

    let file = save(&world);
    let mut loaded = load(&file).unwrap();
    assert_eq!(save(&loaded), file);
    assert_eq!(loaded.pending_events(), world.pending_events());
    assert_eq!(loaded.pending_reclamation(), world.pending_reclamation());
    let heard = listen(&mut world);
    let loaded_heard = listen(&mut loaded);
    for frame in 0..3 {
        let original = stepped(&mut world, &heard);
        assert!(
            frame > 0 || !original.1.is_empty(),
            "the listener heard the destructions"
        );
        assert_eq!(
            stepped(&mut loaded, &loaded_heard),
            original,
            "frame {frame} after the load"
        );
    }
    assert_eq!(world.pending_reclamation(), 0);
}
