/**
 * Idle sandboxes sleep and wake: `npx ts-node --transpile-only bench/idle.ts [--resumes N] [--agents N]
 * [--churn-seconds S] [--no-real-nodes]` (root for real nodes; `npm run bench:idle`).
 *
 * 1. Resume latency: a claim with `idlePolicy.suspendAfterSeconds: 2` is used once, left until the
 *    operator has suspended it (spec.operatingMode Suspended, its Pod gone), then `POST /execute`
 *    of `echo ok` goes through the router, which resumes the Sandbox and holds the request until it
 *    is Ready. Timed from the request to its first byte (the response head) and to the whole answer.
 *    On the KWOK control plane with the pod runner (the runtime as a local process), and, unless
 *    --no-real-nodes, on a real node (kubelet, containerd) under runc and under gVisor, with the
 *    operator and router as Pods of the local image (tools/shared/real-system.ts).
 * 2. Reservations given back: N agents on the KWOK control plane each hold a claim for
 *    --churn-seconds and alternate bursts of two commands with think times of 1, 4 or 10 s,
 *    once without an idle policy and once with a 2 s one, the same schedule both times. Every
 *    250 ms the CPU and memory requests of the claimed sandboxes' Pods are summed; the report is the
 *    mean reservation of each run, what the policy gave back, and what it cost the commands (their
 *    latency, the ones that woke a sandbox included).
 * Results: bench/results/idle-<time>.json and .md.
 */
import * as fs from 'fs';
import * as http from 'http';
import * as path from 'path';
import { Chart, Duration, Testing } from 'cdk8s';
import { ROOT } from './controllers';
import { flagValue } from './flags';
import { type Stats, round, stats } from './measure';
import { environment } from './report';
import { SandboxRuntimeClass } from '../src/runtime-class';
import { SandboxTemplate } from '../src/template';
import { SandboxWarmPool } from '../src/warm-pool';
import { ApiClient, connectionFromKubeconfig } from '../tools/control-plane/api';
import { sleep } from '../tools/control-plane/processes';
import { NAMESPACE, startLocalSystem } from '../tools/shared/local-system';
import { agentServiceAccount } from '../tools/shared/real-pool';
import { SYSTEM_NAMESPACE, startRealSystem } from '../tools/shared/real-system';

const log = (m: string) => process.stderr.write(`[bench idle] ${m}\n`);
const CLAIMS = (ns: string) => `/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxclaims`;
const SANDBOXES = (ns: string) => `/apis/agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxes`;
const SUSPEND_AFTER_SECONDS = 2;
const isReady = (o: any) => o?.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True');

interface Router { readonly url: string; readonly token?: string }

