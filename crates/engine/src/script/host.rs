//! `Scripts`: one game VM with the game API installed, and the calls into it.
//!
//! Invariant: one call at a time runs in a VM (a lock is held from lending the world to the
//! VM until it is taken back), every call runs under the VM's budget and under its owner's
//! name (so queries and removal readers are the owner's own), and every call ends with the
//! script's column writes applied and the world taken back, whether it succeeded or not.

use std::sync::{Arc, Mutex};

use hashbrown::HashMap;
use mlua::{AnyUserData, Function, IntoLuaMulti, Lua, MultiValue, Table, Value as LuaValue};
use strata_arena::Snapshot;
use strata_component_store::{ComponentId, RemovalReader, Store};

use super::ScriptError;
use super::api::{
    ComponentType, CurrentEstablished, CurrentScene, ParState, WorldApi, install_registry,
    instance_new,
};
use super::columns;
use super::query::QueryEntry;
use super::vm::{Meter, ScriptBudget, environment, new_vm, script_error};
use crate::scene::Scene;

/// The registry key of the Luau helpers.
const HELPERS: &str = "strata.helpers";
/// The registry key of the marker `system{}` puts on its tables.
const SYSTEM_MARK: &str = "strata.system";

/// Luau helpers the host calls: iterators, column packing, stale columns.
const HELPERS_SOURCE: &str = r#"
local H = {}

local function stale_error()
    error("the column is stale: the query's rows moved since it was taken (a structural change); take it again from a chunk", 2)
end
local STALE = table.freeze({ __index = stale_error, __newindex = stale_error })

function H.stale(t)
    table.clear(t)
    setmetatable(t, STALE)
end

function H.iter(nt, n, insts, h1, h2, h3, hs, sel)
    local i, j = 0, 0
    if sel == nil then
        if nt == 0 then
            return function() i += 1; if i > n then return nil end; return insts[i] end
        elseif nt == 1 then
            return function() i += 1; if i > n then return nil end; return insts[i], h1[i] end
        elseif nt == 2 then
            return function() i += 1; if i > n then return nil end; return insts[i], h1[i], h2[i] end
        elseif nt == 3 then
            return function() i += 1; if i > n then return nil end; return insts[i], h1[i], h2[i], h3[i] end
        end
    else
        if nt == 0 then
            return function() j += 1; i = sel[j]; if i == nil then return nil end; return insts[i] end
        elseif nt == 1 then
            return function() j += 1; i = sel[j]; if i == nil then return nil end; return insts[i], h1[i] end
        elseif nt == 2 then
            return function() j += 1; i = sel[j]; if i == nil then return nil end; return insts[i], h1[i], h2[i] end
        elseif nt == 3 then
            return function() j += 1; i = sel[j]; if i == nil then return nil end; return insts[i], h1[i], h2[i], h3[i] end
        end
    end
    return function()
        if sel == nil then
            i += 1
            if i > n then return nil end
        else
            j += 1
            i = sel[j]
            if i == nil then return nil end
        end
        local out = table.create(nt)
        for t = 1, nt do out[t] = hs[t][i] end
        return insts[i], table.unpack(out, 1, nt)
    end
end

function H.unpack(b, n, kind)
    local t = table.create(n)
    local rd = buffer.readf64
    if kind == 1 then
        for i = 1, n do t[i] = rd(b, (i - 1) * 8) ~= 0 end
    else
        for i = 1, n do t[i] = rd(b, (i - 1) * 8) end
    end
    return t
end

function H.pack(t, n, b, kind)
    local wr = buffer.writef64
    if kind == 1 then
        for i = 1, n do
            local v = t[i]
            if v == true then wr(b, (i - 1) * 8, 1)
            elseif v == false then wr(b, (i - 1) * 8, 0)
            else return i end
        end
        return nil
    end
    -- Four rows a step (fewer loop back-edges, so fewer budget interrupts); a value that is
    -- not a number makes writef64 fail, and the pcall below finds its row.
    local ok = pcall(function()
        local i = 1
        while i + 3 <= n do
            local o = (i - 1) * 8
            wr(b, o, t[i]); wr(b, o + 8, t[i + 1]); wr(b, o + 16, t[i + 2]); wr(b, o + 24, t[i + 3])
            i += 4
        end
        while i <= n do
            wr(b, (i - 1) * 8, t[i])
            i += 1
        end
    end)
    if ok then return nil end
    for i = 1, n do
        if type(t[i]) ~= "number" then return i end
    end
    return nil
