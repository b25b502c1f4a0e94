//! Creation: single, bulk and explicit-id creation, and the steps every creation shares (copies
//! and published reservations included).
//!
//! Invariant: a creation validates the class, the parent and the room for its ids and slots
//! before anything changes; then one clock tick covers the whole run, every new instance is
//! appended in order to its parent's children, and single, bulk and published creation differ
//! only in where their ids and slots come from and how they announce it (`Created` per
//! instance, or one `CreatedRange` or `CreatedList`).

use std::sync::Arc;

use crate::arena::Arena;
use crate::class::ClassId;
use crate::error::ArenaError;
use crate::event::{Doomed, Event, MovedIds, PartWrite, PartWriteKind, TopologyChange};
use crate::hierarchy::ClassTraits;
use crate::id::{InstanceId, Slot};
use crate::revision::{Domain, Revision};
use crate::snapshot::{Cold, Record};

/// Where the slots of a run of new instances come from.
#[derive(Clone, Copy, Debug)]
pub(crate) enum SlotSource<'a> {
    /// The free pool, then fresh slots from the high-water mark.
    Pool,
    /// Consecutive vacant slots from this one on, held by a reservation.
    Run(Slot),
    /// These vacant slots, held by a reservation, one per instance.
    List(&'a [Slot]),
}

/// The largest slot buffer a creation keeps for the next one (a bulk creation larger than this
/// frees its own).
const SLOT_SCRATCH_KEPT: usize = 4096;

impl Arena {
    /// Creates an instance of `class`, optionally under `parent`, and returns its new id.
    ///
    /// # Errors
    ///
    /// [`ArenaError::UnknownClassId`] for a class of another registry, an unknown, destroyed or
    /// containment-refusing `parent` ([`ArenaError::UnknownInstance`],
    /// [`ArenaError::DestroyedInstance`], [`ArenaError::Containment`]), and
    /// [`ArenaError::IdSpaceExhausted`] or [`ArenaError::SlotsExhausted`] when no id or slot is
    /// left.
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
    /// instance's id and slot, in id (and child) order.
    ///
    /// # Errors
    ///
    /// Refused, changing nothing, for a bad class or parent, or when the id range or the slots
    /// cannot hold `count` more instances.
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
    ///
    /// # Errors
    ///
    /// [`ArenaError::UnknownClass`] for a name no class has, then as [`Arena::create`].
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
    /// id range (`u64::MAX` does not), must not be held by a live instance, a tombstone or a
    /// reservation ([`ArenaError::IdReserved`]), and an
    /// id of this arena's own range must not have been issued by it already; inserting one moves
    /// the arena's counter past it.
    ///
    /// # Errors
    ///
    /// [`ArenaError::BatchInProgress`] inside a construction batch; [`ArenaError::IdOutOfRange`],
    /// [`ArenaError::IdInUse`], [`ArenaError::IdReserved`] or [`ArenaError::IdRetired`] for an id
    /// that cannot be given (checked in that order); then as [`Arena::create`] for the class, the
    /// parent and the room for a slot.
    pub fn insert_with_id(
        &mut self,
        id: InstanceId,
        class: ClassId,
        parent: Option<InstanceId>,
    ) -> Result<(), ArenaError> {
        if self.batches.is_open() {
            return Err(ArenaError::BatchInProgress(
                "explicit ids cannot be inserted inside a construction batch",
            ));
        }
        self.check_id_fresh(id)?;
        let parent = self.check_new_child(class, parent)?;
        self.slots.check_room(1, self.state.slot_len())?;
        self.ids.inserted(id);
        self.place_run(id, 1, class, None, parent, |_, _| {});
        self.announce_created(id, parent);
        Ok(())
    }

    /// Inserts an instance of an image into a fresh arena: at its id, under its parent (listed
    /// before it), checked as [`Arena::insert_with_id`] checks except for an own-range id below
    /// the counter, since images list instances in pre-order rather than id order (the caller
    /// refuses ids listed twice).
    pub(crate) fn insert_imaged(
        &mut self,
        id: InstanceId,
        class: ClassId,
        parent: Option<InstanceId>,
    ) -> Result<(), ArenaError> {
        self.check_id_free(id)?;
        let parent = self.check_new_child(class, parent)?;
        self.slots.check_room(1, self.state.slot_len())?;
        self.ids.inserted(id);
        self.place_run(id, 1, class, None, parent, |_, _| {});
        Ok(())
    }

