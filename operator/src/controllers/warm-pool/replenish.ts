/**
 * The replenish delay (`--sandbox-warm-pool-replenish-delay`): after members are claimed, wait a
 * little before creating replacements, so a burst of claims is refilled in one go rather than one
 * create per claim.
 *
 * Upstream re-arms the delay every time the member count drops. Under a steady stream of claims
 * the count keeps dropping, the delay never ends and the pool drains to zero (measured upstream:
 * p90 claim latency 74s -> 205s). Here the delay is armed once per shortfall: when a full pool
 * first loses members. Later drops in the same shortfall do not extend it, so refill starts at most
 * one delay after the first claim, however busy the pool is. The shortfall ends when the pool is
 * full again.
 */

export interface ReplenishHold {
  /** Active members at the previous pass; undefined before the first pass (after a restart, too). */
  readonly lastActive?: number;
  /** True while the pool is short; the delay is armed only at the start of a shortfall. */
  readonly inShortfall: boolean;
  /** Creates wait until then. */
  readonly deferUntilMs?: number;
}

export const NO_HOLD: ReplenishHold = { inShortfall: false };

export interface HoldDecision {
  /** Whether creates must wait this pass. */
  readonly holding: boolean;
  readonly state: ReplenishHold;
  /** When the hold ends, while holding. */
  readonly untilMs?: number;
}

/**
 * Whether to hold creates now. Only a drop in members starts a hold: a pool that is short because
 * it is new, was restarted, or was scaled up refills at once.
 */
export function replenishHold(state: ReplenishHold, active: number, desired: number, delayMs: number, now: number): HoldDecision {
  if (active >= desired || delayMs <= 0) {
    return { holding: false, state: { lastActive: active, inShortfall: false } };
  }
  let deferUntilMs = state.deferUntilMs;
  const dropped = state.lastActive !== undefined && active < state.lastActive;
  if (!state.inShortfall && dropped) deferUntilMs = now + delayMs;
  const next: ReplenishHold = { lastActive: active, inShortfall: true, ...(deferUntilMs !== undefined ? { deferUntilMs } : {}) };
  const holding = deferUntilMs !== undefined && now < deferUntilMs;
  return holding ? { holding, state: next, untilMs: deferUntilMs } : { holding, state: next };
}
