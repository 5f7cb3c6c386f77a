/**
 * Deferrable work, put off while claims wait (part of claims-first, ./index.ts): a controller's
 * deferrable writes by key (`Deferral`), and fire-and-forget sends such as Events
 * (`DeferredSends`). Both come back when the operator turns calm (ClaimPressure.onCalm), or after
 * `--claims-first-max-defer` at the latest.
 */
import type { ClaimPressure } from './pressure';
import type { Clock, TimerHandle } from '../../runtime/clock';

/**
 * Deferrable work of one controller, by key: `defer(key)` says whether the key's deferrable writes
 * wait now (claims are waiting, and the key has not waited `maxDeferMs` yet). A deferred key is
 * handed to `wake` when the operator turns calm; the caller also requeues it after the returned
 * delay, the bound on how late it runs.
 */
export class Deferral {
  private readonly since = new Map<string, number>();

  public constructor(
    private readonly pressure: ClaimPressure,
    wake: (key: string) => void,
    /** The longest a key's deferrable work waits (`--claims-first-max-defer`): under a never-ending load it runs this late. */
    private readonly maxDeferMs: number,
  ) {
    pressure.onCalm(() => {
      const keys = [...this.since.keys()];
      this.since.clear();
      for (const key of keys) wake(key);
    });
  }

  /** Keys waiting now. */
  public get size(): number {
    return this.since.size;
  }

  /** Whether `key`'s deferrable work waits now; if so, look again after `retryAfterMs` at the latest. */
  public defer(key: string): { readonly defer: false } | { readonly defer: true; readonly retryAfterMs: number } {
    const now = this.pressure.now();
    if (!this.pressure.busy) {
      this.since.delete(key);
      return { defer: false };
    }
    const since = this.since.get(key) ?? now;
    if (now - since >= this.maxDeferMs) {
      this.since.delete(key);
      return { defer: false };
    }
    this.since.set(key, since);
    return { defer: true, retryAfterMs: Math.max(1, since + this.maxDeferMs - now) };
  }

  /** `key` did its deferrable work, or has none left. */
  public done(key: string): void {
    this.since.delete(key);
  }
}

/** Most fire-and-forget sends a DeferredSends holds; past it they go at once (late work, not lost work). */
export const MAX_HELD_SENDS = 500;

/**
 * Fire-and-forget sends (Events) held while claims wait: sent in order when the operator turns
 * calm, or `maxDeferMs` after the oldest was held, whichever comes first.
 */
export class DeferredSends {
  private held: Array<() => void> = [];
  private timer?: TimerHandle;

  public constructor(private readonly pressure: ClaimPressure, private readonly clock: Clock, private readonly maxDeferMs: number) {
    pressure.onCalm(() => this.flush());
  }

  /** Sends held now. */
  public get size(): number {
    return this.held.length;
  }

  /** Run `send` now, or later if claims wait. */
  public run(send: () => void): void {
    if (!this.pressure.busy || this.held.length >= MAX_HELD_SENDS) {
      send();
      return;
    }
    this.held.push(send);
    this.timer ??= this.clock.setTimeout(() => this.flush(), this.maxDeferMs);
  }

  public flush(): void {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    const sends = this.held;
    this.held = [];
    for (const send of sends) send();
  }
}
