/**
 * The router against the red-team probe of its second security review, each attack with the
 * request that must still work next to it: unclaimed warm-pool members, claim read access used as
 * exec, TokenReview floods (HTTP/1.1 and HTTP/2 rapid reset), metric label floods, idle HTTP/2
 * connections, an API server that does not answer, and audience-bound tokens.
 */
import * as http2 from 'node:http2';
import * as net from 'node:net';
import { echoHandler, type Harness, pod, request, sandbox, startRouter, startUpstream, type Upstream, UPSTREAM_IP } from './harness';
import { ScriptedReviewer } from './reviewer';
import { KubernetesAuthorizer, ROUTER_AUDIENCE, audiencesOf } from '../../src/router/auth';
import { ProxyListener } from '../../src/router/listener';
import { RouterMetrics } from '../../src/router/metrics';

let upstream: Upstream;
let h: Harness | undefined;
beforeAll(async () => (upstream = await startUpstream(echoHandler)));
afterAll(async () => upstream.close());
afterEach(async () => {
  await h?.close();
  h = undefined;
});

function put(harness: Harness, name: string, controller?: { kind: 'SandboxWarmPool' | 'SandboxClaim'; name: string }, ip = UPSTREAM_IP): void {
  const sb = sandbox(name, { controller });
  harness.sandboxes.put(sb);
  harness.pods.put(pod(sb, [ip]));
}

/** A token shaped like a JWT with this `aud` claim (unsigned: only the API server verifies tokens). */
function jwt(aud: string | string[], tag: string): string {
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${part({ alg: 'RS256' })}.${part({ aud, sub: tag })}.c2ln`;
}

/** The series of `name` in the Prometheus text. */
async function series(metrics: RouterMetrics, name: string): Promise<string[]> {
  return (await metrics.registry.metrics()).split('\n').filter((l) => l.startsWith(`${name}{`));
}

describe('unclaimed warm-pool members are not routed', () => {
  test('by name, by path prefix and with a Pod-IP hint: 409 naming the pool, nothing dialled; the same Sandbox once claimed is served', async () => {
    h = await startRouter({ pathRoutingPrefix: '/r' });
    put(h, 'pool-abcde', { kind: 'SandboxWarmPool', name: 'python' });
    const byName = await request(h.port, '/', { 'x-sandbox-id': 'pool-abcde', 'x-sandbox-port': String(upstream.port) });
    const byPath = await request(h.port, `/r/default/pool-abcde/${upstream.port}/`);
    const byHint = await request(h.port, '/', { 'x-sandbox-id': 'pool-abcde', 'x-sandbox-port': String(upstream.port), 'x-sandbox-pod-ip': UPSTREAM_IP });
    for (const reply of [byName, byPath, byHint]) {
      expect(reply.status).toBe(409);
      expect(JSON.parse(reply.body).detail).toMatch(/unclaimed member of warm pool "python".*SandboxClaim/);
    }
    // Over HTTP/2 (gRPC's transport) too.
    const session = http2.connect(`http://127.0.0.1:${h.port}`);
    const stream = session.request({ ':path': '/', 'x-sandbox-id': 'pool-abcde', 'x-sandbox-port': String(upstream.port) });
    const status = await new Promise<number>((resolve) => stream.once('response', (hd) => resolve(Number(hd[':status']))));
    stream.close();
    session.close();
    expect(status).toBe(409);
    expect(h.dialed).toEqual([]);

    // Negative control: adopted by a claim, the same Sandbox and Pod are served, by each route.
    put(h, 'pool-abcde', { kind: 'SandboxClaim', name: 'mine' });
    expect((await request(h.port, '/', { 'x-sandbox-id': 'pool-abcde', 'x-sandbox-port': String(upstream.port) })).status).toBe(200);
    expect((await request(h.port, `/r/default/pool-abcde/${upstream.port}/`)).status).toBe(200);
    expect(h.dialed.length).toBeGreaterThan(0);
  });

  test('a request that arrives just before the claim adopts the member waits for it (--ready-wait) instead of failing', async () => {
    h = await startRouter({ readyWaitMs: 5_000 });
    put(h, 'pool-fghij', { kind: 'SandboxWarmPool', name: 'python' });
    const reply = request(h.port, '/', { 'x-sandbox-id': 'pool-fghij', 'x-sandbox-port': String(upstream.port) });
    while (h.resolver.waiting === 0) await new Promise((r) => setTimeout(r, 5));
    put(h, 'pool-fghij', { kind: 'SandboxClaim', name: 'mine' });
    expect((await reply).status).toBe(200);
  });
});

