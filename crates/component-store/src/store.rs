//! `Store`: the component sets of one world, their definitions by name, the mutation tick,
//! observer events, orphans, and the destruction and reclamation hooks the arena's owner calls.
//!
//! Invariant: sets are shared with snapshots behind `Arc` and copied on their first write after
//! a snapshot, so a snapshot never changes. The tick advances once per actual change (an add, a
//! removal, a write that stores a value differing bit for bit) and never for an equal write. A
//! store and each of its snapshots have distinct `StoreId`s, so a cache keyed by store identity
//! never mistakes one for the other, and the same `Lineage`, which no store made by another
//! `Store::new` has. No add or redefinition evicts another instance's row; only `evict_stale`
//! removes a row on another instance's behalf. The store never calls into the arena: the arena's
//! owner reports destruction (`on_destroyed`) and reclamation (`on_reclaimed`).

use std::ops::RangeInclusive;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use hashbrown::{HashMap, HashSet};
use strata_arena::{ClassId, ClassRegistry, Doomed, InstanceId};

use crate::column::Scalar;
use crate::def::{ComponentDef, ComponentId, FieldId, InstalledDef, RefPolicy};
use crate::dirty::FieldMask;
use crate::error::StoreError;
use crate::frame::{Frame, FrameDirty, StructuralMissed, StructuralResidue};
use crate::observe::{Call, Observer, ObserverId, Observers};
use crate::orphan::{OrphanRecord, Orphans};
use crate::set::{ComponentSet, InstanceRef, LoadScratch, Tick};
use crate::shared::SharedSet;
use crate::value::Value;

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

/// A change queued for an observed component.
#[derive(Clone, Debug, PartialEq)]
pub enum StoreEvent {
    /// The instance gained the component.
    Added {
        /// The instance.
        id: InstanceId,
        /// The component.
        component: ComponentId,
    },
    /// The instance lost the component.
    Removed {
        /// The instance.
        id: InstanceId,
        /// The component.
        component: ComponentId,
    },
    /// A field changed value.
    Changed {
        /// The instance.
        id: InstanceId,
        /// The component.
        component: ComponentId,
        /// The field.
        field: FieldId,
    },
}

/// What the store did when told of a destruction.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DestroyOutcome {
    /// Rows removed: the destroyed instances' own, then those removed by `RemoveComponent`
    /// policies and their dependents.
    pub removed: Vec<(InstanceId, ComponentId)>,
    /// References cleared by `Clear` policies: holder, component, field.
    pub cleared: Vec<(InstanceId, ComponentId, FieldId)>,
    /// Holders a `DestroyHolder` policy asks the arena's owner to destroy (not already being
    /// destroyed), in the order found, without duplicates.
    pub destroy: Vec<InstanceId>,
}

