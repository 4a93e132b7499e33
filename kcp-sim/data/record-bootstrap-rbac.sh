#!/usr/bin/env bash
# Records kube-apiserver's bootstrap RBAC objects (the roles and bindings its RBAC post-start
# hook writes) into kube-bootstrap-rbac.json, which kcp-sim's Kubernetes flavor seeds.
# Run it against a fresh kube-apiserver of the pinned version (kcp-testbed/peers/PINS), with
# no kube-controller-manager (so aggregated roles are as the test bed's stay: without rules):
#   bash kcp-sim/data/record-bootstrap-rbac.sh <kubeconfig>
set -euo pipefail
kubeconfig=${1:?usage: record-bootstrap-rbac.sh <kubeconfig>}
here=$(cd "$(dirname "$0")" && pwd)
kubectl --kubeconfig="$kubeconfig" get clusterroles,clusterrolebindings,roles,rolebindings \
  --all-namespaces -l kubernetes.io/bootstrapping=rbac-defaults -o json |
python3 -c '
import json, sys
keep_meta = ("name", "namespace", "labels", "annotations")
out = []
for item in json.load(sys.stdin)["items"]:
    meta = {k: v for k, v in item["metadata"].items() if k in keep_meta}
    body = {k: v for k, v in item.items() if k not in ("metadata", "apiVersion", "kind")}
    out.append({"apiVersion": item["apiVersion"], "kind": item["kind"], "metadata": meta, **body})
json.dump(out, sys.stdout, indent=1, sort_keys=True)
sys.stdout.write("\n")
' > "$here/kube-bootstrap-rbac.json"