/** One `POST /execute` through the router: ms to the response head and to the whole answer. */
function execute(router: Router, ns: string, sandbox: string, command: string): Promise<{ headMs: number; totalMs: number }> {
  const t0 = performance.now();
  const body = JSON.stringify({ command });
  return new Promise((resolve, reject) => {
    const req = http.request(`${router.url}/execute`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        'x-sandbox-id': sandbox,
        'x-sandbox-namespace': ns,
        'x-sandbox-timeout': '120',
        ...(router.token ? { authorization: `Bearer ${router.token}` } : {}),
      },
    }, (res) => {
      const headMs = performance.now() - t0;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        if (res.statusCode !== 200) return reject(new Error(`/execute on ${sandbox}: HTTP ${res.statusCode} ${text}`));
        resolve({ headMs, totalMs: performance.now() - t0 });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A claim on `pool`, with an idle policy when `suspendAfterSeconds` is given; resolves to its Sandbox's name once Ready. */
async function claim(api: ApiClient, ns: string, pool: string, name: string, suspendAfterSeconds?: number): Promise<string> {
  await api.call('POST', CLAIMS(ns), {
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'SandboxClaim',
    metadata: { name },
    spec: { warmPoolRef: { name: pool }, ...(suspendAfterSeconds ? { idlePolicy: { suspendAfterSeconds } } : {}) },
  });
  const t0 = performance.now();
  for (;;) {
    const c = (await api.request('GET', `${CLAIMS(ns)}/${name}`)).body;
    if (isReady(c) && c.status?.sandbox?.name) return c.status.sandbox.name;
    if (performance.now() - t0 > 300_000) throw new Error(`claim ${name} not Ready after 300 s`);
    await sleep(20);
  }
}

/** Until the operator has suspended `sandbox` for idleness and its Pod is gone. */
async function suspended(api: ApiClient, ns: string, sandbox: string): Promise<void> {
  const t0 = performance.now();
  for (;;) {
    const sb = (await api.request('GET', `${SANDBOXES(ns)}/${sandbox}`)).body;
    const gone = sb?.spec?.operatingMode === 'Suspended'
      && sb.status?.conditions?.some((c: any) => c.type === 'Suspended' && c.status === 'True');
    if (gone) return;
    if (performance.now() - t0 > 120_000) throw new Error(`sandbox ${sandbox} not suspended after 120 s`);
    await sleep(100);
  }
}

interface ResumeRun { headMs: number[]; totalMs: number[] }

/** `n` rounds of: claim, use, wait for the idle suspension, time the waking request, delete the claim. */
async function resumes(api: ApiClient, ns: string, pool: string, router: Router, n: number, label: string): Promise<ResumeRun> {
  const out: ResumeRun = { headMs: [], totalMs: [] };
  for (let i = -1; i < n; i++) {
    const name = `idle-${label}-${i + 1}`;
    const sandbox = await claim(api, ns, pool, name, SUSPEND_AFTER_SECONDS);
    await execute(router, ns, sandbox, 'echo ok');
    await suspended(api, ns, sandbox);
    const woke = await execute(router, ns, sandbox, 'echo ok');
    // The first round warms caches and images; it is not counted.
    if (i >= 0) {
      out.headMs.push(woke.headMs);
      out.totalMs.push(woke.totalMs);
    }
    log(`${label}: resume ${i + 1}/${n} → first byte ${round(woke.headMs)} ms`);
    await api.request('DELETE', `${CLAIMS(ns)}/${name}`);
  }
  return out;
}

function idlePool(ns: string, name: string, replicas: number, image: string, runtimeClass?: string): any[] {
  const chart: Chart = Testing.chart();
  const template = new SandboxTemplate(chart, `${name}-t`, {
    metadata: { name, namespace: ns },
    containers: [{ image, resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '512Mi' } }, security: { runAsUser: 1000, runAsGroup: 1000 } }],
    terminationGracePeriod: Duration.seconds(1),
    runtime: {},
    ...(runtimeClass ? { runtimeClass: SandboxRuntimeClass.fromName(runtimeClass) } : {}),
  });
  new SandboxWarmPool(chart, `${name}-p`, { metadata: { name, namespace: ns }, template, replicas });
  return Testing.synth(chart);
}

const cpuMillis = (q: string | undefined) => (q === undefined ? 0 : q.endsWith('m') ? Number(q.slice(0, -1)) : Number(q) * 1000);
/** MiB of a memory quantity in Ki, Mi or Gi (what templates write), or of plain bytes. */
const memMiB = (q: string | undefined) => {
  const m = q === undefined ? null : /^(\d+(?:\.\d+)?)(Ki|Mi|Gi)?$/.exec(q);
  if (!m) return 0;
  const unit: Record<string, number> = { Ki: 1 / 1024, Mi: 1, Gi: 1024 };
  return Number(m[1]) * (m[2] === undefined ? 1 / (1024 * 1024) : unit[m[2]]);
};

interface ChurnRun {
  readonly meanCpuMillis: number;
  readonly meanMemoryMiB: number;
  readonly commandMs: Stats;
  readonly commands: number;
  readonly idleSuspensions: number;
}

/** `agents` agents alternating bursts and think times for `seconds`, with or without an idle policy. */
async function churn(api: ApiClient, router: Router, pool: string, agents: number, seconds: number, withPolicy: boolean): Promise<ChurnRun> {
  const tag = withPolicy ? 'idle' : 'plain';
  const names = Array.from({ length: agents }, (_, i) => `churn-${tag}-${i}`);
  const sandboxes = await Promise.all(names.map((n) => claim(api, NAMESPACE, pool, n, withPolicy ? SUSPEND_AFTER_SECONDS : undefined)));
  const claimed = new Set(sandboxes);
  const samples: Array<{ cpu: number; mem: number }> = [];
  const latencies: number[] = [];
  const end = performance.now() + seconds * 1000;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const pods = (await api.call<{ items: any[] }>('GET', `/api/v1/namespaces/${NAMESPACE}/pods`)).items;
      let cpu = 0;
      let mem = 0;
      for (const p of pods) {
        const owner = p.metadata.ownerReferences?.find((r: any) => r.kind === 'Sandbox')?.name;
        if (!claimed.has(owner) || p.metadata.deletionTimestamp) continue;
        for (const c of p.spec.containers) {
          cpu += cpuMillis(c.resources?.requests?.cpu);
          mem += memMiB(c.resources?.requests?.memory);
        }
      }
      samples.push({ cpu, mem });
      await sleep(250);
    }
  })();
  // A fixed schedule, the same in both runs: each agent cycles through 1, 4 and 10 s think times from its own offset.
  const think = (agent: number, step: number) => [1, 4, 10][(agent + step) % 3] * 1000;
  await Promise.all(sandboxes.map(async (sandbox, a) => {
    for (let step = 0; performance.now() < end; step++) {
      for (let k = 0; k < 2; k++) latencies.push((await execute(router, NAMESPACE, sandbox, 'echo ok')).totalMs);
      await sleep(Math.min(think(a, step), Math.max(0, end - performance.now())));
    }
  }));
  sampling = false;
  await sampler;
  let idleSuspensions = 0;
  for (const s of sandboxes) {
    const events = (await api.call<{ items: any[] }>('GET', `/api/v1/namespaces/${NAMESPACE}/events?fieldSelector=involvedObject.name=${s},reason=IdleSuspended`)).items;
    idleSuspensions += events.reduce((n, e) => n + (e.count ?? 1), 0);
  }
  await Promise.all(names.map((n) => api.request('DELETE', `${CLAIMS(NAMESPACE)}/${n}`)));
  const mean = (f: (s: { cpu: number; mem: number }) => number) => round(samples.reduce((t, s) => t + f(s), 0) / Math.max(1, samples.length));
  return {
    meanCpuMillis: mean((s) => s.cpu), meanMemoryMiB: mean((s) => s.mem), commandMs: stats(latencies), commands: latencies.length, idleSuspensions,
  };
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const n = Number(flagValue(argv, 'resumes') ?? 5);
  const agents = Number(flagValue(argv, 'agents') ?? 8);
  const churnSeconds = Number(flagValue(argv, 'churn-seconds') ?? 60);
  const resume: Record<string, { firstByteMs: Stats; totalMs: Stats }> = {};
  const record = (key: string, r: ResumeRun) => (resume[key] = { firstByteMs: stats(r.headMs), totalMs: stats(r.totalMs) });
  let churnResult: { plain: ChurnRun; idle: ChurnRun } | undefined;

  let stopLocal: () => Promise<void> = async () => undefined;
  try {
    const local = await startLocalSystem({ pool: 'warm', replicas: agents, log, onStop: (s) => (stopLocal = s) });
    const api = new ApiClient(connectionFromKubeconfig(local.kubeconfig));
    const router = { url: local.routerUrl };
    log(`KWOK + pod runner: ${n} resumes`);
    record('kwokPodRunner', await resumes(api, NAMESPACE, 'warm', router, n, 'kwok'));
    const refill = () => local.kube.wait(['sandboxwarmpool/warm', `--for=jsonpath={.status.readyReplicas}=${agents}`], NAMESPACE, 300_000);
    await refill();
    log(`churn: ${agents} agents for ${churnSeconds} s without an idle policy`);
    const plain = await churn(api, router, 'warm', agents, churnSeconds, false);
    await refill();
    log(`churn: ${agents} agents for ${churnSeconds} s with a ${SUSPEND_AFTER_SECONDS} s idle policy`);
    const idle = await churn(api, router, 'warm', agents, churnSeconds, true);
    churnResult = { plain, idle };
  } finally {
    await stopLocal();
  }

  if (!argv.includes('--no-real-nodes')) {
    let stopReal: () => Promise<void> = async () => undefined;
    try {
      const real = await startRealSystem({ log, onStop: (s) => (stopReal = s) });
      const api = new ApiClient(connectionFromKubeconfig(real.cp.kubeconfig));
      const ns = 'bench';
      const image = real.images['python-sandbox'];
      await real.kube.applyServerSide([{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }], 'bench');
      await real.kube.applyServerSide([...agentServiceAccount(ns), ...idlePool(ns, 'runc', 1, image), ...idlePool(ns, 'gvisor', 1, image, 'gvisor')], 'bench');
      const token = (await real.kube.kubectl(['create', 'token', 'agent', '-n', ns, '--duration=1h'])).trim();
      const routerPod = (await real.kube.getJson<{ items: any[] }>(['pods', '-n', SYSTEM_NAMESPACE, '-l', 'app=sandbox-router'])).items[0];
      const router = { url: `http://${routerPod.status.podIP}:8080`, token };
      for (const runtime of ['runc', 'gvisor']) {
        log(`real node, ${runtime}: ${n} resumes`);
        record(`realNode${runtime === 'runc' ? 'Runc' : 'Gvisor'}`, await resumes(api, ns, runtime, router, n, runtime));
      }
    } finally {
      await stopReal();
    }
  }

  const at = new Date().toISOString().replace(/:/g, '-').slice(0, 19);
  const dir = path.join(ROOT, 'bench', 'results');
  fs.mkdirSync(dir, { recursive: true });
  const given = churnResult && {
    cpuPercent: round((1 - churnResult.idle.meanCpuMillis / churnResult.plain.meanCpuMillis) * 100),
    memoryPercent: round((1 - churnResult.idle.meanMemoryMiB / churnResult.plain.meanMemoryMiB) * 100),
  };
  const json = {
    at, n, agents, churnSeconds, suspendAfterSeconds: SUSPEND_AFTER_SECONDS, resume, churn: churnResult, given, environment: environment(),
  };
  fs.writeFileSync(path.join(dir, `idle-${at}.json`), JSON.stringify(json, null, 2));
  const labels: Record<string, string> = {
    kwokPodRunner: 'KWOK + pod runner (runtime as a local process)', realNodeRunc: 'real node, runc', realNodeGvisor: 'real node, gVisor',
  };
  const row = (label: string, s: Stats) => `| ${label} | ${s.n} | ${s.p50} | ${s.p90} | ${s.max} |`;
  const lines = [
    `# Idle sandboxes: resume on request and reservations given back, ${at} (2 cores, one run)`,
    '',
    `Resume: a claim with a ${SUSPEND_AFTER_SECONDS} s idle policy, suspended by the operator (Pod gone), then one request through the router.`,
    '',
    '| request → first byte (ms) | n | p50 | p90 | max |',
    '|---|---|---|---|---|',
    ...Object.entries(resume).map(([k, v]) => row(labels[k] ?? k, v.firstByteMs)),
  ];
  if (churnResult && given) {
    const c = churnResult;
    lines.push(
      '',
      `Churn: ${agents} agents for ${churnSeconds} s on the KWOK control plane, bursts of 2 commands, think times of 1, 4 or 10 s; claimed sandboxes' Pod requests sampled every 250 ms.`,
      '',
      '| run | mean CPU reserved (m) | mean memory reserved (MiB) | commands | command p50 / p90 / max (ms) | idle suspensions |',
      '|---|---|---|---|---|---|',
      `| no idle policy | ${c.plain.meanCpuMillis} | ${c.plain.meanMemoryMiB} | ${c.plain.commands} | ${c.plain.commandMs.p50} / ${c.plain.commandMs.p90} / ${c.plain.commandMs.max} | ${c.plain.idleSuspensions} |`,
      `| idle policy ${SUSPEND_AFTER_SECONDS} s | ${c.idle.meanCpuMillis} | ${c.idle.meanMemoryMiB} | ${c.idle.commands} | ${c.idle.commandMs.p50} / ${c.idle.commandMs.p90} / ${c.idle.commandMs.max} | ${c.idle.idleSuspensions} |`,
      '',
      `Given back by the idle policy: ${given.cpuPercent} % of the CPU and ${given.memoryPercent} % of the memory the claimed sandboxes reserved.`,
    );
  }
  lines.push('');
  fs.writeFileSync(path.join(dir, `idle-${at}.md`), lines.join('\n'));
  process.stdout.write(lines.join('\n'));
}

main().catch((e) => {
  log(`failed: ${(e as Error).stack ?? e}`);
  process.exitCode = 1;
});
