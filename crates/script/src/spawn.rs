//! `world:spawn(count, components, options)`: many instances with their components in one
//! staged bulk spawn, published at once, instead of `Instance.new` and `AddComponent` per
//! instance.
//!
//! ```luau
//! local xs = table.create(1000, 0)
//! for i = 1, 1000 do xs[i] = i end
//! local spawned = world:spawn(1000, {
//!     Position = { x = xs, y = 0.5 },   -- a column of 1000 numbers, and one value for all
//!     Velocity = {},                    -- the component's defaults
//! }, { class = "Part", parent = world.workspace })
//! ```
//!
//! A field of a number, integer or boolean type takes one value for every instance or a column
//! (an array of exactly `count` values, the `k`-th for the `k`-th instance); a number field also
//! takes a buffer of `count` little-endian `f64`s, the fastest column to fill from Luau and to
//! read here. A field of any other type takes one value, converted as `AddComponent` converts
//! it. Components may be named
//! by name or by their component value. The options name the class (`"Entity"` when absent)
//! and the parent (none when absent).
//!
//! Invariant: a spawn is checked whole before anything changes (the count, every component,
//! field, value and column length, the class and the parent), then staged and committed as
//! one spawn: either every instance exists with every row, or the world is as it was. Only
//! serial code spawns (a spawn is a structural change).

use mlua::{Lua, Table, Value as LuaValue};
use strata::{Scene, WorldError};
use strata_arena::{ClassId, InstanceId};
use strata_component_store::{ComponentId, FieldId, FieldType, Value};

use super::access::lua_error;
use super::api::{access, access_structural, optional_instance, wrap_new_instances};
use super::args;
use super::convert::{from_lua, in_field, keyed_fields, kind, type_name};
use super::navigate::member;

/// The most instances one spawn creates: past it a count is a mistake, not a plan.
pub(crate) const MAX_SPAWN: usize = 1 << 20;

/// What one field of the spawned rows is filled with.
enum Fill {
    /// One value for every instance.
    Each(Value),
    /// A column of numbers, one per instance.
    Numbers(Vec<f64>),
    /// A column of integers, one per instance.
    Integers(Vec<i64>),
    /// A column of booleans, one per instance.
    Booleans(Vec<bool>),
}

/// The components of a spawn, each with what fills the fields it names.
type Fills = Vec<(ComponentId, Vec<(FieldId, Fill)>)>;

/// A checked spawn: the components and what each field is filled with.
struct Plan {
    count: usize,
    class: ClassId,
    parent: Option<InstanceId>,
    components: Fills,
}

/// `world:spawn(count, components, options)`: the new instances, in spawn order.
pub(crate) fn spawn(
    lua: &Lua,
    (count, components, options): (LuaValue, LuaValue, LuaValue),
) -> mlua::Result<Table> {
    let count = spawn_count(&count)?;
    let components = args::table(&components, "world:spawn's components")?;
    let options = args::optional_table(&options, "world:spawn's options")?;
    let (class, parent) = match &options {
        Some(options) => {
            check_option_keys(options)?;
            let class: LuaValue = options.raw_get("class")?;
            let class = if class.is_nil() {
                "Entity".to_owned()
            } else {
                args::string(&class, "world:spawn's class")?
            };
            let parent: LuaValue = options.raw_get("parent")?;
            (class, optional_instance(&parent, "world:spawn's parent")?)
        }
        None => ("Entity".to_owned(), None),
    };
    // Checked first, so a refused spawn leaves the script's columns as they were.
    let plan = access(lua, |_, mut a| {
        let scene = a.scene("spawning")?;
        Ok(Plan {
            count,
            class: scene.class_id(&class).map_err(lua_error)?,
            parent,
            components: plan_components(scene, &components, count)?,
        })
    })?;
    access_structural(lua, |lua, mut a| {
        publish(a.scene("spawning")?, plan, |ids| {
            wrap_new_instances(lua, ids)
        })
    })
}

