//! APIExport and APIBinding conversion between v1alpha1 and v1alpha2, as kcp 0.28+ does it
//! (APIBindings in [`super::binding_conversion`]). An object converted either way has a
//! `status`, if only `{}`, as Go writes kcp's types.
//!
//! An APIExport is stored as v1alpha2. v1alpha1 `spec.latestResourceSchemas` (`<prefix>.<resource>.<group>`,
//! `core` for the core group) is v1alpha2 `spec.resources[{group, name, schema, storage: {crd: {}}}]`;
//! v1alpha1 permission claims have no verbs and mean all verbs (`["*"]`). What one version
//! cannot express is kept in annotations, so a round trip through the other version loses
//! nothing: the v1alpha1 claims (with `all` and `resourceSelector`) in
//! [`V1ALPHA1_CLAIMS_ANNOTATION`], non-CRD resources in [`RESOURCE_SCHEMAS_ANNOTATION`] and
//! claims with other verbs in [`CLAIMS_ANNOTATION`].

use serde_json::{Map, Value, json};

use crate::managed_fields::{self, FieldManager};
use crate::resource::ResourceType;
use crate::schema::field::{FieldError, refuse_if_invalid};
use crate::status::{ApiError, ApiResult};

/// The version APIExports and APIBindings are stored in.
pub const STORAGE_VERSION: &str = "v1alpha2";

/// v1alpha2 resources that v1alpha1 cannot express (not CRD-backed), kept on a v1alpha1 object.
pub const RESOURCE_SCHEMAS_ANNOTATION: &str = "apis.v1alpha2.kcp.io/resource-schemas";

/// v1alpha2 claims whose verbs are not `["*"]`, kept on a v1alpha1 object.
pub const CLAIMS_ANNOTATION: &str = "apis.v1alpha2.kcp.io/permission-claims";

/// The v1alpha1 claims of an object written as v1alpha1, kept on the v1alpha2 object.
pub const V1ALPHA1_CLAIMS_ANNOTATION: &str = "apis.v1alpha2.kcp.io/v1alpha1-permission-claims";

/// Whether `rt` is one of the kinds served at two versions.
fn two_versions(rt: &ResourceType) -> bool {
    rt.group == super::GROUP && matches!(rt.kind.as_str(), "APIExport" | "APIBinding")
}

/// Whether objects of `rt` read or written at `version` need converting.
pub fn converts(rt: &ResourceType, version: &str) -> bool {
    two_versions(rt) && version != STORAGE_VERSION
}

/// Converts an object written at `version` to the stored version, with the defaults kcp's CRD
/// schemas give its kinds when a request is decoded.
pub fn to_storage(rt: &ResourceType, version: &str, obj: &mut Value) -> ApiResult<()> {
    if converts(rt, version) {
        check_v1alpha1_claims(rt, obj)?;
        match rt.kind.as_str() {
            "APIBinding" => super::binding_conversion::to_v1alpha2(obj),
            _ => {
                v1alpha1_to_v1alpha2(obj)?;
                super::binding_conversion::ensure_status(obj);
            }
        }
    }
    if two_versions(rt) {
        v1alpha2_defaults(obj);
    }
    crate::kcp::decode_defaults(rt, obj);
    Ok(())
}

/// kcp's CEL rule on a v1alpha1 permission claim (of an APIExport, or accepted by an
/// APIBinding): exactly one of `all: true` and a non-empty `resourceSelector`. A claim read at
/// v1alpha1 from a v1alpha2 `verbs: ["*"]` written without kcp's annotation has neither, so
/// writing it back as read is refused, as on kcp v0.30.0.
fn check_v1alpha1_claims(rt: &ResourceType, obj: &Value) -> ApiResult<()> {
    let claims = obj
        .pointer("/spec/permissionClaims")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let errors: Vec<FieldError> = claims
        .iter()
        .enumerate()
        .filter(|(_, claim)| {
            let all = claim.get("all").and_then(Value::as_bool) == Some(true);
            let selector = claim
                .get("resourceSelector")
                .and_then(Value::as_array)
                .is_some_and(|s| !s.is_empty());
            all == selector
        })
        .map(|(i, _)| {
            FieldError::invalid(
                format!("spec.permissionClaims[{i}]"),
                Value::from("object"),
                "either \"all\" or \"resourceSelector\" must be set",
            )
        })
        .collect();
    refuse_if_invalid(super::GROUP, &rt.kind, obj, &errors)
}

