/**
 * `run` streaming by default and background processes, against the real runtime process on
 * 127.0.0.1 (docs/runtime-processes.md). Streaming is proven by events, not clocks: the command
 * prints, then waits for a file that the test's onStdout creates only once it has that output.
 * A cut stream is made by a loopback TCP proxy in front of the runtime that drops the connection
 * after the first output event; the fallback to upstream's JSON answer by a small HTTP server that
 * answers as upstream's runtime does (a negative control of the discovery).
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as path from 'node:path';
import { handleFor, runtimeFixture } from './handle';
import type { ProcessInfo as RuntimeProcess } from '../../operator/src/sandboxd/process-registry';
import { SandboxConfigError, SandboxConnectionError, SandboxError, SandboxProcessError } from '../src/errors';
import { MAX_LINE_BYTES, NdjsonReader, ProcessOutput } from '../src/process-stream';
import type { WireProcess } from '../src/runtime-api';

// The SDK copies the runtime's process type (it may not import the operator): `tsc -p sdk/test`
// fails here when the copy drifts from the source, either way.
export const wireFromRuntime = (p: RuntimeProcess): WireProcess => p;
export const runtimeFromWire = (p: WireProcess): RuntimeProcess => ({ ...p, followers: p.followers ?? 0 });

const fixture = runtimeFixture();

let gates = 0;
/** A fresh file name, and a shell loop that waits until it exists in the workspace. */
function gate(): { name: string; wait: string; open: () => void } {
  const name = `gate-${process.pid}-${++gates}`;
  return {
    name,
    wait: `while [ ! -e ${name} ]; do sleep 0.02; done`,
    open: () => fs.writeFileSync(path.join(fixture().runtime.workspace, name), ''),
  };
}

/** A promise and its resolve, to wait for a callback. */
function signal<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/**
 * A TCP proxy to the runtime on 127.0.0.1 that records each request line and drops the first
 * connection whose answer so far `cutAfter` picks (both ways), right after passing that data on.
 * `refuseFirst` drops the first connection as soon as its request arrives, unanswered;
 * `refuseAfterCut`, every connection after the cut. `cutAt` cuts the first connection inside a chunk:
 * once the answer so far is long enough, only its first `cutAt(answer)` characters (latin1) are passed on.
 */
async function proxy(target: string, options: {
  cutAfter?: (answer: string) => boolean; cutAt?: (answer: string) => number | undefined; refuseFirst?: boolean; refuseAfterCut?: boolean;
}) {
  const { port } = new URL(target);
  const requests: string[] = [];
  const sockets = new Set<net.Socket>();
  let cuts = 0;
  let connections = 0;
  const server = net.createServer((client) => {
    const n = ++connections;
    const upstream = net.connect(Number(port), '127.0.0.1');
    sockets.add(client).add(upstream);
    let answer = '';
    let cut = false;
    const drop = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('data', (chunk: Buffer) => {
      const text = chunk.toString('latin1');
      for (const line of text.split('\r\n')) if (/^(GET|POST|DELETE|PUT) /.test(line)) requests.push(line);
      if ((options.refuseFirst && n === 1) || (options.refuseAfterCut && cuts > 0)) return drop();
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (cut) return;
      const at = cuts === 0 ? options.cutAt?.(answer + chunk.toString('latin1')) : undefined;
      if (at !== undefined) {
        client.write(chunk.subarray(0, Math.max(0, at - answer.length)));
        cut = true;
        cuts++;
        return drop();
      }
      client.write(chunk);
      answer += chunk.toString('latin1');
      if (cuts === 0 && options.cutAfter?.(answer)) {
        cut = true;
        cuts++;
        drop();
      }
    });
    client.on('error', drop);
    upstream.on('error', drop);
    client.on('close', drop);
    upstream.on('close', drop);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    requests,
    get cuts() {
      return cuts;
    },
    close: () => new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    }),
  };
}

