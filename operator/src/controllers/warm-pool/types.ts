/**
 * The controller flags its decisions read. Flag names and
 * defaults come from src/api/controller-flags.ts, the table the install bundle renders from, so
 * the decisions and the Deployment args cannot disagree.
 */
import { controllerFlag, type ControllerFlagValues } from '#api/controller-flags';

/** The flags the warm-pool decisions use, typed. Durations in milliseconds. */
export interface PoolFlags {
  /** Most creates or deletes in one pass (`--sandbox-warm-pool-max-batch-size`). */
  readonly maxBatchSize: number;
  /** Wait before replacing claimed members (`--sandbox-warm-pool-replenish-delay`); 0 = at once. */
  readonly replenishDelayMs: number;
  /** Most creates per second per pool (`--sandbox-warm-pool-max-refill-rate`); 0 = unpaced. */
  readonly maxRefillRate: number;
  /** How long a member may stay not Ready before it is replaced (`--sandbox-warm-pool-readiness-grace-period`). */
  readonly readinessGraceMs: number;
  /** How often a pool holding unschedulable members is re-examined (`--sandbox-warm-pool-unschedulable-recheck-interval`). */
  readonly unschedulableRecheckMs: number;
  /** Mark unclaimed warm Pods safe to evict (`--enable-warm-pool-eviction`). */
  readonly enableWarmPoolEviction: boolean;
  /** Longest refill holds back for waiting claims (`--claims-first-max-defer`); 0 = never. */
  readonly claimsFirstMaxDeferMs: number;
  /** How long a change of replica counts alone waits after the previous status write (`--sandbox-warm-pool-status-window`); 0 = none. */
  readonly statusWindowMs: number;
}

function flagValue<T extends number | boolean>(values: ControllerFlagValues, name: string): T {
  const flag = controllerFlag(name);
  if (!flag) throw new Error(`unknown controller flag --${name}`);
  return (values[name] ?? flag.default) as T;
}

/** Typed pool flags from parsed flag values; absent flags take the table's defaults. */
export function poolFlags(values: ControllerFlagValues = {}): PoolFlags {
  return {
    maxBatchSize: flagValue(values, 'sandbox-warm-pool-max-batch-size'),
    replenishDelayMs: flagValue(values, 'sandbox-warm-pool-replenish-delay'),
    maxRefillRate: flagValue(values, 'sandbox-warm-pool-max-refill-rate'),
    readinessGraceMs: flagValue(values, 'sandbox-warm-pool-readiness-grace-period'),
    unschedulableRecheckMs: flagValue(values, 'sandbox-warm-pool-unschedulable-recheck-interval'),
    enableWarmPoolEviction: flagValue(values, 'enable-warm-pool-eviction'),
    claimsFirstMaxDeferMs: flagValue(values, 'claims-first-max-defer'),
    statusWindowMs: flagValue(values, 'sandbox-warm-pool-status-window'),
  };
}

export { desiredReplicas } from '../../model/warm-pool-scale';

/** Events a pool emits, on transitions only. */
export const PoolEventReason = {
  NOT_PROGRESSING: 'WarmPoolNotProgressing',
  PROGRESSING: 'WarmPoolProgressing',
} as const;
