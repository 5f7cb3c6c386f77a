/**
 * The runtime's refusal of a path is a SandboxPathError naming the path as the caller gave it, not
 * a SandboxAuthError (real runtime process on 127.0.0.1): a file path that leaves the workspace
 * through a symbolic link, a `cwd` that leaves it, a `cwd` that is no directory. Negative controls:
 * a missing file stays a plain SandboxHttpError 404, a missing token a SandboxAuthError 401, and the
 * router's own 403 (`{"detail": "forbidden"}`) a SandboxAuthError. Error messages show paths as the
 * caller wrote them, not as encoded twice for the wire.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { handleFor, runtimeFixture } from './handle';
import { SandboxAuthError, SandboxHttpError, SandboxPathError } from '../src/errors';

const fixture = runtimeFixture();
let outside: string;

beforeAll(() => {
  outside = fs.mkdtempSync(path.join(os.tmpdir(), 'sdk-outside-'));
  fs.writeFileSync(path.join(outside, 'secret.txt'), 'secret');
  fs.symlinkSync(outside, path.join(fixture().runtime.workspace, 'escape'));
});
afterAll(() => fs.rmSync(outside, { recursive: true, force: true }));

async function failure(promise: Promise<unknown>): Promise<any> {
  const err = await promise.then(() => undefined, (e: unknown) => e);
  if (err === undefined) throw new Error('expected the call to fail');
  return err;
}

describe('a path the runtime refuses', () => {
  test.each([
    ['read', (s: ReturnType<typeof fixture>['sandbox']) => s.files.read('escape/secret.txt'), 'escape/secret.txt'],
    ['write', (s: ReturnType<typeof fixture>['sandbox']) => s.files.write('escape/new.txt', 'x'), 'escape/new.txt'],
    ['list', (s: ReturnType<typeof fixture>['sandbox']) => s.files.list('/escape'), '/escape'],
    ['exists', (s: ReturnType<typeof fixture>['sandbox']) => s.files.exists('escape/secret.txt'), 'escape/secret.txt'],
    ['remove', (s: ReturnType<typeof fixture>['sandbox']) => s.files.remove('escape/secret.txt'), 'escape/secret.txt'],
  ])('files.%s through a link out of the workspace: SandboxPathError 403 with the path as given and the runtime\'s reason', async (_op, call, given) => {
    const err = await failure(call(fixture().sandbox));
    expect(err).toBeInstanceOf(SandboxPathError);
    expect(err).toBeInstanceOf(SandboxHttpError);
    expect(err).not.toBeInstanceOf(SandboxAuthError);
    expect(err).toMatchObject({ name: 'SandboxPathError', status: 403, field: 'path', path: given, sandbox: 'sb-test' });
    expect(err.reason).toMatch(/resolves outside the workspace through a symbolic link/);
    expect(err.message).toContain(`refused path "${given}"`);
    expect(fs.readFileSync(path.join(outside, 'secret.txt'), 'utf8')).toBe('secret');
    expect(fs.existsSync(path.join(outside, 'new.txt'))).toBe(false);
  });

  test('run with a cwd that leaves the workspace: SandboxPathError 403 naming cwd', async () => {
    const err = await failure(fixture().sandbox.run('pwd', { cwd: '../..' }));
    expect(err).toBeInstanceOf(SandboxPathError);
    expect(err).toMatchObject({ status: 403, field: 'cwd', path: '../..', requestPath: '/execute' });
    expect(err.message).toMatch(/refused cwd "\.\.\/\.\."/);
  });

  test('run with a cwd that does not exist: SandboxPathError 404 naming cwd (not a command that "failed" with exit 1)', async () => {
    const err = await failure(fixture().sandbox.run('pwd', { cwd: 'no/such/dir' }));
    expect(err).toBeInstanceOf(SandboxPathError);
    expect(err).toMatchObject({ status: 404, field: 'cwd', path: 'no/such/dir' });
    expect(err.message).toContain('cwd "no/such/dir" is not a directory in the workspace');
    // A cwd that is there still runs.
    fs.mkdirSync(path.join(fixture().runtime.workspace, 'sub'), { recursive: true });
    expect((await fixture().sandbox.run('pwd', { cwd: 'sub' })).stdout).toBe(`${fs.realpathSync(fixture().runtime.workspace)}/sub\n`);
  });
});

describe('negative controls: not path refusals', () => {
  test('a missing file is a plain SandboxHttpError 404, neither a path nor an auth error', async () => {
    const err = await failure(fixture().sandbox.files.read('missing/file.txt'));
    expect(err).toBeInstanceOf(SandboxHttpError);
    expect(err).not.toBeInstanceOf(SandboxPathError);
    expect(err).not.toBeInstanceOf(SandboxAuthError);
    expect(err.status).toBe(404);
  });

  test('the runtime\'s 401 is a SandboxAuthError', async () => {
    const tokenFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'sdk-token-')), 'token');
    fs.writeFileSync(tokenFile, 's3cret\n');
    const { startRuntime } = await import('./runtime-process');
    const guarded = await startRuntime(['--token-file', tokenFile]);
    try {
      const err = await failure(handleFor(guarded.url).files.read('escape/secret.txt'));
      expect(err).toBeInstanceOf(SandboxAuthError);
      expect(err).not.toBeInstanceOf(SandboxPathError);
      expect(err.status).toBe(401);
    } finally {
      await guarded.stop();
      fs.rmSync(path.dirname(tokenFile), { recursive: true, force: true });
    }
  });

  test('the router\'s 403 ({"detail": "forbidden"}) is a SandboxAuthError, for a file call too', async () => {
    const server = http.createServer((req, res) => {
      req.resume();
      res.writeHead(403, { 'content-type': 'application/json' }).end(JSON.stringify({ detail: 'forbidden' }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const err = await failure(handleFor(`http://127.0.0.1:${(server.address() as AddressInfo).port}`).files.read('a.txt'));
      expect(err).toBeInstanceOf(SandboxAuthError);
      expect(err).not.toBeInstanceOf(SandboxPathError);
      expect(err).toMatchObject({ status: 403, body: { detail: 'forbidden' } });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('error messages show paths as the caller wrote them', () => {
  test.each(['missing/file.txt', 'dir/100%41 "q".txt', 'naïve/ü.txt'])('files.read("%s"): the message and path show it unencoded', async (given) => {
    const err = await failure(fixture().sandbox.files.read(given));
    expect(err).toBeInstanceOf(SandboxHttpError);
    expect(err.path).toBe(`/download/${given}`);
    expect(err.message).toBe(`GET /download/${given} (sandbox sb-test): HTTP 404: File not found`);
    expect(err.message).not.toMatch(/%25|%2F/);
  });

  test('list and remove too', async () => {
    expect((await failure(fixture().sandbox.files.list('no/such'))).message).toContain('GET /list/no/such ');
    expect((await failure(fixture().sandbox.files.remove('no/such.txt'))).message).toContain('DELETE /delete/no/such.txt ');
  });
});
