//! kubectl's generator commands (`kubectl create namespace|configmap|secret|...`), which
//! kubectl 1.30+ sends as protobuf, against kcp-sim: each creates its object and the stored
//! JSON holds what kubectl put in it. Also `kubectl get -w` printing a Table per event.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use base64::Engine;
use kcp_sim::{Config, Server};
use serde_json::{Value, json};
use support::Kubectl;

async fn sim() -> Server {
    Server::start(Config::default()).await.unwrap()
}

fn decoded(v: &Value) -> String {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(v.as_str().unwrap())
        .unwrap();
    String::from_utf8(bytes).unwrap()
}

/// A self-signed P-256 certificate and its key (test fixture, valid until 2126).
const TLS_CERT: &str = "-----BEGIN CERTIFICATE-----
MIIBhDCCASugAwIBAgIUeUemUMpzixihUofIk5ZjuLhXX1owCgYIKoZIzj0EAwIw
FzEVMBMGA1UEAwwMa2NwLXNpbS10ZXN0MCAXDTI2MTEyMzIwNTI1N1oYDzIxMjYx
MDMwMjA1MjU3WjAXMRUwEwYDVQQDDAxrY3Atc2ltLXRlc3QwWTATBgcqhkjOPQIB
BggqhkjOPQMBBwNCAAQz6+vMuS+EM6brLfllMg8JxqhoJC0B2EONSB6gsIXbjiov
TNe+E1KPmh4kbP8XWhvrnONGeV/+db57u6MgJKyco1MwUTAdBgNVHQ4EFgQU4For
YN8pI+G5s5f+/8fnTccUlTQwHwYDVR0jBBgwFoAU4ForYN8pI+G5s5f+/8fnTccU
lTQwDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNHADBEAiAi7tqp/yBYCnn0
MxrQEhI5zFzi+gWNL93BWAcIJGO6DgIgWV0dTHoofpZDtROjn6x0k96ISKJKOwGY
dHQDrimJif8=
-----END CERTIFICATE-----
";

