//! The preconditions a write carries in its own object, checked as kube-apiserver's storage
//! checks them: a `resourceVersion` (a number; `0` asks for an unconditional write; another
//! revision than the stored one is the optimistic-lock conflict), the `uid` of an update's body
//! (the object it meant), and a create, which may not name a revision at all.

use serde_json::Value;

use crate::resource::ResourceType;
use crate::status::{ApiError, ApiResult};

/// kube-apiserver's optimistic-lock conflict: a write named a resourceVersion that is no longer
/// the object's.
pub(crate) fn stale_write(rt: &ResourceType, name: &str) -> ApiError {
    ApiError::conflict(
        &rt.group,
        &rt.plural,
        name,
        "the object has been modified; please apply your changes to the latest version and try again",
    )
}

/// A write's `resourceVersion` against the stored object's `current` one. One that is not a
/// number is the storage versioner's error (a 500 without a reason, Go's words); `0` and none
/// write whatever is stored.
pub(crate) fn resource_version(
    rt: &ResourceType,
    name: &str,
    sent: Option<&str>,
    current: u64,
) -> ApiResult<()> {
    let Some(sent) = sent.filter(|rv| !rv.is_empty()) else {
        return Ok(());
    };
    match parse_revision(sent)? {
        0 => Ok(()),
        rv if rv == current => Ok(()),
        _ => Err(stale_write(rt, name)),
    }
}

/// A `PUT`'s `resourceVersion` (of the object or its status) against the stored object's
/// `current` one: as [`resource_version`], except that a kind whose strategy does not allow
/// unconditional updates ([`allows_unconditional_update`]) refuses none or `0` with the
/// registry's 422.
pub(crate) fn update_revision(
    rt: &ResourceType,
    name: &str,
    sent: Option<&str>,
    current: u64,
) -> ApiResult<()> {
    let sent = sent.filter(|rv| !rv.is_empty());
    if !allows_unconditional_update(rt) && sent.map(parse_revision).transpose()?.unwrap_or(0) == 0 {
        return Err(ApiError::invalid(
            &rt.group,
            &rt.plural,
            name,
            "metadata.resourceVersion",
            "Invalid value: 0: must be specified for an update",
        ));
    }
    resource_version(rt, name, sent, current)
}

/// kube's `AllowUnconditionalUpdate`: whether a `PUT` may leave out `resourceVersion` and
/// overwrite whatever is stored. Custom resources (kcp's own kinds are custom resources too),
/// CustomResourceDefinitions, APIServices and the builtin kinds whose strategies say so
/// (Leases, admission webhooks and policies, PodDisruptionBudgets, the CSI kinds, ...) may not.
pub(crate) fn allows_unconditional_update(rt: &ResourceType) -> bool {
    if !rt.is_typed() {
        return false;
    }
    !matches!(
        (rt.group.as_str(), rt.plural.as_str()),
        ("apiextensions.k8s.io", "customresourcedefinitions")
            | ("apiregistration.k8s.io", "apiservices")
            | (
                "admissionregistration.k8s.io",
                "mutatingadmissionpolicies"
                    | "mutatingadmissionpolicybindings"
                    | "mutatingwebhookconfigurations"
                    | "validatingadmissionpolicies"
                    | "validatingadmissionpolicybindings"
                    | "validatingwebhookconfigurations"
            )
            | ("internal.apiserver.k8s.io", "storageversions")
            | (
                "certificates.k8s.io",
                "clustertrustbundles" | "podcertificaterequests"
            )
            | ("coordination.k8s.io", "leases" | "leasecandidates")
            | ("node.k8s.io", "runtimeclasses")
            | ("policy", "poddisruptionbudgets")
            | (
                "storage.k8s.io",
                "csidrivers" | "csinodes" | "csistoragecapacities" | "volumeattachments"
            )
            | ("storagemigration.k8s.io", "storageversionmigrations")
    )
}

/// A create's object may not name a revision other than `0` (the storage's
/// `ErrResourceVersionSetOnCreate`, a 500 without a reason); one that is not a number is
/// dropped, as kube drops it.
pub(crate) fn none_on_create(obj: &Value) -> ApiResult<()> {
    let sent = obj
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match sent.parse::<u64>() {
        Ok(rv) if rv != 0 => Err(ApiError::new(
            500,
            "",
            "resourceVersion should not be set on objects to be created",
        )),
        _ => Ok(()),
    }
}

