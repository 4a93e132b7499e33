//! A real kcp boots from what kcp-operator renders: the root shard's Deployment, as the
//! operator writes it with its built-in PKI, is started as the real `kcp` binary with exactly
//! its arguments, environment and mounted files (every container path mapped into a directory
//! of the test, certificates and kubeconfig Secrets written there), against a real etcd. It
//! must reach `/readyz`, and the admin Kubeconfig's Secret must list workspaces with its client
//! certificate. Only the listen address, port and data directory are added (the pod's network
//! namespace has them for free), and the image tag is the kcp the test bed builds, so the
//! operator's version gates render that release's flags. Real-only: kcp-sim runs no pods.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::*;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Container, PodSpec, Secret};
use kcp_core::{ObjectClient, ObjectClientExt as _};
use kcp_operator::pki::BuiltinPki;
use kcp_operator::pki::reconcile::reconcile_certificate;
use kcp_operator::render::certmanager::Certificate;
use kcp_sim::Config;
use kcp_testbed::process::PeerProcess;

/// The kcp release the test bed builds (`kcp-testbed/peers/PINS`).
const KCP_TAG: &str = "v0.30.0";

/// The loopback ports of the three servers.
struct Ports {
    root: u16,
    shard: u16,
    proxy: u16,
}

/// A root shard, a shard and a front-proxy with an admin Kubeconfig for each way in: what a
/// user writes, plus the test's etcd and loopback addresses (a pod would use the Services).
fn installation(ns: &str, etcd: &str, ports: &Ports) -> String {
    let Ports { root, shard, proxy } = ports;
    format!(
        "apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {{name: selfsigned}}
spec: {{selfSigned: {{}}}}
---
apiVersion: operator.kcp.io/v1alpha1
kind: RootShard
metadata: {{name: root, namespace: {ns}}}
spec:
  image: {{tag: {KCP_TAG}}}
  external: {{hostname: localhost, port: {proxy}}}
  shardBaseURL: https://127.0.0.1:{root}
  certificates: {{issuerRef: {{group: cert-manager.io, kind: ClusterIssuer, name: selfsigned}}}}
  cache: {{embedded: {{enabled: true}}}}
  etcd: {{endpoints: [\"{etcd}\"], prefix: /root}}
  certificateTemplates: {{server: {{spec: {{dnsNames: [localhost], ipAddresses: [127.0.0.1]}}}}}}
---
apiVersion: operator.kcp.io/v1alpha1
kind: Shard
metadata: {{name: alpha, namespace: {ns}}}
spec:
  rootShard: {{ref: {{name: root}}}}
  image: {{tag: {KCP_TAG}}}
  shardBaseURL: https://127.0.0.1:{shard}
  etcd: {{endpoints: [\"{etcd}\"], prefix: /alpha}}
  certificateTemplates: {{server: {{spec: {{dnsNames: [localhost], ipAddresses: [127.0.0.1]}}}}}}
---
apiVersion: operator.kcp.io/v1alpha1
kind: FrontProxy
metadata: {{name: edge, namespace: {ns}}}
spec:
  rootShard: {{ref: {{name: root}}}}
  image: {{tag: {KCP_TAG}}}
  external: {{hostname: localhost, port: {proxy}}}
---
apiVersion: operator.kcp.io/v1alpha1
kind: Kubeconfig
metadata: {{name: root-admin, namespace: {ns}}}
spec:
  target: {{rootShardRef: {{name: root}}}}
  username: kcp-admin
  groups: [\"system:kcp:admin\"]
  validity: 8766h
  secretRef: {{name: root-admin-kubeconfig}}
---
apiVersion: operator.kcp.io/v1alpha1
kind: Kubeconfig
metadata: {{name: admin, namespace: {ns}}}
spec:
  target: {{frontProxyRef: {{name: edge}}}}
  username: kcp-admin
  groups: [\"system:kcp:admin\"]
  validity: 8766h
  secretRef: {{name: admin-kubeconfig}}
"
    )
}

/// Reconciles, lets the built-in PKI sign every Certificate and marks Deployments available,
/// until the Secrets `secrets` and the Deployments `deployments` exist; returns those.
async fn converge_builtin(
    client: &dyn ObjectClient,
    kcp: &Kcp,
    secrets: &[&str],
    deployments: &[&str],
) -> Vec<Deployment> {
    for _ in 0..30 {
        reconcile_all(client, NS, kcp).await;
        for cert in all::<Certificate>(client, NS).await {
            reconcile_certificate(client, &BuiltinPki::default(), &cert)
                .await
                .unwrap();
        }
        run_deployments(client, NS).await;
        let mut found = Vec::new();
        for name in deployments {
            if let Some(d) = client
                .get_typed::<Deployment>(Some(NS), name)
                .await
                .unwrap()
            {
                found.push(d);
            }
        }
        let mut secrets_found = 0;
        for name in secrets {
            let secret: Option<Secret> = client.get_typed(Some(NS), name).await.unwrap();
            secrets_found += usize::from(secret.is_some());
        }
        if found.len() == deployments.len() && secrets_found == secrets.len() {
            return found;
        }
    }
    panic!("the Deployments {deployments:?} and Secrets {secrets:?} were not all rendered");
}

/// The files a container sees: every mounted Secret and ConfigMap key under its mount path.
async fn mounted_files(
    client: &dyn ObjectClient,
    pod: &PodSpec,
    container: &Container,
) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    for mount in container.volume_mounts.iter().flatten() {
        let volume = pod
            .volumes
            .iter()
            .flatten()
            .find(|v| v.name == mount.name)
            .unwrap_or_else(|| panic!("volume {} is mounted but not declared", mount.name));
        let data: BTreeMap<String, Vec<u8>> = if let Some(s) = &volume.secret {
            let name = s.secret_name.clone().unwrap();
            let secret: Secret = client
                .get_typed(Some(NS), &name)
                .await
                .unwrap()
                .unwrap_or_else(|| panic!("mounted Secret {name} exists"));
            secret
                .data
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k, v.0))
                .collect()
        } else if let Some(c) = &volume.config_map {
            let cm: ConfigMap = client
                .get_typed(Some(NS), &c.name)
                .await
                .unwrap()
                .unwrap_or_else(|| panic!("mounted ConfigMap {} exists", c.name));
            cm.data
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k, v.into_bytes()))
                .collect()
        } else {
            panic!("volume {} is neither a Secret nor a ConfigMap", volume.name)
        };
        for (key, value) in data {
            files.insert(format!("{}/{key}", mount.mount_path), value);
        }
    }
    files
}

/// `text` with every container mount path moved under `root`, in one pass (a mount path that
/// is a prefix of another, `/etc/x/kubeconfig` and `/etc/x/kubeconfig-client-cert`, is matched
/// longest first and never moved twice).
fn relocated(text: &str, mounts: &[String], root: &Path) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        let next = mounts
            .iter()
            .filter_map(|m| {
                rest.find(m.as_str())
                    .map(|at| (at, std::cmp::Reverse(m.len()), m))
            })
            .min();
        let Some((at, _, mount)) = next else {
            out.push_str(rest);
            break;
        };
        out.push_str(&rest[..at]);
        out.push_str(&format!("{}{mount}", root.display()));
        rest = &rest[at + mount.len()..];
    }
    out
}

/// Starts the container's command as the real binary `binary`, its files under
/// `root/<deployment>`.
async fn start_container(
    client: &dyn ObjectClient,
    deployment: &Deployment,
    binary: &Path,
    root: &Path,
    added: &[String],
) -> PeerProcess {
    let pod = deployment.spec.clone().unwrap().template.spec.unwrap();
    let container = pod.containers[0].clone();
    // Each pod has its own filesystem: kcp reloads its serving certificate when the file changes.
    let name = deployment.metadata.name.clone().unwrap_or_default();
    let root = &root.join(&name);
    let mut mounts: Vec<String> = container
        .volume_mounts
        .iter()
        .flatten()
        .map(|m| m.mount_path.clone())
        .collect();
    mounts.sort_by_key(|m| std::cmp::Reverse(m.len()));
    for (path, content) in mounted_files(client, &pod, &container).await {
        let target = PathBuf::from(format!("{}{path}", root.display()));
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        let content = match String::from_utf8(content) {
            Ok(text) => relocated(&text, &mounts, root).into_bytes(),
            Err(binary) => binary.into_bytes(),
        };
        std::fs::write(&target, content).unwrap();
    }
    let command = container.command.clone().unwrap_or_default();
    let mut args: Vec<String> = command.iter().skip(1).cloned().collect();
    args.extend(container.args.clone().unwrap_or_default());
    let mut args: Vec<String> = args.iter().map(|a| relocated(a, &mounts, root)).collect();
    args.extend(added.iter().cloned());
    let env: Vec<(String, String)> = container
        .env
        .iter()
        .flatten()
        .filter_map(|e| e.value.clone().map(|v| (e.name.clone(), v)))
        .collect();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let log = root.join(format!("{name}.log"));
    PeerProcess::spawn(&name, binary, &args, &env, &log).unwrap()
}

/// A client from context `context` of the kubeconfig in Secret `name` (key `kubeconfig`), as a
/// user would use it.
async fn kubeconfig_client(client: &dyn ObjectClient, name: &str, context: &str) -> kube::Client {
    kube::Client::try_from(kubeconfig_config(client, name, context).await).unwrap()
}

async fn kubeconfig_config(client: &dyn ObjectClient, name: &str, context: &str) -> kube::Config {
    let secret: Secret = client.get_typed(Some(NS), name).await.unwrap().unwrap();
    let text = String::from_utf8(secret.data.unwrap()["kubeconfig"].0.clone()).unwrap();
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&text).unwrap();
    let options = kube::config::KubeConfigOptions {
        context: Some(context.to_owned()),
        ..Default::default()
    };
    kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .unwrap()
}

