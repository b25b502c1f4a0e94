//! The frame loop's side of `--serve`: [`Explorer`] answers the server's calls between two
//! frames, through the same checked world API scripts use, and keeps what the API reports
//! beyond the world itself: the last frames' timings per system, the last frame's conflicts,
//! the snapshots taken, and whether the run is paused.
//!
//! Invariant: an answer is computed on the frame loop's thread between two frames, and every
//! edit is checked whole before its first write, so a refused edit answers with its error and
//! leaves the world as it was (its hash unchanged).

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::time::Duration;

use axum::http::StatusCode;
use serde_json::{Value as JsonValue, json};
use strata::layers::arena::ArenaError;
use strata::prelude::*;
use strata_script::Place;

use super::json::{attribute_to_json, value_from_json, value_to_json};
use super::{API_VERSION, Answer, Call, Refusal, Request, Server};

/// A page of the tree or of a query's matches holds at most this many instances.
pub(crate) const MAX_PAGE: usize = 1000;
/// A page's size when the request names none.
pub(crate) const DEFAULT_PAGE: usize = 100;
/// Frames whose timings are kept.
pub(crate) const FRAMES_KEPT: usize = 240;
/// Snapshots kept; taking one more lets go of the oldest.
const SNAPSHOTS_KEPT: usize = 16;
/// Calls answered between two frames at most; the rest wait for the next gap.
const CALLS_PER_GAP: usize = 256;
/// Frames one step request may ask for, and frames waiting to be stepped at once.
const MAX_STEPS: u64 = 1000;

/// One frame's timings.
struct FrameTiming {
    frame: u64,
    took: Duration,
    /// Each system that ran in the frame, with its time in the frame.
    systems: Vec<(SystemId, Duration)>,
}

/// The explorer's state in the frame loop (see the module docs).
pub(crate) struct Explorer {
    server: Server,
    paused: bool,
    /// Frames still to run while paused (step requests).
    steps: u64,
    snapshots: VecDeque<(u64, WorldSnapshot)>,
    next_snapshot: u64,
    frames: VecDeque<FrameTiming>,
    /// Each system's runs and total time after the last frame, and its name (kept when it is
    /// removed, for the timings of frames it ran in).
    totals: HashMap<SystemId, (u64, Duration, String)>,
    /// The last frame's overlay conflicts, as JSON.
    conflicts: Vec<JsonValue>,
}

impl Explorer {
    /// Serves at `address`.
    pub(crate) fn start(address: SocketAddr) -> Result<Self, String> {
        Ok(Self {
            server: Server::start(address)?,
            paused: false,
            steps: 0,
            snapshots: VecDeque::new(),
            next_snapshot: 1,
            frames: VecDeque::new(),
            totals: HashMap::new(),
            conflicts: Vec::new(),
        })
    }

    /// The address served.
    pub(crate) fn address(&self) -> SocketAddr {
        self.server.address
    }

    /// Answers the calls queued since the last gap (at most [`CALLS_PER_GAP`]); returns whether
    /// the loop should step a frame now (not while paused, unless a step was asked for).
    pub(crate) fn serve(&mut self, world: &mut World, place: &Place) -> bool {
        for _ in 0..CALLS_PER_GAP {
            let Ok(Call { request, answer }) = self.server.calls.try_recv() else {
                break;
            };
            let _ = answer.send(self.answer(world, place, request));
        }
        if !self.paused {
            return true;
        }
        if self.steps > 0 {
            self.steps -= 1;
            return true;
        }
        false
    }

