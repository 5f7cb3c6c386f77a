/**
 * Starting, watching and stopping the control-plane processes. Every process is tracked by
 * pid (in memory and in `<workDir>/pids`) and stopped by pid: nothing here ever signals a
 * process by name, so other clusters or tools on the machine are never touched.
 */
import { ChildProcess, spawn } from 'child_process';
import * as fs from 'fs';
import * as net from 'net';
import * as path from 'path';

/** What is needed to find and stop a component later, also from another process (cli down). */
export interface ProcessRecord {
  readonly name: string;
  readonly pid: number;
  /** Absolute path of the executable; checked against /proc before signalling a recorded pid. */
  readonly bin: string;
}

interface Running extends ProcessRecord {
  readonly child: ChildProcess;
  readonly exited: Promise<void>;
  exitCode?: number | null;
  exitSignal?: NodeJS.Signals | null;
}

export type Log = (msg: string) => void;

/** Names the pid of the process that owns a non-detached control plane. */
export const OWNER_FILE = 'owner';

/** Parses a `<workDir>/pids` file ("name pid bin" lines). */
export function readPidsFile(file: string): ProcessRecord[] {
  return fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((line) => {
    const [name, pid, ...bin] = line.split(' ');
    return { name, pid: Number(pid), bin: bin.join(' ') };
  });
}

