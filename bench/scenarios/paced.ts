/**
 * paced: claims at a steady `rate`/s (evenly spaced, not Poisson) for `durationS` against a pool
 * that covers every one of them (rate × duration Ready members, untimed set-up), so the latency is
 * the claim path's under a steady load, not the refill's.
 */
import { ClaimTracker } from '../measure';
import { poolSetup, WarmSetup } from './burst';
import { measured, ScenarioContext, ScenarioResult, sleep } from './common';
import { arriveOnSchedule } from './sustained';

export async function paced(ctx: ScenarioContext, rate: number, durationS: number, setup: WarmSetup = poolSetup): Promise<ScenarioResult> {
  const count = Math.max(1, Math.round(rate * durationS));
  const setupSeconds = await setup(ctx, count, count);
  if (setupSeconds === undefined) throw new Error(`paced: the pool of ${count} did not become Ready within ${ctx.timeoutMs} ms`);
  await sleep(2000);
  const claims = new ClaimTracker(ctx.client, ctx.ns);
  await claims.start();
  await ctx.client.warm(64);
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
