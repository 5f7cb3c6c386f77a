import type { ClaimTracker, Stats } from '../../bench/measure';
import type { BenchRun } from '../../bench/report';
import { markdown, repeatSummary } from '../../bench/report';
import { CAPACITY_DEFAULTS, judge } from '../../bench/scenarios/capacity';
import type { PhaseMeasure } from '../../bench/scenarios/common';

const latency = (p50: number, p99: number): Stats => ({ n: 10, min: p50 / 2, p50, p90: p99, p99, max: p99, mean: p50 });

function run(controller: string, repeat: number, p50: number, p99: number, rate: number, writes: number, apiserverS: number): BenchRun {
  return {
    scenario: 'burst',
    controller,
    repeat,
    podReadyDelayMs: 0,
    params: {},
    notes: [],
    claims: {
      created: 100,
      ready: 100,
      failed: 0,
      failures: [],
      latencyMs: latency(p50, p99),
      createAckMs: latency(1, 2),
      firstCreateToLastReadyMs: 1,
      claimsPerSecond: rate,
      latenciesMs: [],
    },
    measure: { wallSeconds: 1, requests: { all: {}, writesPerClaim: {}, controllerWritesPerClaim: writes, readsPerClaim: 0 }, controlPlaneCpuSeconds: { 'kube-apiserver': apiserverS } },
  };
}

describe('repeatSummary', () => {
  const runs = [
    run('ours', 0, 300, 900, 50, 2.5, 3), run('floor', 0, 200, 400, 100, 2, 1),
    run('ours', 1, 100, 600, 70, 2.3, 2), run('floor', 1, 100, 300, 110, 2, 1),
    run('ours', 2, 200, 700, 60, 2.4, 4), run('floor', 2, 150, 350, 90, 2, 1),
  ];
  const rows = repeatSummary(runs).filter((l) => l.startsWith('| 0 ms'));

  test('the median of each figure with its spread, and ratios of the medians', () => {
    expect(rows).toHaveLength(2);
    const ours = rows.find((l) => l.includes('| ours |'))!.split('|').map((c) => c.trim());
    // p50 median 200 (100–300); p99 700 (600–900); claims/s 60.0 (50.0–70.0); API server 3 s / 100 claims.
    expect(ours.slice(4, 10)).toEqual(['3', '200 (100–300)', '700 (600–900)', '60.0 (50.0–70.0)', '2.40 (2.30–2.50)', '30.0 (20.0–40.0)']);
    // Floor medians: p50 150, p99 350, claims/s 100.
    expect(ours.slice(10, 13)).toEqual(['1.33×', '2.00×', '0.60×']);
  });

  test('the floor has no ratio to itself', () => {
    const floor = rows.find((l) => l.includes('| floor |'))!.split('|').map((c) => c.trim());
    expect(floor.slice(10, 13)).toEqual(['–', '–', '–']);
  });

  test('the per-run table compares each run with the floor of its own repeat', () => {
    const report = { id: 'x', options: { floorRefills: true }, settings: {}, environment: { cpus: 2, memoryGiB: 24, node: 'v20' }, runs, totalSeconds: 1 };
    const md = markdown(report);
    const perRun = md.split('\n').filter((l) => l.startsWith('| 0 ms | burst | ours | 100/100'));
    // 300/200, 100/100, 200/150 (the last floor's 150 for all three would give 2.0×, 0.7×, 1.3×).
    expect(perRun.map((l) => l.split('|').map((c) => c.trim())[10])).toEqual(['1.5×', '1.0×', '1.3×']);
    expect(md).toContain('The floor refills (`--floor-refills`)');
    expect(markdown({ ...report, options: {} })).not.toContain('The floor refills');
  });
});

describe('capacity judge', () => {
  const o = { ...CAPACITY_DEFAULTS, warmupS: 1, p99LimitMs: 1000 };
  const measure: PhaseMeasure = { wallSeconds: 1, requests: { all: {}, writesPerClaim: {}, controllerWritesPerClaim: 2.2, readsPerClaim: 0 }, controlPlaneCpuSeconds: { 'kube-apiserver': 0.5 } };
  /** Claims c-0.. created 0 ms apart with the given latencies (undefined: never Ready). */
  const tracker = (latencies: Array<number | undefined>) => {
    const createdAt = new Map<string, number>();
    const readyAt = new Map<string, number>();
    latencies.forEach((ms, i) => {
      createdAt.set(`c-${i}`, 1000 * i);
      if (ms !== undefined) readyAt.set(`c-${i}`, 1000 * i + ms);
    });
    return { names: latencies.map((_, i) => `c-${i}`), claims: { createdAt, readyAt } as unknown as ClaimTracker };
  };

  test('the warm-up claims do not count for p99; every claim must be Ready', () => {
    // At 2/s with a 1 s warm-up the first 2 claims are warm-up: their 5 s latency does not fail the step.
    const { names, claims } = tracker([5000, 5000, 100, 200, 300]);
    const step = judge(2, names, claims, o, measure, 3);
    expect(step).toMatchObject({ passed: true, ready: 5, created: 5, writesPerClaim: 2.2, apiserverCpuMsPerClaim: 100, poolReadyAtEnd: 3 });
    expect(step.steady.n).toBe(3);
  });

  test('a slow steady claim or a lost claim fails the step, and says why', () => {
    const slow = tracker([100, 100, 100, 1000]);
    expect(judge(2, slow.names, slow.claims, o, measure, 0)).toMatchObject({ passed: false, reason: 'p99 1000 ms ≥ 1000 ms' });
    const lost = tracker([100, 100, undefined, 100]);
    expect(judge(2, lost.names, lost.claims, o, measure, 0)).toMatchObject({ passed: false, reason: '1 of 4 claims not Ready' });
  });
});
