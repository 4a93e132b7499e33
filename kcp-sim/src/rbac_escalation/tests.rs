#![allow(clippy::unwrap_used)]

use super::*;

fn url_rule(urls: &[&str], verbs: &[&str]) -> PolicyRule {
    PolicyRule {
        non_resource_urls: Some(urls.iter().map(|u| u.to_string()).collect()),
        verbs: verbs.iter().map(|v| v.to_string()).collect(),
        ..PolicyRule::default()
    }
}

#[test]
fn a_rule_breaks_down_into_one_permission_per_group_resource_verb_and_name() {
    let atoms = breakdown(&rule(
        &["", "apps"],
        &["pods"],
        &["a", "b"],
        &["get", "list"],
    ));
    assert_eq!(atoms.len(), 8);
    assert_eq!(atoms[0], rule(&[""], &["pods"], &["a"], &["get"]));
    assert_eq!(atoms[1], rule(&[""], &["pods"], &["b"], &["get"]));
    assert_eq!(atoms[2], rule(&[""], &["pods"], &["a"], &["list"]));
}

#[test]
fn non_resource_urls_break_down_by_url_and_verb() {
    let atoms = breakdown(&url_rule(&["/metrics", "/logs"], &["get", "post"]));
    assert_eq!(atoms.len(), 4);
    assert_eq!(atoms[1], url_rule(&["/metrics"], &["post"]));
}

#[test]
fn a_held_star_covers_every_verb_group_and_resource() {
    let held = rule(&["*"], &["*"], &[], &["*"]);
    assert!(covers(
        &held,
        &rule(&["apps"], &["deployments/scale"], &[], &["patch"])
    ));
    assert!(!covers(&held, &url_rule(&["/metrics"], &["get"])));
}

#[test]
fn a_held_subresource_wildcard_covers_that_subresource_of_any_resource() {
    let held = rule(&[""], &["*/status"], &[], &["get"]);
    assert!(covers(&held, &rule(&[""], &["pods/status"], &[], &["get"])));
    assert!(!covers(&held, &rule(&[""], &["pods"], &[], &["get"])));
}

#[test]
fn held_resource_names_cover_only_those_names() {
    let held = rule(&[""], &["secrets"], &["visible"], &["get"]);
    assert!(covers(
        &held,
        &rule(&[""], &["secrets"], &["visible"], &["get"])
    ));
    assert!(!covers(
        &held,
        &rule(&[""], &["secrets"], &["hidden"], &["get"])
    ));
    assert!(!covers(&held, &rule(&[""], &["secrets"], &[], &["get"])));
}

#[test]
fn a_held_url_prefix_covers_the_urls_under_it() {
    let held = url_rule(&["/logs/*"], &["get"]);
    assert!(covers(&held, &url_rule(&["/logs/kube"], &["get"])));
    assert!(!covers(&held, &url_rule(&["/metrics"], &["get"])));
}

#[test]
fn missing_permissions_of_one_resource_are_compacted_into_one_rule() {
    let compacted = compact(vec![
        rule(&[""], &["secrets"], &[], &["get"]),
        url_rule(&["/debug"], &["get"]),
        rule(&[""], &["secrets"], &[], &["list"]),
        rule(&[""], &["pods"], &["a"], &["get"]),
    ]);
    let words: Vec<String> = compacted.iter().map(compact_string).collect();
    assert_eq!(
        words,
        [
            r#"{NonResourceURLs:["/debug"], Verbs:["get"]}"#,
            r#"{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}"#,
            r#"{APIGroups:[""], Resources:["pods"], ResourceNames:["a"], Verbs:["get"]}"#,
        ]
    );
}

#[test]
fn an_update_of_owner_references_and_finalizers_only_is_not_checked() {
    let old = serde_json::json!({"metadata": {"name": "r", "resourceVersion": "5"}, "rules": []});
    let mut new = old.clone();
    new["metadata"]["finalizers"] = serde_json::json!(["example.com/keep"]);
    assert!(changes_only_collected_fields(&old, &new));
    new["rules"] = serde_json::json!([{"verbs": ["get"]}]);
    assert!(!changes_only_collected_fields(&old, &new));
}
