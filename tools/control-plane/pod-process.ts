/**
 * One container of an opted-in Pod as a local process, kept like the kubelet keeps it: started in
 * its own process group with its stdin a pipe from the runner (see exit-with-parent.cjs), probed
 * for readiness on the Pod's address, restarted with backoff when it exits under
 * `restartPolicy: Always` (or `OnFailure` and a non-zero code), stopped with SIGTERM and SIGKILL
 * after the grace period to each of its process groups that still has a member (the command's
 * background processes too, even once the command itself has exited). Every change of its status
 * is reported through `onChange`.
 */
import { ChildProcess, spawn } from 'child_process';
import * as fs from 'fs';
import * as http from 'http';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import { Launch, Readiness } from './pod-command';
import { Log } from './processes';

export const EXIT_WITH_PARENT = path.join(__dirname, 'exit-with-parent.cjs');
/** First restart delay and its cap: the kubelet's 10 s and 5 min, scaled down for tests. */
const BACKOFF_BASE_MS = 1_000;
const BACKOFF_MAX_MS = 30_000;
/** A run at least this long resets the backoff. */
const BACKOFF_RESET_MS = 30_000;
/** Readiness polls: fast until first ready, then a steady health check. */
const PROBE_TIMEOUT_MS = 1_000;
const PROBE_PERIOD_MS = 2_000;

export type RestartPolicy = 'Always' | 'OnFailure' | 'Never';

export interface ContainerProcessOptions {
  readonly name: string;
  readonly image: string;
  readonly ip: string;
  readonly cwd: string;
  readonly logFile: string;
  readonly restartPolicy: RestartPolicy;
  /** What to run, or why it cannot run (shown as the container's waiting message). */
  readonly launch: Launch | Error;
  readonly onChange: () => void;
  readonly log: Log;
}

type State = { running: { startedAt: string } } | { waiting: { reason: string; message?: string } }
| { terminated: { exitCode: number; signal?: number; reason: string; startedAt?: string; finishedAt: string } };

export class ContainerProcess {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private state: State = { waiting: { reason: 'ContainerCreating' } };
  private lastState: State | undefined;
  private ready = false;
  private restartCount = 0;
  private crashes = 0;
  private stopping = false;
  private timer: NodeJS.Timeout | undefined;
  /** The process group of every run (its leader's pid) not yet seen empty, to stop what outlives the leader. */
  private readonly groups = new Set<number>();

  public constructor(private readonly opts: ContainerProcessOptions) {}

  public get name(): string {
    return this.opts.name;
  }

  public get pid(): number | undefined {
    return this.child?.exitCode === null && this.child.signalCode === null ? this.child.pid : undefined;
  }

  public get isReady(): boolean {
    return this.ready;
  }

  /** Exited for good: not running and not waiting to restart. */
  public get terminated(): { exitCode: number } | undefined {
    return 'terminated' in this.state ? this.state.terminated : undefined;
  }

  /** The container's entry in `status.containerStatuses`. */
  public status(): object {
    return {
      name: this.opts.name,
      image: this.opts.image,
      imageID: '',
      ...(this.pid ? { containerID: `local://${this.pid}` } : {}),
      ready: this.ready,
      started: 'running' in this.state,
      restartCount: this.restartCount,
      state: this.state,
      ...(this.lastState ? { lastState: this.lastState } : {}),
    };
  }

