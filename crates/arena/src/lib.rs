//! Strata's instance arena: the scene hierarchy every other layer hangs off.
//!
//! The arena owns instance identity ([`InstanceId`], never reused; [`Slot`], reused after
//! reclamation), the class registry, the nodes of the hierarchy with their built-in state,
//! copy-on-write [`Snapshot`]s, revision domains, bounded journals, queued events, destruction
//! (single and bulk) with tombstones and two-drain reclamation, reservations published at one
//! barrier, construction batches, and clone and graft.
//!
//! Invariants a downstream crate can rely on:
//! - An id resolves to the same instance for as long as it resolves at all; after reclamation
//!   (or the rollback of the batch that made it) it never resolves again, even when its slot
//!   holds a new instance, and no arena hands it out again.
//! - GUIDs and persistent ids of independently made arenas never meet (each arena draws its own
//!   seed; [`Arena::with_seed`] reproduces a run). They are mixed from counters by `strata-mix`
//!   and a 128-bit mixer of this crate, whose outputs never change.
//! - Errors name services as services: moving, destroying or copying one is refused with its
//!   class's name ([`ArenaError::ParentLocked`], [`ArenaError::NotCloneable`]).
//! - Parent and child links are symmetric, and the hierarchy has no cycles.
//! - World membership of every node follows from its own ancestry.
//! - A node's built-in state always has the kind its class declares; [`Arena::node_mut`] hands
//!   out the fields of that state, never the variant.
//! - A snapshot never changes after later writes to the arena it came from.
//! - Revisions, ids and journal sequence numbers only move forward, rollback included: a value
//!   observed once never comes to mean something else. A specialised setter given an equal value
//!   changes nothing.
//! - A refused operation changes nothing, multi-step ones (clone, graft, moves and destruction of
//!   subtrees holding a locked instance) included: they validate everything first.
//! - Checkpoints and lifecycle-scope tokens close only what they opened: a stale token, or one
//!   from another arena, is refused.
//! - Slots are released only by the drain after the one that reported their destruction, so
//!   slot-keyed storage beside the arena (the component store) can clean up on `reclaimed`.
//! - Nothing a [`Reservation`] holds is live, findable, in a children list or announced before
//!   [`Arena::publish`]; no creation takes its ids or slots, and [`Arena::release`] retires its
//!   ids and frees its slots. A publication and an [`Arena::destroy_many`] each queue one event
//!   and one journal entry for the whole batch.
//!
//! # Example
//!
//! ```
//! use strata_arena::{Arena, ClassId, Event, PartWriteKind, Transform, Vec3};
//!
//! let mut arena = Arena::standard();
//! let game = arena.create(ClassId::DATA_MODEL, None)?;
//! let workspace = arena.create(ClassId::WORKSPACE, Some(game))?;
//! let part = arena.create(ClassId::PART, Some(workspace))?;
//!
//! // A consumer remembers where it stopped reading the part-write log.
//! let cursor = arena.part_log().head();
//! let before = arena.snapshot();
//! arena.set_part_transform(part, Transform::from_position(Vec3::new(0.0, 5.0, 0.0)))?;
//! assert!(!arena.set_part_transform(part, Transform::from_position(Vec3::new(0.0, 5.0, 0.0)))?);
//!
//! let writes: Vec<_> = arena.part_writes_since(cursor)?.map(|(_, w)| *w).collect();
//! assert_eq!(writes.len(), 1);
//! assert_eq!(writes[0].kind, PartWriteKind::State);
//! assert_eq!(before.diff(&arena).changed, vec![part]);
//!
//! // Destruction leaves a tombstone until the second drain.
//! let destruction = arena.destroy(part)?;
//! assert!(!arena.is_live(part));
//! let first = arena.drain()?;
//! assert!(first.events.iter().any(|e| matches!(e, Event::Destroyed { .. })));
//! let name = arena.with_lifecycle_scope(part, |view| view.get(part).map(|n| n.name().to_owned()))?;
//! assert_eq!(name.as_deref(), Some("Part"));
//! let second = arena.drain()?;
//! assert_eq!(second.reclaimed, destruction.doomed);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Staged bulk creation and destruction
//!
//! ```
//! use strata_arena::{Arena, ClassId, Event};
//!
//! let mut arena = Arena::standard();
//! let folder = arena.create(ClassId::FOLDER, None)?;
//! arena.drain()?;
//!
//! // Reserve first: the ids and slots are held, nothing exists yet.
//! let reservation = arena.reserve(1000)?;
//! let first = reservation.first().expect("a non-empty reservation");
//! assert!(!arena.is_live(first));
//! // Slot-keyed storage fills its rows here, from `reservation.iter()` (id, slot).
//! assert_eq!(reservation.iter().len(), 1000);
//!
//! // One barrier publishes the whole batch: one event, one journal entry.
//! arena.check_publish(&reservation, ClassId::PART, Some(folder))?;
//! arena
//!     .publish(reservation, ClassId::PART, Some(folder))
//!     .map_err(|(_, error)| error)?;
//! assert_eq!(arena.children(folder).count(), 1000);
//! assert!(matches!(arena.pending_events(), [Event::CreatedRange { count: 1000, .. }]));
//!
//! // A cancelled batch gives its slots back; its ids are never issued again.
//! let cancelled = arena.reserve(10)?;
//! let retired = cancelled.first().expect("ten ids");
//! arena.release(cancelled)?;
//! assert!(arena.create(ClassId::PART, Some(folder))? > retired);
//!
//! // Bulk destruction: one event for every destroyed subtree.
//! arena.drain()?;
//! let doomed: Vec<_> = arena.children(folder).collect();
//! let destruction = arena.destroy_many(&doomed)?;
//! assert_eq!(destruction.doomed.len(), 1001);
//! assert!(matches!(arena.drain()?.events.as_slice(), [Event::DestroyedMany(_)]));
//! # Ok::<(), strata_arena::ArenaError>(())
//! ```
//!
//! # Identity and layout
//!
//! Ids are 64-bit: the server range counts up from 1, the client-local range from 2^52 up to
//! `u64::MAX - 1`; `u64::MAX` lies in no range and is refused (`ArenaError::IdOutOfRange`). A
//! live id resolves at slot `id - 1` when the node there carries it, and otherwise through the
//! sharded id index, which holds exactly the ids whose slot is not `id - 1`.
//!
//! Each arena's seed joins a per-process base (operating-system entropy through std's
//! `RandomState`, the clock and the process id) with its process-unique `ArenaId` through a
//! bijection. A GUID is a bijection of (seed, creation counter), derived on read from the
//! counter a node stores, so `Arena::with_seed` after creations changes no GUID already served.
//! A persistent id is a 64-bit mix of seed and counter, so a graft resolving references by
//! persistent id never binds to an unrelated instance of another arena (except with
//! birthday-bound probability). An arena rebuilt by `Arena::from_image` continues the image's
//! identity source (`ImageIdentity`) and hands out what the imaged arena would; an image without
//! one (a version-1 save) gets a seed of its own.
//!
//! A node is a 64-byte record (id, revision, creation counter, five 32-bit slot links, child
//! count, class, flags and one pointer) in a page of 1,024 records behind `Arc`. Its name,
//! attributes, state, tags and persistent id sit behind the pointer only once one of them
//! leaves its class's defaults, so an instance nobody wrote is its record and nothing else. A
//! snapshot clones one pointer per page plus the persistent indexes; the first write to a page
//! afterwards copies its records (64 KiB), and the first write to a node's data copies that
//! data. Bulk creation, subtree destruction and reclamation make each page private once per run
//! of consecutive slots. Links are slots of the same snapshot (a parent link and an ordered,
//! doubly linked sibling list), so a walk never resolves an id, and a link never names a vacant
//! slot: rollback unlinks every instance of a batch before it vacates any.
//!
//! A node is in the world exactly when some proper ancestor is a world container. A move
//! recomputes that for every node of the moved subtree, in pre-order, from its own parent; only
//! changes are logged (`EnteredWorld`, `LeftWorld`), and the collision revision moves only when a
//! collision class changed membership.
//!
//! # Revisions and journals
//!
//! Every change advances one arena-wide clock once and records the new value in each domain it
//! touches (topology, mutation and per node, tags, collision, animation, GUI layout, one per
//! family), so revisions of different domains compare. Creating, destroying or reparenting an
//! instance of an animation class moves the animation revision, as writes to it do.
//! `Arena::node_mut` marks the node written before handing it out. `BoundedJournal` is the one
//! bounded history (the part-write log, the topology journal, and the store's removal logs); a
//! cursor older than what it holds reads `HistoryUnavailable`.
//!
//! # Construction batches
//!
//! While a batch is open the arena accepts only construction: creating instances, linking them
//! under any live parent, and writing and moving instances of the innermost open batch. Rollback
//! restores the hierarchy exactly (slots, the free list, the tag and persistent-id indexes,
//! family lists, pending events) and moves everything a reader may have seen forward: ids handed
//! out stay retired, a batch that changed anything takes one more clock tick in every domain it
//! touched, and the journals retract its entries without reissuing their numbers (a cursor taken
//! inside the batch then reads `HistoryUnavailable`). A journal remembers at most as many
//! retracted stretches as it holds entries and forgets the older half past that. Rollback is
//! therefore exact for the hierarchy and conservative for caches.
//!
//! `Arena::create_many(n)` and `n` calls of `Arena::create` run the same steps and agree in
//! everything observable but the ticks and journal entries (one against `n`); a test checks it
//! over every standard class.
//!
//! # Reservations and bulk destruction
//!
//! `Arena::reserve(n)` takes the next `n` ids (one run) and `n` slots, recycled ones first. Fresh
//! reserved slots raise the slot high-water mark at once, so every slot below it is occupied,
//! free, or held by exactly one reservation, and no creation takes a reserved slot.
//! `Arena::reserve_at` and `reserve_at_raw` reserve given ids (for restoration) and refuse, taking
//! nothing, an id out of range, listed twice, in use, reserved or already issued.
//! `Arena::check_publish` makes every check `publish` makes; a refused publish returns the
//! reservation, still held. A token dropped unpublished is released at the arena's next drain,
//! reservation or restore; only a reservation a token still holds refuses `Arena::save_point`
//! (`ReservationHeld`). Reserving and publishing are refused inside a construction batch
//! (`BatchInProgress`), since a rollback could not take explicit ids back; releasing is allowed.
//!
//! `Arena::destroy_many` checks every listed id first, then destroys each root (a listed id not
//! inside another listed id's subtree) in list order, each as `Arena::destroy` would, under one
//! clock tick and one `DestroyedMany` event and journal entry. `BulkDestruction::doomed` is what
//! the equivalent `destroy` calls would return, concatenated (tested differentially).
//!
//! # Snapshots, images and save points
//!
//! `Snapshot::diff` lists a node as changed when its record differs (links, flags, the revision
//! of its latest state write) or its data is not the very same shared data, so a write back to
//! equal values still shows; pages both snapshots share are skipped. `ArenaImage` is the arena
//! as plain data for save files (live instances in pre-order, the identity source, the tombstones
//! of both reclamation queues, the queued events); `Arena::from_image` checks all of it and
//! rebuilds an arena whose next drains return what the imaged one's would. A `SavePoint` holds
//! the state as a shared snapshot with the free slots, reclamation queues, queued events and
//! journal heads; `Arena::restore` puts them back, keeps the id counters, seed and classes, moves
//! the clock on and retracts the journal entries written since.
//!
//! # Where to start reading
//!
//! `snapshot/record.rs` and `snapshot/mod.rs` (the data layout; `Snapshot` keeps every field
//! private, the only place records, links, counts and indexes change), then `arena.rs`: an
//! `Arena` derefs to its current snapshot and is composed of owned parts that each keep their
//! invariant in their own module (the id and slot allocators in `allocator.rs`, queued events and
//! journals in `outbox.rs`, reclamation in `lifecycle.rs`, checkpoints in `batch.rs`). `create.rs`
//! is the one creation path (single, bulk, explicit-id and copied); `write.rs`, `hierarchy.rs`,
//! `reserve.rs`, `copy.rs`, `image.rs` and `restore.rs` hold the rest.

