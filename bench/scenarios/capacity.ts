/**
 * capacity: the highest steady claim rate a controller sustains with its pool refilling at that
 * rate, p99 under 1 s. The pool is small (`pool` members, a couple of seconds of claims), so after
 * the first seconds of a step every claim is served by a member the controller refilled during the
 * step: steady state, not a pre-filled pool. Each step runs claims evenly spaced at one rate for
 * `stepS` seconds; every claim is deleted `holdS` after it is Ready (its Sandbox goes with it), so
 * the cluster holds about rate × (latency + hold) claims. Only claims arriving after `warmupS` count
 * for the step's p99. Steps climb through `rates`; the first that fails (a claim not Ready, or p99
 * of 1 s or more) ends the scenario, since higher rates only queue more.
 *
 * The floor has no refill, so it has no capacity to measure: ours and upstream only.
 */
import { ClaimTracker, now, round, SandboxTracker, stats, type Stats } from '../measure';
import { poolSetup } from './burst';
import { claimManifest, EXT, measured, POOL, type PhaseMeasure, type ScenarioContext, type ScenarioResult, sleep, waitPoolReady } from './common';

export interface CapacityOptions {
  /** Claim rates to step through, claims/s, ascending. */
  readonly rates: readonly number[];
  readonly stepS: number;
  readonly warmupS: number;
  readonly holdS: number;
  readonly pool: number;
  /** The p99 a step must stay under. */
  readonly p99LimitMs: number;
}

export const CAPACITY_DEFAULTS: CapacityOptions = { rates: [5, 10, 15, 20, 25, 30, 40], stepS: 40, warmupS: 10, holdS: 2, pool: 20, p99LimitMs: 1000 };

export interface CapacityStep {
  readonly rate: number;
  readonly created: number;
  readonly ready: number;
  /** Create → Ready of the claims that arrived after the warm-up. */
  readonly steady: Stats;
  readonly passed: boolean;
  /** Why a step failed. */
  readonly reason?: string;
  readonly writesPerClaim: number;
  /** kube-apiserver CPU per claim over the step, ms. */
  readonly apiserverCpuMsPerClaim?: number;
  readonly controllerCpuMsPerClaim?: number;
  readonly peakRssMiB?: number;
  /** Ready pool members when the step's last claim was served. */
  readonly poolReadyAtEnd: number;
}

export interface CapacityResult {
  readonly options: CapacityOptions;
  readonly steps: CapacityStep[];
  /** Highest rate whose step passed; 0 when none did. */
  readonly capacity: number;
}

