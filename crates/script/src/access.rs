//! Scripts' access to the world: what a call lends the VM (the scene of a serial call, or the
//! established state of a parallel one with the write log its writes go to), and the one way
//! the game API, the query mirror and the column path reach it, [`with_world`].
//!
//! Invariant: a call's world is reachable only while the host lends it (from the start of a
//! call to its end); every read and write a script makes goes through [`Access`], which does
//! what the facade does for Rust code (checked scene operations in serial code; in parallel
//! code, reads of the established state and writes recorded in the order made, each checked
//! against the declared fields, the definition and the hierarchy as it is recorded). This
//! module calls no other module of the layer but `errors` (which names what an error refers
//! to): the API, the mirror and the columns call it, never the other way round.

use hashbrown::HashMap;
use mlua::{AnyUserData, Lua, Table, Value as LuaValue};
use strata::{Clock, Scene, WorldError};
use strata_arena::{InstanceId, Snapshot};
use strata_component_store::{ComponentId, FieldId, InstanceRef, Store, Value};

use super::errors::name_ids;

/// The scene lent to the VM for a serial call.
pub(crate) struct CurrentScene(pub(crate) AnyUserData);

/// The established state lent to the VM for a parallel call: the arena snapshot and the store
/// the wave reads.
pub(crate) struct CurrentEstablished {
    pub(crate) arena: AnyUserData,
    pub(crate) store: AnyUserData,
}

/// What a parallel call writes (the state it reads is lent beside it).
pub(crate) struct ParState {
    pub(crate) game: InstanceId,
    pub(crate) workspace: InstanceId,
    /// The frame and time the call runs at (`world.frame`, `world.time`).
    pub(crate) clock: Clock,
    /// The single writes (handles) in the order made.
    writes: Vec<(InstanceRef, ComponentId, FieldId, Value)>,
    /// The column writes (the column path), by column.
    bulk: Vec<BulkWrite>,
    /// The order of everything written: single writes and column writes interleaved.
    order: Vec<Op>,
    /// The latest write of each field: an index into `writes`, and how many column writes
    /// had been recorded when it was made.
    latest: HashMap<(InstanceId, ComponentId, FieldId), (usize, usize)>,
    /// The fields a parallel system declared it writes; `None` for execution groups, which
    /// may write any field.
    declared: Option<Vec<(ComponentId, FieldId)>>,
    /// The components a parallel system may read (those it declared in `reads` and those it
    /// writes a field of); `None` when it may read any.
    readable: Option<Vec<ComponentId>>,
    pub(crate) reads: u64,
    pub(crate) rows: u64,
    /// Row and value buffers of an earlier call's column writes, emptied, for this call's.
    spare: Vec<BulkBuffers>,
}

/// The rows and values of a column write, kept from one parallel call to the next so a large
/// write-back does not take fresh pages every frame.
pub(crate) type BulkBuffers = (Vec<u32>, Vec<f64>);

impl ParState {
    pub(crate) fn new(
        roots: (InstanceId, InstanceId),
        declared: Option<Vec<(ComponentId, FieldId)>>,
    ) -> Self {
        Self {
            game: roots.0,
            workspace: roots.1,
            clock: Clock::default(),
            writes: Vec::new(),
            bulk: Vec::new(),
            order: Vec::new(),
            latest: HashMap::new(),
            declared,
            readable: None,
            reads: 0,
            rows: 0,
            spare: Vec::new(),
        }
    }

    /// The same, with emptied buffers of an earlier call's column writes to fill again.
    pub(crate) fn with_spare(mut self, spare: Vec<BulkBuffers>) -> Self {
        self.spare = spare;
        self
    }

    /// Empty buffers for a column write's rows and values: an earlier call's when there are.
    pub(crate) fn bulk_buffers(&mut self) -> BulkBuffers {
        self.spare.pop().unwrap_or_default()
    }

    /// The same, reading only `readable` components (`None`: any).
    pub(crate) fn reading(mut self, readable: Option<Vec<ComponentId>>) -> Self {
        self.readable = readable;
        self
    }

    /// Refuses a read of `component` the system did not declare.
    fn check_read(&self, store: &Store, component: ComponentId) -> mlua::Result<()> {
        match &self.readable {
            Some(readable) if !readable.contains(&component) => {
                let name = store
                    .def(component)
                    .map_or_else(|_| format!("{component:?}"), |d| d.name().to_owned());
                Err(mlua::Error::runtime(format!(
                    "the system did not declare reads of `{name}` (list it in the system's `reads`)"
                )))
            }
            _ => Ok(()),
        }
    }

