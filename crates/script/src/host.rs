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
use strata_mix::{Fnv1a, GAMMA, mix};

use super::ScriptError;
use super::access::{CurrentEstablished, CurrentScene, HandleLane, ParState};
use super::api::{WorldApi, install_caches, instance_new};
use super::args::ComponentType;
use super::columns;
use super::memory::{Categories, Holder, ScriptMemory};
use super::query::QueryEntry;
use super::vm::{ScriptBudget, compile, new_vm, script_error};
use strata::Scene;
use strata_schema_adoption::meter::Meter;

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

function H.iter(nt, n, insts, h1, h2, h3, hs, sel, cur)
    local i, j = 0, 0
    if sel == nil then
        if nt == 0 then
            return function() i += 1; if i > n then return nil end; return insts[i] end
        elseif nt == 1 then
            return function() i += 1; cur.i = i; if i > n then return nil end; return insts[i], h1[i] end
        elseif nt == 2 then
            return function() i += 1; cur.i = i; if i > n then return nil end; return insts[i], h1[i], h2[i] end
        elseif nt == 3 then
            return function() i += 1; cur.i = i; if i > n then return nil end; return insts[i], h1[i], h2[i], h3[i] end
        end
    else
        if nt == 0 then
            return function() j += 1; i = sel[j]; if i == nil then return nil end; return insts[i] end
        elseif nt == 1 then
            return function() j += 1; i = sel[j]; if i == nil then return nil end; cur.i = i; return insts[i], h1[i] end
        elseif nt == 2 then
            return function() j += 1; i = sel[j]; if i == nil then return nil end; cur.i = i; return insts[i], h1[i], h2[i] end
        elseif nt == 3 then
            return function() j += 1; i = sel[j]; if i == nil then return nil end; cur.i = i; return insts[i], h1[i], h2[i], h3[i] end
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
        cur.i = i
        local out = table.create(nt)
        for t = 1, nt do out[t] = hs[t][i] end
        return insts[i], table.unpack(out, 1, nt)
    end
end

-- The handle path's fast lane (see `access::HandleLane`). `SLOT.cur` is the pass the call's
-- latest `for ... in query` loop runs, set by the host when the loop starts and cleared at the
-- next call that may change what the lane reads: while it is set, nothing has changed that
-- but writes made here, so a handle of the loop's current match reads and writes its field in
-- the pass's column tables (a column per field, taken from the store when first used and
-- written back at the next call that reaches the world or when the callback ends; `lo` and
-- `hi` bound the rows written since the last write-back). Every other access (another match's
-- handle, a field no column holds, a value the fast lane does not check) goes to the host,
-- which resolves the instance in the world.
local SLOT = {}
H.slot = SLOT

