//! `Query`: driver choice, the cached matches and their stamp, change windows, and passes.
//!
//! Invariant: the cache holds exactly the instances that satisfied the spec when it was built,
//! sorted by id, with each required term's dense row per match (and one past its largest row,
//! which a term column is checked against when bound); it is reused only while its
//! stamp (store identity, structural revision of every component the spec names, and, when the
//! spec consults the arena, the arena's identity with its tag revision when tags are involved
//! and its topology revision when ancestry or classes are) still matches, and the generation
//! advances exactly when it is rebuilt. Revisions are compared only within one arena lineage
//! (an arena and its snapshots share an `ArenaId`); equal revisions of different arenas say
//! nothing. A query's change baseline is the store
//! tick captured when its previous pass began, together with the identity of the store it was
//! captured from; it belongs to this query alone. A tick is compared only with ticks of the
//! store it came from: a pass against any other store (a snapshot, a rollback, a replacement)
//! has no change window and yields every match once.

use std::sync::Arc;

use strata_arena::{ArenaId, ClassId, InstanceId, Revision, Slot, Snapshot};
use strata_component_store::{
    ComponentHandle, ComponentId, ComponentSet, FieldId, InstanceRef, Scalar, Store, StoreError,
    StoreId, Tick, TicksAfter, run_start,
};

use crate::error::QueryError;
use crate::spec::QuerySpec;

/// What supplied a query's candidates when its cache was last built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Driver {
    /// The rows of a required component.
    Component(ComponentId),
    /// The members of a required tag.
    Tag(Arc<str>),
}

/// What the cache was built against.
#[derive(Clone, Debug, PartialEq)]
struct Stamp {
    store: StoreId,
    /// Each of the spec's `structural_components`, in that order (the required terms first, in
    /// term order), with its set's structural revision.
    structural: Vec<(ComponentId, u64)>,
    /// The arena the tag and topology revisions belong to, when the spec consults the arena.
    arena: Option<ArenaId>,
    tags: Option<Revision>,
    topology: Option<Revision>,
}

impl Stamp {
    /// Whether `store` is the store the cache was built against and no component the spec
    /// names changed structure since.
    fn structure_holds(&self, store: &Store) -> Result<bool, StoreError> {
        if self.store != store.id() {
            return Ok(false);
        }
        for &(c, revision) in &self.structural {
            if store.set(c)?.structural_revision() != revision {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// [`Stamp::structure_holds`] for a pass, which refuses a store that fails it (or lost a
    /// component) as stale; on success, the set of required term `term` when there is one.
    fn verified_set<'s>(
        &self,
        store: &'s Store,
        term: usize,
    ) -> Result<Option<&'s ComponentSet>, QueryError> {
        if self.store != store.id() {
            return Err(QueryError::StaleMatches);
        }
        let mut found = None;
        for (i, &(c, revision)) in self.structural.iter().enumerate() {
            let Ok(set) = store.set(c) else {
                return Err(QueryError::StaleMatches);
            };
            if set.structural_revision() != revision {
                return Err(QueryError::StaleMatches);
            }
            if i == term {
                found = Some(set);
            }
        }
        Ok(found)
    }
}

/// What a query's matches were last built against (see [`Query::built_against`]).
#[derive(Clone, Debug, PartialEq)]
pub struct BuiltAgainst(Stamp);

/// The cached matches, sorted by instance id.
#[derive(Clone, Debug, Default)]
pub(crate) struct Cache {
    ids: Vec<InstanceId>,
    slots: Vec<Slot>,
    /// Per required term, the dense row of each match.
    rows: Vec<Vec<u32>>,
    /// Per required term, its first row when its rows follow one another (`first..first +
    /// len`, one slice of each column) and there are any. A term is dense (its rows exactly
    /// `0..len`, a plain slice walk) when it has no rows or its run starts at 0
    /// ([`Cache::dense`]).
    runs: Vec<Option<u32>>,
    /// Per required term, one past its largest row (0 without matches): a column of at least
    /// this many values can serve every match.
    row_bound: Vec<usize>,
    /// For an ancestor term, the nearest ancestor holding the component, per match.
    ancestors: Vec<InstanceId>,
    /// For each term with an added or changed filter, row → match index (`NO_MATCH` for rows
    /// of instances that do not match), so a changed row finds its match in O(1).
    match_of_row: Vec<Vec<u32>>,
}

/// `match_of_row` entry of a row whose instance does not match.
const NO_MATCH: u32 = u32::MAX;

/// Where a query's change window starts: the store tick its previous pass began at, and the
/// store that tick belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Baseline {
    store: StoreId,
    tick: Tick,
}

/// Which rows a pass's change filters selected from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChangeWindow {
    /// The spec has no added or changed filter: the pass yields every match.
    Unfiltered,
    /// The matches whose filtered rows were added or changed after this store tick (the tick
    /// the previous pass began at, or `Tick(0)` on the first pass).
    Since(Tick),
    /// The previous pass ran against another store (a snapshot, a rollback to an older one, a
    /// replacement), whose ticks say nothing about this one: the pass yields every match, once,
    /// and the next pass compares with this one.
    Unavailable,
}

