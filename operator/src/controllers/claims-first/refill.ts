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
 * When the bound ends a hold, claims are still arriving: the load is steady, not a burst. The
 * refill held back meanwhile (at 20 claims/s, a hundred members) then goes out spread over one more
 * bound, not in one lump (catchUpGrant below): a hundred creates at once, each followed by its Pod,
 * binding and status writes, held the API server for a second or more and gave the claims in it
 * some of the run's worst latencies (bench/README.md, "paced").
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

/** Whether a pool's waiting claims need its refill now: at its low-water mark, or fewer Ready members than claims waiting. */
export function isPoolShort(readyMembers: number, desired: number, claimsWaiting: number): boolean {
  return readyMembers <= lowWaterMark(desired) || readyMembers < claimsWaiting;
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
  /** The stretch has lasted the whole bound: a steady load; creates go paced (catchUpGrant). */
  readonly pastBound?: boolean;
  /** The stretch's start, kept until no claim waits (so it is not held back twice). */
  readonly sinceMs?: number;
  /** When the hold ends at the latest, while holding. */
  readonly untilMs?: number;
}

export function claimsFirstHold(input: ClaimsFirstInput): ClaimsFirstHold {
  const { claimsWaiting, now, maxDeferMs } = input;
  if (maxDeferMs <= 0 || claimsWaiting === 0) return { holding: false };
  const sinceMs = input.sinceMs ?? now;
  if (now - sinceMs >= maxDeferMs) return { holding: false, sinceMs, pastBound: true };
  if (input.readyMembers < claimsWaiting) return { holding: false, sinceMs };
  return { holding: true, sinceMs, untilMs: sinceMs + maxDeferMs };
}

/** A catch-up under way: `backlog` members may be missing at `startMs`, none by `endMs`. */
export interface CatchUp {
  readonly backlog: number;
  readonly startMs: number;
  readonly endMs: number;
}

export interface CatchUpInput {
  /** The catch-up under way, from the previous pass; undefined when none is. */
  readonly state?: CatchUp;
  /** Whether the stretch of waiting claims has outlasted the hold's bound (ClaimsFirstHold.pastBound). */
  readonly pastBound: boolean;
  /** Whether the pool's claims need members now (isPoolShort). */
  readonly short: boolean;
  /** Members the pool lacks, not counting creates already under way. */
  readonly deficit: number;
  /** Creates the pass would make without pacing (the deficit, capped by the batch size). */
  readonly want: number;
  readonly maxDeferMs: number;
  readonly now: number;
}

export interface CatchUpGrant {
  readonly granted: number;
  /** Keep for the next pass; undefined when no catch-up is under way. */
  readonly state?: CatchUp;
  /** When the next create may go, if this pass granted fewer than it wanted. */
  readonly nextAtMs?: number;
}

/**
 * A backlog this small is not paced: the first slow-start waves of any refill (1, 2, 4) make that
 * many creates in a row anyway.
 */
export const CATCH_UP_MIN_BACKLOG = 8;

/**
 * How many of `want` creates go now once a steady claim load has outlasted the hold. The backlog
 * the bound left (the deficit at the first pass past it) goes out evenly over one more bound: at
 * time t into it, `backlog × (1 − t / bound)` members may still be missing and the rest of the
 * deficit goes now. So members that claims take meanwhile are replaced at once (the load that built
 * the backlog is not made to wait behind it), the backlog shrinks by `backlog / bound` per second
 * whatever the claim rate, and after one bound nothing is paced. When fewer are missing than the
 * schedule allows (a short spell sent them, claims slowed), the schedule starts again from what is
 * missing, with the same end, so it never holds back a member taken later. Nothing is paced when the
 * stretch has not outlasted the bound (the hold decides), while the pool is short (isPoolShort: its
 * claims need members now; afterwards the schedule holds back at most what is still missing), for a
 * backlog under CATCH_UP_MIN_BACKLOG, or with the flag at 0s; a stretch that ends ends its catch-up.
 */
export function catchUpGrant(input: CatchUpInput): CatchUpGrant {
  const want = Math.max(0, Math.floor(input.want));
  const deficit = Math.max(0, Math.floor(input.deficit));
  const { now, maxDeferMs } = input;
  if (!input.pastBound || maxDeferMs <= 0) return { granted: want };
  const state = input.state ?? { backlog: deficit < CATCH_UP_MIN_BACKLOG ? 0 : deficit, startMs: now, endMs: now + maxDeferMs };
  if (state.backlog === 0 || now >= state.endMs) return { granted: want, state };
  // Members that may still be missing now, rounded up so the backlog is never let out early.
  const stillMissing = Math.ceil((state.backlog * (state.endMs - now)) / (state.endMs - state.startMs) - 1e-9);
  const granted = input.short ? want : Math.min(want, Math.max(0, deficit - stillMissing));
  const after = deficit - granted;
  const next: CatchUp = after < stillMissing ? { backlog: after, startMs: now, endMs: state.endMs } : state;
  if (granted >= want || after === 0) return { granted, state: next };
  // The next member goes when the schedule lets one fewer than `after` be missing.
  const nextAtMs = next.endMs - Math.floor(((after - 1) * (next.endMs - next.startMs)) / next.backlog + 1e-9);
  return { granted, state: next, nextAtMs: Math.max(now + 1, nextAtMs) };
}
