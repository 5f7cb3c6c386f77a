/**
 * Expectations: the pool's memory of writes the informer cache has not shown yet, so a pass that
 * runs on a lagging cache does not create the same members twice (upstream saw ~10x over-creation
 * without it, #1215) or delete the same member twice.
 *
 * Upstream's gate is all-or-nothing: while any earlier create or delete is unobserved, the pool
 * creates nothing, and a lost watch event idles it for the 5-minute timeout. Here:
 * - Creates are counted, not gated: `pendingCreates` is subtracted from the deficit, so the pool
 *   may keep creating up to `replicas` while earlier creates are in flight. A member claimed
 *   during a big refill is replaced at once instead of after the whole batch is observed.
 * - Created members are tracked by UID (from the create response) and checked against the cache on
 *   every pass (`seen`), not only through event callbacks, so a handler that missed an event cannot
 *   leave a stale count behind once the cache has the object.
 * - Every record expires `timeoutMs` after it was made. A truly lost event holds back only its own
 *   slot, and only until then: the pool can never be wedged.
 * - A create whose outcome is unknown (timeout, connection reset, 5xx) keeps its slot until it
 *   expires: the object may exist, and counting it avoids a duplicate. A definite refusal (4xx)
 *   frees the slot at once.
 *
 * Time is always passed in; the object holds no timers.
 */

/** How long an unobserved write is remembered. A minute is far above normal watch latency
 *  (milliseconds) yet short enough that a lost event costs little. */
export const DEFAULT_EXPECTATIONS_TIMEOUT_MS = 60_000;

export class PoolExpectations {
  private nextToken = 1;
  /** Create calls issued and not answered, or answered ambiguously: token -> when. */
  private readonly openCreates = new Map<number, number>();
  /** Created objects the cache has not shown: UID -> when. */
  private readonly unseenCreates = new Map<string, number>();
  /** Deletes issued whose object the cache still shows: UID -> when. */
  private readonly deletes = new Map<string, number>();

  public constructor(public readonly timeoutMs: number = DEFAULT_EXPECTATIONS_TIMEOUT_MS) {}

  /** Record `count` creates about to be issued; returns one token per call, to report its outcome. */
  public expectCreates(count: number, now: number): number[] {
    const tokens: number[] = [];
    for (let i = 0; i < count; i++) {
      const token = this.nextToken++;
      this.openCreates.set(token, now);
      tokens.push(token);
    }
    return tokens;
  }

  /** The create for `token` returned the object with `uid`: it stays pending until the cache has it. */
  public createSucceeded(token: number, uid: string, now: number): void {
    if (!this.openCreates.delete(token)) return;
    this.unseenCreates.set(uid, now);
  }

  /**
   * The create for `token` failed. `definite` (a 4xx: the object was not created) frees the slot;
   * otherwise the slot is kept until it expires, because the object may exist.
   */
  public createFailed(token: number, definite: boolean, now: number): void {
    if (!this.openCreates.has(token)) return;
    if (definite) this.openCreates.delete(token);
    else this.openCreates.set(token, now);
  }

  /** Record a delete about to be issued: recorded first, because its watch event can beat the response. */
  public expectDelete(uid: string, now: number): void {
    this.deletes.set(uid, now);
  }

  /** The delete failed for a reason other than NotFound (which counts as done): the object stays a member. */
  public deleteFailed(uid: string): void {
    this.deletes.delete(uid);
  }

  /** An informer event showed `uid` (added, updated or deleted): whatever we expected about it happened. */
  public observe(uid: string, deleted: boolean): void {
    this.unseenCreates.delete(uid);
    if (deleted) this.deletes.delete(uid);
  }

  /**
   * Creates not yet visible in the cache, after dropping expired records and those `seen` reports the
   * cache now holds (as a member or not: a member claimed before the pool saw it is still observed).
   */
  public pendingCreates(now: number, seen: (uid: string) => boolean): number {
    this.expire(now);
    for (const uid of [...this.unseenCreates.keys()]) if (seen(uid)) this.unseenCreates.delete(uid);
    return this.openCreates.size + this.unseenCreates.size;
  }

  /** UIDs whose delete was issued and which the cache still holds (an object gone from the cache is observed deleted). */
  public pendingDeletes(now: number, seen: (uid: string) => boolean): ReadonlySet<string> {
    this.expire(now);
    for (const uid of [...this.deletes.keys()]) if (!seen(uid)) this.deletes.delete(uid);
    return new Set(this.deletes.keys());
  }

  /** When the earliest record expires: the pool should look again then, in case an event was lost. */
  public nextExpiryAtMs(): number | undefined {
    let earliest: number | undefined;
    for (const map of [this.openCreates, this.unseenCreates, this.deletes] as Map<unknown, number>[]) {
      for (const at of map.values()) earliest = Math.min(earliest ?? Infinity, at + this.timeoutMs);
    }
    return earliest;
  }

  /** Whether nothing is outstanding. */
  public get idle(): boolean {
    return this.openCreates.size === 0 && this.unseenCreates.size === 0 && this.deletes.size === 0;
  }

  private expire(now: number): void {
    for (const map of [this.openCreates, this.unseenCreates, this.deletes] as Map<unknown, number>[]) {
      for (const [key, at] of map) if (now - at >= this.timeoutMs) map.delete(key);
    }
  }
}
