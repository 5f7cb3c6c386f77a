/**
 * sandboxd's gRPC ProcessService (the runtime's --grpc-port, 9090 in sandboxd), through the router
 * (h2c; the routing headers go as gRPC metadata) or straight to the Pod, over node:http2: one
 * `Start` stream per command, so output arrives as it is written, stdin is written with
 * `WriteStdin`, and a time limit or an abort sends `SendSignal(SIGKILL)` to the process group.
 * `run` runs a command to its end; `start` hands back a live process (a PTY session's).
 *
 * How a call can end, and what the caller gets:
 * - a status (trailers, or a trailers-only answer): OK, or a SandboxGrpcError with that code; the
 *   router's refusal of a suspended sandbox (FAILED_PRECONDITION with `X-Sandbox-Reason:
 *   SandboxSuspended`) is a SandboxSuspendedError, as over HTTP, and its refusal of one it is still
 *   waking (UNAVAILABLE with `X-Sandbox-Reason: SandboxResuming`) a SandboxResumingError;
 * - a `Start` the router refused while waking the sandbox (nothing ran) is sent again until
 *   `wakeMs` from the call's start has passed; the command's time limit runs from its start, so a
 *   wake does not eat it. Through the router, `X-Sandbox-Timeout` bounds the router's hold to
 *   what is left of `wakeMs` (gRPC calls are not otherwise bounded by it there);
 * - no gRPC at the port (connection refused, an answer that is not HTTP/2, an HTTP answer that is
 *   not gRPC, or the router saying it could not reach or talk to the port): a SandboxGrpcError
 *   UNAVAILABLE that says which, and how to fix it (`hint`);
 * - cut (reset, connection lost, or ended without a status): a SandboxGrpcError UNAVAILABLE that
 *   says the stream was cut, and for `Start` whether the command may still be running. A `Start`
 *   stream cut after its exit event still gives the result: the command has ended.
 */
import * as http2 from 'node:http2';
import { StringDecoder } from 'node:string_decoder';
import {
  SandboxError, SandboxGrpcError, SandboxResumingError, SandboxSuspendedError, RESUMING_REASON, SUSPENDED_REASON, REASON_HEADER,
} from './errors.js';
import {
  PROCESS_SERVICE, Signal, StartEvent, StartRequest,
  decodeStartResponse, encodeResizeTtyRequest, encodeSendSignalRequest, encodeStartRequest, encodeWriteStdinRequest,
} from './process-proto.js';
import { FrameReader, frame } from './process-wire.js';
import { resumeRetryDelay, sleep } from './retry.js';
import { Endpoint } from './runtime-api.js';
import { RouterHeader } from './wire.js';

const SERVICE = `/${PROCESS_SERVICE}`;
/** gRPC status codes the SDK names. */
const GRPC_OK = 0;
const GRPC_PERMISSION_DENIED = 7;
const GRPC_FAILED_PRECONDITION = 9;
const GRPC_INTERNAL = 13;
const GRPC_UNAVAILABLE = 14;
const GRPC_UNAUTHENTICATED = 16;
/** How long after the time-limit kill the SDK waits for the Start stream's status before giving up on it. */
const KILL_GRACE_MS = 5_000;
/** How long a Start may wait for a sandbox the router is waking, when the client says nothing else. */
const DEFAULT_WAKE_MS = 60_000;
/** The deadline of a SendSignal call. */
const SIGNAL_DEADLINE_MS = 5_000;
/** The router's reasons for a 502 on the way to the port (see the router's proxy.ts). */
const UNREACHABLE_REASONS: Record<string, string> = {
  UpstreamUnreachable: 'the router could not connect to it (connection refused or unreachable)',
  UpstreamProtocolError: 'the router got no HTTP/2 from it (an HTTP/1.1 server, such as the runtime\'s HTTP API, answers there)',
};

/** What the client says to do when its grpcPort serves no gRPC. */
export const GRPC_PORT_HINT = 'the client\'s grpcPort must be the port the sandbox\'s runtime serves gRPC on (the SandboxTemplate\'s runtime.grpcPort, '
  + 'the runtime\'s --grpc-port); or leave grpcPort unset: run() then uses the runtime\'s HTTP API';

