/**
 * Small readers of object metadata and conditions shared by the template, warm-pool and claim
 * decisions. Ownership is always decided by the controller ownerReference's UID: names can be
 * reused after a delete, UIDs cannot.
 */
import type { Condition } from './types';
import { apiVersionOf, type KindNames } from '../../../../src/api/groups';
import type { KubeObject, OwnerReference } from '../../runtime/types';

/** The controller ownerReference of `obj`, if any. */
export function controllerRefOf(obj: KubeObject): OwnerReference | undefined {
  return obj.metadata.ownerReferences?.find((ref) => ref.controller === true);
}

/** Whether `obj`'s controller is the object with UID `ownerUid`. */
export function isControlledBy(obj: KubeObject, ownerUid: string | undefined): boolean {
  return ownerUid !== undefined && ownerUid !== '' && controllerRefOf(obj)?.uid === ownerUid;
}

/** Whether `ref` points at `kind` (group and kind; the version is ignored so older refs still match). */
export function refIsKind(ref: OwnerReference | undefined, kind: KindNames): boolean {
  if (!ref) return false;
  const slash = ref.apiVersion.indexOf('/');
  const group = slash < 0 ? '' : ref.apiVersion.slice(0, slash);
  return group === kind.group && ref.kind === kind.kind;
}

/**
 * The controller ownerReference that makes `owner` responsible for a child: garbage collection
 * deletes the child with its owner, and blockOwnerDeletion keeps a foreground delete of the owner
 * waiting for it.
 */
export function controllerRefTo(owner: KubeObject, kind: KindNames): OwnerReference {
  return {
    apiVersion: apiVersionOf(kind),
    kind: kind.kind,
    name: owner.metadata.name,
    uid: owner.metadata.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** Whether the API server is deleting `obj` (it has a deletionTimestamp). */
export function isDeleting(obj: KubeObject): boolean {
  return Boolean(obj.metadata.deletionTimestamp);
}

/** The condition of `type` in `conditions`, if present. */
export function findCondition(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/** Milliseconds since the epoch of an RFC 3339 time, or undefined when absent or unparsable. */
export function timeMs(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
}

/** RFC 3339 in UTC with seconds, the precision metav1.Time serialises. */
export function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}
