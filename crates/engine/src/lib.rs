//! Strata's engine facade: one [`World`] joining the instance arena, the component store,
//! queries, component schemas in Luau, the system scheduler and parallel overlays, with a
//! frame loop and save files. It adds glue, never a second implementation of a layer.
//!
//! A world holds a [`Scene`] (the hierarchy and the components, and every operation on them,
//! which the world derefs to) and its systems. Destroying an instance reaches the component
//! store (removal records, reference policies followed until none is left, references to the
//! destroyed cleared wherever they are held); cloning and grafting copy component rows with the
//! instances; Luau definitions anywhere in the hierarchy are synced at the start of each frame.
//! [`World::step`] runs the systems phase by phase, with a fixed-step block, interval systems,
//! serial systems one at a time and runs of parallel systems together on a thread pool, their
//! writes committed in scheduled order, so a frame gives the same world for any thread count.
//! [`World::save`] and [`World::load`] write and read a versioned, checksummed file.
//!
//! # Example
//!
//! ```
//! use strata::prelude::*;
//!
//! let mut world = World::with_threads(2)?;
//! let position = world.define(ComponentDef::new("Position").field(FieldDef::vector("v", Vec3::ZERO)))?;
//! let velocity = world.define(ComponentDef::new("Velocity").field(FieldDef::vector("v", Vec3::ONE)))?;
//! let v = world.field(position, "v")?;
//! let workspace = world.workspace();
//! for _ in 0..3 {
//!     let id = world.create(ClassId::PART, Some(workspace))?;
//!     world.add(id, position, [])?;
//!     world.add(id, velocity, [])?;
//! }
//!
//! // Position += Velocity * dt, every frame.
//! let mut movers = world.query(QuerySpec::new().with(position).with(velocity))?;
//! world.add_system(SystemSpec::new("move", move |ctx: &mut Ctx<'_>| {
//!     let dt = ctx.dt() as f32;
//!     ctx.update::<Vec3, Vec3>(&mut movers, (0, v), (1, v), |p, d| {
//!         Vec3::new(p.x + d.x * dt, p.y + d.y * dt, p.z + d.z * dt)
//!     })?;
//!     Ok(())
//! }))?;
//! world.step(0.5)?;
//! world.step(0.5)?;
//!
//! // Save and load: the same world, byte for byte.
//! let mut file = Vec::new();
//! world.save(&mut file)?;
//! let mut loaded = World::load(file.as_slice())?;
//! loaded.define(ComponentDef::new("Position").field(FieldDef::vector("v", Vec3::ZERO)))?;
//! loaded.define(ComponentDef::new("Velocity").field(FieldDef::vector("v", Vec3::ONE)))?;
//! let mut again = Vec::new();
//! loaded.save(&mut again)?;
//! assert_eq!(file, again);
//! let parts = loaded.children(loaded.workspace())?;
//! assert_eq!(parts.len(), 3);
//! let (p, v) = loaded.field_named("Position", "v")?;
//! assert_eq!(loaded.get::<Vec3>(parts[0], p, v)?, Vec3::new(1.0, 1.0, 1.0));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # What the facade keeps
//!
//! - The arena and the store stay in step: they are private to `scene/`, every destruction goes
//!   through `Scene::destroy` (or a committed stage), and every drain hands the reclaimed slots
//!   to the store in the same call. A destruction reaches everything before it returns: the
//!   arena's subtree with the built-in and attribute references to it, the store's rows, the
//!   reference policies of rows that pointed into it (followed, a `DestroyHolder` through the
//!   arena again, until no request is left, each holder checked live when its turn comes), and
//!   the references orphan records held to it.
//! - A copy is whole or absent: the arena copies inside a construction batch, rolled back when
//!   the store refuses the rows, and every reference between two copied instances points to the
//!   copies, in rows, lists and orphan records as in built-in state and attributes.
//! - A frame is the same steps in the same order: definitions synced; the schedule's stages,
//!   each serial system alone with the scene, each run of consecutive parallel systems split
//!   into waves (a system the plan orders after a member of the current wave starts the next),
//!   each wave together on the pool and committed in scheduled order once all its systems have
//!   finished; the arena drained, its events delivered in lifecycle scopes; reclaimed slots
//!   reported to the store; the store's events taken and its frame state cleared. A parallel
//!   writer's rank is its position in the plan, and conflicts are checked against the plan's
//!   reachability. Lanes commit in the order they finished, and prints, statistics and errors
//!   are reported in scheduled and hierarchy order, so the result depends on the world and `dt`
//!   only; `World::set_lane_shuffle` varies lanes and finishing order to test it.
//! - A save holds everything a world holds but code (systems, listeners), caches and change
//!   tracking, including the arena's identity source and what waits for the next frame's end
//!   (tombstones, queued events), so "save, load, step" delivers what "step" delivers, and
//!   saving twice writes the same bytes. Format version 2 is written and version 1 still read.
//!   The records are serde types of the save format's own, encoded with postcard under a CRC-32;
//!   the writer encodes borrowed twins of them, so a save or a hash copies almost nothing, and
//!   value nesting is capped at 64. Loading never trusts a length, checks every record before it
//!   builds, and builds a new world, so a refused file changes nothing the caller has.
//! - `World::hash` is FNV-1a over the format version and the save payload: equal hashes mean
//!   equal saves. `World::state_hash` adds the store's tick and every row's ticks and dirty
//!   fields, and is what determinism and rollback tests compare.
//! - `World::snapshot` and `World::restore` keep ids, revisions and journals moving forward and
//!   restore the store's tick with its rows, under a new store identity.
//!
//! Other layers plug in through the public API only: `SystemBody` for systems in any language,
//! `Scene::wave` and `Scene::run_wave` for parallel work of their own, `ParCtx` for parallel
//! systems, and the scene's extension slot (`Scene::extension`) for their state. The Luau game
//! layer (`strata-script`) is built that way; this crate runs Luau only to evaluate component
//! schemas (`Scene::define_luau`, through `strata-schema-adoption`).
//!
//! Start reading at `world.rs` (`World::step`), then `scene/instances.rs` (`Scene::destroy`),
//! then `save/mod.rs`.

