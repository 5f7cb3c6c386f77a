/**
 * A call on a suspended sandbox fails at once with a SandboxSuspendedError and is not sent again:
 * the real router (in this process, its caches filled by hand) in front of the real runtime, over
 * HTTP (run, files) and gRPC (run with grpcPort). The control: a sandbox that is not ready (503, no
 * Retry-After) is tried again by the same idempotent call, so the request count would see a retry.
 */
import { handleFor, runtimeFixture } from './handle';
import { type Harness, putSandbox, recordRequests, routeTo, startLocalRouter } from './router-in-process';
import { freePort } from './runtime-process';
import { SandboxHttpError, SandboxSuspendedError } from '../src/errors';

const fixture = runtimeFixture(async () => ['--grpc-port', String(await freePort())]);
let h: Harness;
let seen: string[];

beforeEach(async () => {
  h = await startLocalRouter();
  seen = recordRequests(h);
});
afterEach(async () => h.close());

const runtimePort = () => new URL(fixture().runtime.url).port;
const grpcPort = () => new URL(fixture().runtime.grpcUrl!).port;
const viaRouter = (name: string) => handleFor(`http://127.0.0.1:${h.port}`, {
  viaRouter: true,
  headers: routeTo(name, runtimePort()),
  retry: { attempts: 4, initialDelayMs: 1, maxDelayMs: 5 },
});
/** The gRPC client's endpoint is the router with the routing headers of the runtime's HTTP port: point them at the gRPC port. */
const viaRouterGrpc = (name: string) => handleFor(`http://127.0.0.1:${h.port}`, {
  viaRouter: true,
  headers: routeTo(name, grpcPort()),
  grpcUrl: `http://127.0.0.1:${h.port}`,
});

async function failure(promise: Promise<unknown>): Promise<any> {
  const err = await promise.then(() => undefined, (e: unknown) => e);
  if (err === undefined) throw new Error('expected the call to fail');
  return err;
}

test('the positive control: a running sandbox answers through the router, over HTTP and gRPC', async () => {
  putSandbox(h, 'awake');
  expect((await viaRouter('awake').run('echo hi')).stdout).toBe('hi\n');
  expect((await viaRouterGrpc('awake').run('echo hi')).stdout).toBe('hi\n');
});

test.each([
  ['files.read', (name: string) => viaRouter(name).files.read('a.txt'), 'GET /download/a.txt'],
  ['files.exists', (name: string) => viaRouter(name).files.exists('a.txt'), 'GET /exists/a.txt'],
  ['run', (name: string) => viaRouter(name).run('echo hi', { retry: true }), 'POST /execute'],
])('%s on a suspended sandbox: SandboxSuspendedError naming it, sent once', async (_what, call, request) => {
  putSandbox(h, 'asleep', { suspended: true });
  const err = await failure(call('asleep'));
  expect(err).toBeInstanceOf(SandboxSuspendedError);
  expect(err).toBeInstanceOf(SandboxHttpError);
  expect(err).toMatchObject({ name: 'SandboxSuspendedError', status: 409, sandbox: 'sb-test', body: { reason: 'SandboxSuspended' } });
  // The message names both fixes: resume it, or let the router wake it (an idle policy).
  expect(err.message).toMatch(/^sandbox sb-test is suspended: resume it with sandbox\.resume\(\) \(or client\.connect\(\{ claim, resume: true \}\)\)/);
  expect(err.message).toMatch(/idlePolicy: \{ suspendAfter, resumeOnRequest: true \}, so the router wakes it on the next request/);
  expect(seen).toEqual([request]);
});

test('run over gRPC on a suspended sandbox: SandboxSuspendedError too, one Start call', async () => {
  putSandbox(h, 'asleep', { suspended: true });
  const err = await failure(viaRouterGrpc('asleep').run('echo hi'));
  expect(err).toBeInstanceOf(SandboxSuspendedError);
  expect(err).toMatchObject({ status: 409, body: { reason: 'SandboxSuspended' } });
  expect(seen).toEqual(['POST /process.v1.ProcessService/Start']);
});

test('the control: a sandbox that is not ready (503) is tried again by the same call, so a retry would have been counted', async () => {
  putSandbox(h, 'starting', { ready: false });
  const err = await failure(viaRouter('starting').files.read('a.txt'));
  expect(err).not.toBeInstanceOf(SandboxSuspendedError);
  expect(err).toMatchObject({ status: 503 });
  expect(seen).toEqual(Array(4).fill('GET /download/a.txt'));
});

test('a 409 of the runtime\'s own (a directory not empty) is no suspension', async () => {
  putSandbox(h, 'awake');
  const sandbox = viaRouter('awake');
  await sandbox.files.write('full/x.txt', 'x');
  const err = await failure(sandbox.files.remove('full'));
  expect(err).toBeInstanceOf(SandboxHttpError);
  expect(err).not.toBeInstanceOf(SandboxSuspendedError);
  expect(err.status).toBe(409);
});
