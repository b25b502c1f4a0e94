//! Writes to live instances: generic mutable access, the specialised setters, the parent lock,
//! tags and persistent ids.
//!
//! Invariant: a write validates the instance (live, writable inside an open batch, of the
//! right state kind) before anything changes. A specialised setter given an equal value
//! changes nothing; any other write, and generic access whether or not the caller then changes
//! anything, advances the clock once and records it in the node's revision and in every domain
//! the node's class ties it to (mutation, families, collision, animation, the part-write log,
//! GUI layouts).

use std::sync::Arc;

use crate::arena::Arena;
use crate::class::StateKind;
use crate::error::ArenaError;
use crate::event::{PartWrite, PartWriteKind};
use strata_mix::mix;

use crate::id::{InstanceId, PersistentId, Slot};
use crate::math::{Transform, Vec3};
use crate::revision::{Domain, Revision};
use crate::state::{AttrValue, BuiltinState, LightState, NodeMut, PartState, StateVariant};

/// What a write may have changed, which decides the revision domains it touches.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum WriteScope {
    /// Name or attributes.
    Meta,
    /// Built-in state, or anything (generic mutable access).
    State,
}

impl Arena {
    /// Generic mutable access to a live node's name, attributes and the fields of its built-in
    /// state (never the state's variant, which its class fixes). The node is marked written
    /// (revision, families, collision, animation, part-write log, GUI layout) before it is
    /// returned, whether or not the caller then changes anything.
    ///
    /// # Errors
    ///
    /// [`ArenaError::UnknownInstance`] or [`ArenaError::DestroyedInstance`] when `id` is not live,
    /// and [`ArenaError::BatchInProgress`] for an instance that predates an open construction
    /// batch.
    pub fn node_mut(&mut self, id: InstanceId) -> Result<NodeMut<'_>, ArenaError> {
        let slot = self.state.live_slot(id)?;
        self.guard_batch_write(id)?;
        self.mark_written(slot, WriteScope::State);
        // Whatever the caller writes may be a reference: destruction checks this node.
        self.state.note_referrer(id);
        Ok(NodeMut::new(self.state.data_mut(slot)))
    }

    /// Renames an instance. Returns `false`, changing nothing, when the name is already equal.
    ///
    /// # Errors
    ///
    /// [`ArenaError::UnknownInstance`] or [`ArenaError::DestroyedInstance`] when `id` is not live,
    /// and [`ArenaError::BatchInProgress`] for an instance that predates an open construction
    /// batch.
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
    ///
    /// # Errors
    ///
    /// [`ArenaError::UnknownInstance`] or [`ArenaError::DestroyedInstance`] when `id` is not live,
    /// and [`ArenaError::BatchInProgress`] for an instance that predates an open construction
    /// batch. Also [`ArenaError::NotLiveReference`] for a reference value naming an instance that
    /// is not live.
    pub fn set_attribute(
        &mut self,
        id: InstanceId,
        name: &str,
        value: Option<AttrValue>,
    ) -> Result<bool, ArenaError> {
        if let Some(AttrValue::Reference(Some(target))) = value
            && !self.is_live(target)
        {
            self.state.live_slot(id)?;
            return Err(ArenaError::NotLiveReference {
                holder: id,
                what: format!("attribute `{name}`"),
                target,
            });
        }
        self.put_attribute(id, name, value)
    }

    /// [`Arena::set_attribute`] without the check that a reference names a live instance, for
    /// an image being rebuilt (whose references may name instances listed after the holder;
    /// `from_image` checks them once every instance is in).
    pub(crate) fn put_attribute(
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
        if let Some(AttrValue::Reference(Some(_))) = value {
            self.state.note_referrer(id);
        }
        self.state.data_mut(slot).attributes.set(name, value);
        Ok(true)
    }

    /// Replaces an instance's built-in state. The variant must match its class. Returns
    /// `false`, changing nothing, when the state is already equal.
    ///
    /// # Errors
    ///
    /// [`ArenaError::UnknownInstance`] or [`ArenaError::DestroyedInstance`] when `id` is not live,
    /// and [`ArenaError::BatchInProgress`] for an instance that predates an open construction
    /// batch. Also [`ArenaError::WrongState`] for a variant the class does not carry, and
    /// [`ArenaError::NotLiveReference`] for a built-in reference to an instance that is not live.
    pub fn set_state(&mut self, id: InstanceId, state: BuiltinState) -> Result<bool, ArenaError> {
        self.state.live_slot(id)?;
        self.check_state_references(id, &state)?;
        self.put_state(id, state)
    }

    /// [`Arena::set_state`] without the check that its references name live instances (see
    /// [`Arena::put_attribute`]).
    pub(crate) fn put_state(
        &mut self,
        id: InstanceId,
        state: BuiltinState,
    ) -> Result<bool, ArenaError> {
        let slot = self.state.live_slot(id)?;
        self.guard_batch_write(id)?;
        let current = self.current_state(slot, id, state.kind())?;
        if *current == state {
            return Ok(false);
        }
        self.mark_written(slot, WriteScope::State);
        if state
            .references()
            .iter()
            .any(|(_, target)| target.is_some())
        {
            self.state.note_referrer(id);
        }
        self.state.data_mut(slot).state = state;
        Ok(true)
    }

    /// Checks that every built-in reference of `state` (for `holder`) names a live instance.
    ///
    /// # Errors
    ///
    /// [`ArenaError::NotLiveReference`] naming the first reference (`PrimaryPart`, `CameraSubject`)
    /// whose target is not live.
    pub fn check_state_references(
        &self,
        holder: InstanceId,
        state: &BuiltinState,
    ) -> Result<(), ArenaError> {
        for (what, target) in state.references() {
            if let Some(target) = target
                && !self.is_live(target)
            {
                return Err(ArenaError::NotLiveReference {
                    holder,
                    what: what.to_owned(),
                    target,
                });
            }
        }
        Ok(())
    }

    /// Moves a part. Returns `false`, changing nothing, when the transform is already equal.
    ///
    /// # Errors
    ///
    /// [`ArenaError::UnknownInstance`] or [`ArenaError::DestroyedInstance`] when `id` is not live,
    /// and [`ArenaError::BatchInProgress`] for an instance that predates an open construction
    /// batch. Also [`ArenaError::WrongState`] when the instance is not a part.
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
    ///
    /// # Errors
    ///
    /// [`ArenaError::UnknownInstance`] or [`ArenaError::DestroyedInstance`] when `id` is not live,
    /// and [`ArenaError::BatchInProgress`] for an instance that predates an open construction
    /// batch. Also [`ArenaError::WrongState`] when the instance is not a part.
    pub fn set_part_size(&mut self, id: InstanceId, size: Vec3) -> Result<bool, ArenaError> {
        self.set_state_field(id, size, |p: &PartState| &p.size, |p| &mut p.size)
    }

    /// Sets a light's brightness. Returns `false`, changing nothing, when already equal.
    ///
    /// # Errors
    ///
    /// [`ArenaError::UnknownInstance`] or [`ArenaError::DestroyedInstance`] when `id` is not live,
    /// and [`ArenaError::BatchInProgress`] for an instance that predates an open construction
    /// batch. Also [`ArenaError::WrongState`] when the instance is not a light.
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
    ///
    /// # Errors
    ///
    /// [`ArenaError::UnknownInstance`] or [`ArenaError::DestroyedInstance`] when `id` is not live,
    /// and [`ArenaError::BatchInProgress`] for an instance that predates an open construction
    /// batch. Also [`ArenaError::WrongState`] when the instance is not a component definition.
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
        self.state.revisions_mut().record(Domain::Mutation, at);
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
                self.state.revisions_mut().record(Domain::Collision, at);
            }
            if animation {
                self.state.revisions_mut().record(Domain::Animation, at);
            }
            if part_log && in_world {
                self.outbox.part(PartWrite {
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
                    self.state.revisions_mut().record(Domain::Layout, at);
                }
                _ => {}
            }
        }
        at
    }

    /// Locks or unlocks an instance's parent. Returns whether anything changed.
    ///
    /// # Errors
    ///
    /// [`ArenaError::UnknownInstance`] or [`ArenaError::DestroyedInstance`] when `id` is not live,
    /// and [`ArenaError::BatchInProgress`] for an instance that predates an open construction
    /// batch.
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
    ///
    /// # Errors
    ///
    /// [`ArenaError::UnknownInstance`] or [`ArenaError::DestroyedInstance`] when `id` is not live,
    /// and [`ArenaError::BatchInProgress`] for an instance that predates an open construction
    /// batch.
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
        self.state.revisions_mut().record(Domain::Tags, at);
    }

    /// Removes a tag from a live instance. Returns `false` when it did not have it.
    ///
    /// # Errors
    ///
    /// [`ArenaError::UnknownInstance`] or [`ArenaError::DestroyedInstance`] when `id` is not live,
    /// and [`ArenaError::BatchInProgress`] for an instance that predates an open construction
    /// batch.
    pub fn remove_tag(&mut self, id: InstanceId, tag: &str) -> Result<bool, ArenaError> {
        let slot = self.state.live_slot(id)?;
        self.guard_batch_write(id)?;
        if !self.state.has_tag(id, tag) {
            return Ok(false);
        }
        self.state.remove_tag(slot, tag);
        let at = self.state.revisions_mut().tick();
        self.state.revisions_mut().record(Domain::Tags, at);
        Ok(true)
    }

    // ----- Persistent ids. -----

    /// The persistent id of a live instance, assigning a fresh one on first request.
    ///
    /// # Errors
    ///
    /// [`ArenaError::UnknownInstance`] or [`ArenaError::DestroyedInstance`] when `id` is not live,
    /// and [`ArenaError::BatchInProgress`] for an instance that predates an open construction
    /// batch.
    pub fn ensure_persistent_id(&mut self, id: InstanceId) -> Result<PersistentId, ArenaError> {
        let slot = self.state.live_slot(id)?;
        self.guard_batch_write(id)?;
        if let Some(pid) = self
            .state
            .record_at(slot)
            .and_then(|record| self.state.persistent_id_of(record))
        {
            return Ok(pid);
        }
        let seed = self.state.seed();
        let pid = loop {
            let raw = mix(seed.rotate_left(17) ^ self.ids.next_persistent());
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
    ///
    /// # Errors
    ///
    /// [`ArenaError::UnknownInstance`] or [`ArenaError::DestroyedInstance`] when `id` is not live,
    /// and [`ArenaError::BatchInProgress`] for an instance that predates an open construction
    /// batch. Also [`ArenaError::PersistentIdInUse`] when another instance holds `pid`.
    pub fn set_persistent_id(
        &mut self,
        id: InstanceId,
        pid: Option<PersistentId>,
    ) -> Result<bool, ArenaError> {
        let slot = self.state.live_slot(id)?;
        self.guard_batch_write(id)?;
        let current = self
            .state
            .record_at(slot)
            .and_then(|record| self.state.persistent_id_of(record));
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
}
