//! Component definitions: field types, defaults, former names, class restrictions, `requires`
//! dependents, the observed flag and reference destruction policies.
//!
//! Invariant: an installed definition (`InstalledDef`) has been validated: field names are
//! unique, former names are unambiguous (none is a current field name, no two fields share one:
//! `check_former_names`), every default conforms to its field's type, enum defaults name a
//! variant, map keys are text, integer, boolean or enum, and destruction policies sit only on
//! fields that can hold references. A definition is immutable once installed; redefinition
//! installs a new one with a new allocation number. Allocation numbers come from one counter
//! for the whole process, so no two installs in any two stores share one.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use hashbrown::{HashMap, HashSet};
use strata_arena::{ClassId, ClassRegistry, InstanceId, Transform, Vec3};

use crate::column::Scalar;
use crate::error::StoreError;
use crate::value::{ListValue, Value};

/// A dense index identifying an installed component.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct ComponentId(pub(crate) u32);

impl ComponentId {
    /// The dense index.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// The position of a field in its component's definition.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct FieldId(pub(crate) u16);

impl FieldId {
    /// The position as an index.
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// The field at a position (checked against the definition when used).
    pub const fn from_index(index: u16) -> Self {
        Self(index)
    }
}

/// The type of a field.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldType {
    /// `f64`.
    Number,
    /// `i64`.
    Integer,
    /// `bool`.
    Boolean,
    /// Shared text.
    Text,
    /// One of named variants, stored as its index.
    Enum(Arc<[Arc<str>]>),
    /// Three `f32` components (the arena's `Vec3`).
    Vector,
    /// A 4×4 `f32` affine transform (the arena's `Transform`).
    Transform,
    /// An optional instance reference.
    Reference,
    /// A list of elements of one type.
    List(Box<FieldType>),
    /// A map from keys (text, integer, boolean or enum) to values.
    Map(Box<FieldType>, Box<FieldType>),
    /// Named fields, each with a default.
    Struct(Arc<[StructField]>),
    /// A value of the inner type, or nothing.
    Optional(Box<FieldType>),
    /// Raw bytes.
    Buffer,
}

impl FieldType {
    /// The default value of the type when a definition gives none.
    pub fn zero(&self) -> Value {
        match self {
            FieldType::Number => Value::Number(0.0),
            FieldType::Integer => Value::Integer(0),
            FieldType::Boolean => Value::Boolean(false),
            FieldType::Text => Value::Text(Arc::from("")),
            FieldType::Enum(_) => Value::Enum(0),
            FieldType::Vector => Value::Vector(Vec3::ZERO),
            FieldType::Transform => Value::Transform(Box::new(Transform::IDENTITY)),
            FieldType::Reference => Value::Reference(None),
            FieldType::List(_) => Value::List(ListValue::EMPTY),
            FieldType::Map(_, _) => Value::Map(Arc::default()),
            FieldType::Struct(fields) => {
                Value::Struct(fields.iter().map(|f| f.default.clone()).collect())
            }
            FieldType::Optional(_) => Value::Optional(None),
            FieldType::Buffer => Value::Buffer(Arc::from(Vec::new())),
        }
    }

