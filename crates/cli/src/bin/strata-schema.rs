//! `strata-schema`: checks component schema files without a world.
//!
//! `strata-schema check [--json] FILE.luau...` evaluates each file in a [`SchemaVm`] (one VM
//! for the whole run; every evaluation gets a fresh environment and the standard budget). The
//! component's name is the file's stem (`Health.luau` defines `Health`), as a schema cannot
//! name itself. A schema that evaluates is also validated the way installing it would validate
//! it (unique field and former names, distinct enum variants and struct members, destruction
//! policies only on references); its class list is not checked, since the classes a game
//! registers are not known here. Each file's definition (name, version, classes, requires,
//! observed, and per field its name, type, default, former names and `onDestroy` policy) or its
//! error is printed as text, or with `--json` as one JSON document (written by serde_json): an
//! array with one object per file. The command line is parsed by clap (`--help` on every
//! command).
//!
//! Invariant: standard output carries only the report (or the help asked for); usage errors go
//! to standard error. The exit code is 0 when every file is a valid schema, 1 when any file is
//! not (or cannot be read), and 2 on a usage error.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a command-line tool reports on the terminal"
)]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde::Serialize;
use serde::ser::{SerializeMap as _, SerializeSeq as _, Serializer};
use strata_arena::{ClassRegistry, Transform};
use strata_component_store::{FieldDef, FieldType, MapKey, RefPolicy, Store, Value};
use strata_schema_adoption::{Schema, SchemaError, SchemaVm};

/// The `strata-schema` command line.
#[derive(Debug, PartialEq, Eq, clap::Parser)]
#[command(
    name = "strata-schema",
    about = "Checks Strata component schema files without a world.",
    // The doc comment above is for readers of this file, not for --help.
    long_about = None,
    after_help = EXIT_CODES,
    // No arguments is a usage error naming what is missing, not the whole help.
    arg_required_else_help = false
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The exit codes, after every help text.
const EXIT_CODES: &str =
    "Exit code: 0 if every file is a valid schema, 1 if any is not, 2 on a usage error.";

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq, clap::Subcommand)]
enum Command {
    /// Evaluates each schema file in the sandbox and prints its definition or its error.
    ///
    /// The component's name is the file's stem (Health.luau defines Health). Files after
    /// `--` are taken as files even when they start with `-`.
    #[command(after_help = EXIT_CODES)]
    Check {
        /// Print one JSON document: an array of {file, component, ok, definition | error}.
        #[arg(long)]
        json: bool,
        /// The schema files.
        #[arg(value_name = "FILE.luau", required = true)]
        files: Vec<PathBuf>,
    },
}

fn main() -> ExitCode {
    match <Cli as clap::Parser>::try_parse_from(std::env::args_os()) {
        Ok(Cli {
            command: Command::Check { json, files },
        }) => check(json, &files),
        Err(error) => {
            // Usage errors on standard error with exit code 2, `--help` on standard output
            // with 0, as clap decides.
            let _ = error.print();
            ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(2))
        }
    }
}

/// Checks every file and prints the report; the exit code says whether all were valid.
fn check(json: bool, files: &[PathBuf]) -> ExitCode {
    let vm = match SchemaVm::new() {
        Ok(vm) => vm,
        Err(error) => {
            eprintln!("strata-schema: {}", with_causes(&error));
            return ExitCode::FAILURE;
        }
    };
    let reports: Vec<FileReport> = files.iter().map(|file| check_file(&vm, file)).collect();
    let text = if json {
        render_json(&reports)
    } else {
        render_human(&reports)
    };
    print!("{text}");
    if reports.iter().all(|r| r.outcome.is_ok()) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The outcome of one file.
#[derive(Debug)]
struct FileReport {
    /// The path as given.
    file: String,
    /// The component name: the file's stem.
    component: String,
    outcome: Result<Schema, Failure>,
}

/// Why a file is not a valid schema.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Failure {
    /// A stable camelCase name of the error's kind (`syntax`, `runtime`, `invalid`, ...).
    kind: &'static str,
    /// The message, without the line when the line is given apart.
    message: String,
    /// The line, when known.
    line: Option<u32>,
    /// The whole error as one sentence, for the text report.
    text: String,
}

impl Failure {
    fn from_schema_error(error: &SchemaError) -> Failure {
        let text = with_causes(error);
        let (kind, message, line) = match error {
            SchemaError::Syntax { message, line } => ("syntax", message.clone(), *line),
            SchemaError::Runtime { message, line } => ("runtime", message.clone(), *line),
            SchemaError::Invalid { message, line } => ("invalid", message.clone(), *line),
            SchemaError::FormerNames(conflict) => ("invalid", conflict.to_string(), None),
            SchemaError::InstructionBudget(_) => ("instructionBudget", text.clone(), None),
            SchemaError::TimeBudget(_) => ("timeBudget", text.clone(), None),
            SchemaError::MemoryBudget(_) => ("memoryBudget", text.clone(), None),
            SchemaError::StackOverflow => ("stackOverflow", text.clone(), None),
            SchemaError::NotAComponent { .. } => ("notAComponent", text.clone(), None),
            SchemaError::SizeCap { message, line } => ("sizeCap", message.clone(), *line),
            SchemaError::SourceTooLong { .. } => ("sourceTooLong", text.clone(), None),
            SchemaError::Store(_) => ("store", text.clone(), None),
            SchemaError::Vm(_) => ("vm", text.clone(), None),
            _ => ("other", text.clone(), None),
        };
        Failure {
            kind,
            message,
            line,
            text,
        }
    }
}

