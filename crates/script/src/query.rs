//! Queries from Luau: `world:query{...}`, iterated through a mirror of instance wrappers and
//! component handles kept in VM tables, and `world:removed(C)`.
//!
//! Invariant: a query's mirror is rebuilt exactly when the query's matches were built against
//! other inputs than the mirror's (`Query::built_against`, which names the store's identity and
//! the structural revisions: for a cached query, exactly when its cache generation moved; an
//! uncached query's generation moves at every call, its inputs only with structure); a rebuild
//! reuses the wrappers and handles of instances that survive (they come from the VM's wrapper
//! caches). Each query is keyed by the script that asks and its spec, so every system keeps
//! its own change window and removal cursor; a removal cursor starts with the frame in which
//! its owner first asks, so its first read lists that frame's removals so far.

use hashbrown::HashMap;
use mlua::{
    AnyUserData, Function, Lua, MetaMethod, Table, UserData, UserDataFields, UserDataMethods,
    Value as LuaValue,
};
use strata_component_store::{ComponentId, RemovalReader, Removals};
use strata_query::{BuiltAgainst, Query, QuerySpec};

use super::access::{Access, lua_error};
use super::api::{access, handle_array, instance_array};
use super::args::component_in;
use super::columns::ColumnMirror;
use super::convert::kind;
use super::host::{state, state_mut};

/// One query a script uses, with its mirror.
pub(crate) struct QueryEntry {
    pub(crate) query: Query,
    /// The components of the `with` terms, in order, by name.
    pub(crate) terms: Vec<std::sync::Arc<str>>,
    /// The components the query was built with (ids resolved from the names then).
    resolved: Vec<ComponentId>,
    /// The Luau spec, kept to rebuild the query if a component is redefined.
    spec: SpecNames,
    pub(crate) mirror: Option<Mirror>,
    /// Column tables handed out by the column path, by component and field.
    pub(crate) columns: HashMap<(ComponentId, strata_component_store::FieldId), ColumnMirror>,
    /// The column tables the handle path reads and writes the matches' fields in (see
    /// `access::HandleLane`), by component and field: never handed to scripts.
    pub(crate) handle_columns:
        HashMap<(ComponentId, strata_component_store::FieldId), ColumnMirror>,
    /// The matches (1-based) the latest `for` loop's pass selected, when it selected some:
    /// the rows the handle path's columns must hold current values in.
    pub(crate) handle_selection: Option<Vec<u32>>,
    /// The field tables (`{x = column, ...}`) handed out, by component.
    pub(crate) column_sets: HashMap<ComponentId, Table>,
    /// The script line that last took a component's columns for writing, for the error of a
    /// value they cannot hold.
    pub(crate) write_lines: HashMap<ComponentId, u32>,
    /// The chunks of the mirror's current shape: a number drawn afresh whenever the columns
    /// handed out go stale, which every chunk made since carries.
    generation: u64,
}

