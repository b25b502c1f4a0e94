//! Arena images: an arena's live instances as plain data and an arena rebuilt from one, with
//! the same ids, GUIDs, persistent ids, hierarchy, data and tags, a counter that never issues an
//! imaged id again, and every inconsistent image refused with a typed error.

use std::sync::Arc;

use crate::common::place;
use proptest::prelude::*;
use strata_arena::{
    Arena, ArenaError, ArenaImage, AttrValue, BuiltinState, ClassId, ClassRegistry, Event,
    ImageNode, InstanceId, ModelState, MovedIds, Vec3,
};

fn classes() -> Arc<ClassRegistry> {
    Arc::new(ClassRegistry::standard())
}

/// A small world with everything an image carries.
fn world() -> (Arena, Vec<InstanceId>) {
    let mut p = place();
    let a = &mut p.arena;
    let model = a.create(ClassId::MODEL, Some(p.workspace)).unwrap();
    let part = a.create(ClassId::PART, Some(model)).unwrap();
    let second = a.create(ClassId::PART, Some(model)).unwrap();
    let folder = a.create(ClassId::FOLDER, None).unwrap();
    // Moving the folder under the model after the parts makes pre-order differ from id order.
    let late = a.create(ClassId::PART, Some(p.workspace)).unwrap();
    a.set_parent(late, Some(model)).unwrap();
    a.set_name(part, "Wheel").unwrap();
    a.set_attribute(folder, "speed", Some(AttrValue::Number(2.5)))
        .unwrap();
    a.set_attribute(folder, "target", Some(AttrValue::Reference(Some(part))))
        .unwrap();
    a.set_state(
        model,
        BuiltinState::Model(Box::new(ModelState {
            primary_part: Some(second),
            ..ModelState::default()
        })),
    )
    .unwrap();
    a.set_part_size(part, Vec3::new(1.0, 2.0, 3.0)).unwrap();
    a.add_tag(part, "wheel").unwrap();
    a.add_tag(part, "round").unwrap();
    a.ensure_persistent_id(second).unwrap();
    a.set_parent_locked(folder, true).unwrap();
    let gone = a.create(ClassId::PART, Some(model)).unwrap();
    a.destroy(gone).unwrap();
    (
        p.arena,
        vec![p.game, p.workspace, model, part, second, folder, late, gone],
    )
}

#[test]
fn an_arena_rebuilt_from_its_image_is_the_same_arena() {
    let (arena, ids) = world();
    let image = arena.image();
    assert_eq!(
        image.nodes.len(),
        arena.live_count(),
        "tombstones are not imaged"
    );
    let rebuilt = Arena::from_image(classes(), &image).unwrap();
    assert_eq!(rebuilt.image(), image);
    for id in &ids[..7] {
        let (was, is) = (arena.get(*id).unwrap(), rebuilt.get(*id).unwrap());
        assert_eq!(was.guid(), is.guid(), "{id}");
        assert_eq!(was.persistent_id(), is.persistent_id());
        assert_eq!(was.data(), is.data());
        assert_eq!(was.tags(), is.tags());
        assert_eq!(was.is_in_world(), is.is_in_world());
        assert_eq!(was.is_parent_locked(), is.is_parent_locked());
        assert_eq!(
            arena.children(*id).collect::<Vec<_>>(),
            rebuilt.children(*id).collect::<Vec<_>>()
        );
    }
    assert_eq!(rebuilt.pending_events(), arena.pending_events());
    assert_ne!(rebuilt.arena_id(), arena.arena_id());
    // The counter continues above everything the imaged arena issued, the destroyed id too.
    let mut rebuilt = rebuilt;
    let next = rebuilt.create(ClassId::FOLDER, None).unwrap();
    assert!(next.get() >= arena.next_id());
    assert!(!rebuilt.is_live(ids[7]));
    assert_eq!(
        rebuilt
            .insert_with_id(ids[7], ClassId::PART, None)
            .unwrap_err(),
        ArenaError::IdInUse(ids[7]),
        "the destroyed id is a tombstone until its drains, as in the imaged arena"
    );
    // New GUIDs are the rebuilt arena's own.
    assert!(
        ids[..7]
            .iter()
            .all(|id| rebuilt.get(*id).unwrap().guid() != rebuilt.get(next).unwrap().guid())
    );
}

