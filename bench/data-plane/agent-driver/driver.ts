/**
 * The `agent` benchmark's load generator, run as its own Node process (it uses the SDK, an ESM
 * package; bench/data-plane/agent.ts bundles it with esbuild and starts it). One iteration is what an
 * agent does: claim a sandbox from the pool → the first `run("echo ok")` result → close the claim.
 * Timed: claim start → that result. Up to three ways, rotating which goes first in each batch:
 *   sdk:    the TypeScript SDK (SandboxClient.claim, Sandbox.run, Sandbox.close), direct to the router;
 *   floor:  the same steps as bare HTTP calls (POST the claim, one watch until Ready, POST /execute
 *           through the router, DELETE the claim), with the same credentials;
 *   python: upstream's Python SDK 1.0.8 (python_agent.py, threads as agents), direct to the router,
 *           when `python` (the venv's interpreter) is given.
 * Before each batch the pool is full again (its Ready members waited for on a watch), so every claim
 * is served warm; the claims served cold anyway are counted (sdk, floor).
 * Input: JSON in argv[2]; output: one JSON object on stdout.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as http from 'node:http';
import * as https from 'node:https';
import * as path from 'node:path';
import { KubeConfig, Watch } from '@kubernetes/client-node';
import { SandboxClient } from '../../../sdk/src/index.js';

interface DriverInput {
  /** The repository's root. */
  root: string;
  kubeconfig: string;
  routerUrl: string;
  namespace: string;
  pool: string;
  replicas: number;
  repeats: number;
  /** Agents at once: 1 runs `replicas` iterations one after another; n > 1 runs n agents once each. */
  concurrency: number[];
  /** The Python SDK venv's interpreter; unset: no python way. */
  python?: string;
}

type Way = 'sdk' | 'floor' | 'python';

/** claim → Ready (ms) per iteration, by way: where the time goes. */
const phases: Array<[Way, number]> = [];
/** The batch running now (`c<concurrency>`) and, per way and batch size, claim → Ready and Ready → first result (ms). */
let batch = '';
const split: Record<string, { ready: number[]; result: number[] }> = {};
function phase(way: Way, started: number, readyAt: number, resultAt: number): void {
  const s = (split[`${way}/${batch}`] ??= { ready: [], result: [] });
  s.ready.push(readyAt - started);
  s.result.push(resultAt - readyAt);
}
/** Claims served by a cold start (a Sandbox made for the claim, named after it), by way: a batch should have none. */
const coldStarts: Record<'sdk' | 'floor', number> = { sdk: 0, floor: 0 };

const input: DriverInput = JSON.parse(process.argv[2]);
const ROOT = input.root;
const kc = new KubeConfig();
kc.loadFromFile(input.kubeconfig);
const server = kc.getCurrentCluster()!.server;
const claimsPath = `/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/${input.namespace}/sandboxclaims`;

/** One request to the API server with the kubeconfig's credentials; resolves with the parsed body. */
async function api(method: string, path: string, body?: object): Promise<any> {
  const options: https.RequestOptions = { method, headers: { 'content-type': 'application/json' } };
  await kc.applyToHTTPSOptions(options);
  return new Promise((resolve, reject) => {
    const req = https.request(new URL(`${server}${path}`), options, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        if ((res.statusCode ?? 0) >= 300) return reject(new Error(`${method} ${path}: HTTP ${res.statusCode} ${text.slice(0, 200)}`));
        resolve(text ? JSON.parse(text) : undefined);
      });
    });
    req.on('error', reject);
    req.end(body ? JSON.stringify(body) : undefined);
  });
}

/** Watches `path` (one object by name) until `done(object)`; the watch replays the current state first. */
function watchUntil(path: string, name: string, done: (obj: any) => boolean): Promise<any> {
  return new Promise((resolve, reject) => {
    let controller: AbortController | undefined;
    let finished = false;
    void new Watch(kc).watch(path, { fieldSelector: `metadata.name=${name}` }, (_type, obj) => {
      if (!finished && done(obj)) {
        finished = true;
        controller?.abort();
        resolve(obj);
      }
    }, (err) => {
      if (!finished) reject(err ?? new Error(`the watch of ${name} ended`));
    }).then((c) => {
      controller = c;
      if (finished) c.abort();
    }, reject);
  });
}

/** One batch of the Python SDK's agents (timed inside Python, so its start-up is not counted). */
function pythonBatch(agents: number, iterations: number): number[] {
  const script = path.join(ROOT, 'bench', 'data-plane', 'agent-driver', 'python_agent.py');
  const config = { routerUrl: input.routerUrl, namespace: input.namespace, pool: input.pool, agents, iterations };
  const out = execFileSync(input.python!, [script, JSON.stringify(config)], { env: { ...process.env, KUBECONFIG: input.kubeconfig }, stdio: ['ignore', 'pipe', 'inherit'] });
  return JSON.parse(out.toString()) as number[];
}

