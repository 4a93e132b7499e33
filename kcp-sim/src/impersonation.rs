//! Who may impersonate whom: a request that authenticates as a ServiceAccount (its bearer token)
//! and impersonates must be allowed the verb `impersonate` on each thing it asks to act as, as
//! kube-apiserver's impersonation filter checks it before the request itself is authorized: the
//! user (resource `users`, or `serviceaccounts` in its namespace for a ServiceAccount's user
//! name), then each group (`groups`). The first refusal is kube's Forbidden naming the
//! requester (seen on kube-apiserver v1.34.2; conformance `kubectl-tokens.yaml`).
//!
//! kcp-sim's admin (a request with no token, or its kubeconfig's) may impersonate anyone, as
//! `system:masters` may.

use crate::authorization::{self, Attributes, Decision, User, forbidden};
use crate::resource::Flavor;
use crate::status::ApiResult;
use crate::store::State;

/// Refuses `requester`'s impersonation in `headers` unless RBAC in `cluster` allows all of it.
pub fn check(
    state: &State,
    cluster: &str,
    requester: &User,
    headers: &http::HeaderMap,
) -> ApiResult<()> {
    for attrs in asked(headers) {
        match authorization::decide(state, cluster, requester, &attrs) {
            Decision::Allowed => {}
            Decision::Denied if state.flavor == Flavor::Kubernetes => {
                return Err(forbidden(requester, &attrs, ""));
            }
            Decision::Denied | Decision::NoWorkspaceAccess => {
                return Err(forbidden(requester, &attrs, ": access denied"));
            }
        }
    }
    Ok(())
}

/// What impersonating as `headers` ask asks to be allowed, in the order kube checks it.
fn asked(headers: &http::HeaderMap) -> Vec<Attributes> {
    let impersonate = |resource: &str, namespace: &str, name: &str| Attributes {
        verb: "impersonate".into(),
        resource: resource.into(),
        namespace: namespace.into(),
        name: name.into(),
        ..Attributes::default()
    };
    let values = |header: &str| {
        headers
            .get_all(header)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let mut asked = Vec::new();
    for user in values("impersonate-user") {
        asked.push(match service_account(&user) {
            Some((namespace, name)) => impersonate("serviceaccounts", namespace, name),
            None => impersonate("users", "", &user),
        });
    }
    for group in values("impersonate-group") {
        asked.push(impersonate("groups", "", &group));
    }
    asked
}

/// The namespace and name of a ServiceAccount's user name (`system:serviceaccount:<ns>:<name>`).
fn service_account(user: &str) -> Option<(&str, &str)> {
    let namespace = authorization::service_account_namespace(user)?;
    let name = user.rsplit(':').next()?;
    Some((namespace, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> http::HeaderMap {
        let mut map = http::HeaderMap::new();
        for (key, value) in pairs {
            map.append(*key, http::HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn a_user_then_each_group_is_asked_for() {
        let asked = asked(&headers(&[
            ("impersonate-user", "someone"),
            ("impersonate-group", "a"),
            ("impersonate-group", "b"),
        ]));
        let seen: Vec<(&str, &str)> = asked
            .iter()
            .map(|a| (a.resource.as_str(), a.name.as_str()))
            .collect();
        assert_eq!(
            seen,
            [("users", "someone"), ("groups", "a"), ("groups", "b")]
        );
        assert!(asked.iter().all(|a| a.verb == "impersonate"));
    }

    #[test]
    fn a_service_account_is_asked_for_in_its_namespace() {
        let asked = asked(&headers(&[(
            "impersonate-user",
            "system:serviceaccount:team:robot",
        )]));
        assert_eq!(
            (
                asked[0].resource.as_str(),
                asked[0].namespace.as_str(),
                asked[0].name.as_str()
            ),
            ("serviceaccounts", "team", "robot")
        );
    }
}
