/**
 * `agent-sandbox-operator router [flags]`: the data-plane reverse proxy in front of the sandboxes.
 * Stateless: it routes from informer caches of Sandboxes and their Pods, so any number of replicas
 * can run. HTTP/1.1 (and WebSocket) and h2c (gRPC) share the proxy port. Ready once the caches
 * have synced; on SIGTERM readiness fails, the listener stops accepting (HTTP/2 clients get a
 * GOAWAY), and in-flight requests and streams get a bounded time to finish.
 *
 * It writes too, to Sandboxes with an idle policy only: last-activity stamps for the requests,
 * connections and runtime processes it sees, and the resume of a suspended one a request asks for.
 */
import * as fs from 'node:fs';
import type { AddressInfo, Server } from 'node:net';
import * as os from 'node:os';
import { SandboxLabels } from '#api/labels';
import { RESOURCES, type Pod, type Sandbox, slimPod } from '../model';
import { ActivityTracker } from '../router/activity';
import { ALLOW_ALL, type Authorizer, KubeReviewer, KubernetesAuthorizer, StaticTokenAuthorizer } from '../router/auth';
import { parseRouterArgs, type RouterFlags, routerUsage, splitList } from '../router/flags';
import { AddressGuard } from '../router/guard';
import { H2Proxy } from '../router/h2';
import { ProxyListener } from '../router/listener';
import { RouterMetrics } from '../router/metrics';
import { processProbe } from '../router/process-probe';
import { Router } from '../router/proxy';
import { POD_NAME_HASH_INDEX, podNameHashIndex, Resolver } from '../router/resolve';
import { Resumer } from '../router/resume';
import { isRouterWorker, primaryStopRequest, runPrimary, serveMetricsToPrimary, workerCount } from '../router/workers';
import { buildInfo, userAgent } from '../runtime/build-info';
import { SYSTEM_CLOCK, sleep } from '../runtime/clock';
import { loadClusterConnection } from '../runtime/cluster-config';
import type { ClusterConnection } from '../runtime/connection';
import { closeServer, listen, listenOn, type ListenAddress, metricsHandler, parseBindAddress, probesHandler } from '../runtime/http';
import { InformerFactory } from '../runtime/informer-factory';
import { HttpKubeClient } from '../runtime/kube-client';
import { ProcessLifecycle } from '../runtime/lifecycle';
import { createLogger, type Logger } from '../runtime/log';
import type { BuildInfo } from '../runtime/metrics';

/** Longest wait for in-flight requests at shutdown. */
const DRAIN_TIMEOUT_MS = 10_000;
/** A runtime asked for its processes answers from memory: one slower than this is treated as running none. */
const PROCESS_PROBE_TIMEOUT_MS = 2_000;

