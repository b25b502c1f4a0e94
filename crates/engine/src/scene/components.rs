//! Components through the scene: definitions in Rust or Luau, adding and removing, typed,
//! dynamic and by-name reads and writes, handles, queries and their passes, removal readers,
//! and staged bulk work.
//!
//! Invariant: every instance reference handed to the store is made from the arena
//! ([`Scene::instance_ref`]), so a row is only ever added for a live instance at its own slot;
//! a staged batch is committed only through [`Scene::commit`], which follows the destroy
//! requests its despawns make, as [`Scene::destroy`] does.

use strata_arena::{InstanceId, Snapshot};
use strata_component_store::{
    CommitError, ComponentDef, ComponentHandle, ComponentId, FieldId, FieldType, InitError,
    Published, RemovalReader, Removals, RowInit, Scalar, SpawnRows, SpawnTicket, Stage, Value,
};
use strata_query::{Chunks, Pass, Query, QuerySpec};

use super::instances::DestroyReport;
use crate::error::WorldError;
use crate::scene::Scene;

impl Scene {
    /// Installs a component defined in Rust. Rows saved or kept under its name before (orphans
    /// of a loaded world, or of a removed definition) are adopted onto it at once.
    pub fn define(&mut self, def: ComponentDef) -> Result<ComponentId, WorldError> {
        let component = self.store.install(def, self.arena.classes())?;
        if let Some(report) =
            strata_schema_adoption::adopt_orphans_of(&self.arena, &mut self.store, component)?
        {
            self.adoptions.push(report);
        }
        self.place_waiting_migrations();
        Ok(component)
    }

    /// Adopts every orphan record whose component is installed (whatever defined it); the
    /// reports go to the frame's events.
    pub(crate) fn adopt_pending_orphans(&mut self) {
        if self.store.orphans().is_empty() {
            return;
        }
        let pending: Vec<ComponentId> = self
            .store
            .components()
            .filter(|set| self.store.orphans().has_component(set.def().name()))
            .map(|set| set.id())
            .collect();
        for component in pending {
            if let Ok(Some(report)) =
                strata_schema_adoption::adopt_orphans_of(&self.arena, &mut self.store, component)
            {
                self.adoptions.push(report);
            }
        }
        self.place_waiting_migrations();
    }

    /// The installed component named `name`.
    pub fn component(&self, name: &str) -> Result<ComponentId, WorldError> {
        self.store
            .component(name)
            .ok_or_else(|| WorldError::UnknownComponent(name.to_owned()))
    }

    /// A component's field by name.
    pub fn field(&self, component: ComponentId, name: &str) -> Result<FieldId, WorldError> {
        self.store
            .field(component, name)
            .map_err(|_| WorldError::UnknownField {
                component: self
                    .store
                    .def(component)
                    .map_or_else(|_| format!("{component:?}"), |d| d.name().to_owned()),
                field: name.to_owned(),
            })
    }

    /// A component and one of its fields, both by name.
    pub fn field_named(
        &self,
        component: &str,
        field: &str,
    ) -> Result<(ComponentId, FieldId), WorldError> {
        let component = self.component(component)?;
        Ok((component, self.field(component, field)?))
    }

    /// Adds a component to a live instance, with `values` in the given fields and defaults
    /// (or the fields' factories) elsewhere.
    pub fn add(
        &mut self,
        id: InstanceId,
        component: ComponentId,
        values: impl IntoIterator<Item = (FieldId, Value)>,
    ) -> Result<(), WorldError> {
        let (at, class) = self.live_instance(id)?;
        if !self.store.def(component)?.reference_fields().is_empty() {
            let values: Vec<(FieldId, Value)> = values.into_iter().collect();
            for (field, value) in &values {
                self.check_live_references(component, *field, value)?;
            }
            self.store.add(at, class, component, values)?;
        } else {
            self.store.add(at, class, component, values)?;
        }
        self.count_writes(1);
        Ok(())
    }

