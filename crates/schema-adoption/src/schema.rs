//! `Schema`: an evaluated definition, before it is given its name.
//!
//! Invariant: a `Schema` only exists for a source that evaluated cleanly in the sandbox; its
//! fields are ordered by name (Luau table iteration order is not stable, so the name order is
//! what makes field ids reproducible), and it carries no component name: the name always
//! comes from the definition instance.

use std::sync::Arc;

use strata_component_store::{ComponentDef, FieldDef};

/// An evaluated schema: everything a component definition holds except its name.
#[derive(Clone, Debug, PartialEq)]
pub struct Schema {
    /// Schema version (default 1).
    pub version: u32,
    /// Fields, ordered by name.
    pub fields: Vec<FieldDef>,
    /// Classes allowed to carry the component; `None` for any.
    pub classes: Option<Vec<Arc<str>>>,
    /// Components this one requires.
    pub requires: Vec<Arc<str>>,
    /// Whether changes queue events.
    pub observed: bool,
}

impl Schema {
    /// The component definition of this schema under `name`.
    pub fn to_component_def(&self, name: &str) -> ComponentDef {
        let mut def = ComponentDef::new(name)
            .version(self.version)
            .observed(self.observed);
        def.fields = self.fields.clone();
        def.classes = self.classes.clone();
        def.requires = self.requires.clone();
        def
    }
}
