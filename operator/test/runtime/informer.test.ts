import { ScriptedApiServer, line, obj, openWatch, status } from './scripted-api-server';
import { SYSTEM_CLOCK } from '../../src/runtime/clock';
import { SharedInformer } from '../../src/runtime/informer';
import { stripManagedFields } from '../../src/runtime/informer-factory';
import { HttpKubeClient } from '../../src/runtime/kube-client';
import { KubeObject, ResourceType } from '../../src/runtime/types';

const CONFIGMAPS: ResourceType = { group: '', version: 'v1', resource: 'configmaps', namespaced: true };

let server: ScriptedApiServer;
let informer: SharedInformer<KubeObject> | undefined;
let events: string[];

beforeEach(async () => {
  server = await new ScriptedApiServer().start();
  events = [];
});

afterEach(async () => {
  informer?.stop();
  informer = undefined;
  await server.stop();
});

function startInformer(options: Partial<ConstructorParameters<typeof SharedInformer>[2]> = {}): SharedInformer<KubeObject> {
  const client = new HttpKubeClient({ connection: { server: server.url, source: 'test' } });
  informer = new SharedInformer<KubeObject>(client, CONFIGMAPS, {
    namespace: 'ns',
    pageSize: 2,
    backoffInitialMs: 20,
    backoffMaxMs: 80,
    watchdogMs: 60_000,
    healthyWatchMs: 60_000,
    random: () => 0.5,
    ...options,
  } as any);
  informer.addHandlers({
    onAdd: (o) => events.push(`add ${o.metadata.name}@${o.metadata.resourceVersion}`),
    onUpdate: (_old, o) => events.push(`update ${o.metadata.name}@${o.metadata.resourceVersion}`),
    onDelete: (o) => events.push(`delete ${o.metadata.name}`),
  });
  informer.start();
  return informer;
}

