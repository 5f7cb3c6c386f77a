/**
 * The router's Prometheus series under upstream's names (sandbox-router/ in
 * kubernetes-sigs/agent-sandbox), so its dashboards work unchanged.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { BuildInfo } from '../runtime/metrics';

const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 180];

export type UpstreamErrorReason = 'dial' | 'timeout' | 'eof' | 'other';
export type TokenReviewOutcome = 'authenticated' | 'unauthenticated' | 'error' | 'throttled';
/** What a resume patch came to: accepted, or refused/failed by the API server. */
export type ResumeOutcome = 'resumed' | 'failed';
/** How a request held for a resume ended: served, the bound ran out (503 SandboxResuming), or the client left / the router closed. */
export type ResumeWaitOutcome = 'served' | 'timeout' | 'aborted';
/** Why a last-activity stamp was written: a request admitted, a connection still open, a process the runtime still runs. */
export type StampSource = 'request' | 'connection' | 'process';

/** Resumes take seconds (a new Pod): finer buckets at the low end would say nothing. */
const RESUME_WAIT_BUCKETS = [0.1, 0.25, 0.5, 1, 2, 3, 5, 7.5, 10, 15, 20, 30, 45, 60, 90, 120];

/** Methods that get a label value of their own; any other is counted as `other` (an HTTP/2 `:method` can be any token). */
const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'CONNECT', 'TRACE']);

export function methodLabel(method: string): string {
  return KNOWN_METHODS.has(method) ? method : 'other';
}

export class RouterMetrics {
  public readonly registry = new Registry();
  private readonly requests: Counter<'method' | 'code' | 'sandbox_namespace'>;
  private readonly duration: Histogram<'method' | 'code' | 'sandbox_namespace'>;
  private readonly inflight: Gauge;
  private readonly upstreamErrors: Counter<'sandbox_namespace' | 'reason'>;
  private readonly authz: Counter<'sandbox_namespace' | 'decision'>;
  private readonly rejected: Counter<'sandbox_namespace' | 'scope'>;
  private readonly retries: Counter<'sandbox_namespace'>;
  private readonly readyWaits: Counter<'sandbox_namespace' | 'outcome'>;
  private readonly tokenReviews: Counter<'result'>;
  private readonly connectionsRefused: Counter<'reason'>;
  private readonly resumes: Counter<'sandbox_namespace' | 'outcome'>;
  private readonly resumeWaits: Histogram<'sandbox_namespace' | 'outcome'>;
  private readonly stamps: Counter<'sandbox_namespace' | 'source'>;