/** Picks a free TCP port on 127.0.0.1 (the OS chooses; the tiny reuse race is reported by the caller's start-up check). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

/** The last `lines` lines of a log file, or a note that it is missing. */
export function tailFile(file: string, lines = 40): string {
  try {
    const text = fs.readFileSync(file, 'utf8').trimEnd();
    return text.split('\n').slice(-lines).join('\n');
  } catch {
    return `(no log at ${file})`;
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** How a component was started, so restart() can start it again the same way. */
interface StartSpec {
  readonly bin: string;
  readonly args: string[];
  readonly env: NodeJS.ProcessEnv;
  readonly stdin: 'ignore' | 'pipe';
}

export class Supervisor {
  private readonly running: Running[] = [];
  private readonly specs = new Map<string, StartSpec>();
  private readonly pidsFile: string;
  private readonly logDir: string;

  /**
   * @param detached start each process in its own session so it outlives this Node process
   *   (the `cli up` case). Otherwise processes stay in our process group, so Ctrl-C on a test
   *   run reaches them too, and an exit hook kills them if we exit without stop().
   */
  public constructor(workDir: string, private readonly log: Log, private readonly detached: boolean) {
    this.pidsFile = path.join(workDir, 'pids');
    this.logDir = path.join(workDir, 'logs');
    fs.mkdirSync(this.logDir, { recursive: true });
    if (!detached) {
      process.once('exit', this.killAllSync);
      // Lets a later run reap these processes if this one dies without running stop() (SIGKILL).
      fs.writeFileSync(path.join(workDir, OWNER_FILE), `${process.pid}\n`);
    }
  }

  public get records(): ProcessRecord[] {
    return this.running.map(({ name, pid, bin }) => ({ name, pid, bin }));
  }

  public logFile(name: string): string {
    return path.join(this.logDir, `${name}.log`);
  }

  /**
   * @param stdin 'pipe' gives the process a stdin whose write end only this process holds, so the
   *   process can notice (end of file) when its owner is gone, even after a SIGKILL.
   */
  public start(name: string, bin: string, args: string[], env: NodeJS.ProcessEnv = process.env, stdin: 'ignore' | 'pipe' = 'ignore'): ProcessRecord {
    const out = fs.openSync(this.logFile(name), 'a');
    let child: ChildProcess;
    try {
      child = spawn(bin, args, { stdio: [stdin, out, out], detached: this.detached, env });
    } finally {
      fs.closeSync(out); // the child holds its own copy of the descriptor
    }
    // Without a listener a spawn failure (e.g. ENOENT) would be an uncaught 'error' event.
    child.once('error', (e) => this.log(`${name}: ${e.message}`));
    child.stdin?.on('error', () => undefined); // the process is gone; its 'exit' tells the rest
    if (child.pid === undefined) throw new Error(`${name}: could not start ${bin}`);
    this.specs.set(name, { bin, args, env, stdin });
    const rec: Running = {
      name,
      pid: child.pid,
      bin,
      child,
      exited: new Promise((resolve) => child.once('exit', (code, signal) => {
        rec.exitCode = code;
        rec.exitSignal = signal;
        resolve();
      })),
    };
    if (this.detached) child.unref();
    // A restarted component replaces its earlier, exited record.
    const earlier = this.running.findIndex((r) => r.name === name);
    if (earlier >= 0) this.running.splice(earlier, 1, rec);
    else this.running.push(rec);
    fs.appendFileSync(this.pidsFile, `${name} ${child.pid} ${bin}\n`);
    this.log(`started ${name} (pid ${child.pid}), log ${this.logFile(name)}`);
    return rec;
  }

  /**
   * Waits for `ready()` to return true, retrying with a short capped backoff (start-up probes
   * only). Fails fast with the component's log tail when the process exits or time runs out.
   */
  public async waitReady(name: string, ready: () => Promise<boolean>, timeoutMs: number): Promise<void> {
    const rec = this.running.find((r) => r.name === name);
    if (!rec) throw new Error(`${name} was never started`);
    const deadline = Date.now() + timeoutMs;
    let delay = 20;
    let lastError = '';
    while (Date.now() < deadline) {
      if (rec.exitCode !== undefined) {
        throw this.failure(name, `exited (code ${rec.exitCode}, signal ${rec.exitSignal}) before becoming ready`);
      }
      try {
        if (await ready()) return;
        lastError = '';
      } catch (e) {
        lastError = (e as Error).message;
      }
      await Promise.race([sleep(delay), rec.exited]);
      delay = Math.min(delay * 2, 250);
    }
    throw this.failure(name, `not ready after ${timeoutMs} ms${lastError ? ` (last probe error: ${lastError})` : ''}`);
  }

  /** True while the component's current process has not exited. */
  public isAlive(name: string): boolean {
    const rec = this.running.find((r) => r.name === name);
    return rec !== undefined && rec.exitCode === undefined;
  }

  /**
   * Sends `signal` to one component (fault injection) and waits until it has exited; SIGSTOP and
   * SIGCONT return at once. A component that is already gone is left alone.
   */
  public async signal(name: string, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const rec = this.running.find((r) => r.name === name);
    if (!rec) throw new Error(`${name} was never started`);
    if (rec.exitCode !== undefined) return;
    sendSignal(rec.pid, signal);
    if (signal !== 'SIGSTOP' && signal !== 'SIGCONT') await rec.exited;
  }

  /**
   * Starts a component again, after it exited, with the arguments it was first started with
   * (`replaceArgs` swaps any of them that begin with the same `--flag=`, or adds them).
   */
  public restart(name: string, replaceArgs: readonly string[] = []): ProcessRecord {
    const spec = this.specs.get(name);
    if (!spec) throw new Error(`${name} was never started`);
    if (this.isAlive(name)) throw new Error(`${name} is still running; stop it before restarting it`);
    const flagOf = (arg: string) => arg.split('=')[0];
    const replaced = new Set(replaceArgs.map(flagOf));
    const args = [...spec.args.filter((a) => !replaced.has(flagOf(a))), ...replaceArgs];
    const rec = this.start(name, spec.bin, args, spec.env, spec.stdin);
    // The first start's arguments stay the ones a later restart starts from.
    this.specs.set(name, spec);
    return rec;
  }

  /** An Error naming the component and carrying the tail of its log. */
  public failure(name: string, what: string): Error {
    return new Error(`${name} ${what}\n--- last lines of ${this.logFile(name)} ---\n${tailFile(this.logFile(name))}`);
  }

  /**
   * Stops every process: those not named in `groups` first, then group by group (all of a
   * group in parallel), each with SIGTERM and SIGKILL after `timeoutMs`.
   */
  public async stopAll(groups: string[][], timeoutMs = 10_000, afterGroup?: (index: number) => void): Promise<void> {
    const byName = new Map(this.running.map((r) => [r.name, r]));
    const ordered = groups.map((g) => g.map((n) => byName.get(n)).filter((r): r is Running => !!r));
    const rest = this.running.filter((r) => !groups.flat().includes(r.name));
    await Promise.all(rest.map((r) => this.stopOne(r, timeoutMs)));
    for (const [i, group] of ordered.entries()) {
      await Promise.all(group.map((r) => this.stopOne(r, timeoutMs)));
      afterGroup?.(i);
    }
    process.removeListener('exit', this.killAllSync);
  }

  private async stopOne(r: Running, timeoutMs: number): Promise<void> {
    if (r.exitCode !== undefined) return;
    sendSignal(r.pid, 'SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<boolean>((resolve) => { timer = setTimeout(() => resolve(true), timeoutMs); });
    // The timer is cleared as soon as the process exits, so no pending timeout keeps jest alive.
    const killed = await Promise.race([r.exited.then(() => false), timedOut]);
    clearTimeout(timer);
    if (killed) {
      this.log(`${r.name} (pid ${r.pid}) ignored SIGTERM for ${timeoutMs} ms, sending SIGKILL`);
      sendSignal(r.pid, 'SIGKILL');
      await r.exited;
    }
  }

  /** Last-resort cleanup when the host process exits without stop(): synchronous by necessity. */
  private readonly killAllSync = (): void => {
    for (const r of this.running) if (r.exitCode === undefined) sendSignal(r.pid, 'SIGKILL');
  };
}

function sendSignal(pid: number, sig: NodeJS.Signals): boolean {
  try {
    process.kill(pid, sig);
    return true;
  } catch {
    return false; // already gone
  }
}

/** True while `pid` runs (a zombie waiting for its reaper counts as gone). */
export function pidAlive(pid: number): boolean {
  try {
    // The state letter follows the command name in parentheses, which may itself hold ") ".
    return fs.readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '')[0] !== 'Z';
  } catch {
    return false;
  }
}

/** True while `rec.pid` is alive and still runs `rec.bin` (guards against pid reuse). */
export function isRunning(rec: ProcessRecord): boolean {
  try {
    const exe = fs.readlinkSync(`/proc/${rec.pid}/exe`);
    return exe === rec.bin || exe === `${rec.bin} (deleted)`;
  } catch {
    return false;
  }
}

/**
 * Stops recorded processes that are not our children (the `cli down` case): SIGTERM, then
 * SIGKILL after `timeoutMs`. We cannot wait() on a non-child, so liveness is re-checked via
 * /proc with a short sleep; this runs only during teardown.
 */
export async function stopProcesses(groups: ProcessRecord[][], log: Log, timeoutMs = 10_000): Promise<void> {
  for (const group of groups) {
    const alive = group.filter(isRunning);
    alive.forEach((r) => sendSignal(r.pid, 'SIGTERM'));
    const deadline = Date.now() + timeoutMs;
    while (alive.some(isRunning) && Date.now() < deadline) await sleep(50);
    for (const r of alive.filter(isRunning)) {
      log(`${r.name} (pid ${r.pid}) ignored SIGTERM for ${timeoutMs} ms, sending SIGKILL`);
      sendSignal(r.pid, 'SIGKILL');
    }
    while (alive.some(isRunning)) await sleep(50);
  }
}
