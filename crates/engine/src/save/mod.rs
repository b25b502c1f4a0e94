//! Save files: a world written to a versioned, checksummed binary file and read back.
//!
//! Layout: an 8-byte magic (`STRATASV`), the format version (`u32`, little-endian), the
//! version of Strata that wrote it (a `u16` length and that many bytes of UTF-8, at most
//! `MAX_VERSION_LEN`), the payload's length (`u64`) and its CRC-32 (`u32`, computed with
//! `crc32fast`), then the payload: a `SavedWorld` (`format.rs`) encoded with postcard.
//!
//! Invariant: a save holds everything a world holds but its systems and listeners (code, not
//! data), its caches and its change tracking: every live instance with its ids, GUID, persistent
//! id, class, place in the hierarchy, name, attributes, built-in state (Luau definitions'
//! sources included) and tags; every component row and orphan record, as raw records; the id
//! counter, the frame number, the simulated time, the fixed-step block's cadence and carry, and every interval
//! system's wait by system name (kept by a loaded world for systems not added again yet, and
//! given to each when it is); the arena's identity source (GUID seed, creation and
//! persistent-id counters), which a loaded world continues, so loads of one save hand out the
//! same identities for the same calls; and what waits for the next frame's end: the tombstones
//! awaiting reclamation, with their data, and the arena's queued events, so a world saved
//! between a change and its frame's end delivers the same lifecycle events, with the same
//! destroyed subtrees readable, at the loaded world's next frame end as the original does at
//! its own. Saving the same world twice writes the same bytes, and so does saving a world
//! loaded from a save without changes in between. Loading never trusts a length it has not
//! checked against the bytes it actually has (the payload is read as it arrives, never
//! preallocated from the header; containers in it are decoded against the bytes left), checks
//! the checksum before decoding, checks everything it decodes before it builds (ids,
//! references, nesting, classes, the hierarchy, tombstones and events, rows only on live
//! instances), and builds a new world, so a refused file leaves the caller's world untouched.
//! Files of every format version from `OLDEST_VERSION` on are read: an older payload decodes
//! into its own record and converts to the current one, what it did not hold at its defaults.

mod convert;
mod encode;
mod format;

use std::io::{Read, Write};
use std::path::Path;

use hashbrown::HashSet;
use strata_arena::{Arena, ArenaImage, ClassId, ClassRegistry, ImageIdentity, InstanceId};
use strata_component_store::{InstanceRef, OrphanRecord, Store};

use self::encode::{InstanceOut, MigrationOut, RecordOut, WorldOut};
use self::format::{
    FORMAT_VERSION, OLDEST_VERSION, SavedIdentity, SavedInterval, SavedWorld, SavedWorldV1,
};
use crate::error::{LoadError, SaveError};
use crate::scene::Scene;
use crate::world::World;

/// The first bytes of every save file.
pub const MAGIC: [u8; 8] = *b"STRATASV";

/// The longest Strata version string a header holds.
const MAX_VERSION_LEN: usize = 64;

/// The largest payload a save may declare (16 GiB): a length past it is refused unread.
const MAX_PAYLOAD: u64 = 16 << 30;

impl World {
    /// Writes the world to `writer` (see the module docs). Returns the bytes written.
    pub fn save(&self, mut writer: impl Write) -> Result<u64, SaveError> {
        let _span = tracing::info_span!("save").entered();
        let payload = self.payload()?;
        let version = env!("CARGO_PKG_VERSION").as_bytes();
        let mut header = Vec::with_capacity(32 + version.len());
        header.extend_from_slice(&MAGIC);
        header.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        header.extend_from_slice(&(version.len() as u16).to_le_bytes());
        header.extend_from_slice(version);
        header.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        header.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        writer.write_all(&header)?;
        writer.write_all(&payload)?;
        writer.flush()?;
        Ok((header.len() + payload.len()) as u64)
    }

