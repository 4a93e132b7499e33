//! APIResourceSchemas: validation of a new schema (its name is `<prefix>.<plural>.<group>`, with
//! `core` for the core group), immutability of its spec, and the resource type it defines.
//!
//! kcp validates schemas in an admission plugin: what is wrong is a `403 Forbidden` listing every
//! field error (`apiresourceschemas.apis.kcp.io "<name>" is forbidden: [<field>: <error> ...]`).

use std::sync::Arc;

use serde_json::Value;

use super::{GROUP, schemas, str_at};
use crate::resource::{ResourceType, type_of_spec};
use crate::schema::CrdSchemas;
use crate::status::{ApiError, ApiResult};
use crate::store::State;

/// The `spec.nameValidation` kcp's schema defaults to.
pub const DEFAULT_NAME_VALIDATION: &str = "DNS1123Subdomain";

/// The 403 kcp's admission answers with, listing the field errors as Go prints a list.
fn refused(name: &str, errors: &[String]) -> ApiError {
    crate::kcp::admission_forbidden(
        GROUP,
        "apiresourceschemas",
        name,
        &format!("[{}]", errors.join(" ")),
    )
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

/// The name rule: `<prefix>.<plural>.<group>` (checked once the plural is known).
fn name_error(name: &str, spec: &Value) -> Option<String> {
    let plural = str_at(spec, "/names/plural");
    if plural.is_empty() {
        return None;
    }
    let group = match str_at(spec, "/group") {
        "" => "core",
        g => g,
    };
    let suffix = format!(".{plural}.{group}");
    let Some(prefix) = name.strip_suffix(&suffix) else {
        return Some(format!(
            "metadata.name: Invalid value: {name:?}: must end in {suffix}"
        ));
    };
    (!valid_prefix(prefix)).then(|| {
        format!(
            "metadata.name: Invalid value: {name:?}: must match ^[a-z]([-a-z0-9]*[a-z0-9])?$ in front of {suffix}"
        )
    })
}

/// The field errors of a schema, in the order kcp's validation finds them.
fn errors_of(schema: &Value) -> Vec<String> {
    let name = str_at(schema, "/metadata/name");
    let spec = schema.get("spec").unwrap_or(&Value::Null);
    let mut errors: Vec<String> = name_error(name, spec).into_iter().collect();
    if str_at(spec, "/group") == "core" {
        errors.push(
            "spec.group: Invalid value: \"core\": must be empty string for the core group".into(),
        );
    }
    if let Err((field, why)) = type_of_spec(spec) {
        errors.push(format!("{field}: {why}"));
    }
    if errors.is_empty() {
        // Every version's schema must be structural, its rules compile (as a CRD's).
        if let Err(e) = crate::schema::compile_resource_schema(schema) {
            match e.causes() {
                [] => errors.push(e.message),
                causes => {
                    errors.extend(causes.iter().map(|c| format!("{}: {}", c.field, c.message)))
                }
            }
        }
    }
    errors
}

/// Validates a new APIResourceSchema.
pub fn validate(schema: &Value) -> ApiResult<()> {
    let errors = errors_of(schema);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(refused(str_at(schema, "/metadata/name"), &errors))
    }
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
        .crd_schemas(consumer, t.group_resource())
        .filter(|s| s.compiled_from(schema));
    match current {
        Some(compiled) => Ok(compiled.clone()),
        None => crate::schema::compile_resource_schema(schema).map(Arc::new),
    }
}

/// An APIResourceSchema's spec cannot change (and the new object is validated again), as kcp's
/// admission answers: the error shows the new spec as Go writes it.
pub fn check_update(old: &Value, new: &Value) -> ApiResult<()> {
    let mut errors = errors_of(new);
    if old.get("spec") != new.get("spec") {
        let spec = new.get("spec").unwrap_or(&Value::Null);
        errors.push(format!(
            "spec: Invalid value: {}: is immutable",
            go_spec(spec)
        ));
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(refused(str_at(new, "/metadata/name"), &errors))
    }
}

/// `"key":<json>` members in the order given, leaving out the absent ones.
fn go_struct(members: &[(&str, Option<String>)]) -> String {
    let inner: Vec<String> = members
        .iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k:?}:{v}")))
        .collect();
    format!("{{{}}}", inner.join(","))
}

