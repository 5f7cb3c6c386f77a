/**
 * The runtime's legacy HTTP API (port 8888: upstream's python runtime contract, plus shell mode,
 * env, cwd, `timeout_seconds` and delete from this project's runtime), reached through an Endpoint:
 * the router (with its routing headers) or the Pod directly. Every call is traced when a tracer is
 * set, and retried only when it is idempotent (see retry.ts). Also this project's process API on
 * the same port (docs/runtime-processes.md): `/execute` as NDJSON, and `/processes`.
 */
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { PathSubject, SandboxResumingError } from './errors.js';
import { Body, HttpResponse, readAll, send } from './http.js';
import { encodeLegacyPath } from './paths.js';
import { RetryOptions, withRetries } from './retry.js';
import { Tracing } from './tracing.js';
import { RouterHeader } from './wire.js';

/** Where a sandbox's runtime is reached, resolved before each call (a port-forward may move). */
export interface Endpoint {
  /** `http(s)://host:port`, no trailing slash. */
  readonly baseUrl: string;
  /** Sent with every request: the router's routing headers and credentials, when any. */
  readonly headers: Readonly<Record<string, string>>;
  /** True when a router is in the path: requests then say how long they may take (`X-Sandbox-Timeout`). */
  readonly viaRouter: boolean;
}

export interface CallOptions {
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
  /** Try again on connection errors and 429/502/503/504 (only for requests that are safe to repeat). */
  readonly idempotent: boolean;
  /** False when the request cannot be sent again (a streamed body). @default true */
  readonly replayable?: boolean;
  /** The answer's body is read whole: it may pause between chunks for at most `timeoutMs`. */
  readonly bufferedBody?: boolean;
  /** The path (or cwd) the call is about, as the caller gave it: a refusal of it is a SandboxPathError naming it. */
  readonly subject?: PathSubject;
  /**
   * How long the whole exchange may last, as the router is told (`X-Sandbox-Timeout`), when that is
   * longer than `timeoutMs` (the wait for the answer's headers): a stream followed for long. @default timeoutMs
   */
  readonly exchangeMs?: number;
  /**
   * How long the call may wait for a sandbox the router is waking (an idle policy's resume), on top
   * of `timeoutMs`: for a run, whose `timeoutMs` is the command's own time. Other calls count the
   * wake against their `timeoutMs` (a wait for the answer like any other). @default 0
   */
  readonly wakeMs?: number;
}

/** The media type of the runtime's streamed answers. */
export const NDJSON = 'application/x-ndjson';

/** A process as the runtime's process API describes it. */
export interface WireProcess {
  readonly id: string;
  readonly pid: number;
  readonly command: string;
  readonly tag?: string;
  readonly background: boolean;
  readonly status: 'running' | 'exited';
  readonly exit_code: number | null;
  readonly timed_out: boolean;
  readonly signal: string | null;
  readonly started_at: string;
  readonly ended_at: string | null;
  readonly stdin: boolean;
  readonly followers?: number;
}

/** `POST /processes`: `/execute`'s fields (`timeout_seconds` absent: no limit), a stdin pipe, a tag. */
export interface StartProcessRequest extends Omit<ExecuteRequest, 'timeout_seconds'> {
  readonly timeout_seconds?: number;
  readonly stdin?: boolean;
  readonly tag?: string;
}

export interface ExecuteRequest {
  readonly command: string;
  readonly shell: boolean;
  readonly timeout_seconds?: number;
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
}

export interface ExecuteResponse {
  readonly stdout?: string;
  readonly stderr?: string;
  readonly exit_code?: number;
  readonly timed_out?: boolean;
}

export interface LegacyEntry {
  readonly name: string;
  readonly size: number;
  readonly type: 'file' | 'directory';
  readonly mod_time?: number;
}

export class RuntimeApi {
  public constructor(
    private readonly endpoint: () => Promise<Endpoint>,
    private readonly sandbox: string,
    private readonly retry: RetryOptions,
    private readonly tracing: Tracing,
  ) {}

  /** The retry settings of this client (the process API's reattaching uses them too). */
  public get retryOptions(): RetryOptions {
    return this.retry;
  }

  /**
   * `/execute` asking for NDJSON; `read` gets the answer inside the retried unit. This project's
   * runtime answers NDJSON; upstream's, JSON (`ExecuteResponse`): `read` tells them by Content-Type.
   * The command has started once the headers came: `read` should return there (the body read
   * outside the retries), lest a cut inside the body send the command again.
   */
  public executeStreaming<T>(request: ExecuteRequest, options: CallOptions, read: (res: HttpResponse) => Promise<T>): Promise<T> {
    const subject = request.cwd === undefined ? options.subject : { field: 'cwd' as const, path: request.cwd };
    const headers = { 'content-type': 'application/json', 'accept': `${NDJSON}, application/json` };
    return this.call('POST', '/execute', JSON.stringify(request), headers, { ...options, subject, bufferedBody: true }, read);
  }

  public startProcess(request: StartProcessRequest, options: CallOptions): Promise<WireProcess> {
    const subject = request.cwd === undefined ? options.subject : { field: 'cwd' as const, path: request.cwd };
    return this.json<WireProcess>('POST', '/processes', JSON.stringify(request), { 'content-type': 'application/json' }, { ...options, subject });
  }

  public listProcesses(options: CallOptions): Promise<{ processes?: WireProcess[] }> {
    return this.json('GET', '/processes', undefined, {}, options);
  }

  public getProcess(id: string, options: CallOptions): Promise<WireProcess> {
    return this.json('GET', `/processes/${encodeURIComponent(id)}`, undefined, {}, options);
  }

