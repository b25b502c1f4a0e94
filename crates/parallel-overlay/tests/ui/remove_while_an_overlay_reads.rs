// A structural change of the store while an overlay borrows it does not compile.
use strata_arena::{Arena, ClassId};
use strata_component_store::{ComponentDef, FieldDef, InstanceRef, Store};
use strata_parallel_overlay::{NoOrder, Overlay, WriterRank, commit};

fn main() {
    let mut arena = Arena::standard();
    let mut store = Store::new();
    let score = store
        .install(ComponentDef::new("Score").field(FieldDef::integer("n", 0)), arena.classes())
        .unwrap();
    let n = store.field(score, "n").unwrap();
    let id = arena.create(ClassId::ENTITY, None).unwrap();
    let at = InstanceRef::of(&arena, id).unwrap();
    store.add(at, ClassId::ENTITY, score, []).unwrap();
    let mut overlay = Overlay::new(WriterRank::system(0, 1), &store);
    overlay.set(at, score, n, 5i64).unwrap();
    store.remove(at, score).unwrap();
    let set = overlay.finish();
    commit(&mut store, vec![set], &NoOrder);
}
