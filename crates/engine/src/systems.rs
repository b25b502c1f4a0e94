//! Systems written in Rust: [`SystemSpec`] (a name, a body, where and when it runs, what it
//! writes), the [`SystemBody`] trait other layers implement (the Luau scripting layer, say), and
//! the two contexts a body runs with: [`Ctx`] for a serial system (the whole scene, structural
//! changes included) and [`ParCtx`] for a parallel one (the established state to read, an
//! overlay to write).
//!
//! Invariant: a parallel system writes only through its overlay, and only the fields it
//! declared ([`SystemSpec::writes`]); it reads only the components it declared it reads
//! ([`SystemSpec::reads`]) or writes. Anything else it asks for is refused with a typed error
//! and records nothing. Its reads see the state established before its group began, and its
//! own writes.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use strata_arena::{InstanceId, Snapshot};
use strata_component_store::{ComponentId, FieldId, InstanceRef, Scalar, Store, Value};
use strata_parallel_overlay::{Logged, Overlay, OverlayColumn, OverlayError};
use strata_query::{Pass, Query};
use strata_scheduler::{HierarchyKey, Phase, System};

use crate::error::{SystemError, WorldError};
use crate::scene::Scene;

/// What a system's run returns.
pub type SystemResult = Result<(), SystemError>;

/// A system's body: what the world calls each time the system is due.
///
/// A serial body gets the whole scene through [`Ctx`]; a parallel one
/// ([`SystemBody::is_parallel`]) runs on a lane beside the other parallel systems scheduled next
/// to it, through [`ParCtx`]. Closures become bodies through [`SystemSpec::new`] and
/// [`SystemSpec::parallel`]; other layers implement the trait.
pub trait SystemBody: Send {
    /// Whether the body runs on a parallel lane, writing through an overlay.
    fn is_parallel(&self) -> bool {
        false
    }

    /// Runs a serial body.
    fn run(&mut self, ctx: &mut Ctx<'_>) -> SystemResult;

    /// Runs a parallel body. The default refuses: a body that says it is parallel implements
    /// it.
    fn run_parallel(&mut self, ctx: &mut ParCtx<'_>) -> SystemResult {
        let _ = ctx;
        Err(SystemError::failed("this system has no parallel body"))
    }

    /// Lets go of what the body holds (its code and data): the world calls it when it stops
    /// the system for holding what the world needed (see [`SystemError::RanAway`]). A released
    /// body's later runs may fail. The default holds nothing to let go of.
    fn release(&mut self) {}

    /// Stops one part of the body that ran away (an execution group's root, say) and lets go
    /// of what it holds; the rest of the body runs on. Returns whether the body has that part.
    fn stop_part(&mut self, part: &str) -> bool {
        let _ = part;
        false
    }
}

/// What a runaway's failure asks the world to stop (see [`SystemError::RanAway`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StopRequest {
    /// The system to stop, by name; `None` for the system whose run failed.
    pub system: Option<String>,
    /// The part of it to stop ([`SystemBody::stop_part`]); `None` for the whole system.
    pub part: Option<String>,
    /// Whether the stopped system lets go of what it holds ([`SystemBody::release`]).
    pub release: bool,
}

/// A system's body as the world keeps it, with the fields it declared it writes.
pub(crate) struct Body {
    pub(crate) inner: Box<dyn SystemBody>,
    pub(crate) writes: Arc<[(ComponentId, FieldId)]>,
    pub(crate) reads: Arc<[ComponentId]>,
    /// Whether a parallel body may write any field (see [`SystemSpec::writes_any_field`]).
    pub(crate) any_write: bool,
    /// Whether a parallel body may read any component (see [`SystemSpec::reads_anything`]).
    pub(crate) any_read: bool,
}

impl Body {
    pub(crate) fn is_parallel(&self) -> bool {
        self.inner.is_parallel()
    }
}

struct SerialFn<F>(F);