/// The defaults of the v1alpha2 APIExport and APIBinding schemas: a claim's `group` and
/// `identityHash` are `""` (in a binding's status too), a resource's `storage` is `{crd: {}}`.
fn v1alpha2_defaults(obj: &mut Value) {
    for pointer in [
        "/spec/permissionClaims",
        "/status/exportPermissionClaims",
        "/status/appliedPermissionClaims",
    ] {
        let claims = obj.pointer_mut(pointer).and_then(Value::as_array_mut);
        for claim in claims
            .into_iter()
            .flatten()
            .filter_map(Value::as_object_mut)
        {
            for key in ["group", "identityHash"] {
                claim.entry(key).or_insert_with(|| json!(""));
            }
        }
    }
    let Some(spec) = spec_mut(obj) else {
        return;
    };
    if let Some(resources) = spec.get_mut("resources").and_then(Value::as_array_mut) {
        for resource in resources.iter_mut().filter_map(Value::as_object_mut) {
            resource
                .entry("storage")
                .or_insert_with(|| json!({"crd": {}}));
        }
    }
}

/// A string field as Go's encoder writes it with `omitempty`: quoted, or left out when empty.
fn go_text(v: &Value, key: &str) -> Option<String> {
    v.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(|s| Value::from(s).to_string())
}

/// An object member as Go writes it (`None`: left out).
fn go_member(key: &str, value: Option<String>) -> Option<String> {
    value.map(|v| format!("{key:?}:{v}"))
}

/// An object of the members that are there, in the given (struct field) order.
fn go_object(members: Vec<Option<String>>) -> String {
    let members: Vec<String> = members.into_iter().flatten().collect();
    format!("{{{}}}", members.join(","))
}

/// A claim's resource, which Go always writes.
fn go_resource(claim: &Value) -> Option<String> {
    let resource = claim.get("resource").and_then(Value::as_str).unwrap_or("");
    Some(Value::from(resource).to_string())
}

/// v1alpha1 permission claims as Go writes them (the annotation kcp keeps them in): struct
/// field order, empty fields left out.
fn go_v1alpha1_claims(claims: &[Value]) -> String {
    let claims: Vec<String> = claims
        .iter()
        .map(|c| {
            let selectors = c
                .get("resourceSelector")
                .and_then(Value::as_array)
                .filter(|s| !s.is_empty())
                .map(|s| {
                    let s: Vec<String> = s
                        .iter()
                        .map(|s| {
                            go_object(vec![
                                go_member("name", go_text(s, "name")),
                                go_member("namespace", go_text(s, "namespace")),
                            ])
                        })
                        .collect();
                    format!("[{}]", s.join(","))
                });
            let all = (c.get("all").and_then(Value::as_bool) == Some(true)).then(|| "true".into());
            go_object(vec![
                go_member("group", go_text(c, "group")),
                go_member("resource", go_resource(c)),
                go_member("all", all),
                go_member("resourceSelector", selectors),
                go_member("identityHash", go_text(c, "identityHash")),
            ])
        })
        .collect();
    format!("[{}]", claims.join(","))
}