function H.handle_meta(slow_index, slow_newindex, take)
    local floor = math.floor
    -- The term from 3 on whose handle at the loop's current match `i` is `h`; 0 when none
    -- is. Each access checks terms 1 and 2 inline first (a function call per access costs a
    -- tenth of a handle loop's time); `h2` is an empty table when the query has one term.
    local function later_term(cur, h, i)
        local hs = cur.hs
        for t = 3, cur.nt do
            if rawequal(hs[t][i], h) then return t end
        end
        return 0
    end
    -- Each access checks first that `h` is a handle of the loop's current match, then reads
    -- or writes the match's row of the field's column.
    local function index(h, key)
        local cur = SLOT.cur
        if cur ~= nil then
            local i = cur.i
            local t = if rawequal(cur.h1[i], h) then 1
                elseif rawequal(cur.h2[i], h) then 2
                else later_term(cur, h, i)
            if t ~= 0 then
                local set = cur.read[t]
                if set == nil then
                    set = take(cur, t, false, false)
                    cur.read[t] = set
                end
                if set then
                    local column = set[key]
                    if column ~= nil then return column[i] end
                end
            end
        end
        return slow_index(h, key)
    end
    local function newindex(h, key, v)
        local cur = SLOT.cur
        if cur ~= nil then
            local i = cur.i
            local t = if rawequal(cur.h1[i], h) then 1
                elseif rawequal(cur.h2[i], h) then 2
                else later_term(cur, h, i)
            if t ~= 0 then
                local set = cur.write[t]
                if set == nil then
                    local read = cur.read[t]
                    set = take(cur, t, true, read ~= nil and read ~= false)
                    cur.write[t] = set
                    -- The write set may hold fewer fields (a parallel system's declared ones).
                    if read == nil then cur.read[t] = set end
                end
                if set then
                    local column = set[key]
                    if column ~= nil then
                        local kind = cur.kinds[t][key]
                        local tv = type(v)
                        if (kind == 0 and tv == "number")
                            or (kind == 1 and tv == "boolean")
                            or (kind == 2 and tv == "number" and v == floor(v)
                                and v >= -9007199254740992 and v <= 9007199254740992)
                        then
                            column[i] = v
                            -- The rows written since the last write-back, which applies only
                            -- those.
                            local lo = cur.lo
                            if lo == nil or i < lo then cur.lo = i end
                            local hi = cur.hi
                            if hi == nil or i > hi then cur.hi = i end
                            return
                        end
                    end
                end
            end
        end
        return slow_newindex(h, key, v)
    end
    return index, newindex
end

-- Wrappers, for the host's wrapper arrays: `ids` is a buffer of instance ids as f64s. Puts
-- the wrapper `cache` holds for each of the `n` ids into `out` at index `at` + its position,
-- and returns how many it did not find, with their positions (0-based) in a buffer of f64s.
function H.find_wrappers(out, at, cache, ids, n)
    local rd, wr = buffer.readf64, buffer.writef64
    local missing, count = buffer.create(n * 8), 0
    for i = 1, n do
        local w = cache[rd(ids, (i - 1) * 8)]
        if w ~= nil then
            out[at + i] = w
        else
            wr(missing, count * 8, i - 1)
            count += 1
        end
    end
    return count, missing
end

-- Puts the wrappers given after `slots` into `cache` under the ids in `ids`, and into `out`
-- at the indexes in `slots` (buffers of f64s, one per wrapper).
function H.fill_wrappers(out, cache, ids, slots, ...)
    local rd = buffer.readf64
    local wrappers = { ... }
    for i = 1, #wrappers do
        local w = wrappers[i]
        cache[rd(ids, (i - 1) * 8)] = w
        out[rd(slots, (i - 1) * 8)] = w
    end
end

function H.refill(t, b, n, kind)
    local rd = buffer.readf64
    if kind == 1 then
        for i = 1, n do t[i] = rd(b, (i - 1) * 8) ~= 0 end
    else
        for i = 1, n do t[i] = rd(b, (i - 1) * 8) end
    end
end

-- Sets t[i] for the n (i, value) pairs packed in b as f64s, booleans as 0 and 1 for kind 1.
function H.scatter(t, b, n, kind)
    local rd = buffer.readf64
    if kind == 1 then
        for j = 0, n - 1 do t[rd(b, j * 16)] = rd(b, j * 16 + 8) ~= 0 end
    else
        for j = 0, n - 1 do t[rd(b, j * 16)] = rd(b, j * 16 + 8) end
    end
end

function H.unpack(b, n, kind)
    local t = table.create(n)
    H.refill(t, b, n, kind)
    return t
end

-- Packs rows `from` (1 when nil) to `n` of t into b, row `from` at offset 0; returns the first
-- row holding a value of another kind, if any.
function H.pack(t, n, b, kind, from)
    local wr = buffer.writef64
    local first = from or 1
    local base = (first - 1) * 8
    if kind == 1 then
        for i = first, n do
            local v = t[i]
            if v == true then wr(b, (i - 1) * 8 - base, 1)
            elseif v == false then wr(b, (i - 1) * 8 - base, 0)
            else return i end
        end
        return nil
    end
    -- Four rows a step (fewer loop back-edges, so fewer budget interrupts); a value that is
    -- not a number makes writef64 fail, and the pcall below finds its row.
    local ok = pcall(function()
        local i = first
        while i + 3 <= n do
            local o = (i - 1) * 8 - base
            wr(b, o, t[i]); wr(b, o + 8, t[i + 1]); wr(b, o + 16, t[i + 2]); wr(b, o + 24, t[i + 3])
            i += 4
        end
        while i <= n do
            wr(b, (i - 1) * 8 - base, t[i])
            i += 1
        end
    end)
    if ok then return nil end
    for i = first, n do
        if type(t[i]) ~= "number" then return i end
    end
    return nil
end

function H.chunk_index(methods, instances)
    return function(chunk, key)
        local method = methods[key]
        if method ~= nil then return method end
        if key == "instances" then
            local list = instances(chunk)
            rawset(chunk, "instances", list)
            return list
        end
        return nil
    end
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
    pub(crate) prints: Prints,
    /// Columns taken for writing whose changes are not applied yet: query key, component.
    pub(crate) pending: Vec<(String, ComponentId)>,
    /// The same for the handle path's columns (see `access::HandleLane`), which every
    /// write-back applies and forgets.
    pub(crate) handle_pending: Vec<(String, ComponentId)>,
    /// Whether queries made from now on keep their matches (see `Scene::set_query_caching`).
    pub(crate) queries_cached: bool,
    /// The memory category of each owner whose calls ran here.
    pub(crate) categories: Categories,
    /// The random stream of the running call (`math.random`).
    pub(crate) random: Random,
    /// Each owner's calls so far in the frame its latest call ran in: (frame, calls).
    invocations: HashMap<String, (u64, u64)>,
}

impl VmState {
    /// The query a script's query object (or a chunk of it) names by `key`; an error when the
    /// owner's queries were let go.
    pub(crate) fn query_mut(&mut self, key: &str) -> mlua::Result<&mut QueryEntry> {
        self.queries
            .get_mut(key)
            .ok_or_else(|| mlua::Error::runtime("the query is no longer known; make it again"))
    }
}

/// A VM's state, to read.
pub(crate) fn state(lua: &Lua) -> mlua::Result<mlua::AppDataRef<'_, VmState>> {
    lua.app_data_ref::<VmState>()
        .ok_or_else(|| mlua::Error::runtime("no script state"))
}

