//! The game VM: a sandboxed Luau state with a memory limit, a per-callback budget of
//! instructions and time, and script errors that name their script and line.
//!
//! Invariant: a game VM offers no `os`, `io`, `require`, `loadstring`, `getfenv`, `setfenv`,
//! `debug`, `collectgarbage`, `gcinfo` or `newproxy`; the standard libraries and the game API
//! are read-only and every script runs in an environment table of its own, so one script's
//! globals never leak into another's. Every callback runs under its budget: when it runs out,
//! the trip sticks until the callback ends (every later interrupt raises it again, so a
//! `pcall`, an `xpcall` handler or a coroutine that catches it only meets it at its next loop
//! or call), the callback fails with a budget error even if the script swallowed every trip,
//! and the limits are lifted afterwards so the VM stays usable.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mlua::{Lua, Table, VmState};

use super::ScriptError;

/// What one callback (a system's run, a setup script, a group's callback) may use, and what a
/// world's scripts may hold together.
///
/// A callback that runs out of instructions or time fails; a system whose run does is stopped
/// (it ran away: see `World::stopped_systems`), so a runaway costs one budget, once, and the
/// frames after it go on at full speed. The time budget is there to end a script that would
/// never stop, not to police slow frames: a frame at 60 frames a second lasts 16.7 ms, and a
/// system that takes a whole second is already a game that stutters, but the same system in a
/// debug build on a loaded machine can take several times what it takes in release, and a
/// time budget is the one budget that depends on the machine. So the standard run gets five
/// seconds (three hundred frames), as the standard setup script gets ten; the instruction
/// budget, which depends on nothing but the script, bounds both first in practice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScriptBudget {
    /// Luau interrupts (taken at calls and loop back-edges) before the callback is stopped.
    pub instructions: u64,
    /// Wall-clock time before a run (a system's, a group's callback) is stopped.
    pub time: Duration,
    /// Wall-clock time before a script run once (a setup script, a script as it loads) is
    /// stopped.
    pub setup_time: Duration,
    /// The most memory the world's scripts may hold together (every game VM of the world), in
    /// bytes.
    pub memory: usize,
}

impl ScriptBudget {
    /// The standard budget: 200 million interrupts, 5 seconds a run, 10 seconds a setup
    /// script, 512 MiB for the world's scripts together.
    pub const STANDARD: ScriptBudget = ScriptBudget {
        instructions: 200_000_000,
        time: Duration::from_secs(5),
        setup_time: Duration::from_secs(10),
        memory: 512 * 1024 * 1024,
    };
}

impl Default for ScriptBudget {
    fn default() -> Self {
        Self::STANDARD
    }
}

/// Why the interrupt stopped a callback.
const TRIP_INSTRUCTIONS: u8 = 1;
const TRIP_TIME: u8 = 2;

const INSTRUCTIONS_MESSAGE: &str = "the callback ran out of its instruction budget";
const TIME_MESSAGE: &str = "the callback ran out of its time budget";

/// The interrupt's counters, shared with its callback.
pub(crate) struct Meter {
    interrupts: AtomicU64,
    limit: AtomicU64,
    epoch: Instant,
    /// Nanoseconds after `epoch`; `u64::MAX` for none.
    deadline: AtomicU64,
    tripped: AtomicU8,
    /// Whether the next trip is the callback's first (whose place is noted).
    tripped_first: std::sync::atomic::AtomicBool,
    /// Where the callback was when its budget first tripped: chunk and line.
    at: std::sync::Mutex<Option<(String, u32)>>,
}

/// What stopped a callback, and where it was then (chunk and line).
pub(crate) struct Trip {
    pub(crate) budget: &'static str,
    pub(crate) at: Option<(String, u32)>,
}

