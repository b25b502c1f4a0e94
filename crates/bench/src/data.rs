//! The data of the head-to-head workloads, shared by Strata's side ([`crate::query`]) and the
//! peer libraries' (`peers`, with the `peers` feature): the sizes, the plain component types and
//! the constructors of every value a fixture holds.
//!
//! A head-to-head workload carries the same name and size for every library that does the same
//! work, and its library's crate name; the records of one (name, size) line up in the comparison
//! table. The names and sizes:
//!
//! | name | sizes | items | work |
//! |---|---|---|---|
//! | `spawn` | 10k, 1M | size | spawn entities with [`Transform`], [`Position`], [`Rotation`], [`Velocity`] one at a time |
//! | `spawn_batch` | 10k, 1M | size | the same through the library's bulk spawn |
//! | `iter2` | 10k, 1M | size | `Position += Velocity` over entities carrying all four |
//! | `frag_iter` | 520 | 520 | `Data = -Data` over 26 [`kinds`] `A`..`Z` × 20 entities, each also with [`Data`] |
//! | `add_remove` | 10k | 10k | add [`kinds::B`] to 10k entities with [`kinds::A`], then remove it from all |
//! | `small_driver_join` | 20k, 1M | 200, 1k | sum [`Big`] over the entities that also have [`Small`] |
//! | `changed_filter` | 100k | 100k | visit the rows written since the last visit (1% of [`Position`]s) |
//! | `changed_filter_frames` | 100k | 10 frames | per frame, write another 1% of the [`Position`]s (untimed), then visit the rows written since the last visit; the world spawned one entity at a time |
//! | `despawn_respawn` | 100k | 100k | despawn every other of 100k ([`Position`], [`Velocity`]), spawn 50k |
//! | `reference_cleanup` | 10k | 10k | destroy 100 targets that 10k holders reference, clear the references |
//! | `world_clone` | 100k | 100k | clone a world of 100k ([`Position`], [`Rotation`], [`Velocity`]) (the peers; Strata has no eager copy) |
//! | `world_snapshot` | 100k | 100k | Strata only: a copy-on-write snapshot of the same world, nothing copied until written |
//! | `world_clone_then_write` | 100k | 100k | copy the same world, then [`Position::nudge`] every entity of the copy, so a deferred copy is paid too |
//! | `parallel_write` | 1M | 1M | write every `Heat` of 1M entities in parallel on a 2-thread pool, split among 4 writers where the library lets the split be chosen, every write a change |
//! | `bulk_spawn` | 1M | 1M | spawn 1M entities with the four components of `spawn` ([`body`]) through the library's bulk path, into a fresh world |
//! | `bulk_set` | 1M | 1M | add [`Tagged`] ([`TAGGED`]) to every member of a query over 1M bodies; the members are collected inside the timed region |
//! | `bulk_remove` | 1M | 1M | remove [`Tagged`] from every member of a query over 1M bodies that all hold it; the members are collected inside the timed region |
//! | `bulk_despawn` | 1M | 1M | despawn every member of a query over 1M bodies, leaving the world empty; the members are collected inside the timed region |
//! | `rollback_window` | 100k | 8 frames | the frame of `rollback_frame` [`ROLLBACK_WINDOW`] times, a snapshot (or, for the peers, a copy) taken before each and all kept, as rollback netcode keeps its window; each frame destroys other bodies ([`window_destroyed`]); then the world put back as it was at the oldest |
//! | `rollback_frame` | 100k | 1 frame | snapshot a world of 100k ([`Position`], [`Rotation`], [`Velocity`]), write 1% of the Positions ([`Position::nudge`] on every [`ROLLBACK_WRITE_STRIDE`]-th), spawn [`ROLLBACK_CHURN`] bodies and despawn as many, then put the world back as it was at the snapshot; for the peers without snapshots, the best copy each offers (the one of `world_clone`) taken at the start and put back at the end |
//! | `schedule` | 40k | 1 frame | one frame of the library's scheduler running three systems that swap [`schedule::A`] with `B`, `C` with `D` and `C` with `E`, over 10k entities each of (A, B), (A, B, C), (A, B, C, D) and (A, B, C, E), on a 2-thread pool |
//! | `frame_overhead` | 100 | 1 frame | one frame of the library's scheduler running 100 systems that do nothing |
//!
//! The four `bulk_` workloads start every sample from a fresh world built in setup, for every
//! library, and report the allocations of one run as well as its time.
//!
//! Strata's number fields are f64 and its `Vec3` and `Transform` hold f32, so the one-number
//! components here ([`Data`], [`Big`], [`Small`], the [`kinds`], [`Heat`]) hold an f64 and the
//! vectors and the matrix f32: every library stores the same types.
//!
//! Invariant: every library's fixture of one workload holds the values the constructors here
//! give, in the same field types, so all libraries work on equal data.

