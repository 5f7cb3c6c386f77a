/**
 * `sandbox.commands` in E2B's shape, over the SDK's `run` and the runtime's process API: a
 * foreground run resolves with `{ stdout, stderr, exitCode }` and throws a CommandExitError on a
 * non-zero exit; `background: true` (and `timeoutMs: 0`, no limit, or `stdin: true`) starts a
 * process and gives a CommandHandle. E2B names processes by pid; the runtime by its own id, so
 * `connect`, `kill` and `sendStdin` find the process with that pid among the runtime's processes
 * (`processes.list()`), and act on it through a handle of this object's, or one attached for it.
 */
import { SandboxProcessError } from '../errors.js';
import type { CommandHandle as CoreCommandHandle, ProcessInfo as CoreProcessInfo } from '../processes.js';
import type { SandboxHandle } from '../sandbox.js';
import { CommandResult, InvalidArgumentError, NotFoundError, NotSupportedError, commandResult, e2bCall, settle } from './errors.js';
import { Workspace } from './workspace.js';

/** Options of every call; `requestTimeoutMs` is accepted for E2B's sake (the client's requestTimeoutMs applies). */
export interface CommandRequestOpts {
  readonly requestTimeoutMs?: number;
}

/** `commands.run` options, as E2B names them. */
export interface CommandStartOpts extends CommandRequestOpts {
  /** Start the command and resolve at once with a CommandHandle. @default false */
  readonly background?: boolean;
  /** Working directory: under the workspace (`workspacePath`), or relative to it. @default the workspace */
  readonly cwd?: string;
  /** Environment variables, over the sandbox's `envs`. */
  readonly envs?: Readonly<Record<string, string>>;
  /** The command's standard output as it writes it, a piece per call. */
  readonly onStdout?: (data: string) => void | Promise<void>;
  readonly onStderr?: (data: string) => void | Promise<void>;
  /** Keep the command's stdin open for `sendStdin` (else it is /dev/null). @default false */
  readonly stdin?: boolean;
  /** The command's time limit; 0 for none. A command that runs out is killed and a TimeoutError thrown. @default 60000 */
  readonly timeoutMs?: number;
  /** Only the sandbox's own user (`"user"`, or unset): commands run as the runtime's uid. */
  readonly user?: string;
  /** A label of yours, shown by `commands.list()`. */
  readonly tag?: string;
}

export interface CommandConnectOpts extends CommandRequestOpts {
  readonly onStdout?: (data: string) => void | Promise<void>;
  readonly onStderr?: (data: string) => void | Promise<void>;
  /** Accepted for E2B's sake; the process keeps the limit it was started with. */
  readonly timeoutMs?: number;
}

/** A running command, as E2B's `commands.list()` describes it. */
export interface ProcessInfo {
  readonly pid: number;
  readonly tag?: string;
  /** `/bin/sh`: commands run as `/bin/sh -c <command>`. */
  readonly cmd: string;
  readonly args: string[];
  /** Always `{}`: the runtime does not report a process's environment. */
  readonly envs: Record<string, string>;
  readonly cwd?: string;
}

/** What Commands and Filesystem share of their Sandbox. */
export interface FacadeContext {
  readonly handle: SandboxHandle;
  readonly workspace: Workspace;
  /** The sandbox's `envs`, under every command's own. */
  readonly envs: Readonly<Record<string, string>>;
}

/** E2B's default command time limit. */
export const DEFAULT_COMMAND_TIMEOUT_MS = 60_000;

/** What a CommandHandle drives: a runtime process, or a PTY session. */
export interface CommandBackend {
  readonly pid: number;
  /** The result once it has ended (`timedOut`: its timeoutMs ran out). */
  wait(): Promise<{ readonly result: CommandResult; readonly timedOut: boolean }>;
  /** true when it was running and is now killed; false when it had ended. */
  kill(): Promise<boolean>;
  sendStdin(data: string | Uint8Array): Promise<void>;
  closeStdin(): Promise<void>;
  disconnect(): void;
}

/** A command's output as it comes: kept for the handle's getters, and passed on to the caller's callbacks. */
export class OutputSink {
  public stdout = '';
  public stderr = '';
  public readonly callbacks: { onStdout: (data: string) => void; onStderr: (data: string) => void };

  public constructor(onStdout?: (data: string) => void | Promise<void>, onStderr?: (data: string) => void | Promise<void>) {
    this.callbacks = {
      onStdout: (data) => {
        this.stdout += data;
        void onStdout?.(data);
      },
      onStderr: (data) => {
        this.stderr += data;
        void onStderr?.(data);
      },
    };
  }
}

