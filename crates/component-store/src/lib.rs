//! Strata's component store: game-defined components kept beside the instance arena.
//!
//! Each component has a [`ComponentSet`]: a sparse array from arena slot to dense row, the dense
//! instance ids and slots, and one column per field (specialised `Vec`s for primitive types, so
//! iterating a field is a slice walk), beside each row's added and changed ticks and its dirty
//! fields (one bit per field). Rows are positions, never identities: removal swaps the last row
//! in. The [`Store`] holds the sets behind `Arc`, shared with snapshots and copied on write, and
//! keeps the mutation tick, observer events, orphans, and the hooks the arena's owner calls on
//! destruction and reclamation.
//!
//! Guarantees a downstream crate can rely on:
//! - A lookup by [`InstanceRef`] checks the row's instance id, so a removed component or a
//!   reused slot yields [`StoreError::MissingMembership`], never another instance's data.
//! - Every [`StoreError`] names components and fields as their definitions do (beside the ids,
//!   for programs); only what no definition names (an id not installed, a field position past
//!   the fields) is given by number.
//! - Make references with [`InstanceRef::of`], which asks the arena for the slot. An add (or a
//!   redefinition's row) never evicts another instance's row: a slot held by another instance is
//!   [`StoreError::SlotOccupied`], and [`Store::evict_stale`] is the explicit call for rows
//!   left by a destruction that was never reported. No slot makes the store allocate past the
//!   arena's slot count a checked reference carries, or, for references made by
//!   [`InstanceRef::new`], past geometric growth: twice what the store already holds or the rows
//!   the set will hold, at least [`UNCHECKED_SLOT_LIMIT`] ([`StoreError::SlotOutOfRange`]).
//! - The tick advances only for actual changes; an equal write changes nothing at all (a
//!   [`ColumnWriter`] that changes nothing does not even copy a set a snapshot shares). "Equal"
//!   means bit-identical ([`Value::identical`], [`Scalar::identical`]) on every write route:
//!   writing `-0.0` over `0.0` is a change, writing a NaN over the same NaN is not.
//! - [`ComponentSet::changes_since`] hands a changed filter every row changed or added after its
//!   baseline (with some to re-check), at a cost that follows those rows, or `None` when the
//!   set's change log no longer reaches back that far (scan instead).
//! - Each set's removal log holds at most [`REMOVAL_LOG_CAPACITY`] records; a
//!   [`RemovalReader`] whose cursor fell behind gets [`Removals::Missed`], not a partial list,
//!   and so does one reading another store, or a snapshot whose log went another way than the
//!   one the reader followed (a rollback).
//! - The reverse reference index is exact after every add, write, remove and destruction, and
//!   destruction policies check their holder is still present before acting.
//! - A snapshot never changes after later writes; list buffers are shared with it and copied on
//!   the first write.
//! - A parallel column pass ([`Store::par_writer`], [`ParWriter::update`]) writes disjoint
//!   [`Piece`]s of rows from separate tasks, each row by exactly one, and records their changes
//!   afterwards in the order the pieces were given, so the store ends the same whatever ran them
//!   ([`ChunkRunner`]; the store itself starts no thread).
//! - Lifecycle observers ([`Store::observe`], [`Observer`], example there) hear every row
//!   added, removed (values still readable) and moved, and each set's activation and
//!   deactivation; registration replays nothing, and snapshots carry no observers.
//! - Incremental consumers read what changed in the frame ([`Store::is_dirty`],
//!   [`Store::frame_dirty`]; reads mark nothing, writes mark what they change,
//!   [`Store::column_mut`] marks the whole column) and the structural residue after a count
//!   ([`Store::structural_since`], or [`StructuralMissed`]: refresh); [`Store::end_frame`]
//!   clears both.
//!
//! # Example
//!
//! ```
//! use strata_arena::{Arena, ClassId};
//! use strata_component_store::{ComponentDef, FieldDef, InstanceRef, RefPolicy, Store};
//!
//! let mut arena = Arena::standard();
//! let mut store = Store::new();
//! let health = store.install(
//!     ComponentDef::new("Health")
//!         .field(FieldDef::number("current", 100.0))
//!         .field(FieldDef::reference("attacker", RefPolicy::Clear)),
//!     arena.classes(),
//! )?;
//! let current = store.field(health, "current")?;
//! let attacker = store.field(health, "attacker")?;
//!
//! let hero = arena.create(ClassId::ENTITY, None)?;
//! let enemy = arena.create(ClassId::ENTITY, None)?;
//! // The arena pairs each id with its slot; the store checks every row it resolves by both.
//! let hero_ref = InstanceRef::of(&arena, hero)?;
//! store.insert(hero_ref, ClassId::ENTITY, health)?.set(attacker, Some(enemy))?;
//!
//! assert!(store.write(hero_ref, health, current, 75.0)?);
//! assert!(!store.write(hero_ref, health, current, 75.0)?, "an equal write changes nothing");
//!
//! // The arena's owner reports destruction; the reference is cleared by its policy.
//! let destruction = arena.destroy(enemy)?;
//! let outcome = store.on_destroyed(&destruction.doomed);
//! assert_eq!(outcome.cleared, vec![(hero, health, attacker)]);
//! assert_eq!(*store.get::<Option<_>>(hero_ref, health, attacker)?, None);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(clippy::missing_errors_doc, clippy::missing_panics_doc)]

mod changes;
mod column;
mod column_mut;
mod copy;
mod def;
mod dirty;
mod error;
mod frame;
mod handle;
mod list;
mod observe;
mod orphan;
mod par;
mod refs;
mod set;
mod shared;
mod slots;
mod stage;
mod store;
mod track;
mod value;
mod view;

pub use crate::changes::Changes;
pub use crate::column::{Column, Scalar};
pub use crate::column_mut::ColumnMut;
pub use crate::copy::CopyPair;
pub use crate::def::{
    ComponentDef, ComponentId, DefaultFactory, FieldDef, FieldId, FieldType, FormerNameConflict,
    InstalledDef, RefPolicy, StructField, check_former_names,
};
pub use crate::dirty::FieldMask;
pub use crate::error::StoreError;
pub use crate::frame::{FrameDirty, RESIDUE_CAPACITY, StructuralMissed, StructuralResidue};
pub use crate::handle::{Binding, ComponentHandle, RemovalReader, Removals};
pub use crate::list::ListAccessor;
pub use crate::observe::{Observer, ObserverId};
pub use crate::orphan::{FieldTypes, OrphanRecord, Orphans};
pub use crate::par::{ChunkRunner, InOrder, ParWriter, Piece};
pub use crate::set::{
    ComponentSet, InstanceRef, REMOVAL_LOG_CAPACITY, RefEntry, Removal, Tick, UNCHECKED_SLOT_LIMIT,
};
pub use crate::slots::SetSlot;
pub use crate::stage::{
    CommitError, CommitFailure, InitError, OpId, Published, SpawnRows, SpawnTicket, Stage,
    StageError,
};
pub use crate::store::{BulkInit, DestroyOutcome, Lineage, RowInit, Store, StoreEvent, StoreId};
pub use crate::value::{ListValue, MapKey, Value};
pub use crate::view::{ColumnWriter, View};
