/**
 * The claim's observability annotations (upstream's initializeAnnotations and claim-first-ready-at
 * in extensions/controllers/sandboxclaim_controller.go): when the controller first saw it, its
 * trace context, when it first became Ready.
 *
 * Upstream writes them in two separate metadata patches, one of them before any real work, so they
 * cost two of its five writes per warm claim. Here they are one patch, written after the status
 * (off the Ready path), only when something is missing, and only once the claim is Ready (the
 * first-observed time waits in memory until then): a warm claim is then the Sandbox write, the
 * status write and at most this one (none with --disable-claim-observability-annotations), and a
 * claim that has to wait for a Sandbox does not pay a second patch.
 */
import { SandboxAnnotations } from '../../../../src/api/labels';
import { type MergePatch, rfc3339Nano, type SandboxClaim } from '../../model';

/** The value of claim-first-ready-at when the claim was already Ready before this controller saw it. */
export const FIRST_READY_UNKNOWN = 'unknown';

export interface ObservabilityInput {
  readonly claim: SandboxClaim;
  /** When this process first saw the claim (kept in memory per claim UID). */
  readonly firstObservedAtMs: number;
  /** The trace context to record, if tracing is on. */
  readonly traceContext?: string;
  /** Whether the claim was Ready before this pass, and is after it (its status write having landed). */
  readonly wasReady: boolean;
  readonly isReady: boolean;
  readonly now: number;
  /** --disable-claim-observability-annotations. */
  readonly disabled?: boolean;
}

/**
 * One metadata merge patch adding whichever annotations are missing, or undefined. A claim that
 * became Ready in this pass gets the current time as first-ready; one that was Ready already (a
 * restart missed the transition) gets `unknown`, so metrics never record a made-up latency.
 */
export function observabilityPatch(input: ObservabilityInput): MergePatch | undefined {
  if (input.disabled) return undefined;
  const current = input.claim.metadata.annotations ?? {};
  const add: Record<string, string> = {};
  if (input.isReady && !current[SandboxAnnotations.CONTROLLER_FIRST_OBSERVED_AT]) {
    add[SandboxAnnotations.CONTROLLER_FIRST_OBSERVED_AT] = rfc3339Nano(input.firstObservedAtMs);
  }
  if (input.traceContext && !current[SandboxAnnotations.TRACE_CONTEXT]) add[SandboxAnnotations.TRACE_CONTEXT] = input.traceContext;
  if (input.isReady && !current[SandboxAnnotations.CLAIM_FIRST_READY_AT]) {
    add[SandboxAnnotations.CLAIM_FIRST_READY_AT] = input.wasReady ? FIRST_READY_UNKNOWN : rfc3339Nano(input.now);
  }
  return Object.keys(add).length > 0 ? { metadata: { annotations: add } } : undefined;
}