impl DestroyOutcome {
    /// Empties the lists, keeping their memory for the next [`Store::on_destroyed_into`].
    pub fn clear(&mut self) {
        self.removed.clear();
        self.cleared.clear();
        self.destroy.clear();
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

    /// A copy sharing every set; the first write to a set afterwards copies that set only.
    /// The copy has a new identity, the same lineage, and no pending events. It carries no
    /// observers (they live in the store that registered them, not in its sets). It carries the
    /// frame state at a cost independent of the frame's work: dirty state (a component with
    /// explicitly marked or moved rows counts as dirty whole there), the structural count and
    /// value counters as they are, and a structural window opened at the snapshot (a count
    /// from before it is [`StructuralMissed`] there).
    pub fn snapshot(&self) -> Store {
        Store {
            id: StoreId::fresh(),
            lineage: self.lineage,
            sets: self
                .sets
                .iter()
                .map(|s| s.as_ref().map(SharedSet::share))
                .collect(),
            names: self.names.clone(),
            name_revision: self.name_revision,
            tick: self.tick,
            orphans: self.orphans.clone(),
            events: Vec::new(),
            dependents: self.dependents.clone(),
            migrations: self.migrations.clone(),
            load_scratch: LoadScratch::default(),
            observers: Observers::default(),
            frame: self.frame.snapshot(),
        }
    }

    /// Makes this store what `saved` (a [`Store::snapshot`] of it or of a store of its
    /// lineage) holds: the same definitions and component ids, rows with their values, added
    /// and changed ticks and dirty fields, removal logs, reverse reference index, orphan
    /// records and migration records, and the mutation tick, sharing every set with `saved`
    /// (the first write to one copies it). The restored store takes a new identity, so every
    /// cache built against this store (query caches and change windows, which are keyed by
    /// store identity; views; handles' resolutions) sees another store and rebuilds, and no
    /// tick issued before the restore is ever compared with one issued after it. The name
    /// revision and the structural counter move on past both, so counts taken before the
    /// restore see a change. A removal reader that read removals made after `saved` was taken
    /// reports missed removals, since its log's history does not continue there. Pending events
    /// are dropped (they announced what the restore takes back); observers stay registered.
    ///
    /// Refused, changing nothing, for a store of another lineage
    /// ([`StoreError::SnapshotFromOtherStore`]).
    pub fn restore(&mut self, saved: &Store) -> Result<(), StoreError> {
        if saved.lineage != self.lineage {
            return Err(StoreError::SnapshotFromOtherStore);
        }
        self.id = StoreId::fresh();
        self.sets = saved
            .sets
            .iter()
            .map(|s| s.as_ref().map(SharedSet::share))
            .collect();
        if self.names != saved.names {
            self.names = saved.names.clone();
        }
        self.name_revision = self.name_revision.max(saved.name_revision) + 1;
        self.tick = saved.tick;
        self.orphans = saved.orphans.clone();
        self.events.clear();
        self.dependents = saved.dependents.clone();
        self.migrations = saved.migrations.clone();
        self.frame = self.frame.restored(&saved.frame);
        Ok(())
    }

    /// Whether the two stores share the set of `component` (neither has written it since one
    /// was snapshotted from the other).
    pub fn shares_set_with(&self, other: &Store, component: ComponentId) -> bool {
        match (self.slot_set(component), other.slot_set(component)) {
            (Some(a), Some(b)) => a.ptr_eq(b),
            _ => false,
        }
    }

    // ----- Definitions. -----

    /// Installs a definition; class names are resolved against `classes`.
    pub fn install(
        &mut self,
        def: ComponentDef,
        classes: &ClassRegistry,
    ) -> Result<ComponentId, StoreError> {
        if self.names.contains_key(&*def.name) {
            return Err(StoreError::DuplicateComponent(def.name.to_string()));
        }
        let id = ComponentId(u32::try_from(self.sets.len()).map_err(|_| {
            StoreError::InvalidDefinition {
                component: def.name.to_string(),
                reason: "too many components".into(),
            }
        })?);
        let installed = InstalledDef::validate(def, id, classes)?;
        self.names.insert(installed.def.name.clone(), id);
        self.name_revision += 1;
        self.sets
            .push(Some(SharedSet::new(ComponentSet::new(Arc::new(installed)))));
        self.rebuild_dependents();
        Ok(id)
    }

    /// Replaces a component's definition, keeping its id: the set is rebuilt from `rows` (values
    /// in the new definition's field order, for instances whose class it allows), its
    /// structural revision advances, and its removal log carries over. Used by schema adoption.
    ///
    /// A row of an instance that had one before keeps its added tick; its fields are matched to
    /// the old definition's by name, then by the new field's former names, and a field whose
    /// type and value (bit for bit) are unchanged keeps its pending dirty state, while any other
    /// field counts as changed now (dirty, and the row's changed tick moves). A row of an
    /// instance that had none is added now (an `Added` event when the new definition is
    /// observed). An instance that had a row and has none now loses the component like any
    /// removal: a removal record, a `Removed` event when the old definition was observed, and
    /// the removal of every component of the instance that requires this one.
    ///
    /// Refused, changing nothing, for an invalid definition, a name another component holds,
    /// two rows for one slot, a row whose values do not fit, and a row whose slot holds another
    /// instance's row or lies past what its reference may address, as for [`Store::add`].
    pub fn redefine(
        &mut self,
        component: ComponentId,
        def: ComponentDef,
        classes: &ClassRegistry,
        rows: Vec<(InstanceRef, Vec<Value>)>,
    ) -> Result<(), StoreError> {
        let old = self
            .slot_set(component)
            .map(SharedSet::get)
            .ok_or(StoreError::UnknownComponent(component))?;
        let renamed = *old.def().def.name != *def.name;
        if renamed && self.names.contains_key(&*def.name) {
            return Err(StoreError::DuplicateComponent(def.name.to_string()));
        }
        let installed = InstalledDef::validate(def, component, classes)?;
        for (at, values) in &rows {
            if let Some(holder) = old.holder_at(at.slot).filter(|holder| *holder != at.id) {
                return Err(StoreError::SlotOccupied {
                    slot: at.slot,
                    holder,
                    component,
                });
            }
            at.check_slot(old.sparse_len(), rows.len(), || self.slot_extent())?;
            check_row(&installed, values)?;
        }
        let mut seen = HashSet::with_capacity(rows.len());
        if rows.iter().any(|(at, _)| !seen.insert(at.slot)) {
            return Err(StoreError::InvalidDefinition {
                component: installed.def.name.to_string(),
                reason: "two rows for one slot".into(),
            });
        }
        // Each new field's counterpart in the old definition: same name, else a former name,
        // and the same type.
        let counterparts: Vec<Option<FieldId>> = installed
            .fields()
            .iter()
            .map(|field| {
                std::iter::once(&field.name)
                    .chain(&field.former_names)
                    .find_map(|name| old.def().field_id(name))
                    .filter(|g| old.def().field(*g).is_some_and(|o| o.ty == field.ty))
            })
            .collect();
        let (old_observed, new_observed) = (old.def().def.observed, installed.def.observed);
        let old_name = old.def().def.name.clone();
        let tick = Tick(self.tick.0 + 1);
        // Observers see the old rows go (readable in the old set), then the new rows come.
        self.notify_replaced(component, true);
        let Some(old) = self.slot_set(component).map(SharedSet::get) else {
            return Err(StoreError::UnknownComponent(component));
        };
        let (set, lost, added) =
            ComponentSet::redefined(Arc::new(installed), old, rows, &counterparts, tick);

        self.tick = tick;
        if renamed {
            self.names.remove(&old_name);
            self.names.insert(set.def().def.name.clone(), component);
            self.name_revision += 1;
        }
        self.sets[component.index()] = Some(SharedSet::new(set));
        self.notify_replaced(component, false);
        self.rebuild_dependents();
        if old_observed {
            self.events
                .extend(lost.iter().map(|at| StoreEvent::Removed {
                    id: at.id,
                    component,
                }));
        }
        if new_observed {
            self.events.extend(
                added
                    .into_iter()
                    .map(|id| StoreEvent::Added { id, component }),
            );
        }
        let mut removed = Vec::new();
        for at in lost {
            if !self.migrations.is_empty() {
                Arc::make_mut(&mut self.migrations).remove(&(at.id, component));
            }
            self.remove_dependents(at, component, &mut removed);
        }
        Ok(())
    }

    /// Removes a component's definition and returns its rows with named field values and the
    /// types they were stored under (for the caller to keep as orphans). The id is never reused.
    pub fn uninstall(
        &mut self,
        component: ComponentId,
    ) -> Result<Vec<(InstanceRef, OrphanRecord)>, StoreError> {
        self.set(component)?;
        // Observers see every row go (still readable) and the set deactivate, then are
        // dropped with the component.
        self.notify_replaced(component, true);
        self.observers.forget(component);
        self.frame.forget(component);
        let set = self
            .sets
            .get_mut(component.index())
            .and_then(Option::take)
            .ok_or(StoreError::UnknownComponent(component))?;
        let types = OrphanRecord::types_of(&set);
        let records = (0..set.len())
            .map(|row| (set.at(row), OrphanRecord::from_row(&set, row, &types)))
            .collect();
        self.names.remove(&*set.def().def.name);
        self.name_revision += 1;
        self.rebuild_dependents();
        Ok(records)
    }

    /// Recomputes, for every component, which installed components require it.
    fn rebuild_dependents(&mut self) {
        let mut dependents = vec![Vec::new(); self.sets.len()];
        for dependent in self.components() {
            for required in &dependent.def().def.requires {
                if let Some(&id) = self.names.get(required) {
                    dependents[id.index()].push(dependent.id());
                }
            }
        }
        self.dependents = dependents;
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
    #[inline]
    pub fn set(&self, component: ComponentId) -> Result<&ComponentSet, StoreError> {
        match self.slot_set(component) {
            Some(set) => Ok(set),
            None => Err(StoreError::UnknownComponent(component)),
        }
    }

    /// A component's installed definition.
    pub fn def(&self, component: ComponentId) -> Result<&InstalledDef, StoreError> {
        Ok(self.set(component)?.def())
    }

    /// A field's id by name.
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

    // ----- Membership. -----

    /// Whether an instance holds a component.
    pub fn has(&self, at: InstanceRef, component: ComponentId) -> bool {
        self.slot_set(component).is_some_and(|s| s.contains(at))
    }

    /// The row an instance holds in a component's set.
    pub fn row(&self, at: InstanceRef, component: ComponentId) -> Result<usize, StoreError> {
        match self.set(component)?.row_of(at) {
            Some(row) => Ok(row),
            None => Err(StoreError::MissingMembership {
                id: at.id,
                component,
            }),
        }
    }

    /// Adds a component to an instance of `class`: fields take the given values, the rest their
    /// defaults. Every value is checked before anything is stored. Refused, changing nothing,
    /// when the instance already holds the component ([`StoreError::AlreadyPresent`]), the
    /// class is not allowed ([`StoreError::ClassNotAllowed`]), another instance holds a row at
    /// the slot ([`StoreError::SlotOccupied`]: a mismatched pair, or a destruction never
    /// reported, see [`Store::evict_stale`]), or the slot is past what the reference may
    /// address ([`StoreError::SlotOutOfRange`], see [`InstanceRef`]).
    pub fn add(
        &mut self,
        at: InstanceRef,
        class: ClassId,
        component: ComponentId,
        values: impl IntoIterator<Item = (FieldId, Value)>,
    ) -> Result<usize, StoreError> {
        let set = self.set(component)?;
        let def = set.def();
        let mut row_values: Vec<Value> = def.fields().iter().map(|f| f.default.clone()).collect();
        let mut given = Vec::new();
        for (field, value) in values {
            def.check_value(field, &value)?;
            // In range: `check_value` found the field, and there is one value per field.
            if let Some(slot) = row_values.get_mut(field.index()) {
                *slot = value;
                given.push(field);
            }
        }
        let (set, row, observers) = self.add_row(at, class, component, Some(row_values), &given)?;
        if observers.watches(component) {
            observers.added(component, set, row..=row);
        }
        Ok(row)
    }

    /// Adds a component with every field at its default (copied from typed default columns,
    /// without building values) and returns a writer for setting fields of the new row without
    /// further ticks: the fast path for spawning.
    pub fn insert(
        &mut self,
        at: InstanceRef,
        class: ClassId,
        component: ComponentId,
    ) -> Result<RowInit<'_>, StoreError> {
        let (set, row, observers) = self.add_row(at, class, component, None, &[])?;
        let observers = observers
            .watches(component)
            .then_some((observers, component));
        Ok(RowInit {
            set,
            row,
            observers,
        })
    }

    /// Adds a row of checked values (or defaults) after [`Store::check_add`]; the fields'
    /// factories make the values of the fields not in `given`.
    #[inline]
    fn add_row(
        &mut self,
        at: InstanceRef,
        class: ClassId,
        component: ComponentId,
        values: Option<Vec<Value>>,
        given: &[FieldId],
    ) -> Result<(&mut ComponentSet, usize, &mut Observers), StoreError> {
        let set = self.set(component)?;
        self.check_add(set, at, class, set.len() + 1)?;
        let values = if set.def().has_factories() {
            let mut values = values.unwrap_or_else(|| {
                set.def()
                    .fields()
                    .iter()
                    .map(|f| f.default.clone())
                    .collect()
            });
            for (field, mut made) in set.def().make_defaults(&[at.id], given)? {
                if let (Some(slot), Some(value)) = (values.get_mut(field.index()), made.pop()) {
                    *slot = value;
                }
            }
            Some(values)
        } else {
            values
        };
        self.push_checked_row(at, component, values)
    }

    /// Adds a row of checked values (or defaults) for an instance [`Store::check_add`] already
    /// accepted: one tick, an `Added` event when the component is observed, and the row counted
    /// as a structural change. The caller reports the row to lifecycle observers (returned
    /// beside the set) once its values are final.
    #[inline]
    pub(crate) fn push_checked_row(
        &mut self,
        at: InstanceRef,
        component: ComponentId,
        values: Option<Vec<Value>>,
    ) -> Result<(&mut ComponentSet, usize, &mut Observers), StoreError> {
        let Some(set) = self
            .sets
            .get_mut(component.index())
            .and_then(Option::as_mut)
        else {
            return Err(StoreError::UnknownComponent(component));
        };
        let observed = set.def().def.observed;
        self.tick.0 += 1;
        let set = set.make_mut();
        let row = match values {
            Some(values) => set.push_row(at, values, self.tick),
            None => set.push_default_row(at, self.tick),
        };
        if observed {
            self.events.push(StoreEvent::Added {
                id: at.id,
                component,
            });
        }
        self.frame.added(component, set, row..=row);
        Ok((set, row, &mut self.observers))
    }

    /// Adds a component with default values to many instances of one class in one step: one
    /// tick, each column extended once, defaults copied without building values. Returns a
    /// writer for filling the new rows' fields without further ticks. Refused, changing
    /// nothing, when one slot appears twice or any instance could not take the row alone (see
    /// [`Store::add`]). An empty `ats` changes nothing: no tick, no structural revision, and a
    /// set shared with a snapshot stays shared.
    pub fn insert_many(
        &mut self,
        ats: &[InstanceRef],
        class: ClassId,
        component: ComponentId,
    ) -> Result<BulkInit<'_>, StoreError> {
        let set = self.set(component)?;
        if !set.def().allows_class(class) {
            return Err(StoreError::ClassNotAllowed {
                component: set.def().name().to_owned(),
                class,
            });
        }
        if ats.is_empty() {
            // Nothing to add: no tick, no revision, and the set stays shared with snapshots.
            let set = self
                .sets
                .get_mut(component.index())
                .and_then(Option::as_mut)
                .ok_or(StoreError::UnknownComponent(component))?;
            return Ok(BulkInit {
                set,
                rows: 0..0,
                observers: None,
            });
        }
        // Every slot is checked against its bound before the bitmap below is sized by them.
        // The class is allowed (checked above): each slot needs only to be free and in range,
        // decided by `check_add` in full where the quick test fails.
        let rows_after = set.len() + ats.len();
        let sparse_len = set.sparse_len();
        let mut max_slot = 0;
        for at in ats {
            if set.holder_at(at.slot).is_some() || !at.slot_near(sparse_len, rows_after) {
                self.check_add_slow(set, *at, class, rows_after)?;
            }
            max_slot = max_slot.max(at.slot.index());
        }
        let mut seen = vec![0u64; max_slot / 64 + 1];
        for at in ats {
            let (word, bit) = (at.slot.index() / 64, 1u64 << (at.slot.index() % 64));
            if seen[word] & bit != 0 {
                return Err(StoreError::DuplicateSlot(at.slot));
            }
            seen[word] |= bit;
        }
        let made = if set.def().has_factories() {
            let ids: Vec<InstanceId> = ats.iter().map(|at| at.id).collect();
            set.def().make_defaults(&ids, &[])?
        } else {
            Vec::new()
        };
        let Some(set) = self
            .sets
            .get_mut(component.index())
            .and_then(Option::as_mut)
        else {
            return Err(StoreError::UnknownComponent(component));
        };
        self.tick.0 += 1;
        let observed = set.def().def.observed;
        let rows = set.make_mut().push_default_rows(ats, self.tick);
        set.make_mut().store_made(rows.start, made);
        if observed {
            self.events.extend(ats.iter().map(|at| StoreEvent::Added {
                id: at.id,
                component,
            }));
        }
        self.frame
            .added(component, set.get(), rows.start..=rows.end - 1);
        let observers = self
            .observers
            .watches(component)
            .then_some((&mut self.observers, component));
        Ok(BulkInit {
            set,
            rows,
            observers,
        })
    }

