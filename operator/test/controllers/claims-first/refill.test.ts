/** Refill giving way to waiting claims: the hold decision, and planPool's use of it ("refill never starves"). */
import * as fc from 'fast-check';
import { catchUpGrant, claimsFirstHold, lowWaterMark, type CatchUp } from '../../../src/controllers/claims-first';
import { classifyMembers } from '../../../src/controllers/warm-pool/classify';
import { INITIAL_POOL_STATE, planPool, type PoolPlan, type PoolState } from '../../../src/controllers/warm-pool/plan';
import { FLAGS, NOW, TEMPLATE, member, notReady, pool } from '../warm-pool/fixtures';

const MAX = FLAGS.claimsFirstMaxDeferMs;

describe('claimsFirstHold', () => {
  test.each<[string, Parameters<typeof claimsFirstHold>[0], ReturnType<typeof claimsFirstHold>]>([
    ['no claim waits', { claimsWaiting: 0, readyMembers: 10, maxDeferMs: MAX, now: NOW }, { holding: false }],
    ['the Ready members cover the waiting claims', { claimsWaiting: 3, readyMembers: 10, maxDeferMs: MAX, now: NOW },
      { holding: true, sinceMs: NOW, untilMs: NOW + MAX }],
    ['exactly: one Ready member for each', { claimsWaiting: 3, readyMembers: 3, maxDeferMs: MAX, now: NOW },
      { holding: true, sinceMs: NOW, untilMs: NOW + MAX }],
    ['more claims than Ready members: the rest need the refill now', { claimsWaiting: 4, readyMembers: 3, maxDeferMs: MAX, now: NOW },
      { holding: false, sinceMs: NOW }],
    ['held for the whole bound already: a steady load, past the bound', { sinceMs: NOW - MAX, claimsWaiting: 3, readyMembers: 10, maxDeferMs: MAX, now: NOW },
      { holding: false, sinceMs: NOW - MAX, pastBound: true }],
    ['the flag at 0s', { claimsWaiting: 3, readyMembers: 10, maxDeferMs: 0, now: NOW }, { holding: false }],
  ])('%s', (_, input, expected) => {
    expect(claimsFirstHold(input)).toEqual(expected);
  });

  test('the low-water mark (a pool is short at or below it): a quarter of the pool, at least one', () => {
    expect([0, 1, 4, 5, 300].map(lowWaterMark)).toEqual([1, 1, 1, 2, 75]);
  });
});

