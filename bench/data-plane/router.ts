/**
 * The router's own cost, beside upstream's Go router: `npm run bench -- --scenarios router` (or
 * `npx ts-node --transpile-only bench/data-plane/router.ts [flags]`).
 *
 * A fresh local control plane with our operator makes `--sandboxes` Sandboxes (KWOK gives each Pod a
 * loopback IP); a minimal Go backend (bench/data-plane/routerload `serve`) listens on every one of
 * those IPs, so the backend costs next to nothing and the router's work is what the numbers show.
 * Three paths, the order rotating per case: straight to the backend (`direct`, the floor), through
 * this project's router (`ours`, `--auth=none`) and through upstream's Go router v1.0.1 (`upstream`,
 * built from the Go module proxy by hack/build-upstream-controller.sh router, with
 * `--cache-enabled --authz-mode=allow-all --access-log=false`). Both routers resolve the Sandbox by
 * name from their own watch of the control plane.
 *
 * Cases: GET of a 64-byte body at 1, 10 and 50 clients; GET of 1 MiB at 1 and 10; POST of 64 KiB
 * echoed back at 10; the same small GET at 50 clients spread over every Sandbox; a WebSocket echo of
 * 1 KiB messages and a gRPC bidirectional stream echo of 1 KiB messages at 10 connections. HTTP load
 * comes from wrk (Debian's), WebSocket and gRPC load from routerload. Each router's CPU (it and its
 * worker processes) per 1,000 requests and per MiB moved, and its peak RSS, are measured from /proc.
 *
 * The load generators share the machine with the routers and the backend, alike for every path.
 * Results: bench/results/router-<id>.json and .md.
 *
 * Flags: --duration 10  --warmup 1 (wrk rounds both up to whole seconds)  --concurrency 1,10,50 (the small GET)  --sandboxes 20  --out bench/results
 *        --smoke  --no-plot  --cpu-prof (our router's)  --workers N (our router's --workers)  --cases echo,1 MiB (names containing one)
 *        --node-flags '--trace-gc' and --router-flags '--access-log' (added to ours, for A/B runs)
 *        --hold (start everything, print the endpoints, wait for SIGINT: for experiments by hand)
 */
import { ChildProcess, execFileSync, spawn } from 'child_process';
import * as fs from 'fs';
import * as http from 'http';
import * as path from 'path';
import { connectionFromKubeconfig } from '../../tools/control-plane/api';
import { startControlPlane } from '../../tools/control-plane/control-plane';
import { Kube, waitFor } from '../../tools/control-plane/kube';
import { freePort } from '../../tools/control-plane/processes';
import { writeCrds } from '../../tools/shared/crds';
import { ensureOperatorBundle, IMAGE_NODE_FLAGS, OPERATOR_BUNDLE } from '../../tools/shared/operator-process';
import { BenchClient } from '../client';
import { DEFAULT_SETTINGS, ROOT, startController } from '../controllers';
import { flagValue } from '../flags';
import { ProcMonitor, procTreeSample, readyCondition, round } from '../measure';
import { environment } from '../report';
import { CORE } from '../scenarios/common';

const HTTP_PORT = 8888;
const GRPC_PORT = 9000;
const SMALL_BYTES = 64;
const MIB = 1024 * 1024;

export interface RouterBenchOptions {
  durationS: number;
  warmupS: number;
  /** Client counts of the small GET. */
  concurrency: number[];
  sandboxes: number;
  out: string;
  smoke: boolean;
  /** Profile our router (node --cpu-prof; the profiles go to test-results/bench/<id>/profiles). */
  cpuProf: boolean;
  /** Our router's --workers (unset: its default). */
  workers?: number;
  /** More node flags for our router (e.g. --trace-gc), and more router flags (e.g. --access-log): for A/B runs. */
  nodeFlags: string[];
  routerFlags: string[];
  /** Start everything, print the endpoints and wait for SIGINT, then stop (no cases): for experiments by hand. */
  hold: boolean;
  /** Only the cases whose name contains one of these (case-insensitive); all when empty. */
  cases: string[];
}

