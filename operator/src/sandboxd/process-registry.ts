/**
 * The runtime's processes (the process API, ./process-api): every command started with
 * `POST /processes` (a background process) or streamed by `POST /execute` with
 * `Accept: application/x-ndjson`. Each has an id (`p-` and 16 hex digits) and its output as events
 * numbered from 1 (`seq`): stdout and stderr text, decoded per stream so no UTF-8 character is split
 * between events, and one `exit` event last. Events are kept for replay up to a byte bound per
 * process, the oldest dropped first (a replay that starts in dropped output learns which seqs it
 * missed); finished processes are kept for a while and up to a count, the oldest forgotten first.
 *
 * A process runs on whoever follows it or not: a client that goes away never kills it. Background
 * processes are bounded by their own count (`--max-background-processes`), not by the command slots.
 */
import { randomBytes } from 'node:crypto';
import { StringDecoder } from 'node:string_decoder';
import type { CommandCgroups } from './cgroup';
import { Command, type CommandEnd, type CommandSpec, type ProcessGroups, stderrTail } from './exec';

export type OutputEvent =
  | { readonly type: 'stdout' | 'stderr'; readonly seq: number; readonly data: string }
  | { readonly type: 'exit'; readonly seq: number; readonly exit_code: number; readonly timed_out: boolean; readonly signal: string | null };

export interface RetentionLimits {
  /** Output bytes kept per process for replay (each event counts 64 more); beyond it the oldest events are dropped. */
  readonly outputBytes: number;
  /** How long a finished process is kept, in ms. */
  readonly finishedMs: number;
  /** How many finished processes are kept at most. */
  readonly finished: number;
}

export const DEFAULT_RETENTION: RetentionLimits = { outputBytes: 1024 * 1024, finishedMs: 10 * 60_000, finished: 64 };
export const DEFAULT_MAX_BACKGROUND_PROCESSES = 16;

/** What the API says of a process. */
export interface ProcessInfo {
  readonly id: string;
  readonly pid: number;
  readonly command: string;
  readonly tag?: string;
  /** Started with `POST /processes` (else: a streamed `/execute`). */
  readonly background: boolean;
  readonly status: 'running' | 'exited';
  readonly exit_code: number | null;
  readonly timed_out: boolean;
  readonly signal: string | null;
  readonly started_at: string;
  readonly ended_at: string | null;
  /** Whether its stdin is a pipe still open for writing. */
  readonly stdin: boolean;
  /** Connections following its output now. */
  readonly followers: number;
}

/** Replay from a seq: the seqs that are no longer kept (if any), then the kept events after it. */
export interface Replay {
  readonly gap?: { readonly from: number; readonly to: number };
  readonly events: readonly OutputEvent[];
}

/** What each kept event costs beyond its text, so that many tiny events cannot hold much more memory than the bound. */
const EVENT_OVERHEAD_BYTES = 64;

interface Kept {
  readonly event: OutputEvent;
  readonly bytes: number;
}

export class ManagedProcess {
  public readonly id = `p-${randomBytes(8).toString('hex')}`;
  public readonly startedAt = new Date();
  public endedAt?: Date;
  /** Connections following its output now (kept by the process API). */
  public followers = 0;
  /** Whether a stdin write (set by the process API from its request on) is in flight: one at a time. */
  public stdinBusy = false;
  /** Kept events from `head` on; slots before it are cleared (undefined) until compacted. */
  private readonly kept: (Kept | undefined)[] = [];
  /** Index in `kept` of the oldest event still kept. */
  private head = 0;
  private keptBytes = 0;
  /** The highest seq dropped (0: none). */
  private dropped = 0;
  private lastSeq = 0;
  private exit?: Extract<OutputEvent, { type: 'exit' }>;
  private readonly decoders = { stdout: new StringDecoder('utf8'), stderr: new StringDecoder('utf8') };
  private stderrSoFar = { empty: true, endsWithNewline: false };
  private readonly watchers = new Set<() => void>();
  private command?: Command;

  public constructor(
    public readonly commandText: string,
    public readonly background: boolean,
    public readonly tag: string | undefined,
    private readonly outputBytes: number,
  ) {}

  /** Where the command's output goes. */
  public output(kind: 'stdout' | 'stderr', chunk: Buffer): void {
    this.append(kind, this.decoders[kind].write(chunk), chunk.length);
  }