/// Draws chunk generations: never the same number twice in a process, so a chunk of a
/// replaced query entry never passes for one of its successor.
fn next_generation() -> u64 {
    static GENERATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    GENERATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl QueryEntry {
    /// The generation chunks made now carry.
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// Makes every chunk handed out so far stale (see [`chunk_instances`]).
    pub(crate) fn retire_chunks(&mut self) {
        self.generation = next_generation();
    }

    /// Whether the mirror (and so every column taken from it) is of the query's current
    /// matches.
    pub(crate) fn mirror_is_current(&self) -> bool {
        self.mirror
            .as_ref()
            .is_some_and(|m| self.query.is_built_against(&m.built))
    }

    /// The component of a `with` term.
    pub(crate) fn component_of(&self, term: usize) -> Option<ComponentId> {
        self.resolved.get(term).copied()
    }

    /// The term of a `with` component.
    pub(crate) fn term_of(&self, component: ComponentId) -> Option<usize> {
        self.resolved.iter().position(|c| *c == component)
    }
}

/// The mirror of a query's matches in VM tables.
pub(crate) struct Mirror {
    /// What the query's matches were built against when the mirror was made (the store's
    /// identity among it).
    pub(crate) built: BuiltAgainst,
    /// The instance wrappers and each term's handles, by match; made when first asked for (a
    /// loop over `q:chunks()` that never reads `chunk.instances` makes none).
    wrappers: Option<Wrappers>,
}

/// A mirror's wrappers: the matches' instance wrappers, and each term's handles.
#[derive(Clone)]
pub(crate) struct Wrappers {
    pub(crate) instances: Table,
    pub(crate) handles: Vec<Table>,
}

/// A query spec as names, the form a script gives.
#[derive(Clone, Debug, Default, PartialEq)]
struct SpecNames {
    with: Vec<std::sync::Arc<str>>,
    without: Vec<std::sync::Arc<str>>,
    tags: Vec<String>,
    not_tags: Vec<String>,
    class: Option<String>,
    ancestor: Option<std::sync::Arc<str>>,
    within: Option<strata_arena::InstanceId>,
    added: Vec<std::sync::Arc<str>>,
    changed: Vec<std::sync::Arc<str>>,
}

impl SpecNames {
    fn key(&self) -> String {
        let join =
            |v: &[std::sync::Arc<str>]| v.iter().map(|s| s.as_ref()).collect::<Vec<_>>().join(",");
        format!(
            "w={};wo={};t={};nt={};c={};a={};in={};ad={};ch={}",
            join(&self.with),
            join(&self.without),
            self.tags.join(","),
            self.not_tags.join(","),
            self.class.as_deref().unwrap_or(""),
            self.ancestor.as_deref().unwrap_or(""),
            self.within.map_or(String::new(), |id| id.to_string()),
            join(&self.added),
            join(&self.changed),
        )
    }
}

/// A query object in Luau: iterate it (`for inst, a, b in q do`), or take its column path
/// (`q:chunks()`).
#[derive(Clone, Debug)]
pub(crate) struct QueryUd {
    pub(crate) key: String,
}

impl UserData for QueryUd {
    fn add_fields<F: UserDataFields<Self>>(fields: &mut F) {
        fields.add_meta_field(MetaMethod::Type, "Query");
    }

    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_meta_method(MetaMethod::Iter, |lua, this, ()| iterate(lua, &this.key));
        methods.add_method("iter", |lua, this, ()| iterate(lua, &this.key));
        methods.add_method("chunks", |lua, this, ()| {
            super::columns::chunks(lua, &this.key)
        });
        methods.add_method("count", |lua, this, ()| count(lua, &this.key));
        methods.add_meta_method(MetaMethod::Index, |_, _, key: LuaValue| {
            Err::<(), _>(super::navigate::no_member(
                "a query",
                &key,
                "a query has iter, chunks and count",
            ))
        });
        methods.add_meta_method(
            MetaMethod::NewIndex,
            |_, _, (key, _): (LuaValue, LuaValue)| {
                Err::<(), _>(super::navigate::no_member(
                    "a query",
                    &key,
                    "nothing of a query can be set",
                ))
            },
        );
    }
}

/// `q:count()`: how many instances the query matches now. The `added` and `changed` filters
/// select within a pass, so they are not applied, and counting leaves the query's change
/// window where it was.
fn count(lua: &Lua, key: &str) -> mlua::Result<usize> {
    access(lua, |lua, a| {
        let mut state = state_mut(lua)?;
        let entry = state.query_mut(key)?;
        let matches = entry
            .query
            .matches(a.arena(), a.store())
            .map_err(lua_error)?;
        Ok(matches.len())
    })
}

/// The components a spec key lists: always a list (`with = { Health }`), never one alone, as
/// the type definitions say.
fn names(table: &Table, key: &str) -> mlua::Result<Vec<std::sync::Arc<str>>> {
    let list: LuaValue = table.raw_get(key)?;
    match list {
        LuaValue::Nil => Ok(Vec::new()),
        LuaValue::Table(t) => t
            .sequence_values::<LuaValue>()
            .map(|v| {
                let v = v?;
                match &v {
                    LuaValue::UserData(ud) if ud.is::<super::args::ComponentType>() => {
                        super::args::component_name(ud)
                    }
                    LuaValue::String(s) => Err(mlua::Error::runtime(format!(
                        "`{key}` lists components, not strings: write `{0}`, not \"{0}\"",
                        s.to_string_lossy()
                    ))),
                    other => Err(mlua::Error::runtime(format!(
                        "`{key}` lists components (such as `Health`), not {}",
                        kind(other)
                    ))),
                }
            })
            .collect(),
        LuaValue::UserData(ud) if ud.is::<super::args::ComponentType>() => {
            let name = super::args::component_name(&ud)?;
            Err(mlua::Error::runtime(format!(
                "`{key}` must be a list of components: write `{key} = {{ {name} }}`, not `{key} = {name}`"
            )))
        }
        other => Err(mlua::Error::runtime(format!(
            "`{key}` must be a list of components (such as `{{ Health }}`), not {}",
            kind(&other)
        ))),
    }
}