describe('run streams by default', () => {
  test('onStdout is called as the command writes, before it ends: the command goes on only once the first output has arrived', async () => {
    const g = gate();
    const chunks: string[] = [];
    const result = await fixture().sandbox.run(`echo first; ${g.wait}; echo second`, {
      timeoutMs: 30_000,
      onStdout: (c) => {
        chunks.push(c);
        if (c.includes('first')) g.open();
      },
    });
    // Had the output come only at the end, the command would have waited for the gate until its time limit.
    expect(result).toEqual({ stdout: 'first\nsecond\n', stderr: '', exitCode: 0, timedOut: false });
    expect(chunks).toEqual(['first\n', 'second\n']);
  });

  test('stdout and stderr go to their own callbacks, and the result carries both', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const result = await fixture().sandbox.run('echo out; echo err >&2; exit 4', { onStdout: (c) => out.push(c), onStderr: (c) => err.push(c) });
    expect(result).toEqual({ stdout: 'out\n', stderr: 'err\n', exitCode: 4, timedOut: false });
    expect(out.join('')).toBe('out\n');
    expect(err.join('')).toBe('err\n');
  });

  test('a callback that throws ends the run with its error, and the command is killed', async () => {
    const pending = fixture().sandbox.run('echo go; sleep 60; echo never > survived.txt', {
      timeoutMs: 120_000,
      onStdout: () => {
        throw new Error('agent refused the output');
      },
    });
    await expect(pending).rejects.toThrow('agent refused the output');
    const listed = await fixture().sandbox.processes.list();
    const killed = listed.filter((p) => p.command.includes('survived.txt'));
    expect(killed).toHaveLength(1);
    const info = await fixture().sandbox.processes.attach(killed[0].id).then((h) => h.wait());
    expect(info.exitCode).toBe(-9);
    expect(fs.existsSync(path.join(fixture().runtime.workspace, 'survived.txt'))).toBe(false);
  });

  test('a stream cut after the command started is followed again after the last event: no output lost or repeated, the command run once', async () => {
    const g = gate();
    const cutter = await proxy(fixture().runtime.url, { cutAfter: (answer) => answer.includes('"type":"stdout"') });
    try {
      const chunks: string[] = [];
      const result = await handleFor(cutter.url).run(`echo run >> runs-${g.name}; echo one; ${g.wait}; echo two`, {
        timeoutMs: 30_000,
        onStdout: (c) => {
          chunks.push(c);
          if (c.includes('one')) g.open();
        },
      });
      expect(result).toEqual({ stdout: 'one\ntwo\n', stderr: '', exitCode: 0, timedOut: false });
      expect(chunks).toEqual(['one\n', 'two\n']);
      // Negative control: the stream really was cut, and the rest came from a reattach after seq 1.
      expect(cutter.cuts).toBe(1);
      expect(cutter.requests.filter((r) => r.startsWith('POST /execute'))).toHaveLength(1);
      expect(cutter.requests.some((r) => /^GET \/processes\/p-[0-9a-f]+\/output\?after=1 /.test(r))).toBe(true);
      expect(fs.readFileSync(path.join(fixture().runtime.workspace, `runs-${g.name}`), 'utf8')).toBe('run\n');
    } finally {
      await cutter.close();
    }
  });

  test('when the stream cannot be followed again within the retries, run fails naming the process, which runs on', async () => {
    const g = gate();
    const cutter = await proxy(fixture().runtime.url, { cutAfter: (answer) => answer.includes('"type":"stdout"'), refuseAfterCut: true });
    try {
      const err = await handleFor(cutter.url, { retry: { attempts: 3, initialDelayMs: 1, maxDelayMs: 5 } })
        .run(`echo one; ${g.wait}; echo two`, { timeoutMs: 30_000 })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SandboxProcessError);
      const id = (err as SandboxProcessError).processId;
      expect((err as Error).message).toContain(`sandbox.processes.attach("${id}", { after: 1 })`);
      expect(cutter.requests.filter((r) => r.startsWith('GET /processes/'))).toHaveLength(3);
      // It was never killed: attached directly, it finishes once let go on.
      g.open();
      expect(await (await fixture().sandbox.processes.attach(id, { after: 1 })).wait()).toMatchObject({ stdout: 'two\n', exitCode: 0 });
    } finally {
      await cutter.close();
    }
  });

  test.each([
    ['right after the headers', (answer: string) => (answer.includes('\r\n\r\n') ? answer.indexOf('\r\n\r\n') + 4 : undefined)],
    ['inside the start line', (answer: string) => (answer.includes('"type":"start"') ? answer.indexOf('"type":"start"') + 5 : undefined)],
  ])('a connection cut %s, with retry: true: an error saying the command may have started, not sent again, run once', async (_where, cutAt) => {
    const marker = `runs-cut-${process.pid}-${++gates}`;
    const cutter = await proxy(fixture().runtime.url, { cutAt });
    try {
      const err = await handleFor(cutter.url, { retry: { attempts: 3, initialDelayMs: 1, maxDelayMs: 5 } })
        .run(`echo run >> ${marker}`, { retry: true })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SandboxConnectionError);
      expect((err as Error).message).toContain('may have started');
      // Negative control: the cut happened, and the POST went once.
      expect(cutter.cuts).toBe(1);
      expect(cutter.requests.filter((r) => r.startsWith('POST /execute'))).toHaveLength(1);
      const file = path.join(fixture().runtime.workspace, marker);
      for (let i = 0; i < 250 && !fs.existsSync(file); i++) await new Promise((r) => setTimeout(r, 20));
      await new Promise((r) => setTimeout(r, 200));
      expect(fs.readFileSync(file, 'utf8')).toBe('run\n');
    } finally {
      await cutter.close();
    }
  });

  test('a connection lost before the command started: an error without retry, sent again with retry: true', async () => {
    const once = await proxy(fixture().runtime.url, { refuseFirst: true });
    try {
      await expect(handleFor(once.url, { retry: { attempts: 3, initialDelayMs: 1, maxDelayMs: 5 } }).run('echo x')).rejects.toThrow(SandboxConnectionError);
      expect(once.requests.filter((r) => r.startsWith('POST /execute'))).toHaveLength(1);
    } finally {
      await once.close();
    }
    const again = await proxy(fixture().runtime.url, { refuseFirst: true });
    try {
      const result = await handleFor(again.url, { retry: { attempts: 3, initialDelayMs: 1, maxDelayMs: 5 } }).run('echo x', { retry: true });
      expect(result.stdout).toBe('x\n');
      expect(again.requests.filter((r) => r.startsWith('POST /execute'))).toHaveLength(2);
    } finally {
      await again.close();
    }
  });
});