export function parseRouterBenchArgs(argv: string[]): RouterBenchOptions {
  const get = (name: string): string | undefined => flagValue(argv, name);
  const smoke = argv.includes('--smoke');
  const o: RouterBenchOptions = {
    durationS: Number(get('duration') ?? (smoke ? 1 : 10)),
    warmupS: Number(get('warmup') ?? (smoke ? 0.2 : 1)),
    concurrency: (get('concurrency') ?? (smoke ? '1' : '1,10,50')).split(',').map(Number),
    sandboxes: Number(get('sandboxes') ?? (smoke ? 2 : 20)),
    out: path.resolve(get('out') ?? path.join(ROOT, smoke ? 'test-results/bench-smoke' : 'bench/results')),
    smoke,
    cpuProf: argv.includes('--cpu-prof'),
    workers: get('workers') === undefined ? undefined : Number(get('workers')),
    hold: argv.includes('--hold'),
    nodeFlags: (get('node-flags') ?? '').split(' ').filter(Boolean),
    routerFlags: (get('router-flags') ?? '').split(' ').filter(Boolean),
    cases: (get('cases') ?? '').split(',').map((c) => c.trim().toLowerCase()).filter(Boolean),
  };
  for (const [name, v] of [['duration', o.durationS], ['warmup', o.warmupS]] as const) {
    if (!(v >= 0) || !Number.isFinite(v)) throw new Error(`--${name} must be a number of seconds, got ${v}`);
  }
  for (const c of o.concurrency) if (!Number.isInteger(c) || c < 1) throw new Error(`--concurrency must list positive integers, got ${c}`);
  if (!Number.isInteger(o.sandboxes) || o.sandboxes < 1) throw new Error(`--sandboxes must be a positive integer, got ${o.sandboxes}`);
  if (o.workers !== undefined && !(Number.isInteger(o.workers) && o.workers >= 0)) throw new Error(`--workers must be a whole number, got ${o.workers}`);
  return o;
}

export type Via = 'direct' | 'ours' | 'upstream';
const VIAS: Via[] = ['direct', 'ours', 'upstream'];

/** One benchmark case: what is sent, by which generator, at how many clients. */
export interface CaseSpec {
  name: string;
  tool: 'wrk' | 'ws' | 'grpc';
  concurrency: number;
  method?: 'GET' | 'POST';
  path?: string;
  /** Request body bytes (POST) or message bytes (WebSocket, gRPC). */
  sendBytes?: number;
  /** Response body bytes per request. */
  receiveBytes: number;
  /** Spread requests over every Sandbox (the routers only; direct goes to the first). */
  spread?: boolean;
}

export function caseSpecs(o: RouterBenchOptions): CaseSpec[] {
  const small = (c: number): CaseSpec => ({ name: `GET ${SMALL_BYTES} B`, tool: 'wrk', concurrency: c, method: 'GET', path: '/small', receiveBytes: SMALL_BYTES });
  const clients = (full: number) => (o.smoke ? Math.min(full, 2) : full);
  const all: CaseSpec[] = [
    ...o.concurrency.map(small),
    { name: 'GET 1 MiB', tool: 'wrk', concurrency: 1, method: 'GET', path: '/blob', receiveBytes: MIB },
    ...(o.smoke ? [] : [{ name: 'GET 1 MiB', tool: 'wrk', concurrency: 10, method: 'GET', path: '/blob', receiveBytes: MIB } as CaseSpec]),
    { name: 'POST 64 KiB echo', tool: 'wrk', concurrency: clients(10), method: 'POST', path: '/echo', sendBytes: 64 * 1024, receiveBytes: 64 * 1024 },
    { name: `GET ${SMALL_BYTES} B over ${o.sandboxes} sandboxes`, tool: 'wrk', concurrency: clients(50), method: 'GET', path: '/small', receiveBytes: SMALL_BYTES, spread: true },
    { name: 'WebSocket 1 KiB echo', tool: 'ws', concurrency: clients(10), sendBytes: 1024, receiveBytes: 1024 },
    { name: 'gRPC stream 1 KiB echo', tool: 'grpc', concurrency: clients(10), sendBytes: 1024, receiveBytes: 1024 },
  ];
  const chosen = all.filter((spec) => !o.cases.length || o.cases.some((want) => spec.name.toLowerCase().includes(want)));
  if (!chosen.length) throw new Error(`--cases ${o.cases.join(',')} matches none of: ${[...new Set(all.map((s) => s.name))].join('; ')}`);
  return chosen;
}

