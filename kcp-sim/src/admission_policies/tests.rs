use super::*;
use crate::resource::{Flavor, Registry};

fn deployments() -> ResourceType {
    let registry = Registry::with_builtins(Flavor::Kubernetes);
    (**registry
        .get(&GroupResource::new("apps", "deployments"))
        .expect("deployments are builtin"))
    .clone()
}

fn request<'a>(rt: &'a ResourceType, object: &'a Value) -> AdmissionRequest<'a> {
    AdmissionRequest {
        operation: "CREATE",
        rt,
        subresource: None,
        namespace: "default",
        name: "big",
        object: Some(object),
        old_object: None,
        dry_run: false,
    }
}

fn policy(validation: Value) -> Value {
    json!({"metadata": {"name": "replicas"}, "spec": {
        "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]},
        "validations": [validation]}})
}

#[test]
fn a_rule_covers_its_resource_and_not_its_subresources_unless_it_names_them() {
    let rt = deployments();
    let object = json!({});
    let main = request(&rt, &object);
    let rule = json!({"apiGroups": ["apps"], "apiVersions": ["*"], "operations": ["*"],
        "resources": ["deployments"]});
    assert!(rule_matches(&rule, &main));
    let status = AdmissionRequest {
        subresource: Some("status"),
        ..main
    };
    assert!(!rule_matches(&rule, &status));
    let all = json!({"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"],
        "resources": ["deployments/*"]});
    assert!(rule_matches(&all, &status));
}

#[test]
fn a_failed_expression_is_named_in_the_failure() {
    let rt = deployments();
    let object = json!({"spec": {"replicas": 10}});
    let failure = validate(
        &policy(json!({"expression": "object.spec.replicas <= 5"})),
        &request(&rt, &object),
        None,
    )
    .expect("ten replicas fail the policy");
    assert_eq!(
        failure.message,
        "failed expression: object.spec.replicas <= 5"
    );
    assert_eq!(failure.reason, "Invalid");
}

#[test]
fn a_message_expression_words_the_failure() {
    let rt = deployments();
    let object = json!({"spec": {"replicas": 10}});
    let failure = validate(
        &policy(
            json!({"expression": "object.spec.replicas <= 5", "reason": "Forbidden",
            "messageExpression": "'too many: ' + string(object.spec.replicas)"}),
        ),
        &request(&rt, &object),
        None,
    )
    .expect("ten replicas fail the policy");
    assert_eq!(failure.message, "too many: 10");
    let refusal = denial(&request(&rt, &object), "replicas", "b", &failure);
    assert_eq!(refusal.code, 403);
    assert_eq!(
        refusal.message,
        "deployments.apps \"big\" is forbidden: ValidatingAdmissionPolicy 'replicas' with binding 'b' denied request: too many: 10"
    );
}

#[test]
fn a_false_match_condition_leaves_the_write_alone() {
    let rt = deployments();
    let object = json!({"metadata": {"name": "kube-dns"}, "spec": {"replicas": 10}});
    let mut p = policy(json!({"expression": "object.spec.replicas <= 5"}));
    p["spec"]["matchConditions"] = json!([{"name": "not-system",
        "expression": "!object.metadata.name.startsWith('kube-')"}]);
    assert!(validate(&p, &request(&rt, &object), None).is_none());
}

#[test]
fn variables_are_seen_by_validations() {
    let rt = deployments();
    let object = json!({"metadata": {"labels": {"team": ""}}, "spec": {"replicas": 1}});
    let mut p =
        policy(json!({"expression": "variables.team != ''", "message": "a team is needed"}));
    p["spec"]["variables"] = json!([{"name": "team",
        "expression": "object.metadata.labels['team']"}]);
    let failure = validate(&p, &request(&rt, &object), None).expect("an empty team fails");
    assert_eq!(failure.message, "a team is needed");
}

#[test]
fn an_expression_in_error_is_ignored_only_when_the_policy_says_so() {
    let rt = deployments();
    let object = json!({"spec": {}});
    let mut p = policy(json!({"expression": "object.spec.replicas <= 5"}));
    assert!(validate(&p, &request(&rt, &object), None).is_some());
    p["spec"]["failurePolicy"] = json!("Ignore");
    assert!(validate(&p, &request(&rt, &object), None).is_none());
}
