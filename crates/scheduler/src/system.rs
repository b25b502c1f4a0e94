//! What a system is before it is scheduled: its identity, its phase, its sets and ordering
//! declarations, its interval, its place in the hierarchy and its body.
//!
//! Invariant: a [`SystemId`] is handed out once per schedule and never reused, not even after
//! its system is removed, so an id kept by a caller can go stale but never names another system.
//! [`Stage::ALL`] lists the stages in the order a frame runs them, and a stage's
//! [`Stage::index`] is its place in that list.

use std::fmt;
use std::sync::Arc;

/// A system's identity within one [`Schedule`](crate::Schedule): stable across rebuilds,
/// enabling and disabling; never reused after removal.
///
/// It converts to and from `u64` for layers that identify writers by a plain number (the
/// parallel overlay's order oracle): [`SystemId::to_u64`], [`SystemId::from_u64`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SystemId(u32);

impl SystemId {
    /// The id at `index`, the order in which systems were added (first is 0).
    pub const fn from_index(index: u32) -> SystemId {
        SystemId(index)
    }

    /// The registration index.
    pub const fn index(self) -> u32 {
        self.0
    }

    /// The id as a plain number.
    pub const fn to_u64(self) -> u64 {
        self.0 as u64
    }

    /// The id a plain number stands for, if it can stand for one.
    pub fn from_u64(raw: u64) -> Option<SystemId> {
        u32::try_from(raw).ok().map(SystemId)
    }
}

impl From<SystemId> for u64 {
    fn from(id: SystemId) -> u64 {
        id.to_u64()
    }
}

impl fmt::Display for SystemId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// Something that names a system: a [`SystemId`], or its plain `u64` form.
///
/// This lets [`Plan::is_ordered`](crate::Plan::is_ordered) be called with the ids another layer
/// kept as numbers, without a conversion at every call site.
pub trait AsSystemId: Copy {
    /// The system id, or `None` when the number cannot be one.
    fn as_system_id(self) -> Option<SystemId>;
}

impl AsSystemId for SystemId {
    fn as_system_id(self) -> Option<SystemId> {
        Some(self)
    }
}

impl AsSystemId for u64 {
    fn as_system_id(self) -> Option<SystemId> {
        SystemId::from_u64(self)
    }
}

/// The phases of a frame, in the order they run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// Runs first in a frame.
    First,
    /// Before the fixed-step block and the update.
    PreUpdate,
    /// The main update; the default phase of a new system.
    Update,
    /// After the update.
    PostUpdate,
    /// Runs last in a frame.
    Last,
}

impl Phase {
    /// Every phase, in run order.
    pub const ALL: [Phase; 5] = [
        Phase::First,
        Phase::PreUpdate,
        Phase::Update,
        Phase::PostUpdate,
        Phase::Last,
    ];

    /// The phase's name as written in dumps and diagnostics.
    pub const fn name(self) -> &'static str {
        match self {
            Phase::First => "First",
            Phase::PreUpdate => "PreUpdate",
            Phase::Update => "Update",
            Phase::PostUpdate => "PostUpdate",
            Phase::Last => "Last",
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a system runs: a phase of the frame, or a phase of the fixed-step block.
///
/// A frame runs `First`, `PreUpdate`, then the fixed-step block (zero or more steps, each running
/// `FixedFirst` to `FixedLast`), then `Update`, `PostUpdate` and `Last`. Ordering declarations
/// only connect systems of the same stage; the stage order already orders the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    /// A phase run once per frame.
    Frame(Phase),
    /// A phase of the fixed-step block, run once per fixed step.
    Fixed(Phase),
}

impl Stage {
    /// The number of stages.
    pub const COUNT: usize = 10;

    /// Every stage in the order a frame runs them (the fixed block sits between `PreUpdate`
    /// and `Update`).
    pub const ALL: [Stage; Stage::COUNT] = [
        Stage::Frame(Phase::First),
        Stage::Frame(Phase::PreUpdate),
        Stage::Fixed(Phase::First),
        Stage::Fixed(Phase::PreUpdate),
        Stage::Fixed(Phase::Update),
        Stage::Fixed(Phase::PostUpdate),
        Stage::Fixed(Phase::Last),
        Stage::Frame(Phase::Update),
        Stage::Frame(Phase::PostUpdate),
        Stage::Frame(Phase::Last),
    ];

