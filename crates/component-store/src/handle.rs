//! Handles that name an instance's component, cached name bindings, and removal readers.
//!
//! Invariant: a `ComponentHandle` stores identity (instance id and slot, component id,
//! definition allocation), never a row; every access resolves the present row and checks it. A
//! `Binding` reuses its cached ids only while the store identity, the name revision and the
//! definition allocation all match what it cached them under. A `RemovalReader` never returns a
//! partial history: when its cursor fell below the retained floor, or the log it reads does not
//! continue the timeline its cursor was taken on, it reports `Missed` and starts again from the
//! head.

use hashbrown::HashMap;
use std::sync::Arc;
use strata_arena::InstanceId;

use crate::column::Scalar;
use crate::def::{ComponentId, FieldId};
use crate::error::StoreError;
use crate::set::{InstanceRef, Tick};
use crate::store::{Store, StoreId};
use crate::value::Value;

/// An instance's component, resolved to its present row on every access.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ComponentHandle {
    at: InstanceRef,
    component: ComponentId,
    allocation: u64,
}

impl ComponentHandle {
    /// A handle on a component the instance holds now.
    ///
    /// # Errors
    ///
    /// [`StoreError::UnknownComponent`] for a component not installed, and
    /// [`StoreError::MissingMembership`] when the instance does not hold it.
    pub fn new(store: &Store, at: InstanceRef, component: ComponentId) -> Result<Self, StoreError> {
        store.row(at, component)?;
        Ok(Self {
            at,
            component,
            allocation: store.def(component)?.allocation(),
        })
    }

    /// The instance.
    pub fn instance(&self) -> InstanceRef {
        self.at
    }

    /// The component.
    pub fn component(&self) -> ComponentId {
        self.component
    }

    /// The instance's present row, or why there is none.
    ///
    /// # Errors
    ///
    /// [`StoreError::StaleDefinition`] when the definition was replaced since the handle was made,
    /// then as [`Store::row`].
    pub fn row(&self, store: &Store) -> Result<usize, StoreError> {
        let def = store.def(self.component)?;
        if def.allocation() != self.allocation {
            return Err(StoreError::StaleDefinition {
                component: self.component,
                component_name: def.shared_name(),
            });
        }
        store.row(self.at, self.component)
    }

    /// Whether the instance still holds the component under the same definition.
    pub fn is_present(&self, store: &Store) -> bool {
        self.row(store).is_ok()
    }

    /// A field, typed.
    ///
    /// # Errors
    ///
    /// As [`ComponentHandle::row`], then [`StoreError::FieldOutOfRange`] for a field it lacks and
    /// [`StoreError::TypeMismatch`] for a field whose column does not hold `T`.
    pub fn get<'s, T: Scalar>(
        &self,
        store: &'s Store,
        field: FieldId,
    ) -> Result<&'s T, StoreError> {
        self.row(store)?;
        store.get(self.at, self.component, field)
    }

    /// A field in dynamic form.
    ///
    /// # Errors
    ///
    /// As [`ComponentHandle::row`], then [`StoreError::FieldOutOfRange`] for a field it lacks.
    pub fn get_value(&self, store: &Store, field: FieldId) -> Result<Value, StoreError> {
        self.row(store)?;
        store.get_value(self.at, self.component, field)
    }

    /// Writes a field, typed; `false` for an equal value.
    ///
    /// # Errors
    ///
    /// As [`ComponentHandle::row`], then as [`Store::write`].
    pub fn write<T: Scalar>(
        &self,
        store: &mut Store,
        field: FieldId,
        value: T,
    ) -> Result<bool, StoreError> {
        self.row(store)?;
        store.write(self.at, self.component, field, value)
    }

    /// Writes a field in dynamic form; `false` for an equal value.
    ///
    /// # Errors
    ///
    /// As [`ComponentHandle::row`], then as [`Store::write_value`].
    pub fn write_value(
        &self,
        store: &mut Store,
        field: FieldId,
        value: Value,
    ) -> Result<bool, StoreError> {
        self.row(store)?;
        store.write_value(self.at, self.component, field, value)
    }
}

/// What a binding resolved, and under which store state.
#[derive(Clone, Debug)]
struct Bound {
    store: StoreId,
    name_revision: u64,
    allocation: u64,
    component: ComponentId,
    fields: HashMap<Arc<str>, FieldId>,
}

/// A cached resolution of a component name (and its field names) to ids, for code that
/// addresses components by name (scripts, tools).
#[derive(Clone, Debug)]
pub struct Binding {
    name: Arc<str>,
    bound: Option<Bound>,
    resolutions: u64,
}

impl Binding {
    /// A binding for a component name; nothing is resolved until first use.
    pub fn new(component: &str) -> Self {
        Self {
            name: Arc::from(component),
            bound: None,
            resolutions: 0,
        }
    }

    /// How many times the binding resolved its name against a store (cache misses).
    pub fn resolutions(&self) -> u64 {
        self.resolutions
    }

    /// The component's id in `store`.
    ///
    /// # Errors
    ///
    /// [`StoreError::UnknownComponentName`] when `store` has no component of the bound name.
    pub fn component(&mut self, store: &Store) -> Result<ComponentId, StoreError> {
        Ok(self.bound(store)?.component)
    }

