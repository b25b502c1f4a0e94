//! Places: a game as a folder, loaded into a world.
//!
//! ```text
//! my-place/
//!   place.toml          frames, frame rate, fixed step, threads, seed, script budget
//!   components/*.luau   one component definition each; the file stem is the name
//!   systems/*.luau      one `system{...}` each; the file stem is the system's name
//!   groups/*.luau       one group script each; the stem names the group
//!   setup.luau          builds the starting world
//! ```
//!
//! Invariant: opening a place reads and checks everything before a world exists (the
//! configuration with its line on error, every script's presence and encoding); building a
//! world from it installs the components (as `ComponentDefinition` instances in a `Components`
//! folder under the game), then the systems and groups in file-name order, then runs the setup
//! script, so a failure names the file and, for scripts, the line, and keeps what scripts
//! printed before it. A component file is refused, naming it, when its name cannot be a
//! component's global in the game environment.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use strata_arena::{ClassId, InstanceId};
use strata_schema_adoption::SyncReport;

use strata::WorldError;

use crate::{ScriptBudget, ScriptError, ScriptScene, ScriptWorld};

/// The folder under the game a place's component definitions live in.
const COMPONENTS: &str = "Components";
use strata::World;

/// A place's `place.toml`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlaceConfig {
    /// The place's name (the folder's name when absent).
    #[serde(default)]
    pub name: Option<String>,
    /// Frames `strata run` steps when not told otherwise.
    #[serde(default = "default_frames")]
    pub frames: u64,
    /// Frames per second: each frame steps `1 / frame_rate` seconds.
    #[serde(default = "default_rate")]
    pub frame_rate: f64,
    /// Fixed steps per second for the fixed-step block.
    #[serde(default = "default_rate")]
    pub fixed_rate: f64,
    /// The most fixed steps one frame runs.
    #[serde(default = "default_max_fixed")]
    pub max_fixed_steps: u32,
    /// Threads for parallel systems and execution groups (the machine's when absent).
    #[serde(default)]
    pub threads: Option<usize>,
    /// The seed of GUIDs and persistent ids (a fixed one when absent, so runs repeat).
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// The script budget per callback and per VM.
    #[serde(default)]
    pub budget: BudgetConfig,
}

impl PlaceConfig {
    /// Reads a `place.toml`: an unknown key, a wrong type or a value out of range is refused
    /// with a message naming it (and its line, where TOML gives one).
    pub fn parse(text: &str) -> Result<PlaceConfig, String> {
        let config: PlaceConfig = toml::from_str(text).map_err(|e| config_message(text, &e))?;
        let check = |ok: bool, what: &str| if ok { Ok(()) } else { Err(what.to_owned()) };
        check(
            config.frame_rate.is_finite() && config.frame_rate > 0.0,
            "frame_rate must be a positive number of frames per second",
        )?;
        check(
            config.fixed_rate.is_finite() && config.fixed_rate > 0.0,
            "fixed_rate must be a positive number of steps per second",
        )?;
        if let Some(threads) = config.threads
            && !(1..=strata::MAX_THREADS).contains(&threads)
        {
            return Err(format!(
                "{}threads must be between 1 and {}, not {threads}",
                threads_line(text),
                strata::MAX_THREADS
            ));
        }
        Ok(config)
    }
}

/// The `[budget]` table of `place.toml`.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetConfig {
    /// Luau interrupts per callback.
    #[serde(default = "default_instructions")]
    pub instructions: u64,
    /// Milliseconds per run (a system's, a group's callback).
    #[serde(default = "default_time_ms")]
    pub time_ms: u64,
    /// Milliseconds for the setup script (and each script as it loads).
    #[serde(default = "default_setup_time_ms")]
    pub setup_time_ms: u64,
    /// Megabytes for the world's scripts together.
    #[serde(default = "default_memory_mb")]
    pub memory_mb: u64,
}

