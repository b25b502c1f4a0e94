//! The `strata` command, flag by flag and mistake by mistake: exit codes, what goes to
//! standard output and what to standard error. Runs `strata_cli::main_with`, the function the
//! binary calls, plus the binary itself once.

use crate::common::{example, scratch};
use std::path::{Path, PathBuf};

/// What a run gave: exit code, standard output, standard error.
struct Outcome {
    code: i32,
    out: String,
    err: String,
}

fn strata(args: &[&str]) -> Outcome {
    let mut out = Vec::new();
    let mut err = Vec::new();
    let code = strata_cli::main_with(
        args.iter().map(|a| (*a).to_owned()).collect(),
        &mut out,
        &mut err,
    );
    Outcome {
        code,
        out: String::from_utf8(out).unwrap(),
        err: String::from_utf8(err).unwrap(),
    }
}

/// A place folder made of `(path, text)` files.
fn place(test: &str, files: &[(&str, &str)]) -> PathBuf {
    let root = scratch(test).join("place");
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    root
}

/// Standard error with the scratch folder's path replaced, for snapshots.
fn shown(err: &str, root: &Path) -> String {
    err.replace(&root.to_string_lossy().into_owned(), "<place>")
}

const COUNTER: &str = "return component { fields = { n = integer(0) } }";
const TICK: &str = "return system { run = function(world)
    for _, c in world:query({ with = { Counter } }) do c.n += 1 end
end }";
const SETUP: &str = "Instance.new('Part', world.workspace):AddComponent(Counter)\nprint('ready')";

fn small(test: &str) -> PathBuf {
    place(
        test,
        &[
            ("place.toml", "frames = 3\nthreads = 1\nseed = 9\n"),
            ("components/Counter.luau", COUNTER),
            ("systems/tick.luau", TICK),
            ("setup.luau", SETUP),
        ],
    )
}

#[test]
fn run_prints_script_output_the_stats_table_and_a_summary() {
    let root = small("run");
    let run = strata(&["run", root.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.err);
    let lines: Vec<&str> = run.out.lines().collect();
    assert_eq!(lines[0], "ready");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("system") && l.contains("runs") && l.contains("errors"))
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("tick") && l.contains(" 3 ")),
        "{}",
        run.out
    );
    let summary = lines.last().unwrap();
    assert!(summary.starts_with("place: 3 frames"), "{summary}");
    assert!(summary.contains("components: Counter 1"), "{summary}");
    assert!(
        run.err.is_empty(),
        "no progress bar for a short run: {}",
        run.err
    );
}

#[test]
fn frames_and_threads_override_the_place() {
    let root = small("flags");
    let run = strata(&[
        "run",
        root.to_str().unwrap(),
        "--frames",
        "7",
        "--threads",
        "2",
    ]);
    assert_eq!(run.code, 0, "{}", run.err);
    let summary = run.out.lines().last().unwrap();
    assert!(
        summary.contains("7 frames") && summary.contains("on 2 threads"),
        "{summary}"
    );
}

#[test]
fn json_gives_one_document_with_the_stats_the_summary_and_the_prints() {
    let root = small("json");
    let run = strata(&["run", root.to_str().unwrap(), "--json"]);
    assert_eq!(run.code, 0, "{}", run.err);
    let doc: serde_json::Value = serde_json::from_str(&run.out).unwrap();
    assert_eq!(doc["frames"], 3);
    assert_eq!(doc["prints"], serde_json::json!(["ready"]));
    assert_eq!(doc["systems"][0]["name"], "tick");
    assert_eq!(doc["systems"][0]["runs"], 3);
    assert_eq!(doc["systems"][0]["errors"], 0);
    assert_eq!(
        doc["world"]["components"][0],
        serde_json::json!({ "name": "Counter", "rows": 1 })
    );
    assert_eq!(doc["world"]["hash"].as_str().unwrap().len(), 16);
    assert_eq!(doc["failed_runs"], 0);
}

#[test]
fn save_then_load_goes_on_from_the_saved_world() {
    let root = small("save");
    let file = scratch("save-file").join("world.strata");
    let file = file.to_str().unwrap();
    let first = strata(&[
        "run",
        root.to_str().unwrap(),
        "--frames",
        "2",
        "--save",
        file,
    ]);
    assert_eq!(first.code, 0, "{}", first.err);
    let second = strata(&["run", root.to_str().unwrap(), "--json", "--load", file]);
    assert_eq!(second.code, 0, "{}", second.err);
    let doc: serde_json::Value = serde_json::from_str(&second.out).unwrap();
    assert_eq!(doc["world"]["frame"], 5, "2 saved frames and 3 more");
    assert_eq!(
        doc["prints"],
        serde_json::json!([]),
        "a loaded world does not run setup"
    );
    let straight = strata(&["run", root.to_str().unwrap(), "--json", "--frames", "5"]);
    let straight: serde_json::Value = serde_json::from_str(&straight.out).unwrap();
    assert_eq!(doc["world"]["components"], straight["world"]["components"]);
}

