/**
 * `sandbox.pty`: interactive terminal sessions in the sandbox over sandboxd's gRPC ProcessService
 * (`Start` with a PTY, then `WriteStdin`, `ResizeTTY` and `SendSignal` by its process id). The
 * command sees a real terminal (isatty, line editing, echo, job control); everything it prints
 * arrives in `onData`.
 *
 * The gRPC port: the client's `grpcPort` when set, else the one the runtime names in its `GET /`
 * answer (`"grpc_port"`, this project's runtime when it serves gRPC), asked once per handle. A
 * runtime that names none serves no gRPC: that is a SandboxConfigError naming the template's
 * `runtime.grpcPort`.
 */
import { StringDecoder } from 'node:string_decoder';
import { SandboxConfigError, SandboxError, SandboxGrpcError } from './errors.js';
import { sendJson } from './http.js';
import { LiveProcess, ProcessClient } from './process-client.js';
import { Signal } from './process-proto.js';
import { withRetries } from './retry.js';
import { Endpoint } from './runtime-api.js';
import { RouterHeader } from './wire.js';

export interface PtyCreateOptions {
  /** The terminal's width, in columns. */
  readonly cols: number;
  /** The terminal's height, in rows. */
  readonly rows: number;
  /** Working directory, relative to the workspace. @default the workspace */
  readonly cwd?: string;
  /** Extra environment variables (TERM, for one). */
  readonly env?: Readonly<Record<string, string>>;
  /** What runs on the terminal: an argv, or a command line run with `/bin/sh -c`. @default an interactive shell, `/bin/sh -i` */
  readonly command?: string | readonly string[];
  /** The terminal's output, as UTF-8 text (a multibyte character is never split across calls). */
  readonly onData: (data: string) => void;
  /** Stops waiting for the session to start (the session is then cancelled). */
  readonly signal?: AbortSignal;
}

/** A signal `kill` sends (the ones sandboxd's SendSignal takes). */
export type PtySignal = 'SIGKILL' | 'SIGTERM' | 'SIGINT';

export interface PtyHandle {
  /** sandboxd's id of the session's process (what its gRPC calls name it by), not an OS pid. */
  readonly pid: number;
  /** Types `data` into the terminal (`\r` is Enter, `\x03` is Ctrl-C). */
  write(data: string | Uint8Array): Promise<void>;
  /** Changes the terminal's size; the command gets SIGWINCH. */
  resize(cols: number, rows: number): Promise<void>;
  /** Sends `signal` to the command's process group; a session that has ended already is left alone. @default 'SIGKILL' (an interactive shell ignores SIGTERM and SIGINT) */
  kill(signal?: PtySignal): Promise<void>;
  /** Resolves when the command has ended: its exit code, -1 when a signal ended it. */
  wait(): Promise<{ exitCode: number }>;
  /** Cancels the session's stream: no more onData; sandboxd kills the command when it sees that; wait() then rejects. */
  close(): void;
}

/** The PTY sessions of a sandbox; the SandboxHandle's `pty`. */
export interface SandboxPty {
  /** Starts `command` (an interactive shell by default) on a new terminal of `cols` x `rows`; resolves once it runs. */
  create(options: PtyCreateOptions): Promise<PtyHandle>;
}

/** What a Sandbox needs to open PTY sessions. */
export interface PtyAccess {
  /** The client's grpcPort, when it has one. */
  readonly grpcPort?: number;
  /** The sandbox's runtime (its legacy HTTP port), for `GET /`. */
  readonly runtime: () => Promise<Endpoint>;
  /** A ProcessService client for the sandbox's `port`; `hint` says how to fix a port with no gRPC. */
  readonly processes: (port: number, hint: string) => ProcessClient;
  readonly requestTimeoutMs: number;
}

const DEFAULT_COMMAND = ['/bin/sh', '-i'];
const SIGNALS: Record<PtySignal, Signal> = { SIGKILL: Signal.SIGKILL, SIGTERM: Signal.SIGTERM, SIGINT: Signal.SIGINT };
const GRPC_NOT_FOUND = 5;
const GRPC_FAILED_PRECONDITION = 9;
/** A resize right after the start can come before the command is on its terminal: tried again this often, this far apart. */
const RESIZE_TRIES = 100;
const RESIZE_RETRY_MS = 50;
/** The largest terminal side ResizeTTY and stty take. */
const MAX_SIDE = 65535;

export class RuntimePty implements SandboxPty {
  private discovered?: Promise<number>;

  public constructor(private readonly sandbox: string, private readonly access: PtyAccess | undefined, private readonly ensureOpen: () => void) {}