    /// [`World::save`] into the file at `path`, atomically: the save is written to a new file
    /// beside it, flushed to the disk, and renamed over `path` only once complete, so a failed
    /// save (a full disk, say) leaves a file that was there as it was, and no partial file.
    pub fn save_to_path(&self, path: impl AsRef<Path>) -> Result<u64, SaveError> {
        let path = path.as_ref();
        let folder = match path.parent() {
            Some(folder) if !folder.as_os_str().is_empty() => folder,
            _ => Path::new("."),
        };
        let mut builder = tempfile::Builder::new();
        builder.prefix(".strata-save-").suffix(".tmp");
        // A new save gets the permissions of a file made the usual way (the process's umask
        // applies); a save replacing one keeps that one's.
        #[cfg(unix)]
        builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
        let mut file = builder.tempfile_in(folder)?;
        if let Ok(existing) = std::fs::metadata(path) {
            file.as_file().set_permissions(existing.permissions())?;
        }
        let written = {
            let mut writer = std::io::BufWriter::new(file.as_file_mut());
            let written = self.save(&mut writer)?;
            writer.flush()?;
            written
        };
        file.as_file().sync_all()?;
        file.persist(path).map_err(|e| SaveError::Io(e.error))?;
        // The rename itself reaches the disk with the folder's entry.
        if let Ok(folder) = std::fs::File::open(folder) {
            let _ = folder.sync_all();
        }
        Ok(written)
    }

    /// Reads a world saved by [`World::save`], on as many threads as [`World::new`] uses.
    /// Rows of components defined in Luau are adopted at once (their definitions are part of
    /// the save); rows of components defined in Rust stay orphans until the same definition is
    /// given again with [`Scene::define`], which adopts them. Rows saved under an older version
    /// of their schema keep their old values as migration input.
    pub fn load(reader: impl Read) -> Result<World, LoadError> {
        let threads = std::thread::available_parallelism().map_or(1, usize::from);
        Self::load_with_threads(reader, threads)
    }

    /// [`World::load`] on `threads` threads.
    pub fn load_with_threads(reader: impl Read, threads: usize) -> Result<World, LoadError> {
        let _span = tracing::info_span!("load").entered();
        let saved = read_saved(reader)?;
        build(&saved, threads)
    }

    /// [`World::load`] from the file at `path`.
    pub fn load_from_path(path: impl AsRef<Path>) -> Result<World, LoadError> {
        let file = std::fs::File::open(path)?;
        Self::load(std::io::BufReader::new(file))
    }

    /// The payload a save of the world holds (after its header).
    fn payload(&self) -> Result<Vec<u8>, SaveError> {
        self.encode(postcard::ser_flavors::StdVec::new())
            .map_err(|e| SaveError::Encode(Box::new(e)))
    }

    /// `hash` after it was fed the save format's version and the payload a save of the world
    /// holds, encoded into it as it is encoded (the payload is never held whole).
    pub(crate) fn save_hash(&self, mut hash: crate::hash::Fnv) -> u64 {
        hash.bytes(&FORMAT_VERSION.to_le_bytes());
        // Save records are plain data of known lengths, which postcard always encodes; the
        // hash's flavor never refuses a byte.
        self.encode(hash)
            .expect("save records always encode, and the hash takes every byte")
    }

