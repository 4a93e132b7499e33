//! APIBinding conversion between v1alpha1 and v1alpha2, as kcp 0.28+ does it.
//!
//! The object is stored as v1alpha2. A v1alpha1 claim (`all`, `resourceSelector`, no verbs) is a
//! v1alpha2 claim with `verbs: ["*"]` and `selector: {matchAll: <all>}` (an empty selector reads
//! as `matchAll: true`); a v1alpha2 claim reads at v1alpha1 without its verbs, `all` being its
//! `selector.matchAll`. The same holds for the status' `exportPermissionClaims` (no selector
//! there) and `appliedPermissionClaims`. What one version cannot express is kept in annotations,
//! so that a round trip through the other version loses nothing:
//! - read at v1alpha1, the claims that are not all verbs over all objects, in
//!   [`ACCEPTABLE_CLAIMS_ANNOTATION`], [`STATUS_EXPORT_CLAIMS_ANNOTATION`] and
//!   [`STATUS_APPLIED_CLAIMS_ANNOTATION`];
//! - written at v1alpha1, the claims with a `resourceSelector` (all export claims of the status)
//!   in [`super::conversion::V1ALPHA1_CLAIMS_ANNOTATION`],
//!   [`V1ALPHA1_STATUS_EXPORT_CLAIMS_ANNOTATION`] and [`V1ALPHA1_STATUS_APPLIED_CLAIMS_ANNOTATION`].
//!
//! Each annotation is consumed by the conversion back.

use serde_json::{Map, Value, json};

use super::conversion::{
    V1ALPHA1_CLAIMS_ANNOTATION, same_claim, set_raw_annotation, take_annotation,
};
use super::go_json;

/// v1alpha2 spec claims v1alpha1 cannot express, kept on a v1alpha1 object.
pub const ACCEPTABLE_CLAIMS_ANNOTATION: &str = "apis.v1alpha2.kcp.io/acceptable-permission-claims";

/// v1alpha2 `status.exportPermissionClaims` that are not all verbs, kept on a v1alpha1 object.
pub const STATUS_EXPORT_CLAIMS_ANNOTATION: &str =
    "apis.v1alpha2.kcp.io/status-export-permission-claims";

/// v1alpha2 `status.appliedPermissionClaims` v1alpha1 cannot express, kept on a v1alpha1 object.
pub const STATUS_APPLIED_CLAIMS_ANNOTATION: &str =
    "apis.v1alpha2.kcp.io/status-applied-permission-claims";

/// The v1alpha1 `status.exportPermissionClaims` of an object written as v1alpha1.
pub const V1ALPHA1_STATUS_EXPORT_CLAIMS_ANNOTATION: &str =
    "apis.v1alpha2.kcp.io/v1alpha1-status-export-permission-claims";

/// The v1alpha1 `status.appliedPermissionClaims` with a `resourceSelector`, of an object
/// written as v1alpha1.
pub const V1ALPHA1_STATUS_APPLIED_CLAIMS_ANNOTATION: &str =
    "apis.v1alpha2.kcp.io/v1alpha1-status-applied-permission-claims";

/// Where a list of claims is, and what its claims carry.
#[derive(Clone, Copy)]
struct Place {
    pointer: &'static str,
    /// A scoped claim: a `selector` at v1alpha2, `all` at v1alpha1.
    scoped: bool,
    /// An acceptable claim: a `state`.
    acceptable: bool,
}

const SPEC: Place = Place {
    pointer: "/spec/permissionClaims",
    scoped: true,
    acceptable: true,
};
const EXPORTED: Place = Place {
    pointer: "/status/exportPermissionClaims",
    scoped: false,
    acceptable: false,
};
const APPLIED: Place = Place {
    pointer: "/status/appliedPermissionClaims",
    scoped: true,
    acceptable: false,
};

/// The claims at a place, taken out of the object.
fn take_claims(obj: &mut Value, place: Place) -> Option<Vec<Value>> {
    let (parent, key) = place.pointer.rsplit_once('/')?;
    let taken = obj.pointer_mut(parent)?.as_object_mut()?.remove(key)?;
    match taken {
        Value::Array(claims) => Some(claims),
        _ => None,
    }
}

fn put_claims(obj: &mut Value, place: Place, claims: Vec<Value>) {
    let Some((parent, key)) = place.pointer.rsplit_once('/') else {
        return;
    };
    if let Some(parent) = obj.pointer_mut(parent).and_then(Value::as_object_mut) {
        parent.insert(key.to_string(), Value::Array(claims));
    }
}

