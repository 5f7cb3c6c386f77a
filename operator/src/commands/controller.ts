/**
 * `agent-sandbox-operator controller [flags]`: wires client, shared informers, leader election,
 * probes and metrics around the registered controllers, and shuts down gracefully.
 *
 * Start-up: informers start on every replica (a standby keeps warm caches, so a failover does not
 * wait for a full list); controllers start once the caches have synced and this replica leads.
 * /readyz fails until the caches have synced, and again while any cache's lists and watches have
 * failed for 30 s or more (the caches are that stale; the reason names them).
 * Shutdown (SIGTERM/SIGINT): readiness fails, workers finish their current reconcile (bounded),
 * then the Lease is released so a standby takes over at once, then the process exits 0.
 * Losing the Lease without a shutdown exits 1 at once: a replica that may no longer be the only
 * writer must not reconcile another key (controller-runtime does the same).
 */
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DEFAULT_SYSTEM_NAMESPACE } from '#api/labels';
import { createControllers } from '../controllers';
import { OperatorFlags, parseControllerArgs, startupWarnings, totalWorkers, usage } from './controller-flags';
import { buildInfo, userAgent } from '../runtime/build-info';
import { MONOTONIC_CLOCK, SYSTEM_CLOCK, sleep } from '../runtime/clock';
import { loadClusterConnection } from '../runtime/cluster-config';
import { SERVICE_ACCOUNT_DIR } from '../runtime/connection';
import { ControllerContext, RunnableController } from '../runtime/context';
import { closeServer, listen, metricsHandler, probesHandler } from '../runtime/http';
import { InformerFactory, resourceLabel } from '../runtime/informer-factory';
import { HttpKubeClient } from '../runtime/kube-client';
import { DEFAULT_LEASE_NAME, LeaderElector } from '../runtime/leader-election';
import { ProcessLifecycle } from '../runtime/lifecycle';
import { Logger, createLogger } from '../runtime/log';
import { OperatorMetrics } from '../runtime/metrics';

/** Longest wait for in-flight reconciles at shutdown; the pod's grace period is 30 s by default. */
const DRAIN_TIMEOUT_MS = 10_000;
/** Sockets beyond the workers: leader election, Events, informer lists. */
const EXTRA_SOCKETS = 8;