/// A query: a validated spec with its cache and change baseline.
#[derive(Clone, Debug)]
pub struct Query {
    spec: QuerySpec,
    cache: Cache,
    stamp: Option<Stamp>,
    generation: u64,
    driver: Option<Driver>,
    baseline: Option<Baseline>,
    selection: Vec<u32>,
    /// Whether matches are kept between calls (see [`Query::uncached`]).
    cached: bool,
}

impl Query {
    /// A query for a spec; refused when the spec has no driver or is contradictory.
    ///
    /// # Errors
    ///
    /// [`QueryError::NoDriver`] for a spec with no required component or tag,
    /// [`QueryError::ChangeTermNotRequired`] for a change filter on a component it does not
    /// require, and [`QueryError::Contradiction`] for a term both required and excluded.
    pub fn new(spec: QuerySpec) -> Result<Self, QueryError> {
        spec.validate()?;
        let terms = spec.with.len();
        Ok(Self {
            spec,
            cache: Cache::empty(terms),
            stamp: None,
            generation: 0,
            driver: None,
            baseline: None,
            selection: Vec::new(),
            cached: true,
        })
    }

    /// A query that keeps no matches between calls: every call that refreshes (`matches`,
    /// `run`, `capture`, ...) builds the matches afresh from the store and the arena, as a new
    /// query would (the previous matches are cleared first, only their memory is reused), so its generation advances on every such call. Its change
    /// baseline carries over from pass to pass as a cached query's does. Its results are a
    /// cached query's by definition; a test reading both after the same operations checks the
    /// cache's reuse rules.
    ///
    /// # Errors
    ///
    /// As [`Query::new`].
    pub fn uncached(spec: QuerySpec) -> Result<Self, QueryError> {
        Self::with_caching(spec, false)
    }

    /// [`Query::new`] when `cached`, [`Query::uncached`] otherwise.
    ///
    /// # Errors
    ///
    /// As [`Query::new`].
    pub fn with_caching(spec: QuerySpec, cached: bool) -> Result<Self, QueryError> {
        Ok(Self {
            cached,
            ..Self::new(spec)?
        })
    }

    /// Whether matches are kept between calls (false for [`Query::uncached`]).
    pub fn is_cached(&self) -> bool {
        self.cached
    }

    /// Keeps matches between calls from now on (`true`), or builds them afresh at every call
    /// (`false`, as [`Query::uncached`]). Results are the same either way; a world running its
    /// queries uncached to test the cache sets it on every query it runs.
    pub fn set_caching(&mut self, cached: bool) {
        self.cached = cached;
    }

    /// The spec.
    pub fn spec(&self) -> &QuerySpec {
        &self.spec
    }

    /// Advances exactly when the cache is rebuilt.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// What the matches were last built against (`None` before the first build): the store's
    /// identity and the structural inputs the cache's stamp holds. The matches are a function
    /// of those inputs, so two equal values taken at two moments mean the matches were the same
    /// at both, for a cached query and an uncached one alike (whose generation moves at every
    /// call). Whatever keeps something derived from the matches (a mirror of them, columns
    /// indexed by match) compares these to know whether it is still current.
    pub fn built_against(&self) -> Option<BuiltAgainst> {
        self.stamp.clone().map(BuiltAgainst)
    }

    /// Whether the matches were last built against `built` (see [`Query::built_against`]),
    /// compared in place.
    pub fn is_built_against(&self, built: &BuiltAgainst) -> bool {
        self.stamp.as_ref() == Some(&built.0)
    }

    /// The driver chosen when the cache was last built.
    pub fn driver(&self) -> Option<&Driver> {
        self.driver.as_ref()
    }

    /// The store tick the next pass compares change ticks with (`None` before the first pass:
    /// then every row counts as added and changed). It is compared only when the next pass runs
    /// against the store it was taken from; otherwise that pass's window is
    /// [`ChangeWindow::Unavailable`].
    pub fn baseline(&self) -> Option<Tick> {
        self.baseline.map(|b| b.tick)
    }

    /// Rebuilds the cache if its stamp no longer matches (an uncached query: always);
    /// returns whether it did. A rebuild refused (a component the spec names is gone) keeps
    /// the cache as it was.
    ///
    /// # Errors
    ///
    /// [`QueryError::Store`] when a component the spec names is not installed in `store`.
    pub fn refresh(&mut self, arena: &Snapshot, store: &Store) -> Result<bool, QueryError> {
        if self.cached && self.stamp_holds(arena, store)? {
            return Ok(false);
        }
        self.rebuild(arena, store)?;
        Ok(true)
    }

