/**
 * Real nodes against KWOK, in one run: `npx ts-node --transpile-only bench/real-nodes.ts [--cold N] [--warm N]`
 * (root; `npm run bench:real-nodes`).
 *
 * On a real node (tools/shared/real-system.ts: the operator and router as Pods of the local image):
 * - cold sandbox create → Ready, one claim at a time on a pool with no warm members (the operator
 *   builds the Sandbox from the template): under runc, under gVisor, and under runc without the
 *   runtime injected (a stock `python3 -m http.server` behind the same readiness probe), whose
 *   difference to runc is what the injection costs at Pod start (init container copying node and the
 *   bundle, then node starting);
 * - warm claim → first command result through the router (`POST /execute` of `echo ok` to the router
 *   Pod's address on the bridge, with an agent's token), one claim at a time from a full pool;
 * - overflow: `--overflow N` (6) claims on that pool of 3, the last N - 3 `--overflow-gap-ms` (300)
 *   after the first 3, each create → Ready and whether its Sandbox was a warm member or started cold;
 * - idle members' memory: each Ready member's Pod of the runc pool and of a gVisor pool of 3, after
 *   10 s idle, from its cgroup's memory.stat (anonymous memory, and page cache apart).
 * Then the same warm measurement on the KWOK control plane with the pod runner
 * (tools/shared/local-system.ts: the same operator and router as local processes, the runtime as a
 * local process on a loopback address). Each claim is timed from its create request until the
 * claim's Ready condition is seen (polling every 10 ms) and, for warm claims, until the command's
 * answer arrives. Results: bench/results/real-nodes-<date>.json and .md.
 */
import * as fs from 'fs';
import * as path from 'path';
import { Chart, Duration, Testing } from 'cdk8s';
import { ROOT } from './controllers';
import { flagValue } from './flags';
import { Stats, round, stats } from './measure';
import { environment } from './report';
import { Probe } from '../src/probe';
import { SandboxRuntimeClass } from '../src/runtime-class';
import { SandboxTemplate, SandboxTemplateProps } from '../src/template';
import { SandboxWarmPool } from '../src/warm-pool';
import { ApiClient, connectionFromKubeconfig } from '../tools/control-plane/api';
import { sleep } from '../tools/control-plane/processes';
import { podMemory } from '../tools/control-plane/real-node';
import { NAMESPACE, startLocalSystem } from '../tools/shared/local-system';
import { agentServiceAccount } from '../tools/shared/real-pool';
import { SYSTEM_NAMESPACE, startRealSystem } from '../tools/shared/real-system';

const log = (m: string) => process.stderr.write(`[bench real-nodes] ${m}\n`);
const CLAIMS_PATH = (ns: string) => `/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxclaims`;
const isReady = (o: any) => o?.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True');

interface Timed { readyMs: number; firstResultMs?: number; slow?: SlowClaim }

/** A warm claim that took over SLOW_CLAIM_MS to be Ready: which Sandbox it got, and when (API server times, whole seconds) that Sandbox and its Pod were made and turned Ready. */
interface SlowClaim {
  claim: string;
  readyMs: number;
  sandbox: string;
  claimCreated?: string;
  sandboxCreated?: string;
  sandboxReady?: string;
  podCreated?: string;
  podReady?: string;
  claimReady?: string;
  /** The pool's status and its Sandboxes just before the claim was made. */
  before?: PoolSnapshot;
}

interface PoolSnapshot {
  readyReplicas?: number;
  sandboxes: { name: string; controller?: string; ready: boolean; podIPs: number; deleting: boolean; created?: string }[];
}

async function poolSnapshot(api: ApiClient, ns: string, poolName: string): Promise<PoolSnapshot> {
  const poolObject = (await api.request('GET', `/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxwarmpools/${poolName}`)).body as any;
  const list = (await api.request('GET', SANDBOXES_PATH(ns))).body as any;
  return {
    readyReplicas: poolObject?.status?.readyReplicas,
    sandboxes: (list.items ?? []).map((sb: any) => {
      const owner = (sb.metadata.ownerReferences ?? []).find((o: any) => o.controller);
      return {
        name: sb.metadata.name,
        controller: owner ? `${owner.kind}/${owner.name}` : undefined,
        ready: readySince(sb) !== undefined,
        podIPs: sb.status?.podIPs?.length ?? 0,
        deleting: sb.metadata.deletionTimestamp !== undefined,
        created: sb.metadata.creationTimestamp,
      };
    }),
  };
}
const SLOW_CLAIM_MS = 1_000;
const SANDBOXES_PATH = (ns: string) => `/apis/agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxes`;
const readySince = (o: any): string | undefined => (o?.status?.conditions ?? []).find((c: any) => c.type === 'Ready' && c.status === 'True')?.lastTransitionTime;

