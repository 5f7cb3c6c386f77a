#!/usr/bin/env bash
# Builds the local control plane from published Go modules (no Docker):
#   etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kwok, and for the
#   real-node mode kubelet and kube-proxy (same Kubernetes module, built in the same go build).
# Binaries land in a version-keyed cache directory outside the work tree and are
# reused when present. Every binary is built into a temporary directory and moved
# into place only when the whole step succeeded, so an interrupted run leaves no
# half-built binary behind and the next run simply builds again.
#
# Prints the binary directory on the last line of stdout.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.36.3}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"
KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"
CACHE_ROOT="${AGENT_SANDBOX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cdk8s-agent-sandbox}"
KEY="k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}"
BIN="${CACHE_ROOT}/testbin/${KEY}"
export CGO_ENABLED=0 GOFLAGS="${GOFLAGS:--buildvcs=false}"

log() { printf '[build-control-plane %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

mkdir -p "$BIN"

# has <binary> <expected substring of --version> [version args...]
# Output is captured before matching: `cmd | grep -q` under pipefail fails at random when grep
# exits early and cmd dies of SIGPIPE (kubectl prints two lines), which forced needless rebuilds.
has() {
  local bin="$1" want="$2" out; shift 2
  [ -x "$BIN/$bin" ] || return 1
  out=$("$BIN/$bin" "${@:---version}" 2>/dev/null) || return 1
  [[ "$out" == *"$want"* ]]
}

# Wrapper modules live in a scratch directory per step; they are tiny and regenerated.
work() { local d="${CACHE_ROOT}/src/$1"; rm -rf "$d"; mkdir -p "$d"; echo "$d"; }

build_kubernetes() {
  local all=1
  for b in kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy; do has "$b" "Kubernetes ${K8S_VERSION}" || all=0; done
  has kubectl "${K8S_VERSION}" version --client || all=0
  if [ "$all" = 1 ]; then log "kubernetes ${K8S_VERSION}: cached"; return; fi
  local t0=$SECONDS src minor sv gomod staging out
  src=$(work "k8s-${K8S_VERSION}")
  minor=$(echo "$K8S_VERSION" | cut -d. -f2)
  sv="v0.${K8S_VERSION#v1.}"
  log "kubernetes ${K8S_VERSION}: resolving staging modules (go mod download)"
  gomod=$(go mod download -json "k8s.io/kubernetes@${K8S_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  # Every k8s.io module the release requires at v0.0.0 is a staging module published as v0.<minor>.<patch>.
  staging=$(awk '$1 ~ /^k8s\.io\// && $2 == "v0.0.0" {print $1}' "$gomod" | sort -u)
  [ -n "$staging" ] || { log "no staging modules found in $gomod"; exit 1; }
  log "kubernetes ${K8S_VERSION}: $(echo "$staging" | wc -l) staging modules pinned to ${sv}"
  (
    cd "$src"
    go mod init local/k8sbin >/dev/null 2>&1
    go mod edit -go=1.26.0
    for m in $staging; do go mod edit -replace="$m=$m@$sv"; done
    go mod edit -require="k8s.io/kubernetes@${K8S_VERSION}" \
      -tool=k8s.io/kubernetes/cmd/kube-apiserver -tool=k8s.io/kubernetes/cmd/kube-controller-manager \
      -tool=k8s.io/kubernetes/cmd/kube-scheduler -tool=k8s.io/kubernetes/cmd/kubectl \
      -tool=k8s.io/kubernetes/cmd/kubelet -tool=k8s.io/kubernetes/cmd/kube-proxy
    log "kubernetes ${K8S_VERSION}: go mod tidy (downloads modules on a cold cache)"
    go mod tidy
    local X=k8s.io/component-base/version C=k8s.io/client-go/pkg/version
    local ldf="-s -w -X $X.gitVersion=${K8S_VERSION} -X $X.gitMajor=1 -X $X.gitMinor=${minor} -X $X.gitTreeState=clean"
    ldf="$ldf -X $X.buildDate=2000-01-01T00:00:00Z -X $C.gitVersion=${K8S_VERSION} -X $C.gitMajor=1 -X $C.gitMinor=${minor}"
    out="$src/out"; mkdir -p "$out"
    log "kubernetes ${K8S_VERSION}: go build (cold: tens of minutes on 2 cores; warm: about a minute)"
    go build -trimpath -ldflags "$ldf" -o "$out/" \
      k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
      k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl \
      k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy
    mv -f "$out"/* "$BIN/"
  )
  log "kubernetes ${K8S_VERSION}: built in $((SECONDS - t0))s"
}

build_etcd() {
  if has etcd "etcd Version: ${ETCD_VERSION#v}"; then log "etcd ${ETCD_VERSION}: cached"; return; fi
  local t0=$SECONDS src
  src=$(work "etcd-${ETCD_VERSION}")
  (
    cd "$src"
    go mod init local/etcdbin >/dev/null 2>&1
    go mod edit -go=1.26.0 -require="go.etcd.io/etcd/server/v3@${ETCD_VERSION}" -tool=go.etcd.io/etcd/server/v3
    log "etcd ${ETCD_VERSION}: go mod tidy"
    go mod tidy
    log "etcd ${ETCD_VERSION}: go build"
    go build -trimpath -ldflags "-s -w" -o "$src/etcd" go.etcd.io/etcd/server/v3
    mv -f "$src/etcd" "$BIN/etcd"
  )
  log "etcd ${ETCD_VERSION}: built in $((SECONDS - t0))s"
}

build_kwok() {
  if has kwok "${KWOK_VERSION}"; then log "kwok ${KWOK_VERSION}: cached"; return; fi
  local t0=$SECONDS src
  src=$(work "kwok-${KWOK_VERSION}")
  log "kwok ${KWOK_VERSION}: go install"
  GOBIN="$src" go install -trimpath -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION}" \
    "sigs.k8s.io/kwok/cmd/kwok@${KWOK_VERSION}"
  mv -f "$src/kwok" "$BIN/kwok"
  log "kwok ${KWOK_VERSION}: built in $((SECONDS - t0))s"
}

T0=$SECONDS
build_etcd
build_kwok
build_kubernetes
# Stage definitions are read from kwok's module at run time, never copied into the repo.
go mod download -json "sigs.k8s.io/kwok@${KWOK_VERSION}" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p' > "$BIN/kwok-module-dir"
log "all binaries ready in $((SECONDS - T0))s: $BIN"
echo "$BIN"