#![warn(clippy::missing_errors_doc, clippy::missing_panics_doc)]

mod allocator;
mod arena;
mod batch;
mod class;
mod copy;
mod create;
mod error;
mod event;
mod hierarchy;
mod id;
mod image;
mod journal;
mod lifecycle;
mod math;
mod node;
mod outbox;
mod reserve;
mod restore;
mod revision;
mod snapshot;
mod state;
mod write;

pub use crate::arena::Arena;
pub use crate::batch::Checkpoint;
pub use crate::class::{
    ClassDescriptor, ClassId, ClassRegistry, Containment, FamilyId, FamilySet, StateKind,
};
pub use crate::copy::{CloneMap, ExternalRefs, Graft};
pub use crate::error::ArenaError;
pub use crate::event::{
    DestroyedBatch, Doomed, Event, Lineage, MovedIds, PartWrite, PartWriteKind, TopologyChange,
};
pub use crate::id::{ArenaId, Guid, IdRange, InstanceId, PersistentId, Slot};
pub use crate::image::{ArenaImage, ImageIdentity, ImageNode};
pub use crate::journal::{BoundedJournal, HistoryUnavailable, JournalRead};
pub use crate::lifecycle::{BulkDestruction, Destruction, DoomedList, Drained, LifecycleScope};
pub use crate::math::{Color3, Transform, UDim2, Vec3};
pub use crate::node::Node;
pub use crate::outbox::{PART_LOG_CAPACITY, TOPOLOGY_LOG_CAPACITY};
pub use crate::reserve::Reservation;
pub use crate::restore::SavePoint;
pub use crate::revision::{Revision, Revisions};
pub use crate::snapshot::{Ancestors, Children, Descendants, Snapshot, SnapshotDiff};
pub use crate::state::{
    AnimationState, AttrValue, Attributes, BuiltinState, CameraState, GuiElementState,
    GuiLayerState, LightState, ModelState, NodeData, NodeMut, PartState, SoundState, StateMut,
};
