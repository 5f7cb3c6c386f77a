import * as fc from 'fast-check';
import { NOW, NS, member } from './fixtures';
import {
  MEMBER_WRITE_TTL_MS, forgetMemberWrites, memberWrites, memberWritesExpireAtMs, pendingMemberWrites, restartMemberWrite, type MemberWrites,
} from '../../../src/controllers/warm-pool/member-writes';
import type { Sandbox } from '../../../src/model';
import { DEFAULT_EXPECTATION_TTL_MS } from '../../../src/runtime/expectations';
import { keyOf } from '../../../src/runtime/types';
import { FakeStore } from '../../fake-kube';

const TTL = 1000;
const POOL = 'pool-uid';

function setup(): { writes: MemberWrites; cache: FakeStore<Sandbox> } {
  const writes = memberWrites(TTL);
  const cache = new FakeStore<Sandbox>();
  writes.follow(cache, keyOf);
  return { writes, cache };
}

const pending = (writes: MemberWrites, cache: FakeStore<Sandbox>, now: number, pool = POOL) => pendingMemberWrites(writes, pool, cache, now);

describe('member writes', () => {
  test('a create is pending from before the call until the cache shows the member, whichever pool it ends up in', () => {
    const { writes, cache } = setup();
    const created = member({ name: 'py-pool-a' });
    writes.expect(keyOf(created), { pool: POOL }, NOW);
    expect(pending(writes, cache, NOW + 1)).toEqual({ creates: 1, deletes: new Set() });
    expect(memberWritesExpireAtMs(writes, POOL)).toBe(NOW + TTL);
    // Claimed before the pool saw it: it is not a member any more, but the create is observed.
    cache.put(member({ name: 'py-pool-a', owner: 'claim' }));
    expect(pending(writes, cache, NOW + 2)).toEqual({ creates: 0, deletes: new Set() });
    expect(writes.size).toBe(0);
  });

  test('the cache is read on every pass: an entry whose event was missed still ends once the cache has the object', () => {
    const writes = memberWrites(TTL);
    const cache = new FakeStore<Sandbox>().put(member({ name: 'py-pool-a' }));
    writes.expect(`${NS}/py-pool-a`, { pool: POOL }, NOW);
    expect(pending(writes, cache, NOW).creates).toBe(0);
  });

  test('the watch event may beat the response: restarting on the response does not bring the entry back', () => {
    const { writes, cache } = setup();
    writes.expect(`${NS}/py-pool-a`, { pool: POOL }, NOW);
    cache.put(member({ name: 'py-pool-a' }));
    restartMemberWrite(writes, `${NS}/py-pool-a`, cache, NOW + 5);
    expect(writes.size).toBe(0);
  });

  test('an entry waits a whole TTL from its response (or its unknown outcome), however long the call took', () => {
    const { writes, cache } = setup();
    writes.expect(`${NS}/py-pool-a`, { pool: POOL }, NOW);
    restartMemberWrite(writes, `${NS}/py-pool-a`, cache, NOW + 700);
    expect(pending(writes, cache, NOW + TTL).creates).toBe(1);
    expect(pending(writes, cache, NOW + 700 + TTL - 1).creates).toBe(1);
    expect(memberWritesExpireAtMs(writes, POOL)).toBe(NOW + 700 + TTL);
    expect(pending(writes, cache, NOW + 700 + TTL).creates).toBe(0);
  });

  test('a lost event holds back its own slot, and only until it expires', () => {
    const { writes, cache } = setup();
    for (const name of ['a', 'b', 'c']) writes.expect(`${NS}/py-pool-${name}`, { pool: POOL }, NOW);
    cache.put(member({ name: 'py-pool-a' }), member({ name: 'py-pool-b' }));
    expect(pending(writes, cache, NOW + 10).creates).toBe(1);
    expect(pending(writes, cache, NOW + TTL).creates).toBe(0);
  });

  test('a delete is pending while the cache shows the member alive; gone, terminating or a namesake ends it', () => {
    const { writes, cache } = setup();
    const doomed = [member({ name: 'py-pool-a' }), member({ name: 'py-pool-b' }), member({ name: 'py-pool-c' })];
    cache.put(...doomed);
    for (const m of doomed) writes.expect(keyOf(m), { pool: POOL, deletedUid: m.metadata.uid! }, NOW);
    expect(pending(writes, cache, NOW).deletes).toEqual(new Set(doomed.map((m) => m.metadata.uid)));
    cache.remove(NS, 'py-pool-a');
    cache.put(member({ name: 'py-pool-b', deleting: true }));
    cache.put({ ...member({ name: 'py-pool-c' }), metadata: { ...member({ name: 'py-pool-c' }).metadata, uid: 'namesake' } });
    expect(pending(writes, cache, NOW + 1).deletes).toEqual(new Set());
  });

  test('another pool\'s writes count neither as creates nor for the expiry', () => {
    const { writes, cache } = setup();
    writes.expect(`${NS}/other-x`, { pool: 'other-uid' }, NOW);
    writes.expect(`${NS}/py-pool-a`, { pool: POOL }, NOW + 300);
    expect(pending(writes, cache, NOW + 1)).toEqual({ creates: 1, deletes: new Set() });
    expect(memberWritesExpireAtMs(writes, POOL)).toBe(NOW + 300 + TTL);
    expect(memberWritesExpireAtMs(writes, 'none')).toBeUndefined();
  });

  test('a pool that is gone takes its writes, and only its, with it', () => {
    const { writes, cache } = setup();
    writes.expect(`${NS}/other-x`, { pool: 'other-uid' }, NOW);
    writes.expect(`${NS}/py-pool-a`, { pool: POOL }, NOW);
    forgetMemberWrites(writes, POOL, cache, NOW);
    expect(pending(writes, cache, NOW).creates).toBe(0);
    expect(pending(writes, cache, NOW, 'other-uid').creates).toBe(1);
  });

  test('a minute by default, longer than other expectations: a refill burst can take that long to show', () => {
    expect(memberWrites().ttlMs).toBe(MEMBER_WRITE_TTL_MS);
    expect(MEMBER_WRITE_TTL_MS).toBe(60_000);
    expect(MEMBER_WRITE_TTL_MS).toBeGreaterThan(DEFAULT_EXPECTATION_TTL_MS);
  });

  type Op = { op: 'create'; n: number } | { op: 'respond'; i: number } | { op: 'refuse'; i: number } | { op: 'tick'; ms: number };
  const arbOps = fc.array(fc.oneof(
    fc.record({ op: fc.constant('create' as const), n: fc.integer({ min: 0, max: 4 }) }),
    fc.record({ op: fc.constant('respond' as const), i: fc.nat(20) }),
    fc.record({ op: fc.constant('refuse' as const), i: fc.nat(20) }),
    fc.record({ op: fc.constant('tick' as const), ms: fc.integer({ min: 0, max: 700 }) }),
  ), { maxLength: 60 });

  test('pending creates are exactly the recorded, unrefused, unexpired ones, and all are released one TTL after the last record (fast-check)', () => {
    fc.assert(fc.property(arbOps, (ops) => {
      const { writes, cache } = setup();
      let now = NOW;
      let lastRecord = NOW;
      const keys: string[] = [];
      // The model: when each key's entry was last recorded; refused or lapsed keys are gone.
      const recordedAt = new Map<string, number>();
      const live = () => [...recordedAt].filter(([, at]) => now - at < TTL).length;
      for (const o of ops) {
        if (o.op === 'tick') {
          now += o.ms;
        } else if (o.op === 'create') {
          for (let i = 0; i < o.n; i++) {
            const key = `${NS}/py-pool-${keys.length}`;
            keys.push(key);
            writes.expect(key, { pool: POOL }, now);
            recordedAt.set(key, now);
            lastRecord = now;
          }
        } else if (keys[o.i] !== undefined && o.op === 'respond') {
          restartMemberWrite(writes, keys[o.i], cache, now);
          const at = recordedAt.get(keys[o.i]);
          if (at !== undefined && now - at < TTL) recordedAt.set(keys[o.i], now);
          else recordedAt.delete(keys[o.i]);
          lastRecord = now;
        } else if (keys[o.i] !== undefined) {
          writes.forget(keys[o.i]);
          recordedAt.delete(keys[o.i]);
        }
        for (const [key, at] of recordedAt) if (now - at >= TTL) recordedAt.delete(key);
        expect(pending(writes, cache, now).creates).toBe(live());
        const expireAtMs = memberWritesExpireAtMs(writes, POOL);
        if (recordedAt.size > 0) expect(expireAtMs).toBe(Math.min(...recordedAt.values()) + TTL);
      }
      expect(pending(writes, cache, lastRecord + TTL).creates).toBe(0);
      expect(writes.size).toBe(0);
    }));
  });
});
