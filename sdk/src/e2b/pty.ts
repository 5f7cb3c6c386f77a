/**
 * `sandbox.pty` in E2B's shape, over the SDK's PTY sessions (sandboxd's gRPC ProcessService: the
 * template needs `runtime.grpcPort`). E2B drives a session by pid; the SDK by its handle, so
 * `sendInput`, `resize` and `kill` reach the sessions this Sandbox object created (another
 * object's or process's sessions are a NotFoundError). The output arrives as bytes (the SDK's UTF-8
 * text, encoded again), and the session ends after `timeoutMs` (E2B's default, 60 s; 0 for none).
 */
import type { PtyHandle } from '../pty.js';
import { CommandBackend, CommandHandle, CommandRequestOpts, DEFAULT_COMMAND_TIMEOUT_MS, FacadeContext, OutputSink, checkUser } from './commands.js';
import { CommandResult, InvalidArgumentError, NotFoundError, NotSupportedError, e2bCall } from './errors.js';

export interface PtySize {
  readonly cols: number;
  readonly rows: number;
}

export interface PtyCreateOpts extends PtySize, CommandRequestOpts {
  /** The terminal's output. */
  readonly onData: (data: Uint8Array) => void | Promise<void>;
  /** Working directory: under the workspace (`workspacePath`), or relative to it. @default the workspace */
  readonly cwd?: string;
  /** Environment variables, over the sandbox's `envs` (and `TERM=xterm-256color`). */
  readonly envs?: Readonly<Record<string, string>>;
  /** The session's time limit; 0 for none. @default 60000 */
  readonly timeoutMs?: number;
  readonly user?: string;
}

export class Pty {
  private readonly sessions = new Map<number, PtyHandle>();

  public constructor(private readonly ctx: FacadeContext) {}

  /** Starts an interactive shell (`/bin/sh -i`) on a new terminal of `cols` x `rows`. */
  public create(opts: PtyCreateOpts): Promise<CommandHandle> {
    return e2bCall(async () => {
      checkUser(opts.user, 'pty.create');
      if (typeof opts?.onData !== 'function') throw new InvalidArgumentError('pty.create: onData must be a function (it gets the terminal\'s output as bytes)');
      const timeoutMs = opts.timeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
      if (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs < 0) {
        throw new InvalidArgumentError(`pty.create: timeoutMs must be a number of milliseconds, or 0 for no limit, got ${timeoutMs}`);
      }
      const cwd = this.ctx.workspace.relative(opts.cwd ?? '', 'cwd');
      const encoder = new TextEncoder();
      let attached = true;
      const pty = await this.ctx.handle.pty.create({
        cols: opts.cols,
        rows: opts.rows,
        env: { TERM: 'xterm-256color', ...this.ctx.envs, ...opts.envs },
        ...(cwd === '' ? {} : { cwd }),
        onData: (text) => {
          if (attached) void opts.onData(encoder.encode(text));
        },
      });
      this.sessions.set(pty.pid, pty);
      let timedOut = false;
      let running = true;
      const timer = timeoutMs > 0 ? setTimeout(() => {
        timedOut = true;
        pty.kill('SIGKILL').catch(() => undefined);
      }, timeoutMs) : undefined;
      const ended = pty.wait().finally(() => {
        running = false;
        clearTimeout(timer);
        if (this.sessions.get(pty.pid) === pty) this.sessions.delete(pty.pid);
      });
      const backend: CommandBackend = {
        pid: pty.pid,
        wait: () => ended.then(({ exitCode }) => ({ result: ptyResult(exitCode), timedOut })),
        kill: async () => {
          if (!running) return false;
          await pty.kill('SIGKILL');
          await ended.catch(() => undefined);
          return true;
        },
        sendStdin: (data) => pty.write(data),
        closeStdin: async () => {
          throw new NotSupportedError('closeStdin on a PTY', 'a terminal has no separate end of input: send Ctrl-D with pty.sendInput(pid, new Uint8Array([4]))');
        },
        disconnect: () => {
          attached = false;
        },
      };
      return new CommandHandle(backend, new OutputSink(), this.ctx.handle.name);
    });
  }

  /** Types `data` into the session's terminal. */
  public sendInput(pid: number, data: Uint8Array, _opts?: CommandRequestOpts): Promise<void> {
    return e2bCall(() => this.session(pid, 'pty.sendInput').write(data));
  }

  public resize(pid: number, size: PtySize, _opts?: CommandRequestOpts): Promise<void> {
    return e2bCall(() => this.session(pid, 'pty.resize').resize(size?.cols, size?.rows));
  }

  /** Kills the session (SIGKILL): true, or false when this object has no running session with that pid. */
  public kill(pid: number, _opts?: CommandRequestOpts): Promise<boolean> {
    return e2bCall(async () => {
      const pty = this.sessions.get(pid);
      if (!pty) return false;
      await pty.kill('SIGKILL');
      await pty.wait().catch(() => undefined);
      return true;
    });
  }

  private session(pid: number, method: string): PtyHandle {
    const pty = this.sessions.get(pid);
    if (!pty) {
      throw new NotFoundError(`${method}: no running PTY session with pid ${pid} made by this Sandbox object (sessions are reached through the object that created them)`, { sandbox: this.ctx.handle.name });
    }
    return pty;
  }
}

/** A session's end as E2B's CommandResult: its output went to onData; -1 means a signal ended it. */
function ptyResult(exitCode: number): CommandResult {
  if (exitCode === 0) return { exitCode, stdout: '', stderr: '' };
  return { exitCode, stdout: '', stderr: '', error: exitCode === -1 ? 'signal: killed' : `exit status ${exitCode}` };
}
