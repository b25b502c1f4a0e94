//! `Arena`: the live instance hierarchy. Allocation, writes with revision tracking, tags,
//! persistent ids and reparenting live here; destruction and reclamation are in `lifecycle`,
//! construction batches in `batch`, clone and graft in `copy`.
//!
//! Invariant: every mutation validates before it changes anything, so a refused operation
//! leaves the arena as it was. Every change advances the clock once and records the new value in
//! each revision domain it touches; a write that would store an equal value through a
//! specialised setter changes nothing at all (no revision, no log entry, no privatised node).

use std::ops::Deref;
use std::sync::Arc;

use crate::class::{ClassId, ClassRegistry, FamilySet, StateKind};
use crate::error::ArenaError;
use crate::event::{Doomed, Event, Lineage, MovedIds, PartWrite, PartWriteKind, TopologyChange};
use crate::id::{IdRange, InstanceId, PersistentId, Slot, mix64};
use crate::journal::{BoundedJournal, HistoryUnavailable, JournalRead};
use crate::math::{Transform, Vec3};
use crate::revision::Revision;
use crate::snapshot::{Cold, Record, Snapshot};
use crate::state::{AttrValue, BuiltinState, LightState, NodeMut, PartState, StateVariant};

/// How many entries the part-write log retains before dropping its older half.
pub const PART_LOG_CAPACITY: usize = 65_536;
/// How many entries the topology journal retains before dropping its older half.
pub const TOPOLOGY_LOG_CAPACITY: usize = 65_536;

/// The largest slot buffer a creation keeps for the next one (a bulk creation larger than this
/// frees its own).
const SLOT_SCRATCH_KEPT: usize = 4096;

/// The facts about a class that structural changes need, copied out of its descriptor.
#[derive(Clone, Copy, Default)]
pub(crate) struct ClassTraits {
    pub(crate) families: FamilySet,
    pub(crate) part_log: bool,
    pub(crate) collision: bool,
    pub(crate) animation: bool,
    /// `Some(true)` for a GUI layer, `Some(false)` for a GUI element.
    pub(crate) gui: Option<bool>,
}

impl ClassTraits {
    pub(crate) fn of(descriptor: &crate::ClassDescriptor) -> Self {
        Self {
            families: descriptor.families(),
            part_log: descriptor.logs_part_writes(),
            collision: descriptor.affects_collision(),
            animation: descriptor.affects_animation(),
            gui: match descriptor.state_kind() {
                StateKind::GuiLayer => Some(true),
                StateKind::GuiElement => Some(false),
                _ => None,
            },
        }
    }
}

/// What the classes of a subtree have in common, gathered in the walk that collects it, so a
/// structural change looks each node's class up once.
#[derive(Clone, Copy, Default)]
pub(crate) struct SubtreeInfo {
    pub(crate) families: FamilySet,
    pub(crate) animation: bool,
    pub(crate) has_gui: bool,
    pub(crate) has_layer: bool,
    /// The first node below the root (pre-order) whose parent is locked.
    pub(crate) locked_below: Option<InstanceId>,
}

impl SubtreeInfo {
    pub(crate) fn single(traits: ClassTraits) -> Self {
        let mut info = Self::default();
        info.add(traits);
        info
    }

    fn add(&mut self, traits: ClassTraits) {
        self.families = self.families.union(traits.families);
        self.animation |= traits.animation;
        self.has_gui |= traits.gui.is_some();
        self.has_layer |= traits.gui == Some(true);
    }

    /// The nearest layer above `root`, looked up only when the subtree holds GUI content.
    pub(crate) fn gui_layer_context(&self, arena: &Arena, root: InstanceId) -> Option<InstanceId> {
        if self.has_gui {
            arena.nearest_layer(root)
        } else {
            None
        }
    }
}

/// A subtree collected in pre-order, root first: its ids (the list every event of the change
/// shares), their slots in the same order, and what its classes have in common.
pub(crate) struct Subtree {
    pub(crate) moved: MovedIds,
    /// The root's slot alone when `moved` is one id, else one slot per id.
    slots: Vec<Slot>,
    root_slot: Slot,
    pub(crate) info: SubtreeInfo,
}

impl Subtree {
    /// The subtree's instances with their slots, root first, in pre-order.
    pub(crate) fn members(&self) -> impl Iterator<Item = (InstanceId, Slot)> + '_ {
        self.moved
            .as_slice()
            .iter()
            .copied()
            .zip(self.slots().iter().copied())
    }

    pub(crate) fn root(&self) -> (InstanceId, Slot) {
        (self.moved.root(), self.root_slot)
    }

    /// The slots of the subtree's instances, root first, in pre-order.
    pub(crate) fn slots(&self) -> &[Slot] {
        if self.slots.is_empty() {
            std::slice::from_ref(&self.root_slot)
        } else {
            &self.slots
        }
    }
}

/// A subtree just detached from its parent, as `Arena::detach` leaves it.
pub(crate) struct Detached {
    pub(crate) subtree: Subtree,
    pub(crate) old_parent: Option<InstanceId>,
    /// The clock value of the change.
    pub(crate) at: Revision,
}