async function eventually(check: () => boolean, what: string, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; events: ${events.join(', ')}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

const names = (i: SharedInformer<KubeObject>) => i.list().map((o) => o.metadata.name).sort();

test('lists page by page, syncs, then watches from the list resourceVersion with bookmarks', async () => {
  for (const [i, n] of ['a', 'b', 'c', 'd', 'e'].entries()) server.objects.set(n, obj(n, i + 1));
  server.listResourceVersion = 10;
  const inf = startInformer();
  await inf.synced;
  expect(names(inf)).toEqual(['a', 'b', 'c', 'd', 'e']);
  expect(server.lists.map((r) => r.url.searchParams.get('continue'))).toEqual([null, '2', '4']);
  expect(server.lists.every((r) => r.url.searchParams.get('limit') === '2')).toBe(true);
  const watch = await server.watchRequest(1);
  expect(watch.pathname).toBe('/api/v1/namespaces/ns/configmaps');
  expect(watch.searchParams.get('resourceVersion')).toBe('10');
  expect(watch.searchParams.get('allowWatchBookmarks')).toBe('true');
  expect(Number(watch.searchParams.get('timeoutSeconds'))).toBeGreaterThanOrEqual(30);
  expect(Number(watch.searchParams.get('timeoutSeconds'))).toBeLessThan(36);
  // List items get the apiVersion/kind the list response left out.
  expect(inf.get('ns', 'a')).toMatchObject({ apiVersion: 'v1', kind: 'ConfigMap' });
});

test('applies watch events and resumes from the last bookmark after a clean server close', async () => {
  server.objects.set('a', obj('a', 1));
  server.listResourceVersion = 5;
  server.scriptWatches([
    (res) => {
      openWatch(res);
      res.write(line('ADDED', obj('b', 6)));
      res.write(line('MODIFIED', obj('a', 7)));
      res.write(line('DELETED', obj('b', 8)));
      res.end(line('BOOKMARK', { kind: 'ConfigMap', apiVersion: 'v1', metadata: { resourceVersion: '12' } }));
    },
  ]);
  const handled: number[] = [];
  const inf = startInformer({ healthyWatchMs: 0, metrics: { eventHandled: (ms: number) => handled.push(ms) } });
  const second = await server.watchRequest(2);
  expect(second.searchParams.get('resourceVersion')).toBe('12');
  expect(events).toEqual(['add a@1', 'add b@6', 'update a@7', 'delete b']);
  // Each watch event's handling is timed, the bookmark's too.
  expect(handled).toHaveLength(4);
  expect(handled.every((ms) => ms >= 0 && ms < 1000)).toBe(true);
  expect(names(inf)).toEqual(['a']);
  expect(server.lists).toHaveLength(1);
});

test('410 Gone as an ERROR event: relists, and a delete missed meanwhile reaches onDelete', async () => {
  server.objects.set('a', obj('a', 1));
  server.objects.set('b', obj('b', 2));
  server.listResourceVersion = 5;
  server.scriptWatches([
    (res) => {
      openWatch(res);
      // While "disconnected", b was deleted and c created; the watch history is gone.
      server.objects.delete('b');
      server.objects.set('c', obj('c', 30));
      server.objects.set('a', obj('a', 31));
      server.listResourceVersion = 40;
      res.write(line('ERROR', { kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 410, reason: 'Expired', message: 'too old resource version: 5 (35)' }));
    },
  ]);
  const inf = startInformer();
  const second = await server.watchRequest(2);
  expect(second.searchParams.get('resourceVersion')).toBe('40');
  expect(server.lists).toHaveLength(2);
  expect(events).toEqual(['add a@1', 'add b@2', 'update a@31', 'add c@30', 'delete b']);
  expect(names(inf)).toEqual(['a', 'c']);
});

test('410 Gone as the HTTP status of the watch request also relists', async () => {
  server.listResourceVersion = 5;
  server.scriptWatches([(res) => status(res, 410, 'Expired', 'too old resource version')]);
  startInformer();
  await server.watchRequest(2);
  expect(server.lists).toHaveLength(2);
});

test('an ERROR event other than 410 reconnects from the last resourceVersion without relisting', async () => {
  server.listResourceVersion = 5;
  server.scriptWatches([
    (res) => {
      openWatch(res);
      res.write(line('ADDED', obj('x', 6)));
      res.write(line('ERROR', { kind: 'Status', code: 500, reason: 'InternalError', message: 'etcd hiccup' }));
    },
  ]);
  const restarts: string[] = [];
  startInformer({ metrics: { watchRestarted: (r: string) => restarts.push(r) } });
  const second = await server.watchRequest(2);
  expect(second.searchParams.get('resourceVersion')).toBe('6');
  expect(server.lists).toHaveLength(1);
  expect(restarts).toEqual(['error-event']);
});

/** A logger that keeps every line with its level, message and fields. */
function recordingLogger() {
  const lines: Array<{ level: string; msg: string; fields: Record<string, unknown> }> = [];
  const record = (level: string) => (fields: unknown, msg?: string) => {
    if (typeof fields === 'object' && typeof msg === 'string') lines.push({ level, msg, fields: fields as Record<string, unknown> });
  };
  const log: any = { debug: record('debug'), info: record('info'), warn: record('warn'), error: record('error') };
  log.child = () => log;
  return { lines, log };
}

test('watch re-establishment is logged: a routine close at debug, any other end at info, with how long the reopen took', async () => {
  server.listResourceVersion = 5;
  server.scriptWatches([
    (res) => {
      openWatch(res);
      res.end(line('BOOKMARK', { kind: 'ConfigMap', apiVersion: 'v1', metadata: { resourceVersion: '6' } }));
    },
    (res) => {
      openWatch(res);
      res.write(line('ERROR', { kind: 'Status', code: 500, reason: 'InternalError', message: 'etcd hiccup' }));
    },
  ], (res) => openWatch(res));
  const { lines, log } = recordingLogger();
  startInformer({ log, healthyWatchMs: 0 });
  await server.watchRequest(3);
  await eventually(() => lines.filter((l) => l.msg === 'watch re-established').length === 2, 'two re-establishments logged');
  const reopened = lines.filter((l) => l.msg === 'watch re-established');
  expect(reopened.map((l) => [l.level, l.fields.reason])).toEqual([['debug', 'closed'], ['info', 'error-event']]);
  for (const l of reopened) expect(l.fields.reopenMs).toEqual(expect.any(Number));
  // The first watch (after the list) is no re-establishment.
  expect(server.watches).toBe(3);
});

test('a routine close followed by a failed attempt is logged at info, with the first end\'s reason and the retries', async () => {
  server.listResourceVersion = 5;
  server.scriptWatches([
    (res) => {
      openWatch(res);
      res.end(line('BOOKMARK', { kind: 'ConfigMap', apiVersion: 'v1', metadata: { resourceVersion: '6' } }));
    },
    (res) => status(res, 500, 'InternalError', 'etcd hiccup'),
  ], (res) => openWatch(res));
  const { lines, log } = recordingLogger();
  startInformer({ log, healthyWatchMs: 0 });
  await server.watchRequest(3);
  await eventually(() => lines.some((l) => l.msg === 'watch re-established'), 'the re-establishment logged');
  const reopened = lines.filter((l) => l.msg === 'watch re-established');
  expect(reopened.map((l) => [l.level, l.fields.reason, l.fields.retries, l.fields.lastRetry])).toEqual([['info', 'closed', 1, 'error']]);
});

test('a connection cut in the middle of an event: the half event is dropped, the watch resumes after the last whole one', async () => {
  server.listResourceVersion = 5;
  server.scriptWatches([
    (res) => {
      openWatch(res);
      res.write(line('ADDED', obj('whole', 6)));
      const half = line('ADDED', obj('half', 7));
      res.write(half.slice(0, half.length / 2), () => res.destroy());
    },
  ]);
  const inf = startInformer();
  const second = await server.watchRequest(2);
  expect(second.searchParams.get('resourceVersion')).toBe('6');
  expect(names(inf)).toEqual(['whole']);
  expect(server.lists).toHaveLength(1);
});

test('a silent watch is restarted by the watchdog; bookmarks keep a quiet watch alive', async () => {
  server.listResourceVersion = 5;
  let bookmarks: NodeJS.Timeout | undefined;
  server.scriptWatches([
    // Open, then bookmarks every 50 ms for 400 ms: four times the watchdog limit, never silent.
    (res) => {
      openWatch(res);
      let rv = 5;
      bookmarks = setInterval(() => res.write(line('BOOKMARK', { metadata: { resourceVersion: String(++rv) } })), 50);
      setTimeout(() => clearInterval(bookmarks), 400);
    },
  ]);
  const restarts: string[] = [];
  const started = Date.now();
  startInformer({ watchdogMs: 100, metrics: { watchRestarted: (r: string) => restarts.push(r) } });
  const second = await server.watchRequest(2);
  clearInterval(bookmarks);
  // Restarted only after the bookmarks stopped and 100 ms passed, from the last bookmark's version.
  expect(Date.now() - started).toBeGreaterThanOrEqual(450);
  expect(restarts).toEqual(['stalled']);
  expect(Number(second.searchParams.get('resourceVersion'))).toBeGreaterThanOrEqual(12);
  // The next watch sends nothing at all: restarted again.
  await server.watchRequest(3);
  expect(restarts).toEqual(['stalled', 'stalled']);
  expect(server.lists).toHaveLength(1);
});

test('a watch still open well past its server-side timeout stalled: it is restarted, and idle connections are dropped', async () => {
  server.listResourceVersion = 5;
  // Every watch opens and then never ends nor sends a byte, as when the path froze without closing.
  const client = new HttpKubeClient({ connection: { server: server.url, source: 'test' } });
  let dropped = 0;
  const drop = client.dropIdleConnections.bind(client);
  client.dropIdleConnections = () => {
    dropped++;
    drop();
  };
  const restarts: string[] = [];
  const started = Date.now();
  informer = new SharedInformer<KubeObject>(client, CONFIGMAPS, {
    namespace: 'ns',
    watchTimeoutSeconds: 1,
    watchEndGraceMs: 200,
    watchdogMs: 60_000,
    healthyWatchMs: 60_000,
    backoffInitialMs: 20,
    random: () => 0.5,
    metrics: { watchRestarted: (r: string) => restarts.push(r) },
  });
  informer.start();
  const first = await server.watchRequest(1);
  expect(first.searchParams.get('timeoutSeconds')).toBe('1');
  await server.watchRequest(2);
  // Not the 60 s silence watchdog: the 1 s timeout it asked for plus the 200 ms grace.
  expect(Date.now() - started).toBeGreaterThanOrEqual(1_200);
  expect(Date.now() - started).toBeLessThan(10_000);
  expect(restarts).toEqual(['stalled']);
  expect(dropped).toBe(1);
  expect(server.lists).toHaveLength(1);
});

test('dropIdleConnections closes idle keep-alive sockets, so the next request opens a new connection', async () => {
  const client = new HttpKubeClient({ connection: { server: server.url, source: 'test' } });
  await client.list(CONFIGMAPS, 'ns');
  await client.list(CONFIGMAPS, 'ns');
  expect(server.connections).toBe(1);
  client.dropIdleConnections();
  await client.list(CONFIGMAPS, 'ns');
  expect(server.connections).toBe(2);
  client.close();
});

test('failures back off exponentially with jitter, never a hot loop', async () => {
  server.listResourceVersion = 5;
  server.scriptWatches([], (res) => status(res, 500, 'InternalError', 'always failing'));
  const times: number[] = [];
  startInformer({ backoffInitialMs: 40, backoffMaxMs: 160, metrics: { watchRestarted: () => times.push(Date.now()) } });
  await server.watchRequest(6);
  const gaps = times.slice(1).map((t, i) => t - times[i]);
  // Delays with random()=0.5 are 0.75 of 40, 80, 160, then capped at 160 ms (timers may fire ~1 ms early).
  expect(gaps[0]).toBeGreaterThanOrEqual(29);
  expect(gaps[1]).toBeGreaterThanOrEqual(59);
  expect(gaps[2]).toBeGreaterThanOrEqual(119);
  expect(gaps[3]).toBeGreaterThanOrEqual(119);
  expect(gaps.every((g) => g < 400)).toBe(true);
});

test('list failures back off too, and the informer syncs once the list works', async () => {
  server.failLists = { count: 3, code: 503, reason: 'ServiceUnavailable' };
  server.objects.set('a', obj('a', 1));
  const inf = startInformer();
  await inf.synced;
  expect(server.lists).toHaveLength(4);
  expect(inf.hasSynced).toBe(true);
});

test('an expired continue token falls back to one full list', async () => {
  for (const n of ['a', 'b', 'c']) server.objects.set(n, obj(n, 1));
  let firstPage = true;
  const original = (server as any).list.bind(server);
  (server as any).list = (req: any, res: any) => {
    if (req.url.searchParams.get('continue') && firstPage) {
      firstPage = false;
      return status(res, 410, 'Expired', 'continue token expired');
    }
    return original(req, res);
  };
  const inf = startInformer();
  await inf.synced;
  expect(names(inf)).toEqual(['a', 'b', 'c']);
  expect(server.lists.map((r) => r.url.searchParams.get('limit'))).toEqual(['2', '2', null]);
});

test('a throwing handler does not stop the informer or the other handlers', async () => {
  server.objects.set('a', obj('a', 1));
  const client = new HttpKubeClient({ connection: { server: server.url, source: 'test' } });
  informer = new SharedInformer<KubeObject>(client, CONFIGMAPS, { namespace: 'ns' });
  const seen: string[] = [];
  informer.addHandlers({ onAdd: () => { throw new Error('boom'); } });
  informer.addHandlers({ onAdd: (o) => seen.push(o.metadata.name) });
  informer.start();
  await informer.synced;
  expect(seen).toEqual(['a']);
});

test('transform slims objects before caching; indexes; late handlers get the cache replayed', async () => {
  server.objects.set('a', obj('a', 1, { metadata: { name: 'a', namespace: 'ns', resourceVersion: '1', labels: { owner: 'x' }, managedFields: [{ manager: 'kubectl' }] } }));
  server.objects.set('b', obj('b', 2, { metadata: { name: 'b', namespace: 'ns', resourceVersion: '2', labels: { owner: 'y' } } }));
  const client = new HttpKubeClient({ connection: { server: server.url, source: 'test' } });
  informer = new SharedInformer<KubeObject>(client, CONFIGMAPS, {
    namespace: 'ns', transform: stripManagedFields, indexes: { owner: (o) => (o.metadata.labels?.owner ? [o.metadata.labels.owner] : []) },
  });
  informer.start();
  await informer.synced;
  expect(informer.get('ns', 'a')!.metadata.managedFields).toBeUndefined();
  expect(informer.byIndex('owner', 'x').map((o) => o.metadata.name)).toEqual(['a']);
  expect(informer.byIndex('owner', 'nobody')).toEqual([]);
  expect(() => informer!.byIndex('missing', 'x')).toThrow(/no index "missing"; known indexes: owner/);
  const late: string[] = [];
  informer.addHandlers({ onAdd: (o) => late.push(o.metadata.name) });
  expect(late.sort()).toEqual(['a', 'b']);
});

test('stop() ends the watch and no further requests are made', async () => {
  server.listResourceVersion = 5;
  const inf = startInformer();
  await server.watchRequest(1);
  inf.stop();
  const count = server.requests.length;
  await new Promise((r) => setTimeout(r, 150));
  expect(server.requests.length).toBe(count);
});

test('a throwing index function or transform does not break the cache', async () => {
  server.objects.set('labeled', obj('labeled', 1, { metadata: { name: 'labeled', namespace: 'ns', resourceVersion: '1', labels: { idx: '1' } } }));
  server.objects.set('bare', obj('bare', 2));
  server.listResourceVersion = 5;
  server.scriptWatches([
    (res) => {
      openWatch(res);
      res.write(line('MODIFIED', obj('bare', 6)));
    },
  ]);
  const client = new HttpKubeClient({ connection: { server: server.url, source: 'test' } });
  informer = new SharedInformer<KubeObject>(client, CONFIGMAPS, {
    namespace: 'ns',
    // Both assume a label every object has; one does not.
    indexes: { idx: (o) => [o.metadata.labels!.idx] },
    transform: (o) => ({ ...o, metadata: { ...o.metadata, annotations: { idx: o.metadata.labels!.idx } } }),
  });
  informer.start();
  await informer.synced;
  expect(names(informer)).toEqual(['bare', 'labeled']);
  expect(informer.byIndex('idx', '1').map((o) => o.metadata.name)).toEqual(['labeled']);
  await eventually(() => informer!.get('ns', 'bare')?.metadata.resourceVersion === '6', 'the update of the unindexable object');
  expect(server.lists).toHaveLength(1);
});

/**
 * An informer on a port nobody listens on (every list refused at once), the times it restarted, and
 * the backoff delays it asked its clock for (the real clock, recorded).
 */
async function informerOnRefusedPort(unreachableBackoffMaxMs: number):
Promise<{ inf: SharedInformer<KubeObject>; times: number[]; delays: number[]; port: number }> {
  const closed = await new ScriptedApiServer().start();
  const port = Number(new URL(closed.url).port);
  await closed.stop();
  const times: number[] = [];
  const delays: number[] = [];
  const clock = { ...SYSTEM_CLOCK, setTimeout: (cb: () => void, ms: number) => (delays.push(ms), SYSTEM_CLOCK.setTimeout(cb, ms)) };
  const client = new HttpKubeClient({ connection: { server: `http://127.0.0.1:${port}`, source: 'test' } });
  informer = new SharedInformer<KubeObject>(client, CONFIGMAPS, {
    clock,
    backoffInitialMs: 20,
    backoffMaxMs: 60_000,
    unreachableBackoffMaxMs,
    random: () => 0.5,
    metrics: { watchRestarted: () => times.push(Date.now()) },
  });
  informer.start();
  return { inf: informer, times, delays, port };
}

describe('reconnecting after the API server was away', () => {
  test('while nothing answers (connections refused) the backoff stays short however long it lasts, and the informer reports how long it has been disconnected', async () => {
    const { inf, times, delays } = await informerOnRefusedPort(80);
    await eventually(() => times.length >= 8, '8 refused lists');
    // 0.75 of 20, 40, 80, then capped at 80 ms: never the 60 s an HTTP error could reach.
    expect(delays.slice(0, 7)).toEqual([15, 30, 60, 60, 60, 60, 60]);
    expect(inf.disconnectedForMs).toBeGreaterThan(0);
  });

  test('the first HTTP error after a run of refused connections starts a fresh backoff, not the long one', async () => {
    const { inf, times, port } = await informerOnRefusedPort(40);
    await eventually(() => times.length >= 10, '10 refused lists'); // 20 * 2^9 would be 10 s if the counts were shared
    // The server comes back on the same port, busy: one 503, then lists work.
    const back = new ScriptedApiServer();
    back.failLists = { count: 1, code: 503, reason: 'ServiceUnavailable' };
    await back.startOn(port);
    try {
      await inf.synced;
      expect(back.lists).toHaveLength(2);
      expect(inf.disconnectedForMs).toBe(0);
    } finally {
      inf.stop();
      await back.stop();
    }
  });

  test('wake() ends a long backoff at once', async () => {
    server.failLists = { count: 1, code: 500, reason: 'InternalError' };
    const inf = startInformer({ backoffInitialMs: 60_000, backoffMaxMs: 60_000 });
    await eventually(() => inf.disconnectedForMs > 0, 'the failed first list'); // set just before the backoff starts
    expect(inf.hasSynced).toBe(false);
    inf.wake();
    await inf.synced;
    expect(server.lists).toHaveLength(2);
  });
});