    /// Removes, in every component, a row held at `at`'s slot by another instance: one destroyed
    /// without the store being told, whose slot the arena has given to `at` since. Each
    /// eviction is a removal like any other (dependents, removal records and events included),
    /// and the evicted instances' orphan records go too. Returns the rows removed. This is the
    /// only way a row of one instance is removed on behalf of another: adds refuse an occupied
    /// slot ([`StoreError::SlotOccupied`]) rather than evict.
    pub fn evict_stale(&mut self, at: InstanceRef) -> Vec<(InstanceId, ComponentId)> {
        let mut removed = Vec::new();
        for index in 0..self.sets.len() {
            let holder = self.sets[index].as_ref().and_then(|s| s.holder_at(at.slot));
            if let Some(holder) = holder.filter(|h| *h != at.id) {
                let stale = InstanceRef::new(holder, at.slot);
                self.remove_with_dependents(stale, ComponentId(index as u32), &mut removed);
            }
        }
        if !self.orphans.is_empty() {
            let orphans = Arc::make_mut(&mut self.orphans);
            for (id, _) in &removed {
                orphans.remove_instance(*id);
            }
        }
        removed
    }

    /// Removes a component from an instance, together with every component of the instance
    /// that requires it (transitively). Returns `false` when the instance did not hold it.
    pub fn remove(&mut self, at: InstanceRef, component: ComponentId) -> Result<bool, StoreError> {
        let Some(row) = self.set(component)?.row_of(at) else {
            return Ok(false);
        };
        self.remove_row(at.id, component, row);
        if !self.dependents[component.index()].is_empty() {
            let mut removed = Vec::new();
            self.remove_dependents(at, component, &mut removed);
        }
        Ok(true)
    }

    fn remove_with_dependents(
        &mut self,
        at: InstanceRef,
        component: ComponentId,
        removed: &mut Vec<(InstanceId, ComponentId)>,
    ) {
        if !self.remove_one(at, component) {
            return;
        }
        removed.push((at.id, component));
        self.remove_dependents(at, component, removed);
    }

    /// Removes every component of an instance that requires `component` (transitively), after
    /// the instance lost `component`.
    fn remove_dependents(
        &mut self,
        at: InstanceRef,
        component: ComponentId,
        removed: &mut Vec<(InstanceId, ComponentId)>,
    ) {
        if self.dependents[component.index()].is_empty() {
            return;
        }
        let mut pending = self.dependents[component.index()].clone();
        while let Some(current) = pending.pop() {
            if self.remove_one(at, current) {
                removed.push((at.id, current));
                pending.extend_from_slice(&self.dependents[current.index()]);
            }
        }
    }

    /// Removes one component's row of an instance; `false` when it had none.
    fn remove_one(&mut self, at: InstanceRef, component: ComponentId) -> bool {
        let Some(row) = self.slot_set(component).and_then(|set| set.row_of(at)) else {
            return false;
        };
        self.remove_row(at.id, component, row);
        true
    }

    /// Removes row `row` (held by `id`) of a component's set: one tick, a removal record, a
    /// `Removed` event when the component is observed, and the row's migration input. Lifecycle
    /// observers see `on_removed(row..=row)` before the row goes, then the move of the last row
    /// into the hole (when it was not the removed one), then the deactivation of a set left
    /// empty; the frame state counts each.
    fn remove_row(&mut self, id: InstanceId, component: ComponentId, row: usize) {
        self.notify_removing(component, row..=row);
        let Some((set, tick, events)) = self.parts(component) else {
            return;
        };
        tick.0 += 1;
        let observed = set.def().def.observed;
        let set = set.make_mut();
        set.swap_remove_row(row, *tick);
        let last = set.len();
        let moved = set.ids().get(row).copied();
        if observed {
            events.push(StoreEvent::Removed { id, component });
        }
        if !self.migrations.is_empty() {
            Arc::make_mut(&mut self.migrations).remove(&(id, component));
        }
        if let Some(moved) = moved {
            self.notify_moved(component, moved, last, row);
        }
        self.notify_emptied_if(component);
    }

    // ----- Lifecycle observers and the hooks every structural edit calls. -----

    /// Registers lifecycle callbacks for a component's rows. Registration replays nothing: the
    /// observer hears of rows added, removed and moved from now on. Observers of one component
    /// run in registration order. A callback gets the set by shared reference, so it cannot
    /// change the store. Observers live in this store value: a [`Store::snapshot`] has none,
    /// and [`Store::uninstall`] drops the component's observers with it.
    ///
    /// Refused, changing nothing, for a component not installed
    /// ([`StoreError::UnknownComponent`]).
    pub fn observe(
        &mut self,
        component: ComponentId,
        observer: Observer,
    ) -> Result<ObserverId, StoreError> {
        self.set(component)?;
        Ok(self.observers.register(component, observer))
    }

