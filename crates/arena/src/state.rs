//! Typed per-instance data: attribute values and the built-in state each class kind carries.
//!
//! Invariant: a node's `BuiltinState` variant always matches its class's `StateKind`. The ways
//! to replace a whole state (`Arena::set_state`, the specialised setters, graft) check the kind;
//! generic mutable access ([`NodeMut`]) reaches only the fields of the struct the variant holds
//! ([`StateMut`]), never the variant itself. Every instance reference inside state or attributes
//! is reachable through [`NodeData::for_each_reference_mut`], which is what clone and graft rely
//! on to remap them.

use std::sync::Arc;

use crate::class::StateKind;
use crate::id::InstanceId;
use crate::math::{Color3, Transform, UDim2, Vec3};

/// A typed attribute value.
#[derive(Clone, Debug, PartialEq)]
pub enum AttrValue {
    /// A boolean.
    Bool(bool),
    /// A double-precision number.
    Number(f64),
    /// A signed integer.
    Integer(i64),
    /// Text.
    Text(Arc<str>),
    /// A vector.
    Vector(Vec3),
    /// A colour.
    Color(Color3),
    /// A rigid transform.
    Transform(Transform),
    /// A reference to another instance; `None` once cleared.
    Reference(Option<InstanceId>),
}

/// A node's attributes: named typed values, kept sorted by name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Attributes(Vec<(Arc<str>, AttrValue)>);

impl Attributes {
    /// The value of an attribute.
    pub fn get(&self, name: &str) -> Option<&AttrValue> {
        self.position(name).ok().map(|i| &self.0[i].1)
    }

    /// Sets (`Some`) or removes (`None`) an attribute. Returns whether anything changed; an
    /// equal value changes nothing.
    pub fn set(&mut self, name: &str, value: Option<AttrValue>) -> bool {
        match (self.position(name), value) {
            (Ok(i), Some(value)) => {
                if self.0[i].1 == value {
                    return false;
                }
                self.0[i].1 = value;
                true
            }
            (Ok(i), None) => {
                self.0.remove(i);
                true
            }
            (Err(i), Some(value)) => {
                self.0.insert(i, (Arc::from(name), value));
                true
            }
            (Err(_), None) => false,
        }
    }

    /// Whether setting `name` to `value` would change anything.
    pub fn would_change(&self, name: &str, value: Option<&AttrValue>) -> bool {
        self.get(name) != value
    }

    /// The attributes in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &AttrValue)> {
        self.0.iter().map(|(k, v)| (&**k, v))
    }

    /// How many attributes are set.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether no attribute is set.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn position(&self, name: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| (**k).cmp(name))
    }

    fn values_mut(&mut self) -> impl Iterator<Item = &mut AttrValue> {
        self.0.iter_mut().map(|(_, v)| v)
    }
}

/// A part's physical state.
#[derive(Clone, Debug, PartialEq)]
pub struct PartState {
    /// Placement in the world.
    pub transform: Transform,
    /// Extent along each axis.
    pub size: Vec3,
    /// Whether physics leaves it in place.
    pub anchored: bool,
    /// Whether it collides.
    pub can_collide: bool,
    /// Surface colour.
    pub color: Color3,
    /// 0 opaque, 1 invisible.
    pub transparency: f32,
}

impl Default for PartState {
    fn default() -> Self {
        Self {
            transform: Transform::IDENTITY,
            size: Vec3::new(4.0, 1.0, 2.0),
            anchored: false,
            can_collide: true,
            color: Color3::GREY,
            transparency: 0.0,
        }
    }
}

/// A model's state.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelState {
    /// The part the model pivots around.
    pub primary_part: Option<InstanceId>,
    /// The model's pivot.
    pub pivot: Transform,
}

/// A light's state.
#[derive(Clone, Debug, PartialEq)]
pub struct LightState {
    /// Intensity.
    pub brightness: f32,
    /// Reach in studs.
    pub range: f32,
    /// Colour.
    pub color: Color3,
    /// On or off.
    pub enabled: bool,
}

impl Default for LightState {
    fn default() -> Self {
        Self {
            brightness: 1.0,
            range: 8.0,
            color: Color3::WHITE,
            enabled: true,
        }
    }
}

/// A sound's state.
#[derive(Clone, Debug, PartialEq)]
pub struct SoundState {
    /// The audio asset.
    pub sound_id: Arc<str>,
    /// Volume, 0 to 10.
    pub volume: f32,
    /// Whether it is playing.
    pub playing: bool,
    /// Whether it loops.
    pub looped: bool,
}

