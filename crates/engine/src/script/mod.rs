//! Luau game scripting: the game environment (a sandboxed VM separate from the schema one),
//! the game API (`api.rs`), queries through a mirror of wrappers and handles (`query.rs`) and
//! through columns (`columns.rs`), systems written in Luau (`system.rs`), execution groups
//! (`group.rs`), and the type definitions of the API (`types.rs`).
//!
//! Invariant: scripts reach the world only while the world lends itself to a call (setup
//! scripts, system runs, group callbacks); everything a script does goes through the same
//! checked operations as Rust code, so a script's mistake is an error naming its script and
//! line, never a broken world.

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
mod query;
mod system;
pub mod types;
mod vm;

pub use host::Scripts;
pub use vm::ScriptBudget;

pub(crate) use api::ParState as ParWrites;
pub(crate) use group::group_tag;
pub(crate) use memory::ScriptMemory;

use strata_arena::InstanceId;
use strata_scheduler::SystemId;

use crate::error::WorldError;
use crate::scene::Scene;
use crate::world::World;

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

impl Scene {
    /// The scene's game VM, made the first time it is asked for.
    pub fn scripts(&mut self) -> Result<Scripts, WorldError> {
        if let Some(scripts) = &self.scripts {
            return Ok(scripts.clone());
        }
        let scripts = Scripts::in_world(self.script_budget, self.script_memory.clone(), None)?;
        scripts.set_query_caching(self.query_caching);
        self.scripts = Some(scripts.clone());
        Ok(scripts)
    }

    /// Whether the queries made from now on, in Rust ([`Scene::query`]) and by scripts
    /// (`world:query{...}`, in the scene's VM and every execution group's), keep their
    /// matches (`true`, the default) or build them afresh at every pass
    /// (`Query::uncached`). Results are the same either way; a test runs both to check the
    /// cache's reuse, and the Luau mirror's rebuild, against fresh builds.
    pub fn set_query_caching(&mut self, cached: bool) {
        self.query_caching = cached;
        if let Some(scripts) = &self.scripts {
            scripts.set_query_caching(cached);
        }
    }

    /// Sets the budget of the game VMs made from now on (the scene's own, made at its first
    /// script, and every execution group's); the memory limit, which bounds all of the
    /// world's scripts together, applies to the calls made from now on.
    pub fn set_script_budget(&mut self, budget: ScriptBudget) {
        self.script_budget = budget;
        self.script_memory.set_limit(budget.memory);
    }

    /// The memory the world's scripts hold now, all of its game VMs together, in bytes.
    pub fn script_memory(&self) -> usize {
        self.script_memory.used()
    }

    /// Runs a script in the game environment now, with the scene lent to it (a place's
    /// `setup.luau`, say). `name` names it in errors and printed output.
    pub fn run_script(&mut self, name: &str, source: &str) -> Result<(), WorldError> {
        let scripts = self.scripts()?;
        let chunk = scripts.load(name, source)?;
        scripts.call_serial::<()>(self, host::Caller::setup(name), name, &chunk, ())?;
        Ok(())
    }

    /// Compiles a script without running it: its syntax errors, with their lines.
    pub fn check_script(&mut self, name: &str, source: &str) -> Result<(), WorldError> {
        self.scripts()?.load(name, source)?;
        Ok(())
    }

    /// Marks the subtree under `root` as an execution group running the group script `group`
    /// (see [`World::add_group_script`]), or unmarks it (`None`). Returns whether it changed.
    pub fn set_execution_group(
        &mut self,
        root: InstanceId,
        group: Option<&str>,
    ) -> Result<bool, WorldError> {
        let node = self.arena.node(root)?;
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

    /// The execution group a root is marked with.
    pub fn execution_group(&self, root: InstanceId) -> Option<String> {
        let node = self.arena.node(root).ok()?;
        node.tags()
            .iter()
            .find_map(|t| t.strip_prefix("Group:").map(str::to_owned))
    }

    /// Takes what scripts printed since the last time (in the order printed; a parallel wave's
    /// and a group run's lines in scheduled and hierarchy order).
    pub fn take_prints(&mut self) -> Vec<String> {
        std::mem::take(&mut self.prints)
    }
}

impl World {
    /// Adds a system written in Luau: runs the script (in the game environment, with the world
    /// lent to it) and registers the `system{...}` it returns under `name`. `script` names it
    /// in errors.
    pub fn add_script_system(
        &mut self,
        name: &str,
        script: &str,
        source: &str,
    ) -> Result<SystemId, WorldError> {
        // Refused before the script runs: the VM keeps each system's function by its name.
        if self.system_id(name).is_some() {
            return Err(strata_scheduler::ScheduleError::DuplicateName(name.into()).into());
        }
        let spec = system::system_from_script(self, name, script, source)?;
        self.add_system(spec)
    }

    /// Adds a group script: every subtree marked with `name`
    /// ([`Scene::set_execution_group`], `world:setGroup(inst, name)` in Luau) runs the
    /// script's `run(world, dt, root)` in a VM of its own, all such groups together on the
    /// world's pool, once per frame in the script's phase, as the system `group:NAME`.
    pub fn add_group_script(
        &mut self,
        name: &str,
        script: &str,
        source: &str,
    ) -> Result<SystemId, WorldError> {
        let spec = group::group_system(self, name, script, source)?;
        self.add_system(spec)
    }
}
