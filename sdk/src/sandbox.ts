/**
 * The handle an agent gets from `client.claim()`: run commands, move files, extend the claim's
 * lifetime, suspend and resume the Sandbox, and let go of it, either keeping the claim
 * (`disconnect()`) or deleting it (`close()`, also what `await using` does). SandboxHandle is the
 * interface, so tests of agent code can pass a fake. `run` streams output with this project's
 * runtime and runs processes in the background (./processes, docs/runtime-processes.md).
 */
import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import { ClaimObject } from './claim-wait.js';
import { Duration, durationMs, rfc3339Seconds } from './duration.js';
import { SandboxApiError, SandboxConfigError, SandboxError, SandboxTimeoutError } from './errors.js';
import { RuntimeFiles, SandboxFiles } from './files.js';
import { KubeApi } from './kube.js';
import { ProcessClient } from './process-client.js';
import { BackgroundRunOptions, CommandHandle, RuntimeProcesses, SandboxProcesses, runCommand } from './processes.js';
import { PtyAccess, RuntimePty, SandboxPty } from './pty.js';
import { RuntimeApi } from './runtime-api.js';
import { Tracing } from './tracing.js';
import { follow } from './watch-object.js';
import { CLAIMS, CONDITION_READY, CONDITION_SUSPENDED, OperatingMode, SANDBOXES } from './wire.js';

export interface RunOptions {
  /** Run through `/bin/sh -c` (pipes, `&&`, variables). `false` splits the command into argv and runs it without a shell. @default true */
  readonly shell?: boolean;
  /** The command's time limit; when it runs out its whole process group is killed and `timedOut` is true. @default 60000 */
  readonly timeoutMs?: number;
  /** Extra environment variables for the command. */
  readonly env?: Readonly<Record<string, string>>;
  /** Working directory, relative to the workspace. @default the workspace */
  readonly cwd?: string;
  /** Standard input for the command (needs `shell: true`). */
  readonly stdin?: string | Uint8Array;
  /**
   * Called with the command's standard output as it writes it, once per piece (never a UTF-8
   * character split), with this project's runtime (and over gRPC with grpcPort). With upstream's
   * runtime, which cannot stream, once with all of it when the command has finished.
   */
  readonly onStdout?: (chunk: string) => void;
  /** Called with the command's standard error (as onStdout). */
  readonly onStderr?: (chunk: string) => void;
  /** Stops waiting for the result. The command itself runs on until it ends or its timeoutMs. */
  readonly signal?: AbortSignal;
  /**
   * Send again after a connection error or 502/503/504 before the command started. Only for
   * commands that are safe to run twice. Once it has started, a lost stream is followed again
   * instead (with this project's runtime), whatever this says. @default false
   */
  readonly retry?: boolean;
  /**
   * How much of each of stdout and stderr the result keeps (its head; the callbacks get it all);
   * more sets `truncated`. With this project's runtime (upstream's JSON answer has its own cap). @default 4 MiB
   */
  readonly maxOutputBytes?: number;
  /** `true` starts the command in the background and returns a CommandHandle (see BackgroundRunOptions; a flag known only at run time: RunOrBackgroundOptions). */
  readonly background?: false;
}

/**
 * `run(command, { background: flag })` with a flag known only at run time: the options `run` reads
 * either way (not `retry`, which only a run to the end reads, nor `openStdin` and `tag`, which only
 * the background does). The result is a CommandHandle when `background` is true, else the RunResult;
 * `'wait' in result` tells them apart.
 */
export interface RunOrBackgroundOptions extends Omit<RunOptions, 'background' | 'retry'> {
  /**
   * `true`: start the command in the background and resolve with its CommandHandle (timeoutMs then
   * defaults to none, as with BackgroundRunOptions); `false`: run it to its end and resolve with its RunResult.
   */
  readonly background: boolean;
}

export interface RunResult {
  readonly stdout: string;
  readonly stderr: string;
  /** The exit code; 124 after a timeout; a negative signal number when a signal ended it. */
  readonly exitCode: number;
  readonly timedOut: boolean;
  /** True when output is missing from stdout/stderr: over `maxOutputBytes`, or no longer kept by the runtime when followed again (a gap). */
  readonly truncated?: boolean;
}

export interface WaitOptions {
  /** @default 120000 */
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
}

