//! Lifecycle observers: callbacks a store runs when rows of a component's set are added,
//! removed or moved, and when the set becomes active (first row) or inactive (last row gone).
//!
//! Invariant: the registry is private to this module; `Observers::any` is `true` iff at least
//! one observer is registered, so a structural edit with none registered costs one branch.
//! Each registered observer has an id (`ObserverId`) unique in the process: the registry's own
//! number, taken fresh for every store value (a snapshot starts with an empty registry of its
//! own), and a serial never reused within it. Observers of one component run in the order they
//! were registered. A callback receives the set by shared reference only, so it cannot change
//! the store while it runs.

use std::fmt;
use std::ops::RangeInclusive;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use strata_arena::InstanceId;

use crate::def::ComponentId;
use crate::set::ComponentSet;

type RangeFn = Box<dyn FnMut(&ComponentSet, RangeInclusive<usize>) + Send>;
type MoveFn = Box<dyn FnMut(&ComponentSet, InstanceId, usize, usize) + Send>;
type SetFn = Box<dyn FnMut(&ComponentSet) + Send>;

/// Callbacks for the lifecycle of one component's rows; register it with
/// [`Store::observe`](crate::Store::observe). Every callback is optional.
///
/// Rows are positions in the set at the moment of the call (see [`ComponentSet`]): read what
/// you need inside the callback, and keep instance ids, not rows, across structural changes.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use strata_arena::{Arena, ClassId};
/// use strata_component_store::{ComponentDef, FieldDef, InstanceRef, Observer, Store};
///
/// let mut arena = Arena::standard();
/// let mut store = Store::new();
/// let health = store.install(
///     ComponentDef::new("Health").field(FieldDef::number("current", 100.0)),
///     arena.classes(),
/// )?;
/// let current = store.field(health, "current")?;
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let log = Arc::clone(&seen);
/// let removed = Arc::clone(&seen);
/// store.observe(
///     health,
///     Observer::new()
///         .on_added(move |set, rows| log.lock().unwrap().push(format!("added {rows:?}")))
///         .on_removed(move |set, rows| {
///             // The removed rows' values are still readable here.
///             let value = set.values::<f64>(current).unwrap()[*rows.start()];
///             removed.lock().unwrap().push(format!("removed {rows:?} at {value}"));
///         }),
/// )?;
/// let hero = InstanceRef::of(&arena, arena.create(ClassId::ENTITY, None)?)?;
/// store.insert(hero, ClassId::ENTITY, health)?.set(current, 40.0)?;
/// store.remove(hero, health)?;
/// assert_eq!(*seen.lock().unwrap(), ["added 0..=0", "removed 0..=0 at 40"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Default)]
pub struct Observer {
    added: Option<RangeFn>,
    removed: Option<RangeFn>,
    moved: Option<MoveFn>,
    activated: Option<SetFn>,
    deactivated: Option<SetFn>,
}

impl fmt::Debug for Observer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Observer")
            .field("on_added", &self.added.is_some())
            .field("on_removed", &self.removed.is_some())
            .field("on_moved", &self.moved.is_some())
            .field("on_activated", &self.activated.is_some())
            .field("on_deactivated", &self.deactivated.is_some())
            .finish()
    }
}

impl Observer {
    /// An observer with no callbacks.
    pub fn new() -> Self {
        Self::default()
    }

    /// Rows `first..=last` were added to the set: their values are readable, defaults and
    /// initialisation included (for [`Store::insert`](crate::Store::insert) and
    /// [`Store::insert_many`](crate::Store::insert_many), when the returned writer is dropped).
    /// A bulk add reports its whole range in one call.
    pub fn on_added(
        mut self,
        f: impl FnMut(&ComponentSet, RangeInclusive<usize>) + Send + 'static,
    ) -> Self {
        self.added = Some(Box::new(f));
        self
    }

    /// Rows `first..=last` are about to be removed: their values are still readable in the set.
    pub fn on_removed(
        mut self,
        f: impl FnMut(&ComponentSet, RangeInclusive<usize>) + Send + 'static,
    ) -> Self {
        self.removed = Some(Box::new(f));
        self
    }

    /// A removal moved instance `id` from row `old` to row `new` (the swap of swap-remove);
    /// called after the move, so the set shows `id` at `new`.
    pub fn on_moved(
        mut self,
        f: impl FnMut(&ComponentSet, InstanceId, usize, usize) + Send + 'static,
    ) -> Self {
        self.moved = Some(Box::new(f));
        self
    }

    /// The set got its first row; called before the `on_added` of that row.
    pub fn on_activated(mut self, f: impl FnMut(&ComponentSet) + Send + 'static) -> Self {
        self.activated = Some(Box::new(f));
        self
    }

