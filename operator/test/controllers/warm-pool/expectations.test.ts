import * as fc from 'fast-check';
import { DEFAULT_EXPECTATIONS_TIMEOUT_MS, PoolExpectations } from '../../../src/controllers/warm-pool/expectations';

const T = 1000;
const nothingSeen = () => false;

describe('PoolExpectations', () => {
  test('a create is pending from before the call until the cache shows its UID', () => {
    const e = new PoolExpectations(T);
    const [token] = e.expectCreates(1, 0);
    expect(e.pendingCreates(1, nothingSeen)).toBe(1);
    e.createSucceeded(token, 'u1', 5);
    expect(e.pendingCreates(6, nothingSeen)).toBe(1);
    expect(e.pendingCreates(7, (uid) => uid === 'u1')).toBe(0);
    expect(e.idle).toBe(true);
  });

  test('the watch event may beat the response: a later pass still clears it from the cache', () => {
    const e = new PoolExpectations(T);
    const [token] = e.expectCreates(1, 0);
    e.observe('u1', false); // event first: the UID is not known yet
    e.createSucceeded(token, 'u1', 5);
    expect(e.pendingCreates(6, (uid) => uid === 'u1')).toBe(0);
  });

  test('an event clears a create, and a delete', () => {
    const e = new PoolExpectations(T);
    const [token] = e.expectCreates(1, 0);
    e.createSucceeded(token, 'u1', 1);
    e.observe('u1', false);
    expect(e.pendingCreates(2, nothingSeen)).toBe(0);
    e.expectDelete('u2', 2);
    e.observe('u2', true);
    expect(e.pendingDeletes(3, () => true).size).toBe(0);
  });

  test('a definite failure frees the slot; an ambiguous one keeps it until it expires', () => {
    const e = new PoolExpectations(T);
    const [a, b] = e.expectCreates(2, 0);
    e.createFailed(a, true, 10);
    expect(e.pendingCreates(10, nothingSeen)).toBe(1);
    e.createFailed(b, false, 500);
    expect(e.pendingCreates(1499, nothingSeen)).toBe(1);
    expect(e.nextExpiryAtMs()).toBe(1500);
    expect(e.pendingCreates(1500, nothingSeen)).toBe(0);
  });

  test('a lost event holds one slot only until the timeout', () => {
    const e = new PoolExpectations(T);
    const tokens = e.expectCreates(3, 0);
    tokens.forEach((t, i) => e.createSucceeded(t, `u${i}`, 10));
    expect(e.pendingCreates(20, (uid) => uid !== 'u2')).toBe(1);
    expect(e.nextExpiryAtMs()).toBe(1010);
    expect(e.pendingCreates(1010, nothingSeen)).toBe(0);
  });

  test('deletes: pending while the cache holds the object; a failed delete is forgotten', () => {
    const e = new PoolExpectations(T);
    e.expectDelete('a', 0);
    e.expectDelete('b', 0);
    expect([...e.pendingDeletes(1, () => true)]).toEqual(['a', 'b']);
    e.deleteFailed('a');
    expect([...e.pendingDeletes(2, (uid) => uid !== 'b')]).toEqual([]);
    expect(e.idle).toBe(true);
  });

  test('unknown tokens are ignored', () => {
    const e = new PoolExpectations(T);
    e.createSucceeded(42, 'x', 0);
    e.createFailed(43, false, 0);
    expect(e.idle).toBe(true);
    expect(e.nextExpiryAtMs()).toBeUndefined();
  });

  test('defaults to a minute', () => {
    expect(new PoolExpectations().timeoutMs).toBe(DEFAULT_EXPECTATIONS_TIMEOUT_MS);
    expect(DEFAULT_EXPECTATIONS_TIMEOUT_MS).toBe(60_000);
  });

  type Op =
    | { op: 'create'; n: number }
    | { op: 'succeed'; i: number }
    | { op: 'fail'; i: number; definite: boolean }
    | { op: 'delete'; i: number }
    | { op: 'tick'; ms: number };
  const arbOps = fc.array(fc.oneof(
    fc.record({ op: fc.constant('create' as const), n: fc.integer({ min: 0, max: 4 }) }),
    fc.record({ op: fc.constant('succeed' as const), i: fc.nat(20) }),
    fc.record({ op: fc.constant('fail' as const), i: fc.nat(20), definite: fc.boolean() }),
    fc.record({ op: fc.constant('delete' as const), i: fc.nat(20) }),
    fc.record({ op: fc.constant('tick' as const), ms: fc.integer({ min: 0, max: 700 }) }),
  ), { maxLength: 60 });

  test('pending never exceeds what was asked for, and everything is released one timeout after the last record (fast-check)', () => {
    fc.assert(fc.property(arbOps, (ops) => {
      const e = new PoolExpectations(T);
      let now = 0;
      let lastRecord = 0;
      const tokens: number[] = [];
      let outstanding = 0;
      for (const o of ops) {
        if (o.op === 'tick') {now += o.ms;} else if (o.op === 'create') {
          tokens.push(...e.expectCreates(o.n, now));
          outstanding += o.n;
          lastRecord = now;
        } else if (o.op === 'succeed' && tokens[o.i] !== undefined) {
          e.createSucceeded(tokens[o.i], `uid-${o.i}`, now);
          lastRecord = now;
        } else if (o.op === 'fail' && tokens[o.i] !== undefined) {
          e.createFailed(tokens[o.i], o.definite, now);
          lastRecord = now;
        } else if (o.op === 'delete') {
          e.expectDelete(`d-${o.i}`, now);
          lastRecord = now;
        }
        const pending = e.pendingCreates(now, nothingSeen);
        expect(pending).toBeGreaterThanOrEqual(0);
        expect(pending).toBeLessThanOrEqual(outstanding);
        const expiry = e.nextExpiryAtMs();
        if (expiry !== undefined) expect(expiry).toBeGreaterThan(now);
      }
      const later = lastRecord + T;
      expect(e.pendingCreates(later, nothingSeen)).toBe(0);
      expect(e.pendingDeletes(later, () => true).size).toBe(0);
      expect(e.idle).toBe(true);
    }));
  });
});
