/**
 * The template controller's plan (pure, as in every controller folder): what to do about `<template>-network-policy`, given the
 * template and the policy in the cache (upstream's extensions/controllers/sandboxtemplate_controller.go).
 */
import { TemplateConditionReason, TemplateConditionType } from '#api/conditions';
import { KINDS } from '#api/groups';
import { SandboxAnnotations } from '#api/labels';
import { networkPolicyNameFor, type NetworkPolicyPortJson, type NetworkPolicySpecJson } from '#api/network-policy-defaults';
import { desiredNetworkPolicy, isUnmanaged, type NetworkPolicyOptions } from './desired';
import { type Condition, type ConditionInput, isDeleting, refIsKind, setCondition, type NetworkPolicy, type SandboxTemplate } from '../../model';
import { canonicalJson } from '../../model/blueprint';
import { isTemplatePolicy, routerLabelsIn } from '../../model/template-gate';

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

/** Whether `policy` already carries the marks of `desired` and no ownerReference to a template (which GC would act on). */
function sameMarks(policy: NetworkPolicy, desired: NetworkPolicy): boolean {
  const has = (have: { [key: string]: string } | undefined, want: { [key: string]: string } | undefined) =>
    Object.entries(want ?? {}).every(([key, value]) => have?.[key] === value);
  return has(policy.metadata.labels, desired.metadata.labels) && has(policy.metadata.annotations, desired.metadata.annotations)
    && !(policy.metadata.ownerReferences ?? []).some((ref) => refIsKind(ref, KINDS.template));
}

/**
 * What to do about the template's NetworkPolicy.
 *
 * - Unmanaged: delete the policy only if it is this template's (see isTemplatePolicy); a policy
 *   someone else owns (for example one from Git) is left alone.
 * - Managed: create it when missing; replace it when its spec drifted or it still has upstream's
 *   ownerReference to the template (dropped so garbage collection cannot take it from running
 *   Sandboxes, see desired.ts); report a conflict when a policy of that name is someone else's
 *   (upstream retries that error with backoff forever; the wiring surfaces it as an event and a
 *   condition instead).
 * - A policy being deleted is waited for: its delete event brings the template back.
 */
export function networkPolicyAction(
  template: SandboxTemplate,
  existing: NetworkPolicy | undefined,
  options: NetworkPolicyOptions = {},
): NetworkPolicyAction {
  const desired = desiredNetworkPolicy(template, options);
  const owned = existing !== undefined && isTemplatePolicy(existing, template.metadata.name);
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
      message: `NetworkPolicy "${name}" exists and is not the policy of SandboxTemplate "${template.metadata.name}"; `
        + 'delete or rename that policy, or set spec.networkPolicyManagement: Unmanaged on the template to manage it yourself',
    };
  }
  if (isDeleting(existing)) return { type: 'none', reason: 'the policy is being deleted; it is recreated once gone' };
  if (sameSpec(existing.spec, desired.spec) && sameMarks(existing, desired)) return { type: 'none', reason: 'up to date' };
  const { managedFields: _dropped, ownerReferences, ...metadata } = existing.metadata;
  const others = (ownerReferences ?? []).filter((ref) => !refIsKind(ref, KINDS.template));
  // apiVersion and kind are restated because list items in an informer cache may lack them.
  return {
    type: 'update',
    object: {
      ...existing,
      apiVersion: desired.apiVersion,
      kind: desired.kind,
      metadata: {
        ...metadata,
        ...(others.length > 0 ? { ownerReferences: others } : {}),
        labels: { ...metadata.labels, ...desired.metadata.labels },
        annotations: { ...metadata.annotations, ...desired.metadata.annotations },
      },
      spec: desired.spec,
    },
  };
}

/**
 * What to do about the policy of a template that is gone (`templateName`, not in the cache):
 * keep it while `sandboxesLeft` Sandboxes built from the template still exist (their Pods still
 * need it), delete it once none is left. Only the operator's own policy (by its annotation) is
 * touched; one still controlled by a template is garbage collection's.
 */
