/** The operator's own runtime series: the event-loop lag histogram is registered and records a stall, and a long stall is reported. */
import { LONG_LOOP_LAG_MS, OperatorMetrics } from '../../src/runtime/metrics';

const BUILD = { version: 't', gitCommit: 'c', buildDate: 'd' };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('agent_sandbox_operator_event_loop_lag_seconds', () => {
  test('is registered, and a blocked event loop shows up as a long delay in its window', async () => {
    const metrics = new OperatorMetrics(BUILD, '', 50);
    try {
      const series = async () => (await metrics.registry.getSingleMetric('agent_sandbox_operator_event_loop_lag_seconds')!.get()).values;
      expect(await metrics.registry.metrics()).toContain('# TYPE agent_sandbox_operator_event_loop_lag_seconds histogram');
      await sleep(60); // the sampler measures from its first tick on
      // Block the loop for 150 ms: the window holding the stall records a delay of at least 100 ms.
      const until = Date.now() + 150;
      while (Date.now() < until) { /* busy */ }
      await sleep(300);
      const values = (await series()) as Array<{ metricName?: string; labels: Record<string, unknown>; value: number }>;
      const count = values.find((v) => v.metricName?.endsWith('_count'))!.value;
      const upTo50ms = values.find((v) => v.metricName?.endsWith('_bucket') && v.labels.le === 0.05)!.value;
      expect(count).toBeGreaterThan(0);
      expect(upTo50ms).toBeLessThan(count);
    } finally {
      metrics.close();
    }
  });
});

describe('onLongLoopLag', () => {
  const block = (ms: number) => {
    const until = Date.now() + ms;
    while (Date.now() < until) { /* busy */ }
  };

  test('a stall of LONG_LOOP_LAG_MS or more is reported with its length; short delays are not', async () => {
    const metrics = new OperatorMetrics(BUILD, '', 50);
    const lags: number[] = [];
    metrics.onLongLoopLag((ms) => lags.push(ms));
    try {
      await sleep(60);
      // Negative control: delays well under the threshold, in several windows.
      for (let i = 0; i < 3; i++) {
        block(LONG_LOOP_LAG_MS / 4);
        await sleep(60);
      }
      expect(lags).toEqual([]);
      block(LONG_LOOP_LAG_MS + 100);
      await sleep(200);
      expect(lags.length).toBeGreaterThanOrEqual(1);
      // The block's own length (less what of it fell before the window), not just past the threshold.
      expect(Math.max(...lags)).toBeGreaterThanOrEqual(LONG_LOOP_LAG_MS + 50);
    } finally {
      metrics.close();
    }
  });
});
