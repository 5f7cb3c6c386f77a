/**
 * What a claim reports, as upstream's extensions/controllers/sandboxclaim_controller.go does: its
 * status (Ready derived from the outcome of the pass and the bound Sandbox, Finished mirrored,
 * `status.sandbox` naming the Sandbox, its Pod IPs and its Service's DNS name; written only when it
 * changed, as one merge patch on the status subresource with a resourceVersion precondition), its
 * Events, and its observability annotations (upstream's initializeAnnotations and
 * claim-first-ready-at).
 *
 * Upstream writes the annotations in two separate metadata patches, one of them before any real
 * work, so they cost two of its five writes per warm claim. Here they are one patch, written after
 * the status (off the Ready path), only when something is missing, and only once the claim is
 * Ready (the first-observed time waits in memory until then): a warm claim is then the Sandbox
 * write, the status write and at most this one (none with
 * --disable-claim-observability-annotations), and a claim that has to wait for a Sandbox does not
 * pay a second patch.
 */
import { ClaimReadyReason, ConditionType, SandboxReadyReason } from '#api/conditions';
import { SandboxAnnotations } from '#api/labels';
import { type Condition, findCondition, isConditionTrue, isReady, type MergePatch, metaTime, rfc3339Nano, type Sandbox, type SandboxClaim, type SandboxClaimStatus } from '../../model';
import { canonicalJson } from '../../model/blueprint';

/** Why a claim cannot make progress: its Ready=False reason (ClaimReadyReason) and message. */
export interface ClaimProblem {
  readonly reason: string;
  readonly message: string;
}

/** A decision that either produced a value or found a problem to report on the claim. */
export type Outcome<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly problem: ClaimProblem };

export const ok = <T>(value: T): Outcome<T> => ({ ok: true, value });
export const fail = <T>(reason: string, message: string): Outcome<T> => ({ ok: false, problem: { reason, message } });

/** An Event about a claim (events.k8s.io: reason, action, note). */
export interface ClaimEvent {
  readonly type: 'Normal' | 'Warning';
  readonly reason: string;
  readonly action: string;
  readonly note: string;
}

/** The claim's Events, with upstream's reasons and actions. */
export const ClaimEvents = {
  adopted: (sandbox: string): ClaimEvent => ({ type: 'Normal', reason: 'SandboxAdopted', action: 'Adoption', note: `Adopted warm pool Sandbox "${sandbox}"` }),
  provisioned: (sandbox: string): ClaimEvent => ({ type: 'Normal', reason: 'SandboxProvisioned', action: 'Provisioning', note: `Created Sandbox "${sandbox}"` }),
  expired: (): ClaimEvent => ({ type: 'Normal', reason: 'ClaimExpired', action: 'Claim Expired', note: 'Claim expired' }),
  deleting: (policy: string): ClaimEvent => ({ type: 'Normal', reason: 'ClaimExpired', action: 'Deleting', note: `Deleting Claim (ShutdownPolicy=${policy})` }),
} as const;

export const CLAIM_EXPIRED_MESSAGE = 'Claim expired. Sandbox cleanup initiated.';
export const SANDBOX_EXPIRED_MESSAGE = 'Underlying Sandbox resource has expired independently of the Claim.';

export interface StatusInput {
  readonly claim: SandboxClaim;
  /** The claim's Sandbox, if it has one. */
  readonly sandbox?: Sandbox;
  /** A problem this pass hit; it decides Ready ahead of everything else. */
  readonly problem?: ClaimProblem;
  /**
   * Keep `status.sandbox` as it is although no Sandbox is passed: a transient failure (the cache
   * lagging, a lookup failing) must not erase the binding, or the next pass would start cold.
   */
  readonly keepBinding?: boolean;
  /** The claim has expired (claimExpiry in plan.ts). */
  readonly expired?: boolean;
  /** Why the claim's Sandbox started cold (cold-note.ts), ended onto the Ready message while it has that Sandbox. */
  readonly coldStartNote?: string;
  readonly now: number;
}

export interface StatusDecision {
  readonly status: SandboxClaimStatus;
  /** Whether it differs from the claim's current status; nothing is written otherwise. */
  readonly changed: boolean;
  /** The status-subresource merge patch to send when changed (conditions and sandbox replaced whole). */
  readonly patch?: MergePatch;
}

/** Ready, first match wins: a problem; expiry; no Sandbox; the Sandbox expired; the Sandbox's own Ready; not ready yet. */
function readyCondition(input: StatusInput): Omit<Condition, 'lastTransitionTime'> & { lastTransitionTime?: string } {
  const generation = input.claim.metadata.generation;
  const mine = (status: Condition['status'], reason: string, message: string) => ({
    type: ConditionType.READY, status, reason, message, ...(generation !== undefined ? { observedGeneration: generation } : {}),
  });
  if (input.problem) return mine('False', input.problem.reason, input.problem.message);
  if (input.expired) return mine('False', ClaimReadyReason.CLAIM_EXPIRED, CLAIM_EXPIRED_MESSAGE);
  if (!input.sandbox) return mine('False', ClaimReadyReason.SANDBOX_MISSING, 'Sandbox does not exist');
  const ready = findCondition(input.sandbox.status?.conditions, ConditionType.READY);
  if (ready?.reason === SandboxReadyReason.SANDBOX_EXPIRED) return mine('False', ClaimReadyReason.SANDBOX_EXPIRED, SANDBOX_EXPIRED_MESSAGE);
  // The Sandbox's Ready verbatim (status, reason, message, transition time), at the claim's generation.
  if (ready) return { ...ready, ...(generation !== undefined ? { observedGeneration: generation } : { observedGeneration: undefined }) };
  return mine('False', ClaimReadyReason.SANDBOX_NOT_READY, 'Sandbox is not ready');
}

