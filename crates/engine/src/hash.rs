//! World hashes: one 64-bit number for everything a world holds, to compare runs (thread
//! counts, replays, rollbacks).
//!
//! Invariant: the hash is a function of the observable state only, computed the same way in
//! every process and build of the same version: FNV-1a over a canonical walk (instances in
//! pre-order with every identity, name, attribute, state and tag; components by id with their
//! rows in instance-id order, each row's ticks, values and dirty fields; orphan records; the
//! store's tick; for a world also the frame number and the fixed-step carry). Floating-point
//! values enter by their exact decimal form, so `-0.0` and `0.0` differ. Slots, cache state and
//! identities of the process (arena and store ids) do not enter it. GUIDs and persistent ids
//! do: two worlds hash alike only if they hold the same identities, as worlds made with one
//! seed (`World::with_seed`) or loaded from one save do.

use std::fmt::Write as _;

use strata_component_store::FieldId;

use crate::scene::Scene;
use crate::world::World;

/// FNV-1a, 64 bits.
struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }

    fn bytes(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 ^= u64::from(*byte);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn u64(&mut self, value: u64) {
        self.bytes(&value.to_le_bytes());
    }

    fn text(&mut self, text: &str) {
        self.u64(text.len() as u64);
        self.bytes(text.as_bytes());
    }
}

impl Scene {
    /// The hash of everything the scene holds (see the module docs).
    pub fn hash(&self) -> u64 {
        let mut h = Fnv::new();
        let mut scratch = String::new();
        let image = self.arena.image();
        h.u64(image.next_id);
        h.u64(image.nodes.len() as u64);
        for node in &image.nodes {
            h.u64(node.id.get());
            h.text(&node.class);
            h.u64(node.parent.map_or(0, |p| p.get()));
            h.bytes(&node.guid.0.to_le_bytes());
            h.u64(node.persistent_id.map_or(0, |p| p.0.get()));
            scratch.clear();
            let _ = write!(scratch, "{:?}", node.data);
            h.text(&scratch);
            for tag in &node.tags {
                h.text(tag);
            }
            h.u64(u64::from(node.parent_locked));
        }
        h.u64(self.store.tick().0);
        for set in self.store.components() {
            h.text(set.def().name());
            let mut rows: Vec<usize> = (0..set.len()).collect();
            rows.sort_unstable_by_key(|row| set.ids()[*row]);
            h.u64(rows.len() as u64);
            for row in rows {
                h.u64(set.ids()[row].get());
                h.u64(set.added_ticks()[row].0);
                h.u64(set.changed_ticks()[row].0);
                for field in 0..set.def().fields().len() {
                    scratch.clear();
                    let value = set.value(row, FieldId::from_index(field as u16));
                    let _ = write!(scratch, "{value:?}");
                    h.text(&scratch);
                }
                scratch.clear();
                let _ = write!(scratch, "{:?}", set.dirty_mask(row));
                h.text(&scratch);
            }
        }
        let mut orphans: Vec<String> = self
            .store
            .orphans()
            .iter()
            .map(|(at, record)| format!("{} {record:?}", at.id))
            .collect();
        orphans.sort_unstable();
        for orphan in orphans {
            h.text(&orphan);
        }
        h.0
    }
}

impl World {
    /// The hash of everything the world holds: its scene ([`Scene::hash`]), the frame number
    /// and the time the fixed-step block carries. Equal worlds hash alike in any process.
    pub fn hash(&self) -> u64 {
        let mut h = Fnv::new();
        h.u64(self.scene().hash());
        h.u64(self.frame());
        h.u64(self.fixed_carried().to_bits());
        h.0
    }
}
