#!/usr/bin/env bash
# Makes (or reuses) a Python virtualenv with upstream's Python SDK, k8s-agent-sandbox 1.0.8 and its
# "grpc" extra (grpcio, protobuf). The SDK ships the generated gRPC stubs of sandboxd's
# ProcessService (k8s_agent_sandbox._proto.process.v1).
# Tests drive our runtime's gRPC server with those stubs, so the wire format is checked against
# upstream's own code rather than against ours.
#
# The venv lives outside the work tree, in a version-keyed cache directory. It is built in a
# temporary directory and moved into place only once the install and an import check succeeded,
# so an interrupted run leaves nothing half-made and the next run simply builds again.
#
# Prints the venv's python on the last line of stdout.
set -euo pipefail

SDK_VERSION="${SDK_VERSION:-1.0.8}"
PYTHON="${PYTHON:-python3}"
CACHE_ROOT="${AGENT_SANDBOX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cdk8s-agent-sandbox}"
VENV="${CACHE_ROOT}/python-sdk-${SDK_VERSION}"
# The SDK's own import shim for the stubs (it puts _proto on sys.path, as the generated code needs).
CHECK='from k8s_agent_sandbox.commands._process_stubs import process_pb2, process_pb2_grpc'

log() { printf '[python-sdk-venv %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "$CHECK" 2>/dev/null; then
  echo "$VENV/bin/python"
  exit 0
fi

mkdir -p "$CACHE_ROOT"
TMP="$(mktemp -d "${CACHE_ROOT}/.python-sdk-${SDK_VERSION}.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
log "creating a venv with k8s-agent-sandbox==${SDK_VERSION} (first run only)"
"$PYTHON" -m venv "$TMP"
"$TMP/bin/python" -m pip install --quiet "k8s-agent-sandbox[grpc]==${SDK_VERSION}" >&2
"$TMP/bin/python" -c "$CHECK"
# Only `python -m ...` is used, so the moved venv works (its console scripts' shebangs would not).
rm -rf "$VENV"
mv "$TMP" "$VENV"
trap - EXIT
log "ready: $VENV"
echo "$VENV/bin/python"
