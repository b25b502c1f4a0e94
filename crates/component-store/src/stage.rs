//! `Stage`: staged bulk work and scalar edits on one store and one arena, published together
//! at an explicit barrier ([`Stage::commit`]).
//!
//! Invariant: a stage holds its operations in the order they were issued, each under an
//! [`OpId`] unique in the stage, and applies them in that order; every staged spawn holds an
//! arena reservation (ids reserved, nothing alive) from staging until it is published,
//! cancelled, discarded or released by a failed commit, and nothing else holds it (a stage
//! dropped with spawns in it drops their reservations, which the arena releases at its next
//! drain). Before applying anything a commit checks every operation against what cannot change
//! during it (the components, fields, classes and value types the store accepts), so such a
//! refusal applies nothing and the stage keeps everything. A spawn's rows exist only between
//! placement and publication inside one commit; if anything goes wrong in between they are
//! taken back before the commit returns. Member lists are copies taken at staging, so nothing
//! staged later (a spawn included) ever joins them.

use std::error::Error;
use std::ops::{Range, RangeInclusive};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};

use strata_arena::{Arena, ArenaError, ArenaId, ClassId, InstanceId, Reservation, Slot};

use crate::column::{Column, Scalar};
use crate::def::{ComponentId, FieldId, FieldType, InstalledDef};
use crate::error::StoreError;
use crate::set::{InstanceRef, Tick};
use crate::store::{DestroyOutcome, Store, StoreId};
use crate::value::Value;

static NEXT_STAGE: AtomicU64 = AtomicU64::new(1);

/// What an initializer may return as its error.
pub type InitError = Box<dyn Error + Send + Sync + 'static>;

type Init = Box<dyn FnMut(&mut SpawnRows<'_>) -> Result<(), InitError>>;

/// One staged operation, as a commit reports it: ids follow the order operations were
/// staged in, and are never reused within a stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OpId(u64);

impl OpId {
    /// The operation's position in its stage's issue order (0 for the first ever staged).
    pub fn get(self) -> u64 {
        self.0
    }
}

/// The slots a spawn's instances will occupy.
#[derive(Clone, Debug, PartialEq, Eq)]
enum TicketSlots {
    /// Consecutive fresh slots from the first.
    Run(Slot),
    /// Slots that include recycled ones, in spawn order.
    List(Vec<Slot>),
}

/// A staged spawn, as its caller holds it: the operation, the ids reserved for it and the
/// slots its instances will occupy, so later staged edits can name them before they exist.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpawnTicket {
    stage: u64,
    op: OpId,
    first: InstanceId,
    len: usize,
    ids: Option<Vec<InstanceId>>,
    slots: TicketSlots,
}

impl SpawnTicket {
    /// The spawn's operation.
    pub fn op(&self) -> OpId {
        self.op
    }

    /// The slot the `k`-th instance will occupy.
    pub fn slot(&self, k: usize) -> Option<Slot> {
        if k >= self.len {
            return None;
        }
        match &self.slots {
            TicketSlots::Run(first) => {
                Some(Slot::from_index(u32::try_from(first.index() + k).ok()?))
            }
            TicketSlots::List(slots) => slots.get(k).copied(),
        }
    }

    /// Every slot, in spawn order, when they are not one run of fresh slots (some were
    /// recycled from destroyed instances); `None` when they are `slot(0)`, `slot(0) + 1`, ...
    pub fn slots(&self) -> Option<&[Slot]> {
        match &self.slots {
            TicketSlots::Run(_) => None,
            TicketSlots::List(slots) => Some(slots),
        }
    }

    /// The `k`-th instance as the store addresses it, for edits staged after the spawn (they
    /// apply once it is published).
    pub fn instance(&self, k: usize) -> Option<InstanceRef> {
        Some(InstanceRef::new(self.id(k)?, self.slot(k)?))
    }

    /// Every instance of the spawn, in spawn order.
    ///
    /// # Panics
    ///
    /// Never: a ticket holds a slot for each of its ids (the `expect` states why).
    pub fn instances(&self) -> impl ExactSizeIterator<Item = InstanceRef> + '_ {
        (0..self.len).map(|k| {
            self.instance(k)
                .expect("k is below the spawn's length, and a ticket holds a slot per id")
        })
    }

    /// The first reserved id.
    pub fn first(&self) -> InstanceId {
        self.first
    }

    /// Every reserved id, in spawn order, when they are not the `len` consecutive ids from
    /// [`SpawnTicket::first`]; `None` when they are.
    pub fn ids(&self) -> Option<&[InstanceId]> {
        self.ids.as_deref()
    }

    /// How many instances the spawn adds.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: a spawn adds at least one instance.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The `k`-th reserved id.
    pub fn id(&self, k: usize) -> Option<InstanceId> {
        if k >= self.len {
            return None;
        }
        match &self.ids {
            Some(ids) => ids.get(k).copied(),
            None => InstanceId::new(self.first.get() + k as u64),
        }
    }
}

