//! The class registry: what kinds of instances exist, which families they belong to, where they
//! may be parented, and which built-in state they carry.
//!
//! Invariant: class ids and family ids are dense indexes into the registry's vectors and are
//! never removed, so an id handed out stays valid for the registry's lifetime (registries only
//! grow). Class names and family names are unique.

use std::sync::Arc;

use hashbrown::HashMap;

use crate::ArenaError;
use crate::state::{Attributes, BuiltinState, NodeData};

/// A dense index identifying a registered class.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct ClassId(pub(crate) u16);

impl ClassId {
    /// The root of a place.
    pub const DATA_MODEL: Self = Self(0);
    /// The world container: parts under it take part in the world.
    pub const WORKSPACE: Self = Self(1);
    /// A plain grouping container.
    pub const FOLDER: Self = Self(2);
    /// A grouping of parts with a primary part.
    pub const MODEL: Self = Self(3);
    /// A physical block.
    pub const PART: Self = Self(4);
    /// An omnidirectional light (parented to a part).
    pub const POINT_LIGHT: Self = Self(5);
    /// A cone light (parented to a part).
    pub const SPOT_LIGHT: Self = Self(6);
    /// A sound emitter.
    pub const SOUND: Self = Self(7);
    /// A viewpoint.
    pub const CAMERA: Self = Self(8);
    /// A GUI layer: the root of a laid-out GUI tree.
    pub const SCREEN_GUI: Self = Self(9);
    /// A GUI element laid out inside a layer.
    pub const FRAME: Self = Self(10);
    /// A game-defined component schema, whose source is Luau.
    pub const COMPONENT_DEFINITION: Self = Self(11);
    /// A bare instance for pure entity-component use.
    pub const ENTITY: Self = Self(12);
    /// Authored animation data.
    pub const ANIMATION: Self = Self(13);

    /// The dense index of this class.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// A dense index identifying a class family (a group with its own revision and index).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct FamilyId(pub(crate) u8);

impl FamilyId {
    /// Parts and models: the physical world.
    pub const PARTS: Self = Self(0);
    /// Lights.
    pub const LIGHTS: Self = Self(1);
    /// Sounds.
    pub const SOUNDS: Self = Self(2);
    /// Cameras.
    pub const CAMERAS: Self = Self(3);
    /// GUI layers and elements.
    pub const GUI: Self = Self(4);
    /// Component definitions.
    pub const DEFINITIONS: Self = Self(5);
    /// Animation data.
    pub const ANIMATIONS: Self = Self(6);

    /// The most families a registry can hold.
    pub const MAX: usize = 64;

    /// The dense index of this family.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// A set of families, as a bit mask.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, Debug)]
pub struct FamilySet(u64);

impl FamilySet {
    /// The empty set.
    pub const EMPTY: Self = Self(0);

    /// Whether `family` is in the set.
    pub const fn contains(self, family: FamilyId) -> bool {
        self.0 & (1 << family.0) != 0
    }

    /// The set with `family` added.
    #[must_use]
    pub const fn with(self, family: FamilyId) -> Self {
        Self(self.0 | (1 << family.0))
    }

    /// The union of two sets.
    #[must_use]
    pub const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The families in the set, in id order.
    pub fn iter(self) -> impl Iterator<Item = FamilyId> {
        // One step per member (lowest bit first), so the empty set costs nothing.
        let mut rest = self.0;
        std::iter::from_fn(move || {
            if rest == 0 {
                return None;
            }
            let bit = rest.trailing_zeros();
            rest &= rest - 1;
            Some(FamilyId(bit as u8))
        })
    }
}

/// The kind of built-in state a class carries; fixes the variant of `BuiltinState`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum StateKind {
    /// No built-in state beyond name and attributes.
    Plain,
    /// Transform, size and surface state of a part.
    Part,
    /// A model's pivot and primary part.
    Model,
    /// A light's brightness, range, colour and switch.
    Light,
    /// A sound's asset, volume and playback flags.
    Sound,
    /// A camera's transform, field of view and subject.
    Camera,
    /// A GUI layer's switch and draw order.
    GuiLayer,
    /// A GUI element's position, size and visibility.
    GuiElement,
    /// A component definition's Luau source.
    ComponentDefinition,
    /// Authored animation data.
    Animation,
}

impl StateKind {
    /// The names of this kind's built-in reference fields.
    pub const fn reference_fields(self) -> &'static [&'static str] {
        match self {
            StateKind::Model => &["PrimaryPart"],
            StateKind::Camera => &["CameraSubject"],
            _ => &[],
        }
    }
}