/**
 * A command started with `background: true`, `commands.connect(pid)` or `pty.create()`: its pid,
 * its output so far, and wait, kill, stdin and disconnect.
 */
export class CommandHandle {
  private ended?: CommandResult;
  private readonly done: Promise<{ readonly result: CommandResult; readonly timedOut: boolean }>;

  /** @internal made by Commands and Pty */
  public constructor(private readonly backend: CommandBackend, private readonly output: OutputSink, private readonly sandbox: string) {
    this.done = backend.wait();
    this.done.then(({ result }) => (this.ended = result), () => undefined);
  }

  public get pid(): number {
    return this.backend.pid;
  }

  /** The standard output received so far. */
  public get stdout(): string {
    return this.output.stdout;
  }

  public get stderr(): string {
    return this.output.stderr;
  }

  /** The exit code once the command has ended; undefined while it runs. */
  public get exitCode(): number | undefined {
    return this.ended?.exitCode;
  }

  public get error(): string | undefined {
    return this.ended?.error;
  }

  /** Resolves when the command has ended: its result, or a CommandExitError (non-zero exit) or TimeoutError. */
  public async wait(): Promise<CommandResult> {
    const { result, timedOut } = await e2bCall(() => this.done);
    return settle(result, timedOut, 'wait', this.sandbox);
  }

  /** Kills the command (SIGKILL to its process group): true, or false when it had ended. */
  public kill(): Promise<boolean> {
    return e2bCall(() => this.backend.kill());
  }

  /** Writes to its stdin (started with `stdin: true`). */
  public sendStdin(data: string | Uint8Array): Promise<void> {
    return e2bCall(() => this.backend.sendStdin(data));
  }

  /** Closes its stdin (end of input). */
  public closeStdin(): Promise<void> {
    return e2bCall(() => this.backend.closeStdin());
  }

  /** Stops receiving its output (`wait()` rejects); the command runs on. */
  public async disconnect(): Promise<void> {
    this.backend.disconnect();
  }
}

export class Commands {
  /** Handles this object made, by pid: `kill`, `sendStdin` and `closeStdin` use them instead of attaching. */
  private readonly own = new Map<number, CoreCommandHandle>();

  public constructor(private readonly ctx: FacadeContext) {}

  /** Starts a command in the background. */
  public run(cmd: string, opts: CommandStartOpts & { readonly background: true }): Promise<CommandHandle>;
  /** Runs a command to its end: its result, or a CommandExitError on a non-zero exit. */
  public run(cmd: string, opts?: CommandStartOpts & { readonly background?: false }): Promise<CommandResult>;
  public run(cmd: string, opts?: CommandStartOpts): Promise<CommandResult | CommandHandle>;
  public run(cmd: string, opts: CommandStartOpts = {}): Promise<CommandResult | CommandHandle> {
    return e2bCall(async () => {
      checkUser(opts.user, 'commands.run');
      const timeoutMs = opts.timeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
      if (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs < 0) {
        throw new InvalidArgumentError(`timeoutMs: must be a number of milliseconds, or 0 for no limit, got ${timeoutMs}`);
      }
      const cwd = this.ctx.workspace.relative(opts.cwd ?? '', 'cwd');
      const output = new OutputSink(opts.onStdout, opts.onStderr);
      const common = { env: { ...this.ctx.envs, ...opts.envs }, ...(cwd === '' ? {} : { cwd }), ...output.callbacks };
      if (opts.background !== true && opts.stdin !== true && timeoutMs > 0 && opts.tag === undefined) {
        const run = await this.ctx.handle.run(cmd, { ...common, timeoutMs });
        return settle(commandResult(run), run.timedOut, 'commands.run', this.ctx.handle.name);
      }
      const core = await this.ctx.handle.run(cmd, {
        ...common,
        background: true,
        ...(timeoutMs > 0 ? { timeoutMs } : {}),
        ...(opts.stdin === true ? { openStdin: true } : {}),
        ...(opts.tag === undefined ? {} : { tag: opts.tag }),
      });
      const handle = this.track(core, output);
      return opts.background === true ? handle : handle.wait();
    });
  }

  /** The running commands. */
  public list(_opts?: CommandRequestOpts): Promise<ProcessInfo[]> {
    return e2bCall(async () => (await this.ctx.handle.processes.list()).filter((p) => p.status === 'running').map(processInfo));
  }

  /** Follows a command started elsewhere (another Sandbox object, another process): its output kept so far is replayed first. */
  public connect(pid: number, opts: CommandConnectOpts = {}): Promise<CommandHandle> {
    return e2bCall(async () => {
      const info = await this.find(pid, 'commands.connect');
      if (!info) throw new NotFoundError(`commands.connect: no command with pid ${pid} in sandbox ${this.ctx.handle.name}`, { sandbox: this.ctx.handle.name });
      const output = new OutputSink(opts.onStdout, opts.onStderr);
      return this.track(await this.ctx.handle.processes.attach(info.id, output.callbacks), output);
    });
  }

