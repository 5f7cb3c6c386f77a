/**
 * The fault suite's harness: its own local control plane, the real operator bundle (restarted like
 * a Deployment would restart it), a template + warm pool + claims workload in one namespace, the
 * invariants checked after every fault, and the summary written to test-results/.
 */
import * as fs from 'fs';
import * as path from 'path';
import * as yaml from 'yaml';
import { ApiClient, connectionFromKubeconfig } from '../../tools/control-plane/api';
import { ControlPlane, startControlPlane } from '../../tools/control-plane/control-plane';
import { waitFor } from '../../tools/control-plane/kube';
import { sleep } from '../../tools/control-plane/processes';
import { writeCrds } from '../../tools/shared/crds';
import { Metrics } from '../../tools/shared/metrics';
import { OperatorProcess } from '../../tools/shared/operator-process';
import { claimManifest, claimReady, controllerOf, poolManifest, templateManifest } from '../integration/operator/extensions-api';
import { isReady } from '../integration/operator/sandbox-api';

export const ROOT = path.resolve(__dirname, '..', '..');
const EXT = '/apis/extensions.agents.x-k8s.io/v1beta1';
const CORE = '/apis/agents.x-k8s.io/v1beta1';
export const OPERATOR_ARGS = ['--extensions=true', '--leader-elect=false'];
export const CONTROLLERS = ['sandbox', 'sandboxtemplate', 'sandboxwarmpool', 'sandboxclaim'];