end

function H.chunks(list)
    local k = 0
    local flush = H.flush
    return function()
        if k > 0 then flush() end
        k += 1
        return list[k]
    end
end

return H
"#;

/// What a VM keeps between calls.
pub(crate) struct VmState {
    /// Who the running call belongs to (a system's or a script's name).
    pub(crate) owner: String,
    pub(crate) queries: HashMap<String, QueryEntry>,
    pub(crate) readers: HashMap<(String, ComponentId), RemovalReader>,
    pub(crate) prints: Vec<String>,
    /// Columns taken for writing whose changes are not applied yet: query key, component.
    pub(crate) pending: Vec<(String, ComponentId)>,
    /// Whether queries made from now on keep their matches (see `Scene::set_query_caching`).
    pub(crate) queries_cached: bool,
}

/// The Luau helpers of a VM.
pub(crate) fn helpers(lua: &Lua) -> mlua::Result<Table> {
    lua.named_registry_value(HELPERS)
}

struct Host {
    lua: Lua,
    meter: Arc<Meter>,
    base: Table,
    world: AnyUserData,
    budget: ScriptBudget,
    /// The component globals the base environment holds.
    globals: Mutex<Vec<String>>,
    /// Held for the whole of a call.
    call: Mutex<()>,
}

/// A game VM with the game API (cheap to clone: clones share the VM).
#[derive(Clone)]
pub struct Scripts {
    host: Arc<Host>,
}

impl std::fmt::Debug for Scripts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scripts")
            .field("budget", &self.host.budget)
            .finish_non_exhaustive()
    }
}

fn setup_error(error: mlua::Error) -> ScriptError {
    script_error("<strata>", &error)
}

impl Scripts {
    /// A new game VM with `budget`.
    pub fn new(budget: ScriptBudget) -> Result<Self, ScriptError> {
        let (lua, meter, base) = new_vm(&budget).map_err(setup_error)?;
        install_registry(&lua).map_err(setup_error)?;
        lua.set_app_data(VmState {
            owner: String::new(),
            queries: HashMap::new(),
            readers: HashMap::new(),
            prints: Vec::new(),
            pending: Vec::new(),
            queries_cached: true,
        });
        let helpers: Table = lua
            .load(HELPERS_SOURCE)
            .set_name("=strata")
            .eval()
            .map_err(setup_error)?;
        let chunk_methods = lua.create_table().map_err(setup_error)?;
        chunk_methods
            .raw_set(
                "read",
                lua.create_function(columns::read_method)
                    .map_err(setup_error)?,
            )
            .map_err(setup_error)?;
        chunk_methods
            .raw_set(
                "write",
                lua.create_function(columns::write_method)
                    .map_err(setup_error)?,
            )
            .map_err(setup_error)?;
        let chunk_meta = lua.create_table().map_err(setup_error)?;
        chunk_meta
            .raw_set("__index", chunk_methods)
            .map_err(setup_error)?;
        helpers
            .raw_set("chunk_meta", chunk_meta)
            .map_err(setup_error)?;
        helpers
            .raw_set(
                "flush",
                lua.create_function(|lua, ()| columns::flush(lua))
                    .map_err(setup_error)?,
            )
            .map_err(setup_error)?;
        lua.set_named_registry_value(HELPERS, helpers)
            .map_err(setup_error)?;
        let world = lua.create_userdata(WorldApi).map_err(setup_error)?;
        install_api(&lua, &base, &world).map_err(setup_error)?;
        Ok(Self {
            host: Arc::new(Host {
                lua,
                meter,
                base,
                world,
                budget,
                globals: Mutex::new(Vec::new()),
                call: Mutex::new(()),
            }),
        })
    }

    /// Whether the queries this VM's scripts make from now on keep their matches.
    pub(crate) fn set_query_caching(&self, cached: bool) {
        if let Some(mut state) = self.host.lua.app_data_mut::<VmState>() {
            state.queries_cached = cached;
        }
    }

    /// The VM's budget.
    pub fn budget(&self) -> ScriptBudget {
        self.host.budget
    }