    /// Encodes the world's save records (a `SavedWorld`) into `flavor`, from the world's state
    /// as it is (`encode.rs`).
    fn encode<O>(
        &self,
        flavor: impl postcard::ser_flavors::Flavor<Output = O>,
    ) -> postcard::Result<O> {
        let scene: &Scene = self;
        let image = scene.arena_image();
        let rows: Vec<(InstanceRef, OrphanRecord)> = scene
            .store()
            .components()
            .filter_map(|set| scene.store().records(set.id()).ok())
            .flatten()
            .collect();
        let mut records: Vec<(InstanceId, &OrphanRecord)> = rows
            .iter()
            .map(|(at, record)| (at.id, record))
            .chain(
                scene
                    .store()
                    .orphans()
                    .iter()
                    .map(|(at, record)| (at.id, record)),
            )
            .collect();
        records.sort_by(|a, b| (a.0, &a.1.component).cmp(&(b.0, &b.1.component)));
        let migrations = self.saved_migrations();
        let fixed = self.fixed_step();
        let world = WorldOut {
            own_range: convert::range_code(image.own_range),
            next_id: image.next_id,
            frame: self.frame(),
            time: self.time(),
            fixed_step: (fixed.seconds(), fixed.max_steps()),
            fixed_carried: self.fixed_carried(),
            game: scene.game().get(),
            workspace: scene.workspace().get(),
            instances: image.nodes.iter().map(InstanceOut::of).collect(),
            records: records
                .iter()
                .map(|(id, record)| RecordOut::of(*id, record))
                .collect(),
            migrations: migrations
                .iter()
                .map(|(id, component, record)| MigrationOut {
                    component,
                    record: RecordOut::of(*id, record),
                })
                .collect(),
            intervals: self
                .interval_waits()
                .into_iter()
                .map(|(system, waited)| SavedInterval { system, waited })
                .collect(),
            identity: image.identity.map(SavedIdentity::from),
            doomed: image.doomed.iter().map(InstanceOut::of).collect(),
            reclaimable: image.reclaimable.iter().map(InstanceOut::of).collect(),
            events: image.events.iter().map(convert::save_event).collect(),
        };
        postcard::serialize_with_flavor(&world, flavor)
    }
}

impl World {
    /// Every pending migration input, placed or waiting, of a live instance, by instance id
    /// then component name.
    fn saved_migrations(&self) -> Vec<(InstanceId, String, &OrphanRecord)> {
        let scene: &Scene = self;
        let placed = scene
            .store()
            .migration_inputs()
            .filter_map(|(id, component, record)| {
                let name = scene.store().set(component).ok()?.def().name().to_owned();
                Some((id, name, record))
            });
        let waiting = scene
            .waiting_migrations()
            .iter()
            .filter(|(id, ..)| scene.is_live(*id))
            .map(|(id, name, record)| (*id, name.clone(), record));
        let mut all: Vec<(InstanceId, String, &OrphanRecord)> = placed.chain(waiting).collect();
        all.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        all
    }
}

/// Reads and checks the header, the payload and its checksum, and decodes the payload.
fn read_saved(mut reader: impl Read) -> Result<SavedWorld, LoadError> {
    let mut magic = Vec::with_capacity(MAGIC.len());
    reader
        .by_ref()
        .take(MAGIC.len() as u64)
        .read_to_end(&mut magic)?;
    if magic[..] != MAGIC[..magic.len()] {
        return Err(LoadError::NotASave);
    }
    if magic.len() < MAGIC.len() {
        return Err(LoadError::Truncated("the header ends early".into()));
    }
    let mut fixed = [0u8; 14];
    fixed[..8].copy_from_slice(&MAGIC);
    read_exact(&mut reader, &mut fixed[8..], "the header")?;
    let version = u32::from_le_bytes([fixed[8], fixed[9], fixed[10], fixed[11]]);
    if !(OLDEST_VERSION..=FORMAT_VERSION).contains(&version) {
        return Err(LoadError::UnsupportedVersion {
            found: version,
            supported: FORMAT_VERSION,
        });
    }
    let version_len = usize::from(u16::from_le_bytes([fixed[12], fixed[13]]));
    if version_len > MAX_VERSION_LEN {
        return Err(LoadError::Corrupt(format!(
            "the header's version string of {version_len} bytes is over {MAX_VERSION_LEN}"
        )));
    }
    let mut writer_version = vec![0u8; version_len];
    read_exact(&mut reader, &mut writer_version, "the header")?;
    if std::str::from_utf8(&writer_version).is_err() {
        return Err(LoadError::Corrupt(
            "the header's version is not UTF-8".into(),
        ));
    }
    let mut sizes = [0u8; 12];
    read_exact(&mut reader, &mut sizes, "the header")?;
    let length = u64::from_le_bytes(sizes[..8].try_into().expect("eight bytes"));
    let expected = u32::from_le_bytes(sizes[8..].try_into().expect("four bytes"));
    if length > MAX_PAYLOAD {
        return Err(LoadError::Corrupt(format!(
            "the header declares a payload of {length} bytes, over the limit of {MAX_PAYLOAD}"
        )));
    }
    // Read as it arrives: the buffer grows with the bytes actually there.
    let mut payload = Vec::new();
    reader.by_ref().take(length).read_to_end(&mut payload)?;
    if payload.len() as u64 != length {
        return Err(LoadError::Truncated(format!(
            "the payload has {} of its {length} bytes",
            payload.len()
        )));
    }
    let mut extra = [0u8; 1];
    if reader.read(&mut extra)? != 0 {
        return Err(LoadError::Corrupt("bytes follow the payload".into()));
    }
    let found = crc32fast::hash(&payload);
    if found != expected {
        return Err(LoadError::Checksum { expected, found });
    }
    let undecodable = |e: postcard::Error| LoadError::Decode(Box::new(e));
    if version == 1 {
        return postcard::from_bytes::<SavedWorldV1>(&payload)
            .map(SavedWorld::from)
            .map_err(undecodable);
    }
    postcard::from_bytes(&payload).map_err(undecodable)
}