    /// The full cached matches (no change filtering, baseline untouched), refreshed first.
    ///
    /// # Errors
    ///
    /// As [`Query::refresh`].
    pub fn matches(&mut self, arena: &Snapshot, store: &Store) -> Result<Matches<'_>, QueryError> {
        self.refresh(arena, store)?;
        Ok(Matches {
            cache: &self.cache,
            spec: &self.spec,
        })
    }

    /// The committed membership now, copied: every match (refreshed first), as the store
    /// addresses it, in instance-id order. For staging a bulk operation over the query's
    /// members (`Stage::set`, `Stage::remove`, `Stage::despawn`): the copy never gains an
    /// instance spawned afterwards, whether staged before or after it is taken.
    ///
    /// # Errors
    ///
    /// As [`Query::refresh`].
    pub fn capture(
        &mut self,
        arena: &Snapshot,
        store: &Store,
    ) -> Result<Vec<InstanceRef>, QueryError> {
        let matches = self.matches(arena, store)?;
        Ok(matches
            .ids()
            .iter()
            .zip(matches.slots())
            .map(|(id, slot)| InstanceRef::new(*id, *slot))
            .collect())
    }

    /// Starts a pass: refreshes the cache, and for a query with change filters selects the
    /// matches whose rows were added or changed since the previous pass began, then moves the
    /// baseline to the store tick now (writes made during this pass stay eligible for the next
    /// one). The selection costs in proportion to the rows that changed when the store's change
    /// log covers the baseline, and a scan of the matches otherwise. When the previous pass ran
    /// against another store, there is no window to compare with: the pass yields every match
    /// and [`Pass::window_unavailable`] says so.
    ///
    /// # Errors
    ///
    /// As [`Query::refresh`].
    pub fn run(&mut self, arena: &Snapshot, store: &Store) -> Result<Pass<'_>, QueryError> {
        self.refresh(arena, store)?;
        let window = if !self.spec.has_change_filters() {
            ChangeWindow::Unfiltered
        } else {
            match self.baseline {
                Some(b) if b.store != store.id() => ChangeWindow::Unavailable,
                Some(b) => ChangeWindow::Since(b.tick),
                None => ChangeWindow::Since(Tick(0)),
            }
        };
        if let ChangeWindow::Since(since) = window {
            self.select_changed(store, since)?;
        }
        if window != ChangeWindow::Unfiltered {
            self.baseline = Some(Baseline {
                store: store.id(),
                tick: store.tick(),
            });
        }
        let Some(stamp) = &self.stamp else {
            return Err(QueryError::NoDriver);
        };
        Ok(Pass {
            cache: &self.cache,
            spec: &self.spec,
            stamp,
            window,
            selection: matches!(window, ChangeWindow::Since(_))
                .then_some(self.selection.as_slice()),
        })
    }

    /// Runs a pass and calls `f` for every selected match, in instance-id order.
    ///
    /// # Errors
    ///
    /// As [`Query::refresh`].
    pub fn for_each(
        &mut self,
        arena: &Snapshot,
        store: &Store,
        mut f: impl FnMut(MatchRef<'_>),
    ) -> Result<(), QueryError> {
        let pass = self.run(arena, store)?;
        for m in pass.iter() {
            f(m);
        }
        Ok(())
    }

    /// Runs a pass and returns an iterator over its selected matches.
    ///
    /// # Errors
    ///
    /// As [`Query::refresh`].
    pub fn iter(&mut self, arena: &Snapshot, store: &Store) -> Result<PassIter<'_>, QueryError> {
        Ok(self.run(arena, store)?.into_iter())
    }

    fn stamp_holds(&self, arena: &Snapshot, store: &Store) -> Result<bool, QueryError> {
        // Without a stamp the rebuild that follows reports a missing component.
        let Some(stamp) = &self.stamp else {
            return Ok(false);
        };
        Ok(stamp.structure_holds(store)?
            && stamp.arena.is_none_or(|a| a == arena.arena_id())
            && stamp.tags.is_none_or(|r| r == arena.revisions().tags())
            && stamp
                .topology
                .is_none_or(|r| r == arena.revisions().topology()))
    }

    fn rebuild(&mut self, arena: &Snapshot, store: &Store) -> Result<(), QueryError> {
        let spec = &self.spec;
        let required: Vec<&ComponentSet> = spec
            .with
            .iter()
            .map(|c| store.set(*c))
            .collect::<Result<_, _>>()?;
        let excluded: Vec<&ComponentSet> = spec
            .without
            .iter()
            .map(|c| store.set(*c))
            .collect::<Result<_, _>>()?;
        let ancestor = spec.ancestor.map(|c| store.set(c)).transpose()?;

        let driver = choose_driver(spec, arena, &required)?;

        let filter = Filter {
            spec,
            arena,
            required: &required,
            excluded: &excluded,
            ancestor,
        };
        let mut cache = std::mem::take(&mut self.cache);
        cache.clear(spec.with.len());
        match &driver {
            Driver::Component(c) => {
                let t = spec.term(*c).ok_or(QueryError::NoDriver)?;
                let set = required[t];
                for (row, (&id, &slot)) in set.ids().iter().zip(set.slots()).enumerate() {
                    filter.admit(&mut cache, InstanceRef::new(id, slot), Some((t, row)));
                }
            }
            Driver::Tag(tag) => {
                for id in arena.tagged(tag) {
                    if let Some(slot) = arena.slot_of(id) {
                        filter.admit(&mut cache, InstanceRef::new(id, slot), None);
                    }
                }
            }
        }
        cache.sort_by_id();
        cache.match_of_row = vec![Vec::new(); spec.with.len()];
        for c in spec.added.iter().chain(&spec.changed) {
            let Some(t) = spec.term(*c) else { continue };
            // A dense term's rows are its match indexes: `select_changed` needs no map for it.
            if cache.dense(t) || !cache.match_of_row[t].is_empty() {
                continue;
            }
            let mut map = vec![NO_MATCH; required[t].len()];
            for (index, row) in cache.rows[t].iter().enumerate() {
                map[*row as usize] = index as u32;
            }
            cache.match_of_row[t] = map;
        }
        self.cache = cache;
        self.driver = Some(driver);
        self.stamp = Some(Stamp {
            store: store.id(),
            structural: self
                .spec
                .structural_components()
                .zip(required.iter().chain(&excluded).chain(ancestor.as_ref()))
                .map(|(c, set)| (c, set.structural_revision()))
                .collect(),
            arena: (self.spec.uses_tags() || self.spec.uses_topology()).then(|| arena.arena_id()),
            tags: self.spec.uses_tags().then(|| arena.revisions().tags()),
            topology: self
                .spec
                .uses_topology()
                .then(|| arena.revisions().topology()),
        });
        self.generation += 1;
        Ok(())
    }

    /// Fills `selection` with the match indexes whose change terms all moved past `baseline`,
    /// in id order.
    fn select_changed(&mut self, store: &Store, baseline: Tick) -> Result<(), QueryError> {
        self.selection.clear();
        // Per change term: its term index, its set, and the ticks it compares (added or
        // changed), bound once for the pass.
        let terms: Vec<(usize, &ComponentSet, TicksAfter<'_>)> = self
            .spec
            .added
            .iter()
            .map(|c| (*c, true))
            .chain(self.spec.changed.iter().map(|c| (*c, false)))
            .map(|(c, added)| {
                let t = self
                    .spec
                    .term(c)
                    .ok_or(QueryError::ChangeTermNotRequired(c))?;
                let set = store.set(c)?;
                let ticks = if added {
                    set.added_ticks()
                } else {
                    set.changed_ticks()
                };
                Ok((t, set, ticks.after(baseline)))
            })
            .collect::<Result<_, QueryError>>()?;
        let cache = &self.cache;
        let holds = |index: usize| {
            terms.iter().all(|(t, _, ticks)| {
                let row = cache.rows[*t][index] as usize;
                ticks.row(row)
            })
        };
        let logged = terms
            .iter()
            .filter_map(|(t, set, ticks)| {
                set.changes_since(baseline)
                    .map(|list| (*t, *set, *ticks, list))
            })
            .min_by_key(|(_, _, _, list)| list.len());
        match logged {
            // The logged term's own ticks first: they filter out rows logged before the
            // baseline without touching anything else.
            Some((t, _, own_ticks, list)) => {
                let map = &cache.match_of_row[t];
                let others = terms.len() > 1;
                let dense = cache.dense(t);
                for row in list.rows() {
                    if !own_ticks.row(row) {
                        continue;
                    }
                    // A dense term's rows are the match indexes themselves.
                    let index = if dense && row < cache.ids.len() {
                        row as u32
                    } else {
                        map.get(row).copied().unwrap_or(NO_MATCH)
                    };
                    if index != NO_MATCH && (!others || holds(index as usize)) {
                        self.selection.push(index);
                    }
                }
                if !self.selection.is_sorted() {
                    self.selection.sort_unstable();
                }
                self.selection.dedup();
            }
            None => {
                for index in 0..cache.ids.len() {
                    if holds(index) {
                        self.selection.push(index as u32);
                    }
                }
            }
        }
        Ok(())
    }
}

