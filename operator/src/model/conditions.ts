/**
 * metav1.Condition lists: pure equivalents of apimachinery's meta.SetStatusCondition and
 * RemoveStatusCondition on immutable arrays, and the readiness readers every controller uses.
 * Keeping lastTransitionTime when the status does not change is what lets clients measure
 * "Ready since", and keeps a re-computed but unchanged status byte-identical so a write can be skipped.
 */
import { ConditionType } from '#api/conditions';
import { canonicalJson } from './blueprint';
import type { Condition } from './generated';
import { metaTime } from './time';

/** The condition to set; lastTransitionTime is filled in by setCondition. */
export type ConditionInput = Omit<Condition, 'lastTransitionTime'>;

/** The condition of `type` in `conditions`, if present. */
export function findCondition(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/** Whether the condition of `type` is present with status True. */
export function isConditionTrue(conditions: readonly Condition[] | undefined, type: string): boolean {
  return findCondition(conditions, type)?.status === 'True';
}

/** Whether an object with standard conditions (a Sandbox, a claim) says Ready=True. */
export function isReady(obj: { status?: { conditions?: Condition[] } }): boolean {
  return isConditionTrue(obj.status?.conditions, ConditionType.READY);
}

/** Whether a Sandbox's Pod is reported unschedulable (the Sandbox controller mirrors PodScheduled=False, reason Unschedulable). */
export function isUnschedulable(sandbox: { status?: { conditions?: Condition[] } }): boolean {
  const scheduled = findCondition(sandbox.status?.conditions, ConditionType.POD_SCHEDULED);
  return scheduled?.status === 'False' && scheduled.reason === 'Unschedulable';
}

/**
 * A copy of `conditions` with `input` set: replaced in place when its type exists (keeping
 * lastTransitionTime unless the status changed), appended otherwise.
 */
export function setCondition(conditions: readonly Condition[], input: ConditionInput, nowMs: number): Condition[] {
  const index = conditions.findIndex((c) => c.type === input.type);
  if (index < 0) return [...conditions, { ...input, lastTransitionTime: metaTime(nowMs) }];
  const old = conditions[index];
  const lastTransitionTime = old.status === input.status ? old.lastTransitionTime : metaTime(nowMs);
  const next = [...conditions];
  next[index] = { ...input, lastTransitionTime };
  return next;
}

/**
 * Whether two condition lists say the same, whatever their key order: the API server returns an
 * object's keys sorted, while setCondition builds them in its own order, so comparing JSON strings
 * as written would see a change on every pass and rewrite an unchanged status.
 */
export function sameConditions(a: readonly Condition[] | undefined, b: readonly Condition[] | undefined): boolean {
  return canonicalJson(a ?? []) === canonicalJson(b ?? []);
}

/** A copy of `conditions` without the condition of `type`. */
export function removeCondition(conditions: readonly Condition[], type: string): Condition[] {
  return conditions.filter((c) => c.type !== type);
}
