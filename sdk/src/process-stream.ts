/**
 * Following a process of the runtime's process API (docs/runtime-processes.md): its NDJSON lines
 * read one at a time, its output events handed to the caller's callbacks as they come (in seq
 * order, each once), and, when the stream is cut before the exit event (a router restart, a lost
 * connection, a stream silent for longer than three pings), the output asked for again after the
 * last seq seen, with bounded retries and backoff. The caller's signal stops it all.
 */
import { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { SandboxConnectionError, SandboxHttpError, SandboxProcessError } from './errors.js';
import { HttpResponse } from './http.js';
import { backoffMs, retriable, sleep } from './retry.js';
import { NDJSON, RuntimeApi, WireProcess } from './runtime-api.js';

/** The runtime pings a silent stream every 15 s: this long without a line, it is taken for cut. */
export const STREAM_IDLE_MS = 45_000;

/** The longest NDJSON line taken: a longer one is an error naming this limit. */
export const MAX_LINE_BYTES = 4 * 1024 * 1024;
/** How much of each stream a result keeps by default (its head; as the JSON answer's cap). */
export const DEFAULT_MAX_OUTPUT_BYTES = 4 * 1024 * 1024;

/** How a process ended, from its exit event. */
export interface ProcessExit {
  readonly exitCode: number;
  readonly timedOut: boolean;
  readonly signal: string | null;
}

/** One line of an NDJSON answer. */
export type StreamLine = { readonly type: string } & Record<string, unknown>;

/** Whether the runtime answered NDJSON (this project's runtime) rather than JSON (upstream's). */
export function isNdjson(res: HttpResponse): boolean {
  return String(res.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase() === NDJSON;
}

/** An NDJSON body, one parsed line at a time. */
export class NdjsonReader {
  private readonly lines: AsyncIterator<Buffer>;
  private readonly decoder = new StringDecoder('utf8');
  private text = '';

  public constructor(private readonly body: Readable, private readonly idleMs: number = STREAM_IDLE_MS) {
    this.lines = body[Symbol.asyncIterator]();
  }

  /** The next line; undefined once the body has ended. Throws when the body is cut, stalls for `idleMs`, or a line is no JSON object. */
  public async next(): Promise<StreamLine | undefined> {
    for (;;) {
      const nl = this.text.indexOf('\n');
      if (nl >= 0) {
        const line = this.text.slice(0, nl).trim();
        this.text = this.text.slice(nl + 1);
        if (line === '') continue;
        return parseLine(line);
      }
      if (this.text.length > MAX_LINE_BYTES) {
        throw new SandboxConnectionError(`the stream carried a line longer than ${MAX_LINE_BYTES} bytes (the SDK's limit on an NDJSON line)`, 'EPROTO');
      }
      const chunk = await this.read();
      if (chunk === undefined) {
        if (this.text.trim() !== '') throw new SandboxConnectionError('the stream ended inside a line', undefined);
        return undefined;
      }
      this.text += this.decoder.write(chunk);
    }
  }

  /** Stops reading: the connection is closed. */
  public close(): void {
    this.body.destroy();
  }

  private async read(): Promise<Buffer | undefined> {
    const timer = setTimeout(() => {
      this.body.destroy(new SandboxConnectionError(`the stream was silent for ${this.idleMs} ms (the runtime pings every 15 s)`, 'ESTALLED'));
    }, this.idleMs);
    try {
      const { value, done } = await this.lines.next();
      return done ? undefined : value as Buffer;
    } finally {
      clearTimeout(timer);
    }
  }
}

function parseLine(line: string): StreamLine {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    throw new SandboxConnectionError(`the stream carried a line that is no JSON: ${line.slice(0, 100)}`, 'EPROTO');
  }
  if (typeof parsed !== 'object' || parsed === null || typeof (parsed as { type?: unknown }).type !== 'string') {
    throw new SandboxConnectionError(`the stream carried a line without a type: ${line.slice(0, 100)}`, 'EPROTO');
  }
  return parsed as StreamLine;
}

/** A callback of the caller's threw: that ends the following, with the callback's error. */
export class CallbackFailure {
  public constructor(public readonly error: unknown) {}
}

export interface OutputCallbacks {
  readonly onStdout?: (chunk: string) => void;
  readonly onStderr?: (chunk: string) => void;
}

/** A process's output as received: the text so far, the last seq, and the callbacks told of each event once. */
export class ProcessOutput {
  public stdout = '';
  public stderr = '';
  /** Output events the runtime no longer had when asked again (its bound on kept output). */
  public lost = 0;
  /** Bytes of output not kept in `stdout`/`stderr` (over `maxBytes`; the callbacks had them). */
  public dropped = 0;
  private readonly kept = { stdout: 0, stderr: 0 };

  public constructor(
    private readonly callbacks: OutputCallbacks, public lastSeq = 0, private readonly maxBytes: number = DEFAULT_MAX_OUTPUT_BYTES,
  ) {}

  /** Whether the result misses output: a gap in the runtime's, or over `maxBytes`. */
  public get truncated(): boolean {
    return this.lost > 0 || this.dropped > 0;
  }

  /** Takes one line: the exit, when it is the exit event. A callback that throws is a CallbackFailure. */
  public take(line: StreamLine): ProcessExit | undefined {
    const seq = typeof line.seq === 'number' ? line.seq : undefined;
    if (line.type === 'gap') {
      const to = Number(line.to);
      if (Number.isFinite(to) && to > this.lastSeq) {
        this.lost += to - Math.max(this.lastSeq, Number(line.from) - 1);
        this.lastSeq = to;
      }
      return undefined;
    }
    if (seq === undefined || seq <= this.lastSeq) return undefined; // start, process, ping; or seen already
    this.lastSeq = seq;
    if (line.type === 'exit') {
      return { exitCode: Number(line.exit_code ?? -1), timedOut: line.timed_out === true, signal: typeof line.signal === 'string' ? line.signal : null };
    }
    if ((line.type !== 'stdout' && line.type !== 'stderr') || typeof line.data !== 'string' || line.data === '') return undefined;
    this.keep(line.type, line.data);
    try {
      (line.type === 'stdout' ? this.callbacks.onStdout : this.callbacks.onStderr)?.(line.data);
    } catch (err) {
      throw new CallbackFailure(err);
    }
    return undefined;
  }

  /** Appends the head of `data` that fits in `maxBytes`; counts the rest as dropped. */
  private keep(stream: 'stdout' | 'stderr', data: string): void {
    const room = this.maxBytes - this.kept[stream];
    const bytes = Buffer.byteLength(data);
    if (bytes <= room) {
      this[stream] += data;
      this.kept[stream] += bytes;
      return;
    }
    if (room > 0) {
      // Cut on a character boundary: the decoder holds back a split character.
      const head = new StringDecoder('utf8').write(Buffer.from(data).subarray(0, room));
      this[stream] += head;
      this.kept[stream] += Buffer.byteLength(head);
    }
    this.dropped += bytes - Math.max(0, room);
    this.kept[stream] = this.maxBytes;
  }
}

export interface FollowOptions {
  readonly runtime: RuntimeApi;
  readonly sandbox: string;
  readonly id: string;
  readonly output: ProcessOutput;
  /** Stops following with its reason. */
  readonly signal?: AbortSignal;
  /** The wait for each reattach's answer. */
  readonly requestTimeoutMs: number;
  /** How long a reattached stream may last through the router. */
  readonly exchangeMs: number;
  /** How long a stream may be silent before it is taken for cut. @default STREAM_IDLE_MS */
  readonly idleMs?: number;
  /** Who follows, as errors name it ("run", "the handle"). */
  readonly who: string;
}

/**
 * Opens the process's output after `after` and reads the first line (the process), inside the
 * unit retried when `idempotent`: resolves with the reader and the process.
 */
export function openOutput(options: FollowOptions, after: number, idempotent: boolean): Promise<{ reader: NdjsonReader; process: WireProcess }> {
  const { runtime, id, signal } = options;
  return runtime.processOutput(id, after, {
    timeoutMs: options.requestTimeoutMs, exchangeMs: options.exchangeMs, signal, idempotent,
  }, async (res) => {
    const reader = new NdjsonReader(res.body, options.idleMs);
    const first = await reader.next().catch((err) => {
      reader.close();
      throw err;
    });
    if (!isNdjson(res) || first?.type !== 'process') {
      reader.close();
      throw new SandboxConnectionError(`GET /processes/${id}/output: the answer is no NDJSON process stream`, 'EPROTO', { sandbox: options.sandbox });
    }
    return { reader, process: first as unknown as WireProcess };
  });
}

/**
 * Reads `first` (when given) and then the process's output again after the last seq seen, as often
 * as the stream is cut, until the exit event: resolves with it. Between reattaches it waits with
 * the client's backoff; it gives up after the client's attempts in a row that brought no line.
 */
export async function followProcess(options: FollowOptions, first?: NdjsonReader): Promise<ProcessExit> {
  // The signal stops a read under way too: the stream it waits on is closed (a first reader may have
  // been opened under another signal, as by processes.attach).
  const stop = { reader: first };
  const onAbort = () => stop.reader?.close();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    if (options.signal?.aborted) throw options.signal.reason;
    return await follow(options, stop);
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    stop.reader?.close();
  }
}

