//! Model-based test of reservations and bulk destruction: random interleavings of reserve,
//! reserve_at, publish (valid and refused), release, create, create_many, destroy, destroy_many
//! and drain, checked after every step against a simple reference model: the live set, parents
//! and children order, own-range ids never issued twice, no slot shared by two holders (live
//! nodes, tombstones and reservations), nothing reserved visible.

use std::collections::{BTreeMap, HashMap, HashSet};

use proptest::prelude::*;
use strata_arena::{Arena, ArenaError, ClassId, InstanceId, Reservation, Slot};

#[derive(Clone, Debug)]
enum Op {
    Reserve(usize),
    /// Raw candidates: small values (own range, often taken) and client-range values.
    ReserveAt(Vec<(bool, u64)>),
    /// Publish the n-th reservation under the n-th known id (or as a root).
    Publish(usize, Option<usize>),
    Release(usize),
    Create(Option<usize>),
    CreateMany(Option<usize>, usize),
    Destroy(usize),
    DestroyMany(Vec<usize>),
    Drain,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..5usize).prop_map(Op::Reserve),
        prop::collection::vec((any::<bool>(), 1..60u64), 0..4).prop_map(Op::ReserveAt),
        (any::<usize>(), prop::option::of(any::<usize>())).prop_map(|(r, p)| Op::Publish(r, p)),
        any::<usize>().prop_map(Op::Release),
        prop::option::of(any::<usize>()).prop_map(Op::Create),
        (prop::option::of(any::<usize>()), 0..4usize).prop_map(|(p, n)| Op::CreateMany(p, n)),
        any::<usize>().prop_map(Op::Destroy),
        prop::collection::vec(any::<usize>(), 0..4).prop_map(Op::DestroyMany),
        Just(Op::Drain),
    ]
}

#[derive(Default)]
struct Model {
    /// Live id → (parent, children in order).
    live: BTreeMap<InstanceId, (Option<InstanceId>, Vec<InstanceId>)>,
    /// Tombstone id → drains it has seen (reclaimed at the second).
    tombstones: HashMap<InstanceId, u8>,
    /// Outstanding reservations with their ids.
    reserved: Vec<(Reservation, Vec<InstanceId>)>,
    /// The arena's id counter.
    next: u64,
    /// Every own-range id ever handed to a node or a reservation.
    ever: HashSet<InstanceId>,
    /// Every id ever seen, to pick stale parents from.
    known: Vec<InstanceId>,
}

impl Model {
    fn reserved_ids(&self) -> HashSet<InstanceId> {
        self.reserved
            .iter()
            .flat_map(|(_, ids)| ids.iter().copied())
            .collect()
    }

    fn held(&self, id: InstanceId) -> bool {
        self.live.contains_key(&id)
            || self.tombstones.contains_key(&id)
            || self.reserved_ids().contains(&id)
    }

    fn issue(&mut self, id: InstanceId) {
        if id.get() < InstanceId::CLIENT_RANGE_START {
            assert!(self.ever.insert(id), "id {id} issued twice");
        }
        self.known.push(id);
    }

    fn add(&mut self, id: InstanceId, parent: Option<InstanceId>) {
        self.live.insert(id, (parent, Vec::new()));
        if let Some(parent) = parent {
            self.live.get_mut(&parent).unwrap().1.push(id);
        }
    }

    fn preorder(&self, root: InstanceId) -> Vec<InstanceId> {
        let mut out = vec![root];
        for child in &self.live[&root].1 {
            out.extend(self.preorder(*child));
        }
        out
    }

    fn destroy(&mut self, root: InstanceId) -> Vec<InstanceId> {
        let doomed = self.preorder(root);
        if let Some(parent) = self.live[&root].0 {
            self.live.get_mut(&parent).unwrap().1.retain(|c| *c != root);
        }
        for id in &doomed {
            self.live.remove(id);
            self.tombstones.insert(*id, 0);
        }
        doomed
    }

    fn pick_live(&self, k: usize) -> Option<InstanceId> {
        let ids: Vec<_> = self.live.keys().copied().collect();
        (!ids.is_empty()).then(|| ids[k % ids.len()])
    }

