/**
 * `run` over sandboxd's gRPC ProcessService (the runtime's --grpc-port, 9090 in sandboxd), through
 * the router (h2c; the routing headers go as gRPC metadata) or straight to the Pod, over node:http2:
 * one `Start` stream per command, so output arrives as it is written, stdin is written with
 * `WriteStdin`, and a time limit or an abort sends `SendSignal(SIGKILL)` to the process group.
 */
import * as http2 from 'node:http2';
import { StringDecoder } from 'node:string_decoder';
import { SandboxConnectionError, SandboxGrpcError } from './errors.js';
import { FrameReader, SIGNAL_SIGKILL, StartRequest, decodeStartResponse, encodeSendSignal, encodeStartRequest, encodeWriteStdin, frame } from './process-wire.js';
import { Endpoint } from './runtime-api.js';

const SERVICE = '/process.v1.ProcessService';
/** gRPC status codes the SDK names. */
const GRPC_OK = 0;
/** How long after the time-limit kill the SDK waits for the Start stream's status before giving up on it. */
const KILL_GRACE_MS = 5_000;
/** The deadline of a SendSignal call. */
const SIGNAL_DEADLINE_MS = 5_000;

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

export class ProcessClient {
  public constructor(
    private readonly endpoint: () => Promise<Endpoint>,
    private readonly sandbox: string,
    /** After the time-limit kill, how long to wait for the stream's status (then: cancel it, report the time-out). */
    private readonly killGraceMs: number = KILL_GRACE_MS,
  ) {}

  /** Starts the command and resolves when it has exited (or was killed at its time limit). */
  public async run(request: StartRequest, options: ProcessRunOptions): Promise<ProcessResult> {
    options.signal?.throwIfAborted();
    const endpoint = await this.endpoint();
    const session = http2.connect(endpoint.baseUrl);
    session.on('error', () => undefined);
    const metadata = Object.fromEntries(Object.entries(endpoint.headers).map(([k, v]) => [k.toLowerCase(), v]));
    const signals: Promise<void>[] = [];
    try {
      return await this.start(session, metadata, request, options, signals);
    } finally {
      // Closing the session at once would have the server refuse a SendSignal still under way (it
      // answers the GOAWAY): close it once those are done (each has a deadline).
      void Promise.allSettled(signals).then(() => session.close());
    }
  }

  private start(
    session: http2.ClientHttp2Session, metadata: Record<string, string>, request: StartRequest, options: ProcessRunOptions, signals: Promise<void>[],
  ): Promise<ProcessResult> {
    return new Promise<ProcessResult>((resolve, reject) => {
      const stream = this.call(session, metadata, 'Start', encodeStartRequest(request));
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
          signals.push(this.unary(session, metadata, 'SendSignal', encodeSendSignal(processId, SIGNAL_SIGKILL), SIGNAL_DEADLINE_MS).catch(() => undefined));
        } else {
          stream.close(http2.constants.NGHTTP2_CANCEL);
        }
      };
      const timer = setTimeout(() => {
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
      }, options.timeoutMs);
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
        let messages: Buffer[];
        try {
          messages = reader.push(chunk);
        } catch (err) {
          stream.close(http2.constants.NGHTTP2_CANCEL);
          return finish(() => reject(new SandboxGrpcError(13, (err as Error).message, this.sandbox)));
        }
        for (const message of messages) {
          const event = decodeStartResponse(message);
          if (!event) continue;
          if (event.kind === 'init') {
            processId = event.processId;
            if (timedOut) kill();
            else if (options.stdin !== undefined) void this.writeStdin(session, metadata, processId, options.stdin).catch(() => undefined);
          } else if (event.kind === 'exit') {
            exitCode = event.exitCode;
          } else {
            const text = decoders[event.kind].write(event.data);
            output[event.kind] += text;
            if (!emit(event.kind, text)) return;
          }
        }
      });
      this.onStatus(stream, (err) => {
        if (settled) return;
        // At the time limit the stream may end either way (killed, or cancelled before it started).
        if (err && !timedOut) return finish(() => reject(err));
        for (const kind of ['stdout', 'stderr'] as const) {
          const rest = decoders[kind].end();
          output[kind] += rest;
          if (!emit(kind, rest)) return;
        }
        finish(() => resolve({ ...output, exitCode: timedOut ? 124 : exitCode ?? -1, timedOut }));
      });
    });
  }

  private async writeStdin(session: http2.ClientHttp2Session, metadata: Record<string, string>, processId: number, input: Uint8Array): Promise<void> {
    if (input.length > 0) await this.unary(session, metadata, 'WriteStdin', encodeWriteStdin(processId, input));
    await this.unary(session, metadata, 'WriteStdin', encodeWriteStdin(processId, 'eof'));
  }

  private unary(
    session: http2.ClientHttp2Session, metadata: Record<string, string>, method: string, message: Buffer, deadlineMs?: number,
  ): Promise<void> {
    return new Promise((resolve, reject) => {
      const stream = this.call(session, metadata, method, message);
      stream.resume();
      const deadline = deadlineMs === undefined ? undefined : setTimeout(() => {
        stream.close(http2.constants.NGHTTP2_CANCEL);
        reject(new SandboxGrpcError(4, `${method}: no answer within ${deadlineMs} ms`, this.sandbox));
      }, deadlineMs);
      this.onStatus(stream, (err) => {
        clearTimeout(deadline);
        if (err) reject(err);
        else resolve();
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

  /** Calls `done` once with the call's outcome: undefined for OK, else the error (status from headers or trailers). */
  private onStatus(stream: http2.ClientHttp2Stream, done: (err?: SandboxGrpcError | SandboxConnectionError) => void): void {
    let called = false;
    const once = (err?: SandboxGrpcError | SandboxConnectionError) => {
      if (called) return;
      called = true;
      done(err);
    };
    const check = (headers: Record<string, string | string[] | number | undefined>) => {
      const status = headers['grpc-status'];
      if (status === undefined) return false;
      const code = Number(status);
      const details = percentDecoded(String(headers['grpc-message'] ?? ''));
      once(code === GRPC_OK ? undefined : new SandboxGrpcError(code, details, this.sandbox));
      return true;
    };
    stream.on('response', (headers) => {
      const httpStatus = Number(headers[':status']);
      if (check(headers)) return;
      if (httpStatus !== 200) {
        once(new SandboxGrpcError(httpStatus === 401 ? 16 : httpStatus === 403 ? 7 : 14, `HTTP ${httpStatus} from ${String(headers['content-type'] ?? 'the server')}`, this.sandbox));
      }
    });
    stream.on('trailers', (trailers) => check(trailers));
    stream.on('error', (err: NodeJS.ErrnoException) => once(new SandboxConnectionError(`gRPC: ${err.message}`, err.code, { sandbox: this.sandbox, cause: err })));
    stream.on('close', () => once(new SandboxConnectionError('gRPC: the stream closed without a status', undefined, { sandbox: this.sandbox })));
  }
}

/** grpc-message is percent-encoded; a malformed one is kept as it came. */
function percentDecoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
