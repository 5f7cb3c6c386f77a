import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { alive, exec, json, request, startRuntime, tempWorkspace, upload } from './runtime-http';
import { RootRefusedError, SandboxdOptions, SandboxdServer } from '../../src/sandboxd/server';

let base: string;
let workspace: string;
let outside: string;

beforeAll(() => {
  ({ base, workspace, outside } = tempWorkspace('sandboxd-server-'));
  writeFileSync(path.join(outside, 'secret.txt'), 'secret');
  symlinkSync(outside, path.join(workspace, 'escape'));
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

const start = (extra: Partial<SandboxdOptions> = {}) => startRuntime(workspace, extra);

describe('the legacy runtime API', () => {
  let server: SandboxdServer;
  let port: number;
  beforeAll(async () => ({ server, port } = await start({ maxOutputBytes: 1000 })));
  afterAll(() => server.drain(1000));

  test('GET / answers like upstream', async () => {
    const reply = await request(port, 'GET', '/');
    expect(reply.status).toBe(200);
    // Upstream's two fields, and this runtime's extensions (upstream clients ignore fields they do not know).
    expect(json(reply)).toEqual({ status: 'ok', message: 'Sandbox Runtime is active.', features: ['execute-ndjson', 'processes'] });
  });

  test('GET / names the gRPC ProcessService\'s port when it listens (the SDK\'s PTY sessions find it there)', async () => {
    const withGrpc = await start({ grpcPort: 0 });
    try {
      expect(json(await request(withGrpc.port, 'GET', '/'))).toEqual({
        status: 'ok', message: 'Sandbox Runtime is active.', features: ['execute-ndjson', 'processes'], grpc_port: withGrpc.server.grpcAddress!.port,
      });
    } finally {
      await withGrpc.server.drain(1000);
    }
  });

  test('unknown routes 404 and wrong methods 405, FastAPI-shaped', async () => {
    expect(json(await request(port, 'GET', '/nope'))).toEqual({ detail: 'Not Found' });
    const reply = await request(port, 'GET', '/execute');
    expect(reply.status).toBe(405);
    expect(json(reply)).toEqual({ detail: 'Method Not Allowed' });
  });

  test('argv mode runs without a shell in the workspace', async () => {
    const reply = await exec(port, { command: "printf '%s|' 'a b' c" });
    expect(reply.status).toBe(200);
    expect(json(reply)).toEqual({ stdout: 'a b|c|', stderr: '', exit_code: 0, timed_out: false });
    expect(json(await exec(port, { command: 'pwd' })).stdout).toBe(`${workspace}\n`);
  });

  test('argv mode says so when it is given shell syntax', async () => {
    const body = json(await exec(port, { command: 'echo hi | wc -c' }));
    expect(body.stdout).toBe('hi | wc -c\n');
    expect(body.stderr).toMatch(/without a shell.*"\|".*"shell": true/s);
  });

  test('shell mode runs /bin/sh -c', async () => {
    const body = json(await exec(port, { command: 'echo hi | wc -c && echo "$0"', shell: true }));
    expect(body).toEqual({ stdout: '3\n/bin/sh\n', stderr: '', exit_code: 0, timed_out: false });
  });

  test('a non-zero exit is a 200 with the exit code; a missing executable is exit 1', async () => {
    expect(json(await exec(port, { command: "sh -c 'echo oops >&2; exit 3'" }))).toEqual({ stdout: '', stderr: 'oops\n', exit_code: 3, timed_out: false });
    const missing = await exec(port, { command: 'no-such-binary-here' });
    expect(missing.status).toBe(200);
    expect(json(missing)).toMatchObject({ stdout: '', exit_code: 1, timed_out: false });
    expect(json(missing).stderr).toMatch(/^Failed to execute command: /);
    expect(json(await exec(port, { command: 'echo "unclosed' })).stderr).toMatch(/No closing quotation/);
  });

  test('a signal death reports the negative signal number', async () => {
    expect(json(await exec(port, { command: 'kill -9 $$', shell: true })).exit_code).toBe(-9);
  });

  test('env and cwd (confined) are honoured', async () => {
    mkdirSync(path.join(workspace, 'sub'), { recursive: true });
    const body = json(await exec(port, { command: 'echo "$GREETING" && pwd', shell: true, env: { GREETING: 'hello' }, cwd: 'sub' }));
    expect(body.stdout).toBe(`hello\n${workspace}/sub\n`);
    expect((await exec(port, { command: 'pwd', cwd: '../..' })).status).toBe(403);
    const missing = await exec(port, { command: 'pwd', cwd: 'no/such/dir' });
    expect([missing.status, json(missing)]).toEqual([404, { message: 'cwd not found', reason: 'cwd "no/such/dir" is not a directory in the workspace' }]);
  });

  test('a timeout kills the whole process tree and reports timed_out with exit 124', async () => {
    // The grandchild keeps the output pipe open, so the answer comes only once it is gone too.
    const reply = await exec(port, { command: 'sh -c "sleep 300" & echo $!; sleep 300', shell: true, timeout_seconds: 0.5 });
    const body = json(reply);
    expect(body.timed_out).toBe(true);
    expect(body.exit_code).toBe(124);
    expect(body.stderr).toMatch(/timed out after 0.5 seconds/);
    const grandchild = Number(body.stdout.trim());
    expect(grandchild).toBeGreaterThan(1);
    expect(alive(grandchild)).toBe(false);
  });

  test('output beyond the cap is cut with a marker', async () => {
    const body = json(await exec(port, { command: "head -c 5000 /dev/zero | tr '\\0' a", shell: true }));
    expect(body.stdout.startsWith('a'.repeat(1000))).toBe(true);
    expect(body.stdout).not.toContain('a'.repeat(1001));
    expect(body.stdout).toContain('[output truncated: 4000 more bytes not shown]');
  });

  test('a body without a string command is a 422', async () => {
    expect((await exec(port, { cmd: 'ls' })).status).toBe(422);
    expect((await request(port, 'POST', '/execute', { body: 'not json' })).status).toBe(422);
    expect((await exec(port, { command: 'ls', timeout_seconds: -1 })).status).toBe(422);
  });

  test('upload, download, list, exists and delete with nested paths', async () => {
    const content = Buffer.alloc(1024 * 1024 + 7);
    for (let i = 0; i < content.length; i++) content[i] = (i * 31) % 251;
    const up = await upload(port, 'nested/dir/data.bin', content);
    expect(up.status).toBe(200);
    expect(json(up)).toEqual({ message: "File 'nested/dir/data.bin' uploaded successfully." });
    expect(readFileSync(path.join(workspace, 'nested/dir/data.bin')).equals(content)).toBe(true);

    const down = await request(port, 'GET', '/download/nested%2Fdir%2Fdata.bin');
    expect(down.status).toBe(200);
    expect(down.headers['content-type']).toBe('application/octet-stream');
    expect(down.headers['content-length']).toBe(String(content.length));
    expect(down.body.equals(content)).toBe(true);
    expect((await request(port, 'GET', '/download/nested/dir/data.bin')).body.equals(content)).toBe(true);

    expect(await request(port, 'GET', '/download/nested/dir').then((r) => [r.status, json(r)])).toEqual([404, { message: 'File not found' }]);
    expect(await request(port, 'GET', '/download/nested/none').then((r) => r.status)).toBe(404);

    const list = json(await request(port, 'GET', '/list/nested'));
    expect(list).toEqual([{ name: 'dir', size: expect.any(Number), type: 'directory', mod_time: expect.any(Number) }]);
    expect(json(await request(port, 'GET', '/list/nested%2Fdir'))).toEqual([
      { name: 'data.bin', size: content.length, type: 'file', mod_time: expect.any(Number) },
    ]);
    expect(json(await request(port, 'GET', '/list/')).map((e: { name: string }) => e.name)).toContain('nested');
    expect(await request(port, 'GET', '/list/nested/dir/data.bin').then((r) => [r.status, json(r)])).toEqual([404, { message: 'Path is not a directory' }]);

    expect(json(await request(port, 'GET', '/exists/nested%2Fdir%2Fdata.bin'))).toEqual({ path: 'nested/dir/data.bin', exists: true });
    expect(json(await request(port, 'GET', '/exists/nested/nope'))).toEqual({ path: 'nested/nope', exists: false });

    expect((await request(port, 'DELETE', '/delete/nested')).status).toBe(409);
    expect(json(await request(port, 'DELETE', '/delete/nested/dir/data.bin'))).toEqual({ path: 'nested/dir/data.bin', deleted: true });
    expect(json(await request(port, 'GET', '/exists/nested/dir/data.bin')).exists).toBe(false);
    writeFileSync(path.join(workspace, 'nested/dir/again.txt'), 'x');
    expect((await request(port, 'DELETE', '/delete/nested?recursive=true')).status).toBe(200);
    expect(existsSync(path.join(workspace, 'nested'))).toBe(false);
    expect((await request(port, 'DELETE', '/delete/nested')).status).toBe(404);
  });

  test('an upload overwrites, and an upload without a file part is a 422', async () => {
    await upload(port, 'over.txt', Buffer.from('one'));
    await upload(port, 'over.txt', Buffer.from('two'));
    expect(readFileSync(path.join(workspace, 'over.txt'), 'utf8')).toBe('two');
    const boundary = 'xyz';
    const body = `--${boundary}\r\nContent-Disposition: form-data; name="other"\r\n\r\nvalue\r\n--${boundary}--\r\n`;
    const reply = await request(port, 'POST', '/upload', { body, headers: { 'Content-Type': `multipart/form-data; boundary=${boundary}` } });
    expect(reply.status).toBe(422);
  });

  describe('confinement', () => {
    test.each([
      ['GET', '/download/..%2F..%2Fetc%2Fpasswd'],
      ['GET', '/download/a/../../outside/secret.txt'],
      ['GET', '/list/..'],
      ['GET', '/exists/..%2Foutside'],
      ['DELETE', '/delete/..%2Foutside%2Fsecret.txt'],
    ])('".." leaving the root: %s %s is 403 with a reason', async (method, urlPath) => {
      const reply = await request(port, method, urlPath);
      expect(reply.status).toBe(403);
      expect(json(reply)).toEqual({ message: 'Access denied', reason: expect.stringMatching(/leaves the workspace/) });
    });

    test.each([
      ['GET', '/download/escape/secret.txt'],
      ['GET', '/list/escape'],
      ['GET', '/exists/escape%2Fsecret.txt'],
      ['DELETE', '/delete/escape/secret.txt'],
    ])('a symlink out of the root: %s %s is 403 with a reason', async (method, urlPath) => {
      const reply = await request(port, method, urlPath);
      expect(reply.status).toBe(403);
      expect(json(reply).reason).toMatch(/symbolic link/);
      expect(existsSync(path.join(outside, 'secret.txt'))).toBe(true);
    });

    test('an absolute path outside the root is 403 with a reason to use a relative path; the host file is never served', async () => {
      writeFileSync(path.join(outside, 'abs.txt'), 'host');
      for (const [method, urlPath] of [
        ['GET', `/download/${encodeURIComponent(path.join(outside, 'abs.txt'))}`],
        ['GET', `/exists/${encodeURIComponent(path.join(outside, 'abs.txt'))}`],
        ['GET', '/list/%2Fetc'],
        ['DELETE', `/delete/${encodeURIComponent(path.join(outside, 'abs.txt'))}`],
      ]) {
        const reply = await request(port, method, urlPath);
        expect(reply.status).toBe(403);
        expect(json(reply).reason).toMatch(/absolute path outside the workspace.*use a path relative to the workspace/);
      }
      expect((await exec(port, { command: 'pwd', cwd: '/tmp' })).status).toBe(403);
      expect((await upload(port, path.join(outside, 'abs.txt'), Buffer.from('evil'))).status).toBe(403);
      expect(readFileSync(path.join(outside, 'abs.txt'), 'utf8')).toBe('host');
    });

    test('an absolute path inside the root is taken literally, and "/" alone is the root (the SDK sends files.list("/") as %2F)', async () => {
      writeFileSync(path.join(workspace, 'literal.txt'), 'inside');
      const reply = await request(port, 'GET', `/download/${encodeURIComponent(path.join(workspace, 'literal.txt'))}`);
      expect(reply.body.toString('utf8')).toBe('inside');
      expect(json(await request(port, 'GET', `/exists/${encodeURIComponent(path.join(workspace, 'literal.txt'))}`)).exists).toBe(true);
      const names = json(await request(port, 'GET', '/list/%2F')).map((e: { name: string }) => e.name);
      expect(names).toContain('literal.txt');
      expect(json(await exec(port, { command: 'pwd', cwd: workspace })).stdout.trim()).toBe(workspace);
      expect((await request(port, 'DELETE', `/delete/${encodeURIComponent(path.join(workspace, 'literal.txt'))}`)).status).toBe(200);
      expect(existsSync(path.join(workspace, 'literal.txt'))).toBe(false);
    });

    test('uploads cannot escape by "..", nor through a symlink', async () => {
      const dotdot = await upload(port, '../outside/evil.txt', Buffer.from('evil'));
      expect(dotdot.status).toBe(403);
      const link = await upload(port, 'escape/evil.txt', Buffer.from('evil'));
      expect(link.status).toBe(403);
      expect(existsSync(path.join(outside, 'evil.txt'))).toBe(false);
    });
  });
});

describe('bearer token', () => {
  let server: SandboxdServer;
  let port: number;
  beforeAll(async () => ({ server, port } = await start({ token: 's3cret' })));
  afterAll(() => server.drain(1000));

  test('requests without the token are 401; the health route stays open', async () => {
    expect((await exec(port, { command: 'true' })).status).toBe(401);
    expect((await exec(port, { command: 'true' }, { Authorization: 'Bearer wrong' })).status).toBe(401);
    expect((await exec(port, { command: 'true' }, { Authorization: 'Basic czNjcmV0' })).status).toBe(401);
    expect((await request(port, 'GET', '/list/')).status).toBe(401);
    expect((await exec(port, { command: 'true' }, { Authorization: 'bearer s3cret' })).status).toBe(200);
    expect((await request(port, 'GET', '/list/', { headers: { Authorization: 'Bearer s3cret' } })).status).toBe(200);
    expect((await request(port, 'GET', '/')).status).toBe(200);
  });
});

describe('start-up and shutdown', () => {
  test('running as root is refused unless allowed', async () => {
    const server = new SandboxdServer({ workspace, port: 0, listenAddress: '127.0.0.1', execTimeoutMs: 1000, maxOutputBytes: 1000, allowRoot: false });
    if (process.getuid?.() === 0) {
      await expect(server.start()).rejects.toBeInstanceOf(RootRefusedError);
    } else {
      await server.start();
      await server.drain(1000);
    }
  });

  test('a drain past its grace period kills the running command group', async () => {
    const { server, port } = await start();
    const pidFile = path.join(workspace, 'grandchild.pid');
    rmSync(pidFile, { force: true });
    const pending = exec(port, { command: 'sh -c "sleep 300" & echo $! > grandchild.pid.tmp && mv grandchild.pid.tmp grandchild.pid; sleep 300', shell: true });
    // Wait until the grandchild runs (its pid file appears), then drain with a short grace period.
    while (!existsSync(pidFile)) await new Promise((r) => setTimeout(r, 10));
    const grandchild = Number(readFileSync(pidFile, 'utf8').trim());
    expect(alive(grandchild)).toBe(true);
    await server.drain(100);
    const body = json(await pending);
    expect(body.exit_code).toBe(-9);
    expect(body.timed_out).toBe(false);
    expect(body.stderr).toMatch(/shutting down/);
    expect(alive(grandchild)).toBe(false);
  });

  test('a drain lets a running command finish and answer', async () => {
    const { server, port } = await start();
    mkdirSync(path.join(workspace, 'drain'), { recursive: true });
    const pending = exec(port, { command: 'while [ ! -e go ]; do sleep 0.05; done; echo done', shell: true, cwd: 'drain' });
    while (server.running === 0) await new Promise((r) => setImmediate(r));
    const drained = server.drain(60_000);
    writeFileSync(path.join(workspace, 'drain/go'), '');
    await drained;
    expect(json(await pending)).toMatchObject({ stdout: 'done\n', exit_code: 0 });
  });
});