/// A VM's state, to change.
pub(crate) fn state_mut(lua: &Lua) -> mlua::Result<mlua::AppDataRefMut<'_, VmState>> {
    lua.app_data_mut::<VmState>()
        .ok_or_else(|| mlua::Error::runtime("no script state"))
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
    /// The memory the world's scripts share, this VM's included.
    memory: Arc<ScriptMemory>,
    /// The VM's one owner (an execution group's VM), or `None` when owners share it.
    holder: Option<Holder>,
    /// The memory limit of the next call when a wave fixed it (see `ScriptMemory::begin_wave`).
    wave_limit: Mutex<Option<usize>>,
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

/// A call that failed: the script's error, and whom its failure asks to stop (the failing
/// owner when it ran out of instructions or time, the largest holder of memory when memory
/// ran out), if anyone.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) error: ScriptError,
    pub(crate) stop: Option<Stop>,
}

/// Whom a runaway's failure asks to stop, and whether what it holds was let go of.
#[derive(Clone, Debug)]
pub(crate) struct Stop {
    pub(crate) holder: Holder,
    pub(crate) release: bool,
}

impl From<ScriptError> for Failure {
    fn from(error: ScriptError) -> Self {
        Self { error, stop: None }
    }
}

impl From<Failure> for ScriptError {
    fn from(failure: Failure) -> Self {
        failure.error
    }
}

/// Whether an error is (or wraps) a Luau allocation that failed.
fn is_memory_error(error: &mlua::Error) -> bool {
    match error {
        mlua::Error::MemoryError(_) => true,
        mlua::Error::CallbackError { cause, .. } | mlua::Error::WithContext { cause, .. } => {
            is_memory_error(cause)
        }
        _ => false,
    }
}