describe('using a sandbox is its own permission (connect), not reading claims', () => {
  test('get (or list) on every claim of the namespace opens no sandbox; create on the owning claim\'s connect does', async () => {
    const reviewer = new ScriptedReviewer({ reader: 'claim-reader', agent: 'agent' }, [
      // What the old rule turned into exec: read-only access to claims, namespace-wide.
      ...['sb', 'claimed', 'mine'].flatMap((n) => [`claim-reader get sandboxclaims ${'default'}/${n}`, `claim-reader get sandboxes default/${n}`]),
      'agent create sandboxclaims/connect default/mine',
    ]);
    h = await startRouter({ authorizer: new KubernetesAuthorizer(reviewer) });
    put(h, 'sb');
    put(h, 'claimed', { kind: 'SandboxClaim', name: 'claimed' });
    put(h, 'pool-x1', { kind: 'SandboxClaim', name: 'mine' });
    const to = (token: string, id: string) => ({ 'x-sandbox-id': id, 'x-sandbox-port': String(upstream.port), 'authorization': `Bearer ${token}` });
    for (const id of ['sb', 'claimed', 'pool-x1']) expect((await request(h.port, '/', to('reader', id))).status).toBe(403);
    // The agent reaches the Sandbox its own claim controls (a warm one, named unlike the claim) and no other.
    expect((await request(h.port, '/', to('agent', 'pool-x1'))).status).toBe(200);
    expect((await request(h.port, '/', to('agent', 'claimed'))).status).toBe(403);
    expect(reviewer.accessReviews).toContain('agent create sandboxclaims/connect default/mine');
    expect(reviewer.accessReviews.filter((r) => / get /.test(r))).toEqual([]);
    // Each resource in its own API group.
    for (const a of reviewer.attributes) expect(a.group).toBe(a.resource === 'sandboxclaims' ? 'extensions.agents.x-k8s.io' : 'agents.x-k8s.io');
  });

  test('sandboxes/connect opens a claimed Sandbox only when granted namespace-wide, not for its name (a cold Sandbox is named like its claim)', async () => {
    const reviewer = new ScriptedReviewer({ named: 'named', wide: 'wide' }, [
      'named create sandboxes/connect default/build-box',
      'wide create sandboxes/connect default/',
    ]);
    h = await startRouter({ authorizer: new KubernetesAuthorizer(reviewer) });
    put(h, 'build-box', { kind: 'SandboxClaim', name: 'build-box' });
    put(h, 'bare');
    const to = (token: string, id: string) => ({ 'x-sandbox-id': id, 'x-sandbox-port': String(upstream.port), 'authorization': `Bearer ${token}` });
    expect((await request(h.port, '/', to('named', 'build-box'))).status).toBe(403);
    expect((await request(h.port, '/', to('wide', 'build-box'))).status).toBe(200);
    expect((await request(h.port, '/', to('wide', 'bare'))).status).toBe(403);
  });

  test('a caller may hold only 16 waits for sandboxes the router does not know; the rest get 429 at once', async () => {
    const reviewer = new ScriptedReviewer({ t: 'alice' }, []);
    h = await startRouter({ authorizer: new KubernetesAuthorizer(reviewer), readyWaitMs: 60_000 });
    const harness = h;
    const replies = Array.from({ length: 20 }, (_, i) => request(harness.port, '/', { 'x-sandbox-id': `ghost-${i}`, 'authorization': 'Bearer t' }));
    while (harness.resolver.waiting < 16) await new Promise((r) => setTimeout(r, 5));
    await new Promise((r) => setTimeout(r, 50));
    expect(harness.resolver.waiting).toBe(16);
    expect(harness.router.openConnections).toBe(16);
    harness.router.close();
    const statuses = (await Promise.all(replies)).map((r) => r.status).sort();
    expect(statuses.filter((x) => x === 429)).toHaveLength(4);
  });
});

