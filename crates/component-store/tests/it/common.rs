//! A small world for the store's integration tests: an arena and a store wired the way the
//! engine wires them (destruction and reclamation reported, destroy requests followed).

use strata_arena::{Arena, ClassId, InstanceId};
use strata_component_store::{
    ComponentDef, ComponentId, DestroyOutcome, FieldId, InstanceRef, Store,
};

pub struct World {
    pub arena: Arena,
    pub store: Store,
}

impl World {
    pub fn new() -> Self {
        Self {
            arena: Arena::standard(),
            store: Store::new(),
        }
    }

    pub fn install(&mut self, def: ComponentDef) -> ComponentId {
        self.store.install(def, self.arena.classes()).unwrap()
    }

    pub fn field(&self, component: ComponentId, name: &str) -> FieldId {
        self.store.field(component, name).unwrap()
    }

    pub fn spawn(&mut self, class: ClassId) -> InstanceRef {
        let id = self.arena.create(class, None).unwrap();
        self.at(id)
    }

    pub fn at(&self, id: InstanceId) -> InstanceRef {
        InstanceRef::of(&self.arena, id).unwrap()
    }

    /// Destroys an instance and follows the store's destroy requests, as the engine does.
    pub fn destroy(&mut self, id: InstanceId) -> DestroyOutcome {
        let mut total = DestroyOutcome::default();
        let mut pending = vec![id];
        while let Some(next) = pending.pop() {
            if !self.arena.is_live(next) {
                continue;
            }
            let destruction = self.arena.destroy(next).unwrap();
            let outcome = self.store.on_destroyed(&destruction.doomed);
            pending.extend(outcome.destroy.iter().copied());
            total.removed.extend(outcome.removed);
            total.cleared.extend(outcome.cleared);
            total.destroy.extend(outcome.destroy);
        }
        total
    }

    /// Two drains, reporting reclaimed slots: afterwards destroyed slots are reusable.
    pub fn settle(&mut self) {
        for _ in 0..2 {
            let drained = self.arena.drain().unwrap();
            self.store.on_reclaimed(&drained.reclaimed);
        }
    }
}