/// What `n` creations and a persistent id ask of an arena: the GUIDs and the persistent id it
/// hands out.
fn identities_drawn(arena: &mut Arena, n: usize) -> Vec<String> {
    let mut drawn = Vec::new();
    for _ in 0..n {
        let id = arena.create(ClassId::FOLDER, None).unwrap();
        drawn.push(format!("{} {}", id, arena.get(id).unwrap().guid()));
    }
    let last = arena.create(ClassId::PART, None).unwrap();
    drawn.push(format!("{:?}", arena.ensure_persistent_id(last).unwrap()));
    drawn
}

#[test]
fn an_arena_rebuilt_from_its_image_continues_its_identities() {
    // Unseeded: the arena's own seed, from entropy.
    let (mut arena, _) = world();
    let image = arena.image();
    let mut first = Arena::from_image(classes(), &image).unwrap();
    let mut second = Arena::from_image(classes(), &image).unwrap();
    let drawn = identities_drawn(&mut first, 3);
    assert_eq!(
        identities_drawn(&mut second, 3),
        drawn,
        "two rebuilds agree"
    );
    assert_eq!(
        identities_drawn(&mut arena, 3),
        drawn,
        "and continue where the imaged arena would have"
    );
    assert_eq!(first.image(), arena.image());
}

/// An arena between two drains with everything pending: a tombstone the last drain reported,
/// creations, a move, a subtree destroyed with tags and data, a bulk destruction. Returns it
/// with the roots destroyed since the last drain.
fn pending() -> (Arena, Vec<InstanceId>) {
    let mut p = place();
    let a = &mut p.arena;
    let model = a.create(ClassId::MODEL, Some(p.workspace)).unwrap();
    let parts: Vec<InstanceId> = (0..3)
        .map(|_| a.create(ClassId::PART, Some(model)).unwrap())
        .collect();
    a.set_name(parts[0], "Wheel").unwrap();
    a.add_tag(parts[0], "round").unwrap();
    a.ensure_persistent_id(parts[1]).unwrap();
    let loose: Vec<InstanceId> = (0..3)
        .map(|_| a.create(ClassId::FOLDER, None).unwrap())
        .collect();
    let old = a.create(ClassId::FOLDER, Some(loose[0])).unwrap();
    a.set_name(old, "Old").unwrap();
    a.drain().unwrap();
    a.destroy(old).unwrap();
    a.drain().unwrap();
    let late = a.create(ClassId::FOLDER, Some(p.workspace)).unwrap();
    a.create(ClassId::PART, Some(late)).unwrap();
    a.set_parent(parts[2], Some(p.workspace)).unwrap();
    a.destroy(model).unwrap();
    a.destroy_many(&loose[1..]).unwrap();
    (p.arena, vec![model, loose[1], loose[2]])
}

/// What a drain shows: its events, the ids it made reclaimable and reclaimed, and each
/// destroyed root's subtree read in a lifecycle scope.
fn drained(arena: &mut Arena, roots: &[InstanceId]) -> String {
    let drained = arena.drain().unwrap();
    let ids = |doomed: &[strata_arena::Doomed]| doomed.iter().map(|d| d.id).collect::<Vec<_>>();
    let mut shown = format!(
        "{:?}\n{:?}\n{:?}\n",
        drained.events,
        ids(&drained.reclaimable),
        ids(&drained.reclaimed)
    );
    for root in roots {
        let read = arena.with_lifecycle_scope(*root, |view| {
            std::iter::once(*root)
                .chain(view.descendants(*root))
                .map(|id| {
                    let n = view.get(id).unwrap();
                    format!(
                        "{id} {} {} {:?} {:?} {:?}",
                        n.name(),
                        n.guid(),
                        n.parent(),
                        n.tags(),
                        n.persistent_id()
                    )
                })
                .collect::<Vec<_>>()
        });
        shown.push_str(&format!("{read:?}\n"));
    }
    shown
}

