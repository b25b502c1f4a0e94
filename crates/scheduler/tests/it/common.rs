//! A one-line-per-system notation for test schedules, so cases read as data.
//!
//! `name [phase=Update] [fixed] [set=S]... [before=T]... [after=T]... [h=1.2] [every=0.5] [off]`
//! Bodies are the system's name.

use strata_scheduler::{HierarchyKey, Phase, Plan, Schedule, System, SystemId};

/// Parses a schedule; panics on a malformed line (a broken fixture).
pub fn schedule(spec: &str) -> Schedule<String> {
    let mut schedule = Schedule::new();
    for line in spec.lines().map(str::trim).filter(|line| !line.is_empty()) {
        schedule
            .add(system(line))
            .unwrap_or_else(|err| panic!("{line}: {err}"));
    }
    schedule
}

/// Parses one system.
pub fn system(line: &str) -> System<String> {
    let mut words = line.split_whitespace();
    let name = words.next().expect("a line starts with a name");
    let mut system = System::new(name, name.to_owned());
    for word in words {
        system = match word.split_once('=') {
            Some(("phase", phase)) => system.in_phase(phase_named(phase)),
            Some(("set", set)) => system.in_set(set),
            Some(("before", target)) => system.before(target),
            Some(("after", target)) => system.after(target),
            Some(("h", path)) => system.with_hierarchy(HierarchyKey::path(
                path.split('.')
                    .map(|index| index.parse::<u32>().expect("a hierarchy index"))
                    .collect::<Vec<_>>(),
            )),
            Some(("every", seconds)) => {
                system.with_interval(seconds.parse().expect("an interval in seconds"))
            }
            None if word == "fixed" => system.in_fixed_block(),
            None if word == "off" => system.disabled(),
            _ => panic!("unknown word {word:?} in {line:?}"),
        };
    }
    system
}

pub fn phase_named(name: &str) -> Phase {
    Phase::ALL
        .into_iter()
        .find(|phase| phase.name() == name)
        .unwrap_or_else(|| panic!("no phase {name}"))
}

/// The names of the scheduled systems, in run order.
pub fn order(plan: &Plan) -> Vec<&str> {
    plan.order().iter().map(|&id| name(plan, id)).collect()
}

/// A system's name in a plan.
pub fn name(plan: &Plan, id: SystemId) -> &str {
    plan.system(id).expect("a system of this plan").name()
}

/// The id of a system by name.
pub fn id(schedule: &Schedule<String>, name: &str) -> SystemId {
    schedule
        .id(name)
        .unwrap_or_else(|| panic!("no system {name}"))
}
