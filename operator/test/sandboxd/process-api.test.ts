/**
 * The runtime's process API (docs/runtime-processes.md): `/execute` streamed as NDJSON when asked,
 * background processes under `/processes`, replay and follow by seq, the bound on kept output and
 * the gap it leaves, stdin, signals to the process group, the limits and what is kept of finished
 * processes. Streaming is proven by events, never by clocks: a command prints, then waits for a file
 * the test creates only once it has seen that output arrive.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import { alive, exec, json, request, runtimeFixture } from './runtime-http';
import { NdjsonLines } from '../../../test/integration/data-plane/ndjson-lines';
import { ManagedProcess } from '../../src/sandboxd/process-registry';

const NDJSON = { Accept: 'application/x-ndjson' };
const Lines = NdjsonLines;

/** A shell command that waits (polling) until `file` exists in the workspace. */
const waitFor = (file: string) => `while [ ! -e ${file} ]; do sleep 0.02; done`;

let gates = 0;
/** A fresh file name to gate a command on. */
const gate = () => `gate-${++gates}`;

/** Polls `read` until `done` holds of its value: waiting for an event the API reports, not for a time. */
async function until<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    await new Promise((r) => setTimeout(r, 20));
  }
}

function post(port: number, urlPath: string, body: unknown, headers: http.OutgoingHttpHeaders = {}) {
  return request(port, 'POST', urlPath, { body: typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body), headers: { 'Content-Type': 'application/json', ...headers } });
}

async function startBackground(port: number, body: Record<string, unknown>): Promise<any> {
  const reply = await post(port, '/processes', body);
  expect({ status: reply.status, body: json(reply) }).toMatchObject({ status: 201 });
  return json(reply);
}

const info = async (port: number, id: string) => json(await request(port, 'GET', `/processes/${id}`));

describe('kept output', () => {
  test('stays within the byte bound, and dropped events free their slots, however much a process writes', () => {
    const bound = 1024 * 1024;
    const p = new ManagedProcess('writer', true, undefined, bound);
    const chunk = Buffer.alloc(64 * 1024, 'a');
    for (let i = 0; i < 2000; i++) {
      p.output('stdout', chunk);
      expect(p.retained.bytes).toBeLessThanOrEqual(bound);
    }
    const { events, slots } = p.retained;
    // 1 MiB holds 15 chunks of 64 KiB (each counts 64 bytes more); dropped slots are compacted early.
    expect(events).toBe(15);
    expect(slots).toBeLessThanOrEqual(events + 65);
    // Replay still reads what is kept, after the gap.
    const replay = p.after(0);
    expect(replay.gap).toEqual({ from: 1, to: 2000 - events });
    expect(replay.events.map((e) => e.seq)).toEqual(Array.from({ length: events }, (_, i) => 2000 - events + 1 + i));
  });
});

