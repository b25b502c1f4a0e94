//! The game API as Luau sees it: instance wrappers, component types, component handles, the
//! `world` object, and how every call reaches the world it runs against.
//!
//! Invariant: the API reaches the world only through [`access`], which applies pending column
//! writes and then goes through the access module (`access.rs`): the scene of a serial call
//! (lent to the VM for exactly the duration of the call), or the established state and the
//! write log of a parallel one; reads of instance data alone may go through
//! [`access_instances`], which leaves the handle lane's pending writes for later since no
//! such read can tell. Outside a call every API function refuses with an error. An instance
//! has one wrapper per VM while anything refers to it, so wrappers compare equal by identity;
//! a handle always reads live state: in the handle lane (the current match of a query loop,
//! see `access::HandleLane`) from the pass's columns, which nothing but the lane changes while
//! it is armed, and otherwise by resolving its row in the world; a write through it is a
//! checked store write (or, in parallel code, a logged one), the lane's checked as it is made
//! and applied at the next call that reaches the world. Reads of component values that change
//! nothing ([`access_reading`]) apply the lane's writes and leave it armed.

use mlua::{
    AnyUserData, FromLua, Function, Lua, MetaMethod, Table, UserData, UserDataFields,
    UserDataMethods, Value as LuaValue,
};
use strata_arena::{AttrValue, InstanceId};
use strata_component_store::{ComponentId, FieldId, FieldType, InstanceRef, Store};

use super::access::{Access, lua_error, with_world};
use super::args;
use super::args::{ComponentType, component_name};
use super::columns;
use super::convert::{field_values, from_lua, kind, to_lua, type_name};
use super::navigate;
use super::query;
use strata::WorldError;

use super::ScriptScene;

