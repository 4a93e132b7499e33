//! The test bed against the real peers it builds: these tests always use the real servers
//! (they are what the bed is for), whatever `KCP_RS_BACKEND` says.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use kcp_core::kube::api::GroupVersionKind;
use kcp_core::{ObjectClient, ObjectRef};
use kcp_testbed::process::PeerProcess;
use kcp_testbed::{Error, KcpBed, go_build, shared_kcp, shared_kube};

fn namespace_ref(name: &str) -> ObjectRef {
    ObjectRef::cluster_scoped(GroupVersionKind::gvk("", "v1", "Namespace"), name)
}

#[tokio::test]
async fn the_shared_kcp_serves_a_fresh_workspace_per_bed() {
    let first = KcpBed::start_real().await.unwrap();
    let second = KcpBed::start_real().await.unwrap();
    assert_ne!(first.root(), second.root());
    let cluster = first.logical_cluster(first.root()).await.unwrap();
    assert!(cluster.is_some_and(|c| !c.is_empty()));
    let client = first.object_client(first.root()).await.unwrap();
    assert!(
        client
            .get(&namespace_ref("default"))
            .await
            .unwrap()
            .is_some()
    );
}

#[tokio::test]
async fn the_real_kcp_and_kube_apiserver_listen_on_loopback_only() {
    let kcp = tokio::task::spawn_blocking(shared_kcp)
        .await
        .unwrap()
        .unwrap();
    let kube = tokio::task::spawn_blocking(shared_kube)
        .await
        .unwrap()
        .unwrap();
    println!(
        "start to ready: kcp {:.1} s, kube-apiserver {:.1} s",
        kcp.ready_after.as_secs_f64(),
        kube.ready_after.as_secs_f64()
    );
    assert!(
        kcp.base_url.starts_with("https://127.0.0.1:"),
        "{}",
        kcp.base_url
    );
    assert!(
        kube.admin.url.starts_with("https://127.0.0.1:"),
        "{}",
        kube.admin.url
    );
}

#[tokio::test]
async fn a_restricted_identity_is_refused_what_no_rule_grants() {
    let kube = tokio::task::spawn_blocking(shared_kube)
        .await
        .unwrap()
        .unwrap();
    let ids = &kcp_testbed::real::credentials().unwrap().identities;
    let user = ids.user("user-1").unwrap();
    let client =
        kcp_core::KubeObjectClient::new(kube.admin.with_token(&user.token).client().unwrap());
    let err = client.get(&namespace_ref("default")).await.unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("forbidden") || text.contains("Forbidden"),
        "{text}"
    );
    assert!(
        text.contains("user-1"),
        "the refusal names the user: {text}"
    );
}

