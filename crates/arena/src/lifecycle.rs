//! Destruction (one subtree with `destroy`, many with `destroy_many`, which announces them
//! with one event and one journal entry), lifecycle scopes and two-drain reclamation.
//!
//! An instance goes through separate transitions: live → destroyed (a tombstone: detached, not
//! live, not writable, out of the tag and persistent-id indexes, still holding its slot) →
//! reclaimable (after the first drain returned its destruction event) → vacant slot (after the
//! second drain). Its id is never reused.
//!
//! Invariant: a tombstone is readable only through an open lifecycle scope whose subject is the
//! tombstone or one of its destroyed ancestors; it is never live and never writable. A slot
//! joins the free pool only in the drain after the one that reported its destruction: the
//! reclamation queues (`Reclamation`) move an instance from doomed to reclaimable in one drain
//! and out in the next, and nothing else touches them. The open
//! scopes (subjects with their token serials) are kept by the snapshot the arena reads through,
//! since its reads consult them.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Arc;

use crate::arena::Arena;
use crate::error::ArenaError;
use crate::event::{DestroyedBatch, Doomed, Event, MovedIds, TopologyChange};
use crate::hierarchy::{Detached, Membership, Subtree};
use crate::id::{ArenaId, InstanceId, Slot};
use crate::revision::Domain;
use crate::snapshot::{Record, Snapshot};

/// What a destruction did, for hook consumers such as the component store: every instance of
/// the destroyed subtree with the slot it keeps until reclamation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Destruction {
    /// The instance `destroy` was called on.
    pub root: InstanceId,
    /// The destroyed subtree, root first, pre-order.
    pub doomed: DoomedList,
}

/// The instances of a destroyed subtree with their slots, root first, in pre-order: a slice of
/// [`Doomed`] (it dereferences to `[Doomed]`) that holds a single instance without allocating,
/// so destroying a leaf allocates nothing for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DoomedList(DoomedRepr);

#[derive(Clone, Debug, PartialEq, Eq)]
enum DoomedRepr {
    One(Doomed),
    Many(Vec<Doomed>),
}

impl DoomedList {
    fn one(doomed: Doomed) -> Self {
        Self(DoomedRepr::One(doomed))
    }

    fn many(doomed: Vec<Doomed>) -> Self {
        Self(DoomedRepr::Many(doomed))
    }

    /// The instances as a slice.
    pub fn as_slice(&self) -> &[Doomed] {
        match &self.0 {
            DoomedRepr::One(doomed) => std::slice::from_ref(doomed),
            DoomedRepr::Many(doomed) => doomed,
        }
    }

    /// The instances as a vector.
    pub fn to_vec(&self) -> Vec<Doomed> {
        self.as_slice().to_vec()
    }
}

impl std::ops::Deref for DoomedList {
    type Target = [Doomed];

    fn deref(&self) -> &[Doomed] {
        self.as_slice()
    }
}

impl<'a> IntoIterator for &'a DoomedList {
    type Item = &'a Doomed;
    type IntoIter = std::slice::Iter<'a, Doomed>;

    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

impl IntoIterator for DoomedList {
    type Item = Doomed;
    type IntoIter = std::iter::Chain<std::option::IntoIter<Doomed>, std::vec::IntoIter<Doomed>>;

    fn into_iter(self) -> Self::IntoIter {
        match self.0 {
            DoomedRepr::One(doomed) => Some(doomed).into_iter().chain(Vec::new()),
            DoomedRepr::Many(doomed) => None.into_iter().chain(doomed),
        }
    }
}

impl PartialEq<[Doomed]> for DoomedList {
    fn eq(&self, other: &[Doomed]) -> bool {
        self.as_slice() == other
    }
}

impl PartialEq<Vec<Doomed>> for DoomedList {
    fn eq(&self, other: &Vec<Doomed>) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl PartialEq<DoomedList> for Vec<Doomed> {
    fn eq(&self, other: &DoomedList) -> bool {
        self.as_slice() == other.as_slice()
    }
}

/// What a [`Arena::destroy_many`] did: the roots it destroyed and every instance of their
/// subtrees with the slot it keeps until reclamation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BulkDestruction {
    /// The destroyed subtree roots: the listed ids that are not inside another listed id's
    /// subtree, in list order (each once).
    pub roots: Vec<InstanceId>,
    /// Every destroyed instance: each root's subtree in pre-order, root first, roots in the
    /// order of `roots`. The same list the equivalent `destroy` calls, one per root in that
    /// order, would return one after the other.
    pub doomed: Vec<Doomed>,
}

/// What a drain returned.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Drained {
    /// The events queued since the previous drain, in order.
    pub events: Vec<Event>,
    /// Instances whose destruction this drain reported; their slots are released by the next
    /// drain, and until then their tombstones can be read through a lifecycle scope.
    pub reclaimable: Vec<Doomed>,
    /// Instances whose slots this drain released. Slot-keyed bookkeeping for them can go now.
    pub reclaimed: Vec<Doomed>,
}