/// Why an operation could not be staged. Nothing was staged or reserved.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StageError {
    /// The arena given is not the one the stage was made for.
    #[error("the stage belongs to another arena")]
    ForeignArena,
    /// The ticket was not issued by this stage, or its spawn was published, cancelled or
    /// dropped already.
    #[error("no staged spawn matches the ticket")]
    UnknownTicket,
    /// No operation of this stage has the id: it was applied, cancelled or dropped already.
    #[error("no staged operation has the id {0:?}")]
    UnknownOp(OpId),
    /// A spawn of no instances.
    #[error("a spawn adds at least one instance")]
    EmptySpawn,
    /// The arena refused the reservation (ids or slots exhausted, an id alive or retired, a
    /// bad class or parent).
    #[error(transparent)]
    Arena(#[from] ArenaError),
}

/// Why a commit stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CommitFailure {
    /// The arena given is not the one the stage was made for; nothing was applied and the
    /// stage keeps its operations.
    #[error("the stage belongs to another arena")]
    ForeignArena,
    /// The store given is not the one the stage was made for (a snapshot is another store);
    /// nothing was applied and the stage keeps its operations.
    #[error("the stage belongs to another store")]
    ForeignStore,
    /// A spawn's initializer returned an error.
    #[error("a spawn's initializer failed: {0}")]
    Init(InitError),
    /// A spawn's initializer panicked; the panic is caught and not resumed, and this is its
    /// message.
    #[error("a spawn's initializer panicked: {0}")]
    Panic(String),
    /// The store refused the operation (a class not allowed, an occupied slot, a value that
    /// does not fit, an unknown component or field, an initializer's out-of-range value).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The arena refused the operation (a parent gone, a locked instance).
    #[error(transparent)]
    Arena(#[from] ArenaError),
}

/// What a commit published.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Published {
    /// The operations applied, in the order they applied (issue order).
    pub applied: Vec<OpId>,
    /// Instances spawned.
    pub spawned: usize,
    /// Rows added by `set` batches (members that lacked the component).
    pub added: usize,
    /// Members of `set` batches that already held the component (their fields replaced; an
    /// equal value changes nothing).
    pub replaced: usize,
    /// Rows removed by `remove` batches (dependents' rows not counted).
    pub removed: usize,
    /// Instances destroyed by `despawn` batches and `destroy` edits, subtrees included.
    pub despawned: usize,
    /// Batch members skipped: gone by the time their batch applied (destroyed, or their slot
    /// taken by another instance), or, for `remove`, not holding the component.
    pub skipped: usize,
    /// Scalar edits applied.
    pub edits: usize,
    /// What the store did for the destroyed instances: their rows, references cleared, and
    /// holders whose `DestroyHolder` policy asks the arena's owner to destroy them.
    pub destroyed: DestroyOutcome,
}

/// A commit that stopped: exactly what survived, by operation.
///
/// Either nothing was applied and the stage keeps every operation (`kept`: a foreign arena or
/// store, or an operation naming a component, field, class or value the store refuses, all
/// checked before anything applies), or the commit stopped at `failed` while applying (an
/// initializer's error or panic, or a refusal that depends on what the operations before it
/// did: a member without the component, a parent destroyed by then): the operations in
/// `published.applied` stay published, nothing of the failing one remains, and every later
/// operation is dropped (`dropped`), the reservations of the failing and later spawns released
/// (`released`).
#[derive(Debug, thiserror::Error)]
#[error("staged operation {failed:?} failed after {} were published: {cause}", published.applied.len())]
pub struct CommitError {
    /// What the operations before the failing one published (they stay).
    pub published: Box<Published>,
    /// The failing operation (`None` for a foreign arena or store).
    pub failed: Option<OpId>,
    /// Why it failed.
    pub cause: CommitFailure,
    /// The spawns whose reservations were released: the failing one (if a spawn) and every
    /// later one.
    pub released: Vec<OpId>,
    /// The operations after the failing one, dropped without being applied.
    pub dropped: Vec<OpId>,
    /// Whether nothing was applied and the stage still holds every operation.
    pub kept: bool,
}

enum Op {
    Spawn(Box<Spawn>),
    Set {
        members: Vec<InstanceRef>,
        component: ComponentId,
        values: Vec<(FieldId, Value)>,
    },
    Remove {
        members: Vec<InstanceRef>,
        component: ComponentId,
    },
    Despawn {
        members: Vec<InstanceRef>,
    },
    Write {
        at: InstanceRef,
        component: ComponentId,
        field: FieldId,
        value: Value,
    },
    Add {
        at: InstanceRef,
        class: ClassId,
        component: ComponentId,
        values: Vec<(FieldId, Value)>,
    },
    RemoveOne {
        at: InstanceRef,
        component: ComponentId,
    },
    Destroy {
        id: InstanceId,
    },
}

struct Spawn {
    reservation: Reservation,
    class: ClassId,
    parent: Option<InstanceId>,
    components: Vec<ComponentId>,
    init: Option<Init>,
}

