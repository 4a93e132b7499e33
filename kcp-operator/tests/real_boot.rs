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

/// What a test adds to the RootShard's own spec: its etcd and address.
fn installation(ns: &str, etcd: &str, port: u16) -> String {
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
  external: {{hostname: localhost, port: {port}}}
  shardBaseURL: https://127.0.0.1:{port}
  certificates: {{issuerRef: {{group: cert-manager.io, kind: ClusterIssuer, name: selfsigned}}}}
  cache: {{embedded: {{enabled: true}}}}
  etcd: {{endpoints: [\"{etcd}\"]}}
  certificateTemplates: {{server: {{spec: {{dnsNames: [localhost], ipAddresses: [127.0.0.1]}}}}}}
---
apiVersion: operator.kcp.io/v1alpha1
kind: Kubeconfig
metadata: {{name: admin, namespace: {ns}}}
spec:
  target: {{rootShardRef: {{name: root}}}}
  username: kcp-admin
  groups: [\"system:kcp:admin\"]
  validity: 8766h
  secretRef: {{name: admin-kubeconfig}}
"
    )
}

/// Reconciles, lets the built-in PKI sign every Certificate and marks Deployments available,
/// until the admin kubeconfig Secret and the root shard's Deployment exist.
async fn converge_builtin(client: &dyn ObjectClient, kcp: &Kcp) -> Deployment {
    for _ in 0..20 {
        reconcile_all(client, NS, kcp).await;
        for cert in all::<Certificate>(client, NS).await {
            reconcile_certificate(client, &BuiltinPki::default(), &cert)
                .await
                .unwrap();
        }
        run_deployments(client, NS).await;
        let secret: Option<Secret> = client
            .get_typed(Some(NS), "admin-kubeconfig")
            .await
            .unwrap();
        let deployment: Option<Deployment> = client.get_typed(Some(NS), "root-kcp").await.unwrap();
        if let (Some(_), Some(deployment)) = (secret, deployment) {
            return deployment;
        }
    }
    panic!("the root shard's Deployment and the admin kubeconfig were not rendered");
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

/// `text` with every container mount path moved under `root`.
fn relocated(text: &str, mounts: &[String], root: &Path) -> String {
    let mut out = text.to_owned();
    for mount in mounts {
        out = out.replace(mount.as_str(), &format!("{}{mount}", root.display()));
    }
    out
}

/// Starts the container's command as the real binary `binary`, its files under `root`.
async fn start_container(
    client: &dyn ObjectClient,
    deployment: &Deployment,
    binary: &Path,
    root: &Path,
    added: &[String],
) -> PeerProcess {
    let pod = deployment.spec.clone().unwrap().template.spec.unwrap();
    let container = pod.containers[0].clone();
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
    PeerProcess::spawn(&container.name, binary, &args, &env, &root.join("kcp.log")).unwrap()
}

/// A client from context `context` of the kubeconfig in Secret `name` (key `kubeconfig`), as a
/// user would use it.
async fn kubeconfig_client(client: &dyn ObjectClient, name: &str, context: &str) -> kube::Client {
    let secret: Secret = client.get_typed(Some(NS), name).await.unwrap().unwrap();
    let text = String::from_utf8(secret.data.unwrap()["kubeconfig"].0.clone()).unwrap();
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&text).unwrap();
    let options = kube::config::KubeConfigOptions {
        context: Some(context.to_owned()),
        ..Default::default()
    };
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
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

#[tokio::test]
async fn a_root_shard_boots_from_its_rendered_deployment() {
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
    let binary = tokio::task::spawn_blocking(|| kcp_testbed::go_build::build("kcp"))
        .await
        .unwrap()
        .unwrap()
        .binary;
    let port = kcp_testbed::ports::free_port("kcp").unwrap();
    let (_sim, client) = setup_with(Config::default(), false).await;
    let objects = kcp_core::parse_manifests("boot.yaml", &installation(NS, &etcd.url, port));
    apply_objects(&client, objects.unwrap()).await;
    let kcp_of_installation = Kcp::start().await;
    let deployment = converge_builtin(&client, &kcp_of_installation).await;
    let added = [
        "--bind-address=127.0.0.1".to_owned(),
        format!("--secure-port={port}"),
        format!("--root-directory={}", dir.join("kcp").display()),
    ];
    let mut kcp = start_container(&client, &deployment, &binary, &dir, &added).await;
    let base = kubeconfig_client(&client, "admin-kubeconfig", "base").await;
    let ready = wait_answering(&mut kcp, &base, "/readyz").await;
    assert_eq!(ready.trim(), "ok");
    let root = kubeconfig_client(&client, "admin-kubeconfig", "default").await;
    let workspaces =
        wait_answering(&mut kcp, &root, "/apis/tenancy.kcp.io/v1alpha1/workspaces").await;
    assert!(
        workspaces.contains("\"kind\":\"WorkspaceList\""),
        "{workspaces}"
    );
    kcp.stop(Duration::from_secs(10));
    drop(etcd);
}
