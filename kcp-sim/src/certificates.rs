//! CertificateSigningRequests as kube-apiserver's certificates registry keeps them: the
//! requester is recorded from the user who creates one, nobody changes the spec afterwards,
//! the `approval` subresource is the only way to add the Approved and Denied conditions, and
//! nothing removes them. kcp-sim runs no signer, so no certificate is ever issued.
//!
//! kube-apiserver's rules kept here (each checked on kube-apiserver v1.34, conformance file
//! `kubectl-cluster`): the request must be a PEM `CERTIFICATE REQUEST`; the signer and usages
//! are required, usages from kube's list and without repeats; a requested duration is at least
//! ten minutes; Approved and Denied are mutually exclusive and only `True`; a condition without
//! times gets the write's time; the spec and status are reset fields, so a create tracks only
//! the metadata its writer set.

use serde_json::{Map, Value, json};

use crate::authorization::User;
use crate::resource::ResourceType;
use crate::schema::field::{ErrorType, FieldError};

/// The key usages kube accepts (`KeyUsage` values), in kube's order of its message.
const USAGES: &[&str] = &[
    "any",
    "cert sign",
    "client auth",
    "code signing",
    "content commitment",
    "crl sign",
    "data encipherment",
    "decipher only",
    "digital signature",
    "email protection",
    "encipher only",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "key agreement",
    "key encipherment",
    "microsoft sgc",
    "netscape sgc",
    "ocsp signing",
    "s/mime",
    "server auth",
    "signing",
    "timestamping",
];

/// The condition types that only approval adds, and that nothing removes.
const DECISIONS: &[&str] = &["Approved", "Denied"];

/// Which part of a request a write goes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The object itself: only its metadata changes.
    Main,
    /// `/status`: the status, but no decision.
    Status,
    /// `/approval`: the conditions, decisions included.
    Approval,
}

/// The part a write of `rt` goes through, when `rt` is CertificateSigningRequests: `status` is
/// set for any subresource, `approval` for `/approval`.
pub fn part(rt: &ResourceType, status: bool, approval: bool) -> Option<Part> {
    is_request(rt).then_some(match (status, approval) {
        (true, true) => Part::Approval,
        (true, false) => Part::Status,
        (false, _) => Part::Main,
    })
}

/// Whether `rt` is CertificateSigningRequests.
pub fn is_request(rt: &ResourceType) -> bool {
    (rt.group.as_str(), rt.kind.as_str()) == ("certificates.k8s.io", "CertificateSigningRequest")
}

/// The strategy's `PrepareForCreate`: an empty status, and the requester's name, uid, groups and
/// extra in the spec (whatever the body said).
pub fn admit_new(obj: &mut Value, requester: &User) {
    obj["status"] = json!({});
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    for key in ["username", "uid", "groups", "extra"] {
        spec.remove(key);
    }
    if !requester.name.is_empty() {
        spec.insert("username".into(), json!(requester.name));
    }
    if !requester.uid.is_empty() {
        spec.insert("uid".into(), json!(requester.uid));
    }
    if !requester.groups.is_empty() {
        spec.insert("groups".into(), json!(requester.groups));
    }
    if !requester.extra.is_empty() {
        spec.insert("extra".into(), json!(requester.extra));
    }
}

/// What a write through `part` leaves of `requested`, over the stored `old`: the spec is always
/// the stored one; the main resource keeps the stored status; approval changes only the
/// conditions.
pub fn merge_update(part: Part, old: &Value, requested: Value) -> Value {
    let stored = |key: &str| old.get(key).cloned().unwrap_or(json!({}));
    let (mut new, status) = match part {
        Part::Main => (requested, stored("status")),
        Part::Status => (
            old.clone(),
            requested.get("status").cloned().unwrap_or(json!({})),
        ),
        Part::Approval => {
            let mut status = stored("status");
            match (
                requested.pointer("/status/conditions"),
                status.as_object_mut(),
            ) {
                (Some(c), Some(status)) if !c.is_null() => {
                    status.insert("conditions".into(), c.clone());
                }
                (_, Some(status)) => {
                    status.remove("conditions");
                }
                _ => {}
            }
            (old.clone(), status)
        }
    };
    if let Some(root) = new.as_object_mut() {
        root.insert("spec".into(), stored("spec"));
        root.insert("status".into(), status);
    }
    new
}

