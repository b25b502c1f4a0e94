//! Bulk creation against creation one at a time: `create_many(class, parent, n)` and `n` calls
//! of `create(class, parent)` must leave two identically built arenas agreeing in everything a
//! reader can observe.
//!
//! Two differences are by design and are compared accordingly:
//! - Bulk creation takes one clock tick, single creation one per instance, so revision values
//!   differ. What a revision tells a cache is whether something changed since it looked, so
//!   every revision (domains, families, nodes, layouts) is compared as "newer than the clock
//!   before the creation"; revision domains are also compared as "equal to the clock after it"
//!   (the last single creation stamps them too), node and layout revisions are not (one at a
//!   time, the first new instance is older than the last).
//! - Bulk creation queues one `CreatedRange` event and journal entry where single creation
//!   queues one `Created` per instance. Ranges are expanded into per-instance entries before
//!   comparing, so the journal heads differ while the entries agree.

use proptest::prelude::*;
use strata_arena::{
    Arena, ClassId, Event, FamilyId, InstanceId, PartWrite, Revision, Slot, TopologyChange,
};

/// Every class of the standard registry.
const STANDARD: [ClassId; 14] = [
    ClassId::DATA_MODEL,
    ClassId::WORKSPACE,
    ClassId::FOLDER,
    ClassId::MODEL,
    ClassId::PART,
    ClassId::POINT_LIGHT,
    ClassId::SPOT_LIGHT,
    ClassId::SOUND,
    ClassId::CAMERA,
    ClassId::SCREEN_GUI,
    ClassId::FRAME,
    ClassId::COMPONENT_DEFINITION,
    ClassId::ENTITY,
    ClassId::ANIMATION,
];

/// Every family of the standard registry.
const FAMILIES: [FamilyId; 7] = [
    FamilyId::PARTS,
    FamilyId::LIGHTS,
    FamilyId::SOUNDS,
    FamilyId::CAMERAS,
    FamilyId::GUI,
    FamilyId::DEFINITIONS,
    FamilyId::ANIMATIONS,
];

/// How the arenas are built before the creation under test.
#[derive(Clone, Debug)]
struct Setup {
    /// (class index, parent pick): `None` creates a root.
    creates: Vec<(usize, Option<usize>)>,
    /// Live instances to destroy afterwards (picks), so later creations reuse slots.
    destroys: Vec<usize>,
    /// How many drains follow (two release the destroyed slots).
    drains: usize,
}

/// Where the creation under test puts its instances.
#[derive(Clone, Copy, Debug)]
enum Parent {
    None,
    Live(usize),
    Tombstone(usize),
}

fn live(arena: &Arena) -> Vec<InstanceId> {
    let mut ids: Vec<InstanceId> = arena.iter().map(|n| n.id()).collect();
    ids.sort_unstable();
    ids
}

fn build(setup: &Setup) -> (Arena, Vec<InstanceId>) {
    let mut arena = Arena::standard().with_seed(0x5eed);
    let game = arena.create(ClassId::DATA_MODEL, None).unwrap();
    arena.create(ClassId::WORKSPACE, Some(game)).unwrap();
    for &(class, parent) in &setup.creates {
        let ids = live(&arena);
        let parent = parent.map(|p| ids[p % ids.len()]);
        // Refused combinations (containment) simply leave the arena as it was.
        let _ = arena.create(STANDARD[class % STANDARD.len()], parent);
    }
    let mut destroyed = Vec::new();
    for &pick in &setup.destroys {
        let ids = live(&arena);
        let id = ids[pick % ids.len()];
        if arena.destroy(id).is_ok() {
            destroyed.push(id);
        }
    }
    for _ in 0..setup.drains {
        arena.drain().unwrap();
    }
    (arena, destroyed)
}

fn pick_parent(arena: &Arena, destroyed: &[InstanceId], parent: Parent) -> Option<InstanceId> {
    match parent {
        Parent::None => None,
        Parent::Live(i) => {
            let ids = live(arena);
            Some(ids[i % ids.len()])
        }
        Parent::Tombstone(i) if !destroyed.is_empty() => Some(destroyed[i % destroyed.len()]),
        Parent::Tombstone(_) => None,
    }
}

/// A revision as a cache reads it: changed since `before`, and the latest change.
fn stamp(revision: Revision, before: Revision, now: Revision) -> (bool, bool) {
    (revision > before, revision == now)
}

