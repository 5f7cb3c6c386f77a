/**
 * What is retried and what is not, against a scripted HTTP server on 127.0.0.1 (it answers with
 * router-style errors; it is not a runtime): idempotent calls come back after 503/502/cut
 * connections within the attempt bound, `run` is sent once unless the caller opts in, and the
 * request carries the router's timeout header and the tracer sees the calls.
 */
import * as http from 'node:http';
import { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { handleFor } from './handle';
import { SandboxConnectionError, SandboxHttpError } from '../src/errors';
import { backoffMs } from '../src/retry';
import { SpanLike, TracerLike } from '../src/tracing';

interface Seen {
  readonly method: string;
  readonly url: string;
  readonly headers: http.IncomingHttpHeaders;
}

/** A server answering each request with the next scripted step (the last repeats). */
type Step = (res: http.ServerResponse, req: http.IncomingMessage) => void;

async function scripted(steps: Step[]): Promise<{ url: string; seen: Seen[]; close: () => Promise<void> }> {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    seen.push({ method: req.method!, url: req.url!, headers: req.headers });
    req.resume();
    steps[Math.min(seen.length - 1, steps.length - 1)](res, req);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) => (res: http.ServerResponse) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};
const cut = (_res: http.ServerResponse, req: http.IncomingMessage) => req.socket.destroy();

test('an idempotent read is retried after 503 and 502, and succeeds', async () => {
  const server = await scripted([json(503, { detail: 'busy' }, { 'retry-after': '0' }), json(502, { detail: 'Could not connect to the backend sandbox: sb-test' }), json(200, { exists: true })]);
  try {
    expect(await handleFor(server.url).files.exists('x')).toBe(true);
    expect(server.seen.map((s) => s.url)).toEqual(['/exists/x', '/exists/x', '/exists/x']);
  } finally {
    await server.close();
  }
});

test('retries stop at the bound and the last error is thrown, typed', async () => {
  const server = await scripted([cut]);
  try {
    const err = await handleFor(server.url, { retry: { attempts: 3, initialDelayMs: 1 } }).files.read('f').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SandboxConnectionError);
    expect(server.seen).toHaveLength(3);
  } finally {
    await server.close();
  }
});

test('run is sent once on a 502 unless the caller opts in', async () => {
  const server = await scripted([json(502, { detail: 'Could not connect to the backend sandbox: sb-test' }), json(502, { detail: 'again' }), json(200, { stdout: 'ok\n', stderr: '', exit_code: 0 })]);
  try {
    const err = await handleFor(server.url).run('echo ok').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SandboxHttpError);
    expect(err).toMatchObject({ status: 502, detail: 'Could not connect to the backend sandbox: sb-test', sandbox: 'sb-test' });
    expect(server.seen).toHaveLength(1);
    const result = await handleFor(server.url).run('echo ok', { retry: true });
    expect(result.stdout).toBe('ok\n');
    expect(server.seen).toHaveLength(3);
  } finally {
    await server.close();
  }
});

test('run is sent again after a refusal that says nothing ran (429 or 503 with Retry-After), and only then', async () => {
  const server = await scripted([
    json(429, { detail: 'Too many new tokens; retry later.' }, { 'retry-after': '0' }),
    json(503, { detail: 'Cannot check the credentials now (TokenReview: timeout); retry later.' }, { 'retry-after': '0' }),
    json(200, { stdout: 'ok\n', stderr: '', exit_code: 0 }),
  ]);
  try {
    expect((await handleFor(server.url).run('echo ok')).stdout).toBe('ok\n');
    expect(server.seen.map((x) => x.method)).toEqual(['POST', 'POST', 'POST']);
  } finally {
    await server.close();
  }
  // Negative control: a 503 without Retry-After (the sandbox may have run it) is not sent again.
  const plain = await scripted([json(503, { detail: 'Sandbox default/sb-test is not ready.' }), json(200, { stdout: 'twice\n', stderr: '', exit_code: 0 })]);
  try {
    await expect(handleFor(plain.url).run('echo once')).rejects.toMatchObject({ status: 503 });
    expect(plain.seen).toHaveLength(1);
  } finally {
    await plain.close();
  }
});

