//! A cursor through a builtin kind's Go types: what they say of the value at some place of an
//! object, read field by field, item by item and entry by entry from the kind's root. The
//! server-side apply traversals ([`crate::managed_fields`]) take list and map types from it, and
//! strategic merge patch ([`crate::patch`]) its patch strategies and merge keys, as
//! kube-apiserver takes both from the Go types.

use std::sync::OnceLock;

use prost_reflect::Kind;

use super::schema::{FieldPlan, META, MessagePlan, Schema};
use super::special::Special;

/// What the Go types say of the value at some place.
#[derive(Debug, Clone, Copy)]
pub enum GoType {
    /// A struct, by its message.
    Struct(&'static MessagePlan),
    /// The slice or map this field holds.
    Collection(&'static FieldPlan),
    /// A scalar, or a value whose JSON no struct types: a time, a quantity, an int-or-string,
    /// embedded raw JSON.
    Untyped,
}

impl GoType {
    /// The root of an object of `kind` at `api_version`, when kcp-sim has its Go type.
    pub fn of_kind(api_version: &str, kind: &str) -> Option<GoType> {
        let types = Schema::get().ok()?;
        types
            .plan(&types.message_for(api_version, kind)?)
            .map(GoType::Struct)
    }

    /// ObjectMeta, every object's `metadata`.
    pub fn object_meta() -> Option<GoType> {
        static OBJECT_META: OnceLock<Option<GoType>> = OnceLock::new();
        *OBJECT_META.get_or_init(|| {
            let types = Schema::get().ok()?;
            let message = types.message(&format!("{META}.ObjectMeta"))?;
            types.plan(&message).map(GoType::Struct)
        })
    }

    /// The value `field` holds.
    pub fn of_field(field: &'static FieldPlan) -> GoType {
        if field.field.is_list() || field.field.is_map() {
            return GoType::Collection(field);
        }
        of_kind(field.field.kind())
    }

    /// The field `name` of a struct, or an entry of a map; `None` where the Go type has no such
    /// field (or the value here is no struct or map).
    pub fn child(self, name: &str) -> Option<GoType> {
        match self {
            GoType::Struct(plan) => Schema::get()
                .ok()?
                .json_field(plan, name)
                .map(GoType::of_field),
            GoType::Collection(field) if field.field.is_map() => match field.field.kind() {
                Kind::Message(entry) => Some(of_kind(entry.map_entry_value_field().kind())),
                _ => None,
            },
            GoType::Collection(_) | GoType::Untyped => None,
        }
    }

    /// An item of a slice; `None` where the value here is no slice.
    pub fn item(self) -> Option<GoType> {
        match self {
            GoType::Collection(field) if field.field.is_list() => Some(of_kind(field.field.kind())),
            _ => None,
        }
    }

    /// Whether the value here is a Go map (its entries are no declared fields).
    pub fn is_map(self) -> bool {
        matches!(self, GoType::Collection(field) if field.field.is_map())
    }

    /// The slice or map field whose value this is.
    pub fn collection(self) -> Option<&'static FieldPlan> {
        match self {
            GoType::Collection(field) => Some(field),
            _ => None,
        }
    }
}

/// A value of protobuf kind `kind`: a struct, or untyped (a scalar, or a message JSON writes as
/// a scalar or as untyped JSON).
fn of_kind(kind: Kind) -> GoType {
    let Kind::Message(message) = kind else {
        return GoType::Untyped;
    };
    if Special::of(message.full_name()).is_some() {
        return GoType::Untyped;
    }
    Schema::get()
        .ok()
        .and_then(|types| types.plan(&message))
        .map_or(GoType::Untyped, GoType::Struct)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deployments_container_ports_are_reached_through_the_pod_template() {
        let deployment = GoType::of_kind("apps/v1", "Deployment").unwrap();
        let ports = ["spec", "template", "spec", "containers"]
            .iter()
            .try_fold(deployment, |at, name| at.child(name))
            .and_then(GoType::item)
            .and_then(|container| container.child("ports"))
            .and_then(GoType::collection)
            .unwrap();
        assert_eq!(ports.patch_merge_key.as_deref(), Some("containerPort"));
    }

    #[test]
    fn a_map_entry_is_typed_by_the_maps_values_and_a_time_is_untyped() {
        let meta = GoType::object_meta().unwrap();
        let labels = meta.child("labels").unwrap();
        assert!(labels.is_map());
        assert!(matches!(labels.child("app"), Some(GoType::Untyped)));
        assert!(matches!(
            meta.child("creationTimestamp"),
            Some(GoType::Untyped)
        ));
        assert!(meta.child("nonsense").is_none());
    }
}