    /// Whether `id` may be given to a new instance, whatever its range's counter says: it lies
    /// inside an id range ([`ArenaError::IdOutOfRange`]), and no live instance or tombstone
    /// ([`ArenaError::IdInUse`]) nor reservation ([`ArenaError::IdReserved`]) holds it. The
    /// checks every id chosen elsewhere goes through, in this order.
    pub(crate) fn check_id_free(&self, id: InstanceId) -> Result<(), ArenaError> {
        if id.get() >= id.range().end() {
            return Err(ArenaError::IdOutOfRange(id));
        }
        if self.state.find(id).is_some() {
            return Err(ArenaError::IdInUse(id));
        }
        if self.reservations.holds(id) {
            return Err(ArenaError::IdReserved(id));
        }
        Ok(())
    }

    /// [`Arena::check_id_free`], and, for an id of the arena's own range, not issued by it
    /// already ([`ArenaError::IdRetired`]): ids are never reused.
    pub(crate) fn check_id_fresh(&self, id: InstanceId) -> Result<(), ArenaError> {
        self.check_id_free(id)?;
        if self.ids.is_retired(id) {
            return Err(ArenaError::IdRetired(id));
        }
        Ok(())
    }

    /// Whether instances of `class` could be created under `parent` now: the class is known,
    /// and the parent, when given, is live and may hold the class. Changes nothing; for
    /// callers that must refuse before taking anything (a staged spawn checks this before it
    /// reserves ids, which a release would retire).
    ///
    /// # Errors
    ///
    /// The refusal [`Arena::create`] would give for `class` and `parent`:
    /// [`ArenaError::UnknownClassId`], [`ArenaError::UnknownInstance`],
    /// [`ArenaError::DestroyedInstance`] or [`ArenaError::Containment`].
    pub fn check_new_instances(
        &self,
        class: ClassId,
        parent: Option<InstanceId>,
    ) -> Result<(), ArenaError> {
        self.check_new_child(class, parent).map(|_| ())
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
        let slots = &self.slots;
        let slot_len = self.state.slot_len();
        self.ids
            .reserve(count, || slots.check_room(count, slot_len))
    }

    /// The steps every creation shares (single, bulk, explicit id, copy), for `count >= 1`
    /// instances of `class` with consecutive ids from `first`, each starting from `cold` (`None`
    /// for the class's defaults, which new nodes then read from the class instead of holding a
    /// copy), in slots taken from the free pool. Everything is validated: the ids are free, slot
    /// room was checked, `parent` is live and allows the class. See [`Arena::place_at`].
    pub(crate) fn place_run(
        &mut self,
        first: InstanceId,
        count: u32,
        class: ClassId,
        cold: Option<Arc<Cold>>,
        parent: Option<(InstanceId, Slot)>,
        placed: impl FnMut(InstanceId, Slot),
    ) -> Revision {
        let nth = move |offset: usize| {
            InstanceId::new(first.get() + offset as u64)
                .expect("ids of a validated run are non-zero")
        };
        self.place_at(nth, count, class, cold, parent, SlotSource::Pool, placed)
    }

