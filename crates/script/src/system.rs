//! Systems written in Luau: a `systems/*.luau` script returns `system{...}`, which becomes a
//! [`SystemSpec`] whose body calls the script's `run(world, dt)`.
//!
//! Invariant: a serial Luau system runs with the scene lent to its VM; a parallel one reads
//! the state established before its wave and its writes are replayed into its overlay after
//! the call, in the order it made them, so they commit in scheduled order like any parallel
//! system's. A failure (a Luau error with its script and line, a budget run out) is the
//! system's error for that run; the VM stays usable.

use mlua::{Function, Table, Value as LuaValue};
use strata_arena::InstanceId;
use strata_component_store::{ComponentId, FieldId};
use strata_scheduler::Phase;

use super::access::{BulkBuffers, ParState};
use super::host::{Caller, Failure, Scripts, Stop};
use super::vm::script_error;
use super::{Error, ScriptError, ScriptScene, convert::kind};
use strata::{
    Ctx, ParCtx, Runaway, Scene, StopRequest, SystemBody, SystemError, SystemResult, SystemSpec,
};

/// A Luau system's body. Its `run` function is kept by the VM under the system's name, so
/// the VM can let go of it (and all the script holds) when the system is stopped for holding
/// memory the world's scripts need.
pub(crate) struct LuauBody {
    scripts: Scripts,
    /// The system's name (its queries, readers and kept function are keyed by it).
    owner: String,
    /// The script's name, for errors.
    script: String,
    parallel: bool,
    declared: Option<Vec<(ComponentId, FieldId)>>,
    /// What a parallel run may read (see `readable`); `None` for anything.
    readable: Option<Vec<ComponentId>>,
    roots: (InstanceId, InstanceId),
    /// The buffers of the last parallel run's column writes, emptied, for the next run's: a
    /// large write-back reuses its memory instead of taking fresh pages every frame.
    bulk_spare: Vec<BulkBuffers>,
}

/// A failed call as the error of system `system`: a runaway (a budget trip, or memory run
/// out) asks the world to stop the holder its failure names.
pub(crate) fn system_failure(failure: Failure, system: &str) -> SystemError {
    match failure.stop {
        None => SystemError::body(failure.error),
        Some(Stop { holder, release }) => SystemError::RanAway(Box::new(Runaway {
            error: Box::new(failure.error),
            stops: vec![StopRequest {
                system: (holder.owner != system).then_some(holder.owner),
                part: holder.part,
                release,
            }],
        })),
    }
}

impl LuauBody {
    /// The system's `run` function, unless the VM let go of it.
    fn run_function(&self) -> Result<Function, SystemError> {
        self.scripts.kept(&self.owner).ok_or_else(|| {
            SystemError::failed(format!(
                "`{}` was stopped for holding memory the world's scripts needed, and its script let go of; load it again to run it",
                self.owner
            ))
        })
    }
}

impl SystemBody for LuauBody {
    fn is_parallel(&self) -> bool {
        self.parallel
    }

    fn run(&mut self, ctx: &mut Ctx<'_>) -> SystemResult {
        let run = self.run_function()?;
        let dt = ctx.dt();
        let world = self.scripts.world().clone();
        let scene: &mut Scene = ctx;
        self.scripts
            .call_serial::<()>(
                scene,
                Caller::run(&self.owner),
                &self.script,
                &run,
                (world, dt),
            )
            .map_err(|f| system_failure(f, &self.owner))
    }

    fn run_parallel(&mut self, ctx: &mut ParCtx<'_>) -> SystemResult {
        let run = self.run_function()?;
        let clock = strata::Clock {
            frame: ctx.frame(),
            time: ctx.time(),
        };
        let par = ParState::new(self.roots, self.declared.clone())
            .reading(self.readable.clone())
            .with_spare(std::mem::take(&mut self.bulk_spare))
            .at(clock);
        let world = self.scripts.world().clone();
        let established = (ctx.arena(), ctx.store());
        let (result, par, prints) = self.scripts.call_parallel(
            par,
            established,
            Caller::run(&self.owner),
            ctx.frame(),
            ctx.query_caching(),
            &self.script,
            &run,
            (world, ctx.dt()),
        );
        ctx.add_prints(prints);
        result.map_err(|f| system_failure(f, &self.owner))?;
        ctx.add_rows(par.rows);
        let (replayed, spare) = par.replay(ctx.overlay_mut());
        self.bulk_spare = spare;
        replayed.map_err(|e| SystemError::World(e.into()))?;
        Ok(())
    }

    fn release(&mut self) {
        self.scripts.release(&self.owner);
    }
}

