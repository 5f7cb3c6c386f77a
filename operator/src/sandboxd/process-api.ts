/**
 * The runtime's process API, an extension on the legacy port that upstream clients never see
 * (docs/runtime-processes.md):
 * - `POST /execute` with `Accept: application/x-ndjson` streams the command as NDJSON (`start`,
 *   `stdout`/`stderr` events as they are read, `ping` every `pingMs` of silence, `exit`). It is
 *   refused exactly as the JSON `/execute` is, before any NDJSON; once streaming, the command is a
 *   process of ./process-registry, so a dropped connection leaves it running and a client
 *   reattaches with `GET /processes/{id}/output?after=<seq>`.
 * - `/processes`: start (`POST`), list, get, output replay and follow, stdin, signal, delete.
 *
 * A follower writes what the process has kept after its cursor and waits for more; when the client
 * reads slower than the process writes, it waits for the socket to drain and then continues from
 * its cursor, with a `gap` event if the bound on kept output dropped events it had not yet sent.
 */
import * as http from 'node:http';
import type { CommandRequest } from './command-request';
import { parseCommandRequest } from './command-request';
import { failure } from './exec';
import { BodyTooLarge, discard, invalidField, methodNotAllowed, readBody, readJson, sendJson } from './http-io';
import type { ManagedProcess, ProcessRegistry } from './process-registry';

export const NDJSON = 'application/x-ndjson';
/** How often a follower with nothing to send says it is alive. */
export const DEFAULT_PING_MS = 15_000;
/** The largest stdin write. */
export const MAX_STDIN_BYTES = 1024 * 1024;
/** What a 429 asks the client to wait, in seconds. */
export const RETRY_AFTER_SECONDS = 1;
/** Connections that may follow one process's output at once. */
export const MAX_FOLLOWERS = 8;
const SIGNALS: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGKILL', 'SIGHUP'];

export interface ProcessApiOptions {
  /** The workspace (a real path). */
  readonly root: string;
  readonly registry: ProcessRegistry;
  readonly pingMs: number;
  /** True once the runtime drains: no new background processes. */
  readonly draining: () => boolean;
}

/** Whether the request's Accept header asks for NDJSON (and does not refuse it with q=0). */
export function acceptsNdjson(accept: string | undefined): boolean {
  return (accept ?? '').split(',').some((range) => {
    const [type, ...params] = range.split(';').map((s) => s.trim().toLowerCase());
    return type === NDJSON && !params.some((p) => /^q=0(\.0*)?$/.test(p));
  });
}

/** One NDJSON answer: a line per object, written at once; a ping after each `pingMs` of silence. */
class NdjsonWriter {
  private ping?: NodeJS.Timeout;

  public constructor(private readonly res: http.ServerResponse, private readonly pingMs: number) {
    res.writeHead(200, { 'Content-Type': NDJSON, 'Cache-Control': 'no-store', 'X-Accel-Buffering': 'no' });
    res.once('close', () => clearTimeout(this.ping));
    this.arm();
  }

  public get gone(): boolean {
    return this.res.destroyed || this.res.writableEnded;
  }

  /** Whether the socket's buffer is full (write no more until it drains). */
  public get full(): boolean {
    return this.res.writableNeedDrain;
  }

  public write(line: object): void {
    if (this.gone) return;
    this.res.write(`${JSON.stringify(line)}\n`);
    this.arm();
  }

  public end(): void {
    clearTimeout(this.ping);
    this.res.end();
  }

  /** Resolves when the socket has room again, or the client is gone. */
  public roomOrGone(): Promise<void> {
    if (!this.res.writableNeedDrain || this.gone) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        this.res.off('drain', done);
        this.res.off('close', done);
        resolve();
      };
      this.res.on('drain', done);
      this.res.on('close', done);
    });
  }

  /** Resolves at `process`'s next event, or when the client is gone. */
  public nextEventOrGone(process: ManagedProcess): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        cancel();
        this.res.off('close', done);
        resolve();
      };
      const cancel = process.onNextEvent(done);
      this.res.on('close', done);
    });
  }

  private arm(): void {
    clearTimeout(this.ping);
    if (this.gone) return;
    this.ping = setTimeout(() => this.write({ type: 'ping' }), this.pingMs);
  }
}

