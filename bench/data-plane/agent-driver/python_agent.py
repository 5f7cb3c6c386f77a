"""One batch of the `agent` benchmark with upstream's Python SDK (PyPI k8s-agent-sandbox, unchanged).

Started by driver.ts with the venv from hack/python-sdk-venv.sh. argv[1] is JSON: {routerUrl,
namespace, pool, agents, iterations}. Each agent (a thread with its own SandboxClient, direct to
the router) does `iterations` times: create_sandbox(warmpool) -> commands.run("echo ok") -> terminate,
timing the claim to the run's result. Prints the latencies in ms as one JSON array; an exception
propagates (exit code 1).
"""
import json
import sys
import threading
import time

from k8s_agent_sandbox import SandboxClient
from k8s_agent_sandbox.models import SandboxDirectConnectionConfig


def agent(config, samples, errors):
    try:
        client = SandboxClient(connection_config=SandboxDirectConnectionConfig(api_url=config["routerUrl"]))
        for _ in range(config["iterations"]):
            started = time.perf_counter()
            sandbox = client.create_sandbox(warmpool=config["pool"], namespace=config["namespace"], sandbox_ready_timeout=120)
            result = sandbox.commands.run("echo ok")
            elapsed = (time.perf_counter() - started) * 1000
            sandbox.terminate()
            if result.stdout != "ok\n":
                raise RuntimeError(f"run answered {result.stdout!r}")
            samples.append(elapsed)
    except Exception as err:  # noqa: BLE001 - reported to the driver
        errors.append(repr(err))


def main():
    config = json.loads(sys.argv[1])
    samples, errors = [], []
    threads = [threading.Thread(target=agent, args=(config, samples, errors)) for _ in range(config["agents"])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise SystemExit(f"python agents failed: {errors[0]}")
    print(json.dumps(samples))


main()