/// An error's message followed by its causes', each after `: `, for a reader who sees only
/// this line.
fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        cause = inner.source();
    }
    text
}

/// The component name a file defines: its stem.
fn component_name(file: &Path) -> String {
    file.file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn check_file(vm: &SchemaVm, file: &Path) -> FileReport {
    let component = component_name(file);
    let limit = vm.budget().source;
    // A file past the source limit is refused without reading it whole.
    let too_long = std::fs::metadata(file)
        .ok()
        .map(|meta| usize::try_from(meta.len()).unwrap_or(usize::MAX))
        .filter(|length| *length > limit);
    let read = match too_long {
        Some(length) => Ok(Err(SchemaError::SourceTooLong { length, limit })),
        None => std::fs::read_to_string(file).map(Ok),
    };
    let outcome = match read {
        Err(error) => Err(Failure {
            kind: "io",
            message: format!("cannot read the file: {error}"),
            line: None,
            text: format!("cannot read the file: {error}"),
        }),
        Ok(Err(error)) => Err(Failure::from_schema_error(&error)),
        Ok(Ok(source)) => vm
            .evaluate(&component, &source)
            .and_then(|schema| validate(&component, schema))
            .map_err(|error| Failure::from_schema_error(&error)),
    };
    FileReport {
        file: file.display().to_string(),
        component,
        outcome,
    }
}

/// Validates an evaluated schema as installing it would, except for its class list.
fn validate(component: &str, schema: Schema) -> Result<Schema, SchemaError> {
    let mut def = schema.to_component_def(component);
    def.classes = None;
    Store::new().install(def, &ClassRegistry::standard())?;
    Ok(schema)
}

// ----- The text report. -----

fn render_human(reports: &[FileReport]) -> String {
    let mut out = String::new();
    for (i, report) in reports.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        match &report.outcome {
            Ok(schema) => human_definition(&mut out, &report.file, &report.component, schema),
            Err(failure) => {
                let _ = writeln!(out, "{}: error", report.file);
                let _ = writeln!(out, "  {}", failure.text);
            }
        }
    }
    let failed = reports.iter().filter(|r| r.outcome.is_err()).count();
    let files = if reports.len() == 1 { "file" } else { "files" };
    let _ = writeln!(
        out,
        "\n{} {files} checked: {} ok, {failed} failed",
        reports.len(),
        reports.len() - failed
    );
    out
}

fn human_definition(out: &mut String, file: &str, component: &str, schema: &Schema) {
    let names = |list: &[std::sync::Arc<str>]| {
        if list.is_empty() {
            "none".to_owned()
        } else {
            list.join(", ")
        }
    };
    let _ = writeln!(out, "{file}: ok");
    let _ = writeln!(out, "  component {component}, version {}", schema.version);
    let classes = schema
        .classes
        .as_deref()
        .map_or_else(|| "any".to_owned(), names);
    let _ = writeln!(out, "  classes:  {classes}");
    let _ = writeln!(out, "  requires: {}", names(&schema.requires));
    let _ = writeln!(
        out,
        "  observed: {}",
        if schema.observed { "yes" } else { "no" }
    );
    if schema.fields.is_empty() {
        let _ = writeln!(out, "  fields:   none");
        return;
    }
    let _ = writeln!(out, "  fields:");
    let rows: Vec<[String; 3]> = schema
        .fields
        .iter()
        .map(|f| {
            [
                f.name.to_string(),
                f.ty.name(),
                human_value(&f.default, &f.ty),
            ]
        })
        .collect();
    let width = |column: usize| {
        rows.iter()
            .map(|r| r[column].chars().count())
            .max()
            .unwrap_or(0)
    };
    let (name_width, type_width) = (width(0), width(1));
    for (field, [name, ty, default]) in schema.fields.iter().zip(&rows) {
        let mut line = format!("    {name:<name_width$}  {ty:<type_width$}  = {default}");
        if !field.former_names.is_empty() {
            let _ = write!(line, "  (formerly {})", names(&field.former_names));
        }
        if let Some(policy) = on_destroy(field) {
            let _ = write!(line, "  onDestroy {policy}");
        }
        let _ = writeln!(out, "{line}");
    }
}

/// A field's destruction policy as a schema spells it; `None` for fields that hold no
/// references.
fn on_destroy(field: &FieldDef) -> Option<&'static str> {
    field.ty.can_reference().then_some(match field.on_destroy {
        RefPolicy::Clear => "clear",
        RefPolicy::RemoveComponent => "removeComponent",
        RefPolicy::DestroyHolder => "destroyHolder",
    })
}

/// A number as text: Rust's shortest round-trip form, and `inf`, `-inf` or `nan`.
fn number_text(n: f64) -> String {
    if n.is_nan() {
        "nan".into()
    } else if n.is_infinite() {
        if n > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        n.to_string()
    }
}

fn f32_text(n: f32) -> String {
    if n.is_finite() {
        n.to_string()
    } else {
        number_text(f64::from(n))
    }
}

