//! `Store`: the component sets of one world, their definitions by name, the mutation tick,
//! observer events, orphans, and the destruction and reclamation hooks the arena's owner calls.
//! This file owns the store's state and the lookups every other part goes through; the
//! operations live beside it by responsibility: `define` (installing, redefining and
//! uninstalling definitions), `rows` (adding and removing rows), `access` (reading and
//! writing fields), `bulk` (the batched operations behind `Stage`), `destroy` (destruction,
//! reference policies and reclamation), `observers` (lifecycle hooks), `events` (queued events,
//! dirty state and structural counters), `orphans` (orphan records and migration input) and
//! `snapshot` (snapshots and restores).
//!
//! Invariant: sets are shared with snapshots behind `Arc` and copied on their first write after
//! a snapshot, so a snapshot never changes. The tick advances once per actual change (an add, a
//! removal, a write that stores a value differing bit for bit) and never for an equal write. A
//! store and each of its snapshots have distinct `StoreId`s, so a cache keyed by store identity
//! never mistakes one for the other, and the same `Lineage`, which no store made by another
//! `Store::new` has. No add or redefinition evicts another instance's row; only `evict_stale`
//! removes a row on another instance's behalf. The store never calls into the arena: the arena's
//! owner reports destruction (`on_destroyed`) and reclamation (`on_reclaimed`). Every lookup of
//! an instance's row that must find one goes through `member_row`, so a missing row is always
//! the same `StoreError::MissingMembership`, naming the component.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use hashbrown::HashMap;
use strata_arena::InstanceId;

use crate::def::{ComponentId, FieldId, InstalledDef};
use crate::error::StoreError;
use crate::frame::Frame;
use crate::observe::Observers;
use crate::orphan::{OrphanRecord, Orphans};
use crate::set::{ComponentSet, InstanceRef, LoadScratch, Tick};
use crate::shared::SharedSet;
use crate::value::Value;

mod access;
mod bulk;
mod define;
mod destroy;
mod events;
mod observers;
mod orphans;
mod rows;
mod snapshot;

pub use self::destroy::DestroyOutcome;
pub use self::events::StoreEvent;
pub use self::rows::{BulkInit, RowInit};

static NEXT_STORE_ID: AtomicU64 = AtomicU64::new(1);
static NEXT_LINEAGE: AtomicU64 = AtomicU64::new(1);

/// The identity of one store value. Snapshots get their own.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct StoreId(u64);

impl StoreId {
    fn fresh() -> Self {
        Self(NEXT_STORE_ID.fetch_add(1, Ordering::Relaxed))
    }
}

/// The family of one store: the store made by [`Store::new`] and every snapshot taken from it
/// (or from those) share it; another `Store::new` starts another. Component ids and definitions
/// mean the same within a lineage and nothing across lineages, so what was saved from one store
/// ([`SetSlot`](crate::SetSlot)) is only taken back by a store of its lineage.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Lineage(u64);

impl Lineage {
    fn fresh() -> Self {
        Self(NEXT_LINEAGE.fetch_add(1, Ordering::Relaxed))
    }
}

/// The component sets of one world.
#[derive(Debug)]
pub struct Store {
    id: StoreId,
    lineage: Lineage,
    sets: Vec<Option<SharedSet>>,
    names: HashMap<Arc<str>, ComponentId>,
    name_revision: u64,
    tick: Tick,
    orphans: Arc<Orphans>,
    events: Vec<StoreEvent>,
    /// For each component, the components whose definitions require it (by name).
    dependents: Vec<Vec<ComponentId>>,
    /// Values rows held under an older schema version, kept for game migrations.
    migrations: Arc<HashMap<(InstanceId, ComponentId), OrphanRecord>>,
    /// Buffers `load_from` reuses from one load to the next (never shared with snapshots).
    load_scratch: LoadScratch,
    /// The checked values of one `add`, kept between calls so adding allocates nothing (empty
    /// between calls; never shared with snapshots).
    add_scratch: Vec<(FieldId, Value)>,
    /// Lifecycle observers (never carried by snapshots).
    observers: Observers,
    /// Dirty state, structural counter and value counters since the last `end_frame`.
    frame: Frame,
}

impl Default for Store {
    fn default() -> Self {
        Self::new()
    }
}

impl Store {
    /// An empty store.
    pub fn new() -> Self {
        Self {
            id: StoreId::fresh(),
            lineage: Lineage::fresh(),
            sets: Vec::new(),
            names: HashMap::new(),
            name_revision: 0,
            tick: Tick(0),
            orphans: Arc::default(),
            events: Vec::new(),
            dependents: Vec::new(),
            migrations: Arc::default(),
            load_scratch: LoadScratch::default(),
            add_scratch: Vec::new(),
            observers: Observers::default(),
            frame: Frame::default(),
        }
    }

    /// This store value's identity.
    pub fn id(&self) -> StoreId {
        self.id
    }

    /// This store's lineage: shared with the store it was snapshotted from and with its own
    /// snapshots.
    pub fn lineage(&self) -> Lineage {
        self.lineage
    }

    /// The mutation tick: the tick of the latest change.
    pub fn tick(&self) -> Tick {
        self.tick
    }

    /// Advances whenever the name → component mapping changes.
    pub fn name_revision(&self) -> u64 {
        self.name_revision
    }

    /// The component installed under a name.
    pub fn component(&self, name: &str) -> Option<ComponentId> {
        self.names.get(name).copied()
    }