    /// Records a frame that ran in `took`: its systems' times and its conflicts; tells the
    /// event stream's clients, if any.
    pub(crate) fn frame_done(&mut self, world: &World, took: Duration) {
        let events = world.events();
        // The oldest frame's buffer, reused once the ring is full.
        let mut systems = if self.frames.len() == FRAMES_KEPT {
            self.frames
                .pop_front()
                .map(|t| t.systems)
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        systems.clear();
        for (id, name, stats) in world.system_stats() {
            let (runs, total, _) = self
                .totals
                .entry(id)
                .or_insert_with(|| (0, Duration::ZERO, name.to_owned()));
            if stats.runs > *runs {
                systems.push((id, stats.total_duration.saturating_sub(*total)));
            }
            (*runs, *total) = (stats.runs, stats.total_duration);
        }
        self.conflicts = events
            .commits
            .iter()
            .flat_map(|commit| &commit.conflicts)
            .map(|c| {
                json!({
                    "component": &*c.component_name,
                    "field": &*c.field_name,
                    "instance": c.instance.get(),
                    "first": format!("{:?}", c.first),
                    "second": format!("{:?}", c.second),
                })
            })
            .collect();
        let timing = FrameTiming {
            frame: events.frame,
            took,
            systems,
        };
        if self.server.frames.receiver_count() > 0 {
            let summary = json!({
                "frame": timing.frame,
                "time": world.time(),
                "ms": timing.took.as_secs_f64() * 1e3,
                "paused": self.paused,
                "errors": events.errors.len(),
                "conflicts": self.conflicts.len(),
                "systems": self.timing_json(&timing)["systems"].clone(),
            });
            let _ = self.server.frames.send(summary.to_string());
        }
        self.frames.push_back(timing);
    }

    fn timing_json(&self, timing: &FrameTiming) -> JsonValue {
        let name = |id: &SystemId| self.totals.get(id).map_or("", |(_, _, name)| name.as_str());
        json!({
            "frame": timing.frame,
            "ms": timing.took.as_secs_f64() * 1e3,
            "systems": timing.systems.iter().map(|(id, took)| json!({
                "name": name(id),
                "us": took.as_secs_f64() * 1e6,
            })).collect::<Vec<_>>(),
        })
    }

    fn answer(&mut self, world: &mut World, place: &Place, request: Request) -> Answer {
        match request {
            Request::World => Ok(json!({
                "api": API_VERSION,
                "frame": world.frame(),
                "time": world.time(),
                "tick": world.store().tick().0,
                "instances": world.arena().live_count(),
                "paused": self.paused,
                "frame_rate": place.config.frame_rate,
                "snapshots": self.snapshots.iter().map(|(id, s)| json!({ "id": id, "frame": s.frame() })).collect::<Vec<_>>(),
            })),
            // Hashing reads every row of the world: asked for on its own, so reading the rest
            // of `/world` stays cheap.
            Request::Hash => Ok(json!({
                "frame": world.frame(),
                "hash": format!("{:016x}", world.hash()),
            })),
            Request::Children {
                parent,
                offset,
                limit,
            } => children(world, parent, offset, limit),
            Request::Instance(id) => instance(world, live(world, id)?),
            Request::Query(spec) => query(world, &spec),
            Request::Components => Ok(components(world, place)),
            Request::Systems => Ok(systems(world)),
            Request::Frames(last) => {
                if last > FRAMES_KEPT {
                    return Err(Refusal::bad(format!(
                        "the last {FRAMES_KEPT} frames are kept; {last} is too many"
                    )));
                }
                let start = self.frames.len().saturating_sub(last);
                Ok(json!({
                    "frames": self.frames.iter().skip(start).map(|t| self.timing_json(t)).collect::<Vec<_>>()
                }))
            }
            Request::Schedule => {
                let plan = world.plan();
                Ok(json!({
                    "diagnostics": plan.diagnostics().iter().map(|d| d.to_string()).collect::<Vec<_>>(),
                    "cycles": plan.cycles().len(),
                    "conflicts": self.conflicts,
                }))
            }
            Request::Write {
                id,
                component,
                field,
                value,
            } => {
                let id = live(world, id)?;
                let (component, field, ty) = field_of(world, &component, &field)?;
                let value = value_from_json(&value, &ty).map_err(Refusal::bad)?;
                let changed = world
                    .write_value(id, component, field, value)
                    .map_err(refused)?;
                Ok(json!({ "changed": changed }))
            }
            Request::Add {
                id,
                component,
                values,
            } => {
                let id = live(world, id)?;
                let component = component_named(world, &component)?;
                let Some(values) = values.as_object() else {
                    return Err(Refusal::bad("`values` must be an object of field values"));
                };
                let mut given = Vec::with_capacity(values.len());
                let def = world
                    .store()
                    .def(component)
                    .map_err(|e| refused(e.into()))?;
                for (name, json) in values {
                    let field = def.field_id(name).ok_or_else(|| {
                        Refusal::not_found(format!("{} has no field {name:?}", def.name()))
                    })?;
                    let ty = &def.fields()[field.index()].ty;
                    let value = value_from_json(json, ty)
                        .map_err(|e| Refusal::bad(format!("{}.{name}: {e}", def.name())))?;
                    given.push((field, value));
                }
                world.add(id, component, given).map_err(refused)?;
                Ok(json!({ "added": true }))
            }
            Request::Remove { id, component } => {
                let id = live(world, id)?;
                let component = component_named(world, &component)?;
                let removed = world.remove(id, component).map_err(refused)?;
                Ok(json!({ "removed": removed }))
            }
            Request::Create(spec) => create(world, &spec),
            Request::Destroy(id) => {
                let id = live(world, id)?;
                let report = world.destroy(id).map_err(refused)?;
                Ok(
                    json!({ "destroyed": report.destroyed.iter().map(|i| i.get()).collect::<Vec<_>>() }),
                )
            }
            Request::Reparent { id, parent } => {
                let id = live(world, id)?;
                let parent = match parent {
                    JsonValue::Null => None,
                    value => Some(live(
                        world,
                        value.as_u64().ok_or_else(|| {
                            Refusal::bad("`parent` must be an instance id or null")
                        })?,
                    )?),
                };
                let moved = world.set_parent(id, parent).map_err(refused)?;
                Ok(json!({ "moved": moved }))
            }
            Request::Pause => {
                self.paused = true;
                Ok(json!({ "paused": true, "frame": world.frame() }))
            }
            Request::Resume => {
                self.paused = false;
                self.steps = 0;
                Ok(json!({ "paused": false, "frame": world.frame() }))
            }
            Request::Step(frames) => {
                if !self.paused {
                    return Err(Refusal::conflict(
                        "the run is not paused: pause it before stepping",
                    ));
                }
                if frames == 0 || frames > MAX_STEPS {
                    return Err(Refusal::bad(format!(
                        "a step runs 1 to {MAX_STEPS} frames, not {frames}"
                    )));
                }
                if self.steps + frames > MAX_STEPS {
                    return Err(Refusal::conflict(format!(
                        "{} frames are still to step; at most {MAX_STEPS} wait at once",
                        self.steps
                    )));
                }
                self.steps += frames;
                Ok(json!({ "stepping": self.steps, "frame": world.frame() }))
            }
            Request::Snapshot => {
                let snapshot = world.snapshot().map_err(refused)?;
                let id = self.next_snapshot;
                self.next_snapshot += 1;
                if self.snapshots.len() == SNAPSHOTS_KEPT {
                    self.snapshots.pop_front();
                }
                let frame = snapshot.frame();
                self.snapshots.push_back((id, snapshot));
                Ok(json!({ "snapshot": id, "frame": frame }))
            }
            Request::Restore(id) => {
                let Some((_, snapshot)) = self.snapshots.iter().find(|(s, _)| *s == id) else {
                    return Err(Refusal::not_found(format!(
                        "no snapshot {id} (the last {SNAPSHOTS_KEPT} taken are kept)"
                    )));
                };
                world.restore(snapshot).map_err(refused)?;
                Ok(json!({ "restored": id, "frame": world.frame() }))
            }
        }
    }
}

/// A world's refusal as an API refusal: what names something missing is a 404, the rest a
/// 409 (the world's rules refused it).
fn refused(error: WorldError) -> Refusal {
    let message = error.to_string();
    match error {
        WorldError::NotLive(_)
        | WorldError::UnknownClass(_)
        | WorldError::UnknownComponent(_)
        | WorldError::UnknownField { .. }
        | WorldError::Arena(ArenaError::UnknownInstance(_) | ArenaError::DestroyedInstance(_)) => {
            Refusal::not_found(message)
        }
        _ => Refusal {
            status: StatusCode::CONFLICT,
            message,
        },
    }
}

/// A live instance by id, or a 404 naming it.
fn live(world: &World, id: u64) -> Result<InstanceId, Refusal> {
    InstanceId::new(id)
        .filter(|id| world.is_live(*id))
        .ok_or_else(|| Refusal::not_found(format!("no live instance {id}")))
}

fn component_named(world: &World, name: &str) -> Result<ComponentId, Refusal> {
    world
        .component(name)
        .map_err(|_| Refusal::not_found(format!("no component {name:?}")))
}

fn field_of(
    world: &World,
    component: &str,
    field: &str,
) -> Result<(ComponentId, FieldId, FieldType), Refusal> {
    let component = component_named(world, component)?;
    let def = world
        .store()
        .def(component)
        .map_err(|e| refused(e.into()))?;
    let id = def
        .field_id(field)
        .ok_or_else(|| Refusal::not_found(format!("{} has no field {field:?}", def.name())))?;
    Ok((component, id, def.fields()[id.index()].ty.clone()))
}

fn class_name(world: &World, class: ClassId) -> String {
    world
        .arena()
        .classes()
        .get(class)
        .map_or_else(|| format!("{class:?}"), |c| c.name().to_owned())
}

/// An instance as a tree row: id, class, name and how many children.
fn row(world: &World, id: InstanceId) -> JsonValue {
    match world.arena().node(id) {
        Ok(node) => json!({
            "id": id.get(),
            "class": class_name(world, node.class()),
            "name": node.name(),
            "children": node.child_count(),
        }),
        Err(_) => json!({ "id": id.get() }),
    }
}

/// A page of instances asked for: where it starts and how many it holds at most.
struct Page {
    offset: usize,
    limit: usize,
}

impl Page {
    /// The page, or the refusal of a size out of bounds: checked before any work.
    fn checked(offset: usize, limit: usize) -> Result<Self, Refusal> {
        if limit == 0 || limit > MAX_PAGE {
            return Err(Refusal::bad(format!(
                "a page holds 1 to {MAX_PAGE} instances, not {limit}"
            )));
        }
        Ok(Self { offset, limit })
    }

