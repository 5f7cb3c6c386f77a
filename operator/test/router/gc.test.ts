/**
 * setIncrementalMarking (the router's --incremental-marking): off, V8 runs no incremental marking
 * while major collections still happen; on (V8's default, restored after), it does again (the
 * control: the same churn shows incremental marking, so "none" above is not for want of trying).
 */
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { setIncrementalMarking } from '../../src/router/gc';

/** Churns the old generation until `majors` major collections were seen; the GC kinds counted. */
async function churn(majors: number): Promise<Map<number, number>> {
  const kinds = new Map<number, number>();
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as unknown as { detail: { kind: number } }).detail.kind;
      kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  try {
    let kept: object[][] = [];
    // Bounded: a few hundred MB of allocation at most, whatever the heap's limits.
    for (let i = 0; i < 2_000 && (kinds.get(constants.NODE_PERFORMANCE_GC_MAJOR) ?? 0) < majors; i++) {
      kept.push(Array.from({ length: 20_000 }, (_, j) => ({ j })));
      if (kept.length > 20) kept = kept.slice(10);
      // GC entries are delivered asynchronously.
      if (i % 20 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  } finally {
    observer.disconnect();
  }
  return kinds;
}

describe('setIncrementalMarking', () => {
  afterAll(() => setIncrementalMarking(true));

  test('off: major collections run, none of them incremental; on again: incremental marking is back', async () => {
    setIncrementalMarking(false);
    const off = await churn(3);
    expect(off.get(constants.NODE_PERFORMANCE_GC_MAJOR) ?? 0).toBeGreaterThanOrEqual(3);
    expect(off.get(constants.NODE_PERFORMANCE_GC_INCREMENTAL) ?? 0).toBe(0);

    setIncrementalMarking(true);
    const on = await churn(3);
    expect(on.get(constants.NODE_PERFORMANCE_GC_INCREMENTAL) ?? 0).toBeGreaterThan(0);
  });
});
