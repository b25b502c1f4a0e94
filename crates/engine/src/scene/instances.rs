//! Instances through the scene: creation, parenting, names, attributes, built-in state, tags,
//! and destruction wired through the store.
//!
//! Invariant: a destruction reaches everything it should before it returns. The arena destroys
//! the subtree (tombstones, its events, and the built-in and attribute references other live
//! instances held to it cleared); the store removes the subtree's rows (removal records and
//! events) and applies the reference policies of the rows that pointed into it (`Clear`,
//! `RemoveComponent` with dependents, `DestroyHolder`); orphan records lose their references
//! into it; and every holder a `DestroyHolder` policy names is destroyed the same way, if it is
//! still live when its turn comes, until no request is left.

use strata_arena::{AttrValue, BuiltinState, ClassId, Doomed, InstanceId, NodeMut, PersistentId};
use strata_component_store::{ComponentId, DestroyOutcome, FieldId};

use crate::error::WorldError;
use crate::scene::Scene;

/// What a destruction did, the policies it set off included.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DestroyReport {
    /// Every instance destroyed, in the order destroyed (each subtree in pre-order).
    pub destroyed: Vec<InstanceId>,
    /// Component rows removed: the destroyed instances' own, then those `RemoveComponent`
    /// policies removed with their dependents.
    pub removed: Vec<(InstanceId, ComponentId)>,
    /// References cleared: by `Clear` policies, and in place of a `DestroyHolder` policy whose
    /// holder the arena would not destroy. Each (holder, component, field) once, in the order
    /// first cleared.
    pub cleared: Vec<(InstanceId, ComponentId, FieldId)>,
}

impl DestroyReport {
    /// Keeps the first of each (holder, component, field) cleared: a list field that lost
    /// several elements, or one target named twice, is one field cleared.
    pub(crate) fn dedup_cleared(&mut self) {
        let mut seen = hashbrown::HashSet::with_capacity(self.cleared.len());
        self.cleared.retain(|entry| seen.insert(*entry));
    }
}

impl Scene {
    /// Creates an instance of `class` under `parent` (or unparented).
    pub fn create(
        &mut self,
        class: ClassId,
        parent: Option<InstanceId>,
    ) -> Result<InstanceId, WorldError> {
        Ok(self.arena.create(class, parent)?)
    }

    /// Creates an instance of the class named `class`.
    pub fn create_named(
        &mut self,
        class: &str,
        parent: Option<InstanceId>,
    ) -> Result<InstanceId, WorldError> {
        let class = self.class_id(class)?;
        self.create(class, parent)
    }

    /// The class named `name`.
    pub fn class_id(&self, name: &str) -> Result<ClassId, WorldError> {
        self.arena
            .classes()
            .class_id(name)
            .ok_or_else(|| WorldError::UnknownClass(name.to_owned()))
    }

    /// Moves an instance (with its subtree) under `parent`, or unparents it; `false` when it
    /// was already there (nothing changes).
    pub fn set_parent(
        &mut self,
        id: InstanceId,
        parent: Option<InstanceId>,
    ) -> Result<bool, WorldError> {
        Ok(self.arena.set_parent(id, parent)?)
    }

    /// Locks a live instance to its parent (`true`: it cannot be moved, and neither it nor an
    /// ancestor of it can be destroyed) or unlocks it; `false` when nothing changed.
    pub fn set_parent_locked(&mut self, id: InstanceId, locked: bool) -> Result<bool, WorldError> {
        let was = self.arena.node(id)?.is_parent_locked();
        if was == locked {
            return Ok(false);
        }
        self.arena.set_parent_locked(id, locked)?;
        Ok(true)
    }

    /// Renames an instance; `false` when the name was already that.
    pub fn set_name(&mut self, id: InstanceId, name: &str) -> Result<bool, WorldError> {
        Ok(self.arena.set_name(id, name)?)
    }

    /// A live instance's name.
    pub fn name(&self, id: InstanceId) -> Result<&str, WorldError> {
        Ok(self.arena.node(id)?.name())
    }

