//! `Arena`: the live instance hierarchy, composed of owned parts that each keep their own
//! invariant: the state readers see (`Snapshot`), identity and slot allocation (`allocator`),
//! the queued events and journals (`outbox`), the reclamation queues (`lifecycle`) and the
//! open construction batches (`batch`). Creation is in `create`, writes, tags and persistent
//! ids in `write`, reparenting and the structural steps moves and destruction share in
//! `hierarchy`, destruction (single and bulk) and reclamation in `lifecycle`, clone and graft in
//! `copy`, reservations and their publication in `reserve`.
//!
//! Invariant: every mutation validates before it changes anything, so a refused operation
//! leaves the arena as it was. Every change advances the clock once and records the new value in
//! each revision domain it touches; a write that would store an equal value through a
//! specialised setter changes nothing at all (no revision, no log entry, no privatised node).
//! Token serials (checkpoints, lifecycle scopes, reservations) only grow, so no two tokens share one.

use std::ops::Deref;
use std::sync::Arc;

use crate::allocator::{IdAllocator, SlotPool};
use crate::batch::BatchLog;
use crate::class::{ClassId, ClassRegistry};
use crate::error::ArenaError;
use crate::event::{Event, PartWrite, TopologyChange};
use crate::id::{IdRange, InstanceId, Slot};
use crate::journal::{BoundedJournal, HistoryUnavailable, JournalRead};
use crate::lifecycle::Reclamation;
use crate::outbox::Outbox;
use crate::reserve::Reservations;
use crate::snapshot::Snapshot;

/// The live instance hierarchy.
///
/// Reads go through [`Snapshot`], which the arena dereferences to; writes are methods here.
pub struct Arena {
    /// The state readers see; snapshots share it.
    pub(crate) state: Snapshot,
    pub(crate) ids: IdAllocator,
    pub(crate) slots: SlotPool,
    pub(crate) outbox: Outbox,
    pub(crate) reclamation: Reclamation,
    pub(crate) batches: BatchLog,
    /// The outstanding reservations.
    pub(crate) reservations: Reservations,
    /// The last serial handed to a checkpoint or lifecycle-scope token.
    token_serial: u64,
    /// Buffers kept between operations so the common ones allocate nothing.
    pub(crate) scratch: Scratch,
}

/// Buffers reused from one operation to the next.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    /// An ancestor chain being collected.
    pub(crate) ancestors: Vec<InstanceId>,
    /// The slots of the run being created.
    pub(crate) slots: Vec<Slot>,
}

impl Deref for Arena {
    type Target = Snapshot;

    fn deref(&self) -> &Snapshot {
        &self.state
    }
}

impl std::fmt::Debug for Arena {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Arena")
            .field("state", &self.state)
            .field("own_range", &self.ids.own_range())
            .field("pending_events", &self.outbox.events().len())
            .finish_non_exhaustive()
    }
}

impl Arena {
    /// An empty arena allocating server-range ids (from 1).
    pub fn new(classes: Arc<ClassRegistry>) -> Self {
        Self::with_range(classes, IdRange::Server)
    }

    /// An empty arena with the standard classes.
    pub fn standard() -> Self {
        Self::new(Arc::new(ClassRegistry::standard()))
    }

    /// An empty client arena: it allocates its own objects from 2^52 and accepts server-range
    /// ids only through [`Arena::insert_with_id`] (replication).
    pub fn client(classes: Arc<ClassRegistry>) -> Self {
        Self::with_range(classes, IdRange::ClientLocal)
    }

    fn with_range(classes: Arc<ClassRegistry>, own_range: IdRange) -> Self {
        Self {
            state: Snapshot::new(classes),
            ids: IdAllocator::new(own_range),
            slots: SlotPool::default(),
            outbox: Outbox::new(),
            reclamation: Reclamation::default(),
            batches: BatchLog::default(),
            reservations: Reservations::default(),
            token_serial: 0,
            scratch: Scratch::default(),
        }
    }

    /// Sets the seed GUIDs and persistent ids are derived from, for tests and replays. Two
    /// arenas with the same seed and the same operations produce the same GUIDs and persistent
    /// ids. Without it every arena draws its own seed (from operating-system entropy, the clock
    /// and the process id, plus the arena's [`ArenaId`](crate::ArenaId), unique in the
    /// process), so identities of independently made arenas never meet: GUIDs of two arenas of
    /// one process never coincide, and across processes only with negligible probability, as
    /// for persistent ids. Instances created before keep the GUIDs they were given.
    #[must_use]
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.state.reseed(seed, self.ids.next_creation());
        self
    }

    /// Registers another class on this arena's registry. Snapshots keep the registry they had.
    ///
    /// # Errors
    ///
    /// As [`ClassRegistry::register`](crate::ClassRegistry::register): a duplicate name, an unknown
    /// containment class name, or a full registry.
    pub fn register_class(
        &mut self,
        descriptor: crate::ClassDescriptor,
    ) -> Result<ClassId, ArenaError> {
        self.state.register_class(descriptor)
    }

    /// Registers another family on this arena's registry.
    ///
    /// # Errors
    ///
    /// [`ArenaError::RegistryFull`] when the family registry has no room left.
    pub fn register_family(&mut self, name: &str) -> Result<crate::FamilyId, ArenaError> {
        self.state.register_family(name)
    }

    /// An immutable copy of the current state that shares every node with the arena. Later
    /// writes to the arena never show in it. Pending events, journals and lifecycle scopes are
    /// not part of it.
    pub fn snapshot(&self) -> Snapshot {
        self.state.without_scopes()
    }

    /// A serial for a new checkpoint or lifecycle-scope token, never handed out before.
    pub(crate) fn next_token(&mut self) -> u64 {
        self.token_serial += 1;
        self.token_serial
    }

    /// The range this arena allocates its own ids from.
    pub fn own_range(&self) -> IdRange {
        self.ids.own_range()
    }

    /// The next id this arena would allocate.
    pub fn next_id(&self) -> u64 {
        self.ids.next_id()
    }

    // ----- Events and journals. -----

    /// The events queued since the last drain.
    pub fn pending_events(&self) -> &[Event] {
        self.outbox.events()
    }

    /// The part-write log.
    pub fn part_log(&self) -> &BoundedJournal<PartWrite> {
        self.outbox.part_log()
    }

    /// The part-write log entries since `cursor` (a head returned by an earlier read, or
    /// `part_log().head()`), or `HistoryUnavailable` when entries were dropped in between:
    /// the reader must then re-examine every part.
    ///
    /// # Errors
    ///
    /// [`HistoryUnavailable`] when entries after `cursor` were dropped or retracted, or the cursor
    /// is not this log's: re-examine every part.
    pub fn part_writes_since(
        &self,
        cursor: u64,
    ) -> Result<JournalRead<'_, PartWrite>, HistoryUnavailable> {
        self.outbox.part_log().read_since(cursor)
    }

    /// The topology journal.
    pub fn topology_journal(&self) -> &BoundedJournal<TopologyChange> {
        self.outbox.topology_log()
    }

    /// Topology journal entries since `cursor`, or `HistoryUnavailable`.
    ///
    /// # Errors
    ///
    /// [`HistoryUnavailable`] when entries after `cursor` were dropped or retracted, or the cursor
    /// is not this journal's: re-examine the whole hierarchy.
    pub fn topology_since(
        &self,
        cursor: u64,
    ) -> Result<JournalRead<'_, TopologyChange>, HistoryUnavailable> {
        self.outbox.topology_log().read_since(cursor)
    }
}