    /// The rows of a list of `total` this page covers.
    fn of(&self, total: usize) -> std::ops::Range<usize> {
        let start = self.offset.min(total);
        start..start.saturating_add(self.limit).min(total)
    }
}

fn children(world: &World, parent: Option<u64>, offset: usize, limit: usize) -> Answer {
    let page = Page::checked(offset, limit)?;
    let ids: Vec<InstanceId> = match parent {
        Some(parent) => world.children(live(world, parent)?).map_err(refused)?,
        None => world
            .arena()
            .iter()
            .filter(|node| node.parent().is_none())
            .map(|node| node.id())
            .collect(),
    };
    let range = page.of(ids.len());
    Ok(json!({
        "parent": parent,
        "total": ids.len(),
        "offset": range.start,
        "items": ids[range].iter().map(|id| row(world, *id)).collect::<Vec<_>>(),
    }))
}

fn instance(world: &World, id: InstanceId) -> Answer {
    let node = world.arena().node(id).map_err(|e| refused(e.into()))?;
    let attributes: serde_json::Map<String, JsonValue> = node
        .attributes()
        .iter()
        .map(|(name, value)| (name.to_string(), attribute_to_json(value)))
        .collect();
    // One lookup of the instance, then each set's row of it.
    let at = world.instance_ref(id).map_err(refused)?;
    let mut components = Vec::new();
    for set in world.store().components() {
        let Some(row) = set.row_of(at) else {
            continue;
        };
        let def = set.def();
        let fields: Vec<JsonValue> = def
            .fields()
            .iter()
            .enumerate()
            .map(|(i, field)| {
                let value = set
                    .column(FieldId::from_index(i as u16))
                    .and_then(|column| column.get(row))
                    .map_or(JsonValue::Null, |v| value_to_json(&v, &field.ty));
                json!({ "name": &*field.name, "type": field.ty.name(), "value": value })
            })
            .collect();
        components.push(json!({ "name": def.name(), "fields": fields }));
    }
    Ok(json!({
        "id": id.get(),
        "class": class_name(world, node.class()),
        "name": node.name(),
        "parent": node.parent().map(|p| p.get()),
        "children": node.child_count(),
        "persistent_id": node.persistent_id().map(|p| p.0.get()),
        "locked": node.is_parent_locked(),
        "attributes": attributes,
        "tags": node.tags().iter().map(|t| &**t).collect::<Vec<_>>(),
        "components": components,
    }))
}

/// Runs a query spec: `with`, `without` (component names), `tags`, `not_tags`, `class` (a
/// class name), `within` (an instance id), `changed_since` (a store tick: rows of a `with`
/// component changed after it), `name` (text the name contains, any case), `offset` and
/// `limit`. A spec with a `with` component or a tag runs as a cached query of the world; one
/// without either walks every live instance.
fn query(world: &World, spec: &JsonValue) -> Answer {
    let Some(object) = spec.as_object() else {
        return Err(Refusal::bad("a query is an object"));
    };
    const KNOWN: [&str; 10] = [
        "with",
        "without",
        "tags",
        "not_tags",
        "class",
        "within",
        "changed_since",
        "name",
        "offset",
        "limit",
    ];
    if let Some(key) = object.keys().find(|k| !KNOWN.contains(&k.as_str())) {
        return Err(Refusal::bad(format!("a query has no {key:?}")));
    }
    let names = |key: &str| -> Result<Vec<String>, Refusal> {
        match object.get(key) {
            None => Ok(Vec::new()),
            Some(JsonValue::Array(items)) => items
                .iter()
                .map(|i| {
                    i.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| Refusal::bad(format!("`{key}` holds names")))
                })
                .collect(),
            Some(_) => Err(Refusal::bad(format!("`{key}` is a list of names"))),
        }
    };
    let number = |key: &str| -> Result<Option<u64>, Refusal> {
        match object.get(key) {
            None | Some(JsonValue::Null) => Ok(None),
            Some(value) => value
                .as_u64()
                .map(Some)
                .ok_or_else(|| Refusal::bad(format!("`{key}` is a whole number"))),
        }
    };
    let with = names("with")?
        .iter()
        .map(|n| component_named(world, n))
        .collect::<Result<Vec<_>, _>>()?;
    let without = names("without")?
        .iter()
        .map(|n| component_named(world, n))
        .collect::<Result<Vec<_>, _>>()?;
    let tags = names("tags")?;
    let not_tags = names("not_tags")?;
    let class = match object.get("class") {
        None => None,
        Some(class) => {
            let name = class
                .as_str()
                .ok_or_else(|| Refusal::bad("`class` is a class name"))?;
            Some(
                world
                    .class_id(name)
                    .map_err(|_| Refusal::not_found(format!("no class {name:?}")))?,
            )
        }
    };
    let within = number("within")?
        .map(|root| live(world, root))
        .transpose()?;
    let since = number("changed_since")?;
    if since.is_some() && with.is_empty() {
        return Err(Refusal::bad("`changed_since` needs a `with` component"));
    }
    let name = match object.get("name") {
        None => None,
        Some(text) => Some(
            text.as_str()
                .ok_or_else(|| Refusal::bad("`name` is text"))?
                .to_lowercase(),
        ),
    };
    let offset = number("offset")?.unwrap_or(0) as usize;
    let limit = number("limit")?.unwrap_or(DEFAULT_PAGE as u64) as usize;
    let page = Page::checked(offset, limit)?;
    let mut matches: Vec<InstanceId> = if with.is_empty() && tags.is_empty() {
        world
            .arena()
            .iter()
            .filter(|node| class.is_none_or(|c| node.class() == c))
            .filter(|node| within.is_none_or(|root| descends(world, node.id(), root)))
            .filter(|node| without.iter().all(|c| !world.has(node.id(), *c)))
            .filter(|node| {
                not_tags
                    .iter()
                    .all(|t| !node.tags().iter().any(|n| **n == **t))
            })
            .map(|node| node.id())
            .collect()
    } else {
        let mut built = QuerySpec::new();
        for component in &with {
            built = built.with(*component);
        }
        for component in &without {
            built = built.without(*component);
        }
        for tag in &tags {
            built = built.tagged(tag);
        }
        for tag in &not_tags {
            built = built.not_tagged(tag);
        }
        if let Some(class) = class {
            built = built.class(class);
        }
        if let Some(root) = within {
            built = built.within(root);
        }
        let mut run = world
            .query(built)
            .map_err(|e| Refusal::bad(e.to_string()))?;
        world.matches(&mut run).map_err(refused)?
    };
    if let Some(since) = since {
        matches.retain(|id| changed_after(world, *id, &with, since));
    }
    if let Some(name) = &name {
        matches.retain(|id| {
            world
                .name(*id)
                .is_ok_and(|n| n.to_lowercase().contains(name))
        });
    }
    let range = page.of(matches.len());
    Ok(json!({
        "total": matches.len(),
        "offset": range.start,
        "tick": world.store().tick().0,
        "items": matches[range].iter().map(|id| row(world, *id)).collect::<Vec<_>>(),
    }))
}

