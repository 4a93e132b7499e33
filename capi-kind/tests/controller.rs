//! The provider end to end: both controllers against kcp-sim over HTTP, with workload
//! clusters from the in-process (kcp-sim) provisioner.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use capi_kind::api::{KINDCluster, KindCluster, Phase};
use capi_kind::provisioner::{Provisioner, SimProvisioner};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kcp_core::ObjectClient;
use kcp_sim::Server;
use kube::api::{Api, PostParams};

mod support;

use support::*;

#[tokio::test]
async fn an_upstream_kind_cluster_becomes_ready_with_its_config_secret() {
    let env = Env::start().await;
    let api = env.api::<KINDCluster>();
    env.create::<KINDCluster>(TEST1).await;
    wait_kind_cluster_ready(&api, "test-cluster-1").await;
    let obj = api.get("test-cluster-1").await.unwrap();
    let status = obj.status.clone().unwrap();
    assert_eq!(status.ready, Some(true));
    assert_eq!(
        status.conditions.last().unwrap().message,
        "Cluster was successfully created"
    );
    assert_eq!(
        obj.metadata.finalizers,
        Some(vec![
            "kindclusters.infrastructure.cluster-k8s.io/cluster-finalizer".to_string()
        ])
    );
    let secret = env.api::<Secret>().get("test-1-config").await.unwrap();
    let workload = kubeconfig_client(&secret, "config").await;
    let namespaces = Api::<Namespace>::all(workload)
        .list(&Default::default())
        .await
        .unwrap();
    assert!(
        namespaces
            .items
            .iter()
            .any(|n| n.metadata.name.as_deref() == Some("default"))
    );
    env.stop().await;
}

#[tokio::test]
async fn a_capi_kind_cluster_waits_for_its_cluster_owner() {
    let env = Env::start().await;
    let api = env.api::<KindCluster>();
    env.create::<KindCluster>("apiVersion: infrastructure.cluster.x-k8s.io/v1alpha1\nkind: KindCluster\nmetadata: {name: orphan, namespace: default}\nspec: {}\n")
        .await;
    wait_for(&api, "orphan", "WaitingForClusterOwner", |o| {
        condition_reason(o, "Ready").as_deref() == Some("WaitingForClusterOwner")
    })
    .await;
    let obj = api.get("orphan").await.unwrap();
    assert_eq!(capi_phase(&obj), Some(Phase::Pending));
    assert_eq!(env.provisioner.creates(), 0);
    env.stop().await;
}

#[tokio::test]
async fn a_capi_kind_cluster_is_provisioned_with_endpoint_and_capi_kubeconfig_secret() {
    let env = Env::start().await;
    let api = env.api::<KindCluster>();
    env.create::<KindCluster>(&capi_cluster("dev", "workerNodes: 1", ""))
        .await;
    wait_for(&api, "dev", "Ready", |o| {
        capi_phase(o) == Some(Phase::Ready)
    })
    .await;
    let obj = api.get("dev").await.unwrap();
    let status = obj.status.clone().unwrap();
    assert!(status.ready);
    assert_eq!(status.initialization.unwrap().provisioned, Some(true));
    assert_eq!(status.cluster_name.as_deref(), Some("default-dev"));
    assert_eq!(
        condition_reason(&obj, "Paused").as_deref(),
        Some("NotPaused")
    );
    let url = env.provisioner.url("default-dev").unwrap();
    let endpoint = obj.spec.control_plane_endpoint.clone().unwrap();
    assert_eq!(url, format!("http://{}:{}", endpoint.host, endpoint.port));
    let secret = env.api::<Secret>().get("dev-kubeconfig").await.unwrap();
    assert_eq!(secret.type_.as_deref(), Some("cluster.x-k8s.io/secret"));
    assert_eq!(
        secret.metadata.labels.clone().unwrap()["cluster.x-k8s.io/cluster-name"],
        "dev"
    );
    let owner = &secret.metadata.owner_references.clone().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str()),
        ("KindCluster", obj.metadata.uid.as_deref().unwrap())
    );
    let workload = kubeconfig_client(&secret, "value").await;
    assert!(
        Api::<Namespace>::all(workload)
            .list(&Default::default())
            .await
            .is_ok()
    );
    env.stop().await;
}

#[tokio::test]
async fn a_paused_kind_cluster_is_not_provisioned() {
    let env = Env::start().await;
    let api = env.api::<KindCluster>();
    env.create::<KindCluster>(&capi_cluster(
        "held",
        "",
        "cluster.x-k8s.io/paused: \"true\"",
    ))
    .await;
    wait_for(&api, "held", "Paused", |o| {
        condition_reason(o, "Paused").as_deref() == Some("Paused")
    })
    .await;
    assert_eq!(env.provisioner.creates(), 0);
    assert!(env.provisioner.list().await.unwrap().is_empty());
    env.stop().await;
}