/// The count of a spawn: a whole number from 0 to [`MAX_SPAWN`].
fn spawn_count(value: &LuaValue) -> mlua::Result<usize> {
    let n = match value {
        LuaValue::Integer(n) => *n as f64,
        LuaValue::Number(n) => *n,
        other => {
            return Err(mlua::Error::runtime(format!(
                "world:spawn's count must be a number, not {}",
                kind(other)
            )));
        }
    };
    if n.fract() != 0.0 || !(0.0..=MAX_SPAWN as f64).contains(&n) {
        return Err(mlua::Error::runtime(format!(
            "world:spawn's count must be a whole number from 0 to {MAX_SPAWN}, not {n}"
        )));
    }
    Ok(n as usize)
}

/// Refuses option keys other than `class` and `parent`.
fn check_option_keys(options: &Table) -> mlua::Result<()> {
    for pair in options.clone().pairs::<LuaValue, LuaValue>() {
        let (key, _) = pair?;
        let known = matches!(&key, LuaValue::String(s) if matches!(s.to_str()?.as_ref(), "class" | "parent"));
        if !known {
            return Err(mlua::Error::runtime(format!(
                "world:spawn's options take `class` and `parent`, not {}",
                member(&key)
            )));
        }
    }
    Ok(())
}

/// Every component of a spawn and what fills each field, checked against the store.
fn plan_components(scene: &Scene, components: &Table, count: usize) -> mlua::Result<Fills> {
    let mut out: Fills = Vec::new();
    for pair in components.clone().pairs::<LuaValue, LuaValue>() {
        let (key, values) = pair?;
        let c = match &key {
            LuaValue::String(name) => scene.component(&name.to_str()?).map_err(lua_error)?,
            LuaValue::UserData(_) => args::component_in(scene.store(), &key)?,
            other => {
                return Err(mlua::Error::runtime(format!(
                    "world:spawn's components are keyed by component (or its name), not {}",
                    kind(other)
                )));
            }
        };
        let name = scene.store().def(c).map_err(lua_error)?.name().to_owned();
        if out.iter().any(|(seen, _)| *seen == c) {
            return Err(mlua::Error::runtime(format!(
                "world:spawn names `{name}` twice"
            )));
        }
        let values = args::table(&values, &format!("the values for `{name}`"))?;
        out.push((c, plan_fields(scene, c, &name, &values, count)?));
    }
    out.sort_by_key(|(c, _)| *c);
    Ok(out)
}

/// What fills each field a component's value table names.
fn plan_fields(
    scene: &Scene,
    c: ComponentId,
    component: &str,
    values: &Table,
    count: usize,
) -> mlua::Result<Vec<(FieldId, Fill)>> {
    let fields = scene.store().def(c).map_err(lua_error)?.fields();
    let mut out = Vec::new();
    for (index, given) in keyed_fields(values, component, fields)? {
        let (key, ty) = (&*fields[index].name, &fields[index].ty);
        let fill = match (&given, ty) {
            (LuaValue::Buffer(buffer), FieldType::Number) => {
                buffer_fill(buffer, count).map_err(|e| in_field(&e, key, component))?
            }
            (
                LuaValue::Table(column),
                FieldType::Number | FieldType::Integer | FieldType::Boolean,
            ) => column_fill(column, ty, count).map_err(|e| in_field(&e, key, component))?,
            _ => match from_lua(&given, ty).map_err(|e| in_field(&e, key, component))? {
                Some(value) => {
                    // A reference must name a live instance, checked before anything is staged.
                    let arena = scene.arena();
                    scene
                        .store()
                        .def(c)
                        .map_err(lua_error)?
                        .check_references(FieldId::from_index(index as u16), &value, |t| {
                            arena.is_live(t)
                        })
                        .map_err(lua_error)?;
                    Fill::Each(value)
                }
                None => {
                    return Err(mlua::Error::runtime(format!(
                        "field `{key}` of `{component}` takes {}, not {}",
                        type_name(ty),
                        kind(&given)
                    )));
                }
            },
        };
        out.push((FieldId::from_index(index as u16), fill));
    }
    out.sort_by_key(|(f, _)| *f);
    Ok(out)
}

