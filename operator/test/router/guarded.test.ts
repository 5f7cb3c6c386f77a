/** SSRF guards, concurrency limits, WebSocket passthrough and auth modes. */
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { echoHandler, type Harness, pod, request, sandbox, startRouter, startUpstream, type Upstream, UPSTREAM_IP } from './harness';
import { ScriptedReviewer } from './reviewer';
import { KubernetesAuthorizer, type Reviewer, StaticTokenAuthorizer } from '../../src/router/auth';
import { parseRouterArgs } from '../../src/router/flags';
import type { UpstreamPools } from '../../src/router/upstream';

async function withSandbox(h: Harness, ips: string[], name = 'sb'): Promise<void> {
  const sb = sandbox(name);
  h.sandboxes.put(sb);
  h.pods.put(pod(sb, ips));
}

describe('SSRF guards', () => {
  let h: Harness;
  afterEach(async () => h.close());

  test.each([
    ['link-local metadata address', '169.254.169.254'],
    ['IPv6 link-local', 'fe80::1'],
    ['outside the allowed pod CIDRs', '10.0.0.5'],
    ['the router\'s own address', '127.0.0.1'],
    ['loopback outside the test pod CIDR', '127.0.0.2'],
  ])('a pod IP that is %s is never dialled (502)', async (_what, ip) => {
    h = await startRouter();
    await withSandbox(h, [ip]);
    const reply = await request(h.port, '/', { 'x-sandbox-id': 'sb', 'x-sandbox-pod-ip': ip });
    expect(reply).toMatchObject({ status: 502, body: JSON.stringify({ detail: 'Could not connect to the backend sandbox: sb' }) });
    expect(h.dialed).toEqual([]);
  });

  test('a Pod-IP header naming another address (another sandbox\'s, the metadata server) is not followed', async () => {
    h = await startRouter();
    await withSandbox(h, [UPSTREAM_IP]);
    await withSandbox(h, ['127.64.0.8'], 'other');
    for (const ip of ['127.64.0.8', '169.254.169.254', '10.96.0.1']) {
      expect((await request(h.port, '/', { 'x-sandbox-id': 'sb', 'x-sandbox-pod-ip': ip })).status).toBe(503);
    }
    expect(h.dialed).toEqual([]);
  });

  test('the guard also runs inside the dial path (an address that slips past admission fails the connection)', async () => {
    h = await startRouter();
    // Reach the upstream pools' connection factory directly with a forbidden address.
    const pools = (h.router as unknown as { upstream: UpstreamPools }).upstream;
    const reply = await pools.poolFor('169.254.169.254', 80).request({ path: '/', method: 'GET' }).then(() => undefined, (err: NodeJS.ErrnoException) => err);
    expect(reply?.code).toBe('EROUTERGUARD');
    expect(h.dialed).toEqual([]);
  });
});

describe('dial retries', () => {
  test('a refused connection is retried for a bodyless request, never for one with a body', async () => {
    const upstream = await startUpstream(echoHandler);
    let refusals = 2;
    const dials: string[] = [];
    const h = await startRouter({
      dial: (host, port) => {
        dials.push(host);
        if (!host.startsWith('127.')) throw new Error(`test dial to a non-loopback address ${host}`);
        if (refusals-- > 0) {
          const s = new net.Socket();
          process.nextTick(() => s.destroy(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })));
          return s;
        }
        return net.connect({ host, port });
      },
    });
    try {
      await withSandbox(h, [UPSTREAM_IP]);
      const to = { 'x-sandbox-id': 'sb', 'x-sandbox-port': String(upstream.port) };
      expect((await request(h.port, '/', to)).status).toBe(200);
      expect(dials).toHaveLength(3);
      expect(await h.metrics.registry.metrics()).toMatch(/sandbox_router_upstream_retries_total\{sandbox_namespace="default"\} 2/);
      // Another port, so that no pooled connection serves it.
      const second = await startUpstream(echoHandler);
      refusals = 1;
      dials.length = 0;
      expect((await request(h.port, '/', { ...to, 'x-sandbox-port': String(second.port) }, 'POST', 'body')).status).toBe(502);
      expect(dials).toHaveLength(1);
      await second.close();
    } finally {
      await h.close();
      await upstream.close();
    }
  });
});

