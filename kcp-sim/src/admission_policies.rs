//! ValidatingAdmissionPolicies as kube-apiserver's validating admission enforces them: every
//! ValidatingAdmissionPolicyBinding of the cluster names a policy; a write the policy's
//! `matchConstraints` and the binding's `matchResources` select (resource rules, exclusions,
//! namespace and object selectors) and its `matchConditions` accept is checked by the
//! policy's `validations`, CEL expressions over `object`, `oldObject`, `request`,
//! `namespaceObject`, `params` (always null) and `variables`. A failed validation is acted on
//! as the binding says: `Deny` refuses the write with the first failure's message and reason,
//! `Warn` adds a warning, `Audit` is not recorded. An expression that cannot be evaluated
//! follows the policy's `failurePolicy`.
//!
//! Not played: parameters (`paramKind`, `paramRef`: a policy with a `paramKind` is skipped),
//! `request.userInfo` (empty) and `authorizer`, and the type checking kube-apiserver writes to a
//! policy's status. Webhook configurations are stored, never called.

use serde_json::{Map, Value, json};

use kcp_core::selector::LabelSelector;

use crate::resource::{GroupResource, ResourceType};
use crate::schema::cel::{Cel, Expression, to_cel};
use crate::status::{ApiError, ApiResult, StatusCause};
use crate::store::State;

/// The API group of admission policies.
const GROUP: &str = "admissionregistration.k8s.io";

/// A write, as validating admission sees it.
#[derive(Debug, Clone, Copy)]
pub struct AdmissionRequest<'a> {
    /// `CREATE`, `UPDATE` or `DELETE`.
    pub operation: &'static str,
    /// The written resource.
    pub rt: &'a ResourceType,
    /// `status` or `scale` for a write of a subresource.
    pub subresource: Option<&'a str>,
    /// The object's namespace (empty for a cluster-scoped object).
    pub namespace: &'a str,
    /// The object's name.
    pub name: &'a str,
    /// The object as it would be stored (none on DELETE).
    pub object: Option<&'a Value>,
    /// The object as it is stored (none on CREATE).
    pub old_object: Option<&'a Value>,
    /// Whether the write is a dry run.
    pub dry_run: bool,
}

/// A failed validation, as one binding acts on it.
#[derive(Debug)]
struct Failure {
    message: String,
    reason: String,
}

/// Checks a write against every binding of the cluster: the warnings of `Warn` bindings, or
/// the refusal of the first `Deny` binding's first failure.
pub fn admit(state: &State, cluster: &str, request: &AdmissionRequest) -> ApiResult<Vec<String>> {
    let bindings = objects(state, cluster, "validatingadmissionpolicybindings");
    if bindings.is_empty() {
        return Ok(Vec::new());
    }
    let policies = objects(state, cluster, "validatingadmissionpolicies");
    let namespace = namespace_object(state, cluster, request);
    let mut warnings = Vec::new();
    for binding in &bindings {
        let policy_name = text(binding, "/spec/policyName");
        let Some(policy) = policies
            .iter()
            .find(|p| text(p, "/metadata/name") == policy_name)
        else {
            continue;
        };
        if policy
            .pointer("/spec/paramKind")
            .is_some_and(|k| !k.is_null())
            || !selects(
                policy.pointer("/spec/matchConstraints"),
                request,
                namespace.as_ref(),
            )
            || binding
                .pointer("/spec/matchResources")
                .is_some_and(|m| !selects(Some(m), request, namespace.as_ref()))
        {
            continue;
        }
        let Some(failure) = validate(policy, request, namespace.as_ref()) else {
            continue;
        };
        let (policy_name, binding_name) = (policy_name, text(binding, "/metadata/name"));
        for action in list(binding, "/spec/validationActions").filter_map(Value::as_str) {
            match action {
                "Deny" => return Err(denial(request, policy_name, binding_name, &failure)),
                "Warn" => warnings.push(format!(
                    "Validation failed for ValidatingAdmissionPolicy '{policy_name}' with binding '{binding_name}': {}",
                    failure.message
                )),
                _ => {}
            }
        }
    }
    Ok(warnings)
}

fn objects(state: &State, cluster: &str, resource: &str) -> Vec<Value> {
    crate::apiexport::objects_of(state, cluster, &GroupResource::new(GROUP, resource))
}

fn text<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn list<'a>(value: &'a Value, pointer: &str) -> impl Iterator<Item = &'a Value> {
    value
        .pointer(pointer)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// The namespace a namespaced write is in (`namespaceObject`), when it exists.
fn namespace_object(state: &State, cluster: &str, request: &AdmissionRequest) -> Option<Value> {
    if request.namespace.is_empty() {
        return None;
    }
    state
        .lookup(
            cluster,
            &GroupResource::new("", "namespaces"),
            "",
            request.namespace,
        )
        .and_then(|n| n.value().ok())
}

