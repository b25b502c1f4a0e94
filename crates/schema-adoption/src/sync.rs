//! `SchemaSync`: keeps a store's installed components in step with the `ComponentDefinition`
//! instances of an arena.
//!
//! Invariant: what the sync records agrees with the store it last synced: a name is recorded
//! for a component only after the store accepted the definition under that name, and the
//! definition instance recorded for a name is the one the arena chose for it in that sync. A
//! sync does nothing at all when the store is the one last synced and the arena's topology and
//! definition-family revisions and the store's name revision are the ones that sync left;
//! otherwise it checks what it knows against the store it is given, name by name, compares
//! source texts, and touches only definitions that were added, changed, renamed or removed.
//! Rows are never lost: a removed definition's typed rows become orphans, rows a definition
//! cannot adopt stay orphans, and a definition that fails (to evaluate, or in the store) leaves
//! the previous one installed under its previous name.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use strata_arena::{BuiltinState, FamilyId, InstanceId, Revision, Snapshot};
use strata_component_store::{ComponentId, InstanceRef, OrphanRecord, Store, StoreId, Value};

use crate::adopt::{Adopted, ComponentReport, SourceField, SourceRow, adopt};
use crate::error::SchemaError;
use crate::eval::Evaluator;

/// What the sync knows about one component it keeps in step, in the store it last synced.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Installed {
    /// The definition instance the component follows.
    definition: InstanceId,
    /// The component in the store.
    component: ComponentId,
    /// The source its installed definition came from, and that definition's allocation
    /// number; `None` when unknown (a store met for the first time, or a definition replaced
    /// by other code), and the installed definition is then compared instead.
    source: Option<(Arc<str>, u64)>,
}

/// The state of the last sync: which store, what it saw, and what it left.
#[derive(Clone, Debug)]
struct Bound {
    /// The store synced.
    store: StoreId,
    /// The arena's topology and definition-family revisions, and the store's name revision
    /// after the sync: what could make another sync's outcome different.
    seen: (Revision, Revision, u64),
    /// The components kept in step, by name.
    installed: BTreeMap<Arc<str>, Installed>,
    /// Every name the sync has kept a component in step under, with the definition instance it
    /// followed last: applied to a store met for the first time, whose components of those
    /// names the sync treats as its own (so renames and removals seen since reach them).
    history: BTreeMap<Arc<str>, InstanceId>,
    /// The diagnostics of that sync, which still hold while nothing changes.
    diagnostics: Vec<SyncDiagnostic>,
}

/// Something a sync could not do, or chose between.
#[derive(Clone, Debug, PartialEq)]
pub enum SyncDiagnostic {
    /// Two or more definitions share a name; the one with the lowest id is used.
    DuplicateName {
        /// The shared name.
        name: String,
        /// The definition used.
        chosen: InstanceId,
        /// The definitions ignored.
        ignored: Vec<InstanceId>,
    },
    /// A definition failed (its source, or the store refused it); a previous definition (if
    /// any) stays installed under its previous name, and the next sync tries again.
    Failed {
        /// The component name.
        name: String,
        /// The definition instance.
        definition: InstanceId,
        /// Why.
        error: SchemaError,
    },
}

impl fmt::Display for SyncDiagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SyncDiagnostic::DuplicateName {
                name,
                chosen,
                ignored,
            } => {
                let ignored: Vec<String> = ignored.iter().map(|i| i.to_string()).collect();
                write!(
                    f,
                    "two or more definitions are named {name}: using {chosen}, ignoring {}",
                    ignored.join(", ")
                )
            }
            SyncDiagnostic::Failed {
                name,
                definition,
                error,
            } => write!(f, "definition {name} ({definition}) failed: {error}"),
        }
    }
}