    /// The VM itself, for tools that run other Luau code under the same configuration (the
    /// benchmarks run a Luau ECS this way). Code run through it directly has no world lent to
    /// it, and its calls run without a budget started (the interrupt still runs, uncounted).
    pub fn vm(&self) -> &Lua {
        &self.host.lua
    }

    pub(crate) fn lua(&self) -> &Lua {
        &self.host.lua
    }

    pub(crate) fn world(&self) -> &AnyUserData {
        &self.host.world
    }

    /// Compiles a script in an environment of its own; returns the chunk's function.
    pub(crate) fn load(&self, name: &str, source: &str) -> Result<Function, ScriptError> {
        let lua = &self.host.lua;
        let env = environment(lua, &self.host.base).map_err(|e| script_error(name, &e))?;
        lua.load(source)
            .set_name(format!("={name}"))
            // Always compiled as text: Luau loads bytecode without verifying it.
            .set_mode(mlua::chunk::ChunkMode::Text)
            .set_environment(env)
            .into_function()
            .map_err(|e| script_error(name, &e))
    }

    /// Brings the component globals in step with the store's components.
    fn sync_components(&self, store: &Store) -> mlua::Result<()> {
        let mut known = self
            .host
            .globals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // A name that is no identifier, or would hide a global, gets no global.
        let now: Vec<String> = store
            .components()
            .map(|s| s.def().name().to_owned())
            .filter(|name| super::names::component_name_problem(name).is_none())
            .collect();
        if *known == now {
            return Ok(());
        }
        let base = &self.host.base;
        for name in known.iter() {
            base.raw_set(name.as_str(), LuaValue::Nil)?;
        }
        for name in &now {
            let ud = self
                .host
                .lua
                .create_userdata(ComponentType(Arc::from(name.as_str())))?;
            base.raw_set(name.as_str(), ud)?;
        }
        *known = now;
        Ok(())
    }

    fn begin(&self, owner: &str) {
        if let Some(mut state) = self.host.lua.app_data_mut::<VmState>() {
            owner.clone_into(&mut state.owner);
        }
        self.host.meter.start(&self.host.budget);
    }

    /// Ends a call: lifts the budget, turns a budget trip into its error.
    fn end<R>(&self, name: &str, result: mlua::Result<R>) -> Result<R, ScriptError> {
        let tripped = self.host.meter.stop();
        result.map_err(|e| {
            let mut error = script_error(name, &e);
            if let Some(budget) = tripped {
                error.message = format!("the callback ran out of its {budget} budget");
            }
            error
        })
    }

    /// Takes what scripts printed since the last call.
    pub(crate) fn take_prints(&self) -> Vec<String> {
        self.host
            .lua
            .app_data_mut::<VmState>()
            .map(|mut s| std::mem::take(&mut s.prints))
            .unwrap_or_default()
    }

    /// Calls `f` with the scene lent to the VM. `name` names the script in errors.
    pub(crate) fn call_serial<R: mlua::FromLuaMulti>(
        &self,
        scene: &mut Scene,
        owner: &str,
        name: &str,
        f: &Function,
        args: impl IntoLuaMulti,
    ) -> Result<R, ScriptError> {
        let _call = self
            .host
            .call
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let lua = &self.host.lua;
        if let Err(e) = self.sync_components(&scene.store) {
            return Err(script_error(name, &e));
        }
        self.begin(owner);
        let result = lua.scope(|scope| {
            let lent = scope.create_any_userdata_ref_mut(scene)?;
            lua.set_app_data(CurrentScene(lent));
            let result = f
                .call::<R>(args)
                .and_then(|r| columns::finish(lua).map(|()| r));
            if let Err(error) = &result {
                // Writes pending when the call failed are dropped with it.
                columns::drop_pending(lua);
                super::errors::reclaim(lua, error);
            }
            lua.remove_app_data::<CurrentScene>();
            result
        });
        let prints = self.take_prints();
        scene.prints.extend(prints);
        self.end(name, result)
    }

