/** burst: a pool of N Ready members (untimed set-up), then N claims created at once. */
import { ClaimTracker, SandboxTracker } from '../measure';
import { claimManifest, createTemplateAndPool, measured, ScenarioContext, ScenarioResult, sleep, waitPoolReady } from './common';

export interface WarmSetup {
  /**
   * Makes `n` Ready pool members exist. The floor has no pool controller to refill, so it creates
   * `total` (every claim the scenario will make) Ready Sandboxes up front instead.
   */
  (ctx: ScenarioContext, n: number, total: number): Promise<number | undefined>;
}

/** The default set-up: template + pool of `n`, wait until all members are Ready. */
export const poolSetup: WarmSetup = async (ctx, n) => {
  const sandboxes = new SandboxTracker(ctx.client, ctx.ns);
  await sandboxes.start();
  try {
    await createTemplateAndPool(ctx, n);
    return await waitPoolReady(sandboxes, n, ctx.timeoutMs);
  } finally {
    sandboxes.stop();
  }
};

export async function burst(ctx: ScenarioContext, size: number, setup: WarmSetup = poolSetup): Promise<ScenarioResult> {
  const setupSeconds = await setup(ctx, size, size);
  if (setupSeconds === undefined) throw new Error(`burst: the pool of ${size} did not become Ready within ${ctx.timeoutMs} ms`);
  await sleep(2000); // let status writes of the fill settle so the window holds the burst only
  const claims = new ClaimTracker(ctx.client, ctx.ns);
  await claims.start();
  await ctx.client.warm(64);
  try {
    const { measure } = await measured(ctx, size, async () => {
      await Promise.all(Array.from({ length: size }, (_, i) => claims.create(claimManifest(`burst-${i}`))));
      await claims.settle(ctx.timeoutMs);
    });
    const result = claims.result();
    const notes = result.ready < size ? [`${size - result.ready} of ${size} claims not Ready within ${ctx.timeoutMs} ms`] : [];
    return { scenario: 'burst', params: { size, poolSetupSeconds: Math.round(setupSeconds * 100) / 100 }, claims: result, measure, notes };
  } finally {
    claims.stop();
  }
}
