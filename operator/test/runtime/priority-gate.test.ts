import * as fc from 'fast-check';
import { BackgroundCap, PriorityGate, type RequestPriority } from '../../src/runtime/priority-gate';

/** A request that finishes when the test says so. */
function pending() {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  return { done, finish };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('PriorityGate', () => {
  test('at most `limit` in flight; the rest wait', async () => {
    const gate = new PriorityGate(2);
    const reqs = [pending(), pending(), pending()];
    const started: number[] = [];
    const runs = reqs.map((r, i) => gate.run('normal', async () => { started.push(i); await r.done; }));
    await tick();
    expect(started).toEqual([0, 1]);
    expect(gate.active).toBe(2);
    expect(gate.queued()).toBe(1);
    reqs[0].finish();
    await tick();
    expect(started).toEqual([0, 1, 2]);
    reqs[1].finish();
    reqs[2].finish();
    await Promise.all(runs);
    expect(gate.active).toBe(0);
  });

  test('an urgent write overtakes waiting background work', async () => {
    const gate = new PriorityGate(1);
    const blocker = pending();
    const order: string[] = [];
    const first = gate.run('normal', () => blocker.done);
    const runs = [
      gate.run('background', async () => { order.push('refill-1'); }),
      gate.run('background', async () => { order.push('refill-2'); }),
      gate.run('urgent', async () => { order.push('urgent'); }),
    ];
    blocker.finish();
    await Promise.all([first, ...runs]);
    expect(order[0]).toBe('urgent');
  });

  test('background still moves under a steady urgent load (weights 16:4:1, no starvation)', async () => {
    const gate = new PriorityGate(1);
    const blocker = pending();
    const order: RequestPriority[] = [];
    const first = gate.run('normal', () => blocker.done);
    const runs: Promise<void>[] = [];
    for (let i = 0; i < 40; i++) runs.push(gate.run('urgent', async () => { order.push('urgent'); }));
    for (let i = 0; i < 3; i++) runs.push(gate.run('background', async () => { order.push('background'); }));
    blocker.finish();
    await Promise.all([first, ...runs]);
    // One background slot per 16 urgent slots while both wait.
    expect(order.indexOf('background')).toBeLessThanOrEqual(17);
    expect(order.slice(0, 34).filter((l) => l === 'background').length).toBe(2);
  });

  test('a failing request frees its slot', async () => {
    const gate = new PriorityGate(1);
    await expect(gate.run('urgent', async () => { throw new Error('boom'); })).rejects.toThrow('boom');
    await expect(gate.run('urgent', async () => 'ok')).resolves.toBe('ok');
    expect(gate.active).toBe(0);
  });

  test('whatever the mix, every request runs once and the bound holds', async () => {
    await fc.assert(fc.asyncProperty(
      fc.integer({ min: 1, max: 4 }),
      fc.array(fc.constantFrom<RequestPriority>('urgent', 'normal', 'background'), { maxLength: 40 }),
      async (limit, lanes) => {
        const gate = new PriorityGate(limit);
        let peak = 0;
        let ran = 0;
        await Promise.all(lanes.map((lane) => gate.run(lane, async () => {
          peak = Math.max(peak, gate.active);
          await tick();
          ran++;
        })));
        expect(ran).toBe(lanes.length);
        expect(peak).toBeLessThanOrEqual(limit);
        expect(gate.queued()).toBe(0);
      },
    ), { numRuns: 50 });
  });

  test('a limit below 1 is refused with the fix', () => {
    expect(() => new PriorityGate(0)).toThrow('limit must be a whole number of at least 1 (it is 0)');
  });
});

describe('BackgroundCap', () => {
  const feed = (cap: BackgroundCap, ms: number, n: number, from = 0) => {
    for (let i = 0; i < n; i++) cap.sample(ms, from + i);
  };

  test('an unloaded server keeps the whole limit', () => {
    const cap = new BackgroundCap(32);
    feed(cap, 3, 100);
    expect(cap.current).toBe(32);
  });

  test('latency far above the baseline shrinks it towards 1; recovery grows it back', () => {
    const cap = new BackgroundCap(32);
    feed(cap, 4, 50);
    feed(cap, 200, 200, 100);
    expect(cap.current).toBeLessThanOrEqual(2);
    feed(cap, 4, 200, 400);
    expect(cap.current).toBe(32);
  });

  test('the baseline is the last whole window\'s: a slower server for good is the new normal', () => {
    const cap = new BackgroundCap(32);
    feed(cap, 4, 20);
    // 40 ms for two whole windows: then 40 ms is the baseline, within tolerance, and the cap regrows.
    for (let w = 1; w <= 3; w++) feed(cap, 40, 200, w * BackgroundCap.WINDOW_MS);
    expect(cap.current).toBe(32);
  });

  test('latencies under the floor are noise, never a reason to shrink', () => {
    const cap = new BackgroundCap(32);
    feed(cap, 0.5, 20);
    feed(cap, BackgroundCap.FLOOR_MS * BackgroundCap.TOLERANCE, 200, 100);
    expect(cap.current).toBe(32);
  });
});

describe('PriorityGate background cap', () => {
  const slow = (gate: PriorityGate) => {
    for (let i = 0; i < 300; i++) gate.sample(i < 20 ? 4 : 300, i);
    expect(gate.backgroundCap.current).toBe(1);
  };

  test('a slow server lets one background request out at a time, while urgent work still uses every slot', async () => {
    const gate = new PriorityGate(4);
    slow(gate);
    const background = [pending(), pending(), pending()];
    const started: string[] = [];
    const runs = background.map((r, i) => gate.run('background', async () => { started.push(`bg-${i}`); await r.done; }));
    const claims = [pending(), pending(), pending()];
    runs.push(...claims.map((r, i) => gate.run('urgent', async () => { started.push(`claim-${i}`); await r.done; })));
    await tick();
    expect(started).toEqual(['bg-0', 'claim-0', 'claim-1', 'claim-2']);
    expect(gate.backgroundActive).toBe(1);
    background[0].finish();
    await tick();
    expect(started).toEqual(['bg-0', 'claim-0', 'claim-1', 'claim-2', 'bg-1']);
    for (const r of [...background, ...claims]) r.finish();
    await Promise.all(runs);
    expect([gate.active, gate.backgroundActive, gate.queued()]).toEqual([0, 0, 0]);
  });

  test('background never stops: with the cap at its lowest, every background request still runs', async () => {
    await fc.assert(fc.asyncProperty(
      fc.array(fc.constantFrom<RequestPriority>('urgent', 'normal', 'background'), { minLength: 1, maxLength: 40 }),
      async (lanes) => {
        const gate = new PriorityGate(3);
        slow(gate);
        let ran = 0;
        let peakBackground = 0;
        await Promise.all(lanes.map((lane) => gate.run(lane, async () => {
          peakBackground = Math.max(peakBackground, gate.backgroundActive);
          await tick();
          ran++;
        })));
        expect(ran).toBe(lanes.length);
        expect(peakBackground).toBeLessThanOrEqual(1);
      },
    ), { numRuns: 50 });
  });

  test('a cap that grows back lets waiting background work out at once', async () => {
    const gate = new PriorityGate(4);
    slow(gate);
    const blocker = pending();
    const started: number[] = [];
    const runs = [gate.run('background', () => blocker.done), ...[1, 2].map((i) => gate.run('background', async () => { started.push(i); }))];
    await tick();
    expect(started).toEqual([]);
    for (let i = 0; i < 400; i++) gate.sample(4, 1000 + i);
    await tick();
    expect(started).toEqual([1, 2]);
    blocker.finish();
    await Promise.all(runs);
  });
});
