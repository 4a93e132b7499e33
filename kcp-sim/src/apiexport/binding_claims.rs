//! The permission claims of an APIBinding (stored as v1alpha2): what a claim the binding
//! accepts or rejects must carry, and the claims part of its status as kcp's controllers write
//! it: the export's claims (`exportPermissionClaims`), the accepted claims the export offers
//! (`appliedPermissionClaims`, as accepted: verbs and selector) and the claim conditions.

use serde_json::Value;

use super::binding::{PERMISSION_CLAIMS_APPLIED, PERMISSION_CLAIMS_VALID};
use super::conditions::{self, Condition};
use super::export::{Claim, Export};
use super::{GROUP, str_at};
use crate::resource::GroupResource;
use crate::status::{ApiError, ApiResult};

/// A claim needs `verbs`, a `selector` and a `state` (the v1alpha2 schema's required fields;
/// a v1alpha1 claim got the first two from its conversion).
pub fn validate(binding: &Value) -> ApiResult<()> {
    let claims = binding
        .pointer("/spec/permissionClaims")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (i, claim) in claims.iter().enumerate() {
        let has_verbs = claim
            .get("verbs")
            .and_then(Value::as_array)
            .is_some_and(|v| !v.is_empty());
        let missing = [
            ("verbs", !has_verbs),
            ("selector", claim.get("selector").is_none_or(Value::is_null)),
            ("state", str_at(claim, "/state").is_empty()),
        ];
        if let Some((field, _)) = missing.iter().find(|(_, m)| *m) {
            return Err(ApiError::invalid(
                GROUP,
                "APIBinding",
                str_at(binding, "/metadata/name"),
                &format!("spec.permissionClaims[{i}].{field}"),
                "Required value",
            ));
        }
    }
    Ok(())
}

/// The claims a binding accepted (`spec.permissionClaims[]` with `state: Accepted`), as kcp
/// applies them: scoped claims (verbs and selector), without their state.
fn accepted(binding: &Value) -> Vec<Value> {
    let claims = binding
        .pointer("/spec/permissionClaims")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    claims
        .iter()
        .filter(|c| str_at(c, "/state") == "Accepted")
        .map(|c| {
            let mut scoped = c.clone();
            if let Some(fields) = scoped.as_object_mut() {
                fields.remove("state");
            }
            scoped
        })
        .collect()
}

/// An export's claim as the binding's status lists it.
fn exported(claim: &Claim) -> Value {
    serde_json::json!({
        "group": claim.group,
        "resource": claim.resource,
        "identityHash": claim.identity_hash,
        "verbs": claim.verbs,
    })
}

/// `exportPermissionClaims`, `appliedPermissionClaims` and the claim conditions.
pub fn write_status(export: &Export, binding: &mut Value) {
    let offered: Vec<Value> = export.claims.iter().map(exported).collect();
    let (applied, unknown): (Vec<Value>, Vec<Value>) =
        accepted(binding).into_iter().partition(|a| {
            let a = Claim::from_value(a);
            export.claims.iter().any(|c| c.same_resource(&a))
        });
    for (key, claims) in [
        ("exportPermissionClaims", offered),
        ("appliedPermissionClaims", applied),
    ] {
        match binding["status"].as_object_mut() {
            Some(status) if claims.is_empty() => {
                status.remove(key);
            }
            _ => binding["status"][key] = Value::Array(claims),
        }
    }
    if unknown.is_empty() {
        conditions::set(binding, Condition::ok(PERMISSION_CLAIMS_VALID));
    } else {
        let names: Vec<String> = unknown
            .iter()
            .map(|c| GroupResource::new(str_at(c, "/group"), str_at(c, "/resource")).to_string())
            .collect();
        let why = format!("claims not offered by the APIExport: {names:?}");
        conditions::set(
            binding,
            Condition::failed(PERMISSION_CLAIMS_VALID, "InvalidPermissionClaims", &why),
        );
    }
    conditions::set(binding, Condition::ok(PERMISSION_CLAIMS_APPLIED));
}
