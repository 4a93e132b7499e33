//! The apiresourceschema and apiexport reconciles against a kcp-sim service cluster and a
//! kcp-sim kcp (in-process).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;

use common::{Env, create, crontab_pr};
use kcp_core::kcp::types::APIResourceSchema;
use kcp_core::{ObjectClient, ObjectClientExt as _, ObjectRef};
use kcp_sync::api::{
    CONDITION_SCHEMA_READY, RelatedResourceKind, RelatedResourceObject, RelatedResourceOrigin,
    RelatedResourceSpec,
};
use kcp_sync::reconcile::export::{export_gvk, reconcile_export};
use kcp_sync::reconcile::schema::reconcile_schema;
use serde_json::{Value, json};

const AGENT: &str = "test-agent";

async fn export(env: &Env) -> Value {
    let obj = env
        .provider
        .get(&ObjectRef::cluster_scoped(export_gvk(), "crontabs"))
        .await
        .unwrap()
        .unwrap();
    serde_json::to_value(obj).unwrap()
}

async fn schema_for(env: &Env, name: &str) -> String {
    let pr = env.pr(name).await;
    reconcile_schema(&env.service, None, &env.provider, AGENT, &pr)
        .await
        .unwrap()
        .unwrap()
        .schema_name
}

#[tokio::test]
async fn a_published_resource_gets_an_api_resource_schema_and_status() {
    let env = Env::start().await;
    env.publish(&crontab_pr("crontabs")).await;
    let name = schema_for(&env, "crontabs").await;
    assert!(name.ends_with(".crontabs.example.com"), "{name}");
    let ars: APIResourceSchema = env.provider.get_typed(None, &name).await.unwrap().unwrap();
    assert_eq!(ars.spec.names.kind, "CronTab");
    assert_eq!(
        ars.metadata.labels.unwrap()["syncagent.kcp.io/agent-name"],
        AGENT
    );
    let status = env.pr("crontabs").await.status.unwrap();
    assert_eq!(status.resource_schema_name.as_deref(), Some(name.as_str()));
    assert!(status.condition(CONDITION_SCHEMA_READY).unwrap().is_true());
}

#[tokio::test]
async fn a_crd_change_creates_a_second_schema_and_keeps_the_first() {
    let env = Env::start().await;
    env.publish(&crontab_pr("crontabs")).await;
    let first = schema_for(&env, "crontabs").await;
    let mut crd = env
        .service
        .get(&ObjectRef::cluster_scoped(
            kcp_sync::schema::crd_gvk(),
            "crontabs.example.com",
        ))
        .await
        .unwrap()
        .unwrap();
    crd.data["spec"]["names"]["shortNames"] = json!(["cts"]);
    env.service
        .replace(&crd, kcp_core::Subresource::Main)
        .await
        .unwrap();
    let second = schema_for(&env, "crontabs").await;
    assert_ne!(first, second);
    let kept: Option<APIResourceSchema> = env.provider.get_typed(None, &first).await.unwrap();
    assert!(kept.is_some());
    assert_eq!(
        env.pr("crontabs")
            .await
            .status
            .unwrap()
            .resource_schema_name,
        Some(second)
    );
}

#[tokio::test]
async fn a_missing_crd_is_reported_in_the_status_with_the_real_error() {
    let env = Env::start().await;
    let mut pr = crontab_pr("nothing");
    pr.spec.resource.kind = "Nothing".into();
    env.publish(&pr).await;
    let pr = env.pr("nothing").await;
    let err = reconcile_schema(&env.service, None, &env.provider, AGENT, &pr)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("Nothing"), "{err}");
    let status = env.pr("nothing").await.status.unwrap();
    let cond = status.condition(CONDITION_SCHEMA_READY).unwrap();
    assert_eq!(cond.status, "False");
    assert!(
        cond.message
            .as_deref()
            .unwrap()
            .contains("no CustomResourceDefinition")
    );
}

#[tokio::test]
async fn reconciling_twice_creates_one_schema() {
    let env = Env::start().await;
    env.publish(&crontab_pr("crontabs")).await;
    let a = schema_for(&env, "crontabs").await;
    let b = schema_for(&env, "crontabs").await;
    assert_eq!(a, b);
}

#[tokio::test]
async fn the_export_lists_the_schema_and_claims_events_for_all_verbs() {
    let env = Env::start().await;
    env.publish(&crontab_pr("crontabs")).await;
    let name = schema_for(&env, "crontabs").await;
    let prs = vec![env.pr("crontabs").await];
    let ready = BTreeSet::from([name.clone()]);
    let report = reconcile_export(&env.provider, None, AGENT, "crontabs", &prs, &ready, &ready)
        .await
        .unwrap();
    assert!(report.changed);
    let export = export(&env).await;
    assert_eq!(
        export["spec"]["resources"],
        json!([{"name": "crontabs", "group": "example.com", "schema": name, "storage": {"crd": {}}}])
    );
    // kcp's v1alpha2 schema defaults a claim's group and identity hash to "".
    assert_eq!(
        export["spec"]["permissionClaims"],
        json!([{"group": "", "identityHash": "", "resource": "events", "verbs": ["*"]}])
    );
    assert_eq!(
        export["metadata"]["annotations"]["syncagent.kcp.io/agent-name"],
        AGENT
    );
}

#[tokio::test]
async fn a_second_export_reconcile_changes_nothing() {
    let env = Env::start().await;
    env.publish(&crontab_pr("crontabs")).await;
    let name = schema_for(&env, "crontabs").await;
    let prs = vec![env.pr("crontabs").await];
    let ready = BTreeSet::from([name]);
    reconcile_export(&env.provider, None, AGENT, "crontabs", &prs, &ready, &ready)
        .await
        .unwrap();
    let again = reconcile_export(&env.provider, None, AGENT, "crontabs", &prs, &ready, &ready)
        .await
        .unwrap();
    assert!(!again.changed);
}

