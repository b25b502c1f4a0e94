//! World hashes: 64-bit numbers to compare worlds (thread counts, replays, rollbacks, saves).
//! `World::hash` costs about what `World::save` does (the encoding, from borrowed state; see
//! `save/encode.rs`), without holding the payload.
//!
//! Invariant: [`World::hash`] is FNV-1a over the save format's version and the save's payload,
//! byte for byte what [`World::save`] writes after its header (fed to the hash as it is
//! encoded, never held whole): two worlds hash alike exactly when they save the same bytes
//! (save for a 64-bit collision), so it covers what a save holds (instances and their
//! identities, rows, orphans, migration input, counters, the identity source, the frame, the
//! fixed-step cadence and carry, interval waits, tombstones and queued events) and nothing a
//! save leaves out (change tracking, slots, caches, identities of the process such as arena and
//! store ids). [`World::state_hash`] covers that and the change tracking: the store's tick and,
//! by component name and instance id, each row's added and changed ticks and dirty fields. Both
//! are computed the same way in every process and build of one format version. Floating-point
//! values enter by their bits, so `-0.0` and `0.0` differ.

use strata_component_store::ComponentSet;
use strata_mix::Fnv1a;

use crate::world::World;

/// FNV-1a ([`Fnv1a`]) as a postcard output, so a save's bytes are hashed as they are encoded.
pub(crate) struct Fnv(Fnv1a);

impl Fnv {
    pub(crate) fn new() -> Self {
        Self(Fnv1a::new())
    }

    #[inline]
    pub(crate) fn byte(&mut self, byte: u8) {
        self.0.byte(byte);
    }

    pub(crate) fn bytes(&mut self, bytes: &[u8]) {
        self.0.bytes(bytes);
    }

    fn u64(&mut self, value: u64) {
        self.0.u64(value);
    }

    fn text(&mut self, text: &str) {
        self.0.text(text);
    }

    pub(crate) fn finish(&self) -> u64 {
        self.0.finish()
    }
}

impl postcard::ser_flavors::Flavor for Fnv {
    type Output = u64;

    #[inline]
    fn try_push(&mut self, data: u8) -> postcard::Result<()> {
        self.byte(data);
        Ok(())
    }

    fn try_extend(&mut self, data: &[u8]) -> postcard::Result<()> {
        self.bytes(data);
        Ok(())
    }

    fn finalize(self) -> postcard::Result<u64> {
        Ok(self.0.finish())
    }
}

impl World {
    /// A hash of exactly what a save of the world holds (see the module docs): worlds that
    /// save the same bytes hash alike, and worlds that save different bytes hash differently
    /// (but for a 64-bit collision), in any process. A world loaded from a save hashes as the
    /// world that wrote it. Change ticks and dirty state, which a save leaves out, are not
    /// covered: [`World::state_hash`] covers them too.
    ///
    /// ```
    /// # use strata::prelude::*;
    /// let mut world = World::with_seed(1, 7).unwrap();
    /// world.create(ClassId::FOLDER, None).unwrap();
    /// let mut file = Vec::new();
    /// world.save(&mut file).unwrap();
    /// let loaded = World::load(file.as_slice()).unwrap();
    /// assert_eq!(loaded.hash(), world.hash());
    /// ```
    pub fn hash(&self) -> u64 {
        self.save_hash(Fnv::new())
    }

    /// A hash of the world and its change tracking: what [`World::hash`] covers, and the
    /// store's tick and every row's added and changed ticks and dirty fields. Two worlds that
    /// ran the same operations in the same order state-hash alike; a loaded world does not
    /// state-hash as the world it was saved from (loading restarts the ticks). The
    /// determinism tests compare it across thread counts, lane orders and replays.
    pub fn state_hash(&self) -> u64 {
        let mut h = Fnv::new();
        h.u64(self.hash());
        h.u64(self.store().tick().0);
        let mut sets: Vec<&ComponentSet> = self.store().components().collect();
        sets.sort_by(|a, b| a.def().name().cmp(b.def().name()));
        for set in sets {
            h.text(set.def().name());
            let mut rows: Vec<usize> = (0..set.len()).collect();
            rows.sort_unstable_by_key(|row| set.ids()[*row]);
            h.u64(rows.len() as u64);
            for row in rows {
                h.u64(set.ids()[row].get());
                h.u64(set.added_ticks().get(row).map_or(0, |t| t.0));
                h.u64(set.changed_ticks().get(row).map_or(0, |t| t.0));
                let dirty = set.dirty_mask(row);
                h.u64(dirty.fields().count() as u64);
                for field in dirty.fields() {
                    h.u64(field.index() as u64);
                }
            }
        }
        h.finish()
    }
}