function pool(ns: string, name: string, replicas: number, image: string, extra: Partial<SandboxTemplateProps>): any[] {
  const chart: Chart = Testing.chart();
  const template = new SandboxTemplate(chart, `${name}-t`, {
    metadata: { name, namespace: ns },
    containers: [{ image, resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '512Mi' } }, security: { runAsUser: 1000, runAsGroup: 1000 } }],
    terminationGracePeriod: Duration.seconds(1),
    ...extra,
  });
  new SandboxWarmPool(chart, `${name}-p`, { metadata: { name, namespace: ns }, template, replicas });
  return Testing.synth(chart);
}

/** One claim: create → Ready → (optionally) first command result through the router → delete. */
async function claimOnce(api: ApiClient, ns: string, poolName: string, i: number, router?: { url: string; token?: string }): Promise<Timed> {
  const name = `bench-${poolName}-${i}`;
  // What the pool held just before the claim (read before the clock starts), for a slow claim's report.
  const before = await poolSnapshot(api, ns, poolName);
  const t0 = performance.now();
  await api.call('POST', CLAIMS_PATH(ns), { apiVersion: 'extensions.agents.x-k8s.io/v1beta1', kind: 'SandboxClaim', metadata: { name }, spec: { warmPoolRef: { name: poolName } } });
  let claim: any;
  for (;;) {
    claim = (await api.request('GET', `${CLAIMS_PATH(ns)}/${name}`)).body;
    if (isReady(claim) && claim.status?.sandbox?.name) break;
    if (performance.now() - t0 > 300_000) throw new Error(`claim ${name} not Ready after 300 s`);
    await sleep(10);
  }
  const readyMs = performance.now() - t0;
  let slow: SlowClaim | undefined;
  if (readyMs > SLOW_CLAIM_MS) {
    // Read before the delete: did it get a member made before the claim, and was that member Ready then?
    const sandbox = claim.status.sandbox.name as string;
    const sb = (await api.request('GET', `${SANDBOXES_PATH(ns)}/${sandbox}`)).body as any;
    const pods = (await api.request('GET', `/api/v1/namespaces/${ns}/pods`)).body as any;
    const pod = (pods.items ?? []).find((p: any) => (p.metadata.ownerReferences ?? []).some((o: any) => o.kind === 'Sandbox' && o.name === sandbox));
    slow = {
      claim: name,
      readyMs: Math.round(readyMs),
      sandbox,
      claimCreated: claim.metadata.creationTimestamp,
      claimReady: readySince(claim),
      sandboxCreated: sb?.metadata?.creationTimestamp,
      sandboxReady: readySince(sb),
      podCreated: pod?.metadata?.creationTimestamp,
      podReady: readySince(pod),
      before,
    };
  }
  let firstResultMs: number | undefined;
  if (router) {
    const res = await fetch(`${router.url}/execute`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-sandbox-id': claim.status.sandbox.name,
        'x-sandbox-namespace': ns,
        ...(router.token ? { authorization: `Bearer ${router.token}` } : {}),
      },
      body: JSON.stringify({ command: 'echo ok' }),
    });
    const body = await res.text();
    if (res.status !== 200 || !body.includes('ok')) throw new Error(`/execute on ${claim.status.sandbox.name}: HTTP ${res.status} ${body}`);
    firstResultMs = performance.now() - t0;
  }
  await api.request('DELETE', `${CLAIMS_PATH(ns)}/${name}`);
  return { readyMs, firstResultMs, ...(slow ? { slow } : {}) };
}

/**
 * Until the pool has `replicas` unclaimed Ready members, counted from its Sandboxes: the pool's
 * status.readyReplicas lags by up to `--sandbox-warm-pool-status-window` (1 s), and waiting on it let
 * claims run into a pool whose members had all been taken and were still starting.
 */