/// Whether `criteria` (a policy's `matchConstraints` or a binding's `matchResources`) select
/// the write: its namespace and object selectors, no exclusion, and one resource rule (or no
/// rules at all).
fn selects(
    criteria: Option<&Value>,
    request: &AdmissionRequest,
    namespace: Option<&Value>,
) -> bool {
    let Some(criteria) = criteria else {
        return false;
    };
    let labels_match = |selector: Option<&Value>, objects: &[Option<&Value>]| {
        let Some(selector) = selector.filter(|s| s.as_object().is_some_and(|m| !m.is_empty()))
        else {
            return true;
        };
        let Ok(parsed) = LabelSelector::parse(&crate::scale::format_selector(selector)) else {
            return false;
        };
        objects.iter().flatten().any(|o| parsed.matches_object(o))
    };
    let is_namespace = request.rt.group.is_empty() && request.rt.kind == "Namespace";
    let namespace_selected = if is_namespace {
        labels_match(
            criteria.get("namespaceSelector"),
            &[request.object, request.old_object],
        )
    } else if request.namespace.is_empty() {
        true
    } else {
        labels_match(criteria.get("namespaceSelector"), &[namespace])
    };
    let rules = |key: &str| {
        criteria
            .get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let included = rules("resourceRules");
    namespace_selected
        && labels_match(
            criteria.get("objectSelector"),
            &[request.object, request.old_object],
        )
        && !rules("excludeResourceRules")
            .iter()
            .any(|r| rule_matches(r, request))
        && (included.is_empty() || included.iter().any(|r| rule_matches(r, request)))
}

/// Whether one `NamedRuleWithOperations` covers the write.
fn rule_matches(rule: &Value, request: &AdmissionRequest) -> bool {
    let any_of = |key: &str, wanted: &str| {
        list(rule, &format!("/{key}"))
            .filter_map(Value::as_str)
            .any(|v| v == "*" || v == wanted)
    };
    let rt = request.rt;
    let version = rt.versions.first().map(String::as_str).unwrap_or_default();
    let resource_matches = list(rule, "/resources").filter_map(Value::as_str).any(|r| {
        let (resource, sub) = r.split_once('/').unwrap_or((r, ""));
        let resource_ok = resource == "*" || resource == rt.plural;
        match request.subresource {
            None => sub.is_empty() && resource_ok,
            Some(wanted) => resource_ok && (sub == "*" || sub == wanted),
        }
    });
    let scope_ok = match text(rule, "/scope") {
        "Cluster" => !rt.namespaced,
        "Namespaced" => rt.namespaced,
        _ => true,
    };
    any_of("operations", request.operation)
        && any_of("apiGroups", &rt.group)
        && any_of("apiVersions", version)
        && resource_matches
        && scope_ok
}

/// The `request` variable of the policy's expressions.
fn request_variable(request: &AdmissionRequest) -> Value {
    let rt = request.rt;
    let version = rt.versions.first().cloned().unwrap_or_default();
    let mut out = json!({
        "kind": {"group": rt.group, "version": version, "kind": rt.kind},
        "resource": {"group": rt.group, "version": version, "resource": rt.plural},
        "name": request.name,
        "namespace": request.namespace,
        "operation": request.operation,
        "userInfo": {},
        "dryRun": request.dry_run,
    });
    if let Some(sub) = request.subresource {
        out["subResource"] = json!(sub);
    }
    out
}

/// Runs the policy on the write: `None` when it passes (or does not apply: a match condition
/// is false), else the first failure.
fn validate(
    policy: &Value,
    request: &AdmissionRequest,
    namespace: Option<&Value>,
) -> Option<Failure> {
    let fail_closed = text(policy, "/spec/failurePolicy") != "Ignore";
    let error = |message: String| {
        fail_closed.then(|| Failure {
            message,
            reason: "Invalid".into(),
        })
    };
    let mut bound = vec![
        ("object", request.object.map_or(Cel::Null, to_cel)),
        ("oldObject", request.old_object.map_or(Cel::Null, to_cel)),
        ("request", to_cel(&request_variable(request))),
        ("namespaceObject", namespace.map_or(Cel::Null, to_cel)),
        ("params", Cel::Null),
    ];
    let variables = match variables_of(policy, &bound) {
        Ok(variables) => variables,
        Err(why) => return error(why),
    };
    bound.push(("variables", to_cel(&Value::Object(variables))));
    for condition in list(policy, "/spec/matchConditions") {
        let expression = text(condition, "/expression");
        match evaluate(expression, &bound) {
            Ok(Cel::Bool(true)) => {}
            Ok(Cel::Bool(false)) => return None,
            Ok(other) => return error(not_a_bool(expression, &other)),
            Err(why) => return error(why),
        }
    }
    for validation in list(policy, "/spec/validations") {
        let expression = text(validation, "/expression");
        match evaluate(expression, &bound) {
            Ok(Cel::Bool(true)) => {}
            Ok(Cel::Bool(false)) => return Some(failure_of(validation, expression, &bound)),
            Ok(other) => return error(not_a_bool(expression, &other)),
            Err(why) => return error(why),
        }
    }
    None
}

/// The policy's `variables`, each evaluated with the ones before it bound.
fn variables_of(policy: &Value, bound: &[(&str, Cel)]) -> Result<Map<String, Value>, String> {
    let mut variables = Map::new();
    for variable in list(policy, "/spec/variables") {
        let mut with_earlier = bound.to_vec();
        with_earlier.push(("variables", to_cel(&Value::Object(variables.clone()))));
        let value = evaluate(text(variable, "/expression"), &with_earlier)?;
        variables.insert(text(variable, "/name").to_string(), cel_to_json(&value));
    }
    Ok(variables)
}

fn evaluate(expression: &str, bound: &[(&str, Cel)]) -> Result<Cel, String> {
    let compiled =
        Expression::compile(expression).map_err(|why| format!("compilation error: {why}"))?;
    compiled
        .evaluate(bound)
        .map_err(|why| format!("expression '{expression}' resulted in error: {why}"))
}

fn not_a_bool(expression: &str, value: &Cel) -> String {
    format!("expression '{expression}' resulted in error: {value:?} is not a bool")
}

/// A failed validation's message (`message`, else a non-empty `messageExpression` result,
/// else `failed expression: ...`) and reason (`Invalid` unless it names one).
fn failure_of(validation: &Value, expression: &str, bound: &[(&str, Cel)]) -> Failure {
    let given = |key: &str| validation.get(key).and_then(Value::as_str).map(str::trim);
    let from_expression = given("messageExpression").and_then(|m| match evaluate(m, bound) {
        Ok(Cel::String(s)) if !s.trim().is_empty() => Some(s.trim().to_string()),
        _ => None,
    });
    let message = given("message")
        .filter(|m| !m.is_empty())
        .map(String::from)
        .or(from_expression)
        .unwrap_or_else(|| format!("failed expression: {}", expression.trim()));
    Failure {
        message,
        reason: given("reason").unwrap_or("Invalid").to_string(),
    }
}

/// A CEL value as JSON (the values variables hold).
fn cel_to_json(value: &Cel) -> Value {
    match value {
        Cel::Null => Value::Null,
        Cel::Bool(b) => json!(b),
        Cel::Int(i) => json!(i),
        Cel::UInt(u) => json!(u),
        Cel::Float(f) => json!(f),
        Cel::String(s) => json!(s.as_str()),
        Cel::List(items) => Value::Array(items.iter().map(cel_to_json).collect()),
        Cel::Map(map) => Value::Object(
            map.map
                .iter()
                .map(|(k, v)| (cel_key(k), cel_to_json(v)))
                .collect(),
        ),
        other => json!(format!("{other:?}")),
    }
}

fn cel_key(key: &cel::objects::Key) -> String {
    match key {
        cel::objects::Key::String(s) => s.to_string(),
        cel::objects::Key::Int(i) => i.to_string(),
        cel::objects::Key::Uint(u) => u.to_string(),
        cel::objects::Key::Bool(b) => b.to_string(),
    }
}

/// The refusal of a `Deny` binding (`admission.NewForbidden` with the failure's reason and its
/// code).
fn denial(request: &AdmissionRequest, policy: &str, binding: &str, failure: &Failure) -> ApiError {
    let rt = request.rt;
    let resource = if rt.group.is_empty() {
        rt.plural.clone()
    } else {
        format!("{}.{}", rt.plural, rt.group)
    };
    let message = format!(
        "ValidatingAdmissionPolicy '{policy}' with binding '{binding}' denied request: {}",
        failure.message
    );
    let (code, reason) = match failure.reason.as_str() {
        "Forbidden" => (403, "Forbidden"),
        "Unauthorized" => (401, "Unauthorized"),
        "RequestEntityTooLarge" => (413, "RequestEntityTooLarge"),
        _ => (422, "Invalid"),
    };
    ApiError::new(
        code,
        reason,
        format!("{resource} {:?} is forbidden: {message}", request.name),
    )
    .about(&rt.group, &rt.plural, request.name)
    .with_causes(vec![StatusCause {
        message,
        ..StatusCause::default()
    }])
}

#[cfg(test)]
mod tests;
