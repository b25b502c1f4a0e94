//! Strata's parallel field writes: writers run at the same time without touching the store,
//! and their writes are committed afterwards in an order that does not depend on timing.
//!
//! Each writer gets an [`Overlay`] over a shared, read-only view of the store. It records its
//! writes keyed by component, row and field (with the instance the row held and a sequence
//! number), reads its own latest writes, and otherwise reads the state established before the
//! phase, never another writer's. [`Overlay::column`] gives a typed handle on one field for
//! loops over many rows. After all writers finish, [`commit`] applies their [`WriteSet`]s in
//! (tier, rank, sequence) order: execution groups first, by hierarchy order, then systems, by
//! scheduled position. A write whose row moved applies through the instance's present row; one
//! whose instance lost the component is a [`Refusal`], and so is one recorded against a
//! definition of its component that was replaced before the commit (each column remembers its
//! definition's allocation), which then writes nothing. Fields written by two writers are
//! [`Conflict`]s, each saying whether an [`OrderOracle`] (the scheduler) declares an order
//! between them. Structural operations are impossible while overlays borrow the store, and the
//! overlay's structural methods refuse with [`OverlayError::StructuralRefused`].
//! [`run_parallel`] runs writers on a rayon pool and commits; with a [`Spare`]
//! ([`run_parallel_with_spare`]) the memory of one frame's overlays is reused by the next.
//!
//! A writer that sweeps consecutive rows of a column (through [`OverlayColumn::write`] row
//! after row, or [`OverlayColumn::write_run`] at once) records only the values. When the
//! writers of a column swept rows that lie apart, and those rows have not moved since, the
//! commit writes the whole column in one parallel pass of the store's
//! [`ParWriter`](strata_component_store::ParWriter) (on the runner's pool, or the current rayon
//! pool for [`commit`]), recording the changes in commit order; the result is the same as
//! applying the writers one after another, with one tick for the column. Writers whose rows
//! may overlap go one after another, in commit order, as always.
//!
//! # Example
//!
//! ```
//! use strata_arena::{Arena, ClassId};
//! use strata_component_store::{ComponentDef, FieldDef, InstanceRef, Store, Value};
//! use strata_parallel_overlay::{NoOrder, Overlay, Writer, WriterRank, commit, run_parallel};
//!
//! let mut arena = Arena::standard();
//! let mut store = Store::new();
//! let score = store.install(ComponentDef::new("Score").field(FieldDef::integer("n", 0)), arena.classes())?;
//! let n = store.field(score, "n")?;
//! let id = arena.create(ClassId::ENTITY, None)?;
//! let at = InstanceRef::of(&arena, id)?;
//! store.add(at, ClassId::ENTITY, score, [])?;
//!
//! // Two systems write the same field; the later-scheduled one wins, on any thread count.
//! let writers = [
//!     Writer { rank: WriterRank::system(2, 20), work: 20i64 },
//!     Writer { rank: WriterRank::system(1, 10), work: 10i64 },
//! ];
//! let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build()?;
//! let report = run_parallel(&mut store, &pool, &writers, |value, overlay| {
//!     overlay.set(at, score, n, *value)
//! }, &NoOrder);
//! assert_eq!(*store.get::<i64>(at, score, n)?, 20);
//! assert_eq!(report.commit.conflicts.len(), 1);
//! assert!(!report.commit.conflicts[0].ordered);
//!
//! // A writer sweeping a column through a typed handle reads its own writes back.
//! let mut overlay = Overlay::new(WriterRank::system(0, 1), &store);
//! let mut column = overlay.column::<i64>(score, n)?;
//! for row in 0..column.len() {
//!     let doubled = column.get(row).copied().unwrap_or(0) * 2;
//!     column.write(row, doubled)?;
//! }
//! assert_eq!(column.get(0), Some(&40));
//! let set = overlay.finish();
//! commit(&mut store, vec![set], &NoOrder);
//! assert_eq!(*store.get::<i64>(at, score, n)?, 40);
//!
//! // Two writers each sweep their own rows as one run; the commit writes both in one pass.
//! let more: Vec<InstanceRef> = arena
//!     .create_many(ClassId::ENTITY, None, 99)?
//!     .into_iter()
//!     .map(|(id, slot)| InstanceRef::new(id, slot))
//!     .collect();
//! store.insert_many(&more, ClassId::ENTITY, score)?;
//! let halves = [
//!     Writer { rank: WriterRank::system(0, 1), work: 0..50 },
//!     Writer { rank: WriterRank::system(1, 2), work: 50..100 },
//! ];
//! let report = run_parallel(&mut store, &pool, &halves, |rows, overlay| {
//!     let mut column = overlay.column::<i64>(score, n)?;
//!     column.write_run(rows.start, rows.clone().map(|row| row as i64))
//! }, &NoOrder);
//! assert_eq!((report.commit.applied, report.commit.conflicts.len()), (100, 0));
//! assert_eq!(*store.get::<i64>(more[98], score, n)?, 99);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Rows cannot move under a running writer. While an overlay exists the store is borrowed
//! shared, and while [`run_parallel`] runs it is borrowed mutably, so no structural change of the
//! store (`add`, `insert`, `remove`, `redefine`, `uninstall`, `on_destroyed`) compiles in either
//! place; a running writer's only structural route is its overlay's, which refuses
//! ([`Overlay::add_component`], [`Overlay::remove_component`]). Once the writer has finished, the
//! same change compiles, and the commit applies each write through its instance's present row:
//!
//! ```
//! use strata_arena::{Arena, ClassId};
//! use strata_component_store::{ComponentDef, FieldDef, InstanceRef, Store};
//! use strata_parallel_overlay::{NoOrder, Overlay, WriterRank, commit};
//!
//! let mut arena = Arena::standard();
//! let mut store = Store::new();
//! let score = store.install(ComponentDef::new("Score").field(FieldDef::integer("n", 0)), arena.classes()).unwrap();
//! let n = store.field(score, "n").unwrap();
//! let spawn = |arena: &mut Arena| {
//!     let id = arena.create(ClassId::ENTITY, None).unwrap();
//!     InstanceRef::of(&arena, id).unwrap()
//! };
//! let (a, b) = (spawn(&mut arena), spawn(&mut arena));
//! store.add(a, ClassId::ENTITY, score, []).unwrap();
//! store.add(b, ClassId::ENTITY, score, []).unwrap();
//! let mut overlay = Overlay::new(WriterRank::system(0, 1), &store);
//! overlay.set(b, score, n, 5i64).unwrap();
//! let set = overlay.finish();
//! store.remove(a, score).unwrap(); // moves b's row
//! let report = commit(&mut store, vec![set], &NoOrder);
//! assert_eq!((report.relocated, *store.get::<i64>(b, score, n).unwrap()), (1, 5));
//! ```
//!
//! The same removal while the overlay is alive does not compile:
//!
//! ```compile_fail
//! use strata_arena::{Arena, ClassId};
//! use strata_component_store::{ComponentDef, FieldDef, InstanceRef, Store};
//! use strata_parallel_overlay::{NoOrder, Overlay, WriterRank, commit};
//!
//! let mut arena = Arena::standard();
//! let mut store = Store::new();
//! let score = store.install(ComponentDef::new("Score").field(FieldDef::integer("n", 0)), arena.classes()).unwrap();
//! let n = store.field(score, "n").unwrap();
//! let spawn = |arena: &mut Arena| {
//!     let id = arena.create(ClassId::ENTITY, None).unwrap();
//!     InstanceRef::of(&arena, id).unwrap()
//! };
//! let (a, b) = (spawn(&mut arena), spawn(&mut arena));
//! store.add(a, ClassId::ENTITY, score, []).unwrap();
//! store.add(b, ClassId::ENTITY, score, []).unwrap();
//! let mut overlay = Overlay::new(WriterRank::system(0, 1), &store);
//! overlay.set(b, score, n, 5i64).unwrap();
//! store.remove(a, score).unwrap(); // refused: the overlay borrows the store
//! let set = overlay.finish();
//! let report = commit(&mut store, vec![set], &NoOrder);
//! ```
//!
//! Nor does a writer of [`run_parallel`] that reaches for the store instead of its overlay:
//!
//! ```compile_fail
//! use strata_arena::{Arena, ClassId};
//! use strata_component_store::{ComponentDef, InstanceRef, Store};
//! use strata_parallel_overlay::{NoOrder, Writer, WriterRank, run_parallel};
//!
//! let mut arena = Arena::standard();
//! let mut store = Store::new();
//! let tag = store.install(ComponentDef::new("Tag"), arena.classes()).unwrap();
//! let id = arena.create(ClassId::ENTITY, None).unwrap();
//! let at = InstanceRef::of(&arena, id).unwrap();
//! let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
//! let writers = [Writer { rank: WriterRank::system(0, 1), work: () }];
//! run_parallel(&mut store, &pool, &writers, |_, _overlay| {
//!     store.add(at, ClassId::ENTITY, tag, [])?; // refused: run_parallel holds the store
//!     Ok(())
//! }, &NoOrder);
//! ```
//!
//! while the same writer through its overlay compiles, and is refused when it runs:
//!
//! ```
//! use strata_arena::{Arena, ClassId};
//! use strata_component_store::{ComponentDef, InstanceRef, Store};
//! use strata_parallel_overlay::{NoOrder, OverlayError, Writer, WriterRank, run_parallel};
//!
//! let mut arena = Arena::standard();
//! let mut store = Store::new();
//! let tag = store.install(ComponentDef::new("Tag"), arena.classes()).unwrap();
//! let id = arena.create(ClassId::ENTITY, None).unwrap();
//! let at = InstanceRef::of(&arena, id).unwrap();
//! let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
//! let writers = [Writer { rank: WriterRank::system(0, 1), work: () }];
//! let report = run_parallel(&mut store, &pool, &writers, |_, overlay| {
//!     overlay.add_component(at, ClassId::ENTITY, tag)?;
//!     Ok(())
//! }, &NoOrder);
//! assert!(matches!(report.errors[0].1, OverlayError::StructuralRefused(_)));
//! assert!(!store.has(at, tag));
//! ```
//!
//! # Dependencies
//!
//! The crate depends on `strata-component-store` and `strata-arena` only. It learns whether the
//! schedule orders two writers through the `OrderOracle` trait, so the scheduler and the
//! overlay stay independent of each other: `SystemOrder` wraps any test on two system ids (the
//! scheduler's `Plan::order_oracle`) and consults it only when both writers are systems, since a
//! group writer's id is an instance id. `NoOrder` declares nothing.
//!
//! # Logs
//!
//! A writer's log of one column is typed by the field (`f64`, `i64`, `bool`, `Arc<str>`, enum
//! index, `Vec3`, `Transform`, and `Value` for references and composites) and holds at most one
//! entry per row: the latest value, the instance the row held, and the sequence number of the
//! latest write. While every write lands on the row after the previous one, the log is a run of
//! values only; the first write off the run spills it into parallel arrays of row, instance,
//! value and sequence, where a repeated write replaces value and sequence in place and the
//! commit sorts only when that broke the sequence order. The row index exists only once a run
//! has spilled: a hash map while the writer has touched few rows, a zeroed array over the set
//! once it has touched more than one row in 1,024. Values are checked against the field's type
//! when recorded. Each column remembers the store and the set's structural revision it was
//! recorded against; while both hold at the commit, every logged row still holds its instance.
//!
//! # The commit
//!
//! The commit sorts the write sets by `(tier, rank, id)` itself and applies, column by column,
//! each column's writers in that order and each writer's entries in sequence order; the final
//! store depends only on the write sets, never on the order they arrive in (proptests hand them
//! over shuffled, and against a model applying each writer's final writes). Two sets under one
//! `WriterRank` have no order between them and apply in arrival order. A column whose logs all
//! still have their rows, ascending in sequence order, with the writers' row spans apart, is
//! written in one parallel `ParWriter` pass (each log a piece, cut every 65,536 rows, one tick for
//! the column). Otherwise each stretch of a scalar log whose rows still hold their instances
//! goes through one `ColumnWriter` pass, and references, composites and moved rows through the
//! store's per-value writes. Every write takes the store's own paths, so equal values change
//! nothing and ticks, change logs, dirty bits, events and the reverse index update as usual. Only
//! columns that two writers touched with overlapping row spans are scanned row by row for
//! conflicts. Everything a `Spare` holds is empty (cleared logs, row arrays of length zero with
//! their capacity kept), so an overlay taking from it behaves as one that allocates.
//!
//! Start reading at `Overlay::column` (`overlay.rs`), then the log's `record` (`log.rs`), then
//! `commit` (`commit.rs`).

#![warn(clippy::missing_errors_doc, clippy::missing_panics_doc)]

mod commit;
mod error;
mod log;
mod overlay;
mod runner;
mod spare;

pub use crate::commit::{
    CommitReport, Conflict, NoOrder, OrderOracle, Refusal, SystemOrder, commit, commit_with_spare,
    record_and_commit,
};
pub use crate::error::OverlayError;
pub use crate::log::Logged;
pub use crate::overlay::{GROUP_TIER, Overlay, OverlayColumn, SYSTEM_TIER, WriteSet, WriterRank};
pub use crate::runner::{RunReport, Writer, run_parallel, run_parallel_with_spare};
pub use crate::spare::Spare;
