/**
 * Claim expiry (as upstream's internal/lifecycle/expiry.go): when a claim expires and what
 * then happens, decided from the claim, its Sandbox and the time. The wiring arms a timer at
 * `atMs` (no polling) and performs the plan.
 */
import { ClaimEvents, type ClaimEvent } from './status';
import { ClaimReadyReason, ConditionType } from '../../../../src/api/conditions';
import { ClaimShutdownPolicy } from '../../../../src/api/enums';
import { findCondition, isControlledBy, isDeleting, type Sandbox, type SandboxClaim, timeMs } from '../../model';

export interface ClaimExpiry {
  readonly expired: boolean;
  /** When the claim expires (or expired); undefined when it never does. */
  readonly atMs?: number;
  /** What expiry does: spec.lifecycle.shutdownPolicy, Retain by default. */
  readonly action: ClaimShutdownPolicy;
  /** Time left, while not expired: arm a timer for it. */
  readonly requeueAfterMs?: number;
}

/** The Finished condition's transition time when Finished is True: the Sandbox's if bound, else the claim's mirrored copy. */
function finishedAtMs(claim: SandboxClaim, sandbox: Sandbox | undefined): number | undefined {
  const finished = findCondition(sandbox?.status?.conditions, ConditionType.FINISHED)
    ?? findCondition(claim.status?.conditions, ConditionType.FINISHED);
  return finished?.status === 'True' ? timeMs(finished.lastTransitionTime) : undefined;
}

function policyOf(claim: SandboxClaim): ClaimShutdownPolicy {
  const policy = claim.spec.lifecycle?.shutdownPolicy as ClaimShutdownPolicy | undefined;
  return policy === ClaimShutdownPolicy.DELETE || policy === ClaimShutdownPolicy.DELETE_FOREGROUND ? policy : ClaimShutdownPolicy.RETAIN;
}

/**
 * Expiry is the earlier of `shutdownTime` and Finished + `ttlSecondsAfterFinished` (the TTL only
 * once the Sandbox has finished). Using the Sandbox's Finished when one is bound means the TTL
 * starts as soon as the Pod finishes, not one status write later. Expired from `atMs` on.
 */
export function claimExpiry(claim: SandboxClaim, sandbox: Sandbox | undefined, now: number): ClaimExpiry {
  const lifecycle = claim.spec.lifecycle;
  const action = policyOf(claim);
  if (!lifecycle) return { expired: false, action };
  const deadlines: number[] = [];
  const shutdown = timeMs(lifecycle.shutdownTime);
  if (shutdown !== undefined) deadlines.push(shutdown);
  const finished = lifecycle.ttlSecondsAfterFinished !== undefined ? finishedAtMs(claim, sandbox) : undefined;
  if (finished !== undefined) deadlines.push(finished + lifecycle.ttlSecondsAfterFinished! * 1000);
  if (deadlines.length === 0) return { expired: false, action };
  const atMs = Math.min(...deadlines);
  return now >= atMs ? { expired: true, atMs, action } : { expired: false, atMs, action, requeueAfterMs: atMs - now };
}

export interface ExpiryPlan {
  /** Ready is not ClaimExpired yet: write it (claimStatus with `expired`) and emit `events`. */
  readonly markExpired: boolean;
  /** Delete the claim (Delete: background; DeleteForeground: the claim stays until its Sandbox is gone). */
  readonly deleteClaim?: { readonly propagationPolicy: 'Background' | 'Foreground'; readonly uid: string };
  /** Retain: delete the claim's Sandbox (uid precondition); the claim stays, Ready=False ClaimExpired. */
  readonly deleteSandbox?: { readonly name: string; readonly uid: string };
  /** Retain with a Sandbox the claim does not control: not deleted; report this as the Ready message. */
  readonly skippedMessage?: string;
  readonly events: ClaimEvent[];
}

/**
 * What to do about an expired claim, in one pass: mark it expired (once), then apply the policy.
 * Marking first lets a client watching the claim see ClaimExpired before it disappears. Every
 * step is idempotent, so a crash anywhere just repeats the rest on the next pass.
 */
export function expiryPlan(claim: SandboxClaim, sandbox: Sandbox | undefined, expiry: ClaimExpiry): ExpiryPlan {
  if (!expiry.expired) return { markExpired: false, events: [] };
  const ready = findCondition(claim.status?.conditions, ConditionType.READY);
  const markExpired = ready?.reason !== ClaimReadyReason.CLAIM_EXPIRED;
  const events: ClaimEvent[] = markExpired ? [ClaimEvents.expired()] : [];
  if (expiry.action !== ClaimShutdownPolicy.RETAIN) {
    if (isDeleting(claim)) return { markExpired, events };
    events.push(ClaimEvents.deleting(expiry.action));
    const propagationPolicy = expiry.action === ClaimShutdownPolicy.DELETE_FOREGROUND ? 'Foreground' : 'Background';
    return { markExpired, deleteClaim: { propagationPolicy, uid: claim.metadata.uid ?? '' }, events };
  }
  if (!sandbox) return { markExpired, events };
  if (!isControlledBy(sandbox, claim.metadata.uid)) {
    return { markExpired, skippedMessage: `Claim expired. Sandbox "${sandbox.metadata.name}" is not controlled by this claim; deletion skipped.`, events };
  }
  if (isDeleting(sandbox)) return { markExpired, events };
  return { markExpired, deleteSandbox: { name: sandbox.metadata.name, uid: sandbox.metadata.uid ?? '' }, events };
}