/** What to start: the command line, its environment and directory, and a PTY's size to run it on one. */
export interface ProcessRequest {
  readonly command: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
  /** Run on a new pseudo-terminal of this size: its output arrives as stdout. */
  readonly pty?: { readonly cols: number; readonly rows: number };
}

export interface ProcessRunOptions {
  readonly stdin?: Uint8Array;
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
  readonly onStdout?: (chunk: string) => void;
  readonly onStderr?: (chunk: string) => void;
}

export interface ProcessResult {
  readonly stdout: string;
  readonly stderr: string;
  readonly exitCode: number;
  readonly timedOut: boolean;
}

/** A process started with `start`, until it exits. */
export interface LiveProcess {
  /** sandboxd's id of the process (its `InitEvent.process_id`). */
  readonly processId: number;
  /** Resolves with the exit code (-1 for a signal death); rejects with a SandboxGrpcError when the stream fails or is cut. */
  readonly exited: Promise<number>;
  write(data: Uint8Array): Promise<void>;
  /** Closes the process's stdin. */
  closeStdin(): Promise<void>;
  resize(cols: number, rows: number): Promise<void>;
  /** A process-proto Signal value, to the process's group. */
  signal(signal: number): Promise<void>;
  /** Cancels the stream (sandboxd kills the process when it sees that) and lets go of the connection. */
  cancel(): void;
}

/** How a call ended: its status, a failure the SDK can name, or a cut (no status: `how` says what happened). */
type Outcome =
  | { readonly kind: 'ok' }
  | { readonly kind: 'error'; readonly error: SandboxError }
  | { readonly kind: 'cut'; readonly how: string };

export class ProcessClient {
  public constructor(
    private readonly endpoint: () => Promise<Endpoint>,
    private readonly sandbox: string,
    /** After the time-limit kill, how long to wait for the stream's status (then: cancel it, report the time-out). */
    private readonly killGraceMs: number = KILL_GRACE_MS,
    /** What to do when the port serves no gRPC (it says where the port came from). */
    private readonly hint: string = GRPC_PORT_HINT,
    /** How long a Start may wait for a sandbox the router is waking (the client's requestTimeoutMs). */
    private readonly wakeMs: number = DEFAULT_WAKE_MS,
  ) {}

  /** Starts the command and resolves when it has exited (or was killed at its time limit). */
  public async run(request: ProcessRequest, options: ProcessRunOptions): Promise<ProcessResult> {
    return this.whileWaking(options.signal, (resumeBy) => this.runOnce(request, options, resumeBy));
  }

  /** `attempt` again after each refusal of a sandbox being woken (nothing ran), while the wake's time lasts. */
  private async whileWaking<T>(signal: AbortSignal | undefined, attempt: (resumeBy: number) => Promise<T>): Promise<T> {
    const resumeBy = Date.now() + this.wakeMs;
    for (;;) {
      try {
        return await attempt(resumeBy);
      } catch (err) {
        const wait = signal?.aborted ? undefined : resumeRetryDelay(err, {}, resumeBy);
        if (wait === undefined) throw err;
        await sleep(wait, signal);
      }
    }
  }

  private async runOnce(request: ProcessRequest, options: ProcessRunOptions, resumeBy: number): Promise<ProcessResult> {
    options.signal?.throwIfAborted();
    const endpoint = await this.endpoint();
    const session = http2.connect(endpoint.baseUrl);
    session.on('error', () => undefined);
    const wakeLeftMs = Math.max(1, resumeBy - Date.now());
    const metadata = metadataOf(endpoint, wakeLeftMs);
    const signals: Promise<void>[] = [];
    try {
      return await this.runOn(session, metadata, portOf(endpoint), request, options, signals, wakeLeftMs);
    } finally {
      // Closing the session at once would have the server refuse a SendSignal still under way (it
      // answers the GOAWAY): close it once those are done (each has a deadline).
      void Promise.allSettled(signals).then(() => session.close());
    }
  }