/** Runs until a signal or a lost Lease; resolves with the process exit code. */
export async function runController(args: readonly string[]): Promise<number> {
  const parsed = parseControllerArgs(args);
  const build = buildInfo();
  if (parsed.help) {
    process.stdout.write(`${usage()}\n`);
    return 0;
  }
  if (parsed.version) {
    process.stdout.write(`agent-sandbox-operator ${build.version} (commit ${build.gitCommit}, built ${build.buildDate}, node ${process.version})\n`);
    return 0;
  }
  const flags = parsed.flags;
  const log = createLogger(flags.string('log-level'));
  const connection = await loadClusterConnection({ kubeconfig: flags.string('kubeconfig'), log });
  const identity = `${os.hostname()}_${randomUUID()}`;
  log.info({ version: build.version, identity, apiServer: connection.server, credentials: connection.source, flags: flags.nonDefaults() }, 'starting the controller');
  for (const warning of startupWarnings(flags)) log.warn(warning);

  const metrics = new OperatorMetrics(build, new URL(connection.server).host);
  // Nothing runs while the loop is blocked: no event handled, no reconcile, no lease renewal.
  metrics.onLongLoopLag((lagMs) => log.info({ lagMs }, 'event loop blocked'));
  const client = new HttpKubeClient({
    connection,
    qps: flags.number('kube-api-qps'),
    burst: flags.number('kube-api-burst'),
    maxSockets: totalWorkers(flags) + EXTRA_SOCKETS,
    maxInFlight: flags.number('kube-api-max-in-flight'),
    userAgent: userAgent(build),
    eventSource: { controller: 'agent-sandbox-controller', instance: identity },
    metrics: metrics.client,
    log,
  });
  const informers = new InformerFactory(client, { log, metricsFor: (resource) => metrics.informer(resource) });
  const ctx: ControllerContext = {
    client, informers, flags, log, metrics, clock: SYSTEM_CLOCK, intervalClock: MONOTONIC_CLOCK,
  };
  const controllers = createControllers(ctx);
  for (const informer of informers.informers) metrics.trackInformerSize(resourceLabel(informer.type), () => informer.size);
  if (controllers.length === 0) log.warn('no controllers are registered; the process only elects a leader and serves probes');

  let elector: LeaderElector | undefined;
  // Before anything listens or campaigns, so a signal during start-up still shuts down in order.
  const life = new ProcessLifecycle(log);
  const health = await listen(flags.string('health-probe-bind-address'), probesHandler({
    liveness: () => undefined,
    readiness: () => (life.shuttingDown ? 'shutting down' : !informers.hasSynced ? 'informers have not synced yet' : watchHealth(informers)),
  }), log, 'health probes');
  const metricsServer = await listen(flags.string('metrics-bind-address'), metricsHandler(metrics.registry), log, 'metrics');

  const startControllers = async () => {
    await informers.synced();
    if (life.shuttingDown) return;
    log.info({ controllers: controllers.map((c) => c.name) }, 'caches synced; starting controllers');
    for (const c of controllers) c.start();
  };

  informers.start();
  if (flags.boolean('leader-elect')) {
    const namespace = leaseNamespace(flags);
    elector = new LeaderElector({
      client,
      namespace,
      identity,
      log,
      onStartedLeading: () => {
        metrics.setLeader(DEFAULT_LEASE_NAME, true);
        void startControllers();
      },
      onStoppedLeading: () => {
        metrics.setLeader(DEFAULT_LEASE_NAME, false);
        if (life.shuttingDown) return;
        log.error('lost the leader lease; exiting so that no two replicas reconcile at once');
        life.exit(1);
      },
    });
    metrics.setLeader(DEFAULT_LEASE_NAME, false);
    void elector.run();
  } else {
    void startControllers();
  }

  // Workers drain first, then the Lease is released so a standby takes over at once.
  life.onShutdown(async () => {
    await drain(controllers, log);
    await elector?.release();
    informers.stop();
    await Promise.all([closeServer(health), closeServer(metricsServer)]);
    client.close();
  });
  return life.exited;
}

async function drain(controllers: RunnableController[], log: Logger): Promise<void> {
  const stopped = Promise.all(controllers.map((c) => c.stop())).then(() => true);
  const inTime = await Promise.race([stopped, sleep(SYSTEM_CLOCK, DRAIN_TIMEOUT_MS).then(() => false)]);
  if (!inTime) log.warn({ timeoutMs: DRAIN_TIMEOUT_MS }, 'reconciles still running at the drain deadline; leaving them');
}

/** --leader-election-namespace, else the pod's namespace, else the install's default namespace. */
function leaseNamespace(flags: OperatorFlags): string {
  const flag = flags.string('leader-election-namespace');
  if (flag) return flag;
  try {
    const ns = fs.readFileSync(path.join(SERVICE_ACCOUNT_DIR, 'namespace'), 'utf8').trim();
    if (ns) return ns;
  } catch {
    // Not in a pod.
  }
  return DEFAULT_SYSTEM_NAMESPACE;
}

/** A cache this long without a working list or watch is stale enough to say so on /readyz. */
export const DISCONNECTED_NOT_READY_MS = 30_000;

/** Readiness's word on the watches: which caches cannot reach the API server, and for how long. */
export function watchHealth(informers: InformerFactory): string | undefined {
  const stale = informers.disconnected(DISCONNECTED_NOT_READY_MS);
  if (stale.length === 0) return undefined;
  return `lists and watches failing: ${stale.map((d) => `${d.resource} for ${Math.round(d.forMs / 1000)}s`).join(', ')}`;
}