/// An ordered queue of staged work bound to one store and one arena: bulk spawns (ids
/// reserved now, instances alive at the commit), bulk `set`/`remove`/`despawn` over member
/// lists captured when they are staged, and scalar edits, all applied in issue order by
/// [`Stage::commit`].
///
/// # Example
///
/// ```
/// use strata_arena::{Arena, ClassId};
/// use strata_component_store::{ComponentDef, FieldDef, Stage, Store, Value};
///
/// let mut arena = Arena::standard();
/// let mut store = Store::new();
/// let health = store.install(
///     ComponentDef::new("Health").field(FieldDef::number("current", 100.0)),
///     arena.classes(),
/// )?;
/// let current = store.field(health, "current")?;
///
/// let mut stage = Stage::new(&arena, &store);
/// let ticket = stage.spawn(&mut arena, 1000, ClassId::ENTITY, None, &[health], move |rows| {
///     let values = rows.column_mut::<f64>(health, current)?;
///     for (k, value) in values.iter_mut().enumerate() {
///         *value = k as f64;
///     }
///     Ok::<(), strata_component_store::StoreError>(())
/// })?;
/// assert!(!arena.is_live(ticket.first()), "nothing is alive before the commit");
///
/// let published = stage.commit(&mut arena, &mut store)?;
/// assert_eq!(published.spawned, 1000);
/// assert_eq!(store.set(health)?.len(), 1000);
///
/// // Halve everyone's health, then remove the component from all of them.
/// let members: Vec<_> = (0..1000)
///     .map(|k| strata_component_store::InstanceRef::of(&arena, ticket.id(k).unwrap()))
///     .collect::<Result<_, _>>()?;
/// stage.set(&members, health, vec![(current, Value::Number(50.0))]);
/// stage.remove(&members, health);
/// let published = stage.commit(&mut arena, &mut store)?;
/// assert_eq!((published.replaced, published.removed), (1000, 1000));
/// assert!(store.set(health)?.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Stage {
    id: u64,
    arena: ArenaId,
    store: StoreId,
    next_op: u64,
    ops: Vec<(OpId, Op)>,
}

/// The ids a spawn takes: fresh ones, the given ones, or given raw values not yet checked.
#[derive(Clone, Copy)]
enum SpawnIds<'a> {
    Fresh(usize),
    Given(&'a [InstanceId]),
    Raw(&'a [u64]),
}

impl SpawnIds<'_> {
    fn is_empty(self) -> bool {
        match self {
            SpawnIds::Fresh(count) => count == 0,
            SpawnIds::Given(ids) => ids.is_empty(),
            SpawnIds::Raw(ids) => ids.is_empty(),
        }
    }
}

impl std::fmt::Debug for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stage")
            .field("arena", &self.arena)
            .field("store", &self.store)
            .field("ops", &self.ops.len())
            .finish()
    }
}

impl Stage {
    /// An empty stage for `arena` and `store` (the store value itself: a snapshot is another).
    pub fn new(arena: &Arena, store: &Store) -> Self {
        Self {
            id: NEXT_STAGE.fetch_add(1, Ordering::Relaxed),
            arena: arena.arena_id(),
            store: store.id(),
            next_op: 0,
            ops: Vec::new(),
        }
    }

    /// Queues an operation under the next id.
    fn push(&mut self, op: Op) -> OpId {
        let id = OpId(self.next_op);
        self.next_op += 1;
        self.ops.push((id, op));
        id
    }

