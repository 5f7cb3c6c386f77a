import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { metadataEnv, rfc3339 } from '../../src/sandboxd/filesystem';
import { SandboxdServer } from '../../src/sandboxd/server';

interface Reply { status: number; body: Buffer; headers: http.IncomingHttpHeaders }

let base: string;
let workspace: string;
let outside: string;
let server: SandboxdServer;
let port: number;

function request(method: string, urlPath: string, body?: Buffer | string, headers: http.OutgoingHttpHeaders = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: urlPath, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks), headers: res.headers }));
    });
    req.on('error', reject);
    req.end(body);
  });
}
const json = (reply: Reply): any => JSON.parse(reply.body.toString('utf8'));

beforeAll(async () => {
  base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'sandboxd-fs-')));
  workspace = path.join(base, 'ws');
  outside = path.join(base, 'outside');
  mkdirSync(workspace);
  mkdirSync(outside);
  writeFileSync(path.join(outside, 'secret.txt'), 'secret');
  symlinkSync(outside, path.join(workspace, 'escape'));
  symlinkSync('/nonexistent-dangling', path.join(workspace, 'dangling'));
  // Tests run as root on CI: allowRoot is explicit.
  server = new SandboxdServer({
    workspace, port: 0, filesPort: 0, listenAddress: '127.0.0.1', execTimeoutMs: 10_000, maxOutputBytes: 1024, allowRoot: true,
  });
  await server.start();
  port = server.filesAddress!.port;
});
afterAll(async () => {
  await server.drain(1000);
  rmSync(base, { recursive: true, force: true });
});

test('health and metadata', async () => {
  const health = await request('GET', '/v1/health');
  expect(health.status).toBe(200);
  expect(json(health)).toEqual({ status: 'ok', uptime_seconds: expect.any(Number) });
  expect(json(await request('GET', '/v1/metadata'))).toEqual({ env: expect.any(Object) });
  expect(metadataEnv({ SANDBOX_ID: 'a', SANDBOX_API_TOKEN: 'x', SANDBOX_PRIVATE_THING: 'y', HOME: '/root' })).toEqual({ SANDBOX_ID: 'a' });
  expect(rfc3339(new Date('2026-08-22T00:27:14.789Z'))).toBe('2026-08-22T00:27:14Z');
});