/// Where instances of a class may be parented.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Containment {
    /// Under any parent, or none.
    Anywhere,
    /// Never under a parent: the class is a root.
    RootOnly,
    /// Only under instances of the listed classes (or under no parent).
    Within(Vec<ClassId>),
}

/// The description of one class. Build with [`ClassDescriptor::new`] and the builder methods,
/// then register it with [`ClassRegistry::register`].
#[derive(Clone, Debug)]
pub struct ClassDescriptor {
    name: Arc<str>,
    state: StateKind,
    /// What a new instance starts with: the class name, no attributes, the kind's default
    /// state. Nodes still at these defaults read them from here instead of holding a copy.
    defaults: NodeData,
    families: FamilySet,
    containment: Containment,
    pending_parents: Vec<String>,
    world_container: bool,
    service: bool,
    collision: bool,
    animation: bool,
    part_log: bool,
}

impl ClassDescriptor {
    /// A class with the given name and state kind, placeable anywhere, in no family.
    pub fn new(name: &str, state: StateKind) -> Self {
        let name: Arc<str> = Arc::from(name);
        Self {
            defaults: NodeData {
                name: name.clone(),
                attributes: Attributes::default(),
                state: BuiltinState::default_for(state),
            },
            name,
            state,
            families: FamilySet::EMPTY,
            containment: Containment::Anywhere,
            pending_parents: Vec::new(),
            world_container: false,
            service: false,
            collision: false,
            animation: false,
            part_log: false,
        }
    }

    /// Adds the class to a family.
    #[must_use]
    pub fn family(mut self, family: FamilyId) -> Self {
        self.families = self.families.with(family);
        self
    }

    /// Restricts parents to the named classes (resolved when the class is registered).
    #[must_use]
    pub fn parents(mut self, classes: &[&str]) -> Self {
        self.pending_parents = classes.iter().map(|c| (*c).to_owned()).collect();
        self.containment = Containment::Within(Vec::new());
        self
    }

    /// Makes the class a root that can never have a parent.
    #[must_use]
    pub fn root_only(mut self) -> Self {
        self.pending_parents.clear();
        self.containment = Containment::RootOnly;
        self
    }

    /// Marks the class as a world container: descendants are in the world.
    #[must_use]
    pub fn world_container(mut self) -> Self {
        self.world_container = true;
        self
    }

    /// Marks the class as a service: instances are created with their parent locked.
    #[must_use]
    pub fn service(mut self) -> Self {
        self.service = true;
        self
    }

    /// Writes to instances of this class in the world advance the collision revision.
    #[must_use]
    pub fn collision(mut self) -> Self {
        self.collision = true;
        self
    }

    /// Writes to instances of this class, and their creation, destruction and reparenting,
    /// advance the animation revision.
    #[must_use]
    pub fn animation(mut self) -> Self {
        self.animation = true;
        self
    }

    /// Instances of this class are recorded in the part-write log while in the world.
    #[must_use]
    pub fn part_log(mut self) -> Self {
        self.part_log = true;
        self
    }

    /// The class name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The class name as a shared string (new instances take it as their name).
    pub fn shared_name(&self) -> &Arc<str> {
        &self.name
    }

    /// The name, attributes and state a new instance of this class starts with.
    pub(crate) fn default_data(&self) -> &NodeData {
        &self.defaults
    }