    /// A short name of the type, for reports and errors.
    pub fn name(&self) -> String {
        match self {
            FieldType::Number => "number".into(),
            FieldType::Integer => "integer".into(),
            FieldType::Boolean => "boolean".into(),
            FieldType::Text => "text".into(),
            FieldType::Enum(variants) => format!("enum({})", variants.join("|")),
            FieldType::Vector => "vector".into(),
            FieldType::Transform => "transform".into(),
            FieldType::Reference => "ref".into(),
            FieldType::List(e) => format!("list({})", e.name()),
            FieldType::Map(k, v) => format!("map({}, {})", k.name(), v.name()),
            FieldType::Struct(fields) => format!(
                "struct{{{}}}",
                fields
                    .iter()
                    .map(|f| format!("{}: {}", f.name, f.ty.name()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            FieldType::Optional(inner) => format!("optional({})", inner.name()),
            FieldType::Buffer => "buffer".into(),
        }
    }

    /// Whether values of this type can contain instance references.
    pub fn can_reference(&self) -> bool {
        match self {
            FieldType::Reference => true,
            FieldType::List(e) | FieldType::Optional(e) => e.can_reference(),
            FieldType::Map(_, v) => v.can_reference(),
            FieldType::Struct(fields) => fields.iter().any(|f| f.ty.can_reference()),
            _ => false,
        }
    }

    fn is_map_key(&self) -> bool {
        matches!(
            self,
            FieldType::Text | FieldType::Integer | FieldType::Boolean | FieldType::Enum(_)
        )
    }
}

/// One field of a struct field type.
#[derive(Clone, Debug, PartialEq)]
pub struct StructField {
    /// Field name.
    pub name: Arc<str>,
    /// Field type.
    pub ty: FieldType,
    /// Default value.
    pub default: Value,
}

/// What happens to a reference field when its target is destroyed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum RefPolicy {
    /// The reference is cleared (list fields drop the element).
    #[default]
    Clear,
    /// The holder loses the component, and every component that requires it.
    RemoveComponent,
    /// The holder instance is destroyed.
    DestroyHolder,
}

/// Makes the value a field starts with in each new row, in place of the field's fixed
/// default: called once per row created while the definition is installed (by
/// [`Store::add`](crate::Store::add), [`Store::insert`](crate::Store::insert),
/// [`Store::insert_many`](crate::Store::insert_many), a staged spawn's placement and the new
/// rows of a bulk set), in row order and before the row is visible, with the instance the row
/// is for. A factory with state (a counter, a generator) therefore advances once per row. A
/// value given for the field explicitly (an add's values, a bulk set's) is used instead, and
/// adoption and redefinition, which convert existing rows, fill fields with the fixed default.
/// Its values are checked like any write: one that does not fit the field refuses the whole
/// operation, with nothing added.
#[derive(Clone)]
pub struct DefaultFactory(Arc<dyn Fn(InstanceId) -> Value + Send + Sync>);

impl DefaultFactory {
    /// A factory from a function of the new row's instance.
    pub fn new(make: impl Fn(InstanceId) -> Value + Send + Sync + 'static) -> Self {
        Self(Arc::new(make))
    }

    /// The value for a new row of `id`.
    pub fn make(&self, id: InstanceId) -> Value {
        (self.0)(id)
    }
}

impl PartialEq for DefaultFactory {
    /// Two factories are equal when they are the same function.
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::fmt::Debug for DefaultFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DefaultFactory(..)")
    }
}

/// One field of a component definition.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldDef {
    /// Field name.
    pub name: Arc<str>,
    /// Field type.
    pub ty: FieldType,
    /// Value of the field in a new row.
    pub default: Value,
    /// Names the field had in earlier versions (used by adoption).
    pub former_names: Vec<Arc<str>>,
    /// What happens when a referenced instance is destroyed (reference-holding fields only).
    pub on_destroy: RefPolicy,
    /// Makes each new row's value in place of `default` (fields that hold no reference only).
    pub factory: Option<DefaultFactory>,
}

impl FieldDef {
    /// A field of any type with its default.
    pub fn new(name: &str, ty: FieldType, default: Value) -> Self {
        Self {
            name: Arc::from(name),
            ty,
            default,
            former_names: Vec::new(),
            on_destroy: RefPolicy::Clear,
            factory: None,
        }
    }

    /// Gives the field a [`DefaultFactory`]: each new row's value is `make(id)` rather than
    /// the fixed default, which conversions still use.
    #[must_use]
    pub fn with_factory(
        mut self,
        make: impl Fn(InstanceId) -> Value + Send + Sync + 'static,
    ) -> Self {
        self.factory = Some(DefaultFactory::new(make));
        self
    }

    /// A number field.
    pub fn number(name: &str, default: f64) -> Self {
        Self::new(name, FieldType::Number, Value::Number(default))
    }

    /// An integer field.
    pub fn integer(name: &str, default: i64) -> Self {
        Self::new(name, FieldType::Integer, Value::Integer(default))
    }