    /// Unregisters an observer and hands it back. Refused, changing nothing, for an id this
    /// store did not give, or already took back, or whose component was uninstalled
    /// ([`StoreError::UnknownObserver`]).
    pub fn unobserve(&mut self, id: ObserverId) -> Result<Observer, StoreError> {
        self.observers
            .unregister(id)
            .ok_or(StoreError::UnknownObserver(id))
    }

    /// Rows `rows` of `component` were added (they exist, with their final values): counts the
    /// structural change and tells the component's observers (`on_activated` first when the
    /// rows are the set's first).
    pub(crate) fn notify_added(&mut self, component: ComponentId, rows: RangeInclusive<usize>) {
        let Some(set) = self.sets.get(component.index()).and_then(Option::as_ref) else {
            return;
        };
        self.frame.added(component, set.get(), rows.clone());
        if self.observers.watches(component) {
            self.observers.added(component, set.get(), rows);
        }
    }

    /// Rows `rows` of `component` are about to be removed (still readable): counts the
    /// structural change, leaves the component dirty for the frame, and tells its observers.
    pub(crate) fn notify_removing(&mut self, component: ComponentId, rows: RangeInclusive<usize>) {
        let Some(set) = self.sets.get(component.index()).and_then(Option::as_ref) else {
            return;
        };
        self.frame.removing(component, set.get(), rows.clone());
        if self.observers.watches(component) {
            self.observers
                .call(component, set.get(), Call::Removed(rows));
        }
    }

    /// A removal moved `id` from row `old` to row `new` of `component` (already done): counts
    /// the structural change, marks the row dirty for the frame, and tells the observers.
    pub(crate) fn notify_moved(
        &mut self,
        component: ComponentId,
        id: InstanceId,
        old: usize,
        new: usize,
    ) {
        let Some(set) = self.sets.get(component.index()).and_then(Option::as_ref) else {
            return;
        };
        let set = set.get();
        if new < set.len() {
            self.frame.moved(component, set.at(new));
        }
        if self.observers.watches(component) {
            self.observers
                .call(component, set, Call::Moved(id, old, new));
        }
    }

    /// Tells the observers of `component` that its set became inactive, when it is now empty.
    pub(crate) fn notify_emptied_if(&mut self, component: ComponentId) {
        if !self.observers.watches(component) {
            return;
        }
        if let Some(set) = self.sets.get(component.index()).and_then(Option::as_ref)
            && set.is_empty()
        {
            self.observers.call(component, set.get(), Call::Deactivated);
        }
    }

    /// Reports a whole set replaced (a load or a redefinition) to the hooks: before, call with
    /// `before == true` (every row removed, deactivation); after, with `false` (activation, every
    /// row added), and the set counts as dirty as a whole for the frame.
    pub(crate) fn notify_replaced(&mut self, component: ComponentId, before: bool) {
        let Some(len) = self.slot_set(component).map(|s| s.len()) else {
            return;
        };
        if before {
            if len > 0 {
                self.notify_removing(component, 0..=len - 1);
                if self.observers.watches(component)
                    && let Some(set) = self.sets.get(component.index()).and_then(Option::as_ref)
                {
                    self.observers.call(component, set.get(), Call::Deactivated);
                }
            }
        } else {
            if len > 0 {
                self.notify_added(component, 0..=len - 1);
            }
            self.frame.mark_whole(component);
        }
    }

    // ----- Dirty state for incremental consumers, and structural counters. -----

    /// Whether anything of a component is dirty since the last [`Store::end_frame`]: a row
    /// added, removed, moved or written (an actual change: an equal write is no write), a
    /// [`Store::column_mut`], or a mark ([`Store::mark_dirty`], [`Store::mark_rows_dirty`]).
    /// Reading marks nothing. Refused for a component not installed.
    pub fn is_dirty(&self, component: ComponentId) -> Result<bool, StoreError> {
        let set = self.set(component)?;
        Ok(self.frame.is_dirty(component, set))
    }

    /// What of a component is dirty since the last [`Store::end_frame`]: clean, the whole
    /// column, or the dirty rows (see [`FrameDirty`]). Refused for a component not installed.
    pub fn frame_dirty(&self, component: ComponentId) -> Result<FrameDirty, StoreError> {
        let set = self.set(component)?;
        Ok(self.frame.dirty(component, set))
    }

    /// Marks an instance's row of a component dirty for the frame, after a write the store
    /// could not see (through a value read out and written back elsewhere, say). Changes no
    /// tick and no value. Refused, changing nothing, for a component not installed or an
    /// instance without the component ([`StoreError::MissingMembership`]).
    pub fn mark_dirty(
        &mut self,
        at: InstanceRef,
        component: ComponentId,
    ) -> Result<(), StoreError> {
        self.row(at, component)?;
        self.frame.mark(component, at);
        Ok(())
    }

    /// Marks rows `rows` of a component dirty for the frame (see [`Store::mark_dirty`]).
    /// Refused, changing nothing, for a component not installed or a range past the set's rows
    /// ([`StoreError::RowOutOfRange`]).
    pub fn mark_rows_dirty(
        &mut self,
        component: ComponentId,
        rows: RangeInclusive<usize>,
    ) -> Result<(), StoreError> {
        let set = self.set(component)?;
        if rows.is_empty() {
            return Ok(());
        }
        if *rows.end() >= set.len() {
            return Err(StoreError::RowOutOfRange {
                component: set.def().name().to_owned(),
                row: *rows.end(),
            });
        }
        if rows.clone().count() > crate::frame::RESIDUE_CAPACITY {
            self.frame.mark_whole(component);
            return Ok(());
        }
        let Some(set) = self.sets.get(component.index()).and_then(Option::as_ref) else {
            return Ok(());
        };
        for row in rows {
            self.frame.mark(component, set.at(row));
        }
        Ok(())
    }

    /// Ends the frame: dirty state clears for every component, and the structural window
    /// reopens at the present [`Store::structural_count`] with no residue. The engine calls it
    /// once per frame, after every consumer has read. Per-row dirty fields
    /// ([`Store::take_dirty`]) and change ticks are not touched.
    pub fn end_frame(&mut self) {
        self.frame.end(self.tick);
    }

    /// The store tick when the frame began (at the last [`Store::end_frame`], or when the store
    /// was made or restored): every change of the frame so far has a later tick. With
    /// [`RemovalReader::since`](crate::RemovalReader::since), a reader of the frame's removals.
    pub fn frame_tick(&self) -> Tick {
        self.frame.tick()
    }

    /// The structural change count: it rises by one for every range of rows added, every range
    /// of rows removed and every row a removal moved, in any component, and never falls.
    pub fn structural_count(&self) -> u64 {
        self.frame.count()
    }

