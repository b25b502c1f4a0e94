//! Reservations: ids and slots held for instances that do not exist yet, then published at
//! once or released.
//!
//! A staged bulk spawn reserves first (`Arena::reserve`, or `Arena::reserve_at` to restore
//! given ids), lets slot-keyed storage beside the arena fill the new rows, and publishes the
//! whole batch at one barrier (`Arena::publish`); a cancelled spawn releases its reservation
//! (`Arena::release`).
//!
//! Invariant: a reserved id or slot has no node: nothing reserved is live, findable, in
//! anyone's children, indexed or announced until its reservation is published. Every id a live
//! reservation holds is held by that reservation alone and by no node: an id of the arena's
//! own range lies below the id counter (so neither `create` nor another reservation takes it),
//! and an explicit id of the other range is listed in `Reservations::listed` (so
//! `insert_with_id` and `reserve_at` refuse it). Every slot a live reservation holds is vacant,
//! below the state's high-water mark and out of the free pool, so no creation takes it. The
//! registry (`Reservations`) knows exactly the live reservations by serial; a reservation leaves
//! it when it is published or released, and a token whose serial it does not know is refused.
//! A token dropped without either leaves what it held in the registry's inbox, and the arena
//! releases it at its next drain or reservation (`Arena::sweep_abandoned`), so nothing a
//! reservation holds is lost for good.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use hashbrown::{HashMap, HashSet};

use crate::arena::Arena;
use crate::class::ClassId;
use crate::create::SlotSource;
use crate::error::ArenaError;
use crate::event::{Event, TopologyChange};
use crate::id::{ArenaId, InstanceId, Slot};

/// Ids and slots held for instances not created yet: see [`Arena::reserve`].
///
/// Nothing a reservation holds is live, findable, in any children list or announced until it is
/// published ([`Arena::publish`]); releasing it ([`Arena::release`]) retires its ids and gives
/// its slots back. A reservation names its arena and carries a serial, so one from another
/// arena is refused ([`ArenaError::ForeignToken`]) and one its arena no longer holds is refused
/// ([`ArenaError::StaleReservation`]). It is not `Clone`: publishing or releasing consumes it.
/// A reservation dropped without either is released by its arena at the arena's next
/// [`Arena::drain`] or reservation: its ids stay retired and its slots return to the pool.
#[derive(Debug)]
#[must_use = "a reservation holds ids and slots until it is published or released"]
pub struct Reservation {
    arena: ArenaId,
    serial: u64,
    ids: ReservedIds,
    slots: ReservedSlots,
    /// Where the token leaves what it holds if it is dropped unconsumed; `None` once
    /// publication or release consumed it.
    inbox: Option<Inbox>,
}

impl PartialEq for Reservation {
    fn eq(&self, other: &Self) -> bool {
        (self.arena, self.serial, &self.ids, &self.slots)
            == (other.arena, other.serial, &other.ids, &other.slots)
    }
}

impl Eq for Reservation {}

impl Drop for Reservation {
    fn drop(&mut self) {
        let Some(inbox) = self.inbox.take() else {
            return;
        };
        let abandoned = Abandoned {
            serial: self.serial,
            ids: std::mem::replace(
                &mut self.ids,
                ReservedIds::Run {
                    first: None,
                    len: 0,
                },
            ),
            slots: std::mem::replace(
                &mut self.slots,
                ReservedSlots::Run {
                    first: Slot(0),
                    len: 0,
                },
            ),
        };
        inbox.lock().push(abandoned);
    }
}

/// What a reservation dropped unconsumed held, waiting for its arena to release it.
#[derive(Debug)]
struct Abandoned {
    serial: u64,
    ids: ReservedIds,
    slots: ReservedSlots,
}

/// The abandoned reservations of one arena, shared with every token it issued.
#[derive(Clone, Debug, Default)]
struct Inbox(Arc<Mutex<Vec<Abandoned>>>);