const readyCondition = (obj: any): boolean => (obj.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True');
const ready = (claim: any) => Boolean(claim.status?.sandbox?.name) && readyCondition(claim);

async function floorIteration(agent: http.Agent): Promise<number> {
  const started = performance.now();
  const name = `floor-${randomBytes(4).toString('hex')}`;
  await api('POST', claimsPath, {
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1', kind: 'SandboxClaim', metadata: { name }, spec: { warmPoolRef: { name: input.pool } },
  });
  const claim = await watchUntil(claimsPath, name, ready);
  const readyAt = performance.now();
  phases.push(['floor', readyAt - started]);
  if (claim.status.sandbox.name === name) coldStarts.floor++;
  const body = JSON.stringify({ command: 'echo ok' });
  const url = new URL(input.routerUrl);
  const stdout = await new Promise<string>((resolve, reject) => {
    const req = http.request({
      agent,
      host: url.hostname,
      port: url.port,
      method: 'POST',
      path: '/execute',
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'X-Sandbox-ID': claim.status.sandbox.name, 'X-Sandbox-Namespace': input.namespace },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(Buffer.concat(chunks).toString()).stdout) : reject(new Error(`execute: HTTP ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(body);
  });
  const resultAt = performance.now();
  phase('floor', started, readyAt, resultAt);
  if (stdout !== 'ok\n') throw new Error(`execute answered ${JSON.stringify(stdout)}`);
  await api('DELETE', `${claimsPath}/${name}`);
  return resultAt - started;
}

async function sdkIteration(client: SandboxClient): Promise<number> {
  const started = performance.now();
  const sandbox = await client.claim({ pool: input.pool });
  const readyAt = performance.now();
  phases.push(['sdk', readyAt - started]);
  if (sandbox.name === sandbox.claim) coldStarts.sdk++;
  const result = await sandbox.run('echo ok', { shell: false });
  const resultAt = performance.now();
  phase('sdk', started, readyAt, resultAt);
  if (result.stdout !== 'ok\n') throw new Error(`run answered ${JSON.stringify(result)}`);
  await sandbox.close();
  return resultAt - started;
}

/** One agent: its own client (SDK) or connection pool (floor), `iterations` claims one after another. */
async function agentLoop(way: Way, iterations: number): Promise<number[]> {
  const samples: number[] = [];
  if (way === 'sdk') {
    const client = new SandboxClient({ kubeconfig: input.kubeconfig, namespace: input.namespace, connection: { mode: 'direct', url: input.routerUrl }, token: null });
    try {
      for (let i = 0; i < iterations; i++) samples.push(await sdkIteration(client));
    } finally {
      await client.close();
    }
  } else {
    const agent = new http.Agent({ keepAlive: true });
    try {
      for (let i = 0; i < iterations; i++) samples.push(await floorIteration(agent));
    } finally {
      agent.destroy();
    }
  }
  return samples;
}

/**
 * Until `replicas` Ready, unclaimed members of the pool: the pool's status first, then the members
 * themselves (the Sandboxes with the status's selector; adoption takes the label off), because the
 * status's counts may be a second behind (the operator's --sandbox-warm-pool-status-window): a batch
 * started right after the previous one on such a count met an emptied pool and cold starts.
 */
async function poolFull(): Promise<void> {
  const pools = `/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/${input.namespace}/sandboxwarmpools`;
  const pool = await watchUntil(pools, input.pool, (p) => p.status?.readyReplicas === input.replicas && Boolean(p.status?.selector));
  const sandboxes = `/apis/agents.x-k8s.io/v1beta1/namespaces/${input.namespace}/sandboxes`;
  const members = new Map<string, boolean>();
  await new Promise<void>((resolve, reject) => {
    let controller: AbortController | undefined;
    let finished = false;
    void new Watch(kc).watch(sandboxes, { labelSelector: pool.status.selector }, (type, obj: any) => {
      if (finished) return;
      if (type === 'DELETED') members.delete(obj.metadata.name);
      else members.set(obj.metadata.name, !obj.metadata.deletionTimestamp && readyCondition(obj));
      if ([...members.values()].filter(Boolean).length >= input.replicas) {
        finished = true;
        controller?.abort();
        resolve();
      }
    }, (err) => {
      if (!finished) reject(err ?? new Error(`the watch of pool ${input.pool}'s members ended`));
    }).then((c) => {
      controller = c;
      if (finished) c.abort();
    }, reject);
  });
}

async function main(): Promise<void> {
  const samples: Record<string, number[]> = {};
  for (let r = 0; r < input.repeats; r++) {
    for (const concurrency of input.concurrency) {
      const ways: Way[] = input.python ? ['sdk', 'floor', 'python'] : ['sdk', 'floor'];
      const order = ways.map((_, i) => ways[(i + r) % ways.length]);
      batch = `c${concurrency}`;
      for (const way of order) {
        await poolFull();
        const agents = concurrency === 1 ? 1 : concurrency;
        const iterations = concurrency === 1 ? input.replicas : 1;
        const results = way === 'python'
          ? [pythonBatch(agents, iterations)]
          : await Promise.all(Array.from({ length: agents }, () => agentLoop(way, iterations)));
        (samples[`${way}/c${concurrency}`] ??= []).push(...results.flat());
      }
    }
  }
  const readyMs = { sdk: phases.filter(([w]) => w === 'sdk').map(([, ms]) => ms), floor: phases.filter(([w]) => w === 'floor').map(([, ms]) => ms) };
  process.stdout.write(`${JSON.stringify({ samples, readyMs, split, coldStarts })}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exitCode = 1;
});
