/**
 * Runs the real operator bundle (operator/dist/agent-sandbox-operator.mjs) as a child process
 * against a local control plane, as the controller or the router: start, wait until its
 * controllers run (or its caches synced), stop gracefully
 * or SIGKILL it, and keep its JSON log for assertions and failure reports. Used by the integration
 * and fault tests, the benchmarks and `npm run demo`.
 */
import { ChildProcess, execFileSync, spawn } from 'child_process';
import * as fs from 'fs';
import * as http from 'http';
import * as path from 'path';
import { Metrics } from './metrics';
import { waitFor } from '../control-plane/kube';

const ROOT = path.resolve(__dirname, '..', '..');
export const OPERATOR_BUNDLE = path.join(ROOT, 'operator', 'dist', 'agent-sandbox-operator.mjs');
/**
 * The node flags the operator image runs with (operator/Dockerfile ENTRYPOINT, which says why; a
 * unit test keeps the two equal), so local runs and benchmarks run what ships.
 */
export const IMAGE_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=2', '--initial-old-space-size=64'];
const SOURCES = [path.join(ROOT, 'operator', 'src'), path.join(ROOT, 'src', 'api'), path.join(ROOT, 'operator', 'build.mjs')];

/**
 * Every live operator child, so a crashed test run never leaves one reconciling. Kept on the global
 * under this key so the jest environment of the process suites (test/process-environment.cjs) can
 * kill what a test file left running once the file is done.
 */
const CHILDREN_KEY = '__agentSandboxOperatorChildren';
const running: Set<ChildProcess> = ((globalThis as any)[CHILDREN_KEY] ??= new Set<ChildProcess>());
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

function newestMtime(dir: string): number {
  if (!fs.statSync(dir).isDirectory()) return fs.statSync(dir).mtimeMs;
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(full) : fs.statSync(full).mtimeMs);
  }
  return newest;
}

/**
 * Builds the bundle with the project's own task when it is missing or older than its sources,
 * under a lock directory so two jest workers (or a test run and a benchmark) never write it at once.
 * `log` hears of a build before it starts; a failed build throws with the task's output.
 */
export async function ensureOperatorBundle(log?: (message: string) => void): Promise<void> {
  const lock = `${OPERATOR_BUNDLE}.lock`;
  fs.mkdirSync(path.dirname(OPERATOR_BUNDLE), { recursive: true });
  await waitFor(() => {
    try {
      fs.mkdirSync(lock);
      return true;
    } catch {
      // A lock older than a build can take (the build is killed at 170 s) is left over from a killed run.
      const since = fs.statSync(lock, { throwIfNoEntry: false })?.mtimeMs;
      if (since !== undefined && Date.now() - since > 200_000) fs.rmSync(lock, { recursive: true, force: true });
      return false;
    }
  }, 240_000, 'the operator bundle build lock');
  try {
    // The entry point imports its chunks (operator/build.mjs): a bundle without them is no bundle.
    const stale = !fs.existsSync(OPERATOR_BUNDLE) || !fs.existsSync(path.join(path.dirname(OPERATOR_BUNDLE), 'chunks'))
      || fs.statSync(OPERATOR_BUNDLE).mtimeMs < Math.max(...SOURCES.map(newestMtime));
    if (stale) {
      log?.('building the operator bundle (npx projen operator:build)');
      execFileSync('npx', ['projen', 'operator:build'], { cwd: ROOT, stdio: 'pipe', timeout: 170_000 });
    }
  } finally {
    fs.rmSync(lock, { recursive: true, force: true });
  }
}

export interface OperatorOptions {
  /**
   * Whom the operator runs as. Tests use BundleRbac's kubeconfig (the install bundle's own RBAC), so
   * a permission the bundle lacks fails them; the admin kubeconfig would hide it.
   */
  readonly kubeconfig: string;
  /** Added after the defaults (which are loopback-only and without leader election). */
  readonly args?: readonly string[];
  /** Where the log is written as well; default: test-results/operator/ (kept after the run, for CI artifacts). */
  readonly logFile?: string;
  /** Added to this process's environment (test-only hooks of the operator). */
  readonly env?: NodeJS.ProcessEnv;
}

/** Loopback-only defaults of each command (every listener on a free port of 127.0.0.1). */
const DEFAULT_ARGS = {
  controller: ['--leader-elect=false', '--metrics-bind-address=127.0.0.1:0', '--health-probe-bind-address=127.0.0.1:0'],
  router: ['--bind-address=127.0.0.1:0', '--metrics-bind-address=127.0.0.1:0', '--health-probe-bind-address=127.0.0.1:0'],
};

export class OperatorProcess {
  /** Starts the `controller` command and resolves once its controllers have started. */
  public static async start(opts: OperatorOptions): Promise<OperatorProcess> {
    const op = new OperatorProcess(opts, 'controller');
    await op.waitForLog((l) => l.msg === 'caches synced; starting controllers', 60_000, 'the operator to start its controllers');
    return op;
  }

  /**
   * Starts the `controller` command without waiting for anything: a standby replica of a
   * leader-elected pair never starts its controllers.
   */
  public static launch(opts: OperatorOptions): OperatorProcess {
    return new OperatorProcess(opts, 'controller');
  }

  /** Starts the `router` command without waiting for anything (one that cannot reach its API server never syncs). */
  public static launchRouter(opts: OperatorOptions): OperatorProcess {
    return new OperatorProcess(opts, 'router');
  }

