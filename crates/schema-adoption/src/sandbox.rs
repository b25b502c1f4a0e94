//! `SchemaVm`: evaluates component schemas in a restricted Luau environment.
//!
//! Each evaluation runs its chunk in a fresh environment table that holds only the field
//! constructors, `component`, and the value operations of `library.rs` (a named set of pure
//! functions with size caps). There is no world, no service, no `require`, `getfenv`,
//! `setfenv`, `loadstring`, `debug`, `os`, `io`, `collectgarbage`, `setmetatable`, `next`,
//! randomness, clock, or `pcall` (which could swallow a budget error). Method calls on strings
//! reach the same operations, and every shared table is read-only. Before it compiles, a source
//! goes through `scan.rs`, which routes every generic `for` through the environment's check that
//! it iterates a function (`pairs`, `ipairs`), never a table in its address-dependent order.
//!
//! Invariant: every evaluation is bounded: a source longer than the budget allows is refused
//! before it is compiled (compiling runs outside the other limits); memory to the budget above
//! what the VM used before it; an instruction budget counted at Luau's interrupts; and a
//! wall-clock deadline read at every interrupt (the sandbox [`Meter`], which says why every
//! interrupt), which the operations' caps make sufficient (between two interrupts only one
//! capped library call can run). Whatever happens, the limits
//! are lifted and garbage collected afterwards, so the VM is usable for the next evaluation.
//! Evaluation is pure: the environment offers nothing that differs between runs or carries
//! state from one evaluation into the next. Constructors mark the tables they build with
//! private keys, so a hand-written table is never mistaken for a field or a component; the keys
//! are read-only, so no evaluation can leave state behind in them. Turning the returned tables
//! into a [`Schema`] is bounded too: field types nest at most `MAX_NESTING` deep (a script can
//! make a field table refer to itself), and the host memory the schema takes is charged against
//! the same memory budget (a script can share one field or one long string many times over).
//! A schema's former names are unambiguous: none is a current field name, and no two fields
//! share one.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use mlua::{Lua, MultiValue, Table, Value as LuaValue};
use strata_arena::{Transform, Vec3};
use strata_component_store::{
    FieldDef, FieldType, ListValue, RefPolicy, StructField, Value, check_former_names,
};

use crate::error::{SchemaError, VmError};
use crate::library::{CapExceeded, Library};
use crate::meter::{Limit, Meter};
use crate::scan;
use crate::schema::Schema;

/// How much one evaluation may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// Luau interrupts (taken at calls and loop back-edges) before the evaluation is stopped.
    pub instructions: u64,
    /// Wall-clock time before the evaluation is stopped.
    pub time: Duration,
    /// Bytes the evaluation may allocate beyond what the VM held before it; the host-side
    /// schema built from what it returns is held to the same number of bytes.
    pub memory: usize,
    /// The longest source compiled, in bytes. Compiling runs before the interrupt and the
    /// memory limit can act, so a longer source is refused unread.
    pub source: usize,
}

impl Budget {
    /// The standard budget: 1,000,000 interrupts, 2 seconds, 8 MiB, sources up to 1 MiB.
    pub const STANDARD: Budget = Budget {
        instructions: 1_000_000,
        time: Duration::from_secs(2),
        memory: 8 * 1024 * 1024,
        source: 1024 * 1024,
    };
}

/// How deeply field types may nest. Converting a type recurses on the host's stack.
const MAX_NESTING: usize = 32;

/// Host bytes charged for each field or nested type converted, besides the text it copies.
const NODE_COST: usize = 64;

/// Host memory spent converting one schema, held to the evaluation's memory budget.
struct Tally {
    spent: usize,
    limit: usize,
}

impl Tally {
    fn charge(&mut self, bytes: usize) -> Result<(), SchemaError> {
        self.spent = self.spent.saturating_add(bytes);
        if self.spent > self.limit {
            Err(SchemaError::MemoryBudget(self.limit))
        } else {
            Ok(())
        }
    }
}

/// A Luau VM set up for evaluating schemas.
pub struct SchemaVm {
    lua: Lua,
    field_mark: Table,
    component_mark: Table,
    library: Library,
    meter: Arc<Meter>,
    budget: Budget,
}