#[test]
fn check_reports_a_valid_place_and_every_problem_of_a_broken_one() {
    let root = small("check");
    let ok = strata(&["check", root.to_str().unwrap()]);
    assert_eq!(ok.code, 0, "{}", ok.err);
    assert_eq!(
        ok.out,
        "place: ok (1 components, 1 systems, 0 groups, setup)\n"
    );
    let broken = place(
        "check-broken",
        &[
            ("place.toml", ""),
            (
                "components/Bad.luau",
                "return component { fields = { x = number('a') } }",
            ),
            ("systems/nope.luau", "return 5"),
            ("systems/syntax.luau", "return system {"),
            ("setup.luau", "print('a')\nlocal = 1"),
        ],
    );
    let check = strata(&["check", broken.to_str().unwrap()]);
    assert_eq!(check.code, 1);
    assert!(check.out.is_empty());
    insta::assert_snapshot!(shown(&check.err, &broken));
}

#[test]
fn every_user_mistake_gets_a_message_and_an_exit_code_never_a_panic() {
    let missing = scratch("missing").join("nowhere");
    let no_config = place("no-config", &[("setup.luau", "")]);
    let bad_toml = place(
        "bad-toml",
        &[("place.toml", "frames = 3\nthreads = \"two\"\n")],
    );
    let unknown_key = place("unknown-key", &[("place.toml", "frames = 3\nspeed = 2\n")]);
    let zero_threads = place("zero-threads", &[("place.toml", "threads = 0\n")]);
    let bad_rate = place("bad-rate", &[("place.toml", "frame_rate = -5\n")]);
    let setup_error = place(
        "setup-error",
        &[
            ("place.toml", ""),
            ("setup.luau", "local a = 1\nlocal b = nil + a\n"),
        ],
    );
    let system_error = place(
        "system-error",
        &[
            ("place.toml", "frames = 4\n"),
            (
                "systems/boom.luau",
                "return system { run = function()\n error('boom')\n end }",
            ),
        ],
    );
    let corrupt = scratch("corrupt").join("world.strata");
    std::fs::write(&corrupt, b"not a save").unwrap();
    let cases: Vec<(String, Vec<String>)> = vec![
        ("no arguments".into(), vec![]),
        ("unknown command".into(), vec!["fly".into()]),
        ("run without a place".into(), vec!["run".into()]),
        (
            "unknown flag".into(),
            vec!["run".into(), "p".into(), "--fast".into()],
        ),
        (
            "misspelt flag".into(),
            vec!["run".into(), "p".into(), "--frame".into(), "3".into()],
        ),
        (
            "extra argument".into(),
            vec!["check".into(), "p".into(), "q".into()],
        ),
        (
            "flag without its value".into(),
            vec!["run".into(), "p".into(), "--save".into()],
        ),
        (
            "bad frame count".into(),
            vec!["run".into(), "p".into(), "--frames".into(), "ten".into()],
        ),
        (
            "zero threads flag".into(),
            vec!["run".into(), "p".into(), "--threads".into(), "0".into()],
        ),
        (
            "too many threads flag".into(),
            vec!["run".into(), "p".into(), "--threads=10000".into()],
        ),
        (
            "missing folder".into(),
            vec!["run".into(), missing.to_string_lossy().into()],
        ),
        (
            "no place.toml".into(),
            vec!["run".into(), no_config.to_string_lossy().into()],
        ),
        (
            "bad place.toml".into(),
            vec!["run".into(), bad_toml.to_string_lossy().into()],
        ),
        (
            "unknown place.toml key".into(),
            vec!["run".into(), unknown_key.to_string_lossy().into()],
        ),
        (
            "zero threads in place.toml".into(),
            vec!["run".into(), zero_threads.to_string_lossy().into()],
        ),
        (
            "negative frame rate".into(),
            vec!["run".into(), bad_rate.to_string_lossy().into()],
        ),
        (
            "setup error".into(),
            vec!["run".into(), setup_error.to_string_lossy().into()],
        ),
        (
            "system error".into(),
            vec!["run".into(), system_error.to_string_lossy().into()],
        ),
        (
            "corrupt save".into(),
            vec![
                "run".into(),
                setup_error.to_string_lossy().into(),
                "--load".into(),
                corrupt.to_string_lossy().into(),
            ],
        ),
    ];
    let tmp = std::env::temp_dir().to_string_lossy().into_owned();
    let mut report = Vec::new();
    for (what, args) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let outcome = strata(&args);
        assert_ne!(outcome.code, 0, "{what}");
        assert!(!outcome.err.contains("panicked"), "{what}: {}", outcome.err);
        let err = outcome.err.replace(&tmp, "<tmp>");
        let err = err
            .lines()
            .filter(|l| !l.trim().is_empty())
            // Up to clap's usage line and pointer to --help, the same after every mistake.
            .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
            .map(|l| l.replace(&format!("strata-cli-{}-", std::process::id()), ""))
            .collect::<Vec<_>>()
            .join("\n    ");
        report.push(format!("{what} (exit {}):\n    {err}", outcome.code));
    }
    insta::assert_snapshot!(report.join("\n"));
}

