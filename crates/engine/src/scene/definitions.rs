//! Component definitions written in Luau: `ComponentDefinition` instances anywhere in the
//! hierarchy, synced into the store at the start of every frame and on demand.
//!
//! Invariant: after a sync the store's Luau-defined components are those the hierarchy's
//! definitions describe (or what the sync reports it could not make so), and every report a
//! sync makes stays readable until the frame's events are taken: [`Scene::sync_definitions`]
//! returns it and keeps a copy for the frame.

use strata_arena::{ClassId, InstanceId};
use strata_schema_adoption::SyncReport;

use crate::error::WorldError;
use crate::scene::Scene;

impl Scene {
    /// Adds a component definition named `name` (the component's name) with Luau `source`
    /// under `parent` (the game when `None`). It takes effect at the next sync: the start of
    /// the next frame, or [`Scene::sync_definitions`].
    pub fn define_luau(
        &mut self,
        name: &str,
        source: &str,
        parent: Option<InstanceId>,
    ) -> Result<InstanceId, WorldError> {
        let parent = parent.unwrap_or(self.game());
        let id = self
            .arena
            .create(ClassId::COMPONENT_DEFINITION, Some(parent))?;
        self.arena.set_name(id, name)?;
        self.arena.set_definition_source(id, source)?;
        Ok(id)
    }

    /// Replaces a definition's Luau source; it takes effect at the next sync.
    pub fn set_definition_source(
        &mut self,
        definition: InstanceId,
        source: &str,
    ) -> Result<bool, WorldError> {
        Ok(self.arena.set_definition_source(definition, source)?)
    }

    /// Brings the store's Luau-defined components in step with the hierarchy's definitions now:
    /// new ones installed (adopting saved rows of their name), changed ones redefined (rows
    /// converted), renamed ones moved, removed ones turned back into orphans. Cheap when
    /// nothing changed. A report that changed something or holds diagnostics is also kept for
    /// the frame's events.
    pub fn sync_definitions(&mut self) -> SyncReport {
        let _span = tracing::debug_span!("definition_sync").entered();
        let report = self.sync.sync(&self.arena, &mut self.store);
        if !report.skipped {
            self.place_waiting_migrations();
        }
        let did = !(report.added.is_empty()
            && report.changed.is_empty()
            && report.renamed.is_empty()
            && report.removed.is_empty()
            && report.diagnostics.is_empty());
        if !report.skipped && did {
            self.syncs.push(report.clone());
        }
        report
    }
}