/// The saved interval waits, checked: named systems in strictly ascending name order (as a
/// save writes them, so each name once), waits that are times.
fn intervals(saved: &[SavedInterval]) -> Result<Vec<(String, f64)>, LoadError> {
    let mut waits: Vec<(String, f64)> = Vec::with_capacity(saved.len());
    for interval in saved {
        if interval.system.is_empty() {
            return Err(LoadError::Corrupt(
                "an interval wait names no system".into(),
            ));
        }
        if waits
            .last()
            .is_some_and(|(last, _)| *last >= interval.system)
        {
            return Err(LoadError::Corrupt(format!(
                "the interval wait of system `{}` is out of order or given twice",
                interval.system
            )));
        }
        if !(interval.waited.is_finite() && interval.waited >= 0.0) {
            return Err(LoadError::Corrupt(format!(
                "system `{}` has waited {}, which is not a time",
                interval.system, interval.waited
            )));
        }
        waits.push((interval.system.clone(), interval.waited));
    }
    Ok(waits)
}

fn read_exact(reader: &mut impl Read, buf: &mut [u8], what: &str) -> Result<(), LoadError> {
    match reader.read_exact(buf) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            Err(LoadError::Truncated(format!("{what} ends early")))
        }
        Err(e) => Err(e.into()),
    }
}

/// Builds a world from checked save records: the arena from its image, the store from the
/// rows (kept as orphans until their definitions adopt them), the migration input, the clock.
fn build(saved: &SavedWorld, threads: usize) -> Result<World, LoadError> {
    let (arena, ids) = build_arena(saved)?;
    let game = convert::id(saved.game).map_err(LoadError::Corrupt)?;
    let workspace = convert::id(saved.workspace).map_err(LoadError::Corrupt)?;
    let class_is =
        |id: InstanceId, class: ClassId| arena.get(id).is_some_and(|n| n.class() == class);
    if !class_is(game, ClassId::DATA_MODEL) || !class_is(workspace, ClassId::WORKSPACE) {
        return Err(LoadError::Corrupt(
            "the game or the workspace is not an instance of its class".into(),
        ));
    }
    let (store, rows) = build_store(saved, &arena, &ids)?;
    let waiting = migration_input(saved, &rows, &ids)?;
    let fixed = strata_scheduler::FixedStep::new(saved.fixed_step.0, saved.fixed_step.1)
        .map_err(|e| LoadError::Rebuild(e.into()))?;
    if !(saved.time.is_finite() && saved.time >= 0.0) {
        return Err(LoadError::Corrupt(
            "the simulated time is not a time".into(),
        ));
    }
    let intervals = intervals(&saved.intervals)?;
    if !(saved.fixed_carried.is_finite() && saved.fixed_carried >= 0.0) {
        return Err(LoadError::Corrupt(
            "the fixed-step carry is not a time".into(),
        ));
    }
    let mut scene = Scene::from_parts(arena, store, game, workspace).map_err(LoadError::Rebuild)?;
    scene.settle_loaded(waiting);
    let mut world = World::from_scene(scene, threads).map_err(LoadError::Rebuild)?;
    world.set_clock(saved.frame, saved.time, fixed, saved.fixed_carried);
    world.set_waiting_intervals(intervals);
    Ok(world)
}