impl std::fmt::Debug for SchemaVm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchemaVm")
            .field("budget", &self.budget)
            .finish_non_exhaustive()
    }
}

/// A failure of the VM itself, while it is being `what`.
fn vm_error(what: &'static str) -> impl FnOnce(mlua::Error) -> SchemaError {
    move |source| SchemaError::Vm(VmError::new(what, source))
}

impl SchemaVm {
    /// A VM with the standard budget.
    ///
    /// # Errors
    ///
    /// [`SchemaError::Vm`] when the Luau VM cannot be set up.
    pub fn new() -> Result<Self, SchemaError> {
        Self::with_budget(Budget::STANDARD)
    }

    /// A VM with a given budget.
    ///
    /// # Errors
    ///
    /// [`SchemaError::Vm`] when the Luau VM cannot be set up.
    pub fn with_budget(budget: Budget) -> Result<Self, SchemaError> {
        let lua = Lua::new();
        // The operations wrap the VM's own libraries, so they are built before sandboxing
        // replaces the globals.
        let library = Library::new(&lua).map_err(vm_error("being set up"))?;
        lua.sandbox(true).map_err(vm_error("being set up"))?;
        // The clock is read at every interrupt: a library call between two interrupts can do
        // up to its caps' worth of work (see `Meter` on the interval).
        let meter = Arc::new(Meter::new(NonZeroU32::MIN));
        meter.install(&lua);
        // Every evaluation shares the marks and can reach them by iterating a built table.
        let field_mark = lua.create_table().map_err(vm_error("being set up"))?;
        field_mark.set_readonly(true);
        let component_mark = lua.create_table().map_err(vm_error("being set up"))?;
        component_mark.set_readonly(true);
        Ok(Self {
            field_mark,
            component_mark,
            library,
            lua,
            meter,
            budget,
        })
    }

    /// The budget each evaluation gets.
    pub fn budget(&self) -> Budget {
        self.budget
    }

    /// Evaluates a schema source. `chunk_name` names the source in error messages (the
    /// definition's name, or a file name).
    ///
    /// # Errors
    ///
    /// Every way the source can fail: [`SchemaError::SourceTooLong`] before compiling;
    /// [`SchemaError::Syntax`], [`SchemaError::Runtime`], [`SchemaError::SizeCap`] and
    /// [`SchemaError::StackOverflow`] while running; a budget ([`SchemaError::InstructionBudget`],
    /// [`SchemaError::TimeBudget`], [`SchemaError::MemoryBudget`]); a returned value that is no
    /// component ([`SchemaError::NotAComponent`], [`SchemaError::Invalid`],
    /// [`SchemaError::FormerNames`]); and [`SchemaError::Vm`] when the VM itself fails.
    pub fn evaluate(&self, chunk_name: &str, source: &str) -> Result<Schema, SchemaError> {
        if source.len() > self.budget.source {
            return Err(SchemaError::SourceTooLong {
                length: source.len(),
                limit: self.budget.source,
            });
        }
        let source = scan::guard_iteration(source).map_err(|refused| SchemaError::Invalid {
            message: refused.message,
            line: Some(refused.line),
        })?;
        let used = self.lua.used_memory();
        self.lua
            .set_memory_limit(used + self.budget.memory)
            .map_err(vm_error("limiting its memory"))?;
        self.meter.start(self.budget.instructions, self.budget.time);

        let result = self.run(chunk_name, &source);

        // Lift the limits and collect whatever the evaluation left, failure or not.
        let trip = self.meter.stop();
        let lifted = self.lua.set_memory_limit(0);
        let collected = self.lua.gc_collect();
        let result = result.map_err(|e| match trip {
            Some(trip) => self.budget_error(trip.limit),
            None => self.classify(e),
        });
        lifted.map_err(vm_error("lifting its memory limit"))?;
        collected.map_err(vm_error("collecting garbage"))?;
        result?
    }

    fn run(
        &self,
        chunk_name: &str,
        source: &str,
    ) -> Result<Result<Schema, SchemaError>, mlua::Error> {
        let env = self.environment()?;
        let values: MultiValue = self
            .lua
            .load(source)
            .set_name(format!("={chunk_name}"))
            // Always compiled as text: Luau loads bytecode without verifying it, so a source
            // that begins like bytecode must never be handed to the VM as such.
            .set_mode(mlua::chunk::ChunkMode::Text)
            .set_environment(env)
            .call(())?;
        Ok(self.schema_from(values))
    }