impl Default for BudgetConfig {
    fn default() -> Self {
        Self {
            instructions: default_instructions(),
            time_ms: default_time_ms(),
            setup_time_ms: default_setup_time_ms(),
            memory_mb: default_memory_mb(),
        }
    }
}

impl BudgetConfig {
    /// As a script budget.
    pub fn budget(&self) -> ScriptBudget {
        ScriptBudget {
            instructions: self.instructions,
            time: std::time::Duration::from_millis(self.time_ms),
            setup_time: std::time::Duration::from_millis(self.setup_time_ms),
            memory: usize::try_from(self.memory_mb.saturating_mul(1024 * 1024))
                .unwrap_or(usize::MAX),
        }
    }
}

fn default_frames() -> u64 {
    60
}
fn default_rate() -> f64 {
    60.0
}
fn default_max_fixed() -> u32 {
    4
}
fn default_seed() -> u64 {
    1
}
fn default_instructions() -> u64 {
    ScriptBudget::STANDARD.instructions
}
fn default_time_ms() -> u64 {
    ScriptBudget::STANDARD.time.as_millis() as u64
}
fn default_setup_time_ms() -> u64 {
    ScriptBudget::STANDARD.setup_time.as_millis() as u64
}
fn default_memory_mb() -> u64 {
    (ScriptBudget::STANDARD.memory / (1024 * 1024)) as u64
}

/// One script file of a place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlaceScript {
    /// The file stem (a component's, system's or group's name).
    pub name: String,
    /// The path relative to the place folder, as errors name it (`systems/regen.luau`).
    pub path: String,
    /// The source.
    pub source: String,
}

/// A place read from its folder.
#[derive(Clone, Debug, PartialEq)]
pub struct Place {
    /// The folder.
    pub root: PathBuf,
    /// The configuration.
    pub config: PlaceConfig,
    /// `components/*.luau`, by file name.
    pub components: Vec<PlaceScript>,
    /// `systems/*.luau`, by file name.
    pub systems: Vec<PlaceScript>,
    /// `groups/*.luau`, by file name.
    pub groups: Vec<PlaceScript>,
    /// `setup.luau`, when there is one.
    pub setup: Option<PlaceScript>,
}

/// Why a place could not be opened or built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlaceError {
    /// The folder is missing or is not a folder.
    #[error("no place at {0}: it is not a folder")]
    NotAFolder(PathBuf),
    /// The folder has no `place.toml`.
    #[error("{0} has no place.toml")]
    NoConfig(PathBuf),
    /// `place.toml` does not parse or holds an unknown or wrong value.
    #[error("{path}: {message}")]
    Config {
        /// The file.
        path: PathBuf,
        /// What is wrong, with its line.
        message: String,
    },
    /// A file or folder of the place is a link that leaves the place, or leads nowhere.
    #[error("{path}: {reason}")]
    Link {
        /// The link.
        path: PathBuf,
        /// Where it leads, or that it leads nowhere.
        reason: String,
    },
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A script failed, or a world operation it asked for was refused.
    #[error("{0}")]
    Script(#[from] ScriptError),
    /// A world operation was refused while building.
    #[error("{0}")]
    World(WorldError),
    /// Building failed after scripts had printed: the error, with what they printed before it
    /// (in order), so it can be shown first.
    #[error("{error}")]
    AfterPrints {
        /// The lines printed before the failure.
        printed: Vec<String>,
        /// The failure.
        error: Box<PlaceError>,
    },
}

impl PlaceError {
    /// What scripts printed before the failure (see [`PlaceError::AfterPrints`]).
    pub fn printed(&self) -> &[String] {
        match self {
            PlaceError::AfterPrints { printed, .. } => printed,
            _ => &[],
        }
    }
}

/// A declaration of a place that has no effect, which the scheduler reports (an `after` or
/// `before` naming no system or set, say): the script that declared it and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct PlaceWarning {
    /// The declaring script's path (`systems/move.luau`).
    pub path: String,
    /// The scheduler's diagnostic, as it words it.
    pub message: String,
}