/// The term checks applied to every candidate.
struct Filter<'a> {
    spec: &'a QuerySpec,
    arena: &'a Snapshot,
    required: &'a [&'a ComponentSet],
    excluded: &'a [&'a ComponentSet],
    ancestor: Option<&'a ComponentSet>,
}

impl Filter<'_> {
    /// Appends the candidate to the cache if it satisfies every term. `known` is the driver
    /// term's row, when the driver is a component.
    fn admit(&self, cache: &mut Cache, at: InstanceRef, known: Option<(usize, usize)>) {
        // Rows are pushed term by term as they are found; a rejection drops this candidate's.
        let first = cache.ids.len();
        let reject = |cache: &mut Cache| {
            for rows in &mut cache.rows {
                rows.truncate(first);
            }
        };
        for (t, set) in self.required.iter().enumerate() {
            let row = match known {
                Some((kt, row)) if kt == t => Some(row),
                _ => set.row_of(at),
            };
            let Some(row) = row else {
                return reject(cache);
            };
            cache.rows[t].push(row as u32);
        }
        if self.excluded.iter().any(|s| s.contains(at)) {
            return reject(cache);
        }
        let spec = self.spec;
        if !spec.tags.iter().all(|t| self.arena.has_tag(at.id, t))
            || spec.not_tags.iter().any(|t| self.arena.has_tag(at.id, t))
        {
            return reject(cache);
        }
        if let Some(classes) = &spec.classes {
            let class: Option<ClassId> = self.arena.class(at.id);
            if !class.is_some_and(|c| classes.contains(&c)) {
                return reject(cache);
            }
        }
        if let Some(root) = spec.within
            && at.id != root
            && !self.arena.ancestors(at.id).any(|a| a == root)
        {
            return reject(cache);
        }
        if let Some(holders) = self.ancestor {
            let nearest = self.arena.ancestors(at.id).find(|a| {
                self.arena
                    .slot_of(*a)
                    .is_some_and(|slot| holders.contains(InstanceRef::new(*a, slot)))
            });
            match nearest {
                Some(a) => cache.ancestors.push(a),
                None => return reject(cache),
            }
        }
        cache.ids.push(at.id);
        cache.slots.push(at.slot);
    }
}

