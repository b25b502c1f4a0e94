//! `World`: a scene, the systems that run on it, and the frame loop.
//!
//! Invariant: a frame always does the same steps in the same order: sync the Luau definitions;
//! run the schedule (phases in order, the fixed-step block between `PreUpdate` and `Update`,
//! interval systems when due, systems stopped in a cycle never), serial systems one at a time
//! with the whole scene and each run of consecutive parallel systems together on the pool, their
//! overlays committed in scheduled order once the run has finished; then drain the arena
//! (its events delivered to lifecycle listeners, destroyed subtrees readable in a lifecycle scope
//! while they are, a listener's panic caught, reported and its scope closed), report reclaimed
//! slots to the store, take the store's events and clear its frame state. A frame's result
//! depends on the world and `dt` only: not on the thread count, nor on which lane finished first.

use std::ops::{Deref, DerefMut};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::Instant;

use strata_arena::{Event, InstanceId, Snapshot};
use strata_component_store::StoreEvent;
use strata_parallel_overlay::{CommitReport, Overlay, SystemOrder, WriterRank};
use strata_scheduler::{Due, FixedStep, Plan, Schedule, SystemId, SystemStats};
use strata_schema_adoption::{ComponentReport, SyncReport};

use crate::error::{SystemError, WorldError};
use crate::scene::{Clock, Scene};
use crate::systems::{Body, ParCtx, SystemSpec, serial_ctx};

/// What one frame did, readable after it (see [`World::step`]).
#[derive(Debug, Default)]
pub struct FrameEvents {
    /// The frame these events belong to (0 for the first).
    pub frame: u64,
    /// The arena's events since the previous frame's end: creations, moves, destructions.
    pub lifecycle: Vec<Event>,
    /// The store's events for observed components: rows added and removed, fields changed.
    pub components: Vec<StoreEvent>,
    /// Each parallel group's commit: writes applied, conflicts (with whether the schedule
    /// orders the two writers), refusals and relocated rows.
    pub commits: Vec<CommitReport>,
    /// Definition syncs that changed something: additions, redefinitions, renames, removals,
    /// with their adoption reports.
    pub definitions: Vec<SyncReport>,
    /// Adoptions of saved or orphaned rows onto components defined in Rust.
    pub adoptions: Vec<ComponentReport>,
    /// The systems whose runs failed (an error returned, or a panic caught), by name; then
    /// the lifecycle listeners that panicked while the frame's end delivered its events, as
    /// `lifecycle listener #N` (N counts listeners in registration order from 0), with
    /// [`SystemError::ListenerPanicked`].
    pub errors: Vec<(String, SystemError)>,
    /// What scripts printed during the frame, in order (parallel waves and execution groups
    /// in scheduled and hierarchy order).
    pub prints: Vec<String>,
    /// Fixed steps the frame ran.
    pub fixed_steps: u32,
    /// Whole fixed steps owed beyond the frame's limit, dropped.
    pub fixed_steps_dropped: u64,
    /// The systems (or parts of systems) the frame stopped because they ran away.
    pub stopped: Vec<StoppedSystem>,
}

/// A system the world stopped because it ran away ([`SystemError::RanAway`]): a script that
/// used up its instruction or time budget, or held the memory the world's scripts ran out of.
/// A stopped system is disabled (a stopped part, such as one execution group's root, is
/// skipped by its system) and costs nothing more; [`World::set_system_enabled`] resumes a
/// whole system.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoppedSystem {
    /// The system's name.
    pub system: String,
    /// The part of it that was stopped (an execution group's root), or `None` for all of it.
    pub part: Option<String>,
    /// The frame it was stopped in.
    pub frame: u64,
    /// Why: the error its runaway gave.
    pub reason: String,
}

/// A listener of the arena's events, called at the end of each frame.
type Listener = Box<dyn FnMut(&Event, &Snapshot) + Send>;