/// `populateConditionTimestamps`: a condition written without `lastUpdateTime` or
/// `lastTransitionTime` gets `now`, unless it is the stored condition of its type unchanged, whose
/// times it keeps.
pub fn stamp_condition_times(old: &Value, new: &mut Value, now: &str) {
    let stored = conditions(old);
    let Some(list) = new
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for condition in list.iter_mut().filter_map(Value::as_object_mut) {
        let before = stored
            .iter()
            .find(|c| c.get("type") == condition.get("type"));
        for key in ["lastUpdateTime", "lastTransitionTime"] {
            if condition.get(key).is_some_and(|t| !t.is_null()) {
                continue;
            }
            let kept = before
                .filter(|c| c.get("status") == condition.get("status"))
                .and_then(|c| c.get(key))
                .filter(|t| !t.is_null());
            let time = kept.cloned().unwrap_or_else(|| json!(now));
            condition.insert(key.into(), time);
        }
    }
}

/// `ValidateCertificateSigningRequestCreate`: the request, usages, signer and duration.
pub fn create_errors(csr: &Value) -> Vec<FieldError> {
    let spec = csr.get("spec").cloned().unwrap_or(json!({}));
    let mut errors = Vec::new();
    let request = spec.get("request").cloned().unwrap_or(json!(""));
    if let Some(reason) = request_error(request.as_str().unwrap_or_default()) {
        errors.push(FieldError::invalid("spec.request", request, reason));
    }
    errors.extend(usage_errors(&spec));
    let signer = spec.get("signerName").and_then(Value::as_str);
    if signer.is_none_or(str::is_empty) {
        errors.push(FieldError::required("spec.signerName", ""));
    }
    if let Some(seconds) = spec.get("expirationSeconds").and_then(Value::as_i64)
        && seconds < 600
    {
        errors.push(FieldError::invalid(
            "spec.expirationSeconds",
            json!(seconds),
            "may not specify a duration less than 600 seconds (10 minutes)",
        ));
    }
    errors
}

/// Why a request (the base64 of a PEM block) is not a certificate request, as Go's
/// `ParseCSR` words the first check.
fn request_error(encoded: &str) -> Option<String> {
    use base64::Engine as _;
    let pem_type = "PEM block type must be CERTIFICATE REQUEST";
    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(encoded) else {
        return Some(pem_type.into());
    };
    let block = match pem::parse(&bytes) {
        Ok(block) if block.tag() == "CERTIFICATE REQUEST" => block,
        _ => return Some(pem_type.into()),
    };
    use x509_parser::prelude::FromDer as _;
    match x509_parser::certification_request::X509CertificationRequest::from_der(block.contents()) {
        Ok(_) => None,
        Err(e) => Some(format!("asn1: {e}")),
    }
}

