/**
 * sequential: a pool of N Ready members (untimed set-up), then N claims one after another, each
 * created only once the previous one is Ready: the latency a single agent sees claiming a warm
 * sandbox, with nothing else going on ("a claim in milliseconds").
 */
import { poolSetup, readyToClaim, WarmSetup } from './burst';
import { claimManifest, measured, ScenarioContext, ScenarioResult } from './common';

export async function sequential(ctx: ScenarioContext, count: number, setup: WarmSetup = poolSetup): Promise<ScenarioResult> {
  const { setupSeconds, claims } = await readyToClaim(ctx, 'sequential', count, count, setup, 4);
  let timedOut = 0;
  try {
    const { measure } = await measured(ctx, count, async () => {
      for (let i = 0; i < count; i++) {
        await claims.create(claimManifest(`seq-${i}`));
        if (!(await claims.settle(ctx.timeoutMs))) timedOut++;
        // A claim that never got Ready would stall every later one: stop rather than measure that.
        if (timedOut > 0) break;
      }
    });
    const result = claims.result();
    const notes = result.ready < count ? [`${count - result.ready} of ${count} claims not Ready (the run stops at the first that is not Ready within ${ctx.timeoutMs} ms)`] : [];
    return { scenario: 'sequential', params: { count, poolSetupSeconds: Math.round(setupSeconds * 100) / 100 }, claims: result, measure, notes };
  } finally {
    claims.stop();
  }
}
