//! The column path: a query's matches handed to Luau in contiguous ranges (`q:chunks()`), with
//! per-field column tables taken for reading (`chunk:read(C)`) or writing (`chunk:write(C)`).
//!
//! Invariant: a column table holds, at index `k`, the field's value for the query's `k`-th
//! match, as of the last time it was taken from a chunk (taking it refreshes exactly the rows
//! whose stored value differs from what the table was last given). Reading through `read`
//! marks nothing. The rows a script changes in a column taken with `write` are applied as
//! checked column writes (changed tick, dirty bit, change log, only where the value differs)
//! when the chunk loop moves on, before any other API call, and when the callback returns.
//! A column belongs to one shape of the query: any structural change made through the API,
//! and any rebuild of the query's matches, first applies pending writes, then empties every
//! column handed out and makes it raise an error when used, so a stale column is an error,
//! never a wrong read. A value a written column's field cannot hold is reported once, naming
//! the column, the row and where the column was taken: none of the component's pending
//! changes is applied and the query's columns go stale, as they do when a call fails with
//! writes pending, so a refused or failed write never lands later.
//!
//! The handle path's fast lane (see `access::HandleLane`) keeps columns of its own per query,
//! never handed to scripts, under the same rules but two: they are taken when a loop's handle
//! first reads or writes a component's field, and written back (then forgotten as pending) at
//! the next call that reaches the world; a failed call applies them rather than dropping
//! them, since each value was checked against its field as it was written, as a handle's
//! writes made before a failure stand.

use std::io::Read;

use mlua::{Buffer, Function, Lua, Table, Value as LuaValue};
use strata_component_store::{ComponentId, FieldId, FieldType};

use strata::WorldError;

use super::access::{
    Access, BulkKind, BulkWrite, LaneRows, clear_lane_rows, disarm_handles, lane_armed, lane_rows,
    lua_error, with_world, with_world_armed,
};
use super::args::component_in;
use super::host::{VmState, helpers, state_mut};
use super::query::{QueryEntry, pass_and_mirror};

/// The kinds of field a column can hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Number,
    Integer,
    Boolean,
}

impl Kind {
    fn of(ty: &FieldType) -> Option<Kind> {
        match ty {
            FieldType::Number => Some(Kind::Number),
            FieldType::Integer => Some(Kind::Integer),
            FieldType::Boolean => Some(Kind::Boolean),
            _ => None,
        }
    }

    /// The code the Luau helpers take.
    fn code(self) -> u8 {
        match self {
            Kind::Number | Kind::Integer => 0,
            Kind::Boolean => 1,
        }
    }

    /// The code the handle path's fast lane checks a written value against.
    fn handle_code(self) -> u8 {
        match self {
            Kind::Number => 0,
            Kind::Boolean => 1,
            Kind::Integer => 2,
        }
    }
}

/// One column table handed out, with what it was last given.
pub(crate) struct ColumnMirror {
    table: Table,
    /// The values the table was last given (integers and booleans as numbers; booleans 0/1).
    shadow: Vec<f64>,
    kind: Kind,
    /// The field's name, for messages.
    name: String,
    /// Reused for packing the table when written.
    buffer: Option<Buffer>,
    /// Reused at each write-back: the packed values read out of `buffer`, and the positions
    /// that changed (a column of 100k rows would otherwise map fresh pages for both at every
    /// write-back).
    packed: Vec<u64>,
    changed: Vec<usize>,
}

/// The values of one field at the query's match rows, as numbers.
fn gather(
    store: &strata_component_store::Store,
    component: ComponentId,
    field: FieldId,
    kind: Kind,
    rows: &[u32],
) -> mlua::Result<Vec<f64>> {
    let set = store.set(component).map_err(lua_error)?;
    Ok(match kind {
        Kind::Number => {
            let values = set.checked_values::<f64>(field).map_err(lua_error)?;
            rows.iter().map(|r| values[*r as usize]).collect()
        }
        Kind::Integer => {
            let values = set.checked_values::<i64>(field).map_err(lua_error)?;
            rows.iter().map(|r| values[*r as usize] as f64).collect()
        }
        Kind::Boolean => {
            let values = set.checked_values::<bool>(field).map_err(lua_error)?;
            rows.iter()
                .map(|r| if values[*r as usize] { 1.0 } else { 0.0 })
                .collect()
        }
    })
}

/// Brings a column table up to date with the store where they differ, reading the store's
/// column in place (no copy of it is made).
fn refresh(
    lua: &Lua,
    store: &strata_component_store::Store,
    (component, field, kind): (ComponentId, FieldId, Kind),
    rows: &[u32],
    selected: Option<&[u32]>,
    column: &mut ColumnMirror,
) -> mlua::Result<()> {
    let set = store.set(component).map_err(lua_error)?;
    match kind {
        Kind::Number => {
            let values = set.checked_values::<f64>(field).map_err(lua_error)?;
            refresh_with(lua, rows, selected, column, kind, |r| values[r])
        }
        Kind::Integer => {
            let values = set.checked_values::<i64>(field).map_err(lua_error)?;
            refresh_with(lua, rows, selected, column, kind, |r| values[r] as f64)
        }
        Kind::Boolean => {
            let values = set.checked_values::<bool>(field).map_err(lua_error)?;
            refresh_with(lua, rows, selected, column, kind, |r| {
                if values[r] { 1.0 } else { 0.0 }
            })
        }
    }
}