  /** The process's output as NDJSON after `after` (following it until its exit); `read` gets the answer inside the retried unit. */
  public processOutput<T>(id: string, after: number, options: CallOptions, read: (res: HttpResponse) => Promise<T>): Promise<T> {
    return this.call('GET', `/processes/${encodeURIComponent(id)}/output?after=${after}`, undefined, { accept: NDJSON }, options, read);
  }

  public writeStdin(id: string, data: Uint8Array, eof: boolean, options: CallOptions): Promise<WireProcess> {
    const path = `/processes/${encodeURIComponent(id)}/stdin${eof ? '?eof=true' : ''}`;
    return this.json('POST', path, data, { 'content-type': 'application/octet-stream' }, options);
  }

  public signalProcess(id: string, signal: string, options: CallOptions): Promise<WireProcess> {
    return this.json('POST', `/processes/${encodeURIComponent(id)}/signal`, JSON.stringify({ signal }), { 'content-type': 'application/json' }, options);
  }

  /** Uploads `content` to `relative` (multipart, as the legacy runtime takes it). */
  public async upload(relative: string, content: Uint8Array | Readable, options: CallOptions): Promise<void> {
    const boundary = `----agent-sandbox-${randomBytes(12).toString('hex')}`;
    const escaped = relative.replace(/["\\]/g, (c) => `\\${c}`);
    const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${escaped}"\r\nContent-Type: application/octet-stream\r\n\r\n`);
    const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
    const body = content instanceof Readable ? Readable.from(multipartStream(head, content, tail)) : Buffer.concat([head, content, tail]);
    const headers = { 'content-type': `multipart/form-data; boundary=${boundary}` };
    try {
      await this.call('POST', '/upload', body, headers, options, async (res) => {
        res.body.resume();
      });
    } catch (err) {
      // The caller's stream is not read any more: end it (it may be stalled inside the multipart wrapper).
      if (content instanceof Readable) content.destroy();
      throw err;
    }
  }

  /** Downloads `relative` and hands its body to `read` (inside the retried unit). */
  public download<T>(relative: string, options: CallOptions, read: (body: Readable) => Promise<T>): Promise<T> {
    return this.call('GET', `/download/${encodeLegacyPath(relative)}`, undefined, {}, options, (res) => read(res.body));
  }

  public list(relative: string, options: CallOptions): Promise<LegacyEntry[] | null> {
    return this.json<LegacyEntry[] | null>('GET', `/list/${encodeLegacyPath(relative)}`, undefined, {}, options);
  }

  public exists(relative: string, options: CallOptions): Promise<{ exists?: boolean }> {
    return this.json<{ exists?: boolean }>('GET', `/exists/${encodeLegacyPath(relative)}`, undefined, {}, options);
  }

  public remove(relative: string, recursive: boolean, options: CallOptions): Promise<unknown> {
    return this.json('DELETE', `/delete/${encodeLegacyPath(relative)}${recursive ? '?recursive=true' : ''}`, undefined, {}, options);
  }

  private json<T>(method: string, path: string, body: Body, headers: Record<string, string>, options: CallOptions): Promise<T> {
    return this.call(method, path, body, headers, { ...options, bufferedBody: true }, async (res) => {
      const text = (await readAll(res.body)).toString('utf8');
      return JSON.parse(text) as T;
    });
  }

  /**
   * One request, retried as retry.ts says. Through a router, `X-Sandbox-Timeout` says how long it
   * may take, the wake included: the router holds a request for a sandbox it is waking at most
   * that long, and takes the hold off the forward's share. A try after a SandboxResuming refusal
   * gets what is left of the call's time (timeoutMs and wakeMs, from its start), no more.
   */
  private call<T>(
    method: string, path: string, body: Body, headers: Record<string, string>, options: CallOptions, read: (res: HttpResponse) => Promise<T>,
  ): Promise<T> {
    const operation = path.split('/')[1];
    const firstWaitMs = options.timeoutMs + (options.wakeMs ?? 0);
    const resumeBy = Date.now() + firstWaitMs;
    let resuming = false;
    return this.tracing.span(`sandbox.${operation}`, { 'sandbox.name': this.sandbox, 'http.request.method': method }, () => withRetries(async () => {
      const endpoint = await this.endpoint();
      const all: Record<string, string> = { ...endpoint.headers, ...headers, ...this.tracing.headers() };
      const waitMs = resuming ? Math.max(1, resumeBy - Date.now()) : firstWaitMs;
      // A stream followed for long keeps its exchange time, plus what is left for a wake.
      const exchangeMs = Math.max(waitMs, (options.exchangeMs ?? 0) + Math.max(0, waitMs - options.timeoutMs));
      if (endpoint.viaRouter) all[RouterHeader.TIMEOUT] = String(exchangeMs / 1000);
      try {
        const res = await send({
          method, url: `${endpoint.baseUrl}${path}`, headers: all, body, timeoutMs: waitMs, bufferedBody: options.bufferedBody, bodyIdleMs: options.timeoutMs, signal: options.signal, sandbox: this.sandbox, subject: options.subject,
        });
        return await read(res);
      } catch (err) {
        if (err instanceof SandboxResumingError) resuming = true;
        throw err;
      }
    }, { idempotent: options.idempotent, signal: options.signal, replayable: options.replayable ?? true, resumeBy }, this.retry));
  }
}

async function* multipartStream(head: Buffer, content: Readable, tail: Buffer): AsyncGenerator<Buffer> {
  yield head;
  for await (const chunk of content) yield typeof chunk === 'string' ? Buffer.from(chunk) : chunk as Buffer;
  yield tail;
}