/** A number from the environment (the suite's sizes), or the CI default. */
export function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name}="${raw}" is not a non-negative number`);
  return n;
}

/** Park-Miller's minimal standard generator: seeded, so a failing run's kill schedule can be replayed. */
export function seededRandom(seed: number): () => number {
  const m = 2_147_483_647;
  let state = (Math.floor(Math.abs(seed)) % (m - 1)) + 1;
  return () => {
    state = (state * 48_271) % m;
    return (state - 1) / (m - 1);
  };
}

/** The suite's own control plane: faults kill its processes, so it is shared with no other suite. */
export async function startFaultCluster(): Promise<ControlPlane> {
  return startControlPlane({ nodes: 3, podRunner: false, manifests: [writeCrds()] });
}

/** A kubeconfig like `kubeconfig` but pointing at `server` (the freezable proxy). */
export function kubeconfigFor(kubeconfig: string, server: string, file: string): string {
  const doc = yaml.parse(fs.readFileSync(kubeconfig, 'utf8'));
  for (const c of doc.clusters) c.cluster.server = server;
  fs.writeFileSync(file, yaml.stringify(doc), { mode: 0o600 });
  return file;
}

/** CPU time (user + system) of a process so far, in seconds, from /proc. */
export function cpuSeconds(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
}

/** One row of the summary: a fault, how often it was injected, how long recovery took, what was lost. */
export interface FaultRecord {
  readonly fault: string;
  readonly injections: number;
  /** Milliseconds from each injection (or from the end of the outage) until every claim was served again. */
  readonly recoveryMs: number[];
  /** Claims served across the fault (every one Ready and bound before the fault's check passed). */
  readonly claims: number;
  readonly lostClaims: number;
  readonly doubleBound: number;
  readonly orphans: number;
  readonly quietCpuPercent: number;
  readonly quietReconcilesPerSecond: number;
  readonly notes?: string;
}

export function median(values: number[]): number {
  if (values.length === 0) return 0;
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid] : Math.round((s[mid - 1] + s[mid]) / 2);
}

/** test-results/faults.json and faults.md: every fault run so far. */
export function writeSummary(records: FaultRecord[], meta: Record<string, unknown>): void {
  const dir = path.join(ROOT, 'test-results');
  fs.mkdirSync(dir, { recursive: true });
  const rows = records.map((r) => ({
    ...r,
    recoveryMedianMs: median(r.recoveryMs),
    recoveryMaxMs: r.recoveryMs.length ? Math.max(...r.recoveryMs) : 0,
  }));
  fs.writeFileSync(path.join(dir, 'faults.json'), `${JSON.stringify({ ...meta, faults: rows }, null, 2)}\n`);
  const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  const md = [
    '| Fault | Injected | Claims | Recovery median | Recovery max | Lost / double-bound / orphans | Quiet CPU, reconciles/s | Notes |',
    '|---|---:|---:|---:|---:|---|---|---|',
    ...rows.map((r) => `| ${r.fault} | ${r.injections} | ${r.claims} | ${s(r.recoveryMedianMs)} | ${s(r.recoveryMaxMs)} | `
      + `${r.lostClaims} / ${r.doubleBound} / ${r.orphans} | ${r.quietCpuPercent.toFixed(1)} %, ${r.quietReconcilesPerSecond.toFixed(2)} | ${r.notes ?? ''} |`),
    '',
    ...Object.entries(meta).map(([k, v]) => `- ${k}: ${JSON.stringify(v)}`),
    '',
  ].join('\n');
  fs.writeFileSync(path.join(dir, 'faults.md'), md);
}

/** The state of the workload namespace, read straight from the API server. */
export interface Snapshot {
  readonly claims: any[];
  readonly sandboxes: any[];
  readonly pods: any[];
  readonly services: any[];
  readonly pvcs: any[];
  readonly pool: any;
}

/** What broke: each list empty when the invariants hold. */
export interface Violations {
  /** Claims not (yet) Ready and bound to an existing Sandbox they control. */
  readonly notServed: string[];
  /** Sandboxes named by two claims, or claims controlling two Sandboxes. */
  readonly doubleBound: string[];
  /** Pods, Services and PVCs not controlled by an existing Sandbox. */
  readonly orphans: string[];
  /** The pool's live, Ready, unclaimed members differ from spec.replicas. */
  readonly pool?: string;
  /**
   * Not a violation: the garbage collector's work still to do, Sandboxes of deleted claims and
   * objects being deleted. Until it is done the cluster is not settled: kube-controller-manager
   * deletes them at its client's pace (20 requests/s; about 80 ms a Sandbox), and every deletion
   * wakes the operator (the Sandbox's key for it and its children, the claim's, the template's),
   * a tail a quiet window opened early measures as a loop (seed 889636: 50 claims' Sandboxes, 75
   * reconciles/s).
   */
  readonly garbage: string[];
}

export function violations(s: Snapshot, wanted: readonly string[]): Violations {
  const sandboxByName = new Map(s.sandboxes.map((x) => [x.metadata.name, x]));
  const sandboxUids = new Set(s.sandboxes.map((x) => x.metadata.uid));
  const claimByName = new Map(s.claims.map((c) => [c.metadata.name, c]));
  const notServed: string[] = [];
  for (const name of wanted) {
    const claim = claimByName.get(name);
    const bound = claim?.status?.sandbox?.name;
    const sandbox = bound ? sandboxByName.get(bound) : undefined;
    if (!claim || !claimReady(claim) || !sandbox || controllerOf(sandbox)?.uid !== claim.metadata.uid) notServed.push(name);
  }
  const doubleBound: string[] = [];
  const claimsOfSandbox = new Map<string, string[]>();
  for (const c of s.claims) {
    const bound = c.status?.sandbox?.name;
    if (bound) claimsOfSandbox.set(bound, [...claimsOfSandbox.get(bound) ?? [], c.metadata.name]);
  }
  for (const [sb, claims] of claimsOfSandbox) if (claims.length > 1) doubleBound.push(`sandbox ${sb} named by claims ${claims.join(', ')}`);
  const controlled = new Map<string, string[]>();
  for (const sb of s.sandboxes) {
    const ref = controllerOf(sb);
    if (ref?.kind === 'SandboxClaim' && !sb.metadata.deletionTimestamp) controlled.set(ref.uid, [...controlled.get(ref.uid) ?? [], sb.metadata.name]);
  }
  for (const c of s.claims) {
    const mine = controlled.get(c.metadata.uid) ?? [];
    if (mine.length > 1) doubleBound.push(`claim ${c.metadata.name} controls sandboxes ${mine.join(', ')}`);
  }
  const orphans: string[] = [];
  for (const [kind, items] of [['Pod', s.pods], ['Service', s.services], ['PersistentVolumeClaim', s.pvcs]] as const) {
    for (const o of items) {
      if (o.metadata.deletionTimestamp) continue;
      const owners = (o.metadata.ownerReferences ?? []).filter((r: any) => r.kind === 'Sandbox' && sandboxUids.has(r.uid));
      if (owners.length === 0) orphans.push(`${kind} ${o.metadata.name}`);
    }
  }
  const claimUids = new Set(s.claims.map((c) => c.metadata.uid));
  const garbage: string[] = [];
  for (const sb of s.sandboxes) {
    const ref = controllerOf(sb);
    if (ref?.kind === 'SandboxClaim' && !claimUids.has(ref.uid)) garbage.push(`Sandbox ${sb.metadata.name} of deleted claim ${ref.name}`);
  }
  for (const [kind, items] of [['SandboxClaim', s.claims], ['Sandbox', s.sandboxes], ['Pod', s.pods], ['Service', s.services],
    ['PersistentVolumeClaim', s.pvcs]] as const) {
    for (const o of items) if (o.metadata.deletionTimestamp) garbage.push(`${kind} ${o.metadata.name} being deleted`);
  }
  let pool: string | undefined;
  if (s.pool) {
    const members = s.sandboxes.filter((x) => {
      const ref = controllerOf(x);
      return ref?.kind === 'SandboxWarmPool' && ref.uid === s.pool.metadata.uid && !x.metadata.deletionTimestamp;
    });
    const ready = members.filter(isReady).length;
    if (members.length !== s.pool.spec.replicas || ready !== s.pool.spec.replicas) {
      pool = `pool ${s.pool.metadata.name}: ${members.length} members, ${ready} Ready, spec.replicas ${s.pool.spec.replicas}`;
    }
  }
  return { notServed, doubleBound, orphans, pool, garbage };
}

export function holds(v: Violations): boolean {
  return v.notServed.length === 0 && v.doubleBound.length === 0 && v.orphans.length === 0 && v.pool === undefined;
}

/** One namespace with a template, a warm pool and the claims the faults create. */
export class Workload {
  public static async create(kubeconfig: string, ns: string, replicas: number): Promise<Workload> {
    const api = new ApiClient(connectionFromKubeconfig(kubeconfig));
    await api.call('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    const w = new Workload(api, ns);
    await api.call('POST', w.path('sandboxtemplates'), templateManifest(w.template));
    await api.call('POST', w.path('sandboxwarmpools'), poolManifest(w.pool, w.template, replicas));
    return w;
  }

  public constructor(public readonly api: ApiClient, public readonly ns: string, public readonly pool = 'pool', public readonly template = 'tpl') {}

  public path(plural: string, name?: string): string {
    const group = plural === 'sandboxes' ? CORE : plural.startsWith('sandbox') ? EXT : '/api/v1';
    return `${group}/namespaces/${this.ns}/${plural}${name ? `/${name}` : ''}`;
  }

  /**
   * Creates claims, `concurrency` at a time, retrying through API server outages: a create that
   * may have reached the server is retried too, and its AlreadyExists counts as created.
   */
  public async createClaims(names: readonly string[], concurrency = 10, spec: Record<string, unknown> = {}): Promise<void> {
    let next = 0;
    const worker = async () => {
      while (next < names.length) {
        const name = names[next++];
        await retry(async () => {
          const res = await this.api.request('POST', this.path('sandboxclaims'), claimManifest(name, this.pool, spec), { timeoutMs: 10_000 });
          if (res.status === 409 || (res.status >= 200 && res.status < 300)) return;
          throw new Error(`create claim ${name}: HTTP ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
        }, 120_000, `creating claim ${name}`);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
  }

  /** Deletes every claim (their Sandboxes and children follow through owner references). */
  public async deleteAllClaims(): Promise<void> {
    await retry(() => this.api.call('DELETE', this.path('sandboxclaims')), 60_000, 'deleting the claims');
  }

  public async setReplicas(replicas: number): Promise<void> {
    await retry(() => this.api.call('PATCH', this.path('sandboxwarmpools', this.pool), { spec: { replicas } }), 60_000, 'scaling the pool');
  }

  public async snapshot(): Promise<Snapshot> {
    const list = async (plural: string) => (await this.api.call('GET', this.path(plural), undefined, { timeoutMs: 30_000 })).items as any[];
    const [claims, sandboxes, pods, services, pvcs, pool] = await Promise.all([
      list('sandboxclaims'), list('sandboxes'), list('pods'), list('services'), list('persistentvolumeclaims'),
      this.api.call('GET', this.path('sandboxwarmpools', this.pool)),
    ]);
    return { claims, sandboxes, pods, services, pvcs, pool };
  }

  /** Polls until every named claim is served (transport errors while the API server is away are retried). */
  public async waitServed(names: readonly string[], timeoutMs: number): Promise<void> {
    let last: Violations | undefined;
    try {
      await waitFor(async () => {
        try {
          last = violations(await this.snapshot(), names);
        } catch {
          return false;
        }
        return last.notServed.length === 0;
      }, timeoutMs, `${names.length} claims to be Ready`);
    } catch (e) {
      throw new Error(`${(e as Error).message}: ${last?.notServed.length} not served (${last?.notServed.slice(0, 10).join(', ')})`);
    }
  }

  /**
   * Waits until every invariant holds (claims served, nothing double-bound, no orphans, the pool
   * full) and the garbage collector is done (Violations.garbage), and returns the violations seen
   * last if that never happened. A settle that took over 10 s, or never came, logs what it waited
   * on and from when (each change of the unsettled state), so a failure's log says why.
   */
  public async settle(names: readonly string[], timeoutMs: number): Promise<Violations> {
    let last: Violations = { notServed: [...names], doubleBound: [], orphans: [], garbage: [] };
    const started = Date.now();
    const deadline = started + timeoutMs;
    const timeline: string[] = [];
    let previous = '';
    const note = (state: string) => {
      if (state === previous) return;
      previous = state;
      timeline.push(`+${((Date.now() - started) / 1000).toFixed(1)} s ${state}`);
    };
    const report = (outcome: string) => {
      if (Date.now() - started < 10_000 && outcome === 'settled') return;
      // eslint-disable-next-line no-console
      console.log(`settle ${outcome} after ${((Date.now() - started) / 1000).toFixed(1)} s; waited on: ${timeline.slice(-12).join(' | ')}`);
    };
    while (Date.now() < deadline) {
      try {
        last = violations(await this.snapshot(), names);
        if (holds(last) && last.garbage.length === 0) {
          report('settled');
          return last;
        }
        note(unsettled(last));
      } catch (e) {
        // the API server may be restarting
        note(`snapshot failed: ${(e as Error).message.slice(0, 120)}`);
      }
      await sleep(500);
    }
    report('timed out');
    return last;
  }
}

