//! The `kind` CLI provisioner against a stand-in `kind` executable (no container engine exists
//! here). The stand-in is a shell script written by each test into its own directory: it
//! records its arguments, keeps a list of "clusters", writes and prints a kubeconfig pointing at
//! a kcp-sim server (the "workload cluster"), and registers the control-plane Node with the
//! labels of the kind config it was given, as kind does.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use capi_kind::api::{KINDCluster, Phase};
use capi_kind::kind_config::OWNER_LABEL;
use capi_kind::provisioner::{CreateRequest, KindCli, Provisioner};
use capi_kind::reconcile::Settings;
use capi_kind::{ControllerConfig, run};
use k8s_openapi::api::core::v1::Node;
use kcp_core::{Backoff, ObjectClient};
use kcp_sim::{Config, Server};
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::wait::await_condition;

const SCRIPT: &str = r#"#!/bin/sh
DIR='@DIR@'
SERVER='@SERVER@'
echo "$*" >> "$DIR/args.log"
verb="$1 $2"
shift 2
name=""; kubeconfig=""
while [ $# -gt 0 ]; do
  case "$1" in
    --name) name="$2"; shift ;;
    --kubeconfig) kubeconfig="$2"; shift ;;
    --image|--config|--wait) shift ;;
    # As the real kind (tests/real_kind_cli.rs runs every command line through it).
    *) echo "ERROR: unknown flag: $1" >&2; exit 2 ;;
  esac
  shift
done
case "$verb" in
"create cluster")
  cat > "$DIR/config-$name.yaml"
  if [ "$name" = "broken" ]; then
    echo "Creating cluster \"broken\" ..." >&2
    echo "ERROR: failed to create cluster: Cannot connect to the Docker daemon" >&2
    exit 1
  fi
  uid=$(sed -n 's/.*owner-uid: *//p' "$DIR/config-$name.yaml" | head -n 1)
  curl -sf -X POST -H 'Content-Type: application/json' "$SERVER/api/v1/nodes" \
    --data "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"$name-control-plane\",\"labels\":{\"@LABEL@\":\"$uid\"}}}" >/dev/null || exit 3
  echo "$name" >> "$DIR/clusters"
  cp "$DIR/kubeconfig" "$kubeconfig"
  ;;
"get clusters")
  if [ -s "$DIR/clusters" ]; then cat "$DIR/clusters"; else echo "No kind clusters found." >&2; fi
  ;;
"get kubeconfig")
  grep -qx "$name" "$DIR/clusters" 2>/dev/null || { echo "ERROR: could not locate any control plane nodes for cluster named '$name'" >&2; exit 1; }
  cat "$DIR/kubeconfig"
  ;;
"delete cluster")
  grep -vx "$name" "$DIR/clusters" > "$DIR/clusters.new" 2>/dev/null; mv "$DIR/clusters.new" "$DIR/clusters"
  ;;
*)
  echo "unknown command: $verb" >&2; exit 2
  ;;
esac
"#;

/// A stand-in `kind` and its workload cluster.
struct FakeKind {
    dir: PathBuf,
    /// Removes `dir` when the test ends.
    _scratch: tempfile::TempDir,
    binary: PathBuf,
    workload: Server,
}

impl FakeKind {
    async fn new(test: &str) -> FakeKind {
        let curl = std::process::Command::new("curl").arg("--version").output();
        assert!(
            curl.is_ok_and(|o| o.status.success()),
            "the stand-in kind script needs curl on PATH"
        );
        let scratch = tempfile::Builder::new()
            .prefix(&format!("capi-kind-{test}-"))
            .tempdir()
            .unwrap();
        let dir = scratch.path().to_owned();
        let workload = Server::start(Config::default()).await.unwrap();
        std::fs::write(dir.join("kubeconfig"), workload.kubeconfig(&["kind-test"])).unwrap();
        let script = SCRIPT
            .replace("@DIR@", &dir.display().to_string())
            .replace("@SERVER@", workload.url())
            .replace("@LABEL@", OWNER_LABEL);
        let binary = dir.join("kind");
        std::fs::write(&binary, script).unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755)).unwrap();
        FakeKind {
            dir,
            _scratch: scratch,
            binary,
            workload,
        }
    }

    fn cli(&self) -> KindCli {
        KindCli::new(&self.binary).scratch_dir(self.dir.join("scratch"))
    }

    fn args(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.join("args.log"))
            .unwrap_or_default()
            .lines()
            .map(String::from)
            .collect()
    }

    /// A cluster someone created by hand: listed, with an unlabelled Node.
    async fn add_unmarked_cluster(&self, name: &str) {
        let mut clusters = std::fs::read_to_string(self.dir.join("clusters")).unwrap_or_default();
        clusters.push_str(&format!("{name}\n"));
        std::fs::write(self.dir.join("clusters"), clusters).unwrap();
        let node: Node = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": format!("{name}-control-plane")},
        }))
        .unwrap();
        Api::<Node>::all(self.workload.client("").unwrap())
            .create(&PostParams::default(), &node)
            .await
            .unwrap();
    }
}

