//! Crash and restart of the real peers, as the fault suites use them: a SIGKILL that gives the
//! server no chance to flush, then a start on the same data and ports. A test binary of its own,
//! because a restart interrupts every other test sharing the servers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use kcp_core::kube::api::GroupVersionKind;
use kcp_core::{KubeObjectClient, ObjectClient, ObjectRef};
use kcp_testbed::process::PeerProcess;
use kcp_testbed::{KcpBed, KubeBed, shared_kcp, shared_kube};

fn config_map(namespace: &str, name: &str) -> ObjectRef {
    ObjectRef::namespaced(
        GroupVersionKind::gvk("", "v1", "ConfigMap"),
        namespace,
        name,
    )
}

async fn create_config_map(client: &dyn ObjectClient, namespace: &str, name: &str) {
    let object = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": {"kept": "yes"}
    }))
    .unwrap();
    client.create(&object).await.unwrap();
}

fn pid_of(log: &Path) -> String {
    std::fs::read_to_string(log.with_extension("pid")).unwrap()
}

#[test]
fn a_hard_killed_peer_runs_again_with_its_command_line_and_one_log() {
    let dir = std::env::temp_dir().join(format!("kcp-testbed-sleeper-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("sleeper.log");
    let mut peer = PeerProcess::spawn(
        "sleeper",
        Path::new("/bin/sh"),
        &["-c".into(), "echo up; exec sleep 600".into()],
        &[],
        &log,
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let first = pid_of(&log);
    peer.kill_hard().unwrap();
    assert!(peer.check_alive().is_err(), "the killed peer still runs");
    peer.respawn().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    peer.check_alive().unwrap();
    assert_ne!(pid_of(&log), first);
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text.matches("up").count(), 2, "{text}");
    assert!(text.contains("# started again"), "{text}");
    drop(peer);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_kcp_serves_its_workspaces_and_objects_again_on_the_same_url() {
    let bed = KcpBed::start_real().await.unwrap();
    let kcp = tokio::task::spawn_blocking(shared_kcp)
        .await
        .unwrap()
        .unwrap();
    let client = KubeObjectClient::new(kcp.durable_admin_at(bed.root()).client().unwrap());
    create_config_map(&client, "default", "before-the-crash").await;
    let started = std::time::Instant::now();
    let took = tokio::task::spawn_blocking(|| shared_kcp().unwrap().restart_hard())
        .await
        .unwrap()
        .unwrap();
    eprintln!("kcp served again {took:?} after SIGKILL");
    // The same client (same URL, same credentials) reads what was written before the kill,
    // once kcp has indexed the workspace paths again.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let answer = client.get(&config_map("default", "before-the-crash")).await;
        match answer {
            Ok(Some(_)) => break,
            other => assert!(
                std::time::Instant::now() < deadline,
                "the ConfigMap written before the crash is not served: {other:?}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    eprintln!(
        "the workspace served its ConfigMap {:?} after SIGKILL",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_kube_apiserver_and_etcd_serve_their_objects_again_on_the_same_url() {
    let kube = tokio::task::spawn_blocking(shared_kube)
        .await
        .unwrap()
        .unwrap();
    let bed = KubeBed::Real {
        kube,
        prefix: format!("restart-{:08x}", std::process::id()),
    };
    let client = bed.object_client().await.unwrap();
    let namespace = bed.namespace("crash");
    let ns = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}
    }))
    .unwrap();
    client.create(&ns).await.unwrap();
    create_config_map(client.as_ref(), &namespace, "before-the-crash").await;
    let took = tokio::task::spawn_blocking(|| shared_kube().unwrap().restart_hard())
        .await
        .unwrap()
        .unwrap();
    eprintln!("kube-apiserver ready again {took:?} after SIGKILL");
    let kept = client
        .get(&config_map(&namespace, "before-the-crash"))
        .await
        .unwrap();
    assert!(
        kept.is_some(),
        "the ConfigMap written before the crash is gone"
    );
}