impl Meter {
    fn new() -> Self {
        Self {
            interrupts: AtomicU64::new(0),
            limit: AtomicU64::new(u64::MAX),
            epoch: Instant::now(),
            deadline: AtomicU64::new(u64::MAX),
            tripped: AtomicU8::new(0),
            tripped_first: std::sync::atomic::AtomicBool::new(true),
            at: std::sync::Mutex::new(None),
        }
    }

    /// Starts a callback's budget: `instructions` interrupts and `time`.
    pub(crate) fn start(&self, instructions: u64, time: Duration) {
        self.tripped_first.store(true, Ordering::Relaxed);
        self.interrupts.store(0, Ordering::Relaxed);
        self.limit.store(instructions, Ordering::Relaxed);
        self.tripped.store(0, Ordering::Relaxed);
        let deadline = self.epoch.elapsed().saturating_add(time);
        self.deadline.store(
            u64::try_from(deadline.as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
    }

    /// Lifts the limits; returns what tripped, if anything, and where.
    pub(crate) fn stop(&self) -> Option<Trip> {
        self.limit.store(u64::MAX, Ordering::Relaxed);
        self.deadline.store(u64::MAX, Ordering::Relaxed);
        let budget = match self.tripped.swap(0, Ordering::Relaxed) {
            TRIP_INSTRUCTIONS => "instruction",
            TRIP_TIME => "time",
            _ => return None,
        };
        let at = self
            .at
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        Some(Trip { budget, at })
    }

    /// Notes where the running Luau code is: the innermost frame of a script's own.
    fn note_location(&self, lua: &Lua) {
        let at = (0..16).find_map(|level| {
            lua.inspect_stack(level, |frame| {
                let source = frame.source().short_src?.into_owned();
                let line = u32::try_from(frame.current_line()?).ok()?;
                (source != "strata").then_some((source, line))
            })?
        });
        *self
            .at
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = at;
    }

    fn tick(&self, lua: &Lua) -> mlua::Result<VmState> {
        let state = self.check();
        if state.is_err() && self.tripped_first.swap(false, Ordering::Relaxed) {
            self.note_location(lua);
        }
        state
    }

    fn check(&self) -> mlua::Result<VmState> {
        // A trip sticks: a script that caught the error meets it again at its next back-edge
        // or call, until the callback has unwound to the host.
        match self.tripped.load(Ordering::Relaxed) {
            TRIP_INSTRUCTIONS => return Err(mlua::Error::runtime(INSTRUCTIONS_MESSAGE)),
            TRIP_TIME => return Err(mlua::Error::runtime(TIME_MESSAGE)),
            _ => {}
        }
        let count = self.interrupts.fetch_add(1, Ordering::Relaxed) + 1;
        if count > self.limit.load(Ordering::Relaxed) {
            self.tripped.store(TRIP_INSTRUCTIONS, Ordering::Relaxed);
            return Err(mlua::Error::runtime(INSTRUCTIONS_MESSAGE));
        }
        // The clock is read every 1,024 interrupts: often enough for a deadline in seconds.
        if count.is_multiple_of(1024) {
            let deadline = self.deadline.load(Ordering::Relaxed);
            let now = u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
            if deadline != u64::MAX && now > deadline {
                self.tripped.store(TRIP_TIME, Ordering::Relaxed);
                return Err(mlua::Error::runtime(TIME_MESSAGE));
            }
        }
        Ok(VmState::Continue)
    }
}

/// The globals a game VM removes.
const REMOVED: [&str; 10] = [
    "os",
    "io",
    "require",
    "loadstring",
    "getfenv",
    "setfenv",
    "debug",
    "collectgarbage",
    "gcinfo",
    "newproxy",
];

/// A new game VM and its meter. `install` replaces what it must among the raw globals before
/// the sandbox makes them read-only; the caller adds the game API to the returned base table.
pub(crate) fn new_vm(
    budget: &ScriptBudget,
    install: impl FnOnce(&Lua, &Table) -> mlua::Result<()>,
) -> mlua::Result<(Lua, Arc<Meter>, Table)> {
    let lua = Lua::new();
    let globals = lua.globals();
    for name in REMOVED {
        globals.raw_set(name, mlua::Value::Nil)?;
    }
    install(&lua, &globals)?;
    lua.sandbox(true)?;
    lua.set_memory_limit(budget.memory)?;
    let meter = Arc::new(Meter::new());
    let callback_meter = Arc::clone(&meter);
    lua.set_interrupt(move |lua| callback_meter.tick(lua));
    // The base environment: the game API, with the standard libraries behind it.
    let base = lua.create_table()?;
    let meta = lua.create_table()?;
    meta.raw_set("__index", lua.globals())?;
    base.set_metatable(Some(meta))?;
    Ok((lua, meter, base))
}

/// A fresh environment for one script, reading through to `base`.
pub(crate) fn environment(lua: &Lua, base: &Table) -> mlua::Result<Table> {
    let env = lua.create_table()?;
    let meta = lua.create_table()?;
    meta.raw_set("__index", base.clone())?;
    meta.set_readonly(true);
    env.set_metatable(Some(meta))?;
    Ok(env)
}

/// A script error from a Luau error, with the script's name and the line the message names.
pub(crate) fn script_error(script: &str, error: &mlua::Error) -> ScriptError {
    let message = root_message(error);
    let (mut line, message) = split_location(script, &message);
    let message = super::errors::opaque_value(message);
    if line.is_none() {
        // An error raised by the API (in Rust) carries no location of its own; the traceback
        // of the call names the script's line that made it.
        line = traceback_line(script, error);
    }
    ScriptError {
        script: script.to_owned(),
        line,
        message,
    }
}

/// The first line of `script` a callback error's traceback names.
fn traceback_line(script: &str, error: &mlua::Error) -> Option<u32> {
    match error {
        mlua::Error::CallbackError { traceback, cause } => {
            let needle = format!("{script}:");
            traceback
                .lines()
                .find_map(|l| {
                    let at = l.find(&needle)?;
                    let digits: String = l[at + needle.len()..]
                        .chars()
                        .take_while(char::is_ascii_digit)
                        .collect();
                    digits.parse().ok()
                })
                .or_else(|| traceback_line(script, cause))
        }
        mlua::Error::WithContext { cause, .. } => traceback_line(script, cause),
        // An error Luau raised with a value that is not a string carries no location of its
        // own; mlua follows its text with the traceback.
        mlua::Error::RuntimeError(text) => super::errors::line_in_traceback(script, text),
        _ => None,
    }
}

/// The innermost message of an error (callback errors wrap their cause).
fn root_message(error: &mlua::Error) -> String {
    match error {
        mlua::Error::CallbackError { cause, .. } => root_message(cause),
        mlua::Error::RuntimeError(message) | mlua::Error::SyntaxError { message, .. } => {
            message.clone()
        }
        mlua::Error::MemoryError(message) => format!("out of memory: {message}"),
        mlua::Error::WithContext { cause, .. } => root_message(cause),
        other => super::errors::describe(other),
    }
}

/// Takes `script:LINE: ` off the front of a message (or from inside it, for messages that
/// start with a location in another chunk), giving the line.
fn split_location(script: &str, message: &str) -> (Option<u32>, String) {
    let first_line = message.lines().next().unwrap_or("");
    if let Some(at) = first_line.find(&format!("{script}:")) {
        let rest = &first_line[at + script.len() + 1..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if let Ok(line) = digits.parse::<u32>() {
            let text = rest[digits.len()..].trim_start_matches(':').trim_start();
            return (Some(line), text.to_owned());
        }
    }
    (None, first_line.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_location_is_taken_off_the_message() {
        let (line, text) = split_location("systems/a.luau", "systems/a.luau:12: boom");
        assert_eq!((line, text.as_str()), (Some(12), "boom"));
        let (line, text) = split_location("x", "no location here");
        assert_eq!((line, text.as_str()), (None, "no location here"));
    }
}