  /** Kills the command with this pid (SIGKILL to its process group): true, or false when no such command runs. */
  public kill(pid: number, _opts?: CommandRequestOpts): Promise<boolean> {
    return e2bCall(async () => {
      const info = await this.find(pid, 'commands.kill');
      if (!info || info.status !== 'running') return false;
      await this.using(info, killAndWait);
      return true;
    });
  }

  /** Writes to the stdin of the command with this pid (started with `stdin: true`). */
  public sendStdin(pid: number, data: string | Uint8Array, _opts?: CommandRequestOpts): Promise<void> {
    return this.withRunning(pid, 'commands.sendStdin', (core) => core.sendStdin(data));
  }

  /** Closes the stdin of the command with this pid. */
  public closeStdin(pid: number, _opts?: CommandRequestOpts): Promise<void> {
    return this.withRunning(pid, 'commands.closeStdin', (core) => core.closeStdin());
  }

  private track(core: CoreCommandHandle, output: OutputSink): CommandHandle {
    this.own.set(core.pid, core);
    const forget = () => {
      if (this.own.get(core.pid) === core) this.own.delete(core.pid);
    };
    const handles = this.ctx.handle.processes;
    const backend: CommandBackend = {
      pid: core.pid,
      wait: () => core.wait().then((run) => ({ result: commandResult(run), timedOut: run.timedOut })).finally(forget),
      kill: async () => {
        try {
          if ((await handles.get(core.id)).status !== 'running') return false;
        } catch (err) {
          if (err instanceof SandboxProcessError) return false;
          throw err;
        }
        await killAndWait(core);
        return true;
      },
      sendStdin: (data) => core.sendStdin(data),
      closeStdin: () => core.closeStdin(),
      disconnect: () => {
        forget();
        core.disconnect();
      },
    };
    return new CommandHandle(backend, output, this.ctx.handle.name);
  }

  private withRunning(pid: number, method: string, act: (core: CoreCommandHandle) => Promise<void>): Promise<void> {
    return e2bCall(async () => {
      const info = await this.find(pid, method);
      if (!info || info.status !== 'running') throw new NotFoundError(`${method}: no running command with pid ${pid} in sandbox ${this.ctx.handle.name}`, { sandbox: this.ctx.handle.name });
      await this.using(info, act);
    });
  }

  /** The runtime's process with this pid (a running one first), if it still keeps one. */
  private async find(pid: number, method: string): Promise<CoreProcessInfo | undefined> {
    if (!Number.isSafeInteger(pid) || pid <= 0) throw new InvalidArgumentError(`${method}: pid must be a process id (a positive whole number, CommandHandle.pid), got ${pid}`);
    const matching = (await this.ctx.handle.processes.list()).filter((p) => p.pid === pid);
    return matching.find((p) => p.status === 'running') ?? matching[0];
  }

  /** `act` on the process: through this object's handle of it, else a handle attached for the call. */
  private async using<T>(info: CoreProcessInfo, act: (core: CoreCommandHandle) => Promise<T>): Promise<T> {
    const mine = this.own.get(info.pid);
    if (mine && mine.id === info.id) return act(mine);
    const attached = await this.ctx.handle.processes.attach(info.id);
    try {
      return await act(attached);
    } finally {
      attached.disconnect();
    }
  }
}

/** How long `kill` waits for the killed process to be reported ended (SIGKILL ends it at once; its exit is then seen). */
const KILL_WAIT_MS = 10_000;

/** SIGKILL to the process's group, then its end, so that what comes next (a list, another kill) sees it ended. */
async function killAndWait(core: CoreCommandHandle): Promise<void> {
  await core.kill('SIGKILL');
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, KILL_WAIT_MS)));
  await Promise.race([core.wait().then(() => undefined, () => undefined), bound]);
  clearTimeout(timer);
}

function processInfo(p: CoreProcessInfo): ProcessInfo {
  return { pid: p.pid, ...(p.tag === undefined ? {} : { tag: p.tag }), cmd: '/bin/sh', args: ['-c', p.command], envs: {} };
}

/** E2B's `user` option: only the sandbox's own user; the runtime cannot switch uid. */
export function checkUser(user: string | undefined, method: string): void {
  if (user === undefined || user === 'user') return;
  throw new NotSupportedError(`${method} with user "${user}"`, 'commands and files run as the runtime\'s own uid (the template\'s security.runAsUser); leave user unset');
}
