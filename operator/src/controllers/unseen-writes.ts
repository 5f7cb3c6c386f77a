/**
 * Creates, updates and deletes a controller made that its informer cache may not show yet, as
 * the values of an Expectations (runtime/expectations.ts) keyed by the object's name. A pass woken
 * by another event before the object's own would otherwise write again on the stale cache: a
 * second create (AlreadyExists and a GET to recover), a second delete, an update that loses to a
 * 409. The Sandbox, template and warm-pool controllers share this reading of "shown".
 */
import { isDeleting } from '../model';
import type { KubeObject } from '../runtime/types';

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
  if (write.deletedUid !== undefined) return cached === undefined || cached.metadata.uid !== write.deletedUid || isDeleting(cached);
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
