/** Our runtime's gRPC ProcessService and legacy file API driven by upstream's own Python SDK (see ./python-sdk). */
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { expectStream, pythonClient, pythonFiles } from './python-sdk';
import { SandboxdServer } from '../../src/sandboxd/server';

let base: string;
let server: SandboxdServer;
let port: number;

beforeAll(async () => {
  base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'sandboxd-python-')));
  mkdirSync(path.join(base, 'sub'));
  server = new SandboxdServer({ workspace: base, port: 0, listenAddress: '127.0.0.1', grpcPort: 0, execTimeoutMs: 60_000, maxOutputBytes: 1024, allowRoot: true });
  ({ port } = await server.start());
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

test('upstream\'s Python SDK uploads (a bytes form and a streamed body), reads, lists and checks files on the legacy API', async () => {
  const out = await pythonFiles(`http://127.0.0.1:${port}`);
  const streamed = Buffer.alloc(256 * 1200);
  for (let i = 0; i < streamed.length; i++) streamed[i] = i % 256;
  expect(out).toEqual({
    read: 'from the python sdk',
    streamed_ok: true,
    list: [['bytes.txt', 'file', 19], ['n\u00e4me.txt', 'file', 7], ['streamed.bin', 'file', streamed.length]],
    exists: true,
  });
  expect(readFileSync(path.join(base, 'py', 'bytes.txt'), 'utf8')).toBe('from the python sdk');
  expect(readFileSync(path.join(base, 'py', 'streamed.bin')).equals(streamed)).toBe(true);
  expect(readFileSync(path.join(base, 'py', 'n\u00e4me.txt'), 'utf8')).toBe('unicode');
}, 660_000);
