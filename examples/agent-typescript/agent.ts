/**
 * A small agent on the TypeScript SDK: claim a sandbox from a warm pool, write a Python script into
 * it, run it, read the file the script wrote, and let the sandbox go (the claim is deleted when the
 * `await using` block ends, and on Ctrl-C). README.md, "How an agent uses a sandbox", walks through
 * it on the local control plane; `npm run demo` runs it there with everything set up.
 *
 * In your own project the import is `from '@cdk8s-agent-sandbox/sdk'`; here it is the SDK's source.
 * Settings (environment):
 *   SANDBOX_POOL       the SandboxWarmPool (default python-pool)
 *   SANDBOX_NAMESPACE  its namespace (default default)
 *   ROUTER_URL         the router's address (e.g. http://127.0.0.1:8080); unset: port-forward to
 *                      the router Service, as in a real cluster
 *   SANDBOX_TOKEN      the bearer token for the router (e.g. `kubectl create token agent`); unset:
 *                      the kubeconfig user's token, if it has one
 *   KUBECONFIG         the cluster's credentials (default ~/.kube/config)
 */
import { SandboxClient, SandboxError } from '../../sdk/src/index.js';

const SCRIPT = `import json, platform, statistics
samples = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5]
result = {"python": platform.python_version(), "mean": statistics.mean(samples), "median": statistics.median(samples)}
with open("out/result.json", "w") as f:
    json.dump(result, f)
print("computed", len(samples), "samples")
`;

async function main(): Promise<void> {
  const routerUrl = process.env.ROUTER_URL;
  await using client = new SandboxClient({
    namespace: process.env.SANDBOX_NAMESPACE ?? 'default',
    connection: routerUrl ? { mode: 'direct', url: routerUrl } : { mode: 'port-forward' },
    ...(process.env.SANDBOX_TOKEN ? { token: process.env.SANDBOX_TOKEN } : {}),
  });

  const started = performance.now();
  await using sandbox = await client.claim({ pool: process.env.SANDBOX_POOL ?? 'python-pool', ttl: '10m' });
  const readyMs = performance.now() - started;
  console.log(`claimed sandbox ${sandbox.name} (claim ${sandbox.claim}) in ${readyMs.toFixed(0)} ms`);

  await sandbox.files.write('task/analyze.py', SCRIPT);
  const run = await sandbox.run('mkdir -p out && python3 task/analyze.py', { timeoutMs: 30_000 });
  const firstResultMs = performance.now() - started;
  if (run.exitCode !== 0) throw new Error(`the script failed (exit ${run.exitCode}): ${run.stderr}`);
  process.stdout.write(`script said: ${run.stdout}`);

  const result = JSON.parse(await sandbox.files.readText('out/result.json'));
  console.log('result.json:', result);
  console.log(`claim -> Ready ${readyMs.toFixed(0)} ms, claim -> first result ${firstResultMs.toFixed(0)} ms`);
  // Leaving main() closes the sandbox (the claim is deleted) and the client.
}

main().catch((err: unknown) => {
  console.error(err instanceof SandboxError ? `${err.name}: ${err.message}` : err);
  process.exitCode = 1;
});
