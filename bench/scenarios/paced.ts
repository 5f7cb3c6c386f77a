/**
 * paced: claims at a steady `rate`/s (evenly spaced, not Poisson) for `durationS` against a pool
 * that covers every one of them (rate × duration Ready members, untimed set-up), so the latency is
 * the claim path's under a steady load, not the refill's.
 */
import { poolSetup, readyToClaim, WarmSetup } from './burst';
import { measured, ScenarioContext, ScenarioResult } from './common';
import { arriveOnSchedule } from './sustained';

export async function paced(ctx: ScenarioContext, rate: number, durationS: number, setup: WarmSetup = poolSetup): Promise<ScenarioResult> {
  const count = Math.max(1, Math.round(rate * durationS));
  const { setupSeconds, claims } = await readyToClaim(ctx, 'paced', count, count, setup);
  let maxLagMs = 0;
  try {
    const { measure } = await measured(ctx, count, async () => {
      maxLagMs = await arriveOnSchedule(claims, Array.from({ length: count }, (_, i) => (i * 1000) / rate), 'paced');
      await claims.settle(ctx.timeoutMs);
    });
    const result = claims.result();
    const notes: string[] = [];
    if (result.ready < count) notes.push(`${count - result.ready} of ${count} claims not Ready within ${ctx.timeoutMs} ms after the last arrival`);
    if (maxLagMs > 50) notes.push(`the load generator fell up to ${Math.round(maxLagMs)} ms behind its schedule`);
    return {
      scenario: `paced-${rate}`,
      claims: result,
      measure,
      notes,
      params: { rate, durationS, claims: count, poolSize: count, poolSetupSeconds: Math.round(setupSeconds * 100) / 100, generatorMaxLagMs: Math.round(maxLagMs) },
    };
  } finally {
    claims.stop();
  }
}
