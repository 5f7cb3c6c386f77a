/** Shared pieces of the scenarios: manifests, the measured window, pool readiness. */
import { BenchClient } from '../client';
import type { CapacityResult } from './capacity';
import type { ScaleResult } from './scale';
import type { SoakResult } from './soak';
import { apiserverRequests } from '../../tools/shared/metrics';
import { ClaimResult, diffRequests, now, ProcMonitor, procSample, RequestDiff, round, SandboxTracker } from '../measure';

export const EXT = '/apis/extensions.agents.x-k8s.io/v1beta1';
export const CORE = '/apis/agents.x-k8s.io/v1beta1';
export const TEMPLATE = 'bench-template';
export const POOL = 'bench-pool';

export interface ScenarioContext {
  readonly client: BenchClient;
  readonly ns: string;
  /** The controller process (undefined for the floor, which runs inside the harness). */
  readonly pid?: number;
  /** Control-plane component pids by name, for their CPU use. */
  readonly controlPlanePids: Record<string, number>;
  readonly log: (msg: string) => void;
  readonly timeoutMs: number;
  /** Stops the controller and starts it again with the same flags; resolves once its controllers started. */
  readonly restart?: () => Promise<{ pid: number; startSeconds: number }>;
}

export interface PhaseMeasure {
  wallSeconds: number;
  requests: RequestDiff;
  controller?: { cpuSeconds: number; cpuSecondsPer1000: number; peakRssMiB: number; vmHwmMiB: number };
  controlPlaneCpuSeconds: Record<string, number>;
  /** Events created in the window by `reporter: reason`; those not the controller's are not counted as its writes. */
  eventsByReporter?: Record<string, number>;
}

export interface ScenarioResult {
  scenario: string;
  params: Record<string, number | string>;
  claims?: ClaimResult;
  refill?: { sandboxes: number; seconds: number; sandboxesPerSecond: number; completed: boolean };
  measure: PhaseMeasure;
  notes: string[];
  /** The soak scenario's time series, windows and leak count. */
  soak?: SoakResult;
  /** The capacity scenario's steps. */
  capacity?: CapacityResult;
  /** The scale scenario's figures. */
  scale?: ScaleResult;
}

export function templateManifest(): any {
  return {
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'SandboxTemplate',
    metadata: { name: TEMPLATE },
    spec: { podTemplate: { metadata: { labels: { app: 'bench' } }, spec: { containers: [{ name: 'main', image: 'busybox' }] } } },
  };
}

export function poolManifest(replicas: number): any {
  return {
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'SandboxWarmPool',
    metadata: { name: POOL },
    spec: { replicas, sandboxTemplateRef: { name: TEMPLATE } },
  };
}

export function claimManifest(name: string): any {
  return { apiVersion: 'extensions.agents.x-k8s.io/v1beta1', kind: 'SandboxClaim', metadata: { name }, spec: { warmPoolRef: { name: POOL } } };
}

export async function createTemplateAndPool(ctx: ScenarioContext, replicas: number): Promise<void> {
  await ctx.client.call('POST', `${EXT}/namespaces/${ctx.ns}/sandboxtemplates`, templateManifest());
  await ctx.client.call('POST', `${EXT}/namespaces/${ctx.ns}/sandboxwarmpools`, poolManifest(replicas));
}

/** Waits (polling the watch-fed tracker) until the pool holds `n` Ready members; returns seconds waited, or undefined on timeout. */
export async function waitPoolReady(sandboxes: SandboxTracker, n: number, timeoutMs: number, since = now()): Promise<number | undefined> {
  const deadline = now() + timeoutMs;
  while (sandboxes.readyPoolMembers(POOL) < n) {
    if (now() > deadline) return undefined;
    await new Promise((r) => setTimeout(r, 20));
  }
  return (now() - since) / 1000;
}

