import fc from 'fast-check';
import { FakeClock } from './fake-clock';
import { DelayHeap } from '../../src/runtime/delay-heap';
import { BucketRateLimiter, ItemExponentialBackoff, TokenBucket, defaultControllerRateLimiter } from '../../src/runtime/rate-limit';
import { MAX_TIMER_DELAY_MS, RateLimitedWorkQueue } from '../../src/runtime/workqueue';

const KEYS = ['ns/a', 'ns/b', 'ns/c', 'ns/d', 'other/e'];

type Command =
  | { op: 'add'; key: string }
  | { op: 'addAfter'; key: string; delay: number }
  | { op: 'addRateLimited'; key: string }
  | { op: 'forget'; key: string }
  | { op: 'get' }
  | { op: 'done'; pick: number }
  | { op: 'advance'; ms: number };

const key = fc.constantFrom(...KEYS);
const command: fc.Arbitrary<Command> = fc.oneof(
  fc.record({ op: fc.constant('add' as const), key }),
  fc.record({ op: fc.constant('addAfter' as const), key, delay: fc.integer({ min: 0, max: 500 }) }),
  fc.record({ op: fc.constant('addRateLimited' as const), key }),
  fc.record({ op: fc.constant('forget' as const), key }),
  fc.record({ op: fc.constant('get' as const) }),
  fc.record({ op: fc.constant('done' as const), pick: fc.nat() }),
  fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 300 }) }),
);

describe('RateLimitedWorkQueue invariants (model-based)', () => {
  test('no key is processed concurrently, nothing is lost, a key is queued at most once', async () => {
    await fc.assert(fc.asyncProperty(fc.array(command, { maxLength: 80 }), async (commands) => {
      const clock = new FakeClock();
      const queue = new RateLimitedWorkQueue({ clock, rateLimiter: defaultControllerRateLimiter({ clock }) });
      // The model: keys that must still be handed out, and keys being processed.
      const needs = new Set<string>();
      const processing = new Set<string>();
      const delayed = new Map<string, number>();
      const releaseDue = () => {
        for (const [k, at] of delayed) {
          if (at <= clock.now()) {
            needs.add(k);
            delayed.delete(k);
          }
        }
      };
      const schedule = (k: string, delay: number) => {
        if (delay <= 0) needs.add(k);
        else delayed.set(k, Math.min(delayed.get(k) ?? Infinity, clock.now() + delay));
      };
      for (const c of commands) {
        switch (c.op) {
          case 'add': queue.add(c.key); needs.add(c.key); break;
          case 'addAfter': queue.addAfter(c.key, c.delay); schedule(c.key, c.delay); break;
          case 'addRateLimited': {
            // The limiter's next delay is what the queue will use; peek it through retries().
            const before = queue.retries(c.key);
            queue.addRateLimited(c.key);
            expect(queue.retries(c.key)).toBe(before + 1);
            expect(queue.waiting + queue.length).toBeGreaterThan(0);
            schedule(c.key, Math.max(5 * 2 ** before, 0));
            break;
          }
          case 'forget': queue.forget(c.key); expect(queue.retries(c.key)).toBe(0); break;
          case 'get': {
            if (queue.length === 0) break;
            const k = (await queue.get())!;
            expect(processing.has(k)).toBe(false); // never handed out twice at once
            expect(needs.has(k)).toBe(true); // never handed out without being added
            needs.delete(k);
            processing.add(k);
            break;
          }
          case 'done': {
            if (processing.size === 0) break;
            const k = [...processing][c.pick % processing.size];
            processing.delete(k);
            queue.done(k);
            break;
          }
          case 'advance': clock.advance(c.ms); releaseDue(); break;
        }
        // Queued = needed and not being processed; each such key exactly once.
        const ready = [...needs].filter((k) => !processing.has(k));
        expect(queue.length).toBe(ready.length);
        expect(queue.inFlight).toBe(processing.size);
      }
      // Finish everything; every key the model still needs must come out, exactly once each.
      for (const k of processing) queue.done(k);
      processing.clear();
      clock.advance(10_000_000);
      releaseDue();
      const drained: string[] = [];
      while (queue.length > 0) {
        const k = (await queue.get())!;
        drained.push(k);
        queue.done(k);
      }
      expect(drained.sort()).toEqual([...needs].sort());
    }), { numRuns: 300 });
  });

  test('a key added while processing comes back after done, not before', async () => {
    const queue = new RateLimitedWorkQueue({ clock: new FakeClock() });
    queue.add('a');
    expect(await queue.get()).toBe('a');
    queue.add('a');
    queue.add('a');
    expect(queue.length).toBe(0);
    queue.done('a');
    expect(queue.length).toBe(1);
    expect(await queue.get()).toBe('a');
  });

  test('a waiting worker gets the next key at once', async () => {
    const queue = new RateLimitedWorkQueue({ clock: new FakeClock() });
    const next = queue.get();
    queue.add('x');
    expect(await next).toBe('x');
    expect(queue.inFlight).toBe(1);
  });
});