fn request(name: &str) -> CreateRequest {
    CreateRequest {
        name: name.into(),
        image: Some("kindest/node:v1.21.1".into()),
        config: format!(
            "kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nname: {name}\nnodes:\n- role: control-plane\n  labels:\n    {OWNER_LABEL}: uid-1\n"
        ),
        owner_uid: "uid-1".into(),
        wait: Duration::from_secs(300),
    }
}

fn scratch(kind: &FakeKind, name: &str) -> PathBuf {
    kind.dir.join("scratch").join(format!("{name}.kubeconfig"))
}

#[tokio::test]
async fn create_runs_kind_with_name_image_config_on_stdin_kubeconfig_and_wait() {
    let kind = FakeKind::new("create").await;
    kind.cli().create(&request("dev")).await.unwrap();
    assert_eq!(
        kind.args(),
        [format!(
            "create cluster --name dev --image kindest/node:v1.21.1 --config - --kubeconfig {} --wait 300s",
            scratch(&kind, "dev").display()
        )]
    );
    let config = std::fs::read_to_string(kind.dir.join("config-dev.yaml")).unwrap();
    assert_eq!(config, request("dev").config);
    assert!(
        !Path::new(&scratch(&kind, "dev")).exists(),
        "kind's kubeconfig file is not kept"
    );
}

