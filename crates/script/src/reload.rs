//! Reloading a running place: [`Place::reload`] brings a world built from a place in step
//! with the place's files as they are now, between frames.
//!
//! Invariant: a file's new version takes effect only whole. A component definition that fails
//! to sync is put back to its previous source (the store kept the previous definition, so the
//! rows never saw the failed one); a system or group script that fails to load, or whose
//! system the scheduler refuses, leaves the previous version running. The `Place` a reload is
//! called on always describes what runs: it takes a file's new version exactly when the world
//! did.

use strata::prelude::*;
use strata_schema_adoption::{SyncDiagnostic, SyncReport};

use crate::place::{
    Place, PlaceError, PlaceScript, components_folder, definitions_in, name_problem,
};
use crate::{ScriptError, ScriptWorld};

/// What one [`Place::reload`] did.
#[derive(Debug, Default)]
pub struct Reload {
    /// What took effect, a line per file (`systems/move.luau: replaced`).
    pub applied: Vec<String>,
    /// The definitions' sync, when a component file changed: what was added, redefined or
    /// removed, with the adoption of the rows.
    pub sync: Option<SyncReport>,
    /// New versions refused, each naming its file (and line, when the error has one); the
    /// previous version of each goes on running.
    pub refused: Vec<PlaceError>,
    /// Changes a running world does not take, a line each (the setup script, `place.toml`).
    pub ignored: Vec<String>,
}

impl Reload {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.applied.is_empty()
            && self.sync.is_none()
            && self.refused.is_empty()
            && self.ignored.is_empty()
    }
}

/// The two kinds of code file: systems (`systems/`, a system each) and group scripts
/// (`groups/`, the system `group:NAME` each).
#[derive(Clone, Copy)]
enum Code {
    System,
    Group,
}

impl Code {
    fn system_name(self, name: &str) -> String {
        match self {
            Code::System => name.to_owned(),
            Code::Group => format!("group:{name}"),
        }
    }
}

impl Place {
    /// Applies `newer` (this place read again from its folder) to `world`, a world this place
    /// built or loaded, between frames:
    ///
    /// - a changed component file redefines its component, an added one defines it and a
    ///   deleted one removes it (its rows become orphans), all through the definitions' sync
    ///   and its adoption of the rows ([`Reload::sync`]);
    /// - a changed system or group script replaces its system (the new version starts afresh;
    ///   its statistics go on), an added one adds it, a deleted one removes it;
    /// - a `setup.luau` or `place.toml` that differs from the running one is reported, not
    ///   applied (the run keeps its configuration, and this place keeps describing it).
    ///
    /// A file whose new version fails keeps its previous version running and is reported in
    /// [`Reload::refused`]. Every later reload tries it again (and reports it again) while it
    /// differs from what runs, so fixing the file and reloading picks it up.
    pub fn reload(&mut self, world: &mut World, newer: Place) -> Reload {
        let mut reload = Reload::default();
        if newer.config != self.config {
            reload
                .ignored
                .push("place.toml changed: a new run takes it".to_owned());
        }
        if newer.setup != self.setup {
            reload.ignored.push(
                "setup.luau changed: it built the starting world and is not run again".to_owned(),
            );
        }
        self.reload_components(world, newer.components, &mut reload);
        let systems = std::mem::take(&mut self.systems);
        self.systems = reload_code(world, Code::System, systems, newer.systems, &mut reload);
        let groups = std::mem::take(&mut self.groups);
        self.groups = reload_code(world, Code::Group, groups, newer.groups, &mut reload);
        reload
    }

