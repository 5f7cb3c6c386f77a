import { FakeClock } from './fake-clock';
import { Controller, onlyUpdates } from '../../src/runtime/controller';
import { SharedInformer } from '../../src/runtime/informer';
import { SILENT_LOGGER } from '../../src/runtime/log';
import { OperatorMetrics } from '../../src/runtime/metrics';
import { Turns } from '../../src/runtime/turns';
import { ApiError, InformerHandlers, KubeObject, ReconcileResult, Reconciler, keyOf } from '../../src/runtime/types';

const tick = () => new Promise((r) => setImmediate(r));

/** Workers that never yield between reconciles, so one `tick()` sees every queued key reconciled. */
const NEVER_YIELD = new Turns(Infinity);

function setup(reconcile: (key: string) => Promise<ReconcileResult | void>, workers = 2, turns: Turns = NEVER_YIELD) {
  const clock = new FakeClock();
  const metrics = new OperatorMetrics({ version: 't', gitCommit: 'c', buildDate: 'd' });
  const reconciler: Reconciler = { name: 'test', reconcile };
  const controller = new Controller({ log: SILENT_LOGGER, metrics, clock }, reconciler, { workers, turns });
  return { clock, metrics, controller };
}

async function metricValue(metrics: OperatorMetrics, name: string, labels: Record<string, string>): Promise<number | undefined> {
  const m = (await metrics.registry.getMetricsAsJSON()).find((x) => x.name === name);
  const v = m?.values.find((x) => Object.entries(labels).every(([k, val]) => x.labels[k] === val));
  return v?.value;
}

describe('workers give the event loop back during a queue of reconciles that write nothing', () => {
  const queueOf = (controller: Controller, n: number) => {
    for (let i = 0; i < n; i++) controller.queue.add(`ns/s-${i}`);
  };

  test('a macrotask queued behind 100 I/O-free reconciles runs before the queue is drained, and every key is still reconciled', async () => {
    let reconciled = 0;
    let now = 0;
    // Each reading of the clock is 1 ms later: the slice (2 ms) is spent after a couple of reconciles.
    const { controller } = setup(async () => void reconciled++, 2, new Turns(2, () => now++));
    controller.start();
    queueOf(controller, 100);
    const seenByIo = await new Promise<number>((resolve) => setImmediate(() => resolve(reconciled)));
    expect(seenByIo).toBeLessThan(100);
    while (reconciled < 100) await tick();
    expect(controller.queue.length).toBe(0);
    await controller.stop();
  });

  test('on the real clock with the default slice: a timer set before 40 reconciles of 0.5 ms each fires before the last of them', async () => {
    let reconciled = 0;
    const busy = () => {
      const until = performance.now() + 0.5;
      while (performance.now() < until);
    };
    const { controller } = setup(async () => {
      busy();
      reconciled++;
    }, 2, new Turns());
    controller.start();
    queueOf(controller, 40);
    const seenByTimer = await new Promise<number>((resolve) => setTimeout(() => resolve(reconciled), 0));
    expect(seenByTimer).toBeLessThan(40);
    while (reconciled < 40) await tick();
    await controller.stop();
  });
});

test('success forgets the key; an error is retried with backoff; requeueAfterMs comes back after the delay', async () => {
  const calls: string[] = [];
  let failures = 1;
  const { clock, metrics, controller } = setup(async (key) => {
    calls.push(key);
    if (key === 'ns/fails' && failures-- > 0) throw new Error('transient');
    if (key === 'ns/later') return { requeueAfterMs: 30_000 };
    return undefined;
  });
  controller.start();
  controller.queue.add('ns/ok');
  controller.queue.add('ns/fails');
  controller.queue.add('ns/later');
  await tick();
  expect(calls.sort()).toEqual(['ns/fails', 'ns/later', 'ns/ok']);
  expect(controller.queue.retries('ns/fails')).toBe(1);
  clock.advance(5); // the first retry of ns/fails: 5 ms
  await tick();
  expect(calls.filter((k) => k === 'ns/fails')).toHaveLength(2);
  expect(controller.queue.retries('ns/fails')).toBe(0);
  clock.advance(29_990);
  await tick();
  expect(calls.filter((k) => k === 'ns/later')).toHaveLength(1);
  clock.advance(10);
  await tick();
  expect(calls.filter((k) => k === 'ns/later')).toHaveLength(2);
  expect(await metricValue(metrics, 'controller_runtime_reconcile_total', { controller: 'test', result: 'error' })).toBe(1);
  expect(await metricValue(metrics, 'controller_runtime_reconcile_total', { controller: 'test', result: 'success' })).toBe(2);
  expect(await metricValue(metrics, 'controller_runtime_reconcile_total', { controller: 'test', result: 'requeue_after' })).toBe(2);
  expect(await metricValue(metrics, 'controller_runtime_reconcile_errors_total', { controller: 'test' })).toBe(1);
  expect(await metricValue(metrics, 'workqueue_retries_total', { name: 'test' })).toBe(1);
  expect(await metricValue(metrics, 'controller_runtime_max_concurrent_reconciles', { controller: 'test' })).toBe(2);
  await controller.stop();
});

test('a successful reconcile that does not ask to come back cancels the key\'s pending deadline (a deleted object\'s far shutdownTime)', async () => {
  let exists = true;
  const thirtyDays = 30 * 24 * 3600 * 1000;
  const { clock, controller } = setup(async () => (exists ? { requeueAfterMs: thirtyDays } : undefined));
  controller.start();
  controller.queue.add('ns/expiring');
  await tick();
  expect(controller.queue.waiting).toBe(1);
  exists = false; // deleted: its delete event queues it once more
  controller.queue.add('ns/expiring');
  await tick();
  expect(controller.queue.waiting).toBe(0);
  expect(clock.pending).toBe(0);
  await controller.stop();
});