/// Who makes a call: the owner its queries, readers and memory belong to, and whether it
/// runs the owner (a system's run, a setup script, a group's callback) or loads its script
/// (the chunk that returns `system{...}`), which draws random numbers from a stream of its
/// own so that loading a system never moves its runs' streams.
/// A setup script, run once, has the budget's `setup_time`, as a script loading does.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Caller<'a> {
    owner: &'a str,
    kind: CallKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CallKind {
    Run,
    Setup,
    Load,
}

impl<'a> Caller<'a> {
    /// A call running `owner` (a system's run, a group's callback).
    pub(crate) fn run(owner: &'a str) -> Self {
        Self {
            owner,
            kind: CallKind::Run,
        }
    }

    /// A call running the script `owner` once (a setup script).
    pub(crate) fn setup(owner: &'a str) -> Self {
        Self {
            owner,
            kind: CallKind::Setup,
        }
    }

    /// A call loading `owner`'s script.
    pub(crate) fn load(owner: &'a str) -> Self {
        Self {
            owner,
            kind: CallKind::Load,
        }
    }
}

impl Scripts {
    /// A new game VM with `budget`, its memory limit its own.
    pub fn new(budget: ScriptBudget) -> Result<Self, ScriptError> {
        let memory = Arc::new(ScriptMemory::new(budget.memory));
        Self::in_world(budget, memory, None)
    }