    /// Calls `f` against the established state (`arena` and `store`, lent to the VM for the
    /// call), collecting its writes in `par`.
    pub(crate) fn call_parallel(
        &self,
        par: ParState,
        (arena, store): (&Snapshot, &Store),
        owner: &str,
        name: &str,
        f: &Function,
        args: impl IntoLuaMulti,
    ) -> (Result<MultiValue, ScriptError>, ParState, Vec<String>) {
        let _call = self
            .host
            .call
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let lua = &self.host.lua;
        if let Err(e) = self.sync_components(store) {
            return (Err(script_error(name, &e)), par, Vec::new());
        }
        self.begin(owner);
        let roots = (par.game, par.workspace);
        lua.set_app_data(par);
        let result = lua.scope(|scope| {
            lua.set_app_data(CurrentEstablished {
                arena: scope.create_any_userdata_ref(arena)?,
                store: scope.create_any_userdata_ref(store)?,
            });
            let result = f
                .call::<MultiValue>(args)
                .and_then(|r| columns::finish(lua).map(|()| r));
            if let Err(error) = &result {
                columns::drop_pending(lua);
                super::errors::reclaim(lua, error);
            }
            lua.remove_app_data::<CurrentEstablished>();
            result
        });
        let par = lua
            .remove_app_data::<ParState>()
            .unwrap_or_else(|| ParState::new(roots, None));
        let prints = self.take_prints();
        (self.end(name, result), par, prints)
    }

    /// Whether a value is a table `system{}` made.
    pub(crate) fn is_system_table(&self, value: &LuaValue) -> bool {
        let LuaValue::Table(t) = value else {
            return false;
        };
        let Ok(mark) = self.host.lua.named_registry_value::<Table>(SYSTEM_MARK) else {
            return false;
        };
        t.raw_get::<bool>(mark).unwrap_or(false)
    }
}

/// `print(...)`: each argument through `tostring`, tab-separated, kept for the caller.
fn print(lua: &Lua, args: MultiValue) -> mlua::Result<()> {
    let tostring: Function = lua.globals().get("tostring")?;
    let mut parts = Vec::with_capacity(args.len());
    for value in args {
        let text: String = tostring.call(value)?;
        parts.push(text);
    }
    if let Some(mut state) = lua.app_data_mut::<VmState>() {
        state.prints.push(parts.join("\t"));
    }
    Ok(())
}

/// The keys a `system{}` table may have.
pub(crate) const SYSTEM_KEYS: [&str; 8] = [
    "phase", "sets", "before", "after", "interval", "parallel", "writes", "run",
];

/// `system{...}`: checks the table and marks it as a system.
fn system(lua: &Lua, table: Table) -> mlua::Result<Table> {
    for pair in table.clone().pairs::<LuaValue, LuaValue>() {
        let (key, _) = pair?;
        let name = match &key {
            LuaValue::String(s) => s.to_str()?.to_string(),
            other => {
                return Err(mlua::Error::runtime(format!(
                    "a system table is keyed by name, not {}",
                    super::convert::kind(other)
                )));
            }
        };
        if !SYSTEM_KEYS.contains(&name.as_str()) {
            return Err(mlua::Error::runtime(format!(
                "a system takes {}; unknown key `{name}`",
                SYSTEM_KEYS.join(", ")
            )));
        }
    }
    if !matches!(table.raw_get::<LuaValue>("run")?, LuaValue::Function(_)) {
        return Err(mlua::Error::runtime("a system needs a `run` function"));
    }
    super::system::check_table(&table)?;
    let mark: Table = lua.named_registry_value(SYSTEM_MARK)?;
    table.raw_set(mark, true)?;
    Ok(table)
}

/// Puts the game API in a VM's base environment.
fn install_api(lua: &Lua, base: &Table, world: &AnyUserData) -> mlua::Result<()> {
    let mark = lua.create_table()?;
    mark.set_readonly(true);
    lua.set_named_registry_value(SYSTEM_MARK, mark)?;
    let instance = lua.create_table()?;
    instance.raw_set("new", lua.create_function(instance_new)?)?;
    instance.set_readonly(true);
    base.raw_set("Instance", instance)?;
    let vector3 = lua.create_table()?;
    vector3.raw_set("new", lua.create_function(super::convert::vector3_new)?)?;
    vector3.set_readonly(true);
    base.raw_set("Vector3", vector3)?;
    base.raw_set("print", lua.create_function(print)?)?;
    base.raw_set("system", lua.create_function(system)?)?;
    base.raw_set("world", world.clone())?;
    super::errors::install(lua, base)?;
    Ok(())
}