describe('planPool with claims waiting', () => {
  const p = pool({ replicas: 8 });
  const planWith = (ready: number, notReadyCount: number, claimsWaiting: number, state: PoolState = INITIAL_POOL_STATE, now = NOW): PoolPlan => {
    const sandboxes = [
      ...Array.from({ length: ready }, () => member({ pool: p })),
      ...Array.from({ length: notReadyCount }, () => member({ pool: p, conditions: [notReady()] })),
    ];
    return planPool({
      pool: p,
      template: TEMPLATE,
      gate: { ok: true },
      members: classifyMembers(p, TEMPLATE, sandboxes, now, FLAGS),
      pendingCreates: 0,
      claimsWaiting,
      state,
      flags: FLAGS,
      now,
    });
  };

  test('Ready members cover the claims: creates wait (look again by the bound), then go, paced while claims still wait', () => {
    const held = planWith(5, 0, 4);
    expect([held.creates, held.heldForClaims, held.requeueAfterMs]).toEqual([0, true, MAX]);
    // The bound is over and claims still wait: one create now, the next when its token is due.
    const later = planWith(5, 0, 4, held.state, NOW + MAX);
    expect([later.creates, later.heldForClaims]).toEqual([1, false]);
    expect(later.requeueAfterMs).toBeGreaterThan(0);
    expect(later.requeueAfterMs).toBeLessThanOrEqual(1000);
    // The claims served (the stretch over): the rest at once.
    expect(planWith(5, 0, 0, later.state, NOW + MAX + 1).creates).toBe(3);
    expect(planWith(5, 0, 0, held.state).creates).toBe(3);
  });

  test('a held-back refill goes out paced, not in one lump, while a steady load goes on past the bound', () => {
    // A pool of 400 with 300 Ready: the hold's bound built a deficit of 100 (20 claims/s for 5 s).
    const big = pool({ replicas: 400 });
    const members = classifyMembers(big, TEMPLATE, Array.from({ length: 300 }, () => member({ pool: big })), NOW, FLAGS);
    const planAt = (state: PoolState, now: number, pendingCreates: number, maxDeferMs = MAX) => planPool({
      pool: big,
      template: TEMPLATE,
      gate: { ok: true },
      members,
      pendingCreates,
      claimsWaiting: 1,
      state,
      flags: { ...FLAGS, maxBatchSize: 300, claimsFirstMaxDeferMs: maxDeferMs },
      now,
    });
    const held = planAt(INITIAL_POOL_STATE, NOW, 0);
    expect([held.creates, held.heldForClaims]).toEqual([0, true]);
    // Passes every 50 ms (a claim each) for 6 s after the bound: creates granted per pass and in all.
    let state = held.state;
    let pending = 0;
    const perPass: number[] = [];
    for (let t = NOW + MAX; t < NOW + MAX + 6_000; t += 50) {
      const step = planAt(state, t, pending);
      perPass.push(step.creates);
      pending += step.creates;
      state = step.state;
    }
    // No lump: never more than 100 ms of the catch-up's rate (2 x 100 / 5 s = 40/s: 4) in a pass.
    expect(Math.max(...perPass)).toBeLessThanOrEqual(4);
    // And the whole deficit goes within about one bound of the hold ending (40/s: 2.5 s).
    expect(perPass.reduce((a, b) => a + b, 0)).toBe(100);
    expect(perPass.findIndex((_, i) => perPass.slice(0, i + 1).reduce((a, b) => a + b, 0) === 100) * 50).toBeLessThanOrEqual(MAX);
    // The negative control: with the flag at 0s nothing holds and nothing is paced (the deficit at once).
    expect(planAt(INITIAL_POOL_STATE, NOW, 0, 0).creates).toBe(100);
  });

  test('more claims than Ready members (not-Ready ones do not count): creates go at once', () => {
    expect(planWith(2, 3, 3).creates).toBe(3);
    expect(planWith(2, 3, 2).heldForClaims).toBe(true);
    // The last Ready member and one claim for it: held (the A/B's sequential case).
    expect([planWith(1, 0, 1).creates, planWith(1, 0, 1).heldForClaims]).toEqual([0, true]);
  });

  test('refill never starves: under claims that never stop, creates go within the bound of the hold starting (fast-check)', () => {
    const pass = fc.record({
      ms: fc.integer({ min: 0, max: 2_000 }), ready: fc.integer({ min: 0, max: 8 }), waiting: fc.integer({ min: 1, max: 12 }),
    });
    fc.assert(fc.property(fc.array(pass, { minLength: 1, maxLength: 40 }), (passes) => {
      let state = INITIAL_POOL_STATE;
      let now = NOW;
      let firstHeldAt: number | undefined;
      for (const step of passes) {
        now += step.ms;
        const deficitPlan = planWith(step.ready, 0, step.waiting, state, now);
        const deficit = 8 - step.ready;
        if (deficit > 0 && deficitPlan.heldForClaims) firstHeldAt ??= now;
        // Held only while the Ready members cover the claims, and never past the bound of the first hold.
        if (deficitPlan.heldForClaims) {
          expect(step.ready).toBeGreaterThanOrEqual(step.waiting);
          expect(now - firstHeldAt!).toBeLessThan(MAX);
        } else if (step.ready <= lowWaterMark(8) || step.ready < step.waiting || deficitPlan.creates === deficit) {
          // Short, or not past the bound: the whole deficit at once.
          expect(deficitPlan.creates).toBe(deficit);
        } else {
          // Past the bound with claims still waiting: paced, and the pool looks again within a second.
          expect(deficitPlan.creates).toBeLessThan(deficit);
          expect(deficitPlan.requeueAfterMs).toBeLessThanOrEqual(1000);
        }
        state = deficitPlan.state;
      }
    }), { numRuns: 300 });
  });
});

describe('catchUpGrant', () => {
  const input = { pastBound: true, short: false, deficit: 100, want: 100, maxDeferMs: 5_000, now: NOW };

  test('past the bound: twice the deficit over the bound (40/s here), starting with one create', () => {
    expect(catchUpGrant(input)).toEqual({ granted: 1, state: { ratePerSecond: 40, tokens: 0, atMs: NOW }, nextAtMs: NOW + 25 });
  });

  test.each<[string, CatchUp, Partial<typeof input>, number, number]>([
    ['100 ms later: 4 tokens', { ratePerSecond: 40, tokens: 0, atMs: NOW }, { now: NOW + 100 }, 4, 40],
    ['10 s later: still at most 100 ms of the rate (no lump from a quiet spell)', { ratePerSecond: 40, tokens: 0, atMs: NOW }, { now: NOW + 10_000 }, 4, 40],
    ['the deficit shrank: the rate stays (a falling rate would stall at the claims\' own)', { ratePerSecond: 40, tokens: 0, atMs: NOW }, { deficit: 10, now: NOW + 100 }, 4, 40],
    ['the deficit grew (claims came faster): the rate follows', { ratePerSecond: 40, tokens: 0, atMs: NOW }, { deficit: 200, now: NOW + 100 }, 8, 80],
    ['a tiny deficit: at least one create a second', { ratePerSecond: 1, tokens: 0, atMs: NOW }, { deficit: 1, want: 1, now: NOW + 1_000 }, 1, 1],
  ])('%s', (_, state, over, granted, rate) => {
    const out = catchUpGrant({ ...input, ...over, state });
    expect(out.granted).toBe(granted);
    expect(out.state?.ratePerSecond).toBe(rate);
  });

  test('no pacing when the stretch is within its bound, when the pool is short, or with the flag at 0s', () => {
    const state: CatchUp = { ratePerSecond: 40, tokens: 0, atMs: NOW };
    expect(catchUpGrant({ ...input, pastBound: false, state })).toEqual({ granted: 100 });
    // Short: its claims need members now; the rate is kept for when it is not.
    expect(catchUpGrant({ ...input, short: true, state })).toEqual({ granted: 100, state });
    expect(catchUpGrant({ ...input, maxDeferMs: 0, state })).toEqual({ granted: 100 });
    expect(catchUpGrant({ ...input, want: 0, state })).toEqual({ granted: 0, state });
  });
});