/// A column that changed in more than one row in this many is refilled whole by a Luau loop
/// over a buffer of its values; fewer changed rows are set one by one from Rust (each such
/// set costs a crossing into Luau, a refilled row a few native instructions).
const REFILL_ABOVE: usize = 16;

/// With `selected` (the 1-based matches of a pass that selects some), only those rows are
/// compared: the others are not read before the next refresh (see `take_for_handles`).
fn refresh_with(
    lua: &Lua,
    rows: &[u32],
    selected: Option<&[u32]>,
    column: &mut ColumnMirror,
    kind: Kind,
    value: impl Fn(usize) -> f64,
) -> mlua::Result<()> {
    let differs = |k: usize| value(rows[k] as usize).to_bits() != column.shadow[k].to_bits();
    let changed: Vec<usize> = match selected {
        Some(selected) => selected
            .iter()
            .map(|k| *k as usize - 1)
            .filter(|&k| k < rows.len() && differs(k))
            .collect(),
        // One pass over rows and shadow together (no bounds check per row), without a
        // branch per row: most refreshes find nothing changed. Only then the changed rows.
        None => {
            let differ = |(row, was): (&u32, &f64)| value(*row as usize).to_bits() != was.to_bits();
            let any = rows
                .iter()
                .zip(&column.shadow)
                .fold(false, |any, pair| any | differ(pair));
            if any {
                rows.iter()
                    .zip(&column.shadow)
                    .enumerate()
                    .filter(|(_, pair)| differ(*pair))
                    .map(|(k, _)| k)
                    .collect()
            } else {
                Vec::new()
            }
        }
    };
    if changed.len() > 1 && changed.len() * REFILL_ABOVE > rows.len() {
        // The shadow takes the new values only once the table holds them all, so a refill that
        // fails part way (out of memory or budget) is redone by the next refresh.
        let now: Vec<f64> = rows.iter().map(|row| value(*row as usize)).collect();
        let buffer = lua.create_buffer(bytes_of(&now))?;
        let refill: Function = helpers(lua)?.raw_get("refill")?;
        refill.call::<()>((column.table.clone(), buffer, now.len(), kind.code()))?;
        column.shadow = now;
        return Ok(());
    }
    if changed.len() > SCATTER_ABOVE {
        // One Luau loop over (row, value) pairs in a buffer: each row set from Rust is a
        // protected call of its own.
        let pairs: Vec<f64> = changed
            .iter()
            .flat_map(|&k| [(k + 1) as f64, value(rows[k] as usize)])
            .collect();
        let buffer = lua.create_buffer(bytes_of(&pairs))?;
        let scatter: Function = helpers(lua)?.raw_get("scatter")?;
        scatter.call::<()>((column.table.clone(), buffer, changed.len(), kind.code()))?;
        for (j, &k) in changed.iter().enumerate() {
            column.shadow[k] = pairs[2 * j + 1];
        }
        return Ok(());
    }
    for k in changed {
        let now = value(rows[k] as usize);
        column.table.raw_set(k + 1, number_to_lua(kind, now))?;
        column.shadow[k] = now;
    }
    Ok(())
}

/// More changed rows than this (but too few for a refill) are set by the helpers' `scatter`,
/// fewer one by one from Rust.
const SCATTER_ABOVE: usize = 4;

fn number_to_lua(kind: Kind, value: f64) -> LuaValue {
    match kind {
        Kind::Boolean => LuaValue::Boolean(value != 0.0),
        _ => LuaValue::Number(value),
    }
}

