/**
 * A small agent on the TypeScript SDK: claim a sandbox from a warm pool, write a Python script into
 * it, run it, read the file the script wrote, run a command whose output it prints line by line as
 * `onStdout` delivers it, suspend and resume the sandbox and read the file again (it is still there
 * when the template's workspace is a volume claim, `runtime.workspaceVolume`; an emptyDir workspace
 * goes with the Pod), and let the sandbox go (the claim is deleted when the `await using` block
 * ends, and on Ctrl-C). docs/router-and-runtime.md ("With the TypeScript SDK") walks through it
 * on the local control plane; `npm run demo` runs it there with everything set up.
 *
 * Suspending needs `patch` on the Sandbox (`SandboxAccess`'s `lifecycle: true`); without it the
 * agent says so and skips that step.
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
import { SandboxApiError, SandboxClient, SandboxError } from '../../sdk/src/index.js';

const SCRIPT = `import json, platform, statistics
samples = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5]
result = {"python": platform.python_version(), "mean": statistics.mean(samples), "median": statistics.median(samples)}
with open("out/result.json", "w") as f:
    json.dump(result, f)
print("computed", len(samples), "samples")
`;

/** Prints several lines with pauses: with streaming, each arrives on its own, about 0.4 s apart. */
const PROGRESS = 'for i in 1 2 3 4 5; do echo "step $i of 5"; sleep 0.4; done';

/** A chunk handler that prints each complete line with `prefix` and the time since `startedMs`. */
function linePrinter(prefix: string, startedMs: number): (chunk: string) => void {
  let partial = '';
  return (chunk) => {
    partial += chunk;
    for (let end = partial.indexOf('\n'); end >= 0; end = partial.indexOf('\n')) {
      console.log(`${prefix} +${(performance.now() - startedMs).toFixed(0).padStart(5)} ms | ${partial.slice(0, end)}`);
      partial = partial.slice(end + 1);
    }
  };
}

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

  const resultText = await sandbox.files.readText('out/result.json');
  console.log('result.json:', JSON.parse(resultText));
  console.log(`claim -> Ready ${readyMs.toFixed(0)} ms, claim -> first result ${firstResultMs.toFixed(0)} ms`);

  // Output as it is written: each line printed when onStdout delivers it (the runtime's streamed
  // /execute; a runtime without it delivers everything when the command ends).
  console.log(`streaming: ${PROGRESS}`);
  const progressStarted = performance.now();
  const progress = await sandbox.run(PROGRESS, { timeoutMs: 30_000, onStdout: linePrinter('  [stdout]', progressStarted) });
  if (progress.exitCode !== 0) throw new Error(`the progress command failed (exit ${progress.exitCode}): ${progress.stderr}`);

  // Suspend deletes the Pod (processes and files outside volumes go); resume makes a new one.
  const pausedAt = performance.now();
  try {
    await sandbox.suspend({ timeoutMs: 120_000 });
  } catch (err) {
    if (!(err instanceof SandboxApiError && err.status === 403)) throw err;
    console.log('suspend skipped: this identity may not patch the Sandbox (SandboxAccess lifecycle: true grants it)');
    return;
  }
  await sandbox.resume({ timeoutMs: 180_000 });
  const kept = await sandbox.files.exists('out/result.json') ? await sandbox.files.readText('out/result.json') : undefined;
  const took = `${(performance.now() - pausedAt).toFixed(0)} ms`;
  if (kept === resultText) console.log(`suspended and resumed in ${took}: out/result.json is still in the workspace, unchanged (its volume claim outlived the Pod)`);
  else if (kept === undefined) console.log(`suspended and resumed in ${took}: out/result.json is gone (this template's workspace is an emptyDir, which goes with the Pod; a volume claim keeps it)`);
  else throw new Error(`out/result.json changed across suspend and resume: ${kept}`);
  // Leaving main() closes the sandbox (the claim is deleted) and the client.
}

main().catch((err: unknown) => {
  console.error(err instanceof SandboxError ? `${err.name}: ${err.message}` : err);
  process.exitCode = 1;
});
