#!/usr/bin/env bash
# Builds actionlint (the GitHub Actions workflow linter) from its Go module, or reuses the cached
# build, in the same cache as the control-plane binaries (hack/build-control-plane.sh). The binary is
# built into a temporary directory and moved into place whole. Prints its path on the last line.
set -euo pipefail

ACTIONLINT_VERSION="${ACTIONLINT_VERSION:-v1.7.12}"
CACHE_ROOT="${AGENT_SANDBOX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cdk8s-agent-sandbox}"
BIN="${CACHE_ROOT}/bin/actionlint-${ACTIONLINT_VERSION}"

if [ -x "$BIN/actionlint" ] && [ "$("$BIN/actionlint" -version 2>/dev/null | head -1)" = "$ACTIONLINT_VERSION" ]; then
  echo "$BIN/actionlint"
  exit 0
fi
mkdir -p "$BIN"
tmp=$(mktemp -d "$BIN/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "[install-actionlint] go install github.com/rhysd/actionlint/cmd/actionlint@${ACTIONLINT_VERSION}" >&2
CGO_ENABLED=0 GOFLAGS="${GOFLAGS:--buildvcs=false}" GOBIN="$tmp" \
  go install -trimpath -ldflags "-s -w -X github.com/rhysd/actionlint.version=${ACTIONLINT_VERSION}" \
  "github.com/rhysd/actionlint/cmd/actionlint@${ACTIONLINT_VERSION}" >&2
mv -f "$tmp/actionlint" "$BIN/actionlint"
echo "$BIN/actionlint"
