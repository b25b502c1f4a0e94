//! Strata's Luau game scripting, a layer over the facade (`strata`): a sandboxed game VM per
//! world with budgets of instructions, time and memory (`vm.rs`, `host.rs`, `memory.rs`), the
//! game API scripts see (`api.rs`, `navigate.rs`, `args.rs`, `errors.rs`, `convert.rs`),
//! queries through a mirror of wrappers and handles (`query.rs`) and through columns
//! (`columns.rs`), systems written in Luau (`system.rs`), execution groups (`group.rs`),
//! places (`place.rs`), and the type definitions of the API (`types.rs`, `names.rs`).
//!
//! It reaches the world only through the facade's public API: [`Scene`]'s operations, its
//! extension slot (where a world's scripting state lives, see [`ScriptScene`]), [`SystemBody`](strata::SystemBody)
//! (the seam any scripting language's systems take), waves ([`Scene::wave`],
//! [`Scene::run_wave`]) for execution groups, and [`ParCtx`](strata::ParCtx) for parallel systems.
//!
//! Invariant: scripts reach the world only while the world lends itself to a call (setup
//! scripts, system runs, group callbacks); everything a script does goes through the same
//! checked operations as Rust code, so a script's mistake is an error naming its script and
//! line, never a broken world.
//!
//! # Example
//!
//! ```
//! use strata::prelude::*;
//! use strata_script::prelude::*;
//!
//! let mut world = World::with_seed(1, 7)?;
//! world.define_luau("Health", "return component { fields = { hp = number(100) } }", None)?;
//! world.sync_definitions();
//! world.run_script("setup.luau", "Instance.new('Part', world.workspace):AddComponent(Health)")?;
//! world.add_script_system(
//!     "regen",
//!     "systems/regen.luau",
//!     "return system { run = function(world, dt)
//!         for _, h in world:query({ with = { Health } }) do h.hp += 1 end
//!     end }",
//! )?;
//! world.step(0.1)?;
//! let (health, hp) = world.field_named("Health", "hp")?;
//! let part = world.children(world.workspace())?[0];
//! assert_eq!(world.get::<f64>(part, health, hp)?, 101.0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # What the layer keeps
//!
//! - The game VM offers no `os`, `io`, `require`, `loadstring`, `getfenv`, `setfenv`, `debug`,
//!   `collectgarbage`, `gcinfo` or `newproxy`; its libraries and API are read-only, and each
//!   script has an environment of its own. Every callback runs under a budget of instructions
//!   and time (the sandbox meter of `strata-schema-adoption`) and one memory budget shared by
//!   all of the world's VMs; a budget error lifts the limits afterwards, so the VM stays usable.
//!   When memory runs out, the script holding the most is named and stopped (`memory.rs` reads
//!   Luau's per-category byte counter for that, the layer's one `unsafe` block).
//! - A query's Luau mirror is rebuilt exactly when the inputs its matches were built from
//!   (`Query::built_against`) moved, and a rebuild reuses the surviving wrappers and handles,
//!   which come from weak caches keyed by instance and by instance and component.
//! - A column table holds a field's values for the query's matches as they were when it was
//!   handed out. On write-back only the rows whose value the script changed are written, as
//!   checked writes, so `changed` filters see exactly those rows. Pending column writes are
//!   applied at every API call, so a script never misses its own write; a structural change or a
//!   rebuild of the matches first applies them, then empties every column and makes it raise.
//! - An execution group's callback runs in a VM of its own, reads the state established before
//!   the groups began, and writes through an overlay ranked `WriterRank::group(position, root)`,
//!   `position` being the root's place in a pre-order walk. The overlays commit in that order
//!   once every group has finished, and printed lines are gathered in the same order, so the
//!   frame's result does not depend on the thread count.
//! - Parallel Luau systems of one wave share the world's one VM, taking it in turn (a Luau VM
//!   is single-threaded); their reads and writes still follow the wave's rules.
//! - `math.random` draws splitmix64 from the world's seed, the frame, the calling owner and how
//!   many calls it made before in that frame, so the numbers are the same on any thread count,
//!   in any lane order, and after a save and load. A VM's own state (a script's locals) is code
//!   and is neither saved nor rolled back; state that must survive belongs in components.
//! - Errors speak the author's terms: layer errors leave `access.rs` with ids named, mlua's
//!   argument errors are reworded, and a caught API error is `script:LINE: message`.
//!
//! `access.rs` calls no other module of the layer but `errors`; the API, the query mirror and
//! the columns call it. The modules that refer to each other both ways are one responsibility
//! each: `api` with `convert`, `navigate` and `query` (the API surface), `columns` with `query`
//! (queries in Luau), `host` with the rest (the VM's state), `names` with `types`.
//!
//! A [`Place`] is a folder (`place.toml` read into [`PlaceConfig`], components, systems, group
//! scripts, `setup.luau`): `Place::open` reads and checks it, `Place::build` makes its world (a
//! failure after scripts printed is `PlaceError::AfterPrints`, with the lines), `Place::load`
//! adds its scripts to a loaded world, and `Place::check`, `Place::order_warnings` and
//! `Place::type_definitions` serve `strata check` and `strata types`.