impl From<WorldError> for PlaceError {
    fn from(error: WorldError) -> Self {
        PlaceError::World(error)
    }
}

impl From<crate::Error> for PlaceError {
    fn from(error: crate::Error) -> Self {
        match error {
            crate::Error::Script(e) => PlaceError::Script(e),
            crate::Error::World(e) => PlaceError::World(e),
        }
    }
}

fn read(path: &Path) -> Result<String, PlaceError> {
    std::fs::read_to_string(path).map_err(|source| PlaceError::Io {
        path: path.to_owned(),
        source,
    })
}

/// Checks that `path`, once every link on the way is followed, is inside the place folder
/// `root` (itself resolved): a link leaving the place, a broken link and a loop of links are
/// refused, so a place reads only its own files.
fn within(root: &Path, path: &Path) -> Result<(), PlaceError> {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    match std::fs::canonicalize(path) {
        Ok(real) if real.starts_with(root) => Ok(()),
        Ok(real) => Err(PlaceError::Link {
            path: path.to_owned(),
            reason: format!(
                "is a link to {}, outside the place; a place reads only its own files",
                real.display()
            ),
        }),
        Err(error) if is_link => Err(PlaceError::Link {
            path: path.to_owned(),
            reason: format!("is a broken link, or one of a loop of links ({error})"),
        }),
        // Not a link and not there: the caller decides whether that matters.
        Err(_) => Ok(()),
    }
}

/// The `.luau` files of a subfolder, by file name; none when it is missing. `real` is the
/// place folder with every link resolved.
fn scripts_in(root: &Path, real: &Path, folder: &str) -> Result<Vec<PlaceScript>, PlaceError> {
    let dir = root.join(folder);
    within(real, &dir)?;
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let entries = std::fs::read_dir(&dir).map_err(|source| PlaceError::Io {
        path: dir.clone(),
        source,
    })?;
    let mut paths = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| PlaceError::Io {
            path: dir.clone(),
            source,
        })?;
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "luau") {
            paths.push(path);
        }
    }
    paths.sort();
    for path in &paths {
        within(real, path)?;
    }
    paths.retain(|path| path.is_file());
    paths
        .into_iter()
        .map(|path| {
            let name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let file = path
                .file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            Ok(PlaceScript {
                name,
                path: format!("{folder}/{file}"),
                source: read(&path)?,
            })
        })
        .collect()
}

impl Place {
    /// Reads a place folder.
    pub fn open(root: impl AsRef<Path>) -> Result<Place, PlaceError> {
        let root = root.as_ref().to_owned();
        if !root.is_dir() {
            return Err(PlaceError::NotAFolder(root));
        }
        // Links inside the place are followed as long as they stay in it.
        let real = std::fs::canonicalize(&root).map_err(|source| PlaceError::Io {
            path: root.clone(),
            source,
        })?;
        let config_path = root.join("place.toml");
        within(&real, &config_path)?;
        if !config_path.is_file() {
            return Err(PlaceError::NoConfig(root));
        }
        let text = read(&config_path)?;
        let config = PlaceConfig::parse(&text).map_err(|message| PlaceError::Config {
            path: config_path.clone(),
            message,
        })?;
        let setup_path = root.join("setup.luau");
        within(&real, &setup_path)?;
        let setup = if setup_path.is_file() {
            Some(PlaceScript {
                name: "setup".into(),
                path: "setup.luau".into(),
                source: read(&setup_path)?,
            })
        } else {
            None
        };
        Ok(Place {
            components: scripts_in(&root, &real, "components")?,
            systems: scripts_in(&root, &real, "systems")?,
            groups: scripts_in(&root, &real, "groups")?,
            setup,
            config,
            root,
        })
    }

