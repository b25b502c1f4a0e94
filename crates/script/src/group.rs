//! Execution groups: subtrees whose callbacks run in parallel lanes, one Luau VM per group.
//!
//! A group script (a place's `groups/NAME.luau`) returns `system{ phase = ..., run = function(
//! world, dt, root) ... end }`; every subtree whose root is marked with the group's name
//! (`world:setGroup(inst, "NAME")`, which tags the root `Group:NAME`) gets a VM of its own
//! running that script. Once per frame, in the script's phase, the world runs every marked
//! group's callback together on its pool.
//!
//! Invariant: the groups of one script run as one wave of the scene ([`Scene::wave`]): each
//! group's callback reads the state established before the groups began (and its own writes)
//! and its writes are replayed into an overlay ranked `WriterRank::group(position, root)`,
//! where `position` is the root's place in a pre-order walk of the hierarchy; the overlays
//! commit through [`Scene::run_wave`], in that order, after every callback has finished. A group's VM holds only what its
//! own callbacks put there, so the world after the frame is the same for any thread count.
//! Structural changes are refused inside a group's callback.

use std::sync::Arc;

use hashbrown::{HashMap, HashSet};
use mlua::{Function, Table, Value as LuaValue};
use strata::{
    Ctx, Runaway, Scene, StopRequest, SystemBody, SystemError, SystemResult, SystemSpec, Wave,
};
use strata_arena::InstanceId;
use strata_parallel_overlay::{NoOrder, Overlay, OverlayError, WriterRank};

use super::access::ParState;
use super::api::wrap_instance;
use super::host::{Caller, Failure, Scripts};
use super::memory::{Holder, ScriptMemory};
use super::vm::ScriptBudget;
use super::{Error, ScriptError, ScriptScene, convert::kind};

/// The tag that marks the root of a group running `name`.
pub(crate) fn group_tag(name: &str) -> String {
    format!("Group:{name}")
}

/// One group's VM and callback, with the row and value buffers of its last column writes,
/// emptied, for the next frame's (a 500k-row write-back would otherwise take fresh pages every
/// frame). Only the job running this group takes the lock.
struct GroupVm {
    scripts: Scripts,
    run: Function,
    spare: std::sync::Mutex<Vec<super::access::BulkBuffers>>,
}

/// The body of a group script's system: runs every group marked with its name, but the roots
/// whose groups ran away (stopped by the world through [`SystemBody::stop_part`]).
pub(crate) struct GroupRunner {
    name: String,
    script: String,
    source: String,
    budget: ScriptBudget,
    memory: Arc<ScriptMemory>,
    vms: HashMap<InstanceId, GroupVm>,
    /// Roots whose groups are stopped: they are not run again.
    stopped: HashSet<InstanceId>,
}

/// The path of child positions from a root of the hierarchy down to `id`: sorting by it
/// gives pre-order.
fn path(scene: &Scene, id: InstanceId) -> Vec<usize> {
    let mut path = Vec::new();
    let mut at = id;
    while let Ok(Some(parent)) = scene.parent(at) {
        let position = scene
            .arena()
            .children(parent)
            .position(|c| c == at)
            .unwrap_or(usize::MAX);
        path.push(position);
        at = parent;
    }
    path.push(at.get() as usize);
    path.reverse();
    path
}

fn failure(error: ScriptError) -> SystemError {
    SystemError::body(error)
}

/// Runs a group script's chunk in `scripts` against `par` (so component globals exist) and
/// takes the `run` function of the system table it returns.
fn load_group(
    scripts: &Scripts,
    script: &str,
    source: &str,
    scene: &Scene,
) -> Result<(Function, Table), ScriptError> {
    let chunk = scripts.load(script, source)?;
    let par = ParState::new((scene.game(), scene.workspace()), None).at(scene.clock());
    let established = (scene.arena(), scene.store());
    let (result, _, _) = scripts.call_parallel(
        par,
        established,
        Caller::load(script),
        scene.clock().frame,
        scene.query_caching(),
        script,
        &chunk,
        (),
    );
    let value = result?.into_iter().next().unwrap_or(LuaValue::Nil);
    match &value {
        LuaValue::Table(t) if scripts.is_system_table(&value) => {
            let run = t
                .raw_get::<Function>("run")
                .map_err(|e| super::vm::script_error(script, &e))?;
            Ok((run, t.clone()))
        }
        other => Err(ScriptError {
            script: script.to_owned(),
            line: None,
            message: format!(
                "a group script must return system{{...}}, not {}",
                kind(other)
            ),
        }),
    }
}

