import * as fc from 'fast-check';
import { NO_HOLD, replenishHold, type ReplenishHold } from '../../../src/controllers/warm-pool/replenish';

const DELAY = 2000;

/** Run observations `[atMs, active, desired]` and return whether each pass held. */
function run(observations: [number, number, number][], delay = DELAY): boolean[] {
  let state: ReplenishHold = NO_HOLD;
  return observations.map(([at, active, desired]) => {
    const decision = replenishHold(state, active, desired, delay, at);
    state = decision.state;
    return decision.holding;
  });
}

describe('replenishHold', () => {
  test.each<[string, [number, number, number][], boolean[], number]>([
    ['a new pool (first pass, short) fills at once', [[0, 0, 5]], [false], DELAY],
    ['after a restart a short pool fills at once', [[0, 3, 5], [100, 3, 5]], [false, false], DELAY],
    ['a claim from a full pool arms the delay', [[0, 5, 5], [100, 4, 5], [1000, 4, 5], [2100, 4, 5]], [false, true, true, false], DELAY],
    ['later claims in the same shortfall do not extend it', [[0, 5, 5], [100, 4, 5], [1500, 3, 5], [2000, 2, 5], [2100, 2, 5]], [false, true, true, true, false], DELAY],
    ['a sustained stream of claims cannot hold past one delay', [[0, 5, 5], [500, 4, 5], [1000, 3, 5], [1500, 2, 5], [2000, 1, 5], [2500, 0, 5]], [false, true, true, true, true, false], DELAY],
    ['once full again, the next claim arms a new delay', [[0, 5, 5], [100, 4, 5], [3000, 5, 5], [3100, 4, 5], [4000, 4, 5]], [false, true, false, true, true], DELAY],
    ['a scale-up is not a claim: no delay', [[0, 5, 5], [100, 5, 8]], [false, false], DELAY],
    ['delay 0 never holds', [[0, 5, 5], [100, 4, 5]], [false, false], 0],
  ])('%s', (_, observations, held, delay) => {
    expect(run(observations, delay)).toEqual(held);
  });

  test('holding ends no later than one delay after the pool first fell short (fast-check)', () => {
    const count = fc.integer({ min: 0, max: 6 });
    const arbStep = fc.record({ gap: fc.integer({ min: 0, max: 1500 }), active: count, desired: count });
    const arb = fc.array(arbStep, { maxLength: 50 });
    fc.assert(fc.property(arb, fc.integer({ min: 1, max: 5000 }), (steps, delay) => {
      let state: ReplenishHold = NO_HOLD;
      let now = 0;
      let shortSince: number | undefined;
      for (const step of steps) {
        now += step.gap;
        const decision = replenishHold(state, step.active, step.desired, delay, now);
        state = decision.state;
        if (step.active >= step.desired) shortSince = undefined;
        else shortSince ??= now;
        if (decision.holding) {
          expect(step.active).toBeLessThan(step.desired);
          expect(now).toBeLessThan(shortSince! + delay);
          expect(decision.untilMs).toBeLessThanOrEqual(shortSince! + delay);
        }
      }
    }));
  });
});
