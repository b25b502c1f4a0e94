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
//! error is printed as text, or with `--json` as one JSON document: an array with one object
//! per file.
//!
//! Invariant: standard output carries only the report; usage errors go to standard error. The
//! exit code is 0 when every file is a valid schema, 1 when any file is not (or cannot be
//! read), and 2 on a usage error.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a command-line tool reports on the terminal"
)]

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use strata_arena::{ClassRegistry, Transform};
use strata_component_store::{FieldDef, FieldType, MapKey, RefPolicy, Store, Value};
use strata_schema_adoption::{Schema, SchemaError, SchemaVm};

const USAGE: &str = "\
usage: strata-schema check [--json] FILE.luau...

Evaluates each component schema file in the sandbox and prints its definition or its error.
The component's name is the file's stem (Health.luau defines Health).

  --json    print one JSON document: an array of {file, component, ok, definition | error}
  --help    print this text

exit code: 0 if every file is a valid schema, 1 if any is not, 2 on a usage error";

fn main() -> ExitCode {
    match parse_args(std::env::args_os().skip(1)) {
        Ok(Command::Help) => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        Ok(Command::Check { json, files }) => check(json, &files),
        Err(message) => {
            eprintln!("strata-schema: {message}\n\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
enum Command {
    Help,
    Check { json: bool, files: Vec<PathBuf> },
}

/// Parses `check [--json] [--] FILE...` or `--help`; the error is a one-line message.
fn parse_args(args: impl IntoIterator<Item = OsString>) -> Result<Command, String> {
    let mut args = args.into_iter();
    let Some(task) = args.next() else {
        return Err("no command given".into());
    };
    match task.to_str() {
        Some("check") => {}
        Some("help" | "--help" | "-h") => return Ok(Command::Help),
        _ => return Err(format!("unknown command `{}`", task.to_string_lossy())),
    }
    let mut json = false;
    let mut files = Vec::new();
    let mut options_done = false;
    for arg in args {
        match arg.to_str() {
            Some("--") if !options_done => options_done = true,
            Some("--json") if !options_done => json = true,
            Some("--help" | "-h") if !options_done => return Ok(Command::Help),
            Some(flag) if !options_done && flag.starts_with('-') && flag.len() > 1 => {
                return Err(format!("unknown option `{flag}`"));
            }
            _ => files.push(PathBuf::from(arg)),
        }
    }
    if files.is_empty() {
        return Err("`check` needs at least one schema file".into());
    }
    Ok(Command::Check { json, files })
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

/// A JSON value, rendered by hand (the crate needs no JSON library for one document).
#[derive(Debug, Clone, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    /// A number's JSON text (always a finite number).
    Number(String),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(&'static str, Json)>),
    /// An object whose keys are data (map defaults, struct members).
    Map(Vec<(String, Json)>),
}

impl Json {
    fn f64(n: f64) -> Json {
        if n.is_finite() {
            Json::Number(n.to_string())
        } else {
            Json::String(number_text(n))
        }
    }

    fn f32(n: f32) -> Json {
        if n.is_finite() {
            Json::Number(n.to_string())
        } else {
            Json::String(number_text(f64::from(n)))
        }
    }

    fn int(n: impl Into<i64>) -> Json {
        Json::Number(n.into().to_string())
    }

    fn str(s: &str) -> Json {
        Json::String(s.to_owned())
    }

    fn names(list: &[std::sync::Arc<str>]) -> Json {
        Json::Array(list.iter().map(|n| Json::str(n)).collect())
    }

    /// Writes the value indented by `depth` levels of two spaces (the first line excepted).
    fn write(&self, out: &mut String, depth: usize) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Number(n) => out.push_str(n),
            Json::String(s) => write_json_string(out, s),
            Json::Array(items) => {
                write_container(out, depth, '[', ']', items, |out, item| {
                    item.write(out, depth + 1)
                });
            }
            Json::Object(members) => {
                write_container(out, depth, '{', '}', members, |out, (key, value)| {
                    write_json_string(out, key);
                    out.push_str(": ");
                    value.write(out, depth + 1);
                });
            }
            Json::Map(members) => {
                write_container(out, depth, '{', '}', members, |out, (key, value)| {
                    write_json_string(out, key);
                    out.push_str(": ");
                    value.write(out, depth + 1);
                });
            }
        }
    }
}

fn write_container<T>(
    out: &mut String,
    depth: usize,
    open: char,
    close: char,
    items: &[T],
    mut write_item: impl FnMut(&mut String, &T),
) {
    out.push(open);
    if items.is_empty() {
        out.push(close);
        return;
    }
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('\n');
        push_indent(out, depth + 1);
        write_item(out, item);
    }
    out.push('\n');
    push_indent(out, depth);
    out.push(close);
}

fn push_indent(out: &mut String, depth: usize) {
    for _ in 0..depth {
        out.push_str("  ");
    }
}

/// Writes `s` as a JSON string: quotes, backslashes and control characters escaped.
fn write_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if u32::from(c) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn render_json(reports: &[FileReport]) -> String {
    let document = Json::Array(reports.iter().map(json_report).collect());
    let mut out = String::new();
    document.write(&mut out, 0);
    out.push('\n');
    out
}

fn json_report(report: &FileReport) -> Json {
    let mut members = vec![
        ("file", Json::str(&report.file)),
        ("component", Json::str(&report.component)),
        ("ok", Json::Bool(report.outcome.is_ok())),
    ];
    match &report.outcome {
        Ok(schema) => members.push(("definition", json_definition(&report.component, schema))),
        Err(failure) => members.push((
            "error",
            Json::Object(vec![
                ("kind", Json::str(failure.kind)),
                ("message", Json::str(&failure.message)),
                ("line", failure.line.map_or(Json::Null, Json::int)),
            ]),
        )),
    }
    Json::Object(members)
}

fn json_definition(component: &str, schema: &Schema) -> Json {
    let fields = schema
        .fields
        .iter()
        .map(|f| {
            Json::Object(vec![
                ("name", Json::str(&f.name)),
                ("type", Json::String(f.ty.name())),
                ("default", json_value(&f.default, &f.ty)),
                ("formerNames", Json::names(&f.former_names)),
                ("onDestroy", on_destroy(f).map_or(Json::Null, Json::str)),
            ])
        })
        .collect();
    Json::Object(vec![
        ("name", Json::str(component)),
        ("version", Json::int(schema.version)),
        (
            "classes",
            schema.classes.as_deref().map_or(Json::Null, Json::names),
        ),
        ("requires", Json::names(&schema.requires)),
        ("observed", Json::Bool(schema.observed)),
        ("fields", Json::Array(fields)),
    ])
}

/// A value as JSON: numbers, booleans and text as themselves (non-finite numbers as the
/// strings `inf`, `-inf`, `nan`), enums by variant name, vectors as `[x, y, z]`, transforms as
/// four rows of four, empty references and optionals as `null`, lists and buffers as arrays,
/// structs as objects by member name, maps as objects keyed by the key's text.
fn json_value(value: &Value, ty: &FieldType) -> Json {
    match (value, ty) {
        (Value::Number(n), _) => Json::f64(*n),
        (Value::Integer(i), _) => Json::int(*i),
        (Value::Boolean(b), _) => Json::Bool(*b),
        (Value::Text(t), _) => Json::str(t),
        (Value::Enum(i), FieldType::Enum(variants)) => match variants.get(*i as usize) {
            Some(variant) => Json::str(variant),
            None => Json::int(*i),
        },
        (Value::Enum(i), _) => Json::int(*i),
        (Value::Vector(v), _) => Json::Array(vec![Json::f32(v.x), Json::f32(v.y), Json::f32(v.z)]),
        (Value::Transform(t), _) => Json::Array(
            t.rows
                .iter()
                .map(|r| Json::Array(r.iter().map(|c| Json::f32(*c)).collect()))
                .collect(),
        ),
        (Value::Reference(None), _) | (Value::Optional(None), _) => Json::Null,
        (Value::Reference(Some(id)), _) => Json::Number(id.get().to_string()),
        (Value::List(list), _) => {
            let element = match ty {
                FieldType::List(element) => element,
                other => other,
            };
            Json::Array(
                list.as_slice()
                    .iter()
                    .map(|v| json_value(v, element))
                    .collect(),
            )
        }
        (Value::Map(map), _) => {
            let (key_ty, value_ty) = match ty {
                FieldType::Map(k, v) => (&**k, &**v),
                other => (other, other),
            };
            Json::Map(
                map.iter()
                    .map(|(k, v)| (map_key_text(k, key_ty), json_value(v, value_ty)))
                    .collect(),
            )
        }
        (Value::Struct(values), _) => {
            let members: &[_] = match ty {
                FieldType::Struct(members) => members,
                _ => &[],
            };
            Json::Map(
                values
                    .iter()
                    .enumerate()
                    .map(|(i, v)| match members.get(i) {
                        Some(m) => (m.name.to_string(), json_value(v, &m.ty)),
                        None => (i.to_string(), json_value(v, ty)),
                    })
                    .collect(),
            )
        }
        (Value::Optional(Some(inner)), _) => match ty {
            FieldType::Optional(inner_ty) => json_value(inner, inner_ty),
            other => json_value(inner, other),
        },
        (Value::Buffer(bytes), _) => Json::Array(bytes.iter().map(|b| Json::int(*b)).collect()),
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

    use strata_arena::Vec3;
    use strata_component_store::{ListValue, StructField};

    use super::*;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn parses_the_command_line() {
        assert_eq!(
            parse_args(os(&["check", "--json", "a.luau", "b.luau"])),
            Ok(Command::Check {
                json: true,
                files: vec!["a.luau".into(), "b.luau".into()],
            })
        );
        assert_eq!(
            parse_args(os(&["check", "a.luau", "--", "--json", "-"])),
            Ok(Command::Check {
                json: false,
                files: vec!["a.luau".into(), "--json".into(), "-".into()],
            })
        );
        assert_eq!(parse_args(os(&["--help"])), Ok(Command::Help));
        assert_eq!(parse_args(os(&["check", "-h"])), Ok(Command::Help));
        assert!(parse_args(os(&[])).is_err());
        assert!(parse_args(os(&["lint", "a.luau"])).is_err());
        assert!(parse_args(os(&["check"])).is_err());
        assert!(parse_args(os(&["check", "--json"])).is_err());
        assert!(parse_args(os(&["check", "--yaml", "a.luau"])).is_err());
    }

    #[test]
    fn component_names_are_file_stems() {
        assert_eq!(component_name(Path::new("schemas/Health.luau")), "Health");
        assert_eq!(component_name(Path::new("Health")), "Health");
        assert_eq!(component_name(Path::new("a/Inv.v2.luau")), "Inv.v2");
    }

    fn json_text(value: &Json) -> String {
        let mut out = String::new();
        value.write(&mut out, 0);
        out
    }

    #[test]
    fn json_strings_are_escaped() {
        let cases = [
            ("plain", r#""plain""#),
            ("a \"quoted\" word", r#""a \"quoted\" word""#),
            (r"back\slash", r#""back\\slash""#),
            ("line\nbreak\ttab\rret", r#""line\nbreak\ttab\rret""#),
            ("\u{0}\u{1f}\u{7f}\u{8}\u{c}", r#""\u0000\u001f\u007f\b\f""#),
            ("é ✓ 🦀", "\"é ✓ 🦀\""),
            ("</script>", r#""</script>""#),
        ];
        for (input, expected) in cases {
            assert_eq!(json_text(&Json::str(input)), expected, "{input:?}");
        }
    }

    #[test]
    fn json_is_indented_and_numbers_stay_valid() {
        let value = Json::Object(vec![
            ("a", Json::Array(vec![Json::int(1), Json::f64(0.5)])),
            ("b", Json::Array(Vec::new())),
            ("c", Json::Map(Vec::new())),
            ("d", Json::Null),
            ("e", Json::f64(f64::INFINITY)),
            ("f", Json::f32(0.1)),
        ]);
        assert_eq!(
            json_text(&value),
            r#"{
  "a": [
    1,
    0.5
  ],
  "b": [],
  "c": {},
  "d": null,
  "e": "inf",
  "f": 0.1
}"#
        );
    }

    #[test]
    fn values_are_written_by_type() {
        let variants: Arc<[Arc<str>]> = vec![Arc::from("idle"), Arc::from("dead")].into();
        let enum_ty = FieldType::Enum(variants.clone());
        assert_eq!(human_value(&Value::Enum(1), &enum_ty), "dead");
        assert_eq!(
            json_text(&json_value(&Value::Enum(1), &enum_ty)),
            "\"dead\""
        );
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
            json_text(&json_value(
                &Value::Vector(Vec3::new(0.1, 0.0, 3.0)),
                &FieldType::Vector
            )),
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
            json_text(&json_value(&struct_ty.zero(), &struct_ty)),
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
        assert_eq!(
            json_text(&json_value(&map, &map_ty)),
            "{\n  \"a\\\"b\": 2\n}"
        );
        let optional_ty = FieldType::Optional(Box::new(FieldType::Number));
        assert_eq!(human_value(&Value::Optional(None), &optional_ty), "nil");
        assert_eq!(
            json_text(&json_value(&Value::Optional(None), &optional_ty)),
            "null"
        );
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