/// Whether `id` is `root` or below it.
fn descends(world: &World, id: InstanceId, root: InstanceId) -> bool {
    let mut at = Some(id);
    while let Some(node) = at {
        if node == root {
            return true;
        }
        at = world.parent(node).ok().flatten();
    }
    false
}

/// Whether a row of one of `components` held by `id` changed after tick `since`.
fn changed_after(world: &World, id: InstanceId, components: &[ComponentId], since: u64) -> bool {
    let Ok(at) = world.instance_ref(id) else {
        return false;
    };
    components.iter().any(|component| {
        world.store().set(*component).is_ok_and(|set| {
            set.row_of(at)
                .and_then(|row| set.changed_ticks().get(row))
                .is_some_and(|tick| tick.0 > since)
        })
    })
}

fn components(world: &World, place: &Place) -> JsonValue {
    let items: Vec<JsonValue> = world
        .store()
        .components()
        .map(|set| {
            let def = set.def();
            let file = place.components.iter().find(|c| c.name == def.name());
            json!({
                "name": def.name(),
                "rows": set.len(),
                "fields": def.fields().iter().map(|f| json!({
                    "name": &*f.name,
                    "type": f.ty.name(),
                    "default": value_to_json(&f.default, &f.ty),
                })).collect::<Vec<_>>(),
                "file": file.map(|c| c.path.clone()),
                "source": file.map(|c| c.source.clone()),
            })
        })
        .collect();
    json!({ "components": items })
}

