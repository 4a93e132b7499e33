//! The server's CA: served over HTTPS with `Config::tls`, and published by kcp mode as
//! `kube-root-ca.crt` in every namespace (kcp's root CA publisher; conformance
//! `kcp-root-ca.yaml` holds it to kcp); over HTTPS, bearer tokens are authenticated as the real
//! servers do.
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

fn tls(mut config: Config) -> Config {
    config.tls = true;
    config
}

#[tokio::test]
async fn over_tls_the_servers_own_clients_trust_its_ca() {
    let sim = Server::start(tls(Config::default())).await.unwrap();
    assert!(sim.url().starts_with("https://127.0.0.1:"), "{}", sim.url());
    let api = Api::<Namespace>::all(sim.client("").unwrap());
    assert!(api.get_opt("default").await.unwrap().is_some());
}

#[tokio::test]
async fn a_client_that_does_not_trust_the_ca_is_refused() {
    let sim = Server::start(tls(Config::default())).await.unwrap();
    let untrusting = kube::Client::try_from(kube::Config::new(sim.url().parse().unwrap())).unwrap();
    let api = Api::<Namespace>::all(untrusting);
    assert!(api.get_opt("default").await.is_err());
}

#[tokio::test]
async fn the_kubeconfig_carries_the_ca_for_every_context() {
    let sim = Server::start(tls(Config::kcp())).await.unwrap();
    let text = sim.kubeconfig(&["root"]);
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&text).unwrap();
    let config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    let api = Api::<ConfigMap>::namespaced(kube::Client::try_from(config).unwrap(), "default");
    let cm = api.get("kube-root-ca.crt").await.unwrap();
    assert_eq!(published_ca(&cm), sim.ca_pem().unwrap());
}

async fn with_token(sim: &Server, token: &str) -> kube::Client {
    let mut config = sim.kube_config("").unwrap();
    config.auth_info = serde_json::from_value(json!({"token": token})).unwrap();
    kube::Client::try_from(config).unwrap()
}

#[tokio::test]
async fn over_tls_a_token_kcp_sim_did_not_sign_is_unauthorized() {
    let sim = Server::start(tls(Config::default())).await.unwrap();
    let api = Api::<Namespace>::all(with_token(&sim, "not-a-token").await);
    let err = api.get("default").await.unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("expected kube's 401, got {err:?}");
    };
    assert_eq!((status.code, status.reason.as_str()), (401, "Unauthorized"));
}

#[tokio::test]
async fn over_tls_the_kubeconfigs_token_is_the_admin() {
    let sim = Server::start(tls(Config::default())).await.unwrap();
    let api = Api::<Namespace>::all(with_token(&sim, "kcp-sim").await);
    assert!(api.get_opt("default").await.unwrap().is_some());
}

#[tokio::test]
async fn over_plain_http_any_other_token_is_still_the_admin() {
    let sim = Server::start(Config::default()).await.unwrap();
    let api = Api::<Namespace>::all(with_token(&sim, "not-a-token").await);
    assert!(api.get_opt("default").await.unwrap().is_some());
}

#[tokio::test]
async fn a_deleted_kcp_namespace_takes_its_root_ca_config_map_with_it() {
    let sim = Server::start(Config::kcp()).await.unwrap();
    let client = sim.client("root").unwrap();
    namespace(&client, "team").await;
    Api::<Namespace>::all(client.clone())
        .delete("team", &DeleteParams::default())
        .await
        .unwrap();
    let namespaces = Api::<Namespace>::all(client.clone());
    assert!(namespaces.get_opt("team").await.unwrap().is_none());
    let cms = Api::<ConfigMap>::namespaced(client, "team");
    assert!(cms.get_opt("kube-root-ca.crt").await.unwrap().is_none());
}

#[tokio::test]
async fn a_full_quota_keeps_the_publisher_out_but_not_the_users_delete() {
    let sim = Server::start(Config::kcp()).await.unwrap();
    let client = sim.client("root").unwrap();
    namespace(&client, "team").await;
    let quotas =
        Api::<k8s_openapi::api::core::v1::ResourceQuota>::namespaced(client.clone(), "team");
    let quota = serde_json::from_value(json!({"metadata": {"name": "q"},
        "spec": {"hard": {"count/configmaps": "0"}}}))
    .unwrap();
    quotas.create(&PostParams::default(), &quota).await.unwrap();
    let cms = Api::<ConfigMap>::namespaced(client, "team");
    cms.delete("kube-root-ca.crt", &DeleteParams::default())
        .await
        .unwrap();
    // The quota refuses the publisher's create; the user's delete stands.
    assert!(cms.get_opt("kube-root-ca.crt").await.unwrap().is_none());
}
