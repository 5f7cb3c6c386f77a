/**
 * A sandbox the router is waking (idle policy, resumeOnRequest): the router holds a request until
 * the sandbox serves or its bound passes, then answers 503 with Retry-After and `reason:
 * SandboxResuming`. Against scripted servers on 127.0.0.1 that answer the way the router does
 * (HTTP/1.1 and h2c gRPC): every call kind is tried again within its time, not counted against the
 * retry attempts (reads, run with JSON and NDJSON answers, a background start, gRPC Start for run
 * and pty), and what is left when the time is up is a SandboxResumingError. Negative controls: a
 * plain 503 under the same attempt bound, a resuming 503 without Retry-After (no proof nothing
 * ran), a streamed upload (its body is spent), another gRPC UNAVAILABLE.
 */
import * as http from 'node:http';
import * as http2 from 'node:http2';
import { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { handleFor } from './handle';
import { SandboxGrpcError, SandboxHttpError, SandboxResumingError, SandboxSuspendedError, httpErrorOf } from '../src/errors';
import { ProcessClient } from '../src/process-client';
import { encodeStartResponse, type StartEvent } from '../src/process-proto';
import { frame } from '../src/process-wire';

interface Seen {
  readonly method: string;
  readonly url: string;
  readonly headers: http.IncomingHttpHeaders;
}

type Answer = (req: http.IncomingMessage, res: http.ServerResponse, seen: Seen[]) => void;

/** An HTTP server answering each request with `answer`; it records what it was sent. */
async function server(answer: Answer): Promise<{ url: string; seen: Seen[]; close: () => Promise<void> }> {
  const seen: Seen[] = [];
  const srv = http.createServer((req, res) => {
    seen.push({ method: req.method!, url: req.url!, headers: req.headers });
    req.resume();
    answer(req, res, seen);
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise((resolve) => {
      srv.closeAllConnections();
      srv.close(() => resolve());
    }),
  };
}

/** The router's answer when its hold for a resume ran out. */
function resuming(res: http.ServerResponse, retryAfter: string | null = '0'): void {
  res.writeHead(503, { 'content-type': 'application/json', 'x-sandbox-reason': 'SandboxResuming', ...(retryAfter === null ? {} : { 'retry-after': retryAfter }) });
  res.end(JSON.stringify({ detail: 'Sandbox default/sb-test was suspended and is resuming; it did not serve within 60000 ms (X-Sandbox-Timeout or --resume-wait). Retry shortly.', reason: 'SandboxResuming' }));
}

function json(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** A command's NDJSON answer (this project's runtime): its start, "hi" on stdout, exit 0. */
function ndjsonRun(res: http.ServerResponse): void {
  res.writeHead(200, { 'content-type': 'application/x-ndjson' });
  res.end(['{"type":"start","id":"p1"}', '{"type":"stdout","seq":1,"data":"hi\\n"}', '{"type":"exit","seq":2,"exit_code":0,"timed_out":false}', ''].join('\n'));
}

/** Refuses the first `n` requests as the router does while waking the sandbox, then hands over to `then`. */
const wakesAfter = (n: number, then: Answer): Answer => (req, res, seen) => (seen.length <= n ? resuming(res) : then(req, res, seen));

const NO_RETRIES = { attempts: 1, initialDelayMs: 1, maxDelayMs: 5 };

async function failure(promise: Promise<unknown>): Promise<any> {
  const err = await promise.then(() => undefined, (e: unknown) => e);
  if (err === undefined) throw new Error('expected the call to fail');
  return err;
}

describe('the error', () => {
  test('503 with the router\'s reason (header or body) is a SandboxResumingError saying what to do; other answers are not', () => {
    const byHeader = httpErrorOf(503, { detail: 'resuming' }, { 'x-sandbox-reason': 'SandboxResuming' }, 'GET', '/download/a', 'sb-1');
    expect(byHeader).toBeInstanceOf(SandboxResumingError);
    expect(byHeader).toBeInstanceOf(SandboxHttpError);
    expect(byHeader).toMatchObject({ name: 'SandboxResumingError', status: 503, sandbox: 'sb-1' });
    expect(byHeader.message).toBe('sandbox sb-1 is still resuming (it was suspended while idle, and the router is waking it) and did not answer within the call\'s time: '
      + 'retry the call, or give it a longer timeoutMs (the client\'s requestTimeoutMs) (GET /download/a: HTTP 503)');
    expect(httpErrorOf(503, { detail: 'x', reason: 'SandboxResuming' }, {}, 'GET', '/a')).toBeInstanceOf(SandboxResumingError);
    // Negative controls: a plain 503, and the reason on another status.
    expect(httpErrorOf(503, { detail: 'Sandbox default/sb-1 is not ready.' }, {}, 'GET', '/a')).not.toBeInstanceOf(SandboxResumingError);
    expect(httpErrorOf(409, { detail: 'x', reason: 'SandboxResuming' }, {}, 'GET', '/a')).not.toBeInstanceOf(SandboxResumingError);
    expect(httpErrorOf(409, { detail: 'x' }, { 'x-sandbox-reason': 'SandboxSuspended' }, 'GET', '/a')).toBeInstanceOf(SandboxSuspendedError);
  });
});

describe('HTTP calls are tried again while the sandbox wakes', () => {
  let srv: Awaited<ReturnType<typeof server>> | undefined;
  afterEach(async () => srv?.close());

  test('a read: refusals past the attempt bound (1 here) are tried again, and the answer comes', async () => {
    srv = await server(wakesAfter(3, (_req, res) => json(res, 200, { exists: true })));
    expect(await handleFor(srv.url, { retry: NO_RETRIES }).files.exists('a.txt')).toBe(true);
    expect(srv.seen.map((s) => s.url)).toEqual(Array(4).fill('/exists/a.txt'));
  });

  test('the negative control: a plain 503 with Retry-After under the same bound is not tried again', async () => {
    srv = await server((_req, res) => {
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '0' });
      res.end(JSON.stringify({ detail: 'busy' }));
    });
    const err = await failure(handleFor(srv.url, { retry: NO_RETRIES }).files.exists('a.txt'));
    expect(err).not.toBeInstanceOf(SandboxResumingError);
    expect(srv.seen).toHaveLength(1);
  });

  test('run (a JSON answer, upstream\'s runtime): sent again after each refusal, nothing ran before', async () => {
    srv = await server(wakesAfter(2, (_req, res) => json(res, 200, { stdout: 'hi\n', stderr: '', exit_code: 0 })));
    const result = await handleFor(srv.url, { retry: NO_RETRIES }).run('echo hi');
    expect(result).toMatchObject({ stdout: 'hi\n', exitCode: 0 });
    expect(srv.seen.map((s) => `${s.method} ${s.url}`)).toEqual(Array(3).fill('POST /execute'));
  });

  test('run streamed (NDJSON): the output reaches the callback once, after the wake', async () => {
    srv = await server(wakesAfter(2, (_req, res) => ndjsonRun(res)));
    const chunks: string[] = [];
    const result = await handleFor(srv.url, { retry: NO_RETRIES }).run('echo hi', { onStdout: (c) => chunks.push(c) });
    expect(result).toMatchObject({ stdout: 'hi\n', exitCode: 0 });
    expect(chunks).toEqual(['hi\n']);
    expect(srv.seen.filter((s) => s.url === '/execute')).toHaveLength(3);
  });

  test('the negative control: a resuming 503 without Retry-After is no proof nothing ran: run is sent once', async () => {
    srv = await server((_req, res) => resuming(res, null));
    const err = await failure(handleFor(srv.url).run('echo hi'));
    expect(err).toBeInstanceOf(SandboxResumingError);
    expect(srv.seen).toHaveLength(1);
  });

  test('a background start: POST /processes sent again, then followed', async () => {
    srv = await server(wakesAfter(2, (req, res) => {
      if (req.method === 'POST') {
        return json(res, 200, {
          id: 'p1', pid: 42, command: 'sleep 1', background: true, status: 'running', exit_code: null, timed_out: false, signal: null, started_at: '', ended_at: null, stdin: false,
        });
      }
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.end('{"type":"process","id":"p1"}\n{"type":"exit","seq":1,"exit_code":0,"timed_out":false}\n');
    }));
    const handle = await handleFor(srv.url, { retry: NO_RETRIES }).run('sleep 1', { background: true });
    expect(handle.pid).toBe(42);
    expect((await handle.wait()).exitCode).toBe(0);
    expect(srv.seen.map((s) => `${s.method} ${s.url}`)).toEqual(['POST /processes', 'POST /processes', 'POST /processes', 'GET /processes/p1/output?after=0']);
  });

  test('the negative control: a streamed upload is sent once (its body is spent) and the refusal stands', async () => {
    srv = await server((_req, res) => resuming(res));
    const err = await failure(handleFor(srv.url).files.write('big.bin', Readable.from([Buffer.from('part one'), Buffer.from('part two')])));
    expect(err).toBeInstanceOf(SandboxResumingError);
    expect(srv.seen).toHaveLength(1);
  });

  test('within the call\'s time only: each try is told what is left of it, and then the SandboxResumingError stands', async () => {
    // As the router: each try held for its X-Sandbox-Timeout or 400 ms (its --resume-wait), whichever is shorter.
    srv = await server((req, res) => {
      const holdMs = Math.min(Number(req.headers['x-sandbox-timeout']) * 1000, 400);
      setTimeout(() => resuming(res), holdMs);
    });
    const err = await failure(handleFor(srv.url, { viaRouter: true, retry: NO_RETRIES }).files.read('a.txt', { timeoutMs: 1500 }));
    expect(err).toBeInstanceOf(SandboxResumingError);
    expect(err.message).toMatch(/^sandbox sb-test is still resuming .*retry the call, or give it a longer timeoutMs/);
    const told = srv.seen.map((s) => Number(s.headers['x-sandbox-timeout']));
    expect(told.length).toBeGreaterThanOrEqual(2);
    expect(told[0]).toBe(1.5);
    // Each later try is told less: the call's time is shared, not started again.
    for (let i = 1; i < told.length; i++) expect(told[i]).toBeLessThan(told[i - 1]);
  });
});

