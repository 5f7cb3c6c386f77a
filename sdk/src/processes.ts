/**
 * `run` over the runtime's process API (docs/runtime-processes.md), and background processes.
 *
 * `run` asks `/execute` for NDJSON: this project's runtime streams the output, which goes to
 * onStdout/onStderr event by event as the command writes it; upstream's runtime answers JSON, and
 * the output is handed over once at the end, as before (no configuration either way). When a stream
 * is cut after the command started (a router restart, a lost connection), `run` follows the command
 * again after the last event it saw (./process-stream): nothing is lost while the runtime still
 * keeps it, and the command is never started twice.
 *
 * `run(command, { background: true })` starts a process that outlives the call and returns a
 * CommandHandle (wait, kill, stdin, disconnect); `sandbox.processes` lists them and attaches to
 * one again, from this client or another.
 */
import { SandboxConfigError, SandboxConnectionError, SandboxError, SandboxHttpError, SandboxProcessError, SandboxTimeoutError } from './errors.js';
import { HttpResponse, readAll } from './http.js';
import { CallbackFailure, FollowOptions, NdjsonReader, OutputCallbacks, ProcessExit, ProcessOutput, followProcess, isNdjson, openOutput } from './process-stream.js';
import { ExecuteRequest, ExecuteResponse, RuntimeApi, WireProcess } from './runtime-api.js';
import type { RunResult } from './sandbox.js';

/** The signals a process may be sent (to its whole process group). */
export type ProcessSignal = 'SIGTERM' | 'SIGINT' | 'SIGKILL' | 'SIGHUP';
const SIGNALS: readonly ProcessSignal[] = ['SIGTERM', 'SIGINT', 'SIGKILL', 'SIGHUP'];

/** `run(command, { background: true, ... })`: start a process and get a CommandHandle at once. */
export interface BackgroundRunOptions extends OutputCallbacks {
  readonly background: true;
  /** Run through `/bin/sh -c`; `false` splits the command into argv. @default true */
  readonly shell?: boolean;
  /** The process's time limit; when it runs out its whole process group is killed. @default none: it runs until it ends or is killed */
  readonly timeoutMs?: number;
  /** Extra environment variables. */
  readonly env?: Readonly<Record<string, string>>;
  /** Working directory, relative to the workspace. @default the workspace */
  readonly cwd?: string;
  /** Written to the process's stdin, which is then closed (unless `openStdin`). */
  readonly stdin?: string | Uint8Array;
  /** Keep the process's stdin open for `sendStdin` and `closeStdin`. @default false (stdin is /dev/null) */
  readonly openStdin?: boolean;
  /** A label of yours, shown by `sandbox.processes.list()`. */
  readonly tag?: string;
  /** Stops the start request (a process already started runs on). */
  readonly signal?: AbortSignal;
}

export interface AttachOptions extends OutputCallbacks {
  /** Deliver only the output after this seq (the last one a previous handle saw). @default 0: all the runtime still keeps */
  readonly after?: number;
  /** Stops the attach request. */
  readonly signal?: AbortSignal;
}

/** A process as the runtime reports it. */
export interface ProcessInfo {
  readonly id: string;
  readonly pid: number;
  readonly command: string;
  readonly tag?: string;
  /** Started with `background: true` (else: a `run` that streamed). */
  readonly background: boolean;
  readonly status: 'running' | 'exited';
  /** Set once it has exited: 124 after its time limit, a negative signal number after a signal death. */
  readonly exitCode: number | null;
  readonly timedOut: boolean;
  /** The signal that ended it, if one did. */
  readonly signal: string | null;
  readonly startedAt: Date;
  readonly endedAt?: Date;
  /** Whether its stdin is open for `sendStdin`. */
  readonly stdinOpen: boolean;
}