/// A scene, the systems that run on it, and the frame loop (see the module docs). It derefs to
/// its [`Scene`], so instances and components are reached the same way outside systems and
/// inside serial ones.
pub struct World {
    scene: Scene,
    schedule: Schedule<Body>,
    /// The schedule's plan as of its last build, for writer ranks and the conflict oracle.
    plan: Plan,
    threads: usize,
    events: FrameEvents,
    listeners: Vec<Listener>,
    /// The systems stopped because they ran away, in the order stopped.
    stopped: Vec<StoppedSystem>,
    /// Interval waits a save or a snapshot kept for systems the world does not have (systems
    /// are code, added after a load), by system name: each is given to the system of that name
    /// when it is added ([`World::add_system`]), and saved until then.
    waiting_intervals: Vec<(String, f64)>,
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World")
            .field("frame", &self.frame())
            .field("threads", &self.threads)
            .field("systems", &self.schedule.len())
            .field("scene", &self.scene)
            .finish_non_exhaustive()
    }
}

impl Deref for World {
    type Target = Scene;

    fn deref(&self) -> &Scene {
        &self.scene
    }
}

impl DerefMut for World {
    fn deref_mut(&mut self) -> &mut Scene {
        &mut self.scene
    }
}

/// The most threads a world runs on. A frame's result does not depend on the thread count,
/// so more threads than cores only add the cost of making and waking them: past this bound
/// (well past any machine's cores) a count is a mistake, refused before a thread is made.
pub const MAX_THREADS: usize = 256;

fn pool(threads: usize) -> Result<Arc<rayon::ThreadPool>, WorldError> {
    if threads == 0 {
        return Err(WorldError::Threads {
            threads,
            reason: "a world needs at least one thread".into(),
        });
    }
    if threads > MAX_THREADS {
        return Err(WorldError::Threads {
            threads,
            reason: format!("a world runs on at most {MAX_THREADS} threads"),
        });
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("strata-lane-{i}"))
        .build()
        .map(Arc::new)
        .map_err(|e| WorldError::Threads {
            threads,
            reason: e.to_string(),
        })
}

impl World {
    /// A world with the standard classes (a `DataModel` with a `Workspace`), no components and
    /// no systems, running parallel systems on as many threads as the machine has.
    pub fn new() -> Result<Self, WorldError> {
        let threads = std::thread::available_parallelism().map_or(1, usize::from);
        Self::with_threads(threads)
    }

    /// [`World::new`] on `threads` threads.
    pub fn with_threads(threads: usize) -> Result<Self, WorldError> {
        Self::from_scene(Scene::new(None)?, threads)
    }

    /// [`World::with_threads`] with GUIDs and persistent ids drawn from `seed` rather than
    /// from a seed of the world's own: two worlds made with one seed and given the same
    /// operations hold the same identities (replays, comparisons across thread counts). Worlds
    /// that run side by side should not share a seed, or their identities would meet.
    pub fn with_seed(threads: usize, seed: u64) -> Result<Self, WorldError> {
        Self::from_scene(Scene::new(Some(seed))?, threads)
    }

    pub(crate) fn from_scene(mut scene: Scene, threads: usize) -> Result<Self, WorldError> {
        scene.set_pool(pool(threads)?);
        Ok(Self {
            scene,
            schedule: Schedule::new(),
            plan: Plan::default(),
            threads,
            events: FrameEvents::default(),
            listeners: Vec::new(),
            stopped: Vec::new(),
            waiting_intervals: Vec::new(),
        })
    }

    /// The scene.
    pub fn scene(&self) -> &Scene {
        &self.scene
    }

    /// The scene, for changing.
    pub fn scene_mut(&mut self) -> &mut Scene {
        &mut self.scene
    }

    /// How many threads parallel systems run on.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Runs parallel systems on `threads` threads from the next frame on. The result of a frame
    /// does not depend on it.
    pub fn set_threads(&mut self, threads: usize) -> Result<(), WorldError> {
        self.scene.set_pool(pool(threads)?);
        self.threads = threads;
        Ok(())
    }

