#!/usr/bin/env bash
# Vendors the Kubernetes protobuf definitions kcp-sim decodes and encodes, from git checkouts of
# k8s.io/api, k8s.io/apimachinery and k8s.io/apiextensions-apiserver at one release tag, and
# derives `fields.txt` from the Go types of the same tag.
#
#   proto/vendor.sh TAG API_REPO APIMACHINERY_REPO APIEXTENSIONS_REPO
#
# A "repo" may also be the Go module cache's copy of that module at TAG (for example
# `$(go env GOMODCACHE)/k8s.io/api@v0.33.3`): a directory that is not a git checkout is read as
# that version's files.
#
# `fields.txt` has one line `proto.package.Message.protoField jsonName flag` for each field whose
# JSON name differs from its protobuf name (`$ref` is `ref`, `x-kubernetes-list-type` is
# `xKubernetesListType`) or whose zero value the JSON form keeps (flag `keep-zero`): pointer
# fields (`*int32`, `*bool`, `*string`: present means set, even to 0, false or "") and fields
# without `omitempty`; or flag `inline` for an embedded struct whose fields JSON lifts into its
# parent (`Volume.volumeSource`). Every other scalar field is written by Go's protobuf encoder
# even when zero and left out of JSON when zero; kcp-sim does the same. kcp-sim reads the
# `keep-zero` flag for scalar fields only.
set -euo pipefail
tag=$1 api=$2 machinery=$3 ext=$4
out=$(cd "$(dirname "$0")" && pwd)

show() { # repo path-in-repo
  if git -C "$1" rev-parse --git-dir >/dev/null 2>&1; then
    git -C "$1" show "$tag:$2"
  else
    cat "$1/$2"
  fi
}
copy() { # repo path-in-repo proto-import-path
  mkdir -p "$out/$(dirname "$3")"
  show "$1" "$2" >"$out/$3"
}
packages="core/v1 apps/v1 batch/v1 policy/v1 rbac/v1 coordination/v1 events/v1 authorization/v1 authentication/v1 certificates/v1 networking/v1 autoscaling/v1 autoscaling/v2 scheduling/v1 storage/v1"
for p in $packages; do
  copy "$api" "$p/generated.proto" "k8s.io/api/$p/generated.proto"
done
for p in pkg/apis/meta/v1 pkg/runtime pkg/runtime/schema pkg/util/intstr pkg/api/resource; do
  copy "$machinery" "$p/generated.proto" "k8s.io/apimachinery/$p/generated.proto"
done
copy "$ext" pkg/apis/apiextensions/v1/generated.proto \
  k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1/generated.proto
show "$api" LICENSE >"$out/LICENSE"

# Go struct fields -> field table. A field line looks like
#   Replicas *int32 `json:"replicas,omitempty" protobuf:"varint,1,opt,name=replicas"`
fields() { # repo file proto-package
  show "$1" "$2" | awk -v pkg="$3" '
    /^type [A-Z][A-Za-z0-9]* struct \{/ { msg = $2; next }
    /^\}/ { msg = "" }
    msg != "" && /protobuf:"/ && /json:"/ {
      type = $2
      match($0, /json:"[^"]*"/); tag = substr($0, RSTART + 6, RLENGTH - 7)
      n = split(tag, parts, ","); json = parts[1]; omit = 0
      for (i = 2; i <= n; i++) if (parts[i] == "omitempty") omit = 1
      match($0, /name=[^,"]*/); proto = substr($0, RSTART + 5, RLENGTH - 5)
      # an embedded struct without a protobuf name is named after its type
      if (proto == "" && json == "") proto = tolower(substr($1, 1, 1)) substr($1, 2)
      if (proto == "" || json == "-") next
      if (json == "") { print pkg "." msg "." proto, "-", "inline"; next }
      keep = (type !~ /^(\[\]|map\[)/ && (type ~ /^\*/ || !omit)) ? "keep-zero" : "-"
      if (keep != "-" || json != proto) print pkg "." msg "." proto, json, keep
    }'
}
{
  for p in $packages; do
    fields "$api" "$p/types.go" "k8s.io.api.${p//\//.}"
  done
  fields "$machinery" pkg/apis/meta/v1/types.go k8s.io.apimachinery.pkg.apis.meta.v1
  fields "$ext" pkg/apis/apiextensions/v1/types.go k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1
  fields "$ext" pkg/apis/apiextensions/v1/types_jsonschema.go k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1
} | sort -u >"$out/fields.txt"