#[tokio::test]
async fn deleting_the_object_deletes_the_cluster_and_its_secrets() {
    let env = Env::start().await;
    let api = env.api::<KINDCluster>();
    env.create::<KINDCluster>(TEST1).await;
    wait_kind_cluster_ready(&api, "test-cluster-1").await;
    delete_and_wait(&api, "test-cluster-1").await;
    assert!(env.provisioner.list().await.unwrap().is_empty());
    assert!(
        env.api::<Secret>()
            .get_opt("test-1-config")
            .await
            .unwrap()
            .is_none()
    );
    env.stop().await;
}

#[tokio::test]
async fn a_cluster_deleted_out_of_band_is_recreated() {
    let env = Env::start().await;
    let api = env.api::<KINDCluster>();
    env.create::<KINDCluster>(TEST1).await;
    wait_kind_cluster_ready(&api, "test-cluster-1").await;
    let first_url = env.provisioner.url("test-1").unwrap();
    env.provisioner.delete("test-1").await.unwrap();
    // Hold the deleted server's port (if another test's server took it first, that one holds
    // it), so the recreated server cannot be given it again (the kernel handed it out twice
    // once) and the Secret's new URL tells the two apart.
    let first_port = first_url.trim_start_matches("http://127.0.0.1:");
    let _held = std::net::TcpListener::bind(format!("127.0.0.1:{first_port}"));
    wait_for(&api, "test-cluster-1", "the recreation", |o| {
        o.status.as_ref().is_some_and(|s| {
            s.conditions
                .iter()
                .any(|h| h.message.contains("recreating"))
        }) && upstream_phase(o) == Some(Phase::Ready)
    })
    .await;
    assert_eq!(env.provisioner.creates(), 2);
    let secret = env.api::<Secret>().get("test-1-config").await.unwrap();
    let kubeconfig = String::from_utf8(secret.data.unwrap()["config"].0.clone()).unwrap();
    let new_url = env.provisioner.url("test-1").unwrap();
    assert_ne!(first_url, new_url);
    assert!(
        kubeconfig.contains(&new_url),
        "the Secret follows the new kubeconfig"
    );
    env.stop().await;
}

#[tokio::test]
async fn a_second_object_asking_for_the_same_cluster_name_is_refused() {
    let env = Env::start().await;
    let api = env.api::<KindCluster>();
    env.create::<KindCluster>(&capi_cluster("first", "clusterName: shared", ""))
        .await;
    wait_for(&api, "first", "Ready", |o| {
        capi_phase(o) == Some(Phase::Ready)
    })
    .await;
    env.create::<KindCluster>(&capi_cluster("second", "clusterName: shared", ""))
        .await;
    wait_for(&api, "second", "ClusterNameInUse", |o| {
        condition_reason(o, "Ready").as_deref() == Some("ClusterNameInUse")
    })
    .await;
    assert_eq!(env.provisioner.creates(), 1);
    delete_and_wait(&api, "second").await;
    assert_eq!(
        env.provisioner.list().await.unwrap(),
        ["shared"],
        "the first object's cluster stays"
    );
    env.stop().await;
}

#[tokio::test]
async fn an_unmarked_cluster_is_neither_adopted_nor_deleted() {
    let env = Env::start().await;
    env.provisioner.create_unmarked("test-1").await.unwrap();
    let api = env.api::<KINDCluster>();
    env.create::<KINDCluster>(TEST1).await;
    wait_for(&api, "test-cluster-1", "Failed", |o| {
        upstream_phase(o) == Some(Phase::Failed)
    })
    .await;
    let status = api.get("test-cluster-1").await.unwrap().status.unwrap();
    assert_eq!(status.ready, Some(false));
    assert!(
        status
            .failure_message
            .contains("was not created for this object"),
        "{}",
        status.failure_message
    );
    assert!(
        env.api::<Secret>()
            .get_opt("test-1-config")
            .await
            .unwrap()
            .is_none()
    );
    delete_and_wait(&api, "test-cluster-1").await;
    assert_eq!(env.provisioner.list().await.unwrap(), ["test-1"]);
    env.stop().await;
}

