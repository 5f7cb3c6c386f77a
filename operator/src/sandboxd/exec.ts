/**
 * Runs one `/execute` command. Like upstream's python runtime the command string is split with
 * POSIX shell-like rules (Python's `shlex.split`) and run without a shell, as the leader of a new
 * process group; `shell: true` runs it with `/bin/sh -c` instead. A timeout kills the whole process
 * group and every descendant that left it (SIGKILL; its cgroup where the runtime may make one, see
 * ./cgroup, and the /proc scan of ./descendants) and reports `timed_out` with
 * exit code 124, at once even if something the kill could not reach still holds the output pipes;
 * a signal death reports the negative signal number. Output beyond the cap is dropped and a marker
 * says how much.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { constants as osConstants } from 'node:os';
import type { Writable } from 'node:stream';
import type { CommandCgroup, CommandCgroups } from './cgroup';
import { killCommand, killGroup, newCommandId, withCommandId } from './descendants';

export { killGroup };

/** How long output may still arrive once a command was killed, before the pipes are closed on our side. */
export const PIPES_AFTER_KILL_MS = 500;

export interface ExecRequest {
  readonly command: string;
  readonly shell: boolean;
  readonly cwd: string;
  readonly env?: NodeJS.ProcessEnv;
  readonly timeoutMs: number;
  /** Bytes kept per stream (stdout, stderr). */
  readonly maxOutputBytes: number;
  /** Where the command gets a cgroup of its own, when the runtime may make them. */
  readonly cgroups?: CommandCgroups;
}

export interface ExecResult {
  stdout: string;
  stderr: string;
  exit_code: number;
  timed_out: boolean;
}

/** The running commands, so a drain can wait for them and kill what is left. */
export class ProcessGroups {
  private readonly running = new Map<number, { done: Promise<void>; kill: () => void }>();
  private readonly killed = new Set<number>();

  /** `kill` ends the command and everything it started (default: SIGKILL to its process group). */
  public add(child: ChildProcess, done: Promise<void>, kill?: () => void): void {
    if (child.pid === undefined) return;
    const pid = child.pid;
    this.running.set(pid, { done, kill: kill ?? (() => killGroup(pid)) });
    void done.finally(() => {
      this.running.delete(pid);
      this.killed.delete(pid);
    });
  }

  public get size(): number {
    return this.running.size;
  }

  /** Resolves once every command running now has finished. */
  public async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running.values()].map((r) => r.done));
  }

  /** Kills every running command. */
  public killAll(): void {
    for (const [pid, { kill }] of this.running) {
      this.killed.add(pid);
      kill();
    }
  }

  /** Whether killAll killed this group (read before the command's promise settles). */
  public wasKilled(pid: number | undefined): boolean {
    return pid !== undefined && this.killed.has(pid);
  }
}

/**
 * Bounds how many commands run at once (`/execute` and the gRPC service together): each holds a
 * slot from before it is spawned until it has ended, so a burst of requests cannot fork without
 * limit. Taken synchronously, so two requests can never both get the last slot.
 */
export class CommandSlots {
  private used = 0;

  public constructor(public readonly limit: number) {}

  public get running(): number {
    return this.used;
  }

  /** A function that gives the slot back (once), or undefined when every slot is taken. */
  public take(): (() => void) | undefined {
    if (this.used >= this.limit) return undefined;
    this.used++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.used--;
    };
  }

  /** Why a command was refused, for the 429 answer and the gRPC status. */
  public refusal(): string {
    return `${this.used} commands are running, as many as --max-concurrent-commands (${this.limit}) allows; retry once one has finished`;
  }
}

/** Python's `shlex.split` (POSIX mode, no comments): quotes, backslash escapes, whitespace. */
export function shlexSplit(input: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let i = 0;
  while (i < input.length) {
    const c = input[i];
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
      i++;
    } else if (c === '\\') {
      if (i + 1 >= input.length) throw new Error('No escaped character');
      word += input[i + 1];
      inWord = true;
      i += 2;
    } else if (c === "'") {
      const end = input.indexOf("'", i + 1);
      if (end < 0) throw new Error('No closing quotation');
      word += input.slice(i + 1, end);
      inWord = true;
      i = end + 1;
    } else if (c === '"') {
      i++;
      inWord = true;
      for (;;) {
        if (i >= input.length) throw new Error('No closing quotation');
        const d = input[i];
        if (d === '"') {
          i++;
          break;
        }
        if (d === '\\' && i + 1 < input.length && '\\"$`\n'.includes(input[i + 1])) {
          word += input[i + 1];
          i += 2;
        } else {
          word += d;
          i++;
        }
      }
    } else {
      word += c;
      inWord = true;
      i++;
    }
  }
  if (inWord) words.push(word);
  return words;
}

const SHELL_OPERATORS = new Set(['|', '||', '&&', '&', ';', '>', '>>', '<', '<<', '2>', '2>&1', '&>', '|&']);