#[test]
fn help_and_version_exit_zero() {
    let help = strata(&["--help"]);
    assert_eq!((help.code, help.err.as_str()), (0, ""));
    assert!(help.out.contains("Usage: strata <COMMAND>"), "{}", help.out);
    for command in ["run", "check", "types", "completions"] {
        assert!(
            help.out.contains(&format!("\n  {command} ")),
            "{}",
            help.out
        );
    }
    // Every command has its own help, listing its flags.
    let run = strata(&["run", "--help"]);
    assert_eq!((run.code, run.err.as_str()), (0, ""));
    assert!(
        run.out.contains("Usage: strata run [OPTIONS] <PLACE>"),
        "{}",
        run.out
    );
    for flag in [
        "--frames <N>",
        "--threads <N>",
        "--json",
        "--save <FILE>",
        "--load <FILE>",
    ] {
        assert!(run.out.contains(flag), "{flag}: {}", run.out);
    }
    for (args, usage) in [
        (&["check", "--help"][..], "Usage: strata check <PLACE>"),
        (&["help", "types"], "Usage: strata types [PLACE]"),
        (&["completions", "-h"], "Usage: strata completions <SHELL>"),
    ] {
        let help = strata(args);
        assert_eq!((help.code, help.err.as_str()), (0, ""), "{args:?}");
        assert!(help.out.contains(usage), "{args:?}: {}", help.out);
    }
    let version = strata(&["--version"]);
    assert_eq!(version.code, 0);
    assert_eq!(
        version.out,
        format!("strata {}\n", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn completions_are_written_for_bash_zsh_and_fish() {
    for (shell, opening) in [
        ("bash", "_strata() {"),
        ("zsh", "#compdef strata"),
        ("fish", "complete -c strata"),
    ] {
        let script = strata(&["completions", shell]);
        assert_eq!((script.code, script.err.as_str()), (0, ""), "{shell}");
        assert!(script.out.contains(opening), "{shell}: {}", script.out);
        // The commands and run's flags are completed.
        for word in [
            "run",
            "check",
            "types",
            "completions",
            "frames",
            "threads",
            "load",
        ] {
            assert!(script.out.contains(word), "{shell} lacks {word}");
        }
    }
    let unknown = strata(&["completions", "tcsh"]);
    assert_eq!(unknown.code, 2);
    assert!(unknown.out.is_empty());
    assert!(
        unknown.err.contains("invalid value 'tcsh'") && unknown.err.contains("possible values"),
        "{}",
        unknown.err
    );
}

#[test]
fn the_binary_exits_with_the_code_and_no_backtrace() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["run", "/no/such/place"])
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let err = String::from_utf8(output.stderr).unwrap();
    assert_eq!(
        err,
        "error: no place at /no/such/place: it is not a folder\n"
    );
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["check", &example("tour")])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    // An argument that is not UTF-8 is a command-line mistake, not a panic.
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("run")
        .arg(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(b"pl\xffce"))
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        String::from_utf8(output.stderr).unwrap(),
        "error: the argument 'pl\u{fffd}ce' is not valid UTF-8\n"
    );
}

