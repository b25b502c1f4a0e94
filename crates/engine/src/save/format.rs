//! The records of save format version 2, and the world record of version 1, which every build
//! still reads: plain serde types, versioned on their own, so the file format never follows the
//! in-memory layout of a layer. `convert.rs` turns them into the layers' types and back.
//!
//! Invariant: these types change only together with `FORMAT_VERSION`; a record of an older
//! version this build reads keeps its type here (`SavedWorldV1`), decoded as it was written and
//! converted to the current one with what it did not hold at its defaults, so a file of every
//! version from `OLDEST_VERSION` to `FORMAT_VERSION` loads.

use serde::{Deserialize, Serialize};

/// The version of the records below, which saves are written in.
pub(crate) const FORMAT_VERSION: u32 = 2;

/// The oldest version this build reads.
pub(crate) const OLDEST_VERSION: u32 = 1;

/// A saved world of format version 2: version 1's fields, then the schedule's interval waits,
/// the arena's identity source and what waits for the next frame's end (tombstones and events).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct SavedWorld {
    /// 0: the server range (ids from 1); 1: the client-local range (from 2^52).
    pub(crate) own_range: u8,
    /// The next id the arena's own counter would issue.
    pub(crate) next_id: u64,
    /// The frame the world would step next.
    pub(crate) frame: u64,
    /// The simulated seconds the world has stepped.
    pub(crate) time: f64,
    /// The fixed-step cadence: seconds per step and the most steps per frame.
    pub(crate) fixed_step: (f64, u32),
    /// The time the fixed-step block carries to the next frame.
    pub(crate) fixed_carried: f64,
    /// The game root and the world container.
    pub(crate) game: u64,
    pub(crate) workspace: u64,
    /// Every live instance, in pre-order.
    pub(crate) instances: Vec<SavedInstance>,
    /// Every component row and every orphan record (a row whose definition was not installed),
    /// as raw records, by instance id then component name. Loading keeps them as orphans, and
    /// each is adopted once its definition is installed.
    pub(crate) records: Vec<SavedRecord>,
    /// Every pending migration input (the values a row held under an older version of its
    /// schema, not yet taken by a migration), by instance id then component name.
    pub(crate) migrations: Vec<SavedMigration>,
    /// What every interval system has waited towards its next run, by system name in name
    /// order (and the waits a loaded world keeps for systems not added again yet).
    pub(crate) intervals: Vec<SavedInterval>,
    /// Where the arena's GUIDs and persistent ids go on from. Always written; `None` only for a
    /// world read from version 1, which did not hold it (its load draws a seed of its own).
    pub(crate) identity: Option<SavedIdentity>,
    /// The tombstones of instances destroyed since the last frame's end, which the next one
    /// reports (their listeners read them), in the order it lists them: each destroyed subtree
    /// in pre-order, its root first and without a parent.
    pub(crate) doomed: Vec<SavedInstance>,
    /// The tombstones the last frame's end reported, whose slots the next one releases.
    pub(crate) reclaimable: Vec<SavedInstance>,
    /// The arena's events queued since the last frame's end, in order: what the next frame's
    /// end delivers.
    pub(crate) events: Vec<SavedEvent>,
}

/// A queued arena event. Ids are raw; 0 stands for "no parent" where one is optional.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) enum SavedEvent {
    Created {
        id: u64,
        parent: u64,
    },
    CreatedRange {
        first: u64,
        count: u32,
        parent: u64,
    },
    CreatedList {
        ids: Vec<u64>,
        parent: u64,
    },
    DescendantRemoving {
        ancestors: Vec<u64>,
        moved: Vec<u64>,
    },
    ChildRemoved {
        parent: u64,
        child: u64,
    },
    ChildAdded {
        parent: u64,
        child: u64,
    },
    AncestryChanged {
        moved: Vec<u64>,
    },
    DescendantAdded {
        ancestors: Vec<u64>,
        moved: Vec<u64>,
    },
    Destroyed {
        subtree: Vec<u64>,
    },
    DestroyedMany {
        /// Each root with the parent it left.
        roots: Vec<(u64, u64)>,
        destroyed: Vec<u64>,
    },
}

/// The arena's identity source: its GUID seed and how far its creation and persistent-id
/// counters went.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct SavedIdentity {
    pub(crate) seed: u64,
    pub(crate) creations: u64,
    pub(crate) persistent_ids: u64,
}

impl From<strata_arena::ImageIdentity> for SavedIdentity {
    fn from(identity: strata_arena::ImageIdentity) -> Self {
        Self {
            seed: identity.seed,
            creations: identity.creations,
            persistent_ids: identity.persistent_ids,
        }
    }
}

impl From<&SavedIdentity> for strata_arena::ImageIdentity {
    fn from(identity: &SavedIdentity) -> Self {
        Self {
            seed: identity.seed,
            creations: identity.creations,
            persistent_ids: identity.persistent_ids,
        }
    }
}

/// A saved world of format version 1.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct SavedWorldV1 {
    pub(crate) own_range: u8,
    pub(crate) next_id: u64,
    pub(crate) frame: u64,
    pub(crate) fixed_step: (f64, u32),
    pub(crate) fixed_carried: f64,
    pub(crate) game: u64,
    pub(crate) workspace: u64,
    pub(crate) instances: Vec<SavedInstance>,
    pub(crate) records: Vec<SavedRecord>,
    pub(crate) migrations: Vec<SavedMigration>,
}