    /// A boolean field.
    pub fn boolean(name: &str, default: bool) -> Self {
        Self::new(name, FieldType::Boolean, Value::Boolean(default))
    }

    /// A text field.
    pub fn text(name: &str, default: &str) -> Self {
        Self::new(name, FieldType::Text, Value::Text(Arc::from(default)))
    }

    /// An enum field whose default is the variant named `default`.
    pub fn enumeration(name: &str, variants: &[&str], default: &str) -> Self {
        let index = variants
            .iter()
            .position(|v| *v == default)
            .unwrap_or(usize::MAX);
        Self::new(
            name,
            FieldType::Enum(variants.iter().map(|v| Arc::from(*v)).collect()),
            Value::Enum(u32::try_from(index).unwrap_or(u32::MAX)),
        )
    }

    /// A vector field.
    pub fn vector(name: &str, default: Vec3) -> Self {
        Self::new(name, FieldType::Vector, Value::Vector(default))
    }

    /// A transform field.
    pub fn transform(name: &str, default: Transform) -> Self {
        Self::new(
            name,
            FieldType::Transform,
            Value::Transform(Box::new(default)),
        )
    }

    /// A reference field, empty by default, with its destruction policy.
    pub fn reference(name: &str, on_destroy: RefPolicy) -> Self {
        let mut field = Self::new(name, FieldType::Reference, Value::Reference(None));
        field.on_destroy = on_destroy;
        field
    }

    /// A list field, empty by default.
    pub fn list(name: &str, element: FieldType) -> Self {
        Self::new(
            name,
            FieldType::List(Box::new(element)),
            Value::List(ListValue::EMPTY),
        )
    }

    /// A list of references with its destruction policy.
    pub fn reference_list(name: &str, on_destroy: RefPolicy) -> Self {
        let mut field = Self::list(name, FieldType::Reference);
        field.on_destroy = on_destroy;
        field
    }

    /// A map field, empty by default.
    pub fn map(name: &str, key: FieldType, value: FieldType) -> Self {
        Self::new(
            name,
            FieldType::Map(Box::new(key), Box::new(value)),
            Value::Map(Arc::default()),
        )
    }

    /// A struct field whose default is its members' defaults.
    pub fn structure(name: &str, members: Vec<StructField>) -> Self {
        let ty = FieldType::Struct(members.into());
        let default = ty.zero();
        Self::new(name, ty, default)
    }

    /// An optional field, empty by default.
    pub fn optional(name: &str, inner: FieldType) -> Self {
        Self::new(
            name,
            FieldType::Optional(Box::new(inner)),
            Value::Optional(None),
        )
    }

    /// A buffer field, empty by default.
    pub fn buffer(name: &str) -> Self {
        Self::new(
            name,
            FieldType::Buffer,
            Value::Buffer(Arc::from(Vec::new())),
        )
    }

    /// Records names the field had before.
    #[must_use]
    pub fn former_names(mut self, names: &[&str]) -> Self {
        self.former_names = names.iter().map(|n| Arc::from(*n)).collect();
        self
    }

    /// Sets the destruction policy (reference-holding fields only; checked at install).
    #[must_use]
    pub fn on_destroy(mut self, policy: RefPolicy) -> Self {
        self.on_destroy = policy;
        self
    }
}

/// A component definition, as a game or a downstream crate writes it.
#[derive(Clone, Debug, PartialEq)]
pub struct ComponentDef {
    /// Component name (for Luau definitions, the definition instance's name).
    pub name: Arc<str>,
    /// Schema version; saved rows remember it.
    pub version: u32,
    /// Fields, in order.
    pub fields: Vec<FieldDef>,
    /// Classes that may carry the component; `None` for any.
    pub classes: Option<Vec<Arc<str>>>,
    /// Components this one depends on: removing one of them removes this one too.
    pub requires: Vec<Arc<str>>,
    /// Whether changes queue events.
    pub observed: bool,
}

impl ComponentDef {
    /// An empty version-1 definition.
    pub fn new(name: &str) -> Self {
        Self {
            name: Arc::from(name),
            version: 1,
            fields: Vec::new(),
            classes: None,
            requires: Vec::new(),
            observed: false,
        }
    }