/// Values as little-endian f64 bytes, the layout the helpers read from a buffer.
pub(crate) fn bytes_of(values: &[f64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// `q:chunks()`: runs a pass and returns an iterator over its contiguous ranges of selected
/// matches, each a chunk table `{ first, last, count }` with `read` and `write`, and
/// `instances` made when first read (see `query::chunk_instances`).
pub(crate) fn chunks(lua: &Lua, key: &str) -> mlua::Result<Function> {
    let (_, len, selection) = pass_and_mirror(lua, key, false)?;
    let generation = state_mut(lua)?.query_mut(key)?.generation();
    let mut ranges: Vec<(u32, u32)> = Vec::new();
    match selection {
        None if len > 0 => ranges.push((1, len as u32)),
        None => {}
        Some(selected) => {
            for k in selected {
                match ranges.last_mut() {
                    Some((_, last)) if *last + 1 == k => *last = k,
                    _ => ranges.push((k, k)),
                }
            }
        }
    }
    let helpers = helpers(lua)?;
    let meta: Table = helpers.raw_get("chunk_meta")?;
    let list = lua.create_table_with_capacity(ranges.len(), 0)?;
    for (k, (first, last)) in ranges.into_iter().enumerate() {
        let chunk = lua.create_table_with_capacity(0, 5)?;
        chunk.raw_set("first", first)?;
        chunk.raw_set("last", last)?;
        chunk.raw_set("count", last - first + 1)?;
        chunk.raw_set("query", key)?;
        chunk.raw_set("generation", generation)?;
        chunk.set_metatable(Some(meta.clone()))?;
        list.raw_set(k + 1, chunk)?;
    }
    let make: Function = helpers.raw_get("chunks")?;
    make.call(list)
}

/// `chunk:read(C)` / `chunk:write(C)`: the field columns of `C` for the chunk's query, as a
/// table `{ field = column }` of its number, integer and boolean fields.
pub(crate) fn take(
    lua: &Lua,
    chunk: &Table,
    component: &LuaValue,
    write: bool,
) -> mlua::Result<Table> {
    let key: String = chunk.raw_get("query")?;
    let c = with_world_armed(lua, |_, a| component_in(a.store(), component))?;
    flush_for_columns_of(lua, c)?;
    with_world(lua, |lua, a| {
        let helpers = helpers(lua)?;
        let mut state = state_mut(lua)?;
        let VmState {
            queries, pending, ..
        } = &mut *state;
        let Some(entry) = queries.get_mut(&key) else {
            return Err(mlua::Error::runtime("the chunk's query is no longer known"));
        };
        let store = a.store();
        a.check_read(c)?;
        let Some(term) = entry.term_of(c) else {
            return Err(mlua::Error::runtime(
                "a chunk gives columns only of the components its query lists in `with`",
            ));
        };
        if !entry.mirror_is_current() {
            return Err(stale());
        }
        let matches = entry.query.matches(a.arena(), store).map_err(lua_error)?;
        let rows = matches.rows(term).map_err(lua_error)?;
        let def = store.def(c).map_err(lua_error)?;
        let fields = column_fields(def);
        let fresh = bring_up_to_date(
            lua,
            &helpers,
            &mut entry.columns,
            store,
            c,
            (rows, None),
            &fields,
        )?;
        let set = column_set(lua, entry, c, def.name(), &fields, fresh)?;
        if write {
            if let Some(line) = super::errors::caller_line(lua) {
                entry.write_lines.insert(c, line);
            }
            if !pending.iter().any(|(k, pc)| *k == key && *pc == c) {
                pending.push((key.clone(), c));
            }
        }
        Ok(set)
    })
}

/// The fields of a component a column can hold: id, name and kind.
fn column_fields(def: &strata_component_store::InstalledDef) -> Vec<(FieldId, String, Kind)> {
    def.fields()
        .iter()
        .enumerate()
        .filter_map(|(k, f)| {
            Some((
                FieldId::from_index(k as u16),
                f.name.to_string(),
                Kind::of(&f.ty)?,
            ))
        })
        .collect()
}

/// Whether a loop's handles may use the handle path's fast lane: not while columns taken with
/// `chunk:write` are pending, since a script may still change those tables, and a handle must
/// read what the API would (the world with those changes applied).
pub(crate) fn handle_lane_open(lua: &Lua) -> bool {
    lua.app_data_ref::<VmState>()
        .is_some_and(|state| state.pending.is_empty())
}

/// The helpers' `take(cur, term, write, fresh)` of the handle path's fast lane: the columns of
/// the pass `cur`'s `term` (1-based), a table `{ field = column }` of its number, integer and
/// boolean fields, brought up to date with the world unless `fresh` says the lane took them
/// in this pass already; their kinds go to `cur.kinds[term]` (0 number, 1 boolean, 2
/// integer). With `write`, their changes are applied at the next write-back. `false` when the
/// pass's handles cannot use columns (the query is gone or was rebuilt, or a parallel call may
/// not read the component): they then resolve their instances in the world. Taken for
/// writing, the table holds only the fields the call may write (a parallel system's declared
/// ones), so a write to another goes to the world and its error.
pub(crate) fn take_for_handles(
    lua: &Lua,
    (cur, term, write, fresh): (Table, usize, bool, bool),
) -> mlua::Result<LuaValue> {
    let key: String = cur.raw_get("key")?;
    let taken = with_world_armed(lua, |lua, a| {
        let helpers = helpers(lua)?;
        let mut state = state_mut(lua)?;
        let VmState {
            queries,
            handle_pending,
            ..
        } = &mut *state;
        let Some(entry) = queries.get_mut(&key) else {
            return Ok(None);
        };
        let Some(c) = term.checked_sub(1).and_then(|t| entry.component_of(t)) else {
            return Ok(None);
        };
        if !entry.mirror_is_current() {
            return Ok(None);
        }
        if a.check_read(c).is_err() {
            return Ok(None);
        }
        let store = a.store();
        let def = store.def(c).map_err(lua_error)?;
        let fields = column_fields(def);
        let have = fields
            .iter()
            .all(|(f, _, _)| entry.handle_columns.contains_key(&(c, *f)));
        if !(fresh && have) {
            let matches = entry.query.matches(a.arena(), store).map_err(lua_error)?;
            let rows = matches.rows(term - 1).map_err(lua_error)?;
            // A pass that selects matches hands out only those: the other rows of the lane's
            // columns are not read before the next pass brings them up to date.
            let selected = entry.handle_selection.as_deref();
            bring_up_to_date(
                lua,
                &helpers,
                &mut entry.handle_columns,
                store,
                c,
                (rows, selected),
                &fields,
            )?;
        }
        let set = lua.create_table_with_capacity(0, fields.len())?;
        let kinds = lua.create_table_with_capacity(0, fields.len())?;
        for (field, name, kind) in &fields {
            if let Some(column) = entry.handle_columns.get(&(c, *field))
                && (!write || a.may_write(c, *field))
            {
                set.raw_set(name.as_str(), column.table.clone())?;
                kinds.raw_set(name.as_str(), kind.handle_code())?;
            }
        }
        if write && !handle_pending.iter().any(|(k, pc)| *k == key && *pc == c) {
            handle_pending.push((key.clone(), c));
        }
        Ok(Some((set, kinds)))
    })?;
    match taken {
        Some((set, kinds)) => {
            cur.raw_get::<Table>("kinds")?.raw_set(term, kinds)?;
            Ok(LuaValue::Table(set))
        }
        None => Ok(LuaValue::Boolean(false)),
    }
}

/// Brings a query's column tables of `c`'s fields up to date with the store, making the
/// missing ones; returns whether any was made.
fn bring_up_to_date(
    lua: &Lua,
    helpers: &Table,
    columns: &mut hashbrown::HashMap<(ComponentId, FieldId), ColumnMirror>,
    store: &strata_component_store::Store,
    c: ComponentId,
    (rows, selected): (&[u32], Option<&[u32]>),
    fields: &[(FieldId, String, Kind)],
) -> mlua::Result<bool> {
    let mut fresh = false;
    for (field, name, kind) in fields {
        match columns.get_mut(&(c, *field)) {
            Some(column) => refresh(lua, store, (c, *field, *kind), rows, selected, column)?,
            None => {
                let values = gather(store, c, *field, *kind, rows)?;
                let unpack: Function = helpers.raw_get("unpack")?;
                let buffer = lua.create_buffer(bytes_of(&values))?;
                let table: Table = unpack.call((buffer, values.len(), kind.code()))?;
                columns.insert(
                    (c, *field),
                    ColumnMirror {
                        table,
                        shadow: values,
                        kind: *kind,
                        name: name.clone(),
                        buffer: None,
                        packed: Vec::new(),
                        changed: Vec::new(),
                    },
                );
                fresh = true;
            }
        }
    }
    Ok(fresh)
}

/// The table `{ field = column }` of `c` (named `component`) a chunk hands out: the one made
/// before unless a column was made since; a name that is not a column is an error there, not
/// a nil read.
fn column_set(
    lua: &Lua,
    entry: &mut QueryEntry,
    c: ComponentId,
    component: &str,
    fields: &[(FieldId, String, Kind)],
    fresh: bool,
) -> mlua::Result<Table> {
    if let Some(set) = entry.column_sets.get(&c)
        && !fresh
    {
        return Ok(set.clone());
    }
    let set = lua.create_table_with_capacity(0, fields.len())?;
    for (field, name, _) in fields {
        if let Some(column) = entry.columns.get(&(c, *field)) {
            set.raw_set(name.as_str(), column.table.clone())?;
        }
    }
    let component = component.to_owned();
    let columns: Vec<String> = fields.iter().map(|(_, n, _)| n.clone()).collect();
    let meta = lua.create_table()?;
    let missing = lua.create_function(move |_, (_, key): (LuaValue, LuaValue)| {
        let key = match &key {
            LuaValue::String(s) => format!("`{}`", s.to_string_lossy()),
            other => super::convert::kind(other).to_owned(),
        };
        Err::<(), _>(mlua::Error::runtime(format!(
            "`{component}` has no column {key}: columns hold its number, integer and boolean fields ({})",
            if columns.is_empty() { "it has none".to_owned() } else { columns.join(", ") }
        )))
    })?;
    meta.raw_set("__index", missing)?;
    set.set_metatable(Some(meta))?;
    entry.column_sets.insert(c, set.clone());
    Ok(set)
}

pub(crate) fn stale() -> mlua::Error {
    mlua::Error::runtime(
        "the chunk is stale: the query's matches changed since it was made (a structural change); start the chunk loop again",
    )
}

/// Writes the `changed` matches of a column (`values` holds every match's) into their rows
/// of the scene, checked, with change tracking; counts the writes for the running system.
fn write_rows(
    scene: &mut strata::Scene,
    c: ComponentId,
    field: FieldId,
    kind: Kind,
    rows: &[u32],
    changed: &[usize],
    values: &Packed,
) -> mlua::Result<()> {
    let n = changed.len();
    let row_of = |j: usize| (rows[changed[j]] as usize, j);
    let written = match kind {
        Kind::Number => scene.column_writer::<f64>(c, field).and_then(|mut w| {
            w.update_indexed(n, row_of, |_, j| values.get(changed[j]))
                .map_err(WorldError::from)
        }),
        Kind::Integer => scene.column_writer::<i64>(c, field).and_then(|mut w| {
            w.update_indexed(n, row_of, |_, j| values.get(changed[j]) as i64)
                .map_err(WorldError::from)
        }),
        Kind::Boolean => scene.column_writer::<bool>(c, field).and_then(|mut w| {
            w.update_indexed(n, row_of, |_, j| values.get(changed[j]) != 0.0)
                .map_err(WorldError::from)
        }),
    }
    .map_err(lua_error)?;
    scene.count_writes(written as u64);
    Ok(())
}

/// The end of a callback that `called` returned from: when it succeeded, applies the rows
/// scripts changed in columns taken for writing and forgets them; when it (or that write-back)
/// failed, drops the column path's (see [`drop_pending`]) and applies the handle path's,
/// which hold only values checked as they were written, as a handle's writes before a
/// failure stand (see [`apply_handles_after_failure`]).
pub(crate) fn finish<R>(lua: &Lua, called: mlua::Result<R>) -> mlua::Result<R> {
    let result = called.and_then(|r| {
        flush(lua)?;
        if let Some(mut state) = lua.app_data_mut::<VmState>() {
            state.pending.clear();
        }
        Ok(r)
    });
    if result.is_err() {
        apply_handles_after_failure(lua);
        drop_pending(lua);
    }
    let _ = disarm_handles(lua);
    result
}

/// Which write-back a written column belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lane {
    /// Columns a script took with `chunk:write`: pending until the callback ends.
    Chunks,
    /// The handle path's columns: pending until the next write-back.
    Handles,
}

impl Lane {
    fn columns(
        self,
        entry: &mut QueryEntry,
    ) -> &mut hashbrown::HashMap<(ComponentId, FieldId), ColumnMirror> {
        match self {
            Lane::Chunks => &mut entry.columns,
            Lane::Handles => &mut entry.handle_columns,
        }
    }
}

/// Applies the rows scripts changed in columns taken for writing, before a call that may
/// change the world (after which the handle lane is disarmed, so its columns stop being
/// pending).
pub(crate) fn flush(lua: &Lua) -> mlua::Result<()> {
    flush_with(lua, false, None)
}

/// [`flush`] before a call that only reads the world: the armed handle lane stays armed, and
/// its columns stay pending for the loop's later writes.
pub(crate) fn flush_keeping_lane(lua: &Lua) -> mlua::Result<()> {
    flush_with(lua, true, None)
}

/// [`flush`] before taking columns of `c`, which read nothing but `c`'s values: the columns
/// taken for writing from other components stay pending (unpacked) until a call that may
/// read them.
fn flush_for_columns_of(lua: &Lua, c: ComponentId) -> mlua::Result<()> {
    flush_with(lua, false, Some(c))
}

/// The one write-back path: the chunk lane's pending columns (of `only` when given), then the
/// handle lane's.
fn flush_with(lua: &Lua, keep_lane: bool, only: Option<ComponentId>) -> mlua::Result<()> {
    // Nothing pending on either lane and the handle lane unarmed: nothing to write back.
    if lua
        .app_data_ref::<VmState>()
        .is_none_or(|state| state.pending.is_empty() && state.handle_pending.is_empty())
        && !lane_armed(lua)
    {
        return Ok(());
    }
    // The written columns stay pending until the callback ends (a script may write a column
    // it took earlier); each flush writes only what changed since the one before.
    let pending = match lua.app_data_ref::<VmState>() {
        Some(state) if !state.pending.is_empty() => state
            .pending
            .iter()
            .filter(|(_, pc)| only.is_none_or(|c| c == *pc))
            .cloned()
            .collect(),
        _ => Vec::new(),
    };
    flush_lane(lua, Lane::Chunks, pending, Pack::Luau, None)?;
    // The handle lane writes its columns only while it is armed; an armed lane knows the rows
    // its loop wrote since the last write-back.
    // What is pending and which rows stay as they are until the write-back succeeded, so a
    // write-back that fails (out of memory, say) is done again by the next one.
    let pending = match lua.app_data_ref::<VmState>() {
        Some(state) => state.handle_pending.clone(),
        None => Vec::new(),
    };
    match lane_rows(lua)? {
        // The lane was armed with nothing pending (its pass's call applied everything), and
        // its loop wrote nothing since the last write-back.
        LaneRows::Clean => {}
        LaneRows::Range(lo, hi) => {
            flush_lane(lua, Lane::Handles, pending, Pack::Luau, Some((lo, hi)))?;
            clear_lane_rows(lua)?;
        }
        LaneRows::Unknown => flush_lane(lua, Lane::Handles, pending, Pack::Luau, None)?,
    }
    // Past a call that may change the world the lane is disarmed: its columns stop being
    // pending. An armed lane kept for a reading call keeps them for the loop's later writes.
    if !(keep_lane && lane_armed(lua))
        && let Some(mut state) = lua.app_data_mut::<VmState>()
    {
        state.handle_pending.clear();
    }
    Ok(())
}

/// A failed call's handle path writes, applied: each was checked against its field as it was
/// made, so they stand as they would had each gone to the world at once. The columns are read
/// from Rust, since the failure may be a spent budget that refuses Luau code.
fn apply_handles_after_failure(lua: &Lua) {
    let pending = match lua.app_data_mut::<VmState>() {
        Some(mut state) => std::mem::take(&mut state.handle_pending),
        None => return,
    };
    let rows = match lane_rows(lua) {
        Ok(LaneRows::Range(lo, hi)) => Some((lo, hi)),
        _ => None,
    };
    if flush_lane(lua, Lane::Handles, pending.clone(), Pack::Rust, rows).is_err() {
        // What could not be applied is forgotten, never applied later: the columns go.
        if let Some(mut state) = lua.app_data_mut::<VmState>() {
            for (key, _) in pending {
                if let Some(entry) = state.queries.get_mut(&key) {
                    entry.handle_columns.clear();
                }
            }
        }
    }
}

/// How a write-back reads a column table: through the helpers' Luau `pack`, or from Rust one
/// row at a time (slower, but it runs no Luau code).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pack {
    Luau,
    Rust,
}