    /// A new game VM sharing `memory` with the other VMs of a world; `holder` is its one
    /// owner (an execution group's VM), `None` for the scene's own VM.
    pub(crate) fn in_world(
        budget: ScriptBudget,
        memory: Arc<ScriptMemory>,
        holder: Option<Holder>,
    ) -> Result<Self, ScriptError> {
        let (lua, meter, base) = new_vm(&budget, install_globals).map_err(setup_error)?;
        install_caches(&lua).map_err(setup_error)?;
        lua.set_app_data(VmState {
            owner: String::new(),
            queries: HashMap::new(),
            readers: HashMap::new(),
            prints: Prints::default(),
            pending: Vec::new(),
            handle_pending: Vec::new(),
            queries_cached: true,
            categories: Categories::default(),
            random: Random::new(0),
            invocations: HashMap::new(),
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
        let instances = lua
            .create_function(|lua, chunk: Table| {
                let key: String = chunk.raw_get("query")?;
                let generation: u64 = chunk.raw_get("generation")?;
                super::query::chunk_instances(lua, &key, generation)
            })
            .map_err(setup_error)?;
        let chunk_index: Function = helpers
            .raw_get::<Function>("chunk_index")
            .and_then(|make| make.call((chunk_methods, instances)))
            .map_err(setup_error)?;
        let chunk_meta = lua.create_table().map_err(setup_error)?;
        chunk_meta
            .raw_set("__index", chunk_index)
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
        let slot: Table = helpers.raw_get("slot").map_err(setup_error)?;
        lua.set_app_data(HandleLane::new(slot));
        let take = lua
            .create_function(columns::take_for_handles)
            .map_err(setup_error)?;
        let (index, newindex): (Function, Function) = helpers
            .raw_get::<Function>("handle_meta")
            .and_then(|make| {
                make.call((
                    lua.create_function(super::api::handle_index)?,
                    lua.create_function(super::api::handle_newindex)?,
                    take,
                ))
            })
            .map_err(setup_error)?;
        helpers
            .raw_set("handle_index", index)
            .map_err(setup_error)?;
        helpers
            .raw_set("handle_newindex", newindex)
            .map_err(setup_error)?;
        lua.set_named_registry_value(HELPERS, helpers)
            .map_err(setup_error)?;
        lua.set_named_registry_value(KEPT, lua.create_table().map_err(setup_error)?)
            .map_err(setup_error)?;
        let world = lua.create_userdata(WorldApi).map_err(setup_error)?;
        install_api(&lua, &base, &world).map_err(setup_error)?;
        memory.join(&lua, holder.clone());
        Ok(Self {
            host: Arc::new(Host {
                lua,
                meter,
                base,
                world,
                budget,
                memory,
                holder,
                wave_limit: Mutex::new(None),
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

    /// Fixes the memory limit of the VM's next call (a wave's share).
    pub(crate) fn fix_next_limit(&self, limit: usize) {
        *self
            .host
            .wave_limit
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(limit);
    }

    /// Keeps `f` as `owner`'s function: the VM holds it (and everything it reaches) until
    /// [`Scripts::release`].
    pub(crate) fn keep(&self, owner: &str, f: &Function) -> mlua::Result<()> {
        let kept: Table = self.host.lua.named_registry_value(KEPT)?;
        kept.raw_set(owner, f)
    }

    /// The function kept for `owner`, unless it was released.
    pub(crate) fn kept(&self, owner: &str) -> Option<Function> {
        let kept: Table = self.host.lua.named_registry_value(KEPT).ok()?;
        kept.raw_get::<Option<Function>>(owner).ok().flatten()
    }

    /// Lets go of everything `owner` holds in the VM (its kept function, with the script's
    /// environment and upvalues, its queries' mirrors and its removal readers) and collects
    /// it. The owner's calls fail from now on.
    pub(crate) fn release(&self, owner: &str) {
        release_in(&self.host.lua, owner);
    }

    /// Lets go of what `owner`'s calls built up in the VM (its queries' mirrors, its removal
    /// readers, its pending writes), keeping its kept function: a new version of a system
    /// starts from nothing but its code.
    pub(crate) fn forget_state(&self, owner: &str) {
        forget_state_in(&self.host.lua, owner);
    }

    /// Compiles a script in an environment of its own; returns the chunk's function.
    pub(crate) fn load(&self, name: &str, source: &str) -> Result<Function, ScriptError> {
        compile(&self.host.lua, &self.host.base, name, source)
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

    /// Starts a call in frame `frame` of a world whose seed is `seed`: the owner, its memory
    /// category and limit, its random stream, its budget.
    fn begin(&self, caller: Caller<'_>, frame: u64, seed: u64) {
        let lua = &self.host.lua;
        let fixed = self
            .host
            .wave_limit
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let limit = fixed.unwrap_or_else(|| self.host.memory.headroom(lua));
        // Zero would mean "no limit" to the VM: a call with nothing left gets one byte.
        let _ = lua.set_memory_limit(limit.max(1));
        if let Some(mut state) = lua.app_data_mut::<VmState>() {
            caller.owner.clone_into(&mut state.owner);
            if self.host.holder.is_none() {
                state.categories.enter(lua, caller.owner);
            }
            state.random = if caller.kind == CallKind::Load {
                Random::for_call(seed, frame, &format!("loading {}", caller.owner), 0)
            } else {
                let calls = match state.invocations.get_mut(caller.owner) {
                    Some((last, calls)) if *last == frame => {
                        *calls += 1;
                        *calls
                    }
                    _ => {
                        state
                            .invocations
                            .insert(caller.owner.to_owned(), (frame, 0));
                        0
                    }
                };
                Random::for_call(seed, frame, caller.owner, calls)
            };
        }
        let budget = &self.host.budget;
        let time = match caller.kind {
            CallKind::Run => budget.time,
            CallKind::Setup | CallKind::Load => budget.setup_time,
        };
        self.host.meter.start(budget.instructions, time);
    }

    /// Ends a call: lifts the budget; turns a budget trip into its error (even when the script
    /// caught every trip and returned), and names whom a runaway must stop.
    fn end<R>(
        &self,
        caller: Caller<'_>,
        name: &str,
        result: mlua::Result<R>,
    ) -> Result<R, Failure> {
        let lua = &self.host.lua;
        let tripped = self.host.meter.stop();
        let owner = self.holder_of(caller.owner);
        // What the failing owner held when it failed, before anything is collected.
        let owner_bytes = match (&result, &self.host.holder) {
            (Err(e), None) if is_memory_error(e) => lua
                .app_data_ref::<VmState>()
                .map_or(0, |state| state.categories.bytes_of(lua, caller.owner)),
            (Err(e), Some(_)) if is_memory_error(e) => lua.used_memory(),
            _ => 0,
        };
        if self.host.holder.is_none() {
            Categories::leave(lua);
        }
        let _ = lua.set_memory_limit(self.host.memory.limit().max(1));
        if let Some(trip) = tripped {
            // The line the callback was at when the budget first stopped it, if in this script.
            let line = trip.at.and_then(|at| (at.chunk == name).then_some(at.line));
            let error = ScriptError {
                script: name.to_owned(),
                line,
                message: format!(
                    "the callback ran out of its {} budget",
                    trip.limit.budget_name()
                ),
            };
            return Err(Failure {
                error,
                stop: Some(Stop {
                    holder: owner,
                    release: false,
                }),
            });
        }
        match result {
            Ok(value) => Ok(value),
            Err(e) if is_memory_error(&e) => {
                let mut error = script_error(name, &e);
                let memory = &self.host.memory;
                let (holder, bytes) = memory.largest_holder(lua, &owner, owner_bytes);
                // Luau collects nothing when an allocation is refused: what the failed call
                // left is collected now, so the next call does not fail on it.
                let _ = lua.gc_collect();
                error.message = format!(
                    "out of memory: the world's scripts may hold {} together, and {holder} holds {}{}",
                    mebibytes(memory.limit()),
                    mebibytes(bytes),
                    if holder == owner {
                        String::new()
                    } else {
                        format!(" (while {owner} ran)")
                    }
                );
                // Let go of the holder now, so the calls after this one find memory again.
                if self.host.holder.is_none() && holder.part.is_none() {
                    release_in(lua, &holder.owner);
                }
                Err(Failure {
                    error,
                    stop: Some(Stop {
                        holder,
                        release: true,
                    }),
                })
            }
            Err(e) => Err(Failure::from(script_error(name, &e))),
        }
    }

    /// The holder a call of `owner` in this VM counts as.
    fn holder_of(&self, owner: &str) -> Holder {
        self.host.holder.clone().unwrap_or_else(|| Holder {
            owner: owner.to_owned(),
            part: None,
        })
    }

    /// Takes what scripts printed since the last call.
    pub(crate) fn take_prints(&self) -> Vec<String> {
        self.host
            .lua
            .app_data_mut::<VmState>()
            .map(|mut s| s.prints.take())
            .unwrap_or_default()
    }

    /// Calls `f` with the scene lent to the VM. `name` names the script in errors.
    pub(crate) fn call_serial<R: mlua::FromLuaMulti>(
        &self,
        scene: &mut Scene,
        caller: Caller<'_>,
        name: &str,
        f: &Function,
        args: impl IntoLuaMulti,
    ) -> Result<R, Failure> {
        let _call = self
            .host
            .call
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let lua = &self.host.lua;
        if let Err(e) = self.sync_components(scene.store()) {
            return Err(script_error(name, &e).into());
        }
        self.set_query_caching(scene.query_caching());
        self.begin(
            caller,
            scene.clock().frame,
            world_seed(scene.arena(), scene.game()),
        );
        let result = lua.scope(|scope| {
            let lent = scope.create_any_userdata_ref_mut(scene)?;
            lua.set_app_data(CurrentScene(lent));
            let result = columns::finish(lua, f.call::<R>(args));
            lua.remove_app_data::<CurrentScene>();
            result
        });
        let prints = self.take_prints();
        scene.add_prints(prints);
        self.end(caller, name, result)
    }

    /// Calls `f` against the established state (`arena` and `store`, lent to the VM for the
    /// call) in frame `frame`, collecting its writes in `par`.
    #[allow(
        clippy::too_many_arguments,
        reason = "the call's state, its reading and its caller are all a parallel call needs"
    )]
    pub(crate) fn call_parallel(
        &self,
        par: ParState,
        (arena, store): (&Snapshot, &Store),
        caller: Caller<'_>,
        frame: u64,
        cached: bool,
        name: &str,
        f: &Function,
        args: impl IntoLuaMulti,
    ) -> (Result<MultiValue, Failure>, ParState, Vec<String>) {
        let _call = self
            .host
            .call
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let lua = &self.host.lua;
        if let Err(e) = self.sync_components(store) {
            return (Err(script_error(name, &e).into()), par, Vec::new());
        }
        self.set_query_caching(cached);
        self.begin(caller, frame, world_seed(arena, par.game));
        let roots = (par.game, par.workspace);
        lua.set_app_data(par);
        let result = lua.scope(|scope| {
            lua.set_app_data(CurrentEstablished {
                arena: scope.create_any_userdata_ref(arena)?,
                store: scope.create_any_userdata_ref(store)?,
            });
            let result = columns::finish(lua, f.call::<MultiValue>(args));
            lua.remove_app_data::<CurrentEstablished>();
            result
        });
        let par = lua
            .remove_app_data::<ParState>()
            .unwrap_or_else(|| ParState::new(roots, None));
        let prints = self.take_prints();
        (self.end(caller, name, result), par, prints)
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

/// A byte count in MiB, for messages.
fn mebibytes(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// The seed a world's scripts draw random numbers from: its game root's GUID (which the
/// world's seed decides, and a save keeps), mixed down to 64 bits.
fn world_seed(arena: &Snapshot, game: strata_arena::InstanceId) -> u64 {
    arena.get(game).map_or(0, |node| {
        let guid = node.guid().0;
        (guid as u64) ^ ((guid >> 64) as u64).rotate_left(17)
    })
}

/// Everything `owner` holds in `lua` let go of and collected (see [`Scripts::release`]).
fn release_in(lua: &Lua, owner: &str) {
    if let Ok(kept) = lua.named_registry_value::<Table>(KEPT) {
        let _ = kept.raw_set(owner, LuaValue::Nil);
    }
    forget_state_in(lua, owner);
}

/// What `owner`'s calls built up in `lua` (query mirrors, removal readers, pending writes) let
/// go of and collected; its kept function stays (see [`Scripts::forget_state`]).
fn forget_state_in(lua: &Lua, owner: &str) {
    if let Some(mut state) = lua.app_data_mut::<VmState>() {
        let prefix = format!("{owner}|");
        state.queries.retain(|key, _| !key.starts_with(&prefix));
        state.readers.retain(|(reader, _), _| reader != owner);
        state.pending.retain(|(key, _)| !key.starts_with(&prefix));
        state
            .handle_pending
            .retain(|(key, _)| !key.starts_with(&prefix));
    }
    let _ = lua.gc_collect();
}

/// The registry key of the functions a VM keeps for their owners.
const KEPT: &str = "strata.kept";

/// The random stream of one call: splitmix64, started from the world's seed, the frame, the
/// owner and how many calls the owner made before in that frame, so a call draws the same
/// numbers on any thread count and in any lane order, and a loaded world goes on drawing what
/// the saved one would have.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Random(u64);

impl Random {
    fn new(state: u64) -> Self {
        Self(state)
    }

    fn for_call(seed: u64, frame: u64, owner: &str, calls: u64) -> Self {
        let owner = Fnv1a::hash(owner.as_bytes());
        let mut state = seed;
        for part in [frame, owner, calls] {
            state = mix(state ^ mix(part));
        }
        Self(state)
    }

    /// The next 64 random bits.
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GAMMA);
        mix(self.0)
    }
}

/// Replaces the raw globals a sandboxed VM must not offer as Luau has them: `print` (so
/// `_G.print` prints where `print` does), `math.random` (drawn from the world's seed), and
/// `pcall`, `xpcall` and `coroutine` (which turn a caught API error into its message).
fn install_globals(lua: &Lua, globals: &Table) -> mlua::Result<()> {
    super::errors::install(lua, globals)?;
    globals.raw_set("print", lua.create_function(print)?)?;
    let math: Table = globals.raw_get("math")?;
    math.raw_set("random", lua.create_function(random)?)?;
    math.raw_set(
        "randomseed",
        lua.create_function(|_, _: MultiValue| -> mlua::Result<()> {
            Err(mlua::Error::runtime(
                "math.randomseed is not offered: random numbers come from the world's seed (`seed` in place.toml)",
            ))
        })?,
    )?;
    Ok(())
}

/// A whole-number argument of `math.random`.
fn whole(value: f64, which: &str) -> mlua::Result<i64> {
    if value.is_finite() && value.fract() == 0.0 && value.abs() < 2f64.powi(63) {
        Ok(value as i64)
    } else {
        Err(mlua::Error::runtime(format!(
            "math.random takes whole numbers; its {which} argument is {value}"
        )))
    }
}

/// `math.random()`, `math.random(n)`, `math.random(m, n)`: from the running call's stream.
fn random(lua: &Lua, (m, n): (Option<f64>, Option<f64>)) -> mlua::Result<LuaValue> {
    let bits = state_mut(lua)?.random.next();
    let (low, high) = match (m, n) {
        (None, _) => return Ok(LuaValue::Number((bits >> 11) as f64 / (1u64 << 53) as f64)),
        (Some(n), None) => (1, whole(n, "first")?),
        (Some(m), Some(n)) => (whole(m, "first")?, whole(n, "second")?),
    };
    if low > high {
        return Err(mlua::Error::runtime(format!(
            "math.random: the interval [{low}, {high}] is empty"
        )));
    }
    let span = (high as i128 - low as i128 + 1) as u128;
    let offset = (u128::from(bits) * span) >> 64;
    Ok(LuaValue::Number((low as i128 + offset as i128) as f64))
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

/// The most printed text a VM keeps between two takes (a call's prints are taken when it
/// ends): past it, lines are counted and dropped, so printing in a loop cannot fill the host's
/// memory outside the scripts' memory limit.
pub(crate) const MAX_PRINTED_BYTES: usize = 4 * 1024 * 1024;

/// What scripts printed and the host has not taken yet, bounded by [`MAX_PRINTED_BYTES`].
#[derive(Default)]
pub(crate) struct Prints {
    lines: Vec<String>,
    bytes: usize,
    dropped: u64,
}

impl Prints {
    fn push(&mut self, line: String) {
        // Once a line is dropped, the rest are too: what is kept is a beginning, without gaps.
        if self.dropped > 0 || self.bytes + line.len() > MAX_PRINTED_BYTES {
            self.dropped += 1;
        } else {
            self.bytes += line.len();
            self.lines.push(line);
        }
    }

    /// The lines kept, followed by a line saying how many were dropped, if any; empties it.
    fn take(&mut self) -> Vec<String> {
        let mut lines = std::mem::take(&mut self.lines);
        if self.dropped > 0 {
            lines.push(format!(
                "[{} more printed lines dropped: a call keeps at most {} MiB of printed text]",
                self.dropped,
                MAX_PRINTED_BYTES / (1024 * 1024)
            ));
        }
        *self = Prints::default();
        lines
    }
}

/// The keys a `system{}` table may have.
pub(crate) const SYSTEM_KEYS: [&str; 9] = [
    "phase", "sets", "before", "after", "interval", "parallel", "writes", "reads", "run",
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
    base.raw_set("system", lua.create_function(system)?)?;
    base.raw_set("world", world.clone())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Luau resolves a safe environment's names against the globals when a script loads (see
    /// `vm::environment`), so a name the scripts' base environment holds must be absent from
    /// the globals or hold the same value there.
    #[test]
    fn the_base_environment_and_the_globals_agree_on_every_name_both_hold() {
        let scripts = Scripts::new(ScriptBudget::STANDARD).expect("a game VM");
        let globals = scripts.host.lua.globals();
        let mut checked = 0;
        for pair in scripts.host.base.pairs::<LuaValue, LuaValue>() {
            let (name, value) = pair.expect("a base entry");
            let global: LuaValue = globals.get(&name).expect("a global read");
            assert!(
                global.is_nil() || global == value,
                "`{name:?}` differs between the base environment and the globals"
            );
            checked += 1;
        }
        assert!(checked >= 4, "the game API is in the base environment");
        for moved in ["pcall", "xpcall", "coroutine"] {
            let global: LuaValue = globals.get(moved).expect("a global read");
            assert!(!global.is_nil(), "`{moved}` is a global");
        }
    }
}