    /// Sets the version.
    #[must_use]
    pub fn version(mut self, version: u32) -> Self {
        self.version = version;
        self
    }

    /// Adds a field.
    #[must_use]
    pub fn field(mut self, field: FieldDef) -> Self {
        self.fields.push(field);
        self
    }

    /// Restricts the classes that may carry the component.
    #[must_use]
    pub fn classes(mut self, classes: &[&str]) -> Self {
        self.classes = Some(classes.iter().map(|c| Arc::from(*c)).collect());
        self
    }

    /// Declares components this one requires.
    #[must_use]
    pub fn requires(mut self, components: &[&str]) -> Self {
        self.requires = components.iter().map(|c| Arc::from(*c)).collect();
        self
    }

    /// Makes changes queue events.
    #[must_use]
    pub fn observed(mut self, observed: bool) -> Self {
        self.observed = observed;
        self
    }
}

/// The next definition allocation number; shared by every store in the process, so no two
/// installs anywhere get the same number.
static NEXT_ALLOCATION: AtomicU64 = AtomicU64::new(1);

/// A validated definition as the store holds it.
#[derive(Debug)]
pub struct InstalledDef {
    pub(crate) id: ComponentId,
    pub(crate) def: ComponentDef,
    pub(crate) allocation: u64,
    pub(crate) allowed: Option<Vec<ClassId>>,
    pub(crate) field_index: HashMap<Arc<str>, FieldId>,
    pub(crate) reference_fields: Vec<FieldId>,
    /// By field: whether it is a direct reference (a `Reference` field, not one nested in a
    /// compound value) cleared when its target is destroyed, the references a destruction
    /// clears in one pass over its holders.
    pub(crate) direct_clears: Vec<bool>,
    /// Each field's default as a one-row column, so new rows copy typed values.
    pub(crate) defaults: Vec<crate::column::Column>,
    /// The fields whose new rows take their values from a factory.
    factories: Vec<(FieldId, DefaultFactory)>,
}

