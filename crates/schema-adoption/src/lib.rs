//! Strata's component schemas: game-defined components written as data in Luau, evaluated in
//! a sandbox, kept in step with the hierarchy, and adopted onto saved and previously typed rows.
//!
//! - [`SchemaVm`] evaluates one `ComponentDefinition` source in a restricted environment (field
//!   constructors, `component`, and the value operations listed below; no world, services,
//!   `require`, `getfenv`, `setfenv`, `loadstring`, `debug`, `os`, `io`, `setmetatable`, `next`
//!   or `pcall`) under a [`Budget`]: sources up to 1 MiB, 8 MiB of memory, 1,000,000 interrupts
//!   and 2 seconds by default. Every failure is a [`SchemaError`]; the VM stays usable.
//!   Evaluation is pure: the same source gives the same definition (or error) every time.
//! - [`Evaluator`] caches outcomes by source text (compared in full, never by a hash alone),
//!   failures included, within a [`CacheLimit`] of entries and bytes (1,024 outcomes and 32 MiB
//!   by default; the least recently used source is forgotten first), and counts evaluations,
//!   cache hits and evictions.
//! - [`SchemaSync`] finds the definitions in an arena, does nothing when the store is the one
//!   it last synced and neither the arena's topology and definition-family revisions nor the
//!   store's name revision moved, and otherwise installs, redefines, renames and removes only
//!   what changed. The component's name is always its definition's name, and a new name is
//!   recorded only once the store accepted it; a failure is reported by every later sync, and
//!   retried whenever something could have changed. The sync works on whichever store it is
//!   given: it checks what it knows against that store by name, so a loaded store or a
//!   snapshot is brought in step too (the renames and removals the sync has seen reach its
//!   components of those names; a component of a wanted name that the sync did not install
//!   is compared with the definition and kept or redefined). [`SchemaSync::adopt_orphans`]
//!   looks components up by name in the store it is given.
//! - [`meter::Meter`] is the Luau sandbox meter: an instruction budget counted at interrupts and
//!   a deadline read every so many interrupts (every one for schemas, whose library calls do up
//!   to a cap's worth of work between two), with sticky trips and the location of the first. The
//!   schema VM uses it, and so can any other sandboxed Luau VM (the engine's game VM).
//! - [`adopt()`] moves rows onto a definition: fields by name, then by former names; missing
//!   fields take their default, values that do not convert exactly are reset, unknown fields are
//!   dropped, and instances whose class the definition excludes stay unadopted. A
//!   [`ComponentReport`] counts every outcome with sample ids. Rows saved under an older version
//!   keep their old values as migration input (`Store::migration_input`).
//!
//! # Field constructors
//!
//! `number(default?, opts?)`, `integer(default?, opts?)`, `boolean(default?, opts?)`,
//! `text(default?, opts?)`, `enum({variants}, default?, opts?)`, `vector(x?, y?, z?, opts?)`,
//! `transform(opts?)`, `ref(opts?)`, `list(element, opts?)`, `map(key, value, opts?)`,
//! `struct({member = field, ...}, opts?)`, `optional(inner, opts?)`, `buffer(opts?)`. Options:
//! `formerNames = { "old", ... }` and, on references and lists of references,
//! `onDestroy = "clear" | "removeComponent" | "destroyHolder"`. A schema returns
//! `component { version?, classes?, requires?, observed?, fields = { ... } }`. Fields (and struct
//! members) are ordered by name, since Luau table order is not stable.
//!
//! Former names must be unambiguous: a field cannot name itself or another current field as a
//! former name, and two fields cannot share one.
//!
//! # The schema environment
//!
//! Besides the constructors, a schema sees exactly these names:
//!
//! | name | what it offers |
//! |---|---|
//! | `math` | `abs`, `ceil`, `clamp`, `floor`, `fmod`, `max`, `min`, `round`, `sign`, `sqrt`, `huge`, `pi` (no `random`, `randomseed` or `noise`) |
//! | `string` | `format`, `len`, `lower`, `rep`, `sub`, `upper`; method calls on strings (`s:upper()`) reach these and nothing else |
//! | `table` | `concat`, `insert` |
//! | `pairs` | walks a snapshot of a table in a fixed order: booleans (false first), numbers ascending, strings by their bytes; a table keyed by anything else (whose order would depend on addresses) is an error |
//! | `ipairs`, `select`, `type`, `typeof` | as in Luau |
//! | `tostring` | as in Luau for nil, booleans, numbers and strings; any other value gives its type name (`"table"`, `"function"`), never an address |
//! | `tonumber` | as in Luau |
//! | `error`, `assert` | raise a runtime error; a message that is not a string or number reads `(error object is a table value)` |
//!
//! Every string these operations take or make is at most [`TEXT_CAP`] (1 MiB) bytes;
//! `string.rep`, `string.format` and `table.concat` refuse a result that would be longer (the
//! bound is computed before the call). `table.insert` with a position refuses lists longer than
//! [`ITEM_CAP`] (65,536) elements, `table.concat` joins at most that many, and `pairs` walks at
//! most that many entries. `string.format` formats only nil, booleans, numbers and strings. An
//! operation past a cap fails with [`SchemaError::SizeCap`]. With the caps, one library call
//! does a bounded amount of work, so the deadline (read at every interrupt) is never overrun by
//! more than one call. One thing stays outside `pairs`' order: iterating a table directly
//! (`for k, v in t do`) follows Luau's internal order, which for tables keyed by tables or
//! functions depends on addresses.
//!
//! # Conversions
//!
//! When a row moves to a new definition, a value converts only if the conversion is exact; if
//! not, the field is reset to its default and the report says so.
//!
//! | from \ to | number | integer | boolean | text | enum | vector | transform | ref | list | map | struct | optional | buffer |
//! |---|---|---|---|---|---|---|---|---|---|---|---|---|---|
//! | number | yes | if whole and within ±2^53 | no | no | no | no | no | no | no | no | no | wraps | no |
//! | integer | if within ±2^53 | yes | no | no | no | no | no | no | no | no | no | wraps | no |
//! | boolean | no | no | yes | no | no | no | no | no | no | no | no | wraps | no |
//! | text | no | no | no | yes | if a variant's name | no | no | no | no | no | no | wraps | as UTF-8 bytes |
//! | enum | no | no | no | its variant's name (typed) | by variant name (typed), by index (untyped) | no | no | no | no | no | no | wraps | no |
//! | vector | no | no | no | no | no | yes | no | no | no | no | no | wraps | no |
//! | transform | no | no | no | no | no | no | yes | no | no | no | no | wraps | no |
//! | ref | no | no | no | no | no | no | no | yes | no | no | no | wraps | no |
//! | list | no | no | no | no | no | no | no | no | if every element converts | no | no | wraps | no |
//! | map | no | no | no | no | no | no | no | no | no | if every key and value converts | no | wraps | no |
//! | struct | no | no | no | no | no | no | no | no | no | no | by member name, if every old member survives (typed) | wraps | no |
//! | optional | its value, if set | its value, if set | its value, if set | its value, if set | its value, if set | its value, if set | its value, if set | its value, if set | its value, if set | its value, if set | its value, if set | inner converts | its value, if set |
//! | buffer | no | no | no | if valid UTF-8 | no | no | no | no | no | no | no | wraps | yes |
//!
//! "wraps" means the value becomes the optional's value (if it converts to the inner type).
//! "Typed" means the type the value was stored under is known: always for typed rows, and for
//! orphan records of typed rows, which keep their fields' types (`OrphanRecord::types`) so that
//! a definition removed and added back, or a row its class kept out for a while, loses nothing.
//! Values saved without their types ("untyped") keep enum indices and cannot convert structs.
//!
//! # Example
//!
//! ```
//! use strata_arena::{Arena, ClassId};
//! use strata_component_store::Store;
//! use strata_schema_adoption::SchemaSync;
//!
//! let mut arena = Arena::standard();
//! let definition = arena.create(ClassId::COMPONENT_DEFINITION, None)?;
//! arena.set_name(definition, "Health")?;
//! arena.set_definition_source(definition, r#"
//!     return component {
//!         fields = { current = number(100), max = number(100, { formerNames = { "maximum" } }) },
//!     }
//! "#)?;
//!
//! let mut store = Store::new();
//! let mut sync = SchemaSync::new()?;
//! let report = sync.sync(&arena, &mut store);
//! assert_eq!(report.added, vec!["Health".to_string()]);
//! let health = store.component("Health").unwrap();
//! assert_eq!(store.def(health)?.fields().len(), 2);
//!
//! // Nothing changed: the next sync does no work at all.
//! assert!(sync.sync(&arena, &mut store).skipped);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(clippy::missing_errors_doc, clippy::missing_panics_doc)]

mod adopt;
mod convert;
mod error;
mod eval;
mod library;
pub mod meter;
mod sandbox;
mod scan;
mod schema;
mod sync;

pub use crate::adopt::{
    Adopted, ComponentReport, FieldReport, Outcome, SourceField, SourceRow, adopt,
};
pub use crate::convert::convert;
pub use crate::error::{SchemaError, VmError};
pub use crate::eval::{CacheLimit, Evaluator};
pub use crate::library::{ITEM_CAP, TEXT_CAP};
pub use crate::sandbox::{Budget, SchemaVm};
pub use crate::schema::Schema;
pub use crate::sync::{SchemaSync, SyncDiagnostic, SyncReport, adopt_orphans_of};
