//! What kcp's CRDs for APIExport and APIBinding (`apis.kcp.io/v1alpha2`, their stored
//! version) allow a written spec to hold: types, patterns, enums, required fields, keyed
//! lists and the CEL rules, checked by the same structural-schema machinery as a custom
//! resource's ([`crate::schema::validation_errors`]), so a refusal is kube's `422 Invalid` with
//! kube's words.
//!
//! The schemas describe only the spec fields whose values kcp constrains; everything else is
//! kept as it is (`x-kubernetes-preserve-unknown-fields`). Their rules are what makes kube
//! add "some validation rules were not checked" after a blocking error, as kcp's answers do.
//! kcp's CRD also declares a claim's selector immutable, but kcp v0.30 lets a binding change
//! it (`kcp-claim-states/a-bindings-reference-does-not-change-but-its-claim-selectors-may`), so that
//! rule is left out.

use std::sync::OnceLock;

use serde_json::{Value, json};

use crate::schema::field::FieldError;
use crate::schema::structural::{self, Node};

/// A group name: empty (the core group) or a DNS subdomain.
const GROUP_PATTERN: &str = r"^(|[a-z0-9]([-a-z0-9]*[a-z0-9](\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?)$";
/// A resource name.
const RESOURCE_PATTERN: &str = r"^[a-z][-a-z0-9]*[a-z0-9]$";
/// A workspace path (`root:org:team`).
const PATH_PATTERN: &str = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(:[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";

/// An object whose `spec` is `spec`, the rest kept.
fn object_with_spec(spec: Value) -> Value {
    json!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
        "properties": {"spec": spec},
    })
}

/// A claimed group and resource (with the identity of the export serving it), the fields an
/// export's and a binding's claims share.
fn claimed_resource() -> Value {
    json!({
        "group": {"type": "string", "default": "", "pattern": GROUP_PATTERN},
        "identityHash": {"type": "string", "default": ""},
        "resource": {"type": "string", "pattern": RESOURCE_PATTERN},
        "verbs": {
            "type": "array",
            "minItems": 1,
            "x-kubernetes-list-type": "set",
            "items": {"type": "string"},
        },
    })
}

/// Which claimed objects a binding accepts.
fn claim_selector() -> Value {
    let requirement = json!({
        "type": "object",
        "required": ["key", "operator"],
        "properties": {
            "key": {"type": "string"},
            "operator": {"type": "string"},
            "values": {
                "type": "array",
                "x-kubernetes-list-type": "atomic",
                "items": {"type": "string"},
            },
        },
    });
    json!({
        "type": "object",
        "properties": {
            "matchAll": {"type": "boolean"},
            "matchExpressions": {
                "type": "array",
                "x-kubernetes-list-type": "atomic",
                "items": requirement,
            },
            "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}},
        },
    })
}

fn binding_schema() -> Value {
    let mut claim = claimed_resource();
    claim["selector"] = claim_selector();
    claim["state"] = json!({"type": "string", "enum": ["Accepted", "Rejected"]});
    object_with_spec(json!({
        "type": "object",
        "required": ["reference"],
        "properties": {
            "reference": {
                "type": "object",
                "x-kubernetes-validations": [
                    {"rule": "self == oldSelf", "message": "APIExport reference must not be changed"},
                ],
                "properties": {
                    "export": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {
                            "name": {"type": "string"},
                            "path": {"type": "string", "pattern": PATH_PATTERN},
                        },
                    },
                },
            },
            "permissionClaims": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["group", "resource", "identityHash"],
                "items": {
                    "type": "object",
                    "required": ["resource", "selector", "state", "verbs"],
                    "properties": claim,
                },
            },
        },
    }))
}

