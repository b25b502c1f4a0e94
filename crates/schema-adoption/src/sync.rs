//! `SchemaSync`: keeps a store's installed components in step with the `ComponentDefinition`
//! instances of an arena.
//!
//! Invariant: a sync does nothing at all when the arena's topology and definition-family
//! revisions are the ones it last saw. Otherwise it compares names and source texts and
//! touches only definitions that were added, changed, renamed or removed. Rows are never lost:
//! a removed definition's typed rows become orphans, rows a definition cannot adopt stay
//! orphans, and a definition that fails to evaluate leaves the previous one installed.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use strata_arena::{BuiltinState, FamilyId, InstanceId, Revision, Snapshot};
use strata_component_store::{ComponentId, InstanceRef, Store, Value};

use crate::adopt::{Adopted, ComponentReport, SourceField, SourceRow, adopt};
use crate::error::SchemaError;
use crate::eval::Evaluator;

/// What the sync knows about one installed definition.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Installed {
    definition: InstanceId,
    source: Arc<str>,
    component: ComponentId,
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
    /// A definition's source failed; a previous definition of the name (if any) stays.
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
    /// Whether the revisions were unchanged, so nothing was looked at.
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
    /// Problems and choices.
    pub diagnostics: Vec<SyncDiagnostic>,
    /// Adoption reports of the components (re)defined.
    pub adoption: Vec<ComponentReport>,
}

impl fmt::Display for SyncReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.skipped {
            return writeln!(f, "skipped: definitions unchanged");
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
    seen: Option<(Revision, Revision)>,
    installed: BTreeMap<Arc<str>, Installed>,
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
    pub fn new() -> Result<Self, SchemaError> {
        Ok(Self::with_evaluator(Evaluator::new()?))
    }

    /// A sync using a given evaluator.
    pub fn with_evaluator(evaluator: Evaluator) -> Self {
        Self {
            evaluator,
            seen: None,
            installed: BTreeMap::new(),
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

    /// The component installed for a definition name.
    pub fn component(&self, name: &str) -> Option<ComponentId> {
        self.installed.get(name).map(|i| i.component)
    }

    /// Brings the store in step with the arena's definitions.
    pub fn sync(&mut self, arena: &Snapshot, store: &mut Store) -> SyncReport {
        let revisions = (
            arena.revisions().topology(),
            arena.revisions().family(FamilyId::DEFINITIONS),
        );
        if self.seen == Some(revisions) {
            self.skips += 1;
            return SyncReport {
                skipped: true,
                ..SyncReport::default()
            };
        }
        self.runs += 1;
        let mut report = SyncReport::default();

        // The definitions present, one per name: duplicates resolve to the lowest id.
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
        let mut wanted: BTreeMap<Arc<str>, Found> = BTreeMap::new();
        for (name, mut found) in by_name {
            found.sort_by_key(|f| f.definition);
            let mut found = found.into_iter();
            let Some(chosen) = found.next() else { continue };
            let ignored: Vec<InstanceId> = found.map(|f| f.definition).collect();
            if !ignored.is_empty() {
                report.diagnostics.push(SyncDiagnostic::DuplicateName {
                    name: name.to_string(),
                    chosen: chosen.definition,
                    ignored,
                });
            }
            wanted.insert(name, chosen);
        }

        // Renames: an installed definition instance now wanted under another, free name.
        let mut renames: Vec<(Arc<str>, Arc<str>)> = Vec::new();
        for (old, installed) in &self.installed {
            if wanted.contains_key(old) {
                continue;
            }
            if let Some((new, _)) = wanted.iter().find(|(new, f)| {
                f.definition == installed.definition && !self.installed.contains_key(*new)
            }) {
                renames.push((old.clone(), new.clone()));
            }
        }
        for (old, new) in &renames {
            if let Some(installed) = self.installed.remove(old) {
                // Keep the source: it decides below whether the definition also changed.
                self.installed.insert(new.clone(), installed);
                report.renamed.push((old.to_string(), new.to_string()));
            }
        }

        for (name, found) in &wanted {
            let renamed = renames.iter().any(|(_, new)| new == name);
            match self.installed.get(name) {
                Some(installed) if same_source(&installed.source, &found.source) && !renamed => {
                    report.unchanged += 1;
                    continue;
                }
                _ => {}
            }
            let schema = match self.evaluator.evaluate(name, &found.source) {
                Ok(schema) => schema,
                Err(error) => {
                    report.diagnostics.push(SyncDiagnostic::Failed {
                        name: name.to_string(),
                        definition: found.definition,
                        error,
                    });
                    continue;
                }
            };
            let def = schema.to_component_def(name);
            let outcome = match self.installed.get(name).map(|i| i.component) {
                Some(component) => redefine(arena, store, component, def, name),
                None => install(arena, store, def, name),
            };
            match outcome {
                Ok((component, component_report)) => {
                    if self.installed.contains_key(name) && !renamed {
                        report.changed.push(name.to_string());
                    } else if !renamed {
                        report.added.push(name.to_string());
                    }
                    report.adoption.push(component_report);
                    self.installed.insert(
                        name.clone(),
                        Installed {
                            definition: found.definition,
                            source: found.source.clone(),
                            component,
                        },
                    );
                }
                Err(error) => report.diagnostics.push(SyncDiagnostic::Failed {
                    name: name.to_string(),
                    definition: found.definition,
                    error,
                }),
            }
        }

        // Definitions that left: their rows go back to orphans.
        let gone: Vec<Arc<str>> = self
            .installed
            .keys()
            .filter(|name| !wanted.contains_key(*name))
            .cloned()
            .collect();
        for name in gone {
            let Some(installed) = self.installed.remove(&name) else {
                continue;
            };
            if let Ok(rows) = store.uninstall(installed.component) {
                for (at, record) in rows {
                    store.add_orphan(at, record);
                }
            }
            report.removed.push(name.to_string());
        }
        self.seen = Some(revisions);
        report
    }

    /// Adopts orphans of installed components (for example after loading saved rows), without
    /// waiting for a definition change.
    pub fn adopt_orphans(&mut self, arena: &Snapshot, store: &mut Store) -> Vec<ComponentReport> {
        let mut reports = Vec::new();
        for (name, installed) in &self.installed {
            if !store.orphans().has_component(name) {
                continue;
            }
            let Ok(def) = store.def(installed.component).map(|d| d.def().clone()) else {
                continue;
            };
            if let Ok((_, report)) = redefine(arena, store, installed.component, def, name) {
                reports.push(report);
            }
        }
        reports
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
    let types: Vec<Arc<strata_component_store::FieldType>> = def
        .fields()
        .iter()
        .map(|f| Arc::new(f.ty.clone()))
        .collect();
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
                        ty: Some(types[i].clone()),
                    })
                })
                .collect(),
        })
        .collect())
}
