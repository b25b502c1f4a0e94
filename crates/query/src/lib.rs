//! Strata's queries: which instances hold a combination of components (and tags, classes,
//! ancestors), cached, in instance-id order, with change filters.
//!
//! A [`QuerySpec`] names required and excluded components, required and excluded tags, a class
//! filter, an ancestor term, and added or changed filters on required components. A [`Query`]
//! picks the smallest required component set or tag as its driver, filters the candidates with
//! the other terms, and caches the matches sorted by id with each term's dense row. The cache is
//! reused while its stamp holds: field writes never invalidate it; adding or removing rows,
//! replacing the store, tag changes (for tag terms) and topology changes (for ancestry and
//! class terms) do, and so does running a tag, ancestry or class query against another arena
//! (an arena and its snapshots are one arena here: they share an
//! [`ArenaId`](strata_arena::ArenaId)). [`Query::uncached`] keeps nothing between calls and
//! builds its matches afresh every time, with the same results; the tests run every query
//! both ways.
//!
//! Each query keeps its own change baseline: the store tick captured when its previous pass
//! began, and the store it was captured from. A pass selects the rows added or changed after it,
//! through the store's per-set change log when that covers the baseline, so its cost follows the
//! number of changed rows. Ticks of different stores are never compared: when a pass runs
//! against another store than the previous one (a snapshot, a rollback, a replacement), its
//! [`ChangeWindow`] is `Unavailable` and it yields every match once.
//!
//! # Example
//!
//! ```
//! use strata_arena::{Arena, ClassId, Vec3};
//! use strata_component_store::{ComponentDef, FieldDef, InstanceRef, Store};
//! use strata_query::{Query, QuerySpec};
//!
//! let mut arena = Arena::standard();
//! let mut store = Store::new();
//! let position = store.install(ComponentDef::new("Position").field(FieldDef::vector("v", Vec3::ZERO)), arena.classes())?;
//! let velocity = store.install(ComponentDef::new("Velocity").field(FieldDef::vector("v", Vec3::ONE)), arena.classes())?;
//! let v = store.field(position, "v")?;
//! for _ in 0..3 {
//!     let id = arena.create(ClassId::ENTITY, None)?;
//!     let at = InstanceRef::of(&arena, id)?;
//!     store.insert(at, ClassId::ENTITY, position)?;
//!     store.insert(at, ClassId::ENTITY, velocity)?;
//! }
//!
//! // Position += Velocity.
//! let mut movers = Query::new(QuerySpec::new().with(position).with(velocity))?;
//! let pass = movers.run(&arena, &store)?;
//! let moved = pass.update::<Vec3, Vec3>(&mut store, (0, v), (1, v), |p, d| {
//!     Vec3::new(p.x + d.x, p.y + d.y, p.z + d.z)
//! })?;
//! assert_eq!(moved, 3);
//!
//! // A changed filter sees exactly those writes, once.
//! let mut changed = Query::new(QuerySpec::new().with(position).changed(position))?;
//! assert_eq!(changed.run(&arena, &store)?.len(), 3, "the first pass sees everything");
//! assert_eq!(changed.run(&arena, &store)?.len(), 0, "nothing changed since");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Parallel passes
//!
//! [`Pass::par_update`] and [`Pass::par_update_each`] cut a pass's selected matches into
//! contiguous [`Chunks`] run on the current rayon pool (choose one with `ThreadPool::install`).
//! Each row is written in place by exactly one task, with compare-before-write and full change
//! tracking, and the chunks' change log, dirty rows and events are merged in chunk order, so the
//! store ends as after the serial pass, for any thread count and any chunking. A value the
//! field cannot hold, in any chunk, refuses the whole pass before anything is stored.
//!
//! ```
//! use strata_arena::{Arena, ClassId};
//! use strata_component_store::{ComponentDef, FieldDef, InstanceRef, Store};
//! use strata_query::{Chunks, Query, QuerySpec};
//!
//! let mut arena = Arena::standard();
//! let mut store = Store::new();
//! let heat = store.install(ComponentDef::new("Heat").field(FieldDef::number("t", 20.0)), arena.classes())?;
//! let t = store.field(heat, "t")?;
//! let made = arena.create_many(ClassId::ENTITY, None, 10_000)?;
//! let ats: Vec<InstanceRef> = made.into_iter().map(|(id, slot)| InstanceRef::new(id, slot)).collect();
//! store.insert_many(&ats, ClassId::ENTITY, heat)?;
//!
//! let mut all = Query::new(QuerySpec::new().with(heat))?;
//! let mut cooled = Query::new(QuerySpec::new().with(heat).changed(heat))?;
//! cooled.run(&arena, &store)?;
//!
//! // Halve every Heat: four chunks of 2,500 rows on a two-thread pool.
//! let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build()?;
//! let written = pool.install(|| {
//!     let pass = all.run(&arena, &store)?;
//!     pass.par_update_each::<f64>(&mut store, (0, t), Chunks::Count(4), |t| t * 0.5)
//! })?;
//! assert_eq!(written, 10_000);
//! assert_eq!(store.get::<f64>(ats[9_999], heat, t)?, &10.0);
//! // Tracked as a serial pass is: one tick, and a changed filter sees every row once.
//! assert!(store.set(heat)?.changed_ticks().iter().all(|tick| tick == store.tick()));
//! assert_eq!(cooled.run(&arena, &store)?.len(), 10_000);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Caches and passes
//!
//! A query needs a positive driver (a required component or tag) and never scans every
//! instance. Its cache stamp is the store's identity, the structural revision of every
//! component the spec names, and, for a spec that consults the arena, the arena's identity with
//! the tag revision (tag terms) or the topology revision (ancestor and class terms). Revisions
//! are compared only within one arena lineage, where equal revisions mean equal state; this
//! holds across construction rollback, which stamps every touched domain with a revision newer
//! than any issued inside the batch. `Query::generation` advances exactly when the matches are
//! rebuilt; `Query::built_against` names the inputs they were built from, for cached and
//! uncached queries alike. A `Pass` checks the stamp once per column it binds or writer it
//! opens (`QueryError::StaleMatches` for another store or a structural change since), and a
//! bound column is checked once against its term's largest row, so walking it costs what a
//! slice walk costs.
//!
//! A parallel pass whose written rows ascend with the matches (a dense term, or a selection of
//! one) writes each chunk's stretch of the column in place through the store's `ParWriter`;
//! when removals have swapped rows out of id order, the values are computed in parallel and
//! stored in match order by one column writer. Either way the store ends exactly as after the
//! serial pass: the same values, ticks, change log, events and dirty state (a proptest compares
//! 1 to 8 threads under random chunking). The crate links rayon for parallel passes only; the
//! store links no thread pool. `RemovedReader` is the store's own `RemovalReader`, so what it
//! reports after a change of store is the store's contract.
//!
//! Start reading at `Query::rebuild` and `Query::select_changed` in `query.rs`; `spec.rs` holds
//! `QuerySpec` and `par.rs` the parallel passes.

#![warn(clippy::missing_errors_doc, clippy::missing_panics_doc)]

mod error;
mod par;
mod query;
mod spec;

pub use crate::error::QueryError;
pub use crate::par::Chunks;
pub use crate::query::{
    BuiltAgainst, ChangeWindow, Driver, MatchRef, Matches, Pass, PassIter, Query, TermColumn,
    TermValues,
};
pub use crate::spec::QuerySpec;
pub use strata_component_store::{RemovalReader as RemovedReader, Removals};
