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

function failure(message: string): ExecResult {
  return { stdout: '', stderr: `Failed to execute command: ${message}`, exit_code: 1, timed_out: false };
}

/** Runs the command; never rejects (every failure is a result, as upstream answers it with 200). */
export async function execute(request: ExecRequest, groups?: ProcessGroups): Promise<ExecResult> {
  let file: string;
  let args: string[];
  let hint = '';
  if (request.shell) {
    file = '/bin/sh';
    args = ['-c', request.command];
  } else {
    let argv: string[];
    try {
      argv = shlexSplit(request.command);
    } catch (err) {
      return failure((err as Error).message);
    }
    if (argv.length === 0) return failure('empty command');
    const syntax = shellSyntaxIn(argv);
    if (syntax !== undefined) {
      hint = `note: the command ran without a shell (argv mode), so "${syntax}" was passed as a plain argument; send "shell": true to run it with /bin/sh -c\n`;
    }
    [file, ...args] = argv;
  }

  return new Promise<ExecResult>((resolve) => {
    const id = newCommandId();
    const start = () => spawn(file, args, {
      cwd: request.cwd,
      env: withCommandId(request.env ?? process.env, id),
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let child: ChildProcess;
    let cgroup: CommandCgroup | undefined;
    try {
      ({ child, cgroup } = request.cgroups ? request.cgroups.spawnIn(id, start) : { child: start() });
    } catch (err) {
      resolve(failure(joinLines((err as Error).message, hint)));
      return;
    }
    const stdout = new Capture(request.maxOutputBytes);
    const stderr = new Capture(request.maxOutputBytes);
    child.stdout?.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk));
    let timedOut = false;
    let settle!: () => void;
    const done = new Promise<void>((r) => (settle = r));
    let cutOff: NodeJS.Timeout | undefined;
    let killing: Promise<void> | undefined;
    // Kills the command's tree; whatever still holds the pipes shortly after cannot keep the answer.
    const kill = () => {
      if (child.pid === undefined || killing !== undefined) return;
      cutOff = setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
      }, PIPES_AFTER_KILL_MS);
      killing = Promise.all([cgroup?.kill(), killCommand(child.pid, id)]).then(() => undefined);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, Math.max(1, Math.min(request.timeoutMs, 2 ** 31 - 1)));
    groups?.add(child, done, kill);
    child.on('error', (err) => {
      clearTimeout(timer);
      clearTimeout(cutOff);
      settle();
      resolve(failure(joinLines(err.message, hint)));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      clearTimeout(cutOff);
      // After a kill, answer once the whole tree is gone, not merely the pipes.
      void (killing ?? Promise.resolve()).then(() => finish(code, signal));
    });
    const finish = (code: number | null, signal: NodeJS.Signals | null) => {
      void cgroup?.remove();
      const shutDown = groups?.wasKilled(child.pid) ?? false;
      settle();
      if (shutDown) hint = joinLines(hint, 'the runtime is shutting down: the command was killed when its grace period ended\n');
      if (timedOut) {
        const seconds = request.timeoutMs / 1000;
        resolve({
          stdout: stdout.text(),
          stderr: `${stderr.text()}Command timed out after ${seconds} seconds; it and every process it started were killed\n`,
          exit_code: 124,
          timed_out: true,
        });
        return;
      }
      const exitCode = code ?? (signal ? -(osConstants.signals[signal] ?? 1) : 1);
      resolve({ stdout: stdout.text(), stderr: joinLines(stderr.text(), hint), exit_code: exitCode, timed_out: false });
    };
  });
}