/// The strings a spec key lists: always a list (`tags = { "red" }`).
fn strings(table: &Table, key: &str) -> mlua::Result<Vec<String>> {
    let list: LuaValue = table.raw_get(key)?;
    match list {
        LuaValue::Nil => Ok(Vec::new()),
        LuaValue::String(s) => {
            let s = s.to_string_lossy();
            Err(mlua::Error::runtime(format!(
                "`{key}` must be a list of strings: write `{key} = {{ \"{s}\" }}`, not `{key} = \"{s}\"`"
            )))
        }
        LuaValue::Table(t) => t
            .sequence_values::<LuaValue>()
            .map(|v| match v? {
                LuaValue::String(s) => Ok(s.to_str()?.to_string()),
                other => Err(mlua::Error::runtime(format!(
                    "`{key}` lists strings, not {}",
                    kind(&other)
                ))),
            })
            .collect(),
        other => Err(mlua::Error::runtime(format!(
            "`{key}` must be a list of strings, not {}",
            kind(&other)
        ))),
    }
}

const SPEC_KEYS: [&str; 9] = [
    "with",
    "without",
    "tags",
    "withoutTags",
    "class",
    "ancestor",
    "within",
    "added",
    "changed",
];

fn parse_spec(spec: &Table) -> mlua::Result<SpecNames> {
    for pair in spec.clone().pairs::<LuaValue, LuaValue>() {
        let (key, _) = pair?;
        let known = matches!(&key, LuaValue::String(s) if s.to_str().is_ok_and(|s| SPEC_KEYS.contains(&&*s)));
        if !known {
            return Err(mlua::Error::runtime(format!(
                "a query spec takes {}; unknown key {}",
                SPEC_KEYS.join(", "),
                match &key {
                    LuaValue::String(s) => format!("`{}`", s.to_string_lossy()),
                    other => kind(other).to_owned(),
                }
            )));
        }
    }
    let class = match spec.raw_get::<LuaValue>("class")? {
        LuaValue::Nil => None,
        LuaValue::String(s) => Some(s.to_str()?.to_string()),
        other => {
            return Err(mlua::Error::runtime(format!(
                "`class` must be a class name (a string), not {}",
                kind(&other)
            )));
        }
    };
    let ancestor = match spec.raw_get::<LuaValue>("ancestor")? {
        LuaValue::Nil => None,
        LuaValue::UserData(ud) if ud.is::<super::args::ComponentType>() => {
            Some(super::args::component_name(&ud)?)
        }
        other => {
            return Err(mlua::Error::runtime(format!(
                "`ancestor` must be a component, not {}",
                kind(&other)
            )));
        }
    };
    let within = super::api::optional_instance(
        &spec.raw_get::<LuaValue>("within")?,
        "`within` (the root of the subtree to match in)",
    )?;
    Ok(SpecNames {
        with: names(spec, "with")?,
        without: names(spec, "without")?,
        tags: strings(spec, "tags")?,
        not_tags: strings(spec, "withoutTags")?,
        class,
        ancestor,
        within,
        added: names(spec, "added")?,
        changed: names(spec, "changed")?,
    })
}

/// Builds the layer's query for names, in a store.
fn build(
    names: &SpecNames,
    store: &strata_component_store::Store,
    classes: &strata_arena::ClassRegistry,
    cached: bool,
) -> mlua::Result<(Query, Vec<ComponentId>)> {
    let resolve = |name: &std::sync::Arc<str>| {
        store
            .component(name)
            .ok_or_else(|| lua_error(strata::WorldError::UnknownComponent(name.to_string())))
    };
    if let Some(both) = names.with.iter().find(|n| names.without.contains(n)) {
        return Err(mlua::Error::runtime(format!(
            "the query both requires and excludes `{both}` (it is in `with` and in `without`)"
        )));
    }
    let mut spec = QuerySpec::new();
    let mut resolved = Vec::new();
    for name in &names.with {
        let c = resolve(name)?;
        resolved.push(c);
        spec = spec.with(c);
    }
    for name in &names.without {
        spec = spec.without(resolve(name)?);
    }
    for tag in &names.tags {
        spec = spec.tagged(tag);
    }
    for tag in &names.not_tags {
        spec = spec.not_tagged(tag);
    }
    if let Some(class) = &names.class {
        let Some(id) = classes.class_id(class) else {
            return Err(lua_error(strata::WorldError::UnknownClass(class.clone())));
        };
        spec = spec.class(id);
    }
    if let Some(ancestor) = &names.ancestor {
        spec = spec.ancestor(resolve(ancestor)?);
    }
    if let Some(root) = names.within {
        spec = spec.within(root);
    }
    for name in &names.added {
        spec = spec.added(resolve(name)?);
    }
    for name in &names.changed {
        spec = spec.changed(resolve(name)?);
    }
    let query = Query::with_caching(spec, cached).map_err(lua_error)?;
    Ok((query, resolved))
}