use strata_arena::Vec3;

/// The sizes of `spawn`, `spawn_batch` and `iter2`.
pub const ENTITY_SIZES: [u64; 2] = [10_000, 1_000_000];
/// The number of fragment kinds (`A`..`Z`) of `frag_iter`.
pub const FRAG_KINDS: u64 = 26;
/// The entities per fragment kind of `frag_iter`.
pub const FRAG_PER_KIND: u64 = 20;
/// The entities of `add_remove`.
pub const ADD_REMOVE_SIZE: u64 = 10_000;
/// The (entities with [`Big`], of which also with [`Small`]) of `small_driver_join`.
pub const JOIN_SIZES: [(u64, u64); 2] = [(20_000, 200), (1_000_000, 1_000)];
/// The entities of `changed_filter` and `changed_filter_frames`.
pub const CHANGED_SIZE: u64 = 100_000;
/// One in this many rows of `changed_filter` is written between visits (1%), and of
/// `changed_filter_frames` in each frame.
pub const CHANGED_STRIDE: u64 = 100;
/// The entities of `despawn_respawn`.
pub const DESPAWN_SIZE: u64 = 100_000;
/// The holders and targets of `reference_cleanup`.
pub const REFERENCE_SIZES: (u64, u64) = (10_000, 100);
/// The entities of `world_clone`.
pub const CLONE_SIZE: u64 = 100_000;
/// The bodies of `rollback_frame`.
pub const ROLLBACK_SIZE: u64 = 100_000;
/// One in this many Positions of `rollback_frame` is written each frame (1%).
pub const ROLLBACK_WRITE_STRIDE: u64 = 100;
/// The bodies `rollback_frame` spawns, and destroys, each frame.
pub const ROLLBACK_CHURN: u64 = 100;
/// The frames (and snapshots kept) of `rollback_window`.
pub const ROLLBACK_WINDOW: u64 = 8;
/// The bodies a `rollback_frame` frame writes: every [`ROLLBACK_WRITE_STRIDE`]-th.
pub fn rollback_written<T>(ids: &[T]) -> impl Iterator<Item = &T> {
    ids.iter().step_by(ROLLBACK_WRITE_STRIDE as usize)
}

/// The bodies a `rollback_frame` frame destroys: [`ROLLBACK_CHURN`] of them spread evenly,
/// none of them a written one ([`rollback_written`]).
pub fn rollback_destroyed<T>(ids: &[T]) -> impl Iterator<Item = &T> {
    window_destroyed(ids, 0)
}

/// The bodies frame `frame` of a `rollback_window` window destroys: those of
/// [`rollback_destroyed`], `frame` places further on. No two frames of a window destroy the
/// same body, and no frame destroys one that a later frame writes: each is one past a multiple
/// of a hundredth of the bodies plus the frame, never a multiple of
/// [`ROLLBACK_WRITE_STRIDE`] (for windows shorter than the stride).
pub fn window_destroyed<T>(ids: &[T], frame: u64) -> impl Iterator<Item = &T> {
    let step = (ids.len() / ROLLBACK_CHURN as usize).max(1);
    ids.iter()
        .skip(step / 2 + 1 + frame as usize)
        .step_by(step)
        .take(ROLLBACK_CHURN as usize)
}