    /// The installed components, in id order.
    pub fn components(&self) -> impl Iterator<Item = &ComponentSet> + '_ {
        self.sets
            .iter()
            .filter_map(|s| s.as_ref().map(SharedSet::get))
    }

    /// A component's set.
    ///
    /// # Errors
    ///
    /// [`StoreError::UnknownComponent`] for a component not installed.
    #[inline]
    pub fn set(&self, component: ComponentId) -> Result<&ComponentSet, StoreError> {
        match self.slot_set(component) {
            Some(set) => Ok(set),
            None => Err(StoreError::UnknownComponent(component)),
        }
    }

    /// A component's installed definition.
    ///
    /// # Errors
    ///
    /// [`StoreError::UnknownComponent`] for a component not installed.
    pub fn def(&self, component: ComponentId) -> Result<&InstalledDef, StoreError> {
        Ok(self.set(component)?.def())
    }

    /// A field's id by name.
    ///
    /// # Errors
    ///
    /// [`StoreError::UnknownComponent`] for a component not installed, and
    /// [`StoreError::UnknownField`] when it has no field of that name.
    pub fn field(&self, component: ComponentId, name: &str) -> Result<FieldId, StoreError> {
        let def = self.def(component)?;
        def.field_id(name).ok_or_else(|| StoreError::UnknownField {
            component: def.name().to_owned(),
            field: name.to_owned(),
        })
    }

    #[inline]
    fn slot_set(&self, component: ComponentId) -> Option<&SharedSet> {
        self.sets.get(component.index())?.as_ref()
    }

    pub(crate) fn set_mut(
        &mut self,
        component: ComponentId,
    ) -> Result<&mut ComponentSet, StoreError> {
        self.sets
            .get_mut(component.index())
            .and_then(Option::as_mut)
            .map(SharedSet::make_mut)
            .ok_or(StoreError::UnknownComponent(component))
    }

    pub(crate) fn advance_tick_to(&mut self, tick: Tick) {
        self.tick = self.tick.max(tick);
    }

    pub(crate) fn push_event(&mut self, event: StoreEvent) {
        self.events.push(event);
    }

    /// Whether an instance holds a component.
    pub fn has(&self, at: InstanceRef, component: ComponentId) -> bool {
        self.slot_set(component).is_some_and(|s| s.contains(at))
    }

    /// The row an instance holds in a component's set.
    ///
    /// # Errors
    ///
    /// [`StoreError::UnknownComponent`] for a component not installed, and
    /// [`StoreError::MissingMembership`] when the instance does not hold it (it never had it, lost
    /// it, or the slot now holds another instance).
    pub fn row(&self, at: InstanceRef, component: ComponentId) -> Result<usize, StoreError> {
        member_row(self.set(component)?, at)
    }

    /// A set (not yet made private) beside the tick and event queue, for edits that need all
    /// three.
    #[inline]
    fn parts(
        &mut self,
        component: ComponentId,
    ) -> Option<(&mut SharedSet, &mut Tick, &mut Vec<StoreEvent>)> {
        let set = self.sets.get_mut(component.index())?.as_mut()?;
        Some((set, &mut self.tick, &mut self.events))
    }

    /// A set (not yet made private), another set (read-only, when asked for and different),
    /// the tick and the event queue, all borrowed apart.
    #[allow(clippy::type_complexity, reason = "a tuple of disjoint borrows")]
    pub(crate) fn parts_split(
        &mut self,
        component: ComponentId,
        other: Option<ComponentId>,
    ) -> Result<
        (
            &mut SharedSet,
            Option<&ComponentSet>,
            &mut Tick,
            &mut Vec<StoreEvent>,
            &mut Frame,
        ),
        StoreError,
    > {
        let index = component.index();
        if self.sets.get(index).and_then(Option::as_ref).is_none() {
            return Err(StoreError::UnknownComponent(component));
        }
        let (before, rest) = self.sets.split_at_mut(index);
        let (target, after) = rest
            .split_first_mut()
            .ok_or(StoreError::UnknownComponent(component))?;
        let set = target
            .as_mut()
            .ok_or(StoreError::UnknownComponent(component))?;
        let other = match other {
            Some(o) if o.index() < index => before
                .get(o.index())
                .and_then(|s| s.as_ref().map(SharedSet::get)),
            Some(o) if o.index() > index => after
                .get(o.index() - index - 1)
                .and_then(|s| s.as_ref().map(SharedSet::get)),
            _ => None,
        };
        Ok((
            set,
            other,
            &mut self.tick,
            &mut self.events,
            &mut self.frame,
        ))
    }

    /// A private set beside the buffers a load reuses.
    pub(crate) fn load_parts(
        &mut self,
        component: ComponentId,
    ) -> Result<(&mut ComponentSet, &mut LoadScratch), StoreError> {
        let set = self
            .sets
            .get_mut(component.index())
            .and_then(Option::as_mut)
            .ok_or(StoreError::UnknownComponent(component))?;
        Ok((set.make_mut(), &mut self.load_scratch))
    }
}

/// The row `at` holds in `set`, or [`StoreError::MissingMembership`] naming the set's component:
/// the one lookup of a row that must be there.
#[inline]
pub(crate) fn member_row(set: &ComponentSet, at: InstanceRef) -> Result<usize, StoreError> {
    match set.row_of(at) {
        Some(row) => Ok(row),
        None => Err(missing_membership(set, at)),
    }
}

#[cold]
#[inline(never)]
fn missing_membership(set: &ComponentSet, at: InstanceRef) -> StoreError {
    StoreError::MissingMembership {
        id: at.id,
        component: set.id(),
        component_name: set.def().shared_name(),
    }
}
