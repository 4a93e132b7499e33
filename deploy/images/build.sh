#!/usr/bin/env bash
# Builds the OCI images of the five binaries without a container daemon, with umoci, from the
# release binaries and a root filesystem made of what they need from the Debian system they were
# built on (their shared libraries, CA certificates, a non-root user). Then checks each image:
# its config (entrypoint, user, labels, architecture), its size, and that the binary runs from
# the image's own root filesystem (`--help`, and `crds` where the binary has it).
#
#   deploy/images/build.sh [out-dir]      (default: <target>/images)
#   deploy/images/build.sh --binaries-only   (only the release build of the five binaries: CI
#                                             starts it early, in the background)
#
# <target> is $CARGO_TARGET_DIR when set (where cargo put the release binaries), else target.
#
# Each image is an OCI image layout in <out-dir>/<binary>, tagged <version> and latest;
# push one with: skopeo copy oci:<out-dir>/<binary>:<version> docker://ghcr.io/kcp-rs/<binary>:<version>
set -euo pipefail
cd "$(dirname "$0")/../.."

BINARIES_ONLY=no
if [ "${1:-}" = --binaries-only ]; then
  BINARIES_ONLY=yes
  shift
fi
TARGET=${CARGO_TARGET_DIR:-target}
OUT=${1:-$TARGET/images}
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
REVISION=$(git rev-parse HEAD 2>/dev/null || echo unknown)
MAX_BYTES=$((25 * 1024 * 1024))
UID_GID=65532

# binary, entrypoint in the image, whether it has a `crds` subcommand: where upstream's images
# put their binaries (/manager for kcp-operator and the Cluster API providers, which HyperShift
# and the kustomize manifests start by that path; /usr/local/bin/<tool> on PATH for the kcp
# agents, whose charts rely on the image's entrypoint).
IMAGES=(
  "kcp-init-agent /usr/local/bin/init-agent yes"
  "kcp-api-syncagent /usr/local/bin/api-syncagent yes"
  "kcp-operator /manager yes"
  "capi-provider-agent /manager yes"
  "capi-provider-kind /manager yes"
)

for tool in umoci skopeo; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "$tool is required (Debian package $tool)" >&2
    exit 1
  fi
done

bins=()
for entry in "${IMAGES[@]}"; do
  read -r name _ _ <<<"$entry"
  bins+=(--bin "$name")
done
cargo build --release -p kcp-bins "${bins[@]}"
if [ "$BINARIES_ONLY" = yes ]; then
  exit 0
fi

# Copies `path` into `root` at the same path, as a regular file (symbolic links followed: on a
# merged-/usr Debian the loader's path runs through two of them).
copy_into() {
  local root=$1 path=$2
  mkdir -p "$root$(dirname "$path")"
  cp -L "$path" "$root$path"
}

# The root filesystem of one binary.
make_rootfs() {
  local root=$1 binary=$2 entrypoint=$3
  mkdir -p "$root/etc/ssl/certs" "$root/tmp"
  chmod 1777 "$root/tmp"
  mkdir -p "$root$(dirname "$entrypoint")"
  objcopy --strip-debug "$binary" "$root$entrypoint"
  chmod 0755 "$root$entrypoint"
  # The dynamic loader and every shared library the binary loads, from this Debian system.
  ldd "$binary" | grep -o '/[^ ]*' | while read -r lib; do copy_into "$root" "$lib"; done
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%s:%s:nonroot:/home/nonroot:/sbin/nologin\n' \
    "$UID_GID" "$UID_GID" >"$root/etc/passwd"
  printf 'root:x:0:\nnonroot:x:%s:\n' "$UID_GID" >"$root/etc/group"
  mkdir -p "$root/home/nonroot"
  chown -R "$UID_GID:$UID_GID" "$root/home/nonroot" 2>/dev/null || true
}

