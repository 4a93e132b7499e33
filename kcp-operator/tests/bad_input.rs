//! Bad input through the running operator, as a user writes it: beside the example
//! installation, each broken object gets a condition naming the object, the field and the
//! reason (the summary `Ready`, or upstream's `RootShard` condition for a Shard's RootShard;
//! upstream's operator emits no Events, so neither does this one); the installation keeps
//! converging; nothing of the broken object is rolled out; fixing it clears the condition.
//!
//! Options that conflict (two Kubeconfig targets, `issuerRef` with `caSecretRef`) never reach
//! the operator: the CRDs' CEL rules refuse them, and the refusal names the field.
//!
//! On kcp-sim only (the fast suite): each test runs the operator, which serves every
//! namespace, on a server of its own.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kcp_core::ObjectClientExt as _;
use kcp_core::client::{ObjectPatch, PatchOptions, Subresource};
use kcp_core::typed::object_ref_for;
use kcp_operator::api::*;
use kcp_operator::render::certmanager::Certificate;
use kube::core::object::HasStatus;
use serde_json::{Value, json};

/// The example installation, the running operator, and `yaml` (with `NS` for the namespace)
/// created as a user would.
async fn installation_with(yaml: &str) -> (Bed, Operator) {
    let bed = bare_sim_bed().await;
    let operator = Operator::on(&bed).await;
    apply_objects(bed.client.as_ref(), examples_in(&bed.ns)).await;
    let objects = kcp_core::parse_manifests("bad.yaml", &yaml.replace("NS", &bed.ns)).unwrap();
    for object in &objects {
        bed.client.create(object).await.unwrap();
    }
    (bed, operator)
}

async fn condition<K>(bed: &Bed, name: &str, type_: &str) -> Option<Condition>
where
    K: Typed + HasStatus,
    K::Status: serde::Serialize,
{
    let object: Option<K> = bed.client.get_typed(Some(&bed.ns), name).await.unwrap();
    let status = serde_json::to_value(object?.status()?).unwrap();
    let conditions: Vec<Condition> = serde_json::from_value(status["conditions"].clone()).ok()?;
    conditions.into_iter().find(|c| c.type_ == type_)
}

/// Waits until condition `type_` of `K` `name` is `status` with a message holding `words`.
async fn until_condition<K>(bed: &Bed, name: &str, type_: &str, status: &str, words: &[&str])
where
    K: Typed + HasStatus,
    K::Status: serde::Serialize,
{
    let what = format!("{} {name}: {type_}={status} naming {words:?}", K::kind(&()));
    wait_until(bed, &what, || async {
        condition::<K>(bed, name, type_)
            .await
            .is_some_and(|c| c.status == status && words.iter().all(|w| c.message.contains(w)))
    })
    .await;
}

async fn ready<K>(bed: &Bed, name: &str)
where
    K: Typed + HasStatus,
    K::Status: serde::Serialize,
{
    until_condition::<K>(bed, name, CONDITION_READY, "True", &[]).await;
}

/// The example installation still converges: its Shard and its Kubeconfig become ready.
async fn the_installation_is_served(bed: &Bed) {
    ready::<Shard>(bed, "alpha").await;
    ready::<Kubeconfig>(bed, "admin").await;
}

async fn patch<K: Typed>(bed: &Bed, name: &str, patch: Value) {
    bed.client
        .patch(
            &object_ref_for::<K>(Some(&bed.ns), name),
            Subresource::Main,
            &ObjectPatch::Merge(patch),
            &PatchOptions::default(),
        )
        .await
        .unwrap();
}

async fn image(bed: &Bed, deployment: &str) -> Option<String> {
    let d: Deployment = bed
        .client
        .get_typed(Some(&bed.ns), deployment)
        .await
        .unwrap()?;
    d.spec?.template.spec?.containers.first()?.image.clone()
}

/// Certificates whose name starts with `prefix`.
async fn certificates(bed: &Bed, prefix: &str) -> Vec<String> {
    all::<Certificate>(bed.client.as_ref(), &bed.ns)
        .await
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .filter(|n| n.starts_with(prefix))
        .collect()
}

const SHARD: &str = "apiVersion: operator.kcp.io/v1alpha1
kind: Shard
metadata: {name: beta, namespace: NS}
spec:
  rootShard: {ref: {name: root}}
  etcd: {endpoints: ['http://etcd-beta:2379']}
