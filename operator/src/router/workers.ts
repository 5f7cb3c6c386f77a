/**
 * `--workers`: the router as several processes (node:cluster) sharing its ports, so it uses more
 * than one core, as upstream's Go router does with goroutines. Each worker is a whole router, as a
 * replica is (its own caches, authorization cache, limits and activity stamps: the router is built
 * to run as many replicas as wanted, and stamps only ever move a Sandbox's last activity forward).
 *
 * The primary routes nothing: it starts the workers, serves /metrics summed over them (each
 * worker's series, asked for over the cluster channel at scrape time), passes SIGTERM and SIGINT on
 * and waits for the workers to drain. A worker that exits unasked takes the others and the primary
 * down with it (exit 1), so the Pod restarts whole rather than limp on with fewer cores; so does one
 * that fails while stopping.
 * The workers share the proxy and probe ports (the primary accepts and hands connections round).
 */
import cluster, { type Worker } from 'node:cluster';
import * as fs from 'node:fs';
import * as os from 'node:os';
import { AggregatorRegistry, type Registry } from 'prom-client';
import { closeServer, listen, metricsHandler } from '../runtime/http';
import { ProcessLifecycle } from '../runtime/lifecycle';
import type { Logger } from '../runtime/log';

/**
 * `--workers=0`: one per core this process may use: the cores it may run on, capped by its cgroup's
 * CPU quota (a container's CPU limit), rounded up. `read` reads a file (injectable for tests).
 */
export function workerCount(flag: number, read: (file: string) => string | undefined = readOrUndefined, cores = os.availableParallelism()): number {
  if (flag > 0) return flag;
  const quota = cpuQuota(read);
  return Math.max(1, Math.min(cores, quota === undefined ? cores : Math.ceil(quota)));
}

/** The cgroup CPU limit in cores (v2 cpu.max, else v1 cfs quota/period); undefined when unlimited or unknown. */
export function cpuQuota(read: (file: string) => string | undefined): number | undefined {
  const v2 = read('/sys/fs/cgroup/cpu.max')?.trim().split(/\s+/);
  if (v2 && v2.length === 2) return v2[0] === 'max' ? undefined : positiveRatio(Number(v2[0]), Number(v2[1]));
  const quota = Number(read('/sys/fs/cgroup/cpu/cpu.cfs_quota_us') ?? read('/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us'));
  const period = Number(read('/sys/fs/cgroup/cpu/cpu.cfs_period_us') ?? read('/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us'));
  return quota > 0 ? positiveRatio(quota, period) : undefined;
}

function positiveRatio(quota: number, period: number): number | undefined {
  return quota > 0 && period > 0 ? quota / period : undefined;
}

function readOrUndefined(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** True in a process the primary started. */
export function isRouterWorker(): boolean {
  return cluster.isWorker;
}

/** The message a primary sends its workers to drain and exit (as SIGTERM would, but never twice). */
const SHUT_DOWN = 'agent-sandbox-router:shut-down';

/**
 * In a worker, before anything else (a message that finds no listener is lost): resolves with why
 * the primary asked it to stop, its message or the channel closing (the primary killed). A
 * terminal's Ctrl-C reaches the workers too, as a signal of their own.
 */
export function primaryStopRequest(): Promise<string> {
  return new Promise((resolve) => {
    process.on('message', (m) => m === SHUT_DOWN && resolve('the primary asked'));
    process.on('disconnect', () => resolve('the primary disconnected'));
  });
}

/** In a worker: answer the primary's requests for this registry's series. */
export function serveMetricsToPrimary(registry: Registry): void {
  AggregatorRegistry.setRegistries([registry]);
  // Constructing one installs the listener that answers the primary.
  new AggregatorRegistry();
}

export interface PrimaryOptions {
  readonly workers: number;
  readonly metricsBindAddress: string;
  readonly log: Logger;
}

/** Runs the primary until the workers have exited; resolves with the process's exit code. */
export async function runPrimary(o: PrimaryOptions): Promise<number> {
  const life = new ProcessLifecycle(o.log);
  const aggregator = new AggregatorRegistry();
  const metrics = await listen(o.metricsBindAddress, metricsHandler({
    contentType: aggregator.contentType,
    metrics: () => aggregator.clusterMetrics(),
  }), o.log, 'metrics');
  const workers = new Set<Worker>();
  const allExited = () => new Promise<void>((resolve) => {
    if (workers.size === 0) return resolve();
    cluster.on('exit', () => workers.size === 0 && resolve());
  });
  // 1 once any worker exits unasked, or fails (a code other than 0, or a signal) while stopping.
  let exitCode = 0;
  cluster.on('exit', (worker, code, signal) => {
    workers.delete(worker);
    const asked = life.shuttingDown;
    if (asked && code === 0) return;
    exitCode = 1;
    o.log.error({ worker: worker.process.pid, code, signal }, asked ? 'a router worker failed while shutting down'
      : 'a router worker exited; stopping the others and exiting');
    life.requestShutdown('a worker exited');
  });
  life.onShutdown(async () => {
    for (const w of workers) if (w.isConnected()) w.send(SHUT_DOWN);
    await allExited();
    await closeServer(metrics);
  });
  o.log.info({ workers: o.workers }, 'starting router workers');
  for (let i = 0; i < o.workers; i++) workers.add(cluster.fork());
  const code = await life.exited;
  return code === 0 ? exitCode : code;
}