describe('/execute as NDJSON', () => {
  const rt = runtimeFixture('sandboxd-ndjson-', { pingMs: 50 });

  test('start, output events as the command writes them (seq from 1, one by one), exit last', async () => {
    const g = gate();
    const lines = await Lines.open(rt.port, 'POST', '/execute', { command: `echo first; echo warn >&2; ${waitFor(g)}; echo second`, shell: true });
    expect(lines.res.statusCode).toBe(200);
    expect(lines.res.headers['content-type']).toBe('application/x-ndjson');
    expect(lines.res.headers['cache-control']).toBe('no-store');
    const start = await lines.next();
    expect(start).toEqual({ type: 'start', id: expect.stringMatching(/^p-[0-9a-f]{16}$/), pid: expect.any(Number) });
    // Both lines before the gate arrive while the command is still waiting on it.
    const early = [await lines.next(), await lines.next()];
    expect(early.map((e) => e.type).sort()).toEqual(['stderr', 'stdout']);
    expect(early.find((e) => e.type === 'stdout').data).toBe('first\n');
    expect(early.find((e) => e.type === 'stderr').data).toBe('warn\n');
    expect((await info(rt.port, start.id)).status).toBe('running');
    writeFileSync(path.join(rt.workspace, g), '');
    const rest = await lines.rest();
    expect(rest).toEqual([
      { type: 'stdout', seq: 3, data: 'second\n' },
      { type: 'exit', seq: 4, exit_code: 0, timed_out: false, signal: null },
    ]);
    expect(early.map((e) => e.seq).sort()).toEqual([1, 2]);
    expect((await info(rt.port, start.id)).status).toBe('exited');
  });

  test('a UTF-8 character split across two writes arrives whole, in one event', async () => {
    // Negative control: decoding the first write's bytes alone would give a replacement character.
    expect(Buffer.from([0xe2, 0x82]).toString('utf8')).toContain('\ufffd');
    const g = gate();
    const lines = await Lines.open(rt.port, 'POST', '/execute', { command: `printf 'x\\342\\202'; ${waitFor(g)}; printf '\\254\\n'`, shell: true });
    await lines.next(); // start
    expect(await lines.next()).toEqual({ type: 'stdout', seq: 1, data: 'x' });
    writeFileSync(path.join(rt.workspace, g), '');
    expect(await lines.next()).toEqual({ type: 'stdout', seq: 2, data: '€\n' });
    expect(await lines.next()).toMatchObject({ type: 'exit', exit_code: 0 });
  });

  test('a silent command gets pings, which carry no seq', async () => {
    const g = gate();
    const lines = await Lines.open(rt.port, 'POST', '/execute', { command: waitFor(g), shell: true });
    await lines.next();
    await until(async () => lines.all, (all) => all.some((l) => l.type === 'ping'));
    expect(lines.all.find((l) => l.type === 'ping')).toEqual({ type: 'ping' });
    writeFileSync(path.join(rt.workspace, g), '');
    expect(await lines.rest()).toEqual([{ type: 'exit', seq: 1, exit_code: 0, timed_out: false, signal: null }]);
  });

  test('the argv-mode hint and the timeout message are stderr events before the exit, as the JSON answer carries them', async () => {
    const hinted = await (await Lines.open(rt.port, 'POST', '/execute', { command: 'echo a | b' })).rest();
    expect(hinted.find((e) => e.type === 'stdout').data).toBe('a | b\n');
    expect(hinted.find((e) => e.type === 'stderr').data).toMatch(/without a shell.*"\|"/s);
    const timedOut = await (await Lines.open(rt.port, 'POST', '/execute', { command: 'echo started; sleep 30', shell: true, timeout_seconds: 0.3 })).rest();
    expect(timedOut.slice(-2)).toEqual([
      { type: 'stderr', seq: 2, data: 'Command timed out after 0.3 seconds; it and every process it started were killed\n' },
      { type: 'exit', seq: 3, exit_code: 124, timed_out: true, signal: 'SIGKILL' },
    ]);
  });

  test('refusals are the JSON /execute\'s, before any NDJSON', async () => {
    const cases: Array<[string | object, number]> = [
      ['{not json', 422],
      [{ command: 42 }, 422],
      [{ command: 'pwd', cwd: '../..' }, 403],
      [{ command: 'pwd', cwd: 'no/such/dir' }, 404],
      [{ command: 'true', timeout_seconds: -1 }, 422],
    ];
    for (const [body, status] of cases) {
      const text = typeof body === 'string' ? body : JSON.stringify(body);
      const streamed = await post(rt.port, '/execute', text, NDJSON);
      const plain = await post(rt.port, '/execute', text);
      expect({ status: streamed.status, type: streamed.headers['content-type'] }).toEqual({ status, type: 'application/json' });
      expect(streamed.body.toString()).toBe(plain.body.toString());
    }
    // A command that cannot start is a failed result, as JSON too (no process was made).
    const missing = await post(rt.port, '/execute', { command: 'no-such-binary-here' }, NDJSON);
    expect(missing.headers['content-type']).toBe('application/json');
    expect(json(missing)).toMatchObject({ stdout: '', exit_code: 1, timed_out: false, stderr: expect.stringMatching(/^Failed to execute command: /) });
  });

  test('without Accept (upstream\'s clients), with another type, or with q=0, /execute answers JSON as ever', async () => {
    const expected = { stdout: 'hi\n', stderr: '', exit_code: 0, timed_out: false };
    for (const headers of [{}, { Accept: 'application/json' }, { Accept: 'application/x-ndjson;q=0, application/json' }]) {
      const reply = await exec(rt.port, { command: 'echo hi' }, headers);
      expect(reply.headers['content-type']).toBe('application/json');
      expect(reply.body.toString()).toBe(JSON.stringify(expected));
    }
  });

  test('a dropped connection does not kill the command: it runs on, and its output is replayed after the last seq seen', async () => {
    const g = gate();
    const lines = await Lines.open(rt.port, 'POST', '/execute', { command: `echo before; ${waitFor(g)}; echo after; echo done > dropped.txt`, shell: true });
    const { id } = await lines.next();
    const before = await lines.next();
    expect(before).toEqual({ type: 'stdout', seq: 1, data: 'before\n' });
    expect((await info(rt.port, id)).followers).toBe(1);
    lines.cut();
    // The runtime has seen the drop once nobody follows the process; only then may it go on.
    await until(() => info(rt.port, id), (p) => p.followers === 0);
    expect((await info(rt.port, id)).status).toBe('running');
    writeFileSync(path.join(rt.workspace, g), '');
    const replay = await (await Lines.open(rt.port, 'GET', `/processes/${id}/output?after=${before.seq}`)).rest();
    expect(replay[0]).toMatchObject({ type: 'process', id, background: false });
    expect(replay.slice(1)).toEqual([
      { type: 'stdout', seq: 2, data: 'after\n' },
      { type: 'exit', seq: 3, exit_code: 0, timed_out: false, signal: null },
    ]);
    expect(readFileSync(path.join(rt.workspace, 'dropped.txt'), 'utf8')).toBe('done\n');
  });
});

