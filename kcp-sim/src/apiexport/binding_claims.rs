//! The permission claims of an APIBinding (stored as v1alpha2): what a claim the binding
//! accepts or rejects must carry, and the claims part of its status as kcp's controllers write
//! it: the export's claims (`exportPermissionClaims`), the accepted claims the export offers
//! (`appliedPermissionClaims`, as accepted: verbs and selector) and the claim conditions.

use serde_json::Value;

use super::binding::{PERMISSION_CLAIMS_APPLIED, PERMISSION_CLAIMS_VALID};
use super::conditions::{self, Condition};
use super::export::{Claim, Export};
use super::{GROUP, str_at};
use crate::schema::field::FieldError;
use crate::status::ApiResult;

/// What kcp's APIBinding admission refuses after the schema has passed the binding (its
/// `ValidateAPIBinding`): a reference without an export, and a claim selector that says
/// neither all nor which, or says all and which at once. Refused with a `403`, the errors
/// listed as Go prints a field error list.
pub fn admit(binding: &Value) -> ApiResult<()> {
    let errors = admission_errors(binding);
    if errors.is_empty() {
        return Ok(());
    }
    let listed: Vec<String> = errors.iter().map(ToString::to_string).collect();
    Err(crate::kcp::admission_forbidden(
        GROUP,
        "apibindings",
        str_at(binding, "/metadata/name"),
        &format!("[{}]", listed.join(" ")),
    ))
}

fn admission_errors(binding: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    match binding.pointer("/spec/reference/export") {
        None | Some(Value::Null) => errors.push(FieldError::required("spec.reference.export", "")),
        Some(_) if str_at(binding, "/spec/reference/export/name").is_empty() => {
            errors.push(FieldError::required("spec.reference.export.name", ""));
        }
        Some(_) => {}
    }
    let claims = binding
        .pointer("/spec/permissionClaims")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (i, claim) in claims.iter().enumerate() {
        errors.extend(selector_errors(
            i,
            claim.get("selector").unwrap_or(&Value::Null),
        ));
    }
    errors
}

/// kcp's rule for one claim's selector: `matchAll` alone, or labels and expressions alone.
fn selector_errors(index: usize, selector: &Value) -> Vec<FieldError> {
    let field = format!("spec.permissionClaims[{index}].selector");
    let set = |key: &str| match selector.get(key) {
        Some(Value::Object(map)) => !map.is_empty(),
        Some(Value::Array(items)) => !items.is_empty(),
        _ => false,
    };
    let all = selector.get("matchAll") == Some(&Value::Bool(true));
    if !all {
        if set("matchLabels") || set("matchExpressions") {
            return Vec::new();
        }
        return vec![FieldError::required(
            field,
            "either one of matchAll, matchLabels, or matchExpressions must be set",
        )];
    }
    ["matchLabels", "matchExpressions"]
        .into_iter()
        .filter(|key| set(key))
        .map(|key| {
            FieldError::invalid_struct(
                format!("{field}.{key}"),
                super::go_json::selector(selector),
                format!("{key} cannot be used with matchAll"),
            )
        })
        .collect()
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

/// `exportPermissionClaims`, `appliedPermissionClaims` and the claim conditions. kcp lists the
/// applied claims, and names the accepted claims the export does not make, in the order of
/// their keys (`<resource>/<group>/<identity>`).
pub fn write_status(export: &Export, binding: &mut Value) {
    let offered: Vec<Value> = export.claims.iter().map(exported).collect();
    let mut accepted = accepted(binding);
    accepted.sort_by_cached_key(claim_key);
    let (applied, unknown): (Vec<Value>, Vec<Value>) = accepted.into_iter().partition(|a| {
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
        conditions::set(
            binding,
            Condition::failed(
                PERMISSION_CLAIMS_VALID,
                "InvalidPermissionClaims",
                &unexpected_claims_message(&unknown),
            ),
        );
    }
    conditions::set(binding, Condition::ok(PERMISSION_CLAIMS_APPLIED));
}

/// The key kcp's claim labeller sorts claims by.
fn claim_key(claim: &Value) -> String {
    format!(
        "{}/{}/{}",
        str_at(claim, "/resource"),
        str_at(claim, "/group"),
        str_at(claim, "/identityHash")
    )
}

/// kcp's message for accepted claims its export does not make: how many, and the first ten
/// as an error aggregate prints them (one alone, several in brackets).
fn unexpected_claims_message(unknown: &[Value]) -> String {
    let shown: Vec<String> = unknown
        .iter()
        .take(10)
        .map(|claim| {
            format!(
                "unexpected/invalid claim for {}.{} (identity {})",
                str_at(claim, "/resource"),
                str_at(claim, "/group"),
                Value::from(str_at(claim, "/identityHash")),
            )
        })
        .collect();
    let aggregate = match shown.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    };
    format!(
        "{} unexpected and/or invalid permission claims (showing first {}): {aggregate}",
        unknown.len(),
        shown.len()
    )
}