    /// The same, running at `clock`.
    pub(crate) fn at(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    fn read(
        &mut self,
        (arena, store): (&Snapshot, &Store),
        id: InstanceId,
        component: ComponentId,
        field: FieldId,
    ) -> mlua::Result<Value> {
        self.reads += 1;
        let at = InstanceRef::of(arena, id).map_err(lua_error)?;
        // The latest write wins: a single write, or a later column write of the same row.
        let single = self.latest.get(&(id, component, field)).map(|(w, _)| *w);
        let single_at = single.and_then(|w| {
            self.order
                .iter()
                .rposition(|op| matches!(op, Op::One(i) if *i == w))
        });
        let mut column_write = None;
        if let Ok(row) = store.row(at, component) {
            for (k, op) in self.order.iter().enumerate().rev() {
                if single_at.is_some_and(|s| k < s) {
                    break;
                }
                if let Op::Bulk(b) = op {
                    let bulk = &self.bulk[*b];
                    if bulk.component == component
                        && bulk.field == field
                        && let Some(i) = bulk.rows.iter().rposition(|r| *r as usize == row)
                    {
                        column_write = Some(bulk.value(i));
                        break;
                    }
                }
            }
        }
        if let Some(value) = column_write {
            return Ok(value);
        }
        if let Some(w) = single {
            return Ok(self.writes[w].3.clone());
        }
        store.get_value(at, component, field).map_err(lua_error)
    }

    /// Checks a parallel call may write a field.
    pub(crate) fn check_declared(
        &self,
        store: &Store,
        component: ComponentId,
        field: FieldId,
    ) -> mlua::Result<()> {
        match &self.declared {
            Some(declared) if !declared.contains(&(component, field)) => {
                let name = store.def(component).map_or_else(
                    |_| format!("{component:?}.{field:?}"),
                    |def| {
                        let field = def
                            .fields()
                            .get(field.index())
                            .map_or_else(|| format!("{field:?}"), |f| f.name.to_string());
                        format!("{}.{field}", def.name())
                    },
                );
                Err(mlua::Error::runtime(format!(
                    "the system did not declare writes to `{name}` (list it in the system's `writes`)"
                )))
            }
            _ => Ok(()),
        }
    }

    fn write(
        &mut self,
        (arena, store): (&Snapshot, &Store),
        id: InstanceId,
        component: ComponentId,
        field: FieldId,
        value: Value,
    ) -> mlua::Result<()> {
        self.check_declared(store, component, field)?;
        let at = InstanceRef::of(arena, id).map_err(lua_error)?;
        store.row(at, component).map_err(lua_error)?;
        store
            .def(component)
            .and_then(|def| {
                def.check_value(field, &value)?;
                def.check_references(field, &value, |t| arena.is_live(t))
            })
            .map_err(lua_error)?;
        // A field written again with no column write since keeps one entry, its value
        // replaced: the log grows with the fields written, not with the writes made.
        let key = (id, component, field);
        if let Some(&(w, bulks)) = self.latest.get(&key)
            && bulks == self.bulk.len()
        {
            self.writes[w].3 = value;
            return Ok(());
        }
        self.latest
            .insert(key, (self.writes.len(), self.bulk.len()));
        self.order.push(Op::One(self.writes.len()));
        self.writes.push((at, component, field, value));
        Ok(())
    }

    /// Records a column write: `values[i]` into set row `rows[i]`.
    pub(crate) fn write_column(&mut self, store: &Store, bulk: BulkWrite) -> mlua::Result<()> {
        self.check_declared(store, bulk.component, bulk.field)?;
        self.order.push(Op::Bulk(self.bulk.len()));
        self.bulk.push(bulk);
        Ok(())
    }

    /// Replays everything written, in order, into an overlay over the same established store.
    /// Hands back the column writes' buffers, emptied, for a later call
    /// ([`ParState::with_spare`]), with any it was given and did not use.
    pub(crate) fn replay(
        self,
        overlay: &mut strata_parallel_overlay::Overlay<'_>,
    ) -> (
        Result<(), strata_parallel_overlay::OverlayError>,
        Vec<BulkBuffers>,
    ) {
        let Self {
            writes,
            bulk,
            order,
            mut spare,
            ..
        } = self;
        let mut writes: Vec<Option<(InstanceRef, ComponentId, FieldId, Value)>> =
            writes.into_iter().map(Some).collect();
        let mut result = Ok(());
        for op in order {
            result = match op {
                Op::One(i) => match writes[i].take() {
                    Some((at, component, field, value)) => {
                        overlay.write(at, component, field, value)
                    }
                    None => Ok(()),
                },
                Op::Bulk(b) => bulk[b].replay(overlay),
            };
            if result.is_err() {
                break;
            }
        }
        spare.extend(bulk.into_iter().map(|b| {
            let (mut rows, mut values) = (b.rows, b.values);
            rows.clear();
            values.clear();
            (rows, values)
        }));
        (result, spare)
    }
}

/// One entry of a parallel call's write order.
#[derive(Clone, Copy, Debug)]
enum Op {
    One(usize),
    Bulk(usize),
}

/// The kinds of value a column write holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BulkKind {
    Number,
    Integer,
    Boolean,
}