/// A token for an open lifecycle scope; pass it back to [`Arena::exit_lifecycle_scope`].
///
/// It names its arena and carries a serial no other token of that arena has, so a token whose
/// scope is already closed, or one from another arena, is refused and closes nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use = "a lifecycle scope stays open until exited"]
pub struct LifecycleScope {
    arena: ArenaId,
    serial: u64,
}

/// The two reclamation queues: destroyed instances awaiting the drain that reports them, and
/// those it reported, awaiting the next drain, which releases their slots.
#[derive(Clone, Debug, Default)]
pub(crate) struct Reclamation {
    doomed: Vec<Doomed>,
    reclaimable: Vec<Doomed>,
}

impl Reclamation {
    /// The queues of an arena rebuilt from an image: `doomed` awaiting the drain that reports
    /// them, `reclaimable` the drain that releases their slots.
    pub(crate) fn imaged(doomed: Vec<Doomed>, reclaimable: Vec<Doomed>) -> Self {
        Self {
            doomed,
            reclaimable,
        }
    }

    /// The two queues, in order: those awaiting the drain that reports them, and those
    /// awaiting the drain that releases their slots.
    pub(crate) fn queues(&self) -> (&[Doomed], &[Doomed]) {
        (&self.doomed, &self.reclaimable)
    }

    /// Queues a destroyed subtree for the next drain and returns its list.
    fn doom(&mut self, subtree: &Subtree) -> DoomedList {
        if let MovedIds::One(id) = *subtree.moved() {
            let one = Doomed {
                id,
                slot: subtree.root().1,
            };
            self.doomed.push(one);
            DoomedList::one(one)
        } else {
            let first = self.doomed.len();
            self.doomed
                .extend(subtree.members().map(|(id, slot)| Doomed { id, slot }));
            DoomedList::many(self.doomed[first..].to_vec())
        }
    }

    /// One drain's step: `released` (emptied first) takes the instances whose slots this drain
    /// releases, those destroyed since the previous drain become reclaimable, and the buffer
    /// `released` had becomes the next queue of the doomed: no entry is copied.
    fn advance_into(&mut self, released: &mut Vec<Doomed>) {
        released.clear();
        // released ← reclaimable ← doomed ← the emptied buffer `released` had.
        std::mem::swap(released, &mut self.reclaimable);
        std::mem::swap(&mut self.reclaimable, &mut self.doomed);
    }
}

impl Arena {
    /// Destroys an instance and its subtree: detaches it, marks every node destroyed, drops
    /// their tag and persistent-id index entries, records parts leaving the world, and queues
    /// the detach events and a `Destroyed` event. The nodes stay as tombstones.
    ///
    /// # Errors
    ///
    /// Refused for unknown or already destroyed instances, for instances whose parent is locked or
    /// whose subtree holds a locked instance ([`ArenaError::LockedDescendant`]), and inside a
    /// construction batch.
    pub fn destroy(&mut self, id: InstanceId) -> Result<Destruction, ArenaError> {
        if self.batches.is_open() {
            return Err(ArenaError::BatchInProgress(
                "destruction cannot be rolled back",
            ));
        }
        let slot = self.state.live_slot(id)?;
        let record = self
            .state
            .record_at(slot)
            .ok_or(ArenaError::UnknownInstance(id))?;
        if record.is_parent_locked() {
            return Err(self.parent_locked(id));
        }
        let subtree = self.collect_subtree(slot);
        if let Some(locked) = subtree.info().locked_below {
            return Err(self.locked_descendant(id, locked));
        }
        let Detached { subtree, at, .. } = self.detach(subtree);
        self.update_world_membership(&subtree, Membership::Cleared, at);
        let info = subtree.info();
        self.membership_changed(info.families, at);
        if info.animation {
            self.state.revisions_mut().record(Domain::Animation, at);
        }

        let untagged = self.state.entomb(subtree.slots());
        if untagged {
            self.state.revisions_mut().record(Domain::Tags, at);
        }
        let doomed = self.reclamation.doom(&subtree);
        let moved = subtree.into_moved();
        self.outbox.topology(TopologyChange::Destroyed {
            subtree: moved.clone(),
        });
        self.outbox.event(Event::Destroyed { subtree: moved });
        self.clear_dangling_references();
        Ok(Destruction { root: id, doomed })
    }

