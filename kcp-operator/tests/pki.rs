//! The built-in PKI against kcp-sim: the spec's example installation gets every Certificate
//! issued by the operator itself (chained to the right CA, with the SANs and usages the
//! Certificate asks for), its kubeconfig Secrets appear, and a renewal reaches the kubeconfig.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use k8s_openapi::api::core::v1::Secret;
use kcp_core::{ObjectClient, ObjectClientExt as _};
use kcp_operator::pki::BuiltinPki;
use kcp_operator::pki::reconcile::reconcile_certificate_at;
use kcp_operator::render::certmanager::{Certificate, ClusterIssuer, Issuer};
use kcp_sim::{Config, Server};
use x509_parser::prelude::{FromDer as _, X509Certificate};

fn now() -> i64 {
    jiff::Timestamp::now().as_second()
}

/// The example's ClusterIssuer `selfsigned`, as a user of cert-manager would create it.
async fn self_signed_cluster_issuer(client: &dyn ObjectClient) {
    let yaml = "apiVersion: cert-manager.io/v1\nkind: ClusterIssuer\nmetadata: {name: selfsigned}\nspec: {selfSigned: {}}\n";
    apply_objects(
        client,
        kcp_core::parse_manifests("issuer.yaml", yaml).unwrap(),
    )
    .await;
}

/// One pass of the built-in issuer over every Certificate at `at`.
async fn issue_builtin(client: &dyn ObjectClient, at: i64) {
    for cert in all::<Certificate>(client, NS).await {
        reconcile_certificate_at(client, &BuiltinPki::default(), &cert, at)
            .await
            .unwrap();
    }
}

async fn converge_builtin(sim: &Server, client: &dyn ObjectClient, kcp: &Kcp) {
    let mut last = 0;
    for _ in 0..16 {
        reconcile_all(client, NS, kcp).await;
        issue_builtin(client, now()).await;
        run_deployments(client, NS).await;
        let rv = sim.resource_version();
        if rv == last {
            return;
        }
        last = rv;
    }
    panic!("the installation did not converge with the built-in PKI");
}

async fn setup_builtin() -> (Server, kcp_sim::SimClient, Kcp) {
    let (sim, client) = setup_with(Config::default(), true).await;
    self_signed_cluster_issuer(&client).await;
    (sim, client, Kcp::start().await)
}

async fn secret(client: &dyn ObjectClient, name: &str) -> Secret {
    client
        .get_typed(Some(NS), name)
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("Secret {name} exists"))
}

fn key(secret: &Secret, key: &str) -> String {
    String::from_utf8(secret.data.as_ref().unwrap()[key].0.clone()).unwrap()
}

fn first_der(pem: &str) -> Vec<u8> {
    kcp_operator::pki::x509::first_certificate_der(pem).unwrap()
}

/// The Secret holding the CA key pair that signs `cert` (`None` when self-signed).
async fn ca_secret_of(client: &dyn ObjectClient, cert: &Certificate) -> Option<Secret> {
    let r = &cert.spec.issuer_ref;
    if r.kind == "ClusterIssuer" {
        let ci: ClusterIssuer = client.get_typed(None, &r.name).await.unwrap().unwrap();
        assert!(ci.spec.self_signed.is_some());
        return None;
    }
    let issuer: Issuer = client.get_typed(Some(NS), &r.name).await.unwrap().unwrap();
    Some(secret(client, &issuer.spec.ca.unwrap().secret_name).await)
}

