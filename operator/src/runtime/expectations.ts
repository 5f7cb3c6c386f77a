/**
 * Expectations: writes this process made that its informer caches have not shown yet (the idea
 * of client-go's ControllerExpectations, generalised). Watch events arrive after the write's
 * response, and an event about another object (a child's update, another claim) often wakes a
 * pass before them; a pass that decided on the stale cache alone would repeat the write (a second
 * create, a second adoption) or send it with a stale resourceVersion and lose a round trip to a 409.
 *
 * An entry is a key (whatever the caller looks the cache up by: `namespace/name`, a UID), the
 * value the caller needs meanwhile (the written object, what was annotated), and when it was made.
 * It ends, whichever comes first:
 * - when the cache shows the write: `isShown(value, cached)` is asked on every read (`pending`,
 *   `sweep`) and on every informer event of the key (`observe`, or `follow` to wire an informer),
 *   so a missed event handler cannot leave an entry behind once the cache has caught up;
 * - after `ttlMs`, so a truly lost event misleads decisions only for that long;
 * - by `forget` (the write failed for sure, or the owner of the entry went away).
 *
 * Time is passed in; the object holds no timers. `nextExpiryAtMs` tells a controller when to look
 * again in case an event was lost.
 */
import type { Informer, KubeObject } from './types';

/** Far above watch latency (milliseconds), short enough that a lost event costs little. */
export const DEFAULT_EXPECTATION_TTL_MS = 30_000;

export interface ExpectationsOptions<V, T> {
  /** Whether `cached` (the cache's object for the entry's key, undefined when it has none) shows the write. */
  readonly isShown: (value: V, cached: T | undefined) => boolean;
  /**
   * How long an entry may wait for the cache. `Infinity` for entries that must never lapse while
   * the cache is behind (their `isShown` ends them, or their owner forgets them).
   * @default DEFAULT_EXPECTATION_TTL_MS
   */
  readonly ttlMs?: number;
}

interface Entry<V> {
  readonly value: V;
  readonly atMs: number;
}

export class Expectations<V, T extends KubeObject = KubeObject> {
  public readonly ttlMs: number;
  private readonly entries = new Map<string, Entry<V>>();
  private prunedAtMs = -Infinity;

  public constructor(private readonly options: ExpectationsOptions<V, T>) {
    this.ttlMs = options.ttlMs ?? DEFAULT_EXPECTATION_TTL_MS;
  }

  public get size(): number {
    return this.entries.size;
  }

  /**
   * Record a write whose result the cache has yet to show (replaces an earlier entry of the key).
   * Expired entries are dropped here too, once per `ttlMs`, so an entry whose key is never read
   * again (its event came before the entry, then its owner went away) cannot stay for good.
   */
  public expect(key: string, value: V, nowMs: number): void {
    if (nowMs - this.prunedAtMs >= this.ttlMs) {
      this.prunedAtMs = nowMs;
      for (const [k, entry] of this.entries) if (nowMs - entry.atMs >= this.ttlMs) this.entries.delete(k);
    }
    this.entries.set(key, { value, atMs: nowMs });
  }

  /**
   * The value of the key's entry while the cache (`cached`) has not shown it and it has not expired;
   * otherwise undefined, and the entry is gone.
   */
  public pending(key: string, cached: T | undefined, nowMs: number): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (nowMs - entry.atMs >= this.ttlMs || this.options.isShown(entry.value, cached)) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  /** An informer event about the key: `cached` is the object now (undefined after a delete). */
  public observe(key: string, cached: T | undefined): void {
    const entry = this.entries.get(key);
    if (entry && this.options.isShown(entry.value, cached)) this.entries.delete(key);
  }

  /** Observe every event of `informer`, keyed by `keyOf` (an object without a key is ignored). */
  public follow(informer: Informer<T>, keyOf: (obj: T) => string | undefined): void {
    const seen = (obj: T, deleted: boolean) => {
      const key = keyOf(obj);
      if (key !== undefined) this.observe(key, deleted ? undefined : obj);
    };
    informer.addHandlers({
      onAdd: (obj) => seen(obj, false),
      onUpdate: (_old, obj) => seen(obj, false),
      onDelete: (obj) => seen(obj, true),
    });
  }

  /** Drop the key's entry: the write failed for sure, or what it was about is gone. */
  public forget(key: string): void {
    this.entries.delete(key);
  }

  /** The entries still pending, after dropping expired ones and those `lookup` (the cache) shows. */
  public sweep(nowMs: number, lookup: (key: string) => T | undefined): Array<[string, V]> {
    const out: Array<[string, V]> = [];
    for (const key of [...this.entries.keys()]) {
      const value = this.pending(key, lookup(key), nowMs);
      if (value !== undefined) out.push([key, value]);
    }
    return out;
  }

