/**
 * scale: many Sandboxes across many pools in one cluster. `sandboxes` pool members spread over
 * `pools` pools (untimed set-up, every member Ready), then claims at `rate`/s for `durationS`
 * seconds, round-robin over the pools, each deleted `holdS` after it is Ready so its pool refills.
 * Reports the claims' create → Ready latency, the controller's RSS and CPU with everything cached
 * (and RSS per 1,000 cached Sandboxes over its RSS before the pools existed), and, after a restart
 * of the controller, how long it took to start its controllers (caches synced) and to serve the
 * first claim. Run it with enough KWOK nodes for the Pods (`--nodes 100` for 10,000).
 */
import { ClaimTracker, now, procSample, round, SandboxTracker, stats, type Stats } from '../measure';
import { deleteWhenReady } from './capacity';
import { EXT, measured, type ScenarioContext, type ScenarioResult, sleep, TEMPLATE, templateManifest } from './common';

export interface ScaleOptions {
  readonly sandboxes: number;
  readonly pools: number;
  readonly rate: number;
  readonly durationS: number;
  readonly holdS: number;
}

export const SCALE_DEFAULTS: ScaleOptions = { sandboxes: 10_000, pools: 1_000, rate: 10, durationS: 60, holdS: 2 };

export interface ScaleResult {
  readonly options: ScaleOptions;
  readonly setupSeconds: number;
  /** Controller RSS before the pools were created, and with every member cached and idle. */
  readonly rssBeforeMiB: number;
  readonly rssIdleMiB: number;
  readonly rssPer1000SandboxesMiB: number;
  /** Controller CPU (cores) over 10 s of idle with everything cached. */
  readonly idleCpuCores: number;
  readonly claims: Stats;
  /**
   * The slowest claims (at most 10, slowest first) with their create time on the wall clock, to
   * line up with the controller's log (test-results/bench/<id>/logs): a stall shows as a run of them.
   */
  readonly slowest: Array<{ claim: string; createdAt: string; ms: number }>;
  /** Restart: process start → its controllers started (caches synced), then → the first claim Ready. */
  readonly restart?: { startSeconds: number; firstClaimMs: number; rssAfterMiB: number };
}

const poolName = (i: number) => `scale-pool-${i}`;
const claimOf = (name: string, pool: string) => ({
  apiVersion: 'extensions.agents.x-k8s.io/v1beta1', kind: 'SandboxClaim', metadata: { name }, spec: { warmPoolRef: { name: pool } },
});