/// One group's callback as it ran: its rank and root, how the call ended, its writes replayed
/// into its overlay on the lane that ran it (when the call succeeded), the rows its passes
/// visited and what it printed.
struct Outcome<'w> {
    rank: u64,
    root: InstanceId,
    result: Result<(), Failure>,
    overlay: Option<Result<Overlay<'w>, OverlayError>>,
    rows: u64,
    prints: Vec<String>,
}

impl GroupRunner {
    /// The live roots marked with the script's group, in hierarchy order, but the stopped;
    /// the VMs of roots no longer marked are dropped.
    fn roots(&mut self, scene: &Scene) -> Vec<InstanceId> {
        let tag = group_tag(&self.name);
        let mut roots: Vec<(Vec<usize>, InstanceId)> = scene
            .tagged(&tag)
            .into_iter()
            .filter(|id| scene.is_live(*id) && !self.stopped.contains(id))
            .map(|id| (path(scene, id), id))
            .collect();
        roots.sort();
        self.vms
            .retain(|root, _| roots.iter().any(|(_, r)| r == root));
        roots.into_iter().map(|(_, root)| root).collect()
    }

    /// Makes the VM of every root that has none yet, with the script loaded in it.
    fn load_missing(&mut self, scene: &Scene, roots: &[InstanceId]) -> SystemResult {
        let system = format!("group:{}", self.name);
        for root in roots {
            if self.vms.contains_key(root) {
                continue;
            }
            let holder = Holder {
                owner: system.clone(),
                part: Some(root.to_string()),
            };
            let scripts = Scripts::in_world(self.budget, self.memory.clone(), Some(holder))
                .map_err(failure)?;
            let (run, _) =
                load_group(&scripts, &self.script, &self.source, scene).map_err(failure)?;
            self.vms.insert(
                *root,
                GroupVm {
                    scripts,
                    run,
                    spare: std::sync::Mutex::new(Vec::new()),
                },
            );
        }
        Ok(())
    }

    /// Runs every root's callback as one wave of the scene, each with its share of the
    /// world's free memory fixed before any starts, and replays each one's writes into its
    /// overlay on the lane that ran it; returns the outcomes in hierarchy order and the order
    /// they finished in.
    fn run_groups<'w>(
        &self,
        wave: &Wave<'w>,
        roots: &[InstanceId],
        dt: f64,
        (world_roots, clock, cached): ((InstanceId, InstanceId), strata::Clock, bool),
    ) -> (Vec<Outcome<'w>>, Vec<usize>) {
        let jobs: Vec<(u64, InstanceId, &GroupVm)> = roots
            .iter()
            .enumerate()
            .map(|(rank, root)| (rank as u64, *root, &self.vms[root]))
            .collect();
        let vms: Vec<&mlua::Lua> = jobs.iter().map(|(_, _, vm)| vm.scripts.lua()).collect();
        for ((_, _, vm), limit) in jobs.iter().zip(self.memory.begin_wave(&vms)) {
            vm.scripts.fix_next_limit(limit);
        }
        // The script's name tells a frame's group scripts apart for a lane shuffle.
        let mut run = strata_mix::Fnv1a::with_basis(0);
        run.bytes(self.name.as_bytes());
        let run = run.finish();
        let script = &self.script;
        let established = (wave.arena(), wave.store());
        let run_one = |(rank, root, vm): (u64, InstanceId, &GroupVm)| -> Outcome<'w> {
            let _span =
                tracing::info_span!("group", script = &**script, root = root.get()).entered();
            let spare = std::mem::take(
                &mut *vm
                    .spare
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner),
            );
            let par = ParState::new(world_roots, None).at(clock).with_spare(spare);
            let lua = vm.scripts.lua();
            let args = (|| {
                Ok::<_, mlua::Error>((vm.scripts.world().clone(), dt, wrap_instance(lua, root)?))
            })();
            let owner = format!("{script}#{root}");
            let (result, par, prints) = match args {
                Ok(args) => vm.scripts.call_parallel(
                    par,
                    established,
                    Caller::run(&owner),
                    clock.frame,
                    cached,
                    script,
                    &vm.run,
                    args,
                ),
                Err(e) => {
                    let error = super::vm::script_error(script, &e);
                    (Err(error.into()), par, Vec::new())
                }
            };
            let rows = par.rows;
            let overlay = result.is_ok().then(|| {
                let mut overlay = wave.overlay(WriterRank::group(rank, root.get()));
                let (replayed, spare) = par.replay(&mut overlay);
                *vm.spare
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = spare;
                replayed.map(|()| overlay)
            });
            Outcome {
                rank,
                root,
                result: result.map(|_| ()),
                overlay,
                rows,
                prints,
            }
        };
        let done = wave.run(run, jobs, run_one);
        self.memory.end_wave();
        done
    }
}