export interface CaseResult {
  name: string;
  concurrency: number;
  via: Via;
  requests: number;
  errors: number;
  firstError?: string;
  seconds: number;
  requestsPerSecond: number;
  latencyMs: { p50: number; p99: number };
  /** CPU seconds of the router (with its workers) in the measured window; none for direct. */
  routerCpuSeconds?: number;
  /** MiB of bodies through the router (both directions). */
  mib: number;
  /** The path cannot carry this case at all (upstream's router speaks no h2c on its proxy port, so no gRPC): why. */
  unsupported?: string;
}

interface Tools { wrk: string; routerload: string; upstreamRouter: string }

const log = (msg: string) => process.stderr.write(`[bench router ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

function buildTools(): Tools {
  const out = execFileSync(path.join(ROOT, 'hack', 'build-router-bench.sh'), { stdio: ['ignore', 'pipe', 'inherit'] }).toString().trim().split('\n');
  const at = (name: string) => {
    const line = out.find((l) => l.startsWith(`${name} `));
    if (!line) throw new Error(`hack/build-router-bench.sh printed no ${name} line:\n${out.join('\n')}`);
    return line.slice(name.length + 1);
  };
  return { wrk: at('wrk'), routerload: at('routerload'), upstreamRouter: at('sandbox-router') };
}

function startProcess(cmd: string, args: string[], logFile: string): ChildProcess {
  const out = fs.openSync(logFile, 'w');
  const child = spawn(cmd, args, { stdio: ['ignore', out, out] });
  fs.closeSync(out);
  process.on('exit', () => { try { child.kill('SIGKILL'); } catch { /* gone */ } });
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
async function waitHttpOk(url: string, child: ChildProcess, logFile: string, what: string, headers: http.OutgoingHttpHeaders = {}): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      http.get(url, { headers }, (res) => { res.resume(); resolve(res.statusCode === 200); }).on('error', () => resolve(false));
    });
    if (ok) return;
    if (child.exitCode !== null || Date.now() > deadline) {
      throw new Error(`${what} did not become ready at ${url}:\n${fs.readFileSync(logFile, 'utf8').split('\n').slice(-20).join('\n')}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Where a path's requests go: host:port for HTTP and WebSocket, and for gRPC, with the headers each carries. */
interface Endpoint { http: string; grpc: string; headers: Record<string, string>; grpcHeaders: Record<string, string>; spreadIds: string[] }

function sandboxHeaders(ns: string, id: string, port: number): Record<string, string> {
  return { 'X-Sandbox-ID': id, 'X-Sandbox-Namespace': ns, 'X-Sandbox-Port': String(port) };
}

/** wrk's Lua script for a case: method, body and headers; with spread, each request names the next Sandbox. */
export function wrkScript(spec: CaseSpec, ep: Endpoint, spread: boolean): string {
  const lines = [`wrk.method = ${JSON.stringify(spec.method)}`];
  if (spec.sendBytes) lines.push(`wrk.body = string.rep("x", ${spec.sendBytes})`);
  for (const [k, v] of Object.entries(ep.headers)) lines.push(`wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`);
  if (spread) {
    lines.push(`local ids = { ${ep.spreadIds.map((i) => JSON.stringify(i)).join(', ')} }`, 'local n = 0',
      'request = function()', '  n = n + 1', '  wrk.headers["X-Sandbox-ID"] = ids[(n % #ids) + 1]', '  return wrk.format()', 'end');
  }
  // One JSON line at the end: what wrk counted, latencies in microseconds.
  lines.push('done = function(summary, latency, requests)',
    '  local e = summary.errors',
    '  io.write(string.format(\'WRKJSON {"requests":%d,"durationUs":%d,"bytes":%d,"connect":%d,"read":%d,"write":%d,"timeout":%d,"status":%d,"p50":%d,"p99":%d}\\n\',',
    '    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.timeout, e.status, latency:percentile(50), latency:percentile(99)))',
    'end');
  return `${lines.join('\n')}\n`;
}

async function runTool(cmd: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c) => { out += c; });
    child.stderr.on('data', (c) => { err += c; });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`${path.basename(cmd)} exited ${code}: ${(err || out).slice(-500)}`))));
  });
}