describe('unauthenticated floods cost bounded TokenReviews', () => {
  test('2,000 distinct bad tokens from one client: a burst of reviews, then 429 without one; a known token still works', async () => {
    const reviewer = new ScriptedReviewer({ good: 'alice' }, ['alice create sandboxes/connect default/sb']);
    const metrics = new RouterMetrics(undefined, false);
    const authorizer = new KubernetesAuthorizer(reviewer, {
      clientReviewQps: 5, clientReviewBurst: 20, maxNegativeEntries: 64, onTokenReview: (o) => metrics.tokenReview(o),
    });
    h = await startRouter({ authorizer, metrics });
    put(h, 'sb');
    const to = (token: string) => ({ 'x-sandbox-id': 'sb', 'x-sandbox-port': String(upstream.port), 'authorization': `Bearer ${token}` });
    expect((await request(h.port, '/', to('good'))).status).toBe(200);
    const statuses = new Map<number, number>();
    const started = performance.now();
    for (let batch = 0; batch < 20; batch++) {
      const replies = await Promise.all(Array.from({ length: 100 }, (_, i) => request(h!.port, '/', to(`bad-${batch}-${i}`))));
      for (const r of replies) statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
    }
    // Main sent one review per token (2,000). Here: the burst and what the rate refilled meanwhile (5/s: a
    // slow, loaded machine refills more; the good token's review is the 1).
    const refilled = Math.ceil(5 * (performance.now() - started) / 1000);
    expect(reviewer.tokenReviews).toBeLessThanOrEqual(1 + 20 + refilled);
    expect(statuses.get(429)).toBeGreaterThan(1_800);
    expect((statuses.get(401) ?? 0) + (statuses.get(429) ?? 0)).toBe(2_000);
    expect((await series(metrics, 'sandbox_router_token_reviews_total')).join('\n')).toMatch(/result="throttled"} \d{4}/);
    // The flood pushed nothing out of the positive cache: the good token is not reviewed again.
    const before = reviewer.tokenReviews;
    expect((await request(h.port, '/', to('good'))).status).toBe(200);
    expect(reviewer.tokenReviews).toBe(before);
  }, 30_000);

  test('no lock-out: 30 agents behind one address start at once, and known tokens are re-checked unthrottled (and kept while the API server is down)', async () => {
    const users = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`agent-${i}`, `agent-${i}`]));
    const reviewer = new ScriptedReviewer(users, Object.keys(users).map((u) => `${u} create sandboxes/connect default/sb`));
    let now = 0;
    const authorizer = new KubernetesAuthorizer(reviewer, {
      ttlMs: 1_000, trustTtlMs: 60_000, clientReviewQps: 1, clientReviewBurst: 20, now: () => now,
    });
    h = await startRouter({ authorizer });
    put(h, 'sb');
    const to = (token: string) => ({ 'x-sandbox-id': 'sb', 'x-sandbox-port': String(upstream.port), 'authorization': `Bearer ${token}` });
    // Valid tokens cost the client nothing: 30 at once from 127.0.0.1 all pass (only 20 may be reviewed at a time, so in two rounds).
    const first = await Promise.all(Object.keys(users).map((t) => request(h!.port, '/', to(t))));
    const retried = await Promise.all(first.map((r, i) => (r.status === 429 ? request(h!.port, '/', to(`agent-${i}`)) : r)));
    expect(retried.map((r) => r.status)).toEqual(Array(30).fill(200));
    // A flood of bad tokens from the same address uses up its budget...
    for (let i = 0; i < 60; i++) await request(h.port, '/', to(`bad-${i}`));
    expect((await request(h.port, '/', to('bad-late'))).status).toBe(429);
    // ...yet once the answers expire, the known agents are reviewed again and pass.
    now = 5_000;
    const before = reviewer.tokenReviews;
    expect((await request(h.port, '/', to('agent-3'))).status).toBe(200);
    expect(reviewer.tokenReviews).toBe(before + 1);
    // And while the API server does not answer, a trusted token keeps its last answer; a new one gets 503.
    now = 10_000;
    reviewer.fail = true;
    expect((await request(h.port, '/', to('agent-4'))).status).toBe(200);
    expect(await authorizer.authenticate({ authorization: 'Bearer never-seen', remoteAddress: '127.9.9.9' })).toMatchObject({ status: 503 });
  });

  test('one bad token sent again and again is reviewed once (negative cache)', async () => {
    const reviewer = new ScriptedReviewer({}, []);
    h = await startRouter({ authorizer: new KubernetesAuthorizer(reviewer) });
    put(h, 'sb');
    for (let i = 0; i < 50; i++) expect((await request(h.port, '/', { 'x-sandbox-id': 'sb', 'authorization': 'Bearer same-bad' })).status).toBe(401);
    expect(reviewer.tokenReviews).toBe(1);
  });

  test('in total across clients: the global rate holds when every request comes from another address', async () => {
    const reviewer = new ScriptedReviewer({}, []);
    const authorizer = new KubernetesAuthorizer(reviewer, { reviewQps: 10, reviewBurst: 30, clientReviewQps: 1000, clientReviewBurst: 1000 });
    const outcomes = await Promise.all(Array.from({ length: 1_000 }, (_, i) => authorizer.authenticate({ authorization: `Bearer t${i}`, remoteAddress: `127.1.${Math.floor(i / 256)}.${i % 256}` })));
    expect(reviewer.tokenReviews).toBeLessThanOrEqual(40);
    expect(outcomes.filter((o) => 'status' in o && o.status === 429).length).toBeGreaterThanOrEqual(960);
  });

  /** Opens `count` streams on `session` and resets each at once, a few at a time; returns how many were sent before the session went away. */
  async function rapidReset(session: http2.ClientHttp2Session, count: number, headers: (i: number) => http2.OutgoingHttpHeaders): Promise<number> {
    let sent = 0;
    try {
      for (; sent < count && !session.destroyed && !session.closed; sent++) {
        const stream = session.request(headers(sent), { endStream: true });
        stream.on('error', () => undefined);
        stream.close(http2.constants.NGHTTP2_CANCEL);
        if (sent % 10 === 9) await new Promise((r) => setTimeout(r, 1));
      }
    } catch {
      // The session went away while streams were still being opened.
    }
    return sent;
  }

  test('HTTP/2 rapid reset with a new token per stream: the reviews stay within one client\'s burst', async () => {
    const reviewer = new ScriptedReviewer({}, []);
    h = await startRouter({ authorizer: new KubernetesAuthorizer(reviewer, { clientReviewQps: 5, clientReviewBurst: 20 }) });
    const session = http2.connect(`http://127.0.0.1:${h.port}`);
    session.on('error', () => undefined);
    const closed = new Promise((r) => session.once('close', r));
    const started = performance.now();
    await rapidReset(session, 1_500, (i) => ({ ':path': '/', 'x-sandbox-id': 'sb', 'authorization': `Bearer rr-${i}` }));
    const seconds = (performance.now() - started) / 1000;
    session.destroy();
    await closed;
    // Main: about 1,100 TokenReviews before Node itself closed the connection. Here: the burst plus what the rate refilled.
    expect(reviewer.tokenReviews).toBeLessThanOrEqual(20 + Math.ceil(5 * seconds) + 1);
    expect(reviewer.tokenReviews).toBeLessThan(200);
  });

  test('HTTP/2 rapid reset of streams the router is forwarding: ENHANCE_YOUR_CALM after 100 in 10 s; fewer keep the connection', async () => {
    // An h2c sandbox (the router forwards HTTP/2 as HTTP/2): answers /answer, leaves every other stream hanging, as a slow sandbox would.
    const silentServer = http2.createServer();
    silentServer.on('stream', (stream, hd) => {
      stream.on('error', () => undefined);
      if (hd[':path'] === '/answer') stream.respond({ ':status': 200 }, { endStream: true });
      // Headers now, the body never: a long call the client will cancel.
      if (hd[':path'] === '/hold') stream.respond({ ':status': 200 });
    });
    await new Promise<void>((r) => silentServer.listen(0, UPSTREAM_IP, r));
    const silent = {
      port: (silentServer.address() as net.AddressInfo).port,
      close: () => new Promise<void>((r) => silentServer.close(() => r())),
    };
    try {
      h = await startRouter();
      put(h, 'sb');
      const route = { ':path': '/', 'x-sandbox-id': 'sb', 'x-sandbox-port': String(silent.port) };
      const attacker = http2.connect(`http://127.0.0.1:${h.port}`);
      attacker.on('error', () => undefined);
      const goaway = new Promise<number>((resolve) => attacker.once('goaway', (code) => resolve(code)));
      const sent = await rapidReset(attacker, 1_000, () => route);
      expect(await goaway).toBe(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
      expect(sent).toBeLessThan(1_000);
      attacker.destroy();
      // Negative control: 50 resets on another connection leave it open and serving.
      const polite = http2.connect(`http://127.0.0.1:${h.port}`);
      polite.on('error', () => undefined);
      let politeGoaway = false;
      polite.once('goaway', () => (politeGoaway = true));
      expect(await rapidReset(polite, 50, () => route)).toBe(50);
      const status = await new Promise<number>((resolve) => {
        const s = polite.request({ ...route, ':path': '/answer' }, { endStream: true });
        s.once('response', (hd) => resolve(Number(hd[':status'])));
        s.resume();
      });
      expect(status).toBe(200);
      // Cancelling 150 calls whose responses have begun (gRPC deadlines, streams a client is done with) is not an attack.
      for (let i = 0; i < 150; i++) {
        await new Promise<void>((resolve) => {
          const s = polite.request({ ...route, ':path': '/hold' }, { endStream: true });
          s.on('error', () => undefined);
          s.once('response', () => {
            s.close(http2.constants.NGHTTP2_CANCEL);
            resolve();
          });
        });
      }
      expect(polite.closed || polite.destroyed).toBe(false);
      expect(politeGoaway).toBe(false);
      polite.close();
    } finally {
      await h?.close();
      h = undefined;
      await silent.close();
    }
  });
});