    /// The fixed-step block's cadence: `seconds` per step, at most `max_steps` steps a frame.
    pub fn set_fixed_step(&mut self, seconds: f64, max_steps: u32) -> Result<(), WorldError> {
        self.schedule
            .set_fixed_step(FixedStep::new(seconds, max_steps)?);
        Ok(())
    }

    /// The fixed-step block's cadence.
    pub fn fixed_step(&self) -> FixedStep {
        self.schedule.fixed_step()
    }

    /// The time the fixed-step block carries to the next frame, in seconds.
    pub fn fixed_carried(&self) -> f64 {
        self.schedule.fixed_carried()
    }

    /// The frame counter, the fixed-step block and every interval system's wait, for a
    /// snapshot of the world.
    pub(crate) fn timing(&self) -> crate::rollback::Timing {
        let intervals = self
            .schedule
            .ids()
            .filter_map(|id| {
                let name = self.schedule.system(id).ok()?.name().to_owned();
                Some((name, self.schedule.interval_waited(id).ok()?))
            })
            .collect();
        crate::rollback::Timing {
            frame: self.frame(),
            time: self.scene.clock().time,
            fixed: self.schedule.fixed_step(),
            carried: self.schedule.fixed_carried(),
            intervals,
            waiting: self.waiting_intervals.clone(),
        }
    }

    /// Puts the timing a snapshot kept back: systems added since keep their waits, and those
    /// removed since are skipped. Waits the snapshot kept for systems not added yet wait again
    /// (and one whose system was added since goes to it).
    pub(crate) fn set_timing(&mut self, timing: &crate::rollback::Timing) {
        self.set_clock(timing.frame, timing.time, timing.fixed, timing.carried);
        for (name, waited) in &timing.intervals {
            // A system the snapshot knew and the world no longer has has nothing to restore.
            if let Some(id) = self.schedule.id(name) {
                let _ = self.schedule.set_interval_waited(id, *waited);
            }
        }
        self.set_waiting_intervals(timing.waiting.clone());
    }

    /// Every interval system's wait, and the waits kept for systems not added yet, by name in
    /// name order: what a save holds of the schedule's timing beside the fixed-step block.
    pub(crate) fn interval_waits(&self) -> Vec<(String, f64)> {
        let mut waits: Vec<(String, f64)> = self
            .schedule
            .ids()
            .filter_map(|id| {
                let system = self.schedule.system(id).ok()?;
                system.interval()?;
                Some((
                    system.name().to_owned(),
                    self.schedule.interval_waited(id).ok()?,
                ))
            })
            .chain(self.waiting_intervals.iter().cloned())
            .collect();
        waits.sort_by(|a, b| a.0.cmp(&b.0));
        waits
    }

    /// Keeps interval waits by system name (from a save or a snapshot): a system of that name
    /// the world has takes its wait now, the others wait for [`World::add_system`].
    pub(crate) fn set_waiting_intervals(&mut self, waits: Vec<(String, f64)>) {
        self.waiting_intervals = waits;
        let present: Vec<SystemId> = self.schedule.ids().collect();
        for id in present {
            self.resume_interval(id);
        }
    }

    /// Gives the system `id` the wait kept under its name, if one is.
    fn resume_interval(&mut self, id: SystemId) {
        let Ok(system) = self.schedule.system(id) else {
            return;
        };
        let name = system.name();
        if let Some(at) = self.waiting_intervals.iter().position(|(n, _)| n == name) {
            let (_, waited) = self.waiting_intervals.swap_remove(at);
            let _ = self.schedule.set_interval_waited(id, waited);
        }
    }

    /// Sets the frame counter, the simulated time and the fixed-step block as a save or a
    /// snapshot had them.
    pub(crate) fn set_clock(&mut self, frame: u64, time: f64, fixed: FixedStep, carried: f64) {
        self.scene.set_clock(Clock { frame, time });
        self.schedule.set_fixed_step(fixed);
        self.schedule.set_fixed_carried(carried);
    }

    /// The number of the next frame [`World::step`] runs (how many frames ran so far).
    pub fn frame(&self) -> u64 {
        self.scene.clock().frame
    }

