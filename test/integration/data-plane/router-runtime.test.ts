/**
 * The real path end to end: client → router (the bundle's `router` command as a local process,
 * --auth=none) → the claimed Sandbox's Pod IP → the operator's runtime that the pod runner started
 * from a SandboxTemplate. Upstream's legacy runtime API (execute, files), our additions (shell
 * mode, timeouts, output caps, delete), confinement, sandboxd's gRPC ProcessService through the
 * router over h2c (which upstream's HTTP/1.1 router cannot carry), a WebSocket through
 * --path-routing-prefix that outlives --proxy-timeout, and suspend/resume seen through the router.
 */
import * as grpc from '@grpc/grpc-js';
import { DataPlane, ECHO_PORT, MAX_OUTPUT_BYTES, multipartFile, send } from './data-plane';
import { type ExecuteRequest, type ExecuteResponse, PROCESS_SERVICE_DEFINITION, type StartRequest, type StartResponse } from './process-proto';
import { WebSocketClient } from './ws-client';
import { waitFor } from '../../../tools/control-plane/kube';
import { sleep } from '../../../tools/control-plane/processes';
import { OperatorProcess } from '../../../tools/shared/operator-process';

const PROXY_TIMEOUT_SECONDS = 2;
const GRPC_PORT = 9090;
let dp: DataPlane;
let router: OperatorProcess;
let port: number;
let sandbox: string;

beforeAll(async () => {
  dp = await DataPlane.start('dp-runtime', 1, { runtimeArgs: [`--grpc-port=${GRPC_PORT}`] });
  sandbox = dp.sandboxes[0];
  router = await OperatorProcess.startRouter({
    kubeconfig: dp.kube.kubeconfig,
    args: ['--auth=none', '--allowed-pod-cidrs=127.64.0.0/12', '--path-routing-prefix=/router', `--proxy-timeout=${PROXY_TIMEOUT_SECONDS}s`],
  });
  port = await router.port('proxy');
}, 180_000);

afterAll(async () => {
  await router?.stop();
  await dp?.stop();
});

function headers(extra: Record<string, string> = {}): Record<string, string> {
  return { 'X-Sandbox-ID': sandbox, 'X-Sandbox-Namespace': dp.ns, ...extra };
}

async function execute(body: object): Promise<any> {
  const res = await send(port, '/execute', { method: 'POST', headers: headers({ 'content-type': 'application/json' }), body: JSON.stringify(body) });
  expect({ status: res.status, body: res.body.slice(0, 200) }).toMatchObject({ status: 200 });
  return JSON.parse(res.body);
}

describe('/execute through the router', () => {
  test('argv mode runs without a shell; shell mode runs /bin/sh -c', async () => {
    expect(await execute({ command: 'echo "hello  world"' })).toEqual({ stdout: 'hello  world\n', stderr: '', exit_code: 0, timed_out: false });
    const argv = await execute({ command: 'echo a | tr a b' });
    expect(argv.stdout).toBe('a | tr a b\n');
    expect(argv.stderr).toMatch(/without a shell/);
    expect((await execute({ command: 'echo a | tr a b', shell: true })).stdout).toBe('b\n');
  });

  test('a non-zero exit code is reported as such, with stderr', async () => {
    expect(await execute({ command: 'echo oops >&2; exit 3', shell: true })).toEqual({ stdout: '', stderr: 'oops\n', exit_code: 3, timed_out: false });
  });

  test('timeout_seconds kills the command: timed_out, exit code 124', async () => {
    const res = await execute({ command: 'sleep 30', timeout_seconds: 0.5 });
    expect(res).toMatchObject({ timed_out: true, exit_code: 124 });
  });

  test('output beyond --max-output-bytes is cut with a marker saying how much was dropped', async () => {
    const total = MAX_OUTPUT_BYTES + 100_000;
    const res = await execute({ command: `head -c ${total} /dev/zero | tr '\\0' x`, shell: true });
    expect(res.exit_code).toBe(0);
    expect(res.stdout.startsWith('x'.repeat(MAX_OUTPUT_BYTES))).toBe(true);
    expect(res.stdout.slice(MAX_OUTPUT_BYTES)).toBe(`\n[output truncated: ${total - MAX_OUTPUT_BYTES} more bytes not shown]\n`);
  });
});