describe('background processes', () => {
  const rt = runtimeFixture('sandboxd-processes-', {
    maxBackgroundProcesses: 2, maxConcurrentCommands: 1, processRetention: { outputBytes: 100_000, finished: 3 },
  });

  test('start answers 201 with the process; list and get show it; output replays and follows to the exit', async () => {
    const g = gate();
    const started = await startBackground(rt.port, { command: `echo one; ${waitFor(g)}; echo two; exit 3`, shell: true, tag: 'server' });
    expect(started).toEqual({
      id: expect.stringMatching(/^p-/),
      pid: expect.any(Number),
      command: expect.stringContaining('echo one'),
      tag: 'server',
      background: true,
      status: 'running',
      exit_code: null,
      timed_out: false,
      signal: null,
      started_at: expect.any(String),
      ended_at: null,
      stdin: false,
      followers: 0,
    });
    expect(alive(started.pid)).toBe(true);
    const listed = json(await request(rt.port, 'GET', '/processes')).processes;
    expect(listed.map((p: any) => p.id)).toContain(started.id);
    const follow = await Lines.open(rt.port, 'GET', `/processes/${started.id}/output`);
    expect(await follow.next()).toMatchObject({ type: 'process', id: started.id, status: 'running' });
    expect(await follow.next()).toEqual({ type: 'stdout', seq: 1, data: 'one\n' });
    writeFileSync(path.join(rt.workspace, g), '');
    expect(await follow.rest()).toEqual([
      { type: 'stdout', seq: 2, data: 'two\n' },
      { type: 'exit', seq: 3, exit_code: 3, timed_out: false, signal: null },
    ]);
    const ended = await info(rt.port, started.id);
    expect(ended).toMatchObject({ status: 'exited', exit_code: 3, ended_at: expect.any(String) });
    // A replay after the exit: everything after the seq asked for; follow=false on a finished process is the same.
    const replay = await (await Lines.open(rt.port, 'GET', `/processes/${started.id}/output?after=1&follow=false`)).rest();
    expect(replay.map((e) => e.type)).toEqual(['process', 'stdout', 'exit']);
  });

  test('follow=false on a running process replays what it has and ends without waiting', async () => {
    const g = gate();
    const p = await startBackground(rt.port, { command: `echo ready; ${waitFor(g)}`, shell: true });
    const first = await Lines.open(rt.port, 'GET', `/processes/${p.id}/output`);
    await first.next();
    await first.next(); // ready: now it is kept
    first.cut();
    const snapshot = await (await Lines.open(rt.port, 'GET', `/processes/${p.id}/output?follow=false`)).rest();
    expect(snapshot.map((e) => e.type)).toEqual(['process', 'stdout']);
    writeFileSync(path.join(rt.workspace, g), '');
    await (await Lines.open(rt.port, 'GET', `/processes/${p.id}/output?after=1`)).rest();
  });

  test('output beyond the retention bound drops the oldest events: a replay from before them starts with a gap', async () => {
    // 300 KiB through a pipe arrive in several reads (64 KiB at most each), so in several events.
    const p = await startBackground(rt.port, { command: "head -c 307200 /dev/zero | tr '\\0' a", shell: true });
    // Nobody follows it while it writes: once it has ended, only the newest output is kept.
    await until(() => info(rt.port, p.id), (i) => i.status === 'exited');
    const all = await (await Lines.open(rt.port, 'GET', `/processes/${p.id}/output`)).rest();
    const gap = all[1];
    expect(gap).toEqual({ type: 'gap', from: 1, to: expect.any(Number) });
    const kept = all.slice(2, -1);
    expect(kept.length).toBeGreaterThan(0);
    expect(kept[0].seq).toBe(gap.to + 1);
    kept.forEach((e, i) => expect(e.seq).toBe(gap.to + 1 + i));
    const keptBytes = kept.reduce((n, e) => n + e.data.length, 0);
    expect(keptBytes).toBeLessThan(307200);
    expect(all[all.length - 1]).toMatchObject({ type: 'exit', exit_code: 0, seq: kept[kept.length - 1].seq + 1 });
    // Negative control: a replay that starts inside what is kept has no gap.
    const inside = await (await Lines.open(rt.port, 'GET', `/processes/${p.id}/output?after=${gap.to}`)).rest();
    expect(inside.map((e) => e.type)).not.toContain('gap');
    expect(inside.slice(1)).toEqual(all.slice(2));
  });

  test('a follower that reads slower than the process writes is not buffered without bound: it gets a gap, then the rest', async () => {
    const total = 32 * 1024 * 1024;
    const p = await startBackground(rt.port, { command: `head -c ${total} /dev/zero | tr '\\0' a`, shell: true });
    const follow = await Lines.open(rt.port, 'GET', `/processes/${p.id}/output`);
    // Not read while the process writes: the runtime may only hand the socket what it has room for.
    follow.res.pause();
    await until(() => info(rt.port, p.id), (i) => i.status === 'exited');
    follow.res.resume();
    const lines = await follow.rest();
    const received = lines.reduce((n, l) => n + (typeof l.data === 'string' ? l.data.length : 0), 0);
    const gaps = lines.filter((l) => l.type === 'gap');
    // Negative control: had every byte been queued for the slow reader, all of it would have arrived.
    expect(received).toBeLessThan(total);
    expect(gaps.length).toBeGreaterThan(0);
    const seqs = lines.filter((l) => typeof l.seq === 'number').map((l) => l.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    for (const g of gaps) expect(lines[lines.indexOf(g) + 1].seq).toBe(g.to + 1);
    expect(lines[lines.length - 1]).toMatchObject({ type: 'exit', exit_code: 0 });
  });

  test('stdin: written as sent, closed with eof=true; 409 once closed, and for a process started without it', async () => {
    const p = await startBackground(rt.port, { command: 'cat', stdin: true });
    expect(p.stdin).toBe(true);
    const follow = await Lines.open(rt.port, 'GET', `/processes/${p.id}/output`);
    await follow.next();
    const wrote = await request(rt.port, 'POST', `/processes/${p.id}/stdin`, { body: 'hello\n', headers: { 'Content-Type': 'application/octet-stream' } });
    expect(wrote.status).toBe(200);
    expect(await follow.next()).toEqual({ type: 'stdout', seq: 1, data: 'hello\n' });
    expect((await request(rt.port, 'POST', `/processes/${p.id}/stdin?eof=true`, { body: 'bye\n' })).status).toBe(200);
    expect(await follow.rest()).toEqual([
      { type: 'stdout', seq: 2, data: 'bye\n' },
      { type: 'exit', seq: 3, exit_code: 0, timed_out: false, signal: null },
    ]);
    const closed = await request(rt.port, 'POST', `/processes/${p.id}/stdin`, { body: 'more' });
    expect(closed.status).toBe(409);
    const without = await startBackground(rt.port, { command: 'sleep 30' });
    const refused = await request(rt.port, 'POST', `/processes/${without.id}/stdin`, { body: 'x' });
    expect(refused.status).toBe(409);
    expect(json(refused).detail).toMatch(/without "stdin": true/);
    await post(rt.port, `/processes/${without.id}/signal`, { signal: 'SIGKILL' });
    await (await Lines.open(rt.port, 'GET', `/processes/${without.id}/output`)).rest();
  });

  test('stdin: one write in flight per process; another while a process does not read is 429, then accepted once it has', async () => {
    const g = gate();
    const p = await startBackground(rt.port, { command: `${waitFor(g)}; cat >/dev/null`, stdin: true, shell: true });
    // 1 MiB is more than a pipe holds: this write waits until the process reads.
    const big = request(rt.port, 'POST', `/processes/${p.id}/stdin`, { body: Buffer.alloc(1024 * 1024, 'a'), headers: { 'Content-Type': 'application/octet-stream' } });
    const refused = await until(() => request(rt.port, 'POST', `/processes/${p.id}/stdin`, { body: 'x' }), (r) => r.status === 429);
    expect(refused.headers['retry-after']).toBe('1');
    expect(json(refused).detail).toMatch(/stdin write in flight/);
    writeFileSync(path.join(rt.workspace, g), '');
    expect((await big).status).toBe(200);
    // Negative control: once the first is answered, the next write is taken.
    expect((await request(rt.port, 'POST', `/processes/${p.id}/stdin?eof=true`, { body: 'x' })).status).toBe(200);
    await (await Lines.open(rt.port, 'GET', `/processes/${p.id}/output`)).rest();
  });

  test('a signal goes to the whole process group; 409 once the process has ended; unknown signals are 422', async () => {
    const p = await startBackground(rt.port, { command: 'sleep 300 & echo $!; wait', shell: true });
    const follow = await Lines.open(rt.port, 'GET', `/processes/${p.id}/output`);
    await follow.next();
    const child = Number((await follow.next()).data.trim());
    // Negative control: the shell's child is running before the signal.
    expect(alive(child)).toBe(true);
    expect((await post(rt.port, `/processes/${p.id}/signal`, { signal: 'SIGQUIT' })).status).toBe(422);
    const sent = await post(rt.port, `/processes/${p.id}/signal`, { signal: 'SIGTERM' });
    expect(sent.status).toBe(202);
    expect(await follow.rest()).toEqual([{ type: 'exit', seq: 2, exit_code: -15, timed_out: false, signal: 'SIGTERM' }]);
    await until(async () => alive(child), (a) => !a);
    expect((await post(rt.port, `/processes/${p.id}/signal`, { signal: 'SIGTERM' })).status).toBe(409);
  });

  test('at --max-background-processes running, a start is 429 with Retry-After; they take no command slot', async () => {
    const first = await startBackground(rt.port, { command: 'sleep 300' });
    const second = await startBackground(rt.port, { command: 'sleep 300' });
    const refused = await post(rt.port, '/processes', { command: 'sleep 300' });
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBe('1');
    expect(json(refused)).toMatchObject({ detail: expect.stringMatching(/--max-background-processes \(2\)/), running: 2, limit: 2 });
    // Two background processes run and --max-concurrent-commands is 1: /execute still has its slot.
    expect(json(await exec(rt.port, { command: 'echo slot' })).stdout).toBe('slot\n');
    await post(rt.port, `/processes/${first.id}/signal`, { signal: 'SIGKILL' });
    await (await Lines.open(rt.port, 'GET', `/processes/${first.id}/output`)).rest();
    const third = await startBackground(rt.port, { command: 'true' });
    await (await Lines.open(rt.port, 'GET', `/processes/${third.id}/output`)).rest();
    await post(rt.port, `/processes/${second.id}/signal`, { signal: 'SIGKILL' });
    await (await Lines.open(rt.port, 'GET', `/processes/${second.id}/output`)).rest();
  });

  test('a streamed /execute holds a command slot until its command ends, not until its connection does', async () => {
    const g = gate();
    const lines = await Lines.open(rt.port, 'POST', '/execute', { command: waitFor(g), shell: true });
    const { id } = await lines.next();
    lines.cut();
    await until(() => info(rt.port, id), (p) => p.followers === 0);
    const refused = await exec(rt.port, { command: 'true' }, NDJSON);
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBe('1');
    writeFileSync(path.join(rt.workspace, g), '');
    await (await Lines.open(rt.port, 'GET', `/processes/${id}/output`)).rest();
    expect((await exec(rt.port, { command: 'true' })).status).toBe(200);
  });

  test('following a finished process from its exit seq ends at once; an after beyond the last seq is 422, running or not', async () => {
    const p = await startBackground(rt.port, { command: 'echo done' });
    const all = await (await Lines.open(rt.port, 'GET', `/processes/${p.id}/output`)).rest();
    const exit = all[all.length - 1];
    expect(exit).toMatchObject({ type: 'exit', seq: 2 });
    // Before: the follower waited (pinging) for events a finished process never sends.
    const fromExit = await (await Lines.open(rt.port, 'GET', `/processes/${p.id}/output?after=${exit.seq}`)).rest();
    expect(fromExit.map((e) => e.type)).toEqual(['process']);
    const beyond = await request(rt.port, 'GET', `/processes/${p.id}/output?after=${exit.seq + 1}`);
    expect(beyond.status).toBe(422);
    expect(json(beyond).detail[0]).toMatchObject({ loc: ['query', 'after'], msg: expect.stringMatching(/beyond the last seq .*\(2\)/) });
    // A running process: an after beyond its last seq would skip its exit, so it is refused too.
    const g = gate();
    const running = await startBackground(rt.port, { command: `echo up; ${waitFor(g)}`, shell: true });
    await until(() => Lines.open(rt.port, 'GET', `/processes/${running.id}/output?follow=false`).then((l) => l.rest()), (e) => e.length >= 2);
    const ahead = await request(rt.port, 'GET', `/processes/${running.id}/output?after=5`);
    expect(ahead.status).toBe(422);
    expect(json(ahead).detail[0]).toMatchObject({ loc: ['query', 'after'], msg: expect.stringMatching(/beyond the last seq .*\(1\)/) });
    // Negative control: its last seq itself is accepted and followed to the exit.
    const follower = await Lines.open(rt.port, 'GET', `/processes/${running.id}/output?after=1`);
    expect((await follower.next()).type).toBe('process');
    writeFileSync(path.join(rt.workspace, g), '');
    expect(await follower.rest()).toEqual([{ type: 'exit', seq: 2, exit_code: 0, timed_out: false, signal: null }]);
  });

  test('at most 8 connections follow one process: a 9th is 429 with Retry-After; follow=false ones count while open only', async () => {
    const g = gate();
    const p = await startBackground(rt.port, { command: waitFor(g), shell: true });
    const followers = [];
    for (let i = 0; i < 8; i++) {
      const l = await Lines.open(rt.port, 'GET', `/processes/${p.id}/output`);
      expect((await l.next()).type).toBe('process');
      followers.push(l);
    }
    const refused = await request(rt.port, 'GET', `/processes/${p.id}/output`);
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBe('1');
    expect(json(refused).detail).toMatch(/8 connections following/);
    writeFileSync(path.join(rt.workspace, g), '');
    for (const l of followers) expect((await l.rest()).map((e) => e.type)).toEqual(['exit']);
    // Negative control: once they have ended, following works again.
    expect((await (await Lines.open(rt.port, 'GET', `/processes/${p.id}/output`)).rest()).map((e) => e.type)).toEqual(['process', 'exit']);
  });

  test('DELETE: 409 while running, 200 once ended, then 404', async () => {
    const g = gate();
    const p = await startBackground(rt.port, { command: waitFor(g), shell: true });
    const busy = await request(rt.port, 'DELETE', `/processes/${p.id}`);
    expect(busy.status).toBe(409);
    expect(json(busy).detail).toMatch(/still running/);
    writeFileSync(path.join(rt.workspace, g), '');
    await (await Lines.open(rt.port, 'GET', `/processes/${p.id}/output`)).rest();
    expect(json(await request(rt.port, 'DELETE', `/processes/${p.id}`))).toEqual({ id: p.id, deleted: true });
    expect((await request(rt.port, 'GET', `/processes/${p.id}`)).status).toBe(404);
    expect((await request(rt.port, 'GET', `/processes/${p.id}/output`)).status).toBe(404);
  });

  test('finished processes are kept up to the count, the oldest forgotten first; running ones always', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const p = await startBackground(rt.port, { command: `echo ${i}` });
      await (await Lines.open(rt.port, 'GET', `/processes/${p.id}/output`)).rest();
      ids.push(p.id);
    }
    const g = gate();
    const running = await startBackground(rt.port, { command: waitFor(g), shell: true });
    const listed = json(await request(rt.port, 'GET', '/processes')).processes.map((p: any) => p.id);
    expect(listed).toContain(running.id);
    expect(listed).not.toContain(ids[0]);
    expect(listed).toEqual(expect.arrayContaining(ids.slice(1)));
    expect(listed.filter((id: string) => id !== running.id)).toHaveLength(3);
    expect((await request(rt.port, 'GET', `/processes/${ids[0]}`)).status).toBe(404);
    writeFileSync(path.join(rt.workspace, g), '');
    await (await Lines.open(rt.port, 'GET', `/processes/${running.id}/output`)).rest();
  });

  test('bad requests: fields named in 422s, a missing cwd 404, an unknown id 404, wrong methods 405', async () => {
    expect(json(await post(rt.port, '/processes', { command: 'true', stdin: 'yes' })).detail[0].loc).toEqual(['body', 'stdin']);
    expect(json(await post(rt.port, '/processes', { command: 'true', tag: 'x'.repeat(300) })).detail[0].loc).toEqual(['body', 'tag']);
    const missing = await post(rt.port, '/processes', { command: 'no-such-binary-here' });
    expect(missing.status).toBe(422);
    expect(json(missing).detail[0].msg).toMatch(/^Failed to execute command: /);
    expect((await post(rt.port, '/processes', { command: 'true', cwd: 'nowhere' })).status).toBe(404);
    expect((await post(rt.port, '/processes', { command: 'true', cwd: '/etc' })).status).toBe(403);
    expect((await request(rt.port, 'GET', '/processes/p-0000000000000000')).status).toBe(404);
    expect((await request(rt.port, 'GET', '/processes/p-0000000000000000/output?after=x')).status).toBe(404);
    expect((await request(rt.port, 'PUT', '/processes')).status).toBe(405);
    expect((await request(rt.port, 'GET', '/processes/p-1/signal')).status).toBe(405);
    const p = await startBackground(rt.port, { command: 'true' });
    expect((await request(rt.port, 'GET', `/processes/${p.id}/output?after=-1`)).status).toBe(422);
    await (await Lines.open(rt.port, 'GET', `/processes/${p.id}/output`)).rest();
  });
});