    /// The built-in state kind.
    pub fn state_kind(&self) -> StateKind {
        self.state
    }

    /// The families the class belongs to.
    pub fn families(&self) -> FamilySet {
        self.families
    }

    /// Where instances may be parented.
    pub fn containment(&self) -> &Containment {
        &self.containment
    }

    /// Whether the class is a world container.
    pub fn is_world_container(&self) -> bool {
        self.world_container
    }

    /// Whether instances are created with their parent locked.
    pub fn is_service(&self) -> bool {
        self.service
    }

    /// Whether writes advance the collision revision.
    pub fn affects_collision(&self) -> bool {
        self.collision
    }

    /// Whether writes, creation, destruction and reparenting advance the animation revision.
    pub fn affects_animation(&self) -> bool {
        self.animation
    }

    /// Whether in-world instances are recorded in the part-write log.
    pub fn logs_part_writes(&self) -> bool {
        self.part_log
    }

    /// The names of the built-in reference fields.
    pub fn reference_fields(&self) -> &'static [&'static str] {
        self.state.reference_fields()
    }

    /// Whether an instance of this class may be placed under an instance of `parent`.
    pub fn allows_parent(&self, parent: ClassId) -> bool {
        match &self.containment {
            Containment::Anywhere => true,
            Containment::RootOnly => false,
            Containment::Within(classes) => classes.contains(&parent),
        }
    }
}

/// The registered classes and families.
#[derive(Clone, Debug)]
pub struct ClassRegistry {
    classes: Vec<ClassDescriptor>,
    by_name: HashMap<Arc<str>, ClassId>,
    families: Vec<Arc<str>>,
}

impl ClassRegistry {
    /// A registry with no classes and the standard families.
    pub fn empty() -> Self {
        let families = [
            "parts",
            "lights",
            "sounds",
            "cameras",
            "gui",
            "definitions",
            "animations",
        ]
        .into_iter()
        .map(Arc::from)
        .collect();
        Self {
            classes: Vec::new(),
            by_name: HashMap::new(),
            families,
        }
    }

    /// The standard classes, with the ids of the `ClassId` constants: enough for a Roblox-like
    /// scene (a `DataModel` root, a `Workspace` world, folders, models, parts, lights, sounds,
    /// cameras, a GUI layer and element, component definitions, animations) and a plain `Entity`
    /// for pure entity-component use.
    pub fn standard() -> Self {
        let mut registry = Self::empty();
        let standard = [
            ClassDescriptor::new("DataModel", StateKind::Plain)
                .root_only()
                .service(),
            ClassDescriptor::new("Workspace", StateKind::Plain)
                .parents(&["DataModel"])
                .world_container()
                .service(),
            ClassDescriptor::new("Folder", StateKind::Plain),
            ClassDescriptor::new("Model", StateKind::Model)
                .family(FamilyId::PARTS)
                .part_log(),
            ClassDescriptor::new("Part", StateKind::Part)
                .family(FamilyId::PARTS)
                .collision()
                .part_log(),
            ClassDescriptor::new("PointLight", StateKind::Light)
                .family(FamilyId::LIGHTS)
                .parents(&["Part"]),
            ClassDescriptor::new("SpotLight", StateKind::Light)
                .family(FamilyId::LIGHTS)
                .parents(&["Part"]),
            ClassDescriptor::new("Sound", StateKind::Sound).family(FamilyId::SOUNDS),
            ClassDescriptor::new("Camera", StateKind::Camera).family(FamilyId::CAMERAS),
            ClassDescriptor::new("ScreenGui", StateKind::GuiLayer).family(FamilyId::GUI),
            ClassDescriptor::new("Frame", StateKind::GuiElement).family(FamilyId::GUI),
            ClassDescriptor::new("ComponentDefinition", StateKind::ComponentDefinition)
                .family(FamilyId::DEFINITIONS),
            ClassDescriptor::new("Entity", StateKind::Plain),
            ClassDescriptor::new("Animation", StateKind::Animation)
                .family(FamilyId::ANIMATIONS)
                .animation(),
        ];
        for descriptor in standard {
            // The standard set is fixed and valid: names are unique and containment names
            // refer to classes registered earlier in the list.
            let registered = registry.register(descriptor);
            debug_assert!(registered.is_ok(), "standard class set is consistent");
        }
        registry
    }

