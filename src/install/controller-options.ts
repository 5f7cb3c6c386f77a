import { Duration } from 'cdk8s';

/** Log levels of the operator (`--log-level`). */
export enum ControllerLogLevel {
  DEBUG = 'debug',
  INFO = 'info',
  WARN = 'warn',
  ERROR = 'error',
}

/**
 * The operator's command-line flags as typed options; each field is the camelCase of the flag
 * (`sandboxConcurrentWorkers` → `--sandbox-concurrent-workers`). Only values that differ from the
 * operator's defaults are rendered. `--extensions` follows `AgentSandboxSystemProps.extensions`.
 */
export interface ControllerOptions {
  /** `--metrics-bind-address`; its port becomes the container and metrics Service port. @default ":8080" */
  readonly metricsBindAddress?: string;
  /** `--health-probe-bind-address`; its port serves the liveness and readiness probes. @default ":8081" */
  readonly healthProbeBindAddress?: string;
  /** `--leader-elect`: only the Lease holder reconciles. Required when `replicas` > 1. @default true */
  readonly leaderElect?: boolean;
  /** `--leader-election-namespace`; the leader-election Role is created there. @default - the install namespace */
  readonly leaderElectionNamespace?: string;
  /** `--cluster-domain`, used in `status.serviceFQDN`. @default "cluster.local" */
  readonly clusterDomain?: string;
  /** `--kube-api-qps`; negative disables client-side throttling (API Priority and Fairness still applies). @default -1 */
  readonly kubeApiQps?: number;
  /** `--kube-api-burst`, > 0; ignored while `kubeApiQps` is negative. @default 10 */
  readonly kubeApiBurst?: number;
  /**
   * `--kube-api-max-in-flight` (ours, not upstream's): most API requests in flight at once; the rest
   * wait in the operator, the writes a waiting claim needs first, pool refill and Events last, so a
   * refill burst cannot queue ahead of claims in the API server. 0 sends everything at once.
   * @default 32
   */
  readonly kubeApiMaxInFlight?: number;
  /** `--sandbox-concurrent-workers`, > 0. @default 100 */
  readonly sandboxConcurrentWorkers?: number;
  /** `--sandbox-claim-concurrent-workers`, > 0. @default 50 */
  readonly sandboxClaimConcurrentWorkers?: number;
  /** `--sandbox-warm-pool-concurrent-workers`, > 0. @default 1 */
  readonly sandboxWarmPoolConcurrentWorkers?: number;
  /** `--sandbox-template-concurrent-workers`, > 0. @default 1 */
  readonly sandboxTemplateConcurrentWorkers?: number;
  /**
   * `--sandbox-progress-status-window` (ours, not upstream's): how long a Sandbox's not-yet-Ready
   * progress status may wait to be written. A Sandbox whose Pod is Ready within the window gets one
   * status write instead of three; readiness, errors and suspension are always written at once.
   * `Duration.seconds(0)` writes every change at once.
   * @default Duration.seconds(1)
   */
  readonly sandboxProgressStatusWindow?: Duration;
  /**
   * `--sandbox-warm-member-progress-window` (ours, not upstream's): the same window for an
   * unclaimed warm pool member. No client waits on a member that is not Ready yet (claims take
   * Ready members only), so a member Ready within it costs one status write: its create, its Pod's
   * create and one status write are all a refill needs. An unschedulable Pod is written at once
   * (the pool acts on it). `Duration.seconds(0)` uses `sandboxProgressStatusWindow`.
   * @default Duration.seconds(10)
   */
  readonly sandboxWarmMemberProgressWindow?: Duration;
  /**
   * `--claims-first-max-defer` (ours, not upstream's): while claims wait for a Sandbox, how long
   * work that does not serve them may wait, so the API server sees the claims' writes first: a
   * claimed Pod's relabel, status rewrites that change only observedGeneration, claim
   * observability annotations and Events, and pool refill while the pool's Ready members cover the
   * claims waiting on it. The work runs when no claim waits, or after this long at the latest.
   * `Duration.seconds(0)` defers nothing.
   * @default Duration.seconds(5)
   */
  readonly claimsFirstMaxDefer?: Duration;
  /** `--sandbox-warm-pool-max-batch-size`: most creates or deletes per pool pass, > 0. @default 300 */
  readonly sandboxWarmPoolMaxBatchSize?: number;
  /**
   * `--sandbox-warm-pool-replenish-delay`: wait before replacing claimed members. Under sustained
   * claim arrivals a delay can drain the pool; leave it at zero unless refill bursts hurt.
   * @default Duration.seconds(0)
   */
  readonly sandboxWarmPoolReplenishDelay?: Duration;
  /** `--sandbox-warm-pool-max-refill-rate`: sandboxes per second per pool, finite ≥ 0; 0 = unpaced. @default 0 */
  readonly sandboxWarmPoolMaxRefillRate?: number;
  /**
   * `--sandbox-warm-pool-status-window` (ours, not upstream's): a change of a pool's replica counts
   * alone waits until this long after the pool's previous status write and goes out as one write, so
   * `readyReplicas` is at most this late; conditions are written at once. `Duration.seconds(0)`
   * writes every change at once.
   * @default Duration.seconds(1)
   */
  readonly sandboxWarmPoolStatusWindow?: Duration;
  /** `--sandbox-warm-pool-readiness-grace-period`, > 0. @default Duration.minutes(5) */
  readonly sandboxWarmPoolReadinessGracePeriod?: Duration;
  /** `--sandbox-warm-pool-unschedulable-recheck-interval`, > 0. @default Duration.minutes(1) */
  readonly sandboxWarmPoolUnschedulableRecheckInterval?: Duration;
  /** `--enable-warm-pool-eviction`: warm pods are marked safe to evict for the cluster autoscaler. @default true */
  readonly enableWarmPoolEviction?: boolean;
  /** `--cache-label-selectors`: cache only Pods and Services that carry the sandbox tracking label. @default false */
  readonly cacheLabelSelectors?: boolean;
  /** `--disable-claim-events`. @default false */
  readonly disableClaimEvents?: boolean;
  /** `--disable-claim-observability-annotations`. @default false */
  readonly disableClaimObservabilityAnnotations?: boolean;
  /**
   * `--router-namespace` (ours, not upstream's): where the router Pods run, which the default
   * per-template NetworkPolicy admits. Set by `AgentSandboxSystem` when it deploys the router; set it
   * yourself only for a router deployed elsewhere.
   * @default - the operator's own namespace
   */
  readonly routerNamespace?: string;
  /**
   * `--router-pod-labels` (ours): labels of the router Pods the default per-template NetworkPolicy
   * admits. Set by `AgentSandboxSystem` from `router.podLabels` when it deploys the router.
   * @default { app: 'sandbox-router' }
   */
  readonly routerPodLabels?: { [key: string]: string };
  /**
   * `--cluster-cidrs` (ours): the cluster's own address ranges (Pods, Services, nodes, the API
   * server's address) that lie outside the private ranges (RFC 1918, link-local, CGNAT). The default
   * per-template NetworkPolicy allows egress to the public internet, which upstream defines as
   * everything but those private ranges; on a cluster whose Pod or Service range is elsewhere (public
   * space, RFC 2544's 198.18.0.0/15), list it here, or sandboxes can reach other Pods and the API server.
   * It reaches the policy the operator writes for a Managed template without custom rules; rules you
   * render yourself (`network.egress` with `SandboxPeer.publicInternet()`) must leave those ranges out
   * themselves, e.g. with `SandboxPeer.ipBlock('0.0.0.0/0', [...])`.
   * @default - none
   */
  readonly clusterCidrs?: string[];
  /** `--log-level`. @default ControllerLogLevel.INFO */
  readonly logLevel?: ControllerLogLevel;
  /** `--kubeconfig`; in a cluster the pod's service account is used. @default - in-cluster config */
  readonly kubeconfig?: string;
}