  public constructor(build?: BuildInfo, defaults = true) {
    const registers = [this.registry];
    if (defaults) collectDefaultMetrics({ register: this.registry });
    const info = new Gauge({ name: 'sandbox_router_build_info', help: 'Build information of the running router; always 1.', labelNames: ['git_version', 'git_commit', 'build_date', 'node_version'], registers, aggregator: 'first' });
    if (build) info.set({ git_version: build.version, git_commit: build.gitCommit, build_date: build.buildDate, node_version: process.version }, 1);
    const labels = ['method', 'code', 'sandbox_namespace'] as const;
    this.requests = new Counter({ name: 'sandbox_router_requests_total', help: 'Requests handled by the router.', labelNames: labels, registers });
    this.duration = new Histogram({ name: 'sandbox_router_request_duration_seconds', help: 'Time from request to the end of the response (upgrades: to the 101).', labelNames: labels, buckets: DURATION_BUCKETS, registers });
    this.inflight = new Gauge({ name: 'sandbox_router_inflight_requests', help: 'Requests and upgraded connections in flight.', registers });
    this.upstreamErrors = new Counter({ name: 'sandbox_router_upstream_errors_total', help: 'Failures talking to a sandbox.', labelNames: ['sandbox_namespace', 'reason'], registers });
    this.authz = new Counter({ name: 'sandbox_router_authz_decisions_total', help: 'Authorization decisions.', labelNames: ['sandbox_namespace', 'decision'], registers });
    this.retries = new Counter({ name: 'sandbox_router_upstream_retries_total', help: 'Connection attempts repeated after a dial failure.', labelNames: ['sandbox_namespace'], registers });
    this.readyWaits = new Counter({
      name: 'sandbox_router_ready_waits_total',
      help: 'Requests that waited for the caches to show their sandbox serving (outcome waited: it did; timeout: --ready-wait or the request\'s own timeout ran out; aborted: the client left or the router closed first).',
      labelNames: ['sandbox_namespace', 'outcome'],
      registers,
    });
    this.tokenReviews = new Counter({
      name: 'sandbox_router_token_reviews_total',
      help: 'Tokens not in the cache: reviewed (result authenticated, unauthenticated or error) or refused without a review (throttled).',
      labelNames: ['result'],
      registers,
    });
    this.connectionsRefused = new Counter({
      name: 'sandbox_router_connections_refused_total',
      help: 'Client connections closed by a limit before any request was read (reason per-client: over --max-connections-per-client; resets: an HTTP/2 connection resetting too many unanswered streams).',
      labelNames: ['reason'],
      registers,
    });
    this.resumes = new Counter({
      name: 'sandbox_router_resumes_total',
      help: 'Resumes of an idle-suspended Sandbox started by a request (one per patch, however many requests share it): outcome resumed (patch accepted) or failed.',
      labelNames: ['sandbox_namespace', 'outcome'],
      registers,
    });
    this.resumeWaits = new Histogram({
      name: 'sandbox_router_resume_wait_seconds',
      help: 'Time a request for a suspended Sandbox was held for its resume, until served, the bound (--resume-wait, X-Sandbox-Timeout) ran out (timeout), or the client left (aborted).',
      labelNames: ['sandbox_namespace', 'outcome'],
      buckets: RESUME_WAIT_BUCKETS,
      registers,
    });
    this.stamps = new Counter({
      name: 'sandbox_router_activity_stamps_total',
      help: 'Last-activity stamps written on Sandboxes with an idle policy, by source (request, connection held open, process running in the runtime).',
      labelNames: ['sandbox_namespace', 'source'],
      registers,
    });
    this.rejected = new Counter({ name: 'sandbox_router_limit_rejections_total', help: 'Requests answered 429 by a concurrency limit (scope sandbox or total).', labelNames: ['sandbox_namespace', 'scope'], registers });
  }

  /** `namespace`: empty unless the request was authorized (label values must not come from unauthenticated input). */
  public observe(method: string, code: number, namespace: string, seconds: number): void {
    const labels = { method: methodLabel(method), code: String(code), sandbox_namespace: namespace };
    this.requests.inc(labels);
    this.duration.observe(labels, seconds);
  }

  public inflightDelta(delta: number): void {
    this.inflight.inc(delta);
  }

  public upstreamError(namespace: string, reason: UpstreamErrorReason): void {
    this.upstreamErrors.inc({ sandbox_namespace: namespace, reason });
  }

  /** `namespace` only for an allowed request; a denied one is counted under the empty namespace. */
  public authzDecision(namespace: string, allowed: boolean): void {
    this.authz.inc({ sandbox_namespace: allowed ? namespace : '', decision: allowed ? 'allow' : 'deny' });
  }

  public upstreamRetry(namespace: string): void {
    this.retries.inc({ sandbox_namespace: namespace });
  }

  public readyWait(namespace: string, outcome: 'waited' | 'timeout' | 'aborted'): void {
    this.readyWaits.inc({ sandbox_namespace: namespace, outcome });
  }

  public connectionRefused(reason: 'per-client' | 'resets'): void {
    this.connectionsRefused.inc({ reason });
  }

  public tokenReview(result: TokenReviewOutcome): void {
    this.tokenReviews.inc({ result });
  }

  public resumeStarted(namespace: string, outcome: ResumeOutcome): void {
    this.resumes.inc({ sandbox_namespace: namespace, outcome });
  }

  public resumeWaited(namespace: string, outcome: ResumeWaitOutcome, seconds: number): void {
    this.resumeWaits.observe({ sandbox_namespace: namespace, outcome }, seconds);
  }

  public activityStamped(namespace: string, source: StampSource): void {
    this.stamps.inc({ sandbox_namespace: namespace, source });
  }

  public limitRejected(namespace: string, scope: 'sandbox' | 'total'): void {
    this.rejected.inc({ sandbox_namespace: namespace, scope });
  }
}
