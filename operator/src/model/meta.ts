/**
 * Readers and builders of object metadata, for every controller. Ownership is always decided by
 * the controller ownerReference's UID: names can be reused after a delete, UIDs cannot.
 */
import { apiVersionOf, type KindNames } from '#api/groups';
import type { KubeObject, OwnerReference } from '../runtime/types';

/** The informer index of objects by the UID of their controller ownerReference: what an owner owns. */
export const CONTROLLER_UID_INDEX = 'controller-uid';

/** The CONTROLLER_UID_INDEX index function. */
export function controllerUidIndex(obj: KubeObject): string[] {
  const uid = controllerRefOf(obj)?.uid;
  return uid ? [uid] : [];
}

/** The controller ownerReference of `obj`, if any. */
export function controllerRefOf(obj: KubeObject): OwnerReference | undefined {
  return obj.metadata.ownerReferences?.find((ref) => ref.controller === true);
}

/** Whether `obj`'s controller is the object with UID `ownerUid` (an empty or absent UID matches nothing). */
export function isControlledBy(obj: KubeObject, ownerUid: string | undefined): boolean {
  return ownerUid !== undefined && ownerUid !== '' && controllerRefOf(obj)?.uid === ownerUid;
}

/** API group of an apiVersion such as `agents.x-k8s.io/v1beta1` (`''` for the core `v1`). */
export function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

/** Whether `ref` points at `kind` (group and kind; the version is ignored so older refs, e.g. v1alpha1, still match). */
export function refIsKind(ref: OwnerReference | undefined, kind: KindNames): boolean {
  return ref !== undefined && groupOf(ref.apiVersion) === kind.group && ref.kind === kind.kind;
}

/** The name of `obj`'s controller when that controller is of `kind`. */
export function controllerNameOfKind(obj: KubeObject, kind: KindNames): string | undefined {
  const ref = controllerRefOf(obj);
  return refIsKind(ref, kind) ? ref!.name : undefined;
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