impl Cache {
    /// Whether term `t`'s rows are exactly `0..len` (none, or a run from row 0).
    fn dense(&self, t: usize) -> bool {
        self.rows.get(t).is_some_and(Vec::is_empty) || self.runs.get(t) == Some(&Some(0))
    }

    /// A cache with no matches for a spec of `terms` required terms.
    fn empty(terms: usize) -> Self {
        Self {
            rows: vec![Vec::new(); terms],
            runs: vec![None; terms],
            ..Self::default()
        }
    }

    fn clear(&mut self, terms: usize) {
        self.ids.clear();
        self.slots.clear();
        self.rows.resize_with(terms, Vec::new);
        for rows in &mut self.rows {
            rows.clear();
        }
        self.runs.clear();
        self.row_bound.clear();
        self.ancestors.clear();
        self.match_of_row.clear();
    }

    /// Puts the matches in id order (a no-op when the driver already yielded them so), then
    /// records which terms' rows are the plain sequence `0..len`.
    fn sort_by_id(&mut self) {
        if !self.ids.is_sorted() {
            let mut order: Vec<u32> = (0..self.ids.len() as u32).collect();
            order.sort_unstable_by_key(|i| self.ids[*i as usize]);
            let permute = |v: &mut Vec<u32>| *v = order.iter().map(|i| v[*i as usize]).collect();
            for rows in &mut self.rows {
                permute(rows);
            }
            self.ids = order.iter().map(|i| self.ids[*i as usize]).collect();
            self.slots = order.iter().map(|i| self.slots[*i as usize]).collect();
            if !self.ancestors.is_empty() {
                self.ancestors = order.iter().map(|i| self.ancestors[*i as usize]).collect();
            }
        }
        self.runs = self.rows.iter().map(|rows| run_start(rows)).collect();
        self.row_bound = self
            .rows
            .iter()
            .map(|rows| rows.iter().max().map_or(0, |r| *r as usize + 1))
            .collect();
    }
}

/// The cached matches of a query.
#[derive(Clone, Copy)]
pub struct Matches<'q> {
    cache: &'q Cache,
    spec: &'q QuerySpec,
}

impl<'q> Matches<'q> {
    /// How many instances match.
    pub fn len(&self) -> usize {
        self.cache.ids.len()
    }

    /// Whether nothing matches.
    pub fn is_empty(&self) -> bool {
        self.cache.ids.is_empty()
    }

    /// The matching instances, sorted by id.
    pub fn ids(&self) -> &'q [InstanceId] {
        &self.cache.ids
    }

    /// Their slots.
    pub fn slots(&self) -> &'q [Slot] {
        &self.cache.slots
    }

    /// A required term's dense row per match.
    ///
    /// # Errors
    ///
    /// [`QueryError::NoSuchTerm`] for a term index past the spec's required terms.
    pub fn rows(&self, term: usize) -> Result<&'q [u32], QueryError> {
        self.cache
            .rows
            .get(term)
            .map(Vec::as_slice)
            .ok_or(QueryError::NoSuchTerm(term))
    }

    /// A term's first row when its rows follow one another (`first..first + len`: each column
    /// of the term's component serves the matches as one slice), and there are any.
    pub fn run_start(&self, term: usize) -> Option<u32> {
        self.cache.runs.get(term).copied().flatten()
    }

    /// Whether a term's rows are exactly `0..len`, so its columns can be walked as plain slices.
    pub fn is_dense(&self, term: usize) -> bool {
        self.cache.dense(term)
    }

    /// The nearest ancestor holding the ancestor term's component, per match (empty without an
    /// ancestor term).
    pub fn ancestors(&self) -> &'q [InstanceId] {
        &self.cache.ancestors
    }

    /// The match at an index.
    pub fn get(&self, index: usize) -> Option<MatchRef<'q>> {
        (index < self.len()).then_some(MatchRef {
            index,
            cache: self.cache,
            spec: self.spec,
        })
    }
}

/// One pass of a query: the cached matches and, for a query with change filters, the
/// selection of those that changed.
pub struct Pass<'q> {
    cache: &'q Cache,
    spec: &'q QuerySpec,
    stamp: &'q Stamp,
    window: ChangeWindow,
    /// `Some` exactly when `window` is `Since`.
    selection: Option<&'q [u32]>,
}