/// What a sync did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SyncReport {
    /// Whether nothing could have changed since the last sync of this store, so nothing was
    /// looked at; `diagnostics` then repeats that sync's, which still hold.
    pub skipped: bool,
    /// Components installed for new definitions.
    pub added: Vec<String>,
    /// Components whose source changed and were redefined.
    pub changed: Vec<String>,
    /// Components whose definition instance was renamed: (old name, new name). Their rows move
    /// to the new name.
    pub renamed: Vec<(String, String)>,
    /// Components whose definition left the hierarchy; their rows became orphans.
    pub removed: Vec<String>,
    /// Definitions looked at and found unchanged.
    pub unchanged: usize,
    /// Problems and choices. A failure is reported by every later sync until it is resolved.
    pub diagnostics: Vec<SyncDiagnostic>,
    /// Adoption reports of the components (re)defined.
    pub adoption: Vec<ComponentReport>,
}

impl fmt::Display for SyncReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.skipped {
            writeln!(f, "skipped: definitions unchanged")?;
            for d in &self.diagnostics {
                writeln!(f, "diagnostic: {d}")?;
            }
            return Ok(());
        }
        let list = |v: &[String]| {
            if v.is_empty() {
                "-".to_owned()
            } else {
                v.join(", ")
            }
        };
        writeln!(f, "added: {}", list(&self.added))?;
        writeln!(f, "changed: {}", list(&self.changed))?;
        let renamed: Vec<String> = self
            .renamed
            .iter()
            .map(|(a, b)| format!("{a} -> {b}"))
            .collect();
        writeln!(f, "renamed: {}", list(&renamed))?;
        writeln!(f, "removed: {}", list(&self.removed))?;
        writeln!(f, "unchanged: {}", self.unchanged)?;
        for d in &self.diagnostics {
            writeln!(f, "diagnostic: {d}")?;
        }
        for r in &self.adoption {
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

/// Keeps a store's components in step with an arena's definitions.
#[derive(Debug)]
pub struct SchemaSync {
    evaluator: Evaluator,
    bound: Option<Bound>,
    runs: u64,
    skips: u64,
}

/// A definition found in the arena.
struct Found {
    definition: InstanceId,
    source: Arc<str>,
}

impl SchemaSync {
    /// A sync with a fresh evaluator (standard budget).
    ///
    /// # Errors
    ///
    /// [`SchemaError::Vm`] when the Luau VM cannot be set up.
    pub fn new() -> Result<Self, SchemaError> {
        Ok(Self::with_evaluator(Evaluator::new()?))
    }

    /// A sync using a given evaluator.
    pub fn with_evaluator(evaluator: Evaluator) -> Self {
        Self {
            evaluator,
            bound: None,
            runs: 0,
            skips: 0,
        }
    }

    /// The evaluator (its counters show cache hits).
    pub fn evaluator(&self) -> &Evaluator {
        &self.evaluator
    }

    /// How many syncs did work.
    pub fn runs(&self) -> u64 {
        self.runs
    }

    /// How many syncs were skipped because nothing could have changed.
    pub fn skips(&self) -> u64 {
        self.skips
    }

    /// The component the last sync keeps in step for a definition name, in the store it synced.
    pub fn component(&self, name: &str) -> Option<ComponentId> {
        self.bound
            .as_ref()
            .and_then(|b| b.installed.get(name))
            .map(|i| i.component)
    }

    /// Brings the store in step with the arena's definitions.
    ///
    /// The sync is skipped when the store is the one last synced and neither the arena's
    /// topology and definition-family revisions nor the store's name revision moved since; a
    /// skipped sync reports the diagnostics that still hold. Otherwise what the sync knows is
    /// checked against the store it is given, name by name, so another store (a loaded one, a
    /// snapshot) is brought in step too: the renames and removals the sync has seen apply to its
    /// components of those names, and a component of a wanted name that the sync did not
    /// install is compared with the definition and kept or redefined.
    pub fn sync(&mut self, arena: &Snapshot, store: &mut Store) -> SyncReport {
        let revisions = (
            arena.revisions().topology(),
            arena.revisions().family(FamilyId::DEFINITIONS),
        );
        if let Some(bound) = &self.bound
            && bound.store == store.id()
            && bound.seen == (revisions.0, revisions.1, store.name_revision())
        {
            self.skips += 1;
            return SyncReport {
                skipped: true,
                diagnostics: bound.diagnostics.clone(),
                ..SyncReport::default()
            };
        }
        self.runs += 1;
        let mut report = SyncReport::default();
        let wanted = wanted(arena, Some(&mut report.diagnostics));
        let first_meeting = self.bound.as_ref().is_none_or(|b| b.store != store.id());
        let mut installed = self.rederive(store);

        // Renames: a component whose definition is now wanted under another name that is free
        // in the store. The new name is recorded only once the store took it; until then the
        // component keeps its old name (and is not removed below), and the sync is retried.
        let renames = planned_renames(&installed, &wanted, store, first_meeting);
        let pending =
            self.apply_renames(arena, store, &wanted, &renames, &mut installed, &mut report);

        // Added and changed definitions.
        let changes = Changes {
            wanted: &wanted,
            renames: &renames,
            first_meeting,
        };
        self.apply_definitions(arena, store, &changes, &mut installed, &mut report);

        // Definitions that left (or whose instance now defines a name held by another
        // component): their rows go back to orphans.
        remove_gone(store, &mut installed, &wanted, &pending, &mut report);
        let mut history = self.bound.take().map(|b| b.history).unwrap_or_default();
        for (name, i) in &installed {
            history.insert(name.clone(), i.definition);
        }
        self.bound = Some(Bound {
            store: store.id(),
            seen: (revisions.0, revisions.1, store.name_revision()),
            installed,
            history,
            diagnostics: report.diagnostics.clone(),
        });
        report
    }

    /// Installs the wanted definitions that are new and redefines those whose source changed
    /// (renamed ones excepted: `apply_renames` took them); the instance behind every name is
    /// refreshed, so a duplicate that took over is the one followed from now on.
    fn apply_definitions(
        &mut self,
        arena: &Snapshot,
        store: &mut Store,
        changes: &Changes<'_>,
        installed: &mut BTreeMap<Arc<str>, Installed>,
        report: &mut SyncReport,
    ) {
        for (name, found) in changes.wanted {
            if changes.renames.iter().any(|(_, new, _)| new == name) {
                continue;
            }
            if let Some(i) = installed.get_mut(name) {
                i.definition = found.definition;
                if i.source
                    .as_ref()
                    .is_some_and(|(source, _)| same_source(source, &found.source))
                {
                    report.unchanged += 1;
                    continue;
                }
            }
            // In a store met for the first time, a component of a wanted name is taken to be
            // this definition's; in the store last synced, one the sync did not install is
            // left alone (installing refuses the name, and the sync says so).
            let existing = installed
                .get(name)
                .map(|i| i.component)
                .or_else(|| store.component(name).filter(|_| changes.first_meeting));
            let known = installed.get(name).is_some_and(|i| i.source.is_some());
            let outcome = match existing {
                // A component of this name whose source is unknown: keep it if it already
                // has this definition.
                Some(component) if !known => match self.unchanged(store, name, found, component) {
                    Ok(true) => {
                        installed.insert(name.clone(), installed_now(store, component, found));
                        report.unchanged += 1;
                        continue;
                    }
                    Ok(false) => self.define(arena, store, name, found, Some(component)),
                    Err(error) => Err(error),
                },
                existing => self.define(arena, store, name, found, existing),
            };
            match outcome {
                Ok((component, component_report)) => {
                    if existing.is_some() {
                        report.changed.push(name.to_string());
                    } else {
                        report.added.push(name.to_string());
                    }
                    report.adoption.push(component_report);
                    installed.insert(name.clone(), installed_now(store, component, found));
                }
                Err(error) => report.diagnostics.push(SyncDiagnostic::Failed {
                    name: name.to_string(),
                    definition: found.definition,
                    error,
                }),
            }
        }
    }

    /// Redefines each renamed component under its new name, recording the new name only once
    /// the store took it. Returns the old names of the renames that failed: their components
    /// keep those names (and their rows), and a later sync tries again.
    fn apply_renames(
        &mut self,
        arena: &Snapshot,
        store: &mut Store,
        wanted: &BTreeMap<Arc<str>, Found>,
        renames: &[Rename],
        installed: &mut BTreeMap<Arc<str>, Installed>,
        report: &mut SyncReport,
    ) -> Vec<Arc<str>> {
        let mut pending: Vec<Arc<str>> = Vec::new();
        for (old, new, component) in renames {
            let Some(found) = wanted.get(new) else {
                continue;
            };
            match self.define(arena, store, new, found, Some(*component)) {
                Ok((component, component_report)) => {
                    installed.remove(old);
                    installed.insert(new.clone(), installed_now(store, component, found));
                    report.renamed.push((old.to_string(), new.to_string()));
                    report.adoption.push(component_report);
                }
                Err(error) => {
                    pending.push(old.clone());
                    report.diagnostics.push(SyncDiagnostic::Failed {
                        name: new.to_string(),
                        definition: found.definition,
                        error,
                    });
                }
            }
        }
        pending
    }

    /// What the sync knows, checked against `store`. For the store last synced: the
    /// components it kept in step that still hold their names, with their sources where the
    /// component's definition was not replaced since. For another store: its components named
    /// in the history, with their sources unknown.
    fn rederive(&self, store: &Store) -> BTreeMap<Arc<str>, Installed> {
        let Some(bound) = &self.bound else {
            return BTreeMap::new();
        };
        if bound.store != store.id() {
            return bound
                .history
                .iter()
                .filter_map(|(name, definition)| {
                    Some((
                        name.clone(),
                        Installed {
                            definition: *definition,
                            component: store.component(name)?,
                            source: None,
                        },
                    ))
                })
                .collect();
        }
        bound
            .installed
            .iter()
            .filter_map(|(name, i)| {
                let component = store.component(name)?;
                let allocation = store.def(component).ok()?.allocation();
                let source = i
                    .source
                    .clone()
                    .filter(|(_, a)| component == i.component && *a == allocation);
                Some((
                    name.clone(),
                    Installed {
                        definition: i.definition,
                        component,
                        source,
                    },
                ))
            })
            .collect()
    }

    /// Whether the component installed under `name` already has the definition `found`
    /// evaluates to.
    fn unchanged(
        &mut self,
        store: &Store,
        name: &str,
        found: &Found,
        component: ComponentId,
    ) -> Result<bool, SchemaError> {
        let schema = self.evaluator.evaluate(name, &found.source)?;
        Ok(*store.def(component)?.def() == schema.to_component_def(name))
    }

    /// Evaluates `found` and installs it under `name`: as a new component, or by redefining
    /// `existing` (which renames it when its name differs).
    fn define(
        &mut self,
        arena: &Snapshot,
        store: &mut Store,
        name: &str,
        found: &Found,
        existing: Option<ComponentId>,
    ) -> Result<(ComponentId, ComponentReport), SchemaError> {
        let schema = self.evaluator.evaluate(name, &found.source)?;
        let def = schema.to_component_def(name);
        match existing {
            Some(component) => redefine(arena, store, component, def, name),
            None => install(arena, store, def, name),
        }
    }

    /// Adopts the orphans of the arena's definitions whose components `store` holds (for
    /// example after loading saved rows), onto the definitions installed there, without
    /// waiting for a definition change. Components are looked up by name in `store`.
    pub fn adopt_orphans(&mut self, arena: &Snapshot, store: &mut Store) -> Vec<ComponentReport> {
        let mut reports = Vec::new();
        for name in wanted(arena, None).keys() {
            let Some(component) = store.component(name) else {
                continue;
            };
            if !store.orphans().has_component(name) {
                continue;
            }
            let Ok(def) = store.def(component).map(|d| d.def().clone()) else {
                continue;
            };
            if let Ok((_, report)) = redefine(arena, store, component, def, name) {
                reports.push(report);
            }
        }
        reports
    }
}

/// Adopts the orphan records of one installed component, whatever defined it (a definition in
/// the hierarchy or code that installed it directly): the same adoption a sync makes, onto the
/// component's present definition, with its report. `None` when no orphan has its name.
///
/// # Errors
///
/// [`SchemaError::Store`] when `component` is not installed, or the store refuses to redefine it
/// with the adopted rows.
pub fn adopt_orphans_of(
    arena: &Snapshot,
    store: &mut Store,
    component: ComponentId,
) -> Result<Option<ComponentReport>, SchemaError> {
    let def = store.def(component)?.def().clone();
    let name = def.name.clone();
    if !store.orphans().has_component(&name) {
        return Ok(None);
    }
    let (_, report) = redefine(arena, store, component, def, &name)?;
    Ok(Some(report))
}

/// A rename: the component's old name, its new name, the component.
type Rename = (Arc<str>, Arc<str>, ComponentId);

/// What a sync compares the store's components with: the definitions wanted by name, the
/// renames planned, and whether the store is met for the first time.
struct Changes<'a> {
    wanted: &'a BTreeMap<Arc<str>, Found>,
    renames: &'a [Rename],
    first_meeting: bool,
}