impl<F> SystemBody for SerialFn<F>
where
    F: FnMut(&mut Ctx<'_>) -> SystemResult + Send,
{
    fn run(&mut self, ctx: &mut Ctx<'_>) -> SystemResult {
        (self.0)(ctx)
    }
}

struct ParallelFn<F>(F);

impl<F> SystemBody for ParallelFn<F>
where
    F: FnMut(&mut ParCtx<'_>) -> SystemResult + Send,
{
    fn is_parallel(&self) -> bool {
        true
    }

    fn run(&mut self, _ctx: &mut Ctx<'_>) -> SystemResult {
        Err(SystemError::failed("a parallel system runs on a lane"))
    }

    fn run_parallel(&mut self, ctx: &mut ParCtx<'_>) -> SystemResult {
        (self.0)(ctx)
    }
}

/// A system to add to a world: a name, a body, and where and when it runs.
///
/// A new system runs in [`Phase::Update`] every frame, in no set, with no declared order.
pub struct SystemSpec {
    pub(crate) system: System<Body>,
}

impl std::fmt::Debug for SystemSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SystemSpec")
            .field("name", &self.system.name())
            .field("phase", &self.system.phase())
            .finish_non_exhaustive()
    }
}

impl SystemSpec {
    /// A serial system: `run` gets the whole scene, structural changes included.
    pub fn new(name: &str, run: impl FnMut(&mut Ctx<'_>) -> SystemResult + Send + 'static) -> Self {
        Self::from_body(name, Box::new(SerialFn(run)))
    }

    /// A parallel system: `run` reads the state established before its group began and writes
    /// through its own overlay, on a lane beside the parallel systems scheduled next to it;
    /// the writes commit in scheduled order after the group. Declare every field it writes with
    /// [`SystemSpec::writes`], and every other component whose values it reads (or whose
    /// changes a query of it filters on) with [`SystemSpec::reads`].
    pub fn parallel(
        name: &str,
        run: impl FnMut(&mut ParCtx<'_>) -> SystemResult + Send + 'static,
    ) -> Self {
        Self::from_body(name, Box::new(ParallelFn(run)))
    }

    /// A system with a body of another layer's making.
    pub fn from_body(name: &str, body: Box<dyn SystemBody>) -> Self {
        Self {
            system: System::new(
                name,
                Body {
                    inner: body,
                    writes: Arc::new([]),
                    reads: Arc::new([]),
                    any_write: false,
                    any_read: false,
                },
            ),
        }
    }

    /// Runs in `phase`.
    pub fn in_phase(mut self, phase: Phase) -> Self {
        self.system = self.system.in_phase(phase);
        self
    }

    /// Runs in the fixed-step block, once per fixed step.
    pub fn in_fixed_block(mut self) -> Self {
        self.system = self.system.in_fixed_block();
        self
    }

    /// Belongs to the set named `set`.
    pub fn in_set(mut self, set: &str) -> Self {
        self.system = self.system.in_set(set);
        self
    }

    /// Runs before the system or every member of the set named `target`.
    pub fn before(mut self, target: &str) -> Self {
        self.system = self.system.before(target);
        self
    }

    /// Runs after the system or every member of the set named `target`.
    pub fn after(mut self, target: &str) -> Self {
        self.system = self.system.after(target);
        self
    }

    /// Runs at most once per `seconds` of its stage's time, with the time accumulated.
    pub fn with_interval(mut self, seconds: f64) -> Self {
        self.system = self.system.with_interval(seconds);
        self
    }

    /// Its place in hierarchy order (ties between unordered systems break by it).
    pub fn with_hierarchy(mut self, key: impl Into<HierarchyKey>) -> Self {
        self.system = self.system.with_hierarchy(key);
        self
    }

    /// Starts disabled.
    pub fn disabled(mut self) -> Self {
        self.system = self.system.disabled();
        self
    }

    /// Declares that the system reads `component`: any of its fields, and its change ticks
    /// (a query's `with` and `changed` terms). A parallel system may read only the components
    /// it declares here or writes a field of; other reads are refused
    /// ([`WorldError::UndeclaredRead`]). A query's `without` terms and the hierarchy need no
    /// declaration: nothing structural changes while parallel systems run. Shown in the
    /// schedule's dump for serial systems too.
    pub fn reads(mut self, component: ComponentId) -> Self {
        let body = self.system.body_mut();
        if !body.reads.contains(&component) {
            body.reads = body.reads.iter().copied().chain([component]).collect();
        }
        self
    }

    /// Declares that the system writes `field` of `component`. A parallel system may write
    /// only what it declares.
    pub fn writes(mut self, component: ComponentId, field: FieldId) -> Self {
        let body = self.system.body_mut();
        if !body.writes.contains(&(component, field)) {
            body.writes = body
                .writes
                .iter()
                .copied()
                .chain([(component, field)])
                .collect();
        }
        self
    }

    /// Lets a parallel system write any field, declared or not: for bodies whose writes are
    /// only known when they run (a script's). Its writes still go through its overlay.
    pub fn writes_any_field(mut self) -> Self {
        self.system.body_mut().any_write = true;
        self
    }

    /// Lets a parallel system read any component, declared or not: for bodies whose reads are
    /// only known when they run (a script's that lists none).
    pub fn reads_anything(mut self) -> Self {
        self.system.body_mut().any_read = true;
        self
    }

    /// The system's name.
    pub fn name(&self) -> &str {
        self.system.name()
    }
}

/// What a serial system runs with: the whole scene (it derefs to [`Scene`]), the time its run
/// stands for, and the frame number.
pub struct Ctx<'w> {
    pub(crate) scene: &'w mut Scene,
    pub(crate) dt: f64,
    pub(crate) frame: u64,
}

impl Ctx<'_> {
    /// The seconds this run stands for: the frame's time, the fixed step, or for an interval
    /// system the time accumulated since its previous run.
    pub fn dt(&self) -> f64 {
        self.dt
    }