/// Applies the rows changed in the `pending` columns of `lane`: of rows `rows` (1-based,
/// inclusive) when given, the only ones written since the last write-back, or of every row.
fn flush_lane(
    lua: &Lua,
    lane: Lane,
    pending: Vec<(String, ComponentId)>,
    how: Pack,
    rows: Option<(usize, usize)>,
) -> mlua::Result<()> {
    if pending.is_empty() {
        return Ok(());
    }
    let helpers = helpers(lua)?;
    let pack: Function = helpers.raw_get("pack")?;
    for (key, c) in pending {
        // Pack each written column into its buffer (Luau code, outside any borrow).
        let mut columns: Vec<Written> = {
            let mut state = state_mut(lua)?;
            let Some(entry) = state.queries.get_mut(&key) else {
                continue;
            };
            lane.columns(entry)
                .iter_mut()
                .filter(|((cc, _), _)| *cc == c)
                .map(|((_, field), col)| Written {
                    field: *field,
                    table: col.table.clone(),
                    kind: col.kind,
                    name: col.name.clone(),
                    len: col.shadow.len(),
                    buffer: col.buffer.clone(),
                    words: std::mem::take(&mut col.packed),
                })
                .collect()
        };
        // In field order: each column's writes take their own tick, so the order is part of
        // the result (and a hash map's order differs from run to run).
        columns.sort_by_key(|c| c.field);
        let mut packed = Vec::with_capacity(columns.len());
        for Written {
            field,
            table,
            kind,
            name,
            len,
            buffer,
            mut words,
        } in columns
        {
            // Rows `first..=last` (1-based) are packed; none when the range is past the end.
            let (first, last) = rows.map_or((1, len), |(lo, hi)| (lo.max(1), hi.min(len)));
            let count = (last + 1).saturating_sub(first);
            let (bad, buffer) = match how {
                Pack::Luau => {
                    let buffer = match buffer {
                        Some(b) if b.len() == count * 8 => b,
                        _ => lua.create_buffer_with_capacity(count * 8)?,
                    };
                    let bad: Option<usize> = if count == 0 {
                        None
                    } else {
                        pack.call((table.clone(), last, buffer.clone(), kind.code(), first))?
                    };
                    // The words kept from the last write-back are overwritten, not cleared and
                    // zero-filled again (mlua's buffer lends no slice to copy from).
                    words.resize(count, 0);
                    buffer
                        .clone()
                        .cursor()
                        .read_exact(bytemuck::cast_slice_mut(&mut words))
                        .map_err(mlua::Error::external)?;
                    for word in &mut words {
                        *word = u64::from_le(*word);
                    }
                    (bad, Some(buffer))
                }
                Pack::Rust => {
                    words.clear();
                    (
                        read_column(&table, (first, last), kind, &mut words)?,
                        buffer,
                    )
                }
            };
            let values = Packed {
                words,
                first: first - 1,
            };
            let bad = bad.or_else(|| {
                (kind == Kind::Integer)
                    .then(|| values.rows().find(|&k| !is_integer(values.get(k))))
                    .flatten()
                    .map(|k| k + 1)
            });
            if let Some(row) = bad {
                let given: LuaValue = table.raw_get(row)?;
                return Err(refuse_column(lua, &key, c, &name, row, &given, kind));
            }
            packed.push((field, kind, values, buffer));
        }
        // The writes are the columns' own: the handle lane's columns stay as current as they
        // were, so applying them leaves the lane armed.
        with_world_armed(lua, |lua, a| apply(lua, a, lane, &key, c, packed))?;
    }
    Ok(())
}

