/**
 * Refill gives way to claims (`--claims-first-max-defer`; part of claims-first, ./index.ts).
 *
 * In a burst the pool's creates and its waiting claims' adoption writes meet at the same API
 * server, and every create served first delays a claim. While the pool's Ready members cover the
 * claims waiting on it (each can have one without a new member), those claims are served from what
 * is there, so creates wait. They start when the claims are served, when more claims wait than
 * Ready members are left (the rest need the refill now: a burst larger than the pool starts its
 * refill at once), or `maxDeferMs` after the hold began, whichever comes first: one continuous
 * stretch of waiting claims holds refill back for at most `maxDeferMs` in all, so a claim load that
 * never ends cannot starve the pool (operator/test/controllers/claims-first/refill.test.ts).
 * Claims that already took a member (ClaimPressure.bound) do not count: the member they took no
 * longer counts among the Ready ones either. The pool's plan (controllers/warm-pool/plan.ts) asks
 * this each pass.
 *
 * The rule replaced an earlier one that held while more than a quarter of the pool was Ready: with
 * it, sequential claims met the whole held-back refill in their path once the pool fell to that
 * mark (bench/results/hold-ab-2026-12-04 has the A/B).
 */

/**
 * A quarter of the pool, at least one member: at or below this many Ready members a pool is short,
 * and the refill its waiting claims need goes with the normal work (ClaimPressure.poolShort).
 */
export function lowWaterMark(desired: number): number {
  return Math.max(1, Math.ceil(desired / 4));
}

export interface ClaimsFirstInput {
  /** When the current stretch of waiting claims first held refill back; undefined when none. */
  readonly sinceMs?: number;
  /** Claims waiting on this pool now without a member (ClaimPressure.waitingFor). */
  readonly claimsWaiting: number;
  /** Unclaimed Ready members. */
  readonly readyMembers: number;
  readonly maxDeferMs: number;
  readonly now: number;
}

export interface ClaimsFirstHold {
  /** Whether creates wait this pass. */
  readonly holding: boolean;
  /** The stretch's start, kept until no claim waits (so it is not held back twice). */
  readonly sinceMs?: number;
  /** When the hold ends at the latest, while holding. */
  readonly untilMs?: number;
}

export function claimsFirstHold(input: ClaimsFirstInput): ClaimsFirstHold {
  const { claimsWaiting, now, maxDeferMs } = input;
  if (maxDeferMs <= 0 || claimsWaiting === 0) return { holding: false };
  const sinceMs = input.sinceMs ?? now;
  if (input.readyMembers < claimsWaiting || now - sinceMs >= maxDeferMs) return { holding: false, sinceMs };
  return { holding: true, sinceMs, untilMs: sinceMs + maxDeferMs };
}
