//! Builtin (non-CRD) kinds: a service-cluster kind without a CRD is published through a CRD
//! synthesised from discovery and OpenAPI v3 (upstream `TestNonCRDResource`,
//! `TestSyncMultiResources` / #99), against two kcp-sim servers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Env, STATE_NS, agent, create, crontab_pr, eventually};
use kcp_core::kcp::types::APIResourceSchema;
use kcp_core::kube::api::GroupVersionKind;
use kcp_core::{ListOptions, ObjectClient, ObjectClientExt as _, ObjectRef};
use kcp_sim::{PLAIN_CLUSTER, SimClient};
use kcp_sync::api::{
    PublishedResource, PublishedResourceSpec, ResourceProjection, SourceResourceDescriptor,
};
use kcp_sync::controller::run;
use kcp_sync::reconcile::discovery::ApiDocuments;
use kcp_sync::reconcile::related::resolve_kind;
use kcp_sync::reconcile::schema::reconcile_schema;
use serde_json::{Value, json};

const AGENT: &str = "test-agent";

fn builtin_pr(
    name: &str,
    group: &str,
    kind: &str,
    projection: ResourceProjection,
) -> PublishedResource {
    PublishedResource::new(
        name,
        PublishedResourceSpec {
            resource: SourceResourceDescriptor {
                api_group: group.into(),
                kind: kind.into(),
                ..Default::default()
            },
            projection: Some(projection),
            ..Default::default()
        },
    )
}

fn role_pr() -> PublishedResource {
    let projection = ResourceProjection {
        group: "kcp.example.com".into(),
        ..Default::default()
    };
    builtin_pr("roles", "rbac.authorization.k8s.io", "Role", projection)
}

/// The playground's example of a builtin kind: ConfigMaps published as KubeConfigMaps.
fn configmap_pr() -> PublishedResource {
    let yaml = include_str!("../../examples/playground/sync/publish-configmaps.yaml");
    serde_saphyr::from_str(yaml).unwrap()
}

/// Publishes `pr` and returns its APIResourceSchema.
async fn schema_of(env: &Env, pr: &PublishedResource) -> APIResourceSchema {
    env.publish(pr).await;
    reconciled_schema(env, pr.name()).await
}

/// The APIResourceSchema of the PublishedResource `name`, reconciled once with discovery
/// through kube-rs.
async fn reconciled_schema(env: &Env, name: &str) -> APIResourceSchema {
    let pr = env.pr(name).await;
    let kube = env.service_sim.client(PLAIN_CLUSTER).unwrap();
    let docs: &dyn ApiDocuments = &kube;
    let projected = reconcile_schema(&env.service, Some(docs), &env.provider, AGENT, &pr)
        .await
        .unwrap()
        .unwrap();
    env.provider
        .get_typed(None, &projected.schema_name)
        .await
        .unwrap()
        .unwrap()
}

/// A consumer workspace `root:<name>` bound to the `crontabs` export.
async fn consumer(env: &Env, name: &str) -> SimClient {
    let root = env.kcp_sim.object_client("root");
    create(
        &root,
        json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace",
        "metadata": {"name": name}, "spec": {}}),
    )
    .await;
    let team = env.kcp_sim.object_client(&format!("root:{name}"));
    let claims: Vec<Value> = ["events", "namespaces"]
        .iter()
        .map(|r| json!({"group": "", "resource": r, "all": true, "state": "Accepted"}))
        .collect();
    create(&team, json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding", "metadata": {"name": "crontabs"},
        "spec": {"reference": {"export": {"path": "root:provider", "name": "crontabs"}}, "permissionClaims": claims}})).await;
    team
}

async fn local_objects(env: &Env, gvk: &GroupVersionKind) -> Vec<Value> {
    env.service
        .list(gvk, None, &ListOptions::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|o| serde_json::to_value(o).unwrap())
        .collect()
}

#[tokio::test]
async fn a_builtin_role_gets_a_schema_under_the_projected_group() {
    let env = Env::start().await;
    let ars = schema_of(&env, &role_pr()).await;
    let name = ars.metadata.name.clone().unwrap();
    assert!(
        name.starts_with('v') && name.ends_with(".roles.kcp.example.com"),
        "{name}"
    );
    assert_eq!(ars.spec.group, "kcp.example.com");
    assert_eq!(ars.spec.names.kind, "Role");
    let schema = &ars.spec.versions[0].schema;
    assert_eq!(schema["properties"]["rules"]["type"], "array");
    let subresources = &ars.spec.versions[0].subresources;
    assert!(
        subresources
            .as_ref()
            .is_none_or(|s| s.get("status").is_none()),
        "a Role has no status subresource: {subresources:?}"
    );
}

#[tokio::test]
async fn the_schema_name_of_a_builtin_kind_is_stable() {
    let first = Env::start().await;
    let second = Env::start().await;
    let a = schema_of(&first, &configmap_pr()).await.metadata.name;
    let b = schema_of(&second, &configmap_pr()).await.metadata.name;
    assert_eq!(a, b);
    let again = reconciled_schema(&first, "configmaps").await.metadata.name;
    assert_eq!(a, again);
}