/// Reads rows `first..=last` (1-based) of a column table into `words` as [`Packed`] values
/// from Rust; the first row holding a value its kind does not, if any.
fn read_column(
    table: &Table,
    (first, last): (usize, usize),
    kind: Kind,
    words: &mut Vec<u64>,
) -> mlua::Result<Option<usize>> {
    words.reserve((last + 1).saturating_sub(first));
    for row in first..=last {
        let value = match (table.raw_get::<LuaValue>(row)?, kind) {
            (LuaValue::Boolean(b), Kind::Boolean) => {
                if b {
                    1.0
                } else {
                    0.0
                }
            }
            (LuaValue::Number(n), Kind::Number | Kind::Integer) => n,
            (LuaValue::Integer(n), Kind::Number | Kind::Integer) => n as f64,
            _ => return Ok(Some(row)),
        };
        words.push(value.to_bits());
    }
    Ok(None)
}

/// A column taken for writing, as the write-back packs it: its field, table, kind and name,
/// its length, the buffer it is packed into and the words reused for reading that buffer.
struct Written {
    field: FieldId,
    table: Table,
    kind: Kind,
    name: String,
    len: usize,
    buffer: Option<Buffer>,
    words: Vec<u64>,
}

/// Whether a column value is one an integer field holds.
fn is_integer(value: f64) -> bool {
    value.fract() == 0.0 && value.abs() <= 9_007_199_254_740_992.0
}