#[test]
fn a_runaway_system_costs_one_budget_and_is_reported_stopped() {
    let root = place(
        "runaway",
        &[
            (
                "place.toml",
                "frames = 30\nthreads = 1\n[budget]\ntime_ms = 200\n",
            ),
            (
                "systems/spin.luau",
                "return system { run = function() while true do pcall(function() while true do end end) end end }",
            ),
            (
                "systems/tick.luau",
                "local n = 0\nreturn system { run = function() n += 1 end }",
            ),
        ],
    );
    let root = root.to_string_lossy().into_owned();
    let run = strata(&["run", &root]);
    assert_eq!(run.code, 1, "{}", run.err);
    assert!(run.out.contains("stopped: spin at frame 0"), "{}", run.out);
    assert!(
        run.err
            .contains("system `spin` ran away at frame 0 and was stopped"),
        "{}",
        run.err
    );
    assert!(run.err.contains("1 system run failed"), "{}", run.err);
    let json = strata(&["run", &root, "--json"]);
    let document: serde_json::Value = serde_json::from_str(&json.out).unwrap();
    assert_eq!(document["stopped"][0]["system"], "spin");
    assert_eq!(document["stopped"][0]["frame"], 0);
    assert_eq!(document["failed_runs"], 1);
    let tick = document["systems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "tick")
        .unwrap();
    assert_eq!(tick["runs"], 30);
    // Stopped after its one trip: thirty frames cost one budget, not thirty.
    let spin = document["systems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "spin")
        .unwrap();
    assert_eq!(spin["runs"], 1);
    assert_eq!(spin["errors"], 1);
}

#[test]
fn print_through_the_global_table_keeps_json_output_valid() {
    let root = place(
        "gprint",
        &[
            ("place.toml", "frames = 1\nthreads = 1\n"),
            ("setup.luau", "_G.print('from setup')"),
            (
                "systems/say.luau",
                "return system { run = function() _G.print('from a system') end }",
            ),
        ],
    );
    let root = root.to_string_lossy().into_owned();
    let run = strata(&["run", &root, "--json"]);
    assert_eq!(run.code, 0, "{}", run.err);
    let document: serde_json::Value = serde_json::from_str(&run.out).unwrap();
    assert_eq!(
        document["prints"],
        serde_json::json!(["from setup", "from a system"])
    );
}

#[test]
fn a_link_that_leaves_the_place_is_refused_and_a_broken_one_reported() {
    let outside = scratch("links-outside");
    std::fs::write(
        outside.join("secret.luau"),
        "return system { run = function() end }",
    )
    .unwrap();
    type MakeLink<'a> = Box<dyn Fn(&Path) + 'a>;
    let cases: [(&str, MakeLink<'_>, &str); 5] = [
        (
            "out",
            Box::new(|root: &Path| {
                std::os::unix::fs::symlink(
                    outside.join("secret.luau"),
                    root.join("systems/secret.luau"),
                )
                .unwrap()
            }),
            "systems/secret.luau",
        ),
        (
            "passwd",
            Box::new(|root: &Path| {
                std::os::unix::fs::symlink("/etc/passwd", root.join("systems/passwd.luau")).unwrap()
            }),
            "systems/passwd.luau",
        ),
        (
            "broken",
            Box::new(|root: &Path| {
                std::os::unix::fs::symlink(
                    root.join("systems/nowhere.luau"),
                    root.join("systems/broken.luau"),
                )
                .unwrap()
            }),
            "systems/broken.luau",
        ),
        (
            "loop",
            Box::new(|root: &Path| {
                std::os::unix::fs::symlink(
                    root.join("systems/b.luau"),
                    root.join("systems/a.luau"),
                )
                .unwrap();
                std::os::unix::fs::symlink(
                    root.join("systems/a.luau"),
                    root.join("systems/b.luau"),
                )
                .unwrap();
            }),
            "systems/a.luau",
        ),
        (
            "folder",
            Box::new(|root: &Path| {
                std::fs::remove_dir_all(root.join("systems")).unwrap();
                std::os::unix::fs::symlink(&outside, root.join("systems")).unwrap();
            }),
            "systems",
        ),
    ];
    for (name, make, named) in cases {
        let root = small(&format!("links-{name}"));
        make(&root);
        let root_text = root.to_string_lossy().into_owned();
        for command in ["run", "check"] {
            let outcome = strata(&[command, &root_text]);
            assert_eq!(outcome.code, 1, "{name} {command}: {}", outcome.err);
            assert!(
                outcome.err.contains(named),
                "{name} {command}: {}",
                outcome.err
            );
            assert!(
                outcome.err.contains("link"),
                "{name} {command}: {}",
                outcome.err
            );
        }
    }
    // A link that stays inside the place is followed.
    let root = small("links-inside");
    std::fs::create_dir_all(root.join("shared")).unwrap();
    std::fs::rename(
        root.join("systems/tick.luau"),
        root.join("shared/tick.luau"),
    )
    .unwrap();
    std::os::unix::fs::symlink(
        root.join("shared/tick.luau"),
        root.join("systems/tick.luau"),
    )
    .unwrap();
    let run = strata(&["run", &root.to_string_lossy()]);
    assert_eq!(run.code, 0, "{}", run.err);
}

#[test]
fn thread_counts_past_the_bound_are_refused_naming_the_flag_or_the_line() {
    let root = small("threads-flag");
    let root_text = root.to_string_lossy().into_owned();
    let run = strata(&["run", &root_text, "--threads", "10000"]);
    assert_eq!(run.code, 2, "{}", run.err);
    assert!(run.err.contains("--threads"), "{}", run.err);
    assert!(run.err.contains("256"), "{}", run.err);
    let root = place(
        "threads-toml",
        &[("place.toml", "frames = 2\n\nthreads = 100000\n")],
    );
    let run = strata(&["run", &root.to_string_lossy()]);
    assert_eq!(run.code, 1, "{}", run.err);
    assert!(
        run.err.contains("place.toml") && run.err.contains("line 3") && run.err.contains("threads"),
        "{}",
        run.err
    );
}

#[test]
fn a_failed_save_keeps_the_previous_file_and_still_reports_the_run() {
    let root = small("failed-save");
    let file = scratch("failed-save-file").join("world.strata");
    let first = strata(&[
        "run",
        root.to_str().unwrap(),
        "--save",
        file.to_str().unwrap(),
    ]);
    assert_eq!(first.code, 0, "{}", first.err);
    let previous = std::fs::read(&file).unwrap();
    // The binary again, with files limited to nothing (a full disk, as far as the save goes),
    // and the signal that limit raises ignored, so writing fails with an error.
    for json in [false, true] {
        let output = std::process::Command::new("sh")
            .arg("-c")
            .arg("trap '' XFSZ; ulimit -f 0; exec \"$@\"")
            .arg("sh")
            .arg(env!("CARGO_BIN_EXE_strata"))
            .args(["run", root.to_str().unwrap(), "--frames", "40", "--save"])
            .arg(&file)
            .args(json.then_some("--json"))
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&output.stdout);
        let err = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{out}\n{err}");
        assert!(err.contains("world.strata"), "{err}");
        assert_eq!(
            std::fs::read(&file).unwrap(),
            previous,
            "the old save is intact"
        );
        let leftovers: Vec<_> = std::fs::read_dir(file.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            leftovers.len(),
            1,
            "no temporary file is left: {leftovers:?}"
        );
        if json {
            let document: serde_json::Value = serde_json::from_str(&out).unwrap();
            assert_eq!(document["frames"], 40);
            assert!(document["save"]["error"].is_string(), "{document}");
        } else {
            assert!(out.contains("tick"), "the statistics are printed: {out}");
            assert!(out.contains("world hash"), "and the summary: {out}");
        }
    }
    strata::World::load_from_path(&file).expect("the previous save still loads");
}

#[test]
fn the_save_destination_is_checked_before_the_run() {
    let root = small("bad-destination");
    let dir = scratch("bad-destination-dir");
    for destination in [
        dir.join("missing/world.strata"),
        dir.clone(),
        dir.join("file.txt/world.strata"),
    ] {
        std::fs::write(dir.join("file.txt"), "not a folder").unwrap();
        let run = strata(&[
            "run",
            root.to_str().unwrap(),
            "--save",
            destination.to_str().unwrap(),
        ]);
        assert_eq!(run.code, 2, "{}: {}", destination.display(), run.err);
        assert!(run.err.contains("--save"), "{}", run.err);
        assert!(run.out.is_empty(), "nothing ran: {}", run.out);
    }
}

#[test]
fn loading_a_save_into_a_place_syncs_the_places_current_components_onto_it() {
    let files = |orbit: &'static str| {
        [
            ("place.toml", "frames = 3\nthreads = 1\n"),
            ("components/Orbit.luau", orbit),
            (
                "setup.luau",
                "Instance.new('Part', world.workspace):AddComponent(Orbit, { speed = 7 })",
            ),
        ]
    };
    let old = place(
        "sync-old",
        &files("return component { fields = { speed = number(1) } }"),
    );
    let file = scratch("sync-file").join("world.strata");
    let first = strata(&[
        "run",
        old.to_str().unwrap(),
        "--save",
        file.to_str().unwrap(),
    ]);
    assert_eq!(first.code, 0, "{}", first.err);
    // The place renames `speed` to `rate` (keeping the old name) and adds a field.
    let mut new_files = files(
        "return component { version = 2, fields = { rate = number(1, { formerNames = { \"speed\" } }), spin = number(0.5) } }",
    )
    .to_vec();
    new_files.push((
        "systems/read.luau",
        "return system { run = function(world)
            for _, o in world:query({ with = { Orbit } }) do print(o.rate, o.spin) end
        end }",
    ));
    let new = place("sync-new", &new_files);
    let check = strata(&["check", new.to_str().unwrap()]);
    assert_eq!(check.code, 0, "{}", check.err);
    let run = strata(&[
        "run",
        new.to_str().unwrap(),
        "--load",
        file.to_str().unwrap(),
        "--frames",
        "2",
    ]);
    assert_eq!(run.code, 0, "{}\n{}", run.out, run.err);
    assert!(
        run.out.contains("7\t0.5"),
        "the saved speed is the rate: {}",
        run.out
    );
    assert!(
        run.out.contains("Orbit"),
        "the sync's report is printed: {}",
        run.out
    );
    let json = strata(&[
        "run",
        new.to_str().unwrap(),
        "--load",
        file.to_str().unwrap(),
        "--frames",
        "1",
        "--json",
    ]);
    let document: serde_json::Value = serde_json::from_str(&json.out).unwrap();
    assert!(
        document["definitions"]
            .as_str()
            .unwrap_or("")
            .contains("Orbit"),
        "{document}"
    );
    assert_eq!(document["prints"], serde_json::json!(["7\t0.5"]));
}

