#!/usr/bin/env bash
# Installs and builds what a real node of the local control plane needs, beside the control-plane
# binaries of hack/build-control-plane.sh (kubelet and kube-proxy come from there):
#   - Debian packages: containerd, runc, the CNI plugins, iptables, ipset, conntrack, and the image
#     tools (buildah, mmdebstrap);
#   - gVisor's runsc and its containerd shim (containerd-shim-runsc-v1), from gVisor's Go module: the
#     last version whose shim speaks containerd 1.6's start protocol (later ones print a JSON
#     bootstrap that Debian's containerd 1.6 cannot read);
#   - kube-router (its NetworkPolicy controller enforces NetworkPolicies), from its Go module;
#   - Rancher's local-path-provisioner, the dynamic PV provisioner kind ships (volumes a non-root
#     sandbox can write, which the in-tree hostPath provisioner's 0750 root directories are not);
#   - pause, the pod sandbox's init process, compiled from the C source in the Kubernetes module.
# Go and C builds land in a version-keyed cache directory outside the work tree and are reused
# when present; each is built in a scratch directory and moved into place only when it succeeded.
#
# Prints the binary directory on the last line of stdout.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.36.3}"
GVISOR_VERSION="${GVISOR_VERSION:-v0.0.0-20260508212337-96dad6a2da94}"
KUBE_ROUTER_VERSION="${KUBE_ROUTER_VERSION:-v2.10.0}"
LOCAL_PATH_VERSION="${LOCAL_PATH_VERSION:-v0.0.30}"
CACHE_ROOT="${AGENT_SANDBOX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cdk8s-agent-sandbox}"
BIN="${CACHE_ROOT}/nodebin"
# Each binary has a stamp file next to it naming what it was built from (versions, and this
# script's build recipe for it); a binary whose stamp differs is built again, the others are kept.
APT_PACKAGES=(containerd runc containernetworking-plugins iptables ipset conntrack kmod buildah mmdebstrap gcc libc6-dev binutils)
export GOFLAGS="${GOFLAGS:--buildvcs=false}"