    /// The frame being stepped (0 for the first).
    pub fn frame(&self) -> u64 {
        self.frame
    }
}

impl Deref for Ctx<'_> {
    type Target = Scene;

    fn deref(&self) -> &Scene {
        self.scene
    }
}

impl DerefMut for Ctx<'_> {
    fn deref_mut(&mut self) -> &mut Scene {
        self.scene
    }
}

/// What a parallel system runs with: the state established before its group began (the arena
/// and the store, read-only), its own overlay for writes, and the time its run stands for.
pub struct ParCtx<'a> {
    pub(crate) arena: &'a Snapshot,
    pub(crate) overlay: Overlay<'a>,
    pub(crate) writes: Arc<[(ComponentId, FieldId)]>,
    pub(crate) any_write: bool,
    pub(crate) reads: Arc<[ComponentId]>,
    pub(crate) any_read: bool,
    pub(crate) dt: f64,
    pub(crate) frame: u64,
    /// The simulated seconds before the frame began.
    pub(crate) time: f64,
    pub(crate) rows: u64,
    /// Lines printed by the body (a script's), delivered after the wave in scheduled order.
    pub(crate) prints: Vec<String>,
    /// Whether the world's queries keep their matches (see `Scene::set_query_caching`).
    pub(crate) query_caching: bool,
}

impl<'a> ParCtx<'a> {
    /// Counts rows a body visited by other means than this context's passes (a scripting
    /// layer's queries), towards the system's statistics.
    pub fn add_rows(&mut self, rows: u64) {
        self.rows += rows;
    }

