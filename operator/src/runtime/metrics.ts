/**
 * Prometheus metrics under controller-runtime's and client-go's names and buckets, so the
 * dashboards and alerts written for upstream's Go controller work unchanged, plus the operator's
 * own informer series and `agent_sandbox_build_info`.
 */
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { InformerMetrics } from './informer';
import { ClientMetrics } from './kube-client';
import { WorkQueueMetrics } from './workqueue';

/** Hooks the controller runner reports to. */
export interface ControllerMetrics {
  reconciled(result: 'success' | 'error' | 'requeue' | 'requeue_after', seconds: number): void;
  activeWorkers(delta: number): void;
  maxWorkers(count: number): void;
}

export interface BuildInfo {
  readonly version: string;
  readonly gitCommit: string;
  readonly buildDate: string;
}

// controller-runtime's reconcile_time_seconds buckets (pkg/internal/controller/metrics).
const RECONCILE_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1,
  1.25, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60];
// client-go workqueue: ExponentialBuckets(10e-9, 10, 12).
const QUEUE_BUCKETS = Array.from({ length: 12 }, (_, i) => 1e-8 * 10 ** i);
// Event-loop delays: from a normal 10 ms timer tick to stalls of several seconds.
const LOOP_LAG_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** How often the longest event-loop delay of the past window is observed. */
export const LOOP_LAG_WINDOW_MS = 1000;
/** A window whose longest event-loop delay reaches this goes to `onLongLoopLag` (the operator logs it at info). */
export const LONG_LOOP_LAG_MS = 200;
// client-go rest_client_request_duration_seconds.
const REQUEST_BUCKETS = [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60];

export class OperatorMetrics {
  public readonly registry = new Registry();
  private readonly reconcileTotal: Counter<'controller' | 'result'>;
  private readonly reconcileErrors: Counter<'controller'>;
  private readonly reconcileTime: Histogram<'controller'>;
  private readonly activeWorkersGauge: Gauge<'controller'>;
  private readonly maxWorkersGauge: Gauge<'controller'>;
  private readonly depth: Gauge<'controller' | 'name'>;
  private readonly adds: Counter<'controller' | 'name'>;
  private readonly retries: Counter<'controller' | 'name'>;
  private readonly queueDuration: Histogram<'controller' | 'name'>;
  private readonly workDuration: Histogram<'controller' | 'name'>;
  private readonly requests: Counter<'code' | 'method' | 'host'>;
  private readonly requestLatency: Histogram<'verb'>;
  private readonly rateLimiterLatency: Histogram<'verb'>;
  private readonly backgroundCap: Gauge;
  private readonly eventHandling: Histogram<'resource'>;
  private readonly watchRestarts: Counter<'resource' | 'reason'>;
  private readonly relists: Counter<'resource'>;
  private readonly leader: Gauge<'name'>;
  private readonly informerSizes = new Map<string, () => number>();
  private readonly loopLagTimer: ReturnType<typeof setInterval>;
  private readonly loopDelays = monitorEventLoopDelay({ resolution: 10 });
  private longLagListener?: (lagMs: number) => void;

  public constructor(build: BuildInfo, private readonly apiHost = '', loopLagWindowMs = LOOP_LAG_WINDOW_MS) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    const buildInfo = new Gauge({
      name: 'agent_sandbox_build_info',
      help: 'Build information of the running operator; always 1.',
      labelNames: ['git_version', 'git_commit', 'build_date', 'node_version', 'platform'],
      registers,
    });
    buildInfo.set({
      git_version: build.version,
      git_commit: build.gitCommit,
      build_date: build.buildDate,
      node_version: process.version,
      platform: `${process.platform}/${process.arch}`,
    }, 1);

    const c = ['controller'] as const;
    this.reconcileTotal = new Counter({ name: 'controller_runtime_reconcile_total', help: 'Total number of reconciliations per controller', labelNames: ['controller', 'result'], registers });
    this.reconcileErrors = new Counter({ name: 'controller_runtime_reconcile_errors_total', help: 'Total number of reconciliation errors per controller', labelNames: c, registers });
    this.reconcileTime = new Histogram({ name: 'controller_runtime_reconcile_time_seconds', help: 'Length of time per reconciliation per controller', labelNames: c, buckets: RECONCILE_BUCKETS, registers });
    this.activeWorkersGauge = new Gauge({ name: 'controller_runtime_active_workers', help: 'Number of currently used workers per controller', labelNames: c, registers });
    this.maxWorkersGauge = new Gauge({ name: 'controller_runtime_max_concurrent_reconciles', help: 'Maximum number of concurrent reconciles per controller', labelNames: c, registers });

    const q = ['controller', 'name'] as const;
    this.depth = new Gauge({ name: 'workqueue_depth', help: 'Current depth of workqueue', labelNames: q, registers });
    this.adds = new Counter({ name: 'workqueue_adds_total', help: 'Total number of adds handled by workqueue', labelNames: q, registers });
    this.retries = new Counter({ name: 'workqueue_retries_total', help: 'Total number of retries handled by workqueue', labelNames: q, registers });
    this.queueDuration = new Histogram({ name: 'workqueue_queue_duration_seconds', help: 'How long in seconds an item stays in workqueue before being requested', labelNames: q, buckets: QUEUE_BUCKETS, registers });
    this.workDuration = new Histogram({ name: 'workqueue_work_duration_seconds', help: 'How long in seconds processing an item from workqueue takes', labelNames: q, buckets: QUEUE_BUCKETS, registers });