/// The `uid` an update's body names must be the stored object's: otherwise the storage's
/// precondition fails, a 409 that names the object's storage key.
pub(crate) fn uid(
    rt: &ResourceType,
    custom: bool,
    (namespace, name): (&str, &str),
    sent: Option<&str>,
    current: &str,
) -> ApiResult<()> {
    let Some(sent) = sent.filter(|uid| !uid.is_empty() && *uid != current) else {
        return Ok(());
    };
    let key = storage_key(rt, custom, namespace, name);
    Err(ApiError::conflict(
        &rt.group,
        &rt.plural,
        name,
        &format!(
            "StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, \
             AdditionalErrorMsg: Precondition failed: UID in precondition: {sent}, UID in object meta: {current}"
        ),
    ))
}

/// The etcd key kube-apiserver keeps an object under: builtin kinds under their resource (with
/// kube's historical exceptions), custom resources, CRDs and APIServices under their group too.
pub fn storage_key(rt: &ResourceType, custom: bool, namespace: &str, name: &str) -> String {
    let prefix = match (rt.group.as_str(), rt.plural.as_str()) {
        (group, plural)
            if custom || matches!(group, "apiextensions.k8s.io" | "apiregistration.k8s.io") =>
        {
            format!("{group}/{plural}")
        }
        ("", "nodes") => "minions".to_owned(),
        ("", "services") => "services/specs".to_owned(),
        ("networking.k8s.io", "ingresses") => "ingress".to_owned(),
        (_, plural) => plural.to_owned(),
    };
    if namespace.is_empty() {
        format!("/registry/{prefix}/{name}")
    } else {
        format!("/registry/{prefix}/{namespace}/{name}")
    }
}

/// A revision as kube's versioner reads it (`strconv.ParseUint`), or its error.
fn parse_revision(text: &str) -> ApiResult<u64> {
    text.parse::<u64>().map_err(|e| {
        let why = match e.kind() {
            std::num::IntErrorKind::PosOverflow => "value out of range",
            _ => "invalid syntax",
        };
        ApiError::new(
            500,
            "",
            format!(
                "strconv.ParseUint: parsing {}: {why}",
                crate::schema::field::go_json(&Value::String(text.to_owned()))
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn configmaps() -> ResourceType {
        crate::resource::builtin_types(crate::resource::Flavor::Kubernetes)
            .into_iter()
            .find(|rt| rt.plural == "configmaps")
            .unwrap()
    }

    #[test]
    fn a_revision_that_is_not_a_number_is_gos_parse_error() {
        // As kube-apiserver v1.34.2 answered (concurrency-edges/an-update-with-a-resource-version-that-is-not-a-number-is-refused).
        let err = resource_version(&configmaps(), "one", Some("abc"), 3).unwrap_err();
        assert_eq!((err.code, err.reason), (500, ""));
        assert_eq!(
            err.message,
            "strconv.ParseUint: parsing \"abc\": invalid syntax"
        );
    }

    #[test]
    fn revision_zero_and_none_write_unconditionally() {
        assert!(resource_version(&configmaps(), "one", Some("0"), 3).is_ok());
        assert!(resource_version(&configmaps(), "one", None, 3).is_ok());
        assert_eq!(
            resource_version(&configmaps(), "one", Some("2"), 3)
                .unwrap_err()
                .code,
            409
        );
    }

    #[test]
    fn a_create_may_name_revision_zero_only() {
        assert!(none_on_create(&serde_json::json!({"metadata": {"resourceVersion": "0"}})).is_ok());
        let err = none_on_create(&serde_json::json!({"metadata": {"resourceVersion": "5"}}));
        assert_eq!(err.unwrap_err().code, 500);
    }

    #[test]
    fn another_uid_names_the_storage_key() {
        let err = uid(&configmaps(), false, ("ns", "one"), Some("b"), "a").unwrap_err();
        assert_eq!(
            err.message,
            "Operation cannot be fulfilled on configmaps \"one\": StorageError: invalid object, \
             Code: 4, Key: /registry/configmaps/ns/one, ResourceVersion: 0, AdditionalErrorMsg: \
             Precondition failed: UID in precondition: b, UID in object meta: a"
        );
    }
}