impl Default for SoundState {
    fn default() -> Self {
        Self {
            sound_id: Arc::from(""),
            volume: 0.5,
            playing: false,
            looped: false,
        }
    }
}

/// A camera's state.
#[derive(Clone, Debug, PartialEq)]
pub struct CameraState {
    /// Placement.
    pub transform: Transform,
    /// Vertical field of view in degrees.
    pub field_of_view: f32,
    /// The instance the camera follows.
    pub subject: Option<InstanceId>,
}

impl Default for CameraState {
    fn default() -> Self {
        Self {
            transform: Transform::IDENTITY,
            field_of_view: 70.0,
            subject: None,
        }
    }
}

/// A GUI layer's state.
#[derive(Clone, Debug, PartialEq)]
pub struct GuiLayerState {
    /// Whether the layer draws.
    pub enabled: bool,
    /// Draw order among layers.
    pub display_order: i32,
}

impl Default for GuiLayerState {
    fn default() -> Self {
        Self {
            enabled: true,
            display_order: 0,
        }
    }
}

/// A GUI element's state.
#[derive(Clone, Debug, PartialEq)]
pub struct GuiElementState {
    /// Position in the parent.
    pub position: UDim2,
    /// Size relative to the parent.
    pub size: UDim2,
    /// Whether it draws.
    pub visible: bool,
    /// Draw order among siblings.
    pub z_index: i32,
}

impl Default for GuiElementState {
    fn default() -> Self {
        Self {
            position: UDim2::default(),
            size: UDim2::new(0.0, 100.0, 0.0, 100.0),
            visible: true,
            z_index: 1,
        }
    }
}

/// Authored animation data.
#[derive(Clone, Debug, PartialEq)]
pub struct AnimationState {
    /// The animation asset.
    pub animation_id: Arc<str>,
    /// Whether it loops.
    pub looped: bool,
    /// Playback speed.
    pub speed: f32,
}

impl Default for AnimationState {
    fn default() -> Self {
        Self {
            animation_id: Arc::from(""),
            looped: false,
            speed: 1.0,
        }
    }
}

/// The built-in state of one instance; the variant is fixed by its class's `StateKind`.
#[derive(Clone, Debug, PartialEq)]
pub enum BuiltinState {
    /// No built-in state.
    Plain,
    /// A part (boxed: the largest state, kept out of line so every node stays small).
    Part(Box<PartState>),
    /// A model.
    Model(Box<ModelState>),
    /// A light.
    Light(LightState),
    /// A sound.
    Sound(SoundState),
    /// A camera.
    Camera(Box<CameraState>),
    /// A GUI layer.
    GuiLayer(GuiLayerState),
    /// A GUI element.
    GuiElement(Box<GuiElementState>),
    /// A component definition: its Luau source.
    ComponentDefinition {
        /// The Luau source text.
        source: Arc<str>,
    },
    /// Animation data.
    Animation(AnimationState),
}

impl BuiltinState {
    /// The default state of a kind.
    pub fn default_for(kind: StateKind) -> Self {
        match kind {
            StateKind::Plain => Self::Plain,
            StateKind::Part => Self::Part(Box::default()),
            StateKind::Model => Self::Model(Box::default()),
            StateKind::Light => Self::Light(LightState::default()),
            StateKind::Sound => Self::Sound(SoundState::default()),
            StateKind::Camera => Self::Camera(Box::default()),
            StateKind::GuiLayer => Self::GuiLayer(GuiLayerState::default()),
            StateKind::GuiElement => Self::GuiElement(Box::default()),
            StateKind::ComponentDefinition => Self::ComponentDefinition {
                source: Arc::from(""),
            },
            StateKind::Animation => Self::Animation(AnimationState::default()),
        }
    }

    /// The kind of this state.
    pub fn kind(&self) -> StateKind {
        match self {
            Self::Plain => StateKind::Plain,
            Self::Part(_) => StateKind::Part,
            Self::Model(_) => StateKind::Model,
            Self::Light(_) => StateKind::Light,
            Self::Sound(_) => StateKind::Sound,
            Self::Camera(_) => StateKind::Camera,
            Self::GuiLayer(_) => StateKind::GuiLayer,
            Self::GuiElement(_) => StateKind::GuiElement,
            Self::ComponentDefinition { .. } => StateKind::ComponentDefinition,
            Self::Animation(_) => StateKind::Animation,
        }
    }

