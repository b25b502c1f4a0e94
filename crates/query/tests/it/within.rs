//! The subtree term (`QuerySpec::within`): a query matches only its root and the root's
//! descendants, and follows the hierarchy as instances move in and out of the subtree. A model
//! property checks a cached and an uncached query against every instance's ancestry walked
//! by hand, after each of a generated run of reparentings and component changes.

use proptest::prelude::*;
use strata_arena::{Arena, ClassId, InstanceId};
use strata_component_store::{ComponentDef, ComponentId, FieldDef, InstanceRef, Store};
use strata_query::{Query, QuerySpec};

/// One step of a run: move instance `.0` under instance `.1` (or to the top), or toggle the
/// component on instance `.0`.
#[derive(Clone, Debug)]
enum Step {
    Move(usize, Option<usize>),
    Toggle(usize),
}

fn step(count: usize) -> impl Strategy<Value = Step> {
    prop_oneof![
        2 => (0..count, prop::option::weighted(0.8, 0..count)).prop_map(|(a, b)| Step::Move(a, b)),
        1 => (0..count).prop_map(Step::Toggle),
    ]
}

struct World {
    arena: Arena,
    store: Store,
    c: ComponentId,
    ids: Vec<InstanceId>,
}

impl World {
    /// `parents[k]` is the index of instance `k`'s parent among those before it.
    fn new(parents: &[Option<usize>], holders: &[bool]) -> Self {
        let mut arena = Arena::standard();
        let mut store = Store::new();
        let c = store
            .install(
                ComponentDef::new("Mark").field(FieldDef::number("n", 0.0)),
                arena.classes(),
            )
            .unwrap();
        let mut ids: Vec<InstanceId> = Vec::new();
        for (k, parent) in parents.iter().enumerate() {
            let parent = if k == 0 {
                None
            } else {
                parent.map(|p| ids[p % k])
            };
            let id = arena.create(ClassId::PART, parent).unwrap();
            ids.push(id);
        }
        let mut world = Self {
            arena,
            store,
            c,
            ids,
        };
        for (k, hold) in holders.iter().enumerate() {
            if *hold {
                world.toggle(k);
            }
        }
        world
    }

    fn at(&self, k: usize) -> InstanceRef {
        let id = self.ids[k];
        InstanceRef::new(id, self.arena.slot_of(id).unwrap())
    }

    fn toggle(&mut self, k: usize) {
        let at = self.at(k);
        if self.store.has(at, self.c) {
            self.store.remove(at, self.c).unwrap();
        } else {
            self.store.add(at, ClassId::PART, self.c, []).unwrap();
        }
    }

    /// The holders of the component in the subtree of `root`, by walking every holder's
    /// ancestry, sorted by id.
    fn expected(&self, root: InstanceId) -> Vec<InstanceId> {
        let mut out: Vec<InstanceId> = (0..self.ids.len())
            .filter(|&k| self.store.has(self.at(k), self.c))
            .map(|k| self.ids[k])
            .filter(|&id| {
                let mut at = Some(id);
                while let Some(a) = at {
                    if a == root {
                        return true;
                    }
                    at = self.arena.parent(a);
                }
                false
            })
            .collect();
        out.sort();
        out
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn a_subtree_query_matches_what_the_ancestry_says_through_every_move(
        parents in prop::collection::vec(prop::option::weighted(0.8, 0..24usize), 2..24),
        holders in prop::collection::vec(any::<bool>(), 24),
        root in 0..24usize,
        steps in prop::collection::vec(step(24), 0..24),
    ) {
        let mut world = World::new(&parents, &holders[..parents.len()]);
        let count = world.ids.len();
        let root = world.ids[root % count];
        let spec = QuerySpec::new().with(world.c).within(root);
        let mut cached = Query::with_caching(spec.clone(), true).unwrap();
        let mut uncached = Query::with_caching(spec, false).unwrap();
        for step in steps {
            match step {
                Step::Move(child, parent) => {
                    let child = world.ids[child % count];
                    let parent = parent.map(|p| world.ids[p % count]);
                    // A move into the child's own subtree is refused and changes nothing.
                    let _ = world.arena.set_parent(child, parent);
                }
                Step::Toggle(k) => world.toggle(k % count),
            }
            let expected = world.expected(root);
            for query in [&mut cached, &mut uncached] {
                let got = query.matches(&world.arena, &world.store).unwrap().ids().to_vec();
                prop_assert_eq!(&got, &expected);
            }
        }
    }
}

#[test]
fn an_instance_moved_out_of_the_subtree_leaves_the_matches_and_one_moved_in_joins() {
    let mut world = World::new(&[None, Some(0), Some(1), None], &[true, true, true, true]);
    let (top, root, child, other) = (world.ids[0], world.ids[1], world.ids[2], world.ids[3]);
    let mut query = Query::new(QuerySpec::new().with(world.c).within(root)).unwrap();
    let ids = |q: &mut Query, w: &World| q.matches(&w.arena, &w.store).unwrap().ids().to_vec();
    // The root itself and its descendants; not its parent.
    assert_eq!(ids(&mut query, &world), [root, child]);
    assert!(!ids(&mut query, &world).contains(&top));
    world.arena.set_parent(child, None).unwrap();
    assert_eq!(ids(&mut query, &world), [root]);
    world.arena.set_parent(other, Some(root)).unwrap();
    assert_eq!(ids(&mut query, &world), [root, other]);
}