    /// The structural changes after `count` (a value of [`Store::structural_count`] read
    /// earlier in this window): the components whose membership changed, the instances that got
    /// a row, and those that lost or moved one. [`StructuralMissed`] when `count` predates the
    /// window or is past the present count: the window opens at every [`Store::end_frame`], and
    /// again at any event that would take the residue past its bound
    /// ([`RESIDUE_CAPACITY`](crate::RESIDUE_CAPACITY) instances per list). Then refresh
    /// completely and continue from the present count, in the same frame.
    pub fn structural_since(&self, count: u64) -> Result<StructuralResidue<'_>, StructuralMissed> {
        self.frame.since(count)
    }

    /// Turns on (or off) the counting of explicit writes to one column (checked setters such
    /// as [`Store::write`], column writers, parallel passes, bulk sets, [`Store::column_mut`]):
    /// [`Store::value_count`] adds each write that
    /// changes a value of it from now on (an equal write is no write). Refused, changing
    /// nothing, for a component not installed or a field it lacks.
    pub fn track_value_count(
        &mut self,
        component: ComponentId,
        field: FieldId,
        on: bool,
    ) -> Result<(), StoreError> {
        let set = self.set(component)?;
        if set.def().field(field).is_none() {
            return Err(StoreError::UnknownField {
                component: set.def().name().to_owned(),
                field: format!("{field:?}"),
            });
        }
        self.frame.track_value_count(component, field, on);
        Ok(())
    }

    /// The number of explicit value writes to tracked columns (see
    /// [`Store::track_value_count`]) since tracking began, over all of them. Never falls.
    pub fn value_count(&self) -> u64 {
        self.frame.value_count()
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

    // ----- Field access. -----

    /// A field's value, typed (no boxing).
    pub fn get<T: Scalar>(
        &self,
        at: InstanceRef,
        component: ComponentId,
        field: FieldId,
    ) -> Result<&T, StoreError> {
        let set = self.set(component)?;
        let Some(row) = set.row_of(at) else {
            return Err(StoreError::MissingMembership {
                id: at.id,
                component,
            });
        };
        let values = set.checked_values::<T>(field)?;
        Ok(&values[row])
    }

    /// A field's value in dynamic form.
    pub fn get_value(
        &self,
        at: InstanceRef,
        component: ComponentId,
        field: FieldId,
    ) -> Result<Value, StoreError> {
        let set = self.set(component)?;
        let Some(row) = set.row_of(at) else {
            return Err(StoreError::MissingMembership {
                id: at.id,
                component,
            });
        };
        set.def().checked_field(field)?;
        // The field exists and the row is present, so the column holds a value there.
        set.value(row, field)
            .ok_or_else(|| StoreError::RowOutOfRange {
                component: set.def().name().to_owned(),
                row,
            })
    }

    /// Writes a field, typed. An equal value changes nothing and returns `false`.
    pub fn write<T: Scalar>(
        &mut self,
        at: InstanceRef,
        component: ComponentId,
        field: FieldId,
        value: T,
    ) -> Result<bool, StoreError> {
        let Some((set, tick, events)) = self.parts(component) else {
            return Err(StoreError::UnknownComponent(component));
        };
        let Some(row) = set.row_of(at) else {
            return Err(StoreError::MissingMembership {
                id: at.id,
                component,
            });
        };
        let def = set.def();
        let field_def = def.check_scalar_value(field, &value)?;
        let Some(values) = set.values::<T>(field) else {
            return Err(def.type_mismatch(field_def, std::any::type_name::<T>()));
        };
        if values[row].identical(&value) {
            return Ok(false);
        }
        if def.reference_fields.contains(&field) {
            let changed = self.write_row(component, row, field, value.into_value())?;
            self.frame
                .count_values(component, field, u64::from(changed));
            return Ok(changed);
        }
        let observed = def.def.observed;
        tick.0 += 1;
        set.make_mut().write_typed(row, field, value, *tick);
        if observed {
            events.push(StoreEvent::Changed {
                id: at.id,
                component,
                field,
            });
        }
        self.frame.count_values(component, field, 1);
        Ok(true)
    }

    /// Writes a field in dynamic form. An equal value changes nothing and returns `false`.
    pub fn write_value(
        &mut self,
        at: InstanceRef,
        component: ComponentId,
        field: FieldId,
        value: Value,
    ) -> Result<bool, StoreError> {
        let set = self.set(component)?;
        let Some(row) = set.row_of(at) else {
            return Err(StoreError::MissingMembership {
                id: at.id,
                component,
            });
        };
        set.def().check_value(field, &value)?;
        if set.value(row, field).is_some_and(|v| v.identical(&value)) {
            return Ok(false);
        }
        let changed = self.write_row(component, row, field, value)?;
        self.frame
            .count_values(component, field, u64::from(changed));
        Ok(changed)
    }

    /// Writes a field at a row in dynamic form: the value is checked against the field's type;
    /// an equal value changes nothing and returns `false`. The caller is responsible for the row
    /// still holding the instance it means (see `ComponentSet::ids`).
    pub fn write_value_at(
        &mut self,
        component: ComponentId,
        row: usize,
        field: FieldId,
        value: Value,
    ) -> Result<bool, StoreError> {
        let set = self.set(component)?;
        set.def().check_value(field, &value)?;
        if row >= set.len() {
            return Err(StoreError::RowOutOfRange {
                component: set.def().name().to_owned(),
                row,
            });
        }
        if set.value(row, field).is_some_and(|v| v.identical(&value)) {
            return Ok(false);
        }
        let changed = self.write_row(component, row, field, value)?;
        self.frame
            .count_values(component, field, u64::from(changed));
        Ok(changed)
    }

    /// Writes a checked, different value at a row.
    pub(crate) fn write_row(
        &mut self,
        component: ComponentId,
        row: usize,
        field: FieldId,
        value: Value,
    ) -> Result<bool, StoreError> {
        let tick = Tick(self.tick.0 + 1);
        let set = self.set_mut(component)?;
        let id = set.ids()[row];
        let observed = set.def().def.observed;
        if !set.write(row, field, value, tick) {
            return Ok(false);
        }
        self.tick = tick;
        if observed {
            self.events.push(StoreEvent::Changed {
                id,
                component,
                field,
            });
        }
        Ok(true)
    }

    // ----- Events and dirty state. -----

    /// The events queued for observed components since the last call.
    pub fn drain_events(&mut self) -> Vec<StoreEvent> {
        std::mem::take(&mut self.events)
    }

    /// The rows of a component whose fields changed since the last call, in row order, with
    /// the changed fields; cleans them. Rows removed since are not reported. Costs nothing when
    /// no row is dirty, and otherwise follows the words of rows holding dirty ones.
    pub fn take_dirty(
        &mut self,
        component: ComponentId,
    ) -> Result<Vec<(InstanceId, FieldMask)>, StoreError> {
        if self.set(component)?.pending_dirty() == 0 {
            return Ok(Vec::new());
        }
        Ok(self.set_mut(component)?.take_dirty())
    }

    // ----- Orphans. -----

    /// A row of `component` as a raw record: field name → value, with the types the values
    /// are stored under (as a removed definition leaves its rows). For moving rows to another
    /// store (a graft, a save file), where adoption reads them under that store's definition.
    pub fn record(
        &self,
        at: InstanceRef,
        component: ComponentId,
    ) -> Result<OrphanRecord, StoreError> {
        let set = self.set(component)?;
        let row = set.row_of(at).ok_or(StoreError::MissingMembership {
            id: at.id,
            component,
        })?;
        Ok(OrphanRecord::from_row(
            set,
            row,
            &OrphanRecord::types_of(set),
        ))
    }

    /// Every row of `component` as a raw record (see [`Store::record`]), in row order, the
    /// types shared by all of them.
    pub fn records(
        &self,
        component: ComponentId,
    ) -> Result<Vec<(InstanceRef, OrphanRecord)>, StoreError> {
        let set = self.set(component)?;
        let types = OrphanRecord::types_of(set);
        Ok((0..set.len())
            .map(|row| {
                let at = InstanceRef::new(set.ids()[row], set.slots()[row]);
                (at, OrphanRecord::from_row(set, row, &types))
            })
            .collect())
    }

    /// Keeps a saved record whose definition is not installed, for the instance `at`. A record
    /// for the same component replaces the previous one.
    pub fn add_orphan(&mut self, at: InstanceRef, record: OrphanRecord) {
        Arc::make_mut(&mut self.orphans).insert(at, record);
    }

    /// The orphan records.
    pub fn orphans(&self) -> &Orphans {
        &self.orphans
    }

    /// Rewrites the references held in orphan records (clone and graft remapping); `map`
    /// returns the new target, or `None` to clear it.
    pub fn rewrite_orphan_references(&mut self, map: impl FnMut(InstanceId) -> Option<InstanceId>) {
        if !self.orphans.is_empty() {
            Arc::make_mut(&mut self.orphans).rewrite_references(map);
        }
    }

    /// Removes and returns every orphan record of a component (adoption takes them).
    pub fn take_orphans(&mut self, component: &str) -> Vec<(InstanceRef, OrphanRecord)> {
        if !self.orphans.has_component(component) {
            return Vec::new();
        }
        Arc::make_mut(&mut self.orphans).take_component(component)
    }

    // ----- Migration input. -----

    /// Keeps the values a row held under an older schema version, for game code to migrate
    /// from. Dropped when the row goes.
    pub fn set_migration_input(
        &mut self,
        at: InstanceRef,
        component: ComponentId,
        record: OrphanRecord,
    ) {
        Arc::make_mut(&mut self.migrations).insert((at.id, component), record);
    }

    /// The migration input of an instance's component, if any.
    pub fn migration_input(&self, id: InstanceId, component: ComponentId) -> Option<&OrphanRecord> {
        self.migrations.get(&(id, component))
    }

    /// Removes and returns the migration input of an instance's component (a migration that
    /// has run).
    pub fn take_migration_input(
        &mut self,
        id: InstanceId,
        component: ComponentId,
    ) -> Option<OrphanRecord> {
        if !self.migrations.contains_key(&(id, component)) {
            return None;
        }
        Arc::make_mut(&mut self.migrations).remove(&(id, component))
    }

    /// Every pending migration input: the instance, the component whose row it belongs to,
    /// and the values, in no particular order.
    pub fn migration_inputs(
        &self,
    ) -> impl Iterator<Item = (InstanceId, ComponentId, &OrphanRecord)> + '_ {
        self.migrations
            .iter()
            .map(|((id, component), record)| (*id, *component, record))
    }

    /// How many rows have pending migration input.
    pub fn pending_migrations(&self) -> usize {
        self.migrations.len()
    }

    // ----- Destruction and reclamation hooks. -----

    /// The arena destroyed these instances: remove their rows and orphans, then apply the
    /// destruction policies of every reference to them. Each policy action first checks that
    /// its holder still holds the component, since an earlier action may have removed it.
    /// Clears of direct reference fields come first for each target and set, in holder order;
    /// the other policies follow, in holder then field order.
    pub fn on_destroyed(&mut self, doomed: &[Doomed]) -> DestroyOutcome {
        let mut outcome = DestroyOutcome::default();
        self.on_destroyed_into(doomed, &mut outcome);
        outcome
    }

    /// [`Store::on_destroyed`], appending what it did to `outcome` (whose lists a caller
    /// reporting one destruction after another can clear and reuse, so reporting allocates
    /// nothing once they have grown).
    pub fn on_destroyed_into(&mut self, doomed: &[Doomed], outcome: &mut DestroyOutcome) {
        for d in doomed {
            let at = InstanceRef::new(d.id, d.slot);
            for index in 0..self.sets.len() {
                let component = ComponentId(index as u32);
                let Some(row) = self.slot_set(component).and_then(|s| s.row_of(at)) else {
                    continue;
                };
                self.remove_row(at.id, component, row);
                outcome.removed.push((at.id, component));
                self.remove_dependents(at, component, &mut outcome.removed);
            }
        }
        self.after_destroyed(doomed, outcome);
    }

    /// What follows the removal of destroyed instances' rows: their orphan records go, and
    /// every reference to them is cleared or acted on by its field's policy.
    fn after_destroyed(&mut self, doomed: &[Doomed], outcome: &mut DestroyOutcome) {
        if !self.orphans.is_empty() {
            let orphans = Arc::make_mut(&mut self.orphans);
            for d in doomed {
                orphans.remove_instance(d.id);
            }
        }
        // Built only when some reference to a destroyed instance needs more than a clear.
        let mut doomed_ids: Option<HashSet<InstanceId>> = None;
        let mut destroy_seen = HashSet::new();
        // Only sets whose reverse index holds a target can reference a destroyed instance.
        let referencing: Vec<usize> = (0..self.sets.len())
            .filter(|&index| {
                self.sets[index]
                    .as_ref()
                    .is_some_and(|s| s.referenced_targets() > 0)
            })
            .collect();
        if referencing.is_empty() {
            return;
        }
        for d in doomed {
            for &index in &referencing {
                let component = ComponentId(index as u32);
                let referenced = self.sets[index]
                    .as_ref()
                    .is_some_and(|s| s.references(d.id));
                if !referenced {
                    continue;
                }
                // Take the target's entries out in one step, so the actions below never
                // search its holder list again. Clears of direct reference fields run in one
                // pass over them; the other policies act on what is left, and the entries of
                // holders that still reference the target afterwards (destroy requests) go
                // back, keeping the index exact.
                let Some((shared, tick, events)) = self.parts(component) else {
                    continue;
                };
                let set = shared.make_mut();
                let observed = set.def().def.observed;
                let entries = set.take_references(d.id);
                outcome.cleared.reserve(entries.len());
                let rest = set.clear_direct_references(d.id, entries, tick, |entry| {
                    outcome.cleared.push((entry.holder, component, entry.field));
                    if observed {
                        events.push(StoreEvent::Changed {
                            id: entry.holder,
                            component,
                            field: entry.field,
                        });
                    }
                });
                if rest.is_empty() {
                    continue;
                }
                let doomed_ids =
                    doomed_ids.get_or_insert_with(|| doomed.iter().map(|d| d.id).collect());
                for entry in &rest {
                    self.apply_policy(
                        component,
                        *entry,
                        d.id,
                        doomed_ids,
                        &mut destroy_seen,
                        outcome,
                    );
                }
                if let Ok(set) = self.set_mut(component) {
                    set.keep_references(d.id, &rest);
                }
            }
        }
    }

    fn apply_policy(
        &mut self,
        component: ComponentId,
        entry: crate::set::RefEntry,
        target: InstanceId,
        doomed: &HashSet<InstanceId>,
        destroy_seen: &mut HashSet<InstanceId>,
        outcome: &mut DestroyOutcome,
    ) {
        let Ok(set) = self.set(component) else { return };
        let holder = InstanceRef::new(entry.holder, entry.holder_slot);
        let Some(row) = set.row_of(holder) else {
            return;
        };
        let Some(policy) = set.def().field(entry.field).map(|f| f.on_destroy) else {
            return;
        };
        match policy {
            RefPolicy::Clear => {
                let direct = matches!(
                    set.column(entry.field),
                    Some(crate::column::Column::Reference(_))
                );
                let observed = set.def().def.observed;
                let cleared = if direct {
                    let Some((set, tick, events)) = self.parts(component) else {
                        return;
                    };
                    let next = Tick(tick.0 + 1);
                    let cleared =
                        set.make_mut()
                            .clear_direct_reference(row, entry.field, target, next);
                    if cleared {
                        *tick = next;
                        if observed {
                            events.push(StoreEvent::Changed {
                                id: entry.holder,
                                component,
                                field: entry.field,
                            });
                        }
                    }
                    cleared
                } else {
                    let Some(mut value) = set.value(row, entry.field) else {
                        return;
                    };
                    clear_target(&mut value, target)
                        && self
                            .write_row(component, row, entry.field, value)
                            .unwrap_or(false)
                };
                if cleared {
                    outcome.cleared.push((entry.holder, component, entry.field));
                }
            }
            RefPolicy::RemoveComponent => {
                self.remove_with_dependents(holder, component, &mut outcome.removed);
            }
            RefPolicy::DestroyHolder => {
                if !doomed.contains(&entry.holder) && destroy_seen.insert(entry.holder) {
                    outcome.destroy.push(entry.holder);
                }
            }
        }
    }

    /// Clears every reference `holder` holds to one of `targets` (a reference field set to
    /// none, list elements dropped, references inside other values cleared), as a `Clear`
    /// policy would: the fallback for a `DestroyHolder` policy whose holder cannot be
    /// destroyed, so no reference to a destroyed instance stays behind. Returns each field
    /// cleared once, in component and field order.
    pub fn clear_references_to(
        &mut self,
        holder: InstanceRef,
        targets: &[InstanceId],
    ) -> Vec<(ComponentId, FieldId)> {
        let mut cleared = Vec::new();
        for index in 0..self.sets.len() {
            let component = ComponentId(index as u32);
            let Some(set) = self.slot_set(component) else {
                continue;
            };
            let Some(row) = set.row_of(holder) else {
                continue;
            };
            let fields: Vec<FieldId> = set
                .def()
                .fields()
                .iter()
                .enumerate()
                .filter(|(_, f)| f.ty.can_reference())
                .map(|(k, _)| FieldId(k as u16))
                .collect();
            for field in fields {
                let Some(mut value) = self.slot_set(component).and_then(|s| s.value(row, field))
                else {
                    continue;
                };
                let mut changed = false;
                for target in targets {
                    changed |= clear_target(&mut value, *target);
                }
                if changed
                    && self
                        .write_row(component, row, field, value)
                        .unwrap_or(false)
                {
                    cleared.push((component, field));
                }
            }
        }
        cleared
    }

    /// The arena released these slots. Rows still recorded for them (which only happens when a
    /// destruction was not reported) are evicted, and their orphans dropped.
    pub fn on_reclaimed(&mut self, reclaimed: &[Doomed]) {
        let mut removed = Vec::new();
        for d in reclaimed {
            let at = InstanceRef::new(d.id, d.slot);
            for index in 0..self.sets.len() {
                let component = ComponentId(index as u32);
                let Some(row) = self.slot_set(component).and_then(|s| s.row_of(at)) else {
                    continue;
                };
                self.remove_row(at.id, component, row);
                self.remove_dependents(at, component, &mut removed);
            }
        }
        if !self.orphans.is_empty() {
            let orphans = Arc::make_mut(&mut self.orphans);
            for d in reclaimed {
                orphans.remove_instance(d.id);
            }
        }
    }
}