/** A process started with `background: true` or attached to with `sandbox.processes.attach`. */
export interface CommandHandle {
  /** The runtime's id of the process (`p-…`): attach to it again with it. */
  readonly id: string;
  readonly pid: number;
  /**
   * Resolves once the process has ended, with the output this handle received (after `after`,
   * when attached so) and its exit code. Rejects when the handle was disconnected, a callback threw,
   * or the output could not be followed again (a SandboxProcessError: attach again to go on).
   * `signal` stops this wait only.
   */
  wait(options?: { readonly signal?: AbortSignal }): Promise<RunResult>;
  /** Sends `signal` to the process's group. @default "SIGTERM". A process that has ended already is left as it is. */
  kill(signal?: ProcessSignal): Promise<void>;
  /** Writes to the process's stdin (it must have been started with `openStdin: true`). */
  sendStdin(data: string | Uint8Array): Promise<void>;
  /** Closes the process's stdin (end of input). */
  closeStdin(): Promise<void>;
  /** Stops following the output (wait() rejects); the process keeps running. */
  disconnect(): void;
}

/** `sandbox.processes`: the runtime's processes, running and recently ended. */
export interface SandboxProcesses {
  list(options?: { readonly signal?: AbortSignal }): Promise<ProcessInfo[]>;
  /** One process; a SandboxProcessError when the runtime does not know it (any more). */
  get(id: string, options?: { readonly signal?: AbortSignal }): Promise<ProcessInfo>;
  /** Follows a process again (after a reconnect, or from another SandboxClient): its output replayed from `after`, then as it comes. */
  attach(id: string, options?: AttachOptions): Promise<CommandHandle>;
}

/** What the process API needs of its Sandbox. */
export interface ProcessContext {
  readonly runtime: RuntimeApi;
  readonly sandbox: string;
  readonly requestTimeoutMs: number;
  /** Throws when the handle was let go. */
  readonly ensureOpen: () => void;
}

export interface ForegroundOptions extends OutputCallbacks {
  /** How long the whole run may take (the command's limit and a margin). */
  readonly deadlineMs: number;
  readonly signal?: AbortSignal;
  readonly retry: boolean;
  /** How much of each stream the result keeps. @default DEFAULT_MAX_OUTPUT_BYTES */
  readonly maxOutputBytes?: number;
}

/** The largest stdin write the runtime takes at once. */
const MAX_STDIN_CHUNK = 1024 * 1024;
/** How long a background handle's stream may last through the router (which cuts it at its own --proxy-timeout first; then it is followed again). */
const FOLLOW_EXCHANGE_MS = 24 * 3600_000;

/**
 * Runs `request` to its end over `/execute` asking for NDJSON (see the module comment): the result,
 * with the callbacks told as the output comes, or at the end when the runtime answered JSON.
 */
export async function runCommand(ctx: ProcessContext, request: ExecuteRequest, options: ForegroundOptions): Promise<RunResult> {
  const limit = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const signal = options.signal ? AbortSignal.any([options.signal, limit.signal]) : limit.signal;
  try {
    // The retried unit ends at the answer's headers: the runtime has taken the command by then, so a
    // cut after them (before or inside the start line) must not send it again (retry: true or not).
    // Until then a sleeping sandbox may be woken (up to requestTimeoutMs more): the command's own
    // deadline runs from its start, so a wake does not eat its time.
    const res = await ctx.runtime.executeStreaming(request, {
      timeoutMs: options.deadlineMs, wakeMs: ctx.requestTimeoutMs, signal, idempotent: options.retry,
    }, async (r) => r);
    timer = setTimeout(() => limit.abort(new SandboxTimeoutError(
      `run: no result within ${options.deadlineMs} ms (the command's timeoutMs and a margin); the runtime should have ended it by then`, { sandbox: ctx.sandbox },
    )), options.deadlineMs);
    const answer = await readAnswer(ctx, res, signal);
    if (answer.kind === 'json') return resultOfJson(answer.json, options);
    const output = new ProcessOutput(options, 0, options.maxOutputBytes);
    try {
      const exit = await followProcess(followOptions(ctx, answer.id, output, signal, options.deadlineMs, 'run'), answer.reader);
      return resultOf(output, exit);
    } catch (err) {
      if (!(err instanceof CallbackFailure)) throw err;
      // As over gRPC: a callback that throws ends the command, and run() rejects with its error.
      await ctx.runtime.signalProcess(answer.id, 'SIGKILL', { timeoutMs: ctx.requestTimeoutMs, idempotent: false }).catch(() => undefined);
      throw err.error;
    }
  } finally {
    clearTimeout(timer);
  }
}

