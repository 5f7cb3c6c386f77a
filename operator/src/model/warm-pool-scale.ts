/**
 * How big a warm pool is meant to be, as the pool controller and the claim controller both read it:
 * `spec.replicas` as the controller understands it, and whether the pool was scaled to zero for
 * want of claims (`spec.scaleToZeroAfterSeconds`, its ScaledToZero condition). One reading, so
 * the claim's cold-start wording agrees with what the pool did (controllers/warm-pool/scale-to-zero.ts).
 */
import { WarmPoolConditionType, WarmPoolScaledToZeroReason } from '#api/conditions';
import { findCondition } from './conditions';
import type { SandboxWarmPool } from './generated';
import { timeMs } from './time';

/** `spec.replicas`, with the controller's reading of an absent value (1, as upstream). */
export function desiredReplicas(pool: SandboxWarmPool): number {
  return pool.spec.replicas ?? 1;
}

/** The pool's `scaleToZeroAfterSeconds` in milliseconds; undefined when unset (the pool never scales to zero). */
export function scaleToZeroPeriodMs(pool: SandboxWarmPool): number | undefined {
  const seconds = pool.spec.scaleToZeroAfterSeconds;
  return seconds !== undefined && seconds > 0 ? seconds * 1000 : undefined;
}

/**
 * Whether `pool` was scaled to zero when a claim created at `claimCreatedMs` arrived, as far as its
 * status tells: ScaledToZero is True, or it turned False (the claim's arrival woke the pool, which
 * may have written before the claim's pass read it) no earlier than the claim's creation second, in
 * a pool old enough to have been idle by then. The claim controller words its cold start by it.
 */
export function wasScaledToZeroAt(pool: SandboxWarmPool, claimCreatedMs: number): boolean {
  const periodMs = scaleToZeroPeriodMs(pool);
  if (periodMs === undefined) return false;
  const condition = findCondition(pool.status?.conditions, WarmPoolConditionType.SCALED_TO_ZERO);
  if (condition?.status === 'True') return true;
  if (condition?.status !== 'False' || condition.reason !== WarmPoolScaledToZeroReason.RECENT_CLAIMS) return false;
  const turnedMs = timeMs(condition.lastTransitionTime);
  const createdMs = timeMs(pool.metadata.creationTimestamp);
  // Condition times are whole seconds: compare with the claim's creation second.
  const claimSecondMs = Math.floor(claimCreatedMs / 1000) * 1000;
  return turnedMs !== undefined && turnedMs >= claimSecondMs && createdMs !== undefined && createdMs + periodMs <= claimCreatedMs;
}