";

#[tokio::test]
async fn a_shard_naming_a_root_shard_that_does_not_exist_says_so_until_the_reference_is_fixed() {
    let yaml = SHARD.replace("{name: root}", "{name: nope}");
    let (bed, operator) = installation_with(&yaml).await;
    let words = [
        &format!("Shard {}/beta", bed.ns),
        "spec.rootShard.ref",
        "nope",
    ];
    let words: Vec<&str> = words.iter().map(|w| w.as_ref()).collect();
    until_condition::<Shard>(&bed, "beta", CONDITION_ROOT_SHARD, "False", &words).await;
    the_installation_is_served(&bed).await;
    assert!(certificates(&bed, "beta-").await.is_empty());

    patch::<Shard>(
        &bed,
        "beta",
        json!({"spec": {"rootShard": {"ref": {"name": "root"}}}}),
    )
    .await;
    until_condition::<Shard>(&bed, "beta", CONDITION_ROOT_SHARD, "True", &[]).await;
    ready::<Shard>(&bed, "beta").await;
    operator.stop().await;
}

#[tokio::test]
async fn a_kubeconfig_naming_a_target_that_does_not_exist_says_so_until_it_names_one_that_does() {
    let yaml = "apiVersion: operator.kcp.io/v1alpha1
kind: Kubeconfig
metadata: {name: viewer, namespace: NS}
spec:
  target: {frontProxyRef: {name: nope}}
  username: viewer
  validity: 24h
  secretRef: {name: viewer-kubeconfig}
";
    let (bed, operator) = installation_with(yaml).await;
    let object = format!("Kubeconfig {}/viewer", bed.ns);
    let words = [
        object.as_str(),
        "spec.target.frontProxyRef",
        "FrontProxy/nope, which does not exist",
    ];
    until_condition::<Kubeconfig>(&bed, "viewer", CONDITION_REFERENCE_VALID, "False", &words).await;
    until_condition::<Kubeconfig>(&bed, "viewer", CONDITION_READY, "False", &words).await;
    the_installation_is_served(&bed).await;

    let fixed = json!({"spec": {"target": {"frontProxyRef": {"name": "edge"}}}});
    patch::<Kubeconfig>(&bed, "viewer", fixed).await;
    ready::<Kubeconfig>(&bed, "viewer").await;
    operator.stop().await;
}

#[tokio::test]
async fn a_virtual_workspace_targeting_a_shard_that_does_not_exist_says_so_until_it_exists() {
    let yaml = "apiVersion: operator.kcp.io/v1alpha1
kind: VirtualWorkspace
metadata: {name: vw-beta, namespace: NS}
spec:
  target: {shardRef: {name: beta}}
  external: {hostname: vw-beta.example.com, port: 6443}
  replicas: 1
";
    let (bed, operator) = installation_with(yaml).await;
    let object = format!("VirtualWorkspace {}/vw-beta", bed.ns);
    let shard = format!("Shard {}/beta, which does not exist", bed.ns);
    let words = [object.as_str(), "spec.target.shardRef", shard.as_str()];
    until_condition::<VirtualWorkspace>(
        &bed,
        "vw-beta",
        CONDITION_REFERENCE_VALID,
        "False",
        &words,
    )
    .await;
    the_installation_is_served(&bed).await;
    assert!(certificates(&bed, "vw-beta-").await.is_empty());

    let shard = kcp_core::parse_manifests("shard.yaml", &SHARD.replace("NS", &bed.ns)).unwrap();
    bed.client.create(&shard[0]).await.unwrap();
    ready::<VirtualWorkspace>(&bed, "vw-beta").await;
    operator.stop().await;
}

#[tokio::test]
async fn a_virtual_workspace_reference_that_matches_nothing_is_named_and_nothing_is_issued() {
    let yaml = format!("{SHARD}  kcpVirtualWorkspace: {{name: nope}}\n");
    let (bed, operator) = installation_with(&yaml).await;
    let object = format!("Shard {}/beta", bed.ns);
    let words = [
        object.as_str(),
        "spec.kcpVirtualWorkspace",
        "VirtualWorkspace",
    ];
    until_condition::<Shard>(&bed, "beta", CONDITION_READY, "False", &words).await;
    the_installation_is_served(&bed).await;
    assert!(certificates(&bed, "beta-").await.is_empty());

    patch::<Shard>(&bed, "beta", json!({"spec": {"kcpVirtualWorkspace": null}})).await;
    ready::<Shard>(&bed, "beta").await;
    operator.stop().await;
}

