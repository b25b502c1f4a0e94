//! The schedule: systems with their bodies, the current plan, and running frames.
//!
//! Invariant: the plan is rebuilt from the systems whenever one was added, removed, enabled or
//! disabled since the last build ([`Schedule::build`], and before every frame), so a frame always
//! runs the plan of the systems as they are. A frame calls each enabled, scheduled system's body
//! in scheduled order, the fixed block's systems once per fixed step; an interval system's body
//! is called at most once per pass over its stage. A body's error is counted and returned and
//! never stops the systems after it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use hashbrown::HashMap;

use crate::diagnostics::Severity;
use crate::error::ScheduleError;
use crate::plan::{Plan, build};
use crate::stats::SystemStats;
use crate::system::{AsSystemId, Phase, Stage, System, SystemId};

/// Tolerance on comparisons of accumulated time, in seconds, so that sums of decimal steps such
/// as 0.1 + 0.2 + 0.2 count as reaching 0.5.
const TIME_EPSILON: f64 = 1e-9;

/// The fixed-step block's cadence: its step length and the most steps one frame may run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FixedStep {
    seconds: f64,
    max_steps: u32,
}

impl FixedStep {
    /// 60 steps per second, at most 4 per frame: what [`Schedule::new`] uses.
    pub const HZ_60: FixedStep = FixedStep {
        seconds: 1.0 / 60.0,
        max_steps: 4,
    };

    /// Steps of `seconds` each, at most `max_steps` per frame.
    ///
    /// # Errors
    ///
    /// [`ScheduleError::InvalidFixedStep`] when `seconds` is not positive and finite, or
    /// `max_steps` is zero.
    pub fn new(seconds: f64, max_steps: u32) -> Result<FixedStep, ScheduleError> {
        if !(seconds.is_finite() && seconds > 0.0) || max_steps == 0 {
            return Err(ScheduleError::InvalidFixedStep { seconds, max_steps });
        }
        Ok(FixedStep { seconds, max_steps })
    }

    /// The step length in seconds.
    pub fn seconds(self) -> f64 {
        self.seconds
    }

    /// The most steps one frame runs.
    pub fn max_steps(self) -> u32 {
        self.max_steps
    }
}

/// What a body sees of its run and how it reports the work it did.
#[derive(Debug)]
pub struct RunCtx {
    system: SystemId,
    stage: Stage,
    dt: f64,
    component_reads: u64,
    field_writes: u64,
    visited_rows: u64,
}

impl RunCtx {
    /// The system being run.
    pub fn system(&self) -> SystemId {
        self.system
    }

    /// The stage it runs in.
    pub fn stage(&self) -> Stage {
        self.stage
    }

    /// The elapsed time this run stands for, in seconds: the frame's time, the fixed step, or
    /// for an interval system the time accumulated since its previous run.
    pub fn dt(&self) -> f64 {
        self.dt
    }

    /// Reports `n` component reads.
    pub fn add_component_reads(&mut self, n: u64) {
        self.component_reads += n;
    }

    /// Reports `n` field writes.
    pub fn add_field_writes(&mut self, n: u64) {
        self.field_writes += n;
    }

    /// Reports `n` visited rows.
    pub fn add_visited_rows(&mut self, n: u64) {
        self.visited_rows += n;
    }
}

/// The time since `clock`, which becomes now.
fn lap(clock: &mut Instant) -> Duration {
    let now = Instant::now();
    let elapsed = now.saturating_duration_since(*clock);
    *clock = now;
    elapsed
}

/// One due system of a group handed to [`Schedule::run_frame_grouped`]'s runner.
#[derive(Debug)]
pub struct Due<'a, B> {
    id: SystemId,
    name: Arc<str>,
    body: &'a mut B,
    ctx: RunCtx,
    took: Option<Duration>,
}

impl<B> Due<'_, B> {
    /// The system.
    pub fn id(&self) -> SystemId {
        self.id
    }

    /// The system's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its body.
    pub fn body(&self) -> &B {
        self.body
    }

    /// Its body and its run context, apart, so a runner can hand both to the body.
    pub fn parts(&mut self) -> (&mut B, &mut RunCtx) {
        (self.body, &mut self.ctx)
    }

    /// The run context.
    pub fn ctx(&self) -> &RunCtx {
        &self.ctx
    }

    /// Records how long this system's own call took (on a parallel lane, say), in place of the
    /// group's wall time.
    pub fn set_duration(&mut self, took: Duration) {
        self.took = Some(took);
    }
}