/// The renames a sync attempts: each component whose definition instance is now wanted under
/// another name, when that name is free. In a store met for the first time, a component already
/// under the new name is taken over instead; in the store last synced, one installed by other
/// code makes the store refuse the rename, and the sync says so. One rename per new name.
fn planned_renames(
    installed: &BTreeMap<Arc<str>, Installed>,
    wanted: &BTreeMap<Arc<str>, Found>,
    store: &Store,
    first_meeting: bool,
) -> Vec<Rename> {
    let chosen: BTreeMap<InstanceId, Arc<str>> = wanted
        .iter()
        .map(|(name, found)| (found.definition, name.clone()))
        .collect();
    let mut renames: Vec<Rename> = Vec::new();
    for (old, i) in installed {
        if wanted.contains_key(old) {
            continue;
        }
        let Some(new) = chosen.get(&i.definition) else {
            continue;
        };
        let taken = installed.contains_key(new)
            || (first_meeting && store.component(new).is_some())
            || renames.iter().any(|(_, n, _)| n == new);
        if !taken {
            renames.push((old.clone(), new.clone(), i.component));
        }
    }
    renames
}

/// Uninstalls the components of names no longer wanted (except those of `pending` renames),
/// keeping their rows as orphans.
fn remove_gone(
    store: &mut Store,
    installed: &mut BTreeMap<Arc<str>, Installed>,
    wanted: &BTreeMap<Arc<str>, Found>,
    pending: &[Arc<str>],
    report: &mut SyncReport,
) {
    let gone: Vec<Arc<str>> = installed
        .keys()
        .filter(|name| !wanted.contains_key(*name) && !pending.contains(name))
        .cloned()
        .collect();
    for name in gone {
        let Some(i) = installed.remove(&name) else {
            continue;
        };
        if let Ok(rows) = store.uninstall(i.component) {
            for (at, record) in rows {
                store.add_orphan(at, record);
            }
        }
        report.removed.push(name.to_string());
    }
}

