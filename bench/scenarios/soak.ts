/**
 * soak: claims arriving at `rate`/s (the sustained scenario's Poisson schedule) for `durationS`,
 * each with `spec.lifecycle.shutdownTime` = create + `ttlS` and `shutdownPolicy: Delete`, so the
 * operator deletes it at expiry (its Sandbox, Pod and Service follow by owner reference); every
 * `deleteEvery`th claim is deleted by the harness halfway through its TTL instead. A warm pool of
 * `poolSize` refills throughout.
 *
 * Recorded: the controller's RSS and CPU every `sampleS`; every `windowS` a window with the claim
 * p50/p99 of the claims created in it and the live objects (claims, Sandboxes, Pods, Services, PVCs)
 * against what the harness expects to exist. After the last arrival every claim expires; the
 * harness waits for the namespace to drain to the pool and then counts leaks: claims past their
 * shutdownTime, objects whose controlling owner is gone, Sandboxes beyond the pool. Passes when
 * nothing leaked and RSS stayed bounded (no timing asserts).
 */
import { ClaimTracker, procSample, round, Stats, stats } from '../measure';
import { poolSetup } from './burst';
import { CORE, EXT, measured, POOL, ScenarioContext, ScenarioResult, sleep } from './common';
import { poissonSchedule } from './sustained';

export interface SoakOptions {
  rate: number;
  durationS: number;
  ttlS: number;
  windowS: number;
  sampleS: number;
  /** Every Nth claim is deleted by the harness at half its TTL (0: none). */
  deleteEvery: number;
  /** How long to wait, after the last claim expired, for the namespace to drain before counting leaks. */
  drainS: number;
}

export const SOAK_DEFAULTS: SoakOptions = { rate: 20, durationS: 3600, ttlS: 30, windowS: 300, sampleS: 10, deleteEvery: 10, drainS: 180 };

/** A controller sample: seconds since the load started, RSS, and CPU used since the previous sample (cores). */
export interface SoakSample { t: number; rssMiB: number; cpuCores: number }

export interface ObjectCounts { claims: number; sandboxes: number; pods: number; services: number; pvcs: number; terminating: number }

export interface SoakWindow {
  /** Seconds since the load started, [from, to). */
  from: number;
  to: number;
  /** Claims created in the window, how many became Ready, and their create → Ready latency. */
  created: number;
  ready: number;
  latencyMs: Stats;
  /** Controller CPU over the window (cores) and RSS at its end. */
  cpuCores: number;
  rssMiB: number;
  live: ObjectCounts;
  /** What should exist: the claims not yet expired nor deleted, each with a Sandbox, plus the pool. */
  expected: { claims: number; sandboxes: number };
}

export interface SoakLeaks {
  /** Claims still present after every claim's shutdownTime (+ the drain wait). */
  expiredClaims: number;
  /** Sandboxes, Pods, Services, PVCs whose controlling owner no longer exists (or that have none). */
  orphans: Record<string, number>;
  /** Pool members beyond the pool's replicas. */
  excessSandboxes: number;
  total: number;
  examples: string[];
}

export interface SoakResult {
  options: SoakOptions;
  poolSize: number;
  samples: SoakSample[];
  windows: SoakWindow[];
  rss: { startMiB: number; endMiB: number; peakMiB: number; bounded: boolean; rule: string };
  drainSeconds: number;
  final: ObjectCounts;
  leaks: SoakLeaks;
  explicitDeletes: number;
  passed: boolean;
}

/** `3m`, `90s`, `1h`, or plain seconds. */
export function parseDurationS(s: string): number {
  const m = /^(\d+(?:\.\d+)?)(s|m|h)?$/.exec(s.trim());
  if (!m) throw new Error(`not a duration: ${s} (try 60m, 90s or 3600)`);
  return Number(m[1]) * ({ s: 1, m: 60, h: 3600 } as Record<string, number>)[m[2] ?? 's'];
}

function soakClaim(name: string, shutdownMs: number): any {
  return {
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'SandboxClaim',
    metadata: { name },
    spec: { warmPoolRef: { name: POOL }, lifecycle: { shutdownTime: new Date(shutdownMs).toISOString().replace(/\.\d+Z$/, 'Z'), shutdownPolicy: 'Delete' } },
  };
}

