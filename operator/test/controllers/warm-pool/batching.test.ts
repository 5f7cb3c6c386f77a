import * as fc from 'fast-check';
import { slowStartWaves, takeTokens, type TokenBucket } from '../../../src/controllers/warm-pool/batching';

describe('slowStartWaves', () => {
  test.each<[number, number[]]>([
    [0, []],
    [1, [1]],
    [2, [1, 1]],
    [3, [1, 2]],
    [10, [1, 2, 4, 3]],
    [300, [1, 2, 4, 8, 16, 32, 64, 128, 45]],
  ])('%i creates: %j', (count, waves) => {
    expect(slowStartWaves(count)).toEqual(waves);
  });

  test('waves add up, start at 1, at most double, and are as few as doubling allows (fast-check)', () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: 5000 }), (count) => {
      const waves = slowStartWaves(count);
      expect(waves.reduce((a, b) => a + b, 0)).toBe(count);
      if (count > 0) expect(waves[0]).toBe(1);
      waves.forEach((w, i) => {
        expect(w).toBeGreaterThan(0);
        if (i > 0) expect(w).toBeLessThanOrEqual(2 * waves[i - 1]);
        if (i < waves.length - 1) expect(w).toBe(2 ** i);
      });
      expect(waves.length).toBe(Math.ceil(Math.log2(count + 1)));
    }));
  });
});

describe('takeTokens', () => {
  test('rate 0 is unpaced and keeps no state', () => {
    expect(takeTokens(undefined, 500, 0, 0)).toEqual({ granted: 500, bucket: undefined });
  });

  test('starts full with one second of tokens, then paces', () => {
    const first = takeTokens(undefined, 15, 10, 1000);
    expect(first).toEqual({ granted: 10, bucket: { tokens: 0, atMs: 1000 }, nextTokenAtMs: 1100 });
    expect(takeTokens(first.bucket, 5, 10, 1050).granted).toBe(0);
    expect(takeTokens(first.bucket, 5, 10, 1100).granted).toBe(1);
    expect(takeTokens(first.bucket, 5, 10, 1350).granted).toBe(3);
    expect(takeTokens(first.bucket, 50, 10, 60_000).granted).toBe(10);
  });

  test('a rate below one still allows one create at a time', () => {
    const first = takeTokens(undefined, 3, 0.5, 0);
    expect(first.granted).toBe(1);
    expect(first.nextTokenAtMs).toBe(2000);
    expect(takeTokens(first.bucket, 3, 0.5, 1999).granted).toBe(0);
    expect(takeTokens(first.bucket, 3, 0.5, 2000).granted).toBe(1);
  });

  const arbCalls = fc.array(fc.record({ gap: fc.integer({ min: 0, max: 3000 }), want: fc.integer({ min: 0, max: 50 }) }), { maxLength: 40 });
  const arbRate = fc.oneof(fc.integer({ min: 1, max: 200 }), fc.double({ min: 0.1, max: 50, noNaN: true }));

  test('never grants more than one bucket plus the rate times the elapsed time (fast-check)', () => {
    fc.assert(fc.property(arbRate, arbCalls, (rate, calls) => {
      let bucket: TokenBucket | undefined;
      let now = 10_000;
      const start = now;
      let total = 0;
      for (const call of calls) {
        now += call.gap;
        const grant = takeTokens(bucket, call.want, rate, now);
        expect(grant.granted).toBeLessThanOrEqual(call.want);
        total += grant.granted;
        bucket = grant.bucket;
        expect(total).toBeLessThanOrEqual(Math.max(1, rate) + (rate * (now - start)) / 1000 + 1e-6);
      }
    }));
  });

  test('a caller that comes back at nextTokenAtMs gets at least one token (fast-check)', () => {
    fc.assert(fc.property(arbRate, arbCalls, (rate, calls) => {
      let bucket: TokenBucket | undefined;
      let now = 0;
      for (const call of calls) {
        now += call.gap;
        const grant = takeTokens(bucket, call.want, rate, now);
        bucket = grant.bucket;
        if (grant.nextTokenAtMs !== undefined) {
          expect(grant.nextTokenAtMs).toBeGreaterThan(now);
          expect(takeTokens(bucket, 1, rate, grant.nextTokenAtMs).granted).toBe(1);
        }
      }
    }));
  });
});
