/**
 * Children this process created that the informer caches have not shown yet. A Sandbox event can
 * arrive between our create call and the child's own watch event (our pod-name annotation patch
 * triggers exactly that); without this memory the pass would see no Pod, create it again, get
 * AlreadyExists and fetch it: two wasted requests per Sandbox under load.
 *
 * An entry goes as soon as any informer event or cache read shows the object (whatever its UID), or
 * after `ttlMs`, so a lost event can mislead a pass only for that long. Time is passed in.
 */
import type { ChildKind } from './desired';
import type { KubeObject } from '../../runtime/types';

/** Far above watch latency (milliseconds), short enough that a lost event costs little. */
export const UNSEEN_CREATE_TTL_MS = 30_000;

export class UnseenCreates {
  private readonly entries = new Map<string, { readonly object: KubeObject; readonly atMs: number }>();

  public constructor(private readonly ttlMs: number = UNSEEN_CREATE_TTL_MS) {}

  public get size(): number {
    return this.entries.size;
  }

  /** Our create of `object` succeeded at `nowMs`. */
  public created(kind: ChildKind, object: KubeObject, nowMs: number): void {
    this.entries.set(keyOf(kind, object.metadata.namespace, object.metadata.name), { object, atMs: nowMs });
  }

  /** An informer event (add, update or delete) showed this object: the cache is the truth from now on. */
  public seen(kind: ChildKind, object: KubeObject): void {
    this.entries.delete(keyOf(kind, object.metadata.namespace, object.metadata.name));
  }

  /** Our delete of the object was accepted (or found it gone): it must not be remembered as existing. */
  public deleted(kind: ChildKind, namespace: string | undefined, name: string): void {
    this.entries.delete(keyOf(kind, namespace, name));
  }

  /** The cached object when there is one, else a recent create of ours the cache has not shown. */
  public resolve<T extends KubeObject>(
    kind: ChildKind, namespace: string | undefined, name: string, cached: T | undefined, nowMs: number,
  ): T | undefined {
    const key = keyOf(kind, namespace, name);
    if (cached) {
      this.entries.delete(key);
      return cached;
    }
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (nowMs - entry.atMs > this.ttlMs) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.object as T;
  }
}

function keyOf(kind: ChildKind, namespace: string | undefined, name: string): string {
  return `${kind}/${namespace ?? ''}/${name}`;
}
