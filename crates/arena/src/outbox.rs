//! `Outbox`: what the arena tells its consumers between drains: the queued events, the
//! part-write log and the topology journal.
//!
//! Invariant: events are only appended, until a drain takes them all, except that a creation
//! announced right after the creation of the previous id under the same parent extends that
//! announcement into (or as) one `CreatedRange`; journal sequence numbers only grow. Rewinding to a mark (construction rollback) removes exactly what was
//! recorded after it: the events are truncated, the journals retract their entries without
//! reissuing their sequence numbers.

use crate::event::{Event, PartWrite, TopologyChange};
use crate::id::InstanceId;
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
    /// How many creations the last queued event announced, when it announced creations: a
    /// later creation may extend it, and rewinding shrinks it back.
    last_created: Option<u32>,
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

    /// Queues an event. A `Created` that continues the previous event's run of creations
    /// (the next id, the same parent) extends that event instead, so creating many instances
    /// one at a time queues one event, as `create_many` does.
    pub(crate) fn event(&mut self, event: Event) {
        if let (Event::Created { id, parent }, Some(last)) = (&event, self.events.last_mut())
            && let Some((first, count, last_parent)) = created_run(last)
            && last_parent == *parent
            && count < u32::MAX
            && first.get().checked_add(u64::from(count)) == Some(id.get())
        {
            *last = created_event(first, count + 1, *parent);
            return;
        }
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

    /// Queues `events` as they are, after the ones queued (an arena rebuilt from an image, whose
    /// events are queued exactly as imaged, without joining creations into ranges).
    pub(crate) fn queue_imaged(&mut self, events: &[Event]) {
        self.events.extend_from_slice(events);
    }

    /// Takes every queued event (a drain) into `taken` (emptied first), whose buffer becomes
    /// the queue's: no event is copied.
    pub(crate) fn take_events_into(&mut self, taken: &mut Vec<Event>) {
        taken.clear();
        std::mem::swap(taken, &mut self.events);
    }

    /// Takes every queued event (an arena rebuilt from an image drops them).
    pub(crate) fn take_events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.events)
    }

    pub(crate) fn mark(&self) -> OutboxMark {
        OutboxMark {
            events: self.events.len(),
            last_created: self
                .events
                .last()
                .and_then(created_run)
                .map(|(_, count, _)| count),
            topology_head: self.topology_log.head(),
            part_head: self.part_log.head(),
        }
    }

    /// Puts the queued events back to `events` and retracts every journal entry recorded
    /// after the heads `topology_head` and `part_head` (a whole-arena restore): readers at
    /// those heads or earlier read on as if nothing had been written since, and readers that
    /// saw a retracted entry are refused.
    pub(crate) fn restore(&mut self, events: &[Event], topology_head: u64, part_head: u64) {
        self.events.clear();
        self.events.extend_from_slice(events);
        self.topology_log.retract_from(topology_head);
        self.part_log.retract_from(part_head);
    }

    /// Removes what was recorded after `mark`, which no drain can have passed (a construction
    /// batch refuses draining).
    pub(crate) fn rewind(&mut self, mark: OutboxMark) {
        self.events.truncate(mark.events);
        if let (Some(count), Some(last)) = (mark.last_created, self.events.last_mut())
            && let Some((first, _, parent)) = created_run(last)
        {
            *last = created_event(first, count, parent);
        }
        self.topology_log.retract_from(mark.topology_head);
        self.part_log.retract_from(mark.part_head);
    }
}

/// The run of creations an event announces: its first id, how many, and their parent.
fn created_run(event: &Event) -> Option<(InstanceId, u32, Option<InstanceId>)> {
    match *event {
        Event::Created { id, parent } => Some((id, 1, parent)),
        Event::CreatedRange {
            first,
            count,
            parent,
        } => Some((first, count, parent)),
        _ => None,
    }
}

/// The event announcing `count` creations from `first` under `parent`.
fn created_event(first: InstanceId, count: u32, parent: Option<InstanceId>) -> Event {
    if count == 1 {
        Event::Created { id: first, parent }
    } else {
        Event::CreatedRange {
            first,
            count,
            parent,
        }
    }
}