interface LoadResult { requests: number; errors: number; firstError?: string; seconds: number; p50Ms: number; p99Ms: number }

async function loadOnce(tools: Tools, spec: CaseSpec, ep: Endpoint, spread: boolean, seconds: number, dir: string): Promise<LoadResult> {
  if (spec.tool === 'wrk') {
    const script = path.join(dir, 'case.lua');
    fs.writeFileSync(script, wrkScript(spec, ep, spread));
    const threads = Math.min(spec.concurrency, 2);
    // wrk takes whole seconds only (it prints its usage for "0.2s").
    const whole = Math.max(1, Math.ceil(seconds));
    const out = await runTool(tools.wrk, ['-t', String(threads), '-c', String(spec.concurrency), '-d', `${whole}s`, '-s', script, `http://${ep.http}${spec.path}`]);
    const line = out.split('\n').find((l) => l.startsWith('WRKJSON '));
    if (!line) throw new Error(`wrk printed no summary:\n${out}`);
    type Counts = 'requests' | 'durationUs' | 'bytes' | 'connect' | 'read' | 'write' | 'timeout' | 'status' | 'p50' | 'p99';
    const w = JSON.parse(line.slice(8)) as Record<Counts, number>;
    const socketErrors = w.connect + w.read + w.write + w.timeout;
    const errors = socketErrors + w.status;
    // Every response must have carried its whole body (wrk counts bytes, headers included).
    const short = w.bytes < w.requests * spec.receiveBytes;
    return {
      requests: w.requests - w.status,
      errors: errors + (short ? 1 : 0),
      seconds: w.durationUs / 1e6,
      p50Ms: w.p50 / 1000,
      p99Ms: w.p99 / 1000,
      firstError: w.status ? `${w.status} responses not 2xx/3xx` : short ? `read ${w.bytes} bytes for ${w.requests} responses of ${spec.receiveBytes}`
        : socketErrors ? `socket errors: connect ${w.connect}, read ${w.read}, write ${w.write}, timeout ${w.timeout}` : undefined,
    };
  }
  const headers = spec.tool === 'grpc' ? ep.grpcHeaders : ep.headers;
  const common = ['--concurrency', String(spec.concurrency), '--duration', `${seconds}s`, '--size', String(spec.sendBytes),
    ...Object.entries(headers).flatMap(([k, v]) => ['--header', `${k}=${v}`])];
  const args = spec.tool === 'ws' ? ['ws', '--url', `ws://${ep.http}/ws`, ...common] : ['grpc', '--addr', ep.grpc, ...common];
  const r = JSON.parse(await runTool(tools.routerload, args)) as Omit<LoadResult, 'p50Ms' | 'p99Ms'> & { latenciesMs: { p50: number; p99: number } };
  return { requests: r.requests, errors: r.errors, firstError: r.firstError, seconds: r.seconds, p50Ms: r.latenciesMs.p50, p99Ms: r.latenciesMs.p99 };
}

export interface RouterBenchReport {
  id: string;
  options: RouterBenchOptions;
  environment: object;
  commands: { ours: string[]; upstream: string[]; backend: string[] };
  cases: CaseResult[];
  summary: CaseSummary[];
  /** Peak RSS summed over each router's processes; PSS counts the pages its processes share once. */
  rss: { oursPeakMiB: number; upstreamPeakMiB: number; ratio: number; goal: boolean; oursPeakPssMiB: number; upstreamPeakPssMiB: number };
  totalSeconds: number;
}

export interface CaseSummary {
  name: string;
  concurrency: number;
  /** Ours over upstream: throughput (goal ≥ 1.0) and p99 (goal ≤ 1.0); none where upstream cannot carry the case. */
  throughputRatio?: number;
  p99Ratio?: number;
  /** Router CPU ms per 1,000 requests, ours and upstream. */
  cpuPer1k: { ours: number; upstream: number };
  /** Router CPU ms per MiB of bodies, ours and upstream (cases that move at least 64 KiB a request). */
  cpuPerMiB?: { ours: number; upstream: number; ratio: number };
  /** Our p50 over direct's, in ms (the c=1 small GET's goal: ≤ 0.3). */
  overheadP50Ms: number;
  goals: { throughput?: boolean; p99?: boolean; cpuPerMiB?: boolean; overheadP50?: boolean };
}