const TLS_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgw0BoQOPXK71OQIDA
lwoRL24VQ0bxcfjpuVHsRj2DYz6hRANCAAQz6+vMuS+EM6brLfllMg8JxqhoJC0B
2EONSB6gsIXbjiovTNe+E1KPmh4kbP8XWhvrnONGeV/+db57u6MgJKyc
-----END PRIVATE KEY-----
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_create_namespace() {
    let sim = sim().await;
    let k = Kubectl::new(&sim);
    let out = k.run(&["create", "namespace", "demo"]).await;
    assert!(out.contains("namespace/demo created"), "{out}");
    let ns = k.json(&["get", "namespace", "demo"]).await;
    assert_eq!(ns["metadata"]["name"], "demo");
    assert!(ns["metadata"]["uid"].is_string());
    assert_eq!(ns["status"]["phase"], "Active");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_create_namespace_in_a_kcp_workspace() {
    let sim = Server::start(Config::kcp()).await.unwrap();
    let k = Kubectl::new(&sim);
    k.run(&["create", "namespace", "demo"]).await;
    let ns = k.json(&["get", "namespace", "demo"]).await;
    assert_eq!(ns["metadata"]["annotations"]["kcp.io/cluster"], "root");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_create_configmap_from_literals() {
    let sim = sim().await;
    let k = Kubectl::new(&sim);
    k.run(&[
        "create",
        "configmap",
        "settings",
        "--from-literal=color=blue",
        "--from-literal=size=3",
    ])
    .await;
    let cm = k.json(&["get", "configmap", "settings"]).await;
    assert_eq!(cm["data"], json!({"color": "blue", "size": "3"}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_create_configmap_from_files_keeps_text_and_binary() {
    let sim = sim().await;
    let k = Kubectl::new(&sim);
    let text = k.file("app.properties", b"a=1\nb=2\n");
    let binary = k.file("logo.bin", &[0xff, 0x00, 0xfe, 0x01]);
    k.run(&[
        "create",
        "configmap",
        "files",
        &format!("--from-file={text}"),
        &format!("--from-file=logo={binary}"),
    ])
    .await;
    let cm = k.json(&["get", "configmap", "files"]).await;
    assert_eq!(cm["data"], json!({"app.properties": "a=1\nb=2\n"}));
    assert_eq!(cm["binaryData"], json!({"logo": "/wD+AQ=="}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_create_secret_generic() {
    let sim = sim().await;
    let k = Kubectl::new(&sim);
    let file = k.file("token", b"s3cr3t");
    k.run(&[
        "create",
        "secret",
        "generic",
        "creds",
        "--from-literal=user=admin",
        &format!("--from-file={file}"),
    ])
    .await;
    let secret = k.json(&["get", "secret", "creds"]).await;
    assert_eq!(secret["type"], "Opaque");
    assert_eq!(decoded(&secret["data"]["user"]), "admin");
    assert_eq!(decoded(&secret["data"]["token"]), "s3cr3t");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_create_secret_tls() {
    let sim = sim().await;
    let k = Kubectl::new(&sim);
    let cert = k.file("tls.crt", TLS_CERT.as_bytes());
    let key = k.file("tls.key", TLS_KEY.as_bytes());
    k.run(&[
        "create",
        "secret",
        "tls",
        "web-tls",
        &format!("--cert={cert}"),
        &format!("--key={key}"),
    ])
    .await;
    let secret = k.json(&["get", "secret", "web-tls"]).await;
    assert_eq!(secret["type"], "kubernetes.io/tls");
    assert_eq!(decoded(&secret["data"]["tls.crt"]), TLS_CERT);
    assert_eq!(decoded(&secret["data"]["tls.key"]), TLS_KEY);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_create_secret_docker_registry() {
    let sim = sim().await;
    let k = Kubectl::new(&sim);
    k.run(&[
        "create",
        "secret",
        "docker-registry",
        "pull",
        "--docker-server=registry.example.io",
        "--docker-username=robot",
        "--docker-password=pw",
        "--docker-email=robot@example.io",
    ])
    .await;
    let secret = k.json(&["get", "secret", "pull"]).await;
    assert_eq!(secret["type"], "kubernetes.io/dockerconfigjson");
    let config: Value =
        serde_json::from_str(&decoded(&secret["data"][".dockerconfigjson"])).unwrap();
    let auth = &config["auths"]["registry.example.io"];
    assert_eq!(auth["username"], "robot");
    assert_eq!(auth["password"], "pw");
    assert_eq!(auth["email"], "robot@example.io");
    assert_eq!(decoded(&auth["auth"]), "robot:pw");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_create_serviceaccount() {
    let sim = sim().await;
    let k = Kubectl::new(&sim);
    let out = k.run(&["create", "serviceaccount", "builder"]).await;
    assert!(out.contains("serviceaccount/builder created"), "{out}");
    let sa = k.json(&["get", "serviceaccount", "builder"]).await;
    assert_eq!(sa["metadata"]["namespace"], "default");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_create_role() {
    let sim = sim().await;
    let k = Kubectl::new(&sim);
    k.run(&[
        "create",
        "role",
        "reader",
        "--verb=get,list,watch",
        "--resource=configmaps,deployments.apps",
        "--resource-name=settings",
    ])
    .await;
    let role = k.json(&["get", "role", "reader"]).await;
    assert_eq!(
        role["rules"],
        json!([
            {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["settings"],
             "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": ["settings"],
             "verbs": ["get", "list", "watch"]},
        ])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_create_clusterrole() {
    let sim = sim().await;
    let k = Kubectl::new(&sim);
    k.run(&[
        "create",
        "clusterrole",
        "ns-reader",
        "--verb=get,list",
        "--resource=namespaces",
    ])
    .await;
    k.run(&[
        "create",
        "clusterrole",
        "health",
        "--verb=get",
        "--non-resource-url=/healthz",
    ])
    .await;
    let role = k.json(&["get", "clusterrole", "ns-reader"]).await;
    assert_eq!(
        role["rules"],
        json!([{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list"]}])
    );
    let health = k.json(&["get", "clusterrole", "health"]).await;
    assert_eq!(
        health["rules"],
        json!([{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_create_rolebinding() {
    let sim = sim().await;
    let k = Kubectl::new(&sim);
    k.run(&[
        "create",
        "rolebinding",
        "readers",
        "--role=reader",
        "--user=alice",
        "--group=team",
        "--serviceaccount=default:builder",
    ])
    .await;
    let binding = k.json(&["get", "rolebinding", "readers"]).await;
    assert_eq!(
        binding["roleRef"],
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"})
    );
    assert_eq!(
        binding["subjects"],
        json!([
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"},
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "team"},
            {"kind": "ServiceAccount", "name": "builder", "namespace": "default"},
        ])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_create_clusterrolebinding() {
    let sim = sim().await;
    let k = Kubectl::new(&sim);
    k.run(&[
        "create",
        "clusterrolebinding",
        "admins",
        "--clusterrole=cluster-admin",
        "--user=bob",
    ])
    .await;
    let binding = k.json(&["get", "clusterrolebinding", "admins"]).await;
    assert_eq!(binding["roleRef"]["kind"], "ClusterRole");
    assert_eq!(binding["roleRef"]["name"], "cluster-admin");
    assert_eq!(
        binding["subjects"],
        json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"}])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_create_deployment() {
    let sim = sim().await;
    let k = Kubectl::new(&sim);
    k.run(&[
        "create",
        "deployment",
        "web",
        "--image=nginx:1.27",
        "--replicas=3",
        "--port=8080",
    ])
    .await;
    let deploy = k.json(&["get", "deployment", "web"]).await;
    assert_eq!(deploy["spec"]["replicas"], 3);
    assert_eq!(
        deploy["spec"]["selector"]["matchLabels"],
        json!({"app": "web"})
    );
    let pod = &deploy["spec"]["template"];
    assert_eq!(pod["metadata"]["labels"], json!({"app": "web"}));
    // Defaulted as kube-apiserver defaults a Deployment's pod template.
    assert_eq!(
        pod["spec"]["containers"],
        json!([{"name": "nginx", "image": "nginx:1.27",
            "ports": [{"containerPort": 8080, "protocol": "TCP"}], "resources": {},
            "imagePullPolicy": "IfNotPresent", "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File"}])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_create_deployment_with_zero_replicas_keeps_the_zero() {
    let sim = sim().await;
    let k = Kubectl::new(&sim);
    k.run(&[
        "create",
        "deployment",
        "idle",
        "--image=busybox",
        "--replicas=0",
    ])
    .await;
    let deploy = k.json(&["get", "deployment", "idle"]).await;
    assert_eq!(deploy["spec"]["replicas"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_create_service_clusterip() {
    let sim = sim().await;
    let k = Kubectl::new(&sim);
    k.run(&[
        "create",
        "service",
        "clusterip",
        "web",
        "--tcp=80:8080",
        "--tcp=443:https",
    ])
    .await;
    let svc = k.json(&["get", "service", "web"]).await;
    assert_eq!(svc["spec"]["type"], "ClusterIP");
    assert_eq!(svc["spec"]["selector"], json!({"app": "web"}));
    assert_eq!(
        svc["spec"]["ports"],
        json!([
            {"name": "80-8080", "port": 80, "protocol": "TCP", "targetPort": 8080},
            {"name": "443-https", "port": 443, "protocol": "TCP", "targetPort": "https"},
        ])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_get_watch_prints_a_table_row_per_event_under_one_header() {
    let sim = sim().await;
    let k = Kubectl::new(&sim);
    k.run(&["create", "configmap", "first", "--from-literal=a=1"])
        .await;
    let mut watch = k.spawn(&["get", "configmaps", "--watch"]);
    let mut lines = support::Lines::follow(&mut watch);
    let header = lines.until(|l| l.starts_with("NAME")).await;
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        ["NAME", "DATA", "AGE"]
    );
    lines.until(|l| l.starts_with("first ")).await;
    k.run(&[
        "create",
        "configmap",
        "second",
        "--from-literal=a=1",
        "--from-literal=b=2",
    ])
    .await;
    let row = lines.until(|l| l.starts_with("second ")).await;
    assert_eq!(row.split_whitespace().nth(1), Some("2"), "{row}");
    k.run(&["label", "configmap", "first", "touched=yes"]).await;
    lines.until(|l| l.starts_with("first ")).await;
    watch.kill().unwrap();
    let headers = lines
        .seen()
        .iter()
        .filter(|l| l.starts_with("NAME"))
        .count();
    assert_eq!(headers, 1, "{:?}", lines.seen());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_create_with_server_dry_run_answers_and_stores_nothing() {
    let sim = sim().await;
    let k = Kubectl::new(&sim);
    let shown = k
        .json(&[
            "create",
            "configmap",
            "draft",
            "--from-literal=a=1",
            "--dry-run=server",
        ])
        .await;
    assert_eq!(shown["data"], json!({"a": "1"}));
    assert!(shown["metadata"]["uid"].is_string());
    let listed = k.json(&["get", "configmaps"]).await;
    assert_eq!(listed["items"], json!([]));
}