export function orphanedPolicyAction(templateName: string, policy: NetworkPolicy | undefined, sandboxesLeft: number): NetworkPolicyAction {
  if (!policy) return { type: 'none', reason: 'no policy' };
  if (policy.metadata.annotations?.[SandboxAnnotations.SANDBOX_TEMPLATE_REF] !== templateName) {
    return { type: 'none', reason: 'not the operator\'s policy for this template' };
  }
  if (isDeleting(policy)) return { type: 'none', reason: 'already being deleted' };
  if (sandboxesLeft > 0) return { type: 'none', reason: `kept: ${sandboxesLeft} Sandbox(es) built from the deleted template still exist` };
  return { type: 'delete', name: policy.metadata.name, uid: policy.metadata.uid ?? '' };
}

/**
 * The template's status conditions after `action` (ours; upstream templates have no status):
 * NetworkPolicyReady says whether pools and claims may build Sandboxes from it as far as the
 * policy goes, PodLabelsAllowed whether its Pods would pass for the router.
 */
export function templateConditions(
  template: SandboxTemplate,
  existing: NetworkPolicy | undefined,
  action: NetworkPolicyAction,
  routerPodLabels: { readonly [key: string]: string } | undefined,
  nowMs: number,
): Condition[] {
  const name = networkPolicyNameFor(template.metadata.name);
  const observedGeneration = template.metadata.generation ?? 0;
  let policy: ConditionInput;
  if (isUnmanaged(template)) {
    policy = {
      type: TemplateConditionType.NETWORK_POLICY_READY,
      status: 'True',
      reason: TemplateConditionReason.UNMANAGED,
      observedGeneration,
      message: 'networkPolicyManagement is Unmanaged: the operator writes no NetworkPolicy, and Sandboxes from this template are isolated only by policies you write',
    };
  } else if (action.type === 'conflict') {
    policy = { type: TemplateConditionType.NETWORK_POLICY_READY, status: 'False', reason: TemplateConditionReason.NETWORK_POLICY_CONFLICT, observedGeneration, message: action.message };
  } else if (existing && action.type !== 'create' && !isDeleting(existing)) {
    policy = {
      type: TemplateConditionType.NETWORK_POLICY_READY,
      status: 'True',
      reason: TemplateConditionReason.NETWORK_POLICY_READY,
      observedGeneration,
      message: `NetworkPolicy "${name}" selects the Pods of Sandboxes built from this template`,
    };
  } else {
    policy = {
      type: TemplateConditionType.NETWORK_POLICY_READY,
      status: 'False',
      reason: TemplateConditionReason.NETWORK_POLICY_PENDING,
      observedGeneration,
      message: `NetworkPolicy "${name}" is being created; pools and claims build no Sandboxes from this template until it exists`,
    };
  }
  const router = routerLabelsIn(template.spec.podTemplate.metadata?.labels, routerPodLabels);
  const labels: ConditionInput = router
    ? {
      type: TemplateConditionType.POD_LABELS_ALLOWED,
      status: 'False',
      reason: TemplateConditionReason.ROUTER_LABELS_REFUSED,
      observedGeneration,
      message: `spec.podTemplate.metadata.labels carries ${router}, the label of the sandbox router, which the sandbox NetworkPolicy admits; `
        + 'remove it. Pools and claims build no Sandboxes from this template until then',
    }
    : {
      type: TemplateConditionType.POD_LABELS_ALLOWED,
      status: 'True',
      reason: TemplateConditionReason.NO_ROUTER_LABELS,
      observedGeneration,
      message: 'The Pods carry none of the sandbox router\'s labels',
    };
  return setCondition(setCondition(template.status?.conditions ?? [], policy, nowMs), labels, nowMs);
}
