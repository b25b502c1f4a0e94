//! Driver choice, spec validation, cache reuse and rebuilds, order, ancestry, change windows,
//! passes and removal readers.

use crate::common::Caching;

use strata_arena::{Arena, ClassId, InstanceId, Vec3};
use strata_component_store::{
    ComponentDef, ComponentId, FieldDef, FieldId, InstanceRef, Store, StoreError,
};
use strata_query::{Driver, Query, QueryError, QuerySpec, Removals, RemovedReader};

struct World {
    arena: Arena,
    store: Store,
}

impl World {
    fn new() -> Self {
        Self {
            arena: Arena::standard(),
            store: Store::new(),
        }
    }
    fn component(&mut self, name: &str) -> (ComponentId, FieldId) {
        let c = self
            .store
            .install(
                ComponentDef::new(name).field(FieldDef::number("n", 0.0)),
                self.arena.classes(),
            )
            .unwrap();
        (c, self.store.field(c, "n").unwrap())
    }
    fn spawn(&mut self, class: ClassId, parent: Option<InstanceId>) -> InstanceRef {
        let id = self.arena.create(class, parent).unwrap();
        InstanceRef::new(id, self.arena.slot_of(id).unwrap())
    }
    fn give(&mut self, at: InstanceRef, c: ComponentId) {
        let class = self.arena.class(at.id).unwrap();
        self.store.add(at, class, c, []).unwrap();
    }
    fn ids(&self, q: &mut Query) -> Vec<InstanceId> {
        q.matches(&self.arena, &self.store).unwrap().ids().to_vec()
    }
}

fn the_smallest_required_set_or_tag_drives(mode: Caching) {
    let mut w = World::new();
    let (big, _) = w.component("Big");
    let (small, _) = w.component("Small");
    let mut smalls = Vec::new();
    for i in 0..20_000 {
        let e = w.spawn(ClassId::ENTITY, None);
        w.give(e, big);
        if i % 100 == 0 {
            w.give(e, small);
            smalls.push(e.id);
        }
    }
    assert_eq!(smalls.len(), 200);
    let mut q = mode.query(QuerySpec::new().with(big).with(small)).unwrap();
    assert_eq!(w.ids(&mut q), smalls);
    assert_eq!(q.driver(), Some(&Driver::Component(small)));

    // A tag smaller than both sets drives instead.
    for id in smalls.iter().take(5) {
        w.arena.add_tag(*id, "Boss").unwrap();
    }
    let mut tagged = mode
        .query(QuerySpec::new().with(big).with(small).tagged("Boss"))
        .unwrap();
    assert_eq!(w.ids(&mut tagged), smalls[..5].to_vec());
    assert_eq!(tagged.driver(), Some(&Driver::Tag("Boss".into())));

    // A tag alone is a driver too.
    let mut only_tag = mode.query(QuerySpec::new().tagged("Boss")).unwrap();
    assert_eq!(w.ids(&mut only_tag).len(), 5);
}

fn specs_without_a_positive_driver_are_rejected(mode: Caching) {
    let mut w = World::new();
    let (a, _) = w.component("A");
    let (b, _) = w.component("B");
    assert_eq!(
        mode.query(QuerySpec::new()).unwrap_err(),
        QueryError::NoDriver
    );
    assert_eq!(
        mode.query(
            QuerySpec::new()
                .without(a)
                .not_tagged("x")
                .class(ClassId::PART)
                .ancestor(b)
        )
        .unwrap_err(),
        QueryError::NoDriver
    );
    assert_eq!(
        mode.query(QuerySpec::new().with(a).changed(b)).unwrap_err(),
        QueryError::ChangeTermNotRequired(b)
    );
    assert!(matches!(
        mode.query(QuerySpec::new().with(a).without(a)),
        Err(QueryError::Contradiction(_))
    ));
    assert!(matches!(
        mode.query(QuerySpec::new().tagged("t").not_tagged("t")),
        Err(QueryError::Contradiction(_))
    ));
}

