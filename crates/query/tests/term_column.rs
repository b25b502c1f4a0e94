//! Typed term columns of a pass: reads past the matches are refused, never a panic.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly on purpose")]

use std::panic::{AssertUnwindSafe, catch_unwind};

use strata_arena::{Arena, ClassId};
use strata_component_store::{ComponentDef, FieldDef, InstanceRef, Store};
use strata_query::{Query, QuerySpec};

#[test]
fn a_term_column_read_past_the_matches_is_none() {
    let mut arena = Arena::standard();
    let mut store = Store::new();
    let score = store
        .install(
            ComponentDef::new("Score").field(FieldDef::number("n", 0.5)),
            arena.classes(),
        )
        .unwrap();
    let n = store.field(score, "n").unwrap();
    for _ in 0..3 {
        let id = arena.create(ClassId::ENTITY, None).unwrap();
        let at = InstanceRef::of(&arena, id).unwrap();
        store.add(at, ClassId::ENTITY, score, []).unwrap();
    }
    let mut query = Query::new(QuerySpec::new().with(score)).unwrap();
    let pass = query.run(&arena, &store).unwrap();
    let column = pass.column::<f64>(&store, 0, n).unwrap();
    let past = catch_unwind(AssertUnwindSafe(|| {
        let _ = column.get(3);
        let _ = column.get(usize::MAX);
    }));
    assert!(past.is_ok(), "reading past the matches panicked");
    assert_eq!(column.get(2), Some(&0.5));
    assert_eq!(column.get(3), None);
    assert_eq!(column.get(usize::MAX), None);
}
