/**
 * Whether Sandboxes may be built from a template now: the one check the warm pool (before creating
 * members) and the claim's cold path (before creating a Sandbox) both make, so neither builds a
 * Sandbox that would run without its NetworkPolicy, or whose Pod would pass for the router.
 * Pure: the callers read the template and its policy from their caches.
 */
import { WarmPoolTemplateReason } from '#api/conditions';
import { NetworkPolicyManagement } from '#api/enums';
import { KINDS } from '#api/groups';
import { SandboxAnnotations } from '#api/labels';
import { defaultRouterPodLabels, networkPolicyNameFor } from '#api/network-policy-defaults';
import type { SandboxTemplate } from './generated';
import { controllerRefOf, isDeleting, refIsKind } from './meta';
import type { NetworkPolicy } from './objects';

type Labels = { readonly [key: string]: string };

/** Whether the template's NetworkPolicy is left to someone else. */
export function isUnmanaged(template: SandboxTemplate): boolean {
  return template.spec.networkPolicyManagement === NetworkPolicyManagement.UNMANAGED;
}

/**
 * The router's labels that `labels` carries, written `k=v,k2=v2`, or undefined when it carries none.
 * Any one pair is refused, not only the full set: with several router labels, a template could
 * carry one and a claim's additionalPodMetadata the other, each passing a check for the full set,
 * and the merged Pod would match the router selector of the default NetworkPolicy.
 */
export function routerLabelsIn(labels: Labels | undefined, routerPodLabels: Labels = defaultRouterPodLabels()): string | undefined {
  const carried = Object.entries(routerPodLabels).filter(([key, value]) => labels?.[key] === value);
  return carried.length === 0 ? undefined : carried.map(([key, value]) => `${key}=${value}`).join(',');
}

/**
 * Whether `policy` is the operator's policy for the template named `templateName`: it names the
 * template in its `sandbox-template-ref` annotation (what this operator writes), or it is still
 * controlled by a SandboxTemplate of that name (what upstream, and this operator before, wrote).
 */
export function isTemplatePolicy(policy: NetworkPolicy, templateName: string): boolean {
  if (policy.metadata.annotations?.[SandboxAnnotations.SANDBOX_TEMPLATE_REF] === templateName) return true;
  const ref = controllerRefOf(policy);
  return refIsKind(ref, KINDS.template) && ref?.name === templateName;
}

export type TemplateGate =
  | { readonly ok: true }
  | { readonly ok: false; readonly reason: string; readonly message: string };

/**
 * May Sandboxes be built from `template` (named `templateName` in `namespace`) now?
 *
 * - No template: TemplateNotFound.
 * - Its Pods would carry the router's labels: RouterLabelsRefused, Managed or not (any policy
 *   admitting the router would admit them).
 * - Managed and its policy is not in the cache, not ours, or being deleted: NetworkPolicyNotReady.
 *   Fail closed: a Sandbox made now would run with no policy selecting it.
 */
export function templateGate(
  namespace: string,
  templateName: string,
  template: SandboxTemplate | undefined,
  policy: NetworkPolicy | undefined,
  routerPodLabels?: Labels,
): TemplateGate {
  if (!template) {
    return {
      ok: false,
      reason: WarmPoolTemplateReason.TEMPLATE_NOT_FOUND,
      message: `SandboxTemplate "${templateName}" does not exist in namespace "${namespace}"; create it, or point spec.sandboxTemplateRef.name at an existing template`,
    };
  }
  const router = routerLabelsIn(template.spec.podTemplate.metadata?.labels, routerPodLabels);
  if (router) {
    return {
      ok: false,
      reason: WarmPoolTemplateReason.ROUTER_LABELS_REFUSED,
      message: `SandboxTemplate "${templateName}" gives its Pods the label ${router}, which the sandbox NetworkPolicy admits as the sandbox router; `
        + 'remove it from spec.podTemplate.metadata.labels. No Sandboxes are built from the template until then',
    };
  }
  if (isUnmanaged(template)) return { ok: true };
  if (!policy || !isTemplatePolicy(policy, templateName) || isDeleting(policy)) {
    return {
      ok: false,
      reason: WarmPoolTemplateReason.NETWORK_POLICY_NOT_READY,
      message: `NetworkPolicy "${networkPolicyNameFor(templateName)}" of the Managed SandboxTemplate "${templateName}" does not exist yet; `
        + 'no Sandboxes are built from the template until it does, so none runs unisolated (the template\'s NetworkPolicyReady condition says why)',
    };
  }
  return { ok: true };
}