    /// The simulated seconds the world has stepped: the sum of every frame's `dt` (kept by
    /// saves and snapshots). Scripts read it as `world.time`: during a frame, the time before
    /// that frame began.
    pub fn time(&self) -> f64 {
        self.scene.clock().time
    }

    /// Adds a system. Refused for a name already taken. A system named as one the world was
    /// saved with (or snapshotted with) goes on with the interval wait that one had: a loaded
    /// world keeps the saved waits by name until their systems are added again.
    pub fn add_system(&mut self, spec: SystemSpec) -> Result<SystemId, WorldError> {
        let id = self.schedule.add(spec.system)?;
        self.resume_interval(id);
        Ok(id)
    }

    /// Puts `spec` in the place of the system `id`: a new version of it (its code reloaded,
    /// say). The system keeps its id, name, statistics and interval wait; the body, access,
    /// order, phase and sets are the replacement's, and the plan is rebuilt before the next
    /// frame. A system the world stopped for running away ([`World::stopped_systems`]) runs
    /// again as the replacement. Refused, changing nothing, as [`World::add_system`] refuses a
    /// system, for an unknown `id`, and for a replacement of another name.
    pub fn replace_system(&mut self, id: SystemId, spec: SystemSpec) -> Result<(), WorldError> {
        self.check_replacement(id, &spec)?;
        let old = self.schedule.replace(id, spec.system)?;
        self.stopped.retain(|s| s.system != old.name());
        Ok(())
    }

    /// Whether [`World::replace_system`] would take `spec` in the place of `id`, changing
    /// nothing; for a caller that has its own step to take between the check and the
    /// replacement (a scripting layer keeping the new version's code).
    pub fn check_replacement(&self, id: SystemId, spec: &SystemSpec) -> Result<(), WorldError> {
        Ok(self.schedule.check_replacement(id, &spec.system)?)
    }

    /// Removes a system.
    pub fn remove_system(&mut self, id: SystemId) -> Result<(), WorldError> {
        let system = self.schedule.remove(id)?;
        self.stopped.retain(|s| s.system != system.name());
        Ok(())
    }

    /// Enables or disables a system. Enabling a system the world stopped
    /// ([`World::stopped_systems`]) resumes it.
    pub fn set_system_enabled(&mut self, id: SystemId, enabled: bool) -> Result<(), WorldError> {
        self.schedule.set_enabled(id, enabled)?;
        if enabled {
            let name = self.schedule.system(id)?.name().to_owned();
            self.stopped
                .retain(|s| !(s.system == name && s.part.is_none()));
        }
        Ok(())
    }

    /// The systems (and parts of systems) the world stopped because they ran away, in the
    /// order stopped.
    pub fn stopped_systems(&self) -> &[StoppedSystem] {
        &self.stopped
    }

    /// Stops what a runaway's failure asks for (see [`SystemError::RanAway`]); `failing` is
    /// the system whose run failed. Returns the names of the systems stopped, for the frame's
    /// events to charge the failure to.
    fn stop_runaways(
        &mut self,
        failing: SystemId,
        error: &SystemError,
        events: &mut FrameEvents,
    ) -> Vec<String> {
        let SystemError::RanAway(runaway) = error else {
            return Vec::new();
        };
        let crate::error::Runaway { error, stops } = &**runaway;
        let mut charged = Vec::new();
        for stop in stops {
            let target = match &stop.system {
                None => Some(failing),
                Some(name) => self.schedule.id(name),
            };
            // A holder that is no system (a setup script's leftovers) has nothing to stop.
            let Some(target) = target else {
                continue;
            };
            let Ok(name) = self.schedule.system(target).map(|s| s.name().to_owned()) else {
                continue;
            };
            charged.push(name.clone());
            if self
                .stopped
                .iter()
                .any(|s| s.system == name && (s.part.is_none() || s.part == stop.part))
            {
                continue;
            }
            let Ok(body) = self.schedule.body_mut(target) else {
                continue;
            };
            match &stop.part {
                None => {
                    if stop.release {
                        body.inner.release();
                    }
                    let _ = self.schedule.set_enabled(target, false);
                }
                Some(part) => {
                    if !body.inner.stop_part(part) {
                        continue;
                    }
                }
            }
            let stopped = StoppedSystem {
                system: name,
                part: stop.part.clone(),
                frame: self.frame(),
                reason: error.to_string(),
            };
            tracing::warn!(system = %stopped.system, part = ?stopped.part, reason = %stopped.reason, "stopped a runaway system");
            events.stopped.push(stopped.clone());
            self.stopped.push(stopped);
        }
        charged
    }