#[tokio::test]
async fn a_failing_create_reports_kinds_stderr() {
    let kind = FakeKind::new("failing").await;
    let err = kind
        .cli()
        .create(&request("broken"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("kind cluster \"broken\": create failed: "),
        "{err}"
    );
    assert!(err.contains("Cannot connect to the Docker daemon"), "{err}");
}

#[tokio::test]
async fn list_kubeconfig_endpoint_and_delete_use_the_cli() {
    let kind = FakeKind::new("lifecycle").await;
    let cli = kind.cli();
    assert!(cli.list().await.unwrap().is_empty());
    cli.create(&request("dev")).await.unwrap();
    assert_eq!(cli.list().await.unwrap(), ["dev"]);
    let kubeconfig = cli.kubeconfig("dev").await.unwrap();
    assert!(kubeconfig.contains(kind.workload.url()));
    let endpoint = cli.endpoint("dev").await.unwrap();
    assert_eq!(
        format!("http://{}:{}", endpoint.host, endpoint.port),
        kind.workload.url()
    );
    cli.delete("dev").await.unwrap();
    assert!(cli.list().await.unwrap().is_empty());
    let args = kind.args();
    assert!(args.contains(&"get kubeconfig --name dev".to_string()));
    assert!(args.contains(&format!(
        "delete cluster --name dev --kubeconfig {}",
        scratch(&kind, "dev").display()
    )));
}

#[tokio::test]
async fn the_ownership_marker_is_read_from_the_nodes() {
    let kind = FakeKind::new("owner").await;
    kind.cli().create(&request("dev")).await.unwrap();
    assert_eq!(
        kind.cli().owner("dev").await.unwrap().as_deref(),
        Some("uid-1")
    );
}

#[tokio::test]
async fn a_cluster_created_by_hand_has_no_owner() {
    let kind = FakeKind::new("unmarked").await;
    kind.add_unmarked_cluster("mine").await;
    assert_eq!(kind.cli().owner("mine").await.unwrap(), None);
}

#[tokio::test]
async fn adopting_a_cluster_labels_its_nodes_with_the_marker() {
    let kind = FakeKind::new("adopt").await;
    kind.add_unmarked_cluster("theirs").await;
    kind.cli().mark_owner("theirs", "uid-9").await.unwrap();
    assert_eq!(
        kind.cli().owner("theirs").await.unwrap().as_deref(),
        Some("uid-9")
    );
}

async fn start_controller(kind: &FakeKind) -> (Server, tokio::sync::watch::Sender<bool>) {
    let management = Server::start(Config::default()).await.unwrap();
    for crd in capi_kind::api::crd_objects().unwrap() {
        management.object_client("").create(&crd).await.unwrap();
    }
    let mut config = ControllerConfig::new(management.client("").unwrap(), Arc::new(kind.cli()));
    config.backoff = Backoff::new(Duration::from_millis(100), Duration::from_millis(500));
    config.settings = Settings {
        resync: Duration::from_millis(500),
        create_wait: Duration::from_secs(60),
        retry_refused: Duration::from_millis(500),
    };
    let (stop, mut rx) = tokio::sync::watch::channel(false);
    tokio::spawn(run(config, async move {
        let _ = rx.wait_for(|s| *s).await;
    }));
    (management, stop)
}

async fn wait_phase(api: &Api<KINDCluster>, name: &str, phase: Phase) {
    let cond = await_condition(api.clone(), name, move |o: Option<&KINDCluster>| {
        o.and_then(|o| o.status.as_ref()?.phase) == Some(phase)
    });
    tokio::time::timeout(Duration::from_secs(30), cond)
        .await
        .unwrap_or_else(|_| panic!("{name} never reached {phase:?}"))
        .unwrap();
}

const TEST1: &str = "apiVersion: infrastructure.cluster-k8s.io/v1alpha1\nkind: KINDCluster\nmetadata: {name: test-cluster-1, namespace: default}\nspec: {clusterName: test-1}\n";

#[tokio::test]
async fn the_controller_creates_and_deletes_through_the_cli() {
    let kind = FakeKind::new("controller").await;
    let (management, stop) = start_controller(&kind).await;
    let api: Api<KINDCluster> = Api::namespaced(management.client("").unwrap(), "default");
    api.create(
        &PostParams::default(),
        &serde_saphyr::from_str(TEST1).unwrap(),
    )
    .await
    .unwrap();
    wait_phase(&api, "test-cluster-1", Phase::Ready).await;
    let config = std::fs::read_to_string(kind.dir.join("config-test-1.yaml")).unwrap();
    let uid = api
        .get("test-cluster-1")
        .await
        .unwrap()
        .metadata
        .uid
        .unwrap();
    assert!(
        config.contains(&format!("{OWNER_LABEL}: {uid}")),
        "{config}"
    );
    api.delete("test-cluster-1", &DeleteParams::default())
        .await
        .unwrap();
    let gone = await_condition(api.clone(), "test-cluster-1", |o: Option<&KINDCluster>| {
        o.is_none()
    });
    tokio::time::timeout(Duration::from_secs(30), gone)
        .await
        .unwrap()
        .unwrap();
    assert!(
        kind.args()
            .iter()
            .any(|a| a.starts_with("delete cluster --name test-1"))
    );
    let _ = stop.send(true);
}

#[tokio::test]
async fn the_controller_refuses_to_adopt_or_delete_an_unmarked_cluster() {
    let kind = FakeKind::new("adopt").await;
    kind.add_unmarked_cluster("test-1").await;
    let (management, stop) = start_controller(&kind).await;
    let api: Api<KINDCluster> = Api::namespaced(management.client("").unwrap(), "default");
    api.create(
        &PostParams::default(),
        &serde_saphyr::from_str(TEST1).unwrap(),
    )
    .await
    .unwrap();
    wait_phase(&api, "test-cluster-1", Phase::Failed).await;
    let status = api.get("test-cluster-1").await.unwrap().status.unwrap();
    assert!(
        status
            .failure_message
            .contains("neither adopted nor deleted"),
        "{}",
        status.failure_message
    );
    api.delete("test-cluster-1", &DeleteParams::default())
        .await
        .unwrap();
    let gone = await_condition(api.clone(), "test-cluster-1", |o: Option<&KINDCluster>| {
        o.is_none()
    });
    tokio::time::timeout(Duration::from_secs(30), gone)
        .await
        .unwrap()
        .unwrap();
    let args = kind.args();
    assert!(
        !args
            .iter()
            .any(|a| a.starts_with("create cluster") || a.starts_with("delete cluster")),
        "{args:?}"
    );
    let _ = stop.send(true);
}