/** Writes `process`'s events after `after` to `out` and, with `follow`, the rest as they come, until its exit event. */
async function follow(process: ManagedProcess, out: NdjsonWriter, after: number, keepFollowing: boolean): Promise<void> {
  process.followers++;
  try {
    await writeEvents(process, out, after, keepFollowing);
  } finally {
    process.followers--;
  }
}

async function writeEvents(process: ManagedProcess, out: NdjsonWriter, after: number, keepFollowing: boolean): Promise<void> {
  let cursor = after;
  while (!out.gone) {
    const replay = process.after(cursor);
    if (replay.gap) {
      out.write({ type: 'gap', ...replay.gap });
      cursor = replay.gap.to;
    }
    let full = false;
    for (const event of replay.events) {
      out.write(event);
      cursor = event.seq;
      if (event.type === 'exit') return out.end();
      // A long replay is not all buffered at once: the rest is sent from the cursor once there is room.
      if (out.full) {
        full = true;
        break;
      }
    }
    if (full) {
      await out.roomOrGone();
      continue;
    }
    // Nothing more will come of a process that has ended (its exit was at or before the cursor).
    if (!keepFollowing || !process.running) return out.end();
    await out.nextEventOrGone(process);
  }
}

export class ProcessApi {
  public constructor(private readonly options: ProcessApiOptions) {}

  /**
   * Streams a validated `/execute` (its command slot taken, given back by `release` when the
   * command ends): a command that cannot start is answered as the JSON `/execute` answers it.
   */
  public async executeStreaming(res: http.ServerResponse, request: CommandRequest, release: () => void): Promise<void> {
    let started: Awaited<ReturnType<ProcessRegistry['start']>>;
    try {
      started = await this.options.registry.start(request, false);
    } catch (err) {
      release();
      throw err;
    }
    if (!('id' in started)) {
      release();
      return sendJson(res, 200, failure('error' in started ? started.error : started.full));
    }
    void started.ended().finally(release);
    const out = new NdjsonWriter(res, this.options.pingMs);
    out.write({ type: 'start', id: started.id, pid: started.pid });
    await follow(started, out, 0, true);
  }

  /** `/processes` and below; `rawPath` starts with `/processes`. */
  public async handle(req: http.IncomingMessage, res: http.ServerResponse, method: string, rawPath: string, params: URLSearchParams): Promise<void> {
    const match = /^\/processes(?:\/([^/]+)(?:\/(output|stdin|signal))?)?$/.exec(rawPath);
    if (!match) return discard(req, res, 404, { detail: 'Not Found' });
    const [, id, action] = match;
    if (id === undefined) {
      if (method === 'GET') return sendJson(res, 200, { processes: this.options.registry.list().map((p) => p.info()) });
      if (method === 'POST') return this.start(req, res);
      return methodNotAllowed(req, res);
    }
    const wanted = action === undefined ? ['GET', 'DELETE'] : action === 'output' ? ['GET'] : ['POST'];
    if (!wanted.includes(method)) return methodNotAllowed(req, res);
    const process = this.options.registry.get(id);
    if (!process) {
      return discard(req, res, 404, { detail: `no process "${id}": it never existed here, was deleted, or finished too long ago to be kept` });
    }
    if (action === 'output') return this.output(res, process, params);
    if (action === 'stdin') return this.stdin(req, res, process, params);
    if (action === 'signal') return this.signal(req, res, process);
    if (method === 'GET') return sendJson(res, 200, process.info());
    const outcome = this.options.registry.delete(id);
    if (outcome === 'running') return sendJson(res, 409, { detail: `process ${id} is still running: stop it first (POST /processes/${id}/signal)` });
    return sendJson(res, 200, { id, deleted: true });
  }

  private async start(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (this.options.draining()) {
      res.setHeader('Retry-After', String(RETRY_AFTER_SECONDS));
      return discard(req, res, 503, { detail: 'the runtime is shutting down and starts no new processes' });
    }
    const body = await readJson(req, res);
    if (!body) return;
    const request = await parseCommandRequest(body.value, res, { root: this.options.root, processFields: true });
    if (!request) return;
    const started = await this.options.registry.start(request, true, request.tag);
    if ('full' in started) {
      res.setHeader('Retry-After', String(RETRY_AFTER_SECONDS));
      const { backgroundRunning: running, maxBackground: limit } = this.options.registry;
      return sendJson(res, 429, { detail: started.full, running, limit });
    }
    if ('error' in started) return invalidField(res, 'command', `Failed to execute command: ${started.error}`);
    return sendJson(res, 201, started.info());
  }