/// `world:query(spec)`.
pub(crate) fn new_query(lua: &Lua, spec: &Table) -> mlua::Result<AnyUserData> {
    let names = parse_spec(spec)?;
    let key = {
        let state = state(lua)?;
        format!("{}|{}", state.owner, names.key())
    };
    access(lua, |lua, a| {
        let mut state = state_mut(lua)?;
        let stale = match state.queries.get(&key) {
            Some(entry) => {
                let now: Vec<Option<ComponentId>> = entry
                    .spec
                    .with
                    .iter()
                    .map(|n| a.store().component(n))
                    .collect();
                now != entry.resolved.iter().copied().map(Some).collect::<Vec<_>>()
            }
            None => true,
        };
        if stale {
            let cached = state.queries_cached;
            let (query, resolved) = build(&names, a.store(), a.arena().classes(), cached)?;
            if let Some(old) = state.queries.remove(&key) {
                super::columns::retire(lua, old)?;
            }
            state.queries.insert(
                key.clone(),
                QueryEntry {
                    query,
                    terms: names.with.clone(),
                    resolved,
                    spec: names,
                    mirror: None,
                    columns: HashMap::new(),
                    handle_columns: HashMap::new(),
                    handle_selection: None,
                    column_sets: HashMap::new(),
                    write_lines: HashMap::new(),
                    generation: next_generation(),
                },
            );
        }
        Ok(())
    })?;
    lua.create_userdata(QueryUd { key })
}

/// What a pass gives the Luau side: the mirror's wrappers (when asked for), the number of
/// matches, and the selected matches (1-based) when the pass selects some.
pub(crate) type PassTables = (Option<Wrappers>, usize, Option<Vec<u32>>);

/// Runs a pass of a query and brings its mirror up to date, making its wrappers if `wrappers`
/// asks for them.
pub(crate) fn pass_and_mirror(lua: &Lua, key: &str, wrappers: bool) -> mlua::Result<PassTables> {
    access(lua, |lua, mut a| {
        let mut state = state_mut(lua)?;
        let entry = state.query_mut(key)?;
        for c in entry.query.spec().required() {
            a.check_read(*c)?;
        }
        let (selection, len, stale) = {
            let (arena, store) = (a.arena(), a.store());
            let pass = entry.query.run(arena, store).map_err(lua_error)?;
            let selection = pass
                .selection()
                .map(|s| s.iter().map(|k| k + 1).collect::<Vec<u32>>());
            let len = pass.matches().len();
            (selection, len, !entry.mirror_is_current())
        };
        a.count_rows(selection.as_ref().map_or(len, Vec::len) as u64);
        if stale {
            super::columns::invalidate_entry(lua, entry)?;
            let built = entry
                .query
                .built_against()
                .ok_or_else(|| mlua::Error::runtime("a query without matches"))?;
            entry.mirror = Some(Mirror {
                built,
                wrappers: None,
            });
        }
        let made = if wrappers {
            Some(mirror_wrappers(lua, &a, entry)?)
        } else {
            None
        };
        Ok((made, len, selection))
    })
}

/// The wrappers of a query's current mirror, made now if they were not yet.
fn mirror_wrappers(lua: &Lua, a: &Access<'_>, entry: &mut QueryEntry) -> mlua::Result<Wrappers> {
    let Some(mirror) = entry.mirror.as_ref() else {
        return Err(mlua::Error::runtime("no mirror"));
    };
    if let Some(wrappers) = &mirror.wrappers {
        return Ok(wrappers.clone());
    }
    let matches = entry
        .query
        .matches(a.arena(), a.store())
        .map_err(lua_error)?;
    let instances = instance_array(lua, matches.ids())?;
    let mut handles = Vec::with_capacity(entry.terms.len());
    for (term, name) in entry.terms.iter().enumerate() {
        handles.push(handle_array(
            lua,
            matches.ids(),
            entry.resolved[term],
            name,
        )?);
    }
    let wrappers = Wrappers { instances, handles };
    if let Some(mirror) = entry.mirror.as_mut() {
        mirror.wrappers = Some(wrappers.clone());
    }
    Ok(wrappers)
}