/// The definitions present, one per name: duplicates resolve to the lowest id (and are
/// reported when `diagnostics` is given).
fn wanted(
    arena: &Snapshot,
    mut diagnostics: Option<&mut Vec<SyncDiagnostic>>,
) -> BTreeMap<Arc<str>, Found> {
    let mut by_name: BTreeMap<Arc<str>, Vec<Found>> = BTreeMap::new();
    for id in arena.family_members(FamilyId::DEFINITIONS).iter() {
        let Some(node) = arena.get(*id) else { continue };
        let BuiltinState::ComponentDefinition { source } = node.state() else {
            continue;
        };
        by_name
            .entry(Arc::from(node.name()))
            .or_default()
            .push(Found {
                definition: *id,
                source: source.clone(),
            });
    }
    let mut wanted = BTreeMap::new();
    for (name, mut found) in by_name {
        found.sort_by_key(|f| f.definition);
        let mut found = found.into_iter();
        let Some(chosen) = found.next() else { continue };
        let ignored: Vec<InstanceId> = found.map(|f| f.definition).collect();
        if !ignored.is_empty()
            && let Some(diagnostics) = diagnostics.as_deref_mut()
        {
            diagnostics.push(SyncDiagnostic::DuplicateName {
                name: name.to_string(),
                chosen: chosen.definition,
                ignored,
            });
        }
        wanted.insert(name, chosen);
    }
    wanted
}

