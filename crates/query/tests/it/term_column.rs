//! Typed term columns of a pass: reads past the matches are refused, never a panic.

use crate::common::Caching;

use std::panic::{AssertUnwindSafe, catch_unwind};

use strata_arena::{Arena, ClassId};
use strata_component_store::{ComponentDef, FieldDef, InstanceRef, Store, Value};
use strata_query::{QueryError, QuerySpec};

fn a_term_column_read_past_the_matches_is_none(mode: Caching) {
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
    let mut query = mode.query(QuerySpec::new().with(score)).unwrap();
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

/// A world of `n` entities with `Score` (n = i), every third also with `Bonus`.
fn scored(
    n: usize,
) -> (
    Arena,
    Store,
    strata_component_store::ComponentId,
    strata_component_store::ComponentId,
) {
    let mut arena = Arena::standard();
    let mut store = Store::new();
    let score = store
        .install(
            ComponentDef::new("Score").field(FieldDef::number("n", 0.0)),
            arena.classes(),
        )
        .unwrap();
    let bonus = store
        .install(
            ComponentDef::new("Bonus").field(FieldDef::number("b", 0.0)),
            arena.classes(),
        )
        .unwrap();
    let n_field = store.field(score, "n").unwrap();
    for i in 0..n {
        let id = arena.create(ClassId::ENTITY, None).unwrap();
        let at = InstanceRef::of(&arena, id).unwrap();
        store
            .add(
                at,
                ClassId::ENTITY,
                score,
                [(n_field, Value::Number(i as f64))],
            )
            .unwrap();
        if i % 3 == 0 {
            store.add(at, ClassId::ENTITY, bonus, []).unwrap();
        }
    }
    (arena, store, score, bonus)
}

/// `iter` yields the term's value of every match the pass yields, in the pass's order: every
/// match of an unfiltered pass (dense or not), only the selected ones of a filtered pass.
fn a_term_column_iterates_the_values_of_the_pass_in_order(mode: Caching) {
    let (arena, mut store, score, bonus) = scored(30);
    let n = store.field(score, "n").unwrap();

    // Dense: every Score row matches, in row order.
    let mut all = mode.query(QuerySpec::new().with(score)).unwrap();
    let pass = all.run(&arena, &store).unwrap();
    let column = pass.column::<f64>(&store, 0, n).unwrap();
    let expected: Vec<f64> = (0..30).map(f64::from).collect();
    assert_eq!(column.iter().copied().collect::<Vec<_>>(), expected);
    assert_eq!(column.iter().len(), 30);
    assert_eq!(column.iter().sum::<f64>(), expected.iter().sum::<f64>());

    // Not dense: Score's rows of the entities that also hold Bonus.
    let mut joined = mode
        .query(QuerySpec::new().with(bonus).with(score))
        .unwrap();
    let pass = joined.run(&arena, &store).unwrap();
    assert!(!pass.matches().is_dense(1));
    let column = pass.column::<f64>(&store, 1, n).unwrap();
    let expected: Vec<f64> = (0..30).filter(|i| i % 3 == 0).map(f64::from).collect();
    assert_eq!(column.iter().copied().collect::<Vec<_>>(), expected);
    assert_eq!(
        column.iter().fold(0.0, |s, v| s + v),
        expected.iter().sum::<f64>()
    );
    let by_index: Vec<f64> = (0..pass.len()).map(|i| *column.get(i).unwrap()).collect();
    assert_eq!(by_index, expected);

    // Filtered: only the rows changed since the previous pass, in id order.
    let mut changed = mode
        .query(QuerySpec::new().with(score).changed(score))
        .unwrap();
    changed.run(&arena, &store).unwrap();
    let matches = changed.matches(&arena, &store).unwrap();
    let ids: Vec<_> = (0..matches.len())
        .map(|i| matches.get(i).unwrap().instance())
        .collect();
    for i in [25, 4, 17] {
        store.write(ids[i], score, n, 100.0 + i as f64).unwrap();
    }
    let pass = changed.run(&arena, &store).unwrap();
    let column = pass.column::<f64>(&store, 0, n).unwrap();
    assert_eq!(pass.len(), 3);
    assert_eq!(
        column.iter().copied().collect::<Vec<_>>(),
        [104.0, 117.0, 125.0]
    );
    assert_eq!(column.iter().len(), 3);
}

/// Only a required term has a column: an index past them is refused, even where the query has
/// excluded components.
fn a_column_past_the_required_terms_is_refused(mode: Caching) {
    let (arena, store, score, bonus) = scored(10);
    let n = store.field(score, "n").unwrap();
    let mut query = mode
        .query(QuerySpec::new().with(score).without(bonus))
        .unwrap();
    let pass = query.run(&arena, &store).unwrap();
    assert_eq!(pass.len(), 6);
    assert!(pass.column::<f64>(&store, 0, n).is_ok());
    for term in [1, 2, usize::MAX] {
        assert!(matches!(
            pass.column::<f64>(&store, term, n),
            Err(QueryError::NoSuchTerm(t)) if t == term
        ));
    }
}

crate::common::both_ways!(
    a_term_column_read_past_the_matches_is_none,
    a_term_column_iterates_the_values_of_the_pass_in_order,
    a_column_past_the_required_terms_is_refused,
);