fn field_writes_keep_the_cache_and_structure_rebuilds_it(mode: Caching) {
    let mut w = World::new();
    let (a, n) = w.component("A");
    let (b, _) = w.component("B");
    let (c, _) = w.component("C");
    let e1 = w.spawn(ClassId::ENTITY, None);
    let e2 = w.spawn(ClassId::ENTITY, None);
    w.give(e1, a);
    w.give(e2, a);
    w.give(e1, b);
    let mut q = mode.query(QuerySpec::new().with(a).without(b)).unwrap();
    assert_eq!(w.ids(&mut q), vec![e2.id]);
    let mut generation = q.generation();

    w.store.write(e1, a, n, 5.0).unwrap();
    w.store.write(e2, a, n, 6.0).unwrap();
    assert_eq!(q.refresh(&w.arena, &w.store).unwrap(), mode.rebuilds(false));
    // Field writes never invalidate.
    generation = mode.after_read(&q, generation, false);

    // Unrelated structure does not either.
    w.give(e1, c);
    assert_eq!(w.ids(&mut q), vec![e2.id]);
    generation = mode.after_read(&q, generation, false);

    // A removal from an excluded set does.
    w.store.remove(e1, b).unwrap();
    assert_eq!(w.ids(&mut q), vec![e1.id, e2.id]);
    generation = mode.after_read(&q, generation, true);

    // So does an add to a required set.
    let e3 = w.spawn(ClassId::ENTITY, None);
    w.give(e3, a);
    assert_eq!(w.ids(&mut q), vec![e1.id, e2.id, e3.id]);
    generation = mode.after_read(&q, generation, true);

    // Replacing the store (a snapshot is another store) does.
    let replacement = w.store.snapshot();
    assert!(q.refresh(&w.arena, &replacement).unwrap());
    mode.after_read(&q, generation, true);
    assert!(q.refresh(&w.arena, &w.store).unwrap(), "and back");
}

fn tag_and_topology_changes_rebuild_the_queries_that_use_them(mode: Caching) {
    let mut w = World::new();
    let (a, _) = w.component("A");
    let (holder, _) = w.component("Holder");
    let root = w.spawn(ClassId::FOLDER, None);
    let other = w.spawn(ClassId::FOLDER, None);
    w.give(root, holder);
    let e = w.spawn(ClassId::ENTITY, Some(root.id));
    w.give(e, a);

    let mut tagged = mode.query(QuerySpec::new().with(a).tagged("Red")).unwrap();
    let mut plain = mode.query(QuerySpec::new().with(a)).unwrap();
    let mut under = mode
        .query(QuerySpec::new().with(a).ancestor(holder))
        .unwrap();
    assert!(w.ids(&mut tagged).is_empty());
    w.ids(&mut plain);
    assert_eq!(w.ids(&mut under), vec![e.id]);
    let (gt, gp, gu) = (tagged.generation(), plain.generation(), under.generation());

    w.arena.add_tag(e.id, "Red").unwrap();
    assert_eq!(w.ids(&mut tagged), vec![e.id]);
    mode.after_read(&tagged, gt, true);
    w.ids(&mut plain);
    // No tag term, no rebuild.
    let gp = mode.after_read(&plain, gp, false);

    w.arena.set_parent(e.id, Some(other.id)).unwrap();
    assert!(
        w.ids(&mut under).is_empty(),
        "reparented away from its holder"
    );
    mode.after_read(&under, gu, true);
    w.ids(&mut plain);
    // No ancestry term, no rebuild.
    mode.after_read(&plain, gp, false);
}

fn matches_stay_in_id_order_after_swap_removes(mode: Caching) {
    let mut w = World::new();
    let (a, _) = w.component("A");
    let (b, _) = w.component("B");
    let members: Vec<InstanceRef> = (0..10).map(|_| w.spawn(ClassId::ENTITY, None)).collect();
    // Add B in reverse, so B's rows are in descending id order.
    for m in members.iter().rev() {
        w.give(*m, b);
    }
    for m in &members {
        w.give(*m, a);
    }
    for m in [members[0], members[4], members[9]] {
        w.store.remove(m, a).unwrap();
    }
    let mut q = mode.query(QuerySpec::new().with(b).with(a)).unwrap();
    let matches = q.matches(&w.arena, &w.store).unwrap();
    let expected: Vec<InstanceId> = [1, 2, 3, 5, 6, 7, 8]
        .iter()
        .map(|i| members[*i].id)
        .collect();
    assert_eq!(matches.ids(), expected.as_slice());
    assert!(matches.ids().is_sorted());
    for (i, id) in matches.ids().iter().enumerate() {
        let at = InstanceRef::new(*id, matches.slots()[i]);
        assert_eq!(
            matches.rows(0).unwrap()[i] as usize,
            w.store.row(at, b).unwrap()
        );
        assert_eq!(
            matches.rows(1).unwrap()[i] as usize,
            w.store.row(at, a).unwrap()
        );
    }
    assert!(!matches.is_dense(0));
}