#[test]
fn an_arena_rebuilt_from_its_image_keeps_what_waits_for_the_next_drains() {
    let (mut arena, roots) = pending();
    let image = arena.image();
    let mut rebuilt = Arena::from_image(classes(), &image).unwrap();
    assert_eq!(rebuilt.image(), image);
    assert_eq!(rebuilt.pending_events(), arena.pending_events());
    assert_eq!(rebuilt.tombstone_count(), arena.tombstone_count());
    assert_eq!(rebuilt.pending_reclamation(), arena.pending_reclamation());
    for root in &roots {
        assert!(
            rebuilt.get(*root).is_none() && !rebuilt.is_live(*root),
            "a tombstone"
        );
    }
    for round in 0..3 {
        let shown = drained(&mut arena, if round == 0 { &roots } else { &[] });
        assert_eq!(
            drained(&mut rebuilt, if round == 0 { &roots } else { &[] }),
            shown,
            "drain {round}"
        );
        assert_eq!(rebuilt.image(), arena.image(), "drain {round}");
    }
    assert_eq!(rebuilt.tombstone_count(), 0);
}

#[test]
fn an_inconsistent_image_is_refused_with_a_typed_error() {
    let (arena, _) = world();
    let image = arena.image();
    let refused = |change: &dyn Fn(&mut ArenaImage)| {
        let mut bad = image.clone();
        change(&mut bad);
        Arena::from_image(classes(), &bad).unwrap_err()
    };
    assert!(
        matches!(
            refused(&|i| i.nodes.swap(0, 1)),
            ArenaError::InvalidImage { .. }
        ),
        "a child before its parent"
    );
    assert!(matches!(
        refused(&|i| i.nodes[2].class = "Spaceship".into()),
        ArenaError::UnknownClass(_)
    ));
    assert!(matches!(
        refused(&|i| {
            let twin = i.nodes[3].clone();
            i.nodes.push(twin);
        }),
        ArenaError::IdInUse(_)
    ));
    assert!(matches!(
        refused(&|i| {
            let guid = i.nodes[3].guid;
            i.nodes[4].guid = guid;
        }),
        ArenaError::InvalidImage { .. }
    ));
    let with_pid = image
        .nodes
        .iter()
        .position(|n| n.persistent_id.is_some())
        .unwrap();
    assert!(matches!(
        refused(&|i| {
            let pid = i.nodes[with_pid].persistent_id;
            let other = (with_pid + 1) % i.nodes.len();
            i.nodes[other].persistent_id = pid;
        }),
        ArenaError::PersistentIdInUse { .. }
    ));
    let part = image
        .nodes
        .iter()
        .position(|n| &*n.class == "Part")
        .unwrap();
    assert!(matches!(
        refused(&|i| i.nodes[part].data.state = BuiltinState::Plain),
        ArenaError::WrongState { .. }
    ));
    assert!(matches!(
        refused(&|i| i.nodes[part].id = InstanceId::new(u64::MAX).unwrap()),
        ArenaError::IdOutOfRange(_)
    ));
    let workspace = image
        .nodes
        .iter()
        .position(|n| &*n.class == "Workspace")
        .unwrap();
    assert!(matches!(
        refused(&|i| {
            let folder = i.nodes.iter().find(|n| &*n.class == "Folder").unwrap().id;
            i.nodes[workspace].parent = Some(folder);
        }),
        ArenaError::InvalidImage { .. } | ArenaError::Containment { .. }
    ));
}