    /// Registers a class, resolving its containment names.
    ///
    /// # Errors
    ///
    /// Fails on a duplicate name, an unknown parent class name, or when the registry is full.
    pub fn register(&mut self, mut descriptor: ClassDescriptor) -> Result<ClassId, ArenaError> {
        if self.by_name.contains_key(descriptor.name()) {
            return Err(ArenaError::DuplicateClass(descriptor.name().to_owned()));
        }
        let id = u16::try_from(self.classes.len())
            .map(ClassId)
            .map_err(|_| ArenaError::RegistryFull)?;
        if matches!(descriptor.containment, Containment::Within(_)) {
            let mut resolved = Vec::with_capacity(descriptor.pending_parents.len());
            for name in &descriptor.pending_parents {
                let parent = if **name == *descriptor.name {
                    id
                } else {
                    self.class_id(name)
                        .ok_or_else(|| ArenaError::UnknownClass(name.clone()))?
                };
                resolved.push(parent);
            }
            descriptor.containment = Containment::Within(resolved);
        }
        descriptor.pending_parents = Vec::new();
        self.by_name.insert(descriptor.name.clone(), id);
        self.classes.push(descriptor);
        Ok(id)
    }

    /// Registers a family by name, or returns the existing one.
    ///
    /// # Errors
    ///
    /// [`ArenaError::RegistryFull`] when the name is new and the registry has no room left.
    pub fn register_family(&mut self, name: &str) -> Result<FamilyId, ArenaError> {
        if let Some(existing) = self.family_id(name) {
            return Ok(existing);
        }
        if self.families.len() >= FamilyId::MAX {
            return Err(ArenaError::RegistryFull);
        }
        self.families.push(Arc::from(name));
        Ok(FamilyId((self.families.len() - 1) as u8))
    }

    /// Looks up a class by name.
    pub fn class_id(&self, name: &str) -> Option<ClassId> {
        self.by_name.get(name).copied()
    }

    /// The descriptor of a class. Every `ClassId` a registry hands out is valid for it; an id
    /// from another registry may not be, hence the `Option`.
    pub fn get(&self, class: ClassId) -> Option<&ClassDescriptor> {
        self.classes.get(class.index())
    }

    /// Looks up a family by name.
    pub fn family_id(&self, name: &str) -> Option<FamilyId> {
        self.families
            .iter()
            .position(|f| **f == *name)
            .map(|i| FamilyId(i as u8))
    }

    /// The name of a family.
    pub fn family_name(&self, family: FamilyId) -> Option<&str> {
        self.families.get(family.index()).map(|f| &**f)
    }

    /// How many families are registered.
    pub fn family_count(&self) -> usize {
        self.families.len()
    }

    /// How many classes are registered.
    pub fn len(&self) -> usize {
        self.classes.len()
    }

    /// Whether no class is registered.
    pub fn is_empty(&self) -> bool {
        self.classes.is_empty()
    }

    /// All classes with their ids, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (ClassId, &ClassDescriptor)> {
        self.classes
            .iter()
            .enumerate()
            .map(|(i, c)| (ClassId(i as u16), c))
    }
}