    /// The staged operations, in issue order.
    pub fn ops(&self) -> impl ExactSizeIterator<Item = OpId> + '_ {
        self.ops.iter().map(|(id, _)| *id)
    }

    /// How many operations are staged.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether nothing is staged.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    fn check_arena(&self, arena: &Arena) -> Result<(), StageError> {
        if arena.arena_id() == self.arena {
            Ok(())
        } else {
            Err(StageError::ForeignArena)
        }
    }

    /// Stages a spawn of `count` instances of `class` under `parent`, each with `components`
    /// (every field at its default, listed components counted once): their ids are reserved
    /// now, but nothing is alive, queryable or observable before the commit. At the commit,
    /// once the rows are placed with their defaults and before anything is published,
    /// `init` fills them through [`SpawnRows`]; then the arena publishes the instances (one
    /// event for the batch), the store's tick moves, and observed components queue their
    /// events.
    ///
    /// # Errors
    ///
    /// Refused, reserving nothing: a foreign arena, a count of zero, and what the arena refuses
    /// (ids or slots exhausted, a bad class or parent).
    pub fn spawn<E>(
        &mut self,
        arena: &mut Arena,
        count: usize,
        class: ClassId,
        parent: Option<InstanceId>,
        components: &[ComponentId],
        init: impl FnMut(&mut SpawnRows<'_>) -> Result<(), E> + 'static,
    ) -> Result<SpawnTicket, StageError>
    where
        E: Into<InitError>,
    {
        let ids = SpawnIds::Fresh(count);
        self.spawn_ids(arena, ids, class, parent, components, init)
    }

    /// [`Stage::spawn`] at the given ids (replication, restoring a save): refused, reserving
    /// nothing, when an id is alive, retired, repeated or outside the arena's ranges.
    ///
    /// # Errors
    ///
    /// As [`Stage::spawn`], and, reserving nothing, when an id is alive, retired, repeated or
    /// outside the arena's ranges.
    pub fn spawn_at<E>(
        &mut self,
        arena: &mut Arena,
        ids: &[InstanceId],
        class: ClassId,
        parent: Option<InstanceId>,
        components: &[ComponentId],
        init: impl FnMut(&mut SpawnRows<'_>) -> Result<(), E> + 'static,
    ) -> Result<SpawnTicket, StageError>
    where
        E: Into<InitError>,
    {
        let ids = SpawnIds::Given(ids);
        self.spawn_ids(arena, ids, class, parent, components, init)
    }

    /// [`Stage::spawn_at`] from raw id values as saved or sent, which nothing has checked yet:
    /// refused, reserving nothing, also when a value is no valid id.
    ///
    /// # Errors
    ///
    /// As [`Stage::spawn_at`], and when a value is no valid id
    /// ([`ArenaError::InvalidRawId`](strata_arena::ArenaError::InvalidRawId) inside
    /// [`StageError::Arena`]).
    pub fn spawn_at_raw<E>(
        &mut self,
        arena: &mut Arena,
        ids: &[u64],
        class: ClassId,
        parent: Option<InstanceId>,
        components: &[ComponentId],
        init: impl FnMut(&mut SpawnRows<'_>) -> Result<(), E> + 'static,
    ) -> Result<SpawnTicket, StageError>
    where
        E: Into<InitError>,
    {
        let ids = SpawnIds::Raw(ids);
        self.spawn_ids(arena, ids, class, parent, components, init)
    }

    /// The one body of the spawns: checks what can be checked before reserving (a
    /// reservation released on refusal retires its ids), reserves the ids, and stages.
    fn spawn_ids<E>(
        &mut self,
        arena: &mut Arena,
        ids: SpawnIds<'_>,
        class: ClassId,
        parent: Option<InstanceId>,
        components: &[ComponentId],
        init: impl FnMut(&mut SpawnRows<'_>) -> Result<(), E> + 'static,
    ) -> Result<SpawnTicket, StageError>
    where
        E: Into<InitError>,
    {
        self.check_arena(arena)?;
        if ids.is_empty() {
            return Err(StageError::EmptySpawn);
        }
        arena.check_new_instances(class, parent)?;
        let reservation = match ids {
            SpawnIds::Fresh(count) => arena.reserve(count)?,
            SpawnIds::Given(ids) => arena.reserve_at(ids)?,
            SpawnIds::Raw(ids) => arena.reserve_at_raw(ids)?,
        };
        self.stage_spawn(arena, reservation, class, parent, components, init)
    }

    fn stage_spawn<E>(
        &mut self,
        arena: &mut Arena,
        reservation: Reservation,
        class: ClassId,
        parent: Option<InstanceId>,
        components: &[ComponentId],
        mut init: impl FnMut(&mut SpawnRows<'_>) -> Result<(), E> + 'static,
    ) -> Result<SpawnTicket, StageError>
    where
        E: Into<InitError>,
    {
        let Some(first) = reservation.first() else {
            release(arena, reservation);
            return Err(StageError::EmptySpawn);
        };
        if let Err(error) = arena.check_publish(&reservation, class, parent) {
            release(arena, reservation);
            return Err(error.into());
        }
        let mut unique = Vec::with_capacity(components.len());
        for component in components {
            if !unique.contains(component) {
                unique.push(*component);
            }
        }
        let slots = if reservation.slots_contiguous() {
            TicketSlots::Run(reservation.slot(0).unwrap_or(Slot::from_index(0)))
        } else {
            TicketSlots::List(reservation.iter().map(|(_, slot)| slot).collect())
        };
        let len = reservation.len();
        let ids = reservation.ids().map(<[InstanceId]>::to_vec);
        let init: Init = Box::new(move |rows| init(rows).map_err(Into::into));
        let op = self.push(Op::Spawn(Box::new(Spawn {
            reservation,
            class,
            parent,
            components: unique,
            init: Some(init),
        })));
        Ok(SpawnTicket {
            stage: self.id,
            op,
            first,
            len,
            ids,
            slots,
        })
    }

    /// Cancels a staged spawn: its reservation is released now (the ids retired, never
    /// reused), its initializer never runs, and no event ever announces it. Refused for a
    /// foreign arena and for a ticket of no spawn staged here.
    ///
    /// # Errors
    ///
    /// [`StageError::ForeignArena`] for another arena, and [`StageError::UnknownTicket`] for a
    /// ticket of no spawn staged here.
    pub fn cancel(&mut self, arena: &mut Arena, ticket: &SpawnTicket) -> Result<(), StageError> {
        self.check_arena(arena)?;
        if ticket.stage != self.id {
            return Err(StageError::UnknownTicket);
        }
        match self.cancel_op(arena, ticket.op) {
            Err(StageError::UnknownOp(_)) => Err(StageError::UnknownTicket),
            other => other,
        }
    }

    /// Cancels any staged operation: it is never applied, and a spawn's reservation is
    /// released now (as [`Stage::cancel`]). Refused for a foreign arena and for an id of no
    /// operation staged here.
    ///
    /// # Errors
    ///
    /// [`StageError::ForeignArena`] for another arena, and [`StageError::UnknownOp`] for an id of
    /// no operation staged here.
    pub fn cancel_op(&mut self, arena: &mut Arena, op: OpId) -> Result<(), StageError> {
        self.check_arena(arena)?;
        let position = self
            .ops
            .iter()
            .position(|(id, _)| *id == op)
            .ok_or(StageError::UnknownOp(op))?;
        if let (_, Op::Spawn(spawn)) = self.ops.remove(position) {
            release(arena, spawn.reservation);
        }
        Ok(())
    }

    /// Stages adding `component` to every member lacking it, and storing `values` in those
    /// fields of every member (defaults elsewhere for the new rows). `members` is copied now
    /// (take a query's committed membership with `Query::capture`): nothing staged later
    /// joins it. Members gone when the batch applies are skipped and counted.
    pub fn set(
        &mut self,
        members: &[InstanceRef],
        component: ComponentId,
        values: Vec<(FieldId, Value)>,
    ) -> OpId {
        self.push(Op::Set {
            members: members.to_vec(),
            component,
            values,
        })
    }

    /// Stages removing `component` (and the components requiring it) from every member, in
    /// one compaction pass per set. Members gone, or not holding it, when the batch applies
    /// are skipped and counted.
    pub fn remove(&mut self, members: &[InstanceRef], component: ComponentId) -> OpId {
        self.push(Op::Remove {
            members: members.to_vec(),
            component,
        })
    }

    /// Stages destroying every member (with its subtree) in one arena batch (one event), its
    /// rows removed set by set in one pass each. Members gone when the batch applies are
    /// skipped and counted.
    pub fn despawn(&mut self, members: &[InstanceRef]) -> OpId {
        self.push(Op::Despawn {
            members: members.to_vec(),
        })
    }

    /// Stages a typed field write (see [`Store::write`]), applied in issue order.
    pub fn write<T: Scalar>(
        &mut self,
        at: InstanceRef,
        component: ComponentId,
        field: FieldId,
        value: T,
    ) -> OpId {
        self.write_value(at, component, field, value.into_value())
    }

    /// Stages a field write in dynamic form (see [`Store::write_value`]).
    pub fn write_value(
        &mut self,
        at: InstanceRef,
        component: ComponentId,
        field: FieldId,
        value: Value,
    ) -> OpId {
        self.push(Op::Write {
            at,
            component,
            field,
            value,
        })
    }

    /// Stages adding a component to one instance (see [`Store::add`]). `class` is checked
    /// against the definition before the commit applies anything; when the add applies, the
    /// instance must be live (an earlier operation may have destroyed it) and its own class is
    /// the one the store checks.
    pub fn add(
        &mut self,
        at: InstanceRef,
        class: ClassId,
        component: ComponentId,
        values: Vec<(FieldId, Value)>,
    ) -> OpId {
        self.push(Op::Add {
            at,
            class,
            component,
            values,
        })
    }

    /// Stages removing a component from one instance (see [`Store::remove`]); an instance
    /// not holding it then is no failure.
    pub fn remove_one(&mut self, at: InstanceRef, component: ComponentId) -> OpId {
        self.push(Op::RemoveOne { at, component })
    }

    /// Stages destroying one instance and its subtree (`Arena::destroy`, then
    /// [`Store::on_destroyed`]).
    pub fn destroy(&mut self, id: InstanceId) -> OpId {
        self.push(Op::Destroy { id })
    }

    /// Drops everything staged, releasing every reservation. Refused for a foreign arena,
    /// changing nothing.
    ///
    /// # Errors
    ///
    /// [`StageError::ForeignArena`] for another arena; nothing is dropped then.
    pub fn discard(&mut self, arena: &mut Arena) -> Result<(), StageError> {
        self.check_arena(arena)?;
        for (_, op) in self.ops.drain(..) {
            if let Op::Spawn(spawn) = op {
                release(arena, spawn.reservation);
            }
        }
        Ok(())
    }

    /// Applies every staged operation in issue order, emptying the stage.
    ///
    /// First every operation is checked against what no operation of a stage can change: the
    /// arena and store are the stage's, every component named is installed, every field and
    /// value fits the definition, every class the definition allows. A refusal there applies
    /// nothing and the stage keeps its operations ([`CommitError::kept`]).
    ///
    /// Then the operations apply in order. On a failure (an initializer's error or panic, or a
    /// refusal that depends on the operations before: a member lacking the component, an
    /// instance gone, a parent destroyed), the operations before it stay published, nothing of
    /// the failing one remains (a spawn's rows are taken back and its reservation released),
    /// every later spawn's reservation is released and every later operation dropped;
    /// [`CommitError`] names each of them.
    ///
    /// # Errors
    ///
    /// A [`CommitError`] saying what failed, what was published before it ([`CommitError::kept`]
    /// when nothing applied), and what was dropped, as described above.
    #[allow(
        clippy::result_large_err,
        reason = "the error carries what was published; a commit is rare next to what it applies"
    )]
    pub fn commit(
        &mut self,
        arena: &mut Arena,
        store: &mut Store,
    ) -> Result<Published, CommitError> {
        let refused = |failed: Option<OpId>, cause: CommitFailure| CommitError {
            published: Box::default(),
            failed,
            cause,
            released: Vec::new(),
            dropped: Vec::new(),
            kept: true,
        };
        if arena.arena_id() != self.arena {
            return Err(refused(None, CommitFailure::ForeignArena));
        }
        if store.id() != self.store {
            return Err(refused(None, CommitFailure::ForeignStore));
        }
        for (id, op) in &self.ops {
            if let Err(error) = check_static(op, store) {
                return Err(refused(Some(*id), error.into()));
            }
        }
        let mut published = Published::default();
        let mut ops = std::mem::take(&mut self.ops).into_iter();
        while let Some((id, op)) = ops.next() {
            let own = matches!(op, Op::Spawn(_));
            if let Err(cause) = apply(op, arena, store, &mut published) {
                let mut released = Vec::new();
                if own {
                    released.push(id);
                }
                let mut dropped = Vec::new();
                for (later, op) in ops {
                    if let Op::Spawn(spawn) = op
                        && release(arena, spawn.reservation)
                    {
                        released.push(later);
                    }
                    dropped.push(later);
                }
                return Err(CommitError {
                    published: Box::new(published),
                    failed: Some(id),
                    cause,
                    released,
                    dropped,
                    kept: false,
                });
            }
            published.applied.push(id);
        }
        Ok(published)
    }
}

/// The checks of an operation that hold for the whole commit (nothing a stage applies
/// installs, removes or redefines a component): components installed, fields and values that
/// fit, classes allowed.
fn check_static(op: &Op, store: &Store) -> Result<(), StoreError> {
    let values_fit = |component: ComponentId, values: &[(FieldId, Value)]| {
        let def = store.def(component)?;
        for (field, value) in values {
            def.check_value(*field, value)?;
        }
        Ok::<_, StoreError>(def)
    };
    let allows = |component: ComponentId, class: ClassId| {
        let def = store.def(component)?;
        if def.allows_class(class) {
            Ok(())
        } else {
            Err(StoreError::ClassNotAllowed {
                component: def.name().to_owned(),
                class,
            })
        }
    };
    match op {
        Op::Spawn(spawn) => {
            for &component in &spawn.components {
                allows(component, spawn.class)?;
            }
        }
        Op::Set {
            component, values, ..
        } => {
            values_fit(*component, values)?;
        }
        Op::Remove { component, .. } | Op::RemoveOne { component, .. } => {
            store.def(*component)?;
        }
        Op::Write {
            component,
            field,
            value,
            ..
        } => {
            store.def(*component)?.check_value(*field, value)?;
        }
        Op::Add {
            class,
            component,
            values,
            ..
        } => {
            values_fit(*component, values)?;
            allows(*component, *class)?;
        }
        Op::Despawn { .. } | Op::Destroy { .. } => {}
    }
    Ok(())
}

/// Releases a reservation this stage held. The arena refuses only a reservation of another
/// arena or one it no longer holds, which a stage never has (it checks the arena before
/// touching any, and gives each up once); returns whether it was released.
fn release(arena: &mut Arena, reservation: Reservation) -> bool {
    arena.release(reservation).is_ok()
}

/// The live members of a batch (by id and slot), with their classes; counts the others.
fn live_members(
    arena: &Arena,
    members: &[InstanceRef],
    skipped: &mut usize,
) -> Vec<(InstanceRef, ClassId)> {
    let mut live = Vec::with_capacity(members.len());
    for at in members {
        match arena.live_class_at(at.id, at.slot) {
            Some(class) => live.push((*at, class)),
            None => *skipped += 1,
        }
    }
    live
}

// Long: one arm per kind of staged operation, each a few lines.
fn apply(
    op: Op,
    arena: &mut Arena,
    store: &mut Store,
    published: &mut Published,
) -> Result<(), CommitFailure> {
    match op {
        Op::Spawn(spawn) => apply_spawn(*spawn, arena, store, published),
        Op::Set {
            members,
            component,
            values,
        } => {
            check_references(arena, store, component, &values)?;
            let live = live_members(arena, &members, &mut published.skipped);
            let (added, replaced) = store.set_many(&live, component, &values)?;
            published.added += added;
            published.replaced += replaced;
            Ok(())
        }
        Op::Remove { members, component } => {
            let live = live_members(arena, &members, &mut published.skipped);
            let ats: Vec<InstanceRef> = live.into_iter().map(|(at, _)| at).collect();
            let mut removed = Vec::new();
            let count = store.remove_many(&ats, component, &mut removed)?;
            published.skipped += ats.len() - count.min(ats.len());
            published.removed += count;
            Ok(())
        }
        Op::Despawn { members } => {
            let live = live_members(arena, &members, &mut published.skipped);
            if live.is_empty() {
                return Ok(());
            }
            let ids: Vec<InstanceId> = live.iter().map(|(at, _)| at.id).collect();
            let destruction = arena.destroy_many(&ids)?;
            published.despawned += destruction.doomed.len();
            store.on_destroyed_bulk(&destruction.doomed, &mut published.destroyed);
            Ok(())
        }
        Op::Write {
            at,
            component,
            field,
            value,
        } => {
            store
                .def(component)?
                .check_references(field, &value, |t| arena.is_live(t))?;
            store.write_value(at, component, field, value)?;
            published.edits += 1;
            Ok(())
        }
        Op::Add {
            at,
            class: _,
            component,
            values,
        } => {
            check_references(arena, store, component, &values)?;
            // The store cannot tell a destroyed instance from a live one; the arena can.
            let Some(class) = arena.live_class_at(at.id, at.slot) else {
                return Err(CommitFailure::Arena(if arena.slot_of(at.id).is_some() {
                    ArenaError::DestroyedInstance(at.id)
                } else {
                    ArenaError::UnknownInstance(at.id)
                }));
            };
            store.add(at, class, component, values)?;
            published.edits += 1;
            Ok(())
        }
        Op::RemoveOne { at, component } => {
            store.remove(at, component)?;
            published.edits += 1;
            Ok(())
        }
        Op::Destroy { id } => {
            let destruction = arena.destroy(id)?;
            let doomed = destruction.doomed.as_slice();
            published.despawned += doomed.len();
            store.on_destroyed_into(doomed, &mut published.destroyed);
            published.edits += 1;
            Ok(())
        }
    }
}

fn apply_spawn(
    spawn: Spawn,
    arena: &mut Arena,
    store: &mut Store,
    published: &mut Published,
) -> Result<(), CommitFailure> {
    let Spawn {
        reservation,
        class,
        parent,
        components,
        init,
        ..
    } = spawn;
    let fail = |arena: &mut Arena, reservation: Reservation, cause: CommitFailure| {
        release(arena, reservation);
        Err(cause)
    };
    if let Err(error) = arena.check_publish(&reservation, class, parent) {
        return fail(arena, reservation, error.into());
    }
    let ats: Vec<InstanceRef> = reservation
        .iter()
        .map(|(id, slot)| InstanceRef::new(id, slot))
        .collect();
    for &component in &components {
        if let Err(error) = store.check_place(&ats, class, component) {
            return fail(arena, reservation, error.into());
        }
    }
    let tick = Tick(store.tick().0 + 1);
    let mut placed: Vec<(ComponentId, Range<usize>)> = Vec::with_capacity(components.len());
    for &component in &components {
        match store.place_unpublished(&ats, component, tick) {
            Ok(rows) => placed.push((component, rows)),
            Err(error) => {
                take_back(store, &placed);
                return fail(arena, reservation, error.into());
            }
        }
    }
    if let Some(mut init) = init {
        let mut rows = SpawnRows {
            store,
            placed: &placed,
            ats: &ats,
        };
        let outcome = catch_unwind(AssertUnwindSafe(|| init(&mut rows)));
        let cause = match outcome {
            Ok(Ok(())) => None,
            Ok(Err(error)) => Some(CommitFailure::Init(error)),
            Err(panic) => Some(CommitFailure::Panic(panic_message(panic.as_ref()))),
        };
        if let Some(cause) = cause {
            take_back(store, &placed);
            return fail(arena, reservation, cause);
        }
        if let Err(error) = check_ranged(store, &placed) {
            take_back(store, &placed);
            return fail(arena, reservation, CommitFailure::Init(Box::new(error)));
        }
        if let Err(error) = check_spawned_references(arena, store, &placed, &ats) {
            take_back(store, &placed);
            return fail(arena, reservation, error.into());
        }
    }
    if let Err((reservation, error)) = arena.publish(reservation, class, parent) {
        take_back(store, &placed);
        return fail(arena, reservation, error.into());
    }
    store.publish_placed(&placed, &ats, tick);
    published.spawned += ats.len();
    Ok(())
}

/// Checks that every reference `values` hold names a live instance (an earlier operation of
/// the batch may have destroyed one that was live when it was staged).
fn check_references(
    arena: &Arena,
    store: &Store,
    component: ComponentId,
    values: &[(FieldId, Value)],
) -> Result<(), StoreError> {
    let def = store.def(component)?;
    for (field, value) in values {
        def.check_references(*field, value, |t| arena.is_live(t))?;
    }
    Ok(())
}

/// Checks that every reference an initializer stored in a spawn's rows names a live instance
/// or one of the spawn's own (live once it is published with them).
fn check_spawned_references(
    arena: &Arena,
    store: &Store,
    placed: &[(ComponentId, Range<usize>)],
    ats: &[InstanceRef],
) -> Result<(), StoreError> {
    let mut own: Option<hashbrown::HashSet<InstanceId>> = None;
    for (component, rows) in placed {
        let set = store.set(*component)?;
        for (index, field) in set.def().fields().iter().enumerate() {
            if !field.ty.can_reference() {
                continue;
            }
            let field_id = FieldId(index as u16);
            for row in rows.clone() {
                let Some(value) = set.value(row, field_id) else {
                    continue;
                };
                let own = own.get_or_insert_with(|| ats.iter().map(|at| at.id).collect());
                set.def()
                    .check_references(field_id, &value, |t| arena.is_live(t) || own.contains(&t))?;
            }
        }
    }
    Ok(())
}

fn take_back(store: &mut Store, placed: &[(ComponentId, Range<usize>)]) {
    for (component, rows) in placed {
        store.take_back_unpublished(*component, rows.start);
    }
}

/// Checks the values an initializer stored through raw slices where a slice can hold what the
/// field cannot (enum indexes past the variants).
fn check_ranged(store: &Store, placed: &[(ComponentId, Range<usize>)]) -> Result<(), StoreError> {
    for (component, rows) in placed {
        let set = store.set(*component)?;
        for (index, field) in set.def().fields().iter().enumerate() {
            let FieldType::Enum(_) = field.ty else {
                continue;
            };
            let field_id = FieldId(index as u16);
            if let Some(Column::Enum(values)) = set.column(field_id) {
                for value in &values[rows.clone()] {
                    set.def().check_scalar_value(field_id, value)?;
                }
            }
        }
    }
    Ok(())
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(message) = panic.downcast_ref::<&str>() {
        (*message).to_owned()
    } else if let Some(message) = panic.downcast_ref::<String>() {
        message.clone()
    } else {
        "a panic without a message".to_owned()
    }
}

/// The rows of a staged spawn, placed with their defaults and not yet published, for its
/// initializer to fill: per component, one contiguous row range, and typed column slices over
/// exactly those rows. Writes here take no tick and mark nothing dirty: they are part of the
/// spawn.
pub struct SpawnRows<'a> {
    store: &'a mut Store,
    placed: &'a [(ComponentId, Range<usize>)],
    ats: &'a [InstanceRef],
}

impl SpawnRows<'_> {
    /// How many instances the spawn adds.
    pub fn len(&self) -> usize {
        self.ats.len()
    }

    /// Always false: a spawn adds at least one instance.
    pub fn is_empty(&self) -> bool {
        self.ats.is_empty()
    }

    /// The `k`-th instance's id.
    pub fn id(&self, k: usize) -> Option<InstanceId> {
        self.ats.get(k).map(|at| at.id)
    }

    /// The `k`-th instance's slot.
    pub fn slot(&self, k: usize) -> Option<Slot> {
        self.ats.get(k).map(|at| at.slot)
    }

    /// The `k`-th instance as the store addresses it.
    pub fn instance(&self, k: usize) -> Option<InstanceRef> {
        self.ats.get(k).copied()
    }

    fn placed(&self, component: ComponentId) -> Result<Range<usize>, StoreError> {
        self.placed
            .iter()
            .find(|(c, _)| *c == component)
            .map(|(_, rows)| rows.clone())
            .ok_or_else(|| StoreError::NotInSpawn {
                component,
                component_name: self
                    .store
                    .def(component)
                    .map_or_else(|_| std::sync::Arc::from("?"), InstalledDef::shared_name),
            })
    }

    /// The rows of `component` the spawn placed, `first..=last`: the `k`-th instance's row is
    /// `first + k`.
    ///
    /// # Errors
    ///
    /// [`StoreError::NotInSpawn`] for a component the spawn does not add.
    pub fn rows(&self, component: ComponentId) -> Result<RangeInclusive<usize>, StoreError> {
        let rows = self.placed(component)?;
        Ok(rows.start..=rows.end - 1)
    }

    /// A field's values over exactly the spawn's rows, for filling in place (element `k` is
    /// the `k`-th instance's).
    ///
    /// # Errors
    ///
    /// Refused for a component the spawn does not add ([`StoreError::NotInSpawn`]), a field whose
    /// column does not hold `T`, and a reference field ([`StoreError::CheckedFieldOnly`]: use
    /// [`SpawnRows::set_reference`]). Enum indexes stored here are checked after the initializer
    /// returns: one past the variants fails the spawn.
    pub fn column_mut<T: Scalar>(
        &mut self,
        component: ComponentId,
        field: FieldId,
    ) -> Result<&mut [T], StoreError> {
        let rows = self.placed(component)?;
        let def = self.store.def(component)?;
        let field_def = def.check_scalar::<T>(field)?;
        if def.reference_fields.contains(&field) {
            return Err(StoreError::CheckedFieldOnly {
                component,
                field,
                component_name: def.shared_name(),
                field_name: def.shared_field_name(field),
            });
        }
        let mismatch = def.type_mismatch(field_def, std::any::type_name::<T>());
        self.store
            .set_mut(component)?
            .init_slice::<T>(field, rows)
            .ok_or(mismatch)
    }

    /// Stores a checked value in field `field` of the `k`-th instance's row (any kind,
    /// references included: the reverse index follows).
    ///
    /// # Errors
    ///
    /// [`StoreError::NotInSpawn`] for a component the spawn does not add,
    /// [`StoreError::SpawnIndexOutOfRange`] for `k` past the spawn's instances,
    /// [`StoreError::FieldOutOfRange`] for a field it lacks, and [`StoreError::TypeMismatch`] for a
    /// value the field cannot hold.
    pub fn set_value(
        &mut self,
        component: ComponentId,
        k: usize,
        field: FieldId,
        value: Value,
    ) -> Result<(), StoreError> {
        let rows = self.placed(component)?;
        if k >= rows.len() {
            return Err(StoreError::SpawnIndexOutOfRange {
                index: k,
                len: rows.len(),
            });
        }
        self.store.def(component)?.check_value(field, &value)?;
        self.store
            .set_mut(component)?
            .init_field(rows.start + k, field, value);
        Ok(())
    }

    /// Stores a reference in field `field` of the `k`-th instance's row, keeping the reverse
    /// index exact.
    ///
    /// # Errors
    ///
    /// As [`SpawnRows::set_value`].
    pub fn set_reference(
        &mut self,
        component: ComponentId,
        k: usize,
        field: FieldId,
        target: Option<InstanceId>,
    ) -> Result<(), StoreError> {
        self.set_value(component, k, field, Value::Reference(target))
    }
}