/// The arena of a save, rebuilt from its image, with every id the save holds (live or a
/// tombstone: references may name either, as they may in the world that was saved).
fn build_arena(saved: &SavedWorld) -> Result<(Arena, HashSet<InstanceId>), LoadError> {
    let corrupt = LoadError::Corrupt;
    let instances = |saved: &[format::SavedInstance]| {
        saved
            .iter()
            .map(convert::load_instance)
            .collect::<Result<Vec<_>, _>>()
            .map_err(corrupt)
    };
    let nodes = instances(&saved.instances)?;
    let doomed = instances(&saved.doomed)?;
    let reclaimable = instances(&saved.reclaimable)?;
    let ids: HashSet<InstanceId> = nodes
        .iter()
        .chain(&doomed)
        .chain(&reclaimable)
        .map(|n| n.id)
        .collect();
    for node in nodes.iter().chain(&doomed).chain(&reclaimable) {
        if let Some(target) = convert::instance_references(node).find(|t| !ids.contains(t)) {
            return Err(LoadError::Corrupt(format!(
                "instance {} refers to {target}, which the save does not hold",
                node.id
            )));
        }
    }
    let events = saved
        .events
        .iter()
        .map(convert::load_event)
        .collect::<Result<Vec<_>, _>>()
        .map_err(corrupt)?;
    let image = ArenaImage {
        own_range: convert::range_of(saved.own_range).map_err(corrupt)?,
        next_id: saved.next_id,
        nodes,
        identity: saved.identity.as_ref().map(ImageIdentity::from),
        doomed,
        reclaimable,
        events,
    };
    let arena = Arena::from_image(std::sync::Arc::new(ClassRegistry::standard()), &image)
        .map_err(|e| LoadError::Rebuild(e.into()))?;
    Ok((arena, ids))
}

/// The (instance, component name) of every row a save holds.
type Rows<'s> = HashSet<(InstanceId, &'s str)>;

/// The store of a save: every row and orphan record as an orphan of its live instance, each
/// (instance, component) once, every reference naming an instance the save holds. Returns the
/// rows it placed.
fn build_store<'s>(
    saved: &'s SavedWorld,
    arena: &Arena,
    ids: &HashSet<InstanceId>,
) -> Result<(Store, Rows<'s>), LoadError> {
    let mut store = Store::new();
    let mut seen: HashSet<(InstanceId, &str)> = HashSet::with_capacity(saved.records.len());
    for saved_record in &saved.records {
        let id = convert::id(saved_record.instance).map_err(LoadError::Corrupt)?;
        if !seen.insert((id, saved_record.component.as_str())) {
            return Err(LoadError::Corrupt(format!(
                "instance {id} holds component `{}` twice",
                saved_record.component
            )));
        }
        let at = InstanceRef::of(arena, id)
            .ok()
            .filter(|_| arena.is_live(id))
            .ok_or_else(|| {
                LoadError::Corrupt(format!(
                    "a record names {id}, which is not a live instance of the save"
                ))
            })?;
        let record = convert::load_record(saved_record).map_err(LoadError::Corrupt)?;
        if let Some(target) = convert::record_references(&record)
            .into_iter()
            .find(|t| !ids.contains(t))
        {
            return Err(LoadError::Corrupt(format!(
                "a `{}` record of {id} refers to {target}, which the save does not hold",
                record.component
            )));
        }
        store.add_orphan(at, record);
    }
    Ok((store, seen))
}