export function summarize(specs: CaseSpec[], cases: CaseResult[]): CaseSummary[] {
  return specs.map((spec) => {
    const find = (via: Via) => cases.find((c) => c.name === spec.name && c.concurrency === spec.concurrency && c.via === via)!;
    const [d, ours, up] = [find('direct'), find('ours'), find('upstream')];
    const per1k = (c: CaseResult) => (c.requests ? round(((c.routerCpuSeconds ?? 0) * 1e6) / c.requests) : 0);
    const perMiB = (c: CaseResult) => (c.mib ? round(((c.routerCpuSeconds ?? 0) * 1000) / c.mib, 2) : 0);
    const bulk = spec.receiveBytes + (spec.sendBytes ?? 0) >= 64 * 1024;
    const peer = up.unsupported === undefined;
    const ratio = perMiB(up) ? round(perMiB(ours) / perMiB(up), 2) : 0;
    const cpuPerMiB = bulk && peer ? { ours: perMiB(ours), upstream: perMiB(up), ratio } : undefined;
    const throughputRatio = peer ? (up.requestsPerSecond ? round(ours.requestsPerSecond / up.requestsPerSecond, 2) : 0) : undefined;
    const p99Ratio = peer ? (up.latencyMs.p99 ? round(ours.latencyMs.p99 / up.latencyMs.p99, 2) : 0) : undefined;
    const overheadP50Ms = round(ours.latencyMs.p50 - d.latencyMs.p50, 3);
    const smallC1 = spec.tool === 'wrk' && !spec.spread && spec.receiveBytes === SMALL_BYTES && spec.concurrency === 1;
    return {
      name: spec.name,
      concurrency: spec.concurrency,
      throughputRatio,
      p99Ratio,
      cpuPer1k: { ours: per1k(ours), upstream: per1k(up) },
      cpuPerMiB,
      overheadP50Ms,
      goals: {
        ...(throughputRatio === undefined ? {} : { throughput: throughputRatio >= 1 }),
        ...(p99Ratio === undefined ? {} : { p99: p99Ratio <= 1 }),
        ...(cpuPerMiB ? { cpuPerMiB: cpuPerMiB.ratio <= 1.5 } : {}),
        ...(smallC1 ? { overheadP50: overheadP50Ms <= 0.3 } : {}),
      },
    };
  });
}