/// A value as text, using its type to name enum variants and struct members.
fn human_value(value: &Value, ty: &FieldType) -> String {
    let join = |items: Vec<String>| items.join(", ");
    match (value, ty) {
        (Value::Number(n), _) => number_text(*n),
        (Value::Integer(i), _) => i.to_string(),
        (Value::Boolean(b), _) => b.to_string(),
        (Value::Text(t), _) => format!("{:?}", &**t),
        (Value::Enum(i), FieldType::Enum(variants)) => match variants.get(*i as usize) {
            Some(variant) => variant.to_string(),
            None => format!("#{i}"),
        },
        (Value::Enum(i), _) => format!("#{i}"),
        (Value::Vector(v), _) => {
            format!("({}, {}, {})", f32_text(v.x), f32_text(v.y), f32_text(v.z))
        }
        (Value::Transform(t), _) => {
            if **t == Transform::IDENTITY {
                "identity".into()
            } else {
                let rows: Vec<String> = t
                    .rows
                    .iter()
                    .map(|r| format!("[{}]", join(r.iter().map(|c| f32_text(*c)).collect())))
                    .collect();
                format!("[{}]", join(rows))
            }
        }
        (Value::Reference(None), _) | (Value::Optional(None), _) => "nil".into(),
        (Value::Reference(Some(id)), _) => id.to_string(),
        (Value::List(list), _) => {
            let element = match ty {
                FieldType::List(element) => element,
                other => other,
            };
            let items = list
                .as_slice()
                .iter()
                .map(|v| human_value(v, element))
                .collect();
            format!("[{}]", join(items))
        }
        (Value::Map(map), _) => {
            let (key_ty, value_ty) = match ty {
                FieldType::Map(k, v) => (&**k, &**v),
                other => (other, other),
            };
            let items = map
                .iter()
                .map(|(k, v)| {
                    format!(
                        "[{}] = {}",
                        human_value(&k.to_value(), key_ty),
                        human_value(v, value_ty)
                    )
                })
                .collect();
            format!("{{{}}}", join(items))
        }
        (Value::Struct(values), _) => {
            let members: &[_] = match ty {
                FieldType::Struct(members) => members,
                _ => &[],
            };
            let items = values
                .iter()
                .enumerate()
                .map(|(i, v)| match members.get(i) {
                    Some(m) => format!("{} = {}", m.name, human_value(v, &m.ty)),
                    None => human_value(v, ty),
                })
                .collect();
            format!("{{{}}}", join(items))
        }
        (Value::Optional(Some(inner)), _) => match ty {
            FieldType::Optional(inner_ty) => human_value(inner, inner_ty),
            other => human_value(inner, other),
        },
        (Value::Buffer(bytes), _) => format!("buffer({} bytes)", bytes.len()),
    }
}

// ----- The JSON report. -----

/// One file in the JSON report: members in this order, `definition` or `error`.
#[derive(Serialize)]
struct JsonReport<'a> {
    file: &'a str,
    component: &'a str,
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    definition: Option<JsonDefinition<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<JsonError<'a>>,
}

#[derive(Serialize)]
struct JsonError<'a> {
    kind: &'a str,
    message: &'a str,
    line: Option<u32>,
}

#[derive(Serialize)]
struct JsonDefinition<'a> {
    name: &'a str,
    version: u32,
    classes: Option<Vec<&'a str>>,
    requires: Vec<&'a str>,
    observed: bool,
    fields: Vec<JsonField<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonField<'a> {
    name: &'a str,
    #[serde(rename = "type")]
    ty: String,
    default: JsonValue<'a>,
    former_names: Vec<&'a str>,
    on_destroy: Option<&'static str>,
}

/// Names as JSON strings.
fn json_names(list: &[std::sync::Arc<str>]) -> Vec<&str> {
    list.iter().map(|name| &**name).collect()
}

fn render_json(reports: &[FileReport]) -> String {
    let document: Vec<JsonReport<'_>> = reports.iter().map(json_report).collect();
    let mut out = serde_json::to_string_pretty(&document)
        .expect("serde_json writes every report: its map keys are strings, its numbers finite");
    out.push('\n');
    out
}

fn json_report(report: &FileReport) -> JsonReport<'_> {
    let (definition, error) = match &report.outcome {
        Ok(schema) => (Some(json_definition(&report.component, schema)), None),
        Err(failure) => (
            None,
            Some(JsonError {
                kind: failure.kind,
                message: &failure.message,
                line: failure.line,
            }),
        ),
    };
    JsonReport {
        file: &report.file,
        component: &report.component,
        ok: report.outcome.is_ok(),
        definition,
        error,
    }
}

fn json_definition<'a>(component: &'a str, schema: &'a Schema) -> JsonDefinition<'a> {
    JsonDefinition {
        name: component,
        version: schema.version,
        classes: schema.classes.as_deref().map(json_names),
        requires: json_names(&schema.requires),
        observed: schema.observed,
        fields: schema
            .fields
            .iter()
            .map(|f| JsonField {
                name: &f.name,
                ty: f.ty.name(),
                default: JsonValue(&f.default, &f.ty),
                former_names: json_names(&f.former_names),
                on_destroy: on_destroy(f),
            })
            .collect(),
    }
}