describe('metric labels come only from bounded values', () => {
  test('random namespaces from refused callers and random HTTP/2 methods add no series', async () => {
    const reviewer = new ScriptedReviewer({}, []);
    const metrics = new RouterMetrics(undefined, false);
    h = await startRouter({ authorizer: new KubernetesAuthorizer(reviewer), metrics });
    for (let i = 0; i < 300; i++) await request(h.port, '/', { 'x-sandbox-id': 'sb', 'x-sandbox-namespace': `ns-${i}`, 'authorization': 'Bearer nope' });
    const session = http2.connect(`http://127.0.0.1:${h.port}`);
    session.on('error', () => undefined);
    await Promise.all(Array.from({ length: 200 }, (_, i) => new Promise<void>((resolve) => {
      const s = session.request({ ':method': `M${i}X`, ':path': '/', 'x-sandbox-id': 'sb', 'x-sandbox-namespace': `h2-${i}` }, { endStream: true });
      s.on('error', () => resolve());
      s.on('close', () => resolve());
      s.resume();
    })));
    session.close();
    const authz = await series(metrics, 'sandbox_router_authz_decisions_total');
    expect(authz).toEqual(['sandbox_router_authz_decisions_total{sandbox_namespace="",decision="deny"} 500']);
    const methods = new Set((await series(metrics, 'sandbox_router_requests_total')).map((l) => /method="([^"]*)"/.exec(l)![1]));
    expect([...methods].sort()).toEqual(['GET', 'other']);
    expect((await series(metrics, 'sandbox_router_requests_total')).length).toBeLessThanOrEqual(4);
  }, 30_000);

  test('an authorized request is still counted under its namespace', async () => {
    const metrics = new RouterMetrics(undefined, false);
    h = await startRouter({ metrics });
    put(h, 'sb');
    expect((await request(h.port, '/', { 'x-sandbox-id': 'sb', 'x-sandbox-port': String(upstream.port) })).status).toBe(200);
    expect(await series(metrics, 'sandbox_router_authz_decisions_total')).toEqual(['sandbox_router_authz_decisions_total{sandbox_namespace="default",decision="allow"} 1']);
    await new Promise((r) => setTimeout(r, 20));
    expect((await series(metrics, 'sandbox_router_requests_total')).join('\n')).toContain('sandbox_namespace="default"');
  });
});

