/**
 * What a SandboxTemplate asks for, as objects: its shared NetworkPolicy and the template-ref-hash
 * label on the template itself. Pure; plan.ts compares these with what exists.
 */
import { SandboxAnnotations, SandboxLabels } from '#api/labels';
import { NameHash } from '#api/name-hash';
import {
  defaultSandboxNetworkPolicySpec,
  networkPolicyNameFor,
  sandboxTemplateSelector,
  type NetworkPolicyEgressRuleJson,
  type NetworkPolicyIngressRuleJson,
  type NetworkPolicySpecJson,
} from '#api/network-policy-defaults';
import { type MergePatch, type NetworkPolicy, type SandboxTemplate } from '../../model';
import { usesDefaultNetworkPolicy } from '../../model/secure-defaults';
import { isUnmanaged } from '../../model/template-gate';

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
  /** The cluster's ranges outside the private ones, which the default egress also leaves out (`--cluster-cidrs`). @default none */
  readonly clusterCidrs?: readonly string[];
}

export { isUnmanaged };

/**
 * The NetworkPolicy `<template>-network-policy` (see networkPolicyNameFor for long names) a
 * Managed template asks for, or undefined when the template is Unmanaged. It selects the Pods of
 * Sandboxes made from this template (by claims and pools).
 *
 * It has no ownerReference (upstream gives it a controller reference to the template): garbage
 * collection would delete it with the template while Sandboxes built from the template still run,
 * and they would run unisolated. The template controller deletes it instead, once neither the
 * template nor any Sandbox carrying its template-ref-hash label is left (see plan.ts
 * orphanedPolicyAction). The `sandbox-template-ref` annotation marks it as the operator's and names
 * the template, which a hashed long name no longer does; the template-ref-hash label lets
 * `kubectl get -l` find it next to its Sandboxes.
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
    spec = defaultSandboxNetworkPolicySpec(name, options.routerNamespace, options.routerPodLabels, options.clusterCidrs);
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
      ...policyMarks(name),
    },
    spec,
  };
}

/** The label and annotation that mark a NetworkPolicy as the operator's policy for the template `templateName`. */
export function policyMarks(templateName: string): { labels: { [key: string]: string }; annotations: { [key: string]: string } } {
  return {
    labels: { [SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]: NameHash.of(templateName) },
    annotations: { [SandboxAnnotations.SANDBOX_TEMPLATE_REF]: templateName },
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