/// A list of names under `key` (a string alone counts as a list of one).
fn name_list(table: &Table, key: &str) -> mlua::Result<Vec<String>> {
    match table.raw_get::<LuaValue>(key)? {
        LuaValue::Nil => Ok(Vec::new()),
        LuaValue::String(s) => Ok(vec![s.to_str()?.to_string()]),
        LuaValue::Table(t) => t.sequence_values::<String>().collect(),
        other => Err(mlua::Error::runtime(format!(
            "`{key}` must be a list of names, not {}",
            kind(&other)
        ))),
    }
}

/// The phase a system table names; `None` for the fixed-step block.
pub(crate) fn phase_of(table: &Table) -> mlua::Result<Option<Phase>> {
    let name: Option<String> = table.raw_get("phase")?;
    Ok(Some(match name.as_deref() {
        None | Some("Update") => Phase::Update,
        Some("First") => Phase::First,
        Some("PreUpdate") => Phase::PreUpdate,
        Some("PostUpdate") => Phase::PostUpdate,
        Some("Last") => Phase::Last,
        Some("Fixed") => return Ok(None),
        Some(other) => {
            return Err(mlua::Error::runtime(format!(
                "unknown phase `{other}`: First, PreUpdate, Update, PostUpdate, Last or Fixed"
            )));
        }
    }))
}

/// The interval a system table names, checked.
fn interval_of(table: &Table) -> mlua::Result<Option<f64>> {
    match table.raw_get::<LuaValue>("interval")? {
        LuaValue::Nil => Ok(None),
        LuaValue::Number(n) if n > 0.0 && n.is_finite() => Ok(Some(n)),
        LuaValue::Integer(n) if n > 0 => Ok(Some(n as f64)),
        LuaValue::Number(n) => Err(mlua::Error::runtime(format!(
            "`interval` must be a positive number of seconds, not {n}"
        ))),
        LuaValue::Integer(n) => Err(mlua::Error::runtime(format!(
            "`interval` must be a positive number of seconds, not {n}"
        ))),
        other => Err(mlua::Error::runtime(format!(
            "`interval` must be a positive number of seconds, not {}",
            kind(&other)
        ))),
    }
}

/// Whether a system table asks to run in parallel, checked.
fn parallel_of(table: &Table) -> mlua::Result<bool> {
    match table.raw_get::<LuaValue>("parallel")? {
        LuaValue::Nil => Ok(false),
        LuaValue::Boolean(parallel) => Ok(parallel),
        other => Err(mlua::Error::runtime(format!(
            "`parallel` must be true or false, not {}",
            kind(&other)
        ))),
    }
}

/// Checks the values of a system table's keys (all but what needs the world: the names in
/// `writes` and `after`), so `system{...}` itself raises the error at the script's line.
pub(crate) fn check_table(table: &Table) -> mlua::Result<()> {
    phase_of(table)?;
    for key in ["sets", "before", "after", "reads"] {
        name_list(table, key)?;
    }
    interval_of(table)?;
    parallel_of(table)?;
    match table.raw_get::<LuaValue>("writes")? {
        LuaValue::Nil => {}
        LuaValue::Table(writes) => {
            for pair in writes.pairs::<LuaValue, LuaValue>() {
                let (component, fields) = pair?;
                let fields = match (&component, fields) {
                    (LuaValue::String(_), LuaValue::Table(fields)) => fields,
                    _ => {
                        return Err(mlua::Error::runtime(
                            "`writes` maps component names to lists of field names, as `writes = { Health = { \"current\" } }`",
                        ));
                    }
                };
                for field in fields.sequence_values::<LuaValue>() {
                    if !matches!(field?, LuaValue::String(_)) {
                        return Err(mlua::Error::runtime(
                            "`writes` lists field names as strings",
                        ));
                    }
                }
            }
        }
        other => {
            return Err(mlua::Error::runtime(format!(
                "`writes` must be a table, not {}",
                kind(&other)
            )));
        }
    }
    Ok(())
}

/// The placement a system table gives: phase, sets, order, interval.
pub(crate) fn place(spec: SystemSpec, table: &Table) -> mlua::Result<SystemSpec> {
    let mut spec = match phase_of(table)? {
        Some(phase) => spec.in_phase(phase),
        None => spec.in_fixed_block(),
    };
    for set in name_list(table, "sets")? {
        spec = spec.in_set(&set);
    }
    for target in name_list(table, "before")? {
        spec = spec.before(&target);
    }
    for target in name_list(table, "after")? {
        spec = spec.after(&target);
    }
    if let Some(interval) = interval_of(table)? {
        spec = spec.with_interval(interval);
    }
    Ok(spec)
}