test('PUT (raw and multipart, mode, parents), GET, HEAD, ranges, listing, DELETE', async () => {
  const put = await request('PUT', '/v1/files/a/b/c.txt?mode=0600', 'hello world');
  expect(put.status).toBe(204);
  expect(readFileSync(path.join(workspace, 'a/b/c.txt'), 'utf8')).toBe('hello world');
  expect(statSync(path.join(workspace, 'a/b/c.txt')).mode % 0o1000).toBe(0o600);

  const boundary = 'bnd';
  const multipart = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="ignored"\r\n\r\nfrom multipart\r\n--${boundary}--\r\n`;
  expect((await request('PUT', '/v1/files/a%2Fm.txt', multipart, { 'Content-Type': `multipart/form-data; boundary=${boundary}` })).status).toBe(204);
  expect(readFileSync(path.join(workspace, 'a/m.txt'), 'utf8')).toBe('from multipart');

  const get = await request('GET', '/v1/files/a/b/c.txt');
  expect(get.status).toBe(200);
  expect(get.body.toString()).toBe('hello world');
  expect(get.headers['content-type']).toBe('application/octet-stream');
  expect(get.headers['accept-ranges']).toBe('bytes');
  const range = await request('GET', '/v1/files/a/b/c.txt', undefined, { Range: 'bytes=6-' });
  expect([range.status, range.body.toString(), range.headers['content-range']]).toEqual([206, 'world', 'bytes 6-10/11']);
  const head = await request('HEAD', '/v1/files/a/b/c.txt');
  expect([head.status, head.body.length, head.headers['content-length']]).toEqual([200, 0, '11']);
  expect((await request('HEAD', '/v1/files/a/none')).status).toBe(404);

  const listing = json(await request('GET', '/v1/files/a'));
  expect(listing).toEqual({
    path: '/a',
    entries: [
      { name: 'b', size: expect.any(Number), type: 'directory', modified_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/), mode: expect.any(String) },
      { name: 'm.txt', size: 14, type: 'file', modified_at: expect.any(String), mode: '0644' },
    ],
  });
  const root = json(await request('GET', '/v1/files/'));
  expect(root.path).toBe('/');
  // Links out of the root and broken links are left out of listings.
  expect(root.entries.map((e: { name: string }) => e.name)).toEqual(['a']);
  expect(json(await request('GET', '/v1/files/.')).path).toBe('/');

  expect((await request('DELETE', '/v1/files/a')).status).toBe(409);
  expect((await request('DELETE', '/v1/files/a?recursive=maybe')).status).toBe(400);
  expect((await request('DELETE', '/v1/files/a/m.txt')).status).toBe(204);
  expect((await request('DELETE', '/v1/files/a?recursive=true')).status).toBe(204);
  expect(existsSync(path.join(workspace, 'a'))).toBe(false);
  expect(json(await request('DELETE', '/v1/files/a'))).toEqual({ code: 'NOT_FOUND', message: 'path does not exist within the sandbox' });
});

test('absolute paths: literal, accepted only inside the root ("%2F" alone is the root)', async () => {
  const inside = encodeURIComponent(path.join(workspace, 'abs.txt'));
  expect((await request('PUT', `/v1/files/${inside}`, 'inside')).status).toBe(204);
  expect((await request('GET', `/v1/files/${inside}`)).body.toString('utf8')).toBe('inside');
  expect(json(await request('GET', '/v1/files/%2F')).entries.map((e: { name: string }) => e.name)).toContain('abs.txt');
  expect((await request('DELETE', `/v1/files/${inside}`)).status).toBe(204);
  for (const [method, p] of [['GET', `/v1/files/${encodeURIComponent(path.join(outside, 'secret.txt'))}`], ['PUT', '/v1/files/%2Ftmp%2Fx'], ['DELETE', `/v1/files/${encodeURIComponent(path.join(outside, 'secret.txt'))}`]]) {
    const reply = await request(method, p, method === 'PUT' ? 'x' : undefined);
    expect([method, p, reply.status, json(reply).code]).toEqual([method, p, 403, 'PERMISSION_DENIED']);
    expect(json(reply).message).toMatch(/use a path relative to the workspace/);
  }
  expect(existsSync(path.join(outside, 'secret.txt'))).toBe(true);
});

test('errors: bad mode, directory target, escapes, unknown routes, wrong methods', async () => {
  expect(json(await request('PUT', '/v1/files/x?mode=777', 'x'))).toMatchObject({ code: 'INVALID_ARGUMENT' });
  mkdirSync(path.join(workspace, 'dir'), { recursive: true });
  expect((await request('PUT', '/v1/files/dir', 'x')).status).toBe(400);
  for (const [method, p] of [['GET', '/v1/files/..%2Foutside%2Fsecret.txt'], ['GET', '/v1/files/escape/secret.txt'], ['PUT', '/v1/files/escape/new.txt'], ['DELETE', '/v1/files/escape/secret.txt']]) {
    const reply = await request(method, p, method === 'PUT' ? 'x' : undefined);
    expect([method, p, reply.status, json(reply).code]).toEqual([method, p, 403, 'PERMISSION_DENIED']);
  }
  expect(existsSync(path.join(outside, 'new.txt'))).toBe(false);
  expect(existsSync(path.join(outside, 'secret.txt'))).toBe(true);
  expect((await request('GET', '/v1/nope')).status).toBe(404);
  const wrong = await request('POST', '/v1/files/x', 'x');
  expect([wrong.status, wrong.headers.allow]).toEqual([405, 'DELETE, GET, HEAD, PUT']);
});

test('deleting the root needs recursive and keeps the directory', async () => {
  writeFileSync(path.join(workspace, 'gone.txt'), 'x');
  expect((await request('DELETE', '/v1/files/')).status).toBe(409);
  expect((await request('DELETE', '/v1/files/?recursive=1')).status).toBe(204);
  expect(existsSync(workspace)).toBe(true);
  expect(existsSync(path.join(workspace, 'gone.txt'))).toBe(false);
  // The link out of the root went, not what it pointed at.
  expect(readFileSync(path.join(outside, 'secret.txt'), 'utf8')).toBe('secret');
});
