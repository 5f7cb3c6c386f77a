/**
 * The idle lifecycle a claim hands its Sandbox (ours): the claim's idlePolicy, else its template's,
 * with the claim itself as the Sandbox's latest use. Both ride in the write that makes the Sandbox
 * the claim's (the warm adoption patch, the cold create), never in a write of their own: a warm
 * claim stays one write on the Sandbox and one on the claim. Pool members carry no policy (an
 * unclaimed member is idle by design), so the adoption is where a warm Sandbox gets it.
 */
import { SandboxAnnotations } from '#api/labels';
import { activityStamp, type IdlePolicy, type SandboxClaim, type SandboxTemplate } from '../../model';

/**
 * The claimed Sandbox's policy, both fields spelled out (a merge patch over a member's stray
 * policy then leaves nothing of it behind); undefined when neither the claim nor the template sets one.
 */
export function claimedIdlePolicy(claim: SandboxClaim, template: SandboxTemplate | undefined): IdlePolicy | undefined {
  const policy = claim.spec.idlePolicy ?? template?.spec.idlePolicy;
  return policy && { suspendAfterSeconds: policy.suspendAfterSeconds, resumeOnRequest: policy.resumeOnRequest !== false };
}

/** The last-activity annotation a claimed Sandbox under `policy` starts with: claiming it is using it. */
export function claimedActivity(policy: IdlePolicy | undefined, nowMs: number): Record<string, string> {
  return policy ? { [SandboxAnnotations.LAST_ACTIVITY]: activityStamp(nowMs) } : {};
}