describe('addAfter', () => {
  test('keys become ready in due-time order, ties first-in first-out, with one timer', async () => {
    await fc.assert(fc.asyncProperty(fc.uniqueArray(fc.string({ minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 30 })
      .chain((keys) => fc.tuple(fc.constant(keys), fc.array(fc.integer({ min: 1, max: 50 }), { minLength: keys.length, maxLength: keys.length }))),
    async ([keys, delays]) => {
      const clock = new FakeClock();
      const queue = new RateLimitedWorkQueue({ clock });
      keys.forEach((k, i) => queue.addAfter(k, delays[i]));
      expect(clock.pending).toBe(1);
      const order: string[] = [];
      for (let t = 0; t <= 50; t++) {
        clock.advance(1);
        while (queue.length > 0) order.push((await queue.get())!);
      }
      const expected = keys.map((k, i) => ({ k, d: delays[i], i })).sort((a, b) => a.d - b.d || a.i - b.i).map((e) => e.k);
      expect(order).toEqual(expected);
      expect(clock.pending).toBe(0);
    }));
  });

  test('a deadline beyond the longest Node timer (a shutdownTime weeks ahead) is reached through capped timers, not a spin', () => {
    const delays: number[] = [];
    const clock = new FakeClock();
    const setTimeout = clock.setTimeout.bind(clock);
    clock.setTimeout = (callback, delayMs) => {
      delays.push(delayMs);
      return setTimeout(callback, delayMs);
    };
    const queue = new RateLimitedWorkQueue({ clock });
    const thirtyDays = 30 * 24 * 3600 * 1000;
    queue.addAfter('far', thirtyDays);
    expect(delays).toEqual([MAX_TIMER_DELAY_MS]);
    clock.advance(MAX_TIMER_DELAY_MS);
    expect(queue.length).toBe(0);
    expect(delays).toEqual([MAX_TIMER_DELAY_MS, thirtyDays - MAX_TIMER_DELAY_MS]);
    clock.advance(thirtyDays - MAX_TIMER_DELAY_MS);
    expect(queue.length).toBe(1);
    expect(delays).toHaveLength(2);
    expect(clock.pending).toBe(0);
  });

  test('cancelDelayed drops a pending delayed add and disarms its timer; other keys keep their times', () => {
    const clock = new FakeClock();
    const queue = new RateLimitedWorkQueue({ clock });
    const thirtyDays = 30 * 24 * 3600 * 1000;
    queue.addAfter('gone', thirtyDays);
    queue.addAfter('kept', 500);
    queue.cancelDelayed('gone');
    queue.cancelDelayed('never-added');
    expect(queue.waiting).toBe(1);
    clock.advance(500);
    expect(queue.length).toBe(1);
    expect(queue.waiting).toBe(0);
    expect(clock.pending).toBe(0);
  });

  test('the delay heap stays a heap under schedules, removals and pops (fast-check against a sorted model)', () => {
    type Op = { op: 'schedule'; key: string; at: number } | { op: 'remove'; key: string } | { op: 'pop'; now: number };
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.record({ op: fc.constant('schedule' as const), key, at: fc.integer({ min: 0, max: 1000 }) }),
      fc.record({ op: fc.constant('remove' as const), key }),
      fc.record({ op: fc.constant('pop' as const), now: fc.integer({ min: 0, max: 1000 }) }),
    );
    fc.assert(fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
      const heap = new DelayHeap();
      const model = new Map<string, { at: number; seq: number }>();
      let seq = 0;
      for (const o of ops) {
        if (o.op === 'schedule') {
          const had = model.get(o.key);
          if (!had) model.set(o.key, { at: o.at, seq: seq++ });
          else if (o.at < had.at) had.at = o.at;
          heap.schedule(o.key, o.at);
        } else if (o.op === 'remove') {
          expect(heap.remove(o.key)).toBe(model.delete(o.key));
        } else {
          const due = [...model].filter(([, e]) => e.at <= o.now).sort(([, a], [, b]) => a.at - b.at || a.seq - b.seq).map(([k]) => k);
          due.forEach((k) => model.delete(k));
          expect(heap.popDue(o.now)).toEqual(due);
        }
        expect(heap.size).toBe(model.size);
        expect(heap.peekTime()).toBe(model.size ? Math.min(...[...model.values()].map((e) => e.at)) : undefined);
      }
    }));
  });

  test('a key already waiting keeps the earlier time', () => {
    const clock = new FakeClock();
    const queue = new RateLimitedWorkQueue({ clock });
    queue.addAfter('k', 100);
    queue.addAfter('k', 1000);
    clock.advance(100);
    expect(queue.length).toBe(1);
    queue.addAfter('j', 1000);
    queue.addAfter('j', 10);
    clock.advance(10);
    expect(queue.length).toBe(2);
  });

  test('zero or negative delay adds at once', () => {
    const queue = new RateLimitedWorkQueue({ clock: new FakeClock() });
    queue.addAfter('a', 0);
    queue.addAfter('b', -5);
    expect(queue.length).toBe(2);
  });
});