/// A writer for the fields of a row just added by [`Store::insert`]; its writes are part of the
/// add and take no ticks of their own.
///
/// Lifecycle observers of the component see the row (`on_added`) when this writer is dropped,
/// with the values it set.
pub struct RowInit<'a> {
    set: &'a mut ComponentSet,
    row: usize,
    /// The store's observers, when the component has some: told of the row on drop.
    observers: Option<(&'a mut Observers, ComponentId)>,
}

impl Drop for RowInit<'_> {
    fn drop(&mut self) {
        if let Some((observers, component)) = self.observers.take() {
            observers.added(component, self.set, self.row..=self.row);
        }
    }
}

impl RowInit<'_> {
    /// The new row.
    pub fn row(&self) -> usize {
        self.row
    }

    /// Sets a field, typed.
    pub fn set<T: Scalar>(&mut self, field: FieldId, value: T) -> Result<&mut Self, StoreError> {
        self.set.def().check_scalar_value(field, &value)?;
        self.set.init_typed(self.row..self.row + 1, field, [value]);
        Ok(self)
    }

    /// Sets a field in dynamic form.
    pub fn set_value(&mut self, field: FieldId, value: Value) -> Result<&mut Self, StoreError> {
        self.set.def().check_value(field, &value)?;
        self.set.init_field(self.row, field, value);
        Ok(self)
    }
}

