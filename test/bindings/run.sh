#!/usr/bin/env bash
# Builds the Python, Java and Go packages with jsii-pacmak (their registries are reachable here)
# and uses the Python one for real in a fresh virtualenv. Needs a compiled library (`npx projen compile`).
# Writes test-results/bindings.json with {passed, failed}.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=dist/packages
results=test-results
mkdir -p "$results"
passed=0 failed=0
step() { # step <name> <command...>
  local name=$1; shift
  local t0=$SECONDS
  if "$@" > "$results/bindings-$name.log" 2>&1; then
    passed=$((passed + 1)); echo "PASS $name ($((SECONDS - t0))s)"
  else
    failed=$((failed + 1)); echo "FAIL $name ($((SECONDS - t0))s); last lines of $results/bindings-$name.log:"; tail -20 "$results/bindings-$name.log"
  fi
}
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20

step pacmak-python npx jsii-pacmak --target python -o "$out"
step pacmak-java npx jsii-pacmak --target java -o "$out"
step pacmak-go npx jsii-pacmak --target go -o "$out"

step wheel-files python3 test/bindings/wheel_files.py "$(ls "$out"/python/*.whl)"

venv=$(mktemp -d)/venv
python_smoke() {
  python3 -m venv "$venv" &&
    "$venv/bin/pip" install --quiet "$out"/python/*.whl &&
    "$venv/bin/python" test/bindings/smoke.py
}
step python-smoke python_smoke
# README's Python install program, run as written, writes what its TypeScript twin writes.
step readme-python-install python3 test/bindings/readme_install.py "$venv/bin/python"
rm -rf "$(dirname "$venv")"

echo "{\"passed\": $passed, \"failed\": $failed}" > "$results/bindings.json"
echo "bindings: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