describe('connections and outages', () => {
  test('an HTTP/2 connection with no stream is closed after the idle timeout; one with a stream open is not', async () => {
    const listener = new ProxyListener({}, { h2IdleTimeoutMs: 200 });
    listener.http2.on('stream', (stream) => {
      // Holds the stream open until the client ends it.
      stream.respond({ ':status': 200 });
      stream.on('data', () => undefined);
      stream.on('end', () => stream.end());
    });
    await new Promise<void>((r) => listener.server.listen(0, '127.0.0.1', r));
    const port = (listener.server.address() as net.AddressInfo).port;
    try {
      const idle = http2.connect(`http://127.0.0.1:${port}`);
      idle.on('error', () => undefined);
      const busy = http2.connect(`http://127.0.0.1:${port}`);
      busy.on('error', () => undefined);
      const held = busy.request({ ':path': '/', ':method': 'POST' });
      held.on('error', () => undefined);
      await new Promise<void>((r) => idle.once('close', () => r()));
      expect(idle.closed || idle.destroyed).toBe(true);
      await new Promise((r) => setTimeout(r, 400));
      expect(busy.closed || busy.destroyed).toBe(false);
      held.end();
      await new Promise<void>((r) => busy.once('close', () => r()));
    } finally {
      listener.closeAllConnections();
      await listener.close();
    }
  });

  test('connections from one client address beyond the cap are closed before they are read', async () => {
    const listener = new ProxyListener({}, { maxConnectionsPerClient: 3 });
    listener.http1.on('request', (_req, res) => res.end('ok'));
    await new Promise<void>((r) => listener.server.listen(0, '127.0.0.1', r));
    const port = (listener.server.address() as net.AddressInfo).port;
    const sockets: net.Socket[] = [];
    try {
      const open = (localAddress = '127.0.0.1') => new Promise<net.Socket>((resolve) => {
        const s = net.connect({ port, host: '127.0.0.1', localAddress }, () => resolve(s));
        s.on('error', () => undefined);
        sockets.push(s);
      });
      const closedBy = (s: net.Socket) => new Promise<boolean>((resolve) => {
        s.once('close', () => resolve(true));
        setTimeout(() => resolve(false), 500);
      });
      for (let i = 0; i < 3; i++) await open();
      const fourth = await open();
      expect(await closedBy(fourth)).toBe(true);
      // Another client address still gets in, and the first three are still open.
      const other = await open('127.0.0.2');
      expect(await closedBy(other)).toBe(false);
      expect(sockets.slice(0, 3).every((s) => !s.destroyed)).toBe(true);
    } finally {
      sockets.forEach((s) => s.destroy());
      listener.closeAllConnections();
      await listener.close();
    }
  });

  test('an API server that does not answer: a new token fails fast with 503 and Retry-After instead of hanging', async () => {
    const reviewer = new ScriptedReviewer({ t: 'alice' }, ['alice create sandboxes/connect default/sb']);
    reviewer.hang = new Promise(() => undefined);
    h = await startRouter({ authorizer: new KubernetesAuthorizer(reviewer, { reviewTimeoutMs: 200 }) });
    put(h, 'sb');
    const reply = await request(h.port, '/', { 'x-sandbox-id': 'sb', 'x-sandbox-port': String(upstream.port), 'authorization': 'Bearer t' });
    expect(reply.status).toBe(503);
    expect(reply.headers['retry-after']).toBe('1');
    expect(JSON.parse(reply.body).detail).toMatch(/TokenReview: the API server did not answer within 200 ms/);
    expect(h.router.openConnections).toBe(0);
  }, 10_000);
});