fn the_nearest_ancestor_is_recorded(mode: Caching) {
    let mut w = World::new();
    let (faction, _) = w.component("Faction");
    let (unit, _) = w.component("Unit");
    let empire = w.spawn(ClassId::FOLDER, None);
    let legion = w.spawn(ClassId::MODEL, Some(empire.id));
    let squad = w.spawn(ClassId::FOLDER, Some(legion.id));
    let soldier = w.spawn(ClassId::PART, Some(squad.id));
    let lone = w.spawn(ClassId::PART, None);
    w.give(empire, faction);
    w.give(legion, faction);
    w.give(soldier, unit);
    w.give(lone, unit);
    w.give(squad, unit);
    let mut q = mode
        .query(QuerySpec::new().with(unit).ancestor(faction))
        .unwrap();
    let matches = q.matches(&w.arena, &w.store).unwrap();
    assert_eq!(matches.ids(), &[squad.id, soldier.id]);
    assert_eq!(
        matches.ancestors(),
        &[legion.id, legion.id],
        "nearest, not the root"
    );
    let mut parts = mode
        .query(QuerySpec::new().with(unit).class(ClassId::PART))
        .unwrap();
    assert_eq!(w.ids(&mut parts), vec![soldier.id, lone.id]);
}

fn change_windows_are_per_query_and_include_writes_made_during_a_pass(mode: Caching) {
    let mut w = World::new();
    let (a, n) = w.component("A");
    let members: Vec<InstanceRef> = (0..4).map(|_| w.spawn(ClassId::ENTITY, None)).collect();
    for m in &members {
        w.give(*m, a);
    }
    let spec = QuerySpec::new().with(a).changed(a);
    let mut first = mode.query(spec.clone()).unwrap();
    let mut second = mode.query(spec).unwrap();
    let count = |q: &mut Query, w: &World| q.run(&w.arena, &w.store).unwrap().len();
    assert_eq!(count(&mut first, &w), 4, "the first pass sees every row");
    assert_eq!(count(&mut first, &w), 0);

    // A write during a pass belongs to the next window.
    {
        let pass = first.run(&w.arena, &w.store).unwrap();
        assert!(pass.is_empty());
    }
    w.store.write(members[2], a, n, 1.0).unwrap();
    assert!(
        !w.store.write(members[3], a, n, 0.0).unwrap(),
        "an equal write is no change"
    );
    let pass = first.run(&w.arena, &w.store).unwrap();
    assert_eq!(
        pass.iter().map(|m| m.id()).collect::<Vec<_>>(),
        vec![members[2].id]
    );

    // The second query's window is its own: it never ran, so it sees everything once.
    assert_eq!(count(&mut second, &w), 4);
    w.store.write(members[0], a, n, 2.0).unwrap();
    assert_eq!(count(&mut second, &w), 1);
    assert_eq!(count(&mut first, &w), 1);
    assert_eq!(count(&mut first, &w), 0);
}

