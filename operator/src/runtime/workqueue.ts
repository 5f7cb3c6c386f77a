/**
 * A work queue with client-go semantics (util/workqueue): a key is queued at most once however
 * often it is added, a key is never handed to two workers at once (a key added while being
 * processed is queued again when its worker calls done), delayed adds share one timer, and
 * retries are paced by a rate limiter (per-key exponential backoff max'ed with a token bucket).
 */
import { Clock, MONOTONIC_CLOCK, TimerHandle } from './clock';
import { DelayHeap } from './delay-heap';
import { RateLimiter, defaultControllerRateLimiter } from './rate-limit';
import { WorkQueue } from './types';

/** The longest delay a Node timer takes (2^31 - 1 ms, about 24.8 days). */
export const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

/** Hooks for the controller-runtime workqueue_* metrics; all optional. */
export interface WorkQueueMetrics {
  depth?(depth: number): void;
  added?(): void;
  retried?(): void;
  /** From add to get. */
  queuedFor?(ms: number): void;
  /** From get to done. */
  workedFor?(ms: number): void;
}

export interface WorkQueueOptions {
  readonly rateLimiter?: RateLimiter;
  readonly clock?: Clock;
  readonly metrics?: WorkQueueMetrics;
}

export class RateLimitedWorkQueue implements WorkQueue {
  private readonly clock: Clock;
  private readonly rateLimiter: RateLimiter;
  private readonly metrics: WorkQueueMetrics;
  /** FIFO of keys ready to process; `head` avoids O(n) shifts. */
  private items: string[] = [];
  private head = 0;
  /** Keys that need processing: queued, or added again while being processed. */
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly addedAt = new Map<string, number>();
  private readonly startedAt = new Map<string, number>();
  private readonly waiters: Array<(key: string | undefined) => void> = [];
  private readonly delayed = new DelayHeap();
  private timer: TimerHandle | undefined;
  private timerAt = Infinity;
  private shuttingDown = false;

  public constructor(options: WorkQueueOptions = {}) {
    this.clock = options.clock ?? MONOTONIC_CLOCK;
    this.rateLimiter = options.rateLimiter ?? defaultControllerRateLimiter({ clock: this.clock });
    this.metrics = options.metrics ?? {};
  }

  public get length(): number {
    return this.items.length - this.head;
  }

  /** Keys being processed right now. */
  public get inFlight(): number {
    return this.processing.size;
  }

  /** Keys waiting for an addAfter/addRateLimited timer. */
  public get waiting(): number {
    return this.delayed.size;
  }

  public get isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  public add(key: string): void {
    // After shutdown nothing new is accepted; queued keys still drain.
    if (this.shuttingDown || this.dirty.has(key)) return;
    this.dirty.add(key);
    this.addedAt.set(key, this.clock.now());
    this.metrics.added?.();
    // Its worker re-queues it on done(), so it is never processed twice at once.
    if (this.processing.has(key)) return;
    this.enqueue(key);
  }

  public addAfter(key: string, delayMs: number): void {
    if (this.shuttingDown) return;
    if (!(delayMs > 0)) {
      this.add(key);
      return;
    }
    this.delayed.schedule(key, this.clock.now() + delayMs);
    this.armTimer();
  }

  public addRateLimited(key: string): void {
    if (this.shuttingDown) return;
    this.metrics.retried?.();
    this.addAfter(key, this.rateLimiter.when(key));
  }

  /**
   * Drop `key`'s pending addAfter/addRateLimited, if any (a key already queued stays queued). The
   * controller calls this when a reconcile succeeds without asking to come back, so the deadline
   * of an object that was since deleted (a shutdownTime weeks ahead) does not linger in the heap.
   */
  public cancelDelayed(key: string): void {
    if (this.delayed.remove(key)) this.armTimer();
  }

  public forget(key: string): void {
    this.rateLimiter.forget(key);
  }

  /** Failures recorded for `key` since its last forget. */
  public retries(key: string): number {
    return this.rateLimiter.retries(key);
  }

  public get(): Promise<string | undefined> {
    if (this.length > 0) return Promise.resolve(this.take());
    if (this.shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  public done(key: string): void {
    if (!this.processing.delete(key)) return;
    const started = this.startedAt.get(key);
    this.startedAt.delete(key);
    if (started !== undefined) this.metrics.workedFor?.(this.clock.now() - started);
    if (this.dirty.has(key)) this.enqueue(key);
  }

  /**
   * Stop accepting keys and drop pending delayed adds (client-go's ShutDown). Keys already queued
   * are still handed out by get(); waiting getters resolve with undefined.
   */
  public shutDown(): void {
    this.shuttingDown = true;
    this.delayed.clear();
    this.disarmTimer();
    for (const waiter of this.waiters.splice(0)) waiter(undefined);
  }

  private enqueue(key: string): void {
    const waiter = this.waiters.shift();
    if (waiter) {
      // Hand the key straight to a waiting worker; state changes now, the worker runs next tick.
      waiter(this.start(key));
      return;
    }
    this.items.push(key);
    this.metrics.depth?.(this.length);
  }

  private take(): string {
    const key = this.items[this.head++];
    // Compact once the consumed prefix dominates, keeping get() amortised O(1).
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    this.metrics.depth?.(this.length);
    return this.start(key);
  }

  private start(key: string): string {
    const now = this.clock.now();
    this.processing.add(key);
    this.dirty.delete(key);
    const added = this.addedAt.get(key);
    this.addedAt.delete(key);
    if (added !== undefined) this.metrics.queuedFor?.(now - added);
    this.startedAt.set(key, now);
    return key;
  }

  private armTimer(): void {
    const next = this.delayed.peekTime();
    if (next === undefined) {
      this.disarmTimer();
      return;
    }
    if (next === this.timerAt) return;
    this.disarmTimer();
    this.timerAt = next;
    // Node fires a longer timeout after 1 ms (with a TimeoutOverflowWarning), which would spin on a
    // far deadline (a shutdownTime weeks ahead); the capped timer fires early, finds nothing due and re-arms.
    this.timer = this.clock.setTimeout(() => this.fire(), Math.min(next - this.clock.now(), MAX_TIMER_DELAY_MS));
  }

  private disarmTimer(): void {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  private fire(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    for (const key of this.delayed.popDue(this.clock.now())) this.add(key);
    this.armTimer();
  }
}
