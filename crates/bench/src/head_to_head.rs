//! The head-to-head workloads, each written once: [`Work`] names them in run order with the
//! sizes they run at and their items, and [`entry`] gives each its timed region. A library
//! takes part by implementing [`Library`]: its [`Mechanism`] for every workload (how it does the
//! work, in a few words, or why it cannot), and for every fixture the builder and the routines
//! the timed regions call on it. Strata (`query::Strata`) and, with the `peers` feature,
//! `bevy_ecs`, hecs and shipyard implement it; [`register`] turns the implementations into
//! [`Workload`]s and the work a library cannot do into [`Unsupported`] entries. The data every
//! library's fixtures hold comes from [`crate::data`].
//!
//! Adding a workload: a [`Work`] variant (its name, sizes, items and small size), its fixture
//! and routine in [`Library`] (or a routine over an existing fixture), an arm of [`entry`]
//! choosing its timed region, and each library's mechanism, builder and routine (or
//! [`Mechanism::Cannot`] with the reason).
//!
//! Invariant: for one workload and size, every library's record measures the same timed region:
//! the fixture is built by the library's builder outside the timed region, and the timed region
//! is one call of its routine (one visit for the changed workloads), with the outputs dropped
//! after the clock stops, exactly as [`entry`] arranges for every library alike. A fixture is
//! built only for work whose mechanism is [`Mechanism::Does`], so a library that cannot do a
//! workload registers nothing for it and says why.

use std::cell::RefCell;
use std::convert::Infallible;

use crate::data::{
    ADD_REMOVE_SIZE, BULK_SIZE, CHANGED_SIZE, CLONE_SIZE, DESPAWN_SIZE, EMPTY_SYSTEMS,
    ENTITY_SIZES, FRAG_KINDS, FRAG_PER_KIND, FRAMES, JOIN_SIZES, REFERENCE_SIZES, ROLLBACK_SIZE,
    Spawn, schedule,
};
use crate::harness::{Bencher, Workload};
use crate::overlay::PARALLEL_WRITE_SIZE;
use crate::report::Unsupported;

/// A head-to-head workload; [`Work::ALL`] lists them in run order. Each compares the libraries
/// on the same data and work, as the table in [`crate::data`] describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    /// Spawn entities with the four body components one at a time.
    Spawn,
    /// The same through the library's bulk spawn.
    SpawnBatch,
    /// `Position += Velocity` over every body.
    Iter2,
    /// `Data = -Data` over 26 kinds of 20 entities.
    FragIter,
    /// Add `B` to every entity with `A`, then remove it from all.
    AddRemove,
    /// Sum `Big` over the few entities that also carry `Small`.
    SmallDriverJoin,
    /// Visit the rows written since the last visit (1% written between samples).
    ChangedFilter,
    /// The same, 10 frames a sample in a world spawned one entity at a time.
    ChangedFilterFrames,
    /// Despawn every other entity, then spawn as many.
    DespawnRespawn,
    /// Destroy the targets holders refer to and clear the references.
    ReferenceCleanup,
    /// Copy a world eagerly.
    WorldClone,
    /// Copy a world, then write every Position of the copy.
    WorldCloneThenWrite,
    /// Write every `Heat` in parallel on a 2-thread pool.
    ParallelWrite,
    /// Spawn bodies through the library's bulk path into a fresh world.
    BulkSpawn,
    /// Add `Tagged` to every member of a query.
    BulkSet,
    /// Remove `Tagged` from every member of a query.
    BulkRemove,
    /// Despawn every member of a query.
    BulkDespawn,
    /// Snapshot, a frame's work, and back to the snapshot.
    RollbackFrame,
    /// Eight frames, each after a snapshot kept in a window, then back to the oldest.
    RollbackWindow,
    /// One frame of three systems swapping fields, on the library's scheduler.
    Schedule,
    /// One frame of 100 systems that do nothing.
    FrameOverhead,
}