    /// The place's name.
    pub fn name(&self) -> String {
        self.config.name.clone().unwrap_or_else(|| {
            self.root
                .file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "place".into())
        })
    }

    /// The seconds one frame steps.
    pub fn dt(&self) -> f64 {
        1.0 / self.config.frame_rate
    }

    /// A new world for the place: configured, components installed, systems and groups added,
    /// the setup script run. `threads` overrides the configuration's. A failure after scripts
    /// printed is [`PlaceError::AfterPrints`], with what they printed.
    pub fn build(&self, threads: Option<usize>) -> Result<World, PlaceError> {
        if let Some(problem) = self.component_name_problems().into_iter().next() {
            return Err(problem);
        }
        let mut world = self.empty_world(threads)?;
        match self.fill(&mut world) {
            Ok(()) => Ok(world),
            Err(error) => {
                let printed = world.take_prints();
                Err(if printed.is_empty() {
                    error
                } else {
                    PlaceError::AfterPrints {
                        printed,
                        error: Box::new(error),
                    }
                })
            }
        }
    }

    /// Installs the components, adds the code and runs the setup script.
    fn fill(&self, world: &mut World) -> Result<(), PlaceError> {
        let folder = world.create(strata_arena::ClassId::FOLDER, None)?;
        world.set_name(folder, COMPONENTS)?;
        let game = world.game();
        world.set_parent(folder, Some(game))?;
        for component in &self.components {
            world.define_luau(&component.name, &component.source, Some(folder))?;
        }
        self.check_definitions(world)?;
        self.add_code(world)?;
        if let Some(setup) = &self.setup {
            world.run_script(&setup.path, &setup.source)?;
        }
        Ok(())
    }

    /// A problem for every component file whose name cannot name a component in the game
    /// environment (see [`crate::names::component_name_problem`]), naming the file.
    fn component_name_problems(&self) -> Vec<PlaceError> {
        self.components.iter().filter_map(name_problem).collect()
    }

    /// What the scheduler found without effect in the order the place's systems and groups
    /// declare (warnings only: cycles are errors, which [`Place::check`] reports), each naming
    /// the declaring script.
    pub fn order_warnings(&self, world: &mut World) -> Vec<PlaceWarning> {
        use strata_scheduler::{Diagnostic, Severity};
        let mut warnings = Vec::new();
        for diagnostic in world.plan().diagnostics() {
            if diagnostic.severity() != Severity::Warning {
                continue;
            }
            let declaration = match diagnostic {
                Diagnostic::MissingTarget { declaration }
                | Diagnostic::DisabledTarget { declaration }
                | Diagnostic::SelfTarget { declaration }
                | Diagnostic::SelfOnlySet { declaration }
                | Diagnostic::StoppedNeighbour { declaration, .. }
                | Diagnostic::CrossStage { declaration, .. } => declaration,
                _ => continue,
            };
            let text = diagnostic.to_string();
            let message = text.strip_prefix("warning: ").unwrap_or(&text).to_owned();
            let path = self
                .systems
                .iter()
                .find(|s| s.name == declaration.name)
                .or_else(|| {
                    self.groups
                        .iter()
                        .find(|g| declaration.name.strip_prefix("group:") == Some(&g.name))
                })
                .map_or_else(|| declaration.name.clone(), |s| s.path.clone());
            warnings.push(PlaceWarning { path, message });
        }
        warnings
    }

    /// The Luau type definitions of the place's components (see
    /// [`crate::types::component_definitions`]); `strata types PLACE` writes them.
    pub fn type_definitions(&self) -> Result<String, PlaceError> {
        if let Some(problem) = self.component_name_problems().into_iter().next() {
            return Err(problem);
        }
        let mut world = self.empty_world(Some(1))?;
        let game = world.game();
        let folder = world.create(strata_arena::ClassId::FOLDER, Some(game))?;
        for component in &self.components {
            world.define_luau(&component.name, &component.source, Some(folder))?;
        }
        self.check_definitions(&mut world)?;
        Ok(crate::types::component_definitions(world.store()))
    }

    /// A world loaded from a save of this place: the save brings the instances, components
    /// and their values; the place brings its systems and groups (code is not saved) and its
    /// components as they are now. Each of the place's component definitions replaces the
    /// saved one of its name (in the `Components` folder under the game), definitions the
    /// place no longer has are removed, and the definitions are synced through the adoption
    /// path: renamed fields (`formerNames`), new fields with their defaults, changed types,
    /// dropped fields and migration input all apply to the saved rows, as they do when a
    /// definition changes in a running world. Returns the world and the sync's report.
    pub fn load(
        &self,
        save: impl std::io::Read,
        threads: Option<usize>,
    ) -> Result<(World, SyncReport), LoadPlaceError> {
        let threads = threads
            .or(self.config.threads)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from));
        let mut world = World::load_with_threads(save, threads).map_err(LoadPlaceError::Load)?;
        self.configure(&mut world).map_err(LoadPlaceError::Place)?;
        let report = self
            .sync_components(&mut world)
            .map_err(LoadPlaceError::Place)?;
        self.add_code(&mut world).map_err(LoadPlaceError::Place)?;
        Ok((world, report))
    }

    /// Puts the place's component definitions in the world's `Components` folder (made if
    /// missing) in place of the ones there, removes those the place lacks, and syncs.
    fn sync_components(&self, world: &mut World) -> Result<SyncReport, PlaceError> {
        let folder = components_folder(world)?;
        let saved = definitions_in(world, folder);
        for (name, definition) in &saved {
            if !self.components.iter().any(|c| &c.name == name) {
                world.destroy(*definition)?;
            }
        }
        for component in &self.components {
            match saved.iter().find(|(name, _)| *name == component.name) {
                Some((_, definition)) => {
                    world.set_definition_source(*definition, &component.source)?;
                }
                None => {
                    world.define_luau(&component.name, &component.source, Some(folder))?;
                }
            }
        }
        self.check_definitions(world)
    }

    fn empty_world(&self, threads: Option<usize>) -> Result<World, PlaceError> {
        let threads = threads
            .or(self.config.threads)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from));
        let mut world = World::with_seed(threads, self.config.seed)?;
        self.configure(&mut world)?;
        Ok(world)
    }

    fn configure(&self, world: &mut World) -> Result<(), PlaceError> {
        world.set_fixed_step(1.0 / self.config.fixed_rate, self.config.max_fixed_steps)?;
        world.set_script_budget(self.config.budget.budget());
        Ok(())
    }

    /// Syncs the definitions and refuses a place whose schema failed; returns the sync's
    /// report.
    fn check_definitions(&self, world: &mut World) -> Result<SyncReport, PlaceError> {
        let report = world.sync_definitions();
        if let Some(diagnostic) = report.diagnostics.first() {
            let path = self
                .components
                .iter()
                .find(|c| diagnostic.to_string().contains(&c.name))
                .map_or_else(|| "components".to_owned(), |c| c.path.clone());
            return Err(PlaceError::Script(ScriptError {
                script: path,
                line: None,
                message: diagnostic.to_string(),
            }));
        }
        Ok(report)
    }

    fn add_code(&self, world: &mut World) -> Result<(), PlaceError> {
        for system in &self.systems {
            world.add_script_system(&system.name, &system.path, &system.source)?;
        }
        for group in &self.groups {
            world.add_group_script(&group.name, &group.path, &group.source)?;
        }
        Ok(())
    }

    /// Checks a place without running it: schemas evaluate, system and group scripts return
    /// system tables, the setup script compiles. Returns every problem found.
    pub fn check(&self) -> Vec<PlaceError> {
        let mut problems = Vec::new();
        let mut world = match self.empty_world(Some(1)) {
            Ok(world) => world,
            Err(e) => return vec![e],
        };
        let game = world.game();
        let folder = match world.create(strata_arena::ClassId::FOLDER, Some(game)) {
            Ok(folder) => folder,
            Err(e) => return vec![e.into()],
        };
        for component in &self.components {
            if let Some(problem) = name_problem(component) {
                problems.push(problem);
                continue;
            }
            if let Err(e) = world.define_luau(&component.name, &component.source, Some(folder)) {
                problems.push(e.into());
            }
        }
        let report = world.sync_definitions();
        for diagnostic in &report.diagnostics {
            let text = diagnostic.to_string();
            let path = self
                .components
                .iter()
                .find(|c| text.contains(&c.name))
                .map_or_else(|| "components".to_owned(), |c| c.path.clone());
            problems.push(PlaceError::Script(ScriptError {
                script: path,
                line: None,
                message: text,
            }));
        }
        for system in &self.systems {
            if let Err(e) = world.add_script_system(&system.name, &system.path, &system.source) {
                problems.push(e.into());
            }
        }
        for group in &self.groups {
            if let Err(e) = world.add_group_script(&group.name, &group.path, &group.source) {
                problems.push(e.into());
            }
        }
        if let Some(setup) = &self.setup
            && let Err(e) = world.check_script(&setup.path, &setup.source)
        {
            problems.push(e.into());
        }
        for warning in self.order_warnings(&mut world) {
            problems.push(PlaceError::Script(ScriptError {
                script: warning.path,
                line: None,
                message: format!("warning: {}", warning.message),
            }));
        }
        let plan = world.plan();
        for cycle in plan.cycles() {
            let names: Vec<String> = cycle
                .chain
                .iter()
                .map(|id| plan.system(*id).map_or("?", |s| s.name()).to_owned())
                .collect();
            problems.push(PlaceError::Config {
                path: self.root.join("systems"),
                message: format!(
                    "systems ordered in a cycle never run: {}",
                    names.join(" -> ")
                ),
            });
        }
        problems
    }
}

