/**
 * The idle lifecycle (ours) as the operator and the router both read it from a Sandbox: which
 * policy applies, since when the Sandbox counts as idle, and when it is due for suspension. One
 * reading, so the router's activity stamps and the operator's suspension agree on the clock.
 *
 * The clock runs from the latest of: the last activity the router or the claim controller stamped
 * (the last-activity annotation), and the moment the Sandbox last turned Ready (a resume, a cold
 * start). A Sandbox that is not Ready is never idle: nobody could have used it, and suspending a
 * Pod that is still starting would only waste the start.
 */
import { KINDS } from '#api/groups';
import { SandboxAnnotations } from '#api/labels';
import { findCondition } from './conditions';
import type { IdlePolicy, Sandbox } from './generated';
import { controllerNameOfKind } from './meta';
import { timeMs } from './time';

/** The policy that governs `sandbox`, or undefined: none set, or an unclaimed warm-pool member (idle by design). */
export function idlePolicyOf(sandbox: Sandbox): IdlePolicy | undefined {
  const policy = sandbox.spec.idlePolicy;
  if (!policy || !(policy.suspendAfterSeconds > 0)) return undefined;
  if (controllerNameOfKind(sandbox, KINDS.warmPool) !== undefined) return undefined;
  return policy;
}

/** Whether a request for the suspended `sandbox` may resume it (its policy says so; the default is yes). */
export function resumesOnRequest(sandbox: Sandbox): boolean {
  const policy = idlePolicyOf(sandbox);
  return policy !== undefined && policy.resumeOnRequest !== false;
}

/** The last activity stamped on `sandbox`, in ms since the epoch, or undefined. */
export function lastActivityMs(sandbox: Sandbox): number | undefined {
  return timeMs(sandbox.metadata.annotations?.[SandboxAnnotations.LAST_ACTIVITY]);
}

/**
 * Since when a Running, Ready `sandbox` under an idle policy has been idle, in ms since the epoch;
 * undefined when no policy applies, it is suspended, or it is not Ready.
 */
export function idleSinceMs(sandbox: Sandbox): number | undefined {
  if (idlePolicyOf(sandbox) === undefined || sandbox.spec.operatingMode === 'Suspended') return undefined;
  const ready = findCondition(sandbox.status?.conditions, 'Ready');
  if (ready?.status !== 'True') return undefined;
  return Math.max(readySinceMs(ready.lastTransitionTime), lastActivityMs(sandbox) ?? 0);
}

/**
 * When the Sandbox turned Ready, read late rather than early: metav1.Time keeps whole seconds, so
 * a transition at 12:00:00.7 reads 12:00:00; counted from the end of that second, a resume that
 * turned Ready just now is never idle 999 ms early (with a 1 s policy, suspended before the
 * router's first stamp). A time with a fraction is read as it is.
 */
function readySinceMs(at: string | undefined): number {
  const ms = timeMs(at);
  if (ms === undefined) return 0;
  return /:\d\d\.\d/.test(at!) ? ms : ms + 999;
}

/** When `sandbox` is due for suspension (ms since the epoch), or undefined when it is not idling. */
export function idleDeadlineMs(sandbox: Sandbox): number | undefined {
  const since = idleSinceMs(sandbox);
  return since === undefined ? undefined : since + idlePolicyOf(sandbox)!.suspendAfterSeconds * 1000;
}

/**
 * How stale the last-activity stamp may grow while the Sandbox is in use before the router writes
 * a new one: a quarter of the idle period (at least a second, but never more than half the period),
 * so a stamp written for a request lands long before the deadline it moves, and a busy Sandbox
 * costs at most four writes a period. Without the half-period cap a 1 s period would be stamped
 * once a second, as late as its deadline, and a Sandbox in use could be suspended.
 */
export function activityStampIntervalMs(policy: IdlePolicy): number {
  const periodMs = policy.suspendAfterSeconds * 1000;
  return Math.min(Math.floor(periodMs / 2), Math.max(1000, Math.floor(periodMs / 4)));
}

/** The RFC 3339 form of the last-activity stamp (milliseconds kept: the idle clock is finer than metav1.Time). */
export function activityStamp(ms: number): string {
  return new Date(ms).toISOString();
}
