/**
 * Pure equivalents of apimachinery's meta.SetStatusCondition / RemoveStatusCondition, on
 * immutable arrays. Keeping lastTransitionTime when the status does not change is what lets
 * clients measure "Ready since", and keeps a re-computed but unchanged status byte-identical
 * so the controller can skip the write.
 */
import type { Condition } from './types';

/** The condition to set; lastTransitionTime is filled in by setCondition. */
export type ConditionInput = Omit<Condition, 'lastTransitionTime'>;

/** metav1.Time precision: RFC 3339 in UTC, whole seconds (what Go clients send and expect). */
export function toMetaTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

export function findCondition(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/**
 * A copy of `conditions` with `input` set: replaced in place when its type exists (keeping
 * lastTransitionTime unless the status changed), appended otherwise.
 */
export function setCondition(conditions: readonly Condition[], input: ConditionInput, nowMs: number): Condition[] {
  const index = conditions.findIndex((c) => c.type === input.type);
  if (index < 0) return [...conditions, { ...input, lastTransitionTime: toMetaTime(nowMs) }];
  const old = conditions[index];
  const lastTransitionTime = old.status === input.status ? old.lastTransitionTime : toMetaTime(nowMs);
  const next = [...conditions];
  next[index] = { ...input, lastTransitionTime };
  return next;
}

/** A copy of `conditions` without the condition of `type`. */
export function removeCondition(conditions: readonly Condition[], type: string): Condition[] {
  return conditions.filter((c) => c.type !== type);
}