  /**
   * Starts the command and resolves once sandboxd has started it (its init event), with the live
   * process; `onOutput` gets its output as it comes. Rejects when it does not start (a status, no
   * gRPC at the port, the stream cut first).
   */
  public start(request: ProcessRequest, onOutput: (kind: 'stdout' | 'stderr', data: Buffer) => void, signal?: AbortSignal): Promise<LiveProcess> {
    return this.whileWaking(signal, (resumeBy) => this.startOnce(request, onOutput, resumeBy, signal));
  }

  private async startOnce(
    request: ProcessRequest, onOutput: (kind: 'stdout' | 'stderr', data: Buffer) => void, resumeBy: number, signal?: AbortSignal,
  ): Promise<LiveProcess> {
    signal?.throwIfAborted();
    const endpoint = await this.endpoint();
    const session = http2.connect(endpoint.baseUrl);
    session.on('error', () => undefined);
    const metadata = metadataOf(endpoint, Math.max(1, resumeBy - Date.now()));
    const port = portOf(endpoint);
    const pending = new Set<Promise<unknown>>();
    const track = <T>(call: Promise<T>): Promise<T> => {
      pending.add(call);
      void call.catch(() => undefined).finally(() => pending.delete(call));
      return call;
    };
    const stream = this.call(session, metadata, 'Start', encodeStartRequest(startRequest(request)));
    const reader = new FrameReader();
    let processId: number | undefined;
    let exitCode: number | undefined;
    let started!: (id: number) => void;
    let failed!: (err: unknown) => void;
    const init = new Promise<number>((resolve, reject) => {
      started = resolve;
      failed = reject;
    });
    let ended!: (code: number) => void;
    let broke!: (err: unknown) => void;
    const exited = new Promise<number>((resolve, reject) => {
      ended = resolve;
      broke = reject;
    });
    // Whoever waits on exited, a failure before init is reported through init.
    exited.catch(() => undefined);
    const finish = (outcome: Outcome) => {
      let err: SandboxError | undefined;
      if (outcome.kind === 'error') err = outcome.error;
      else if (outcome.kind === 'cut' && exitCode === undefined) err = this.cutError('Start', outcome.how, processId);
      else if (processId === undefined || exitCode === undefined) err = new SandboxGrpcError(GRPC_INTERNAL, `the Start stream ended OK without ${processId === undefined ? 'an init' : 'an exit'} event`, this.sandbox);
      if (err) {
        failed(err);
        broke(err);
      } else {
        ended(exitCode!);
      }
      // Let calls still under way (a last write, a signal) finish first: each has an answer or a cut.
      void Promise.allSettled([...pending]).then(() => session.close());
    };
    stream.on('data', (chunk: Buffer) => {
      let events: StartEvent[];
      try {
        events = startEvents(reader, chunk);
      } catch (err) {
        stream.close(http2.constants.NGHTTP2_CANCEL);
        return finish({ kind: 'error', error: new SandboxGrpcError(GRPC_INTERNAL, (err as Error).message, this.sandbox) });
      }
      for (const event of events) {
        if ('init' in event) {
          processId = event.init.processId;
          started(processId);
        } else if ('exit' in event) {
          exitCode = event.exit.exitCode;
        } else {
          onOutput(...outputOf(event));
        }
      }
    });
    this.onStatus(stream, 'Start', port, finish);
    const onAbort = () => {
      failed(signal!.reason);
      stream.close(http2.constants.NGHTTP2_CANCEL);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    let id: number;
    try {
      id = await init;
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
    return {
      processId: id,
      exited,
      write: (data) => track(this.unary(session, metadata, port, 'WriteStdin', encodeWriteStdinRequest({ processId: id, payload: { input: Buffer.from(data) } }))),
      closeStdin: () => track(this.unary(session, metadata, port, 'WriteStdin', encodeWriteStdinRequest({ processId: id, payload: { eof: true } }))),
      resize: (cols, rows) => track(this.unary(session, metadata, port, 'ResizeTTY', encodeResizeTtyRequest({ processId: id, cols, rows }))),
      signal: (sig) => track(this.unary(session, metadata, port, 'SendSignal', encodeSendSignalRequest({ processId: id, signal: sig }), SIGNAL_DEADLINE_MS)),
      cancel: () => {
        stream.close(http2.constants.NGHTTP2_CANCEL);
        session.close();
      },
    };
  }

  private runOn(
    session: http2.ClientHttp2Session, metadata: Record<string, string>, port: string, request: ProcessRequest, options: ProcessRunOptions,
    signals: Promise<void>[], wakeLeftMs: number,
  ): Promise<ProcessResult> {
    return new Promise<ProcessResult>((resolve, reject) => {
      const stream = this.call(session, metadata, 'Start', encodeStartRequest(startRequest(request)));
      const reader = new FrameReader();
      const decoders = { stdout: new StringDecoder('utf8'), stderr: new StringDecoder('utf8') };
      const output = { stdout: '', stderr: '' };
      let processId: number | undefined;
      let exitCode: number | undefined;
      let timedOut = false;
      let settled = false;
      let grace: NodeJS.Timeout | undefined;
      const finish = (fn: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        clearTimeout(grace);
        options.signal?.removeEventListener('abort', onAbort);
        fn();
      };
      const kill = () => {
        if (processId !== undefined) {
          signals.push(this.unary(session, metadata, port, 'SendSignal', encodeSendSignalRequest({ processId, signal: Signal.SIGKILL }), SIGNAL_DEADLINE_MS).catch(() => undefined));
        } else {
          stream.close(http2.constants.NGHTTP2_CANCEL);
        }
      };
      const onTimeLimit = () => {
        timedOut = true;
        kill();
        // If the runtime or the router stalls, the stream's status may never come: give up on it.
        grace = setTimeout(() => {
          stream.close(http2.constants.NGHTTP2_CANCEL);
          session.destroy();
          finish(() => {
            for (const kind of ['stdout', 'stderr'] as const) output[kind] += decoders[kind].end();
            resolve({ ...output, exitCode: 124, timedOut: true });
          });
        }, this.killGraceMs);
      };
      // Until the command starts, the router may be waking the sandbox: its time limit starts with it.
      let timer = setTimeout(onTimeLimit, options.timeoutMs + wakeLeftMs);
      const onAbort = () => {
        kill();
        stream.close(http2.constants.NGHTTP2_CANCEL);
        finish(() => reject(options.signal!.reason));
      };
      options.signal?.addEventListener('abort', onAbort, { once: true });

      /** Hands output to the caller's callback; a callback that throws ends the call (the process killed) with its error. */
      const emit = (kind: 'stdout' | 'stderr', text: string): boolean => {
        if (text === '') return true;
        try {
          (kind === 'stdout' ? options.onStdout : options.onStderr)?.(text);
          return true;
        } catch (err) {
          kill();
          stream.close(http2.constants.NGHTTP2_CANCEL);
          finish(() => reject(err));
          return false;
        }
      };

      stream.on('data', (chunk: Buffer) => {
        if (settled) return;
        let events: StartEvent[];
        try {
          events = startEvents(reader, chunk);
        } catch (err) {
          stream.close(http2.constants.NGHTTP2_CANCEL);
          return finish(() => reject(new SandboxGrpcError(GRPC_INTERNAL, (err as Error).message, this.sandbox)));
        }
        for (const event of events) {
          if ('init' in event) {
            processId = event.init.processId;
            if (timedOut) {
              kill();
            } else {
              // Started: the command's own time limit runs from now.
              clearTimeout(timer);
              timer = setTimeout(onTimeLimit, options.timeoutMs);
              if (options.stdin !== undefined) void this.writeStdin(session, metadata, port, processId, options.stdin).catch(() => undefined);
            }
          } else if ('exit' in event) {
            exitCode = event.exit.exitCode;
          } else {
            const [kind, data] = outputOf(event);
            const text = decoders[kind].write(data);
            output[kind] += text;
            if (!emit(kind, text)) return;
          }
        }
      });
      this.onStatus(stream, 'Start', port, (outcome) => {
        if (settled) return;
        // At the time limit the stream may end either way (killed, or cancelled before it started);
        // cut after the exit event, the command has ended and its result is known.
        if (outcome.kind === 'error' && !timedOut) return finish(() => reject(outcome.error));
        if (outcome.kind === 'cut' && !timedOut && exitCode === undefined) return finish(() => reject(this.cutError('Start', outcome.how, processId)));
        for (const kind of ['stdout', 'stderr'] as const) {
          const rest = decoders[kind].end();
          output[kind] += rest;
          if (!emit(kind, rest)) return;
        }
        finish(() => resolve({ ...output, exitCode: timedOut ? 124 : exitCode ?? -1, timedOut }));
      });
    });
  }

  private async writeStdin(
    session: http2.ClientHttp2Session, metadata: Record<string, string>, port: string, processId: number, input: Uint8Array,
  ): Promise<void> {
    if (input.length > 0) await this.unary(session, metadata, port, 'WriteStdin', encodeWriteStdinRequest({ processId, payload: { input: Buffer.from(input) } }));
    await this.unary(session, metadata, port, 'WriteStdin', encodeWriteStdinRequest({ processId, payload: { eof: true } }));
  }

  private unary(
    session: http2.ClientHttp2Session, metadata: Record<string, string>, port: string, method: string, message: Buffer, deadlineMs?: number,
  ): Promise<void> {
    return new Promise((resolve, reject) => {
      const stream = this.call(session, metadata, method, message);
      stream.resume();
      const deadline = deadlineMs === undefined ? undefined : setTimeout(() => {
        stream.close(http2.constants.NGHTTP2_CANCEL);
        reject(new SandboxGrpcError(4, `${method}: no answer within ${deadlineMs} ms`, this.sandbox));
      }, deadlineMs);
      this.onStatus(stream, method, port, (outcome) => {
        clearTimeout(deadline);
        if (outcome.kind === 'ok') resolve();
        else if (outcome.kind === 'error') reject(outcome.error);
        else reject(this.cutError(method, outcome.how));
      });
    });
  }

  private call(session: http2.ClientHttp2Session, metadata: Record<string, string>, method: string, message: Buffer): http2.ClientHttp2Stream {
    const stream = session.request({
      ...metadata,
      ':method': 'POST',
      ':path': `${SERVICE}/${method}`,
      'content-type': 'application/grpc',
      'te': 'trailers',
    });
    stream.end(frame(message));
    return stream;
  }

  /** Calls `done` once with how the call ended (see the file's comment). */
  private onStatus(stream: http2.ClientHttp2Stream, method: string, port: string, done: (outcome: Outcome) => void): void {
    let called = false;
    let responded = false;
    const once = (outcome: Outcome) => {
      if (called) return;
      called = true;
      done(outcome);
    };
    const fail = (code: number, details: string) => once({ kind: 'error', error: new SandboxGrpcError(code, details, this.sandbox) });
    const noGrpc = (what: string) => fail(GRPC_UNAVAILABLE, `no gRPC at the sandbox's port ${port}: ${what}. Fix: ${this.hint}`);
    const check = (headers: http2.IncomingHttpHeaders) => {
      const status = headers['grpc-status'];
      if (status === undefined) return false;
      const code = Number(status);
      const details = percentDecoded(String(headers['grpc-message'] ?? ''));
      const reason = headers[REASON_HEADER];
      if (code === GRPC_OK) {
        once({ kind: 'ok' });
      } else if (code === GRPC_FAILED_PRECONDITION && reason === SUSPENDED_REASON) {
        once({ kind: 'error', error: new SandboxSuspendedError(409, { detail: details, reason }, 'POST', `${SERVICE}/${method}`, this.sandbox) });
      } else if (code === GRPC_UNAVAILABLE && reason === RESUMING_REASON) {
        const error = new SandboxResumingError(503, { detail: details, reason }, 'POST', `${SERVICE}/${method}`, this.sandbox);
        const retryAfter = Number(headers['retry-after']);
        if (headers['retry-after'] !== undefined && Number.isFinite(retryAfter)) error.retryAfterSeconds = retryAfter;
        once({ kind: 'error', error });
      } else if (code === GRPC_UNAVAILABLE && typeof reason === 'string' && UNREACHABLE_REASONS[reason]) {
        noGrpc(`${UNREACHABLE_REASONS[reason]} (${details})`);
      } else {
        fail(code, details);
      }
      return true;
    };
    stream.on('response', (headers) => {
      responded = true;
      if (check(headers)) return;
      const httpStatus = Number(headers[':status']);
      const contentType = String(headers['content-type'] ?? '');
      if (httpStatus === 401 || httpStatus === 403) {
        return fail(httpStatus === 401 ? GRPC_UNAUTHENTICATED : GRPC_PERMISSION_DENIED, `HTTP ${httpStatus} from ${contentType || 'the server'}`);
      }
      if (httpStatus !== 200 || !/^application\/grpc/.test(contentType)) noGrpc(`it answered HTTP ${httpStatus} (${contentType || 'no content-type'}), not gRPC`);
    });
    stream.on('trailers', (trailers) => check(trailers));
    stream.on('error', (err: NodeJS.ErrnoException) => {
      const cause = (err.cause as NodeJS.ErrnoException | undefined) ?? err;
      if (!responded && cause.code === 'ECONNREFUSED') return noGrpc('connection refused (nothing listens there)');
      if (!responded && cause.code === 'ERR_HTTP2_ERROR') return noGrpc('the answer was not HTTP/2 (an HTTP/1.1 server, such as the runtime\'s HTTP API, listens there)');
      once({ kind: 'cut', how: cause.message });
    });
    stream.on('close', () => {
      const rst = stream.rstCode;
      once({ kind: 'cut', how: rst !== undefined && rst !== http2.constants.NGHTTP2_NO_ERROR ? `reset with HTTP/2 code ${rst}` : 'it ended without a status' });
    });
  }

  /** The error for a call cut before its status: what is known of its effect. */
  private cutError(method: string, how: string, processId?: number): SandboxGrpcError {
    let effect: string;
    if (method !== 'Start') effect = 'it may or may not have taken effect';
    else if (processId === undefined) effect = 'the command may or may not have started (sandboxd kills a Start process once it sees the stream cancelled)';
    else effect = `the command (process ${processId}) may still be running in the sandbox: sandboxd kills it once it sees the stream cancelled`;
    return new SandboxGrpcError(GRPC_UNAVAILABLE, `the ${method} stream was cut before ${method === 'Start' ? 'the exit event' : 'its status'} (${how}); ${effect}`, this.sandbox);
  }
}

/** The endpoint's headers as gRPC metadata (lower-case names); through a router, `X-Sandbox-Timeout` bounds its hold for a wake. */
function metadataOf(endpoint: Endpoint, wakeLeftMs: number): Record<string, string> {
  const metadata = Object.fromEntries(Object.entries(endpoint.headers).map(([k, v]) => [k.toLowerCase(), v]));
  if (endpoint.viaRouter) metadata[RouterHeader.TIMEOUT.toLowerCase()] = String(wakeLeftMs / 1000);
  return metadata;
}

/** The sandbox's port a call goes to, for messages: the router's X-Sandbox-Port, or the URL's. */
function portOf(endpoint: Endpoint): string {
  const routed = Object.entries(endpoint.headers).find(([k]) => k.toLowerCase() === RouterHeader.PORT.toLowerCase());
  return routed ? routed[1] : new URL(endpoint.baseUrl).port;
}

/** The StartRequest message of `request`. */
function startRequest(request: ProcessRequest): StartRequest {
  return { config: { command: request.command, envVars: request.env ?? {}, cwd: request.cwd }, ...(request.pty ? { pty: request.pty } : {}) };
}

/** The Start stream's events in `chunk` (a message that sets no event is passed over); throws on a malformed frame or message. */
function startEvents(reader: FrameReader, chunk: Buffer): StartEvent[] {
  return reader.push(chunk).flatMap((message) => decodeStartResponse(message).event ?? []);
}

/** An output event as [its stream, its bytes]. */
function outputOf(event: { readonly stdout: Buffer } | { readonly stderr: Buffer }): ['stdout' | 'stderr', Buffer] {
  return 'stdout' in event ? ['stdout', event.stdout] : ['stderr', event.stderr];
}

/** grpc-message is percent-encoded; a malformed one is kept as it came. */
function percentDecoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