  /** Ties the process to its started command; `ended` is told once it has ended and its exit event is out. */
  public attach(command: Command, ended: () => void): void {
    this.command = command;
    void command.done.then((end) => {
      this.finish(end);
      ended();
    });
  }

  public get pid(): number {
    return this.command?.pid ?? 0;
  }

  /** The seq of its newest event (0: none yet). */
  public get latestSeq(): number {
    return this.lastSeq;
  }

  public get running(): boolean {
    return this.exit === undefined;
  }

  /** Resolves once the process has ended (its exit event is kept). */
  public ended(): Promise<void> {
    return this.command ? this.command.done.then(() => undefined) : Promise.resolve();
  }

  public info(): ProcessInfo {
    return {
      id: this.id,
      pid: this.pid,
      command: this.commandText,
      ...(this.tag === undefined ? {} : { tag: this.tag }),
      background: this.background,
      status: this.exit ? 'exited' : 'running',
      exit_code: this.exit?.exit_code ?? null,
      timed_out: this.exit?.timed_out ?? false,
      signal: this.exit?.signal ?? null,
      started_at: this.startedAt.toISOString(),
      ended_at: this.endedAt?.toISOString() ?? null,
      stdin: this.stdinOpen,
      followers: this.followers,
    };
  }

  /** The kept events after `after`, with the gap before them when some were dropped. */
  public after(after: number): Replay {
    const from = Math.max(after, this.dropped);
    const events = this.kept.slice(this.head + from - this.dropped).map((k) => k!.event);
    return after < this.dropped ? { gap: { from: after + 1, to: this.dropped }, events } : { events };
  }

  /** What is kept for replay now: the bytes counted against the bound and the slots held (for tests). */
  public get retained(): { readonly bytes: number; readonly events: number; readonly slots: number } {
    return { bytes: this.keptBytes, events: this.kept.length - this.head, slots: this.kept.length };
  }

  /** Calls `fn` once, at the next event; returns a function that cancels that. */
  public onNextEvent(fn: () => void): () => void {
    const once = () => {
      this.watchers.delete(once);
      fn();
    };
    this.watchers.add(once);
    return () => this.watchers.delete(once);
  }

  /** Whether the process was started with a stdin pipe that is still open. */
  public get stdinOpen(): boolean {
    const stdin = this.command?.stdin;
    return !!stdin && !stdin.destroyed && !stdin.writableEnded && this.running;
  }

  /** Whether it was started with a stdin pipe at all. */
  public get stdinPiped(): boolean {
    return !!this.command?.stdin;
  }

  /** Writes to its stdin (then closes it, with `eof`); rejects when the pipe breaks. */
  public async writeStdin(data: Buffer, eof: boolean): Promise<void> {
    const stdin = this.command!.stdin!;
    if (data.length > 0) await new Promise<void>((resolve, reject) => stdin.write(data, (err) => (err ? reject(err) : resolve())));
    if (eof) stdin.end();
  }

  /** Sends `signal` to its process group; false when it has ended. */
  public signal(signal: NodeJS.Signals): boolean {
    return this.running && (this.command?.signal(signal) ?? false);
  }

  private append(kind: 'stdout' | 'stderr', data: string, bytes: number): void {
    if (data === '') return;
    if (kind === 'stderr') this.stderrSoFar = { empty: false, endsWithNewline: data.endsWith('\n') };
    this.keep({ type: kind, seq: ++this.lastSeq, data }, bytes);
  }

  private keep(event: OutputEvent, bytes: number): void {
    this.kept.push({ event, bytes: bytes + EVENT_OVERHEAD_BYTES });
    this.keptBytes += bytes + EVENT_OVERHEAD_BYTES;
    // The newest event always stays, however large.
    while (this.keptBytes > this.outputBytes && this.kept.length - this.head > 1) {
      const oldest = this.kept[this.head]!;
      // Cleared at once, so a dropped event's text is never held past the bound.
      this.kept[this.head++] = undefined;
      this.keptBytes -= oldest.bytes;
      this.dropped = oldest.event.seq;
    }
    if (this.head > 64) {
      this.kept.splice(0, this.head);
      this.head = 0;
    }
    for (const watcher of [...this.watchers]) watcher();
  }