/// The problem of a component file whose name cannot name a component in the game
/// environment, naming the file.
pub(crate) fn name_problem(component: &PlaceScript) -> Option<PlaceError> {
    let message = crate::names::component_name_problem(&component.name)?;
    Some(PlaceError::Script(ScriptError {
        script: component.path.clone(),
        line: None,
        message,
    }))
}

/// Why a saved place could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadPlaceError {
    /// The save could not be read.
    #[error("{0}")]
    Load(strata::LoadError),
    /// The place's code could not be added.
    #[error("{0}")]
    Place(PlaceError),
}

/// `line N: ` for the `threads` key of a `place.toml` that parsed, or nothing.
fn threads_line(text: &str) -> String {
    #[derive(Deserialize)]
    struct Threads {
        threads: Option<toml::Spanned<toml::Value>>,
    }
    toml::from_str::<Threads>(text)
        .ok()
        .and_then(|t| t.threads.map(|v| v.span()))
        .map_or_else(String::new, |span| {
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            format!("line {line}: ")
        })
}

/// A TOML error as one line with its line number.
fn config_message(text: &str, error: &toml::de::Error) -> String {
    let message = error.message().to_owned();
    match error.span() {
        Some(span) => {
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            format!("line {line}: {message}")
        }
        None => message,
    }
}

/// The `Components` folder under the game, where a place keeps its component definitions; made
/// when missing.
pub(crate) fn components_folder(world: &mut World) -> Result<InstanceId, PlaceError> {
    let game = world.game();
    let existing = world
        .children(game)?
        .into_iter()
        .find(|c| world.name(*c).is_ok_and(|n| n == COMPONENTS));
    match existing {
        Some(folder) => Ok(folder),
        None => {
            let folder = world.create(ClassId::FOLDER, Some(game))?;
            world.set_name(folder, COMPONENTS)?;
            Ok(folder)
        }
    }
}

/// The component definitions in `folder`, by name.
pub(crate) fn definitions_in(world: &World, folder: InstanceId) -> Vec<(String, InstanceId)> {
    world
        .children(folder)
        .unwrap_or_default()
        .into_iter()
        .filter(|c| {
            world
                .class(*c)
                .is_ok_and(|k| k == ClassId::COMPONENT_DEFINITION)
        })
        .filter_map(|c| Some((world.name(c).ok()?.to_owned(), c)))
        .collect()
}