fn usage_errors(spec: &Value) -> Vec<FieldError> {
    let usages: Vec<&Value> = spec
        .get("usages")
        .and_then(Value::as_array)
        .map(|u| u.iter().collect())
        .unwrap_or_default();
    if usages.is_empty() {
        return vec![FieldError::required("spec.usages", "")];
    }
    let supported = USAGES
        .iter()
        .map(|u| format!("{u:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut errors = Vec::new();
    for (i, usage) in usages.iter().enumerate() {
        let field = format!("spec.usages[{i}]");
        if !usage.as_str().is_some_and(|u| USAGES.contains(&u)) {
            errors.push(FieldError::new(
                ErrorType::NotSupported,
                field,
                Some((*usage).clone()),
                format!("supported values: {supported}"),
            ));
        } else if usages[..i].contains(usage) {
            errors.push(FieldError::new(
                ErrorType::Duplicate,
                field,
                Some((*usage).clone()),
                "",
            ));
        }
    }
    errors
}

/// The update rules of `part` over the create rules, in kube's order: each condition, then no
/// write removes an Approved, Denied or Failed condition, then only approval adds or changes a
/// decision.
pub fn update_errors(part: Part, old: &Value, new: &Value) -> Vec<FieldError> {
    let mut errors = condition_errors(new);
    let of_type = |csr: &Value, kind: &str| -> Vec<Map<String, Value>> {
        conditions(csr)
            .into_iter()
            .filter(|c| c.get("type").and_then(Value::as_str) == Some(kind))
            .collect()
    };
    for kind in ["Approved", "Denied", "Failed"] {
        if of_type(new, kind).len() < of_type(old, kind).len() {
            errors.push(FieldError::forbidden(
                "status.conditions",
                format!("updates may not remove a condition of type {kind:?}"),
            ));
        }
    }
    if part == Part::Approval {
        return errors;
    }
    for kind in DECISIONS {
        let (before, after) = (of_type(old, kind), of_type(new, kind));
        let verb = match after.len().cmp(&before.len()) {
            std::cmp::Ordering::Less => continue,
            std::cmp::Ordering::Greater => "add",
            std::cmp::Ordering::Equal if after != before => "modify",
            std::cmp::Ordering::Equal => continue,
        };
        errors.push(FieldError::forbidden(
            "status.conditions",
            format!("updates may not {verb} a condition of type {kind:?}"),
        ));
    }
    errors
}

/// Each condition's type and status (decisions and `Failed` are only `True`, the rest `True`,
/// `False` or `Unknown`, each of those three appears once, and a decision follows no other).
fn condition_errors(csr: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let list = conditions(csr);
    for (i, condition) in list.iter().enumerate() {
        let field = format!("status.conditions[{i}]");
        let kind = condition.get("type").and_then(Value::as_str).unwrap_or("");
        if kind.is_empty() {
            errors.push(FieldError::required(format!("{field}.type"), ""));
        }
        let allowed: &[&str] = if DECISIONS.contains(&kind) || kind == "Failed" {
            &["True"]
        } else {
            &["False", "True", "Unknown"]
        };
        let status = condition.get("status").cloned().unwrap_or(json!(""));
        if !status.as_str().is_some_and(|s| allowed.contains(&s)) {
            let supported: Vec<String> = allowed.iter().map(|s| format!("{s:?}")).collect();
            errors.push(FieldError::new(
                ErrorType::NotSupported,
                format!("{field}.status"),
                Some(status),
                format!("supported values: {}", supported.join(", ")),
            ));
        }
        let sticky = DECISIONS.contains(&kind) || kind == "Failed";
        if sticky
            && list[..i]
                .iter()
                .any(|c| c.get("type") == condition.get("type"))
        {
            errors.push(FieldError::new(
                ErrorType::Duplicate,
                format!("{field}.type"),
                Some(json!(kind)),
                "",
            ));
        }
        // The second decision is the one named.
        let other = match kind {
            "Approved" => "Denied",
            "Denied" => "Approved",
            _ => continue,
        };
        if list[..i].iter().any(|c| c["type"] == other) {
            errors.push(FieldError::invalid(
                "status.conditions",
                json!(kind),
                "Approved and Denied conditions are mutually exclusive",
            ));
        }
    }
    errors
}

fn conditions(csr: &Value) -> Vec<Map<String, Value>> {
    csr.pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(|c| c.as_object().cloned()).collect())
        .unwrap_or_default()
}

/// `printCertificateSigningRequest`'s requestor: the spec's user name.
pub fn requestor_cell(csr: &Value) -> Value {
    json!(
        csr.pointer("/spec/username")
            .and_then(Value::as_str)
            .unwrap_or_default()
    )
}

/// The requested duration as kube prints a duration, `<none>` when none was asked for.
pub fn requested_duration_cell(csr: &Value) -> Value {
    match csr
        .pointer("/spec/expirationSeconds")
        .and_then(Value::as_i64)
    {
        Some(seconds) => json!(crate::table::human_duration(seconds)),
        None => json!("<none>"),
    }
}

/// The condition column: `Denied`, `Approved` or `Pending`, then `,Failed` and `,Issued`.
pub fn condition_cell(csr: &Value) -> Value {
    let list = conditions(csr);
    let has = |kind: &str| list.iter().any(|c| c["type"] == kind);
    let mut out = if has("Denied") {
        "Denied"
    } else if has("Approved") {
        "Approved"
    } else {
        "Pending"
    }
    .to_string();
    if has("Failed") {
        out.push_str(",Failed");
    }
    if csr
        .pointer("/status/certificate")
        .and_then(Value::as_str)
        .is_some_and(|c| !c.is_empty())
    {
        out.push_str(",Issued");
    }
    json!(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A P-256 certificate request for `CN=alice,O=dev`, as openssl writes it.
    const REQUEST_PEM: &str = "-----BEGIN CERTIFICATE REQUEST-----
MIHZMIGAAgEAMB4xDjAMBgNVBAMMBWFsaWNlMQwwCgYDVQQKDANkZXYwWTATBgcq
hkjOPQIBBggqhkjOPQMBBwNCAAQLI710dCaT4l4mr/2jDTfjzJMz1ltvW9nOQGx0
KSH/1mr7Z2xI5qmAbBZ1WnlRLHLOxQXkcJoA+3IVrgCoyfd1oAAwCgYIKoZIzj0E
AwIDSAAwRQIgTuce7H+22kJlG1GryOZRN/fzh+P/BqTRUmOAtuZoeMMCIQDUc2vj
tG+P/Az5WbXXPE50akxPkqLDTKI/SO6ZOTJlbg==
-----END CERTIFICATE REQUEST-----
";

    fn csr(conditions: Value) -> Value {
        use base64::Engine as _;
        let request = base64::engine::general_purpose::STANDARD.encode(REQUEST_PEM);
        json!({
            "metadata": {"name": "alice"},
            "spec": {"request": request, "signerName": "kubernetes.io/kube-apiserver-client",
                "usages": ["client auth"]},
            "status": {"conditions": conditions},
        })
    }

    fn approved() -> Value {
        json!([{"type": "Approved", "status": "True", "reason": "KubectlApprove"}])
    }

    #[test]
    fn a_well_formed_request_is_accepted() {
        assert_eq!(create_errors(&csr(json!([]))), Vec::new());
    }

    #[test]
    fn a_request_that_is_not_pem_is_refused_with_kubes_words() {
        let mut bad = csr(json!([]));
        bad["spec"]["request"] = json!("aGVsbG8K");
        let errors = create_errors(&bad);
        assert_eq!(
            errors[0].message(),
            "spec.request: Invalid value: \"aGVsbG8K\": PEM block type must be CERTIFICATE REQUEST"
        );
    }

    #[test]
    fn usages_must_be_kubes_and_a_duration_at_least_ten_minutes() {
        let mut bad = csr(json!([]));
        bad["spec"]["usages"] = json!(["client auth", "bogus", "client auth"]);
        bad["spec"]["expirationSeconds"] = json!(100);
        let messages: Vec<String> = create_errors(&bad).iter().map(|e| e.message()).collect();
        assert!(messages[0].starts_with(
            "spec.usages[1]: Unsupported value: \"bogus\": supported values: \"any\", \"cert sign\""
        ));
        assert_eq!(
            messages[1],
            "spec.usages[2]: Duplicate value: \"client auth\""
        );
        assert_eq!(
            messages[2],
            "spec.expirationSeconds: Invalid value: 100: may not specify a duration less than 600 seconds (10 minutes)"
        );
    }

    #[test]
    fn the_requester_replaces_what_the_body_claims() {
        let mut new = csr(json!([]));
        new["spec"]["username"] = json!("mallory");
        new["spec"]["uid"] = json!("42");
        let bob = User {
            name: "bob".into(),
            groups: vec!["devs".into(), "system:authenticated".into()],
            ..User::default()
        };
        admit_new(&mut new, &bob);
        assert_eq!(new["spec"]["username"], "bob");
        assert_eq!(
            new["spec"]["groups"],
            json!(["devs", "system:authenticated"])
        );
        assert!(new["spec"].get("uid").is_none());
        assert_eq!(new["status"], json!({}));
    }

    #[test]
    fn the_main_resource_changes_neither_spec_nor_status() {
        let old = csr(approved());
        let mut requested = csr(json!([]));
        requested["spec"]["usages"] = json!(["server auth"]);
        let merged = merge_update(Part::Main, &old, requested);
        assert_eq!(merged["spec"], old["spec"]);
        assert_eq!(merged["status"], old["status"]);
    }

    #[test]
    fn approval_changes_only_the_conditions() {
        let mut old = csr(json!([]));
        old["status"]["certificate"] = json!("Y2VydA==");
        let mut requested = csr(approved());
        requested["status"]["certificate"] = json!("b3RoZXI=");
        let merged = merge_update(Part::Approval, &old, requested);
        assert_eq!(merged["status"]["conditions"], approved());
        assert_eq!(merged["status"]["certificate"], "Y2VydA==");
    }

    #[test]
    fn approved_and_denied_are_mutually_exclusive() {
        let both = csr(json!([
            {"type": "Denied", "status": "True"}, {"type": "Approved", "status": "True"}
        ]));
        let errors = update_errors(Part::Approval, &csr(json!([])), &both);
        assert_eq!(
            errors[0].message(),
            "status.conditions: Invalid value: \"Approved\": Approved and Denied conditions are mutually exclusive"
        );
    }

    #[test]
    fn a_decision_is_never_removed_and_only_approval_adds_one() {
        let removed = update_errors(Part::Approval, &csr(approved()), &csr(json!([])));
        assert_eq!(
            removed[0].message(),
            "status.conditions: Forbidden: updates may not remove a condition of type \"Approved\""
        );
        let added = update_errors(Part::Status, &csr(json!([])), &csr(approved()));
        assert_eq!(
            added[0].message(),
            "status.conditions: Forbidden: updates may not add a condition of type \"Approved\""
        );
        assert!(update_errors(Part::Approval, &csr(json!([])), &csr(approved())).is_empty());
    }

    #[test]
    fn a_decision_is_only_true() {
        let errors = update_errors(
            Part::Approval,
            &csr(json!([])),
            &csr(json!([{"type": "Approved", "status": "False"}])),
        );
        assert_eq!(
            errors[0].message(),
            "status.conditions[0].status: Unsupported value: \"False\": supported values: \"True\""
        );
    }

    #[test]
    fn a_condition_without_times_gets_the_writes_time() {
        let old = csr(json!([]));
        let mut new = csr(approved());
        stamp_condition_times(&old, &mut new, "2026-11-30T01:00:00Z");
        assert_eq!(
            new["status"]["conditions"][0]["lastTransitionTime"],
            "2026-11-30T01:00:00Z"
        );
        assert_eq!(
            new["status"]["conditions"][0]["lastUpdateTime"],
            "2026-11-30T01:00:00Z"
        );
    }

    #[test]
    fn the_condition_cell_puts_denial_first_then_failure_and_issue() {
        let mut both = csr(json!([
            {"type": "Approved", "status": "True"}, {"type": "Failed", "status": "True"}
        ]));
        assert_eq!(condition_cell(&both), "Approved,Failed");
        both["status"]["certificate"] = json!("Y2VydA==");
        assert_eq!(condition_cell(&both), "Approved,Failed,Issued");
        assert_eq!(condition_cell(&csr(json!([]))), "Pending");
    }

    #[test]
    fn the_requested_duration_reads_as_kube_prints_it() {
        let mut one = csr(json!([]));
        assert_eq!(requested_duration_cell(&one), "<none>");
        one["spec"]["expirationSeconds"] = json!(86_400);
        assert_eq!(requested_duration_cell(&one), "24h");
    }
}