    /// The error of a budget that stopped an evaluation.
    fn budget_error(&self, limit: Limit) -> SchemaError {
        match limit {
            Limit::Instructions => SchemaError::InstructionBudget(self.budget.instructions),
            Limit::Time => SchemaError::TimeBudget(
                u64::try_from(self.budget.time.as_millis()).unwrap_or(u64::MAX),
            ),
        }
    }

    /// Maps a Luau error of an evaluation no budget stopped to a schema error.
    fn classify(&self, error: mlua::Error) -> SchemaError {
        match error {
            mlua::Error::SyntaxError { message, .. } => SchemaError::Syntax {
                line: line_of(&message),
                message: strip_location(&message),
            },
            mlua::Error::MemoryError(_) => SchemaError::MemoryBudget(self.budget.memory),
            mlua::Error::CallbackError { traceback, cause } => match &*cause {
                mlua::Error::ExternalError(inner) => {
                    let message = inner.to_string();
                    let line = line_of(&traceback);
                    if inner.downcast_ref::<CapExceeded>().is_some() {
                        SchemaError::SizeCap { line, message }
                    } else {
                        SchemaError::Invalid { line, message }
                    }
                }
                other => {
                    let mut classified = self.classify(other.clone());
                    if let SchemaError::Runtime { line, .. } | SchemaError::Invalid { line, .. } =
                        &mut classified
                        && line.is_none()
                    {
                        *line = line_of(&traceback);
                    }
                    classified
                }
            },
            mlua::Error::RuntimeError(message) => {
                if message.contains("stack overflow") {
                    SchemaError::StackOverflow
                } else {
                    SchemaError::Runtime {
                        line: line_of(&message),
                        message: strip_location(&message),
                    }
                }
            }
            mlua::Error::StackError => SchemaError::StackOverflow,
            other => {
                let message = other.to_string();
                if message.contains("stack overflow") {
                    SchemaError::StackOverflow
                } else {
                    SchemaError::Runtime {
                        line: line_of(&message),
                        message: strip_location(&message),
                    }
                }
            }
        }
    }

