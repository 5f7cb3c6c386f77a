import * as http from 'node:http';
import * as net from 'node:net';
import { echoHandler, type Harness, pod, request, sandbox, startRouter, startUpstream, UPSTREAM_IP } from './harness';
import type { Pod, Sandbox } from '../../src/model';
import { filterResponseHeaders } from '../../src/router/forwarding';

describe('router proxy', () => {
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let h: Harness;
  const route = (id: string, extra: http.OutgoingHttpHeaders = {}) => ({ 'x-sandbox-id': id, 'x-sandbox-port': String(upstream.port), ...extra });

  beforeEach(async () => {
    upstream = await startUpstream(echoHandler);
    h = await startRouter({ pathRoutingPrefix: '/router' });
    const sb = sandbox('sb');
    h.sandboxes.put(sb);
    h.pods.put(pod(sb, [UPSTREAM_IP]));
  });

  afterEach(async () => {
    await h.close();
    await upstream.close();
  });

  test('forwards method, escaped path, query and body; strips credentials, hop-by-hop and X-Sandbox-*', async () => {
    const reply = await request(h.port, '/files/a%2Fb/../c?x=1', route('sb', {
      'authorization': 'Bearer secret',
      'cookie': 'c=1',
      'proxy-authorization': 'Basic x',
      'x-sandbox-timeout': '30',
      'connection': 'keep-alive, x-hop',
      'x-hop': '1',
      'x-forwarded-for': '6.6.6.6',
      'origin': 'http://o',
      'x-keep': 'kept',
      'x-request-id': 'rid-1',
    }), 'POST', 'hello');
    expect(reply.status).toBe(200);
    expect(reply.headers['x-upstream']).toBe('yes');
    expect(reply.headers['x-request-id']).toBe('rid-1');
    const seen = JSON.parse(reply.body);
    expect(seen).toMatchObject({ method: 'POST', url: '/files/a%2Fb/../c?x=1', body: 'hello' });
    for (const gone of ['authorization', 'cookie', 'proxy-authorization', 'x-sandbox-id', 'x-sandbox-port', 'x-sandbox-timeout', 'x-hop']) {
      expect(seen.headers[gone]).toBeUndefined();
    }
    expect(seen.headers).toMatchObject({ 'x-keep': 'kept', 'origin': 'http://o', 'x-forwarded-for': '127.0.0.1', 'x-forwarded-proto': 'http', 'x-request-id': 'rid-1' });
    expect(h.dialed).toEqual([`${UPSTREAM_IP}:${upstream.port}`]);
  });

  test('path routing: prefix and identity segments removed, escapes kept', async () => {
    const reply = await request(h.port, `/router/default/sb/${upstream.port}/download/a%2Fb?q=1`);
    expect(reply.status).toBe(200);
    expect(JSON.parse(reply.body).url).toBe('/download/a%2Fb?q=1');
  });

  test('/healthz on the proxy port is answered by the router', async () => {
    const reply = await request(h.port, '/healthz');
    expect(reply).toMatchObject({ status: 200, body: '{"status":"ok"}' });
    expect(h.dialed).toEqual([]);
  });

  test('missing → 404, suspended → 409 with reason SandboxSuspended, not ready or no pod → 503, each naming the sandbox', async () => {
    const nope = await request(h.port, '/', route('nope'));
    expect(nope).toMatchObject({ status: 404, body: JSON.stringify({ detail: 'Sandbox default/nope not found.' }) });
    expect(nope.headers['x-sandbox-reason']).toBeUndefined();
    h.sandboxes.put(sandbox('sus', { suspended: true }));
    const suspended = await request(h.port, '/', route('sus'));
    expect(suspended).toMatchObject({
      status: 409,
      headers: expect.objectContaining({ 'x-sandbox-reason': 'SandboxSuspended' }),
      body: JSON.stringify({ detail: 'Sandbox default/sus is suspended; resume it (spec.operatingMode: Running) to use it.', reason: 'SandboxSuspended' }),
    });
    const nr = sandbox('nr');
    h.sandboxes.put(nr);
    h.pods.put(pod(nr, [UPSTREAM_IP], { ready: false }));
    expect(await request(h.port, '/', route('nr'))).toMatchObject({ status: 503, body: JSON.stringify({ detail: 'Sandbox default/nr is not ready.' }) });
    h.sandboxes.put(sandbox('nopod'));
    expect(await request(h.port, '/', route('nopod'))).toMatchObject({ status: 503, body: JSON.stringify({ detail: 'Sandbox default/nopod has no pod yet.' }) });
    expect(await request(h.port, '/', route('sb', { 'x-sandbox-uid': 'other' }))).toMatchObject({ status: 404 });
    expect(h.dialed).toEqual([]);
  });

  test('a pod-name annotation picks that pod', async () => {
    const sb = sandbox('ann');
    sb.metadata.annotations = { 'agents.x-k8s.io/pod-name': 'ann-pod' };
    h.sandboxes.put(sb);
    h.pods.put(pod(sb, ['127.64.0.99'], { name: 'other' }), pod(sb, [UPSTREAM_IP], { name: 'ann-pod' }));
    expect((await request(h.port, '/', route('ann'))).status).toBe(200);
  });

  test('X-Sandbox-Pod-IP is used only when it is a current IP of that sandbox\'s pod', async () => {
    expect((await request(h.port, '/', route('sb', { 'x-sandbox-pod-ip': UPSTREAM_IP }))).status).toBe(200);
    const stale = await request(h.port, '/', route('sb', { 'x-sandbox-pod-ip': '10.1.2.3' }));
    expect(stale).toMatchObject({ status: 503, body: JSON.stringify({ detail: '10.1.2.3 is not a current pod IP of sandbox default/sb.' }) });
    expect(h.dialed).toEqual([`${UPSTREAM_IP}:${upstream.port}`]);
  });

  test('dial failure → 502 with upstream\'s text, and reason UpstreamUnreachable', async () => {
    const port = upstream.port;
    await upstream.close();
    const reply = await request(h.port, '/', { 'x-sandbox-id': 'sb', 'x-sandbox-port': String(port) });
    expect(reply).toMatchObject({
      status: 502,
      headers: expect.objectContaining({ 'x-sandbox-reason': 'UpstreamUnreachable' }),
      body: JSON.stringify({ detail: 'Could not connect to the backend sandbox: sb', reason: 'UpstreamUnreachable' }),
    });
    upstream = await startUpstream(echoHandler);
  });

  test('an upstream\'s own X-Sandbox-Reason (header or trailer) does not reach the client; the router\'s does', async () => {
    await upstream.close();
    upstream = await startUpstream((_req, res) => {
      res.writeHead(409, { 'X-Sandbox-Reason': 'SandboxSuspended', 'x-upstream': 'yes' });
      res.end('{"detail":"fake"}');
    });
    const faked = await request(h.port, '/', route('sb'));
    expect(faked.status).toBe(409);
    expect(faked.headers['x-upstream']).toBe('yes');
    expect(faked.headers['x-sandbox-reason']).toBeUndefined();
    expect(filterResponseHeaders({ 'x-sandbox-reason': 'SandboxSuspended', 'X-Sandbox-Reason': 'x', 'grpc-status': '0' })).toEqual({ 'grpc-status': '0' });
    h.sandboxes.put(sandbox('sus', { suspended: true }));
    expect((await request(h.port, '/', route('sus'))).headers['x-sandbox-reason']).toBe('SandboxSuspended');
  });

  test('response headers come back as the sandbox sent them: repeats and order kept; hop-by-hop, Connection-named and X-Sandbox-Reason removed', async () => {
    await upstream.close();
    upstream = await startUpstream((_req, res) => {
      res.writeHead(200, 'Fine', ['X-Dup', 'a', 'x-dup', 'b', 'Set-Cookie', 's=1', 'Set-Cookie', 't=2', 'Connection', 'keep-alive, X-Private',
        'X-Private', 'p', 'Keep-Alive', 'timeout=5', 'X-Sandbox-Reason', 'SandboxSuspended', 'Content-Type', 'text/plain']);
      res.end('ok');
    });
    const reply = await new Promise<{ status?: number; message?: string; raw: string[]; body: string }>((resolve, reject) => {
      http.get({ host: '127.0.0.1', port: h.port, path: '/', headers: route('sb'), agent: false }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode, message: res.statusMessage, raw: res.rawHeaders, body }));
      }).on('error', reject);
    });
    expect({ status: reply.status, message: reply.message, body: reply.body }).toEqual({ status: 200, message: 'Fine', body: 'ok' });
    const pairs: string[] = [];
    for (let i = 0; i < reply.raw.length; i += 2) pairs.push(`${reply.raw[i]}: ${reply.raw[i + 1]}`);
    // In the sandbox's order, each repeat on its own line under the name's first spelling (Node's HTTP client joined them: "a, b").
    expect(pairs.filter((p) => /^(x-dup|set-cookie|content-type):/i.test(p))).toEqual(['X-Dup: a', 'X-Dup: b', 'Set-Cookie: s=1', 'Set-Cookie: t=2', 'Content-Type: text/plain']);
    expect(pairs.filter((p) => /^(x-private|keep-alive|x-sandbox-reason):/i.test(p))).toEqual([]);
  });

  test('an informational answer (103 Early Hints) is skipped and the final one passes; a 101 to a plain GET is a 502, sent once', async () => {
    await upstream.close();
    upstream = await startUpstream((_req, res) => {
      res.writeEarlyHints({ link: '</style.css>; rel=preload' });
      res.end('final');
    });
    expect(await request(h.port, '/', route('sb'))).toMatchObject({ status: 200, body: 'final' });
    let seen = 0;
    const raw = net.createServer((socket) => socket.once('data', () => {
      seen++;
      socket.end('HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\n');
    }));
    await new Promise<void>((resolve) => raw.listen(0, UPSTREAM_IP, resolve));
    try {
      const port = (raw.address() as net.AddressInfo).port;
      expect((await request(h.port, '/', { 'x-sandbox-id': 'sb', 'x-sandbox-port': String(port) })).status).toBe(502);
      expect(seen).toBe(1);
    } finally {
      await new Promise((resolve) => raw.close(resolve));
    }
  });

  test('header bytes come back unchanged (UTF-8 in a value is not re-encoded)', async () => {
    const raw = net.createServer((socket) => socket.once('data', () => {
      socket.end(Buffer.concat([Buffer.from('HTTP/1.1 200 OK\r\nX-Name: '), Buffer.from('café ☕', 'utf8'), Buffer.from('\r\nContent-Length: 2\r\n\r\nok')]));
    }));
    await new Promise<void>((resolve) => raw.listen(0, UPSTREAM_IP, resolve));
    try {
      const port = (raw.address() as net.AddressInfo).port;
      const reply = await request(h.port, '/', { 'x-sandbox-id': 'sb', 'x-sandbox-port': String(port) });
      expect(reply).toMatchObject({ status: 200, body: 'ok' });
      // Node's client reads header bytes as latin1: the same bytes give the same string.
      expect(reply.headers['x-name']).toBe(Buffer.from('café ☕', 'utf8').toString('latin1'));
    } finally {
      await new Promise((resolve) => raw.close(resolve));
    }
  });

  test('a sandbox that answers before reading the whole upload: the answer reaches the client', async () => {
    await upstream.close();
    upstream = await startUpstream((_req, res) => {
      res.writeHead(413, { 'content-type': 'text/plain' });
      res.end('too big');
    });
    const reply = await request(h.port, '/upload', route('sb', { 'content-type': 'application/octet-stream' }), 'POST', 'x'.repeat(4 * 1024 * 1024));
    expect(reply).toMatchObject({ status: 413, body: 'too big' });
    // The sandbox's connection is reusable afterwards: the next request is served.
    await upstream.close();
    upstream = await startUpstream(echoHandler);
    expect((await request(h.port, '/', route('sb'))).status).toBe(200);
  });

  test('a target that is not a path (OPTIONS *) is a 400 naming it, and nothing is dialed', async () => {
    const reply = await request(h.port, '*', route('sb'), 'OPTIONS');
    expect(reply).toMatchObject({ status: 400, body: JSON.stringify({ detail: 'The router forwards requests for paths that begin with "/"; "*" does not.' }) });
    expect(h.dialed).toEqual([]);
    expect((await request(h.port, '/', route('sb'))).status).toBe(200);
  });

  test('metrics use upstream\'s names', async () => {
    await request(h.port, '/', route('sb'));
    const text = await h.metrics.registry.metrics();
    expect(text).toMatch(/sandbox_router_requests_total\{method="GET",code="200",sandbox_namespace="default"\} 1/);
    expect(text).toMatch(/sandbox_router_request_duration_seconds_bucket/);
    expect(text).toMatch(/sandbox_router_inflight_requests 0/);
  });
});