    /// The built-in reference fields with their current targets.
    pub fn references(&self) -> Vec<(&'static str, Option<InstanceId>)> {
        match self {
            Self::Model(model) => vec![("PrimaryPart", model.primary_part)],
            Self::Camera(camera) => vec![("CameraSubject", camera.subject)],
            _ => Vec::new(),
        }
    }

    fn for_each_reference_mut(&mut self, mut f: impl FnMut(&mut Option<InstanceId>)) {
        match self {
            Self::Model(model) => f(&mut model.primary_part),
            Self::Camera(camera) => f(&mut camera.subject),
            _ => {}
        }
    }
}

/// A state struct that specialised setters address: the one `BuiltinState` variant holding it,
/// and the `StateKind` that variant stands for, named together once.
pub(crate) trait StateVariant {
    /// The kind whose variant holds this struct.
    const KIND: StateKind;
    /// The struct, when `state` is its variant.
    fn of(state: &BuiltinState) -> Option<&Self>;
    /// The struct for writing, when `state` is its variant.
    fn of_mut(state: &mut BuiltinState) -> Option<&mut Self>;
}

impl StateVariant for PartState {
    const KIND: StateKind = StateKind::Part;
    fn of(state: &BuiltinState) -> Option<&Self> {
        match state {
            BuiltinState::Part(part) => Some(part),
            _ => None,
        }
    }
    fn of_mut(state: &mut BuiltinState) -> Option<&mut Self> {
        match state {
            BuiltinState::Part(part) => Some(part),
            _ => None,
        }
    }
}

impl StateVariant for LightState {
    const KIND: StateKind = StateKind::Light;
    fn of(state: &BuiltinState) -> Option<&Self> {
        match state {
            BuiltinState::Light(light) => Some(light),
            _ => None,
        }
    }
    fn of_mut(state: &mut BuiltinState) -> Option<&mut Self> {
        match state {
            BuiltinState::Light(light) => Some(light),
            _ => None,
        }
    }
}

/// The data of a node: its name, attributes and built-in state. Nodes hand it out by shared
/// reference ([`crate::Node::data`]); writes go through [`NodeMut`], which keeps the state's
/// variant.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeData {
    /// Display name. Neither unique nor an identity.
    pub name: Arc<str>,
    /// Named typed values.
    pub attributes: Attributes,
    /// Built-in state; keep the variant matching the class.
    pub state: BuiltinState,
}

impl NodeData {
    /// The instances referenced from built-in state and attributes (each reference once).
    pub fn reference_targets(&self) -> impl Iterator<Item = InstanceId> + '_ {
        self.state
            .references()
            .into_iter()
            .filter_map(|(_, target)| target)
            .chain(self.attributes.iter().filter_map(|(_, value)| match value {
                AttrValue::Reference(target) => *target,
                _ => None,
            }))
    }

    /// Visits every instance reference in built-in state and attributes.
    pub fn for_each_reference_mut(&mut self, mut f: impl FnMut(&mut Option<InstanceId>)) {
        self.state.for_each_reference_mut(&mut f);
        for value in self.attributes.values_mut() {
            if let AttrValue::Reference(target) = value {
                f(target);
            }
        }
    }
}

/// Generic mutable access to one live node, as [`crate::Arena::node_mut`] hands it out: the
/// name, the attributes, and the fields of the state struct the node's class carries.
///
/// The built-in state cannot be replaced as a whole through it, so the node keeps the state
/// kind of its class and the specialised setters always find the struct they write:
///
/// ```compile_fail
/// use strata_arena::{Arena, BuiltinState, ClassId};
///
/// let mut arena = Arena::standard();
/// let part = arena.create(ClassId::PART, None).unwrap();
/// let mut node = arena.node_mut(part).unwrap();
/// // There is no `&mut BuiltinState` to be had: this does not compile.
/// let state: &mut BuiltinState = node.state_mut();
/// *state = BuiltinState::Plain;
/// ```
#[derive(Debug)]
pub struct NodeMut<'a> {
    data: &'a mut NodeData,
}

impl<'a> NodeMut<'a> {
    pub(crate) fn new(data: &'a mut NodeData) -> Self {
        Self { data }
    }