/// GETs `path` until it answers (five minutes at most: a first kcp start is slow).
async fn wait_answering(kcp: &mut PeerProcess, client: &kube::Client, path: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let request = http::Request::get(path).body(Vec::new()).unwrap();
        match client.request_text(request).await {
            Ok(body) => return body,
            Err(e) if Instant::now() > deadline => panic!("{path} never answered: {e}"),
            Err(_) => {}
        }
        if let Err(e) = kcp.check_alive() {
            panic!("kcp exited: {e}");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Builds a peer binary of the test bed off the async runtime.
async fn peer(name: &'static str) -> PathBuf {
    tokio::task::spawn_blocking(move || kcp_testbed::go_build::build(name))
        .await
        .unwrap()
        .unwrap()
        .binary
}

fn free_port() -> u16 {
    kcp_testbed::ports::free_port("kcp").unwrap()
}

#[tokio::test]
async fn a_root_shard_a_shard_and_a_front_proxy_boot_from_their_rendered_deployments() {
    let dir = kcp_testbed::real::credentials()
        .unwrap()
        .dir
        .join(format!("boot-{:08x}", fastrand::u32(..)));
    std::fs::create_dir_all(&dir).unwrap();
    let etcd_dir = dir.clone();
    let etcd = tokio::task::spawn_blocking(move || kcp_testbed::Etcd::start(&etcd_dir))
        .await
        .unwrap()
        .unwrap();
    let (kcp_binary, proxy_binary) = (peer("kcp").await, peer("kcp-front-proxy").await);
    let ports = Ports {
        root: free_port(),
        shard: free_port(),
        proxy: free_port(),
    };
    let (_sim, client) = setup_with(Config::default(), false).await;
    let objects = kcp_core::parse_manifests("boot.yaml", &installation(NS, &etcd.url, &ports));
    apply_objects(&client, objects.unwrap()).await;
    let kcp_of_installation = Kcp::start().await;
    let rendered = converge_builtin(
        &client,
        &kcp_of_installation,
        &["root-admin-kubeconfig", "admin-kubeconfig"],
        &["root-kcp", "alpha-shard-kcp", "edge-front-proxy"],
    )
    .await;
    let listen = |port: u16, data: Option<&str>| {
        let mut added = vec![
            "--bind-address=127.0.0.1".to_owned(),
            format!("--secure-port={port}"),
        ];
        if let Some(data) = data {
            added.push(format!("--root-directory={}", dir.join(data).display()));
        }
        added
    };

    let root_added = listen(ports.root, Some("root"));
    let mut root = start_container(&client, &rendered[0], &kcp_binary, &dir, &root_added).await;
    let root_base = kubeconfig_client(&client, "root-admin-kubeconfig", "base").await;
    assert_eq!(
        wait_answering(&mut root, &root_base, "/readyz")
            .await
            .trim(),
        "ok"
    );

    let shard_added = listen(ports.shard, Some("alpha"));
    let mut shard = start_container(&client, &rendered[1], &kcp_binary, &dir, &shard_added).await;
    let mut at_shard = kubeconfig_config(&client, "root-admin-kubeconfig", "base").await;
    at_shard.cluster_url = format!("https://127.0.0.1:{}", ports.shard)
        .parse()
        .unwrap();
    let at_shard = kube::Client::try_from(at_shard).unwrap();
    assert_eq!(
        wait_answering(&mut shard, &at_shard, "/readyz")
            .await
            .trim(),
        "ok"
    );
    let registered = wait_answering(
        &mut root,
        &root_base,
        "/clusters/root/apis/core.kcp.io/v1alpha1/shards/alpha",
    )
    .await;
    assert!(registered.contains("\"kind\":\"Shard\""), "{registered}");
    // The external port differs from 6443 (clients come through the front-proxy), so the shard's
    // `--external-hostname` carries it, and kcp advertises it.
    let external = format!("localhost:{}", ports.proxy);
    let shard_args = rendered[1]
        .spec
        .clone()
        .unwrap()
        .template
        .spec
        .unwrap()
        .containers[0]
        .args
        .clone()
        .unwrap();
    assert!(shard_args.contains(&format!("--external-hostname={external}")));
    let masters = as_shard_client(&client, &dir, ports.shard).await;
    assert_eq!(advertised(&masters).await, external);

    let mut proxy = start_container(
        &client,
        &rendered[2],
        &proxy_binary,
        &dir,
        &listen(ports.proxy, None),
    )
    .await;
    let through_proxy = kubeconfig_client(&client, "admin-kubeconfig", "default").await;
    let workspaces = wait_answering(
        &mut proxy,
        &through_proxy,
        "/apis/tenancy.kcp.io/v1alpha1/workspaces",
    )
    .await;
    assert!(
        workspaces.contains("\"kind\":\"WorkspaceList\""),
        "{workspaces}"
    );
    // Upstream renders the host alone; kcp then completes it with its own secure port, which no
    // client outside the pod can use.
    shard.stop(Duration::from_secs(10));
    let mut upstream_form = shard_added.clone();
    upstream_form.push("--external-hostname=localhost".to_owned());
    let mut shard = start_container(&client, &rendered[1], &kcp_binary, &dir, &upstream_form).await;
    wait_answering(&mut shard, &at_shard, "/readyz").await;
    assert_eq!(
        advertised(&masters).await,
        format!("localhost:{}", ports.shard)
    );
    for process in [&mut proxy, &mut shard, &mut root] {
        process.stop(Duration::from_secs(10));
    }
    drop(etcd);
}

/// A client of the shard `alpha` on `port` with the shard's own client certificate (Secret
/// `alpha-client`, group `system:masters`), trusting the root shard's server CA.
async fn as_shard_client(client: &dyn ObjectClient, dir: &Path, port: u16) -> kube::Client {
    let secret: Secret = client
        .get_typed(Some(NS), "alpha-client")
        .await
        .unwrap()
        .unwrap();
    let data = secret.data.unwrap();
    let (cert, key) = (dir.join("alpha-client.crt"), dir.join("alpha-client.key"));
    std::fs::write(&cert, &data["tls.crt"].0).unwrap();
    std::fs::write(&key, &data["tls.key"].0).unwrap();
    let mut config = kubeconfig_config(client, "root-admin-kubeconfig", "base").await;
    config.cluster_url = format!("https://127.0.0.1:{port}").parse().unwrap();
    config.auth_info = kube::config::AuthInfo {
        client_certificate: Some(cert.display().to_string()),
        client_key: Some(key.display().to_string()),
        ..Default::default()
    };
    kube::Client::try_from(config).unwrap()
}

/// The address a server advertises to clients (`/api`'s `serverAddressByClientCIDRs`).
async fn advertised(client: &kube::Client) -> String {
    let request = http::Request::get("/api").body(Vec::new()).unwrap();
    let body = client.request_text(request).await.unwrap();
    let api: serde_json::Value = serde_json::from_str(&body).unwrap();
    api["serverAddressByClientCIDRs"][0]["serverAddress"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}
