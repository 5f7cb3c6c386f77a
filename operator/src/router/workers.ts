/**
 * `--workers`: the router as several processes (node:cluster) sharing its ports, so it uses more
 * than one core, as upstream's Go router does with goroutines. Each worker is a whole router, as a
 * replica is (its own caches, authorization cache, limits and activity stamps: the router is built
 * to run as many replicas as wanted, and stamps only ever move a Sandbox's last activity forward).
 *
 * The primary routes nothing: it starts the workers, serves /metrics summed over them (each
 * worker's series, asked for over the cluster channel at scrape time), passes SIGTERM and SIGINT on
 * and waits for the workers to drain. A worker that exits unasked takes the others and the primary
 * down with it (exit 1), so the Pod restarts whole rather than limp on with fewer cores.
 * The workers share the proxy and probe ports (the primary accepts and hands connections round).
 */
import cluster, { type Worker } from 'node:cluster';
import * as os from 'node:os';
import { AggregatorRegistry, type Registry } from 'prom-client';
import { closeServer, listen, metricsHandler } from '../runtime/http';
import { ProcessLifecycle } from '../runtime/lifecycle';
import type { Logger } from '../runtime/log';

/** `--workers=0`: one per core this process may use. */
export function workerCount(flag: number): number {
  return flag > 0 ? flag : os.availableParallelism();
}

/** True in a process the primary started. */
export function isRouterWorker(): boolean {
  return cluster.isWorker;
}

/** The message a primary sends its workers to drain and exit (as SIGTERM would, but never twice). */
const SHUT_DOWN = 'agent-sandbox-router:shut-down';

/**
 * In a worker: answer the primary's requests for this registry's series, and shut down (once)
 * when the primary says so. A terminal's Ctrl-C reaches the workers too, as a signal of their own.
 */
export function joinPrimary(registry: Registry, life: Pick<ProcessLifecycle, 'requestShutdown'>): void {
  AggregatorRegistry.setRegistries([registry]);
  // Constructing one installs the listener that answers the primary.
  new AggregatorRegistry();
  process.on('message', (m) => m === SHUT_DOWN && life.requestShutdown('the primary'));
  // The primary gone (killed): nothing passes signals on or serves metrics any more.
  process.on('disconnect', () => life.requestShutdown('the primary disconnected'));
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
  const stopWorkers = () => {
    for (const w of workers) if (w.isConnected()) w.send(SHUT_DOWN);
  };
  cluster.on('exit', (worker, code, signal) => {
    workers.delete(worker);
    if (life.shuttingDown) return;
    o.log.error({ worker: worker.process.pid, code, signal }, 'a router worker exited; stopping the others and exiting');
    stopWorkers();
    void allExited().then(() => closeServer(metrics)).then(() => life.exit(1));
  });
  o.log.info({ workers: o.workers }, 'starting router workers');
  for (let i = 0; i < o.workers; i++) workers.add(cluster.fork());
  life.onShutdown(async () => {
    stopWorkers();
    await allExited();
    await closeServer(metrics);
  });
  return life.exited;
}