/// A column write of a parallel call: values (as numbers) for set rows.
#[derive(Clone, Debug)]
pub(crate) struct BulkWrite {
    pub(crate) component: ComponentId,
    pub(crate) field: FieldId,
    pub(crate) kind: BulkKind,
    pub(crate) rows: Vec<u32>,
    pub(crate) values: Vec<f64>,
}

impl BulkWrite {
    fn value(&self, i: usize) -> Value {
        let v = self.values[i];
        match self.kind {
            BulkKind::Number => Value::Number(v),
            BulkKind::Integer => Value::Integer(v as i64),
            BulkKind::Boolean => Value::Boolean(v != 0.0),
        }
    }

    fn replay(
        &self,
        overlay: &mut strata_parallel_overlay::Overlay<'_>,
    ) -> Result<(), strata_parallel_overlay::OverlayError> {
        match self.kind {
            BulkKind::Number => overlay
                .column::<f64>(self.component, self.field)?
                .write_rows(&self.rows, self.values.iter().copied())?,
            BulkKind::Integer => overlay
                .column::<i64>(self.component, self.field)?
                .write_rows(&self.rows, self.values.iter().map(|&v| v as i64))?,
            BulkKind::Boolean => overlay
                .column::<bool>(self.component, self.field)?
                .write_rows(&self.rows, self.values.iter().map(|&v| v != 0.0))?,
        }
        Ok(())
    }
}

/// The world a call runs against.
pub(crate) enum Access<'a> {
    /// A serial call: the whole scene.
    Serial(&'a mut Scene),
    /// A parallel call: established state and a write log.
    Parallel(ParView<'a>),
}

/// A parallel call's view: what it reads and where its writes go.
pub(crate) struct ParView<'a> {
    pub(crate) arena: &'a Snapshot,
    pub(crate) store: &'a Store,
    pub(crate) par: &'a mut ParState,
}

impl Access<'_> {
    pub(crate) fn arena(&self) -> &Snapshot {
        match self {
            Access::Serial(scene) => scene.arena(),
            Access::Parallel(view) => view.arena,
        }
    }

    pub(crate) fn store(&self) -> &Store {
        match self {
            Access::Serial(scene) => scene.store(),
            Access::Parallel(view) => view.store,
        }
    }

    /// The scene, for a structural change; refused in parallel code.
    pub(crate) fn scene(&mut self, what: &str) -> mlua::Result<&mut Scene> {
        match self {
            Access::Serial(scene) => Ok(scene),
            Access::Parallel(_) => Err(mlua::Error::runtime(format!(
                "{what} is a structural change, which parallel code cannot make (run it in a serial system)"
            ))),
        }
    }

    pub(crate) fn read(
        &mut self,
        id: InstanceId,
        component: ComponentId,
        field: FieldId,
    ) -> mlua::Result<Value> {
        match self {
            Access::Serial(scene) => scene.get_value(id, component, field).map_err(lua_error),
            Access::Parallel(view) => {
                view.par.check_read(view.store, component)?;
                view.par
                    .read((view.arena, view.store), id, component, field)
            }
        }
    }

    /// Whether the call may write a field: any, in serial code; a declared one in parallel.
    pub(crate) fn may_write(&self, component: ComponentId, field: FieldId) -> bool {
        match self {
            Access::Serial(_) => true,
            Access::Parallel(view) => view
                .par
                .check_declared(view.store, component, field)
                .is_ok(),
        }
    }

    /// Refuses a parallel call's read of a component (its values or change ticks) its system
    /// did not declare; serial calls read anything.
    pub(crate) fn check_read(&self, component: ComponentId) -> mlua::Result<()> {
        match self {
            Access::Serial(_) => Ok(()),
            Access::Parallel(view) => view.par.check_read(view.store, component),
        }
    }

    pub(crate) fn write(
        &mut self,
        id: InstanceId,
        component: ComponentId,
        field: FieldId,
        value: Value,
    ) -> mlua::Result<()> {
        match self {
            Access::Serial(scene) => scene
                .write_value(id, component, field, value)
                .map(|_| ())
                .map_err(lua_error),
            Access::Parallel(view) => {
                view.par
                    .write((view.arena, view.store), id, component, field, value)
            }
        }
    }

    /// The frame and time the call runs at.
    pub(crate) fn clock(&self) -> Clock {
        match self {
            Access::Serial(scene) => scene.clock(),
            Access::Parallel(view) => view.par.clock,
        }
    }

    pub(crate) fn count_rows(&mut self, n: u64) {
        match self {
            Access::Serial(scene) => scene.count_rows(n),
            Access::Parallel(view) => view.par.rows += n,
        }
    }
}