impl<'q> Pass<'q> {
    /// How many matches the pass yields.
    pub fn len(&self) -> usize {
        self.selection.map_or(self.cache.ids.len(), <[u32]>::len)
    }

    /// Whether the pass yields nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// All the query's matches (not only the selected ones).
    pub fn matches(&self) -> Matches<'q> {
        Matches {
            cache: self.cache,
            spec: self.spec,
        }
    }

    /// The selected match indexes, or `None` when the pass yields every match (no change
    /// filters, or no change window).
    pub fn selection(&self) -> Option<&'q [u32]> {
        self.selection
    }

    /// Which rows the change filters selected from.
    pub fn window(&self) -> ChangeWindow {
        self.window
    }

    /// Whether the query's change window was unavailable for this pass (its baseline came from
    /// another store), so a filtered pass yields every match: a consumer that keeps state per
    /// changed row must treat this pass as a fresh start.
    pub fn window_unavailable(&self) -> bool {
        self.window == ChangeWindow::Unavailable
    }

    /// The selected matches, in id order.
    pub fn iter(&self) -> PassIter<'q> {
        PassIter {
            cache: self.cache,
            spec: self.spec,
            selection: self.selection,
            next: 0,
        }
    }

    /// A typed read-only column of a required term, bound once for the pass.
    ///
    /// # Errors
    ///
    /// Refused when the store is not the one the matches were built against, or its structure
    /// changed since.
    pub fn column<'s, T: Scalar>(
        &self,
        store: &'s Store,
        term: usize,
        field: FieldId,
    ) -> Result<TermColumn<'s, 'q, T>, QueryError> {
        // Only a required term has a column (the stamp also lists excluded components).
        let wanted = if term < self.spec.with.len() {
            term
        } else {
            usize::MAX
        };
        let Some(set) = self.stamp.verified_set(store, wanted)? else {
            return Err(QueryError::NoSuchTerm(term));
        };
        let values = match set.values::<T>(field) {
            Some(values) => values,
            // The store's own typed check says why not, with its errors.
            None => set.checked_values::<T>(field)?,
        };
        let Some(rows) = self.cache.rows.get(term) else {
            return Err(QueryError::NoSuchTerm(term));
        };
        let dense = self.cache.dense(term);
        // Rows come from the set the stamp vouches for, so they are in range; checked once
        // here all the same, so a column never reads past its values.
        if self
            .cache
            .row_bound
            .get(term)
            .is_none_or(|bound| *bound > values.len())
        {
            return Err(QueryError::StaleMatches);
        }
        Ok(TermColumn {
            values,
            rows,
            dense,
            selection: self.selection,
        })
    }

    /// Writes one field of a term from its current value and a field of another term (or of
    /// another field of the same term), for every selected match, with full change tracking
    /// and compare-before-write. Returns how many rows changed. A panic of `f` ends the pass
    /// there: the rows written before it stay written and are recorded as changed once, as
    /// by any write (see `ColumnWriter::update_indexed`), and the panic goes on.
    ///
    /// # Errors
    ///
    /// [`QueryError::StaleMatches`] when `store` is not the one the matches were built against or
    /// its structure changed since, [`QueryError::NoSuchTerm`] for a term index past the required
    /// terms, and [`QueryError::Store`] for a field the term lacks, of another type than `W` or
    /// `R`, or a read that aliases the written column.
    pub fn update<W: Scalar, R: Scalar>(
        &self,
        store: &mut Store,
        write: (usize, FieldId),
        read: (usize, FieldId),
        mut f: impl FnMut(&W, &R) -> W,
    ) -> Result<usize, QueryError> {
        self.check(store)?;
        let (wt, wf) = write;
        let (rt, rf) = read;
        let wc = *self.spec.with.get(wt).ok_or(QueryError::NoSuchTerm(wt))?;
        let rc = *self.spec.with.get(rt).ok_or(QueryError::NoSuchTerm(rt))?;
        let (mut writer, reads) = store.update_columns::<W, R>(wc, wf, Some((rc, rf)))?;
        let (wrows, rrows) = (&self.cache.rows[wt], &self.cache.rows[rt]);
        let changed = match self.selection {
            None if self.cache.dense(wt) && self.cache.dense(rt) => {
                let n = self.cache.ids.len().min(reads.len());
                writer.update_dense(&reads[..n], f)
            }
            None => writer.update_indexed(
                wrows.len(),
                |k| (wrows[k] as usize, rrows[k] as usize),
                |current, r| f(current, &reads[r]),
            ),
            Some(selection) => writer.update_indexed(
                selection.len(),
                |k| {
                    let i = selection[k] as usize;
                    (wrows[i] as usize, rrows[i] as usize)
                },
                |current, r| f(current, &reads[r]),
            ),
        };
        Ok(changed?)
    }

    /// Writes one field of a term from its current value, for every selected match. Returns
    /// how many rows changed. A panic of `f` ends the pass as it ends [`Pass::update`].
    ///
    /// # Errors
    ///
    /// As [`Pass::update`].
    pub fn update_each<W: Scalar>(
        &self,
        store: &mut Store,
        write: (usize, FieldId),
        mut f: impl FnMut(&W) -> W,
    ) -> Result<usize, QueryError> {
        self.check(store)?;
        let (wt, wf) = write;
        let wc = *self.spec.with.get(wt).ok_or(QueryError::NoSuchTerm(wt))?;
        let mut writer = store.column_writer::<W>(wc, wf)?;
        let rows = &self.cache.rows[wt];
        let changed = match self.selection {
            // Rows 0..len: the store's dense loop, with nothing to read (a slice of units
            // allocates nothing).
            None if self.cache.dense(wt) => {
                let nothing = vec![(); rows.len()];
                writer.update_dense(&nothing, |current, ()| f(current))
            }
            None => writer.update_indexed(
                rows.len(),
                |k| (rows[k] as usize, k),
                |current, _| f(current),
            ),
            Some(selection) => writer.update_indexed(
                selection.len(),
                |k| (rows[selection[k] as usize] as usize, k),
                |current, _| f(current),
            ),
        };
        Ok(changed?)
    }

    /// The component of a required term.
    pub(crate) fn term_component(&self, term: usize) -> Result<ComponentId, QueryError> {
        self.spec
            .with
            .get(term)
            .copied()
            .ok_or(QueryError::NoSuchTerm(term))
    }

    /// Refuses a store the matches were not built against, or whose structure moved since.
    pub(crate) fn check(&self, store: &Store) -> Result<(), QueryError> {
        self.stamp.verified_set(store, usize::MAX).map(|_| ())
    }
}