/// What the sync records for a component it just installed or found in step with `found`.
fn installed_now(store: &Store, component: ComponentId, found: &Found) -> Installed {
    Installed {
        definition: found.definition,
        component,
        source: store
            .def(component)
            .ok()
            .map(|d| (found.source.clone(), d.allocation())),
    }
}

/// Whether two sources are the same text (the arena usually hands out the same `Arc`).
fn same_source(a: &Arc<str>, b: &Arc<str>) -> bool {
    Arc::ptr_eq(a, b) || **a == **b
}

/// Installs a new component and adopts its orphans.
fn install(
    arena: &Snapshot,
    store: &mut Store,
    def: strata_component_store::ComponentDef,
    name: &str,
) -> Result<(ComponentId, ComponentReport), SchemaError> {
    let component = store.install(def.clone(), arena.classes())?;
    redefine(arena, store, component, def, name)
}

/// Redefines a component from its typed rows and its orphans, through adoption.
fn redefine(
    arena: &Snapshot,
    store: &mut Store,
    component: ComponentId,
    def: strata_component_store::ComponentDef,
    name: &str,
) -> Result<(ComponentId, ComponentReport), SchemaError> {
    // Validate first, so a definition the store refuses leaves rows and orphans untouched.
    let allowed = validated_classes(arena, &def)?;
    let mut rows = typed_rows(store, component)?;
    rows.extend(
        store
            .orphans()
            .of_component(name)
            .map(|(at, r)| SourceRow::from_orphan(at, r.clone())),
    );
    let Adopted {
        rows: adopted,
        unadopted,
        migrations,
        report,
    } = adopt(&def, allowed.as_deref(), rows, |id| {
        arena.class(id).filter(|_| arena.is_live(id))
    });
    store.redefine(component, def, arena.classes(), adopted)?;
    store.take_orphans(name);
    for row in unadopted {
        store.add_orphan(row.at, row.to_record(name));
    }
    for (at, record) in migrations {
        store.set_migration_input(at, component, record);
    }
    Ok((component, report))
}

