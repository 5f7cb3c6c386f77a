#!/usr/bin/env bash
# plot.sh <results.json> <out.png>: the latency-distribution plot, with matplotlib from PyPI in a
# cached venv (created on first use, outside the work tree).
set -euo pipefail
VENV="${BENCH_VENV_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/cdk8s-agent-sandbox/bench-venv}"
if ! "$VENV/bin/python" -c 'import matplotlib' 2>/dev/null; then
  echo "[plot] creating $VENV with matplotlib" >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q matplotlib
fi
exec "$VENV/bin/python" "$(dirname "$0")/plot.py" "$@"
