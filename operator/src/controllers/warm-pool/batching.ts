/**
 * How fast a pool may write: slow-start waves within a pass, and a token bucket across passes
 * (`--sandbox-warm-pool-max-batch-size`, `--sandbox-warm-pool-max-refill-rate`). Both are pure:
 * state in, state out, time passed in.
 */

/**
 * Split `count` writes into waves of 1, 2, 4, 8, ... issued one wave after another (the writes in a
 * wave run in parallel). A systematic failure (quota exhausted, a webhook refusing) then costs one
 * failed call, not `count`; the caller stops at the first wave with an error. The last wave is
 * whatever remains.
 */
export function slowStartWaves(count: number): number[] {
  const waves: number[] = [];
  let remaining = Math.max(0, Math.floor(count));
  for (let size = 1; remaining > 0; size *= 2) {
    const wave = Math.min(size, remaining);
    waves.push(wave);
    remaining -= wave;
  }
  return waves;
}

/** A token bucket's state: `tokens` as of `atMs`. */
export interface TokenBucket {
  readonly tokens: number;
  readonly atMs: number;
}

export interface TokenGrant {
  /** Creates allowed now. */
  readonly granted: number;
  /** The bucket after the grant; keep it for the next pass. */
  readonly bucket: TokenBucket | undefined;
  /** When the next whole token accrues, if the grant fell short of the request. */
  readonly nextTokenAtMs?: number;
}

// Tolerance for floating-point accrual: at exactly the promised time a token must be whole.
const EPSILON = 1e-9;

/**
 * Take up to `want` tokens from a bucket filled at `ratePerSecond` with room for one second of
 * tokens (at least one), full at the start (`bucket` undefined). A rate of 0 means unpaced: the
 * whole request is granted and no state is kept. Tokens are taken only for what is granted; the
 * caller should ask only for creates it will issue, so nothing needs refunding.
 */
export function takeTokens(bucket: TokenBucket | undefined, want: number, ratePerSecond: number, now: number): TokenGrant {
  if (ratePerSecond <= 0) return { granted: Math.max(0, want), bucket: undefined };
  const capacity = Math.max(1, ratePerSecond);
  const accrued = bucket ? bucket.tokens + (Math.max(0, now - bucket.atMs) * ratePerSecond) / 1000 : capacity;
  const tokens = Math.min(capacity, accrued);
  const granted = Math.max(0, Math.min(Math.floor(want), Math.floor(tokens + EPSILON)));
  const left = Math.max(0, tokens - granted);
  const next: TokenBucket = { tokens: left, atMs: now };
  if (granted >= want) return { granted, bucket: next };
  return { granted, bucket: next, nextTokenAtMs: now + Math.ceil(((1 - left) * 1000) / ratePerSecond) };
}
