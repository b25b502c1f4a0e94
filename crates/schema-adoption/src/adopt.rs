//! Adoption: moving saved (orphan) rows and previously typed rows onto a definition, with a
//! report of what happened to every field.
//!
//! Invariant: one mechanism serves orphans and redefinitions. For every new field, the value
//! comes from the source field of the same name, else from the first of its former names whose
//! source field no other field claimed, else the default; a value that does not convert exactly
//! is reset to the default. A source field goes to one field at most: current names claim
//! first, then the fields in definition order. Source fields no new field claims are dropped. A row whose instance's class the definition excludes (or whose
//! instance is gone) is not adopted and keeps its raw values. Nothing is silently lost: every
//! outcome is counted in the report.

use std::fmt;
use std::sync::Arc;

use strata_arena::{ClassId, InstanceId};
use strata_component_store::{
    ComponentDef, FieldDef, FieldType, FieldTypes, InstanceRef, OrphanRecord, Value,
};

use crate::convert::convert;

/// How many sample instance ids a report keeps per outcome.
const SAMPLES: usize = 3;

/// One source field: its name and value.
#[derive(Clone, Debug, PartialEq)]
pub struct SourceField {
    /// The field's name in the source.
    pub name: Arc<str>,
    /// Its value.
    pub value: Value,
}

/// One row to adopt.
#[derive(Clone, Debug, PartialEq)]
pub struct SourceRow {
    /// The instance.
    pub at: InstanceRef,
    /// The schema version the row was saved or typed under.
    pub version: u32,
    /// Its fields.
    pub fields: Vec<SourceField>,
    /// The types its fields were stored under, by name (shared by the rows of one set or one
    /// removed definition); `None` for values saved without their types. With them, structs
    /// convert by member name and enums by variant name; without them, neither can.
    pub types: Option<FieldTypes>,
}

impl SourceRow {
    /// A row from a raw orphan record. A recorded type that its value does not fit (a record
    /// put together by hand) is ignored, and that value converts as an untyped one.
    pub fn from_orphan(at: InstanceRef, record: OrphanRecord) -> Self {
        let types = record.types.as_ref().map(|types| {
            let fits = |name: &Arc<str>, ty: &FieldType| {
                record
                    .fields
                    .iter()
                    .find(|(n, _)| n == name)
                    .is_none_or(|(_, value)| value.conforms(ty))
            };
            if types.iter().all(|(name, ty)| fits(name, ty)) {
                types.clone()
            } else {
                types
                    .iter()
                    .filter(|(name, ty)| fits(name, ty))
                    .cloned()
                    .collect()
            }
        });
        Self {
            at,
            version: record.version,
            fields: record
                .fields
                .into_iter()
                .map(|(name, value)| SourceField { name, value })
                .collect(),
            types,
        }
    }

    /// The type the field at `index` was stored under, when known.
    pub fn type_of(&self, index: usize) -> Option<&FieldType> {
        let name = &self.fields.get(index)?.name;
        let types = self.types.as_deref()?;
        match types.get(index) {
            Some((n, ty)) if n == name => Some(ty),
            _ => types.iter().find(|(n, _)| n == name).map(|(_, ty)| ty),
        }
    }

    /// The row as a raw record (to keep it as an orphan, or as migration input), with the
    /// types of its fields.
    pub fn to_record(&self, component: &str) -> OrphanRecord {
        OrphanRecord {
            component: Arc::from(component),
            version: self.version,
            fields: self
                .fields
                .iter()
                .map(|f| (f.name.clone(), f.value.clone()))
                .collect(),
            types: self.types.clone(),
        }
    }
}

/// A count of rows with sample ids.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// How many rows.
    pub count: usize,
    /// Up to three of their instances, in the order met.
    pub samples: Vec<InstanceId>,
}

impl Outcome {
    fn record(&mut self, id: InstanceId) {
        self.count += 1;
        if self.samples.len() < SAMPLES {
            self.samples.push(id);
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.count)?;
        if !self.samples.is_empty() {
            let ids: Vec<String> = self.samples.iter().map(|id| id.to_string()).collect();
            write!(f, " (e.g. {})", ids.join(", "))?;
        }
        Ok(())
    }
}

