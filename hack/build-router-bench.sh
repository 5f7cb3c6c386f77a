#!/usr/bin/env bash
# What the router benchmark (bench/data-plane/router.ts) runs besides this project's router:
#   - wrk, the HTTP load generator, from Debian's packages (installed when missing; needs root);
#   - bench/data-plane/routerload, the benchmark's Go backend and its WebSocket and gRPC load
#     generator, built into the cache under a hash of its sources and reused while that holds;
#   - upstream's Go router, via hack/build-upstream-controller.sh router (the version-keyed cache).
# Prints `wrk <path>`, `routerload <path>` and `sandbox-router <path>`, one per line, last.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE_ROOT="${AGENT_SANDBOX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cdk8s-agent-sandbox}"
log() { printf '[build-router-bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

if ! command -v wrk >/dev/null; then
  [ "$(id -u)" = 0 ] || { log "wrk is missing and installing it needs root (apt-get install wrk)"; exit 1; }
  log "installing wrk from Debian"
  apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends wrk >&2
fi

src=bench/data-plane/routerload
key=$(cat "$0" "$src/go.mod" "$src/go.sum" "$src"/*.go | sha256sum | cut -c1-16)
load="$CACHE_ROOT/testbin/routerload-$key/routerload"
if [ ! -x "$load" ]; then
  log "routerload $key: go build"
  mkdir -p "$(dirname "$load")"
  (cd "$src" && CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -trimpath -ldflags "-s -w" -o "$load.tmp" .)
  mv -f "$load.tmp" "$load"
fi

router=$(hack/build-upstream-controller.sh router | tail -n 1)
echo "wrk $(command -v wrk)"
echo "routerload $load"
echo "sandbox-router $router"
