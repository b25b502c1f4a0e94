//! The `strata-schema` binary, run on schema files written to a temporary folder: its text and
//! JSON reports and its exit codes (0 all valid, 1 any invalid, 2 usage error).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value as Json;

const HEALTH: &str = r#"
-- Health of anything that can be hurt.
return component {
    version = 2,
    classes = { "Entity", "Model" },
    requires = { "Transform" },
    observed = true,
    fields = {
        current = number(100),
        max = number(100, { formerNames = { "maximum", "maxHp" } }),
        state = enum({ "alive", "downed", "dead" }, "alive"),
        label = text("hp \"main\""),
        spawn = vector(0, 5.5, 0),
        lastHitBy = ref({ onDestroy = "clear" }),
        guards = list(ref(), { onDestroy = "removeComponent" }),
        shield = struct({ amount = integer(25), kind = enum({ "none", "energy" }, "energy") }),
        note = optional(text()),
    },
}
"#;

/// Names itself, which a schema may not do.
const NAMED: &str = r#"return component { name = "Other", fields = { a = number() } }"#;

/// A call left open on line 3 (Luau reports line 4, where the `}` it meets is).
const SYNTAX: &str = "return component {\n    fields = {\n        a = number(1\n    },\n}\n";

/// A fresh folder for one test, holding `files` (name, contents).
fn folder(test: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("strata-schema-cli")
        .join(test);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).expect("the old folder can be removed");
    }
    std::fs::create_dir_all(&dir).expect("the folder can be created");
    for (name, contents) in files {
        std::fs::write(dir.join(name), contents).expect("the file can be written");
    }
    dir
}

/// Runs the binary in `dir` with `args`.
fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata-schema"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("the binary runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("UTF-8 output")
}