/// Go writes the status of a converted object even when it is empty.
pub fn ensure_status(obj: &mut Value) {
    if let Some(root) = obj.as_object_mut() {
        root.entry("status").or_insert_with(|| json!({}));
    }
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn kept_for<'a>(kept: Option<&'a Value>, claim: &Value) -> Option<&'a Value> {
    kept.and_then(Value::as_array)?
        .iter()
        .find(|k| same_claim(k, claim))
}

/// v1alpha1 -> v1alpha2.
pub fn to_v1alpha2(obj: &mut Value) {
    obj["apiVersion"] = json!("apis.kcp.io/v1alpha2");
    ensure_status(obj);
    let places = [
        (
            SPEC,
            ACCEPTABLE_CLAIMS_ANNOTATION,
            V1ALPHA1_CLAIMS_ANNOTATION,
        ),
        (
            EXPORTED,
            STATUS_EXPORT_CLAIMS_ANNOTATION,
            V1ALPHA1_STATUS_EXPORT_CLAIMS_ANNOTATION,
        ),
        (
            APPLIED,
            STATUS_APPLIED_CLAIMS_ANNOTATION,
            V1ALPHA1_STATUS_APPLIED_CLAIMS_ANNOTATION,
        ),
    ];
    for (place, v1alpha2_kept, v1alpha1_kept) in places {
        let kept = take_annotation(obj, v1alpha2_kept);
        let Some(claims) = take_claims(obj, place) else {
            continue;
        };
        // kcp keeps every export claim of the status, and the other claims with selectors.
        let keep: Vec<Value> = claims
            .iter()
            .filter(|c| place.pointer == EXPORTED.pointer || has_resource_selector(c))
            .cloned()
            .collect();
        if !keep.is_empty() {
            set_raw_annotation(obj, v1alpha1_kept, go_json::claims(&keep));
        }
        let converted = claims
            .iter()
            .map(|c| claim_to_v1alpha2(c, place, kept_for(kept.as_ref(), c)))
            .collect();
        put_claims(obj, place, converted);
    }
}

fn has_resource_selector(claim: &Value) -> bool {
    claim
        .get("resourceSelector")
        .and_then(Value::as_array)
        .is_some_and(|s| !s.is_empty())
}

/// One v1alpha1 claim as v1alpha2: verbs (and selector) from the kept v1alpha2 claim, else all
/// verbs (and `matchAll` from `all`); an empty selector matches all.
fn claim_to_v1alpha2(claim: &Value, place: Place, kept: Option<&Value>) -> Value {
    let mut out = Map::new();
    for key in ["group", "resource", "identityHash"] {
        out.insert(key.into(), json!(text(claim, key)));
    }
    let verbs = kept
        .and_then(|k| k.get("verbs"))
        .filter(|v| v.as_array().is_some_and(|a| !a.is_empty()))
        .cloned()
        .unwrap_or_else(|| json!(["*"]));
    out.insert("verbs".into(), verbs);
    if place.scoped {
        let all = claim.get("all").and_then(Value::as_bool).unwrap_or(false);
        let mut selector = kept
            .and_then(|k| k.get("selector"))
            .cloned()
            .unwrap_or_else(|| {
                if all {
                    json!({"matchAll": true})
                } else {
                    json!({})
                }
            });
        if selects_nothing(&selector) {
            selector = json!({"matchAll": true});
        }
        out.insert("selector".into(), selector);
    }
    if place.acceptable {
        out.insert("state".into(), json!(text(claim, "state")));
    }
    Value::Object(out)
}

/// A selector without `matchAll`, labels or expressions.
fn selects_nothing(selector: &Value) -> bool {
    let set = |key: &str| match selector.get(key) {
        Some(Value::Bool(b)) => *b,
        Some(Value::Object(m)) => !m.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        _ => false,
    };
    !["matchAll", "matchLabels", "matchExpressions"]
        .iter()
        .any(|k| set(k))
}

/// Whether a v1alpha2 claim says what a v1alpha1 claim can: all verbs (over all objects, for a
/// scoped claim).
fn expressible(claim: &Value, place: Place) -> bool {
    let all_verbs = claim.get("verbs") == Some(&json!(["*"]));
    let all_objects = claim.pointer("/selector/matchAll") == Some(&json!(true));
    all_verbs && (!place.scoped || all_objects)
}

