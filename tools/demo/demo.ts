/**
 * `npm run demo`: the whole system on this machine, with nothing else to install. Starts the local
 * control plane (building its binaries on first use, with progress), installs the synthesized CRDs,
 * runs the operator and the router as local processes (the pod runner runs sandbox Pods as local
 * runtime processes), creates a SandboxTemplate and a warm pool (local-system.ts), then runs the
 * TypeScript agent of examples/agent-typescript against it through the router: it claims a sandbox,
 * writes and runs a Python program, prints its output and the claim → Ready and claim → first
 * result latencies. Everything it started is stopped at the end, also on Ctrl-C.
 *
 * `--real-nodes` (root): the same agent against a real node instead (real-system.ts): the operator
 * and the router as Pods of the image built from operator/Dockerfile, a gVisor warm pool of the
 * stock Python image with the runtime injected, and the agent reaching the router through the
 * port-forward the SDK opens, with a ServiceAccount token.
 */
import { execFileSync, spawn } from 'child_process';
import * as path from 'path';
import { Kube } from '../control-plane/kube';
import { LocalSystem, NAMESPACE, startLocalSystem } from '../shared/local-system';
import { agentServiceAccount, pythonPoolObjects } from '../shared/real-pool';
import { startRealSystem } from '../shared/real-system';

const ROOT = path.resolve(__dirname, '..', '..');
const AGENT_SOURCE = path.join(ROOT, 'examples', 'agent-typescript', 'agent.ts');
const AGENT_BUNDLE = path.join(ROOT, 'examples', 'agent-typescript', 'dist', 'agent.mjs');
const POOL = 'python-pool';
/** Each demo sandbox's workspace claim: files there survive suspend and resume, which the agent shows. */
const WORKSPACE_STORAGE = '1Gi';
const say = (m: string) => process.stderr.write(`[demo] ${m}\n`);

let system: Pick<LocalSystem, 'kube'> | undefined;
let stopSystem: () => Promise<void> = async () => undefined;
const REAL_NODES = process.argv.includes('--real-nodes');

/** The real-node system, a gVisor warm pool on it, and what the agent needs to reach it. */
async function startReal(): Promise<{ kube: Kube; env: Record<string, string> }> {
  const real = await startRealSystem({ log: say, onStop: (stop) => (stopSystem = stop) });
  say(`creating a gVisor SandboxTemplate "python" of the stock Python image and SandboxWarmPool "${POOL}" (2 warm sandboxes, each with a ${WORKSPACE_STORAGE} workspace claim of the local-path StorageClass)`);
  const pool = pythonPoolObjects(NAMESPACE, POOL, { image: real.images['python-sandbox'], replicas: 2, runtimeClass: 'gvisor', workspaceStorage: WORKSPACE_STORAGE });
  await real.kube.applyServerSide([...pool, ...agentServiceAccount(NAMESPACE)], 'demo');
  await real.kube.wait([`sandboxwarmpool/${POOL}`, '--for=jsonpath={.status.readyReplicas}=2'], NAMESPACE, 240_000);
  const token = (await real.kube.kubectl(['create', 'token', 'agent', '-n', NAMESPACE, '--duration=1h'])).trim();
  return { kube: real.kube, env: { KUBECONFIG: real.cp.kubeconfig, SANDBOX_TOKEN: token } };
}

async function main(): Promise<void> {
  say('building the example agent');
  execFileSync('npx', ['esbuild', AGENT_SOURCE, '--bundle', '--platform=node', '--target=node20', '--format=esm', '--packages=external', `--outfile=${AGENT_BUNDLE}`, '--log-level=warning'], { cwd: ROOT, stdio: 'inherit' });
  let env: Record<string, string>;
  if (REAL_NODES) {
    const real = await startReal();
    system = real;
    env = real.env;
    say('running the agent (examples/agent-typescript) through a port-forward to the router Service on the real node');
  } else {
    const local = await startLocalSystem({
      pool: POOL, replicas: 2, workspaceStorage: WORKSPACE_STORAGE, log: say, onStop: (stop) => (stopSystem = stop),
    });
    system = local;
    env = { KUBECONFIG: local.kubeconfig, ROUTER_URL: local.routerUrl };
    say(`running the agent (examples/agent-typescript) through the router at ${local.routerUrl}`);
  }
  const code = await new Promise<number | null>((resolve) => {
    const agent = spawn(process.execPath, [AGENT_BUNDLE], {
      stdio: 'inherit',
      env: { ...process.env, ...env, SANDBOX_POOL: POOL, SANDBOX_NAMESPACE: NAMESPACE },
    });
    agent.on('exit', (c) => resolve(c));
  });
  if (code !== 0) throw new Error(`the agent failed (exit ${code})`);
  const left = (await system.kube.kubectl(['get', 'sandboxclaims', '-n', NAMESPACE, '-o', 'name'])).trim();
  if (left !== '') throw new Error(`the agent left claims behind: ${left}`);
  say('done: the agent closed its claim (none left), the pool refills; stopping everything');
}

async function stopAll(): Promise<void> {
  await stopSystem();
}

let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (interrupted) process.exit(130);
    interrupted = true;
    say(`${signal}: stopping everything`);
    void stopAll().then(() => process.exit(130));
  });
}

main().then(stopAll, async (err: unknown) => {
  say(`failed: ${(err as Error).message}`);
  await stopAll();
  process.exitCode = 1;
});