  /** Starts the `router` command and resolves once its caches have synced (it is ready). */
  public static async startRouter(opts: OperatorOptions): Promise<OperatorProcess> {
    const op = new OperatorProcess(opts, 'router');
    await op.waitForLog((l) => l.msg === 'caches synced; ready', 60_000, 'the router to sync its caches');
    return op;
  }

  private static count = 0;
  public readonly lines: any[] = [];
  public readonly logFile: string;
  private readonly child: ChildProcess;
  /** Resolves with the exit code (or the signal's name) once the process has exited. */
  public readonly exited: Promise<number | string | null>;
  private partial = '';

  private constructor(opts: OperatorOptions, command: keyof typeof DEFAULT_ARGS) {
    const logDir = path.join(ROOT, 'test-results', 'operator');
    fs.mkdirSync(logDir, { recursive: true });
    this.logFile = opts.logFile ?? path.join(logDir, `${command === 'controller' ? 'operator' : command}-${process.pid}-${++OperatorProcess.count}.log`);
    const args = ['--enable-source-maps', ...IMAGE_NODE_FLAGS, OPERATOR_BUNDLE, command, `--kubeconfig=${opts.kubeconfig}`, ...DEFAULT_ARGS[command], ...(opts.args ?? [])];
    this.child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...opts.env } });
    running.add(this.child);
    const out = fs.createWriteStream(this.logFile);
    const onData = (chunk: Buffer) => {
      out.write(chunk);
      this.partial += chunk.toString('utf8');
      let nl: number;
      while ((nl = this.partial.indexOf('\n')) >= 0) {
        const line = this.partial.slice(0, nl);
        this.partial = this.partial.slice(nl + 1);
        try {
          this.lines.push({ ...JSON.parse(line), receivedAt: Date.now() });
        } catch {
          this.lines.push({ msg: line, receivedAt: Date.now() });
        }
      }
    };
    this.child.stdout!.on('data', onData);
    this.child.stderr!.on('data', onData);
    this.exited = new Promise((resolve) => this.child.on('exit', (code, signal) => {
      running.delete(this.child);
      out.end();
      resolve(code ?? signal);
    }));
  }

  public get pid(): number {
    return this.child.pid!;
  }

  public get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** SIGTERM and wait for the graceful exit (SIGKILL after `timeoutMs`); resolves with the exit code. */
  public async stop(timeoutMs = 20_000): Promise<number | string | null> {
    if (!this.alive) return this.exited;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Sends `signal` and returns at once (stop() and kill() wait for the exit). */
  public signal(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }

  /** kill -9: no drain, no cleanup, exactly like a node failure or an OOM kill. */
  public async kill(): Promise<void> {
    if (this.alive) this.child.kill('SIGKILL');
    await this.exited;
  }

  public async waitForLog(match: (line: any) => boolean, timeoutMs: number, what: string): Promise<any> {
    return waitFor(() => {
      const hit = this.lines.find(match);
      if (hit) return hit;
      if (!this.alive) throw new Error(`the operator exited; log tail:\n${this.tail()}`);
      return undefined;
    }, timeoutMs, what);
  }

  /** The port a listener ("proxy", "metrics", "health probes") was bound to, from the log. */
  public async port(endpoint: string): Promise<number> {
    return (await this.waitForLog((l) => l.msg === `serving ${endpoint}`, 10_000, `the ${endpoint} endpoint`)).port;
  }

  /** One scrape of the operator's Prometheus endpoint (--metrics-bind-address). */
  public async metrics(): Promise<Metrics> {
    const port = await this.port('metrics');
    const text = await new Promise<string>((resolve, reject) => {
      http.get({ host: '127.0.0.1', port, path: '/metrics', agent: false }, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`GET /metrics -> HTTP ${res.statusCode}`))));
      }).on('error', reject);
    });
    return new Metrics(text);
  }

  /**
   * Resolves once each named controller has reconciled every key it was handed so far, and with
   * the metrics that showed it. Each add the work queue counts (`workqueue_adds_total`) is handed to
   * exactly one reconcile, and each reconcile records exactly one result
   * (`controller_runtime_reconcile_total`), so the two are equal exactly when nothing is queued or
   * in flight. A key waiting on a requeue timer is not counted until the timer fires.
   *
   * This says nothing about watch events still on their way to the operator: to cover a change
   * the operator may not have seen yet, first wait for something it can only have done after
   * seeing it (a barrier, see SandboxApi.barrier).
   */
  public async waitIdle(controllers: readonly string[], timeoutMs = 60_000): Promise<Metrics> {
    let last: Metrics | undefined;
    try {
      return await waitFor(async () => {
        last = await this.metrics();
        for (const controller of controllers) {
          // A controller that is not running would look idle forever: refuse names it does not serve.
          if (!last.has('controller_runtime_max_concurrent_reconciles', { controller })) throw new Error(`no controller "${controller}" in this operator`);
          if (!last.idle(controller)) return undefined;
        }
        return last;
      }, timeoutMs, `controllers ${controllers.join(', ')} to be idle`);
    } catch (e) {
      const state = controllers.map((c) => `${c}: adds ${last?.sum('workqueue_adds_total', { controller: c })}, reconciles ${last?.sum('controller_runtime_reconcile_total', { controller: c })}`);
      throw new Error(`${(e as Error).message} (${state.join('; ')})`);
    }
  }

  /** Log lines at level error (reconcile failures and worse). */
  public errors(): any[] {
    return this.lines.filter((l) => l.level === 'error');
  }

  /** The last `n` log lines, for failure messages. */
  public tail(n = 40): string {
    return this.lines.slice(-n).map((l) => JSON.stringify(l)).join('\n');
  }
}