/// The entities of `bulk_spawn`, `bulk_set`, `bulk_remove` and `bulk_despawn`.
pub const BULK_SIZE: u64 = 1_000_000;
/// Declares the plain components every library's fixtures are built from; with the `peers`
/// feature they derive `bevy_ecs` and `shipyard` components (hecs takes any
/// `Send + Sync + 'static` type). Takes struct items.
macro_rules! components {
    ($($item:item)*) => {
        $(
            #[derive(Debug, Clone, Copy, PartialEq)]
            #[cfg_attr(
                feature = "peers",
                derive(bevy_ecs::component::Component, ::shipyard::Component)
            )]
            $item
        )*
    };
}

components! {
    /// A row-major 4×4 affine matrix of f32, as Strata's `Transform`.
    pub struct Transform(pub [f32; 16]);
    /// A position: three f32, as Strata's `Vec3`.
    pub struct Position {
        /// The x component.
        pub x: f32,
        /// The y component.
        pub y: f32,
        /// The z component.
        pub z: f32,
    }
    /// A rotation (Euler angles): three f32, as Strata's `Vec3`.
    pub struct Rotation {
        /// The x component.
        pub x: f32,
        /// The y component.
        pub y: f32,
        /// The z component.
        pub z: f32,
    }
    /// A velocity: three f32, as Strata's `Vec3`.
    pub struct Velocity {
        /// The x component.
        pub x: f32,
        /// The y component.
        pub y: f32,
        /// The z component.
        pub z: f32,
    }
    /// The value `frag_iter` negates (see [`Data::negate`]).
    pub struct Data(pub f64);
    /// The component of the large set of `small_driver_join`, whose field is summed.
    pub struct Big(pub f64);
    /// The component of the small set of `small_driver_join`.
    pub struct Small(pub f64);
    /// The one number `parallel_write` writes, as Strata's one-field `Heat`.
    pub struct Heat(pub f64);
    /// The one-number component `bulk_set` adds to every body and `bulk_remove` takes away.
    pub struct Tagged(pub f64);
}

/// Expands `$m!(Kind, $args...)` once per fragment kind of `frag_iter`, `A` to `Z`; each
/// argument is one token (a name), so it can be handed on as an identifier.
macro_rules! for_each_kind {
    ($m:ident $(, $arg:tt)*) => {
        $m!(A $(, $arg)*);
        $m!(B $(, $arg)*);
        $m!(C $(, $arg)*);
        $m!(D $(, $arg)*);
        $m!(E $(, $arg)*);
        $m!(F $(, $arg)*);
        $m!(G $(, $arg)*);
        $m!(H $(, $arg)*);
        $m!(I $(, $arg)*);
        $m!(J $(, $arg)*);
        $m!(K $(, $arg)*);
        $m!(L $(, $arg)*);
        $m!(M $(, $arg)*);
        $m!(N $(, $arg)*);
        $m!(O $(, $arg)*);
        $m!(P $(, $arg)*);
        $m!(Q $(, $arg)*);
        $m!(R $(, $arg)*);
        $m!(S $(, $arg)*);
        $m!(T $(, $arg)*);
        $m!(U $(, $arg)*);
        $m!(V $(, $arg)*);
        $m!(W $(, $arg)*);
        $m!(X $(, $arg)*);
        $m!(Y $(, $arg)*);
        $m!(Z $(, $arg)*);
    };
}
pub(crate) use for_each_kind;

