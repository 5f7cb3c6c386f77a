/** Refill giving way to waiting claims: the hold decision, and planPool's use of it ("refill never starves"). */
import * as fc from 'fast-check';
import { CATCH_UP_MIN_BACKLOG, catchUpGrant, claimsFirstHold, lowWaterMark, type CatchUp } from '../../../src/controllers/claims-first';
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
    // The bound is over and claims still wait: a backlog of 3 is no lump, so it goes at once.
    const later = planWith(5, 0, 4, held.state, NOW + MAX);
    expect([later.creates, later.heldForClaims]).toEqual([3, false]);
    // The claims served (the stretch over): the rest at once.
    expect(planWith(5, 0, 0, later.state, NOW + MAX + 1).creates).toBe(3);
    expect(planWith(5, 0, 0, held.state).creates).toBe(3);
  });

  test('a held-back refill goes out over one more bound, not in one lump, while claims keep taking members at 20/s', () => {
    // A full pool of 400; a claim takes a member every 50 ms from NOW; a create becomes a Ready
    // member 200 ms after it is made; the pool looks every 50 ms.
    const big = pool({ replicas: 400 });
    const all = Array.from({ length: 400 }, () => member({ pool: big }));
    let active = 400;
    let state = INITIAL_POOL_STATE;
    const landing: number[] = [];
    const perPass: Array<{ t: number; creates: number; deficit: number; held: boolean }> = [];
    for (let t = NOW; t < NOW + 14_000; t += 50) {
      active -= 1;
      while (landing.length > 0 && landing[0] <= t) {
        landing.shift();
        active += 1;
      }
      const plan = planPool({
        pool: big,
        template: TEMPLATE,
        gate: { ok: true },
        members: classifyMembers(big, TEMPLATE, all.slice(0, active), t, FLAGS),
        pendingCreates: landing.length,
        claimsWaiting: 1,
        state,
        flags: { ...FLAGS, maxBatchSize: 300 },
        now: t,
      });
      for (let i = 0; i < plan.creates; i++) landing.push(t + 200);
      perPass.push({ t: t - NOW, creates: plan.creates, deficit: 400 - active - landing.length, held: plan.heldForClaims });
      state = plan.state;
    }
    // Held for the bound: the deficit grows to about 100 (20/s for 5 s), nothing is made.
    expect(perPass.filter((x) => x.t < MAX).every((x) => x.creates === 0)).toBe(true);
    expect(perPass.find((x) => x.t === MAX - 50)!.deficit).toBeGreaterThanOrEqual(99);
    // Then no lump: each pass replaces the member taken since the last and lets out two of the backlog at most.
    expect(Math.max(...perPass.map((x) => x.creates))).toBeLessThanOrEqual(3);
    // The backlog shrinks evenly and is gone one bound later, claims still coming; the pool then keeps up.
    const at = (ms: number) => perPass.find((x) => x.t === ms)!.deficit;
    expect(at(MAX + MAX / 2)).toBeGreaterThan(40);
    expect(at(MAX + MAX / 2)).toBeLessThan(60);
    expect(perPass.filter((x) => x.t >= 2 * MAX).every((x) => x.deficit === 0)).toBe(true);
    // While it drains the pool says it holds creates back (so it is woken when claims stop), and not after.
    expect(perPass.filter((x) => x.t >= MAX && x.t < MAX + MAX / 2).every((x) => x.held)).toBe(true);
    expect(perPass.filter((x) => x.t >= 2 * MAX).some((x) => x.held)).toBe(false);
    // The negative control: with the flag at 0s nothing holds, and each pass replaces the member taken.
    const unheld = planPool({
      pool: big,
      template: TEMPLATE,
      gate: { ok: true },
      members: classifyMembers(big, TEMPLATE, all.slice(0, 300), NOW, FLAGS),
      pendingCreates: 0,
      claimsWaiting: 1,
      state: INITIAL_POOL_STATE,
      flags: { ...FLAGS, maxBatchSize: 300, claimsFirstMaxDeferMs: 0 },
      now: NOW,
    });
    expect(unheld.creates).toBe(100);
  });

  test('past the bound with more claims than Ready members: short, so the whole deficit goes (the catch-up is kept for after)', () => {
    const big = pool({ replicas: 40 });
    const members = classifyMembers(big, TEMPLATE, Array.from({ length: 20 }, () => member({ pool: big })), NOW, FLAGS);
    const planAt = (state: PoolState, now: number, claimsWaiting: number) => planPool({
      pool: big, template: TEMPLATE, gate: { ok: true }, members, pendingCreates: 0, claimsWaiting, state, flags: FLAGS, now,
    });
    const held = planAt(INITIAL_POOL_STATE, NOW, 1);
    expect(held.creates).toBe(0);
    const paced = planAt(held.state, NOW + MAX, 1);
    expect([paced.creates, paced.state.catchUp?.backlog]).toEqual([0, 20]);
    // 25 claims wait on 20 Ready members: all 20 now, and nothing is left to hold back.
    const short = planAt(paced.state, NOW + MAX + 10, 25);
    expect([short.creates, short.state.catchUp?.backlog]).toEqual([20, 0]);
  });

  test('more claims than Ready members (not-Ready ones do not count): creates go at once', () => {
    expect(planWith(2, 3, 3).creates).toBe(3);
    expect(planWith(2, 3, 2).heldForClaims).toBe(true);
    // The last Ready member and one claim for it: held (the A/B's sequential case).
    expect([planWith(1, 0, 1).creates, planWith(1, 0, 1).heldForClaims]).toEqual([0, true]);
  });

  test('refill never starves: under claims that never stop, creates go within the bound of the hold starting, all of them one bound later (fast-check)', () => {
    const pass = fc.record({
      ms: fc.integer({ min: 0, max: 2_000 }), ready: fc.integer({ min: 0, max: 8 }), waiting: fc.integer({ min: 1, max: 12 }),
    });
    fc.assert(fc.property(fc.array(pass, { minLength: 1, maxLength: 40 }), (passes) => {
      let state = INITIAL_POOL_STATE;
      let now = NOW;
      let firstHeldAt: number | undefined;
      let stretchStart: number | undefined;
      for (const step of passes) {
        now += step.ms;
        stretchStart ??= now;
        const deficitPlan = planWith(step.ready, 0, step.waiting, state, now);
        const deficit = 8 - step.ready;
        if (deficit > 0 && deficitPlan.heldForClaims) firstHeldAt ??= now;
        const short = step.ready <= lowWaterMark(8) || step.ready < step.waiting;
        if (now - stretchStart < MAX) {
          // Within the bound: held only while the Ready members cover the claims, else the whole deficit.
          if (deficitPlan.heldForClaims) expect(step.ready).toBeGreaterThanOrEqual(step.waiting);
          else expect(deficitPlan.creates).toBe(deficit);
          if (deficitPlan.heldForClaims) expect(now - firstHeldAt!).toBeLessThan(MAX);
        } else if (short || now - stretchStart >= 2 * MAX + 2_000) {
          // Short, or the catch-up after the bound is over (it starts at the first pass past the bound, at most 2 s late here).
          expect(deficitPlan.creates).toBe(deficit);
        } else if (deficitPlan.creates < deficit) {
          // Past the bound, catching up: said, and the pool looks again within the bound.
          expect(deficitPlan.heldForClaims).toBe(true);
          expect(deficitPlan.requeueAfterMs).toBeGreaterThan(0);
          expect(deficitPlan.requeueAfterMs).toBeLessThanOrEqual(MAX);
        }
        state = deficitPlan.state;
      }
    }), { numRuns: 300 });
  });
});