fn several_change_terms_are_conjunctive_and_added_filters_see_adds(mode: Caching) {
    let mut w = World::new();
    let (a, an) = w.component("A");
    let (b, bn) = w.component("B");
    let members: Vec<InstanceRef> = (0..3).map(|_| w.spawn(ClassId::ENTITY, None)).collect();
    for m in &members {
        w.give(*m, a);
        w.give(*m, b);
    }
    let mut both = mode
        .query(QuerySpec::new().with(a).with(b).changed(a).changed(b))
        .unwrap();
    let mut added = mode.query(QuerySpec::new().with(a).added(a)).unwrap();
    both.run(&w.arena, &w.store).unwrap();
    assert_eq!(added.run(&w.arena, &w.store).unwrap().len(), 3);

    w.store.write(members[0], a, an, 1.0).unwrap();
    w.store.write(members[1], a, an, 1.0).unwrap();
    w.store.write(members[1], b, bn, 1.0).unwrap();
    w.store.write(members[2], b, bn, 1.0).unwrap();
    let pass = both.run(&w.arena, &w.store).unwrap();
    assert_eq!(
        pass.iter().map(|m| m.id()).collect::<Vec<_>>(),
        vec![members[1].id]
    );

    assert_eq!(
        added.run(&w.arena, &w.store).unwrap().len(),
        0,
        "writes are not adds"
    );
    w.store.remove(members[2], a).unwrap();
    w.give(members[2], a);
    let fresh = w.spawn(ClassId::ENTITY, None);
    w.give(fresh, a);
    let pass = added.run(&w.arena, &w.store).unwrap();
    assert_eq!(
        pass.iter().map(|m| m.id()).collect::<Vec<_>>(),
        vec![members[2].id, fresh.id]
    );
}

fn the_changed_pass_falls_back_to_a_scan_when_the_log_was_reset(mode: Caching) {
    let mut w = World::new();
    let (a, n) = w.component("A");
    let members: Vec<InstanceRef> = (0..400).map(|_| w.spawn(ClassId::ENTITY, None)).collect();
    for m in &members {
        w.give(*m, a);
    }
    let mut q = mode.query(QuerySpec::new().with(a).changed(a)).unwrap();
    q.run(&w.arena, &w.store).unwrap();
    // More than a quarter of the set changes: the store drops its change log.
    for (i, m) in members.iter().enumerate().take(300) {
        w.store.write(*m, a, n, i as f64 + 1.0).unwrap();
    }
    let since = q.baseline().unwrap();
    assert!(w.store.set(a).unwrap().changes_since(since).is_none());
    assert_eq!(q.run(&w.arena, &w.store).unwrap().len(), 300);
    // A small window afterwards is served by the log again.
    w.store.write(members[399], a, n, 9.0).unwrap();
    assert!(
        w.store
            .set(a)
            .unwrap()
            .changes_since(q.baseline().unwrap())
            .is_some()
    );
    assert_eq!(q.run(&w.arena, &w.store).unwrap().len(), 1);
}

fn passes_bind_columns_write_with_tracking_and_expose_rows_and_handles(mode: Caching) {
    let mut w = World::new();
    let pos = w
        .store
        .install(
            ComponentDef::new("Position").field(FieldDef::vector("v", Vec3::ZERO)),
            w.arena.classes(),
        )
        .unwrap();
    let vel = w
        .store
        .install(
            ComponentDef::new("Velocity").field(FieldDef::vector("v", Vec3::ONE)),
            w.arena.classes(),
        )
        .unwrap();
    let v = w.store.field(pos, "v").unwrap();
    let movers: Vec<InstanceRef> = (0..5).map(|_| w.spawn(ClassId::ENTITY, None)).collect();
    for m in &movers {
        w.give(*m, pos);
        w.give(*m, vel);
    }
    let mut q = mode.query(QuerySpec::new().with(pos).with(vel)).unwrap();
    let mut watcher = mode.query(QuerySpec::new().with(pos).changed(pos)).unwrap();
    watcher.run(&w.arena, &w.store).unwrap();
    let tick = w.store.tick();
    {
        let pass = q.run(&w.arena, &w.store).unwrap();
        assert!(pass.matches().is_dense(0) && pass.matches().is_dense(1));
        let changed = pass
            .update::<Vec3, Vec3>(&mut w.store, (0, v), (1, v), |p, d| {
                Vec3::new(p.x + d.x, p.y, p.z)
            })
            .unwrap();
        assert_eq!(changed, 5);
    }
    assert_eq!(w.store.tick().0, tick.0 + 1, "one pass, one tick");
    assert_eq!(watcher.run(&w.arena, &w.store).unwrap().len(), 5);
    let pass = q.run(&w.arena, &w.store).unwrap();
    let column = pass.column::<Vec3>(&w.store, 0, v).unwrap();
    for m in pass.iter() {
        assert_eq!(column.get(m.index()).unwrap().x, 1.0);
        assert_eq!(m.row(0), Some(w.store.row(m.instance(), pos).unwrap()));
        let handle = m.handle(&w.store, 1).unwrap();
        assert!(handle.is_present(&w.store));
        assert_eq!(m.get::<Vec3>(&w.store, 0, v).unwrap().x, 1.0);
    }
    assert!(matches!(
        pass.column::<f64>(&w.store, 0, v),
        Err(QueryError::Store(_))
    ));
    assert!(matches!(
        pass.column::<Vec3>(&w.store, 7, v),
        Err(QueryError::NoSuchTerm(7))
    ));
    // A pass refuses a store whose structure moved since it was built.
    let other = w.store.snapshot();
    assert_eq!(
        pass.column::<Vec3>(&other, 0, v).err(),
        Some(QueryError::StaleMatches)
    );
}