  private finish(end: CommandEnd): void {
    for (const kind of ['stdout', 'stderr'] as const) {
      const rest = this.decoders[kind].end();
      this.append(kind, rest, Buffer.byteLength(rest));
    }
    let exit: Omit<Extract<OutputEvent, { type: 'exit' }>, 'seq'>;
    if (end.failed !== undefined) {
      const text = `Failed to execute command: ${end.failed}`;
      this.append('stderr', text, Buffer.byteLength(text));
      exit = { type: 'exit', exit_code: 1, timed_out: false, signal: null };
    } else {
      const tail = stderrTail(end, this.stderrSoFar);
      this.append('stderr', tail, Buffer.byteLength(tail));
      exit = { type: 'exit', exit_code: end.exitCode, timed_out: end.timedOut, signal: end.signal };
    }
    this.endedAt = new Date();
    this.exit = { ...exit, seq: ++this.lastSeq };
    this.keep(this.exit, 0);
  }
}

export interface RegistryOptions {
  /** The drain's view of running commands. */
  readonly groups: ProcessGroups;
  readonly cgroups?: CommandCgroups;
  /** Background processes that may run at once. */
  readonly maxBackground: number;
  readonly retention: RetentionLimits;
}

export type StartOutcome = ManagedProcess | { readonly error: string } | { readonly full: string };

export class ProcessRegistry {
  private readonly processes = new Map<string, ManagedProcess>();
  /** Background processes being started (counted against the limit before they run). */
  private starting = 0;

  public constructor(private readonly options: RegistryOptions) {}

  public get maxBackground(): number {
    return this.options.maxBackground;
  }

  /** Background processes running now. */
  public get backgroundRunning(): number {
    let n = 0;
    for (const p of this.processes.values()) if (p.background && p.running) n++;
    return n;
  }

  /**
   * Starts the command as a process and registers it once it runs; `error` when it could not be
   * started, `full` when it is a background process and as many as allowed run already.
   */
  public async start(spec: CommandSpec, background: boolean, tag?: string): Promise<StartOutcome> {
    this.prune();
    if (background && this.backgroundRunning + this.starting >= this.options.maxBackground) {
      return {
        full: `${this.backgroundRunning + this.starting} background processes are running, as many as --max-background-processes (${this.options.maxBackground}) allows; stop one (POST /processes/<id>/signal) or wait until one has ended`,
      };
    }
    const process = new ManagedProcess(spec.command, background, tag, this.options.retention.outputBytes);
    const command = Command.start({ ...spec, cgroups: this.options.cgroups }, {
      stdout: (chunk) => process.output('stdout', chunk),
      stderr: (chunk) => process.output('stderr', chunk),
    }, this.options.groups);
    if ('error' in command) return command;
    if (background) this.starting++;
    const failed = await command.started;
    if (background) this.starting--;
    if (failed !== undefined) return { error: failed };
    process.attach(command, () => this.prune());
    this.processes.set(process.id, process);
    return process;
  }

  public get(id: string): ManagedProcess | undefined {
    this.prune();
    return this.processes.get(id);
  }

  /** Every process kept, in start order. */
  public list(): ManagedProcess[] {
    this.prune();
    return [...this.processes.values()];
  }

  /** Forgets a finished process. */
  public delete(id: string): 'deleted' | 'running' | 'missing' {
    const process = this.processes.get(id);
    if (!process) return 'missing';
    if (process.running) return 'running';
    this.processes.delete(id);
    return 'deleted';
  }

  /** Sends `signal` to every running background process (a drain's first word to servers). */
  public signalBackground(signal: NodeJS.Signals): void {
    for (const p of this.processes.values()) if (p.background && p.running) p.signal(signal);
  }

  /** Forgets the finished processes kept too long, then the oldest beyond the count. */
  private prune(now = Date.now()): void {
    const { finishedMs, finished } = this.options.retention;
    const done: ManagedProcess[] = [];
    for (const p of this.processes.values()) {
      if (!p.endedAt) continue;
      if (now - p.endedAt.getTime() > finishedMs) this.processes.delete(p.id);
      else done.push(p);
    }
    done.sort((a, b) => a.endedAt!.getTime() - b.endedAt!.getTime());
    for (const p of done.slice(0, Math.max(0, done.length - finished))) this.processes.delete(p.id);
  }
}