/** The answer after its headers (outside the retries): upstream's JSON result, or the NDJSON stream after its start line. */
async function readAnswer(ctx: ProcessContext, res: HttpResponse, signal: AbortSignal): Promise<
  { kind: 'json'; json: ExecuteResponse } | { kind: 'stream'; reader: NdjsonReader; id: string }
> {
  const mayHaveStarted = (err: unknown): unknown => (signal.aborted ? err : new SandboxConnectionError(
    `POST /execute: the answer was cut after its headers (${err instanceof Error ? err.message : String(err)}); the command may have started, and was not sent again`,
    err instanceof SandboxConnectionError ? err.code : 'ECONNRESET', { sandbox: ctx.sandbox, cause: err },
  ));
  if (!isNdjson(res)) {
    const text = await readAll(res.body).then((b) => b.toString('utf8'), (err: unknown) => {
      throw mayHaveStarted(err);
    });
    return { kind: 'json', json: JSON.parse(text) as ExecuteResponse };
  }
  const reader = new NdjsonReader(res.body);
  const start = await reader.next().catch((err: unknown) => {
    reader.close();
    throw mayHaveStarted(err);
  });
  if (start?.type !== 'start' || typeof start.id !== 'string') {
    reader.close();
    throw new SandboxConnectionError('POST /execute: the NDJSON answer did not begin with the command\'s start', 'EPROTO', { sandbox: ctx.sandbox });
  }
  return { kind: 'stream', reader, id: start.id };
}

/** The result of a followed process: `truncated` only when output was lost or not kept. */
function resultOf(output: ProcessOutput, exit: ProcessExit): RunResult {
  return {
    stdout: output.stdout, stderr: output.stderr, exitCode: exit.exitCode, timedOut: exit.timedOut, ...(output.truncated ? { truncated: true } : {}),
  };
}

/** Upstream's JSON answer: the result, and the callbacks told once each. */
function resultOfJson(result: ExecuteResponse, callbacks: OutputCallbacks): RunResult {
  const out: RunResult = {
    stdout: result.stdout ?? '',
    stderr: result.stderr ?? '',
    exitCode: result.exit_code ?? -1,
    timedOut: result.timed_out === true,
  };
  if (out.stdout !== '') callbacks.onStdout?.(out.stdout);
  if (out.stderr !== '') callbacks.onStderr?.(out.stderr);
  return out;
}

function followOptions(
  ctx: ProcessContext, id: string, output: ProcessOutput, signal: AbortSignal | undefined, exchangeMs: number, who: string,
): FollowOptions {
  return { runtime: ctx.runtime, sandbox: ctx.sandbox, id, output, signal, requestTimeoutMs: ctx.requestTimeoutMs, exchangeMs, who };
}

export class RuntimeProcesses implements SandboxProcesses {
  public constructor(private readonly ctx: ProcessContext) {}

  /** What `runCommand` needs. */
  public get context(): ProcessContext {
    return this.ctx;
  }