impl Inbox {
    fn lock(&self) -> MutexGuard<'_, Vec<Abandoned>> {
        // Pushing and taking cannot panic halfway, so a poisoned list is still whole.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The ids of a reservation.
#[derive(Debug, PartialEq, Eq)]
enum ReservedIds {
    /// `len` consecutive ids from `first` (`None` when empty).
    Run {
        first: Option<InstanceId>,
        len: usize,
    },
    /// Ids that are not one consecutive run, in the order given.
    List(Vec<InstanceId>),
}

/// The slots of a reservation, one per id.
#[derive(Debug, PartialEq, Eq)]
enum ReservedSlots {
    /// Consecutive fresh slots from `first`.
    Run { first: Slot, len: usize },
    /// Slots that include recycled ones, in the order they were taken.
    List(Vec<Slot>),
}

impl ReservedSlots {
    /// The slots in the order a release gives them back to the free pool: the last first, so
    /// the pool hands them out again in reservation order.
    fn released_order(&self) -> Box<dyn Iterator<Item = Slot> + '_> {
        match self {
            ReservedSlots::Run { first, len } => {
                let len = u32::try_from(*len).expect("reservations are checked to fit u32");
                let first = first.0;
                Box::new((0..len).rev().map(move |k| Slot(first + k)))
            }
            ReservedSlots::List(slots) => Box::new(slots.iter().rev().copied()),
        }
    }
}

impl Reservation {
    /// The arena that issued this reservation.
    pub fn arena(&self) -> ArenaId {
        self.arena
    }

    /// How many instances it holds ids and slots for.
    pub fn len(&self) -> usize {
        match &self.ids {
            ReservedIds::Run { len, .. } => *len,
            ReservedIds::List(ids) => ids.len(),
        }
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The first id. With [`Reservation::ids`] `None`, the ids are `first`, `first + 1`, ...
    /// (one contiguous run). `None` for an empty reservation.
    pub fn first(&self) -> Option<InstanceId> {
        match &self.ids {
            ReservedIds::Run { first, .. } => *first,
            ReservedIds::List(ids) => ids.first().copied(),
        }
    }

    /// The explicit id list when the ids are not one contiguous run (a restoration through
    /// [`Arena::reserve_at`] of scattered ids); `None` for a contiguous run.
    pub fn ids(&self) -> Option<&[InstanceId]> {
        match &self.ids {
            ReservedIds::Run { .. } => None,
            ReservedIds::List(ids) => Some(ids),
        }
    }

    /// The `k`-th reserved id (`None` past the end).
    pub fn id(&self, k: usize) -> Option<InstanceId> {
        match &self.ids {
            ReservedIds::Run { first, len } if k < *len => {
                let first = (*first)?;
                InstanceId::new(first.get() + k as u64)
            }
            ReservedIds::Run { .. } => None,
            ReservedIds::List(ids) => ids.get(k).copied(),
        }
    }

    /// The slot reserved for the `k`-th id (`None` past the end).
    pub fn slot(&self, k: usize) -> Option<Slot> {
        match &self.slots {
            ReservedSlots::Run { first, len } if k < *len => {
                let k = u32::try_from(k).ok()?;
                Some(Slot(first.0 + k))
            }
            ReservedSlots::Run { .. } => None,
            ReservedSlots::List(slots) => slots.get(k).copied(),
        }
    }

    /// Whether the slots are one contiguous run of fresh slots (no recycled slot among them):
    /// slot `k` is then `slot(0) + k`. True for an empty reservation.
    pub fn slots_contiguous(&self) -> bool {
        matches!(self.slots, ReservedSlots::Run { .. })
    }

    /// Each reserved id with its slot, in order.
    ///
    /// # Panics
    ///
    /// Never: a reservation holds an id and a slot for each of its positions (the `expect`s state
    /// why).
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (InstanceId, Slot)> + '_ {
        (0..self.len()).map(|k| {
            (
                self.id(k).expect("k is below the reservation's length"),
                self.slot(k).expect("a reservation holds one slot per id"),
            )
        })
    }

    /// The `k`-th id, for a reservation known to hold more than `k`.
    fn nth(&self, k: usize) -> InstanceId {
        self.id(k).expect("k is below the reservation's length")
    }
}