    /// A live instance's parent.
    pub fn parent(&self, id: InstanceId) -> Result<Option<InstanceId>, WorldError> {
        Ok(self.arena.node(id)?.parent())
    }

    /// A live instance's children, in order.
    pub fn children(&self, id: InstanceId) -> Result<Vec<InstanceId>, WorldError> {
        self.arena.node(id)?;
        Ok(self.arena.children(id).collect())
    }

    /// A live instance's class.
    pub fn class(&self, id: InstanceId) -> Result<ClassId, WorldError> {
        Ok(self.arena.node(id)?.class())
    }

    /// Whether `id` names a live instance.
    pub fn is_live(&self, id: InstanceId) -> bool {
        self.arena.is_live(id)
    }

    /// Sets (`Some`) or removes (`None`) an attribute; `false` when nothing changed.
    pub fn set_attribute(
        &mut self,
        id: InstanceId,
        name: &str,
        value: Option<AttrValue>,
    ) -> Result<bool, WorldError> {
        Ok(self.arena.set_attribute(id, name, value)?)
    }

    /// An attribute of a live instance.
    pub fn attribute(&self, id: InstanceId, name: &str) -> Result<Option<&AttrValue>, WorldError> {
        Ok(self.arena.node(id)?.attributes().get(name))
    }

    /// Replaces a live instance's built-in state (of its class's kind); `false` when equal.
    pub fn set_state(&mut self, id: InstanceId, state: BuiltinState) -> Result<bool, WorldError> {
        Ok(self.arena.set_state(id, state)?)
    }

