//! A stand-in `kind` for the tests that run capi-provider-kind as a process on the real
//! kube-apiserver: no container engine exists here, so a shell script plays the kind CLI, and
//! each cluster it "creates" is an in-process kcp-sim server its kubeconfig points at.

use std::path::Path;

use capi_kind::kind_config::OWNER_LABEL;
use kcp_sim::{Config, Server};

/// The stand-in `kind`: the command lines of `capi-kind/tests/kind_cli.rs`'s (which
/// `real_kind_cli.rs` checks against the real kind). A create takes two seconds (kind takes
/// minutes), refuses a name whose nodes exist as kind does, registers the control-plane Node
/// with the config's owner label in the cluster's API server (a kcp-sim server of the test per
/// cluster name), and records the name in `created` once it made the cluster; `clusters` is
/// what `get clusters` lists.
pub const SCRIPT: &str = r#"#!/bin/sh
DIR='@DIR@'
echo "$*" >> "$DIR/args.log"
verb="$1 $2"
shift 2
name=""; kubeconfig=""
while [ $# -gt 0 ]; do
  case "$1" in
    --name) name="$2"; shift ;;
    --kubeconfig) kubeconfig="$2"; shift ;;
    --image|--config|--wait) shift ;;
    *) echo "ERROR: unknown flag: $1" >&2; exit 2 ;;
  esac
  shift
done
SERVER=$(cat "$DIR/server-$name" 2>/dev/null)
case "$verb" in
"create cluster")
  config=$(cat)
  mkdir "$DIR/nodes-$name" 2>/dev/null || {
    echo "ERROR: failed to create cluster: node(s) already exist for a cluster with the name \"$name\"" >&2
    exit 1
  }
  printf '%s\n' "$config" > "$DIR/config-$name.yaml"
  sleep 2
  uid=$(printf '%s\n' "$config" | sed -n 's/.*owner-uid: *//p' | head -n 1)
  curl -sf -X POST -H 'Content-Type: application/json' "$SERVER/api/v1/nodes" \
    --data "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"$name-control-plane\",\"labels\":{\"@LABEL@\":\"$uid\"}}}" >/dev/null || exit 3
  echo "$name" >> "$DIR/created"
  echo "$name" >> "$DIR/clusters"
  cp "$DIR/kubeconfig-$name" "$kubeconfig"
  ;;
"get clusters")
  if [ -s "$DIR/clusters" ]; then cat "$DIR/clusters"; else echo "No kind clusters found." >&2; fi
  ;;
"get kubeconfig")
  grep -qx "$name" "$DIR/clusters" 2>/dev/null || { echo "ERROR: could not locate any control plane nodes for cluster named '$name'" >&2; exit 1; }
  cat "$DIR/kubeconfig-$name"
  ;;
"delete cluster")
  grep -vx "$name" "$DIR/clusters" > "$DIR/clusters.new" 2>/dev/null; mv "$DIR/clusters.new" "$DIR/clusters"
  ;;
*)
  echo "unknown command: $verb" >&2; exit 2
  ;;
esac
"#;

/// Writes the stand-in `kind` into `dir` with one workload API server for each cluster name in
/// `names` (its kubeconfig, context `kind-<name>`, is what `get kubeconfig` prints); returns
/// the servers, which must live as long as the clusters are used.
pub async fn install(dir: &Path, names: &[String]) -> Vec<Server> {
    std::fs::create_dir_all(dir).unwrap();
    let mut workloads = Vec::new();
    for name in names {
        let workload = Server::start(Config::default()).await.unwrap();
        let context = format!("kind-{name}");
        std::fs::write(
            dir.join(format!("kubeconfig-{name}")),
            workload.kubeconfig(&[&context]),
        )
        .unwrap();
        std::fs::write(dir.join(format!("server-{name}")), workload.url()).unwrap();
        workloads.push(workload);
    }
    let script = SCRIPT
        .replace("@DIR@", &dir.display().to_string())
        .replace("@LABEL@", OWNER_LABEL);
    std::fs::write(dir.join("kind"), script).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(dir.join("kind"), std::fs::Permissions::from_mode(0o755)).unwrap();
    workloads
}
