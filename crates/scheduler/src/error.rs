//! `ScheduleError`: why the scheduler refused a caller's input.
//!
//! Invariant: a refused call changes nothing. Problems in how systems are ordered (missing,
//! disabled or cross-phase targets, cycles) are never errors: they are diagnostics of a plan that
//! still schedules everything it can.

use crate::system::SystemId;

/// Why a call into the scheduler was refused.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ScheduleError {
    /// A system or set name was empty.
    #[error("system and set names must not be empty")]
    EmptyName,
    /// Another live system already has this name.
    #[error("a system named {0:?} already exists")]
    DuplicateName(String),
    /// The name is used both as a system name and as a set name, so a `before`/`after` target
    /// naming it would be ambiguous.
    #[error("{0:?} would name both a system and a set")]
    NameConflict(String),
    /// A replacement for a system has another name.
    #[error(
        "system {name:?} can only be replaced by a system of the same name, not {replacement:?}"
    )]
    ReplacementRenames {
        /// The live system's name.
        name: String,
        /// The replacement's name.
        replacement: String,
    },
    /// The schedule already handed out `u32::MAX` ids.
    #[error("a schedule holds at most u32::MAX systems over its lifetime")]
    TooManySystems,
    /// The id names no live system of this schedule.
    #[error("no system {0} in this schedule")]
    UnknownSystem(SystemId),
    /// An interval that is not a positive, finite number of seconds.
    #[error("system {name:?} has interval {seconds} s; an interval must be positive and finite")]
    InvalidInterval {
        /// The system's name.
        name: String,
        /// The refused interval.
        seconds: f64,
    },
    /// A frame's elapsed time that is negative or not finite.
    #[error("a frame's elapsed time must be finite and not negative, got {0} s")]
    InvalidDelta(f64),
    /// A fixed step that is not positive and finite, or a zero step limit.
    #[error(
        "a fixed step needs a positive, finite step length and at least one step per frame, got {seconds} s and {max_steps}"
    )]
    InvalidFixedStep {
        /// The refused step length in seconds.
        seconds: f64,
        /// The refused step limit.
        max_steps: u32,
    },
}