#[tokio::test]
async fn an_image_that_is_not_a_valid_reference_is_named_and_not_rolled_out() {
    let (bed, operator) = installation_with(SHARD).await;
    ready::<Shard>(&bed, "beta").await;
    let running = image(&bed, "beta-shard-kcp").await.unwrap();

    let bad = json!({"spec": {"image": {"repository": "Not A Repo!"}}});
    patch::<Shard>(&bed, "beta", bad).await;
    let object = format!("Shard {}/beta", bed.ns);
    let words = [
        object.as_str(),
        "spec.image.repository",
        "not a valid image",
    ];
    until_condition::<Shard>(&bed, "beta", CONDITION_READY, "False", &words).await;
    let reason = condition::<Shard>(&bed, "beta", CONDITION_READY)
        .await
        .unwrap()
        .reason;
    assert_eq!(reason, "InvalidSpec");
    the_installation_is_served(&bed).await;
    assert_eq!(image(&bed, "beta-shard-kcp").await.unwrap(), running);

    let fixed = json!({"spec": {"image": {"repository": "registry.example.com/kcp"}}});
    patch::<Shard>(&bed, "beta", fixed).await;
    ready::<Shard>(&bed, "beta").await;
    wait_until(&bed, "the fixed image rolled out", || async {
        image(&bed, "beta-shard-kcp")
            .await
            .is_some_and(|i| i.starts_with("registry.example.com/kcp:"))
    })
    .await;
    operator.stop().await;
}

#[tokio::test]
async fn a_certificate_duration_that_is_not_a_go_duration_is_named_and_nothing_is_issued() {
    let yaml =
        format!("{SHARD}  certificateTemplates: {{server: {{spec: {{duration: a while}}}}}}\n");
    let (bed, operator) = installation_with(&yaml).await;
    let object = format!("Shard {}/beta", bed.ns);
    let field = "spec.certificateTemplates.server.spec.duration";
    let words = [object.as_str(), field, "not a Go duration"];
    until_condition::<Shard>(&bed, "beta", CONDITION_READY, "False", &words).await;
    the_installation_is_served(&bed).await;
    assert!(certificates(&bed, "beta-").await.is_empty());

    let fixed =
        json!({"spec": {"certificateTemplates": {"server": {"spec": {"duration": "720h"}}}}});
    patch::<Shard>(&bed, "beta", fixed).await;
    ready::<Shard>(&bed, "beta").await;
    operator.stop().await;
}

#[tokio::test]
async fn a_resource_quantity_that_does_not_parse_is_named_and_not_rolled_out() {
    let yaml = format!("{SHARD}  resources: {{requests: {{cpu: lots}}}}\n");
    let (bed, operator) = installation_with(&yaml).await;
    let object = format!("Shard {}/beta", bed.ns);
    let words = [
        object.as_str(),
        "spec.resources.requests.cpu",
        "not a quantity",
    ];
    until_condition::<Shard>(&bed, "beta", CONDITION_READY, "False", &words).await;
    the_installation_is_served(&bed).await;
    assert!(image(&bed, "beta-shard-kcp").await.is_none());

    patch::<Shard>(
        &bed,
        "beta",
        json!({"spec": {"resources": {"requests": {"cpu": "500m"}}}}),
    )
    .await;
    ready::<Shard>(&bed, "beta").await;
    operator.stop().await;
}

#[tokio::test]
async fn a_kubeconfig_validity_that_is_not_a_duration_is_named_and_no_secret_is_written() {
    let yaml = "apiVersion: operator.kcp.io/v1alpha1
kind: Kubeconfig
metadata: {name: viewer, namespace: NS}
spec:
  target: {frontProxyRef: {name: edge}}
  username: viewer
  validity: forever
  secretRef: {name: viewer-kubeconfig}
";
    let (bed, operator) = installation_with(yaml).await;
    let object = format!("Kubeconfig {}/viewer", bed.ns);
    let words = [object.as_str(), "spec.validity", "forever"];
    until_condition::<Kubeconfig>(&bed, "viewer", CONDITION_READY, "False", &words).await;
    the_installation_is_served(&bed).await;
    let secret: Option<Secret> = bed
        .client
        .get_typed(Some(&bed.ns), "viewer-kubeconfig")
        .await
        .unwrap();
    assert!(secret.is_none());

    patch::<Kubeconfig>(&bed, "viewer", json!({"spec": {"validity": "24h"}})).await;
    ready::<Kubeconfig>(&bed, "viewer").await;
    operator.stop().await;
}

