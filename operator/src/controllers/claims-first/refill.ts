/**
 * Refill gives way to claims (`--claims-first-max-defer`; part of claims-first, ./index.ts).
 *
 * In a burst the pool's creates and its waiting claims' adoption writes meet at the same API
 * server, and every create served first delays a claim. While claims wait on the pool and it still
 * has more Ready members than its low-water mark, the claims can be served from what is there, so
 * creates wait. They start when the claims are served, when the pool falls to the low-water mark,
 * or `maxDeferMs` after the hold began, whichever comes first: one continuous stretch of waiting
 * claims holds refill back for at most `maxDeferMs` in all, so a claim load that never ends cannot
 * starve the pool (operator/test/controllers/claims-first/refill.test.ts). The pool's plan
 * (controllers/warm-pool/plan.ts) asks this each pass.
 */

/** Below this many Ready members, refill never waits: a quarter of the pool, at least one member. */
export function lowWaterMark(desired: number): number {
  return Math.max(1, Math.ceil(desired / 4));
}

export interface ClaimsFirstInput {
  /** When the current stretch of waiting claims first held refill back; undefined when none. */
  readonly sinceMs?: number;
  /** Claims waiting on this pool now (ClaimPressure.waitingFor). */
  readonly claimsWaiting: number;
  /** Unclaimed Ready members. */
  readonly readyMembers: number;
  readonly desired: number;
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
  if (input.readyMembers <= lowWaterMark(input.desired) || now - sinceMs >= maxDeferMs) return { holding: false, sinceMs };
  return { holding: true, sinceMs, untilMs: sinceMs + maxDeferMs };
}