    /// The stage's place in [`Stage::ALL`].
    pub const fn index(self) -> usize {
        match self {
            Stage::Frame(Phase::First) => 0,
            Stage::Frame(Phase::PreUpdate) => 1,
            Stage::Fixed(Phase::First) => 2,
            Stage::Fixed(Phase::PreUpdate) => 3,
            Stage::Fixed(Phase::Update) => 4,
            Stage::Fixed(Phase::PostUpdate) => 5,
            Stage::Fixed(Phase::Last) => 6,
            Stage::Frame(Phase::Update) => 7,
            Stage::Frame(Phase::PostUpdate) => 8,
            Stage::Frame(Phase::Last) => 9,
        }
    }

    /// The phase, inside or outside the fixed block.
    pub const fn phase(self) -> Phase {
        match self {
            Stage::Frame(phase) | Stage::Fixed(phase) => phase,
        }
    }

    /// Whether the stage belongs to the fixed-step block.
    pub const fn is_fixed(self) -> bool {
        matches!(self, Stage::Fixed(_))
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stage::Frame(phase) => write!(f, "{phase}"),
            Stage::Fixed(phase) => write!(f, "Fixed{phase}"),
        }
    }
}

/// A system's position in the instance hierarchy, which orders systems that no declaration
/// orders.
///
/// It is a path of child indices from the root: `[2, 0]` is the first child of the root's third
/// child. Paths compare element by element, a prefix first, so sorting by key gives a
/// depth-first pre-order walk (a parent before its children, siblings in order). A caller with a
/// flat order passes one number ([`HierarchyKey::from`] a `u32`, or [`HierarchyKey::rank`] for a
/// `u64`). The empty key, the default, sorts before every other; systems with equal keys run in
/// registration order ([`SystemId`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HierarchyKey(Arc<[u32]>);

impl HierarchyKey {
    /// The key at this path of child indices.
    pub fn path(indices: impl Into<Vec<u32>>) -> HierarchyKey {
        HierarchyKey(indices.into().into())
    }

    /// A key for a flat 64-bit rank, ordered as the ranks are.
    pub fn rank(rank: u64) -> HierarchyKey {
        // Two big-endian halves compare exactly as the whole number does.
        let high = (rank >> 32) as u32;
        let low = (rank & u64::from(u32::MAX)) as u32;
        HierarchyKey(Arc::new([high, low]))
    }

    /// The path of child indices.
    pub fn indices(&self) -> &[u32] {
        &self.0
    }
}

impl From<u32> for HierarchyKey {
    fn from(index: u32) -> HierarchyKey {
        HierarchyKey(Arc::new([index]))
    }
}

impl From<Vec<u32>> for HierarchyKey {
    fn from(indices: Vec<u32>) -> HierarchyKey {
        HierarchyKey(indices.into())
    }
}

impl<const N: usize> From<[u32; N]> for HierarchyKey {
    fn from(indices: [u32; N]) -> HierarchyKey {
        HierarchyKey(Arc::new(indices))
    }
}

impl fmt::Display for HierarchyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("-");
        }
        for (i, index) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(".")?;
            }
            write!(f, "{index}")?;
        }
        Ok(())
    }
}

/// Which way a declaration orders a system against its target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Relation {
    /// The system runs before the target.
    Before,
    /// The system runs after the target.
    After,
}

impl fmt::Display for Relation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Relation::Before => "before",
            Relation::After => "after",
        })
    }
}

/// A system to add to a [`Schedule`](crate::Schedule): a name, a body of the caller's type, and
/// where and when it runs.
///
/// A new system runs in [`Phase::Update`] of the frame, every frame, belongs to no set, declares
/// no order, has the empty [`HierarchyKey`] and is enabled. `before` and `after` name a system
/// or a set; a set stands for all its members.
#[derive(Clone, Debug)]
pub struct System<B> {
    pub(crate) name: Arc<str>,
    pub(crate) phase: Phase,
    pub(crate) fixed: bool,
    pub(crate) sets: Vec<Arc<str>>,
    pub(crate) before: Vec<Arc<str>>,
    pub(crate) after: Vec<Arc<str>>,
    pub(crate) interval: Option<f64>,
    pub(crate) hierarchy: HierarchyKey,
    pub(crate) enabled: bool,
    pub(crate) body: B,
}