describe('--ready-wait: a request the caches cannot serve yet waits for them', () => {
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let h: Harness;
  const route = (id: string) => ({ 'x-sandbox-id': id, 'x-sandbox-port': String(upstream.port) });
  const later = (ms: number, fn: () => void) => setTimeout(fn, ms);

  beforeEach(async () => {
    upstream = await startUpstream(echoHandler);
    h = await startRouter({ readyWaitMs: 5_000 });
  });

  afterEach(async () => {
    await h.close();
    await upstream.close();
  });

  test('a Sandbox turning Ready (Sandbox first, then its Pod) while the request waits is served; nothing is left waiting', async () => {
    const sb = sandbox('late', { ready: false });
    h.sandboxes.put(sb);
    h.pods.put(pod(sb, [UPSTREAM_IP], { ready: false }));
    later(50, () => h.sandboxes.put(sandbox('late')));
    later(100, () => h.pods.put(pod(sb, [UPSTREAM_IP])));
    const reply = await request(h.port, '/x', route('late'));
    expect(reply.status).toBe(200);
    expect(h.resolver.waiting).toBe(0);
    expect(await h.metrics.registry.metrics()).toMatch(/sandbox_router_ready_waits_total\{sandbox_namespace="default",outcome="waited"\} 1/);
    expect(h.router.openConnections).toBe(0);
  });

  test('a resuming Sandbox (Running, its Pod not ready yet), and one the cache has not listed yet, are served once they are', async () => {
    const sb = sandbox('resumed', { ready: false });
    h.sandboxes.put(sb);
    h.pods.put(pod(sb, [UPSTREAM_IP], { ready: false }));
    later(50, () => h.sandboxes.put(sandbox('resumed')));
    later(80, () => h.pods.put(pod(sb, [UPSTREAM_IP])));
    const fresh = sandbox('fresh');
    later(50, () => h.pods.put(pod(fresh, [UPSTREAM_IP])));
    later(100, () => h.sandboxes.put(fresh));
    const [resumed, created] = await Promise.all([request(h.port, '/', route('resumed')), request(h.port, '/', route('fresh'))]);
    expect([resumed.status, created.status]).toEqual([200, 200]);
  });

  test('a suspended Sandbox is refused at once, without the wait, while a request for one that is not ready yet still waits', () => withLongWait(async (long) => {
    long.sandboxes.put(sandbox('starting', { ready: false }));
    const waiting = request(long.port, '/', route('starting'));
    await until(() => long.resolver.waiting === 1);
    long.sandboxes.put(sandbox('asleep', { suspended: true }));
    // With a 60 s ready-wait, only an answer that never waited arrives before the test's own timeout.
    const refused = await request(long.port, '/', route('asleep'));
    expect(refused).toMatchObject({ status: 409, headers: expect.objectContaining({ 'x-sandbox-reason': 'SandboxSuspended' }) });
    expect(JSON.parse(refused.body)).toMatchObject({ reason: 'SandboxSuspended' });
    // The control: the other request is still waiting, and no wait was counted for the suspended one.
    expect(long.resolver.waiting).toBe(1);
    expect(await long.metrics.registry.metrics()).not.toMatch(/sandbox_router_ready_waits_total\{[^}]*\} [1-9]/);
    long.sandboxes.put(sandbox('starting'));
    long.pods.put(pod(sandbox('starting'), [UPSTREAM_IP]));
    expect((await waiting).status).toBe(200);
    expect(long.dialed).toEqual([`${UPSTREAM_IP}:${upstream.port}`]);
  }));

  test('one that stays not ready gets the latest answer when the wait runs out, and its slot back', async () => {
    const short = await startRouter({ readyWaitMs: 150, maxConnectionsPerSandbox: 1 });
    try {
      const sb = sandbox('stuck');
      short.sandboxes.put(sb);
      later(30, () => short.pods.put(pod(sb, [UPSTREAM_IP], { ready: false })));
      const started = Date.now();
      const first = request(short.port, '/', route('stuck'));
      await new Promise((r) => setTimeout(r, 10));
      // The waiting request holds the sandbox's only slot.
      expect((await request(short.port, '/', route('stuck'))).status).toBe(429);
      expect(await first).toMatchObject({ status: 503, body: JSON.stringify({ detail: 'Sandbox default/stuck is not ready.' }) });
      expect(Date.now() - started).toBeGreaterThanOrEqual(140);
      expect(short.resolver.waiting).toBe(0);
      expect(short.router.openConnections).toBe(0);
      expect(await short.metrics.registry.metrics()).toMatch(/sandbox_router_ready_waits_total\{sandbox_namespace="default",outcome="timeout"\} 1/);
      expect(short.dialed).toEqual([]);
    } finally {
      await short.close();
    }
  });

  const until = async (cond: () => boolean) => {
    while (!cond()) await new Promise((r) => setTimeout(r, 5));
  };

  test('a client that hangs up while it waits stops the wait: its slot is back long before --ready-wait (5 s) runs out', async () => {
    h.sandboxes.put(sandbox('hangup', { ready: false }));
    const req = http.request({ host: '127.0.0.1', port: h.port, path: '/', headers: route('hangup') });
    req.on('error', () => undefined);
    req.end();
    await until(() => h.resolver.waiting === 1);
    expect(h.router.openConnections).toBe(1);
    req.destroy();
    await until(() => h.router.openConnections === 0);
    expect(h.resolver.waiting).toBe(0);
    expect(await h.metrics.registry.metrics()).toMatch(/sandbox_router_ready_waits_total\{sandbox_namespace="default",outcome="aborted"\} 1/);
  });

  /** A router whose ready-wait (60 s) outlasts the test's own timeout: only the cut under test can end the wait in time. */
  const withLongWait = async (fn: (long: Harness) => Promise<void>) => {
    const long = await startRouter({ readyWaitMs: 60_000 });
    try {
      await fn(long);
    } finally {
      await long.close();
    }
  };

  test('the wait never outlasts the request\'s own X-Sandbox-Timeout', () => withLongWait(async (long) => {
    long.sandboxes.put(sandbox('hurried', { ready: false }));
    const reply = await request(long.port, '/', { ...route('hurried'), 'x-sandbox-timeout': '0.1' });
    expect(reply.status).toBe(503);
    expect(await long.metrics.registry.metrics()).toMatch(/sandbox_router_ready_waits_total\{sandbox_namespace="default",outcome="timeout"\} 1/);
    expect(long.router.openConnections).toBe(0);
  }));

  test('closing the router ends the waits at once, with a 503 to retry', () => withLongWait(async (long) => {
    long.sandboxes.put(sandbox('closing', { ready: false }));
    const reply = request(long.port, '/', route('closing'));
    await until(() => long.resolver.waiting === 1);
    long.router.close();
    await until(() => long.resolver.waiting === 0);
    await until(() => long.router.openConnections === 0);
    expect(await reply).toMatchObject({ status: 503, headers: expect.objectContaining({ 'retry-after': '1' }) });
  }));

  test('X-Sandbox-Timeout bounds the wait and the forward together, not each', () => withLongWait(async (long) => {
    const slow = await startUpstream((_req, res) => void setTimeout(() => res.end('late'), 400));
    try {
      const sb = sandbox('slow', { ready: false });
      long.sandboxes.put(sb);
      later(300, () => {
        long.sandboxes.put(sandbox('slow'));
        long.pods.put(pod(sb, [UPSTREAM_IP]));
      });
      // 300 ms waiting + 400 ms answering > 500 ms: a timeout, where a fresh 500 ms for the forward would let it through.
      const reply = await request(long.port, '/', { 'x-sandbox-id': 'slow', 'x-sandbox-port': String(slow.port), 'x-sandbox-timeout': '0.5' });
      expect(reply.status).toBe(504);
    } finally {
      await slow.close();
    }
  }));

  test('a malformed object in the cache fails the request with a 500 and gives the slot back, whether it is seen first or during the wait', async () => {
    const broken = (sb: Sandbox) => ({ ...pod(sb, [UPSTREAM_IP]), status: { conditions: 'not a list' } }) as unknown as Pod;
    const first = sandbox('broken-now');
    h.sandboxes.put(first);
    h.pods.put(broken(first));
    expect((await request(h.port, '/', route('broken-now'))).status).toBe(500);
    expect(h.router.openConnections).toBe(0);
    const later_ = sandbox('broken-later', { ready: false });
    h.sandboxes.put(later_);
    const reply = request(h.port, '/', route('broken-later'));
    await until(() => h.resolver.waiting === 1);
    h.pods.put(broken(later_));
    expect((await reply).status).toBe(500);
    expect([h.resolver.waiting, h.router.openConnections]).toEqual([0, 0]);
    // The router still serves.
    const ok = sandbox('fine');
    h.sandboxes.put(ok);
    h.pods.put(pod(ok, [UPSTREAM_IP]));
    expect((await request(h.port, '/', route('fine'))).status).toBe(200);
  });

  test('a sandbox that serves already is not delayed and counts no wait', async () => {
    const sb = sandbox('ok');
    h.sandboxes.put(sb);
    h.pods.put(pod(sb, [UPSTREAM_IP]));
    expect((await request(h.port, '/', route('ok'))).status).toBe(200);
    expect(await h.metrics.registry.metrics()).not.toMatch(/sandbox_router_ready_waits_total\{/);
  });
});

