//! The server's CA: served over HTTPS with `Config::tls`, and published by kcp mode as
//! `kube-root-ca.crt` in every namespace (kcp's root CA publisher; conformance
//! `kcp-root-ca.yaml` holds it to kcp).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kcp_sim::{Config, Server};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

async fn namespace(client: &kube::Client, name: &str) {
    let api: Api<Namespace> = Api::all(client.clone());
    let ns = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    api.create(&PostParams::default(), &ns).await.unwrap();
}

fn published_ca(cm: &ConfigMap) -> &str {
    cm.data.as_ref().unwrap()["ca.crt"].as_str()
}

#[tokio::test]
async fn a_new_kcp_namespace_holds_the_servers_ca() {
    let sim = Server::start(Config::kcp()).await.unwrap();
    let client = sim.client("root").unwrap();
    namespace(&client, "team").await;
    let cm = Api::<ConfigMap>::namespaced(client, "team")
        .get("kube-root-ca.crt")
        .await
        .unwrap();
    assert_eq!(published_ca(&cm), sim.ca_pem().unwrap());
    let fields = cm.metadata.managed_fields.unwrap();
    assert_eq!(fields.len(), 1);
    assert_eq!(fields[0].manager.as_deref(), Some("kcp"));
}

#[tokio::test]
async fn the_default_namespace_of_root_holds_it_from_the_start() {
    let sim = Server::start(Config::kcp()).await.unwrap();
    let api = Api::<ConfigMap>::namespaced(sim.client("root").unwrap(), "default");
    assert_eq!(
        published_ca(&api.get("kube-root-ca.crt").await.unwrap()),
        sim.ca_pem().unwrap()
    );
}

#[tokio::test]
async fn a_deleted_root_ca_config_map_is_made_again() {
    let sim = Server::start(Config::kcp()).await.unwrap();
    let api = Api::<ConfigMap>::namespaced(sim.client("root").unwrap(), "default");
    let before = api.get("kube-root-ca.crt").await.unwrap();
    api.delete("kube-root-ca.crt", &DeleteParams::default())
        .await
        .unwrap();
    let after = api.get("kube-root-ca.crt").await.unwrap();
    assert_ne!(before.metadata.uid, after.metadata.uid);
    assert_eq!(published_ca(&after), sim.ca_pem().unwrap());
}

#[tokio::test]
async fn changed_data_is_put_back_and_labels_are_kept() {
    let sim = Server::start(Config::kcp()).await.unwrap();
    let api = Api::<ConfigMap>::namespaced(sim.client("root").unwrap(), "default");
    let patch = json!({"metadata": {"labels": {"mine": "yes"}},
        "data": {"ca.crt": "not a certificate", "extra": "x"}});
    api.patch(
        "kube-root-ca.crt",
        &PatchParams::default(),
        &Patch::Merge(patch),
    )
    .await
    .unwrap();
    let cm = api.get("kube-root-ca.crt").await.unwrap();
    assert_eq!(cm.data.as_ref().unwrap().len(), 1);
    assert_eq!(published_ca(&cm), sim.ca_pem().unwrap());
    assert_eq!(cm.metadata.labels.unwrap()["mine"], "yes");
}

#[tokio::test]
async fn a_kubernetes_server_publishes_nothing() {
    let sim = Server::start(Config::default()).await.unwrap();
    assert!(sim.ca_pem().is_none());
    let api = Api::<ConfigMap>::namespaced(sim.client("").unwrap(), "default");
    assert!(api.get_opt("kube-root-ca.crt").await.unwrap().is_none());
}