log() { printf '[build-real-node %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
work() { local d="${CACHE_ROOT}/src/$1"; rm -rf "$d"; mkdir -p "$d"; echo "$d"; }
# fresh <binary> <recipe>: true when the binary exists and was built from this recipe.
fresh() { [ -x "$BIN/$1" ] && [ "$(cat "$BIN/$1.stamp" 2>/dev/null)" = "$2" ]; }
stamp() { printf '%s' "$2" > "$BIN/$1.stamp"; }
# recipe <function>: a function's own text, so a changed build step rebuilds its binary.
recipe() { declare -f "$1" | sha256sum | cut -c1-16; }
mkdir -p "$BIN"

install_packages() {
  local missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then log "Debian packages: installed"; return; fi
  log "Debian packages: installing ${missing[*]}"
  [ "$(id -u)" = 0 ] || { log "installing packages needs root (apt-get install ${missing[*]})"; exit 1; }
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >&2
  # containerd's package starts its own service where systemd runs; real-node mode runs its own
  # containerd with its own config and sockets, so a packaged one that may be running is harmless.
  apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
}

build_gvisor() {
  local r="gvisor ${GVISOR_VERSION} $(recipe build_gvisor)"
  if fresh runsc "$r" && fresh containerd-shim-runsc-v1 "$r"; then log "gVisor ${GVISOR_VERSION}: cached"; return; fi
  local t0=$SECONDS src
  src=$(work "gvisor-${GVISOR_VERSION}")
  log "gVisor ${GVISOR_VERSION}: go install runsc and the shim (cold: a few minutes)"
  # Static, as gVisor's own release builds are: runsc re-executes itself inside the sandbox.
  CGO_ENABLED=0 GOBIN="$src" go install -trimpath -ldflags "-s -w" \
    "gvisor.dev/gvisor/runsc@${GVISOR_VERSION}" "gvisor.dev/gvisor/shim@${GVISOR_VERSION}"
  mv -f "$src/runsc" "$BIN/runsc"
  mv -f "$src/shim" "$BIN/containerd-shim-runsc-v1"
  stamp runsc "$r"; stamp containerd-shim-runsc-v1 "$r"
  log "gVisor: built in $((SECONDS - t0))s"
}

build_kube_router() {
  local r="kube-router ${KUBE_ROUTER_VERSION} $(recipe build_kube_router)"
  if fresh kube-router "$r"; then log "kube-router ${KUBE_ROUTER_VERSION}: cached"; return; fi
  local t0=$SECONDS src
  src=$(work "kube-router-${KUBE_ROUTER_VERSION}")
  # v2.10.0 requires a netlink pseudo-version the module proxy does not serve; v1.3.1, the release
  # before it, builds and is what kube-router's own v2.x releases shipped with until then.
  (
    cd "$src"
    go mod init local/kube-router-bin >/dev/null 2>&1
    go mod edit -go=1.26.0 -require="github.com/cloudnativelabs/kube-router/v2@${KUBE_ROUTER_VERSION}" \
      -replace=github.com/vishvananda/netlink=github.com/vishvananda/netlink@v1.3.1 \
      -tool=github.com/cloudnativelabs/kube-router/v2/cmd/kube-router
    log "kube-router ${KUBE_ROUTER_VERSION}: go mod tidy"
    go mod tidy
    log "kube-router ${KUBE_ROUTER_VERSION}: go build"
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$src/kube-router" github.com/cloudnativelabs/kube-router/v2/cmd/kube-router
  )
  mv -f "$src/kube-router" "$BIN/kube-router"
  stamp kube-router "$r"
  log "kube-router: built in $((SECONDS - t0))s"
}

build_local_path() {
  local r="local-path ${LOCAL_PATH_VERSION} $(recipe build_local_path)"
  if fresh local-path-provisioner "$r"; then log "local-path-provisioner ${LOCAL_PATH_VERSION}: cached"; return; fi
  local t0=$SECONDS src
  src=$(work "local-path-${LOCAL_PATH_VERSION}")
  (
    cd "$src"
    go mod init local/local-path-bin >/dev/null 2>&1
    go mod edit -go=1.26.0 -require="github.com/rancher/local-path-provisioner@${LOCAL_PATH_VERSION}" \
      -tool=github.com/rancher/local-path-provisioner
    log "local-path-provisioner ${LOCAL_PATH_VERSION}: go mod tidy"
    go mod tidy
    log "local-path-provisioner ${LOCAL_PATH_VERSION}: go build"
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$src/local-path-provisioner" github.com/rancher/local-path-provisioner
  )
  mv -f "$src/local-path-provisioner" "$BIN/local-path-provisioner"
  stamp local-path-provisioner "$r"
  log "local-path-provisioner: built in $((SECONDS - t0))s"
}

build_pause() {
  local r="pause ${K8S_VERSION} $(recipe build_pause)"
  if fresh pause "$r"; then log "pause (Kubernetes ${K8S_VERSION}): cached"; return; fi
  local src dir
  src=$(work "pause-${K8S_VERSION}")
  dir=$(cd "$src" && go mod download -json "k8s.io/kubernetes@${K8S_VERSION}" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  [ -f "$dir/build/pause/linux/pause.c" ] || { log "pause.c not found in $dir/build/pause/linux"; exit 1; }
  # As Kubernetes' build/pause/Makefile does: static, with the version baked in.
  gcc -Os -Wall -Werror -static -DVERSION="${K8S_VERSION}" -o "$src/pause" "$dir/build/pause/linux/pause.c"
  strip "$src/pause"
  mv -f "$src/pause" "$BIN/pause"
  stamp pause "$r"
  log "pause: built"
}

T0=$SECONDS
install_packages
build_pause
build_kube_router
build_local_path
build_gvisor
log "all node binaries ready in $((SECONDS - T0))s: $BIN"
echo "$BIN"
