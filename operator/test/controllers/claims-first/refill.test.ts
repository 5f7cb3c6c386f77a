/** Refill giving way to waiting claims: the hold decision, and planPool's use of it ("refill never starves"). */
import * as fc from 'fast-check';
import { claimsFirstHold, lowWaterMark } from '../../../src/controllers/claims-first';
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
    ['held for the whole bound already', { sinceMs: NOW - MAX, claimsWaiting: 3, readyMembers: 10, maxDeferMs: MAX, now: NOW },
      { holding: false, sinceMs: NOW - MAX }],
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

  test('Ready members cover the claims: creates wait for them (look again by the bound), then go', () => {
    const held = planWith(5, 0, 4);
    expect([held.creates, held.heldForClaims, held.requeueAfterMs]).toEqual([0, true, MAX]);
    const later = planWith(5, 0, 4, held.state, NOW + MAX);
    expect([later.creates, later.heldForClaims]).toEqual([3, false]);
    expect(planWith(5, 0, 0, held.state).creates).toBe(3);
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
        } else {
          expect(deficitPlan.creates).toBe(deficit);
        }
        state = deficitPlan.state;
      }
    }), { numRuns: 300 });
  });
});
