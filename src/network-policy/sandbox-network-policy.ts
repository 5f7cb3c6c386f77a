import { ApiObject, ApiObjectMetadata } from 'cdk8s';
import { Construct } from 'constructs';
import { DnsAccess } from './dns';
import { networkPolicyObject, podSelectorFor } from './policy-object';
import { SandboxNetworkRule, renderRules } from './rule';
import { NetworkPolicySpecJson, networkPolicyNameFor } from '../api/network-policy-defaults';
import { ErrorList, checkDns1123Subdomain } from '../api/validation';
import { _guardChart } from '../chart-guards';

/** Props of {@link SandboxNetworkPolicy}. */
export interface SandboxNetworkPolicyProps {
  /**
   * Metadata of the NetworkPolicy. With a MANAGED template, set a name other than
   * `<template>-network-policy`: the operator refuses to manage a policy of that name it does not own.
   * @default - named `<templateName>-network-policy` (the Git-owned policy of that template) when
   * `templateName` is set, otherwise a generated name; the chart's namespace
   */
  readonly metadata?: ApiObjectMetadata;
  /**
   * Select only the Pods of Sandboxes made from this SandboxTemplate (by a claim or warm pool;
   * bare Sandboxes never carry the template label).
   * @default - every sandbox Pod in the namespace
   */
  readonly templateName?: string;
  /** Allowed ingress. @default - none: ingress is denied unless another policy allows it */
  readonly ingress?: SandboxNetworkRule[];
  /** Allowed egress (the DNS rule is added to it). @default - none: egress is denied unless another policy allows it */
  readonly egress?: SandboxNetworkRule[];
  /** DNS egress to add. `publicResolvers()` is refused: it is an operator rewrite, not a rule. @default DnsAccess.none() */
  readonly dns?: DnsAccess;
  /**
   * A complete networking/v1 NetworkPolicySpec, emitted verbatim instead of one built from
   * `templateName`, `ingress`, `egress` and `dns` (TypeScript only; SandboxTemplate passes its
   * rendered Git-owned spec here).
   * @default - built from the other props
   * @jsii ignore
   */
  readonly spec?: NetworkPolicySpecJson;
}

/**
 * A NetworkPolicy you own in Git for sandbox Pods, isolating both directions (policyTypes Ingress
 * and Egress) and allowing exactly the given rules: the Git-owned policy of an UNMANAGED
 * template, or an extra policy next to others (NetworkPolicies are additive).
 */
export class SandboxNetworkPolicy extends Construct {
  /** The NetworkPolicy object (escape hatch). */
  public readonly apiObject: ApiObject;

  public constructor(scope: Construct, id: string, props: SandboxNetworkPolicyProps = {}) {
    super(scope, id);
    _guardChart(this);
    const errors = new ErrorList();
    if (props.templateName !== undefined) errors.prop('templateName', checkDns1123Subdomain(props.templateName));
    if (props.dns?._mode === 'publicResolvers') {
      errors.prop('dns', 'public resolvers are a Pod DNS rewrite the operator does for Managed templates, not a NetworkPolicy rule; choose cluster DNS or no DNS access');
    }
    if (props.spec && (props.ingress || props.egress || props.dns)) {
      errors.prop('spec', 'give either a complete spec or ingress/egress/dns, not both');
    }
    const ingress = renderRules(errors, 'ingress', props.ingress ?? [], 'from');
    const egress = renderRules(errors, 'egress', props.egress ?? [], 'to');
    errors.throwIfAny(`SandboxNetworkPolicy ${this.node.path}`);
    const dnsRule = props.dns?._egressRule();
    const name = props.metadata?.name ?? (props.templateName === undefined ? undefined : networkPolicyNameFor(props.templateName));
    this.apiObject = networkPolicyObject(this, { ...props.metadata, ...(name ? { name } : {}) }, props.spec ?? {
      podSelector: podSelectorFor(props.templateName),
      policyTypes: ['Ingress', 'Egress'],
      ingress,
      egress: dnsRule ? [...egress, dnsRule] : egress,
    });
  }
}