    /// The system named `name`.
    pub fn system_id(&self, name: &str) -> Option<SystemId> {
        self.schedule.id(name)
    }

    /// Shuffles the order of systems that no declaration orders, by `seed` (`None`: hierarchy
    /// order again); see `Schedule::set_shuffle`. A test run under several seeds finds results
    /// that depend on an order the systems never declared.
    pub fn set_schedule_shuffle(&mut self, seed: Option<u64>) {
        self.schedule.set_shuffle(seed);
    }

    /// Shuffles how parallel runs meet the pool, by `seed` (`None`: no shuffle). Each wave of
    /// parallel systems and each group script's execution groups hand their jobs to the pool
    /// in a seeded order, hold each job a seeded while (up to a few hundred microseconds)
    /// before it starts, and commit their lanes' writes in the order the lanes finished. A
    /// frame's result must not change: a test stepping a world under several seeds, against
    /// one without, checks that neither lane assignment nor finishing order leaks into it.
    ///
    /// ```
    /// # use strata::prelude::*;
    /// let mut world = World::with_seed(2, 7).unwrap();
    /// world.set_lane_shuffle(Some(3));
    /// world.step(1.0 / 60.0).unwrap();
    /// ```
    pub fn set_lane_shuffle(&mut self, seed: Option<u64>) {
        self.scene.set_lane_shuffle(seed);
    }

    /// The schedule's plan (built first if systems changed): order, cycles, diagnostics,
    /// reachability, `dump` and `to_dot`.
    pub fn plan(&mut self) -> &Plan {
        self.schedule.build()
    }

    /// Every system with its statistics, in scheduled order (then the unscheduled ones).
    pub fn stats(&self) -> Vec<(SystemId, String, SystemStats)> {
        let plan = self.schedule.plan();
        let mut stats: Vec<(SystemId, String, SystemStats)> = self
            .system_stats()
            .map(|(id, name, stats)| (id, name.to_owned(), *stats))
            .collect();
        stats.sort_by_key(|(id, ..)| (plan.position(*id).unwrap_or(u32::MAX), id.index()));
        stats
    }