test('at most `workers` reconciles run at once, never two for one key', async () => {
  let running = 0;
  let peak = 0;
  const active = new Set<string>();
  const releases: Array<() => void> = [];
  const { controller } = setup(async (key) => {
    expect(active.has(key)).toBe(false);
    active.add(key);
    peak = Math.max(peak, ++running);
    await new Promise<void>((r) => releases.push(r));
    active.delete(key);
    running--;
  }, 3);
  controller.start();
  for (const k of ['a', 'b', 'c', 'd', 'e', 'a', 'b']) controller.queue.add(k);
  for (let i = 0; i < 20; i++) {
    await tick();
    releases.shift()?.();
  }
  await tick();
  expect(peak).toBe(3);
  expect(running).toBe(0);
  await controller.stop();
});

test('stop() lets the current reconcile finish and takes no new keys', async () => {
  const calls: string[] = [];
  let release!: () => void;
  const { controller } = setup(async (key) => {
    calls.push(key);
    if (key === 'slow') await new Promise<void>((r) => (release = r));
  }, 1);
  controller.start();
  controller.queue.add('slow');
  controller.queue.add('queued');
  await tick();
  const stopped = controller.stop();
  release();
  await stopped;
  expect(calls).toEqual(['slow']);
});

test('watch(): informer events map to keys, by default the object key, or through a mapper', async () => {
  const { controller } = setup(async () => undefined);
  let handlers!: InformerHandlers<KubeObject>;
  const fakeInformer = { addHandlers: (h: InformerHandlers<KubeObject>) => (handlers = h) } as unknown as SharedInformer<KubeObject>;
  controller.watch(fakeInformer);
  handlers.onAdd!({ metadata: { name: 'a', namespace: 'ns' } });
  handlers.onDelete!({ metadata: { name: 'cluster-scoped' } });
  expect(controller.queue.length).toBe(2);
  const byOwner = setup(async () => undefined).controller;
  byOwner.watch(fakeInformer, (o) => o.metadata.ownerReferences?.map((r) => `${o.metadata.namespace}/${r.name}`));
  const pod = (owner: string) => ({ metadata: { name: 'p', namespace: 'ns', ownerReferences: [{ apiVersion: 'v1', kind: 'X', name: owner, uid: owner }] } });
  handlers.onUpdate!(pod('old-owner'), pod('new-owner'));
  handlers.onAdd!({ metadata: { name: 'orphan', namespace: 'ns' } });
  expect(byOwner.queue.length).toBe(2);
});

test('watch(): event filters decide which adds, updates and deletes enqueue', async () => {
  let handlers!: InformerHandlers<KubeObject>;
  const fakeInformer = { addHandlers: (h: InformerHandlers<KubeObject>) => (handlers = h) } as unknown as SharedInformer<KubeObject>;
  const gen = (name: string, generation: number) => ({ metadata: { name, namespace: 'ns', generation } });
  const specOnly = setup(async () => undefined).controller;
  specOnly.watch(fakeInformer, keyOf, { update: (o, n) => o.metadata.generation !== n.metadata.generation });
  handlers.onUpdate!(gen('status-only', 1), gen('status-only', 1));
  expect(specOnly.queue.length).toBe(0);
  handlers.onUpdate!(gen('spec', 1), gen('spec', 2));
  handlers.onAdd!(gen('added', 1));
  expect(specOnly.queue.length).toBe(2);

  const updatesOnly = setup(async () => undefined).controller;
  updatesOnly.watch(fakeInformer, keyOf, onlyUpdates(() => true));
  handlers.onAdd!(gen('a', 1));
  handlers.onDelete!(gen('d', 1));
  expect(updatesOnly.queue.length).toBe(0);
  handlers.onUpdate!(gen('u', 1), gen('u', 1));
  expect(updatesOnly.queue.length).toBe(1);
});

test('a create refused because the namespace is being deleted ends the reconcile quietly, with no retry', async () => {
  const terminating = new ApiError(403, 'Forbidden', 'unable to create new content in namespace ns because it is being terminated', {
    kind: 'Status', code: 403, reason: 'Forbidden', details: { causes: [{ reason: 'NamespaceTerminating', field: 'metadata.namespace' }] },
  });
  expect(terminating.namespaceTerminating).toBe(true);
  expect(new ApiError(403, 'Forbidden', 'RBAC says no').namespaceTerminating).toBe(false);
  let calls = 0;
  const { clock, controller } = setup(async () => {
    calls++;
    throw terminating;
  });
  controller.start();
  controller.queue.add('ns/x');
  await tick();
  expect(calls).toBe(1);
  expect(controller.queue.waiting).toBe(0);
  expect(controller.queue.retries('ns/x')).toBe(0);
  clock.advance(60_000);
  await tick();
  expect(calls).toBe(1);
  await controller.stop();
});

test('conflicts are retried like other errors', async () => {
  let n = 0;
  const { clock, controller } = setup(async () => {
    if (n++ === 0) throw new ApiError(409, 'Conflict', 'the object has been modified');
  });
  controller.start();
  controller.queue.add('k');
  await tick();
  clock.advance(5);
  await tick();
  expect(n).toBe(2);
  await controller.stop();
});

test('a controller needs at least one worker', () => {
  expect(() => setup(async () => undefined, 0)).toThrow(/workers must be at least 1/);
});