    fn pick_known(&self, k: usize) -> Option<InstanceId> {
        (!self.known.is_empty()).then(|| self.known[k % self.known.len()])
    }
}

fn check(arena: &Arena, m: &Model) {
    assert_eq!(arena.live_count(), m.live.len());
    assert_eq!(arena.tombstone_count(), m.tombstones.len());
    assert_eq!(arena.reserved_count(), m.reserved.len());
    assert_eq!(arena.next_id(), m.next);
    for (id, (parent, children)) in &m.live {
        assert!(arena.is_live(*id));
        assert_eq!(arena.parent(*id), *parent, "parent of {id}");
        assert_eq!(
            &arena.children(*id).collect::<Vec<_>>(),
            children,
            "children of {id}"
        );
    }
    let mut slots: HashMap<Slot, String> = HashMap::new();
    let mut hold = |slot: Slot, holder: String| {
        if let Some(other) = slots.insert(slot, holder.clone()) {
            panic!("slot {slot:?} held by {other} and {holder}");
        }
    };
    for id in m.live.keys().chain(m.tombstones.keys()) {
        hold(
            arena.slot_of(*id).expect("nodes hold slots"),
            format!("node {id}"),
        );
    }
    for (reservation, ids) in &m.reserved {
        assert_eq!(reservation.len(), ids.len());
        for (k, (id, slot)) in reservation.iter().enumerate() {
            assert_eq!(id, ids[k]);
            assert!(
                arena.get(id).is_none() && !arena.is_live(id),
                "{id} is visible"
            );
            assert_eq!(arena.id_at(slot), None, "a reserved slot holds a node");
            hold(slot, format!("reservation of {id}"));
        }
    }
}