  /** `run(command, { background: true })`: the command is validated by `run` already. */
  public async start(command: string, options: BackgroundRunOptions): Promise<CommandHandle> {
    const { timeoutMs, tag, openStdin } = options;
    if (timeoutMs !== undefined && !(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
      throw new SandboxConfigError('timeoutMs', `must be a positive number of milliseconds, or left out for no limit, got ${timeoutMs}`);
    }
    if (tag !== undefined && (typeof tag !== 'string' || tag.length > 256)) throw new SandboxConfigError('tag', 'must be a string of at most 256 characters');
    if (openStdin !== undefined && typeof openStdin !== 'boolean') throw new SandboxConfigError('openStdin', `must be true or false, got ${JSON.stringify(openStdin)}`);
    const input = options.stdin === undefined ? undefined : bytesOf(options.stdin, 'stdin');
    const wire = await this.unsupported('background', () => this.ctx.runtime.startProcess({
      command,
      shell: options.shell ?? true,
      ...(options.env ? { env: options.env } : {}),
      ...(options.cwd ? { cwd: options.cwd } : {}),
      ...(timeoutMs === undefined ? {} : { timeout_seconds: timeoutMs / 1000 }),
      stdin: input !== undefined || openStdin === true,
      ...(tag === undefined ? {} : { tag }),
    }, { timeoutMs: this.ctx.requestTimeoutMs, signal: options.signal, idempotent: false }));
    const handle = new RuntimeCommandHandle(this.ctx, wire.id, wire.pid, options, 0);
    if (input !== undefined) {
      try {
        await handle.write(input, openStdin !== true);
      } catch (err) {
        // It would wait for its input for ever: end it, and say so.
        await handle.kill('SIGKILL').catch(() => undefined);
        handle.disconnect();
        throw new SandboxProcessError(`run: writing stdin to process ${wire.id} failed, so it was killed: ${(err as Error).message}`, wire.id, { sandbox: this.ctx.sandbox, cause: err });
      }
    }
    return handle;
  }

  public async list(options: { readonly signal?: AbortSignal } = {}): Promise<ProcessInfo[]> {
    this.ctx.ensureOpen();
    const answer = await this.unsupported('processes', () => this.ctx.runtime.listProcesses({ timeoutMs: this.ctx.requestTimeoutMs, signal: options.signal, idempotent: true }));
    return (answer.processes ?? []).map(infoOf);
  }

  public async get(id: string, options: { readonly signal?: AbortSignal } = {}): Promise<ProcessInfo> {
    this.ctx.ensureOpen();
    checkId(id);
    const call = { timeoutMs: this.ctx.requestTimeoutMs, signal: options.signal, idempotent: true };
    return infoOf(await this.known(id, () => this.ctx.runtime.getProcess(id, call)));
  }

  public async attach(id: string, options: AttachOptions = {}): Promise<CommandHandle> {
    this.ctx.ensureOpen();
    checkId(id);
    const after = options.after ?? 0;
    if (!Number.isSafeInteger(after) || after < 0) throw new SandboxConfigError('after', `must be a whole number >= 0 (the last seq seen), got ${after}`);
    const output = new ProcessOutput(options, after);
    const { reader, process } = await this.known(id, () => openOutput(followOptions(this.ctx, id, output, options.signal, FOLLOW_EXCHANGE_MS, 'attach'), after, true));
    return new RuntimeCommandHandle(this.ctx, id, process.pid, options, after, reader);
  }

  /** A 404 naming no route (upstream's runtime, which has no process API) is a SandboxConfigError on `field`. */
  private async unsupported<T>(field: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (err) {
      // Upstream's runtime (FastAPI) and ours answer a path they do not serve with {"detail": "Not Found"}.
      const noApi = err instanceof SandboxHttpError && (err.status === 405 || (err.status === 404 && err.detail === 'Not Found'));
      if (noApi) {
        throw new SandboxConfigError(field, `needs this project's runtime: the sandbox's runtime has no process API (${(err as Error).message}); upstream's runtime has none. Without it, run the command in the foreground`);
      }
      throw err;
    }
  }

  /** `call`, with a 404 for the process a SandboxProcessError. */
  private async known<T>(id: string, call: () => Promise<T>): Promise<T> {
    try {
      return await this.unsupported('processes', call);
    } catch (err) {
      if (err instanceof SandboxHttpError && err.status === 404) {
        throw new SandboxProcessError(`process ${id} is not known to the sandbox's runtime: it never ran there, was deleted, ended too long ago to be kept, or the runtime restarted`, id, { sandbox: this.ctx.sandbox, cause: err });
      }
      throw err;
    }
  }
}

class RuntimeCommandHandle implements CommandHandle {
  private readonly stop = new AbortController();
  private readonly done: Promise<RunResult>;

  public constructor(
    private readonly ctx: ProcessContext,
    public readonly id: string,
    public readonly pid: number,
    callbacks: OutputCallbacks,
    after: number,
    first?: NdjsonReader,
  ) {
    const output = new ProcessOutput(callbacks, after);
    this.done = followProcess(followOptions(ctx, id, output, this.stop.signal, FOLLOW_EXCHANGE_MS, 'the handle'), first).then(
      (exit) => resultOf(output, exit),
      (err) => {
        throw err instanceof CallbackFailure ? err.error : err;
      },
    );
    // Nobody may ever wait: a failure to follow must not become an unhandled rejection.
    this.done.catch(() => undefined);
  }

