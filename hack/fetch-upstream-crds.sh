#!/usr/bin/env bash
# Puts upstream's Go module sigs.k8s.io/agent-sandbox at the version our CRDs are compared with into
# the Go module cache (the same cache hack/build-upstream-controller.sh's builds fill), with the
# ordinary `go mod download`. test/api/upstream-crds.test.ts reads the module's k8s/crds/ from that
# cache without going to the network, and fails, naming this script, when it is not there.
#
# Version: the first argument, else UPSTREAM_CRDS_VERSION, else the one below (the test checks that
# this default is the version it pins). Prints the CRD directory on the last line of stdout.
set -euo pipefail

VERSION="${1:-${UPSTREAM_CRDS_VERSION:-v1.0.1}}"
MOD=sigs.k8s.io/agent-sandbox

# Outside any module, so no go.mod around the work tree is consulted or changed.
if ! json=$(cd "${TMPDIR:-/tmp}" && GOFLAGS=-mod=mod go mod download -json "${MOD}@${VERSION}"); then
  echo "[fetch-upstream-crds] go mod download ${MOD}@${VERSION} failed: ${json}" >&2
  exit 1
fi
dir=$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
if [ -z "$dir" ] || [ ! -d "$dir/k8s/crds" ]; then
  echo "[fetch-upstream-crds] ${MOD}@${VERSION}: no k8s/crds/ in the downloaded module (go mod download said: ${json})" >&2
  exit 1
fi
echo "[fetch-upstream-crds] ${MOD}@${VERSION}: $(ls "$dir/k8s/crds" | wc -l) CRD files in $dir/k8s/crds" >&2
echo "$dir/k8s/crds"
