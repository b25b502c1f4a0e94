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

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use mlua::{Function, Lua, Table};
use strata_schema_adoption::meter::Meter;

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

/// How often the game VM's meter reads the clock: every 1,024 interrupts. Loops in systems are
/// the hot path of every frame, and a clock read costs more than the count. The price (see
/// `Meter`'s docs) is that a loop of long host calls, such as `string.rep` of a large string,
/// can overrun the time budget by up to 1,024 such calls; the world's memory limit bounds each
/// call, and the instruction budget still ends the loop.
const CLOCK_EVERY: NonZeroU32 = NonZeroU32::new(1_024).expect("a positive interval");

/// The chunk name of the game API's own Luau code: a trip is never located there.
const HOST_CHUNK: &str = "strata";

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
    let meter = Arc::new(Meter::new(CLOCK_EVERY).with_host_chunk(HOST_CHUNK));
    meter.install(&lua);
    // The base environment: the game API, with the standard libraries behind it.
    let base = lua.create_table()?;
    let meta = lua.create_table()?;
    meta.raw_set("__index", lua.globals())?;
    base.set_metatable(Some(meta))?;
    Ok((lua, meter, base))
}

/// A fresh environment for one script, reading through to `base`.
///
/// The environment is marked safe (Luau's `safeenv`), as the sandbox marks the globals: Luau
/// then resolves the standard libraries once, when the chunk loads, and calls builtins such as
/// `math.floor` or `buffer.readf64` inline (in native code too) instead of looking them up on
/// each call. That is sound because a script can change its environment only by assigning
/// globals in its own text, which the compiler sees (a name the chunk assigns is never taken for
/// the builtin): the standard libraries are read-only, and a script cannot reach its
/// environment table, its metatable or `base` (there is no `getfenv` or `setfenv`). Luau
/// resolves those names against the globals, not through `base`, so the globals and `base`
/// must agree on every name both hold (a test in `host` checks it); the names only `base` holds
/// (the game API, the component globals) are looked up as they are used.
pub(crate) fn environment(lua: &Lua, base: &Table) -> mlua::Result<Table> {
    let env = lua.create_table()?;
    let meta = lua.create_table()?;
    meta.raw_set("__index", base.clone())?;
    meta.set_readonly(true);
    env.set_metatable(Some(meta))?;
    env.set_safeenv(true);
    Ok(env)
}

/// Compiles a script in an environment of its own over `base`, to native code where Luau's
/// code generator supports the machine (mlua compiles every chunk it loads when native
/// execution is on, as it is in a new VM); returns the chunk's function.
pub(crate) fn compile(
    lua: &Lua,
    base: &Table,
    name: &str,
    source: &str,
) -> Result<Function, ScriptError> {
    let env = environment(lua, base).map_err(|e| script_error(name, &e))?;
    lua.load(source)
        .set_name(format!("={name}"))
        // Always compiled as text: Luau loads bytecode without verifying it.
        .set_mode(mlua::chunk::ChunkMode::Text)
        .set_environment(env)
        .into_function()
        .map_err(|e| script_error(name, &e))
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

    #[expect(unsafe_code, reason = "asks Luau whether a frame runs native code")]
    mod probe {
        use std::ffi::c_int;

        use mlua::{Lua, ffi};

        unsafe extern "C-unwind" {
            /// Whether the frame `level` levels up the stack runs native code (Luau's C API;
            /// mlua does not declare it).
            fn lua_incustomexecution(state: *mut ffi::lua_State, level: c_int) -> c_int;
        }

        /// Whether the Luau function calling the host function that asks runs native code.
        pub(super) fn caller_runs_natively(lua: &Lua) -> bool {
            lua.exec_raw_lua(|raw| {
                // SAFETY: `raw.state()` is the running thread's state while the VM's lock is
                // held, inside the host function's call; level 0 is that host function's frame
                // and level 1 its caller's, which Luau bounds-checks.
                unsafe { lua_incustomexecution(raw.state(), 1) != 0 }
            })
        }
    }

    #[test]
    fn game_scripts_run_as_native_code() {
        let (lua, _meter, base) = new_vm(&ScriptBudget::STANDARD, |lua, globals| {
            let probe = lua.create_function(|lua, ()| Ok(probe::caller_runs_natively(lua)))?;
            globals.raw_set("native", probe)
        })
        .expect("a game VM");
        let hot = compile(
            &lua,
            &base,
            "hot.luau",
            "return function(n)\n\
               local sum = 0\n\
               for i = 1, n do sum += i end\n\
               return native(), sum\n\
             end",
        )
        .expect("compiles")
        .call::<Function>(())
        .expect("returns the hot function");
        let (native, sum): (bool, u32) = hot.call(100).expect("runs");
        assert_eq!(sum, 5_050);
        assert!(native, "a game script's function ran in the interpreter");
    }

    #[test]
    fn a_location_is_taken_off_the_message() {
        let (line, text) = split_location("systems/a.luau", "systems/a.luau:12: boom");
        assert_eq!((line, text.as_str()), (Some(12), "boom"));
        let (line, text) = split_location("x", "no location here");
        assert_eq!((line, text.as_str()), (None, "no location here"));
    }
}