#[test]
fn a_component_file_named_like_a_global_or_not_as_an_identifier_is_refused_naming_the_file() {
    let schema = "return component { fields = { n = number(0) } }";
    let root = place(
        "component-names",
        &[
            ("place.toml", "frames = 1\n"),
            ("components/Fine.luau", schema),
            ("components/print.luau", schema),
            ("components/math.luau", schema),
            ("components/world.luau", schema),
            ("components/my comp.luau", schema),
            ("components/1bad.luau", schema),
            ("components/end.luau", schema),
            ("setup.luau", "print('setup ran')"),
        ],
    );
    let check = strata(&["check", root.to_str().unwrap()]);
    assert_eq!(check.code, 1, "{}", check.out);
    insta::assert_snapshot!(shown(&check.err, &root));
    let run = strata(&["run", root.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{}", run.out);
    assert!(
        run.err.starts_with("error: components/1bad.luau: ") && !run.out.contains("setup ran"),
        "{}",
        run.err
    );
    let types = strata(&["types", root.to_str().unwrap()]);
    assert_eq!(types.code, 1, "{}", types.out);
    assert!(
        types.err.starts_with("error: components/1bad.luau: "),
        "{}",
        types.err
    );
}

#[test]
fn an_order_naming_no_system_is_reported_by_check_and_run() {
    let root = place(
        "missing-order",
        &[
            ("place.toml", "frames = 2\n"),
            (
                "systems/move.luau",
                "return system { after = { 'physiks' }, before = { 'render' }, run = function() end }",
            ),
            (
                "systems/render.luau",
                "return system { run = function() end }",
            ),
        ],
    );
    let check = strata(&["check", root.to_str().unwrap()]);
    assert_eq!(check.code, 1, "{}", check.out);
    assert_eq!(
        shown(&check.err, &root),
        "error: place has 1 problem:\n  systems/move.luau: warning: move after physiks: no system or set has that name\n"
    );
    // A run goes on, with the same warning on standard error.
    let run = strata(&["run", root.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.err);
    assert_eq!(
        run.err,
        "warning: systems/move.luau: move after physiks: no system or set has that name\n"
    );
}

#[test]
fn what_setup_printed_before_it_failed_is_shown() {
    let root = place(
        "setup-prints",
        &[
            ("place.toml", ""),
            (
                "setup.luau",
                "print('building the arena')\nprint('placing 3 drones')\nerror('out of drones')\n",
            ),
        ],
    );
    let run = strata(&["run", root.to_str().unwrap()]);
    assert_eq!(run.code, 1);
    assert_eq!(run.out, "building the arena\nplacing 3 drones\n");
    assert_eq!(run.err, "error: setup.luau:3: out of drones\n");
}
