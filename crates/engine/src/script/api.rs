//! The game API as Luau sees it: instance wrappers, component types, component handles, the
//! `world` object, and how every call reaches the world it runs against.
//!
//! Invariant: the API reaches the world only through [`access`]: the scene of a serial call
//! (lent to the VM for exactly the duration of the call), or the established state and the
//! write log of a parallel one. Outside a call every API function refuses with an error. An
//! instance has one wrapper per VM while anything refers to it, so wrappers compare equal by
//! identity; a handle resolves its row on every access, so it always reads live state, and a
//! write through it is a checked store write (or, in parallel code, a logged one).

use hashbrown::HashMap;
use mlua::{
    AnyUserData, FromLua, Lua, MetaMethod, Table, UserData, UserDataFields, UserDataMethods,
    Value as LuaValue,
};
use strata_arena::{AttrValue, InstanceId, Snapshot};
use strata_component_store::{ComponentId, FieldId, FieldType, InstanceRef, Store, Value};

use super::args;
use super::columns;
use super::convert::{field_values, from_lua, kind, to_lua, type_name};
use super::errors::name_ids;
use super::navigate;
use super::query;
use crate::error::WorldError;
use crate::scene::{Clock, Scene};

/// The registry table of instance wrappers (weak values), by id.
const WRAPPERS: &str = "strata.instances";
/// The registry table of handle caches (weak values), by component id then instance id.
const HANDLES: &str = "strata.handles";

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
    /// The latest write of each field, as an index into `writes`.
    latest: HashMap<(InstanceId, ComponentId, FieldId), usize>,
    /// The fields a parallel system declared it writes; `None` for execution groups, which
    /// may write any field.
    declared: Option<Vec<(ComponentId, FieldId)>>,
    pub(crate) reads: u64,
    pub(crate) rows: u64,
}

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
            reads: 0,
            rows: 0,
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
        let single = self.latest.get(&(id, component, field)).copied();
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
        self.latest
            .insert((id, component, field), self.writes.len());
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
    pub(crate) fn replay(
        self,
        overlay: &mut strata_parallel_overlay::Overlay<'_>,
    ) -> Result<(), strata_parallel_overlay::OverlayError> {
        let Self {
            writes,
            bulk,
            order,
            ..
        } = self;
        let mut writes: Vec<Option<(InstanceRef, ComponentId, FieldId, Value)>> =
            writes.into_iter().map(Some).collect();
        for op in order {
            match op {
                Op::One(i) => {
                    if let Some((at, component, field, value)) = writes[i].take() {
                        overlay.write(at, component, field, value)?;
                    }
                }
                Op::Bulk(b) => bulk[b].replay(overlay)?,
            }
        }
        Ok(())
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
            BulkKind::Number => {
                let mut column = overlay.column::<f64>(self.component, self.field)?;
                for (row, v) in self.rows.iter().zip(&self.values) {
                    column.write(*row as usize, *v)?;
                }
            }
            BulkKind::Integer => {
                let mut column = overlay.column::<i64>(self.component, self.field)?;
                for (row, v) in self.rows.iter().zip(&self.values) {
                    column.write(*row as usize, *v as i64)?;
                }
            }
            BulkKind::Boolean => {
                let mut column = overlay.column::<bool>(self.component, self.field)?;
                for (row, v) in self.rows.iter().zip(&self.values) {
                    column.write(*row as usize, *v != 0.0)?;
                }
            }
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
            Access::Serial(scene) => &scene.arena,
            Access::Parallel(view) => view.arena,
        }
    }

    pub(crate) fn store(&self) -> &Store {
        match self {
            Access::Serial(scene) => &scene.store,
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
            Access::Parallel(view) => view
                .par
                .read((view.arena, view.store), id, component, field),
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
            Access::Serial(scene) => scene.clock,
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
/// [`access`]).
pub(crate) fn lua_error(error: impl Into<WorldError>) -> mlua::Error {
    super::errors::world_error(error)
}

/// Runs `f` against the world the current call runs on, after applying any column writes
/// the script made since the last API call. A layer's error `f` returns leaves with the
/// components, fields and instances it refers to named against that world.
pub(crate) fn access<R>(
    lua: &Lua,
    f: impl FnOnce(&Lua, Access<'_>) -> mlua::Result<R>,
) -> mlua::Result<R> {
    columns::flush(lua)?;
    access_raw(lua, f)
}

/// [`access`] without the flush (for the flush itself).
pub(crate) fn access_raw<R>(
    lua: &Lua,
    f: impl FnOnce(&Lua, Access<'_>) -> mlua::Result<R>,
) -> mlua::Result<R> {
    let scene = lua.app_data_ref::<CurrentScene>().map(|c| c.0.clone());
    if let Some(scene) = scene {
        return scene.borrow_mut_scoped::<Scene, _>(|scene| {
            f(lua, Access::Serial(scene)).map_err(|e| name_ids(e, &scene.arena, &scene.store))
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

// ----- Instances. -----

/// An instance wrapper: an instance id, with the instance API.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Inst(pub(crate) InstanceId);

/// The wrapper of an instance (the same one while anything holds it).
pub(crate) fn wrap_instance(lua: &Lua, id: InstanceId) -> mlua::Result<AnyUserData> {
    let cache: Table = lua.named_registry_value(WRAPPERS)?;
    let key = id.get() as f64;
    if let LuaValue::UserData(ud) = cache.raw_get::<LuaValue>(key)? {
        return Ok(ud);
    }
    let ud = lua.create_userdata(Inst(id))?;
    cache.raw_set(key, &ud)?;
    Ok(ud)
}

/// The instance a wrapper stands for.
pub(crate) fn instance_id(ud: &AnyUserData) -> Option<InstanceId> {
    ud.borrow::<Inst>().ok().map(|inst| inst.0)
}

/// An instance argument: a wrapper, or an error naming what was given.
fn instance_arg(value: &LuaValue, what: &str) -> mlua::Result<InstanceId> {
    match value {
        LuaValue::UserData(ud) => instance_id(ud),
        _ => None,
    }
    .ok_or_else(|| mlua::Error::runtime(format!("{what} must be an instance, not {}", kind(value))))
}

/// An optional instance argument (nil for none).
fn optional_instance(value: &LuaValue, what: &str) -> mlua::Result<Option<InstanceId>> {
    if value.is_nil() {
        Ok(None)
    } else {
        instance_arg(value, what).map(Some)
    }
}

pub(crate) fn attribute_to_lua(lua: &Lua, value: &AttrValue) -> mlua::Result<LuaValue> {
    Ok(match value {
        AttrValue::Bool(b) => LuaValue::Boolean(*b),
        AttrValue::Number(n) => LuaValue::Number(*n),
        AttrValue::Integer(i) => LuaValue::Number(*i as f64),
        AttrValue::Text(t) => LuaValue::String(lua.create_string(t.as_bytes())?),
        AttrValue::Vector(v) => LuaValue::Vector(mlua::Vector::new(v.x, v.y, v.z)),
        AttrValue::Reference(Some(id)) => LuaValue::UserData(wrap_instance(lua, *id)?),
        _ => LuaValue::Nil,
    })
}

fn attribute_from_lua(value: &LuaValue) -> mlua::Result<Option<AttrValue>> {
    Ok(Some(match value {
        LuaValue::Nil => return Ok(None),
        LuaValue::Boolean(b) => AttrValue::Bool(*b),
        LuaValue::Number(n) => AttrValue::Number(*n),
        LuaValue::Integer(i) => AttrValue::Integer(*i),
        LuaValue::String(s) => AttrValue::Text(std::sync::Arc::from(&*s.to_str()?)),
        LuaValue::Vector(v) => AttrValue::Vector(strata_arena::Vec3::new(v.x(), v.y(), v.z())),
        LuaValue::UserData(ud) if instance_id(ud).is_some() => {
            AttrValue::Reference(instance_id(ud))
        }
        other => {
            return Err(mlua::Error::runtime(format!(
                "an attribute cannot hold {}",
                kind(other)
            )));
        }
    }))
}

impl UserData for Inst {
    fn add_fields<F: UserDataFields<Self>>(fields: &mut F) {
        fields.add_meta_field(MetaMethod::Type, "Instance");
        fields.add_field_method_get("Id", |_, this| Ok(this.0.get() as f64));
        fields.add_field_method_get("Name", |lua, this| {
            access(lua, |lua, a| {
                let node = a.arena().node(this.0).map_err(lua_error)?;
                lua.create_string(node.name())
            })
        });
        fields.add_field_method_set("Name", |lua, this, name: LuaValue| {
            let name = args::string(&name, "an instance's Name")?;
            access(lua, |_, mut a| {
                a.scene("renaming")?
                    .set_name(this.0, &name)
                    .map(|_| ())
                    .map_err(lua_error)
            })
        });
        fields.add_field_method_get("ClassName", |lua, this| {
            access(lua, |lua, a| {
                let class = a.arena().node(this.0).map_err(lua_error)?.class();
                let name = a
                    .arena()
                    .classes()
                    .get(class)
                    .map_or("?", |d| d.name())
                    .to_owned();
                lua.create_string(&name)
            })
        });
        fields.add_field_method_get("Parent", |lua, this| {
            access(lua, |lua, a| {
                match a.arena().node(this.0).map_err(lua_error)?.parent() {
                    Some(parent) => Ok(LuaValue::UserData(wrap_instance(lua, parent)?)),
                    None => Ok(LuaValue::Nil),
                }
            })
        });
        // A function setter: a method setter would hold the wrapper borrowed, and
        // `inst.Parent = inst` must still read the instance it names.
        fields.add_field_function_set("Parent", |lua, this, parent: LuaValue| {
            let id = instance_arg(&LuaValue::UserData(this), "an instance")?;
            let parent = optional_instance(&parent, "Parent")?;
            access(lua, |_, mut a| {
                a.scene("reparenting")?
                    .set_parent(id, parent)
                    .map(|_| ())
                    .map_err(lua_error)
            })
        });
    }

    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        // Reached only for a key that is no property or method.
        methods.add_meta_method(MetaMethod::Index, |lua, this, key: LuaValue| {
            Err::<(), _>(navigate::no_instance_member(lua, this.0, &key))
        });
        methods.add_meta_method(
            MetaMethod::NewIndex,
            |lua, this, (key, _): (LuaValue, LuaValue)| {
                Err::<(), _>(navigate::unsettable_instance_member(lua, this.0, &key))
            },
        );
        methods.add_meta_method(MetaMethod::ToString, |lua, this, ()| {
            let name = access(lua, |_, a| {
                Ok(a.arena().node(this.0).map(|n| n.name().to_owned()).ok())
            })
            .unwrap_or(None);
            Ok(match name {
                Some(name) => format!("{name} ({})", this.0),
                None => format!("instance {}", this.0),
            })
        });
        methods.add_meta_function(MetaMethod::Eq, |_, (a, b): (AnyUserData, AnyUserData)| {
            Ok(instance_id(&a).is_some() && instance_id(&a) == instance_id(&b))
        });
        methods.add_method("IsAlive", |lua, this, ()| {
            access(lua, |_, a| Ok(a.arena().is_live(this.0)))
        });
        methods.add_method("Destroy", |lua, this, ()| {
            columns::invalidate_all(lua)?;
            access(lua, |_, mut a| {
                a.scene("destroying")?
                    .destroy(this.0)
                    .map(|_| ())
                    .map_err(lua_error)
            })
        });
        methods.add_method("Clone", |lua, this, ()| {
            columns::invalidate_all(lua)?;
            let copy = access(lua, |_, mut a| {
                let scene = a.scene("cloning")?;
                let parent = scene.arena.node(this.0).map_err(lua_error)?.parent();
                scene.clone_subtree(this.0, parent).map_err(lua_error)
            })?;
            wrap_instance(lua, copy)
        });
        methods.add_method("GetChildren", |lua, this, ()| {
            let children = access(lua, |_, a| {
                a.arena().node(this.0).map_err(lua_error)?;
                Ok(a.arena().children(this.0).collect::<Vec<_>>())
            })?;
            let table = lua.create_table_with_capacity(children.len(), 0)?;
            for (k, child) in children.into_iter().enumerate() {
                table.raw_set(k + 1, wrap_instance(lua, child)?)?;
            }
            Ok(table)
        });
        methods.add_method("GetDescendants", |lua, this, ()| {
            navigate::descendants(lua, this.0)
        });
        methods.add_method("IsA", |lua, this, class: LuaValue| {
            navigate::is_a(lua, this.0, &class)
        });
        methods.add_method("FindFirstAncestor", |lua, this, name: LuaValue| {
            navigate::find_first_ancestor(lua, this.0, &name)
        });
        methods.add_method("GetAttributes", |lua, this, ()| {
            navigate::attributes(lua, this.0)
        });
        methods.add_method("GetTags", |lua, this, ()| navigate::tags(lua, this.0));
        methods.add_method("GetPersistentId", |lua, this, ()| {
            navigate::persistent_id(lua, this.0)
        });
        methods.add_method("FindFirstChild", |lua, this, name: LuaValue| {
            let name = args::string(&name, "FindFirstChild's name")?;
            let found = access(lua, |_, a| {
                let arena = a.arena();
                arena.node(this.0).map_err(lua_error)?;
                Ok(arena
                    .children(this.0)
                    .find(|c| arena.node(*c).is_ok_and(|n| n.name() == name)))
            })?;
            found.map(|id| wrap_instance(lua, id)).transpose()
        });
        methods.add_method("GetAttribute", |lua, this, name: LuaValue| {
            let name = args::string(&name, "GetAttribute's name")?;
            access(lua, |lua, a| {
                let node = a.arena().node(this.0).map_err(lua_error)?;
                match node.attributes().get(&name) {
                    Some(value) => attribute_to_lua(lua, value),
                    None => Ok(LuaValue::Nil),
                }
            })
        });
        methods.add_method(
            "SetAttribute",
            |lua, this, (name, value): (LuaValue, LuaValue)| {
                let name = args::string(&name, "SetAttribute's name")?;
                let value = attribute_from_lua(&value)?;
                access(lua, |_, mut a| {
                    a.scene("setting an attribute")?
                        .set_attribute(this.0, &name, value)
                        .map(|_| ())
                        .map_err(lua_error)
                })
            },
        );
        methods.add_method(
            "AddComponent",
            |lua, this, (component, values): (LuaValue, LuaValue)| {
                let name = component_arg(&component)?;
                let values = args::optional_table(&values, "AddComponent's values")?;
                columns::invalidate_all(lua)?;
                let c = access(lua, |_, mut a| {
                    let scene = a.scene("adding a component")?;
                    let c = scene.component(&name).map_err(lua_error)?;
                    let fields = field_types(&scene.store, c)?;
                    let values = match &values {
                        Some(values) => field_values(values, &name, &fields)?,
                        None => Vec::new(),
                    };
                    let values = values
                        .into_iter()
                        .map(|(k, v)| (FieldId::from_index(k as u16), v));
                    scene.add(this.0, c, values).map_err(lua_error)?;
                    Ok(c)
                })?;
                wrap_handle(lua, this.0, c, &name)
            },
        );
        methods.add_method("GetComponent", |lua, this, component: LuaValue| {
            let name = component_arg(&component)?;
            let held = access(lua, |_, a| {
                let Some(c) = a.store().component(&name) else {
                    return Err(lua_error(WorldError::UnknownComponent(name.to_string())));
                };
                let at = InstanceRef::of(a.arena(), this.0).map_err(lua_error)?;
                Ok(a.store().has(at, c).then_some(c))
            })?;
            match held {
                Some(c) => Ok(LuaValue::UserData(wrap_handle(lua, this.0, c, &name)?)),
                None => Ok(LuaValue::Nil),
            }
        });
        methods.add_method("HasComponent", |lua, this, component: LuaValue| {
            let name = component_arg(&component)?;
            access(lua, |_, a| {
                let Some(c) = a.store().component(&name) else {
                    return Err(lua_error(WorldError::UnknownComponent(name.to_string())));
                };
                let at = InstanceRef::of(a.arena(), this.0).map_err(lua_error)?;
                Ok(a.store().has(at, c))
            })
        });
        methods.add_method("RemoveComponent", |lua, this, component: LuaValue| {
            let name = component_arg(&component)?;
            columns::invalidate_all(lua)?;
            access(lua, |_, mut a| {
                let scene = a.scene("removing a component")?;
                let c = scene.component(&name).map_err(lua_error)?;
                scene.remove(this.0, c).map_err(lua_error)
            })
        });
    }
}

/// `Instance.new(className, parent?)`.
pub(crate) fn instance_new(
    lua: &Lua,
    (class, parent): (LuaValue, LuaValue),
) -> mlua::Result<AnyUserData> {
    let class = args::string(&class, "Instance.new's class name")?;
    let parent = optional_instance(&parent, "the parent")?;
    let id = access(lua, |_, mut a| {
        a.scene("creating an instance")?
            .create_named(&class, parent)
            .map_err(lua_error)
    })?;
    wrap_instance(lua, id)
}

// ----- Component types and handles. -----

/// A component global (`Health`): the component's name.
#[derive(Clone, Debug)]
pub(crate) struct ComponentType(pub(crate) std::sync::Arc<str>);

impl UserData for ComponentType {
    fn add_fields<F: UserDataFields<Self>>(fields: &mut F) {
        fields.add_meta_field(MetaMethod::Type, "Component");
        fields.add_field_method_get("Name", |_, this| Ok(this.0.to_string()));
    }

    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_meta_method(MetaMethod::ToString, |_, this, ()| Ok(this.0.to_string()));
        methods.add_meta_method(MetaMethod::Index, |_, this, key: LuaValue| {
            Err::<(), _>(navigate::no_member(
                &format!("the component `{}`", this.0),
                &key,
                "a component has only `Name`; its fields are read through handles",
            ))
        });
        methods.add_meta_method(
            MetaMethod::NewIndex,
            |_, this, (key, _): (LuaValue, LuaValue)| {
                Err::<(), _>(navigate::no_member(
                    &format!("the component `{}`", this.0),
                    &key,
                    "nothing of a component can be set",
                ))
            },
        );
    }
}

/// The name of a component argument given as any value.
fn component_arg(value: &LuaValue) -> mlua::Result<std::sync::Arc<str>> {
    match value {
        LuaValue::UserData(ud) if ud.is::<ComponentType>() => component_name(ud),
        other => Err(mlua::Error::runtime(format!(
            "expected a component (such as `Health`), not {}",
            kind(other)
        ))),
    }
}

/// The name of a component argument.
pub(crate) fn component_name(ud: &AnyUserData) -> mlua::Result<std::sync::Arc<str>> {
    ud.borrow::<ComponentType>()
        .map(|c| c.0.clone())
        .map_err(|_| mlua::Error::runtime("expected a component (such as `Health`)"))
}

/// The component of a component argument, in a store.
pub(crate) fn component_in(store: &Store, value: &LuaValue) -> mlua::Result<ComponentId> {
    let LuaValue::UserData(ud) = value else {
        return Err(mlua::Error::runtime(format!(
            "expected a component (such as `Health`), not {}",
            kind(value)
        )));
    };
    let name = component_name(ud)?;
    store
        .component(&name)
        .ok_or_else(|| lua_error(WorldError::UnknownComponent(name.to_string())))
}

/// Every field of a component with its type, in order.
pub(crate) fn field_types(store: &Store, c: ComponentId) -> mlua::Result<Vec<(String, FieldType)>> {
    let def = store.def(c).map_err(lua_error)?;
    Ok(def
        .fields()
        .iter()
        .map(|f| (f.name.to_string(), f.ty.clone()))
        .collect())
}

/// A handle on one instance's component: reads and writes its fields by name.
#[derive(Clone, Debug)]
pub(crate) struct Handle {
    pub(crate) id: InstanceId,
    pub(crate) component: ComponentId,
    pub(crate) name: std::sync::Arc<str>,
}

/// The handle of an instance's component (one per VM while anything holds it).
pub(crate) fn wrap_handle(
    lua: &Lua,
    id: InstanceId,
    component: ComponentId,
    name: &std::sync::Arc<str>,
) -> mlua::Result<AnyUserData> {
    let caches: Table = lua.named_registry_value(HANDLES)?;
    let key = component.index() as f64;
    let cache = match caches.raw_get::<LuaValue>(key)? {
        LuaValue::Table(t) => t,
        _ => {
            let t = weak_table(lua)?;
            caches.raw_set(key, &t)?;
            t
        }
    };
    if let LuaValue::UserData(ud) = cache.raw_get::<LuaValue>(id.get() as f64)?
        && ud
            .borrow::<Handle>()
            .is_ok_and(|h| h.component == component)
    {
        return Ok(ud);
    }
    let ud = lua.create_userdata(Handle {
        id,
        component,
        name: name.clone(),
    })?;
    cache.raw_set(id.get() as f64, &ud)?;
    Ok(ud)
}

/// The field of a handle's component named `key`, with its type.
fn handle_field(store: &Store, handle: &Handle, key: &str) -> mlua::Result<(FieldId, FieldType)> {
    let def = store.def(handle.component).map_err(lua_error)?;
    let Some(field) = def.field_id(key) else {
        return Err(mlua::Error::runtime(format!(
            "`{}` has no field `{key}`",
            handle.name
        )));
    };
    let ty = def
        .field(field)
        .map(|f| f.ty.clone())
        .unwrap_or(FieldType::Number);
    Ok((field, ty))
}

/// A handle's key as a field name: a string, or an error naming what was given.
fn field_key(handle: &Handle, key: &LuaValue) -> mlua::Result<mlua::BorrowedStr> {
    match key {
        LuaValue::String(s) => s.to_str(),
        other => Err(mlua::Error::runtime(format!(
            "`{}` has no field {}: fields are named by strings",
            handle.name,
            kind(other)
        ))),
    }
}

impl UserData for Handle {
    fn add_fields<F: UserDataFields<Self>>(fields: &mut F) {
        fields.add_meta_field(MetaMethod::Type, "ComponentHandle");
    }

    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_meta_method(MetaMethod::Index, |lua, this, key: LuaValue| {
            let key = field_key(this, &key)?;
            access(lua, |lua, mut a| {
                let (field, ty) = handle_field(a.store(), this, &key)?;
                let value = a.read(this.id, this.component, field)?;
                to_lua(lua, &value, &ty)
            })
        });
        methods.add_meta_method(
            MetaMethod::NewIndex,
            |lua, this, (key, given): (LuaValue, LuaValue)| {
                let key = field_key(this, &key)?;
                access(lua, |_, mut a| {
                    let (field, ty) = handle_field(a.store(), this, &key)?;
                    let value = from_lua(&given, &ty)
                        .map_err(|e| super::convert::in_field(&e, &key, &this.name))?;
                    let Some(value) = value else {
                        return Err(mlua::Error::runtime(format!(
                            "field `{key}` of `{}` takes {}, not {}",
                            this.name,
                            type_name(&ty),
                            kind(&given)
                        )));
                    };
                    a.write(this.id, this.component, field, value)
                })
            },
        );
        methods.add_meta_method(MetaMethod::ToString, |_, this, ()| {
            Ok(format!("{} of {}", this.name, this.id))
        });
    }
}

// ----- The world object. -----

/// The `world` object scripts get.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WorldApi;

impl UserData for WorldApi {
    fn add_fields<F: UserDataFields<Self>>(fields: &mut F) {
        fields.add_field_method_get("workspace", |lua, _| {
            let id = access(lua, |_, a| match a {
                Access::Serial(scene) => Ok(scene.workspace()),
                Access::Parallel(view) => Ok(view.par.workspace),
            })?;
            wrap_instance(lua, id)
        });
        fields.add_field_method_get("game", |lua, _| {
            let id = access(lua, |_, a| match a {
                Access::Serial(scene) => Ok(scene.game()),
                Access::Parallel(view) => Ok(view.par.game),
            })?;
            wrap_instance(lua, id)
        });
        fields.add_field_method_get("frame", |lua, _| {
            access(lua, |_, a| Ok(a.clock().frame as f64))
        });
        fields.add_field_method_get("time", |lua, _| access(lua, |_, a| Ok(a.clock().time)));
        fields.add_meta_field(MetaMethod::Type, "World");
    }

    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_meta_method(MetaMethod::Index, |_, _, key: LuaValue| {
            Err::<(), _>(navigate::no_member("world", &key, &world_members()))
        });
        methods.add_meta_method(
            MetaMethod::NewIndex,
            |_, _, (key, _): (LuaValue, LuaValue)| {
                Err::<(), _>(navigate::no_member(
                    "world",
                    &key,
                    "nothing of world can be set",
                ))
            },
        );
        methods.add_method("query", |lua, _, spec: LuaValue| {
            let spec = args::table(&spec, "world:query's spec")?;
            query::new_query(lua, &spec)
        });
        methods.add_method("get", |lua, _, id: LuaValue| navigate::by_id(lua, &id));
        methods.add_method("getByPersistentId", |lua, _, pid: LuaValue| {
            navigate::by_persistent_id(lua, &pid)
        });
        methods.add_method("removed", |lua, _, component: LuaValue| {
            query::removed(lua, &component)
        });
        methods.add_method("tag", |lua, _, (inst, tag): (LuaValue, LuaValue)| {
            let id = instance_arg(&inst, "the instance")?;
            let tag = args::string(&tag, "world:tag's tag")?;
            access(lua, |_, mut a| {
                a.scene("tagging")?.tag(id, &tag).map_err(lua_error)
            })
        });
        methods.add_method("untag", |lua, _, (inst, tag): (LuaValue, LuaValue)| {
            let id = instance_arg(&inst, "the instance")?;
            let tag = args::string(&tag, "world:untag's tag")?;
            access(lua, |_, mut a| {
                a.scene("untagging")?.untag(id, &tag).map_err(lua_error)
            })
        });
        methods.add_method("hasTag", |lua, _, (inst, tag): (LuaValue, LuaValue)| {
            let id = instance_arg(&inst, "the instance")?;
            let tag = args::string(&tag, "world:hasTag's tag")?;
            access(lua, |_, a| Ok(a.arena().has_tag(id, &tag)))
        });
        methods.add_method("tagged", |lua, _, tag: LuaValue| {
            let tag = args::string(&tag, "world:tagged's tag")?;
            let ids: Vec<InstanceId> = access(lua, |_, a| Ok(a.arena().tagged(&tag).collect()))?;
            let table = lua.create_table_with_capacity(ids.len(), 0)?;
            for (k, id) in ids.into_iter().enumerate() {
                table.raw_set(k + 1, wrap_instance(lua, id)?)?;
            }
            Ok(table)
        });
        methods.add_method("setGroup", |lua, _, (inst, group): (LuaValue, LuaValue)| {
            let id = instance_arg(&inst, "the group's root")?;
            let group = match &group {
                LuaValue::Nil => None,
                LuaValue::String(name) => Some(name.to_str()?.to_owned()),
                other => {
                    return Err(mlua::Error::runtime(format!(
                        "a group is named by a string (or nil to unmark), not {}",
                        kind(other)
                    )));
                }
            };
            if let Some(name) = &group {
                check_group(lua, name)?;
            }
            access(lua, |_, mut a| {
                a.scene("marking an execution group")?
                    .set_execution_group(id, group.as_deref())
                    .map_err(lua_error)
            })
        });
    }
}

/// What `world` has, for the error of a member it lacks.
fn world_members() -> String {
    let names: Vec<&str> = super::types::WORLD_PROPERTIES
        .iter()
        .chain(super::types::WORLD_METHODS)
        .map(|(name, _)| *name)
        .collect();
    format!("world has {}", names.join(", "))
}

/// The group scripts added to the world whose VM this is, by name.
struct GroupScripts(Vec<String>);

/// Records that the world has a group script named `name` (see [`check_group`]).
pub(crate) fn register_group(lua: &Lua, name: &str) {
    match lua.app_data_mut::<GroupScripts>() {
        Some(mut groups) => {
            if !groups.0.iter().any(|g| g == name) {
                groups.0.push(name.to_owned());
            }
        }
        None => {
            lua.set_app_data(GroupScripts(vec![name.to_owned()]));
        }
    }
}

/// Refuses to mark a root with a group no group script runs: it would never run.
fn check_group(lua: &Lua, name: &str) -> mlua::Result<()> {
    let known: Vec<String> = lua
        .app_data_ref::<GroupScripts>()
        .map(|groups| groups.0.clone())
        .unwrap_or_default();
    if known.iter().any(|g| g == name) {
        return Ok(());
    }
    let have = if known.is_empty() {
        "the world has none".to_owned()
    } else {
        format!("the world has {}", known.join(", "))
    };
    Err(mlua::Error::runtime(format!(
        "no group script is named `{name}` (a place's groups/{name}.luau), so the root would never run: {have}"
    )))
}

/// A weak-valued table.
pub(crate) fn weak_table(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let meta = lua.create_table()?;
    meta.raw_set("__mode", "v")?;
    t.set_metatable(Some(meta))?;
    Ok(t)
}

/// Sets up the registry tables the API uses.
pub(crate) fn install_registry(lua: &Lua) -> mlua::Result<()> {
    lua.set_named_registry_value(WRAPPERS, weak_table(lua)?)?;
    lua.set_named_registry_value(HANDLES, lua.create_table()?)?;
    Ok(())
}

impl FromLua for Inst {
    fn from_lua(value: LuaValue, _: &Lua) -> mlua::Result<Self> {
        instance_arg(&value, "the argument").map(Inst)
    }
}
