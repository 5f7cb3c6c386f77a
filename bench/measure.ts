/**
 * What the harness measures: per-claim latency from the client's create call to Ready=True seen
 * on a watch, sandbox readiness (refill), the API server's request counters diffed around a
 * phase, and a process's CPU-seconds and peak RSS from /proc.
 */
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import { performance } from 'perf_hooks';
import { BenchClient, Watch } from './client';
import { ResourceType } from '../operator/src/runtime/types';

export const CLAIMS: ResourceType = { group: 'extensions.agents.x-k8s.io', version: 'v1beta1', resource: 'sandboxclaims', namespaced: true };
export const SANDBOXES: ResourceType = { group: 'agents.x-k8s.io', version: 'v1beta1', resource: 'sandboxes', namespaced: true };

export const now = (): number => performance.now();

export function readyCondition(obj: any): boolean {
  return (obj?.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True');
}

/** Watches the claims of one namespace and records when each is first seen Ready=True. */
export class ClaimTracker {
  public readonly createdAt = new Map<string, number>();
  public readonly ackAt = new Map<string, number>();
  public readonly readyAt = new Map<string, number>();
  public readonly failed = new Map<string, string>();
  /** Wall-clock create times, to line up with the controller's own timestamps. */
  private readonly wallCreatedAt = new Map<string, number>();
  /** The controller's observability annotations (wall clock, ms), when it writes them. */
  private readonly controllerTimes = new Map<string, { observedAt: number; readyAt: number }>();
  private watch?: Watch;
  private waiters: Array<() => void> = [];

  public constructor(private readonly client: BenchClient, private readonly ns: string) {}

  public async start(): Promise<void> {
    this.watch = this.client.stream(CLAIMS, this.ns, (type, obj) => {
      const name = obj?.metadata?.name;
      if (type === 'DELETED' || !name) return;
      this.noteControllerTimes(name, obj);
      if (this.readyAt.has(name)) return;
      if (readyCondition(obj)) {
        this.readyAt.set(name, now());
        this.wake();
      }
    });
    await this.watch.ready;
  }

  /** POSTs one claim; the clock starts just before the request is written. */
  public async create(manifest: any): Promise<void> {
    const name = manifest.metadata.name;
    this.createdAt.set(name, now());
    this.wallCreatedAt.set(name, Date.now());
    try {
      await this.client.call('POST', `/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/${this.ns}/sandboxclaims`, manifest);
      this.ackAt.set(name, now());
    } catch (e) {
      this.failed.set(name, (e as Error).message);
      this.wake();
    }
  }

  public get pending(): number {
    return this.createdAt.size - this.readyAt.size - this.failed.size;
  }

  /** Resolves when every created claim is Ready or failed, or after `timeoutMs` (no throw: the report says what happened). */
  public async settle(timeoutMs: number): Promise<boolean> {
    const deadline = now() + timeoutMs;
    while (this.pending > 0 && now() < deadline) {
      await new Promise<void>((r) => {
        const t = setTimeout(r, 250);
        this.waiters.push(() => { clearTimeout(t); r(); });
      });
    }
    return this.pending === 0;
  }

  /** Latencies (ms) of Ready claims, and throughput from the first create to the last Ready. */
  public result(): ClaimResult {
    const lat: number[] = [];
    const ack: number[] = [];
    for (const [name, t0] of this.createdAt) {
      const t1 = this.readyAt.get(name);
      if (t1 !== undefined) lat.push(t1 - t0);
      const a = this.ackAt.get(name);
      if (a !== undefined) ack.push(a - t0);
    }
    // Split by the controller's own annotations (both controllers write them): from the create call
    // to the controller's first sight of the claim (API server and watch delivery), then inside it.
    const toController: number[] = [];
    const inController: number[] = [];
    for (const [name, times] of this.controllerTimes) {
      const created = this.wallCreatedAt.get(name);
      if (created !== undefined) toController.push(times.observedAt - created);
      inController.push(times.readyAt - times.observedAt);
    }
    const first = Math.min(...this.createdAt.values());
    const last = Math.max(...this.readyAt.values());
    const spanMs = this.readyAt.size ? last - first : 0;
    return {
      created: this.createdAt.size,
      ready: this.readyAt.size,
      failed: this.failed.size,
      failures: [...this.failed.values()].slice(0, 5),
      latencyMs: stats(lat),
      createAckMs: stats(ack),
      ...(inController.length > 0 ? { createToControllerMs: stats(toController), inControllerMs: stats(inController) } : {}),
      firstCreateToLastReadyMs: round(spanMs),
      claimsPerSecond: spanMs > 0 ? round((this.readyAt.size / spanMs) * 1000) : 0,
      latenciesMs: lat.map((x) => round(x)),
    };
  }

  public stop(): void {
    this.watch?.close();
  }

  private noteControllerTimes(name: string, obj: any): void {
    if (this.controllerTimes.has(name)) return;
    const annotations = obj?.metadata?.annotations ?? {};
    const observedAt = Date.parse(annotations['agents.x-k8s.io/controller-first-observed-at'] ?? '');
    const readyAt = Date.parse(annotations['agents.x-k8s.io/claim-first-ready-at'] ?? '');
    if (Number.isFinite(observedAt) && Number.isFinite(readyAt)) this.controllerTimes.set(name, { observedAt, readyAt });
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }
}

export interface ClaimResult {
  created: number;
  ready: number;
  failed: number;
  failures: string[];
  latencyMs: Stats;
  createAckMs: Stats;
  /** Create call (wall clock) to the controller's controller-first-observed-at annotation. */
  createToControllerMs?: Stats;
  /** controller-first-observed-at to claim-first-ready-at: the controller's own share. */
  inControllerMs?: Stats;
  firstCreateToLastReadyMs: number;
  claimsPerSecond: number;
  latenciesMs: number[];
}

/** Watches the Sandboxes of one namespace: which are Ready and who controls them. */
export class SandboxTracker {
  public readonly firstReadyAt = new Map<string, number>();
  public readonly owner = new Map<string, string>();
  public readonly deleted = new Set<string>();
  private watch?: Watch;

  public constructor(private readonly client: BenchClient, private readonly ns: string) {}

  public async start(): Promise<void> {
    this.watch = this.client.stream(SANDBOXES, this.ns, (type, obj) => {
      const name = obj?.metadata?.name;
      if (!name) return;
      if (type === 'DELETED' || obj.metadata.deletionTimestamp) {
        this.deleted.add(name);
        return;
      }
      const ref = (obj.metadata.ownerReferences ?? []).find((r: any) => r.controller);
      this.owner.set(name, ref ? `${ref.kind}/${ref.name}` : '');
      if (readyCondition(obj) && !this.firstReadyAt.has(name)) this.firstReadyAt.set(name, now());
    });
    await this.watch.ready;
  }

  /** Live, Ready Sandboxes controlled by the pool. */
  public readyPoolMembers(pool: string): number {
    let n = 0;
    for (const [name, owner] of this.owner) {
      if (owner === `SandboxWarmPool/${pool}` && this.firstReadyAt.has(name) && !this.deleted.has(name)) n++;
    }
    return n;
  }

  public stop(): void {
    this.watch?.close();
  }
}

export interface Stats { n: number; min: number; p50: number; p90: number; p99: number; max: number; mean: number }

/** Nearest-rank percentiles, rounded to 0.1 ms. */
export function stats(values: number[]): Stats {
  const s = [...values].sort((a, b) => a - b);
  if (!s.length) return { n: 0, min: 0, p50: 0, p90: 0, p99: 0, max: 0, mean: 0 };
  const at = (q: number) => round(s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]);
  return { n: s.length, min: round(s[0]), p50: at(0.5), p90: at(0.9), p99: at(0.99), max: round(s[s.length - 1]), mean: round(s.reduce((a, b) => a + b, 0) / s.length) };
}

