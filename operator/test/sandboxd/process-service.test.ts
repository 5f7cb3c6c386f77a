import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { execute, firstEvent, type ProcessClient, processClient, processGone, start, stdoutOf, unary, writtenText } from './process-client';
import { SandboxdServer } from '../../src/sandboxd/server';

let base: string;
let workspace: string;
let server: SandboxdServer;
let client: ProcessClient;

const sh = (script: string) => ({ config: { command: ['/bin/sh', '-c', script], envVars: {} } });

beforeAll(async () => {
  base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'sandboxd-grpc-')));
  workspace = path.join(base, 'ws');
  mkdirSync(path.join(workspace, 'sub'), { recursive: true });
  server = new SandboxdServer({
    workspace, port: 0, listenAddress: '127.0.0.1', grpcPort: 0, streamChunkSize: 1000, execTimeoutMs: 60_000, maxOutputBytes: 1024, allowRoot: true,
  });
  await server.start();
  client = processClient(`127.0.0.1:${server.grpcAddress!.port}`);
});

afterAll(async () => {
  client.close();
  await server.drain(1000);
  rmSync(base, { recursive: true, force: true });
});

describe('Execute', () => {
  test('exit code, stdout and stderr as bytes', async () => {
    const res = await execute(client, sh('printf out; printf err >&2; exit 3'));
    expect(res.exitCode).toBe(3);
    expect(res.stdout.toString()).toBe('out');
    expect(res.stderr.toString()).toBe('err');
  });

  test('env_vars override the daemon\'s environment; cwd is confined to the workspace', async () => {
    process.env.GRPC_TEST_VAR = 'daemon';
    const res = await execute(client, { config: { command: ['/bin/sh', '-c', 'echo $GRPC_TEST_VAR; pwd'], envVars: { GRPC_TEST_VAR: 'call' }, cwd: 'sub' } });
    expect(res.stdout.toString()).toBe(`call\n${path.join(workspace, 'sub')}\n`);
    // An absolute cwd is taken literally (upstream re-roots it): fine inside the workspace, refused elsewhere.
    const inside = await execute(client, { config: { command: ['pwd'], envVars: {}, cwd: path.join(workspace, 'sub') } });
    expect(inside.stdout.toString()).toBe(`${path.join(workspace, 'sub')}\n`);
    await expect(execute(client, { config: { command: ['pwd'], envVars: {}, cwd: '/sub' } }))
      .rejects.toMatchObject({ code: grpc.status.PERMISSION_DENIED, details: expect.stringContaining('relative to the workspace') });
    const root = await execute(client, { config: { command: ['pwd'], envVars: {} } });
    expect(root.stdout.toString()).toBe(`${workspace}\n`);
  });

  test('a cwd above the workspace is PERMISSION_DENIED, a missing one NOT_FOUND', async () => {
    await expect(execute(client, { config: { command: ['pwd'], envVars: {}, cwd: '../..' } })).rejects.toMatchObject({ code: grpc.status.PERMISSION_DENIED });
    await expect(execute(client, { config: { command: ['pwd'], envVars: {}, cwd: 'nope' } })).rejects.toMatchObject({ code: grpc.status.NOT_FOUND, details: expect.stringContaining('config.cwd') });
  });

  test('an empty command is INVALID_ARGUMENT "command is required"; a missing binary NOT_FOUND; a bad env name INVALID_ARGUMENT', async () => {
    await expect(execute(client, { config: { command: [], envVars: {} } })).rejects.toMatchObject({ code: grpc.status.INVALID_ARGUMENT, details: 'command is required' });
    await expect(execute(client, {})).rejects.toMatchObject({ code: grpc.status.INVALID_ARGUMENT, details: 'command is required' });
    await expect(execute(client, { config: { command: ['no-such-binary-xyz'], envVars: {} } })).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });
    await expect(execute(client, { config: { command: ['true'], envVars: { 'A=B': '1' } } })).rejects.toMatchObject({ code: grpc.status.INVALID_ARGUMENT, details: expect.stringContaining('config.env_vars') });
  });

  test('a signal death is exit code -1', async () => {
    expect((await execute(client, sh('kill -KILL $$'))).exitCode).toBe(-1);
  });

  test('the deadline kills the child: DEADLINE_EXCEEDED, and the process is gone', async () => {
    const pidFile = path.join(base, 'execute.pid');
    const call = execute(client, sh(`echo $$ > ${pidFile}; exec sleep 60`), { deadlineMs: 1500 });
    const pid = Number(await writtenText(pidFile));
    await expect(call).rejects.toMatchObject({ code: grpc.status.DEADLINE_EXCEEDED });
    await processGone(pid);
    expect(server.running).toBe(0);
  });

  test('stdout and stderr each keep --max-output-bytes (1024); the rest is read, dropped and counted', async () => {
    // 200 KiB per stream: more than a pipe holds, so the child blocks unless the rest is read.
    const res = await execute(client, sh('head -c 204800 /dev/zero | tr "\\0" o; head -c 204800 /dev/zero | tr "\\0" e >&2; exit 5'));
    expect(res.exitCode).toBe(5);
    const marker = `\n[output truncated: ${204800 - 1024} more bytes not shown]\n`;
    expect(res.stdout.toString()).toBe(`${'o'.repeat(1024)}${marker}`);
    expect(res.stderr.toString()).toBe(`${'e'.repeat(1024)}${marker}`);
  });

  test('a call without a deadline is bounded by --exec-timeout: DEADLINE_EXCEEDED naming it, and the group is gone', async () => {
    const short = new SandboxdServer({
      workspace, port: 0, listenAddress: '127.0.0.1', grpcPort: 0, execTimeoutMs: 1000, maxOutputBytes: 1024, allowRoot: true,
    });
    await short.start();
    const shortClient = processClient(`127.0.0.1:${short.grpcAddress!.port}`);
    try {
      const pidFile = path.join(base, 'exec-timeout.pid');
      // The background sleep shares the group: it must go too.
      const call = execute(shortClient, sh(`sleep 60 & echo $! > ${pidFile}; wait`));
      const pid = Number(await writtenText(pidFile));
      await expect(call).rejects.toMatchObject({ code: grpc.status.DEADLINE_EXCEEDED, details: expect.stringContaining('--exec-timeout (1 s)') });
      await processGone(pid);
      expect(short.running).toBe(0);
    } finally {
      shortClient.close();
      await short.drain(1000);
    }
  });
});

