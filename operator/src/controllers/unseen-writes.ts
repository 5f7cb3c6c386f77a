/**
 * Creates, updates and deletes a controller made that its informer cache may not show yet, as
 * the values of an Expectations (runtime/expectations.ts) keyed by the object's name. A pass woken
 * by another event before the object's own would otherwise write again on the stale cache: a
 * second create (AlreadyExists and a GET to recover), a second delete, an update that loses to a
 * 409. The Sandbox, template and warm-pool controllers share this reading of "shown".
 */
import { isDeleting } from '../model';
import type { KubeObject } from '../runtime/types';

export interface UnseenWrite {
  /** Set for a delete: the UID deleted. */
  readonly deletedUid?: string;
  /** Set for an update: the resourceVersion it replaced. */
  readonly replacedVersion?: string;
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

/** `obj` as a delete we made leaves it until the cache shows the delete: terminating. */
export function asTerminating<T extends KubeObject>(obj: T, nowMs: number): T {
  return { ...obj, metadata: { ...obj.metadata, deletionTimestamp: new Date(nowMs).toISOString() } };
}
