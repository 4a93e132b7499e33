#!/usr/bin/env bash
# Records the schemas kcp serves its own kinds with, which kcp-sim's OpenAPI documents
# (`kubectl explain`) describe them by: kcp-schemas.json, one entry per kind, as an
# APIResourceSchema's spec (group, names, scope, versions with their openAPIV3Schema,
# subresources and printer columns). Two sources, as kcp v0.30.0 keeps them:
# - the CRDs of the `system:system-crds` logical cluster (apis.kcp.io, core.kcp.io's
#   LogicalCluster, cache.kcp.io), read as the shard admin;
# - the APIResourceSchemas in `root` of the kinds root's exports serve (tenancy.kcp.io,
#   topology.kcp.io, core.kcp.io's Shard, cache.kcp.io's CachedObject), read as kcp's admin.
# Run it against a fresh kcp of the pinned version (kcp-testbed/peers/PINS), with the
# admin.kubeconfig kcp writes into its root directory:
#   bash kcp-sim/data/record-kcp-schemas.sh <root directory>/admin.kubeconfig
set -euo pipefail
kubeconfig=${1:?usage: record-kcp-schemas.sh <kcp admin.kubeconfig>}
here=$(cd "$(dirname "$0")" && pwd)
crds=$(mktemp)
schemas=$(mktemp)
trap 'rm -f "$crds" "$schemas"' EXIT
kubectl --kubeconfig="$kubeconfig" --context=shard-base get --raw \
  /clusters/system:system-crds/apis/apiextensions.k8s.io/v1/customresourcedefinitions >"$crds"
kubectl --kubeconfig="$kubeconfig" --context=root get --raw \
  /apis/apis.kcp.io/v1alpha1/apiresourceschemas >"$schemas"
python3 - "$crds" "$schemas" >"$here/kcp-schemas.json" <<'EOF'
import json, sys

VERSION_KEYS = ("name", "served", "storage", "deprecated", "deprecationWarning",
                "subresources", "additionalPrinterColumns", "selectableFields")

def version(v, schema):
    out = {k: v[k] for k in VERSION_KEYS if k in v}
    out["schema"] = schema
    return out

def spec(s, versions):
    names = {k: v for k, v in s["names"].items()}
    return {"group": s["group"], "names": names, "scope": s["scope"], "versions": versions}

kinds = {}
for crd in json.load(open(sys.argv[1]))["items"]:
    s = crd["spec"]
    versions = [version(v, v["schema"]["openAPIV3Schema"]) for v in s["versions"]]
    kinds[(s["group"], s["names"]["kind"])] = spec(s, versions)
for ars in json.load(open(sys.argv[2]))["items"]:
    s = ars["spec"]
    key = (s["group"], s["names"]["kind"])
    if key in kinds:
        continue
    kinds[key] = spec(s, [version(v, v["schema"]) for v in s["versions"]])
json.dump([kinds[k] for k in sorted(kinds)], sys.stdout, indent=1, sort_keys=True)
sys.stdout.write("\n")
EOF