#[test]
fn a_peer_that_dies_fails_with_the_tail_of_its_log() {
    let dir = std::env::temp_dir().join(format!("kcp-testbed-dies-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut peer = PeerProcess::spawn(
        "short-lived",
        std::path::Path::new("sh"),
        &["-c".into(), "echo last words; exit 3".into()],
        &[],
        &dir.join("peer.log"),
    )
    .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let err = loop {
        match peer.check_alive() {
            Ok(()) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Ok(()) => panic!("the peer never exited"),
            Err(e) => break e,
        }
    };
    let text = err.to_string();
    assert!(
        text.contains("short-lived") && text.contains("last words"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_dropped_peer_process_is_stopped() {
    let dir = std::env::temp_dir().join(format!("kcp-testbed-drop-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pid_file = dir.join("pid");
    let script = format!("echo $$ > {}; exec sleep 600", pid_file.display());
    let peer = PeerProcess::spawn(
        "sleeper",
        std::path::Path::new("sh"),
        &["-c".into(), script],
        &[],
        &dir.join("sleeper.log"),
    )
    .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !pid_file.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .to_string();
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
    drop(peer);
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    while std::path::Path::new(&format!("/proc/{pid}/stat")).exists() {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if stat.contains(") Z ") {
            break; // exited, awaiting its reaper
        }
        assert!(
            std::time::Instant::now() < deadline,
            "process {pid} outlived its handle"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_peer_the_proxy_does_not_serve_fails_naming_peer_version_and_log() {
    // github.com/kcp-dev/init-agent is pinned but not served by the Go module proxy.
    let err = go_build::build("init-agent").unwrap_err();
    match &err {
        Error::Build {
            peer,
            version,
            log,
            tail,
        } => {
            assert_eq!(peer, "init-agent");
            assert_eq!(version, "v0.1.0");
            assert!(log.exists());
            assert!(tail.contains("github.com/kcp-dev/init-agent"), "{tail}");
        }
        other => panic!("expected a build error, got {other}"),
    }
}

#[test]
fn a_peer_needing_a_refused_module_builds_from_its_shim() {
    // api-syncagent needs github.com/kcp-dev/virtual-workspace-framework, which the proxy
    // refuses; its wrapper's SHIMS assembles the one package it uses from kcp's module.
    let built = go_build::build("api-syncagent").unwrap();
    let out = std::process::Command::new(&built.binary)
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stderr);
    assert!(help.contains("--apiexportendpointslice-ref"), "{help}");
    let shim = built
        .binary
        .parent()
        .unwrap()
        .join("module/shim/virtual-workspace-framework/crdpuller/discovery.go");
    assert!(shim.is_file(), "the shim is built outside the checkout");
    assert!(
        !kcp_testbed::pins::peers_dir()
            .join("api-syncagent/shim")
            .exists(),
        "nothing of upstream's source lands in the checkout"
    );
}

fn kubectl() -> String {
    std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".to_string())
}

#[tokio::test]
async fn kubectl_works_with_the_written_kubeconfig_on_both_contexts() {
    // In the run's directory, which the test bed cleans up after the process.
    let path = kcp_testbed::real::credentials()
        .unwrap()
        .dir
        .join("written.kubeconfig");
    let written = path.clone();
    tokio::task::spawn_blocking(move || kcp_testbed::write_kubeconfig(&written))
        .await
        .unwrap()
        .unwrap();
    let run = |args: &[&str]| {
        let out = std::process::Command::new(kubectl())
            .arg("--kubeconfig")
            .arg(&path)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(run(&["api-resources"]).contains("workspaces"));
    assert!(run(&["--context", "kube", "get", "namespaces"]).contains("kube-system"));
    let refused = std::process::Command::new(kubectl())
        .arg("--kubeconfig")
        .arg(&path)
        .args(["--context", "kube-as-user-1", "get", "secrets", "-A"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("user-1"));
}

/// kcp names the binding its initializer makes for a type's default export from the new
/// workspace's logical cluster, the export's path and its name; kcp-sim names it the same way.
#[tokio::test]
async fn kcp_sim_names_a_default_binding_as_the_real_kcp_does() {
    let bed = KcpBed::start_real().await.unwrap();
    let root = bed.root().to_string();
    let client = bed.object_client(&root).await.unwrap();
    let setup = format!(
        "apiVersion: apis.kcp.io/v1alpha1
kind: APIResourceSchema
metadata: {{name: v1.widgets.example.com}}
spec:
  group: example.com
  names: {{plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}}
  scope: Namespaced
  versions: [{{name: v1, served: true, storage: true, schema: {{type: object}}}}]
---
apiVersion: apis.kcp.io/v1alpha2
kind: APIExport
metadata: {{name: widgets}}
spec:
  resources: [{{group: example.com, name: widgets, schema: v1.widgets.example.com, storage: {{crd: {{}}}}}}]
---
apiVersion: tenancy.kcp.io/v1alpha1
kind: WorkspaceType
metadata: {{name: with-widgets}}
spec:
  extend: {{with: [{{name: universal, path: root}}]}}
  defaultAPIBindings: [{{path: \"{root}\", export: widgets}}]
"
    );
    for object in kcp_core::parse_manifests("setup.yaml", &setup).unwrap() {
        client.create(&object).await.unwrap();
    }
    let of_type = kcp_core::kcp::types::WorkspaceTypeReference {
        name: "with-widgets".to_string(),
        path: Some(root.clone()),
    };
    let cluster = kcp_testbed::create_workspace(client.as_ref(), "child", Some(of_type))
        .await
        .unwrap();
    let child = bed.object_client(&format!("{root}:child")).await.unwrap();
    let bindings = child
        .list(
            &GroupVersionKind::gvk("apis.kcp.io", "v1alpha2", "APIBinding"),
            None,
            &kcp_core::ListOptions::default(),
        )
        .await
        .unwrap();
    let names: Vec<String> = bindings
        .items
        .iter()
        .filter_map(|b| b.metadata.name.clone())
        .filter(|name| name.starts_with("widgets-"))
        .collect();
    let expected = kcp_sim::kcp::system_apis::default_binding_name(&cluster, &root, "widgets");
    assert_eq!(names, [expected]);
}