/// Events with every `CreatedRange` expanded into one `Created` per instance.
fn expanded_events(arena: &Arena) -> Vec<Event> {
    let mut out = Vec::new();
    for event in arena.pending_events() {
        match event {
            Event::CreatedRange {
                first,
                count,
                parent,
            } => out.extend((0..u64::from(*count)).map(|i| Event::Created {
                id: InstanceId::new(first.get() + i).unwrap(),
                parent: *parent,
            })),
            other => out.push(other.clone()),
        }
    }
    out
}

/// Topology journal entries since `cursor`, ranges expanded.
fn expanded_topology(arena: &Arena, cursor: u64) -> Vec<TopologyChange> {
    let mut out = Vec::new();
    for (_, change) in arena.topology_since(cursor).unwrap() {
        match change {
            TopologyChange::CreatedRange {
                first,
                count,
                parent,
            } => out.extend((0..u64::from(*count)).map(|i| TopologyChange::Created {
                id: InstanceId::new(first.get() + i).unwrap(),
                parent: *parent,
            })),
            other => out.push(other.clone()),
        }
    }
    out
}

/// Everything observable about an arena, with revisions reduced to what they tell a cache.
#[derive(Debug, PartialEq)]
struct Observed {
    next_id: u64,
    live: usize,
    tombstones: usize,
    slots: Vec<Option<InstanceId>>,
    nodes: Vec<String>,
    domains: Vec<(&'static str, (bool, bool))>,
    families: Vec<Vec<InstanceId>>,
    layouts: Vec<(InstanceId, bool)>,
    events: Vec<Event>,
    topology: Vec<TopologyChange>,
    part_writes: Vec<PartWrite>,
    diff: strata_arena::SnapshotDiff,
}

struct Baseline {
    clock: Revision,
    topology_head: u64,
    part_head: u64,
    snapshot: strata_arena::Snapshot,
}

fn baseline(arena: &Arena) -> Baseline {
    Baseline {
        clock: arena.revisions().clock(),
        topology_head: arena.topology_journal().head(),
        part_head: arena.part_log().head(),
        snapshot: arena.snapshot(),
    }
}

fn observe(arena: &Arena, base: &Baseline) -> Observed {
    let now = arena.revisions().clock();
    let st = |r| stamp(r, base.clock, now);
    let revisions = arena.revisions();
    let mut domains = vec![
        ("clock", st(revisions.clock())),
        ("topology", st(revisions.topology())),
        ("mutation", st(revisions.mutation())),
        ("tags", st(revisions.tags())),
        ("collision", st(revisions.collision())),
        ("animation", st(revisions.animation())),
        ("layout", st(revisions.layout())),
    ];
    let family_ids = FAMILIES;
    assert_eq!(arena.classes().family_count(), FAMILIES.len());
    for family in &family_ids {
        domains.push(("family", st(revisions.family(*family))));
    }
    let slots = (0..arena.slot_capacity())
        .map(|i| arena.id_at(Slot::from_index(u32::try_from(i).unwrap())))
        .collect();
    let nodes = arena
        .iter()
        .map(|n| {
            format!(
                "{:?} {:?} {:?} {:?} parent={:?} children={:?} count={} world={} locked={} \
                 tags={:?} data={:?} fresh={:?}",
                n.id(),
                n.class(),
                n.guid(),
                n.persistent_id(),
                n.parent(),
                arena.children(n.id()).collect::<Vec<_>>(),
                n.child_count(),
                n.is_in_world(),
                n.is_parent_locked(),
                n.tags(),
                n.data(),
                n.revision() > base.clock,
            )
        })
        .collect();
    let layouts = live(arena)
        .into_iter()
        .map(|id| (id, arena.layout_revision(id) > base.clock))
        .collect();
    Observed {
        next_id: arena.next_id(),
        live: arena.live_count(),
        tombstones: arena.tombstone_count(),
        slots,
        nodes,
        domains,
        families: family_ids
            .iter()
            .map(|f| arena.family_members(*f).to_vec())
            .collect(),
        layouts,
        events: expanded_events(arena),
        topology: expanded_topology(arena, base.topology_head),
        part_writes: arena
            .part_writes_since(base.part_head)
            .unwrap()
            .map(|(_, w)| *w)
            .collect(),
        diff: arena.snapshot().diff(&base.snapshot),
    }
}

fn setup() -> impl Strategy<Value = Setup> {
    (
        prop::collection::vec(
            (0..STANDARD.len(), prop::option::weighted(0.9, any::<u16>())),
            0..30,
        )
        .prop_map(|v| {
            v.into_iter()
                .map(|(c, p)| (c, p.map(usize::from)))
                .collect()
        }),
        prop::collection::vec(any::<u16>().prop_map(usize::from), 0..4),
        0..3usize,
    )
        .prop_map(|(creates, destroys, drains)| Setup {
            creates,
            destroys,
            drains,
        })
}

fn parent() -> impl Strategy<Value = Parent> {
    prop_oneof![
        1 => Just(Parent::None),
        8 => any::<u16>().prop_map(|i| Parent::Live(usize::from(i))),
        1 => any::<u16>().prop_map(|i| Parent::Tombstone(usize::from(i))),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn create_many_agrees_with_creating_one_at_a_time(
        setup in setup(),
        parent in parent(),
        n in 1..6usize,
    ) {
        for class in STANDARD {
            let (mut bulk, destroyed) = build(&setup);
            let (mut single, _) = build(&setup);
            let parent = pick_parent(&bulk, &destroyed, parent);
            let ctx = format!("{class:?} under {parent:?}, n = {n}");
            let (bulk_base, single_base) = (baseline(&bulk), baseline(&single));

            let bulk_result = bulk.create_many(class, parent, n).map(|made| {
                made.into_iter().map(|(id, _)| id).collect::<Vec<_>>()
            });
            let mut single_result = Ok(Vec::new());
            for _ in 0..n {
                match single.create(class, parent) {
                    Ok(id) => {
                        if let Ok(ids) = &mut single_result {
                            ids.push(id);
                        }
                    }
                    Err(error) => {
                        single_result = Err(error);
                        break;
                    }
                }
            }
            prop_assert_eq!(&bulk_result, &single_result, "{}: results", ctx);
            prop_assert_eq!(
                observe(&bulk, &bulk_base),
                observe(&single, &single_base),
                "{}: observable state",
                ctx
            );
        }
    }
}

/// Bulk creation writes a page once per run of slots in it; across page boundaries, into slots
/// freed in several pages and under a parent whose last child lies in another page, it must
/// still leave exactly what single creation leaves, and a snapshot taken before sees none of it.
#[test]
fn create_many_across_pages_and_freed_slots_agrees_with_single_creates() {
    let build = || {
        let mut arena = Arena::standard().with_seed(9);
        let folder = arena.create(ClassId::FOLDER, None).unwrap();
        let children: Vec<InstanceId> = (0..3000)
            .map(|_| arena.create(ClassId::ENTITY, Some(folder)).unwrap())
            .collect();
        for id in children.iter().step_by(7) {
            arena.destroy(*id).unwrap();
        }
        arena.drain().unwrap();
        arena.drain().unwrap();
        // The folder's last child now sits in an earlier page than the fresh slots.
        let tail = arena.create(ClassId::FOLDER, None).unwrap();
        arena.set_parent(children[1500], Some(tail)).unwrap();
        arena.set_parent(children[1500], Some(folder)).unwrap();
        arena.drain().unwrap();
        (arena, folder)
    };
    let (mut bulk, folder) = build();
    let (mut single, _) = build();
    let before = bulk.snapshot();
    let before_children: Vec<InstanceId> = before.children(folder).collect();
    let made = bulk
        .create_many(ClassId::ENTITY, Some(folder), 2500)
        .unwrap();
    let one_by_one: Vec<(InstanceId, Slot)> = (0..2500)
        .map(|_| {
            let id = single.create(ClassId::ENTITY, Some(folder)).unwrap();
            (id, single.slot_of(id).unwrap())
        })
        .collect();
    assert_eq!(made, one_by_one);
    assert_eq!(
        bulk.children(folder).collect::<Vec<_>>(),
        single.children(folder).collect::<Vec<_>>()
    );
    let count = bulk.get(folder).unwrap().child_count();
    assert_eq!(count, single.get(folder).unwrap().child_count());
    assert_eq!(count, bulk.children(folder).count());
    for slot in 0..bulk.slot_capacity() {
        let slot = Slot::from_index(u32::try_from(slot).unwrap());
        assert_eq!(bulk.id_at(slot), single.id_at(slot));
    }
    for &(id, _) in &made {
        let node = bulk.get(id).unwrap();
        assert_eq!(node.parent(), Some(folder));
        assert_eq!(node.guid(), single.get(id).unwrap().guid());
    }
    // The snapshot taken before still reads the old tree.
    assert_eq!(before.children(folder).collect::<Vec<_>>(), before_children);
    let diff = bulk.snapshot().diff(&before);
    let mut added: Vec<InstanceId> = made.iter().map(|(id, _)| *id).collect();
    added.sort_unstable();
    assert_eq!(diff.added, added);
    assert!(diff.removed.is_empty());
    let last_before = *before_children.last().unwrap();
    assert_eq!(diff.changed, vec![folder, last_before]);
}