fn iterator_and_for_each_styles_agree(mode: Caching) {
    let mut w = World::new();
    let (a, _) = w.component("A");
    for _ in 0..10 {
        let e = w.spawn(ClassId::ENTITY, None);
        w.give(e, a);
    }
    let mut q = mode.query(QuerySpec::new().with(a)).unwrap();
    let by_iter: Vec<InstanceId> = q
        .iter(&w.arena, &w.store)
        .unwrap()
        .map(|m| m.id())
        .collect();
    let mut by_each = Vec::new();
    q.for_each(&w.arena, &w.store, |m| by_each.push(m.id()))
        .unwrap();
    assert_eq!(by_iter, by_each);
    assert_eq!(by_iter.len(), 10);
}

fn removed_readers_read_the_removal_log(_mode: Caching) {
    let mut w = World::new();
    let (a, _) = w.component("A");
    let e = w.spawn(ClassId::ENTITY, None);
    w.give(e, a);
    let mut reader = RemovedReader::new(&w.store, a).unwrap();
    w.store.remove(e, a).unwrap();
    assert_eq!(reader.read(&w.store).unwrap(), Removals::Ids(vec![e.id]));
}

fn removed_readers_return_sorted_distinct_ids_on_cursors_of_their_own(mode: Caching) {
    let mut w = World::new();
    let (a, n) = w.component("A");
    let members: Vec<InstanceRef> = (0..3).map(|_| w.spawn(ClassId::ENTITY, None)).collect();
    for m in &members {
        w.give(*m, a);
    }
    let mut early = RemovedReader::new(&w.store, a).unwrap();
    let mut changed = mode.query(QuerySpec::new().with(a).changed(a)).unwrap();
    changed.run(&w.arena, &w.store).unwrap();

    // Removed in reverse id order, and the last one twice: one id each, in id order.
    w.store.remove(members[2], a).unwrap();
    w.store.remove(members[0], a).unwrap();
    w.give(members[0], a);
    w.store.remove(members[0], a).unwrap();
    let mut late = RemovedReader::new(&w.store, a).unwrap();
    // A changed pass neither reads nor clears the removal log.
    w.store.write(members[1], a, n, 1.0).unwrap();
    assert_eq!(changed.run(&w.arena, &w.store).unwrap().len(), 1);
    assert_eq!(
        early.read(&w.store).unwrap(),
        Removals::Ids(vec![members[0].id, members[2].id])
    );
    assert_eq!(early.read(&w.store).unwrap(), Removals::Ids(Vec::new()));

    // A reader created later starts at the log's head; the first reader's reads moved only its
    // own cursor.
    w.store.remove(members[1], a).unwrap();
    assert_eq!(
        late.read(&w.store).unwrap(),
        Removals::Ids(vec![members[1].id])
    );
    assert_eq!(
        early.read(&w.store).unwrap(),
        Removals::Ids(vec![members[1].id])
    );
}