/// How a structural change sets the world membership of the subtree it affected.
#[derive(Clone, Copy)]
pub(crate) enum Membership {
    /// A move: the root's membership is given, every other node follows from its ancestry.
    Derived { root_in_world: bool },
    /// A destruction: every node leaves the world.
    Cleared,
}

/// What a write may have changed, which decides the revision domains it touches.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum WriteScope {
    /// Name or attributes.
    Meta,
    /// Built-in state, or anything (generic mutable access).
    State,
}

/// The live instance hierarchy.
///
/// Reads go through [`Snapshot`], which the arena dereferences to; writes are methods here.
pub struct Arena {
    pub(crate) state: Snapshot,
    pub(crate) own_range: IdRange,
    /// The next id of `own_range` to allocate. Ids of the other range only arrive through
    /// `insert_with_id`, which never moves this counter for them.
    pub(crate) next_id: u64,
    /// How many nodes were created: the counter each new node's GUID derives from (with the
    /// seed the snapshot keeps).
    pub(crate) guid_counter: u64,
    pub(crate) persistent_counter: u64,
    pub(crate) free_slots: Vec<Slot>,
    pub(crate) events: Vec<Event>,
    pub(crate) doomed: Vec<Doomed>,
    pub(crate) reclaimable: Vec<Doomed>,
    pub(crate) part_log: BoundedJournal<PartWrite>,
    pub(crate) topology_log: BoundedJournal<TopologyChange>,
    pub(crate) batches: Vec<crate::batch::BatchMark>,
    /// The last serial handed to a checkpoint or lifecycle-scope token.
    token_serial: u64,
    pub(crate) alloc_log: Vec<Doomed>,
    scratch: Vec<InstanceId>,
    /// The slots of the run being created, kept between creations so a single create
    /// allocates nothing for them.
    slot_scratch: Vec<Slot>,
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
            .field("own_range", &self.own_range)
            .field("pending_events", &self.events.len())
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
            own_range,
            next_id: own_range.start(),
            guid_counter: 0,
            persistent_counter: 0,
            free_slots: Vec::new(),
            events: Vec::new(),
            doomed: Vec::new(),
            reclaimable: Vec::new(),
            part_log: BoundedJournal::new(PART_LOG_CAPACITY),
            topology_log: BoundedJournal::new(TOPOLOGY_LOG_CAPACITY),
            batches: Vec::new(),
            token_serial: 0,
            alloc_log: Vec::new(),
            scratch: Vec::new(),
            slot_scratch: Vec::new(),
        }
    }

    /// Sets the seed GUIDs and persistent ids are derived from, for tests and replays. Two
    /// arenas with the same seed and the same operations produce the same GUIDs and persistent
    /// ids. Without it every arena draws its own seed (from operating-system entropy, the clock
    /// and the process id, plus the arena's [`ArenaId`](crate::ArenaId), unique in the process), so identities of independently
    /// made arenas never meet: GUIDs of two arenas of one process never coincide, and across
    /// processes only with negligible probability, as for persistent ids.
    #[must_use]
    pub fn with_seed(mut self, seed: u64) -> Self {
        // Nodes created so far keep the GUIDs they were given.
        self.state.reseed(seed, self.guid_counter + 1);
        self
    }

    /// Registers another class on this arena's registry. Snapshots keep the registry they had.
    pub fn register_class(
        &mut self,
        descriptor: crate::ClassDescriptor,
    ) -> Result<ClassId, ArenaError> {
        self.state.register_class(descriptor)
    }

    /// Registers another family on this arena's registry.
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
        self.own_range
    }

    /// The next id this arena would allocate.
    pub fn next_id(&self) -> u64 {
        self.next_id
    }

    // ----- Creation. -----

    /// Creates an instance of `class`, optionally under `parent`, and returns its new id.
    pub fn create(
        &mut self,
        class: ClassId,
        parent: Option<InstanceId>,
    ) -> Result<InstanceId, ArenaError> {
        let parent = self.check_new_child(class, parent)?;
        let id = self.reserve_ids(1)?;
        self.place_run(id, 1, class, None, parent, |_, _| {});
        self.announce_created(id, parent);
        Ok(id)
    }

    /// Creates `count` instances of `class` under `parent` in one step: consecutive ids, one
    /// clock tick, one `CreatedRange` event and journal entry. Otherwise it does exactly what
    /// `count` calls of [`Arena::create`] do (the same steps run for both), and returns each new
    /// instance's id and slot, in id (and child) order. Refused, changing nothing, for a bad
    /// class or parent, or when the id range or the slots cannot hold `count` more instances.
    pub fn create_many(
        &mut self,
        class: ClassId,
        parent: Option<InstanceId>,
        count: usize,
    ) -> Result<Vec<(InstanceId, Slot)>, ArenaError> {
        let parent = self.check_new_child(class, parent)?;
        let count32 = u32::try_from(count).map_err(|_| ArenaError::SlotsExhausted)?;
        if count == 0 {
            return Ok(Vec::new());
        }
        let first = self.reserve_ids(count32)?;
        let mut placed = Vec::with_capacity(count);
        self.place_run(first, count32, class, None, parent, |id, slot| {
            placed.push((id, slot));
        });
        self.announce_created_range(first, count32, parent);
        Ok(placed)
    }

    /// Creates an instance of the class named `class`.
    pub fn create_named(
        &mut self,
        class: &str,
        parent: Option<InstanceId>,
    ) -> Result<InstanceId, ArenaError> {
        let class = self
            .state
            .classes()
            .class_id(class)
            .ok_or_else(|| ArenaError::UnknownClass(class.to_owned()))?;
        self.create(class, parent)
    }

    /// Inserts an instance under an id chosen elsewhere (replication). The id must lie inside an
    /// id range (`u64::MAX` does not), must not be held by a live instance or tombstone, and an
    /// id of this arena's own range must not have been issued by it already; inserting one moves
    /// the arena's counter past it.
    pub fn insert_with_id(
        &mut self,
        id: InstanceId,
        class: ClassId,
        parent: Option<InstanceId>,
    ) -> Result<(), ArenaError> {
        if !self.batches.is_empty() {
            return Err(ArenaError::BatchInProgress(
                "explicit ids cannot be inserted inside a construction batch",
            ));
        }
        if id.get() >= id.range().end() {
            return Err(ArenaError::IdOutOfRange(id));
        }
        if self.state.find(id).is_some() {
            return Err(ArenaError::IdInUse(id));
        }
        if id.range() == self.own_range && id.get() < self.next_id() {
            return Err(ArenaError::IdRetired(id));
        }
        let parent = self.check_new_child(class, parent)?;
        self.check_slot_room(1)?;
        if id.range() == self.own_range {
            self.next_id = id.get() + 1;
        }
        self.place_run(id, 1, class, None, parent, |_, _| {});
        self.announce_created(id, parent);
        Ok(())
    }

    /// Validates the class and the parent of an instance about to be created.
    pub(crate) fn check_new_child(
        &self,
        class: ClassId,
        parent: Option<InstanceId>,
    ) -> Result<Option<(InstanceId, Slot)>, ArenaError> {
        let descriptor = self
            .state
            .classes()
            .get(class)
            .ok_or(ArenaError::UnknownClassId(class.0))?;
        let Some(parent) = parent else {
            return Ok(None);
        };
        let parent_slot = self.state.live_slot(parent)?;
        let parent_class = self.state.record_at(parent_slot).map(Record::class);
        if let Some(parent_class) = parent_class
            && !descriptor.allows_parent(parent_class)
        {
            return Err(ArenaError::Containment {
                child_class: descriptor.name().to_owned(),
                parent_class: self.state.class_of(parent_class).name().to_owned(),
            });
        }
        Ok(Some((parent, parent_slot)))
    }

    /// Takes the next `count` (at least one) ids of the arena's own range, after checking that
    /// the range and the slots can hold that many more instances, and returns the first.
    /// Refused, changing nothing, when they cannot.
    pub(crate) fn reserve_ids(&mut self, count: u32) -> Result<InstanceId, ArenaError> {
        let exhausted = || ArenaError::IdSpaceExhausted(self.own_range);
        let first = self.next_id;
        let end = first
            .checked_add(u64::from(count.max(1)))
            .filter(|end| *end <= self.own_range.end())
            .ok_or_else(exhausted)?;
        self.check_slot_room(count)?;
        // Ranges start at 1, so the counter is never zero.
        let first_id = InstanceId::new(first).ok_or_else(exhausted)?;
        self.next_id = end;
        Ok(first_id)
    }

    /// Refuses when `count` more instances would not fit in the slots (free ones first).
    pub(crate) fn check_slot_room(&self, count: u32) -> Result<(), ArenaError> {
        let fresh_needed = u64::from(count).saturating_sub(self.free_slots.len() as u64);
        if u64::from(self.state.slot_len()) + fresh_needed > u64::from(u32::MAX) {
            return Err(ArenaError::SlotsExhausted);
        }
        Ok(())
    }

    /// A free slot (the most recently freed), or a fresh one at the high-water mark. Callers
    /// check room first ([`Arena::check_slot_room`]).
    fn take_slot(&mut self) -> Slot {
        self.free_slots.pop().unwrap_or_else(|| {
            debug_assert!(
                self.state.slot_len() < u32::MAX,
                "slot room is checked first"
            );
            Slot(self.state.slot_len())
        })
    }

    /// Appends `count` slots to `slots`, as `count` calls of [`Arena::take_slot`] would take
    /// them: free ones first (most recently freed first), then
    /// fresh ones from the high-water mark on. Callers check room first
    /// ([`Arena::check_slot_room`]).
    fn take_slots(&mut self, count: u32, slots: &mut Vec<Slot>) {
        let count = count as usize;
        let reused = count.min(self.free_slots.len());
        let from = self.free_slots.len() - reused;
        slots.extend(self.free_slots.drain(from..).rev());
        let fresh = self.state.slot_len();
        debug_assert!(
            u64::from(fresh) + (count - reused) as u64 <= u64::from(u32::MAX),
            "slot room is checked first"
        );
        slots.extend((0..(count - reused) as u32).map(|k| Slot(fresh + k)));
    }

    /// The steps every creation shares (single, bulk, explicit id, copy), for `count >= 1`
    /// instances of `class` with consecutive ids from `first`, each starting from `cold` (`None`
    /// for the class's defaults, which new nodes then read from the class instead of holding a
    /// copy). Everything is validated: the ids are free, slot room was checked, `parent` is live
    /// and allows the class. One clock tick; each node is placed with its GUID counter and
    /// flags and appended, in id order, to `parent`'s children; the construction log follows;
    /// then families, animation, world membership (part-write log, collision) and GUI layouts
    /// as the class declares. Events and the topology journal are the caller's
    /// ([`Arena::announce_created`]), since single and bulk creation announce differently.
    /// `placed` sees each new id and slot, in order.
    pub(crate) fn place_run(
        &mut self,
        first: InstanceId,
        count: u32,
        class: ClassId,
        cold: Option<Arc<Cold>>,
        parent: Option<(InstanceId, Slot)>,
        mut placed: impl FnMut(InstanceId, Slot),
    ) -> Revision {
        let at = self.state.revisions_mut().tick();
        self.state.revisions_mut().topology = at;
        let descriptor = self.state.class_of(class);
        let traits = ClassTraits::of(descriptor);
        let service = descriptor.is_service();
        let in_world = parent.is_some_and(|(_, parent_slot)| self.inherits_world(parent_slot));
        let logs_entry = in_world && traits.part_log;
        let in_batch = !self.batches.is_empty();
        let nth = |offset: usize| {
            InstanceId::new(first.get() + offset as u64)
                .expect("ids of a validated run are non-zero")
        };
        let first_counter = self.guid_counter + 1;
        self.guid_counter += u64::from(count);
        let new_record = |offset: usize| {
            let mut record = Record::new(
                nth(offset),
                class,
                first_counter + offset as u64,
                cold.clone(),
                at,
            );
            record.set_parent_locked(service);
            record.set_in_world(in_world);
            record
        };
        let parent_slot = parent.map(|(_, slot)| slot);
        let mut placed = |arena: &mut Self, offset: usize, slot: Slot| {
            let id = nth(offset);
            if in_batch {
                arena.alloc_log.push(Doomed { id, slot });
            }
            if logs_entry {
                arena.part_log.push(PartWrite {
                    id,
                    kind: PartWriteKind::EnteredWorld,
                });
            }
            placed(id, slot);
        };
        if count == 1 {
            let slot = self.take_slot();
            self.state.place(slot, new_record(0), parent_slot);
            placed(self, 0, slot);
        } else {
            let mut slots = std::mem::take(&mut self.slot_scratch);
            slots.clear();
            self.take_slots(count, &mut slots);
            self.state.place_run(&slots, parent_slot, new_record);
            for (offset, &slot) in slots.iter().enumerate() {
                placed(self, offset, slot);
            }
            if slots.capacity() <= SLOT_SCRATCH_KEPT {
                self.slot_scratch = slots;
            }
        }
        self.mark_created(first, count, traits, parent.is_some(), in_world, at);
        at
    }

    /// The revision domains, family caches and GUI layouts a run of `count` new instances of a
    /// class with `traits` from `first` touches, at `at`.
    fn mark_created(
        &mut self,
        first: InstanceId,
        count: u32,
        traits: ClassTraits,
        parented: bool,
        in_world: bool,
        at: Revision,
    ) {
        self.membership_changed(traits.families, at);
        if traits.animation {
            self.state.revisions_mut().animation = at;
        }
        if in_world && traits.collision {
            self.state.revisions_mut().collision = at;
        }
        if parented && traits.gui.is_some() {
            let nth = |offset: u64| {
                InstanceId::new(first.get() + offset).expect("ids of a validated run are non-zero")
            };
            let created = if count == 1 {
                MovedIds::One(first)
            } else {
                MovedIds::from_vec((0..u64::from(count)).map(nth).collect())
            };
            self.invalidate_created_gui(traits, &created, at);
        }
    }

    /// Queues the `Created` event and journal entry of a single creation.
    pub(crate) fn announce_created(&mut self, id: InstanceId, parent: Option<(InstanceId, Slot)>) {
        let parent = parent.map(|(p, _)| p);
        self.events.push(Event::Created { id, parent });
        self.topology_log
            .push(TopologyChange::Created { id, parent });
    }

    /// Queues the one `CreatedRange` event and journal entry of a bulk creation.
    fn announce_created_range(
        &mut self,
        first: InstanceId,
        count: u32,
        parent: Option<(InstanceId, Slot)>,
    ) {
        let parent = parent.map(|(p, _)| p);
        self.events.push(Event::CreatedRange {
            first,
            count,
            parent,
        });
        self.topology_log.push(TopologyChange::CreatedRange {
            first,
            count,
            parent,
        });
    }

    // ----- Generic and specialised writes. -----

    /// Generic mutable access to a live node's name, attributes and the fields of its built-in
    /// state (never the state's variant, which its class fixes). The node is marked written
    /// (revision, families, collision, animation, part-write log, GUI layout) before it is
    /// returned, whether or not the caller then changes anything.
    pub fn node_mut(&mut self, id: InstanceId) -> Result<NodeMut<'_>, ArenaError> {
        let slot = self.state.live_slot(id)?;
        self.guard_batch_write(id)?;
        self.mark_written(slot, WriteScope::State);
        Ok(NodeMut::new(self.state.data_mut(slot)))
    }

    /// Renames an instance. Returns `false`, changing nothing, when the name is already equal.
    pub fn set_name(&mut self, id: InstanceId, name: &str) -> Result<bool, ArenaError> {
        let slot = self.state.live_slot(id)?;
        self.guard_batch_write(id)?;
        if self
            .state
            .record_at(slot)
            .is_some_and(|r| &*self.state.data_of(r).name == name)
        {
            return Ok(false);
        }
        self.mark_written(slot, WriteScope::Meta);
        self.state.data_mut(slot).name = Arc::from(name);
        Ok(true)
    }

    /// Sets (`Some`) or removes (`None`) an attribute. Returns `false`, changing nothing, when
    /// the stored value is already equal.
    pub fn set_attribute(
        &mut self,
        id: InstanceId,
        name: &str,
        value: Option<AttrValue>,
    ) -> Result<bool, ArenaError> {
        let slot = self.state.live_slot(id)?;
        self.guard_batch_write(id)?;
        let unchanged = self.state.record_at(slot).is_some_and(|r| {
            !self
                .state
                .data_of(r)
                .attributes
                .would_change(name, value.as_ref())
        });
        if unchanged {
            return Ok(false);
        }
        self.mark_written(slot, WriteScope::Meta);
        self.state.data_mut(slot).attributes.set(name, value);
        Ok(true)
    }

    /// Replaces an instance's built-in state. The variant must match its class. Returns
    /// `false`, changing nothing, when the state is already equal.
    pub fn set_state(&mut self, id: InstanceId, state: BuiltinState) -> Result<bool, ArenaError> {
        let slot = self.state.live_slot(id)?;
        self.guard_batch_write(id)?;
        let current = self.current_state(slot, id, state.kind())?;
        if *current == state {
            return Ok(false);
        }
        self.mark_written(slot, WriteScope::State);
        self.state.data_mut(slot).state = state;
        Ok(true)
    }

    /// Moves a part. Returns `false`, changing nothing, when the transform is already equal.
    pub fn set_part_transform(
        &mut self,
        id: InstanceId,
        transform: Transform,
    ) -> Result<bool, ArenaError> {
        self.set_state_field(
            id,
            transform,
            |p: &PartState| &p.transform,
            |p| &mut p.transform,
        )
    }

    /// Resizes a part. Returns `false`, changing nothing, when the size is already equal.
    pub fn set_part_size(&mut self, id: InstanceId, size: Vec3) -> Result<bool, ArenaError> {
        self.set_state_field(id, size, |p: &PartState| &p.size, |p| &mut p.size)
    }

    /// Sets a light's brightness. Returns `false`, changing nothing, when already equal.
    pub fn set_light_brightness(
        &mut self,
        id: InstanceId,
        brightness: f32,
    ) -> Result<bool, ArenaError> {
        self.set_state_field(
            id,
            brightness,
            |l: &LightState| &l.brightness,
            |l| &mut l.brightness,
        )
    }

    /// Sets a component definition's Luau source. Returns `false`, changing nothing, when the
    /// source is already equal.
    pub fn set_definition_source(
        &mut self,
        id: InstanceId,
        source: &str,
    ) -> Result<bool, ArenaError> {
        let slot = self.state.live_slot(id)?;
        self.guard_batch_write(id)?;
        let current = self.current_state(slot, id, StateKind::ComponentDefinition)?;
        if matches!(current, BuiltinState::ComponentDefinition { source: s } if **s == *source) {
            return Ok(false);
        }
        self.mark_written(slot, WriteScope::State);
        self.state.data_mut(slot).state = BuiltinState::ComponentDefinition {
            source: Arc::from(source),
        };
        Ok(true)
    }

    fn current_state(
        &self,
        slot: Slot,
        id: InstanceId,
        expected: StateKind,
    ) -> Result<&BuiltinState, ArenaError> {
        let record = self
            .state
            .record_at(slot)
            .ok_or(ArenaError::UnknownInstance(id))?;
        let actual = self.state.class_of(record.class()).state_kind();
        if actual != expected {
            return Err(ArenaError::WrongState {
                id,
                expected,
                actual,
            });
        }
        Ok(&self.state.data_of(record).state)
    }

    /// Writes one field of a node's state struct `S` unless it already holds `value`.
    fn set_state_field<S: StateVariant, T: PartialEq>(
        &mut self,
        id: InstanceId,
        value: T,
        field: impl Fn(&S) -> &T,
        field_mut: impl Fn(&mut S) -> &mut T,
    ) -> Result<bool, ArenaError> {
        let slot = self.state.live_slot(id)?;
        self.guard_batch_write(id)?;
        let current = self.current_state(slot, id, S::KIND)?;
        if S::of(current).map(field) == Some(&value) {
            return Ok(false);
        }
        self.mark_written(slot, WriteScope::State);
        // The kind was checked above and a node's state always matches its class's kind.
        if let Some(state) = S::of_mut(&mut self.state.data_mut(slot).state) {
            *field_mut(state) = value;
        }
        Ok(true)
    }

    /// Records that the node at `slot` is being written: node and global mutation revisions,
    /// its families, and for state writes the collision and animation revisions, the part-write
    /// log and GUI layout, as its class declares.
    pub(crate) fn mark_written(&mut self, slot: Slot, scope: WriteScope) -> Revision {
        let at = self.state.revisions_mut().tick();
        self.state.revisions_mut().mutation = at;
        let record = self.state.write_at(slot);
        record.set_revision(at);
        let (id, class, in_world) = (record.id(), record.class(), record.is_in_world());
        let descriptor = self.state.class_of(class);
        let families = descriptor.families();
        let collision = descriptor.affects_collision();
        let animation = descriptor.affects_animation();
        let part_log = descriptor.logs_part_writes();
        let kind = descriptor.state_kind();
        for family in families.iter() {
            self.state.revisions_mut().bump_family(family, at);
        }
        if scope == WriteScope::State {
            if collision && in_world {
                self.state.revisions_mut().collision = at;
            }
            if animation {
                self.state.revisions_mut().animation = at;
            }
            if part_log && in_world {
                self.part_log.push(PartWrite {
                    id,
                    kind: PartWriteKind::State,
                });
            }
            match kind {
                StateKind::GuiElement => {
                    if let Some(layer) = self.nearest_layer(id) {
                        self.state.invalidate_layout(layer, at);
                    }
                }
                StateKind::GuiLayer => {
                    self.state.invalidate_layout(id, at);
                    self.state.revisions_mut().layout = at;
                }
                _ => {}
            }
        }
        at
    }

    /// Locks or unlocks an instance's parent. Returns whether anything changed.
    pub fn set_parent_locked(&mut self, id: InstanceId, locked: bool) -> Result<bool, ArenaError> {
        let slot = self.state.live_slot(id)?;
        self.guard_batch_write(id)?;
        if self
            .state
            .record_at(slot)
            .is_some_and(|r| r.is_parent_locked() == locked)
        {
            return Ok(false);
        }
        self.state.write_at(slot).set_parent_locked(locked);
        Ok(true)
    }

    // ----- Tags. -----

    /// Adds a tag to a live instance. Returns `false` when it already had it.
    pub fn add_tag(&mut self, id: InstanceId, tag: &str) -> Result<bool, ArenaError> {
        let slot = self.state.live_slot(id)?;
        self.guard_batch_write(id)?;
        if self.state.has_tag(id, tag) {
            return Ok(false);
        }
        self.insert_tag(slot, tag);
        Ok(true)
    }

    /// Adds a tag the live instance at `slot` does not carry yet, and advances the tags
    /// revision.
    pub(crate) fn insert_tag(&mut self, slot: Slot, tag: &str) {
        self.state.add_tag(slot, tag);
        let at = self.state.revisions_mut().tick();
        self.state.revisions_mut().tags = at;
    }

    /// Removes a tag from a live instance. Returns `false` when it did not have it.
    pub fn remove_tag(&mut self, id: InstanceId, tag: &str) -> Result<bool, ArenaError> {
        let slot = self.state.live_slot(id)?;
        self.guard_batch_write(id)?;
        if !self.state.has_tag(id, tag) {
            return Ok(false);
        }
        self.state.remove_tag(slot, tag);
        let at = self.state.revisions_mut().tick();
        self.state.revisions_mut().tags = at;
        Ok(true)
    }

    // ----- Persistent ids. -----

    /// The persistent id of a live instance, assigning a fresh one on first request.
    pub fn ensure_persistent_id(&mut self, id: InstanceId) -> Result<PersistentId, ArenaError> {
        let slot = self.state.live_slot(id)?;
        self.guard_batch_write(id)?;
        if let Some(pid) = self.state.record_at(slot).and_then(Record::persistent_id) {
            return Ok(pid);
        }
        let seed = self.state.seed();
        let pid = loop {
            self.persistent_counter += 1;
            let raw = mix64(seed.rotate_left(17) ^ self.persistent_counter);
            if let Some(pid) = PersistentId::new(raw)
                && self.state.by_persistent_id(pid).is_none()
            {
                break pid;
            }
        };
        self.state.set_persistent_id(slot, Some(pid));
        Ok(pid)
    }

    /// Sets or clears a live instance's persistent id (loading saved data). Fails when another
    /// instance holds it. Returns whether anything changed.
    pub fn set_persistent_id(
        &mut self,
        id: InstanceId,
        pid: Option<PersistentId>,
    ) -> Result<bool, ArenaError> {
        let slot = self.state.live_slot(id)?;
        self.guard_batch_write(id)?;
        let current = self.state.record_at(slot).and_then(Record::persistent_id);
        if current == pid {
            return Ok(false);
        }
        if let Some(pid) = pid
            && let Some(holder) = self.state.by_persistent_id(pid)
        {
            return Err(ArenaError::PersistentIdInUse { pid, holder });
        }
        self.state.set_persistent_id(slot, pid);
        Ok(true)
    }

    // ----- Reparenting. -----

    /// Moves `child` (with its subtree) under `parent`, or unparents it with `None`. Returns
    /// `false` for a no-op move, which produces no event, journal entry or revision.
    ///
    /// Refused, leaving everything unchanged: unknown or destroyed child or destination, a
    /// locked child parent, a destination inside the child's own subtree, a destination class
    /// the child's class may not be placed in, and a subtree holding a locked instance below
    /// the child ([`ArenaError::LockedDescendant`]: it would move with it).
    pub fn set_parent(
        &mut self,
        child: InstanceId,
        parent: Option<InstanceId>,
    ) -> Result<bool, ArenaError> {
        let child_slot = self.state.live_slot(child)?;
        self.guard_batch_write(child)?;
        let record = self
            .state
            .record_at(child_slot)
            .ok_or(ArenaError::UnknownInstance(child))?;
        if self.state.parent_of(record) == parent {
            return Ok(false);
        }
        if record.is_parent_locked() {
            return Err(ArenaError::ParentLocked(child));
        }
        let parent = self.check_new_child(record.class(), parent)?;
        if let Some((parent_id, _)) = parent
            && (parent_id == child || self.state.is_ancestor_of(child, parent_id))
        {
            return Err(ArenaError::Cycle {
                child,
                parent: parent_id,
            });
        }
        let subtree = self.collect_subtree(child_slot);
        if let Some(locked) = subtree.info.locked_below {
            return Err(ArenaError::LockedDescendant {
                root: child,
                locked,
            });
        }
        self.move_subtree(subtree, parent);
        Ok(true)
    }

    /// Detaches a live subtree root from its parent, given its collected subtree: advances
    /// topology, unlinks, invalidates the old GUI layout and queues the removal events. Moves
    /// and destruction both start here.
    pub(crate) fn detach(&mut self, subtree: Subtree) -> Detached {
        let (root, root_slot) = subtree.root();
        let old_parent = self
            .state
            .record_at(root_slot)
            .and_then(|r| self.state.parent_of(r));
        let old_lineage = old_parent.map(|p| self.lineage(p));
        let old_layer = subtree.info.gui_layer_context(self, root);
        let at = self.state.revisions_mut().tick();
        self.state.revisions_mut().topology = at;
        if let (Some(parent), Some(ancestors)) = (old_parent, old_lineage) {
            self.state.unlink(root_slot);
            self.events.push(Event::DescendantRemoving {
                ancestors,
                moved: subtree.moved.clone(),
            });
            self.events.push(Event::ChildRemoved {
                parent,
                child: root,
            });
        }
        self.invalidate_gui(&subtree.moved, subtree.info, old_layer, at);
        Detached {
            subtree,
            old_parent,
            at,
        }
    }

    /// Performs a validated move of a collected subtree under `parent` (or out of the tree) and
    /// queues its events.
    pub(crate) fn move_subtree(&mut self, subtree: Subtree, parent: Option<(InstanceId, Slot)>) {
        let Detached {
            subtree,
            old_parent,
            at,
        } = self.detach(subtree);
        let (child, child_slot) = subtree.root();
        let in_world = match parent {
            Some((_, parent_slot)) => {
                self.state.link_last(child_slot, parent_slot);
                self.inherits_world(parent_slot)
            }
            None => false,
        };
        self.update_world_membership(
            &subtree,
            Membership::Derived {
                root_in_world: in_world,
            },
            at,
        );
        let info = subtree.info;
        let new_layer = info.gui_layer_context(self, child);
        self.invalidate_gui(&subtree.moved, info, new_layer, at);
        for family in info.families.iter() {
            self.state.revisions_mut().bump_family(family, at);
        }
        if info.animation {
            self.state.revisions_mut().animation = at;
        }
        self.topology_log.push(TopologyChange::Reparented {
            id: child,
            from: old_parent,
            to: parent.map(|(p, _)| p),
        });
        if let Some((parent, _)) = parent {
            self.events.push(Event::ChildAdded { parent, child });
        }
        let moved = subtree.moved;
        self.events.push(Event::AncestryChanged {
            moved: moved.clone(),
        });
        if let Some((parent, _)) = parent {
            let lineage = self.lineage(parent);
            self.events.push(Event::DescendantAdded {
                ancestors: lineage,
                moved,
            });
        }
    }

    /// Whether a child placed under the node at `parent` is in the world.
    fn inherits_world(&self, parent: Slot) -> bool {
        self.state
            .record_at(parent)
            .is_some_and(|p| p.is_in_world() || self.state.class_of(p.class()).is_world_container())
    }

    /// Brings the world flag of every node of a moved or destroyed subtree up to date, logging
    /// the parts that enter or leave and advancing the collision revision when a collision
    /// class changed membership. Each node's membership follows from its own ancestry (some
    /// ancestor is a world container), so a node under a world container inside the subtree
    /// keeps its membership whatever happens to the root.
    pub(crate) fn update_world_membership(
        &mut self,
        subtree: &Subtree,
        membership: Membership,
        at: Revision,
    ) {
        if let Membership::Derived { root_in_world } = membership {
            let root_was = self
                .state
                .record_at(subtree.root_slot)
                .is_some_and(Record::is_in_world);
            if root_was == root_in_world {
                // The rest of the subtree derives from the root and the subtree's own classes.
                return;
            }
        }
        let mut collision = false;
        for (index, (id, slot)) in subtree.members().enumerate() {
            let Some(record) = self.state.record_at(slot) else {
                continue;
            };
            let was = record.is_in_world();
            let now = match membership {
                Membership::Cleared => false,
                Membership::Derived { root_in_world } if index == 0 => root_in_world,
                // Pre-order: the parent's flag is already up to date.
                Membership::Derived { .. } => record
                    .parent()
                    .is_some_and(|parent| self.inherits_world(parent)),
            };
            if was == now {
                continue;
            }
            let descriptor = self.state.class_of(record.class());
            let (logs, collides) = (
                descriptor.logs_part_writes(),
                descriptor.affects_collision(),
            );
            self.state.write_at(slot).set_in_world(now);
            if logs {
                let kind = if now {
                    PartWriteKind::EnteredWorld
                } else {
                    PartWriteKind::LeftWorld
                };
                self.part_log.push(PartWrite { id, kind });
            }
            collision |= collides;
        }
        if collision {
            self.state.revisions_mut().collision = at;
        }
    }

    /// Invalidates GUI layouts affected by a subtree that moved relative to `layer` (the nearest
    /// layer above its root before or after the move). Moving a layer invalidates the broad
    /// layout memo and the layer's own layout.
    pub(crate) fn invalidate_gui(
        &mut self,
        moved: &MovedIds,
        info: SubtreeInfo,
        layer: Option<InstanceId>,
        at: Revision,
    ) {
        if !info.has_gui {
            return;
        }
        if info.has_layer {
            self.state.revisions_mut().layout = at;
            for &id in moved.as_slice() {
                if self.is_layer(id) {
                    self.state.invalidate_layout(id, at);
                }
            }
        }
        if let Some(layer) = layer {
            self.state.invalidate_layout(layer, at);
        }
    }

    /// The nearest proper ancestor that is a GUI layer.
    pub(crate) fn nearest_layer(&self, id: InstanceId) -> Option<InstanceId> {
        self.state.ancestors(id).find(|a| self.is_layer(*a))
    }

    fn is_layer(&self, id: InstanceId) -> bool {
        self.state.find(id).is_some_and(|(_, r)| {
            self.state.class_of(r.class()).state_kind() == StateKind::GuiLayer
        })
    }

    /// Invalidates the layouts that newly created GUI instances of one class, just linked under
    /// a parent, affect: the same rule as for a move into that place.
    fn invalidate_created_gui(&mut self, traits: ClassTraits, created: &MovedIds, at: Revision) {
        let info = SubtreeInfo::single(traits);
        let layer = info.gui_layer_context(self, created.root());
        self.invalidate_gui(created, info, layer, at);
    }

    /// The membership of these families changed: their cached member lists are dropped and
    /// their revisions advance.
    pub(crate) fn membership_changed(&mut self, families: FamilySet, at: Revision) {
        for family in families.iter() {
            self.state.invalidate_family(family);
            self.state.revisions_mut().bump_family(family, at);
        }
    }

    /// The subtree of the node at `root` in pre-order, root first, with what its classes have
    /// in common and the first locked node below the root.
    pub(crate) fn collect_subtree(&self, root: Slot) -> Subtree {
        let record = self
            .state
            .record_at(root)
            .expect("subtrees are collected from occupied slots");
        let root_id = record.id();
        let mut info = SubtreeInfo::single(ClassTraits::of(self.state.class_of(record.class())));
        let single = |info| Subtree {
            moved: MovedIds::One(root_id),
            slots: Vec::new(),
            root_slot: root,
            info,
        };
        if record.first_child().is_none() {
            return single(info);
        }
        let (mut ids, mut slots) = (vec![root_id], vec![root]);
        let mut next = record.first_child();
        while let Some(slot) = next {
            if let Some(record) = self.state.record_at(slot) {
                ids.push(record.id());
                slots.push(slot);
                info.add(ClassTraits::of(self.state.class_of(record.class())));
                if record.is_parent_locked() && info.locked_below.is_none() {
                    info.locked_below = Some(record.id());
                }
            }
            next = self.state.successor(root, slot);
        }
        Subtree {
            moved: MovedIds::from_vec(ids),
            slots,
            root_slot: root,
            info,
        }
    }

    /// `parent` and its ancestors, nearest first, as one shared list.
    pub(crate) fn lineage(&mut self, parent: InstanceId) -> Lineage {
        self.scratch.clear();
        self.scratch.push(parent);
        self.scratch.extend(self.state.ancestors(parent));
        Arc::from(&self.scratch[..])
    }

    // ----- Events and journals. -----

    /// The events queued since the last drain.
    pub fn pending_events(&self) -> &[Event] {
        &self.events
    }

    /// The part-write log.
    pub fn part_log(&self) -> &BoundedJournal<PartWrite> {
        &self.part_log
    }

    /// The part-write log entries since `cursor` (a head returned by an earlier read, or
    /// `part_log().head()`), or `HistoryUnavailable` when entries were dropped in between:
    /// the reader must then re-examine every part.
    pub fn part_writes_since(
        &self,
        cursor: u64,
    ) -> Result<JournalRead<'_, PartWrite>, HistoryUnavailable> {
        self.part_log.read_since(cursor)
    }

    /// The topology journal.
    pub fn topology_journal(&self) -> &BoundedJournal<TopologyChange> {
        &self.topology_log
    }

    /// Topology journal entries since `cursor`, or `HistoryUnavailable`.
    pub fn topology_since(
        &self,
        cursor: u64,
    ) -> Result<JournalRead<'_, TopologyChange>, HistoryUnavailable> {
        self.topology_log.read_since(cursor)
    }
}