/// What one frame did.
#[derive(Debug)]
pub struct FrameReport<E> {
    /// Body calls made (an interval system that was not due is not counted).
    pub runs: u32,
    /// Fixed steps run.
    pub fixed_steps: u32,
    /// Whole fixed steps owed beyond the frame's limit, dropped rather than carried (the
    /// fraction of a step left over is carried).
    pub fixed_steps_dropped: u64,
    /// The errors bodies returned, in run order.
    pub errors: Vec<(SystemId, E)>,
}

/// A system as the schedule holds it, with its running state.
#[derive(Debug)]
struct Slot<B> {
    system: System<B>,
    stats: SystemStats,
    /// Stage time accumulated towards the next interval run.
    waited: f64,
}

impl<B> Slot<B> {
    /// Whether the system is due after `dt` more seconds of its stage's time, and the time its
    /// run stands for: `dt` for a system without an interval; for one with an interval, what it
    /// waited once that reaches the interval (the wait then starts again from zero), else
    /// `None` with the wait moved on.
    fn due(&mut self, dt: f64) -> Option<f64> {
        let Some(interval) = self.system.interval else {
            return Some(dt);
        };
        self.waited += dt;
        (self.waited + TIME_EPSILON >= interval).then(|| std::mem::take(&mut self.waited))
    }
}

/// Systems with bodies of type `B`, their plan, and the frame loop that runs them.
///
/// The schedule never calls a body itself: [`Schedule::run_frame`] hands each due body to the
/// caller's closure with a [`RunCtx`], so bodies can be closures, script handles or plain data,
/// and this crate needs nothing from the layers that run them.
#[derive(Debug)]
pub struct Schedule<B> {
    slots: Vec<Option<Slot<B>>>,
    /// Live system names.
    names: HashMap<Arc<str>, SystemId>,
    /// Live set names, with how many live systems belong to each.
    sets: HashMap<Arc<str>, usize>,
    plan: Plan,
    stale: bool,
    fixed: FixedStep,
    /// Time carried into the next frame's fixed block (less than one step).
    fixed_carried: f64,
    /// The seed that shuffles the order of systems no declaration orders, when set.
    shuffle: Option<u64>,
}

impl<B> Default for Schedule<B> {
    fn default() -> Self {
        Schedule::new()
    }
}

impl<B> Schedule<B> {
    /// An empty schedule with a fixed step of [`FixedStep::HZ_60`].
    pub fn new() -> Schedule<B> {
        Schedule::with_fixed_step(FixedStep::HZ_60)
    }

    /// An empty schedule with this fixed step.
    pub fn with_fixed_step(fixed: FixedStep) -> Schedule<B> {
        Schedule {
            slots: Vec::new(),
            names: HashMap::new(),
            sets: HashMap::new(),
            plan: Plan::default(),
            stale: false,
            fixed,
            fixed_carried: 0.0,
            shuffle: None,
        }
    }

    /// Adds a system and returns its id.
    ///
    /// # Errors
    ///
    /// Refused when the name (or a set name) is empty, another live system has the name, the name
    /// is a set's or a set is named like a system, or the interval is not a positive, finite number
    /// of seconds.
    pub fn add(&mut self, system: System<B>) -> Result<SystemId, ScheduleError> {
        self.check_declarations(&system)?;
        if self.sets.contains_key(&system.name) {
            return Err(ScheduleError::NameConflict(system.name.to_string()));
        }
        if self.names.contains_key(&system.name) {
            return Err(ScheduleError::DuplicateName(system.name.to_string()));
        }
        let id = u32::try_from(self.slots.len())
            .map(SystemId::from_index)
            .map_err(|_| ScheduleError::TooManySystems)?;
        self.names.insert(Arc::clone(&system.name), id);
        for set in &system.sets {
            *self.sets.entry(Arc::clone(set)).or_default() += 1;
        }
        self.slots.push(Some(Slot {
            system,
            stats: SystemStats::default(),
            waited: 0.0,
        }));
        self.stale = true;
        Ok(id)
    }

