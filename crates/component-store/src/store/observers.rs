//! Lifecycle observers of a [`Store`] and the hooks every structural edit calls: rows added,
//! removed (still readable), moved, and a set activated or deactivated.
//!
//! Invariant: every structural edit reports itself through these hooks, which count it for the
//! frame and tell the component's observers in registration order; observers get the set by
//! shared reference, so they cannot change the store, and live in the store value that
//! registered them (a snapshot has none).

use std::ops::RangeInclusive;

use strata_arena::InstanceId;

use super::Store;
use crate::def::ComponentId;
use crate::error::StoreError;
use crate::observe::{Call, Observer, ObserverId};

impl Store {
    /// Registers lifecycle callbacks for a component's rows. Registration replays nothing: the
    /// observer hears of rows added, removed and moved from now on. Observers of one component
    /// run in registration order. A callback gets the set by shared reference, so it cannot
    /// change the store. Observers live in this store value: a [`Store::snapshot`] has none,
    /// and [`Store::uninstall`] drops the component's observers with it.
    ///
    /// # Errors
    ///
    /// Refused, changing nothing, for a component not installed ([`StoreError::UnknownComponent`]).
    pub fn observe(
        &mut self,
        component: ComponentId,
        observer: Observer,
    ) -> Result<ObserverId, StoreError> {
        self.set(component)?;
        Ok(self.observers.register(component, observer))
    }

    /// Unregisters an observer and hands it back.
    ///
    /// # Errors
    ///
    /// Refused, changing nothing, for an id this store did not give, or already took back, or whose
    /// component was uninstalled ([`StoreError::UnknownObserver`]).
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
}
