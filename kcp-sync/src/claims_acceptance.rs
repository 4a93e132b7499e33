//! Whether consumers accepted the permission claims a PublishedResource needs (beyond
//! upstream, which only sends `AddingPermissionClaims` on the APIExport).
//!
//! A claim the APIExport gains (a PublishedResource relates Secrets, say) serves no consumer
//! until each consumer's APIBinding accepts it; until then the agent gets 403 for that
//! resource in that workspace. kcp's apiexport virtual workspace shows the agent every
//! APIBinding to its export, so the agent can tell: a claim counts as accepted when the
//! binding's claim (read at v1alpha1) has `state: Accepted` and `all: true`, since kcp
//! intersects the binding's verbs with the export's `["*"]` literally.
//!
//! The result is the PublishedResource's condition [`CONDITION_CLAIMS_ACCEPTED`]: True when
//! every consumer accepted every claim it needs, else False naming the consumers and claims
//! (the publisher also sends a Warning Event when it turns False).

use std::collections::{BTreeMap, BTreeSet};

use kcp_core::runtime::ConditionUpdate;
use serde_json::Value;

use crate::export::WantedClaim;

/// Condition type: every consumer's APIBinding accepts the claims this PublishedResource needs.
pub const CONDITION_CLAIMS_ACCEPTED: &str = "ClaimsAccepted";

/// The reason of [`CONDITION_CLAIMS_ACCEPTED`] False, and of its Warning Event.
pub const CLAIMS_NOT_ACCEPTED: &str = "ClaimsNotAccepted";

/// How many consumers a condition message names before it counts the rest.
const NAMED_CONSUMERS: usize = 5;

/// The claims an APIBinding (as JSON, `apis.kcp.io/v1alpha1`) accepts for every verb.
pub fn accepted_claims(binding: &Value) -> BTreeSet<WantedClaim> {
    let text = |claim: &Value, key: &str| {
        claim
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    binding
        .pointer("/spec/permissionClaims")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|claim| {
            claim.get("state").and_then(Value::as_str) == Some("Accepted")
                && claim.get("all").and_then(Value::as_bool) == Some(true)
        })
        .map(|claim| WantedClaim {
            group: text(claim, "group"),
            resource: text(claim, "resource"),
            identity_hash: text(claim, "identityHash"),
        })
        .collect()
}

/// Per consumer cluster (`bindings`: its APIBindings to the export), the `needed` claims none
/// of its bindings accepts; consumers that accept everything are left out.
pub fn unaccepted(
    needed: &BTreeSet<WantedClaim>,
    bindings: &BTreeMap<String, Vec<Value>>,
) -> BTreeMap<String, BTreeSet<WantedClaim>> {
    bindings
        .iter()
        .filter_map(|(cluster, bindings)| {
            let accepted: BTreeSet<WantedClaim> =
                bindings.iter().flat_map(accepted_claims).collect();
            let missing: BTreeSet<WantedClaim> = needed.difference(&accepted).cloned().collect();
            (!missing.is_empty()).then(|| (cluster.clone(), missing))
        })
        .collect()
}

/// The [`CONDITION_CLAIMS_ACCEPTED`] condition for what [`unaccepted`] found.
pub fn condition(missing: &BTreeMap<String, BTreeSet<WantedClaim>>) -> ConditionUpdate {
    if missing.is_empty() {
        return ConditionUpdate::new(CONDITION_CLAIMS_ACCEPTED, true, "AllAccepted")
            .message("Every consumer's APIBinding accepts the permission claims needed.");
    }
    let named: Vec<String> = missing
        .iter()
        .take(NAMED_CONSUMERS)
        .map(|(cluster, claims)| {
            let claims: Vec<String> = claims.iter().map(ToString::to_string).collect();
            format!("{cluster} ({})", claims.join(", "))
        })
        .collect();
    let more = missing.len().saturating_sub(NAMED_CONSUMERS);
    let rest = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    ConditionUpdate::new(CONDITION_CLAIMS_ACCEPTED, false, CLAIMS_NOT_ACCEPTED).message(format!(
        "{} consumer workspace(s) have not accepted, for all verbs, permission claims this \
         PublishedResource needs: {}{rest}. Each must accept them in its APIBinding to the \
         APIExport (v1alpha1 `all: true`, or v1alpha2 `verbs: [\"*\"]`).",
        missing.len(),
        named.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn claim(resource: &str) -> WantedClaim {
        WantedClaim {
            group: String::new(),
            resource: resource.into(),
            identity_hash: String::new(),
        }
    }

    fn binding(claims: Value) -> Value {
        json!({"spec": {"permissionClaims": claims}})
    }

    #[test]
    fn only_claims_accepted_for_every_verb_count() {
        let b = binding(json!([
            {"resource": "events", "all": true, "state": "Accepted"},
            {"resource": "secrets", "all": true, "state": "Rejected"},
            {"resource": "configmaps", "resourceSelector": [{"name": "one"}], "state": "Accepted"},
        ]));
        assert_eq!(accepted_claims(&b), BTreeSet::from([claim("events")]));
    }

    #[test]
    fn a_consumer_missing_a_needed_claim_is_named_with_it() {
        let needed = BTreeSet::from([claim("events"), claim("secrets")]);
        let bindings = BTreeMap::from([
            (
                "good".to_owned(),
                vec![binding(json!([
                    {"resource": "events", "all": true, "state": "Accepted"},
                    {"resource": "secrets", "all": true, "state": "Accepted"},
                ]))],
            ),
            (
                "late".to_owned(),
                vec![binding(
                    json!([{"resource": "events", "all": true, "state": "Accepted"}]),
                )],
            ),
        ]);
        let missing = unaccepted(&needed, &bindings);
        assert_eq!(
            missing,
            BTreeMap::from([("late".to_owned(), BTreeSet::from([claim("secrets")]))])
        );
        let condition = condition(&missing);
        assert_eq!(condition.reason, CLAIMS_NOT_ACCEPTED);
        assert!(
            condition.message.contains("late (secrets)"),
            "{}",
            condition.message
        );
    }

    #[test]
    fn with_every_claim_accepted_the_condition_holds() {
        let condition = condition(&BTreeMap::new());
        assert_eq!(condition.type_, CONDITION_CLAIMS_ACCEPTED);
        assert_eq!(condition.reason, "AllAccepted");
    }

    #[test]
    fn a_message_names_five_consumers_and_counts_the_rest() {
        let missing: BTreeMap<String, BTreeSet<WantedClaim>> = (0..8)
            .map(|i| (format!("c{i}"), BTreeSet::from([claim("secrets")])))
            .collect();
        let message = condition(&missing).message;
        assert!(message.starts_with("8 consumer workspace(s)"), "{message}");
        assert!(message.contains("c4 (secrets) and 3 more"), "{message}");
        assert!(!message.contains("c5"), "{message}");
    }
}