#[tokio::test]
async fn a_ca_bundle_secret_that_does_not_exist_is_named_until_it_is_created() {
    let yaml = format!("{SHARD}  caBundleSecretRef: {{name: extra-ca}}\n");
    let (bed, operator) = installation_with(&yaml).await;
    let object = format!("Shard {}/beta", bed.ns);
    let secret = format!("Secret {}/extra-ca", bed.ns);
    let words = [object.as_str(), "spec.caBundleSecretRef", secret.as_str()];
    until_condition::<Shard>(&bed, "beta", CONDITION_READY, "False", &words).await;
    let reason = condition::<Shard>(&bed, "beta", CONDITION_READY)
        .await
        .unwrap()
        .reason;
    assert_eq!(reason, "ReferenceNotFound");
    the_installation_is_served(&bed).await;
    assert!(certificates(&bed, "beta-").await.is_empty());

    let pem = "-----BEGIN CERTIFICATE-----\nextra\n-----END CERTIFICATE-----\n";
    let secret = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "extra-ca", "namespace": bed.ns},
        "stringData": {"tls.crt": pem},
    });
    bed.client
        .create(&serde_json::from_value(secret).unwrap())
        .await
        .unwrap();
    ready::<Shard>(&bed, "beta").await;
    operator.stop().await;
}

#[tokio::test]
async fn an_etcd_client_secret_that_does_not_exist_is_named_until_it_is_created() {
    let yaml = SHARD.replace(
        "{endpoints: ['http://etcd-beta:2379']}",
        "{endpoints: ['https://etcd-beta:2379'], tlsConfig: {secretRef: {name: etcd-beta-client}}}",
    );
    let (bed, operator) = installation_with(&yaml).await;
    let object = format!("Shard {}/beta", bed.ns);
    let secret = format!("Secret {}/etcd-beta-client", bed.ns);
    let words = [
        object.as_str(),
        "spec.etcd.tlsConfig.secretRef",
        secret.as_str(),
    ];
    until_condition::<Shard>(&bed, "beta", CONDITION_READY, "False", &words).await;
    the_installation_is_served(&bed).await;
    assert!(certificates(&bed, "beta-").await.is_empty());

    let secret = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "etcd-beta-client", "namespace": bed.ns},
        "stringData": {"tls.crt": "x", "tls.key": "x", "ca.crt": "x"},
    });
    bed.client
        .create(&serde_json::from_value(secret).unwrap())
        .await
        .unwrap();
    ready::<Shard>(&bed, "beta").await;
    operator.stop().await;
}

#[tokio::test]
async fn conflicting_options_are_refused_by_the_api_server_naming_the_field() {
    let bed = bare_sim_bed().await;
    let two_targets = "apiVersion: operator.kcp.io/v1alpha1
kind: Kubeconfig
metadata: {name: two, namespace: NS}
spec:
  target: {frontProxyRef: {name: edge}, rootShardRef: {name: root}}
  username: two
  validity: 1h
  secretRef: {name: two-kubeconfig}
---
apiVersion: operator.kcp.io/v1alpha1
kind: CacheServer
metadata: {name: two, namespace: NS}
spec:
  certificates:
    issuerRef: {group: cert-manager.io, kind: ClusterIssuer, name: selfsigned}
    caSecretRef: {name: my-ca}
";
    let objects =
        kcp_core::parse_manifests("bad.yaml", &two_targets.replace("NS", &bed.ns)).unwrap();
    let refusals = [
        (
            "spec.target",
            "exactly one of rootShardRef, shardRef and frontProxyRef",
        ),
        (
            "spec.certificates",
            "exactly one of issuerRef and caSecretRef",
        ),
    ];
    for (object, (field, reason)) in objects.iter().zip(refusals) {
        let err = bed.client.create(object).await.unwrap_err().to_string();
        assert!(err.contains("422"), "{err}");
        assert!(err.contains("\"two\" is invalid"), "{err}");
        assert!(err.contains(field) && err.contains(reason), "{err}");
    }
}