describe('files through the router', () => {
  test('upload, download, list, exists and delete with nested paths', async () => {
    const upload = multipartFile('deep/er/notes.txt', 'hello from the test');
    const up = await send(port, '/upload', { method: 'POST', headers: headers({ 'content-type': upload.contentType }), body: upload.body });
    expect(up.status).toBe(200);
    const down = await send(port, '/download/deep/er/notes.txt', { headers: headers() });
    expect({ status: down.status, body: down.body }).toEqual({ status: 200, body: 'hello from the test' });
    // The SDK escapes every "/" in path parameters.
    expect((await send(port, '/download/deep%2Fer%2Fnotes.txt', { headers: headers() })).body).toBe('hello from the test');
    const list = await send(port, '/list/deep/er', { headers: headers() });
    expect(JSON.parse(list.body)).toEqual([expect.objectContaining({ name: 'notes.txt', size: 19, type: 'file' })]);
    expect(JSON.parse((await send(port, '/list/deep', { headers: headers() })).body)).toEqual([expect.objectContaining({ name: 'er', type: 'directory' })]);
    expect(JSON.parse((await send(port, '/exists/deep/er/notes.txt', { headers: headers() })).body)).toEqual({ path: 'deep/er/notes.txt', exists: true });
    const del = await send(port, '/delete/deep/er/notes.txt', { method: 'DELETE', headers: headers() });
    expect(del.status).toBe(200);
    expect(JSON.parse((await send(port, '/exists/deep/er/notes.txt', { headers: headers() })).body).exists).toBe(false);
    expect((await send(port, '/download/deep/er/notes.txt', { headers: headers() })).status).toBe(404);
  });

  test('paths that leave the workspace are refused with 403', async () => {
    const denied = { status: 403, body: expect.stringMatching(/Access denied/) };
    const escape = multipartFile('../escaped.txt', 'x');
    expect(await send(port, '/upload', { method: 'POST', headers: headers({ 'content-type': escape.contentType }), body: escape.body })).toMatchObject(denied);
    expect(await send(port, '/download/..%2F..%2F..%2Fetc%2Fpasswd', { headers: headers() })).toMatchObject(denied);
    expect(await execute({ command: 'ln -s / outside' })).toMatchObject({ exit_code: 0 });
    expect(await send(port, '/list/outside', { headers: headers() })).toMatchObject(denied);
    expect(await send(port, '/download/outside%2Fetc%2Fhostname', { headers: headers() })).toMatchObject(denied);
  });
});