    /// Clears every built-in and attribute reference a live instance holds to an instance that
    /// is no longer live, as a write of that instance (revision, families, logs).
    fn clear_dangling_references(&mut self) {
        for (slot, dead) in self.state.dangling_references() {
            self.mark_written(slot, crate::write::WriteScope::State);
            self.state.clear_references(slot, &dead);
        }
    }

    /// Destroys many instances, each with its subtree, in one step.
    ///
    /// Every id is validated before anything changes: an unknown or destroyed id, one whose
    /// parent is locked, one whose subtree holds a locked instance, or an open construction
    /// batch refuses the whole call and nothing is destroyed. An id inside another listed id's
    /// subtree (or listed twice) is fine: it is destroyed once, with that subtree. The roots
    /// (the listed ids not inside another listed id's subtree) keep the list order.
    ///
    /// Each subtree goes exactly as [`Arena::destroy`] would take it (detached, tombstones out of
    /// the tag and persistent-id indexes, parts leaving the world logged, two-drain
    /// reclamation), under one clock tick, and the whole call is announced by ONE
    /// [`Event::DestroyedMany`] and ONE [`TopologyChange::DestroyedMany`] instead of each
    /// root's detach and `Destroyed` events. An empty list changes nothing.
    ///
    /// ```
    /// use strata_arena::{Arena, ClassId, Event};
    ///
    /// let mut arena = Arena::standard();
    /// let folder = arena.create(ClassId::FOLDER, None)?;
    /// let parts = arena.create_many(ClassId::PART, Some(folder), 3)?;
    /// let ids: Vec<_> = parts.iter().map(|(id, _)| *id).collect();
    /// arena.drain()?;
    ///
    /// let destruction = arena.destroy_many(&ids)?;
    /// assert_eq!(destruction.roots, ids);
    /// assert_eq!(arena.children(folder).count(), 0);
    /// let drained = arena.drain()?;
    /// assert!(matches!(drained.events.as_slice(), [Event::DestroyedMany(_)]));
    /// assert_eq!(arena.drain()?.reclaimed, destruction.doomed);
    /// # Ok::<(), strata_arena::ArenaError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`ArenaError::BatchInProgress`] inside a construction batch, [`ArenaError::UnknownInstance`]
    /// or [`ArenaError::DestroyedInstance`] for an id that is not live,
    /// [`ArenaError::ParentLocked`] for one whose parent is locked, and
    /// [`ArenaError::LockedDescendant`] for a subtree holding an instance whose parent is locked;
    /// nothing is destroyed then.
    // Long: the checks of every root, then the subtrees taken in one pass, share slot bitmaps.
    pub fn destroy_many(&mut self, ids: &[InstanceId]) -> Result<BulkDestruction, ArenaError> {
        if self.batches.is_open() {
            return Err(ArenaError::BatchInProgress(
                "destruction cannot be rolled back",
            ));
        }
        // The listed instances and the roots taken so far, as bits over slots (a live
        // instance's slot is its own).
        let words = (self.state.slot_len() as usize).div_ceil(64);
        let (mut listed, mut taken) = (vec![0u64; words], vec![0u64; words]);
        let bit = |slot: Slot| (slot.index() / 64, 1u64 << (slot.index() % 64));
        let mut slots = Vec::with_capacity(ids.len());
        for &id in ids {
            let slot = self.state.live_slot(id)?;
            let parent_locked = self
                .state
                .record_at(slot)
                .is_some_and(Record::is_parent_locked);
            if parent_locked {
                return Err(self.parent_locked(id));
            }
            let (word, mask) = bit(slot);
            listed[word] |= mask;
            slots.push(slot);
        }
        let is_listed = |slot: Option<Slot>| {
            slot.is_some_and(|slot| {
                let (word, mask) = bit(slot);
                listed.get(word).is_some_and(|w| w & mask != 0)
            })
        };
        let mut roots = Vec::new();
        let mut root_slots = Vec::new();
        for (&id, &slot) in ids.iter().zip(&slots) {
            let (word, mask) = bit(slot);
            if taken[word] & mask != 0
                || self
                    .state
                    .ancestors(id)
                    .any(|a| is_listed(self.state.slot_of(a)))
            {
                continue;
            }
            taken[word] |= mask;
            // Checked now, collected again when destroyed: the roots' subtrees are disjoint,
            // and holding a million collected subtrees at once would cost more than walking
            // each twice.
            if let Some(locked) = self.collect_subtree(slot).info().locked_below {
                return Err(self.locked_descendant(id, locked));
            }
            roots.push(id);
            root_slots.push(slot);
        }
        if root_slots.is_empty() {
            return Ok(BulkDestruction::default());
        }
        let at = self.state.revisions_mut().tick();
        self.state.revisions_mut().record(Domain::Topology, at);
        let mut batch = DestroyedBatch {
            roots: Vec::with_capacity(roots.len()),
            destroyed: Vec::new(),
        };
        let mut doomed = Vec::new();
        for slot in root_slots {
            let subtree = self.collect_subtree(slot);
            let (root, root_slot) = subtree.root();
            let old_parent = self
                .state
                .record_at(root_slot)
                .and_then(|r| self.state.parent_of(r));
            let old_layer = subtree.info().gui_layer_context(self, root);
            if old_parent.is_some() {
                self.state.unlink(root_slot);
            }
            self.invalidate_gui(subtree.moved(), subtree.info(), old_layer, at);
            self.update_world_membership(&subtree, Membership::Cleared, at);
            let info = subtree.info();
            self.membership_changed(info.families, at);
            if info.animation {
                self.state.revisions_mut().record(Domain::Animation, at);
            }
            if self.state.entomb(subtree.slots()) {
                self.state.revisions_mut().record(Domain::Tags, at);
            }
            doomed.extend_from_slice(&self.reclamation.doom(&subtree));
            batch.roots.push((root, old_parent));
            batch
                .destroyed
                .extend_from_slice(subtree.moved().as_slice());
        }
        let batch = Arc::new(batch);
        self.outbox
            .topology(TopologyChange::DestroyedMany(Arc::clone(&batch)));
        self.outbox.event(Event::DestroyedMany(batch));
        self.clear_dangling_references();
        Ok(BulkDestruction { roots, doomed })
    }