    /// Each system's statistics with its name, in registration order, borrowed: for a
    /// caller reading them every frame (an explorer's timings) without copying names.
    pub fn system_stats(&self) -> impl Iterator<Item = (SystemId, &str, &SystemStats)> + '_ {
        self.schedule.ids().filter_map(|id| {
            let name = self.schedule.system(id).ok()?.name();
            Some((id, name, self.schedule.stats(id).ok()?))
        })
    }

    /// [`World::stats`] as a text table: runs, mean and longest duration, reads, writes,
    /// visited rows and errors per system.
    pub fn stats_table(&self) -> String {
        crate::stats::table(&self.stats(), &self.stopped)
    }

    /// Listens to the arena's events: called at the end of every frame for each event, with
    /// the hierarchy to read; for a destruction, inside a lifecycle scope on each destroyed
    /// root, so the destroyed subtree is readable (never writable) while the listener runs.
    /// A listener that panics is stopped for that event and reported in the frame's
    /// [`FrameEvents::errors`]; the frame, and later ones, go on.
    pub fn on_lifecycle(&mut self, listener: impl FnMut(&Event, &Snapshot) + Send + 'static) {
        self.listeners.push(Box::new(listener));
    }

    /// What the last frame did.
    pub fn events(&self) -> &FrameEvents {
        &self.events
    }

    /// Runs one frame of `dt` seconds (see the module docs) and returns what it did. Refused,
    /// changing nothing, for a negative or non-finite `dt`.
    pub fn step(&mut self, dt: f64) -> Result<&FrameEvents, WorldError> {
        if !(dt.is_finite() && dt >= 0.0) {
            return Err(strata_scheduler::ScheduleError::InvalidDelta(dt).into());
        }
        let Clock { frame, time } = self.scene.clock();
        let _span = tracing::info_span!("world_frame", frame, dt).entered();
        let mut events = FrameEvents {
            frame,
            ..FrameEvents::default()
        };
        self.scene.sync_definitions();
        if self.schedule.is_stale() {
            self.plan = self.schedule.build().clone();
        }
        let Self {
            scene,
            schedule,
            plan,
            ..
        } = self;
        let mut runaways = Runaways::default();
        let report = schedule.run_frame_grouped(dt, Body::is_parallel, |group| {
            run_group(scene, plan, frame, group, &mut runaways)
        })?;
        events.fixed_steps = report.fixed_steps;
        events.fixed_steps_dropped = report.fixed_steps_dropped;
        for (id, error) in report.errors {
            let name = self
                .schedule
                .system(id)
                .map_or_else(|_| format!("{id:?}"), |s| s.name().to_owned());
            self.stop_runaways(id, &error, &mut events);
            events.errors.push((name, error));
        }
        // Failures of systems that ran out of memory another system held are that system's.
        for (id, error) in runaways.charged_elsewhere {
            let charged = self.stop_runaways(id, &error, &mut events);
            let name = charged.into_iter().next().unwrap_or_else(|| {
                self.schedule
                    .system(id)
                    .map_or_else(|_| format!("{id:?}"), |s| s.name().to_owned())
            });
            events.errors.push((name, error));
        }
        self.end_frame(&mut events)?;
        // The replaced frame's event list lends its memory to the next frame's drain.
        let replaced = std::mem::replace(&mut self.events, events);
        self.scene.recycle_events(replaced.lifecycle);
        self.scene.set_clock(Clock {
            frame: frame + 1,
            time: time + dt,
        });
        Ok(&self.events)
    }

    /// The end of a frame: drain the arena (reclaimed slots reported to the store with it),
    /// deliver its events, take what the frame collected (prints, commits, the store's events,
    /// definition syncs and adoptions) and clear the store's frame state.
    fn end_frame(&mut self, events: &mut FrameEvents) -> Result<(), WorldError> {
        let _span = tracing::debug_span!("frame_end").entered();
        let lifecycle = self.scene.drain_arena()?;
        for event in &lifecycle {
            self.deliver(event, &mut events.errors)?;
        }
        let take = self.scene.take_frame(lifecycle);
        events.lifecycle = take.lifecycle;
        events.prints = take.prints;
        events.commits = take.commits;
        events.components = take.components;
        events.definitions = take.definitions;
        events.adoptions = take.adoptions;
        Ok(())
    }

    /// Hands one arena event to every listener, in a lifecycle scope on each destroyed root.
    /// A listener that panics is stopped there and reported in `errors` as
    /// `lifecycle listener #N` (N its place in registration order, from 0); the scope is closed
    /// and the other listeners still hear the event.
    fn deliver(
        &mut self,
        event: &Event,
        errors: &mut Vec<(String, SystemError)>,
    ) -> Result<(), WorldError> {
        if self.listeners.is_empty() {
            return Ok(());
        }
        let roots: Vec<InstanceId> = match event {
            Event::Destroyed { subtree } => vec![subtree.root()],
            Event::DestroyedMany(batch) => batch.roots.iter().map(|(root, _)| *root).collect(),
            _ => Vec::new(),
        };
        let listeners = &mut self.listeners;
        let mut hear = |view: &Snapshot| {
            for (n, listener) in listeners.iter_mut().enumerate() {
                if let Err(panic) = catch_unwind(AssertUnwindSafe(|| listener(event, view))) {
                    errors.push((
                        format!("lifecycle listener #{n}"),
                        SystemError::ListenerPanicked(panic_message(panic.as_ref())),
                    ));
                }
            }
        };
        if roots.is_empty() {
            hear(self.scene.arena());
            return Ok(());
        }
        for root in roots {
            self.scene.with_lifecycle_scope(root, &mut hear)?;
        }
        Ok(())
    }
}

