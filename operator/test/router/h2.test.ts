/**
 * HTTP/2 through the router: gRPC to our runtime's ProcessService on 127.64.0.7, router refusals
 * as grpc-status, plain HTTP/2 requests, and HTTP/1.1 on the same port.
 */
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import * as http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { echoHandler, type Harness, pod, request, sandbox, startRouter, startUpstream, UPSTREAM_IP } from './harness';
import { StaticTokenAuthorizer } from '../../src/router/auth';
import { SandboxdServer } from '../../src/sandboxd/server';
import { execute, firstEvent, type ProcessClient, processClient, processGone, start, stdoutOf, writtenText } from '../sandboxd/process-client';

let workspace: string;
let runtime: SandboxdServer;
let grpcPort: number;

beforeAll(async () => {
  workspace = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'router-h2-')));
  runtime = new SandboxdServer({
    workspace, port: 0, listenAddress: UPSTREAM_IP, grpcPort: 0, execTimeoutMs: 60_000, maxOutputBytes: 1024, allowRoot: true,
  });
  await runtime.start();
  grpcPort = runtime.grpcAddress!.port;
});

afterAll(async () => {
  await runtime.drain(1000);
  rmSync(workspace, { recursive: true, force: true });
});

const sh = (script: string) => ({ config: { command: ['/bin/sh', '-c', script], envVars: {} } });

/** Routing metadata for sandbox `id` on the runtime's gRPC port. */
const to = (id: string, extra: Record<string, string> = {}) => ({ metadata: { 'x-sandbox-id': id, 'x-sandbox-port': String(grpcPort), ...extra } });

function withSandbox(h: Harness, name: string, opts: { suspended?: boolean } = {}): void {
  const sb = sandbox(name, opts);
  h.sandboxes.put(sb);
  h.pods.put(pod(sb, [UPSTREAM_IP]));
}

interface H2Reply { headers: http2.IncomingHttpHeaders; trailers: http2.IncomingHttpHeaders; body: string }

