use super::*;
use crate::api::{
    LabelSelector, PublishedResourceSpec, RelatedResourceKind, RelatedResourceObject,
    RelatedResourceOrigin, RelatedResourceSpec, ResourceFilter,
};
use serde_json::json;

fn pr(related: Vec<RelatedResourceSpec>, namespace_filter: bool, paths: bool) -> PublishedResource {
    PublishedResource::new(
        "pr",
        PublishedResourceSpec {
            related: (!related.is_empty()).then_some(related),
            filter: namespace_filter.then(|| ResourceFilter {
                namespace: Some(LabelSelector::default()),
                resource: None,
            }),
            enable_workspace_paths: paths,
            ..Default::default()
        },
    )
}

fn related(origin: RelatedResourceOrigin, kind: RelatedResourceKind) -> RelatedResourceSpec {
    RelatedResourceSpec {
        identifier: "x".into(),
        origin,
        group: String::new(),
        version: String::new(),
        resource: String::new(),
        kind: Some(kind),
        identity_hash: String::new(),
        cleanup: false,
        projection: None,
        object: RelatedResourceObject::default(),
        mutation: None,
        watch: None,
        sync_status: false,
    }
}

fn names(claims: &BTreeMap<WantedClaim, BTreeSet<String>>) -> Vec<String> {
    claims.keys().map(ToString::to_string).collect()
}

#[test]
fn events_are_always_claimed() {
    assert_eq!(
        names(&wanted_claims(
            &[pr(vec![], false, false)],
            &BTreeSet::new()
        )),
        ["events"]
    );
}

#[test]
fn related_resources_claim_their_kcp_side_resource_and_namespaces() {
    let prs = [pr(
        vec![
            related(RelatedResourceOrigin::Service, RelatedResourceKind::Secret),
            related(RelatedResourceOrigin::Kcp, RelatedResourceKind::ConfigMap),
        ],
        false,
        false,
    )];
    assert_eq!(
        names(&wanted_claims(&prs, &BTreeSet::new())),
        ["configmaps", "events", "namespaces", "secrets"]
    );
}

#[test]
fn namespace_filter_claims_namespaces_and_paths_claim_logicalclusters() {
    let claims = wanted_claims(&[pr(vec![], true, true)], &BTreeSet::new());
    assert_eq!(
        names(&claims),
        ["events", "namespaces", "core.kcp.io/logicalclusters"]
    );
}

#[test]
fn resources_of_the_export_itself_are_not_claimed() {
    let mut r = related(RelatedResourceOrigin::Kcp, RelatedResourceKind::Secret);
    r.kind = None;
    r.group = "example.com".into();
    r.version = "v1".into();
    r.resource = "things".into();
    let own = BTreeSet::from([("example.com".to_owned(), "things".to_owned())]);
    assert_eq!(
        names(&wanted_claims(&[pr(vec![r], false, false)], &own)),
        ["events", "namespaces"]
    );
}

/// Turning on `cleanup` (which needs `delete`) changes no verb: consumers who accepted the
/// claims need not accept again.
#[test]
fn every_claim_is_for_all_verbs_whatever_the_published_resource_does() {
    let mut service = related(RelatedResourceOrigin::Service, RelatedResourceKind::Secret);
    let before = wanted_claims(&[pr(vec![service.clone()], false, false)], &BTreeSet::new());
    service.cleanup = true;
    let after = wanted_claims(&[pr(vec![service], false, false)], &BTreeSet::new());
    assert_eq!(before, after);
    for verbs in after.values() {
        assert_eq!(verbs, &BTreeSet::from(["*".to_owned()]));
    }
}

#[test]
fn schema_names_split_on_the_first_two_dots() {
    assert_eq!(
        schema_group_resource("v1a2b3c4d.crontabs.example.com"),
        ("example.com".to_owned(), "crontabs".to_owned())
    );
}

#[test]
fn merge_replaces_the_schema_of_the_same_resource_and_keeps_unmanaged_ones() {
    let existing = vec![
        json!({"name": "crontabs", "group": "example.com", "schema": "vold.crontabs.example.com", "storage": {"crd": {}}}),
        json!({"name": "backups", "group": "eksempel.no", "schema": "vx.backups.eksempel.no", "storage": {"crd": {}}, "extra": 1}),
    ];
    let ready = BTreeSet::from([
        "vnew.crontabs.example.com".to_owned(),
        "va.apples.example.com".to_owned(),
    ]);
    let merged = merge_resources(&existing, &ready);
    let schemas: Vec<&str> = merged
        .iter()
        .map(|r| r["schema"].as_str().unwrap())
        .collect();
    assert_eq!(
        schemas,
        [
            "va.apples.example.com",
            "vx.backups.eksempel.no",
            "vnew.crontabs.example.com"
        ]
    );
    assert_eq!(merged[1]["extra"], 1);
    assert_eq!(
        merged[2],
        json!({"name": "crontabs", "group": "example.com", "schema": "vnew.crontabs.example.com", "storage": {"crd": {}}})
    );
}