/// The live reservations of one arena.
#[derive(Debug, Default)]
pub(crate) struct Reservations {
    /// Serial → the id run a live reservation holds (`None` for an explicit list, whose ids are
    /// in `listed`).
    held: HashMap<u64, Option<(u64, u64)>>,
    /// The ids of every live reservation made from an explicit list that is not one run.
    listed: HashSet<InstanceId>,
    /// Tokens dropped unconsumed leave what they held here.
    inbox: Inbox,
}

impl Reservations {
    /// How many reservations are live and still held by a token.
    pub(crate) fn len(&self) -> usize {
        self.held.len() - self.inbox.lock().len()
    }

    /// When every live reservation was left behind by a dropped token, the slots they hold in
    /// the order [`Arena::sweep_abandoned`] would give them back to the free pool; `None` while
    /// a token still holds one. Read under one lock of the inbox, so a token dropped meanwhile
    /// cannot make the answer inconsistent.
    pub(crate) fn abandoned_slots(&self) -> Option<Vec<Slot>> {
        let inbox = self.inbox.lock();
        let live = |abandoned: &&Abandoned| self.is_live(abandoned.serial);
        if inbox.iter().filter(live).count() != self.held.len() {
            return None;
        }
        Some(
            inbox
                .iter()
                .filter(live)
                .flat_map(|abandoned| abandoned.slots.released_order())
                .collect(),
        )
    }

    /// Whether a live reservation holds `id`.
    pub(crate) fn holds(&self, id: InstanceId) -> bool {
        if self.held.is_empty() {
            return false;
        }
        self.listed.contains(&id)
            || self
                .held
                .values()
                .flatten()
                .any(|&(first, end)| (first..end).contains(&id.get()))
    }

    /// Whether the reservation with `serial` is live.
    fn is_live(&self, serial: u64) -> bool {
        self.held.contains_key(&serial)
    }

    fn open(&mut self, serial: u64, ids: &ReservedIds) {
        match ids {
            ReservedIds::Run { first, len } => {
                let run = first.map(|first| (first.get(), first.get() + *len as u64));
                self.held.insert(serial, run);
            }
            ReservedIds::List(ids) => {
                self.listed.extend(ids.iter().copied());
                self.held.insert(serial, None);
            }
        }
    }

    fn close(&mut self, serial: u64, ids: &ReservedIds) {
        self.held.remove(&serial);
        if let ReservedIds::List(ids) = ids {
            for id in ids {
                self.listed.remove(id);
            }
        }
    }

    /// Takes what dropped tokens left behind.
    fn take_abandoned(&mut self) -> Vec<Abandoned> {
        std::mem::take(&mut *self.inbox.lock())
    }
}

impl Arena {
    /// Reserves `count` ids and slots for instances that do not exist yet, to be created
    /// together by [`Arena::publish`] or given back by [`Arena::release`].
    ///
    /// The ids are always the next `count` of the arena's own counter, one contiguous run
    /// ([`Reservation::ids`] is `None`); ids are never reused, so they are never issued again
    /// whatever becomes of the reservation. The slots are recycled ones from the free pool
    /// first, then fresh ones ([`Reservation::slots_contiguous`] says whether they are one run
    /// of fresh slots). Until publication nothing exists: no node, nothing live, findable,
    /// indexed or announced, and a [`Snapshot`](crate::Snapshot) shows none of it; creations and
    /// other reservations never take these ids or slots. `count == 0` gives an empty
    /// reservation, which takes nothing.
    ///
    /// ```
    /// use strata_arena::{Arena, ClassId};
    ///
    /// let mut arena = Arena::standard();
    /// let folder = arena.create(ClassId::FOLDER, None)?;
    /// let reservation = arena.reserve(3)?;
    /// let first = reservation.first().expect("three ids");
    /// assert_eq!(reservation.ids(), None); // a contiguous run: first, first + 1, first + 2
    /// assert!(!arena.is_live(first));
    /// assert_eq!(arena.children(folder).count(), 0);
    ///
    /// arena.publish(reservation, ClassId::PART, Some(folder)).map_err(|(_, e)| e)?;
    /// assert!(arena.is_live(first));
    /// assert_eq!(arena.children(folder).count(), 3);
    /// # Ok::<(), strata_arena::ArenaError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// Refused, taking nothing: inside a construction batch ([`ArenaError::BatchInProgress`]), or
    /// when the id range or the slots cannot hold `count` more instances.
    pub fn reserve(&mut self, count: usize) -> Result<Reservation, ArenaError> {
        self.refuse_reservation_in_batch()?;
        self.sweep_abandoned();
        let count32 = u32::try_from(count).map_err(|_| ArenaError::SlotsExhausted)?;
        let ids = if count == 0 {
            ReservedIds::Run {
                first: None,
                len: 0,
            }
        } else {
            let first = self.reserve_ids(count32)?;
            ReservedIds::Run {
                first: Some(first),
                len: count,
            }
        };
        let serial = self.next_token();
        let slots = self.reserve_slots(count32);
        Ok(self.open_reservation(serial, ids, slots))
    }

