import * as fc from 'fast-check';
import { PriorityGate, type RequestPriority } from '../../src/runtime/priority-gate';

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

  test('a claim write overtakes waiting background work', async () => {
    const gate = new PriorityGate(1);
    const blocker = pending();
    const order: string[] = [];
    const first = gate.run('normal', () => blocker.done);
    const runs = [
      gate.run('background', async () => { order.push('refill-1'); }),
      gate.run('background', async () => { order.push('refill-2'); }),
      gate.run('claim', async () => { order.push('claim'); }),
    ];
    blocker.finish();
    await Promise.all([first, ...runs]);
    expect(order[0]).toBe('claim');
  });

  test('background still moves under a steady claim load (weights 16:4:1, no starvation)', async () => {
    const gate = new PriorityGate(1);
    const blocker = pending();
    const order: RequestPriority[] = [];
    const first = gate.run('normal', () => blocker.done);
    const runs: Promise<void>[] = [];
    for (let i = 0; i < 40; i++) runs.push(gate.run('claim', async () => { order.push('claim'); }));
    for (let i = 0; i < 3; i++) runs.push(gate.run('background', async () => { order.push('background'); }));
    blocker.finish();
    await Promise.all([first, ...runs]);
    // One background slot per 16 claim slots while both wait.
    expect(order.indexOf('background')).toBeLessThanOrEqual(17);
    expect(order.slice(0, 34).filter((l) => l === 'background').length).toBe(2);
  });

  test('a failing request frees its slot', async () => {
    const gate = new PriorityGate(1);
    await expect(gate.run('claim', async () => { throw new Error('boom'); })).rejects.toThrow('boom');
    await expect(gate.run('claim', async () => 'ok')).resolves.toBe('ok');
    expect(gate.active).toBe(0);
  });

  test('whatever the mix, every request runs once and the bound holds', async () => {
    await fc.assert(fc.asyncProperty(
      fc.integer({ min: 1, max: 4 }),
      fc.array(fc.constantFrom<RequestPriority>('claim', 'normal', 'background'), { maxLength: 40 }),
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