/// A value as JSON, given its type: numbers, booleans and text as themselves (non-finite
/// numbers as the strings `inf`, `-inf`, `nan`), enums by variant name, vectors as `[x, y, z]`,
/// transforms as four rows of four, empty references and optionals as `null`, lists and buffers
/// as arrays, structs as objects by member name, maps as objects keyed by the key's text.
#[derive(Clone, Copy)]
struct JsonValue<'a>(&'a Value, &'a FieldType);

impl Serialize for JsonValue<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let JsonValue(value, ty) = *self;
        match (value, ty) {
            (Value::Number(n), _) => serialize_number(*n, serializer),
            (Value::Integer(i), _) => serializer.serialize_i64(*i),
            (Value::Boolean(b), _) => serializer.serialize_bool(*b),
            (Value::Text(t), _) => serializer.serialize_str(t),
            (Value::Enum(i), FieldType::Enum(variants)) => match variants.get(*i as usize) {
                Some(variant) => serializer.serialize_str(variant),
                None => serializer.serialize_u32(*i),
            },
            (Value::Enum(i), _) => serializer.serialize_u32(*i),
            (Value::Vector(v), _) => serialize_f32s(&[v.x, v.y, v.z], serializer),
            (Value::Transform(t), _) => {
                let mut rows = serializer.serialize_seq(Some(t.rows.len()))?;
                for row in &t.rows {
                    rows.serialize_element(&F32s(row))?;
                }
                rows.end()
            }
            (Value::Reference(None), _) | (Value::Optional(None), _) => serializer.serialize_none(),
            (Value::Reference(Some(id)), _) => serializer.serialize_u64(id.get()),
            (Value::List(list), _) => {
                let element = match ty {
                    FieldType::List(element) => element,
                    other => other,
                };
                serializer.collect_seq(list.as_slice().iter().map(|v| JsonValue(v, element)))
            }
            (Value::Map(map), _) => {
                let (key_ty, value_ty) = match ty {
                    FieldType::Map(k, v) => (&**k, &**v),
                    other => (other, other),
                };
                let mut members = serializer.serialize_map(Some(map.len()))?;
                for (k, v) in map.iter() {
                    members.serialize_entry(&map_key_text(k, key_ty), &JsonValue(v, value_ty))?;
                }
                members.end()
            }
            (Value::Struct(values), _) => {
                let declared: &[_] = match ty {
                    FieldType::Struct(members) => members,
                    _ => &[],
                };
                let mut members = serializer.serialize_map(Some(values.len()))?;
                for (i, v) in values.iter().enumerate() {
                    match declared.get(i) {
                        Some(m) => members.serialize_entry(&*m.name, &JsonValue(v, &m.ty))?,
                        None => members.serialize_entry(&i.to_string(), &JsonValue(v, ty))?,
                    }
                }
                members.end()
            }
            (Value::Optional(Some(inner)), _) => match ty {
                FieldType::Optional(inner_ty) => JsonValue(inner, inner_ty).serialize(serializer),
                other => JsonValue(inner, other).serialize(serializer),
            },
            (Value::Buffer(bytes), _) => serializer.collect_seq(bytes.iter()),
        }
    }
}

/// Single-precision numbers as a JSON array.
struct F32s<'a>(&'a [f32]);

impl Serialize for F32s<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serialize_f32s(self.0, serializer)
    }
}

fn serialize_f32s<S: Serializer>(numbers: &[f32], serializer: S) -> Result<S::Ok, S::Error> {
    let mut seq = serializer.serialize_seq(Some(numbers.len()))?;
    for n in numbers {
        seq.serialize_element(&F32(*n))?;
    }
    seq.end()
}

/// One single-precision number, written as the double its shortest text spells: `0.1`, not
/// `0.10000000149011612`, as the text report shows it.
struct F32(f32);

impl Serialize for F32 {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let n = f32_text(self.0).parse().unwrap_or(f64::from(self.0));
        serialize_number(n, serializer)
    }
}

/// Writes a number: a whole one that fits an `i64` without a fraction (`100`, not `100.0`, as
/// the text report shows it), another finite one as serde_json writes doubles (shortest
/// round-trip form, `1e300` rather than 301 digits), and a non-finite one as the string `inf`,
/// `-inf` or `nan`.
fn serialize_number<S: Serializer>(n: f64, serializer: S) -> Result<S::Ok, S::Error> {
    /// 2^63: whole numbers below it in magnitude convert to `i64` exactly.
    const I64_BOUND: f64 = 9_223_372_036_854_775_808.0;
    if !n.is_finite() {
        serializer.serialize_str(&number_text(n))
    } else if n.fract() == 0.0 && n.abs() < I64_BOUND && !(n == 0.0 && n.is_sign_negative()) {
        // A whole number below 2^63 in magnitude converts exactly.
        serializer.serialize_i64(n as i64)
    } else {
        serializer.serialize_f64(n)
    }
}