/// KINDCluster `test-cluster-1` as the Go provider leaves it: its finalizer, `ready` and the
/// history entry of the creation, on `sim` before any controller of ours runs.
async fn left_by_the_go_provider(sim: &Server) {
    let api: Api<KINDCluster> = Api::namespaced(sim.client("").unwrap(), "default");
    let mut obj: KINDCluster = serde_saphyr::from_str(TEST1).unwrap();
    obj.metadata.finalizers = Some(vec![capi_kind::api::upstream::FINALIZER.to_owned()]);
    api.create(&PostParams::default(), &obj).await.unwrap();
    let status = serde_json::json!({"status": {"ready": true, "failureMessage": "",
        "conditions": [{"timestamp": "2026-01-01T00:00:00Z",
                        "message": "Cluster was successfully created", "reason": ""}]}});
    api.patch_status(
        "test-cluster-1",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(&status),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn a_cluster_the_go_provider_created_is_adopted_and_deleted_with_its_object() {
    let sim = management().await;
    let provisioner = SimProvisioner::new();
    provisioner.create_unmarked("test-1").await.unwrap();
    left_by_the_go_provider(&sim).await;
    let env = Env::run_on(sim, provisioner, |_, _| ());
    let api = env.api::<KINDCluster>();
    wait_kind_cluster_ready(&api, "test-cluster-1").await;
    let uid = api
        .get("test-cluster-1")
        .await
        .unwrap()
        .metadata
        .uid
        .unwrap();
    assert_eq!(env.provisioner.owner("test-1").await.unwrap(), Some(uid));
    assert_eq!(env.provisioner.creates(), 0, "adopted, not recreated");
    delete_and_wait(&api, "test-cluster-1").await;
    assert!(env.provisioner.list().await.unwrap().is_empty());
    env.stop().await;
}

#[tokio::test]
async fn a_stopped_cluster_is_still_deleted_with_its_object() {
    let env = Env::start().await;
    let api = env.api::<KINDCluster>();
    env.create::<KINDCluster>(TEST1).await;
    wait_kind_cluster_ready(&api, "test-cluster-1").await;
    env.provisioner.stop_cluster("test-1");
    delete_and_wait(&api, "test-cluster-1").await;
    assert!(env.provisioner.list().await.unwrap().is_empty());
    env.stop().await;
}

#[tokio::test]
async fn a_failed_create_is_reported_then_retried() {
    let provisioner = SimProvisioner::new();
    provisioner.fail_creates(Some("Cannot connect to the Docker daemon"));
    let env = Env::start_with(provisioner).await;
    let api = env.api::<KINDCluster>();
    env.create::<KINDCluster>(TEST1).await;
    wait_for(&api, "test-cluster-1", "Failed", |o| {
        upstream_phase(o) == Some(Phase::Failed)
    })
    .await;
    let status = api.get("test-cluster-1").await.unwrap().status.unwrap();
    assert!(
        status
            .failure_message
            .contains("Cannot connect to the Docker daemon")
    );
    assert_eq!(status.conditions[0].message, "Cluster cannot be created");
    env.provisioner.fail_creates(None);
    wait_kind_cluster_ready(&api, "test-cluster-1").await;
    let status = api.get("test-cluster-1").await.unwrap().status.unwrap();
    assert!(status.failure_message.is_empty());
    assert!(status.conditions.len() <= capi_kind::api::upstream::HISTORY_LIMIT);
    env.stop().await;
}

#[tokio::test]
async fn an_invalid_cluster_name_is_refused_by_the_crd_schema_with_the_field_named() {
    // The CRD's `maxLength: 64` refuses the object before the controller sees it, as a real
    // API server does (the controller's own check covers objects from before the constraint).
    let env = Env::start().await;
    let long = "the-name-of-cluster-is-too-long-the-name-of-cluster-is-too-long-the-name-of-cluster-is-too-long";
    let status = env
        .create_refused::<KINDCluster>(&format!(
            "apiVersion: infrastructure.cluster-k8s.io/v1alpha1\nkind: KINDCluster\nmetadata: {{name: too-long-name, namespace: default}}\nspec:\n  clusterName: {long}\n"
        ))
        .await;
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    // kube-apiserver adds a cause that the CEL rules were not checked (kcp-sim does too).
    assert!(
        status
            .message
            .contains("spec.clusterName: Too long: may not be more than 64 bytes"),
        "{}",
        status.message
    );
    assert_eq!(env.provisioner.creates(), 0);
    env.stop().await;
}

const CAPI_CLUSTER_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: clusters.cluster.x-k8s.io}
spec:
  group: cluster.x-k8s.io
  names: {kind: Cluster, plural: clusters, singular: cluster, listKind: ClusterList}
  scope: Namespaced
  versions:
  - name: v1beta2
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
"#;

#[tokio::test]
async fn a_paused_capi_cluster_pauses_its_kind_cluster_until_resumed() {
    let env = Env::start().await;
    let admin = env.sim.object_client("");
    for object in kcp_core::parse_manifests("crd", CAPI_CLUSTER_CRD).unwrap() {
        admin.create(&object).await.unwrap();
    }
    let cluster = kcp_core::parse_manifests(
        "cluster",
        "apiVersion: cluster.x-k8s.io/v1beta2\nkind: Cluster\nmetadata: {name: dev, namespace: default}\nspec: {paused: true}\n",
    )
    .unwrap()
    .remove(0);
    let cluster = admin.create(&cluster).await.unwrap();
    let api = env.api::<KindCluster>();
    // Owned by the Cluster it names (uid included), or a garbage collector takes it away.
    let owned = capi_cluster("dev", "", "").replace(
        "00000000-0000-0000-0000-000000000001",
        cluster.metadata.uid.as_deref().unwrap(),
    );
    env.create::<KindCluster>(&owned).await;
    wait_for(&api, "dev", "Paused", |o| {
        condition_reason(o, "Paused").as_deref() == Some("Paused")
    })
    .await;
    let obj = api.get("dev").await.unwrap();
    let paused = obj
        .status
        .unwrap()
        .conditions
        .into_iter()
        .find(|c| c.type_ == "Paused")
        .unwrap();
    assert_eq!(paused.message, "Cluster \"dev\" has spec.paused");
    assert_eq!(env.provisioner.creates(), 0);
    let mut resumed = cluster.clone();
    resumed.data["spec"]["paused"] = false.into();
    admin
        .replace(&resumed, kcp_core::Subresource::Main)
        .await
        .unwrap();
    wait_for(&api, "dev", "Ready", |o| {
        capi_phase(o) == Some(Phase::Ready)
    })
    .await;
    env.stop().await;
}

/// Upstream's invalid samples as a typed client sends them: a missing name arrives as
/// `clusterName: ""`, which the schema accepts, so the reconciler refuses it with the field
/// named; the version outside the enum is refused by the API server; the valid object next to
/// them is still served.
#[tokio::test]
async fn upstream_invalid_samples_are_refused_without_breaking_the_others() {
    let env = Env::start().await;
    let api = env.api::<KINDCluster>();
    env.create::<KINDCluster>(
        "apiVersion: infrastructure.cluster-k8s.io/v1alpha1\nkind: KINDCluster\nmetadata: {name: non-named-cluster, namespace: default}\nspec: {}\n",
    )
    .await;
    // The version outside the CRD's enum never reaches the controller: the API server refuses it.
    let refused = env
        .create_refused::<KINDCluster>(
            "apiVersion: infrastructure.cluster-k8s.io/v1alpha1\nkind: KINDCluster\nmetadata: {name: invalid-versioned-cluster, namespace: default}\nspec: {clusterName: test, kubernetesVersion: \"1.13\"}\n",
        )
        .await;
    assert!(
        refused
            .message
            .contains("spec.kubernetesVersion: Unsupported value: \"1.13\": supported values: "),
        "{}",
        refused.message
    );
    env.create::<KINDCluster>(TEST1).await;
    for (name, field) in [("non-named-cluster", "spec.clusterName: must not be empty")] {
        wait_for(&api, name, "Failed", |o| {
            upstream_phase(o) == Some(Phase::Failed)
        })
        .await;
        let status = api.get(name).await.unwrap().status.unwrap();
        assert!(
            status.failure_message.contains(field),
            "{}",
            status.failure_message
        );
    }
    wait_kind_cluster_ready(&api, "test-cluster-1").await;
    assert_eq!(env.provisioner.list().await.unwrap(), ["test-1"]);
    env.stop().await;
}

/// Upstream's three invalid samples sent as kubectl sends them (the YAML as written, no typed
/// defaults): the API server refuses each, naming the field.
#[tokio::test]
async fn upstreams_invalid_samples_are_refused_by_the_api_server() {
    let env = Env::start().await;
    let resource = kube::api::ApiResource::erase::<KINDCluster>(&());
    let api: Api<kube::api::DynamicObject> =
        Api::namespaced_with(env.sim.client("").unwrap(), "default", &resource);
    let long = "a".repeat(65);
    for (spec, field) in [
        ("{}".to_owned(), "spec.clusterName: Required value"),
        (
            format!("{{clusterName: {long}}}"),
            "spec.clusterName: Too long",
        ),
        (
            "{clusterName: old, kubernetesVersion: \"1.13\"}".to_owned(),
            "spec.kubernetesVersion: Unsupported value: \"1.13\"",
        ),
    ] {
        let yaml = format!(
            "apiVersion: infrastructure.cluster-k8s.io/v1alpha1\nkind: KINDCluster\nmetadata: {{name: sample, namespace: default}}\nspec: {spec}\n"
        );
        let obj: kube::api::DynamicObject = serde_saphyr::from_str(&yaml).unwrap();
        match api.create(&PostParams::default(), &obj).await {
            Err(kube::Error::Api(status)) => {
                assert_eq!(status.code, 422, "{spec}: {status:?}");
                assert!(status.message.contains(field), "{spec}: {}", status.message);
            }
            other => panic!("the API server should refuse spec {spec}: {other:?}"),
        }
    }
    env.stop().await;
}

#[tokio::test]
async fn a_kubeconfig_secret_changed_by_hand_is_restored() {
    let env = Env::start().await;
    let api = env.api::<KINDCluster>();
    env.create::<KINDCluster>(TEST1).await;
    wait_kind_cluster_ready(&api, "test-cluster-1").await;
    let secrets = env.api::<Secret>();
    let mut secret = secrets.get("test-1-config").await.unwrap();
    let original = secret.data.clone();
    secret
        .data
        .as_mut()
        .unwrap()
        .insert("config".into(), k8s_openapi::ByteString(b"stale".to_vec()));
    secrets
        .replace("test-1-config", &PostParams::default(), &secret)
        .await
        .unwrap();
    wait_for(
        &secrets,
        "test-1-config",
        "the kubeconfig restored",
        move |s: &Secret| s.data == original,
    )
    .await;
    env.stop().await;
}

#[tokio::test]
async fn a_kubeconfig_secret_controlled_by_someone_else_leaves_the_cluster_provisioned_not_ready() {
    let env = Env::start().await;
    let foreign: Secret = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "dev-kubeconfig", "namespace": "default", "ownerReferences": [{
            "apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "KubeadmControlPlane",
            "name": "dev", "uid": "someone-else", "controller": true}]},
        "data": {"value": "c3RhbGU="},
    }))
    .unwrap();
    env.api::<Secret>()
        .create(&PostParams::default(), &foreign)
        .await
        .unwrap();
    let api = env.api::<KindCluster>();
    env.create::<KindCluster>(&capi_cluster("dev", "", ""))
        .await;
    wait_for(&api, "dev", "Provisioned", |o| {
        capi_phase(o) == Some(Phase::Provisioned)
    })
    .await;
    let status = api.get("dev").await.unwrap().status.unwrap();
    let kubeconfig = status
        .conditions
        .iter()
        .find(|c| c.type_ == "KubeconfigReady")
        .unwrap();
    assert_eq!(kubeconfig.status, "False");
    assert!(
        kubeconfig.message.contains("controlled by another object"),
        "{}",
        kubeconfig.message
    );
    assert!(!status.ready);
    let kept = env.api::<Secret>().get("dev-kubeconfig").await.unwrap();
    assert_eq!(
        kept.data, foreign.data,
        "the foreign Secret is not overwritten"
    );
    env.stop().await;
}