async function poolReady(api: ApiClient, ns: string, name: string, replicas: number): Promise<void> {
  const started = performance.now();
  for (;;) {
    const { sandboxes } = await poolSnapshot(api, ns, name);
    const ready = sandboxes.filter((x) => x.controller === `SandboxWarmPool/${name}` && x.ready && x.podIPs > 0 && !x.deleting).length;
    if (ready >= replicas) return;
    if (performance.now() - started > 300_000) throw new Error(`pool ${name}: ${ready} of ${replicas} members Ready after 300 s`);
    await sleep(50);
  }
}

/** The Pod memory (cgroup) of each Ready, unclaimed member of pool `name`. */
async function memberMemory(api: ApiClient, ns: string, name: string): Promise<{ [K in 'rssMiB' | 'shmemMiB' | 'cacheMiB' | 'workingSetMiB']: number[] }> {
  const sandboxes = ((await api.request('GET', `/apis/agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxes`)).body as any).items as any[];
  const pods = ((await api.request('GET', `/api/v1/namespaces/${ns}/pods`)).body as any).items as any[];
  const out = { rssMiB: [] as number[], shmemMiB: [] as number[], cacheMiB: [] as number[], workingSetMiB: [] as number[] };
  for (const sandbox of sandboxes) {
    const controller = sandbox.metadata.ownerReferences?.find((r: any) => r.controller);
    if (controller?.kind !== 'SandboxWarmPool' || controller.name !== name || !isReady(sandbox)) continue;
    const pod = pods.find((p) => p.metadata.ownerReferences?.some((r: any) => r.uid === sandbox.metadata.uid));
    const memory = pod ? podMemory(pod.metadata.uid) : undefined;
    if (!memory) throw new Error(`no cgroup on this node for the Pod of ${sandbox.metadata.name}`);
    out.rssMiB.push(memory.rssBytes / 2 ** 20);
    out.shmemMiB.push(memory.shmemBytes / 2 ** 20);
    out.cacheMiB.push(memory.cacheBytes / 2 ** 20);
    out.workingSetMiB.push(memory.workingSetBytes / 2 ** 20);
  }
  return out;
}

/**
 * More claims than a pool of `replicas` Ready members holds: `replicas` claims at once, which take
 * them, then after `gapMs` the other `n - replicas` at once. Made together (gap 0), the rest find no
 * member and start cold beside the pool's refill; made after the gap, they find the members the pool
 * is starting in place of the taken ones (on a busy node without a Pod IP for a while) and wait for
 * one, take one, or start cold. Each claim's create → Ready (from its own create), in the order they
 * were Ready, with how its Sandbox was launched (the launch-type label).
 */
interface OverflowClaim { claim: string; wave: 1 | 2; readyMs: number; launch: string }

async function overflow(api: ApiClient, ns: string, poolName: string, replicas: number, n: number, gapMs: number): Promise<OverflowClaim[]> {
  const names = Array.from({ length: n }, (_, i) => `bench-overflow-${i}`);
  const created = new Map<string, number>();
  const create = (batch: string[]) => Promise.all(batch.map(async (name) => {
    created.set(name, performance.now());
    await api.call('POST', CLAIMS_PATH(ns), {
      apiVersion: 'extensions.agents.x-k8s.io/v1beta1', kind: 'SandboxClaim', metadata: { name }, spec: { warmPoolRef: { name: poolName } },
    });
  }));
  const t0 = performance.now();
  const ready = new Map<string, { readyMs: number; sandbox: string }>();
  let stop = false;
  // Watched from the first create on, so the first claims are not timed by the second wave's creates.
  const watching = (async () => {
    while (ready.size < n && !stop) {
      if (performance.now() - t0 > 300_000) throw new Error(`overflow: ${ready.size} of ${n} claims Ready after 300 s`);
      const res = await api.request('GET', CLAIMS_PATH(ns));
      if (res.status !== 200) throw new Error(`overflow: listing claims: HTTP ${res.status}`);
      for (const c of (res.body as any).items ?? []) {
        const at = created.get(c.metadata.name);
        if (at !== undefined && !ready.has(c.metadata.name) && isReady(c) && c.status?.sandbox?.name) {
          ready.set(c.metadata.name, { readyMs: performance.now() - at, sandbox: c.status.sandbox.name });
        }
      }
      await sleep(10);
    }
  })();
  // Handled at once (awaited below), so a failed poll during the creates is not an unhandled rejection.
  const watched = watching.then(() => undefined, (e: Error) => e);
  try {
    await create(names.slice(0, replicas));
    if (gapMs > 0) await sleep(gapMs);
    await create(names.slice(replicas));
  } catch (e) {
    stop = true;
    await watched;
    throw e;
  }
  const failed = await watched;
  if (failed) throw failed;
  const out: OverflowClaim[] = [];
  for (const [claim, { readyMs, sandbox }] of [...ready].sort((a, b) => a[1].readyMs - b[1].readyMs)) {
    const sb = (await api.request('GET', `${SANDBOXES_PATH(ns)}/${sandbox}`)).body as any;
    const wave = names.indexOf(claim) < replicas ? 1 : 2;
    out.push({ claim, wave, readyMs: round(readyMs), launch: sb?.metadata?.labels?.['agents.x-k8s.io/launch-type'] ?? '?' });
  }
  for (const name of names) await api.request('DELETE', `${CLAIMS_PATH(ns)}/${name}`);
  return out;
}