/** What agent code uses; `Sandbox` implements it, and tests may fake it. */
export interface SandboxHandle extends AsyncDisposable {
  /** The Sandbox's name (what the router routes by). */
  readonly name: string;
  /** The SandboxClaim's name. */
  readonly claim: string;
  readonly namespace: string;
  /** When the claim expires (its `ttl`), as last read or set by this handle; undefined: never. */
  readonly expiresAt: Date | undefined;
  readonly files: SandboxFiles;
  /** Interactive terminal sessions (needs the runtime's gRPC ProcessService). */
  readonly pty: SandboxPty;
  /** The runtime's processes: list them, attach to one again (needs this project's runtime). */
  readonly processes: SandboxProcesses;
  /** Starts the command in the background: the handle follows its output, waits for it, kills it, writes its stdin. */
  run(command: string, options: BackgroundRunOptions): Promise<CommandHandle>;
  /** Runs the command to its end. */
  run(command: string, options?: RunOptions): Promise<RunResult>;
  /** `background` decided at run time: a CommandHandle when it is true, else the RunResult. */
  run(command: string, options: RunOrBackgroundOptions): Promise<RunResult | CommandHandle>;
  /**
   * Moves the claim's expiry to now + `ttl` (never earlier than it is); resolves with the new expiry.
   * A claim without a ttl never expires: it is left so, and the call resolves with undefined.
   */
  extendTtl(ttl: Duration): Promise<Date | undefined>;
  /** Stops the Sandbox's Pod (files outside volumes are lost) and waits until it is suspended. */
  suspend(options?: WaitOptions): Promise<void>;
  /** Starts the Pod again and waits until the Sandbox is Ready. */
  resume(options?: WaitOptions): Promise<void>;
  /** Lets go of the handle and keeps the claim (reconnect with `client.connect`). */
  disconnect(): Promise<void>;
  /** Deletes the claim (its Sandbox goes with it) and lets go of the handle. Idempotent. */
  close(): Promise<void>;
}

/** What the client hands a Sandbox when it makes one. */
export interface SandboxInit {
  readonly claim: ClaimObject;
  readonly sandbox: string;
  readonly kube: KubeApi;
  readonly runtime: RuntimeApi;
  /** sandboxd's ProcessService, when the client has a grpcPort: `run` streams over it. */
  readonly processes?: ProcessClient;
  /** How `pty` reaches sandboxd's ProcessService (absent: `pty.create` fails). */
  readonly pty?: PtyAccess;
  readonly tracing: Tracing;
  readonly requestTimeoutMs: number;
  /** Called once when the handle is let go (drops the claim from the signal cleanup). */
  readonly release: () => void;
}

const DEFAULT_RUN_TIMEOUT_MS = 60_000;
/** How much longer than the command the HTTP exchange may take. */
const RUN_MARGIN_MS = 10_000;
const DEFAULT_WAIT_MS = 120_000;
/** Tries of a conflicting (409) expiry update before giving up. */
const MAX_CONFLICT_TRIES = 10;

export class Sandbox implements SandboxHandle {
  public readonly name: string;
  public readonly claim: string;
  public readonly namespace: string;
  public readonly files: SandboxFiles;
  public readonly pty: SandboxPty;
  public readonly processes: SandboxProcesses;
  private readonly background: RuntimeProcesses;
  private readonly uid?: string;
  private expiry?: Date;
  private state: 'open' | 'disconnected' | 'closed' = 'open';

  public constructor(private readonly init: SandboxInit) {
    this.name = init.sandbox;
    this.claim = init.claim.metadata.name;
    this.namespace = init.claim.metadata.namespace ?? 'default';
    this.uid = init.claim.metadata.uid;
    const shutdownTime = Date.parse(init.claim.spec.lifecycle?.shutdownTime ?? '');
    this.expiry = Number.isFinite(shutdownTime) ? new Date(shutdownTime) : undefined;
    this.files = new RuntimeFiles(init.runtime, init.requestTimeoutMs, () => this.ensureOpen());
    this.pty = new RuntimePty(init.sandbox, init.pty, () => this.ensureOpen());
    this.background = new RuntimeProcesses({
      runtime: init.runtime, sandbox: init.sandbox, requestTimeoutMs: init.requestTimeoutMs, ensureOpen: () => this.ensureOpen(),
    });
    this.processes = this.background;
  }