    /// A fresh environment: constructors and the value operations, nothing else.
    // Long: one registration per constructor of the schema language, in the crate docs' order.
    fn environment(&self) -> mlua::Result<Table> {
        let lua = &self.lua;
        let env = lua.create_table()?;
        for (name, value) in &self.library.globals {
            env.raw_set(*name, value.clone())?;
        }
        let mark = self.field_mark.clone();
        let field = move |lua: &Lua, kind: &str, build: &dyn Fn(&Table) -> mlua::Result<()>| {
            let t = lua.create_table()?;
            t.raw_set(mark.clone(), true)?;
            t.raw_set("kind", kind)?;
            build(&t)?;
            Ok::<_, mlua::Error>(t)
        };
        let field = Arc::new(field);

        macro_rules! constructor {
            ($name:literal, |$lua:ident, $args:ident, $t:ident| $body:block) => {{
                let field = Arc::clone(&field);
                env.raw_set(
                    $name,
                    lua.create_function(move |$lua, $args: MultiValue| {
                        let $args: Vec<LuaValue> = $args.into_iter().collect();
                        field($lua, $name, &|$t: &Table| $body)
                    })?,
                )?;
            }};
        }

        constructor!("number", |_lua, args, t| {
            t.raw_set("default", arg(&args, 0))?;
            t.raw_set("opts", arg(&args, 1))
        });
        constructor!("integer", |_lua, args, t| {
            t.raw_set("default", arg(&args, 0))?;
            t.raw_set("opts", arg(&args, 1))
        });
        constructor!("boolean", |_lua, args, t| {
            t.raw_set("default", arg(&args, 0))?;
            t.raw_set("opts", arg(&args, 1))
        });
        constructor!("text", |_lua, args, t| {
            t.raw_set("default", arg(&args, 0))?;
            t.raw_set("opts", arg(&args, 1))
        });
        constructor!("enum", |_lua, args, t| {
            t.raw_set("variants", arg(&args, 0))?;
            t.raw_set("default", arg(&args, 1))?;
            t.raw_set("opts", arg(&args, 2))
        });
        constructor!("vector", |_lua, args, t| {
            t.raw_set("x", arg(&args, 0))?;
            t.raw_set("y", arg(&args, 1))?;
            t.raw_set("z", arg(&args, 2))?;
            t.raw_set("opts", arg(&args, 3))
        });
        constructor!("transform", |_lua, args, t| {
            t.raw_set("opts", arg(&args, 0))
        });
        constructor!("ref", |_lua, args, t| { t.raw_set("opts", arg(&args, 0)) });
        constructor!("list", |_lua, args, t| {
            t.raw_set("element", arg(&args, 0))?;
            t.raw_set("opts", arg(&args, 1))
        });
        constructor!("map", |_lua, args, t| {
            t.raw_set("key", arg(&args, 0))?;
            t.raw_set("value", arg(&args, 1))?;
            t.raw_set("opts", arg(&args, 2))
        });
        constructor!("struct", |_lua, args, t| {
            t.raw_set("members", arg(&args, 0))?;
            t.raw_set("opts", arg(&args, 1))
        });
        constructor!("optional", |_lua, args, t| {
            t.raw_set("inner", arg(&args, 0))?;
            t.raw_set("opts", arg(&args, 1))
        });
        constructor!("buffer", |_lua, args, t| {
            t.raw_set("opts", arg(&args, 0))
        });

        let component_mark = self.component_mark.clone();
        env.raw_set(
            "component",
            lua.create_function(move |lua, spec: LuaValue| {
                let LuaValue::Table(spec) = spec else {
                    return Err(invalid(
                        "component expects a table: component { fields = { ... } }",
                    ));
                };
                let t = lua.create_table()?;
                t.raw_set(component_mark.clone(), true)?;
                t.raw_set("spec", spec)?;
                Ok(t)
            })?,
        )?;
        Ok(env)
    }

    /// The schema a chunk returned, or why its return is not one.
    fn schema_from(&self, values: MultiValue) -> Result<Schema, SchemaError> {
        let values: Vec<LuaValue> = values.into_iter().collect();
        let shape = |found: String| SchemaError::NotAComponent { found };
        let [value] = values.as_slice() else {
            return Err(shape(format!("{} values", values.len())));
        };
        let LuaValue::Table(t) = value else {
            // Luau has one number type; whole numbers merely arrive as integers.
            let found = match value {
                LuaValue::Integer(_) | LuaValue::Number(_) => "number",
                other => other.type_name(),
            };
            return Err(shape(found.to_owned()));
        };
        let marked: bool = t
            .raw_get::<Option<bool>>(self.component_mark.clone())
            .ok()
            .flatten()
            .unwrap_or(false);
        if !marked {
            return Err(shape("a table not built with component { ... }".into()));
        }
        let spec: Table = t
            .raw_get("spec")
            .map_err(|e| invalid_schema(e.to_string()))?;
        self.component_spec(&spec)
    }