    /// Applies the component files that changed, then syncs; a definition that fails goes
    /// back to its previous source (or away, when it is new).
    fn reload_components(
        &mut self,
        world: &mut World,
        newer: Vec<PlaceScript>,
        reload: &mut Reload,
    ) {
        if newer == self.components {
            return;
        }
        let folder = match components_folder(world) {
            Ok(folder) => folder,
            Err(error) => {
                reload.refused.push(error);
                return;
            }
        };
        let definitions = definitions_in(world, folder);
        let find = |name: &str| {
            definitions
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, definition)| *definition)
        };
        // What was done, to undo for a definition that fails: (name, previous source or none).
        let mut done: Vec<(String, Option<PlaceScript>)> = Vec::new();
        for old in &self.components {
            if newer.iter().any(|c| c.name == old.name) {
                continue;
            }
            if let Some(definition) = find(&old.name)
                && let Err(error) = world.destroy(definition)
            {
                reload
                    .refused
                    .push(script_error(&old.path, error.to_string()));
                continue;
            }
            reload.applied.push(format!("{}: removed", old.path));
            done.push((old.name.clone(), Some(old.clone())));
        }
        for component in &newer {
            let previous = self.components.iter().find(|c| c.name == component.name);
            if previous.is_some_and(|p| p.source == component.source) {
                continue;
            }
            if let Some(problem) = name_problem(component) {
                reload.refused.push(problem);
                continue;
            }
            let put = match find(&component.name) {
                Some(definition) => world
                    .set_definition_source(definition, &component.source)
                    .map(drop),
                None => world
                    .define_luau(&component.name, &component.source, Some(folder))
                    .map(drop),
            };
            if let Err(error) = put {
                reload
                    .refused
                    .push(script_error(&component.path, error.to_string()));
                continue;
            }
            done.push((component.name.clone(), previous.cloned()));
        }
        if done.is_empty() {
            return;
        }
        let report = world.sync_definitions();
        let failed: Vec<(String, String)> = report
            .diagnostics
            .iter()
            .filter_map(|d| match d {
                SyncDiagnostic::Failed { name, error, .. } => {
                    Some((name.clone(), error.to_string()))
                }
                SyncDiagnostic::DuplicateName { .. } => None,
            })
            .collect();
        let mut running = self.components.clone();
        for (name, previous) in done {
            let newest = newer.iter().find(|c| c.name == name);
            match failed.iter().find(|(n, _)| *n == name) {
                Some((_, why)) => {
                    let path = newest
                        .map_or_else(|| format!("components/{name}.luau"), |c| c.path.clone());
                    reload.refused.push(script_error(&path, why.clone()));
                    undo(world, folder, &name, previous.as_ref());
                }
                None => {
                    running.retain(|c| c.name != name);
                    if let Some(newest) = newest {
                        reload.applied.push(match previous {
                            Some(_) => format!("{}: redefined", newest.path),
                            None => format!("{}: defined", newest.path),
                        });
                        running.push(newest.clone());
                    }
                }
            }
        }
        running.sort_by(|a, b| a.path.cmp(&b.path));
        self.components = running;
        // The failed definitions went back: sync again so the hierarchy and the store agree,
        // and report the sync that changed the world.
        if !failed.is_empty() {
            world.sync_definitions();
        }
        reload.sync = Some(report);
    }
}

/// Puts a failed definition back as it was: its previous source, or no definition at all.
fn undo(world: &mut World, folder: InstanceId, name: &str, previous: Option<&PlaceScript>) {
    let definition = definitions_in(world, folder)
        .into_iter()
        .find(|(n, _)| n == name)
        .map(|(_, definition)| definition);
    match (definition, previous) {
        (Some(definition), Some(previous)) => {
            let _ = world.set_definition_source(definition, &previous.source);
        }
        (Some(definition), None) => {
            let _ = world.destroy(definition);
        }
        (None, Some(previous)) => {
            let _ = world.define_luau(name, &previous.source, Some(folder));
        }
        (None, None) => {}
    }
}

/// Applies the code files of one kind that changed; returns the files now running.
fn reload_code(
    world: &mut World,
    kind: Code,
    running: Vec<PlaceScript>,
    newer: Vec<PlaceScript>,
    reload: &mut Reload,
) -> Vec<PlaceScript> {
    let mut now = Vec::with_capacity(newer.len());
    for old in &running {
        if newer.iter().any(|s| s.name == old.name) {
            continue;
        }
        let removed = match world.system_id(&kind.system_name(&old.name)) {
            Some(id) => world.remove_system(id).map_err(|e| e.to_string()),
            None => Ok(()),
        };
        match removed {
            Ok(()) => reload.applied.push(format!("{}: removed", old.path)),
            Err(why) => {
                reload.refused.push(script_error(&old.path, why));
                now.push(old.clone());
            }
        }
    }
    for script in newer {
        let previous = running.iter().find(|s| s.name == script.name);
        if previous.is_some_and(|p| p.source == script.source) {
            now.push(script);
            continue;
        }
        let (name, path, source) = (&script.name, &script.path, &script.source);
        let result = match (kind, previous.is_some()) {
            (Code::System, true) => world.replace_script_system(name, path, source),
            (Code::System, false) => world.add_script_system(name, path, source),
            (Code::Group, true) => world.replace_group_script(name, path, source),
            (Code::Group, false) => world.add_group_script(name, path, source),
        };
        match result {
            Ok(_) => {
                reload.applied.push(format!(
                    "{path}: {}",
                    if previous.is_some() {
                        "replaced (its state starts afresh)"
                    } else {
                        "added"
                    }
                ));
                now.push(script);
            }
            Err(error) => {
                reload.refused.push(PlaceError::from(error));
                if let Some(previous) = previous {
                    now.push(previous.clone());
                }
            }
        }
    }
    now.sort_by(|a, b| a.path.cmp(&b.path));
    now
}

fn script_error(path: &str, message: String) -> PlaceError {
    PlaceError::Script(ScriptError {
        script: path.to_owned(),
        line: None,
        message,
    })
}
