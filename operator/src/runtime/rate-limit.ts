/**
 * client-go's rate limiters (util/workqueue/default_rate_limiters.go and flowcontrol's token
 * bucket), shared by the work queue (retry pacing) and the API client (kube-api-qps/burst).
 */
import { Clock, MONOTONIC_CLOCK } from './clock';

/**
 * A token bucket that hands out reservations: `reserve()` takes a token now or, when the bucket is
 * empty, the next one to be minted and says how long to wait for it. Reservations queue up in
 * order (the balance goes negative), so concurrent callers are paced at `qps` and never stampede.
 */
export class TokenBucket {
  private tokens: number;
  private last: number;

  public constructor(private readonly qps: number, private readonly burst: number, private readonly clock: Clock = MONOTONIC_CLOCK) {
    if (!(qps > 0) || !(burst >= 1)) throw new Error(`a token bucket needs qps > 0 and burst >= 1 (got qps ${qps}, burst ${burst})`);
    this.tokens = burst;
    this.last = clock.now();
  }

  /** Milliseconds until the reserved token is available; 0 means go now. */
  public reserve(): number {
    const now = this.clock.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
    this.last = now;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : (-this.tokens / this.qps) * 1000;
  }

  /** Tokens in the bucket now (without taking one). */
  public available(): number {
    return Math.min(this.burst, this.tokens + ((this.clock.now() - this.last) / 1000) * this.qps);
  }

  /** Takes a token if one is there now; never reserves ahead (for callers that refuse rather than wait). */
  public tryTake(): boolean {
    const now = this.clock.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
    this.last = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

/** Decides how long a key waits before its next attempt. */
export interface RateLimiter {
  when(key: string): number;
  /** The key succeeded: start its backoff over. */
  forget(key: string): void;
  /** Failures recorded for `key` since its last forget. */
  retries(key: string): number;
}

/** Per-key exponential backoff: base·2^failures, capped (client-go: 5 ms → 1000 s). */
export class ItemExponentialBackoff implements RateLimiter {
  private readonly failures = new Map<string, number>();

  public constructor(private readonly baseMs = 5, private readonly maxMs = 1_000_000) {}

  public when(key: string): number {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    // 2 ** n is Infinity for large n, which the cap absorbs; never NaN.
    return Math.min(this.baseMs * 2 ** n, this.maxMs);
  }

  public forget(key: string): void {
    this.failures.delete(key);
  }

  public retries(key: string): number {
    return this.failures.get(key) ?? 0;
  }
}

/** The overall token bucket as a RateLimiter: bounds the retry rate of all keys together. */
export class BucketRateLimiter implements RateLimiter {
  private readonly bucket: TokenBucket;

  public constructor(qps: number, burst: number, clock: Clock = MONOTONIC_CLOCK) {
    this.bucket = new TokenBucket(qps, burst, clock);
  }

  public when(): number {
    return this.bucket.reserve();
  }

  public forget(): void {}

  public retries(): number {
    return 0;
  }
}

/** The longest wait of several limiters; every limiter sees every call (as in client-go). */
export class MaxOfRateLimiter implements RateLimiter {
  private readonly limiters: RateLimiter[];

  public constructor(...limiters: RateLimiter[]) {
    this.limiters = limiters;
  }

  public when(key: string): number {
    return Math.max(...this.limiters.map((l) => l.when(key)));
  }

  public forget(key: string): void {
    for (const l of this.limiters) l.forget(key);
  }

  public retries(key: string): number {
    return Math.max(...this.limiters.map((l) => l.retries(key)));
  }
}

export interface DefaultRateLimiterOptions {
  readonly baseDelayMs?: number;
  readonly maxDelayMs?: number;
  readonly qps?: number;
  readonly burst?: number;
  readonly clock?: Clock;
}

/** client-go's DefaultControllerRateLimiter: max(per-key 5 ms → 1000 s, overall 10 qps burst 100). */
export function defaultControllerRateLimiter(options: DefaultRateLimiterOptions = {}): RateLimiter {
  return new MaxOfRateLimiter(
    new ItemExponentialBackoff(options.baseDelayMs ?? 5, options.maxDelayMs ?? 1_000_000),
    new BucketRateLimiter(options.qps ?? 10, options.burst ?? 100, options.clock),
  );
}