    /// Removes a system and gives it back; its id is never used again.
    ///
    /// # Errors
    ///
    /// [`ScheduleError::UnknownSystem`] when `id` names no live system of this schedule.
    pub fn remove(&mut self, id: SystemId) -> Result<System<B>, ScheduleError> {
        let slot = self
            .slots
            .get_mut(id.index() as usize)
            .and_then(Option::take)
            .ok_or(ScheduleError::UnknownSystem(id))?;
        self.names.remove(&slot.system.name);
        for set in &slot.system.sets {
            if let Some(count) = self.sets.get_mut(set) {
                *count -= 1;
                if *count == 0 {
                    self.sets.remove(set);
                }
            }
        }
        self.stale = true;
        Ok(slot.system)
    }

    /// What a system declares, checked against itself and the live systems' names: a name and
    /// set names that are not empty, an interval that is a positive, finite number of seconds,
    /// and no set named like itself or like a live system.
    fn check_declarations(&self, system: &System<B>) -> Result<(), ScheduleError> {
        if system.name.is_empty() || system.sets.iter().any(|set| set.is_empty()) {
            return Err(ScheduleError::EmptyName);
        }
        if let Some(seconds) = system.interval
            && !(seconds.is_finite() && seconds > 0.0)
        {
            return Err(ScheduleError::InvalidInterval {
                name: system.name.to_string(),
                seconds,
            });
        }
        if system.sets.contains(&system.name) {
            return Err(ScheduleError::NameConflict(system.name.to_string()));
        }
        if let Some(set) = system.sets.iter().find(|set| self.names.contains_key(*set)) {
            return Err(ScheduleError::NameConflict(set.to_string()));
        }
        Ok(())
    }

    /// Whether [`Schedule::replace`] would take `system` in the place of `id`, without
    /// changing anything: for a caller with its own work to do between the check and the
    /// replacement that must not be left half done.
    ///
    /// # Errors
    ///
    /// What [`Schedule::replace`] would refuse.
    pub fn check_replacement(&self, id: SystemId, system: &System<B>) -> Result<(), ScheduleError> {
        let current = self.slot(id)?;
        if system.name != current.system.name {
            return Err(ScheduleError::ReplacementRenames {
                name: current.system.name.to_string(),
                replacement: system.name.to_string(),
            });
        }
        self.check_declarations(system)
    }

    /// Puts `system` in the place of the live system `id` (a new version of it, say, whose
    /// code changed) and gives the old one back. The replacement keeps the id, the name, the
    /// statistics and the interval's accumulated wait; its order, phase, sets, interval and
    /// enabled state are its own, and the plan is rebuilt before the next frame.
    ///
    /// # Errors
    ///
    /// Refused, changing nothing, as [`Schedule::add`] refuses a system (an empty name or set
    /// name, an invalid interval, a set named like a system), for an `id` that names no live
    /// system, and for a replacement of another name ([`ScheduleError::ReplacementRenames`]).
    pub fn replace(&mut self, id: SystemId, system: System<B>) -> Result<System<B>, ScheduleError> {
        self.check_replacement(id, &system)?;
        for set in &system.sets {
            *self.sets.entry(Arc::clone(set)).or_default() += 1;
        }
        let slot = self.slot_mut(id)?;
        let old = std::mem::replace(&mut slot.system, system);
        for set in &old.sets {
            if let Some(count) = self.sets.get_mut(set) {
                *count -= 1;
                if *count == 0 {
                    self.sets.remove(set);
                }
            }
        }
        self.stale = true;
        Ok(old)
    }

    /// Enables or disables a system. A disabled system is left out of the plan and keeps its
    /// interval's accumulated time until enabled again.
    ///
    /// # Errors
    ///
    /// [`ScheduleError::UnknownSystem`] when `id` names no live system of this schedule.
    pub fn set_enabled(&mut self, id: SystemId, enabled: bool) -> Result<(), ScheduleError> {
        let slot = self.slot_mut(id)?;
        if slot.system.enabled != enabled {
            slot.system.enabled = enabled;
            self.stale = true;
        }
        Ok(())
    }

    /// The id of the live system named `name`.
    pub fn id(&self, name: &str) -> Option<SystemId> {
        self.names.get(name).copied()
    }

