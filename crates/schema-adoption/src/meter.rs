//! `Meter`: the Luau sandbox meter, the one interrupt handler that bounds a sandboxed run by an
//! instruction budget and a wall-clock deadline. The schema VM ([`crate::SchemaVm`]) and the
//! engine's game VM both use it.
//!
//! Invariant: between [`Meter::start`] and [`Meter::stop`], every Luau interrupt counts one
//! instruction, and once a limit trips the trip is sticky: every later interrupt raises the
//! budget error again until `stop`, so a script that catches the error (`pcall`, an `xpcall`
//! handler, a coroutine) meets it at its next loop back-edge or call and cannot run on. `stop`
//! lifts the limits, reports the first trip and clears it, so the VM is usable for the next
//! run. Outside a run the meter never raises. The meter touches only atomics and a mutex, so a
//! VM may move between threads between runs.
//!
//! Counting is the hot path of every metered loop, so the meter answers most interrupts itself,
//! straight from Luau's interrupt slot, and hands an interrupt to mlua's handler (which calls
//! the meter's own check inside mlua's error-catching trampoline) only where something may have
//! to happen: a clock read is due, the budget is reached, or a trip is pending. `fast_until`
//! keeps the highest count that needs none of these; both paths count the same interrupts, so
//! the budgets are the ones a meter without the fast path would keep.

#![expect(
    unsafe_code,
    reason = "answers Luau's interrupt directly: mlua's handler wraps every interrupt in an error-catching trampoline that costs more than the count"
)]

use std::ffi::c_int;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use mlua::{Lua, VmState, ffi};

/// Luau's interrupt callback.
type InterruptFn = unsafe extern "C-unwind" fn(*mut ffi::lua_State, c_int);

/// The limit that stopped a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Limit {
    /// The run took more interrupts than its instruction budget.
    Instructions,
    /// The run went past its deadline.
    Time,
}

impl Limit {
    /// The budget's name in messages: `"instruction"` or `"time"`.
    pub fn budget_name(self) -> &'static str {
        match self {
            Limit::Instructions => "instruction",
            Limit::Time => "time",
        }
    }

    /// The message of the Luau error the meter raises for this limit.
    fn message(self) -> &'static str {
        match self {
            Limit::Instructions => "instruction budget exhausted",
            Limit::Time => "time budget exhausted",
        }
    }

    fn code(self) -> u8 {
        match self {
            Limit::Instructions => 1,
            Limit::Time => 2,
        }
    }

    fn from_code(code: u8) -> Option<Limit> {
        match code {
            1 => Some(Limit::Instructions),
            2 => Some(Limit::Time),
            _ => None,
        }
    }
}

/// Where the running Luau code was when a budget first tripped.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Location {
    /// The chunk's short name, as Luau reports it (`short_src`).
    pub chunk: String,
    /// The line in that chunk.
    pub line: u32,
}

/// What stopped a run: the limit that tripped first, and where the run was then (the innermost
/// frame with a chunk and a line, not in the host chunk; `None` when no such frame was found).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Trip {
    /// The limit that tripped.
    pub limit: Limit,
    /// Where the run was when it tripped.
    pub at: Option<Location>,
}

/// How many stack levels the meter searches for the location of a trip.
const LOCATION_DEPTH: usize = 16;

