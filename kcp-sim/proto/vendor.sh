#!/usr/bin/env bash
# Vendors the Kubernetes protobuf definitions kcp-sim decodes and encodes, from git checkouts of
# k8s.io/api, k8s.io/apimachinery and k8s.io/apiextensions-apiserver at one release tag, and
# derives `fields.txt` from the Go types of the same tag.
#
#   proto/vendor.sh TAG API_REPO APIMACHINERY_REPO APIEXTENSIONS_REPO
#
# A "repo" may also be the Go module cache's copy of that module at TAG (for example
# `$(go env GOMODCACHE)/k8s.io/api@v0.34.2`): a directory that is not a git checkout is read as
# that version's files.
#
# `fields.txt` has one line `proto.package.Message.protoField jsonName flags goType` for each
# field of the Go types:
# - `jsonName`: its JSON key (`$ref` for `ref`, `x-kubernetes-list-type` for
#   `xKubernetesListType`), or `-` for an embedded struct whose fields JSON lifts into its parent;
# - `flags`, comma-separated, or `-` for none: `keep-zero` for a scalar or struct whose zero
#   value JSON keeps (a pointer field, `*int32`, `*bool`, `*string`: present means set, even to
#   0, false or ""; or a field without `omitempty`); `keep-empty` for a slice or map without
#   `omitempty` (an empty one is not dropped); `inline` for an embedded struct
#   (`Volume.volumeSource`); and, as they are, `pointer` (a `*T` field) and `omitempty` (the
#   tag has it), `omitzero` (likewise): Go's encoder writes a field without `omitempty`, and a
#   struct that is no pointer (unless `omitzero`), even when it is zero or the body left it out;
#   for server-side apply, `list=atomic|set|map:key1+key2` for a slice (its `+listType` and
#   `+listMapKey`s, else a merge `patchStrategy` keyed by its `patchMergeKey`, a set without
#   one, else atomic: kube-openapi's schemaconv), `map=atomic` for a `+mapType=atomic` map and
#   `default=<json>` for a `+default`; for strategic merge patch, `patch=<patchStrategy>` (its
#   commas as `+`: `merge+retainKeys`) and `merge-key=<patchMergeKey>`;
# - `goType`: its type as Go's reflection names it in decoding errors (`int32`, `[]v1.Container`,
#   `map[string]string`, `v1.Protocol`, `resource.Quantity`; pointers dereferenced).
# Every scalar without `keep-zero` is written by Go's protobuf encoder even when zero and left
# out of JSON when zero; kcp-sim does the same.
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
    # A Go type expression of the source as reflection prints it: pointers dereferenced, an
    # import alias by its package name (metav1.Time is v1.Time), a type of this package
    # qualified by it, byte as uint8.
    function gotype(t,    n, close_at) {
      sub(/^\*/, "", t)
      if (t ~ /^\[\]/) return "[]" gotype(substr(t, 3))
      if (t ~ /^map\[/) {
        close_at = index(t, "]")
        return "map[" gotype(substr(t, 5, close_at - 5)) "]" gotype(substr(t, close_at + 1))
      }
      if (t == "byte") return "uint8"
      if (t ~ /^[a-z][a-z0-9]*$/) return t
      n = index(t, ".")
      if (n > 0) {
        alias = substr(t, 1, n - 1)
        if (match(alias, /v[0-9]+((alpha|beta)[0-9]+)?$/)) alias = substr(alias, RSTART)
        return alias substr(t, n)
      }
      return gopkg "." t
    }
    # The list type structured-merge-diff gives a slice field, as kube-openapi'"'"'s schemaconv
    # reads the markers: `+listType` (and `+listMapKey`), else a merge `patchStrategy` (keyed
    # by its `patchMergeKey`, a set without one), else atomic.
    function listtype(line,    strategy, key) {
      if (lt == "map") return "list=map:" mapkeys
      if (lt != "") return "list=" lt
      strategy = ""; key = ""
      if (match(line, /patchStrategy:"[^"]*"/)) strategy = substr(line, RSTART + 15, RLENGTH - 16)
      if (match(line, /patchMergeKey:"[^"]*"/)) key = substr(line, RSTART + 15, RLENGTH - 16)
      if (strategy ~ /^merge/) return key == "" ? "list=set" : "list=map:" key
      return "list=atomic"
    }
    function forget() { lt = ""; mapkeys = ""; mt = ""; def = "" }
    BEGIN { n = split(pkg, segments, "."); gopkg = segments[n] }
    # The markers of the field below: its list and map type, its default.
    /^[ \t]*\/\// {
      if (match($0, /\+listType=[a-z]+/)) lt = substr($0, RSTART + 10, RLENGTH - 10)
      if (match($0, /\+listMapKey=[A-Za-z0-9]+/)) {
        key = substr($0, RSTART + 12, RLENGTH - 12)
        mapkeys = mapkeys (mapkeys == "" ? "" : "+") key
      }
      if (match($0, /\+mapType=[a-z]+/)) mt = substr($0, RSTART + 9, RLENGTH - 9)
      if (match($0, /\+default=[^ ]+/)) def = substr($0, RSTART + 9, RLENGTH - 9)
    }
    /^type [A-Z][A-Za-z0-9]* struct \{/ { msg = $2 }
    /^\}/ { msg = "" }
    msg != "" && /protobuf:"/ && /json:"/ {
      # an embedded struct with a JSON name (`metav1.ObjectMeta `json:"metadata"``) has its
      # type first
      type = ($2 ~ /^`/) ? $1 : $2
      match($0, /json:"[^"]*"/); tag = substr($0, RSTART + 6, RLENGTH - 7)
      n = split(tag, parts, ","); json = parts[1]; omit = 0; zero = 0
      for (i = 2; i <= n; i++) {
        if (parts[i] == "omitempty") omit = 1
        if (parts[i] == "omitzero") zero = 1
      }
      match($0, /name=[^,"]*/); proto = substr($0, RSTART + 5, RLENGTH - 5)
      # an embedded struct without a protobuf name is named after its type
      if (proto == "" && json == "") proto = tolower(substr($1, 1, 1)) substr($1, 2)
      if (proto == "" || json == "-") { forget(); next }
      if (json == "") { print pkg "." msg "." proto, "-", "inline", gotype($1); forget(); next }
      collection = (type ~ /^(\[\]|map\[)/)
      pointer = (type ~ /^\*/)
      if (collection) flags = omit ? "" : "keep-empty"
      else flags = (pointer || !omit) ? "keep-zero" : ""
      if (pointer) flags = flags (flags == "" ? "" : ",") "pointer"
      if (omit) flags = flags (flags == "" ? "" : ",") "omitempty"
      if (zero) flags = flags (flags == "" ? "" : ",") "omitzero"
      if (type ~ /^\[\]/ && type != "[]byte") flags = flags (flags == "" ? "" : ",") listtype($0)
      if (type ~ /^map\[/ && mt == "atomic") flags = flags (flags == "" ? "" : ",") "map=atomic"
      if (def != "" && def !~ /^ref\(/) flags = flags (flags == "" ? "" : ",") "default=" def
      if (match($0, /patchStrategy:"[^"]*"/)) {
        strategy = substr($0, RSTART + 15, RLENGTH - 16)
        gsub(/,/, "+", strategy)
        flags = flags (flags == "" ? "" : ",") "patch=" strategy
      }
      if (match($0, /patchMergeKey:"[^"]*"/))
        flags = flags (flags == "" ? "" : ",") "merge-key=" substr($0, RSTART + 15, RLENGTH - 16)
      if (flags == "") flags = "-"
      print pkg "." msg "." proto, json, flags, gotype(type)
      forget()
    }
    # Markers hold for the next field only.
    !/^[ \t]*\/\// { forget() }'
}
{
  for p in $packages; do
    fields "$api" "$p/types.go" "k8s.io.api.${p//\//.}"
  done
  fields "$machinery" pkg/apis/meta/v1/types.go k8s.io.apimachinery.pkg.apis.meta.v1
  fields "$ext" pkg/apis/apiextensions/v1/types.go k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1
  fields "$ext" pkg/apis/apiextensions/v1/types_jsonschema.go k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1
} | sort -u >"$out/fields.txt"
