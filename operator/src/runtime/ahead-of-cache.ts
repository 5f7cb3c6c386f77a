/**
 * Objects this process wrote whose watch events have not reached the informer cache yet. Passes
 * woken by other events (a child's update often overtakes the parent's own watch event) would
 * otherwise decide on the stale cached object and repeat the write, or send it with a stale
 * resourceVersion and lose a round trip to a 409.
 *
 * An entry is used only while the cache shows a resourceVersion from our own chain of writes: the
 * version the first write was based on, or the result of an earlier write in the chain. Any other
 * version (our last write arriving, or someone else's write) makes the cache the truth again and
 * drops the entry, so a foreign change is never hidden and nothing needs a timer.
 */
import type { KubeObject } from './types';

interface Entry<T> {
  /** Cached versions that are older than `object`: the chain's base and its intermediate results. */
  readonly behind: ReadonlySet<string | undefined>;
  readonly object: T;
}

export class AheadOfCache<T extends KubeObject> {
  private readonly entries = new Map<string, Entry<T>>();

  public get size(): number {
    return this.entries.size;
  }

  /** The object to decide on: our last write's result while the cache is behind it, else `cached`. */
  public current(key: string, cached: T): T {
    const entry = this.entries.get(key);
    if (!entry) return cached;
    if (entry.behind.has(cached.metadata.resourceVersion)) return entry.object;
    this.entries.delete(key);
    return cached;
  }

  /**
   * We wrote while the cache showed `cached`, and `result` is the object now (the server's
   * response; its resourceVersion extends the chain).
   */
  public wrote(key: string, cached: T, result: T): void {
    const behind = new Set<string | undefined>([cached.metadata.resourceVersion]);
    const previous = this.entries.get(key);
    if (previous?.behind.has(cached.metadata.resourceVersion)) {
      for (const v of previous.behind) behind.add(v);
      if (previous.object.metadata.resourceVersion !== result.metadata.resourceVersion) behind.add(previous.object.metadata.resourceVersion);
    }
    this.entries.set(key, { behind, object: result });
  }

  public forget(key: string): void {
    this.entries.delete(key);
  }
}