/** One plain HTTP/2 request over its own h2c connection. */
function h2request(port: number, headers: http2.OutgoingHttpHeaders, body?: string): Promise<H2Reply> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    session.on('error', reject);
    const req = session.request({ ':method': body === undefined ? 'GET' : 'POST', ':path': '/', ...headers });
    let replyHeaders: http2.IncomingHttpHeaders = {};
    let trailers: http2.IncomingHttpHeaders = {};
    let text = '';
    req.on('response', (h) => (replyHeaders = h));
    req.on('trailers', (t) => (trailers = t));
    req.setEncoding('utf8');
    req.on('data', (c: string) => (text += c));
    req.on('end', () => {
      session.close();
      resolve({ headers: replyHeaders, trailers, body: text });
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('gRPC through the router', () => {
  let h: Harness;
  let client: ProcessClient;

  beforeEach(async () => {
    h = await startRouter();
    withSandbox(h, 'sb');
    client = processClient(`127.0.0.1:${h.port}`);
  });

  afterEach(async () => {
    client.close();
    await h.close();
  });

  test('Execute reaches the sandbox over the guarded dial; one pooled session serves many calls', async () => {
    const res = await execute(client, sh('echo hello; exit 7'), to('sb'));
    expect(res.exitCode).toBe(7);
    expect(res.stdout.toString()).toBe('hello\n');
    expect((await execute(client, sh('echo again'), to('sb'))).stdout.toString()).toBe('again\n');
    expect(h.dialed).toEqual([`${UPSTREAM_IP}:${grpcPort}`]);
  });

  test('a Start stream arrives in order, init to exit, with its trailers (OK)', async () => {
    const { events, done } = start(client, sh('head -c 10000 /dev/zero; echo err >&2'), to('sb'));
    expect((await done).code).toBe(grpc.status.OK);
    expect(events[0].event).toEqual({ init: { processId: expect.any(Number) } });
    expect(events[events.length - 1].event).toEqual({ exit: { exitCode: 0 } });
    expect(stdoutOf(events)).toHaveLength(10000);
  });

  test('the router\'s refusals are grpc-status codes with the JSON errors\' text', async () => {
    await expect(execute(client, sh('true'), to('nope'))).rejects.toMatchObject({ code: grpc.status.NOT_FOUND, details: 'Sandbox default/nope not found.' });
    withSandbox(h, 'sus', { suspended: true });
    const suspended = await execute(client, sh('true'), to('sus')).catch((err: grpc.ServiceError) => err);
    expect(suspended).toMatchObject({ code: grpc.status.FAILED_PRECONDITION, details: 'Sandbox default/sus is suspended; resume it (spec.operatingMode: Running) to use it.' });
    // The reason rides along as a header of the trailers-only answer (a gRPC refusal has no body).
    expect((suspended as grpc.ServiceError).metadata.get('x-sandbox-reason')).toEqual(['SandboxSuspended']);
    await expect(execute(client, sh('true'), { metadata: {} })).rejects.toMatchObject({ code: grpc.status.INVALID_ARGUMENT, details: 'X-Sandbox-ID header is required.' });
    const { done } = start(client, sh('true'), to('nope'));
    expect(await done).toMatchObject({ code: grpc.status.NOT_FOUND, details: 'Sandbox default/nope not found.' });
    expect(h.dialed).toEqual([]);
  });

  test('an unreachable sandbox is UNAVAILABLE', async () => {
    const err = await execute(client, sh('true'), to('sb', { 'x-sandbox-port': '1' })).catch((e: grpc.ServiceError) => e);
    expect(err).toMatchObject({ code: grpc.status.UNAVAILABLE, details: 'Could not connect to the backend sandbox: sb' });
    expect((err as grpc.ServiceError).metadata.get('x-sandbox-reason')).toEqual(['UpstreamUnreachable']);
    expect(await h.metrics.registry.metrics()).toMatch(/sandbox_router_upstream_errors_total\{sandbox_namespace="default",reason="dial"\} 1/);
  });

  test('cancelling a call through the router kills the command', async () => {
    const pidFile = path.join(workspace, 'cancel.pid');
    const { call, first, done } = firstEvent(client, sh(`echo $$ > ${pidFile}; exec sleep 60`), to('sb'));
    await first;
    const pid = Number(await writtenText(pidFile));
    call.cancel();
    expect((await done).code).toBe(grpc.status.CANCELLED);
    await processGone(pid);
    expect(runtime.running).toBe(0);
  });

  test('the address guard and the per-sandbox limit apply to HTTP/2 streams too', async () => {
    const outside = sandbox('outside');
    h.sandboxes.put(outside);
    h.pods.put(pod(outside, ['10.0.0.5']));
    await expect(execute(client, sh('true'), to('outside'))).rejects.toMatchObject({ code: grpc.status.UNAVAILABLE, details: 'Could not connect to the backend sandbox: outside' });
    expect(h.dialed).toEqual([]);
    const limited = await startRouter({ maxConnectionsPerSandbox: 1 });
    withSandbox(limited, 'sb');
    const c = processClient(`127.0.0.1:${limited.port}`);
    try {
      const open = firstEvent(c, { config: { command: ['cat'], envVars: {} } }, to('sb'));
      await open.first;
      await expect(execute(c, sh('true'), to('sb'))).rejects.toMatchObject({
        code: grpc.status.RESOURCE_EXHAUSTED, details: 'Too many concurrent connections to sandbox default/sb.',
      });
      open.call.cancel();
      await open.done;
    } finally {
      c.close();
      await limited.close();
    }
  });

  test('metrics count HTTP/2 requests', async () => {
    await execute(client, sh('true'), to('sb'));
    const text = await h.metrics.registry.metrics();
    expect(text).toMatch(/sandbox_router_requests_total\{method="POST",code="200",sandbox_namespace="default"\} 1/);
    expect(text).toMatch(/sandbox_router_inflight_requests 0/);
  });
});

test('the token authorizer: no token is UNAUTHENTICATED; the right one passes and is not forwarded', async () => {
  const h = await startRouter({ authorizer: new StaticTokenAuthorizer('router-secret') });
  withSandbox(h, 'sb');
  // The runtime behind requires its own token: the router's must not reach it.
  const guarded = new SandboxdServer({
    workspace, port: 0, listenAddress: UPSTREAM_IP, grpcPort: 0, token: 'router-secret', execTimeoutMs: 60_000, maxOutputBytes: 1024, allowRoot: true,
  });
  await guarded.start();
  const client = processClient(`127.0.0.1:${h.port}`);
  const route = { 'x-sandbox-id': 'sb', 'x-sandbox-port': String(guarded.grpcAddress!.port) };
  try {
    await expect(execute(client, sh('true'), { metadata: route })).rejects.toMatchObject({ code: grpc.status.UNAUTHENTICATED, details: 'unauthenticated' });
    await expect(execute(client, sh('true'), { metadata: { ...route, authorization: 'Bearer wrong' } })).rejects.toMatchObject({ code: grpc.status.UNAUTHENTICATED });
    // Admitted by the router, refused by the runtime: proof that the Authorization header was stripped.
    await expect(execute(client, sh('true'), { metadata: { ...route, authorization: 'Bearer router-secret' } })).rejects.toMatchObject({
      code: grpc.status.UNAUTHENTICATED, details: expect.stringContaining('authorization metadata'),
    });
    expect(h.dialed).toHaveLength(1);
  } finally {
    client.close();
    await h.close();
    await guarded.drain(1000);
  }
});

test('an authorizer\'s 403 is PERMISSION_DENIED', async () => {
  const h = await startRouter({ authorizer: { authenticate: async () => ({ key: 'k', user: {} }), authorize: async () => ({ allowed: false, status: 403, detail: 'forbidden' }) } });
  withSandbox(h, 'sb');
  const client = processClient(`127.0.0.1:${h.port}`);
  try {
    await expect(execute(client, sh('true'), to('sb'))).rejects.toMatchObject({ code: grpc.status.PERMISSION_DENIED, details: 'forbidden' });
    expect(h.dialed).toEqual([]);
  } finally {
    client.close();
    await h.close();
  }
});

test('a gRPC stream outlives a short --proxy-timeout', async () => {
  const h = await startRouter({ proxyTimeoutMs: 200 });
  withSandbox(h, 'sb');
  const client = processClient(`127.0.0.1:${h.port}`);
  try {
    const { events, done } = start(client, sh('sleep 1; echo finished'), to('sb'));
    expect((await done).code).toBe(grpc.status.OK);
    expect(stdoutOf(events)).toBe('finished\n');
    expect(events[events.length - 1].event).toEqual({ exit: { exitCode: 0 } });
  } finally {
    client.close();
    await h.close();
  }
});

describe('plain HTTP/2 and HTTP/1.1 on the same port', () => {
  let h: Harness;
  let h2up: http2.Http2Server;
  let h2port: number;

  beforeEach(async () => {
    h = await startRouter({ proxyTimeoutMs: 500 });
    withSandbox(h, 'sb');
    // An h2c upstream that answers with the headers it received, and a trailer.
    h2up = http2.createServer();
    h2up.on('stream', (stream, headers) => {
      if (headers[':path'] === '/hang') return;
      stream.respond({ ':status': 201, 'content-type': 'application/json', 'x-upstream': 'h2' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'x-trailer': 'yes' }));
      stream.end(JSON.stringify(headers));
    });
    await new Promise<void>((resolve) => h2up.listen(0, UPSTREAM_IP, resolve));
    h2port = (h2up.address() as AddressInfo).port;
  });

  afterEach(async () => {
    await h.close();
    await new Promise((resolve) => h2up.close(resolve));
  });

  test('headers: authorization, x-sandbox-* and hop-by-hop removed, te: trailers kept, forwarding headers set; trailers come back', async () => {
    const reply = await h2request(h.port, {
      'x-sandbox-id': 'sb',
      'x-sandbox-port': String(h2port),
      'authorization': 'Bearer x',
      'cookie': 'c=1',
      'te': 'trailers',
      'x-keep': 'kept',
      'x-request-id': 'rid-h2',
      ':path': '/p%2Fq?x=1',
    });
    expect(reply.headers[':status']).toBe(201);
    expect(reply.headers['x-upstream']).toBe('h2');
    expect(reply.headers['x-request-id']).toBe('rid-h2');
    expect(reply.trailers['x-trailer']).toBe('yes');
    const seen = JSON.parse(reply.body);
    for (const gone of ['authorization', 'cookie', 'x-sandbox-id', 'x-sandbox-port']) expect(seen[gone]).toBeUndefined();
    expect(seen).toMatchObject({
      ':path': '/p%2Fq?x=1',
      ':authority': `${UPSTREAM_IP}:${h2port}`,
      'te': 'trailers',
      'x-keep': 'kept',
      'x-forwarded-for': '127.0.0.1',
      'x-forwarded-proto': 'http',
      'x-request-id': 'rid-h2',
    });
  });

  test('router errors are the same JSON as over HTTP/1.1; a plain request still gets --proxy-timeout (504)', async () => {
    const missing = await h2request(h.port, { 'x-sandbox-id': 'nope' });
    expect(missing.headers[':status']).toBe(404);
    expect(missing.body).toBe(JSON.stringify({ detail: 'Sandbox default/nope not found.' }));
    const hung = await h2request(h.port, { 'x-sandbox-id': 'sb', 'x-sandbox-port': String(h2port), ':path': '/hang' });
    expect(hung.headers[':status']).toBe(504);
    expect(hung.body).toBe(JSON.stringify({ detail: 'Timed out waiting for the backend sandbox: sb' }));
    const health = await h2request(h.port, { ':path': '/healthz' });
    expect(health.body).toBe('{"status":"ok"}');
  });

  test('HTTP/1.1 is still served on the proxy port', async () => {
    const upstream = await startUpstream(echoHandler);
    try {
      const reply = await request(h.port, '/one', { 'x-sandbox-id': 'sb', 'x-sandbox-port': String(upstream.port) });
      expect(reply.status).toBe(200);
      expect(JSON.parse(reply.body).url).toBe('/one');
      expect((await h2request(h.port, { 'x-sandbox-id': 'sb', 'x-sandbox-port': String(h2port) })).headers[':status']).toBe(201);
    } finally {
      await upstream.close();
    }
  });
});