impl<'q> IntoIterator for Pass<'q> {
    type Item = MatchRef<'q>;
    type IntoIter = PassIter<'q>;

    fn into_iter(self) -> PassIter<'q> {
        self.iter()
    }
}

/// An iterator over a pass's selected matches.
pub struct PassIter<'q> {
    cache: &'q Cache,
    spec: &'q QuerySpec,
    selection: Option<&'q [u32]>,
    next: usize,
}

impl<'q> Iterator for PassIter<'q> {
    type Item = MatchRef<'q>;

    fn next(&mut self) -> Option<MatchRef<'q>> {
        let index = match self.selection {
            Some(selection) => *selection.get(self.next)? as usize,
            None => {
                if self.next >= self.cache.ids.len() {
                    return None;
                }
                self.next
            }
        };
        self.next += 1;
        Some(MatchRef {
            index,
            cache: self.cache,
            spec: self.spec,
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let total = self.selection.map_or(self.cache.ids.len(), <[u32]>::len);
        let left = total.saturating_sub(self.next);
        (left, Some(left))
    }
}

impl ExactSizeIterator for PassIter<'_> {}

/// One match: its instance, its row in each required term, its nearest ancestor.
#[derive(Clone, Copy)]
pub struct MatchRef<'q> {
    index: usize,
    cache: &'q Cache,
    spec: &'q QuerySpec,
}

impl MatchRef<'_> {
    /// The match's position in the cache (id order).
    pub fn index(&self) -> usize {
        self.index
    }

    /// The instance.
    pub fn id(&self) -> InstanceId {
        self.cache.ids[self.index]
    }

    /// The instance with its slot.
    pub fn instance(&self) -> InstanceRef {
        InstanceRef::new(self.cache.ids[self.index], self.cache.slots[self.index])
    }

    /// The instance's row in a required term's set.
    pub fn row(&self, term: usize) -> Option<usize> {
        self.cache
            .rows
            .get(term)
            .map(|rows| rows[self.index] as usize)
    }

    /// The nearest ancestor holding the ancestor term's component.
    pub fn ancestor(&self) -> Option<InstanceId> {
        self.cache.ancestors.get(self.index).copied()
    }

    /// A handle on a required term's component of this instance.
    ///
    /// # Errors
    ///
    /// [`QueryError::NoSuchTerm`] for a term index past the required terms, and
    /// [`QueryError::Store`] when the instance no longer holds the term's component.
    pub fn handle(&self, store: &Store, term: usize) -> Result<ComponentHandle, QueryError> {
        let component = *self
            .spec
            .with
            .get(term)
            .ok_or(QueryError::NoSuchTerm(term))?;
        Ok(ComponentHandle::new(store, self.instance(), component)?)
    }

    /// A typed field of a required term, read through the store (checked).
    ///
    /// # Errors
    ///
    /// [`QueryError::NoSuchTerm`] for a term index past the required terms, and
    /// [`QueryError::Store`] when the instance no longer holds the term's component, or the field
    /// is missing or not a `T`.
    pub fn get<'s, T: Scalar>(
        &self,
        store: &'s Store,
        term: usize,
        field: FieldId,
    ) -> Result<&'s T, QueryError> {
        let component = *self
            .spec
            .with
            .get(term)
            .ok_or(QueryError::NoSuchTerm(term))?;
        Ok(store.get::<T>(self.instance(), component, field)?)
    }
}