impl From<SavedWorldV1> for SavedWorld {
    /// A version-1 world as the current record, with what version 1 did not save at its
    /// defaults, as a version-1 build read it: no simulated time (the clock starts from zero
    /// seconds at the saved frame), no interval waits (interval systems start from zero), no
    /// identity source (the loaded arena draws a seed of its own), and nothing waiting for the
    /// next frame's end (no tombstones, no events).
    fn from(v1: SavedWorldV1) -> Self {
        Self {
            own_range: v1.own_range,
            next_id: v1.next_id,
            frame: v1.frame,
            time: 0.0,
            fixed_step: v1.fixed_step,
            fixed_carried: v1.fixed_carried,
            game: v1.game,
            workspace: v1.workspace,
            instances: v1.instances,
            records: v1.records,
            migrations: v1.migrations,
            intervals: Vec::new(),
            identity: None,
            doomed: Vec::new(),
            reclaimable: Vec::new(),
            events: Vec::new(),
        }
    }
}

/// An interval system's wait.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct SavedInterval {
    /// The system's name.
    pub(crate) system: String,
    /// The seconds it has waited towards its next run.
    pub(crate) waited: f64,
}

/// The migration input of one row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct SavedMigration {
    /// The name of the component whose row it belongs to.
    pub(crate) component: String,
    /// The values, as the record they were saved under (its own name and version).
    pub(crate) record: SavedRecord,
}

/// One live instance.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct SavedInstance {
    pub(crate) id: u64,
    pub(crate) class: String,
    /// 0 for none.
    pub(crate) parent: u64,
    pub(crate) guid: u128,
    pub(crate) persistent_id: Option<u64>,
    pub(crate) name: String,
    pub(crate) attributes: Vec<(String, SavedAttr)>,
    pub(crate) state: SavedState,
    pub(crate) tags: Vec<String>,
    pub(crate) parent_locked: bool,
}

/// An attribute value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) enum SavedAttr {
    Bool(bool),
    Number(f64),
    Integer(i64),
    Text(String),
    Vector([f32; 3]),
    Color([f32; 3]),
    Transform([[f32; 4]; 4]),
    Reference(Option<u64>),
}

/// Built-in state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) enum SavedState {
    Plain,
    Part {
        transform: [[f32; 4]; 4],
        size: [f32; 3],
        anchored: bool,
        can_collide: bool,
        color: [f32; 3],
        transparency: f32,
    },
    Model {
        primary_part: Option<u64>,
        pivot: [[f32; 4]; 4],
    },
    Light {
        brightness: f32,
        range: f32,
        color: [f32; 3],
        enabled: bool,
    },
    Sound {
        sound_id: String,
        volume: f32,
        playing: bool,
        looped: bool,
    },
    Camera {
        transform: [[f32; 4]; 4],
        field_of_view: f32,
        subject: Option<u64>,
    },
    GuiLayer {
        enabled: bool,
        display_order: i32,
    },
    GuiElement {
        position: [f32; 4],
        size: [f32; 4],
        visible: bool,
        z_index: i32,
    },
    ComponentDefinition {
        source: String,
    },
    Animation {
        animation_id: String,
        looped: bool,
        speed: f32,
    },
}

/// A component row or orphan record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct SavedRecord {
    pub(crate) instance: u64,
    pub(crate) component: String,
    pub(crate) version: u32,
    /// Field name → value, each value as its nodes in pre-order.
    pub(crate) fields: Vec<(String, Vec<ValueNode>)>,
    /// The type each field was stored under, as its nodes in pre-order, when the record keeps
    /// it.
    pub(crate) types: Option<Vec<(String, Vec<TypeNode>)>>,
}

/// One node of a value written in pre-order. Values nest (lists, maps, structs, optionals),
/// but a saved value is a flat list of nodes, so decoding a file never recurses on its
/// contents: a container node gives how many values follow it as its elements (a map's
/// entries are a key node, then a value).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) enum ValueNode {
    Number(f64),
    Integer(i64),
    Boolean(bool),
    Text(String),
    Enum(u32),
    Vector([f32; 3]),
    Transform([[f32; 4]; 4]),
    Reference(Option<u64>),
    /// A list of this many elements.
    List(u32),
    /// A map of this many entries, each a key node then a value.
    Map(u32),
    /// A struct of this many members, by position.
    Struct(u32),
    /// An optional holding the value that follows.
    Some,
    /// An empty optional.
    None,
    Buffer(Vec<u8>),
}

/// One node of a field type written in pre-order, flat for the same reason as `ValueNode`:
/// `List` and `Optional` are followed by their element type, `Map` by its key and value types,
/// `Struct(n)` by `n` members, each a `Member` node followed by the member's type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) enum TypeNode {
    Number,
    Integer,
    Boolean,
    Text,
    Enum(Vec<String>),
    Vector,
    Transform,
    Reference,
    List,
    Map,
    Struct(u32),
    /// A struct member: its name and its default value's nodes.
    Member {
        name: String,
        default: Vec<ValueNode>,
    },
    Optional,
    Buffer,
}
