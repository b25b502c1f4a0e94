//! Identities: runtime instance ids, physical slots, GUIDs, persistent ids, the identity of an
//! arena, and the seeds that keep GUIDs and persistent ids of different arenas apart.
//!
//! Invariant: an `InstanceId` is never zero and is never handed out twice by one arena; a `Slot`
//! is only a position and may hold a different instance after reclamation. The two ranges of
//! runtime ids are disjoint: ids below [`InstanceId::CLIENT_RANGE_START`] are issued by the
//! authoritative side, ids at or above it are allocated locally by a client. No two arenas
//! created in one process share an `ArenaId`.

use std::fmt;
use std::hash::{BuildHasher, RandomState};
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use strata_mix::{GAMMA, mix};

/// The runtime identity of one instance.
///
/// Ids come from a counter and are never returned to a pool, so an id that no longer resolves
/// can never start resolving to a different object.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InstanceId(NonZeroU64);

impl InstanceId {
    /// The first id of the client-local range (2^52).
    pub const CLIENT_RANGE_START: u64 = 1 << 52;

    /// Wraps a raw id; `None` for zero, which is never a valid id.
    pub const fn new(raw: u64) -> Option<Self> {
        match NonZeroU64::new(raw) {
            Some(raw) => Some(Self(raw)),
            None => None,
        }
    }

    /// The raw 64-bit value.
    pub const fn get(self) -> u64 {
        self.0.get()
    }

    /// The range this id belongs to.
    pub const fn range(self) -> IdRange {
        if self.get() >= Self::CLIENT_RANGE_START {
            IdRange::ClientLocal
        } else {
            IdRange::Server
        }
    }
}

impl fmt::Debug for InstanceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.get())
    }
}

impl fmt::Display for InstanceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.get())
    }
}

/// Which counter an arena allocates from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IdRange {
    /// Ids from 1 up to (not including) 2^52: issued by the authoritative side.
    Server,
    /// Ids from 2^52 upward: objects a client creates on its own.
    ClientLocal,
}

impl IdRange {
    /// The first id of the range.
    pub const fn start(self) -> u64 {
        match self {
            IdRange::Server => 1,
            IdRange::ClientLocal => InstanceId::CLIENT_RANGE_START,
        }
    }

    /// One past the last id of the range. The client range ends at `u64::MAX`, which therefore
    /// belongs to no range: it can be neither allocated nor inserted.
    pub const fn end(self) -> u64 {
        match self {
            IdRange::Server => InstanceId::CLIENT_RANGE_START,
            IdRange::ClientLocal => u64::MAX,
        }
    }
}

/// The next `ArenaId` to hand out.
static NEXT_ARENA_ID: AtomicU64 = AtomicU64::new(1);

/// The identity of one arena, shared by every snapshot taken from it.
///
/// Each arena gets a fresh one at creation, from a process-wide counter. An arena and its
/// snapshots form one lineage: between them, equal revisions mean equal state in that domain,
/// so a cache keyed by (`ArenaId`, revisions) is reused only where that holds. Revisions of
/// different arenas are never comparable, whatever their values.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ArenaId(NonZeroU64);

impl ArenaId {
    /// A new identity, never handed out before in this process.
    pub(crate) fn fresh() -> Self {
        let raw = NEXT_ARENA_ID.fetch_add(1, Ordering::Relaxed);
        Self(NonZeroU64::new(raw).expect("the counter starts at 1 and a u64 does not wrap"))
    }

    /// The raw value.
    pub const fn get(self) -> u64 {
        self.0.get()
    }
}

/// A physical position in the arena's node table. Reused after reclamation.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct Slot(pub(crate) u32);

impl Slot {
    /// The position as an index, for sparse arrays keyed by slot.
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// Builds a slot from an index (for tests and sparse-array owners).
    pub const fn from_index(index: u32) -> Self {
        Self(index)
    }
}

/// A globally unique identifier given to every instance at creation.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Guid(pub u128);

impl fmt::Debug for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0;
        write!(
            f,
            "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
            (v >> 96) as u32,
            (v >> 80) as u16,
            (v >> 64) as u16,
            (v >> 48) as u16,
            (v & 0xffff_ffff_ffff) as u64
        )
    }
}

/// A persistent unique id, assigned on demand so authored objects can be matched across
/// operations that rebuild their runtime representation (save and load, graft, replication).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct PersistentId(pub NonZeroU64);

impl PersistentId {
    /// Wraps a raw value; `None` for zero.
    pub const fn new(raw: u64) -> Option<Self> {
        match NonZeroU64::new(raw) {
            Some(raw) => Some(Self(raw)),
            None => None,
        }
    }

    /// The raw value.
    pub const fn get(self) -> u64 {
        self.0.get()
    }
}

/// The process's entropy base and the process id it was drawn in (a forked child draws anew).
static ENTROPY: Mutex<Option<(u32, u64)>> = Mutex::new(None);

/// The default GUID and persistent-id seed of the arena `arena`. Seeds of two arenas of one
/// process always differ (the arena id enters through a bijection for a fixed base), and the
/// base is drawn from operating-system entropy, the clock and the process id, so seeds of two
/// processes differ except with negligible probability.
pub(crate) fn fresh_seed(arena: ArenaId) -> u64 {
    mix(process_entropy().wrapping_add(arena.get().wrapping_mul(GAMMA)))
}