/// The message of a caught panic.
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(message) = panic.downcast_ref::<&str>() {
        (*message).to_owned()
    } else if let Some(message) = panic.downcast_ref::<String>() {
        message.clone()
    } else {
        "a panic without a message".to_owned()
    }
}

/// The runaways of a frame so far: systems stopped earlier in the frame (not run again in it,
/// as a fixed step might), and failures the world charges to another system than the one
/// that failed (it ran out of memory another held).
#[derive(Default)]
struct Runaways {
    halted: hashbrown::HashSet<SystemId>,
    charged_elsewhere: Vec<(SystemId, SystemError)>,
}

impl Runaways {
    /// Whether a system stopped earlier in the frame.
    fn halted(&self, id: SystemId) -> bool {
        self.halted.contains(&id)
    }

    /// What the scheduler records of a run's result: a runaway that stops the failing system
    /// halts it for the rest of the frame; one that stops only others is charged to them and
    /// counts as no failure of the system that met it.
    fn sort(&mut self, id: SystemId, result: Result<(), SystemError>) -> Result<(), SystemError> {
        let Err(SystemError::RanAway(runaway)) = &result else {
            return result;
        };
        let stops = &runaway.stops;
        if stops.iter().any(|s| s.system.is_none() && s.part.is_none()) {
            self.halted.insert(id);
        }
        if stops.iter().all(|s| s.system.is_some()) {
            if let Err(error) = result {
                self.charged_elsewhere.push((id, error));
            }
            return Ok(());
        }
        result
    }
}

/// Runs one group the schedule hands over: a serial system alone with the whole scene, or a
/// run of parallel systems on the pool, committed after they all finished.
fn run_group(
    scene: &mut Scene,
    plan: &Plan,
    frame: u64,
    group: &mut [Due<'_, Body>],
    runaways: &mut Runaways,
) -> GroupResults {
    if let [due] = group
        && !due.body().is_parallel()
    {
        if runaways.halted(due.id()) {
            return GroupResults::One(Some(Ok(())));
        }
        let result = run_serial(scene, frame, due);
        return GroupResults::One(Some(runaways.sort(due.id(), result)));
    }
    // Waves: a system the plan orders after a member of the current wave starts the next one,
    // so it sees that member's writes; the rest of a run shares one commit.
    let mut results = Vec::with_capacity(group.len());
    let mut start = 0;
    while start < group.len() {
        let mut end = start + 1;
        while end < group.len() {
            let next = group[end].id();
            if group[start..end]
                .iter()
                .any(|member| plan.precedes(member.id(), next))
            {
                break;
            }
            end += 1;
        }
        let wave = &mut group[start..end];
        let ids: Vec<SystemId> = wave.iter().map(Due::id).collect();
        let wave_results = run_parallel(scene, plan, wave, runaways);
        results.extend(
            ids.into_iter()
                .zip(wave_results)
                .map(|(id, result)| runaways.sort(id, result)),
        );
        start = end;
    }
    GroupResults::Many(results.into_iter())
}

/// The results of one group's systems, in scheduled order: a serial system's without an
/// allocation.
enum GroupResults {
    One(Option<Result<(), SystemError>>),
    Many(std::vec::IntoIter<Result<(), SystemError>>),
}

impl Iterator for GroupResults {
    type Item = Result<(), SystemError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Self::One(result) => result.take(),
            Self::Many(results) => results.next(),
        }
    }
}