    /// This run's overlay, for a layer that records writes of its own making (a scripting
    /// layer replays a script's writes here). Writes through it are not checked against the
    /// system's declared fields or against the hierarchy: the layer checks them as they are
    /// made, as [`ParCtx::write_value`] does.
    #[doc(hidden)]
    pub fn overlay_mut(&mut self) -> &mut Overlay<'a> {
        &mut self.overlay
    }

    /// Whether the world's queries keep their matches (see `Scene::set_query_caching`): a
    /// layer running queries of its own in a parallel system follows it.
    pub fn query_caching(&self) -> bool {
        self.query_caching
    }

    /// Whether the system may write `field` of `component` (see [`SystemSpec::writes`]).
    pub fn may_write(&self, component: ComponentId, field: FieldId) -> bool {
        self.any_write || self.writes.contains(&(component, field))
    }

    /// Whether the system may read `component`: it declared it reads it
    /// ([`SystemSpec::reads`]), or writes a field of it, or may read anything.
    pub fn may_read(&self, component: ComponentId) -> bool {
        self.any_read
            || self.any_write
            || self.reads.contains(&component)
            || self.writes.iter().any(|(c, _)| *c == component)
    }

    /// Refuses a read of `component` the system did not declare.
    fn readable(&self, component: ComponentId) -> Result<(), WorldError> {
        if self.may_read(component) {
            return Ok(());
        }
        let name = self
            .overlay
            .store()
            .def(component)
            .map_or_else(|_| format!("{component:?}"), |d| d.name().to_owned());
        Err(WorldError::UndeclaredRead { component: name })
    }

    /// Refuses a query whose `with` terms (their values and change ticks) the system may not
    /// read.
    fn readable_terms(&self, query: &Query) -> Result<(), WorldError> {
        query
            .spec()
            .required()
            .iter()
            .try_for_each(|c| self.readable(*c))
    }

    /// Keeps lines a body printed (a script's), delivered after the wave in scheduled order.
    pub fn add_prints(&mut self, prints: impl IntoIterator<Item = String>) {
        self.prints.extend(prints);
    }

    /// The seconds this run stands for.
    pub fn dt(&self) -> f64 {
        self.dt
    }

    /// The frame being stepped.
    pub fn frame(&self) -> u64 {
        self.frame
    }

    /// The simulated seconds before the frame began (see [`World::time`](crate::World::time)).
    pub fn time(&self) -> f64 {
        self.time
    }

    /// The hierarchy as it was when the group began.
    pub fn arena(&self) -> &'a Snapshot {
        self.arena
    }

    /// The store as it was when the group began. Reads through it are not checked against
    /// the system's declared reads: a layer that reads through it (a scripting layer's queries)
    /// checks them itself, with [`ParCtx::may_read`].
    pub fn store(&self) -> &'a Store {
        self.overlay.store()
    }

    fn at(&self, id: InstanceId) -> Result<InstanceRef, WorldError> {
        if !self.arena.is_live(id) {
            return Err(WorldError::NotLive(id));
        }
        Ok(InstanceRef::of(self.arena, id)?)
    }

    fn declared(&self, component: ComponentId, field: FieldId) -> Result<(), WorldError> {
        if self.any_write || self.writes.contains(&(component, field)) {
            Ok(())
        } else {
            Err(WorldError::UndeclaredWrite { component, field })
        }
    }

    /// Checks that a value recorded for `field` of `component` refers only to instances live
    /// in the established state (nothing structural changes while a wave runs).
    fn live_references(
        &self,
        component: ComponentId,
        field: FieldId,
        value: &Value,
    ) -> Result<(), WorldError> {
        let arena = self.arena;
        self.overlay
            .store()
            .def(component)?
            .check_references(field, value, |t| arena.is_live(t))?;
        Ok(())
    }

    /// Refuses a pass writing a field that can hold references (see `Scene::update`).
    fn refuse_reference_pass(
        &self,
        component: ComponentId,
        field: FieldId,
    ) -> Result<(), WorldError> {
        let def = self.overlay.store().def(component)?;
        match def.field(field) {
            Some(f) if f.ty.can_reference() => Err(WorldError::ReferencePass {
                component: def.name().to_owned(),
                field: f.name.to_string(),
            }),
            _ => Ok(()),
        }
    }

    /// A field's value: this system's latest write to it in this run, otherwise the
    /// established value.
    pub fn get<T: Scalar>(
        &mut self,
        id: InstanceId,
        component: ComponentId,
        field: FieldId,
    ) -> Result<T, WorldError> {
        self.readable(component)?;
        let at = self.at(id)?;
        Ok(self.overlay.get::<T>(at, component, field)?)
    }

    /// A field's value in dynamic form (own write first).
    pub fn get_value(
        &mut self,
        id: InstanceId,
        component: ComponentId,
        field: FieldId,
    ) -> Result<Value, WorldError> {
        self.readable(component)?;
        let at = self.at(id)?;
        Ok(self.overlay.read(at, component, field)?)
    }

    /// Records a write of a declared field; it commits after the group, in scheduled order.
    pub fn write<T: Scalar>(
        &mut self,
        id: InstanceId,
        component: ComponentId,
        field: FieldId,
        value: T,
    ) -> Result<(), WorldError> {
        self.declared(component, field)?;
        let at = self.at(id)?;
        if T::matches(&strata_component_store::FieldType::Reference) {
            self.live_references(component, field, &value.clone().into_value())?;
        }
        Ok(self.overlay.set(at, component, field, value)?)
    }

    /// Records a write of a declared field in dynamic form.
    pub fn write_value(
        &mut self,
        id: InstanceId,
        component: ComponentId,
        field: FieldId,
        value: Value,
    ) -> Result<(), WorldError> {
        self.declared(component, field)?;
        let at = self.at(id)?;
        self.live_references(component, field, &value)?;
        Ok(self.overlay.write(at, component, field, value)?)
    }

    /// A query's pass over the established state, for reading.
    pub fn pass<'q>(&mut self, query: &'q mut Query) -> Result<Pass<'q>, WorldError> {
        self.readable_terms(query)?;
        query.set_caching(self.query_caching);
        let pass = query.run(self.arena, self.overlay.store())?;
        self.rows += pass.len() as u64;
        Ok(pass)
    }

    /// Records `write = f(write)` (term, field) for every selected match of a query, through
    /// this system's overlay (reading its own earlier writes first). Returns how many values it
    /// recorded that differ from the ones they replace.
    pub fn update_each<W: Logged + Clone>(
        &mut self,
        query: &mut Query,
        write: (usize, FieldId),
        mut f: impl FnMut(&W) -> W,
    ) -> Result<usize, WorldError> {
        self.record::<W, W>(query, write, None, |current, _| f(current))
    }

    /// Records `write = f(write, read)` (each a term and field of the query) for every
    /// selected match, `read` taken from the established state.
    pub fn update<W: Logged + Clone, R: Scalar + Clone>(
        &mut self,
        query: &mut Query,
        write: (usize, FieldId),
        read: (usize, FieldId),
        mut f: impl FnMut(&W, &R) -> W,
    ) -> Result<usize, WorldError> {
        self.record::<W, R>(query, write, Some(read), |current, input| {
            f(
                current,
                input.expect("a pass with a read term gives every row its input"),
            )
        })
    }

    /// The pass behind [`ParCtx::update`] and [`ParCtx::update_each`]: `write = f(write,
    /// read)` for every selected match, `read` (a term and field, taken from the established
    /// state) given when asked for; a row whose read value is missing is skipped.
    fn record<W: Logged + Clone, R: Scalar + Clone>(
        &mut self,
        query: &mut Query,
        write: (usize, FieldId),
        read: Option<(usize, FieldId)>,
        mut f: impl FnMut(&W, Option<&R>) -> W,
    ) -> Result<usize, WorldError> {
        let (term, field) = write;
        let component = pass_component(query, term)?;
        self.declared(component, field)?;
        self.refuse_reference_pass(component, field)?;
        self.readable_terms(query)?;
        let read = match read {
            Some((read_term, read_field)) => {
                Some((read_term, pass_component(query, read_term)?, read_field))
            }
            None => None,
        };
        query.set_caching(self.query_caching);
        let store = self.overlay.store();
        let pass = query.run(self.arena, store)?;
        self.rows += pass.len() as u64;
        let matches = pass.matches();
        let rows = matches.rows(term)?;
        let inputs = match read {
            Some((read_term, read_component, read_field)) => {
                let values = store.set(read_component)?.checked_values::<R>(read_field)?;
                let read_rows = matches.rows(read_term)?;
                // Read rows that follow one another are one slice of the column, indexed
                // like the written rows.
                let run = match matches.run_start(read_term) {
                    Some(first) if read_rows.len() == rows.len() => {
                        values.get(first as usize..first as usize + read_rows.len())
                    }
                    _ => None,
                };
                Some((values, read_rows, run))
            }
            None => None,
        };
        let mut column = self.overlay.column::<W>(component, field)?;
        let selection = pass.selection();
        // Written rows that follow one another (the query knows) are one run of the column.
        let run = match selection {
            None => matches.run_start(term),
            Some(_) => None,
        };
        let (column, written) = (&mut column, (run, rows, selection));
        let recorded = match inputs {
            None => pass_rows(column, written, |_, current| Some(f(current, None)))?,
            Some((_, _, Some(inputs))) => pass_rows(column, written, |k, current| {
                Some(f(current, Some(inputs.get(k)?)))
            })?,
            Some((values, read_rows, None)) => pass_rows(column, written, |k, current| {
                let input = values.get(*read_rows.get(k)? as usize)?;
                Some(f(current, Some(input)))
            })?,
        };
        Ok(recorded)
    }
}

/// A pass of `g` over a query's written rows: `run`, their first row when the query knows
/// they follow one another (no selection), else the rows themselves and the selection.
fn pass_rows<W: Logged>(
    column: &mut OverlayColumn<'_, '_, W>,
    (run, rows, selection): (Option<u32>, &[u32], Option<&[u32]>),
    g: impl FnMut(usize, &W) -> Option<W>,
) -> Result<usize, OverlayError> {
    match run {
        Some(first) => column.update_run(first as usize, rows.len(), g),
        None => column.update_rows(rows, selection, g),
    }
}

/// The component a query's term `term` requires.
fn pass_component(query: &Query, term: usize) -> Result<ComponentId, WorldError> {
    query
        .spec()
        .required()
        .get(term)
        .copied()
        .ok_or(WorldError::Query(strata_query::QueryError::NoSuchTerm(
            term,
        )))
}

/// The serial context for one run.
pub(crate) fn serial_ctx(scene: &mut Scene, dt: f64, frame: u64) -> Ctx<'_> {
    Ctx { scene, dt, frame }
}