    fn component_spec(&self, spec: &Table) -> Result<Schema, SchemaError> {
        let mut tally = Tally {
            spent: 0,
            limit: self.budget.memory,
        };
        let mut schema = Schema {
            version: 1,
            fields: Vec::new(),
            classes: None,
            requires: Vec::new(),
            observed: false,
        };
        let mut fields = None;
        for pair in spec.pairs::<LuaValue, LuaValue>() {
            let (key, value) = pair.map_err(|e| invalid_schema(e.to_string()))?;
            let LuaValue::String(key) = key else {
                return Err(invalid_schema("component keys must be names".into()));
            };
            let key = key.to_str().map(|k| k.to_owned()).unwrap_or_default();
            match key.as_str() {
                "version" => {
                    let v = as_integer(&value)
                        .filter(|v| *v >= 1 && *v <= i64::from(u32::MAX))
                        .ok_or_else(|| {
                            invalid_schema("version must be a positive integer".into())
                        })?;
                    schema.version = v as u32;
                }
                "classes" => schema.classes = Some(names(&value, "classes", &mut tally)?),
                "requires" => schema.requires = names(&value, "requires", &mut tally)?,
                "observed" => {
                    schema.observed = match value {
                        LuaValue::Boolean(b) => b,
                        _ => return Err(invalid_schema("observed must be true or false".into())),
                    }
                }
                "fields" => fields = Some(value),
                "name" => {
                    return Err(invalid_schema(
                        "a schema cannot name itself: the component takes its definition's name"
                            .into(),
                    ));
                }
                other => return Err(invalid_schema(format!("unknown component key `{other}`"))),
            }
        }
        let Some(LuaValue::Table(fields)) = fields else {
            return Err(invalid_schema("component needs fields = { ... }".into()));
        };
        let mut named = Vec::new();
        for pair in fields.pairs::<LuaValue, LuaValue>() {
            let (key, value) = pair.map_err(|e| invalid_schema(e.to_string()))?;
            let LuaValue::String(key) = key else {
                return Err(invalid_schema("field names must be strings".into()));
            };
            let name = key
                .to_str()
                .map(|k| k.to_owned())
                .map_err(|_| invalid_schema("field names must be UTF-8".into()))?;
            tally.charge(NODE_COST + name.len())?;
            named.push((name, value));
        }
        named.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, value) in named {
            let field = self.field_def(&name, &value, &mut tally)?;
            schema.fields.push(field);
        }
        check_former_names(&schema.fields)?;
        Ok(schema)
    }

    /// A top-level field: its type, default, former names and policy.
    fn field_def(
        &self,
        name: &str,
        value: &LuaValue,
        tally: &mut Tally,
    ) -> Result<FieldDef, SchemaError> {
        let t = self.field_table(name, value)?;
        let (ty, default) = self.field_type(name, &t, 1, tally)?;
        let mut field = FieldDef::new(name, ty, default);
        if let Some(opts) = options(&t, name)? {
            for pair in opts.pairs::<LuaValue, LuaValue>() {
                let (key, value) = pair.map_err(|e| invalid_schema(e.to_string()))?;
                let key = match key {
                    LuaValue::String(k) => k.to_str().map(|k| k.to_owned()).unwrap_or_default(),
                    _ => String::new(),
                };
                match key.as_str() {
                    "formerNames" => {
                        field.former_names =
                            names(&value, &format!("field `{name}`: formerNames"), tally)?;
                    }
                    "onDestroy" => {
                        let policy = match string(&value).as_deref() {
                            Some("clear") => RefPolicy::Clear,
                            Some("removeComponent") => RefPolicy::RemoveComponent,
                            Some("destroyHolder") => RefPolicy::DestroyHolder,
                            _ => {
                                return Err(invalid_schema(format!(
                                    "field `{name}`: onDestroy must be \"clear\", \"removeComponent\" or \"destroyHolder\""
                                )));
                            }
                        };
                        if !field.ty.can_reference() {
                            return Err(invalid_schema(format!(
                                "field `{name}`: onDestroy needs a ref field or a list of refs"
                            )));
                        }
                        field.on_destroy = policy;
                    }
                    other => {
                        return Err(invalid_schema(format!(
                            "field `{name}`: unknown option `{other}`"
                        )));
                    }
                }
            }
        }
        Ok(field)
    }

    fn field_table(&self, name: &str, value: &LuaValue) -> Result<Table, SchemaError> {
        let LuaValue::Table(t) = value else {
            return Err(invalid_schema(format!(
                "field `{name}` must be built with a constructor such as number(0)"
            )));
        };
        let marked: bool = t
            .raw_get::<Option<bool>>(self.field_mark.clone())
            .ok()
            .flatten()
            .unwrap_or(false);
        if !marked {
            return Err(invalid_schema(format!(
                "field `{name}` must be built with a constructor such as number(0)"
            )));
        }
        Ok(t.clone())
    }

    /// A field table's type and default; `depth` counts the enclosing types, this one included.
    ///
    /// Checks the nesting depth, charges the node and refuses options on an inner type, then
    /// reads the kind: [`plain_type`] builds the kinds that hold no other field; list, map,
    /// struct and optional build their inner types through this function, one level deeper.
    fn field_type(
        &self,
        name: &str,
        t: &Table,
        depth: usize,
        tally: &mut Tally,
    ) -> Result<(FieldType, Value), SchemaError> {
        let bad = |what: &str| field_error(name, what);
        if depth > MAX_NESTING {
            return Err(bad(&format!(
                "field types nest more than {MAX_NESTING} deep (does a field table contain itself?)"
            )));
        }
        tally.charge(NODE_COST)?;
        if depth > 1 && !matches!(t.raw_get::<LuaValue>("opts"), Ok(LuaValue::Nil)) {
            return Err(bad(
                "options go on the outer field, as in list(ref(), { onDestroy = \"clear\" })",
            ));
        }
        let kind: String = t.raw_get("kind").map_err(|e| bad(&e.to_string()))?;
        let default: LuaValue = t.raw_get("default").unwrap_or(LuaValue::Nil);
        if let Some(plain) = plain_type(name, &kind, t, &default, tally)? {
            return Ok(plain);
        }
        Ok(match kind.as_str() {
            "list" => {
                let element = self
                    .field_table(name, &t.raw_get("element").unwrap_or(LuaValue::Nil))
                    .map_err(|_| bad("list needs an element field, such as list(number())"))?;
                let (element, _) = self.field_type(name, &element, depth + 1, tally)?;
                (
                    FieldType::List(Box::new(element)),
                    Value::List(ListValue::EMPTY),
                )
            }
            "map" => self.map_type(name, t, depth, tally)?,
            "struct" => self.struct_type(name, t, depth, tally)?,
            "optional" => {
                let inner = self
                    .field_table(name, &t.raw_get("inner").unwrap_or(LuaValue::Nil))
                    .map_err(|_| {
                        bad("optional needs an inner field, such as optional(number())")
                    })?;
                let (inner, _) = self.field_type(name, &inner, depth + 1, tally)?;
                (FieldType::Optional(Box::new(inner)), Value::Optional(None))
            }
            other => return Err(bad(&format!("unknown field kind `{other}`"))),
        })
    }

    /// The map step of [`SchemaVm::field_type`]: reads the key and value fields of the map table
    /// `t` at `depth` and returns the map type with an empty map as its default. Keys must be
    /// text, integer, boolean or enum.
    fn map_type(
        &self,
        name: &str,
        t: &Table,
        depth: usize,
        tally: &mut Tally,
    ) -> Result<(FieldType, Value), SchemaError> {
        let bad = |what: &str| field_error(name, what);
        let key = self
            .field_table(name, &t.raw_get("key").unwrap_or(LuaValue::Nil))
            .map_err(|_| bad("map needs a key field, such as map(text(), number())"))?;
        let value = self
            .field_table(name, &t.raw_get("value").unwrap_or(LuaValue::Nil))
            .map_err(|_| bad("map needs a value field, such as map(text(), number())"))?;
        let (key, _) = self.field_type(name, &key, depth + 1, tally)?;
        if !matches!(
            key,
            FieldType::Text | FieldType::Integer | FieldType::Boolean | FieldType::Enum(_)
        ) {
            return Err(bad("map keys must be text, integer, boolean or enum"));
        }
        let (value, _) = self.field_type(name, &value, depth + 1, tally)?;
        Ok((
            FieldType::Map(Box::new(key), Box::new(value)),
            Value::Map(Arc::default()),
        ))
    }

    /// The struct step of [`SchemaVm::field_type`]: reads every member field of the struct table
    /// `t` at `depth` (each named `name.member` in errors, its path charged to `tally`) and
    /// returns the struct type, members sorted by name, with the struct of the members'
    /// defaults as its default.
    fn struct_type(
        &self,
        name: &str,
        t: &Table,
        depth: usize,
        tally: &mut Tally,
    ) -> Result<(FieldType, Value), SchemaError> {
        let bad = |what: &str| field_error(name, what);
        let LuaValue::Table(members) = t.raw_get::<LuaValue>("members").unwrap_or(LuaValue::Nil)
        else {
            return Err(bad("struct needs a table of member fields"));
        };
        let mut list = Vec::new();
        for pair in members.pairs::<LuaValue, LuaValue>() {
            let (key, value) = pair.map_err(|e| bad(&e.to_string()))?;
            let member = string(&key).ok_or_else(|| bad("struct member names must be strings"))?;
            let path = format!("{name}.{member}");
            tally.charge(path.len() + member.len())?;
            let table = self.field_table(&path, &value)?;
            let (ty, default) = self.field_type(&path, &table, depth + 1, tally)?;
            list.push(StructField {
                name: member.into(),
                ty,
                default,
            });
        }
        list.sort_by(|a, b| a.name.cmp(&b.name));
        let ty = FieldType::Struct(list.into());
        let default = ty.zero();
        Ok((ty, default))
    }
}