fn run_serial(scene: &mut Scene, frame: u64, due: &mut Due<'_, Body>) -> Result<(), SystemError> {
    let _span = tracing::info_span!("system", name = due.name()).entered();
    let (body, run) = due.parts();
    let dt = run.dt();
    scene.take_counts();
    let outcome = {
        let mut ctx = serial_ctx(scene, dt, frame);
        catch_unwind(AssertUnwindSafe(|| body.inner.run(&mut ctx)))
    };
    let (reads, writes, rows) = scene.take_counts();
    run.add_component_reads(reads);
    run.add_field_writes(writes);
    run.add_visited_rows(rows);
    match outcome {
        Ok(result) => result,
        Err(panic) => Err(SystemError::Panicked(panic_message(panic.as_ref()))),
    }
}

/// What one lane hands back: its result, its overlay, and its counts.
struct Lane<'w> {
    result: Result<(), SystemError>,
    overlay: Overlay<'w>,
    rows: u64,
    prints: Vec<String>,
    took: std::time::Duration,
}

fn run_parallel(
    scene: &mut Scene,
    plan: &Plan,
    group: &mut [Due<'_, Body>],
    runaways: &Runaways,
) -> Vec<Result<(), SystemError>> {
    let clock = scene.clock();
    let query_caching = scene.query_caching();
    // The wave's first system tells a frame's waves apart for a lane shuffle.
    let run = group.first().map_or(0, |due| u64::from(due.id().index()));
    let oracle = SystemOrder(plan.order_oracle());
    let (_, (results, prints)) = scene.run_wave(&oracle, |wave| {
        let arena = wave.arena();
        let jobs: Vec<(&mut Due<'_, Body>, bool)> = group
            .iter_mut()
            .map(|due| {
                let halted = runaways.halted(due.id());
                (due, halted)
            })
            .collect();
        let (lanes, arrival) = wave.run(run, jobs, |(due, halted)| {
            let id = due.id();
            let _span = tracing::info_span!("system", name = due.name()).entered();
            let rank = WriterRank::system(
                u64::from(plan.position(id).unwrap_or(u32::MAX)),
                u64::from(id.index()),
            );
            let (body, run) = due.parts();
            let started = Instant::now();
            let mut ctx = ParCtx {
                arena,
                overlay: wave.overlay(rank),
                writes: Arc::clone(&body.writes),
                any_write: body.any_write,
                reads: Arc::clone(&body.reads),
                any_read: body.any_read,
                dt: run.dt(),
                frame: clock.frame,
                time: clock.time,
                rows: 0,
                prints: Vec::new(),
                query_caching,
            };
            let outcome = if halted {
                Ok(Ok(()))
            } else {
                catch_unwind(AssertUnwindSafe(|| body.inner.run_parallel(&mut ctx)))
            };
            let result = match outcome {
                Ok(result) => result,
                Err(panic) => Err(SystemError::Panicked(panic_message(panic.as_ref()))),
            };
            let rows = ctx.rows;
            let prints = std::mem::take(&mut ctx.prints);
            Lane {
                result,
                overlay: ctx.overlay,
                rows,
                prints,
                took: started.elapsed(),
            }
        });
        // Statistics, prints and results go in scheduled order; the commit takes the overlays
        // in the order the lanes finished.
        let mut overlays = Vec::with_capacity(lanes.len());
        let mut results = Vec::with_capacity(lanes.len());
        let mut prints = Vec::with_capacity(lanes.len());
        for (due, lane) in group.iter_mut().zip(lanes) {
            let (_, run) = due.parts();
            run.add_component_reads(lane.overlay.reads());
            run.add_field_writes(lane.overlay.writes());
            run.add_visited_rows(lane.rows);
            due.set_duration(lane.took);
            prints.push(lane.prints);
            overlays.push(Some(lane.overlay));
            results.push(lane.result);
        }
        let overlays = arrival
            .iter()
            .filter_map(|job| overlays[*job].take())
            .collect();
        (overlays, (results, prints))
    });
    for lane in prints {
        scene.add_prints(lane);
    }
    results
}