impl<B> System<B> {
    /// A system named `name` running `body`.
    pub fn new(name: impl Into<Arc<str>>, body: B) -> System<B> {
        System {
            name: name.into(),
            phase: Phase::Update,
            fixed: false,
            sets: Vec::new(),
            before: Vec::new(),
            after: Vec::new(),
            interval: None,
            hierarchy: HierarchyKey::default(),
            enabled: true,
            body,
        }
    }

    /// Runs the system in `phase` (of the frame, or of the fixed block with
    /// [`System::in_fixed_block`]).
    pub fn in_phase(mut self, phase: Phase) -> System<B> {
        self.phase = phase;
        self
    }

    /// Runs the system in the fixed-step block, once per fixed step, in its phase there.
    pub fn in_fixed_block(mut self) -> System<B> {
        self.fixed = true;
        self
    }

    /// Adds the system to the set named `set`.
    pub fn in_set(mut self, set: impl Into<Arc<str>>) -> System<B> {
        let set = set.into();
        if !self.sets.contains(&set) {
            self.sets.push(set);
        }
        self
    }

    /// Orders the system before the system or every member of the set named `target`.
    pub fn before(mut self, target: impl Into<Arc<str>>) -> System<B> {
        self.before.push(target.into());
        self
    }

    /// Orders the system after the system or every member of the set named `target`.
    pub fn after(mut self, target: impl Into<Arc<str>>) -> System<B> {
        self.after.push(target.into());
        self
    }

    /// Runs the system at most once per `seconds` of its stage's time, with the time accumulated
    /// since its previous run.
    pub fn with_interval(mut self, seconds: f64) -> System<B> {
        self.interval = Some(seconds);
        self
    }

    /// Sets the system's position in the hierarchy.
    pub fn with_hierarchy(mut self, key: impl Into<HierarchyKey>) -> System<B> {
        self.hierarchy = key.into();
        self
    }

    /// Adds the system disabled: it is neither scheduled nor run until enabled.
    pub fn disabled(mut self) -> System<B> {
        self.enabled = false;
        self
    }

    /// The system's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The system's phase.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// Whether the system runs in the fixed-step block.
    pub fn is_fixed(&self) -> bool {
        self.fixed
    }

    /// The stage the system runs in.
    pub fn stage(&self) -> Stage {
        if self.fixed {
            Stage::Fixed(self.phase)
        } else {
            Stage::Frame(self.phase)
        }
    }

    /// The sets the system belongs to, in the order they were added.
    pub fn sets(&self) -> &[Arc<str>] {
        &self.sets
    }

    /// The targets the system runs before, as written.
    pub fn before_targets(&self) -> &[Arc<str>] {
        &self.before
    }

    /// The targets the system runs after, as written.
    pub fn after_targets(&self) -> &[Arc<str>] {
        &self.after
    }

    /// The interval in seconds, if the system has one.
    pub fn interval(&self) -> Option<f64> {
        self.interval
    }

    /// The system's position in the hierarchy.
    pub fn hierarchy(&self) -> &HierarchyKey {
        &self.hierarchy
    }

    /// Whether the system is enabled.
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// The body.
    pub fn body(&self) -> &B {
        &self.body
    }

    /// The body, mutably.
    pub fn body_mut(&mut self) -> &mut B {
        &mut self.body
    }

    /// Gives the body back.
    pub fn into_body(self) -> B {
        self.body
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage_indices_match_the_run_order() {
        for (i, stage) in Stage::ALL.iter().enumerate() {
            assert_eq!(stage.index(), i, "{stage}");
        }
    }

    #[test]
    fn hierarchy_keys_sort_depth_first() {
        let mut keys = [
            HierarchyKey::path([2]),
            HierarchyKey::path([1, 5]),
            HierarchyKey::default(),
            HierarchyKey::path([1]),
            HierarchyKey::path([1, 0, 3]),
        ];
        keys.sort();
        let shown: Vec<String> = keys.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["-", "1", "1.0.3", "1.5", "2"]);
    }

    #[test]
    fn ranks_keep_their_order() {
        let ranks = [0, 1, u64::from(u32::MAX), u64::from(u32::MAX) + 1, u64::MAX];
        for pair in ranks.windows(2) {
            assert!(HierarchyKey::rank(pair[0]) < HierarchyKey::rank(pair[1]));
        }
    }
}