/// The fields `writes = { Health = { "current" } }` declares, resolved in the scene's store.
fn declared_writes(
    scene: &Scene,
    table: &Table,
) -> Result<Option<Vec<(ComponentId, FieldId)>>, String> {
    let writes = match table.raw_get::<LuaValue>("writes") {
        Ok(LuaValue::Nil) => return Ok(None),
        Ok(LuaValue::Table(t)) => t,
        Ok(other) => return Err(format!("`writes` must be a table, not {}", kind(&other))),
        Err(e) => return Err(e.to_string()),
    };
    let mut out = Vec::new();
    for pair in writes.pairs::<String, Table>() {
        let (component, fields) = pair
            .map_err(|e| format!("`writes` maps component names to lists of field names ({e})"))?;
        let c = scene.component(&component).map_err(|e| e.to_string())?;
        for field in fields.sequence_values::<String>() {
            let field = field.map_err(|e| e.to_string())?;
            out.push((c, scene.field(c, &field).map_err(|e| e.to_string())?));
        }
    }
    Ok(Some(out))
}

/// The components `reads = { "Velocity" }` declares, resolved in the scene's store; `None` when
/// the table has no `reads`.
fn declared_reads(scene: &Scene, table: &Table) -> Result<Option<Vec<ComponentId>>, String> {
    if matches!(table.raw_get::<LuaValue>("reads"), Ok(LuaValue::Nil)) {
        return Ok(None);
    }
    let names = name_list(table, "reads").map_err(|e| e.to_string())?;
    names
        .iter()
        .map(|name| scene.component(name).map_err(|e| e.to_string()))
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// What a parallel Luau system may read: what it declared in `reads` and the components it
/// writes a field of; `None` (anything) when it declares no `reads` or may write anything.
fn readable(
    reads: Option<&[ComponentId]>,
    writes: Option<&[(ComponentId, FieldId)]>,
) -> Option<Vec<ComponentId>> {
    let (reads, writes) = (reads?, writes?);
    let mut readable = reads.to_vec();
    for (c, _) in writes {
        if !readable.contains(c) {
            readable.push(*c);
        }
    }
    Some(readable)
}

/// Runs a system script and turns the table it returns into a system spec named `name`.
pub(crate) fn system_from_script(
    scene: &mut Scene,
    name: &str,
    script: &str,
    source: &str,
) -> Result<SystemSpec, Error> {
    let (spec, run) = evaluate_system(scene, name, script, source)?;
    scene
        .scripts()?
        .keep(name, &run)
        .map_err(|e| Error::Script(script_error(script, &e)))?;
    Ok(spec)
}

/// Runs a system script and makes the system it returns, with the `run` function the VM must
/// keep for `name` before the system first runs ([`system_from_script`] keeps it at once; a
/// replacement keeps it once the world took the system).
pub(crate) fn evaluate_system(
    scene: &mut Scene,
    name: &str,
    script: &str,
    source: &str,
) -> Result<(SystemSpec, Function), Error> {
    let scripts = scene.scripts()?;
    let chunk = scripts.load(script, source)?;
    let value: LuaValue = scripts.call_serial(scene, Caller::load(name), script, &chunk, ())?;
    if !scripts.is_system_table(&value) {
        return Err(Error::Script(ScriptError {
            script: script.to_owned(),
            line: None,
            message: format!(
                "a system script must return system{{...}}, not {}",
                kind(&value)
            ),
        }));
    }
    let LuaValue::Table(table) = value else {
        unreachable!("is_system_table checked it is a table");
    };
    let invalid = |message: String| {
        Error::Script(ScriptError {
            script: script.to_owned(),
            line: None,
            message,
        })
    };
    let run: Function = table
        .raw_get("run")
        .map_err(|e| Error::Script(script_error(script, &e)))?;
    let parallel = parallel_of(&table).map_err(|e| script_error(script, &e))?;
    let declared = declared_writes(scene, &table).map_err(invalid)?;
    let reads = declared_reads(scene, &table).map_err(invalid)?;
    let body = LuauBody {
        scripts,
        owner: name.to_owned(),
        script: script.to_owned(),
        parallel,
        readable: readable(reads.as_deref(), declared.as_deref()),
        declared: declared.clone(),
        roots: (scene.game(), scene.workspace()),
        bulk_spare: Vec::new(),
    };
    let mut spec = SystemSpec::from_body(name, Box::new(body));
    match declared {
        Some(fields) => {
            for (c, f) in fields {
                spec = spec.writes(c, f);
            }
        }
        None => spec = spec.writes_any_field(),
    }
    match reads {
        Some(components) => {
            for c in components {
                spec = spec.reads(c);
            }
        }
        None => spec = spec.reads_anything(),
    }
    let spec = place(spec, &table).map_err(|e| Error::Script(script_error(script, &e)))?;
    Ok((spec, run))
}