/// The error for the field `name`: `what` is wrong with it.
fn field_error(name: &str, what: &str) -> SchemaError {
    invalid_schema(format!("field `{name}`: {what}"))
}

/// The plain-kind step of [`SchemaVm::field_type`]: returns the type and default of a field of
/// a kind that holds no other field (number, integer, boolean, text, enum, vector, transform,
/// ref, buffer), reading `default` (the field table's default, `nil` when absent) or, for a
/// vector, the components of `t`; `None` for any other kind. Text defaults and enum variants
/// are charged to `tally`.
fn plain_type(
    name: &str,
    kind: &str,
    t: &Table,
    default: &LuaValue,
    tally: &mut Tally,
) -> Result<Option<(FieldType, Value)>, SchemaError> {
    let bad = |what: &str| field_error(name, what);
    Ok(Some(match kind {
        "number" => {
            let v = match default {
                LuaValue::Nil => 0.0,
                other => as_number(other).ok_or_else(|| bad("number default must be a number"))?,
            };
            (FieldType::Number, Value::Number(v))
        }
        "integer" => {
            let v = match default {
                LuaValue::Nil => 0,
                other => as_integer(other)
                    .ok_or_else(|| bad("integer default must be a whole number"))?,
            };
            (FieldType::Integer, Value::Integer(v))
        }
        "boolean" => {
            let v = match default {
                LuaValue::Nil => false,
                LuaValue::Boolean(b) => *b,
                _ => return Err(bad("boolean default must be true or false")),
            };
            (FieldType::Boolean, Value::Boolean(v))
        }
        "text" => {
            let v = match default {
                LuaValue::Nil => String::new(),
                other => string(other).ok_or_else(|| bad("text default must be a string"))?,
            };
            tally.charge(v.len())?;
            (FieldType::Text, Value::Text(v.into()))
        }
        "enum" => enum_type(name, t, default, tally)?,
        "vector" => {
            let c = |k: &str| -> Result<f32, SchemaError> {
                match t.raw_get::<LuaValue>(k).unwrap_or(LuaValue::Nil) {
                    LuaValue::Nil => Ok(0.0),
                    other => as_number(&other)
                        .map(|v| v as f32)
                        .ok_or_else(|| bad("vector components must be numbers")),
                }
            };
            (
                FieldType::Vector,
                Value::Vector(Vec3::new(c("x")?, c("y")?, c("z")?)),
            )
        }
        "transform" => (
            FieldType::Transform,
            Value::Transform(Box::new(Transform::IDENTITY)),
        ),
        "ref" => (FieldType::Reference, Value::Reference(None)),
        "buffer" => (FieldType::Buffer, Value::Buffer(Arc::from(Vec::new()))),
        _ => return Ok(None),
    }))
}