async function series(n: number, run: (i: number) => Promise<Timed>, between: () => Promise<void>): Promise<Timed[]> {
  const out: Timed[] = [];
  for (let i = 0; i < n; i++) {
    out.push(await run(i));
    await between();
  }
  return out;
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const coldN = Number(flagValue(argv, 'cold') ?? 5);
  const warmN = Number(flagValue(argv, 'warm') ?? 10);
  const overflowN = Number(flagValue(argv, 'overflow') ?? 6);
  const overflowGapMs = Number(flagValue(argv, 'overflow-gap-ms') ?? 300);
  let overflowRun: OverflowClaim[] = [];
  const result: Record<string, Stats> = {};
  const slowWarm: (SlowClaim & { where: string })[] = [];

  let stopReal: () => Promise<void> = async () => undefined;
  try {
    const real = await startRealSystem({ log, onStop: (s) => (stopReal = s) });
    const api = new ApiClient(connectionFromKubeconfig(real.cp.kubeconfig));
    const ns = 'bench';
    await real.kube.applyServerSide([{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }], 'bench');
    const image = real.images['python-sandbox'];
    // The runtime's own readiness probe, on a server that needs no injection.
    const plainServer: Partial<SandboxTemplateProps> = {
      containers: [{
        image,
        command: ['python3', '-m', 'http.server', '8888'],
        ports: [{ number: 8888 }],
        readinessProbe: Probe.httpGet('/', { port: 8888, period: Duration.seconds(2) }),
        resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '512Mi' } },
        security: { runAsUser: 1000, runAsGroup: 1000 },
      }],
    };
    await real.kube.applyServerSide([
      ...agentServiceAccount(ns),
      ...pool(ns, 'warm', 3, image, { runtime: {} }),
      ...pool(ns, 'cold-runc', 0, image, { runtime: {} }),
      ...pool(ns, 'cold-gvisor', 0, image, { runtime: {}, runtimeClass: SandboxRuntimeClass.fromName('gvisor') }),
      ...pool(ns, 'cold-plain', 0, image, plainServer),
    ], 'bench');
    const token = (await real.kube.kubectl(['create', 'token', 'agent', '-n', ns, '--duration=1h'])).trim();
    const routerPod = (await real.kube.getJson<{ items: any[] }>(['pods', '-n', SYSTEM_NAMESPACE, '-l', 'app=sandbox-router'])).items[0];
    const router = { url: `http://${routerPod.status.podIP}:8080`, token };
    // A cold claim's Sandbox and Pod are named after the claim (bench-...): the next one starts once they are gone.
    const podsGone = async () => {
      for (;;) {
        const left = (await real.kube.getJson<{ items: any[] }>(['pods', '-n', ns])).items.filter((p) => p.metadata.name.startsWith('bench-')).length;
        if (left === 0) return;
        await sleep(200);
      }
    };
    for (const [key, poolName] of [['coldRuncReadyMs', 'cold-runc'], ['coldGvisorReadyMs', 'cold-gvisor'], ['coldPlainReadyMs', 'cold-plain']] as const) {
      log(`cold: ${coldN} claims on ${poolName}, one at a time`);
      await claimOnce(api, ns, poolName, 999).catch((e) => log(`warm-up claim: ${(e as Error).message}`));
      await podsGone();
      const runs = await series(coldN, (i) => claimOnce(api, ns, poolName, i), podsGone);
      result[key] = stats(runs.map((r) => r.readyMs));
    }
    await poolReady(api, ns, 'warm', 3);
    log(`warm: ${warmN} claims → first result through the router, one at a time from a full pool`);
    await claimOnce(api, ns, 'warm', 999, router);
    await poolReady(api, ns, 'warm', 3);
    const warm = await series(warmN, (i) => claimOnce(api, ns, 'warm', i, router), () => poolReady(api, ns, 'warm', 3));
    result.realWarmReadyMs = stats(warm.map((r) => r.readyMs));
    result.realWarmFirstResultMs = stats(warm.map((r) => r.firstResultMs!));
    slowWarm.push(...warm.flatMap((r) => (r.slow ? [{ where: 'real node', ...r.slow }] : [])));
    if (overflowN > 0) {
      await poolReady(api, ns, 'warm', 3);
      log(`overflow: ${overflowN} claims on the pool of 3, the last ${overflowN - 3} ${overflowGapMs} ms after the first 3`);
      overflowRun = await overflow(api, ns, 'warm', 3, overflowN, overflowGapMs);
      // The claims beyond the pool: the ones the rule is about (the first wave takes Ready members).
      result.realOverflowReadyMs = stats(overflowRun.filter((r) => r.wave === 2).map((r) => r.readyMs));
    }
    log('idle members\' memory: the runc pool of 3 and a gVisor pool scaled to 3, after 10 s idle');
    await api.call('PATCH', `/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxwarmpools/cold-gvisor`, { spec: { replicas: 3 } });
    await poolReady(api, ns, 'warm', 3);
    await poolReady(api, ns, 'cold-gvisor', 3);
    await sleep(10_000);
    for (const [key, poolName] of [['idleRunc', 'warm'], ['idleGvisor', 'cold-gvisor']] as const) {
      const memory = await memberMemory(api, ns, poolName);
      result[`${key}RssMiB`] = stats(memory.rssMiB);
      result[`${key}ShmemMiB`] = stats(memory.shmemMiB);
      result[`${key}CacheMiB`] = stats(memory.cacheMiB);
      result[`${key}WorkingSetMiB`] = stats(memory.workingSetMiB);
    }
  } finally {
    await stopReal();
  }

  let stopLocal: () => Promise<void> = async () => undefined;
  try {
    const local = await startLocalSystem({ pool: 'warm', replicas: 3, log, onStop: (s) => (stopLocal = s) });
    const api = new ApiClient(connectionFromKubeconfig(local.kubeconfig));
    log(`KWOK: ${warmN} claims → first result through the router, one at a time from a full pool`);
    await claimOnce(api, NAMESPACE, 'warm', 999, { url: local.routerUrl });
    await poolReady(api, NAMESPACE, 'warm', 3);
    const warm = await series(warmN, (i) => claimOnce(api, NAMESPACE, 'warm', i, { url: local.routerUrl }), () => poolReady(api, NAMESPACE, 'warm', 3));
    result.kwokWarmReadyMs = stats(warm.map((r) => r.readyMs));
    result.kwokWarmFirstResultMs = stats(warm.map((r) => r.firstResultMs!));
    slowWarm.push(...warm.flatMap((r) => (r.slow ? [{ where: 'KWOK', ...r.slow }] : [])));
  } finally {
    await stopLocal();
  }

  const ratios = {
    gvisorOverRuncColdP50: round(result.coldGvisorReadyMs.p50 / result.coldRuncReadyMs.p50, 2),
    injectionCostColdP50Ms: round(result.coldRuncReadyMs.p50 - result.coldPlainReadyMs.p50),
    realOverKwokWarmFirstResultP50: round(result.realWarmFirstResultMs.p50 / result.kwokWarmFirstResultMs.p50, 2),
  };
  const date = new Date().toISOString().slice(0, 10);
  const dir = path.join(ROOT, 'bench', 'results');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, `real-nodes-${date}.json`), JSON.stringify({ date, coldN, warmN, overflowN, overflowGapMs, result, ratios, slowWarm, overflow: overflowRun, environment: environment() }, null, 2));
  const row = (label: string, s: Stats) => `| ${label} | ${s.n} | ${s.p50} | ${s.p90} | ${s.max} |`;
  const md = [
    `# Real nodes vs KWOK, ${date} (2 cores, one run)`,
    '',
    '| measurement (ms) | n | p50 | p90 | max |',
    '|---|---|---|---|---|',
    row('cold create → Ready, runc, runtime injected', result.coldRuncReadyMs),
    row('cold create → Ready, gVisor, runtime injected', result.coldGvisorReadyMs),
    row('cold create → Ready, runc, no runtime (python3 -m http.server)', result.coldPlainReadyMs),
    row('warm claim → Ready, real node', result.realWarmReadyMs),
    row('warm claim → first result via router, real node', result.realWarmFirstResultMs),
    ...(result.realOverflowReadyMs ? [row(`${overflowN - 3} claims beyond a pool of 3, ${overflowGapMs} ms after 3 that empty it → Ready, real node`, result.realOverflowReadyMs)] : []),
    row('warm claim → Ready, KWOK + pod runner', result.kwokWarmReadyMs),
    row('warm claim → first result via router, KWOK + pod runner', result.kwokWarmFirstResultMs),
    '',
    ...(result.idleRuncRssMiB ? [
      '| an idle member\'s Pod (MiB, its cgroup) | n | p50 | p90 | max |',
      '|---|---|---|---|---|',
      row('runc: anonymous memory (total_rss: the runtime\'s heap)', result.idleRuncRssMiB),
      row('runc: shared memory (total_shmem)', result.idleRuncShmemMiB),
      row('runc: page cache (total_cache: node and the bundle copied into the emptyDir, logs)', result.idleRuncCacheMiB),
      row('runc: working set (usage less inactive file pages, as the kubelet counts it)', result.idleRuncWorkingSetMiB),
      row('gVisor: anonymous memory (total_rss: the Sentry and Gofer themselves)', result.idleGvisorRssMiB),
      row('gVisor: shared memory (total_shmem: the sandboxed processes\' memory, in the Sentry\'s memory file)', result.idleGvisorShmemMiB),
      row('gVisor: page cache (total_cache, total_shmem included)', result.idleGvisorCacheMiB),
      row('gVisor: working set', result.idleGvisorWorkingSetMiB),
      '',
    ] : []),
    `gVisor / runc cold p50: ${ratios.gvisorOverRuncColdP50}×; runtime injection at Pod start (runc, p50): ${ratios.injectionCostColdP50Ms} ms; `
      + `real / KWOK warm first result p50: ${ratios.realOverKwokWarmFirstResultP50}×`,
    '',
    ...(overflowRun.length ? [
      `${overflowN} claims on the real node's pool of 3, the last ${overflowN - 3} ${overflowGapMs} ms after the first 3, create → Ready in the order they were Ready (launch type): `
        + `${overflowRun.map((r) => `${r.claim} ${r.readyMs} ms (wave ${r.wave}, ${r.launch})`).join(', ')}`,
      '',
    ] : []),
    ...(slowWarm.length ? [
      `Warm claims over ${SLOW_CLAIM_MS} ms to Ready, and the Sandbox each got (API server times, whole seconds):`,
      '',
      ...slowWarm.map((w) => `- ${w.where}: ${w.claim} ${w.readyMs} ms (claim made ${w.claimCreated}, Ready ${w.claimReady}): ${w.sandbox} made ${w.sandboxCreated}, `
        + `Ready ${w.sandboxReady}; its Pod made ${w.podCreated}, Ready ${w.podReady}. Just before the claim the pool said ${w.before?.readyReplicas} Ready, `
        + `and its namespace held: ${(w.before?.sandboxes ?? []).map((x) => `${x.name} (${x.controller ?? 'no controller'}, ${x.ready ? 'Ready' : 'not Ready'}, `
        + `${x.podIPs} IPs${x.deleting ? ', deleting' : ''}, made ${x.created})`).join('; ')}`),
      '',
    ] : []),
  ].join('\n');
  fs.writeFileSync(path.join(dir, `real-nodes-${date}.md`), md);
  process.stdout.write(md);
}

main().catch((e) => {
  log(`failed: ${(e as Error).stack ?? e}`);
  process.exitCode = 1;
});