impl SystemBody for GroupRunner {
    fn run(&mut self, ctx: &mut Ctx<'_>) -> SystemResult {
        let dt = ctx.dt();
        let scene: &mut Scene = ctx;
        let roots = self.roots(scene);
        self.load_missing(scene, &roots)?;
        let system = format!("group:{}", self.name);
        let mut first_error: Option<Failure> = None;
        let mut stops = Vec::new();
        let mut rows = 0;
        let mut prints = Vec::new();
        let at = (
            (scene.game(), scene.workspace()),
            scene.clock(),
            scene.query_caching(),
        );
        let (applied, replayed) = scene.run_wave(&NoOrder, |wave| {
            let (outcomes, arrival) = self.run_groups(wave, &roots, dt, at);
            let mut overlays: Vec<Option<_>> = (0..outcomes.len()).map(|_| None).collect();
            for Outcome {
                rank,
                root,
                result,
                overlay,
                rows: visited,
                prints: printed,
            } in outcomes
            {
                prints.extend(printed);
                rows += visited;
                if let Err(mut failure) = result {
                    if let Some(stop) = failure.stop.take() {
                        stops.push(StopRequest {
                            system: (stop.holder.owner != system).then_some(stop.holder.owner),
                            part: stop.holder.part,
                            release: true,
                        });
                    }
                    if first_error.is_none() {
                        let root = super::errors::instance(wave.arena(), root);
                        failure.error.message =
                            format!("{} (in the group under {root})", failure.error.message);
                        first_error = Some(failure);
                    }
                    continue;
                }
                match overlay {
                    Some(Ok(overlay)) => overlays[rank as usize] = Some(overlay),
                    // A write the overlay refuses fails the whole system: nothing commits.
                    Some(Err(error)) => return (Vec::new(), Err(error)),
                    None => {}
                }
            }
            // The overlays reach the commit in the order the groups finished.
            let overlays = arrival.iter().filter_map(|k| overlays[*k].take()).collect();
            (overlays, Ok(()))
        });
        replayed.map_err(|e| SystemError::World(e.into()))?;
        scene.add_prints(prints);
        scene.count_rows(rows);
        scene.count_writes(applied as u64);
        match first_error {
            Some(error) if !stops.is_empty() => Err(SystemError::RanAway(Box::new(Runaway {
                error: Box::new(error.error),
                stops,
            }))),
            Some(error) => Err(failure(error.error)),
            None => Ok(()),
        }
    }

    fn stop_part(&mut self, part: &str) -> bool {
        let Some(root) = self
            .vms
            .keys()
            .copied()
            .find(|root| root.to_string() == part)
        else {
            return false;
        };
        // Dropping the group's VM lets go of everything its callbacks kept.
        self.vms.remove(&root);
        self.stopped.insert(root);
        true
    }

    fn release(&mut self) {
        self.vms.clear();
    }
}

/// The system that runs a group script's groups, from the script's source.
pub(crate) fn group_system(
    scene: &mut Scene,
    name: &str,
    script: &str,
    source: &str,
) -> Result<SystemSpec, Error> {
    // The script is checked once here, in a VM of its own, so a broken one fails at load.
    let scripts = scene.scripts()?;
    let (budget, memory) = super::vm_settings(scene);
    let runner = GroupRunner {
        name: name.to_owned(),
        script: script.to_owned(),
        source: source.to_owned(),
        budget,
        memory: memory.clone(),
        vms: HashMap::new(),
        stopped: HashSet::new(),
    };
    let probe = Scripts::in_world(budget, memory, None)?;
    let (_, table) = load_group(&probe, script, source, scene)?;
    super::api::register_group(scripts.lua(), name);
    let spec = SystemSpec::from_body(&format!("group:{name}"), Box::new(runner));
    super::system::place(spec, &table).map_err(|e| {
        Error::Script(ScriptError {
            script: script.to_owned(),
            line: None,
            message: e.to_string(),
        })
    })
}