/// A writer for the fields of rows just added by [`Store::insert_many`]; its writes are part
/// of the add and take no ticks of their own. With no new rows it checks field types and
/// changes nothing (the set is not even made private).
///
/// Lifecycle observers of the component see the new rows (one `on_added` for the whole range)
/// when this writer is dropped, with the values it filled.
pub struct BulkInit<'a> {
    set: &'a mut SharedSet,
    rows: std::ops::Range<usize>,
    /// The store's observers, when the component has some: told of the rows on drop.
    observers: Option<(&'a mut Observers, ComponentId)>,
}

impl Drop for BulkInit<'_> {
    fn drop(&mut self) {
        if let Some((observers, component)) = self.observers.take()
            && !self.rows.is_empty()
        {
            observers.added(
                component,
                self.set.get(),
                self.rows.start..=self.rows.end - 1,
            );
        }
    }
}

impl BulkInit<'_> {
    /// The new rows, in the order of the instances given.
    pub fn rows(&self) -> std::ops::Range<usize> {
        self.rows.clone()
    }

    /// Sets a field of every new row from `values` (in row order; missing values leave the
    /// default, extra ones are ignored). Every value is checked before the first is stored.
    pub fn fill<T: Scalar>(
        &mut self,
        field: FieldId,
        values: impl IntoIterator<Item = T>,
    ) -> Result<&mut Self, StoreError> {
        self.set.def().check_scalar::<T>(field)?;
        if self.rows.is_empty() {
            return Ok(self);
        }
        if T::RANGED {
            let values: Vec<T> = values.into_iter().take(self.rows.len()).collect();
            for value in &values {
                self.set.def().check_scalar_value(field, value)?;
            }
            return Ok(self.fill_checked(field, values));
        }
        Ok(self.fill_checked(field, values))
    }

    /// [`BulkInit::fill`] with values already checked.
    fn fill_checked<T: Scalar>(
        &mut self,
        field: FieldId,
        values: impl IntoIterator<Item = T>,
    ) -> &mut Self {
        self.set
            .make_mut()
            .init_typed(self.rows.clone(), field, values);
        self
    }
}

impl Store {
    /// Whether an instance of `class` may take a row in `set` (one of this store's sets, which
    /// will hold `rows_after` rows once the operation is done): the checks every add runs
    /// before it stores anything.
    #[inline]
    pub(crate) fn check_add(
        &self,
        set: &ComponentSet,
        at: InstanceRef,
        class: ClassId,
        rows_after: usize,
    ) -> Result<(), StoreError> {
        // The common case in a few compares; anything else is decided (and explained) below.
        if set.holder_at(at.slot).is_none()
            && at.slot_near(set.sparse_len(), rows_after)
            && set.def().allows_class(class)
        {
            return Ok(());
        }
        self.check_add_slow(set, at, class, rows_after)
    }

    /// [`Store::check_add`] in full.
    #[cold]
    #[inline(never)]
    fn check_add_slow(
        &self,
        set: &ComponentSet,
        at: InstanceRef,
        class: ClassId,
        rows_after: usize,
    ) -> Result<(), StoreError> {
        match set.holder_at(at.slot) {
            Some(holder) if holder == at.id => {
                return Err(StoreError::AlreadyPresent {
                    id: at.id,
                    component: set.id(),
                });
            }
            Some(holder) => {
                return Err(StoreError::SlotOccupied {
                    slot: at.slot,
                    holder,
                    component: set.id(),
                });
            }
            None => {}
        }
        at.check_slot(set.sparse_len(), rows_after, || self.slot_extent())?;
        if !set.def().allows_class(class) {
            return Err(StoreError::ClassNotAllowed {
                component: set.def().name().to_owned(),
                class,
            });
        }
        Ok(())
    }

    /// The longest sparse array of the store's sets: how far its slots already reach.
    fn slot_extent(&self) -> usize {
        self.components()
            .map(ComponentSet::sparse_len)
            .max()
            .unwrap_or(0)
    }
}

/// Checks a whole row of values against a definition.
pub(crate) fn check_row(def: &InstalledDef, values: &[Value]) -> Result<(), StoreError> {
    if values.len() != def.fields().len() {
        return Err(StoreError::InvalidDefinition {
            component: def.name().to_owned(),
            reason: format!(
                "a row has {} values for {} fields",
                values.len(),
                def.fields().len()
            ),
        });
    }
    for (i, value) in values.iter().enumerate() {
        def.check_value(FieldId(i as u16), value)?;
    }
    Ok(())
}

/// Removes every reference to `target` from a value: list elements that are references to it
/// are dropped, any other reference to it (nested ones included) becomes `None`. Returns whether
/// the value changed.
pub(crate) fn clear_target(value: &mut Value, target: InstanceId) -> bool {
    let mut changed = false;
    if let Value::List(list) = value {
        let before = list.len();
        if let Some(elements) = list.elements_mut() {
            elements.retain(|e| !matches!(e, Value::Reference(Some(t)) if *t == target));
        }
        list.normalise();
        changed |= list.len() != before;
    }
    changed |= value.rewrite_references(&mut |t| (t != target).then_some(t));
    changed
}

/// Bulk row operations behind [`crate::Stage`]: each touches every affected column once per
/// batch, at one tick per batch.
impl Store {
    /// Checks that every instance of `ats` (of class `class`) may take a default row of
    /// `component` (see [`Store::insert_many`]), changing nothing.
    pub(crate) fn check_place(
        &self,
        ats: &[InstanceRef],
        class: ClassId,
        component: ComponentId,
    ) -> Result<(), StoreError> {
        let set = self.set(component)?;
        if !set.def().allows_class(class) {
            return Err(StoreError::ClassNotAllowed {
                component: set.def().name().to_owned(),
                class,
            });
        }
        let rows_after = set.len() + ats.len();
        let sparse_len = set.sparse_len();
        for at in ats {
            if set.holder_at(at.slot).is_some() || !at.slot_near(sparse_len, rows_after) {
                self.check_add_slow(set, *at, class, rows_after)?;
            }
        }
        Ok(())
    }

    /// Appends default rows of `component` for `ats` (checked by [`Store::check_place`], slots
    /// distinct) at `tick`, without advancing the store's tick or queueing events: rows not
    /// yet published. Returns the set's length before and the new rows.
    pub(crate) fn place_unpublished(
        &mut self,
        ats: &[InstanceRef],
        component: ComponentId,
        tick: Tick,
    ) -> Result<std::ops::Range<usize>, StoreError> {
        let def = self.def(component)?;
        let made = if def.has_factories() {
            let ids: Vec<InstanceId> = ats.iter().map(|at| at.id).collect();
            def.make_defaults(&ids, &[])?
        } else {
            Vec::new()
        };
        let set = self.set_mut(component)?;
        let rows = set.push_default_rows(ats, tick);
        set.store_made(rows.start, made);
        Ok(rows)
    }

    /// Takes back rows of `component` placed by [`Store::place_unpublished`] (the set had
    /// `len` rows before).
    pub(crate) fn take_back_unpublished(&mut self, component: ComponentId, len: usize) {
        if let Ok(set) = self.set_mut(component) {
            set.truncate_unpublished(len);
        }
    }