  private async output(res: http.ServerResponse, process: ManagedProcess, params: URLSearchParams): Promise<void> {
    const afterText = params.get('after') ?? '0';
    const after = Number(afterText);
    if (!/^\d+$/.test(afterText) || !Number.isSafeInteger(after)) {
      return sendJson(res, 422, { detail: [{ type: 'invalid', loc: ['query', 'after'], msg: `must be a whole number (the last seq seen, 0 for all), got "${afterText}"` }] });
    }
    if (after > process.latestSeq) {
      return sendJson(res, 422, { detail: [{ type: 'invalid', loc: ['query', 'after'], msg: `is ${after}, beyond the last seq of process ${process.id} (${process.latestSeq}): pass a seq this process has sent, or 0 for all` }] });
    }
    const followText = params.get('follow') ?? 'true';
    if (!['true', 'false', '1', '0'].includes(followText)) {
      return sendJson(res, 422, { detail: [{ type: 'invalid', loc: ['query', 'follow'], msg: `must be true or false, got "${followText}"` }] });
    }
    if (process.followers >= MAX_FOLLOWERS) {
      res.setHeader('Retry-After', String(RETRY_AFTER_SECONDS));
      return sendJson(res, 429, { detail: `process ${process.id} has ${process.followers} connections following its output, as many as allowed (${MAX_FOLLOWERS}); close one or use follow=false` });
    }
    const out = new NdjsonWriter(res, this.options.pingMs);
    out.write({ type: 'process', ...process.info() });
    await follow(process, out, after, followText === 'true' || followText === '1');
  }

  private async stdin(req: http.IncomingMessage, res: http.ServerResponse, process: ManagedProcess, params: URLSearchParams): Promise<void> {
    if (!process.stdinOpen) {
      const why = !process.stdinPiped ? 'was started without "stdin": true; start it with "stdin": true to write to it'
        : !process.running ? 'has ended' : 'has its stdin closed already (an earlier eof=true)';
      return discard(req, res, 409, { detail: `process ${process.id} ${why}` });
    }
    if (process.stdinBusy) {
      // One write at a time per process, from reading its body until the pipe has taken it: writes
      // to a process that does not read cannot pile up (at most MAX_STDIN_BYTES are held for it).
      res.setHeader('Retry-After', String(RETRY_AFTER_SECONDS));
      return discard(req, res, 429, { detail: `process ${process.id} has a stdin write in flight (it has not read the last one yet); send the next once that one is answered` });
    }
    process.stdinBusy = true;
    try {
      let data: Buffer;
      try {
        data = await readBody(req, MAX_STDIN_BYTES);
      } catch (err) {
        if (!(err instanceof BodyTooLarge)) throw err;
        res.setHeader('Connection', 'close');
        return sendJson(res, 413, { detail: `a stdin write takes at most ${MAX_STDIN_BYTES} bytes; send the data in several requests` });
      }
      const eof = params.get('eof') === 'true' || params.get('eof') === '1';
      try {
        await process.writeStdin(data, eof);
      } catch (err) {
        return sendJson(res, 409, { detail: `writing to process ${process.id}'s stdin failed (${(err as Error).message}): it has closed its stdin or ended` });
      }
      return sendJson(res, 200, process.info());
    } finally {
      process.stdinBusy = false;
    }
  }

  private async signal(req: http.IncomingMessage, res: http.ServerResponse, process: ManagedProcess): Promise<void> {
    const body = await readJson(req, res);
    if (!body) return;
    const signal = (body.value as { signal?: unknown } | null)?.signal;
    if (typeof signal !== 'string' || !SIGNALS.includes(signal as NodeJS.Signals)) {
      return invalidField(res, 'signal', `must be one of ${SIGNALS.join(', ')}, got ${JSON.stringify(signal ?? null)}`);
    }
    if (!process.signal(signal as NodeJS.Signals)) return sendJson(res, 409, { detail: `process ${process.id} has ended: there is nothing to signal` });
    return sendJson(res, 202, process.info());
  }
}