/// `chunk.instances`: the instance wrappers of the chunk's query, by match, made on first use.
/// A chunk is as stale as its columns after a structural change: `generation` is the one the
/// chunk was made in.
pub(crate) fn chunk_instances(lua: &Lua, key: &str, generation: u64) -> mlua::Result<Table> {
    access(lua, |lua, a| {
        let mut state = state_mut(lua)?;
        let entry = state.query_mut(key)?;
        if !entry.mirror_is_current() || entry.generation != generation {
            return Err(super::columns::stale());
        }
        Ok(mirror_wrappers(lua, &a, entry)?.instances)
    })
}

/// The iterator of a query (its `__iter`).
fn iterate(lua: &Lua, key: &str) -> mlua::Result<Function> {
    let (wrappers, len, selection) = pass_and_mirror(lua, key, true)?;
    let Some(Wrappers { instances, handles }) = wrappers else {
        return Err(mlua::Error::runtime("no mirror"));
    };
    state_mut(lua)?.query_mut(key)?.handle_selection = selection.clone();
    let helpers = super::host::helpers(lua)?;
    let make: Function = helpers.raw_get("iter")?;
    let selection = match selection {
        // Unpacked by a Luau loop from a buffer: a table filled from Rust takes a protected
        // call per entry.
        Some(selected) => {
            let values: Vec<f64> = selected.iter().map(|k| f64::from(*k)).collect();
            let bytes = super::columns::bytes_of(&values);
            let unpack: Function = helpers.raw_get("unpack")?;
            LuaValue::Table(unpack.call((lua.create_buffer(bytes)?, values.len(), 0))?)
        }
        None => LuaValue::Nil,
    };
    let h = |k: usize| {
        handles
            .get(k)
            .cloned()
            .map_or(LuaValue::Nil, LuaValue::Table)
    };
    let all = lua.create_sequence_from(handles.iter().cloned())?;
    // The pass the loop runs, for the handle path's fast lane: the current match, the terms'
    // handles and the columns taken so far.
    let cur = lua.create_table_with_capacity(0, 9)?;
    cur.raw_set("key", key)?;
    cur.raw_set("i", 0)?;
    cur.raw_set("nt", handles.len())?;
    cur.raw_set("hs", &all)?;
    cur.raw_set("h1", h(0))?;
    match handles.get(1) {
        Some(h2) => cur.raw_set("h2", h2)?,
        None => cur.raw_set("h2", lua.create_table()?)?,
    }
    cur.raw_set("read", lua.create_table()?)?;
    cur.raw_set("write", lua.create_table()?)?;
    cur.raw_set("kinds", lua.create_table()?)?;
    if !handles.is_empty() && super::columns::handle_lane_open(lua) {
        super::access::arm_handles(lua, &cur)?;
    }
    make.call((
        handles.len(),
        len,
        instances,
        h(0),
        h(1),
        h(2),
        all,
        selection,
        cur,
    ))
}

/// `world:removed(C)`: the instances that lost `C` since this script last asked (sorted, each
/// once; at its first call, since the frame began), or `nil, "missed"` when history was
/// dropped before it asked.
pub(crate) fn removed(lua: &Lua, component: &LuaValue) -> mlua::Result<(LuaValue, LuaValue)> {
    let ids = access(lua, |lua, a| {
        let c = component_in(a.store(), component)?;
        let mut state = state_mut(lua)?;
        let key = (state.owner.clone(), c);
        let reader = match state.readers.get_mut(&key) {
            Some(reader) => reader,
            None => {
                // A new reader's history starts with the frame: a system sees the removals of
                // the frame it first asks in, those made before its first call included.
                let store = a.store();
                let reader =
                    RemovalReader::since(store, c, store.frame_tick()).map_err(lua_error)?;
                state.readers.entry(key.clone()).or_insert(reader)
            }
        };
        match reader.read(a.store()).map_err(lua_error)? {
            Removals::Ids(ids) => Ok(Some(ids)),
            Removals::Missed { .. } => Ok(None),
        }
    })?;
    match ids {
        Some(ids) => Ok((LuaValue::Table(instance_array(lua, &ids)?), LuaValue::Nil)),
        None => Ok((
            LuaValue::Nil,
            LuaValue::String(lua.create_string("missed")?),
        )),
    }
}
