//! APIResourceSchemas: validation of a new schema (its name is `<prefix>.<plural>.<group>`, with
//! `core` for the core group), immutability of its spec, and the resource type it defines.

use std::sync::Arc;

use serde_json::Value;

use super::{GROUP, schemas, str_at};
use crate::resource::{ResourceType, type_of_spec};
use crate::schema::CrdSchemas;
use crate::status::{ApiError, ApiResult};
use crate::store::State;

fn invalid(name: &str, field: &str, why: &str) -> ApiError {
    ApiError::invalid(GROUP, "APIResourceSchema", name, field, why)
}

fn valid_prefix(prefix: &str) -> bool {
    let bytes = prefix.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    first.is_ascii_lowercase()
        && (last.is_ascii_lowercase() || last.is_ascii_digit())
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
}

/// Validates a new APIResourceSchema.
pub fn validate(schema: &Value) -> ApiResult<()> {
    let name = str_at(schema, "/metadata/name");
    let spec = schema.get("spec").unwrap_or(&Value::Null);
    let t = type_of_spec(spec).map_err(|(field, why)| invalid(name, &field, &why))?;
    if str_at(spec, "/group") == "core" {
        return Err(invalid(
            name,
            "spec.group",
            "Invalid value: \"core\": must be empty string for the core group",
        ));
    }
    let group = if t.group.is_empty() { "core" } else { &t.group };
    let suffix = format!(".{}.{group}", t.plural);
    let Some(prefix) = name.strip_suffix(&suffix) else {
        return Err(invalid(
            name,
            "metadata.name",
            &format!("Invalid value: {name:?}: must end in {suffix}"),
        ));
    };
    if !valid_prefix(prefix) {
        return Err(invalid(
            name,
            "metadata.name",
            &format!(
                "Invalid value: {name:?}: must match ^[a-z]([-a-z0-9]*[a-z0-9])?$ in front of {suffix}"
            ),
        ));
    }
    // Refused as a CRD would be: every version's schema must be structural, its rules compile.
    crate::schema::compile_resource_schema(schema).map(|_| ())
}

/// The compiled schemas a consumer cluster admits the objects of a bound resource with: the
/// ones it has when they come from this very schema (same uid), or compiled now.
pub fn compiled_for_binding(
    state: &State,
    consumer: &str,
    t: &ResourceType,
    schema: &Value,
) -> ApiResult<Arc<CrdSchemas>> {
    let current = state
        .clusters
        .get(consumer)
        .and_then(|c| c.schemas.get(t.group_resource()))
        .filter(|s| s.compiled_from(schema));
    match current {
        Some(compiled) => Ok(compiled.clone()),
        None => crate::schema::compile_resource_schema(schema).map(Arc::new),
    }
}

/// An APIResourceSchema's spec cannot change.
pub fn check_update(old: &Value, new: &Value) -> ApiResult<()> {
    if old.get("spec") != new.get("spec") {
        return Err(invalid(
            str_at(new, "/metadata/name"),
            "spec",
            "Invalid value: the spec of an APIResourceSchema is immutable",
        ));
    }
    Ok(())
}

/// The resource type a stored schema defines.
pub fn type_of(schema: &Value) -> Option<ResourceType> {
    type_of_spec(schema.get("spec")?).ok()
}

/// A stored schema: its object, in the export's logical cluster.
pub fn load(state: &State, cluster: &str, name: &str) -> Option<Value> {
    state.lookup(cluster, &schemas(), "", name)?.value().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(name: &str, group: &str) -> Value {
        json!({"metadata": {"name": name}, "spec": {"group": group, "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [{"name": "v1", "served": true, "storage": true}]}})
    }

    #[test]
    fn a_schema_is_named_prefix_plural_group() {
        assert!(validate(&schema("v1.widgets.example.io", "example.io")).is_ok());
        assert!(validate(&schema("today.widgets.core", "")).is_ok());
        let err = validate(&schema("widgets.example.io", "example.io")).unwrap_err();
        assert!(
            err.message.contains("must end in .widgets.example.io"),
            "{err}"
        );
        let err = validate(&schema("V1.widgets.example.io", "example.io")).unwrap_err();
        assert!(err.message.contains("must match"), "{err}");
    }

    #[test]
    fn the_core_group_is_the_empty_string() {
        let err = validate(&schema("v1.widgets.core", "core")).unwrap_err();
        assert!(err.message.contains("spec.group"), "{err}");
    }

    #[test]
    fn the_spec_is_immutable() {
        let old = schema("v1.widgets.example.io", "example.io");
        let mut new = old.clone();
        new["spec"]["scope"] = json!("Cluster");
        assert_eq!(check_update(&old, &new).unwrap_err().code, 422);
        let mut relabelled = old.clone();
        relabelled["metadata"]["labels"] = json!({"a": "b"});
        assert!(check_update(&old, &relabelled).is_ok());
    }
}
