//! Bulk spawn, set, remove and despawn through a `Stage`, with an observer and a dirty
//! consumer watching (the example of `docs/guides/bulk-and-observers.md`; `cargo test` builds
//! it, `cargo run --example bulk_and_observers -p strata-component-store` runs it).

use std::sync::{Arc, Mutex};

use strata_arena::{Arena, ClassId};
use strata_component_store::{
    ComponentDef, FieldDef, InstanceRef, Observer, Stage, Store, StoreError, Value,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut arena = Arena::standard();
    let mut store = Store::new();
    let position = store.install(
        ComponentDef::new("Position").field(FieldDef::number("x", 0.0)),
        arena.classes(),
    )?;
    let paused = store.install(
        ComponentDef::new("Paused").field(FieldDef::boolean("on", true)),
        arena.classes(),
    )?;
    let x = store.field(position, "x")?;

    // An observer hears each batch once: one added range, values already initialised.
    let log = Arc::new(Mutex::new(Vec::new()));
    let heard = log.clone();
    store.observe(
        position,
        Observer::new().on_added(move |_, rows| heard.lock().expect("log").push(rows)),
    )?;

    // Stage a spawn: ids are reserved now, nothing is alive until the commit.
    let mut stage = Stage::new(&arena, &store);
    let ticket = stage.spawn(
        &mut arena,
        10_000,
        ClassId::ENTITY,
        None,
        &[position],
        move |rows| {
            for (k, value) in rows.column_mut::<f64>(position, x)?.iter_mut().enumerate() {
                *value = k as f64 * 2.0;
            }
            Ok::<(), StoreError>(())
        },
    )?;
    assert!(!arena.is_live(ticket.first()));
    stage.commit(&mut arena, &mut store)?;
    assert_eq!(*log.lock().expect("log"), vec![0..=9_999]);

    // Whole-membership work: capture the members, then set, remove and despawn in bulk.
    let members: Vec<InstanceRef> = {
        let set = store.set(position)?;
        set.ids()
            .iter()
            .zip(set.slots())
            .map(|(id, slot)| InstanceRef::new(*id, *slot))
            .collect()
    };
    stage.set(&members, paused, vec![]);
    stage.commit(&mut arena, &mut store)?;
    stage.remove(&members, paused);
    stage.set(&members[..1], position, vec![(x, Value::Number(-1.0))]);
    let published = stage.commit(&mut arena, &mut store)?;
    assert_eq!((published.removed, published.replaced), (10_000, 1));

    // A dirty consumer reads what changed this frame, then the frame ends.
    assert!(store.frame_dirty(position)?.is_dirty());
    store.end_frame();
    assert!(!store.frame_dirty(position)?.is_dirty());

    stage.despawn(&members);
    let published = stage.commit(&mut arena, &mut store)?;
    assert_eq!(published.despawned, 10_000);
    assert!(store.set(position)?.is_empty());
    Ok(())
}