/** What keeps `v` from settled, in a line (counts and the first few names). */
export function unsettled(v: Violations): string {
  const parts: string[] = [];
  const list = (what: string, items: string[]) => {
    if (items.length) parts.push(`${items.length} ${what} (${items.slice(0, 3).join(', ')}${items.length > 3 ? ', ...' : ''})`);
  };
  list('not served', v.notServed);
  list('double-bound', v.doubleBound);
  list('orphans', v.orphans);
  if (v.pool) parts.push(v.pool);
  list('garbage', v.garbage);
  return parts.join('; ');
}

/** Runs `fn` until it resolves, retrying any error every 250 ms, for at most `timeoutMs`. */
export async function retry<T>(fn: () => Promise<T>, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (e) {
      if (Date.now() >= deadline) throw new Error(`${what}: ${(e as Error).message}`);
      await sleep(250);
    }
  }
}

/**
 * Operator CPU and reconciles over a quiet window (nothing changing, every work queue drained): a
 * hot loop shows as CPU far above idle or a reconcile rate far above zero. Returns CPU percent of
 * one core and reconciles/s, in all and by controller.
 */
export async function quietWindow(op: OperatorProcess, ms: number): Promise<QuietWindow> {
  const total = 'controller_runtime_reconcile_total';
  // The cluster may look settled while the operator still works through the events of getting it
  // there (on a loaded machine, a few hundred): that backlog is not a loop, so the window opens
  // once every queue has drained. A loop requeues itself and still shows in the window.
  await op.waitIdle(controllersIn(await op.metrics(), 'controller_runtime_max_concurrent_reconciles'), 60_000);
  const cpu0 = cpuSeconds(op.pid);
  const m0 = await op.metrics();
  const t0 = Date.now();
  await sleep(ms);
  const cpu1 = cpuSeconds(op.pid);
  const m1 = await op.metrics();
  const seconds = (Date.now() - t0) / 1000;
  const byController: Record<string, number> = {};
  for (const controller of controllersIn(m1, total)) {
    const rate = (m1.sum(total, { controller }) - m0.sum(total, { controller })) / seconds;
    if (rate > 0) byController[controller] = rate;
  }
  return {
    cpuPercent: ((cpu1 - cpu0) / seconds) * 100,
    reconcilesPerSecond: (m1.sum(total) - m0.sum(total)) / seconds,
    byController,
  };
}

