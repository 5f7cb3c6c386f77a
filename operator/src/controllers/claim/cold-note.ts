/**
 * The cold start a scaled-to-zero warm pool causes, said on the claim: its Ready message ends with
 * "cold start: warm pool <name> was scaled to zero after <n> s without claims; it is refilling to
 * <replicas>", so whoever waited longer than usual for the claim can see why without reading the
 * pool.
 *
 * It is decided once, when the claim first reports its cold Sandbox, from the pool's ScaledToZero
 * condition (warm-pool/scale-to-zero.ts), and carried from the claim's own Ready message after
 * that: the pool turns the condition False as soon as it sees the claim, so judging again on every
 * pass would drop the note (and rewrite the status) as the pool refills.
 */
import { ConditionType } from '#api/conditions';
import { SandboxLabels } from '#api/labels';
import { needsColdStart } from './select';
import { findCondition, LaunchType, type Sandbox, type SandboxClaim, type SandboxWarmPool, timeMs } from '../../model';
import { desiredReplicas, wasScaledToZeroAt } from '../../model/warm-pool-scale';

/** How the note begins; a later pass finds it in the claim's Ready message by this. */
export const COLD_START_NOTE_PREFIX = 'cold start: warm pool ';

export function scaledToZeroNote(pool: SandboxWarmPool): string {
  return `${COLD_START_NOTE_PREFIX}${pool.metadata.name} was scaled to zero after ${pool.spec.scaleToZeroAfterSeconds} s without claims; `
    + `it is refilling to ${desiredReplicas(pool)}`;
}

/**
 * The note for the claim's Ready condition, if its Sandbox is a cold start from a pool that was
 * scaled to zero: judged when the claim first reports the Sandbox, carried afterwards. A claim that
 * had to start cold anyway (env, volumeClaimTemplates) gets none.
 */
export function coldStartNote(claim: SandboxClaim, sandbox: Sandbox, pool: SandboxWarmPool | undefined, now: number): string | undefined {
  if (sandbox.metadata.labels?.[SandboxLabels.LAUNCH_TYPE] !== LaunchType.COLD) return undefined;
  if (claim.status?.sandbox?.name === sandbox.metadata.name) {
    const message = findCondition(claim.status.conditions, ConditionType.READY)?.message ?? '';
    const at = message.indexOf(COLD_START_NOTE_PREFIX);
    return at >= 0 ? message.slice(at) : undefined;
  }
  if (!pool || needsColdStart(claim)) return undefined;
  return wasScaledToZeroAt(pool, timeMs(claim.metadata.creationTimestamp) ?? now) ? scaledToZeroNote(pool) : undefined;
}