#[tokio::test]
async fn every_certificate_is_issued_chained_to_its_issuers_ca_with_the_sans_and_usages_it_asks_for()
 {
    let (sim, client, kcp) = setup_builtin().await;
    converge_builtin(&sim, &client, &kcp).await;
    let certs = all::<Certificate>(&client, NS).await;
    assert!(
        certs.len() > 20,
        "the example has {} Certificates",
        certs.len()
    );
    for cert in &certs {
        let name = cert.metadata.name.clone().unwrap();
        assert!(cert.is_ready(), "{name} is Ready");
        let status = cert.status.clone().unwrap();
        assert!(
            status.not_after.is_some() && status.renewal_time.is_some(),
            "{name}: {status:?}"
        );
        let s = secret(&client, &cert.spec.secret_name).await;
        assert!(!key(&s, "tls.key").is_empty() && !key(&s, "ca.crt").is_empty());
        let leaf_der = first_der(&key(&s, "tls.crt"));
        let (_, leaf) = X509Certificate::from_der(&leaf_der).unwrap();
        let signer_der = match ca_secret_of(&client, cert).await {
            Some(ca) => first_der(&key(&ca, "tls.crt")),
            None => leaf_der.clone(),
        };
        let (_, signer) = X509Certificate::from_der(&signer_der).unwrap();
        leaf.verify_signature(Some(signer.public_key()))
            .unwrap_or_else(|e| panic!("{name} verifies with its issuer's CA: {e}"));
        let inspected = kcp_operator::pki::x509::inspect(&leaf_der).unwrap();
        let mut want = cert.spec.dns_names.clone();
        want.sort();
        let mut have = inspected.dns_names.clone();
        have.sort();
        assert_eq!(have, want, "{name}: DNS SANs");
        assert_eq!(inspected.is_ca, cert.spec.is_ca, "{name}: CA flag");
        let eku = leaf.extended_key_usage().unwrap().map(|e| e.value.clone());
        let wants = |u: &str| cert.spec.usages.iter().any(|x| x == u);
        assert_eq!(
            eku.as_ref().is_some_and(|e| e.server_auth),
            wants("server auth"),
            "{name}: server auth"
        );
        assert_eq!(
            eku.as_ref().is_some_and(|e| e.client_auth),
            wants("client auth"),
            "{name}: client auth"
        );
    }
}

#[tokio::test]
async fn kubeconfig_secrets_appear_with_the_client_certificate_the_builtin_pki_issued() {
    let (sim, client, kcp) = setup_builtin().await;
    converge_builtin(&sim, &client, &kcp).await;
    let cert = secret(&client, "kubeconfig-cert-admin").await;
    let kubeconfig = key(&secret(&client, "admin-kubeconfig").await, "kubeconfig");
    let encoded =
        serde_json::to_value(k8s_openapi::ByteString(key(&cert, "tls.crt").into_bytes())).unwrap();
    assert!(
        kubeconfig.contains(encoded.as_str().unwrap()),
        "{kubeconfig}"
    );
    for name in [
        "root-logical-cluster-admin-kubeconfig",
        "alpha-client-kubeconfig",
        "cache-kubeconfig",
    ] {
        secret(&client, name).await;
    }
}

#[tokio::test]
async fn a_renewal_reaches_the_kubeconfig_secret() {
    let (sim, client, kcp) = setup_builtin().await;
    converge_builtin(&sim, &client, &kcp).await;
    let before = key(&secret(&client, "kubeconfig-cert-admin").await, "tls.crt");
    let cert: Certificate = client
        .get_typed(Some(NS), "kubeconfig-cert-admin")
        .await
        .unwrap()
        .unwrap();
    let renewal = jiff::Timestamp::strptime(
        "%Y-%m-%dT%H:%M:%S%:z",
        cert.status
            .as_ref()
            .unwrap()
            .renewal_time
            .as_deref()
            .unwrap()
            .replace('Z', "+00:00"),
    )
    .unwrap()
    .as_second();
    reconcile_certificate_at(&client, &BuiltinPki::default(), &cert, renewal)
        .await
        .unwrap();
    let after = key(&secret(&client, "kubeconfig-cert-admin").await, "tls.crt");
    assert_ne!(before, after, "the certificate was renewed");
    let renewed: Certificate = client
        .get_typed(Some(NS), "kubeconfig-cert-admin")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(renewed.status.unwrap().revision, Some(2));
    reconcile_all(&client, NS, &kcp).await;
    let kubeconfig = key(&secret(&client, "admin-kubeconfig").await, "kubeconfig");
    let encoded = serde_json::to_value(k8s_openapi::ByteString(after.into_bytes())).unwrap();
    assert!(
        kubeconfig.contains(encoded.as_str().unwrap()),
        "the kubeconfig carries the renewed certificate"
    );
}

