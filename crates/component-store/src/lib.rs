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
//!
//! # Rows and what they cost
//!
//! The store depends on `strata-arena` only (ids, slots, classes, `BoundedJournal`, `Vec3`,
//! `Transform`) and never calls into an arena: its one read of arena state is
//! `InstanceRef::of`, and the arena's owner reports destruction (`Store::on_destroyed`, given
//! `Destruction::doomed`) and reclamation (`Store::on_reclaimed`, given `Drained::reclaimed`),
//! then follows the destroy requests the store returns. Beside the column values, a row costs
//! its id (8 bytes), slot (4), added and changed ticks (8 each), one dirty bit per field plus
//! one, and its sparse entry (4 bytes per slot the sparse array covers). In every set,
//! `sparse[slot] == row` exactly when `slots[row] == slot`; a removal swaps the last row into
//! the hole and writes the moved row's sparse entry before marking the removed slot absent.
//!
//! # The change log
//!
//! Each set logs row positions with the tick that put them there, in tick order, and knows
//! nothing at or before its base. For a baseline at or after the base, every row changed or
//! added after it is either logged after the baseline at its present position, or in the run of
//! rows at the end of the set added after it. A write logs its row once per tick; an add logs
//! nothing; a removal that moves a row changed since the base logs the row's new position. The
//! log holds at most a quarter of the rows (at least 64 entries, 12 bytes each): when full it
//! drops its older half and its base moves on, and readers with an older baseline scan. Every
//! column-writer pass, serial or parallel, prepares the log the same way at its first change,
//! so passes over the same rows log alike.
//!
//! # Writes
//!
//! Every write route (typed and dynamic writes, handles, `RowInit`, `BulkInit`, column writers,
//! list edits, and so the overlay's commit) checks its values through `InstalledDef` before
//! storing anything, so an enum index past its variants is refused everywhere and every type
//! mismatch names its field. A column writer makes its set private at its first actual change.
//! The reverse index keeps each target's holders sorted by holder and field: a destruction clears
//! the direct `Clear` references to a target in one pass, a tick per clear, then applies the
//! other policies entry by entry in that order.
//!
//! In a parallel column pass each task owns the values and changed ticks of its piece's rows
//! and the dirty words that start there; the shared dirty words, the dirty count, the change
//! log, events and the tick are recorded after every piece has finished, piece by piece. Enum
//! values are all checked before the first is stored, and reference fields go through the
//! serial column writer. When a piece's function panics, the rows its task stored are recorded
//! before the panic resumes; when a runner panics, the tracking is repaired afterwards (rows at
//! the pass's tick marked dirty, the dirty count recounted, the change log forgotten). The
//! serial column writers keep the same promise.
//!
//! # Snapshots, loads and redefinitions
//!
//! Every snapshot has a new `StoreId`; a store and its snapshots share a `Lineage`, and a
//! `SetSlot` loads only into a store of the lineage it was saved from, under the same
//! definition. Each copy of a set forks its removal log onto a timeline of its own.
//! `Store::restore` shares a snapshot's sets back under a new identity, with the snapshot's
//! tick. Loads and redefinitions keep change tracking: a kept row keeps its added tick and
//! pending dirty fields and takes a new changed tick only for the fields whose value changes; a
//! row a redefinition drops is removed like any removal. A load restores one set only, queues no
//! events, removes no dependents, and reuses its tracking buffers from one load to the next.
//!
//! # Observers and frame state
//!
//! Observers of a component run in registration order and get `&ComponentSet` only. Removing
//! row `r` while the last row `l` is another reports `on_removed(r..=r)`, then
//! `on_moved(id of l, l, r)`, then the deactivation if the set is now empty. `Store::insert` and
//! `Store::insert_many` report their rows when the returned `RowInit` or `BulkInit` drops. A
//! load or a redefinition reports every present row removed and the set deactivated, then the
//! set activated and every row added, with no moves; `Store::uninstall` reports every row
//! removed, then drops the observers. With no observer the cost is one branch.
//!
//! A row is dirty for the frame when its added or changed tick is after the tick of the last
//! `Store::end_frame`, when its instance was marked (`Store::mark_dirty`,
//! `Store::mark_rows_dirty`, or moved by a removal), or when its set is marked whole
//! (`Store::column_mut`, a load, a redefinition, more than `RESIDUE_CAPACITY` marks). A removal
//! leaves its component dirty even when it emptied the set. `Store::column_mut` refuses reference
//! and enum fields (`StoreError::UncheckedColumn`) and on drop records each row whose value
//! changed, at one new tick. `Store::structural_count` rises once per added range, removed range
//! and move; `Store::structural_since` is `StructuralMissed` for a count before the window, from
//! the future, or past a residue overflow (4,096 instances per list). `Store::end_frame` clears
//! dirty state and residue only, never ticks or change logs. A snapshot carries the frame state
//! at a cost independent of the frame's work.
//!
//! # Staged bulk operations
//!
//! A `Stage` is an ordered queue bound to one arena and one store value; `Stage::commit` applies
//! it in issue order. A staged spawn reserves its ids in the arena, so nothing of it is alive,
//! findable or observable before the commit. At the commit a spawn checks the arena and every
//! slot first, places default rows (each column extended once, at the tick it will publish at),
//! runs its initializer over `SpawnRows` (typed slices over exactly its rows), checks the enum
//! indexes written, and only then publishes: the arena's one event, the store's tick, one
//! `on_added` per component, then the `Added` events. Staged `set`, `remove` and `despawn` copy
//! their members when staged (`Query::capture` copies a query's), and members gone by then are
//! skipped and counted (`Published::skipped`). A bulk remove gathers the removed rows at the end
//! of the set and truncates every column once; a bulk despawn goes through
//! `Arena::destroy_many` and removes rows set by set before the reference policies run.
//!
//! Before applying anything, a commit checks every operation against what no staged operation
//! can change; a refusal there applies nothing and leaves the stage holding everything
//! (`CommitError::kept`). An operation failing while applying (an initializer's error, a panic
//! caught as `CommitFailure::Panic` and not resumed, a refusal that depends on earlier
//! operations) leaves the earlier ones published and nothing of its own, releases later spawns'
//! reservations and drops later operations; `CommitError` names each by `OpId`. A field's
//! `DefaultFactory` makes each new row's value once per row, in row order, on every path that
//! creates rows; conversions use the fixed default, and factories cannot make references.
//!
//! # Where to start reading
//!
//! `set.rs` (the layout; every field of `ComponentSet` is private there), then `store/mod.rs`
//! (`Store`, and `member_row`, the one row lookup) and the operations by responsibility under
//! `store/` (`define.rs`, `rows.rs`, `access.rs`, `bulk.rs`, `destroy.rs`, `observers.rs`,
//! `events.rs`, `orphans.rs`, `snapshot.rs`). Tracking is `track.rs`, `dirty.rs`, `changes.rs`
//! and `frame.rs`; parallel passes `par.rs`; staging `stage.rs`; definitions `def.rs`.

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
pub use crate::par::{ChunkRunner, InOrder, ParWriter, Piece, run_start};
pub use crate::set::{
    ComponentSet, InstanceRef, REMOVAL_LOG_CAPACITY, RefEntry, Removal, Tick, UNCHECKED_SLOT_LIMIT,
};
pub use crate::slots::SetSlot;
pub use crate::stage::{
    CommitError, CommitFailure, InitError, OpId, Published, SpawnRows, SpawnTicket, Stage,
    StageError,
};
pub use crate::store::{BulkInit, DestroyOutcome, Lineage, RowInit, Store, StoreEvent, StoreId};
pub use crate::track::{Ticks, TicksAfter};
pub use crate::value::{ListValue, MapKey, Value};
pub use crate::view::{ColumnWriter, View};