    /// Reserves exactly these ids (restoration: replication, loading a save), with slots taken
    /// as [`Arena::reserve`] takes them. The ids keep the order given; when they are one
    /// ascending run of consecutive ids the reservation is a run ([`Reservation::ids`] is
    /// `None`), otherwise it carries the list. An id of the arena's own range moves its counter
    /// past it, so the arena never issues it itself.
    ///
    /// # Errors
    ///
    /// Refused, taking nothing, with the first offending id: inside a construction batch
    /// ([`ArenaError::BatchInProgress`]); an id outside every range ([`ArenaError::IdOutOfRange`]);
    /// an id listed twice ([`ArenaError::DuplicateId`]); an id held by a live instance or a
    /// tombstone ([`ArenaError::IdInUse`]); an id another live reservation holds
    /// ([`ArenaError::IdReserved`]); an id of the arena's own range it has already issued
    /// ([`ArenaError::IdRetired`]); no room for the slots.
    pub fn reserve_at(&mut self, ids: &[InstanceId]) -> Result<Reservation, ArenaError> {
        self.refuse_reservation_in_batch()?;
        self.sweep_abandoned();
        let count32 = u32::try_from(ids.len()).map_err(|_| ArenaError::SlotsExhausted)?;
        let mut seen = HashSet::with_capacity(ids.len());
        for &id in ids {
            // A repeat is refused before the checks: its first occurrence passed them.
            if !seen.insert(id) {
                return Err(ArenaError::DuplicateId(id));
            }
            self.check_id_fresh(id)?;
        }
        self.slots.check_room(count32, self.state.slot_len())?;
        let serial = self.next_token();
        for &id in ids {
            self.ids.inserted(id);
        }
        let consecutive = ids
            .windows(2)
            .all(|pair| pair[0].get().checked_add(1) == Some(pair[1].get()));
        let reserved = if consecutive {
            ReservedIds::Run {
                first: ids.first().copied(),
                len: ids.len(),
            }
        } else {
            ReservedIds::List(ids.to_vec())
        };
        let slots = self.reserve_slots(count32);
        Ok(self.open_reservation(serial, reserved, slots))
    }