/// A column taken for writing holds a value its field cannot: the error naming the column,
/// the row, what it holds and where the column was taken. The query's changes to the
/// component since the last write-back are dropped with it (none is applied), and every
/// column of the query goes stale, so the value is reported once and never written later.
fn refuse_column(
    lua: &Lua,
    key: &str,
    c: ComponentId,
    field: &str,
    row: usize,
    given: &LuaValue,
    kind: Kind,
) -> mlua::Error {
    let wanted = match kind {
        Kind::Number => "a number",
        Kind::Integer => "an integer",
        Kind::Boolean => "true or false",
    };
    let holds = match given {
        LuaValue::Number(n) => format!("{n}"),
        other => super::convert::kind(other).to_owned(),
    };
    let Some(mut state) = lua.app_data_mut::<VmState>() else {
        return mlua::Error::runtime("no script state");
    };
    state.pending.retain(|(k, pc)| !(k == key && *pc == c));
    let Some(entry) = state.queries.get_mut(key) else {
        return mlua::Error::runtime(format!(
            "column `{field}` holds {holds} at row {row}, not {wanted}"
        ));
    };
    let component = entry
        .term_of(c)
        .and_then(|term| entry.terms.get(term))
        .map_or_else(|| "?".to_owned(), |name| name.to_string());
    let taken = entry.write_lines.get(&c).map_or_else(String::new, |line| {
        format!(" (taken with `chunk:write` at line {line})")
    });
    let message = format!(
        "column `{component}.{field}`{taken} holds {holds} at row {row}, not {wanted}: the writes to `{component}` since the last write-back are dropped, and the query's columns must be taken again"
    );
    match invalidate_entry(lua, entry) {
        Ok(()) => mlua::Error::runtime(message),
        Err(e) => e,
    }
}

