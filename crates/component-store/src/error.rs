//! `StoreError`: every way a store operation can refuse.
//!
//! Invariant: an operation that returns an error has changed nothing (no row, tick, revision,
//! event or index entry). Messages name components and fields as their definitions do: a
//! variant that carries a `ComponentId` or `FieldId` for programs carries the names for people
//! beside it, except where no definition exists to name (`UnknownComponent`, a field position
//! past the definition's fields).

use std::sync::Arc;

use strata_arena::{ClassId, InstanceId};

use crate::def::{ComponentId, FieldId, FormerNameConflict};
use crate::observe::ObserverId;

/// Why a store operation was refused.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No component is installed under that id (never, or uninstalled since), so there is no
    /// name to give.
    #[error("no component is installed under id {}", .0.index())]
    UnknownComponent(ComponentId),
    /// No component is installed under that name.
    #[error("no component named `{0}` is installed")]
    UnknownComponentName(String),
    /// A component with that name is already installed.
    #[error("a component named `{0}` is already installed")]
    DuplicateComponent(String),
    /// The definition is malformed.
    #[error("component `{component}` is invalid: {reason}")]
    InvalidDefinition {
        /// The component's name.
        component: String,
        /// What is wrong.
        reason: String,
    },
    /// The definition's former names are ambiguous.
    #[error("component `{component}` has ambiguous former names")]
    FormerNames {
        /// The component's name.
        component: String,
        /// Which fields conflict, and how.
        #[source]
        conflict: FormerNameConflict,
    },
    /// The component has no field with that name.
    #[error("component `{component}` has no field `{field}`")]
    UnknownField {
        /// The component's name.
        component: String,
        /// The field asked for.
        field: String,
    },
    /// The component has no field at that position.
    #[error("component `{component}` has no field at position {}", .field.index())]
    FieldOutOfRange {
        /// The component's name.
        component: String,
        /// The field asked for.
        field: FieldId,
    },
    /// A value or typed access does not match the field's type.
    #[error("field `{field}` of `{component}` is {expected}, not {found}")]
    TypeMismatch {
        /// The component's name.
        component: String,
        /// The field's name.
        field: String,
        /// The field's type.
        expected: String,
        /// What was given.
        found: String,
    },
    /// The instance does not hold the component (never had it, removed, or its slot was
    /// reused): a handle never reads another instance's row instead.
    #[error("instance {id} does not hold component `{component_name}`")]
    MissingMembership {
        /// The instance.
        id: InstanceId,
        /// The component.
        component: ComponentId,
        /// The component's name.
        component_name: Arc<str>,
    },
    /// A row index past the set's rows.
    #[error("component `{component}` has no row {row}")]
    RowOutOfRange {
        /// The component's name.
        component: String,
        /// The row asked for.
        row: usize,
    },
    /// The instance already holds the component.
    #[error("instance {id} already holds component `{component_name}`")]
    AlreadyPresent {
        /// The instance.
        id: InstanceId,
        /// The component.
        component: ComponentId,
        /// The component's name.
        component_name: Arc<str>,
    },
    /// A bulk operation named one slot twice.
    #[error("slot {0:?} appears twice in one bulk operation")]
    DuplicateSlot(strata_arena::Slot),
    /// The arena has no slot for the instance (never created there, or reclaimed).
    #[error("instance {0} has no slot in the arena")]
    UnknownInstance(InstanceId),
    /// Another instance holds a row at the slot: either the pair is wrong, or the other
    /// instance was destroyed without the store being told (then `Store::evict_stale` removes
    /// its rows).
    #[error("slot {slot:?} holds a row of instance {holder} in component `{component_name}`")]
    SlotOccupied {
        /// The slot.
        slot: strata_arena::Slot,
        /// The instance holding a row there.
        holder: InstanceId,
        /// The component.
        component: ComponentId,
        /// The component's name.
        component_name: Arc<str>,
    },
    /// A slot past what the store may take for the reference: the arena's slot count for a
    /// reference made by `InstanceRef::of`, and for any reference `UNCHECKED_SLOT_LIMIT` or
    /// twice the larger of the store's longest sparse array and the rows the set would hold.
    #[error("slot {slot:?} is past the {limit} slots this reference may address")]
    SlotOutOfRange {
        /// The slot.
        slot: strata_arena::Slot,
        /// The number of slots the reference may address.
        limit: usize,
    },
    /// The component's definition excludes the instance's class.
    #[error("component `{component}` does not allow instances of class {class:?}")]
    ClassNotAllowed {
        /// The component's name.
        component: String,
        /// The instance's class.
        class: ClassId,
    },
    /// A handle, or a column an overlay recorded, was bound to a definition that has since been
    /// replaced.
    #[error("the definition of component `{component_name}` was replaced since")]
    StaleDefinition {
        /// The component.
        component: ComponentId,
        /// The component's name, as defined now.
        component_name: Arc<str>,
    },
    /// A parallel pass named a row twice, or rows out of order within one of its pieces.
    #[error(
        "row {row} of component `{component}` is named twice or out of order by a parallel pass"
    )]
    OverlappingRows {
        /// The component's name.
        component: String,
        /// The row.
        row: usize,
    },
    /// A column cannot be written while the same column (or, for reference fields, the same
    /// set) is borrowed for reading.
    #[error("field `{component_name}.{field_name}` cannot be read while it is being written")]
    AliasedColumns {
        /// The component written.
        component: ComponentId,
        /// The field written.
        field: FieldId,
        /// The component's name.
        component_name: Arc<str>,
        /// The field's name.
        field_name: Arc<str>,
    },
    /// A snapshot slot saved from another component (or from this one under a definition
    /// since replaced, when `found` is `expected`; or never saved, when `found` is `None`)
    /// cannot be loaded into this one.
    #[error(
        "the snapshot slot {}, so it cannot be loaded into component `{expected_name}`",
        slot_holds(*.found, *.expected)
    )]
    SlotMismatch {
        /// The set being loaded.
        expected: ComponentId,
        /// The set the slot was saved from.
        found: Option<ComponentId>,
        /// The name of the component being loaded.
        expected_name: Arc<str>,
    },
    /// A snapshot slot saved from a store of another lineage (not this store, nor a snapshot of
    /// it, nor the store it was snapshotted from) cannot be loaded: component ids and
    /// definitions are the other store's.
    #[error(
        "the snapshot slot was saved from another store, not this store's component `{component_name}`"
    )]
    SlotFromOtherStore {
        /// The set being loaded.
        component: ComponentId,
        /// Its name.
        component_name: Arc<str>,
    },
    /// A store was asked to restore a snapshot of a store of another lineage.
    #[error("the snapshot is of another store (another lineage): a store restores only its own")]
    SnapshotFromOtherStore,
    /// A staged spawn's initializer asked for a component the spawn does not add.
    #[error("component `{component_name}` is not one of the spawn's components")]
    NotInSpawn {
        /// The component asked for.
        component: ComponentId,
        /// Its name.
        component_name: Arc<str>,
    },
    /// A staged spawn's initializer asked for a raw column of a field whose values only a
    /// checked setter may store (a reference field, whose reverse index must follow each
    /// value).
    #[error("field `{component_name}.{field_name}` takes values through a checked setter")]
    CheckedFieldOnly {
        /// The component.
        component: ComponentId,
        /// The field.
        field: FieldId,
        /// The component's name.
        component_name: Arc<str>,
        /// The field's name.
        field_name: Arc<str>,
    },
    /// A staged spawn's initializer named an instance past the spawn's count.
    #[error("the spawn has {len} instances, not {index}")]
    SpawnIndexOutOfRange {
        /// The index given.
        index: usize,
        /// How many instances the spawn adds.
        len: usize,
    },
    /// No observer is registered in this store under that id: it came from another store (a
    /// snapshot included), was unregistered already, or its component was uninstalled.
    #[error("observer {0:?} is not registered in this store")]
    UnknownObserver(ObserverId),
    /// A reference value names an instance that is not live (never issued, destroyed, or
    /// reclaimed): a world only ever holds references to live instances, so it always saves
    /// to bytes that load.
    #[error("field `{component}.{field}` cannot refer to {target}: it is not live")]
    NotLiveReference {
        /// The component's name.
        component: String,
        /// The field's name.
        field: String,
        /// The instance the value named.
        target: InstanceId,
    },
    /// A reference or enum field's column cannot be handed out whole (`Store::column_mut`):
    /// the store must check and index every value written to it; use a column writer.
    #[error("field `{component_name}.{field_name}` needs checked writes: use a column writer")]
    UncheckedColumn {
        /// The component.
        component: ComponentId,
        /// The field.
        field: FieldId,
        /// The component's name.
        component_name: Arc<str>,
        /// The field's name.
        field_name: Arc<str>,
    },
}

/// What a snapshot slot holds, for [`StoreError::SlotMismatch`].
fn slot_holds(found: Option<ComponentId>, expected: ComponentId) -> &'static str {
    match found {
        None => "was never saved",
        Some(found) if found == expected => "was saved under a definition of it replaced since",
        Some(_) => "was saved from another component",
    }
}