#[test]
fn merging_the_same_schemas_again_changes_nothing() {
    let ready = BTreeSet::from(["v1.things.example.com".to_owned()]);
    let once = merge_resources(&[], &ready);
    assert_eq!(merge_resources(&once, &ready), once);
}

#[test]
fn claims_are_appended_with_verbs_and_existing_ones_kept_sorted() {
    let existing = vec![json!({"group": "z.io", "resource": "zs", "verbs": ["get"]})];
    let wanted = wanted_claims(&[pr(vec![], true, false)], &BTreeSet::new());
    let (claims, added) = merge_claims(&existing, &wanted);
    let order: Vec<String> = claims.iter().map(|c| claim_key(c).to_string()).collect();
    assert_eq!(order, ["events", "namespaces", "z.io/zs"]);
    assert_eq!(added.len(), 2);
    assert_eq!(claims[1], json!({"resource": "namespaces", "verbs": ["*"]}));
}

/// An explicit claim an older kcp-sync wrote keeps its verbs (consumers that accepted exactly
/// those keep working) and gains `*` (so do consumers bound with `all: true` or `["*"]`).
#[test]
fn an_existing_explicit_claim_gains_the_wildcard_and_a_wildcard_stays() {
    let wanted = wanted_claims(&[pr(vec![], true, false)], &BTreeSet::new());
    let existing = vec![
        json!({"resource": "events", "verbs": ["*"]}),
        json!({"resource": "namespaces", "verbs": ["get"]}),
    ];
    let (claims, added) = merge_claims(&existing, &wanted);
    assert!(added.is_empty());
    assert_eq!(claims[0]["verbs"], json!(["*"]));
    assert_eq!(claims[1]["verbs"], json!(["get", "*"]));
}

#[test]
fn claims_are_never_removed() {
    let existing = vec![json!({"group": "a.io", "resource": "as", "verbs": ["*"]})];
    let (claims, _) = merge_claims(&existing, &BTreeMap::new());
    assert_eq!(claims, existing);
}

#[test]
fn schema_events_name_added_and_removed_schemas() {
    let old = BTreeSet::from(["a".to_owned(), "b".to_owned()]);
    let new = BTreeSet::from(["b".to_owned(), "c".to_owned()]);
    assert_eq!(
        schema_events(&old, &new),
        [
            (
                true,
                "AddingResourceSchemas",
                "Added new resource schema(s) c.".to_owned()
            ),
            (
                false,
                "RemovingResourceSchemas",
                "Removed resource schema(s) a.".to_owned()
            ),
        ]
    );
}

#[test]
fn claims_event_lists_group_slash_resource() {
    let added = [WantedClaim {
        group: "core.kcp.io".into(),
        resource: "logicalclusters".into(),
        identity_hash: String::new(),
    }];
    assert_eq!(
        claims_event(&added).as_deref(),
        Some("Added new permission claim(s) for all core.kcp.io/logicalclusters.")
    );
    assert_eq!(claims_event(&[]), None);
}

fn claim(resource: &str) -> WantedClaim {
    WantedClaim {
        group: String::new(),
        resource: resource.into(),
        identity_hash: String::new(),
    }
}

fn wanted_of(resources: &[&str]) -> BTreeMap<WantedClaim, BTreeSet<String>> {
    resources
        .iter()
        .map(|r| (claim(r), BTreeSet::from(["get".to_owned()])))
        .collect()
}

#[test]
fn only_recorded_claims_nobody_wants_are_pruned() {
    let claims = vec![
        json!({"resource": "configmaps", "verbs": ["*"]}),
        json!({"resource": "events", "verbs": ["get"]}),
        json!({"resource": "secrets", "verbs": ["get"]}),
    ];
    let recorded = BTreeSet::from([claim("events"), claim("secrets")]);
    let (kept, removed) = prune_claims(claims, &wanted_of(&["events"]), &recorded);
    let kept: Vec<&str> = kept
        .iter()
        .map(|c| c["resource"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(kept, ["configmaps", "events"]);
    assert_eq!(removed, [claim("secrets")]);
}

#[test]
fn a_claim_that_existed_before_is_never_recorded() {
    let existing = vec![json!({"resource": "secrets", "verbs": ["get"]})];
    let wanted = wanted_of(&["events", "secrets"]);
    let (_, added) = merge_claims(&existing, &wanted);
    let record = record_added_claims(&BTreeSet::new(), &added, &wanted);
    assert_eq!(record, BTreeSet::from([claim("events")]));
}

#[test]
fn recorded_claims_round_trip_through_the_annotation() {
    let mut record = BTreeSet::from([claim("events")]);
    record.insert(WantedClaim {
        group: "example.com".into(),
        resource: "widgets".into(),
        identity_hash: "abc".into(),
    });
    let value = format_added_claims(&record);
    assert_eq!(
        value,
        r#"[{"resource":"events"},{"group":"example.com","resource":"widgets","identityHash":"abc"}]"#
    );
    assert_eq!(parse_added_claims(Some(&value)), record);
    assert!(parse_added_claims(Some("not json")).is_empty());
}