#[tokio::test]
async fn a_kind_that_is_neither_a_crd_nor_served_is_an_invalid_spec() {
    let env = Env::start().await;
    let pr = builtin_pr("gadgets", "apps", "Gadget", ResourceProjection::default());
    env.publish(&pr).await;
    let pr = env.pr("gadgets").await;
    let kube = env.service_sim.client(PLAIN_CLUSTER).unwrap();
    let docs: &dyn ApiDocuments = &kube;
    let err = reconcile_schema(&env.service, Some(docs), &env.provider, AGENT, &pr)
        .await
        .unwrap_err();
    assert_eq!(err.reason(), "InvalidSpec");
    assert!(!err.is_transient());
    let text = err.to_string();
    assert!(
        text.contains("\"gadgets\"") && text.contains("spec.resource"),
        "{text}"
    );
    assert!(
        text.contains("neither a CustomResourceDefinition nor served"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_builtin_role_is_published_under_a_new_group() {
    let env = Env::start().await;
    create(
        &env.service,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": STATE_NS}}),
    )
    .await;
    env.publish(&role_pr()).await;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(run(agent(&env), async {
        let _ = stopped.await;
    }));
    let team = consumer(&env, "team-roles").await;
    let gvk = GroupVersionKind::gvk("kcp.example.com", "v1", "Role");
    eventually("the projected Role served in the consumer", || async {
        team.resolve(&gvk).await.is_ok()
    })
    .await;
    create(
        &team,
        json!({"apiVersion": "kcp.example.com/v1", "kind": "Role",
        "metadata": {"name": "reader", "namespace": "default"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]}),
    )
    .await;
    let local = GroupVersionKind::gvk("rbac.authorization.k8s.io", "v1", "Role");
    // The service cluster also holds kube's bootstrap Roles (kube-system, kube-public).
    let synced = || async {
        local_objects(&env, &local)
            .await
            .into_iter()
            .filter(|o| {
                o.pointer("/metadata/labels/kubernetes.io~1bootstrapping")
                    .is_none()
            })
            .collect::<Vec<_>>()
    };
    eventually("the real Role on the service cluster", || async {
        !synced().await.is_empty()
    })
    .await;
    let role = synced().await.remove(0);
    assert_eq!(
        role["rules"],
        json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}])
    );
    let _ = stop.send(());
    task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_core_configmap_projected_to_kubeconfigmap_syncs_next_to_a_crd() {
    let env = Env::start().await;
    create(
        &env.service,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": STATE_NS}}),
    )
    .await;
    env.publish(&crontab_pr("crontabs")).await;
    env.publish(&configmap_pr()).await;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(run(agent(&env), async {
        let _ = stopped.await;
    }));
    let team = consumer(&env, "team-multi").await;
    let kube_cm = GroupVersionKind::gvk("kcp.example.com", "v1", "KubeConfigMap");
    let crontab = GroupVersionKind::gvk("example.com", "v1", "CronTab");
    eventually("both kinds served in the consumer", || async {
        team.resolve(&kube_cm).await.is_ok() && team.resolve(&crontab).await.is_ok()
    })
    .await;
    let info = team.resolve(&kube_cm).await.unwrap();
    assert!(!info.has_status(), "a ConfigMap has no status subresource");
    create(
        &team,
        json!({"apiVersion": "kcp.example.com/v1", "kind": "KubeConfigMap",
        "metadata": {"name": "settings", "namespace": "default"}, "data": {"colour": "blue"}}),
    )
    .await;
    create(&team, json!({"apiVersion": "example.com/v1", "kind": "CronTab",
        "metadata": {"name": "nightly", "namespace": "default"}, "spec": {"cronSpec": "0 0 * * *"}}))
    .await;
    let configmap = GroupVersionKind::gvk("", "v1", "ConfigMap");
    eventually(
        "the ConfigMap and the CronTab on the service cluster",
        || async {
            let cms = local_objects(&env, &configmap).await;
            let cts = local_objects(&env, &crontab).await;
            cms.iter().any(|c| c["data"] == json!({"colour": "blue"})) && cts.len() == 1
        },
    )
    .await;
    let remote = ObjectRef::namespaced(kube_cm.clone(), "default", "settings");
    let obj = team.get(&remote).await.unwrap().unwrap();
    assert!(obj.data.get("status").is_none());
    let _ = stop.send(());
    task.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_related_builtin_kind_outside_the_core_group_is_named_by_discovery() {
    let env = Env::start().await;
    let docs = env.service_sim.client(PLAIN_CLUSTER).unwrap();
    let deployments = ("apps", "v1", "deployments");
    let gvk = resolve_kind(&env.service, Some(&docs), deployments)
        .await
        .unwrap();
    assert_eq!(gvk, GroupVersionKind::gvk("apps", "v1", "Deployment"));
    let err = resolve_kind(&env.service, None, deployments)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("apps/v1/deployments"), "{err}");
}