export function round(x: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

const WRITE = /^(POST|PUT|PATCH|DELETE|APPLY|CREATE|UPDATE|DELETECOLLECTION)\b/;
/** Resources whose writes come from the controller under test (pods/binding and pods/status are the scheduler's and kwok's). */
const CONTROLLER_RESOURCES = /^(sandboxes|sandboxes\/status|sandboxclaims|sandboxclaims\/status|sandboxwarmpools|sandboxwarmpools\/status|sandboxtemplates|sandboxtemplates\/status|pods|services|persistentvolumeclaims|networkpolicies|events)$/;

export interface RequestDiff {
  /** Every request the apiserver counted in the phase, by `VERB resource`. */
  all: Record<string, number>;
  /** Writes per claim, minus the harness's own requests (its claim POSTs). */
  writesPerClaim: Record<string, number>;
  /** Sum of writes per claim to the resources the controller writes. */
  controllerWritesPerClaim: number;
  /** Reads (GET/LIST) per claim, minus the harness's own. */
  readsPerClaim: number;
}

export function diffRequests(before: Map<string, number>, after: Map<string, number>, harness: Map<string, number>, claims: number): RequestDiff {
  const all: Record<string, number> = {};
  const writesPerClaim: Record<string, number> = {};
  let controllerWrites = 0;
  let reads = 0;
  for (const [key, value] of after) {
    const delta = value - (before.get(key) ?? 0) - (harness.get(key) ?? 0);
    if (delta <= 0) continue;
    all[key] = delta;
    if (WRITE.test(key)) {
      writesPerClaim[key] = claims ? round(delta / claims, 2) : delta;
      if (CONTROLLER_RESOURCES.test(key.split(' ')[1]) && !key.startsWith('DELETE pods')) controllerWrites += delta;
    } else if (/^(GET|LIST) /.test(key)) {
      reads += delta;
    }
  }
  return { all, writesPerClaim, controllerWritesPerClaim: claims ? round(controllerWrites / claims, 2) : 0, readsPerClaim: claims ? round(reads / claims, 2) : 0 };
}

let clkTck: number | undefined;
function ticksPerSecond(): number {
  if (clkTck === undefined) {
    try { clkTck = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100; } catch { clkTck = 100; }
  }
  return clkTck;
}

export interface ProcSample { cpuSeconds: number; rssKiB: number; hwmKiB: number }

/** utime+stime (fields 14 and 15 of /proc/<pid>/stat) in seconds, VmRSS and VmHWM in KiB. */
export function procSample(pid: number): ProcSample {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const cpuSeconds = (Number(fields[11]) + Number(fields[12])) / ticksPerSecond();
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
  return { cpuSeconds, rssKiB: kib('VmRSS'), hwmKiB: kib('VmHWM') };
}

/** The pid and all its descendants (through /proc/<pid>/task/<tid>/children). */
export function processTree(pid: number): number[] {
  const out = [pid];
  for (let i = 0; i < out.length; i++) {
    let tasks: string[] = [];
    try { tasks = fs.readdirSync(`/proc/${out[i]}/task`); } catch { continue; }
    for (const tid of tasks) {
      try {
        for (const child of fs.readFileSync(`/proc/${out[i]}/task/${tid}/children`, 'utf8').split(' ')) if (child.trim()) out.push(Number(child));
      } catch { /* the task ended */ }
    }
  }
  return out;
}

/** procSample summed over a process and its descendants (a process with worker processes); hwmKiB is the sum of each one's peak. */
export function procTreeSample(pid: number): ProcSample {
  const total: ProcSample = { cpuSeconds: 0, rssKiB: 0, hwmKiB: 0 };
  for (const p of processTree(pid)) {
    try {
      const s = procSample(p);
      total.cpuSeconds += s.cpuSeconds;
      total.rssKiB += s.rssKiB;
      total.hwmKiB += s.hwmKiB;
    } catch { /* it exited between the listing and the read */ }
  }
  return total;
}

/**
 * Proportional set size (Pss of /proc/<pid>/smaps_rollup) summed over a process and its
 * descendants: pages they share (the Node.js binary and code of worker processes) counted once in
 * total, where summed RSS counts them once per process.
 */
export function procTreePssKiB(pid: number): number {
  let total = 0;
  for (const p of processTree(pid)) {
    try {
      total += Number(/^Pss:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${p}/smaps_rollup`, 'utf8'))?.[1] ?? 0);
    } catch { /* it exited */ }
  }
  return total;
}

/**
 * Samples a process (with `tree`, it and its descendants together, and their PSS as well) every
 * `intervalMs` and keeps the highest RSS seen (VmHWM covers start-up too).
 */
export class ProcMonitor {
  public peakRssKiB = 0;
  /** With `tree`: the highest summed PSS seen. */
  public peakPssKiB = 0;
  private readonly timer: NodeJS.Timeout;
  public constructor(private readonly pid: number, intervalMs = 200, private readonly tree = false) {
    this.timer = setInterval(() => this.sample(), intervalMs);
    this.sample();
  }

  public sample(): ProcSample | undefined {
    try {
      const s = this.tree ? procTreeSample(this.pid) : procSample(this.pid);
      if (this.tree) this.peakPssKiB = Math.max(this.peakPssKiB, procTreePssKiB(this.pid));
      this.peakRssKiB = Math.max(this.peakRssKiB, s.rssKiB);
      return s;
    } catch {
      return undefined;
    }
  }

  public stop(): void {
    clearInterval(this.timer);
  }
}

/** The load average (1, 5, 15 min) and the core count: what else the machine was doing during a measurement. */
export interface Load { loadAvg: number[]; cpus: number }
export const load = (): Load => ({ loadAvg: os.loadavg().map((x) => round(x, 2)), cpus: os.cpus().length });
export const loadText = (l: Load): string => `${l.loadAvg.join(' / ')} on ${l.cpus} cores`;
