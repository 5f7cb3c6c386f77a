/**
 * A step of the wall clock (NTP, a VM resumed, a hand-set date) with the runtime's default clocks,
 * as the operator process wires them: delays and lease deadlines are durations and must not move
 * with it; only the times written into objects follow the wall clock.
 */
import { LeaderElector } from '../../src/runtime/leader-election';
import { ItemExponentialBackoff, TokenBucket } from '../../src/runtime/rate-limit';
import { ApiError, KubeClient } from '../../src/runtime/types';
import { RateLimitedWorkQueue } from '../../src/runtime/workqueue';

const HOUR = 3_600_000;
const realNow = Date.now;
let stepMs = 0;

beforeEach(() => {
  stepMs = 0;
  Date.now = () => realNow() + stepMs;
});

afterEach(() => {
  Date.now = realNow;
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A Lease store behind the calls the elector makes, with resourceVersion checks. */
function leaseClient(): { client: KubeClient; lease: () => any } {
  let lease: any;
  let rv = 0;
  const write = (body: any) => {
    lease = { ...body, metadata: { ...body.metadata, resourceVersion: String(++rv) } };
    return structuredClone(lease);
  };
  const client = {
    get: async () => {
      if (!lease) throw new ApiError(404, 'NotFound', 'leases "x" not found');
      return structuredClone(lease);
    },
    create: async (_t: unknown, _ns: unknown, body: any) => write(body),
    update: async (_t: unknown, _ns: unknown, body: any) => {
      if (body.metadata.resourceVersion !== lease.metadata.resourceVersion) throw new Error('conflict');
      return write(body);
    },
    watch: () => ({ done: new Promise(() => undefined), abort: () => undefined }),
  } as unknown as KubeClient;
  return { client, lease: () => lease };
}

test('a leader keeps its Lease through a wall-clock step forward, and writes renewTime in wall time', async () => {
  const { client, lease } = leaseClient();
  let lost = 0;
  let started = 0;
  const elector = new LeaderElector({
    client,
    namespace: 'ns',
    identity: 'me',
    leaseDurationMs: 1_500,
    renewDeadlineMs: 1_000,
    retryPeriodMs: 100,
    onStartedLeading: () => started++,
    onStoppedLeading: () => lost++,
  });
  void elector.run();
  for (let i = 0; i < 50 && started === 0; i++) await sleep(20);
  expect(started).toBe(1);
  stepMs = HOUR;
  await sleep(600);
  expect(lost).toBe(0);
  expect(elector.isLeader).toBe(true);
  // The record follows the wall clock, as other replicas and kubectl read it.
  expect(Date.parse(lease().spec.renewTime) - realNow()).toBeGreaterThan(HOUR - 5_000);
  stepMs = -HOUR;
  await sleep(600);
  expect(lost).toBe(0);
  await elector.release();
});

test('a delayed key is not postponed by a wall-clock step back, nor released early by a step forward', async () => {
  const queue = new RateLimitedWorkQueue();
  queue.addAfter('back', 200);
  stepMs = -HOUR;
  const t0 = realNow();
  const key = await Promise.race([queue.get(), sleep(2_000).then(() => 'still waiting')]);
  expect(key).toBe('back');
  expect(realNow() - t0).toBeLessThan(2_000);
  queue.done('back');
  queue.addAfter('forward', 500);
  stepMs = HOUR;
  await sleep(50);
  expect(queue.length).toBe(0);
  queue.shutDown();
});

test('rate limiters measure durations, not wall-clock differences', () => {
  const bucket = new TokenBucket(10, 1);
  expect(bucket.reserve()).toBe(0);
  stepMs = -HOUR;
  // One token refills in 100 ms; a step back must not mean an hour's wait.
  expect(bucket.reserve()).toBeLessThanOrEqual(100);
  expect(new ItemExponentialBackoff(5, 1_000).when('k')).toBe(5);
});