/** What a quiet window measured; `byController` names where reconciles went (only those above zero). */
export interface QuietWindow {
  readonly cpuPercent: number;
  readonly reconcilesPerSecond: number;
  readonly byController: Record<string, number>;
}

function controllersIn(m: Metrics, name: string): string[] {
  return [...new Set(m.text.split('\n').filter((l) => l.startsWith(`${name}{`))
    .map((l) => /controller="([^"]*)"/.exec(l)?.[1]).filter((c): c is string => c !== undefined))];
}

/**
 * The steps of a long fault, timed: `print()` (from a `finally`) logs each step's duration and the
 * one that threw, so a run that hit a limit says which wait it was and where the time went.
 */
export class StepLog {
  private readonly steps: { name: string; ms: number; error?: string }[] = [];

  public constructor(private readonly title: string) {}

  public async run<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const started = Date.now();
    try {
      const result = await fn();
      this.steps.push({ name, ms: Date.now() - started });
      return result;
    } catch (e) {
      this.steps.push({ name, ms: Date.now() - started, error: (e as Error).message.split('\n')[0].slice(0, 300) });
      throw e;
    }
  }

  public print(): void {
    const parts = this.steps.map((s) => `${s.name} ${(s.ms / 1000).toFixed(1)} s${s.error ? ` (failed: ${s.error})` : ''}`);
    // eslint-disable-next-line no-console
    console.log(`${this.title}: ${parts.join('; ') || 'none ran'}`);
  }
}
