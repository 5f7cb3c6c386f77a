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
 * refill held back meanwhile (at 20 claims/s, a hundred members) then goes out paced, not in one
 * lump (catchUpGrant below): a hundred creates at once, each followed by its Pod, binding and
 * status writes, held the API server for a second or more and gave the claims in it their worst
 * latencies (bench/README.md, "paced").
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
  if (input.readyMembers < claimsWaiting) return { holding: false, sinceMs };
  if (now - sinceMs >= maxDeferMs) return { holding: false, sinceMs, pastBound: true };
  return { holding: true, sinceMs, untilMs: sinceMs + maxDeferMs };
}

/** The pacing of a catch-up: its rate and the tokens it had at `atMs`. */
export interface CatchUp {
  readonly ratePerSecond: number;
  readonly tokens: number;
  readonly atMs: number;
}

export interface CatchUpInput {
  /** The previous pass's pacing; undefined when none was under way. */
  readonly state?: CatchUp;
  /** Whether the stretch of waiting claims has outlasted the hold's bound (ClaimsFirstHold.pastBound). */
  readonly pastBound: boolean;
  /** Whether the pool is at its low-water mark, or has fewer Ready members than waiting claims: its claims need the refill now. */
  readonly short: boolean;
  /** Members the pool lacks, not counting creates already under way. */
  readonly deficit: number;
  /** Creates the pass would make without pacing. */
  readonly want: number;
  readonly maxDeferMs: number;
  readonly now: number;
}

export interface CatchUpGrant {
  readonly granted: number;
  /** Keep for the next pass; undefined when no pacing is under way. */
  readonly state?: CatchUp;
  /** When the next create may go, if this pass granted fewer than it wanted. */
  readonly nextAtMs?: number;
}

/** A catch-up's bucket holds this much of its rate at most: 100 ms of creates, so no lump forms between passes. */
const CATCH_UP_BURST_S = 0.1;

/**
 * How many of `want` creates go now while a steady claim load outlasts the hold. The rate is twice
 * the deficit spread over the bound (the deficit built up over about one bound, so the backlog
 * drains in about one bound while claims keep coming at the rate that built it), never lower than
 * a rate it already had (as creates land the deficit shrinks, and a falling rate would stall at the
 * claims' own rate with the backlog still there), and at least one create per second. It starts
 * with one token. No pacing when the stretch has not outlasted the bound (the hold decides), when
 * the pool is short (its claims need members now) or with the flag at 0s.
 */
export function catchUpGrant(input: CatchUpInput): CatchUpGrant {
  const { want, now } = input;
  // The stretch ended (or never outlasted the bound): nothing to pace, nothing to remember.
  if (!input.pastBound || input.maxDeferMs <= 0) return { granted: Math.max(0, want) };
  // Short, or nothing wanted: no pacing this pass, and the rate so far is kept.
  if (input.short || want <= 0) return { granted: Math.max(0, want), ...(input.state ? { state: input.state } : {}) };
  const ratePerSecond = Math.max(1, input.state?.ratePerSecond ?? 0, (2 * input.deficit * 1000) / input.maxDeferMs);
  const capacity = Math.max(1, ratePerSecond * CATCH_UP_BURST_S);
  const accrued = input.state ? input.state.tokens + (Math.max(0, now - input.state.atMs) * ratePerSecond) / 1000 : 1;
  const tokens = Math.min(capacity, accrued);
  const granted = Math.min(Math.floor(want), Math.floor(tokens + 1e-9));
  const state: CatchUp = { ratePerSecond, tokens: tokens - granted, atMs: now };
  if (granted >= want) return { granted, state };
  return { granted, state, nextAtMs: now + Math.ceil(((1 - state.tokens) * 1000) / ratePerSecond) };
}
