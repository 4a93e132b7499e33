//! Which objects a scoped quota covers (`spec.scopes` and `spec.scopeSelector`): only pods can
//! be in a scope, so a quota with any scope covers no other kind. A pod is `Terminating` when it
//! has an active deadline, `BestEffort` when no container asks for cpu or memory, and in a
//! `PriorityClass` scope by its class name.

use serde_json::Value;

use crate::resource::GroupResource;

/// One scope requirement: a scope name, an operator and its values.
struct Requirement {
    scope: String,
    operator: String,
    values: Vec<String>,
}

/// The quota's scopes as requirements (`getScopeSelectorsFromQuota`): each listed scope is
/// `Exists`, then the selector's expressions.
fn requirements(quota: &Value) -> Vec<Requirement> {
    let text = |v: &Value, key: &str| {
        v.get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let listed = quota.pointer("/spec/scopes").and_then(Value::as_array);
    let selected = quota
        .pointer("/spec/scopeSelector/matchExpressions")
        .and_then(Value::as_array);
    let listed = listed
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|scope| Requirement {
            scope: scope.to_string(),
            operator: "Exists".into(),
            values: Vec::new(),
        });
    let selected = selected.into_iter().flatten().map(|e| Requirement {
        scope: text(e, "scopeName"),
        operator: text(e, "operator"),
        values: e
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect(),
    });
    listed.chain(selected).collect()
}

/// Whether `quota`'s scopes cover `object` of `kind` (a quota without scopes covers all).
pub(crate) fn cover(quota: &Value, kind: &GroupResource, object: &Value) -> bool {
    let requirements = requirements(quota);
    if requirements.is_empty() {
        return true;
    }
    let is_pod = kind.group.is_empty() && kind.resource == "pods";
    is_pod && requirements.iter().all(|r| pod_in(object, r))
}

fn pod_in(pod: &Value, requirement: &Requirement) -> bool {
    match requirement.scope.as_str() {
        "Terminating" => is_terminating(pod),
        "NotTerminating" => !is_terminating(pod),
        "BestEffort" => is_best_effort(pod),
        "NotBestEffort" => !is_best_effort(pod),
        "PriorityClass" => in_priority_class(pod, requirement),
        "CrossNamespacePodAffinity" => has_cross_namespace_affinity(pod),
        _ => false,
    }
}

fn is_terminating(pod: &Value) -> bool {
    pod.pointer("/spec/activeDeadlineSeconds")
        .and_then(Value::as_i64)
        .is_some_and(|d| d >= 0)
}

/// No container (init containers included) asks for or limits cpu or memory (the QoS class
/// `BestEffort`).
fn is_best_effort(pod: &Value) -> bool {
    let sized = |container: &Value| {
        ["requests", "limits"].iter().any(|which| {
            ["cpu", "memory"].iter().any(|r| {
                container
                    .pointer(&format!("/resources/{which}/{r}"))
                    .is_some()
            })
        })
    };
    ["containers", "initContainers"].iter().all(|key| {
        pod.pointer(&format!("/spec/{key}"))
            .and_then(Value::as_array)
            .is_none_or(|containers| !containers.iter().any(sized))
    })
}

/// The class name matched as a label whose key is always there (so `DoesNotExist` never holds).
fn in_priority_class(pod: &Value, requirement: &Requirement) -> bool {
    let class = pod
        .pointer("/spec/priorityClassName")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let listed = requirement.values.iter().any(|v| v == class);
    match requirement.operator.as_str() {
        "Exists" => !class.is_empty(),
        "In" => listed,
        "NotIn" => !listed,
        _ => false,
    }
}

/// A pod (anti-)affinity term that names other namespaces or selects them.
fn has_cross_namespace_affinity(pod: &Value) -> bool {
    let terms = |kind: &str| {
        let at = |pointer: String| {
            pod.pointer(&pointer)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        let required = at(format!(
            "/spec/affinity/{kind}/requiredDuringSchedulingIgnoredDuringExecution"
        ));
        let preferred = at(format!(
            "/spec/affinity/{kind}/preferredDuringSchedulingIgnoredDuringExecution"
        ))
        .into_iter()
        .filter_map(|weighted| weighted.get("podAffinityTerm").cloned());
        required.into_iter().chain(preferred).collect::<Vec<_>>()
    };
    ["podAffinity", "podAntiAffinity"].iter().any(|kind| {
        terms(kind).iter().any(|term| {
            term.get("namespaceSelector").is_some()
                || term
                    .get("namespaces")
                    .and_then(Value::as_array)
                    .is_some_and(|n| !n.is_empty())
        })
    })
}