impl Work {
    /// Every head-to-head workload, in run order.
    pub const ALL: [Work; 21] = [
        Work::Spawn,
        Work::SpawnBatch,
        Work::Iter2,
        Work::FragIter,
        Work::AddRemove,
        Work::SmallDriverJoin,
        Work::ChangedFilter,
        Work::ChangedFilterFrames,
        Work::DespawnRespawn,
        Work::ReferenceCleanup,
        Work::WorldClone,
        Work::WorldCloneThenWrite,
        Work::ParallelWrite,
        Work::BulkSpawn,
        Work::BulkSet,
        Work::BulkRemove,
        Work::BulkDespawn,
        Work::RollbackFrame,
        Work::RollbackWindow,
        Work::Schedule,
        Work::FrameOverhead,
    ];

    /// The name every library's records carry.
    pub fn name(self) -> &'static str {
        match self {
            Work::Spawn => "spawn",
            Work::SpawnBatch => "spawn_batch",
            Work::Iter2 => "iter2",
            Work::FragIter => "frag_iter",
            Work::AddRemove => "add_remove",
            Work::SmallDriverJoin => "small_driver_join",
            Work::ChangedFilter => "changed_filter",
            Work::ChangedFilterFrames => "changed_filter_frames",
            Work::DespawnRespawn => "despawn_respawn",
            Work::ReferenceCleanup => "reference_cleanup",
            Work::WorldClone => "world_clone",
            Work::WorldCloneThenWrite => "world_clone_then_write",
            Work::ParallelWrite => "parallel_write",
            Work::BulkSpawn => "bulk_spawn",
            Work::BulkSet => "bulk_set",
            Work::BulkRemove => "bulk_remove",
            Work::BulkDespawn => "bulk_despawn",
            Work::RollbackFrame => "rollback_frame",
            Work::RollbackWindow => "rollback_window",
            Work::Schedule => "schedule",
            Work::FrameOverhead => "frame_overhead",
        }
    }

    /// The sizes the workload is registered at, in run order.
    pub fn scales(self) -> Vec<Scale> {
        match self {
            Work::Spawn | Work::SpawnBatch | Work::Iter2 => {
                ENTITY_SIZES.into_iter().map(Scale::of).collect()
            }
            Work::FragIter => vec![Scale::of(FRAG_KINDS * FRAG_PER_KIND)],
            Work::AddRemove => vec![Scale::of(ADD_REMOVE_SIZE)],
            Work::SmallDriverJoin => JOIN_SIZES
                .into_iter()
                .map(|(n_big, n_small)| Scale::with(n_big, n_small))
                .collect(),
            Work::ChangedFilter | Work::ChangedFilterFrames => vec![Scale::of(CHANGED_SIZE)],
            Work::DespawnRespawn => vec![Scale::of(DESPAWN_SIZE)],
            Work::ReferenceCleanup => vec![Scale::with(REFERENCE_SIZES.0, REFERENCE_SIZES.1)],
            Work::WorldClone | Work::WorldCloneThenWrite => vec![Scale::of(CLONE_SIZE)],
            Work::ParallelWrite => vec![Scale::of(PARALLEL_WRITE_SIZE)],
            Work::BulkSpawn | Work::BulkSet | Work::BulkRemove | Work::BulkDespawn => {
                vec![Scale::of(BULK_SIZE)]
            }
            Work::RollbackFrame | Work::RollbackWindow => vec![Scale::of(ROLLBACK_SIZE)],
            Work::Schedule => vec![Scale::with(4 * schedule::GROUP, schedule::GROUP)],
            Work::FrameOverhead => vec![Scale::of(EMPTY_SYSTEMS)],
        }
    }

    /// A size small enough for a test to run the workload in milliseconds, large enough that
    /// every part of its work happens (a 1% write touches rows, a churn finds bodies).
    pub fn small(self) -> Scale {
        match self {
            // Their fixtures have one fixed size.
            Work::FragIter | Work::FrameOverhead => self.scales()[0],
            Work::SmallDriverJoin => Scale::with(2_000, 20),
            Work::ReferenceCleanup => Scale::with(200, 10),
            Work::Schedule => Scale::with(400, 100),
            _ => Scale::of(2_000),
        }
    }

    /// The items one run processes at `scale`, the divisor of the time per item: the entities
    /// that also carry `Small` for `small_driver_join`, the frames of a sample for
    /// `changed_filter_frames`, the size otherwise.
    pub fn items(self, scale: Scale) -> u64 {
        match self {
            Work::SmallDriverJoin => scale.k,
            Work::ChangedFilterFrames => FRAMES,
            _ => scale.n,
        }
    }
}

