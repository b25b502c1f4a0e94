//! `Outbox`: what the arena tells its consumers between drains: the queued events, the
//! part-write log and the topology journal.
//!
//! Invariant: events are only appended, until a drain takes them all; journal sequence
//! numbers only grow. Rewinding to a mark (construction rollback) removes exactly what was
//! recorded after it: the events are truncated, the journals retract their entries without
//! reissuing their sequence numbers.

use crate::event::{Event, PartWrite, TopologyChange};
use crate::journal::BoundedJournal;

/// How many entries the part-write log retains before dropping its older half.
pub const PART_LOG_CAPACITY: usize = 65_536;
/// How many entries the topology journal retains before dropping its older half.
pub const TOPOLOGY_LOG_CAPACITY: usize = 65_536;

/// The queued events and the two journals of one arena.
#[derive(Debug)]
pub(crate) struct Outbox {
    events: Vec<Event>,
    part_log: BoundedJournal<PartWrite>,
    topology_log: BoundedJournal<TopologyChange>,
}

/// Where the outbox stood at a checkpoint.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OutboxMark {
    events: usize,
    topology_head: u64,
    part_head: u64,
}

impl Outbox {
    pub(crate) fn new() -> Self {
        Self {
            events: Vec::new(),
            part_log: BoundedJournal::new(PART_LOG_CAPACITY),
            topology_log: BoundedJournal::new(TOPOLOGY_LOG_CAPACITY),
        }
    }

    pub(crate) fn events(&self) -> &[Event] {
        &self.events
    }

    pub(crate) fn part_log(&self) -> &BoundedJournal<PartWrite> {
        &self.part_log
    }

    pub(crate) fn topology_log(&self) -> &BoundedJournal<TopologyChange> {
        &self.topology_log
    }

    /// Queues an event.
    pub(crate) fn event(&mut self, event: Event) {
        self.events.push(event);
    }

    /// Appends to the part-write log.
    pub(crate) fn part(&mut self, write: PartWrite) {
        self.part_log.push(write);
    }

    /// Appends to the topology journal.
    pub(crate) fn topology(&mut self, change: TopologyChange) {
        self.topology_log.push(change);
    }

    /// Takes every queued event (a drain).
    pub(crate) fn take_events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.events)
    }

    pub(crate) fn mark(&self) -> OutboxMark {
        OutboxMark {
            events: self.events.len(),
            topology_head: self.topology_log.head(),
            part_head: self.part_log.head(),
        }
    }

    /// Removes what was recorded after `mark`, which no drain can have passed (a construction
    /// batch refuses draining).
    pub(crate) fn rewind(&mut self, mark: OutboxMark) {
        self.events.truncate(mark.events);
        self.topology_log.retract_from(mark.topology_head);
        self.part_log.retract_from(mark.part_head);
    }
}
