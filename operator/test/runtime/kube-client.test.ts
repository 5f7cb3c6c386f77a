/**
 * The client's wire format (paths, content types, query parameters, bodies, retries) against the
 * scripted loopback server. What the real API server makes of these requests is covered by the
 * integration tests, which run the operator against a real control plane.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { RecordedRequest, ScriptedApiServer, json, line, openWatch, status } from './scripted-api-server';
import { Credentials, RequestAuth } from '../../src/runtime/credentials';
import { HttpKubeClient } from '../../src/runtime/kube-client';
import { Logger, SILENT_LOGGER } from '../../src/runtime/log';
import { ApiError, KubeObject, ResourceType, WatchEvent } from '../../src/runtime/types';

const SANDBOXES: ResourceType = { group: 'agents.x-k8s.io', version: 'v1beta1', resource: 'sandboxes', namespaced: true };
const PODS: ResourceType = { group: '', version: 'v1', resource: 'pods', namespaced: true };

let server: ScriptedApiServer;
let client: HttpKubeClient;

beforeEach(async () => {
  server = await new ScriptedApiServer().start();
  server.onOther = (req, res) => json(res, 200, { echo: true, metadata: { name: 'x' } });
  client = new HttpKubeClient({ connection: { server: server.url, token: 'secret-token', source: 'test' }, userAgent: 'test-agent/1' });
});

afterEach(async () => {
  client.close();
  await server.stop();
});

const last = (): RecordedRequest => server.requests[server.requests.length - 1];

test('paths for core and grouped resources, namespaced and all-namespaces, with subresources', async () => {
  await client.get(PODS, 'ns', 'p');
  expect(last().url.pathname).toBe('/api/v1/namespaces/ns/pods/p');
  await client.list(SANDBOXES, undefined, { labelSelector: 'a=b', limit: 5 });
  expect(last().url.pathname).toBe('/apis/agents.x-k8s.io/v1beta1/sandboxes');
  expect(last().url.search).toBe('?labelSelector=a%3Db&limit=5');
  await client.patch(SANDBOXES, 'ns', 's', 'merge', { status: {} }, { subresource: 'status' });
  expect(last().url.pathname).toBe('/apis/agents.x-k8s.io/v1beta1/namespaces/ns/sandboxes/s/status');
  await client.update(SANDBOXES, 'ns', { metadata: { name: 's', resourceVersion: '7' } });
  expect(last().method).toBe('PUT');
  expect(JSON.parse(last().body).metadata.resourceVersion).toBe('7');
});

test('auth and identity headers', async () => {
  await client.get(PODS, 'ns', 'p');
  expect(last().headers.authorization).toBe('Bearer secret-token');
  expect(last().headers['user-agent']).toBe('test-agent/1');
  expect(last().headers.accept).toBe('application/json');
});

test('a token file is read for the bearer token', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'token-'));
  fs.writeFileSync(path.join(dir, 'token'), 'from-file\n');
  const fromFile = new HttpKubeClient({ connection: { server: server.url, tokenFile: path.join(dir, 'token'), source: 'test' } });
  await fromFile.get(PODS, 'ns', 'p');
  expect(last().headers.authorization).toBe('Bearer from-file');
  fromFile.close();
});

test.each([
  ['merge', 'application/merge-patch+json'],
  ['json', 'application/json-patch+json'],
  ['strategic', 'application/strategic-merge-patch+json'],
] as const)('%s patch is sent as %s', async (type, contentType) => {
  await client.patch(PODS, 'ns', 'p', type, type === 'json' ? [{ op: 'remove', path: '/metadata/labels/a' }] : { metadata: {} });
  expect(last().method).toBe('PATCH');
  expect(last().headers['content-type']).toBe(contentType);
});

test('server-side apply: apply-patch+yaml with fieldManager and force; needs a field manager', async () => {
  await client.patch(SANDBOXES, 'ns', 's', 'apply', { apiVersion: 'agents.x-k8s.io/v1beta1', kind: 'Sandbox', metadata: { name: 's' } },
    { fieldManager: 'agent-sandbox', force: true });
  expect(last().headers['content-type']).toBe('application/apply-patch+yaml');
  expect(Object.fromEntries(last().url.searchParams)).toEqual({ fieldManager: 'agent-sandbox', force: 'true' });
  await expect(client.patch(SANDBOXES, 'ns', 's', 'apply', {})).rejects.toThrow(/needs options.fieldManager/);
  await expect(client.patch(SANDBOXES, 'ns', 's', 'merge', {}, { force: true })).rejects.toThrow(/force applies only to server-side apply/);
});

test('delete with uid/resourceVersion preconditions and a propagation policy', async () => {
  await client.delete(PODS, 'ns', 'p', { uid: 'u1', resourceVersion: '9', propagationPolicy: 'Foreground' });
  expect(last().method).toBe('DELETE');
  expect(JSON.parse(last().body)).toEqual({
    apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid: 'u1', resourceVersion: '9' }, propagationPolicy: 'Foreground',
  });
  await client.delete(PODS, 'ns', 'p');
  expect(last().body).toBe('');
});

test('namespaced objects need a namespace', async () => {
  await expect(client.get(PODS, undefined, 'p')).rejects.toThrow(/pods are namespaced, so a namespace is required/);
});

test('errors become ApiError with the Status reason', async () => {
  server.onOther = (req, res) => {
    if (req.url.pathname.endsWith('/missing')) return status(res, 404, 'NotFound', 'pods "missing" not found');
    if (req.method === 'POST') return status(res, 409, 'AlreadyExists', 'pods "exists" already exists');
    if (req.url.pathname.endsWith('/stale')) return status(res, 409, 'Conflict', 'the object has been modified');
    res.writeHead(502, { 'content-type': 'text/html' });
    res.end('<html>bad gateway</html>');
  };
  const notFound = await client.get(PODS, 'ns', 'missing').catch((e) => e);
  expect(notFound).toBeInstanceOf(ApiError);
  expect([notFound.statusCode, notFound.reason, notFound.notFound, notFound.message]).toEqual([404, 'NotFound', true, 'pods "missing" not found']);
  const exists = await client.create(PODS, 'ns', { metadata: { name: 'exists' } }).catch((e) => e);
  expect(exists.alreadyExists).toBe(true);
  expect(exists.conflict).toBe(false);
  const stale = await client.update(PODS, 'ns', { metadata: { name: 'stale' } }).catch((e) => e);
  expect([stale.conflict, stale.alreadyExists]).toEqual([true, false]);
  const proxy = await client.get(PODS, 'ns', 'other').catch((e) => e);
  expect([proxy.statusCode, proxy.reason]).toEqual([502, 'Unknown']);
  expect(proxy.message).toMatch(/HTTP 502: <html>bad gateway/);
});

test('429 is retried after Retry-After; other errors are not', async () => {
  let calls = 0;
  server.onOther = (req, res) => {
    calls++;
    if (calls === 1) {
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '0' });
      return res.end(JSON.stringify({ kind: 'Status', code: 429, reason: 'TooManyRequests', message: 'slow down' }));
    }
    json(res, 201, { metadata: { name: 'created' } });
  };
  await expect(client.create(PODS, 'ns', { metadata: { name: 'p' } })).resolves.toMatchObject({ metadata: { name: 'created' } });
  expect(calls).toBe(2);
});

test('a keep-alive socket the server dropped is retried for GET, not for POST', async () => {
  let calls = 0;
  server.onOther = (req, res) => {
    calls++;
    // The second request arrives on the kept-alive socket of the first: kill it without answering.
    if (calls === 2 || calls === 4) return res.socket?.destroy();
    json(res, 200, { metadata: { name: 'ok' } });
  };
  await client.get(PODS, 'ns', 'a');
  await expect(client.get(PODS, 'ns', 'a')).resolves.toMatchObject({ metadata: { name: 'ok' } });
  expect(calls).toBe(3);
  await expect(client.create(PODS, 'ns', { metadata: { name: 'b' } })).rejects.toThrow(/socket hang up|ECONNRESET/);
  expect(calls).toBe(4);
});

test('client-side QPS paces requests; a negative QPS does not', async () => {
  const paced = new HttpKubeClient({ connection: { server: server.url, source: 'test' }, qps: 10, burst: 1 });
  const started = Date.now();
  await Promise.all([1, 2, 3].map(() => paced.get(PODS, 'ns', 'p')));
  expect(Date.now() - started).toBeGreaterThanOrEqual(190);
  paced.close();
  const free = new HttpKubeClient({ connection: { server: server.url, source: 'test' }, qps: -1, burst: 1 });
  const t0 = Date.now();
  await Promise.all(Array.from({ length: 20 }, () => free.get(PODS, 'ns', 'p')));
  expect(Date.now() - t0).toBeLessThan(190);
  free.close();
});

test('watch: query, events in order, clean end resolves, HTTP error rejects with ApiError, abort resolves', async () => {
  server.scriptWatches([
    (res) => {
      openWatch(res);
      res.write(line('ADDED', { metadata: { name: 'a', resourceVersion: '2' } }));
      res.end(line('BOOKMARK', { metadata: { resourceVersion: '3' } }));
    },
    (res) => status(res, 403, 'Forbidden', 'pods is forbidden'),
    (res) => openWatch(res),
  ]);
  const seen: WatchEvent<KubeObject>[] = [];
  const handle = client.watch(PODS, 'ns', { resourceVersion: '1', timeoutSeconds: 30, labelSelector: 'x=y' }, (e) => seen.push(e));
  await handle.done;
  expect(seen.map((e) => e.type)).toEqual(['ADDED', 'BOOKMARK']);
  const url = (await server.watchRequest(1));
  expect(Object.fromEntries(url.searchParams)).toEqual({
    labelSelector: 'x=y', resourceVersion: '1', watch: '1', allowWatchBookmarks: 'true', timeoutSeconds: '30',
  });
  const forbidden = await client.watch(PODS, 'ns', { resourceVersion: '1' }, () => undefined).done.catch((e) => e);
  expect([forbidden.statusCode, forbidden.reason]).toEqual([403, 'Forbidden']);
  const open = client.watch(PODS, 'ns', { resourceVersion: '1' }, () => undefined);
  await server.watchRequest(3);
  open.abort();
  await expect(open.done).resolves.toBeUndefined();
});

test('rawRequest: any status comes back as it is, the body as text, PATCH as merge unless told, no 429 retry', async () => {
  let calls = 0;
  server.onOther = (req, res) => {
    calls++;
    if (req.url.pathname === '/readyz') {
      res.writeHead(503, { 'content-type': 'text/plain' });
      return res.end('[-]etcd failed\n');
    }
    if (req.url.pathname === '/busy') {
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '0' });
      return res.end(JSON.stringify({ kind: 'Status', code: 429, reason: 'TooManyRequests' }));
    }
    json(res, 200, { echo: true });
  };
  await expect(client.rawRequest('GET', '/readyz')).resolves.toEqual({ status: 503, text: '[-]etcd failed\n' });
  await client.rawRequest('patch', '/api/v1/namespaces/ns/pods/p?dryRun=All', { body: { metadata: {} } });
  expect([last().method, last().url.search, last().headers['content-type']]).toEqual(['PATCH', '?dryRun=All', 'application/merge-patch+json']);
  expect(JSON.parse(last().body)).toEqual({ metadata: {} });
  await client.rawRequest('PATCH', '/api/v1/namespaces/ns/pods/p', { body: [], patchType: 'json' });
  expect(last().headers['content-type']).toBe('application/json-patch+json');
  calls = 0;
  await expect(client.rawRequest('GET', '/busy')).resolves.toMatchObject({ status: 429 });
  expect(calls).toBe(1);
});

test('rawRequest and watchPath only take paths on the configured server', async () => {
  await expect(client.rawRequest('GET', 'http://127.0.0.2:1/api')).rejects.toThrow(/must start with a single \//);
  await expect(client.rawRequest('GET', '//elsewhere/api')).rejects.toThrow(/must start with a single \//);
  expect(() => client.watchPath('api/v1/pods?watch=1', () => undefined)).toThrow(/must start with a single \//);
  expect(server.requests).toHaveLength(0);
});

test('rawRequest: a per-request timeout', async () => {
  server.onOther = () => undefined;
  await expect(client.rawRequest('GET', '/slow', { timeoutMs: 50 })).rejects.toThrow(/GET \/slow: no response within 50 ms/);
});

test('watchPath: the caller\'s query as it is, onOpen before the first event', async () => {
  const order: string[] = [];
  server.scriptWatches([(res) => {
    openWatch(res);
    setTimeout(() => res.end(line('ADDED', { metadata: { name: 'a' } })), 20);
  }]);
  const handle = client.watchPath('/api/v1/namespaces/ns/pods?watch=true&fieldSelector=metadata.name%3Da', (e) => order.push(`${e.type} ${e.object.metadata.name}`),
    { onOpen: () => order.push('open') });
  await handle.done;
  expect(order).toEqual(['open', 'ADDED a']);
  expect((await server.watchRequest(1)).search).toBe('?watch=true&fieldSelector=metadata.name%3Da');
});

test('the metrics hook sees the verb, status and path of every request and watch', async () => {
  const seen: string[] = [];
  const counted = new HttpKubeClient({
    connection: { server: server.url, source: 'test' },
    metrics: { request: (verb, code, _ms, requestPath) => seen.push(`${verb} ${code} ${requestPath}`) },
  });
  server.scriptWatches([(res) => res.end()]);
  await counted.get(PODS, 'ns', 'p');
  await counted.rawRequest('GET', '/version');
  await counted.watchPath('/api/v1/pods?watch=1', () => undefined).done;
  expect(seen).toEqual(['GET 200 /api/v1/namespaces/ns/pods/p', 'GET 200 /version', 'WATCH 200 /api/v1/pods?watch=1']);
  counted.close();
});

test('event() writes an events.k8s.io/v1 Event with a MicroTime; a failed write is logged, never thrown', async () => {
  const bodies: any[] = [];
  server.onOther = (req, res) => {
    const body = JSON.parse(req.body);
    bodies.push({ path: req.url.pathname, body });
    // The second Event fails on the server: event() must swallow that, not throw or reject.
    if (body.reason === 'Created') return status(res, 500, 'InternalError', 'nope');
    json(res, 201, {});
  };
  // Both writes are awaited through the client's own hooks (the request metric, the failure log),
  // so the test neither sleeps nor misses a write that is still in flight.
  const codes: string[] = [];
  let bothDone!: () => void;
  const done = new Promise<void>((resolve) => (bothDone = resolve));
  let failureLogged!: (fields: any) => void;
  const failure = new Promise<any>((resolve) => (failureLogged = resolve));
  const log: Logger = {
    ...SILENT_LOGGER,
    debug: ((fields: any, msg?: string) => { if (msg === 'could not write an Event') failureLogged(fields); }) as Logger['debug'],
    child: () => log,
  };
  const reporting = new HttpKubeClient({
    connection: { server: server.url, source: 'test' },
    eventSource: { controller: 'agent-sandbox-controller', instance: 'pod-1' },
    log,
    metrics: { request: (verb, code) => { codes.push(`${verb} ${code}`); if (codes.length === 2) bothDone(); } },
  });
  const regarding = { apiVersion: 'agents.x-k8s.io/v1beta1', kind: 'Sandbox', metadata: { name: 's', namespace: 'ns', uid: 'u', resourceVersion: '5' } };
  reporting.event(regarding, 'Warning', 'PodFailed', 'Reconcile', `é${'x'.repeat(2000)}`);
  expect(() => reporting.event(regarding, 'Normal', 'Created', 'Create', 'second')).not.toThrow();
  await done;
  expect(codes.sort()).toEqual(['POST 201', 'POST 500']);
  const logged = await failure;
  expect(logged).toMatchObject({ reason: 'Created', object: 's' });
  expect(logged.err).toBeInstanceOf(ApiError);
  expect(logged.err.statusCode).toBe(500);
  expect(bodies).toHaveLength(2);
  const first = bodies.find((b) => b.body.reason === 'PodFailed');
  const second = bodies.find((b) => b.body.reason === 'Created');
  expect(first.path).toBe('/apis/events.k8s.io/v1/namespaces/ns/events');
  expect(first.body).toMatchObject({
    apiVersion: 'events.k8s.io/v1',
    kind: 'Event',
    type: 'Warning',
    reason: 'PodFailed',
    action: 'Reconcile',
    reportingController: 'agent-sandbox-controller',
    reportingInstance: 'pod-1',
    regarding: { apiVersion: 'agents.x-k8s.io/v1beta1', kind: 'Sandbox', name: 's', namespace: 'ns', uid: 'u', resourceVersion: '5' },
  });
  expect(first.body.eventTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  expect(Buffer.byteLength(first.body.note)).toBeLessThanOrEqual(1024);
  expect(first.body.note.startsWith('éx')).toBe(true);
  expect(first.body.metadata.name).toMatch(/^s\.[0-9a-f]+$/);
  expect(second.body.metadata.name).not.toBe(first.body.metadata.name);
  reporting.close();
});

test('event() without an event source sends nothing', async () => {
  // Counts the writes event() starts; it returns synchronously, so the count is final at once.
  class CountingClient extends HttpKubeClient {
    public creates = 0;
    public override create<T extends KubeObject>(...args: Parameters<HttpKubeClient['create']>): Promise<T> {
      this.creates++;
      return super.create<T>(...args);
    }
  }
  const regarding = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'ns', uid: 'u' } };
  const silent = new CountingClient({ connection: { server: server.url, source: 'test' } });
  silent.event(regarding, 'Normal', 'X', 'Y', 'z');
  expect(silent.creates).toBe(0);
  // The same call with a source does write, so the count above is not vacuous.
  let written!: (code: string) => void;
  const finished = new Promise<string>((resolve) => (written = resolve));
  const reporting = new CountingClient({
    connection: { server: server.url, source: 'test' }, eventSource: { controller: 'c', instance: 'i' }, metrics: { request: (_verb, code) => written(code) },
  });
  reporting.event(regarding, 'Normal', 'X', 'Y', 'z');
  expect(reporting.creates).toBe(1);
  expect(await finished).toBe('200');
  expect(server.requests.map((r) => `${r.method} ${r.url.pathname}`)).toEqual(['POST /apis/events.k8s.io/v1/namespaces/ns/events']);
  silent.close();
  reporting.close();
});

test('a server URL with a path: requests and watches go under it', async () => {
  server.scriptWatches([(res) => {
    openWatch(res);
    res.end(line('ADDED', { metadata: { name: 'a', resourceVersion: '2' } }));
  }]);
  const prefixed = new HttpKubeClient({ connection: { server: `${server.url}/k8s/clusters/c-abc/`, source: 'test' } });
  await prefixed.get(PODS, 'ns', 'p');
  expect(last().url.pathname).toBe('/k8s/clusters/c-abc/api/v1/namespaces/ns/pods/p');
  await prefixed.rawRequest('GET', '/readyz?verbose=1');
  expect(last().url.pathname + last().url.search).toBe('/k8s/clusters/c-abc/readyz?verbose=1');
  const events: string[] = [];
  await prefixed.watch(SANDBOXES, 'ns', { resourceVersion: '1' }, (e) => events.push(e.object.metadata.name)).done;
  expect(last().url.pathname).toBe('/k8s/clusters/c-abc/apis/agents.x-k8s.io/v1beta1/namespaces/ns/sandboxes');
  expect(events).toEqual(['a']);
  await expect(prefixed.rawRequest('GET', 'https://elsewhere.example/api')).rejects.toThrow(/is not a path on the API server/);
  prefixed.close();
});

/** Credentials that hand out token-1, token-2, ... and count how often they were asked again after a 401. */
function rotatingCredentials() {
  const state = { issued: 0, rejected: 0 };
  let current: RequestAuth | undefined;
  const credentials: Credentials = {
    current: async () => (current ??= { headers: { authorization: `Bearer token-${++state.issued}` } }),
    rejected: (used) => {
      state.rejected++;
      if (used === current) current = undefined;
      return true;
    },
  };
  return { state, credentials };
}

