// A writer of run_parallel cannot reach the store it runs over: run_parallel holds it.
use strata_arena::{Arena, ClassId};
use strata_component_store::{ComponentDef, InstanceRef, Store};
use strata_parallel_overlay::{NoOrder, Writer, WriterRank, run_parallel};

fn main() {
    let mut arena = Arena::standard();
    let mut store = Store::new();
    let tag = store.install(ComponentDef::new("Tag"), arena.classes()).unwrap();
    let id = arena.create(ClassId::ENTITY, None).unwrap();
    let at = InstanceRef::of(&arena, id).unwrap();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let writers = [Writer { rank: WriterRank::system(0, 1), work: () }];
    run_parallel(
        &mut store,
        &pool,
        &writers,
        |_, _overlay| {
            store.add(at, ClassId::ENTITY, tag, [])?;
            Ok(())
        },
        &NoOrder,
    );
}
