/**
 * The router passes a streamed answer on as it comes, without buffering it, over HTTP/1.1 (the
 * runtime's NDJSON `/execute`, docs/runtime-processes.md) and over h2c (a gRPC `Start` stream of
 * sandboxd's ProcessService; the runtime's legacy port speaks HTTP/1.1 only, so h2 reaches it as
 * gRPC). Shown by events, not clocks: the first line of a command reaches the client while the
 * runtime still reports the command running, or while the command waits for a file the client
 * creates only after it has that line. A dropped stream leaves the command running, and the client
 * picks up where it left off through the router.
 */
import * as grpc from '@grpc/grpc-js';
import { DataPlane, send } from './data-plane';
import { NdjsonLines } from './ndjson-lines';
import { PROCESS_SERVICE_DEFINITION, type StartResponse } from './process-proto';
import { OperatorProcess } from '../../../tools/shared/operator-process';

const GRPC_PORT = 9090;
let dp: DataPlane;
let router: OperatorProcess;
let port: number;
let sandbox: string;

beforeAll(async () => {
  dp = await DataPlane.start('dp-stream', 1, { runtimeArgs: [`--grpc-port=${GRPC_PORT}`] });
  sandbox = dp.sandboxes[0];
  router = await OperatorProcess.startRouter({ kubeconfig: dp.kube.kubeconfig, args: ['--auth=none', '--allowed-pod-cidrs=127.64.0.0/12'] });
  port = await router.port('proxy');
}, 180_000);

afterAll(async () => {
  await router?.stop();
  await dp?.stop();
});

function headers(extra: Record<string, string> = {}): Record<string, string> {
  return { 'X-Sandbox-ID': sandbox, 'X-Sandbox-Namespace': dp.ns, ...extra };
}

/** An NDJSON exchange through the router with the sandbox's routing headers. */
const openStream = (method: string, urlPath: string, body?: object) => NdjsonLines.open(port, method, urlPath, body, headers());

async function processStatus(id: string): Promise<string> {
  const reply = await send(port, `/processes/${id}`, { headers: headers() });
  expect(reply.status).toBe(200);
  return JSON.parse(reply.body).status;
}

describe('an NDJSON /execute through the router (HTTP/1.1)', () => {
  test('the first line arrives while the command still runs; the rest follow in order, the exit last', async () => {
    const stream = await openStream('POST', '/execute', { command: 'for i in 1 2 3; do echo $i; sleep 1; done', shell: true });
    expect(stream.res.statusCode).toBe(200);
    expect(stream.res.headers['content-type']).toBe('application/x-ndjson');
    const start = await stream.next();
    expect(start).toMatchObject({ type: 'start', id: expect.stringMatching(/^p-/) });
    expect(await stream.next()).toEqual({ type: 'stdout', seq: 1, data: '1\n' });
    // A router that buffered the answer would hand over the first line only once the command had ended.
    expect(await processStatus(start.id)).toBe('running');
    expect(await stream.rest()).toEqual([
      { type: 'stdout', seq: 2, data: '2\n' },
      { type: 'stdout', seq: 3, data: '3\n' },
      { type: 'exit', seq: 4, exit_code: 0, timed_out: false, signal: null },
    ]);
    // Negative control: the same question tells an ended command apart.
    expect(await processStatus(start.id)).toBe('exited');
  });

  test('a stream cut after its first line leaves the command running; the client reattaches through the router after the last seq', async () => {
    const stream = await openStream('POST', '/execute', { command: 'for i in 1 2 3; do echo $i; sleep 1; done', shell: true });
    const { id } = await stream.next();
    expect(await stream.next()).toMatchObject({ seq: 1, data: '1\n' });
    stream.cut();
    const again = await openStream('GET', `/processes/${id}/output?after=1`);
    expect(await again.next()).toMatchObject({ type: 'process', id });
    expect(await again.rest()).toEqual([
      { type: 'stdout', seq: 2, data: '2\n' },
      { type: 'stdout', seq: 3, data: '3\n' },
      { type: 'exit', seq: 4, exit_code: 0, timed_out: false, signal: null },
    ]);
  });
});

describe('a gRPC Start stream through the router (h2c)', () => {
  const ProcessClient = grpc.makeGenericClientConstructor(PROCESS_SERVICE_DEFINITION, 'ProcessService');
  let client: InstanceType<typeof ProcessClient>;

  beforeAll(() => {
    client = new ProcessClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  });
  afterAll(() => client?.close());

  test('the first output arrives while the command waits for a file the client creates only after it', async () => {
    const md = new grpc.Metadata();
    md.set('x-sandbox-id', sandbox);
    md.set('x-sandbox-namespace', dp.ns);
    md.set('x-sandbox-port', String(GRPC_PORT));
    const script = 'rm -f h2-gate; echo 1; while [ ! -e h2-gate ]; do sleep 0.05; done; echo 2';
    const seen: string[] = [];
    let released = false;
    const status = await new Promise<grpc.StatusObject>((resolve) => {
      const call = (client as any).Start({ config: { command: ['/bin/sh', '-c', script], envVars: {} } }, md);
      call.on('data', (e: StartResponse) => {
        const event = e.event;
        if (!event) return;
        if ('stdout' in event) seen.push(event.stdout.toString());
        if ('exit' in event) seen.push(`exit ${event.exit.exitCode}`);
        // Only now may the command go on: had the router held the first chunk back, nothing would come.
        if (!released && seen.join('').includes('1\n')) {
          released = true;
          void send(port, '/execute', {
            method: 'POST', headers: headers({ 'content-type': 'application/json' }), body: JSON.stringify({ command: 'touch h2-gate' }),
          });
        }
      });
      call.on('error', () => undefined);
      call.on('status', resolve);
    });
    expect(status.code).toBe(grpc.status.OK);
    expect(released).toBe(true);
    expect(seen.join('')).toBe('1\n2\nexit 0');
  });
});