mod access;
mod api;
mod args;
mod columns;
mod convert;
mod errors;
mod group;
mod host;
mod memory;
pub mod names;
mod navigate;
pub mod place;
mod query;
mod reload;
mod spawn;
mod system;
pub mod types;
mod vm;

use std::sync::Arc;

pub use host::Scripts;
pub use place::{Place, PlaceConfig, PlaceError, PlaceWarning};
pub use reload::Reload;
pub use vm::ScriptBudget;

pub(crate) use group::group_tag;
pub(crate) use memory::ScriptMemory;

use strata::{Scene, World, WorldError};
use strata_arena::InstanceId;
use strata_scheduler::SystemId;

/// What a scripting user needs, in one `use strata_script::prelude::*` beside strata's.
pub mod prelude {
    pub use crate::{
        Place, PlaceConfig, PlaceError, ScriptBudget, ScriptError, ScriptScene, ScriptWorld,
        Scripts,
    };
}

/// A script failed: which script, where, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{script}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct ScriptError {
    /// The script's name (its file, for a place's scripts).
    pub script: String,
    /// The line the error names, when it names one.
    pub line: Option<u32>,
    /// What went wrong.
    pub message: String,
}

/// Why a scripting call through the world was refused: the world refused it (a duplicate
/// system name, an instance that is not live), or the script failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The world refused.
    #[error(transparent)]
    World(#[from] WorldError),
    /// The script failed (a syntax or run-time error, a budget run out), with its name and line.
    #[error(transparent)]
    Script(#[from] ScriptError),
}

impl From<host::Failure> for Error {
    fn from(failure: host::Failure) -> Self {
        Self::Script(failure.error)
    }
}

impl From<strata_arena::ArenaError> for Error {
    fn from(error: strata_arena::ArenaError) -> Self {
        Self::World(error.into())
    }
}

/// A world's scripting state, kept in its scene's extension slot: the game VM (made at the
/// first script), the budget VMs are made with, and the memory all of the world's VMs share.
pub(crate) struct Scripting {
    scripts: Option<Scripts>,
    budget: ScriptBudget,
    memory: Arc<ScriptMemory>,
}

impl Default for Scripting {
    fn default() -> Self {
        Self {
            scripts: None,
            budget: ScriptBudget::STANDARD,
            memory: Arc::new(ScriptMemory::new(ScriptBudget::STANDARD.memory)),
        }
    }
}

/// The scripting state of a scene, made the first time it is asked for.
pub(crate) fn scripting(scene: &mut Scene) -> &mut Scripting {
    if scene.extension::<Scripting>().is_none() {
        scene.insert_extension(Scripting::default());
    }
    scene
        .extension_mut::<Scripting>()
        .expect("the scripting state was just put in place")
}

/// The budget and the memory pool a scene's VMs are made with.
pub(crate) fn vm_settings(scene: &mut Scene) -> (ScriptBudget, Arc<ScriptMemory>) {
    let state = scripting(scene);
    (state.budget, state.memory.clone())
}

/// Luau scripting on a scene (a world derefs to its scene, and so does a serial system's
/// context): the scene's game VM, setup scripts, budgets and execution groups.
pub trait ScriptScene {
    /// The scene's game VM, made the first time it is asked for.
    ///
    /// # Errors
    ///
    /// When the VM cannot be made (Luau refused to start).
    fn scripts(&mut self) -> Result<Scripts, Error>;

    /// Sets the budget of the game VMs made from now on (the scene's own, made at its first
    /// script, and every execution group's); the memory limit, which bounds all of the
    /// world's scripts together, applies to the calls made from now on.
    fn set_script_budget(&mut self, budget: ScriptBudget);

    /// The budget the scene's game VMs are made with.
    fn script_budget(&self) -> ScriptBudget;

    /// The memory the world's scripts hold now, all of its game VMs together, in bytes.
    fn script_memory(&self) -> usize;

    /// Runs a script in the game environment now, with the scene lent to it (a place's
    /// `setup.luau`, say). `name` names it in errors and printed output.
    ///
    /// # Errors
    ///
    /// The script's error (syntax, run time, a budget run out), with its name and line.
    fn run_script(&mut self, name: &str, source: &str) -> Result<(), Error>;

    /// Compiles a script without running it: its syntax errors, with their lines.
    ///
    /// # Errors
    ///
    /// The first syntax error, with its line.
    fn check_script(&mut self, name: &str, source: &str) -> Result<(), Error>;

    /// Marks the subtree under `root` as an execution group running the group script `group`
    /// (see [`ScriptWorld::add_group_script`]), or unmarks it (`None`). Returns whether it
    /// changed.
    ///
    /// # Errors
    ///
    /// When `root` is not live.
    fn set_execution_group(&mut self, root: InstanceId, group: Option<&str>)
    -> Result<bool, Error>;

    /// The execution group a root is marked with.
    fn execution_group(&self, root: InstanceId) -> Option<String>;
}

impl ScriptScene for Scene {
    fn scripts(&mut self) -> Result<Scripts, Error> {
        let state = scripting(self);
        if let Some(scripts) = &state.scripts {
            return Ok(scripts.clone());
        }
        let scripts = Scripts::in_world(state.budget, state.memory.clone(), None)?;
        state.scripts = Some(scripts.clone());
        Ok(scripts)
    }

    fn set_script_budget(&mut self, budget: ScriptBudget) {
        let state = scripting(self);
        state.budget = budget;
        state.memory.set_limit(budget.memory);
    }

    fn script_budget(&self) -> ScriptBudget {
        self.extension::<Scripting>()
            .map_or(ScriptBudget::STANDARD, |s| s.budget)
    }

    fn script_memory(&self) -> usize {
        self.extension::<Scripting>()
            .map_or(0, |state| state.memory.used())
    }

    fn run_script(&mut self, name: &str, source: &str) -> Result<(), Error> {
        let scripts = self.scripts()?;
        let chunk = scripts.load(name, source)?;
        scripts.call_serial::<()>(self, host::Caller::setup(name), name, &chunk, ())?;
        Ok(())
    }

    fn check_script(&mut self, name: &str, source: &str) -> Result<(), Error> {
        self.scripts()?.load(name, source)?;
        Ok(())
    }

    fn set_execution_group(
        &mut self,
        root: InstanceId,
        group: Option<&str>,
    ) -> Result<bool, Error> {
        let node = self.arena().node(root)?;
        let old: Vec<String> = node
            .tags()
            .iter()
            .filter(|t| t.starts_with("Group:"))
            .map(|t| t.to_string())
            .collect();
        let wanted = group.map(group_tag);
        if old.len() == usize::from(wanted.is_some())
            && wanted.as_ref().is_none_or(|w| old.contains(w))
        {
            return Ok(false);
        }
        for tag in &old {
            self.untag(root, tag)?;
        }
        if let Some(tag) = wanted {
            self.tag(root, &tag)?;
        }
        Ok(true)
    }

    fn execution_group(&self, root: InstanceId) -> Option<String> {
        let node = self.arena().node(root).ok()?;
        node.tags()
            .iter()
            .find_map(|t| t.strip_prefix("Group:").map(str::to_owned))
    }
}

/// Luau systems and execution groups on a world.
pub trait ScriptWorld {
    /// Adds a system written in Luau: runs the script (in the game environment, with the world
    /// lent to it) and registers the `system{...}` it returns under `name`. `script` names it
    /// in errors.
    ///
    /// # Errors
    ///
    /// A name already taken (refused before the script runs), the script's error, or a
    /// `system{...}` the scheduler refuses.
    fn add_script_system(
        &mut self,
        name: &str,
        script: &str,
        source: &str,
    ) -> Result<SystemId, Error>;

    /// Adds a group script: every subtree marked with `name`
    /// ([`ScriptScene::set_execution_group`], `world:setGroup(inst, name)` in Luau) runs the
    /// script's `run(world, dt, root)` in a VM of its own, all such groups together on the
    /// world's pool, once per frame in the script's phase, as the system `group:NAME`.
    ///
    /// # Errors
    ///
    /// The script's error (it is checked once, in a VM of its own), or a name already taken.
    fn add_group_script(
        &mut self,
        name: &str,
        script: &str,
        source: &str,
    ) -> Result<SystemId, Error>;

    /// Replaces the Luau system `name` with the system a new version of its script returns:
    /// the script runs first, and only a system the scheduler takes replaces the old one (see
    /// [`World::replace_system`]: the id, the statistics and an interval's wait go on). The
    /// new version starts afresh: its script's locals are the new chunk's, and the old
    /// version's query caches and removal readers are let go.
    ///
    /// # Errors
    ///
    /// No system named `name`, the script's error, or a `system{...}` the scheduler refuses;
    /// the old version keeps running then.
    fn replace_script_system(
        &mut self,
        name: &str,
        script: &str,
        source: &str,
    ) -> Result<SystemId, Error>;

    /// Replaces the group script `name` (the system `group:NAME`) with a new version: the
    /// script is checked in a VM of its own first, and every group then runs the new version
    /// in a new VM from its next frame (the statistics go on).
    ///
    /// # Errors
    ///
    /// No group script named `name`, the script's error, or a `system{...}` the scheduler
    /// refuses; the old version keeps running then.
    fn replace_group_script(
        &mut self,
        name: &str,
        script: &str,
        source: &str,
    ) -> Result<SystemId, Error>;
}

/// The error for a replacement of a system the world does not have.
fn no_system(script: &str, name: &str) -> Error {
    Error::Script(ScriptError {
        script: script.to_owned(),
        line: None,
        message: format!("there is no system {name:?} to replace"),
    })
}

impl ScriptWorld for World {
    fn add_script_system(
        &mut self,
        name: &str,
        script: &str,
        source: &str,
    ) -> Result<SystemId, Error> {
        // Refused before the script runs: the VM keeps each system's function by its name.
        if self.system_id(name).is_some() {
            return Err(Error::World(
                strata_scheduler::ScheduleError::DuplicateName(name.into()).into(),
            ));
        }
        let spec = system::system_from_script(self, name, script, source)?;
        Ok(self.add_system(spec)?)
    }

    fn add_group_script(
        &mut self,
        name: &str,
        script: &str,
        source: &str,
    ) -> Result<SystemId, Error> {
        let spec = group::group_system(self, name, script, source)?;
        Ok(self.add_system(spec)?)
    }

    fn replace_script_system(
        &mut self,
        name: &str,
        script: &str,
        source: &str,
    ) -> Result<SystemId, Error> {
        let id = self
            .system_id(name)
            .ok_or_else(|| no_system(script, name))?;
        let (spec, run) = system::evaluate_system(self, name, script, source)?;
        // Checked first, so keeping the new code is the one step that can fail, and it changes
        // nothing when it does; the replacement after it cannot be refused.
        self.check_replacement(id, &spec)?;
        let scripts = self.scripts()?;
        scripts
            .keep(name, &run)
            .map_err(|e| Error::Script(vm::script_error(script, &e)))?;
        self.replace_system(id, spec)?;
        scripts.forget_state(name);
        Ok(id)
    }

    fn replace_group_script(
        &mut self,
        name: &str,
        script: &str,
        source: &str,
    ) -> Result<SystemId, Error> {
        let system = format!("group:{name}");
        let id = self
            .system_id(&system)
            .ok_or_else(|| no_system(script, &system))?;
        let spec = group::group_system(self, name, script, source)?;
        self.replace_system(id, spec)?;
        Ok(id)
    }
}