    /// A live system.
    ///
    /// # Errors
    ///
    /// [`ScheduleError::UnknownSystem`] when `id` names no live system of this schedule.
    pub fn system(&self, id: SystemId) -> Result<&System<B>, ScheduleError> {
        self.slot(id).map(|slot| &slot.system)
    }

    /// A live system's body, mutably.
    ///
    /// # Errors
    ///
    /// [`ScheduleError::UnknownSystem`] when `id` names no live system of this schedule.
    pub fn body_mut(&mut self, id: SystemId) -> Result<&mut B, ScheduleError> {
        self.slot_mut(id).map(|slot| &mut slot.system.body)
    }

    /// The ids of the live systems, in registration order.
    pub fn ids(&self) -> impl Iterator<Item = SystemId> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, slot)| slot.is_some())
            .map(|(i, _)| SystemId::from_index(i as u32))
    }

    /// How many live systems there are.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether there are no live systems.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// A system's statistics.
    ///
    /// # Errors
    ///
    /// [`ScheduleError::UnknownSystem`] when `id` names no live system of this schedule.
    pub fn stats(&self, id: SystemId) -> Result<&SystemStats, ScheduleError> {
        self.slot(id).map(|slot| &slot.stats)
    }

    /// Clears every system's statistics.
    pub fn reset_stats(&mut self) {
        for slot in self.slots.iter_mut().flatten() {
            slot.stats = SystemStats::default();
        }
    }

    /// The fixed step.
    pub fn fixed_step(&self) -> FixedStep {
        self.fixed
    }

    /// Changes the fixed step; the time carried towards the next step is kept.
    pub fn set_fixed_step(&mut self, fixed: FixedStep) {
        self.fixed = fixed;
    }

    /// Time carried towards the next fixed step, in seconds (less than one step).
    pub fn fixed_carried(&self) -> f64 {
        self.fixed_carried
    }

    /// Sets the time the fixed block carries into the next frame (restoring a saved or
    /// snapshotted schedule); a negative or non-finite value counts as none.
    pub fn set_fixed_carried(&mut self, carried: f64) {
        self.fixed_carried = if carried.is_finite() && carried >= 0.0 {
            carried
        } else {
            0.0
        };
    }

    /// Time an interval system has accumulated towards its next run, in seconds.
    ///
    /// # Errors
    ///
    /// [`ScheduleError::UnknownSystem`] when `id` names no live system of this schedule.
    pub fn interval_waited(&self, id: SystemId) -> Result<f64, ScheduleError> {
        self.slot(id).map(|slot| slot.waited)
    }

    /// Sets the time an interval system has accumulated towards its next run (restoring a
    /// snapshotted schedule); a negative or non-finite value counts as none.
    ///
    /// # Errors
    ///
    /// [`ScheduleError::UnknownSystem`] when `id` names no live system of this schedule.
    pub fn set_interval_waited(&mut self, id: SystemId, waited: f64) -> Result<(), ScheduleError> {
        let slot = self.slot_mut(id)?;
        slot.waited = if waited.is_finite() && waited >= 0.0 {
            waited
        } else {
            0.0
        };
        Ok(())
    }

    /// Shuffles the order of systems that no declaration orders (`Some(seed)`), or goes back
    /// to hierarchy order (`None`). Declared order (`before`, `after`, sets, phases) always
    /// holds; among systems free to run in either order, a seed picks one order, the same in
    /// every process. Meant for tests: a world whose result changes with the seed depends on an
    /// order it never declared.
    pub fn set_shuffle(&mut self, seed: Option<u64>) {
        if self.shuffle != seed {
            self.shuffle = seed;
            self.stale = true;
        }
    }

    /// Rebuilds the plan if a system was added, removed, enabled or disabled since the last
    /// build, and returns it.
    pub fn build(&mut self) -> &Plan {
        if self.stale {
            let systems: Vec<Option<&System<B>>> = self
                .slots
                .iter()
                .map(|slot| slot.as_ref().map(|slot| &slot.system))
                .collect();
            self.plan = build(&systems, self.shuffle);
            self.stale = false;
            for diagnostic in self.plan.diagnostics() {
                match diagnostic.severity() {
                    Severity::Error => tracing::warn!(%diagnostic, "schedule build"),
                    Severity::Warning => tracing::info!(%diagnostic, "schedule build"),
                    Severity::Info => tracing::debug!(%diagnostic, "schedule build"),
                }
            }
        }
        &self.plan
    }

    /// The plan of the last build; see [`Schedule::is_stale`].
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Whether systems changed since the last build.
    pub fn is_stale(&self) -> bool {
        self.stale
    }

    /// [`Plan::is_ordered`] on the last build's plan.
    pub fn is_ordered(&self, a: impl AsSystemId, b: impl AsSystemId) -> bool {
        self.plan.is_ordered(a, b)
    }

    /// [`Plan::position`] on the last build's plan: the system's scheduled position.
    pub fn position(&self, id: impl AsSystemId) -> Option<u32> {
        self.plan.position(id)
    }

    /// Runs one frame that lasted `dt` seconds, rebuilding the plan first if it is stale.
    ///
    /// Stages run in [`Stage::ALL`] order. Frame stages pass `dt` to their systems. The fixed
    /// block adds `dt` to the time carried from earlier frames and runs `floor(time / step)`
    /// steps, at most [`FixedStep::max_steps`], each passing the step length to `FixedFirst`
    /// through `FixedLast`; the fraction of a step left over is carried to the next frame and
    /// whole steps beyond the limit are dropped (counted in the report). An interval system adds
    /// its stage's time to what it has waited and, once that reaches its interval, runs once with
    /// all of it and starts waiting from zero again; a long frame never makes it run twice.
    ///
    /// `run` is called with each due system's id, its body and a [`RunCtx`]; what the context
    /// records and the call's wall time go into the system's statistics. An `Err` is counted
    /// in the statistics and returned in the report; the frame goes on.
    ///
    /// Refused, changing nothing, when `dt` is negative or not finite.
    ///
    /// # Errors
    ///
    /// [`ScheduleError::InvalidDelta`] when `dt` is negative or not finite.
    pub fn run_frame<E>(
        &mut self,
        dt: f64,
        mut run: impl FnMut(SystemId, &mut B, &mut RunCtx) -> Result<(), E>,
    ) -> Result<FrameReport<E>, ScheduleError> {
        self.frame(dt, |schedule, stage, dt, report| {
            schedule.run_stage(stage, dt, &mut run, report);
        })
    }

    /// What every frame does around its stages: checks `dt`, rebuilds a stale plan, moves the
    /// fixed-step block on, then hands each stage pass to `pass` with its stage time, in
    /// [`Stage::ALL`] order with the fixed block's steps where its first stage stands.
    fn frame<E>(
        &mut self,
        dt: f64,
        mut pass: impl FnMut(&mut Self, Stage, f64, &mut FrameReport<E>),
    ) -> Result<FrameReport<E>, ScheduleError> {
        if !(dt.is_finite() && dt >= 0.0) {
            return Err(ScheduleError::InvalidDelta(dt));
        }
        let _frame = tracing::debug_span!("frame", dt).entered();
        self.build();
        let mut report = FrameReport {
            runs: 0,
            fixed_steps: 0,
            fixed_steps_dropped: 0,
            errors: Vec::new(),
        };
        let steps = self.advance_fixed(dt, &mut report);
        let step = self.fixed.seconds;
        for stage in Stage::ALL {
            match stage {
                Stage::Frame(_) => pass(self, stage, dt, &mut report),
                // The fixed block runs whole, step after step, where its first stage stands.
                Stage::Fixed(Phase::First) => {
                    for _ in 0..steps {
                        for phase in Phase::ALL {
                            pass(self, Stage::Fixed(phase), step, &mut report);
                        }
                    }
                }
                Stage::Fixed(_) => {}
            }
        }
        Ok(report)
    }

    /// One pass over one stage's scheduled systems with `dt` seconds of stage time.
    fn run_stage<E>(
        &mut self,
        stage: Stage,
        dt: f64,
        run: &mut impl FnMut(SystemId, &mut B, &mut RunCtx) -> Result<(), E>,
        report: &mut FrameReport<E>,
    ) {
        let _stage = tracing::debug_span!("stage", ?stage).entered();
        let order = self.plan.stage_order(stage);
        if order.is_empty() {
            return;
        }
        // One clock read per call, as in `run_grouped`.
        let mut clock = Instant::now();
        for &id in order {
            let Some(slot) = self
                .slots
                .get_mut(id.index() as usize)
                .and_then(Option::as_mut)
            else {
                continue;
            };
            let Some(run_dt) = slot.due(dt) else {
                continue;
            };
            let mut ctx = RunCtx {
                system: id,
                stage,
                dt: run_dt,
                component_reads: 0,
                field_writes: 0,
                visited_rows: 0,
            };
            let span = tracing::trace_span!("system", name = &*slot.system.name, id = id.index());
            let result = span.in_scope(|| run(id, &mut slot.system.body, &mut ctx));
            let took = lap(&mut clock);
            slot.stats.record(
                took,
                ctx.component_reads,
                ctx.field_writes,
                ctx.visited_rows,
                result.is_err(),
            );
            report.runs += 1;
            if let Err(error) = result {
                tracing::debug!(system = &*slot.system.name, "system returned an error");
                report.errors.push((id, error));
            }
        }
    }

    /// [`Schedule::run_frame`] for a caller that runs some systems together (on parallel
    /// lanes, say): within each stage, the due systems are taken in scheduled order and every
    /// maximal run of consecutive systems whose body `together` accepts is handed to `run` as
    /// one group; every other system is a group of its own. `run` gets each group's [`Due`]
    /// systems in scheduled order and returns one result per system, in the same order, as any
    /// iterable (a `Vec`, or `Some(result)` for a lone system without an allocation; a missing
    /// one counts as `Ok`). A system's duration is what the runner recorded with
    /// [`Due::set_duration`], otherwise the wall time of its group's call (timed from the end
    /// of the group before it in the stage). Everything else is
    /// as [`Schedule::run_frame`]: stage order, the fixed block, intervals, statistics and
    /// errors that never stop the frame.
    ///
    /// # Errors
    ///
    /// [`ScheduleError::InvalidDelta`] when `dt` is negative or not finite.
    pub fn run_frame_grouped<E, R: IntoIterator<Item = Result<(), E>>>(
        &mut self,
        dt: f64,
        together: impl Fn(&B) -> bool,
        mut run: impl FnMut(&mut [Due<'_, B>]) -> R,
    ) -> Result<FrameReport<E>, ScheduleError> {
        self.frame(dt, |schedule, stage, dt, report| {
            schedule.run_grouped(stage, dt, &together, &mut run, report);
        })
    }

    /// Moves the fixed-step accumulator on by `dt`; returns the steps this frame runs.
    fn advance_fixed<E>(&mut self, dt: f64, report: &mut FrameReport<E>) -> u32 {
        let step = self.fixed.seconds;
        let owed_time = self.fixed_carried + dt;
        let owed = ((owed_time + TIME_EPSILON) / step).floor();
        let steps = owed.min(f64::from(self.fixed.max_steps)) as u32;
        report.fixed_steps = steps;
        report.fixed_steps_dropped = (owed - f64::from(steps)) as u64;
        if report.fixed_steps_dropped > 0 {
            tracing::debug!(
                dropped = report.fixed_steps_dropped,
                max_steps = self.fixed.max_steps,
                "fixed-step block dropped the steps beyond its limit"
            );
        }
        self.fixed_carried = (owed_time - owed * step).max(0.0);
        steps
    }

    /// The due systems of one stage with the time each run stands for, interval waits
    /// advanced.
    fn due_in(&mut self, stage: Stage, dt: f64) -> Vec<(SystemId, f64)> {
        let order = self.plan.stage_order(stage);
        let mut due = Vec::with_capacity(order.len());
        for &id in order {
            let Some(slot) = self
                .slots
                .get_mut(id.index() as usize)
                .and_then(Option::as_mut)
            else {
                continue;
            };
            if let Some(run_dt) = slot.due(dt) {
                due.push((id, run_dt));
            }
        }
        due
    }

    /// One pass over one stage, its due systems handed to `run` group by group.
    fn run_grouped<E, R: IntoIterator<Item = Result<(), E>>>(
        &mut self,
        stage: Stage,
        dt: f64,
        together: &impl Fn(&B) -> bool,
        run: &mut impl FnMut(&mut [Due<'_, B>]) -> R,
        report: &mut FrameReport<E>,
    ) {
        let _stage = tracing::debug_span!("stage", ?stage).entered();
        let due = self.due_in(stage, dt);
        if due.is_empty() {
            return;
        }
        // One clock read per group: each group's call is timed from the end of the previous
        // group's (or the stage's start) to its own end, which counts the few nanoseconds of
        // bookkeeping between two groups towards the later one.
        let mut clock = Instant::now();
        let mut at = 0;
        while at < due.len() {
            let joins = |(id, _): &(SystemId, f64)| {
                self.slot(*id).is_ok_and(|slot| together(&slot.system.body))
            };
            let mut end = at + 1;
            if joins(&due[at]) {
                while end < due.len() && joins(&due[end]) {
                    end += 1;
                }
            }
            self.run_group(stage, &due[at..end], &mut clock, run, report);
            at = end;
        }
    }

    /// Runs one group of due systems (distinct ids, scheduled order) and records what it did.
    fn run_group<E, R: IntoIterator<Item = Result<(), E>>>(
        &mut self,
        stage: Stage,
        group: &[(SystemId, f64)],
        clock: &mut Instant,
        run: &mut impl FnMut(&mut [Due<'_, B>]) -> R,
        report: &mut FrameReport<E>,
    ) {
        let ctx = |id: SystemId, dt: f64| RunCtx {
            system: id,
            stage,
            dt,
            component_reads: 0,
            field_writes: 0,
            visited_rows: 0,
        };
        // A lone system (every serial one) without any allocation of the schedule's own.
        if let [(id, dt)] = group {
            let Some(slot) = self
                .slots
                .get_mut(id.index() as usize)
                .and_then(Option::as_mut)
            else {
                return;
            };
            let mut due = [Due {
                id: *id,
                name: Arc::clone(&slot.system.name),
                body: &mut slot.system.body,
                ctx: ctx(*id, *dt),
                took: None,
            }];
            let result = run(&mut due).into_iter().next().unwrap_or(Ok(()));
            let elapsed = lap(clock);
            let [due] = due;
            let (ctx, took) = (due.ctx, due.took.unwrap_or(elapsed));
            Self::record_run(slot, *id, &ctx, took, result, report);
            return;
        }
        // A larger group's bodies are borrowed apart by splitting the slots once.
        let mut by_index: Vec<Option<&mut Slot<B>>> =
            self.slots.iter_mut().map(Option::as_mut).collect();
        let mut slots: Vec<&mut Slot<B>> = group
            .iter()
            .filter_map(|(id, _)| by_index.get_mut(id.index() as usize)?.take())
            .collect();
        let mut due: Vec<Due<'_, B>> = slots
            .iter_mut()
            .zip(group)
            .map(|(slot, (id, dt))| Due {
                id: *id,
                name: slot.system.name.clone(),
                body: &mut slot.system.body,
                ctx: ctx(*id, *dt),
                took: None,
            })
            .collect();
        let results = run(&mut due);
        let elapsed = lap(clock);
        let outcomes: Vec<(SystemId, RunCtx, Duration)> = due
            .into_iter()
            .map(|d| (d.id, d.ctx, d.took.unwrap_or(elapsed)))
            .collect();
        let mut results = results.into_iter();
        for (slot, (id, ctx, took)) in slots.iter_mut().zip(outcomes) {
            let result = results.next().unwrap_or(Ok(()));
            Self::record_run(slot, id, &ctx, took, result, report);
        }
    }

    /// Records one system's run in its statistics and the frame's report.
    fn record_run<E>(
        slot: &mut Slot<B>,
        id: SystemId,
        ctx: &RunCtx,
        took: Duration,
        result: Result<(), E>,
        report: &mut FrameReport<E>,
    ) {
        slot.stats.record(
            took,
            ctx.component_reads,
            ctx.field_writes,
            ctx.visited_rows,
            result.is_err(),
        );
        report.runs += 1;
        if let Err(error) = result {
            tracing::debug!(system = &*slot.system.name, "system returned an error");
            report.errors.push((id, error));
        }
    }

    fn slot(&self, id: SystemId) -> Result<&Slot<B>, ScheduleError> {
        self.slots
            .get(id.index() as usize)
            .and_then(Option::as_ref)
            .ok_or(ScheduleError::UnknownSystem(id))
    }

    fn slot_mut(&mut self, id: SystemId) -> Result<&mut Slot<B>, ScheduleError> {
        self.slots
            .get_mut(id.index() as usize)
            .and_then(Option::as_mut)
            .ok_or(ScheduleError::UnknownSystem(id))
    }
}
