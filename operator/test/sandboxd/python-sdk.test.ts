/** Our runtime's gRPC ProcessService driven by upstream's own generated stubs (see ./python-sdk). */
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { expectStream, pythonClient } from './python-sdk';
import { SandboxdServer } from '../../src/sandboxd/server';

let base: string;
let server: SandboxdServer;

beforeAll(async () => {
  base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'sandboxd-python-')));
  mkdirSync(path.join(base, 'sub'));
  server = new SandboxdServer({ workspace: base, port: 0, listenAddress: '127.0.0.1', grpcPort: 0, execTimeoutMs: 60_000, maxOutputBytes: 1024, allowRoot: true });
  await server.start();
});

afterAll(async () => {
  await server.drain(1000);
  rmSync(base, { recursive: true, force: true });
});

test('upstream\'s generated Python stubs: Execute, a Start stream, and INVALID_ARGUMENT', async () => {
  const out = await pythonClient(`127.0.0.1:${server.grpcAddress!.port}`);
  expect(out.execute).toEqual({ exit_code: 4, stdout: `from-python\n${path.join(base, 'sub')}\n`, stderr: 'e\n' });
  expectStream(out.start, 9000, 4096, -1);
  expect(out.empty).toEqual(['INVALID_ARGUMENT', 'command is required']);
}, 660_000);