/// The enum step of [`plain_type`]: reads the variants of the enum table `t` (charged to
/// `tally`; at least one) and returns the enum type with `default`, a variant name, as its
/// default (the first variant when `default` is `nil`).
fn enum_type(
    name: &str,
    t: &Table,
    default: &LuaValue,
    tally: &mut Tally,
) -> Result<(FieldType, Value), SchemaError> {
    let bad = |what: &str| field_error(name, what);
    let variants = names(
        &t.raw_get("variants").unwrap_or(LuaValue::Nil),
        &format!("field `{name}`: enum variants"),
        tally,
    )?;
    if variants.is_empty() {
        return Err(bad("an enum needs at least one variant"));
    }
    let index = match default {
        LuaValue::Nil => 0,
        other => {
            let d = string(other).ok_or_else(|| bad("enum default must be a variant name"))?;
            variants
                .iter()
                .position(|v| **v == *d)
                .ok_or_else(|| bad(&format!("enum default `{d}` is not a variant")))?
        }
    };
    Ok((FieldType::Enum(variants.into()), Value::Enum(index as u32)))
}

fn arg(args: &[LuaValue], index: usize) -> LuaValue {
    args.get(index).cloned().unwrap_or(LuaValue::Nil)
}

fn invalid(message: &str) -> mlua::Error {
    mlua::Error::external(InvalidShape(message.to_owned()))
}