describe('sandboxd gRPC ProcessService through the router (h2c)', () => {
  const ProcessClient = grpc.makeGenericClientConstructor(PROCESS_SERVICE_DEFINITION, 'ProcessService');
  let client: InstanceType<typeof ProcessClient>;
  const metadata = (id = sandbox) => {
    const md = new grpc.Metadata();
    md.set('x-sandbox-id', id);
    md.set('x-sandbox-namespace', dp.ns);
    md.set('x-sandbox-port', String(GRPC_PORT));
    return md;
  };
  const sh = (script: string): ExecuteRequest & StartRequest => ({ config: { command: ['/bin/sh', '-c', script], envVars: {} } });
  const executeGrpc = (req: ExecuteRequest, md = metadata()) => new Promise<ExecuteResponse>((resolve, reject) => {
    (client as any).Execute(req, md, (err: grpc.ServiceError | null, res: ExecuteResponse) => (err ? reject(err) : resolve(res)));
  });

  beforeAll(() => {
    client = new ProcessClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  });
  afterAll(() => client?.close());

  test('Execute: exit code and output of a command in the claimed sandbox', async () => {
    const res = await executeGrpc(sh('printf out; printf err >&2; exit 3'));
    expect({ exitCode: res.exitCode, stdout: res.stdout.toString(), stderr: res.stderr.toString() }).toEqual({ exitCode: 3, stdout: 'out', stderr: 'err' });
  });

  test('Start: a stream of init, output in order, then exit', async () => {
    const events: StartResponse[] = [];
    const status = await new Promise<grpc.StatusObject>((resolve) => {
      const call = (client as any).Start(sh('for i in 1 2 3; do echo line $i; sleep 0.2; done'), metadata());
      call.on('data', (e: StartResponse) => events.push(e));
      call.on('error', () => undefined);
      call.on('status', resolve);
    });
    expect(status.code).toBe(grpc.status.OK);
    const kinds = events.map((e) => Object.keys(e.event ?? {})[0]);
    expect(kinds[0]).toBe('init');
    expect(kinds[kinds.length - 1]).toBe('exit');
    const stdout = Buffer.concat(events.flatMap((e) => (e.event && 'stdout' in e.event ? [e.event.stdout] : []))).toString();
    expect(stdout).toBe('line 1\nline 2\nline 3\n');
  });

  test('the router\'s refusals arrive as gRPC statuses: an unknown sandbox is NOT_FOUND', async () => {
    await expect(executeGrpc(sh('true'), metadata('no-such-sandbox'))).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });
  });
});

test(`a WebSocket through --path-routing-prefix outlives --proxy-timeout=${PROXY_TIMEOUT_SECONDS}s`, async () => {
  const ws = await WebSocketClient.connect(port, `/router/${dp.ns}/${sandbox}/${ECHO_PORT}/socket`);
  try {
    ws.send('first');
    expect(await ws.next()).toBe('first');
    // Held open past the proxy timeout on purpose: plain requests would have been cut by now.
    await sleep(PROXY_TIMEOUT_SECONDS * 1000 + 1000);
    ws.send('still here');
    expect(await ws.next()).toBe('still here');
  } finally {
    ws.close();
  }
});

test('a suspended Sandbox gets a clear 409 from the router at once (reason SandboxSuspended, no ready-wait); resumed, it serves again', async () => {
  await dp.api.call('PATCH', dp.sandboxPath(sandbox), { spec: { operatingMode: 'Suspended' } });
  const call = () => send(port, '/execute', { method: 'POST', headers: headers({ 'content-type': 'application/json' }), body: '{"command":"true"}' });
  const refused = await waitFor(async () => {
    const res = await call();
    return res.status === 409 ? res : undefined;
  }, 30_000, 'the router to refuse the suspended sandbox');
  const suspended = { detail: `Sandbox ${dp.ns}/${sandbox} is suspended; resume it (spec.operatingMode: Running) to use it.`, reason: 'SandboxSuspended' };
  expect(JSON.parse(refused.body)).toEqual(suspended);
  expect(refused.headers['x-sandbox-reason']).toBe('SandboxSuspended');
  // Once the router's cache shows it suspended, a request is refused without waiting for --ready-wait
  // (the waits the polling above counted while the Pod went away stay as they were).
  const waits = async () => (await router.metrics()).sum('sandbox_router_ready_waits_total', { sandbox_namespace: dp.ns });
  const waitedBefore = await waits();
  const again = await call();
  expect({ status: again.status, body: JSON.parse(again.body) }).toEqual({ status: 409, body: suspended });
  expect(await waits()).toBe(waitedBefore);

  await dp.api.call('PATCH', dp.sandboxPath(sandbox), { spec: { operatingMode: 'Running' } });
  await dp.pod(sandbox);
  const answered = await waitFor(async () => {
    const res = await send(port, '/execute', { method: 'POST', headers: headers({ 'content-type': 'application/json' }), body: '{"command":"echo back"}' });
    return res.status === 200 ? res : undefined;
  }, 60_000, 'the resumed sandbox to answer through the router');
  expect(JSON.parse(answered.body).stdout).toBe('back\n');
});
