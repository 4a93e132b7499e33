//! The APIExport's claims as a v1alpha1 reader sees them.
//!
//! kcp stores APIExports as v1alpha2 and converts a v1alpha2 claim with `verbs: ["*"]` to a
//! v1alpha1 claim *without* `all`, unless the annotation [`V1ALPHA1_CLAIMS_ANNOTATION`] holds
//! that claim's v1alpha1 form (kcp writes it when an export is written as v1alpha1, as upstream's
//! agent writes it, with `all: true`). A claim without `all` or a `resourceSelector` is invalid
//! at v1alpha1 (kcp's CEL rule: "either \"all\" or \"resourceSelector\" must be set"), so a
//! consumer who accepts the export's claims as read at v1alpha1, as upstream's e2e utilities
//! and documentation do, would be refused with 422 (measured on kcp v0.30.0).
//!
//! kcp-sync writes v1alpha2 and therefore keeps the annotation as kcp would after upstream's
//! v1alpha1 write: every claim of all verbs reads `all: true`; an entry the annotation already
//! had for a claim (for example a `resourceSelector` someone set at v1alpha1) is kept as it was.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// kcp's annotation with an APIExport's claims as v1alpha1 wrote them
/// (`PermissionClaimsV1Alpha1Annotation` in kcp's `apis/v1alpha2`).
pub const V1ALPHA1_CLAIMS_ANNOTATION: &str = "apis.v1alpha2.kcp.io/v1alpha1-permission-claims";

/// One v1alpha1 permission claim, its fields in the order Go writes them.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct V1alpha1Claim {
    /// API group (absent for core).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// Resource (plural).
    pub resource: String,
    /// Every object of the resource.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub all: bool,
    /// The objects claimed, by name and namespace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_selector: Vec<ResourceSelector>,
    /// Identity hash of the providing export.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub identity_hash: String,
}

/// One object a v1alpha1 claim selects.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ResourceSelector {
    /// The object's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Its namespace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
}

impl V1alpha1Claim {
    fn names(&self, group: &str, resource: &str, identity_hash: &str) -> bool {
        (
            self.group.as_str(),
            self.resource.as_str(),
            self.identity_hash.as_str(),
        ) == (group, resource, identity_hash)
    }
}

/// The annotation's value for the v1alpha2 `claims`, given its value as read (`existing`):
/// `None` when no claim has a v1alpha1 form and there was no annotation. When the result
/// equals `existing` up to order and formatting, `existing` itself is answered, so an
/// unchanged export is not written.
pub fn v1alpha1_claims_annotation(claims: &[Value], existing: Option<&str>) -> Option<String> {
    let recorded: Vec<V1alpha1Claim> = existing
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or_default();
    let mut wanted: Vec<V1alpha1Claim> = claims
        .iter()
        .filter_map(|claim| v1alpha1_form(claim, &recorded))
        .collect();
    if wanted.is_empty() && existing.is_none() {
        return None;
    }
    let mut sorted_recorded = recorded.clone();
    sorted_recorded.sort();
    let text = serde_json::to_string(&wanted).unwrap_or_else(|_| "[]".into());
    wanted.sort();
    match existing {
        Some(existing) if wanted == sorted_recorded => Some(existing.to_owned()),
        _ => Some(text),
    }
}

/// A v1alpha2 claim's v1alpha1 form: the annotation's entry for it, else `all: true` when it
/// claims every verb; a claim of other verbs has none (kcp keeps it in another annotation).
fn v1alpha1_form(claim: &Value, recorded: &[V1alpha1Claim]) -> Option<V1alpha1Claim> {
    let text = |key: &str| claim.get(key).and_then(Value::as_str).unwrap_or_default();
    let (group, resource, identity_hash) = (text("group"), text("resource"), text("identityHash"));
    if let Some(entry) = recorded
        .iter()
        .find(|r| r.names(group, resource, identity_hash))
    {
        return Some(entry.clone());
    }
    let verbs: Vec<&str> = claim
        .get("verbs")
        .and_then(Value::as_array)
        .map(|verbs| verbs.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    (verbs == ["*"]).then(|| V1alpha1Claim {
        group: group.to_owned(),
        resource: resource.to_owned(),
        all: true,
        resource_selector: Vec::new(),
        identity_hash: identity_hash.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_claim_of_every_verb_reads_all_at_v1alpha1_in_gos_field_order() {
        let claims = [
            json!({"group": "", "resource": "events", "identityHash": "", "verbs": ["*"]}),
            json!({"group": "initroid.example.com", "resource": "backups",
                "identityHash": "abc", "verbs": ["*"]}),
        ];
        assert_eq!(
            v1alpha1_claims_annotation(&claims, None).as_deref(),
            Some(
                r#"[{"resource":"events","all":true},{"group":"initroid.example.com","resource":"backups","all":true,"identityHash":"abc"}]"#
            )
        );
    }

    #[test]
    fn a_claim_of_some_verbs_has_no_v1alpha1_form() {
        let claims = [json!({"resource": "secrets", "verbs": ["get", "list"]})];
        assert_eq!(v1alpha1_claims_annotation(&claims, None), None);
    }

    #[test]
    fn an_entry_kcp_kept_for_a_claim_stays_as_it_was() {
        let claims = [json!({"resource": "configmaps", "verbs": ["*"]})];
        let existing =
            r#"[{"resource":"configmaps","resourceSelector":[{"name":"one","namespace":"a"}]}]"#;
        assert_eq!(
            v1alpha1_claims_annotation(&claims, Some(existing)).as_deref(),
            Some(existing)
        );
    }

    #[test]
    fn the_same_claims_in_another_order_leave_the_annotation_as_read() {
        let claims = [
            json!({"resource": "events", "verbs": ["*"]}),
            json!({"resource": "namespaces", "verbs": ["*"]}),
        ];
        let existing = r#"[{"resource":"namespaces","all":true},{"resource":"events","all":true}]"#;
        assert_eq!(
            v1alpha1_claims_annotation(&claims, Some(existing)).as_deref(),
            Some(existing)
        );
    }

    #[test]
    fn an_entry_for_a_claim_no_longer_listed_goes() {
        let claims = [json!({"resource": "events", "verbs": ["*"]})];
        let existing = r#"[{"resource":"events","all":true},{"resource":"secrets","all":true}]"#;
        assert_eq!(
            v1alpha1_claims_annotation(&claims, Some(existing)).as_deref(),
            Some(r#"[{"resource":"events","all":true}]"#)
        );
    }
}