/// A member that Go always writes (`null` when unset).
fn always(v: &Value, key: &str) -> Option<String> {
    Some(v.get(key).unwrap_or(&Value::Null).to_string())
}

/// A member Go leaves out when empty (`omitempty`): absent, null, `""`, `false`, `0`, `[]`, `{}`.
fn omitempty(v: &Value, key: &str) -> Option<String> {
    match v.get(key)? {
        Value::Null | Value::Bool(false) => None,
        Value::String(s) if s.is_empty() => None,
        Value::Array(a) if a.is_empty() => None,
        Value::Object(o) if o.is_empty() => None,
        Value::Number(n) if n.as_f64() == Some(0.0) => None,
        other => Some(other.to_string()),
    }
}

/// An APIResourceSchemaSpec as Go's `encoding/json` writes it (struct field order, omitempty).
fn go_spec(spec: &Value) -> String {
    let names = spec.get("names").unwrap_or(&Value::Null);
    let names = go_struct(&[
        ("plural", always(names, "plural")),
        ("singular", omitempty(names, "singular")),
        ("shortNames", omitempty(names, "shortNames")),
        ("kind", always(names, "kind")),
        ("listKind", omitempty(names, "listKind")),
        ("categories", omitempty(names, "categories")),
    ]);
    let versions: Vec<String> = spec
        .get("versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(go_version)
        .collect();
    go_struct(&[
        ("group", always(spec, "group")),
        ("names", Some(names)),
        ("scope", always(spec, "scope")),
        ("versions", Some(format!("[{}]", versions.join(",")))),
        ("nameValidation", omitempty(spec, "nameValidation")),
        ("conversion", omitempty(spec, "conversion")),
    ])
}

fn go_version(v: &Value) -> String {
    let subresources = v.get("subresources").unwrap_or(&Value::Null);
    let scale = subresources.get("scale").map(|s| {
        go_struct(&[
            ("specReplicasPath", always(s, "specReplicasPath")),
            ("statusReplicasPath", always(s, "statusReplicasPath")),
            ("labelSelectorPath", omitempty(s, "labelSelectorPath")),
        ])
    });
    let subresources = go_struct(&[
        (
            "status",
            subresources.get("status").map(|_| "{}".to_string()),
        ),
        ("scale", scale),
    ]);
    let columns = v
        .get("additionalPrinterColumns")
        .and_then(Value::as_array)
        .filter(|c| !c.is_empty())
        .map(|c| {
            let columns: Vec<String> = c
                .iter()
                .map(|c| {
                    go_struct(&[
                        ("name", always(c, "name")),
                        ("type", always(c, "type")),
                        ("format", omitempty(c, "format")),
                        ("description", omitempty(c, "description")),
                        ("priority", omitempty(c, "priority")),
                        ("jsonPath", always(c, "jsonPath")),
                    ])
                })
                .collect();
            format!("[{}]", columns.join(","))
        });
    go_struct(&[
        ("name", always(v, "name")),
        (
            "served",
            Some(
                v.get("served")
                    .and_then(Value::as_bool)
                    .unwrap_or(false)
                    .to_string(),
            ),
        ),
        (
            "storage",
            Some(
                v.get("storage")
                    .and_then(Value::as_bool)
                    .unwrap_or(false)
                    .to_string(),
            ),
        ),
        ("deprecated", omitempty(v, "deprecated")),
        (
            "deprecationWarning",
            v.get("deprecationWarning")
                .filter(|w| !w.is_null())
                .map(Value::to_string),
        ),
        ("schema", always(v, "schema")),
        ("subresources", Some(subresources)),
        ("additionalPrinterColumns", columns),
    ])
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
        // kcp's admission refuses it: 403, with the new spec as Go writes it.
        let err = check_update(&old, &new).unwrap_err();
        assert_eq!(err.code, 403);
        assert!(
            err.message.ends_with(
                "[spec: Invalid value: {\"group\":\"example.io\",\"names\":{\"plural\":\"widgets\",\"kind\":\"Widget\"},\"scope\":\"Cluster\",\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,\"schema\":null,\"subresources\":{}}]}: is immutable]"
            ),
            "{err}"
        );
        let mut relabelled = old.clone();
        relabelled["metadata"]["labels"] = json!({"a": "b"});
        assert!(check_update(&old, &relabelled).is_ok());
    }
}