/// The migration input of a save: each for a row the save holds, each once, every reference
/// naming an instance the save holds.
fn migration_input(
    saved: &SavedWorld,
    rows: &Rows<'_>,
    ids: &HashSet<InstanceId>,
) -> Result<Vec<(InstanceId, String, OrphanRecord)>, LoadError> {
    let mut waiting = Vec::with_capacity(saved.migrations.len().min(saved.records.len()));
    let mut seen_inputs: HashSet<(InstanceId, &str)> = HashSet::new();
    for migration in &saved.migrations {
        let id = convert::id(migration.record.instance).map_err(LoadError::Corrupt)?;
        if !rows.contains(&(id, migration.component.as_str())) {
            return Err(LoadError::Corrupt(format!(
                "migration input of `{}` for {id}, which holds no such row",
                migration.component
            )));
        }
        if !seen_inputs.insert((id, migration.component.as_str())) {
            return Err(LoadError::Corrupt(format!(
                "migration input of `{}` for {id} twice",
                migration.component
            )));
        }
        let record = convert::load_record(&migration.record).map_err(LoadError::Corrupt)?;
        if let Some(target) = convert::record_references(&record)
            .into_iter()
            .find(|t| !ids.contains(t))
        {
            return Err(LoadError::Corrupt(format!(
                "migration input of `{}` for {id} refers to {target}, which the save does not hold",
                migration.component
            )));
        }
        waiting.push((id, migration.component.clone(), record));
    }
    Ok(waiting)
}

#[cfg(test)]
mod tests {
    use strata_arena::{AttrValue, ClassId};
    use strata_component_store::{ComponentDef, FieldDef, ListValue, Value};

    use super::format::SavedMigration;
    use super::*;
    use crate::systems::SystemSpec;

    /// The save records of `world`, built the long way: every record owned, as `format.rs`
    /// declares it.
    fn owned(world: &World) -> SavedWorld {
        let scene: &Scene = world;
        let image = scene.arena_image();
        let mut records = Vec::new();
        for set in scene.store().components() {
            if let Ok(rows) = scene.store().records(set.id()) {
                records.extend(rows.into_iter().map(|(at, record)| (at.id, record)));
            }
        }
        records.extend(
            scene
                .store()
                .orphans()
                .iter()
                .map(|(at, record)| (at.id, record.clone())),
        );
        records.sort_by(|a, b| (a.0, &a.1.component).cmp(&(b.0, &b.1.component)));
        let fixed = world.fixed_step();
        SavedWorld {
            own_range: convert::range_code(image.own_range),
            next_id: image.next_id,
            frame: world.frame(),
            time: world.time(),
            fixed_step: (fixed.seconds(), fixed.max_steps()),
            fixed_carried: world.fixed_carried(),
            game: scene.game().get(),
            workspace: scene.workspace().get(),
            instances: image.nodes.iter().map(convert::save_instance).collect(),
            records: records
                .iter()
                .map(|(id, record)| convert::save_record(*id, record))
                .collect(),
            migrations: world
                .saved_migrations()
                .into_iter()
                .map(|(id, component, record)| SavedMigration {
                    component,
                    record: convert::save_record(id, record),
                })
                .collect(),
            intervals: world
                .interval_waits()
                .into_iter()
                .map(|(system, waited)| SavedInterval { system, waited })
                .collect(),
            identity: image.identity.map(SavedIdentity::from),
            doomed: image.doomed.iter().map(convert::save_instance).collect(),
            reclaimable: image
                .reclaimable
                .iter()
                .map(convert::save_instance)
                .collect(),
            events: image.events.iter().map(convert::save_event).collect(),
        }
    }

