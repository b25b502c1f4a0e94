//! `WorldError`, why a world operation was refused; `SystemError`, what a system returns when
//! it fails; `SaveError` and `LoadError` for save files.
//!
//! Invariant: every refusal of a world operation is a `WorldError` and changes nothing; the
//! layers' own errors pass through unchanged inside it, so a caller can match on them.

use strata_arena::{ArenaError, InstanceId};
use strata_component_store::{CommitError, ComponentId, FieldId, StageError, StoreError};
use strata_parallel_overlay::OverlayError;
use strata_query::QueryError;
use strata_scheduler::ScheduleError;
use strata_schema_adoption::SchemaError;

/// Why a world operation was refused. Nothing changed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorldError {
    /// The arena refused (unknown or destroyed instance, containment, locks, ids).
    #[error(transparent)]
    Arena(#[from] ArenaError),
    /// The component store refused (unknown component or field, type mismatch, membership).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A query was refused.
    #[error(transparent)]
    Query(#[from] QueryError),
    /// A schema could not be evaluated or installed.
    #[error(transparent)]
    Schema(#[from] SchemaError),
    /// The scheduler refused (a duplicate system name, a bad frame delta).
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    /// A staged operation could not be staged.
    #[error(transparent)]
    Stage(#[from] StageError),
    /// A stage's commit failed (what it published before the failure is in the error).
    #[error(transparent)]
    Commit(Box<CommitError>),
    /// A parallel system's overlay refused (a wrong type, a structural change on a lane).
    #[error(transparent)]
    Overlay(#[from] OverlayError),
    /// A parallel system wrote a field it did not declare.
    #[error("the system did not declare writes to field {field:?} of component {component:?}")]
    UndeclaredWrite {
        /// The component.
        component: ComponentId,
        /// The field.
        field: FieldId,
    },
    /// A parallel system read a component it did not declare (see `SystemSpec::reads`).
    #[error(
        "the system did not declare reads of `{component}` (declare it with SystemSpec::reads, or write one of its fields)"
    )]
    UndeclaredRead {
        /// The component, by name.
        component: String,
    },
    /// A pass would write a field that can hold references: references are written one at a
    /// time, each checked against the hierarchy.
    #[error(
        "a pass cannot write `{component}.{field}`, which holds references: write each with write_value, which checks it names a live instance"
    )]
    ReferencePass {
        /// The component.
        component: String,
        /// The field.
        field: String,
    },
    /// No class of this name is registered.
    #[error("no class is named `{0}`")]
    UnknownClass(String),
    /// No component of this name is installed.
    #[error("no component is named `{0}`")]
    UnknownComponent(String),
    /// The component has no field of this name.
    #[error("component `{component}` has no field `{field}`")]
    UnknownField {
        /// The component.
        component: String,
        /// The field asked for.
        field: String,
    },
    /// The instance is not live (never created, destroyed, or reclaimed).
    #[error("instance {0} is not live")]
    NotLive(InstanceId),
    /// A thread count of zero, or a pool the system could not make.
    #[error("cannot run on {threads} threads: {reason}")]
    Threads {
        /// The count asked for.
        threads: usize,
        /// Why it was refused.
        reason: String,
    },
}

/// Why a system's run failed. The frame goes on; the failure is counted in the system's
/// statistics and reported in the frame's events.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SystemError {
    /// A world operation the system made was refused.
    #[error(transparent)]
    World(#[from] WorldError),
    /// The system panicked; the panic was caught and is not resumed.
    #[error("the system panicked: {0}")]
    Panicked(String),
    /// A lifecycle listener ([`World::on_lifecycle`](crate::World::on_lifecycle)) panicked
    /// while the frame's end delivered an event; the panic was caught and is not resumed.
    #[error("a lifecycle listener panicked: {0}")]
    ListenerPanicked(String),
    /// The system reported a failure of its own.
    #[error("{0}")]
    Failed(String),
    /// The system's body failed with an error of its own layer (a script's error, with its
    /// script and line, say), kept as it is: downcast it to read it.
    #[error(transparent)]
    Body(Box<dyn std::error::Error + Send + Sync + 'static>),
    /// The system ran away: it used up a budget of its runtime (a script's instructions or
    /// time), or held memory the world's other systems needed. The world stops what the
    /// runaway names (the failing system itself, or the holder of that memory) and the frame
    /// goes on at full speed; see `World::stopped_systems`.
    #[error("{}", .0.error)]
    RanAway(Box<Runaway>),
}

/// What a [`SystemError::RanAway`] carries.
#[derive(Debug)]
pub struct Runaway {
    /// What went wrong, as the failing run saw it.
    pub error: Box<dyn std::error::Error + Send + Sync + 'static>,
    /// What to stop.
    pub stops: Vec<crate::systems::StopRequest>,
}

impl SystemError {
    /// A failure the system reports in its own words.
    pub fn failed(message: impl Into<String>) -> Self {
        Self::Failed(message.into())
    }

    /// A failure with an error of the body's own layer, kept as its source.
    pub fn body(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Body(Box::new(error))
    }
}

impl From<CommitError> for WorldError {
    fn from(error: CommitError) -> Self {
        Self::Commit(Box::new(error))
    }
}

macro_rules! system_error_from {
    ($($from:ty),*) => {$(
        impl From<$from> for SystemError {
            fn from(error: $from) -> Self {
                Self::World(error.into())
            }
        }
    )*};
}

system_error_from!(
    ArenaError,
    StoreError,
    QueryError,
    SchemaError,
    StageError,
    OverlayError,
    CommitError
);

/// Why a world could not be saved.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SaveError {
    /// Writing failed.
    #[error("the save could not be written: {0}")]
    Io(#[from] std::io::Error),
    /// The world could not be encoded (a value the format cannot hold); the encoder's error
    /// is the source.
    #[error("the world could not be encoded")]
    Encode(#[source] Box<dyn std::error::Error + Send + Sync + 'static>),
}

/// Why a save file could not be loaded. The world the caller had is untouched: loading builds
/// a new one.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// Reading failed.
    #[error("the save could not be read: {0}")]
    Io(#[from] std::io::Error),
    /// The file does not start with Strata's save header.
    #[error("not a Strata save file")]
    NotASave,
    /// The file is of a save format this build does not read.
    #[error(
        "save format version {found} is not supported (this build reads versions 1 to {supported})"
    )]
    UnsupportedVersion {
        /// The version in the file.
        found: u32,
        /// The newest version this build reads (and writes); it reads every version from 1 up
        /// to it.
        supported: u32,
    },
    /// The file ends before its header says it should.
    #[error("the save is truncated: {0}")]
    Truncated(String),
    /// The payload does not match its checksum.
    #[error(
        "the save is corrupt: its checksum does not match (expected {expected:08x}, found {found:08x})"
    )]
    Checksum {
        /// The checksum the header records.
        expected: u32,
        /// The checksum of the payload read.
        found: u32,
    },
    /// The payload describes a world that cannot exist (an id twice, a parent that is not
    /// there, a reference to a missing instance, a value of the wrong kind).
    #[error("the save is corrupt: {0}")]
    Corrupt(String),
    /// The payload does not decode as the records of its format version; the decoder's error
    /// is the source.
    #[error("the save is corrupt: its payload does not decode")]
    Decode(#[source] Box<dyn std::error::Error + Send + Sync + 'static>),
    /// The world it describes was refused by a layer while it was rebuilt.
    #[error("the save describes a world that cannot be rebuilt: {0}")]
    Rebuild(#[from] WorldError),
}