#[tokio::test]
async fn a_pass_with_nothing_due_writes_nothing() {
    let (sim, client, kcp) = setup_builtin().await;
    converge_builtin(&sim, &client, &kcp).await;
    let before = sim.resource_version();
    issue_builtin(&client, now()).await;
    assert_eq!(sim.resource_version(), before);
}

#[tokio::test]
async fn a_certificate_waits_for_its_ca_secret_and_says_so() {
    let (_sim, client) = setup_with(Config::default(), false).await;
    let yaml = "apiVersion: cert-manager.io/v1\nkind: Issuer\nmetadata: {name: my-ca, namespace: kcp}\nspec: {ca: {secretName: my-ca}}\n---\napiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: leaf, namespace: kcp}\nspec: {secretName: leaf, commonName: leaf, issuerRef: {name: my-ca, kind: Issuer}}\n";
    apply_objects(&client, kcp_core::parse_manifests("x.yaml", yaml).unwrap()).await;
    issue_builtin(&client, now()).await;
    let cert: Certificate = client.get_typed(Some(NS), "leaf").await.unwrap().unwrap();
    let ready = &cert.status.unwrap().conditions[0];
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "Pending")
    );
    assert!(ready.message.contains("kcp/my-ca"), "{}", ready.message);
    assert!(
        client
            .get_typed::<Secret>(Some(NS), "leaf")
            .await
            .unwrap()
            .is_none()
    );
}

/// How often the certificate controller passed over a Certificate (with or without error), from
/// the `kcp_operator_*` metrics in `registry`.
fn certificate_passes(registry: &prometheus_client::registry::Registry) -> u64 {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
    text.lines()
        .filter(|l| {
            l.starts_with("kcp_operator_reconciliation_duration_seconds_count")
                && l.contains("controller=\"certificate\"")
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

#[tokio::test]
async fn issuing_a_certificate_takes_one_pass_not_another_for_the_issuers_own_secret_write() {
    let (sim, client) = setup_with(Config::default(), false).await;
    self_signed_cluster_issuer(&client).await;
    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = kcp_operator::metrics::Metrics::register(&mut registry);
    let (stop, mut stopped) = tokio::sync::watch::channel(false);
    let synced = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let kube = sim.client("").unwrap();
    let kcp = std::sync::Arc::new(Kcp::start().await);
    let flag = synced.clone();
    let operator = tokio::spawn(async move {
        let groups = [kcp_operator::controller::ControllerGroup::Config].into();
        let pki = kcp_operator::pki::Pki::Builtin(BuiltinPki::default());
        let shutdown = async move {
            let _ = stopped.wait_for(|s| *s).await;
        };
        kcp_operator::controller::run_with(kube, &groups, &pki, kcp, metrics, flag, shutdown).await;
    });
    while !synced.load(std::sync::atomic::Ordering::SeqCst) {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let yaml = "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: leaf, namespace: kcp}\nspec: {secretName: leaf, commonName: leaf, issuerRef: {name: selfsigned, kind: ClusterIssuer}}\n";
    apply_objects(&client, kcp_core::parse_manifests("x.yaml", yaml).unwrap()).await;
    let ready = || async {
        let cert: Option<Certificate> = client.get_typed(Some(NS), "leaf").await.unwrap();
        cert.is_some_and(|c| c.is_ready())
    };
    while !ready().await {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    // The Secret's event reaches the controller within milliseconds; give it far longer.
    let quiet = sim.resource_version();
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(sim.resource_version(), quiet, "nothing more was written");
    assert_eq!(certificate_passes(&registry), 1);
    stop.send(true).unwrap();
    operator.await.unwrap();
}