  public get expiresAt(): Date | undefined {
    return this.expiry;
  }

  public run(command: string, options: BackgroundRunOptions): Promise<CommandHandle>;
  public run(command: string, options?: RunOptions): Promise<RunResult>;
  public run(command: string, options: RunOrBackgroundOptions): Promise<RunResult | CommandHandle>;
  public async run(command: string, options: RunOptions | BackgroundRunOptions | RunOrBackgroundOptions = {}): Promise<RunResult | CommandHandle> {
    this.ensureOpen();
    if (typeof command !== 'string' || command.trim() === '') throw new SandboxConfigError('command', 'must be a non-empty string');
    for (const key of Object.keys(options.env ?? {})) {
      if (key === '' || key.includes('=') || key.includes('\0')) throw new SandboxConfigError(`env.${key}`, 'variable names must be non-empty and contain no "=" or NUL');
    }
    if (options.background === true) return this.background.start(command, { ...options, background: true });
    // A run to its end: RunOptions, or a RunOrBackgroundOptions (whose fields are RunOptions' own) with background false.
    const foreground: Omit<RunOptions, 'background'> = options;
    const shell = options.shell ?? true;
    const timeoutMs = options.timeoutMs ?? DEFAULT_RUN_TIMEOUT_MS;
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw new SandboxConfigError('timeoutMs', `must be a positive number of milliseconds, got ${timeoutMs}`);
    const max = foreground.maxOutputBytes;
    if (max !== undefined && !(Number.isSafeInteger(max) && max >= 0)) throw new SandboxConfigError('maxOutputBytes', `must be a whole number of bytes >= 0, got ${max}`);
    if (this.init.processes) return this.runStreaming(command, shell, timeoutMs, foreground);
    let full = command;
    let stdinFile: string | undefined;
    try {
      if (options.stdin !== undefined) {
        if (!shell) throw new SandboxConfigError('stdin', 'needs shell: true with the legacy runtime API (it is passed by redirecting from a file)');
        stdinFile = `.agent-sandbox/stdin-${randomBytes(8).toString('hex')}`;
        await this.files.write(stdinFile, typeof options.stdin === 'string' ? Buffer.from(options.stdin) : options.stdin, { signal: options.signal });
        const fromCwd = path.posix.relative(options.cwd ? path.posix.normalize(options.cwd.replace(/^\/+/, '')) : '.', stdinFile);
        full = `exec 0<'${fromCwd}' && rm -f '${fromCwd}' && { ${command}\n}`;
      }
      return await runCommand(this.background.context, {
        command: full,
        shell,
        timeout_seconds: timeoutMs / 1000,
        ...(options.env ? { env: options.env } : {}),
        ...(options.cwd ? { cwd: options.cwd } : {}),
      }, {
        deadlineMs: timeoutMs + RUN_MARGIN_MS,
        signal: options.signal,
        retry: foreground.retry === true,
        maxOutputBytes: foreground.maxOutputBytes,
        onStdout: options.onStdout,
        onStderr: options.onStderr,
      });
    } catch (err) {
      // The command removes the stdin file as it starts; when it did not get that far, remove it here (best effort).
      if (stdinFile !== undefined) await this.files.remove(stdinFile).catch(() => undefined);
      throw err;
    }
  }

  /** `run` over sandboxd's gRPC ProcessService (the client's grpcPort, an explicit opt-in): output streams as it is written. */
  private runStreaming(command: string, shell: boolean, timeoutMs: number, options: Omit<RunOptions, 'background'>): Promise<RunResult> {
    if (!shell) throw new SandboxConfigError('shell', 'argv mode (shell: false) is for the legacy API; with grpcPort set, commands run with /bin/sh -c');
    return this.init.tracing.span('sandbox.start', { 'sandbox.name': this.name }, () => this.init.processes!.run({
      command: ['/bin/sh', '-c', command],
      env: options.env,
      ...(options.cwd ? { cwd: options.cwd } : {}),
    }, {
      stdin: typeof options.stdin === 'string' ? Buffer.from(options.stdin) : options.stdin,
      timeoutMs,
      signal: options.signal,
      onStdout: options.onStdout,
      onStderr: options.onStderr,
    }));
  }

