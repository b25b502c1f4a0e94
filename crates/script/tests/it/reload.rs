//! `Place::reload`: a running place takes its files' new versions between frames; a file whose
//! new version fails keeps the previous one running, and fixing it picks it up.

use std::path::{Path, PathBuf};

use strata::prelude::*;
use strata_script::{Place, Reload};

/// A place folder of this test's own.
struct Folder(PathBuf);

impl Folder {
    fn new(test: &str, files: &[(&str, &str)]) -> Self {
        let root =
            std::env::temp_dir().join(format!("strata-reload-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let folder = Folder(root);
        for (path, text) in files {
            folder.write(path, text);
        }
        folder
    }

    fn write(&self, path: &str, text: &str) {
        let path = self.0.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn remove(&self, path: &str) {
        std::fs::remove_file(self.0.join(path)).unwrap();
    }

    fn root(&self) -> &Path {
        &self.0
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const SAY: &str = "return system { run = function(world) print('v1') end }";
const COUNTER: &str = "return component { fields = { n = integer(0) } }";
const TICK: &str = "return system { run = function(world)
    for _, c in world:query({ with = { Counter } }) do c.n += 1 end
end }";
const SETUP: &str =
    "for i = 1, 3 do Instance.new('Part', world.workspace):AddComponent(Counter) end";

fn running(test: &str) -> (Folder, Place, World) {
    let folder = Folder::new(
        test,
        &[
            ("place.toml", "threads = 1\nseed = 4\n"),
            ("components/Counter.luau", COUNTER),
            ("systems/say.luau", SAY),
            ("systems/tick.luau", TICK),
            ("setup.luau", SETUP),
        ],
    );
    let place = Place::open(folder.root()).unwrap();
    let mut world = place.build(None).unwrap();
    world.step(1.0 / 60.0).unwrap();
    (folder, place, world)
}

/// Reads the folder again and reloads it into the world.
fn reload(folder: &Folder, place: &mut Place, world: &mut World) -> Reload {
    let newer = Place::open(folder.root()).unwrap();
    place.reload(world, newer)
}

fn prints(world: &mut World) -> Vec<String> {
    world.step(1.0 / 60.0).unwrap().prints.clone()
}

fn runs(world: &World, system: &str) -> u64 {
    world
        .stats()
        .into_iter()
        .find(|(_, name, _)| name == system)
        .map(|(_, _, stats)| stats.runs)
        .unwrap_or_else(|| panic!("no system {system}"))
}

fn counters(world: &World) -> Vec<Value> {
    let counter = world.component("Counter").unwrap();
    let n = world.field(counter, "n").unwrap();
    let mut query = world.query(QuerySpec::new().with(counter)).unwrap();
    world
        .matches(&mut query)
        .unwrap()
        .into_iter()
        .map(|id| world.get_value(id, counter, n).unwrap())
        .collect()
}

#[test]
fn a_changed_system_is_replaced_and_its_statistics_go_on() {
    let (folder, mut place, mut world) = running("changed-system");
    assert_eq!(prints(&mut world), ["v1"]);
    folder.write("systems/say.luau", &SAY.replace("v1", "v2"));
    let done = reload(&folder, &mut place, &mut world);
    assert_eq!(
        done.applied,
        ["systems/say.luau: replaced (its state starts afresh)"]
    );
    assert!(done.refused.is_empty() && done.sync.is_none(), "{done:?}");
    assert_eq!(prints(&mut world), ["v2"]);
    assert_eq!(runs(&world, "say"), 3, "the runs of both versions count");
    // Nothing changed: nothing to do.
    assert!(reload(&folder, &mut place, &mut world).is_empty());
}

#[test]
fn a_broken_file_keeps_the_previous_version_until_it_is_fixed() {
    let (folder, mut place, mut world) = running("broken-system");
    folder.write(
        "systems/say.luau",
        "return system { run = function(world)\n  print('v2'\nend }",
    );
    let done = reload(&folder, &mut place, &mut world);
    assert!(done.applied.is_empty(), "{done:?}");
    let refusal = done.refused[0].to_string();
    assert!(
        refusal.contains("systems/say.luau:"),
        "file and line: {refusal}"
    );
    assert_eq!(prints(&mut world), ["v1"], "the old version runs on");
    // Until it is fixed, every reload tries the file again and reports it again.
    let again = reload(&folder, &mut place, &mut world);
    assert_eq!(again.refused.len(), 1, "{again:?}");
    assert_eq!(prints(&mut world), ["v1"]);
    // A script that loads but returns no system is refused too.
    folder.write("systems/say.luau", "return 5");
    let done = reload(&folder, &mut place, &mut world);
    assert!(
        done.refused[0].to_string().contains("systems/say.luau"),
        "{done:?}"
    );
    assert_eq!(prints(&mut world), ["v1"]);
    folder.write("systems/say.luau", &SAY.replace("v1", "v3"));
    let done = reload(&folder, &mut place, &mut world);
    assert_eq!(done.applied.len(), 1, "{done:?}");
    assert_eq!(prints(&mut world), ["v3"]);
}

#[test]
fn a_version_the_scheduler_refuses_leaves_the_old_one_running_with_its_code() {
    let (folder, mut place, mut world) = running("refused-by-scheduler");
    // A set named like another system: the script loads, the scheduler refuses the system.
    folder.write(
        "systems/say.luau",
        "return system { sets = { 'tick' }, run = function(world) print('v2') end }",
    );
    let done = reload(&folder, &mut place, &mut world);
    assert!(done.applied.is_empty(), "{done:?}");
    assert!(
        done.refused[0].to_string().contains("tick"),
        "{:?}",
        done.refused
    );
    assert_eq!(
        prints(&mut world),
        ["v1"],
        "the old system runs its own code"
    );
}

#[test]
fn added_and_deleted_system_files_add_and_remove_their_systems() {
    let (folder, mut place, mut world) = running("added-deleted");
    folder.write("systems/hello.luau", &SAY.replace("v1", "hello"));
    folder.remove("systems/say.luau");
    let done = reload(&folder, &mut place, &mut world);
    assert_eq!(
        done.applied,
        ["systems/say.luau: removed", "systems/hello.luau: added"]
    );
    assert_eq!(prints(&mut world), ["hello"]);
    assert!(world.system_id("say").is_none());
}

#[test]
fn a_changed_component_is_redefined_and_its_rows_adopted() {
    let (folder, mut place, mut world) = running("component");
    world.step(1.0 / 60.0).unwrap();
    let counted = counters(&world);
    assert_eq!(counted, vec![Value::Integer(2); 3]);
    // A new field: the rows keep `n` and take the new field's default.
    folder.write(
        "components/Counter.luau",
        "return component { fields = { n = integer(0), label = text('new') } }",
    );
    let done = reload(&folder, &mut place, &mut world);
    assert_eq!(done.applied, ["components/Counter.luau: redefined"]);
    let sync = done.sync.expect("the sync's report");
    assert_eq!(sync.changed, ["Counter"]);
    assert!(!sync.adoption.is_empty(), "{sync}");
    assert_eq!(counters(&world), counted, "the values were adopted");
    let counter = world.component("Counter").unwrap();
    assert!(world.field(counter, "label").is_ok());

    // A schema that fails: the previous definition stays, and so do the rows.
    folder.write(
        "components/Counter.luau",
        "return component { fields = { n = } }",
    );
    let hash = world.hash();
    let done = reload(&folder, &mut place, &mut world);
    assert!(done.applied.is_empty(), "{done:?}");
    assert!(
        done.refused[0]
            .to_string()
            .contains("components/Counter.luau"),
        "{done:?}"
    );
    assert_eq!(world.hash(), hash, "a refused definition changes nothing");
    world.step(1.0 / 60.0).unwrap();
    assert_eq!(
        counters(&world),
        vec![Value::Integer(3); 3],
        "the old one runs on"
    );

    // A deleted component: its rows become orphans, and the system that needs it is refused
    // no more than it was (it fails at run time, reported by the frame).
    folder.remove("components/Counter.luau");
    folder.remove("systems/tick.luau");
    let done = reload(&folder, &mut place, &mut world);
    assert_eq!(
        done.applied,
        [
            "components/Counter.luau: removed",
            "systems/tick.luau: removed"
        ]
    );
    assert!(world.component("Counter").is_err());
    assert_eq!(world.store().orphans().len(), 3);
}

#[test]
fn a_changed_setup_or_configuration_is_reported_and_not_applied() {
    let (folder, mut place, mut world) = running("setup");
    folder.write("setup.luau", "print('again')");
    folder.write("place.toml", "threads = 1\nseed = 5\n");
    let done = reload(&folder, &mut place, &mut world);
    assert_eq!(done.ignored.len(), 2, "{done:?}");
    assert!(done.ignored.iter().any(|l| l.starts_with("setup.luau")));
    assert!(done.ignored.iter().any(|l| l.starts_with("place.toml")));
    assert_eq!(prints(&mut world), ["v1"], "setup did not run again");
    assert_eq!(place.config.seed, 4, "the run keeps its configuration");
    // Reported at every reload while they differ from what runs.
    assert_eq!(reload(&folder, &mut place, &mut world).ignored.len(), 2);
    folder.write("setup.luau", SETUP);
    folder.write("place.toml", "threads = 1\nseed = 4\n");
    assert!(reload(&folder, &mut place, &mut world).is_empty());
}

#[test]
fn a_changed_group_script_runs_in_every_group_from_the_next_frame() {
    let folder = Folder::new(
        "group",
        &[
            ("place.toml", "threads = 2\nseed = 4\n"),
            (
                "groups/room.luau",
                "return system { run = function(world, dt, root) print('a ' .. root.Name) end }",
            ),
            (
                "setup.luau",
                "for i = 1, 2 do
                    local room = Instance.new('Model', world.workspace)
                    room.Name = 'r' .. i
                    world:setGroup(room, 'room')
                end",
            ),
        ],
    );
    let mut place = Place::open(folder.root()).unwrap();
    let mut world = place.build(None).unwrap();
    let mut first = prints(&mut world);
    first.sort();
    assert_eq!(first, ["a r1", "a r2"]);
    folder.write(
        "groups/room.luau",
        "return system { run = function(world, dt, root) print('b ' .. root.Name) end }",
    );
    let done = reload(&folder, &mut place, &mut world);
    assert_eq!(
        done.applied,
        ["groups/room.luau: replaced (its state starts afresh)"]
    );
    let mut second = prints(&mut world);
    second.sort();
    assert_eq!(second, ["b r1", "b r2"]);
    assert_eq!(runs(&world, "group:room"), 2);
}