describe('output kept in memory is bounded', () => {
  test('maxOutputBytes keeps the head of each stream and sets truncated; the callbacks get it all', async () => {
    const chunks: string[] = [];
    const result = await fixture().sandbox.run('printf "%05000d" 0; printf "%03000d" 0 >&2; echo é', {
      maxOutputBytes: 1000,
      onStdout: (c) => chunks.push(c),
    });
    expect(result.stdout).toBe('0'.repeat(1000));
    expect(result.stderr).toBe('0'.repeat(1000));
    expect(result.truncated).toBe(true);
    expect(chunks.join('')).toBe(`${'0'.repeat(5000)}é\n`);
    // Negative control: within the bound, no truncated field at all.
    expect(await fixture().sandbox.run('echo small', { maxOutputBytes: 1000 })).toEqual({ stdout: 'small\n', stderr: '', exitCode: 0, timedOut: false });
  });

  test('the head is cut on a character boundary', async () => {
    const result = await fixture().sandbox.run('printf "ééé"', { maxOutputBytes: 3 });
    expect(result.stdout).toBe('é');
    expect(result.truncated).toBe(true);
  });

  test('maxOutputBytes must be a whole number of bytes', async () => {
    await expect(fixture().sandbox.run('echo x', { maxOutputBytes: -1 })).rejects.toThrow(SandboxConfigError);
  });

  test('a gap (output the runtime no longer had) makes the result truncated; the callbacks are not told of it', () => {
    const seen: string[] = [];
    const output = new ProcessOutput({ onStdout: (c) => seen.push(c) });
    output.take({ type: 'stdout', seq: 1, data: 'a' });
    expect(output.truncated).toBe(false);
    output.take({ type: 'gap', from: 2, to: 4 });
    output.take({ type: 'stdout', seq: 5, data: 'b' });
    expect(output.truncated).toBe(true);
    expect(output.stdout).toBe('ab');
    expect(seen).toEqual(['a', 'b']);
  });

  test('an NDJSON line longer than the limit is an error naming it', async () => {
    const { Readable } = await import('node:stream');
    const big = Buffer.alloc(MAX_LINE_BYTES + 1024, 'a');
    const reader = new NdjsonReader(Readable.from([Buffer.from('{"type":"x","data":"'), big, big]));
    await expect(reader.next()).rejects.toThrow(`longer than ${MAX_LINE_BYTES} bytes`);
    // Negative control: a line just under the limit is read.
    const ok = new NdjsonReader(Readable.from([Buffer.from(`{"type":"x","data":"${'a'.repeat(1024)}"}\n`)]));
    expect(await ok.next()).toMatchObject({ type: 'x' });
  });
});