    /// The set lost its last row; called after the `on_removed` of that row.
    pub fn on_deactivated(mut self, f: impl FnMut(&ComponentSet) + Send + 'static) -> Self {
        self.deactivated = Some(Box::new(f));
        self
    }
}

/// The id of a registered observer, unique in the process: an id from another store (or from
/// the store a snapshot was taken of) is refused by [`Store::unobserve`](crate::Store::unobserve).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ObserverId {
    registry: u64,
    serial: u64,
}

static NEXT_REGISTRY: AtomicU64 = AtomicU64::new(1);

/// The observers of one store, by component.
pub(crate) struct Observers {
    registry: u64,
    next_serial: u64,
    /// Per component index: its observers, in registration order. Each sits behind a `Mutex`
    /// only so the store stays `Sync`; it is reached through `&mut` (`Mutex::get_mut`), never
    /// locked.
    lists: Vec<Vec<(u64, Mutex<Observer>)>>,
    count: usize,
}

impl fmt::Debug for Observers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Observers")
            .field("registry", &self.registry)
            .field("count", &self.count)
            .finish()
    }
}

impl Default for Observers {
    fn default() -> Self {
        Self {
            registry: NEXT_REGISTRY.fetch_add(1, Ordering::Relaxed),
            next_serial: 0,
            lists: Vec::new(),
            count: 0,
        }
    }
}

/// Which callback to run.
pub(crate) enum Call {
    Added(RangeInclusive<usize>),
    Removed(RangeInclusive<usize>),
    Moved(InstanceId, usize, usize),
    Activated,
    Deactivated,
}

impl Observers {
    /// Whether `component` has observers: with none registered at all, the one branch a
    /// structural edit pays.
    #[inline]
    pub(crate) fn watches(&self, component: ComponentId) -> bool {
        self.count != 0
            && self
                .lists
                .get(component.index())
                .is_some_and(|l| !l.is_empty())
    }

    pub(crate) fn register(&mut self, component: ComponentId, observer: Observer) -> ObserverId {
        if self.lists.len() <= component.index() {
            self.lists.resize_with(component.index() + 1, Vec::new);
        }
        let serial = self.next_serial;
        self.next_serial += 1;
        self.lists[component.index()].push((serial, Mutex::new(observer)));
        self.count += 1;
        ObserverId {
            registry: self.registry,
            serial,
        }
    }

    /// Takes an observer out; `None` for an id this registry never gave or already took back.
    pub(crate) fn unregister(&mut self, id: ObserverId) -> Option<Observer> {
        if id.registry != self.registry {
            return None;
        }
        for list in &mut self.lists {
            if let Some(at) = list.iter().position(|(s, _)| *s == id.serial) {
                let (_, observer) = list.remove(at);
                self.count -= 1;
                return Some(into_inner(observer));
            }
        }
        None
    }

    /// Drops every observer of a component (uninstalled: its id is never reused).
    pub(crate) fn forget(&mut self, component: ComponentId) {
        if let Some(list) = self.lists.get_mut(component.index()) {
            self.count -= list.len();
            list.clear();
        }
    }

    /// Runs one callback of every observer of `component`, in registration order.
    pub(crate) fn call(&mut self, component: ComponentId, set: &ComponentSet, call: Call) {
        let Some(list) = self.lists.get_mut(component.index()) else {
            return;
        };
        for (_, observer) in list {
            let observer = observer
                .get_mut()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            match &call {
                Call::Added(rows) => {
                    if let Some(f) = &mut observer.added {
                        f(set, rows.clone());
                    }
                }
                Call::Removed(rows) => {
                    if let Some(f) = &mut observer.removed {
                        f(set, rows.clone());
                    }
                }
                Call::Moved(id, old, new) => {
                    if let Some(f) = &mut observer.moved {
                        f(set, *id, *old, *new);
                    }
                }
                Call::Activated => {
                    if let Some(f) = &mut observer.activated {
                        f(set);
                    }
                }
                Call::Deactivated => {
                    if let Some(f) = &mut observer.deactivated {
                        f(set);
                    }
                }
            }
        }
    }

    /// Reports rows `rows` added to `set` (activation first when they are its first rows).
    pub(crate) fn added(
        &mut self,
        component: ComponentId,
        set: &ComponentSet,
        rows: RangeInclusive<usize>,
    ) {
        if *rows.start() == 0 {
            self.call(component, set, Call::Activated);
        }
        self.call(component, set, Call::Added(rows));
    }
}

fn into_inner(observer: Mutex<Observer>) -> Observer {
    observer
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