  public async create(options: PtyCreateOptions): Promise<PtyHandle> {
    this.ensureOpen();
    if (typeof options !== 'object' || options === null) throw new SandboxConfigError('options', 'must be an object like { cols: 80, rows: 24, onData }');
    const { cols, rows } = validSize(options.cols, options.rows);
    if (typeof options.onData !== 'function') throw new SandboxConfigError('onData', 'must be a function: it gets the terminal\'s output');
    const command = typeof options.command === 'string' ? ['/bin/sh', '-c', options.command] : options.command ?? DEFAULT_COMMAND;
    if (!Array.isArray(command) || command.length === 0 || command.some((arg) => typeof arg !== 'string') || command[0] === '') {
      throw new SandboxConfigError('command', 'must be a non-empty command line or argv of strings');
    }
    for (const key of Object.keys(options.env ?? {})) {
      if (key === '' || key.includes('=') || key.includes('\0')) throw new SandboxConfigError(`env.${key}`, 'variable names must be non-empty and contain no "=" or NUL');
    }
    const { port, source } = await this.port(options.signal);
    const hint = source === 'option'
      ? 'the client\'s grpcPort must be the port the sandbox\'s runtime serves gRPC on (the SandboxTemplate\'s runtime.grpcPort, the runtime\'s --grpc-port)'
      : `the runtime's GET / named grpc_port ${port}, but nothing serves gRPC there for this client: check the SandboxTemplate's runtime.grpcPort, or pass the client's grpcPort`;
    const decoder = new StringDecoder('utf8');
    let closed = false;
    const deliver = (text: string) => {
      if (text !== '' && !closed) options.onData(text);
    };
    const live = await this.access!.processes(port, hint).start(
      { command, env: options.env, cwd: options.cwd, pty: { cols, rows } },
      (_kind, data) => deliver(decoder.write(data)),
      options.signal,
    );
    const exited = live.exited.then((exitCode) => {
      deliver(decoder.end());
      return { exitCode };
    });
    // wait() is optional: a session nobody waits on must not be an unhandled rejection.
    exited.catch(() => undefined);
    let over = false;
    void live.exited.then(() => (over = true), () => (over = true));
    return {
      pid: live.processId,
      write: async (data) => {
        if (typeof data !== 'string' && !(data instanceof Uint8Array)) throw new SandboxConfigError('data', 'must be a string or bytes');
        await live.write(typeof data === 'string' ? Buffer.from(data, 'utf8') : data);
      },
      resize: (c, r) => resize(live, validSize(c, r), () => over),
      kill: async (signal = 'SIGKILL') => {
        if (!(signal in SIGNALS)) throw new SandboxConfigError('signal', `must be SIGKILL, SIGTERM or SIGINT, got ${JSON.stringify(signal)}`);
        if (over) return;
        await live.signal(SIGNALS[signal]).catch((err: unknown) => {
          // Ended between the check and the call: sandboxd no longer knows it.
          if (!(err instanceof SandboxGrpcError && err.code === GRPC_NOT_FOUND)) throw err;
        });
      },
      wait: () => exited,
      close: () => {
        if (closed) return;
        closed = true;
        over = true;
        live.cancel();
      },
    };
  }

  /** The gRPC port and where it came from: the client's option, else the runtime's GET / (asked once). */
  private async port(signal?: AbortSignal): Promise<{ port: number; source: 'option' | 'runtime' }> {
    if (!this.access) throw new SandboxError(`sandbox ${this.sandbox}: this handle cannot reach the runtime's gRPC ProcessService`, { sandbox: this.sandbox });
    if (this.access.grpcPort !== undefined) return { port: this.access.grpcPort, source: 'option' };
    this.discovered ??= this.discover(signal);
    try {
      return { port: await this.discovered, source: 'runtime' };
    } catch (err) {
      // Asked again next time: the failure may pass (a connection error, an abort).
      this.discovered = undefined;
      throw err;
    }
  }

  private async discover(signal?: AbortSignal): Promise<number> {
    const endpoint = await this.access!.runtime();
    const timeoutMs = this.access!.requestTimeoutMs;
    const resumeBy = Date.now() + timeoutMs;
    // Maybe the first request after an idle sleep: a SandboxResuming refusal is tried again (only
    // that: attempts 1) within the request's time, each try told what is left of it.
    const metadata = await withRetries(() => {
      const leftMs = Math.max(1, resumeBy - Date.now());
      const headers: Record<string, string> = { ...endpoint.headers };
      if (endpoint.viaRouter) headers[RouterHeader.TIMEOUT] = String(leftMs / 1000);
      return sendJson<Record<string, unknown>>({
        method: 'GET', url: `${endpoint.baseUrl}/`, headers, timeoutMs: leftMs, bufferedBody: true, signal, sandbox: this.sandbox,
      });
    }, { idempotent: false, signal, resumeBy }, { attempts: 1 });
    const port = metadata?.grpc_port;
    if (typeof port === 'number' && Number.isInteger(port) && port > 0 && port < 65536) return port;
    throw new SandboxConfigError('runtime.grpcPort', `sandbox ${this.sandbox}'s runtime serves no gRPC ProcessService (its GET / names no grpc_port), and a PTY session needs it: `
      + 'set runtime.grpcPort in the SandboxTemplate (the runtime\'s --grpc-port; sandboxd uses 9090); or, for a runtime that serves gRPC without saying so, pass grpcPort to the SandboxClient');
  }
}

function validSize(cols: unknown, rows: unknown): { cols: number; rows: number } {
  for (const [field, value] of [['cols', cols], ['rows', rows]] as const) {
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_SIDE) {
      throw new SandboxConfigError(field, `must be a whole number from 1 to ${MAX_SIDE}, got ${JSON.stringify(value)}`);
    }
  }
  return { cols: cols as number, rows: rows as number };
}

/** ResizeTTY, tried again while the command is not on its terminal yet (FAILED_PRECONDITION before it has ended). */
async function resize(live: LiveProcess, size: { cols: number; rows: number }, over: () => boolean): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await live.resize(size.cols, size.rows);
    } catch (err) {
      const early = err instanceof SandboxGrpcError && err.code === GRPC_FAILED_PRECONDITION && !over();
      if (!early || attempt >= RESIZE_TRIES) throw err;
      await new Promise((resolve) => setTimeout(resolve, RESIZE_RETRY_MS));
    }
  }
}
