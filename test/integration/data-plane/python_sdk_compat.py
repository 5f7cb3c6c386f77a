"""Upstream's Python SDK (PyPI k8s-agent-sandbox, unchanged) against our router, runtime and operator.

Run by python-sdk.test.ts with the venv from hack/python-sdk-venv.sh. One argument picks the
connection: `router` (SandboxDirectConnectionConfig to our router's URL, with a bearer token in
extra_headers, so the legacy runtime API on 8888 is reached through the router) or `sandboxd`
(SandboxdInClusterConnectionConfig in pod-IP mode: sandboxd's gRPC ProcessService and REST
FilesystemService straight on the Pod's IP). Environment: KUBECONFIG, SANDBOX_NAMESPACE,
SANDBOX_POOL, and ROUTER_URL / ROUTER_TOKEN for `router`.

Prints one JSON object with what each SDK call returned; the test asserts on it. Any exception
propagates (exit code 1, traceback on stderr), so a failure names the call that failed.
"""
import json
import os
import sys

from k8s_agent_sandbox import SandboxClient
from k8s_agent_sandbox.models import SandboxDirectConnectionConfig, SandboxdInClusterConnectionConfig


def connection(mode):
    if mode == "router":
        return SandboxDirectConnectionConfig(
            api_url=os.environ["ROUTER_URL"],
            extra_headers={"Authorization": "Bearer " + os.environ["ROUTER_TOKEN"]},
        )
    if mode == "sandboxd":
        return SandboxdInClusterConnectionConfig(mode="in-cluster-pod-ip")
    raise SystemExit(f"unknown mode {mode!r}: use router or sandboxd")


def result(r):
    return {"stdout": r.stdout, "stderr": r.stderr, "exit_code": r.exit_code, "timed_out": r.timed_out}


def main():
    mode = sys.argv[1]
    namespace, pool = os.environ["SANDBOX_NAMESPACE"], os.environ["SANDBOX_POOL"]
    out = {"mode": mode}
    client = SandboxClient(connection_config=connection(mode))
    sandbox = client.create_sandbox(warmpool=pool, namespace=namespace, sandbox_ready_timeout=120)
    out["claim"] = sandbox.claim_name
    out["sandbox"] = sandbox.sandbox_id
    try:
        out["run"] = result(sandbox.commands.run("echo hello"))
        out["run_exit"] = result(sandbox.commands.run("sh -c 'echo oops >&2; exit 3'"))
        out["run_timeout"] = result(sandbox.commands.run("sleep 30", command_timeout=1))
        sandbox.files.write("dir/sub/hello.txt", b"hello from python")
        out["read"] = sandbox.files.read("dir/sub/hello.txt").decode()
        out["list"] = sorted((e.name, e.type) for e in sandbox.files.list("dir/sub"))
        out["exists"] = sandbox.files.exists("dir/sub/hello.txt")
        out["exists_missing"] = sandbox.files.exists("dir/nope.txt")
        if mode == "sandboxd":
            sandbox.files.delete("dir", recursive=True)
            out["exists_after_delete"] = sandbox.files.exists("dir/sub/hello.txt")
    finally:
        sandbox.terminate()
    out["terminated"] = sandbox.claim_name is None
    print(json.dumps(out))


if __name__ == "__main__":
    main()