/// Spawns the entities of one fragment kind of `frag_iter` into `$world` through its batch
/// spawn method `$spawn_batch` (`spawn_batch`, `bulk_add_entity`): [`FRAG_PER_KIND`] entities,
/// the `i`-th with `$kind` and [`Data`] from [`fragment`]. `for_each_kind!(spawn_fragment_kind,
/// world, spawn_batch)` spawns the whole world of `frag_iter` the same way for every library
/// with such a method.
#[cfg(feature = "peers")]
macro_rules! spawn_fragment_kind {
    ($kind:ident, $world:ident, $spawn_batch:ident) => {
        $world
            .$spawn_batch((0..$crate::data::FRAG_PER_KIND).map(|i| {
                let (value, data) = $crate::data::fragment(i);
                ($kind(value), data)
            }))
            .for_each(drop);
    };
}
#[cfg(feature = "peers")]
pub(crate) use spawn_fragment_kind;

/// The components of `schedule`: one f64 each.
pub mod schedule {
    components! {
        /// Swapped with `B` by the first system.
        pub struct A(pub f64);
        /// Swapped with `A`.
        pub struct B(pub f64);
        /// Swapped with `D`, then with `E`.
        pub struct C(pub f64);
        /// Swapped with `C`.
        pub struct D(pub f64);
        /// Swapped with `C`.
        pub struct E(pub f64);
    }

    /// Entities in each of the four groups.
    pub const GROUP: u64 = 10_000;

    /// The value of component `k` (0 for `A` .. 4 for `E`) of the `i`-th entity: distinct for
    /// every component of an entity, so every swap changes both values.
    pub fn value(i: u64, k: u64) -> f64 {
        (i * 5 + k) as f64 + 0.5
    }
}

/// The data of the Luau workloads (`luau_iter2`, `luau_iter2_handles`, `luau_frame_1m`,
/// `luau_frame_1m_groups`, `luau_spawn`, `luau_changed`), shared by Strata's side and jecs's.
pub mod luau {
    /// Entities of `luau_iter2` and `luau_iter2_handles`.
    pub const ITER_SIZE: u64 = 100_000;
    /// Entities of `luau_frame_1m` and `luau_frame_1m_groups`.
    pub const FRAME_SIZE: u64 = 1_000_000;
    /// Threads of `luau_frame_1m`'s and `luau_frame_1m_groups`'s worlds.
    pub const FRAME_THREADS: usize = 2;
    /// The memory limit of both libraries' VMs in `luau_frame_1m`: jecs keeps its 2M component
    /// tables inside its VM, past the standard 512 MiB.
    pub const FRAME_MEMORY: usize = 4 << 30;
    /// Entities `luau_spawn` creates.
    pub const SPAWN_SIZE: u64 = 10_000;
    /// Entities of `luau_changed`.
    pub const CHANGED_SIZE: u64 = 100_000;
    /// `luau_changed` writes every `CHANGED_STRIDE`-th entity (1%).
    pub const CHANGED_STRIDE: u64 = 100;
    /// The frame length.
    pub const DT: f64 = 1.0 / 60.0;

    /// The starting position of entity `i`.
    pub fn position(i: u64) -> [f64; 3] {
        [i as f64, (i % 100) as f64 * 0.5, -(i as f64)]
    }

    /// The velocity of entity `i`: never zero on any axis, so every write changes the value.
    pub fn velocity(i: u64) -> [f64; 3] {
        [
            1.0 + (i % 3) as f64,
            0.25 + (i % 5) as f64,
            2.0 - (i % 7) as f64 - 0.5,
        ]
    }
}

/// The systems of `frame_overhead`.
pub const EMPTY_SYSTEMS: u64 = 100;

/// The 26 fragment kinds `A`..`Z` of `frag_iter` (`A` and `B` also serve `add_remove`), in a
/// module of their own so a glob import brings exactly them.
pub mod kinds {
    /// Declares one fragment kind.
    macro_rules! fragment_kind {
        ($kind:ident) => {
            components! {
                /// A fragment kind of `frag_iter`: in an archetype store, each kind makes a
                /// table of its own.
                pub struct $kind(pub f64);
            }
        };
    }

    for_each_kind!(fragment_kind);
}