export async function scale(ctx: ScenarioContext, o: ScaleOptions): Promise<ScenarioResult> {
  if (!ctx.pid || !ctx.restart) throw new Error('scale: needs a controller process it can restart (ours or upstream), not the floor');
  if (!(o.pools >= 1) || !(o.sandboxes >= o.pools)) throw new Error(`scale: give at least one pool and one Sandbox per pool (--scale-sandboxes ${o.sandboxes}, --scale-pools ${o.pools})`);
  let pid = ctx.pid;
  const rssBeforeMiB = procSample(pid).rssKiB / 1024;
  const perPool = Math.floor(o.sandboxes / o.pools);
  const total = perPool * o.pools;
  const sandboxes = new SandboxTracker(ctx.client, ctx.ns);
  await sandboxes.start();
  const claims = new ClaimTracker(ctx.client, ctx.ns);
  await claims.start();
  try {
    const t0 = now();
    await ctx.client.call('POST', `${EXT}/namespaces/${ctx.ns}/sandboxtemplates`, templateManifest());
    for (let i = 0; i < o.pools; i += 50) {
      await Promise.all(Array.from({ length: Math.min(50, o.pools - i) }, (_, k) => ctx.client.call('POST', `${EXT}/namespaces/${ctx.ns}/sandboxwarmpools`, {
        apiVersion: 'extensions.agents.x-k8s.io/v1beta1', kind: 'SandboxWarmPool', metadata: { name: poolName(i + k) },
        spec: { replicas: perPool, sandboxTemplateRef: { name: TEMPLATE } },
      })));
    }
    const deadline = now() + Math.max(ctx.timeoutMs, total * 200);
    let lastLog = now();
    while (readyMembers(sandboxes) < total) {
      if (now() > deadline) throw new Error(`scale: ${readyMembers(sandboxes)} of ${total} pool members Ready after ${round((now() - t0) / 1000)} s`);
      if (now() - lastLog > 30_000) {
        ctx.log(`scale: ${readyMembers(sandboxes)}/${total} members Ready after ${round((now() - t0) / 1000)} s`);
        lastLog = now();
      }
      await sleep(250);
    }
    const setupSeconds = round((now() - t0) / 1000, 1);
    await sleep(5000);
    const idle0 = procSample(pid);
    await sleep(10_000);
    const idle1 = procSample(pid);
    const rssIdleMiB = idle1.rssKiB / 1024;
    await ctx.client.warm(64);

    const count = Math.max(1, Math.round(o.rate * o.durationS));
    const names = Array.from({ length: count }, (_, i) => `scale-${i}`);
    const deletes: Promise<void>[] = [];
    const { measure } = await measured(ctx, count, async () => {
      const start = Date.now();
      const creates: Promise<void>[] = [];
      for (let i = 0; i < count; i++) {
        const wait = start + (i * 1000) / o.rate - Date.now();
        if (wait > 0) await sleep(wait);
        const created = claims.create(claimOf(names[i], poolName(i % o.pools)));
        creates.push(created);
        deletes.push(created.then(() => deleteWhenReady(ctx, claims, names[i], o.holdS * 1000, ctx.timeoutMs)));
      }
      await Promise.all(creates);
      await claims.settle(ctx.timeoutMs);
    });
    await Promise.all(deletes);
    const timed = names.flatMap((n) => {
      const c = claims.createdAt.get(n);
      const r = claims.readyAt.get(n);
      return c !== undefined && r !== undefined ? [{ claim: n, created: c, ms: r - c }] : [];
    });
    const latencies = timed.map((t) => t.ms);
    // performance.now() → wall clock, for the log.
    const wallOffset = Date.now() - now();
    const slowest = [...timed].sort((a, b) => b.ms - a.ms).slice(0, 10)
      .map((t) => ({ claim: t.claim, createdAt: new Date(wallOffset + t.created).toISOString(), ms: round(t.ms) }));

    // The claims' own figures, before the restart's claim (in the same namespace) is seen.
    const claimResult = claims.result();
    claims.stop();
    // Restart: the new process lists and caches everything again before it serves the next claim.
    const restarted = await ctx.restart();
    pid = restarted.pid;
    const first = 'scale-after-restart';
    const after = new ClaimTracker(ctx.client, ctx.ns);
    await after.start();
    await after.create(claimOf(first, poolName(0)));
    await after.settle(ctx.timeoutMs);
    after.stop();
    const c = after.createdAt.get(first);
    const r = after.readyAt.get(first);
    const result: ScaleResult = {
      options: o,
      setupSeconds,
      rssBeforeMiB: round(rssBeforeMiB),
      rssIdleMiB: round(rssIdleMiB),
      rssPer1000SandboxesMiB: round(((rssIdleMiB - rssBeforeMiB) / total) * 1000, 1),
      idleCpuCores: round((idle1.cpuSeconds - idle0.cpuSeconds) / 10, 3),
      claims: stats(latencies),
      slowest,
      ...(c !== undefined && r !== undefined
        ? { restart: { startSeconds: round(restarted.startSeconds, 2), firstClaimMs: round(r - c), rssAfterMiB: round(procSample(pid).rssKiB / 1024) } }
        : {}),
    };
    const notes: string[] = [];
    if (latencies.length < count) notes.push(`${count - latencies.length} of ${count} claims not Ready within ${ctx.timeoutMs} ms`);
    if (!result.restart) notes.push('the first claim after the restart was not Ready in time');
    return {
      scenario: `scale (${total} Sandboxes, ${o.pools} pools)`,
      params: { sandboxes: total, pools: o.pools, rate: o.rate, durationS: o.durationS, holdS: o.holdS },
      claims: claimResult,
      measure,
      scale: result,
      notes,
    };
  } finally {
    claims.stop();
    sandboxes.stop();
  }
}

function readyMembers(sandboxes: SandboxTracker): number {
  let n = 0;
  for (const [name, owner] of sandboxes.owner) {
    if (owner.startsWith('SandboxWarmPool/') && sandboxes.firstReadyAt.has(name) && !sandboxes.deleted.has(name)) n++;
  }
  return n;
}