describe('concurrency limits', () => {
  test('per sandbox and in total → 429 with Retry-After; capacity returns when a request ends', async () => {
    const held: http.ServerResponse[] = [];
    let arrived!: () => void;
    let arrival = new Promise<void>((r) => (arrived = r));
    const upstream = await startUpstream((_req, res) => {
      held.push(res);
      arrived();
    });
    const h = await startRouter({ maxConnectionsPerSandbox: 1, maxConnections: 2 });
    try {
      await withSandbox(h, [UPSTREAM_IP], 'a');
      await withSandbox(h, [UPSTREAM_IP], 'b');
      await withSandbox(h, [UPSTREAM_IP], 'c');
      const to = (id: string) => ({ 'x-sandbox-id': id, 'x-sandbox-port': String(upstream.port) });
      const first = request(h.port, '/', to('a'));
      await arrival;
      const second = await request(h.port, '/', to('a'));
      expect(second).toMatchObject({ status: 429, body: JSON.stringify({ detail: 'Too many concurrent connections to sandbox default/a.' }) });
      expect(second.headers['retry-after']).toBe('1');
      arrival = new Promise<void>((r) => (arrived = r));
      const otherSandbox = request(h.port, '/', to('b'));
      await arrival;
      const overTotal = await request(h.port, '/', to('c'));
      expect(overTotal).toMatchObject({ status: 429, body: JSON.stringify({ detail: 'Too many concurrent connections through the router.' }) });
      for (const res of held.splice(0)) res.end('done');
      expect((await first).status).toBe(200);
      expect((await otherSandbox).status).toBe(200);
      arrival = new Promise<void>((r) => (arrived = r));
      const again = request(h.port, '/', to('a'));
      await arrival;
      held.splice(0).forEach((res) => res.end());
      expect((await again).status).toBe(200);
    } finally {
      await h.close();
      await upstream.close();
    }
  });
});

/** A raw WebSocket-style upgrade: returns the socket after the 101 and the response head. */
function upgrade(port: number, headers: Record<string, string>): Promise<{ head: string; socket: net.Socket }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port }, () => {
      const lines = ['GET /ws HTTP/1.1', 'Host: router', 'Connection: Upgrade', 'Upgrade: websocket', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
    });
    let buffered = '';
    const onData = (chunk: Buffer) => {
      buffered += chunk.toString('latin1');
      const end = buffered.indexOf('\r\n\r\n');
      if (end < 0) return;
      socket.off('data', onData);
      resolve({ head: buffered.slice(0, end + 4 + (buffered.startsWith('HTTP/1.1 101') ? 0 : buffered.length)), socket });
    };
    socket.on('data', onData);
    socket.on('error', reject);
  });
}

function nextData(socket: net.Socket): Promise<string> {
  return new Promise((resolve) => socket.once('data', (c: Buffer) => resolve(c.toString())));
}