/// A layer's error as a Luau error (named in the author's terms when it leaves the API; see
/// [`with_world`]).
pub(crate) fn lua_error(error: impl Into<WorldError>) -> mlua::Error {
    super::errors::world_error(error)
}

/// The handle path's fast lane (the Luau side is the helpers' `handle_meta`): the Luau table
/// whose `cur` names the pass of the loop whose handles may read and write their fields in
/// the pass's column tables, and whether it is set.
///
/// Invariant: `cur` is set only between a query pass (of a serial call, or of a parallel one
/// whose write log is empty) and the next time the call reaches the world in a way that may
/// change what the lane's columns hold, so while it is set nothing but the lane's own writes
/// has changed what it reads since the pass (which brought its columns up to date when first
/// used). [`with_world`] clears it; [`with_world_armed`] is for the paths that cannot change
/// what the lane reads (the lane's own column work and write-back, and reads); the end of
/// every call clears it too, so no call starts with it set.
pub(crate) struct HandleLane {
    slot: Table,
    armed: bool,
}

impl HandleLane {
    pub(crate) fn new(slot: Table) -> Self {
        Self { slot, armed: false }
    }
}

/// Lets the handles of the pass `cur` use their columns: in a serial call, and in a parallel
/// one that has written nothing yet (the lane's columns are brought up to date from the
/// established state, which holds none of the call's own writes; once the call has written,
/// its handles go through its write log, which does).
pub(crate) fn arm_handles(lua: &Lua, cur: &Table) -> mlua::Result<()> {
    let serial = lua.app_data_ref::<CurrentScene>().is_some();
    let unwritten_parallel = lua.app_data_ref::<CurrentEstablished>().is_some()
        && lua
            .app_data_ref::<ParState>()
            .is_some_and(|par| par.order.is_empty());
    if !serial && !unwritten_parallel {
        return Ok(());
    }
    if let Some(mut lane) = lua.app_data_mut::<HandleLane>() {
        lane.slot.raw_set("cur", cur)?;
        lane.armed = true;
    }
    Ok(())
}

/// Which rows of the handle lane's columns hold writes not applied yet.
pub(crate) enum LaneRows {
    /// The lane is armed and its loop wrote rows `.0` to `.1` (1-based) since the last
    /// write-back.
    Range(usize, usize),
    /// The lane is armed and its loop wrote nothing since the last write-back.
    Clean,
    /// The lane is not armed: any row may hold a pending write.
    Unknown,
}

/// The rows the armed lane's loop wrote since the last write-back (see
/// [`clear_lane_rows`], which the write-back calls once it has applied them).
pub(crate) fn lane_rows(lua: &Lua) -> mlua::Result<LaneRows> {
    let Some(cur) = armed_pass(lua)? else {
        return Ok(LaneRows::Unknown);
    };
    let (lo, hi): (Option<usize>, Option<usize>) = (cur.raw_get("lo")?, cur.raw_get("hi")?);
    Ok(match (lo, hi) {
        (Some(lo), Some(hi)) => LaneRows::Range(lo, hi),
        _ => LaneRows::Clean,
    })
}

/// Forgets the rows the armed lane's loop wrote: they are applied.
pub(crate) fn clear_lane_rows(lua: &Lua) -> mlua::Result<()> {
    if let Some(cur) = armed_pass(lua)? {
        cur.raw_set("lo", LuaValue::Nil)?;
        cur.raw_set("hi", LuaValue::Nil)?;
    }
    Ok(())
}