describe('audience-bound tokens', () => {
  test('a token for the router\'s audience is reviewed for that audience, and must come back valid for it', async () => {
    const bound = jwt([ROUTER_AUDIENCE], 'a');
    const lying = jwt([ROUTER_AUDIENCE], 'b');
    const reviewer = new ScriptedReviewer({ [bound]: 'alice', [lying]: 'mallory', api: 'alice' }, [], { [bound]: [ROUTER_AUDIENCE], [lying]: ['https://kubernetes.default.svc'] });
    const authorizer = new KubernetesAuthorizer(reviewer);
    expect(await authorizer.authenticate({ authorization: `Bearer ${bound}` })).toMatchObject({ user: { username: 'alice' } });
    expect(reviewer.audiencesAsked.at(-1)).toEqual([ROUTER_AUDIENCE]);
    expect(await authorizer.authenticate({ authorization: `Bearer ${lying}` })).toMatchObject({ status: 401 });
    // An API token is reviewed for the API server's own audiences (empty), as before.
    expect(await authorizer.authenticate({ authorization: 'Bearer api' })).toMatchObject({ user: { username: 'alice' } });
    expect(reviewer.audiencesAsked.at(-1)).toEqual([]);
  });

  test('--auth-api-tokens=false: only router-bound tokens pass, the others are refused without a review, with the fix in the message', async () => {
    const bound = jwt(ROUTER_AUDIENCE, 'c');
    const apiToken = jwt(['https://kubernetes.default.svc'], 'd');
    const reviewer = new ScriptedReviewer({ [bound]: 'alice', [apiToken]: 'alice' }, [], { [bound]: [ROUTER_AUDIENCE] });
    const authorizer = new KubernetesAuthorizer(reviewer, { acceptApiTokens: false });
    const refused = await authorizer.authenticate({ authorization: `Bearer ${apiToken}` });
    expect(refused).toMatchObject({ status: 401, detail: expect.stringContaining('TokenRequest audiences: ["sandbox-router"]') });
    expect(reviewer.tokenReviews).toBe(0);
    expect(await authorizer.authenticate({ authorization: `Bearer ${bound}` })).toMatchObject({ user: { username: 'alice' } });
  });

  test('audiencesOf reads aud as a string or a list, and nothing from what is not a JWT', () => {
    expect(audiencesOf(jwt('x', 'e'))).toEqual(['x']);
    expect(audiencesOf(jwt(['x', 'y'], 'f'))).toEqual(['x', 'y']);
    expect(audiencesOf('opaque-token')).toEqual([]);
    expect(audiencesOf('a.!!!.c')).toEqual([]);
  });
});