mod error;
mod hash;
mod rollback;
mod save;
mod scene;
mod stats;
mod systems;
mod world;

pub use crate::error::{LoadError, Runaway, SaveError, SystemError, WorldError};
pub use crate::rollback::WorldSnapshot;
pub use crate::save::MAGIC;
pub use crate::scene::{Clock, DestroyReport, Insert, Scene, Wave};
pub use crate::stats::format_duration;
pub use crate::systems::{Ctx, ParCtx, StopRequest, SystemBody, SystemResult, SystemSpec};
pub use crate::world::{FrameEvents, MAX_THREADS, StoppedSystem, World};

/// The layers, for what the prelude does not name.
pub mod layers {
    pub use strata_arena as arena;
    pub use strata_component_store as store;
    pub use strata_parallel_overlay as overlay;
    pub use strata_query as query;
    pub use strata_scheduler as scheduler;
    pub use strata_schema_adoption as schema;
}

/// What a user of the facade needs, in one `use strata::prelude::*`.
pub mod prelude {
    pub use crate::{
        Ctx, DestroyReport, FrameEvents, Insert, LoadError, ParCtx, SaveError, Scene, StopRequest,
        StoppedSystem, SystemBody, SystemError, SystemResult, SystemSpec, World, WorldError,
        WorldSnapshot,
    };
    pub use strata_arena::{
        AttrValue, BuiltinState, ClassId, Color3, Event, ExternalRefs, Guid, InstanceId,
        PersistentId, Snapshot, Transform, UDim2, Vec3,
    };
    pub use strata_component_store::{
        ComponentDef, ComponentHandle, ComponentId, DefaultFactory, FieldDef, FieldId, FieldType,
        InstanceRef, RefPolicy, RemovalReader, Removals, Scalar, Stage, StoreEvent, Value,
    };
    pub use strata_parallel_overlay::{CommitReport, Conflict, Refusal};
    pub use strata_query::{Chunks, Pass, Query, QuerySpec};
    pub use strata_scheduler::{Phase, SystemId, SystemStats};
    pub use strata_schema_adoption::SyncReport;
}
