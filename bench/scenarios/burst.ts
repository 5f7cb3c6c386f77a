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

/**
 * The untimed part every warm scenario starts with: `poolSize` Ready members (`total` claims to
 * come), 2 s for the fill's status writes to settle so the measured window holds the claims only,
 * a started claim tracker and `connections` warmed client connections. The caller stops `claims`.
 */
export async function readyToClaim(ctx: ScenarioContext, scenario: string, poolSize: number, total: number, setup: WarmSetup,
  connections = 64): Promise<{ setupSeconds: number; claims: ClaimTracker }> {
  const setupSeconds = await setup(ctx, poolSize, total);
  if (setupSeconds === undefined) throw new Error(`${scenario}: the pool of ${poolSize} did not become Ready within ${ctx.timeoutMs} ms`);
  await sleep(2000);
  const claims = new ClaimTracker(ctx.client, ctx.ns);
  await claims.start();
  await ctx.client.warm(connections);
  return { setupSeconds, claims };
}

export async function burst(ctx: ScenarioContext, size: number, setup: WarmSetup = poolSetup): Promise<ScenarioResult> {
  const { setupSeconds, claims } = await readyToClaim(ctx, 'burst', size, size, setup);
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
