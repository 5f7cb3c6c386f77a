/**
 * Warm pools that scale to zero (`spec.scaleToZeroAfterSeconds`): after that long without a claim
 * the pool keeps no warm members; the next claim starts cold and brings the pool back to
 * `spec.replicas`.
 *
 * `spec.replicas` is never written: an HPA or KEDA may own it through the scale subresource, and a
 * write here would fight it. The pool's effective target is 0 while idle, and the ordinary
 * scale-down deletes the unclaimed members (claimed Sandboxes are not members).
 *
 * The idle clock runs from the latest of `status.lastClaimTime`, the pool's creation and the newest
 * claim of the pool in the cache. The cache alone would do while claims live; the recorded time
 * keeps a pool whose claims were deleted (or an operator restarted) from scaling to zero much
 * early: at most a quarter period plus the status window, since it is written only when a claim is
 * newer than it by more than a quarter of the period. So a busy pool writes it at most once per
 * quarter period, and then in a status write it makes anyway when
 * it can (plan.ts coalesces it with the replica counts). The pass is timed to the idle moment
 * (requeue), so nothing polls.
 */
import { WarmPoolConditionType, WarmPoolScaledToZeroReason } from '#api/conditions';
import { type ConditionInput, metaTime, type SandboxWarmPool, timeMs } from '../../model';
import { desiredReplicas, scaleToZeroPeriodMs } from '../../model/warm-pool-scale';

export interface ScaleToZeroInput {
  readonly pool: SandboxWarmPool;
  /** Newest creationTimestamp (ms) of the claims of the pool in the cache; undefined when there is none. */
  readonly newestClaimMs?: number;
  readonly now: number;
}

export interface ScaleToZero {
  /** Members to keep now: 0 while idle, else `spec.replicas`. */
  readonly desired: number;
  readonly idle: boolean;
  /** When the pool goes idle, while it is not: the pass looks again then. */
  readonly idleAtMs?: number;
  /** `status.lastClaimTime` after this pass: the recorded one, or the newest claim's once it is a quarter period newer. */
  readonly lastClaimTime?: string;
  /** Whether `lastClaimTime` moved this pass (a status write must carry it). */
  readonly lastClaimAdvanced: boolean;
  readonly condition: ConditionInput;
}

/** The pool's idle decision this pass; undefined for a pool without `scaleToZeroAfterSeconds`, whose behaviour is unchanged. */
export function scaleToZero(input: ScaleToZeroInput): ScaleToZero | undefined {
  const { pool, newestClaimMs, now } = input;
  const periodMs = scaleToZeroPeriodMs(pool);
  if (periodMs === undefined) return undefined;
  const recorded = pool.status?.lastClaimTime;
  const recordedMs = timeMs(recorded);
  const lastClaimAdvanced = newestClaimMs !== undefined && (recordedMs === undefined || newestClaimMs - recordedMs > periodMs / 4);
  const lastClaimTime = lastClaimAdvanced ? metaTime(newestClaimMs) : recorded;
  // A pool without a creation time (never so on a server) counts as created now: unknown is never idle.
  const createdMs = timeMs(pool.metadata.creationTimestamp) ?? now;
  const lastClaimMs = Math.max(recordedMs ?? -Infinity, newestClaimMs ?? -Infinity);
  const idleFromMs = Math.max(createdMs, lastClaimMs);
  const idleAtMs = idleFromMs + periodMs;
  const idle = now >= idleAtMs;
  const replicas = desiredReplicas(pool);
  const seconds = periodMs / 1000;
  const observedGeneration = pool.metadata.generation ?? 0;
  // While claims come, the message names no claim time: a condition change is written at once, so
  // a time in it would undo the coalescing of lastClaimTime with the counts. While idle, nothing moves.
  const lastClaim = Number.isFinite(lastClaimMs) ? metaTime(lastClaimMs) : `none since the pool was created at ${metaTime(createdMs)}`;
  const condition: ConditionInput = idle
    ? {
      type: WarmPoolConditionType.SCALED_TO_ZERO,
      status: 'True',
      reason: WarmPoolScaledToZeroReason.NO_RECENT_CLAIMS,
      observedGeneration,
      message: `No claim for ${seconds} s (last claim: ${lastClaim}): keeping no warm members (replicas stays ${replicas}); `
        + 'the next claim starts cold and refills the pool',
    }
    : {
      type: WarmPoolConditionType.SCALED_TO_ZERO,
      status: 'False',
      reason: WarmPoolScaledToZeroReason.RECENT_CLAIMS,
      observedGeneration,
      message: `Keeping ${replicas} warm members until ${seconds} s pass without a claim (status.lastClaimTime records the last one)`,
    };
  return {
    desired: idle ? 0 : replicas,
    idle,
    ...(idle ? {} : { idleAtMs }),
    ...(lastClaimTime !== undefined ? { lastClaimTime } : {}),
    lastClaimAdvanced,
    condition,
  };
}