/// v1alpha2 permission claims as Go writes them (the annotation a v1alpha1 read keeps the
/// claims with verbs in): group, resource, verbs, identity hash, the empty ones left out
/// (conformance kcp-apis/an-apiexport-written-at-v1alpha2-reads-at-v1alpha1).
fn go_v1alpha2_claims(claims: &[Value]) -> String {
    let claims: Vec<String> = claims
        .iter()
        .map(|c| {
            let verbs = c.get("verbs").cloned().unwrap_or(Value::Null).to_string();
            go_object(vec![
                go_member("group", go_text(c, "group")),
                go_member("resource", go_resource(c)),
                go_member("verbs", Some(verbs)),
                go_member("identityHash", go_text(c, "identityHash")),
            ])
        })
        .collect();
    format!("[{}]", claims.join(","))
}

/// Records a create's managed fields on the object as the request wrote it (`written`, in the
/// request's version, when that is not the stored one), as kube-apiserver's field manager works
/// in the request's version; the entries are kept on the stored object.
pub fn record_created(written: Option<Value>, obj: &mut Value, who: &FieldManager) {
    let Some(mut written) = written else {
        managed_fields::record_update(None, obj, who);
        return;
    };
    // The create dropped the status the conversion wrote; Go writes it again.
    super::binding_conversion::ensure_status(obj);
    if obj.get("status").is_none()
        && let Some(root) = written.as_object_mut()
    {
        root.remove("status");
    }
    managed_fields::record_update(None, &mut written, who);
    let entries = written.pointer("/metadata/managedFields").cloned();
    if let (Some(entries), Some(meta)) = (
        entries,
        obj.get_mut("metadata").and_then(Value::as_object_mut),
    ) {
        meta.insert("managedFields".into(), entries);
    }
}

/// Converts a stored object to how it reads at `version`.
pub fn to_version(rt: &ResourceType, version: &str, obj: &mut Value) {
    if !converts(rt, version) {
        return;
    }
    match rt.kind.as_str() {
        "APIBinding" => super::binding_conversion::to_v1alpha1(obj),
        _ => {
            v1alpha2_to_v1alpha1(obj);
            super::binding_conversion::ensure_status(obj);
        }
    }
}

fn annotations(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    let meta = obj.get_mut("metadata")?.as_object_mut()?;
    meta.entry("annotations")
        .or_insert_with(|| json!({}))
        .as_object_mut()
}

pub(super) use crate::object_meta::take_json_annotation as take_annotation;

fn set_annotation(obj: &mut Value, key: &str, value: &Value) {
    set_raw_annotation(obj, key, value.to_string());
}

/// Sets an annotation to a text.
pub(super) use crate::object_meta::set_annotation as set_raw_annotation;

/// Same group, resource and identity hash (kcp's `EqualGRI`; missing is `""`).
pub(super) fn same_claim(a: &Value, b: &Value) -> bool {
    let field = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    ["group", "resource", "identityHash"]
        .iter()
        .all(|k| field(a, k) == field(b, k))
}

fn spec_mut(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    obj.get_mut("spec")?.as_object_mut()
}

/// A v1alpha1 schema name as a v1alpha2 resource: `v1.widgets.example.io` is resource
/// `widgets` in group `example.io` (`core` is the core group).
fn resource_of_schema(schema: &str) -> ApiResult<Value> {
    let parts: Vec<&str> = schema.split('.').collect();
    if parts.len() < 3 {
        return Err(ApiError::invalid(
            super::GROUP,
            "APIExport",
            "",
            "spec.latestResourceSchemas",
            &format!("Invalid value: {schema:?}: must have at least 3 dot-separated segments"),
        ));
    }
    let group = match parts[2..].join(".") {
        g if g == "core" => String::new(),
        g => g,
    };
    Ok(json!({"group": group, "name": parts[1], "schema": schema, "storage": {"crd": {}}}))
}

