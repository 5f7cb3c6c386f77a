/**
 * gRPC through the router with upstream's own generated Python stubs (see
 * ../sandboxd/python-sdk): the router on 127.0.0.1, our runtime's ProcessService on 127.64.0.7.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { type Harness, pod, sandbox, startRouter, UPSTREAM_IP } from './harness';
import { SandboxdServer } from '../../src/sandboxd/server';
import { expectStream, pythonClient } from '../sandboxd/python-sdk';

let base: string;
let runtime: SandboxdServer;
let h: Harness;

beforeAll(async () => {
  base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'router-python-')));
  mkdirSync(path.join(base, 'sub'));
  runtime = new SandboxdServer({
    workspace: base, port: 0, listenAddress: UPSTREAM_IP, grpcPort: 0, execTimeoutMs: 60_000, maxOutputBytes: 1024, allowRoot: true,
  });
  await runtime.start();
  h = await startRouter();
  const sb = sandbox('sb');
  h.sandboxes.put(sb);
  h.pods.put(pod(sb, [UPSTREAM_IP]));
});

afterAll(async () => {
  await h.close();
  await runtime.drain(1000);
  rmSync(base, { recursive: true, force: true });
});

test('upstream\'s Python stubs through the router: Execute, a Start stream, the runtime\'s INVALID_ARGUMENT', async () => {
  const out = await pythonClient(`127.0.0.1:${h.port}`, { 'x-sandbox-id': 'sb', 'x-sandbox-port': String(runtime.grpcAddress!.port) });
  expect(out.execute).toEqual({ exit_code: 4, stdout: `from-python\n${path.join(base, 'sub')}\n`, stderr: 'e\n' });
  expectStream(out.start, 9000, 4096, -1);
  expect(out.empty).toEqual(['INVALID_ARGUMENT', 'command is required']);
  expect(h.dialed).toEqual([`${UPSTREAM_IP}:${runtime.grpcAddress!.port}`]);
}, 660_000);

test('the router\'s refusals reach upstream\'s client as gRPC statuses', async () => {
  const out = await pythonClient(`127.0.0.1:${h.port}`, { 'x-sandbox-id': 'nope' });
  for (const call of ['execute', 'start', 'empty']) expect(out[call]).toEqual(['NOT_FOUND', 'Sandbox default/nope not found.']);
}, 660_000);
