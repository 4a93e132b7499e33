//! Tokens bound to an object (`kubectl create token --bound-object-kind Secret|Pod|Node`), as
//! kube-apiserver's token REST and ServiceAccount authenticator treat them (seen on
//! kube-apiserver v1.34.2 and kcp v0.30.0; conformance `kubectl-tokens.yaml`):
//!
//! - a TokenRequest may bind its token to a Secret or Pod of the ServiceAccount's namespace, or a
//!   Node; any other kind is a 400 (`cannot bind token to object of type /v1, Kind=ConfigMap`),
//!   an object that is not there its 404, a `uid` that is not the object's a 409, and a Pod run
//!   by another ServiceAccount a 400. The token carries the object's name and uid;
//! - the token authenticates only while that object is there with that uid (until a minute
//!   after its deletion began); a Pod-bound token's user says which pod (`pod-name`, `pod-uid`
//!   in its extra), a Node-bound one which node.
//!
//! A Pod's node is not added to its token (kcp-sim schedules no pods).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::resource::GroupResource;
use crate::status::{ApiError, ApiResult};
use crate::store::State;

/// How long a bound object that is being deleted still backs its tokens, in seconds.
const DELETION_GRACE: i64 = 60;

/// The kinds a token may be bound to: `(kind, resource, claim, namespaced)`.
const BINDABLE: [(&str, &str, &str, bool); 3] = [
    ("Secret", "secrets", "secret", true),
    ("Pod", "pods", "pod", true),
    ("Node", "nodes", "node", false),
];

/// The `kubernetes.io` claims binding a token of ServiceAccount `account` in `namespace` to
/// what `reference` (a TokenRequest's `spec.boundObjectRef`) names; none without a reference.
pub fn claims(
    state: &State,
    cluster: &str,
    (namespace, account): (&str, &str),
    reference: Option<&Value>,
) -> ApiResult<Map<String, Value>> {
    let Some(reference) = reference.filter(|r| r.is_object()) else {
        return Ok(Map::new());
    };
    let text = |key: &str| reference.get(key).and_then(Value::as_str).unwrap_or("");
    let (api_version, kind, name) = (text("apiVersion"), text("kind"), text("name"));
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let Some(&(_, resource, claim, namespaced)) = BINDABLE
        .iter()
        .find(|(k, ..)| group.is_empty() && *k == kind)
    else {
        return Err(ApiError::bad_request(format!(
            "cannot bind token to object of type {group}/{version}, Kind={kind}"
        )));
    };
    let at = if namespaced { namespace } else { "" };
    let object = state
        .lookup(cluster, &GroupResource::new("", resource), at, name)
        .and_then(|stored| stored.value().ok())
        .ok_or_else(|| ApiError::not_found("", resource, name))?;
    let uid = object
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if kind == "Pod" && object.pointer("/spec/serviceAccountName") != Some(&json!(account)) {
        return Err(ApiError::bad_request(format!(
            "cannot bind token for serviceaccount \"{account}\" to pod running with different serviceaccount name."
        )));
    }
    let asked = text("uid");
    if !asked.is_empty() && asked != uid {
        return Err(ApiError::conflict(
            "",
            kind,
            name,
            &format!(
                "the UID in the bound object reference ({asked}) does not match the UID in record. \
             The object might have been deleted and then recreated"
            ),
        ));
    }
    let mut out = Map::new();
    out.insert(claim.to_string(), json!({"name": name, "uid": uid}));
    Ok(out)
}

/// Whether the objects a token's `kubernetes.io` claims bind it to still back it; the extra the
/// token's user gets from them (`authentication.kubernetes.io/pod-name`, ...), or why not, as
/// kube's authenticator words it.
pub fn check(
    state: &State,
    cluster: &str,
    namespace: &str,
    claims: &Value,
) -> Result<BTreeMap<String, Vec<String>>, String> {
    let mut extra = BTreeMap::new();
    for (_, resource, claim, namespaced) in BINDABLE {
        let Some(bound) = claims.get(claim) else {
            continue;
        };
        let text = |key: &str| bound.get(key).and_then(Value::as_str).unwrap_or_default();
        let (name, uid) = (text("name"), text("uid"));
        let at = if namespaced { namespace } else { "" };
        let invalidated = || "service account token has been invalidated".to_string();
        let object = state
            .lookup(cluster, &GroupResource::new("", resource), at, name)
            .and_then(|stored| stored.value().ok())
            .ok_or_else(invalidated)?;
        if deleted_long_ago(&object) {
            return Err(invalidated());
        }
        let current = object
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if current != uid {
            return Err(format!(
                "{claim} UID ({current}) does not match service account {claim} ref claim ({uid})"
            ));
        }
        if claim != "secret" {
            let key = |what: &str| format!("authentication.kubernetes.io/{claim}-{what}");
            extra.insert(key("name"), vec![name.to_string()]);
            extra.insert(key("uid"), vec![uid.to_string()]);
        }
    }
    Ok(extra)
}

fn deleted_long_ago(object: &Value) -> bool {
    object
        .pointer("/metadata/deletionTimestamp")
        .and_then(Value::as_str)
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .is_some_and(|t| t.as_second() + DELETION_GRACE < jiff::Timestamp::now().as_second())
}