    /// Generic mutable access to a live instance's name, attributes and state fields, through
    /// `edit`. The instance counts as written whatever `edit` does. Refused, with the instance
    /// put back as it was, when `edit` leaves a reference (an attribute or a built-in one) to an
    /// instance that is not live.
    pub fn edit<R>(
        &mut self,
        id: InstanceId,
        edit: impl FnOnce(&mut NodeMut<'_>) -> R,
    ) -> Result<R, WorldError> {
        let before = self.arena.node(id)?.data().clone();
        let mut node = self.arena.node_mut(id)?;
        let result = edit(&mut node);
        if let Some(error) = self.dead_reference_of(id) {
            let mut node = self.arena.node_mut(id)?;
            *node.name_mut() = before.name;
            *node.attributes_mut() = before.attributes;
            self.arena.set_state(id, before.state)?;
            return Err(error);
        }
        Ok(result)
    }

    /// The refusal for the first attribute or built-in reference of `id` that names an
    /// instance that is not live, if any.
    fn dead_reference_of(&self, id: InstanceId) -> Option<WorldError> {
        let node = self.arena.node(id).ok()?;
        if let Err(error) = self.arena.check_state_references(id, node.state()) {
            return Some(error.into());
        }
        node.attributes()
            .iter()
            .find_map(|(name, value)| match value {
                AttrValue::Reference(Some(target)) if !self.arena.is_live(*target) => Some(
                    strata_arena::ArenaError::NotLiveReference {
                        holder: id,
                        what: format!("attribute `{name}`"),
                        target: *target,
                    }
                    .into(),
                ),
                _ => None,
            })
    }

    /// A live instance's persistent id, assigned now if it has none (persistent ids survive
    /// saves and match instances across worlds in grafts).
    pub fn ensure_persistent_id(&mut self, id: InstanceId) -> Result<PersistentId, WorldError> {
        Ok(self.arena.ensure_persistent_id(id)?)
    }

    /// A live instance's persistent id, if it has one.
    pub fn persistent_id(&self, id: InstanceId) -> Result<Option<PersistentId>, WorldError> {
        Ok(self.arena.node(id)?.persistent_id())
    }

    /// Gives a live instance a persistent id (refused when another instance holds it), or
    /// takes its away; `false` when nothing changed.
    pub fn set_persistent_id(
        &mut self,
        id: InstanceId,
        pid: Option<PersistentId>,
    ) -> Result<bool, WorldError> {
        Ok(self.arena.set_persistent_id(id, pid)?)
    }

    /// Tags a live instance; `false` when it already had the tag.
    pub fn tag(&mut self, id: InstanceId, tag: &str) -> Result<bool, WorldError> {
        Ok(self.arena.add_tag(id, tag)?)
    }

    /// Removes a tag; `false` when the instance did not have it.
    pub fn untag(&mut self, id: InstanceId, tag: &str) -> Result<bool, WorldError> {
        Ok(self.arena.remove_tag(id, tag)?)
    }

    /// Whether a live instance has a tag.
    pub fn has_tag(&self, id: InstanceId, tag: &str) -> bool {
        self.arena.has_tag(id, tag)
    }

    /// The live instances with a tag, in id order.
    pub fn tagged(&self, tag: &str) -> Vec<InstanceId> {
        let mut ids: Vec<InstanceId> = self.arena.tagged(tag).collect();
        ids.sort_unstable();
        ids
    }

    /// Destroys an instance and its subtree, wired through the store (see the module docs).
    /// The tombstones stay readable through lifecycle scopes until the frame loop's second
    /// drain after it. Refused, changing nothing, for an instance that is not live, a service,
    /// and a subtree holding a locked instance.
    pub fn destroy(&mut self, id: InstanceId) -> Result<DestroyReport, WorldError> {
        let mut report = DestroyReport::default();
        let destruction = self.arena.destroy(id)?;
        let requests = self.after_destruction(destruction.doomed.as_slice(), &mut report);
        self.follow_destroy_requests(requests, &mut report);
        report.dedup_cleared();
        Ok(report)
    }

    /// Destroys the holders `DestroyHolder` policies asked for, in the order they were asked
    /// for, and those their destructions ask for in turn, each if it is still live then. A
    /// holder the arena will not destroy (a service, a locked instance, the root of a subtree
    /// holding one) keeps its component with its references to the destroyed cleared instead,
    /// as a `Clear` policy would, and reported in `report.cleared`: no reference to a
    /// destroyed instance is left behind.
    pub(crate) fn follow_destroy_requests(
        &mut self,
        requests: Vec<InstanceId>,
        report: &mut DestroyReport,
    ) {
        let mut pending: std::collections::VecDeque<InstanceId> = requests.into();
        while let Some(next) = pending.pop_front() {
            if !self.arena.is_live(next) {
                continue;
            }
            match self.arena.destroy(next) {
                Ok(destruction) => {
                    let more = self.after_destruction(destruction.doomed.as_slice(), report);
                    pending.extend(more);
                }
                Err(_) => {
                    let Ok(at) = self.instance_ref(next) else {
                        continue;
                    };
                    let cleared = self.store.clear_references_to(at, &report.destroyed);
                    report
                        .cleared
                        .extend(cleared.into_iter().map(|(c, f)| (next, c, f)));
                }
            }
        }
    }

    /// What follows an arena destruction: the store's removals and policies, orphan
    /// references cleared. Returns the holders `DestroyHolder` policies ask to destroy, in the
    /// order found.
    pub(crate) fn after_destruction(
        &mut self,
        doomed: &[Doomed],
        report: &mut DestroyReport,
    ) -> Vec<InstanceId> {
        report.destroyed.extend(doomed.iter().map(|d| d.id));
        let mut outcome = DestroyOutcome::default();
        self.store.on_destroyed_into(doomed, &mut outcome);
        self.forget_dead_orphan_references();
        move_into(&mut report.removed, outcome.removed);
        move_into(&mut report.cleared, outcome.cleared);
        outcome.destroy
    }

    /// Clears the references orphan records hold to instances that are not live.
    pub(crate) fn forget_dead_orphan_references(&mut self) {
        if self.store.orphans().is_empty() {
            return;
        }
        let arena = &self.arena;
        self.store
            .rewrite_orphan_references(|target| arena.is_live(target).then_some(target));
    }
}

/// Appends `from` to `into`, taking `from`'s buffer when `into` holds nothing (a destruction's
/// first removals need no second allocation).
fn move_into<T>(into: &mut Vec<T>, from: Vec<T>) {
    if into.is_empty() {
        *into = from;
    } else {
        into.extend(from);
    }
}