  public wait(options: { readonly signal?: AbortSignal } = {}): Promise<RunResult> {
    const signal = options.signal;
    if (!signal) return this.done;
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise<RunResult>((resolve, reject) => {
      const onAbort = () => reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      this.done.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    });
  }

  public async kill(signal: ProcessSignal = 'SIGTERM'): Promise<void> {
    if (!SIGNALS.includes(signal)) throw new SandboxConfigError('signal', `must be one of ${SIGNALS.join(', ')}, got ${JSON.stringify(signal)}`);
    try {
      await this.ctx.runtime.signalProcess(this.id, signal, { timeoutMs: this.ctx.requestTimeoutMs, idempotent: false });
    } catch (err) {
      // 409: it has ended already, which is what a kill wants.
      if (!(err instanceof SandboxHttpError && err.status === 409)) throw this.refused(err, 'kill');
    }
  }

  public async sendStdin(data: string | Uint8Array): Promise<void> {
    await this.write(bytesOf(data, 'data'), false);
  }

  public async closeStdin(): Promise<void> {
    await this.write(new Uint8Array(0), true);
  }

  public disconnect(): void {
    this.stop.abort(new SandboxError(`the handle of process ${this.id} was disconnected; the process runs on: follow it again with sandbox.processes.attach("${this.id}")`, { sandbox: this.ctx.sandbox }));
  }

  /** Writes `data` in pieces the runtime takes, then closes stdin when `eof`. */
  public async write(data: Uint8Array, eof: boolean): Promise<void> {
    for (let at = 0; at < data.length || at === 0; at += MAX_STDIN_CHUNK) {
      const last = at + MAX_STDIN_CHUNK >= data.length;
      try {
        const call = { timeoutMs: this.ctx.requestTimeoutMs, idempotent: false };
        await this.ctx.runtime.writeStdin(this.id, data.subarray(at, at + MAX_STDIN_CHUNK), eof && last, call);
      } catch (err) {
        throw this.refused(err, 'stdin');
      }
      if (last) return;
    }
  }

  /** A 404 or 409 as a SandboxProcessError that says what to do. */
  private refused(err: unknown, what: 'stdin' | 'kill'): unknown {
    if (!(err instanceof SandboxHttpError) || (err.status !== 404 && err.status !== 409)) return err;
    const fix = what === 'stdin'
      ? 'its stdin takes input only when it was started with openStdin: true, until closeStdin(), and while it runs'
      : 'it is no longer known to the runtime';
    return new SandboxProcessError(`process ${this.id}: ${err.detail ?? `HTTP ${err.status}`}; ${fix}`, this.id, { sandbox: this.ctx.sandbox, cause: err });
  }
}

function infoOf(wire: WireProcess): ProcessInfo {
  return {
    id: wire.id,
    pid: wire.pid,
    command: wire.command,
    ...(wire.tag === undefined ? {} : { tag: wire.tag }),
    background: wire.background,
    status: wire.status,
    exitCode: wire.exit_code,
    timedOut: wire.timed_out,
    signal: wire.signal,
    startedAt: new Date(wire.started_at),
    ...(wire.ended_at ? { endedAt: new Date(wire.ended_at) } : {}),
    stdinOpen: wire.stdin,
  };
}

function bytesOf(data: string | Uint8Array, field: string): Uint8Array {
  if (typeof data === 'string') return Buffer.from(data);
  if (data instanceof Uint8Array) return data;
  throw new SandboxConfigError(field, 'must be a string or a Uint8Array (a Buffer)');
}

function checkId(id: string): void {
  if (typeof id !== 'string' || !/^p-[0-9a-f]+$/.test(id)) {
    throw new SandboxConfigError('id', `must be a process id as the runtime gives it ("p-" and hex digits, e.g. from run(..., { background: true }).id), got ${JSON.stringify(id)}`);
  }
}