fn export_schema() -> Value {
    let virtual_storage = json!({
        "type": "object",
        "required": ["identityHash", "reference"],
        "properties": {
            "identityHash": {"type": "string"},
            "reference": {
                "type": "object",
                "x-kubernetes-map-type": "atomic",
                "required": ["kind", "name"],
                "properties": {
                    "apiGroup": {"type": "string"},
                    "kind": {"type": "string"},
                    "name": {"type": "string"},
                },
            },
        },
    });
    object_with_spec(json!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
        "properties": {
            "permissionClaims": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["group", "resource"],
                "items": {
                    "type": "object",
                    "required": ["resource", "verbs"],
                    "properties": claimed_resource(),
                },
            },
            "resources": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name", "group"],
                "items": {
                    "type": "object",
                    "required": ["group", "name", "schema"],
                    "properties": {
                        "group": {"type": "string"},
                        "name": {"type": "string"},
                        "schema": {"type": "string"},
                        "storage": {
                            "type": "object",
                            "default": {"crd": {}},
                            "oneOf": [{"required": ["crd"]}, {"required": ["virtual"]}],
                            "x-kubernetes-validations": [
                                {"rule": "has(self.crd) != has(self.virtual)", "message": "Exactly one of crd or virtual must be set"},
                            ],
                            "properties": {
                                "crd": {"type": "object"},
                                "virtual": virtual_storage,
                            },
                        },
                    },
                },
            },
        },
    }))
}

/// The compiled schema of `kind` (`APIExport` or `APIBinding`); `None` for other kinds, and
/// (never, as a unit test proves) for a schema above that does not compile.
fn schema_of(kind: &str) -> Option<&'static Node> {
    static BINDING: OnceLock<Option<Node>> = OnceLock::new();
    static EXPORT: OnceLock<Option<Node>> = OnceLock::new();
    let (cell, schema): (&OnceLock<Option<Node>>, fn() -> Value) = match kind {
        "APIBinding" => (&BINDING, binding_schema),
        "APIExport" => (&EXPORT, export_schema),
        _ => return None,
    };
    cell.get_or_init(|| structural::parse(&schema(), "openAPIV3Schema").ok())
        .as_ref()
}

/// What kcp's CRD validation finds in an APIExport or APIBinding being written (`old` on
/// update), in kube's order; empty for other kinds.
pub fn errors(kind: &str, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    match schema_of(kind) {
        Some(node) => crate::schema::validation_errors(node, obj, old),
        None => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(errors: &[FieldError]) -> Vec<String> {
        errors.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn both_schemas_compile() {
        for (kind, schema) in [
            ("APIBinding", binding_schema()),
            ("APIExport", export_schema()),
        ] {
            assert!(
                structural::parse(&schema, "openAPIV3Schema").is_ok(),
                "{kind}: {:?}",
                structural::parse(&schema, "openAPIV3Schema").err()
            );
        }
    }

    #[test]
    fn a_claim_state_outside_the_enum_blocks_the_rules() {
        let binding = json!({"spec": {"reference": {"export": {"name": "e"}},
            "permissionClaims": [{"group": "", "identityHash": "", "resource": "configmaps",
                "verbs": ["*"], "state": "Maybe", "selector": {"matchAll": true}}]}});
        let found = messages(&errors("APIBinding", &binding, None));
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(
            found[0].starts_with("spec.permissionClaims[0].state: Unsupported value: \"Maybe\"")
        );
        assert!(found[1].starts_with("<nil>: Invalid value: null: some validation rules"));
    }

    #[test]
    fn an_export_claim_needs_at_least_one_verb() {
        let export = json!({"spec": {"permissionClaims": [
            {"group": "", "identityHash": "", "resource": "configmaps", "verbs": []}]}});
        assert_eq!(
            messages(&errors("APIExport", &export, None)),
            [
                "spec.permissionClaims[0].verbs: Invalid value: 0: spec.permissionClaims[0].verbs in body should have at least 1 items"
            ]
        );
    }

    #[test]
    fn other_kinds_have_no_schema_here() {
        assert!(errors("APIResourceSchema", &json!({"spec": 1}), None).is_empty());
    }
}