/// A column of `count` numbers in a buffer: `count` × 8 bytes, each an `f64` in little-endian
/// order (as `buffer.writef64` writes them at offsets 0, 8, 16, ...).
fn buffer_fill(buffer: &mlua::Buffer, count: usize) -> mlua::Result<Fill> {
    if buffer.len() != count * 8 {
        return Err(mlua::Error::runtime(format!(
            "a buffer of {} bytes for a spawn of {count} (a number column in a buffer holds 8 bytes per instance)",
            buffer.len()
        )));
    }
    let bytes = buffer.to_vec();
    Ok(Fill::Numbers(
        bytes
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes(b.try_into().expect("chunks of 8 bytes")))
            .collect(),
    ))
}

/// A column of exactly `count` values of a number, integer or boolean field.
fn column_fill(column: &Table, ty: &FieldType, count: usize) -> mlua::Result<Fill> {
    let len = column.raw_len();
    if len != count {
        return Err(mlua::Error::runtime(format!(
            "a column of {len} values for a spawn of {count} (give one value for all, or one per instance)"
        )));
    }
    Ok(match ty {
        FieldType::Number => Fill::Numbers(typed(column, ty, count, |v| match v {
            Value::Number(n) => Some(n),
            _ => None,
        })?),
        FieldType::Integer => Fill::Integers(typed(column, ty, count, |v| match v {
            Value::Integer(n) => Some(n),
            _ => None,
        })?),
        _ => Fill::Booleans(typed(column, ty, count, |v| match v {
            Value::Boolean(b) => Some(b),
            _ => None,
        })?),
    })
}

/// The `count` values of a column as a field of type `ty` takes them, each picked out of its
/// converted value by `pick`; a value the field cannot hold is an error naming its place.
fn typed<T>(
    column: &Table,
    ty: &FieldType,
    count: usize,
    pick: impl Fn(Value) -> Option<T>,
) -> mlua::Result<Vec<T>> {
    (1..=count)
        .map(|k| {
            let given: LuaValue = column.raw_get(k)?;
            from_lua(&given, ty)?.and_then(&pick).ok_or_else(|| {
                mlua::Error::runtime(format!(
                    "value {k} of the column is {}, not {}",
                    kind(&given),
                    type_name(ty)
                ))
            })
        })
        .collect()
}

/// Stages the checked spawn and commits it, returning what `wrap` made of the new instances'
/// ids (in spawn order). `wrap` runs before the commit, so when it fails (the Luau memory
/// limit) the stage is dropped with its reservation and no instance is published.
fn publish(
    scene: &mut Scene,
    plan: Plan,
    wrap: impl FnOnce(&[InstanceId]) -> mlua::Result<Table>,
) -> mlua::Result<Table> {
    let Plan {
        count,
        class,
        parent,
        components,
    } = plan;
    if count == 0 {
        return wrap(&[]);
    }
    let ids: Vec<ComponentId> = components.iter().map(|(c, _)| *c).collect();
    let mut stage = scene.stage();
    let ticket = scene
        .stage_spawn(&mut stage, count, class, parent, &ids, move |rows| {
            for (c, fields) in &components {
                for (f, fill) in fields {
                    match fill {
                        // A scalar for all fills its column; other kinds go through the
                        // checked setter, which keeps the reference index.
                        Fill::Each(Value::Number(n)) => rows.column_mut::<f64>(*c, *f)?.fill(*n),
                        Fill::Each(Value::Integer(n)) => rows.column_mut::<i64>(*c, *f)?.fill(*n),
                        Fill::Each(Value::Boolean(b)) => rows.column_mut::<bool>(*c, *f)?.fill(*b),
                        Fill::Each(value) => {
                            for k in 0..rows.len() {
                                rows.set_value(*c, k, *f, value.clone())?;
                            }
                        }
                        Fill::Numbers(xs) => rows.column_mut::<f64>(*c, *f)?.copy_from_slice(xs),
                        Fill::Integers(xs) => rows.column_mut::<i64>(*c, *f)?.copy_from_slice(xs),
                        Fill::Booleans(xs) => {
                            rows.column_mut::<bool>(*c, *f)?.copy_from_slice(xs);
                        }
                    }
                }
            }
            Ok(())
        })
        .map_err(lua_error)?;
    let ids: Vec<InstanceId> = (0..ticket.len()).filter_map(|k| ticket.id(k)).collect();
    let instances = wrap(&ids)?;
    if let Err(error) = scene.commit(&mut stage) {
        return Err(lua_error(WorldError::Commit(Box::new(error))));
    }
    Ok(instances)
}