/** Measures requests, controller CPU/RSS and control-plane CPU around `body`. */
export async function measured<T>(ctx: ScenarioContext, per: number, body: () => Promise<T>): Promise<{ value: T; measure: PhaseMeasure }> {
  const issued0 = new Map(ctx.client.issued);
  const before = await apiserverRequests(ctx.client);
  const mon = ctx.pid ? new ProcMonitor(ctx.pid) : undefined;
  const cpu0 = ctx.pid ? procSample(ctx.pid).cpuSeconds : 0;
  const cp0 = cpuOf(ctx.controlPlanePids);
  const events0 = await eventsByReporter(ctx);
  const t0 = now();
  const value = await body();
  const wallSeconds = round((now() - t0) / 1000, 2);
  const cpu1 = ctx.pid ? procSample(ctx.pid) : undefined;
  const cp1 = cpuOf(ctx.controlPlanePids);
  mon?.stop();
  const after = await apiserverRequests(ctx.client);
  // The harness's own requests in the window (claim POSTs, its watches, the two /metrics GETs).
  const harness = new Map<string, number>();
  for (const [k, v] of ctx.client.issued) harness.set(k, v - (issued0.get(k) ?? 0));
  harness.set('GET metrics', 1);
  // Events of other components in the window (the scheduler's "Scheduled" per Pod it binds) share
  // the controller's resource; apiserver_request_total cannot tell them apart, so they are counted here.
  const eventsCreated = newEvents(events0, await eventsByReporter(ctx));
  let othersPosted = 0;
  for (const [key, n] of Object.entries(eventsCreated)) if (!CONTROLLER_REPORTERS.test(key)) othersPosted += n;
  harness.set('POST events', (harness.get('POST events') ?? 0) + othersPosted);
  const controlPlaneCpuSeconds: Record<string, number> = {};
  for (const k of Object.keys(cp1)) controlPlaneCpuSeconds[k] = round(cp1[k] - (cp0[k] ?? 0), 2);
  const measure: PhaseMeasure = { wallSeconds, requests: diffRequests(before, after, harness, per), controlPlaneCpuSeconds, eventsByReporter: eventsCreated };
  if (cpu1) {
    const cpu = cpu1.cpuSeconds - cpu0;
    mon!.sample();
    measure.controller = {
      cpuSeconds: round(cpu, 2),
      cpuSecondsPer1000: round((cpu / Math.max(1, per)) * 1000, 2),
      peakRssMiB: round(mon!.peakRssKiB / 1024),
      vmHwmMiB: round(cpu1.hwmKiB / 1024),
    };
  }
  return { value, measure };
}

/** The controller under test reports its Events as one of these; every other reporter is not it. */
const CONTROLLER_REPORTERS = /^(agent-sandbox|sandbox|sandboxclaim|sandboxwarmpool|sandboxtemplate)/i;

/** Names of the Events in the namespace by `reporter: reason` (events.k8s.io reportingController, or the core Event's source). */
async function eventsByReporter(ctx: ScenarioContext): Promise<Map<string, Set<string>>> {
  const res = await ctx.client.call<any>('GET', `/apis/events.k8s.io/v1/namespaces/${ctx.ns}/events`);
  const out = new Map<string, Set<string>>();
  for (const e of res.items ?? []) {
    const key = `${e.reportingController || e.deprecatedSource?.component || '(none)'}: ${e.reason ?? ''}`;
    if (!out.has(key)) out.set(key, new Set());
    out.get(key)!.add(e.metadata.name);
  }
  return out;
}

/** Events created in the window, by `reporter: reason`. */
function newEvents(before: Map<string, Set<string>>, after: Map<string, Set<string>>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [reporter, names] of after) {
    let n = 0;
    for (const name of names) if (!before.get(reporter)?.has(name)) n++;
    if (n > 0) out[reporter] = n;
  }
  return out;
}

function cpuOf(pids: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, pid] of Object.entries(pids)) {
    try { out[name] = procSample(pid).cpuSeconds; } catch { /* exited */ }
  }
  return out;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
