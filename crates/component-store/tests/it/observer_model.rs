//! Model-based test of lifecycle observers, frame dirt and structural counters: random adds,
//! bulk inserts, removals, destructions, writes, reads, `column_mut`, marks and frame ends,
//! against a model keeping membership in a `BTreeMap` and rows in swap-remove order.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use crate::common::World;
use proptest::prelude::*;
use strata_arena::{ClassId, InstanceId};
use strata_component_store::{ComponentDef, FieldDef, FrameDirty, InstanceRef, Observer};

const N: usize = 8;

#[derive(Clone, Debug)]
enum Op {
    Add(usize),
    InsertMany(u8),
    Remove(usize),
    Destroy(usize),
    Write(usize, i64),
    Read,
    ColumnMut(usize, i64),
    Mark(usize),
    EndFrame,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..N).prop_map(Op::Add),
        any::<u8>().prop_map(Op::InsertMany),
        (0..N).prop_map(Op::Remove),
        (0..N).prop_map(Op::Destroy),
        ((0..N), 0..3i64).prop_map(|(i, v)| Op::Write(i, v)),
        Just(Op::Read),
        ((0..N), 0..3i64).prop_map(|(i, v)| Op::ColumnMut(i, v)),
        (0..N).prop_map(Op::Mark),
        Just(Op::EndFrame),
    ]
}

#[derive(Default)]
struct Model {
    values: BTreeMap<InstanceId, i64>,
    rows: Vec<InstanceId>,
    log: Vec<String>,
    dirty: BTreeSet<InstanceId>,
    whole: bool,
    removed: bool,
    count: u64,
}

impl Model {
    fn add(&mut self, ids: &[InstanceId]) {
        if ids.is_empty() {
            return;
        }
        let first = self.rows.len();
        if first == 0 {
            self.log.push("activated".into());
        }
        for id in ids {
            self.values.insert(*id, 0);
            self.rows.push(*id);
            self.dirty.insert(*id);
        }
        self.log
            .push(format!("added {first}..={}", self.rows.len() - 1));
        self.count += 1;
    }

    fn remove(&mut self, id: InstanceId) {
        let Some(row) = self.rows.iter().position(|r| *r == id) else {
            return;
        };
        self.log.push(format!("removed {row} {}", self.values[&id]));
        self.values.remove(&id);
        self.dirty.remove(&id);
        self.removed = true;
        self.count += 1;
        self.rows.swap_remove(row);
        if let Some(moved) = self.rows.get(row).copied() {
            self.log
                .push(format!("moved {moved:?} {}->{row}", self.rows.len()));
            self.dirty.insert(moved);
            self.count += 1;
        }
        if self.rows.is_empty() {
            self.log.push("deactivated".into());
        }
    }

    fn expected_dirt(&self) -> FrameDirty {
        if self.whole {
            return FrameDirty::Whole;
        }
        let mut rows: Vec<usize> = self
            .rows
            .iter()
            .enumerate()
            .filter(|(_, id)| self.dirty.contains(id))
            .map(|(row, _)| row)
            .collect();
        rows.sort_unstable();
        if rows.is_empty() && !self.removed {
            FrameDirty::Clean
        } else {
            FrameDirty::Rows {
                rows,
                removed: self.removed,
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn observers_dirt_and_counters_follow_the_model(ops in proptest::collection::vec(op(), 1..60)) {
        let mut w = World::new();
        let c = w.install(ComponentDef::new("P").field(FieldDef::integer("v", 0)));
        let f = w.field(c, "v");
        let log: Arc<Mutex<Vec<String>>> = Arc::default();
        let (a, r, m, on, off) = (log.clone(), log.clone(), log.clone(), log.clone(), log.clone());
        w.store.observe(c, Observer::new()
            .on_added(move |_, rows| a.lock().unwrap().push(format!("added {rows:?}")))
            .on_removed(move |set, rows| {
                let v = set.values::<i64>(f).unwrap()[*rows.start()];
                r.lock().unwrap().push(format!("removed {} {v}", rows.start()));
            })
            .on_moved(move |_, id, old, new| m.lock().unwrap().push(format!("moved {id:?} {old}->{new}")))
            .on_activated(move |_| on.lock().unwrap().push("activated".into()))
            .on_deactivated(move |_| off.lock().unwrap().push("deactivated".into()))).unwrap();
        let mut pool: Vec<InstanceRef> = (0..N).map(|_| w.spawn(ClassId::ENTITY)).collect();
        let mut model = Model::default();
        let base = w.store.structural_count();
        for op in ops {
            match op {
                Op::Add(i) => {
                    let at = pool[i];
                    if !model.values.contains_key(&at.id) && w.arena.is_live(at.id) {
                        w.store.add(at, ClassId::ENTITY, c, []).unwrap();
                        model.add(&[at.id]);
                    }
                }
                Op::InsertMany(mask) => {
                    let ats: Vec<InstanceRef> = (0..N)
                        .filter(|i| mask & (1 << i) != 0)
                        .map(|i| pool[i])
                        .filter(|at| !model.values.contains_key(&at.id) && w.arena.is_live(at.id))
                        .collect();
                    w.store.insert_many(&ats, ClassId::ENTITY, c).unwrap();
                    model.add(&ats.iter().map(|at| at.id).collect::<Vec<_>>());
                }
                Op::Remove(i) => {
                    w.store.remove(pool[i], c).unwrap();
                    model.remove(pool[i].id);
                }
                Op::Destroy(i) => {
                    if w.arena.is_live(pool[i].id) {
                        w.destroy(pool[i].id);
                        model.remove(pool[i].id);
                        pool[i] = w.spawn(ClassId::ENTITY);
                    }
                }
                Op::Write(i, v) => {
                    if let Some(slot) = model.values.get_mut(&pool[i].id) {
                        let changed = w.store.write(pool[i], c, f, v).unwrap();
                        let old = std::mem::replace(slot, v);
                        prop_assert_eq!(changed, old != v);
                        if changed {
                            model.dirty.insert(pool[i].id);
                        }
                    }
                }
                Op::Read => {
                    let _ = w.store.set(c).unwrap().values::<i64>(f).unwrap().iter().sum::<i64>();
                }
                Op::ColumnMut(i, v) => {
                    let row = w.store.row(pool[i], c).ok();
                    let mut column = w.store.column_mut::<i64>(c, f).unwrap();
                    if let Some(row) = row {
                        column[row] = v;
                        model.values.insert(pool[i].id, v);
                    }
                    drop(column);
                    model.whole = true;
                }
                Op::Mark(i) => {
                    if w.store.mark_dirty(pool[i], c).is_ok() {
                        model.dirty.insert(pool[i].id);
                    }
                }
                Op::EndFrame => {
                    w.store.end_frame();
                    model.dirty.clear();
                    model.whole = false;
                    model.removed = false;
                }
            }
            prop_assert_eq!(std::mem::take(&mut *log.lock().unwrap()), std::mem::take(&mut model.log));
            prop_assert_eq!(w.store.set(c).unwrap().ids(), &model.rows[..]);
            for (id, v) in &model.values {
                let at = w.at(*id);
                prop_assert_eq!(*w.store.get::<i64>(at, c, f).unwrap(), *v);
            }
            let expected = model.expected_dirt();
            prop_assert_eq!(w.store.is_dirty(c).unwrap(), expected.is_dirty());
            prop_assert_eq!(w.store.frame_dirty(c).unwrap(), expected);
            prop_assert_eq!(w.store.structural_count() - base, model.count);
        }
    }
}