test('before the caches have synced, a sandbox the cache lacks is 503, not 404', async () => {
  let synced = false;
  const h = await startRouter({ cachesSynced: () => synced });
  try {
    expect(await request(h.port, '/', { 'x-sandbox-id': 'sb' })).toMatchObject({ status: 503, body: JSON.stringify({ detail: 'The router\'s caches have not synced yet.' }) });
    synced = true;
    expect((await request(h.port, '/', { 'x-sandbox-id': 'sb' })).status).toBe(404);
  } finally {
    await h.close();
  }
});

describe('connections to the sandbox', () => {
  test('a response slower than the idle-connection timeout still arrives; a kept-alive connection the sandbox resets on reuse is retried for a GET, never for a POST', async () => {
    const served = new WeakSet<object>();
    let resets = 0;
    let posts = 0;
    const upstream = await startUpstream((req, res) => {
      if (req.method === 'POST') {
        posts++;
        return void req.socket.destroy(); // read, maybe acted on, then the connection is gone
      }
      if (req.url === '/slow') return void setTimeout(() => echoHandler(req, res), 4_500);
      // The keep-alive race: the sandbox drops a connection just as the router reuses it.
      if (req.url === '/reset-once' && served.has(req.socket) && resets === 0) {
        resets++;
        return void req.socket.destroy();
      }
      served.add(req.socket);
      echoHandler(req, res);
    });
    const h = await startRouter();
    const sb = sandbox('sb');
    h.sandboxes.put(sb);
    h.pods.put(pod(sb, [UPSTREAM_IP]));
    const route = { 'x-sandbox-id': 'sb', 'x-sandbox-port': String(upstream.port) };
    try {
      expect((await request(h.port, '/slow', route)).status).toBe(200);
      expect((await request(h.port, '/first', route)).status).toBe(200);
      expect((await request(h.port, '/reset-once', route)).status).toBe(200);
      expect(resets).toBe(1);
      expect((await request(h.port, '/first-again', route)).status).toBe(200);
      expect((await request(h.port, '/charge', route, 'POST')).status).toBe(502);
      expect(posts).toBe(1);
    } finally {
      await h.close();
      await upstream.close();
    }
  }, 15_000);
});

describe('router timeouts', () => {
  test('an upstream that never answers gets 504 after --proxy-timeout; X-Sandbox-Timeout shortens it', async () => {
    const hung: http.ServerResponse[] = [];
    const upstream = await startUpstream((_req, res) => void hung.push(res));
    const h = await startRouter({ proxyTimeoutMs: 300 });
    const sb = sandbox('sb');
    h.sandboxes.put(sb);
    h.pods.put(pod(sb, [UPSTREAM_IP]));
    try {
      const reply = await request(h.port, '/', { 'x-sandbox-id': 'sb', 'x-sandbox-port': String(upstream.port) });
      expect(reply).toMatchObject({ status: 504, body: JSON.stringify({ detail: 'Timed out waiting for the backend sandbox: sb' }) });
      const short = await request(h.port, '/', { 'x-sandbox-id': 'sb', 'x-sandbox-port': String(upstream.port), 'x-sandbox-timeout': '0.05' });
      expect(short.status).toBe(504);
    } finally {
      await h.close();
      await upstream.close();
    }
  });
});
