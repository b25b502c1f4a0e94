//! Schedule shuffling: the order of systems no declaration orders, randomised by a seed. The
//! declared order always holds, the seeds do reorder what is free, and a correctly declared
//! world (and every example place) holds the same values at every frame under every seed.

use strata::prelude::*;

const SEEDS: [u64; 6] = [1, 2, 3, 4, 5, 6];

/// A world of eight serial systems in one phase: `s0` before `s1`, the rest free.
fn world_of_free_systems() -> World {
    let mut world = World::with_seed(1, 4).unwrap();
    for k in 0..8 {
        let mut spec = SystemSpec::new(&format!("s{k}"), |_: &mut Ctx<'_>| Ok(()));
        if k == 1 {
            spec = spec.after("s0");
        }
        world.add_system(spec).unwrap();
    }
    world
}

fn order(world: &mut World) -> Vec<String> {
    let plan = world.plan();
    (0..)
        .map_while(|p| plan.system_at(p))
        .map(|id| plan.system(id).unwrap().name().to_owned())
        .collect()
}

#[test]
fn a_seed_reorders_free_systems_and_keeps_every_declared_order() {
    let mut world = world_of_free_systems();
    let unshuffled = order(&mut world);
    let mut orders = vec![unshuffled.clone()];
    for seed in SEEDS {
        world.set_schedule_shuffle(Some(seed));
        let shuffled = order(&mut world);
        let at = |name: &str| shuffled.iter().position(|n| n == name).unwrap();
        assert!(at("s0") < at("s1"), "seed {seed}: {shuffled:?}");
        let mut sorted = shuffled.clone();
        sorted.sort();
        let mut all = unshuffled.clone();
        all.sort();
        assert_eq!(sorted, all, "the same systems");
        // A seed gives the same order every time it is asked.
        world.set_schedule_shuffle(None);
        world.set_schedule_shuffle(Some(seed));
        assert_eq!(order(&mut world), shuffled);
        orders.push(shuffled);
    }
    orders.sort();
    orders.dedup();
    assert!(
        orders.len() > 3,
        "the seeds should give several orders: {orders:?}"
    );
}