fn run(ops: Vec<Op>) {
    let mut arena = Arena::standard().with_seed(3);
    let mut m = Model {
        next: 1,
        ..Model::default()
    };
    for op in ops {
        match op {
            Op::Reserve(n) => {
                let r = arena.reserve(n).unwrap();
                let ids: Vec<_> = (0..n).map(|k| r.id(k).unwrap()).collect();
                assert_eq!(r.ids(), None);
                for (k, id) in ids.iter().enumerate() {
                    assert_eq!(id.get(), m.next + k as u64, "a reserve takes the next ids");
                    m.issue(*id);
                }
                m.next += n as u64;
                m.reserved.push((r, ids));
            }
            Op::ReserveAt(raw) => {
                let ids: Vec<_> = raw
                    .iter()
                    .map(|&(client, v)| {
                        let base = if client {
                            InstanceId::CLIENT_RANGE_START
                        } else {
                            0
                        };
                        InstanceId::new(base + v).unwrap()
                    })
                    .collect();
                let distinct = ids.iter().collect::<HashSet<_>>().len() == ids.len();
                let accept = distinct
                    && ids.iter().all(|id| {
                        let retired =
                            id.get() < InstanceId::CLIENT_RANGE_START && id.get() < m.next;
                        !m.held(*id) && !retired
                    });
                let live = arena.live_count();
                match arena.reserve_at(&ids) {
                    Ok(r) => {
                        assert!(accept, "reserve_at accepted {ids:?}");
                        assert_eq!(r.iter().map(|(id, _)| id).collect::<Vec<_>>(), ids);
                        for id in &ids {
                            m.issue(*id);
                            if id.get() < InstanceId::CLIENT_RANGE_START {
                                m.next = m.next.max(id.get() + 1);
                            }
                        }
                        m.reserved.push((r, ids));
                    }
                    Err(error) => {
                        assert!(!accept, "reserve_at refused {ids:?}: {error}");
                        assert_eq!(arena.live_count(), live);
                    }
                }
            }
            Op::Publish(k, parent) => {
                if m.reserved.is_empty() {
                    continue;
                }
                let (r, ids) = m.reserved.remove(k % m.reserved.len());
                let parent = parent.and_then(|p| m.pick_known(p));
                let valid = parent.is_none_or(|p| m.live.contains_key(&p));
                let events = arena.pending_events().len();
                match arena.publish(r, ClassId::FOLDER, parent) {
                    Ok(()) => {
                        assert!(valid);
                        for id in &ids {
                            m.add(*id, parent);
                        }
                        let announced = usize::from(!ids.is_empty());
                        assert_eq!(arena.pending_events().len(), events + announced);
                    }
                    Err((r, error)) => {
                        assert!(!valid, "publish refused: {error}");
                        assert!(matches!(
                            error,
                            ArenaError::UnknownInstance(_) | ArenaError::DestroyedInstance(_)
                        ));
                        assert_eq!(arena.pending_events().len(), events);
                        m.reserved.push((r, ids));
                    }
                }
            }
            Op::Release(k) => {
                if m.reserved.is_empty() {
                    continue;
                }
                let (r, _) = m.reserved.remove(k % m.reserved.len());
                arena.release(r).unwrap();
            }
            Op::Create(parent) => {
                let parent = parent.and_then(|p| m.pick_live(p));
                let id = arena.create(ClassId::FOLDER, parent).unwrap();
                assert_eq!(id.get(), m.next);
                m.next += 1;
                m.issue(id);
                m.add(id, parent);
            }
            Op::CreateMany(parent, n) => {
                let parent = parent.and_then(|p| m.pick_live(p));
                let made = arena.create_many(ClassId::FOLDER, parent, n).unwrap();
                for (id, _) in made {
                    assert_eq!(id.get(), m.next);
                    m.next += 1;
                    m.issue(id);
                    m.add(id, parent);
                }
            }
            Op::Destroy(k) => {
                let Some(id) = m.pick_live(k) else { continue };
                let destruction = arena.destroy(id).unwrap();
                let doomed = m.destroy(id);
                let ids: Vec<_> = destruction.doomed.iter().map(|d| d.id).collect();
                assert_eq!(ids, doomed);
            }
            Op::DestroyMany(picks) => {
                let listed: Vec<_> = picks.iter().filter_map(|p| m.pick_live(*p)).collect();
                let set: HashSet<_> = listed.iter().copied().collect();
                let mut roots: Vec<InstanceId> = Vec::new();
                for id in &listed {
                    let mut ancestor = m.live[id].0;
                    let mut inside = false;
                    while let Some(a) = ancestor {
                        inside |= set.contains(&a);
                        ancestor = m.live[&a].0;
                    }
                    if !inside && !roots.contains(id) {
                        roots.push(*id);
                    }
                }
                let destruction = arena.destroy_many(&listed).unwrap();
                assert_eq!(destruction.roots, roots);
                let doomed: Vec<_> = roots.iter().flat_map(|r| m.destroy(*r)).collect();
                let ids: Vec<_> = destruction.doomed.iter().map(|d| d.id).collect();
                assert_eq!(ids, doomed);
                let events = arena.pending_events();
                if !roots.is_empty() {
                    assert!(matches!(
                        events.last(),
                        Some(strata_arena::Event::DestroyedMany(_))
                    ));
                }
            }
            Op::Drain => {
                let drained = arena.drain().unwrap();
                let mut reclaimed: Vec<_> = drained.reclaimed.iter().map(|d| d.id).collect();
                reclaimed.sort();
                let mut expected: Vec<_> = m
                    .tombstones
                    .iter()
                    .filter(|(_, seen)| **seen == 1)
                    .map(|(id, _)| *id)
                    .collect();
                expected.sort();
                assert_eq!(reclaimed, expected);
                m.tombstones.retain(|_, seen| *seen == 0);
                for seen in m.tombstones.values_mut() {
                    *seen = 1;
                }
            }
        }
        check(&arena, &m);
    }
    for (r, _) in m.reserved.drain(..) {
        arena.release(r).unwrap();
    }
    assert_eq!(arena.reserved_count(), 0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn reservations_and_bulk_destruction_agree_with_the_model(
        ops in prop::collection::vec(op(), 1..60)
    ) {
        run(ops);
    }
}