/// v1alpha2 -> v1alpha1.
pub fn to_v1alpha1(obj: &mut Value) {
    obj["apiVersion"] = json!("apis.kcp.io/v1alpha1");
    ensure_status(obj);
    let places = [
        (
            SPEC,
            ACCEPTABLE_CLAIMS_ANNOTATION,
            V1ALPHA1_CLAIMS_ANNOTATION,
        ),
        (
            EXPORTED,
            STATUS_EXPORT_CLAIMS_ANNOTATION,
            V1ALPHA1_STATUS_EXPORT_CLAIMS_ANNOTATION,
        ),
        (
            APPLIED,
            STATUS_APPLIED_CLAIMS_ANNOTATION,
            V1ALPHA1_STATUS_APPLIED_CLAIMS_ANNOTATION,
        ),
    ];
    for (place, v1alpha2_kept, v1alpha1_kept) in places {
        let kept = take_annotation(obj, v1alpha1_kept);
        let Some(claims) = take_claims(obj, place) else {
            continue;
        };
        let overhanging: Vec<Value> = claims
            .iter()
            .filter(|c| !expressible(c, place))
            .cloned()
            .collect();
        if !overhanging.is_empty() {
            set_raw_annotation(obj, v1alpha2_kept, go_json::claims(&overhanging));
        }
        let converted = claims
            .iter()
            .map(|c| claim_to_v1alpha1(c, place, kept_for(kept.as_ref(), c)))
            .collect();
        put_claims(obj, place, converted);
    }
}