export async function capacity(ctx: ScenarioContext, o: CapacityOptions): Promise<ScenarioResult> {
  if (!ctx.pid) throw new Error('capacity: the floor has no refill to measure; run it with ours or upstream');
  const setupSeconds = await poolSetup(ctx, o.pool, o.pool);
  if (setupSeconds === undefined) throw new Error(`capacity: the pool of ${o.pool} did not become Ready within ${ctx.timeoutMs} ms`);
  const sandboxes = new SandboxTracker(ctx.client, ctx.ns);
  await sandboxes.start();
  const claims = new ClaimTracker(ctx.client, ctx.ns);
  await claims.start();
  await ctx.client.warm(64);
  const steps: CapacityStep[] = [];
  let lastMeasure: PhaseMeasure | undefined;
  try {
    for (const rate of o.rates) {
      // Each step starts from a full pool, as a steady state would have it after a quiet spell.
      await waitPoolReady(sandboxes, o.pool, 120_000);
      await sleep(1000);
      const count = Math.max(1, Math.round(rate * o.stepS));
      const names = Array.from({ length: count }, (_, i) => `cap-${rate}-${i}`);
      const deletes: Promise<void>[] = [];
      const { measure } = await measured(ctx, count, async () => {
        const start = Date.now();
        const creates: Promise<void>[] = [];
        for (let i = 0; i < count; i++) {
          const wait = start + (i * 1000) / rate - Date.now();
          if (wait > 0) await sleep(wait);
          const name = names[i];
          const created = claims.create(claimManifest(name));
          creates.push(created);
          deletes.push(created.then(() => deleteWhenReady(ctx, claims, name, o.holdS * 1000, ctx.timeoutMs)));
        }
        await Promise.all(creates);
        await claims.settle(ctx.timeoutMs);
      });
      await Promise.all(deletes);
      lastMeasure = measure;
      const step = judge(rate, names, claims, o, measure, sandboxes.readyPoolMembers(POOL));
      steps.push(step);
      ctx.log(`capacity ${rate}/s: ${step.ready}/${step.created} Ready, steady p50 ${step.steady.p50} p99 ${step.steady.p99} ms, `
        + `${step.writesPerClaim} writes/claim, apiserver ${step.apiserverCpuMsPerClaim ?? '–'} CPU-ms/claim: ${step.passed ? 'passed' : `failed (${step.reason})`}`);
      if (!step.passed) break;
    }
  } finally {
    claims.stop();
    sandboxes.stop();
  }
  const passed = steps.filter((s) => s.passed);
  const result: CapacityResult = { options: o, steps, capacity: passed.length ? passed[passed.length - 1].rate : 0 };
  const notes = steps.length && !steps[steps.length - 1].passed ? [] : ['every step passed: the capacity is at least the highest rate tried'];
  return {
    scenario: `capacity (pool ${o.pool}, ${o.stepS} s steps)`,
    params: { pool: o.pool, stepS: o.stepS, warmupS: o.warmupS, holdS: o.holdS, p99LimitMs: o.p99LimitMs, capacity: result.capacity, poolSetupSeconds: round(setupSeconds, 2) },
    measure: lastMeasure!,
    capacity: result,
    notes,
  };
}

/** A step's verdict from the claims that arrived after the warm-up. */
export function judge(rate: number, names: readonly string[], claims: ClaimTracker, o: CapacityOptions, measure: PhaseMeasure, poolReady: number): CapacityStep {
  const warm = Math.round(rate * o.warmupS);
  const lat: number[] = [];
  let ready = 0;
  names.forEach((name, i) => {
    const c = claims.createdAt.get(name);
    const r = claims.readyAt.get(name);
    if (r === undefined || c === undefined) return;
    ready++;
    if (i >= warm) lat.push(r - c);
  });
  const steady = stats(lat);
  const reason = ready < names.length ? `${names.length - ready} of ${names.length} claims not Ready`
    : lat.length === 0 ? 'no claim after the warm-up'
      : steady.p99 >= o.p99LimitMs ? `p99 ${round(steady.p99)} ms ≥ ${o.p99LimitMs} ms` : undefined;
  const perClaim = (seconds: number | undefined) => (seconds === undefined ? undefined : round((seconds * 1000) / names.length, 1));
  return {
    rate,
    created: names.length,
    ready,
    steady,
    passed: reason === undefined,
    ...(reason ? { reason } : {}),
    writesPerClaim: measure.requests.controllerWritesPerClaim,
    apiserverCpuMsPerClaim: perClaim(measure.controlPlaneCpuSeconds['kube-apiserver']),
    controllerCpuMsPerClaim: perClaim(measure.controller?.cpuSeconds),
    peakRssMiB: measure.controller?.peakRssMiB,
    poolReadyAtEnd: poolReady,
  };
}

/** Deletes claim `name` `holdMs` after it is seen Ready (or once `timeoutMs` has passed without it). */
export async function deleteWhenReady(ctx: ScenarioContext, claims: ClaimTracker, name: string, holdMs: number, timeoutMs: number): Promise<void> {
  const deadline = now() + timeoutMs;
  while (!claims.readyAt.has(name) && !claims.failed.has(name) && now() < deadline) await sleep(50);
  if (claims.failed.has(name)) return;
  await sleep(holdMs);
  try {
    await ctx.client.call('DELETE', `${EXT}/namespaces/${ctx.ns}/sandboxclaims/${name}`);
  } catch (e) {
    if (!/404|not ?found/i.test((e as Error).message)) ctx.log(`capacity: delete ${name}: ${(e as Error).message}`);
  }
}