/// v1alpha1 -> v1alpha2.
fn v1alpha1_to_v1alpha2(obj: &mut Value) -> ApiResult<()> {
    obj["apiVersion"] = json!("apis.kcp.io/v1alpha2");
    let Some(spec) = spec_mut(obj) else {
        return Ok(());
    };
    let schemas = spec.remove("latestResourceSchemas");
    let claims = spec.remove("permissionClaims");
    let mut resources = Vec::new();
    for schema in schemas
        .as_ref()
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        resources.push(resource_of_schema(schema.as_str().unwrap_or(""))?);
    }
    if let Some(Value::Array(extra)) = take_annotation(obj, RESOURCE_SCHEMAS_ANNOTATION) {
        resources.extend(extra);
    }
    let v1_claims = claims
        .and_then(|c| c.as_array().cloned())
        .unwrap_or_default();
    let kept_verbs = take_annotation(obj, CLAIMS_ANNOTATION);
    let mut v2_claims = Vec::new();
    for claim in &v1_claims {
        v2_claims.push(claim_to_v1alpha2(claim, kept_verbs.as_ref()));
    }
    if !v1_claims.is_empty()
        && let Some(map) = annotations(obj)
    {
        map.insert(
            V1ALPHA1_CLAIMS_ANNOTATION.to_string(),
            Value::String(go_v1alpha1_claims(&v1_claims)),
        );
    }
    if let Some(spec) = spec_mut(obj) {
        if !resources.is_empty() {
            spec.insert("resources".into(), Value::Array(resources));
        }
        if !v2_claims.is_empty() {
            spec.insert("permissionClaims".into(), Value::Array(v2_claims));
        }
    }
    Ok(())
}

/// One v1alpha1 claim as v1alpha2: verbs (and the default selector) from the kept v1alpha2
/// claims, or all verbs.
fn claim_to_v1alpha2(claim: &Value, kept: Option<&Value>) -> Value {
    let mut out = Map::new();
    for key in ["group", "resource", "identityHash"] {
        let value = claim.get(key).cloned().unwrap_or_else(|| json!(""));
        out.insert(key.into(), value);
    }
    let original = kept
        .and_then(Value::as_array)
        .and_then(|all| all.iter().find(|k| same_claim(k, claim)));
    let verbs = original
        .and_then(|o| o.get("verbs"))
        .filter(|v| v.as_array().is_some_and(|a| !a.is_empty()))
        .cloned()
        .unwrap_or_else(|| json!(["*"]));
    out.insert("verbs".into(), verbs);
    if let Some(selector) = original.and_then(|o| o.get("defaultSelector")) {
        out.insert("defaultSelector".into(), selector.clone());
    }
    Value::Object(out)
}

/// v1alpha2 -> v1alpha1.
fn v1alpha2_to_v1alpha1(obj: &mut Value) {
    obj["apiVersion"] = json!("apis.kcp.io/v1alpha1");
    let original = take_annotation(obj, V1ALPHA1_CLAIMS_ANNOTATION);
    let Some(spec) = spec_mut(obj) else {
        return;
    };
    let resources = spec.remove("resources");
    let claims = spec.remove("permissionClaims");
    let (crd, other): (Vec<Value>, Vec<Value>) = resources
        .and_then(|r| r.as_array().cloned())
        .unwrap_or_default()
        .into_iter()
        .partition(|r| r.pointer("/storage/crd").is_some());
    let latest: Vec<Value> = crd
        .iter()
        .filter_map(|r| r.get("schema").cloned())
        .collect();
    let v2_claims = claims
        .and_then(|c| c.as_array().cloned())
        .unwrap_or_default();
    let not_wildcard: Vec<Value> = v2_claims
        .iter()
        .filter(|c| c.get("verbs") != Some(&json!(["*"])))
        .cloned()
        .collect();
    let v1_claims: Vec<Value> = v2_claims
        .iter()
        .map(|c| claim_to_v1alpha1(c, original.as_ref()))
        .collect();
    if !latest.is_empty() {
        spec.insert("latestResourceSchemas".into(), Value::Array(latest));
    }
    if !v1_claims.is_empty() {
        spec.insert("permissionClaims".into(), Value::Array(v1_claims));
    }
    if !other.is_empty() {
        set_annotation(obj, RESOURCE_SCHEMAS_ANNOTATION, &Value::Array(other));
    }
    if !not_wildcard.is_empty() {
        set_raw_annotation(obj, CLAIMS_ANNOTATION, go_v1alpha2_claims(&not_wildcard));
    }
}