describe('auth and drain', () => {
  const rt = runtimeFixture('sandboxd-processes-auth-', { token: 's3cret' });

  test('with a token, the process API needs it like every other route', async () => {
    expect((await request(rt.port, 'GET', '/processes')).status).toBe(401);
    expect((await post(rt.port, '/processes', { command: 'true' })).status).toBe(401);
    expect((await request(rt.port, 'GET', '/processes', { headers: { Authorization: 'Bearer s3cret' } })).status).toBe(200);
  });

  test('a drain sends background processes SIGTERM first, so a server may clean up within the grace period', async () => {
    const headers = { Authorization: 'Bearer s3cret' };
    const reply = await post(rt.port, '/processes', { command: "trap 'echo bye > term.txt; exit 0' TERM; echo up; while :; do sleep 0.02; done", shell: true }, headers);
    const { id } = json(reply);
    const follow = await Lines.open(rt.port, 'GET', `/processes/${id}/output`, undefined, headers);
    await follow.next();
    expect(await follow.next()).toMatchObject({ data: 'up\n' });
    expect(existsSync(path.join(rt.workspace, 'term.txt'))).toBe(false);
    // Without the SIGTERM the loop would run until the grace period ends and be killed, writing nothing.
    await rt.server.drain(30_000);
    expect(readFileSync(path.join(rt.workspace, 'term.txt'), 'utf8')).toBe('bye\n');
  });
});