    /// Returns the queued events and advances reclamation by one step: slots of instances
    /// reported by the previous drain are released, and instances destroyed since then become
    /// reclaimable (their tombstones stay readable through lifecycle scopes until the next
    /// drain). Reservations whose tokens were dropped without publication or release are
    /// released first (see [`Reservation`](crate::Reservation)).
    ///
    /// Refused while a construction batch or a lifecycle scope is open.
    ///
    /// # Errors
    ///
    /// [`ArenaError::BatchInProgress`] inside a construction batch and [`ArenaError::ScopeOpen`]
    /// inside a lifecycle scope, where reclaiming slots would pull tombstones from under their
    /// readers.
    pub fn drain(&mut self) -> Result<Drained, ArenaError> {
        let mut drained = Drained::default();
        self.drain_into(&mut drained)?;
        Ok(drained)
    }

    /// [`Arena::drain`] into `drained`, whose lists are replaced (their old contents dropped).
    /// Their buffers are not freed: the arena keeps them as its next event queue and
    /// reclamation list, so a frame loop that hands back the same `Drained` every frame moves
    /// its events and reclaimed instances without allocating once the buffers have grown.
    /// Refused like `drain`, leaving `drained` as it was.
    ///
    /// # Errors
    ///
    /// As [`Arena::drain`].
    ///
    /// ```
    /// use strata_arena::{Arena, ClassId, Drained};
    ///
    /// let mut arena = Arena::standard();
    /// let mut drained = Drained::default();
    /// let part = arena.create(ClassId::PART, None)?;
    /// arena.drain_into(&mut drained)?;
    /// assert_eq!(drained.events.len(), 1);
    /// arena.destroy(part)?;
    /// arena.drain_into(&mut drained)?;
    /// assert_eq!(drained.reclaimable.len(), 1);
    /// arena.drain_into(&mut drained)?;
    /// assert_eq!(drained.reclaimed.len(), 1);
    /// assert!(drained.events.is_empty());
    /// # Ok::<(), strata_arena::ArenaError>(())
    /// ```
    pub fn drain_into(&mut self, drained: &mut Drained) -> Result<(), ArenaError> {
        if self.batches.is_open() {
            return Err(ArenaError::BatchInProgress("draining would reclaim slots"));
        }
        if self.state.scope_open() {
            return Err(ArenaError::ScopeOpen);
        }
        self.sweep_abandoned();
        self.reclamation.advance_into(&mut drained.reclaimed);
        self.state
            .reclaim(&drained.reclaimed, |slot| self.slots.release(slot));
        self.outbox.take_events_into(&mut drained.events);
        drained.reclaimable.clear();
        drained
            .reclaimable
            .extend_from_slice(&self.reclamation.reclaimable);
        Ok(())
    }