/// A map key as an object key: text as itself, the others as their text form.
fn map_key_text(key: &MapKey, ty: &FieldType) -> String {
    match (key, ty) {
        (MapKey::Text(t), _) => t.to_string(),
        (MapKey::Integer(i), _) => i.to_string(),
        (MapKey::Boolean(b), _) => b.to_string(),
        (MapKey::Enum(i), FieldType::Enum(variants)) => variants
            .get(*i as usize)
            .map_or_else(|| i.to_string(), |v| v.to_string()),
        (MapKey::Enum(i), _) => i.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use strata_arena::{InstanceId, Vec3};
    use strata_component_store::{ListValue, StructField};

    use clap::error::ErrorKind;

    use super::*;

    fn parse(args: &[&str]) -> Result<Command, clap::Error> {
        let args = std::iter::once("strata-schema").chain(args.iter().copied());
        <Cli as clap::Parser>::try_parse_from(args).map(|cli| cli.command)
    }

    /// The kind of error a refused command line gets, and its first line.
    #[track_caller]
    fn refused(args: &[&str]) -> (ErrorKind, String) {
        let error = parse(args).expect_err("refused");
        let message = error.render().to_string();
        let first = message.lines().next().unwrap_or_default().to_owned();
        (error.kind(), first)
    }

    #[test]
    fn parses_the_command_line() {
        assert_eq!(
            parse(&["check", "--json", "a.luau", "b.luau"]).expect("valid"),
            Command::Check {
                json: true,
                files: vec!["a.luau".into(), "b.luau".into()],
            }
        );
        assert_eq!(
            parse(&["check", "a.luau", "--", "--json", "-"]).expect("valid"),
            Command::Check {
                json: false,
                files: vec!["a.luau".into(), "--json".into(), "-".into()],
            }
        );
        for help in [
            &["--help"][..],
            &["-h"],
            &["help"],
            &["check", "-h"],
            &["help", "check"],
        ] {
            let error = parse(help).expect_err("help is an error to clap");
            assert_eq!(error.kind(), ErrorKind::DisplayHelp, "{help:?}");
            assert!(!error.use_stderr() && error.exit_code() == 0, "{help:?}");
        }
        assert_eq!(
            refused(&[]),
            (
                ErrorKind::MissingSubcommand,
                "error: 'strata-schema' requires a subcommand but one was not provided".into()
            )
        );
        assert_eq!(
            refused(&["lint", "a.luau"]),
            (
                ErrorKind::InvalidSubcommand,
                "error: unrecognized subcommand 'lint'".into()
            )
        );
        for no_file in [&["check"][..], &["check", "--json"]] {
            assert_eq!(
                refused(no_file),
                (
                    ErrorKind::MissingRequiredArgument,
                    "error: the following required arguments were not provided:".into()
                ),
                "{no_file:?}"
            );
        }
        assert_eq!(
            refused(&["check", "--yaml", "a.luau"]),
            (
                ErrorKind::UnknownArgument,
                "error: unexpected argument '--yaml' found".into()
            )
        );
        // A misspelt flag gets the one it most likely meant.
        let (kind, message) = refused(&["check", "--jsno", "a.luau"]);
        assert_eq!(kind, ErrorKind::UnknownArgument);
        let error = parse(&["check", "--jsno", "a.luau"]).expect_err("refused");
        assert!(
            error
                .render()
                .to_string()
                .contains("tip: a similar argument exists: '--json'"),
            "{message}"
        );
        // Every error is a usage error: exit code 2, on standard error.
        let error = parse(&["check"]).expect_err("refused");
        assert!(error.use_stderr() && error.exit_code() == 2);
    }

    #[test]
    fn component_names_are_file_stems() {
        assert_eq!(component_name(Path::new("schemas/Health.luau")), "Health");
        assert_eq!(component_name(Path::new("Health")), "Health");
        assert_eq!(component_name(Path::new("a/Inv.v2.luau")), "Inv.v2");
    }

    fn json_text(value: &impl Serialize) -> String {
        serde_json::to_string_pretty(value).expect("the value is written")
    }

    fn json_value(value: &Value, ty: &FieldType) -> String {
        json_text(&JsonValue(value, ty))
    }

    #[test]
    fn json_strings_are_escaped() {
        let cases = [
            ("plain", r#""plain""#),
            ("a \"quoted\" word", r#""a \"quoted\" word""#),
            (r"back\slash", r#""back\\slash""#),
            ("line\nbreak\ttab\rret", r#""line\nbreak\ttab\rret""#),
            // U+007F (delete) is no JSON control character: serde_json writes it as it is,
            // where the hand-written writer escaped it.
            (
                "\u{0}\u{1f}\u{7f}\u{8}\u{c}",
                "\"\\u0000\\u001f\u{7f}\\b\\f\"",
            ),
            ("é ✓ 🦀", "\"é ✓ 🦀\""),
            ("</script>", r#""</script>""#),
        ];
        for (input, expected) in cases {
            let text = Value::Text(Arc::from(input));
            assert_eq!(json_value(&text, &FieldType::Text), expected, "{input:?}");
        }
    }

    #[test]
    fn json_is_indented_and_numbers_stay_valid() {
        let member = |name: &str, ty: FieldType| StructField {
            name: Arc::from(name),
            default: ty.zero(),
            ty,
        };
        let ty = FieldType::Struct(
            vec![
                member("a", FieldType::List(Box::new(FieldType::Number))),
                member("b", FieldType::List(Box::new(FieldType::Text))),
                member(
                    "c",
                    FieldType::Map(Box::new(FieldType::Text), Box::new(FieldType::Text)),
                ),
                member("d", FieldType::Optional(Box::new(FieldType::Number))),
                member("e", FieldType::Number),
                member("f", FieldType::Vector),
            ]
            .into(),
        );
        let value = Value::Struct(
            vec![
                Value::List(ListValue::from_vec(vec![
                    Value::Number(1.0),
                    Value::Number(0.5),
                ])),
                Value::List(ListValue::EMPTY),
                Value::Map(Arc::new(BTreeMap::new())),
                Value::Optional(None),
                Value::Number(f64::INFINITY),
                Value::Vector(Vec3::new(0.1, -2.0, 1e10)),
            ]
            .into(),
        );
        assert_eq!(
            json_value(&value, &ty),
            r#"{
  "a": [
    1,
    0.5
  ],
  "b": [],
  "c": {},
  "d": null,
  "e": "inf",
  "f": [
    0.1,
    -2,
    10000000000
  ]
}"#
        );
    }

    #[test]
    fn values_are_written_by_type() {
        let variants: Arc<[Arc<str>]> = vec![Arc::from("idle"), Arc::from("dead")].into();
        let enum_ty = FieldType::Enum(variants.clone());
        assert_eq!(human_value(&Value::Enum(1), &enum_ty), "dead");
        assert_eq!(json_value(&Value::Enum(1), &enum_ty), "\"dead\"");
        assert_eq!(
            human_value(&Value::Text(Arc::from("say \"hi\"")), &FieldType::Text),
            r#""say \"hi\"""#
        );
        assert_eq!(
            human_value(&Value::Number(100.0), &FieldType::Number),
            "100"
        );
        assert_eq!(
            human_value(&Value::Number(-0.25), &FieldType::Number),
            "-0.25"
        );
        assert_eq!(
            human_value(&Value::Number(f64::NEG_INFINITY), &FieldType::Number),
            "-inf"
        );
        assert_eq!(
            human_value(
                &Value::Vector(Vec3::new(0.0, 1.5, -2.0)),
                &FieldType::Vector
            ),
            "(0, 1.5, -2)"
        );
        assert_eq!(
            json_value(&Value::Vector(Vec3::new(0.1, 0.0, 3.0)), &FieldType::Vector),
            "[\n  0.1,\n  0,\n  3\n]"
        );
        assert_eq!(
            human_value(
                &Value::Transform(Box::new(Transform::IDENTITY)),
                &FieldType::Transform
            ),
            "identity"
        );
        let struct_ty = FieldType::Struct(
            vec![
                StructField {
                    name: Arc::from("mode"),
                    ty: enum_ty.clone(),
                    default: Value::Enum(0),
                },
                StructField {
                    name: Arc::from("n"),
                    ty: FieldType::Integer,
                    default: Value::Integer(3),
                },
            ]
            .into(),
        );
        assert_eq!(
            human_value(&struct_ty.zero(), &struct_ty),
            "{mode = idle, n = 3}"
        );
        assert_eq!(
            json_value(&struct_ty.zero(), &struct_ty),
            "{\n  \"mode\": \"idle\",\n  \"n\": 3\n}"
        );
        let list_ty = FieldType::List(Box::new(FieldType::Boolean));
        let list = Value::List(ListValue::from_vec(vec![Value::Boolean(true)]));
        assert_eq!(human_value(&list, &list_ty), "[true]");
        assert_eq!(human_value(&Value::List(ListValue::EMPTY), &list_ty), "[]");
        let map_ty = FieldType::Map(Box::new(FieldType::Text), Box::new(FieldType::Integer));
        let map = Value::Map(Arc::new(BTreeMap::from([(
            MapKey::Text(Arc::from("a\"b")),
            Value::Integer(2),
        )])));
        assert_eq!(human_value(&map, &map_ty), r#"{["a\"b"] = 2}"#);
        assert_eq!(json_value(&map, &map_ty), "{\n  \"a\\\"b\": 2\n}");
        let optional_ty = FieldType::Optional(Box::new(FieldType::Number));
        assert_eq!(human_value(&Value::Optional(None), &optional_ty), "nil");
        assert_eq!(json_value(&Value::Optional(None), &optional_ty), "null");
        assert_eq!(
            human_value(&Value::Buffer(Arc::from(vec![1_u8, 2])), &FieldType::Buffer),
            "buffer(2 bytes)"
        );
        assert_eq!(
            human_value(&Value::Reference(None), &FieldType::Reference),
            "nil"
        );
    }

    fn report(file: &str, outcome: Result<Schema, Failure>) -> FileReport {
        FileReport {
            file: file.to_owned(),
            component: component_name(Path::new(file)),
            outcome,
        }
    }

    /// Reports covering every kind of value, number and string the JSON report writes: a
    /// schema evaluated from Luau with every field constructor, fields whose defaults a schema
    /// cannot spell (filled lists and maps, references, buffers, odd numbers), and failures with
    /// and without a line.
    fn every_kind_of_report() -> Vec<FileReport> {
        let vm = SchemaVm::new().expect("a VM");
        let evaluated = vm
            .evaluate(
                "Every",
                r#"return component {
                    version = 3,
                    classes = { "Model", "Part" },
                    requires = { "Team", "Health" },
                    observed = true,
                    fields = {
                        n = number(-0.25, { formerNames = { "num", "value" } }),
                        i = integer(-42),
                        b = boolean(true),
                        t = text("tab\t \"q\" \\ é ✓ \u{7f} \u{1} \u{2028} </script>"),
                        e = enum({ "A", "B" }, "B"),
                        v = vector(0.1, -2, 1e10),
                        tr = transform(),
                        r = ref({ onDestroy = "destroyHolder" }),
                        l = list(vector()),
                        m = map(text(), integer(0)),
                        o = optional(number(0)),
                        buf = buffer(),
                        s = struct({ z = number(1), a = text("x"), k = enum({ "P", "Q" }, "Q") }),
                    },
                }"#,
            )
            .expect("a valid schema");
        let variants: Arc<[Arc<str>]> = vec![Arc::from("idle"), Arc::from("dead")].into();
        let enum_ty = FieldType::Enum(variants);
        let field = |name: &str, ty: FieldType, default: Value| FieldDef::new(name, ty, default);
        let mut map = BTreeMap::new();
        map.insert(MapKey::Text(Arc::from("a\"b\n")), Value::Integer(2));
        map.insert(MapKey::Text(Arc::from("")), Value::Integer(-1));
        let mut enum_map = BTreeMap::new();
        enum_map.insert(MapKey::Enum(1), Value::Boolean(true));
        enum_map.insert(MapKey::Enum(7), Value::Boolean(false));
        let mut int_map = BTreeMap::new();
        int_map.insert(MapKey::Integer(-3), Value::Text(Arc::from("minus three")));
        int_map.insert(
            MapKey::Boolean(true),
            Value::Text(Arc::from("a boolean key")),
        );
        let struct_ty = FieldType::Struct(
            vec![StructField {
                name: Arc::from("only"),
                ty: FieldType::Integer,
                default: Value::Integer(1),
            }]
            .into(),
        );
        let mut transform = Transform::IDENTITY;
        transform.rows[0][3] = 0.1;
        transform.rows[1][3] = -1.5e-8;
        transform.rows[2][3] = 3.4e38;
        let numbers = [
            0.0,
            -0.0,
            1.0,
            100.0,
            -7.5,
            0.1,
            1.0 / 3.0,
            1e300,
            -1e-300,
            1e-7,
            123_456_789_012_345_680.0,
            f64::MAX,
            f64::MIN_POSITIVE,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ];
        let made = Schema {
            version: u32::MAX,
            fields: vec![
                field(
                    "numbers",
                    FieldType::List(Box::new(FieldType::Number)),
                    Value::List(ListValue::from_vec(
                        numbers.iter().map(|n| Value::Number(*n)).collect(),
                    )),
                ),
                field(
                    "vectors",
                    FieldType::List(Box::new(FieldType::Vector)),
                    Value::List(ListValue::from_vec(vec![
                        Value::Vector(Vec3::new(f32::MAX, f32::MIN_POSITIVE, -0.0)),
                        Value::Vector(Vec3::new(f32::INFINITY, f32::NAN, 1.0 / 3.0)),
                    ])),
                ),
                field(
                    "moved",
                    FieldType::Transform,
                    Value::Transform(Box::new(transform)),
                ),
                field(
                    "integers",
                    FieldType::List(Box::new(FieldType::Integer)),
                    Value::List(ListValue::from_vec(vec![
                        Value::Integer(i64::MIN),
                        Value::Integer(i64::MAX),
                        Value::Integer(0),
                    ])),
                ),
                field(
                    "texts",
                    FieldType::Map(Box::new(FieldType::Text), Box::new(FieldType::Integer)),
                    Value::Map(Arc::new(map)),
                ),
                field(
                    "by_state",
                    FieldType::Map(Box::new(enum_ty.clone()), Box::new(FieldType::Boolean)),
                    Value::Map(Arc::new(enum_map)),
                ),
                field(
                    "by_number",
                    FieldType::Map(Box::new(FieldType::Integer), Box::new(FieldType::Text)),
                    Value::Map(Arc::new(int_map)),
                ),
                field(
                    "target",
                    FieldType::Reference,
                    Value::Reference(InstanceId::new(99)),
                ),
                field("state", enum_ty.clone(), Value::Enum(5)),
                field("unit", FieldType::Integer, Value::Enum(1)),
                field(
                    "bytes",
                    FieldType::Buffer,
                    Value::Buffer(Arc::from(vec![0_u8, 7, 255])),
                ),
                field(
                    "maybe",
                    FieldType::Optional(Box::new(enum_ty.clone())),
                    Value::Optional(Some(Box::new(Value::Enum(1)))),
                ),
                field(
                    "nested",
                    FieldType::List(Box::new(FieldType::List(Box::new(FieldType::Boolean)))),
                    Value::List(ListValue::from_vec(vec![
                        Value::List(ListValue::EMPTY),
                        Value::List(ListValue::from_vec(vec![Value::Boolean(false)])),
                    ])),
                ),
                field(
                    "extra_members",
                    struct_ty,
                    Value::Struct(vec![Value::Integer(4), Value::Text(Arc::from("spare"))].into()),
                ),
                field(
                    "empty_map",
                    FieldType::Map(Box::new(FieldType::Text), Box::new(FieldType::Text)),
                    Value::Map(Arc::new(BTreeMap::new())),
                ),
            ],
            classes: Some(Vec::new()),
            requires: Vec::new(),
            observed: false,
        };
        let failure = |kind: &'static str, message: &str, line: Option<u32>| Failure {
            kind,
            message: message.to_owned(),
            line,
            text: message.to_owned(),
        };
        vec![
            report("schemas/Every.luau", Ok(evaluated)),
            report("Made \"by hand\"\t.luau", Ok(made)),
            report(
                "Broken.luau",
                Err(failure(
                    "syntax",
                    "Expected ')' (to close '(' at line 3), got '}'",
                    Some(4),
                )),
            ),
            report(
                "Missing.luau",
                Err(failure(
                    "io",
                    "cannot read the file: No such file or directory (os error 2)",
                    None,
                )),
            ),
        ]
    }

    /// The JSON report of every kind of value, against what the hand-written JSON writer this
    /// tool had before serde_json wrote for the same reports (`strata-schema.old-report.json`,
    /// written from [`every_kind_of_report`] by that writer): line for line the same text except
    /// where a number or a string is spelt differently, and there the same number (the same
    /// double, as Rust reads both) or the same string.
    #[test]
    fn the_json_report_is_what_the_hand_written_writer_wrote() {
        let old = include_str!("strata-schema.old-report.json");
        let new = render_json(&every_kind_of_report());
        let old_lines: Vec<&str> = old.lines().collect();
        let new_lines: Vec<&str> = new.lines().collect();
        assert_eq!(old_lines.len(), new_lines.len(), "{new}");
        let mut respelt_numbers = Vec::new();
        let mut respelt_strings = Vec::new();
        for (i, (old, new)) in old_lines.iter().zip(&new_lines).enumerate() {
            if old == new {
                continue;
            }
            let (old, new) = (
                old.trim().trim_end_matches(','),
                new.trim().trim_end_matches(','),
            );
            if let (Ok(old_n), Ok(new_n)) = (old.parse::<f64>(), new.parse::<f64>()) {
                assert_eq!(
                    old_n.to_bits(),
                    new_n.to_bits(),
                    "line {}: {old} {new}",
                    i + 1
                );
                respelt_numbers.push(new.to_owned());
            } else {
                let member = |line: &str| -> serde_json::Value {
                    serde_json::from_str(&format!("{{{line}}}")).expect("a JSON member")
                };
                assert_eq!(member(old), member(new), "line {}", i + 1);
                respelt_strings.push(i + 1);
            }
        }
        // Doubles in serde_json's shortest form with an exponent where the old writer wrote
        // every digit, and negative zero with its fraction.
        assert_eq!(
            respelt_numbers,
            [
                "-0.0",
                "1e+300",
                "-1e-300",
                "1e-7",
                "1.7976931348623157e+308",
                "2.2250738585072014e-308",
                "3.4028235e+38",
                "1.1754944e-38",
                "-0.0",
                "-1.5e-8",
                "3.4e+38"
            ]
        );
        // The text holding U+007F (delete), which serde_json does not escape.
        assert_eq!(respelt_strings, [99]);
        assert!(new_lines[98].contains('\u{7f}') && old_lines[98].contains("\\u007f"));
        serde_json::from_str::<serde_json::Value>(&new).expect("the report is JSON");
    }

    #[test]
    fn reports_render_definitions_and_errors() {
        let vm = SchemaVm::new().expect("a VM");
        let schema = vm
            .evaluate(
                "Link",
                r#"return component {
                    requires = { "Health" },
                    fields = {
                        target = ref({ onDestroy = "removeComponent", formerNames = { "to" } }),
                        weight = number(1),
                    },
                }"#,
            )
            .expect("a valid schema");
        let failure = Failure::from_schema_error(&SchemaError::Syntax {
            message: "Expected ')'".into(),
            line: Some(3),
        });
        assert_eq!(failure.kind, "syntax");
        assert_eq!(failure.message, "Expected ')'");
        let reports = [
            report("Link.luau", Ok(schema)),
            report("Bad\"Name.luau", Err(failure)),
        ];
        assert_eq!(
            render_human(&reports),
            "\
Link.luau: ok
  component Link, version 1
  classes:  any
  requires: Health
  observed: no
  fields:
    target  ref     = nil  (formerly to)  onDestroy removeComponent
    weight  number  = 1

Bad\"Name.luau: error
  syntax error on line 3: Expected ')'

2 files checked: 1 ok, 1 failed
"
        );
        let json = render_json(&reports);
        assert!(json.contains("\"file\": \"Bad\\\"Name.luau\""), "{json}");
        assert!(json.contains("\"component\": \"Bad\\\"Name\""), "{json}");
        assert!(
            json.contains(
                r#""error": {
      "kind": "syntax",
      "message": "Expected ')'",
      "line": 3
    }"#
            ),
            "{json}"
        );
        assert!(
            json.contains("\"onDestroy\": \"removeComponent\""),
            "{json}"
        );
        assert!(json.contains("\"onDestroy\": null"), "{json}");
    }

    #[test]
    fn validation_catches_what_installing_would_refuse() {
        let vm = SchemaVm::new().expect("a VM");
        let schema = vm
            .evaluate(
                "Dup",
                r#"return component { fields = { a = enum({ "A", "B", "A" }) } }"#,
            )
            .expect("it evaluates");
        let error = validate("Dup", schema).expect_err("a variant is named twice");
        assert_eq!(Failure::from_schema_error(&error).kind, "store");
        // Classes are a game's business: an unknown class is not refused here.
        let schema = vm
            .evaluate(
                "Custom",
                r#"return component { classes = { "MyClass" }, fields = { a = number() } }"#,
            )
            .expect("it evaluates");
        assert!(validate("Custom", schema).is_ok());
    }
}
