//! How large kube-apiserver assumes the values of a schema node can be, when it estimates
//! the cost of a CRD's rules: apiserver's `SchemaDeclType` gives every node a most number of
//! elements (characters of a string, items of a list, entries of a map) and the fewest bytes
//! one value takes in JSON. Where the schema sets no `maxLength`, `maxItems` or
//! `maxProperties`, both are derived from the largest request kube accepts (3 MiB): a list of
//! values of at least `n` bytes has at most `(3 MiB - 2) / (n + 1)` items.
//!
//! The cost estimator ([`super::cel_cost`]) reads these sizes by the path a rule takes from
//! `self` (`self.spec.items.@items.name`).

use std::collections::BTreeMap;

use super::cel_type::escape_field_name;
use super::structural::{Additional, Node, Type};

/// The largest request kube-apiserver accepts, in bytes (`MaxRequestSizeBytes`).
pub const MAX_REQUEST_BYTES: i64 = 3 * 1024 * 1024;

/// The assumed sizes of one schema node's values (apiserver's `DeclType`, as far as cost
/// estimation reads it).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sizes {
    /// The most characters, items or entries a value has; 0 for scalars and objects.
    pub max_elements: u64,
    /// The fewest bytes a value takes in JSON.
    pub min_serialized: i64,
    /// An object's fields, by their escaped names.
    pub fields: BTreeMap<String, Sizes>,
    /// A list's items or a map's values.
    pub elements: Option<Box<Sizes>>,
    /// A map's keys (kube sizes them as a string of no elements).
    pub keys: Option<Box<Sizes>>,
}

impl Sizes {
    fn scalar(min_serialized: i64, max_elements: i64) -> Self {
        Self {
            max_elements: non_negative(max_elements),
            min_serialized,
            ..Self::default()
        }
    }

    /// The sizes of a node's values; `None` where kube declares no type (as
    /// [`super::cel_type::CelType::of_node`]).
    pub fn of_node(node: &Node, resource_root: bool) -> Option<Self> {
        // kube counts four bytes for each character a `maxLength` allows.
        let max_length = node
            .checks
            .max_length
            .map(|l| saturating_i64(l).saturating_mul(4));
        if node.int_or_string {
            return Some(Self::scalar(1, max_length.unwrap_or(MAX_REQUEST_BYTES - 2)));
        }
        match node.type_? {
            Type::Array => {
                let items = node.items.as_deref()?;
                let item = Self::of_node(items, items.embedded)?;
                let most = node.checks.max_items.map_or_else(
                    || (MAX_REQUEST_BYTES - 2) / (item.min_serialized + 1),
                    saturating_i64,
                );
                Some(Self::container(most, item, None))
            }
            Type::Object => Self::of_object(node, resource_root),
            Type::String => Some(Self::of_string(node, max_length)),
            Type::Boolean => Some(Self::scalar(4, 0)),
            Type::Integer | Type::Number => Some(Self::scalar(1, 0)),
        }
    }

    fn container(most: i64, elements: Sizes, keys: Option<Sizes>) -> Self {
        Self {
            max_elements: non_negative(most),
            min_serialized: 2,
            fields: BTreeMap::new(),
            elements: Some(Box::new(elements)),
            keys: keys.map(Box::new),
        }
    }

    fn of_string(node: &Node, max_length: Option<i64>) -> Self {
        let per_request = MAX_REQUEST_BYTES - 2;
        match node.checks.format.as_deref() {
            // Bytes are counted as `maxLength` allows them, unmultiplied.
            Some("byte") => {
                let most = node.checks.max_length.map_or(per_request, saturating_i64);
                Self::scalar(2, most)
            }
            Some("duration") => Self::scalar(3, 32),
            Some("date") => Self::scalar(12, 12),
            Some("date-time") => Self::scalar(21, 32),
            _ => {
                let enumerated = node.checks.enumeration.as_ref().filter(|v| !v.is_empty());
                let longest_enum = enumerated.map(|values| {
                    values
                        .iter()
                        .filter_map(|v| v.as_str())
                        .map(|s| saturating_i64(s.len() as u64))
                        .max()
                        .unwrap_or(0)
                });
                Self::scalar(2, max_length.or(longest_enum).unwrap_or(per_request))
            }
        }
    }

    fn of_object(node: &Node, resource_root: bool) -> Option<Self> {
        if let Some(Additional::Schema(values)) = &node.additional {
            let values = Self::of_node(values, values.embedded)?;
            let most = node.checks.max_properties.map_or_else(
                || (MAX_REQUEST_BYTES - 2) / (values.min_serialized + 6),
                saturating_i64,
            );
            return Some(Self::container(most, values, Some(Self::scalar(2, 0))));
        }
        let mut fields = BTreeMap::new();
        let mut min_serialized = 2;
        for (name, property) in &node.properties {
            let Some(sizes) = Self::of_node(property, property.embedded) else {
                continue;
            };
            let required = node.checks.required.contains(name);
            if required && property.default.is_none() {
                let entry = saturating_i64(name.len() as u64).saturating_add(4);
                min_serialized = entry
                    .saturating_add(sizes.min_serialized)
                    .saturating_add(min_serialized);
            }
            if let Some(escaped) = escape_field_name(name) {
                fields.insert(escaped, sizes);
            }
        }
        if resource_root {
            let unbounded_string = || Self::scalar(2, MAX_REQUEST_BYTES - 2);
            fields.insert("apiVersion".into(), unbounded_string());
            fields.insert("kind".into(), unbounded_string());
            let meta = ["name", "generateName"].map(|f| (f.to_string(), unbounded_string()));
            let metadata = Self {
                min_serialized: 2,
                fields: meta.into(),
                ..Self::default()
            };
            fields.insert("metadata".into(), metadata);
        }
        Some(Self {
            min_serialized,
            fields,
            ..Self::default()
        })
    }

    /// The sizes at `path` below this node, the path as the cost estimator keeps it: a
    /// variable first (its name is not looked at), then fields, `@items` and `@values` for
    /// elements and `@keys` for a map's keys. `None` where the path leaves the schema.
    pub fn at(&self, path: &[String]) -> Option<&Sizes> {
        let mut node = self;
        for step in path.iter().skip(1) {
            node = match step.as_str() {
                "@items" | "@values" => node.elements.as_deref()?,
                "@keys" => node.keys.as_deref()?,
                field => node.fields.get(field)?,
            };
        }
        Some(node)
    }

    /// How many values of this node one request can hold at most, when nothing above it
    /// bounds them (`MaxCardinality` of a rule's compilation).
    pub fn most_per_request(&self) -> u64 {
        non_negative(MAX_REQUEST_BYTES / (self.min_serialized + 1))
    }
}

fn non_negative(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

fn saturating_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}
