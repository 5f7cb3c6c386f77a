import { ApiObject, ApiObjectMetadata } from 'cdk8s';
import { Construct } from 'constructs';
import type { AllowRouterIngress } from './allow-router-ingress';
import { networkPolicyObject } from './policy-object';
import type { SandboxNetworkPolicy } from './sandbox-network-policy';
import { allSandboxPodsSelector } from '../api/network-policy-defaults';
import { _guardChart } from '../chart-guards';

/** Props of {@link SandboxDefaultDenyPolicy}. */
export interface SandboxDefaultDenyPolicyProps {
  /** Metadata of the NetworkPolicy. @default - a generated name, the chart's namespace */
  readonly metadata?: ApiObjectMetadata;
}

/**
 * Denies all ingress and egress for every sandbox Pod in its namespace, bare or from a template.
 * NetworkPolicies are additive, so this is a floor: template policies, {@link AllowRouterIngress}
 * and {@link SandboxNetworkPolicy} open holes in it. It also covers bare Sandboxes, which template
 * policies never select.
 */
export class SandboxDefaultDenyPolicy extends Construct {
  /** The NetworkPolicy object (escape hatch). */
  public readonly apiObject: ApiObject;

  public constructor(scope: Construct, id: string, props: SandboxDefaultDenyPolicyProps = {}) {
    super(scope, id);
    _guardChart(this);
    this.apiObject = networkPolicyObject(this, props.metadata, {
      podSelector: allSandboxPodsSelector(),
      policyTypes: ['Ingress', 'Egress'],
    });
  }
}