export async function runRouter(args: readonly string[]): Promise<number> {
  const parsed = parseRouterArgs(args);
  if (parsed.help) {
    process.stdout.write(`${routerUsage()}\n`);
    return 0;
  }
  const flags = parsed.flags;
  const build = buildInfo();
  const workers = workerCount(flags.number('workers'));
  const worker = isRouterWorker();
  // Listened for at once: the primary may ask a worker to stop while it is still starting.
  const stopRequested = worker ? primaryStopRequest() : undefined;
  const log = createLogger(flags.string('log-level'), { component: 'router', ...(worker ? { worker: process.pid } : {}) });
  if (workers > 1 && !worker) {
    log.info({ version: build.version, flags: flags.nonDefaults() }, 'starting the router');
    return runPrimary({ workers, metricsBindAddress: flags.string('metrics-bind-address'), log });
  }
  const connection = await loadClusterConnection({ kubeconfig: flags.string('kubeconfig'), log });
  log.info({ version: build.version, apiServer: connection.server, credentials: connection.source, flags: flags.nonDefaults() }, 'starting the router');

  const client = new HttpKubeClient({ connection, userAgent: userAgent(build), log, maxSockets: 16 });
  const metrics = new RouterMetrics(build);
  // A worker's series are summed and served by its primary.
  if (worker) serveMetricsToPrimary(metrics.registry);
  const authorizer = makeAuthorizer(flags, connection, build, log, metrics);
  if (flags.string('auth') === 'none') log.warn('--auth=none: anyone who reaches the router can use every sandbox it routes to');

  const namespace = flags.string('namespace') || undefined;
  const informers = new InformerFactory(client, { log });
  const sandboxes = informers.forResource<Sandbox>(RESOURCES.sandboxes, { namespace });
  const pods = informers.forResource<Pod>(RESOURCES.pods, {
    namespace, labelSelector: SandboxLabels.SANDBOX_NAME_HASH, transform: slimPod, indexes: { [POD_NAME_HASH_INDEX]: podNameHashIndex },
  });
  const guard = new AddressGuard(splitList(flags.string('allowed-pod-cidrs')));
  const resolver = new Resolver(sandboxes, pods);
  // Writes (stamps, resumes) on a client of their own, so they never queue behind informer lists.
  const writes = new HttpKubeClient({ connection, userAgent: userAgent(build), log, maxSockets: 8 });
  const resumer = new Resumer({ client: writes, sandboxes, waitMs: flags.number('resume-wait'), log, metrics });
  const activity: ActivityTracker = new ActivityTracker({
    sandboxes,
    client: writes,
    log,
    metrics,
    // `router` is set by the time a probe runs (timers fire after start-up).
    probe: processProbe({
      dial: (host, port) => router.dial(host, port),
      resolve: (s) => resolver.resolve({ namespace: s.metadata.namespace!, id: s.metadata.name }),
      timeoutMs: PROCESS_PROBE_TIMEOUT_MS,
    }),
  });
  const router: Router = new Router({
    resolver,
    resumer,
    activity,
    guard,
    authorizer,
    log,
    metrics,
    proxyTimeoutMs: flags.number('proxy-timeout'),
    readyWaitMs: flags.number('ready-wait'),
    pathRoutingPrefix: flags.string('path-routing-prefix'),
    maxConnectionsPerSandbox: flags.number('max-connections-per-sandbox'),
    maxConnections: flags.number('max-connections'),
    cachesSynced: () => informers.hasSynced,
    accessLog: flags.bool('access-log'),
  });

  const life = new ProcessLifecycle(log);
  void stopRequested?.then((why) => life.requestShutdown(why));

  informers.start();
  const health = await listen(flags.string('health-probe-bind-address'), probesHandler({
    liveness: () => undefined,
    readiness: () => (life.shuttingDown ? 'draining' : !informers.hasSynced ? 'caches have not synced yet' : undefined),
  }), log, 'health probes');
  const metricsServer = worker ? undefined : await listen(flags.string('metrics-bind-address'), metricsHandler(metrics.registry), log, 'metrics');
  const h2 = new H2Proxy(router);
  let lastRefusalLog = 0;
  const proxy = new ProxyListener({}, {
    maxConnectionsPerClient: flags.number('max-connections-per-client'),
    h2IdleTimeoutMs: flags.number('h2-idle-timeout'),
    maxResetsPer10s: flags.number('h2-max-resets-per-10s'),
    onRefused: (reason) => {
      metrics.connectionRefused(reason);
      // At most one line a minute: a flood must not flood the log too.
      if (Date.now() - lastRefusalLog > 60_000) {
        lastRefusalLog = Date.now();
        log.warn({ reason }, 'closed a client connection at a limit (sandbox_router_connections_refused_total counts them all)');
      }
    },
  });
  router.attach(proxy.http1);
  h2.attach(proxy.http2);
  const bind = parseBindAddress(flags.string('bind-address'));
  if (!bind) throw new Error('--bind-address cannot be "0": the proxy is the router\'s reason to run');
  life.onShutdown(async () => {
    log.info({ open: router.openConnections }, 'no new connections; draining');
    const closed = proxy.close();
    await Promise.race([closed, sleep(SYSTEM_CLOCK, DRAIN_TIMEOUT_MS)]);
    proxy.closeAllConnections();
    router.close();
    activity.stop();
    resumer.close();
    h2.close();
    informers.stop();
    await Promise.all([closeServer(health), closeServer(metricsServer)]);
    client.close();
    writes.close();
  });
  // A worker takes connections once its caches have synced: the primary hands them only to workers
  // that listen, so a late worker never answers 503 beside a ready one. A shutdown ends the wait.
  if (worker) await Promise.race([informers.synced(), life.exited]);
  if (life.shuttingDown) return life.exited;
  // "serving proxy": tests and tools find the port by that message. HTTP/1.1, upgrades and h2c share it.
  await listenOn(proxy.server, bind, log, 'proxy');
  for (const server of [proxy.server, health, metricsServer]) for (const ip of ownAddresses(server)) guard.addOwnAddress(ip);
  if (worker) for (const ip of boundAddresses(parseBindAddress(flags.string('metrics-bind-address')))) guard.addOwnAddress(ip);
  void informers.synced().then(() => log.info('caches synced; ready'));

  return life.exited;
}

function makeAuthorizer(flags: RouterFlags, connection: ClusterConnection, build: BuildInfo, log: Logger, metrics: RouterMetrics): Authorizer {
  const mode = flags.string('auth');
  if (mode === 'none') return ALLOW_ALL;
  if (mode === 'token') return new StaticTokenAuthorizer(fs.readFileSync(flags.string('auth-token-file'), 'utf8'));
  const qps = flags.number('auth-review-qps');
  const clientQps = flags.number('auth-review-qps-per-client');
  // Reviews have a client (and sockets) of their own: a slow API server must not queue informer re-lists behind them.
  const reviews = new HttpKubeClient({ connection, userAgent: userAgent(build), log, maxSockets: 16 });
  return new KubernetesAuthorizer(new KubeReviewer(reviews, flags.number('auth-review-timeout')), {
    ttlMs: flags.number('auth-cache-ttl'),
    maxEntries: flags.number('auth-cache-size'),
    maxNegativeEntries: flags.number('auth-cache-size'),
    reviewQps: qps,
    reviewBurst: 2 * qps,
    clientReviewQps: clientQps,
    clientReviewBurst: 4 * clientQps,
    reviewTimeoutMs: flags.number('auth-review-timeout'),
    audience: flags.string('auth-audience'),
    acceptApiTokens: flags.bool('auth-api-tokens'),
    onTokenReview: (outcome) => metrics.tokenReview(outcome),
  });
}

/** The addresses a server accepts connections on (every interface's, when bound to all). */
function ownAddresses(server: Server | undefined): string[] {
  if (!server) return [];
  return boundAddresses({ host: (server.address() as AddressInfo).address, port: 0 });
}

/** The addresses a bind address accepts connections on (the primary's metrics port, seen from a worker). */
function boundAddresses(bind: ListenAddress | undefined): string[] {
  if (!bind) return [];
  if (bind.host !== undefined && bind.host !== '::' && bind.host !== '0.0.0.0') return [bind.host];
  return Object.values(os.networkInterfaces()).flatMap((list) => (list ?? []).map((i) => i.address));
}
