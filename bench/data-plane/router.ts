/**
 * The router's cost: `npm run bench -- --scenarios router` (or
 * `npx ts-node --transpile-only bench/data-plane/router.ts [flags]`).
 *
 * One Sandbox on a fresh local control plane (our operator makes its Pod; KWOK gives it a loopback
 * pod IP), the runtime (`agent-sandbox-operator runtime`) listening on that IP, and the router
 * (`agent-sandbox-operator router --auth=none`) as a local process. The same requests go straight
 * to the runtime (the floor) and through the router, alternating which goes first: a small
 * `POST /execute` (`echo ok`) and a 1 MiB `GET /download/...`, each at 1 and 50 concurrent
 * keep-alive clients, closed loop for `--duration` seconds after a short warm-up. Reported: p50/p99
 * and requests/s per path, the router's overhead against the floor (the goals: ≤ 1 ms at p50,
 * ≤ 1.3× the floor's p99, ≥ 0.8× its throughput), and the router's CPU and RSS.
 *
 * The load generator runs in this process, on the same 2 cores as the router and the runtime,
 * for both paths alike. Results: bench/results/router-<id>.json and .md.
 *
 * Flags: --duration 10  --warmup 1  --concurrency 1,50  --out bench/results  --smoke  --cpu-prof (the router's)
 */
import { ChildProcess, spawn } from 'child_process';
import { randomBytes } from 'crypto';
import * as fs from 'fs';
import * as http from 'http';
import * as os from 'os';
import * as path from 'path';
import { connectionFromKubeconfig } from '../../tools/control-plane/api';
import { startControlPlane } from '../../tools/control-plane/control-plane';
import { Kube, waitFor } from '../../tools/control-plane/kube';
import { freePort } from '../../tools/control-plane/processes';
import { writeCrds } from '../../tools/shared/crds';
import { ensureOperatorBundle, OPERATOR_BUNDLE } from '../../tools/shared/operator-process';
import { BenchClient } from '../client';
import { DEFAULT_SETTINGS, OPERATOR_NODE_FLAGS, ROOT, startController } from '../controllers';
import { flagValue } from '../flags';
import { ProcMonitor, procSample, readyCondition, round, stats, Stats } from '../measure';
import { environment } from '../report';
import { CORE } from '../scenarios/common';

const SANDBOX = 'bench-router';
const BLOB = 'blob.bin';
const BLOB_BYTES = 1024 * 1024;

export interface RouterBenchOptions {
  durationS: number;
  warmupS: number;
  concurrency: number[];
  out: string;
  smoke: boolean;
  /** Profile the router (node --cpu-prof; the profile goes to test-results/bench/<id>/profiles). */
  cpuProf: boolean;
}

export function parseRouterBenchArgs(argv: string[]): RouterBenchOptions {
  const get = (name: string): string | undefined => flagValue(argv, name);
  const smoke = argv.includes('--smoke');
  const o: RouterBenchOptions = {
    durationS: Number(get('duration') ?? (smoke ? 1 : 10)),
    warmupS: Number(get('warmup') ?? (smoke ? 0.2 : 1)),
    concurrency: (get('concurrency') ?? (smoke ? '1,5' : '1,50')).split(',').map(Number),
    out: path.resolve(get('out') ?? path.join(ROOT, smoke ? 'test-results/bench-smoke' : 'bench/results')),
    smoke,
    cpuProf: argv.includes('--cpu-prof'),
  };
  for (const [name, v] of [['duration', o.durationS], ['warmup', o.warmupS]] as const) {
    if (!(v >= 0) || !Number.isFinite(v)) throw new Error(`--${name} must be a number of seconds, got ${v}`);
  }
  for (const c of o.concurrency) if (!Number.isInteger(c) || c < 1) throw new Error(`--concurrency must list positive integers, got ${c}`);
  return o;
}

type Payload = 'execute' | 'download';
type Via = 'direct' | 'router';

interface Target { host: string; port: number; headers: http.OutgoingHttpHeaders }

interface CaseResult {
  payload: Payload;
  concurrency: number;
  via: Via;
  requests: number;
  errors: number;
  firstError?: string;
  seconds: number;
  requestsPerSecond: number;
  latencyMs: Stats;
  /** CPU seconds of the router and of the runtime during the measured window. */
  routerCpuSeconds?: number;
  runtimeCpuSeconds: number;
}

