/** cold: N claims at once against a pool of 0 members: every claim needs a new Sandbox and pod. */
import { ClaimTracker } from '../measure';
import { claimManifest, createTemplateAndPool, measured, ScenarioContext, ScenarioResult, sleep } from './common';

export async function cold(ctx: ScenarioContext, size: number): Promise<ScenarioResult> {
  await createTemplateAndPool(ctx, 0);
  await sleep(1000);
  const claims = new ClaimTracker(ctx.client, ctx.ns);
  await claims.start();
  await ctx.client.warm(64);
  try {
    const { measure } = await measured(ctx, size, async () => {
      await Promise.all(Array.from({ length: size }, (_, i) => claims.create(claimManifest(`cold-${i}`))));
      await claims.settle(ctx.timeoutMs);
    });
    const result = claims.result();
    const notes = result.ready < size ? [`${size - result.ready} of ${size} claims not Ready within ${ctx.timeoutMs} ms`] : [];
    return { scenario: 'cold', params: { size }, claims: result, measure, notes };
  } finally {
    claims.stop();
  }
}