/// What happened to one field of the new definition.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldReport {
    /// The field.
    pub field: String,
    /// Rows whose value carried over under the same name.
    pub kept: Outcome,
    /// Rows whose value carried over from a former name, per former name.
    pub renamed_from: Vec<(String, Outcome)>,
    /// Rows that had no value for it: the default was used.
    pub defaulted: Outcome,
    /// Rows whose value did not convert: reset to the default.
    pub reset: Outcome,
}

/// What adoption did for one component.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ComponentReport {
    /// The component.
    pub component: String,
    /// The definition's version.
    pub version: u32,
    /// Rows adopted into typed storage.
    pub adopted: Outcome,
    /// Rows left unadopted (their instance's class is excluded, or the instance is gone);
    /// they stay as orphans.
    pub unadopted: Outcome,
    /// Rows saved under an older version, whose old values are kept as migration input.
    pub migrations: Outcome,
    /// Per field of the definition.
    pub fields: Vec<FieldReport>,
    /// Source fields no field claimed, by source name.
    pub dropped: Vec<(String, Outcome)>,
}

impl fmt::Display for ComponentReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "component {} (version {})", self.component, self.version)?;
        writeln!(f, "  adopted: {}", self.adopted)?;
        writeln!(f, "  unadopted: {}", self.unadopted)?;
        if self.migrations.count > 0 {
            writeln!(f, "  migration input kept: {}", self.migrations)?;
        }
        for field in &self.fields {
            write!(f, "  field {}:", field.field)?;
            let mut parts = Vec::new();
            if field.kept.count > 0 {
                parts.push(format!("kept {}", field.kept));
            }
            for (from, outcome) in &field.renamed_from {
                parts.push(format!("renamed from {from} {outcome}"));
            }
            if field.defaulted.count > 0 {
                parts.push(format!("defaulted {}", field.defaulted));
            }
            if field.reset.count > 0 {
                parts.push(format!("reset {}", field.reset));
            }
            if parts.is_empty() {
                parts.push("no rows".into());
            }
            writeln!(f, " {}", parts.join("; "))?;
        }
        for (name, outcome) in &self.dropped {
            writeln!(f, "  dropped {name}: {outcome}")?;
        }
        Ok(())
    }
}

/// The result of adopting rows onto one definition.
#[derive(Clone, Debug, Default)]
pub struct Adopted {
    /// Rows to store: instance and values in the definition's field order.
    pub rows: Vec<(InstanceRef, Vec<Value>)>,
    /// Rows not adopted, unchanged.
    pub unadopted: Vec<SourceRow>,
    /// Migration input for rows saved under an older version: instance and old record.
    pub migrations: Vec<(InstanceRef, OrphanRecord)>,
    /// The report.
    pub report: ComponentReport,
}

/// Adopts `rows` onto `def`. `class_of` gives a live instance's class (`None` when the instance
/// is gone); `allowed` is the definition's resolved class restriction.
pub fn adopt(
    def: &ComponentDef,
    allowed: Option<&[ClassId]>,
    rows: Vec<SourceRow>,
    class_of: impl Fn(InstanceId) -> Option<ClassId>,
) -> Adopted {
    let mut adopted = Adopted {
        report: empty_report(def),
        ..Adopted::default()
    };
    let report = &mut adopted.report;
    let mut claims = Claims::default();
    for row in rows {
        let id = row.at.id;
        let class_ok = class_of(id).is_some_and(|c| allowed.is_none_or(|a| a.contains(&c)));
        if !class_ok {
            report.unadopted.record(id);
            adopted.unadopted.push(row);
            continue;
        }
        claims.claim_current_names(def, &row);
        let values = adopt_fields(def, &row, &mut claims, &mut report.fields);
        for (source, claimed) in row.fields.iter().zip(&claims.claimed) {
            if !claimed {
                named(&mut report.dropped, &source.name).record(id);
            }
        }
        if row.version < def.version {
            report.migrations.record(id);
            adopted.migrations.push((row.at, row.to_record(&def.name)));
        }
        report.adopted.record(id);
        adopted.rows.push((row.at, values));
    }
    report.dropped.sort_by(|a, b| a.0.cmp(&b.0));
    adopted
}