/// The Luau sandbox meter: an instruction budget counted at Luau's interrupts (taken at calls
/// and loop back-edges) and a wall-clock deadline, with sticky trips and the location of the
/// first trip. Make one per VM, [`install`](Meter::install) it, then bracket each run with
/// [`start`](Meter::start) and [`stop`](Meter::stop).
///
/// # How often the clock is read
///
/// The deadline is checked every `clock_every` interrupts (the constructor's parameter), since
/// reading the clock costs more than counting. The price is overrun: between two clock reads a
/// run does `clock_every` stretches of work, each stretch being whatever runs between two
/// interrupts. For plain Luau code a stretch is a few instructions, so reading the clock every
/// 1,024 interrupts overruns a deadline in seconds by microseconds. It is unsafe where a single
/// stretch can be long: a host function called between two interrupts (the schema library's
/// `string.rep`, `table.concat` and the like) can do up to its caps' worth of work, and a loop
/// of such calls would overrun the deadline by `clock_every` times that. A VM that offers such
/// functions reads the clock at every interrupt (`clock_every` of 1), so the deadline is never
/// overrun by more than one call.
///
/// # Example
///
/// ```
/// use std::num::NonZeroU32;
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// use strata_schema_adoption::meter::{Limit, Meter};
///
/// let lua = mlua::Lua::new();
/// let meter = Arc::new(Meter::new(NonZeroU32::MIN));
/// meter.install(&lua);
///
/// meter.start(10_000, Duration::from_secs(1));
/// // The script catches the first trip, but a trip is sticky: its next loop meets it again.
/// let result = lua.load("pcall(function() while true do end end) while true do end").exec();
/// let trip = meter.stop().expect("the loop ran out of instructions");
/// assert!(result.is_err());
/// assert_eq!(trip.limit, Limit::Instructions);
/// assert_eq!(trip.at.map(|at| at.line), Some(1));
///
/// // Lifted: the VM runs again, unmetered until the next start.
/// lua.load("for i = 1, 100000 do end").exec()?;
/// assert_eq!(meter.stop(), None);
/// # Ok::<(), mlua::Error>(())
/// ```
#[derive(Debug)]
pub struct Meter {
    interrupts: AtomicU64,
    /// The highest interrupt count the fast path may reach without the full check: below the
    /// limit, before the next clock read, and 0 while a trip is pending.
    fast_until: AtomicU64,
    /// mlua's interrupt handler, which calls [`Meter::interrupt`]; set by `install`.
    slow: OnceLock<InterruptFn>,
    /// The instruction budget of the current run; `u64::MAX` outside a run.
    limit: AtomicU64,
    /// Read the clock when the interrupt count is a multiple of this.
    clock_every: u64,
    /// The clock deadlines are measured from.
    epoch: Instant,
    /// Nanoseconds after `epoch`; `u64::MAX` for none.
    deadline: AtomicU64,
    /// 0 while nothing tripped, else a [`Limit`] code.
    tripped: AtomicU8,
    /// Whether the next trip is the run's first (whose place is noted).
    first_trip: AtomicBool,
    /// Where the run was when its budget first tripped.
    at: Mutex<Option<Location>>,
    /// The chunk name of host code, whose frames never count as where a run was.
    host_chunk: Option<String>,
}

impl Meter {
    /// A meter that reads the clock every `clock_every` interrupts (see the type's docs for
    /// what that trades), with no run started.
    pub fn new(clock_every: NonZeroU32) -> Self {
        Self {
            interrupts: AtomicU64::new(0),
            fast_until: AtomicU64::new(u64::MAX),
            slow: OnceLock::new(),
            limit: AtomicU64::new(u64::MAX),
            clock_every: u64::from(clock_every.get()),
            epoch: Instant::now(),
            deadline: AtomicU64::new(u64::MAX),
            tripped: AtomicU8::new(0),
            first_trip: AtomicBool::new(true),
            at: Mutex::new(None),
            host_chunk: None,
        }
    }

    /// This meter, never reporting a frame of the chunk named `chunk` (Luau's `short_src`) as
    /// where a run was: the host's own Luau code, which a trip's location should look past.
    #[must_use]
    pub fn with_host_chunk(mut self, chunk: impl Into<String>) -> Self {
        self.host_chunk = Some(chunk.into());
        self
    }

    /// Makes this meter `lua`'s interrupt handler, replacing any other.
    pub fn install(self: &Arc<Self>, lua: &Lua) {
        let meter = Arc::clone(self);
        // The closure keeps the meter alive as long as mlua keeps the handler, which is as long
        // as the fast path below can be called: replacing or removing the handler through mlua
        // also replaces Luau's interrupt slot.
        lua.set_interrupt(move |lua| meter.interrupt(lua));
        let this: *const Meter = Arc::as_ptr(self);
        lua.exec_raw_lua(|raw| {
            let state = raw.state();
            // SAFETY: `state` is the VM's current Luau state, valid while `exec_raw_lua` holds
            // the VM's lock, and no Luau code runs while the callbacks are swapped. The main
            // thread's data pointer is Luau's slot for the embedder, which mlua leaves unused;
            // it points to this meter, which the handler closure just installed keeps alive for
            // as long as `counted_interrupt` stays in the interrupt slot (see above).
            unsafe {
                let callbacks = ffi::lua_callbacks(state);
                if let Some(slow) = (*callbacks).interrupt {
                    let _ = self.slow.set(slow);
                    ffi::lua_setthreaddata(ffi::lua_mainthread(state), this.cast_mut().cast());
                    (*callbacks).interrupt = Some(counted_interrupt);
                }
            }
        });
    }