/// One v1alpha2 claim as v1alpha1: without verbs, with `all` and `resourceSelector` from the
/// kept v1alpha1 claims.
fn claim_to_v1alpha1(claim: &Value, original: Option<&Value>) -> Value {
    let mut out = Map::new();
    for key in ["group", "resource", "identityHash"] {
        if let Some(v) = claim.get(key).filter(|v| v.as_str() != Some("")) {
            out.insert(key.into(), v.clone());
        }
    }
    let kept = original
        .and_then(Value::as_array)
        .and_then(|all| all.iter().find(|k| same_claim(k, claim)));
    for key in ["all", "resourceSelector"] {
        if let Some(v) = kept.and_then(|k| k.get(key)) {
            out.insert(key.into(), v.clone());
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v1() -> Value {
        json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport",
            "metadata": {"name": "widgets", "annotations": {"kcp.io/cluster": "root"}},
            "spec": {"latestResourceSchemas": ["v1.widgets.example.io", "v2.configmaps.core"],
                "permissionClaims": [{"group": "", "resource": "secrets", "all": true}]}})
    }

    #[test]
    fn latest_resource_schemas_become_crd_backed_resources() {
        let mut obj = v1();
        v1alpha1_to_v1alpha2(&mut obj).unwrap();
        assert_eq!(
            obj["spec"]["resources"],
            json!([
                {"group": "example.io", "name": "widgets", "schema": "v1.widgets.example.io", "storage": {"crd": {}}},
                {"group": "", "name": "configmaps", "schema": "v2.configmaps.core", "storage": {"crd": {}}},
            ])
        );
        assert!(obj["spec"].get("latestResourceSchemas").is_none());
    }

    #[test]
    fn v1alpha1_claims_get_all_verbs() {
        let mut obj = v1();
        v1alpha1_to_v1alpha2(&mut obj).unwrap();
        assert_eq!(
            obj["spec"]["permissionClaims"],
            json!([{"group": "", "identityHash": "", "resource": "secrets", "verbs": ["*"]}])
        );
        // kcp keeps the v1alpha1 claims as Go writes them.
        assert_eq!(
            obj["metadata"]["annotations"][V1ALPHA1_CLAIMS_ANNOTATION],
            "[{\"resource\":\"secrets\",\"all\":true}]"
        );
    }

    #[test]
    fn a_round_trip_through_v1alpha2_keeps_the_v1alpha1_object() {
        let mut obj = v1();
        v1alpha1_to_v1alpha2(&mut obj).unwrap();
        v1alpha2_to_v1alpha1(&mut obj);
        let mut expected = v1();
        expected["spec"]["permissionClaims"] = json!([{"resource": "secrets", "all": true}]);
        assert_eq!(obj, expected);
    }

    #[test]
    fn verbs_other_than_all_survive_a_round_trip_through_v1alpha1() {
        let mut obj = json!({"apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIExport",
            "metadata": {"name": "e"},
            "spec": {"permissionClaims": [{"group": "", "identityHash": "", "resource": "configmaps", "verbs": ["get", "list"]}]}});
        let original = obj.clone();
        v1alpha2_to_v1alpha1(&mut obj);
        assert_eq!(
            obj["spec"]["permissionClaims"],
            json!([{"resource": "configmaps"}])
        );
        v1alpha1_to_v1alpha2(&mut obj).unwrap();
        assert_eq!(
            obj["spec"]["permissionClaims"],
            original["spec"]["permissionClaims"]
        );
    }

    #[test]
    fn a_schema_name_with_two_segments_is_invalid() {
        let mut obj = v1();
        obj["spec"]["latestResourceSchemas"] = json!(["widgets.example"]);
        assert_eq!(v1alpha1_to_v1alpha2(&mut obj).unwrap_err().code, 422);
    }
}