/// Rows of a column packed as the bits of their `f64` values, from row `first` (0-based): row
/// `k`'s value is word `k - first`.
struct Packed {
    words: Vec<u64>,
    first: usize,
}

impl Packed {
    #[inline]
    fn get(&self, k: usize) -> f64 {
        f64::from_bits(self.words[k - self.first])
    }

    /// The rows packed (0-based).
    fn rows(&self) -> std::ops::Range<usize> {
        self.first..self.first + self.words.len()
    }

    /// Every packed value, in row order.
    fn values(&self) -> impl Iterator<Item = f64> + '_ {
        self.words.iter().map(|&bits| f64::from_bits(bits))
    }

    /// How many packed rows [`Packed::differing_from`] gives.
    fn differing_count(&self, shadow: &[f64]) -> usize {
        let was = shadow.get(self.first..).unwrap_or(&[]);
        self.words
            .iter()
            .zip(was)
            .filter(|(now, was)| **now != was.to_bits())
            .count()
    }

    /// The packed rows whose value differs, bit for bit, from `shadow`'s (rows past its end
    /// are none): one pass over both, a word against a shadow value at a time.
    fn differing_from<'a>(&'a self, shadow: &'a [f64]) -> impl Iterator<Item = usize> + 'a {
        let was = shadow.get(self.first..).unwrap_or(&[]);
        self.words
            .iter()
            .zip(was)
            .enumerate()
            .filter(|(_, (now, was))| **now != was.to_bits())
            .map(|(j, _)| self.first + j)
    }
}