impl InstalledDef {
    /// Validates a definition for component `id`; on success it takes a fresh allocation
    /// number.
    pub(crate) fn validate(
        def: ComponentDef,
        id: ComponentId,
        classes: &ClassRegistry,
    ) -> Result<Self, StoreError> {
        let invalid = |reason: String| StoreError::InvalidDefinition {
            component: def.name.to_string(),
            reason,
        };
        if def.fields.len() > usize::from(u16::MAX) {
            return Err(invalid(format!("{} fields is too many", def.fields.len())));
        }
        let mut field_index = HashMap::new();
        let mut reference_fields = Vec::new();
        for (i, field) in def.fields.iter().enumerate() {
            let fid = FieldId(i as u16);
            check_field(field).map_err(|r| invalid(format!("field `{}`: {r}", field.name)))?;
            if field.ty.can_reference() {
                reference_fields.push(fid);
            }
            if field_index.insert(field.name.clone(), fid).is_some() {
                return Err(invalid(format!("field `{}` is declared twice", field.name)));
            }
        }
        check_former_names(&def.fields).map_err(|conflict| StoreError::FormerNames {
            component: def.name.to_string(),
            conflict,
        })?;
        let allowed = match &def.classes {
            None => None,
            Some(names) => Some(
                names
                    .iter()
                    .map(|n| {
                        classes
                            .class_id(n)
                            .ok_or_else(|| invalid(format!("unknown class `{n}`")))
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            ),
        };
        let defaults = def
            .fields
            .iter()
            .map(|f| {
                let mut column = crate::column::Column::for_type(&f.ty);
                column.push(f.default.clone());
                column
            })
            .collect();
        let direct_clears = def
            .fields
            .iter()
            .map(|f| f.ty == FieldType::Reference && f.on_destroy == RefPolicy::Clear)
            .collect();
        let factories = def
            .fields
            .iter()
            .enumerate()
            .filter_map(|(i, f)| Some((FieldId(i as u16), f.factory.clone()?)))
            .collect();
        Ok(Self {
            id,
            def,
            allocation: NEXT_ALLOCATION.fetch_add(1, Ordering::Relaxed),
            allowed,
            field_index,
            reference_fields,
            direct_clears,
            defaults,
            factories,
        })
    }

    /// Whether any field takes new rows' values from a factory.
    pub(crate) fn has_factories(&self) -> bool {
        !self.factories.is_empty()
    }

    /// Runs every factory once for each new row of `ids` (in row order), except for fields in
    /// `given`, checking each value: per factory field, its values by row.
    pub(crate) fn make_defaults(
        &self,
        ids: &[InstanceId],
        given: &[FieldId],
    ) -> Result<Vec<(FieldId, Vec<Value>)>, StoreError> {
        let mut made = Vec::with_capacity(self.factories.len());
        for (field, factory) in &self.factories {
            if given.contains(field) {
                continue;
            }
            let mut values = Vec::with_capacity(ids.len());
            for id in ids {
                let value = factory.make(*id);
                self.check_value(*field, &value)?;
                values.push(value);
            }
            made.push((*field, values));
        }
        Ok(made)
    }

    /// The component's id.
    pub fn id(&self) -> ComponentId {
        self.id
    }

    /// The component's name.
    pub fn name(&self) -> &str {
        &self.def.name
    }

    /// The definition as written.
    pub fn def(&self) -> &ComponentDef {
        &self.def
    }

    /// The fields.
    pub fn fields(&self) -> &[FieldDef] {
        &self.def.fields
    }

    /// A field by id.
    #[inline]
    pub fn field(&self, field: FieldId) -> Option<&FieldDef> {
        self.def.fields.get(field.index())
    }

    /// A field's id by current name.
    pub fn field_id(&self, name: &str) -> Option<FieldId> {
        self.field_index.get(name).copied()
    }

    /// A field by id, or [`StoreError::FieldOutOfRange`] when the definition has no field there.
    ///
    /// # Errors
    ///
    /// [`StoreError::FieldOutOfRange`] for a position past the fields.
    #[inline]
    pub fn checked_field(&self, field: FieldId) -> Result<&FieldDef, StoreError> {
        match self.field(field) {
            Some(field_def) => Ok(field_def),
            None => Err(self.field_out_of_range(field)),
        }
    }

    /// The component's name, shared, for errors that name it.
    pub(crate) fn shared_name(&self) -> Arc<str> {
        self.def.name.clone()
    }

    /// A field's name, shared, for errors that name it (`?` for a position past the fields,
    /// which callers have checked).
    pub(crate) fn shared_field_name(&self, field: FieldId) -> Arc<str> {
        self.field(field)
            .map_or_else(|| Arc::from("?"), |f| f.name.clone())
    }

    #[cold]
    #[inline(never)]
    fn field_out_of_range(&self, field: FieldId) -> StoreError {
        StoreError::FieldOutOfRange {
            component: self.name().to_owned(),
            field,
        }
    }

    /// Checks that `value` can be stored in `field`, and returns the field: the store runs this
    /// check on every dynamic value before storing it.
    ///
    /// # Errors
    ///
    /// Refused with [`StoreError::FieldOutOfRange`], or [`StoreError::TypeMismatch`] naming the
    /// value's kind (or, for an enum index past the variants, the index).
    pub fn check_value(&self, field: FieldId, value: &Value) -> Result<&FieldDef, StoreError> {
        let field_def = self.checked_field(field)?;
        if value.conforms(&field_def.ty) {
            Ok(field_def)
        } else {
            Err(self.type_mismatch(field_def, &found_name(value)))
        }
    }

    /// Checks that every reference in `value` (a value of `field`, at any depth) names an
    /// instance `is_live` accepts. The store cannot tell a live instance from another id; the
    /// layer that holds the hierarchy runs this before a value enters the store.
    ///
    /// # Errors
    ///
    /// Refused with [`StoreError::NotLiveReference`] naming the first that is not.
    pub fn check_references(
        &self,
        field: FieldId,
        value: &Value,
        is_live: impl Fn(InstanceId) -> bool,
    ) -> Result<(), StoreError> {
        let mut dead = None;
        value.for_each_reference(&mut |target| {
            if dead.is_none() && !is_live(target) {
                dead = Some(target);
            }
        });
        match dead {
            None => Ok(()),
            Some(target) => Err(StoreError::NotLiveReference {
                component: self.name().to_owned(),
                field: self
                    .field(field)
                    .map_or_else(|| format!("#{}", field.index()), |f| f.name.to_string()),
                target,
            }),
        }
    }

    /// Checks that `field`'s column holds the Rust type `T`, and returns the field: the check
    /// behind every typed access.
    ///
    /// # Errors
    ///
    /// Refused with [`StoreError::FieldOutOfRange`], or [`StoreError::TypeMismatch`] naming `T`.
    #[inline]
    pub fn check_scalar<T: Scalar>(&self, field: FieldId) -> Result<&FieldDef, StoreError> {
        let field_def = self.checked_field(field)?;
        if T::matches(&field_def.ty) {
            Ok(field_def)
        } else {
            Err(self.type_mismatch(field_def, std::any::type_name::<T>()))
        }
    }

    /// Checks that the typed `value` can be stored in `field`, and returns the field: the check
    /// behind every typed write ([`InstalledDef::check_scalar`], then the value itself, which
    /// matters for enum indexes, refused past the variants as the dynamic check refuses them).
    ///
    /// # Errors
    ///
    /// As [`InstalledDef::check_scalar`], and [`StoreError::TypeMismatch`] for an enum index past
    /// the variants.
    #[inline]
    pub fn check_scalar_value<T: Scalar>(
        &self,
        field: FieldId,
        value: &T,
    ) -> Result<&FieldDef, StoreError> {
        let field_def = self.check_scalar::<T>(field)?;
        if !T::RANGED || value.fits(&field_def.ty) {
            Ok(field_def)
        } else {
            Err(self.type_mismatch(field_def, &found_name(&value.clone().into_value())))
        }
    }

    /// Checks that `element` can be appended to the list field `field`, and returns the
    /// element type.
    ///
    /// # Errors
    ///
    /// Refused with [`StoreError::FieldOutOfRange`], or [`StoreError::TypeMismatch`] when the field
    /// is not a list or the element does not fit.
    pub fn check_element(&self, field: FieldId, element: &Value) -> Result<&FieldType, StoreError> {
        let field_def = self.checked_field(field)?;
        match &field_def.ty {
            FieldType::List(ty) if element.conforms(ty) => Ok(ty),
            FieldType::List(_) => Err(self.type_mismatch(
                field_def,
                &format!("a list element of {}", found_name(element)),
            )),
            _ => Err(self.type_mismatch(field_def, "list")),
        }
    }

    /// The [`StoreError::TypeMismatch`] for `found` given where a value of `field` (one of this
    /// definition's fields) was expected.
    #[cold]
    pub fn type_mismatch(&self, field: &FieldDef, found: &str) -> StoreError {
        StoreError::TypeMismatch {
            component: self.name().to_owned(),
            field: field.name.to_string(),
            expected: field.ty.name(),
            found: found.to_owned(),
        }
    }

    /// The definition allocation: a fresh number for every install and redefinition, unique
    /// across every store in the process, so a redefinition under the same id, or a definition
    /// of another store under the same id, is distinguishable. Snapshots share their store's
    /// definitions, and so their allocations.
    pub fn allocation(&self) -> u64 {
        self.allocation
    }

    /// Whether instances of `class` may carry the component.
    #[inline]
    pub fn allows_class(&self, class: ClassId) -> bool {
        self.allowed.as_ref().is_none_or(|a| a.contains(&class))
    }

    /// The fields that can hold references.
    pub fn reference_fields(&self) -> &[FieldId] {
        &self.reference_fields
    }
}

/// What a refused value was, for [`StoreError::TypeMismatch`]: its kind, or for an enum index
/// the index itself (the kind is right, the variant does not exist).
fn found_name(value: &Value) -> String {
    match value {
        Value::Enum(index) => format!("enum variant {index}"),
        other => other.kind_name().to_owned(),
    }
}

/// Why a definition's former names do not say unambiguously where a saved value goes, naming
/// the fields as written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormerNameConflict {
    /// A field names itself as a former name.
    #[error("field `{field}` names itself as a former name")]
    OwnName {
        /// The field.
        field: String,
    },
    /// A field names another current field as a former name.
    #[error(
        "field `{field}` names `{former}` as a former name, but `{former}` is a current field; its saved value belongs to `{former}`"
    )]
    CurrentField {
        /// The field naming it.
        field: String,
        /// The former name, which is a current field's name.
        former: String,
    },
    /// Two fields name the same former name.
    #[error(
        "fields `{first}` and `{second}` both name `{former}` as a former name; a saved value can go to one field only"
    )]
    Shared {
        /// The first field naming it, in field order.
        first: String,
        /// The second field naming it.
        second: String,
        /// The former name both claim.
        former: String,
    },
}