    /// [`Arena::reserve_at`] from raw id values (a borrowed slice read from a file or the
    /// network).
    ///
    /// # Errors
    ///
    /// Refused, taking nothing, with [`ArenaError::InvalidRawId`] for zero or a value outside every
    /// id range, then as `reserve_at`.
    pub fn reserve_at_raw(&mut self, ids: &[u64]) -> Result<Reservation, ArenaError> {
        let ids = ids
            .iter()
            .map(|&raw| {
                InstanceId::new(raw)
                    .filter(|id| id.get() < id.range().end())
                    .ok_or(ArenaError::InvalidRawId(raw))
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.reserve_at(&ids)
    }

    /// Makes every check [`Arena::publish`] makes, changing nothing: the reservation is this
    /// arena's ([`ArenaError::ForeignToken`]) and still held ([`ArenaError::StaleReservation`]),
    /// no construction batch is open ([`ArenaError::BatchInProgress`]), `class` is registered
    /// and `parent` is live and allows it. A caller publishing several things at one barrier
    /// can validate them all first.
    ///
    /// # Errors
    ///
    /// The first refusal of those checks: [`ArenaError::ForeignToken`],
    /// [`ArenaError::StaleReservation`], [`ArenaError::BatchInProgress`], or the class and parent
    /// refusals of [`Arena::create`].
    pub fn check_publish(
        &self,
        reservation: &Reservation,
        class: ClassId,
        parent: Option<InstanceId>,
    ) -> Result<(), ArenaError> {
        self.validate_publish(reservation, class, parent)
            .map(|_| ())
    }

    /// Creates the reserved instances as instances of `class` under `parent`, at their reserved
    /// ids and slots, exactly as [`Arena::create_many`] creates a run: one clock tick, appended
    /// in reservation order to `parent`'s children, with the construction, world-membership,
    /// family and GUI bookkeeping of any creation. The whole batch is announced by ONE event and
    /// ONE topology-journal entry: `CreatedRange` for a contiguous run of ids, `CreatedList` for
    /// an explicit list. Publishing an empty reservation only consumes it.
    ///
    /// Refused when a check of [`Arena::check_publish`] fails: nothing changes and the
    /// reservation comes back with the error, still held and usable (publish it under a valid
    /// parent, or release it).
    ///
    /// # Panics
    ///
    /// Never: a reservation's length was checked to fit a `u32` when it was made.
    ///
    /// # Errors
    ///
    /// The reservation handed back with the refusal of [`Arena::check_publish`], nothing created.
    pub fn publish(
        &mut self,
        mut reservation: Reservation,
        class: ClassId,
        parent: Option<InstanceId>,
    ) -> Result<(), (Reservation, ArenaError)> {
        let parent = match self.validate_publish(&reservation, class, parent) {
            Ok(parent) => parent,
            Err(error) => return Err((reservation, error)),
        };
        reservation.inbox = None;
        self.reservations
            .close(reservation.serial, &reservation.ids);
        let Some(first) = reservation.first() else {
            return Ok(());
        };
        let count = u32::try_from(reservation.len()).expect("reservations are checked to fit u32");
        let source = match &reservation.slots {
            ReservedSlots::Run { first, .. } => SlotSource::Run(*first),
            ReservedSlots::List(slots) => SlotSource::List(slots),
        };
        let nth = |k: usize| reservation.nth(k);
        self.place_at(nth, count, class, None, parent, source, |_, _| {});
        match &reservation.ids {
            ReservedIds::Run { .. } => self.announce_created_range(first, count, parent),
            ReservedIds::List(ids) => {
                let ids: std::sync::Arc<[InstanceId]> = ids.as_slice().into();
                let parent = parent.map(|(p, _)| p);
                self.outbox.event(Event::CreatedList {
                    ids: ids.clone(),
                    parent,
                });
                self.outbox
                    .topology(TopologyChange::CreatedList { ids, parent });
            }
        }
        Ok(())
    }

    /// Cancels a reservation: its ids are retired for good (the arena never issues an id of its
    /// own range twice; an explicit id of the other range is simply no longer held) and its
    /// slots go back to the free pool. Nothing was announced, so nothing is. Allowed inside a
    /// construction batch.
    ///
    /// # Errors
    ///
    /// Refused, changing nothing, for another arena's reservation ([`ArenaError::ForeignToken`]) or
    /// one no longer held ([`ArenaError::StaleReservation`]).
    pub fn release(&mut self, mut reservation: Reservation) -> Result<(), ArenaError> {
        self.check_token(&reservation)?;
        reservation.inbox = None;
        self.give_back(reservation.serial, &reservation.ids, &reservation.slots);
        Ok(())
    }

    /// How many reservations are outstanding: held by a token, neither published nor released.
    pub fn reserved_count(&self) -> usize {
        self.reservations.len()
    }

    /// Releases what tokens dropped without publication or release held, as
    /// [`Arena::release`] would have. Runs at every drain and reservation, never inside a
    /// construction batch.
    pub(crate) fn sweep_abandoned(&mut self) {
        for abandoned in self.reservations.take_abandoned() {
            if self.reservations.is_live(abandoned.serial) {
                self.give_back(abandoned.serial, &abandoned.ids, &abandoned.slots);
            }
        }
    }

    /// Takes a reservation out of the registry and returns its slots to the free pool.
    fn give_back(&mut self, serial: u64, ids: &ReservedIds, slots: &ReservedSlots) {
        self.reservations.close(serial, ids);
        for slot in slots.released_order() {
            self.slots.release(slot);
        }
    }

    /// The checks of `check_publish`; returns the parent with its slot.
    fn validate_publish(
        &self,
        reservation: &Reservation,
        class: ClassId,
        parent: Option<InstanceId>,
    ) -> Result<Option<(InstanceId, Slot)>, ArenaError> {
        self.check_token(reservation)?;
        if self.batches.is_open() {
            return Err(ArenaError::BatchInProgress(
                "reservations are published outside construction batches",
            ));
        }
        self.check_new_child(class, parent)
    }

    fn refuse_reservation_in_batch(&self) -> Result<(), ArenaError> {
        if self.batches.is_open() {
            return Err(ArenaError::BatchInProgress(
                "ids cannot be reserved inside a construction batch",
            ));
        }
        Ok(())
    }

    fn check_token(&self, reservation: &Reservation) -> Result<(), ArenaError> {
        if reservation.arena != self.arena_id() {
            return Err(ArenaError::ForeignToken);
        }
        if !self.reservations.is_live(reservation.serial) {
            return Err(ArenaError::StaleReservation);
        }
        Ok(())
    }

    /// Takes `count` slots for a reservation whose room was checked: recycled ones first, then
    /// fresh ones, over which the state's high-water mark rises at once.
    fn reserve_slots(&mut self, count: u32) -> ReservedSlots {
        let slot_len = self.state.slot_len();
        if count == 0 || self.slots.free_len() == 0 {
            self.state.extend_vacant(slot_len + count);
            return ReservedSlots::Run {
                first: Slot(slot_len),
                len: count as usize,
            };
        }
        let mut slots = Vec::with_capacity(count as usize);
        self.slots.take_many(count, slot_len, &mut slots);
        let fresh = slots.iter().filter(|slot| slot.0 >= slot_len).count() as u32;
        self.state.extend_vacant(slot_len + fresh);
        ReservedSlots::List(slots)
    }

    fn open_reservation(
        &mut self,
        serial: u64,
        ids: ReservedIds,
        slots: ReservedSlots,
    ) -> Reservation {
        self.reservations.open(serial, &ids);
        Reservation {
            arena: self.arena_id(),
            serial,
            ids,
            slots,
            inbox: Some(self.reservations.inbox.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A second token carrying the serial of one already consumed: the registry refuses it,
    /// whatever it claims to hold.
    fn forged(reservation: &Reservation) -> Reservation {
        Reservation {
            inbox: None,
            arena: reservation.arena,
            serial: reservation.serial,
            ids: ReservedIds::Run {
                first: reservation.first(),
                len: reservation.len(),
            },
            slots: ReservedSlots::Run {
                first: reservation.slot(0).expect("one slot"),
                len: reservation.len(),
            },
        }
    }

    #[test]
    fn a_reservation_no_longer_held_is_refused_and_changes_nothing() {
        let mut arena = Arena::standard();
        let reservation = arena.reserve(2).expect("room for two");
        let copy = forged(&reservation);
        let copy2 = forged(&reservation);
        arena
            .publish(reservation, ClassId::FOLDER, None)
            .expect("a held reservation publishes");
        let live = arena.live_count();
        let events = arena.pending_events().len();
        assert_eq!(
            arena.check_publish(&copy, ClassId::FOLDER, None),
            Err(ArenaError::StaleReservation)
        );
        let (_, error) = arena
            .publish(copy, ClassId::FOLDER, None)
            .expect_err("stale");
        assert_eq!(error, ArenaError::StaleReservation);
        assert_eq!(arena.release(copy2), Err(ArenaError::StaleReservation));
        assert_eq!(arena.live_count(), live);
        assert_eq!(arena.pending_events().len(), events);
        assert_eq!(arena.slots.free_len(), 0, "no slot was freed twice");
    }
}
