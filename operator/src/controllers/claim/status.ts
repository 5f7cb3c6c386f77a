/**
 * The claim's status, as upstream's extensions/controllers/sandboxclaim_controller.go writes it:
 * Ready derived from the outcome of the pass and the bound Sandbox, Finished mirrored,
 * `status.sandbox` naming the Sandbox and its Pod IPs. Written only when it changed, as one merge
 * patch on the status subresource with a resourceVersion precondition.
 */
import { type ClaimProblem } from './types';
import { ClaimReadyReason, ConditionType, SandboxReadyReason } from '../../../../src/api/conditions';
import { type Condition, findCondition, type MergePatch, metaTime, type Sandbox, type SandboxClaim, type SandboxClaimStatus } from '../../model';
import { canonicalJson } from '../../model/blueprint';

export const CLAIM_EXPIRED_MESSAGE = 'Claim expired. Sandbox cleanup initiated.';
export const SANDBOX_EXPIRED_MESSAGE = 'Underlying Sandbox resource has expired independently of the Claim.';

export interface StatusInput {
  readonly claim: SandboxClaim;
  /** The Sandbox bound to the claim (recover.ts), if any. */
  readonly sandbox?: Sandbox;
  /** A problem this pass hit; it decides Ready ahead of everything else. */
  readonly problem?: ClaimProblem;
  /**
   * Keep `status.sandbox` as it is although no Sandbox is passed: a transient failure (the cache
   * lagging, a lookup failing) must not erase the binding, or the next pass would start cold.
   */
  readonly keepBinding?: boolean;
  /** The claim has expired (lifecycle.ts). */
  readonly expired?: boolean;
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
 * - status.sandbox: the bound Sandbox's name and Pod IPs; cleared when there is none, unless
 *   `keepBinding`.
 * - Other condition types someone else set are kept. Conditions are sorted by type.
 */
export function claimStatus(input: StatusInput): StatusDecision {
  const { claim, sandbox, now } = input;
  const old = claim.status ?? {};
  const conditions = (old.conditions ?? []).filter((c) => c.type !== ConditionType.READY && c.type !== ConditionType.FINISHED);

  const ready = readyCondition(input);
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
    binding = { name: sandbox.metadata.name, ...(podIPs.length > 0 ? { podIPs: [...podIPs] } : {}) };
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
        sandbox: status.sandbox ? { name: status.sandbox.name ?? null, podIPs: status.sandbox.podIPs ?? null } : null,
      },
    },
  };
}
