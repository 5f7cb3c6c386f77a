/**
 * `/list` reports symbolic links as links (lstat), never what they point at, and a dangling one
 * does not fail the listing; `/execute` (and gRPC) run at most --max-concurrent-commands commands
 * at once and answer the rest with 429 + Retry-After.
 */
import { existsSync, lstatSync, mkdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { execute, processClient } from './process-client';
import { exec, json, request, startRuntime, tempWorkspace } from './runtime-http';

let base: string;
let workspace: string;
let outside: string;

beforeAll(() => ({ base, workspace, outside } = tempWorkspace('sandboxd-list-cap-')));
afterAll(() => rmSync(base, { recursive: true, force: true }));

describe('/list and symbolic links', () => {
  test('a link is listed as itself (its own size, symlink: true), a dangling one too, and the listing is a 200', async () => {
    const dir = path.join(workspace, 'links');
    mkdirSync(dir);
    writeFileSync(path.join(outside, 'big'), Buffer.alloc(12_345, 1));
    writeFileSync(path.join(dir, 'plain.txt'), 'plain');
    mkdirSync(path.join(dir, 'sub'));
    symlinkSync(path.join(outside, 'big'), path.join(dir, 'out'));
    symlinkSync(path.join(dir, 'sub'), path.join(dir, 'to-sub'));
    symlinkSync(path.join(dir, 'missing'), path.join(dir, 'dangling'));
    // Negative control: following the link would report the outside file's size.
    expect(statSync(path.join(dir, 'out')).size).toBe(12_345);

    const { server, port } = await startRuntime(workspace);
    try {
      const reply = await request(port, 'GET', '/list/links');
      expect(reply.status).toBe(200);
      const entries = Object.fromEntries((json(reply) as Array<{ name: string }>).map((e) => [e.name, e]));
      expect(Object.keys(entries).sort()).toEqual(['dangling', 'out', 'plain.txt', 'sub', 'to-sub']);
      const linkSize = (name: string) => lstatSync(path.join(dir, name)).size;
      expect(entries.out).toEqual({ name: 'out', size: linkSize('out'), type: 'file', symlink: true, mod_time: expect.any(Number) });
      expect(entries.out).not.toMatchObject({ size: 12_345 });
      expect(entries.dangling).toEqual({ name: 'dangling', size: linkSize('dangling'), type: 'file', symlink: true, mod_time: expect.any(Number) });
      // A link to a directory is a link too: upstream's SDKs know only "file" and "directory".
      expect(entries['to-sub']).toMatchObject({ type: 'file', symlink: true });
      expect(entries['plain.txt']).toEqual({ name: 'plain.txt', size: 5, type: 'file', mod_time: expect.any(Number) });
      expect(entries.sub).toEqual({ name: 'sub', size: expect.any(Number), type: 'directory', mod_time: expect.any(Number) });
    } finally {
      await server.drain(1000);
    }
  });
});

describe('--max-concurrent-commands', () => {
  const waitFor = async (check: () => boolean) => {
    while (!check()) await new Promise((r) => setTimeout(r, 10));
  };

  test('beyond the cap /execute is a 429 with Retry-After and a JSON detail; below it, commands run', async () => {
    const { server, port } = await startRuntime(workspace, { maxConcurrentCommands: 2, grpcPort: 0 });
    const go = path.join(workspace, 'go');
    rmSync(go, { force: true });
    try {
      const wait = { command: 'while [ ! -e go ]; do sleep 0.02; done; echo done', shell: true };
      const first = exec(port, wait);
      const second = exec(port, wait);
      await waitFor(() => server.running === 2);

      const refused = await exec(port, { command: 'echo never' });
      expect(refused.status).toBe(429);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(json(refused)).toEqual({ detail: expect.stringMatching(/2 commands are running.*--max-concurrent-commands.*retry/i), running: 2, limit: 2 });
      // The gRPC ProcessService counts against the same cap.
      const client = processClient(`127.0.0.1:${server.grpcAddress!.port}`);
      await expect(execute(client, { config: { command: ['true'], envVars: {} } })).rejects.toMatchObject({ code: grpc.status.RESOURCE_EXHAUSTED });
      client.close();

      writeFileSync(go, '');
      expect((await Promise.all([first, second])).map((r) => json(r).stdout)).toEqual(['done\n', 'done\n']);
      // Negative control: with the slots free again the same request runs.
      await waitFor(() => server.running === 0);
      expect(json(await exec(port, { command: 'echo ran' }))).toMatchObject({ stdout: 'ran\n', exit_code: 0 });
    } finally {
      writeFileSync(go, '');
      await server.drain(1000);
    }
    expect(existsSync(go)).toBe(true);
  });

  test('a burst of 40 requests against a cap of 4: every answer is a 200 or a 429, never more than 4 run at once', async () => {
    const { server, port } = await startRuntime(workspace, { maxConcurrentCommands: 4 });
    let most = 0;
    const sampler = setInterval(() => (most = Math.max(most, server.running)), 1);
    try {
      const replies = await Promise.all(Array.from({ length: 40 }, () => exec(port, { command: 'sleep 0.3' })));
      const statuses = replies.map((r) => r.status);
      expect(statuses.every((s) => s === 200 || s === 429)).toBe(true);
      expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
      expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(4);
      expect(most).toBeLessThanOrEqual(4);
      expect(most).toBeGreaterThan(0);
    } finally {
      clearInterval(sampler);
      await server.drain(1000);
    }
  });
});