    /// The display name.
    pub fn name(&self) -> &str {
        &self.data.name
    }

    /// The display name, for writing.
    pub fn name_mut(&mut self) -> &mut Arc<str> {
        &mut self.data.name
    }

    /// The attributes.
    pub fn attributes(&self) -> &Attributes {
        &self.data.attributes
    }

    /// The attributes, for writing.
    pub fn attributes_mut(&mut self) -> &mut Attributes {
        &mut self.data.attributes
    }

    /// The built-in state.
    pub fn state(&self) -> &BuiltinState {
        &self.data.state
    }

    /// The fields of the built-in state struct, for writing; the variant stays as it is.
    pub fn state_mut(&mut self) -> StateMut<'_> {
        self.data.state.fields_mut()
    }
}

/// Mutable access to the struct inside one node's built-in state, by kind. Assigning to a
/// `StateMut` changes nothing in the node; writing through the reference it holds does.
#[derive(Debug)]
pub enum StateMut<'a> {
    /// No built-in state.
    Plain,
    /// A part.
    Part(&'a mut PartState),
    /// A model.
    Model(&'a mut ModelState),
    /// A light.
    Light(&'a mut LightState),
    /// A sound.
    Sound(&'a mut SoundState),
    /// A camera.
    Camera(&'a mut CameraState),
    /// A GUI layer.
    GuiLayer(&'a mut GuiLayerState),
    /// A GUI element.
    GuiElement(&'a mut GuiElementState),
    /// A component definition's Luau source.
    ComponentDefinition(&'a mut Arc<str>),
    /// Animation data.
    Animation(&'a mut AnimationState),
}

impl BuiltinState {
    /// The struct this state holds, for writing its fields without changing the variant.
    fn fields_mut(&mut self) -> StateMut<'_> {
        match self {
            Self::Plain => StateMut::Plain,
            Self::Part(part) => StateMut::Part(part),
            Self::Model(model) => StateMut::Model(model),
            Self::Light(light) => StateMut::Light(light),
            Self::Sound(sound) => StateMut::Sound(sound),
            Self::Camera(camera) => StateMut::Camera(camera),
            Self::GuiLayer(layer) => StateMut::GuiLayer(layer),
            Self::GuiElement(element) => StateMut::GuiElement(element),
            Self::ComponentDefinition { source } => StateMut::ComponentDefinition(source),
            Self::Animation(animation) => StateMut::Animation(animation),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_stay_sorted_and_skip_equal_writes() {
        let mut attrs = Attributes::default();
        assert!(attrs.set("b", Some(AttrValue::Integer(2))));
        assert!(attrs.set("a", Some(AttrValue::Bool(true))));
        assert!(!attrs.set("a", Some(AttrValue::Bool(true))));
        assert!(attrs.set("a", Some(AttrValue::Bool(false))));
        assert_eq!(
            attrs.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            vec!["a", "b"]
        );
        assert!(attrs.set("a", None));
        assert!(!attrs.set("a", None));
        assert_eq!(attrs.len(), 1);
    }

    #[test]
    fn default_state_matches_kind() {
        for kind in [
            StateKind::Plain,
            StateKind::Part,
            StateKind::Model,
            StateKind::Light,
            StateKind::Sound,
            StateKind::Camera,
            StateKind::GuiLayer,
            StateKind::GuiElement,
            StateKind::ComponentDefinition,
            StateKind::Animation,
        ] {
            assert_eq!(BuiltinState::default_for(kind).kind(), kind);
        }
    }

    #[test]
    fn reference_visitor_reaches_state_and_attributes() {
        let a = InstanceId::new(1);
        let b = InstanceId::new(2);
        let mut data = NodeData {
            name: Arc::from("M"),
            attributes: Attributes::default(),
            state: BuiltinState::Model(Box::new(ModelState {
                primary_part: a,
                pivot: Transform::IDENTITY,
            })),
        };
        data.attributes.set("target", Some(AttrValue::Reference(b)));
        data.attributes.set("hp", Some(AttrValue::Number(3.0)));
        let mut seen = Vec::new();
        data.for_each_reference_mut(|r| {
            seen.push(*r);
            *r = None;
        });
        assert_eq!(seen, vec![a, b]);
        assert_eq!(data.state.references(), vec![("PrimaryPart", None)]);
        assert_eq!(
            data.attributes.get("target"),
            Some(&AttrValue::Reference(None))
        );
    }
}