function sortedConditions(conditions: readonly Condition[]): Condition[] {
  return [...conditions].sort((a, b) => (a.type < b.type ? -1 : a.type > b.type ? 1 : 0));
}

/**
 * The claim's status after this pass.
 *
 * - Ready: see readyCondition. A condition we compute keeps its lastTransitionTime while its
 *   status does not change (metav1 SetStatusCondition semantics); a mirrored one carries the
 *   Sandbox's.
 * - Finished: the Sandbox's, verbatim, or removed when the Sandbox has none. Without a Sandbox the
 *   claim keeps the one it has, since ttlSecondsAfterFinished counts from it.
 * - status.sandbox: the bound Sandbox's name, Pod IPs and serviceFQDN (its status.serviceFQDN,
 *   `<service>.<namespace>.svc.<--cluster-domain>`, present while it has a Service; upstream
 *   v1.0.1 mirrors it the same way); cleared when there is none, unless `keepBinding`.
 * - Other condition types someone else set are kept. Conditions are sorted by type.
 */
export function claimStatus(input: StatusInput): StatusDecision {
  const { claim, sandbox, now } = input;
  const old = claim.status ?? {};
  const conditions = (old.conditions ?? []).filter((c) => c.type !== ConditionType.READY && c.type !== ConditionType.FINISHED);

  const computed = readyCondition(input);
  const note = input.sandbox && !input.problem && !input.expired ? input.coldStartNote : undefined;
  const ready = note ? { ...computed, message: computed.message ? `${computed.message}; ${note}` : note } : computed;
  const previous = findCondition(old.conditions, ConditionType.READY);
  const lastTransitionTime = ready.lastTransitionTime
    ?? (previous && previous.status === ready.status ? previous.lastTransitionTime : metaTime(now));
  const readyOut = { ...ready, lastTransitionTime } as Condition;
  if (readyOut.observedGeneration === undefined) delete readyOut.observedGeneration;
  conditions.push(readyOut);

  const finished = sandbox
    ? findCondition(sandbox.status?.conditions, ConditionType.FINISHED)
    : findCondition(old.conditions, ConditionType.FINISHED);
  if (finished) conditions.push({ ...finished });

  let binding: SandboxClaimStatus['sandbox'];
  if (sandbox) {
    const podIPs = sandbox.status?.podIPs ?? [];
    const serviceFQDN = sandbox.status?.serviceFQDN;
    binding = { name: sandbox.metadata.name, ...(podIPs.length > 0 ? { podIPs: [...podIPs] } : {}), ...(serviceFQDN ? { serviceFQDN } : {}) };
  } else if (input.keepBinding) {
    binding = old.sandbox;
  }

  const status: SandboxClaimStatus = { conditions: sortedConditions(conditions), ...(binding ? { sandbox: binding } : {}) };
  const normalizedOld: SandboxClaimStatus = { conditions: sortedConditions(old.conditions ?? []), ...(old.sandbox ? { sandbox: old.sandbox } : {}) };
  const changed = canonicalJson(status) !== canonicalJson(normalizedOld);
  if (!changed) return { status, changed };
  return {
    status,
    changed,
    patch: {
      metadata: { resourceVersion: claim.metadata.resourceVersion ?? '' },
      // A merge patch merges objects, so a field to drop from status.sandbox must be sent as null.
      status: {
        conditions: status.conditions as unknown[],
        sandbox: status.sandbox
          ? { name: status.sandbox.name ?? null, podIPs: status.sandbox.podIPs ?? null, serviceFQDN: status.sandbox.serviceFQDN ?? null }
          : null,
      },
    },
  };
}

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

export interface AfterStatusInput {
  /** The claim as the pass saw it, with the annotations we wrote that the cache does not show yet. */
  readonly claim: SandboxClaim;
  /** The status the claim has now (written by this pass, or unchanged). */
  readonly status: SandboxClaimStatus;
  readonly firstObservedAtMs: number;
  readonly now: number;
  /** --disable-claim-observability-annotations. */
  readonly disabled?: boolean;
}

export interface AfterStatus {
  /** The claim's Ready=True has just been persisted for the first time: observe the latency histograms. */
  readonly firstReady: boolean;
  /** The observability annotations to add, if any are missing. */
  readonly patch?: MergePatch;
}

/** What follows a persisted status: the first-Ready latencies and the observability annotations. */
export function afterStatus(input: AfterStatusInput): AfterStatus {
  const { claim, now } = input;
  const wasReady = isReady(claim);
  const nowReady = isConditionTrue(input.status.conditions, ConditionType.READY);
  const firstReady = nowReady && !wasReady && !claim.metadata.annotations?.[SandboxAnnotations.CLAIM_FIRST_READY_AT];
  const patch = observabilityPatch({ claim, firstObservedAtMs: input.firstObservedAtMs, wasReady, isReady: nowReady, now, disabled: input.disabled });
  return { firstReady, ...(patch ? { patch } : {}) };
}