interface Snapshot { counts: ObjectCounts; items: Record<'claims' | 'sandboxes' | 'pods' | 'services' | 'pvcs', any[]> }

/** Lists the namespace's claims, Sandboxes, Pods, Services and PVCs. */
async function snapshot(ctx: ScenarioContext): Promise<Snapshot> {
  const list = async (path: string) => ((await ctx.client.call('GET', path, undefined, { timeoutMs: 60_000 })).items ?? []) as any[];
  const [claims, sandboxes, pods, services, pvcs] = await Promise.all([
    list(`${EXT}/namespaces/${ctx.ns}/sandboxclaims`), list(`${CORE}/namespaces/${ctx.ns}/sandboxes`),
    list(`/api/v1/namespaces/${ctx.ns}/pods`), list(`/api/v1/namespaces/${ctx.ns}/services`), list(`/api/v1/namespaces/${ctx.ns}/persistentvolumeclaims`),
  ]);
  const all = [claims, sandboxes, pods, services, pvcs];
  const terminating = all.reduce((n, items) => n + items.filter((o) => o.metadata.deletionTimestamp).length, 0);
  return {
    counts: { claims: claims.length, sandboxes: sandboxes.length, pods: pods.length, services: services.length, pvcs: pvcs.length, terminating },
    items: { claims, sandboxes, pods, services, pvcs },
  };
}

/** Leaks in a snapshot taken after every claim expired: see SoakLeaks. */
export function findLeaks(s: Snapshot, poolSize: number): SoakLeaks {
  const uids = new Set<string>();
  for (const items of Object.values(s.items)) for (const o of items) uids.add(o.metadata.uid);
  // The pool and template are not listed; a pool-owned Sandbox counts as owned.
  const ownerGone = (o: any) => {
    const ref = (o.metadata.ownerReferences ?? []).find((r: any) => r.controller);
    if (!ref) return true;
    return ref.kind !== 'SandboxWarmPool' && !uids.has(ref.uid);
  };
  const examples: string[] = [];
  const orphans: Record<string, number> = {};
  for (const kind of ['sandboxes', 'pods', 'services', 'pvcs'] as const) {
    const found = s.items[kind].filter(ownerGone);
    orphans[kind] = found.length;
    examples.push(...found.slice(0, 3).map((o) => `${kind}/${o.metadata.name}`));
  }
  const poolMembers = s.items.sandboxes.filter((o) => (o.metadata.ownerReferences ?? []).some((r: any) => r.controller && r.kind === 'SandboxWarmPool')).length;
  const excessSandboxes = Math.max(0, poolMembers - poolSize);
  const expiredClaims = s.items.claims.length;
  examples.push(...s.items.claims.slice(0, 3).map((o) => `sandboxclaims/${o.metadata.name}`));
  const total = expiredClaims + excessSandboxes + Object.values(orphans).reduce((a, b) => a + b, 0);
  return { expiredClaims, orphans, excessSandboxes, total, examples };
}

/**
 * RSS is bounded when the peak over the last third of the load is at most 1.25× the peak over the
 * middle third + 32 MiB: the first third is warm-up (the pool, the live set, V8's heap growing).
 */
export function rssBounded(samples: SoakSample[], loadS: number): { bounded: boolean; rule: string } {
  const peak = (from: number, to: number) => Math.max(0, ...samples.filter((x) => x.t >= from && x.t <= to).map((x) => x.rssMiB));
  const middle = peak(loadS / 3, (2 * loadS) / 3);
  const last = peak((2 * loadS) / 3, loadS);
  const limit = round(middle * 1.25 + 32);
  return { bounded: last <= limit, rule: `peak RSS in the last third of the load ${last} MiB ≤ 1.25 × middle third's ${middle} MiB + 32 = ${limit} MiB` };
}