impl Default for ClassRegistry {
    fn default() -> Self {
        Self::standard()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_ids_match_constants() {
        let registry = ClassRegistry::standard();
        let expected = [
            (ClassId::DATA_MODEL, "DataModel"),
            (ClassId::WORKSPACE, "Workspace"),
            (ClassId::FOLDER, "Folder"),
            (ClassId::MODEL, "Model"),
            (ClassId::PART, "Part"),
            (ClassId::POINT_LIGHT, "PointLight"),
            (ClassId::SPOT_LIGHT, "SpotLight"),
            (ClassId::SOUND, "Sound"),
            (ClassId::CAMERA, "Camera"),
            (ClassId::SCREEN_GUI, "ScreenGui"),
            (ClassId::FRAME, "Frame"),
            (ClassId::COMPONENT_DEFINITION, "ComponentDefinition"),
            (ClassId::ENTITY, "Entity"),
            (ClassId::ANIMATION, "Animation"),
        ];
        assert_eq!(registry.len(), expected.len());
        for (id, name) in expected {
            assert_eq!(registry.class_id(name), Some(id), "{name}");
            assert_eq!(registry.get(id).map(ClassDescriptor::name), Some(name));
        }
        for (family, name) in [
            (FamilyId::PARTS, "parts"),
            (FamilyId::LIGHTS, "lights"),
            (FamilyId::SOUNDS, "sounds"),
            (FamilyId::CAMERAS, "cameras"),
            (FamilyId::GUI, "gui"),
            (FamilyId::DEFINITIONS, "definitions"),
            (FamilyId::ANIMATIONS, "animations"),
        ] {
            assert_eq!(registry.family_id(name), Some(family));
        }
    }

    #[test]
    fn containment_rules_of_the_standard_set() {
        let registry = ClassRegistry::standard();
        let class = |id| registry.get(id).unwrap();
        assert!(!class(ClassId::DATA_MODEL).allows_parent(ClassId::FOLDER));
        assert!(class(ClassId::WORKSPACE).allows_parent(ClassId::DATA_MODEL));
        assert!(!class(ClassId::WORKSPACE).allows_parent(ClassId::FOLDER));
        assert!(class(ClassId::POINT_LIGHT).allows_parent(ClassId::PART));
        assert!(!class(ClassId::POINT_LIGHT).allows_parent(ClassId::FOLDER));
        assert!(class(ClassId::FOLDER).allows_parent(ClassId::PART));
    }

    #[test]
    fn registering_integrator_classes() {
        let mut registry = ClassRegistry::standard();
        let vehicles = registry.register_family("vehicles").unwrap();
        assert_eq!(registry.register_family("vehicles").unwrap(), vehicles);
        let seat = registry
            .register(
                ClassDescriptor::new("Seat", StateKind::Part)
                    .family(FamilyId::PARTS)
                    .family(vehicles)
                    .parents(&["Model", "Seat"]),
            )
            .unwrap();
        let descriptor = registry.get(seat).unwrap();
        assert!(descriptor.allows_parent(ClassId::MODEL));
        assert!(descriptor.allows_parent(seat));
        assert!(!descriptor.allows_parent(ClassId::FOLDER));
        assert!(descriptor.families().contains(vehicles));

        assert!(matches!(
            registry.register(ClassDescriptor::new("Seat", StateKind::Plain)),
            Err(ArenaError::DuplicateClass(_))
        ));
        assert!(matches!(
            registry.register(ClassDescriptor::new("Wheel", StateKind::Plain).parents(&["Axle"])),
            Err(ArenaError::UnknownClass(_))
        ));
        assert_eq!(
            registry.class_id("Wheel"),
            None,
            "failed registration leaves no trace"
        );
    }

    #[test]
    fn family_set_operations() {
        let set = FamilySet::EMPTY.with(FamilyId::LIGHTS).with(FamilyId::GUI);
        assert!(set.contains(FamilyId::LIGHTS));
        assert!(!set.contains(FamilyId::PARTS));
        assert_eq!(
            set.iter().collect::<Vec<_>>(),
            vec![FamilyId::LIGHTS, FamilyId::GUI]
        );
        let edges = FamilySet::EMPTY.with(FamilyId(63)).with(FamilyId(0));
        assert_eq!(
            edges.iter().collect::<Vec<_>>(),
            vec![FamilyId(0), FamilyId(63)]
        );
        assert_eq!(FamilySet::EMPTY.iter().count(), 0);
    }
}