    /// Destroyed instances not yet released: those awaiting their first drain and those
    /// awaiting their second.
    pub fn pending_reclamation(&self) -> usize {
        self.reclamation.doomed.len() + self.reclamation.reclaimable.len()
    }

    /// Opens a lifecycle scope on a tombstone: until the scope is exited, the subject and its
    /// destroyed subtree are readable through `get`, `node`, `children` and the other reads.
    /// They stay not live and not writable. Scopes nest; exiting one restores the view that
    /// preceded it.
    ///
    /// # Errors
    ///
    /// [`ArenaError::NotATombstone`] when `subject` is not a destroyed instance awaiting
    /// reclamation.
    pub fn enter_lifecycle_scope(
        &mut self,
        subject: InstanceId,
    ) -> Result<LifecycleScope, ArenaError> {
        match self.state.find(subject) {
            Some((_, record)) if Record::is_destroyed(record) => {
                let serial = self.next_token();
                self.state.open_scope(subject, serial);
                Ok(LifecycleScope {
                    arena: self.arena_id(),
                    serial,
                })
            }
            _ => Err(ArenaError::NotATombstone(subject)),
        }
    }

    /// Closes a lifecycle scope (and any opened inside it).
    ///
    /// # Errors
    ///
    /// Refused, closing nothing, for a scope already closed ([`ArenaError::ScopeNotOpen`]) or
    /// another arena's token ([`ArenaError::ForeignToken`]).
    pub fn exit_lifecycle_scope(&mut self, scope: LifecycleScope) -> Result<(), ArenaError> {
        if scope.arena != self.arena_id() {
            return Err(ArenaError::ForeignToken);
        }
        if self.state.close_scope(scope.serial) {
            Ok(())
        } else {
            Err(ArenaError::ScopeNotOpen)
        }
    }

    /// Runs `read` with a lifecycle scope open on `subject`, then closes it. A `read` that
    /// panics still closes the scope before the panic goes on to the caller, so the arena is
    /// not left refusing drains and save points ([`ArenaError::ScopeOpen`]).
    ///
    /// # Errors
    ///
    /// As [`Arena::enter_lifecycle_scope`]; `read` does not run then.
    pub fn with_lifecycle_scope<R>(
        &mut self,
        subject: InstanceId,
        read: impl FnOnce(&Snapshot) -> R,
    ) -> Result<R, ArenaError> {
        let scope = self.enter_lifecycle_scope(subject)?;
        let result = catch_unwind(AssertUnwindSafe(|| read(&self.state)));
        self.exit_lifecycle_scope(scope)?;
        match result {
            Ok(result) => Ok(result),
            Err(panic) => resume_unwind(panic),
        }
    }
}