export async function runRouterBench(o: RouterBenchOptions): Promise<RouterBenchReport | undefined> {
  const started = Date.now();
  const id = `router-${new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19)}${o.smoke ? '-smoke' : ''}`;
  const runDir = path.join(ROOT, 'test-results', 'bench', id);
  fs.mkdirSync(runDir, { recursive: true });
  const tools = buildTools();
  await ensureOperatorBundle(log);
  const cp = await startControlPlane({ nodes: 1, benchmarkMode: true, manifests: [writeCrds()], log: () => undefined });
  let operator: Awaited<ReturnType<typeof startController>> | undefined;
  const procs: Partial<Record<'backend' | 'ours' | 'upstream', ChildProcess>> = {};
  const monitors: ProcMonitor[] = [];
  const client = new BenchClient(connectionFromKubeconfig(cp.kubeconfig), 8);
  try {
    operator = await startController('ours', { kubeconfig: cp.kubeconfig, settings: DEFAULT_SETTINGS, logDir: path.join(runDir, 'logs') });
    const ns = await new Kube({ kubeconfig: cp.kubeconfig, binDir: cp.binDir }).createNamespace('bench-router');
    const ids = Array.from({ length: o.sandboxes }, (_, i) => `bench-router-${i}`);
    for (const name of ids) {
      await client.call('POST', `${CORE}/namespaces/${ns}/sandboxes`, {
        apiVersion: 'agents.x-k8s.io/v1beta1',
        kind: 'Sandbox',
        metadata: { name },
        spec: { podTemplate: { spec: { containers: [{ name: 'backend', image: 'routerload' }] } } },
      });
    }
    const ips: string[] = [];
    for (const name of ids) {
      await waitFor(async () => readyCondition(await client.call('GET', `${CORE}/namespaces/${ns}/sandboxes/${name}`)) || undefined, 60_000, `Sandbox ${name} Ready`);
      ips.push((await client.call('GET', `/api/v1/namespaces/${ns}/pods/${name}`)).status.podIP);
    }
    log(`${ids.length} sandboxes Ready in ${ns} (pod IPs ${ips[0]}…)`);

    const backendArgs = ['serve', `--listen=${ips.join(',')}`, `--http-port=${HTTP_PORT}`, `--grpc-port=${GRPC_PORT}`];
    const backendLog = path.join(runDir, 'backend.log');
    procs.backend = startProcess(tools.routerload, backendArgs, backendLog);
    await waitHttpOk(`http://${ips[0]}:${HTTP_PORT}/small`, procs.backend, backendLog, 'the backend');

    const [oursPort, oursProbe, upPort, upProbe, upMetrics] = await Promise.all(Array.from({ length: 5 }, () => freePort()));
    const oursArgs = [
      ...IMAGE_NODE_FLAGS, ...o.nodeFlags, ...(o.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${path.join(runDir, 'profiles')}`] : []), OPERATOR_BUNDLE,
      'router', `--kubeconfig=${cp.kubeconfig}`, `--bind-address=127.0.0.1:${oursPort}`, `--health-probe-bind-address=127.0.0.1:${oursProbe}`,
      '--metrics-bind-address=0', '--auth=none', '--allowed-pod-cidrs=127.64.0.0/12', ...(o.workers === undefined ? [] : [`--workers=${o.workers}`]),
      ...o.routerFlags,
    ];
    const oursLog = path.join(runDir, 'router-ours.log');
    procs.ours = startProcess(process.execPath, oursArgs, oursLog);
    const upArgs = [
      `--kubeconfig=${cp.kubeconfig}`, `--http-bind-address=127.0.0.1:${upPort}`, `--health-probe-bind-address=127.0.0.1:${upProbe}`,
      `--metrics-bind-address=127.0.0.1:${upMetrics}`, '--cache-enabled', '--authz-mode=allow-all', '--allow-loopback-pod-ip', '--access-log=false',
    ];
    const upLog = path.join(runDir, 'router-upstream.log');
    procs.upstream = startProcess(tools.upstreamRouter, upArgs, upLog);
    const first = sandboxHeaders(ns, ids[0], HTTP_PORT);
    // Ready when a request for the first Sandbox goes through (the watch has seen it).
    await waitHttpOk(`http://127.0.0.1:${oursPort}/small`, procs.ours, oursLog, 'our router', first);
    await waitHttpOk(`http://127.0.0.1:${upPort}/small`, procs.upstream, upLog, 'upstream\'s router', first);
    const peak = { ours: new ProcMonitor(procs.ours.pid!, 200, true), upstream: new ProcMonitor(procs.upstream.pid!, 200, true) };
    monitors.push(peak.ours, peak.upstream);

    const viaRouter = (port: number): Endpoint => ({
      http: `127.0.0.1:${port}`, grpc: `127.0.0.1:${port}`, headers: first, grpcHeaders: sandboxHeaders(ns, ids[0], GRPC_PORT), spreadIds: ids,
    });
    const endpoints: Record<Via, Endpoint> = {
      direct: { http: `${ips[0]}:${HTTP_PORT}`, grpc: `${ips[0]}:${GRPC_PORT}`, headers: {}, grpcHeaders: {}, spreadIds: [] },
      ours: viaRouter(oursPort),
      upstream: viaRouter(upPort),
    };
    const pids: Partial<Record<Via, number>> = { ours: procs.ours.pid, upstream: procs.upstream.pid };
    if (o.hold) {
      // For experiments by hand: the whole stack stays up until SIGINT; no cases run.
      const headers = Object.entries(first).map(([k, v]) => `-H '${k}: ${v}'`).join(' ');
      log(`holding until SIGINT: ours http://127.0.0.1:${oursPort} (pid ${procs.ours.pid}), upstream http://127.0.0.1:${upPort} (pid ${procs.upstream.pid}), `
        + `direct http://${ips[0]}:${HTTP_PORT}; headers ${headers}; backend paths /small /blob /echo`);
      await new Promise((resolve) => process.once('SIGINT', resolve));
      // Ctrl-C reached the children too (one process group): no cases, no report, just the clean-up.
      return undefined;
    }
    const specs = caseSpecs(o);
    const cases: CaseResult[] = [];
    for (const [n, spec] of specs.entries()) {
      // Rotate which path goes first, so none always runs on a warmer (or hotter) machine.
      const order = VIAS.map((_, i) => VIAS[(i + n) % VIAS.length]);
      for (const via of order) {
        const ep = endpoints[via];
        const spread = spec.spread === true && via !== 'direct';
        if (o.warmupS > 0) await loadOnce(tools, spec, ep, spread, o.warmupS, runDir).catch(() => undefined);
        const pid = pids[via];
        const cpu0 = pid ? procTreeSample(pid).cpuSeconds : 0;
        const r = await loadOnce(tools, spec, ep, spread, o.durationS, runDir)
          .catch((e: Error): LoadResult => ({ requests: 0, errors: 1, firstError: e.message, seconds: o.durationS, p50Ms: 0, p99Ms: 0 }));
        const cpu1 = pid ? procTreeSample(pid).cpuSeconds : 0;
        const unsupported = via === 'upstream' && spec.tool === 'grpc' && r.requests === 0 && /frame header looked like an HTTP\/1\.1 header/.test(r.firstError ?? '')
          ? 'answers HTTP/1.1 to an h2c connection: no gRPC through it' : undefined;
        const result: CaseResult = {
          name: spec.name,
          concurrency: spec.concurrency,
          via,
          requests: r.requests,
          errors: r.errors,
          firstError: r.firstError,
          seconds: round(r.seconds, 2),
          requestsPerSecond: r.seconds ? round(r.requests / r.seconds) : 0,
          latencyMs: { p50: round(r.p50Ms, 3), p99: round(r.p99Ms, 3) },
          routerCpuSeconds: pid ? round(cpu1 - cpu0, 3) : undefined,
          mib: round((r.requests * (spec.receiveBytes + (spec.sendBytes ?? 0))) / MIB, 1),
          ...(unsupported ? { unsupported, errors: 0 } : {}),
        };
        cases.push(result);
        log(`${spec.name} c=${spec.concurrency} ${via}: ${result.requests} ok, ${result.errors} errors, p50 ${result.latencyMs.p50} p99 ${result.latencyMs.p99} ms, ${result.requestsPerSecond}/s`
          + `${result.routerCpuSeconds === undefined ? '' : `, router CPU ${result.routerCpuSeconds} s`}${result.firstError ? ` (first error: ${result.firstError})` : ''}`);
      }
    }
    const rss = {
      oursPeakMiB: round(peak.ours.peakRssKiB / 1024),
      upstreamPeakMiB: round(peak.upstream.peakRssKiB / 1024),
      ratio: 0,
      goal: false,
      oursPeakPssMiB: round(peak.ours.peakPssKiB / 1024),
      upstreamPeakPssMiB: round(peak.upstream.peakPssKiB / 1024),
    };
    rss.ratio = rss.upstreamPeakMiB ? round(rss.oursPeakMiB / rss.upstreamPeakMiB, 2) : 0;
    rss.goal = rss.ratio <= 2;
    const hide = (a: string) => a.replace(cp.kubeconfig, '<kubeconfig>').replace(ROOT, '.');
    return {
      id,
      options: o,
      environment: environment(),
      commands: { ours: oursArgs.map(hide), upstream: [path.basename(tools.upstreamRouter), ...upArgs.map(hide)], backend: ['routerload', ...backendArgs] },
      cases,
      summary: summarize(specs, cases),
      rss,
      totalSeconds: Math.round((Date.now() - started) / 1000),
    };
  } finally {
    for (const m of monitors) m.stop();
    await stopProcess(procs.ours);
    await stopProcess(procs.upstream);
    await stopProcess(procs.backend);
    await operator?.stop();
    client.close();
    await cp.stop();
  }
}

export function routerMarkdown(r: RouterBenchReport): string {
  const yes = (b: boolean | undefined) => (b === undefined ? '' : b ? ' (met)' : ' (**not met**)');
  const cell = (name: string, c: number, via: Via) => {
    const x = r.cases.find((k) => k.name === name && k.concurrency === c && k.via === via)!;
    if (x.unsupported) return `not supported: ${x.unsupported}`;
    return `${x.requestsPerSecond.toLocaleString('en-US')}/s, p50 ${x.latencyMs.p50} p99 ${x.latencyMs.p99} ms${x.errors ? `, **${x.errors} errors**` : ''}`;
  };
  const lines = [
    `# Router benchmark ${r.id}`, '',
    `${r.options.durationS} s per case after ${r.options.warmupS} s of warm-up; ${r.options.sandboxes} sandboxes; the backend is routerload on each pod IP; `
      + 'HTTP load from wrk, WebSocket and gRPC from routerload, all on the same machine. '
      + `Machine: ${JSON.stringify(r.environment)}.`, '',
    `Ours: \`${r.commands.ours.join(' ')}\``, '',
    `Upstream: \`${r.commands.upstream.join(' ')}\``, '',
    '| case | clients | direct | ours | upstream Go router | ours/upstream throughput (≥ 1.0) | p99 ours/upstream (≤ 1.0) | router CPU ms per 1k requests, ours vs upstream | CPU ms per MiB, ours vs upstream (ratio ≤ 1.5) |',
    '|---|---:|---|---|---|---|---|---|---|',
    ...r.summary.map((s) => `| ${s.name} | ${s.concurrency} | ${cell(s.name, s.concurrency, 'direct')} | ${cell(s.name, s.concurrency, 'ours')} | ${cell(s.name, s.concurrency, 'upstream')} `
      + `| ${s.throughputRatio === undefined ? '–' : `${s.throughputRatio}×`}${yes(s.goals.throughput)} | ${s.p99Ratio === undefined ? '–' : `${s.p99Ratio}×`}${yes(s.goals.p99)} `
      + `| ${s.cpuPer1k.ours} vs ${s.throughputRatio === undefined ? '–' : s.cpuPer1k.upstream} `
      + `| ${s.cpuPerMiB ? `${s.cpuPerMiB.ours} vs ${s.cpuPerMiB.upstream} (${s.cpuPerMiB.ratio}×)${yes(s.goals.cpuPerMiB)}` : '–'} |`),
    '',
    ...r.summary.filter((s) => s.goals.overheadP50 !== undefined).map((s) => `Small-request overhead over direct at c=1, p50: ${s.overheadP50Ms} ms (goal ≤ 0.3 ms)${yes(s.goals.overheadP50)}.`),
    `Peak RSS: ours ${r.rss.oursPeakMiB} MiB (summed over its processes), upstream ${r.rss.upstreamPeakMiB} MiB: ${r.rss.ratio}× (goal ≤ 2×)${yes(r.rss.goal)}; `
      + `peak PSS (shared pages counted once): ours ${r.rss.oursPeakPssMiB} MiB, upstream ${r.rss.upstreamPeakPssMiB} MiB. Total ${r.totalSeconds} s.`, '',
  ];
  return lines.join('\n');
}

export async function main(argv: string[]): Promise<number> {
  const o = parseRouterBenchArgs(argv);
  const report = await runRouterBench(o);
  if (!report) return 0;
  fs.mkdirSync(o.out, { recursive: true });
  const base = path.join(o.out, report.id);
  fs.writeFileSync(`${base}.json`, `${JSON.stringify(report, null, 2)}\n`);
  fs.writeFileSync(`${base}.md`, routerMarkdown(report));
  log(`wrote ${base}.json, ${base}.md`);
  if (!o.smoke && !argv.includes('--no-plot')) {
    try {
      execFileSync(path.join(ROOT, 'bench', 'plot.sh'), [`${base}.json`, `${base}.png`], { stdio: ['ignore', 'inherit', 'inherit'] });
      log(`wrote ${base}.png`);
    } catch (e) {
      log(`plot failed (the results are in ${base}.json): ${(e as Error).message}`);
    }
  }
  // Our router and the backend must answer every request; upstream's errors are its own, shown in the table.
  return report.cases.some((c) => (c.via === 'upstream' ? c.requests === 0 && !c.unsupported : c.errors > 0 || c.requests === 0)) ? 1 : 0;
}

if (require.main === module) {
  main(process.argv.slice(2)).then((code) => process.exit(code), (e) => {
    log(`fatal: ${(e as Error).stack}`);
    process.exit(2);
  });
}