test('a 401 makes refreshable credentials obtain new ones, and the request is retried once with them', async () => {
  const { state, credentials } = rotatingCredentials();
  const seen: string[] = [];
  server.onOther = (req, res) => {
    seen.push(req.headers.authorization as string);
    if (req.headers.authorization === 'Bearer token-1') return status(res, 401, 'Unauthorized', 'expired');
    json(res, 201, { metadata: { name: 'created' } });
  };
  const c = new HttpKubeClient({ connection: { server: server.url, credentials, source: 'test' } });
  // Even a create: a 401 means the server did not process it.
  await expect(c.create(PODS, 'ns', { metadata: { name: 'p' } })).resolves.toMatchObject({ metadata: { name: 'created' } });
  expect(seen).toEqual(['Bearer token-1', 'Bearer token-2']);
  // Credentials refused twice in a row: one retry only, then the 401 is the caller's.
  server.onOther = (req, res) => {
    seen.push(req.headers.authorization as string);
    status(res, 401, 'Unauthorized', 'revoked');
  };
  await expect(c.get(PODS, 'ns', 'p')).rejects.toMatchObject({ statusCode: 401 });
  expect(seen.slice(2)).toEqual(['Bearer token-2', 'Bearer token-3']);
  expect(state.rejected).toBe(2);
  c.close();
});