fn systems(world: &mut World) -> JsonValue {
    let stats = world.stats();
    let plan = world.plan();
    let items: Vec<JsonValue> = stats
        .into_iter()
        .map(|(id, name, stats)| {
            let planned = plan.system(id);
            json!({
                "name": name,
                "stage": planned.map(|p| format!("{:?}", p.stage())),
                "position": plan.position(id),
                "sets": planned.map(|p| p.sets().iter().map(|s| s.to_string()).collect::<Vec<_>>()),
                "interval": planned.and_then(|p| p.interval()),
                "state": planned.map(|p| format!("{:?}", p.state())),
                "runs": stats.runs,
                "mean_us": stats.mean_duration().as_secs_f64() * 1e6,
                "max_us": stats.max_duration.as_secs_f64() * 1e6,
                "reads": stats.component_reads,
                "writes": stats.field_writes,
                "rows": stats.visited_rows,
                "errors": stats.errors,
            })
        })
        .collect();
    json!({ "systems": items })
}

/// Creates an instance: `class` (a name), `parent` (an id, or none for a root) and `name`, all
/// checked before it is made.
fn create(world: &mut World, spec: &JsonValue) -> Answer {
    let Some(class) = spec.get("class").and_then(JsonValue::as_str) else {
        return Err(Refusal::bad("`class` (a class name) is required"));
    };
    let class = world
        .class_id(class)
        .map_err(|_| Refusal::not_found(format!("no class {class:?}")))?;
    let parent = match spec.get("parent") {
        None | Some(JsonValue::Null) => None,
        Some(value) => Some(live(
            world,
            value
                .as_u64()
                .ok_or_else(|| Refusal::bad("`parent` must be an instance id or null"))?,
        )?),
    };
    let name = match spec.get("name") {
        None => None,
        Some(value) => Some(
            value
                .as_str()
                .ok_or_else(|| Refusal::bad("`name` must be text"))?
                .to_owned(),
        ),
    };
    let id = world.create(class, parent).map_err(refused)?;
    if let Some(name) = name
        && let Err(error) = world.set_name(id, &name)
    {
        // Not expected of a new instance; it goes again rather than stay half made.
        let _ = world.destroy(id);
        return Err(refused(error));
    }
    Ok(json!({ "id": id.get() }))
}