describe('Start', () => {
  test('init first, chunks no larger than --stream-chunk-size, exit last, then OK', async () => {
    const { events, done } = start(client, sh('head -c 5000 /dev/zero | tr "\\0" a; printf E >&2'));
    expect((await done).code).toBe(grpc.status.OK);
    expect(events[0].event).toEqual({ init: { processId: expect.any(Number) } });
    expect(events[events.length - 1].event).toEqual({ exit: { exitCode: 0 } });
    const middle = events.slice(1, -1).map((e) => e.event!);
    for (const e of middle) expect('stdout' in e || 'stderr' in e).toBe(true);
    const sizes = middle.map((e) => ('stdout' in e ? e.stdout.length : 'stderr' in e ? e.stderr.length : -1));
    expect(Math.max(...sizes)).toBeLessThanOrEqual(1000);
    expect(stdoutOf(events)).toBe('a'.repeat(5000));
    expect(middle.filter((e) => 'stderr' in e).map((e) => ('stderr' in e ? e.stderr.toString() : ''))).toEqual(['E']);
  });

  test('WriteStdin feeds the process; eof closes its stdin; the id is gone after exit', async () => {
    const { first, events, done } = firstEvent(client, { config: { command: ['cat'], envVars: {} } });
    const init = (await first).event;
    const id = init && 'init' in init ? init.init.processId : -1;
    await unary(client, 'WriteStdin', { processId: id, payload: { input: Buffer.from('hello ') } });
    await unary(client, 'WriteStdin', { processId: id, payload: { input: Buffer.from('world') } });
    await unary(client, 'WriteStdin', { processId: id, payload: { eof: true } });
    expect((await done).code).toBe(grpc.status.OK);
    expect(stdoutOf(events)).toBe('hello world');
    expect(events[events.length - 1].event).toEqual({ exit: { exitCode: 0 } });
    await expect(unary(client, 'WriteStdin', { processId: id, payload: { eof: true } })).rejects.toMatchObject({ code: grpc.status.NOT_FOUND, details: `process ${id} not found` });
  });

  test('SendSignal SIGTERM reaches the process group: exit -1; unsupported signals are INVALID_ARGUMENT', async () => {
    const { first, events, done } = firstEvent(client, sh('sleep 60'));
    const init = (await first).event;
    const id = init && 'init' in init ? init.init.processId : -1;
    await expect(unary(client, 'SendSignal', { processId: id, signal: 1 })).rejects.toMatchObject({ code: grpc.status.INVALID_ARGUMENT });
    await unary(client, 'SendSignal', { processId: id, signal: 15 });
    expect((await done).code).toBe(grpc.status.OK);
    expect(events[events.length - 1].event).toEqual({ exit: { exitCode: -1 } });
  });

  test('an unknown process id is NOT_FOUND for WriteStdin, SendSignal and ResizeTTY', async () => {
    for (const [rpc, req] of [['WriteStdin', { processId: 9999, payload: { eof: true } }], ['SendSignal', { processId: 9999, signal: 9 }], ['ResizeTTY', { processId: 9999, cols: 1, rows: 1 }]] as const) {
      await expect(unary(client, rpc, req)).rejects.toMatchObject({ code: grpc.status.NOT_FOUND, details: 'process 9999 not found' });
    }
  });

  test('cancelling the stream kills the child', async () => {
    const pidFile = path.join(base, 'start.pid');
    const { call, first, done } = firstEvent(client, sh(`echo $$ > ${pidFile}; exec sleep 60`));
    await first;
    const pid = Number(await writtenText(pidFile));
    call.cancel();
    expect((await done).code).toBe(grpc.status.CANCELLED);
    await processGone(pid);
  });

  test('cancelling a PTY stream kills the command in its own session too, even one that ignores hangups', async () => {
    const pidFile = path.join(base, 'pty.pid');
    const { call, first, done } = firstEvent(client, { ...sh(`trap '' HUP; echo $$ > ${pidFile}; while :; do sleep 1; done`), pty: { cols: 0, rows: 0 } });
    await first;
    const pid = Number(await writtenText(pidFile));
    call.cancel();
    expect((await done).code).toBe(grpc.status.CANCELLED);
    await processGone(pid);
  });

  test('without a PTY, ResizeTTY is FAILED_PRECONDITION', async () => {
    const { first, done } = firstEvent(client, { config: { command: ['cat'], envVars: {} } });
    const init = (await first).event;
    const id = init && 'init' in init ? init.init.processId : -1;
    await expect(unary(client, 'ResizeTTY', { processId: id, cols: 100, rows: 30 })).rejects.toMatchObject({ code: grpc.status.FAILED_PRECONDITION });
    await unary(client, 'WriteStdin', { processId: id, payload: { eof: true } });
    await done;
  });

  test('with a PTY: a terminal of the asked size, input through it, ResizeTTY changes the size', async () => {
    const script = 'tty; stty size; read line; echo "got:$line"; read again; stty size';
    const { first, events, done } = firstEvent(client, { ...sh(script), pty: { cols: 100, rows: 30 } });
    const init = (await first).event;
    const id = init && 'init' in init ? init.init.processId : -1;
    while (!stdoutOf(events).includes('30 100')) await new Promise((r) => setTimeout(r, 20));
    await unary(client, 'WriteStdin', { processId: id, payload: { input: Buffer.from('hi\n') } });
    while (!stdoutOf(events).includes('got:hi')) await new Promise((r) => setTimeout(r, 20));
    await unary(client, 'ResizeTTY', { processId: id, cols: 120, rows: 40 });
    await unary(client, 'WriteStdin', { processId: id, payload: { input: Buffer.from('x\n') } });
    expect((await done).code).toBe(grpc.status.OK);
    const out = stdoutOf(events);
    expect(out).toMatch(/^\/dev\/pts\/\d+\r\n30 100\r\n/);
    expect(out).toMatch(/40 120\r\n$/);
    expect(events.every((e) => !(e.event && 'stderr' in e.event))).toBe(true);
    expect(events[events.length - 1].event).toEqual({ exit: { exitCode: 0 } });
  });
});

