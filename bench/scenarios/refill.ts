/** refill: a pool from 0 to N Ready members; sandboxes per second from the pool's creation to the Nth Ready. */
import { now, SandboxTracker } from '../measure';
import { createTemplateAndPool, measured, ScenarioContext, ScenarioResult, waitPoolReady } from './common';

export async function refill(ctx: ScenarioContext, size: number): Promise<ScenarioResult> {
  const sandboxes = new SandboxTracker(ctx.client, ctx.ns);
  await sandboxes.start();
  try {
    const { value: seconds, measure } = await measured(ctx, size, async () => {
      const t0 = now();
      await createTemplateAndPool(ctx, size);
      return waitPoolReady(sandboxes, size, ctx.timeoutMs, t0);
    });
    const ready = sandboxes.readyPoolMembers('bench-pool');
    const secs = seconds ?? ctx.timeoutMs / 1000;
    return {
      scenario: 'refill',
      params: { size },
      measure,
      notes: seconds === undefined ? [`timed out: ${ready}/${size} Ready`] : [],
      refill: { sandboxes: ready, seconds: Math.round(secs * 100) / 100, sandboxesPerSecond: Math.round((ready / secs) * 10) / 10, completed: seconds !== undefined },
    };
  } finally {
    sandboxes.stop();
  }
}