describe('an upstream runtime (JSON /execute, no process API)', () => {
  let server: http.Server;
  let url: string;
  const accepts: Array<string | undefined> = [];
  beforeAll(async () => {
    // Answers as upstream's python runtime does, whatever the Accept header says.
    server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        if (req.method === 'POST' && req.url === '/execute') {
          accepts.push(req.headers.accept);
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ stdout: 'a\nb\n', stderr: 'warn\n', exit_code: 2 }));
          return;
        }
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ detail: 'Not Found' }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  test('run asked for NDJSON, got JSON, and delivers the output once at the end, as before', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const result = await handleFor(url).run('anything', { onStdout: (c) => out.push(c), onStderr: (c) => err.push(c) });
    expect(accepts[accepts.length - 1]).toContain('application/x-ndjson');
    expect(result).toEqual({ stdout: 'a\nb\n', stderr: 'warn\n', exitCode: 2, timedOut: false });
    expect(out).toEqual(['a\nb\n']);
    expect(err).toEqual(['warn\n']);
  });

  test('background and the process list need this project\'s runtime: a SandboxConfigError that says so', async () => {
    const started = handleFor(url).run('sleep 1', { background: true });
    await expect(started).rejects.toThrow(SandboxConfigError);
    await expect(started).rejects.toThrow(/^background: needs this project's runtime/);
    await expect(handleFor(url).processes.list()).rejects.toThrow(/^processes: needs this project's runtime/);
  });
});