fn process_entropy() -> u64 {
    let pid = std::process::id();
    // The guarded value is a plain pair, valid even if a holder panicked.
    let mut entropy = ENTROPY.lock().unwrap_or_else(PoisonError::into_inner);
    match *entropy {
        Some((drawn_in, base)) if drawn_in == pid => base,
        _ => {
            // `RandomState` keys its hasher from operating-system randomness.
            let nanos = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |elapsed| elapsed.as_nanos());
            let base = RandomState::new().hash_one((nanos, pid, &raw const entropy as usize));
            *entropy = Some((pid, base));
            base
        }
    }
}

/// The GUID the `counter`-th creation of an arena with `seed` receives: a bijection of the
/// pair, so two arenas with different seeds, or two creations of one arena, never share one.
pub(crate) fn guid_for(seed: u64, counter: u64) -> Guid {
    Guid(mix128((u128::from(seed) << 64) | u128::from(counter)))
}

/// The seeds an arena's GUIDs derive from: the current one, and those `Arena::with_seed`
/// replaced, each with the first creation counter it served. A node stores its creation
/// counter and its GUID is derived on read, so reseeding must not change the GUIDs of nodes
/// created before it.
#[derive(Clone, Debug)]
pub(crate) struct GuidSeeds {
    current: u64,
    /// The first counter the current seed serves.
    since: u64,
    /// Earlier seeds as (first counter, seed), oldest first, all below `since`.
    earlier: Arc<[(u64, u64)]>,
}

impl GuidSeeds {
    pub(crate) fn new(seed: u64) -> Self {
        Self {
            current: seed,
            since: 1,
            earlier: Arc::new([]),
        }
    }

    /// The seed new GUIDs and persistent ids derive from.
    pub(crate) fn current(&self) -> u64 {
        self.current
    }

    /// Serves counters from `next_counter` on with `seed`; counters below keep their seeds.
    pub(crate) fn reseed(&mut self, seed: u64, next_counter: u64) {
        if next_counter > self.since {
            let mut earlier = self.earlier.to_vec();
            earlier.push((self.since, self.current));
            self.earlier = earlier.into();
        }
        self.current = seed;
        self.since = next_counter;
    }

    /// The GUID of the node created with `counter`.
    pub(crate) fn guid(&self, counter: u64) -> Guid {
        if counter >= self.since {
            return guid_for(self.current, counter);
        }
        let at = self.earlier.partition_point(|&(first, _)| first <= counter);
        let seed = at
            .checked_sub(1)
            .and_then(|i| self.earlier.get(i))
            .map_or(self.current, |&(_, seed)| seed);
        guid_for(seed, counter)
    }
}

/// A bijective 128-bit mixer (xor-shifts and multiplications by odd constants), so GUIDs look
/// random while staying distinct for distinct inputs.
const fn mix128(mut z: u128) -> u128 {
    z ^= z >> 67;
    z = z.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835);
    z ^= z >> 61;
    z = z.wrapping_mul(0xbf58_476d_1ce4_e5b9_94d0_49bb_1331_11eb);
    z ^ (z >> 64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_is_not_an_id() {
        assert!(InstanceId::new(0).is_none());
        assert_eq!(InstanceId::new(7).map(InstanceId::get), Some(7));
    }

    #[test]
    fn ranges_split_at_two_to_the_fifty_two() {
        let last_server = InstanceId::new((1 << 52) - 1).unwrap();
        let first_client = InstanceId::new(1 << 52).unwrap();
        assert_eq!(last_server.range(), IdRange::Server);
        assert_eq!(first_client.range(), IdRange::ClientLocal);
    }

    #[test]
    fn guid_renders_as_hyphenated_hex() {
        let guid = Guid(0x0123_4567_89ab_cdef_0011_2233_4455_6677);
        assert_eq!(guid.to_string(), "01234567-89ab-cdef-0011-223344556677");
    }

    #[test]
    fn guids_differ_across_seeds_and_counters() {
        let mut seen: Vec<Guid> = (0..4)
            .flat_map(|seed| (1..500).map(move |counter| guid_for(seed, counter)))
            .collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 4 * 499);
    }

    #[test]
    fn reseeding_keeps_the_guids_of_earlier_counters() {
        let mut seeds = GuidSeeds::new(1);
        let before: Vec<Guid> = (1..5).map(|c| seeds.guid(c)).collect();
        seeds.reseed(2, 5);
        seeds.reseed(3, 9);
        assert_eq!((1..5).map(|c| seeds.guid(c)).collect::<Vec<_>>(), before);
        assert_eq!(seeds.guid(5), guid_for(2, 5));
        assert_eq!(seeds.guid(9), guid_for(3, 9));
        assert_eq!(seeds.current(), 3);
        // Reseeding before anything was created replaces the seed outright.
        let mut fresh = GuidSeeds::new(1);
        fresh.reseed(4, 1);
        assert_eq!(fresh.guid(1), guid_for(4, 1));
    }

    #[test]
    fn fresh_seeds_differ_within_a_process() {
        let mut seeds: Vec<u64> = (0..999).map(|_| fresh_seed(ArenaId::fresh())).collect();
        seeds.sort_unstable();
        seeds.dedup();
        assert_eq!(seeds.len(), 999);
    }

    #[test]
    fn mixer_is_injective_on_a_sample() {
        let mut seen: Vec<u64> = (0..10_000).map(strata_mix::mix).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 10_000);
    }
}