    /// Places `count >= 1` validated instances of `class`, the `k`-th with id `nth(k)`, in the
    /// slots `slots` names (taken from the free pool, or held by a reservation). One clock tick;
    /// each node is placed with its GUID counter and flags and appended, in order, to `parent`'s
    /// children; the construction log follows; then families, animation, world membership
    /// (part-write log, collision) and GUI layouts as the class declares. Events and the
    /// topology journal are the caller's ([`Arena::announce_created`]), since single, bulk and
    /// published creations announce differently. `placed` sees each new id and slot, in order.
    #[expect(
        clippy::too_many_arguments,
        reason = "the shared core of every creation path; each caller names its own source of ids and slots"
    )]
    pub(crate) fn place_at(
        &mut self,
        nth: impl Fn(usize) -> InstanceId + Copy,
        count: u32,
        class: ClassId,
        cold: Option<Arc<Cold>>,
        parent: Option<(InstanceId, Slot)>,
        source: SlotSource<'_>,
        mut placed: impl FnMut(InstanceId, Slot),
    ) -> Revision {
        let at = self.state.revisions_mut().tick();
        self.state.revisions_mut().record(Domain::Topology, at);
        let descriptor = self.state.class_of(class);
        let traits = ClassTraits::of(descriptor);
        let service = descriptor.is_service();
        let in_world = parent.is_some_and(|(_, parent_slot)| self.inherits_world(parent_slot));
        let logs_entry = in_world && traits.part_log;
        let in_batch = self.batches.is_open();
        let first_counter = self.ids.creations(count);
        let new_record = |offset: usize| {
            let mut record = Record::new(nth(offset), class, first_counter + offset as u64, at);
            record.set_parent_locked(service);
            record.set_in_world(in_world);
            record
        };
        let parent_slot = parent.map(|(_, slot)| slot);
        let mut placed = |arena: &mut Self, offset: usize, slot: Slot| {
            let id = nth(offset);
            if in_batch {
                arena.batches.record(Doomed { id, slot });
            }
            if logs_entry {
                arena.outbox.part(PartWrite {
                    id,
                    kind: PartWriteKind::EnteredWorld,
                });
            }
            placed(id, slot);
        };
        if count == 1 {
            let slot = match source {
                SlotSource::Pool => self.slots.take(self.state.slot_len()),
                SlotSource::Run(first) => first,
                SlotSource::List(slots) => slots[0],
            };
            self.state
                .place(slot, new_record(0), cold.clone(), parent_slot);
            placed(self, 0, slot);
        } else {
            let mut slots = std::mem::take(&mut self.scratch.slots);
            slots.clear();
            match source {
                SlotSource::Pool => self
                    .slots
                    .take_many(count, self.state.slot_len(), &mut slots),
                SlotSource::Run(first) => slots.extend((0..count).map(|k| Slot(first.0 + k))),
                SlotSource::List(given) => slots.extend_from_slice(given),
            }
            self.state
                .place_run(&slots, parent_slot, cold.as_ref(), new_record);
            for (offset, &slot) in slots.iter().enumerate() {
                placed(self, offset, slot);
            }
            if slots.capacity() <= SLOT_SCRATCH_KEPT {
                self.scratch.slots = slots;
            }
        }
        self.mark_created(nth, count, traits, parent.is_some(), in_world, at);
        at
    }

    /// The revision domains, family caches and GUI layouts a run of `count` new instances of a
    /// class with `traits` (the `k`-th with id `nth(k)`) touches, at `at`.
    fn mark_created(
        &mut self,
        nth: impl Fn(usize) -> InstanceId,
        count: u32,
        traits: ClassTraits,
        parented: bool,
        in_world: bool,
        at: Revision,
    ) {
        self.membership_changed(traits.families, at);
        if traits.animation {
            self.state.revisions_mut().record(Domain::Animation, at);
        }
        if in_world && traits.collision {
            self.state.revisions_mut().record(Domain::Collision, at);
        }
        if parented && traits.gui.is_some() {
            let created = if count == 1 {
                MovedIds::One(nth(0))
            } else {
                MovedIds::from_vec((0..count as usize).map(nth).collect())
            };
            self.invalidate_created_gui(traits, &created, at);
        }
    }

    /// Queues the `Created` event (which the outbox folds into the previous event when that
    /// announced the creation of the previous id under the same parent) and the journal entry
    /// of a single creation.
    pub(crate) fn announce_created(&mut self, id: InstanceId, parent: Option<(InstanceId, Slot)>) {
        let parent = parent.map(|(p, _)| p);
        self.outbox.event(Event::Created { id, parent });
        self.outbox.topology(TopologyChange::Created { id, parent });
    }

    /// Queues the one `CreatedRange` event and journal entry of a bulk creation.
    pub(crate) fn announce_created_range(
        &mut self,
        first: InstanceId,
        count: u32,
        parent: Option<(InstanceId, Slot)>,
    ) {
        let parent = parent.map(|(p, _)| p);
        self.outbox.event(Event::CreatedRange {
            first,
            count,
            parent,
        });
        self.outbox.topology(TopologyChange::CreatedRange {
            first,
            count,
            parent,
        });
    }
}