/// A typed column of one required term, indexed by match index.
///
/// It borrows the store, so the store cannot change while it lives; its pass checked that every
/// match's row is within the column's values when it was bound.
#[derive(Clone, Copy)]
pub struct TermColumn<'s, 'q, T> {
    values: &'s [T],
    rows: &'q [u32],
    dense: bool,
    /// The pass's selected match indexes, `None` when it yields every match.
    selection: Option<&'q [u32]>,
}

impl<'s, 'q, T> TermColumn<'s, 'q, T> {
    /// The value for the match at `index`, or `None` past the matches.
    #[inline]
    pub fn get(&self, index: usize) -> Option<&'s T> {
        if self.dense {
            self.values.get(index)
        } else {
            self.values.get(*self.rows.get(index)? as usize)
        }
    }

    /// The whole column, by row.
    pub fn values(&self) -> &'s [T] {
        self.values
    }

    /// The value of every match the pass yields, in the pass's order (instance-id order): all
    /// the matches of an unfiltered pass, the selected ones of a filtered pass. A dense term
    /// is walked as a plain slice, another through its rows.
    pub fn iter(&self) -> TermValues<'s, 'q, T> {
        let walk = match (self.selection, self.dense) {
            (None, true) => {
                Walk::Slice(self.values[..self.rows.len().min(self.values.len())].iter())
            }
            (None, false) => Walk::Rows(self.rows.iter()),
            (Some(selection), true) => Walk::Rows(selection.iter()),
            (Some(selection), false) => Walk::Selected {
                rows: self.rows,
                selection: selection.iter(),
            },
        };
        TermValues {
            values: self.values,
            walk,
        }
    }
}

impl<'s, 'q, T> IntoIterator for TermColumn<'s, 'q, T> {
    type Item = &'s T;
    type IntoIter = TermValues<'s, 'q, T>;

    fn into_iter(self) -> TermValues<'s, 'q, T> {
        self.iter()
    }
}

/// The values of a [`TermColumn`] for the matches of its pass, in the pass's order.
pub struct TermValues<'s, 'q, T> {
    values: &'s [T],
    walk: Walk<'s, 'q, T>,
}

/// How a [`TermValues`] reaches its values.
enum Walk<'s, 'q, T> {
    /// A dense term without selection: the values themselves.
    Slice(std::slice::Iter<'s, T>),
    /// Indexes into the values: a term's rows, or the selected match indexes of a dense term
    /// (whose rows are its match indexes).
    Rows(std::slice::Iter<'q, u32>),
    /// The selected match indexes of a term that is not dense, each mapped to its row.
    Selected {
        rows: &'q [u32],
        selection: std::slice::Iter<'q, u32>,
    },
}

impl<'s, T> Iterator for TermValues<'s, '_, T> {
    type Item = &'s T;

    #[inline]
    fn next(&mut self) -> Option<&'s T> {
        let values = self.values;
        match &mut self.walk {
            Walk::Slice(it) => it.next(),
            Walk::Rows(it) => values.get(*it.next()? as usize),
            Walk::Selected { rows, selection } => {
                values.get(*rows.get(*selection.next()? as usize)? as usize)
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = match &self.walk {
            Walk::Slice(it) => it.len(),
            Walk::Rows(it) => it.len(),
            Walk::Selected { selection, .. } => selection.len(),
        };
        (left, Some(left))
    }

    /// One tight loop per kind of walk, chosen once: what `sum` and `for_each` run on.
    #[inline]
    fn fold<B, F: FnMut(B, &'s T) -> B>(self, init: B, mut f: F) -> B {
        let values = self.values;
        match self.walk {
            Walk::Slice(it) => it.fold(init, f),
            Walk::Rows(it) => it.fold(init, |acc, row| match values.get(*row as usize) {
                Some(value) => f(acc, value),
                None => acc,
            }),
            Walk::Selected { rows, selection } => selection.fold(init, |acc, index| {
                match rows
                    .get(*index as usize)
                    .and_then(|row| values.get(*row as usize))
                {
                    Some(value) => f(acc, value),
                    None => acc,
                }
            }),
        }
    }
}

/// Exact: the pass checked every row against the values when the column was bound.
impl<T> ExactSizeIterator for TermValues<'_, '_, T> {}

/// The driver of a rebuild: the smallest required component set or required tag (a component
/// on a tie), whose members are the candidates every other term filters.
fn choose_driver(
    spec: &QuerySpec,
    arena: &Snapshot,
    required: &[&ComponentSet],
) -> Result<Driver, QueryError> {
    let component_driver = required
        .iter()
        .enumerate()
        .min_by_key(|(_, s)| s.len())
        .map(|(t, s)| (t, s.len()));
    let tag_driver = spec
        .tags
        .iter()
        .map(|t| (t, arena.tag_count(t)))
        .min_by_key(|(_, n)| *n);
    match (component_driver, tag_driver) {
        (Some((_, n)), Some((tag, m))) if m < n => Ok(Driver::Tag(tag.clone())),
        (Some((t, _)), _) => Ok(Driver::Component(spec.with[t])),
        (None, Some((tag, _))) => Ok(Driver::Tag(tag.clone())),
        (None, None) => Err(QueryError::NoDriver),
    }
}
