#!/usr/bin/env bash
# Builds the upstream Go controller (sigs.k8s.io/agent-sandbox/cmd/agent-sandbox-controller) from the
# Go module proxy with the ordinary `go` tool, for the side-by-side benchmark in bench/. Nothing is committed:
# the binary lands in the same version-keyed cache as hack/build-control-plane.sh and is reused.
# `hack/build-upstream-controller.sh router` builds upstream's Go router (sigs.k8s.io/agent-sandbox/sandbox-router/cmd,
# the same module and version) instead, for the router benchmark.
#
# Version: AGENT_SANDBOX_VERSION if set; otherwise the newest version `go list -m -versions` reports;
# if the proxy refuses the version list (it answers 403 here), the pinned fallback below.
# Prints the binary path on the last line of stdout.
set -euo pipefail

FALLBACK_VERSION=v0.5.6
CACHE_ROOT="${AGENT_SANDBOX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cdk8s-agent-sandbox}"
export CGO_ENABLED=0 GOFLAGS="${GOFLAGS:--buildvcs=false}"
MOD=sigs.k8s.io/agent-sandbox
case "${1:-controller}" in
  controller) PKG="${MOD}/cmd/agent-sandbox-controller"; NAME=agent-sandbox-controller ;;
  router) PKG="${MOD}/sandbox-router/cmd"; NAME=sandbox-router ;;
  *) echo "usage: $0 [controller|router]" >&2; exit 2 ;;
esac

log() { printf '[build-upstream-controller %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

VERSION="${AGENT_SANDBOX_VERSION:-}"
if [ -z "$VERSION" ]; then
  if versions=$(cd /tmp && go list -m -versions "$MOD" 2>/dev/null); then
    VERSION=$(echo "$versions" | tr ' ' '\n' | grep '^v' | tail -n 1 || true)
    log "served versions: ${versions#"$MOD"}"
  fi
  if [ -z "$VERSION" ]; then
    VERSION=$FALLBACK_VERSION
    log "the proxy did not list ${MOD} versions; using the pinned ${VERSION}"
  fi
fi

BIN="${CACHE_ROOT}/testbin/agent-sandbox-${VERSION}"
EXE="$BIN/${NAME}"
if [ -x "$EXE" ] && "$EXE" --version 2>/dev/null | grep -q "${VERSION}"; then
  log "agent-sandbox ${VERSION} ${NAME}: cached"
  echo "$EXE"; exit 0
fi

t0=$SECONDS
src="${CACHE_ROOT}/src/agent-sandbox-${VERSION}-${NAME}"
rm -rf "$src"; mkdir -p "$src" "$BIN"
# `go install pkg@version` also looks up the module's deprecation through the version list, which the
# proxy refuses here; a throwaway wrapper module that requires the exact version avoids that lookup.
log "agent-sandbox ${VERSION} ${NAME}: go build via a wrapper module (cold: a few minutes on 2 cores)"
(
  cd "$src"
  go mod init local/agentsandboxbin >/dev/null 2>&1
  go mod edit -go=1.26.0 -require="${MOD}@${VERSION}" -tool="${PKG}"
  log "agent-sandbox ${VERSION}: go mod tidy (downloads modules on a cold cache)"
  go mod tidy
  log "agent-sandbox ${VERSION}: go build"
  go build -trimpath -ldflags "-s -w -X ${MOD}/internal/version.gitVersion=${VERSION}" \
    -o "$src/${NAME}" "${PKG}"
)
mv -f "$src/${NAME}" "$EXE"
rm -rf "$src"
log "agent-sandbox ${VERSION} ${NAME}: built in $((SECONDS - t0))s: $EXE"
echo "$EXE"