/// One size of a workload: `n`, the size the reports show, and for three workloads a second
/// count that shapes the fixture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scale {
    /// The size: the entities (holders, systems) the workload works on.
    pub n: u64,
    /// `small_driver_join`: the entities that also carry `Small` (the items of one run);
    /// `reference_cleanup`: the targets; `schedule`: the entities of each of its four groups.
    /// Zero elsewhere.
    pub k: u64,
}

impl Scale {
    /// A size with no second count.
    pub const fn of(n: u64) -> Scale {
        Scale { n, k: 0 }
    }

    /// A size with a second count.
    pub const fn with(n: u64, k: u64) -> Scale {
        Scale { n, k }
    }
}

/// How one library does one workload, or why it cannot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    /// The library does the work, as these few words say (the records show them).
    Does(&'static str),
    /// The library has no way to do this work through its public API; the reason, in a
    /// sentence, is reported instead of a record.
    Cannot(&'static str),
    /// The library measures this work only under the other workload named here (Strata's
    /// copy-on-write `world_snapshot` for the peers' eager `world_clone`): nothing is
    /// registered or reported.
    Instead(&'static str),
}

/// A library in the head-to-head comparison: its [`Mechanism`] for every [`Work`], and for
/// every fixture a builder (run outside the timed region) and the routines the timed regions
/// call on it.
///
/// Routines return what they produce (a count, a sum, a copy) so the optimiser cannot drop the
/// work and so its drop happens after the clock stops; `use<Self>` says the output borrows
/// nothing from the fixture. A library that cannot do a workload says so in
/// [`Library::mechanism`] and sets the fixture type to [`Infallible`]: its builder is
/// [`never_built`] (no fixture is built for such work) and its routines are
/// `match *never {}`.
pub trait Library: 'static {
    /// The library's name in the records: `strata`, or the peer crate's name.
    const NAME: &'static str;

    /// How the library does `work`, or why it cannot.
    fn mechanism(work: Work) -> Mechanism;

    /// A world with nothing in it: the fixture of `spawn`, `spawn_batch` and `bulk_spawn`.
    type Empty;
    /// A world with nothing in it.
    fn empty() -> Self::Empty;
    /// The routine of `spawn`: `n` bodies spawned one at a time.
    fn spawn_each(world: &mut Self::Empty, n: u64) -> impl Sized + use<Self>;
    /// The routine of `spawn_batch`: `n` bodies through the library's bulk spawn.
    fn spawn_in_batch(world: &mut Self::Empty, n: u64) -> impl Sized + use<Self>;
    /// The routine of `bulk_spawn`: `n` bodies through the library's bulk path; by default
    /// its batch spawn, which is the bulk path of every peer.
    fn spawn_in_bulk(world: &mut Self::Empty, n: u64) -> impl Sized + use<Self> {
        Self::spawn_in_batch(world, n)
    }

    /// The fixture of `iter2`.
    type Bodies;
    /// `n` bodies ([`crate::data::body`]).
    fn bodies(n: u64) -> Self::Bodies;
    /// The routine of `iter2`: `Position += Velocity` over every body.
    fn advance_all(bodies: &mut Self::Bodies) -> impl Sized + use<Self>;

    /// The fixture of `frag_iter`.
    type Fragmented;
    /// 26 kinds of 20 entities, each also with `Data` ([`crate::data::fragment`]).
    fn fragmented() -> Self::Fragmented;
    /// The routine of `frag_iter`: every `Data` negated.
    fn negate_all(world: &mut Self::Fragmented) -> impl Sized + use<Self>;

    /// The fixture of `add_remove`.
    type WithA;
    /// `n` entities with `A` ([`crate::data::a`]).
    fn with_a(n: u64) -> Self::WithA;
    /// The routine of `add_remove`: `B` added to every entity, then removed from every one.
    fn add_then_remove(world: &mut Self::WithA) -> impl Sized + use<Self>;

    /// The fixture of `small_driver_join`.
    type Joinable;
    /// `n_big` entities with `Big`, `n_small` of them with `Small` too
    /// ([`crate::data::is_small`]).
    fn joinable(n_big: u64, n_small: u64) -> Self::Joinable;
    /// The routine of `small_driver_join`: the sum of `Big` over the entities with both.
    fn join_sum(world: &mut Self::Joinable) -> f64;

    /// The fixture of `changed_filter` and `changed_filter_frames`.
    type Changed: ChangedWork;
    /// `n` positions spawned as `spawn` says (in bulk for `changed_filter`, one at a time for
    /// `changed_filter_frames`), change detection on, a first visit done.
    fn changed(n: u64, spawn: Spawn) -> Self::Changed;

    /// The fixture of `despawn_respawn`.
    type Movers;
    /// `n` entities with Position and Velocity.
    fn movers(n: u64) -> Self::Movers;
    /// The routine of `despawn_respawn`: every other entity despawned, then as many spawned
    /// with the values of the first; returns how many were despawned.
    fn despawn_then_respawn(world: &mut Self::Movers) -> u64;

    /// The fixture of `reference_cleanup`.
    type Referencing;
    /// `n_targets` targets and `n_holders` holders, holder `i` referring to target
    /// `i % n_targets`.
    fn referencing(n_holders: u64, n_targets: u64) -> Self::Referencing;
    /// The routine of `reference_cleanup`: every target destroyed and the references to it
    /// cleared.
    fn destroy_targets(world: &mut Self::Referencing) -> impl Sized + use<Self>;

    /// The fixture of `world_clone`.
    type Cloneable;
    /// `n` entities with Position, Rotation and Velocity.
    fn cloneable(n: u64) -> Self::Cloneable;
    /// The routine of `world_clone`: the copy, returned so its drop is not timed.
    fn clone_world(world: &mut Self::Cloneable) -> impl Sized + use<Self>;

    /// The fixture of `world_clone_then_write`.
    type Copyable;
    /// The world of `world_clone`, as this workload copies it.
    fn copyable(n: u64) -> Self::Copyable;
    /// The routine of `world_clone_then_write`: a copy, then every Position of the copy
    /// nudged; the copy is returned so its drop is not timed.
    fn clone_then_write(world: &mut Self::Copyable) -> impl Sized + use<Self>;

    /// The fixture of `parallel_write`.
    type Heated;
    /// `n` entities with `Heat` 0, and the pool the writes run on.
    fn heated(n: u64) -> Self::Heated;
    /// The routine of `parallel_write`: `value` written into every `Heat` in parallel.
    fn write_in_parallel(world: &mut Self::Heated, value: f64) -> impl Sized + use<Self>;

    /// The fixture of `bulk_set`, `bulk_remove` and `bulk_despawn`.
    type Bulk;
    /// `n` bodies and the query over them.
    fn bulk_bodies(n: u64) -> Self::Bulk;
    /// `n` bodies that also carry `Tagged`, and the query over them.
    fn tagged_bodies(n: u64) -> Self::Bulk;
    /// The routine of `bulk_set`: the query's members collected, then each tagged.
    fn tag_all(world: &mut Self::Bulk) -> impl Sized + use<Self>;
    /// The routine of `bulk_remove`: the query's members collected, then each untagged.
    fn untag_all(world: &mut Self::Bulk) -> impl Sized + use<Self>;
    /// The routine of `bulk_despawn`: the query's members collected, then each despawned.
    fn despawn_all(world: &mut Self::Bulk) -> impl Sized + use<Self>;

    /// The fixture of `rollback_frame`.
    type Rollback;
    /// `n` bodies with Position, Rotation and Velocity.
    fn rollback_world(n: u64) -> Self::Rollback;
    /// The routine of `rollback_frame`: the world saved, the frame's work done, the world put
    /// back; returns (Positions written, bodies spawned, bodies destroyed).
    fn rollback_once(world: &mut Self::Rollback) -> (u64, u64, u64);
    /// The routine of `rollback_window`: [`crate::data::ROLLBACK_WINDOW`] frames, each saving
    /// the world first and keeping every save, each frame's work as `rollback_frame`'s but
    /// destroying [`crate::data::window_destroyed`]; then the world put back as it was at the
    /// oldest save. Returns the work done (summed over the frames) and the saves, so their
    /// drop is not timed.
    fn rollback_window_once(
        world: &mut Self::Rollback,
    ) -> ((u64, u64, u64), impl Sized + use<Self>);

    /// The fixture of `schedule` and `frame_overhead`: a world and its scheduled systems.
    type Frame;
    /// The three swapping systems of `schedule` over four groups of `group` entities.
    fn swapping(group: u64) -> Self::Frame;
    /// [`EMPTY_SYSTEMS`] systems that do nothing, for `frame_overhead`.
    fn idle() -> Self::Frame;
    /// The routine of `schedule` and `frame_overhead`: one frame of the scheduled systems.
    fn run_frame(frame: &mut Self::Frame) -> impl Sized + use<Self>;
}

/// The builder of a fixture a library cannot build: `Infallible`, the fixture type of work
/// whose [`Library::mechanism`] is not [`Mechanism::Does`].
///
/// # Panics
///
/// Always, should it ever be called; [`entry`] builds fixtures only inside the bodies of
/// workloads whose mechanism is [`Mechanism::Does`], so it never is.
pub fn never_built() -> Infallible {
    unreachable!("no fixture is built for work a library cannot do (see Library::mechanism)")
}

/// The state one library's `changed_filter` and `changed_filter_frames` keep across samples:
/// its world of `Position`s with change detection switched on, and the rows
/// [`crate::data::written_groups`] picks.
pub trait ChangedWork {
    /// The untimed part of a frame: every row of the group of `frame` nudged
    /// ([`crate::data::Position::nudge`]) through the library's tracked path.
    fn write(&mut self, frame: u64);
    /// The timed part: the rows changed since the last visit, through the library's change
    /// detection, [`crate::data::tally`]ed.
    fn visit(&mut self) -> (u64, f32);
}

/// One library's part in one workload at one size.
pub enum Entry {
    /// The workload, ready to run.
    Measured(Workload),
    /// The work the library cannot do, for the reports.
    Cannot(Unsupported),
    /// The library measures this work under another name: nothing to register or report.
    Instead,
}

/// A function giving one library's [`Entry`] for a workload and size: `entry::<L>`.
pub type Entrant = fn(Work, Scale) -> Entry;

/// Library `L`'s part in `work` at `scale`: the workload with its timed region and items, the
/// same for every library, or why `L` cannot do it.
pub fn entry<L: Library>(work: Work, scale: Scale) -> Entry {
    let mechanism = match L::mechanism(work) {
        Mechanism::Does(mechanism) => mechanism,
        Mechanism::Cannot(reason) => {
            return Entry::Cannot(Unsupported {
                library: L::NAME.to_owned(),
                workload: work.name().to_owned(),
                reason: reason.to_owned(),
            });
        }
        Mechanism::Instead(_) => return Entry::Instead,
    };
    let Scale { n, k } = scale;
    let body = match work {
        Work::Spawn => fresh(L::empty, move |w| L::spawn_each(w, n)),
        Work::SpawnBatch => fresh(L::empty, move |w| L::spawn_in_batch(w, n)),
        Work::Iter2 => kept(move || L::bodies(n), L::advance_all),
        Work::FragIter => kept(L::fragmented, L::negate_all),
        // A fresh world per sample: a reused one would start later samples with B's storage
        // (Strata's sparse entries, columns and removal log) already grown.
        Work::AddRemove => fresh(move || L::with_a(n), L::add_then_remove),
        Work::SmallDriverJoin => kept(move || L::joinable(n, k), L::join_sum),
        Work::ChangedFilter => changed_once(move || L::changed(n, Spawn::Batch)),
        Work::ChangedFilterFrames => changed_frames(move || L::changed(n, Spawn::OneByOne)),
        Work::DespawnRespawn => fresh(move || L::movers(n), L::despawn_then_respawn),
        Work::ReferenceCleanup => fresh(move || L::referencing(n, k), L::destroy_targets),
        Work::WorldClone => kept(move || L::cloneable(n), L::clone_world),
        Work::WorldCloneThenWrite => kept(move || L::copyable(n), L::clone_then_write),
        Work::ParallelWrite => parallel(move || L::heated(n), L::write_in_parallel),
        Work::BulkSpawn => fresh(L::empty, move |w| L::spawn_in_bulk(w, n)),
        Work::BulkSet => fresh(move || L::bulk_bodies(n), L::tag_all),
        Work::BulkRemove => fresh(move || L::tagged_bodies(n), L::untag_all),
        Work::BulkDespawn => fresh(move || L::bulk_bodies(n), L::despawn_all),
        Work::RollbackFrame => kept(move || L::rollback_world(n), L::rollback_once),
        Work::RollbackWindow => kept(move || L::rollback_world(n), L::rollback_window_once),
        Work::Schedule => kept(move || L::swapping(k), L::run_frame),
        Work::FrameOverhead => kept(L::idle, L::run_frame),
    };
    Entry::Measured(
        Workload::new(work.name(), n, mechanism, body)
            .items(work.items(scale))
            .library(L::NAME),
    )
}

/// The head-to-head workloads of `libraries` (such as `[entry::<Hecs>, entry::<Shipyard>]`),
/// grouped by workload and size so the libraries of one comparison run one after another in
/// the order given, the workloads in [`Work::ALL`] order and each one's sizes in table order;
/// then the work each library cannot do, once per workload, in the same order.
pub fn register(libraries: &[Entrant]) -> (Vec<Workload>, Vec<Unsupported>) {
    let mut workloads = Vec::new();
    let mut unsupported: Vec<Unsupported> = Vec::new();
    for work in Work::ALL {
        for scale in work.scales() {
            for entrant in libraries {
                match entrant(work, scale) {
                    Entry::Measured(workload) => workloads.push(workload),
                    Entry::Cannot(cannot) => {
                        if !unsupported.contains(&cannot) {
                            unsupported.push(cannot);
                        }
                    }
                    Entry::Instead => {}
                }
            }
        }
    }
    (workloads, unsupported)
}

/// A workload's body, as [`Workload::new`] takes it.
type Body = Box<dyn FnMut(&mut Bencher)>;

/// Every sample starts from a fresh fixture, built by `setup`; only `routine` is timed, and the
/// fixture and the output are dropped after the clock stops.
fn fresh<F, O>(
    mut setup: impl FnMut() -> F + 'static,
    mut routine: impl FnMut(&mut F) -> O + 'static,
) -> Body {
    Box::new(move |b| b.iter_with_setup(&mut setup, &mut routine))
}

/// One fixture, built once by `build` before the samples and kept across them, as a game
/// keeps its world; `routine` is timed run after run on it.
fn kept<F, O>(
    mut build: impl FnMut() -> F + 'static,
    mut routine: impl FnMut(&mut F) -> O + 'static,
) -> Body {
    Box::new(move |b| {
        let mut fixture = build();
        b.iter(|| routine(&mut fixture));
    })
}

/// One fixture kept across samples, and `write` timed run after run with the run's number as
/// the value to write (see [`time_parallel_writes`]).
fn parallel<F, O>(
    mut build: impl FnMut() -> F + 'static,
    mut write: impl FnMut(&mut F, f64) -> O + 'static,
) -> Body {
    Box::new(move |b| {
        let mut fixture = build();
        time_parallel_writes(b, |value| write(&mut fixture, value));
    })
}

/// Times `write_all`, handing it the run's number (1, 2, 3, ...) as the value to write: every
/// run then changes every value it writes without the world being reset between runs.
/// `parallel_write` and Strata's `overlay_parallel_write` are timed this way.
pub fn time_parallel_writes<O>(b: &mut Bencher, mut write_all: impl FnMut(f64) -> O) {
    let mut run = 0.0;
    b.iter(|| {
        run += 1.0;
        write_all(run)
    });
}

/// `changed_filter`: the fixture is built once (its world spawned in bulk), then each sample
/// writes the same 1% of rows in setup and times one visit.
fn changed_once<F: ChangedWork>(mut build: impl FnMut() -> F + 'static) -> Body {
    Box::new(move |b| {
        let fixture = RefCell::new(build());
        b.iter_with_setup(
            || fixture.borrow_mut().write(0),
            |_| fixture.borrow_mut().visit(),
        );
    })
}

/// `changed_filter_frames`: the fixture is built once, its world spawned one entity at a
/// time; then frame after frame (counted across samples) writes another 1% of the rows untimed
/// and times one visit. A sample is [`FRAMES`] frames, and its figure the sum of their visits,
/// so the figure per item is the mean per frame.
fn changed_frames<F: ChangedWork>(mut build: impl FnMut() -> F + 'static) -> Body {
    Box::new(move |b| {
        b.iter_frames(
            FRAMES,
            build(),
            |fixture, frame| fixture.write(frame),
            ChangedWork::visit,
        );
    })
}

#[cfg(test)]
pub(crate) mod tests;
