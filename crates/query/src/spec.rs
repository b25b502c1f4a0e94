//! `QuerySpec`: the terms of a query.
//!
//! Invariant: a spec accepted by `Query::new` has a positive driver (a required component or a
//! required tag), change filters only on required components, no component or tag both
//! required and excluded, and no duplicate terms.

use std::sync::Arc;

use strata_arena::{ClassId, InstanceId};
use strata_component_store::ComponentId;

use crate::error::QueryError;

/// What a query matches: required and excluded components and tags, a class filter, an
/// ancestor term, a subtree, and added or changed filters on required components.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QuerySpec {
    pub(crate) with: Vec<ComponentId>,
    pub(crate) without: Vec<ComponentId>,
    pub(crate) tags: Vec<Arc<str>>,
    pub(crate) not_tags: Vec<Arc<str>>,
    pub(crate) classes: Option<Vec<ClassId>>,
    pub(crate) ancestor: Option<ComponentId>,
    pub(crate) within: Option<InstanceId>,
    pub(crate) added: Vec<ComponentId>,
    pub(crate) changed: Vec<ComponentId>,
}

impl QuerySpec {
    /// An empty spec (not runnable until it has a required component or tag).
    pub fn new() -> Self {
        Self::default()
    }

    /// Requires a component. Required components are the query's terms, numbered in the order
    /// they were added (term 0, term 1, ...).
    #[must_use]
    pub fn with(mut self, component: ComponentId) -> Self {
        push_new(&mut self.with, component);
        self
    }

    /// Excludes instances holding a component.
    #[must_use]
    pub fn without(mut self, component: ComponentId) -> Self {
        push_new(&mut self.without, component);
        self
    }

    /// Requires a tag.
    #[must_use]
    pub fn tagged(mut self, tag: &str) -> Self {
        push_new(&mut self.tags, Arc::from(tag));
        self
    }

    /// Excludes instances carrying a tag.
    #[must_use]
    pub fn not_tagged(mut self, tag: &str) -> Self {
        push_new(&mut self.not_tags, Arc::from(tag));
        self
    }

    /// Restricts matches to instances of a class (several calls allow several classes).
    #[must_use]
    pub fn class(mut self, class: ClassId) -> Self {
        push_new(self.classes.get_or_insert_with(Vec::new), class);
        self
    }

    /// Requires some ancestor to hold a component; the nearest such ancestor is recorded per
    /// match.
    #[must_use]
    pub fn ancestor(mut self, component: ComponentId) -> Self {
        self.ancestor = Some(component);
        self
    }

    /// Restricts matches to the subtree of `root`: the instance itself and its descendants.
    /// A root that is not (or no longer) live has no subtree, so the query then matches
    /// nothing.
    #[must_use]
    pub fn within(mut self, root: InstanceId) -> Self {
        self.within = Some(root);
        self
    }

    /// Yields only rows of `component` (a required component) added since the query's
    /// previous pass.
    #[must_use]
    pub fn added(mut self, component: ComponentId) -> Self {
        push_new(&mut self.added, component);
        self
    }

    /// Yields only rows of `component` (a required component) changed since the query's
    /// previous pass. Several change filters must all hold.
    #[must_use]
    pub fn changed(mut self, component: ComponentId) -> Self {
        push_new(&mut self.changed, component);
        self
    }

    /// The required components, in term order.
    pub fn required(&self) -> &[ComponentId] {
        &self.with
    }

    /// The term index of a required component.
    pub fn term(&self, component: ComponentId) -> Option<usize> {
        self.with.iter().position(|c| *c == component)
    }

    /// Whether the spec has added or changed filters.
    pub fn has_change_filters(&self) -> bool {
        !self.added.is_empty() || !self.changed.is_empty()
    }

    /// Whether the spec involves ancestry, a subtree or classes (and so the arena's topology).
    pub fn uses_topology(&self) -> bool {
        self.ancestor.is_some() || self.within.is_some() || self.classes.is_some()
    }

    /// Whether the spec involves tags.
    pub fn uses_tags(&self) -> bool {
        !self.tags.is_empty() || !self.not_tags.is_empty()
    }

    /// Every component whose structure affects the matches: required, excluded, ancestor.
    pub(crate) fn structural_components(&self) -> impl Iterator<Item = ComponentId> + '_ {
        self.with
            .iter()
            .chain(&self.without)
            .chain(self.ancestor.as_ref())
            .copied()
    }

    pub(crate) fn validate(&self) -> Result<(), QueryError> {
        if self.with.is_empty() && self.tags.is_empty() {
            return Err(QueryError::NoDriver);
        }
        for c in self.added.iter().chain(&self.changed) {
            if !self.with.contains(c) {
                return Err(QueryError::ChangeTermNotRequired(*c));
            }
        }
        if let Some(c) = self.with.iter().find(|c| self.without.contains(c)) {
            return Err(QueryError::Contradiction(format!(
                "component id {}",
                c.index()
            )));
        }
        if let Some(t) = self.tags.iter().find(|t| self.not_tags.contains(t)) {
            return Err(QueryError::Contradiction(format!("tag `{t}`")));
        }
        Ok(())
    }
}

/// Appends `item` unless the list already holds it: a spec never repeats a term.
fn push_new<T: PartialEq>(list: &mut Vec<T>, item: T) {
    if !list.contains(&item) {
        list.push(item);
    }
}
