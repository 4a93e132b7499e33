#!/usr/bin/env bash
# Records what kube-apiserver writes when it starts, which kcp-sim's Kubernetes flavor seeds:
# - kube-bootstrap-rbac.json: the roles and bindings its RBAC post-start hook writes;
# - kube-bootstrap-flowcontrol.json: the FlowSchemas and PriorityLevelConfigurations its API
#   Priority and Fairness config producer writes (annotated apf.kubernetes.io/autoupdate-spec).
# Run it against a fresh kube-apiserver of the pinned version (kcp-testbed/peers/PINS), with
# no kube-controller-manager (so aggregated roles are as the test bed's stay: without rules):
#   bash kcp-sim/data/record-bootstrap.sh <kubeconfig>
set -euo pipefail
kubeconfig=${1:?usage: record-bootstrap.sh <kubeconfig>}
here=$(cd "$(dirname "$0")" && pwd)
# Keeps what the writer wrote: apiVersion, kind, name, namespace, labels, annotations and the
# rest of the body but status.
strip='
import json, sys
keep_meta = ("name", "namespace", "labels", "annotations")
out = []
for item in json.load(sys.stdin)["items"]:
    if sys.argv[1:] and item["metadata"].get("annotations", {}).get(sys.argv[1]) != "true":
        continue
    meta = {k: v for k, v in item["metadata"].items() if k in keep_meta}
    body = {k: v for k, v in item.items() if k not in ("metadata", "apiVersion", "kind", "status")}
    out.append({"apiVersion": item["apiVersion"], "kind": item["kind"], "metadata": meta, **body})
json.dump(out, sys.stdout, indent=1, sort_keys=True)
sys.stdout.write("\n")
'
kubectl --kubeconfig="$kubeconfig" get clusterroles,clusterrolebindings,roles,rolebindings \
  --all-namespaces -l kubernetes.io/bootstrapping=rbac-defaults -o json |
  python3 -c "$strip" > "$here/kube-bootstrap-rbac.json"
kubectl --kubeconfig="$kubeconfig" get prioritylevelconfigurations,flowschemas -o json |
  python3 -c "$strip" apf.kubernetes.io/autoupdate-spec > "$here/kube-bootstrap-flowcontrol.json"