test('a 401 on a watch drops the credentials it carried, so the next watch has new ones', async () => {
  const { state, credentials } = rotatingCredentials();
  server.scriptWatches([(res) => status(res, 401, 'Unauthorized', 'expired'), (res) => {
    openWatch(res);
    res.end();
  }]);
  const c = new HttpKubeClient({ connection: { server: server.url, credentials, source: 'test' } });
  await expect(c.watch(SANDBOXES, 'ns', { resourceVersion: '1' }, () => undefined).done).rejects.toMatchObject({ statusCode: 401 });
  await c.watch(SANDBOXES, 'ns', { resourceVersion: '1' }, () => undefined).done;
  const auths = server.requests.filter((r) => r.url.searchParams.has('watch')).map((r) => r.headers.authorization);
  expect(auths).toEqual(['Bearer token-1', 'Bearer token-2']);
  expect(state.issued).toBe(2);
  c.close();
});

test('requests waiting for credentials (an exec plugin still running) hold no in-flight slot', async () => {
  let release!: () => void;
  const ready = new Promise<void>((r) => (release = r));
  const credentials: Credentials = {
    current: async () => {
      await ready;
      return { headers: { authorization: 'Bearer slow' } };
    },
    rejected: () => true,
  };
  server.onOther = (_req, res) => json(res, 200, { metadata: { name: 'p' } });
  const c = new HttpKubeClient({ connection: { server: server.url, credentials, source: 'test' }, maxInFlight: 1 });
  const gate = (c as unknown as { gate: { active: number; queued(): number } }).gate;
  const gets = [1, 2, 3].map(() => c.get(PODS, 'ns', 'p'));
  await new Promise((r) => setImmediate(r));
  expect([gate.active, gate.queued()]).toEqual([0, 0]);
  release();
  await expect(Promise.all(gets)).resolves.toHaveLength(3);
  c.close();
});

test('fixed credentials are not retried after a 401', async () => {
  let calls = 0;
  server.onOther = (_req, res) => {
    calls++;
    status(res, 401, 'Unauthorized', 'bad token');
  };
  await expect(client.get(PODS, 'ns', 'p')).rejects.toMatchObject({ statusCode: 401 });
  expect(calls).toBe(1);
});