/// Writes the rows that differ from what each column was last given.
fn apply(
    lua: &Lua,
    mut a: Access<'_>,
    lane: Lane,
    key: &str,
    c: ComponentId,
    packed: Vec<(FieldId, Kind, Packed, Option<Buffer>)>,
) -> mlua::Result<()> {
    let mut state = state_mut(lua)?;
    let Some(entry) = state.queries.get_mut(key) else {
        return Ok(());
    };
    let Some(term) = entry.term_of(c) else {
        return Ok(());
    };
    if !entry.mirror_is_current() {
        return Err(stale());
    }
    let QueryEntry {
        query,
        columns,
        handle_columns,
        ..
    } = entry;
    let matches = query.matches(a.arena(), a.store()).map_err(lua_error)?;
    let columns = match lane {
        Lane::Chunks => columns,
        Lane::Handles => handle_columns,
    };
    let rows = matches.rows(term).map_err(lua_error)?;
    for (field, kind, values, buffer) in packed {
        let Some(column) = columns.get_mut(&(c, field)) else {
            continue;
        };
        if buffer.is_some() {
            column.buffer = buffer;
        }
        let mut changed = std::mem::take(&mut column.changed);
        changed.clear();
        // Counted first without a branch per row: when every packed row changed (a pass that
        // moves every entity), the list of them is the packed range itself.
        let differing = values.differing_count(&column.shadow);
        if differing == values.rows().len() {
            changed.extend(values.rows());
        } else if differing > 0 {
            changed.extend(values.differing_from(&column.shadow));
        }
        if !changed.is_empty() {
            match &mut a {
                Access::Serial(scene) => {
                    write_rows(scene, c, field, kind, rows, &changed, &values)?;
                }
                Access::Parallel(view) => {
                    let (mut changed_rows, mut changed_values) = view.par.bulk_buffers();
                    match rows.get(values.rows()) {
                        // Every packed row changed (a pass that moves every entity): the rows
                        // and values go over whole.
                        Some(all) if changed.len() == all.len() => {
                            changed_rows.extend_from_slice(all);
                            changed_values.extend(values.values());
                        }
                        _ => {
                            changed_rows.extend(changed.iter().map(|&k| rows[k]));
                            changed_values.extend(changed.iter().map(|&k| values.get(k)));
                        }
                    }
                    view.par.write_column(
                        view.store,
                        BulkWrite {
                            component: c,
                            field,
                            kind: match kind {
                                Kind::Number => BulkKind::Number,
                                Kind::Integer => BulkKind::Integer,
                                Kind::Boolean => BulkKind::Boolean,
                            },
                            rows: changed_rows,
                            values: changed_values,
                        },
                    )?;
                }
            }
            match column.shadow.get_mut(values.rows()) {
                Some(shadow) if changed.len() == shadow.len() => {
                    for (was, now) in shadow.iter_mut().zip(values.values()) {
                        *was = now;
                    }
                }
                _ => {
                    for &k in &changed {
                        column.shadow[k] = values.get(k);
                    }
                }
            }
        }
        column.changed = changed;
        column.packed = values.words;
    }
    Ok(())
}

/// Empties a query's column tables and makes them raise an error when used.
pub(crate) fn invalidate_entry(lua: &Lua, entry: &mut QueryEntry) -> mlua::Result<()> {
    entry.retire_chunks();
    // The handle path's columns were never handed out: forgetting them is enough.
    entry.handle_columns.clear();
    if entry.columns.is_empty() && entry.column_sets.is_empty() {
        return Ok(());
    }
    let helpers = helpers(lua)?;
    let stale: Function = helpers.raw_get("stale")?;
    for (_, column) in entry.columns.drain() {
        stale.call::<()>(column.table)?;
    }
    for (_, set) in entry.column_sets.drain() {
        stale.call::<()>(set)?;
    }
    Ok(())
}

/// Before a structural change: applies pending column writes, then makes every column handed
/// out stale.
pub(crate) fn invalidate_all(lua: &Lua) -> mlua::Result<()> {
    flush(lua)?;
    let mut state = match lua.app_data_mut::<VmState>() {
        Some(state) => state,
        None => return Ok(()),
    };
    for entry in state.queries.values_mut() {
        invalidate_entry(lua, entry)?;
    }
    state.pending.clear();
    state.handle_pending.clear();
    Ok(())
}

/// A call failed: the writes pending in its columns are dropped, and the columns holding them
/// go stale, so a dropped write is neither applied by a later call nor read back from a column
/// taken again (which is then made afresh from the store).
fn drop_pending(lua: &Lua) {
    let Some(mut state) = lua.app_data_mut::<VmState>() else {
        return;
    };
    let pending = std::mem::take(&mut state.pending);
    for (key, _) in pending {
        if let Some(entry) = state.queries.get_mut(&key)
            && invalidate_entry(lua, entry).is_err()
        {
            // The stale marking runs Luau, which a spent budget may refuse; the tables are
            // forgotten all the same, so none is taken again.
            entry.columns.clear();
            entry.column_sets.clear();
        }
    }
}

/// A query entry being replaced: its columns go stale.
pub(crate) fn retire(lua: &Lua, mut entry: QueryEntry) -> mlua::Result<()> {
    invalidate_entry(lua, &mut entry)
}

/// `chunk:read(C)`.
pub(crate) fn read_method(lua: &Lua, (chunk, component): (Table, LuaValue)) -> mlua::Result<Table> {
    take(lua, &chunk, &component, false)
}

/// `chunk:write(C)`.
pub(crate) fn write_method(
    lua: &Lua,
    (chunk, component): (Table, LuaValue),
) -> mlua::Result<Table> {
    take(lua, &chunk, &component, true)
}
