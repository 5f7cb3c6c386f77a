/**
 * `sandbox.files` against the real runtime process on 127.0.0.1: nested writes, text and bytes,
 * a streamed 8 MiB round trip, listings, existence, removal, the runtime's errors as typed errors
 * carrying status, body and sandbox name, and paths refused client-side.
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Readable } from 'node:stream';
import { handleFor, runtimeFixture } from './handle';
import { SandboxAuthError, SandboxConfigError, SandboxHttpError } from '../src/errors';
import { readAll } from '../src/http';

const fixture = runtimeFixture();

describe('files', () => {
  test('write then read text and bytes, with parents created, names with odd characters kept', async () => {
    await fixture().sandbox.files.write('a/b/hello.txt', 'héllo\n');
    await fixture().sandbox.files.write('/a/b/100%41 "q".bin', new Uint8Array([0, 1, 2, 255]));
    expect(await fixture().sandbox.files.readText('a/b/hello.txt')).toBe('héllo\n');
    expect([...await fixture().sandbox.files.read('a/b/100%41 "q".bin')]).toEqual([0, 1, 2, 255]);
    expect(fs.readFileSync(path.join(fixture().runtime.workspace, 'a/b/100%41 "q".bin'))).toEqual(Buffer.from([0, 1, 2, 255]));
  });

  test('a large file streams both ways unchanged', async () => {
    const data = randomBytes(8 * 1024 * 1024);
    const chunks = Array.from({ length: 8 }, (_, i) => data.subarray(i * 1024 * 1024, (i + 1) * 1024 * 1024));
    await fixture().sandbox.files.write('big/data.bin', Readable.from(chunks));
    const stream = await fixture().sandbox.files.readStream('big/data.bin');
    expect((await readAll(stream)).equals(data)).toBe(true);
  });

  test('list, exists and remove', async () => {
    await fixture().sandbox.files.write('tree/x.txt', 'x');
    await fixture().sandbox.files.write('tree/sub/y.txt', 'yy');
    const entries = await fixture().sandbox.files.list('tree');
    expect(entries.map((e) => [e.name, e.type, e.type === 'file' ? e.size : 0]).sort()).toEqual([['sub', 'directory', 0], ['x.txt', 'file', 1]]);
    expect(entries.every((e) => e.modifiedAt instanceof Date)).toBe(true);
    expect((await fixture().sandbox.files.list('/')).map((e) => e.name)).toContain('tree');
    expect(await fixture().sandbox.files.exists('tree/sub/y.txt')).toBe(true);
    await fixture().sandbox.files.remove('tree/x.txt');
    expect(await fixture().sandbox.files.exists('tree/x.txt')).toBe(false);
    await expect(fixture().sandbox.files.remove('tree')).rejects.toMatchObject({ status: 409 });
    await fixture().sandbox.files.remove('tree', { recursive: true });
    expect(await fixture().sandbox.files.exists('tree')).toBe(false);
  });

  test('a missing file is a SandboxHttpError with the status, the runtime\'s body and the sandbox name', async () => {
    const err = await fixture().sandbox.files.read('nope.txt').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SandboxHttpError);
    expect(err).toMatchObject({ status: 404, body: { message: 'File not found' }, detail: 'File not found', sandbox: 'sb-test', method: 'GET' });
  });

  test('paths that leave the workspace or name nothing are refused before sending', async () => {
    await expect(fixture().sandbox.files.write('../etc/passwd', 'x')).rejects.toThrow(SandboxConfigError);
    await expect(fixture().sandbox.files.read('a/../../x')).rejects.toThrow(/must stay inside the workspace/);
    await expect(fixture().sandbox.files.write('/', 'x')).rejects.toThrow(/names the workspace root/);
    await expect(fixture().sandbox.files.exists('bad\u0001name')).rejects.toThrow(/control character/);
  });
});

describe('a runtime that requires a token', () => {
  const tokenFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'sdk-token-')), 'token');
  fs.writeFileSync(tokenFile, 's3cret\n');
  const guarded = runtimeFixture(['--token-file', tokenFile]);

  test('without the token: SandboxAuthError with 401 and the body; with it: works', async () => {
    const err = await guarded().sandbox.run('true').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SandboxAuthError);
    expect(err).toMatchObject({ status: 401, body: { detail: 'Missing or invalid Authorization header.' } });
    const ok = await handleFor(guarded().runtime.url, { headers: { authorization: 'Bearer s3cret' } }).run('echo ok');
    expect(ok.stdout).toBe('ok\n');
  });
});