const log = (msg: string) => process.stderr.write(`[bench router ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

/** One request; resolves with its latency in ms, or rejects with what went wrong (status or body check). */
function once(agent: http.Agent, target: Target, payload: Payload): Promise<number> {
  const started = performance.now();
  const body = payload === 'execute' ? JSON.stringify({ command: 'echo ok' }) : undefined;
  return new Promise((resolve, reject) => {
    const req = http.request({
      agent,
      host: target.host,
      port: target.port,
      method: payload === 'execute' ? 'POST' : 'GET',
      path: payload === 'execute' ? '/execute' : `/download/${BLOB}`,
      headers: { ...target.headers, ...(body ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {}) },
    }, (res) => {
      let bytes = 0;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => {
        bytes += c.length;
        if (payload === 'execute') chunks.push(c);
      });
      res.on('end', () => {
        const ms = performance.now() - started;
        if (res.statusCode !== 200) return reject(new Error(`HTTP ${res.statusCode}: ${Buffer.concat(chunks).toString().slice(0, 200)}`));
        if (payload === 'download' && bytes !== BLOB_BYTES) return reject(new Error(`download returned ${bytes} bytes, not ${BLOB_BYTES}`));
        const text = Buffer.concat(chunks).toString();
        if (payload === 'execute' && JSON.parse(text).stdout !== 'ok\n') return reject(new Error(`execute answered ${text.slice(0, 200)}`));
        resolve(ms);
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** `concurrency` closed-loop clients for `seconds`; latencies of requests that started inside the window. */
async function load(target: Target, payload: Payload, concurrency: number, seconds: number): Promise<{ latencies: number[]; errors: number; firstError?: string; elapsed: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const latencies: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  const start = performance.now();
  const end = start + seconds * 1000;
  const worker = async () => {
    while (performance.now() < end) {
      try {
        latencies.push(await once(agent, target, payload));
      } catch (e) {
        errors++;
        firstError ??= (e as Error).message;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const elapsed = (performance.now() - start) / 1000;
  agent.destroy();
  return { latencies, errors, firstError, elapsed };
}

function startProcess(args: string[], logFile: string, nodeFlags: readonly string[] = []): ChildProcess {
  const out = fs.openSync(logFile, 'w');
  const child = spawn(process.execPath, [...OPERATOR_NODE_FLAGS, ...nodeFlags, OPERATOR_BUNDLE, ...args], { stdio: ['ignore', out, out] });
  fs.closeSync(out);
  const kill = () => { try { child.kill('SIGKILL'); } catch { /* gone */ } };
  process.on('exit', kill);
  return child;
}

async function stopProcess(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(t);
}

/** Polls `url` until it answers 200 (the process's readiness), failing with its log when it exits first. */
async function waitHttpOk(url: string, child: ChildProcess, logFile: string, what: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      http.get(url, (res) => { res.resume(); resolve(res.statusCode === 200); }).on('error', () => resolve(false));
    });
    if (ok) return;
    if (child.exitCode !== null || Date.now() > deadline) {
      throw new Error(`${what} did not become ready at ${url}:\n${fs.readFileSync(logFile, 'utf8').split('\n').slice(-20).join('\n')}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

export interface RouterBenchReport {
  id: string;
  options: RouterBenchOptions;
  environment: object;
  commands: { router: string[]; runtime: string[] };
  cases: CaseResult[];
  summary: Array<{
    payload: Payload;
    concurrency: number;
    overheadP50Ms: number;
    p99Ratio: number;
    throughputRatio: number;
    goals: { p50: boolean; p99: boolean; throughput: boolean };
    routerCpuMsPerRequest?: number;
  }>;
  router: { peakRssMiB: number; vmHwmMiB: number };
  totalSeconds: number;
}

export async function runRouterBench(o: RouterBenchOptions): Promise<RouterBenchReport> {
  const started = Date.now();
  const id = `router-${new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19)}${o.smoke ? '-smoke' : ''}`;
  const runDir = path.join(ROOT, 'test-results', 'bench', id);
  fs.mkdirSync(runDir, { recursive: true });
  await ensureOperatorBundle(log);
  const cp = await startControlPlane({ nodes: 1, benchmarkMode: true, manifests: [writeCrds()], log: () => undefined });
  let operator: Awaited<ReturnType<typeof startController>> | undefined;
  let runtime: ChildProcess | undefined;
  let router: ChildProcess | undefined;
  let monitor: ProcMonitor | undefined;
  const client = new BenchClient(connectionFromKubeconfig(cp.kubeconfig), 8);
  try {
    operator = await startController('ours', { kubeconfig: cp.kubeconfig, settings: DEFAULT_SETTINGS, logDir: path.join(runDir, 'logs') });
    const ns = await new Kube({ kubeconfig: cp.kubeconfig, binDir: cp.binDir }).createNamespace('bench-router');
    await client.call('POST', `${CORE}/namespaces/${ns}/sandboxes`, {
      apiVersion: 'agents.x-k8s.io/v1beta1',
      kind: 'Sandbox',
      metadata: { name: SANDBOX },
      spec: { podTemplate: { spec: { containers: [{ name: 'runtime', image: 'agent-sandbox-operator', args: ['runtime'] }] } } },
    });
    await waitFor(async () => readyCondition(await client.call('GET', `${CORE}/namespaces/${ns}/sandboxes/${SANDBOX}`)) || undefined, 60_000, `Sandbox ${SANDBOX} Ready`);
    const pod = await client.call('GET', `/api/v1/namespaces/${ns}/pods/${SANDBOX}`);
    const podIP: string = pod.status.podIP;
    log(`sandbox ${ns}/${SANDBOX} Ready on pod IP ${podIP}`);

    const workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-router-ws-'));
    fs.writeFileSync(path.join(workspace, BLOB), randomBytes(BLOB_BYTES));
    const runtimeArgs = ['runtime', `--listen-address=${podIP}`, '--port=8888', `--workspace=${workspace}`, ...(process.getuid?.() === 0 ? ['--allow-root'] : [])];
    const runtimeLog = path.join(runDir, 'runtime.log');
    runtime = startProcess(runtimeArgs, runtimeLog);
    await waitHttpOk(`http://${podIP}:8888/`, runtime, runtimeLog, 'the runtime');

    const [routerPort, probePort] = [await freePort(), await freePort()];
    const routerArgs = [
      'router', `--kubeconfig=${cp.kubeconfig}`, `--bind-address=127.0.0.1:${routerPort}`, `--health-probe-bind-address=127.0.0.1:${probePort}`,
      '--metrics-bind-address=0', '--auth=none', '--allowed-pod-cidrs=127.64.0.0/12', '--log-level=error',
    ];
    const routerLog = path.join(runDir, 'router.log');
    router = startProcess(routerArgs, routerLog, o.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${path.join(runDir, 'profiles')}`] : []);
    await waitHttpOk(`http://127.0.0.1:${probePort}/readyz`, router, routerLog, 'the router');
    monitor = new ProcMonitor(router.pid!);

    const targets: Record<Via, Target> = {
      direct: { host: podIP, port: 8888, headers: {} },
      router: { host: '127.0.0.1', port: routerPort, headers: { 'x-sandbox-id': SANDBOX, 'x-sandbox-namespace': ns, 'x-sandbox-port': '8888' } },
    };
    const cases: CaseResult[] = [];
    let flip = false;
    for (const payload of ['execute', 'download'] as Payload[]) {
      for (const concurrency of o.concurrency) {
        // Alternate which path goes first, so neither always runs on a warmer (or hotter) machine.
        const order: Via[] = flip ? ['router', 'direct'] : ['direct', 'router'];
        flip = !flip;
        for (const via of order) {
          if (o.warmupS > 0) await load(targets[via], payload, concurrency, o.warmupS);
          const cpu0 = { router: procSample(router.pid!).cpuSeconds, runtime: procSample(runtime.pid!).cpuSeconds };
          const r = await load(targets[via], payload, concurrency, o.durationS);
          const cpu1 = { router: procSample(router.pid!).cpuSeconds, runtime: procSample(runtime.pid!).cpuSeconds };
          const result: CaseResult = {
            payload,
            concurrency,
            via,
            requests: r.latencies.length,
            errors: r.errors,
            firstError: r.firstError,
            seconds: round(r.elapsed, 2),
            requestsPerSecond: round(r.latencies.length / r.elapsed),
            latencyMs: stats(r.latencies),
            routerCpuSeconds: via === 'router' ? round(cpu1.router - cpu0.router, 2) : undefined,
            runtimeCpuSeconds: round(cpu1.runtime - cpu0.runtime, 2),
          };
          cases.push(result);
          log(`${payload} c=${concurrency} ${via}: ${result.requests} ok, ${result.errors} errors, p50 ${result.latencyMs.p50} p99 ${result.latencyMs.p99} ms, ${result.requestsPerSecond}/s${result.firstError ? ` (first error: ${result.firstError})` : ''}`);
        }
      }
    }
    const summary = o.concurrency.flatMap((concurrency) => (['execute', 'download'] as Payload[]).map((payload) => {
      const find = (via: Via) => cases.find((c) => c.payload === payload && c.concurrency === concurrency && c.via === via)!;
      const [d, r] = [find('direct'), find('router')];
      const overheadP50Ms = round(r.latencyMs.p50 - d.latencyMs.p50, 2);
      const p99Ratio = d.latencyMs.p99 ? round(r.latencyMs.p99 / d.latencyMs.p99, 2) : 0;
      const throughputRatio = d.requestsPerSecond ? round(r.requestsPerSecond / d.requestsPerSecond, 2) : 0;
      return {
        payload,
        concurrency,
        overheadP50Ms,
        p99Ratio,
        throughputRatio,
        goals: { p50: overheadP50Ms <= 1, p99: p99Ratio <= 1.3, throughput: throughputRatio >= 0.8 },
        routerCpuMsPerRequest: r.requests ? round((r.routerCpuSeconds! * 1000) / r.requests, 3) : undefined,
      };
    }));
    const hwm = procSample(router.pid!).hwmKiB;
    return {
      id,
      options: o,
      environment: environment(),
      cases,
      summary,
      commands: { router: routerArgs.map((a) => a.replace(cp.kubeconfig, '<kubeconfig>')), runtime: runtimeArgs.map((a) => a.replace(workspace, '<workspace>')) },
      router: { peakRssMiB: round(monitor.peakRssKiB / 1024), vmHwmMiB: round(hwm / 1024) },
      totalSeconds: Math.round((Date.now() - started) / 1000),
    };
  } finally {
    monitor?.stop();
    await stopProcess(router);
    await stopProcess(runtime);
    await operator?.stop();
    client.close();
    await cp.stop();
  }
}

export function routerMarkdown(r: RouterBenchReport): string {
  const yes = (b: boolean) => (b ? 'yes' : '**no**');
  const lines = [
    `# Router benchmark ${r.id}`, '',
    `${r.options.durationS} s per case after ${r.options.warmupS} s of warm-up; closed-loop keep-alive clients in the harness process; `
      + `one Sandbox, the runtime on its loopback pod IP, the router with \`--auth=none\`. Machine: ${JSON.stringify(r.environment)}.`, '',
    '| request | clients | path | requests | errors | p50 ms | p99 ms | req/s | router CPU s | runtime CPU s |',
    '|---|---:|---|---:|---:|---:|---:|---:|---:|---:|',
    ...r.cases.map((c) => `| ${c.payload} | ${c.concurrency} | ${c.via} | ${c.requests} | ${c.errors} | ${c.latencyMs.p50} | ${c.latencyMs.p99} | ${c.requestsPerSecond} | ${c.routerCpuSeconds ?? '–'} | ${c.runtimeCpuSeconds} |`),
    '',
    '| request | clients | overhead p50 (goal ≤ 1 ms) | p99 router/direct (≤ 1.3) | throughput router/direct (≥ 0.8) | router CPU ms/request |',
    '|---|---:|---|---|---|---:|',
    ...r.summary.map((s) => `| ${s.payload} | ${s.concurrency} | ${s.overheadP50Ms} ms: ${yes(s.goals.p50)} | ${s.p99Ratio}: ${yes(s.goals.p99)} | ${s.throughputRatio}: ${yes(s.goals.throughput)} | ${s.routerCpuMsPerRequest ?? '–'} |`),
    '',
    `Router peak RSS ${r.router.peakRssMiB} MiB (VmHWM ${r.router.vmHwmMiB} MiB). Total ${r.totalSeconds} s.`, '',
  ];
  return lines.join('\n');
}

export async function main(argv: string[]): Promise<number> {
  const o = parseRouterBenchArgs(argv);
  const report = await runRouterBench(o);
  fs.mkdirSync(o.out, { recursive: true });
  const base = path.join(o.out, report.id);
  fs.writeFileSync(`${base}.json`, `${JSON.stringify(report, null, 2)}\n`);
  fs.writeFileSync(`${base}.md`, routerMarkdown(report));
  log(`wrote ${base}.json, ${base}.md`);
  return report.cases.some((c) => c.errors > 0 || c.requests === 0) ? 1 : 0;
}

if (require.main === module) {
  main(process.argv.slice(2)).then((code) => process.exit(code), (e) => {
    log(`fatal: ${(e as Error).stack}`);
    process.exit(2);
  });
}
