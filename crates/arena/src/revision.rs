//! Revision counters and the set of revision domains an arena maintains.
//!
//! Invariant: every domain records a value of one arena-wide clock, which only moves forward.
//! A domain's revision therefore never decreases, and revisions from different domains (and the
//! per-node revisions) can be compared with each other: "node revision > my last seen mutation
//! revision" means the node was written after I looked.

use std::fmt;

/// A value of the arena clock, recorded by a revision domain or a node.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Revision(pub u64);

impl Revision {
    /// The revision before anything happened.
    pub const ZERO: Self = Self(0);

    /// The raw counter value.
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Debug for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "r{}", self.0)
    }
}

/// A revision domain other than the families (which are indexed by `FamilyId`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Domain {
    /// Allocation, destruction, reparenting.
    Topology,
    /// Writes to node state.
    Mutation,
    /// Tag membership.
    Tags,
    /// Collision-relevant state.
    Collision,
    /// Animation data.
    Animation,
    /// The broad GUI layout memo.
    Layout,
}

/// The arena's revision domains. Each field is the clock value of the latest change in it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Revisions {
    /// The clock itself: the latest change of any kind.
    clock: Revision,
    /// Allocation, destruction, reparenting, rollback: anything that changes membership or
    /// ancestry.
    topology: Revision,
    /// Any write that can change a node's state (name, attributes, built-in state).
    mutation: Revision,
    /// Tag membership.
    tags: Revision,
    /// State relevant to collision scenes: writes to collision classes in the world, and parts
    /// entering or leaving it.
    collision: Revision,
    /// Authored animation data: writes to animation classes, and their creation, destruction
    /// and reparenting.
    animation: Revision,
    /// The broad GUI layout memo: bumped when a whole layer moves or changes.
    layout: Revision,
    /// One revision per class family, indexed by `FamilyId`.
    families: Vec<Revision>,
}

impl Revisions {
    /// The latest clock value of any domain.
    pub fn clock(&self) -> Revision {
        self.clock
    }
    /// Topology: allocation, destruction, reparenting.
    pub fn topology(&self) -> Revision {
        self.topology
    }
    /// Global mutation: writes to node state.
    pub fn mutation(&self) -> Revision {
        self.mutation
    }
    /// Tag membership.
    pub fn tags(&self) -> Revision {
        self.tags
    }
    /// Collision-relevant state.
    pub fn collision(&self) -> Revision {
        self.collision
    }
    /// Animation data: writes to animation instances, and their creation, destruction and moves.
    pub fn animation(&self) -> Revision {
        self.animation
    }
    /// The broad GUI layout memo.
    pub fn layout(&self) -> Revision {
        self.layout
    }
    /// The revision of one class family; `Revision::ZERO` for a family never touched.
    pub fn family(&self, family: crate::FamilyId) -> Revision {
        self.families
            .get(family.index())
            .copied()
            .unwrap_or(Revision::ZERO)
    }

    /// Records the change at `at`, a value of this clock, in `domain`.
    pub(crate) fn record(&mut self, domain: Domain, at: Revision) {
        let revision = match domain {
            Domain::Topology => &mut self.topology,
            Domain::Mutation => &mut self.mutation,
            Domain::Tags => &mut self.tags,
            Domain::Collision => &mut self.collision,
            Domain::Animation => &mut self.animation,
            Domain::Layout => &mut self.layout,
        };
        debug_assert!(
            *revision <= at && at <= self.clock,
            "a domain records clock values, moving forward"
        );
        *revision = at;
    }

    /// Advances the clock and returns the new value.
    pub(crate) fn tick(&mut self) -> Revision {
        self.clock.0 += 1;
        self.clock
    }

    /// The revisions of a state saved with `saved` and restored over this one (now): the
    /// saved values, except that the clock continues from the later of the two and every
    /// domain (and family) whose value differs between them holds one fresh tick, newer than
    /// anything either issued. Returns them with that tick.
    pub(crate) fn restored(&self, saved: &Revisions) -> (Revisions, Revision) {
        let mut out = saved.clone();
        out.clock = self.clock.max(saved.clock);
        let at = out.tick();
        for (now, then) in [
            (self.topology, &mut out.topology),
            (self.mutation, &mut out.mutation),
            (self.tags, &mut out.tags),
            (self.collision, &mut out.collision),
            (self.animation, &mut out.animation),
            (self.layout, &mut out.layout),
        ] {
            if now != *then {
                *then = at;
            }
        }
        let families = self.families.len().max(out.families.len());
        out.families.resize(families, Revision::ZERO);
        for (k, then) in out.families.iter_mut().enumerate() {
            let now = self.families.get(k).copied().unwrap_or(Revision::ZERO);
            if now != *then {
                *then = at;
            }
        }
        (out, at)
    }

    /// Records a construction rollback at `at`: every domain (and family) that changed after
    /// `mark`, the clock value at the checkpoint, now holds `at`, which is newer than anything
    /// issued inside the batch; domains the batch did not touch keep their value.
    pub(crate) fn restamp_since(&mut self, mark: Revision, at: Revision) {
        for domain in [
            &mut self.topology,
            &mut self.mutation,
            &mut self.tags,
            &mut self.collision,
            &mut self.animation,
            &mut self.layout,
        ]
        .into_iter()
        .chain(self.families.iter_mut())
        {
            if *domain > mark {
                *domain = at;
            }
        }
    }

    /// Records the change at `at`, a value of this clock, in a family's domain.
    pub(crate) fn bump_family(&mut self, family: crate::FamilyId, at: Revision) {
        debug_assert!(at <= self.clock, "a family records clock values");
        let index = family.index();
        if self.families.len() <= index {
            self.families.resize(index + 1, Revision::ZERO);
        }
        self.families[index] = at;
    }
}
