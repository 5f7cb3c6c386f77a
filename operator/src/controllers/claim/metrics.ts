/**
 * The claim metrics under upstream's names, labels and buckets (internal/metrics/ in
 * kubernetes-sigs/agent-sandbox), so dashboards and HPA recipes written for the Go controller work
 * unchanged:
 * - the three claim startup-latency histograms, observed once per claim in the pass that first
 *   persists Ready=True, each from its own start annotation;
 * - `agent_sandbox_claim_creation_total`, on every warm adoption and cold create.
 */
import { Counter, Histogram, type Registry } from 'prom-client';
import { SandboxAnnotations, SandboxLabels } from '#api/labels';
import { isReady, type Sandbox, type SandboxClaim } from '../../model';

/** Upstream's claim-latency buckets, in milliseconds. */
export const CLAIM_LATENCY_BUCKETS_MS = [100, 250, 500, 750, 1000, 1250, 1500, 2000, 2500, 5000, 10000, 30000, 60000, 120000, 240000];

/** The `sandbox_template` value when a Sandbox does not say which template it came from. */
export const UNKNOWN_TEMPLATE = '__unknown__';

type LatencyLabels = 'launch_type' | 'sandbox_template';

export class ClaimMetrics {
  private readonly webhook: Histogram<LatencyLabels>;
  private readonly controller: Histogram<LatencyLabels>;
  private readonly client: Histogram<LatencyLabels>;
  private readonly creations: Counter<'namespace' | 'sandbox_template' | 'launch_type' | 'warmpool_name' | 'pod_condition' | 'created_by'>;

  public constructor(registry: Registry) {
    const registers = [registry];
    const labelNames = ['launch_type', 'sandbox_template'] as const;
    const buckets = CLAIM_LATENCY_BUCKETS_MS;
    this.webhook = new Histogram({ name: 'agent_sandbox_claim_startup_latency_ms', help: 'Claim startup latency from the webhook\'s first observation to Ready, in milliseconds', labelNames, buckets, registers });
    this.controller = new Histogram({ name: 'agent_sandbox_claim_controller_startup_latency_ms', help: 'Claim startup latency from the controller\'s first observation to Ready, in milliseconds', labelNames, buckets, registers });
    this.client = new Histogram({ name: 'agent_sandbox_client_claim_startup_latency_ms', help: 'Claim startup latency from the client\'s request to Ready, in milliseconds', labelNames, buckets, registers });
    this.creations = new Counter({
      name: 'agent_sandbox_claim_creation_total',
      help: 'Sandboxes obtained for claims, by launch type (warm adoption or cold create)',
      labelNames: ['namespace', 'sandbox_template', 'launch_type', 'warmpool_name', 'pod_condition', 'created_by'],
      registers,
    });
  }

  /**
   * The claim's Ready=True has just been persisted for the first time, at `nowMs`. The controller
   * latency starts at the first-observed annotation, or this process's own first sighting when the
   * annotation is not written yet (it is written after the status, off the Ready path).
   */
  public firstReady(claim: SandboxClaim, sandbox: Sandbox | undefined, nowMs: number, firstObservedAtMs: number): void {
    const labels = {
      launch_type: sandbox?.metadata.labels?.[SandboxLabels.LAUNCH_TYPE] ?? '',
      sandbox_template: sandbox?.metadata.annotations?.[SandboxAnnotations.SANDBOX_TEMPLATE_REF] ?? UNKNOWN_TEMPLATE,
    };
    const annotations = claim.metadata.annotations ?? {};
    const since = (value: string | undefined) => {
      const ms = value === undefined ? NaN : Date.parse(value);
      return Number.isNaN(ms) ? undefined : nowMs - ms;
    };
    const observe = (h: Histogram<LatencyLabels>, ms: number | undefined) => {
      // Negative: clocks of the client (or webhook) and the controller disagree; upstream drops these.
      if (ms !== undefined && ms >= 0) h.observe(labels, ms);
    };
    observe(this.webhook, since(annotations[SandboxAnnotations.WEBHOOK_FIRST_OBSERVED_AT]));
    observe(this.controller, since(annotations[SandboxAnnotations.CONTROLLER_FIRST_OBSERVED_AT]) ?? nowMs - firstObservedAtMs);
    observe(this.client, since(annotations[SandboxAnnotations.CLIENT_FIRST_REQUESTED_AT]));
  }

  /** A Sandbox was obtained for `claim`: adopted from its pool (warm) or created (cold). */
  public created(claim: SandboxClaim, sandbox: Sandbox, launchType: 'warm' | 'cold'): void {
    this.creations.inc({
      namespace: claim.metadata.namespace ?? '',
      sandbox_template: sandbox.metadata.annotations?.[SandboxAnnotations.SANDBOX_TEMPLATE_REF] ?? UNKNOWN_TEMPLATE,
      launch_type: launchType,
      warmpool_name: claim.spec.warmPoolRef.name,
      pod_condition: isReady(sandbox) ? 'ready' : 'not_ready',
      created_by: claim.metadata.labels?.[SandboxLabels.CREATED_BY] ?? '',
    });
  }
}
