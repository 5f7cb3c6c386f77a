/**
 * `npm run demo`: the whole system on this machine, with nothing else to install. Starts the local
 * control plane (building its binaries on first use, with progress), installs the synthesized CRDs,
 * runs the operator and the router as local processes (the pod runner runs sandbox Pods as local
 * runtime processes), creates a SandboxTemplate and a warm pool, then runs the TypeScript agent of
 * examples/agent-typescript against it through the router: it claims a sandbox, writes and runs a
 * Python program, prints its output and the claim → Ready and claim → first result latencies.
 * Everything it started is stopped at the end, also on Ctrl-C.
 */
import { execFileSync, spawn } from 'child_process';
import * as path from 'path';
import { writeCrds } from '../../bench/crds';
import { OperatorProcess } from '../../test/integration/operator/operator-process';
import { ControlPlane, startControlPlane } from '../control-plane/control-plane';
import { Kube } from '../control-plane/kube';
import { RUN_LABEL } from '../control-plane/pod-runner';

const ROOT = path.resolve(__dirname, '..', '..');
const AGENT_SOURCE = path.join(ROOT, 'examples', 'agent-typescript', 'agent.ts');
const AGENT_BUNDLE = path.join(ROOT, 'examples', 'agent-typescript', 'dist', 'agent.mjs');
const POOL = 'python-pool';
const say = (m: string) => process.stderr.write(`[demo] ${m}\n`);

const stops: Array<() => Promise<unknown>> = [];

async function main(): Promise<void> {
  say('building the operator bundle and the example agent');
  execFileSync('npx', ['projen', 'operator:build'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  execFileSync('npx', ['esbuild', AGENT_SOURCE, '--bundle', '--platform=node', '--target=node20', '--format=esm', '--packages=external', `--outfile=${AGENT_BUNDLE}`, '--log-level=warning'], { cwd: ROOT, stdio: 'inherit' });

  say('starting the local control plane (the first run builds its binaries: about 15 minutes)');
  // The synthesized CRDs go in before the controllers start.
  const cp: ControlPlane = await startControlPlane({ manifests: [writeCrds()], log: (m) => say(m) });
  stops.unshift(() => cp.stop());
  const kube = new Kube({ kubeconfig: cp.kubeconfig, binDir: cp.binDir });

  say('starting the operator and the router');
  const operator = await OperatorProcess.start({ kubeconfig: cp.kubeconfig, args: ['--extensions=true'] });
  stops.unshift(() => operator.stop());
  const router = await OperatorProcess.startRouter({ kubeconfig: cp.kubeconfig, args: ['--auth=none', '--allowed-pod-cidrs=127.64.0.0/12'] });
  stops.unshift(() => router.stop());
  const routerUrl = `http://127.0.0.1:${await router.port('proxy')}`;

  say(`creating SandboxTemplate "python" and SandboxWarmPool "${POOL}" (2 warm sandboxes)`);
  await kube.applyServerSide([template('python'), pool(POOL, 'python', 2)], 'demo', 'default');
  await kube.wait([`sandboxwarmpool/${POOL}`, '--for=jsonpath={.status.readyReplicas}=2'], 'default', 120_000);

  say(`running the agent (examples/agent-typescript) through the router at ${routerUrl}`);
  const code = await new Promise<number | null>((resolve) => {
    const agent = spawn(process.execPath, [AGENT_BUNDLE], {
      stdio: 'inherit',
      env: { ...process.env, KUBECONFIG: cp.kubeconfig, ROUTER_URL: routerUrl, SANDBOX_POOL: POOL, SANDBOX_NAMESPACE: 'default' },
    });
    agent.on('exit', (c) => resolve(c));
  });
  if (code !== 0) throw new Error(`the agent failed (exit ${code})`);
  const left = (await kube.kubectl(['get', 'sandboxclaims', '-n', 'default', '-o', 'name'])).trim();
  if (left !== '') throw new Error(`the agent left claims behind: ${left}`);
  say('done: the agent closed its claim (none left), the pool refills; stopping everything');
}

function template(name: string): object {
  return {
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'SandboxTemplate',
    metadata: { name },
    spec: {
      podTemplate: {
        // The pod runner runs Pods with this label as local processes on their loopback pod IP.
        metadata: { labels: { [RUN_LABEL]: 'true', app: 'agent' } },
        spec: {
          containers: [{
            name: 'runtime',
            image: 'example.invalid/agent-sandbox-operator:local',
            command: ['agent-sandbox-operator', 'runtime', '--port=8888'],
            ports: [{ containerPort: 8888 }],
          }],
        },
      },
    },
  };
}

function pool(name: string, templateName: string, replicas: number): object {
  return { apiVersion: 'extensions.agents.x-k8s.io/v1beta1', kind: 'SandboxWarmPool', metadata: { name }, spec: { replicas, sandboxTemplateRef: { name: templateName } } };
}

async function stopAll(): Promise<void> {
  for (const stop of stops.splice(0)) await stop().catch((err) => say(`stopping: ${(err as Error).message}`));
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