/** The shell syntax in `argv` (operators as words, `$VAR`, `$(...)`, backticks), if any. */
export function shellSyntaxIn(argv: readonly string[]): string | undefined {
  for (const word of argv) {
    if (SHELL_OPERATORS.has(word)) return word;
    if (/^\d?>>?\S|^<\S/.test(word) && !word.startsWith('<<')) return word;
    if (/\$\(|`|\$\{|^\$[A-Za-z_]/.test(word)) return word;
  }
  return undefined;
}

/** Keeps the first `limit` bytes of a stream and counts the rest, which is dropped (reading goes on). */
export class Capture {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  private dropped = 0;
  public constructor(private readonly limit: number) {}

  public push(chunk: Buffer): void {
    const room = this.limit - this.kept;
    if (room > 0) {
      const part = chunk.length <= room ? chunk : chunk.subarray(0, room);
      this.chunks.push(part);
      this.kept += part.length;
    }
    this.dropped += Math.max(0, chunk.length - Math.max(0, room));
  }

  /** The kept bytes, then a marker line saying how many were dropped, if any. */
  public bytes(): Buffer {
    const kept = Buffer.concat(this.chunks);
    return this.dropped === 0 ? kept : Buffer.concat([kept, Buffer.from(`\n[output truncated: ${this.dropped} more bytes not shown]\n`)]);
  }

  public text(): string {
    return this.bytes().toString('utf8');
  }
}

/** `text`, then `note` on a line of its own. */
function joinLines(text: string, note: string): string {
  if (note === '') return text;
  return text === '' || text.endsWith('\n') ? `${text}${note}` : `${text}\n${note}`;
}

/** The answer of `/execute` for a command that could not be started. */
export function failure(message: string): ExecResult {
  return { stdout: '', stderr: `Failed to execute command: ${message}`, exit_code: 1, timed_out: false };
}

/** What to spawn for a command: `/bin/sh -c` in shell mode, else its shlex words (with a hint when they hold shell syntax). */
export type CommandLine = { readonly file: string; readonly args: readonly string[]; readonly hint: string } | { readonly error: string };

export function commandLine(command: string, shell: boolean): CommandLine {
  if (shell) return { file: '/bin/sh', args: ['-c', command], hint: '' };
  let argv: string[];
  try {
    argv = shlexSplit(command);
  } catch (err) {
    return { error: (err as Error).message };
  }
  if (argv.length === 0) return { error: 'empty command' };
  const syntax = shellSyntaxIn(argv);
  const hint = syntax === undefined ? ''
    : `note: the command ran without a shell (argv mode), so "${syntax}" was passed as a plain argument; send "shell": true to run it with /bin/sh -c\n`;
  const [file, ...args] = argv;
  return { file, args, hint };
}

/** How a command to start is described: `ExecRequest` without the output cap, the time limit optional. */
export interface CommandSpec {
  readonly command: string;
  readonly shell: boolean;
  readonly cwd: string;
  readonly env?: NodeJS.ProcessEnv;
  /** Undefined: no limit. */
  readonly timeoutMs?: number;
  readonly cgroups?: CommandCgroups;
  /** Give the command a stdin pipe (`Command.stdin`); default /dev/null. */
  readonly stdin?: boolean;
}

/** Where a running command's output goes, chunk by chunk as it is read. */
export interface CommandOutput {
  stdout(chunk: Buffer): void;
  stderr(chunk: Buffer): void;
}

/** How a command ended. */
export type CommandEnd =
  | {
    readonly failed?: undefined;
    /** As /execute reports it: 124 after the timeout, the negative signal number after a signal death. */
    readonly exitCode: number;
    readonly timedOut: boolean;
    /** The signal that ended it, if one did. */
    readonly signal: NodeJS.Signals | null;
    /** What closes stderr (see `stderrTail`): the timeout message, or the argv-mode hint and the shutdown note. */
    readonly note: string;
  }
  /** It could not be started after all (the executable is missing): the message says why. */
  | { readonly failed: string };

/** The text that ends stderr once the command has ended: the timeout message as is, notes on a line of their own. */
export function stderrTail(end: CommandEnd, stderrSoFar: { readonly empty: boolean; readonly endsWithNewline: boolean }): string {
  if (end.failed !== undefined || end.note === '') return '';
  if (end.timedOut || stderrSoFar.empty || stderrSoFar.endsWithNewline) return end.note;
  return `\n${end.note}`;
}

/**
 * One running command: the leader of a new process group (a cgroup of its own where the runtime may
 * make one), registered with the drain's ProcessGroups, killed with everything it started at its
 * time limit. Its output goes to `output` as it is read; `done` settles once it has exited and its
 * output is closed (never rejects).
 */
export class Command {
  /**
   * Starts the command, or says why it could not be (a shlex error, an empty command, a spawn()
   * that threw). A missing executable shows later, as `started` resolving with the failure.
   */
  public static start(spec: CommandSpec, output: CommandOutput, groups?: ProcessGroups): Command | { readonly error: string } {
    const line = commandLine(spec.command, spec.shell);
    if ('error' in line) return line;
    const id = newCommandId();
    const start = () => spawn(line.file, line.args, {
      cwd: spec.cwd,
      env: withCommandId(spec.env ?? process.env, id),
      detached: true,
      stdio: [spec.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    });
    try {
      const { child, cgroup } = spec.cgroups ? spec.cgroups.spawnIn(id, start) : { child: start(), cgroup: undefined };
      return new Command(spec, line.hint, id, child, cgroup, output, groups);
    } catch (err) {
      return { error: joinLines((err as Error).message, line.hint) };
    }
  }

  /** Resolves once the process runs (undefined), or with why it could not start. */
  public readonly started: Promise<string | undefined>;
  public readonly done: Promise<CommandEnd>;
  private timedOut = false;
  private killing?: Promise<void>;
  private cutOff?: NodeJS.Timeout;

  private constructor(
    private readonly spec: CommandSpec,
    private readonly hint: string,
    private readonly id: string,
    public readonly child: ChildProcess,
    private readonly cgroup: CommandCgroup | undefined,
    output: CommandOutput,
    groups?: ProcessGroups,
  ) {
    child.stdout?.on('data', (chunk: Buffer) => output.stdout(chunk));
    child.stderr?.on('data', (chunk: Buffer) => output.stderr(chunk));
    child.stdin?.on('error', () => undefined);
    this.started = new Promise((resolve) => {
      child.once('spawn', () => resolve(undefined));
      child.once('error', (err) => resolve(joinLines(err.message, hint)));
    });
    let settle!: () => void;
    const settled = new Promise<void>((r) => (settle = r));
    this.done = new Promise<CommandEnd>((resolve) => {
      const timer = spec.timeoutMs === undefined ? undefined : setTimeout(() => {
        this.timedOut = true;
        this.kill();
      }, Math.max(1, Math.min(spec.timeoutMs, 2 ** 31 - 1)));
      child.on('error', (err) => {
        clearTimeout(timer);
        clearTimeout(this.cutOff);
        settle();
        resolve({ failed: joinLines(err.message, hint) });
      });
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        clearTimeout(this.cutOff);
        // After a kill, answer once the whole tree is gone, not merely the pipes.
        void (this.killing ?? Promise.resolve()).then(() => {
          void cgroup?.remove();
          const shutDown = groups?.wasKilled(child.pid) ?? false;
          settle();
          resolve(this.ending(code, signal, shutDown));
        });
      });
    });
    groups?.add(child, settled, () => this.kill());
  }

  /** The process (group leader) id; undefined when it never started. */
  public get pid(): number | undefined {
    return this.child.pid;
  }

  /** The command's stdin, when it was given a pipe. */
  public get stdin(): Writable | null {
    return this.child.stdin;
  }

  /** SIGKILL to the command and every process it started; whatever still holds the pipes shortly after cannot keep it running. */
  public kill(): void {
    const pid = this.child.pid;
    if (pid === undefined || this.killing !== undefined) return;
    this.cutOff = setTimeout(() => {
      this.child.stdout?.destroy();
      this.child.stderr?.destroy();
    }, PIPES_AFTER_KILL_MS);
    this.killing = Promise.all([this.cgroup?.kill(), killCommand(pid, this.id)]).then(() => undefined);
  }

  /** Sends `signal` to the command's process group; false when there is none any more. */
  public signal(signal: NodeJS.Signals): boolean {
    if (this.child.pid === undefined) return false;
    try {
      process.kill(-this.child.pid, signal);
      return true;
    } catch {
      return false;
    }
  }

  private ending(code: number | null, signal: NodeJS.Signals | null, shutDown: boolean): CommandEnd {
    if (this.timedOut) {
      const seconds = this.spec.timeoutMs! / 1000;
      return { exitCode: 124, timedOut: true, signal, note: `Command timed out after ${seconds} seconds; it and every process it started were killed\n` };
    }
    const note = shutDown ? joinLines(this.hint, 'the runtime is shutting down: the command was killed when its grace period ended\n') : this.hint;
    return { exitCode: code ?? (signal ? -(osConstants.signals[signal] ?? 1) : 1), timedOut: false, signal, note };
  }
}

/** Runs the command; never rejects (every failure is a result, as upstream answers it with 200). */
export async function execute(request: ExecRequest, groups?: ProcessGroups): Promise<ExecResult> {
  const stdout = new Capture(request.maxOutputBytes);
  const stderr = new Capture(request.maxOutputBytes);
  const command = Command.start(request, { stdout: (c) => stdout.push(c), stderr: (c) => stderr.push(c) }, groups);
  if ('error' in command) return failure(command.error);
  return resultOf(await command.done, stdout, stderr);
}

/** The JSON answer of `/execute` for a command that ended as `end`, with its captured output. */
export function resultOf(end: CommandEnd, stdout: Capture, stderr: Capture): ExecResult {
  if (end.failed !== undefined) return failure(end.failed);
  const err = stderr.text();
  return {
    stdout: stdout.text(),
    stderr: err + stderrTail(end, { empty: err === '', endsWithNewline: err.endsWith('\n') }),
    exit_code: end.exitCode,
    timed_out: end.timedOut,
  };
}