    this.requests = new Counter({ name: 'rest_client_requests_total', help: 'Number of HTTP requests, partitioned by status code, method, and host', labelNames: ['code', 'method', 'host'], registers });
    this.requestLatency = new Histogram({ name: 'rest_client_request_duration_seconds', help: 'Request latency in seconds, broken down by verb', labelNames: ['verb'], buckets: REQUEST_BUCKETS, registers });
    this.rateLimiterLatency = new Histogram({ name: 'rest_client_rate_limiter_duration_seconds', help: 'Client side rate limiter latency in seconds', labelNames: ['verb'], buckets: REQUEST_BUCKETS, registers });
    this.backgroundCap = new Gauge({ name: 'agent_sandbox_client_background_in_flight_limit', help: 'Background API requests (pool refill, Events) the operator lets be in flight now; follows the write latency the API server answers with', registers });

    const sizes = this.informerSizes;
    this.watchRestarts = new Counter({ name: 'agent_sandbox_informer_watch_restarts_total', help: 'Watches reopened, by reason (closed, gone, stalled, peer-stalled: another informer\'s watch stalled, error, error-event, list-error)', labelNames: ['resource', 'reason'], registers });
    this.relists = new Counter({ name: 'agent_sandbox_informer_relists_total', help: 'Full lists by an informer (start-up and after 410 Gone)', labelNames: ['resource'], registers });
    this.eventHandling = new Histogram({
      name: 'agent_sandbox_informer_event_handling_seconds',
      help: 'Time to apply one watch event: transform, cache update and handlers (queue adds); the wait in the queue after it is workqueue_queue_duration_seconds',
      labelNames: ['resource'],
      buckets: [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1],
      registers,
    });
    new Gauge({
      name: 'agent_sandbox_informer_objects',
      help: 'Objects in an informer cache',
      labelNames: ['resource'],
      registers,
      // Read on scrape: no bookkeeping on the event path.
      collect() {
        for (const [resource, size] of sizes) this.set({ resource }, size());
      },
    });
    // prom-client's nodejs_eventloop_lag_* gauges show one scrape interval each; this histogram
    // keeps every window, so stalls between scrapes are counted and rates work over any range.
    const loopLag = new Histogram({
      name: 'agent_sandbox_operator_event_loop_lag_seconds',
      help: `Longest event-loop delay in each ${loopLagWindowMs / 1000}s window (perf_hooks.monitorEventLoopDelay, and the window timer's own lateness), one observation per window`,
      buckets: LOOP_LAG_BUCKETS,
      registers,
    });
    const delays = this.loopDelays;
    delays.enable();
    let windowStart = performance.now();
    this.loopLagTimer = setInterval(() => {
      // The window's own timer is late by a stall too: it covers a stall the sampler splits across
      // a reset (the sampler drops the delta that spans one).
      const now = performance.now();
      const late = Math.max(0, now - windowStart - loopLagWindowMs) * 1e6;
      windowStart = now;
      const lagNs = Math.max(late, delays.count > 0 ? delays.max : 0);
      loopLag.observe(lagNs / 1e9);
      delays.reset();
      if (lagNs >= LONG_LOOP_LAG_MS * 1e6) {
        try {
          this.longLagListener?.(Math.round(lagNs / 1e6));
        } catch {
          // A report must not take the process down from inside a timer.
        }
      }
    }, loopLagWindowMs);
    this.loopLagTimer.unref();
    this.leader = new Gauge({ name: 'leader_election_master_status', help: 'Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master.', labelNames: ['name'], registers });
  }

  /** Call `fn` with the lag of each window whose longest event-loop delay reached LONG_LOOP_LAG_MS. */
  public onLongLoopLag(fn: (lagMs: number) => void): void {
    this.longLagListener = fn;
  }

  public controller(name: string): ControllerMetrics {
    const labels = { controller: name };
    return {
      reconciled: (result, seconds) => {
        this.reconcileTotal.inc({ ...labels, result });
        if (result === 'error') this.reconcileErrors.inc(labels);
        this.reconcileTime.observe(labels, seconds);
      },
      activeWorkers: (delta) => this.activeWorkersGauge.inc(labels, delta),
      maxWorkers: (count) => this.maxWorkersGauge.set(labels, count),
    };
  }

  public workQueue(controller: string): WorkQueueMetrics {
    const labels = { controller, name: controller };
    return {
      depth: (n) => this.depth.set(labels, n),
      added: () => this.adds.inc(labels),
      retried: () => this.retries.inc(labels),
      queuedFor: (ms) => this.queueDuration.observe(labels, ms / 1000),
      workedFor: (ms) => this.workDuration.observe(labels, ms / 1000),
    };
  }

  public get client(): ClientMetrics {
    return {
      request: (verb, code, ms) => {
        this.requests.inc({ code, method: verb === 'LIST' || verb === 'WATCH' ? 'GET' : verb, host: this.apiHost });
        this.requestLatency.observe({ verb }, ms / 1000);
      },
      throttled: (ms) => this.rateLimiterLatency.observe({ verb: '' }, ms / 1000),
      backgroundLimit: (n) => this.backgroundCap.set(n),
    };
  }

  public informer(resource: string): InformerMetrics {
    return {
      watchRestarted: (reason) => this.watchRestarts.inc({ resource, reason }),
      relisted: () => this.relists.inc({ resource }),
      eventHandled: (ms) => this.eventHandling.observe({ resource }, ms / 1000),
    };
  }

  /** Report an informer's cache size on scrape. */
  public trackInformerSize(resource: string, size: () => number): void {
    this.informerSizes.set(resource, size);
  }

  /** Stop sampling the event loop (the sampler never keeps the process alive). */
  public close(): void {
    clearInterval(this.loopLagTimer);
    this.loopDelays.disable();
  }

  public setLeader(lease: string, leading: boolean): void {
    this.leader.set({ name: lease }, leading ? 1 : 0);
  }
}