    const EVERYTHING: &str = r#"return component {
        fields = {
            n = number(1.5), i = integer(-3), b = boolean(true), t = text("hi"),
            e = enum({ "low", "high" }, "high"), v = vector(1, 2, 3), m = transform(),
            r = ref(), l = list(ref()), k = map(text(), integer(0)),
            s = struct({ color = text("white"), raised = boolean(false) }),
            o = optional(text("")), d = buffer(),
        },
    }"#;

    /// A world holding every kind of value, a typed orphan record (a Luau component whose
    /// definition was removed), migration input, tombstones, queued events and an interval
    /// wait, encodes to the bytes of its owned records.
    #[test]
    fn a_save_writes_the_bytes_of_its_owned_records() {
        let mut world = World::with_seed(1, 5).expect("a world");
        world
            .add_system(SystemSpec::new("slow", |_: &mut crate::Ctx<'_>| Ok(())).with_interval(2.0))
            .expect("a system");
        let definition = world
            .define_luau("Every", EVERYTHING, None)
            .expect("a definition");
        let health = world
            .define(ComponentDef::new("Health").field(FieldDef::number("hp", 3.0)))
            .expect("a component");
        world.sync_definitions();
        let (every, l) = world.field_named("Every", "l").expect("a field");
        let workspace = world.workspace();
        let a = world
            .create(ClassId::PART, Some(workspace))
            .expect("a part");
        let b = world
            .create(ClassId::MODEL, Some(workspace))
            .expect("a model");
        world
            .add(
                a,
                every,
                [(
                    l,
                    Value::List(ListValue::from_vec(vec![Value::Reference(Some(b))])),
                )],
            )
            .expect("a row");
        world.add(b, every, []).expect("a row");
        world.add(b, health, []).expect("a row");
        world.step(0.5).expect("a frame");
        // The definition goes: its rows stay as orphan records that keep their types.
        world.destroy(definition).expect("a destruction");
        world.step(0.5).expect("a frame");
        let c = world.create(ClassId::FOLDER, Some(b)).expect("a folder");
        world
            .set_attribute(c, "to", Some(AttrValue::Reference(Some(a))))
            .expect("an attribute");
        world.tag(c, "doomed").expect("a tag");
        world.set_parent(a, Some(b)).expect("a move");
        world.destroy(c).expect("a destruction");
        assert!(
            world
                .store()
                .orphans()
                .iter()
                .any(|(_, r)| r.types.is_some())
        );
        assert!(!world.pending_events().is_empty());
        let expected = postcard::to_stdvec(&owned(&world)).expect("owned records encode");
        assert_eq!(world.payload().expect("a payload"), expected);

        // Migration input: a load under a newer schema keeps the old values.
        let mut file = Vec::new();
        world.save(&mut file).expect("a save");
        let mut loaded = World::load_with_threads(file.as_slice(), 1).expect("a load");
        let level = loaded
            .define_luau(
                "Level",
                "return component { version = 1, fields = { x = integer(1) } }",
                None,
            )
            .expect("a definition");
        loaded.sync_definitions();
        let (component, _) = loaded.field_named("Level", "x").expect("a field");
        loaded.add(a, component, []).expect("a row");
        let mut file = Vec::new();
        loaded.save(&mut file).expect("a save");
        let mut migrated = World::load_with_threads(file.as_slice(), 1).expect("a load");
        migrated
            .set_definition_source(
                level,
                r#"return component { version = 2, fields = { y = integer(1, { formerNames = { "x" } }) } }"#,
            )
            .expect("a new version");
        migrated.sync_definitions();
        assert!(migrated.store().migration_inputs().next().is_some());
        let expected = postcard::to_stdvec(&owned(&migrated)).expect("owned records encode");
        assert_eq!(migrated.payload().expect("a payload"), expected);
    }
}