/// The classes a definition allows, resolved, or the store's refusal.
fn validated_classes(
    arena: &Snapshot,
    def: &strata_component_store::ComponentDef,
) -> Result<Option<Vec<strata_arena::ClassId>>, SchemaError> {
    let Some(names) = &def.classes else {
        return Ok(None);
    };
    names
        .iter()
        .map(|n| {
            arena
                .classes()
                .class_id(n)
                .ok_or_else(|| SchemaError::Invalid {
                    message: format!("unknown class `{n}`"),
                    line: None,
                })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// A component's typed rows as adoption sources, with their stored types.
fn typed_rows(store: &Store, component: ComponentId) -> Result<Vec<SourceRow>, SchemaError> {
    let set = store.set(component)?;
    let def = set.def();
    let version = def.def().version;
    let types = OrphanRecord::types_of(set);
    Ok((0..set.len())
        .map(|row| SourceRow {
            at: InstanceRef::new(set.ids()[row], set.slots()[row]),
            version,
            fields: def
                .fields()
                .iter()
                .enumerate()
                .filter_map(|(i, f)| {
                    let value: Value =
                        set.value(row, strata_component_store::FieldId::from_index(i as u16))?;
                    Some(SourceField {
                        name: f.name.clone(),
                        value,
                    })
                })
                .collect(),
            types: Some(types.clone()),
        })
        .collect())
}