describe('gRPC Start is tried again while the sandbox wakes', () => {
  const GRPC = { ':status': 200, 'content-type': 'application/grpc' };
  const event = (e: StartEvent) => frame(encodeStartResponse({ event: e }));
  let h2: http2.Http2Server | undefined;
  let calls: Array<{ method: string; timeout: unknown }>;

  /** An h2c server whose Start refuses the first `refusals` calls with `refusal`, then runs "hi". */
  async function grpcServer(refusals: number, refusal: http2.OutgoingHttpHeaders): Promise<string> {
    calls = [];
    h2 = http2.createServer();
    h2.on('stream', (stream, headers) => {
      calls.push({ method: String(headers[':path']).split('/').pop()!, timeout: headers['x-sandbox-timeout'] });
      stream.on('error', () => undefined);
      stream.resume();
      if (calls.length <= refusals) return stream.respond({ ...GRPC, ...refusal }, { endStream: true });
      stream.respond(GRPC, { waitForTrailers: true });
      stream.write(event({ init: { processId: 7 } }));
      stream.write(event({ stdout: Buffer.from('hi\n') }));
      stream.write(event({ exit: { exitCode: 0 } }));
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      stream.end();
    });
    await new Promise<void>((resolve) => h2!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(h2.address() as AddressInfo).port}`;
  }
  afterEach(async () => {
    await new Promise((resolve) => h2?.close(resolve));
    h2 = undefined;
  });

  const WAKING = { 'grpc-status': '14', 'grpc-message': 'Sandbox default/sb-test was suspended and is resuming', 'x-sandbox-reason': 'SandboxResuming', 'retry-after': '0' };
  const clientFor = (url: string) => new ProcessClient(async () => ({ baseUrl: url, headers: { 'X-Sandbox-ID': 'sb-test' }, viaRouter: true }), 'sb-test', undefined, undefined, 10_000);

  test('run: the refusals (UNAVAILABLE, X-Sandbox-Reason: SandboxResuming) are sent again; each Start tells the router how long it may hold it', async () => {
    const url = await grpcServer(2, WAKING);
    const result = await clientFor(url).run({ command: ['/bin/sh', '-c', 'echo hi'] }, { timeoutMs: 5_000 });
    expect(result).toEqual({ stdout: 'hi\n', stderr: '', exitCode: 0, timedOut: false });
    expect(calls.map((c) => c.method)).toEqual(['Start', 'Start', 'Start']);
    for (const c of calls) expect(Number(c.timeout)).toBeGreaterThan(0);
    expect(Number(calls[0].timeout)).toBeLessThanOrEqual(10);
  });

  test('start (a pty\'s): tried again until the process starts', async () => {
    const url = await grpcServer(1, WAKING);
    const live = await clientFor(url).start({ command: ['/bin/sh'] }, () => undefined);
    expect(live.processId).toBe(7);
    expect(await live.exited).toBe(0);
    expect(calls.map((c) => c.method)).toEqual(['Start', 'Start']);
  });

  test('when the wake\'s time is up, the SandboxResumingError stands', async () => {
    const url = await grpcServer(1_000_000, WAKING);
    // 1.5 s for the wake: tried again (at most every 100 ms) until less than a second would be left.
    const client = new ProcessClient(async () => ({ baseUrl: url, headers: {}, viaRouter: true }), 'sb-test', undefined, undefined, 1_500);
    const err = await failure(client.run({ command: ['true'] }, { timeoutMs: 5_000 }));
    expect(err).toBeInstanceOf(SandboxResumingError);
    expect(err).toMatchObject({ status: 503, body: { reason: 'SandboxResuming' } });
    expect(calls.length).toBeGreaterThanOrEqual(2);
  });

  test('the negative control: another UNAVAILABLE is a SandboxGrpcError, Start sent once', async () => {
    const url = await grpcServer(1, { 'grpc-status': '14', 'grpc-message': 'Sandbox default/sb-test is not ready.', 'retry-after': '0' });
    const err = await failure(clientFor(url).run({ command: ['true'] }, { timeoutMs: 5_000 }));
    expect(err).toBeInstanceOf(SandboxGrpcError);
    expect(err).not.toBeInstanceOf(SandboxResumingError);
    expect(calls).toHaveLength(1);
  });
});