#[test]
fn a_valid_schema_prints_its_definition() {
    let dir = folder("valid", &[("Health.luau", HEALTH)]);
    let output = run(&dir, &["check", "Health.luau"]);
    assert_eq!(output.status.code(), Some(0));
    insta::assert_snapshot!(stdout(&output), @r#"
    Health.luau: ok
      component Health, version 2
      classes:  Entity, Model
      requires: Transform
      observed: yes
      fields:
        current    number                                            = 100
        guards     list(ref)                                         = []  onDestroy removeComponent
        label      text                                              = "hp \"main\""
        lastHitBy  ref                                               = nil  onDestroy clear
        max        number                                            = 100  (formerly maximum, maxHp)
        note       optional(text)                                    = nil
        shield     struct{amount: integer, kind: enum(none|energy)}  = {amount = 25, kind = energy}
        spawn      vector                                            = (0, 5.5, 0)
        state      enum(alive|downed|dead)                           = alive

    1 file checked: 1 ok, 0 failed
    "#);
}

#[test]
fn invalid_files_are_reported_and_fail_the_run() {
    let dir = folder(
        "invalid",
        &[
            ("Health.luau", HEALTH),
            ("Named.luau", NAMED),
            ("Broken.luau", SYNTAX),
        ],
    );
    let output = run(
        &dir,
        &[
            "check",
            "Health.luau",
            "Named.luau",
            "Broken.luau",
            "Missing.luau",
        ],
    );
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    assert!(text.contains("Health.luau: ok\n"), "{text}");
    assert!(
        text.contains(
            "Named.luau: error\n  invalid schema: a schema cannot name itself: the component \
             takes its definition's name\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("Broken.luau: error\n  syntax error on line 4: "),
        "{text}"
    );
    assert!(
        text.contains("Missing.luau: error\n  cannot read the file: "),
        "{text}"
    );
    assert!(
        text.ends_with("\n4 files checked: 1 ok, 3 failed\n"),
        "{text}"
    );
}

#[test]
fn json_reports_one_object_per_file() {
    let dir = folder(
        "json",
        &[
            ("Health.luau", HEALTH),
            ("Named.luau", NAMED),
            ("Broken.luau", SYNTAX),
        ],
    );
    let output = run(
        &dir,
        &[
            "check",
            "--json",
            "Health.luau",
            "Named.luau",
            "Broken.luau",
        ],
    );
    assert_eq!(output.status.code(), Some(1));
    let document: Json = serde_json::from_str(&stdout(&output)).expect("one JSON document");
    let files = document.as_array().expect("an array");
    assert_eq!(files.len(), 3);

    let health = &files[0];
    assert_eq!(health["file"], "Health.luau");
    assert_eq!(health["component"], "Health");
    assert_eq!(health["ok"], true);
    let def = &health["definition"];
    assert_eq!(def["name"], "Health");
    assert_eq!(def["version"], 2);
    assert_eq!(def["classes"], serde_json::json!(["Entity", "Model"]));
    assert_eq!(def["requires"], serde_json::json!(["Transform"]));
    assert_eq!(def["observed"], true);
    let fields = def["fields"].as_array().expect("fields");
    let names: Vec<&str> = fields.iter().filter_map(|f| f["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "current",
            "guards",
            "label",
            "lastHitBy",
            "max",
            "note",
            "shield",
            "spawn",
            "state"
        ]
    );
    let field = |name: &str| {
        fields
            .iter()
            .find(|f| f["name"] == name)
            .unwrap_or_else(|| panic!("no field {name}"))
    };
    assert_eq!(
        field("max"),
        &serde_json::json!({
            "name": "max", "type": "number", "default": 100,
            "formerNames": ["maximum", "maxHp"], "onDestroy": null
        })
    );
    assert_eq!(field("label")["default"], "hp \"main\"");
    assert_eq!(field("state")["type"], "enum(alive|downed|dead)");
    assert_eq!(field("state")["default"], "alive");
    assert_eq!(field("spawn")["default"], serde_json::json!([0, 5.5, 0]));
    assert_eq!(field("guards")["onDestroy"], "removeComponent");
    assert_eq!(field("lastHitBy")["onDestroy"], "clear");
    assert_eq!(field("lastHitBy")["default"], Json::Null);
    assert_eq!(
        field("shield")["default"],
        serde_json::json!({ "amount": 25, "kind": "energy" })
    );
    assert!(health.get("error").is_none());

    let named = &files[1];
    assert_eq!(named["ok"], false);
    assert_eq!(named["component"], "Named");
    assert_eq!(named["error"]["kind"], "invalid");
    assert_eq!(named["error"]["line"], Json::Null);
    assert!(named.get("definition").is_none());

    let broken = &files[2];
    assert_eq!(broken["ok"], false);
    assert_eq!(broken["error"]["kind"], "syntax");
    assert_eq!(broken["error"]["line"], 4);
    let message = broken["error"]["message"].as_str().expect("a message");
    assert!(message.starts_with("Expected ')'"), "{message}");
}

#[test]
fn all_valid_json_exits_zero() {
    let dir = folder("json-valid", &[("Health.luau", HEALTH)]);
    let output = run(&dir, &["check", "--json", "Health.luau"]);
    assert_eq!(output.status.code(), Some(0));
    let document: Json = serde_json::from_str(&stdout(&output)).expect("one JSON document");
    assert_eq!(document[0]["ok"], true);
}

#[test]
fn usage_errors_exit_two_with_nothing_on_stdout() {
    let dir = folder("usage", &[("Health.luau", HEALTH)]);
    for args in [
        &[][..],
        &["check"][..],
        &["check", "--json"][..],
        &["check", "--yaml", "Health.luau"][..],
        &["lint", "Health.luau"][..],
    ] {
        let output = run(&dir, args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(output.stdout.is_empty(), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.starts_with("error: "), "{stderr}");
        assert!(stderr.contains("Usage: strata-schema "), "{stderr}");
    }
    // A misspelt flag is named, with the flag it most likely meant.
    let output = run(&dir, &["check", "--jsno", "Health.luau"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("tip: a similar argument exists: '--json'"),
        "{stderr}"
    );
    // Help goes to standard output and exits 0, for the tool and for `check`.
    let help = run(&dir, &["--help"]);
    assert_eq!(help.status.code(), Some(0));
    assert!(help.stderr.is_empty());
    assert!(
        stdout(&help).contains("Usage: strata-schema <COMMAND>"),
        "{}",
        stdout(&help)
    );
    let help = run(&dir, &["check", "--help"]);
    assert_eq!(help.status.code(), Some(0));
    let text = stdout(&help);
    assert!(
        text.contains("Usage: strata-schema check [OPTIONS] <FILE.luau>...")
            && text.contains("--json")
            && text.contains("Exit code: 0 if every file is a valid schema"),
        "{text}"
    );
}

#[test]
fn the_checker_evaluates_in_the_schema_environment_with_its_limits() {
    let methods = r#"
        local label = ("hp"):upper() .. string.format("-%d", 2)
        return component { fields = { label = text(label) } }
    "#;
    let capped = r#"
        local s = string.rep("x", 2^21)
        return component { fields = {} }
    "#;
    let random = "return component { fields = { f = number(math.random()) } }";
    let long = format!(
        "return component {{ fields = {{}} }}\n--{}",
        "x".repeat(1 << 20)
    );
    let dir = folder(
        "environment",
        &[
            ("Methods.luau", methods),
            ("Capped.luau", capped),
            ("Random.luau", random),
            ("Long.luau", &long),
        ],
    );
    let output = run(
        &dir,
        &[
            "check",
            "--json",
            "Methods.luau",
            "Capped.luau",
            "Random.luau",
            "Long.luau",
        ],
    );
    assert_eq!(output.status.code(), Some(1));
    let document: Json = serde_json::from_str(&stdout(&output)).expect("one JSON document");
    let files = document.as_array().expect("an array");
    assert_eq!(files[0]["ok"], true);
    assert_eq!(
        files[0]["definition"]["fields"][0]["default"],
        serde_json::json!("HP-2")
    );
    assert_eq!(files[1]["error"]["kind"], "sizeCap");
    assert_eq!(files[1]["error"]["line"], 2);
    assert_eq!(files[2]["error"]["kind"], "runtime");
    assert_eq!(files[3]["error"]["kind"], "sourceTooLong");
    assert_eq!(
        files[3]["error"]["message"],
        format!(
            "the source is {} bytes, over the limit of 1048576",
            long.len()
        )
    );
}