/// Tombstones and queued events an arena could not hold are refused, never rebuilt.
#[test]
fn an_image_with_impossible_tombstones_or_events_is_refused() {
    let (arena, roots) = pending();
    let image = arena.image();
    Arena::from_image(classes(), &image).unwrap();
    let refused = |why: &str, change: &dyn Fn(&mut ArenaImage)| {
        let mut bad = image.clone();
        change(&mut bad);
        match Arena::from_image(classes(), &bad) {
            Err(ArenaError::InvalidImage { .. } | ArenaError::IdInUse(_)) => {}
            other => panic!("{why}: {:?}", other.map(|_| ())),
        }
    };
    let unknown = InstanceId::new(999).unwrap();
    let live = image.nodes[2].id;
    let reported = image.reclaimable[0].id;
    refused("an event naming an unknown instance", &|i| {
        i.events.push(Event::ChildAdded {
            parent: unknown,
            child: live,
        })
    });
    refused(
        "an event naming a tombstone the last drain reported",
        &|i| {
            i.events.push(Event::AncestryChanged {
                moved: MovedIds::One(reported),
            })
        },
    );
    refused("an empty list", &|i| {
        i.events.push(Event::AncestryChanged {
            moved: MovedIds::Many(Vec::new().into()),
        })
    });
    refused("an empty range", &|i| {
        i.events.push(Event::CreatedRange {
            first: live,
            count: 0,
            parent: None,
        })
    });
    refused("a range past every instance", &|i| {
        i.events.push(Event::CreatedRange {
            first: live,
            count: u32::MAX,
            parent: None,
        })
    });
    refused("a destruction of a live instance", &|i| {
        i.events.push(Event::Destroyed {
            subtree: MovedIds::One(live),
        })
    });
    refused("a destruction named twice", &|i| {
        let again = i
            .events
            .iter()
            .find(|e| matches!(e, Event::Destroyed { .. }))
            .unwrap()
            .clone();
        i.events.push(again);
    });
    refused("a destruction not named", &|i| {
        i.events.retain(|e| !matches!(e, Event::DestroyedMany(_)))
    });
    refused("a destruction naming part of its subtree", &|i| {
        for e in &mut i.events {
            if let Event::Destroyed { subtree } = e {
                *subtree = MovedIds::One(subtree.root());
            }
        }
    });
    refused("a tombstone under a live instance", &|i| {
        i.doomed[0].parent = Some(live)
    });
    refused("a tombstone before its parent", &|i| i.doomed.swap(0, 1));
    refused("a tombstone not locked", &|i| {
        i.doomed[1].parent_locked = false
    });
    refused("a tombstone also live", &|i| {
        let twin = i.nodes[2].clone();
        i.doomed.push(ImageNode {
            parent: None,
            parent_locked: true,
            ..twin
        });
    });
    refused("a tombstone in both queues", &|i| {
        let twin = i.reclaimable[0].clone();
        i.doomed.push(twin);
    });
    refused("fewer creations than instances", &|i| {
        i.identity.as_mut().unwrap().creations = 3
    });
    assert!(
        roots
            .iter()
            .all(|root| image.doomed.iter().any(|t| t.id == *root))
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Random hierarchies (creations under random parents, moves, destructions, bulk ones,
    /// drains between them) image and rebuild to the same image, and the rebuilt arena's next
    /// drains return what the imaged arena's return.
    #[test]
    fn images_of_random_arenas_rebuild_exactly(ops in prop::collection::vec((0u8..6, any::<u16>(), any::<u16>()), 1..80)) {
        let mut p = place();
        let mut live = vec![p.workspace];
        for (kind, a, b) in ops {
            let pick = |n: u16| live[n as usize % live.len()];
            match kind {
                0 | 1 => {
                    let class = if kind == 0 { ClassId::PART } else { ClassId::FOLDER };
                    if let Ok(id) = p.arena.create(class, Some(pick(a))) {
                        live.push(id);
                    }
                }
                2 => {
                    let _ = p.arena.set_parent(pick(a), Some(pick(b)));
                }
                3 => {
                    let id = pick(a);
                    if id != p.workspace && p.arena.destroy(id).is_ok() {
                        live.retain(|x| p.arena.is_live(*x));
                    }
                }
                4 => {
                    let (x, y) = (pick(a), pick(b));
                    if x != p.workspace && y != p.workspace && p.arena.destroy_many(&[x, y]).is_ok() {
                        live.retain(|x| p.arena.is_live(*x));
                    }
                }
                _ => {
                    p.arena.drain().unwrap();
                }
            }
        }
        let image = p.arena.image();
        let mut rebuilt = Arena::from_image(classes(), &image).unwrap();
        prop_assert_eq!(rebuilt.image(), image);
        for _ in 0..2 {
            let roots: Vec<InstanceId> = p.arena.pending_events().iter().flat_map(|e| match e {
                Event::Destroyed { subtree } => vec![subtree.root()],
                Event::DestroyedMany(batch) => batch.roots.iter().map(|(r, _)| *r).collect(),
                _ => Vec::new(),
            }).collect();
            prop_assert_eq!(drained(&mut rebuilt, &roots), drained(&mut p.arena, &roots));
            prop_assert_eq!(rebuilt.image(), p.arena.image());
        }
    }
}