  /**
   * When the earliest entry expires, if any: look again then, in case an event was lost. `which`
   * limits it to some entries (one owner's, when one instance serves many).
   */
  public nextExpiryAtMs(which: (value: V) => boolean = () => true): number | undefined {
    let earliest: number | undefined;
    for (const { value, atMs } of this.entries.values()) if (which(value)) earliest = Math.min(earliest ?? Infinity, atMs + this.ttlMs);
    return earliest;
  }
}

/** Our last write of an object, and the cached versions it is ahead of. */
interface OwnWrite<T> {
  readonly object: T;
  /** The version the first write of the chain was based on, and the results of earlier writes in it. */
  readonly behind: ReadonlySet<string | undefined>;
}

/**
 * Expectations about an object this process keeps writing (a status, a claim's binding): decide
 * on our last write's result while the cache shows a version from our own chain of writes. Any
 * other version (our last write arriving, or someone else's write) makes the cache the truth again
 * and ends the entry, so a foreign change is never hidden. No expiry by default: deciding on a
 * cache that lags longer would send the next write with a stale resourceVersion, over and over;
 * owners forget an entry when its object is deleted.
 */
export class OwnWrites<T extends KubeObject> {
  private readonly expectations: Expectations<OwnWrite<T>, T>;

  public constructor(ttlMs = Infinity) {
    this.expectations = new Expectations<OwnWrite<T>, T>({
      isShown: (write, cached) => !cached || !write.behind.has(cached.metadata.resourceVersion),
      ttlMs,
    });
  }

  public get size(): number {
    return this.expectations.size;
  }

  /** The object to decide on: our last write's result while the cache is behind it, else `cached`. */
  public current(key: string, cached: T, nowMs: number): T {
    return this.expectations.pending(key, cached, nowMs)?.object ?? cached;
  }

  /** We wrote while the cache showed `cached`, and `result` is the object now (its resourceVersion extends the chain). */
  public wrote(key: string, cached: T, result: T, nowMs: number): void {
    const behind = new Set<string | undefined>([cached.metadata.resourceVersion]);
    const previous = this.expectations.pending(key, cached, nowMs);
    if (previous) {
      for (const version of previous.behind) behind.add(version);
      if (previous.object.metadata.resourceVersion !== result.metadata.resourceVersion) behind.add(previous.object.metadata.resourceVersion);
    }
    this.expectations.expect(key, { object: result, behind }, nowMs);
  }

  public forget(key: string): void {
    this.expectations.forget(key);
  }
}

/*
 * Creates, updates and deletes a controller made that its informer cache may not show yet, as the
 * values of an Expectations keyed by the object's name. A pass woken by another event before the
 * object's own would otherwise write again on the stale cache: a second create (AlreadyExists and
 * a GET to recover), a second delete, an update that loses to a 409. The Sandbox, template and
 * warm-pool controllers share this reading of "shown".
 */

export interface UnseenWrite<T extends KubeObject = KubeObject> {
  /** What a create or update returned: the object to decide on until the cache shows it. */
  readonly result?: T;
  /** Set for an update: the cached resourceVersion it replaced. */
  readonly replacedVersion?: string;
  /** Set for a delete: the UID deleted. */
  readonly deletedUid?: string;
}

/**
 * Whether `cached` (the cache's object of that name, if any) shows the write. A create shows once
 * the cache has an object of that name, whatever its UID (ours, or a namesake the next create
 * would hit too). An update shows once the cache holds any version but the one replaced (ours, or
 * someone's after it). A delete shows once that UID is gone from the cache or terminating.
 */
export function cacheShows(write: UnseenWrite, cached: KubeObject | undefined): boolean {
  if (write.deletedUid !== undefined) {
    return cached === undefined || cached.metadata.uid !== write.deletedUid || Boolean(cached.metadata.deletionTimestamp);
  }
  if (write.replacedVersion !== undefined) return cached?.metadata.resourceVersion !== write.replacedVersion;
  return cached !== undefined;
}

/**
 * The object to decide on: `cached`, unless `pending` (a write of ours the cache has not shown)
 * says otherwise: the write's result, or after our delete the cached object as terminating.
 */
export function decideOn<T extends KubeObject>(cached: T | undefined, pending: UnseenWrite<T> | undefined, nowMs: number): T | undefined {
  if (!pending) return cached;
  if (pending.deletedUid === undefined) return pending.result;
  return cached && { ...cached, metadata: { ...cached.metadata, deletionTimestamp: new Date(nowMs).toISOString() } };
}
