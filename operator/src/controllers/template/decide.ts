/**
 * The template controller's one decision: what to do about `<template>-network-policy`, given the
 * template and the policy in the cache (upstream's extensions/controllers/sandboxtemplate_controller.go).
 */
import { desiredNetworkPolicy, type NetworkPolicyOptions } from './desired';
import { networkPolicyNameFor, type NetworkPolicyPortJson, type NetworkPolicySpecJson } from '../../../../src/api/network-policy-defaults';
import { isControlledBy, isDeleting, type NetworkPolicy, type SandboxTemplate } from '../../model';
import { canonicalJson } from '../../model/blueprint';

export type NetworkPolicyAction =
  /** Create `object`. */
  | { readonly type: 'create'; readonly object: NetworkPolicy }
  /** Replace the policy with `object`; it carries the cached resourceVersion, so a concurrent change fails with 409. */
  | { readonly type: 'update'; readonly object: NetworkPolicy }
  /** Delete the policy; `uid` guards against deleting a namesake created meanwhile. */
  | { readonly type: 'delete'; readonly name: string; readonly uid: string }
  | { readonly type: 'none'; readonly reason: string }
  /** A policy of that name exists and belongs to someone else: report it, never take it over. */
  | { readonly type: 'conflict'; readonly message: string };

/**
 * The API server's defaults for a NetworkPolicySpec (ports without a protocol are TCP). Applied to
 * the desired spec before comparing, so a custom rule without a protocol does not look like drift
 * on every pass (upstream compares the raw spec and rewrites the policy each time).
 */
function withServerDefaults(spec: NetworkPolicySpecJson): NetworkPolicySpecJson {
  const ports = (list: readonly NetworkPolicyPortJson[] | undefined) =>
    list?.map((p) => ({ ...p, protocol: p.protocol ?? 'TCP' }));
  return {
    ...spec,
    ...(spec.ingress ? { ingress: spec.ingress.map((r) => ({ ...r, ...(r.ports ? { ports: ports(r.ports) } : {}) })) } : {}),
    ...(spec.egress ? { egress: spec.egress.map((r) => ({ ...r, ...(r.ports ? { ports: ports(r.ports) } : {}) })) } : {}),
  };
}

/** Whether two specs are the same policy; empty and absent lists are equal, as in Kubernetes' semantic equality. */
function sameSpec(a: NetworkPolicySpecJson, b: NetworkPolicySpecJson): boolean {
  return canonicalJson(withServerDefaults(a)) === canonicalJson(withServerDefaults(b));
}

/**
 * What to do about the template's NetworkPolicy.
 *
 * - Unmanaged: delete the policy only if this template controls it; a policy someone else owns
 *   (for example one from Git) is left alone.
 * - Managed: create it when missing; replace its spec when it drifted; report a conflict when a
 *   policy of that name is not controlled by this template (upstream retries that error with
 *   backoff forever; the wiring should surface it as an event instead).
 * - A policy being deleted is waited for: its delete event brings the template back.
 */
export function networkPolicyAction(
  template: SandboxTemplate,
  existing: NetworkPolicy | undefined,
  options: NetworkPolicyOptions = {},
): NetworkPolicyAction {
  const desired = desiredNetworkPolicy(template, options);
  const owned = existing !== undefined && isControlledBy(existing, template.metadata.uid);
  if (!desired) {
    if (existing && owned && !isDeleting(existing)) {
      return { type: 'delete', name: existing.metadata.name, uid: existing.metadata.uid ?? '' };
    }
    return { type: 'none', reason: existing && !owned ? 'unmanaged; the existing policy belongs to someone else' : 'unmanaged' };
  }
  if (!existing) return { type: 'create', object: desired };
  if (!owned) {
    const name = networkPolicyNameFor(template.metadata.name);
    return {
      type: 'conflict',
      message: `NetworkPolicy "${name}" exists and is not controlled by SandboxTemplate "${template.metadata.name}"; `
        + 'delete or rename that policy, or set spec.networkPolicyManagement: Unmanaged on the template to manage it yourself',
    };
  }
  if (isDeleting(existing)) return { type: 'none', reason: 'the policy is being deleted; it is recreated once gone' };
  if (sameSpec(existing.spec, desired.spec)) return { type: 'none', reason: 'up to date' };
  const { managedFields: _dropped, ...metadata } = existing.metadata;
  // apiVersion and kind are restated because list items in an informer cache may lack them.
  return { type: 'update', object: { ...existing, apiVersion: desired.apiVersion, kind: desired.kind, metadata, spec: desired.spec } };
}