#[tokio::test]
async fn with_a_watch_filter_only_labelled_objects_are_served() {
    let env = Env::start_configured(SimProvisioner::new(), |c, _| {
        c.watch_filter = Some("team-a".into())
    })
    .await;
    let api = env.api::<KINDCluster>();
    env.create::<KINDCluster>(TEST1).await;
    env.create::<KINDCluster>(
        "apiVersion: infrastructure.cluster-k8s.io/v1alpha1\nkind: KINDCluster\nmetadata:\n  name: mine\n  namespace: default\n  labels: {cluster.x-k8s.io/watch-filter: team-a}\nspec: {clusterName: mine}\n",
    )
    .await;
    wait_kind_cluster_ready(&api, "mine").await;
    let other = api.get("test-cluster-1").await.unwrap();
    assert!(
        other.status.is_none() && other.metadata.finalizers.is_none(),
        "{other:?}"
    );
    assert_eq!(env.provisioner.list().await.unwrap(), ["mine"]);
    env.stop().await;
}

#[tokio::test]
async fn stopping_before_the_first_list_succeeded_does_not_hang() {
    let env = Env::start_configured(SimProvisioner::new(), |_, sim| {
        sim.faults()
            .add_error(kcp_sim::ErrorRule::new(500, 1.0).verbs([kcp_sim::Verb::List]));
    })
    .await;
    let faults_seen = async {
        while env.sim.faults().injected() == 0 {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(Duration::from_secs(30), faults_seen)
        .await
        .expect("the controllers tried to list");
    env.stop().await;
}