    /// The component's and a field's ids in `store`.
    ///
    /// # Errors
    ///
    /// As [`Binding::component`], and [`StoreError::UnknownField`] when the component has no field
    /// named `field`.
    pub fn field(
        &mut self,
        store: &Store,
        field: &str,
    ) -> Result<(ComponentId, FieldId), StoreError> {
        let bound = self.bound(store)?;
        if let Some(id) = bound.fields.get(field) {
            return Ok((bound.component, *id));
        }
        let id = store.field(bound.component, field)?;
        bound.fields.insert(Arc::from(field), id);
        Ok((bound.component, id))
    }

    fn bound(&mut self, store: &Store) -> Result<&mut Bound, StoreError> {
        let valid = self.bound.as_ref().is_some_and(|b| {
            b.store == store.id()
                && b.name_revision == store.name_revision()
                && store
                    .def(b.component)
                    .is_ok_and(|d| d.allocation() == b.allocation)
        });
        if !valid {
            self.resolutions += 1;
            self.bound = None;
            let component = store
                .component(&self.name)
                .ok_or_else(|| StoreError::UnknownComponentName(self.name.to_string()))?;
            self.bound = Some(Bound {
                store: store.id(),
                name_revision: store.name_revision(),
                allocation: store.def(component)?.allocation(),
                component,
                fields: HashMap::new(),
            });
        }
        self.bound
            .as_mut()
            .ok_or_else(|| StoreError::UnknownComponentName(self.name.to_string()))
    }
}

/// What a removal reader read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Removals {
    /// The instances that lost the component since the last read: sorted, without duplicates.
    Ids(Vec<InstanceId>),
    /// Records were dropped before the reader got to them, or the log read does not continue
    /// the reader's history (another store, or a snapshot that diverged from the one the reader
    /// followed): the reader must rebuild whatever it derives from the component. Its cursor
    /// has moved to the head of the log read.
    Missed {
        /// The reader's cursor before this read.
        cursor: u64,
        /// The oldest record still retained.
        floor: u64,
    },
}

/// A cursor over one component's removal log, independent of every other reader. The cursor
/// belongs to the history (timeline) of the log it was read from: read against a store whose
/// log does not continue that history (another store, or a snapshot that went its own way,
/// as after a rollback), the reader reports [`Removals::Missed`] and follows that log from then.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemovalReader {
    component: ComponentId,
    cursor: u64,
    timeline: u64,
}

impl RemovalReader {
    /// A reader that will see removals from now on.
    ///
    /// # Errors
    ///
    /// [`StoreError::UnknownComponent`] for a component not installed.
    pub fn new(store: &Store, component: ComponentId) -> Result<Self, StoreError> {
        let set = store.set(component)?;
        Ok(Self {
            component,
            cursor: set.removal_log().head(),
            timeline: set.timeline().id(),
        })
    }

    /// A reader whose first read lists the removals made after store tick `tick` (with
    /// [`Store::frame_tick`], those of the frame so far), and every later read those since.
    /// When the log has dropped records that may be after `tick` (it overflowed since), the
    /// first read reports [`Removals::Missed`].
    ///
    /// # Errors
    ///
    /// [`StoreError::UnknownComponent`] for a component not installed.
    pub fn since(store: &Store, component: ComponentId, tick: Tick) -> Result<Self, StoreError> {
        let set = store.set(component)?;
        let log = set.removal_log();
        let mut retained = log.read_since(log.floor()).ok();
        let oldest = retained
            .as_mut()
            .and_then(|read| read.next())
            .map(|(seq, r)| (seq, r.tick));
        let cursor = match oldest {
            // Every retained record is after `tick`, and older ones were dropped: they may be
            // after it too, so the reader starts where the log cannot serve it.
            Some((_, oldest)) if oldest > tick && log.floor() > 0 => log.floor() - 1,
            Some((seq, oldest)) if oldest > tick => seq,
            Some(_) => retained
                .and_then(|mut read| read.find(|(_, r)| r.tick > tick))
                .map_or(log.head(), |(seq, _)| seq),
            None => log.head(),
        };
        Ok(Self {
            component,
            cursor,
            timeline: set.timeline().id(),
        })
    }

    /// The component read.
    pub fn component(&self) -> ComponentId {
        self.component
    }

    /// The removals since the previous read, or [`Removals::Missed`] when some were dropped
    /// from the log or `store`'s log does not continue the history this reader has read.
    ///
    /// # Errors
    ///
    /// [`StoreError::UnknownComponent`] when the reader's component is not installed in `store`
    /// (missed removals are [`Removals::Missed`], not an error).
    pub fn read(&mut self, store: &Store) -> Result<Removals, StoreError> {
        let set = store.set(self.component)?;
        let log = set.removal_log();
        let readable = if set.timeline().continues(self.timeline, self.cursor) {
            log.read_since(self.cursor).ok()
        } else {
            None
        };
        self.timeline = set.timeline().id();
        match readable {
            Some(read) => {
                let head = read.head();
                let mut ids: Vec<InstanceId> = read.map(|(_, r)| r.id).collect();
                ids.sort_unstable();
                ids.dedup();
                self.cursor = head;
                Ok(Removals::Ids(ids))
            }
            None => {
                let missed = Removals::Missed {
                    cursor: self.cursor,
                    floor: log.floor(),
                };
                self.cursor = log.head();
                Ok(missed)
            }
        }
    }
}
