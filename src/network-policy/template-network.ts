import { checkLabels } from './checks';
import { DnsAccess } from './dns';
import { SandboxNetworkRule, renderRules } from './rule';
import { NetworkPolicyManagement } from '../api/enums';
import { DEFAULT_SYSTEM_NAMESPACE } from '../api/labels';
import {
  NetworkPolicyEgressRuleJson, NetworkPolicyIngressRuleJson, NetworkPolicySpecJson, publicInternetPeers, routerPeer, sandboxTemplateSelector,
} from '../api/network-policy-defaults';
import { ErrorList, checkDns1123Label } from '../api/validation';

/**
 * The network settings of a SandboxTemplate (its `network` prop).
 *
 * - MANAGED, no `ingress`/`egress`, `dns` publicResolvers (all defaults): `spec.networkPolicy`
 *   stays unset; the operator applies the secure default (router-only ingress, public-internet
 *   egress) and points the Pods at public resolvers.
 * - MANAGED with `ingress`, `egress` or `DnsAccess.clusterDns()`/`none()`: the template gets
 *   `spec.networkPolicy: {ingress, egress}` rendered here; a side not given keeps its default
 *   (ingress from the router, egress to the public internet), plus the DNS rule.
 * - UNMANAGED: Git owns the policy. The template emits a NetworkPolicy `<template>-network-policy`
 *   selecting its Pods with the same rules, and sets `networkPolicyManagement: Unmanaged`.
 *   Never both a managed and a Git-owned policy.
 */
export interface SandboxNetworkPolicyOptions {
  /** Who owns the template's NetworkPolicy. @default NetworkPolicyManagement.MANAGED */
  readonly management?: NetworkPolicyManagement;
  /** Allowed ingress. An empty list denies all ingress. @default - only from the sandbox router */
  readonly ingress?: SandboxNetworkRule[];
  /** Allowed egress (the DNS rule is added to it). An empty list denies all egress. @default - the public internet */
  readonly egress?: SandboxNetworkRule[];
  /** How the Pods resolve names. @default DnsAccess.publicResolvers() */
  readonly dns?: DnsAccess;
  /**
   * Namespace of the sandbox router, for the rules rendered here (`system.namespace` of an
   * `AgentSandboxSystem`). The operator's own default policy admits the router where its
   * `--router-namespace` says, which the bundle sets to where it deploys the router.
   * @default 'agent-sandbox-system'
   */
  readonly routerNamespace?: string;
  /** Labels of the router Pods, for the rules rendered here (`system.routerPodLabels`). @default { app: 'sandbox-router' } */
  readonly routerPodLabels?: { [key: string]: string };
}

/** @internal What a SandboxTemplate writes for its `network` options. */
export interface _TemplateNetwork {
  /** `spec.networkPolicyManagement`. */
  readonly management: NetworkPolicyManagement;
  /** `spec.networkPolicy`, when custom rules are managed by the operator. */
  readonly specField?: { readonly ingress: NetworkPolicyIngressRuleJson[]; readonly egress: NetworkPolicyEgressRuleJson[] };
  /** The spec of the Git-owned `<template>-network-policy` (emit it with SandboxNetworkPolicy's `spec`). */
  readonly gitOwnedPolicySpec?: NetworkPolicySpecJson;
}

/**
 * @internal Turn a template's `network` options into template fields or a Git-owned policy spec.
 * Throws naming the `network.*` field and the fix for combinations the operator cannot honour.
 */
export function _renderTemplateNetwork(options: SandboxNetworkPolicyOptions | undefined, templateName: string): _TemplateNetwork {
  const opts = options ?? {};
  const management = opts.management ?? NetworkPolicyManagement.MANAGED;
  const dns = opts.dns ?? DnsAccess.publicResolvers();
  const routerNamespace = opts.routerNamespace ?? DEFAULT_SYSTEM_NAMESPACE;
  const custom = opts.ingress !== undefined || opts.egress !== undefined;
  const errors = new ErrorList();
  if (!Object.values(NetworkPolicyManagement).includes(management)) {
    errors.prop('network.management', `${JSON.stringify(management) ?? String(management)} is not allowed; use one of ${Object.values(NetworkPolicyManagement).join(', ')}`);
    errors.throwIfAny(`SandboxTemplate "${templateName}"`);
  }
  errors.prop('network.routerNamespace', checkDns1123Label(routerNamespace));
  if (opts.routerPodLabels) checkLabels(errors, 'network.routerPodLabels', opts.routerPodLabels);
  if (dns._mode === 'publicResolvers' && management === NetworkPolicyManagement.UNMANAGED) {
    errors.prop('network.dns', 'public resolvers (the default DnsAccess) rely on the operator rewriting Pod DNS, which it does only when spec.networkPolicyManagement is Managed; '
      + 'choose cluster DNS or no DNS access, or set the management to Managed');
  } else if (dns._mode === 'publicResolvers' && custom) {
    errors.prop('network.dns', 'public resolvers (the default DnsAccess) work only with the operator\'s default policy: the operator rewrites Pod DNS only when spec.networkPolicy is absent (no custom ingress or egress); '
      + 'choose cluster DNS or no DNS access, or remove the network\'s ingress and egress rules');
  }
  const ingress = opts.ingress === undefined ? [{ from: [routerPeer(routerNamespace, opts.routerPodLabels)] }] : renderRules(errors, 'network.ingress', opts.ingress, 'from');
  const egress = opts.egress === undefined ? [{ to: publicInternetPeers() }] : renderRules(errors, 'network.egress', opts.egress, 'to');
  errors.throwIfAny(`SandboxTemplate "${templateName}"`);

  if (management === NetworkPolicyManagement.MANAGED && !custom && dns._mode === 'publicResolvers') return { management };
  const dnsRule = dns._egressRule();
  const rules = { ingress, egress: dnsRule ? [...egress, dnsRule] : egress };
  if (management === NetworkPolicyManagement.MANAGED) return { management, specField: rules };
  return { management, gitOwnedPolicySpec: { podSelector: sandboxTemplateSelector(templateName), policyTypes: ['Ingress', 'Egress'], ...rules } };
}