/// One v1alpha2 claim as v1alpha1: without verbs and selector, `all` from `matchAll` (for a
/// scoped claim), `all` and `resourceSelector` from the kept v1alpha1 claim.
fn claim_to_v1alpha1(claim: &Value, place: Place, kept: Option<&Value>) -> Value {
    let mut out = Map::new();
    for key in ["group", "resource", "identityHash"] {
        let value = text(claim, key);
        if !value.is_empty() || key == "resource" {
            out.insert(key.into(), json!(value));
        }
    }
    let match_all = claim.pointer("/selector/matchAll") == Some(&json!(true));
    if place.scoped && match_all {
        out.insert("all".into(), json!(true));
    }
    if let Some(kept) = kept {
        out.remove("all");
        for key in ["all", "resourceSelector"] {
            if let Some(v) = kept.get(key).filter(|v| **v != json!(false)) {
                out.insert(key.into(), v.clone());
            }
        }
    }
    if place.acceptable {
        out.insert("state".into(), json!(text(claim, "state")));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v2(verbs: Value, selector: Value) -> Value {
        json!({"apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIBinding",
            "metadata": {"name": "b"},
            "spec": {"reference": {"export": {"name": "e"}},
                "permissionClaims": [{"group": "", "identityHash": "", "resource": "configmaps",
                    "verbs": verbs, "selector": selector, "state": "Accepted"}]}})
    }

    #[test]
    fn all_verbs_over_all_objects_read_as_all() {
        let mut obj = v2(json!(["*"]), json!({"matchAll": true}));
        to_v1alpha1(&mut obj);
        assert_eq!(
            obj["spec"]["permissionClaims"],
            json!([{"resource": "configmaps", "all": true, "state": "Accepted"}])
        );
        assert!(obj["metadata"].get("annotations").is_none());
        assert_eq!(obj["status"], json!({}));
    }

    #[test]
    fn explicit_verbs_survive_a_round_trip_through_v1alpha1() {
        let mut obj = v2(json!(["get", "list"]), json!({"matchAll": true}));
        let original = obj["spec"].clone();
        to_v1alpha1(&mut obj);
        assert_eq!(
            obj["metadata"]["annotations"][ACCEPTABLE_CLAIMS_ANNOTATION],
            "[{\"resource\":\"configmaps\",\"verbs\":[\"get\",\"list\"],\"selector\":{\"matchAll\":true},\"state\":\"Accepted\"}]"
        );
        to_v1alpha2(&mut obj);
        assert_eq!(obj["spec"], original);
        assert!(obj["metadata"].get("annotations").is_none());
    }

    #[test]
    fn a_v1alpha1_claim_gets_all_verbs_over_all_objects() {
        let mut obj = json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding",
            "metadata": {"name": "b"},
            "spec": {"reference": {"export": {"name": "e"}},
                "permissionClaims": [{"resource": "configmaps", "state": "Accepted"}]}});
        to_v1alpha2(&mut obj);
        assert_eq!(
            obj["spec"]["permissionClaims"],
            json!([{"group": "", "identityHash": "", "resource": "configmaps", "verbs": ["*"],
                "selector": {"matchAll": true}, "state": "Accepted"}])
        );
    }

    #[test]
    fn a_resource_selector_survives_a_round_trip_through_v1alpha2() {
        let claim = json!({"resource": "configmaps", "resourceSelector": [{"name": "one"}],
            "state": "Accepted"});
        let mut obj = json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding",
            "metadata": {"name": "b"},
            "spec": {"reference": {"export": {"name": "e"}}, "permissionClaims": [claim]}});
        to_v1alpha2(&mut obj);
        assert_eq!(
            obj["metadata"]["annotations"][V1ALPHA1_CLAIMS_ANNOTATION],
            "[{\"resource\":\"configmaps\",\"resourceSelector\":[{\"name\":\"one\"}],\"state\":\"Accepted\"}]"
        );
        to_v1alpha1(&mut obj);
        assert_eq!(obj["spec"]["permissionClaims"], json!([claim]));
    }

    #[test]
    fn a_binding_reads_at_v1alpha1_as_kcp_reads_it() {
        // A v1alpha2 binding and what kcp v0.30.0 answered for it at v1alpha1.
        let mut obj = v2(json!(["get"]), json!({"matchAll": true}));
        let configmaps = json!({"group": "", "identityHash": "", "resource": "configmaps",
            "verbs": ["get"], "selector": {"matchAll": true}});
        let secrets = json!({"group": "", "identityHash": "", "resource": "secrets",
            "verbs": ["*"], "selector": {"matchLabels": {"b": "1", "a": "2"}}});
        let accepted = |c: &Value| {
            let mut c = c.clone();
            c["state"] = json!("Accepted");
            c
        };
        let exported = |c: &Value| {
            let mut c = c.clone();
            c.as_object_mut().map(|c| c.remove("selector"));
            c
        };
        obj["spec"]["permissionClaims"] = json!([accepted(&configmaps), accepted(&secrets)]);
        obj["status"] = json!({"appliedPermissionClaims": [configmaps, secrets],
            "exportPermissionClaims": [exported(&configmaps), exported(&secrets)]});
        to_v1alpha1(&mut obj);
        let annotations = &obj["metadata"]["annotations"];
        assert_eq!(
            annotations[ACCEPTABLE_CLAIMS_ANNOTATION],
            "[{\"resource\":\"configmaps\",\"verbs\":[\"get\"],\"selector\":{\"matchAll\":true},\"state\":\"Accepted\"},{\"resource\":\"secrets\",\"verbs\":[\"*\"],\"selector\":{\"matchLabels\":{\"a\":\"2\",\"b\":\"1\"}},\"state\":\"Accepted\"}]"
        );
        assert_eq!(
            annotations[STATUS_APPLIED_CLAIMS_ANNOTATION],
            "[{\"resource\":\"configmaps\",\"verbs\":[\"get\"],\"selector\":{\"matchAll\":true}},{\"resource\":\"secrets\",\"verbs\":[\"*\"],\"selector\":{\"matchLabels\":{\"a\":\"2\",\"b\":\"1\"}}}]"
        );
        assert_eq!(
            annotations[STATUS_EXPORT_CLAIMS_ANNOTATION],
            "[{\"resource\":\"configmaps\",\"verbs\":[\"get\"]}]"
        );
        assert_eq!(
            obj["spec"]["permissionClaims"],
            json!([{"all": true, "resource": "configmaps", "state": "Accepted"},
                {"resource": "secrets", "state": "Accepted"}])
        );
        assert_eq!(
            obj["status"],
            json!({"appliedPermissionClaims": [{"all": true, "resource": "configmaps"}, {"resource": "secrets"}],
                "exportPermissionClaims": [{"resource": "configmaps"}, {"resource": "secrets"}]})
        );
    }

    #[test]
    fn status_export_claims_read_at_v1alpha1_keep_their_verbs() {
        let mut obj = v2(json!(["*"]), json!({"matchAll": true}));
        obj["status"] = json!({"exportPermissionClaims": [
            {"group": "", "identityHash": "", "resource": "configmaps", "verbs": ["get"]}]});
        let original = obj["status"].clone();
        to_v1alpha1(&mut obj);
        assert_eq!(
            obj["status"]["exportPermissionClaims"],
            json!([{"resource": "configmaps"}])
        );
        to_v1alpha2(&mut obj);
        assert_eq!(obj["status"], original);
        // The v1alpha1 export claims are kept, as kcp keeps them, until read at v1alpha1 again.
        assert!(
            obj["metadata"]["annotations"]
                .get(V1ALPHA1_STATUS_EXPORT_CLAIMS_ANNOTATION)
                .is_some()
        );
    }
}