impl Data {
    /// The step of `frag_iter`: the value negated. A fixture's values are finite and non-zero,
    /// so every run changes every value, however many runs came before (doubling would reach
    /// infinity after about a thousand runs, after which an equal-write check skips every row).
    #[inline]
    pub fn negate(&mut self) {
        self.0 = -self.0;
    }
}

impl Position {
    /// `x += 1`: the write of `changed_filter` and `world_clone_then_write`. It changes the
    /// value on every call while `|x| < 2^24`; the fixtures' positions start below a million
    /// and no run writes a row anywhere near 15 million times.
    #[inline]
    pub fn nudge(&mut self) {
        self.x += 1.0;
    }

    /// Adds `velocity`, the step of `iter2`.
    #[inline]
    pub fn advance(&mut self, velocity: &Velocity) {
        self.x += velocity.x;
        self.y += velocity.y;
        self.z += velocity.z;
    }
}

/// The transform of the `i`-th entity: a translation by (i, 2i, 3i).
pub fn transform(i: u64) -> Transform {
    let t = i as f32;
    Transform([
        1.0,
        0.0,
        0.0,
        t, //
        0.0,
        1.0,
        0.0,
        2.0 * t, //
        0.0,
        0.0,
        1.0,
        3.0 * t, //
        0.0,
        0.0,
        0.0,
        1.0,
    ])
}

/// The position of the `i`-th entity.
pub fn position(i: u64) -> Position {
    let t = i as f32;
    Position {
        x: t,
        y: 2.0 * t,
        z: 3.0 * t,
    }
}

/// The rotation of the `i`-th entity.
pub fn rotation(i: u64) -> Rotation {
    let t = (i % 360) as f32;
    Rotation {
        x: 0.0,
        y: t,
        z: 0.0,
    }
}

/// The velocity of the `i`-th entity.
pub fn velocity(i: u64) -> Velocity {
    let t = (i % 7) as f32;
    Velocity {
        x: 1.0,
        y: 0.5 * t,
        z: -0.25,
    }
}

/// The four components of the `i`-th entity of `spawn`, `spawn_batch` and `iter2`.
pub fn body(i: u64) -> (Transform, Position, Rotation, Velocity) {
    (transform(i), position(i), rotation(i), velocity(i))
}

/// The value of the `i`-th entity of a fragment kind of `frag_iter`, and its [`Data`].
pub fn fragment(i: u64) -> (f64, Data) {
    (i as f64, Data(1.0))
}

/// The [`kinds::A`] the `i`-th entity of `add_remove` holds throughout.
pub fn a(i: u64) -> kinds::A {
    kinds::A(i as f64)
}

/// The [`kinds::B`] `add_remove` adds to every entity.
pub const ADDED_B: kinds::B = kinds::B(1.0);

/// The [`Big`] of the `i`-th entity of `small_driver_join`.
pub fn big(i: u64) -> Big {
    Big(i as f64)
}

/// The [`Small`] of the entities of `small_driver_join` that carry one.
pub const SMALL: Small = Small(1.0);

/// The `i`-th entity of `small_driver_join` at `n_big` entities with `n_small` small ones:
/// every `n_big / n_small`-th entity also carries [`Small`], spread evenly.
pub fn is_small(i: u64, n_big: u64, n_small: u64) -> bool {
    i.is_multiple_of((n_big / n_small.max(1)).max(1))
}

/// The [`Tagged`] `bulk_set` gives every member of its query, and the bodies of `bulk_remove`
/// hold: one value for all, since a bulk set stores one value in every member.
pub const TAGGED: Tagged = Tagged(1.0);

/// The frames of one sample of `changed_filter_frames`.
pub const FRAMES: u64 = 10;

/// How a fixture's world is spawned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spawn {
    /// Through the library's bulk spawn.
    Batch,
    /// One entity at a time, as a game spawns them as they come.
    OneByOne,
}