describe('background processes', () => {
  test('run(..., { background: true }) returns a handle at once; stdin goes in, output comes out, wait gives the result', async () => {
    const seen = signal();
    const chunks: string[] = [];
    const handle = await fixture().sandbox.run('cat', {
      background: true,
      openStdin: true,
      tag: 'echoer',
      onStdout: (c) => {
        chunks.push(c);
        seen.resolve();
      },
    });
    expect(handle.id).toMatch(/^p-[0-9a-f]+$/);
    expect(handle.pid).toBeGreaterThan(1);
    const info = await fixture().sandbox.processes.get(handle.id);
    expect(info).toMatchObject({ id: handle.id, status: 'running', tag: 'echoer', background: true, stdinOpen: true, exitCode: null });
    await handle.sendStdin('hello\n');
    await seen.promise;
    expect(chunks).toEqual(['hello\n']);
    await handle.closeStdin();
    expect(await handle.wait()).toEqual({ stdout: 'hello\n', stderr: '', exitCode: 0, timedOut: false });
    expect(await fixture().sandbox.processes.get(handle.id)).toMatchObject({ status: 'exited', exitCode: 0, endedAt: expect.any(Date) });
  });

  test('stdin given as data is written and closed', async () => {
    const handle = await fixture().sandbox.run('wc -c', { background: true, stdin: 'abcd' });
    expect((await handle.wait()).stdout.trim()).toBe('4');
  });

  test('kill sends SIGTERM by default; the result says so; a kill after the end is a no-op', async () => {
    const handle = await fixture().sandbox.run('sleep 300', { background: true });
    expect((await fixture().sandbox.processes.get(handle.id)).status).toBe('running');
    await handle.kill();
    expect(await handle.wait()).toMatchObject({ exitCode: -15, timedOut: false });
    await handle.kill('SIGKILL');
    await expect(handle.kill('SIGSTOP' as never)).rejects.toThrow(SandboxConfigError);
  });

  test('attach from another client: output replayed and followed; a disconnected handle stops, the process runs on', async () => {
    const g = gate();
    const first = signal();
    const handle = await fixture().sandbox.run(`echo a; ${g.wait}; echo b`, { background: true, onStdout: () => first.resolve() });
    await first.promise;
    handle.disconnect();
    await expect(handle.wait()).rejects.toThrow(SandboxError);
    await expect(handle.wait()).rejects.toThrow(/disconnected.*attach/);
    expect((await fixture().sandbox.processes.get(handle.id)).status).toBe('running');

    // Another handle to the same sandbox, as from another SandboxClient's connect().
    const other = handleFor(fixture().runtime.url);
    const listed = await other.processes.list();
    expect(listed.map((p) => p.id)).toContain(handle.id);
    const chunks: string[] = [];
    const again = await other.processes.attach(handle.id, {
      onStdout: (c) => {
        chunks.push(c);
        if (c.includes('a')) g.open();
      },
    });
    expect(again.pid).toBe(handle.pid);
    expect(await again.wait()).toEqual({ stdout: 'a\nb\n', stderr: '', exitCode: 0, timedOut: false });
    expect(chunks).toEqual(['a\n', 'b\n']);
    // after: only what came after the seq a previous handle saw.
    const later = await other.processes.attach(handle.id, { after: 1 });
    expect((await later.wait()).stdout).toBe('b\n');
  });

  test('disconnect() on a handle from processes.attach stops it: no more callbacks, wait() rejects, the process runs on', async () => {
    const g1 = gate();
    const g2 = gate();
    const handle = await fixture().sandbox.run(`echo a; ${g1.wait}; echo b; ${g2.wait}`, { background: true });
    const first = signal();
    const chunks: string[] = [];
    const attached = await handleFor(fixture().runtime.url).processes.attach(handle.id, {
      onStdout: (c) => {
        chunks.push(c);
        first.resolve();
      },
    });
    await first.promise;
    attached.disconnect();
    await expect(attached.wait()).rejects.toThrow(/disconnected.*attach/);
    g1.open();
    // Negative control: "b" was written (another attach sees it), yet the disconnected handle was not told.
    const b = signal();
    const watcher = await fixture().sandbox.processes.attach(handle.id, { after: 1, onStdout: () => b.resolve() });
    await b.promise;
    expect(chunks).toEqual(['a\n']);
    expect((await fixture().sandbox.processes.get(handle.id)).status).toBe('running');
    g2.open();
    expect((await watcher.wait()).stdout).toBe('b\n');
    expect(chunks).toEqual(['a\n']);
  });

  test('mistakes are typed errors that name the field and the fix', async () => {
    const sandbox = fixture().sandbox;
    await expect(sandbox.processes.get('p-0000000000000000')).rejects.toThrow(SandboxProcessError);
    await expect(sandbox.processes.attach('not-an-id')).rejects.toThrow(/^id: must be a process id/);
    await expect(sandbox.processes.attach('p-00', { after: -1 })).rejects.toThrow(/^after: /);
    await expect(sandbox.run('true', { background: true, timeoutMs: 0 })).rejects.toThrow(/^timeoutMs: /);
    const noStdin = await sandbox.run('sleep 300', { background: true });
    const err = await noStdin.sendStdin('x').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SandboxProcessError);
    expect((err as SandboxProcessError).processId).toBe(noStdin.id);
    expect((err as Error).message).toMatch(/openStdin: true/);
    await noStdin.kill('SIGKILL');
    await noStdin.wait();
  });

  test('a background timeoutMs ends the process at its limit: timedOut, exit code 124', async () => {
    const handle = await fixture().sandbox.run('echo started; sleep 60', { background: true, timeoutMs: 300 });
    expect(await handle.wait()).toMatchObject({ stdout: 'started\n', exitCode: 124, timedOut: true });
  });
});