async function follow(options: FollowOptions, current: { reader?: NdjsonReader }): Promise<ProcessExit> {
  const { id, output, signal } = options;
  const retry = options.runtime.retryOptions;
  const attempts = Math.max(1, retry.attempts ?? 4);
  let reader = current.reader;
  let failures = 0;
  let lastError: unknown;
  for (;;) {
    if (reader) {
      try {
        for (let line = await reader.next(); line !== undefined; line = await reader.next()) {
          failures = 0;
          // Stopped: no callback after that, even for lines read already.
          if (signal?.aborted) throw signal.reason;
          const exit = output.take(line);
          if (exit) return exit;
        }
        lastError = new SandboxConnectionError('the stream ended before the exit event', undefined);
      } catch (err) {
        if (err instanceof CallbackFailure) throw err;
        if (signal?.aborted) throw signal.reason;
        lastError = err;
      } finally {
        reader.close();
      }
      reader = undefined;
    }
    signal?.throwIfAborted();
    if (failures >= attempts) {
      throw new SandboxProcessError(
        `${options.who}: lost the output of process ${id} and could not follow it again (${failures} tries; last: ${(lastError as Error | undefined)?.message}); `
        + `it may still be running: follow it with sandbox.processes.attach("${id}", { after: ${output.lastSeq} })`,
        id, { sandbox: options.sandbox, cause: lastError },
      );
    }
    // The first open of a stream not yet read at all goes at once; every later one waits its turn.
    const fresh = lastError === undefined && failures === 0;
    failures++;
    if (!fresh) await sleep(backoffMs(retry, failures), signal);
    try {
      ({ reader } = await openOutput(options, output.lastSeq, false));
      current.reader = reader;
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      if (err instanceof SandboxHttpError && err.status === 404) {
        throw new SandboxProcessError(
          `${options.who}: process ${id} is gone from the sandbox's runtime (it restarted, or the process was deleted or had ended too long ago): its result is lost`,
          id, { sandbox: options.sandbox, cause: err },
        );
      }
      if (!retriable(err)) throw err;
      lastError = err;
    }
  }
}
