//! `ArenaError`: every way an arena operation can refuse.
//!
//! Invariant: an operation that returns an error has changed nothing observable (ids, slots,
//! links, revisions, journals, events), except where a variant says otherwise.

use crate::class::StateKind;
use crate::id::{IdRange, InstanceId, PersistentId};

/// Why an arena operation was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ArenaError {
    /// The id never existed here, or its slot has been reclaimed.
    #[error("instance {0} does not exist")]
    UnknownInstance(InstanceId),
    /// The instance was destroyed; it is at most a tombstone.
    #[error("instance {0} has been destroyed")]
    DestroyedInstance(InstanceId),
    /// No class with that name is registered.
    #[error("unknown class `{0}`")]
    UnknownClass(String),
    /// A class id from another registry.
    #[error("class id {0} is not registered")]
    UnknownClassId(u16),
    /// A class with that name is already registered.
    #[error("class `{0}` is already registered")]
    DuplicateClass(String),
    /// No family with that name is registered.
    #[error("unknown family `{0}`")]
    UnknownFamily(String),
    /// The class or family registry has no room left.
    #[error("the class registry is full")]
    RegistryFull,
    /// The move would make an instance its own ancestor.
    #[error("cannot parent {child} under {parent}: {parent} is {child} or one of its descendants")]
    Cycle {
        /// The instance being moved.
        child: InstanceId,
        /// The requested parent.
        parent: InstanceId,
    },
    /// The instance's parent is locked: it is a service, or its parent was locked by hand.
    #[error("{}", parent_locked(*.id, .service.as_deref()))]
    ParentLocked {
        /// The instance.
        id: InstanceId,
        /// Its class's name when the class makes it a service, whose parent is always locked.
        service: Option<String>,
    },
    /// The subtree to move or destroy holds an instance whose parent is locked (a service, or
    /// one locked by hand) below its root: the locked instance would move or die with it.
    #[error("cannot move or destroy {root}: {}", locked_below(*.locked, .service.as_deref()))]
    LockedDescendant {
        /// The root of the subtree the operation was asked for.
        root: InstanceId,
        /// The first locked instance below it, in pre-order.
        locked: InstanceId,
        /// The locked instance's class name when the class makes it a service.
        service: Option<String>,
    },
    /// The class does not allow that parent class.
    #[error("a {child_class} cannot be placed under a {parent_class}")]
    Containment {
        /// The class of the instance being placed.
        child_class: String,
        /// The class of the requested parent.
        parent_class: String,
    },
    /// The id is held by a live instance or a tombstone.
    #[error("instance id {0} is already in use")]
    IdInUse(InstanceId),
    /// The id lies in this arena's own range below its counter: it was already handed out and
    /// ids are never reused.
    #[error("instance id {0} was already issued by this arena and cannot be reused")]
    IdRetired(InstanceId),
    /// The id lies outside every id range: `u64::MAX`, one past the end of the client range.
    #[error("instance id {0} lies outside every id range")]
    IdOutOfRange(InstanceId),
    /// The id is held by an outstanding reservation ([`crate::Reservation`]).
    #[error("instance id {0} is held by a reservation")]
    IdReserved(InstanceId),
    /// The same id appears twice in one list of ids.
    #[error("instance id {0} is listed twice")]
    DuplicateId(InstanceId),
    /// A raw id value is zero or lies outside every id range.
    #[error("{0} is not a valid instance id")]
    InvalidRawId(u64),
    /// The reservation was already published or released (or its arena's reservations were
    /// otherwise closed): it holds nothing any more.
    #[error("the reservation is no longer held")]
    StaleReservation,
    /// The id range has no ids left.
    #[error("the {0:?} id range is exhausted")]
    IdSpaceExhausted(IdRange),
    /// The arena has no physical slots left (more than 2^32 instances).
    #[error("the arena has no free slots left")]
    SlotsExhausted,
    /// Services cannot be cloned or grafted: they are singletons of their place.
    #[error(
        "{id} is the service `{service}`, which cannot be copied: services are singletons of their place"
    )]
    NotCloneable {
        /// The instance.
        id: InstanceId,
        /// Its class's name (a service class in the source's or this arena's registry).
        service: String,
    },
    /// A graft met a class whose state kind differs between the source and this arena's
    /// registries, so the source's state has no place here.
    #[error(
        "class `{class}` carries {source_kind:?} state in the source but {destination_kind:?} here"
    )]
    StateKindMismatch {
        /// The class name both registries know.
        class: String,
        /// Its state kind in the source registry.
        source_kind: StateKind,
        /// Its state kind in this arena's registry.
        destination_kind: StateKind,
    },
    /// The instance's class carries a different kind of built-in state.
    #[error("instance {id} carries {actual:?} state, not {expected:?}")]
    WrongState {
        /// The instance written.
        id: InstanceId,
        /// The kind the operation needs.
        expected: StateKind,
        /// The kind the instance has.
        actual: StateKind,
    },
    /// Another instance already holds that persistent id.
    #[error("persistent id {pid:?} is already held by {holder}")]
    PersistentIdInUse {
        /// The contested persistent id.
        pid: PersistentId,
        /// Its current holder.
        holder: InstanceId,
    },
    /// A construction batch is open; the operation would break its rollback.
    #[error("a construction batch is open: {0}")]
    BatchInProgress(&'static str),
    /// The checkpoint's batch was already closed (directly, or by closing an outer batch).
    #[error("the checkpoint's batch is already closed")]
    StaleCheckpoint,
    /// The checkpoint, lifecycle-scope token or reservation was issued by another arena.
    #[error("the token was issued by another arena")]
    ForeignToken,
    /// A lifecycle scope needs a destroyed instance that has not been reclaimed.
    #[error("instance {0} is not a tombstone awaiting reclamation")]
    NotATombstone(InstanceId),
    /// An arena image is inconsistent in a way no other error names (a child listed before
    /// its parent, a GUID held twice).
    #[error("invalid arena image: {reason}")]
    InvalidImage {
        /// What is wrong.
        reason: String,
    },
    /// The lifecycle scope token does not match the open scopes.
    #[error("the lifecycle scope is not open")]
    ScopeNotOpen,
    /// Draining would reclaim tombstones while a lifecycle scope still reads them; or a save
    /// point was asked for, or restored, inside a lifecycle scope.
    #[error("cannot drain, save or restore while a lifecycle scope is open")]
    ScopeOpen,
    /// A save point was asked for, or restored, while a reservation is held.
    #[error("a reservation is held: publish or release it first")]
    ReservationHeld,
    /// An attribute or built-in reference would name an instance that is not live (never
    /// issued, destroyed, or reclaimed).
    #[error("{what} of {holder} cannot refer to {target}: it is not live")]
    NotLiveReference {
        /// The instance that would hold the reference.
        holder: InstanceId,
        /// What would hold it: an attribute (named so, in quotes) or a built-in property
        /// (`PrimaryPart`, `CameraSubject`).
        what: String,
        /// The instance named.
        target: InstanceId,
    },
}

/// The message of [`ArenaError::ParentLocked`].
fn parent_locked(id: InstanceId, service: Option<&str>) -> String {
    match service {
        Some(class) => format!("{id} is the service `{class}`, whose parent is locked"),
        None => format!("the parent of {id} is locked"),
    }
}

/// The reason of [`ArenaError::LockedDescendant`].
fn locked_below(locked: InstanceId, service: Option<&str>) -> String {
    match service {
        Some(class) => format!("it holds the service `{class}` ({locked}), whose parent is locked"),
        None => format!("its descendant {locked} has its parent locked"),
    }
}