describe('shutdown', () => {
  test('waiting workers get undefined; queued keys still drain; new and delayed adds are dropped', async () => {
    const clock = new FakeClock();
    const queue = new RateLimitedWorkQueue({ clock });
    const waiter = queue.get();
    queue.shutDown();
    expect(await waiter).toBeUndefined();

    const q2 = new RateLimitedWorkQueue({ clock });
    q2.add('a');
    q2.addAfter('later', 10);
    q2.shutDown();
    q2.add('b');
    clock.advance(100);
    expect(await q2.get()).toBe('a');
    q2.done('a');
    expect(await q2.get()).toBeUndefined();
    expect(clock.pending).toBe(0);
  });
});

describe('rate limiters', () => {
  test('per-key exponential backoff is monotone, capped, and reset by forget', () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 1000 }), fc.integer({ min: 1, max: 10_000_000 }), fc.integer({ min: 1, max: 80 }),
      (base, max, n) => {
        const limiter = new ItemExponentialBackoff(base, max);
        const delays = Array.from({ length: n }, () => limiter.when('k'));
        expect(delays[0]).toBe(Math.min(base, max));
        for (let i = 1; i < n; i++) {
          expect(delays[i]).toBeGreaterThanOrEqual(delays[i - 1]);
          expect(delays[i]).toBeLessThanOrEqual(max);
          expect(Number.isFinite(delays[i])).toBe(true);
        }
        expect(limiter.when('other')).toBe(Math.min(base, max));
        limiter.forget('k');
        expect(limiter.when('k')).toBe(Math.min(base, max));
      }));
  });

  test("client-go's defaults: 5 ms doubling to 1000 s", () => {
    const limiter = new ItemExponentialBackoff();
    expect([1, 2, 3, 4].map(() => limiter.when('k'))).toEqual([5, 10, 20, 40]);
    for (let i = 0; i < 100; i++) limiter.when('k');
    expect(limiter.when('k')).toBe(1_000_000);
  });

  test('token bucket: burst immediately, then paced at qps with queued reservations', () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket(10, 100, clock);
    for (let i = 0; i < 100; i++) expect(bucket.reserve()).toBe(0);
    expect(bucket.reserve()).toBeCloseTo(100);
    expect(bucket.reserve()).toBeCloseTo(200);
    clock.advance(1000);
    // 10 tokens minted, 2 already promised: 8 free, then waiting again.
    for (let i = 0; i < 8; i++) expect(bucket.reserve()).toBeCloseTo(0);
    expect(bucket.reserve()).toBeCloseTo(100);
  });

  test('the default controller limiter takes the longer of backoff and overall bucket', () => {
    const clock = new FakeClock();
    const limiter = defaultControllerRateLimiter({ clock, qps: 1, burst: 1 });
    expect(limiter.when('a')).toBe(5); // bucket has its one token; backoff says 5 ms
    expect(limiter.when('b')).toBeCloseTo(1000); // bucket empty: 1 s beats b's 5 ms
    expect(new BucketRateLimiter(10, 1, clock).retries()).toBe(0);
  });

  test('rejects a bucket without capacity', () => {
    expect(() => new TokenBucket(0, 1)).toThrow(/qps > 0/);
  });
});

describe('metrics hooks', () => {
  test('adds count once per dedupe, retries per rate-limited add, durations from the clock', async () => {
    const clock = new FakeClock();
    const seen = { adds: 0, retries: 0, depth: [] as number[], queued: [] as number[], worked: [] as number[] };
    const queue = new RateLimitedWorkQueue({
      clock,
      metrics: {
        added: () => seen.adds++,
        retried: () => seen.retries++,
        depth: (d) => seen.depth.push(d),
        queuedFor: (ms) => seen.queued.push(ms),
        workedFor: (ms) => seen.worked.push(ms),
      },
    });
    queue.add('a');
    queue.add('a');
    clock.advance(7);
    const k = (await queue.get())!;
    clock.advance(3);
    queue.done(k);
    queue.addRateLimited('a');
    expect(seen).toEqual({ adds: 1, retries: 1, depth: [1, 0], queued: [7], worked: [3] });
  });
});