fn a_column_of_the_wrong_type_or_field_is_the_stores_error(mode: Caching) {
    let mut w = World::new();
    let (a, n) = w.component("A");
    let e = w.spawn(ClassId::ENTITY, None);
    w.give(e, a);
    let mut q = mode.query(QuerySpec::new().with(a)).unwrap();
    let pass = q.run(&w.arena, &w.store).unwrap();
    assert_eq!(
        pass.column::<Vec3>(&w.store, 0, n).err(),
        Some(QueryError::Store(StoreError::TypeMismatch {
            component: "A".into(),
            field: "n".into(),
            expected: "number".into(),
            found: std::any::type_name::<Vec3>().into(),
        }))
    );
    assert_eq!(
        pass.column::<f64>(&w.store, 0, FieldId::from_index(3))
            .err(),
        Some(QueryError::Store(StoreError::FieldOutOfRange {
            component: "A".into(),
            field: FieldId::from_index(3),
        }))
    );
    let column = pass.column::<f64>(&w.store, 0, n).unwrap();
    assert_eq!(column.get(0), Some(&0.0));
    assert_eq!(column.get(1), None);
}

/// A pass's `update_each` over a dense term keeps every row's tracking exactly as a column
/// writer writing the same values row by row does: values, changed ticks, the store tick, the
/// change log, dirty masks and the dirty list, equal writes skipped.
fn update_each_over_a_dense_pass_tracks_rows_as_a_column_writer_does(mode: Caching) {
    let mut w = World::new();
    let (score, n) = w.component("Score");
    for i in 0..200 {
        let e = w.spawn(ClassId::ENTITY, None);
        w.give(e, score);
        if i % 4 != 0 {
            w.store.write(e, score, n, i as f64).unwrap();
        }
    }
    w.store.take_dirty(score).unwrap();
    let mut q = mode.query(QuerySpec::new().with(score)).unwrap();
    // Every value but the zeros changes: negation leaves 0.0 and -0.0 apart bit for bit, so
    // rows at 0.0 are mapped to themselves to keep some equal writes in the pass.
    let step = |v: &f64| if *v == 0.0 { *v } else { -v };
    let mut by_writer = w.store.snapshot();
    for _ in 0..3 {
        let pass = q.run(&w.arena, &w.store).unwrap();
        assert!(pass.matches().is_dense(0));
        let changed = pass.update_each::<f64>(&mut w.store, (0, n), step).unwrap();
        let mut expected_changed = 0;
        {
            let mut writer = by_writer.column_writer::<f64>(score, n).unwrap();
            let rows = writer.values().len();
            for row in 0..rows {
                let next = step(&writer.values()[row]);
                expected_changed += usize::from(writer.write(row, next).unwrap());
            }
        }
        assert_eq!(changed, expected_changed);
        assert_eq!(changed, 150);
        let (a, b) = (w.store.set(score).unwrap(), by_writer.set(score).unwrap());
        assert_eq!(a.values::<f64>(n), b.values::<f64>(n));
        assert_eq!(a.changed_ticks(), b.changed_ticks());
        assert_eq!(w.store.tick(), by_writer.tick());
        for since in [0, 1, w.store.tick().0 - 1] {
            let since = strata_component_store::Tick(since);
            let rows = |set: &strata_component_store::ComponentSet| {
                set.changes_since(since)
                    .map(|changes| changes.rows().collect::<Vec<_>>())
            };
            assert_eq!(rows(a), rows(b), "since {since:?}");
        }
        for row in 0..a.len() {
            assert_eq!(a.dirty_mask(row), b.dirty_mask(row), "row {row}");
        }
        assert_eq!(w.store.take_dirty(score), by_writer.take_dirty(score));
    }
}

crate::common::both_ways!(
    the_smallest_required_set_or_tag_drives,
    specs_without_a_positive_driver_are_rejected,
    field_writes_keep_the_cache_and_structure_rebuilds_it,
    tag_and_topology_changes_rebuild_the_queries_that_use_them,
    matches_stay_in_id_order_after_swap_removes,
    the_nearest_ancestor_is_recorded,
    change_windows_are_per_query_and_include_writes_made_during_a_pass,
    several_change_terms_are_conjunctive_and_added_filters_see_adds,
    the_changed_pass_falls_back_to_a_scan_when_the_log_was_reset,
    passes_bind_columns_write_with_tracking_and_expose_rows_and_handles,
    iterator_and_for_each_styles_agree,
    removed_readers_read_the_removal_log,
    removed_readers_return_sorted_distinct_ids_on_cursors_of_their_own,
    a_column_of_the_wrong_type_or_field_is_the_stores_error,
    update_each_over_a_dense_pass_tracks_rows_as_a_column_writer_does,
);