    /// Adds a component to a live instance with every field at its default (or its factory's
    /// value), and returns the new row for setting fields typed, as [`Scene::add`] would have
    /// stored them: the typed path, without building or matching a [`Value`] per field. A
    /// reference is checked to be to a live instance before it is stored.
    ///
    /// ```
    /// # use strata::prelude::*;
    /// let mut world = World::new()?;
    /// let speed = world.define(ComponentDef::new("Speed").field(FieldDef::number("value", 1.0)))?;
    /// let value = world.field(speed, "value")?;
    /// let id = world.create(ClassId::ENTITY, None)?;
    /// world.insert(id, speed)?.set(value, 4.5)?;
    /// assert_eq!(world.get::<f64>(id, speed, value)?, 4.5);
    /// # Ok::<(), strata::WorldError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Scene::add`]: a dead or unknown instance, an unknown component, one the instance
    /// holds already or whose class or requirements refuse it; nothing is added then.
    pub fn insert(
        &mut self,
        id: InstanceId,
        component: ComponentId,
    ) -> Result<Insert<'_>, WorldError> {
        let (at, class) = self.live_instance(id)?;
        let row = self.store.insert(at, class, component)?;
        self.counts.writes.set(self.counts.writes.get() + 1);
        Ok(Insert {
            row,
            arena: &self.arena,
        })
    }

    /// Checks that `value`, bound for `field` of `component`, refers only to live instances:
    /// the store cannot tell, and a world must never hold a reference its save cannot load.
    fn check_live_references(
        &self,
        component: ComponentId,
        field: FieldId,
        value: &Value,
    ) -> Result<(), WorldError> {
        let arena = &self.arena;
        self.store
            .def(component)?
            .check_references(field, value, |t| arena.is_live(t))?;
        Ok(())
    }

    /// Refuses a pass that writes a field able to hold references: a pass's values are not
    /// checked one by one against the hierarchy (write references with
    /// [`Scene::write_value`]).
    fn refuse_reference_pass(
        &self,
        query: &Query,
        term: usize,
        field: FieldId,
    ) -> Result<(), WorldError> {
        let Some(component) = query.spec().required().get(term).copied() else {
            return Ok(());
        };
        let def = self.store.def(component)?;
        match def.field(field) {
            Some(f) if f.ty.can_reference() => Err(WorldError::ReferencePass {
                component: def.name().to_owned(),
                field: f.name.to_string(),
            }),
            _ => Ok(()),
        }
    }

    /// [`Scene::add`] with the component and its fields named.
    pub fn add_named(
        &mut self,
        id: InstanceId,
        component: &str,
        values: &[(&str, Value)],
    ) -> Result<(), WorldError> {
        let c = self.component(component)?;
        let values = values
            .iter()
            .map(|(name, value)| Ok((self.field(c, name)?, value.clone())))
            .collect::<Result<Vec<_>, WorldError>>()?;
        self.add(id, c, values)
    }

    /// Removes a component (and the components that require it) from a live instance; `false`
    /// when it did not hold it.
    pub fn remove(&mut self, id: InstanceId, component: ComponentId) -> Result<bool, WorldError> {
        let at = self.instance_ref(id)?;
        let removed = self.store.remove(at, component)?;
        self.count_writes(u64::from(removed));
        Ok(removed)
    }

    /// Whether a live instance holds a component.
    pub fn has(&self, id: InstanceId, component: ComponentId) -> bool {
        self.instance_ref(id)
            .is_ok_and(|at| self.store.has(at, component))
    }

    /// A field's value, typed.
    pub fn get<T: Scalar>(
        &self,
        id: InstanceId,
        component: ComponentId,
        field: FieldId,
    ) -> Result<T, WorldError> {
        let at = self.instance_ref(id)?;
        self.count_reads(1);
        Ok(self.store.get::<T>(at, component, field)?.clone())
    }

    /// A field's value in dynamic form.
    pub fn get_value(
        &self,
        id: InstanceId,
        component: ComponentId,
        field: FieldId,
    ) -> Result<Value, WorldError> {
        let at = self.instance_ref(id)?;
        self.count_reads(1);
        Ok(self.store.get_value(at, component, field)?)
    }

    /// A field's value, the component and field named.
    pub fn get_named(
        &self,
        id: InstanceId,
        component: &str,
        field: &str,
    ) -> Result<Value, WorldError> {
        let (c, f) = self.field_named(component, field)?;
        self.get_value(id, c, f)
    }

    /// Writes a field, typed; `false` when the value was already equal (bit for bit).
    pub fn write<T: Scalar>(
        &mut self,
        id: InstanceId,
        component: ComponentId,
        field: FieldId,
        value: T,
    ) -> Result<bool, WorldError> {
        let at = self.instance_ref(id)?;
        if T::matches(&strata_component_store::FieldType::Reference) {
            self.check_live_references(component, field, &value.clone().into_value())?;
        }
        let changed = self.store.write(at, component, field, value)?;
        self.count_writes(1);
        Ok(changed)
    }

    /// Writes a field in dynamic form; `false` when the value was already equal.
    pub fn write_value(
        &mut self,
        id: InstanceId,
        component: ComponentId,
        field: FieldId,
        value: Value,
    ) -> Result<bool, WorldError> {
        let at = self.instance_ref(id)?;
        self.check_live_references(component, field, &value)?;
        let changed = self.store.write_value(at, component, field, value)?;
        self.count_writes(1);
        Ok(changed)
    }

    /// Writes a field, the component and field named.
    pub fn write_named(
        &mut self,
        id: InstanceId,
        component: &str,
        field: &str,
        value: Value,
    ) -> Result<bool, WorldError> {
        let (c, f) = self.field_named(component, field)?;
        self.write_value(id, c, f, value)
    }

    /// A handle on a component a live instance holds: it resolves the instance's present row
    /// on every access, and reports missing membership once the component is gone.
    pub fn handle(
        &self,
        id: InstanceId,
        component: ComponentId,
    ) -> Result<ComponentHandle, WorldError> {
        let at = self.instance_ref(id)?;
        Ok(ComponentHandle::new(&self.store, at, component)?)
    }

    /// A query for `spec` (its cache lives in the query; keep it to reuse it). Uncached when
    /// the scene's queries are (see [`Scene::set_query_caching`]).
    ///
    /// A query needs no world to be made: `Query::new(spec)` makes the same one without
    /// borrowing the scene (in a helper that builds systems while the world is borrowed for
    /// changing, say), and every pass the scene runs applies its caching mode to the query.
    pub fn query(&self, spec: QuerySpec) -> Result<Query, WorldError> {
        Ok(Query::with_caching(spec, self.query_caching)?)
    }

    /// The live instances a query matches, in id order.
    pub fn matches(&self, query: &mut Query) -> Result<Vec<InstanceId>, WorldError> {
        query.set_caching(self.query_caching);
        let matches = query.matches(&self.arena, &self.store)?;
        self.count_rows(matches.len() as u64);
        Ok(matches.ids().to_vec())
    }

    /// Runs a query's pass, for reading: its selection (the rows changed or added since the
    /// query's previous pass, for a query with change filters), columns and rows.
    pub fn pass<'q>(&self, query: &'q mut Query) -> Result<Pass<'q>, WorldError> {
        query.set_caching(self.query_caching);
        let pass = query.run(&self.arena, &self.store)?;
        self.count_rows(pass.len() as u64);
        Ok(pass)
    }

    /// A pass writing `write` (term, field) from `read` (term, field) on every selected
    /// match: `W = f(W, R)`, with change tracking. Returns how many rows changed.
    pub fn update<W: Scalar, R: Scalar>(
        &mut self,
        query: &mut Query,
        write: (usize, FieldId),
        read: (usize, FieldId),
        f: impl FnMut(&W, &R) -> W,
    ) -> Result<usize, WorldError> {
        self.refuse_reference_pass(query, write.0, write.1)?;
        query.set_caching(self.query_caching);
        let pass = query.run(&self.arena, &self.store)?;
        self.count_rows(pass.len() as u64);
        let changed = pass.update(&mut self.store, write, read, f)?;
        self.count_writes(changed as u64);
        Ok(changed)
    }

    /// A pass writing `write` (term, field) from itself on every selected match.
    pub fn update_each<W: Scalar>(
        &mut self,
        query: &mut Query,
        write: (usize, FieldId),
        f: impl FnMut(&W) -> W,
    ) -> Result<usize, WorldError> {
        self.refuse_reference_pass(query, write.0, write.1)?;
        query.set_caching(self.query_caching);
        let pass = query.run(&self.arena, &self.store)?;
        self.count_rows(pass.len() as u64);
        let changed = pass.update_each(&mut self.store, write, f)?;
        self.count_writes(changed as u64);
        Ok(changed)
    }

    /// [`Scene::update_each`] cut into contiguous chunks on the world's thread pool: the
    /// result is the same for any thread count and chunking.
    pub fn par_update_each<W: Scalar + Send + Sync>(
        &mut self,
        query: &mut Query,
        write: (usize, FieldId),
        chunks: Chunks,
        f: impl Fn(&W) -> W + Sync + Send,
    ) -> Result<usize, WorldError> {
        self.refuse_reference_pass(query, write.0, write.1)?;
        query.set_caching(self.query_caching);
        let pass = query.run(&self.arena, &self.store)?;
        self.count_rows(pass.len() as u64);
        let store = &mut self.store;
        let changed = match &self.pool {
            Some(pool) => pool.install(|| pass.par_update_each(store, write, chunks, f))?,
            None => pass.par_update_each(store, write, chunks, f)?,
        };
        self.count_writes(changed as u64);
        Ok(changed)
    }

    /// [`Scene::update`] cut into contiguous chunks on the world's thread pool.
    pub fn par_update<W: Scalar + Send + Sync, R: Scalar + Sync>(
        &mut self,
        query: &mut Query,
        write: (usize, FieldId),
        read: (usize, FieldId),
        chunks: Chunks,
        f: impl Fn(&W, &R) -> W + Sync + Send,
    ) -> Result<usize, WorldError> {
        self.refuse_reference_pass(query, write.0, write.1)?;
        query.set_caching(self.query_caching);
        let pass = query.run(&self.arena, &self.store)?;
        self.count_rows(pass.len() as u64);
        let store = &mut self.store;
        let changed = match &self.pool {
            Some(pool) => pool.install(|| pass.par_update(store, write, read, chunks, f))?,
            None => pass.par_update(store, write, read, chunks, f)?,
        };
        self.count_writes(changed as u64);
        Ok(changed)
    }

    /// A checked writer over one field's column, for loops that write many rows (a scripting
    /// layer's columns, say): a row written gets its changed tick, dirty bit and change event
    /// as a serial write does, and only rows whose value differs change.
    ///
    /// # Errors
    ///
    /// An unknown component or field, a type that is not the field's, and a field that can
    /// hold references (write those one at a time with [`Scene::write_value`], which checks
    /// that each names a live instance).
    pub fn column_writer<T: Scalar>(
        &mut self,
        component: ComponentId,
        field: FieldId,
    ) -> Result<strata_component_store::ColumnWriter<'_, T>, WorldError> {
        let def = self.store.def(component)?;
        if let Some(f) = def.field(field)
            && f.ty.can_reference()
        {
            return Err(WorldError::ReferencePass {
                component: def.name().to_owned(),
                field: f.name.to_string(),
            });
        }
        Ok(self.store.column_writer::<T>(component, field)?)
    }

    /// A removal reader on a component, starting at the present head of its removal log.
    pub fn removal_reader(&self, component: ComponentId) -> Result<RemovalReader, WorldError> {
        Ok(RemovalReader::new(&self.store, component)?)
    }

    /// The instances that lost the reader's component since its last read (sorted, each
    /// once), or that history was missed.
    pub fn removed(&self, reader: &mut RemovalReader) -> Result<Removals, WorldError> {
        Ok(reader.read(&self.store)?)
    }

    /// An empty stage for bulk work on this scene (see [`Stage`]).
    pub fn stage(&self) -> Stage {
        Stage::new(&self.arena, &self.store)
    }

    /// Stages a bulk spawn on a stage built on this scene (see `Stage::spawn`): `count`
    /// instances of `class` under `parent` holding `components`, their rows filled by `init`
    /// at the commit. The ids are reserved now and published by [`Scene::commit`]; a refusal
    /// (a foreign stage, a bad class or parent, ids exhausted) reserves nothing.
    ///
    /// The initializer's error is any error (`?` converts the store's, and an integrator's
    /// own), so a closure ending in `Ok(())` needs no annotation.
    ///
    /// ```
    /// # use strata::prelude::*;
    /// let mut world = World::new().unwrap();
    /// let health = world
    ///     .define(ComponentDef::new("Health").field(FieldDef::number("hp", 100.0)))
    ///     .unwrap();
    /// let hp = world.field(health, "hp").unwrap();
    /// let workspace = world.workspace();
    /// let mut stage = world.stage();
    /// let ticket = world
    ///     .stage_spawn(&mut stage, 3, ClassId::PART, Some(workspace), &[health], move |rows| {
    ///         for k in 0..rows.len() {
    ///             rows.set_value(health, k, hp, Value::Number(k as f64))?;
    ///         }
    ///         Ok(())
    ///     })
    ///     .unwrap();
    /// assert!(!world.is_live(ticket.first()));
    /// world.commit(&mut stage).unwrap();
    /// assert_eq!(world.children(workspace).unwrap().len(), 3);
    /// assert_eq!(world.get::<f64>(ticket.first(), health, hp).unwrap(), 0.0);
    /// ```
    pub fn stage_spawn(
        &mut self,
        stage: &mut Stage,
        count: usize,
        class: strata_arena::ClassId,
        parent: Option<InstanceId>,
        components: &[ComponentId],
        init: impl FnMut(&mut SpawnRows<'_>) -> Result<(), InitError> + 'static,
    ) -> Result<SpawnTicket, WorldError> {
        Ok(stage.spawn(&mut self.arena, count, class, parent, components, init)?)
    }

    /// Commits a stage built on this scene, then follows the destroy requests its despawns'
    /// reference policies made, as [`Scene::destroy`] does. Returns what was published and
    /// what those requests destroyed.
    #[allow(
        clippy::result_large_err,
        reason = "the error carries what was published; a commit is rare next to what it applies"
    )]
    pub fn commit(&mut self, stage: &mut Stage) -> Result<(Published, DestroyReport), CommitError> {
        let result = stage.commit(&mut self.arena, &mut self.store);
        let mut report = DestroyReport::default();
        let requests = match &result {
            Ok(published) => published.destroyed.destroy.clone(),
            Err(error) => error.published.destroyed.destroy.clone(),
        };
        self.forget_dead_orphan_references();
        self.follow_destroy_requests(requests, &mut report);
        report.dedup_cleared();
        result.map(|published| (published, report))
    }

    /// The values a row kept from an older version of its component's schema (pending
    /// migration input), if it has any.
    pub fn migration_input(
        &self,
        id: InstanceId,
        component: ComponentId,
    ) -> Option<&strata_component_store::OrphanRecord> {
        self.store.migration_input(id, component)
    }

    /// Takes a row's pending migration input (a migration consumed it).
    pub fn take_migration_input(
        &mut self,
        id: InstanceId,
        component: ComponentId,
    ) -> Option<strata_component_store::OrphanRecord> {
        self.store.take_migration_input(id, component)
    }
}

/// A component row [`Scene::insert`] just added, for setting its fields typed. Its writes are
/// part of the add: they take no ticks of their own. Lifecycle observers of the component hear
/// of the row, with the values set, when this is dropped.
pub struct Insert<'a> {
    row: RowInit<'a>,
    arena: &'a Snapshot,
}

impl Insert<'_> {
    /// Sets a field of the new row.
    ///
    /// # Errors
    ///
    /// A field the component lacks, a value of another type (or an enum index past the
    /// variants), and a reference to an instance that is not live; nothing is stored then.
    pub fn set<T: Scalar>(&mut self, field: FieldId, value: T) -> Result<&mut Self, WorldError> {
        // Only a reference value can name an instance (a field of another type refuses it).
        if T::matches(&FieldType::Reference) {
            let arena = self.arena;
            self.row
                .def()
                .check_references(field, &value.clone().into_value(), |t| arena.is_live(t))?;
        }
        self.row.set(field, value)?;
        Ok(self)
    }
}

impl std::fmt::Debug for Insert<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Insert")
            .field("component", &self.row.def().name())
            .field("row", &self.row.row())
            .finish()
    }
}