#[tokio::test]
async fn unmanaged_schemas_and_existing_claims_are_kept() {
    let env = Env::start().await;
    create(
        &env.provider,
        json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport",
        "metadata": {"name": "other"}, "spec": {}}),
    )
    .await;
    let mut obj = env
        .provider
        .get(&ObjectRef::cluster_scoped(export_gvk(), "crontabs"))
        .await
        .unwrap()
        .unwrap();
    obj.data["spec"] = json!({
        "resources": [{"name": "backups", "group": "eksempel.no", "schema": "v1.backups.eksempel.no", "storage": {"crd": {}}}],
        "permissionClaims": [{"group": "", "resource": "configmaps", "verbs": ["*"]}],
    });
    env.provider
        .replace(&obj, kcp_core::Subresource::Main)
        .await
        .unwrap();
    env.publish(&crontab_pr("crontabs")).await;
    let name = schema_for(&env, "crontabs").await;
    let mut pr = env.pr("crontabs").await;
    pr.spec.related = Some(vec![RelatedResourceSpec {
        identifier: "creds".into(),
        origin: RelatedResourceOrigin::Service,
        group: String::new(),
        version: String::new(),
        resource: String::new(),
        kind: Some(RelatedResourceKind::Secret),
        identity_hash: String::new(),
        cleanup: false,
        projection: None,
        object: RelatedResourceObject::default(),
        mutation: None,
        watch: None,
        sync_status: false,
    }]);
    let ready = BTreeSet::from([name]);
    let report = reconcile_export(
        &env.provider,
        None,
        AGENT,
        "crontabs",
        &[pr],
        &ready,
        &ready,
    )
    .await
    .unwrap();
    assert_eq!(report.added_claims, ["events", "namespaces", "secrets"]);
    let export = export(&env).await;
    let schemas: Vec<&str> = export["spec"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["schema"].as_str().unwrap())
        .collect();
    assert_eq!(schemas.len(), 2);
    assert!(schemas.contains(&"v1.backups.eksempel.no"));
    let claims: Vec<&str> = export["spec"]["permissionClaims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["resource"].as_str().unwrap())
        .collect();
    assert_eq!(claims, ["configmaps", "events", "namespaces", "secrets"]);
}

fn secret_related() -> RelatedResourceSpec {
    RelatedResourceSpec {
        identifier: "creds".into(),
        origin: RelatedResourceOrigin::Service,
        group: String::new(),
        version: String::new(),
        resource: String::new(),
        kind: Some(RelatedResourceKind::Secret),
        identity_hash: String::new(),
        cleanup: false,
        projection: None,
        object: RelatedResourceObject::default(),
        mutation: None,
        watch: None,
        sync_status: false,
    }
}

fn claim_resources(export: &Value) -> Vec<String> {
    export["spec"]["permissionClaims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["resource"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn claims_the_agent_added_are_pruned_when_no_published_resource_needs_them() {
    let env = Env::start().await;
    let mut obj = env
        .provider
        .get(&ObjectRef::cluster_scoped(export_gvk(), "crontabs"))
        .await
        .unwrap()
        .unwrap();
    obj.data["spec"] = json!({"permissionClaims": [{"resource": "configmaps", "verbs": ["*"]}]});
    env.provider
        .replace(&obj, kcp_core::Subresource::Main)
        .await
        .unwrap();
    env.publish(&crontab_pr("crontabs")).await;
    let ready = BTreeSet::from([schema_for(&env, "crontabs").await]);
    let mut pr = env.pr("crontabs").await;
    pr.spec.related = Some(vec![secret_related()]);
    reconcile_export(
        &env.provider,
        None,
        AGENT,
        "crontabs",
        &[pr.clone()],
        &ready,
        &ready,
    )
    .await
    .unwrap();
    assert_eq!(
        claim_resources(&export(&env).await),
        ["configmaps", "events", "namespaces", "secrets"]
    );
    pr.spec.related = None;
    let report = reconcile_export(
        &env.provider,
        None,
        AGENT,
        "crontabs",
        &[pr],
        &ready,
        &ready,
    )
    .await
    .unwrap();
    assert_eq!(report.removed_claims, ["namespaces", "secrets"]);
    let export = export(&env).await;
    assert_eq!(claim_resources(&export), ["configmaps", "events"]);
    assert_eq!(
        export["metadata"]["annotations"]["sync.kcp-rs.io/added-claims"],
        r#"[{"resource":"events"}]"#
    );
}

#[tokio::test]
async fn a_missing_export_is_not_an_error() {
    let env = Env::start().await;
    let report = reconcile_export(
        &env.provider,
        None,
        AGENT,
        "absent",
        &[],
        &BTreeSet::new(),
        &BTreeSet::new(),
    )
    .await
    .unwrap();
    assert!(!report.found);
}

#[tokio::test]
async fn the_export_reads_back_as_v1alpha1_latest_resource_schemas() {
    let env = Env::start().await;
    env.publish(&crontab_pr("crontabs")).await;
    let name = schema_for(&env, "crontabs").await;
    let ready = BTreeSet::from([name.clone()]);
    reconcile_export(
        &env.provider,
        None,
        AGENT,
        "crontabs",
        &[env.pr("crontabs").await],
        &ready,
        &ready,
    )
    .await
    .unwrap();
    let v1: kcp_core::kcp::types::APIExport = env
        .provider
        .get_typed(None, "crontabs")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(v1.spec.latest_resource_schemas, Some(vec![name]));
}
