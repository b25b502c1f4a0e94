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