test('a streamed write is sent once even after a 429 with Retry-After: its body is spent', async () => {
  const server = await scripted([json(429, { detail: 'Too many new tokens; retry later.' }, { 'retry-after': '0' }), json(200, {})]);
  try {
    const stream = Readable.from([Buffer.from('part one, '), Buffer.from('part two')]);
    await expect(handleFor(server.url).files.write('big.bin', stream)).rejects.toMatchObject({ status: 429 });
    expect(server.seen).toHaveLength(1);
  } finally {
    await server.close();
  }
});

test('a 4xx is never retried', async () => {
  const server = await scripted([json(404, { detail: 'Sandbox default/sb-test not found.' })]);
  try {
    await expect(handleFor(server.url).files.list('')).rejects.toMatchObject({ status: 404 });
    expect(server.seen).toHaveLength(1);
  } finally {
    await server.close();
  }
});

test('through a router: routing headers as given and X-Sandbox-Timeout from the call\'s limit, a run\'s with room for a wake', async () => {
  const server = await scripted([json(200, { stdout: '', stderr: '', exit_code: 0 }), json(200, { exists: true })]);
  try {
    const sandbox = handleFor(server.url, { viaRouter: true, headers: { 'X-Sandbox-ID': 'sb-test', 'X-Sandbox-Namespace': 'team-a' } });
    await sandbox.run('true', { timeoutMs: 2500 });
    // The command's 2.5 s and the 10 s margin, and the client's requestTimeoutMs (10 s here) for a
    // wake the router takes off the forward's share: a wake must not cut the command short.
    expect(server.seen[0].headers).toMatchObject({ 'x-sandbox-id': 'sb-test', 'x-sandbox-namespace': 'team-a', 'x-sandbox-timeout': '22.5' });
    // A file call counts a wake against its own limit: no room added.
    await sandbox.files.exists('x', { timeoutMs: 4000 });
    expect(server.seen[1].headers).toMatchObject({ 'x-sandbox-timeout': '4' });
  } finally {
    await server.close();
  }
});

test('backoff doubles within the bound and honours Retry-After up to it', () => {
  const half = () => 1;
  const waits = [1, 2, 3, 4, 5, 6].map((n) => backoffMs({ initialDelayMs: 100, maxDelayMs: 1000 }, n, undefined, half));
  expect(waits).toEqual([100, 200, 400, 800, 1000, 1000]);
  expect(backoffMs({ maxDelayMs: 1000 }, 1, 0.25)).toBe(250);
  expect(backoffMs({ maxDelayMs: 1000 }, 1, 30)).toBe(1000);
});

test('a tracer sees one span per call, with the error recorded', async () => {
  const server = await scripted([json(200, { exists: false }), json(500, { message: 'boom' })]);
  const spans: Array<{ name: string; attributes: unknown; status?: { code: number }; ended: boolean }> = [];
  const tracer: TracerLike = {
    startActiveSpan: (name, options, fn) => {
      const record: (typeof spans)[number] = { name, attributes: options.attributes, ended: false };
      spans.push(record);
      const span: SpanLike = {
        setAttribute: () => span,
        recordException: () => undefined,
        setStatus: (status) => (record.status = status),
        end: () => (record.ended = true),
      };
      return fn(span);
    },
  };
  try {
    const sandbox = handleFor(server.url, { tracer });
    await sandbox.files.exists('a');
    await expect(sandbox.files.remove('a')).rejects.toMatchObject({ status: 500 });
    expect(spans).toEqual([
      { name: 'sandbox.exists', attributes: { 'sandbox.name': 'sb-test', 'http.request.method': 'GET' }, ended: true },
      { name: 'sandbox.delete', attributes: { 'sandbox.name': 'sb-test', 'http.request.method': 'DELETE' }, status: { code: 2, message: expect.stringContaining('HTTP 500') }, ended: true },
    ]);
  } finally {
    await server.close();
  }
});