describe('catchUpGrant', () => {
  const input = { pastBound: true, short: false, deficit: 100, want: 100, maxDeferMs: 5_000, now: NOW };
  const started: CatchUp = { backlog: 100, startMs: NOW, endMs: NOW + 5_000 };

  test('the first pass past the bound: the backlog is noted, nothing goes yet, the next member in bound / backlog', () => {
    expect(catchUpGrant(input)).toEqual({ granted: 0, state: started, nextAtMs: NOW + 50 });
  });

  test.each<[string, Partial<typeof input>, number]>([
    ['a fifth of the bound in: a fifth of the backlog', { now: NOW + 1_000 }, 20],
    ['members taken meanwhile are replaced at once, beside the fifth', { now: NOW + 1_000, deficit: 110, want: 110 }, 30],
    ['half the bound in', { now: NOW + 2_500 }, 50],
    ['the bound over: whatever is missing', { now: NOW + 5_000 }, 100],
    ['the batch size caps it', { now: NOW + 2_500, want: 10 }, 10],
  ])('%s', (_, over, granted) => {
    const out = catchUpGrant({ ...input, ...over, state: started });
    expect(out.granted).toBe(granted);
    expect(out.state).toEqual(started);
  });

  test('fewer missing than the schedule allows (creates under way, a short spell): the schedule restarts from what is missing, same end', () => {
    // 1 s in, 80 may be missing; only 40 are (60 made meanwhile): none now, and the 40 drain by the same end.
    const out = catchUpGrant({ ...input, now: NOW + 1_000, deficit: 40, want: 40, state: started });
    expect(out).toEqual({ granted: 0, state: { backlog: 40, startMs: NOW + 1_000, endMs: NOW + 5_000 }, nextAtMs: NOW + 1_100 });
    // A member taken next is replaced at once (the old schedule would hold it back until 2.5 s in).
    expect(catchUpGrant({ ...input, now: NOW + 1_050, deficit: 41, want: 41, state: out.state }).granted).toBe(1);
  });

  test('the requeue lands on the first moment a create may go', () => {
    const out = catchUpGrant({ ...input, now: NOW + 1_000, deficit: 80, want: 80, state: started });
    expect(out.granted).toBe(0);
    expect(catchUpGrant({ ...input, now: out.nextAtMs! - 1, deficit: 80, want: 80, state: out.state }).granted).toBe(0);
    expect(catchUpGrant({ ...input, now: out.nextAtMs!, deficit: 80, want: 80, state: out.state }).granted).toBe(1);
  });

  test('no pacing when the stretch is within its bound or over, when the pool is short, for a small backlog, or with the flag at 0s', () => {
    expect(catchUpGrant({ ...input, pastBound: false, state: started })).toEqual({ granted: 100 });
    // Short: its claims need members now, all go; what the schedule holds back shrinks to what is left missing.
    expect(catchUpGrant({ ...input, short: true, state: started }))
      .toEqual({ granted: 100, state: { backlog: 0, startMs: NOW, endMs: NOW + 5_000 } });
    const capped = catchUpGrant({ ...input, short: true, want: 30, now: NOW + 1_000, state: started });
    expect(capped).toEqual({ granted: 30, state: { backlog: 70, startMs: NOW + 1_000, endMs: NOW + 5_000 } });
    // After a short spell a member taken next is replaced at once (the old schedule would hold it back).
    const spell = catchUpGrant({ ...input, short: true, now: NOW + 1_000, state: started });
    expect(catchUpGrant({ ...input, now: NOW + 1_050, deficit: 1, want: 1, state: spell.state }).granted).toBe(1);
    expect(catchUpGrant({ ...input, deficit: CATCH_UP_MIN_BACKLOG - 1, want: CATCH_UP_MIN_BACKLOG - 1 }).granted).toBe(CATCH_UP_MIN_BACKLOG - 1);
    expect(catchUpGrant({ ...input, deficit: CATCH_UP_MIN_BACKLOG, want: CATCH_UP_MIN_BACKLOG }).granted).toBe(0);
    expect(catchUpGrant({ ...input, maxDeferMs: 0, state: started })).toEqual({ granted: 100 });
    expect(catchUpGrant({ ...input, want: 0, state: started })).toEqual({ granted: 0, state: started });
  });
});