test('with a token, calls without it are UNAUTHENTICATED', async () => {
  const guarded = new SandboxdServer({
    workspace, port: 0, listenAddress: '127.0.0.1', grpcPort: 0, token: 's3cret', execTimeoutMs: 60_000, maxOutputBytes: 1024, allowRoot: true,
  });
  await guarded.start();
  const c = processClient(`127.0.0.1:${guarded.grpcAddress!.port}`);
  try {
    await expect(execute(c, sh('true'))).rejects.toMatchObject({ code: grpc.status.UNAUTHENTICATED });
    const { done } = start(c, sh('true'));
    expect((await done).code).toBe(grpc.status.UNAUTHENTICATED);
    expect((await execute(c, sh('echo ok'), { metadata: { authorization: 'Bearer s3cret' } })).stdout.toString()).toBe('ok\n');
  } finally {
    c.close();
    await guarded.drain(1000);
  }
});

test('a drain ends running Start streams once the grace period is over (exit -1, OK)', async () => {
  const draining = new SandboxdServer({ workspace, port: 0, listenAddress: '127.0.0.1', grpcPort: 0, execTimeoutMs: 60_000, maxOutputBytes: 1024, allowRoot: true });
  await draining.start();
  const c = processClient(`127.0.0.1:${draining.grpcAddress!.port}`);
  try {
    const { first, events, done } = firstEvent(c, sh('sleep 60'));
    // A fresh daemon: process ids count from 1.
    expect((await first).event).toEqual({ init: { processId: 1 } });
    await draining.drain(100);
    expect((await done).code).toBe(grpc.status.OK);
    expect(events[events.length - 1].event).toEqual({ exit: { exitCode: -1 } });
  } finally {
    c.close();
  }
});