/// The pass the lane is armed for, if it is.
fn armed_pass(lua: &Lua) -> mlua::Result<Option<Table>> {
    match lua.app_data_ref::<HandleLane>() {
        Some(lane) if lane.armed => lane.slot.raw_get("cur").map(Some),
        _ => Ok(None),
    }
}

/// Whether the handle lane is armed.
pub(crate) fn lane_armed(lua: &Lua) -> bool {
    lua.app_data_ref::<HandleLane>()
        .is_some_and(|lane| lane.armed)
}

/// Makes every handle resolve its instance in the world again (see [`HandleLane`]).
pub(crate) fn disarm_handles(lua: &Lua) -> mlua::Result<()> {
    if let Some(mut lane) = lua.app_data_mut::<HandleLane>()
        && lane.armed
    {
        lane.armed = false;
        lane.slot.raw_set("cur", LuaValue::Nil)?;
    }
    Ok(())
}

/// Runs `f` against the world the current call runs on: the scene of a serial call, or the
/// established state and the write log of a parallel one. A layer's error `f` returns leaves
/// with the components, fields and instances it refers to named against that world. Outside
/// a call it refuses. Handles resolve their instances in the world after it (see
/// [`HandleLane`]).
pub(crate) fn with_world<R>(
    lua: &Lua,
    f: impl FnOnce(&Lua, Access<'_>) -> mlua::Result<R>,
) -> mlua::Result<R> {
    disarm_handles(lua)?;
    with_world_armed(lua, f)
}

/// [`with_world`] for a path that cannot change what the handle lane reads: the lane's own
/// column work and write-back, and calls that only read. It leaves the lane as it is.
pub(crate) fn with_world_armed<R>(
    lua: &Lua,
    f: impl FnOnce(&Lua, Access<'_>) -> mlua::Result<R>,
) -> mlua::Result<R> {
    let scene = lua.app_data_ref::<CurrentScene>().map(|c| c.0.clone());
    if let Some(scene) = scene {
        return scene.borrow_mut_scoped::<Scene, _>(|scene| {
            f(lua, Access::Serial(scene)).map_err(|e| name_ids(e, scene.arena(), scene.store()))
        })?;
    }
    let established = lua
        .app_data_ref::<CurrentEstablished>()
        .map(|e| (e.arena.clone(), e.store.clone()));
    if let Some((arena, store)) = established {
        return arena.borrow_scoped::<Snapshot, _>(|arena| {
            store.borrow_scoped::<Store, _>(|store| {
                let Some(mut par) = lua.app_data_mut::<ParState>() else {
                    return Err(mlua::Error::runtime("no parallel state"));
                };
                f(
                    lua,
                    Access::Parallel(ParView {
                        arena,
                        store,
                        par: &mut par,
                    }),
                )
                .map_err(|e| name_ids(e, arena, store))
            })?
        })?;
    }
    Err(mlua::Error::runtime(
        "the game API is only available while the world runs a script",
    ))
}

#[cfg(test)]
mod tests {
    use strata_arena::{Arena, ClassId};
    use strata_component_store::{ComponentDef, FieldDef};

    use super::*;

    #[test]
    fn a_field_written_again_keeps_one_entry_in_the_parallel_log() {
        let mut arena = Arena::standard();
        let mut store = Store::new();
        let c = store
            .install(
                ComponentDef::new("Heat")
                    .field(FieldDef::number("t", 0.0))
                    .field(FieldDef::number("u", 0.0)),
                arena.classes(),
            )
            .unwrap();
        let id = arena.create(ClassId::PART, None).unwrap();
        let snapshot = arena.snapshot();
        let at = InstanceRef::of(&snapshot, id).unwrap();
        store.add(at, ClassId::PART, c, []).unwrap();
        let (t, u) = (FieldId::from_index(0), FieldId::from_index(1));
        let mut par = ParState::new((id, id), None);
        for k in 0..10_000 {
            par.write((&snapshot, &store), id, c, t, Value::Number(f64::from(k)))
                .unwrap();
        }
        par.write((&snapshot, &store), id, c, u, Value::Number(-1.0))
            .unwrap();
        assert_eq!((par.writes.len(), par.order.len()), (2, 2));
        assert_eq!(
            par.read((&snapshot, &store), id, c, t).unwrap(),
            Value::Number(9_999.0)
        );
        assert_eq!(
            par.read((&snapshot, &store), id, c, u).unwrap(),
            Value::Number(-1.0)
        );
    }
}
