/**
 * What a SandboxTemplate asks for, as objects: its shared NetworkPolicy and the template-ref-hash
 * label on the template itself. Pure; decide.ts compares these with what exists.
 */
import { NetworkPolicyManagement } from '../../../../src/api/enums';
import { KINDS } from '../../../../src/api/groups';
import { SandboxLabels } from '../../../../src/api/labels';
import { NameHash } from '../../../../src/api/name-hash';
import {
  defaultSandboxNetworkPolicySpec,
  networkPolicyNameFor,
  sandboxTemplateSelector,
  type NetworkPolicyEgressRuleJson,
  type NetworkPolicyIngressRuleJson,
  type NetworkPolicySpecJson,
} from '../../../../src/api/network-policy-defaults';
import { controllerRefTo, type MergePatch, type NetworkPolicy, type SandboxTemplate } from '../../model';
import { usesDefaultNetworkPolicy } from '../../model/secure-defaults';

export interface NetworkPolicyOptions {
  /**
   * Namespace of the sandbox router, which the default policy admits. The operator passes
   * `--router-namespace`, else its own install namespace, so a router outside
   * `agent-sandbox-system` is not silently cut off (upstream hard-codes the namespace; users saw 504s).
   * @default agent-sandbox-system
   */
  readonly routerNamespace?: string;
  /** Labels of the router Pods (`--router-pod-labels`). @default { app: 'sandbox-router' } */
  readonly routerPodLabels?: { readonly [key: string]: string };
}

/** Whether the template's NetworkPolicy is left to someone else. */
export function isUnmanaged(template: SandboxTemplate): boolean {
  return template.spec.networkPolicyManagement === NetworkPolicyManagement.UNMANAGED;
}

/**
 * The NetworkPolicy `<template>-network-policy` a Managed template owns, or undefined when the
 * template is Unmanaged. It selects the Pods of Sandboxes made from this template (by claims and
 * pools) and is owned by the template, so it goes away with it.
 *
 * - No custom rules: the secure default (router ingress, public-internet egress, see src/api).
 * - Custom rules: the user's ingress and egress verbatim; an absent or empty list denies that
 *   direction, because policyTypes always names both.
 */
export function desiredNetworkPolicy(template: SandboxTemplate, options: NetworkPolicyOptions = {}): NetworkPolicy | undefined {
  if (isUnmanaged(template)) return undefined;
  const name = template.metadata.name;
  let spec: NetworkPolicySpecJson;
  if (usesDefaultNetworkPolicy(template)) {
    spec = defaultSandboxNetworkPolicySpec(name, options.routerNamespace, options.routerPodLabels);
  } else {
    const custom = template.spec.networkPolicy ?? {};
    spec = {
      podSelector: sandboxTemplateSelector(name),
      policyTypes: ['Ingress', 'Egress'],
      // The wire leaves a port's protocol optional (TCP); the constructs' JSON type always names it.
      ...(custom.ingress?.length ? { ingress: structuredClone(custom.ingress) as NetworkPolicyIngressRuleJson[] } : {}),
      ...(custom.egress?.length ? { egress: structuredClone(custom.egress) as NetworkPolicyEgressRuleJson[] } : {}),
    };
  }
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: {
      name: networkPolicyNameFor(name),
      namespace: template.metadata.namespace,
      ownerReferences: [controllerRefTo(template, KINDS.template)],
    },
    spec,
  };
}

/**
 * The merge patch that puts `sandbox-template-ref-hash=NameHash(name)` on the template itself
 * (upstream does this so label selectors can find a template by the hash its Pods carry), or
 * undefined when the label is already right.
 */
export function templateRefHashLabelPatch(template: SandboxTemplate): MergePatch | undefined {
  const hash = NameHash.of(template.metadata.name);
  if (template.metadata.labels?.[SandboxLabels.SANDBOX_TEMPLATE_REF_HASH] === hash) return undefined;
  return { metadata: { labels: { [SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]: hash } } };
}