/// Runs `f` against the world the current call runs on (see [`with_world`]), after applying
/// any column writes the script made since the last API call, so the API always meets the
/// world as the script left it.
pub(crate) fn access<R>(
    lua: &Lua,
    f: impl FnOnce(&Lua, Access<'_>) -> mlua::Result<R>,
) -> mlua::Result<R> {
    columns::flush(lua)?;
    with_world(lua, f)
}

/// [`access`] for a call that changes the world's structure (adds or removes rows, creates,
/// clones or destroys instances): pending column writes are applied and every column handed
/// out goes stale (`columns::invalidate_all`) before `f` runs.
pub(crate) fn access_structural<R>(
    lua: &Lua,
    f: impl FnOnce(&Lua, Access<'_>) -> mlua::Result<R>,
) -> mlua::Result<R> {
    columns::invalidate_all(lua)?;
    with_world(lua, f)
}

/// [`access`] for a call that reads the world and changes nothing in it: pending column
/// writes are applied first, as for any call, but an armed handle lane stays armed (its
/// columns are as current after a read as before), so a loop that reads another instance's
/// field keeps its own handles on the lane.
pub(crate) fn access_reading<R>(
    lua: &Lua,
    f: impl FnOnce(&Lua, Access<'_>) -> mlua::Result<R>,
) -> mlua::Result<R> {
    columns::flush_keeping_lane(lua)?;
    super::access::with_world_armed(lua, f)
}

/// [`access`] for a read of instance data alone (names, classes, parents, children,
/// attributes, which components an instance holds, the clock), never of component values:
/// such a read meets the world alike before and after pending column writes are applied, so
/// while only the handle lane's are pending it leaves them pending and the lane armed (see
/// `access::HandleLane`); `f` must read nothing else.
pub(crate) fn access_instances<R>(
    lua: &Lua,
    f: impl FnOnce(&Lua, Access<'_>) -> mlua::Result<R>,
) -> mlua::Result<R> {
    if columns::handle_lane_open(lua) {
        super::access::with_world_armed(lua, f)
    } else {
        access(lua, f)
    }
}

// ----- Instances. -----

/// An instance wrapper: an instance id, with the instance API.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Inst(pub(crate) InstanceId);

/// The VM's wrapper caches, kept at hand (a named registry lookup costs more than the rest
/// of a cache hit): instance wrappers by id, and each component's handles by instance id
/// (weak tables, so an unreferenced wrapper or handle is collected).
struct WrapperCaches {
    instances: Table,
    handles: std::cell::RefCell<Vec<Option<Table>>>,
}

fn wrapper_caches(lua: &Lua) -> mlua::Result<mlua::AppDataRef<'_, WrapperCaches>> {
    lua.app_data_ref::<WrapperCaches>()
        .ok_or_else(|| mlua::Error::runtime("no wrapper caches"))
}

/// The wrapper of an instance (the same one while anything holds it).
pub(crate) fn wrap_instance(lua: &Lua, id: InstanceId) -> mlua::Result<AnyUserData> {
    let caches = wrapper_caches(lua)?;
    cached_wrapper(&caches.instances, id, || lua.create_userdata(Inst(id)))
}

/// The wrapper `cache` keeps for instance `id`, or a new one `make` makes, kept from now on:
/// the one-instance form of [`wrapper_array`].
fn cached_wrapper(
    cache: &Table,
    id: InstanceId,
    make: impl FnOnce() -> mlua::Result<AnyUserData>,
) -> mlua::Result<AnyUserData> {
    let key = id.get() as f64;
    if let LuaValue::UserData(ud) = cache.raw_get::<LuaValue>(key)? {
        return Ok(ud);
    }
    let ud = make()?;
    cache.raw_set(key, &ud)?;
    Ok(ud)
}

/// The wrappers of instances that have never had one (instances just created: ids are never
/// reused), as a Luau array in order, each kept as its instance's wrapper from now on.
pub(crate) fn wrap_new_instances(lua: &Lua, ids: &[InstanceId]) -> mlua::Result<Table> {
    let caches = wrapper_caches(lua)?;
    wrapper_array(lua, &caches.instances, ids, false, |id| {
        lua.create_userdata(Inst(id))
    })
}

/// The wrappers of `ids`' instances, as a Luau array in order: each the one it has (the same
/// object while anything holds it), or a new one kept from now on.
pub(crate) fn instance_array(lua: &Lua, ids: &[InstanceId]) -> mlua::Result<Table> {
    let caches = wrapper_caches(lua)?;
    wrapper_array(lua, &caches.instances, ids, true, |id| {
        lua.create_userdata(Inst(id))
    })
}

/// The handles of `ids`' instances' `component` (named `name`), as a Luau array in order:
/// each the one it has (the same object while anything holds it), or a new one kept from now
/// on.
pub(crate) fn handle_array(
    lua: &Lua,
    ids: &[InstanceId],
    component: ComponentId,
    name: &std::sync::Arc<str>,
) -> mlua::Result<Table> {
    wrapper_array(lua, &handle_cache(lua, component)?, ids, true, |id| {
        lua.create_userdata(Handle {
            id,
            component,
            name: name.clone(),
        })
    })
}

/// The wrappers of `ids` in a new Luau array, in order: with `lookup`, the one `cache` keeps
/// for an instance where it keeps one, else (and for every instance without `lookup`) one
/// `make` makes, which goes into `cache` by id. Lookups and table writes are made in Luau,
/// [`WRAP_BATCH`] instances a call: from Rust, a lookup takes a reference to what it finds and
/// a table write is a protected call of its own (the VM has a memory limit).
fn wrapper_array(
    lua: &Lua,
    cache: &Table,
    ids: &[InstanceId],
    lookup: bool,
    make: impl Fn(InstanceId) -> mlua::Result<AnyUserData>,
) -> mlua::Result<Table> {
    let helpers = super::host::helpers(lua)?;
    let (find, fill): (Function, Function) = (
        helpers.raw_get("find_wrappers")?,
        helpers.raw_get("fill_wrappers")?,
    );
    let out = lua.create_table_with_capacity(ids.len(), 0)?;
    for (k, batch) in ids.chunks(WRAP_BATCH).enumerate() {
        let first = k * WRAP_BATCH;
        // The batch's positions (0-based) whose wrapper is still to make.
        let missing: Vec<usize> = if lookup {
            let keys: Vec<f64> = batch.iter().map(|id| id.get() as f64).collect();
            let keys = lua.create_buffer(columns::bytes_of(&keys))?;
            let (count, at): (usize, mlua::Buffer) =
                find.call((&out, first, cache, keys, batch.len()))?;
            at.to_vec()
                .chunks_exact(8)
                .take(count)
                .filter_map(|b| b.try_into().ok().map(f64::from_le_bytes))
                .map(|i| i as usize)
                .collect()
        } else {
            (0..batch.len()).collect()
        };
        if missing.is_empty() {
            continue;
        }
        let keys: Vec<f64> = missing.iter().map(|&i| batch[i].get() as f64).collect();
        let slots: Vec<f64> = missing.iter().map(|&i| (first + i + 1) as f64).collect();
        let wrappers = missing
            .iter()
            .map(|&i| make(batch[i]))
            .collect::<mlua::Result<mlua::Variadic<AnyUserData>>>()?;
        fill.call::<()>((
            &out,
            cache,
            lua.create_buffer(columns::bytes_of(&keys))?,
            lua.create_buffer(columns::bytes_of(&slots))?,
            wrappers,
        ))?;
    }
    Ok(out)
}

/// Wrappers handed to Luau's `fill_wrappers` per call: well within the stack a call may use.
const WRAP_BATCH: usize = 1024;

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
pub(crate) fn optional_instance(value: &LuaValue, what: &str) -> mlua::Result<Option<InstanceId>> {
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
            access_instances(lua, |lua, a| {
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
            access_instances(lua, |lua, a| {
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
            access_instances(lua, |lua, a| {
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
        instance_meta_methods(methods);
        hierarchy_methods(methods);
        attribute_methods(methods);
        component_methods(methods);
    }
}

/// An instance's metamethods: members it lacks, its text, equality.
fn instance_meta_methods<M: UserDataMethods<Inst>>(methods: &mut M) {
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
        let name = access_instances(lua, |_, a| {
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
}

/// An instance's place in the hierarchy: life, destruction, copies, children, descendants,
/// ancestors, class, tags, persistent id.
fn hierarchy_methods<M: UserDataMethods<Inst>>(methods: &mut M) {
    methods.add_method("IsAlive", |lua, this, ()| {
        access_instances(lua, |_, a| Ok(a.arena().is_live(this.0)))
    });
    methods.add_method("Destroy", |lua, this, ()| {
        access_structural(lua, |_, mut a| {
            a.scene("destroying")?
                .destroy(this.0)
                .map(|_| ())
                .map_err(lua_error)
        })
    });
    methods.add_method("Clone", |lua, this, ()| {
        let copy = access_structural(lua, |_, mut a| {
            let scene = a.scene("cloning")?;
            let parent = scene.arena().node(this.0).map_err(lua_error)?.parent();
            scene.clone_subtree(this.0, parent).map_err(lua_error)
        })?;
        wrap_instance(lua, copy)
    });
    methods.add_method("GetChildren", |lua, this, ()| {
        let children = access_instances(lua, |_, a| {
            a.arena().node(this.0).map_err(lua_error)?;
            Ok(a.arena().children(this.0).collect::<Vec<_>>())
        })?;
        instance_array(lua, &children)
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
        let found = access_instances(lua, |_, a| {
            let arena = a.arena();
            arena.node(this.0).map_err(lua_error)?;
            Ok(arena
                .children(this.0)
                .find(|c| arena.node(*c).is_ok_and(|n| n.name() == name)))
        })?;
        found.map(|id| wrap_instance(lua, id)).transpose()
    });
}

/// An instance's attributes, one by name.
fn attribute_methods<M: UserDataMethods<Inst>>(methods: &mut M) {
    methods.add_method("GetAttribute", |lua, this, name: LuaValue| {
        let name = args::string(&name, "GetAttribute's name")?;
        access_instances(lua, |lua, a| {
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
}

/// An instance's components: adding, getting a handle, testing, removing.
fn component_methods<M: UserDataMethods<Inst>>(methods: &mut M) {
    methods.add_method(
        "AddComponent",
        |lua, this, (component, values): (LuaValue, LuaValue)| {
            let name = component_arg(&component)?;
            let values = args::optional_table(&values, "AddComponent's values")?;
            let c = access_structural(lua, |_, mut a| {
                let scene = a.scene("adding a component")?;
                let c = scene.component(&name).map_err(lua_error)?;
                let values = match &values {
                    Some(values) => {
                        let def = scene.store().def(c).map_err(lua_error)?;
                        field_values(values, &name, def.fields())?
                    }
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
        let held = access_instances(lua, |_, a| {
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
        access_instances(lua, |_, a| {
            let Some(c) = a.store().component(&name) else {
                return Err(lua_error(WorldError::UnknownComponent(name.to_string())));
            };
            let at = InstanceRef::of(a.arena(), this.0).map_err(lua_error)?;
            Ok(a.store().has(at, c))
        })
    });
    methods.add_method("RemoveComponent", |lua, this, component: LuaValue| {
        let name = component_arg(&component)?;
        access_structural(lua, |_, mut a| {
            let scene = a.scene("removing a component")?;
            let c = scene.component(&name).map_err(lua_error)?;
            scene.remove(this.0, c).map_err(lua_error)
        })
    });
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
    cached_wrapper(&handle_cache(lua, component)?, id, || {
        lua.create_userdata(Handle {
            id,
            component,
            name: name.clone(),
        })
    })
}

/// The cache of `component`'s handles, by instance id (made on first use): only
/// [`wrap_handle`] and [`handle_array`] put handles in it, each of `component`.
fn handle_cache(lua: &Lua, component: ComponentId) -> mlua::Result<Table> {
    let caches = wrapper_caches(lua)?;
    let mut handles = caches.handles.borrow_mut();
    let at = component.index();
    if handles.len() <= at {
        handles.resize(at + 1, None);
    }
    match &handles[at] {
        Some(t) => Ok(t.clone()),
        None => {
            let t = weak_table(lua)?;
            handles[at] = Some(t.clone());
            Ok(t)
        }
    }
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
        // Field access runs the helpers' Luau functions, which read and write the columns of
        // the running loop's pass where they can and call `handle_index` / `handle_newindex`
        // otherwise (see `access::HandleLane`).
        fields.add_meta_field_with(MetaMethod::Index, |lua| {
            super::host::helpers(lua)?.raw_get::<Function>("handle_index")
        });
        fields.add_meta_field_with(MetaMethod::NewIndex, |lua| {
            super::host::helpers(lua)?.raw_get::<Function>("handle_newindex")
        });
    }

    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_meta_method(MetaMethod::ToString, |_, this, ()| {
            Ok(format!("{} of {}", this.name, this.id))
        });
    }
}

/// A handle's field read, resolved in the world: `handle.key`.
pub(crate) fn handle_index(
    lua: &Lua,
    (handle, key): (AnyUserData, LuaValue),
) -> mlua::Result<LuaValue> {
    let this = handle.borrow::<Handle>()?;
    let key = field_key(&this, &key)?;
    access_reading(lua, |lua, mut a| {
        let (field, ty) = handle_field(a.store(), &this, &key)?;
        let value = a.read(this.id, this.component, field)?;
        to_lua(lua, &value, &ty)
    })
}

/// A handle's field write, checked and resolved in the world: `handle.key = given`.
pub(crate) fn handle_newindex(
    lua: &Lua,
    (handle, key, given): (AnyUserData, LuaValue, LuaValue),
) -> mlua::Result<()> {
    let this = handle.borrow::<Handle>()?;
    let key = field_key(&this, &key)?;
    access(lua, |_, mut a| {
        let (field, ty) = handle_field(a.store(), &this, &key)?;
        let value =
            from_lua(&given, &ty).map_err(|e| super::convert::in_field(&e, &key, &this.name))?;
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
}

// ----- The world object. -----

/// The `world` object scripts get.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WorldApi;

impl UserData for WorldApi {
    fn add_fields<F: UserDataFields<Self>>(fields: &mut F) {
        fields.add_field_method_get("workspace", |lua, _| {
            let id = access_instances(lua, |_, a| match a {
                Access::Serial(scene) => Ok(scene.workspace()),
                Access::Parallel(view) => Ok(view.par.workspace),
            })?;
            wrap_instance(lua, id)
        });
        fields.add_field_method_get("game", |lua, _| {
            let id = access_instances(lua, |_, a| match a {
                Access::Serial(scene) => Ok(scene.game()),
                Access::Parallel(view) => Ok(view.par.game),
            })?;
            wrap_instance(lua, id)
        });
        fields.add_field_method_get("frame", |lua, _| {
            access_instances(lua, |_, a| Ok(a.clock().frame as f64))
        });
        fields.add_field_method_get("time", |lua, _| {
            access_instances(lua, |_, a| Ok(a.clock().time))
        });
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
        methods.add_method("spawn", |lua, _, args: (LuaValue, LuaValue, LuaValue)| {
            super::spawn::spawn(lua, args)
        });
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
            instance_array(lua, &ids)
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
                match a
                    .scene("marking an execution group")?
                    .set_execution_group(id, group.as_deref())
                {
                    Ok(changed) => Ok(changed),
                    Err(super::Error::World(e)) => Err(lua_error(e)),
                    Err(e) => Err(mlua::Error::runtime(e.to_string())),
                }
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

/// Sets up the caches the API keeps in the VM.
pub(crate) fn install_caches(lua: &Lua) -> mlua::Result<()> {
    lua.set_app_data(WrapperCaches {
        instances: weak_table(lua)?,
        handles: std::cell::RefCell::new(Vec::new()),
    });
    Ok(())
}

impl FromLua for Inst {
    fn from_lua(value: LuaValue, _: &Lua) -> mlua::Result<Self> {
        instance_arg(&value, "the argument").map(Inst)
    }
}