  public start(): void {
    const launch = this.opts.launch;
    if (launch instanceof Error) {
      this.setState({ waiting: { reason: 'RunContainerError', message: launch.message } });
      return;
    }
    fs.mkdirSync(path.dirname(this.opts.logFile), { recursive: true });
    const out = fs.openSync(this.opts.logFile, 'a');
    const args = launch.bin === process.execPath ? ['--require', EXIT_WITH_PARENT, ...launch.args] : launch.args;
    let child: ChildProcess;
    try {
      child = spawn(launch.bin, args, { cwd: this.opts.cwd, env: launch.env, stdio: ['pipe', out, out], detached: true });
    } finally {
      fs.closeSync(out);
    }
    this.child = child;
    if (child.pid !== undefined) this.groups.add(child.pid);
    const startedAt = new Date();
    // The write end stays open for the child's lifetime; errors only mean the child is gone.
    child.stdin?.on('error', () => undefined);
    child.once('error', (e) => this.opts.log(`${this.opts.name}: ${e.message}`));
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => {
      // An empty group is forgotten, so its id, free for reuse, is never signalled later.
      for (const pgid of this.groups) if (!groupAlive(pgid)) this.groups.delete(pgid);
      resolve();
      this.onExit(code, signal, startedAt);
    }));
    if (child.pid === undefined) return;
    this.opts.log(`${this.opts.name}: started pid ${child.pid}: ${launch.bin} ${args.join(' ')}`);
    this.setState({ running: { startedAt: startedAt.toISOString() } });
    void this.probe(child, launch.readiness);
  }

  /**
   * SIGTERM to every process group of this container that still has a member, SIGKILL to those
   * left after `graceMs`; no restart afterwards.
   */
  public async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    clearTimeout(this.timer);
    const live = () => [...this.groups].filter(groupAlive);
    const groups = live();
    if (groups.length === 0) return;
    for (const pgid of groups) signalGroup(pgid, 'SIGTERM');
    const deadline = Date.now() + graceMs;
    while (live().length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, Math.min(50, Math.max(1, deadline - Date.now()))));
    for (const pgid of live()) {
      this.opts.log(`${this.opts.name}: process group ${pgid} outlived its ${graceMs} ms grace period, sending SIGKILL`);
      signalGroup(pgid, 'SIGKILL');
    }
    await this.exited;
    this.groups.clear();
  }

  private onExit(code: number | null, signal: NodeJS.Signals | null, startedAt: Date): void {
    const exitCode = code ?? 128 + (signal ? signalNumber(signal) : 0);
    this.opts.log(`${this.opts.name}: pid ${this.child?.pid} exited (code ${code}, signal ${signal})`);
    this.ready = false;
    const terminated: State = {
      terminated: { exitCode, reason: exitCode === 0 ? 'Completed' : 'Error', startedAt: startedAt.toISOString(), finishedAt: new Date().toISOString() },
    };
    const policy = this.opts.restartPolicy;
    if (this.stopping || policy === 'Never' || (policy === 'OnFailure' && exitCode === 0)) {
      this.setState(terminated);
      return;
    }
    this.crashes = Date.now() - startedAt.getTime() >= BACKOFF_RESET_MS ? 1 : this.crashes + 1;
    const delay = Math.min(BACKOFF_BASE_MS * 2 ** (this.crashes - 1), BACKOFF_MAX_MS);
    this.lastState = terminated;
    this.setState({ waiting: { reason: 'CrashLoopBackOff', message: `back-off ${delay} ms restarting failed container ${this.opts.name}` } });
    this.timer = setTimeout(() => {
      if (this.stopping) return;
      this.restartCount++;
      this.start();
    }, delay);
  }

  /** Polls readiness while this child lives: quickly until it first passes, then every PROBE_PERIOD_MS. */
  private async probe(child: ChildProcess, readiness: Readiness): Promise<void> {
    let delay = 50;
    while (this.child === child && child.exitCode === null && child.signalCode === null && !this.stopping) {
      const ok = await check(this.opts.ip, readiness);
      if (this.child !== child || child.exitCode !== null || child.signalCode !== null || this.stopping) return;
      if (ok !== this.ready) {
        this.ready = ok;
        this.opts.onChange();
      }
      await new Promise((r) => setTimeout(r, ok ? PROBE_PERIOD_MS : delay));
      delay = Math.min(delay * 2, 500);
    }
  }

  private setState(state: State): void {
    this.state = state;
    this.opts.onChange();
  }
}

function check(ip: string, readiness: Readiness): Promise<boolean> {
  if (readiness.kind === 'running') return Promise.resolve(true);
  if (readiness.kind === 'tcp') return Promise.all(readiness.ports.map((port) => tcpOpen(ip, port))).then((all) => all.every(Boolean));
  return new Promise((resolve) => {
    const req = http.get({ host: ip, port: readiness.port, path: readiness.path, agent: false, timeout: PROBE_TIMEOUT_MS }, (res) => {
      res.resume();
      resolve((res.statusCode ?? 0) >= 200 && (res.statusCode ?? 0) < 400);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
  });
}

function tcpOpen(ip: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: ip, port, timeout: PROBE_TIMEOUT_MS });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.once('connect', () => done(true));
    socket.once('timeout', () => done(false));
    socket.once('error', () => done(false));
  });
}

function signalGroup(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pid, sig);
  } catch {
    // already gone
  }
}

/** Whether any process of group `pgid` that we may signal lives (a signal 0 reaches it). */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

function signalNumber(signal: NodeJS.Signals): number {
  return os.constants.signals[signal] ?? 0;
}