  public async extendTtl(ttl: Duration): Promise<Date | undefined> {
    this.ensureOpen();
    const wanted = Date.now() + durationMs(ttl, 'ttl');
    const claimPath = KubeApi.path(CLAIMS, this.namespace, this.claim);
    return this.init.tracing.span('sandbox.extendTtl', { 'sandbox.name': this.name }, async (span) => {
      for (let attempt = 1; ; attempt++) {
        span?.setAttribute('sandbox.conflicts', attempt - 1);
        const current: ClaimObject = await this.init.kube.get(claimPath);
        // No shutdownTime: the claim never expires; giving it one would shorten its life.
        if (!current.spec.lifecycle?.shutdownTime) return (this.expiry = undefined);
        const existing = Date.parse(current.spec.lifecycle.shutdownTime);
        if (Number.isFinite(existing) && existing >= wanted) return (this.expiry = new Date(existing));
        const shutdownTime = rfc3339Seconds(wanted);
        try {
          // The resourceVersion makes this a compare-and-swap: a write in between (the controller's
          // status updates included) answers 409, and the claim is read again.
          await this.init.kube.mergePatch(claimPath, {
            metadata: { resourceVersion: current.metadata.resourceVersion },
            spec: { lifecycle: { shutdownTime, ...(current.spec.lifecycle?.shutdownPolicy ? {} : { shutdownPolicy: 'Delete' }) } },
          });
          return (this.expiry = new Date(shutdownTime));
        } catch (err) {
          if (!(err instanceof SandboxApiError && err.status === 409) || attempt >= MAX_CONFLICT_TRIES) throw err;
        }
      }
    });
  }

  public async suspend(options: WaitOptions = {}): Promise<void> {
    await this.setMode(OperatingMode.SUSPENDED, (sandbox) => condition(sandbox, CONDITION_SUSPENDED)?.status === 'True', 'suspended', options);
  }

  public async resume(options: WaitOptions = {}): Promise<void> {
    await this.setMode(OperatingMode.RUNNING, (sandbox) => condition(sandbox, CONDITION_READY)?.status === 'True', 'Ready', options);
  }

  public async disconnect(): Promise<void> {
    if (this.state !== 'open') return;
    this.state = 'disconnected';
    this.init.release();
  }

  public async close(): Promise<void> {
    if (this.state === 'closed') return;
    const wasOpen = this.state === 'open';
    this.state = 'closed';
    if (wasOpen) this.init.release();
    await this.init.tracing.span('sandbox.close', { 'sandbox.name': this.name }, async () => {
      await this.init.kube.delete(KubeApi.path(CLAIMS, this.namespace, this.claim), this.uid);
    });
  }

  public async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  private async setMode(mode: string, done: (sandbox: any) => boolean, what: string, options: WaitOptions): Promise<void> {
    this.ensureOpen();
    const timeoutMs = options.timeoutMs ?? DEFAULT_WAIT_MS;
    await this.init.tracing.span(`sandbox.${mode === OperatingMode.SUSPENDED ? 'suspend' : 'resume'}`, { 'sandbox.name': this.name }, async () => {
      await this.init.kube.mergePatch(KubeApi.path(SANDBOXES, this.namespace, this.name), { spec: { operatingMode: mode } });
      await follow(this.init.kube, SANDBOXES, this.namespace, this.name, (sandbox, deleted) => {
        if (deleted) throw new SandboxError(`sandbox ${this.namespace}/${this.name} was deleted while waiting for it to be ${what}`, { sandbox: this.name });
        return done(sandbox) ? true : undefined;
      }, {
        timeoutMs,
        signal: options.signal,
        onTimeout: () => new SandboxTimeoutError(`sandbox ${this.namespace}/${this.name} was not ${what} within ${timeoutMs} ms`, { sandbox: this.name }),
      });
    });
  }

  private ensureOpen(): void {
    if (this.state !== 'open') throw new SandboxError(`sandbox ${this.namespace}/${this.name}: the handle is ${this.state === 'closed' ? 'closed' : 'disconnected'}`, { sandbox: this.name });
  }
}

function condition(object: any, type: string): { status?: string } | undefined {
  return (object?.status?.conditions ?? []).find((c: { type: string }) => c.type === type);
}