/// A shape error raised inside a constructor, kept apart from Luau's own runtime errors.
#[derive(Debug)]
struct InvalidShape(String);

impl std::fmt::Display for InvalidShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidShape {}

fn invalid_schema(message: String) -> SchemaError {
    SchemaError::Invalid {
        message,
        line: None,
    }
}

fn options(t: &Table, name: &str) -> Result<Option<Table>, SchemaError> {
    match t.raw_get::<LuaValue>("opts").unwrap_or(LuaValue::Nil) {
        LuaValue::Nil => Ok(None),
        LuaValue::Table(opts) => Ok(Some(opts)),
        _ => Err(invalid_schema(format!(
            "field `{name}`: options must be a table such as {{ formerNames = {{ \"old\" }} }}"
        ))),
    }
}

fn as_number(value: &LuaValue) -> Option<f64> {
    match value {
        LuaValue::Number(n) => Some(*n),
        LuaValue::Integer(i) => Some(*i as f64),
        _ => None,
    }
}

/// A whole number below 2^53 in magnitude: beyond that, Luau's doubles are not exact.
/// Whole-valued Luau numbers arrive as `Integer`, so both forms take the same bound.
fn as_integer(value: &LuaValue) -> Option<i64> {
    match value {
        LuaValue::Integer(i) if i.unsigned_abs() < 1 << 53 => Some(*i),
        LuaValue::Number(n) if n.fract() == 0.0 && n.abs() < 9.007_199_254_740_992e15 => {
            Some(*n as i64)
        }
        _ => None,
    }
}

fn string(value: &LuaValue) -> Option<String> {
    match value {
        LuaValue::String(s) => s.to_str().ok().map(|s| s.to_owned()),
        _ => None,
    }
}

/// An array of names.
fn names(value: &LuaValue, what: &str, tally: &mut Tally) -> Result<Vec<Arc<str>>, SchemaError> {
    let LuaValue::Table(t) = value else {
        return Err(invalid_schema(format!("{what} must be a list of names")));
    };
    let mut out = Vec::new();
    for item in t.sequence_values::<LuaValue>() {
        let item = item.map_err(|e| invalid_schema(e.to_string()))?;
        let name = string(&item)
            .ok_or_else(|| invalid_schema(format!("{what} must be a list of names")))?;
        tally.charge(NODE_COST + name.len())?;
        out.push(Arc::from(name));
    }
    Ok(out)
}

/// The first `name:line:` location in a Luau message or traceback.
fn line_of(text: &str) -> Option<u32> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b':' {
            let start = i + 1;
            let mut end = start;
            while end < bytes.len() && bytes[end].is_ascii_digit() {
                end += 1;
            }
            if end > start && end < bytes.len() && bytes[end] == b':' {
                return text[start..end].parse().ok();
            }
        }
        i += 1;
    }
    None
}

/// A Luau message without its leading `name:line:` location.
fn strip_location(text: &str) -> String {
    let first_line = text.lines().next().unwrap_or(text);
    match line_of(first_line) {
        Some(line) => {
            let marker = format!(":{line}:");
            match first_line.find(&marker) {
                Some(at) => first_line[at + marker.len()..].trim().to_owned(),
                None => first_line.trim().to_owned(),
            }
        }
        None => first_line.trim().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_are_found_and_stripped() {
        assert_eq!(line_of("Health:3: attempt to index nil"), Some(3));
        assert_eq!(
            strip_location("Health:3: attempt to index nil"),
            "attempt to index nil"
        );
        assert_eq!(line_of("no location here"), None);
        assert_eq!(line_of("[string \"x\"]:12: boom"), Some(12));
    }
}