    /// Starts a run's budget: `instructions` interrupts and `time` from now. Clears what an
    /// earlier run left.
    pub fn start(&self, instructions: u64, time: Duration) {
        self.first_trip.store(true, Ordering::Relaxed);
        self.interrupts.store(0, Ordering::Relaxed);
        self.tripped.store(0, Ordering::Relaxed);
        *self.at.lock().unwrap_or_else(PoisonError::into_inner) = None;
        let deadline = self.epoch.elapsed().saturating_add(time);
        self.deadline.store(
            u64::try_from(deadline.as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        self.limit.store(instructions, Ordering::Relaxed);
        self.fast_until
            .store(self.quiet_until(0), Ordering::Relaxed);
    }

    /// Ends the run: lifts the limits and returns what tripped, if anything, and where.
    pub fn stop(&self) -> Option<Trip> {
        self.limit.store(u64::MAX, Ordering::Relaxed);
        self.deadline.store(u64::MAX, Ordering::Relaxed);
        self.fast_until.store(u64::MAX, Ordering::Relaxed);
        let limit = Limit::from_code(self.tripped.swap(0, Ordering::Relaxed))?;
        let at = self
            .at
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        Some(Trip { limit, at })
    }

    /// The interrupt handler: checks the budget, and notes where the run is at its first trip.
    fn interrupt(&self, lua: &Lua) -> mlua::Result<VmState> {
        match self.check() {
            Ok(()) => Ok(VmState::Continue),
            Err(limit) => {
                if self.first_trip.swap(false, Ordering::Relaxed) {
                    let at = self.locate(lua);
                    *self.at.lock().unwrap_or_else(PoisonError::into_inner) = at;
                }
                Err(mlua::Error::runtime(limit.message()))
            }
        }
    }

    /// Counts one interrupt; the limit tripped, if any (a trip sticks until `stop`).
    fn check(&self) -> Result<(), Limit> {
        if let Some(limit) = Limit::from_code(self.tripped.load(Ordering::Relaxed)) {
            return Err(limit);
        }
        let count = self.interrupts.fetch_add(1, Ordering::Relaxed) + 1;
        if count > self.limit.load(Ordering::Relaxed) {
            return Err(self.trip(Limit::Instructions));
        }
        if count.is_multiple_of(self.clock_every) && self.past_deadline() {
            return Err(self.trip(Limit::Time));
        }
        self.fast_until
            .store(self.quiet_until(count), Ordering::Relaxed);
        Ok(())
    }

    /// The fast path's count: counts one interrupt and returns true when it needs no full
    /// check (no trip pending, the count within the limit, no clock read due).
    #[inline]
    fn count_quietly(&self) -> bool {
        // One VM runs on one thread at a time, so a load and a store count exactly.
        let count = self.interrupts.load(Ordering::Relaxed) + 1;
        if count > self.fast_until.load(Ordering::Relaxed) {
            return false;
        }
        self.interrupts.store(count, Ordering::Relaxed);
        true
    }

    /// The highest count after `count` that needs no full check: the limit, or the count before
    /// the next clock read while a deadline is set.
    fn quiet_until(&self, count: u64) -> u64 {
        let limit = self.limit.load(Ordering::Relaxed);
        if self.deadline.load(Ordering::Relaxed) == u64::MAX {
            return limit;
        }
        let next_read = (count / self.clock_every + 1).saturating_mul(self.clock_every);
        limit.min(next_read - 1)
    }

    fn trip(&self, limit: Limit) -> Limit {
        self.tripped.store(limit.code(), Ordering::Relaxed);
        self.fast_until.store(0, Ordering::Relaxed);
        limit
    }

    fn past_deadline(&self) -> bool {
        let deadline = self.deadline.load(Ordering::Relaxed);
        deadline != u64::MAX
            && u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX) > deadline
    }

    /// Where the running Luau code is: the innermost frame with a chunk and a line that is not
    /// the host chunk's.
    fn locate(&self, lua: &Lua) -> Option<Location> {
        (0..LOCATION_DEPTH).find_map(|level| {
            lua.inspect_stack(level, |frame| {
                let chunk = frame.source().short_src?.into_owned();
                let line = u32::try_from(frame.current_line()?).ok()?;
                (self.host_chunk.as_deref() != Some(chunk.as_str()))
                    .then_some(Location { chunk, line })
            })?
        })
    }
}

/// Luau's interrupt handler for a VM with a meter installed: counts the interrupt through the
/// meter the main thread's data names, and hands it to mlua's handler (the full check, which
/// may raise the budget error) when the count needs more than counting.
unsafe extern "C-unwind" fn counted_interrupt(state: *mut ffi::lua_State, gc: c_int) {
    // SAFETY: Luau calls this with a live state of the VM `Meter::install` set it on, whose
    // main thread's data points to the installed meter, kept alive while this handler is in the
    // slot (see `Meter::install`).
    let meter = unsafe { ffi::lua_getthreaddata(ffi::lua_mainthread(state)) }.cast_const();
    // SAFETY: as above; the pointer is the meter's or null.
    let Some(meter) = (unsafe { meter.cast::<Meter>().as_ref() }) else {
        return;
    };
    if gc >= 0 || meter.count_quietly() {
        // mlua ignores the interrupts Luau takes inside the collector too.
        return;
    }
    if let Some(slow) = meter.slow.get() {
        // SAFETY: mlua's own handler for this state, called as Luau would call it.
        unsafe { slow(state, gc) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metered(clock_every: u32) -> (Lua, Arc<Meter>) {
        let lua = Lua::new();
        let meter = Arc::new(Meter::new(
            NonZeroU32::new(clock_every).expect("a positive interval"),
        ));
        meter.install(&lua);
        (lua, meter)
    }

    #[test]
    fn an_endless_loop_trips_the_instruction_budget_where_it_loops() {
        let (lua, meter) = metered(1);
        meter.start(1_000, Duration::from_secs(60));
        let result = lua
            .load("local x = 0\nwhile true do\n  x = x + 1\nend")
            .set_name("=spin")
            .exec();
        assert!(result.is_err());
        let trip = meter.stop().expect("tripped");
        assert_eq!(trip.limit, Limit::Instructions);
        let at = trip.at.expect("located");
        assert_eq!(at.chunk, "spin");
        assert!((2..=4).contains(&at.line), "{at:?}");
    }

    #[test]
    fn counting_without_the_full_check_trips_where_the_full_check_does() {
        // Every interrupt takes the full check at a clock read of 1; at 1,024 most take the
        // fast path. Both loops must stop at the same iteration.
        let reached = |clock_every: u32| {
            let (lua, meter) = metered(clock_every);
            meter.start(5_000, Duration::from_secs(60));
            let result = lua.load("n = 0\nwhile true do\n  n += 1\nend").exec();
            assert!(result.is_err());
            assert_eq!(meter.stop().map(|t| t.limit), Some(Limit::Instructions));
            lua.globals().get::<u64>("n").expect("the loop's count")
        };
        let full = reached(1);
        assert!(full > 1_000, "the loop ran {full} times");
        assert_eq!(reached(1_024), full);
        assert_eq!(reached(7), full);
    }

    #[test]
    fn a_trip_is_sticky_until_stop() {
        let (lua, meter) = metered(1);
        meter.start(1_000, Duration::from_secs(60));
        // Every pcall catches a trip; the loop around them meets it again at once.
        let caught: mlua::Result<u32> = lua
            .load(
                "local n = 0\n\
                 for i = 1, 5 do\n\
                   if not pcall(function() while true do end end) then n = n + 1 end\n\
                 end\n\
                 return n",
            )
            .eval();
        assert!(caught.is_err(), "the trip reached the host: {caught:?}");
        assert_eq!(meter.stop().map(|t| t.limit), Some(Limit::Instructions));
        assert_eq!(meter.stop(), None, "stop clears the trip");
        assert_eq!(lua.load("return 1 + 1").eval::<u32>().ok(), Some(2));
    }

    #[test]
    fn a_deadline_trips_the_time_budget_at_either_interval() {
        for clock_every in [1, 1_024] {
            let (lua, meter) = metered(clock_every);
            meter.start(u64::MAX - 1, Duration::from_millis(20));
            assert!(lua.load("while true do end").exec().is_err());
            assert_eq!(meter.stop().map(|t| t.limit), Some(Limit::Time));
        }
    }

    #[test]
    fn the_host_chunk_is_never_the_location() {
        let lua = Lua::new();
        let meter = Arc::new(Meter::new(NonZeroU32::MIN).with_host_chunk("host"));
        meter.install(&lua);
        let spin = lua
            .load("return function() while true do end end")
            .set_name("=host")
            .eval::<mlua::Function>()
            .expect("compiles");
        lua.globals().set("spin", spin).expect("global");
        meter.start(1_000, Duration::from_secs(60));
        assert!(lua.load("\nspin()").set_name("=game").exec().is_err());
        let trip = meter.stop().expect("tripped");
        assert_eq!(
            trip.at,
            Some(Location {
                chunk: "game".into(),
                line: 2
            })
        );
    }

    #[test]
    fn outside_a_run_nothing_trips() {
        let (lua, meter) = metered(1);
        meter.start(10, Duration::from_secs(60));
        assert_eq!(meter.stop(), None);
        assert!(lua.load("for i = 1, 100000 do end").exec().is_ok());
        assert_eq!(meter.stop(), None);
        assert_eq!(Limit::Instructions.budget_name(), "instruction");
        assert_eq!(Limit::Time.budget_name(), "time");
    }
}