/// Checks that former names say unambiguously where a saved value goes: no field names itself
/// or another field's current name, and no two fields name the same former name (one field may
/// repeat one). Installing and redefining run it, and so does schema evaluation, for its own
/// report.
///
/// # Errors
///
/// The first conflict found, in field order ([`FormerNameConflict`]).
pub fn check_former_names(fields: &[FieldDef]) -> Result<(), FormerNameConflict> {
    let current: HashSet<&str> = fields.iter().map(|f| &*f.name).collect();
    let mut claimed: HashMap<&str, &str> = HashMap::new();
    for field in fields {
        for former in &field.former_names {
            if **former == *field.name {
                return Err(FormerNameConflict::OwnName {
                    field: field.name.to_string(),
                });
            }
            if current.contains(&**former) {
                return Err(FormerNameConflict::CurrentField {
                    field: field.name.to_string(),
                    former: former.to_string(),
                });
            }
            match claimed.get(&**former) {
                Some(other) if *other != &*field.name => {
                    return Err(FormerNameConflict::Shared {
                        first: (*other).to_owned(),
                        second: field.name.to_string(),
                        former: former.to_string(),
                    });
                }
                _ => {
                    claimed.insert(former, &field.name);
                }
            }
        }
    }
    Ok(())
}

/// Checks one field on its own: its type, its default against it, and that a default factory
/// or a destruction policy suits it. Returns why not, for [`StoreError::InvalidDefinition`].
fn check_field(field: &FieldDef) -> Result<(), String> {
    check_type(&field.ty)?;
    if !field.default.conforms(&field.ty) {
        return Err(format!(
            "default {} does not fit type {}",
            field.default.kind_name(),
            field.ty.name()
        ));
    }
    if field.factory.is_some() && field.ty.can_reference() {
        return Err("a default factory cannot make references".into());
    }
    if field.on_destroy != RefPolicy::Clear && !field.ty.can_reference() {
        return Err("a destruction policy needs a reference field".into());
    }
    Ok(())
}

fn check_type(ty: &FieldType) -> Result<(), String> {
    match ty {
        FieldType::Enum(variants) => {
            if variants.is_empty() {
                return Err("an enum needs at least one variant".into());
            }
            let mut seen: Vec<&str> = variants.iter().map(|v| &**v).collect();
            seen.sort_unstable();
            if seen.windows(2).any(|w| w[0] == w[1]) {
                return Err("enum variants must be distinct".into());
            }
            Ok(())
        }
        FieldType::List(e) | FieldType::Optional(e) => check_type(e),
        FieldType::Map(k, v) => {
            if !k.is_map_key() {
                return Err(format!("{} cannot be a map key", k.name()));
            }
            check_type(v)
        }
        FieldType::Struct(fields) => {
            let mut names: Vec<&str> = fields.iter().map(|f| &*f.name).collect();
            names.sort_unstable();
            if names.windows(2).any(|w| w[0] == w[1]) {
                return Err("struct members must be distinct".into());
            }
            for f in fields.iter() {
                check_type(&f.ty)?;
                if !f.default.conforms(&f.ty) {
                    return Err(format!("struct member `{}`: default does not fit", f.name));
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}