/// The report of adopting onto `def` before any row: the component, its version, and one empty
/// field report per field of the definition, in definition order.
fn empty_report(def: &ComponentDef) -> ComponentReport {
    ComponentReport {
        component: def.name.to_string(),
        version: def.version,
        fields: def
            .fields
            .iter()
            .map(|f| FieldReport {
                field: f.name.to_string(),
                ..FieldReport::default()
            })
            .collect(),
        ..ComponentReport::default()
    }
}

/// Which source fields of one row are claimed, and by which field; the buffers are reused from
/// row to row.
#[derive(Default)]
struct Claims {
    /// Per source field of the row: whether a field of the definition has claimed it.
    claimed: Vec<bool>,
    /// Per field of the definition: the source field of the same name, if the row has one.
    by_name: Vec<Option<usize>>,
}

impl Claims {
    /// The first claiming step for `row`: every field of `def` claims the source field of its
    /// current name. Resets what the previous row claimed.
    fn claim_current_names(&mut self, def: &ComponentDef, row: &SourceRow) {
        let claimed = &mut self.claimed;
        claimed.clear();
        claimed.resize(row.fields.len(), false);
        self.by_name.clear();
        self.by_name.extend(def.fields.iter().map(|field| {
            let i = row.fields.iter().position(|s| s.name == field.name)?;
            claimed[i] = true;
            Some(i)
        }));
    }

    /// The second claiming step, for `field`, the field at `at` in definition order: returns the
    /// source field it takes its value from and, when that came through a former name, the name.
    /// A field without a source field of its current name takes the first of its former names
    /// whose source field nobody claimed. The source field returned is marked claimed.
    fn source_of(
        &mut self,
        at: usize,
        field: &FieldDef,
        row: &SourceRow,
    ) -> Option<(usize, Option<Arc<str>>)> {
        let (i, former) = match self.by_name[at] {
            Some(i) => (i, None),
            None => field.former_names.iter().find_map(|former| {
                row.fields
                    .iter()
                    .enumerate()
                    .position(|(i, s)| !self.claimed[i] && s.name == *former)
                    .map(|i| (i, Some(former.clone())))
            })?,
        };
        self.claimed[i] = true;
        Some((i, former))
    }
}

/// The value step for one adopted row: returns its values in the definition's field order, each
/// converted from the source field the field claims (its current name first, then a former
/// name), or the default when there is none or it does not convert, and records each outcome in
/// `field_reports`. `claims` must hold the row's current-name claims.
fn adopt_fields(
    def: &ComponentDef,
    row: &SourceRow,
    claims: &mut Claims,
    field_reports: &mut [FieldReport],
) -> Vec<Value> {
    let id = row.at.id;
    let mut values = Vec::with_capacity(def.fields.len());
    for (at, (field, field_report)) in def.fields.iter().zip(field_reports).enumerate() {
        let Some((i, former)) = claims.source_of(at, field, row) else {
            field_report.defaulted.record(id);
            values.push(field.default.clone());
            continue;
        };
        let source = &row.fields[i];
        match convert(&source.value, row.type_of(i), &field.ty) {
            Some(value) => {
                values.push(value);
                match former {
                    None => field_report.kept.record(id),
                    Some(former) => named(&mut field_report.renamed_from, &former).record(id),
                }
            }
            None => {
                field_report.reset.record(id);
                values.push(field.default.clone());
            }
        }
    }
    values
}

/// The outcome kept under `name` in `entries`, added at the end when it is not there yet.
fn named<'a>(entries: &'a mut Vec<(String, Outcome)>, name: &str) -> &'a mut Outcome {
    let at = match entries.iter().position(|(n, _)| n == name) {
        Some(at) => at,
        None => {
            entries.push((name.to_owned(), Outcome::default()));
            entries.len() - 1
        }
    };
    &mut entries[at].1
}