build_image() {
  local name=$1 entrypoint=$2 layout="$OUT/$1"
  local work
  work=$(mktemp -d)
  rm -rf "$layout"
  umoci init --layout "$layout"
  umoci new --image "$layout:$VERSION"
  umoci unpack --rootless --image "$layout:$VERSION" "$work/bundle" >/dev/null
  make_rootfs "$work/bundle/rootfs" "$TARGET/release/$name" "$entrypoint"
  umoci repack --image "$layout:$VERSION" "$work/bundle"
  umoci config --image "$layout:$VERSION" \
    --architecture amd64 --os linux \
    --config.entrypoint "$entrypoint" \
    --config.user "$UID_GID:$UID_GID" \
    --config.workingdir / \
    --config.env PATH=/usr/local/bin:/usr/bin:/bin \
    --config.label "org.opencontainers.image.title=$name" \
    --config.label "org.opencontainers.image.version=$VERSION" \
    --config.label "org.opencontainers.image.revision=$REVISION" \
    --config.label "org.opencontainers.image.source=https://github.com/kcp-rs/kcp-rs" \
    --config.label "org.opencontainers.image.licenses=Apache-2.0" \
    --history.created_by "deploy/images/build.sh" >/dev/null
  umoci tag --image "$layout:$VERSION" latest
  umoci gc --layout "$layout"
  rm -rf "$work"
}

# Checks one image: config, size, and the binary running from its own root filesystem.
check_image() {
  local name=$1 entrypoint=$2 crds=$3 layout="$OUT/$1"
  skopeo inspect --config "oci:$layout:$VERSION" | python3 -c '
import json, sys
config, entrypoint, user, name = json.load(sys.stdin), sys.argv[1], sys.argv[2], sys.argv[3]
c = config["config"]
problems = []
if c.get("Entrypoint") != [entrypoint]: problems.append("entrypoint %s" % c.get("Entrypoint"))
if c.get("User") != "%s:%s" % (user, user): problems.append("user %s" % c.get("User"))
if config.get("architecture") != "amd64" or config.get("os") != "linux": problems.append("platform")
if c.get("Labels", {}).get("org.opencontainers.image.title") != name: problems.append("labels")
if problems: sys.exit(name + ": " + ", ".join(problems))
' "$entrypoint" "$UID_GID" "$name"
  local bytes
  bytes=$(find "$layout/blobs" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
  if [ "$bytes" -gt "$MAX_BYTES" ]; then
    echo "$name: $bytes bytes, over the $MAX_BYTES byte goal" >&2
    return 1
  fi
  local run
  run=$(mktemp -d)
  umoci unpack --rootless --image "$layout:$VERSION" "$run/bundle" >/dev/null
  in_root "$run/bundle/rootfs" "$entrypoint" --help >/dev/null
  if [ "$crds" = yes ]; then
    local crds_out
    crds_out=$(in_root "$run/bundle/rootfs" "$entrypoint" crds)
    grep -q "kind: CustomResourceDefinition" <<<"$crds_out"
  fi
  rm -rf "$run"
  printf '%s\t%s\t%s bytes (%s MiB)\n' "$name" "$entrypoint" "$bytes" "$(awk -v b="$bytes" 'BEGIN {printf "%.1f", b / 1048576}')"
}

# Runs a command with `root` as the root filesystem (chroot as root, else in a user namespace).
in_root() {
  local root=$1
  shift
  if [ "$(id -u)" = 0 ]; then
    chroot "$root" "$@"
  else
    unshare --map-root-user chroot "$root" "$@"
  fi
}

mkdir -p "$OUT"
echo "== building images ($VERSION) into $OUT"
for entry in "${IMAGES[@]}"; do
  read -r name entrypoint _ <<<"$entry"
  build_image "$name" "$entrypoint"
done
echo "== checking images"
for entry in "${IMAGES[@]}"; do
  read -r name entrypoint crds <<<"$entry"
  check_image "$name" "$entrypoint" "$crds"
done
