//! `cargo xtask ci`: the steps of `.ci/run`, for running locally.
//!
//! Invariant: [`STEPS`] lists exactly the commands `.ci/run` runs, in the same order and under
//! the names it announces them by; a test reads `.ci/run` and fails when the two drift apart.

use std::path::Path;
use std::time::Instant;

use anyhow::bail;

use crate::{cargo, run_command};

/// One CI step: a cargo command, or a tool given by its path relative to the workspace root.
struct Step {
    name: &'static str,
    program: Program,
    args: &'static [&'static str],
}

enum Program {
    Cargo,
    Tool(&'static str),
}

/// The steps, in the order `.ci/run` runs them.
const STEPS: &[Step] = &[
    Step {
        name: "formatting",
        program: Program::Cargo,
        args: &["fmt", "--all", "--check"],
    },
    Step {
        name: "clippy",
        program: Program::Cargo,
        args: &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
    },
    Step {
        name: "tests",
        program: Program::Cargo,
        args: &["test", "--workspace"],
    },
    Step {
        name: "bench with peers",
        program: Program::Cargo,
        args: &[
            "check",
            "-p",
            "strata-bench",
            "--features",
            "peers",
            "--all-targets",
        ],
    },
    Step {
        name: "fetch",
        program: Program::Cargo,
        args: &["fetch"],
    },
    Step {
        name: "supply chain",
        program: Program::Tool("../shared/tools/deny-check"),
        args: &[],
    },
];

/// Runs every step from the workspace at `root`, stopping at the first failure.
pub(crate) fn run(root: &Path) -> anyhow::Result<()> {
    let started = Instant::now();
    for step in STEPS {
        let mut command = match step.program {
            Program::Cargo => cargo(),
            Program::Tool(path) => {
                let tool = root.join(path);
                if !tool.is_file() {
                    bail!(
                        "the {} step needs {}, which is missing (shared/ belongs beside the repository)",
                        step.name,
                        tool.display()
                    );
                }
                std::process::Command::new(tool)
            }
        };
        command.current_dir(root).args(step.args);
        eprintln!("==> {}", step.name);
        let step_started = Instant::now();
        run_command(&mut command)?;
        eprintln!("    {} passed in {:.0?}", step.name, step_started.elapsed());
    }
    eprintln!("all CI steps passed in {:.0?}", started.elapsed());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How `.ci/run` spells a step.
    fn script_line(step: &Step) -> String {
        let program = match step.program {
            Program::Cargo => "cargo".to_owned(),
            Program::Tool(path) => format!("\"$root/{path}\""),
        };
        std::iter::once(program)
            .chain(step.args.iter().map(|a| (*a).to_owned()))
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn steps_match_the_ci_script() {
        let script_path = crate::project_root().join(".ci/run");
        let script = std::fs::read_to_string(&script_path).expect(".ci/run is readable");
        let script_steps: Vec<&str> = script
            .lines()
            .map(str::trim)
            .filter(|line| line.starts_with("cargo ") || line.starts_with("\"$root/"))
            .collect();
        let expected: Vec<String> = STEPS.iter().map(script_line).collect();
        assert_eq!(script_steps, expected);
        // The script announces each step under the name `cargo xtask ci` prints.
        let script_names: Vec<&str> = script
            .lines()
            .map(str::trim)
            .filter_map(|line| line.strip_prefix("echo \"==> "))
            .filter_map(|rest| rest.strip_suffix('"'))
            .collect();
        let names: Vec<&str> = STEPS.iter().map(|step| step.name).collect();
        assert_eq!(script_names, names);
    }
}
