/**
 * sustained: claims arriving as a Poisson process at `rate`/s for `durationS` seconds against a
 * pool of ceil(rate × headroom) members that the controller keeps refilling. Arrivals follow an
 * absolute schedule, so a slow create call never delays the next arrival.
 */
import { ClaimTracker } from '../measure';
import { poolSetup, readyToClaim, WarmSetup } from './burst';
import { claimManifest, measured, ScenarioContext, ScenarioResult, sleep } from './common';

/** Deterministic exponential inter-arrival times (mulberry32), so both controllers see the same schedule. */
export function poissonSchedule(rate: number, durationS: number, seed = 42): number[] {
  let a = seed >>> 0;
  const rand = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (((t ^ (t >>> 14)) >>> 0) / 4294967296);
  };
  const out: number[] = [];
  for (let t = -Math.log(1 - rand()) / rate; t < durationS; t += -Math.log(1 - rand()) / rate) out.push(t * 1000);
  return out;
}

/**
 * Creates claim `<prefix>-<i>` at `schedule[i]` ms from now, on an absolute schedule (a slow create
 * never delays the next); resolves when every create call returned, with the generator's worst lag (ms).
 */
export async function arriveOnSchedule(claims: ClaimTracker, schedule: readonly number[], prefix: string): Promise<number> {
  const start = Date.now();
  const inflight: Promise<void>[] = [];
  let maxLagMs = 0;
  for (let i = 0; i < schedule.length; i++) {
    const wait = start + schedule[i] - Date.now();
    if (wait > 0) await sleep(wait);
    maxLagMs = Math.max(maxLagMs, -wait);
    inflight.push(claims.create(claimManifest(`${prefix}-${i}`)));
  }
  await Promise.all(inflight);
  return maxLagMs;
}

export async function sustained(ctx: ScenarioContext, rate: number, durationS: number, poolSize: number, setup: WarmSetup = poolSetup): Promise<ScenarioResult> {
  const schedule = poissonSchedule(rate, durationS);
  const { setupSeconds, claims } = await readyToClaim(ctx, 'sustained', poolSize, schedule.length, setup);
  let maxLagMs = 0;
  try {
    const { measure } = await measured(ctx, schedule.length, async () => {
      maxLagMs = await arriveOnSchedule(claims, schedule, 's');
      await claims.settle(ctx.timeoutMs);
    });
    const result = claims.result();
    const notes: string[] = [];
    if (result.ready < schedule.length) notes.push(`${schedule.length - result.ready} of ${schedule.length} claims not Ready within ${ctx.timeoutMs} ms after the last arrival`);
    if (maxLagMs > 50) notes.push(`the load generator fell up to ${Math.round(maxLagMs)} ms behind its arrival schedule`);
    return {
      scenario: `sustained-${rate} (pool ${poolSize})`,
      claims: result,
      measure,
      notes,
      params: { rate, durationS, claims: schedule.length, poolSize, poolSetupSeconds: Math.round(setupSeconds * 100) / 100, generatorMaxLagMs: Math.round(maxLagMs) },
    };
  } finally {
    claims.stop();
  }
}