describe('upgrades', () => {
  let upstream: Upstream;
  const seen: http.IncomingHttpHeaders[] = [];
  beforeAll(async () => {
    upstream = await startUpstream(echoHandler);
    upstream.server.on('upgrade', (req: http.IncomingMessage, socket: net.Socket) => {
      seen.push(req.headers);
      socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
      socket.on('data', (c: Buffer) => socket.write(`echo:${c.toString()}`));
      socket.on('end', () => socket.end());
    });
  });
  afterAll(async () => upstream.close());

  test('a WebSocket echo outlives a short --proxy-timeout; Origin and credentials are stripped', async () => {
    const h = await startRouter({ proxyTimeoutMs: 50 });
    await withSandbox(h, [UPSTREAM_IP]);
    try {
      const { head, socket } = await upgrade(h.port, { 'X-Sandbox-ID': 'sb', 'X-Sandbox-Port': String(upstream.port), 'Origin': 'http://evil', 'Authorization': 'Bearer x' });
      expect(head).toMatch(/^HTTP\/1\.1 101 /);
      const first = nextData(socket);
      socket.write('one');
      expect(await first).toBe('echo:one');
      // Ten proxy timeouts later the connection still carries data both ways.
      await new Promise((r) => setTimeout(r, 500));
      const later = nextData(socket);
      socket.write('two');
      expect(await later).toBe('echo:two');
      expect(seen.at(-1)).not.toHaveProperty('origin');
      expect(seen.at(-1)).not.toHaveProperty('authorization');
      expect(seen.at(-1)).not.toHaveProperty('x-sandbox-id');
      expect(seen.at(-1)).toMatchObject({ upgrade: 'websocket' });
      const closed = new Promise((r) => socket.once('close', r));
      socket.destroy();
      await closed;
    } finally {
      await h.close();
    }
  });

  test('upgrades are refused with the same JSON errors (auth, missing sandbox)', async () => {
    const h = await startRouter({ authorizer: new StaticTokenAuthorizer('t0ken') });
    try {
      const denied = await upgrade(h.port, { 'X-Sandbox-ID': 'sb' });
      expect(denied.head).toMatch(/^HTTP\/1\.1 401 /);
      expect(denied.head).toContain('{"detail":"unauthenticated"}');
      const missing = await upgrade(h.port, { 'X-Sandbox-ID': 'nope', 'Authorization': 'Bearer t0ken' });
      expect(missing.head).toMatch(/^HTTP\/1\.1 404 /);
      expect(h.dialed).toEqual([]);
    } finally {
      await h.close();
    }
  });
});

describe('auth', () => {
  let upstream: Upstream;
  beforeAll(async () => (upstream = await startUpstream(echoHandler)));
  afterAll(async () => upstream.close());

  test('token mode: only the exact bearer token passes (scheme case-insensitive)', async () => {
    const h = await startRouter({ authorizer: new StaticTokenAuthorizer(' s3cret\n') });
    await withSandbox(h, [UPSTREAM_IP]);
    try {
      const to = (auth?: string) => ({ 'x-sandbox-id': 'sb', 'x-sandbox-port': String(upstream.port), ...(auth ? { authorization: auth } : {}) });
      expect(await request(h.port, '/', to())).toMatchObject({ status: 401, body: '{"detail":"unauthenticated"}' });
      expect((await request(h.port, '/', to('Bearer s3cre'))).status).toBe(401);
      expect((await request(h.port, '/', to('Bearer s3cret2'))).status).toBe(401);
      expect((await request(h.port, '/', to('Basic s3cret'))).status).toBe(401);
      expect((await request(h.port, '/', to('bearer s3cret'))).status).toBe(200);
      expect(h.dialed).toHaveLength(1);
    } finally {
      await h.close();
    }
  });

  test('token mode refuses an empty token file', () => {
    expect(() => new StaticTokenAuthorizer('  \n')).toThrow(/empty/);
  });

  test('kubernetes mode: TokenReview, then create on the connect subresource of the owning claim or the sandbox; decisions cached', async () => {
    const reviewer = new ScriptedReviewer({ ta: 'alice', tb: 'bob', tc: 'carol' }, [
      'alice create sandboxes/connect default/sb',
      'carol create sandboxclaims/connect default/claim-c',
    ]);
    let now = 0;
    const authorizer = new KubernetesAuthorizer(reviewer, { ttlMs: 1000, maxEntries: 2, now: () => now });
    const h = await startRouter({ authorizer });
    await withSandbox(h, [UPSTREAM_IP]);
    const claimed = sandbox('sb-c', { controller: { kind: 'SandboxClaim', name: 'claim-c' } });
    h.sandboxes.put(claimed);
    h.pods.put(pod(claimed, [UPSTREAM_IP]));
    try {
      const to = (token?: string, id = 'sb') => ({ 'x-sandbox-id': id, 'x-sandbox-port': String(upstream.port), ...(token ? { authorization: `Bearer ${token}` } : {}) });
      expect((await request(h.port, '/', to())).status).toBe(401);
      expect((await request(h.port, '/', to('unknown'))).status).toBe(401);
      expect(await request(h.port, '/', to('tb'))).toMatchObject({ status: 403, body: '{"detail":"forbidden"}' });
      expect((await request(h.port, '/', to('ta'))).status).toBe(200);
      // carol may connect to her claim, hence to the Sandbox it controls, and to nothing else.
      expect((await request(h.port, '/', to('tc', 'sb-c'))).status).toBe(200);
      expect((await request(h.port, '/', to('tc', 'sb'))).status).toBe(403);
      // A refused caller gets 403 for a sandbox that does not exist too: nothing to probe.
      expect((await request(h.port, '/', to('tb', 'nope'))).status).toBe(403);
      expect(reviewer.accessReviews).toContain('carol create sandboxclaims/connect default/claim-c');

      const reviews = reviewer.tokenReviews;
      expect((await request(h.port, '/', to('tc', 'sb-c'))).status).toBe(200);
      expect(reviewer.tokenReviews).toBe(reviews);
      now = 5000;
      expect((await request(h.port, '/', to('tc', 'sb-c'))).status).toBe(200);
      expect(reviewer.tokenReviews).toBe(reviews + 1);

      // The API server down: 503 with Retry-After, not cached.
      reviewer.fail = true;
      now = 10_000;
      const down = await request(h.port, '/', to('ta'));
      expect(down).toMatchObject({ status: 503, body: '{"detail":"Cannot check the credentials now (TokenReview: apiserver down); retry later."}' });
      expect(down.headers['retry-after']).toBe('1');
      reviewer.fail = false;
      expect((await request(h.port, '/', to('ta'))).status).toBe(200);
    } finally {
      await h.close();
    }
  });
});