    /// Publishes rows placed by [`Store::place_unpublished`] (`placed`: each component with
    /// its new rows) at `tick`: the store's tick moves there, each component's observers hear
    /// of the whole range in one call, then observed components queue an `Added` event per
    /// instance.
    pub(crate) fn publish_placed(
        &mut self,
        placed: &[(ComponentId, std::ops::Range<usize>)],
        ats: &[InstanceRef],
        tick: Tick,
    ) {
        self.advance_tick_to(tick);
        for (component, rows) in placed {
            if !rows.is_empty() {
                self.notify_added(*component, rows.start..=rows.end - 1);
            }
        }
        for &(component, _) in placed {
            let observed = self
                .slot_set(component)
                .is_some_and(|s| s.def().def.observed);
            if observed {
                self.events.extend(ats.iter().map(|at| StoreEvent::Added {
                    id: at.id,
                    component,
                }));
            }
        }
    }

    /// The one-row columns of a row of `component` holding `values` (checked against the
    /// definition here) and defaults elsewhere.
    pub(crate) fn template_row(
        &self,
        component: ComponentId,
        values: &[(FieldId, Value)],
    ) -> Result<Vec<crate::column::Column>, StoreError> {
        let def = self.def(component)?;
        for (field, value) in values {
            def.check_value(*field, value)?;
        }
        let mut template = def.defaults.clone();
        for (field, value) in values {
            template[field.index()].replace(0, value.clone());
        }
        Ok(template)
    }

    /// Adds `component` to every instance of `members` lacking it, and stores `values` in the
    /// given fields of every member holding it, at one tick (none when nothing changes).
    /// Members are `(instance, class)`; repeated ones count once. Refused, changing nothing,
    /// as [`Store::add`] refuses any one of the adds. Returns how many rows were added and
    /// how many members already held the component.
    pub(crate) fn set_many(
        &mut self,
        members: &[(InstanceRef, ClassId)],
        component: ComponentId,
        values: &[(FieldId, Value)],
    ) -> Result<(usize, usize), StoreError> {
        let template = self.template_row(component, values)?;
        let set = self.set(component)?;
        let mut holders = Vec::new();
        let mut newcomers = Vec::new();
        let max_slot = members
            .iter()
            .map(|(at, _)| at.slot.index())
            .max()
            .unwrap_or(0);
        let mut seen = vec![0u64; max_slot / 64 + 1];
        for (at, _) in members {
            let (word, bit) = (at.slot.index() / 64, 1u64 << (at.slot.index() % 64));
            if seen[word] & bit != 0 {
                continue;
            }
            seen[word] |= bit;
            match set.row_of(*at) {
                Some(row) => holders.push(row),
                None => newcomers.push(*at),
            }
        }
        if !newcomers.is_empty() {
            let rows_after = set.len() + newcomers.len();
            for (at, class) in members {
                if set.row_of(*at).is_none() {
                    self.check_add(set, *at, *class, rows_after)?;
                }
            }
        }
        let made = if set.def().has_factories() && !newcomers.is_empty() {
            let ids: Vec<InstanceId> = newcomers.iter().map(|at| at.id).collect();
            let given: Vec<FieldId> = values.iter().map(|(field, _)| *field).collect();
            set.def().make_defaults(&ids, &given)?
        } else {
            Vec::new()
        };
        let tick = Tick(self.tick.0 + 1);
        let Some((shared, store_tick, events)) = self.parts(component) else {
            return Err(StoreError::UnknownComponent(component));
        };
        let observed = shared.def().def.observed;
        if newcomers.is_empty() && values.is_empty() {
            return Ok((0, holders.len()));
        }
        let set = shared.make_mut();
        let mut any = false;
        let mut added = 0..0;
        if !newcomers.is_empty() {
            added = set.push_rows_from(&template, &newcomers, tick);
            set.store_made(added.start, made);
            any = true;
            if observed {
                events.extend(newcomers.iter().map(|at| StoreEvent::Added {
                    id: at.id,
                    component,
                }));
            }
        }
        let mut changed = Vec::new();
        let mut written = Vec::with_capacity(values.len());
        for (field, _) in values {
            changed.clear();
            let mut count = 0u64;
            set.assign_rows(&holders, *field, &template[field.index()], tick, |row| {
                any = true;
                count += 1;
                if observed {
                    changed.push(row);
                }
            });
            written.push((*field, count));
            events.extend(changed.iter().map(|row| StoreEvent::Changed {
                id: set.ids()[*row],
                component,
                field: *field,
            }));
        }
        if any {
            *store_tick = tick;
        }
        if !added.is_empty() {
            self.notify_added(component, added.start..=added.end - 1);
        }
        for (field, count) in written {
            self.frame.count_values(component, field, count);
        }
        Ok((newcomers.len(), holders.len()))
    }

    /// Removes `component` from every instance of `ats` holding it, in one compaction pass at
    /// one tick (rows to remove gathered at the end, each column truncated once), then, the
    /// same way, every component that requires it (transitively) from the instances that lost
    /// it. Records
    /// what it removed in `removed`; returns how many rows of `component` went.
    pub(crate) fn remove_many(
        &mut self,
        ats: &[InstanceRef],
        component: ComponentId,
        removed: &mut Vec<(InstanceId, ComponentId)>,
    ) -> Result<usize, StoreError> {
        let set = self.set(component)?;
        let rows: Vec<usize> = ats.iter().filter_map(|at| set.row_of(*at)).collect();
        // Dependents go from the instances that lose the component, as for one instance.
        let lost: Vec<InstanceRef> = if self.dependents[component.index()].is_empty() {
            Vec::new()
        } else {
            rows.iter()
                .map(|&row| InstanceRef::new(set.ids()[row], set.slots()[row]))
                .collect()
        };
        let count = self.remove_rows_bulk(component, &rows, removed);
        if count > 0 && !lost.is_empty() {
            for dependent in self.dependents[component.index()].clone() {
                self.remove_many(&lost, dependent, removed)?;
            }
        }
        Ok(count)
    }

    /// Removes rows `rows` (repeats allowed) of a component's set at one new tick: removal
    /// records, `Removed` events when observed, migration input dropped. Returns how many.
    fn remove_rows_bulk(
        &mut self,
        component: ComponentId,
        rows: &[usize],
        removed: &mut Vec<(InstanceId, ComponentId)>,
    ) -> usize {
        if rows.is_empty() {
            return 0;
        }
        let tick = Tick(self.tick.0 + 1);
        let Some((shared, store_tick, _)) = self.parts(component) else {
            return 0;
        };
        *store_tick = tick;
        let observed = shared.def().def.observed;
        let set = shared.make_mut();
        let mut moves = Vec::new();
        let len = set.gather_to_tail(rows, tick, |id, old, new| moves.push((id, old, new)));
        let end = set.len();
        for (id, old, new) in moves {
            self.notify_moved(component, id, old, new);
        }
        self.notify_removing(component, len..=end - 1);
        let Some((shared, _, events)) = self.parts(component) else {
            return 0;
        };
        let set = shared.make_mut();
        let gone = &set.ids()[len..];
        let first = removed.len();
        removed.extend(gone.iter().map(|id| (*id, component)));
        if observed {
            events.extend(
                gone.iter()
                    .map(|id| StoreEvent::Removed { id: *id, component }),
            );
        }
        set.truncate_removed(len, tick);
        self.notify_emptied_if(component);
        if !self.migrations.is_empty() {
            let migrations = Arc::make_mut(&mut self.migrations);
            for key in &removed[first..] {
                migrations.remove(key);
            }
        }
        removed.len() - first
    }

    /// [`Store::on_destroyed_into`] with the destroyed instances' own rows removed set by set
    /// in one compaction pass each (a set all of whose rows go is truncated once), before the
    /// reference policies run as there. `outcome.removed` lists those rows component by
    /// component rather than instance by instance.
    pub(crate) fn on_destroyed_bulk(&mut self, doomed: &[Doomed], outcome: &mut DestroyOutcome) {
        let mut rows = Vec::new();
        for index in 0..self.sets.len() {
            let component = ComponentId(index as u32);
            let Some(set) = self.slot_set(component) else {
                continue;
            };
            rows.clear();
            if set.is_empty() {
                continue;
            }
            rows.extend(
                doomed
                    .iter()
                    .filter_map(|d| set.row_of(InstanceRef::new(d.id, d.slot))),
            );
            self.remove_rows_bulk(component, &rows, &mut outcome.removed);
        }
        // Every row of the doomed instances is gone: what is left is what follows removal.
        self.after_destroyed(doomed, outcome);
    }
}