/// The rows `changed_filter` and `changed_filter_frames` write in frame `frame`: one in
/// [`CHANGED_STRIDE`] (1%), spread evenly, a different group each frame, back to the first
/// after [`CHANGED_STRIDE`] frames.
pub fn is_written(i: u64, frame: u64) -> bool {
    i % CHANGED_STRIDE == frame % CHANGED_STRIDE
}

/// The ids each frame writes, by `frame % CHANGED_STRIDE`: [`is_written`] applied to the ids
/// of all rows in spawn order.
pub fn written_groups<Id: Copy>(ids: &[Id]) -> Vec<Vec<Id>> {
    (0..CHANGED_STRIDE)
        .map(|frame| {
            (0..ids.len())
                .filter(|&i| is_written(i as u64, frame))
                .map(|i| ids[i])
                .collect()
        })
        .collect()
}

/// What a changed visit returns: the number of positions visited and the sum of their `x`, so
/// that no library's visit can be optimised away.
pub fn tally(xs: impl Iterator<Item = f32>) -> (u64, f32) {
    xs.fold((0, 0.0), |(count, sum), x| (count + 1, sum + x))
}

impl From<Transform> for strata_arena::Transform {
    /// The same matrix in Strata's row-major `Transform`.
    fn from(t: Transform) -> strata_arena::Transform {
        let m = t.0;
        strata_arena::Transform {
            rows: [
                [m[0], m[1], m[2], m[3]],
                [m[4], m[5], m[6], m[7]],
                [m[8], m[9], m[10], m[11]],
                [m[12], m[13], m[14], m[15]],
            ],
        }
    }
}

/// Converts the three-float components into Strata's `Vec3` (the same three f32s).
macro_rules! into_vec3 {
    ($($ty:ident),*) => {
        $(
            impl From<$ty> for Vec3 {
                fn from(v: $ty) -> Vec3 {
                    Vec3::new(v.x, v.y, v.z)
                }
            }
        )*
    };
}
into_vec3!(Position, Rotation, Velocity);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_never_destroys_a_body_twice_or_one_it_writes() {
        for n in [2_000_u64, 20_000, ROLLBACK_SIZE] {
            let ids: Vec<u64> = (0..n).collect();
            let written: Vec<u64> = rollback_written(&ids).copied().collect();
            let mut destroyed: Vec<u64> = (0..ROLLBACK_WINDOW)
                .flat_map(|frame| window_destroyed(&ids, frame).copied())
                .collect();
            assert_eq!(
                destroyed.len() as u64,
                ROLLBACK_WINDOW * ROLLBACK_CHURN,
                "{n}"
            );
            assert!(destroyed.iter().all(|d| !written.contains(d)), "{n}");
            destroyed.sort_unstable();
            destroyed.dedup();
            assert_eq!(
                destroyed.len() as u64,
                ROLLBACK_WINDOW * ROLLBACK_CHURN,
                "{n}"
            );
        }
    }

    #[test]
    fn data_is_deterministic_and_spread() {
        assert_eq!(body(3), body(3));
        assert_ne!(position(1), position(2));
        let smalls = (0..20_000).filter(|&i| is_small(i, 20_000, 200)).count();
        assert_eq!(smalls, 200);
        let smalls = (0..1_000_000)
            .filter(|&i| is_small(i, 1_000_000, 1_000))
            .count();
        assert_eq!(smalls, 1_000);
        let groups = written_groups(&(0..CHANGED_SIZE).collect::<Vec<u64>>());
        assert_eq!(groups.len() as u64, CHANGED_STRIDE);
        assert!(groups.iter().all(|g| g.len() == 1_000));
        let mut all: Vec<u64> = groups.concat();
        all.sort_unstable();
        assert_eq!(
            all,
            (0..CHANGED_SIZE).collect::<Vec<u64>>(),
            "each row in one group"
        );
        let mut p = position(1);
        p.advance(&velocity(1));
        assert_eq!(
            p,
            Position {
                x: 2.0,
                y: 2.5,
                z: 2.75
            }
        );
    }
}