export async function soak(ctx: ScenarioContext, o: SoakOptions, poolSize: number): Promise<ScenarioResult> {
  if (!ctx.pid) throw new Error('soak: needs a controller process (ours or upstream), not the floor');
  const pid = ctx.pid;
  const schedule = poissonSchedule(o.rate, o.durationS);
  const setupSeconds = await poolSetup(ctx, poolSize, schedule.length);
  if (setupSeconds === undefined) throw new Error(`soak: the pool of ${poolSize} did not become Ready within ${ctx.timeoutMs} ms`);
  const claims = new ClaimTracker(ctx.client, ctx.ns);
  await claims.start();
  await ctx.client.warm(64);

  const samples: SoakSample[] = [];
  const windows: SoakWindow[] = [];
  const names: string[] = [];
  /** Per claim (by index): wall-clock ms it stops being expected (expiry or the harness's delete). */
  const goneAt: number[] = [];
  const deletes: Promise<void>[] = [];
  const start = Date.now();
  const since = () => (Date.now() - start) / 1000;
  let last = procSample(pid);
  let lastAt = Date.now();
  const sample = () => {
    try {
      const s = procSample(pid);
      const cores = (s.cpuSeconds - last.cpuSeconds) / Math.max(0.001, (Date.now() - lastAt) / 1000);
      samples.push({ t: round(since()), rssMiB: round(s.rssKiB / 1024), cpuCores: round(cores, 3) });
      last = s;
      lastAt = Date.now();
    } catch { /* the controller exited: the run fails elsewhere */ }
  };
  sample();
  const sampler = setInterval(sample, o.sampleS * 1000);

  let windowCpu0 = last.cpuSeconds;
  /** Claims scheduled in [from, to) s: how many, and the create → Ready latencies of those Ready. */
  const latencies = (from: number, to: number) => {
    const lat: number[] = [];
    let created = 0;
    names.forEach((name, i) => {
      if (schedule[i] < from * 1000 || schedule[i] >= to * 1000) return;
      created++;
      const c = claims.createdAt.get(name);
      const r = claims.readyAt.get(name);
      if (c !== undefined && r !== undefined) lat.push(r - c);
    });
    return { created, ready: lat.length, latencyMs: stats(lat) };
  };
  const closeWindow = async (from: number, to: number) => {
    const nowMs = Date.now();
    const live = goneAt.filter((g) => g > nowMs).length;
    const snap = await snapshot(ctx);
    const p = procSample(pid);
    windows.push({
      from: round(from),
      to: round(to),
      ...latencies(from, to),
      cpuCores: round((p.cpuSeconds - windowCpu0) / Math.max(1, to - from), 3),
      rssMiB: round(p.rssKiB / 1024),
      live: snap.counts,
      expected: { claims: live, sandboxes: live + poolSize },
    });
    windowCpu0 = p.cpuSeconds;
    const w = windows[windows.length - 1];
    ctx.log(`soak ${Math.round(to)} s: ${w.ready}/${w.created} Ready, p50 ${w.latencyMs.p50} p99 ${w.latencyMs.p99} ms, RSS ${w.rssMiB} MiB, CPU ${w.cpuCores} cores, live claims ${w.live.claims} (expected ${live}), sandboxes ${w.live.sandboxes} (${live + poolSize}), pods ${w.live.pods}, services ${w.live.services}, pvcs ${w.live.pvcs}, terminating ${w.live.terminating}`);
  };

  let maxLagMs = 0;
  try {
    const { measure } = await measured(ctx, schedule.length, async () => {
      const inflight = new Set<Promise<void>>();
      let windowEnd = o.windowS;
      for (let i = 0; i < schedule.length; i++) {
        const due = start + schedule[i];
        // Close windows whose end comes before this arrival (the listing is off the arrival path).
        while (schedule[i] >= windowEnd * 1000) {
          const from = windowEnd - o.windowS;
          const to = windowEnd;
          windowEnd += o.windowS;
          await sleepUntil(start + to * 1000);
          void closeWindow(from, to).catch((e) => ctx.log(`soak: window ${to} s: ${(e as Error).message}`));
        }
        const wait = due - Date.now();
        if (wait > 0) await sleep(wait);
        maxLagMs = Math.max(maxLagMs, -wait);
        const name = `soak-${i}`;
        names.push(name);
        const explicit = o.deleteEvery > 0 && i % o.deleteEvery === o.deleteEvery - 1;
        goneAt.push(Date.now() + o.ttlS * 1000 * (explicit ? 0.5 : 1));
        const p = claims.create(soakClaim(name, Date.now() + o.ttlS * 1000));
        inflight.add(p);
        void p.finally(() => inflight.delete(p));
        if (explicit) deletes.push(sleep(o.ttlS * 500).then(() => deleteClaim(ctx, name)));
      }
      await Promise.all(inflight);
      await sleepUntil(start + o.durationS * 1000);
      const lastFrom = windowEnd - o.windowS;
      if (o.durationS > lastFrom) await closeWindow(lastFrom, o.durationS);
    });
    const loadS = since();

    // Drain: every claim expires ttlS after its create; then wait for the namespace to hold the pool only.
    await Promise.all(deletes);
    await sleepUntil(start + (o.durationS + o.ttlS) * 1000);
    const drainStart = Date.now();
    let snap = await snapshot(ctx);
    let leaks = findLeaks(snap, poolSize);
    while ((leaks.total > 0 || snap.counts.terminating > 0) && Date.now() - drainStart < o.drainS * 1000) {
      await sleep(2000);
      snap = await snapshot(ctx);
      leaks = findLeaks(snap, poolSize);
    }
    const drainSeconds = round((Date.now() - drainStart) / 1000);
    // Claims created near a window's end became Ready after it closed: count them in their window.
    for (const w of windows) Object.assign(w, latencies(w.from, w.to));
    sample();
    clearInterval(sampler);

    const loadSamples = samples.filter((x) => x.t <= loadS);
    const rss = {
      startMiB: samples[0]?.rssMiB ?? 0,
      endMiB: samples[samples.length - 1]?.rssMiB ?? 0,
      peakMiB: Math.max(0, ...samples.map((x) => x.rssMiB)),
      ...rssBounded(loadSamples, loadS),
    };
    const soakResult: SoakResult = {
      options: o,
      poolSize,
      samples,
      windows,
      rss,
      drainSeconds,
      final: snap.counts,
      leaks,
      explicitDeletes: deletes.length,
      passed: leaks.total === 0 && rss.bounded,
    };
    const result = claims.result();
    // 20/s for an hour is 72,000 latencies: the per-window stats stand in for them in the JSON.
    result.latenciesMs = [];
    const notes: string[] = [];
    if (leaks.total) notes.push(`${leaks.total} leaked objects after ${drainSeconds} s of drain: ${leaks.examples.join(', ')}`);
    if (!rss.bounded) notes.push(`RSS grew: ${rss.rule}`);
    if (result.ready < schedule.length) notes.push(`${schedule.length - result.ready} of ${schedule.length} claims never seen Ready (expired or deleted first, or the controller fell behind)`);
    if (maxLagMs > 50) notes.push(`the load generator fell up to ${Math.round(maxLagMs)} ms behind its arrival schedule`);
    return {
      scenario: `soak-${o.rate} (${round(o.durationS / 60)} min, ttl ${o.ttlS} s, pool ${poolSize})`,
      claims: result,
      measure,
      notes,
      soak: soakResult,
      params: {
        rate: o.rate,
        durationS: o.durationS,
        ttlS: o.ttlS,
        claims: schedule.length,
        poolSize,
        poolSetupSeconds: round(setupSeconds, 2),
        generatorMaxLagMs: Math.round(maxLagMs),
      },
    };
  } finally {
    clearInterval(sampler);
    claims.stop();
  }
}

async function deleteClaim(ctx: ScenarioContext, name: string): Promise<void> {
  try {
    await ctx.client.call('DELETE', `${EXT}/namespaces/${ctx.ns}/sandboxclaims/${name}`);
  } catch (e) {
    if (!/404|not ?found/i.test((e as Error).message)) ctx.log(`soak: delete ${name}: ${(e as Error).message}`);
  }
}

function sleepUntil(wallMs: number): Promise<void> {
  return sleep(Math.max(0, wallMs - Date.now()));
}