test('kubernetes mode: concurrent checks with one token share one review', async () => {
  let reviews = 0;
  const reviewer: Reviewer = {
    tokenReview: async () => {
      reviews++;
      return { user: { username: 'alice' } };
    },
    accessReview: async () => true,
  };
  const authorizer = new KubernetesAuthorizer(reviewer);
  const principals = await Promise.all(Array.from({ length: 5 }, () => authorizer.authenticate({ authorization: 'Bearer t' })));
  expect(principals.every((p) => 'key' in p)).toBe(true);
  expect(reviews).toBe(1);
});

describe('router flags', () => {
  test('defaults and parsing', () => {
    const { flags } = parseRouterArgs([]);
    expect(flags.string('auth')).toBe('kubernetes');
    expect(flags.number('proxy-timeout')).toBe(180_000);
    expect(flags.string('allowed-pod-cidrs')).toBe('10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,100.64.0.0/10,fc00::/7');
    const parsed = parseRouterArgs(['--proxy-timeout=5s', '--allowed-pod-cidrs', '127.64.0.0/12', '--path-routing-prefix=/router', '--auth=none']);
    expect(parsed.flags.nonDefaults()).toEqual({ 'proxy-timeout': 5000, 'allowed-pod-cidrs': '127.64.0.0/12', 'path-routing-prefix': '/router', 'auth': 'none' });
  });

  test('mistakes are usage errors', () => {
    expect(() => parseRouterArgs(['--auth=token'])).toThrow(/--auth-token-file/);
    expect(() => parseRouterArgs(['--auth=open'])).toThrow(/not an auth mode/);
    expect(() => parseRouterArgs(['--allowed-pod-cidrs=10.0.0.0/40'])).toThrow(/not a CIDR/);
    expect(() => parseRouterArgs(['--path-routing-prefix=/r/'])).toThrow(/must start with/);
    expect(() => parseRouterArgs(['--nope'])).toThrow(/unknown flag/);
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'router-')), 'token');
    expect(parseRouterArgs(['--auth=token', `--auth-token-file=${file}`]).flags.string('auth-token-file')).toBe(file);
  });
});
